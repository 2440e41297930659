// StoreSchemaTests.swift — the migrator adopts files written by the pre-migrator code and refuses
// files written by a newer schema.
import SensorsEvents
@testable import SensorsTracking
import Foundation
import TestSupport
import XCTest
import HostFacts

final class StoreSchemaTests: XCTestCase {
    /// The schema exactly as the pre-migrator `TrackingStore.openChecked` created it at every open
    /// (raw SQL, then `PRAGMA user_version = 1`). A fixture: never change it.
    static let legacySchemaSQL = """
        CREATE TABLE IF NOT EXISTS events(id INTEGER PRIMARY KEY AUTOINCREMENT, track_id TEXT NOT NULL,
            event TEXT NOT NULL, time_ms INTEGER NOT NULL, priority INTEGER NOT NULL, json TEXT NOT NULL);
        CREATE INDEX IF NOT EXISTS events_by_priority ON events(priority, id);
        CREATE TABLE IF NOT EXISTS quarantine(id INTEGER PRIMARY KEY AUTOINCREMENT, event_id INTEGER NOT NULL,
            track_id TEXT NOT NULL, event TEXT NOT NULL, time_ms INTEGER NOT NULL, priority INTEGER NOT NULL,
            json TEXT NOT NULL, status INTEGER NOT NULL, reason TEXT NOT NULL, quarantined_ms INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS runs(run_id TEXT PRIMARY KEY, pid INTEGER NOT NULL, boot_id TEXT NOT NULL,
            start_ticks INTEGER NOT NULL, start_wall_ms INTEGER NOT NULL, start_mono_ns INTEGER NOT NULL,
            refresh_wall_ms INTEGER NOT NULL, refresh_mono_ns INTEGER NOT NULL, app_name TEXT NOT NULL,
            app_version TEXT NOT NULL, anonymous_id TEXT, login_id TEXT);
        CREATE TABLE IF NOT EXISTS ingested(name TEXT PRIMARY KEY, ingested_ms INTEGER NOT NULL);
        PRAGMA user_version = 1;
        """

