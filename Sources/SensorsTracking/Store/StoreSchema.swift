// StoreSchema.swift — the one owner of the tracking store's schema: its migrations, in order.
//
// Every table's DDL is here and nowhere else. Migrations are applied in order at open and recorded
// in the `grdb_migrations` table (its name from when GRDB's migrator kept it: files written then
// and now read the same, by either code); each also sets `PRAGMA user_version` to its schema version.
//
// Version 1 is the schema the store had before the migrator, created by raw SQL at every open with
// `PRAGMA user_version = 1`. Its migration is that SQL, unchanged, with `IF NOT EXISTS`, so a file
// written by the older code is adopted as it is: nothing exists to create, and the migrator only
// records "v1" as applied. Later migrations must not be written that way: one change each, appended.
//
// A file that knows more (a `user_version` above ``StoreSchema/version``, or an applied migration
// this code does not list) was written by newer code; it is refused with a ``TrackingStoreError``
// and left untouched, never used half-understood, never moved aside.
enum StoreSchema {
    /// The schema version this code creates and understands (`PRAGMA user_version`).
    static let version = 2

    /// The migrations, in order: an identifier and its SQL. Append only; never edit one that has shipped.
    static let migrations: [(identifier: String, sql: String)] = [
        // The pre-migrator schema, byte for byte (IF NOT EXISTS adopts a file it created).
        ("v1", """
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
            """),
        // The run marker's last reading of its memory cgroup's OOM-kill counter (OOMKills.swift):
        // NULL in markers written before, and when the run had no counter it could read.
        ("v2", """
            ALTER TABLE runs ADD COLUMN oom_counter_path TEXT;
            ALTER TABLE runs ADD COLUMN oom_counter_inode INTEGER;
            ALTER TABLE runs ADD COLUMN oom_kills INTEGER;
            PRAGMA user_version = 2;
            """),
    ]

    /// The migrations' identifiers, in order.
    static var identifiers: [String] { migrations.map(\.identifier) }

    /// Brings the file at `path` to this code's schema. Throws ``TrackingStoreError`` when the
    /// file was written by a newer schema (before touching it), `DatabaseError` otherwise.
    /// Every launch but a store's first finds everything applied in one read; otherwise the
    /// migrations run in one IMMEDIATE transaction that reads what is applied first, so of two
    /// processes creating the store at once, the second finds the first one's work and adds nothing.
    static func migrate(_ database: DatabaseQueue, path: String) throws {
        let applied = try database.read { db in try refuseNewer(db, operation: "open \(path)") }
        if Set(identifiers).isSubset(of: applied) { return }
        try database.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
            // A newer process may have migrated the file since the read above.
            let applied = try refuseNewer(db, operation: "open \(path)")
            for migration in migrations where !applied.contains(migration.identifier) {
                try db.execute(sql: migration.sql)
                try db.execute(sql: "INSERT INTO grdb_migrations(identifier) VALUES(?)", arguments: [migration.identifier])
            }
        }
    }

    /// The migrations applied to `db`; throws ``TrackingStoreError`` when `db` was written by a
    /// newer schema than this code knows.
    @discardableResult
    static func refuseNewer(_ db: Database, operation: String) throws -> Set<String> {
        let userVersion = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        let hasTable = try Int.fetchOne(db, sql: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'grdb_migrations'") != nil
        let applied = hasTable ? Set(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")) : []
        let unknown = applied.subtracting(identifiers).sorted()
        guard userVersion > version || !unknown.isEmpty else { return applied }
        var what = "schema version \(userVersion)"
        if !unknown.isEmpty { what += ", migrations \(unknown.joined(separator: ", "))" }
        throw TrackingStoreError(
            operation: operation,
            underlying: "the store was written by newer code (\(what)); this code knows schema version \(version) "
                + "(migrations \(identifiers.joined(separator: ", "))) and does not use it",
            kind: .newerSchema)
    }
}
