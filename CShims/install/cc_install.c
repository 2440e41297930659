/* cc_install.c — install and uninstall: everything the handler needs, prepared before any signal. */
#include "cc_boot.h"
#include "cc_internal.h"
#include "cc_swift_abi.h"
#include "cc_cxx.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h> /* renameat(2) only: no stdio stream is used here */
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* Zero-initialised, so its ≈ 300 KB of buffers (frames, templates, scratch) are in .bss: no bytes
 * in every adopter's executable and no page touched until used. The few fields whose "none" is
 * not 0 are set before main, by cc__state_defaults. */
cc__state_t cc__g;

__attribute__((constructor)) static void cc__state_defaults(void) {
    static const int signals[CC__SIGNAL_COUNT] = { SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTRAP };
    for (int i = 0; i < CC__SIGNAL_COUNT; i++) cc__g.signals[i] = signals[i];
    cc__g.dir_fd = -1;
    for (int i = 0; i < CC__RESERVED_FDS; i++) cc__g.reserved_fds[i] = -1;
    atomic_store(&cc__g.app_end.index, -1);
    atomic_store(&cc__g.scope.index, -1);
    cc__g.writer.fd = -1;
}

int cc__publish(cc__published_t *p, char *buffers, size_t size, const void *bytes, size_t length) {
    if (length >= size) return -1;
    int next = atomic_load(&p->index) == 0 ? 1 : 0;
    char *buffer = buffers + (size_t)next * size;
    atomic_fetch_add(&p->generation[next], 1);
    const char *from = bytes;
    for (size_t i = 0; i < length; i++) buffer[i] = from[i];
    buffer[length] = 0;
    p->length[next] = (uint32_t)length;
    atomic_fetch_add(&p->generation[next], 1);
    atomic_store(&p->index, next);
    return 0;
}

size_t cc__published_copy(cc__published_t *p, const char *buffers, size_t size, char *out) {
    for (int attempt = 0; attempt < 4; attempt++) {
        int index = atomic_load(&p->index);
        if (index < 0 || index > 1) return 0;
        uint64_t before = atomic_load(&p->generation[index]);
        if (before & 1) continue;
        size_t length = p->length[index];
        if (length >= size) return 0;
        const char *from = buffers + (size_t)index * size;
        for (size_t i = 0; i < length; i++) out[i] = from[i];
        out[length] = 0;
        if (atomic_load(&p->generation[index]) == before && atomic_load(&p->index) == index) return length;
    }
    return 0;
}

int cc_set_app_end_template(const char *app_end_template) {
    if (!app_end_template) app_end_template = "";
    size_t length = cc__strnlen(app_end_template, CC_TEMPLATE_MAX);
    return cc__publish(&cc__g.app_end, &cc__g.templates[0][0], CC_TEMPLATE_MAX, app_end_template, length);
}

int cc_set_scope(const void *scope, size_t length) {
    if (!scope) length = 0;
    return cc__publish(&cc__g.scope, &cc__g.scopes[0][0], CC_SCOPE_MAX, scope ? scope : "", length);
}

const char *cc_record_directory(void) { return cc__g.directory; }

int cc_is_installed(void) { return atomic_load(&cc__g.install_state) == 2; }

int cc_installed_directory_usage(uint64_t *records, uint64_t *bytes) {
    int fd = cc__g.dir_fd;
    if (atomic_load(&cc__g.install_state) != 2 || fd < 0) return -1;
    return cc_record_directory_usage_fd(fd, records, bytes);
}

static void cc__close_resources(void) {
    for (int i = 0; i < CC__RESERVED_FDS; i++) {
        if (cc__g.reserved_fds[i] >= 0) close(cc__g.reserved_fds[i]);
        cc__g.reserved_fds[i] = -1;
    }
    if (cc__g.dir_fd >= 0) close(cc__g.dir_fd);
    cc__g.dir_fd = -1;
    cc__safe_read_pipe_close();
}

