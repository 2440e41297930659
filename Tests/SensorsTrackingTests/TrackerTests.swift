// TrackerTests.swift — the public API in process: event model, identity, super properties, $AppStart/$AppEnd.
import HostFacts
@testable import SensorsTracking
import SensorsEvents
import Foundation
import TestSupport
import XCTest

final class TrackerTests: XCTestCase {
    func configuration(_ path: String) -> Tracker.Configuration {
        Tracker.Configuration(storePath: path, appName: "tests", appVersion: "9.9.9")
    }

    func testEventsCarryTheSensorsModelInTrackOrder() throws {
        let path = try Scratch.directory("model") + "/s.sqlite"
        let tracker = try Tracker(configuration(path))
        for i in 0..<500 { tracker.track("Step", properties: ["i": .int(i), "label": .string("\"q\"\n")]) }
        XCTAssertTrue(tracker.waitUntilStored())
        tracker.shutdown()
        let events = try storedObjects(path)
        XCTAssertEqual(events.first?.event, "$AppStart")
        XCTAssertEqual(events.last?.event, "$AppEnd")
        let steps = events.filter { $0.event == "Step" }
        XCTAssertEqual(steps.map { $0.properties["i"] as? Int }, (0..<500).map { $0 })
        XCTAssertEqual(Set(events.compactMap(\.trackID)).count, events.count)
        let step = try XCTUnwrap(steps.first)
        XCTAssertEqual(step["type"] as? String, "track")
        XCTAssertNotNil(step["time"] as? Int)
        XCTAssertNotNil(step["distinct_id"] as? String)
        XCTAssertEqual(step["distinct_id"] as? String, step["anonymous_id"] as? String)
        XCTAssertNil(step["login_id"])
        let lib = try XCTUnwrap(step["lib"] as? [String: Any])
        XCTAssertEqual(lib["$lib"] as? String, CrashCaptureLibrary.name)
        XCTAssertEqual(lib["$app_version"] as? String, "9.9.9")
        let properties = step.properties
        XCTAssertEqual(properties["$os"] as? String, "Linux")
        XCTAssertNotNil(properties["$os_version"] as? String)
        XCTAssertNotNil(properties["$model"] as? String)
        XCTAssertNotNil(properties["$timezone_offset"] as? Int)
        XCTAssertEqual(properties["$app_version"] as? String, "9.9.9")
        XCTAssertEqual(properties["label"] as? String, "\"q\"\n")
        for key in ["$hostname", "$user", "$argv", "$environment"] { XCTAssertNil(properties[key], key) }
    }

    func testTheAsyncFormsStoreAndShutDownWithoutHoldingTheCallersExecutor() async throws {
        let path = try Scratch.directory("async") + "/s.sqlite"
        let tracker = try Tracker(configuration(path))
        tracker.track("Before", properties: ["n": .int(1)])
        let stored = await tracker.waitUntilStored(timeout: .seconds(5))
        XCTAssertTrue(stored)
        XCTAssertEqual(try storedObjects(path).filter { $0.event == "Before" }.count, 1)
        // No endpoint: flush stores but reports that nothing was delivered.
        let flushed = await tracker.flush(timeout: .milliseconds(500))
        XCTAssertFalse(flushed)
        let result = await tracker.shutdown(timeout: .seconds(3))
        XCTAssertEqual(result, Tracker.ShutdownResult(stored: true, uploaded: false))
        let ends = try storedObjects(path).filter { $0.event == "$AppEnd" }
        XCTAssertEqual(ends.count, 1)
        XCTAssertEqual(ends.first?.properties["$app_end_reason"] as? String, "normal")
        XCTAssertEqual(Duration.milliseconds(1500).seconds, 1.5)
    }

