/* arm64_guarded_heap.c — the guarded heap's memory errors on aarch64 (scripts/arm64-check.sh):
 * capture installed (unless "nocapture"), then a scenario of Sources/CGuardedHeapScenarios with
 * the allocator of Sources/CrashCaptureGuardedHeap linked in, as a program that links the
 * CrashCaptureGuardedHeap product has it. CRASHCAPTURE_GUARDED_HEAP=1:<slots> samples every
 * allocation. Usage: arm64-guarded-heap-<variant> <scenario> <record directory> [nocapture] */
#include "crashcapture.h"
#include "gh_scenarios.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 3) return 91;
    if (argc < 4 || strcmp(argv[3], "nocapture") != 0) {
        cc_config_t config = { .directory = argv[2], .app_name = "arm64-guarded-heap", .app_version = "1.0" };
        int err = 0;
        int rc = cc_install(&config, &err);
        if (rc != CC_INSTALLED) {
            fprintf(stderr, "cc_install returned %d (errno %d)\n", rc, err);
            return 90;
        }
    }
    return gh_run_c_scenario(argv[1], 48) == 0 ? 92 : 93;
}
