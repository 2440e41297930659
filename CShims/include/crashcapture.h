/* crashcapture.h — the C core's public API, imported by the Swift module CrashCapture. */
#ifndef CRASHCAPTURE_H
#define CRASHCAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include "cc_record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Results of cc_install. */
enum cc_install_result {
    CC_INSTALLED = 0,            /* handlers are in place */
    CC_ALREADY_INSTALLED = 1,    /* a previous call installed them; nothing changed */
    CC_ERR_SECURE = -1,          /* setuid/setgid (AT_SECURE) process: capture stays off */
    CC_ERR_DIRECTORY = -2,       /* the record directory could not be opened (errno in *err_errno) */
    CC_ERR_SIGACTION = -3,       /* a handler could not be installed; everything was rolled back */
    CC_ERR_ARGUMENT = -4,        /* a required field is missing or too long */
    CC_ERR_BUSY = -5,            /* another thread is installing or uninstalling right now */
    CC_ERR_NOT_INSTALLED = -6,   /* cc_reconfigure: nothing is installed */
};

/* Configuration flags. */
#define CC_FLAG_NO_THREAD_STACKS        0x1u  /* other threads are stopped but not listed or unwound */
#define CC_FLAG_TEST_CRASH_IN_HANDLER   0x2u  /* test hook: fault inside the handler after the first sections */
#define CC_FLAG_NO_ALTSTACK_NEW_THREADS 0x4u  /* do not give threads created later an alternate stack */
#define CC_FLAG_TEST_HANG_IN_HANDLER    0x8u  /* test hook: hang inside the handler (the watchdog must end it) */
#define CC_FLAG_NO_THREAD_HELPER        0x10u /* no ptrace helper for threads that block the stop signal */
#define CC_FLAG_TEST_SLOW_HELPER        0x20u /* test hook: the thread helper stalls after stopping its threads */
#define CC_FLAG_TEST_FAULT_IN_UNWINDER  0x40u /* test hook: fault inside the unwinder after the crashed thread's fourth frame */
#define CC_FLAG_TEST_FRAME_RECORDS_ONLY 0x80u /* test hook: every frame by its frame record, none by call-frame information */
#define CC_FLAG_NO_CRASH_LINE           0x100u /* no "crashcapture: {...}" line on stderr at a crash */
#define CC_FLAG_TEST_UNKNOWN_TASK_LAYOUT 0x200u /* test hook: the runtime's task layout is treated as unknown */
#define CC_FLAG_TEST_LIST_DESCRIPTORS   0x400u /* test hook: count descriptors by listing /proc/self/fd, as before Linux 6.2 */
#define CC_FLAG_TEST_IMAGES_FROM_MAPS   0x800u /* test hook: the images from /proc/self/maps alone, named as the kernel names them */

typedef struct {
    const char *directory;       /* existing directory for records; opened once at install */
    const char *app_name;        /* copied; at most 255 bytes */
    const char *app_version;     /* copied; at most 127 bytes */
    /* The compensating $AppEnd event, one JSON object rendered by the Swift event renderer,
     * with CC_TEMPLATE_* placeholders where the crash supplies a value. The C core knows no key
     * names: it copies the template and fills the placeholders. NULL or "": no $AppEnd in the
     * record (the next launch makes one from the record). At most CC_TEMPLATE_MAX - 1 bytes. */
    const char *app_end_template;
    /* This run's id (the reporter's run marker), written to the record as CC_STR_RUN_ID so the
     * next launch pairs the record with its run. Copied; at most 63 bytes; NULL or "": none. */
    const char *run_id;
    uint32_t max_frames;         /* crashing-thread frames to record; 0 = default (256) */
    uint32_t flags;              /* CC_FLAG_* */
    int thread_dump_signal;      /* signal used to ask other threads for stacks; 0 = SIGRTMAX-3 */
    uint32_t watchdog_seconds;   /* a handler still writing after this long ends the process; 0 = 10 */
    /* The crash-time uploader (cc_uploader.c): an executable the handler starts once the record
     * is whole, with `uploader_arguments` and then the record's file name as its arguments, and
     * `uploader_environment` ("KEY=value" entries, NULL-terminated) before this process's own
     * environment as it is at install (an entry of the same key there is left out). All copied
     * at install. NULL or "" path: none. */
    const char *uploader_path;
    const char *const *uploader_arguments;   /* NULL-terminated; NULL: none */
    const char *const *uploader_environment; /* NULL-terminated; NULL: none */
} cc_config_t;

