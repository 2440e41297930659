/* gh_scenarios.c — see gh_scenarios.h. Volatile accesses: the compiler must not prove them away. */
#include "gh_scenarios.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) char *gh_allocate_in_c(size_t size) {
    char *p = malloc(size);
    if (p) memset(p, 'a', size);
    return p;
}

__attribute__((noinline)) void gh_free_in_c(char *pointer) { free(pointer); }

/* An allocation that sits at its page's start (`left`) or end: the guarded heap places one in
 * four at the start, so an underflow meets a guard page; the rest at the end, for overflows.
 * The ones passed over stay allocated. */
static char *gh_allocate_placed(size_t size, int left) {
    for (int tries = 0; tries < 64; tries++) {
        char *p = gh_allocate_in_c(size);
        if (!p || (((unsigned long)p & 4095) == 0) == left) return p;
    }
    return NULL;
}

int gh_run_c_scenario(const char *name, size_t size) {
    char *p = gh_allocate_placed(size, strcmp(name, "underflow") == 0);
    if (!p) return -1;
    volatile char *v = p;
    if (strcmp(name, "use-after-free-read") == 0) {
        gh_free_in_c(p);
        return v[size / 2];
    } else if (strcmp(name, "use-after-free-write") == 0) {
        gh_free_in_c(p);
        v[0] = 'b';
    } else if (strcmp(name, "overflow") == 0) {
        for (size_t i = 0; i <= size + 64; i++) v[i] = 'c';
    } else if (strcmp(name, "underflow") == 0) {
        for (size_t i = 1; i <= 4096; i++) v[-(long)i] = 'd';
    } else if (strcmp(name, "double-free") == 0) {
        gh_free_in_c(p);
        gh_free_in_c(p);
    } else if (strcmp(name, "invalid-free") == 0) {
        gh_free_in_c(p + 8);
    } else if (strcmp(name, "fork") == 0) {
        /* A child forked with sampled allocations live allocates and frees under the same pool,
         * then the parent's use after free still faults: fork leaves nothing held. */
        pid_t child = fork();
        if (child == 0) {
            for (int i = 0; i < 2000; i++) gh_free_in_c(gh_allocate_in_c(size));
            gh_free_in_c(p);
            _exit(0);
        }
        int status = -1;
        waitpid(child, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 10;
        gh_free_in_c(p);
        return v[0];
    } else if (strcmp(name, "exhaust") == 0) {
        /* More live allocations than slots: the rest come from glibc, and every one works. */
        char *kept[4096];
        for (int i = 0; i < 4096; i++) {
            kept[i] = gh_allocate_in_c(size);
            if (!kept[i]) return 11;
        }
        for (int i = 0; i < 4096; i++) gh_free_in_c(kept[i]);
        gh_free_in_c(p);
        return 0;
    } else {
        return -2;
    }
    return 0;
}

/* glibc's own, which a program without the guarded heap calls. */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

long long gh_bench_pairs(long count, size_t size, int through_glibc) {
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long i = 0; i < count; i++) {
        void *p = through_glibc ? __libc_malloc(size) : malloc(size);
        __asm__ volatile("" : : "r"(p) : "memory");
        if (through_glibc) __libc_free(p); else free(p);
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    return (long long)(end.tv_sec - start.tv_sec) * 1000000000LL + (end.tv_nsec - start.tv_nsec);
}
