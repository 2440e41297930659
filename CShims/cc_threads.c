/* cc_threads.c — the other threads of a crashing process: their names, and their stacks when they answer a signal. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * How other threads' stacks are taken. A thread's registers are only reachable from inside
 * that thread (short of ptrace), so the thread writing the record asks each other thread in
 * turn: it stores the target tid, sets dump_state REQUESTED and sends `dump_signal` with
 * tgkill. The target's handler (cc__dump_handler, on its alternate stack if it has one) claims
 * the request with a compare-and-swap REQUESTED -> WORKING, unwinds from its own signal
 * context into cc__g.dump_frames and sets DONE. The writer waits a bounded time (100 ms per
 * thread, 1 s in all: a busy machine may not schedule the target at once); a thread that has the signal blocked (read from SigBlk in its
 * /proc status, so it costs no wait), or does not answer in time, is recorded with
 * CC_THREAD_NO_STACK. If the writer gives up while a target is WORKING it
 * stops asking altogether rather than share the buffer with a late answer.
 *
 * The signal is SIGRTMAX-3 unless configured; it is only used if nobody had a handler for it
 * at install time, and only if our handler is still the one installed at crash time.
 */

static unw_context_t g_dump_context;
static unw_cursor_t g_dump_cursor;

/* async-signal-safe: answers a stack request addressed to this thread; ignores anything else. */
static void cc__dump_handler(int signo, siginfo_t *info, void *context) {
    (void)signo; (void)info;
    int saved_errno = errno;
    if (atomic_load(&cc__g.dump_target) == cc__gettid()) {
        int expected = CC__DUMP_REQUESTED;
        if (atomic_compare_exchange_strong(&cc__g.dump_state, &expected, CC__DUMP_WORKING)) {
            int truncated = 0;
            cc__g.dump_count = cc__unwind_context((const ucontext_t *)context, &g_dump_context,
                                                  &g_dump_cursor, cc__g.dump_frames,
                                                  CC__OTHER_FRAMES, &truncated);
            atomic_store(&cc__g.dump_state, CC__DUMP_DONE);
        }
    }
    errno = saved_errno;
}

/* Install time: claims the signal only if nobody handles it. Returns 0 on success. */
int cc__threads_install(int signo) {
    struct sigaction current;
    if (sigaction(signo, 0, &current) != 0) return -1;
    if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) return -1;
    struct sigaction action = { 0 };
    action.sa_sigaction = cc__dump_handler;
    sigemptyset(&action.sa_mask);
    /* SA_RESTART: an interrupted read() in the target resumes if the process lives on.
     * SA_ONSTACK: the target may be near the end of its own stack. */
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    if (sigaction(signo, &action, &cc__g.dump_previous) != 0) return -1;
    cc__g.dump_signal = signo;
    return 0;
}

void cc__threads_uninstall(void) {
    if (cc__g.dump_signal == 0) return;
    sigaction(cc__g.dump_signal, &cc__g.dump_previous, 0);
    cc__g.dump_signal = 0;
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
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t got;
    do { got = read(fd, out, cap - 1); } while (got < 0 && errno == EINTR);
    close(fd);
    out[got > 0 ? got : 0] = 0;
    return got;
}

/* async-signal-safe: the thread's name from /proc/self/task/<tid>/comm. */
void cc__thread_name(pid_t tid, char out[16]) {
    for (int i = 0; i < 16; i++) out[i] = 0;
    ssize_t got = cc__read_task_file(tid, "comm", out, 16);
    for (ssize_t i = 0; i < got; i++) if (out[i] == '\n') out[i] = 0;
}

/* async-signal-safe: whether `tid` blocks `signo`, from the SigBlk line of its
 * /proc/self/task/<tid>/status (a thread that blocks it would only make us wait). */
