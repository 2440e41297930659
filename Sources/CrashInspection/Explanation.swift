// Explanation.swift — what a signal, its si_code and fault address mean, in one sentence a person can act on.
package import CrashRecordFormat
import CrashSymbolication
import Foundation

package enum Explanation {
    /// E.g. "null pointer dereference at 0x0", "stack overflow (fault at 0x7ffd… just below the
    /// stack pointer)", "abort() called by the process itself".
    /// For a fault (SIGSEGV, SIGBUS), the crashed thread's registers that hold what no valid
    /// pointer is: near null (1 to 4095: a field of a nil object, an index used as a pointer) or
    /// not a canonical address (x86-64: bits 47–63 not all equal; aarch64: above the 48-bit
    /// user space, the top byte aside); nil when none does. The stack and program counters and
    /// the flags are left out.
    package static func suspiciousRegisters(_ record: CrashRecord) -> String? {
        guard let signal = record.signal, signal.number == SIGSEGV || signal.number == SIGBUS else { return nil }
        let skipped: Set<String> = ["rsp", "sp", "rip", "pc", "eflags", "pstate", "trapno", "err", "cr2", "lr"]
        var nearNull: [String] = [], noncanonical: [String] = []
        for register in record.registers where !skipped.contains(register.name) {
            let value = register.value
            if (1..<4096).contains(value) {
                nearNull.append("\(register.name) = \(hex(value))")
            } else if record.architecture == .x86_64 ? (value >> 47 != 0 && value >> 47 != 0x1_FFFF) : (value & 0x00FF_FFFF_FFFF_FFFF) >> 48 != 0 && value >> 48 != 0xFFFF {
                noncanonical.append("\(register.name) = \(hex(value))")
            }
        }
        var parts: [String] = []
        if !nearNull.isEmpty { parts.append("near null: " + nearNull.joined(separator: ", ")) }
        if !noncanonical.isEmpty { parts.append("not a canonical address: " + noncanonical.joined(separator: ", ")) }
        return parts.isEmpty ? nil : "registers " + parts.joined(separator: "; ")
    }

    package static func whatHappened(_ record: CrashRecord) -> String {
        if let event = record.event { return event.summary + (event.fate.map { "; \($0.summary(of: event.kind))" } ?? "; the process lived on") }
        guard let signal = record.signal else { return "no signal recorded (the record is cut short before it)" }
        let address = signal.faultAddress.map(hex)
        let sp = record.registers.first { $0.name == "rsp" || $0.name == "sp" }?.value
        if let cxx = record.cxxException {
            switch cxx.what {
            case .noException: return cxx.summary + ", then abort()"
            case .inFlight: return cxx.summary + "; the process aborted while it was being thrown"
            default: return cxx.summary + "; std::terminate, then abort()"
            }
        }
        if let sender = signal.sender {
            if let process = record.process, sender.pid == process.pid {
                if signal.number == SIGABRT {
                    if let line = record.abortMessage.flatMap(CrashSummary.firstLine) {
                        return "abort() by the C library: \(line)"
                    }
                    return "abort() called by the process itself (assert, a glibc heap check, a runtime error)"
                }
                return "\(signal.name) raised by the process itself"
            }
            return "\(signal.name) sent by another process (pid \(sender.pid), uid \(sender.uid)), e.g. kill -\(signal.name.dropFirst(3))"
        }
        switch signal.number {
        case SIGSEGV:
            if signal.codeName == "SI_KERNEL" {
                return "general protection fault: a non-canonical address or a privileged instruction"
            }
            if let fault = signal.faultAddress, let sp, fault < sp, sp - fault < 1 << 20 {
                return "stack overflow (fault at \(hex(fault)), just below the stack pointer \(hex(sp)))"
            }
            if let fault = signal.faultAddress, fault < 4096 {
                return "null pointer dereference at \(hex(fault))"
            }
            if signal.codeName == "SEGV_ACCERR" {
                return "write to or execution of protected memory at \(address ?? "?") (read-only data, a guard page)"
            }
            return "access to unmapped memory at \(address ?? "?") (a wild or dangling pointer)"
        case SIGBUS:
            if signal.codeName == "BUS_ADRERR" {
                return "access at \(address ?? "?") past the end of a mapped file (the file shrank after mmap)"
            }
            return "bus error at \(address ?? "?"): \(signal.codeDescription)"
        case SIGFPE:
            return "\(signal.codeDescription.isEmpty ? "arithmetic exception" : signal.codeDescription) at \(address ?? "?")"
        case SIGILL, SIGTRAP:
            if let line = record.fatalMessage.flatMap(CrashSummary.firstLine) {
                // Synchronization.Mutex on Linux is a priority-inheritance futex: the kernel walks
                // its owners and refuses a lock that would close a cycle (EDEADLK), which Mutex
                // reports as a recursive lock, whichever thread holds the other end.
                if line.contains("Recursive call to lock Mutex") {
                    return "Swift runtime trap: \(line) — on Linux also a deadlock: the kernel refused the lock because its holder waits, "
                        + "directly or through other threads, on a lock this thread holds (two Mutexes taken in opposite order)"
                }
                return "Swift runtime trap: \(line)"
            }
            return "\(signal.number == SIGILL ? "illegal instruction" : "trap") at \(address ?? "?") — a Swift runtime check (overflow, force-unwrap, bounds) in an optimised build, or __builtin_trap"
        case SIGABRT:
            return "abort()"
        default:
            return "\(signal.name) (\(signal.codeDescription))"
        }
    }

    /// The abort message as a crash signature keeps it: its first line (an assert's "prog:
    /// file.c:12: f: Assertion `x' failed.", malloc's "free(): double free detected in tcache 2",
    /// _FORTIFY_SOURCE's "*** buffer overflow detected ***: terminated") without the program's
    /// name that an assert starts with (the path it was run by differs), addresses as 0x?.
    /// Nothing in glibc's abort messages depends on data (an assert names its expression, file,
    /// line and function), so two asserts that differ only in their text group apart.
    package static func abortSignature(_ message: String) -> String {
        var line = CrashSummary.firstLine(of: message) ?? message
        if let assertion = line.range(of: ": Assertion `"),
           let colon = line[..<assertion.lowerBound].firstIndex(of: ":") {
            line = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        }
        return line.replacingOccurrences(of: #"0x[0-9a-fA-F]+"#, with: "0x?", options: .regularExpression)
    }

    package static func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }
}
