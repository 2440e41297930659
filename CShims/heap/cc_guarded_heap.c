/* cc_guarded_heap.c — the guarded heap's pool, and what the crash handler reads of it.
 *
 * The pool is one mapping: a guard page, then for each slot its page and a guard page. A sampled
 * allocation gets a slot's page (made readable and writable) and sits at its end, so that the
 * first byte past it is the next guard page; one in four sits at its start instead, so that an
 * underflow meets the guard before it. Freeing makes the page inaccessible again and the slot
 * is reused last (slots are taken round-robin): an access after the free faults for as long as
 * the pool allows. Each slot's metadata (its state, the allocation, the two stacks) lives in a
 * second mapping, plain memory the crash handler reads without a lock.
 *
 * Which allocations are sampled is the allocator's to decide (CrashCaptureGuardedHeap: a
 * thread-local countdown, so that a program without it carries no thread-local state of ours);
 * taking a slot is a compare-and-swap on its state; nothing here locks, so a thread that exits (or a fork) mid-allocation
 * leaves no slot held. Nothing here calls malloc: the allocator's own calls come here.
 *
 * Stacks are frame-pointer walks (Swift and SwiftPM's C keep frame pointers on Linux) over a copy
 * of the stack made with process_vm_readv (or, where that is refused, through a pipe), so a frame
 * chain that leads nowhere ends the walk instead of faulting inside malloc. */
#define _GNU_SOURCE
#include "cc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

enum { CC__GH_UNUSED = 0, CC__GH_ALLOCATED = 1, CC__GH_FREED = 2, CC__GH_BUSY = 3 };

typedef struct {
    _Atomic uint32_t state;
    uint32_t left;                  /* the allocation sits at the page's start (else at its end) */
    uint64_t address;
    uint64_t size;
    int32_t alloc_tid;
    int32_t free_tid;
    uint32_t alloc_count;
    uint32_t free_count;
    uint64_t alloc_frames[CC_GH_MAX_FRAMES];
    uint64_t free_frames[CC_GH_MAX_FRAMES];
} cc__gh_slot_t;

uintptr_t cc_guarded_heap_base;
uintptr_t cc_guarded_heap_size;
uint32_t cc_guarded_heap_rate;

static struct {
    uint64_t page;
    uint32_t slots;
    cc__gh_slot_t *meta;
    _Atomic uint32_t cursor;
    _Atomic uint32_t placed;
    _Atomic uint64_t sampled;
    _Atomic uint32_t in_use;
    _Atomic int started;
    /* A double or invalid free, noted before abort(): the first one wins. */
    _Atomic uint32_t error;
    uint32_t error_slot;
    uint64_t error_pointer;
    int32_t error_tid;
} cc__gh;

int cc_guarded_heap_start(uint32_t sample_rate, uint32_t slots) {
    int expected = 0;
    if (slots == 0 || slots > (1u << 16) || !atomic_compare_exchange_strong(&cc__gh.started, &expected, 1)) {
        errno = EINVAL;
        return -1;
    }
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    size_t size = (size_t)page * (2 * (size_t)slots + 1);
    void *pool = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pool == MAP_FAILED) return -1;
    void *meta = mmap(NULL, sizeof(cc__gh_slot_t) * slots, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (meta == MAP_FAILED) {
        int saved = errno;
        munmap(pool, size);
        errno = saved;
        return -1;
    }
    cc__gh.page = (uint64_t)page;
    cc__gh.slots = slots;
    cc__gh.meta = meta;
    cc_guarded_heap_base = (uintptr_t)pool;
    __atomic_store_n(&cc_guarded_heap_size, (uintptr_t)size, __ATOMIC_RELEASE);
    __atomic_store_n(&cc_guarded_heap_rate, sample_rate, __ATOMIC_RELEASE);
    return 0;
}

static uint64_t cc__gh_slot_page(uint32_t slot) { return cc_guarded_heap_base + cc__gh.page * (2 * (uint64_t)slot + 1); }

/* How much of the stack one read copies: 8 pieces of 512 bytes, so that a read that meets the
 * stack's end still returns the pieces before it (process_vm_readv never splits a piece). */
#define CC__GH_PIECE 512
#define CC__GH_PIECES 8

/* Set once process_vm_readv is refused (a seccomp profile that denies it; qemu-user, which runs
 * arm64 containers on x86-64 hosts, does not implement it): later reads go through a pipe. */
static _Atomic int cc__gh_vm_readv_refused;

