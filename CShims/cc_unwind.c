/* cc_unwind.c — the crashing thread's frames from the signal context with libunwind, and its registers. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>

/*
 * libunwind is loaded at install (dlopen), not linked. A program that links CrashCapture then
 * needs no runtime library a Swift program does not already need: a static-stdlib binary starts
 * in a slim image without libunwind8 (Sources/CrashReporter/CrashReporter.docc/Deploying.md). Where libunwind.so.8 is there (Debian's
 * libunwind8, Ubuntu's, Fedora's libunwind), it unwinds as before, DWARF CFI first; where it is
 * not, every thread is walked by its frame records alone (cc__walk_frame_records), as the Swift
 * backtracer walks it, and the record says so in a note. (Linking it statically instead is not
 * possible with Debian's libunwind.a, which is not position-independent.) Only these entry
 * points are used, taken by their libunwind names (UNW_OBJ: _ULx86_64_step, _ULaarch64_step…);
 * the handler calls them through g_unw, filled once here, never dlopen or dlsym.
 */
static struct {
    int loaded;
    int (*init_local)(unw_cursor_t *, unw_context_t *);
    int (*init_local2)(unw_cursor_t *, unw_context_t *, int);
    int (*step)(unw_cursor_t *);
    int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
    int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
    unw_addr_space_t *local_addr_space;
} g_unw;

#define CC__UNW_NAME(fn) CC__UNW_STRING(UNW_OBJ(fn))
#define CC__UNW_STRING(name) CC__UNW_STRING2(name)
#define CC__UNW_STRING2(name) #name

/* Install time (not async-signal-safe): fills g_unw. NULL when libunwind is there, else why not. */
static const char *cc__unwind_open(void) {
#if defined(CC_LINK_LIBUNWIND)
    /* Built with -DCC_LINK_LIBUNWIND=1 and linked with libunwind (a fully static program, which
     * cannot dlopen: StaticLinkTests): its entry points directly. The package never sets it. */
    g_unw.init_local = unw_init_local;
    g_unw.init_local2 = unw_init_local2;
    g_unw.step = unw_step;
    g_unw.get_reg = unw_get_reg;
    g_unw.set_caching_policy = unw_set_caching_policy;
    g_unw.local_addr_space = &unw_local_addr_space;
    return 0;
#else
    void *library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        /* dlerror's text lasts only until the next call: kept in the scratch buffer (the handler's,
         * unused until a crash). */
        const char *error = dlerror();
        cc__strlcpy(cc__g.scratch, error ? error : "not found", CC__MESSAGE_MAX);
        library = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
        if (!library) return cc__g.scratch;
    }
    g_unw.init_local = (int (*)(unw_cursor_t *, unw_context_t *))dlsym(library, CC__UNW_NAME(init_local));
    g_unw.init_local2 = (int (*)(unw_cursor_t *, unw_context_t *, int))dlsym(library, CC__UNW_NAME(init_local2));
    g_unw.step = (int (*)(unw_cursor_t *))dlsym(library, CC__UNW_NAME(step));
    g_unw.get_reg = (int (*)(unw_cursor_t *, unw_regnum_t, unw_word_t *))dlsym(library, CC__UNW_NAME(get_reg));
    g_unw.set_caching_policy =
        (int (*)(unw_addr_space_t, unw_caching_policy_t))dlsym(library, CC__UNW_NAME(set_caching_policy));
    g_unw.local_addr_space = (unw_addr_space_t *)dlsym(library, CC__UNW_NAME(local_addr_space));
    if (g_unw.init_local && g_unw.init_local2 && g_unw.step && g_unw.get_reg && g_unw.set_caching_policy &&
        g_unw.local_addr_space) return 0;
    return "it lacks a local-unwinding entry point (" CC__UNW_NAME(init_local2) "…)";
#endif
}

/* Install time (not async-signal-safe): loads libunwind once. 1 when it is there; else 0, with
 * why in cc__g.unwind_note (the note every record then carries). */
int cc__unwind_load(void) {
    cc__g.unwind_note[0] = 0;
    const char *why = 0;
    if (cc__g.flags & CC_FLAG_TEST_NO_LIBUNWIND) why = "test hook";
    else if (!g_unw.loaded && (why = cc__unwind_open()) == 0) g_unw.loaded = 1;
    if (!why) return 1;
    char *note = cc__g.unwind_note;
    size_t cap = sizeof cc__g.unwind_note;
    size_t n = cc__strlcpy(note, "libunwind could not be loaded at start (", cap);
    if (n < cap) n += cc__strlcpy(note + n, why, cap - n);
    if (n < cap) cc__strlcpy(note + n, "): frames come from frame records only (install libunwind8 to unwind by DWARF CFI)", cap - n);
    return 0;
}

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
 * unwind tables are found at crash time through dl_iterate_phdr, see CrashCapture.docc/KnownLimits.md
 * (the unwinder faulting).) */
