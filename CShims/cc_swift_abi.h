/* cc_swift_abi.h — everything the C core assumes about the Swift runtime's private layouts, with where each comes from, how it is checked and what happens when the check fails.
 *
 * None of this is public ABI of the Swift runtime. The core reads it raw, with fault-proof reads
 * (cc__safe_read) at crash time, so a wrong assumption costs a missing section or a note, never
 * a fault, a hang or a changed death. Sources are swiftlang/swift's; "6.0", "6.3" name the
 * runtimes the assumptions were seen in. Code that only uses the layouts (cc_async.c walks the
 * chains, cc_context.c names the crashed request, cc_handler.c writes the fatal message) includes
 * this header; the constants, the layout readers and the probe are here and in cc_swift_abi.c.
 *
 * 1. THE FATAL-ERROR MESSAGE. swift_getFatalErrorMessageBuffer() (include/swift/Runtime/Debug.h,
 *    stdlib/public/runtime/Errors.cpp) returns the address of a `std::atomic<const char *>` that
 *    fatalError() and friends set to their message just before they trap.
 *    Checked at install (cc__swift_abi_prepare): the symbol must be found with dlsym; it is
 *    called then, never in the handler, which only loads the pointer (a one-word atomic load) and
 *    reads the text fault-proof. Failing (not exported by an older runtime, not a Swift program):
 *    no CC_STR_FATAL_MESSAGE and no CC_STR_RUNTIME_WARNINGS in records.
 *    The buffer is not the fatal error's alone. swift_reportError() (Errors.cpp, reportOnCrash)
 *    appends every report to it: the fatal paths' and the non-fatal ones' (the concurrency
 *    runtime's "SWIFT TASK CONTINUATION MISUSE: ... leaked its continuation" among them), each
 *    time as a new allocation holding the old text and then the new (the old one is never freed).
 *    So at a crash the text is the run's earlier reports, then perhaps this crash's message.
 *    Whose text it is, is told by two facts, neither guessed from the text:
 *    a. WHERE THE DEATH CAME FROM (cc__swift_fatal_path). The runtime's fatal paths end in one of
 *       two ways: the stdlib's (fatalError, a failed precondition or force-unwrap, a double
 *       resume) report, then trap inside libswiftCore (_assertionFailure, _fatalErrorMessage:
 *       never inlined), so the kernel's SIGILL (x86-64 ud2) or SIGTRAP (aarch64 brk) has its pc
 *       in the runtime's image; the C++ runtime's (a failed cast, a retain overflow) report,
 *       then call abort() from the runtime's image, so the SIGABRT is sent by the process to
 *       itself and the first frame outside the C library lies in the runtime's image. The two
 *       images are those holding swift_reportError and abort (dlsym at install). Any other death
 *       (SIGSEGV, SIGBUS, SIGFPE, a trap in the app's own code, which is how -O code traps on a
 *       force-unwrap, an overflow or a failed precondition without writing anything, an abort
 *       from a C library) leaves the whole text to the earlier reports. With the runtime linked
 *       into the executable (-static-stdlib) the runtime's image is the executable: (a) then
 *       only rules out what lies outside it, and (b) decides the rest.
 *    b. WHAT THE BUFFER HELD BEFORE (cc__swift_reports_look, cc__swift_reports_read). Ordinary
 *       code looks at the buffer now and then: at install, at each breadcrumb and each request
 *       context attached, at each hang watcher and run watch tick, at each snapshot
 *       (cc_note_runtime_reports). A look costs one load and a compare while the text is the
 *       same; when it changed, the look keeps the pointer, the text's length, its last
 *       CC__SWIFT_REPORTS_TAIL bytes and when it was first seen. At a crash, the text up to the
 *       newest look made at least CC__SWIFT_REPORTS_SETTLE_NS before the handler was entered is
 *       earlier reports (a look that fell between a fatal report and its trap is too recent to
 *       count); what follows it can be this crash's. The look is checked, not trusted: the
 *       current text must hold the same last bytes at the same length (the runtime appends), or
 *       no look counts and the whole text is (a)'s to judge. What the record cannot tell: a
 *       report made after the last look and before an unrelated death that (a) lets through
 *       (an abort from the runtime's image, or any trap or abort in a -static-stdlib program)
 *       is kept as that crash's message too.
 *
 * 2. ASYNC CONTEXTS. An AsyncContext (include/swift/ABI/Task.h) starts with two words: Parent
 *    (the caller's context) at +0 and ResumeParent (where the caller resumes) at +8, and is
 *    allocated 16-byte aligned. An async function's frame keeps its own context in the word just
 *    below its frame record, fp - 8 (stdlib/public/RuntimeModule/FramePointerUnwinder.swift reads
 *    it there), and an async partial function receives it in the async context register of the
 *    swiftasync calling convention (x86-64 r14, aarch64 x22: cc__context_async_register in
 *    cc_arch_*.c, since only those files name registers). On aarch64 with pointer
 *    authentication ResumeParent may be signed: it is stripped (cc__strip_code_address), as the
 *    Swift backtracer strips it. The same two-word prefix since Swift 5.5, on 64-bit Linux
 *    (x86-64 and aarch64; chains of real Swift async frames are tested on x86-64 only).
 *    Checked at crash time, per context, since nothing tells in advance: a candidate is followed
 *    only when it is non-zero, 16-byte aligned, readable, and its ResumeParent lies in a loaded
 *    image. Failing (another layout): chains end early (UNREADABLE, MISALIGNED, NOT_CODE) and a
 *    reader shows the physical frames only (cc_async.c).
 *
 * 3. TASKS (AsyncTask, debug layout version 1). Swift's concurrency runtime exports what lldb
 *    reads (stdlib/public/Concurrency/Debug.h): _swift_concurrency_debug_asyncTaskMetadata (the
 *    heap metadata every AsyncTask starts with), _swift_concurrency_debug_internal_layout_version
 *    (1 since Swift 6.1) and _swift_concurrency_debug_asyncTaskSize (sizeof(AsyncTask), 208 in
 *    6.3). Version 1 places, on 64-bit (include/swift/ABI/Task.h: HeapObject, then Job's
 *    SchedulerPrivate[2], Flags, Id, ...; AsyncTask's ResumeTask and ResumeContext): the metadata
 *    at +0, JobFlags at +32 (kind in its low byte, 0 for a task; IsChildTask 0x1000000), the Id at
 *    +36, ResumeTask at +56, ResumeContext at +64, and for a child task its parent (the child
 *    fragment's first word) right after the AsyncTask. A task's first context is allocated with
 *    it, after its header and fragments, within CC__SWIFT_TASK_SCAN bytes: the nearest 16-byte
 *    aligned word before that context holding the task metadata starts the task.
 *    Checked at install (cc__swift_abi_prepare): the three symbols found, the version exactly 1,
 *    the task size a multiple of 8 within [CC__SWIFT_TASK_SIZE_MIN, CC__SWIFT_TASK_SIZE_MAX]; at
 *    crash time every task read must start with the metadata and have kind 0. Failing:
 *    cc__g.task_metadata stays 0 and records hold no CC_SEC_ASYNC_TASK, and CC_SEC_REQUEST_TASK
 *    says CC_REQUEST_TASK_UNKNOWN (a word that is not a task: CC_REQUEST_TASK_NOT_TASK).
 *
 * 4. THE CURRENT TASK. The runtime keeps the task a thread runs in a thread-local variable
 *    (stdlib/public/Concurrency/Actor.cpp, ActiveTask; swift_task_getCurrent reads it). For a
 *    library loaded at start that variable lies in the initial TLS block, or in one of the first
 *    pthread keys' values in glibc's thread descriptor, at a fixed distance from the thread
 *    pointer (cc__arch_thread_pointer), the same for every thread. The distance is not assumed:
 *    it is found by the probe (5).
 *
 * 5. TASK-LOCAL BINDINGS. A task's task-local values are a linked list whose head is a word
 *    inside the task (TaskLocal::Storage in its private storage); each item (include/swift/ABI/
 *    TaskLocal.h, TaskLocal::Item) is 16-byte aligned and starts { next | link bits, key, value
 *    type, value... }: the low CC__SWIFT_ITEM_LINK_BITS of next say what it links to (two bits
 *    in 6.0, three in 6.3), an item that only links to a parent task's items has no key (6.3) or
 *    no value type (6.0), and an 8-byte value sits right after the value type. Swift's
 *    CrashContext binds a request's handle to its own TaskLocal object (the key).
 *    Checked by the probe, never assumed (cc_context_probe, ordinary code run from the first
 *    CrashContext bindings): from CC__SWIFT_PROBE_TASKS distinct tasks it collects the places
 *    that hold the task near the thread pointer (4) and the words of the task that lead to an
 *    item with our key and value; the layout is KNOWN only when exactly one place of each kind
 *    survives every task. After that every attach checks both places again (cc_context_check:
 *    two loads), and one mismatch, a second key, or no single survivor after
 *    CC__PROBE_TASKS_MAX tasks makes it FAILED for good, with the reason kept
 *    (cc__g.context_layout_note). Failing, or not yet KNOWN: records name no crashed request
 *    (CC_REQUESTS_UNKNOWN) and a note says why; a wrong request is worse than none. The test
 *    flag CC_FLAG_TEST_UNKNOWN_TASK_LAYOUT makes the probe fail at once.
 *
 * What the checks found lives in cc__g (cc_internal.h: fatal_message_slot, task_metadata,
 * task_size, context_*), read by the handler.
 */
