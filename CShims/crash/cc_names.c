/* cc_names.c — signal and si_code names and meanings as constant strings (async-signal-safe lookups). */
#include "cc_boot.h"
#include "cc_internal.h"

#include <errno.h>

#include <signal.h>

/* async-signal-safe. */
const char *cc_signal_name(int signo) {
    switch (signo) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGSYS: return "SIGSYS";
    case SIGPIPE: return "SIGPIPE";
    default: return 0;
    }
}

typedef struct { int signo; int code; const char *name; const char *description; } cc__code_entry_t;

static const cc__code_entry_t g_codes[] = {
    { SIGSEGV, SEGV_MAPERR, "SEGV_MAPERR", "address not mapped to object" },
    { SIGSEGV, SEGV_ACCERR, "SEGV_ACCERR", "invalid permissions for mapped object" },
#ifdef SEGV_BNDERR
    { SIGSEGV, SEGV_BNDERR, "SEGV_BNDERR", "failed address bound checks" },
#endif
#ifdef SEGV_PKUERR
    { SIGSEGV, SEGV_PKUERR, "SEGV_PKUERR", "access denied by memory protection keys" },
#endif
    { SIGBUS, BUS_ADRALN, "BUS_ADRALN", "invalid address alignment" },
    { SIGBUS, BUS_ADRERR, "BUS_ADRERR", "nonexistent physical address (e.g. past the end of a mapped file)" },
    { SIGBUS, BUS_OBJERR, "BUS_OBJERR", "object-specific hardware error" },
#ifdef BUS_MCEERR_AR
    { SIGBUS, BUS_MCEERR_AR, "BUS_MCEERR_AR", "hardware memory error consumed on a machine check" },
    { SIGBUS, BUS_MCEERR_AO, "BUS_MCEERR_AO", "hardware memory error detected, action optional" },
#endif
    { SIGFPE, FPE_INTDIV, "FPE_INTDIV", "integer divide by zero" },
    { SIGFPE, FPE_INTOVF, "FPE_INTOVF", "integer overflow" },
    { SIGFPE, FPE_FLTDIV, "FPE_FLTDIV", "floating-point divide by zero" },
    { SIGFPE, FPE_FLTOVF, "FPE_FLTOVF", "floating-point overflow" },
    { SIGFPE, FPE_FLTUND, "FPE_FLTUND", "floating-point underflow" },
    { SIGFPE, FPE_FLTRES, "FPE_FLTRES", "floating-point inexact result" },
    { SIGFPE, FPE_FLTINV, "FPE_FLTINV", "floating-point invalid operation" },
    { SIGFPE, FPE_FLTSUB, "FPE_FLTSUB", "subscript out of range" },
    { SIGILL, ILL_ILLOPC, "ILL_ILLOPC", "illegal opcode" },
    { SIGILL, ILL_ILLOPN, "ILL_ILLOPN", "illegal operand" },
    { SIGILL, ILL_ILLADR, "ILL_ILLADR", "illegal addressing mode" },
    { SIGILL, ILL_ILLTRP, "ILL_ILLTRP", "illegal trap" },
    { SIGILL, ILL_PRVOPC, "ILL_PRVOPC", "privileged opcode" },
    { SIGILL, ILL_PRVREG, "ILL_PRVREG", "privileged register" },
    { SIGILL, ILL_COPROC, "ILL_COPROC", "coprocessor error" },
    { SIGILL, ILL_BADSTK, "ILL_BADSTK", "internal stack error" },
    { SIGTRAP, TRAP_BRKPT, "TRAP_BRKPT", "process breakpoint" },
    { SIGTRAP, TRAP_TRACE, "TRAP_TRACE", "process trace trap" },
#ifdef TRAP_BRANCH
    { SIGTRAP, TRAP_BRANCH, "TRAP_BRANCH", "process taken branch trap" },
#endif
#ifdef TRAP_HWBKPT
    { SIGTRAP, TRAP_HWBKPT, "TRAP_HWBKPT", "hardware breakpoint or watchpoint" },
#endif
    /* Codes shared by every signal: who sent it. */
    { 0, SI_USER, "SI_USER", "sent by kill(2) from a process" },
    { 0, SI_KERNEL, "SI_KERNEL", "sent by the kernel" },
    { 0, SI_QUEUE, "SI_QUEUE", "sent by sigqueue(3)" },
    { 0, SI_TIMER, "SI_TIMER", "POSIX timer expired" },
    { 0, SI_MESGQ, "SI_MESGQ", "POSIX message queue state changed" },
    { 0, SI_ASYNCIO, "SI_ASYNCIO", "asynchronous I/O completed" },
    { 0, SI_SIGIO, "SI_SIGIO", "queued SIGIO" },
    { 0, SI_TKILL, "SI_TKILL", "sent by tkill(2) or tgkill(2), e.g. raise(3) or abort(3)" },
};

/* async-signal-safe. */
static const cc__code_entry_t *cc__find_code(int signo, int code) {
    /* Positive codes below SI_KERNEL are per-signal; the rest are shared. */
    int shared = (code <= 0 || code == SI_KERNEL);
    for (size_t i = 0; i < sizeof g_codes / sizeof g_codes[0]; i++) {
        if (g_codes[i].code != code) continue;
        if (shared ? g_codes[i].signo == 0 : g_codes[i].signo == signo) return &g_codes[i];
    }
    return 0;
}

/* async-signal-safe. */
const char *cc__code_name(int signo, int code) {
    const cc__code_entry_t *e = cc__find_code(signo, code);
    return e ? e->name : "";
}

/* async-signal-safe. */
const char *cc__code_description(int signo, int code) {
    const cc__code_entry_t *e = cc__find_code(signo, code);
    return e ? e->description : "";
}

/* async-signal-safe: "EPERM: operation not permitted" for the errors the thread helper and the
 * record's file meet (strerror is neither async-signal-safe nor fixed text). */
const char *cc__errno_name(int error) {
    switch (error) {
    case 0: return "no error code (the call made no progress)";
    case ENOENT: return "ENOENT: no such file or directory";
    case ENOSPC: return "ENOSPC: no space left on device";
    case EDQUOT: return "EDQUOT: disk quota exceeded";
    case EFBIG: return "EFBIG: file too large";
    case EROFS: return "EROFS: read-only file system";
    case EEXIST: return "EEXIST: file exists";
    case EMFILE: return "EMFILE: too many open files";
    case ENFILE: return "ENFILE: too many open files in system";
    case ENOTDIR: return "ENOTDIR: not a directory";
    case ELOOP: return "ELOOP: too many levels of symbolic links";
    case EBADF: return "EBADF: bad file descriptor";
    case EXDEV: return "EXDEV: cross-device link";
    case EISDIR: return "EISDIR: is a directory";
    case ESTALE: return "ESTALE: stale file handle";
    case ENOMEM: return "ENOMEM: out of memory";
    case EINVAL: return "EINVAL: invalid argument";
    case EPERM: return "EPERM: operation not permitted";
    case EACCES: return "EACCES: permission denied";
    case ESRCH: return "ESRCH: no such thread";
    case EBUSY: return "EBUSY: already traced";
    case EIO: return "EIO: input/output error";
    case ENOSYS: return "ENOSYS: not supported";
    case ETIMEDOUT: return "ETIMEDOUT: did not stop in time";
    case ECHILD: return "ECHILD: the helper process could not start or died";
    case ENOEXEC: return "ENOEXEC: not an executable";
    case EAGAIN: return "EAGAIN: no process could be made";
    default: return "another error";
    }
}