void cc__unwind_warm_up(void) {
    if (!cc__unwind_load()) return;
    g_unw.set_caching_policy(*g_unw.local_addr_space, UNW_CACHE_PER_THREAD);
    /* This thread's context from the C library (libunwind's own unw_getcontext is a function on
     * x86-64 and a macro on aarch64): one layout with the signal contexts the handler unwinds. */
    static ucontext_t here;
    unw_context_t context;
    unw_cursor_t cursor;
    if (getcontext(&here) != 0) return;
    cc__arch_copy_to_unwind_context(&here, &context);
    if (g_unw.init_local(&cursor, &context) != 0) return;
    CC__MARK("  unw_init");
    if (g_unw.step(&cursor) > 0) {
        unw_word_t ip;
        g_unw.get_reg(&cursor, UNW_REG_IP, &ip);
    }
}

/* async-signal-safe: keeps one frame (its pc, and its frame pointer beside it), in the walk's
 * innermost slots or its ring of outermost ones. */
static void cc__walk_put(cc__walk_t *walk, uint64_t pc, uint64_t fp) {
    uint64_t total = walk->total;
    uint32_t slot = total < walk->top ? (uint32_t)total
                    : walk->ring > 0 ? walk->top + (uint32_t)((total - walk->top) % walk->ring) : UINT32_MAX;
    if (slot != UINT32_MAX) {
        walk->frames[slot] = pc;
        if (walk->fps) walk->fps[slot] = fp;
    }
    walk->total = total + 1;
    if ((cc__g.flags & CC_FLAG_TEST_FAULT_IN_UNWINDER) && walk == &cc__g.unwind_walk && walk->total == 4) {
        volatile uintptr_t unmapped = 24;   /* test hook: a fault inside the unwinder */
        *(volatile int *)unmapped = 1;
    }
}

/* async-signal-safe: the frames kept so far, inner to outer (the ring rotated in place); their
 * count, and how many were left out between. Also what a fault inside the unwinder leaves. */
uint32_t cc__walk_finish(cc__walk_t *walk, uint32_t *omitted, int *truncated) {
    atomic_store(&walk->active, 0);
    *omitted = 0;
    if (walk->total <= walk->max) return (uint32_t)walk->total;
    static uint64_t rotated[CC__MAX_FRAMES];
    uint32_t top = walk->top, ring = walk->ring;
    uint32_t oldest = ring > 0 ? (uint32_t)((walk->total - top) % ring) : 0;   /* no ring when max is 1 */
    for (uint32_t i = 0; i < ring; i++) rotated[i] = walk->frames[top + (oldest + i) % ring];
    for (uint32_t i = 0; i < ring; i++) walk->frames[top + i] = rotated[i];
    if (walk->fps && ring > 0) {
        for (uint32_t i = 0; i < ring; i++) rotated[i] = walk->fps[top + (oldest + i) % ring];
        for (uint32_t i = 0; i < ring; i++) walk->fps[top + i] = rotated[i];
    }
    uint64_t left_out = walk->total - walk->max;
    *omitted = left_out > UINT32_MAX ? UINT32_MAX : (uint32_t)left_out;
    *truncated = 1;
    walk->total = walk->max;
    return walk->max;
}

/* async-signal-safe: the rest of the stack by its frame records, from the frame pointer `fp` of
 * the outermost frame found so far. A frame record is two words at the frame pointer: the
 * caller's frame pointer, then the return address into the caller (aarch64's x29/x30 pair, the
 * same shape as x86-64's saved rbp and return address); the Swift runtime's own backtracer
 * walks nothing else. Each return address is stripped (cc__strip_code_address), so pointer
 * authentication costs nothing here. Every read is fault-proof (cc__safe_read), and the walk
 * stops at a frame pointer of 0, one that is misaligned, unreadable or not above the previous
 * one (stacks grow down, so callers' records lie higher), a return address outside every loaded
 * image, or the step limit. */
static void cc__walk_frame_records(cc__walk_t *walk, uint64_t fp, int *truncated) {
    while (fp != 0 && (fp & 15) == 0) {
        if (walk->total >= CC__UNWIND_STEP_LIMIT) { *truncated = 1; return; }
        uint64_t record[2];
        if (cc__safe_read(fp, record, sizeof record) != sizeof record) return;
        uint64_t ret = cc__strip_code_address(record[1]);
        if (ret == 0 || !cc__images_contains(ret)) return;
        cc__walk_put(walk, ret, record[0]);
        if (record[0] <= fp) return;
        fp = record[0];
    }
}