#ifndef CC_SWIFT_ABI_H
#define CC_SWIFT_ABI_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/* 2. An AsyncContext's first two words. */
typedef struct {
    uint64_t parent;             /* Parent: the caller's context, 0 for a task's first */
    uint64_t resume_parent;      /* ResumeParent: where the caller resumes (may be PAC-signed) */
} cc__swift_async_context_t;
#define CC__SWIFT_CONTEXT_ALIGN        16   /* AsyncContext is 16-byte aligned */
#define CC__SWIFT_FRAME_CONTEXT_OFFSET 8    /* an async frame's context is the word at fp - 8 */

/* 3. AsyncTask, debug layout version 1 (64-bit). */
#define CC__SWIFT_TASK_LAYOUT_VERSION  1
#define CC__SWIFT_TASK_SIZE_MIN        72          /* through ResumeContext */
#define CC__SWIFT_TASK_SIZE_MAX        1024
#define CC__SWIFT_TASK_HEADER_MAX      (CC__SWIFT_TASK_SIZE_MAX + 8)  /* a task and its child fragment's parent */
#define CC__SWIFT_TASK_SCAN            1024        /* bytes before a first context searched for its task */
#define CC__SWIFT_TASK_ALIGN           16          /* a task is a 16-byte aligned heap object */
#define CC__SWIFT_TASK_METADATA_WORD   0           /* words of the task: its heap metadata, */
#define CC__SWIFT_TASK_FLAGS_WORD      4           /* JobFlags (low 32 bits) and Id (high 32 bits), */
#define CC__SWIFT_TASK_RESUME_WORD     7           /* ResumeTask, */
#define CC__SWIFT_TASK_CONTEXT_WORD    8           /* ResumeContext */
#define CC__SWIFT_JOB_KIND_MASK        0xFFu       /* JobFlags' kind; 0 is a task */
/* A task's header fields, as cc__swift_read_task reads them. */
typedef struct { uint32_t flags, id; uint64_t resume, context, parent; } cc__swift_task_t;