/* Install time: every C library function the handler and the processes it starts may call first
 * at a crash, called now in a form that does nothing, so that each is bound before any signal.
 * A program linked for lazy binding (the default) otherwise has the dynamic loader look each
 * one up at its first call: inside the handler, the loader's code on the crash's path (and,
 * for memset, the resolver glibc picks an implementation with). The crash path's system calls
 * all go through syscall(2) (cc__sys_* in cc_internal.h), so that one function stands for them
 * all here: binding each wrapper by a call of its own had cost every start 22 calls, 15 of them
 * system calls (≈ 14 µs). None of the calls below enters the kernel but syscall's; errno is kept.
 * sigaction is bound by install's own calls. CaptureFootprintTests runs a crash under
 * LD_DEBUG=bindings and finds no binding after the crash began. */
static void cc__bind_handler_imports(void) {
    int saved = errno;                        /* __errno_location */
    char name[16];
    volatile size_t length = sizeof name;     /* a real call to memset, as the handler's struct zeroing makes */
    memset(name, 0, length);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGSEGV);
    (void)sigismember(&set, SIGSEGV);
    (void)syscall(SYS_getpid, name);          /* `name` passed on: the memset above stays a real call */
    (void)clone(0, 0, 0, 0);                  /* glibc refuses a null function before the system call */
    errno = saved;
}

/* Whether a configuration can be installed (or applied in place): a directory, and every text
 * within its buffer. */
static int cc__config_fits(const cc_config_t *config) {
    if (!config || !config->directory || !config->directory[0]) return 0;
    if (cc__strnlen(config->directory, CC__PATH_MAX) >= CC__PATH_MAX) return 0;
    if (config->app_end_template && cc__strnlen(config->app_end_template, CC_TEMPLATE_MAX) >= CC_TEMPLATE_MAX) return 0;
    if (config->run_id && cc__strnlen(config->run_id, 64) >= 64) return 0;
    return cc__uploader_fits(config);
}

/* The record directory, opened for the handler's openat. Records hold memory of this process:
 * the directory is for its owner only. chmod only when it is not already so (mkdir 0700 under the
 * usual umask made it so): fstat is a read, where fchmod writes the inode. Permission bits 0700
 * and nothing else (no set-id, no sticky bit, an ACL's mask at ---), exactly what fchmod(0700)
 * would leave. Never a shared directory (the sticky bit: /tmp, /var/tmp, /dev/shm), which a
 * directory pointed at by mistake would otherwise close to every other user of the machine
 * (as root, /tmp itself): there the record files' own 0600 keeps them private. -1 with errno
 * when it cannot be opened. */
static int cc__open_directory(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat dir_stat;
    if (fstat(fd, &dir_stat) != 0) return fd;
    if ((dir_stat.st_mode & 07777) != 0700 && !(dir_stat.st_mode & S_ISVTX)) fchmod(fd, 0700);
    return fd;
}

/* What a configuration sets of the state, at install and when applied in place. */
static void cc__apply_config(const cc_config_t *config) {
    cc__strlcpy(cc__g.directory, config->directory, sizeof cc__g.directory);
    cc__strlcpy(cc__g.app_name, config->app_name ? config->app_name : "", sizeof cc__g.app_name);
    cc__strlcpy(cc__g.app_version, config->app_version ? config->app_version : "", sizeof cc__g.app_version);
    cc__strlcpy(cc__g.run_id, config->run_id ? config->run_id : "", sizeof cc__g.run_id);
    if (config->app_end_template) cc_set_app_end_template(config->app_end_template);
    cc__g.max_frames = config->max_frames ? config->max_frames : CC__DEFAULT_FRAMES;
    if (cc__g.max_frames > CC__MAX_FRAMES) cc__g.max_frames = CC__MAX_FRAMES;
    cc__g.flags = config->flags;
    cc__g.watchdog_seconds = config->watchdog_seconds ? config->watchdog_seconds : 10;
}

