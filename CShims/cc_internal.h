/* cc_internal.h — the C core's shared state and internal functions (cc__ prefix).
 *
 * The core by concern, one folder each (the headers every part includes are here, at the top):
 *   install/  installing, uninstalling and chaining to the previous action (cc_install.c,
 *             cc_chain.c), and pthread_create's alternate stacks (cc_interpose.c)
 *   crash/    the fatal-signal handler and what only a crash writes: the signal's names, an
 *             uncaught C++ exception, the stderr summary of a record not whole
 *   record/   the writer and the sections every record has, written by a crash and a live
 *             process's record alike (cc_sections.c), requests in flight, breadcrumbs, resources
 *   unwind/   call-frame information, the images, each architecture's registers and syscalls
 *   threads/  the other threads: stopped, named, unwound; the ptrace helper for those that
 *             block the stop signal
 *   swift/    the Swift runtime's private layouts and async context chains
 *   live/     hang and snapshot records of the running process, lock waits
 *   upload/   the crash-time uploader's start
 *   heap/     the guarded heap's pool (its allocator's half runs in the app, the handler's reads
 *             what it kept: CC_SEC_GUARDED_HEAP)
 *   cc_safeio.c  raw I/O, clocks, formatting and fault-proof reads every part uses
 * Calls go down this list's concerns and into record/ and cc_safeio.c; the two pairs that call
 * each other say why at their tops (cc_chain.c and cc_threads.c, cc_threads.c and cc_helper.c). */
#ifndef CC_INTERNAL_H
#define CC_INTERNAL_H

#include "cc_boot.h"
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "include/crashcapture.h"
#include "cc_arch.h"   /* what differs between architectures: cc_arch_x86_64.c, cc_arch_aarch64.c */
#include "cc_swift_abi.h" /* what is assumed of the Swift runtime's private layouts: cc_swift_abi.c */

#define CC__SIGNAL_COUNT       6
#define CC__DEFAULT_FRAMES     256
#define CC__MAX_FRAMES         512
#define CC__MAX_THREADS        1024  /* other threads recorded (any beyond are stopped, not recorded) */
#define CC__OTHER_FRAMES       64
#define CC__ASYNC_LINKS_CRASHED 512  /* async context links recorded for the crashed thread */
#define CC__ASYNC_LINKS_OTHER  128   /* ... and for each other thread */
#define CC__UNWIND_STEP_LIMIT  (1u << 20) /* a deeper stack is cut: top and bottom kept, middle omitted */
#define CC__MAX_IMAGES         512
#define CC__BREADCRUMB_SLOTS   64
#define CC__BREADCRUMB_TEXT    232
#define CC__SECTION_BUFFER     (68 * 1024)  /* a 64 KiB stack window and its header fit */
#define CC__PATH_MAX           4096
#define CC__ALTSTACK_SIZE      (64 * 1024)
#define CC__MESSAGE_MAX        4096
#define CC__CXX_TYPE_MAX       256  /* bytes of an uncaught C++ exception's mangled type name kept */
#define CC__CXX_WHAT_MAX       1024 /* bytes of its what() kept */
#define CC__STACK_WINDOW       (64 * 1024) /* bytes of the crashed thread's stack kept, from sp up */

#define CC__CONTEXT_SLOTS      256   /* request contexts in flight at once (cc_context.c) */

/* One request-context slot (cc_context.c): (generation << 2) | FREE, WRITING or LIVE, then the
 * context as a record's CC_SEC_REQUEST holds it. */
typedef struct {
    _Atomic uint64_t word;
    cc_sec_request_t body;
} cc__context_slot_t;

/* One breadcrumb slot: a seqlock (even = stable, odd = being written). */
typedef struct {
    _Atomic uint64_t seq;
    int64_t wall_ns;
    uint32_t level;
    uint32_t length;
    char text[CC__BREADCRUMB_TEXT];
} cc__breadcrumb_slot_t;

/* The record being written: each section is assembled in place at the end of `out` (its header,
 * payload and CRC), and `out` goes to the file with one write(2) at each checkpoint
 * (cc__writer_flush), or before a section that might not fit. A section is counted in
 * out_length only once it is whole, so a flush never writes one in the making. In place rather
 * than in a buffer of its own and copied: each byte is copied once, and a crash touches (and
 * faults in) one buffer's pages, not two. */
#define CC__OUT_BUFFER (128 * 1024)
/* What failed first, as the stderr summary says it (cc_summary.c). */
#define CC__STEP_CREATE "creating its file"
#define CC__STEP_WRITE  "writing it"
#define CC__STEP_CLOSE  "closing it"
#define CC__STEP_RENAME "renaming it"
typedef struct {
    int fd;
    int failed;                  /* a write failed (disk full, EIO): stop writing, still chain */
    int error;                   /* errno of the first failure (cc__writer_fail) */
    const char *failed_step;     /* what failed first: one of CC__STEP_* */
    uint32_t section_count;
    size_t length;               /* payload bytes in the open section */
    uint32_t type;
    size_t out_length;           /* whole sections in `out`, not yet written */
    unsigned char out[CC__OUT_BUFFER];
} cc__writer_t;

