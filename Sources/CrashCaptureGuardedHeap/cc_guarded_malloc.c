/* cc_guarded_malloc.c — the C library's allocation functions, replaced for the whole process
 * (as glibc's manual, "Replacing malloc", allows): a sampled allocation goes to the guarded
 * heap's pool (CShims' heap/cc_guarded_heap.c), every other one straight to glibc's own
 * (__libc_malloc, …), with no lock on that path. Linked only by programs that depend on the
 * CrashCaptureGuardedHeap product; `CRASHCAPTURE_GUARDED_HEAP=<1 in N>[:<slots>]` turns it on
 * at start (0 or unset: off, every call one branch away from glibc's). */
#define _GNU_SOURCE
#include "cc_guarded_malloc.h"
#include "crashcapture.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

#define CC_GH_OURS(p) ((uintptr_t)(p) - cc_guarded_heap_base < cc_guarded_heap_size)
/* Whether this allocation goes to the pool: the heap is on and this thread's countdown ran out. */
#define CC_GH_ON() __builtin_expect(__atomic_load_n(&cc_guarded_heap_rate, __ATOMIC_RELAXED) != 0 && cc_guarded_malloc_sampled(), 0)

/* A call made as a jump even unoptimised (clang's musttail; SwiftPM builds with clang). */
#if defined(__has_attribute) && __has_attribute(musttail)
#define CC_GH_TAIL __attribute__((musttail))
#else
#define CC_GH_TAIL
#endif

/* Allocations until this thread's next sampled one (0: draw anew), and the thread's generator
 * (xorshift64, seeded from the clock and the thread's own address: no system call per draw). */
static __thread uint32_t cc_guarded_countdown __attribute__((tls_model("initial-exec")));
static __thread uint64_t cc_guarded_random __attribute__((tls_model("initial-exec")));

/* A countdown per thread, drawn between 1 and 2 × the rate: one allocation in `rate` on average. */
static inline int cc_guarded_malloc_sampled(void) {
    uint32_t rate = __atomic_load_n(&cc_guarded_heap_rate, __ATOMIC_RELAXED);
    if (rate <= 1) return rate == 1;
    if (cc_guarded_countdown == 0) {
        uint64_t x = cc_guarded_random;
        if (x == 0) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            x = ((uint64_t)now.tv_nsec * 0x9E3779B97F4A7C15ull) ^ (uint64_t)(uintptr_t)&cc_guarded_random ^ 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        cc_guarded_random = x;
        cc_guarded_countdown = 1 + (uint32_t)(x % (2 * (uint64_t)rate));
    }
    return --cc_guarded_countdown == 0;
}

uint32_t cc_guarded_malloc_default_slots = 256;

/* Reads the variable once, before main (and before any thread): getenv and mmap, no malloc. */
__attribute__((constructor(101))) static void cc_guarded_malloc_from_environment(void) {
    const char *text = getenv("CRASHCAPTURE_GUARDED_HEAP");
    if (!text || !*text) return;
    char *end = NULL;
    unsigned long rate = strtoul(text, &end, 10);
    unsigned long slots = cc_guarded_malloc_default_slots;
    if (end && *end == ':') slots = strtoul(end + 1, &end, 10);
    if (rate == 0 || rate > UINT32_MAX || slots == 0 || slots > 65536) return;
    (void)cc_guarded_heap_start((uint32_t)rate, (uint32_t)slots);
}

int cc_guarded_malloc_start(uint32_t sample_rate, uint32_t slots) {
    if (sample_rate == 0) {
        errno = EINVAL;
        return -1;
    }
    return cc_guarded_heap_start(sample_rate, slots ? slots : cc_guarded_malloc_default_slots);
}

int cc_guarded_malloc_status(uint64_t *sampled, uint32_t *in_use) {
    cc_guarded_heap_counts(sampled, in_use);
    return cc_guarded_heap_size != 0;
}

/* With the heap on: a sampled allocation from the pool, any other from glibc's. malloc and calloc
 * jump here (musttail: no frame of theirs stays below, even unoptimised), so the pool's stack
 * starts at their caller as it does for the others. */
__attribute__((noinline)) static void *cc_guarded_malloc_on(size_t size) {
    if (cc_guarded_malloc_sampled()) {
        void *p = cc_guarded_heap_allocate(size, 16, 0);
        if (p) return p;
    }
    return __libc_malloc(size);
}

__attribute__((noinline)) static void *cc_guarded_calloc_on(size_t count, size_t size) {
    if (cc_guarded_malloc_sampled()) {
        void *p = cc_guarded_heap_allocate(count * size, 16, 1);   /* calloc checked the product */
        if (p) return p;
    }
    return __libc_calloc(count, size);
}

/* Off: a load, a branch and a jump to glibc's, with no frame of its own. */
void *malloc(size_t size) {
    if (__builtin_expect(__atomic_load_n(&cc_guarded_heap_rate, __ATOMIC_RELAXED) == 0, 1)) return __libc_malloc(size);
    CC_GH_TAIL return cc_guarded_malloc_on(size);
}

void free(void *pointer) {
    if (CC_GH_OURS(pointer)) {
        cc_guarded_heap_free(pointer);
        return;
    }
    __libc_free(pointer);
}

void *calloc(size_t count, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (__builtin_expect(__atomic_load_n(&cc_guarded_heap_rate, __ATOMIC_RELAXED) == 0, 1)) return __libc_calloc(count, size);
    CC_GH_TAIL return cc_guarded_calloc_on(count, size);
}

void *realloc(void *pointer, size_t size) {
    if (CC_GH_OURS(pointer)) {
        size_t old = cc_guarded_heap_size_of(pointer);
        if (old == 0) cc_guarded_heap_free(pointer);   /* freed already, or not an allocation's start: stops */
        if (size == 0) {
            cc_guarded_heap_free(pointer);
            return NULL;
        }
        void *moved = malloc(size);
        if (!moved) return NULL;
        memcpy(moved, pointer, old < size ? old : size);
        cc_guarded_heap_free(pointer);
        return moved;
    }
    if (pointer == NULL) return malloc(size);
    return __libc_realloc(pointer, size);
}

void *reallocarray(void *pointer, size_t count, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(pointer, total);
}

/* Inlined: the stack a sampled allocation keeps starts at the caller of posix_memalign (or its kin). */
__attribute__((always_inline)) static inline void *cc_guarded_aligned(size_t alignment, size_t size) {
    if (CC_GH_ON()) {
        void *p = cc_guarded_heap_allocate(size, alignment, 0);
        if (p) return p;
    }
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *p = cc_guarded_aligned(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    return cc_guarded_aligned(alignment, size);
}

void *memalign(size_t alignment, size_t size) { return cc_guarded_aligned(alignment, size); }

/* glibc's own, found once (dlsym may allocate: through malloc above, which is ready). */
static size_t (*cc_guarded_glibc_usable_size)(void *);

size_t malloc_usable_size(void *pointer) {
    if (CC_GH_OURS(pointer)) return cc_guarded_heap_size_of(pointer);
    if (pointer == NULL) return 0;
    size_t (*glibc)(void *) = __atomic_load_n(&cc_guarded_glibc_usable_size, __ATOMIC_ACQUIRE);
    if (!glibc) {
        glibc = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
        if (!glibc) return 0;
        __atomic_store_n(&cc_guarded_glibc_usable_size, glibc, __ATOMIC_RELEASE);
    }
    return glibc(pointer);
}