int cc_install(const cc_config_t *config, int *err_errno) {
    if (err_errno) *err_errno = 0;
    if (!cc__config_fits(config)) return CC_ERR_ARGUMENT;
    /* setuid/setgid programs: a record would hold memory of a privileged process in a place
     * an unprivileged user may read. Stay off, as core dumps do. */
    if (getauxval(AT_SECURE)) return CC_ERR_SECURE;

    CC__MARK("install");
    int expected = 0;
    if (!atomic_compare_exchange_strong(&cc__g.install_state, &expected, 1)) {
        return expected == 2 ? CC_ALREADY_INSTALLED : CC_ERR_BUSY;
    }

    cc__g.dir_fd = cc__open_directory(config->directory);
    if (cc__g.dir_fd < 0) {
        if (err_errno) *err_errno = errno;
        atomic_store(&cc__g.install_state, 0);
        return CC_ERR_DIRECTORY;
    }
    CC__MARK("open_dir+fchmod");
    cc__apply_config(config);
    cc__g.start_wall_ns = cc__clock_ns(CLOCK_REALTIME);
    cc__g.start_mono_ns = cc__clock_ns(CLOCK_MONOTONIC);
    atomic_store(&cc__g.owner, 0);
    atomic_store(&cc__g.turn, 0);
    cc__g.install_pid = getpid();
    atomic_store(&cc__g.child_previous_pid, 0);
    atomic_store(&cc__g.stopped_count, 0);
    /* Two fds kept for the crash (the /proc files, the record): at the fd limit the record
     * can still be written. Copies of the directory's fd: they only hold a slot (dup is a table
     * update, where opening /dev/null walks a path). */
    for (int i = 0; i < CC__RESERVED_FDS; i++) cc__g.reserved_fds[i] = fcntl(cc__g.dir_fd, F_DUPFD_CLOEXEC, 0);
    long frame = (long)getauxval(AT_MINSIGSTKSZ);
    cc__g.signal_frame_size = frame > 2048 ? (size_t)frame : 2048;
    CC__MARK("copy+reserved_fds");

    cc__random_bytes(&cc__g.random_seed, sizeof cc__g.random_seed);
    ssize_t n = readlink("/proc/self/exe", cc__g.executable_path, sizeof cc__g.executable_path - 1);
    cc__g.executable_path[n > 0 ? n : 0] = 0;
    struct utsname uts;
    if (uname(&uts) == 0) {
        char *k = cc__g.kernel;
        size_t room = sizeof cc__g.kernel, used = 0;
        const char *parts[4] = { uts.sysname, uts.release, uts.version, uts.machine };
        for (int i = 0; i < 4; i++) {
            if (i && used + 1 < room) k[used++] = ' ';
            used += cc__strlcpy(k + used, parts[i], room - used);
        }
    }
    CC__MARK("random+readlink+uname");

    /* glibc keeps the message it printed before abort() (assert, malloc's heap checks,
     * _FORTIFY_SOURCE, every __libc_message) behind __abort_msg, for post-mortem tools (apport,
     * debuggers read it from core dumps). Where the C library has none (musl, a static binary
     * without dlsym), there is no abort message. Resolved now (dlsym is not async-signal-safe);
     * the handler only loads the pointer. */
    cc__g.abort_message_slot = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "__abort_msg");
    /* The Swift runtime's fatal-error message and its concurrency debug exports, checked
     * (cc_swift_abi.h, 1 and 3). */
    cc__swift_abi_prepare();
    /* The terminate handler that says an uncaught C++ exception's type and what() (cc_terminate.cpp). */
    cc__cxx_install();

    CC__MARK("dlsyms");
    cc__interpose_prepare();
    CC__MARK("interpose_prepare");
    cc__unwind_prepare();
    cc__images_prepare();
    CC__MARK("images_prepare");
    cc_prepare_current_thread();
    CC__MARK("altstack");
    cc__uploader_prepare(config);
    cc__termination_prepare();   /* the container's termination message file, where there is one (cc_summary.c) */
    /* The stop signal for other threads (see cc_threads.c): installed even when their stacks
     * are not recorded, since stopping them is what keeps a crash a crash. Nothing is lost if
     * the program already handles every candidate signal: threads are then listed as not
     * stopped. */
    cc__threads_install(config->thread_dump_signal);
    CC__MARK("threads_install");
    cc__bind_handler_imports();
    CC__MARK("bind_imports");

    /* The fatal signals. SA_SIGINFO: we need si_code, si_addr and the context to unwind.
     * SA_ONSTACK: a stack overflow leaves no stack to run on but the alternate one.
     * Not SA_NODEFER: the same signal raised again inside the handler must end the process
     * (the kernel forces the default action on a blocked synchronous fault), and the death
     * signal is queued while blocked (cc_handler.c, DEATH).
     * Not SA_RESETHAND: threads crashing at the same time must all reach us.
     * The mask blocks every signal but the fatal ones (a different fault inside the handler
     * must reach it, to be turned into death by the original one) and SIGALRM (the watchdog):
     * no asynchronous handler of the application runs inside the record, and SIGXFSZ cannot
     * end the process first. A chained handler gets its own mask (cc_chain.c). */
    struct sigaction action = { 0 };
    action.sa_sigaction = cc__handler;
    sigfillset(&action.sa_mask);
    for (int i = 0; i < CC__SIGNAL_COUNT; i++) sigdelset(&action.sa_mask, cc__g.signals[i]);
    sigdelset(&action.sa_mask, SIGALRM);
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    cc__g.ours = action;
    for (int i = 0; i < CC__SIGNAL_COUNT; i++) {
        if (sigaction(cc__g.signals[i], &action, &cc__g.previous[i]) != 0) {
            int saved = errno;
            for (int j = i - 1; j >= 0; j--) sigaction(cc__g.signals[j], &cc__g.previous[j], 0);
            cc__threads_uninstall();
            cc__uploader_disable();
            cc__close_resources();
            if (err_errno) *err_errno = saved;
            atomic_store(&cc__g.install_state, 0);
            return CC_ERR_SIGACTION;
        }
    }
    if (!(config->flags & CC_FLAG_NO_ALTSTACK_NEW_THREADS)) atomic_store(&cc__g.altstack_new_threads, 1);
    atomic_store(&cc__g.install_state, 2);
    CC__MARK("sigactions");
