/* cc_safeio.c — raw I/O, clocks, number formatting, CRC-32 and fault-proof memory reads for the handler. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), one entry per byte value: constant
 * data, so nothing to fill at install and nothing for the handler to wait for. */
static const uint32_t g_crc_table[256] = {
    0x00000000u, 0x77073096u, 0xee0e612cu, 0x990951bau, 0x076dc419u, 0x706af48fu,
    0xe963a535u, 0x9e6495a3u, 0x0edb8832u, 0x79dcb8a4u, 0xe0d5e91eu, 0x97d2d988u,
    0x09b64c2bu, 0x7eb17cbdu, 0xe7b82d07u, 0x90bf1d91u, 0x1db71064u, 0x6ab020f2u,
    0xf3b97148u, 0x84be41deu, 0x1adad47du, 0x6ddde4ebu, 0xf4d4b551u, 0x83d385c7u,
    0x136c9856u, 0x646ba8c0u, 0xfd62f97au, 0x8a65c9ecu, 0x14015c4fu, 0x63066cd9u,
    0xfa0f3d63u, 0x8d080df5u, 0x3b6e20c8u, 0x4c69105eu, 0xd56041e4u, 0xa2677172u,
    0x3c03e4d1u, 0x4b04d447u, 0xd20d85fdu, 0xa50ab56bu, 0x35b5a8fau, 0x42b2986cu,
    0xdbbbc9d6u, 0xacbcf940u, 0x32d86ce3u, 0x45df5c75u, 0xdcd60dcfu, 0xabd13d59u,
    0x26d930acu, 0x51de003au, 0xc8d75180u, 0xbfd06116u, 0x21b4f4b5u, 0x56b3c423u,
    0xcfba9599u, 0xb8bda50fu, 0x2802b89eu, 0x5f058808u, 0xc60cd9b2u, 0xb10be924u,
    0x2f6f7c87u, 0x58684c11u, 0xc1611dabu, 0xb6662d3du, 0x76dc4190u, 0x01db7106u,
    0x98d220bcu, 0xefd5102au, 0x71b18589u, 0x06b6b51fu, 0x9fbfe4a5u, 0xe8b8d433u,
    0x7807c9a2u, 0x0f00f934u, 0x9609a88eu, 0xe10e9818u, 0x7f6a0dbbu, 0x086d3d2du,
    0x91646c97u, 0xe6635c01u, 0x6b6b51f4u, 0x1c6c6162u, 0x856530d8u, 0xf262004eu,
    0x6c0695edu, 0x1b01a57bu, 0x8208f4c1u, 0xf50fc457u, 0x65b0d9c6u, 0x12b7e950u,
    0x8bbeb8eau, 0xfcb9887cu, 0x62dd1ddfu, 0x15da2d49u, 0x8cd37cf3u, 0xfbd44c65u,
    0x4db26158u, 0x3ab551ceu, 0xa3bc0074u, 0xd4bb30e2u, 0x4adfa541u, 0x3dd895d7u,
    0xa4d1c46du, 0xd3d6f4fbu, 0x4369e96au, 0x346ed9fcu, 0xad678846u, 0xda60b8d0u,
    0x44042d73u, 0x33031de5u, 0xaa0a4c5fu, 0xdd0d7cc9u, 0x5005713cu, 0x270241aau,
    0xbe0b1010u, 0xc90c2086u, 0x5768b525u, 0x206f85b3u, 0xb966d409u, 0xce61e49fu,
    0x5edef90eu, 0x29d9c998u, 0xb0d09822u, 0xc7d7a8b4u, 0x59b33d17u, 0x2eb40d81u,
    0xb7bd5c3bu, 0xc0ba6cadu, 0xedb88320u, 0x9abfb3b6u, 0x03b6e20cu, 0x74b1d29au,
    0xead54739u, 0x9dd277afu, 0x04db2615u, 0x73dc1683u, 0xe3630b12u, 0x94643b84u,
    0x0d6d6a3eu, 0x7a6a5aa8u, 0xe40ecf0bu, 0x9309ff9du, 0x0a00ae27u, 0x7d079eb1u,
    0xf00f9344u, 0x8708a3d2u, 0x1e01f268u, 0x6906c2feu, 0xf762575du, 0x806567cbu,
    0x196c3671u, 0x6e6b06e7u, 0xfed41b76u, 0x89d32be0u, 0x10da7a5au, 0x67dd4accu,
    0xf9b9df6fu, 0x8ebeeff9u, 0x17b7be43u, 0x60b08ed5u, 0xd6d6a3e8u, 0xa1d1937eu,
    0x38d8c2c4u, 0x4fdff252u, 0xd1bb67f1u, 0xa6bc5767u, 0x3fb506ddu, 0x48b2364bu,
    0xd80d2bdau, 0xaf0a1b4cu, 0x36034af6u, 0x41047a60u, 0xdf60efc3u, 0xa867df55u,
    0x316e8eefu, 0x4669be79u, 0xcb61b38cu, 0xbc66831au, 0x256fd2a0u, 0x5268e236u,
    0xcc0c7795u, 0xbb0b4703u, 0x220216b9u, 0x5505262fu, 0xc5ba3bbeu, 0xb2bd0b28u,
    0x2bb45a92u, 0x5cb36a04u, 0xc2d7ffa7u, 0xb5d0cf31u, 0x2cd99e8bu, 0x5bdeae1du,
    0x9b64c2b0u, 0xec63f226u, 0x756aa39cu, 0x026d930au, 0x9c0906a9u, 0xeb0e363fu,
    0x72076785u, 0x05005713u, 0x95bf4a82u, 0xe2b87a14u, 0x7bb12baeu, 0x0cb61b38u,
    0x92d28e9bu, 0xe5d5be0du, 0x7cdcefb7u, 0x0bdbdf21u, 0x86d3d2d4u, 0xf1d4e242u,
    0x68ddb3f8u, 0x1fda836eu, 0x81be16cdu, 0xf6b9265bu, 0x6fb077e1u, 0x18b74777u,
    0x88085ae6u, 0xff0f6a70u, 0x66063bcau, 0x11010b5cu, 0x8f659effu, 0xf862ae69u,
    0x616bffd3u, 0x166ccf45u, 0xa00ae278u, 0xd70dd2eeu, 0x4e048354u, 0x3903b3c2u,
    0xa7672661u, 0xd06016f7u, 0x4969474du, 0x3e6e77dbu, 0xaed16a4au, 0xd9d65adcu,
    0x40df0b66u, 0x37d83bf0u, 0xa9bcae53u, 0xdebb9ec5u, 0x47b2cf7fu, 0x30b5ffe9u,
    0xbdbdf21cu, 0xcabac28au, 0x53b39330u, 0x24b4a3a6u, 0xbad03605u, 0xcdd70693u,
    0x54de5729u, 0x23d967bfu, 0xb3667a2eu, 0xc4614ab8u, 0x5d681b02u, 0x2a6f2b94u,
    0xb40bbe37u, 0xc30c8ea1u, 0x5a05df1bu, 0x2d02ef8du,
};