/* 4 and 5. The current task and the task-local bindings: how far the probe got (cc__g.context_layout):
 * not looked for yet, being probed, known (checked on every attach), failed. */
#define CC__LAYOUT_NONE    0
#define CC__LAYOUT_PROBING 1
#define CC__LAYOUT_KNOWN   2
#define CC__LAYOUT_FAILED  3
#define CC__PROBE_CANDIDATES   16   /* places of each kind kept after the first task */
#define CC__PROBE_TASKS_MAX    16   /* tasks remembered; no single survivor by then: FAILED */
#define CC__SWIFT_PROBE_TASKS  3    /* distinct tasks a place must be confirmed by */
#define CC__SWIFT_TLS_ABOVE    4096 /* bytes above the thread pointer searched for the current task (glibc's struct pthread, its first pthread keys) */
#define CC__SWIFT_TLS_RANGES   64   /* TLS blocks searched */
#define CC__SWIFT_TASK_WINDOW  1024 /* bytes of a task searched for its task-local head */
#define CC__SWIFT_ITEM_STEPS   64   /* task-local items followed at a crash */
#define CC__SWIFT_ITEM_LINK_BITS 7ull /* the low bits of an item's next word (items are 16-byte aligned) */

/* Install time (dlsym; not async-signal-safe): checks 1 and 3 and keeps what they found in
 * cc__g (fatal_message_slot, runtime_anchor, libc_anchor; task_metadata and task_size, 0 when
 * not understood). */
void cc__swift_abi_prepare(void);

/* 1b. Looks kept of the runtime's message buffer, and how a crash reads it. */
#define CC__SWIFT_REPORTS_TAIL      64          /* last bytes of the text a look keeps, to check it at a crash */
#define CC__SWIFT_REPORTS_SETTLE_NS 100000000LL /* a look this recent before the crash does not count */
/* What the buffer holds at a crash: its text (0: none), how many of its first bytes were seen by
 * a look that counts (0: none counts), and its whole length when a look saw this very text (its
 * pointer unchanged since: settled or not, the length is exact), else 0. */
typedef struct { uint64_t text; uint64_t earlier; uint64_t length; } cc__swift_reports_t;
/* Ordinary code and async-signal-safe, any thread, lock-free: looks at the buffer (1b). */
void cc__swift_reports_look(void);
/* async-signal-safe: the buffer as a crash whose handler was entered at `entry_ns` (monotonic)
 * finds it (1b); 0 when there is no text. */
int cc__swift_reports_read(int64_t entry_ns, cc__swift_reports_t *out);
/* async-signal-safe: whether this death is one the runtime's fatal paths end in (1a): `pc` the
 * crashed thread's, `frames` its unwound frames (the first is pc). Needs the images collected. */
int cc__swift_fatal_path(int signo, const siginfo_t *info, pid_t pid, uint64_t pc, const uint64_t *frames,
                         uint32_t count);

/* async-signal-safe: the task whose first context is `first_context` (3), or 0. */
uint64_t cc__swift_task_of_context(uint64_t first_context);
/* async-signal-safe: a task's header fields, 1 when `task` reads as a task (3), else 0. Only
 * when cc__g.task_metadata is set. */
int cc__swift_read_task(uint64_t task, cc__swift_task_t *out);

/* async-signal-safe: the calling thread's current task (4), or 0; only once the layout is
 * CC__LAYOUT_KNOWN. */
uint64_t cc__swift_current_task(void);
/* async-signal-safe: the value bound to the probed key (cc__g.context_key) in `task`'s task-local
 * bindings (5), the innermost first, or 0; only once the layout is CC__LAYOUT_KNOWN. */
uint64_t cc__swift_task_local_value(uint64_t task);

#endif /* CC_SWIFT_ABI_H */
