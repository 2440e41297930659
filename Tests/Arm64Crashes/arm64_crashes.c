/* arm64_crashes.c — small crash programs for scripts/arm64-check.sh (issue 20): cross-compiled
 * with the C core for aarch64 and run under qemu-aarch64-static. Usage:
 *   arm64-crashes SCENARIO DIRECTORY [capture|nocapture]
 * installs the handlers (unless "nocapture") with records in DIRECTORY, then dies as SCENARIO
 * says, under a fixed call chain main → arm64_level1 → arm64_level2 → the crash, so the
 * recorded frames can be checked by name. Exit 90: cc_install failed; 91: bad arguments;
 * 92: the crash did not happen. */
#include "crashcapture.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

volatile intptr_t g_sink;   /* 0: the null pointer the crashes use, opaque to the compiler */

NOINLINE void arm64_crash_null(void) {
    volatile int *p = (volatile int *)g_sink;
    *p = 42;
    g_sink++;
}
NOINLINE void arm64_crash_trap(void) { __builtin_trap(); }
NOINLINE void arm64_crash_abort(void) { abort(); }
NOINLINE void arm64_crash_call_null(void) {
    void (*volatile function)(void) = (void (*)(void))g_sink;
    function();
    g_sink++;
}

/* No tail calls (work after each call), so each level keeps its frame. */
NOINLINE void arm64_level2(void (*crash)(void)) { crash(); g_sink++; }
NOINLINE void arm64_level1(void (*crash)(void)) { arm64_level2(crash); g_sink++; }

int main(int argc, char **argv) {
    if (argc < 3) return 91;
    void (*crash)(void) = 0;
    if (strcmp(argv[1], "null-dereference") == 0) crash = arm64_crash_null;
    else if (strcmp(argv[1], "trap") == 0) crash = arm64_crash_trap;
    else if (strcmp(argv[1], "abort") == 0) crash = arm64_crash_abort;
    else if (strcmp(argv[1], "call-null") == 0) crash = arm64_crash_call_null;
    else return 91;
    if (argc < 4 || strcmp(argv[3], "nocapture") != 0) {
        cc_config_t config = { .directory = argv[2], .app_name = "arm64-crashes", .app_version = "1.0" };
        int err = 0;
        int rc = cc_install(&config, &err);
        if (rc != CC_INSTALLED) {
            fprintf(stderr, "cc_install returned %d (errno %d)\n", rc, err);
            return 90;
        }
    }
    arm64_level1(crash);
    g_sink++;
    return 92;
}
