/* scenarios.c — the C side of crash-harness: crashes that Swift cannot express directly. */
#define _GNU_SOURCE 1
#undef NDEBUG /* cch_assert must assert in release builds too */
#include "ccrash_scenarios.h"

#include <assert.h>
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/inotify.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
volatile intptr_t cch_sink;

__attribute__((noinline)) void cch_null_dereference(void) {
    volatile int *p = (volatile int *)(uintptr_t)cch_sink; /* cch_sink is 0 */
    *p = 42;
    cch_sink++;
}

/* heap-object: the crashing function holds a heap object (its address in its first argument's
 * register, and on its caller's stack) whose bytes say what it is: the record's windows of the
 * memory the crash was holding must have it, and a debugger on the minidump must print it. */
__attribute__((noinline)) void cch_null_dereference_holding(char *object) {
    volatile int *p = (volatile int *)(uintptr_t)cch_sink; /* cch_sink is 0 */
    __asm__ volatile("" : : "r"(object) : "memory");
    *p = object[0];
    cch_sink++;
}

char *cch_heap_object(void) {
    char *object = malloc(256);
    if (!object) abort();
    static const char text[] = "CRASHCAPTURE-HEAP-OBJECT: the order the crash was handling";
    for (size_t i = 0; i < 256; i++) object[i] = i < sizeof text ? text[i] : (char)('a' + i % 26);
    return object;
}

__attribute__((noinline)) void cch_write_read_only(void) {
    volatile int *page = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *page = 1; /* SEGV_ACCERR */
    cch_sink++;
}

__attribute__((noinline)) void cch_wild_pointer(void) {
    volatile int *p = (volatile int *)(uintptr_t)(0x3ead0000beefULL + (uintptr_t)cch_sink);
    *p = 7;
    cch_sink++;
}

/* Recurses until the stack runs out: with 512 bytes a frame, an 8 MiB stack is gone after some
 * 16,000 calls, long before depth could reach INT_MAX. That bound is never met; it gives the
 * recursion an end the compiler can see (-Winfinite-recursion). */
__attribute__((noinline)) static int cch_recurse(int depth) {
    volatile char frame[512];
    frame[depth % 512] = (char)depth;
    if (depth == INT_MAX) return 0;
    int below = cch_recurse(depth + 1);
    return below + frame[(depth + 1) % 512];
}

__attribute__((noinline)) void cch_stack_overflow(void) {
    cch_sink += cch_recurse(0);
}

__attribute__((noinline)) void cch_abort(void) {
    abort();
}

/* A fault inside a signal handler: the unwinder must step out of the handler through the C
 * library's signal trampoline (its CFI marks it a signal frame) to where SIGUSR2 arrived. */
__attribute__((noinline)) static void cch_usr2_handler(int signo) {
    (void)signo;
    cch_null_dereference();
    cch_sink += signo;   /* after the call: no sibling call, so the handler keeps its frame in a release build */
}

__attribute__((noinline)) void cch_fault_in_signal_handler(void) {
    struct sigaction action = { 0 };
    action.sa_handler = cch_usr2_handler;
    sigaction(SIGUSR2, &action, 0);
    raise(SIGUSR2);
    cch_sink++;
}

__attribute__((noinline)) void cch_assert(void) {
    assert(cch_sink == 12345 && "crash-harness assertion");
    cch_sink++;
}

__attribute__((noinline)) void cch_sigbus(const char *directory) {
    char path[4096];
    snprintf(path, sizeof path, "%s/sigbus-XXXXXX", directory);
    int fd = mkstemp(path);
    if (fd < 0) { perror("mkstemp"); exit(70); }
    unlink(path);
    if (ftruncate(fd, 8192) != 0) { perror("ftruncate"); exit(70); }
    volatile char *map = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) { perror("mmap"); exit(70); }
    if (ftruncate(fd, 0) != 0) { perror("ftruncate"); exit(70); }
    map[4096] = 1; /* BUS_ADRERR: the page is past the end of the file now */
    cch_sink++;
}

__attribute__((noinline)) void cch_divide_by_zero(void) {
    volatile int numerator = 1, denominator = (int)cch_sink;
    cch_sink = numerator / denominator;
}

__attribute__((noinline)) void cch_illegal_instruction(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("ud2");
#elif defined(__aarch64__)
    __asm__ volatile(".inst 0x00000000"); /* udf #0 */
#endif
    cch_sink++;
}

__attribute__((noinline)) void cch_builtin_trap(void) {
    if (cch_sink == 0) __builtin_trap();
    cch_sink++;
}

