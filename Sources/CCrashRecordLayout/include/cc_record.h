/* cc_record.h — the one crash-record layout shared by the C writer and every reader. */
/*
 * A record file is:
 *
 *     cc_file_header_t                      (32 bytes, fixed)
 *     section*                              (any number, in writing order)
 *
 * and each section is:
 *
 *     cc_section_header_t  { type, length } (8 bytes)
 *     payload              length bytes
 *     uint32_t crc                          CRC-32 (IEEE, zlib's) of header + payload
 *
 * All integers are little-endian (the writer refuses other byte orders at compile time) and
 * every struct below has a fixed size checked with _Static_assert, so a reader in any
 * language can parse a record without this header. Only whole sections are written, flushed
 * to the file at checkpoints before each step of the handler that could fault or stall, so a
 * record cut short (the handler crashed, the disk filled, the machine lost power) still
 * yields every section before the cut; the per-section CRC tells a torn or damaged section
 * from a whole one.
 *
 * A record is complete only when its last section is CC_SEC_END. The writer creates the
 * file as "<name>.ccrec.partial" and renames it to "<name>.ccrec" after CC_SEC_END, so a
 * reader never mistakes a half-written file for a whole one: a ".partial" file whose
 * writer is gone is an incomplete record, to be read for what it holds.
 *
 * Versioning: readers accept any version <= the one they know and skip section types
 * they do not know (the length says how far). A change that alters an existing struct
 * bumps CC_RECORD_VERSION.
 */
#ifndef CC_RECORD_H
#define CC_RECORD_H

#include <stdint.h>

#define CC_RECORD_MAGIC       "CCRECORD"   /* 8 bytes, no terminator in the file */
#define CC_RECORD_VERSION     1
/* File names: CC_RECORD_PREFIX "<unix ms>-<pid>-<tid>" CC_RECORD_EXTENSION, with
 * CC_RECORD_PARTIAL_EXTENSION while it is written (made by cc_handler.c, parsed by
 * CrashRecordFormat's RecordFileName; nothing else knows the shape). */
#define CC_RECORD_PREFIX      "crash-"
#define CC_RECORD_EXTENSION   ".ccrec"
#define CC_RECORD_PARTIAL_EXTENSION ".ccrec.partial"
/* The record directory's ledger of pruned crashes (CrashRecordFormat's PrunedCrashes). */
#define CC_RECORD_PRUNED_LEDGER "pruned-crashes"
/* Readers refuse a section longer than this as corrupt (the writer never exceeds it). */
#define CC_SECTION_MAX_LENGTH (256u * 1024u)

enum cc_arch {
    CC_ARCH_UNKNOWN = 0,
    CC_ARCH_X86_64 = 1,
    CC_ARCH_AARCH64 = 2,
};

typedef struct {
    char     magic[8];       /* CC_RECORD_MAGIC */
    uint16_t version;        /* CC_RECORD_VERSION */
    uint16_t header_size;    /* sizeof(cc_file_header_t) */
    uint16_t arch;           /* enum cc_arch */
    uint8_t  byte_order;     /* 1 = little-endian */
    uint8_t  pointer_size;   /* 8 */
    uint32_t flags;          /* reserved, 0 */
    uint32_t reserved0;
    uint32_t reserved1;
    uint32_t header_crc;     /* CRC-32 of the 28 bytes before it */
} cc_file_header_t;
_Static_assert(sizeof(cc_file_header_t) == 32, "cc_file_header_t layout");

typedef struct {
    uint32_t type;           /* enum cc_section_type */
    uint32_t length;         /* payload bytes, excluding this header and the trailing CRC */
} cc_section_header_t;
_Static_assert(sizeof(cc_section_header_t) == 8, "cc_section_header_t layout");

enum cc_section_type {
    CC_SEC_CRASH      = 1,   /* cc_sec_crash_t: the signal */
    CC_SEC_PROCESS    = 2,   /* cc_sec_process_t: pid, tid, clocks */
    CC_SEC_STRING     = 3,   /* cc_sec_string_t + UTF-8 bytes (not NUL-terminated) */
    CC_SEC_REGISTERS  = 4,   /* cc_sec_registers_t + count * cc_register_t */
    CC_SEC_MEMORY     = 5,   /* cc_sec_memory_t + the bytes read at address */
    CC_SEC_THREAD     = 6,   /* cc_sec_thread_t + frame_count * uint64_t pc */
    CC_SEC_IMAGE      = 7,   /* cc_sec_image_t + path bytes */
    CC_SEC_BREADCRUMB = 8,   /* cc_sec_breadcrumb_t + message bytes */
    CC_SEC_APP_END    = 9,   /* the compensating $AppEnd event, one JSON object */
    CC_SEC_END        = 10,  /* cc_sec_end_t: the record is complete */
    CC_SEC_THREAD_REGISTERS = 11, /* cc_sec_thread_registers_t + the REGISTERS payload of that thread */
    CC_SEC_ASYNC_CHAIN = 12, /* cc_sec_async_chain_t + link_count * cc_async_link_t: Swift async contexts */
    CC_SEC_ASYNC_TASK  = 13, /* cc_sec_async_task_t: the Swift task a whole chain belongs to, and its parent task */
    CC_SEC_REQUESTS    = 14, /* cc_sec_requests_t: how the crashed thread's request was told, and how many were in flight */
    CC_SEC_REQUEST     = 15, /* cc_sec_request_t: one request (or other unit of work) in flight at the crash */
    CC_SEC_SCOPE       = 16, /* the app's scope at the crash: entries of three NUL-terminated texts (below) */
    CC_SEC_EVENT       = 17, /* cc_sec_event_t: a record of a live process (a hang, a snapshot), not of a crash */
    CC_SEC_REQUEST_TASK = 18, /* cc_sec_request_task_t: where a request's task is suspended; its chain follows */
    CC_SEC_RESOURCES   = 19, /* cc_sec_resources_t: the CPUs and the descriptors at the crash; the /proc and cgroup texts follow as strings */
    CC_SEC_FATE        = 20, /* cc_sec_fate_t: what became of a hang record's process (added by a later launch, never by the handler) */
    CC_SEC_MEMORY_WATCH = 21, /* cc_sec_memory_watch_t: a memory record's cgroup usage, limit, growth and the allocator's own counts */
    CC_SEC_THREAD_STATES = 22, /* cc_sec_thread_states_t + count * cc_thread_state_t: each thread's scheduler state and CPU time (hang, snapshot) */
    CC_SEC_LOCK_WAITS  = 23, /* cc_sec_lock_waits_t + count * cc_lock_wait_t: the threads blocked on a futex, the lock and its holder (hang, snapshot) */
    CC_SEC_STACK_SAMPLES = 24, /* cc_sec_stack_samples_t + count * (cc_stack_sample_t + frames): a computing hang's busy threads sampled */
    CC_SEC_GUARDED_HEAP = 25, /* cc_sec_guarded_heap_t + allocation frames + free frames: a memory error the guarded heap caught */
};

