/* cc_arch.h — everything in the C core that differs between architectures, behind one interface.
 *
 * Each supported architecture implements all of it in one file: cc_arch_x86_64.c and
 * cc_arch_aarch64.c (each wholly inside its own #if, so both are compiled everywhere and one is
 * empty). No other file of CShims names a register, an instruction, a ucontext field or a
 * system call that exists on one architecture only. To add an architecture, add its file and
 * its line below; the compiler names what is missing.
 *
 * Every function here can be reached from the signal handler unless it says "install time",
 * and is async-signal-safe: plain loads and stores, inline assembly, raw system calls.
 */
#ifndef CC_ARCH_H
#define CC_ARCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <ucontext.h>

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "CrashCapture's C core supports x86-64 and aarch64 (see cc_arch.h to add an architecture)"
#endif

/* The record header's architecture (CC_ARCH_*). */
extern const uint8_t cc__arch_record_id;

/* Bytes below the stack pointer the ABI lets a function use without moving it (x86-64: 128;
 * aarch64: none). A handler frame placed on an interrupted stack goes below them. */
extern const uint64_t cc__arch_red_zone;

/* A frame as the unwinder (cc_cfi.c) steps it: the general registers by their DWARF numbers
 * (x86-64: rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8..r15, then 16 the return address column;
 * aarch64: x0..x30, then 31 sp) and the pc. */
#define CC__CFI_REGS 33
typedef struct { uint64_t reg[CC__CFI_REGS]; uint64_t pc; } cc__cfi_frame_t;
typedef struct cc__cfi cc__cfi_t;

/* The DWARF numbers of the stack pointer and the frame pointer (rbp / x29). */
extern const int cc__arch_cfi_sp;
extern const int cc__arch_cfi_fp;

/* The signal context as the unwinder's first frame. */
void cc__arch_cfi_frame(const ucontext_t *uc, cc__cfi_frame_t *frame);

/* The interrupted context's program counter, stack pointer, frame pointer (rbp / x29) and Swift
 * async context register (r14 / x22: where a partial function receives its context; cc_swift_abi.h, 2). */
uint64_t cc__context_pc(const ucontext_t *uc);
uint64_t cc__context_sp(const ucontext_t *uc);
uint64_t cc__context_fp(const ucontext_t *uc);
uint64_t cc__context_async_register(const ucontext_t *uc);

/* A code address as the hardware would use it: on aarch64 with pointer authentication a return
 * address saved on the stack (or in lr) carries a signature in its upper bits, stripped here
 * (xpaclri: the CPU's own stripping, a no-op hint on CPUs without PAC). x86-64: unchanged. */
uint64_t cc__strip_code_address(uint64_t address);

/* After a call through a NULL (or wild) function pointer the pc is in no function: steps
 * `frame` to the caller (its return address: x86-64 at sp, popped; aarch64 in lr). 0 when it
 * cannot. */
int cc__arch_step_out_of_bad_call(cc__cfi_frame_t *frame);

/* The register table of a CC_SEC_REGISTERS payload: writes the cc_sec_registers_t head and the
 * registers through cc__registers_put (cc_registers.c). Returns the new offset. */
size_t cc__arch_registers(const ucontext_t *uc, unsigned char *out, size_t at, size_t cap);

/* A ptrace-stopped thread's registers (PTRACE_GETREGSET, NT_PRSTATUS) as a ucontext. 0 or an
 * errno. */
int cc__arch_ptrace_registers(pid_t tid, ucontext_t *uc);

/* syscall(2) returning -errno instead of setting errno (for code sharing our memory: the thread
 * helper, the uploader's child). */
long cc__raw_syscall(long n, long a, long b, long c, long d);

/* Sleeps until a signal arrives (x86-64: pause; aarch64 has no pause system call: ppoll with no
 * descriptors and no timeout waits the same way). */
void cc__raw_pause(void);

/* This thread's thread pointer (x86-64: the TCB address at %fs:0; aarch64: tpidr_el0). Variables
 * of the initial (static) TLS blocks, and the first pthread keys' values, lie at a fixed distance
 * from it, the same for every thread: the probe (cc_swift_abi.c) finds the Swift runtime's current
 * task there. */
uint64_t cc__arch_thread_pointer(void);

/* The assembler lines that open and close a hidden function written in assembly (each
 * architecture's cc__call_on_stack); `%function` is the spelling both assemblers accept. */
#define CC__ASM_FUNCTION_BEGIN(name, align) \
    ".text\n.p2align " #align "\n.globl " #name "\n.hidden " #name "\n.type " #name ",%function\n" #name ":\n" \
    ".cfi_startproc\n"
#define CC__ASM_FUNCTION_END(name) ".cfi_endproc\n.size " #name ", .-" #name "\n"

/* Runs handler(signo, info, context) on another stack whose top is stack_top (cc_chain.c). */
void cc__call_on_stack(void (*handler)(int, siginfo_t *, void *), int signo, siginfo_t *info, void *context,
                       uintptr_t stack_top);

/* Raises `signo` as a fault of this thread, with the instruction the hardware raises it for
 * (x86-64: ud2 SIGILL, int3 SIGTRAP, a division by zero SIGFPE; aarch64: udf SIGILL, brk
 * SIGTRAP); returns when the architecture has none for it. */
void cc__arch_fault_as(int signo);

/* async-signal-safe: the processor's identity into *signature (x86-64: CPUID leaf 1 EAX; aarch64:
 * MIDR_EL1) and vendor (x86-64: CPUID's 12-character vendor; aarch64: ""); 0 when unknown. */
int cc__arch_cpu_identity(uint32_t *signature, char *vendor, size_t size);

#endif /* CC_ARCH_H */