__attribute__((noinline)) void cch_heap_corruption(void) {
    /* 4096 bytes is past the tcache, so free() takes the arena lock before it checks the
     * next chunk. Overwriting that chunk's size field with 1 ("size 0, previous in use")
     * makes glibc report "free(): invalid next size (normal)" and abort with the lock held. */
    /* volatile: an optimiser may otherwise pair malloc with free and drop both. */
    char *volatile a = malloc(4096);
    char *volatile b = malloc(4096);
    volatile size_t *next_size = (volatile size_t *)(a + malloc_usable_size(a));
    *next_size = 0x1;
    free(a);
    cch_sink += (intptr_t)b[0];
}

__attribute__((noinline)) void cch_null_dereference_with_errno(int value) {
    errno = value;
    volatile int *p = (volatile int *)(uintptr_t)cch_sink;
    *p = 42;
    cch_sink++;
}

static const char *g_before_marker;
static void cch_before_handler(int signo) {
    /* Reports the errno it was handed: CrashCapture must pass on the one of the crash. */
    int seen = errno;
    char line[64] = "crash-harness: errno in user handler ";
    size_t n = strlen(line);
    char digits[16];
    int d = 0;
    do { digits[d++] = (char)('0' + seen % 10); seen /= 10; } while (seen && d < 15);
    while (d) line[n++] = digits[--d];
    line[n++] = '\n';
    if (g_before_marker) write(2, g_before_marker, strlen(g_before_marker));
    write(2, line, n);
    /* Like real programs: reset to the default action before returning, so the fault that
     * comes back when the instruction re-executes ends the process (without this the handler
     * would run forever, with or without CrashCapture). */
    signal(signo, SIG_DFL);
}

void cch_install_handler_before(const char *marker) {
    g_before_marker = strdup(marker);
    struct sigaction action = { 0 };
    action.sa_handler = cch_before_handler;
    sigemptyset(&action.sa_mask);
    int signals[] = { SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTRAP };
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) sigaction(signals[i], &action, 0);
}

static const char *g_after_marker;
static struct sigaction g_after_previous;
static void cch_after_handler(int signo, siginfo_t *info, void *context) {
    if (g_after_marker) write(2, g_after_marker, strlen(g_after_marker));
    if (g_after_previous.sa_flags & SA_SIGINFO) g_after_previous.sa_sigaction(signo, info, context);
    else if (g_after_previous.sa_handler != SIG_DFL && g_after_previous.sa_handler != SIG_IGN) g_after_previous.sa_handler(signo);
    signal(signo, SIG_DFL);
}

void cch_install_handler_after(const char *marker) {
    g_after_marker = strdup(marker);
    struct sigaction action = { 0 };
    action.sa_sigaction = cch_after_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &g_after_previous);
}

static _Atomic int g_malloc_threads_running;
static void *cch_malloc_forever(void *arg) {
    (void)arg;
    atomic_fetch_add(&g_malloc_threads_running, 1);
    for (unsigned i = 0;; i++) {
        void *volatile p = malloc(16 + (i % 4096));
        free(p);
    }
    return 0;
}

__attribute__((noinline)) void cch_crash_while_malloc_busy(int count) {
    pthread_t thread;
    for (int i = 0; i < count; i++) pthread_create(&thread, 0, cch_malloc_forever, 0);
    while (atomic_load(&g_malloc_threads_running) < count) usleep(100);
    usleep(20000);
    cch_null_dereference();
}

