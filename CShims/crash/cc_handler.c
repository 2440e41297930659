/* cc_handler.c — the fatal-signal handler: record the crash once, then hand the signal on so the process dies as it would have. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/*
 * THE CONTRACT. Everything reachable from cc__handler runs after a fatal signal, possibly on a
 * small alternate stack, possibly while another thread holds the malloc lock, the loader lock
 * or a stdio lock. So it may use only:
 *   - system calls through syscall(2), the C library's one entry for them all: the cc__sys_*
 *     of cc_internal.h (openat, read, write, close, fstatat, renameat, getpid, rt_sigprocmask,
 *     prctl, nanosleep...) and, directly, gettid, tgkill, rt_tgsigqueueinfo, prlimit64, futex,
 *     setitimer, getdents64, process_vm_readv, sched_getaffinity; besides it, only the C
 *     library functions bound at install so that the dynamic loader never looks one up here
 *     (sigaction, clock_gettime, sigemptyset and friends, memset, clone:
 *     cc__bind_handler_imports in cc_install.c; a new one belongs in its list);
 *   - C11 atomics (lock-free on every supported target);
 *   - capture's own unwinder (cc_cfi.c, cc_unwind.c: the crash's image table, the mapped
 *     .eh_frame tables, fault-proof reads of the stack; nothing to prepare, no lock);
 *   - the previous handler, which the program installed for this very signal (cc_chain.c);
 *   - fixed buffers and pre-formatted strings in cc__g, prepared by cc_install;
 *   - write(2) to fd 2, only for the summary of a record that is not whole (below).
 * It may NOT use malloc/free, stdio, any lock, dl_iterate_phdr/dladdr/dlsym, symbol-name
 * lookup, getenv, strerror, localtime, or anything written in Swift.
 * Every function it can reach says "async-signal-safe" in its comment.
 *
 * ORDER OF WORK. First the previous action runs (cc_chain.c says how and why first). When the
 * crash is one the process will die of, the recording thread claims cc__g.owner, arms the
 * watchdog, stops every other thread (cc_threads.c; those that block the stop signal with the
 * ptrace helper, cc_helper.c), collects the loaded images, and writes
 * the sections most valuable first, flushing them to the file at checkpoints before each step
 * that could fault or stall: the signal, the process, the compensating $AppEnd, the requests in
 * flight (then one line on stderr naming the crash and its request); the
 * registers, the crashing thread's frames, its Swift async context chains and the main executable's image; the strings (app, executable, fatal message, runtime warnings, abort message),
 * memory windows, breadcrumbs, images; the other threads; the end marker. A fault at any step
 * leaves the sections before it readable in the ".partial" file; on a nearly full disk or
 * under a small RLIMIT_FSIZE what is lost is the least valuable part. cc__record runs these
 * steps as phases, one function each, in this order: cc__record_prepare (nothing written yet),
 * cc__record_header (checkpoint 1, then the line on stderr), cc__record_crashed_thread
 * (checkpoints 2 to 4), cc__record_context (checkpoint 5, when there are other threads), the
 * other threads, cc__record_finish.
 *
 * A RECORD NOT WHOLE. When the file cannot be created (EROFS, ENOENT, EACCES, ENOSPC...), a
 * write fails (ENOSPC, EFBIG, EIO), or closing or the final rename fails, the writer stops
 * writing (w->failed, with the first failure's step and errno) and the handler goes on through
 * every step all the same: the frames are still unwound, the process still dies of its signal.
 * Once, at the very end of cc__record, it then writes a short summary to fd 2 (cc_summary.c):
 * the signal, the fault address, pid and tid, why the record is not whole, where the partial
 * record is (or that none could be created) and the crashed thread's top frames as
 * image+0xoffset. A whole record adds nothing to stderr. A fault or a hang inside the handler
 * ends the process before that point: no summary then (the watchdog, DEATH below).
 *
 * CONCURRENCY. One crashing thread at a time holds the turn (cc_chain.c, ONE THREAD AT A TIME):
 * only it chains to the previous handler, and only it may begin a record; the others wait for
 * the turn inside this handler. The thread that swaps its (pid, tid) into owner writes the
 * record. Another thread crashing meanwhile, or waiting for the turn, parks for good, its own
 * context published, and is recorded with the others. The owner faulting again (a crash inside this handler) ends the process at once
 * with the original signal. An owner with another pid is stale: a vfork child (which shares
 * our memory) crashed, or the state came across fork.
 *
 * DEATH. After the record, the default action is restored, every instance of the same signal
 * sent meanwhile (kill, tgkill) is taken off the queues, and the original siginfo is queued to
 * this thread (rt_tgsigqueueinfo) while it is still blocked; the interrupted context's mask is
 * set to let only that signal through, and the handler returns. The kernel then delivers it on
 * the way back to the interrupted code: the process dies of the original signal, with the
 * original si_code and fault address and the faulting registers in the core dump, and no
 * signal that arrived meanwhile (SIGXFSZ, a timer's SIGPROF, the same signal sent by another
 * process or thread) can overtake it. scripts/death-check.sh compares these deaths with the
 * same crashes without CrashCapture.
 * Not by returning to the faulting instruction with the default action restored (the Swift
 * runtime, Breakpad, Crashpad): a fault whose cause went away meanwhile (a shared file grown by
 * another process under a SIGBUS) does not happen again and the program would run on; with the
 * signal left unblocked, the same signal sent meanwhile overtakes the re-executed fault; with it
 * blocked, qemu-user 7.2 never ends a re-executed SIGBUS. docs/decisions/return-to-fault.md has the
 * evidence. qemu-user does abort on the queued fault signal (scripts/arm64-check.sh).
 */

