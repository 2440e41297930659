// LevelsTests.swift — the level chain every scenario crashes under.
import CrashScenarios
import Foundation
import TestSupport
import XCTest

final class LevelsTests: XCTestCase {
    func testTheChainIsListedInnermostFirst() {
        XCTAssertEqual(levelChain, ["level5", "level4", "level3", "level2", "level1"])
    }

    /// The body runs once, inside level1 → level5: the return addresses on the stack at that
    /// moment, named by addr2line from this test binary's debug info, are the five levels
    /// innermost first, under throughLevels.
    func testThroughLevelsRunsTheBodyOnceInsideTheFiveLevels() throws {
        var runs = 0
        var addresses: [UInt64] = []
        throughLevels {
            runs += 1
            addresses = Thread.callStackReturnAddresses.map { $0.uint64Value }
        }
        XCTAssertEqual(runs, 1)
        // Where this executable is mapped (a PIE: its file addresses start at 0).
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let maps = try String(contentsOfFile: "/proc/self/maps", encoding: .utf8)
        let base = try XCTUnwrap(maps.split(separator: "\n").filter { $0.hasSuffix(" " + executable) }
            .compactMap { UInt64($0.prefix { $0 != "-" }, radix: 16) }.min())
        let own = addresses.filter { $0 > base }.prefix(12)
        let addr2line = try XCTUnwrap(Tools.find("addr2line"))
        // Return addresses: the call is one byte before.
        let output = try Tools.output(addr2line, ["-f", "-e", executable] + own.map { "0x" + String($0 - base - 1, radix: 16) })
        let functions = output.split(separator: "\n").enumerated().filter { $0.offset % 2 == 0 }.map { String($0.element) }
        // Mangled: "$s14CrashScenarios6level3yyyyXEF".
        let levels = functions.compactMap { name in levelChain.first { name == "$s14CrashScenarios\($0.count)\($0)yyyyXEF" } }
        XCTAssertEqual(levels, levelChain, "\(functions)")
        let level1 = functions.firstIndex { $0 == "$s14CrashScenarios6level1yyyyXEF" }
        let through = functions.firstIndex { $0 == "$s14CrashScenarios13throughLevelsyyyyXEF" }
        XCTAssertNotNil(through, "\(functions)")
        if let through, let level1 { XCTAssertEqual(through, level1 + 1, "throughLevels calls level1") }
    }

    func testEachLevelCallsTheNextAndReturns() {
        var order: [String] = []
        level3 { order.append("body") }
        order.append("after")
        XCTAssertEqual(order, ["body", "after"])
    }

    func testOpaqueReturnsItsArgument() {
        XCTAssertEqual(opaque(42), 42)
        XCTAssertEqual(opaque("text"), "text")
        XCTAssertNil(opaque(Int?.none))
    }
}