__attribute__((noinline)) void cch_crash_in_forked_child(void) {
    pid_t child = fork();
    if (child == 0) {
        cch_null_dereference();
        _exit(70);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {}
    _exit(WIFSIGNALED(status) ? 100 + WTERMSIG(status) : 71);
}

static pthread_barrier_t g_barrier;
__attribute__((noinline)) static void *cch_crash_at_barrier(void *arg) {
    (void)arg;
    pthread_barrier_wait(&g_barrier);
    cch_null_dereference();
    return 0;
}

void cch_concurrent_crashes(int count) {
    if (count < 1) count = 1;
    if (count > 64) count = 64;
    pthread_barrier_init(&g_barrier, 0, (unsigned)count);
    pthread_t threads[64];
    for (int i = 0; i < count; i++) pthread_create(&threads[i], 0, cch_crash_at_barrier, 0);
    for (int i = 0; i < count; i++) pthread_join(threads[i], 0);
}

void cch_signal_from_other_process(int signo) {
    char sig[16], pid[16];
    snprintf(sig, sizeof sig, "-%d", signo);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    char *argv[] = { "kill", sig, pid, 0 };
    pid_t child;
    if (posix_spawnp(&child, "kill", 0, 0, argv, environ) != 0) { perror("posix_spawnp kill"); exit(70); }
    int status;
    while (waitpid(child, &status, 0) < 0) {}
    for (int i = 0; i < 100; i++) usleep(100000); /* the signal ends us long before this */
    exit(71);
}

static _Atomic int g_main_settled;
void cch_mark_main_settled(void) { atomic_store(&g_main_settled, 1); }
int cch_gettid(void) { return (int)gettid(); }
void cch_wait_main_settled(void) {
    while (!atomic_load(&g_main_settled)) usleep(100);
}

static void *cch_exit_thread(void *arg) {
    exit((int)(intptr_t)arg);
}

void cch_exit_from_thread(int status) {
    pthread_t thread;
    pthread_create(&thread, 0, cch_exit_thread, (void *)(intptr_t)status);
    for (;;) pause();
}

/* ---- Scenarios for the chain-first core: previous handlers, survivable signals, limits. ---- */

/* async-signal-safe: writes a NUL-terminated string to fd. */
static void cch_put(int fd, const char *text) {
    size_t n = strlen(text);
    while (n > 0) {
        ssize_t w = write(fd, text, n);
        if (w <= 0) { if (w < 0 && errno == EINTR) continue; return; }
        text += w;
        n -= (size_t)w;
    }
}

/* async-signal-safe: "<prefix><decimal>\n" to fd. */
static void cch_put_number(int fd, const char *prefix, long value) {
    char line[96];
    size_t n = 0;
    for (; prefix[n] && n < 60; n++) line[n] = prefix[n];
    if (value < 0) { line[n++] = '-'; value = -value; }
    char digits[24];
    int d = 0;
    do { digits[d++] = (char)('0' + value % 10); value /= 10; } while (value && d < 20);
    while (d) line[n++] = digits[--d];
    line[n++] = '\n';
    line[n] = 0;
    cch_put(fd, line);
}

typedef void (*cch_function_t)(void);
volatile cch_function_t cch_null_function; /* stays NULL */

__attribute__((noinline)) void cch_call_null_function_pointer(void) {
    cch_function_t function = cch_null_function;
    function(); /* pc becomes 0; the return address still points in here */
    cch_sink++;  /* not a tail call */
}

/* previous-handler-flags: a handler that reports how it was entered. */
static char *g_probe_altstack;
static size_t g_probe_altstack_size;

static const char *cch_yes_no(int value) { return value ? "yes\n" : "no\n"; }

static void cch_probe_line(const char *what, int value) {
    char line[128] = "previous-handler-flags: ";
    strncat(line, what, 60);
    strncat(line, ": ", 3);
    strncat(line, cch_yes_no(value), 5);
    cch_put(1, line);
}

static void cch_flags_probe_handler(int signo, siginfo_t *info, void *context) {
    (void)context;
    int saved = errno;
    volatile char here = 0;
    stack_t ss;
    int on_alt = sigaltstack(0, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
    int in_alt_range = (char *)&here >= g_probe_altstack && (char *)&here < g_probe_altstack + g_probe_altstack_size;
    struct sigaction current;
    /* SA_RESETHAND resets the handler only: the kernel leaves sa_flags (SA_SIGINFO) as they were. */
    int is_default = sigaction(signo, 0, &current) == 0 && current.sa_handler == SIG_DFL;
    sigset_t blocked;
    sigemptyset(&blocked);
    sigprocmask(SIG_BLOCK, 0, &blocked);
    cch_probe_line("signal is SIGSEGV", signo == SIGSEGV);
    cch_probe_line("si_code SEGV_MAPERR at address 0", info && info->si_code == SEGV_MAPERR && info->si_addr == 0);
    cch_put_number(1, "previous-handler-flags: errno ", saved);
    cch_probe_line("sigaltstack says SS_ONSTACK", on_alt);
    cch_probe_line("running inside the alternate stack", in_alt_range);
    cch_probe_line("disposition already SIG_DFL (SA_RESETHAND)", is_default);
    cch_probe_line("SIGUSR1 blocked", sigismember(&blocked, SIGUSR1) == 1);
    cch_probe_line("SIGPROF blocked", sigismember(&blocked, SIGPROF) == 1);
    cch_probe_line("SIGCHLD blocked", sigismember(&blocked, SIGCHLD) == 1);
    cch_probe_line("SIGSEGV blocked", sigismember(&blocked, SIGSEGV) == 1);
    errno = saved;
    /* Returns: the fault comes back and, SA_RESETHAND having reset us, ends the process. */
}

void cch_install_flags_probe_handler(void) {
    g_probe_altstack_size = 256 * 1024;
    g_probe_altstack = mmap(0, g_probe_altstack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g_probe_altstack == MAP_FAILED) { perror("mmap"); exit(70); }
    stack_t ss = { .ss_sp = g_probe_altstack, .ss_size = g_probe_altstack_size, .ss_flags = 0 };
    if (sigaltstack(&ss, 0) != 0) { perror("sigaltstack"); exit(70); }
    struct sigaction action = { 0 };
    action.sa_sigaction = cch_flags_probe_handler;
    sigfillset(&action.sa_mask);
    action.sa_flags = SA_SIGINFO | SA_RESETHAND; /* and no SA_ONSTACK */
    if (sigaction(SIGSEGV, &action, 0) != 0) { perror("sigaction"); exit(70); }
}

/* recovering-handler: a SIGSEGV handler that makes the faulting page writable and returns. */
static void cch_recovering_handler(int signo, siginfo_t *info, void *context) {
    (void)signo; (void)context;
    int saved = errno;
    uintptr_t page = (uintptr_t)info->si_addr & ~(uintptr_t)4095;
    if (mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) != 0) {
        cch_put(2, "recovering handler: mprotect failed\n");
        signal(SIGSEGV, SIG_DFL);
    }
    cch_put(1, "recovering handler repaired the page\n");
    errno = saved;
}

/* one-thread-in-previous-handler: a SIGSEGV handler that says how many threads are inside it at
 * once, waits 50 ms so that the other crashing threads would pile up in it, resets the signal
 * (as real programs do) and returns. */
static _Atomic int g_inside_handler;
static void cch_counting_handler(int signo, siginfo_t *info, void *context) {
    (void)info; (void)context;
    int saved = errno;
    int inside = atomic_fetch_add(&g_inside_handler, 1) + 1;
    cch_put_number(1, "counting handler: threads inside at once ", inside);
    struct timespec wait = { 0, 50 * 1000000L };
    while (nanosleep(&wait, &wait) != 0 && errno == EINTR) {}
    atomic_fetch_sub(&g_inside_handler, 1);
    signal(signo, SIG_DFL);
    errno = saved;
}

/* concurrent-repairs: a SIGSEGV handler that makes the faulting page writable, silently (how
 * many threads enter it before the page is repaired varies from run to run). */
static void cch_silent_repairing_handler(int signo, siginfo_t *info, void *context) {
    (void)signo; (void)context;
    int saved = errno;
    uintptr_t page = (uintptr_t)info->si_addr & ~(uintptr_t)4095;
    if (mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) != 0) signal(SIGSEGV, SIG_DFL);
    errno = saved;
}