/* async-signal-safe: `signo`'s action back to SIG_DFL and, with `unblock`, the signal let
 * through this thread's mask: the ways the handler ends the process all start so. */
static void cc__restore_default(int signo, int unblock) {
    struct sigaction dfl = { 0 };
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(signo, &dfl, 0);
    if (!unblock) return;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    cc__sys_sigprocmask(SIG_UNBLOCK, &set, 0);
}

/* async-signal-safe (rt_sigtimedwait, a raw syscall): takes every instance of `signo` sent
 * meanwhile off this thread's queue and the process's (it is blocked here, so they wait there).
 * A standard signal is queued at most once per queue: one already pending on this thread would
 * make the kernel drop the original siginfo queued next, and the process would die of the
 * sender's (si_code SI_TKILL) instead; the process is about to die of `signo` anyway. */
static void cc__drain_pending(int signo) {
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signo);
    struct timespec none = { 0, 0 };
    /* At most one per queue (this thread's, the process's); a bound all the same. */
    for (int i = 0; i < 4; i++) {
        if (syscall(SYS_rt_sigtimedwait, &only, (void *)0, &none, (long)(_NSIG / 8)) != signo) break;
    }
}

/* async-signal-safe: arranges for the process to die of `signo` as soon as the handler
 * returns (see DEATH above). `info` may be NULL; `pid` and `tid` are this thread's. */
static void cc__die_on_return(int signo, const siginfo_t *info, ucontext_t *uc, pid_t pid, pid_t tid) {
    cc__restore_default(signo, 0);
    cc__drain_pending(signo);
    siginfo_t queued;
    unsigned char *raw = (unsigned char *)&queued;
    for (size_t i = 0; i < sizeof queued; i++) raw[i] = info ? ((const unsigned char *)info)[i] : 0;
    if (!info || queued.si_signo != signo) {
        queued.si_signo = signo;
        queued.si_code = SI_TKILL;
        queued.si_pid = pid;
        queued.si_uid = cc__sys_getuid();
    }
    if (syscall(SYS_rt_tgsigqueueinfo, (long)pid, (long)tid, (long)signo, &queued) != 0) {
        syscall(SYS_tgkill, (long)pid, (long)tid, (long)signo);
    }
    if (uc) {
        sigfillset(&uc->uc_sigmask);
        sigdelset(&uc->uc_sigmask, signo);
    } else {
        sigset_t only;
        sigemptyset(&only);
        sigaddset(&only, signo);
        cc__sys_sigprocmask(SIG_UNBLOCK, &only, 0);
    }
}

/* async-signal-safe: the init of a PID namespace gets no signal it sends itself while the action
 * is the default (the kernel drops it): only a fault is forced on it, as a fault of the program
 * would have been. So it faults, of the same kind where there is one (SIGILL, SIGTRAP, SIGFPE on
 * x86-64), else with SIGSEGV — where glibc's abort() ends in such a process too (its `hlt`). */
