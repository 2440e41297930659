// HangRecordSinkTests.swift — a hang record in the reporter's sinks, other than Sentry's event
// (CrashSentryTests' SentryHangTests): it ends no run (the inbox hands no run to the ledger and the
// Sentry sink files no session), OTLP says `app.hang` at WARN, and the analytics store gets one
// `AppHang` event and no `$AppEnd`.
import CrashCapture
@testable import CrashReporter
import CrashOTLP
import CrashRecordFormat
import Foundation
import ProcessSpawning
import SensorsAnalytics
@testable import SensorsTracking
import TestSupport
import XCTest
@testable import CrashReporterSentry

/// A hang record of the debug harness (the cooperative pool starved 2 s, threshold 1 s) with run
/// id `run`, written into `directory`, which holds no other record.
func harnessHangRecord(run: String, in directory: String) throws -> String {
    var environment = ProcessInfo.processInfo.environment
    environment[HangDetection.environmentVariable] = nil
    let child = try ChildProcess.run(BuiltProducts.harness, ["hang", "--mode", "pool", "--threshold", "1", "--block", "2",
                                                             "--dir", directory, "--run-id", run],
                                     environment: environment, timeout: 120)
    XCTAssertEqual(child.ending, .exited(0))
    let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".ccrec") }
    XCTAssertEqual(names.count, 1, "\(names)")
    return directory + "/" + (try XCTUnwrap(names.first))
}

final class HangRecordSinkTests: XCTestCase {
    /// A hang record of the debug harness with run id `run`, in a directory of its own.
    func hangRecord(run: String) throws -> (directory: String, path: String) {
        let directory = try Scratch.directory("hang-sinks")
        return (directory, try harnessHangRecord(run: run, in: directory))
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

    func testAHangEndsNoRunIsWarnInOTLPAndAppHangInTheAnalytics() throws {
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

        // The inbox (with the analytics' events sink): one AppHang, no $AppEnd, no run handed on.
        let store = try TrackingStore(path: directory + "/events.sqlite")
        let pass = SensorsAnalytics.pass(in: directory, store: store, appName: "t", appVersion: "1", sinks: [])
        XCTAssertEqual(pass.errors, [])
        XCTAssertEqual(pass.recordsIngested, [(path as NSString).lastPathComponent])
        let events = try store.pendingBatch(limit: 100)
        XCTAssertEqual(events.map(\.event), ["AppHang"])
        let properties = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(XCTUnwrap(events.first).json.utf8)) as? [String: Any])?["properties"] as? [String: Any])
        XCTAssertEqual(properties["$hang_detector"] as? String, "cooperative_pool")
        XCTAssertEqual(properties["$run_id"] as? String, "hang-run-1")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "delivered to its only sink: deleted")

        // The inbox's report: a hang tells the ledger nothing about how its run ended.
        let (again, second) = try hangRecord(run: "hang-run-2")
        let report = RecordInbox(directory: again, sinks: []).pass()
        XCTAssertEqual(report.recordRuns, [:], "a hang record taken for its run's end")
        _ = second
    }
}
