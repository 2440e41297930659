/* cc_threads.c — the other threads of a crashing process: stopped before the record is written, named, and unwound from where they stopped.
 * It and cc_helper.c are one step, the stop, split by how a thread is stopped: the helper asks
 * back only for a thread's name, which the stop read with its status. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * How other threads are stopped. The thread that owns the crash (cc__g.owner) sends
 * `stop_signal` to every other thread listed in /proc/self/task. The stop handler
 * (cc__stop_handler) publishes the thread's own signal context in a slot of cc__g.stopped and
 * parks on a futex that is never woken: it never returns, so whatever system call the thread
 * was in never sees EINTR and nothing it would do next (return from main, exit(0), write a
 * file) ever happens. The process then dies of the crash signal with every thread parked.
 * A thread that crashes itself while another thread records parks the same way from the
 * fatal handler. The recording thread unwinds each parked thread from its published context.
 *
 * A thread that blocks the stop signal (read from SigBlk in /proc/self/task/<tid>/status, so
 * no time is spent waiting for it) cannot be stopped this way: it is listed without frames
 * and flagged CC_THREAD_NOT_STOPPED. Threads created while stopping are found by scanning
 * again (up to four rounds); the whole step is bounded at 500 ms. Up to CC__MAX_THREADS threads
 * are recorded; any beyond are sent the stop signal too, and a note says they were left out.
 *
 * The signal is SIGRTMAX-3 unless configured (or a free real-time signal below it); it is only
 * used if nobody had a handler for it at install time, and only if our handler is still the one
 * installed at crash time. Its handler's mask blocks everything but the synchronous fault
 * signals, so no handler of the application runs on a parked thread.
 */

static pid_t g_tids[CC__MAX_THREADS];
static char g_names[CC__MAX_THREADS][16];   /* [15] == 1: read from the thread's status */
static uint8_t g_not_stopped[CC__MAX_THREADS];
/* The crash's counts, side by side: one page to fault in, not one each (cc_images.c, g_check). */
static struct {
    uint32_t tid_count;
    int more_threads;
    int helper_result;                       /* 0, or why the thread helper did not finish */
} g_stop;

/* async-signal-safe: parks the calling thread for good, publishing its context first. */
_Noreturn void cc__park(const ucontext_t *uc, int crashed) {
    uint32_t slot = atomic_fetch_add(&cc__g.stopped_count, 1);
    if (slot < CC__MAX_THREADS) {
        cc__g.stopped[slot].context = uc;
        cc__g.stopped[slot].crashed = crashed;
        atomic_store_explicit(&cc__g.stopped[slot].tid, cc__gettid(), memory_order_release);
    }
    for (;;) syscall(SYS_futex, &cc__g.park_word, FUTEX_WAIT_PRIVATE, 0, (void *)0, (void *)0, 0);
}

/* async-signal-safe: the stop request. Anything else arriving on this signal is ignored. */
static void cc__stop_handler(int signo, siginfo_t *info, void *context) {
    (void)signo; (void)info;
    uint64_t owner = atomic_load(&cc__g.owner);
    if (owner != 0 && (pid_t)(owner >> 32) == cc__sys_getpid() && (pid_t)(uint32_t)owner != cc__gettid()) {
        cc__park((const ucontext_t *)context, 0);
    }
}

/* Install time: claims `signo` (or, when 0, a free real-time signal from SIGRTMAX-3 down) only
 * if nobody handles it. Returns 0 on success. */
