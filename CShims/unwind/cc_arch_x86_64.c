/* cc_arch_x86_64.c — the x86-64 half of cc_arch.h: every register, instruction and system call
 * of the C core that is x86-64's own. Each function is async-signal-safe unless it says
 * otherwise (see cc_arch.h). */
#include "cc_boot.h"
#include "cc_internal.h"

#if defined(__x86_64__)

#include <errno.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <elf.h>
#include <cpuid.h>

const uint8_t cc__arch_record_id = CC_ARCH_X86_64;
const uint64_t cc__arch_red_zone = 128;
const int cc__arch_cfi_sp = 7;
const int cc__arch_cfi_fp = 6;

uint64_t cc__context_pc(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.gregs[REG_RIP]; }
uint64_t cc__context_sp(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.gregs[REG_RSP]; }
uint64_t cc__context_fp(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.gregs[REG_RBP]; }
uint64_t cc__context_async_register(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.gregs[REG_R14]; }

uint64_t cc__strip_code_address(uint64_t address) { return address; }

/* DWARF's x86-64 numbering (System V psABI, figure 3.36): 0..16. */
void cc__arch_cfi_frame(const ucontext_t *uc, cc__cfi_frame_t *frame) {
    static const int order[16] = { REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
                                   REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15 };
    for (int i = 0; i < CC__CFI_REGS; i++) frame->reg[i] = 0;
    for (int i = 0; i < 16; i++) frame->reg[i] = (uint64_t)uc->uc_mcontext.gregs[order[i]];
    frame->pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    frame->reg[16] = frame->pc;
}

/* The call pushed the caller's return address: it is at sp. */
int cc__arch_step_out_of_bad_call(cc__cfi_frame_t *frame) {
    uint64_t sp = frame->reg[7], ret = 0;
    if (cc__safe_read(sp, &ret, sizeof ret) != sizeof ret || ret == 0) return 0;
    frame->pc = ret;
    frame->reg[16] = ret;
    frame->reg[7] = sp + 8;
    return 1;
}

size_t cc__arch_registers(const ucontext_t *uc, unsigned char *out, size_t at, size_t cap) {
    static const struct { const char *name; int index; } regs[] = {
        { "rax", REG_RAX }, { "rbx", REG_RBX }, { "rcx", REG_RCX }, { "rdx", REG_RDX },
        { "rdi", REG_RDI }, { "rsi", REG_RSI }, { "rbp", REG_RBP }, { "rsp", REG_RSP },
        { "r8", REG_R8 }, { "r9", REG_R9 }, { "r10", REG_R10 }, { "r11", REG_R11 },
        { "r12", REG_R12 }, { "r13", REG_R13 }, { "r14", REG_R14 }, { "r15", REG_R15 },
        { "rip", REG_RIP }, { "eflags", REG_EFL }, { "trapno", REG_TRAPNO }, { "err", REG_ERR },
        { "cr2", REG_CR2 },
    };
    cc_sec_registers_t head = { .arch = CC_ARCH_X86_64, .count = sizeof regs / sizeof regs[0] };
    at = cc__registers_put(out, at, cap, &head, sizeof head);
    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++)
        at = cc__registers_put_one(out, at, cap, regs[i].name, (uint64_t)uc->uc_mcontext.gregs[regs[i].index]);
    return at;
}

int cc__arch_ptrace_registers(pid_t tid, ucontext_t *uc) {
    struct user_regs_struct regs;
    struct iovec io = { &regs, sizeof regs };
    long rc = cc__raw_syscall(SYS_ptrace, PTRACE_GETREGSET, tid, NT_PRSTATUS, (long)&io);
    if (rc < 0) return (int)-rc;
    greg_t *g = uc->uc_mcontext.gregs;
    g[REG_RAX] = (greg_t)regs.rax; g[REG_RBX] = (greg_t)regs.rbx; g[REG_RCX] = (greg_t)regs.rcx;
    g[REG_RDX] = (greg_t)regs.rdx; g[REG_RDI] = (greg_t)regs.rdi; g[REG_RSI] = (greg_t)regs.rsi;
    g[REG_RBP] = (greg_t)regs.rbp; g[REG_RSP] = (greg_t)regs.rsp; g[REG_R8] = (greg_t)regs.r8;
    g[REG_R9] = (greg_t)regs.r9; g[REG_R10] = (greg_t)regs.r10; g[REG_R11] = (greg_t)regs.r11;
    g[REG_R12] = (greg_t)regs.r12; g[REG_R13] = (greg_t)regs.r13; g[REG_R14] = (greg_t)regs.r14;
    g[REG_R15] = (greg_t)regs.r15; g[REG_RIP] = (greg_t)regs.rip; g[REG_EFL] = (greg_t)regs.eflags;
    return 0;
}

long cc__raw_syscall(long n, long a, long b, long c, long d) {
    long ret;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return ret;
}

void cc__raw_pause(void) { cc__raw_syscall(SYS_pause, 0, 0, 0, 0); }

uint64_t cc__arch_thread_pointer(void) {
    uint64_t tp;
    __asm__ volatile("movq %%fs:0, %0" : "=r"(tp));
    return tp;
}

/* cc__call_on_stack(handler, signo, info, context, stack_top) */
__asm__(
    CC__ASM_FUNCTION_BEGIN(cc__call_on_stack, 4)
    "    pushq %rbp\n"
    ".cfi_def_cfa_offset 16\n"
    ".cfi_offset %rbp, -16\n"
    "    movq %rsp, %rbp\n"
    ".cfi_def_cfa_register %rbp\n"
    "    movq %r8, %rsp\n"
    "    andq $-16, %rsp\n"
    "    movq %rdi, %rax\n"
    "    movl %esi, %edi\n"
    "    movq %rdx, %rsi\n"
    "    movq %rcx, %rdx\n"
    "    callq *%rax\n"
    "    movq %rbp, %rsp\n"
    "    popq %rbp\n"
    ".cfi_def_cfa %rsp, 8\n"
    "    ret\n"
    CC__ASM_FUNCTION_END(cc__call_on_stack));

void cc__arch_fault_as(int signo) {
    if (signo == SIGILL) __asm__ volatile("ud2");
    if (signo == SIGTRAP) __asm__ volatile("int3");
    if (signo == SIGFPE) { volatile int zero = 0; volatile int one = 1; one = one / zero; }
}

/* async-signal-safe: the processor's identity from CPUID: leaf 0's vendor ("GenuineIntel",
 * "AuthenticAMD") and leaf 1's EAX (stepping, model, family and their extended bits). */
int cc__arch_cpu_identity(uint32_t *signature, char *vendor, size_t size) {
    /* __cpuid, not __get_cpuid: that one asks for the highest leaf (CPUID 0) before each leaf it
     * reads, and each CPUID leaves a virtual machine for its hypervisor (≈ 4 µs here). Leaf 0 says
     * the highest leaf itself. Every x86-64 processor has leaf 1. */
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (size < 13) return 0;
    __cpuid(0, a, b, c, d);
    if (a < 1) return 0;
    const unsigned words[3] = { b, d, c };
    for (int i = 0; i < 12; i++) vendor[i] = (char)(words[i / 4] >> (8 * (i % 4)));
    vendor[12] = 0;
    __cpuid(1, a, b, c, d);
    *signature = a;
    return 1;
}

#endif /* __x86_64__ */