    /// Writes a store file the way the pre-migrator code did (WAL, one IMMEDIATE transaction), with rows.
    func writeLegacyStore(_ path: String) throws {
        var configuration = DatabaseQueue.Configuration()
        configuration.prepareDatabase = { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        let pool = try DatabaseQueue(path: path, configuration: configuration)
        try pool.write { db in try db.execute(sql: Self.legacySchemaSQL) }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try pool.write { db in
            try db.execute(sql: """
                INSERT INTO events(track_id, event, time_ms, priority, json) VALUES
                    ('t1', 'Old1', 1001, 0, '{"event":"Old1"}'),
                    ('t2', 'OldCrash', 1002, 1, '{"event":"OldCrash"}'),
                    ('t3', 'Old3', 1003, 0, '{"event":"Old3"}');
                INSERT INTO quarantine(event_id, track_id, event, time_ms, priority, json, status, reason, quarantined_ms)
                    VALUES(99, 'tq', 'Refused', 900, 0, '{"event":"Refused"}', 400, 'HTTP 400: bad', 950);
                INSERT INTO meta(key, value) VALUES ('anonymous_id', 'legacy-anon'), ('login_id', 'legacy-user'),
                    ('super_properties', '{"plan":"pro"}'), ('first_start_ms', '1000'),
                    ('last_upload_ms', '950'), ('last_upload_status', '400'), ('last_upload_events', '1'),
                    ('last_upload_error', 'HTTP 400: bad');
                INSERT INTO counters(name, value) VALUES ('evicted_ordinary', 7), ('dropped_oversize', 2);
                INSERT INTO runs(run_id, pid, boot_id, start_ticks, start_wall_ms, start_mono_ns, refresh_wall_ms,
                    refresh_mono_ns, app_name, app_version, anonymous_id, login_id)
                    VALUES ('legacy-run', 4242, 'boot', 77, 1000, 5000000000, 1500, 7000000000, 'LegacyApp', '0.9',
                            'legacy-anon', 'legacy-user');
                """)
            try db.execute(sql: "INSERT INTO ingested(name, ingested_ms) VALUES('crash-1000-4242.ccrec', ?)", arguments: [now])
        }
        try pool.close()
    }

    func rawRead<T>(_ path: String, _ body: (Database) throws -> T) throws -> T {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read(body)
    }

    func rawWrite(_ path: String, _ body: (Database) throws -> Void) throws {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction(body)
    }

    func testAStoreWrittenByThePreMigratorCodeOpensWithAllItsRows() throws {
        let directory = try Scratch.directory("legacy")
        let path = directory + "/s.sqlite"
        try writeLegacyStore(path)
        // The read-only inspector reads it before any migration (no grdb_migrations yet).
        XCTAssertEqual(try TrackingStore.inspect(path: path).0.pending, 3)

        let store = try TrackingStore(path: path)
        XCTAssertEqual(store.movedAsideCorruptFiles, [])
        XCTAssertEqual(try store.pendingBatch(limit: 10).map(\.event), ["Old1", "OldCrash", "Old3"])
        XCTAssertEqual(try store.pendingBatch(limit: 10).map(\.id), [1, 2, 3])
        let quarantined = try store.quarantinedEvents()
        XCTAssertEqual(quarantined.map(\.event.event), ["Refused"])
        XCTAssertEqual(quarantined.first?.reason, "HTTP 400: bad")
        let summary = try store.summary()
        XCTAssertEqual(summary.counters, ["evicted_ordinary": 7, "dropped_oversize": 2])
        XCTAssertEqual(summary.pendingCrash, 1)
        XCTAssertEqual(summary.lastUpload, UploadOutcome(time: 950, status: 400, events: 1, error: "HTTP 400: bad"))
        XCTAssertEqual(summary.runMarkers, 1)
        let markers = try store.runMarkers()
        XCTAssertEqual(markers.map(\.runID), ["legacy-run"])
        XCTAssertEqual(markers.first?.process, ProcessIdentity(pid: 4242, bootID: "boot", startTicks: 77))
        XCTAssertEqual(markers.first?.identity, EventIdentity(anonymousID: "legacy-anon", loginID: "legacy-user"))
        XCTAssertEqual(markers.first?.knownDurationSeconds, 2)
        XCTAssertNil(markers.first?.oomKills, "a marker of schema version 1 has no OOM-kill reading")

        let state = try store.loadState()
        XCTAssertEqual(state.anonymousID, "legacy-anon")
        XCTAssertEqual(state.loginID, "legacy-user")
        XCTAssertEqual(state.superProperties, ["plan": .string("pro")])
        XCTAssertFalse(state.isFirstStart, "first_start_ms was already set")

        // The claim the old code took as an ingested record name still holds.
        XCTAssertTrue(try store.isClaimed("crash-1000-4242.ccrec"))
        XCTAssertFalse(try store.appendOnce([NewEvent(trackID: "x", event: "Again", time: 1, priority: .crash, json: "{}")],
                                            claim: "crash-1000-4242.ccrec"))
        // New rows continue the old ones' order.
        XCTAssertEqual(try store.append([NewEvent(trackID: "n", event: "New", time: 2, priority: .ordinary, json: "{}")]), 4)
        XCTAssertEqual(try store.pendingBatch(limit: 10).map(\.id), [1, 2, 3, 4])
        store.close()

        // The migrator recorded the adoption and v2 (the run marker's OOM-kill columns); no table was added but its own.
        try rawRead(path) { db in
            XCTAssertEqual(try Int.fetchOne(db, sql: "PRAGMA user_version"), 2)
            XCTAssertEqual(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations"), ["v1", "v2"])
            XCTAssertEqual(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"),
                           ["counters", "events", "grdb_migrations", "ingested", "meta", "quarantine", "runs", "sqlite_sequence"])
        }
        // And it opens again (already migrated), for writing and for inspection.
        let again = try TrackingStore(path: path)
        XCTAssertEqual(try again.pendingCount(), 4)
        again.close()
        XCTAssertEqual(try TrackingStore.inspect(path: path).0.pending, 4)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains("corrupt") }, [])
    }

    /// A store as the store's earlier code wrote it through GRDB (three runs of the `analytics`
    /// launch program, then checkpointed into one file with 1 KiB pages to keep the fixture small):
    /// it opens with every row, and nothing is migrated again, since `grdb_migrations` already
    /// lists every migration.
    func testAStoreWrittenThroughGRDBOpensWithAllItsRowsAndIsNotMigratedAgain() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/store-written-by-grdb.sqlite").path
        let directory = try Scratch.directory("grdb-written")
        let path = directory + "/events.sqlite"
        try FileManager.default.copyItem(atPath: fixture, toPath: path)
        let schemaSQL = "SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master ORDER BY name"
        let schemaBefore = try rawRead(path) { try String.fetchAll($0, sql: schemaSQL) }
        XCTAssertEqual(schemaBefore.count, 14)

        let store = try TrackingStore(path: path)
        XCTAssertEqual(store.movedAsideCorruptFiles, [])
        XCTAssertEqual(try store.pendingBatch(limit: 10).map(\.event), ["$AppStart", "$AppEnd", "$AppStart", "$AppEnd", "$AppStart", "$AppEnd"])
        let state = try store.loadState()
        XCTAssertEqual(state.anonymousID, "0ab344f5-6312-4bdc-a6be-bc7481e865e2")
        XCTAssertFalse(state.isFirstStart)
        XCTAssertFalse(try store.claimRunsToldByHost(), "the GRDB-based code had marked it")
        XCTAssertEqual(try store.append([NewEvent(trackID: "n", event: "New", time: 2, priority: .ordinary, json: "{}")]), 7)
        store.close()

