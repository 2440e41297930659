// arm64_cxx.cpp — the cxx-exception scenario of arm64_crashes.c, for the C++ builds of the arm64
// crash programs (scripts/arm64-check.sh links it with the core's cc_terminate.cpp and libstdc++):
// a std::runtime_error thrown two frames below arm64_crash_cxx and caught by no one, so it ends in
// std::terminate (capture's handler, chained in front of libstdc++'s verbose one, which prints it
// on stderr and aborts), then SIGABRT. extern "C" names, so the check names the frames as in C.
#include <cstdint>
#include <stdexcept>

extern "C" volatile intptr_t g_sink;   // arm64_crashes.c: 0, opaque to the compiler

extern "C" {

__attribute__((noinline)) void arm64_cxx_throw(void) {
    if (g_sink == 0) throw std::runtime_error("arm64 exception text");
    g_sink = g_sink + 1;
}

__attribute__((noinline)) void arm64_cxx_middle(void) {
    arm64_cxx_throw();
    g_sink = g_sink + 1;
}

__attribute__((noinline)) void arm64_crash_cxx(void) {
    arm64_cxx_middle();
    g_sink = g_sink + 1;
}

}
