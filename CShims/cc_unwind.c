/* cc_unwind.c — the crashing thread's frames from the signal context with libunwind, and its registers. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <stddef.h>
#include <string.h>
#include <ucontext.h>

/* ARCH: libunwind's frame-pointer register; one block per architecture. */
#if defined(__x86_64__)
#define CC__UNW_FP UNW_X86_64_RBP
#elif defined(__aarch64__)
#define CC__UNW_FP UNW_AARCH64_X29
#else
#define CC__UNW_FP UNW_REG_SP
#endif

/* Install time (not async-signal-safe). What libunwind (1.6.2) does once, it does here:
 * - tdep_init, under its mutex, on the first unw_set_caching_policy / unw_init_local: the
 *   mempools (each mmapped and filled with twice its reserve), the memory-validation pipe
 *   (pipe2, mincore) and the local address space. About 45 µs of a fresh process.
 * - the first unw_step: the dwarf path every later step takes (the thread's register-state
 *   cache, dl_iterate_phdr for the unwind tables, one cie_info from its mempool and back, the
 *   CFI program), which also binds the PLT slots libunwind.so calls on that path (it is not
 *   linked with -z now) and faults its code in.
 * A second or third step takes the same path again and initialises nothing new: a step
 * returns what it took from a mempool, which only grows (mmap) when it falls to its reserve,
 * and the register-state cache is per thread (UNW_CACHE_PER_THREAD keeps the handler off the
 * global cache's lock): the crashing thread, when it is not this one, flushes its own at its
 * first step, in place, without memory of its own. So one step, not three. (Each image's
 * unwind tables are found at crash time through dl_iterate_phdr, see README "Known
 * limits".) */
void cc__unwind_warm_up(void) {
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    unw_context_t context;
    unw_cursor_t cursor;
    if (unw_getcontext(&context) != 0) return;
    if (unw_init_local(&cursor, &context) != 0) return;
    CC__MARK("  unw_init");
    if (unw_step(&cursor) > 0) {
        unw_word_t ip;
        unw_get_reg(&cursor, UNW_REG_IP, &ip);
    }
}

/* ARCH: pc, fp, async context register and sp of a ucontext (the four functions below); one
 * block per architecture in each. */
/* async-signal-safe: program counter and stack pointer of an interrupted context. */
uint64_t cc__context_pc(const ucontext_t *uc) {
#if defined(__x86_64__)
    return (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uint64_t)uc->uc_mcontext.pc;
#else
    (void)uc; return 0;
#endif
}

/* async-signal-safe: the frame pointer (rbp / x29) and the Swift async context register (r14 /
 * x22, where a partial function receives its context) of an interrupted context. */
