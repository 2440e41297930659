/* cshims_sanitizer_tests.c — the C core (CShims) under AddressSanitizer and UndefinedBehaviorSanitizer:
 * real crashes in child processes, each record read back and checked, and the API's other paths. */
/*
 * Built and run by scripts/c-checks.sh: this file and every CShims source compiled together with
 * -fsanitize=address,undefined -fno-sanitize-recover=all, linked with zlib. Each
 * scenario forks a child that installs the handlers and crashes (or, for "api" and the repaired
 * fault, exits 0); the parent expects death by the right signal, then reads the record the child
 * left back with the shared layout (cc_record.h) and checks it: whole sections with good CRCs (zlib's
 * crc32, not the writer's own), a complete or ".partial" file as the scenario says, the crash, the
 * process, the $AppEnd with its placeholders filled, the strings, the crashed thread's frames by
 * symbol name (children are forked, not exec'd: their addresses are the parent's, so dladdr in the
 * parent names them), other threads, breadcrumbs. A child whose stderr shows any sanitizer report
 * fails, whatever it died of; so does the parent's own (LeakSanitizer at its exit).
 *
 * The sanitizers must leave the fatal signals to CrashCapture (__asan_default_options below), and
 * the deliberate crashes are the kernel's faults, not sanitizer reports (DELIBERATE).
 *
 *   cshims-sanitizer-tests [scratch-directory]     exit 0 when every scenario passed
 */
#include "cc_internal.h"   /* first: cc_boot.h's feature macros; the ring's and the writer's sizes */

#if !defined(__has_feature) || !__has_feature(address_sanitizer) || !__has_feature(undefined_behavior_sanitizer)
#error "built without -fsanitize=address,undefined: this test is only worth it with both (scripts/c-checks.sh)"
#endif

#undef NDEBUG              /* the "assert" scenario needs assert() */
#include <assert.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "crashcapture.h"
#include "cc_record.h"

/* The sanitizers leave every fatal signal to CrashCapture (with handle_segv=1, ASan would take
 * SIGSEGV itself and report it as a crash), and reports are fatal. ASAN_OPTIONS in the
 * environment still wins where it says otherwise. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
    return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0:detect_leaks=1:"
           "abort_on_error=0:exitcode=86";
}
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void) { return "print_stacktrace=1:halt_on_error=1"; }

#define NOINLINE __attribute__((noinline))
/* A crash the test means: undefined behaviour on purpose, which must reach the kernel as a fault
 * rather than be reported by UBSan. */
#define DELIBERATE __attribute__((noinline, no_sanitize("undefined")))

#define APP_NAME "cshims-sanitized"
#define APP_VERSION "1.2.3"
#define RUN_ID "run-4a1f"
/* Every placeholder, an unknown one (dropped) and a lone 0x01 at the very end (dropped). */
#define TEMPLATE "{\"event\":\"$AppEnd\",\"id\":" CC_TEMPLATE_TRACK_ID ",\"time\":" CC_TEMPLATE_TIME_MS \
                 ",\"duration\":" CC_TEMPLATE_DURATION ",\"unknown\":\"\001Z\"}\001"

volatile intptr_t g_sink;

/* ------------------------------------------------------------------------------------------ */
/* The children: each installs the handlers and dies as its name says.                         */

static const char *g_dir;   /* the child's record directory */

static void install(uint32_t flags, uint32_t watchdog_seconds) {
    cc_config_t config = {
        .directory = g_dir, .app_name = APP_NAME, .app_version = APP_VERSION, .app_end_template = TEMPLATE,
        .run_id = RUN_ID, .flags = flags, .watchdog_seconds = watchdog_seconds,
    };
    int err = 0;
    int rc = cc_install(&config, &err);
    if (rc != CC_INSTALLED) {
        fprintf(stderr, "cc_install returned %d (errno %d)\n", rc, err);
        _exit(90);
    }
}

/* A fixed call chain above each crash, so the frames can be checked by name (no tail calls:
 * -fno-optimize-sibling-calls, and work after each call). */
NOINLINE void sanitized_level2(void (*crash)(void)) { crash(); g_sink++; }
NOINLINE void sanitized_level1(void (*crash)(void)) { sanitized_level2(crash); g_sink++; }

DELIBERATE void sanitized_crash_null(void) {
    volatile int *p = (volatile int *)(uintptr_t)g_sink;   /* g_sink is 0 */
    *p = 42;
}

static volatile int *g_read_only;
DELIBERATE void sanitized_crash_read_only(void) { *g_read_only = 1; }   /* SEGV_ACCERR */

DELIBERATE void sanitized_crash_divide(void) {
    volatile int numerator = 1, denominator = (int)g_sink;
    g_sink = numerator / denominator;
}

DELIBERATE void sanitized_crash_illegal(void) {
#if defined(__x86_64__)
    __asm__ volatile("ud2");
#elif defined(__aarch64__)
    __asm__ volatile(".inst 0x00000000");   /* udf #0 */
#endif
}

DELIBERATE void sanitized_crash_breakpoint(void) {
#if defined(__x86_64__)
    __asm__ volatile("int3");
#elif defined(__aarch64__)
    __asm__ volatile("brk #0");
#endif
}

static volatile char *g_bus_page;
DELIBERATE void sanitized_crash_bus(void) { g_bus_page[4096] = 1; }   /* past the end of the file */

NOINLINE void sanitized_crash_assert(void) { assert(g_sink == 12345 && "sanitized assertion"); }

NOINLINE void sanitized_crash_abort(void) { abort(); }

/* Deep recursion until the stack runs out (bounded only so that the compiler sees an end). */
NOINLINE int sanitized_recurse(int depth) {
    volatile char frame[256];
    frame[depth % 256] = (char)depth;
    if (depth == INT32_MAX) return 0;
    return sanitized_recurse(depth + 1) + frame[(depth + 1) % 256];
}
NOINLINE void sanitized_crash_stack_overflow(void) { g_sink += sanitized_recurse(0); }

static void child_null(void) { install(0, 0); sanitized_level1(sanitized_crash_null); }

/* Installed first with another directory, app, run and a crash-time uploader (as an app starting
 * capture itself), then reconfigured in place with the usual configuration (as the reporter
 * adopting it): the record is the usual one, in the usual directory, and no uploader starts. */
static void child_reconfigured(void) {
    char first[4096];
    snprintf(first, sizeof first, "%s-first", g_dir);
    if (mkdir(first, 0700) != 0) _exit(91);
    const char *arguments[] = { "never-run", 0 };
    cc_config_t config = { .directory = first, .app_name = "first", .app_version = "0", .run_id = "run-first",
                           .uploader_path = "/bin/false", .uploader_arguments = arguments };
    int err = 0;
    if (cc_install(&config, &err) != CC_INSTALLED) _exit(90);
    cc_config_t usual = {
        .directory = g_dir, .app_name = APP_NAME, .app_version = APP_VERSION, .app_end_template = TEMPLATE, .run_id = RUN_ID,
    };
    if (cc_reconfigure(&usual, &err) != CC_INSTALLED) _exit(92);
    rmdir(first);   /* empty: nothing was written there */
    sanitized_level1(sanitized_crash_null);
}

static void child_read_only(void) {
    g_read_only = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    install(0, 0);
    sanitized_level1(sanitized_crash_read_only);
}

static void child_divide(void) { install(0, 0); sanitized_level1(sanitized_crash_divide); }
static void child_illegal(void) { install(0, 0); sanitized_level1(sanitized_crash_illegal); }
static void child_breakpoint(void) { install(0, 0); sanitized_level1(sanitized_crash_breakpoint); }

static void child_bus(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/../bus-XXXXXX", g_dir);
    int fd = mkstemp(path);
    if (fd < 0 || unlink(path) != 0 || ftruncate(fd, 8192) != 0) { perror("bus file"); _exit(91); }
    g_bus_page = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (g_bus_page == MAP_FAILED || ftruncate(fd, 0) != 0) { perror("bus mapping"); _exit(91); }
    install(0, 0);
    sanitized_level1(sanitized_crash_bus);
}

static void child_assert(void) { install(0, 0); sanitized_level1(sanitized_crash_assert); }
static void child_stack_overflow(void) { install(0, 0); sanitized_level1(sanitized_crash_stack_overflow); }

/* The Swift runtime's fatal-error message, as cc_install finds it (dlsym of this exported name),
 * and its report function, which appends as the runtime's does: each report a new allocation
 * holding the old text and then the new, the old never freed. Defined here, this program is the
 * runtime's image too: a trap in it is a trap on the runtime's fatal path (cc_swift_abi.h, 1a). */
static const char *_Atomic g_fatal_message;
const char *_Atomic *swift_getFatalErrorMessageBuffer(void);
const char *_Atomic *swift_getFatalErrorMessageBuffer(void) { return &g_fatal_message; }
void swift_reportError(uint32_t flags, const char *message);
void swift_reportError(uint32_t flags, const char *message) {
    (void)flags;
    const char *previous = atomic_load(&g_fatal_message);
    size_t old = previous ? strlen(previous) : 0, added = strlen(message);
    char *text = malloc(old + added + 1);
    if (previous) memcpy(text, previous, old);
    memcpy(text + old, message, added + 1);
    atomic_store(&g_fatal_message, text);
}
/* The reports a scenario made, kept reachable for LeakSanitizer (the runtime never frees them). */
static const char *g_reports_kept[8];
static void report(const char *message) {
    swift_reportError(0, message);
    for (size_t i = 0; i < sizeof g_reports_kept / sizeof g_reports_kept[0]; i++) {
        if (!g_reports_kept[i]) { g_reports_kept[i] = atomic_load(&g_fatal_message); break; }
    }
}

/* Two warnings, a look that counts (older than the settling time), a fatal report, a look that
 * came too late to count (between the report and its trap), then the trap: the message is the
 * fatal report alone, the warnings the two before it. */
static void child_runtime_warnings_then_trap(void) {
    install(0, 0);
    report("SWIFT TASK CONTINUATION MISUSE: one() leaked its continuation without resuming it.\n");
    report("SWIFT TASK CONTINUATION MISUSE: two() leaked its continuation without resuming it.\n");
    cc_note_runtime_reports();
    usleep(2 * CC__SWIFT_REPORTS_SETTLE_NS / 1000);
    report("sanitized.c:1: Fatal error: the crash's own\n");
    cc_note_runtime_reports();
    sanitized_level1(sanitized_crash_illegal);
}
/* A warning, then a fault the runtime never ends in: no message, the warning as a warning. */
static void child_runtime_warning_then_fault(void) {
    install(0, 0);
    report("SWIFT TASK CONTINUATION MISUSE: three() leaked its continuation without resuming it.\n");
    sanitized_level1(sanitized_crash_null);
}
/* More warnings than a record keeps (200 numbered lines of 65 bytes), looked at, then a fault: the
 * last 4096 bytes from a line's start, and a note of how many bytes before them were left out. */
#define MANY_WARNINGS 200
static void many_warnings(int look) {
    install(0, 0);
    for (int i = 0; i < MANY_WARNINGS; i++) {
        char line[80];
        snprintf(line, sizeof line, "SWIFT TASK CONTINUATION MISUSE: f%03d() leaked its continuation.\n", i);
        swift_reportError(0, line);   /* each a new allocation, kept reachable by the next: only the last is kept here */
    }
    g_reports_kept[0] = atomic_load(&g_fatal_message);
    if (look) cc_note_runtime_reports();
    sanitized_level1(sanitized_crash_null);
}
static void child_runtime_warnings_many(void) { many_warnings(1); }
/* The same with no look since install: the handler finds the text's end itself. */
static void child_runtime_warnings_many_unseen(void) { many_warnings(0); }

/* A warning seen by a look, then abort() called from the runtime's image after its report. */
static void child_runtime_warning_then_abort(void) {
    install(0, 0);
    report("SWIFT TASK CONTINUATION MISUSE: four() leaked its continuation without resuming it.\n");
    cc_breadcrumb(0, "a look", 6);
    usleep(2 * CC__SWIFT_REPORTS_SETTLE_NS / 1000);
    report("Could not cast value of type 'A' to 'B'.\n");
    sanitized_level1(sanitized_crash_abort);
}

#define LONG_MESSAGE 6000
#define LONG_TEMPLATE (CC_TEMPLATE_MAX - 1)

/* The fill of the long texts: position i holds this letter. */
static char filler(size_t i) { return (char)('a' + (i * 7) % 26); }

/* A fatal-error message longer than a record keeps, and the longest $AppEnd template there is,
 * set after install (cc_set_app_end_template). */
