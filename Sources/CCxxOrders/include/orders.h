// orders.h — a C++ library a Swift program calls through Swift's C++ interoperability
// (cxx-interop-crasher): pricing an order it does not know throws std::runtime_error.
#pragma once

namespace orders {
/// Throws std::runtime_error("no price for order <id>").
void price(int id);
}