/* One thread stopped while a record is written (see cc_threads.c): it publishes its own
 * signal context and parks; the recording thread unwinds it from that context. */
typedef struct {
    _Atomic pid_t tid;           /* written last: the slot is ready once tid != 0 */
    const ucontext_t *context;   /* lives on the parked thread's stack, valid until the process dies */
    int crashed;                 /* it faulted itself while another thread was recording */
} cc__stopped_t;

/* An unwind in progress (cc_unwind.c): where the frames found so far are, for cc__walk_finish
 * even after a fault inside the unwinder. Caller-owned static storage. */
typedef struct cc__walk {
    uint64_t *frames;
    uint64_t *fps;
    uint32_t max, top, ring;
    uint64_t total;            /* frames found so far */
    _Atomic int active;        /* 1 while cc__unwind_context runs */
} cc__walk_t;

/* A text the program publishes for the handler, double-buffered in two buffers of one size
 * (given with each call): a writer fills the buffer not published, its generation odd meanwhile,
 * then publishes it; a reader (the handler) that sees a generation move while it copies copies
 * again. Lock-free for the reader; writers are the caller's to serialise (Swift holds a lock). */
typedef struct {
    _Atomic uint64_t generation[2];
    _Atomic int index;           /* -1 = none */
    uint32_t length[2];
} cc__published_t;
int cc__publish(cc__published_t *p, char *buffers, size_t size, const void *bytes, size_t length); /* -1: too long */
/* async-signal-safe: copies the published text into out (size bytes; NUL-terminated after its
 * length), returns its length; 0 when there is none, it is empty, or every try was torn. */
size_t cc__published_copy(cc__published_t *p, const char *buffers, size_t size, char *out);

/* WHERE STATE LIVES. Every piece of mutable state that more than one file reads or writes is a
 * field of this struct, cc__g (defined in cc_install.c): what install prepares for the handler,
 * what the program publishes (templates, scope, breadcrumbs, request contexts), and the crash
 * being recorded. Everything the handler needs is prepared here at install time; the handler
 * only reads it or writes the fields marked (handler).
 * Order: what cc_install writes comes first, the small fields then the strings whose first
 * bytes it writes, so that a fresh process's install faults in about three pages of this
 * struct, not one per field (each first write to a page of it is a page fault); the large
 * buffers that only the handler touches come last.
 *
 * The rest is file-level `static` (g_ prefix), private to the one file that uses it, and kept
 * there on purpose (moving it here would publish each file's private types to every file and,
 * for some, change how the memory is used):
 *   cc_async.c     g_seen, g_seen_count, g_links: (handler) the chain walk's per-thread scratch.
 *   cc_resources.c g_texts: (handler) RLIMIT_NOFILE as the process had it, and the /proc and
 *                  cgroup texts being read.
 *   cc_images.c    g_cache, g_cache_count, g_cache_paths, g_links, g_link_count, g_r_map,
 *                  g_page_size: the images and the link map read at install (dl_iterate_phdr);
 *                  g_check, g_images, g_paths, g_maps_buffer, g_line: (handler) the images
 *                  collected at crash time, where the unwinder looks for each frame's image.
 *   cc_threads.c   g_tids, g_names, g_not_stopped, g_stop: (handler) the other threads found,
 *                  stopped and named.
 *   cc_helper.c    g_helper: the thread helper's own stack and what it publishes; the helper
 *                  shares our memory and writes nothing else (cc_helper.c, "Rules in the helper").
 *   cc_uploader.c  g_uploader: the uploader's prepared pages, page-aligned and mprotect'ed
 *                  read-only after install (in this struct the protection would cover other
 *                  fields), and its child's stack.
 *   cc_interpose.c g_real_pthread_create: the real libc function, resolved by
 *                  a constructor before main and used whether or not capture is installed.
 *   cc_install.c   g_altstack_key, g_altstack_key_once: the pthread key whose destructor
 *                  unmaps a thread's alternate stack; it outlives uninstall.
 *   cc_safeio.c    g_window: (handler) the crashed thread's stack, read once, which fault-proof
 *                  reads inside it are served from; g_trace: only in a -DCC_TRACE_STEPS build.
 * Constant tables (cc_names.c g_codes, cc_safeio.c g_crc_table, cc_interpose.c
 * g_static_link_anchors) are not state. Function-level `static` buffers (the async chains'
 * candidates, the unwinders' contexts, ...) are the scratch of one function, static so that
 * they are not on the alternate stack (64 KiB); the crash path's are used only by the thread that
 * holds the turn (cc_chain.c), the probe's under context_probe_busy, the helper's by the helper.
 * Scratch of up to ≈ 2 KiB is a local instead: the stack's pages are in use already, and each
 * page of statics the crash touches first costs it a page fault (≈ 1.5–2 µs on the project's VM).
 * For the same reason the crash's small statics in a file sit together (g_check, g_stop,
 * g_texts), and what the unwinder uses at every step is on one page (cc_cfi.c). */
