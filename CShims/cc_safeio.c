/* cc_safeio.c — raw I/O, clocks, number formatting, CRC-32 and fault-proof memory reads for the handler. */
#include "cc_boot.h"
#include "cc_internal.h"
#include "cc_crc32_tables.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* async-signal-safe: CRC-32 (IEEE, as zlib), eight bytes per step with the tables of
 * cc_crc32_tables.h. A record's sections are checksummed as they are written, so this is on the
 * crash's path for every byte of the record: byte by byte it took ≈ 2.2 ns a byte on the
 * project's VM (≈ 32 µs of a 14 KB record), eight at a time ≈ 0.6. */
uint32_t cc_crc32(uint32_t crc, const void *data, size_t len) {
    const unsigned char *p = data;
    crc = ~crc;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (len > 0 && ((uintptr_t)p & 7) != 0) {
        crc = g_crc_slices[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
        len--;
    }
    for (; len >= 8; p += 8, len -= 8) {
        uint32_t low, high;
        __builtin_memcpy(&low, p, 4);
        __builtin_memcpy(&high, p + 4, 4);
        low ^= crc;
        crc = g_crc_slices[7][low & 0xFF] ^ g_crc_slices[6][(low >> 8) & 0xFF] ^
              g_crc_slices[5][(low >> 16) & 0xFF] ^ g_crc_slices[4][low >> 24] ^
              g_crc_slices[3][high & 0xFF] ^ g_crc_slices[2][(high >> 8) & 0xFF] ^
              g_crc_slices[1][(high >> 16) & 0xFF] ^ g_crc_slices[0][high >> 24];
    }
#endif
    for (; len > 0; len--) crc = g_crc_slices[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

/* async-signal-safe: a raw syscall. */
pid_t cc__gettid(void) { return (pid_t)syscall(SYS_gettid); }

/* async-signal-safe: clock_gettime is on the POSIX list. */
int64_t cc__clock_ns(clockid_t clock) {
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0) return 0;
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* async-signal-safe: write(2) until done, retrying EINTR; -1 on any other failure (errno says
 * which) or when write(2) makes no progress (errno 0). */
int cc__write_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len > 0) {
        ssize_t n = cc__sys_write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (n == 0) { errno = 0; return -1; }   /* wrote nothing, said nothing: no errno to blame */
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* async-signal-safe. */
size_t cc__strnlen(const char *s, size_t max) {
    size_t n = 0;
    if (!s) return 0;
    while (n < max && s[n]) n++;
    return n;
}

/* async-signal-safe: copies at most size-1 bytes and always terminates; returns bytes copied. */
size_t cc__strlcpy(char *dst, const char *src, size_t size) {
    if (size == 0) return 0;
    size_t n = 0;
    if (src) while (n + 1 < size && src[n]) { dst[n] = src[n]; n++; }
    dst[n] = 0;
    return n;
}

/* async-signal-safe. */
int cc__streq(const char *a, const char *b) {
    while (*a && *a == *b) { a++; b++; }
    return *a == *b;
}

/* async-signal-safe: decimal digits of value into out (at least 20 bytes); no terminator. */
size_t cc__fmt_u64(char *out, uint64_t value) {
    char tmp[20];
    size_t n = 0;
    do { tmp[n++] = (char)('0' + value % 10); value /= 10; } while (value && n < sizeof tmp);
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}

/* async-signal-safe: lowercase hex, zero-padded to `digits` (1...16); no terminator. */
size_t cc__fmt_hex(char *out, uint64_t value, int digits) {
    static const char hex[] = "0123456789abcdef";
    if (digits < 1) digits = 1;
    if (digits > 16) digits = 16;
    for (int i = digits - 1; i >= 0; i--) { out[i] = hex[value & 0xF]; value >>= 4; }
    return (size_t)digits;
}

/* The crashed thread's stack, read once (cc__safe_window_read) before anything else reads it:
 * the unwinder's saved registers and frame records, the words the pointed-memory windows start
 * from, the C++ exception's search and the stack's own CC_SEC_MEMORY all lie in it, and each read
 * of them was a process_vm_readv of its own (≈ 2–3 µs each in a crash, where the kernel's paths
 * are cold). While the record is written that memory does not change: the thread is in the
 * handler (on the alternate stack, or below sp) and every other thread is stopped. `length` is
 * published last, so a reader on another thread (the thread helper) sees no half-made window. */
static struct {
    uint64_t start;
    _Atomic size_t length;
    unsigned char bytes[CC__STACK_WINDOW];
} g_window;

/* async-signal-safe (cc_internal.h) */
const unsigned char *cc__safe_window_read(uint64_t start, size_t want, size_t *got) {
    atomic_store(&g_window.length, 0);
    if (want > sizeof g_window.bytes) want = sizeof g_window.bytes;
    size_t n = cc__safe_read(start, g_window.bytes, want);
    g_window.start = start;
    atomic_store(&g_window.length, n);
    *got = n;
    return g_window.bytes;
}

/* async-signal-safe: [address, address + len) copied from the window when it lies whole in it. */
static int cc__from_window(uint64_t address, void *out, size_t len) {
    size_t window = atomic_load(&g_window.length);
    if (!window || address < g_window.start || address - g_window.start > window ||
        len > window - (address - g_window.start)) return 0;
    const unsigned char *from = g_window.bytes + (address - g_window.start);
    unsigned char *to = out;
    for (size_t i = 0; i < len; i++) to[i] = from[i];
    return 1;
}

/* async-signal-safe: the pipe the fallback reads through, made by the first read that needs it
 * (a sandbox that refuses process_vm_readv is rare, and pipe2 cost every start ≈ 8 µs). Kept
 * only by the process that installed capture; another (a fork or vfork child) gets one for this
 * read alone (*temporary): a vfork child shares this memory but not its parent's fd table, and
 * the parent would then write its memory into whatever its own fds of those numbers are. Two
 * threads that make one at once keep the first published. 0 when there is none (the fd limit). */
static int cc__safe_read_pipe(int *read_fd, int *write_fd, int *temporary) {
    uint64_t packed = atomic_load(&cc__g.safe_read_pipe);
    int installer = cc__sys_getpid() == cc__g.install_pid;
    *temporary = 0;
    if (packed == 0 || !installer) {
        int fds[2];
        if (syscall(SYS_pipe2, fds, (long)(O_CLOEXEC | O_NONBLOCK)) != 0) return 0;
        uint64_t made = ((uint64_t)(uint32_t)(fds[0] + 1) << 32) | (uint32_t)(fds[1] + 1);
        if (!installer) {
            *temporary = 1;
            packed = made;
        } else if (atomic_compare_exchange_strong(&cc__g.safe_read_pipe, &packed, made)) {
            packed = made;
        } else {
            cc__sys_close(fds[0]);
            cc__sys_close(fds[1]);
        }
    }
    *read_fd = (int)(uint32_t)(packed >> 32) - 1;
    *write_fd = (int)(uint32_t)packed - 1;
    return 1;
}

/* Ordinary code (uninstall): closes the fallback's pipe, when one was made. */
void cc__safe_read_pipe_close(void) {
    uint64_t packed = atomic_exchange(&cc__g.safe_read_pipe, 0);
    if (packed == 0) return;
    close((int)(uint32_t)(packed >> 32) - 1);
    close((int)(uint32_t)packed - 1);
}

/* async-signal-safe: copies memory that may be unmapped without faulting. What lies whole in the
 * crashed thread's stack window comes from it; the rest, by process_vm_readv on our own pid,
 * which reports EFAULT instead of raising SIGSEGV; where a sandbox refuses it, write(2) into a
 * pipe does the same check in the kernel. Returns the bytes copied from the start. */
size_t cc__safe_read(uint64_t address, void *out, size_t len) {
    if (len == 0 || address == 0) return 0;
    if (cc__from_window(address, out, len)) return len;
    struct iovec local = { .iov_base = out, .iov_len = len };
    struct iovec remote = { .iov_base = (void *)(uintptr_t)address, .iov_len = len };
    pid_t pid = cc__g.handler_pid ? cc__g.handler_pid : cc__sys_getpid();
    ssize_t n = syscall(SYS_process_vm_readv, (long)pid, &local, 1UL, &remote, 1UL, 0UL);
    if (n >= 0) return (size_t)n;
    if (errno != ENOSYS && errno != EPERM) return 0; /* EFAULT and friends: not readable */
    int read_fd, write_fd, temporary;
    if (!cc__safe_read_pipe(&read_fd, &write_fd, &temporary)) return 0;
    size_t done = 0;
    while (done < len) {
        size_t chunk = len - done > 4096 ? 4096 : len - done;
        ssize_t w = cc__sys_write(write_fd, (const char *)(uintptr_t)address + done, chunk);
        if (w <= 0) break;
        ssize_t r = cc__sys_read(read_fd, (char *)out + done, (size_t)w);
        if (r != w) break;
        done += (size_t)w;
    }
    if (temporary) {
        cc__sys_close(read_fd);
        cc__sys_close(write_fd);
    }
    return done;
}

/* async-signal-safe: reads `size` bytes (8 or 16) at each of `count` addresses (at most
 * CC__SAFE_WORDS_MAX) into out[i * size / 8 ...], with as few system calls as the memory allows:
 * one process_vm_readv with a remote iovec per address, which stops at the first one that
 * cannot be read; that one is marked unreadable and the rest are read on from there. ok[i] says
 * whether address i was read whole. */
void cc__safe_read_many(const uint64_t *addresses, size_t size, uint64_t *out, uint8_t *ok, uint32_t count) {
    /* The local iovecs, then the remote ones right after them: the few a crash uses lie on one
     * page, to fault in once (cc_images.c, g_check). `from` maps each iovec to its address. */
    static struct iovec io[2 * CC__SAFE_WORDS_MAX];
    static uint32_t from[CC__SAFE_WORDS_MAX];
    if (count > CC__SAFE_WORDS_MAX) count = CC__SAFE_WORDS_MAX;
    if (size != 8 && size != 16) size = 8;
    size_t words = size / 8;
    /* What lies in the stack window (a frame's words, most often) is copied from it; the rest is
     * read with as few system calls as the memory allows. */
    uint32_t left = 0;
    for (uint32_t i = 0; i < count; i++) {
        ok[i] = (uint8_t)cc__from_window(addresses[i], &out[i * words], size);
        if (!ok[i]) from[left++] = i;
    }
    struct iovec *local = io, *remote = io + left;
    pid_t pid = cc__g.handler_pid ? cc__g.handler_pid : cc__sys_getpid();
    uint32_t next = 0;
    while (next < left) {
        uint32_t n = left - next;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t at = from[next + i];
            local[i].iov_base = &out[at * words];
            local[i].iov_len = size;
            remote[i].iov_base = (void *)(uintptr_t)addresses[at];
            remote[i].iov_len = size;
        }
        ssize_t got = syscall(SYS_process_vm_readv, (long)pid, local, (unsigned long)n, remote, (unsigned long)n, 0UL);
        if (got < 0 && (errno == ENOSYS || errno == EPERM)) {   /* refused: one at a time, through the pipe */
            for (uint32_t i = next; i < left; i++)
                ok[from[i]] = cc__safe_read(addresses[from[i]], &out[from[i] * words], size) == size;
            return;
        }
        uint32_t whole = got > 0 ? (uint32_t)((size_t)got / size) : 0;
        for (uint32_t i = 0; i < whole; i++) ok[from[next + i]] = 1;
        next += whole + 1;   /* the one it stopped at is unreadable (or torn): skip it */
    }
}

/* async-signal-safe: copies count spans of memory that may be unmapped, remote[i] into local[i]
 * (the same length each; count at most UIO_MAXIOV, 1024), with one process_vm_readv when all can
 * be read. The kernel stops at the first span it cannot read: that one is marked unreadable and
 * the rest are read on from there. Where process_vm_readv is refused, one at a time through
 * cc__safe_read. ok[i] says whether span i was read whole. */
void cc__safe_readv(struct iovec *local, struct iovec *remote, uint8_t *ok, uint32_t count) {
    pid_t pid = cc__g.handler_pid ? cc__g.handler_pid : cc__sys_getpid();
    uint32_t next = 0;
    while (next < count) {
        uint32_t n = count - next;
        for (uint32_t i = 0; i < n; i++) ok[next + i] = 0;
        ssize_t got = syscall(SYS_process_vm_readv, (long)pid, local + next, (unsigned long)n, remote + next,
                              (unsigned long)n, 0UL);
        if (got < 0 && (errno == ENOSYS || errno == EPERM)) {
            for (uint32_t i = next; i < count; i++)
                ok[i] = cc__safe_read((uint64_t)(uintptr_t)remote[i].iov_base, local[i].iov_base, local[i].iov_len) == local[i].iov_len;
            return;
        }
        size_t left = got > 0 ? (size_t)got : 0;
        while (next < count && left >= remote[next].iov_len) {
            left -= remote[next].iov_len;
            ok[next++] = 1;
        }
        next++;   /* the one it stopped at is unreadable (or torn): skip it */
    }
}

/* async-signal-safe: getrandom(2) without blocking; falls back to splitmix64 over the install-time
 * seed, the thread id and the monotonic clock. */
void cc__random_bytes(void *out, size_t len) {
    long n = syscall(SYS_getrandom, out, len, 0x0001 /* GRND_NONBLOCK */);
    if (n == (long)len) return;
    uint64_t x = cc__g.random_seed ^ (uint64_t)cc__clock_ns(CLOCK_MONOTONIC) ^ ((uint64_t)cc__gettid() << 32);
    unsigned char *p = out;
    for (size_t i = 0; i < len; i++) {
        if (i % 8 == 0) {
            x += 0x9E3779B97F4A7C15ull;
            uint64_t z = x;
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            x ^= z ^ (z >> 31);
        }
        p[i] = (unsigned char)(x >> ((i % 8) * 8));
    }
}

#ifdef CC_TRACE_STEPS
#include <sys/resource.h>
static struct { int64_t ns[64]; long flt[64]; const char *label[64]; int count; } g_trace;
void cc__trace_mark(const char *label) {
    if (g_trace.count < 64) {
#ifdef CC_TRACE_FAULTS   /* a getrusage each: ≈ 2.5 µs a mark on the project's VM */
        struct rusage ru; syscall(SYS_getrusage, RUSAGE_THREAD, &ru);
        g_trace.flt[g_trace.count] = ru.ru_minflt + ru.ru_majflt;
#else
        g_trace.flt[g_trace.count] = 0;
#endif
        g_trace.label[g_trace.count] = label; g_trace.ns[g_trace.count++] = cc__clock_ns(CLOCK_MONOTONIC);
    }
}
void cc__trace_dump(const char *title) {
    char line[256];
    size_t n = cc__strlcpy(line, title, sizeof line);
    line[n++] = '\n';
    cc__write_all(2, line, n);
    for (int i = 1; i < g_trace.count; i++) {
        n = cc__strlcpy(line, "  ", sizeof line);
        n += cc__strlcpy(line + n, g_trace.label[i], sizeof line - n);
        line[n++] = ' ';
        n += cc__fmt_u64(line + n, (uint64_t)(g_trace.ns[i] - g_trace.ns[i - 1]));
        line[n++] = ' ';
        n += cc__fmt_u64(line + n, (uint64_t)(g_trace.flt[i] - g_trace.flt[i - 1]));
        line[n++] = '\n';
        cc__write_all(2, line, n);
    }
    g_trace.count = 0;
}
#endif

/* async-signal-safe: calls each(number, context) for every entry of the directory at `path` whose
 * name is a decimal number (a /proc listing: /proc/self/task, /proc/self/fd), in the kernel's order;
 * returns how many there were, or -1 when the directory cannot be opened. One 4 KiB buffer,
 * getdents64 (no opendir: it allocates). */
long cc__each_numbered_entry(const char *path, void (*each)(long number, void *context), void *context) {
    int fd = cc__sys_open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    static char dents[4096];
    long count = 0;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, dents, sizeof dents);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (long off = 0; off < n;) {
            struct { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; } *d =
                (void *)(dents + off);
            if (d->reclen == 0) break;
            off += d->reclen;
            if (d->name[0] < '0' || d->name[0] > '9') continue;
            long number = 0;
            for (const char *c = d->name; *c >= '0' && *c <= '9'; c++) number = number * 10 + (*c - '0');
            count++;
            if (each) each(number, context);
        }
    }
    cc__sys_close(fd);
    return count;
}