int cc__threads_install(int signo) {
    int first = signo ? signo : SIGRTMAX - 3, last = signo ? signo : SIGRTMAX - 10;
    if (last < SIGRTMIN) last = SIGRTMIN;
    for (int candidate = first; candidate >= last; candidate--) {
        struct sigaction current;
        if (sigaction(candidate, 0, &current) != 0) continue;
        if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) continue;
        struct sigaction action = { 0 };
        action.sa_sigaction = cc__stop_handler;
        /* Everything blocked while parked, but the synchronous faults: a fault here must reach
         * the fatal handler (a blocked one would kill the process at once). */
        sigfillset(&action.sa_mask);
        int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP };
        for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) sigdelset(&action.sa_mask, faults[i]);
        /* SA_ONSTACK: the target may be near the end of its own stack. SA_RESTART: a stray
         * signal that is ignored leaves the interrupted call running. */
        action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
        if (sigaction(candidate, &action, &cc__g.stop_previous) != 0) continue;
        cc__g.stop_signal = candidate;
        return 0;
    }
    return -1;
}

void cc__threads_uninstall(void) {
    if (cc__g.stop_signal == 0) return;
    sigaction(cc__g.stop_signal, &cc__g.stop_previous, 0);
    cc__g.stop_signal = 0;
}

/* async-signal-safe: reads /proc/self/task/<tid>/<leaf> into out (at most cap-1 bytes,
 * NUL-terminated). Returns the bytes read, or -1. */
static ssize_t cc__read_task_file(pid_t tid, const char *leaf, char *out, size_t cap) {
    char path[64] = "/proc/self/task/";
    size_t n = 16;
    n += cc__fmt_u64(path + n, (uint64_t)tid);
    path[n++] = '/';
    for (int i = 0; leaf[i] && n + 1 < sizeof path; i++) path[n++] = leaf[i];
    path[n] = 0;
    int fd = cc__sys_open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t got;
    do { got = cc__sys_read(fd, out, cap - 1); } while (got < 0 && errno == EINTR);
    cc__sys_close(fd);
    out[got > 0 ? got : 0] = 0;
    return got;
}

/* async-signal-safe: index of tid in g_tids, or -1. */
static int cc__known_tid(pid_t tid);

/* async-signal-safe: the thread's name: the one read with its status while stopping threads,
 * else /proc/self/task/<tid>/comm. */
void cc__thread_name(pid_t tid, char out[16]) {
    int known = cc__known_tid(tid);
    if (known >= 0 && g_names[known][15] == 1) {
        for (int i = 0; i < 15; i++) out[i] = g_names[known][i];
        out[15] = 0;
        return;
    }
    for (int i = 0; i < 16; i++) out[i] = 0;
    ssize_t got = cc__read_task_file(tid, "comm", out, 16);
    for (ssize_t i = 0; i < got; i++) if (out[i] == '\n') out[i] = 0;
}

/* async-signal-safe: the value of the status line `key` ("SigBlk:"), or NULL. */
static const char *cc__status_field(const char *status, ssize_t length, const char *key) {
    for (ssize_t i = 0; i < length; i++) {
        if (i != 0 && status[i - 1] != '\n') continue;
        ssize_t k = 0;
        while (key[k] && i + k < length && status[i + k] == key[k]) k++;
        if (key[k]) continue;
        const char *p = status + i + k;
        while (*p == ' ' || *p == '\t') p++;
        return p;
    }
    return 0;
}