static void child_long_texts(void) {
    char *message = malloc(LONG_MESSAGE + 1);
    for (size_t i = 0; i < LONG_MESSAGE; i++) message[i] = filler(i);
    message[LONG_MESSAGE] = 0;
    install(0, 0);
    atomic_store(&g_fatal_message, message);   /* the runtime's fatal report, made just before its trap */
    static char template[LONG_TEMPLATE + 2];
    static const char head[] = "{\"id\":" CC_TEMPLATE_TRACK_ID ",\"pad\":\"";
    size_t n = strlen(head);
    memcpy(template, head, n);
    while (n < LONG_TEMPLATE - 2) { template[n] = filler(n); n++; }
    template[n++] = '"';
    template[n++] = '}';
    template[n] = 0;
    if (cc_set_app_end_template(template) != 0) _exit(92);
    template[n++] = ' ';   /* one byte more than there is room for: refused, the old one stays */
    template[n] = 0;
    if (cc_set_app_end_template(template) != -1) _exit(93);
    sanitized_level1(sanitized_crash_illegal);
}

/* 150 breadcrumbs through the 64-slot ring, some longer than a slot, then a crash. */
#define CRUMBS 150
static size_t crumb_text(int i, char *out, size_t cap) {
    int n = snprintf(out, cap, "crumb %d ", i);
    size_t length = i % 3 == 0 ? 300 : (size_t)n + (size_t)(i % 40);   /* every third is cut */
    for (size_t k = (size_t)n; k < length && k < cap; k++) out[k] = filler(k + (size_t)i);
    return length < cap ? length : cap;
}

static void child_breadcrumbs(void) {
    char text[400];
    cc_breadcrumb(1, "before install", 14);   /* the ring needs no install */
    install(0, 0);
    cc_breadcrumb(0, 0, 0);                   /* empty */
    for (int i = 0; i < CRUMBS; i++) cc_breadcrumb((uint32_t)(i % 7), text, crumb_text(i, text, sizeof text));
    sanitized_level1(sanitized_crash_null);
}

/* The app's scope (cc_set_scope): a thread publishes two scopes of different lengths, one after
 * the other, as fast as it can while this one crashes; the record holds one of them whole. */
#define SCOPE_SHORT 100
#define SCOPE_LONG 3000
static char g_scope_a[SCOPE_SHORT], g_scope_b[SCOPE_LONG];
static void scope_fill(char *scope, size_t length, char letter) {
    memcpy(scope, "tag\0phase\0", 10);
    memset(scope + 10, letter, length - 11);
    scope[length - 1] = 0;
}
static void *scope_churn(void *unused) {
    (void)unused;
    for (unsigned long i = 0;; i++) cc_set_scope(i & 1 ? g_scope_b : g_scope_a, i & 1 ? SCOPE_LONG : SCOPE_SHORT);
    return 0;
}

static void child_scope(void) {
    scope_fill(g_scope_a, SCOPE_SHORT, 'a');
    scope_fill(g_scope_b, SCOPE_LONG, 'b');
    cc_set_scope(g_scope_a, SCOPE_SHORT);   /* before install: kept */
    install(0, 0);
    pthread_t thread;
    pthread_create(&thread, 0, scope_churn, 0);
    usleep(20000);
    sanitized_level1(sanitized_crash_null);
}

/* Request contexts: four threads attach and detach contexts 20,000 times each at once (under the
 * sanitizers: the table's atomics and copies), leaving the table empty; then
 * 300 contexts are attached (the table holds 256: 44 are dropped), this thread attaches one of
 * its own, and crashes. Without the Swift runtime the layout stays unknown: the thread's own
 * context names the crash. */
#define CONTEXT_CHURN 20000
static void *context_churn(void *arg) {
    cc_sec_request_t context = { .key = (uint64_t)(uintptr_t)arg };
    for (int i = 0; i < CONTEXT_CHURN; i++) {
        snprintf(context.request_id, sizeof context.request_id, "churn-%lu-%d", (unsigned long)(uintptr_t)arg, i);
        uint64_t handle = cc_context_attach(&context);
        if (i % 3 == 0) cc_context_set_route(handle, "/churn/{n}", 9);
        cc_context_detach(handle);
        cc_context_detach(handle);   /* a stale handle changes nothing */
    }
    return 0;
}

static void child_request_contexts(void) {
    install(0, 0);
    pthread_t threads[4];
    for (uintptr_t i = 0; i < 4; i++) pthread_create(&threads[i], 0, context_churn, (void *)(i + 1));
    for (int i = 0; i < 4; i++) pthread_join(threads[i], 0);
    uint64_t first = 0;
    for (int i = 0; i < 300; i++) {
        cc_sec_request_t context = { .key = 0x1000 + (uint64_t)i * 16, .flags = CC_REQUEST_HAS_TRACE };
        snprintf(context.request_id, sizeof context.request_id, "req-%d", i);
        snprintf(context.method, sizeof context.method, "GET");
        for (int b = 0; b < 16; b++) context.trace_id[b] = (uint8_t)(i + b);
        for (int b = 0; b < 8; b++) context.span_id[b] = (uint8_t)(0x80 + b);
        uint64_t handle = cc_context_attach(&context);
        if (i == 0) first = handle;
    }
    cc_sec_request_t mine = { .flags = CC_REQUEST_THREAD | CC_REQUEST_HAS_TRACE };
    snprintf(mine.request_id, sizeof mine.request_id, "thread \"ctx\"\n");   /* escaped in the stderr line */
    for (int b = 0; b < 16; b++) mine.trace_id[b] = 0xAB;
    for (int b = 0; b < 8; b++) mine.span_id[b] = 0xCD;
    cc_context_attach(&mine);   /* the table is full: dropped too... */
    cc_context_detach(first);
    cc_context_attach(&mine);   /* ... and attached once a slot is free */
    sanitized_level1(sanitized_crash_null);
}

/* The container's termination message: a file there before install (as the kubelet makes it),
 * holding more than the message will; a request attached to this thread; a crash. */
static void termination_path(const char *dir, char *out, size_t cap) { snprintf(out, cap, "%s-termination-log", dir); }
static void child_termination_message(void) {
    char path[4096];
    termination_path(g_dir, path, sizeof path);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 5000; i++) fputc('x', f);
    fclose(f);
    setenv("CRASHCAPTURE_TERMINATION_LOG", path, 1);
    install(0, 0);
    cc_sec_request_t mine = { .flags = CC_REQUEST_THREAD | CC_REQUEST_HAS_TRACE };
    snprintf(mine.request_id, sizeof mine.request_id, "req-7");
    snprintf(mine.method, sizeof mine.method, "GET");
    snprintf(mine.route, sizeof mine.route, "/orders/{id}");
    snprintf(mine.path, sizeof mine.path, "/orders/secret-42");
    for (int b = 0; b < 16; b++) mine.trace_id[b] = (uint8_t)b;
    cc_context_attach(&mine);
    sanitized_level1(sanitized_crash_null);
}
/* No such file: none is made. */
static void child_termination_absent(void) {
    char path[4096];
    termination_path(g_dir, path, sizeof path);
    setenv("CRASHCAPTURE_TERMINATION_LOG", path, 1);
    install(0, 0);
    sanitized_level1(sanitized_crash_null);
}

/* Three threads: this one waits in pthread_join, one blocks every signal (the thread helper
 * stops it with ptrace), one crashes. */
static atomic_int g_blocker_ready;

NOINLINE void *sanitized_blocker_main(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, 0);
    pthread_setname_np(pthread_self(), "cc-blocker");
    atomic_store(&g_blocker_ready, 1);
    for (;;) pause();
    return 0;
}

NOINLINE void *sanitized_crasher_main(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "cc-crasher");
    while (!atomic_load(&g_blocker_ready)) sched_yield();
    sanitized_level1(sanitized_crash_read_only);
    return 0;
}

NOINLINE void sanitized_threads_main(void) {
    pthread_t blocker, crasher;
    pthread_setname_np(pthread_self(), "cc-main");
    g_read_only = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    install(0, 0);
    if (pthread_create(&blocker, 0, sanitized_blocker_main, 0) != 0) _exit(94);
    if (pthread_create(&crasher, 0, sanitized_crasher_main, 0) != 0) _exit(94);
    pthread_join(crasher, 0);
    g_sink++;
}
static void child_threads(void) { sanitized_threads_main(); }

/* A snapshot of the live process (cc_snapshot): two threads asleep in nanosleep, one of them
 * blocking every signal, are read by the thread helper and let go; neither sleep is cut short
 * (no signal handler ran in them), the process goes on and exits 0, and the record is whole. */
static double g_slept[2];

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

NOINLINE void *sanitized_sleeper_main(void *arg);
NOINLINE void *sanitized_sleeper_main(void *arg) {
    long index = (long)arg;
    if (index == 1) {
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, 0);
    }
    pthread_setname_np(pthread_self(), index ? "cc-sleep-block" : "cc-sleeper");
    double start = now_seconds();
    struct timespec one = { 1, 0 };
    if (nanosleep(&one, 0) != 0) g_slept[index] = -1;   /* EINTR: cut short */
    else g_slept[index] = now_seconds() - start;
    return 0;
}

static void child_snapshot(void) {
    install(0, 0);
    pthread_t sleepers[2];
    for (long i = 0; i < 2; i++) if (pthread_create(&sleepers[i], 0, sanitized_sleeper_main, (void *)i) != 0) _exit(94);
    struct timespec settle = { 0, 200 * 1000 * 1000 };
    nanosleep(&settle, 0);
    cc_sec_request_t context = { .flags = CC_REQUEST_THREAD };
    snprintf(context.request_id, sizeof context.request_id, "req-snapshot");
    uint64_t handle = cc_context_attach(&context);
    cc_snapshot_request_t request = { .kind = CC_KIND_HANG, .detector = CC_DETECTOR_HEARTBEAT, .threshold_ms = 1000,
                                      .observed_ms = 1500, .blocked_tid = 0, .name = "sanitizer-loop" };
    cc_snapshot_result_t result;
    int err = 0;
    int rc = cc_snapshot(&request, &result, &err);
    if (rc != 0) { fprintf(stderr, "cc_snapshot returned %d (errno %d)\n", rc, err); _exit(91); }
    if (result.threads_stopped != 2) { fprintf(stderr, "%u threads stopped, expected 2\n", result.threads_stopped); _exit(92); }
    for (int i = 0; i < 2; i++) pthread_join(sleepers[i], 0);
    for (int i = 0; i < 2; i++) {
        if (g_slept[i] < 0.99) { fprintf(stderr, "sleeper %d slept %.3f s: cut short\n", i, g_slept[i]); _exit(93); }
    }
    cc_context_detach(handle);
    _exit(0);
}

/* A memory record (the memory watch's): the caller's CC_SEC_MEMORY_WATCH right after the event,
 * byte for byte. */
static void child_memory_snapshot(void) {
    install(0, 0);
    cc_sec_memory_watch_t memory = { .usage_bytes = 300u << 20, .limit_bytes = 320u << 20, .growth_bytes = -5,
                                     .growth_seconds = 60, .flags = CC_MEMORY_V2 | CC_MEMORY_STAT, .anon_bytes = 7,
                                     .threads = 3, .threshold_percent = 90 };
    cc_snapshot_extra_t extra = { .type = CC_SEC_MEMORY_WATCH, .length = sizeof memory, .bytes = &memory };
    cc_snapshot_request_t request = { .kind = CC_KIND_MEMORY, .detector = CC_DETECTOR_MEMORY, .name = "memory",
                                      .extras = &extra, .extra_count = 1 };
    cc_snapshot_result_t result;
    int err = 0;
    if (cc_snapshot(&request, &result, &err) != 0) { fprintf(stderr, "cc_snapshot failed (errno %d)\n", err); _exit(91); }
    _exit(0);
}

/* Locks and their holders (cc_locks.c): two threads deadlocked on two normal mutexes taken in
 * opposite order, a reader behind a writer of an rwlock, a waiter on a priority-inheritance mutex,
 * one on a recursive mutex held twice, one in a condition variable. cc_lock_waits must name each
 * lock's kind and holder, and the condition variable none; the snapshot then carries two caller
 * sections in order (the lock waits second). */
static pthread_mutex_t g_lock_a = PTHREAD_MUTEX_INITIALIZER, g_lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_lock_pi, g_lock_recursive, g_lock_robust;
static pthread_rwlock_t g_rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t g_cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int32_t g_lock_tids[9];
static _Atomic int g_lock_stage, g_lock_pair;
static int g_lock_pipe[2];

