/* cc_handler.c — the fatal-signal handler: record the crash once, then hand the signal on so the process dies as it would have. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h> /* renameat(2) only: no stdio stream is used here */
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * THE CONTRACT. Everything reachable from cc__handler runs after a fatal signal, possibly on a
 * small alternate stack, possibly while another thread holds the malloc lock, the loader lock
 * or a stdio lock. So it may use only:
 *   - raw syscalls and POSIX async-signal-safe functions (open/openat, read, write, close,
 *     renameat, clock_gettime, sigaction, sigprocmask, getpid, tgkill via syscall, nanosleep,
 *     alarm);
 *   - C11 atomics (lock-free on every supported target);
 *   - libunwind's local unwinder (unw_init_local2 / unw_step / unw_get_reg: documented
 *     signal-safe; warmed up at install so its one-time initialisation never runs here);
 *   - fixed buffers and pre-formatted strings in cc__g, prepared by cc_install.
 * It may NOT use malloc/free, stdio, any lock, dl_iterate_phdr/dladdr/dlsym, symbol-name
 * lookup (unw_get_proc_name), getenv, strerror, localtime, or anything written in Swift.
 * Every function it can reach says "async-signal-safe" in its comment.
 *
 * ORDER OF WORK. Sections are written most valuable and least risky first, and go to the file
 * in one write(2) per checkpoint (before each step that could fault or stall): the signal, the process, the strings (app, executable, fatal message), the
 * compensating $AppEnd, registers and memory windows, breadcrumbs, images (build-ids), the
 * crashing thread's frames (libunwind walks a possibly damaged stack), the other threads
 * (which need their cooperation), the end marker. A fault at any step leaves the sections
 * before it readable in the ".partial" file.
 *
 * CONCURRENCY. The first thread to swap its tid into crash_tid writes the record. Another
 * thread crashing meanwhile waits (bounded) for the record and for the process to die, and
 * answers the writer's stack request while it waits. The writing thread faulting again (a
 * crash inside this handler) ends the process at once with the original signal.
 *
 * CHAINING. After the record, the previous action saved at install runs: an SA_SIGINFO or
 * plain handler is called with the original arguments (this is how the Swift runtime's
 * backtracer still prints); if it returns, or there was none, the default action is restored
 * and the signal re-delivered: a fault from the kernel simply re-executes the faulting
 * instruction, anything sent (kill, raise, abort) is re-sent to this thread with tgkill and
 * arrives as soon as the handler returns. Either way the process ends with the original
 * signal, so WTERMSIG and core dumps are what they would have been.
 */

/* async-signal-safe: restores the default action and makes sure `signo` is delivered to this
 * thread once the handler returns. */
static void cc__redeliver_default(int signo, const siginfo_t *info) {
    struct sigaction dfl = { 0 };
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(signo, &dfl, 0);
    int refaults = info && info->si_code > 0 &&
                   (signo == SIGSEGV || signo == SIGBUS || signo == SIGFPE || signo == SIGILL);
    if (!refaults) syscall(SYS_tgkill, (long)getpid(), (long)cc__gettid(), (long)signo);
}

/* async-signal-safe: ends the process now with `signo` (used for a fault inside the handler). */
static void cc__die_with(int signo) {
    struct sigaction dfl = { 0 };
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(signo, &dfl, 0);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    sigprocmask(SIG_UNBLOCK, &set, 0);
    syscall(SYS_tgkill, (long)getpid(), (long)cc__gettid(), (long)signo);
    _exit(128 + signo); /* not reached: the default action of a fatal signal ends the process */
}

/* async-signal-safe: the watchdog. If writing the record hangs (libunwind waiting on the
 * loader lock that a thread inside dlopen holds, a wedged filesystem), SIGALRM arrives after
 * watchdog_seconds (10 by default) on whichever thread can take it and ends the process with
 * the signal the crash began with. Armed with alarm(2) at the start of the record, disarmed
 * before chaining. */
static struct sigaction g_alarm_previous;

static void cc__watchdog(int signo) {
    (void)signo;
    cc__die_with(cc__g.crash_signo);
}

static void cc__watchdog_arm(void) {
    struct sigaction action = { 0 };
    action.sa_handler = cc__watchdog;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_ONSTACK;
    sigaction(SIGALRM, &action, &g_alarm_previous);
    alarm(cc__g.watchdog_seconds);
}

