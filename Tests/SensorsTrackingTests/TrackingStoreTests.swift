// TrackingStoreTests.swift — the SQLite store: order, bounds, counted evictions, quarantine, corruption.
@testable import SensorsTracking
import SensorsEvents
import Foundation
import TestSupport
import XCTest
import HostFacts

final class TrackingStoreTests: XCTestCase {
    func event(_ name: String, _ priority: EventPriority = .ordinary) -> NewEvent {
        NewEvent(trackID: EventDraft.newTrackID(), event: name, time: 1, priority: priority, json: "{\"event\":\"\(name)\"}")
    }

    func testEventsComeBackInTheOrderTheyWereAppended() throws {
        let store = try TrackingStore(path: Scratch.directory("order") + "/s.sqlite")
        try store.append((0..<120).map { event("e\($0)") })
        let batch = try store.pendingBatch(limit: 50)
        XCTAssertEqual(batch.map(\.event), (0..<50).map { "e\($0)" })
        try store.markDelivered(batch.map(\.id), status: 200)
        XCTAssertEqual(try store.pendingBatch(limit: 1).first?.event, "e50")
        XCTAssertEqual(try store.pendingCount(), 70)
    }

    /// A short-lived program never closes its store, so nothing checkpoints its WAL at a close:
    /// its size is what each open reads, a page at a time, to rebuild the WAL index. However many
    /// launches append, it stays within SQLite's checkpoint every 64 pages (cut back to 256 KiB):
    /// at SQLite's default it reached 4 MiB.
    func testTheWALOfAStoreNeverClosedStaysSmall() throws {
        let path = try Scratch.directory("wal-bound") + "/s.sqlite"
        var open: [TrackingStore] = []   // none closed, as a process that exits leaves its store
        for launch in 0..<300 {
            let store = try TrackingStore(path: path)
            try store.append([event("$AppStart-\(launch)"), event(String(repeating: "x", count: 2000))])
            try store.append([event("$AppEnd-\(launch)")])
            open.append(store)
        }
        var info = stat()
        XCTAssertEqual(stat(path + "-wal", &info), 0)
        XCTAssertLessThanOrEqual(Int(info.st_size), 512 << 10, "the WAL kept \(info.st_size) bytes")
        XCTAssertEqual(try TrackingStore(path: path).pendingCount(), 900, "every event kept")
        withExtendedLifetime(open) {}
    }

    func testAFullStoreEvictsOrdinaryEventsFirstAndCountsEveryEviction() throws {
        let store = try TrackingStore(path: Scratch.directory("bounds") + "/s.sqlite", limits: StoreLimits(maxEvents: 10))
        try store.append((0..<4).map { event("crash\($0)", .crash) })
        try store.append((0..<10).map { event("ordinary\($0)") })
        var names = try store.pendingBatch(limit: 100).map(\.event)
        XCTAssertEqual(names, (0..<4).map { "crash\($0)" } + (4..<10).map { "ordinary\($0)" })
        try store.append((0..<12).map { event("late-crash\($0)", .crash) })
        names = try store.pendingBatch(limit: 100).map(\.event)
        XCTAssertEqual(names, (2..<12).map { "late-crash\($0)" })
        let summary = try store.summary()
        XCTAssertEqual(summary.counters["evicted_ordinary"], 4 + 6)
        XCTAssertEqual(summary.counters["evicted_crash"], 6)
        XCTAssertEqual(summary.pending, 10)
        XCTAssertEqual(summary.pendingCrash, 10)
    }

    func testOversizeEventsAreDroppedAndCounted() throws {
        let store = try TrackingStore(path: Scratch.directory("oversize") + "/s.sqlite", limits: StoreLimits(maxEventBytes: 100))
        try store.append([event("small"), NewEvent(trackID: "t", event: "big", time: 1, priority: .ordinary,
                                                   json: String(repeating: "x", count: 200))])
        XCTAssertEqual(try store.pendingBatch(limit: 10).map(\.event), ["small"])
        XCTAssertEqual(try store.summary().counters["dropped_oversize"], 1)
    }