#ifdef CC_TRACE_STEPS
    cc__trace_dump("install");
#endif
    return CC_INSTALLED;
}

/* Ordinary code: a start after capture was installed (the reporter adopting the capture an app
 * started itself) applies the new configuration to the running capture, in place: the record
 * directory, app name and version, run id, frames, flags, watchdog and crash-time uploader. The
 * signal actions stay as they are: taking ours off and putting it back would chain a handler
 * installed after ours to itself. The stop signal and the alternate stacks stay as installed.
 * A crash in the microseconds this takes may be recorded with either configuration's strings. */
int cc_reconfigure(const cc_config_t *config, int *err_errno) {
    if (err_errno) *err_errno = 0;
    if (!cc__config_fits(config)) return CC_ERR_ARGUMENT;
    int expected = 2;
    if (!atomic_compare_exchange_strong(&cc__g.install_state, &expected, 1)) {
        return expected == 0 ? CC_ERR_NOT_INSTALLED : CC_ERR_BUSY;
    }
    int dir_fd = cc__open_directory(config->directory);
    if (dir_fd < 0) {
        if (err_errno) *err_errno = errno;
        atomic_store(&cc__g.install_state, 2);
        return CC_ERR_DIRECTORY;
    }
    int old_fd = cc__g.dir_fd;
    cc__g.dir_fd = dir_fd;
    if (old_fd >= 0) close(old_fd);
    cc__apply_config(config);
    cc__uploader_prepare(config);
    atomic_store(&cc__g.install_state, 2);
    return CC_INSTALLED;
}

int cc_uninstall(void) {
    int expected = 2;
    if (!atomic_compare_exchange_strong(&cc__g.install_state, &expected, 1)) return -1;
    atomic_store(&cc__g.altstack_new_threads, 0);
    for (int i = CC__SIGNAL_COUNT - 1; i >= 0; i--) {
        struct sigaction current;
        /* Only put back what we replaced: a handler installed after us stays. */
        if (sigaction(cc__g.signals[i], 0, &current) == 0 && (current.sa_flags & SA_SIGINFO) &&
            current.sa_sigaction == cc__handler) {
            sigaction(cc__g.signals[i], &cc__previous_actions(getpid(), 0)[i], 0);
        }
    }
    cc__threads_uninstall();
    cc__cxx_uninstall();
    cc__uploader_disable();
    cc__termination_close();
    cc__close_resources();
    atomic_store(&cc__g.install_state, 0);
    return 0;
}

/* Ordinary code: the deliberate crash of a setup check's throwaway child (CrashReporting's
 * verifySetup): a write through a null pointer the compiler cannot see. */
void cc_verify_crash(void) {
    volatile uintptr_t address = 0;
    *(volatile int *)address = 1;
}