static void cc__watchdog_disarm(void) {
    alarm(0);
    sigaction(SIGALRM, &g_alarm_previous, 0);
}

/* async-signal-safe: index of signo in cc__g.signals, or -1. */
static int cc__signal_index(int signo) {
    for (int i = 0; i < CC__SIGNAL_COUNT; i++) if (cc__g.signals[i] == signo) return i;
    return -1;
}

/* async-signal-safe: hands the signal to whatever was installed before us. */
static void cc__chain(int signo, siginfo_t *info, void *context, int saved_errno) {
    int index = cc__signal_index(signo);
    if (index >= 0) {
        const struct sigaction *prev = &cc__g.previous[index];
        errno = saved_errno;
        if (prev->sa_flags & SA_SIGINFO) {
            if (prev->sa_sigaction) prev->sa_sigaction(signo, info, context);
        } else if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
            prev->sa_handler(signo);
        }
    }
    /* The previous handler returned, or there was none (SIG_IGN cannot ignore a real fault). */
    cc__redeliver_default(signo, info);
    errno = saved_errno;
}

/* async-signal-safe: appends the compensating $AppEnd event as one JSON object. */
static void cc__write_app_end(cc__writer_t *w, int signo, int64_t crash_wall_ns, int64_t crash_mono_ns) {
    char num[24];
    unsigned char id[16];
    char uuid[36];
    cc__random_bytes(id, sizeof id);
    id[6] = (unsigned char)((id[6] & 0x0F) | 0x40); /* RFC 4122 version 4 */
    id[8] = (unsigned char)((id[8] & 0x3F) | 0x80);
    size_t u = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) uuid[u++] = '-';
        u += cc__fmt_hex(uuid + u, id[i], 2);
    }
    cc__section_begin(w, CC_SEC_APP_END);
    cc__section_puts(w, "{\"_track_id\":\"");
    cc__section_put(w, uuid, u);
    cc__section_puts(w, "\",\"time\":");
    cc__section_put(w, num, cc__fmt_u64(num, (uint64_t)(crash_wall_ns / 1000000)));
    cc__section_puts(w, ",");
    const char *fragment = atomic_load(&cc__g.fragment);
    if (fragment && fragment[0]) cc__section_puts(w, fragment);
    else cc__section_puts(w, "\"type\":\"track\",\"event\":\"$AppEnd\",\"properties\":{");
    int64_t elapsed_ms = (crash_mono_ns - cc__g.start_mono_ns) / 1000000;
    if (elapsed_ms < 0) elapsed_ms = 0;
    cc__section_puts(w, "\"$event_duration\":");
    cc__section_put(w, num, cc__fmt_u64(num, (uint64_t)elapsed_ms / 1000));
    cc__section_puts(w, ".");
    char frac[3] = { (char)('0' + (elapsed_ms % 1000) / 100), (char)('0' + (elapsed_ms % 100) / 10),
                     (char)('0' + elapsed_ms % 10) };
    cc__section_put(w, frac, 3);
    cc__section_puts(w, ",\"$app_crashed\":true,\"$crash_signal\":\"");
    const char *name = cc_signal_name(signo);
    if (name) cc__section_puts(w, name);
    else { cc__section_puts(w, "SIG"); cc__section_put(w, num, cc__fmt_u64(num, (uint64_t)signo)); }
    cc__section_puts(w, "\",\"$crash_record\":\"");
    cc__section_puts(w, cc__g.file_name);
    cc__section_puts(w, "\"}}");
    cc__section_end(w);
}

/* async-signal-safe: a CC_SEC_MEMORY window, if any of it is readable. */
static void cc__write_memory(cc__writer_t *w, const char *label, uint64_t address, size_t before, size_t after) {
    static unsigned char bytes[512];
    if (address < before) return;
    uint64_t start = address - before;
    size_t want = before + after;
    if (want > sizeof bytes) want = sizeof bytes;
    size_t got = cc__safe_read(start, bytes, want);
    if (got == 0) return;
    cc_sec_memory_t head = { .address = start };
    cc__strlcpy(head.label, label, sizeof head.label);
    cc__section_begin(w, CC_SEC_MEMORY);
    cc__section_put(w, &head, sizeof head);
    cc__section_put(w, bytes, got);
    cc__section_end(w);
}