/* CC_SEC_CRASH flags */
#define CC_CRASH_FROM_PROCESS   0x1u  /* sent by a process (kill, tgkill, sigqueue): sender_* valid */
#define CC_CRASH_FAULT_ADDRESS  0x2u  /* fault_address is meaningful (SEGV, BUS, FPE, ILL, TRAP from the kernel) */

typedef struct {
    int32_t  signo;
    int32_t  code;                  /* si_code */
    uint64_t fault_address;         /* si_addr */
    int32_t  sender_pid;
    uint32_t sender_uid;
    uint32_t flags;                 /* CC_CRASH_* */
    int32_t  errno_at_crash;
    char     signal_name[16];       /* "SIGSEGV", NUL-padded */
    char     code_name[32];         /* "SEGV_MAPERR", NUL-padded */
    char     code_description[80];  /* "address not mapped to object", NUL-padded */
} cc_sec_crash_t;
_Static_assert(sizeof(cc_sec_crash_t) == 160, "cc_sec_crash_t layout");

typedef struct {
    int32_t  pid;
    int32_t  tid;                   /* the crashing thread */
    int32_t  ppid;
    uint32_t uid;
    int64_t  start_wall_ns;         /* CLOCK_REALTIME when CrashCapture started */
    int64_t  crash_wall_ns;         /* CLOCK_REALTIME in the handler */
    int64_t  start_mono_ns;         /* CLOCK_MONOTONIC when CrashCapture started */
    int64_t  crash_mono_ns;         /* CLOCK_MONOTONIC in the handler */
    char     thread_name[16];       /* the crashing thread's name, NUL-padded */
} cc_sec_process_t;
_Static_assert(sizeof(cc_sec_process_t) == 64, "cc_sec_process_t layout");

enum cc_string_key {
    CC_STR_APP_NAME        = 1,
    CC_STR_APP_VERSION     = 2,
    CC_STR_EXECUTABLE_PATH = 3,
    CC_STR_FATAL_MESSAGE   = 4,     /* the Swift runtime's fatal-error message */
    CC_STR_KERNEL          = 5,     /* uname: sysname release version machine */
    CC_STR_NOTE            = 6,     /* something the writer wants a reader to know */
    CC_STR_RUN_ID          = 7,     /* the reporter's run id (pairs the record with its run marker; none when capture runs alone) */
    CC_STR_ABORT_MESSAGE   = 8,     /* the C library's last words before abort(): glibc's __abort_msg (assert, malloc's checks, _FORTIFY_SOURCE) */
    /* Resources at the crash, each a file's text as the kernel gave it (read by the handler,
     * parsed by the readers; at most CC_RESOURCE_TEXT_MAX bytes each): */
    CC_STR_PROC_STATUS     = 9,     /* /proc/self/status: VmRSS, VmHWM, Threads, ... */
    CC_STR_PROC_MEMINFO    = 10,    /* /proc/meminfo: MemTotal, MemAvailable, ... */
    CC_STR_PROC_LOADAVG    = 11,    /* /proc/loadavg */
    CC_STR_CGROUP_MEMORY   = 12,    /* the memory cgroup's directory the next three come from ("v2 /sys/fs/cgroup/…" or "v1 …") */
    CC_STR_CGROUP_MEMORY_CURRENT = 13, /* v2 memory.current, v1 memory.usage_in_bytes */
    CC_STR_CGROUP_MEMORY_MAX     = 14, /* v2 memory.max ("max": none), v1 memory.limit_in_bytes */
    CC_STR_CGROUP_MEMORY_EVENTS  = 15, /* v2 memory.events, v1 memory.oom_control */
    /* An uncaught C++ exception (SIGABRT after std::terminate on the crashed thread): */
    CC_STR_CXX_TYPE        = 16,    /* its type's mangled name, as type_info::name() gives it ("St13runtime_error"), at most 256 bytes */
    CC_STR_CXX_WHAT        = 17,    /* its what(), at most 1024 bytes (only when it derives from std::exception and what() returned) */
    CC_STR_CXX_WHAT_STATE  = 18,    /* one digit: 0 not a std::exception, 1 what() gave CXX_WHAT, 2 what() threw, 3 std::terminate with no exception,
                                          * 4 found thrown and not caught on the stack, no terminate handler ran (no what()) */
    /* What the Swift runtime reported during the run that is not the crash's own message: its
     * warnings (a leaked CheckedContinuation's "SWIFT TASK CONTINUATION MISUSE: ..."), each report
     * ending in a newline, oldest first; at most the last 4096 bytes, from a line's start. A crash
     * record has it beside CC_STR_FATAL_MESSAGE, a hang or snapshot record alone (its process
     * lives on: everything the runtime reported is a warning). An older reader skips the key
     * (see Versioning). */
    CC_STR_RUNTIME_WARNINGS = 19,
};