static void cc__fault_as_init(int signo) {
    cc__restore_default(signo, 1);
    cc__arch_fault_as(signo);   /* does not return where the architecture has the instruction */
    cc__restore_default(SIGSEGV, 1);
    /* Through a volatile address: GCC's -Warray-bounds rejects a store to a constant one in
     * the first page. */
    volatile uintptr_t unmapped = 8;
    *(volatile int *)unmapped = 0;
}

/* async-signal-safe: ends the process now with `signo` (a fault inside the handler, the
 * watchdog): the core dump then shows the handler, which is where the trouble was. */
static _Noreturn void cc__die_now(int signo) {
    cc__restore_default(signo, 1);
    syscall(SYS_tgkill, (long)cc__sys_getpid(), (long)cc__gettid(), (long)signo);
    /* Still here: the kernel dropped it, this is the init of a PID namespace. */
    if (cc__sys_getpid() == 1) cc__fault_as_init(signo);
    syscall(SYS_exit_group, (long)(128 + signo)); /* not reached: the default action of a fatal signal ends the process */
    for (;;) {}
}

/* async-signal-safe: the watchdog. If writing the record hangs (a wedged filesystem, a stack
 * whose walk never ends), SIGALRM arrives after watchdog_seconds (10 by default) and
 * ends the process with the signal the crash began with. Armed (setitimer(2), as alarm(2) does)
 * when the record starts and never disarmed: the process is dying. */
static void cc__watchdog(int signo) {
    (void)signo;
    cc__die_now(cc__g.crash_signo);
}

static void cc__watchdog_arm(void) {
    struct sigaction action = { 0 };
    action.sa_handler = cc__watchdog;
    sigfillset(&action.sa_mask);
    action.sa_flags = SA_ONSTACK;
    sigaction(SIGALRM, &action, 0);
    /* alarm(2) as setitimer(2) through syscall(2): the same timer, and no C library function
     * that install could not have bound (cc__bind_handler_imports) without cancelling the
     * program's own alarm. */
    struct itimerval timer = { .it_interval = { 0, 0 }, .it_value = { (time_t)cc__g.watchdog_seconds, 0 } };
    syscall(SYS_setitimer, (long)ITIMER_REAL, &timer, (void *)0);
}

/* async-signal-safe: a dying process may write its record past the soft limits it had.
 * `nofile` is RLIMIT_NOFILE as cc__resources_note_limits read it (0: read it here). */
static void cc__raise_limits(const struct rlimit *nofile) {
    int resources[] = { RLIMIT_FSIZE, RLIMIT_NOFILE };
    for (size_t i = 0; i < sizeof resources / sizeof resources[0]; i++) {
        struct rlimit limit;
        if (resources[i] == RLIMIT_NOFILE && nofile) limit = *nofile;
        else if (syscall(SYS_prlimit64, 0L, (long)resources[i], (void *)0, &limit) != 0) continue;
        if (limit.rlim_cur == limit.rlim_max) continue;
        limit.rlim_cur = limit.rlim_max;
        syscall(SYS_prlimit64, 0L, (long)resources[i], &limit, (void *)0);
    }
}

/* async-signal-safe: index of signo in cc__g.signals, or -1. */
static int cc__signal_index(int signo) {
    for (int i = 0; i < CC__SIGNAL_COUNT; i++) if (cc__g.signals[i] == signo) return i;
    return -1;
}

/* async-signal-safe: the kernel forces a synchronous fault on the thread that caused it even
 * when it is ignored (it then kills). Everything else can be ignored. BUS_MCEERR_AO is the
 * asynchronous "memory error somewhere, action optional" notice. */
static int cc__is_forced(int signo, const siginfo_t *info) {
    if (!info || info->si_code <= 0) return 0;
    if (signo == SIGBUS && info->si_code == BUS_MCEERR_AO) return 0;
    return signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE || signo == SIGTRAP;
}

/* async-signal-safe: SIGABRT the process sent itself: abort(), which never returns (glibc
 * resets SIGABRT to SIG_DFL and raises it again if a handler returns). */
static int cc__is_abort(int signo, const siginfo_t *info, pid_t pid) {
    return signo == SIGABRT && info && info->si_code <= 0 && info->si_pid == pid;
}

