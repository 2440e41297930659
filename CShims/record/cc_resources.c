/* cc_resources.c — what the process had and was allowed when it crashed: its descriptors against
 * RLIMIT_NOFILE, the CPUs it may run on and which processor they are, and, as the kernel's own
 * texts, its memory and threads (/proc/self/status), the machine's memory and load
 * (/proc/meminfo, /proc/loadavg) and its memory cgroup's usage, limit and events.
 *
 * Raw texts rather than numbers: the handler only opens, reads and closes (no parsing it could
 * get wrong on a kernel's other format); the readers parse them (CrashRecordFormat's
 * CrashResources). Each text is at most CC_RESOURCE_TEXT_MAX bytes. Read when the crash is
 * recorded, after the record file is open, except /proc/self/status: read before the other
 * threads are stopped, its Threads: spares a crash alone in its process the listing of its
 * threads. The fd the handler freed at the start (reserved_fds[0]) is the one these reads use, so
 * they work at the fd limit too.
 *
 * The memory cgroup is found from /proc/self/cgroup at the crash: the cgroup v1 line naming the
 * `memory` controller (under /sys/fs/cgroup/memory) when there is one, else the v2 `0::` line
 * (under /sys/fs/cgroup). That assumes cgroupfs mounted where systemd and container runtimes
 * mount it; elsewhere the files are not found and the record has no cgroup texts. (Finding it at
 * install instead would take ≈ 14 µs from the handler but add ≈ 18 µs to every start.)
 *
 * The descriptors are counted with one stat(2) of /proc/self/fd, whose size is the number open
 * since Linux 6.2 (≈ 5 µs); an older kernel says 0, and then the directory is listed (≈ 30 µs).
 */
#include "cc_boot.h"
#include "cc_internal.h"
#include "cc_arch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* (handler) RLIMIT_NOFILE as the process had it; /proc/self/status as the crash found it
 * (cc__resources_read_status): the crash's own, never touched by a snapshot being written on
 * another thread meanwhile; then one file's text, and the path being built. Together, so that the
 * crash faults in as few pages as it can (cc_images.c, g_check). */
static struct {
    struct rlimit nofile;        /* RLIMIT_NOFILE as the process had it, before cc__raise_limits */
    int nofile_known;
    size_t crash_status_length;
    char crash_status[CC_RESOURCE_TEXT_MAX];
    char text[CC_RESOURCE_TEXT_MAX];
    char path[CC__PATH_MAX];
} g_texts __attribute__((aligned(4096)));

/* async-signal-safe: keeps RLIMIT_NOFILE as it is now (before the handler raises it); returns
 * it, or 0 when it could not be read. */
const struct rlimit *cc__resources_note_limits(void) {
    g_texts.nofile_known = syscall(SYS_prlimit64, 0L, (long)RLIMIT_NOFILE, (void *)0, &g_texts.nofile) == 0;
    return g_texts.nofile_known ? &g_texts.nofile : 0;
}

/* async-signal-safe: the file at `path` into g_texts.text (at most its size); the bytes read, 0 when
 * it cannot be opened or is empty. A read that returns less than it asked for ends it: the kernel
 * makes these texts (procfs, cgroupfs) whole at the first read when they fit the buffer, so the
 * read that would only say "end of file" is a system call each text need not pay (≈ 1.5 µs on
 * the project's VM). A text longer than a page may come short of the buffer then; such a text
 * is cut at CC_RESOURCE_TEXT_MAX anyway. */
static size_t cc__read_text_into(const char *path, char *text, size_t cap) {
    int fd = cc__sys_open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return 0;
    size_t got = 0;
    while (got < cap) {
        size_t want = cap - got;
        ssize_t n = cc__sys_read(fd, text + got, want);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
        if ((size_t)n < want) break;
    }
    cc__sys_close(fd);
    return got;
}

/* async-signal-safe: cc__read_text_into g_texts.text. */
static size_t cc__read_text(const char *path) { return cc__read_text_into(path, g_texts.text, sizeof g_texts.text); }

/* async-signal-safe (cc_internal.h): the value of "Threads:" in the status text, 0 when absent. */
uint32_t cc__resources_read_status(void) {
    size_t got = cc__read_text_into("/proc/self/status", g_texts.crash_status, sizeof g_texts.crash_status);
    g_texts.crash_status_length = got;
    static const char key[] = "\nThreads:";
    const size_t key_length = sizeof key - 1;
    for (size_t i = 0; i + key_length <= got; i++) {
        size_t k = 0;
        while (k < key_length && g_texts.crash_status[i + k] == key[k]) k++;
        if (k < key_length) continue;
        size_t at = i + key_length;
        while (at < got && (g_texts.crash_status[at] == ' ' || g_texts.crash_status[at] == '\t')) at++;
        uint64_t threads = 0;
        size_t digits = 0;
        for (; at < got && g_texts.crash_status[at] >= '0' && g_texts.crash_status[at] <= '9' && digits < 10; at++, digits++)
            threads = threads * 10 + (uint64_t)(g_texts.crash_status[at] - '0');
        /* Only a whole number ends in a newline: anything else says nothing. */
        return digits > 0 && at < got && g_texts.crash_status[at] == '\n' && threads <= UINT32_MAX ? (uint32_t)threads : 0;
    }
    return 0;
}