/* The longest /proc or cgroup text a record keeps (CC_STR_PROC_* and CC_STR_CGROUP_*). */
#define CC_RESOURCE_TEXT_MAX 4096u

typedef struct {
    uint32_t key;                   /* enum cc_string_key */
} cc_sec_string_t;

/* CC_SEC_RESOURCES flags: which fields were read */
#define CC_RESOURCES_CPU_COUNT   0x1u
#define CC_RESOURCES_OPEN_FDS    0x2u
#define CC_RESOURCES_NOFILE      0x4u
#define CC_RESOURCES_CPU_ID      0x8u

/* What the process had and was allowed, read by the handler at the crash (the memory, the
 * threads, the load and the cgroup's memory follow as CC_STR_PROC_* / CC_STR_CGROUP_* texts). */
typedef struct {
    uint32_t flags;                 /* CC_RESOURCES_* */
    uint32_t cpu_count;             /* CPUs the process may run on (sched_getaffinity) */
    uint32_t open_fds;              /* descriptors open when the crash began (/proc/self/fd) */
    uint32_t cpu_signature;         /* x86-64: CPUID leaf 1 EAX (family, model, stepping); aarch64: MIDR_EL1 */
    uint64_t nofile_soft;           /* RLIMIT_NOFILE as the process had it (the handler raises it after), */
    uint64_t nofile_hard;           /*   UINT64_MAX: unlimited */
    char     cpu_vendor[16];        /* x86-64: CPUID leaf 0 ("GenuineIntel"), NUL-padded; aarch64: "" */
} cc_sec_resources_t;
_Static_assert(sizeof(cc_sec_resources_t) == 48, "cc_sec_resources_t layout");
_Static_assert(sizeof(cc_sec_string_t) == 4, "cc_sec_string_t layout");

typedef struct {
    char     name[8];               /* "rip", "x29", NUL-padded */
    uint64_t value;
} cc_register_t;
_Static_assert(sizeof(cc_register_t) == 16, "cc_register_t layout");

typedef struct {
    uint32_t arch;                  /* enum cc_arch */
    uint32_t count;
} cc_sec_registers_t;
_Static_assert(sizeof(cc_sec_registers_t) == 8, "cc_sec_registers_t layout");

typedef struct {
    uint64_t address;               /* address of the first byte that follows */
    char     label[8];              /* "pc", "sp", NUL-padded */
} cc_sec_memory_t;
_Static_assert(sizeof(cc_sec_memory_t) == 16, "cc_sec_memory_t layout");

/* CC_SEC_THREAD flags */
#define CC_THREAD_CRASHED          0x1u  /* the thread the signal hit */
#define CC_THREAD_FROM_CONTEXT     0x2u  /* frames unwound from the signal context: frame 0 is the exact pc */
#define CC_THREAD_TRUNCATED        0x4u  /* frames were left out (omitted_frames) or the unwind hit its step limit */
#define CC_THREAD_NO_STACK         0x8u  /* no frames: the thread was not stopped (in time) */
#define CC_THREAD_STOPPED          0x10u /* the thread was stopped (parked) for the whole of the record */
#define CC_THREAD_NOT_STOPPED      0x20u /* the thread blocks the stop signal: it ran on while the record was written */
#define CC_THREAD_ALSO_CRASHED     0x40u /* the thread faulted too while another thread was recording */
#define CC_THREAD_PTRACED          0x80u /* stopped with ptrace and read from outside by the thread helper process */
#define CC_THREAD_PTRACE_REFUSED   0x100u /* the thread helper could not ptrace it (Yama, seccomp, setuid): no frames */

typedef struct {
    int32_t  tid;
    uint32_t flags;                 /* CC_THREAD_* */
    char     name[16];              /* NUL-padded */
    uint32_t frame_count;           /* uint64_t program counters follow; frame 0 innermost */
    /* Frames left out of a stack deeper than the limit. When non-zero, the first
     * frame_count - frame_count / 2 frames are the innermost ones and the last frame_count / 2
     * the outermost ones (where the stack began); omitted_frames lie between them. */
    uint32_t omitted_frames;
} cc_sec_thread_t;
_Static_assert(sizeof(cc_sec_thread_t) == 32, "cc_sec_thread_t layout");

/* CC_SEC_THREAD_REGISTERS: one thread's registers (other than the crashed thread's, which are
 * CC_SEC_REGISTERS); the header is followed by exactly what a CC_SEC_REGISTERS payload holds. */
typedef struct {
    int32_t  tid;
    uint32_t reserved;
} cc_sec_thread_registers_t;
_Static_assert(sizeof(cc_sec_thread_registers_t) == 8, "cc_sec_thread_registers_t layout");

/* CC_SEC_ASYNC_CHAIN: a chain of Swift async contexts found from one frame of a thread, read
 * at crash time without knowing whether that frame is an async function (no symbol lookup in
 * the handler). A reader decides offline: the first physical frame whose function is an async
 * partial function (mangled suffix TY<n>_ or TQ<n>_) continues with the resume points of the
 * chain recorded for that frame index (FRAME_POINTER: the word at fp - 8, where Swift's async
 * frames keep their context; CONTEXT_REGISTER: frame 0's async context register, r14 on
 * x86-64, x22 on aarch64, for a partial function that set up no frame record). Every context
 * is an AsyncContext of the Swift ABI (include/swift/ABI/Task.h): Parent at +0, ResumeParent at
 * +8. Link k holds context_k, its Parent (context_{k+1}) and its ResumeParent. The
 * resume points are function entries (not return addresses: no -1 when symbolicating). A
 * section follows the CC_SEC_THREAD of its thread. */
