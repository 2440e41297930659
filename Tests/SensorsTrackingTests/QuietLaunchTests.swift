// QuietLaunchTests.swift — a hosted tracker's launch that starts from the state copy: a run that
// tracks nothing never opens SQLite, and the store still ends up with every run, in order.
@testable import SensorsTracking
import SensorsEvents
import Foundation
import TestSupport
import ProcessSpawning
import XCTest

final class QuietLaunchTests: XCTestCase {
    /// One hosted run as CrashReporting's launch thread and its end run it: the launch (with
    /// `between` run between its phases, where the host hands out records and runs), then
    /// `during`, then the end.
    @discardableResult
    func run(_ path: String, runID: String, ending: Bool = true, between: ((Tracker) -> Void)? = nil,
             during: ((Tracker) -> Void)? = nil) -> Tracker {
        var configuration = Tracker.Configuration(storePath: path, appName: "tool", appVersion: "1")
        configuration.runID = runID
        let tracker = Tracker(hostedLaunch: configuration, store: TrackingStore(deferringOpen: path))
        XCTAssertNotNil(tracker.beginLaunch())
        between?(tracker)
        tracker.completeLaunch()
        during?(tracker)
        if ending { XCTAssertEqual(tracker.shutdown(fromHostWithin: .seconds(10)), Tracker.ShutdownResult(stored: true, uploaded: false)) }
        return tracker
    }

    /// (event, run id) of the store's events, oldest first (opening the store folds the journal).
    func stored(_ path: String) throws -> [String] {
        try storedObjects(path).map { "\($0.event ?? "?") \($0.properties["$run_id"] as? String ?? "")" }
    }

    func testARunThatTracksNothingLeavesTheStoreClosedAndTheStoreGetsEveryRunInOrder() throws {
        let path = try Scratch.directory("quiet-runs") + "/s.sqlite"
        let first = run(path, runID: "r1")
        XCTAssertTrue(first.store.isOpen, "a new store is opened (and its state copied)")
        XCTAssertNotNil(TrackingStore(deferringOpen: path).stateFromCopy())

        let second = run(path, runID: "r2")
        XCTAssertFalse(second.store.isOpen, "the second run starts from the copy and appends to the journal")
        XCTAssertEqual(second.identity, first.identity)
        // r1's end (committed by its end, to the journal too), r2's launch with its row, r2's end.
        let journal = TrackingStore.readJournal(path).entries
        XCTAssertEqual(journal.map { $0.events.map(\.event) }, [["$AppEnd"], ["$AppStart"], ["$AppEnd"]])
        XCTAssertEqual(journal.compactMap(\.registered?.runID), ["r2"])
        XCTAssertEqual(journal.compactMap(\.endingRun), ["r1", "r2"])

        // The third is told that r2 exited: the journal holds its end, so nothing is opened for it.
        let third = run(path, runID: "r3", between: { tracker in
            XCTAssertEqual(tracker.endRuns([Tracker.HostedRunEnd(runID: "r2", reason: .normal, wallMilliseconds: 1, durationSeconds: 1)]), [])
        })
        XCTAssertFalse(third.store.isOpen)
        XCTAssertFalse(third.writerThreadStarted)

        // The fourth tracks an event after its launch: its writer opens the store, which folds the
        // journal in first, so the order holds.
        let fourth = run(path, runID: "r4", during: { tracker in
            tracker.track("Work")
            XCTAssertTrue(tracker.waitUntilStored(timeout: .seconds(10)))
        })
        XCTAssertTrue(fourth.store.isOpen)
        XCTAssertEqual(try stored(path), ["$AppStart r1", "$AppEnd r1", "$AppStart r2", "$AppEnd r2", "$AppStart r3", "$AppEnd r3",
                                          "$AppStart r4", "Work ", "$AppEnd r4"])
        let store = try TrackingStore(path: path)
        XCTAssertEqual(try store.runMarkers(), [], "every run's row left with its end")
        store.close()
        XCTAssertFalse(FileManager.default.fileExists(atPath: TrackingStore.journalPath(path)))
    }

    /// A run killed after its launch left its row in the journal only: told it was killed, the next
    /// launch opens the store (folding the row in) and ends it from the row, with its identity.
    func testARunKilledAfterAQuietLaunchIsEndedFromItsJournalledRow() throws {
        let path = try Scratch.directory("quiet-killed") + "/s.sqlite"
        run(path, runID: "r1")
        let killed = run(path, runID: "killed", ending: false)
        XCTAssertFalse(killed.store.isOpen)
        let next = run(path, runID: "r3", between: { tracker in
            XCTAssertEqual(tracker.endRuns([Tracker.HostedRunEnd(runID: "killed", reason: .abnormal)]), ["killed"])
        })
        XCTAssertTrue(next.store.isOpen)
        let objects = try storedObjects(path)
        let end = try XCTUnwrap(objects.first { $0.event == "$AppEnd" && $0.properties["$run_id"] as? String == "killed" })
        XCTAssertEqual(end.properties["$app_end_reason"] as? String, "abnormal")
        XCTAssertEqual(end["distinct_id"] as? String, killed.identity.distinctID)
        XCTAssertEqual(try stored(path).filter { $0.hasSuffix(" killed") }, ["$AppStart killed", "$AppEnd killed"])
    }

