/* cc_locks.c — which lock a blocked thread waits on, and which thread holds it: a hang or snapshot
 * record's CC_SEC_LOCK_WAITS, and the hang watcher's deadlock check on every tick.
 *
 * A thread blocked on a lock is in futex(2). /proc/self/task/<tid>/syscall gives the call's number
 * and arguments while the thread sleeps in it (the kernel reads them from the saved registers;
 * "running" otherwise): the word's address, the operation and the value waited for. The words
 * around it are then read with process_vm_readv on this process, so a lock freed and unmapped
 * meanwhile is an error (CC_LOCK_UNREADABLE), never a fault, and matched against the layouts that
 * say who holds a lock:
 *   - glibc's pthread_mutex_t (x86-64 and aarch64 alike: __lock, __count, __owner, __nusers,
 *     __kind at 0, 4, 8, 12, 16). A normal, recursive, error-checking or adaptive mutex's waiter
 *     waits for __lock to leave 2 (__lll_lock_wait); the holder is __owner. A robust mutex's
 *     __lock is its holder's tid (with FUTEX_WAITERS), and so is a priority-inheritance one's,
 *     whose waiter calls FUTEX_LOCK_PI; both must agree with __owner. NIOLock and Foundation's
 *     NSLock are such mutexes.
 *   - glibc's pthread_rwlock_t (__readers, __writers, __wrphase_futex, __writers_futex at 0, 4, 8,
 *     12; __cur_writer at 24): a writer waits on __writers_futex for 1|FUTEX_USED, a reader in a
 *     write phase on __wrphase_futex for the same; the holder is __cur_writer, and __readers must
 *     have its write-locked bit. A writer that waits for readers waits for FUTEX_USED alone:
 *     readers are not recorded by the lock.
 *   - any other FUTEX_LOCK_PI word (Swift's Synchronization.Mutex on Linux): the holder's tid is
 *     the word, by the kernel's own protocol.
 * Each kind is taken only when every word it needs checks out (a known __kind, the value the
 * waiter passed, the write-locked bit); the holder must be a thread of this process, or is
 * flagged CC_LOCK_HOLDER_GONE. Anything else is a futex with no owner (a condition variable, a
 * semaphore): readers name it from the thread's frames.
 *
 * Ordinary code, on the hang watcher's thread (which waits on no lock here); never in a signal
 * handler. Costs one open, read and close of a small /proc file per thread.
 */
#include "cc_boot.h"
#include "cc_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define CC__MUTEX_KINDS 0x3F3u            /* PTHREAD_MUTEX_{KIND_MASK 3, ROBUST 16, PI 32, PP 64, PSHARED 128, ELISION 256, NO_ELISION 512} */
#define CC__MUTEX_ROBUST 16u
#define CC__MUTEX_PI 32u
#define CC__MUTEX_PP 64u
#define CC__RWLOCK_WRPHASE 1u
#define CC__RWLOCK_WRLOCKED 2u
#define CC__RWLOCK_FUTEX_USED 2u
#define CC__PID_MAX 4194304                /* PID_MAX_LIMIT on 64-bit: no tid is larger */

static int cc__tid_listed(const int32_t *tids, uint32_t count, int32_t tid) {
    uint32_t lo = 0, hi = count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (tids[mid] == tid) return 1;
        if (tids[mid] < tid) lo = mid + 1; else hi = mid;
    }
    return 0;
}

/* `length` bytes of this process at `address`, or 0 when any of them cannot be read. */
static int cc__read_own(uint64_t address, void *into, size_t length) {
    struct iovec local = { into, length }, remote = { (void *)(uintptr_t)address, length };
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)length;
}

static uint64_t cc__hex(const char **p) {
    const char *s = *p;
    while (*s == ' ') s++;
    if (s[0] == '0' && s[1] == 'x') s += 2;
    uint64_t value = 0;
    for (;; s++) {
        int digit = (*s >= '0' && *s <= '9') ? *s - '0' : (*s >= 'a' && *s <= 'f') ? *s - 'a' + 10 : -1;
        if (digit < 0) break;
        value = value * 16 + (uint64_t)digit;
    }
    *p = s;
    return value;
}

