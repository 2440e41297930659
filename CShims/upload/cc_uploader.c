/* cc_uploader.c — the crash-time uploader: a separate process, started once the record is whole, that sends it on while this process dies. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * WHY. A record is read at the next launch on the same disk. A container's writable layer does
 * not outlive the container (Kubernetes starts a new one at each restart), and a rescheduled pod
 * starts its next launch on another node: the record never leaves. So, when the application asks for it (CrashReporting's crashTimeUploader,
 * off by default), the recording thread starts a small executable of this package
 * (crash-uploader) right after the record is renamed into place, and it sends the record while
 * this process dies (its acknowledgment and lease are the inbox's, so the next launch never
 * sends it again).
 *
 * HOW, the way the Swift runtime starts its backtracer (_swift_spawnBacktracer, safe_spawn):
 * everything is prepared at install in fixed buffers — the path, argv with one slot left for
 * the record's name (it points at cc__g.file_name, written at crash time), envp (the entries
 * the application gave, the DSN among them, then this process's environment at install) — and
 * those buffers are made read-only (mprotect) so that a stray write cannot turn a crash into
 * the exec of another file. At crash time: clone(CLONE_VM | CLONE_VFORK) on a static stack (no
 * fork of a large address space, no malloc, no atfork handlers); the child, still in our
 * memory, uses only raw system calls (it shares errno with the recording thread), blocks every
 * signal, puts every disposition back to SIG_DFL (the program's handlers must not run in it),
 * marks every fd above 2 close-on-exec (close_range CLOSE_RANGE_CLOEXEC; the program's fds
 * must not leak into it), leaves our session (setsid: a terminal's hangup or a kill of our
 * process group does not end the upload), sets RLIMIT_CORE's soft limit to 0 (an uploader that
 * crashes must not leave a core beside the program's), empties its signal mask and execve's.
 * The recording thread resumes once it has (CLONE_VFORK) and carries on dying as before: the
 * process still dies of its original signal; the uploader is reparented.
 *
 * WHEN THE HANDLER WAITS. A process whose death ends its container or service takes the
 * uploader down with it: as the init of its PID namespace (a container started without an init)
 * its death kills every process in the namespace; under an init that exits with its only child
 * (tini, dumb-init: `docker run --init`; a shell script as the entry point) the namespace goes as
 * soon as that init has reaped it; systemd (KillMode=control-group) and a container runtime whose
 * main process shares the pod's PID namespace kill what is left of the unit's or container's
 * cgroup. Those are the processes that are PID 1, or whose parent is PID 1, or whose parent is
 * outside their PID namespace (getppid() is 0). Such a process, and only such, waits for the
 * uploader with wait4 (which also reaps it: no zombie) for as long as the watchdog leaves (its
 * deadline less half a second); an uploader still running then is killed with SIGKILL and
 * reaped, and the record stays for the next launch. Any other process (the child of a shell, a
 * supervisor, a test) dies at once and leaves the uploader to finish on its own.
 */

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#define CC__UPLOADER_ARGS        32
#define CC__UPLOADER_ENVS        1024
#define CC__UPLOADER_STRINGS     (16 * 1024)
#define CC__UPLOADER_ENV_BYTES   (96 * 1024)
/* The prepared part is made read-only after install: one whole, aligned range of pages (64 KiB:
 * the largest page size of the supported targets). */
#define CC__UPLOADER_PREPARED    (128 * 1024)

typedef struct {
    char path[CC__PATH_MAX];
    char strings[CC__UPLOADER_STRINGS];
    char environment[CC__UPLOADER_ENV_BYTES];
    char *argv[CC__UPLOADER_ARGS + 2];
    char *envp[CC__UPLOADER_ENVS + 1];
} cc__uploader_prepared_t;

_Static_assert(sizeof(cc__uploader_prepared_t) <= CC__UPLOADER_PREPARED, "the prepared uploader fits its pages");

static struct {
    union {
        cc__uploader_prepared_t p;
        char pages[CC__UPLOADER_PREPARED];
    } prepared __attribute__((aligned(65536)));
    int enabled;
    int protected_;
    volatile long exec_result;    /* (child) execve's -errno, when it returned */
    char stack[16 * 1024] __attribute__((aligned(16)));   /* the child's, until execve */
} g_uploader;