/* async-signal-safe: the file at `path` as a CC_SEC_STRING of `key`, when it can be read. */
static void cc__write_text(cc__writer_t *w, uint32_t key, const char *path) {
    size_t got = cc__read_text(path);
    if (got > 0) cc__write_string(w, key, g_texts.text, got);
}

/* async-signal-safe: the descriptors open as the crash found them. The handler has closed its two
 * reserved fds and opened the record's: stat(2)'s size of /proc/self/fd, plus one for the other
 * reserved fd; on a kernel before 6.2 (size 0), the listing, whose own fd stands in for it; -1
 * when neither works. */
static long cc__count_fds(void) {
    struct stat st;
    if (!(cc__g.flags & CC_FLAG_TEST_LIST_DESCRIPTORS) && cc__sys_fstatat(AT_FDCWD, "/proc/self/fd", &st, 0) == 0 && st.st_size > 0) return (long)st.st_size + 1;
    return cc__each_numbered_entry("/proc/self/fd", 0, 0);
}

/* async-signal-safe: the CPUs this process may run on (its affinity mask); 0 when unknown. */
static uint32_t cc__count_cpus(void) {
    static uint64_t mask[64];   /* 4096 CPUs */
    long bytes = syscall(SYS_sched_getaffinity, 0L, sizeof mask, mask);
    if (bytes <= 0) return 0;
    uint32_t count = 0;
    for (long i = 0; i < bytes / 8; i++) count += (uint32_t)__builtin_popcountll(mask[i]);
    return count;
}

/* async-signal-safe: appends `s` to g_texts.path at *n (bounded). */
static void cc__path_append(size_t *n, const char *s, size_t length) {
    for (size_t i = 0; i < length && *n + 1 < sizeof g_texts.path; i++) g_texts.path[(*n)++] = s[i];
    g_texts.path[*n] = 0;
}

/* async-signal-safe: the memory cgroup's directory and its usage, limit and events (see the file
 * comment), when /proc/self/cgroup names one. */
static void cc__write_cgroup_memory(cc__writer_t *w) {
    size_t got = cc__read_text("/proc/self/cgroup");
    if (got == 0 || got >= sizeof g_texts.text) return;
    /* "<id>:<controllers>:<path>" lines: the v1 memory one wins over the v2 "0::" one. */
    const char *v1 = 0, *v2 = 0;
    size_t v1_length = 0, v2_length = 0;
    for (size_t at = 0; at < got;) {
        size_t end = at;
        while (end < got && g_texts.text[end] != '\n') end++;
        size_t first = at, second = at;
        while (first < end && g_texts.text[first] != ':') first++;
        second = first + 1;
        while (second < end && g_texts.text[second] != ':') second++;
        if (first < end && second < end) {
            const char *controllers = g_texts.text + first + 1;
            size_t length = second - first - 1;
            int memory = 0;
            for (size_t i = 0; i + 6 <= length; i++) {
                if ((i == 0 || controllers[i - 1] == ',') && (i + 6 == length || controllers[i + 6] == ',') &&
                    controllers[i] == 'm' && controllers[i + 1] == 'e' && controllers[i + 2] == 'm' &&
                    controllers[i + 3] == 'o' && controllers[i + 4] == 'r' && controllers[i + 5] == 'y') memory = 1;
            }
            if (memory) { v1 = g_texts.text + second + 1; v1_length = end - second - 1; }
            else if (length == 0 && first - at == 1 && g_texts.text[at] == '0') { v2 = g_texts.text + second + 1; v2_length = end - second - 1; }
        }
        at = end + 1;
    }
    if (!v1 && !v2) return;
    /* The path into g_texts.path before g_texts.text is reused for the files. */
    size_t n = 0;
    cc__path_append(&n, v1 ? "v1 /sys/fs/cgroup/memory" : "v2 /sys/fs/cgroup", v1 ? 24 : 17);
    const char *path = v1 ? v1 : v2;
    size_t length = v1 ? v1_length : v2_length;
    if (length > 1 || (length == 1 && path[0] != '/')) cc__path_append(&n, path, length);
    cc__write_string(w, CC_STR_CGROUP_MEMORY, g_texts.path, n);
    /* The files: "<dir>/<leaf>" without the "v1 " / "v2 " prefix. (Opening the directory once and
     * the files from it saved ≈ 3 µs of a v1 path's three walks on the project's VM: not worth
     * the second descriptor it needs at the limit.) */
    const char *leaves[3] = { v1 ? "/memory.usage_in_bytes" : "/memory.current", v1 ? "/memory.limit_in_bytes" : "/memory.max",
                              v1 ? "/memory.oom_control" : "/memory.events" };
    const uint32_t keys[3] = { CC_STR_CGROUP_MEMORY_CURRENT, CC_STR_CGROUP_MEMORY_MAX, CC_STR_CGROUP_MEMORY_EVENTS };
    for (int i = 0; i < 3; i++) {
        size_t at = n;
        cc__path_append(&at, leaves[i], cc__strnlen(leaves[i], 32));
        cc__write_text(w, keys[i], g_texts.path + 3);
        g_texts.path[n] = 0;
    }
}

