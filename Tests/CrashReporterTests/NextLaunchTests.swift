// NextLaunchTests.swift — the next launch, with real child processes (crash-harness emit): the
// record of a crashed run arrives as AppCrashed and its $AppEnd (and at Sentry), every end reason
// carries the same keys, and unreadable, partial and already-ingested records are handled once.
// (The tracker's own restarts, kills and two writers are SensorsTrackingTests' RestartTests.)
@testable import CrashReporter
@testable import SensorsAnalytics
import CrashRecordFormat
@testable import SensorsTracking
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
@testable import CrashReporterSentry
#endif

final class NextLaunchTests: XCTestCase {
    func testACrashRecordFromThePreviousRunArrivesAsAppCrashedAndAppEnd() throws {
        let directory = try Scratch.directory("crash")
        let store = directory + "/s.sqlite"
        let crashed = try Harness.emit(["--count", "5", "--store", store, "--crash-after", "2", "--run-id", "crashed-run"])
        XCTAssertEqual(crashed.ending, .signaled(SIGSEGV))
        let records = try FileManager.default.contentsOfDirectory(atPath: store + ".records").filter { $0.hasSuffix(".ccrec") }
        XCTAssertEqual(records.count, 1)
        let record = try CrashRecordReader.read(path: store + ".records/" + records[0])
        XCTAssertEqual(record.runID, "crashed-run")
        let recordedEnd = object(try XCTUnwrap(record.appEndJSON))

        let server = try TestHTTPServer()
        let next = try Harness.emit(["--count", "0", "--store", store, "--endpoint", server.url.absoluteString,
                                     "--retry-delay", "0.01", "--max-retry-delay", "0.05"])
        XCTAssertEqual(next.ending, .exited(0))
        let events = server.acceptedEvents
        let crashedRun = events.filter { $0.run == "crashed-run" }
        XCTAssertEqual(crashedRun.compactMap(\.seq), [0, 1, 2])
        let appCrashed = try XCTUnwrap(events.first { $0.event == "AppCrashed" })
        let reason = try XCTUnwrap(appCrashed.properties["app_crashed_reason"] as? String)
        XCTAssertTrue(reason.hasPrefix("SIGSEGV"), reason)
        XCTAssertTrue(reason.contains("#0 0x"), reason)
        XCTAssertEqual(appCrashed.properties["$crash_signal"] as? String, "SIGSEGV")
        XCTAssertEqual(appCrashed.properties["$crash_record"] as? String, records[0])
        XCTAssertEqual(appCrashed["distinct_id"] as? String, crashedRun.first?["distinct_id"] as? String)
        XCTAssertEqual(appCrashed.properties["$run_id"] as? String, "crashed-run")
        // Exactly one $AppEnd for the crashed run: the record's compensating one, not a synthesized one.
        let ends = events.filter { $0.event == "$AppEnd" && $0.properties["$run_id"] as? String == "crashed-run" }
        XCTAssertEqual(ends.count, 1)
        XCTAssertEqual(ends.first?.properties["$app_crashed"] as? Bool, true)
        XCTAssertEqual(ends.first?.properties["$app_end_reason"] as? String, "crash")
        XCTAssertEqual(ends.first?.trackID, recordedEnd["_track_id"] as? String)
        XCTAssertLessThan(events.firstIndex { $0.event == "AppCrashed" }!, events.firstIndex { $0.event == "$AppEnd" && $0.properties["$app_crashed"] as? Bool == true }!)
        // The record is gone only now that its events are stored; the store is drained.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: store + ".records").sorted(), [RecordFileName.crashLoopState, "runs"])
        XCTAssertEqual(try TrackingStore.inspect(path: store).0.pending, 0)
        XCTAssertEqual(try TrackingStore.inspect(path: store).0.runMarkers, 0)
    }