/* Installs the handlers. Not async-signal-safe; call from ordinary code.
 * Returns an enum cc_install_result; on CC_ERR_DIRECTORY *err_errno holds errno. */
int cc_install(const cc_config_t *config, int *err_errno);

/* Applies a configuration to the installed handlers in place (the signal actions untouched):
 * record directory, app strings, run id, frames, flags, watchdog, crash-time uploader.
 * CC_ERR_NOT_INSTALLED when nothing is installed. Not async-signal-safe. */
int cc_reconfigure(const cc_config_t *config, int *err_errno);

/* Restores the actions that were in place before cc_install, where ours is still installed.
 * Returns 0, or -1 when nothing was installed. Not async-signal-safe. */
int cc_uninstall(void);

/* 1 while handlers are installed. */
int cc_is_installed(void);

/* Dies of SIGSEGV (a write through a null pointer): a setup check's throwaway child. */
void cc_verify_crash(void);

/* Placeholders of the $AppEnd template: a 0x01 byte and a letter, each standing for one whole
 * JSON value the handler writes at the crash. Rendered JSON never holds a raw 0x01 (control
 * characters are escaped in strings and appear nowhere else), so a placeholder cannot be
 * mistaken for content. An unknown letter is dropped. */
#define CC_TEMPLATE_TRACK_ID "\001T"  /* a fresh random (v4) UUID, as a JSON string */
#define CC_TEMPLATE_TIME_MS  "\001M"  /* the crash time, ms since the epoch, as a JSON number */
#define CC_TEMPLATE_DURATION "\001D"  /* seconds from install to the crash on the monotonic clock, "12.345" */
#define CC_TEMPLATE_MAX      16384     /* bytes, with the terminating NUL */

/* Replaces the $AppEnd template (after login/logout or new super properties). Lock-free:
 * a crash at any moment sees either the old or the new template, whole. Returns -1 if too
 * long (the old one stays). */
int cc_set_app_end_template(const char *app_end_template);

/* Replaces the app's scope: its tags, user and named contexts, `length` bytes in the layout of
 * CC_SEC_SCOPE (cc_record.h), which the handler copies whole into a record. Lock-free for the
 * handler: a crash sees the old scope or the new one. Calls are the caller's to serialise.
 * Works before install too. Returns -1 if length >= CC_SCOPE_MAX (the old one stays). */
int cc_set_scope(const void *scope, size_t length);

/* Leaves a breadcrumb in the lock-free ring the handler copies into the record.
 * Async-signal-safe and thread-safe; messages longer than the slot are cut. */
void cc_breadcrumb(uint32_t level, const char *message, size_t length);

/* Looks at the Swift runtime's message buffer, so that a crash later tells the reports made
 * before this call (the runtime's warnings) from its own fatal-error message. One load and a
 * compare while nothing new was reported. Async-signal-safe, lock-free, any thread. Breadcrumbs,
 * request contexts, snapshots and the watchers call it; a program may call it too. */
void cc_note_runtime_reports(void);

/* Gives the calling thread an alternate signal stack (keeping an existing one that is large
 * enough) so a stack overflow on it can still be recorded. Called for the installing thread
 * and, through the pthread_create wrapper, for every thread created after install. */
int cc_prepare_current_thread(void);

/* Where records are written: the directory given at install ("" before). */
const char *cc_record_directory(void);

/* What that directory holds (cc_record.h, cc_record_directory_usage), counted through the fd
 * install opened: a start needs no second walk of the path. Ordinary code; -1 when capture is
 * not installed or the directory cannot be read. */
int cc_installed_directory_usage(uint64_t *records, uint64_t *bytes);

/* Request contexts (cc_context.c; CrashContext in Swift). Lock-free, any thread, never block.
 * cc_context_attach copies `context` into the table of requests in flight (its key: the task it
 * is attached in, or with CC_REQUEST_THREAD the calling thread, filled in here; its start times
 * are set here) and returns a handle for the calls below, or 0 when the table is full. */
uint64_t cc_context_attach(const cc_sec_request_t *context);
/* The same in two steps, without a copy: begin claims a slot and hands its zeroed body (key,
 * flags and start times set) to be filled in place; commit publishes it. Detach frees it either
 * way. 0 and a NULL *body when the table is full. */
