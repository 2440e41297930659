/* cc_unwind.c — a thread's frames from its signal context (by call-frame information, cc_cfi.c, else frame records), and its registers. */
#include "cc_boot.h"
#include "cc_internal.h"

#include <stddef.h>
#include <string.h>
#include <ucontext.h>

/* Install time: the note every record carries when the test hook walks by frame records alone. */
void cc__unwind_prepare(void) {
    cc__g.unwind_note[0] = 0;
    if (cc__g.flags & CC_FLAG_TEST_FRAME_RECORDS_ONLY)
        cc__strlcpy(cc__g.unwind_note, "frames come from frame records only, not call-frame information (test hook)",
                    sizeof cc__g.unwind_note);
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

/* async-signal-safe: one step by the frame record at the frame pointer, for a frame no call-frame
 * information covers (or whose information could not be used). A frame record is two words at
 * the frame pointer: the caller's frame pointer, then the return address into the caller
 * (aarch64's x29/x30 pair, the same shape as x86-64's saved rbp and return address); the Swift
 * runtime's own backtracer walks nothing else. The return address is stripped
 * (cc__strip_code_address). The step is refused (the walk ends) at a frame pointer of 0, one
 * that is misaligned or unreadable, a return address outside every loaded image, or a caller's
 * frame that does not lie above this one (stacks grow down). */
static int cc__step_by_record(cc__cfi_frame_t *frame) {
    uint64_t fp = frame->reg[cc__arch_cfi_fp];
    if (fp == 0 || (fp & 15) != 0) return CC__CFI_OUTERMOST;
    uint64_t record[2];
    if (cc__safe_read(fp, record, sizeof record) != sizeof record) return CC__CFI_OUTERMOST;
    uint64_t ret = cc__strip_code_address(record[1]);
    if (ret == 0 || !cc__images_contains(ret) || fp + 16 <= frame->reg[cc__arch_cfi_sp]) return CC__CFI_OUTERMOST;
    frame->reg[cc__arch_cfi_sp] = fp + 16;
    frame->reg[cc__arch_cfi_fp] = record[0];
    frame->pc = ret;
    return CC__CFI_STEPPED;
}

/* async-signal-safe: unwinds the interrupted thread, starting from the signal context (not from
 * the handler's own frames), so frame 0 is the exact faulting pc. Each step is taken by the
 * call-frame information of the frame's image (cc_cfi.c: DWARF CFI, what the compiler wrote for
 * every function, frame pointer or not, leaf or not, the signal trampolines included), and by
 * the frame record where there is none. Stops at a thread's first frame (its return address
 * undefined), at pc 0 (except frame 0: a call through a NULL pointer, whose caller is
 * recovered), when a step makes no progress, or after CC__UNWIND_STEP_LIMIT steps. A stack
 * deeper than `max` (runaway recursion) keeps its innermost max - max/2 frames and its
 * outermost max/2 (a ring while walking), and reports how many lie between in *omitted.
 * `frame`, `cfi` and `walk` are caller-owned static storage; while the walk runs, `walk` holds
 * the frames found so far (cc__walk_finish turns them into a result even when the walk faulted
 * halfway: the tables are read where they are mapped). With `fps`, each frame's frame pointer
 * (rbp / x29 as restored for that frame) is kept beside its pc, in the same slots: where
 * Swift's async frames keep their context (cc_async.c). Return addresses are stripped of
 * pointer-authentication codes (cc_arch.h), so no frame is recorded signed; frame 0 is the pc
 * as it is. */
uint32_t cc__unwind_context(const ucontext_t *uc, cc__cfi_frame_t *frame, cc__cfi_t *cfi, cc__walk_t *walk,
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
    cc__arch_cfi_frame(uc, frame);
    cc__cfi_begin(cfi);
    int by_records = (cc__g.flags & CC_FLAG_TEST_FRAME_RECORDS_ONLY) != 0;
    cc__walk_put(walk, frame->pc, frame->reg[cc__arch_cfi_fp]);
    int exact = 1;   /* frame 0's pc is where it stopped, not a return address */
    if (frame->pc == 0) {
        /* No information covers pc 0: the caller comes from the call itself. */
        if (!cc__arch_step_out_of_bad_call(frame)) return cc__walk_finish(walk, omitted, truncated);
        cc__walk_put(walk, frame->pc, frame->reg[cc__arch_cfi_fp]);
        exact = 0;
    }
    for (;;) {
        if (walk->total >= CC__UNWIND_STEP_LIMIT) { *truncated = 1; break; }
        uint64_t last_pc = frame->pc, last_sp = frame->reg[cc__arch_cfi_sp];
        int signal_frame = 0;
        int step = by_records ? CC__CFI_NO_INFO : cc__cfi_step(cfi, frame, exact, &signal_frame);
        if (step == CC__CFI_NO_INFO || step == CC__CFI_BAD) step = cc__step_by_record(frame);
        if (step != CC__CFI_STEPPED || frame->pc == 0) break;
        if (frame->pc == last_pc && frame->reg[cc__arch_cfi_sp] == last_sp) break;
        cc__walk_put(walk, frame->pc, frame->reg[cc__arch_cfi_fp]);
        exact = signal_frame;
    }
    return cc__walk_finish(walk, omitted, truncated);
}

/* async-signal-safe: the interrupted context's registers: CC_SEC_REGISTERS for the crashed
 * thread (tid 0), CC_SEC_THREAD_REGISTERS for another thread. */
void cc__write_registers(cc__writer_t *w, const ucontext_t *uc, pid_t tid) {
    unsigned char payload[64 * 16 + 64];   /* on the stack: its pages are in use already (a static's would fault in) */
    size_t length = cc__registers_payload(uc, payload, sizeof payload);
    cc__section_begin(w, tid ? CC_SEC_THREAD_REGISTERS : CC_SEC_REGISTERS);
    if (tid) {
        cc_sec_thread_registers_t head = { .tid = tid };
        cc__section_put(w, &head, sizeof head);
    }
    cc__section_put(w, payload, length);
    cc__section_end(w);
}