static volatile int *g_shared_page;
static pthread_barrier_t g_repair_barrier;
__attribute__((noinline)) static void *cch_write_shared_page_at_barrier(void *arg) {
    pthread_barrier_wait(&g_repair_barrier);
    g_shared_page[(intptr_t)arg] = 42; /* SEGV_ACCERR on every thread until the page is repaired */
    return 0;
}

int cch_concurrent_repaired_writes(int count) {
    if (count < 1) count = 1;
    if (count > 64) count = 64;
    g_shared_page = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g_shared_page == MAP_FAILED) { perror("mmap"); exit(70); }
    pthread_barrier_init(&g_repair_barrier, 0, (unsigned)count);
    pthread_t threads[64];
    for (int i = 0; i < count; i++) pthread_create(&threads[i], 0, cch_write_shared_page_at_barrier, (void *)(intptr_t)i);
    for (int i = 0; i < count; i++) pthread_join(threads[i], 0);
    int written = 0;
    for (int i = 0; i < count; i++) written += g_shared_page[i] == 42;
    return written;
}

/* previous-handler-longjmp: a memory probe as libraries write one, a SIGSEGV handler that leaves
 * with siglongjmp while the thread is probing (and otherwise resets the signal and returns). */
static sigjmp_buf g_probe_jump;
static _Thread_local volatile int g_probing;
static void cch_probing_handler(int signo, siginfo_t *info, void *context) {
    (void)info; (void)context;
    if (g_probing) siglongjmp(g_probe_jump, 1);
    signal(signo, SIG_DFL);
}

static _Atomic int g_probe_done;
static void *cch_probe_then_sleep(void *arg) {
    (void)arg;
    volatile int readable = 0;
    g_probing = 1;
    if (sigsetjmp(g_probe_jump, 1) == 0) {
        readable = *(volatile int *)(uintptr_t)0x10;
        readable = 1;
    }
    g_probing = 0;
    cch_put(1, readable ? "probe: readable\n" : "probe: unreadable\n");
    atomic_store(&g_probe_done, 1);
    for (;;) pause(); /* alive, and no longer inside any handler */
    return 0;
}

void cch_probe_on_thread_then_crash(void) {
    pthread_t thread;
    pthread_create(&thread, 0, cch_probe_then_sleep, 0);
    while (!atomic_load(&g_probe_done)) usleep(1000);
    usleep(10000);
    cch_null_dereference();
}