uint64_t cc_context_begin(uint64_t key, uint32_t flags, cc_sec_request_t **body);
void cc_context_commit(uint64_t handle);
/* The request ended: its slot is free again. A stale or zero handle changes nothing. */
void cc_context_detach(uint64_t handle);
/* Replaces the route of a context still attached (a router knows it only after matching). */
int cc_context_set_route(uint64_t handle, const char *route, size_t length);
/* Where the runtime keeps the current task and its task-local bindings (see cc_swift_abi.h): called
 * from inside a task, while the TaskLocal object `key` is bound to `value` in it. Probe offers
 * one more task to the search and returns the layout state (0 none, 1 probing, 2 known, 3
 * failed); check, once known, verifies both places with this task (a mismatch: failed). */
int cc_context_probe(uint64_t task, uint64_t key, uint64_t value);
int cc_context_check(uint64_t task, uint64_t key, uint64_t value);
int cc_context_layout(void);

/* One section a snapshot's caller adds (cc_snapshot_request_t.extras). */
typedef struct {
    uint32_t type;
    uint32_t length;
    const void *bytes;
} cc_snapshot_extra_t;
#define CC_SNAPSHOT_EXTRAS 4

/* The threads of this process but `exclude` that are blocked in a futex wait, at most `capacity`
 * of them, each with the lock it waits on and its holder where the lock's layout says
 * (cc_locks.c; CC_SEC_LOCK_WAITS's entries, cycle not marked). Ordinary code: reads /proc and
 * this process's memory with process_vm_readv; never from a signal handler. */
uint32_t cc_lock_waits(cc_lock_wait_t *out, uint32_t capacity, int32_t exclude);

/* A record of the live process (cc_snapshot.c): a hang a detector saw, or a snapshot asked for.
 * `kind` is CC_KIND_HANG or CC_KIND_SNAPSHOT, `detector` a CC_DETECTOR_* (cc_record.h), `name`
 * what fired or why (at most CC_EVENT_NAME_MAX - 1 bytes kept; NULL: none). */
typedef struct {
    uint32_t kind;
    uint32_t detector;
    uint64_t threshold_ms;
    uint64_t observed_ms;
    uint64_t request_key;
    int32_t blocked_tid;
    uint32_t stall_cpu_span_ms;      /* cc_sec_event_t's: the span the threads' stall CPU times cover (0: none) */
    const char *name;
    /* Sections of the caller's to write right after CC_SEC_EVENT, in order (a memory record's
     * CC_SEC_MEMORY_WATCH; a hang's CC_SEC_THREAD_STATES and CC_SEC_LOCK_WAITS): at most
     * CC_SNAPSHOT_EXTRAS, each at most 256 KiB; extras NULL or extra_count 0: none. */
    const cc_snapshot_extra_t *extras;
    uint32_t extra_count;
} cc_snapshot_request_t;

typedef struct {
    char file_name[128];             /* the record's file name in the record directory */
    uint32_t stopped_microseconds;   /* how long the other threads were stopped */
    uint32_t threads_stopped;        /* how many were stopped and read */
    uint32_t write_microseconds;     /* from the call to the record's end */
} cc_snapshot_result_t;

/* Writes a record of this running process without stopping it for more than the time it takes
 * to read its threads: every other thread is stopped with ptrace by the thread helper, read and
 * let go (no signal handler runs in any of them, so nothing sees EINTR), then the record is
 * written from the calling thread, which is not in it. Not async-signal-safe; call from an
 * ordinary thread (not from a signal handler). Returns 0, CC_ERR_NOT_INSTALLED, CC_ERR_BUSY
 * (a crash or another snapshot is being recorded), or CC_ERR_DIRECTORY (the file could not be
 * written; *err_errno holds errno, and no partial file is left behind). */
int cc_snapshot(const cc_snapshot_request_t *request, cc_snapshot_result_t *result, int *err_errno);

/* Stack samples of a computing hang's busy threads: each of `tids` (at most
 * CC_SAMPLE_THREADS_MAX) stopped with ptrace by the thread helper, unwound and let go, as a
 * snapshot reads threads (never the caller). Thread i's frames, innermost first, go to
 * frames[i * max_frames …], their number to frame_counts[i] (0: not read). Takes the crash path's
 * turn like cc_snapshot: 0, CC_ERR_NOT_INSTALLED or CC_ERR_BUSY. Not async-signal-safe. */