#define CC_ASYNC_FRAME_POINTER    0x1u  /* first_context is the word at the frame's fp - 8 */
#define CC_ASYNC_CONTEXT_REGISTER 0x2u  /* first_context is frame 0's async context register */
#define CC_ASYNC_SEEN             0x4u  /* first_context is a link of an earlier chain of this thread: no links follow, read that chain from there */
#define CC_ASYNC_PARENT_TASK      0x8u  /* first_context is a suspended parent task's ResumeContext (a CC_SEC_ASYNC_TASK names it) */
#define CC_ASYNC_REQUEST_TASK     0x10u /* first_context is a request's task's ResumeContext (the CC_SEC_REQUEST_TASK before it names it); tid 0 */

enum cc_async_end {
    CC_ASYNC_END_PARENT_NULL = 1,   /* the last context's Parent is 0: the task's first context */
    CC_ASYNC_END_UNREADABLE  = 2,   /* the next context (or its two words) could not be read */
    CC_ASYNC_END_MISALIGNED  = 3,   /* the next context is not 16-byte aligned (AsyncContext is) */
    CC_ASYNC_END_CYCLE       = 4,   /* the next context is one already in the chain */
    CC_ASYNC_END_LIMIT       = 5,   /* the link limit for this chain or thread was reached */
    CC_ASYNC_END_NOT_CODE    = 6,   /* the next ResumeParent is 0 or outside every loaded image */
    CC_ASYNC_END_SEEN        = 7,   /* the next context is in an earlier chain of this thread (flag SEEN) */
};

typedef struct {
    int32_t  tid;
    uint32_t frame_index;           /* the physical frame (index in its CC_SEC_THREAD) this chain starts from */
    uint32_t flags;                 /* CC_ASYNC_* */
    uint32_t end;                   /* enum cc_async_end: why the chain stops after its last link */
    uint64_t first_context;         /* context_0 */
    uint32_t link_count;            /* cc_async_link_t that follow */
    uint32_t reserved;
} cc_sec_async_chain_t;
_Static_assert(sizeof(cc_sec_async_chain_t) == 32, "cc_sec_async_chain_t layout");

typedef struct {
    uint64_t context;               /* an AsyncContext */
    uint64_t parent;                /* its Parent: the next link's context, unless the chain ends here */
    uint64_t resume;                /* its ResumeParent: where its parent resumes */
} cc_async_link_t;
_Static_assert(sizeof(cc_async_link_t) == 24, "cc_async_link_t layout");

/* CC_SEC_ASYNC_TASK: the Swift task (AsyncTask) whose first context ends a chain (the chain's
 * last link has Parent 0), and, for a child task (async let, a task group's child), its parent:
 * suspended, waiting for its children, with the function it resumes in and its context, whose
 * chain follows as a CC_SEC_ASYNC_CHAIN with CC_ASYNC_PARENT_TASK. The task is found at crash
 * time without symbols: the runtime exports the task's heap metadata
 * (_swift_concurrency_debug_asyncTaskMetadata, read at install), a task is allocated just
 * before its first context, so the nearest 16-byte-aligned word before it that holds that
 * metadata starts the task. Field offsets are those of the runtime's debug layout version 1
 * (_swift_concurrency_debug_internal_layout_version, Swift 6.1 and later on 64-bit: Flags +32,
 * Id +36, ResumeTask +56, ResumeContext +64, the child fragment's Parent right after the task,
 * whose size _swift_concurrency_debug_asyncTaskSize gives); any other version, or a runtime
 * without those symbols, records no task. */
#define CC_TASK_IS_CHILD      0x1000000u   /* JobFlags: a child task (async let, task group) */
#define CC_TASK_IS_GROUP_CHILD 0x4000000u  /* JobFlags: a task group's child */
#define CC_TASK_IS_ASYNC_LET  0x10000000u  /* JobFlags: an async let's child */
typedef struct {
    int32_t  tid;
    uint32_t job_flags;             /* the task's JobFlags (CC_TASK_*) */
    uint64_t task;                  /* the AsyncTask */
    uint64_t first_context;         /* the context that ends the chain it belongs to (its first) */
    uint64_t parent;                /* the parent task, 0 when not a child (or it could not be read) */
    uint64_t parent_resume;         /* the parent's ResumeTask: where it resumes */
    uint64_t parent_context;        /* the parent's ResumeContext: its chain follows */
    uint32_t task_id;               /* the task's Job Id (as the runtime numbers tasks) */
    uint32_t parent_id;
} cc_sec_async_task_t;
_Static_assert(sizeof(cc_sec_async_task_t) == 56, "cc_sec_async_task_t layout");

/* CC_SEC_REQUESTS and CC_SEC_REQUEST: the requests in flight at the crash, and which one the
 * crashed thread was serving. A program (a server framework's middleware, usually) attaches a
 * small fixed-size context to the task that serves a request (CrashContext in Swift,
 * cc_context_attach in C) and detaches it when the request ends; the contexts live in a
 * lock-free table the handler copies (cc_context.c). Which one is the crashed thread's is read
 * from the Swift runtime, not guessed: the thread's current task (the runtime's thread-local,
 * at an offset from the thread pointer), then that task's task-local bindings (which a child
 * task and an unstructured Task created inside the request inherit), where the context's
 * handle is bound. Both places are found and checked at run time (cc_swift_abi.c); when they are
 * not known (status UNKNOWN) no request is named crashed, and a CC_STR_NOTE says why. A
 * context attached to a thread rather than a task (CC_REQUEST_THREAD) names the crashed
 * thread's request when no task's does.
 *
 * CC_SEC_REQUESTS comes first; then the crashed request's CC_SEC_REQUEST (flag CRASHED), if
 * any; then the others in flight, at most CC_REQUESTS_OTHERS_MAX, most recent first. */
