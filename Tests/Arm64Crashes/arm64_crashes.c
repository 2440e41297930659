/* arm64_crashes.c — small crash programs for scripts/arm64-check.sh, the aarch64 check of the C core: cross-compiled
 * with the C core for aarch64 and run under qemu-aarch64-static. Usage:
 *   arm64-crashes SCENARIO DIRECTORY [capture|nocapture]
 * installs the handlers (unless "nocapture") with records in DIRECTORY, then dies as SCENARIO
 * says (null-dereference, trap, abort, call-null, previous-handler, stopped-thread,
 * blocking-thread, thread-overflow, unwinder-fault, async-chain, heap-object, cxx-exception; and
 * snapshot, a record of the live process), under a fixed call chain main → arm64_level1 →
 * arm64_level2 → the crash, so the recorded frames can be checked by name (thread-overflow: in
 * its own thread). cxx-exception is in arm64_cxx.cpp, linked only into the C++ builds of this
 * program (with the core's cc_terminate.cpp and libstdc++); the C-only builds have no
 * arm64_crash_cxx (a weak reference) and exit 96 for it. Exit 90: cc_install failed; 91: bad
 * arguments; 92: the crash did not happen. */
#include "crashcapture.h"

#include <pthread.h>
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

/* signal-handler: a null store inside the program's own SIGUSR2 handler, raised from here. */
NOINLINE static void arm64_usr2_handler(int signo) {
    arm64_crash_null();
    g_sink += signo;
}
NOINLINE void arm64_crash_in_signal_handler(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = arm64_usr2_handler;
    sigaction(SIGUSR2, &action, 0);
    raise(SIGUSR2);
    g_sink++;
}

/* previous-handler: the program's own SIGSEGV handler, installed before cc_install with
 * SA_RESETHAND and without SA_ONSTACK (so cc_chain.c switches off the alternate stack to call
 * it). It says so on stderr and returns: the fault runs again under SIG_DFL. */
static void arm64_previous_handler(int signo) {
    (void)signo;
    static const char line[] = "arm64-crashes: previous handler ran\n";
    write(2, line, sizeof line - 1);
}

/* stopped-thread: a second thread blocked in read() on a pipe nobody writes. */
static int g_pipe[2];
NOINLINE void *arm64_blocked_reader(void *unused) {
    (void)unused;
    char byte;
    read(g_pipe[0], &byte, 1);
    g_sink++;
    return 0;
}

/* blocking-thread: a second thread that blocks every signal (as libdispatch workers and the
 * Swift concurrency pool do), then waits in read(). */
NOINLINE void *arm64_blocking_reader(void *unused) {
    (void)unused;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, 0);
    char byte;
    read(g_pipe[0], &byte, 1);
    g_sink++;
    return 0;
}

/* thread-overflow: a thread with a 256 KiB stack recursing until it hits its guard page. */
NOINLINE void arm64_recurse(volatile char *previous) {
    volatile char frame[512];
    frame[0] = previous ? previous[0] : 1;
    if (g_sink >= 0) arm64_recurse(frame);   /* always (g_sink is 0), opaque to the compiler */
    g_sink += frame[1];
}
NOINLINE void *arm64_overflow_thread(void *unused) {
    (void)unused;
    arm64_recurse(0);
    g_sink++;
    return 0;
}
NOINLINE void arm64_crash_thread_overflow(void) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t thread;
    if (pthread_create(&thread, &attr, arm64_overflow_thread, 0) != 0) _exit(93);
    pthread_join(thread, 0);
    g_sink++;
}

/* async-chain: what a crash in Swift async code leaves for the handler, made by hand (there is no
 * aarch64 Swift toolchain here). A partial function receives its AsyncContext in x22; the
 * context's first two words are its Parent and its ResumeParent (the caller's resume point).
 * The functions carry Swift-mangled names of async partial functions (suffix TY<n>_ / TQ<n>_),
 * which is how a reader tells async frames (CrashSymbolication's ThreadFrames); in the PAC build
 * the resume points are signed (pacia1716), as a runtime with pointer authentication signs
 * them: the record must hold them stripped. */