typedef struct {
    _Atomic int install_state;   /* 0 off, 1 busy (installing / uninstalling), 2 installed */
    int signals[CC__SIGNAL_COUNT];
#define CC__RESERVED_FDS 2
    /* Opened at install, closed at crash time so that a record is written at the fd limit:
     * [0] for the /proc reads, [1] for the record. */
    int reserved_fds[CC__RESERVED_FDS];
    size_t signal_frame_size;    /* what the kernel needs for a signal frame (AT_MINSIGSTKSZ) */
    int dir_fd;
    uint32_t max_frames;
    uint32_t flags;
    uint32_t watchdog_seconds;
    int64_t start_wall_ns;
    int64_t start_mono_ns;
    uint64_t random_seed;
    /* The fallback for memory reads when process_vm_readv is refused (cc_safeio.c): a pipe made
     * by the first read that needs it, its two fds packed as (read + 1) << 32 | (write + 1);
     * 0 while there is none. */
    _Atomic uint64_t safe_read_pipe;
    const char *_Atomic *fatal_message_slot;   /* from swift_getFatalErrorMessageBuffer(), or NULL (cc_swift_abi.h, 1) */
    uint64_t runtime_anchor;     /* swift_reportError: in the image of the runtime's fatal paths, or 0 (cc_swift_abi.h, 1a) */
    uint64_t libc_anchor;        /* abort: in the C library's image, or 0 (cc_swift_abi.h, 1a) */
    int termination_fd;          /* the container's termination message file's fd + 1, 0: none (cc_summary.c) */
    pid_t termination_pid;       /* the process that opened it: only it writes there */
    uint64_t termination_length; /* the length of what it wrote there last, 0: nothing */
    uint64_t abort_message_slot; /* &__abort_msg (glibc: struct abort_msg_s { u32 size; char msg[]; } *), or 0 */
    /* An uncaught C++ exception, noted by the terminate handler (cc_terminate.cpp, cc_cxx.c) on
     * the thread that then aborts: that thread's id last (published), its type and what(). */
    _Atomic int cxx_noted_tid;
    int cxx_state;                  /* enum cc_cxx_what_state */
    uint32_t cxx_type_length, cxx_what_length;
    char cxx_type[CC__CXX_TYPE_MAX];
    char cxx_what[CC__CXX_WHAT_MAX];
    uint64_t task_metadata;      /* the Swift runtime's AsyncTask heap metadata (layout version 1), or 0 (cc_swift_abi.h, 3) */
    uint64_t task_size;          /* sizeof(AsyncTask): a child task's parent pointer follows it */

    /* Alternate stacks for new threads. */
    _Atomic int altstack_new_threads;

    /* Stopping the other threads. */
    int stop_signal;             /* 0 when disabled */
    _Atomic uint32_t stopped_count;
    uint32_t park_word;          /* parked threads wait on it; it never changes */

    /* (handler) the crash being recorded. */
    pid_t handler_pid;           /* getpid() once per crash (a forked child has its own) */
    /* (pid << 32) | tid of the thread writing the record; 0 = none. A different pid is stale:
     * written by a vfork child (which shares our memory) or inherited across fork. */
    _Atomic uint64_t owner;
    /* (pid << 32) | tid of the thread writing a snapshot (a record of the live process,
     * cc_snapshot.c), 0 = none. */
    _Atomic uint64_t snapshot_owner;
    int crash_signo;
    int64_t turn_entry_ns;       /* (handler) CLOCK_MONOTONIC when the turn's holder entered the handler, before chaining */
    /* (handler) whose turn it is to handle a fatal signal, chaining or recording (cc_chain.c):
     * (pid << 32) | tid, 0 = nobody's; a different pid is stale, as for owner. When the holder's
     * previous handler returned for a fault it re-executes, the time it did (monotonic ns);
     * 0 while it is inside. The threads waiting for the turn: (pid << 32) | tid each, 0 = free;
     * slots below turn_waiter_slots may be in use. */
    _Atomic uint64_t turn;
    _Atomic int64_t turn_returned_ns;
    _Atomic uint32_t turn_waiter_slots;

    /* Texts the program publishes for the handler (cc__publish): the $AppEnd template and the
     * app's scope; their buffers are below. */
    cc__published_t app_end;
    cc__published_t scope;

    /* Breadcrumbs: the head here, the slots below. */
    _Atomic uint64_t breadcrumb_head;

    /* Request contexts (cc_context.c): counters and the runtime layout probed (cc_swift_abi.h, 4
     * and 5: cc_context_probe in cc_swift_abi.c); the slots below. */
    _Atomic uint64_t contexts_attached;  /* 1 once a context was attached: the program uses them */
    _Atomic uint32_t contexts_dropped;
    _Atomic int context_layout;          /* CC__LAYOUT_* */
    _Atomic int context_probe_busy;
    uint64_t context_key;                /* the TaskLocal object CrashContext binds handles to */
    int64_t context_tls_offset;          /* the current task: at the thread pointer + this */
    uint64_t context_local_offset;       /* a task's task-local head: at the task + this */
    uint32_t context_tls_count, context_local_count, context_probe_count;
    int64_t context_tls[CC__PROBE_CANDIDATES];
    uint64_t context_local[CC__PROBE_CANDIDATES];
    uint64_t context_probed[CC__PROBE_TASKS_MAX];
    char context_layout_note[128];       /* why the layout is FAILED */

    /* What the program wants for each signal: the action found at install, updated when a
     * previous handler we chained to changed it (SA_RESETHAND, or it reset itself). */
    struct sigaction previous[CC__SIGNAL_COUNT];
    /* The same as a child process of the installer adopted them (cc__previous_actions). */
    struct sigaction child_previous[CC__SIGNAL_COUNT];
    _Atomic pid_t child_previous_pid;
    pid_t install_pid;
    struct sigaction ours;       /* our fatal-signal action, to reinstall after chaining */
    struct sigaction stop_previous;

    char run_id[64];
    char app_name[256];
    char app_version[128];
    char kernel[512];
    char directory[CC__PATH_MAX];
    char executable_path[CC__PATH_MAX];
    char templates[2][CC_TEMPLATE_MAX];
    char scopes[2][CC_SCOPE_MAX];

    cc__breadcrumb_slot_t breadcrumbs[CC__BREADCRUMB_SLOTS];
    cc__context_slot_t contexts[CC__CONTEXT_SLOTS];
    cc__stopped_t stopped[CC__MAX_THREADS];
    _Atomic uint64_t turn_waiters[CC__MAX_THREADS];

    /* (handler) */
    cc__writer_t writer;
    cc__cfi_frame_t unwind_frame;
    cc__walk_t unwind_walk;          /* the crashed thread's unwind */
    char unwind_note[256];           /* how the frames were found when not by CFI (a test hook), or "" */
    uint64_t frames[CC__MAX_FRAMES];
    uint64_t frame_pointers[CC__MAX_FRAMES];
    char scratch[CC__PATH_MAX + 512];
    char file_name[128];
    char partial_name[160];
} cc__state_t;

