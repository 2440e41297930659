/* cc_helper.c — the thread helper: threads that block the stop signal are stopped with ptrace by
 * a short-lived process that shares our memory, and unwound in place. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * Why a helper. A thread that blocks every signal (libdispatch workers, the Swift concurrency
 * pool) cannot be asked to stop itself, and no thread can ptrace a thread of its own process.
 * So the recording thread starts a helper with clone(CLONE_VM): another process (it may
 * ptrace us) that shares our memory (nothing is copied or exec'd, and it can read the stopped
 * threads' stacks and the crash-time image table directly). After prctl(PR_SET_PTRACER) lets
 * it in under Yama, the helper stops each thread with PTRACE_SEIZE + PTRACE_INTERRUPT (per
 * thread: no signal is sent, so no mask matters), reads its registers with PTRACE_GETREGSET and
 * unwinds it with the same unwinder the handler uses (cc__unwind_context, over the crash-time
 * image table, with scratch of its own: cc__cfi_helper). It
 * publishes each thread in g_helper as it goes, all before the record file exists (the
 * recording thread waits for it while stopping threads); the recording thread writes them
 * into the record later. The helper then keeps the threads stopped until the recording thread is gone
 * (PR_SET_PDEATHSIG kills it then; the watchdog bounds that). If it does not finish in time,
 * the recording thread kills it (the two share the fault-proof reads' fallback pipe) and writes what
 * it had published.
 *
 * Rules in the helper: it shares our memory and even our thread's TLS (errno included), so it
 * uses only g_helper and its own stack, makes the system calls whose errors it reads without
 * errno (cc__raw_syscall), and dies of its own faults (the fatal signals are SIG_DFL in it)
 * rather than recording them. Everything here is async-signal-safe.
 */

#define CC__HELPER_MAX      CC__MAX_THREADS
#define CC__REGISTERS_MAX   (64 * 16 + 64)

typedef struct {
    pid_t tid;
    int error;                        /* 0, or why it could not be stopped / read */
    uint32_t frame_count;
    uint32_t omitted;
    int truncated;
    uint32_t registers_length;
    uint64_t frames[CC__OTHER_FRAMES];
    uint64_t fps[CC__OTHER_FRAMES];       /* each frame's frame pointer (cc_async.c) */
    uint64_t async_register;              /* the async context register when it stopped */
    unsigned char registers[CC__REGISTERS_MAX];
    _Atomic int ready;                /* published by the helper */
} cc__helper_thread_t;

static struct {
    char stack[128 * 1024] __attribute__((aligned(16)));   /* the helper's own stack */
    pid_t parent_pid;
    uint32_t count;
    _Atomic uint32_t go;              /* futex: the recording thread named the helper as tracer */
    _Atomic uint32_t done;            /* futex: every thread is published */
    int release;                      /* a live snapshot: let the threads go and exit once read */
    _Atomic pid_t pid;                /* the helper while it may be running, else 0 */
    int64_t first_stop_ns, released_ns; /* when the first thread was asked to stop, the last let go */
    uint32_t stopped;                 /* threads stopped and read */
    cc__cfi_frame_t frame;            /* the helper's unwinder state (and cc__cfi_helper) */
    cc__walk_t walk;
    cc__helper_thread_t threads[CC__HELPER_MAX];
} g_helper;

/* async-signal-safe: waits while *word == value, at most `ns`. */
static void cc__futex_wait(_Atomic uint32_t *word, uint32_t value, long ns) {
    struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
    cc__raw_syscall(SYS_futex, (long)word, FUTEX_WAIT, (long)value, (long)&ts);
}

static void cc__futex_wake(_Atomic uint32_t *word) {
    cc__raw_syscall(SYS_futex, (long)word, FUTEX_WAKE, 1, 0);
}

/* async-signal-safe: the thread's registers (it is ptrace-stopped) as a ucontext. */
static int cc__helper_registers(pid_t tid, ucontext_t *uc) {
    unsigned char *raw = (unsigned char *)uc;
    for (size_t i = 0; i < sizeof *uc; i++) raw[i] = 0;
    return cc__arch_ptrace_registers(tid, uc);
}