    func testQuarantinedEventsLeaveTheQueueAndStayVisible() throws {
        let path = try Scratch.directory("quarantine") + "/s.sqlite"
        let store = try TrackingStore(path: path)
        try store.append([event("a"), event("b"), event("c")])
        try store.quarantine(try store.pendingBatch(limit: 2), status: 400, reason: "HTTP 400: bad")
        XCTAssertEqual(try store.pendingBatch(limit: 10).map(\.event), ["c"])
        let quarantined = try store.quarantinedEvents()
        XCTAssertEqual(quarantined.map(\.event.event).sorted(), ["a", "b"])
        XCTAssertEqual(quarantined.first?.status, 400)
        let (summary, listed) = try TrackingStore.inspect(path: path)
        XCTAssertEqual(summary.quarantined, 2)
        XCTAssertEqual(summary.pending, 1)
        XCTAssertEqual(summary.lastUpload?.status, 400)
        XCTAssertEqual(listed.count, 2)
    }

    func testACorruptFileIsMovedAsideAndAFreshStoreCreated() throws {
        let directory = try Scratch.directory("corrupt")
        let path = directory + "/s.sqlite"
        try Data(repeating: 0x5A, count: 64 * 1024).write(to: URL(fileURLWithPath: path))
        let store = try TrackingStore(path: path)
        XCTAssertEqual(store.movedAsideCorruptFiles.count, 1)
        XCTAssertTrue(FileManager.default.fileExists(atPath: store.movedAsideCorruptFiles[0]))
        try store.append([event("after")])
        XCTAssertEqual(try store.pendingBatch(limit: 10).map(\.event), ["after"])
    }

