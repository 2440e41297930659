// cxx-interop-crasher — a Swift program built with Swift's C++ interoperability that calls a C++
// function directly (orders::price), which throws: the exception crosses a Swift frame, no one
// catches it, std::terminate, SIGABRT. CxxExceptionTests runs it with and without capture.
//
//   cxx-interop-crasher DIR     starts CrashCapture writing to DIR, then prices order 7
import CCxxOrders
import CrashCapture
#if canImport(Glibc)
import Glibc
#endif

@inline(never) func checkout(_ order: Int32) {
    orders.price(order)
}

let arguments = CommandLine.arguments
guard arguments.count == 2 else { exit(64) }
_ = try? CrashHandler.start(.init(directory: arguments[1], appName: "cxx-interop-crasher", appVersion: "1.0"))
checkout(7)
