/* cc_chain.c — chaining: the action that was installed before ours runs as if the kernel had delivered the signal to it.
 * It and cc_threads.c call each other: the turn asks whether its holder still blocks the stop
 * signal (cc__task_blocks), the stop leaves threads waiting for the turn alone
 * (cc__turn_waiting); each keeps the table it owns. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <errno.h>
#include <signal.h>
#include <time.h>
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

/*
 * ONE THREAD AT A TIME. The kernel runs a fatal handler on every thread that faults, all at once.
 * The Swift runtime's handler was not written for that: its own answer is a lock that every
 * other crashing thread waits on for good, so that the first thread's report ends the process.
 * Entered by two threads through us, it started a second swift-backtrace after the first had
 * finished, and the process died under it (our record stops every thread): the backtracer's
 * report came twice and a swift-backtrace process stayed behind forever, waiting on a memory
 * server that no longer answered. So we give every previous handler the runtime's answer — we
 * cannot tell which ones were written for concurrency — and extend it to our own record, which
 * stops every other thread and so must never begin while one of them is inside the previous
 * handler: a thread handles a fatal signal (chains, records, or both) only while it holds the
 * turn (cc__g.turn). Every other crashing thread waits in cc__turn_take, inside our handler:
 *   - when a thread of this process begins a record, each waiter parks with its own context,
 *     as a thread that crashes during a record always did, and is recorded as crashed too
 *     (cc_threads.c waits for it to park rather than asking it to stop);
 *   - when the holder's previous handler returned for a fault that re-executes, the holder keeps
 *     the turn: a fault that was not repaired comes back at once, and is recorded on the thread
 *     that crashed first, the one the previous handler's own report named. A fault that was
 *     repaired never comes back: after CC__TURN_GRACE_NS the next waiter takes the turn;
 *   - when the holder left the previous handler without returning (a siglongjmp out of it), or
 *     its thread ended, the next waiter takes the turn. The holder runs the previous handler
 *     with our stop signal blocked as a marker (cc__deliver_to_previous): a holder whose status
 *     no longer blocks it has left (without a stop signal installed there is no marker, and only
 *     the thread's end is seen);
 *   - a signal sent by a process (kill, tgkill) does not re-execute: the turn is given back
 *     as soon as the previous handler returns;
 *   - last, patience: no thread waits longer than CC__TURN_PATIENCE_NS. A holder that left with
 *     longjmp (which keeps the mask, marker included) and never faults again would otherwise
 *     hold every later crash forever; a crash must stay a crash. A previous handler that takes
 *     longer than that (Swift's backtracer waiting for a person at a terminal) then sees a second
 *     thread, as it would without us.
 * What this gives up: a previous handler written to run on several threads at once (a runtime's
 * guard-page handler, say) runs on one at a time, each thread waiting for the ones before it,
 * and for CC__TURN_GRACE_NS more after each repaired fault. A waiter polls: it cannot sleep on a
 * futex for the holder's end, which is also a siglongjmp or a thread's exit that nobody wakes.
 */
#define CC__TURN_GRACE_NS    (20 * 1000000LL)
#define CC__TURN_PATIENCE_NS (60 * 1000000000LL)
#define CC__TURN_POLL_NS     (200 * 1000L)
#define CC__TURN_CHECK_NS    (5 * 1000000LL)   /* how often a waiter reads the holder's status */

static uint64_t cc__turn_id(pid_t pid, pid_t tid) { return ((uint64_t)(uint32_t)pid << 32) | (uint32_t)tid; }

/* async-signal-safe: puts `me` in a free waiter slot; returns the slot, or -1 when every slot is
 * taken (then the waiter is only not waited for by a record: the thread helper reads it). The
 * slot count is raised before the slot is taken, so that a record that scans up to the count
 * sees every waiter. */
static int cc__waiter_add(uint64_t me) {
    for (uint32_t i = 0; i < CC__MAX_THREADS; i++) {
        uint32_t slots = atomic_load(&cc__g.turn_waiter_slots);
        while (slots < i + 1 && !atomic_compare_exchange_weak(&cc__g.turn_waiter_slots, &slots, i + 1)) {}
        uint64_t free_slot = 0;
        if (atomic_compare_exchange_strong(&cc__g.turn_waiters[i], &free_slot, me)) return (int)i;
    }
    return -1;
}

/* async-signal-safe */
int cc__turn_waiting(pid_t tid) {
    uint64_t id = cc__turn_id(cc__sys_getpid(), tid);
    uint32_t slots = atomic_load(&cc__g.turn_waiter_slots);
    if (slots > CC__MAX_THREADS) slots = CC__MAX_THREADS;
    for (uint32_t i = 0; i < slots; i++) if (atomic_load(&cc__g.turn_waiters[i]) == id) return 1;
    return 0;
}

/* async-signal-safe: whether the holder `tid` is done with the turn without giving it back. */
static int cc__turn_abandoned(pid_t tid, int64_t now) {
    int64_t returned = atomic_load(&cc__g.turn_returned_ns);
    if (returned) return now - returned > CC__TURN_GRACE_NS;   /* its fault was repaired */
    char status[4096];   /* on this thread's stack: several waiters may read at once */
    int blocks = cc__task_blocks(tid, cc__g.stop_signal ? cc__g.stop_signal : SIGSEGV, status, sizeof status);
    if (blocks == -1) return 1;                           /* its thread ended */
    return cc__g.stop_signal && blocks == 0;              /* it left the previous handler */
}