/* Copies up to CC__GH_PIECES pieces of memory from `address`; returns the bytes copied (whole
 * pieces, up to the first that cannot be read). Where process_vm_readv is refused, write(2) into
 * a pipe of this walk's own (`pipe_fds`, made on first need; -1 when none) does the same check in
 * the kernel (EFAULT, not a fault), a piece at a time: the core's pipe (cc_safeio.c) is the
 * crash handler's, which reads alone, and allocations come from every thread at once. */
static size_t cc__gh_read_stack(uint64_t address, uint8_t *out, pid_t pid, int pipe_fds[2]) {
    if (!atomic_load_explicit(&cc__gh_vm_readv_refused, memory_order_relaxed)) {
        struct iovec local = { out, CC__GH_PIECE * CC__GH_PIECES }, remote[CC__GH_PIECES];
        for (int i = 0; i < CC__GH_PIECES; i++) remote[i] = (struct iovec){ (void *)(uintptr_t)(address + (uint64_t)i * CC__GH_PIECE), CC__GH_PIECE };
        /* Every argument a full register wide: syscall(2) reads them as longs. */
        long got = syscall(SYS_process_vm_readv, (long)pid, &local, 1UL, remote, (unsigned long)CC__GH_PIECES, 0UL);
        if (got >= 0) return (size_t)got;
        if (errno != ENOSYS && errno != EPERM) return 0;
        atomic_store_explicit(&cc__gh_vm_readv_refused, 1, memory_order_relaxed);
    }
    if (pipe_fds[0] < 0 && syscall(SYS_pipe2, pipe_fds, (long)(O_CLOEXEC | O_NONBLOCK)) != 0) {
        pipe_fds[0] = pipe_fds[1] = -1;   /* the fd limit: no stack, the allocation still made */
        return 0;
    }
    size_t done = 0;
    for (int i = 0; i < CC__GH_PIECES; i++, done += CC__GH_PIECE) {
        ssize_t wrote = cc__sys_write(pipe_fds[1], (const void *)(uintptr_t)(address + done), CC__GH_PIECE);
        if (wrote == CC__GH_PIECE && cc__sys_read(pipe_fds[0], out + done, CC__GH_PIECE) == CC__GH_PIECE) continue;
        if (wrote > 0) {   /* a piece cut short: bytes left in the pipe, so the next read gets a new one */
            cc__sys_close(pipe_fds[0]);
            cc__sys_close(pipe_fds[1]);
            pipe_fds[0] = pipe_fds[1] = -1;
        }
        break;
    }
    return done;
}

/* The return addresses above the caller's caller (the allocator's own frames left out), at most
 * CC_GH_MAX_FRAMES, by frame pointers. The stack is copied 4 KiB at a time with
 * process_vm_readv (a chain that leads outside it ends the walk instead of faulting); most
 * stacks need one copy. */
__attribute__((noinline)) static uint32_t cc__gh_stack(uint64_t *frames) {
    uint64_t fp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    uint32_t count = 0, skip = 2;   /* this function's caller (here) and the allocator's entry point */
    pid_t pid = getpid();
    uint8_t copy[CC__GH_PIECE * CC__GH_PIECES];
    uint64_t base = 0;
    size_t have = 0;
    int pipe_fds[2] = { -1, -1 }, saved_errno = errno;   /* malloc leaves errno as it was */
    for (uint32_t step = 0; step < CC_GH_MAX_FRAMES + 2 && fp != 0 && (fp & 7) == 0; step++) {
        if (fp < base || fp - base + 16 > have) {
            base = fp;
            have = cc__gh_read_stack(base, copy, pid, pipe_fds);
            if (have < 16) break;
        }
        uint64_t pair[2];
        memcpy(pair, copy + (fp - base), sizeof pair);
        if (pair[1] == 0) break;
        if (skip > 0) skip--; else frames[count++] = cc__strip_code_address(pair[1]);   /* stored as every record's: no PAC */
        if (count == CC_GH_MAX_FRAMES || pair[0] <= fp || pair[0] - fp > (64u << 20)) break;
        fp = pair[0];
    }
    if (pipe_fds[0] >= 0) {
        cc__sys_close(pipe_fds[0]);
        cc__sys_close(pipe_fds[1]);
    }
    errno = saved_errno;
    return count;
}