/* async-signal-safe: unwinds the interrupted thread, starting from the signal context (not from
 * the handler's own frames), so frame 0 is the exact faulting pc. libunwind documents
 * unw_init_local2 / unw_step / unw_get_reg as signal-safe for local unwinding (the unwind
 * tables are found through dl_iterate_phdr, which cc_interpose.c answers from the images
 * collected for this crash, without the loader lock). Stops at pc 0 (except frame 0: a call
 * through a NULL pointer, whose caller is recovered), when a step makes no progress, or after
 * CC__UNWIND_STEP_LIMIT steps. A stack deeper than `max` (runaway recursion) keeps its
 * innermost max - max/2 frames and its outermost max/2 (a ring while walking), and reports
 * how many lie between in *omitted. `context`, `cursor` and `walk` are caller-owned static
 * storage; while the walk runs, `walk` holds the frames found so far (cc__walk_finish turns
 * them into a result even when libunwind faulted halfway). With `fps`, each frame's frame
 * pointer (rbp / x29 as restored for that frame) is kept beside its pc, in the same slots:
 * where Swift's async frames keep their context (cc_async.c).
 *
 * Return addresses are stripped of pointer-authentication codes (cc_arch.h), so no frame is
 * recorded signed. libunwind 1.6.2 (Debian 12) does not know them on aarch64: at the first
 * return address a function signed (-mbranch-protection=standard, pac-ret) it makes no more
 * progress. So where cc__arch_walks_frame_records says so, the stack is walked on from there by
 * its frame records (cc__walk_frame_records), as the Swift backtracer walks it; libunwind is
 * kept for what only it recovers: frames of code built without frame pointers, the caller of a
 * leaf function (from lr or the CFI), and the signal frame itself. */
uint32_t cc__unwind_context(const ucontext_t *uc, unw_context_t *context, unw_cursor_t *cursor, cc__walk_t *walk,
                            uint64_t *frames, uint64_t *fps, uint32_t max, uint32_t *omitted, int *truncated) {
    *truncated = 0;
    *omitted = 0;
    if (max == 0) return 0;
    if (max > CC__MAX_FRAMES) max = CC__MAX_FRAMES;
    walk->frames = frames;
    walk->fps = fps;
    walk->max = max;
    walk->top = max < 2 ? max : max - max / 2;   /* innermost frames kept */
    walk->ring = max - walk->top;                /* outermost frames kept, as a ring */
    walk->total = 0;
    atomic_store(&walk->active, 1);
    cc__arch_copy_to_unwind_context(uc, context);

    if (!g_unw.loaded || (cc__g.flags & CC_FLAG_TEST_NO_LIBUNWIND)) {
        /* No libunwind: the pc, the caller of a call through NULL (from the call itself), then
         * the frame records. */
        cc__walk_put(walk, cc__context_pc(uc), cc__context_fp(uc));
        if (cc__context_pc(uc) == 0 && cc__arch_step_out_of_bad_call(context))
            cc__walk_put(walk, cc__arch_unwind_context_pc(context), cc__context_fp(uc));
        cc__walk_frame_records(walk, cc__context_fp(uc), truncated);
        return cc__walk_finish(walk, omitted, truncated);
    }
    if (g_unw.init_local2(cursor, context, UNW_INIT_SIGNAL_FRAME) != 0) {
        cc__walk_put(walk, cc__context_pc(uc), cc__context_fp(uc));
        if (cc__arch_walks_frame_records) cc__walk_frame_records(walk, cc__context_fp(uc), truncated);
        return cc__walk_finish(walk, omitted, truncated);
    }
    unw_word_t last_ip = 0, last_sp = 0, last_fp = 0;
    for (;;) {
        unw_word_t ip = 0, sp = 0, fp = 0;
        if (g_unw.get_reg(cursor, UNW_REG_IP, &ip) != 0) break;
        if (ip == 0 && walk->total > 0) break;
        g_unw.get_reg(cursor, UNW_REG_SP, &sp);
        g_unw.get_reg(cursor, cc__arch_unw_fp_register, &fp);
        if (walk->total > 0 && ip == last_ip && sp == last_sp) break;
        if (walk->total == CC__UNWIND_STEP_LIMIT) { *truncated = 1; break; }
        /* Frame 0 is the pc itself, recorded as it is; a caller's is a return address. */
        uint64_t pc = walk->total == 0 ? (uint64_t)ip : cc__strip_code_address((uint64_t)ip);
        cc__walk_put(walk, pc, (uint64_t)fp);
        last_ip = ip;
        last_sp = sp;
        last_fp = fp;
        if (walk->total == 1 && ip == 0) {
            /* No unwind information covers pc 0, and libunwind's fallback "step" from there
             * reports success with a wrong caller: recover the caller from the call itself. */
            if (cc__arch_step_out_of_bad_call(context) && g_unw.init_local2(cursor, context, 0) == 0)
                continue;
            break;
        }
        /* A signed return address: libunwind found no unwind information at it and can go no
         * further. */
        if (pc != (uint64_t)ip) break;
        if (g_unw.step(cursor) > 0) continue;
        break;
    }
    if (cc__arch_walks_frame_records && walk->total > 0 && !*truncated) {
        /* Where libunwind stopped early (or said "outermost" at a frame whose record still
         * leads on: libunwind 1.6.2 says so at a signed return address), the frame records
         * take over from the last frame found. At the real outermost frame the frame pointer
         * is 0 and nothing is added. */
        cc__walk_frame_records(walk, (uint64_t)last_fp, truncated);
    }
    if (walk->total == 0) cc__walk_put(walk, cc__context_pc(uc), cc__context_fp(uc));
    return cc__walk_finish(walk, omitted, truncated);
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