/* The prepared pages writable again (before a new install fills them). */
static void cc__uploader_unprotect(void) {
    if (g_uploader.protected_) mprotect(&g_uploader.prepared, sizeof g_uploader.prepared, PROT_READ | PROT_WRITE);
    g_uploader.protected_ = 0;
}

/* Whether `config`'s uploader fits the fixed buffers (checked before install changes anything). */
int cc__uploader_fits(const cc_config_t *config) {
    if (!config->uploader_path || !config->uploader_path[0]) return 1;
    if (cc__strnlen(config->uploader_path, CC__PATH_MAX) >= CC__PATH_MAX) return 0;
    size_t used = 0, count = 0;
    for (const char *const *a = config->uploader_arguments; a && *a; a++) {
        used += cc__strnlen(*a, CC__UPLOADER_STRINGS) + 1;
        if (++count > CC__UPLOADER_ARGS - 1 || used > CC__UPLOADER_STRINGS) return 0;
    }
    size_t env_used = 0, env_count = 0;
    for (const char *const *e = config->uploader_environment; e && *e; e++) {
        env_used += cc__strnlen(*e, CC__UPLOADER_ENV_BYTES) + 1;
        if (++env_count > CC__UPLOADER_ENVS / 2 || env_used > CC__UPLOADER_ENV_BYTES / 2) return 0;
    }
    return 1;
}

/* The length of an environment entry's key with its '=' ("KEY="), or 0 when it has none. */
static size_t cc__env_key_length(const char *entry) {
    for (size_t i = 0; entry[i]; i++) if (entry[i] == '=') return i + 1;
    return 0;
}

/* Whether `entry`'s key is the key of one of `given`. */
static int cc__env_overridden(const char *entry, const char *const *given) {
    size_t key = cc__env_key_length(entry);
    if (key == 0) return 1;   /* not KEY=value: left out */
    for (const char *const *g = given; g && *g; g++) {
        if (cc__env_key_length(*g) != key) continue;
        size_t i = 0;
        while (i < key && (*g)[i] == entry[i]) i++;
        if (i == key) return 1;
    }
    return 0;
}

/* Install time: copies the uploader's path, arguments and environment into the fixed buffers
 * (an environment entry that does not fit is left out), then makes them read-only. Only after
 * cc__uploader_fits said yes. */
void cc__uploader_prepare(const cc_config_t *config) {
    cc__uploader_unprotect();
    g_uploader.enabled = 0;
    if (!config->uploader_path || !config->uploader_path[0]) return;
    cc__uploader_prepared_t *p = &g_uploader.prepared.p;
    cc__strlcpy(p->path, config->uploader_path, sizeof p->path);
    size_t used = 0, argc = 0;
    p->argv[argc++] = p->path;
    for (const char *const *a = config->uploader_arguments; a && *a && argc < CC__UPLOADER_ARGS; a++) {
        p->argv[argc++] = p->strings + used;
        used += cc__strlcpy(p->strings + used, *a, sizeof p->strings - used) + 1;
    }
    p->argv[argc++] = cc__g.file_name;   /* the record's name, written by the handler */
    p->argv[argc] = 0;

    size_t env_used = 0, envc = 0;
    extern char **environ;
    for (int pass = 0; pass < 2; pass++) {
        const char *const *list = pass == 0 ? config->uploader_environment : (const char *const *)environ;
        for (const char *const *e = list; e && *e && envc < CC__UPLOADER_ENVS; e++) {
            if (pass == 1 && cc__env_overridden(*e, config->uploader_environment)) continue;
            size_t length = cc__strnlen(*e, sizeof p->environment);
            if (env_used + length + 1 > sizeof p->environment) continue;
            p->envp[envc++] = p->environment + env_used;
            env_used += cc__strlcpy(p->environment + env_used, *e, sizeof p->environment - env_used) + 1;
        }
    }
    p->envp[envc] = 0;
    g_uploader.enabled = 1;
    /* Read-only from here (as the Swift runtime protects its backtracer's path and environment):
     * the handler only reads them. Where the page size does not allow it, they stay writable. */
    g_uploader.protected_ = mprotect(&g_uploader.prepared, sizeof g_uploader.prepared, PROT_READ) == 0;
}

/* Uninstall: no uploader until the next install. */
void cc__uploader_disable(void) {
    g_uploader.enabled = 0;
    cc__uploader_unprotect();
}

/* async-signal-safe: the child of clone(CLONE_VM | CLONE_VFORK), in our memory until execve
 * (raw system calls only; see the file comment for each step). Never returns. */
