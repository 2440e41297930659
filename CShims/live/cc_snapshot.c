/* cc_snapshot.c — a record of the live process: a hang a detector saw, or a snapshot asked for; the process runs on. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/*
 * What a crash record holds, of a process that is not dying: every other thread's frames (and
 * their async chains), the requests in flight with where each one's task waits, the scope,
 * breadcrumbs and images, behind a CC_SEC_EVENT that says which detector fired and by how much.
 *
 * How the threads are read. Not with the crash path's stop signal: its handler would run on
 * every thread, and a thread interrupted by a handler ends the system call it was in with EINTR
 * (glibc's sleep() returns early, a read fails) — the program would behave differently because
 * it was looked at. The thread helper (cc_helper.c) stops them with ptrace instead, reads each
 * one's registers and frames, lets them all go and exits; a ptrace stop restarts the call it
 * interrupted as if nothing happened, and threads that block every signal (the Swift pool,
 * libdispatch's) are read the same way. The threads stand still only while the helper reads
 * them (cc_sec_event_t.stopped_microseconds); the record is written afterwards, while they run.
 *
 * One at a time with crashes. A snapshot holds the crash path's turn (cc_chain.c) for as long as
 * it runs: a thread that crashes meanwhile waits for it inside the fatal handler, as it waits for
 * another crashing thread, and records its crash once the snapshot is done. The writing thread
 * blocks every signal but the synchronous faults meanwhile, our stop signal included (the turn's
 * marker: a waiter that sees it is held by a live thread waits on). A fault on the writing thread
 * itself is a crash: its helper is killed first (cc__snapshot_abandon) and the crash is
 * recorded as any other, over the snapshot's partial file.
 *
 * Everything it reaches is the crash path's own code, async-signal-safe, with its static
 * buffers: which is why the turn must be held.
 */

#define CC__SNAPSHOT_HELPER_NS (2 * 1000000000LL)   /* the helper's time to read every thread */

/* async-signal-safe (cc_internal.h) */
void cc__snapshot_abandon(pid_t pid, pid_t tid) {
    uint64_t me = ((uint64_t)(uint32_t)pid << 32) | (uint32_t)tid;
    uint64_t expected = me;
    if (!atomic_compare_exchange_strong(&cc__g.snapshot_owner, &expected, 0)) return;
    cc__helper_abandon();
}

/* The crash path's turn for a live record (see the top of this file): every signal blocked on
 * this thread but the faults (the stop signal is the turn's marker, and nothing of the program's
 * may run here in the middle of the record's buffers), then the turn taken when it is nobody's
 * (or stale, from a parent process) and no record is being written. 0 when it is busy. */
static int cc__snapshot_take_turn(uint64_t me, sigset_t *saved) {
    sigset_t all;
    sigfillset(&all);
    int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT };
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) sigdelset(&all, faults[i]);
    pthread_sigmask(SIG_SETMASK, &all, saved);
    pid_t pid = (pid_t)(me >> 32);
    uint64_t holder = atomic_load(&cc__g.turn);
    uint64_t owner = atomic_load(&cc__g.owner);
    int busy = (owner != 0 && (pid_t)(owner >> 32) == pid) ||
               (holder != 0 && (pid_t)(holder >> 32) == pid) ||
               !atomic_compare_exchange_strong(&cc__g.turn, &holder, me);
    if (busy) {
        pthread_sigmask(SIG_SETMASK, saved, 0);
        return 0;
    }
    atomic_store(&cc__g.turn_returned_ns, 0);
    atomic_store(&cc__g.snapshot_owner, me);
    return 1;
}

static void cc__snapshot_give_turn(uint64_t me, const sigset_t *saved) {
    atomic_store(&cc__g.snapshot_owner, 0);
    uint64_t mine = me;
    atomic_compare_exchange_strong(&cc__g.turn, &mine, 0);
    pthread_sigmask(SIG_SETMASK, saved, 0);
}

int32_t cc_current_tid(void) { return (int32_t)cc__gettid(); }

void cc_name_current_thread(const char *name) { prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0); }