void *cc_guarded_heap_allocate(size_t size, size_t alignment, int zeroed) {
    if (__atomic_load_n(&cc_guarded_heap_size, __ATOMIC_ACQUIRE) == 0) return NULL;
    uint64_t page = cc__gh.page;
    if (alignment < 16) alignment = 16;
    if (size == 0) size = 1;
    if (size > page || alignment > page || (alignment & (alignment - 1)) != 0) return NULL;
    /* The next slot not in use, round-robin from the last one taken (so a freed one is taken last). */
    for (uint32_t tried = 0; tried < cc__gh.slots; tried++) {
        uint32_t slot = atomic_fetch_add_explicit(&cc__gh.cursor, 1, memory_order_relaxed) % cc__gh.slots;
        cc__gh_slot_t *s = &cc__gh.meta[slot];
        uint32_t state = atomic_load_explicit(&s->state, memory_order_relaxed);
        if (state != CC__GH_UNUSED && state != CC__GH_FREED) continue;
        if (!atomic_compare_exchange_strong(&s->state, &state, CC__GH_BUSY)) continue;
        uint64_t base = cc__gh_slot_page(slot);
        if (mprotect((void *)(uintptr_t)base, page, PROT_READ | PROT_WRITE) != 0) {
            atomic_store(&s->state, state);
            return NULL;
        }
        int left = atomic_fetch_add_explicit(&cc__gh.placed, 1, memory_order_relaxed) % 4 == 3;
        uint64_t address = left ? base : (base + page - size) & ~(uint64_t)(alignment - 1);
        if (zeroed || state == CC__GH_FREED) memset((void *)(uintptr_t)base, 0, page);
        s->left = (uint32_t)left;
        s->address = address;
        s->size = size;
        s->alloc_tid = (int32_t)cc__gettid();
        s->free_tid = 0;
        s->free_count = 0;
        s->alloc_count = cc__gh_stack(s->alloc_frames);
        atomic_store_explicit(&s->state, CC__GH_ALLOCATED, memory_order_release);
        atomic_fetch_add_explicit(&cc__gh.sampled, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&cc__gh.in_use, 1, memory_order_relaxed);
        return (void *)(uintptr_t)address;
    }
    return NULL;   /* every slot in use: glibc's */
}

/* The slot whose page holds `pointer` (-1 when a guard page does). */
static int64_t cc__gh_slot_of(uint64_t pointer) {
    uint64_t index = (pointer - cc_guarded_heap_base) / cc__gh.page;
    return (index & 1) ? (int64_t)(index / 2) : -1;
}

/* Notes a double or invalid free for the crash record, says so on stderr and aborts. */
__attribute__((noreturn)) static void cc__gh_stop(uint32_t error, int64_t slot, uint64_t pointer) {
    uint32_t none = 0;
    if (atomic_compare_exchange_strong(&cc__gh.error, &none, error)) {
        cc__gh.error_slot = slot < 0 ? UINT32_MAX : (uint32_t)slot;
        cc__gh.error_pointer = pointer;
        cc__gh.error_tid = (int32_t)cc__gettid();
    }
    static const char double_free[] = "CrashCapture guarded heap: double free\n";
    static const char invalid_free[] = "CrashCapture guarded heap: free of a pointer no allocation starts at\n";
    if (error == CC_GH_DOUBLE_FREE) cc__write_all(2, double_free, sizeof double_free - 1);
    else cc__write_all(2, invalid_free, sizeof invalid_free - 1);
    abort();
}

void cc_guarded_heap_free(void *pointer) {
    uint64_t p = (uint64_t)(uintptr_t)pointer;
    int64_t slot = cc__gh_slot_of(p);
    if (slot < 0) cc__gh_stop(CC_GH_INVALID_FREE, -1, p);
    cc__gh_slot_t *s = &cc__gh.meta[slot];
    uint32_t state = CC__GH_ALLOCATED;
    if (s->address != p || !atomic_compare_exchange_strong(&s->state, &state, CC__GH_BUSY)) {
        cc__gh_stop(state == CC__GH_FREED && s->address == p ? CC_GH_DOUBLE_FREE : CC_GH_INVALID_FREE, slot, p);
    }
    s->free_tid = (int32_t)cc__gettid();
    s->free_count = cc__gh_stack(s->free_frames);
    mprotect((void *)(uintptr_t)cc__gh_slot_page((uint32_t)slot), cc__gh.page, PROT_NONE);
    atomic_store_explicit(&s->state, CC__GH_FREED, memory_order_release);
    atomic_fetch_sub_explicit(&cc__gh.in_use, 1, memory_order_relaxed);
}