/* A plain SA_SIGINFO handler (empty mask, no other flags), as a program would install one. */
static void cch_install_siginfo_handler(int signo, void (*handler)(int, siginfo_t *, void *)) {
    struct sigaction action = { 0 };
    action.sa_sigaction = handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_SIGINFO;
    if (sigaction(signo, &action, 0) != 0) { perror("sigaction"); exit(70); }
}

void cch_install_recovering_handler(void) { cch_install_siginfo_handler(SIGSEGV, cch_recovering_handler); }
void cch_install_counting_handler(void) { cch_install_siginfo_handler(SIGSEGV, cch_counting_handler); }
void cch_install_silent_repairing_handler(void) { cch_install_siginfo_handler(SIGSEGV, cch_silent_repairing_handler); }
void cch_install_probing_handler(void) { cch_install_siginfo_handler(SIGSEGV, cch_probing_handler); }

__attribute__((noinline)) int cch_write_protected_page(void) {
    volatile int *page = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) { perror("mmap"); exit(70); }
    page[1] = 42; /* SEGV_ACCERR until the handler repairs it */
    int value = page[1];
    cch_sink++;
    return value;
}

/* survives-then-crashes: a SIGBUS handler that survives an "action optional" machine check. */
static void cch_mce_handler(int signo, siginfo_t *info, void *context) {
    (void)context;
    int saved = errno;
    if (info && info->si_code == BUS_MCEERR_AO) {
        cch_put(1, "survived SIGBUS BUS_MCEERR_AO\n");
    } else {
        cch_put(1, "SIGBUS that cannot be survived\n");
        signal(signo, SIG_DFL);
    }
    errno = saved;
}

void cch_install_mce_handler(void) { cch_install_siginfo_handler(SIGBUS, cch_mce_handler); }

void cch_queue_sigbus_mce_ao(void) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_signo = SIGBUS;
    info.si_code = BUS_MCEERR_AO;
    info.si_addr = (void *)(uintptr_t)0x7e57000;
    /* Queued to this very thread: it is delivered before the syscall returns. A kernel si_code
     * (> 0) is only accepted for the sender's own process. */
    if (syscall(SYS_rt_tgsigqueueinfo, (long)getpid(), (long)syscall(SYS_gettid), (long)SIGBUS, &info) != 0) {
        perror("rt_tgsigqueueinfo");
        exit(70);
    }
}

/* vfork-child-crash */
__attribute__((noinline)) void cch_vfork_child_crash(void) {
    pid_t child = vfork();
    if (child == 0) {
        cch_null_dereference();
        _exit(70);
    }
    if (child < 0) { perror("vfork"); exit(70); }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status)) cch_put_number(1, "vfork child ended by signal ", WTERMSIG(status));
    else cch_put_number(1, "vfork child exited with ", WEXITSTATUS(status));
    cch_null_dereference();
    cch_sink++;
}

/* fd-limit: no file descriptor can be opened any more. */
void cch_exhaust_file_descriptors(int hard) {
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    int highest = 2;
    int scan = limit.rlim_cur < 65536 ? (int)limit.rlim_cur : 65536;
    for (int fd = 0; fd < scan; fd++) if (fcntl(fd, F_GETFD) >= 0) highest = fd;
    rlim_t soft = (rlim_t)highest + 1 + 8;
    if (limit.rlim_cur > soft || (hard && limit.rlim_max > soft)) {
        limit.rlim_cur = soft;
        if (hard) limit.rlim_max = soft;   /* fd-limit-hard: the handler cannot raise it */
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) { perror("setrlimit"); exit(70); }
    }
    int opened = 0;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) break;
        if (++opened > 100000) break;
    }
    if (errno != EMFILE) { perror("open /dev/null"); exit(70); }
    cch_put(1, "file descriptors exhausted (EMFILE)\n");
}

/* fsize-limit */
void cch_limit_file_size(long soft, long hard) {
    struct rlimit limit;
    getrlimit(RLIMIT_FSIZE, &limit);
    limit.rlim_cur = (rlim_t)soft;
    if (hard >= 0) limit.rlim_max = (rlim_t)hard;
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) { perror("setrlimit"); exit(70); }
}

/* async-signals-during-record */
static volatile sig_atomic_t g_after_crash_line;
static volatile long g_busy;
static _Atomic int g_async_seen[3];

static int g_record_dir_fd = -1;

/* async-signal-safe: whether the record directory holds a crash record (final or .partial)
 * yet, read with getdents64 into a stack buffer. Before the record exists, a handler that runs
 * is still before the crash (the thread can be interrupted between the "crashing" line and the
 * faulting instruction); once it exists, nothing of the program may run any more. */
