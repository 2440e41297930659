// cc_terminate.cpp — an uncaught C++ exception, said in the crash record: its type and its what().
//
// A C++ exception no one catches ends in std::terminate, on the throwing thread, before abort():
// the SIGABRT that follows is recorded like any, but the exception's type and text would only be
// on stderr, from libstdc++'s verbose terminate handler. So capture chains a terminate handler in
// front of the one installed at start (the verbose handler, or the app's own): it notes the type
// and what() in capture's buffers (cc__cxx_note), then calls that one, which prints and aborts as
// it always did; the SIGABRT's record then carries them (CC_STR_CXX_*).
//
// What runs here is what a terminate handler may do (it is not a signal handler: the throwing
// thread is in ordinary code, holding no lock of ours): read the current exception's type_info
// (the runtime's __cxa_current_exception_type), rethrow it into a catch of std::exception to call
// its what() — the verbose handler's own way. what() is noexcept: one that throws makes the runtime
// call std::terminate again, from inside this handler, which then notes that what() threw, puts the
// original exception back in flight and goes on to the previous handler, so that stderr and the
// death are what they are without capture (the harness's cxx-what-throws scenario compares them).
// Nothing of ours allocates. With no exception in flight (std::terminate
// called directly), nothing is rethrown. A handler the app installs after capture started
// replaces this one (it then runs alone, as the app asked).
#include "cc_cxx.h"
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <exception>
#include <typeinfo>

namespace {
std::terminate_handler g_previous = nullptr;
// How many times std::terminate reached this handler on this thread: 2 means what() threw (it is
// noexcept: the runtime terminated again, from inside the handler); more, that the previous
// handler terminated again in its turn.
thread_local int t_depth = 0;

[[noreturn]] void cc_terminate() {
    int depth = ++t_depth;
    if (depth == 2) {
        // what() threw. The type is noted already (below); say so. Then put the world back as the
        // previous handler would have found it without us: end the catch of what()'s exception
        // (__cxa_call_terminate began it), so that the exception in flight is the original one
        // again, and call the previous handler now. libstdc++'s verbose handler then prints the
        // original type and calls what() itself, which throws again: at depth 3 it goes straight
        // to the previous handler, which says "terminate called recursively" and aborts, as
        // without capture.
        cc__cxx_what_threw();
        __cxxabiv1::__cxa_end_catch();
    } else if (depth == 1) {
        if (const std::type_info *type = abi::__cxa_current_exception_type()) {
            const char *name = type->name();
            size_t name_length = name ? strnlen(name, 4096) : 0;
            // The type first: what() may not return.
            cc__cxx_note(name, name_length, nullptr, 0, CC_CXX_NOT_STD_EXCEPTION);
            try {
                throw;
            } catch (const std::exception &exception) {
                const char *what = exception.what();
                if (what) cc__cxx_note(name, name_length, what, strnlen(what, 4096), CC_CXX_WHAT);
            } catch (...) {
            }
        } else {
            cc__cxx_note(nullptr, 0, nullptr, 0, CC_CXX_NO_EXCEPTION);
        }
    }
    if (g_previous) g_previous();
    std::abort();
}
}  // namespace

extern "C" void cc__cxx_install(void) {
    std::terminate_handler current = std::get_terminate();
    if (current == cc_terminate) return;
    g_previous = current;
    std::set_terminate(cc_terminate);
}

extern "C" void cc__cxx_uninstall(void) {
    if (std::get_terminate() == cc_terminate) std::set_terminate(g_previous);
}