/* async-signal-safe: whether a status text's SigBlk blocks `signo`. */
static int cc__status_blocks(const char *status, ssize_t length, int signo) {
    const char *p = cc__status_field(status, length, "SigBlk:");
    if (!p) return 0;
    uint64_t mask = 0;
    for (; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
        mask = (mask << 4) | (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
    return signo >= 1 && signo <= 64 && ((mask >> (signo - 1)) & 1);
}

/* async-signal-safe: one read of /proc/self/task/<tid>/status gives both whether the thread
 * blocks `signo` (SigBlk) and its name, kept in g_names[index] (one open per thread, not two:
 * with a hundred threads the opens are most of the handler's time). */
static int cc__thread_blocks(uint32_t index, int signo) {
    static char status[4096];
    ssize_t got = cc__read_task_file(g_tids[index], "status", status, sizeof status);
    if (got <= 0) return 0;
    const char *name = cc__status_field(status, got, "Name:");
    if (name) {
        int n = 0;
        for (; n < 15 && name[n] && name[n] != '\n'; n++) g_names[index][n] = name[n];
        for (; n < 15; n++) g_names[index][n] = 0;
        g_names[index][15] = 1; /* known */
    }
    return cc__status_blocks(status, got, signo);
}

/* async-signal-safe, and reentrant (the caller's buffer: several threads may ask at once):
 * 1 when thread `tid` of this process blocks `signo`, 0 when it does not, -1 when it is gone
 * (its status is no more), -2 when its status could not be read for another reason (the fd
 * limit). */
int cc__task_blocks(pid_t tid, int signo, char *buffer, size_t cap) {
    ssize_t got = cc__read_task_file(tid, "status", buffer, cap);
    if (got < 0) return errno == ENOENT || errno == ESRCH ? -1 : -2;
    if (got == 0) return -1;   /* a thread that died after the open: its status reads empty */
    return cc__status_blocks(buffer, got, signo);
}

/* async-signal-safe: the slot a thread published, or -1. */
static int cc__stopped_slot(pid_t tid) {
    uint32_t count = atomic_load(&cc__g.stopped_count);
    if (count > CC__MAX_THREADS) count = CC__MAX_THREADS;
    for (uint32_t i = 0; i < count; i++) {
        if (atomic_load_explicit(&cc__g.stopped[i].tid, memory_order_acquire) == tid) return (int)i;
    }
    return -1;
}

/* async-signal-safe: index of tid in g_tids, or -1. */
static int cc__known_tid(pid_t tid) {
    for (uint32_t i = 0; i < g_stop.tid_count; i++) if (g_tids[i] == tid) return (int)i;
    return -1;
}

/* async-signal-safe: adds every thread of /proc/self/task not yet known; returns how many.
 * Threads beyond CC__MAX_THREADS are not recorded: with `stop_signal` (not 0) they are sent it,
 * so that none of them runs on (this is done once the recorded threads have parked, so that
 * they do not take the recorded threads' slots). */
typedef struct { pid_t self, pid; int stop_signal; uint32_t added; } cc__scan_t;

/* async-signal-safe: one task of the listing (see cc__scan_tasks). */
static void cc__scan_task(long number, void *context) {
    cc__scan_t *scan = context;
    pid_t tid = (pid_t)number;
    if (tid == scan->self || cc__known_tid(tid) >= 0) return;
    if (g_stop.tid_count < CC__MAX_THREADS) {
        g_not_stopped[g_stop.tid_count] = 0;
        g_names[g_stop.tid_count][15] = 0;
        g_tids[g_stop.tid_count++] = tid;
        scan->added++;
    } else {
        g_stop.more_threads = 1;
        if (scan->stop_signal) syscall(SYS_tgkill, (long)scan->pid, (long)tid, (long)scan->stop_signal);
    }
}

static uint32_t cc__scan_tasks(pid_t self, pid_t pid, int stop_signal) {
    cc__scan_t scan = { .self = self, .pid = pid, .stop_signal = stop_signal, .added = 0 };
    cc__each_numbered_entry("/proc/self/task", cc__scan_task, &scan);
    return scan.added;
}

/* async-signal-safe: stops every other thread that can be stopped (see the top of this file).
 * `threads` is how many the kernel's status named a moment ago (0: unknown): when it is 1 the
 * crashed thread is alone (none can be starting: only a thread of this process could start one,
 * and it is this one, in the handler), and there is nothing to list. */
void cc__stop_other_threads(pid_t self, uint32_t threads) {
    g_stop.tid_count = 0;
    g_stop.more_threads = 0;
    if (threads == 1) return;
    int stop = cc__g.stop_signal != 0;
    if (stop) {
        struct sigaction current;
        stop = sigaction(cc__g.stop_signal, 0, &current) == 0 && (current.sa_flags & SA_SIGINFO) &&
               current.sa_sigaction == cc__stop_handler;
    }
    pid_t pid = cc__sys_getpid();
    int64_t deadline = cc__clock_ns(CLOCK_MONOTONIC) + 500 * 1000000LL;
    for (int round = 0; round < 4; round++) {
        uint32_t first = g_stop.tid_count;
        if (cc__scan_tasks(self, pid, 0) == 0) break;
        for (uint32_t i = first; i < g_stop.tid_count; i++) {
            if (cc__stopped_slot(g_tids[i]) >= 0) continue;        /* parked itself (crashed too) */
            /* Crashed too and waiting for its turn (cc_chain.c): it parks itself with its own
             * context as soon as it sees this record begin; it blocks the stop signal (it is
             * inside our handler), so it is waited for, not asked nor taken for unstoppable. */
            if (cc__turn_waiting(g_tids[i])) continue;
            if (!stop || cc__thread_blocks(i, cc__g.stop_signal) ||
                syscall(SYS_tgkill, (long)pid, (long)g_tids[i], (long)cc__g.stop_signal) != 0) {
                g_not_stopped[i] = 1;
            }
        }
        /* Wait until every thread asked has parked, or the deadline. A parked thread stays
         * parked, so each check resumes where the last one found a thread still running. */
        uint32_t settled = first;
        for (;;) {
            while (settled < g_stop.tid_count && (g_not_stopped[settled] || cc__stopped_slot(g_tids[settled]) >= 0)) settled++;
            if (settled == g_stop.tid_count || cc__clock_ns(CLOCK_MONOTONIC) >= deadline) break;
            struct timespec ts = { 0, 50000 };
            cc__sys_nanosleep(&ts);
        }
        if (cc__clock_ns(CLOCK_MONOTONIC) >= deadline) break;
    }
    /* The threads beyond what is recorded: stopped too, not waited for. */
    if (g_stop.more_threads && stop) cc__scan_tasks(self, pid, cc__g.stop_signal);
}

/* async-signal-safe: after cc__stop_other_threads and cc__images_collect (the helper unwinds
 * with the crash-time image table), the threads that did not park (they block the stop
 * signal, or did not stop in time) go to the thread helper, which stops them with ptrace and
 * reads them (cc_helper.c) before the record is written. */
void cc__stop_unparked_threads(void) {
    static pid_t unparked[CC__MAX_THREADS];
    uint32_t count = 0;
    for (uint32_t i = 0; i < g_stop.tid_count; i++) {
        if (cc__stopped_slot(g_tids[i]) < 0) unparked[count++] = g_tids[i];
    }
    g_stop.helper_result = 0;
    if (count == 0 || (cc__g.flags & CC_FLAG_NO_THREAD_HELPER)) {
        cc__helper_stop_threads(unparked, 0, 0, 0);
        return;
    }
    int64_t budget_ms = cc__g.watchdog_seconds * 1000LL / 2;
    if (budget_ms > 5000) budget_ms = 5000;
    g_stop.helper_result = cc__helper_stop_threads(unparked, count, cc__clock_ns(CLOCK_MONOTONIC) + budget_ms * 1000000LL, 0);
}

/* Not for a signal handler: a live process's snapshot (cc_snapshot.c). Lists every other thread
 * and has the thread helper stop, read and let go of them all (no stop signal is sent: a
 * handler running on a thread would end the system call it was in with EINTR). Returns the
 * helper's result (0, or why it did not finish); cc__write_other_threads then writes them. */
int cc__read_threads_live(pid_t self, int64_t deadline_ns) {
    g_stop.tid_count = 0;
    g_stop.more_threads = 0;
    cc__scan_tasks(self, cc__sys_getpid(), 0);
    g_stop.helper_result = 0;
    if (cc__g.flags & CC_FLAG_NO_THREAD_HELPER) {
        for (uint32_t i = 0; i < g_stop.tid_count; i++) g_not_stopped[i] = 1;
        cc__helper_stop_threads(g_tids, 0, 0, 1);
        return 0;
    }
    g_stop.helper_result = cc__helper_stop_threads(g_tids, g_stop.tid_count, deadline_ns, 1);
    return g_stop.helper_result;
}

/* async-signal-safe (cc_internal.h) */
int cc__other_threads_to_write(int listed) { return listed && g_stop.tid_count > 0; }

/* async-signal-safe: one CC_SEC_THREAD per other thread found by cc__stop_other_threads:
 * parked threads unwound here from the context they published (with their registers), the
 * others as the thread helper read them, or listed without frames. Nothing when not `listed`
 * (recordOtherThreads off: the threads were stopped all the same). */
void cc__write_other_threads(cc__writer_t *w, pid_t crashed_tid, int listed) {
    (void)crashed_tid;
    static cc__cfi_frame_t frame;
    static cc__walk_t walk;
    static uint64_t frames[CC__OTHER_FRAMES];
    static uint64_t fps[CC__OTHER_FRAMES];
    if (!listed) return;
    for (uint32_t i = 0; i < g_stop.tid_count; i++) {
        /* A context the thread published itself comes first: it is where the thread was when
         * it was stopped or crashed. A thread that parked only after it was handed to the
         * helper (it entered our handler just as the threads were being stopped) was read by
         * the helper inside that handler, which is not where it crashed. */
        int slot = cc__stopped_slot(g_tids[i]);
        int helped = cc__helper_index(g_tids[i]);
        if (slot < 0 && helped >= 0 && cc__helper_write_thread(w, (uint32_t)helped)) continue;
        cc_sec_thread_t head = { .tid = g_tids[i], .flags = CC_THREAD_NO_STACK };
        cc__thread_name(g_tids[i], head.name);
        if (slot >= 0 && cc__g.stopped[slot].context) {
            cc__write_registers(w, cc__g.stopped[slot].context, g_tids[i]);
            int truncated = 0;
            uint32_t omitted = 0;
            head.frame_count = cc__unwind_context(cc__g.stopped[slot].context, &frame, &cc__cfi_recording, &walk, frames, fps,
                                                  CC__OTHER_FRAMES, &omitted, &truncated);
            head.omitted_frames = omitted;
            head.flags = CC_THREAD_FROM_CONTEXT | CC_THREAD_STOPPED | (truncated ? CC_THREAD_TRUNCATED : 0) |
                         (cc__g.stopped[slot].crashed ? CC_THREAD_ALSO_CRASHED : 0);
        } else if (g_not_stopped[i]) {
            head.flags |= CC_THREAD_NOT_STOPPED;
        }
        cc__section_begin(w, CC_SEC_THREAD);
        cc__section_put(w, &head, sizeof head);
        cc__section_put(w, frames, (head.flags & CC_THREAD_NO_STACK) ? 0 : (size_t)head.frame_count * sizeof(uint64_t));
        cc__section_end(w);
        if (!(head.flags & CC_THREAD_NO_STACK)) {
            cc__write_async_chains(w, g_tids[i], fps, head.frame_count,
                                   cc__context_async_register(cc__g.stopped[slot].context), CC__ASYNC_LINKS_OTHER);
        }
    }
    cc__helper_write_note(w);
    if (g_stop.helper_result) {
        char note[160];
        size_t n = cc__strlcpy(note, "the thread helper did not finish (", sizeof note);
        n += cc__strlcpy(note + n, cc__errno_name(g_stop.helper_result), sizeof note - n);
        n += cc__strlcpy(note + n, "): threads it had not read have no frames", sizeof note - n);
        cc__write_string(w, CC_STR_NOTE, note, n);
    }
    if (g_stop.more_threads) {
        const char *note = "more threads than CrashCapture records (1024): the rest were stopped but left out";
        cc__write_string(w, CC_STR_NOTE, note, cc__strnlen(note, 128));
    }
}