/* async-signal-safe: the crashed thread's CC_SEC_THREAD, its frames in cc__g.frames. */
static void cc__write_crashed_thread(cc__writer_t *w, const cc_sec_thread_t *thread) {
    cc__section_begin(w, CC_SEC_THREAD);
    cc__section_put(w, thread, sizeof *thread);
    cc__section_put(w, cc__g.frames, (size_t)thread->frame_count * sizeof(uint64_t));
    cc__section_end(w);
}

/* async-signal-safe: the recording thread faulted while the unwinder walked the crashed thread
 * (reading unwind tables or a stack too damaged for it). Before the process ends, the frames found so
 * far become the crashed thread, with a note that says where the unwinder faulted, followed by
 * the images that symbolicate them. The record stays a ".partial" one: what comes after the
 * frames (async chains, strings, memory, other threads) is not written. Only the writer's own
 * functions are used, as for any section; nothing here unwinds or reads unchecked memory. */
static void cc__salvage_crashed_thread(pid_t tid) {
    cc__walk_t *walk = &cc__g.unwind_walk;
    if (!atomic_load(&walk->active)) return;
    cc__writer_t *w = &cc__g.writer;
    int truncated = 0;
    uint32_t omitted = 0;
    /* Not CC_THREAD_TRUNCATED (the step limit, or frames left out in the middle): the note says
     * why the frames end where they do. */
    cc_sec_thread_t thread = { .tid = tid, .flags = CC_THREAD_CRASHED | CC_THREAD_FROM_CONTEXT };
    cc__sys_prctl(PR_GET_NAME, (unsigned long)thread.name);
    thread.name[15] = 0;
    thread.frame_count = cc__walk_finish(walk, &omitted, &truncated);
    thread.omitted_frames = omitted;
    if (truncated) thread.flags |= CC_THREAD_TRUNCATED;
    char note[128], *p = note;
    static const char head[] = "the unwinder faulted on the crashed thread's stack after ";
    for (size_t i = 0; head[i]; i++) *p++ = head[i];
    p += cc__fmt_u64(p, thread.frame_count + omitted);
    static const char tail[] = " frames; the record ends there";
    for (size_t i = 0; tail[i]; i++) *p++ = tail[i];
    cc__write_string(w, CC_STR_NOTE, note, (size_t)(p - note));
    cc__write_unwind_note(w);
    cc__write_crashed_thread(w, &thread);
    cc__write_images(w, 1);
    cc__write_images(w, 0);
    cc__writer_flush(w);
}

/* What the phases of one crash record share: the crash as the handler got it, and what the
 * earlier phases learned. Lives in cc__record's frame, as its locals did. */
typedef struct {
    int signo;
    siginfo_t *info;             /* may be NULL */
    ucontext_t *uc;              /* may be NULL */
    pid_t pid, tid;
    int saved_errno;
    int64_t wall_ns, mono_ns;    /* when the record began */
    cc_sec_crash_t crash;        /* the CC_SEC_CRASH written (cc__record_crash) */
    cc_sec_process_t process;    /* the CC_SEC_PROCESS written (its thread name) */
    cc_sec_thread_t thread;      /* the crashed thread (its frames in cc__g.frames) */
    cc__stack_window_t stack;    /* its stack from sp up (cc__read_stack_window) */
    const cc_sec_request_t *request; /* the request it was serving, when known (cc__record_header) */
} cc__crash_t;

/* async-signal-safe: writes nothing; stops the other threads, collects the images and opens the
 * ".partial" record file. */