extern cc__state_t cc__g;

/* The system calls of the crash path, made through syscall(2) rather than through each C
 * library wrapper. The results and errno are the wrappers' own. A wrapper is bound by the
 * dynamic loader the first time it is called (lazy binding, the default): called first at a
 * crash, the loader ran inside the handler; calling each one at install instead cost every
 * start a system call each (≈ 14 µs). syscall(2) is one function, bound at install by the
 * install's own system calls (cc__bind_handler_imports makes sure). New system calls on the
 * crash path go here. All async-signal-safe. */
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
struct stat;
static inline int cc__sys_openat(int dir, const char *path, int flags, int mode) {
    return (int)syscall(SYS_openat, (long)dir, path, (long)flags, (long)mode);
}
static inline int cc__sys_open(const char *path, int flags) { return cc__sys_openat(AT_FDCWD, path, flags, 0); }
static inline ssize_t cc__sys_read(int fd, void *buffer, size_t count) { return (ssize_t)syscall(SYS_read, (long)fd, buffer, count); }
static inline ssize_t cc__sys_write(int fd, const void *data, size_t count) { return (ssize_t)syscall(SYS_write, (long)fd, data, count); }
static inline int cc__sys_close(int fd) { return (int)syscall(SYS_close, (long)fd); }
/* fstatat(2); the kernel's struct stat is the C library's on x86-64 and aarch64. */
static inline int cc__sys_fstatat(int dir, const char *path, struct stat *st, int flags) {
    return (int)syscall(SYS_newfstatat, (long)dir, path, st, (long)flags);
}
static inline int cc__sys_renameat(int from_dir, const char *from, int to_dir, const char *to) {
#ifdef SYS_renameat
    return (int)syscall(SYS_renameat, (long)from_dir, from, (long)to_dir, to);
#else
    return (int)syscall(SYS_renameat2, (long)from_dir, from, (long)to_dir, to, 0L);   /* aarch64 has only this one */
#endif
}
static inline pid_t cc__sys_getpid(void) { return (pid_t)syscall(SYS_getpid); }
static inline pid_t cc__sys_getppid(void) { return (pid_t)syscall(SYS_getppid); }
static inline uid_t cc__sys_getuid(void) { return (uid_t)syscall(SYS_getuid); }
static inline int cc__sys_prctl(int option, unsigned long argument) { return (int)syscall(SYS_prctl, (long)option, argument, 0L, 0L, 0L); }
static inline int cc__sys_nanosleep(const struct timespec *duration) { return (int)syscall(SYS_nanosleep, duration, (void *)0); }
static inline int cc__sys_sched_yield(void) { return (int)syscall(SYS_sched_yield); }
/* rt_sigprocmask(2) with the kernel's 8-byte set: the first word of a sigset_t. */
static inline int cc__sys_sigprocmask(int how, const sigset_t *set, sigset_t *old) {
    return (int)syscall(SYS_rt_sigprocmask, (long)how, set, old, 8L);
}

