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
        configuration.sentry = nil
        configuration.otlp = nil
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
            // The release the marker keeps is Sentry's (nothing is sent: no records, no sessions).
            var sentry = SentryOptions(dsn: "http://key@127.0.0.1:9/1")
            sentry.release = "end@1+quick"
            sentry.sessions = false
            configuration.sentry = sentry
            configuration.otlp = nil
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

    /// A sink whose launch notes which thread ran it, and how often; `pause` holds its first phase.
    class LaunchNoting: CrashRecordSink, @unchecked Sendable {
        let id = RecordSinkID("noting")!
        let pause: Duration
        private let lock = NSLock()
        private var threads: [String] = []
        init(pause: Duration = .zero) { self.pause = pause }
        var launchedOn: [String] { lock.withLock { threads } }
        func prepareLaunch() -> String? {
            let thread = ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?")
                .trimmingCharacters(in: .newlines)
            lock.withLock { threads.append(thread) }
            if pause > .zero { Thread.sleep(forTimeInterval: Double(pause.components.seconds) + Double(pause.components.attoseconds) / 1e18) }
            return nil
        }
        func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult { .delivered }
    }
    /// The same, as a sink of this package's, whose launch is bounded.
    final class BoundedNoting: LaunchNoting, @unchecked Sendable {
        override init(pause: Duration = .zero) {
            BoundedLaunchSinks.register(BoundedNoting.self)
            super.init(pause: pause)
        }
    }

    /// A short program's end, when it comes before the launch thread has begun, runs the launch
    /// itself: once, whichever thread runs it, with the same outcome (the marker `exited`, the
    /// report complete).
    func testAShortProgramsLaunchRunsOnceOnWhicheverThreadComesFirst() throws {
        let directory = try Scratch.directory("end-runs-launch")
        var threads: [String] = []
        for _ in 0..<20 {
            let sink = BoundedNoting()
            let reporting = reporting(directory, sinks: [sink])
            reporting.shutdown(timeout: .seconds(3))
            XCTAssertEqual(reporting.launchReport.errors, [])
            Thread.sleep(forTimeInterval: 0.02)   // a launch thread that lost has returned by now
            XCTAssertEqual(sink.launchedOn.count, 1, "the launch ran once: \(sink.launchedOn)")
            threads += sink.launchedOn
            let path = "\(directory)/runs/\(reporting.run.runID).run"
            guard case .success(let marker) = RunLedger.readMarker(path, runID: reporting.run.runID),
                  case .exited = marker.end else { return XCTFail("no exited marker at \(path)") }
        }
        print("launches run by the end of the run: \(threads.filter { $0 != "CrashReporter.l" }.count) of \(threads.count)")
    }

    /// An app's own sink may block in its launch: the end of the run then never runs the launch
    /// itself, and waits for the launch thread no longer than its deadline.
    func testAnAppSinksSlowLaunchHoldsShutdownNoLongerThanItsDeadline() throws {
        let directory = try Scratch.directory("end-slow-launch")
        let sink = LaunchNoting(pause: .seconds(2))
        let reporting = reporting(directory, sinks: [sink])
        let started = ContinuousClock.now
        reporting.shutdown(timeout: .milliseconds(300))
        XCTAssertLessThan(started.duration(to: .now), .milliseconds(1500), "shutdown ran or waited for the app sink's launch")
        _ = reporting.launchReport
        XCTAssertEqual(sink.launchedOn, ["CrashReporter.l"], "on the launch thread only")
    }
}
