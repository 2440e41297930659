/* cc_helper.c — the crashed process's side of the thread helper: start it, hand it the threads
 * that could not stop themselves, and write what it sends back into the record. */
#include "cc_boot.h"
#include "cc_internal.h"
#include "cc_helper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* See cc_helper.h for the design and the protocol. Everything here is async-signal-safe: the
 * helper is started with clone(CLONE_VM | CLONE_VFORK) + execve (what posix_spawn does, minus
 * its locks), its environment is assembled in static storage, and the socket is read with
 * poll/read under a deadline. */

extern char **environ;

#define CC__HELPER_ENV_MAX 512

static struct {
    char stack[16 * 1024] __attribute__((aligned(16)));   /* the clone child's, until execve */
    char pid_variable[64];
    char *envp[CC__HELPER_ENV_MAX + 3];
    int child_fd;
    int32_t request[1 + CC__HELPER_MAX_TIDS];
    unsigned char payload[CC__HELPER_PAYLOAD + 64];
} g_helper;

static char *const g_helper_argv[] = { (char *)"crashcapture-thread-helper", 0 };
static char g_no_backtracer[] = "SWIFT_BACKTRACE=enable=no";

/* async-signal-safe: whether `entry` is NAME=... */
static int cc__env_is(const char *entry, const char *name) {
    size_t i = 0;
    for (; name[i]; i++) if (entry[i] != name[i]) return 0;
    return entry[i] == '=';
}

/* The clone child, on g_helper.stack, sharing our memory until execve: the socket becomes its
 * fd 0 and 1, /dev/null its fd 2 (the program's stderr stays the program's), then the same
 * executable is run again in helper mode. Only syscalls here. */
static int cc__helper_child(void *arg) {
    (void)arg;
    int fd = g_helper.child_fd;
    if (fd <= 2) fd = (int)syscall(SYS_fcntl, fd, F_DUPFD, 3);
    syscall(SYS_dup3, fd, 0, 0);
    syscall(SYS_dup3, fd, 1, 0);
    int null_fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_WRONLY, 0);
    if (null_fd >= 0 && null_fd != 2) syscall(SYS_dup3, null_fd, 2, 0);
    syscall(SYS_execve, "/proc/self/exe", g_helper_argv, g_helper.envp);
    syscall(SYS_exit, 127);
    return 127;
}

