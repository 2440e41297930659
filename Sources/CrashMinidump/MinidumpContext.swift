// MinidumpContext.swift — one thread's registers, as recorded by name, laid out as the CPU context
// structure the minidump readers expect for its architecture.
//
// x86-64: MDRawContextAMD64 (Microsoft's CONTEXT for AMD64; 1232 bytes), flags CONTROL|INTEGER:
// the record holds the general-purpose registers, rip and eflags, no segment, floating-point or
// debug registers, whose fields stay zero and whose flags stay clear.
//
// aarch64: the layout Breakpad's Linux writer emits, MDRawContextARM64_Old (796 bytes, 4-byte
// packed: a 64-bit flags word, x0…x28, fp, lr, sp, pc, cpsr, then fpsr, fpcr and 32 vector
// registers), with MD_CPU_ARCHITECTURE_ARM64_OLD (0x8003) in SystemInfo. lldb reads exactly this
// layout for aarch64 minidumps (a 64-bit flags word first), and rust-minidump (Sentry) reads it by
// its size; the newer 912-byte MDRawContextARM64 (32-bit flags, cpsr, then the registers) is what
// Crashpad writes, and lldb 16 would misread it. Flags: INTEGER only (no vector registers recorded).

import CrashRecordFormat

enum MinidumpContext {
    static let amd64Size = 1232
    static let arm64OldSize = 796

    /// MD_CONTEXT_AMD64 | CONTROL | INTEGER.
    static let amd64Flags: UInt32 = 0x0010_0000 | 0x1 | 0x2
    /// MD_CONTEXT_ARM64_OLD | INTEGER.
    static let arm64OldFlags: UInt64 = 0x8000_0000 | 0x2

    /// MDRawContextAMD64's integer registers from rax at offset 120, in its order.
    static let amd64Order = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                             "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"]

    /// The context for `registers` of `architecture`; nil for an architecture the format has no
    /// Linux context for here.
    static func bytes(_ registers: [Register], architecture: CrashRecord.Architecture) -> [UInt8]? {
        var values: [String: UInt64] = [:]
        for register in registers where values[register.name] == nil { values[register.name] = register.value }
        var out = MinidumpBytes()
        switch architecture {
        case .x86_64:
            out.zeros(48)                              // p1_home … p6_home
            out.u32(amd64Flags)                        // context_flags
            out.u32(0)                                 // mx_csr
            out.zeros(12)                              // cs ds es fs gs ss
            out.u32(UInt32(truncatingIfNeeded: values["eflags"] ?? 0))
            out.zeros(48)                              // dr0 … dr7
            for name in amd64Order { out.u64(values[name] ?? 0) }
            out.zeros(amd64Size - out.bytes.count)     // flt_save, vector registers, debug control
            return out.bytes
        case .aarch64:
            out.u64(arm64OldFlags)
            for index in 0...28 { out.u64(values["x\(index)"] ?? 0) }
            out.u64(values["fp"] ?? values["x29"] ?? 0)
            out.u64(values["lr"] ?? values["x30"] ?? 0)
            out.u64(values["sp"] ?? 0)
            out.u64(values["pc"] ?? 0)
            out.u32(UInt32(truncatingIfNeeded: values["pstate"] ?? 0))  // cpsr
            out.zeros(arm64OldSize - out.bytes.count)  // fpsr, fpcr, v0 … v31
            return out.bytes
        case .unknown:
            return nil
        }
    }

    /// The stack pointer among `registers`.
    static func stackPointer(_ registers: [Register], architecture: CrashRecord.Architecture) -> UInt64? {
        let name = architecture == .x86_64 ? "rsp" : "sp"
        return registers.first { $0.name == name }?.value
    }

    /// Registers for a thread the record has frames for but no registers (it holds only their
    /// program counters): the innermost frame as the program counter, nothing else.
    static func programCounterOnly(_ pc: UInt64, architecture: CrashRecord.Architecture) -> [Register] {
        [Register(name: architecture == .x86_64 ? "rip" : "pc", value: pc)]
    }
}
