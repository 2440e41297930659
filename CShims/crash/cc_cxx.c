/* cc_cxx.c — where the terminate handler (cc_terminate.cpp) leaves an uncaught C++ exception for
 * the SIGABRT that follows, and how the handler writes it into the record; and, for an exception
 * that never reaches std::terminate, how the handler finds it in flight.
 *
 * Never reaching std::terminate is what happens under Swift's C++ interoperability on Linux: the
 * Swift runtime there is built without exceptions, and its exception personality, which the
 * unwinder asks at the first Swift frame, calls fatalError ("C++ exception handling detected…")
 * at once. The exception is then thrown and not caught by anyone, and only the unwinder's frames
 * and registers still point at it. So for a SIGABRT with no terminate handler's note, the handler
 * looks at the crashed thread's data registers and the first CC__IN_FLIGHT_STACK bytes of its
 * stack for a pointer to libstdc++'s exception header, checked field by field against the Itanium
 * C++ ABI's layout (LP64, both architectures): its _Unwind_Exception's class is "GNUCC++\0" (a
 * primary exception of libstdc++), its reference count is 1 (set by __cxa_throw; a freed one has
 * the allocator's pointer there), its handler count is 0 (nobody caught it: an abort() inside a
 * catch block is not an uncaught exception), and its type_info and that type_info's name lie in
 * a loaded image. Only the type is kept: what() is code and is never called at a crash. */
#include "cc_boot.h"
#include "cc_internal.h"
#include "cc_cxx.h"
#include "cc_arch.h"

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

#define CC__GNU_CXX_EXCEPTION_CLASS 0x474E5543432B2B00ull /* "GNUCC++\0", as a big-endian number */
#define CC__CXA_TYPE_BEFORE   80  /* __cxa_exception.exceptionType, before its unwindHeader */
#define CC__CXA_HANDLERS_BEFORE 40 /* __cxa_exception.handlerCount (int) */
#define CC__CXA_REFCOUNT_BEFORE 96 /* __cxa_refcounted_exception.referenceCount (int) */
#define CC__IN_FLIGHT_STACK   8192 /* the crash's own frames: abort, fatalError, the personality, the unwinder's */

/* async-signal-safe: whether `value` may be the address of a heap exception's _Unwind_Exception
 * (16-aligned, canonical, not near null, not on the stack scanned, not in an image). */
static int cc__may_be_unwind_header(uint64_t value, uint64_t sp) {
    return (value & 15) == 0 && value >= 65536 && value < ((uint64_t)1 << 47) &&
           !(value + 4096 >= sp && value < sp + CC__IN_FLIGHT_STACK) && !cc__images_contains(value);
}

/* async-signal-safe: an exception thrown and not caught that the crashed thread's registers or
 * stack point at (see the file comment), written as CC_CXX_IN_FLIGHT with its mangled type;
 * returns whether one was found. Two batched reads (the stack, each candidate's class), then a
 * few for the one that matches. */
static int cc__write_cxx_in_flight(cc__writer_t *w, const ucontext_t *uc) {
    static uint64_t words[CC__IN_FLIGHT_STACK / 8];
    static uint64_t candidates[CC__SAFE_WORDS_MAX], classes[CC__SAFE_WORDS_MAX];
    static uint8_t ok[CC__SAFE_WORDS_MAX];
    static cc_register_t registers[48];
    static char name[sizeof cc__g.cxx_type];
    uint64_t sp = cc__context_sp(uc);
    uint32_t count = 0;
    size_t registers_count = cc__data_registers(uc, registers, 48);
    size_t stack_words = cc__safe_read(sp, words, sizeof words) / 8;
    for (size_t i = 0; i < registers_count + stack_words && count < CC__SAFE_WORDS_MAX; i++) {
        uint64_t value = i < registers_count ? registers[i].value : words[i - registers_count];
        if (!cc__may_be_unwind_header(value, sp)) continue;
        int seen = 0;
        for (uint32_t k = 0; k < count && !seen; k++) seen = candidates[k] == value;
        if (!seen) candidates[count++] = value;
    }
    cc__safe_read_many(candidates, 8, classes, ok, count);
    for (uint32_t i = 0; i < count; i++) {
        if (!ok[i] || classes[i] != CC__GNU_CXX_EXCEPTION_CLASS) continue;
        uint64_t header = candidates[i];
        int32_t references = 0, handlers = -1;
        uint64_t type_info = 0, type_name = 0;
        if (cc__safe_read(header - CC__CXA_REFCOUNT_BEFORE, &references, 4) != 4 || references != 1) continue;
        if (cc__safe_read(header - CC__CXA_TYPE_BEFORE + CC__CXA_HANDLERS_BEFORE, &handlers, 4) != 4 || handlers != 0) continue;
        if (cc__safe_read(header - CC__CXA_TYPE_BEFORE, &type_info, 8) != 8 || !cc__images_contains(type_info)) continue;
        if (cc__safe_read(type_info + 8, &type_name, 8) != 8 || !cc__images_contains(type_name)) continue;
        size_t got = cc__safe_read(type_name, name, sizeof name);
        size_t length = cc__strnlen(name, got);
        size_t skip = length > 0 && name[0] == '*';   /* a type local to its file */
        if (length == got || length <= skip) continue;   /* no NUL within the bound, or empty */
        char state = (char)('0' + CC_CXX_IN_FLIGHT);
        cc__write_string(w, CC_STR_CXX_WHAT_STATE, &state, 1);
        cc__write_string(w, CC_STR_CXX_TYPE, name + skip, length - skip);
        return 1;
    }
    return 0;
}

/* async-signal-safe: for a SIGABRT on the thread whose terminate handler noted an exception, its
 * mangled type name, what() and how what() went, as CC_STR_CXX_* strings; with no note, an
 * exception found in flight (cc__write_cxx_in_flight). */
void cc__write_cxx_exception(cc__writer_t *w, pid_t tid, const ucontext_t *uc) {
    if (atomic_load(&cc__g.cxx_noted_tid) != (int)tid) {
        if (uc) cc__write_cxx_in_flight(w, uc);
        return;
    }
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
