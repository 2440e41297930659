/* cc_helper_main.c — the thread helper process: the crashed program's own executable re-run
 * with CRASHCAPTURE_THREAD_HELPER set, caught here before main. It ptrace-stops the threads it
 * is given, reads their registers, unwinds them from outside, and answers with record sections. */
#define CC__REMOTE_UNWIND 1
#include "cc_boot.h"
#include "cc_helper.h"
#include "include/cc_record.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libunwind-ptrace.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * This is an ordinary process (it was exec'd): malloc, stdio and libunwind's remote unwinder
 * are fine here. None of it runs unless a crashed process started it (see cc_helper.h).
 *
 * For each thread: PTRACE_SEIZE + PTRACE_INTERRUPT (per thread, no signal is sent, so neither
 * the thread's mask nor the rest of the process is involved), wait for the stop, read the
 * registers with PTRACE_GETREGSET, unwind with libunwind's ptrace accessors. Every thread is
 * stopped before the first is read, and none is let go: when the crashed process dies the
 * socket reaches EOF and the helper exits, which detaches what is left.
 */

#define CC__HELPER_WAIT_MS 1000   /* for one thread to report its ptrace stop */

static int64_t cc__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int cc__send(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen) {
    cc_section_header_t head = { .type = type, .length = (uint32_t)(alen + blen) };
    struct iovec parts[3] = { { &head, sizeof head }, { (void *)a, alen }, { (void *)b, blen } };
    size_t total = sizeof head + alen + blen, done = 0;
    int index = 0;
    while (done < total) {
        ssize_t n = writev(fd, parts + index, 3 - index);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        done += (size_t)n;
        while (index < 3 && (size_t)n >= parts[index].iov_len) { n -= (ssize_t)parts[index].iov_len; index++; }
        if (index < 3) { parts[index].iov_base = (char *)parts[index].iov_base + n; parts[index].iov_len -= (size_t)n; }
    }
    return 0;
}

static void cc__send_note(int fd, const char *text) {
    cc_sec_string_t key = { .key = CC_STR_NOTE };
    cc__send(fd, CC_SEC_STRING, &key, sizeof key, text, strlen(text));
}

static void cc__thread_name_of(pid_t pid, pid_t tid, char name[16]) {
    memset(name, 0, 16);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int)pid, (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t got = read(fd, name, 15);
    close(fd);
    for (ssize_t i = 0; i < got; i++) if (name[i] == '\n') name[i] = 0;
}

/* The thread's registers as the ucontext layout cc__registers_payload reads. */
static int cc__read_registers(pid_t tid, ucontext_t *uc) {
    memset(uc, 0, sizeof *uc);
#if defined(__x86_64__)
    struct user_regs_struct regs;
    struct iovec io = { &regs, sizeof regs };
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &io) != 0) return -1;
    greg_t *g = uc->uc_mcontext.gregs;
    g[REG_RAX] = (greg_t)regs.rax; g[REG_RBX] = (greg_t)regs.rbx; g[REG_RCX] = (greg_t)regs.rcx;
    g[REG_RDX] = (greg_t)regs.rdx; g[REG_RDI] = (greg_t)regs.rdi; g[REG_RSI] = (greg_t)regs.rsi;
    g[REG_RBP] = (greg_t)regs.rbp; g[REG_RSP] = (greg_t)regs.rsp; g[REG_R8] = (greg_t)regs.r8;
    g[REG_R9] = (greg_t)regs.r9; g[REG_R10] = (greg_t)regs.r10; g[REG_R11] = (greg_t)regs.r11;
    g[REG_R12] = (greg_t)regs.r12; g[REG_R13] = (greg_t)regs.r13; g[REG_R14] = (greg_t)regs.r14;
    g[REG_R15] = (greg_t)regs.r15; g[REG_RIP] = (greg_t)regs.rip; g[REG_EFL] = (greg_t)regs.eflags;
    return 0;
#elif defined(__aarch64__)
    struct user_pt_regs regs;
    struct iovec io = { &regs, sizeof regs };
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &io) != 0) return -1;
    for (int i = 0; i < 31; i++) uc->uc_mcontext.regs[i] = regs.regs[i];
    uc->uc_mcontext.sp = regs.sp;
    uc->uc_mcontext.pc = regs.pc;
    uc->uc_mcontext.pstate = regs.pstate;
    return 0;
#else
    (void)tid;
    return -1;
#endif
}

/* Waits for `tid` to report its ptrace stop. */
static int cc__wait_stopped(pid_t tid) {
    int64_t deadline = cc__now_ms() + CC__HELPER_WAIT_MS;
    for (;;) {
        int status = 0;
        pid_t got = waitpid(tid, &status, __WALL | WNOHANG);
        if (got == tid) {
            if (WIFSTOPPED(status)) return 0;
            return -1;   /* it exited */
        }
        if (got < 0 && errno != EINTR) return -1;
        if (cc__now_ms() >= deadline) return -1;
        struct timespec pause = { 0, 200 * 1000 };
        nanosleep(&pause, 0);
    }
}

