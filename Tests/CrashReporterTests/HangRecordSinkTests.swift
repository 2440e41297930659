// HangRecordSinkTests.swift — a hang record in the reporter's sinks, other than Sentry's event
// (CrashSentryTests' SentryHangTests): it ends no run (the inbox hands no run to the ledger and the
// Sentry sink files no session), OTLP says `app.hang` at WARN, and a sink is given it like any
// record. (The analytics' `AppHang` event: SensorsAnalyticsTests' NextLaunchEventsTests.)
import CrashCapture
@testable import CrashReporter
import CrashOTLP
import CrashRecordFormat
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
@testable import CrashReporterSentry

final class HangRecordSinkTests: XCTestCase {
    /// A hang record of the debug harness with run id `run`, in a directory of its own.
    func hangRecord(run: String) throws -> (directory: String, path: String) {
        let directory = try Scratch.directory("hang-sinks")
        return (directory, try Harness.hangRecord(run: run, in: directory))
    }

    /// A computing stall (the pool's threads spin 2 s): OTLP says where its sampled threads most
    /// often were, and that the threads used the CPU through the stall.
    func testAComputingHangSaysWhereTheTimeWentInOTLP() throws {
        let directory = try Scratch.directory("hang-sinks-busy")
        var environment = ProcessInfo.processInfo.environment
        environment[HangDetection.environmentVariable] = nil
        let child = try ChildProcess.run(BuiltProducts.harness, ["hang", "--mode", "pool", "--busy", "--threshold", "1", "--block", "2",
                                                                 "--waiting", "0", "--dir", directory], environment: environment, timeout: 120)
        XCTAssertEqual(child.ending, .exited(0))
        let name = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasSuffix(".ccrec") })
        let record = try CrashRecordReader.read(path: directory + "/" + name)
        let log = CrashLogRecord.logRecord(record: record, fileName: name, observedNanoseconds: 1)
        XCTAssertTrue(log.attributes.contains(OTLPAttribute("hang.stall", .string("computing"))))
        guard case .array(let hot)? = log.attributes.first(where: { $0.key == "hang.hot_frames" })?.value,
              case .string(let hottest)? = hot.first else {
            return XCTFail("no hang.hot_frames: \(log.attributes.map(\.key))")
        }
        XCTAssertTrue(hottest.contains("busyCall"), hottest)
        guard case .int(let span)? = log.attributes.first(where: { $0.key == "hang.stall_cpu_span_ms" })?.value,
              case .int(let used)? = log.attributes.first(where: { $0.key == "hang.stall_cpu_ms" })?.value else {
            return XCTFail("no stall CPU: \(log.attributes.map(\.key))")
        }
        XCTAssertGreaterThanOrEqual(used * 2, span, "the pool's threads computed through the stall: \(used) ms in \(span) ms")
    }

    func testAHangEndsNoRunAndIsWarnInOTLP() throws {
        let (directory, path) = try hangRecord(run: "hang-run-1")
        let record = try CrashRecordReader.read(path: path)
        XCTAssertEqual(record.kind, .hang)
        XCTAssertEqual(record.runID, "hang-run-1")

        // The Sentry sink files no session with it: the run goes on.
        let dsn = try XCTUnwrap(SentryDSN("http://key@127.0.0.1:9/1"))
        XCTAssertNil(SentrySink(dsn: dsn, data: CrashDataPolicy(), recordDirectory: directory).runOf(record, start: nil).session)

        // OTLP: not FATAL.
        let log = CrashLogRecord.logRecord(record: record, fileName: (path as NSString).lastPathComponent, observedNanoseconds: 1)
        XCTAssertEqual(log.eventName, "app.hang")
        XCTAssertEqual(log.severityNumber, 13)
        XCTAssertEqual(log.severityText, "WARN")
        XCTAssertTrue(log.attributes.contains(OTLPAttribute("hang.detector", .string("cooperative_pool"))), "\(log.attributes.map(\.key))")
        XCTAssertTrue(log.attributes.contains { $0.key == "exception.type" && $0.value == .string("Hang") })
        // A waiting stall: what the threads used since it began (little), over at least the threshold; no samples.
        guard case .int(let span)? = log.attributes.first(where: { $0.key == "hang.stall_cpu_span_ms" })?.value else {
            return XCTFail("no hang.stall_cpu_span_ms: \(log.attributes.map(\.key))")
        }
        XCTAssertGreaterThanOrEqual(span, 1000)
        XCTAssertFalse(log.attributes.contains { $0.key == "hang.hot_frames" }, "a waiting stall is not sampled")

        // The inbox: the record to its sink, read as a hang of its run; the ledger told nothing
        // about how the run ended.
        let sink = RecordingSink("app")
        let report = RecordInbox(directory: directory, sinks: [sink]).pass()
        XCTAssertEqual(report.errors, [])
        XCTAssertEqual(sink.names, [(path as NSString).lastPathComponent])
        let taken = try XCTUnwrap(sink.records.first).record.get()
        XCTAssertEqual(taken.kind, .hang)
        XCTAssertEqual(taken.runID, "hang-run-1")
        XCTAssertEqual(report.recordRuns, [:], "a hang record taken for its run's end")
        XCTAssertEqual(report.recordsDelivered, [(path as NSString).lastPathComponent])
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "delivered to its only sink: deleted")
    }
}