int cc_snapshot(const cc_snapshot_request_t *request, cc_snapshot_result_t *result, int *err_errno) {
    if (err_errno) *err_errno = 0;
    if (result) {
        result->file_name[0] = 0;
        result->stopped_microseconds = result->threads_stopped = result->write_microseconds = 0;
    }
    if (!request || atomic_load(&cc__g.install_state) != 2) return CC_ERR_NOT_INSTALLED;
    pid_t pid = cc__sys_getpid(), tid = cc__gettid();
    uint64_t me = ((uint64_t)(uint32_t)pid << 32) | (uint32_t)tid;
    sigset_t saved;
    if (!cc__snapshot_take_turn(me, &saved)) return CC_ERR_BUSY;

    int64_t wall_ns = cc__clock_ns(CLOCK_REALTIME), mono_ns = cc__clock_ns(CLOCK_MONOTONIC);
    cc__images_collect();
    int helper_result = cc__read_threads_live(tid, mono_ns + CC__SNAPSHOT_HELPER_NS);
    uint32_t stopped = 0;
    uint32_t held_us = cc__helper_held_microseconds(&stopped);

    cc__writer_t *w = &cc__g.writer;
    cc__name_record(wall_ns, pid, tid);
    cc__writer_open(w, cc__g.dir_fd, cc__g.partial_name);

    cc_sec_event_t event = {
        .kind = request->kind, .detector = request->detector, .threshold_ms = request->threshold_ms,
        .observed_ms = request->observed_ms, .request_key = request->request_key, .blocked_tid = request->blocked_tid,
        .stopped_microseconds = held_us, .threads_stopped = stopped, .stall_cpu_span_ms = request->stall_cpu_span_ms,
    };
    if (request->name) cc__strlcpy(event.name, request->name, sizeof event.name);
    cc__section_begin(w, CC_SEC_EVENT);
    cc__section_put(w, &event, sizeof event);
    cc__section_end(w);
    for (uint32_t i = 0; request->extras && i < request->extra_count && i < CC_SNAPSHOT_EXTRAS; i++) {
        const cc_snapshot_extra_t *extra = &request->extras[i];
        if (!extra->bytes || extra->type == 0 || extra->length > 262144) continue;
        cc__section_begin(w, extra->type);
        cc__section_put(w, extra->bytes, extra->length);
        cc__section_end(w);
    }

    cc_sec_process_t process;
    cc__write_process(w, &process, pid, tid, wall_ns, mono_ns);
    cc__write_run_and_scope(w);
    static cc_sec_request_t unused;
    int none = 0;
    cc__write_requests(w, tid, &unused, &none, 1);
    cc__write_install_strings(w);
    /* The process lives on: everything the Swift runtime reported so far is a warning. */
    cc__swift_reports_look();
    cc__swift_reports_t reports;
    if (cc__swift_reports_read(INT64_MAX, &reports)) cc__write_runtime_warnings(w, reports.text, cc__runtime_text_end(&reports));
    cc__write_images(w, 1);
    cc__writer_flush(w);
    cc__write_other_threads(w, tid, !(cc__g.flags & CC_FLAG_NO_THREAD_STACKS));
    (void)helper_result;   /* cc__write_other_threads notes it */
    cc__resources_note_limits();
    cc__write_resources(w, 0);
    cc__write_breadcrumbs(w);
    cc__write_images(w, 0);

    uint32_t write_us = cc__finish_record(w, mono_ns);
    int rc = 0;
    if (w->failed) {
        /* A live process keeps nothing half-written: the next launch would read it as a crash
         * record that was cut short. */
        if (err_errno) *err_errno = w->error;
        unlinkat(cc__g.dir_fd, cc__g.partial_name, 0);
        rc = CC_ERR_DIRECTORY;
    } else if (result) {
        cc__strlcpy(result->file_name, cc__g.file_name, sizeof result->file_name);
        result->stopped_microseconds = held_us;
        result->threads_stopped = stopped;
        result->write_microseconds = write_us;
    }

    cc__snapshot_give_turn(me, &saved);
    return rc;
}

int cc_sample_threads(const int32_t *tids, uint32_t count, uint64_t *frames, uint32_t max_frames, uint32_t *frame_counts) {
    for (uint32_t i = 0; frame_counts && i < count; i++) frame_counts[i] = 0;
    if (!tids || !frames || !frame_counts || count == 0) return 0;
    if (atomic_load(&cc__g.install_state) != 2) return CC_ERR_NOT_INSTALLED;
    pid_t pid = cc__sys_getpid(), tid = cc__gettid();
    uint64_t me = ((uint64_t)(uint32_t)pid << 32) | (uint32_t)tid;
    sigset_t saved;
    if (!cc__snapshot_take_turn(me, &saved)) return CC_ERR_BUSY;
    if (count > CC_SAMPLE_THREADS_MAX) count = CC_SAMPLE_THREADS_MAX;
    pid_t listed[CC_SAMPLE_THREADS_MAX];
    uint32_t n = 0;
    for (uint32_t i = 0; i < count; i++) if (tids[i] > 0 && tids[i] != tid) listed[n++] = tids[i];
    cc__images_collect();
    cc__helper_stop_threads(listed, n, cc__clock_ns(CLOCK_MONOTONIC) + CC__SNAPSHOT_HELPER_NS, 1);
    for (uint32_t i = 0; i < count; i++) {
        int index = cc__helper_index(tids[i]);
        uint32_t got = 0;
        const uint64_t *read = index >= 0 ? cc__helper_frames((uint32_t)index, &got) : 0;
        if (!read) continue;
        if (got > max_frames) got = max_frames;
        for (uint32_t f = 0; f < got; f++) frames[(size_t)i * max_frames + f] = read[f];
        frame_counts[i] = got;
    }
    cc__snapshot_give_turn(me, &saved);
    return 0;
}