/* cc_safeio.c — all async-signal-safe. */
pid_t cc__gettid(void);
int64_t cc__clock_ns(clockid_t clock);
int cc__write_all(int fd, const void *data, size_t len);
size_t cc__strlcpy(char *dst, const char *src, size_t size);
size_t cc__strnlen(const char *s, size_t max);
int cc__streq(const char *a, const char *b);
size_t cc__fmt_u64(char *out, uint64_t value);            /* decimal, no NUL; returns length */
/* async-signal-safe: each(number, context) for every decimal-named entry of a /proc directory;
 * how many, or -1 when it cannot be opened (cc_safeio.c). */
long cc__each_numbered_entry(const char *path, void (*each)(long number, void *context), void *context);
size_t cc__fmt_hex(char *out, uint64_t value, int digits); /* lowercase, zero-padded to digits */
size_t cc__safe_read(uint64_t address, void *out, size_t len); /* bytes copied; 0 if unmapped */
void cc__safe_read_pipe_close(void);                                   /* ordinary code (uninstall) */
/* async-signal-safe: reads [start, start + want) (at most CC__STACK_WINDOW bytes) fault-proof and
 * makes it the window cc__safe_read serves reads inside of from then on: the crashed thread's
 * stack, once per crash (cc_safeio.c). Returns the bytes, *got of them. */
const unsigned char *cc__safe_window_read(uint64_t start, size_t want, size_t *got);
#define CC__SAFE_WORDS_MAX 512   /* no more than the kernel's UIO_MAXIOV (1024) */
void cc__safe_read_many(const uint64_t *addresses, size_t size, uint64_t *out, uint8_t *ok, uint32_t count);
struct iovec;
void cc__safe_readv(struct iovec *local, struct iovec *remote, uint8_t *ok, uint32_t count);
void cc__random_bytes(void *out, size_t len);

/* cc_names.c — async-signal-safe lookups. */
const char *cc__code_name(int signo, int code);
const char *cc__code_description(int signo, int code);
const char *cc__errno_name(int error);

/* cc_writer.c — async-signal-safe record writer. */
int cc__writer_open(cc__writer_t *w, int dir_fd, const char *name);
void cc__section_begin(cc__writer_t *w, uint32_t type);
void cc__section_put(cc__writer_t *w, const void *data, size_t len);
void cc__section_puts(cc__writer_t *w, const char *s);
void cc__section_end(cc__writer_t *w);
/* heap/cc_guarded_heap.c: CC_SEC_GUARDED_HEAP when the crash is a guarded allocation's error. */
void cc__write_guarded_heap(cc__writer_t *w, const cc_sec_crash_t *crash);
void cc__writer_flush(cc__writer_t *w);
void cc__write_string(cc__writer_t *w, uint32_t key, const char *s, size_t len);
void cc__writer_fail(cc__writer_t *w, const char *step);  /* call with errno still the failure's */

/* cc_unwind.c */
void cc__unwind_prepare(void);                                           /* install time: the note of a test hook */
/* async-signal-safe: frames[0..count) of the context; a stack deeper than max keeps its
 * innermost count-count/2 and outermost count/2 frames and says how many lie between. `frame`,
 * `cfi` and `walk` are the caller's static scratch (one cfi per thread that unwinds). */
uint32_t cc__unwind_context(const ucontext_t *uc, cc__cfi_frame_t *frame, cc__cfi_t *cfi, cc__walk_t *walk,
                            uint64_t *frames, uint64_t *fps, uint32_t max, uint32_t *omitted, int *truncated);