/* The holder's tid as a lock gives it: listed, or flagged gone; 0 stays 0. */
static void cc__holder(cc_lock_wait_t *out, int64_t tid, const int32_t *tids, uint32_t count) {
    if (tid <= 0 || tid > CC__PID_MAX) { out->holder_tid = 0; return; }
    out->holder_tid = (int32_t)tid;
    if (!cc__tid_listed(tids, count, (int32_t)tid)) out->flags |= CC_LOCK_HOLDER_GONE;
}

/* A glibc mutex whose __lock is `futex`, waited for as `cmd` with `value`: 1 when it is one. */
static int cc__as_mutex(cc_lock_wait_t *out, const uint32_t *w, int cmd, const int32_t *tids, uint32_t count) {
    uint32_t lock = w[0], owner = w[2], nusers = w[3], kind = w[4];
    if ((kind & ~CC__MUTEX_KINDS) != 0 || (kind & CC__MUTEX_PP)) return 0;
    if (kind & CC__MUTEX_PI) {
        if (cmd != FUTEX_LOCK_PI && cmd != FUTEX_LOCK_PI2) return 0;
        if ((lock & FUTEX_TID_MASK) != owner && lock != 0) return 0;
        out->kind = CC_LOCK_MUTEX_PI;
        cc__holder(out, (int64_t)(lock & FUTEX_TID_MASK), tids, count);
    } else if (kind & CC__MUTEX_ROBUST) {
        if (cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET) return 0;
        if ((out->futex_value & FUTEX_TID_MASK) == 0 || ((lock & FUTEX_TID_MASK) != owner && lock != 0)) return 0;
        out->kind = CC_LOCK_MUTEX_ROBUST;
        cc__holder(out, (int64_t)(lock & FUTEX_TID_MASK), tids, count);
    } else {
        /* __lll_lock_wait waits for 2 ("locked, with waiters"); a held mutex has a user. */
        if (cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET) return 0;
        if (out->futex_value != 2 || lock > 2 || (lock != 0 && nusers == 0) || (int32_t)owner < 0 || owner > CC__PID_MAX) return 0;
        out->kind = CC_LOCK_MUTEX;
        cc__holder(out, lock == 0 ? 0 : (int64_t)owner, tids, count);
    }
    if (lock == 0) out->flags |= CC_LOCK_RELEASED;
    return 1;
}

/* A glibc rwlock whose futex word sits `at` bytes into it (8: __wrphase_futex, 12: __writers_futex). */
static int cc__as_rwlock(cc_lock_wait_t *out, const uint32_t *w, int at, int cmd, const int32_t *tids, uint32_t count) {
    if (cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET) return 0;
    uint32_t readers = w[0], writer = w[6], shared = w[7];
    if (shared > 1) return 0;
    if (out->futex_value == (1u | CC__RWLOCK_FUTEX_USED)) {
        /* Waiting for a writer: the lock must say one holds it. */
        if (!(readers & CC__RWLOCK_WRLOCKED)) return 0;
        if (at == 8 && !(readers & CC__RWLOCK_WRPHASE)) return 0;
        if ((int32_t)writer <= 0 || writer > CC__PID_MAX) return 0;
        out->kind = CC_LOCK_RWLOCK_WRITER;
        cc__holder(out, (int64_t)writer, tids, count);
        return 1;
    }
    if (at == 8 && out->futex_value == CC__RWLOCK_FUTEX_USED && !(readers & CC__RWLOCK_WRPHASE) && (readers >> 3) != 0) {
        out->kind = CC_LOCK_RWLOCK_READERS;
        out->holder_tid = 0;
        return 1;
    }
    return 0;
}

/* Fills `out` from the lock at out->futex_address, waited for with out->futex_op and futex_value.
 * One read of the 48 bytes from 16 before the word (a mutex starts at the word, an rwlock 8 or
 * 12 bytes before it), or of the 32 from the word when the bytes before it are not mapped. */