    /// A login and a super property set after start reach the crash's `$AppEnd`: the tracker
    /// republishes the template when the context changes.
    func testTheCrashAppEndFollowsLoginAndSuperPropertiesSetAfterStart() throws {
        let directory = try Scratch.directory("republish")
        let store = directory + "/s.sqlite"
        XCTAssertEqual(try Harness.emit(["--count", "1", "--store", store, "--crash-after", "0", "--run-id", "r1",
                                         "--login", "user-9", "--super-property", "tier=gold"]).ending, .signaled(SIGSEGV))
        let name = try XCTUnwrap(try RecordFileName.names(in: store + ".records").first)
        let record = try CrashRecordReader.read(path: store + ".records/" + name)
        let end = object(try XCTUnwrap(record.appEndJSON))
        XCTAssertEqual(end["login_id"] as? String, "user-9")
        XCTAssertEqual(end["distinct_id"] as? String, "user-9")
        XCTAssertNotNil(end["anonymous_id"] as? String)
        XCTAssertEqual(end.properties["tier"] as? String, "gold")
        XCTAssertEqual(end.properties["$run_id"] as? String, "r1")
    }

    /// With `SENTRY_DSN` set, the next launch sends the crashed run's record to Sentry as an
    /// envelope that Sentry's own parser and Relay's normalizer accept, with the record attached
    /// minimised (byte for byte what the redaction makes of it), beside the unchanged `/sa` events; the
    /// record is deleted only after both.
    func testWithSentryDSNTheNextLaunchSendsTheRecordAsAnEnvelopeSentryAccepts() throws {
        let directory = try Scratch.directory("sentry-e2e")
        let store = directory + "/s.sqlite"
        XCTAssertEqual(try Harness.emit(["--count", "2", "--store", store, "--crash-after", "1", "--run-id", "sentry-run"]).ending,
                       .signaled(SIGSEGV))
        let name = try XCTUnwrap(try RecordFileName.names(in: store + ".records").first)
        let recordBytes = try Data(contentsOf: URL(fileURLWithPath: store + ".records/" + name))

        let sensors = try TestHTTPServer()
        let sentry = try TestHTTPServer()
        let dsn = "http://0123456789abcdef@127.0.0.1:\(sentry.port)/42"
        let next = try Harness.emit(["--count", "0", "--store", store, "--endpoint", sensors.url.absoluteString,
                                     "--retry-delay", "0.01", "--max-retry-delay", "0.05"], environment: ["SENTRY_DSN": dsn])
        XCTAssertEqual(next.ending, .exited(0))
        // /sa: unchanged (AppCrashed and the crash $AppEnd of the run).
        XCTAssertTrue(sensors.acceptedEvents.contains { $0.event == "AppCrashed" && $0.properties["$run_id"] as? String == "sentry-run" })
        // Sentry: one envelope, to the project's endpoint, authenticated.
        let requests = sentry.allRequests
        XCTAssertEqual(requests.count, 1)
        let request = try XCTUnwrap(requests.first)
        XCTAssertEqual(request.path, "/api/42/envelope/")
        XCTAssertTrue(request.headers["x-sentry-auth"]?.contains("sentry_key=0123456789abcdef") == true)
        let envelopePath = directory + "/sent.envelope"
        try Data(request.bodyBytes).write(to: URL(fileURLWithPath: envelopePath))
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try Oracles.run("sentry_check.py", [envelopePath]).utf8))
            as? [String: Any])
        XCTAssertEqual((summary["errors"] as? [Any])?.count ?? 0, 0, "\(summary["errors"] ?? "")")
        let items = try XCTUnwrap(summary["items"] as? [[String: Any]])
        let attachment = try XCTUnwrap(items.first { $0["type"] as? String == "attachment" })
        // The record minimised as the default CrashDataPolicy says (CrashReporter.docc, "What leaves the
        // machine"), byte for byte what the redaction makes of the file on disk.
        let minimised = RecordRedaction().apply(to: [UInt8](recordBytes))
        XCTAssertLessThan(minimised.count, recordBytes.count)
        XCTAssertEqual(attachment["length"] as? Int, minimised.count)
        let copy = directory + "/record-before-upload"
        try Data(minimised).write(to: URL(fileURLWithPath: copy))
        let sha = try Tools.output(try XCTUnwrap(Tools.find("sha256sum")), [copy]).split(separator: " ").first.map(String.init)
        XCTAssertEqual(attachment["sha256"] as? String, sha, "the minimised record attached byte for byte")
        let normalized = try XCTUnwrap(summary["normalized"] as? [String: Any])
        let exception = try XCTUnwrap(((normalized["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
        XCTAssertEqual(((exception["mechanism"] as? [String: Any])?["meta"] as? [String: Any]).flatMap { ($0["signal"] as? [String: Any])?["name"] as? String },
                       "SIGSEGV")
        let os = try XCTUnwrap((normalized["contexts"] as? [String: Any])?["os"] as? [String: Any])
        XCTAssertNotNil(os["distribution_name"], "the next launch runs on the machine that crashed: os-release is sent")
        // Both sinks have it: the file is gone (the installation's id stays, for Sentry's sessions).
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: store + ".records").sorted(), ["installation-id", RecordFileName.crashLoopState, "runs"])
    }

    /// Every way a run ends gives a `$AppEnd` with the same members and property keys: a normal
    /// shutdown, a crash (the handler's `$AppEnd` from the template), a crash whose record was cut
    /// before its `$AppEnd` (made at the next launch) and a SIGKILL (abnormal, from the marker).
    /// Each carries the super properties and identity the run had, and `AppCrashed` carries them
    /// too — with the tracker's optional presets (`includeHostInfo`) on, so those are checked as well.
    func testEveryEndReasonCarriesTheSameKeys() throws {
        let directory = try Scratch.directory("same-keys")
        let store = directory + "/s.sqlite"
        let records = store + ".records"
        // Login and super properties persist in the store; every later run has them.
        XCTAssertEqual(try Harness.emit(["--count", "1", "--store", store, "--host-info", "--run-id", "normal-run",
                                         "--login", "user-7", "--super-property", "plan=pro"]).ending, .exited(0))
        XCTAssertEqual(try Harness.emit(["--count", "2", "--store", store, "--host-info", "--crash-after", "1", "--run-id", "crash-run"]).ending,
                       .signaled(SIGSEGV))
        // The next launch ingests crash-run's record; then it crashes too, and its record is cut
        // after the PROCESS section (before the $AppEnd and the run id), as a full disk would.
        XCTAssertEqual(try Harness.emit(["--count", "2", "--store", store, "--host-info", "--crash-after", "1", "--run-id", "cut-run"]).ending,
                       .signaled(SIGSEGV))
        let cutName = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: records).first { $0.hasSuffix(".ccrec") })
        let cutPath = records + "/" + cutName
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: cutPath)))
        var offset = 32
        for _ in 0..<2 { // CRASH, PROCESS
            let length = Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]) << 16 | Int(bytes[offset + 7]) << 24
            offset += 8 + length + 4
        }
        bytes.removeSubrange(offset...)
        try Data(bytes).write(to: URL(fileURLWithPath: cutPath))
        let cut = try CrashRecordReader.read(path: cutPath)
        XCTAssertNil(cut.appEndJSON)
        XCTAssertNil(cut.runID)
        // Killed: its marker is all that is left.
        let ready = directory + "/ready"
        let killed = try Harness.spawnEmit(["--count", "1", "--store", store, "--host-info", "--run-id", "killed-run", "--ready-file", ready, "--hold"])
        XCTAssertTrue(Harness.waitForFile(ready))
        kill(killed.pid, SIGKILL)
        XCTAssertEqual(killed.wait().ending, .signaled(SIGKILL))
        XCTAssertEqual(try Harness.emit(["--count", "0", "--store", store, "--host-info", "--run-id", "last-run"]).ending, .exited(0))

        let events = try storedObjects(store)
        let ends = Dictionary(events.filter { $0.event == "$AppEnd" }.map { ($0.properties["$run_id"] as? String ?? "?", $0) },
                              uniquingKeysWith: { first, _ in first })
        let expected = ["normal-run": "normal", "crash-run": "crash", "cut-run": "crash", "killed-run": "abnormal", "last-run": "normal"]
        XCTAssertEqual(Set(ends.keys), Set(expected.keys))
        let reference = try XCTUnwrap(ends["last-run"])
        let referenceProperties = Set(reference.properties.keys)
        XCTAssertTrue(referenceProperties.isSuperset(of: ["$event_duration", "$app_end_reason", "$app_crashed", "$run_id",
                                                          "$os", "$cpu_count", "$lib", "plan", "$hostname", "$user"]))
        for (run, reason) in expected {
            let end = try XCTUnwrap(ends[run], run)
            XCTAssertEqual(end.properties["$app_end_reason"] as? String, reason, run)
            XCTAssertEqual(end.properties["$app_crashed"] as? Bool, reason == "crash", run)
            XCTAssertEqual(Set(end.keys), Set(reference.keys), run)
            XCTAssertEqual(Set(end.properties.keys), referenceProperties, run)
            XCTAssertEqual(end.properties["plan"] as? String, "pro", run)
            XCTAssertEqual(end["login_id"] as? String, "user-7", run)
        }
        let crashes = events.filter { $0.event == "AppCrashed" }
        XCTAssertEqual(Set(crashes.compactMap { $0.properties["$run_id"] as? String }), ["crash-run", "cut-run"])
        for crash in crashes {
            XCTAssertEqual(crash.properties["plan"] as? String, "pro")
            XCTAssertEqual(crash["login_id"] as? String, "user-7")
        }
    }

    func testAnUnreadableRecordStillArrivesAsAppCrashedAndIsDeleted() throws {
        let directory = try Scratch.directory("garbage-record")
        let records = directory + "/records"
        try FileManager.default.createDirectory(atPath: records, withIntermediateDirectories: true)
        let name = "crash-1700000000000-999999-999999.ccrec"
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: records + "/" + name))
        let store = try TrackingStore(path: directory + "/s.sqlite")
        let report = SensorsAnalytics.pass(in: records, store: store, appName: "t", appVersion: "1", sinks: [])
        XCTAssertEqual(report.recordsUnreadable, [name])
        let crashed = try XCTUnwrap(try store.pendingBatch(limit: 10).first)
        XCTAssertEqual(crashed.event, "AppCrashed")
        XCTAssertEqual(crashed.priority, .crash)
        XCTAssertFalse(FileManager.default.fileExists(atPath: records + "/" + name))
    }

    /// A `.partial` record is left alone only while its writer may still be at work: a live
    /// process with its pid that started before the record's time. A live process that started
    /// after it has reused the pid (kill(pid, 0) alone would be fooled), so the record is ingested.
    func testAPartialRecordIsLeftOnlyWhileItsWriterCanBeAlive() throws {
        let directory = try Scratch.directory("partial-liveness")
        let records = directory + "/records"
        try FileManager.default.createDirectory(atPath: records, withIntermediateDirectories: true)
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["30"]
        try sleeper.run()
        defer { sleeper.terminate(); sleeper.waitUntilExit() }
        let pid = sleeper.processIdentifier
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        // Written "a minute ago" by this pid: the live sleeper started after it, so it is not the writer.
        let reused = "crash-\(now - 60_000)-\(pid)-\(pid).ccrec.partial"
        // Written "now" (after the sleeper started): the sleeper may be its writer.
        let live = "crash-\(now + 100)-\(pid)-\(pid).ccrec.partial"
        for name in [reused, live] { try Data("torn".utf8).write(to: URL(fileURLWithPath: records + "/" + name)) }
        let store = try TrackingStore(path: directory + "/s.sqlite")
        let report = SensorsAnalytics.pass(in: records, store: store, appName: "t", appVersion: "1", sinks: [])
        XCTAssertEqual(report.recordsInProgress, [live])
        XCTAssertEqual(report.recordsUnreadable, [reused])
        XCTAssertTrue(FileManager.default.fileExists(atPath: records + "/" + live))
        XCTAssertFalse(FileManager.default.fileExists(atPath: records + "/" + reused))
        XCTAssertTrue(RecordFileName(live)!.writerMayBeRunning)
        XCTAssertFalse(RecordFileName(reused)!.writerMayBeRunning)
        XCTAssertFalse(RecordFileName(live.replacingOccurrences(of: ".partial", with: ""))!.writerMayBeRunning, "a complete record is written")
    }

    func testARecordAlreadyIngestedIsNotIngestedTwice() throws {
        let directory = try Scratch.directory("twice")
        let store = directory + "/s.sqlite"
        XCTAssertEqual(try Harness.emit(["--count", "1", "--store", store, "--crash-after", "0"]).ending, .signaled(SIGSEGV))
        let recordDirectory = store + ".records"
        let name = try XCTUnwrap(try RecordFileName.names(in: recordDirectory).first)
        let copy = try Data(contentsOf: URL(fileURLWithPath: recordDirectory + "/" + name))
        let tracking = try TrackingStore(path: store)
        let first = SensorsAnalytics.pass(in: recordDirectory, store: tracking, appName: "t", appVersion: "1", sinks: [])
        XCTAssertEqual(first.recordsIngested, [name])
        // As if the process died between commit and unlink: the file comes back.
        try copy.write(to: URL(fileURLWithPath: recordDirectory + "/" + name))
        let second = SensorsAnalytics.pass(in: recordDirectory, store: tracking, appName: "t", appVersion: "1", sinks: [])
        XCTAssertEqual(second.recordsAlreadyIngested, [name])
        XCTAssertEqual(try tracking.pendingBatch(limit: 100).filter { $0.event == "AppCrashed" }.count, 1)
        XCTAssertEqual(try tracking.runMarkers(), [])
    }
}