/* async-signal-safe: waits (bounded) for a seized thread to report its ptrace stop. */
static int cc__helper_wait_stopped(pid_t tid) {
    int64_t deadline = cc__clock_ns(CLOCK_MONOTONIC) + 1000 * 1000000LL;
    for (;;) {
        int status = 0;
        long got = cc__raw_syscall(SYS_wait4, tid, (long)&status, __WALL | WNOHANG, 0);
        if (got == tid) return WIFSTOPPED(status) ? 0 : ESRCH;
        if (got < 0 && got != -EINTR) return (int)-got;
        if (cc__clock_ns(CLOCK_MONOTONIC) >= deadline) return ETIMEDOUT;
        struct timespec pause = { 0, 50 * 1000 };
        cc__raw_syscall(SYS_nanosleep, (long)&pause, 0, 0, 0);
    }
}

/* The helper process (see the top of this file). */
static int cc__helper_main(void *arg) {
    (void)arg;
    /* A fault here ends the helper, which the recording thread notices; it is not a crash of
     * the program to record. */
    struct sigaction dfl = { 0 };
    dfl.sa_handler = SIG_DFL;
    for (int i = 0; i < CC__SIGNAL_COUNT; i++) sigaction(cc__g.signals[i], &dfl, 0);
    cc__raw_syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0);
    if (cc__raw_syscall(SYS_getppid, 0, 0, 0, 0) != g_helper.parent_pid) cc__raw_syscall(SYS_exit, 1, 0, 0, 0);
    for (int i = 0; i < 200 && !atomic_load(&g_helper.go); i++) cc__futex_wait(&g_helper.go, 0, 5 * 1000000L);

    uint32_t count = g_helper.count;
    g_helper.first_stop_ns = cc__clock_ns(CLOCK_MONOTONIC);
    for (uint32_t i = 0; i < count; i++) {   /* stop them all first */
        cc__helper_thread_t *t = &g_helper.threads[i];
        long rc = cc__raw_syscall(SYS_ptrace, PTRACE_SEIZE, t->tid, 0, 0);
        if (rc == 0) rc = cc__raw_syscall(SYS_ptrace, PTRACE_INTERRUPT, t->tid, 0, 0);
        t->error = rc < 0 ? (int)-rc : 0;
    }
    if (cc__g.flags & CC_FLAG_TEST_SLOW_HELPER) {   /* test hook: outlive the deadline */
        struct timespec stall = { 30, 0 };
        cc__raw_syscall(SYS_nanosleep, (long)&stall, 0, 0, 0);
    }
    for (uint32_t i = 0; i < count; i++) {   /* then read them one by one */
        cc__helper_thread_t *t = &g_helper.threads[i];
        if (t->error == 0) t->error = cc__helper_wait_stopped(t->tid);
        static ucontext_t uc;
        if (t->error == 0) t->error = cc__helper_registers(t->tid, &uc);
        if (t->error == 0) {
            t->registers_length = (uint32_t)cc__registers_payload(&uc, t->registers, sizeof t->registers);
            t->frame_count = cc__unwind_context(&uc, &g_helper.frame, &cc__cfi_helper, &g_helper.walk, t->frames, t->fps,
                                                CC__OTHER_FRAMES, &t->omitted, &t->truncated);
            t->async_register = cc__context_async_register(&uc);
        }
        atomic_store_explicit(&t->ready, 1, memory_order_release);
    }
    if (g_helper.release) {
        /* A live snapshot (cc_snapshot.c): every thread read, let go at once. PTRACE_DETACH
         * resumes a thread in its ptrace stop; one seized but never stopped is let go by our
         * exit, which detaches every tracee. No signal handler ran in any of them, so a system
         * call each was in restarts as if nothing happened (a sleep sleeps on, no EINTR). */
        uint32_t stopped = 0;
        for (uint32_t i = 0; i < count; i++) {
            cc__helper_thread_t *t = &g_helper.threads[i];
            if (t->error == 0) stopped++;
            cc__raw_syscall(SYS_ptrace, PTRACE_DETACH, t->tid, 0, 0);
        }
        g_helper.stopped = stopped;
        g_helper.released_ns = cc__clock_ns(CLOCK_MONOTONIC);
        atomic_store(&g_helper.done, 1);
        cc__futex_wake(&g_helper.done);
        cc__raw_syscall(SYS_exit, 0, 0, 0, 0);
    }
    atomic_store(&g_helper.done, 1);
    cc__futex_wake(&g_helper.done);
    for (;;) cc__raw_pause();   /* hold them until we are killed */
    return 0;
}