static int cch_record_exists(void) {
    char buf[2048];
    if (g_record_dir_fd < 0 || lseek(g_record_dir_fd, 0, SEEK_SET) != 0) return 0;
    for (;;) {
        long n = syscall(SYS_getdents64, g_record_dir_fd, buf, sizeof buf);
        if (n <= 0) return 0;
        for (long offset = 0; offset < n;) {
            unsigned short reclen;
            memcpy(&reclen, buf + offset + 16, sizeof reclen);
            const char *name = buf + offset + 19;
            if (strncmp(name, "crash-", 6) == 0) return 1;
            if (reclen == 0) return 0;
            offset += reclen;
        }
    }
}

static void cch_async_marker(int signo) {
    int saved = errno;
    int index = signo == SIGPROF ? 0 : signo == SIGUSR1 ? 1 : 2;
    if (g_after_crash_line && cch_record_exists()) {
        cch_put(1, signo == SIGPROF ? "late async signal: SIGPROF handler ran after the crash\n"
                 : signo == SIGUSR1 ? "late async signal: SIGUSR1 handler ran after the crash\n"
                                    : "late async signal: SIGCHLD handler ran after the crash\n");
    } else {
        atomic_fetch_add(&g_async_seen[index], 1);
    }
    errno = saved;
}

static void *cch_async_sender(void *arg) {
    (void)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPROF);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &set, 0);
    for (;;) {
        kill(getpid(), SIGUSR1);
        pid_t child = fork();
        if (child == 0) _exit(0);
        if (child > 0) while (waitpid(child, 0, 0) < 0 && errno == EINTR) {}
        struct timespec ts = { 0, 200000 };
        nanosleep(&ts, 0);
    }
    return 0;
}

static int64_t cch_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) void cch_async_signals_then_crash(const char *directory) {
    g_record_dir_fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (g_record_dir_fd < 0) { perror("open record directory"); exit(70); }
    struct sigaction action = { 0 };
    action.sa_handler = cch_async_marker;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &action, 0);
    sigaction(SIGUSR1, &action, 0);
    sigaction(SIGCHLD, &action, 0);
    /* Every other thread blocks the three signals, so they are delivered only to this thread:
     * without CrashCapture nothing can run them once this thread has faulted. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGPROF);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    pthread_t sender;
    if (pthread_create(&sender, 0, cch_async_sender, 0) != 0) { cch_put(2, "pthread_create failed\n"); exit(70); }
    pthread_sigmask(SIG_SETMASK, &old, 0);
    struct itimerval timer = { { 0, 100 }, { 0, 100 } };
    setitimer(ITIMER_PROF, &timer, 0);
    int64_t deadline = cch_now_ns() + 5000000000LL;
    while (atomic_load(&g_async_seen[0]) < 3 || atomic_load(&g_async_seen[1]) < 3 || atomic_load(&g_async_seen[2]) < 3) {
        if (cch_now_ns() > deadline) { cch_put(2, "async signals did not arrive\n"); exit(70); }
        g_busy++; /* not cch_sink: cch_null_dereference uses it as its (null) pointer */
    }
    cch_put(1, "SIGPROF, SIGUSR1 and SIGCHLD arriving; crashing\n");
    g_after_crash_line = 1;
    cch_null_dereference();
    g_busy++;
}

/* crash-while-dl-iterate-phdr */
static _Atomic int g_inside_phdr;
static int cch_phdr_forever(struct dl_phdr_info *info, size_t size, void *data) {
    (void)info; (void)size; (void)data;
    atomic_store(&g_inside_phdr, 1);
    for (;;) pause(); /* holding the loader's lock */
    return 0;
}

static void *cch_phdr_thread(void *arg) {
    (void)arg;
    dl_iterate_phdr(cch_phdr_forever, 0);
    return 0;
}

/* Starts `start` on a thread and returns once it has set `*ready` (and a little more, so that
 * it is inside whatever call comes next). */
static void cch_start_thread_and_wait(void *(*start)(void *), _Atomic int *ready) {
    pthread_t thread;
    if (pthread_create(&thread, 0, start, 0) != 0) { cch_put(2, "pthread_create failed\n"); exit(70); }
    while (!atomic_load(ready)) usleep(100);
    usleep(2000);
}

void cch_start_thread_inside_dl_iterate_phdr(void) { cch_start_thread_and_wait(cch_phdr_thread, &g_inside_phdr); }

/* crash-with-thread-blocking-signals */
static _Atomic int g_blocking_ready;
static void *cch_blocking_thread(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, 0);
    atomic_store(&g_blocking_ready, 1);
    for (;;) pause();
    return 0;
}

void cch_start_thread_blocking_all_signals(void) { cch_start_thread_and_wait(cch_blocking_thread, &g_blocking_ready); }

/* main-returns-after-worker-crash: one nanosleep, not resumed when it is interrupted, then
 * exit(0) at once, as a program whose main returns after its sleep. */