static void cc__record_prepare(cc__crash_t *c) {
    CC__MARK("start");
    c->wall_ns = cc__clock_ns(CLOCK_REALTIME);
    c->mono_ns = cc__clock_ns(CLOCK_MONOTONIC);
    cc__g.handler_pid = c->pid;
    /* The process's own RLIMIT_NOFILE, kept for the record before it is raised. */
    cc__raise_limits(cc__resources_note_limits());
    CC__MARK("raise_limits");
    /* The fds reserved at install: one for the /proc files read while stopping threads and
     * collecting images, one for the record. The numbers are never cleared (a vfork child
     * closes only its own copies). */
    if (cc__g.reserved_fds[0] >= 0) cc__sys_close(cc__g.reserved_fds[0]);
    CC__MARK("close_reserved0");
    /* The kernel's status first: its Threads: tells a crash alone in its process, which then
     * needs no listing of /proc/self/task (cc_threads.c), and the record keeps this text. */
    uint32_t threads = cc__resources_read_status();
    CC__MARK("status");
    cc__stop_other_threads(c->tid, threads);
    CC__MARK("stop_other_threads");
    cc__images_collect();
    CC__MARK("images_collect");
    cc__stop_unparked_threads();   /* every thread is stopped before the record file exists */
    CC__MARK("stop_unparked");
    if (cc__g.reserved_fds[1] >= 0) cc__sys_close(cc__g.reserved_fds[1]);
    cc__name_record(c->wall_ns, c->pid, c->tid);
    CC__MARK("close_reserved1+name");
    /* A file that cannot be created (or take its header) does not end the record: the writer
     * then writes nothing, but the frames are still unwound for the stderr summary. */
    cc__writer_open(&cc__g.writer, cc__g.dir_fd, cc__g.partial_name);
    CC__MARK("writer_open");
}

/* async-signal-safe: writes CC_SEC_CRASH, the signal as siginfo tells it (kept in c->crash). */
static void cc__record_crash(cc__writer_t *w, cc__crash_t *c) {
    cc_sec_crash_t *crash = &c->crash;
    crash->signo = c->signo;
    crash->errno_at_crash = c->saved_errno;
    const siginfo_t *info = c->info;
    if (info) {
        crash->code = info->si_code;
        if (info->si_code <= 0) {
            crash->flags |= CC_CRASH_FROM_PROCESS;
            crash->sender_pid = info->si_pid;
            crash->sender_uid = info->si_uid;
        } else if (info->si_code != SI_KERNEL) {
            crash->flags |= CC_CRASH_FAULT_ADDRESS;
            crash->fault_address = (uint64_t)(uintptr_t)info->si_addr;
        }
    }
    const char *name = cc_signal_name(c->signo);
    cc__strlcpy(crash->signal_name, name ? name : "", sizeof crash->signal_name);
    cc__strlcpy(crash->code_name, cc__code_name(c->signo, crash->code), sizeof crash->code_name);
    cc__strlcpy(crash->code_description, cc__code_description(c->signo, crash->code), sizeof crash->code_description);
    cc__section_begin(w, CC_SEC_CRASH);
    cc__section_put(w, crash, sizeof *crash);
    cc__section_end(w);
    /* A memory error the guarded heap caught: the allocation and its two stacks, beside the signal. */
    cc__write_guarded_heap(w, crash);
}

/* async-signal-safe: writes the signal, the process, the $AppEnd, the run id, the scope and the
 * requests in flight, flushes them (checkpoint 1), then the one crash line on stderr. */
static void cc__record_header(cc__writer_t *w, cc__crash_t *c) {
    cc__record_crash(w, c);
    cc__write_process(w, &c->process, c->pid, c->tid, c->wall_ns, c->mono_ns);
    /* The compensating $AppEnd and the run id: the session's end, and which run it was. Then the
     * app's scope as it is now. */
    cc__write_app_end(w, c->wall_ns, c->mono_ns);
    cc__write_run_and_scope(w);
    CC__MARK("crash+process+appEnd");
    /* The requests in flight, and the one this thread was serving (cc_context.c): plain reads. */
    static cc_sec_request_t request;
    int has_request = 0;
    cc__write_requests(w, c->tid, &request, &has_request, 0);
    CC__MARK("requests");
    cc__writer_flush(w); /* checkpoint: the signal, the process, the $AppEnd, the run id, the scope and the requests are on disk */
    CC__MARK("flush1");
    /* One line on stderr that names the crash, its record and its request (cc_summary.c). */
    c->request = has_request ? &request : 0;
    cc__crash_line_write(&c->crash, c->pid, c->tid, c->process.thread_name, cc__g.file_name, c->request);
    CC__MARK("crash_line");
}

/* async-signal-safe: writes nothing; unwinds the crashed thread from its signal context into
 * cc__g.frames (c->thread says how many), with the crash's own signal let through meanwhile. */
