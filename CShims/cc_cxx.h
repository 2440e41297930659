/* cc_cxx.h — the C++ side of capture (cc_terminate.cpp) and the C it calls: plain C types only,
 * so that C++ can include it (cc_internal.h, with its C11 atomics, cannot be). */
#ifndef CC_CXX_H
#define CC_CXX_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

/* How an uncaught C++ exception's what() went (CC_STR_CXX_WHAT_STATE's value). */
enum cc_cxx_what_state {
    CC_CXX_NOT_STD_EXCEPTION = 0, /* the exception does not derive from std::exception: no what() */
    CC_CXX_WHAT = 1,              /* what() gave the text (at most CC__CXX_WHAT_MAX bytes kept) */
    CC_CXX_WHAT_THREW = 2,        /* what() itself threw */
    CC_CXX_NO_EXCEPTION = 3,      /* std::terminate was called with no exception in flight */
    CC_CXX_IN_FLIGHT = 4,         /* no terminate handler ran: found thrown and not caught on the
                                   * crashed thread's stack (cc_cxx.c); what() was not called */
};

/* Chains capture's std::terminate handler in front of the one installed now (install), and puts
 * that one back if capture's is still the current one (uninstall). Not async-signal-safe. */
void cc__cxx_install(void);
void cc__cxx_uninstall(void);

/* Called by the terminate handler on the thread that is terminating, before the previous handler
 * (which aborts): the exception's mangled type name and what() text, for the SIGABRT that follows
 * (cc_handler.c writes them into the record). Copies into capture's own buffers. */
void cc__cxx_note(const char *type, size_t type_length, const char *what, size_t what_length, int state);
/* what() threw (a second std::terminate on the thread that noted a type): says so in the note. */
void cc__cxx_what_threw(void);

#ifdef __cplusplus
}
#endif
#endif