/* async-signal-safe: "crash-<unix ms>-<pid>-<tid>" into cc__g.file_name / partial_name. */
static void cc__name_record(int64_t wall_ns, pid_t pid, pid_t tid) {
    char *p = cc__g.file_name;
    const char *prefix = "crash-";
    for (int i = 0; prefix[i]; i++) *p++ = prefix[i];
    p += cc__fmt_u64(p, (uint64_t)(wall_ns / 1000000));
    *p++ = '-';
    p += cc__fmt_u64(p, (uint64_t)pid);
    *p++ = '-';
    p += cc__fmt_u64(p, (uint64_t)tid);
    const char *ext = CC_RECORD_EXTENSION;
    for (int i = 0; ext[i]; i++) *p++ = ext[i];
    *p = 0;
    size_t n = cc__strlcpy(cc__g.partial_name, cc__g.file_name, sizeof cc__g.partial_name);
    const char *partial = ".partial";
    for (int i = 0; partial[i] && n + 1 < sizeof cc__g.partial_name; i++) cc__g.partial_name[n++] = partial[i];
    cc__g.partial_name[n] = 0;
}

/* async-signal-safe: writes the whole record for this crash. */
static void cc__record(int signo, siginfo_t *info, ucontext_t *uc, pid_t tid, int saved_errno) {
    cc__writer_t *w = &cc__g.writer;
    int64_t crash_wall_ns = cc__clock_ns(CLOCK_REALTIME);
    int64_t crash_mono_ns = cc__clock_ns(CLOCK_MONOTONIC);
    pid_t pid = getpid();
    cc__g.handler_pid = pid;
    cc__name_record(crash_wall_ns, pid, tid);
    if (cc__writer_open(w, cc__g.dir_fd, cc__g.partial_name) != 0) return;

    /* The signal. */
    cc_sec_crash_t crash = { .signo = signo, .errno_at_crash = saved_errno };
    if (info) {
        crash.code = info->si_code;
        if (info->si_code <= 0) {
            crash.flags |= CC_CRASH_FROM_PROCESS;
            crash.sender_pid = info->si_pid;
            crash.sender_uid = info->si_uid;
        } else if (info->si_code != SI_KERNEL) {
            crash.flags |= CC_CRASH_FAULT_ADDRESS;
            crash.fault_address = (uint64_t)(uintptr_t)info->si_addr;
        }
    }
    const char *name = cc_signal_name(signo);
    cc__strlcpy(crash.signal_name, name ? name : "", sizeof crash.signal_name);
    cc__strlcpy(crash.code_name, cc__code_name(signo, crash.code), sizeof crash.code_name);
    cc__strlcpy(crash.code_description, cc__code_description(signo, crash.code), sizeof crash.code_description);
    cc__section_begin(w, CC_SEC_CRASH);
    cc__section_put(w, &crash, sizeof crash);
    cc__section_end(w);

    /* The process. */
    cc_sec_process_t process = {
        .pid = pid, .tid = tid, .ppid = getppid(), .uid = getuid(),
        .start_wall_ns = cc__g.start_wall_ns, .crash_wall_ns = crash_wall_ns,
        .start_mono_ns = cc__g.start_mono_ns, .crash_mono_ns = crash_mono_ns,
    };
    prctl(PR_GET_NAME, (unsigned long)process.thread_name, 0, 0, 0);
    process.thread_name[15] = 0;
    cc__section_begin(w, CC_SEC_PROCESS);
    cc__section_put(w, &process, sizeof process);
    cc__section_end(w);

    /* Strings known since install, then the Swift runtime's fatal-error message. */
    cc__write_string(w, CC_STR_APP_NAME, cc__g.app_name, cc__strnlen(cc__g.app_name, sizeof cc__g.app_name));
    cc__write_string(w, CC_STR_APP_VERSION, cc__g.app_version, cc__strnlen(cc__g.app_version, sizeof cc__g.app_version));
    cc__write_string(w, CC_STR_EXECUTABLE_PATH, cc__g.executable_path, cc__strnlen(cc__g.executable_path, sizeof cc__g.executable_path));
    cc__write_string(w, CC_STR_KERNEL, cc__g.kernel, cc__strnlen(cc__g.kernel, sizeof cc__g.kernel));
    if (cc__g.fatal_message_slot) {
        const char *message = atomic_load(cc__g.fatal_message_slot);
        if (message) {
            size_t got = cc__safe_read((uint64_t)(uintptr_t)message, cc__g.scratch, CC__MESSAGE_MAX);
            size_t length = cc__strnlen(cc__g.scratch, got);
            while (length > 0 && cc__g.scratch[length - 1] == '\n') length--;
            if (length > 0) cc__write_string(w, CC_STR_FATAL_MESSAGE, cc__g.scratch, length);
        }
    }

    /* The compensating $AppEnd: the session's end, so the next launch can pair it. */
    cc__write_app_end(w, signo, crash_wall_ns, crash_mono_ns);
    cc__writer_flush(w); /* checkpoint: the signal, the process and the $AppEnd are on disk */

    if (uc) {
        cc__write_registers(w, uc);
        if (cc__g.flags & CC_FLAG_TEST_CRASH_IN_HANDLER) {
            *(volatile int *)(uintptr_t)16 = 1; /* test hook: a fault inside the handler */
        }
        while (cc__g.flags & CC_FLAG_TEST_HANG_IN_HANDLER) pause(); /* test hook: a hang */
        cc__write_memory(w, "pc", cc__context_pc(uc), 64, 64);
        cc__write_memory(w, "sp", cc__context_sp(uc), 0, 256);
        if (crash.flags & CC_CRASH_FAULT_ADDRESS) cc__write_memory(w, "fault", crash.fault_address, 32, 32);
    }

    cc__write_breadcrumbs(w);
    cc__write_images(w);
    cc__writer_flush(w); /* checkpoint: before libunwind walks a possibly damaged stack */

    /* The crashing thread, unwound from the signal context. */
    cc_sec_thread_t thread = { .tid = tid, .flags = CC_THREAD_CRASHED };
    for (int i = 0; i < 16; i++) thread.name[i] = process.thread_name[i];
    if (uc) {
        int truncated = 0;
        thread.frame_count = cc__unwind_context(uc, &cc__g.unwind_context, &cc__g.unwind_cursor,
                                                cc__g.frames, cc__g.max_frames, &truncated);
        thread.flags |= CC_THREAD_FROM_CONTEXT | (truncated ? CC_THREAD_TRUNCATED : 0);
    }
    cc__section_begin(w, CC_SEC_THREAD);
    cc__section_put(w, &thread, sizeof thread);
    cc__section_put(w, cc__g.frames, (size_t)thread.frame_count * sizeof(uint64_t));
    cc__section_end(w);
    cc__writer_flush(w); /* checkpoint: before asking other threads */

    cc__write_other_threads(w, tid);

    int64_t spent_us = (cc__clock_ns(CLOCK_MONOTONIC) - crash_mono_ns) / 1000;
    cc_sec_end_t end = { .section_count = w->section_count,
                         .write_microseconds = spent_us > 0 && spent_us < UINT32_MAX ? (uint32_t)spent_us : 0 };
    cc__section_begin(w, CC_SEC_END);
    cc__section_put(w, &end, sizeof end);
    cc__section_end(w);
    cc__writer_flush(w);
    close(w->fd);
    w->fd = -1;
    if (!w->failed) renameat(cc__g.dir_fd, cc__g.partial_name, cc__g.dir_fd, cc__g.file_name);
}

/* async-signal-safe: the handler installed for every fatal signal. */
void cc__handler(int signo, siginfo_t *info, void *context) {
    int saved_errno = errno;
    pid_t tid = cc__gettid();
    pid_t expected = 0;
    if (atomic_compare_exchange_strong(&cc__g.crash_tid, &expected, tid)) {
        cc__g.crash_signo = signo;
        cc__watchdog_arm();
        cc__record(signo, info, (ucontext_t *)context, tid, saved_errno);
        cc__watchdog_disarm();
        atomic_store(&cc__g.record_done, 1);
    } else if (expected == tid) {
        /* A fault inside our own handler, or inside a handler we chained to: stop here, with
         * the signal the crash began with. The ".partial" file keeps what was written. */
        cc__die_with(cc__g.crash_signo);
    } else {
        /* Another thread is writing the record. Wait for it (answering its stack request,
         * which arrives as a signal), then for the process to end; bounded either way so a
         * wedged writer cannot hang this thread forever. */
        for (int i = 0; i < 5000 && !atomic_load(&cc__g.record_done); i++) {
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, 0);
        }
        for (int i = 0; i < 30000; i++) {
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, 0);
        }
    }
    cc__chain(signo, info, context, saved_errno);
}
