// StoreSchema.swift — the one owner of the tracking store's schema: a GRDB `DatabaseMigrator`.
//
// Every table's DDL is here and nowhere else. Migrations are applied in order at open and recorded
// in GRDB's `grdb_migrations` table; each also sets `PRAGMA user_version` to its schema version.
//
// Version 1 is the schema the store had before the migrator, created by raw SQL at every open with
// `PRAGMA user_version = 1`. Its migration is that SQL, unchanged, with `IF NOT EXISTS`, so a file
// written by the older code is adopted as it is: nothing exists to create, and the migrator only
// records "v1" as applied. Later migrations must not be written that way: one change each, appended.
//
// A file that knows more (a `user_version` above ``StoreSchema/version``, or an applied migration
// this code does not list) was written by newer code; it is refused with a ``TrackingStoreError``
// and left untouched, never used half-understood, never moved aside.
import GRDB

enum StoreSchema {
    /// The schema version this code creates and understands (`PRAGMA user_version`).
    static let version = 2

    /// The migrations, in order. Append only; never edit one that has shipped.
    static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            // The pre-migrator schema, byte for byte (IF NOT EXISTS adopts a file it created).
            try db.execute(sql: """
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
                """)
        }
        migrator.registerMigration("v2") { db in
            // The run marker's last reading of its memory cgroup's OOM-kill counter (OOMKills.swift):
            // NULL in markers written before, and when the run had no counter it could read.
            try db.execute(sql: """
                ALTER TABLE runs ADD COLUMN oom_counter_path TEXT;
                ALTER TABLE runs ADD COLUMN oom_counter_inode INTEGER;
                ALTER TABLE runs ADD COLUMN oom_kills INTEGER;
                PRAGMA user_version = 2;
                """)
        }
        return migrator
    }

    /// Brings the file at `path` to this code's schema. Throws ``TrackingStoreError`` when the
    /// file was written by a newer schema (before touching it), `DatabaseError` otherwise.
    static func migrate(_ database: DatabaseQueue, path: String) throws {
        let migrator = migrator()
        try database.read { db in try refuseNewer(db, migrator: migrator, operation: "open \(path)") }
        for attempt in 1...3 {
            do {
                try migrator.migrate(database)
                break
            } catch let error as DatabaseError
                where attempt < 3 && error.resultCode != .SQLITE_BUSY && error.resultCode != .SQLITE_LOCKED
                && !TrackingStore.isCorruption(error) {
                // Two processes creating the store at once can both find a migration unapplied
                // (GRDB reads `grdb_migrations` before its transaction); the later one then fails
                // recording it. Look again: the migrator skips what the other process applied.
                continue
            }
        }
        // A newer process may have migrated the file between our check and our migration.
        try database.read { db in try refuseNewer(db, migrator: migrator, operation: "open \(path)") }
    }

    /// Throws ``TrackingStoreError`` when `db` was written by a newer schema than this code knows.
    static func refuseNewer(_ db: Database, migrator: DatabaseMigrator = migrator(), operation: String) throws {
        let userVersion = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        let applied = try migrator.appliedIdentifiers(db)
        let known = Set(migrator.migrations)
        let unknown = applied.subtracting(known).sorted()
        guard userVersion > version || !unknown.isEmpty else { return }
        var what = "schema version \(userVersion)"
        if !unknown.isEmpty { what += ", migrations \(unknown.joined(separator: ", "))" }
        throw TrackingStoreError(
            operation: operation,
            underlying: "the store was written by newer code (\(what)); this code knows schema version \(version) "
                + "(migrations \(migrator.migrations.joined(separator: ", "))) and does not use it",
            kind: .newerSchema)
    }
}