/* cc_cfi.c — async-signal-safe: steps `frame` to its caller by the DWARF call-frame information
 * of the image holding its pc (looked up at pc itself when `exact`: frame 0, or a frame a signal
 * interrupted; else at pc - 1, inside the call). CC__CFI_STEPPED with *signal_frame set when the
 * frame stepped out of was a signal trampoline; CC__CFI_OUTERMOST at a frame whose return
 * address is undefined (a thread's first); CC__CFI_NO_INFO when no FDE covers the pc;
 * CC__CFI_BAD when the information or the stack it reads cannot be used. */
enum { CC__CFI_STEPPED = 1, CC__CFI_OUTERMOST = 0, CC__CFI_NO_INFO = -1, CC__CFI_BAD = -2 };
int cc__cfi_step(cc__cfi_t *cfi, cc__cfi_frame_t *frame, int exact, int *signal_frame);
/* async-signal-safe: forgets the image `cfi` looked up last: called as each walk begins, since a
 * later walk (a later snapshot of a live process) may find another image at the same address. */
void cc__cfi_begin(cc__cfi_t *cfi);
/* The scratch of the two that can unwind at once: the recording thread and the thread helper
 * (cc_helper.c). */
extern cc__cfi_t cc__cfi_recording, cc__cfi_helper;
/* async-signal-safe: the frames `walk` holds, in order; what cc__unwind_context returns. */
uint32_t cc__walk_finish(cc__walk_t *walk, uint32_t *omitted, int *truncated);
void cc__write_registers(cc__writer_t *w, const ucontext_t *uc, pid_t tid); /* async-signal-safe; tid 0 = crashed */

/* cc_async.c — async-signal-safe: the Swift async context chains of one thread, a
 * CC_SEC_ASYNC_CHAIN per frame whose candidate context looks like one (see cc_record.h). At most
 * `budget` links in all; `async_register` is frame 0's context register (0: none). */
void cc__write_async_chains(cc__writer_t *w, pid_t tid, const uint64_t *fps, uint32_t count,
                            uint64_t async_register, uint32_t budget);
/* async-signal-safe: CC_SEC_REQUEST_TASK for a request attached in task `key`, and the chain of
 * its ResumeContext (CC_ASYNC_REQUEST_TASK), at most `*budget` links. */
void cc__write_request_task(cc__writer_t *w, uint64_t key, uint32_t *budget);

/* cc_sections.c — async-signal-safe: the runtime's reports that are not a crash's message
 * (CC_STR_RUNTIME_WARNINGS), in [text, text + end); and where the text a crash found ends. */
void cc__write_runtime_warnings(cc__writer_t *w, uint64_t text, uint64_t end);
uint64_t cc__runtime_text_end(const cc__swift_reports_t *reports);

/* cc_images.c */
struct dl_phdr_info;
void cc__images_prepare(void);                                           /* install time */
void cc__images_collect(void);                                           /* async-signal-safe */
void cc__write_images(cc__writer_t *w, int main_only);                   /* async-signal-safe */
int cc__images_contains(uint64_t address);                               /* async-signal-safe */
int cc__images_in_main(uint64_t address);                                /* async-signal-safe */
/* async-signal-safe: `name+0xoffset` as CrashRecord.offsetLabel(for:) makes it from the record:
 * the file name (after the last '/') of the first image holding `address` in the record's order
 * (the main executable, then the others) and the offset from its base. 0 when none holds it. */
int cc__images_label(uint64_t address, const char **name, size_t *name_length, uint64_t *offset);
/* async-signal-safe: the collected image holding `address` (cc_cfi.c); 0 when none does. */
#define CC__NO_EH_FRAME_HDR 1   /* an image without .eh_frame_hdr (no address is 1) */
int cc__images_find(uint64_t address, uint64_t *base, uint64_t *end, uint64_t *bias, uint64_t *phdr, uint16_t *phnum,
                    uint64_t *eh_frame_hdr);

/* cc_threads.c */
int cc__threads_install(int signo);                                      /* install time */
void cc__threads_uninstall(void);
void cc__stop_other_threads(pid_t self, uint32_t threads);              /* async-signal-safe */
void cc__stop_unparked_threads(void);                                    /* async-signal-safe */
void cc__write_other_threads(cc__writer_t *w, pid_t crashed_tid, int listed); /* async-signal-safe */
/* async-signal-safe: whether cc__write_other_threads, called with `listed`, will write a thread. */
int cc__other_threads_to_write(int listed);
void cc__thread_name(pid_t tid, char out[16]);                           /* async-signal-safe */
int cc__read_threads_live(pid_t self, int64_t deadline_ns);              /* a snapshot's (cc_snapshot.c) */
/* async-signal-safe, reentrant: 1 when thread `tid` blocks `signo`, 0 when not, -1 when it is
 * gone, -2 when its status cannot be read (buffer: the caller's, for /proc/self/task/<tid>/status). */
int cc__task_blocks(pid_t tid, int signo, char *buffer, size_t cap);
_Noreturn void cc__park(const ucontext_t *uc, int crashed);              /* async-signal-safe */