    /// A store's rows of dead runs that an older version left (before the reporter's run ledger
    /// told how runs end) are ended once, abnormally, the first time the store is launched; after
    /// that a dead run is the host's to tell (``Tracker/endRuns(_:)``), never the store's to guess.
    func testAnOlderVersionsDeadRunIsEndedOnceAndLaterOnesAreTheHostsToTell() throws {
        let path = try Scratch.directory("dead-run") + "/s.sqlite"
        let store = try TrackingStore(path: path)
        // This pid with another start time: a process that is gone (pid reuse cannot fool it).
        let gone = ProcessIdentity(pid: getpid(), bootID: ProcessIdentity.bootID(), startTicks: 1)
        try store.registerRun(RunMarker(runID: "dead-run", process: gone, startWallMilliseconds: 1_000, startMonotonicNanoseconds: 0,
                                        refreshWallMilliseconds: 5_000, refreshMonotonicNanoseconds: 4_000_000_000,
                                        appName: "demo", appVersion: "0.9", identity: EventIdentity(anonymousID: "anon")))
        let tracker = try Tracker(configuration(path), store: store)
        XCTAssertEqual(tracker.abnormalEnds, ["dead-run"])
        XCTAssertEqual(try store.runMarkers().map(\.runID), [tracker.runID], "the dead run's marker is gone")
        tracker.shutdown()
        let ends = try storedObjects(path).filter { $0.event == "$AppEnd" && $0.properties["$run_id"] as? String == "dead-run" }
        XCTAssertEqual(ends.count, 1)
        XCTAssertEqual(ends.first?.properties["$app_end_reason"] as? String, "abnormal")
        XCTAssertEqual((ends.first?.properties["$event_duration"] as? NSNumber)?.doubleValue, 4.0)
        XCTAssertEqual(ends.first?.properties["$app_version"] as? String, "0.9", "the dead run's own version")
        // A row left after that (a run killed since) is not guessed at: the reporter's ledger tells it.
        try store.registerRun(RunMarker(runID: "killed-since", process: gone, startWallMilliseconds: 6_000, startMonotonicNanoseconds: 0,
                                        refreshWallMilliseconds: 6_000, refreshMonotonicNanoseconds: 0,
                                        appName: "demo", appVersion: "1", identity: EventIdentity(anonymousID: "anon")))
        let second = try Tracker(configuration(path))
        XCTAssertEqual(second.abnormalEnds, [])
        XCTAssertTrue(try store.runMarkers().map(\.runID).contains("killed-since"))
        second.shutdown()
    }

    func testFirstStartAnonymousIDAndLoginPersistAcrossRuns() throws {
        let path = try Scratch.directory("identity") + "/s.sqlite"
        let seen = Collected<EventIdentity>()
        var config = configuration(path)
        config.onIdentityChange = { seen.append($0) }
        let first = try Tracker(config)
        XCTAssertTrue(first.isFirstStart)
        let anonymous = try XCTUnwrap(first.identity.anonymousID)
        first.login("user-7")
        first.track("AfterLogin")
        first.shutdown()
        let second = try Tracker(config)
        XCTAssertFalse(second.isFirstStart)
        XCTAssertEqual(second.identity, EventIdentity(anonymousID: anonymous, loginID: "user-7"))
        second.logout()
        second.track("AfterLogout")
        second.shutdown()
        XCTAssertEqual(seen.all.map(\.loginID), [nil, "user-7", "user-7", nil])

        let events = try storedObjects(path)
        let starts = events.filter { $0.event == "$AppStart" }
        XCTAssertEqual(starts.map { $0.properties["$is_first_time"] as? Bool }, [true, false])
        let signup = try XCTUnwrap(events.first { $0.event == "$SignUp" })
        XCTAssertEqual(signup["type"] as? String, "track_signup")
        XCTAssertEqual(signup["original_id"] as? String, anonymous)
        XCTAssertEqual(signup["distinct_id"] as? String, "user-7")
        let afterLogin = try XCTUnwrap(events.first { $0.event == "AfterLogin" })
        XCTAssertEqual(afterLogin["login_id"] as? String, "user-7")
        XCTAssertEqual(afterLogin["distinct_id"] as? String, "user-7")
        XCTAssertEqual(afterLogin["anonymous_id"] as? String, anonymous)
        let afterLogout = try XCTUnwrap(events.first { $0.event == "AfterLogout" })
        XCTAssertNil(afterLogout["login_id"])
        XCTAssertEqual(afterLogout["distinct_id"] as? String, anonymous)
    }

