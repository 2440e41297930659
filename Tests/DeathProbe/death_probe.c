/* death_probe.c — crashes whose FINAL signal (siginfo and registers at death) is compared with and
 * without CrashCapture (docs/decisions/return-to-fault.md, scripts/death-check.sh). Usage:
 *   death-probe SCENARIO DIRECTORY capture|without
 * (two words of the same length: the initial stack, and so every sp, is laid out alike)
 * SCENARIO: segv-maperr, segv-accerr, segv-gp (x86-64), bus-adrerr, fpe-intdiv (x86-64),
 * builtin-trap, illegal (ud2 / udf), breakpoint (int3 / brk), abort, wait-kill (pauses: another process sends the signal),
 * overtake (a helper process sends SIGXFSZ, SIGPROF and a process-directed SIGSEGV while the
 * handler runs, then says in DIRECTORY/../overtake.txt whether they arrived in time),
 * overtake-thread (the same, sent to the crashing thread with tgkill), bus-grown (a SIGBUS past
 * the end of a shared file mapping; a helper process grows the file while the handler runs).
 * Exit 90: cc_install failed; 91: bad arguments; 92: the crash did not happen; 93: setup failed. */
#include "crashcapture.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

volatile intptr_t g_sink;   /* 0, opaque to the compiler */
static volatile int *g_target;

NOINLINE void probe_store(void) { *g_target = 42; g_sink++; }
NOINLINE void probe_load(void) { g_sink += *g_target; }

/* The signal mask of `pid`'s main thread is not empty: it is inside the fatal handler (the
 * probe blocks nothing before its crash). */
static int in_handler(pid_t pid) {
    char path[64], text[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return 0;
    text[n] = 0;
    const char *blocked = strstr(text, "SigBlk:\t");
    return blocked && strncmp(blocked + 8, "0000000000000000", 16) != 0;
}

/* overtake: the late SIGPROF handler must never run (the program ran code after its crash). */
/* DIRECTORY holds the finished record: the handler renamed it, so it is past the record and about
 * to end the process (cc_handler.c, DEATH). Sent before that, a signal arrived meanwhile. */
static int record_finished(const char *directory) {
    DIR *dir = opendir(directory);
    if (!dir) return 1;
    int found = 0;
    for (struct dirent *entry; (entry = readdir(dir)) != 0;) {
        size_t n = strlen(entry->d_name);
        if (n > 6 && strcmp(entry->d_name + n - 6, ".ccrec") == 0) found = 1;
    }
    closedir(dir);
    return found;
}

static void late_handler(int signo) {
    (void)signo;
    static const char line[] = "death-probe: late SIGPROF handler ran\n";
    write(2, line, sizeof line - 1);
}

static int g_grow_fd = -1;   /* bus-grown: the file the helper grows */

static void start_overtaker(const char *directory, int thread_directed) {
    struct sigaction action = { 0 };
    action.sa_handler = late_handler;
    sigemptyset(&action.sa_mask);
    sigaction(SIGPROF, &action, 0);
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) exit(93);
    if (child > 0) { usleep(100 * 1000); return; }
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        if (in_handler(parent)) break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 5) _exit(1);
    }
    if (g_grow_fd >= 0) {
        if (ftruncate(g_grow_fd, 4096) != 0) _exit(2);   /* the page that faulted exists now */
    } else if (thread_directed) {
        syscall(SYS_tgkill, (long)parent, (long)parent, (long)SIGXFSZ);
        syscall(SYS_tgkill, (long)parent, (long)parent, (long)SIGPROF);
        syscall(SYS_tgkill, (long)parent, (long)parent, (long)SIGSEGV);
    } else {
        kill(parent, SIGXFSZ);
        kill(parent, SIGPROF);
        kill(parent, SIGSEGV);
    }
    int in_time = in_handler(parent) && !record_finished(directory);
    char path[4096];
    snprintf(path, sizeof path, "%s/../overtake.txt", directory);
    FILE *out = fopen(path, "w");
    if (out) { fprintf(out, "%s\n", in_time ? "sent while the handler ran" : "sent too late"); fclose(out); }
    _exit(0);
}

#ifdef CC_EVAL_REFAULT
extern int cc__eval_refault;
#endif
int main(int argc, char **argv) {
    if (argc < 4) return 91;
#ifdef CC_EVAL_REFAULT
    const char *mode = getenv("CC_EVAL_DEATH");
    cc__eval_refault = mode ? atoi(mode) : 0;
#endif
    const char *scenario = argv[1];
    int capture = strcmp(argv[3], "capture") == 0;
    void (*crash)(void) = probe_store;
    g_target = (volatile int *)g_sink;
    if (strcmp(scenario, "segv-maperr") == 0) {
    } else if (strcmp(scenario, "segv-accerr") == 0) {
        void *page = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED) return 93;
        g_target = (volatile int *)page + 3;
    } else if (strcmp(scenario, "segv-gp") == 0) {
#if defined(__x86_64__)
        g_target = (volatile int *)(uintptr_t)0x8000000000000000ULL;   /* non-canonical: #GP */
        crash = probe_load;
#else
        return 91;
#endif
    } else if (strcmp(scenario, "bus-adrerr") == 0 || strcmp(scenario, "bus-grown") == 0) {
        char path[] = "/tmp/death-probe-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0) return 93;
        unlink(path);
        if (strcmp(scenario, "bus-grown") == 0) g_grow_fd = fd;
        void *page = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);   /* file of 0 bytes */
        if (page == MAP_FAILED) return 93;
        g_target = (volatile int *)page + 5;
        crash = probe_load;
    } else if (strcmp(scenario, "fpe-intdiv") != 0 && strcmp(scenario, "builtin-trap") != 0 &&
               strcmp(scenario, "breakpoint") != 0 && strcmp(scenario, "abort") != 0 &&
               strcmp(scenario, "wait-kill") != 0 && strcmp(scenario, "overtake") != 0 &&
               strcmp(scenario, "overtake-thread") != 0 && strcmp(scenario, "illegal") != 0) {
        return 91;
    }
    if (capture) {
        cc_config_t config = { .directory = argv[2], .app_name = "death-probe", .app_version = "1.0" };
        int err = 0;
        int rc = cc_install(&config, &err);
        if (rc != CC_INSTALLED) { fprintf(stderr, "cc_install returned %d (errno %d)\n", rc, err); return 90; }
    }
    if (strcmp(scenario, "overtake") == 0 || strcmp(scenario, "bus-grown") == 0) start_overtaker(argv[2], 0);
    if (strcmp(scenario, "overtake-thread") == 0) start_overtaker(argv[2], 1);
    if (strcmp(scenario, "fpe-intdiv") == 0) {
#if defined(__x86_64__)
        volatile int zero = (int)g_sink, one = 1;
        g_sink = one / zero;
#else
        return 91;
#endif
    } else if (strcmp(scenario, "builtin-trap") == 0) {
        __builtin_trap();
    } else if (strcmp(scenario, "illegal") == 0) {
#if defined(__x86_64__)
        __asm__ volatile("ud2");
#elif defined(__aarch64__)
        __asm__ volatile("udf #0");
#endif
    } else if (strcmp(scenario, "breakpoint") == 0) {
#if defined(__x86_64__)
        __asm__ volatile("int3");
#elif defined(__aarch64__)
        __asm__ volatile("brk #0");
#endif
    } else if (strcmp(scenario, "abort") == 0) {
        abort();
    } else if (strcmp(scenario, "wait-kill") == 0) {
        printf("ready\n");
        fflush(stdout);
        for (;;) pause();
    } else {
        crash();
    }
    return 92;
}