static void cc__record_unwind(cc__crash_t *c) {
    int truncated = 0;
    uint32_t omitted = 0;
    /* While the unwinder walks the stack, the crash's own signal is let through: a fault
     * of the same kind inside it then reaches this handler (cc__salvage_crashed_thread)
     * instead of the kernel's default action, which a blocked fault would get. */
    sigset_t own, mask;
    sigemptyset(&own);
    sigaddset(&own, c->signo);
    cc__sys_sigprocmask(SIG_UNBLOCK, &own, &mask);
    c->thread.frame_count = cc__unwind_context(c->uc, &cc__g.unwind_frame, &cc__cfi_recording, &cc__g.unwind_walk,
                                               cc__g.frames, cc__g.frame_pointers, cc__g.max_frames, &omitted, &truncated);
    cc__sys_sigprocmask(SIG_SETMASK, &mask, 0);
    c->thread.omitted_frames = omitted;
    c->thread.flags |= CC_THREAD_FROM_CONTEXT | (truncated ? CC_THREAD_TRUNCATED : 0);
}

/* async-signal-safe: writes the crashed thread: its registers (checkpoint 2, before the unwind),
 * its frames (checkpoint 3), its async context chains, the unwind note and the main executable's
 * image (checkpoint 4). */
static void cc__record_crashed_thread(cc__writer_t *w, cc__crash_t *c) {
    /* The crashing thread: registers, then frames unwound from the signal context. */
    c->thread.tid = c->tid;
    c->thread.flags = CC_THREAD_CRASHED;
    for (int i = 0; i < 16; i++) c->thread.name[i] = c->process.thread_name[i];
    if (c->uc) {
        cc__write_registers(w, c->uc, 0);
        if (cc__g.flags & CC_FLAG_TEST_CRASH_IN_HANDLER) {
            volatile uintptr_t unmapped = 16;   /* volatile: see cc__fault_as_init */
            *(volatile int *)unmapped = 1; /* test hook: a fault inside the handler */
        }
        while (cc__g.flags & CC_FLAG_TEST_HANG_IN_HANDLER) pause(); /* test hook: a hang */
        CC__MARK("registers");
        cc__writer_flush(w); /* checkpoint: before the unwinder walks a possibly damaged stack */
        CC__MARK("flush2");
        cc__read_stack_window(&c->stack, cc__context_sp(c->uc));
        CC__MARK("stack_window");
        cc__record_unwind(c);
    }
    CC__MARK("unwind");
    cc__write_crashed_thread(w, &c->thread);
    cc__writer_flush(w); /* checkpoint: the physical frames, before reading async contexts */
    CC__MARK("thread+flush3");
    if (c->uc) {
        /* Its Swift async callers: raw context chains, judged offline (cc_async.c). */
        cc__write_async_chains(w, c->tid, cc__g.frame_pointers, c->thread.frame_count,
                               cc__context_async_register(c->uc), CC__ASYNC_LINKS_CRASHED);
    }
    CC__MARK("async_chains");
    cc__write_unwind_note(w);
    cc__write_images(w, 1); /* the main executable's image: enough to symbolicate its frames */
    cc__writer_flush(w); /* checkpoint: the crashing thread is on disk */
    CC__MARK("main_image+flush4");
}

/* async-signal-safe: writes the Swift runtime's fatal-error message when the runtime's text ends
 * in one for this crash, and the runtime's other reports as its warnings (cc_swift_abi.h, 1a and
 * 1b); for SIGABRT, glibc's abort message, when there is one. */
static void cc__record_last_words(cc__writer_t *w, cc__crash_t *c) {
    int signo = c->signo;
    pid_t tid = c->tid;
    const ucontext_t *uc = c->uc;
    cc__swift_reports_t reports;
    if (cc__swift_reports_read(cc__g.turn_entry_ns, &reports)) {
        uint64_t pc = uc ? cc__context_pc(uc) : 0;
        if (cc__swift_fatal_path(signo, c->info, c->pid, pc, cc__g.frames, c->thread.frame_count)) {
            cc__write_message(w, CC_STR_FATAL_MESSAGE, reports.text + reports.earlier, CC__MESSAGE_MAX);
            cc__write_runtime_warnings(w, reports.text, reports.earlier);
        } else {
            cc__write_runtime_warnings(w, reports.text, cc__runtime_text_end(&reports));
        }
    }
    /* glibc's abort message: only for SIGABRT (the variable is never cleared, so after a caught
     * abort it would speak for an unrelated later crash). A pointer, then a bounded read of the
     * buffer it points to (u32 size, then the NUL-terminated text), both fault-proof. */
    /* An uncaught C++ exception this thread's terminate handler noted before it aborted. */
    if (signo == SIGABRT) cc__write_cxx_exception(w, tid, uc);
    if (signo == SIGABRT && cc__g.abort_message_slot) {
        uint64_t buffer = 0;
        uint32_t size = 0;
        if (cc__safe_read(cc__g.abort_message_slot, &buffer, sizeof buffer) == sizeof buffer && buffer &&
            cc__safe_read(buffer, &size, sizeof size) == sizeof size && size > sizeof size) {
            cc__write_message(w, CC_STR_ABORT_MESSAGE, buffer + sizeof size, size - sizeof size);
        }
    }
}

