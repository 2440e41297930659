/* cc_registers.c — one register layout for the record: the crashed thread's, the parked
 * threads' and the ptraced threads' registers all go through cc__registers_payload. */
#include "cc_boot.h"
#include "cc_internal.h"

/* async-signal-safe: appends `len` bytes if they fit. */
static size_t cc__put(unsigned char *out, size_t at, size_t cap, const void *data, size_t len) {
    if (at + len > cap) return cap + 1;
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) out[at + i] = p[i];
    return at + len;
}

/* async-signal-safe */
static size_t cc__put_register(unsigned char *out, size_t at, size_t cap, const char *name, uint64_t value) {
    cc_register_t r = { .value = value };
    for (size_t i = 0; i + 1 < sizeof r.name && name[i]; i++) r.name[i] = name[i];
    return cc__put(out, at, cap, &r, sizeof r);
}

size_t cc__registers_payload(const ucontext_t *uc, void *buffer, size_t cap) {
    unsigned char *out = buffer;
    size_t at = 0;
    /* ARCH: the register names and their ucontext slots; one block per architecture. */
#if defined(__x86_64__)
    static const struct { const char *name; int index; } regs[] = {
        { "rax", REG_RAX }, { "rbx", REG_RBX }, { "rcx", REG_RCX }, { "rdx", REG_RDX },
        { "rdi", REG_RDI }, { "rsi", REG_RSI }, { "rbp", REG_RBP }, { "rsp", REG_RSP },
        { "r8", REG_R8 }, { "r9", REG_R9 }, { "r10", REG_R10 }, { "r11", REG_R11 },
        { "r12", REG_R12 }, { "r13", REG_R13 }, { "r14", REG_R14 }, { "r15", REG_R15 },
        { "rip", REG_RIP }, { "eflags", REG_EFL }, { "trapno", REG_TRAPNO }, { "err", REG_ERR },
        { "cr2", REG_CR2 },
    };
    cc_sec_registers_t head = { .arch = CC_ARCH_X86_64, .count = sizeof regs / sizeof regs[0] };
    at = cc__put(out, at, cap, &head, sizeof head);
    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++)
        at = cc__put_register(out, at, cap, regs[i].name, (uint64_t)uc->uc_mcontext.gregs[regs[i].index]);
#elif defined(__aarch64__)
    static const char *names[31] = {
        "x0","x1","x2","x3","x4","x5","x6","x7","x8","x9","x10","x11","x12","x13","x14","x15",
        "x16","x17","x18","x19","x20","x21","x22","x23","x24","x25","x26","x27","x28","fp","lr" };
    cc_sec_registers_t head = { .arch = CC_ARCH_AARCH64, .count = 34 };
    at = cc__put(out, at, cap, &head, sizeof head);
    for (int i = 0; i < 31; i++) at = cc__put_register(out, at, cap, names[i], uc->uc_mcontext.regs[i]);
    at = cc__put_register(out, at, cap, "sp", uc->uc_mcontext.sp);
    at = cc__put_register(out, at, cap, "pc", uc->uc_mcontext.pc);
    at = cc__put_register(out, at, cap, "pstate", uc->uc_mcontext.pstate);
#else
    (void)uc;
    cc_sec_registers_t head = { .arch = CC_ARCH_UNKNOWN, .count = 0 };
    at = cc__put(out, at, cap, &head, sizeof head);
#endif
    return at > cap ? 0 : at;
}