static void cc__classify(cc_lock_wait_t *out, const int32_t *tids, uint32_t count) {
    int cmd = (int)(out->futex_op & FUTEX_CMD_MASK);
    uint64_t address = out->futex_address;
    out->kind = CC_LOCK_FUTEX;
    out->lock_address = address;
    uint32_t window[12];
    const uint32_t *w;   /* the words from the futex on */
    int before = 0;      /* whether window holds the 16 bytes before it */
    if (address >= 16 && cc__read_own(address - 16, window, sizeof window)) {
        w = window + 4;
        before = 1;
    } else if (cc__read_own(address, window, 32)) {
        w = window;
    } else if (cc__read_own(address, window, 4)) {
        memset(window + 1, 0, sizeof window - 4);
        out->words[0] = window[0];
        w = 0;
    } else {
        out->flags |= CC_LOCK_UNREADABLE;
        return;
    }
    if (w) {
        memcpy(out->words, w, sizeof out->words);
        if (cc__as_mutex(out, w, cmd, tids, count)) return;
    }
    for (int at = 12; before && at >= 8; at -= 4) {
        const uint32_t *r = window + 4 - at / 4;   /* the rwlock's words, `at` bytes before the futex */
        if (cc__as_rwlock(out, r, at, cmd, tids, count)) {
            out->lock_address = address - (uint64_t)at;
            memcpy(out->words, r, sizeof out->words);
            return;
        }
    }
    if (cmd == FUTEX_LOCK_PI || cmd == FUTEX_LOCK_PI2) {
        out->kind = CC_LOCK_PI_FUTEX;
        uint32_t word = out->words[0];
        cc__holder(out, (int64_t)(word & FUTEX_TID_MASK), tids, count);
        if ((word & FUTEX_TID_MASK) == 0) out->flags |= CC_LOCK_RELEASED;
    }
}

/* One thread's futex wait from its /proc/self/task/<tid>/syscall: 1 (out's tid, address, op and
 * value filled), or 0 when it is not blocked in a futex wait. */
static int cc__futex_wait_of(int tasks, int32_t tid, cc_lock_wait_t *out) {
    char path[32], text[256];
    snprintf(path, sizeof path, "%d/syscall", (int)tid);
    int fd = openat(tasks, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return 0;
    text[n] = 0;
    if (text[0] < '0' || text[0] > '9') return 0;   /* "running", or "-1 …" (not in a system call) */
    long number = strtol(text, 0, 10);
    if (number != SYS_futex) return 0;
    const char *p = strchr(text, ' ');
    if (!p) return 0;
    uint64_t address = cc__hex(&p), op = cc__hex(&p), value = cc__hex(&p);
    int cmd = (int)(op & FUTEX_CMD_MASK);
    if (cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET && cmd != FUTEX_LOCK_PI && cmd != FUTEX_LOCK_PI2 &&
        cmd != FUTEX_WAIT_REQUEUE_PI) return 0;
    memset(out, 0, sizeof *out);
    out->tid = tid;
    out->futex_address = address;
    out->futex_op = (uint32_t)op;
    out->futex_value = (uint32_t)value;
    return 1;
}

static int cc__tid_order(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

uint32_t cc_lock_waits(cc_lock_wait_t *out, uint32_t capacity, int32_t exclude) {
    DIR *directory = opendir("/proc/self/task");
    if (!directory) return 0;
    uint32_t count = 0, room = 256;
    int32_t *tids = malloc(room * sizeof *tids);
    struct dirent *entry;
    while (tids && (entry = readdir(directory))) {
        char *end;
        long tid = strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != 0 || tid <= 0) continue;
        if (count == room) {
            int32_t *grown = realloc(tids, 2 * room * sizeof *tids);
            if (!grown) break;
            tids = grown;
            room *= 2;
        }
        tids[count++] = (int32_t)tid;
    }
    int tasks = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    closedir(directory);
    if (!tids || tasks < 0) {
        free(tids);
        if (tasks >= 0) close(tasks);
        return 0;
    }
    qsort(tids, count, sizeof *tids, cc__tid_order);
    uint32_t found = 0;
    for (uint32_t i = 0; i < count && found < capacity; i++) {
        if (tids[i] == exclude || !cc__futex_wait_of(tasks, tids[i], &out[found])) continue;
        cc__classify(&out[found], tids, count);
        found++;
    }
    free(tids);
    close(tasks);
    return found;
}
