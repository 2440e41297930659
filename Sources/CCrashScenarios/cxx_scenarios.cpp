// cxx_scenarios.cpp — C++ exceptions no one catches, thrown from C++ called by Swift: each ends in
// std::terminate, then SIGABRT (libstdc++'s verbose terminate handler prints the exception on
// stderr, then aborts), as a C++ library a Swift program links would.
#include "ccrash_scenarios.h"
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <unistd.h>

namespace crash_harness {
// An exception whose what() throws (what() is noexcept: the runtime calls std::terminate again,
// from inside the terminate handler): the handler must note that and still let the process abort.
[[gnu::noinline]] const char *describe_failing() { throw std::logic_error("what() failed"); }
struct WhatThrows : std::exception {
    const char *what() const noexcept override { return describe_failing(); }
};
// Not a std::exception: no what().
struct PlainOrder { int id; };
}

extern "C" {

__attribute__((noinline)) void cch_cxx_throw_runtime_error(void) {
    throw std::runtime_error("the order could not be priced: currency XTS");
}

__attribute__((noinline)) void cch_cxx_throw_what_throws(void) { throw crash_harness::WhatThrows(); }

__attribute__((noinline)) void cch_cxx_throw_plain(void) { throw crash_harness::PlainOrder{42}; }

__attribute__((noinline)) void cch_cxx_terminate(void) { std::terminate(); }

// Controls for the exception found in flight when no terminate handler ran: an abort() inside a
// catch block (the exception is caught, not uncaught), and an abort() after an exception was
// thrown, caught and freed at the same depth (its header may still be in freed memory, and a
// pointer to it on the stack). Neither is an uncaught exception.
__attribute__((noinline)) void cch_cxx_abort_in_catch(void) {
    try { cch_cxx_throw_runtime_error(); } catch (const std::exception &) { std::abort(); }
}

__attribute__((noinline)) void cch_cxx_abort_after_catch(void) {
    try { cch_cxx_throw_runtime_error(); } catch (const std::exception &) { }
    std::abort();
}

// A terminate handler the app installs before capture starts: it must still run (capture's calls
// it), and say so on stdout before it aborts.
static void cch_app_terminate(void) {
    static const char line[] = "crash-harness: the app's terminate handler ran\n";
    (void)!write(1, line, sizeof line - 1);
    std::abort();
}

void cch_cxx_install_app_terminate(void) { std::set_terminate(cch_app_terminate); }

}
