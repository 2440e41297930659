// NextLaunchEventsTests.swift — the next launch as the analytics sees it, with real child processes
// (crash-harness emit, deliver, hang): the record of a crashed run arrives as AppCrashed and its
// $AppEnd, every end reason carries the same keys, a killed run's $AppEnd lasts until the ledger
// last saw it, a hang is an AppHang and ends no run, and unreadable and already-ingested records
// are stored once. (The tracker's own restarts, kills and two writers are SensorsTrackingTests'
// RestartTests; the reporter's part, with a recording sink, CrashReporterTests.)
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
#endif

final class NextLaunchEventsTests: XCTestCase {
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
        let report = SensorsAnalytics.pass(in: records, store: store, appName: "t", appVersion: "1")
        XCTAssertEqual(report.recordsUnreadable, [name])
        let crashed = try XCTUnwrap(try store.pendingBatch(limit: 10).first)
        XCTAssertEqual(crashed.event, "AppCrashed")
        XCTAssertEqual(crashed.priority, .crash)
        XCTAssertFalse(FileManager.default.fileExists(atPath: records + "/" + name))
    }

    func testARecordAlreadyIngestedIsNotIngestedTwice() throws {
        let directory = try Scratch.directory("twice")
        let store = directory + "/s.sqlite"
        XCTAssertEqual(try Harness.emit(["--count", "1", "--store", store, "--crash-after", "0"]).ending, .signaled(SIGSEGV))
        let recordDirectory = store + ".records"
        let name = try XCTUnwrap(try RecordFileName.names(in: recordDirectory).first)
        let copy = try Data(contentsOf: URL(fileURLWithPath: recordDirectory + "/" + name))
        let tracking = try TrackingStore(path: store)
        let first = SensorsAnalytics.pass(in: recordDirectory, store: tracking, appName: "t", appVersion: "1")
        XCTAssertEqual(first.recordsIngested, [name])
        // As if the process died between commit and unlink: the file comes back.
        try copy.write(to: URL(fileURLWithPath: recordDirectory + "/" + name))
        let second = SensorsAnalytics.pass(in: recordDirectory, store: tracking, appName: "t", appVersion: "1")
        XCTAssertEqual(second.recordsAlreadyIngested, [name])
        XCTAssertEqual(try tracking.pendingBatch(limit: 100).filter { $0.event == "AppCrashed" }.count, 1)
        XCTAssertEqual(try tracking.runMarkers(), [])
    }

    /// A run SIGKILLed after about 5 s lasted as long as the run ledger last saw it alive (its
    /// marker's sighting, every 2 s): its `$AppEnd` (`abnormal`) carries that duration, and that
    /// time — the one sighting the ledger told every sink (a recording sink beside it got the
    /// same; Sentry's session too: CrashReporterSentryTests' SentrySessionsTests), not a clock the
    /// analytics keeps itself.
    func testAKilledRunsAppEndLastsUntilTheLedgerLastSawIt() throws {
        let directory = try Scratch.directory("killed-run-app-end")
        let records = directory + "/records", store = directory + "/events.sqlite", recorded = directory + "/recorded"
        let sinks = ["--records", records, "--store", store, "--recording-sink", recorded]
        let ready = directory + "/ready"
        let started = Date()
        let held = try ChildProcess.start(Harness.path, ["deliver"] + sinks + ["--run-id", "killed", "--end", "hold", "--ready-file", ready],
                                          environment: Harness.environment)
        XCTAssertTrue(Harness.waitForFile(ready))
        Thread.sleep(forTimeInterval: 5.2)
        kill(held.pid, SIGKILL)
        XCTAssertEqual(held.wait(timeout: 30).ending, .signaled(SIGKILL))
        let lived = Date().timeIntervalSince(started)
        let next = try ChildProcess.run(Harness.path, ["deliver"] + sinks + ["--run-id", "next"], environment: Harness.environment, timeout: 120)
        XCTAssertEqual(next.ending, .exited(0))

        let ends = try storedObjects(store).filter { $0.event == "$AppEnd" && $0.properties["$run_id"] as? String == "killed" }
        XCTAssertEqual(ends.count, 1)
        let properties = try XCTUnwrap(ends.first).properties
        XCTAssertEqual(properties["$app_end_reason"] as? String, "abnormal")
        // Sightings every 2 s (0.5 s leeway): the last one at least 3 s in, never after the kill.
        let eventDuration = try XCTUnwrap(properties["$event_duration"] as? Double)
        XCTAssertGreaterThanOrEqual(eventDuration, 3.0)
        XCTAssertLessThanOrEqual(eventDuration, lived)
        let killed = try Harness.recorded(recorded).runs.filter { $0["run"] as? String == "killed" }
        XCTAssertEqual(killed.count, 1)
        let told = try XCTUnwrap(killed.first?["lastSeenDurationMilliseconds"] as? Int)
        XCTAssertEqual(eventDuration, Double(told) / 1000, accuracy: 0.002, "one sighting, told to both")
        // Its time is the sighting's: its start plus its duration.
        let time = try XCTUnwrap(ends.first?["time"] as? Int)
        XCTAssertEqual(Double(time) / 1000, started.timeIntervalSince1970 + eventDuration, accuracy: 1.0)
    }

    /// A hang record (the harness's cooperative pool starved) becomes one `AppHang` of its run,
    /// naming its detector, and no `$AppEnd`: the run goes on. Its only sink has it: it is deleted.
    func testAHangRecordIsOneAppHangAndNoAppEnd() throws {
        let directory = try Scratch.directory("hang-events")
        let path = try Harness.hangRecord(run: "hang-run-1", in: directory)
        let store = try TrackingStore(path: directory + "/events.sqlite")
        let pass = SensorsAnalytics.pass(in: directory, store: store, appName: "t", appVersion: "1")
        XCTAssertEqual(pass.errors, [])
        XCTAssertEqual(pass.recordsIngested, [(path as NSString).lastPathComponent])
        let events = try store.pendingBatch(limit: 100)
        XCTAssertEqual(events.map(\.event), ["AppHang"])
        let properties = object(try XCTUnwrap(events.first).json).properties
        XCTAssertEqual(properties["$hang_detector"] as? String, "cooperative_pool")
        XCTAssertEqual(properties["$run_id"] as? String, "hang-run-1")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "delivered to its only sink: deleted")
    }
}