    func testSuperPropertiesAreMergedIntoEveryLaterEventAndKept() throws {
        let path = try Scratch.directory("super") + "/s.sqlite"
        let tracker = try Tracker(configuration(path))
        tracker.track("Before")
        tracker.registerSuperProperties(["tier": .string("gold"), "$os": .string("Overridden"), "n": .int(1)])
        tracker.track("After", properties: ["n": .int(2)])
        tracker.shutdown()
        let again = try Tracker(configuration(path))
        XCTAssertEqual(again.superProperties["tier"], .string("gold"))
        again.unregisterSuperProperty("tier")
        again.track("Unregistered")
        again.shutdown()
        let events = try storedObjects(path)
        let before = try XCTUnwrap(events.first { $0.event == "Before" })
        XCTAssertNil(before.properties["tier"])
        let after = try XCTUnwrap(events.first { $0.event == "After" })
        XCTAssertEqual(after.properties["tier"] as? String, "gold")
        XCTAssertEqual(after.properties["$os"] as? String, "Overridden")
        XCTAssertEqual(after.properties["n"] as? Int, 2) // the event's own value wins
        let unregistered = try XCTUnwrap(events.first { $0.event == "Unregistered" })
        XCTAssertNil(unregistered.properties["tier"])
    }

    func testShutdownTracksAppEndWithDurationAndRemovesTheRunMarker() throws {
        let path = try Scratch.directory("append") + "/s.sqlite"
        let tracker = try Tracker(configuration(path))
        XCTAssertEqual(try tracker.store.runMarkers().map(\.runID), [tracker.runID])
        let result = tracker.shutdown()
        XCTAssertEqual(result, Tracker.ShutdownResult(stored: true, uploaded: false))
        XCTAssertEqual(try tracker.store.runMarkers(), [])
        tracker.track("Ignored")
        let end = try XCTUnwrap(try storedObjects(path).last)
        XCTAssertEqual(end.event, "$AppEnd")
        XCTAssertEqual(end.properties["$app_end_reason"] as? String, "normal")
        XCTAssertEqual(end.properties["$run_id"] as? String, tracker.runID)
        let duration = try XCTUnwrap(end.properties["$event_duration"] as? NSNumber).doubleValue
        XCTAssertGreaterThanOrEqual(duration, 0)
        XCTAssertFalse(try storedObjects(path).contains { $0.event == "Ignored" })
    }

    func testWithoutAnEndpointEventsStayInTheStore() throws {
        let path = try Scratch.directory("embedded") + "/s.sqlite"
        let tracker = try Tracker(configuration(path))
        tracker.track("Kept")
        XCTAssertFalse(tracker.flush(timeout: .seconds(5)))
        tracker.shutdown()
        let (summary, _) = try TrackingStore.inspect(path: path)
        XCTAssertEqual(summary.pending, 3)
        XCTAssertEqual(summary.oldestPending?.event, "$AppStart")
        XCTAssertNil(summary.lastUpload)
    }

    func testLongStringPropertiesAreCutAtSensorsLimit() throws {
        let path = try Scratch.directory("long") + "/s.sqlite"
        let tracker = try Tracker(configuration(path))
        tracker.track("Long", properties: ["text": .string(String(repeating: "é", count: 10_000))])
        tracker.shutdown()
        let long = try XCTUnwrap(try storedObjects(path).first { $0.event == "Long" })
        let text = try XCTUnwrap(long.properties["text"] as? String)
        XCTAssertEqual(text.utf8.count, EventRenderer.maxStringBytes)
    }