    /// A store with 2,000 events, then `pages` pages from `page` on overwritten (the header stays
    /// valid; by default early pages, the schema's among them); `checkedDaysAgo`: when its last
    /// `quick_check` was, as `meta` says.
    func damagedStore(_ name: String, checkedDaysAgo days: Int64, page: ((Int) -> Int) = { _ in 2 }, pages: Int = 8) throws -> String {
        let path = try Scratch.directory(name) + "/s.sqlite"
        do {
            let store = try TrackingStore(path: path)
            try store.append((0..<2000).map { event("e\($0)") })
            try store.write { db in
                try TrackingStore.setMeta(db, TrackingStore.quickCheckKey, String(Clock.wallMilliseconds() - days * 86_400_000))
            }
            try store.checkpoint()
            store.close()
        }
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: path))
        try handle.seek(toOffset: UInt64(page(size / 4096) * 4096))
        handle.write(Data(repeating: 0xA5, count: 4096 * pages))
        try handle.close()
        return path
    }

    /// Checked more than a day ago: the open checks the whole file, and moves it aside.
    func testAStoreWithADamagedPageIsMovedAsideByTheDailyCheckAtOpen() throws {
        let store = try TrackingStore(path: try damagedStore("damaged-daily", checkedDaysAgo: 2))
        XCTAssertEqual(store.movedAsideCorruptFiles.count, 1)
        try store.append([event("fresh")])
        XCTAssertEqual(try store.pendingBatch(limit: 10).map(\.event), ["fresh"])
    }

    /// Checked within the day: the open does not read the whole file again (a launch does not pay
    /// for a full store each time); the first read that meets the damage (in the middle of the
    /// events) moves it aside, and is answered from the fresh store.
    func testAStoreWithADamagedPageIsMovedAsideByTheFirstReadThatMeetsIt() throws {
        let path = try damagedStore("damaged-read", checkedDaysAgo: 0, page: { $0 / 2 }, pages: 2)
        let store = try TrackingStore(path: path)
        XCTAssertEqual(store.movedAsideCorruptFiles, [], "checked today: not scanned at open")
        XCTAssertEqual(try store.pendingBatch(limit: 10).map(\.event), (0..<10).map { "e\($0)" }, "the sound pages still read")
        XCTAssertEqual(try store.pendingBatch(limit: 5000).map(\.event), [], "reading them all meets the damage: answered from the fresh store")
        XCTAssertEqual(store.movedAsideCorruptFiles.count, 1)
        try store.append([event("fresh")])
        XCTAssertEqual(try store.pendingBatch(limit: 10).map(\.event), ["fresh"])
        // A check the store has never had (its `meta` row gone) is run at the next open.
        XCTAssertNotNil(try store.read { db in try TrackingStore.meta(db, TrackingStore.quickCheckKey) }, "the fresh store was checked")
    }

    func testTheUploadLeaseGoesToOneLiveProcessAtATime() throws {
        let store = try TrackingStore(path: Scratch.directory("lease") + "/s.sqlite")
        let me = ProcessIdentity.current
        XCTAssertTrue(try store.acquireUploadLease(me))
        // A live other process (our parent) holding the lease keeps it.
        let parent = ProcessIdentity(pid: getppid(), bootID: me.bootID, startTicks: ProcessIdentity.startTicks(of: getppid()) ?? 0)
        XCTAssertTrue(parent.isAlive)
        try store.releaseUploadLease(me)
        XCTAssertTrue(try store.acquireUploadLease(parent))
        XCTAssertFalse(try store.acquireUploadLease(me))
        // A dead holder (same pid, other start time) does not.
        let dead = ProcessIdentity(pid: getppid(), bootID: me.bootID, startTicks: parent.startTicks + 1)
        XCTAssertFalse(dead.isAlive)
        try store.releaseUploadLease(parent)
        XCTAssertTrue(try store.acquireUploadLease(dead))
        XCTAssertTrue(try store.acquireUploadLease(me))
    }

    func marker(_ runID: String) -> RunMarker {
        RunMarker(runID: runID, process: ProcessIdentity(pid: 1, bootID: "boot", startTicks: 1), startWallMilliseconds: 1,
                  startMonotonicNanoseconds: 0, refreshWallMilliseconds: 1, refreshMonotonicNanoseconds: 0, appName: "App",
                  appVersion: "1", identity: EventIdentity(anonymousID: "anon"))
    }

    func testAppendRegistersOrEndsARunAndAddsCountersInTheSameTransaction() throws {
        let store = try TrackingStore(path: Scratch.directory("verbs") + "/s.sqlite", limits: StoreLimits(maxEventBytes: 100))
        try store.registerRun(marker("b"))
        XCTAssertEqual(try store.append([event("e1")], registeringRun: marker("a")), 1)
        XCTAssertEqual(try store.runMarkers().map(\.runID).sorted(), ["a", "b"])
        let big = NewEvent(trackID: "t", event: "big", time: 1, priority: .ordinary, json: String(repeating: "x", count: 200))
        XCTAssertEqual(try store.append([event("$AppEnd"), big], endingRun: "a",
                                        addingCounters: ["dropped_queue_full": 2, "dropped_store_error": 0]), 2)
        XCTAssertEqual(try store.runMarkers().map(\.runID), ["b"])
        XCTAssertEqual(try store.summary().counters, ["dropped_queue_full": 2, "dropped_oversize": 1])
    }

    func testAppendOnceWritesNothingWhenTheClaimIsTaken() throws {
        let store = try TrackingStore(path: Scratch.directory("claim") + "/s.sqlite")
        try store.registerRun(marker("r"))
        XCTAssertFalse(try store.isClaimed("record-1"))
        XCTAssertTrue(try store.appendOnce([event("AppCrashed", .crash), event("$AppEnd", .crash)], claim: "record-1", endingRun: "r"))
        XCTAssertTrue(try store.isClaimed("record-1"))
        XCTAssertEqual(try store.runMarkers(), [])
        try store.registerRun(marker("r2"))
        XCTAssertFalse(try store.appendOnce([event("AppCrashed", .crash)], claim: "record-1", endingRun: "r2"))
        XCTAssertEqual(try store.pendingBatch(limit: 10).map(\.event), ["AppCrashed", "$AppEnd"])
        XCTAssertEqual(try store.runMarkers().map(\.runID), ["r2"], "a refused append removes no marker")
        try store.pruneClaims(olderThan: 30 * 86400)
        XCTAssertTrue(try store.isClaimed("record-1"), "a fresh claim survives pruning")
        try store.pruneClaims(olderThan: -1)
        XCTAssertFalse(try store.isClaimed("record-1"))
    }

    func testClaimRunAppendsOnlyWhileTheMarkerExists() throws {
        let store = try TrackingStore(path: Scratch.directory("claim-run") + "/s.sqlite")
        try store.registerRun(marker("dead"))
        XCTAssertTrue(try store.claimRun("dead", appending: [event("$AppEnd", .crash)]))
        XCTAssertEqual(try store.runMarkers(), [])
        XCTAssertFalse(try store.claimRun("dead", appending: [event("$AppEnd", .crash)]))
        XCTAssertEqual(try store.pendingCount(), 1)
    }
}
