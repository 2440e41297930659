// SuspiciousRegistersTests.swift — what "What happened" says of a fault's registers: those near
// null and those no canonical address can hold are named, on both architectures; a plain pointer,
// zero, the stack and program counters, and a signal that is no fault are not.
import CrashInspection
import CrashRecordFormat
import Foundation
import XCTest

final class SuspiciousRegistersTests: XCTestCase {
    func record(_ architecture: CrashRecord.Architecture, signal: Int32 = SIGSEGV, _ registers: [(String, UInt64)]) -> CrashRecord {
        CrashRecord(architecture: architecture, signal: SignalInfo(number: signal, name: "SIG"),
                    registers: registers.map { Register(name: $0.0, value: $0.1) })
    }

    func testNearNullAndNonCanonicalRegistersAreNamedOnX86() {
        let crash = record(.x86_64, [("rax", 0x10), ("rbx", 0), ("rcx", 0x5566_1ca5_c360), ("rdx", 0xdead_0000_0000_0000),
                                     ("rdi", 0xffff_8000_0000_1000), ("rsp", 0x8), ("rip", 0x20), ("eflags", 0x246)])
        XCTAssertEqual(Explanation.suspiciousRegisters(crash),
                       "registers near null: rax = 0x10; not a canonical address: rdx = 0xdead000000000000")
    }

    func testTheTopByteIsIgnoredOnAarch64() {
        let crash = record(.aarch64, [("x0", 0xff8), ("x1", 0xb400_0071_2345_6780), ("x2", 0x0001_0000_0000_0000), ("lr", 0x7)])
        XCTAssertEqual(Explanation.suspiciousRegisters(crash),
                       "registers near null: x0 = 0xff8; not a canonical address: x2 = 0x1000000000000")
    }

    func testNothingIsSaidWithoutSuchARegisterOrForASignalThatIsNoFault() {
        XCTAssertNil(Explanation.suspiciousRegisters(record(.x86_64, [("rax", 0), ("rbx", 0x7fff_1234_5678)])))
        XCTAssertNil(Explanation.suspiciousRegisters(record(.x86_64, signal: SIGABRT, [("rax", 0x10)])))
    }
}