/* cc_chain.c — async-signal-safe. */
/* Runs the previous action for cc__g.signals[index] as the kernel would have delivered it.
 * Returns 1 when it ran and returned (errno as it left it in *errno_after), 0 when the kernel
 * could not have delivered it (no usable stack: the kernel would have killed with SIGSEGV). */
int cc__deliver_to_previous(int index, int signo, siginfo_t *info, ucontext_t *uc, int saved_errno,
                            int *errno_after);
/* After a previous handler returned: adopt the dispositions it left, and put ours back. */
void cc__adopt_dispositions(void);
/* The previous actions as this process sees them (its own copy in a child, `for_write`). */
struct sigaction *cc__previous_actions(pid_t pid, int for_write);
/* Returns once the calling thread holds the turn to handle a fatal signal; parks it for good,
 * recorded as crashed with `uc`, when another thread of the process begins a record meanwhile. */
void cc__turn_take(const ucontext_t *uc, pid_t pid, pid_t tid);
/* The holder is done with the turn: `again` when its signal was a fault that re-executes on
 * return (it keeps the turn for CC__TURN_GRACE_NS, see cc_chain.c), else given up at once. */
void cc__turn_give_back(pid_t pid, pid_t tid, int again);
/* Whether thread `tid` of this process is waiting for the turn (cc_threads.c waits for it to park). */
int cc__turn_waiting(pid_t tid);

/* cc_helper.c — async-signal-safe: the thread helper (threads that block the stop signal). */
/* `release`: a live snapshot's helper, which lets the threads go once read and exits. */
int cc__helper_stop_threads(const pid_t *tids, uint32_t count, int64_t deadline_ns, int release);
uint32_t cc__helper_held_microseconds(uint32_t *stopped);
void cc__helper_abandon(void);
int cc__helper_index(pid_t tid);
const uint64_t *cc__helper_frames(uint32_t index, uint32_t *count);
int cc__helper_write_thread(cc__writer_t *w, uint32_t index);
void cc__helper_write_note(cc__writer_t *w);

/* cc_uploader.c — the crash-time uploader. */
int cc__uploader_fits(const cc_config_t *config);                        /* install time */
void cc__uploader_prepare(const cc_config_t *config);                    /* install time */
void cc__uploader_disable(void);                                         /* uninstall */
void cc__uploader_start(int64_t deadline_ns);                            /* async-signal-safe */

/* cc_registers.c — async-signal-safe: a CC_SEC_REGISTERS payload (cc_sec_registers_t and the
 * registers) for the context into out; its length, 0 when cap is too small. */
size_t cc__registers_payload(const ucontext_t *uc, void *out, size_t cap);
/* async-signal-safe: for cc__arch_registers: `len` bytes, or one named register, at `at` when
 * they fit (else a length past cap). Return the new offset. */
size_t cc__registers_put(unsigned char *out, size_t at, size_t cap, const void *data, size_t len);
size_t cc__registers_put_one(unsigned char *out, size_t at, size_t cap, const char *name, uint64_t value);

/* cc_interpose.c */
void cc__interpose_prepare(void);                                        /* install time */

/* cc_breadcrumbs.c — async-signal-safe. */
void cc__write_breadcrumbs(cc__writer_t *w);

/* cc_context.c — async-signal-safe: CC_SEC_REQUESTS and the requests in flight (crashed one
 * first, copied to *crashed with *has_crashed = 1); nothing when the program attaches none.
 * `live` (a snapshot of a running process): no request is the crashed one, the oldest come
 * first (a stuck request is an old one), and each attached in a task is followed by where that
 * task waits (CC_SEC_REQUEST_TASK). */
void cc__write_requests(cc__writer_t *w, pid_t tid, cc_sec_request_t *crashed, int *has_crashed, int live);

/* cc_summary.c — async-signal-safe: the one line on stderr at every crash (cc_summary.c). */
void cc__crash_line_write(const cc_sec_crash_t *crash, pid_t pid, pid_t tid, const char *thread_name,
                          const char *record_name, const cc_sec_request_t *request);

/* cc_summary.c — the container's termination message (see cc_summary.c): opened at install
 * (not async-signal-safe), closed at uninstall; the crash's written by the handler once the crashed
 * thread is unwound (async-signal-safe). */
void cc__termination_prepare(void);
void cc__termination_close(void);
void cc__termination_crash(const cc_sec_crash_t *crash, pid_t tid, const char *thread_name, const cc_sec_request_t *request,
                           const uint64_t *frames, uint32_t count);

/* cc_summary.c — async-signal-safe: the few lines on stderr about a crash whose record could
 * not be written whole (see cc_summary.c). `crash` as recorded; `frames` the crashed thread's. */