/* async-signal-safe: writes the strings known since install, the last words, the memory around
 * pc, the stack and the fault address, the resources, the breadcrumbs and every image, then flushes
 * them (checkpoint 5) when other threads are to be unwound next. A crash alone in its process
 * has none: its end section then goes out with these sections in one write. */
static void cc__record_context(cc__writer_t *w, cc__crash_t *c) {
    /* Strings known since install, then the Swift runtime's fatal-error message. */
    cc__write_app_strings(w);
    cc__record_last_words(w, c);
    CC__MARK("strings+messages");
    if (c->uc) {
        cc__write_memory(w, "pc", cc__context_pc(c->uc), 64, 64);
        /* The crashed thread's stack from sp up, as far as it is mapped: enough for a
         * debugger or a minidump made from the record later. */
        cc__write_stack(w, &c->stack);
        if (c->crash.flags & CC_CRASH_FAULT_ADDRESS) cc__write_memory(w, "fault", c->crash.fault_address, 32, 32);
        cc__write_pointed_memory(w, c->uc);
    }
    CC__MARK("memory");
    cc__write_resources(w, 1);
    CC__MARK("resources");
    cc__write_breadcrumbs(w);
    CC__MARK("breadcrumbs");
    cc__write_images(w, 0);
    CC__MARK("images");
    if (cc__other_threads_to_write(!(cc__g.flags & CC_FLAG_NO_THREAD_STACKS))) {
        cc__writer_flush(w); /* checkpoint: before unwinding the other threads */
    }
    CC__MARK("flush5");
}

/* async-signal-safe: writes the end section and renames the record to its final name (or, when
 * it is not whole, the summary on stderr), then starts the crash-time uploader. */
static void cc__record_finish(cc__writer_t *w, cc__crash_t *c) {
    cc__finish_record(w, c->mono_ns);
    CC__MARK("end+close+rename");
    /* Not whole: say so on stderr, once, now that nothing more will be tried. */
    if (w->failed) cc__summary_write(&c->crash, c->pid, c->tid, cc__g.frames, c->thread.frame_count, w);
    CC__MARK("summary");
    /* The crash-time uploader, when configured (cc_uploader.c): bounded by the watchdog. */
    cc__uploader_start(c->mono_ns + (int64_t)cc__g.watchdog_seconds * 1000000000LL - 500000000LL);
#ifdef CC_TRACE_STEPS
    cc__trace_dump("handler");
#endif
}

/* async-signal-safe: writes the whole record for this crash, phase by phase in the order of ORDER
 * OF WORK above; each phase ends at a checkpoint (cc__writer_flush), so a fault in one leaves the
 * phases before it in the ".partial" file. Other threads are stopped first. */
static void cc__record(int signo, siginfo_t *info, ucontext_t *uc, pid_t pid, pid_t tid, int saved_errno) {
    cc__writer_t *w = &cc__g.writer;
    cc__crash_t c = { .signo = signo, .info = info, .uc = uc, .pid = pid, .tid = tid, .saved_errno = saved_errno };
    cc__record_prepare(&c);
    cc__record_header(w, &c);          /* checkpoint 1 */
    cc__record_crashed_thread(w, &c);  /* checkpoints 2, 3, 4 */
    /* The container's termination message, where there is a file for it (cc_summary.c). */
    cc__termination_crash(&c.crash, tid, c.process.thread_name, c.request, cc__g.frames, c.thread.frame_count);
    CC__MARK("termination");
    cc__record_context(w, &c);         /* checkpoint 5, when other threads follow */
    cc__write_other_threads(w, tid, !(cc__g.flags & CC_FLAG_NO_THREAD_STACKS));
    CC__MARK("other_threads");
    cc__record_finish(w, &c);
}