/* async-signal-safe: writes CC_SEC_RESOURCES and the resource texts (see the file comment); with
 * `crash`, the status text cc__resources_read_status kept (written once), else read now. */
void cc__write_resources(cc__writer_t *w, int crash) {
    cc_sec_resources_t resources = {0};
    uint32_t cpus = cc__count_cpus();
    CC__MARK("r:cpus");
    if (cpus) { resources.cpu_count = cpus; resources.flags |= CC_RESOURCES_CPU_COUNT; }
    long fds = cc__count_fds();
    CC__MARK("r:fds");
    if (fds >= 0) { resources.open_fds = (uint32_t)fds; resources.flags |= CC_RESOURCES_OPEN_FDS; }
    if (g_texts.nofile_known) {
        resources.nofile_soft = g_texts.nofile.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)g_texts.nofile.rlim_cur;
        resources.nofile_hard = g_texts.nofile.rlim_max == RLIM_INFINITY ? UINT64_MAX : (uint64_t)g_texts.nofile.rlim_max;
        resources.flags |= CC_RESOURCES_NOFILE;
    }
    if (cc__arch_cpu_identity(&resources.cpu_signature, resources.cpu_vendor, sizeof resources.cpu_vendor)) {
        resources.flags |= CC_RESOURCES_CPU_ID;
    }
    CC__MARK("r:cpu_id");
    cc__section_begin(w, CC_SEC_RESOURCES);
    cc__section_put(w, &resources, sizeof resources);
    cc__section_end(w);
    if (!crash) {
        cc__write_text(w, CC_STR_PROC_STATUS, "/proc/self/status");
    } else if (g_texts.crash_status_length > 0) {
        cc__write_string(w, CC_STR_PROC_STATUS, g_texts.crash_status, g_texts.crash_status_length);
        g_texts.crash_status_length = 0;
    }
    CC__MARK("r:status");
    cc__write_text(w, CC_STR_PROC_MEMINFO, "/proc/meminfo");
    CC__MARK("r:meminfo");
    cc__write_text(w, CC_STR_PROC_LOADAVG, "/proc/loadavg");
    CC__MARK("r:loadavg");
    cc__write_cgroup_memory(w);
    CC__MARK("r:cgroup");
}

/* Ordinary code (the memory watch), never the handler: glibc's own counts (mallinfo2 takes every
 * arena's lock). out: what malloc holds from the system (arena + hblkhd), hands out and has not
 * got back (uordblks + hblkhd), holds free (fordblks), holds in chunks of their own (hblkhd).
 * 0, or -1 where there is no mallinfo2 (glibc before 2.33, another C library). */
#include <malloc.h>
int cc_malloc_info(uint64_t out[4]) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 info = mallinfo2();
    out[0] = (uint64_t)(info.arena + info.hblkhd);
    out[1] = (uint64_t)(info.uordblks + info.hblkhd);
    out[2] = (uint64_t)info.fordblks;
    out[3] = (uint64_t)info.hblkhd;
    return 0;
#else
    (void)out;
    return -1;
#endif
}

/* (ordinary code, the hang watcher's tick) Each thread's CPU time (user + system) from its own CPU
 * clock: clock_gettime of the clock id the kernel makes from a thread id (MAKE_THREAD_CPUCLOCK:
 * ~tid << 3, per-thread, the scheduler's clock), which a thread of the same process may read. One
 * system call a thread, no /proc file. At most `capacity`; returns how many were read. */
uint32_t cc_thread_cpu_times(int32_t *tids, uint64_t *cpu_ns, uint32_t capacity) {
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buffer[4096];
    uint32_t count = 0;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buffer, sizeof buffer);
        if (n <= 0) break;
        for (long at = 0; at < n;) {
            struct { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; } *entry = (void *)(buffer + at);
            at += entry->reclen;
            long tid = 0;
            const char *c = entry->name;
            if (*c < '1' || *c > '9') continue;
            for (; *c >= '0' && *c <= '9'; c++) tid = tid * 10 + (*c - '0');
            if (*c != 0 || count >= capacity) continue;
            struct timespec ts;
            clockid_t clock = (clockid_t)((~(unsigned)tid << 3) | 6u);   /* CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED */
            if (clock_gettime(clock, &ts) != 0) continue;
            tids[count] = (int32_t)tid;
            cpu_ns[count] = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
            count++;
        }
    }
    close(fd);
    return count;
}
