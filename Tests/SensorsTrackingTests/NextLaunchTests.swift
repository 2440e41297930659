// NextLaunchTests.swift — real child processes (crash-harness emit): crashes, SIGKILLs, restarts, two writers.
@testable import CrashReporter
import CrashRecordFormat
@testable import SensorsTracking
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class NextLaunchTests: XCTestCase {
    func storedObjects(_ path: String) throws -> [[String: Any]] {
        let store = try TrackingStore(path: path)
        defer { store.close() }
        return try store.pendingBatch(limit: 100_000).map { object($0.json) }
    }

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
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: store + ".records"), [])
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
        let name = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: store + ".records").first)
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
    /// byte for byte, beside the unchanged `/sa` events; the record is deleted only after both.
    func testWithSentryDSNTheNextLaunchSendsTheRecordAsAnEnvelopeSentryAccepts() throws {
        let directory = try Scratch.directory("sentry-e2e")
        let store = directory + "/s.sqlite"
        XCTAssertEqual(try Harness.emit(["--count", "2", "--store", store, "--crash-after", "1", "--run-id", "sentry-run"]).ending,
                       .signaled(SIGSEGV))
        let name = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: store + ".records").first)
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
        XCTAssertEqual(attachment["length"] as? Int, recordBytes.count)
        let copy = directory + "/record-before-upload"
        try recordBytes.write(to: URL(fileURLWithPath: copy))
        let sha = try Tools.output(try XCTUnwrap(Tools.find("sha256sum")), [copy]).split(separator: " ").first.map(String.init)
        XCTAssertEqual(attachment["sha256"] as? String, sha, "the record attached byte for byte")
        let normalized = try XCTUnwrap(summary["normalized"] as? [String: Any])
        let exception = try XCTUnwrap(((normalized["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
        XCTAssertEqual(((exception["mechanism"] as? [String: Any])?["meta"] as? [String: Any]).flatMap { ($0["signal"] as? [String: Any])?["name"] as? String },
                       "SIGSEGV")
        let os = try XCTUnwrap((normalized["contexts"] as? [String: Any])?["os"] as? [String: Any])
        XCTAssertNotNil(os["distribution_name"], "the next launch runs on the machine that crashed: os-release is sent")
        // Both sinks have it: the file is gone.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: store + ".records"), [])
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

    func testARunKilledWithSIGKILLGetsAnAbnormalAppEndOnTheNextLaunch() throws {
        let directory = try Scratch.directory("sigkill")
        let store = directory + "/s.sqlite"
        let ready = directory + "/ready"
        let child = try Harness.spawnEmit(["--count", "3", "--store", store, "--run-id", "killed-run", "--ready-file", ready, "--hold"])
        XCTAssertTrue(Harness.waitForFile(ready))
        kill(child.pid, SIGKILL)
        XCTAssertEqual(child.wait().ending, .signaled(SIGKILL))

        let next = try Harness.emit(["--count", "0", "--store", store])
        XCTAssertEqual(next.ending, .exited(0))
        let events = try storedObjects(store)
        XCTAssertEqual(events.filter { $0.run == "killed-run" }.compactMap(\.seq), [0, 1, 2])
        let ends = events.filter { $0.event == "$AppEnd" && $0.properties["$run_id"] as? String == "killed-run" }
        XCTAssertEqual(ends.count, 1)
        let end = try XCTUnwrap(ends.first)
        XCTAssertEqual(end.properties["$app_end_reason"] as? String, "abnormal")
        XCTAssertEqual(end.properties["$app_crashed"] as? Bool, false)
        XCTAssertNotNil(end.properties["$event_duration"] as? NSNumber)
        XCTAssertFalse(events.contains { $0.event == "AppCrashed" })
        // A third launch reports nothing more.
        XCTAssertEqual(try Harness.emit(["--count", "0", "--store", store]).ending, .exited(0))
        let again = try storedObjects(store)
        XCTAssertEqual(again.filter { $0.event == "$AppEnd" && $0.properties["$app_end_reason"] as? String == "abnormal" }.count, 1)
    }

    func testAProcessThatExitsWithoutShutdownEndsItsRunNormallyNotAbnormally() throws {
        let directory = try Scratch.directory("exit-without-shutdown")
        let store = directory + "/s.sqlite"
        let first = try Harness.emit(["--count", "3", "--store", store, "--run-id", "exiting-run", "--exit-without-shutdown"])
        XCTAssertEqual(first.ending, .exited(0))
        // The exit hook stored everything and a normal $AppEnd, and removed the run's marker.
        let events = try storedObjects(store)
        XCTAssertEqual(events.filter { $0.run == "exiting-run" }.compactMap(\.seq), [0, 1, 2])
        let ends = events.filter { $0.event == "$AppEnd" && $0.properties["$run_id"] as? String == "exiting-run" }
        XCTAssertEqual(ends.count, 1)
        XCTAssertEqual(ends.first?.properties["$app_end_reason"] as? String, "normal")
        // The next launch finds no dead run to report.
        XCTAssertEqual(try Harness.emit(["--count", "0", "--store", store]).ending, .exited(0))
        let after = try storedObjects(store)
        XCTAssertFalse(after.contains { $0.event == "$AppEnd" && $0.properties["$app_end_reason"] as? String == "abnormal" })
        XCTAssertEqual(after.filter { $0.event == "$AppEnd" && $0.properties["$run_id"] as? String == "exiting-run" }.count, 1)
    }

    func testTheUploaderKilledAtRandomMomentsLosesNothingAndRepeatsKeepTheirTrackID() throws {
        let directory = try Scratch.directory("killloop")
        let store = directory + "/s.sqlite"
        // A backlog committed by a run without endpoint.
        XCTAssertEqual(try Harness.emit(["--count", "300", "--store", store, "--run-id", "backlog"]).ending, .exited(0))
        // Restarted many times and SIGKILLed at random moments while it tracks and uploads.
        let server = try TestHTTPServer { request in
            // Slow the server a little so kills land between send and delete too.
            usleep(UInt32(request.index % 4) * 2000)
            return .status(200)
        }
        var generator = SeededGenerator(seed: 0x5EED)
        var killed: [String] = []
        var completed: [String] = []
        let iterations = 20
        for index in 0..<iterations {
            let run = "run-\(index)"
            let delay = Double.random(in: 0.01...0.25, using: &generator)
            let child = try Harness.emit(["--count", "200", "--store", store, "--endpoint", server.url.absoluteString,
                                          "--run-id", run, "--retry-delay", "0.01", "--max-retry-delay", "0.05"], timeout: delay)
            switch child.ending {
            case .timedOut: killed.append(run)
            case .exited(0): completed.append(run)
            default: XCTFail("\(run) ended \(child.ending)")
            }
        }
        let final = try Harness.emit(["--count", "0", "--store", store, "--endpoint", server.url.absoluteString, "--run-id", "final",
                                      "--retry-delay", "0.01", "--max-retry-delay", "0.05"])
        XCTAssertEqual(final.ending, .exited(0))
        XCTAssertFalse(killed.isEmpty, "no run was killed; the delays are too long for this machine")
        print("kill loop: killed \(killed.count), completed \(completed.count), requests \(server.allRequests.count)")

        let events = server.acceptedEvents
        // Any repeat carries the same _track_id.
        var ids: [String: Set<String>] = [:]
        for event in events where event.event == "HarnessEvent" {
            ids["\(event.run!)#\(event.seq!)", default: []].insert(event.trackID!)
        }
        XCTAssertTrue(ids.values.allSatisfy { $0.count == 1 }, "a resent event got a new _track_id")
        func seqs(_ run: String) -> [Int] { Array(Set(events.filter { $0.run == run }.compactMap(\.seq))).sorted() }
        // Nothing committed is lost: the backlog and every completed run arrive whole; a killed run
        // arrives as a gap-free prefix (events not yet committed at the kill never existed durably).
        XCTAssertEqual(seqs("backlog"), Array(0..<300))
        for run in completed { XCTAssertEqual(seqs(run), Array(0..<200), run) }
        for run in killed {
            let got = seqs(run)
            XCTAssertEqual(got, Array(0..<got.count), "\(run) lost an event in the middle")
        }
        // Order: first deliveries of each run come in seq order.
        for run in killed + completed + ["backlog"] {
            var seen = Set<Int>()
            let firstDeliveries = events.filter { $0.run == run }.compactMap(\.seq).filter { seen.insert($0).inserted }
            XCTAssertEqual(firstDeliveries, firstDeliveries.sorted(), run)
        }
        // Every run that got as far as tracking has exactly one $AppEnd (normal, or abnormal if killed first).
        for run in killed + completed where !seqs(run).isEmpty {
            let ends = Set(events.filter { $0.event == "$AppEnd" && $0.properties["$run_id"] as? String == run }.compactMap(\.trackID))
            XCTAssertEqual(ends.count, 1, run)
        }
        let (summary, _) = try TrackingStore.inspect(path: store)
        XCTAssertEqual(summary.pending, 0)
        XCTAssertEqual(summary.quarantined, 0)
        XCTAssertEqual(summary.runMarkers, 0)
    }

    func testAProcessKilledBetweenSendAndDeleteResendsTheSameTrackIDs() throws {
        let directory = try Scratch.directory("resend")
        let store = directory + "/s.sqlite"
        XCTAssertEqual(try Harness.emit(["--count", "120", "--store", store, "--run-id", "R"]).ending, .exited(0))
        let child = PIDBox()
        // The server takes the first batch and then kills the client before answering: the
        // events reached the server but were never deleted from the store.
        let server = try TestHTTPServer { request in
            if request.index == 0 { kill(child.wait(), SIGKILL) }
            return .status(200)
        }
        let running = try Harness.spawnEmit(["--count", "0", "--store", store, "--endpoint", server.url.absoluteString])
        child.set(running.pid)
        XCTAssertEqual(running.wait().ending, .signaled(SIGKILL))
        XCTAssertEqual(try Harness.emit(["--count", "0", "--store", store, "--endpoint", server.url.absoluteString]).ending, .exited(0))
        let events = server.acceptedEvents.filter { $0.run == "R" }
        let firstBatch = try XCTUnwrap(server.allRequests.first?.events).filter { $0.run == "R" }
        XCTAssertFalse(firstBatch.isEmpty)
        XCTAssertEqual(events.count, 120 + firstBatch.count) // the first batch arrived twice...
        var ids: [Int: Set<String>] = [:]
        for event in events { ids[event.seq!, default: []].insert(event.trackID!) }
        XCTAssertEqual(ids.keys.sorted(), Array(0..<120))
        XCTAssertTrue(ids.values.allSatisfy { $0.count == 1 }) // ...with the same _track_ids
    }

    func testTwoProcessesWritingOneStoreKeepEveryEventInOrder() throws {
        let directory = try Scratch.directory("two")
        let store = directory + "/s.sqlite"
        let first = try Harness.spawnEmit(["--count", "2000", "--store", store, "--run-id", "A"])
        let second = try Harness.spawnEmit(["--count", "2000", "--store", store, "--run-id", "B"])
        XCTAssertEqual(first.wait().ending, .exited(0))
        XCTAssertEqual(second.wait().ending, .exited(0))
        let events = try storedObjects(store)
        XCTAssertEqual(events.filter { $0.run == "A" }.compactMap(\.seq), Array(0..<2000))
        XCTAssertEqual(events.filter { $0.run == "B" }.compactMap(\.seq), Array(0..<2000))
        XCTAssertEqual(events.filter { $0.event == "$AppStart" }.count, 2)
        XCTAssertEqual(events.filter { $0.event == "$AppEnd" }.count, 2)
        XCTAssertEqual(events.filter { $0.event == "$AppStart" }.filter { $0.properties["$is_first_time"] as? Bool == true }.count, 1)
        XCTAssertEqual(Set(events.compactMap { $0["anonymous_id"] as? String }).count, 1)
        XCTAssertEqual(try TrackingStore.inspect(path: store).0.runMarkers, 0)
    }

    func testEmitOnACorruptStoreMovesItAsideAndWorks() throws {
        let directory = try Scratch.directory("corrupt-emit")
        let store = directory + "/s.sqlite"
        try Data("this is not a database, just text that fills the header page".utf8).write(to: URL(fileURLWithPath: store))
        XCTAssertEqual(try Harness.emit(["--count", "10", "--store", store, "--run-id", "R"]).ending, .exited(0))
        XCTAssertEqual(try storedObjects(store).compactMap(\.seq), Array(0..<10))
        XCTAssertTrue(try FileManager.default.contentsOfDirectory(atPath: directory).contains { $0.hasPrefix("s.sqlite.corrupt-") })
    }

    func testAnUnreadableRecordStillArrivesAsAppCrashedAndIsDeleted() throws {
        let directory = try Scratch.directory("garbage-record")
        let records = directory + "/records"
        try FileManager.default.createDirectory(atPath: records, withIntermediateDirectories: true)
        let name = "crash-1700000000000-999999-999999.ccrec"
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: records + "/" + name))
        let store = try TrackingStore(path: directory + "/s.sqlite")
        let report = CrashReporting.deliverRecords(in: records, store: store, appName: "t", appVersion: "1", sinks: [])
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
        let report = CrashReporting.deliverRecords(in: records, store: store, appName: "t", appVersion: "1", sinks: [])
        XCTAssertEqual(report.recordsInProgress, [live])
        XCTAssertEqual(report.recordsUnreadable, [reused])
        XCTAssertTrue(FileManager.default.fileExists(atPath: records + "/" + live))
        XCTAssertFalse(FileManager.default.fileExists(atPath: records + "/" + reused))
        XCTAssertTrue(ProcessIdentity.isRunning(pid: getpid(), startedBy: now))
        XCTAssertFalse(ProcessIdentity.isRunning(pid: getpid(), startedBy: now - 3_600_000 * 24 * 365))
    }

    func testARecordAlreadyIngestedIsNotIngestedTwice() throws {
        let directory = try Scratch.directory("twice")
        let store = directory + "/s.sqlite"
        XCTAssertEqual(try Harness.emit(["--count", "1", "--store", store, "--crash-after", "0"]).ending, .signaled(SIGSEGV))
        let recordDirectory = store + ".records"
        let name = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: recordDirectory).first)
        let copy = try Data(contentsOf: URL(fileURLWithPath: recordDirectory + "/" + name))
        let tracking = try TrackingStore(path: store)
        let first = CrashReporting.deliverRecords(in: recordDirectory, store: tracking, appName: "t", appVersion: "1", sinks: [])
        XCTAssertEqual(first.recordsIngested, [name])
        // As if the process died between commit and unlink: the file comes back.
        try copy.write(to: URL(fileURLWithPath: recordDirectory + "/" + name))
        let second = CrashReporting.deliverRecords(in: recordDirectory, store: tracking, appName: "t", appVersion: "1", sinks: [])
        XCTAssertEqual(second.recordsAlreadyIngested, [name])
        XCTAssertEqual(try tracking.pendingBatch(limit: 100).filter { $0.event == "AppCrashed" }.count, 1)
        XCTAssertEqual(try tracking.runMarkers(), [])
    }
}

/// A pid handed from the test to the server's thread.
final class PIDBox: @unchecked Sendable {
    private let condition = NSCondition()
    private var pid: pid_t?
    func set(_ value: pid_t) { condition.withLock { pid = value; condition.broadcast() } }
    func wait() -> pid_t {
        condition.withLock {
            while pid == nil { _ = condition.wait(until: Date(timeIntervalSinceNow: 1)) }
            return pid!
        }
    }
}

/// SplitMix64: the kill delays are random but the same on every run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