struct arm64_async_context { uint64_t parent; uint64_t resume; } __attribute__((aligned(16)));
static struct arm64_async_context g_outer_context, g_middle_context;
NOINLINE void arm64_async_outer_resume(void) __asm__("$s12arm64crashes5outeryyYaFTY2_");
NOINLINE void arm64_async_outer_resume(void) { g_sink++; }
NOINLINE void arm64_async_middle_resume(void) __asm__("$s12arm64crashes6middleyyYaFTQ1_");
NOINLINE void arm64_async_middle_resume(void) { g_sink++; }
NOINLINE void arm64_async_leaf(void) __asm__("$s12arm64crashes4leafyyYaFTY0_");
NOINLINE void arm64_async_leaf(void) {
    volatile int *p = (volatile int *)g_sink;
    *p = 42;
    g_sink++;
}
/* The code address as a runtime with pointer authentication would store it: signed with the
 * IA key (pacia1716, a hint: unchanged on a CPU without PAC), modifier 0. */
static uint64_t arm64_sign(uint64_t address) {
#if defined(__ARM_FEATURE_PAC_DEFAULT)
    register uint64_t x17 __asm__("x17") = address;
    register uint64_t x16 __asm__("x16") = 0;
    __asm__ volatile("hint #8" : "+r"(x17) : "r"(x16));
    return x17;
#else
    return address;
#endif
}
NOINLINE void arm64_crash_async(void) {
    g_outer_context.parent = 0;
    g_outer_context.resume = arm64_sign((uint64_t)(uintptr_t)arm64_async_outer_resume);
    g_middle_context.parent = (uint64_t)(uintptr_t)&g_outer_context;
    g_middle_context.resume = arm64_sign((uint64_t)(uintptr_t)arm64_async_middle_resume);
    register struct arm64_async_context *context __asm__("x22") = &g_middle_context;
    __asm__ volatile("" : : "r"(context));
    arm64_async_leaf();
    __asm__ volatile("" : : "r"(context));
    g_sink++;
}

/* heap-object: a heap object the crashing function holds when it faults. Its first bytes are
 * ARM64_HEAP_TAG (scripts/arm64-check.sh looks for them in the record's memory windows); the
 * pointer is the leaf's argument, still in use after the faulting store (the asm), and the
 * caller's, kept across the call (it is used after), so a register or a stack word holds it. */
#define ARM64_HEAP_TAG "CrashCapture arm64 heap object!"   /* 31 bytes and the NUL */
struct arm64_heap_object { char tag[32]; uint64_t words[28]; };
NOINLINE void arm64_heap_use(struct arm64_heap_object *object) {
    volatile int *p = (volatile int *)g_sink;
    *p = 42;
    __asm__ volatile("" : : "r"(object) : "memory");
    g_sink += (intptr_t)object->words[0];
}
NOINLINE void arm64_crash_heap_object(void) {
    struct arm64_heap_object *object = malloc(sizeof *object);
    if (!object) _exit(93);
    memcpy(object->tag, ARM64_HEAP_TAG, sizeof object->tag);
    for (int i = 0; i < 28; i++) object->words[i] = 0xC0FFEE0000000000ull | (uint64_t)i;
    arm64_heap_use(object);
    g_sink += (intptr_t)object->words[1];
    free(object);
}

/* cxx-exception: std::runtime_error("arm64 exception text") thrown two frames below
 * arm64_crash_cxx and caught by no one (arm64_cxx.cpp). Weak: absent from the C-only builds. */
extern void arm64_crash_cxx(void) __attribute__((weak));

/* No tail calls (work after each call), so each level keeps its frame. */
NOINLINE void arm64_level2(void (*crash)(void)) { crash(); g_sink++; }
NOINLINE void arm64_level1(void (*crash)(void)) { arm64_level2(crash); g_sink++; }

/* snapshot: a record of the live process (cc_snapshot) while a second thread sleeps 1 s in
 * nanosleep; the sleep must not be cut short (no signal handler runs in it), the process goes on
 * and exits 0. Prints the record's file name. Exit 94: cc_snapshot failed; 95: the sleep was cut. */