/* async-signal-safe: starts the helper for `count` threads and waits until it has stopped and
 * read them all, or the deadline. Returns 0, or an errno value when it could not start or did
 * not finish in time (then it is killed: the two share the fault-proof reads' fallback pipe; what it
 * published is kept). Runs while the other threads are being stopped, before the record file
 * exists, so that no thread runs on while the record is written. */
int cc__helper_stop_threads(const pid_t *tids, uint32_t count, int64_t deadline_ns, int release) {
    g_helper.count = 0;
    g_helper.stopped = 0;
    g_helper.first_stop_ns = g_helper.released_ns = 0;
    if (count == 0) return 0;
    if (count > CC__HELPER_MAX) count = CC__HELPER_MAX;
    g_helper.parent_pid = cc__sys_getpid();
    g_helper.count = count;
    g_helper.release = release;
    atomic_store(&g_helper.go, 0);
    atomic_store(&g_helper.done, 0);
    for (uint32_t i = 0; i < count; i++) {
        g_helper.threads[i].tid = tids[i];
        g_helper.threads[i].error = 0;
        g_helper.threads[i].frame_count = 0;
        g_helper.threads[i].async_register = 0;
        g_helper.threads[i].registers_length = 0;
        atomic_store(&g_helper.threads[i].ready, 0);
    }
    /* No exit signal: its end must not raise SIGCHLD in the program. */
    pid_t helper = clone(cc__helper_main, g_helper.stack + sizeof g_helper.stack, CLONE_VM | CLONE_UNTRACED, 0);
    if (helper < 0) return ECHILD;
    atomic_store(&g_helper.pid, helper);
    /* Yama (ptrace_scope 1) lets a process trace only its descendants unless named. */
    cc__sys_prctl(PR_SET_PTRACER, (unsigned long)helper);
    atomic_store(&g_helper.go, 1);
    cc__futex_wake(&g_helper.go);

    int result = 0;
    while (!atomic_load(&g_helper.done)) {
        int status = 0;
        if (cc__raw_syscall(SYS_wait4, helper, (long)&status, __WALL | WNOHANG, 0) == helper) { result = ECHILD; break; }
        if (cc__clock_ns(CLOCK_MONOTONIC) >= deadline_ns) { result = ETIMEDOUT; break; }
        cc__futex_wait(&g_helper.done, 0, 1000000L);
    }
    if (result != 0 || release) {
        /* It must not unwind while we do: killed when late, and waited for until it is gone (a
         * releasing helper is exiting by itself; its exit lets go of any thread still held). */
        int status = 0;
        if (result != 0) cc__raw_syscall(SYS_kill, helper, SIGKILL, 0, 0);
        cc__raw_syscall(SYS_wait4, helper, (long)&status, __WALL, 0);
        if (release && !g_helper.released_ns) g_helper.released_ns = cc__clock_ns(CLOCK_MONOTONIC);
    }
    if (release) {
        atomic_store(&g_helper.pid, 0);
        cc__sys_prctl(PR_SET_PTRACER, 0);   /* the helper's pid may be reused */
    }
    return result;
}

/* async-signal-safe: a fault on the thread that started a releasing helper, while it may still
 * run: it is killed and waited for (its exit lets go of every thread it held), so that the
 * crash's own record can start its own. */
void cc__helper_abandon(void) {
    pid_t helper = atomic_exchange(&g_helper.pid, 0);
    if (helper <= 0 || !g_helper.release) return;
    int status = 0;
    cc__raw_syscall(SYS_kill, helper, SIGKILL, 0, 0);
    cc__raw_syscall(SYS_wait4, helper, (long)&status, __WALL, 0);
}

/* async-signal-safe: after a releasing cc__helper_stop_threads, how long the threads were held
 * (microseconds) and how many were stopped and read. */