enum cc_requests_status {
    CC_REQUESTS_TASK      = 1,   /* the crashed thread was running a Swift task (current_task) */
    CC_REQUESTS_NO_TASK   = 2,   /* the crashed thread was running no Swift task */
    CC_REQUESTS_UNKNOWN   = 3,   /* where the runtime keeps the current task or its task-locals is not known in this process */
};
#define CC_REQUESTS_OTHERS_MAX 32

typedef struct {
    uint32_t status;                /* enum cc_requests_status */
    uint32_t in_flight;             /* contexts attached at the crash, the crashed one included */
    uint32_t dropped;               /* attaches refused since start because the table was full */
    uint32_t reserved;
    uint64_t current_task;          /* the crashed thread's current task (status TASK), else 0 */
} cc_sec_requests_t;
_Static_assert(sizeof(cc_sec_requests_t) == 24, "cc_sec_requests_t layout");

#define CC_REQUEST_CRASHED     0x1u  /* the request the crashed thread was serving */
#define CC_REQUEST_THREAD      0x2u  /* attached to a thread (key is its tid), not to a task */
#define CC_REQUEST_SAMPLED     0x4u  /* the W3C trace flags' sampled bit */
#define CC_REQUEST_HAS_TRACE   0x8u  /* trace_id and span_id hold a trace */
#define CC_REQUEST_HAS_PARENT  0x10u /* parent_span_id holds the span's parent */

#define CC_REQUEST_ID_MAX      64    /* the text fields' sizes, with their terminating NUL */
#define CC_REQUEST_METHOD_MAX  16
#define CC_REQUEST_ROUTE_MAX   128
#define CC_REQUEST_PATH_MAX    256
#define CC_REQUEST_QUERY_MAX   256
#define CC_REQUEST_ATTRIBUTES_MAX 256

typedef struct {
    uint64_t key;                   /* the task it was attached in, or the thread id (CC_REQUEST_THREAD) */
    uint32_t flags;                 /* CC_REQUEST_* */
    uint32_t reserved;
    int64_t  start_wall_ns;         /* CLOCK_REALTIME when it was attached */
    int64_t  start_mono_ns;         /* CLOCK_MONOTONIC when it was attached (its age at the crash) */
    uint8_t  trace_id[16];          /* W3C trace-context ids, as bytes */
    uint8_t  span_id[8];
    uint8_t  parent_span_id[8];
    /* UTF-8 texts, NUL-terminated within their fields (cut at a character boundary). */
    char     request_id[CC_REQUEST_ID_MAX];
    char     method[CC_REQUEST_METHOD_MAX];
    char     route[CC_REQUEST_ROUTE_MAX];       /* the route's template, e.g. "/orders/{id}" */
    char     path[CC_REQUEST_PATH_MAX];         /* the path as requested, without the query */
    char     query[CC_REQUEST_QUERY_MAX];       /* empty unless the program asked for it */
    char     attributes[CC_REQUEST_ATTRIBUTES_MAX]; /* "key=value" entries, each NUL-terminated; an empty one ends them */
} cc_sec_request_t;
_Static_assert(sizeof(cc_sec_request_t) == 1040, "cc_sec_request_t layout");

typedef struct {
    uint64_t base;                  /* address the image's first byte (ELF header) is mapped at */
    uint64_t size;                  /* bytes from base to the end of its last mapping */
    uint32_t build_id_length;       /* 0 when the image has no GNU build-id note */
    uint32_t flags;                 /* bit 0: the main executable */
    uint8_t  build_id[32];
} cc_sec_image_t;
_Static_assert(sizeof(cc_sec_image_t) == 56, "cc_sec_image_t layout");
#define CC_IMAGE_MAIN_EXECUTABLE 0x1u

/* CC_SEC_SCOPE: the app's scope as it was at the crash, what a Sentry SDK calls the scope: tags,
 * the user, named contexts (CrashScope in Swift, which renders it and reads it back). The
 * payload is entries, each three UTF-8 texts ended by a NUL byte: a group, a key, a value. The
 * group is "tag", "user" (keys id, username, email, ip_address) or "context:" and the context's
 * name. The program publishes the whole payload (cc_set_scope); the handler copies it as it is.
 * At most CC_SCOPE_MAX - 1 bytes; a reader takes the whole entries and notes anything else. */
#define CC_SCOPE_MAX 8192

/* cc_sec_breadcrumb_t.level: swift-log's levels, in its order (the one place these numbers are
 * written down: the Swift side names them `BreadcrumbLevel` in CrashRecordFormat). A reader keeps
 * any other value as written. */
#define CC_BREADCRUMB_TRACE    0u
#define CC_BREADCRUMB_DEBUG    1u
#define CC_BREADCRUMB_INFO     2u
#define CC_BREADCRUMB_NOTICE   3u
#define CC_BREADCRUMB_WARNING  4u
#define CC_BREADCRUMB_ERROR    5u
#define CC_BREADCRUMB_CRITICAL 6u

typedef struct {
    int64_t  wall_ns;               /* CLOCK_REALTIME when the breadcrumb was left */
    uint32_t level;                 /* CC_BREADCRUMB_* */
    uint32_t reserved;
} cc_sec_breadcrumb_t;
_Static_assert(sizeof(cc_sec_breadcrumb_t) == 16, "cc_sec_breadcrumb_t layout");

/* CC_SEC_EVENT: the record is not a crash. The process lived on: a detector saw it stuck (a
 * hang) or something asked for a snapshot, and cc_snapshot wrote this record from a thread of
 * the running process. It is the first section; such a record has no CC_SEC_CRASH, no
 * registers of a crashed thread and no $AppEnd. Its CC_SEC_PROCESS names the thread that wrote
 * it (tid) and the time (crash_wall_ns, crash_mono_ns). Every other thread was stopped with
 * ptrace by the thread helper for `stopped_microseconds`, read, and let go before the file was
 * written: its frames are where it stood; its async chains were read just after (a thread that
 * ran on meanwhile may show a shorter one). */