static void *lock_thread(void *raw) {
    int role = (int)(intptr_t)raw;
    atomic_store(&g_lock_tids[role], cc_current_tid());
    char byte;
    switch (role) {
    case 0:   /* holds a, then wants b */
        pthread_mutex_lock(&g_lock_a);
        atomic_fetch_add(&g_lock_pair, 1);
        while (atomic_load(&g_lock_pair) < 2) usleep(1000);
        pthread_mutex_lock(&g_lock_b);
        break;
    case 1:   /* holds b, then wants a */
        pthread_mutex_lock(&g_lock_b);
        atomic_fetch_add(&g_lock_pair, 1);
        while (atomic_load(&g_lock_pair) < 2) usleep(1000);
        pthread_mutex_lock(&g_lock_a);
        break;
    case 2:   /* the rwlock's writer, the PI mutex's and the recursive mutex's holder: then blocks in read */
        pthread_rwlock_wrlock(&g_rwlock);
        pthread_mutex_lock(&g_lock_pi);
        pthread_mutex_lock(&g_lock_recursive);
        pthread_mutex_lock(&g_lock_recursive);
        pthread_mutex_lock(&g_lock_robust);
        atomic_fetch_add(&g_lock_stage, 10);
        while (read(g_lock_pipe[0], &byte, 1) < 0) {}
        break;
    case 3: pthread_rwlock_rdlock(&g_rwlock); break;
    case 4: pthread_mutex_lock(&g_lock_pi); break;
    case 5: pthread_mutex_lock(&g_lock_recursive); break;
    case 6:
        pthread_mutex_lock(&g_cond_mutex);
        for (;;) pthread_cond_wait(&g_cond, &g_cond_mutex);
    case 7: pthread_mutex_lock(&g_lock_robust); break;
    }
    return 0;
}

static const cc_lock_wait_t *wait_of(const cc_lock_wait_t *waits, uint32_t count, int32_t tid) {
    for (uint32_t i = 0; i < count; i++) if (waits[i].tid == tid) return &waits[i];
    return 0;
}

static void child_lock_waits(void) {
    install(0, 0);
    if (pipe(g_lock_pipe) != 0) _exit(90);
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&g_lock_pi, &attr);
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&g_lock_recursive, &attr);
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&g_lock_robust, &attr);
    pthread_t threads[8];
    pthread_create(&threads[2], 0, lock_thread, (void *)(intptr_t)2);
    while (atomic_load(&g_lock_stage) < 10) usleep(1000);
    for (int role = 0; role < 8; role++) if (role != 2) pthread_create(&threads[role], 0, lock_thread, (void *)(intptr_t)role);
    /* Until all six waiters sleep in futex(2). */
    cc_lock_wait_t waits[64];
    uint32_t count = 0;
    for (int tries = 0; tries < 1000; tries++) {
        count = cc_lock_waits(waits, 64, cc_current_tid());
        int all = 1;
        for (int role = 0; role < 8; role++) if (role != 2 && !wait_of(waits, count, atomic_load(&g_lock_tids[role]))) all = 0;
        if (all) break;
        usleep(5000);
    }
    int32_t t[8];
    for (int role = 0; role < 8; role++) t[role] = atomic_load(&g_lock_tids[role]);
    const cc_lock_wait_t *a = wait_of(waits, count, t[0]), *b = wait_of(waits, count, t[1]), *reader = wait_of(waits, count, t[3]),
                         *pi = wait_of(waits, count, t[4]), *recursive = wait_of(waits, count, t[5]), *cond = wait_of(waits, count, t[6]),
                         *robust = wait_of(waits, count, t[7]);
    if (!a || !b || !reader || !pi || !recursive || !cond || !robust) {
        fprintf(stderr, "lock waits: a waiter not found (%u)\n", count);
        for (int role = 0; role < 8; role++) {
            char path[64], text[256] = { 0 };
            snprintf(path, sizeof path, "/proc/self/task/%d/syscall", t[role]);
            int fd = open(path, O_RDONLY);
            if (fd >= 0) { if (read(fd, text, sizeof text - 1) < 0) text[0] = 0; close(fd); }
            fprintf(stderr, "  role %d tid %d: %s", role, t[role], text);
        }
        _exit(92);
    }
    if (a->kind != CC_LOCK_MUTEX || a->holder_tid != t[1] || a->lock_address != (uint64_t)(uintptr_t)&g_lock_b || a->flags) {
        fprintf(stderr, "lock waits: thread 0 kind %u holder %d (want %d)\n", a->kind, a->holder_tid, t[1]); _exit(93);
    }
    if (b->kind != CC_LOCK_MUTEX || b->holder_tid != t[0] || b->lock_address != (uint64_t)(uintptr_t)&g_lock_a) {
        fprintf(stderr, "lock waits: thread 1 kind %u holder %d (want %d)\n", b->kind, b->holder_tid, t[0]); _exit(94);
    }
    if (reader->kind != CC_LOCK_RWLOCK_WRITER || reader->holder_tid != t[2] || reader->lock_address != (uint64_t)(uintptr_t)&g_rwlock) {
        fprintf(stderr, "lock waits: the reader kind %u holder %d (want %d)\n", reader->kind, reader->holder_tid, t[2]); _exit(95);
    }
    if (pi->kind != CC_LOCK_MUTEX_PI || pi->holder_tid != t[2]) {
        fprintf(stderr, "lock waits: the PI waiter kind %u holder %d (want %d)\n", pi->kind, pi->holder_tid, t[2]); _exit(96);
    }
    if (recursive->kind != CC_LOCK_MUTEX || recursive->holder_tid != t[2] || recursive->words[1] != 2) {
        fprintf(stderr, "lock waits: the recursive waiter kind %u holder %d count %u\n", recursive->kind, recursive->holder_tid, recursive->words[1]); _exit(97);
    }
    if (robust->kind != CC_LOCK_MUTEX_ROBUST || robust->holder_tid != t[2] || robust->lock_address != (uint64_t)(uintptr_t)&g_lock_robust) {
        fprintf(stderr, "lock waits: the robust waiter kind %u holder %d (want %d)\n", robust->kind, robust->holder_tid, t[2]); _exit(99);
    }
    if (cond->kind != CC_LOCK_FUTEX || cond->holder_tid != 0) {
        fprintf(stderr, "lock waits: the condition variable kind %u holder %d\n", cond->kind, cond->holder_tid); _exit(98);
    }
    cc_sec_lock_waits_t header = { .count = count, .cycle_length = 0 };
    unsigned char section[sizeof header + sizeof waits];
    memcpy(section, &header, sizeof header);
    memcpy(section + sizeof header, waits, count * sizeof waits[0]);
    cc_sec_thread_states_t states = { 0 };
    cc_snapshot_extra_t extras[2] = {
        { .type = CC_SEC_THREAD_STATES, .length = sizeof states, .bytes = &states },
        { .type = CC_SEC_LOCK_WAITS, .length = (uint32_t)(sizeof header + count * sizeof waits[0]), .bytes = section },
    };
    cc_snapshot_request_t request = { .kind = CC_KIND_SNAPSHOT, .detector = CC_DETECTOR_NONE, .name = "locks",
                                      .extras = extras, .extra_count = 2 };
    cc_snapshot_result_t result;
    int err = 0;
    if (cc_snapshot(&request, &result, &err) != 0) { fprintf(stderr, "cc_snapshot failed (errno %d)\n", err); _exit(91); }
    _exit(0);
}

/* Stack samples (cc_sample_threads): a thread spinning in sanitized_spin_sample is stopped,
 * unwound and let go three times; each time its frames lead through that function, and it spins
 * on afterwards. A thread that does not exist is simply not read. */
static _Atomic int32_t g_spin_tid;
static _Atomic uint64_t g_spin_count;

__attribute__((noinline)) void sanitized_spin_sample(void);
__attribute__((noinline)) void sanitized_spin_sample(void) {
    for (;;) atomic_fetch_add(&g_spin_count, 1);
}

static void *spin_thread(void *raw) {
    (void)raw;
    atomic_store(&g_spin_tid, cc_current_tid());
    sanitized_spin_sample();
    return 0;
}

static void child_stack_samples(void) {
    install(0, 0);
    pthread_t thread;
    pthread_create(&thread, 0, spin_thread, 0);
    while (atomic_load(&g_spin_tid) == 0) usleep(1000);
    int32_t tids[2] = { atomic_load(&g_spin_tid), 999999 };
    for (int round = 0; round < 3; round++) {
        uint64_t frames[2 * 32] = { 0 };
        uint32_t counts[2] = { 7, 7 };
        if (cc_sample_threads(tids, 2, frames, 32, counts) != 0) { fprintf(stderr, "cc_sample_threads failed\n"); _exit(91); }
        if (counts[0] == 0 || counts[1] != 0) { fprintf(stderr, "sample %d: %u and %u frames\n", round, counts[0], counts[1]); _exit(92); }
        int found = 0;
        for (uint32_t f = 0; f < counts[0]; f++) {
            Dl_info info;
            if (dladdr((void *)(uintptr_t)(f == 0 ? frames[f] : frames[f] - 1), &info) && info.dli_sname &&
                strstr(info.dli_sname, "sanitized_spin_sample")) found = 1;
        }
        if (!found) { fprintf(stderr, "sample %d: no frame in sanitized_spin_sample (%u frames)\n", round, counts[0]); _exit(93); }
        uint64_t before = atomic_load(&g_spin_count);
        for (int waited = 0; atomic_load(&g_spin_count) == before; waited++) {
            if (waited == 500) { fprintf(stderr, "the thread did not spin on\n"); _exit(94); }   /* 5 s, a loaded machine */
            usleep(10000);
        }
    }
    _exit(0);
}

/* Chaining. A handler installed before CrashCapture runs first, as the kernel would have run it.
 * One gives the signal up (resets it to SIG_DFL and returns, as the Swift backtracer does): the
 * fault comes back and is recorded. One repairs the fault and returns: the program goes on, and
 * there is no record. */
static const char g_previous_ran[] = "previous handler ran\n";

static void previous_gives_up(int signo) {
    signal(signo, SIG_DFL);
    write(2, g_previous_ran, sizeof g_previous_ran - 1);
}

/* A plain handler (no SA_SIGINFO), on the interrupted stack or on the alternate one. */
static void child_chained_gives_up(int onstack) {
    struct sigaction action = { 0 };
    action.sa_handler = previous_gives_up;
    action.sa_flags = onstack ? SA_ONSTACK : 0;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, 0);
    install(0, 0);
    sanitized_level1(sanitized_crash_null);
}
static void child_chained_gives_up_own_stack(void) { child_chained_gives_up(0); }
static void child_chained_gives_up_alt_stack(void) { child_chained_gives_up(1); }

static volatile int *g_repairable;

static void previous_repairs(int signo, siginfo_t *info, void *context) {
    (void)signo; (void)context;
    if (info->si_addr != (void *)g_repairable) return;
    mprotect((void *)g_repairable, 4096, PROT_READ | PROT_WRITE);
    write(2, g_previous_ran, sizeof g_previous_ran - 1);
}

static void child_chained_repairs(int onstack) {
    struct sigaction action = { 0 };
    action.sa_sigaction = previous_repairs;
    action.sa_flags = SA_SIGINFO | (onstack ? SA_ONSTACK : 0);
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, 0);
    g_repairable = mmap(0, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    install(0, 0);
    *g_repairable = 7;                    /* faults once; the previous handler repairs it */
    if (*g_repairable != 7) _exit(95);
    cc_uninstall();
    exit(0);   /* not _exit: LeakSanitizer checks at exit */
}
static void child_chained_repairs_own_stack(void) { child_chained_repairs(0); }
static void child_chained_repairs_alt_stack(void) { child_chained_repairs(1); }

/* Four threads crashing at once, with a previous handler: one at a time enters it (it says how
 * many are inside, waits 20 ms so the others would pile in, gives up); the first crash is
 * recorded and the other three, which waited for their turn, are recorded as crashed too. */
static _Atomic int g_inside_previous;
static const char g_previous_alone[] = "previous handler alone\n";
static const char g_previous_crowded[] = "previous handler crowded\n";
static void previous_counts_and_gives_up(int signo) {
    int inside = atomic_fetch_add(&g_inside_previous, 1) + 1;
    if (inside == 1) write(2, g_previous_alone, sizeof g_previous_alone - 1);
    else write(2, g_previous_crowded, sizeof g_previous_crowded - 1);
    struct timespec wait = { 0, 20 * 1000000L };
    nanosleep(&wait, 0);
    atomic_fetch_sub(&g_inside_previous, 1);
    signal(signo, SIG_DFL);
}

static pthread_barrier_t g_crash_barrier;
static volatile int *g_concurrent_page;
NOINLINE void *sanitized_crash_at_barrier(void *arg) {
    (void)arg;
    pthread_barrier_wait(&g_crash_barrier);
    sanitized_level1(sanitized_crash_null);
    return 0;
}

static void child_chained_concurrent(void) {
    struct sigaction action = { 0 };
    action.sa_handler = previous_counts_and_gives_up;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, 0);
    install(0, 0);
    pthread_barrier_init(&g_crash_barrier, 0, 4);
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) if (pthread_create(&threads[i], 0, sanitized_crash_at_barrier, 0) != 0) _exit(94);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], 0);
}

/* The same with a previous handler that repairs: each thread's fault is repaired in its turn. */
NOINLINE void *sanitized_write_at_barrier(void *arg) {
    pthread_barrier_wait(&g_crash_barrier);
    g_concurrent_page[(intptr_t)arg] = 7;
    return 0;
}

