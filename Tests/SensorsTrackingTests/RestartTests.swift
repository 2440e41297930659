// RestartTests.swift — the tracker across real child processes (crash-harness emit): runs killed
// with SIGKILL or exiting without shutdown, the uploader killed at random moments and between send
// and delete, two processes writing one store, a corrupt store file. (Crash records at the next
// launch are CrashReporterTests' NextLaunchTests.)
import ProcessSpawning
@testable import SensorsTracking
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class RestartTests: XCTestCase {
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

    /// A store from before the reporter kept run markers of its own: its dead runs are known
    /// only to the store. Adopted once: each gets its abnormal `$AppEnd` at the next launch, and
    /// nothing is told twice.
    func testAStoresRunMarkersFromBeforeTheReporterKeptRunsAreAdoptedOnce() throws {
        let directory = try Scratch.directory("adopt")
        let store = directory + "/s.sqlite"
        let ready = directory + "/ready"
        let child = try Harness.spawnEmit(["--count", "2", "--store", store, "--run-id", "old-run", "--ready-file", ready, "--hold"])
        XCTAssertTrue(Harness.waitForFile(ready))
        kill(child.pid, SIGKILL)
        XCTAssertEqual(child.wait().ending, .signaled(SIGKILL))
        // As an older version left it: the store's marker, no reporter marker, and the store never
        // run by a host that tells runs (the mark the first hosted launch leaves).
        try FileManager.default.removeItem(atPath: store + ".records/runs")
        try DatabaseQueue(path: store).write { try $0.execute(sql: "DELETE FROM meta WHERE key = 'runs_told_by_host'") }
        // Nor the copy of the store's state a quiet launch starts from (newer than the mark).
        try FileManager.default.removeItem(atPath: TrackingStore.stateCopyPath(store))
        XCTAssertEqual(try TrackingStore.inspect(path: store).0.runMarkers, 1)

        XCTAssertEqual(try Harness.emit(["--count", "0", "--store", store]).ending, .exited(0))
        XCTAssertEqual(try Harness.emit(["--count", "0", "--store", store]).ending, .exited(0))
        let ends = try storedObjects(store).filter { $0.event == "$AppEnd" && $0.properties["$run_id"] as? String == "old-run" }
        XCTAssertEqual(ends.map { $0.properties["$app_end_reason"] as? String }, ["abnormal"])
        XCTAssertEqual(try TrackingStore.inspect(path: store).0.runMarkers, 0)
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
        var generator = SplitMix64(seed: 0x5EED)
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

