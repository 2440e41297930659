// BacktracerAlongsideTests.swift — every scenario with Swift's own backtracer on, as a Swift program
// on Linux has it by default, with capture and without (CrashScenarios' BacktracerAlongside): capture
// leaves nothing of the process running, and the backtracer reports exactly as often as it does
// without capture (or, where a scenario says why the runtime alone is no reference, as often as the
// scenario says). A second report means a second crashing thread entered the runtime's handler.
import CrashScenarios
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class BacktracerAlongsideTests: XCTestCase {
    func check(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let scenario = try XCTUnwrap(Scenarios.named(name), file: file, line: line)
        let directory = try Harness.scratchDirectory("backtracer-" + name)
        let comparison = try BacktracerAlongside.compare(scenario, harness: Harness.debug, directory: directory)
        XCTAssertEqual(comparison.failures, [], "\(name): \(comparison.failures.joined(separator: "; "))\nstderr with capture:\n\(comparison.captured.stderr.prefix(3000))",
                       file: file, line: line)
    }

    /// The whole table. `scripts/test.sh` runs the same comparison over the release harness in its
    /// death check (`crash-harness verify --backtracer`) and says so in
    /// `BACKTRACER_TABLE_CHECKED`: the table is then not run a second time here.
    func testEveryScenarioWithTheBacktracerOnLeavesNothingRunningAndReportsAsOftenAsWithoutCapture() throws {
        if let checked = ProcessInfo.processInfo.environment["BACKTRACER_TABLE_CHECKED"], !checked.isEmpty {
            throw XCTSkip("every scenario with the backtracer on was compared by the death check (\(checked))")
        }
        for scenario in Scenarios.all { try check(scenario.name) }
    }

    /// The case the backtracer was broken in: several threads crashing at once. Once per run is
    /// not enough for a race; five runs each, with the runtime's handler and with a plain one.
    func testThreadsCrashingAtOnceEnterThePreviousHandlerOneAtATimeInEveryRun() throws {
        for _ in 0..<5 {
            try check("concurrent-crashes")
            try check("one-thread-in-previous-handler")
        }
    }

    /// The comparison can fail: a stderr with two of the runtime's report lines counts two.
    func testTheReportCountCountsEveryEntryIntoTheRuntimesHandler() {
        let one = "*** Signal 11: Backtracing from 0x1234... done ***\n"
        XCTAssertEqual(BacktracerAlongside.reports(in: ""), 0)
        XCTAssertEqual(BacktracerAlongside.reports(in: one), 1)
        XCTAssertEqual(BacktracerAlongside.reports(in: one + "Thread 1 crashed:\n" + one), 2)
    }
}