/* async-signal-safe. */
uint32_t cc_crc32(uint32_t crc, const void *data, size_t len) {
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < len; i++) crc = g_crc_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
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
        ssize_t n = write(fd, p, len);
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

/* async-signal-safe: copies memory that may be unmapped without faulting. process_vm_readv on
 * our own pid reports EFAULT instead of raising SIGSEGV; where a sandbox refuses it, write(2)
 * into a pipe does the same check in the kernel. Returns the bytes copied from the start. */
size_t cc__safe_read(uint64_t address, void *out, size_t len) {
    if (len == 0 || address == 0) return 0;
    struct iovec local = { .iov_base = out, .iov_len = len };
    struct iovec remote = { .iov_base = (void *)(uintptr_t)address, .iov_len = len };
    pid_t pid = cc__g.handler_pid ? cc__g.handler_pid : getpid();
    ssize_t n = syscall(SYS_process_vm_readv, (long)pid, &local, 1UL, &remote, 1UL, 0UL);
    if (n >= 0) return (size_t)n;
    if (errno != ENOSYS && errno != EPERM) return 0; /* EFAULT and friends: not readable */
    if (cc__g.safe_read_pipe[0] < 0) return 0;
    size_t done = 0;
    while (done < len) {
        size_t chunk = len - done > 4096 ? 4096 : len - done;
        ssize_t w = write(cc__g.safe_read_pipe[1], (const char *)(uintptr_t)address + done, chunk);
        if (w <= 0) break;
        ssize_t r = read(cc__g.safe_read_pipe[0], (char *)out + done, (size_t)w);
        if (r != w) break;
        done += (size_t)w;
    }
    return done;
}