static void previous_repairs_any(int signo, siginfo_t *info, void *context) {
    (void)signo; (void)context;
    uintptr_t page = (uintptr_t)info->si_addr & ~(uintptr_t)4095;
    if (page == (uintptr_t)g_concurrent_page) mprotect((void *)page, 4096, PROT_READ | PROT_WRITE);
}

static void child_chained_repairs_concurrent(void) {
    struct sigaction action = { 0 };
    action.sa_sigaction = previous_repairs_any;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, 0);
    g_concurrent_page = mmap(0, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    install(0, 0);
    pthread_barrier_init(&g_crash_barrier, 0, 4);
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) if (pthread_create(&threads[i], 0, sanitized_write_at_barrier, (void *)(intptr_t)i) != 0) _exit(94);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], 0);
    for (int i = 0; i < 4; i++) if (g_concurrent_page[i] != 7) _exit(95);
    cc_uninstall();
    exit(0);   /* not _exit: LeakSanitizer checks at exit */
}

/* The record directory removed after install: no record can be created, the summary goes to stderr. */
static void child_directory_removed(void) {
    install(0, 0);
    if (rmdir(g_dir) != 0) _exit(91);
    sanitized_level1(sanitized_crash_null);
}

/* The same with abort(): a signal the process sent itself. */
static void child_directory_removed_abort(void) {
    install(0, 0);
    if (rmdir(g_dir) != 0) _exit(91);
    sanitized_level1(sanitized_crash_abort);
}

/* Every name the record can take from now to at least a second after they are all made (3 s at
 * least) is a directory already: the final rename fails (EISDIR) and the whole record stays
 * ".partial". */
#define RENAME_WINDOW_MS 3000
static void child_rename_fails(void) {
    install(0, 0);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    char path[4400];
    /* On a loaded machine making the names takes a while: go on until they cover at least a
     * second beyond now. */
    for (long long i = 0;; i++) {
        if (i >= RENAME_WINDOW_MS) {
            clock_gettime(CLOCK_REALTIME, &now);
            if (ms + i > (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000 + 1000) break;
        }
        snprintf(path, sizeof path, "%s/" CC_RECORD_PREFIX "%lld-%d-%d" CC_RECORD_EXTENSION, g_dir, ms + i, getpid(), getpid());
        if (mkdir(path, 0700) != 0) _exit(92);
    }
    sanitized_level1(sanitized_crash_null);
}

/* The crash-time uploader (cc_uploader.c): a shell standing in, writing what it was given (its
 * environment's entry, its last argument: the record's name) beside the record directory. */
static void child_uploader(void) {
    const char *arguments[] = {
        "-c", "printf '%s %s' \"$CC_SANITIZER_UPLOAD\" \"$2\" > \"$1.uploaded.tmp\" && mv \"$1.uploaded.tmp\" \"$1.uploaded\"",
        "sh", g_dir, 0,
    };
    const char *environment[] = { "CC_SANITIZER_UPLOAD=given", 0 };
    cc_config_t config = {
        .directory = g_dir, .app_name = APP_NAME, .app_version = APP_VERSION, .app_end_template = TEMPLATE,
        .run_id = RUN_ID, .uploader_path = "/bin/sh", .uploader_arguments = arguments, .uploader_environment = environment,
    };
    int err = 0;
    if (cc_install(&config, &err) != CC_INSTALLED) _exit(90);
    sanitized_level1(sanitized_crash_null);
}

/* The test hooks: a fault inside the handler, a handler that hangs (the watchdog ends it). */
static void child_crash_in_handler(void) { install(CC_FLAG_TEST_CRASH_IN_HANDLER, 0); sanitized_level1(sanitized_crash_null); }
static void child_hang_in_handler(void) { install(CC_FLAG_TEST_HANG_IN_HANDLER, 1); sanitized_level1(sanitized_crash_abort); }

/* No crash: the API's other paths, ending in exit(0) (LeakSanitizer checks the exit). */
#define API_CHECK(cond)                                                                      \
    do {                                                                                     \
        if (!(cond)) { fprintf(stderr, "api: line %d: %s\n", __LINE__, #cond); _exit(96); }   \
    } while (0)

static void *api_breadcrumb_thread(void *arg) {
    char text[300];
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < 2000; i++) {
        int n = snprintf(text, sizeof text, "thread %d crumb %d ", id, i);
        size_t length = (size_t)n + (size_t)(i % 260);
        for (size_t k = (size_t)n; k < length && k < sizeof text; k++) text[k] = filler(k);
        cc_breadcrumb((uint32_t)(i % 7), text, length < sizeof text ? length : sizeof text);
    }
    return 0;
}

static int is_ours(int signo) {
    struct sigaction current;
    sigaction(signo, 0, &current);
    return (current.sa_flags & SA_SIGINFO) && (current.sa_flags & SA_ONSTACK) && current.sa_sigaction == cc__handler;
}

static void child_api(void) {
    int err = 0;
    char too_long[CC_TEMPLATE_MAX + 1];
    memset(too_long, 'x', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = 0;
    cc_config_t config = { .directory = g_dir, .app_name = APP_NAME, .app_version = APP_VERSION };

    /* Refusals: nothing is installed by any of them. */
    API_CHECK(cc_install(0, &err) == CC_ERR_ARGUMENT);
    cc_config_t bad = config;
    bad.directory = "";
    API_CHECK(cc_install(&bad, &err) == CC_ERR_ARGUMENT);
    bad = config;
    bad.app_end_template = too_long;
    API_CHECK(cc_install(&bad, &err) == CC_ERR_ARGUMENT);
    bad = config;
    bad.run_id = too_long + sizeof too_long - 65;   /* 64 bytes: one too many */
    API_CHECK(cc_install(&bad, &err) == CC_ERR_ARGUMENT);
    bad = config;
    bad.directory = "/nonexistent/cshims-sanitizer";
    API_CHECK(cc_install(&bad, &err) == CC_ERR_DIRECTORY && err == ENOENT);
    API_CHECK(!cc_is_installed() && cc_uninstall() == -1);
    API_CHECK(cc_set_app_end_template(too_long) == -1);
    API_CHECK(cc_set_scope(too_long, CC_SCOPE_MAX) == -1 && cc_set_scope(too_long, CC_SCOPE_MAX - 1) == 0 && cc_set_scope(0, 0) == 0);

    /* Install over a handler of the program's, twice, then uninstall: the program's is back. */
    struct sigaction previous = { 0 };
    previous.sa_handler = SIG_IGN;
    sigaction(SIGTRAP, &previous, 0);
    chmod(g_dir, 0755);
    API_CHECK(cc_install(&config, &err) == CC_INSTALLED);
    API_CHECK(cc_install(&config, &err) == CC_ALREADY_INSTALLED);
    API_CHECK(cc_is_installed());
    API_CHECK(strcmp(cc_record_directory(), g_dir) == 0);
    struct stat st;
    API_CHECK(stat(g_dir, &st) == 0 && (st.st_mode & 07777) == 0700);
    /* A shared directory (sticky, as /tmp) given by mistake is left as it is. */
    chmod(g_dir, 01777);
    API_CHECK(cc_reconfigure(&config, &err) == CC_INSTALLED);
    API_CHECK(stat(g_dir, &st) == 0 && (st.st_mode & 07777) == 01777);
    chmod(g_dir, 0700);
    int fatal[] = { SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTRAP };
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) API_CHECK(is_ours(fatal[i]));
    API_CHECK(cc_set_app_end_template(TEMPLATE) == 0 && cc_set_app_end_template(0) == 0);
    API_CHECK(cc_prepare_current_thread() == 0 && cc_prepare_current_thread() == 0);

    /* The ring from four threads at once (created through CrashCapture's pthread_create, each
     * with an alternate stack), laps and all. */
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) API_CHECK(pthread_create(&threads[i], 0, api_breadcrumb_thread, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < 4; i++) API_CHECK(pthread_join(threads[i], 0) == 0);
    cc_breadcrumb(3, 0, 0);
    /* Every slot whole (its sequence number even), none longer than a slot. Its number is its last
     * index's, unless a writer of an earlier lap was preempted mid-write and finished last: then
     * it is that lap's (the reader skips the slot, the ring's contract), at most one per other
     * writer. */
    uint64_t head = atomic_load(&cc__g.breadcrumb_head);
    API_CHECK(head == 4 * 2000 + 1);
    uint32_t lapped = 0;
    for (uint64_t index = head - CC__BREADCRUMB_SLOTS; index < head; index++) {
        const cc__breadcrumb_slot_t *slot = &cc__g.breadcrumbs[index % CC__BREADCRUMB_SLOTS];
        uint64_t seq = atomic_load(&slot->seq);
        API_CHECK(seq % 2 == 0 && seq <= index * 2 + 2 && (index * 2 + 2 - seq) % (2 * CC__BREADCRUMB_SLOTS) == 0 &&
                  slot->length <= CC__BREADCRUMB_TEXT && slot->level < 7);
        if (seq != index * 2 + 2) lapped++;
    }
    API_CHECK(lapped <= 3);
    API_CHECK(cc__g.breadcrumbs[(head - 1) % CC__BREADCRUMB_SLOTS].length == 0);

    /* Names and CRC-32 (against zlib's). */
    API_CHECK(strcmp(cc_signal_name(SIGSEGV), "SIGSEGV") == 0 && strcmp(cc_signal_name(SIGTRAP), "SIGTRAP") == 0);
    API_CHECK(cc_signal_name(0) == 0 && cc_signal_name(-1) == 0 && cc_signal_name(SIGRTMAX) == 0);
    unsigned char data[1031];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 131 + 7);
    for (size_t length = 0; length <= sizeof data; length += 103) {
        uint32_t expected = (uint32_t)crc32(0, data, (uInt)length);
        API_CHECK(cc_crc32(0, data, length) == expected);
        API_CHECK(cc_crc32(cc_crc32(0, data, length / 3), data + length / 3, length - length / 3) == expected);
    }
    /* Eight bytes at a time: every start alignment and every tail length, against zlib's. */
    for (size_t start = 0; start < 8; start++) {
        for (size_t length = 0; length <= 40; length++) {
            API_CHECK(cc_crc32(0, data + start, length) == (uint32_t)crc32(0, data + start, (uInt)length));
        }
    }

    API_CHECK(cc_uninstall() == 0 && cc_uninstall() == -1 && !cc_is_installed());
    struct sigaction after;
    sigaction(SIGTRAP, 0, &after);
    API_CHECK(!(after.sa_flags & SA_SIGINFO) && after.sa_handler == SIG_IGN);
    API_CHECK(!is_ours(SIGSEGV));
    /* And again: an uninstall leaves nothing behind that a second install trips on. */
    API_CHECK(cc_install(&config, &err) == CC_INSTALLED && cc_uninstall() == 0);
    exit(0);   /* not _exit: LeakSanitizer checks at exit */
}

/* ------------------------------------------------------------------------------------------ */
/* Reading a record back.                                                                       */

typedef struct {
    uint32_t type;
    uint32_t length;
    const unsigned char *payload;
} section_t;

typedef struct {
    unsigned char *data;
    size_t size;
    int partial;                /* the file is still "<name>.ccrec.partial" */
    section_t *sections;
    uint32_t count;
} record_t;

typedef struct {
    pid_t pid;
    char *stderr_text;
    const char *dir;            /* the child's record directory */
} outcome_t;

static char g_failure[1024];

static int fail(const char *format, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(g_failure, sizeof g_failure, format, args);
    va_end(args);
    return 0;
}

#define CHECK(cond, ...) do { if (!(cond)) return fail(__VA_ARGS__); } while (0)

static unsigned char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t cap = 1 << 16, used = 0;
    unsigned char *data = malloc(cap);
    size_t got;
    while ((got = fread(data + used, 1, cap - used, f)) > 0) {
        used += got;
        if (used == cap) data = realloc(data, cap *= 2);
    }
    fclose(f);
    *size = used;
    return data;
}

static uint32_t le32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* Parses the file: header, then whole sections, every CRC checked with zlib. */
static int parse_record(const char *path, record_t *r) {
    r->data = read_file(path, &r->size);
    CHECK(r->data, "cannot read %s", path);
    CHECK(r->size >= sizeof(cc_file_header_t), "record shorter than its header (%zu bytes)", r->size);
    cc_file_header_t header;
    memcpy(&header, r->data, sizeof header);
    CHECK(memcmp(header.magic, CC_RECORD_MAGIC, 8) == 0, "bad magic");
    CHECK(header.version == CC_RECORD_VERSION && header.header_size == sizeof header, "version %u, header size %u",
          header.version, header.header_size);
    CHECK(header.byte_order == 1 && header.pointer_size == 8, "byte order / pointer size");
#if defined(__x86_64__)
    CHECK(header.arch == CC_ARCH_X86_64, "arch %u", header.arch);
#endif
    CHECK(header.header_crc == (uint32_t)crc32(0, r->data, offsetof(cc_file_header_t, header_crc)), "header CRC");
    size_t at = sizeof header;
    r->sections = calloc(r->size / 12 + 1, sizeof *r->sections);
    while (at < r->size) {
        CHECK(r->size - at >= sizeof(cc_section_header_t) + 4, "torn section header at %zu", at);
        uint32_t type = le32(r->data + at), length = le32(r->data + at + 4);
        CHECK(length <= CC_SECTION_MAX_LENGTH && length <= r->size - at - 12, "section %u at %zu: length %u", type, at, length);
        uint32_t crc = le32(r->data + at + 8 + length);
        CHECK(crc == (uint32_t)crc32(0, r->data + at, 8 + length), "section %u at %zu: CRC", type, at);
        r->sections[r->count++] = (section_t){ type, length, r->data + at + 8 };
        at += 12 + (size_t)length;
    }
    return 1;
}