/* async-signal-safe: reads exactly len bytes before the deadline; 0 on success. */
static int cc__read_full(int fd, void *out, size_t len, int64_t deadline_ns) {
    unsigned char *p = out;
    size_t done = 0;
    while (done < len) {
        int64_t left_ms = (deadline_ns - cc__clock_ns(CLOCK_MONOTONIC)) / 1000000;
        if (left_ms <= 0) return -1;
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int ready = poll(&pfd, 1, left_ms > 1000 ? 1000 : (int)left_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;
        ssize_t got = read(fd, p + done, len - done);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;   /* EOF: the helper is gone */
        done += (size_t)got;
    }
    return 0;
}

/* async-signal-safe: index of tid in the request, or -1. */
static int cc__requested(pid_t tid, uint32_t count) {
    for (uint32_t i = 0; i < count; i++) if (g_helper.request[1 + i] == tid) return (int)i;
    return -1;
}

/* async-signal-safe: one message from the helper checked against what was asked (the helper
 * is our own code, but what reaches the record is checked all the same). Returns 1 to write
 * it, 0 to drop it. Marks taken[i] when it is the THREAD section of the i-th tid. */
static int cc__helper_message_ok(uint32_t type, uint32_t length, uint32_t count, uint8_t *taken) {
    const unsigned char *p = g_helper.payload;
    if (type == CC_SEC_STRING) {
        cc_sec_string_t head;
        if (length < sizeof head) return 0;
        for (size_t i = 0; i < sizeof head; i++) ((unsigned char *)&head)[i] = p[i];
        return head.key == CC_STR_NOTE;
    }
    if (type == CC_SEC_THREAD_REGISTERS) {
        cc_sec_thread_registers_t head;
        if (length < sizeof head + sizeof(cc_sec_registers_t)) return 0;
        for (size_t i = 0; i < sizeof head; i++) ((unsigned char *)&head)[i] = p[i];
        return cc__requested(head.tid, count) >= 0;
    }
    if (type == CC_SEC_THREAD) {
        cc_sec_thread_t head;
        if (length < sizeof head) return 0;
        for (size_t i = 0; i < sizeof head; i++) ((unsigned char *)&head)[i] = p[i];
        int index = cc__requested(head.tid, count);
        if (index < 0 || taken[index]) return 0;
        if (head.frame_count > CC__HELPER_FRAMES || sizeof head + (size_t)head.frame_count * 8 != length) return 0;
        if (head.flags & (CC_THREAD_CRASHED | CC_THREAD_STOPPED)) return 0;
        taken[index] = 1;
        return 1;
    }
    return 0;
}

/* async-signal-safe: starts the helper for `count` threads, writes its sections through `w`,
 * and sets taken[i] for each thread it wrote (read, or refused). Returns 0 when the helper
 * answered, else an errno value (it could not start, or said nothing before the deadline).
 * The socket stays open on our side: the helper keeps the threads stopped until this process
 * is gone. */
int cc__helper_take_threads(cc__writer_t *w, const pid_t *tids, uint32_t count, uint8_t *taken,
                            int64_t deadline_ns) {
    if (count == 0) return 0;
    if (count > CC__HELPER_MAX_TIDS) count = CC__HELPER_MAX_TIDS;
    for (uint32_t i = 0; i < count; i++) taken[i] = 0;

    /* The environment: the program's own (the loader may need LD_LIBRARY_PATH), with ours. */
    size_t n = 0;
    char *pv = g_helper.pid_variable;
    size_t k = cc__strlcpy(pv, CC__HELPER_ENV "=", sizeof g_helper.pid_variable);
    k += cc__fmt_u64(pv + k, (uint64_t)getpid());
    pv[k] = 0;
    g_helper.envp[n++] = pv;
    g_helper.envp[n++] = g_no_backtracer;
    for (char **e = environ; e && *e && n < CC__HELPER_ENV_MAX; e++) {
        if (cc__env_is(*e, CC__HELPER_ENV) || cc__env_is(*e, "SWIFT_BACKTRACE")) continue;
        g_helper.envp[n++] = *e;
    }
    g_helper.envp[n] = 0;

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return errno;
    g_helper.child_fd = sv[1];
    /* CLONE_VFORK: we continue once the child has called execve (or exited); CLONE_VM: it
     * borrows our memory until then, so nothing is copied. */
    pid_t child = clone(cc__helper_child, g_helper.stack + sizeof g_helper.stack,
                        CLONE_VM | CLONE_VFORK | SIGCHLD, 0);
    int clone_errno = errno;
    close(sv[1]);
    if (child < 0) { close(sv[0]); return clone_errno; }
    /* Yama (ptrace_scope 1) lets a process trace only its descendants, unless it names a tracer. */
    prctl(PR_SET_PTRACER, (unsigned long)child, 0, 0, 0);

    g_helper.request[0] = (int32_t)count;
    for (uint32_t i = 0; i < count; i++) g_helper.request[1 + i] = tids[i];
    if (cc__write_all(sv[0], g_helper.request, (1 + (size_t)count) * sizeof(int32_t)) != 0) return EPIPE;

    for (;;) {
        cc_section_header_t head;
        if (cc__read_full(sv[0], &head, sizeof head, deadline_ns) != 0) return ETIMEDOUT;
        if (head.type == 0) return 0;
        if (head.length > CC__HELPER_PAYLOAD) return EPROTO;
        if (cc__read_full(sv[0], g_helper.payload, head.length, deadline_ns) != 0) return ETIMEDOUT;
        if (!cc__helper_message_ok(head.type, head.length, count, taken)) continue;
        cc__section_begin(w, head.type);
        cc__section_put(w, g_helper.payload, head.length);
        cc__section_end(w);
    }
}
