// ReportingLaunchTests.swift — CrashReporting.start leaves the launch alone: opening the store, the
// ingest, the run marker and $AppStart happen on the tracker's writer thread, and what was tracked
// meanwhile is stored after $AppStart with the identity the store holds; the integrator's own
// tracker configuration (its identity callback) is kept.
import CrashReporter
import SensorsAnalytics
@testable import SensorsTracking
import SensorsEvents
import Foundation
import TestSupport
import XCTest

final class ReportingLaunchTests: XCTestCase {
    /// A store that already holds a login (an earlier run logged in).
    private func storeWithLogin(_ directory: String, login: String) throws {
        let configuration = Tracker.Configuration(storePath: directory + "/events.sqlite", appName: "launch", appVersion: "1")
        let earlier = try Tracker(configuration)
        earlier.login(login)
        earlier.shutdown()
        earlier.store.close()
        // Without the state copy that launch left: the next launch must read the store itself
        // (a store an older version wrote, or a copy lost), which is what these tests lock.
        unlink(TrackingStore.stateCopyPath(configuration.storePath))
    }

    func testStartAndTrackReturnWhileTheStoreIsLockedAndTheLaunchStoresEverythingInOrderOnceItIsNot() throws {
        let directory = try Scratch.directory("launch-locked")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try storeWithLogin(directory, login: "user-7")
        let storePath = directory + "/events.sqlite"
        let before = try storedObjects(storePath).count

        // Another process's writer holds the store: every write (the launch's migration check,
        // the run marker) waits on SQLite's busy timeout until it lets go.
        let holder = try DatabaseQueue(path: storePath)
        let locked = DispatchSemaphore(value: 0)
        let released = ReleaseFlag()
        let releaser = Thread {
            try? holder.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                locked.signal()
                Thread.sleep(forTimeInterval: 2)
                released.set()
                try db.execute(sql: "COMMIT")
            }
        }

        var configuration = CrashReporting.Configuration(directory: directory, appName: "launch", appVersion: "1")
        configuration.captureCrashes = false   // no signal handlers in the test process
        configuration.sentry = nil
        releaser.start()
        locked.wait()
        let startedAt = Int64(Date().timeIntervalSince1970 * 1000)
        let reporting = CrashReporting.start(configuration)
        reporting.tracker!.track("Early", properties: ["n": .int(1)])
        // start and track did not wait for the store (a synchronous launch would still be
        // waiting for the lock here, released only after 2 s).
        XCTAssertFalse(released.isSet, "CrashReporting.start or track waited for the locked store")

        // Reading the identity waits for the launch, which only reads the store (WAL: another
        // writer does not hold a reader up); its writes ($AppStart, this run's row) wait for the lock.
        XCTAssertEqual(reporting.tracker!.identity.loginID, "user-7")
        XCTAssertNil(reporting.tracker!.launchError)
        XCTAssertTrue(reporting.tracker!.waitUntilStored(timeout: .seconds(20)))
        XCTAssertTrue(released.isSet)
        let stored = try storedObjects(storePath).dropFirst(before).map { $0 }
        XCTAssertEqual(stored.map(\.event), ["$AppStart", "Early"])
        let appStart = try XCTUnwrap(stored.first)
        let early = try XCTUnwrap(stored.last)
        // Both carry the stored identity, not the placeholder of the still-unloaded store.
        XCTAssertEqual(early["distinct_id"] as? String, "user-7")
        XCTAssertEqual(appStart["distinct_id"] as? String, "user-7")
        // $AppStart is stamped with the time start was called, not with the end of the launch.
        let appStartTime = try XCTUnwrap(appStart["time"] as? Int)
        XCTAssertLessThan(Int64(appStartTime) - startedAt, 1_000)
        XCTAssertLessThanOrEqual(appStartTime, try XCTUnwrap(early["time"] as? Int))
        XCTAssertEqual(try reporting.tracker!.store.runMarkers().map(\.runID), [reporting.tracker!.runID])
        reporting.shutdown()
        XCTAssertEqual(try storedObjects(storePath).last?.event, "$AppEnd")
    }

    func testCrashReportingKeepsTheIntegratorsIdentityCallback() throws {
        let directory = try Scratch.directory("reporting-identity")
        let seen = Collected<EventIdentity>()
        var configuration = CrashReporting.Configuration(directory: directory, appName: "demo", appVersion: "1.0") { tracker in
            tracker.onIdentityChange = { seen.append($0) }
        }
        configuration.captureCrashes = false   // no signal handlers in the test process
        let reporting = CrashReporting.start(configuration)
        reporting.tracker!.login("user-9")
        reporting.shutdown()
        XCTAssertEqual(seen.all.map(\.loginID), [nil, "user-9"], "the integrator's callback still runs")
    }

    func testAStoreThatCannotBeOpenedEndsTheLaunchWithATemporaryIdentityAndKeepsTheEventsInMemory() throws {
        let directory = try Scratch.directory("launch-unusable")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The store's path is a directory: SQLite cannot open it.
        try FileManager.default.createDirectory(atPath: directory + "/events.sqlite", withIntermediateDirectories: true)
        // A record of an earlier run, and Sentry: the store failing keeps the record from no other sink.
        let record = "crash-1700000000000-999999-999999.ccrec"
        try FileManager.default.createDirectory(atPath: directory + "/records", withIntermediateDirectories: true)
        try Data("cut short before its header".utf8).write(to: URL(fileURLWithPath: directory + "/records/" + record))
        let sentry = try TestHTTPServer()
        var configuration = CrashReporting.Configuration(directory: directory, appName: "launch", appVersion: "1")
        configuration.captureCrashes = false
        configuration.sentry = SentryOptions(dsn: "http://key@127.0.0.1:\(sentry.port)/1")
        let reporting = CrashReporting.start(configuration)
        reporting.tracker!.track("Kept")
        let error = try XCTUnwrap(reporting.tracker!.launchError)
        XCTAssertTrue(error.description.contains("events.sqlite"), error.description)
        XCTAssertFalse(reporting.tracker!.identity.anonymousID?.isEmpty ?? true)
        let launch = reporting.launchReport
        XCTAssertEqual(reporting.analytics!.launchReport.recordsIngested, [])
        XCTAssertEqual(launch.recordsAwaitingSinks, [record])
        XCTAssertEqual(launch.errors.count, 1, "\(launch.errors)")
        XCTAssertTrue(launch.errors[0].hasPrefix("\(record): events: the events store cannot be opened: "), launch.errors[0])
        // Nothing could be stored: the wait times out rather than pretending.
        XCTAssertFalse(reporting.tracker!.waitUntilStored(timeout: .milliseconds(1500)))
        let result = reporting.shutdown(timeout: .seconds(1))
        XCTAssertFalse(result.sinksFinished)
        XCTAssertEqual(reporting.analytics!.shutdownResult?.stored, false)
        XCTAssertTrue(result.sentToSentry)
        XCTAssertEqual(sentry.allRequests.count, 1, "Sentry got the record although the store failed")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/records").sorted(),
                       [record, record + ".sentry.ack", "runs"], "kept for the events sink only")
    }
}

/// Set once by the thread that releases the lock.
final class ReleaseFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