uint64_t cc__context_fp(const ucontext_t *uc) {
#if defined(__x86_64__)
    return (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
    return (uint64_t)uc->uc_mcontext.regs[29];
#else
    (void)uc; return 0;
#endif
}

uint64_t cc__context_async_register(const ucontext_t *uc) {
#if defined(__x86_64__)
    return (uint64_t)uc->uc_mcontext.gregs[REG_R14];
#elif defined(__aarch64__)
    return (uint64_t)uc->uc_mcontext.regs[22];
#else
    (void)uc; return 0;
#endif
}

uint64_t cc__context_sp(const ucontext_t *uc) {
#if defined(__x86_64__)
    return (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    return (uint64_t)uc->uc_mcontext.sp;
#else
    (void)uc; return 0;
#endif
}

/* async-signal-safe: after a call through a NULL (or wild) function pointer the pc is not in
 * any function, so there is no unwind information for it; the caller's return address is the
 * last thing the call pushed (x86-64: at sp) or is in the link register (aarch64). Rewrites
 * `context` to the caller and returns 1, or 0 when that address cannot be read. */
static int cc__step_out_of_bad_call(unw_context_t *context) {
    /* ARCH: one block per architecture. Through unw_context_t's own fields, not a ucontext_t
     * cast: on aarch64 it is a shorter type (see cc__copy_to_unwind_context). */
#if defined(__x86_64__)
    uint64_t sp = (uint64_t)context->uc_mcontext.gregs[REG_RSP], ret = 0;
    if (cc__safe_read(sp, &ret, sizeof ret) != sizeof ret || ret == 0) return 0;
    context->uc_mcontext.gregs[REG_RIP] = (greg_t)ret;
    context->uc_mcontext.gregs[REG_RSP] = (greg_t)(sp + 8);
    return 1;
#elif defined(__aarch64__)
    if (context->uc_mcontext.regs[30] == 0) return 0;
    context->uc_mcontext.pc = context->uc_mcontext.regs[30];
    return 1;
#else
    (void)context; return 0;
#endif
}

/* async-signal-safe: the signal context as libunwind's unw_context_t. ARCH: one block per
 * architecture.
 * - x86-64: libunwind's unw_context_t is ucontext_t itself; the whole of it is copied.
 * - aarch64: libunwind 1.6.2's unw_context_t is a shorter prefix of ucontext_t (the same
 *   header and general registers, then only 66 * 8 bytes of the kernel's 4096-byte
 *   __reserved area, where the FP/SIMD record comes first). Only what fits is copied, so
 *   nothing is written past its end; the asserts hold the layout this relies on. */
static void cc__copy_to_unwind_context(const ucontext_t *uc, unw_context_t *context) {
#if defined(__x86_64__)
    _Static_assert(sizeof(unw_context_t) == sizeof(ucontext_t), "x86-64: unw_context_t is ucontext_t");
    const size_t size = sizeof(ucontext_t);
#elif defined(__aarch64__)
    _Static_assert(sizeof(unw_context_t) <= sizeof(ucontext_t), "aarch64: unw_context_t is no longer than ucontext_t");
    _Static_assert(offsetof(unw_context_t, uc_sigmask) == offsetof(ucontext_t, uc_sigmask), "aarch64: same header");
    _Static_assert(offsetof(unw_context_t, uc_mcontext) == offsetof(ucontext_t, uc_mcontext), "aarch64: mcontext at the same offset");
    _Static_assert(offsetof(unw_context_t, uc_mcontext.regs) == offsetof(ucontext_t, uc_mcontext.regs), "aarch64: x0..x30 at the same offset");
    _Static_assert(offsetof(unw_context_t, uc_mcontext.sp) == offsetof(ucontext_t, uc_mcontext.sp), "aarch64: sp at the same offset");
    _Static_assert(offsetof(unw_context_t, uc_mcontext.pc) == offsetof(ucontext_t, uc_mcontext.pc), "aarch64: pc at the same offset");
    _Static_assert(offsetof(unw_context_t, uc_mcontext.pstate) == offsetof(ucontext_t, uc_mcontext.pstate), "aarch64: pstate at the same offset");
    const size_t size = sizeof(unw_context_t);
#else
    const size_t size = sizeof(unw_context_t) < sizeof(ucontext_t) ? sizeof(unw_context_t) : sizeof(ucontext_t);
#endif
    const unsigned char *src = (const unsigned char *)uc;
    unsigned char *dst = (unsigned char *)context;
    for (size_t i = 0; i < size; i++) dst[i] = src[i];
}

/* async-signal-safe: unwinds the interrupted thread, starting from the signal context (not from
 * the handler's own frames), so frame 0 is the exact faulting pc. libunwind documents
 * unw_init_local2 / unw_step / unw_get_reg as signal-safe for local unwinding (the unwind
 * tables are found through dl_iterate_phdr, which cc_interpose.c answers from the images
 * collected for this crash, without the loader lock). Stops at pc 0 (except frame 0: a call
 * through a NULL pointer, whose caller is recovered), when a step makes no progress, or after
 * CC__UNWIND_STEP_LIMIT steps. A stack deeper than `max` (runaway recursion) keeps its
 * innermost max - max/2 frames and its outermost max/2 (a ring while walking), and reports
 * how many lie between in *omitted. `context` and `cursor` are caller-owned static storage.
 * With `fps`, each frame's frame pointer (rbp / x29 as restored for that frame) is kept beside
 * its pc, in the same slots: where Swift's async frames keep their context (cc_async.c). */
uint32_t cc__unwind_context(const ucontext_t *uc, unw_context_t *context, unw_cursor_t *cursor,
                            uint64_t *frames, uint64_t *fps, uint32_t max, uint32_t *omitted, int *truncated) {
    *truncated = 0;
    *omitted = 0;
    if (max == 0) return 0;
    if (max > CC__MAX_FRAMES) max = CC__MAX_FRAMES;
    cc__copy_to_unwind_context(uc, context);

    uint32_t top = max < 2 ? max : max - max / 2;   /* innermost frames kept */
    uint32_t ring = max - top;                       /* outermost frames kept, as a ring */
    uint64_t total = 0;
    if (unw_init_local2(cursor, context, UNW_INIT_SIGNAL_FRAME) != 0) {
        frames[0] = cc__context_pc(uc);
        if (fps) fps[0] = cc__context_fp(uc);
        return 1;
    }
    unw_word_t last_ip = 0, last_sp = 0;
    for (;;) {
        unw_word_t ip = 0, sp = 0;
        if (unw_get_reg(cursor, UNW_REG_IP, &ip) != 0) break;
        if (ip == 0 && total > 0) break;
        unw_get_reg(cursor, UNW_REG_SP, &sp);
        if (total > 0 && ip == last_ip && sp == last_sp) break;
        if (total == CC__UNWIND_STEP_LIMIT) { *truncated = 1; break; }
        unw_word_t fp = 0;
        if (fps) unw_get_reg(cursor, CC__UNW_FP, &fp);
        uint32_t slot = total < top ? (uint32_t)total : ring > 0 ? top + (uint32_t)((total - top) % ring) : UINT32_MAX;
        if (slot != UINT32_MAX) {
            frames[slot] = (uint64_t)ip;
            if (fps) fps[slot] = (uint64_t)fp;
        }
        total++;
        last_ip = ip;
        last_sp = sp;
        if (total == 1 && ip == 0) {
            /* No unwind information covers pc 0, and libunwind's fallback "step" from there
             * reports success with a wrong caller: recover the caller from the call itself. */
            if (cc__step_out_of_bad_call(context) && unw_init_local2(cursor, context, 0) == 0)
                continue;
            break;
        }
        if (unw_step(cursor) > 0) continue;
        break;
    }
    if (total == 0) {
        frames[0] = cc__context_pc(uc);
        if (fps) fps[0] = cc__context_fp(uc);
        return 1;
    }
    if (total <= max) return (uint32_t)total;
    /* The ring holds the outermost `ring` frames; rotate it so they run inner to outer. */
    static uint64_t rotated[CC__MAX_FRAMES];
    uint32_t oldest = (uint32_t)((total - top) % ring);
    for (uint32_t i = 0; i < ring; i++) rotated[i] = frames[top + (oldest + i) % ring];
    for (uint32_t i = 0; i < ring; i++) frames[top + i] = rotated[i];
    if (fps) {
        for (uint32_t i = 0; i < ring; i++) rotated[i] = fps[top + (oldest + i) % ring];
        for (uint32_t i = 0; i < ring; i++) fps[top + i] = rotated[i];
    }
    *omitted = total - max > UINT32_MAX ? UINT32_MAX : (uint32_t)(total - max);
    *truncated = 1;
    return max;
}

/* async-signal-safe: the interrupted context's registers: CC_SEC_REGISTERS for the crashed
 * thread (tid 0), CC_SEC_THREAD_REGISTERS for another thread. */
void cc__write_registers(cc__writer_t *w, const ucontext_t *uc, pid_t tid) {
    static unsigned char payload[64 * 16 + 64];
    size_t length = cc__registers_payload(uc, payload, sizeof payload);
    cc__section_begin(w, tid ? CC_SEC_THREAD_REGISTERS : CC_SEC_REGISTERS);
    if (tid) {
        cc_sec_thread_registers_t head = { .tid = tid };
        cc__section_put(w, &head, sizeof head);
    }
    cc__section_put(w, payload, length);
    cc__section_end(w);
}