/* async-signal-safe: reads `size` bytes (8 or 16) at each of `count` addresses (at most
 * CC__SAFE_WORDS_MAX) into out[i * size / 8 ...], with as few system calls as the memory allows:
 * one process_vm_readv with a remote iovec per address, which stops at the first one that
 * cannot be read; that one is marked unreadable and the rest are read on from there. ok[i] says
 * whether address i was read whole. */
void cc__safe_read_many(const uint64_t *addresses, size_t size, uint64_t *out, uint8_t *ok, uint32_t count) {
    static struct iovec local[CC__SAFE_WORDS_MAX], remote[CC__SAFE_WORDS_MAX];
    if (count > CC__SAFE_WORDS_MAX) count = CC__SAFE_WORDS_MAX;
    if (size != 8 && size != 16) size = 8;
    size_t words = size / 8;
    pid_t pid = cc__g.handler_pid ? cc__g.handler_pid : getpid();
    uint32_t next = 0;
    while (next < count) {
        uint32_t n = count - next;
        for (uint32_t i = 0; i < n; i++) {
            ok[next + i] = 0;
            local[i].iov_base = &out[(next + i) * words];
            local[i].iov_len = size;
            remote[i].iov_base = (void *)(uintptr_t)addresses[next + i];
            remote[i].iov_len = size;
        }
        ssize_t got = syscall(SYS_process_vm_readv, (long)pid, local, (unsigned long)n, remote, (unsigned long)n, 0UL);
        if (got < 0 && (errno == ENOSYS || errno == EPERM)) {   /* refused: one at a time, through the pipe */
            for (uint32_t i = next; i < count; i++) ok[i] = cc__safe_read(addresses[i], &out[i * words], size) == size;
            return;
        }
        uint32_t whole = got > 0 ? (uint32_t)((size_t)got / size) : 0;
        for (uint32_t i = 0; i < whole; i++) ok[next + i] = 1;
        next += whole + 1;   /* the one it stopped at is unreadable (or torn): skip it */
    }
}

/* async-signal-safe: copies count spans of memory that may be unmapped, remote[i] into local[i]
 * (the same length each; count at most UIO_MAXIOV, 1024), with one process_vm_readv when all can
 * be read. The kernel stops at the first span it cannot read: that one is marked unreadable and
 * the rest are read on from there. Where process_vm_readv is refused, one at a time through
 * cc__safe_read. ok[i] says whether span i was read whole. */
void cc__safe_readv(struct iovec *local, struct iovec *remote, uint8_t *ok, uint32_t count) {
    pid_t pid = cc__g.handler_pid ? cc__g.handler_pid : getpid();
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
        struct rusage ru; syscall(SYS_getrusage, RUSAGE_THREAD, &ru);
        g_trace.flt[g_trace.count] = ru.ru_minflt + ru.ru_majflt;
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
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
    close(fd);
    return count;
}