    /// A login in a quiet run opens the store (its writer stores it) and the copy follows: the next
    /// quiet launch starts logged in.
    func testALoginReachesTheCopyTheNextQuietLaunchStartsFrom() throws {
        let path = try Scratch.directory("quiet-login") + "/s.sqlite"
        run(path, runID: "r1")
        run(path, runID: "r2", during: { tracker in
            tracker.login("user-7")
            XCTAssertTrue(tracker.waitUntilStored(timeout: .seconds(10)))
        })
        let third = run(path, runID: "r3")
        XCTAssertFalse(third.store.isOpen)
        XCTAssertEqual(third.identity.loginID, "user-7")
        let last = try XCTUnwrap(storedObjects(path).last)
        XCTAssertEqual(last.event, "$AppEnd")
        XCTAssertEqual(last["distinct_id"] as? String, "user-7")
    }

    /// A journal that cannot be written (here a directory in its place): the run's launch and end
    /// go to the store itself, as before there was a journal; nothing is lost.
    func testARunWhoseJournalCannotBeWrittenStoresInTheStore() throws {
        let path = try Scratch.directory("quiet-unwritable") + "/s.sqlite"
        run(path, runID: "r1")
        XCTAssertEqual(try stored(path), ["$AppStart r1", "$AppEnd r1"], "r1's end folded in")
        XCTAssertEqual(mkdir(TrackingStore.journalPath(path), 0o700), 0)
        let second = run(path, runID: "r2")
        XCTAssertTrue(second.store.isOpen, "the launch went to the store")
        XCTAssertEqual(try stored(path), ["$AppStart r1", "$AppEnd r1", "$AppStart r2", "$AppEnd r2"])
    }

    /// Processes at once on one store, as copies of a tool started together: quiet runs appending
    /// to the journal while runs that log in open the store (and fold the journal) — every run's
    /// `$AppStart` and `$AppEnd` stored exactly once, and no run left with a row.
    func testManyProcessesAtOnceStoreEveryRunOnce() throws {
        let path = try Scratch.directory("quiet-processes") + "/s.sqlite"
        XCTAssertEqual(try Harness.emit(["--count", "0", "--store", path, "--run-id", "first"]).ending, .exited(0))
        var children: [(String, ChildProcess.Running)] = []
        for index in 0..<24 {
            let runID = "p\(index)"
            // One in four logs in: its writer opens the store, which folds the journal meanwhile.
            let extra = index % 4 == 0 ? ["--login", "user-\(index)"] : []
            children.append((runID, try Harness.spawnEmit(["--count", "0", "--store", path, "--run-id", runID] + extra)))
        }
        for (runID, child) in children { XCTAssertEqual(child.wait().ending, .exited(0), runID) }
        let objects = try storedObjects(path)
        for runID in ["first"] + children.map(\.0) {
            let mine = objects.filter { $0.properties["$run_id"] as? String == runID }
            XCTAssertEqual(mine.map { $0.event ?? "?" }, ["$AppStart", "$AppEnd"],
                           "\(runID): \(mine.map { "\($0.event ?? "?") \($0.properties["$app_end_reason"] as? String ?? "")" })")
        }
        let store = try TrackingStore(path: path)
        XCTAssertEqual(try store.runMarkers().map(\.runID), [])
        XCTAssertNil(try store.summary().counters["dropped_journal_unreadable"])
        store.close()
    }

    /// With an endpoint the store is what the uploader sends from: no run goes to the journal.
    func testATrackerWithAnEndpointNeverUsesTheJournal() throws {
        let path = try Scratch.directory("quiet-endpoint") + "/s.sqlite"
        for runID in ["r1", "r2"] {
            var configuration = Tracker.Configuration(storePath: path, appName: "tool", appVersion: "1",
                                                      endpoint: URL(string: "http://127.0.0.1:9/sa"))
            configuration.runID = runID
            configuration.upload.requestTimeout = .milliseconds(200)
            let tracker = Tracker(hostedLaunch: configuration, store: TrackingStore(deferringOpen: path))
            XCTAssertNotNil(tracker.beginLaunch())
            tracker.completeLaunch()
            _ = tracker.shutdown(fromHostWithin: .milliseconds(300))
            XCTAssertTrue(tracker.store.isOpen)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: TrackingStore.journalPath(path)))
    }
}