void cc__summary_write(const cc_sec_crash_t *crash, pid_t pid, pid_t tid, const uint64_t *frames, uint32_t count,
                       const cc__writer_t *w);

/* cc_handler.c */
void cc__handler(int signo, siginfo_t *info, void *context);

/* cc_sections.c: the sections a crash record and a live process's record share. */
/* async-signal-safe: the crashed thread's general registers that can hold data pointers (not the
 * stack and program counters, the flags or the fault words), at most `max`; returns how many. */
size_t cc__data_registers(const ucontext_t *uc, cc_register_t *out, size_t max);
/* async-signal-safe: names the record (cc__g.file_name, cc__g.partial_name) for this time and thread. */
void cc__name_record(int64_t wall_ns, pid_t pid, pid_t tid);
/* async-signal-safe: the strings known since install (app, version, executable, kernel) and the
 * unwinder's note, if any. */
void cc__write_install_strings(cc__writer_t *w);
/* cc_resources.c: RLIMIT_NOFILE kept before the handler raises it; /proc/self/status read by the
 * handler before the other threads are stopped (returns the threads it names, 0 when it cannot
 * say); then CC_SEC_RESOURCES and the /proc and cgroup texts (`crash`: the status the handler
 * read, else read now). All async-signal-safe. */
const struct rlimit *cc__resources_note_limits(void);
uint32_t cc__resources_read_status(void);
/* cc_cxx.c: an uncaught C++ exception noted by this thread's terminate handler, or else one found
 * in flight on the crashed thread's stack (async-signal-safe; uc may be null). */
void cc__write_cxx_exception(cc__writer_t *w, pid_t tid, const ucontext_t *uc);
void cc__write_resources(cc__writer_t *w, int crash);
/* async-signal-safe: CC_SEC_PROCESS for this process and thread `tid` at these times (the thread's
 * name from prctl), also copied to *process. */
void cc__write_process(cc__writer_t *w, cc_sec_process_t *process, pid_t pid, pid_t tid, int64_t wall_ns, int64_t mono_ns);
/* async-signal-safe: the run id, then the app's scope as it is now (cc_set_scope), copied whole. */
void cc__write_run_and_scope(cc__writer_t *w);
/* async-signal-safe: the end section (with the microseconds since `began_mono_ns`), the last
 * flush, close and the rename to the record's name; a failure of any marks the writer failed.
 * Returns the microseconds the end section says. */
uint32_t cc__finish_record(cc__writer_t *w, int64_t began_mono_ns);

/* cc_sections.c: the ones only the crash handler calls. */
/* async-signal-safe: the compensating $AppEnd from the template Swift rendered. */
void cc__write_app_end(cc__writer_t *w, int64_t crash_wall_ns, int64_t crash_mono_ns);
/* async-signal-safe: a CC_SEC_MEMORY window, if any of it is readable; returns whether one was written. */
int cc__write_memory(cc__writer_t *w, const char *label, uint64_t address, size_t before, size_t after);
/* The crashed thread's stack as cc__read_stack_window read it, for cc__write_stack. */
typedef struct {
    const unsigned char *bytes;
    uint64_t start;
    size_t length;
} cc__stack_window_t;
/* async-signal-safe: reads the crashed thread's stack from sp up, once (see cc_sections.c). */
void cc__read_stack_window(cc__stack_window_t *window, uint64_t sp);
/* async-signal-safe: that window as the "stack" CC_SEC_MEMORY. */
void cc__write_stack(cc__writer_t *w, const cc__stack_window_t *window);
/* async-signal-safe: windows of the memory the registers and the top of the stack point at. */
void cc__write_pointed_memory(cc__writer_t *w, const ucontext_t *uc);
/* async-signal-safe: a runtime's last words at `address` as a CC_SEC_STRING of `key`. */
void cc__write_message(cc__writer_t *w, uint32_t key, uint64_t address, size_t cap);
/* async-signal-safe: the app's name and version, the executable's path, the kernel line. */
void cc__write_app_strings(cc__writer_t *w);
/* async-signal-safe: the note a test hook's frame-record unwinding leaves. */
void cc__write_unwind_note(cc__writer_t *w);


/* cc_snapshot.c — async-signal-safe: a fault on the thread writing a snapshot: its helper is gone before the
 * crash is recorded. */
void cc__snapshot_abandon(pid_t pid, pid_t tid);

/* A local timing experiment, compiled only with -DCC_TRACE_STEPS (never in a shipped build):
 * CC__MARK(label) keeps a clock reading, cc__trace_dump writes the steps' deltas to fd 2. */
#ifdef CC_TRACE_STEPS
void cc__trace_mark(const char *label);
void cc__trace_dump(const char *title);
#define CC__MARK(label) cc__trace_mark(label)
#else
#define CC__MARK(label) ((void)0)
#endif

#endif /* CC_INTERNAL_H */