enum cc_record_kind {
    CC_KIND_CRASH    = 0,           /* never written: a record without CC_SEC_EVENT */
    CC_KIND_HANG     = 1,           /* a detector fired */
    CC_KIND_SNAPSHOT = 2,           /* asked for: crash-inspect snapshot, or the program itself */
    CC_KIND_MEMORY   = 3,           /* the memory watch: the cgroup's usage came near its limit (a CC_SEC_MEMORY_WATCH follows) */
};
enum cc_event_detector {
    CC_DETECTOR_NONE        = 0,    /* a snapshot */
    CC_DETECTOR_POOL        = 1,    /* the cooperative pool's heartbeat ran late by observed_ms */
    CC_DETECTOR_EVENT_LOOP  = 2,    /* an event loop's heartbeat ran late (blocked_tid: the loop's thread) */
    CC_DETECTOR_REQUEST     = 3,    /* a request stayed in flight observed_ms (request_key: its key) */
    CC_DETECTOR_SHUTDOWN    = 4,    /* a graceful shutdown began observed_ms ago and has not ended */
    CC_DETECTOR_HEARTBEAT   = 5,    /* the program's own heartbeat ran late */
    CC_DETECTOR_MEMORY      = 6,    /* the memory watch (threshold_ms and observed_ms are 0: the bytes are in CC_SEC_MEMORY_WATCH) */
    CC_DETECTOR_DEADLOCK    = 7,    /* threads wait on each other's locks (the cycle: CC_SEC_LOCK_WAITS; blocked_tid: its first thread; observed_ms: how long it was seen) */
};
#define CC_EVENT_NAME_MAX 64
typedef struct {
    uint32_t kind;                  /* enum cc_record_kind */
    uint32_t detector;              /* enum cc_event_detector */
    uint64_t threshold_ms;          /* the detector's threshold */
    uint64_t observed_ms;           /* how late the heartbeat was, how old the request or shutdown */
    uint64_t request_key;           /* CC_DETECTOR_REQUEST: the stuck request's key (its CC_SEC_REQUEST) */
    int32_t  blocked_tid;           /* the thread the detector names (an event loop's), 0 = none */
    uint32_t stopped_microseconds;  /* how long the other threads were stopped */
    uint32_t threads_stopped;       /* how many the thread helper stopped and read */
    uint32_t stall_cpu_span_ms;     /* what CC_SEC_THREAD_STATES' stall_cpu_ms covers: from the watcher's tick before the stall to the record (0: none) */
    char     name[CC_EVENT_NAME_MAX]; /* what fired, or why it was asked for: "cooperative pool", a loop's name */
} cc_sec_event_t;
_Static_assert(sizeof(cc_sec_event_t) == 112, "cc_sec_event_t layout");

/* CC_SEC_REQUEST_TASK: for a request attached in a task (not CC_REQUEST_THREAD), in a record of a
 * live process, where that task will resume: its ResumeTask (the function it resumes in: the
 * awaiting function's continuation) and ResumeContext, whose chain of callers follows as a
 * CC_SEC_ASYNC_CHAIN with CC_ASYNC_REQUEST_TASK. The task is read with the same debug layout as
 * CC_SEC_ASYNC_TASK (the task's heap metadata checked first); status says whether it could be. A
 * task that a thread is running right now also ends one of that thread's chains (its
 * CC_SEC_ASYNC_TASK names the same task): then that thread's frames say where it is, and these
 * words where it last resumed. */
enum cc_request_task_status {
    CC_REQUEST_TASK_READ    = 1,    /* resume and context were read from the task */
    CC_REQUEST_TASK_UNKNOWN = 2,    /* the runtime's task layout is not known in this process */
    CC_REQUEST_TASK_NOT_TASK = 3,   /* the key does not read as a task (it ended, or was reused) */
};
typedef struct {
    uint64_t key;                   /* the request's key: its task */
    uint64_t resume;                /* ResumeTask, stripped of any pointer-authentication code */
    uint64_t context;               /* ResumeContext */
    uint32_t task_id;
    uint32_t job_flags;
    uint32_t status;                /* enum cc_request_task_status */
    uint32_t reserved;
} cc_sec_request_task_t;
_Static_assert(sizeof(cc_sec_request_task_t) == 40, "cc_sec_request_task_t layout");

/* CC_SEC_MEMORY_WATCH: in a record of kind CC_KIND_MEMORY, right after CC_SEC_EVENT: what the
 * memory watch saw when the process's memory cgroup came near its limit. Read by ordinary code
 * (the watcher's thread) before the other threads were stopped: the cgroup's files and glibc's
 * mallinfo2 (which takes the allocator's locks, so never while a thread is held). */
