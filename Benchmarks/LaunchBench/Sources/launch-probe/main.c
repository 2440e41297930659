// launch-probe: runs one program to its end and reports its wall time and peak RSS.
//   launch-probe PROGRAM [ARG...]
// The program inherits stdin, stdout, stderr and the environment; after it is reaped this
// prints one line to stdout:
//   launch-probe wall_ns=W maxrss_kib=M cpu_us=C status=S
// W: CLOCK_MONOTONIC from just before posix_spawn to wait4's return; M: wait4's ru_maxrss;
// C: user + system CPU; S: the raw wait status.
//
// Why a C program in between: a child's ru_maxrss is at least the RSS its parent had when it
// spawned it (the kernel carries the old address space's high-water mark across exec, and
// posix_spawn's child runs in the parent's address space until it execs). Spawned from
// launch-cost (Swift, Foundation: tens of MiB) every program would show launch-cost's RSS;
// spawned from here (about 1 MiB) each shows its own.
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: launch-probe PROGRAM [ARG...]\n");
        return 64;
    }
    pid_t pid;
    long long start = now_ns();
    int rc = posix_spawn(&pid, argv[1], NULL, NULL, argv + 1, environ);
    if (rc != 0) {
        fprintf(stderr, "launch-probe: cannot run %s: %s\n", argv[1], strerror(rc));
        return 71;
    }
    int status = 0;
    struct rusage usage;
    while (wait4(pid, &status, 0, &usage) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "launch-probe: wait4: %s\n", strerror(errno));
            return 71;
        }
    }
    long long wall = now_ns() - start;
    long long cpu = (long long)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000LL
        + usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
    printf("launch-probe wall_ns=%lld maxrss_kib=%ld cpu_us=%lld status=%d\n", wall, usage.ru_maxrss, cpu, status);
    return 0;
}