static void free_record(record_t *r) {
    free(r->data);
    free(r->sections);
    memset(r, 0, sizeof *r);
}

static const section_t *find(const record_t *r, uint32_t type, uint32_t nth) {
    for (uint32_t i = 0; i < r->count; i++) {
        if (r->sections[i].type == type && nth-- == 0) return &r->sections[i];
    }
    return 0;
}

static uint32_t count_of(const record_t *r, uint32_t type) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->count; i++) n += r->sections[i].type == type;
    return n;
}

/* The CC_SEC_STRING of `key`, as a NUL-terminated copy in out (empty when there is none). */
static int string_of(const record_t *r, uint32_t key, char *out, size_t cap) {
    out[0] = 0;
    for (uint32_t i = 0; i < r->count; i++) {
        const section_t *s = &r->sections[i];
        if (s->type != CC_SEC_STRING || s->length < 4 || le32(s->payload) != key) continue;
        size_t n = s->length - 4 < cap - 1 ? s->length - 4 : cap - 1;
        memcpy(out, s->payload + 4, n);
        out[n] = 0;
        return (int)(s->length - 4);
    }
    return -1;
}

/* The name of the function holding `pc` (a return address when not frame 0), "" if unknown. */
static const char *symbol_at(uint64_t pc, int frame0) {
    Dl_info info;
    if (pc == 0 || !dladdr((void *)(uintptr_t)(frame0 ? pc : pc - 1), &info) || !info.dli_sname) return "";
    return info.dli_sname;
}

typedef struct {
    cc_sec_thread_t head;
    const unsigned char *frames;   /* frame_count little-endian uint64_t, 4-byte aligned only */
} thread_t;

static thread_t thread_of(const section_t *s) {
    thread_t t;
    memcpy(&t.head, s->payload, sizeof t.head);
    t.frames = s->payload + sizeof t.head;
    return t;
}

static uint64_t frame(const thread_t *t, uint32_t i) {
    uint64_t pc;
    memcpy(&pc, t->frames + 8 * (size_t)i, sizeof pc);
    return pc;
}

/* The function of frame i: frame 0 of a context is the exact pc, the others return addresses. */
static const char *frame_name(const thread_t *t, uint32_t i) {
    return symbol_at(frame(t, i), i == 0 && (t->head.flags & CC_THREAD_FROM_CONTEXT));
}

static int has_frame(const thread_t *t, const char *name) {
    for (uint32_t i = 0; i < t->head.frame_count; i++) {
        if (strcmp(frame_name(t, i), name) == 0) return 1;
    }
    return 0;
}

static void frames_text(const thread_t *t, char *out, size_t cap) {
    size_t n = 0;
    out[0] = 0;
    for (uint32_t i = 0; i < t->head.frame_count && i < 12 && n < cap; i++) {
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? " < " : "", frame_name(t, i));
    }
}

/* "{...,"id":"<uuid v4>","time":<ms>,"duration":<s.mmm>,"unknown":""}" with the crash's values. */
static int check_app_end(const record_t *r, const cc_sec_process_t *process) {
    const section_t *s = find(r, CC_SEC_APP_END, 0);
    CHECK(s, "no $AppEnd section");
    char text[256];
    CHECK(s->length < sizeof text, "$AppEnd of %u bytes", s->length);
    memcpy(text, s->payload, s->length);
    text[s->length] = 0;
    char uuid[37] = "", tail[64] = "";
    unsigned long long ms = 0;
    unsigned seconds = 0, millis = 0;
    int end = 0;
    int got = sscanf(text, "{\"event\":\"$AppEnd\",\"id\":\"%36[0-9a-f-]\",\"time\":%llu,\"duration\":%u.%3u%63[^\n]%n",
                     uuid, &ms, &seconds, &millis, tail, &end);
    CHECK(got == 5 && (size_t)end == s->length, "$AppEnd is %s", text);
    CHECK(strcmp(tail, ",\"unknown\":\"\"}") == 0, "$AppEnd ends %s", tail);
    CHECK(strlen(uuid) == 36 && uuid[8] == '-' && uuid[14] == '4' && strchr("89ab", uuid[19]), "not a v4 UUID: %s", uuid);
    CHECK(ms == (unsigned long long)(process->crash_wall_ns / 1000000), "time %llu, crash at %lld ns", ms,
          (long long)process->crash_wall_ns);
    long long elapsed_ms = (process->crash_mono_ns - process->start_mono_ns) / 1000000;
    CHECK(seconds * 1000LL + millis == elapsed_ms, "duration %u.%03u, %lld ms elapsed", seconds, millis, elapsed_ms);
    return 1;
}

/* What every record holds, whatever the crash: the signal, the process, $AppEnd, the strings,
 * the registers, the crashed thread (frame 0 in `crash_function`, then the level chain), the
 * main executable's image, memory around the pc and the stack. */
typedef struct {
    int signo;
    const char *code_name;
    const char *crash_function;   /* frame 0 of the crashed thread, NULL: not checked */
    int own_app_end;              /* the scenario set its own template and checks $AppEnd itself */
    int overflow;                 /* a stack overflow: sp may be in the guard page, with no window from it */
} expect_t;