#define CC_MEMORY_V2       0x1u     /* cgroup v2 (else v1) */
#define CC_MEMORY_HIGH     0x2u     /* limit_bytes is memory.high (lower than memory.max): throttling, not the OOM killer, starts there */
#define CC_MEMORY_MALLINFO 0x4u     /* the malloc_* fields were read */
#define CC_MEMORY_STAT     0x8u     /* anon, file and shmem were read (memory.stat) */
typedef struct {
    uint64_t usage_bytes;           /* v2 memory.current, v1 memory.usage_in_bytes */
    uint64_t limit_bytes;           /* the limit watched: v2 the lower of memory.max and memory.high, v1 memory.limit_in_bytes */
    int64_t  growth_bytes;          /* usage now less usage growth_seconds ago (the oldest sample of the last minute) */
    uint32_t growth_seconds;        /* 0: no earlier sample */
    uint32_t flags;                 /* CC_MEMORY_* */
    uint64_t anon_bytes;            /* memory.stat: v2 anon, v1 rss */
    uint64_t file_bytes;            /* v2 file, v1 cache */
    uint64_t shmem_bytes;           /* v2 shmem, v1 shmem */
    uint64_t malloc_arena;          /* mallinfo2: arena + hblkhd, what malloc holds from the system */
    uint64_t malloc_in_use;         /* uordblks + hblkhd: handed out and not freed */
    uint64_t malloc_free;           /* fordblks: held and free */
    uint64_t malloc_mmapped;        /* hblkhd: in chunks of their own (large allocations) */
    uint32_t threads;               /* the process's threads (/proc/self/status) */
    uint32_t threshold_percent;     /* the share of the limit that fired the watch */
} cc_sec_memory_watch_t;
_Static_assert(sizeof(cc_sec_memory_watch_t) == 96, "cc_sec_memory_watch_t layout");

/* CC_SEC_THREAD_STATES: in a hang or snapshot record, right after CC_SEC_EVENT: each thread of
 * the process as the kernel's scheduler had it just before the threads were stopped — its state
 * (/proc/self/task/<tid>/stat's letter: R running, S sleeping, D disk wait, …) and the CPU time it
 * used in a window of window_ms that ended then (two readings of utime + stime), and in all. Read
 * by ordinary code on the watcher's thread, which is not in the list: a stall whose threads used
 * the CPU through the window is computing; one whose threads did not, waiting. */
typedef struct {
    uint32_t count;                 /* cc_thread_state_t entries that follow */
    uint32_t window_ms;             /* the window between the two readings */
} cc_sec_thread_states_t;
typedef struct {
    int32_t  tid;
    uint8_t  state;                 /* the scheduler's letter, as /proc shows it */
    uint8_t  reserved[3];
    uint32_t window_cpu_ms;         /* CPU time (user + system) in the window */
    uint32_t stall_cpu_ms;          /* CPU time since the stall began (from the hang watcher's last tick before it; 0 in a snapshot) */
    uint64_t cpu_ms;                /* CPU time in all, at the window's end */
} cc_thread_state_t;
_Static_assert(sizeof(cc_sec_thread_states_t) == 8, "cc_sec_thread_states_t layout");
_Static_assert(sizeof(cc_thread_state_t) == 24, "cc_thread_state_t layout");

/* CC_SEC_LOCK_WAITS: in a hang or snapshot record, after CC_SEC_THREAD_STATES: each thread that was
 * blocked in futex(2) just before the threads were stopped, the word it waited on and, where the
 * word belongs to a lock whose layout says who holds it, the lock and its holder. Read by ordinary
 * code on the watcher's thread (cc_locks.c): the call's arguments from /proc/self/task/<tid>/syscall,
 * the lock's words with process_vm_readv, each kind accepted only when every word checks out
 * (the holder a live thread of the process) — never guessed. When cycle_length is not 0 the first
 * cycle_length entries are a deadlock, in order: each waits on a lock the next one holds, the last
 * on one the first holds (one thread alone: it waits on a lock it holds itself). */
typedef struct {
    uint32_t count;                 /* cc_lock_wait_t entries that follow */
    uint32_t cycle_length;          /* the deadlock's threads, first in the list; 0 = none */
} cc_sec_lock_waits_t;
enum cc_lock_kind {
    CC_LOCK_FUTEX         = 0,      /* a futex word no known lock layout explains (a condition variable, a semaphore, …): no holder */
    CC_LOCK_MUTEX         = 1,      /* glibc pthread_mutex_t (normal, recursive, error-checking, adaptive; NIOLock, NSLock): holder __owner */
    CC_LOCK_MUTEX_ROBUST  = 2,      /* a robust pthread_mutex_t: holder the lock word's tid, agreeing with __owner */
    CC_LOCK_MUTEX_PI      = 3,      /* a priority-inheritance pthread_mutex_t: holder the lock word's tid, agreeing with __owner */
    CC_LOCK_RWLOCK_WRITER = 4,      /* glibc pthread_rwlock_t held for writing: holder __cur_writer */
    CC_LOCK_RWLOCK_READERS = 5,     /* glibc pthread_rwlock_t held for reading (a writer waits): readers are not recorded by the lock */
    CC_LOCK_PI_FUTEX      = 6,      /* a priority-inheritance futex word (Swift's Synchronization.Mutex on Linux): holder the word's tid */
};
#define CC_LOCK_HOLDER_GONE   0x1u  /* the word names a holder that is no thread of this process */
#define CC_LOCK_UNREADABLE    0x2u  /* the lock's words could not be read (freed meanwhile) */
#define CC_LOCK_RELEASED      0x4u  /* the lock was free when read: the thread was about to wake */
typedef struct {
    int32_t  tid;                   /* the waiting thread */
    int32_t  holder_tid;            /* the lock's holder; 0 = none or not known */
    uint32_t kind;                  /* enum cc_lock_kind */
    uint32_t flags;                 /* CC_LOCK_* */
    uint64_t futex_address;         /* the word it waits on (futex(2)'s first argument) */
    uint64_t lock_address;          /* the lock it belongs to (the mutex, the rwlock); the word itself for CC_LOCK_FUTEX */
    uint32_t futex_op;              /* futex(2)'s operation, FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME kept */
    uint32_t futex_value;           /* the value it waits for the word to leave (FUTEX_WAIT's third argument) */
    uint32_t words[8];              /* the lock's first 32 bytes as read (a mutex: __lock, __count, __owner, __nusers, __kind) */
} cc_lock_wait_t;
_Static_assert(sizeof(cc_sec_lock_waits_t) == 8, "cc_sec_lock_waits_t layout");
_Static_assert(sizeof(cc_lock_wait_t) == 72, "cc_lock_wait_t layout");

