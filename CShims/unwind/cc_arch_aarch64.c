/* cc_arch_aarch64.c — the aarch64 half of cc_arch.h: every register, instruction and system call
 * of the C core that is aarch64's own, pointer authentication included. Each function is
 * async-signal-safe unless it says otherwise (see cc_arch.h). */
#include "cc_boot.h"
#include "cc_internal.h"

#if defined(__aarch64__)

#include <errno.h>
#include <stddef.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

const uint8_t cc__arch_record_id = CC_ARCH_AARCH64;
const uint64_t cc__arch_red_zone = 0;
const int cc__arch_cfi_sp = 31;
const int cc__arch_cfi_fp = 29;

uint64_t cc__context_pc(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.pc; }
uint64_t cc__context_sp(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.sp; }
uint64_t cc__context_fp(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.regs[29]; }
uint64_t cc__context_async_register(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.regs[22]; }

/* xpaclri (hint #7): strips the pointer-authentication code from x30 the way the CPU does for
 * its own return addresses, whatever the virtual-address size and tagging; on a CPU without
 * pointer authentication it is a no-op hint, so this is right on every aarch64 CPU (xpaci is
 * not: it is undefined before Armv8.3). */
uint64_t cc__strip_code_address(uint64_t address) {
    register uint64_t lr __asm__("x30") = address;
    __asm__("hint #7" : "+r"(lr));
    return lr;
}

/* DWARF's aarch64 numbering (AADWARF64): x0..x30 are 0..30, sp 31. */
void cc__arch_cfi_frame(const ucontext_t *uc, cc__cfi_frame_t *frame) {
    for (int i = 0; i < CC__CFI_REGS; i++) frame->reg[i] = 0;
    for (int i = 0; i < 31; i++) frame->reg[i] = (uint64_t)uc->uc_mcontext.regs[i];
    frame->reg[31] = (uint64_t)uc->uc_mcontext.sp;
    frame->pc = (uint64_t)uc->uc_mcontext.pc;
}

/* The call (blr) left the caller's return address in lr; stripped, as it may be signed. The
 * caller then goes on from lr as a leaf function would (its CFI, or its frame record). */
int cc__arch_step_out_of_bad_call(cc__cfi_frame_t *frame) {
    uint64_t lr = cc__strip_code_address(frame->reg[30]);
    if (lr == 0) return 0;
    frame->pc = lr;
    return 1;
}

/* lr is recorded stripped: a record holds no signed address (pc is recorded as it is: a pc
 * with a bad signature's error bits is how a failed authentication shows). */
size_t cc__arch_registers(const ucontext_t *uc, unsigned char *out, size_t at, size_t cap) {
    static const char *names[31] = {
        "x0","x1","x2","x3","x4","x5","x6","x7","x8","x9","x10","x11","x12","x13","x14","x15",
        "x16","x17","x18","x19","x20","x21","x22","x23","x24","x25","x26","x27","x28","fp","lr" };
    cc_sec_registers_t head = { .arch = CC_ARCH_AARCH64, .count = 34 };
    at = cc__registers_put(out, at, cap, &head, sizeof head);
    for (int i = 0; i < 30; i++) at = cc__registers_put_one(out, at, cap, names[i], uc->uc_mcontext.regs[i]);
    at = cc__registers_put_one(out, at, cap, names[30], cc__strip_code_address(uc->uc_mcontext.regs[30]));
    at = cc__registers_put_one(out, at, cap, "sp", uc->uc_mcontext.sp);
    at = cc__registers_put_one(out, at, cap, "pc", uc->uc_mcontext.pc);
    at = cc__registers_put_one(out, at, cap, "pstate", uc->uc_mcontext.pstate);
    return at;
}

/* glibc's aarch64 <sys/user.h> names the kernel's struct user_pt_regs (NT_PRSTATUS)
 * struct user_regs_struct. */
int cc__arch_ptrace_registers(pid_t tid, ucontext_t *uc) {
    struct user_regs_struct regs;
    struct iovec io = { &regs, sizeof regs };
    long rc = cc__raw_syscall(SYS_ptrace, PTRACE_GETREGSET, tid, NT_PRSTATUS, (long)&io);
    if (rc < 0) return (int)-rc;
    for (int i = 0; i < 31; i++) uc->uc_mcontext.regs[i] = regs.regs[i];
    uc->uc_mcontext.sp = regs.sp;
    uc->uc_mcontext.pc = regs.pc;
    uc->uc_mcontext.pstate = regs.pstate;
    return 0;
}

long cc__raw_syscall(long n, long a, long b, long c, long d) {
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
    return x0;
}

/* No pause system call in aarch64's (generic) table: ppoll with no descriptors, no timeout and
 * the current mask waits the same way. */
void cc__raw_pause(void) { cc__raw_syscall(SYS_ppoll, 0, 0, 0, 0); }

uint64_t cc__arch_thread_pointer(void) {
    uint64_t tp;
    __asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
    return tp;
}

/* cc__call_on_stack(handler, signo, info, context, stack_top) */
__asm__(
    CC__ASM_FUNCTION_BEGIN(cc__call_on_stack, 2)
    "    stp x29, x30, [sp, #-16]!\n"
    ".cfi_def_cfa_offset 16\n"
    ".cfi_offset x29, -16\n"
    ".cfi_offset x30, -8\n"
    "    mov x29, sp\n"
    ".cfi_def_cfa_register x29\n"
    "    and x4, x4, #~15\n"
    "    mov sp, x4\n"
    "    mov x16, x0\n"
    "    mov w0, w1\n"
    "    mov x1, x2\n"
    "    mov x2, x3\n"
    "    blr x16\n"
    "    mov sp, x29\n"
    ".cfi_def_cfa_register sp\n"
    "    ldp x29, x30, [sp], #16\n"
    ".cfi_def_cfa_offset 0\n"
    "    ret\n"
    CC__ASM_FUNCTION_END(cc__call_on_stack));

void cc__arch_fault_as(int signo) {
    if (signo == SIGILL) __asm__ volatile("udf #0");
    if (signo == SIGTRAP) __asm__ volatile("brk #0");
}

/* async-signal-safe: the processor's identity: MIDR_EL1 of CPU 0 (implementer, variant, part,
 * revision), as the kernel exports it (a user-space mrs of it would trap on older kernels). No
 * vendor string. */
int cc__arch_cpu_identity(uint32_t *signature, char *vendor, size_t size) {
    if (size > 0) vendor[0] = 0;
    int fd = cc__sys_open("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char text[32];
    ssize_t got;
    do { got = cc__sys_read(fd, text, sizeof text - 1); } while (got < 0 && errno == EINTR);
    cc__sys_close(fd);
    if (got <= 2 || text[0] != '0' || text[1] != 'x') return 0;
    uint64_t value = 0;
    for (ssize_t i = 2; i < got; i++) {
        char ch = text[i];
        int digit = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (digit < 0) break;
        value = value << 4 | (uint64_t)digit;
    }
    *signature = (uint32_t)value;
    return value != 0;
}

#endif /* __aarch64__ */
