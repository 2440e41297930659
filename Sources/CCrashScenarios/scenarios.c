/* scenarios.c — the C side of crash-harness: crashes that Swift cannot express directly. */
#define _GNU_SOURCE 1
#undef NDEBUG /* cch_assert must assert in release builds too */
#include "ccrash_scenarios.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
volatile intptr_t cch_sink;

__attribute__((noinline)) void cch_null_dereference(void) {
    volatile int *p = (volatile int *)(uintptr_t)cch_sink; /* cch_sink is 0 */
    *p = 42;
    cch_sink++;
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

__attribute__((noinline)) static int cch_recurse(int depth) {
    volatile char frame[512];
    frame[depth % 512] = (char)depth;
    int below = cch_recurse(depth + 1);
    return below + frame[(depth + 1) % 512];
}

__attribute__((noinline)) void cch_stack_overflow(void) {
    cch_sink += cch_recurse(0);
}

__attribute__((noinline)) void cch_abort(void) {
    abort();
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
    (void)signo;
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
