/* cc_chain.c — chaining: the action that was installed before ours runs as if the kernel had delivered the signal to it. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <errno.h>
#include <signal.h>
#include <ucontext.h>

/*
 * Why emulate the kernel instead of calling the previous handler as a plain function: a handler
 * relies on what the kernel sets up for it. The Swift runtime's backtracer installs itself
 * with SA_NODEFER and a mask that leaves the fatal signals open, because the thread it starts
 * inside its handler must be able to take SIGSEGV while it reads memory; called with our mask
 * it was killed halfway and left its swift-backtrace process waiting forever. So, exactly as
 * the kernel's signal delivery does (kernel/signal.c, arch/x86/kernel/signal.c):
 *   - mask: the interrupted context's mask | the handler's sa_mask | the signal itself
 *     unless SA_NODEFER;
 *   - SA_RESETHAND: the disposition is SIG_DFL before the handler runs;
 *   - stack: the alternate stack only with SA_ONSTACK (we run on it already); otherwise the
 *     interrupted stack below its red zone, and when that stack has no room for a signal frame
 *     the kernel would have killed the process with SIGSEGV, which we report by returning 0;
 *   - arguments: the original siginfo and ucontext (a handler that repairs the fault by editing
 *     the context is obeyed when we return), and the interrupted errno.
 * Why chain first (sentry-native's "chain at start") rather than record first (Crashpad's
 * restore-and-re-raise): a runtime whose handler repairs faults and returns (guard pages,
 * GC barriers, JVM/Go/wasm runtimes) must keep running untouched, with no record and no
 * stopped threads; a handler that ends the process (the Swift backtracer resets the signal
 * to SIG_DFL and returns) hands control back to us, and the re-executed fault, or abort()'s
 * SIGABRT, is then recorded.
 */

/* async-signal-safe: whether every page of [low, high) can be read (a stack's pages are
 * read-write; its guard page is neither). */
static int cc__range_readable(uint64_t low, uint64_t high) {
    unsigned char byte;
    for (uint64_t at = low & ~(uint64_t)4095; at < high; at += 4096) {
        if (cc__safe_read(at < low ? low : at, &byte, 1) != 1) return 0;
    }
    return 1;
}

/* async-signal-safe. The previous handler is called with three arguments (signal, siginfo,
 * ucontext) even when it was installed as a one-argument sa_handler, without SA_SIGINFO: the
 * kernel does the same (x86-64 and aarch64 put the three in the first argument registers for
 * every handler, and a handler declared with three but installed without SA_SIGINFO relies on
 * it), and so does cc__call_on_stack. In C that call goes through a pointer of another function
 * type, which UBSan's -fsanitize=function reports; it is the point here, so that one check is
 * off for this function (it only matters to the sanitizer build, scripts/c-checks.sh). */
#if defined(__clang__)   /* GCC has no "function" sanitizer, and warns of the attribute */
__attribute__((no_sanitize("function")))
#endif
int cc__deliver_to_previous(int index, int signo, siginfo_t *info, ucontext_t *uc, int saved_errno,
                            int *errno_after) {
    /* A copy: another thread may adopt a new disposition meanwhile. */
    struct sigaction previous = cc__g.previous[index];
    void (*handler)(int, siginfo_t *, void *) = previous.sa_sigaction;

    sigset_t mask;
    if (uc) mask = uc->uc_sigmask;
    else sigprocmask(SIG_SETMASK, 0, &mask);
    for (int s = 1; s < NSIG; s++) if (sigismember(&previous.sa_mask, s) == 1) sigaddset(&mask, s);
    if (!(previous.sa_flags & SA_NODEFER)) sigaddset(&mask, signo);

    uintptr_t stack_top = 0;
    if (!(previous.sa_flags & SA_ONSTACK) && uc) {
        stack_t alt;
        uint64_t sp = cc__context_sp(uc);
        if (sigaltstack(0, &alt) == 0 && (alt.ss_flags & SS_ONSTACK)) {
            uint64_t alt_low = (uint64_t)(uintptr_t)alt.ss_sp, alt_high = alt_low + alt.ss_size;
            int interrupted_on_alt = sp > alt_low && sp <= alt_high;
            /* Interrupted on the alternate stack already: the kernel would have stayed there, and
             * so do we (below our own frames). Otherwise: the interrupted stack. */
            if (!interrupted_on_alt) {
                uint64_t top = sp - cc__arch_red_zone;
                uint64_t frame = cc__g.signal_frame_size;
                if (top < frame || !cc__range_readable(top - frame, top)) return 0;
                stack_top = (uintptr_t)((top - frame) & ~(uint64_t)15);
            }
        }
    }

    if (previous.sa_flags & SA_RESETHAND) {
        struct sigaction reset = previous;
        reset.sa_handler = SIG_DFL;
        sigaction(signo, &reset, 0);
    }
    sigset_t ours;
    sigprocmask(SIG_SETMASK, &mask, &ours);
    errno = saved_errno;
    if (stack_top) cc__call_on_stack(handler, signo, info, uc, stack_top);
    else handler(signo, info, uc);
    *errno_after = errno;
    sigprocmask(SIG_SETMASK, &ours, 0);
    return 1;
}

/* async-signal-safe: what the program asked for meanwhile becomes the previous action; ours
 * goes back on top so a repeated fault, or a later crash, still reaches us. */
void cc__adopt_disposition(int index, int signo) {
    struct sigaction current;
    if (sigaction(signo, 0, &current) != 0) return;
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == cc__handler) return;
    cc__g.previous[index] = current;
    sigaction(signo, &cc__g.ours, 0);
}
