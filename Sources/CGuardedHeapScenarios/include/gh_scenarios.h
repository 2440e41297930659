/* gh_scenarios.h — memory errors written in C, each in functions of its own so that the
 * record's allocation and free stacks can be checked by name. */
#ifndef GH_SCENARIOS_H
#define GH_SCENARIOS_H
#include <stddef.h>

/* The allocation every scenario makes (gh_allocate_in_c) and frees (gh_free_in_c). */
char *gh_allocate_in_c(size_t size);
void gh_free_in_c(char *pointer);
/* Runs the scenario named (use-after-free-read, use-after-free-write, overflow, underflow, fork, exhaust,
 * double-free, invalid-free); returns only if it did not stop the process. */
int gh_run_c_scenario(const char *name, size_t size);

/* Nanoseconds `count` malloc(size)/free pairs took: through the program's malloc (the guarded
 * heap's, when linked), or glibc's own (what a program without it calls). */
long long gh_bench_pairs(long count, size_t size, int through_glibc);

#endif