static int cc__uploader_child(void *unused) {
    (void)unused;
    uint64_t all = ~(uint64_t)0, none = 0;
    cc__raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, sizeof all);
    /* The kernel's struct sigaction all zero: SIG_DFL, no flags, an empty mask. */
    unsigned long dfl[4] = { 0, 0, 0, 0 };
    for (int signo = 1; signo <= 64; signo++) {
        if (signo == SIGKILL || signo == SIGSTOP) continue;
        cc__raw_syscall(SYS_rt_sigaction, signo, (long)dfl, 0, sizeof all);
    }
    if (cc__raw_syscall(SYS_close_range, 3, ~0L & 0xFFFFFFFFL, CLOSE_RANGE_CLOEXEC, 0) != 0) {
        /* Before Linux 5.11: the fds a program commonly has. */
        for (long fd = 3; fd < 4096; fd++) cc__raw_syscall(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC, 0);
    }
    cc__raw_syscall(SYS_setsid, 0, 0, 0, 0);
    struct rlimit core;
    if (cc__raw_syscall(SYS_prlimit64, 0, RLIMIT_CORE, 0, (long)&core) == 0) {
        core.rlim_cur = 0;
        cc__raw_syscall(SYS_prlimit64, 0, RLIMIT_CORE, (long)&core, 0);
    }
    cc__raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, sizeof none);
    const cc__uploader_prepared_t *p = &g_uploader.prepared.p;
    g_uploader.exec_result = cc__raw_syscall(SYS_execve, (long)p->path, (long)p->argv, (long)p->envp, 0);
    for (;;) cc__raw_syscall(SYS_exit, 127, 0, 0, 0);
    return 0;   /* not reached; GCC's -Wreturn-type asks for it */
}

/* async-signal-safe: one line on stderr saying the uploader did not start. */
static void cc__uploader_note(const char *why, int error) {
    char line[256];
    size_t n = cc__strlcpy(line, "crashcapture: the crash-time uploader did not start (", sizeof line);
    n += cc__strlcpy(line + n, why, sizeof line - n);
    if (error && n < sizeof line) {
        n += cc__strlcpy(line + n, " ", sizeof line - n);
        n += cc__strlcpy(line + n, cc__errno_name(error), sizeof line - n);
    }
    n += cc__strlcpy(line + n, "); the next launch sends the record\n", sizeof line - n);
    cc__write_all(2, line, n < sizeof line ? n : sizeof line - 1);
}

/* async-signal-safe: starts the uploader for the record just renamed into place (nothing
 * without an uploader, or when the record is not there whole). When this process's death would
 * end the uploader too (see WHEN THE HANDLER WAITS), waits for it (bounded by the watchdog,
 * whose deadline is `deadline_ns` on the monotonic clock) and reaps it. */
void cc__uploader_start(int64_t deadline_ns) {
    if (!g_uploader.enabled || cc__g.dir_fd < 0) return;
    struct stat st;   /* the record is there (fstatat: faccessat(2) itself has no flags) */
    if (cc__sys_fstatat(cc__g.dir_fd, cc__g.file_name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    g_uploader.exec_result = 0;
    pid_t child = clone(cc__uploader_child, g_uploader.stack + sizeof g_uploader.stack, CLONE_VM | CLONE_VFORK | SIGCHLD, 0);
    if (child < 0) {
        cc__uploader_note("clone:", errno);
        return;
    }
    int status = 0;
    if (g_uploader.exec_result != 0) {   /* execve returned: the child has exited */
        cc__uploader_note("execve:", (int)-g_uploader.exec_result);
        cc__raw_syscall(SYS_wait4, child, (long)&status, 0, 0);
        return;
    }
    if (cc__sys_getpid() != 1 && cc__sys_getppid() > 1) return;
    for (;;) {
        long got = cc__raw_syscall(SYS_wait4, child, (long)&status, WNOHANG, 0);
        if (got == child || (got < 0 && got != -EINTR)) return;
        if (cc__clock_ns(CLOCK_MONOTONIC) >= deadline_ns) break;
        struct timespec pause = { 0, 5 * 1000000L };
        cc__sys_nanosleep(&pause);
    }
    cc__raw_syscall(SYS_kill, child, SIGKILL, 0, 0);
    cc__raw_syscall(SYS_wait4, child, (long)&status, 0, 0);
}