#define CC_SAMPLE_THREADS_MAX 8
int cc_sample_threads(const int32_t *tids, uint32_t count, uint64_t *frames, uint32_t max_frames, uint32_t *frame_counts);

/* The requests in flight (attached contexts) for longer than `age_ns`, and the oldest one's key
 * and age (either pointer may be NULL). Lock-free, any thread. */
uint32_t cc_requests_older_than(int64_t age_ns, uint64_t *oldest_key, int64_t *oldest_age_ns);

/* Replaces the container's termination message (Kubernetes' terminationMessagePath: the file
 * CRASHCAPTURE_TERMINATION_LOG names, else /dev/termination-log, when it existed as a regular
 * file at install; capture never creates it) with `length` bytes of `text` (at most 4096 kept).
 * The handler writes one at a crash; the hang watcher at a hang. 0, or -1 when there is no such
 * file or writing failed. Async-signal-safe. */
int cc_termination_message(const char *text, size_t length);

/* glibc's own counts for the memory watch (cc_resources.c): what malloc holds from the system,
 * hands out, holds free, holds in chunks of their own. 0, or -1 where there is no mallinfo2.
 * Ordinary code: takes the allocator's locks; never while other threads are stopped. */
int cc_malloc_info(uint64_t out[4]);

/* Each thread's CPU time (user + system, ns) from its per-thread CPU clock, at most `capacity`
 * (cc_resources.c): how many were read. Ordinary code: the hang watcher's tick. */
uint32_t cc_thread_cpu_times(int32_t *tids, uint64_t *cpu_ns, uint32_t capacity);

/* The thread id of the calling thread (gettid). */
int32_t cc_current_tid(void);
/* Names the calling thread (prctl PR_SET_NAME: at most 15 bytes kept). */
void cc_name_current_thread(const char *name);

/* Signal number → "SIGSEGV"; NULL when unknown. Async-signal-safe. */
const char *cc_signal_name(int signo);

/* CRC-32 (IEEE, as zlib) of len bytes, continuing from crc (start with 0). Async-signal-safe. */
uint32_t cc_crc32(uint32_t crc, const void *data, size_t len);

/* The guarded heap (heap/cc_guarded_heap.c): a pool of pages, each between guard pages, that one
 * allocation in `sample_rate` is placed in, so that an access past its end or after its free
 * faults at once and the crash record names the allocation (CC_SEC_GUARDED_HEAP). Only the
 * CrashCaptureGuardedHeap product routes the allocator here (its malloc, free, …); capture alone
 * never does. Starts once, before threads: `slots` pages (their guards beside them) reserved with
 * mmap, nothing allocated with malloc. 0 started, -1 not (errno: mmap's, or EINVAL). */
int cc_guarded_heap_start(uint32_t sample_rate, uint32_t slots);
/* Where the pool lies (both 0 until it started): a pointer p is the pool's when
 * p - cc_guarded_heap_base < cc_guarded_heap_size (unsigned). */
extern uintptr_t cc_guarded_heap_base;
extern uintptr_t cc_guarded_heap_size;
/* 1 in how many allocations to sample now (0: none). */
extern uint32_t cc_guarded_heap_rate;
/* A guarded allocation of `size` bytes aligned to `alignment` (a power of two, at most a page),
 * for an allocation the caller sampled, when a slot is free; NULL otherwise (the caller uses glibc's).
 * `zeroed`: its bytes are zero (calloc). Lock-free; never calls malloc. */
void *cc_guarded_heap_allocate(size_t size, size_t alignment, int zeroed);
/* Frees a pointer of the pool: its page is made inaccessible and kept so for as long as the pool
 * allows; a second free, or a pointer no allocation starts at, stops the process with abort()
 * after noting the error for the crash record (as glibc's own checks abort). */
void cc_guarded_heap_free(void *pointer);
/* The size asked for of a pool allocation (0 when it is not one, or freed). */
size_t cc_guarded_heap_size_of(const void *pointer);
/* Allocations sampled since the start, and slots in use now (both 0 when it never started). */
void cc_guarded_heap_counts(uint64_t *sampled, uint32_t *in_use);

#ifdef __cplusplus
}
#endif
#endif /* CRASHCAPTURE_H */