uint32_t cc__helper_held_microseconds(uint32_t *stopped) {
    *stopped = g_helper.stopped;
    if (!g_helper.first_stop_ns || g_helper.released_ns < g_helper.first_stop_ns) return 0;
    int64_t us = (g_helper.released_ns - g_helper.first_stop_ns) / 1000;
    return us > 0 && us < UINT32_MAX ? (uint32_t)us : 0;
}

/* async-signal-safe: the index among the helper's threads of `tid`, or -1. */
int cc__helper_index(pid_t tid) {
    for (uint32_t i = 0; i < g_helper.count; i++) if (g_helper.threads[i].tid == tid) return (int)i;
    return -1;
}

/* async-signal-safe: the helper's `index`-th thread's frames once it was read (NULL when it was
 * not, or had exited), `*count` of them. */
const uint64_t *cc__helper_frames(uint32_t index, uint32_t *count) {
    *count = 0;
    if (index >= g_helper.count) return 0;
    cc__helper_thread_t *t = &g_helper.threads[index];
    if (!atomic_load_explicit(&t->ready, memory_order_acquire) || t->error != 0) return 0;
    *count = t->frame_count;
    return t->frames;
}

/* async-signal-safe: writes the helper's `index`-th thread — THREAD_REGISTERS then THREAD, with
 * CC_THREAD_PTRACED, or CC_THREAD_PTRACE_REFUSED without frames. Returns 0 when there is
 * nothing to write (it never got to it, or the thread had exited). */
int cc__helper_write_thread(cc__writer_t *w, uint32_t index) {
    if (index >= g_helper.count) return 0;
    cc__helper_thread_t *t = &g_helper.threads[index];
    if (!atomic_load_explicit(&t->ready, memory_order_acquire) || t->error == ESRCH) return 0;
    cc_sec_thread_t head = { .tid = t->tid };
    cc__thread_name(t->tid, head.name);
    if (t->error != 0) {
        head.flags = CC_THREAD_NO_STACK | CC_THREAD_NOT_STOPPED | CC_THREAD_PTRACE_REFUSED;
    } else {
        if (t->registers_length > 0) {
            cc__section_begin(w, CC_SEC_THREAD_REGISTERS);
            cc_sec_thread_registers_t regs = { .tid = t->tid };
            cc__section_put(w, &regs, sizeof regs);
            cc__section_put(w, t->registers, t->registers_length);
            cc__section_end(w);
        }
        head.frame_count = t->frame_count;
        head.omitted_frames = t->omitted;
        head.flags = CC_THREAD_FROM_CONTEXT | CC_THREAD_PTRACED | (t->truncated ? CC_THREAD_TRUNCATED : 0) |
                     (t->frame_count == 0 ? CC_THREAD_NO_STACK : 0);
    }
    cc__section_begin(w, CC_SEC_THREAD);
    cc__section_put(w, &head, sizeof head);
    cc__section_put(w, t->frames, t->error ? 0 : (size_t)t->frame_count * sizeof(uint64_t));
    cc__section_end(w);
    /* Its async context chains: the helper still holds it stopped, and shares our memory. */
    if (!t->error) cc__write_async_chains(w, t->tid, t->fps, t->frame_count, t->async_register, CC__ASYNC_LINKS_OTHER);
    return 1;
}

/* async-signal-safe: a note when the helper could not ptrace some threads. */
void cc__helper_write_note(cc__writer_t *w) {
    uint32_t refused = 0;
    int first_refusal = 0;
    for (uint32_t i = 0; i < g_helper.count; i++) {
        cc__helper_thread_t *t = &g_helper.threads[i];
        if (!atomic_load_explicit(&t->ready, memory_order_acquire) || t->error == 0 || t->error == ESRCH) continue;
        refused++;
        if (!first_refusal) first_refusal = t->error;
    }
    if (refused == 0) return;
    char note[160];
    size_t n = cc__strlcpy(note, "the thread helper could not ptrace ", sizeof note);
    n += cc__fmt_u64(note + n, refused);
    n += cc__strlcpy(note + n, refused == 1 ? " thread (" : " threads (", sizeof note - n);
    n += cc__strlcpy(note + n, cc__errno_name(first_refusal), sizeof note - n);
    n += cc__strlcpy(note + n, "): they block the stop signal and have no frames", sizeof note - n);
    cc__write_string(w, CC_STR_NOTE, note, n);
}
