// EndOfRunTests.swift — the end of a run is one loop over the sinks: shutdown gives every sink the
// same deadline at once (a slow one takes no time from another), a sink that never returns is
// reported unfinished without holding shutdown past its deadline, and the run's marker says
// `exited` after the sinks ended — in this process, with sinks of the test's own.
@testable import CrashReporter
import HostFacts
import Foundation
import Synchronization
import TestSupport
import XCTest

final class EndOfRunTests: XCTestCase {
    /// A sink whose end takes `takes`, and that notes when its end began.
    final class SlowEnd: CrashRecordSink, @unchecked Sendable {
        let id: RecordSinkID
        let takes: Duration
        private let lock = NSLock()
        private var began: ContinuousClock.Instant?
        init(_ name: String, takes: Duration) {
            id = RecordSinkID(name)!
            self.takes = takes
        }
        var endBegan: ContinuousClock.Instant? { lock.withLock { began } }
        func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult { .delivered }
        func shutdown(deadline: SuspendingClock.Instant) -> Bool {
            lock.withLock { began = .now }
            Thread.sleep(forTimeInterval: Double(takes.components.seconds) + Double(takes.components.attoseconds) / 1e18)
            return SuspendingClock.now <= deadline
        }
    }

    func reporting(_ directory: String, sinks: [any CrashRecordSink]) -> CrashReporting {
        var configuration = CrashReporting.Configuration(recordDirectory: directory, appName: "end", appVersion: "1")
        configuration.captureCrashes = false   // no signal handlers in the test process
        configuration.sentryDSN = nil
        configuration.otlpLogsEndpoint = nil
        configuration.sinks = sinks
        return CrashReporting.start(configuration)
    }

    func testEverySinkEndsAtOnceWithTheSameDeadlineAndTheRunEndsAfterThem() throws {
        let directory = try Scratch.directory("end-at-once")
        let slow = SlowEnd("slow", takes: .milliseconds(800)), quick = SlowEnd("quick", takes: .milliseconds(10))
        let reporting = reporting(directory, sinks: [slow, quick])
        _ = reporting.launchReport
        let started = ContinuousClock.now
        let result = reporting.shutdown(timeout: .seconds(3))
        let took = started.duration(to: .now)
        XCTAssertEqual(result, CrashReporting.ShutdownResult(sentToSentry: true, sinksFinished: true))
        // At once: the quick sink's end began while the slow one's ran, not after it.
        let slowBegan = try XCTUnwrap(slow.endBegan), quickBegan = try XCTUnwrap(quick.endBegan)
        XCTAssertLessThan(abs((quickBegan - slowBegan) / .milliseconds(1)), 300, "the second sink waited for the first")
        XCTAssertLessThan(took, .milliseconds(1500), "shutdown took the sum of the sinks' ends")
        XCTAssertGreaterThanOrEqual(took, .milliseconds(790), "shutdown did not wait for the slow sink")
        // Then the run's end, once the sinks had theirs.
        let marker = try String(contentsOfFile: "\(directory)/runs/\(reporting.run.runID).run", encoding: .utf8)
        XCTAssertTrue(marker.contains("end=exited"), marker)
    }

    func testASinkStillEndingAtTheDeadlineIsUnfinishedAndHoldsShutdownNoLonger() throws {
        let directory = try Scratch.directory("end-stuck")
        let stuck = SlowEnd("stuck", takes: .seconds(5)), quick = SlowEnd("quick", takes: .milliseconds(10))
        let reporting = reporting(directory, sinks: [quick, stuck])
        _ = reporting.launchReport
        let started = ContinuousClock.now
        let result = reporting.shutdown(timeout: .milliseconds(500))
        let took = started.duration(to: .now)
        XCTAssertFalse(result.sinksFinished, "a sink still ending is not finished")
        XCTAssertLessThan(took, .milliseconds(1500), "shutdown waited for a sink past its deadline")
        let marker = try String(contentsOfFile: "\(directory)/runs/\(reporting.run.runID).run", encoding: .utf8)
        XCTAssertTrue(marker.contains("end=exited"), "the run still ended: \(marker)")
        // A second shutdown (as the exit hook after it) ends nothing again.
        let again = ContinuousClock.now
        _ = reporting.shutdown(timeout: .seconds(3))
        XCTAssertLessThan(again.duration(to: .now), .milliseconds(200))
    }

    /// A run that ends at once does not wait for its own marker: whichever comes first, the
    /// launch thread writing it or the end, the marker says `exited`, with this run's start and
    /// facts (the launch thread never writes its start over the end).
    func testARunThatEndsBeforeItsMarkerIsWrittenIsStillOneExitedRun() throws {
        let directory = try Scratch.directory("end-before-marker")
        for _ in 0..<20 {
            var configuration = CrashReporting.Configuration(recordDirectory: directory, appName: "end", appVersion: "1")
            configuration.captureCrashes = false   // no signal handlers in the test process
            configuration.sentryDSN = nil
            configuration.otlpLogsEndpoint = nil
            configuration.sentryRelease = "end@1+quick"
            let reporting = CrashReporting.start(configuration)
            reporting.shutdown(timeout: .seconds(3))
            let path = "\(directory)/runs/\(reporting.run.runID).run"
            let ended = try String(contentsOfFile: path, encoding: .utf8)
            // The launch thread, done since, left the end in place.
            XCTAssertEqual(reporting.launchReport.errors, [])
            XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), ended)
            guard case .success(let marker) = RunLedger.readMarker(path, runID: reporting.run.runID) else { return XCTFail(ended) }
            guard case .exited(_, let duration) = marker.end else { return XCTFail(ended) }
            XCTAssertGreaterThan(duration, 0)
            XCTAssertEqual(marker.start.runID, reporting.run.runID)
            XCTAssertEqual(marker.start.release, "end@1+quick")
            XCTAssertEqual(marker.start.process, .current)
        }
    }
}
