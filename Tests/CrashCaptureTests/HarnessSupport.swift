// HarnessSupport.swift — runs the harness's scenarios for the capture tests: both builds of the
// harness, each run verified against the scenario table and its reference run. (Harness itself,
// and `emit`, are TestSupport's.)
import CrashCapture
import CrashScenarios
import CrashSymbolication
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

extension Harness {
    /// The debug harness SwiftPM built next to this test bundle (``Harness/path``), named beside
    /// ``release``.
    static var debug: String { path }

    /// The release harness, when the test command built one (scripts/test.sh does).
    static var release: String? { BuiltProducts.releaseHarness }

    static let symbolicator: Symbolicator = {
        do { return try Symbolicator() } catch { fatalError("\(error)") }
    }()

    /// Whether `binary` was built in debug (asked through `list --json`).
    static func isDebugBuild(_ binary: String) throws -> Bool {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("harness-list-\(getpid()).json").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let child = try ChildProcess.run(binary, ["list", "--json"], stdout: out, timeout: 60)
        XCTAssertEqual(child.ending, .exited(0))
        let data = try XCTUnwrap(FileManager.default.contents(atPath: out))
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return object["build"] as? String == "debug"
    }

    /// A fresh directory for one run's records.
    static func scratchDirectory(_ name: String) throws -> String { try Scratch.directory(name) }

    struct Run {
        let report: RunReport
        let record: CrashRecord?
        let directory: String
        var outcome: RunOutcome { report.outcome }
        /// The reference run (same scenario, CRASHCAPTURE_DISABLE=1).
        var reference: ProcessOutcome? { report.outcome.reference }
    }

    /// Runs a scenario in a child (and its reference run with CRASHCAPTURE_DISABLE=1), verifies
    /// it against the table and the reference, and returns the record.
    static func run(_ name: String, binary: String = Harness.debug, file: StaticString = #filePath, line: UInt = #line) throws -> Run {
        let scenario = try XCTUnwrap(Scenarios.named(name), "no scenario \(name)", file: file, line: line)
        let directory = try scratchDirectory(name)
        let outcome = try ScenarioRunner.run(scenario, harness: binary, directory: directory, timeout: 60)
        let report = ScenarioRunner.verify(outcome, scenario: scenario, symbolicator: symbolicator,
                                           debugHarness: try isDebugBuildCached(binary))
        XCTAssertEqual(report.failures, [], "\(name): \(report.failures.joined(separator: "; "))\nstderr:\n\(outcome.stderr.prefix(2000))",
                       file: file, line: line)
        XCTAssertEqual(outcome.leftRunning, [], "\(name): processes left running", file: file, line: line)
        // The record of the process the scenario is about (a vfork child may leave another).
        let record = outcome.ownRecordFiles.first.flatMap { try? CrashRecordReader.read(path: $0) }
        return Run(report: report, record: record, directory: directory)
    }

    nonisolated(unsafe) private static var buildCache: [String: Bool] = [:]
    static func isDebugBuildCached(_ binary: String) throws -> Bool {
        if let known = buildCache[binary] { return known }
        let value = try isDebugBuild(binary)
        buildCache[binary] = value
        return value
    }

    /// Symbol names of a thread's frames, inlined frames included, innermost first.
    static func symbols(_ thread: CrashThread, in record: CrashRecord) -> [String] {
        symbolicator.symbolicate(frames: thread.frames, firstIsExact: thread.framesFromSignalContext, images: record.images)
            .flatMap { $0.map { $0.symbol ?? "?" } }
    }
}