/* CC_SEC_STACK_SAMPLES: in a hang record whose threads were computing (CC_SEC_THREAD_STATES: a
 * thread on the CPU for a quarter of its window), after CC_SEC_THREAD_STATES: the busy threads
 * (at most 8) stopped and unwound `samples` times, interval_ms apart, before the record — where
 * they were most often is what the stall spends its time in, where the record's one reading of
 * each thread may be anywhere. Each entry is a cc_stack_sample_t and its frame_count pcs
 * (uint64_t, innermost first; the first exact, the others return addresses). */
typedef struct {
    uint32_t count;                 /* entries that follow */
    uint32_t samples;               /* rounds taken */
    uint32_t interval_ms;           /* between rounds */
    uint32_t reserved;
} cc_sec_stack_samples_t;
typedef struct {
    int32_t  tid;
    uint32_t round;                 /* 0 … samples - 1 */
    uint32_t frame_count;           /* at most 64 */
    uint32_t reserved;
} cc_stack_sample_t;
_Static_assert(sizeof(cc_sec_stack_samples_t) == 16, "cc_sec_stack_samples_t layout");
_Static_assert(sizeof(cc_stack_sample_t) == 16, "cc_stack_sample_t layout");

/* CC_SEC_GUARDED_HEAP: the crash is a memory error in one of the guarded heap's sampled
 * allocations (product CrashCaptureGuardedHeap): a fault on a freed slot or a guard page, or a
 * double or invalid free the allocator stopped with abort(). At most one per record, written by
 * the crash handler after CC_SEC_CRASH; the allocation's stack (alloc_frame_count return
 * addresses, innermost first) and, once freed, the free's (free_frame_count) follow. */
enum cc_guarded_heap_error {
    CC_GH_USE_AFTER_FREE  = 1,      /* an access to a freed allocation */
    CC_GH_BUFFER_OVERFLOW = 2,      /* an access past an allocation's end */
    CC_GH_BUFFER_UNDERFLOW = 3,     /* an access before an allocation's start */
    CC_GH_DOUBLE_FREE     = 4,      /* free of an allocation already freed */
    CC_GH_INVALID_FREE    = 5,      /* free of a pointer into the pool that no allocation starts at */
    CC_GH_UNKNOWN         = 6,      /* an access to the pool no allocation explains (a wild pointer) */
};
#define CC_GH_FREED           0x1u  /* the allocation had been freed (free_tid and its frames are valid) */
#define CC_GH_MAX_FRAMES      32    /* frames kept of each stack */
typedef struct {
    uint32_t error;                 /* cc_guarded_heap_error */
    uint32_t flags;                 /* CC_GH_* */
    uint64_t access_address;        /* the faulting address, or the pointer given to free */
    uint64_t allocation_address;    /* the allocation's first byte */
    uint64_t allocation_size;       /* the size asked for */
    int32_t  alloc_tid;
    int32_t  free_tid;              /* 0 unless CC_GH_FREED */
    uint32_t alloc_frame_count;     /* at most CC_GH_MAX_FRAMES */
    uint32_t free_frame_count;      /* at most CC_GH_MAX_FRAMES; 0 unless CC_GH_FREED */
} cc_sec_guarded_heap_t;
_Static_assert(sizeof(cc_sec_guarded_heap_t) == 48, "cc_sec_guarded_heap_t layout");

/* CC_SEC_FATE: a hang record whose process was killed while that hang was still open (no
 * detector had seen it end): a later launch of the app, which found the run's marker without an
 * end and no crash record of it, copies the record it kept and adds this section just before
 * CC_SEC_END (rewritten with the new count), under a name of its own (the hang record's time
 * and pid, tid 0). Ordinary code writes it, never a signal handler; a record has at most one. */
enum cc_fate {
    CC_FATE_KILLED = 1,             /* the process was killed (SIGKILL: a liveness probe, the end of a grace period) */
};
#define CC_FATE_OOM 0x1u            /* flags: its memory cgroup's OOM killer counted a kill since the run's start */
typedef struct {
    uint32_t fate;                  /* enum cc_fate */
    uint32_t flags;                 /* CC_FATE_* */
    int64_t  last_seen_wall_ms;     /* when the run was last seen alive (Unix ms; 0 = not known): it died within 2 s after */
    int64_t  last_seen_after_ms;    /* from this record's time to that sighting (-1 = not known) */
} cc_sec_fate_t;
_Static_assert(sizeof(cc_sec_fate_t) == 24, "cc_sec_fate_t layout");

typedef struct {
    uint32_t section_count;         /* sections before this one */
    uint32_t write_microseconds;    /* from the signal to this section (0 = not measured) */
} cc_sec_end_t;
_Static_assert(sizeof(cc_sec_end_t) == 8, "cc_sec_end_t layout");

/* What a record directory holds, counted for the bound a start keeps (CrashRecordFormat's
 * RecordDirectoryBound): *records the entries named CC_RECORD_PREFIX…CC_RECORD_EXTENSION or
 * …CC_RECORD_PARTIAL_EXTENSION (judged by their ends only: an upper bound), *bytes the sizes of
 * the regular files named CC_RECORD_PREFIX… and of the ledger. One pass of getdents64 into a
 * stack buffer and an fstatat per such entry: no allocation, no sorting, cheap on every start.
 * Ordinary code (not for a signal handler). Returns 0, or -1 with errno when the directory
 * cannot be opened or read. */
int cc_record_directory_usage(const char *directory, uint64_t *records, uint64_t *bytes);

/* The same, of the directory open at `directory_fd`, listed from its start (the fd's offset is
 * moved: for an fd whose offset nothing else uses, as capture's own directory fd). */
int cc_record_directory_usage_fd(int directory_fd, uint64_t *records, uint64_t *bytes);

#endif /* CC_RECORD_H */