static double g_slept;
NOINLINE void *arm64_sleeper(void *unused) {
    (void)unused;
    struct timespec start, end, one = { 1, 0 };
    clock_gettime(CLOCK_MONOTONIC, &start);
    int rc = nanosleep(&one, 0);
    clock_gettime(CLOCK_MONOTONIC, &end);
    g_slept = rc != 0 ? -1 : (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    return 0;
}

static int arm64_snapshot(const char *directory) {
    cc_config_t config = { .directory = directory, .app_name = "arm64-crashes", .app_version = "1.0" };
    int err = 0;
    if (cc_install(&config, &err) != CC_INSTALLED) return 90;
    pthread_t sleeper;
    if (pthread_create(&sleeper, 0, arm64_sleeper, 0) != 0) return 93;
    usleep(200 * 1000);
    cc_snapshot_request_t request = { .kind = CC_KIND_SNAPSHOT, .detector = CC_DETECTOR_NONE, .name = "arm64" };
    cc_snapshot_result_t result;
    if (cc_snapshot(&request, &result, &err) != 0) return 94;
    pthread_join(sleeper, 0);
    if (g_slept < 0.99) return 95;
    printf("%s\n", result.file_name);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) return 91;
    if (strcmp(argv[1], "snapshot") == 0) return arm64_snapshot(argv[2]);
    void (*crash)(void) = 0;
    uint32_t flags = 0;
    /* ARM64_CRASHES_FRAME_RECORDS_ONLY=1: every frame by its frame record, as for code without
     * call-frame information. */
    const char *records_only = getenv("ARM64_CRASHES_FRAME_RECORDS_ONLY");
    if (records_only && strcmp(records_only, "1") == 0) flags |= CC_FLAG_TEST_FRAME_RECORDS_ONLY;
    if (strcmp(argv[1], "null-dereference") == 0) crash = arm64_crash_null;
    else if (strcmp(argv[1], "trap") == 0) crash = arm64_crash_trap;
    else if (strcmp(argv[1], "abort") == 0) crash = arm64_crash_abort;
    else if (strcmp(argv[1], "call-null") == 0) crash = arm64_crash_call_null;
    else if (strcmp(argv[1], "signal-handler") == 0) crash = arm64_crash_in_signal_handler;
    else if (strcmp(argv[1], "previous-handler") == 0) {
        crash = arm64_crash_null;
        struct sigaction previous = { 0 };
        previous.sa_handler = arm64_previous_handler;
        previous.sa_flags = SA_RESETHAND;
        sigemptyset(&previous.sa_mask);
        if (sigaction(SIGSEGV, &previous, 0) != 0) return 93;
    } else if (strcmp(argv[1], "stopped-thread") == 0) {
        crash = arm64_crash_null;
        pthread_t reader;
        if (pipe(g_pipe) != 0 || pthread_create(&reader, 0, arm64_blocked_reader, 0) != 0) return 93;
        usleep(200 * 1000);   /* let it reach read() */
    } else if (strcmp(argv[1], "blocking-thread") == 0) {
        crash = arm64_crash_null;
        pthread_t reader;
        if (pipe(g_pipe) != 0 || pthread_create(&reader, 0, arm64_blocking_reader, 0) != 0) return 93;
        usleep(200 * 1000);
    } else if (strcmp(argv[1], "async-chain") == 0) {
        crash = arm64_crash_async;
    } else if (strcmp(argv[1], "unwinder-fault") == 0) {
        crash = arm64_crash_null;   /* with the test hook: a fault inside the unwinder after 4 frames */
        flags |= CC_FLAG_TEST_FAULT_IN_UNWINDER;
    } else if (strcmp(argv[1], "heap-object") == 0) crash = arm64_crash_heap_object;
    else if (strcmp(argv[1], "cxx-exception") == 0) {
        if (!arm64_crash_cxx) return 96;   /* a C-only build: no C++ in this program */
        crash = arm64_crash_cxx;
    } else if (strcmp(argv[1], "thread-overflow") == 0) crash = arm64_crash_thread_overflow;
    else return 91;
    if (argc < 4 || strcmp(argv[3], "nocapture") != 0) {
        cc_config_t config = { .directory = argv[2], .app_name = "arm64-crashes", .app_version = "1.0",
                              .flags = flags };
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