void cch_sleep_once_then_exit(long seconds) {
    struct timespec ts = { seconds, 0 }, left = { 0, 0 };
    if (nanosleep(&ts, &left) != 0) cch_put_number(2, "crash-harness: main's nanosleep failed with errno ", errno);
    exit(0);
}

/* more-threads-than-recorded: `count` threads (small stacks) all wait on one inotify watch of
 * the record directory and exit(0) as soon as a file is created in it, i.e. when the crash
 * record is created. CrashCapture stops every thread before it creates the file, so with every
 * thread stopped none of them sees it; a thread left running would turn the crash into exit 0.
 * Without CrashCapture the process dies of the crash at once. (Blocking, not polling: a
 * thousand polling threads would starve the crashing thread of CPU.) */
static int g_watch_fd = -1;

static void *cch_watching_thread(void *arg) {
    if (arg) {   /* as libdispatch workers do */
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, 0);
    }
    char events[4096] __attribute__((aligned(8)));
    for (;;) {
        ssize_t got = read(g_watch_fd, events, sizeof events);
        if (got > 0) exit(0);
        if (got < 0 && errno != EINTR) return 0;
    }
}

void cch_start_threads_that_exit_on_new_file(int count, const char *directory, int block_signals) {
    g_watch_fd = inotify_init1(IN_CLOEXEC);
    if (g_watch_fd < 0 || inotify_add_watch(g_watch_fd, directory, IN_CREATE | IN_MOVED_TO) < 0) {
        perror("inotify");
        exit(70);
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    for (int i = 0; i < count; i++) {
        pthread_t thread;
        if (pthread_create(&thread, &attr, cch_watching_thread, block_signals ? (void *)1 : 0) != 0) {
            cch_put(2, "pthread_create failed\n");
            exit(70);
        }
        pthread_detach(thread);
    }
    pthread_attr_destroy(&attr);
    usleep(20000); /* most of them are inside read() by now (the rest park wherever they are) */
}

/* A seccomp filter that makes the system call `nr` fail with EPERM in this process and every
 * process it starts (the filter is inherited across exec), as a sandboxed service's might. */
static void cch_refuse_system_call(long nr) {
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = { .len = sizeof filter / sizeof filter[0], .filter = filter };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
        perror("seccomp");
        exit(70);
    }
}

/* thread-blocking-signals-ptrace-refused: ptrace(2) refused. */
void cch_refuse_ptrace(void) { cch_refuse_system_call(__NR_ptrace); }

/* memory-reads-refused: process_vm_readv(2) refused; the handler's fault-proof reads then go
 * through a pipe (cc_safeio.c). */
void cch_refuse_memory_reads(void) { cch_refuse_system_call(__NR_process_vm_readv); }

/* hundred-threads-blocking-calls: `count` threads, each parked in one of a dozen blocking
 * calls, every other one with every signal blocked (as libdispatch and the Swift concurrency
 * pool run theirs). Returns once all of them are about to block. */
static _Atomic int g_blockers_ready;
static int g_block_pipe[2] = { -1, -1 };
static pthread_mutex_t g_block_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_block_cond = PTHREAD_COND_INITIALIZER;

static void *cch_blocker(void *arg) {
    long index = (long)arg;
    if (index % 2 == 1) {
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, 0);
    }
    atomic_fetch_add(&g_blockers_ready, 1);
    char byte;
    switch (index % 12) {
    case 0: for (;;) pause();
    case 1: { struct timespec ts = { 3600, 0 }; for (;;) nanosleep(&ts, 0); }
    case 2: for (;;) (void)read(g_block_pipe[0], &byte, 1);
    case 3: { struct pollfd pfd = { .fd = g_block_pipe[0], .events = POLLIN }; for (;;) poll(&pfd, 1, -1); }
    case 4: { for (;;) { fd_set set; FD_ZERO(&set); FD_SET(g_block_pipe[0], &set); select(g_block_pipe[0] + 1, &set, 0, 0, 0); } }
    case 5: { pthread_mutex_lock(&g_block_mutex); for (;;) pthread_cond_wait(&g_block_cond, &g_block_mutex); }
    case 6: { int ep = epoll_create1(0); struct epoll_event ev; for (;;) epoll_wait(ep, &ev, 1, -1); }
    case 7: { sigset_t set; sigemptyset(&set); sigaddset(&set, SIGUSR2); int sig; for (;;) sigwait(&set, &sig); }
    case 8: { int s[2]; socketpair(AF_UNIX, SOCK_STREAM, 0, s); for (;;) (void)recv(s[0], &byte, 1, 0); }
    case 9: { uint32_t word = 0; for (;;) syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, 0, 0, 0); }
    case 10: { struct timespec ts = { 3600, 0 }; for (;;) clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, 0); }
    default: { sigset_t none; sigemptyset(&none); for (;;) sigsuspend(&none); }
    }
    return 0;
}