/// The store's pending events as JSON objects, oldest first.
func storedObjects(_ path: String) throws -> [[String: Any]] {
    let store = try TrackingStore(path: path)
    defer { store.close() }
    return try store.pendingBatch(limit: 100_000).map { object($0.json) }
}

extension SensorsAnalytics {
    /// What ``pass(in:store:appName:appVersion:sinks:)`` did: the inbox's report and the events sink's.
    struct Pass: Sendable, Equatable {
        var recordsDelivered: [String]
        var recordsAwaitingSinks: [String]
        var recordsInProgress: [String]
        var recordsUnreadable: [String]
        var recordsIngested: [String]
        var recordsAlreadyIngested: [String]
        var errors: [String]
    }

    /// One inbox pass over `directory` with the events sink over `store` first, then `sinks`:
    /// the records' part of a launch, without a tracker.
    static func pass(in directory: String, store: TrackingStore, appName: String, appVersion: String,
                             sinks: [any CrashRecordSink]) -> Pass {
        let events = EventsSink(store: store, appName: appName, appVersion: appVersion)
        let launch = CrashReporting.deliverRecords(in: directory, sinks: [events] + sinks)
        events.pruneClaims(keeping: Set((try? RecordFileName.names(in: directory)) ?? []))
        return Pass(recordsDelivered: launch.recordsDelivered, recordsAwaitingSinks: launch.recordsAwaitingSinks,
                    recordsInProgress: launch.recordsInProgress, recordsUnreadable: launch.recordsUnreadable,
                    recordsIngested: events.report.recordsIngested, recordsAlreadyIngested: events.report.recordsAlreadyIngested,
                    errors: launch.errors)
    }
}