/* async-signal-safe */
void cc__turn_take(const ucontext_t *uc, pid_t pid, pid_t tid) {
    uint64_t me = cc__turn_id(pid, tid);
    int slot = -1;
    int64_t next_check = 0, started = cc__clock_ns(CLOCK_MONOTONIC);
    for (;;) {
        uint64_t holder = atomic_load(&cc__g.turn);
        /* Ours already (the fault our previous handler returned to comes back, or a fault
         * inside that handler), nobody's, or a stale one (fork, a vfork child). */
        if (holder == me || holder == 0 || (pid_t)(holder >> 32) != pid) {
            if (holder == me || atomic_compare_exchange_strong(&cc__g.turn, &holder, me)) break;
            continue;
        }
        if (slot < 0) slot = cc__waiter_add(me);
        uint64_t owner = atomic_load(&cc__g.owner);
        if (owner != 0 && (pid_t)(owner >> 32) == pid) cc__park(uc, 1);   /* a record began */
        int64_t now = cc__clock_ns(CLOCK_MONOTONIC);
        if (now >= next_check) {
            next_check = now + CC__TURN_CHECK_NS;
            if ((now - started > CC__TURN_PATIENCE_NS || cc__turn_abandoned((pid_t)(uint32_t)holder, now)) &&
                atomic_compare_exchange_strong(&cc__g.turn, &holder, me)) break;
        }
        struct timespec poll = { 0, CC__TURN_POLL_NS };
        cc__sys_nanosleep(&poll);
    }
    atomic_store(&cc__g.turn_returned_ns, 0);
    if (slot >= 0) atomic_store(&cc__g.turn_waiters[slot], 0);
}

/* async-signal-safe */
void cc__turn_give_back(pid_t pid, pid_t tid, int again) {
    uint64_t me = cc__turn_id(pid, tid);
    if (atomic_load(&cc__g.turn) != me) return;   /* taken over meanwhile */
    if (again) {
        int64_t now = cc__clock_ns(CLOCK_MONOTONIC);
        atomic_store(&cc__g.turn_returned_ns, now ? now : 1);
    } else {
        atomic_compare_exchange_strong(&cc__g.turn, &me, 0);
    }
}

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
    struct sigaction previous = cc__previous_actions(cc__sys_getpid(), 0)[index];
    void (*handler)(int, siginfo_t *, void *) = previous.sa_sigaction;

    sigset_t mask;
    if (uc) mask = uc->uc_sigmask;
    else cc__sys_sigprocmask(SIG_SETMASK, 0, &mask);
    for (int s = 1; s < NSIG; s++) if (sigismember(&previous.sa_mask, s) == 1) sigaddset(&mask, s);
    if (!(previous.sa_flags & SA_NODEFER)) sigaddset(&mask, signo);
    /* The marker that says this thread is inside the previous handler (ONE THREAD AT A TIME
     * above): our own stop signal, which nothing but a record of ours sends, and none is sent
     * while this thread holds the turn. */
    if (cc__g.stop_signal) sigaddset(&mask, cc__g.stop_signal);

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
    cc__sys_sigprocmask(SIG_SETMASK, &mask, &ours);
    errno = saved_errno;
    if (stack_top) cc__call_on_stack(handler, signo, info, uc, stack_top);
    else handler(signo, info, uc);
    *errno_after = errno;
    cc__sys_sigprocmask(SIG_SETMASK, &ours, 0);
    return 1;
}

/* async-signal-safe: the previous actions as this process sees them. The installing process
 * keeps them in cc__g.previous. A child process (fork, or vfork, whose child shares this memory
 * with its suspended parent) that adopts a disposition (`for_write`) keeps its own copy first:
 * what a vfork child's chained handler did (the Swift runtime resets every fatal signal before
 * it returns) must never become its parent's, whose next crash would then not reach it. `pid` is
 * this process's (the handler knows it already). */
struct sigaction *cc__previous_actions(pid_t pid, int for_write) {
    if (pid == cc__g.install_pid) return cc__g.previous;
    if (atomic_load(&cc__g.child_previous_pid) == pid) return cc__g.child_previous;
    if (!for_write) return cc__g.previous;
    for (int i = 0; i < CC__SIGNAL_COUNT; i++) cc__g.child_previous[i] = cc__g.previous[i];
    atomic_store(&cc__g.child_previous_pid, pid);
    return cc__g.child_previous;
}

/* async-signal-safe: after a previous handler returned, what the program asked for meanwhile
 * becomes the previous action, for every fatal signal (the Swift runtime's handler resets all of
 * them, not only the one it handled: ours would otherwise be gone for a fault inside our own
 * record, or for another thread's crash); ours goes back on top so a repeated fault, or a later
 * crash, still reaches us. */
void cc__adopt_dispositions(void) {
    struct sigaction *previous = 0;
    for (int i = 0; i < CC__SIGNAL_COUNT; i++) {
        struct sigaction current;
        if (sigaction(cc__g.signals[i], 0, &current) != 0) continue;
        if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == cc__handler) continue;
        if (!previous) previous = cc__previous_actions(cc__sys_getpid(), 1);
        previous[i] = current;
        sigaction(cc__g.signals[i], &cc__g.ours, 0);
    }
}