        try rawRead(path) { db in
            XCTAssertEqual(try String.fetchAll(db, sql: schemaSQL), schemaBefore)
            XCTAssertEqual(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid"), ["v1", "v2"])
            XCTAssertEqual(try Int.fetchOne(db, sql: "PRAGMA user_version"), 2)
        }
        XCTAssertEqual(try TrackingStore.inspect(path: path).0.pending, 7)
    }

    func testANewStoreGetsTheSameSchemaAsAPreMigratorStoreMigrated() throws {
        let directory = try Scratch.directory("schema")
        let legacy = directory + "/legacy.sqlite"
        let current = directory + "/current.sqlite"
        try writeLegacyStore(legacy)
        try TrackingStore(path: legacy).close()
        try TrackingStore(path: current).close()
        let sql = "SELECT type, name, sql FROM sqlite_master WHERE tbl_name <> 'grdb_migrations' ORDER BY name"
        func schema(_ path: String) throws -> [String] {
            try rawRead(path) { db in try Row.fetchAll(db, sql: sql).map { "\($0["type"] as String) \($0["name"] as String) \($0["sql"] as String?)" } }
        }
        XCTAssertEqual(try schema(current), try schema(legacy))
        XCTAssertEqual(try rawRead(current) { try Int.fetchOne($0, sql: "PRAGMA user_version") }, 2)
        XCTAssertEqual(try rawRead(current) { try Row.fetchAll($0, sql: "PRAGMA table_info(runs)").map { $0["name"] as String } }.suffix(3),
                       ["oom_counter_path", "oom_counter_inode", "oom_kills"])
    }

    func testAStoreWrittenByANewerSchemaIsRefusedAndLeftAlone() throws {
        let directory = try Scratch.directory("newer")
        let path = directory + "/s.sqlite"
        do {
            let store = try TrackingStore(path: path)
            try store.append([NewEvent(trackID: "t", event: "Kept", time: 1, priority: .ordinary, json: "{}")])
            store.close()
        }
        func assertRefused(_ what: String, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertThrowsError(try TrackingStore(path: path), what, file: file, line: line) { error in
                XCTAssertEqual((error as? TrackingStoreError)?.kind, .newerSchema, "\(error)", file: file, line: line)
                XCTAssertTrue("\(error)".contains("newer"), "\(error)", file: file, line: line)
            }
            XCTAssertThrowsError(try TrackingStore.inspect(path: path), what, file: file, line: line) { error in
                XCTAssertEqual((error as? TrackingStoreError)?.kind, .newerSchema, "\(error)", file: file, line: line)
                XCTAssertTrue("\(error)".contains("newer"), "\(error)", file: file, line: line)
            }
        }

        // A migration this code does not know.
        try rawWrite(path) { db in try db.execute(sql: "INSERT INTO grdb_migrations(identifier) VALUES('v3-from-the-future')") }
        assertRefused("unknown migration")
        // A schema version above ours (without GRDB's bookkeeping).
        try rawWrite(path) { db in
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v3-from-the-future'; PRAGMA user_version = 3")
        }
        assertRefused("user_version 3")

        // Refused, not moved aside, not rewritten: the rows are still there.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains("corrupt") }, [])
        try rawRead(path) { db in
            XCTAssertEqual(try Int.fetchOne(db, sql: "PRAGMA user_version"), 3)
            XCTAssertEqual(try String.fetchAll(db, sql: "SELECT event FROM events"), ["Kept"])
        }
        // Back to a version this code knows, it opens with its rows.
        try rawWrite(path) { db in try db.execute(sql: "PRAGMA user_version = 2") }
        let store = try TrackingStore(path: path)
        XCTAssertEqual(try store.pendingBatch(limit: 10).map(\.event), ["Kept"])
        store.close()
    }

    func testStoresOpenedAtOnceOnANewFileAllMigrateIt() throws {
        // Separate pools are separate SQLite connections: they race as separate processes would.
        for round in 0..<10 {
            let path = try Scratch.directory("race-\(round)") + "/s.sqlite"
            let errors = NSLock()
            nonisolated(unsafe) var failures: [String] = []
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                do { try TrackingStore(path: path).close() } catch { errors.withLock { failures.append("\(error)") } }
            }
            XCTAssertEqual(failures, [], "round \(round)")
            XCTAssertEqual(try rawRead(path) { try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations") }, ["v1", "v2"])
        }
    }
}