static int cc__thread_blocks(pid_t tid, int signo) {
    static char status[4096];
    ssize_t got = cc__read_task_file(tid, "status", status, sizeof status);
    if (got <= 0) return 0;
    for (ssize_t i = 0; i + 8 < got; i++) {
        if ((i == 0 || status[i - 1] == '\n') && status[i] == 'S' && status[i + 1] == 'i' && status[i + 2] == 'g' &&
            status[i + 3] == 'B' && status[i + 4] == 'l' && status[i + 5] == 'k' && status[i + 6] == ':') {
            const char *p = status + i + 7;
            while (*p == ' ' || *p == '\t') p++;
            uint64_t mask = 0;
            for (; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
                mask = (mask << 4) | (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
            return signo >= 1 && signo <= 64 && ((mask >> (signo - 1)) & 1);
        }
    }
    return 0;
}

/* async-signal-safe: sleeps about `us` microseconds. */
static void cc__pause_us(long us) {
    struct timespec ts = { 0, us * 1000 };
    nanosleep(&ts, 0);
}

/* async-signal-safe: asks one thread for its stack. Returns 1 with frames in cc__g.dump_*,
 * 0 if it did not answer, -1 if a late answer may still be running (stop asking). */
static int cc__request_stack(pid_t tid) {
    cc__g.dump_count = 0;
    atomic_store(&cc__g.dump_target, tid);
    atomic_store(&cc__g.dump_state, CC__DUMP_REQUESTED);
    if (syscall(SYS_tgkill, (long)getpid(), (long)tid, (long)cc__g.dump_signal) != 0) {
        atomic_store(&cc__g.dump_state, CC__DUMP_IDLE);
        return 0;
    }
    for (int waited = 0; waited < 100000; waited += 50) {
        if (atomic_load(&cc__g.dump_state) == CC__DUMP_DONE) return 1;
        cc__pause_us(50);
    }
    int expected = CC__DUMP_REQUESTED;
    if (atomic_compare_exchange_strong(&cc__g.dump_state, &expected, CC__DUMP_IDLE)) return 0;
    /* WORKING or DONE: give a started answer a little longer. */
    for (int waited = 0; waited < 25000; waited += 50) {
        if (atomic_load(&cc__g.dump_state) == CC__DUMP_DONE) return 1;
        cc__pause_us(50);
    }
    return -1;
}

/* async-signal-safe: one CC_SEC_THREAD per other thread (at most CC__MAX_OTHER_THREADS). */
void cc__write_other_threads(cc__writer_t *w, pid_t crashed_tid) {
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    /* Collect tids first: the directory is read in one pass before any thread is disturbed. */
    static pid_t tids[CC__MAX_OTHER_THREADS];
    static char dents[4096];
    uint32_t count = 0;
    int more = 0;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, dents, sizeof dents);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (long off = 0; off < n;) {
            struct { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; } *d =
                (void *)(dents + off);
            if (d->reclen == 0) break;
            off += d->reclen;
            if (d->name[0] < '0' || d->name[0] > '9') continue;
            pid_t tid = 0;
            for (const char *c = d->name; *c >= '0' && *c <= '9'; c++) tid = tid * 10 + (*c - '0');
            if (tid == crashed_tid) continue;
            if (count < CC__MAX_OTHER_THREADS) tids[count++] = tid; else more = 1;
        }
    }
    close(fd);

    int ask = cc__g.dump_signal != 0 && !(cc__g.flags & CC_FLAG_NO_THREAD_STACKS);
    if (ask) {
        struct sigaction current;
        ask = sigaction(cc__g.dump_signal, 0, &current) == 0 && (current.sa_flags & SA_SIGINFO) &&
              current.sa_sigaction == cc__dump_handler;
    }
    int64_t deadline = cc__clock_ns(CLOCK_MONOTONIC) + 1000 * 1000000LL;
    for (uint32_t i = 0; i < count; i++) {
        cc_sec_thread_t head = { .tid = tids[i], .flags = CC_THREAD_NO_STACK };
        cc__thread_name(tids[i], head.name);
        int answered = 0;
        if (ask && cc__clock_ns(CLOCK_MONOTONIC) < deadline && !cc__thread_blocks(tids[i], cc__g.dump_signal)) {
            answered = cc__request_stack(tids[i]);
            if (answered < 0) ask = 0;
        }
        cc__section_begin(w, CC_SEC_THREAD);
        if (answered == 1) {
            head.flags = CC_THREAD_FROM_CONTEXT;
            head.frame_count = cc__g.dump_count;
            cc__section_put(w, &head, sizeof head);
            cc__section_put(w, cc__g.dump_frames, (size_t)head.frame_count * sizeof(uint64_t));
        } else {
            cc__section_put(w, &head, sizeof head);
        }
        cc__section_end(w);
    }
    atomic_store(&cc__g.dump_target, 0);
    if (more) {
        const char *note = "more threads than recorded; the rest were left out";
        cc__write_string(w, CC_STR_NOTE, note, cc__strnlen(note, 128));
    }
}