/* Unwinds a stopped thread from outside; returns the frame count. */
static uint32_t cc__unwind_remote(unw_addr_space_t space, pid_t tid, uint64_t *frames, uint32_t max, int *truncated) {
    *truncated = 0;
    void *upt = _UPT_create(tid);
    if (!upt) return 0;
    unw_cursor_t cursor;
    uint32_t count = 0;
    if (unw_init_remote(&cursor, space, upt) == 0) {
        unw_word_t last_sp = 0, last_ip = 0;
        for (;;) {
            unw_word_t ip = 0, sp = 0;
            if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0) break;
            unw_get_reg(&cursor, UNW_REG_SP, &sp);
            if (ip == 0 || (count > 0 && ip == last_ip && sp == last_sp)) break;
            if (count == max) { *truncated = 1; break; }
            frames[count++] = (uint64_t)ip;
            last_ip = ip;
            last_sp = sp;
            if (unw_step(&cursor) <= 0) break;
        }
    }
    _UPT_destroy(upt);
    return count;
}

static void cc__helper_run(pid_t pid) {
    int fd = 0;
    uint32_t count = 0;
    if (read(fd, &count, sizeof count) != (ssize_t)sizeof count || count == 0 || count > CC__HELPER_MAX_TIDS) _exit(2);
    pid_t *tids = calloc(count, sizeof *tids);
    int *errors = calloc(count, sizeof *errors);
    if (!tids || !errors) _exit(2);
    size_t want = count * sizeof *tids, have = 0;
    while (have < want) {
        ssize_t n = read(fd, (char *)tids + have, want - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) _exit(2);
        have += (size_t)n;
    }

    /* Stop them all first, then read them one by one. A tid that is not a thread of the
     * crashed process (it exited meanwhile and the number was reused) is refused by the
     * kernel's own check below: /proc/<pid>/task/<tid> must exist. */
    for (uint32_t i = 0; i < count; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task/%d", (int)pid, (int)tids[i]);
        if (access(path, F_OK) != 0) { errors[i] = ESRCH; continue; }
        if (ptrace(PTRACE_SEIZE, tids[i], 0, 0) != 0) { errors[i] = errno; continue; }
        if (ptrace(PTRACE_INTERRUPT, tids[i], 0, 0) != 0) { errors[i] = errno; continue; }
    }
    unw_addr_space_t space = unw_create_addr_space(&_UPT_accessors, 0);
    if (space) unw_set_caching_policy(space, UNW_CACHE_GLOBAL);
    static uint64_t frames[CC__HELPER_FRAMES];
    uint32_t refused = 0;
    int first_refusal = 0;
    for (uint32_t i = 0; i < count; i++) {
        cc_sec_thread_t thread;
        memset(&thread, 0, sizeof thread);
        thread.tid = tids[i];
        cc__thread_name_of(pid, tids[i], thread.name);
        if (errors[i] == 0 && cc__wait_stopped(tids[i]) != 0) errors[i] = ETIMEDOUT;
        ucontext_t uc;
        if (errors[i] == 0 && cc__read_registers(tids[i], &uc) != 0) errors[i] = errno ? errno : EIO;
        if (errors[i] != 0) {
            if (errors[i] == ESRCH) continue;   /* gone: it exited before it could be stopped */
            refused++;
            if (!first_refusal) first_refusal = errors[i];
            thread.flags = CC_THREAD_NO_STACK | CC_THREAD_NOT_STOPPED | CC_THREAD_PTRACE_REFUSED;
            if (cc__send(1, CC_SEC_THREAD, &thread, sizeof thread, 0, 0) != 0) _exit(3);
            continue;
        }
        static unsigned char registers[64 * 16 + 64];
        size_t length = cc__registers_payload(&uc, registers, sizeof registers);
        cc_sec_thread_registers_t head = { .tid = tids[i] };
        if (length > 0 && cc__send(1, CC_SEC_THREAD_REGISTERS, &head, sizeof head, registers, length) != 0) _exit(3);
        int truncated = 0;
        thread.frame_count = space ? cc__unwind_remote(space, tids[i], frames, CC__HELPER_FRAMES, &truncated) : 0;
        thread.flags = CC_THREAD_FROM_CONTEXT | CC_THREAD_PTRACED | (truncated ? CC_THREAD_TRUNCATED : 0) |
                       (thread.frame_count == 0 ? CC_THREAD_NO_STACK : 0);
        if (cc__send(1, CC_SEC_THREAD, &thread, sizeof thread, frames, (size_t)thread.frame_count * 8) != 0) _exit(3);
    }
    if (refused > 0) {
        char note[160];
        snprintf(note, sizeof note, "the thread helper could not ptrace %u thread%s (%s): they block the stop signal and have no frames",
                 refused, refused == 1 ? "" : "s", strerror(first_refusal));
        cc__send_note(1, note);
    }
    cc__send(1, 0, 0, 0, 0, 0);

    /* Keep every thread stopped until the crashed process is gone: our socket then reads EOF.
     * (Bounded, in case it never dies: a detach lets its threads run again.) */
    int64_t give_up = cc__now_ms() + 60 * 1000;
    while (cc__now_ms() < give_up) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int ready = poll(&pfd, 1, 1000);
        if (ready > 0) {
            char byte;
            ssize_t n = read(fd, &byte, 1);
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
        }
        while (waitpid(-1, 0, __WALL | WNOHANG) > 0) {}   /* reap what the tracees report */
    }
}

/* Runs before main in every process that links CrashCapture, and does nothing unless this
 * process is a thread helper. */
__attribute__((constructor)) static void cc__helper_entry(void) {
    const char *value = getenv(CC__HELPER_ENV);
    if (!value || !*value) return;
    long pid = strtol(value, 0, 10);
    if (pid <= 0) _exit(2);
    cc__helper_run((pid_t)pid);
    _exit(0);
}