void cch_start_blocking_threads(int count) {
    if (pipe(g_block_pipe) != 0) { perror("pipe"); exit(70); }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (long i = 0; i < count; i++) {
        pthread_t thread;
        if (pthread_create(&thread, &attr, cch_blocker, (void *)i) != 0) { cch_put(2, "pthread_create failed\n"); exit(70); }
        pthread_detach(thread);
    }
    pthread_attr_destroy(&attr);
    while (atomic_load(&g_blockers_ready) < count) usleep(200);
    usleep(20000); /* inside their calls by now */
}

/* Fake Swift async contexts for the handler's chain walk (cc_async.c): the crash happens with
 * the frame pointer set to a fake frame whose word at fp - 8 is the first context, so every
 * shape of bad chain is met at frame 0 of a real crash. Shapes: 0 a cycle of two contexts;
 * 1 a Parent on a page that cannot be read; 2 a misaligned Parent; 3 a chain of 2,000 contexts (longer
 * than the handler's link budget); 4 a first ResumeParent that is not code (heap memory). */
static uint64_t g_fake_contexts[2048][2] __attribute__((aligned(16)));
static uint64_t g_fake_frame[4] __attribute__((aligned(16)));

__attribute__((noinline)) void cch_crash_with_fake_async_context(int shape) {
    uint64_t code = (uint64_t)(uintptr_t)&cch_null_dereference;
    uint64_t (*c)[2] = g_fake_contexts;
    for (int i = 0; i < 2048; i++) { c[i][0] = 0; c[i][1] = code; }
    switch (shape) {
    case 0: c[0][0] = (uint64_t)(uintptr_t)c[1]; c[1][0] = (uint64_t)(uintptr_t)c[0]; break;
    case 1: {
        /* Kept mapped, without access: an unmapped page could be mapped again meanwhile (by
         * any allocation after it). */
        void *page = mmap(0, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        c[0][0] = (uint64_t)(uintptr_t)page;
        break;
    }
    case 2: c[0][0] = (uint64_t)(uintptr_t)c[5] + 8; break;
    case 3: for (int i = 0; i < 1999; i++) c[i][0] = (uint64_t)(uintptr_t)c[i + 1]; break;
    default: c[0][1] = (uint64_t)(uintptr_t)malloc(64); break;
    }
    g_fake_frame[1] = (uint64_t)(uintptr_t)c[0];   /* the word at fp - 8 */
    uint64_t fp = (uint64_t)(uintptr_t)&g_fake_frame[2];
#if defined(__x86_64__)
    __asm__ volatile("mov %0, %%rbp\n\tmovl $42, 0\n" : : "r"(fp) : "memory");
#elif defined(__aarch64__)
    __asm__ volatile("mov x29, %0\n\tmov x9, #0\n\tstr wzr, [x9]\n" : : "r"(fp) : "x9", "memory");
#endif
    cch_sink++;
}

/* glibc's tcache notices the second free of the same chunk: "free(): double free detected in
 * tcache 2", then abort(). */
__attribute__((noinline)) void cch_double_free(void) {
    char *volatile p = malloc(32);
    free(p);
    free(p);
    cch_sink++;
}

/* A fortified memcpy overflowing its destination. With -D_FORTIFY_SOURCE=2 -O2, glibc's
 * <string.h> turns memcpy into exactly this: __builtin___memcpy_chk with the destination's size
 * as the compiler knows it, which calls __memcpy_chk when the length is only known at run time,
 * and that reports "*** buffer overflow detected ***: terminated" and aborts. Written out here
 * because this target is built without optimisation (the header's wrappers need __OPTIMIZE__). */
__attribute__((noinline)) void cch_fortify_overflow(void) {
    char destination[8];
    char source[32] = "crash-harness fortify overflow";
    volatile size_t length = sizeof source;
    __builtin___memcpy_chk(destination, source, length, __builtin_object_size(destination, 1));
    cch_sink += destination[0];
}

/* The Swift runtime's report buffer (swift_getFatalErrorMessageBuffer: the address of an atomic
 * pointer to its text, which it replaces whole with each report), looked at as a program would. */
long cch_swift_reports_length(void) {
    typedef const char *_Atomic *(*buffer_fn)(void);
    buffer_fn buffer = (buffer_fn)dlsym(RTLD_DEFAULT, "swift_getFatalErrorMessageBuffer");
    if (!buffer) return 0;
    const char *_Atomic *slot = buffer();
    const char *text = slot ? atomic_load_explicit(slot, memory_order_acquire) : 0;
    return text ? (long)strlen(text) : 0;
}
