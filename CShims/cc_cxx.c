/* cc_cxx.c — where the terminate handler (cc_terminate.cpp) leaves an uncaught C++ exception for
 * the SIGABRT that follows, and how the handler writes it into the record. */
#include "cc_boot.h"
#include "cc_internal.h"
#include "cc_cxx.h"

/* Not async-signal-safe (not needed: the terminate handler runs in ordinary code). Copies the
 * type and what() (bounded) into cc__g, then publishes this thread's id, last. */
void cc__cxx_note(const char *type, size_t type_length, const char *what, size_t what_length, int state) {
    atomic_store(&cc__g.cxx_noted_tid, 0);
    if (type_length > sizeof cc__g.cxx_type) type_length = sizeof cc__g.cxx_type;
    if (what_length > sizeof cc__g.cxx_what) what_length = sizeof cc__g.cxx_what;
    for (size_t i = 0; i < type_length; i++) cc__g.cxx_type[i] = type[i];
    for (size_t i = 0; i < what_length; i++) cc__g.cxx_what[i] = what[i];
    cc__g.cxx_type_length = (uint32_t)type_length;
    cc__g.cxx_what_length = (uint32_t)what_length;
    cc__g.cxx_state = state;
    atomic_store(&cc__g.cxx_noted_tid, (int)cc__gettid());
}

/* Not async-signal-safe (not needed). The note this thread made says what() threw. */
void cc__cxx_what_threw(void) {
    if (atomic_load(&cc__g.cxx_noted_tid) == (int)cc__gettid()) cc__g.cxx_state = CC_CXX_WHAT_THREW;
}

/* async-signal-safe: for a SIGABRT on the thread whose terminate handler noted an exception, its
 * mangled type name, what() and how what() went, as CC_STR_CXX_* strings. */
void cc__write_cxx_exception(cc__writer_t *w, pid_t tid) {
    if (atomic_load(&cc__g.cxx_noted_tid) != (int)tid) return;
    char state = (char)('0' + cc__g.cxx_state);
    cc__write_string(w, CC_STR_CXX_WHAT_STATE, &state, 1);
    if (cc__g.cxx_type_length) cc__write_string(w, CC_STR_CXX_TYPE, cc__g.cxx_type, cc__g.cxx_type_length);
    if (cc__g.cxx_state == CC_CXX_WHAT) cc__write_string(w, CC_STR_CXX_WHAT, cc__g.cxx_what, cc__g.cxx_what_length);
}

/* The C++ side's entry points when it is not linked (the C-only builds of the core in
 * scripts/c-checks.sh, arm64-check.sh and death-check.sh): nothing to chain. Every SwiftPM build
 * links cc_terminate.cpp, whose definitions take precedence over these weak ones. */
__attribute__((weak)) void cc__cxx_install(void) {}
__attribute__((weak)) void cc__cxx_uninstall(void) {}