    func testAnIdentityCallMadeFromTheLaunchItselfDoesNotWaitForTheLaunch() throws {
        let path = try Scratch.directory("launch-reentrant") + "/s.sqlite"
        let configuration = Tracker.Configuration(storePath: path, appName: "launch", appVersion: "1")
        let tracker = Tracker(hostedLaunch: configuration, store: TrackingStore(deferringOpen: path))
        tracker.track("Meanwhile")
        // The host's launch thread logs in between the phases (as a sink's hook could).
        let launched = DispatchSemaphore(value: 0)
        let host = Thread {
            XCTAssertNotNil(tracker.beginLaunch())
            tracker.login("in-launch")
            tracker.completeLaunch()
            launched.signal()
        }
        host.start()
        // Bounded: a launch waiting for itself never ends.
        XCTAssertEqual(launched.wait(timeout: .now() + 10), .success, "the launch waited for itself")
        XCTAssertTrue(tracker.waitUntilStored(timeout: .seconds(10)))
        XCTAssertEqual(tracker.identity.loginID, "in-launch")
        tracker.shutdown()
        XCTAssertEqual(try storedObjects(path).map(\.event), ["$AppStart", "Meanwhile", "$SignUp", "$AppEnd"])
    }
}

extension TrackerTests {
    /// A hosted tracker's launch, on a thread of its own as CrashReporting's launch thread runs it.
    func runHostedLaunch(_ tracker: Tracker) {
        let launched = DispatchSemaphore(value: 0)
        let host = Thread {
            XCTAssertNotNil(tracker.beginLaunch())
            tracker.completeLaunch()
            launched.signal()
        }
        host.start()
        XCTAssertEqual(launched.wait(timeout: .now() + 20), .success)
    }

    /// A hosted tracker that tracks nothing after its launch starts no writer thread: the launch
    /// commits `$AppStart` (with what was tracked during it) and `shutdown` commits `$AppEnd` on
    /// its caller's thread. The first event tracked after the launch starts the writer, and the
    /// store keeps the order the events were tracked in.
    func testAHostedTrackerStartsItsWriterOnlyForWhatIsTrackedAfterItsLaunch() throws {
        let quiet = try Scratch.directory("hosted-quiet") + "/s.sqlite"
        let tracker = Tracker(hostedLaunch: Tracker.Configuration(storePath: quiet, appName: "quiet", appVersion: "1"),
                              store: TrackingStore(deferringOpen: quiet))
        tracker.track("During")
        runHostedLaunch(tracker)
        // Committed by the launch itself, with the run's row: no wait.
        XCTAssertEqual(try storedObjects(quiet).map(\.event), ["$AppStart", "During"])
        let during = try TrackingStore(path: quiet)
        XCTAssertEqual(try during.runMarkers().map(\.runID), [tracker.runID])
        during.close()
        XCTAssertFalse(tracker.writerThreadStarted)
        XCTAssertEqual(tracker.shutdown(), Tracker.ShutdownResult(stored: true, uploaded: false))
        XCTAssertFalse(tracker.writerThreadStarted)
        XCTAssertEqual(try storedObjects(quiet).map(\.event), ["$AppStart", "During", "$AppEnd"])
        let reopened = try TrackingStore(path: quiet)
        XCTAssertEqual(try reopened.runMarkers(), [], "the run's row left with its $AppEnd")
        reopened.close()

        let busy = try Scratch.directory("hosted-busy") + "/s.sqlite"
        let second = Tracker(hostedLaunch: Tracker.Configuration(storePath: busy, appName: "busy", appVersion: "1"),
                             store: TrackingStore(deferringOpen: busy))
        runHostedLaunch(second)
        XCTAssertFalse(second.writerThreadStarted)
        for index in 0..<50 { second.track("After", properties: ["i": .int(index)]) }
        XCTAssertTrue(second.writerThreadStarted)
        XCTAssertTrue(second.waitUntilStored(timeout: .seconds(20)))
        second.shutdown()
        let stored = try storedObjects(busy)
        XCTAssertEqual(stored.map(\.event), ["$AppStart"] + Array(repeating: "After", count: 50) + ["$AppEnd"])
        XCTAssertEqual(stored.compactMap { $0.properties["i"] as? Int }, Array(0..<50))
    }
}

final class TrackerBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Tracker?
    var tracker: Tracker? {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}

/// The store's pending events as JSON objects, oldest first.
func storedObjects(_ path: String) throws -> [[String: Any]] {
    let store = try TrackingStore(path: path)
    defer { store.close() }
    return try store.pendingBatch(limit: 100_000).map { object($0.json) }
}