static int check_common(const record_t *r, const outcome_t *o, const expect_t *e) {
    const section_t *s = find(r, CC_SEC_CRASH, 0);
    CHECK(s && s == &r->sections[0] && s->length == sizeof(cc_sec_crash_t), "the first section is not the crash");
    cc_sec_crash_t crash;
    memcpy(&crash, s->payload, sizeof crash);
    CHECK(crash.signo == e->signo, "signal %d", crash.signo);
    CHECK(strcmp(crash.signal_name, cc_signal_name(e->signo)) == 0, "signal name %.16s", crash.signal_name);
    CHECK(!e->code_name || strcmp(crash.code_name, e->code_name) == 0, "code %d %.32s, expected %s", crash.code,
          crash.code_name, e->code_name);

    s = find(r, CC_SEC_PROCESS, 0);
    CHECK(s && s->length == sizeof(cc_sec_process_t), "no process section");
    cc_sec_process_t process;
    memcpy(&process, s->payload, sizeof process);
    CHECK(process.pid == o->pid && process.ppid == getpid() && process.uid == getuid(), "process pid %d ppid %d",
          process.pid, process.ppid);
    CHECK(process.start_wall_ns > 0 && process.crash_wall_ns >= process.start_wall_ns &&
          process.crash_mono_ns >= process.start_mono_ns, "clocks");
    if (!e->own_app_end && !check_app_end(r, &process)) return 0;

    char text[4200];
    CHECK(string_of(r, CC_STR_RUN_ID, text, sizeof text) >= 0 && strcmp(text, RUN_ID) == 0, "run id %s", text);
    if (r->partial) {   /* cut short: the rest came after the first checkpoint */
        CHECK(!find(r, CC_SEC_END, 0), "a \".partial\" file with an end section");
        return 1;
    }
    CHECK(string_of(r, CC_STR_APP_NAME, text, sizeof text) >= 0 && strcmp(text, APP_NAME) == 0, "app name %s", text);
    CHECK(string_of(r, CC_STR_APP_VERSION, text, sizeof text) >= 0 && strcmp(text, APP_VERSION) == 0, "version %s", text);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    CHECK(string_of(r, CC_STR_EXECUTABLE_PATH, text, sizeof text) >= 0 && strcmp(text, exe) == 0, "executable %s", text);
    CHECK(string_of(r, CC_STR_KERNEL, text, sizeof text) > 0 && strncmp(text, "Linux ", 6) == 0, "kernel %s", text);

    CHECK(find(r, CC_SEC_REGISTERS, 0), "no registers");
    s = find(r, CC_SEC_THREAD, 0);
    CHECK(s, "no thread");
    thread_t crashed = thread_of(s);
    CHECK(crashed.head.flags & CC_THREAD_CRASHED, "the first thread is not the crashed one");
    CHECK(crashed.head.flags & CC_THREAD_FROM_CONTEXT, "crashed thread not unwound from its context");
    CHECK(crashed.head.tid == process.tid, "crashed tid %d, process says %d", crashed.head.tid, process.tid);
    CHECK(crashed.head.frame_count >= 1 && s->length == sizeof crashed.head + crashed.head.frame_count * 8ull, "frames");
    char frames[1024];
    frames_text(&crashed, frames, sizeof frames);
    if (e->crash_function) {
        CHECK(strcmp(frame_name(&crashed, 0), e->crash_function) == 0, "frame 0 is not %s: %s",
              e->crash_function, frames);
        CHECK(has_frame(&crashed, "sanitized_level2") && has_frame(&crashed, "sanitized_level1"),
              "no level chain: %s", frames);
    }

    int main_image = 0, libc = 0;
    for (uint32_t i = 0; (s = find(r, CC_SEC_IMAGE, i)) != 0; i++) {
        cc_sec_image_t image;
        CHECK(s->length > sizeof image, "image without a path");
        memcpy(&image, s->payload, sizeof image);
        CHECK(image.build_id_length <= 32 && image.size > 0, "image %u: build-id of %u bytes, size %llu", i,
              image.build_id_length, (unsigned long long)image.size);
        const char *path = (const char *)s->payload + sizeof image;
        size_t path_length = s->length - sizeof image;
        if (image.flags & CC_IMAGE_MAIN_EXECUTABLE) {
            main_image++;
            CHECK(image.build_id_length >= 8, "main image build-id of %u bytes", image.build_id_length);
            CHECK(path_length == strlen(exe) && memcmp(path, exe, path_length) == 0, "main image path");
        }
        libc += memmem(path, path_length, "/libc.so", 8) != 0 && image.build_id_length >= 8;
    }
    CHECK(main_image == 1 && libc == 1, "the main image %d times, libc %d times", main_image, libc);
    int pc = 0, stack = 0;
    for (uint32_t i = 0; (s = find(r, CC_SEC_MEMORY, i)) != 0; i++) {
        cc_sec_memory_t memory;
        memcpy(&memory, s->payload, sizeof memory);
        pc += strcmp(memory.label, "pc") == 0 && s->length == sizeof memory + 128;
        stack += strcmp(memory.label, "stack") == 0 && s->length > sizeof memory;
    }
    CHECK(pc == 1 && (stack == 1 || (e->overflow && stack == 0)), "memory windows: pc %d, stack %d", pc, stack);

    const section_t *last = &r->sections[r->count - 1];
    CHECK(last->type == CC_SEC_END && last->length == sizeof(cc_sec_end_t), "the last section is not the end");
    cc_sec_end_t end;
    memcpy(&end, last->payload, sizeof end);
    CHECK(end.section_count == r->count - 1, "end counts %u sections, the file has %u", end.section_count, r->count - 1);
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* The scenarios' own checks.                                                                   */

static int check_crash(const record_t *r, const outcome_t *o, int signo, const char *code, const char *function) {
    expect_t e = { signo, code, function, 0, 0 };
    return check_common(r, o, &e);
}

static int no_fatal_message(const record_t *r) {
    char text[16];
    CHECK(string_of(r, CC_STR_FATAL_MESSAGE, text, sizeof text) < 0, "a fatal message nobody left");
    return 1;
}

static int check_null(const record_t *r, const outcome_t *o) {
    if (!check_crash(r, o, SIGSEGV, "SEGV_MAPERR", "sanitized_crash_null")) return 0;
    CHECK(!strstr(o->stderr_text, "CrashCapture:"), "a whole record, yet stderr has: %.300s", o->stderr_text);
    cc_sec_crash_t crash;
    memcpy(&crash, find(r, CC_SEC_CRASH, 0)->payload, sizeof crash);
    CHECK((crash.flags & CC_CRASH_FAULT_ADDRESS) && crash.fault_address == 0, "fault address");
    CHECK(count_of(r, CC_SEC_THREAD) == 1, "%u threads in a one-thread process", count_of(r, CC_SEC_THREAD));
    CHECK(count_of(r, CC_SEC_BREADCRUMB) == 0, "breadcrumbs nobody left");
    return no_fatal_message(r);
}

/* No record: the summary on stderr says what crashed, why nothing was recorded, and the top
 * frames as "image+0xoffset", which name (through the parent's dladdr: the child was forked,
 * not exec'd) the crash's function and the level chain. */
static int check_directory_removed(const record_t *r, const outcome_t *o) {
    (void)r;
    const char *text = o->stderr_text;
    char line[4300];
    snprintf(line, sizeof line, "CrashCapture: pid %d tid %d crashed: SIGSEGV (SEGV_MAPERR) at 0x0\n", o->pid, o->pid);
    CHECK(strstr(text, line), "no crash line %s in: %.600s", line, text);
    CHECK(strstr(text, "CrashCapture: record not written whole: creating its file failed: ENOENT: no such file or directory (errno 2)\n"),
          "no reason line in: %.600s", text);
    snprintf(line, sizeof line, "CrashCapture: no record file could be created in %s\n", o->dir);
    CHECK(strstr(text, line), "no directory line %s in: %.600s", line, text);
    Dl_info self;
    CHECK(dladdr((void *)(uintptr_t)&sanitized_level1, &self) && self.dli_fbase, "dladdr of this executable");
    const char *image = strrchr(self.dli_fname, '/') ? strrchr(self.dli_fname, '/') + 1 : self.dli_fname;
    static const char *const expected[] = { "sanitized_crash_null", "sanitized_level2", "sanitized_level1" };
    int lines = 0;
    for (const char *at = text; (at = strstr(at, "CrashCapture: ")) != 0; at++) lines++;
    CHECK(lines == 3 + 8, "%d summary lines, expected 3 and 8 frames: %.900s", lines, text);
    for (int i = 0; i < 3; i++) {
        snprintf(line, sizeof line, "CrashCapture: #%d %s+0x", i, image);
        const char *at = strstr(text, line);
        CHECK(at, "no %s in: %.900s", line, text);
        uint64_t offset = strtoull(at + strlen(line), 0, 16);
        const char *name = symbol_at((uint64_t)(uintptr_t)self.dli_fbase + offset, i == 0);
        CHECK(strcmp(name, expected[i]) == 0, "frame %d is %s, expected %s", i, name, expected[i]);
    }
    return 1;
}

/* A sent signal's summary names its sender instead of a fault address. */
static int check_directory_removed_abort(const record_t *r, const outcome_t *o) {
    (void)r;
    char line[200];
    snprintf(line, sizeof line, "CrashCapture: pid %d tid %d crashed: SIGABRT (SI_TKILL) sent by pid %d\n", o->pid, o->pid, o->pid);
    CHECK(strstr(o->stderr_text, line), "no crash line %s in: %.600s", line, o->stderr_text);
    CHECK(strstr(o->stderr_text, "CrashCapture: record not written whole: creating its file failed: ENOENT"),
          "no reason line in: %.600s", o->stderr_text);
    return 1;
}

static int ends_with(const char *s, const char *suffix);

/* The record is whole but could not take its final name: the summary says so and names the
 * ".partial" file, which holds the whole record, end section included. */
static int check_rename_fails(const record_t *unused, const outcome_t *o) {
    (void)unused;
    const char *text = o->stderr_text;
    CHECK(strstr(text, "CrashCapture: record not written whole: renaming it failed: EISDIR: is a directory (errno 21)\n"),
          "no reason line in: %.600s", text);
    char prefix[4300];
    snprintf(prefix, sizeof prefix, "CrashCapture: partial record: %s/" CC_RECORD_PREFIX, o->dir);
    const char *line = strstr(text, prefix);
    CHECK(line, "no %s in: %.600s", prefix, text);
    line += strlen("CrashCapture: partial record: ");
    char path[4300];
    size_t n = strcspn(line, "\n");
    CHECK(n < sizeof path, "partial record line too long");
    memcpy(path, line, n);
    path[n] = 0;
    CHECK(ends_with(path, CC_RECORD_PARTIAL_EXTENSION), "partial record %s", path);
    record_t r = { 0 };
    int ok = parse_record(path, &r) && check_crash(&r, o, SIGSEGV, "SEGV_MAPERR", "sanitized_crash_null");
    free_record(&r);
    return ok;
}

static int check_uploader(const record_t *r, const outcome_t *o) {
    if (!check_null(r, o)) return 0;
    char path[4200], record[4200];
    snprintf(path, sizeof path, "%s.uploaded", o->dir);
    size_t size = 0;
    unsigned char *text = 0;
    for (int i = 0; i < 1000 && !(text = read_file(path, &size)); i++) {   /* 10 s at most */
        struct timespec pause = { 0, 10 * 1000 * 1000 };
        nanosleep(&pause, 0);
    }
    CHECK(text != 0, "the uploader wrote nothing to %s", path);
    char given[512] = "";
    snprintf(given, sizeof given, "%.*s", (int)size, (const char *)text);
    free(text);
    const char *name = strchr(given, ' ');
    CHECK(strncmp(given, "given ", 6) == 0 && name, "the uploader was given \"%s\"", given);
    snprintf(record, sizeof record, "%s/%s", o->dir, name + 1);
    CHECK(ends_with(record, CC_RECORD_EXTENSION) && access(record, F_OK) == 0, "no record named %s", name + 1);
    return 1;
}

static int check_read_only(const record_t *r, const outcome_t *o) {
    return check_crash(r, o, SIGSEGV, "SEGV_ACCERR", "sanitized_crash_read_only");
}
static int check_divide(const record_t *r, const outcome_t *o) {
    return check_crash(r, o, SIGFPE, "FPE_INTDIV", "sanitized_crash_divide");
}
static int check_illegal(const record_t *r, const outcome_t *o) {
    return check_crash(r, o, SIGILL, "ILL_ILLOPN", "sanitized_crash_illegal");
}
static int check_breakpoint(const record_t *r, const outcome_t *o) {
    return check_crash(r, o, SIGTRAP, 0, "sanitized_crash_breakpoint");
}
static int check_bus(const record_t *r, const outcome_t *o) {
    return check_crash(r, o, SIGBUS, "BUS_ADRERR", "sanitized_crash_bus");
}

static int check_assert(const record_t *r, const outcome_t *o) {
    if (!check_crash(r, o, SIGABRT, "SI_TKILL", 0)) return 0;
    thread_t crashed = thread_of(find(r, CC_SEC_THREAD, 0));
    char frames[1024];
    frames_text(&crashed, frames, sizeof frames);
    CHECK(has_frame(&crashed, "sanitized_crash_assert") && has_frame(&crashed, "sanitized_level1"), "frames: %s", frames);
    char text[4200];
    int n = string_of(r, CC_STR_ABORT_MESSAGE, text, sizeof text);
    CHECK(n > 0 && strstr(text, "Assertion `") && strstr(text, "sanitized assertion"), "abort message: %s", text);
    CHECK(text[n - 1] != '\n', "the abort message keeps its newline");
    return no_fatal_message(r);
}

static int check_stack_overflow(const record_t *r, const outcome_t *o) {
    expect_t e = { SIGSEGV, "SEGV_MAPERR", "sanitized_recurse", 0, 1 };
    if (!check_common(r, o, &e)) return 0;
    thread_t crashed = thread_of(find(r, CC_SEC_THREAD, 0));
    CHECK(crashed.head.frame_count == CC__DEFAULT_FRAMES, "%u frames", crashed.head.frame_count);
    CHECK((crashed.head.flags & CC_THREAD_TRUNCATED) && crashed.head.omitted_frames > 1000, "omitted %u",
          crashed.head.omitted_frames);
    /* Innermost half: the recursion. Outermost half: the recursion, then where it began. */
    uint32_t top = CC__DEFAULT_FRAMES - CC__DEFAULT_FRAMES / 2;
    for (uint32_t i = 0; i < top; i++) {
        CHECK(strcmp(frame_name(&crashed, i), "sanitized_recurse") == 0, "frame %u: %s", i, frame_name(&crashed, i));
    }
    CHECK(has_frame(&crashed, "sanitized_crash_stack_overflow") && has_frame(&crashed, "main"),
          "the outermost frames lack the recursion's start");
    return 1;
}

static int check_long_texts(const record_t *r, const outcome_t *o) {
    expect_t e = { SIGILL, "ILL_ILLOPN", "sanitized_crash_illegal", 1, 0 };
    if (!check_common(r, o, &e)) return 0;
    /* The longest template: its 2-byte placeholder became a quoted UUID (38 bytes), the rest is
     * the template's own bytes, 36 further on. */
    const section_t *s = find(r, CC_SEC_APP_END, 0);
    CHECK(s, "no $AppEnd");
    static const char head[] = "{\"id\":\"";
    size_t expected = LONG_TEMPLATE + 36;
    CHECK(s->length == expected, "$AppEnd of %u bytes, expected %zu", s->length, expected);
    CHECK(memcmp(s->payload, head, sizeof head - 1) == 0 && memcmp(s->payload + s->length - 2, "\"}", 2) == 0,
          "$AppEnd's shape");
    size_t pad = sizeof head - 1 + 36 + strlen("\",\"pad\":\"");
    for (size_t i = pad; i < s->length - 2; i++) {
        CHECK(s->payload[i] == (unsigned char)filler(i - 36), "$AppEnd byte %zu", i);
    }
    char *text = malloc(LONG_MESSAGE + 1);
    int n = string_of(r, CC_STR_FATAL_MESSAGE, text, LONG_MESSAGE + 1);
    int ok = n == CC__MESSAGE_MAX;
    for (int i = 0; ok && i < n; i++) ok = text[i] == filler((size_t)i);
    free(text);
    CHECK(ok, "fatal message of %d bytes (expected the first %d of %d)", n, CC__MESSAGE_MAX, LONG_MESSAGE);
    return 1;
}

/* The runtime's text split into this crash's message and the warnings before it. */
static int runtime_texts(const record_t *r, const char *message, const char *warnings) {
    char text[1024];
    int n = string_of(r, CC_STR_FATAL_MESSAGE, text, sizeof text);
    if (message) CHECK(n > 0 && strcmp(text, message) == 0, "fatal message %d: \"%s\"", n, text);
    else CHECK(n < 0, "a fatal message where the runtime wrote none for this crash: \"%s\"", text);
    n = string_of(r, CC_STR_RUNTIME_WARNINGS, text, sizeof text);
    CHECK(n > 0 && strcmp(text, warnings) == 0, "runtime warnings %d: \"%s\"", n, text);
    return 1;
}
static int check_runtime_warnings_then_trap(const record_t *r, const outcome_t *o) {
    if (!check_crash(r, o, SIGILL, "ILL_ILLOPN", "sanitized_crash_illegal")) return 0;
    return runtime_texts(r, "sanitized.c:1: Fatal error: the crash's own",
                         "SWIFT TASK CONTINUATION MISUSE: one() leaked its continuation without resuming it.\n"
                         "SWIFT TASK CONTINUATION MISUSE: two() leaked its continuation without resuming it.");
}
static int check_runtime_warning_then_fault(const record_t *r, const outcome_t *o) {
    if (!check_crash(r, o, SIGSEGV, "SEGV_MAPERR", "sanitized_crash_null")) return 0;
    return runtime_texts(r, 0, "SWIFT TASK CONTINUATION MISUSE: three() leaked its continuation without resuming it.");
}
static int check_runtime_warnings_many(const record_t *r, const outcome_t *o) {
    if (!check_crash(r, o, SIGSEGV, "SEGV_MAPERR", "sanitized_crash_null")) return 0;
    char text[8192], note[256];
    int n = string_of(r, CC_STR_RUNTIME_WARNINGS, text, sizeof text);
    CHECK(n > 0 && n <= CC__MESSAGE_MAX, "%d bytes of warnings", n);
    CHECK(strncmp(text, "SWIFT TASK CONTINUATION MISUSE: f", 33) == 0, "not from a line's start: %.80s", text);
    static const char last[] = "f199() leaked its continuation.";
    CHECK(n > (int)sizeof last && strcmp(text + n - (sizeof last - 1), last) == 0, "the last warning is not last: %s", text + n - 80);
    int first = atoi(text + 33);
    size_t line = strlen("SWIFT TASK CONTINUATION MISUSE: f000() leaked its continuation.\n");
    CHECK((size_t)n == (MANY_WARNINGS - (size_t)first) * line - 1, "%d bytes from warning %d", n, first);
    int found = 0;
    for (uint32_t i = 0; i < r->count && !found; i++) {
        const section_t *s = &r->sections[i];
        if (s->type != CC_SEC_STRING || le32(s->payload) != CC_STR_NOTE) continue;
        size_t len = s->length - 4 < sizeof note - 1 ? s->length - 4 : sizeof note - 1;
        memcpy(note, s->payload + 4, len);
        note[len] = 0;
        char expected[128];
        snprintf(expected, sizeof expected, "runtime warnings: the first %zu bytes were left out", (size_t)first * line);
        found = strcmp(note, expected) == 0;
    }
    CHECK(found, "no note of the %zu bytes left out", (size_t)first * line);
    return no_fatal_message(r);
}

static int check_runtime_warning_then_abort(const record_t *r, const outcome_t *o) {
    if (!check_crash(r, o, SIGABRT, "SI_TKILL", 0)) return 0;
    return runtime_texts(r, "Could not cast value of type 'A' to 'B'.",
                         "SWIFT TASK CONTINUATION MISUSE: four() leaked its continuation without resuming it.");
}

static int check_termination_message(const record_t *r, const outcome_t *o) {
    if (!check_crash(r, o, SIGSEGV, "SEGV_MAPERR", "sanitized_crash_null")) return 0;
    char path[4096], text[8192] = { 0 };
    termination_path(o->dir, path, sizeof path);
    FILE *f = fopen(path, "r");
    CHECK(f, "the termination message file is gone");
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    CHECK(strncmp(text, "crashed: SIGSEGV (SEGV_MAPERR) at 0x0 in cshims-sanitizer-tests+0x", 66) == 0, "message: %s", text);
    CHECK(strstr(text, ", while serving GET /orders/{id} (request req-7, trace 000102030405060708090a0b0c0d0e0f); record "),
          "message: %s", text);
    CHECK(!strstr(text, "secret"), "the request's path left in the message: %s", text);
    CHECK(strstr(text, o->dir) && strstr(text, "/crash-") && n > 7 && strcmp(text + n - 7, ".ccrec\n") == 0, "record: %s", text);
    CHECK(n < 1024 && !strstr(text, "xxxx"), "%zu bytes: the old text was not cut away", n);
    return 1;
}
static int check_termination_absent(const record_t *r, const outcome_t *o) {
    if (!check_crash(r, o, SIGSEGV, "SEGV_MAPERR", "sanitized_crash_null")) return 0;
    char path[4096];
    termination_path(o->dir, path, sizeof path);
    CHECK(access(path, F_OK) != 0, "a termination message file was made: %s", path);
    return 1;
}

static int check_breadcrumbs(const record_t *r, const outcome_t *o) {
    if (!check_crash(r, o, SIGSEGV, "SEGV_MAPERR", "sanitized_crash_null")) return 0;
    CHECK(count_of(r, CC_SEC_BREADCRUMB) == CC__BREADCRUMB_SLOTS, "%u breadcrumbs", count_of(r, CC_SEC_BREADCRUMB));
    int64_t last_wall = 0;
    /* 152 left (one before install, one empty, 150 numbered): the last 64 are numbered 86...149. */
    for (uint32_t k = 0; k < CC__BREADCRUMB_SLOTS; k++) {
        const section_t *s = find(r, CC_SEC_BREADCRUMB, k);
        int i = CRUMBS - CC__BREADCRUMB_SLOTS + (int)k;
        char expected[400];
        size_t length = crumb_text(i, expected, sizeof expected);
        if (length > CC__BREADCRUMB_TEXT) length = CC__BREADCRUMB_TEXT;
        cc_sec_breadcrumb_t head;
        memcpy(&head, s->payload, sizeof head);
        CHECK(head.level == (uint32_t)(i % 7), "breadcrumb %d: level %u", i, head.level);
        CHECK(s->length == sizeof head + length && memcmp(s->payload + sizeof head, expected, length) == 0,
              "breadcrumb %d: %u bytes, expected %zu", i, s->length - (uint32_t)sizeof head, length);
        CHECK(head.wall_ns >= last_wall && head.wall_ns > 0, "breadcrumb %d: time", i);
        last_wall = head.wall_ns;
    }
    return 1;
}

static int check_scope(const record_t *r, const outcome_t *o) {
    if (!check_crash(r, o, SIGSEGV, "SEGV_MAPERR", "sanitized_crash_null")) return 0;
    CHECK(count_of(r, CC_SEC_SCOPE) == 1, "%u scope sections", count_of(r, CC_SEC_SCOPE));
    const section_t *s = find(r, CC_SEC_SCOPE, 0);
    scope_fill(g_scope_a, SCOPE_SHORT, 'a');
    scope_fill(g_scope_b, SCOPE_LONG, 'b');
    int whole = (s->length == SCOPE_SHORT && memcmp(s->payload, g_scope_a, SCOPE_SHORT) == 0) ||
                (s->length == SCOPE_LONG && memcmp(s->payload, g_scope_b, SCOPE_LONG) == 0);
    CHECK(whole, "the scope is neither one whole (%u bytes)", s->length);
    return 1;
}

static int check_request_contexts(const record_t *r, const outcome_t *o) {
    if (!check_crash(r, o, SIGSEGV, "SEGV_MAPERR", "sanitized_crash_null")) return 0;
    const section_t *s = find(r, CC_SEC_REQUESTS, 0);
    CHECK(s && s->length == sizeof(cc_sec_requests_t), "no requests section");
    cc_sec_requests_t head;
    memcpy(&head, s->payload, sizeof head);
    CHECK(head.status == CC_REQUESTS_UNKNOWN, "status %u, expected unknown (no Swift runtime)", head.status);
    CHECK(head.in_flight == 256 && head.dropped == 45, "%u in flight, %u dropped; expected 256 and 45", head.in_flight, head.dropped);
    CHECK(count_of(r, CC_SEC_REQUEST) == 1 + CC_REQUESTS_OTHERS_MAX, "%u request sections", count_of(r, CC_SEC_REQUEST));
    cc_sec_request_t crashed;
    memcpy(&crashed, find(r, CC_SEC_REQUEST, 0)->payload, sizeof crashed);
    CHECK((crashed.flags & (CC_REQUEST_CRASHED | CC_REQUEST_THREAD)) == (CC_REQUEST_CRASHED | CC_REQUEST_THREAD) &&
          strcmp(crashed.request_id, "thread \"ctx\"\n") == 0 && crashed.key == (uint64_t)o->pid,
          "the crashed request is %.64s (flags %x, key %lu)", crashed.request_id, crashed.flags, (unsigned long)crashed.key);
    int64_t newest = INT64_MAX;
    for (uint32_t k = 1; k <= CC_REQUESTS_OTHERS_MAX; k++) {
        cc_sec_request_t other;
        memcpy(&other, find(r, CC_SEC_REQUEST, k)->payload, sizeof other);
        int index = -1;
        sscanf(other.request_id, "req-%d", &index);
        CHECK(index >= 1 && index < 256 && !(other.flags & CC_REQUEST_CRASHED), "other %u: %.64s", k, other.request_id);
        CHECK(other.trace_id[0] == (uint8_t)index && other.trace_id[15] == (uint8_t)(index + 15), "other %u: trace of another request", k);
        CHECK(other.start_mono_ns <= newest, "other %u: not most recent first", k);
        newest = other.start_mono_ns;
    }
    char note[256];
    CHECK(string_of(r, CC_STR_NOTE, note, sizeof note) && strstr(note, "could not be told"), "no note on the unknown layout");
    CHECK(strstr(o->stderr_text, "crashcapture: {\"signal\":\"SIGSEGV\",\"code\":\"SEGV_MAPERR\"") != 0 &&
          strstr(o->stderr_text, "\"request_id\":\"thread \\\"ctx\\\"\\u000a\",\"trace_id\":\"abababababababababababababababab\",\"span_id\":\"cdcdcdcdcdcdcdcd\"}\n") != 0,
          "stderr crash line: %.600s", o->stderr_text);
    return 1;
}

static int check_threads(const record_t *r, const outcome_t *o) {
    if (!check_crash(r, o, SIGSEGV, "SEGV_ACCERR", "sanitized_crash_read_only")) return 0;
    CHECK(count_of(r, CC_SEC_THREAD) == 3, "%u threads, expected 3", count_of(r, CC_SEC_THREAD));
    thread_t crashed = thread_of(find(r, CC_SEC_THREAD, 0));
    char frames[1024];
    frames_text(&crashed, frames, sizeof frames);
    CHECK(crashed.head.tid != o->pid && strcmp(crashed.head.name, "cc-crasher") == 0, "crashed thread %d %.16s",
          crashed.head.tid, crashed.head.name);
    CHECK(has_frame(&crashed, "sanitized_crasher_main"), "crashed thread: %s", frames);
    int main_seen = 0, blocker_seen = 0;
    for (uint32_t i = 1; i < 3; i++) {
        thread_t t = thread_of(find(r, CC_SEC_THREAD, i));
        frames_text(&t, frames, sizeof frames);
        if (t.head.tid == o->pid) {
            main_seen = 1;
            CHECK(strcmp(t.head.name, "cc-main") == 0, "main thread named %.16s", t.head.name);
            CHECK((t.head.flags & (CC_THREAD_STOPPED | CC_THREAD_FROM_CONTEXT)) == (CC_THREAD_STOPPED | CC_THREAD_FROM_CONTEXT),
                  "main thread flags %#x", t.head.flags);
            CHECK(has_frame(&t, "sanitized_threads_main"), "main thread: %s", frames);
            int registers = 0;
            for (uint32_t k = 0; find(r, CC_SEC_THREAD_REGISTERS, k); k++) {
                cc_sec_thread_registers_t head;
                memcpy(&head, find(r, CC_SEC_THREAD_REGISTERS, k)->payload, sizeof head);
                registers += head.tid == o->pid;
            }
            CHECK(registers == 1, "main thread's registers %d times", registers);
        } else {
            blocker_seen = 1;
            CHECK(strcmp(t.head.name, "cc-blocker") == 0, "other thread named %.16s", t.head.name);
            if (t.head.flags & CC_THREAD_PTRACED) {
                CHECK(has_frame(&t, "sanitized_blocker_main"), "blocking thread: %s", frames);
            } else {
                /* Where ptrace is refused (a sandbox): listed, flagged, no frames. */
                CHECK(t.head.flags & CC_THREAD_PTRACE_REFUSED, "blocking thread flags %#x", t.head.flags);
            }
        }
    }
    CHECK(main_seen && blocker_seen, "threads: main %d, blocker %d", main_seen, blocker_seen);
    return 1;
}

static int check_chained_gives_up(const record_t *r, const outcome_t *o) {
    const char *first = strstr(o->stderr_text, g_previous_ran);
    CHECK(first && !strstr(first + 1, g_previous_ran), "the previous handler ran %s", first ? "twice" : "never");
    return check_crash(r, o, SIGSEGV, "SEGV_MAPERR", "sanitized_crash_null");
}

static int check_chained_concurrent(const record_t *r, const outcome_t *o) {
    const char *first = strstr(o->stderr_text, g_previous_alone);
    CHECK(first && !strstr(first + 1, g_previous_alone), "the previous handler ran %s", first ? "more than once" : "never");
    CHECK(!strstr(o->stderr_text, g_previous_crowded), "two threads were inside the previous handler at once");
    if (!check_crash(r, o, SIGSEGV, "SEGV_MAPERR", "sanitized_crash_null")) return 0;
    uint32_t also = 0;
    for (uint32_t i = 1; find(r, CC_SEC_THREAD, i); i++) {
        thread_t t = thread_of(find(r, CC_SEC_THREAD, i));
        if (t.head.flags & CC_THREAD_ALSO_CRASHED) {
            also++;
            char frames[1024];
            frames_text(&t, frames, sizeof frames);
            CHECK(has_frame(&t, "sanitized_crash_at_barrier"), "a thread crashed too: %s", frames);
        }
    }
    CHECK(also == 3, "%u threads recorded as crashed too, expected 3", also);
    return 1;
}

static int check_chained_repairs(const record_t *r, const outcome_t *o) {
    (void)r;
    const char *first = strstr(o->stderr_text, g_previous_ran);
    CHECK(first && !strstr(first + 1, g_previous_ran), "the previous handler ran %s", first ? "twice" : "never");
    return 1;
}

static int check_crash_in_handler(const record_t *r, const outcome_t *o) {
    /* Cut by the fault after the registers: what the first checkpoint flushed, and no more. */
    expect_t e = { SIGSEGV, "SEGV_MAPERR", 0, 0, 0 };
    if (!check_common(r, o, &e)) return 0;
    CHECK(r->count == 4 && r->sections[2].type == CC_SEC_APP_END && r->sections[3].type == CC_SEC_STRING,
          "%u sections (expected crash, process, $AppEnd, run id)", r->count);
    return 1;
}

/* Ended by the watchdog after a second, where the first checkpoint had left it. */
static int check_hang_in_handler(const record_t *r, const outcome_t *o) {
    expect_t e = { SIGABRT, "SI_TKILL", 0, 0, 0 };
    if (!check_common(r, o, &e)) return 0;
    CHECK(r->count == 4, "%u sections (expected crash, process, $AppEnd, run id)", r->count);
    return 1;
}

static int check_snapshot(const record_t *r, const outcome_t *o) {
    const section_t *s = find(r, CC_SEC_EVENT, 0);
    CHECK(s && s == &r->sections[0] && s->length == sizeof(cc_sec_event_t), "the first section is not the event");
    cc_sec_event_t event;
    memcpy(&event, s->payload, sizeof event);
    CHECK(event.kind == CC_KIND_HANG && event.detector == CC_DETECTOR_HEARTBEAT, "event %u/%u", event.kind, event.detector);
    CHECK(strcmp(event.name, "sanitizer-loop") == 0 && event.threshold_ms == 1000 && event.observed_ms == 1500, "event %.64s", event.name);
    CHECK(event.threads_stopped == 2 && event.stopped_microseconds > 0, "%u threads stopped for %u us", event.threads_stopped,
          event.stopped_microseconds);
    CHECK(count_of(r, CC_SEC_CRASH) == 0 && count_of(r, CC_SEC_APP_END) == 0, "a crash section or $AppEnd in a snapshot");
    CHECK(count_of(r, CC_SEC_END) == 1, "no end section");
    CHECK(count_of(r, CC_SEC_REQUEST) == 1, "%u requests", count_of(r, CC_SEC_REQUEST));
    int sleepers = 0;
    for (uint32_t i = 0; find(r, CC_SEC_THREAD, i); i++) {
        thread_t t = thread_of(find(r, CC_SEC_THREAD, i));
        char frames[1024];
        frames_text(&t, frames, sizeof frames);
        CHECK(t.head.tid != o->pid, "the writing thread is in its own record");
        if (strncmp(t.head.name, "cc-sleep", 8) == 0) {
            sleepers++;
            CHECK(t.head.flags & CC_THREAD_PTRACED, "%.16s not read by the helper (flags %#x)", t.head.name, t.head.flags);
            CHECK(has_frame(&t, "sanitized_sleeper_main"), "%.16s: %s", t.head.name, frames);
        }
    }
    CHECK(sleepers == 2, "%d sleeping threads in the record", sleepers);
    return 1;
}

static int check_memory_snapshot(const record_t *r, const outcome_t *o) {
    (void)o;
    const section_t *event = find(r, CC_SEC_EVENT, 0), *memory = find(r, CC_SEC_MEMORY_WATCH, 0);
    CHECK(event && event == &r->sections[0], "the first section is not the event");
    CHECK(memory && memory == &r->sections[1] && memory->length == sizeof(cc_sec_memory_watch_t), "the memory watch is not second, whole");
    cc_sec_memory_watch_t read;
    memcpy(&read, memory->payload, sizeof read);
    CHECK(read.usage_bytes == 300u << 20 && read.limit_bytes == 320u << 20 && read.growth_bytes == -5 && read.anon_bytes == 7
          && read.threads == 3 && read.threshold_percent == 90, "the memory watch's bytes changed");
    CHECK(count_of(r, CC_SEC_MEMORY_WATCH) == 1 && count_of(r, CC_SEC_END) == 1, "sections");
    return 1;
}

static int check_lock_waits(const record_t *r, const outcome_t *o) {
    (void)o;
    const section_t *states = find(r, CC_SEC_THREAD_STATES, 0), *locks = find(r, CC_SEC_LOCK_WAITS, 0);
    CHECK(states == &r->sections[1] && locks == &r->sections[2], "the caller's two sections are not second and third");
    cc_sec_lock_waits_t header;
    CHECK(locks->length >= sizeof header, "lock waits cut short");
    memcpy(&header, locks->payload, sizeof header);
    CHECK(header.count >= 7 && locks->length == sizeof header + header.count * sizeof(cc_lock_wait_t), "lock waits: %u entries in %u bytes",
          header.count, locks->length);
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Running them.                                                                                */

enum { NO_RECORD, COMPLETE, PARTIAL, CHECKED_BY_SCENARIO /* the check finds the record itself */ };

typedef struct {
    const char *name;
    void (*child)(void);
    int signo;                  /* the signal the child dies of; 0: it exits 0 */
    int record;                 /* what it leaves in its directory */
    int (*check)(const record_t *, const outcome_t *);
} scenario_t;

static const scenario_t g_scenarios[] = {
    { "null-dereference", child_null, SIGSEGV, COMPLETE, check_null },
    { "reconfigured", child_reconfigured, SIGSEGV, COMPLETE, check_null },
    { "read-only-write", child_read_only, SIGSEGV, COMPLETE, check_read_only },
    { "divide-by-zero", child_divide, SIGFPE, COMPLETE, check_divide },
    { "illegal-instruction", child_illegal, SIGILL, COMPLETE, check_illegal },
    { "breakpoint", child_breakpoint, SIGTRAP, COMPLETE, check_breakpoint },
    { "bus-error", child_bus, SIGBUS, COMPLETE, check_bus },
    { "assert", child_assert, SIGABRT, COMPLETE, check_assert },
    { "stack-overflow", child_stack_overflow, SIGSEGV, COMPLETE, check_stack_overflow },
    { "long-texts", child_long_texts, SIGILL, COMPLETE, check_long_texts },
    { "runtime-warnings-then-trap", child_runtime_warnings_then_trap, SIGILL, COMPLETE, check_runtime_warnings_then_trap },
    { "runtime-warning-then-fault", child_runtime_warning_then_fault, SIGSEGV, COMPLETE, check_runtime_warning_then_fault },
    { "runtime-warning-then-abort", child_runtime_warning_then_abort, SIGABRT, COMPLETE, check_runtime_warning_then_abort },
    { "runtime-warnings-many", child_runtime_warnings_many, SIGSEGV, COMPLETE, check_runtime_warnings_many },
    { "runtime-warnings-many-unseen", child_runtime_warnings_many_unseen, SIGSEGV, COMPLETE, check_runtime_warnings_many },
    { "breadcrumb-ring", child_breadcrumbs, SIGSEGV, COMPLETE, check_breadcrumbs },
    { "threads", child_threads, SIGSEGV, COMPLETE, check_threads },
    { "chained-gives-up", child_chained_gives_up_own_stack, SIGSEGV, COMPLETE, check_chained_gives_up },
    { "chained-gives-up-onstack", child_chained_gives_up_alt_stack, SIGSEGV, COMPLETE, check_chained_gives_up },
    { "chained-repairs", child_chained_repairs_own_stack, 0, NO_RECORD, check_chained_repairs },
    { "chained-repairs-onstack", child_chained_repairs_alt_stack, 0, NO_RECORD, check_chained_repairs },
    { "chained-concurrent", child_chained_concurrent, SIGSEGV, COMPLETE, check_chained_concurrent },
    { "chained-repairs-concurrent", child_chained_repairs_concurrent, 0, NO_RECORD, 0 },
    { "directory-removed", child_directory_removed, SIGSEGV, NO_RECORD, check_directory_removed },
    { "directory-removed-abort", child_directory_removed_abort, SIGABRT, NO_RECORD, check_directory_removed_abort },
    { "rename-fails", child_rename_fails, SIGSEGV, CHECKED_BY_SCENARIO, check_rename_fails },
    { "crash-in-handler", child_crash_in_handler, SIGSEGV, PARTIAL, check_crash_in_handler },
    { "watchdog", child_hang_in_handler, SIGABRT, PARTIAL, check_hang_in_handler },
    { "api", child_api, 0, NO_RECORD, 0 },
    { "crash-time-uploader", child_uploader, SIGSEGV, COMPLETE, check_uploader },
    { "request-contexts", child_request_contexts, SIGSEGV, COMPLETE, check_request_contexts },
    { "termination-message", child_termination_message, SIGSEGV, COMPLETE, check_termination_message },
    { "termination-message-absent", child_termination_absent, SIGSEGV, COMPLETE, check_termination_absent },
    { "scope", child_scope, SIGSEGV, COMPLETE, check_scope },
    { "snapshot", child_snapshot, 0, COMPLETE, check_snapshot },
    { "memory-snapshot", child_memory_snapshot, 0, COMPLETE, check_memory_snapshot },
    { "lock-waits", child_lock_waits, 0, COMPLETE, check_lock_waits },
    { "stack-samples", child_stack_samples, 0, NO_RECORD, 0 },
};

/* What a sanitizer prints when it finds something: "==1234==ERROR: AddressSanitizer: ...",
 * "ERROR: LeakSanitizer: ...", "x.c:12:3: runtime error: ...", "SUMMARY: UndefinedBehaviorSanitizer: ...",
 * and ASan's warnings ("WARNING: AddressSanitizer failed to ..."). */
static int sanitizer_report(const char *text) {
    return strstr(text, "Sanitizer: ") != 0 || strstr(text, "runtime error:") != 0 ||
           strstr(text, "WARNING: AddressSanitizer") != 0;
}

static char *slurp_text(const char *path) {
    size_t size = 0;
    unsigned char *data = read_file(path, &size);
    if (!data) return calloc(1, 1);
    data = realloc(data, size + 1);
    data[size] = 0;
    return (char *)data;
}

/* The one record file in dir (its path in out); 0 when there is none or more than one. */
static int find_record(const char *dir, char *out, size_t cap, int *count) {
    DIR *d = opendir(dir);
    *count = 0;
    if (!d) return 0;
    struct dirent *entry;
    while ((entry = readdir(d)) != 0) {
        if (entry->d_name[0] == '.') continue;
        (*count)++;
        snprintf(out, cap, "%s/%s", dir, entry->d_name);
    }
    closedir(d);
    return *count == 1;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int run_scenario(const scenario_t *sc, const char *base, double *seconds) {
    char dir[4096], err_path[4096];
    snprintf(dir, sizeof dir, "%s/%s", base, sc->name);
    snprintf(err_path, sizeof err_path, "%s/%s.stderr", base, sc->name);
    if (mkdir(dir, 0700) != 0) return fail("mkdir %s: %s", dir, strerror(errno));
    int err_fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (err_fd < 0) return fail("open %s: %s", err_path, strerror(errno));
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    fflush(0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(err_fd, 2);
        g_dir = dir;
        sc->child();
        _exit(97);   /* a crash scenario that did not crash */
    }
    close(err_fd);
    if (pid < 0) return fail("fork: %s", strerror(errno));
    int status = 0;
    for (;;) {   /* 60 s at most: the watchdog scenario takes one */
        pid_t got = waitpid(pid, &status, WNOHANG);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (got == pid) break;
        if (now.tv_sec - start.tv_sec > 60) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return fail("timed out");
        }
        struct timespec pause = { 0, 5 * 1000 * 1000 };
        nanosleep(&pause, 0);
    }
    *seconds = (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9;

    outcome_t outcome = { .pid = pid, .stderr_text = slurp_text(err_path), .dir = dir };
    int ok = 0;
    record_t record = { 0 };
    char path[4096] = "";
    int files = 0;
    if (sanitizer_report(outcome.stderr_text)) {
        fail("a sanitizer reported:\n%.900s", outcome.stderr_text);
    } else if (sc->signo ? !(WIFSIGNALED(status) && WTERMSIG(status) == sc->signo)
                         : !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        fail("expected %s, got %s %d; stderr:\n%.600s", sc->signo ? cc_signal_name(sc->signo) : "exit 0",
             WIFSIGNALED(status) ? "signal" : "exit status", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
             outcome.stderr_text);
    } else if (sc->record == CHECKED_BY_SCENARIO) {
        ok = sc->check(&record, &outcome);
    } else if (sc->record == NO_RECORD) {
        find_record(dir, path, sizeof path, &files);
        if (files != 0) fail("%d files left, expected no record", files);
        else ok = !sc->check || sc->check(&record, &outcome);
    } else if (!find_record(dir, path, sizeof path, &files)) {
        fail("%d files in the record directory, expected one record", files);
    } else if (!ends_with(path, sc->record == PARTIAL ? CC_RECORD_PARTIAL_EXTENSION : CC_RECORD_EXTENSION) ||
               (sc->record == COMPLETE && ends_with(path, CC_RECORD_PARTIAL_EXTENSION))) {
        fail("record file %s", path);
    } else if (parse_record(path, &record)) {
        record.partial = sc->record == PARTIAL;
        ok = sc->check(&record, &outcome);
    }
    free_record(&record);
    free(outcome.stderr_text);
    return ok;
}

int main(int argc, char **argv) {
    char base[4096];
    if (argc > 1) {
        snprintf(base, sizeof base, "%s", argv[1]);
        mkdir(base, 0700);
    } else {
        snprintf(base, sizeof base, "/tmp/cshims-sanitizer-XXXXXX");
        if (!mkdtemp(base)) { perror("mkdtemp"); return 2; }
    }
    int passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof g_scenarios / sizeof g_scenarios[0]; i++) {
        double seconds = 0;
        g_failure[0] = 0;
        if (run_scenario(&g_scenarios[i], base, &seconds)) {
            printf("ok     %-24s %.2fs\n", g_scenarios[i].name, seconds);
            passed++;
        } else {
            printf("FAILED %-24s %s\n", g_scenarios[i].name, g_failure);
            failed++;
        }
    }
    if (failed) printf("records and each child's stderr are in %s\n", base);
    else if (argc <= 1) {
        char command[4200];
        snprintf(command, sizeof command, "rm -rf '%s'", base);
        if (system(command) != 0) fprintf(stderr, "could not remove %s\n", base);
    }
    printf("cshims-sanitizers: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