/* async-signal-safe: this thread takes the crash (or parks, when another thread of this process
 * already has it), records it, and arranges to die of `death_signo` when the handler returns. */
static void cc__crash(int signo, int death_signo, siginfo_t *info, ucontext_t *uc, pid_t pid, pid_t tid,
                      int saved_errno) {
    uint64_t me = ((uint64_t)(uint32_t)pid << 32) | (uint32_t)tid;
    uint64_t owner = atomic_load(&cc__g.owner);
    for (;;) {
        if (owner != 0 && (pid_t)(owner >> 32) == pid) {
            if (owner == me) cc__die_now(cc__g.crash_signo);
            cc__park(uc, 1);
        }
        if (atomic_compare_exchange_strong(&cc__g.owner, &owner, me)) break;
    }
    cc__g.crash_signo = death_signo;
    cc__snapshot_abandon(pid, tid);
    CC__MARK("crash");
    cc__watchdog_arm();
    CC__MARK("watchdog");
    cc__record(signo, info, uc, pid, tid, saved_errno);
    cc__die_on_return(death_signo, death_signo == signo ? info : 0, uc, pid, tid);
}

/* async-signal-safe: the handler installed for every fatal signal. */
void cc__handler(int signo, siginfo_t *info, void *context) {
    int saved_errno = errno;
    ucontext_t *uc = (ucontext_t *)context;
    pid_t pid = cc__sys_getpid(), tid = cc__gettid();
    uint64_t owner = atomic_load(&cc__g.owner);
    if (owner != 0 && (pid_t)(owner >> 32) == pid) {
        /* The recording thread itself. A signal another thread or process sent meanwhile
         * (si_code <= 0: kill, tgkill, sigqueue; it reaches us only while the unwinder runs,
         * when the crash's own signal is let through, or when it is another fatal signal) is
         * spent here: the process is about to die of the original one, which nothing may
         * overtake, so the record goes on. A fault inside our own record: stop here, with the
         * signal the crash began with (the ".partial" file keeps what was written, and the
         * crashed thread's frames found so far when the unwinder faulted). Another thread
         * recording: park. */
        if ((pid_t)(uint32_t)owner == tid) {
            if (info && info->si_code <= 0) { errno = saved_errno; return; }
            cc__salvage_crashed_thread(tid);
            cc__die_now(cc__g.crash_signo);
        }
        cc__park(uc, 1);
    }
    int index = cc__signal_index(signo);
    if (index < 0) { errno = saved_errno; return; }
    /* One thread at a time chains and records (cc_chain.c, ONE THREAD AT A TIME): another
     * crashing thread waits here, and parks for the record when the holder begins one. */
    cc__turn_take(uc, pid, tid);
    cc__g.turn_entry_ns = cc__clock_ns(CLOCK_MONOTONIC);   /* before chaining: what the runtime said before it (cc_swift_abi.h, 1b) */
    const struct sigaction *previous = &cc__previous_actions(pid, 0)[index];
    int has_handler = (previous->sa_flags & SA_SIGINFO) ? previous->sa_sigaction != 0
                                                         : previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN;
    if (has_handler) {
        int errno_after = saved_errno;
        if (!cc__deliver_to_previous(index, signo, info, uc, saved_errno, &errno_after)) {
            /* No room on the interrupted stack for the handler's frame: the kernel would have
             * killed the process with SIGSEGV. */
            cc__crash(signo, SIGSEGV, info, uc, pid, tid, saved_errno);
            return;
        }
        cc__adopt_dispositions();
        if (!cc__is_abort(signo, info, pid)) {
            /* A fault re-executes: repaired, the program goes on; if not, it faults again and
             * comes back here with the disposition the handler left, still holding the turn.
             * A sent signal is spent, and so is the turn. */
            cc__turn_give_back(pid, tid, info && info->si_code > 0);
            errno = errno_after;
            return;
        }
    } else if (previous->sa_handler == SIG_IGN && !(previous->sa_flags & SA_SIGINFO) && !cc__is_forced(signo, info)) {
        cc__turn_give_back(pid, tid, 0);
        errno = saved_errno; /* ignored, as it would have been */
        return;
    }
    cc__crash(signo, signo, info, uc, pid, tid, saved_errno);
    errno = saved_errno;
}