void cc_guarded_heap_counts(uint64_t *sampled, uint32_t *in_use) {
    *sampled = atomic_load_explicit(&cc__gh.sampled, memory_order_relaxed);
    *in_use = atomic_load_explicit(&cc__gh.in_use, memory_order_relaxed);
}

size_t cc_guarded_heap_size_of(const void *pointer) {
    uint64_t p = (uint64_t)(uintptr_t)pointer;
    if (p - cc_guarded_heap_base >= cc_guarded_heap_size) return 0;
    int64_t slot = cc__gh_slot_of(p);
    if (slot < 0) return 0;
    cc__gh_slot_t *s = &cc__gh.meta[slot];
    return atomic_load(&s->state) == CC__GH_ALLOCATED && s->address == p ? (size_t)s->size : 0;
}

/* async-signal-safe: the allocation a fault at `address` explains, or the free the allocator
 * stopped at (SIGABRT), as CC_SEC_GUARDED_HEAP says it; 0 when the crash is not the pool's. */
static int cc__gh_explain(const cc_sec_crash_t *crash, cc_sec_guarded_heap_t *out, const cc__gh_slot_t **slot_out) {
    if (cc_guarded_heap_size == 0) return 0;
    memset(out, 0, sizeof *out);
    const cc__gh_slot_t *s = NULL;
    uint32_t noted = atomic_load(&cc__gh.error);
    if (crash->signo == SIGABRT && noted != 0) {
        out->error = noted;
        out->access_address = cc__gh.error_pointer;
        if (cc__gh.error_slot < cc__gh.slots) s = &cc__gh.meta[cc__gh.error_slot];
    } else if ((crash->signo == SIGSEGV || crash->signo == SIGBUS) && (crash->flags & CC_CRASH_FAULT_ADDRESS)
               && crash->fault_address - cc_guarded_heap_base < cc_guarded_heap_size) {
        uint64_t address = crash->fault_address;
        out->access_address = address;
        int64_t slot = cc__gh_slot_of(address);
        if (slot >= 0) {
            s = &cc__gh.meta[slot];
            out->error = atomic_load(&s->state) == CC__GH_FREED ? CC_GH_USE_AFTER_FREE : CC_GH_UNKNOWN;
        } else {
            /* A guard page: past the end of the slot before it, or before the start of the one after. */
            uint64_t guard = (address - cc_guarded_heap_base) / cc__gh.page;
            const cc__gh_slot_t *before = guard > 0 ? &cc__gh.meta[guard / 2 - 1] : NULL;
            const cc__gh_slot_t *after = guard / 2 < cc__gh.slots ? &cc__gh.meta[guard / 2] : NULL;
            uint64_t past = before && atomic_load(&before->state) != CC__GH_UNUSED && address >= before->address + before->size
                ? address - (before->address + before->size) : UINT64_MAX;
            uint64_t short_of = after && atomic_load(&after->state) != CC__GH_UNUSED && address < after->address
                ? after->address - address : UINT64_MAX;
            if (past == UINT64_MAX && short_of == UINT64_MAX) {
                out->error = CC_GH_UNKNOWN;
            } else if (past <= short_of) {
                s = before;
                out->error = CC_GH_BUFFER_OVERFLOW;
            } else {
                s = after;
                out->error = CC_GH_BUFFER_UNDERFLOW;
            }
        }
    } else {
        return 0;
    }
    if (s) {
        out->allocation_address = s->address;
        out->allocation_size = s->size;
        out->alloc_tid = s->alloc_tid;
        out->alloc_frame_count = s->alloc_count <= CC_GH_MAX_FRAMES ? s->alloc_count : 0;
        if (atomic_load(&s->state) == CC__GH_FREED) {
            out->flags |= CC_GH_FREED;
            out->free_tid = s->free_tid;
            out->free_frame_count = s->free_count <= CC_GH_MAX_FRAMES ? s->free_count : 0;
        }
    }
    *slot_out = s;
    return 1;
}

void cc__write_guarded_heap(cc__writer_t *w, const cc_sec_crash_t *crash) {
    cc_sec_guarded_heap_t section;
    const cc__gh_slot_t *slot = NULL;
    if (!cc__gh_explain(crash, &section, &slot)) return;
    cc__section_begin(w, CC_SEC_GUARDED_HEAP);
    cc__section_put(w, &section, sizeof section);
    if (slot) {
        cc__section_put(w, slot->alloc_frames, (size_t)section.alloc_frame_count * sizeof(uint64_t));
        cc__section_put(w, slot->free_frames, (size_t)section.free_frame_count * sizeof(uint64_t));
    }
    cc__section_end(w);
}
