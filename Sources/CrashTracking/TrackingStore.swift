// TrackingStore.swift — the SQLite (GRDB, WAL) store events wait in until a server acknowledged them.
//
// Tables (schema version 1, see docs/tracking.md):
//   events(id, track_id, event, time_ms, priority, json)   pending events, in commit order (id)
//   quarantine(id, event_id, track_id, event, json, status, reason, quarantined_ms)
//   meta(key, value)                                      anonymous id, login id, super properties, upload lease/outcome
//   counters(name, value)                                 evictions and drops: nothing disappears uncounted
//   runs(run_id, pid, boot_id, start_ticks, ...)          one run marker per live (or unreported) process
//   ingested(name, ingested_ms)                           crash records already turned into events
//
// Every write is one IMMEDIATE transaction, so two processes sharing the file serialize on
// SQLite's lock (with a busy timeout) instead of failing.
import CrashEvents
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// An event ready to be stored.
public struct NewEvent: Sendable {
    public var trackID: String
    public var event: String
    public var time: Int64
    public var priority: EventPriority
    /// The complete JSON object.
    public var json: String

    public init(trackID: String, event: String, time: Int64, priority: EventPriority, json: String) {
        self.trackID = trackID
        self.event = event
        self.time = time
        self.priority = priority
        self.json = json
    }
}

/// A pending (or quarantined) event as stored.
public struct StoredEvent: Sendable, Equatable {
    /// Position in the store's order (SQLite rowid).
    public var id: Int64
    public var trackID: String
    public var event: String
    public var time: Int64
    public var priority: EventPriority
    public var json: String
}

/// A quarantined event and why the server refused it.
public struct QuarantinedEvent: Sendable, Equatable {
    public var event: StoredEvent
    /// HTTP status of the refusal (0 when quarantined for another reason).
    public var status: Int
    public var reason: String
    public var quarantinedAt: Int64
}

/// One process's run marker: refreshed while it runs, removed when its `$AppEnd` is stored.
public struct RunMarker: Sendable, Equatable {
    public var runID: String
    public var process: ProcessIdentity
    public var startWallMilliseconds: Int64
    public var startMonotonicNanoseconds: Int64
    public var refreshWallMilliseconds: Int64
    public var refreshMonotonicNanoseconds: Int64
    public var appName: String
    public var appVersion: String
    public var identity: EventIdentity

    public init(runID: String, process: ProcessIdentity, startWallMilliseconds: Int64, startMonotonicNanoseconds: Int64,
                refreshWallMilliseconds: Int64, refreshMonotonicNanoseconds: Int64, appName: String, appVersion: String,
                identity: EventIdentity) {
        self.runID = runID
        self.process = process
        self.startWallMilliseconds = startWallMilliseconds
        self.startMonotonicNanoseconds = startMonotonicNanoseconds
        self.refreshWallMilliseconds = refreshWallMilliseconds
        self.refreshMonotonicNanoseconds = refreshMonotonicNanoseconds
        self.appName = appName
        self.appVersion = appVersion
        self.identity = identity
    }

    /// Seconds the run is known to have lived (monotonic, start to last refresh).
    public var knownDurationSeconds: Double {
        Double(max(0, refreshMonotonicNanoseconds - startMonotonicNanoseconds)) / 1e9
    }
}

/// What the inspector shows about a store.
public struct StoreSummary: Sendable, Equatable {
    public var path: String
    public var pending: Int
    public var pendingCrash: Int
    public var quarantined: Int
    /// Evictions and drops by reason: `evicted_ordinary`, `evicted_crash`, `evicted_quarantine`,
    /// `dropped_queue_full`, `dropped_oversize`, `dropped_store_error`.
    public var counters: [String: Int]
    public var oldestPending: StoredEvent?
    public var lastUpload: UploadOutcome?
    public var runMarkers: Int
    public var anonymousID: String?
}

/// The outcome of the most recent upload attempt.
public struct UploadOutcome: Sendable, Equatable {
    public var time: Int64
    /// HTTP status, or 0 for a network error.
    public var status: Int
    public var events: Int
    public var error: String?
}

/// Persistent state a tracker starts from.
public struct StoreState: Sendable {
    public var anonymousID: String
    public var loginID: String?
    public var superProperties: [String: JSONScalar]
    /// `true` only for the first process ever to start on this store.
    public var isFirstStart: Bool
}

/// Limits that keep the store bounded. Defaults: 10,000 pending events, 1,000 quarantined,
/// 64 KiB per event — about 10–20 MB at most.
public struct StoreLimits: Sendable {
    public var maxEvents: Int = 10_000
    public var maxQuarantined: Int = 1_000
    public var maxEventBytes: Int = 64 * 1024
    public init(maxEvents: Int = 10_000, maxQuarantined: Int = 1_000, maxEventBytes: Int = 64 * 1024) {
        self.maxEvents = maxEvents
        self.maxQuarantined = maxQuarantined
        self.maxEventBytes = maxEventBytes
    }
}

/// A failure of the store that the caller may want to show (the store itself never traps).
public struct TrackingStoreError: Error, CustomStringConvertible {
    public let operation: String
    public let underlying: String
    public var description: String { "\(operation): \(underlying)" }
}

/// The SQLite tracking store. Thread-safe; one instance per process and file is enough, and
/// several processes may open the same file.
// @unchecked: the pool and the moved-aside list change only under `lock`; GRDB's pool is
// itself thread-safe.
public final class TrackingStore: @unchecked Sendable {
    public let path: String
    public let limits: StoreLimits
    /// Where a corrupt file found at open (or later) was moved, if that happened. Read under the
    /// same lock the recovery appends under (a writer thread may recover while a caller reads).
    public var movedAsideCorruptFiles: [String] { lock.withLock { _movedAsideCorruptFiles } }
    private var _movedAsideCorruptFiles: [String] = []

    private let lock = NSLock()
    private var pool: DatabasePool

    /// Opens (creating if needed) the store at `path`. A file that is not a database or is
    /// corrupt is moved aside to `<path>.corrupt-<ms>` and a fresh store is created.
    /// - Throws: ``TrackingStoreError`` when the file cannot be opened at all (permissions, no space).
    public init(path: String, limits: StoreLimits = StoreLimits()) throws {
        self.path = path
        self.limits = limits
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        var moved: [String] = []
        do {
            pool = try TrackingStore.openRetryingBusy(path)
        } catch let error as DatabaseError where TrackingStore.isCorruption(error) {
            moved.append(TrackingStore.moveAside(path))
            do { pool = try TrackingStore.openRetryingBusy(path) } catch {
                throw TrackingStoreError(operation: "open \(path) after moving a corrupt file aside", underlying: "\(error)")
            }
        } catch {
            throw TrackingStoreError(operation: "open \(path)", underlying: "\(error)")
        }
        _movedAsideCorruptFiles = moved
    }

    static func isCorruption(_ error: Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB
    }

    /// Two processes opening a new store at the same moment race to switch it to WAL, and
    /// SQLite answers `PRAGMA journal_mode = WAL` with SQLITE_BUSY at once (the busy timeout
    /// does not apply to that lock). Retry for up to 10 s with a growing pause.
    private static func openRetryingBusy(_ path: String) throws -> DatabasePool {
        var pauseMicroseconds: UInt32 = 5_000
        let deadline = Clock.wallMilliseconds() + 10_000
        while true {
            do { return try openChecked(path) } catch let error as DatabaseError
                where (error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED) && Clock.wallMilliseconds() < deadline {
                usleep(pauseMicroseconds + UInt32.random(in: 0...pauseMicroseconds))
                pauseMicroseconds = min(pauseMicroseconds * 2, 200_000)
            }
        }
    }

    private static func openChecked(_ path: String) throws -> DatabasePool {
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.label = "CrashTracking"
        let pool = try DatabasePool(path: path, configuration: config)
        try pool.writeWithoutTransaction { db in
            try db.inTransaction(.immediate) {
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
                return .commit
            }
        }
        let check = try pool.read { db in try String.fetchOne(db, sql: "PRAGMA quick_check(1)") }
        if check != "ok" {
            try? pool.close()
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "quick_check: \(check ?? "nil")")
        }
        return pool
    }

    private static func moveAside(_ path: String) -> String {
        let target = "\(path).corrupt-\(Clock.wallMilliseconds())"
        rename(path, target)
        for suffix in ["-wal", "-shm"] { rename(path + suffix, target + suffix) }
        return target
    }

    /// Runs `body` in one IMMEDIATE transaction. A corrupt database found on the way is moved
    /// aside and reopened empty (the batch is retried once on the fresh file).
    @discardableResult
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        for attempt in 0..<2 {
            let current = lock.withLock { pool }
            do {
                var result: T?
                try current.writeWithoutTransaction { db in
                    try db.inTransaction(.immediate) {
                        result = try body(db)
                        return .commit
                    }
                }
                return result!
            } catch where attempt == 0 && TrackingStore.isCorruption(error) {
                try recoverFromCorruption(seen: current)
            }
        }
        preconditionFailure("unreachable")
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        let current = lock.withLock { pool }
        return try current.read { db in try body(db) }
    }

    private func recoverFromCorruption(seen: DatabasePool) throws {
        try lock.withLock {
            guard pool === seen else { return } // another thread already did it
            try? pool.close()
            _movedAsideCorruptFiles.append(TrackingStore.moveAside(path))
            pool = try TrackingStore.openRetryingBusy(path)
        }
    }

    // MARK: - State

    /// Loads the anonymous id (creating it on first use), login id, super properties, and
    /// whether this is the store's very first start (claimed atomically by one process).
    public func loadState(claimingFirstStart: Bool = true) throws -> StoreState {
        try write { db in
            var anonymous = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'anonymous_id'")
            if anonymous == nil {
                anonymous = EventDraft.newTrackID()
                try Self.setMeta(db, "anonymous_id", anonymous)
            }
            let login = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'login_id'")
            let superText = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'super_properties'")
            var first = false
            if claimingFirstStart, try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'first_start_ms'") == nil {
                first = true
                try Self.setMeta(db, "first_start_ms", String(Clock.wallMilliseconds()))
            }
            return StoreState(anonymousID: anonymous!, loginID: login,
                              superProperties: superText.map(SuperPropertiesCoding.decode) ?? [:], isFirstStart: first)
        }
    }

    /// Persists the login id (`nil` = logged out).
    public func setLoginID(_ id: String?) throws {
        try write { db in try Self.setMeta(db, "login_id", id) }
    }

    /// Persists the super properties.
    public func setSuperProperties(_ properties: [String: JSONScalar]) throws {
        try write { db in try Self.setMeta(db, "super_properties", SuperPropertiesCoding.encode(properties)) }
    }

    static func setMeta(_ db: Database, _ key: String, _ value: String?) throws {
        if let value {
            try db.execute(sql: "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           arguments: [key, value])
        } else {
            try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [key])
        }
    }

    static func addCounter(_ db: Database, _ name: String, _ delta: Int) throws {
        guard delta != 0 else { return }
        try db.execute(sql: "INSERT INTO counters(name, value) VALUES(?, ?) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                       arguments: [name, delta])
    }

    /// Adds `delta` to a named counter (drops the caller counted before they reached the store).
    public func addCounter(_ name: String, _ delta: Int) throws {
        try write { db in try Self.addCounter(db, name, delta) }
    }

    // MARK: - Appending

    /// What one append transaction should also do besides inserting events.
    public struct AppendExtras: Sendable {
        /// Remove this run marker (its `$AppEnd` is among the events).
        public var endRuns: [String] = []
        /// Refresh this run marker's clocks.
        public var refreshRun: (id: String, wallMs: Int64, monoNs: Int64)?
        /// Remove these run markers, which must still exist: if any is gone (another process
        /// reported it first), nothing at all is written.
        public var claimRuns: [String] = []
        /// Mark these crash record names ingested; if any already is, nothing at all is written.
        public var ingestedRecords: [String] = []
        /// Counters to add in the same transaction.
        public var counters: [String: Int] = [:]
        public init() {}
    }

    /// Appends events in one transaction, in order, evicting the oldest events beyond the limit
    /// (ordinary first, crash last; every eviction counted). Returns the pending count after,
    /// or `nil` when `extras.ingestedRecords` named a record already ingested (nothing written).
    @discardableResult
    public func append(_ events: [NewEvent], extras: AppendExtras = AppendExtras()) throws -> Int? {
        try write { db -> Int? in
            for name in extras.ingestedRecords {
                if try Int.fetchOne(db, sql: "SELECT 1 FROM ingested WHERE name = ?", arguments: [name]) != nil { return nil }
            }
            for run in extras.claimRuns {
                if try Int.fetchOne(db, sql: "SELECT 1 FROM runs WHERE run_id = ?", arguments: [run]) == nil { return nil }
            }
            var oversize = 0
            let insert = try db.cachedStatement(sql: "INSERT INTO events(track_id, event, time_ms, priority, json) VALUES(?, ?, ?, ?, ?)")
            for event in events {
                if event.json.utf8.count > limits.maxEventBytes { oversize += 1; continue }
                try insert.execute(arguments: [event.trackID, event.event, event.time, event.priority.rawValue, event.json])
            }
            for name in extras.ingestedRecords {
                try db.execute(sql: "INSERT INTO ingested(name, ingested_ms) VALUES(?, ?)", arguments: [name, Clock.wallMilliseconds()])
            }
            for run in extras.endRuns + extras.claimRuns { try db.execute(sql: "DELETE FROM runs WHERE run_id = ?", arguments: [run]) }
            if let refresh = extras.refreshRun {
                try db.execute(sql: "UPDATE runs SET refresh_wall_ms = ?, refresh_mono_ns = ? WHERE run_id = ?",
                               arguments: [refresh.wallMs, refresh.monoNs, refresh.id])
            }
            try Self.addCounter(db, "dropped_oversize", oversize)
            for (name, delta) in extras.counters { try Self.addCounter(db, name, delta) }
            return try evictBeyondLimit(db)
        }
    }

    private func evictBeyondLimit(_ db: Database) throws -> Int {
        var count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events") ?? 0
        guard count > limits.maxEvents else { return count }
        for priority in [EventPriority.ordinary, .crash] where count > limits.maxEvents {
            try db.execute(sql: "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE priority = ? ORDER BY id LIMIT ?)",
                           arguments: [priority.rawValue, count - limits.maxEvents])
            let evicted = db.changesCount
            count -= evicted
            try Self.addCounter(db, priority == .ordinary ? "evicted_ordinary" : "evicted_crash", evicted)
        }
        return count
    }

    // MARK: - Uploading

    /// The oldest `limit` pending events, in order.
    public func pendingBatch(limit: Int) throws -> [StoredEvent] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT id, track_id, event, time_ms, priority, json FROM events ORDER BY id LIMIT ?",
                             arguments: [limit]).map(Self.storedEvent)
        }
    }

    /// Number of pending events.
    public func pendingCount() throws -> Int {
        try read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events") ?? 0 }
    }

    static func storedEvent(_ row: Row) -> StoredEvent {
        StoredEvent(id: row["id"], trackID: row["track_id"], event: row["event"], time: row["time_ms"],
                    priority: EventPriority(rawValue: row["priority"]) ?? .ordinary, json: row["json"])
    }

    /// Removes delivered events and records the outcome, in one transaction.
    public func markDelivered(_ ids: [Int64], status: Int) throws {
        try write { db in
            for chunk in stride(from: 0, to: ids.count, by: 500) {
                let part = ids[chunk..<min(ids.count, chunk + 500)]
                try db.execute(sql: "DELETE FROM events WHERE id IN (\(part.map { String($0) }.joined(separator: ",")))")
            }
            try Self.recordOutcome(db, UploadOutcome(time: Clock.wallMilliseconds(), status: status, events: ids.count, error: nil))
            try Self.setMeta(db, "last_success_ms", String(Clock.wallMilliseconds()))
        }
    }

    /// Moves events to the quarantine (oldest quarantined evicted beyond the limit, counted).
    public func quarantine(_ events: [StoredEvent], status: Int, reason: String) throws {
        try write { db in
            let now = Clock.wallMilliseconds()
            for event in events {
                try db.execute(sql: """
                    INSERT INTO quarantine(event_id, track_id, event, time_ms, priority, json, status, reason, quarantined_ms)
                    VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [event.id, event.trackID, event.event, event.time, event.priority.rawValue, event.json,
                                     status, reason, now])
                try db.execute(sql: "DELETE FROM events WHERE id = ?", arguments: [event.id])
            }
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM quarantine") ?? 0
            if count > limits.maxQuarantined {
                try db.execute(sql: "DELETE FROM quarantine WHERE id IN (SELECT id FROM quarantine ORDER BY id LIMIT ?)",
                               arguments: [count - limits.maxQuarantined])
                try Self.addCounter(db, "evicted_quarantine", db.changesCount)
            }
            try Self.recordOutcome(db, UploadOutcome(time: now, status: status, events: events.count, error: reason))
        }
    }

    /// Records a failed attempt (nothing leaves the store).
    public func recordFailure(status: Int, events: Int, error: String) throws {
        try write { db in
            try Self.recordOutcome(db, UploadOutcome(time: Clock.wallMilliseconds(), status: status, events: events, error: error))
        }
    }

    static func recordOutcome(_ db: Database, _ outcome: UploadOutcome) throws {
        try setMeta(db, "last_upload_ms", String(outcome.time))
        try setMeta(db, "last_upload_status", String(outcome.status))
        try setMeta(db, "last_upload_events", String(outcome.events))
        try setMeta(db, "last_upload_error", outcome.error)
    }

    /// Takes (or keeps) the upload lease so that only one process sharing the store uploads at a
    /// time. Granted when free, expired, held by us, or held by a process that no longer lives.
    public func acquireUploadLease(_ me: ProcessIdentity = .current, seconds: Double = 60) throws -> Bool {
        try write { db in
            let now = Clock.wallMilliseconds()
            if let text = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'upload_lease'") {
                let parts = text.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
                if parts.count == 4, let pid = Int32(parts[0]), let ticks = Int64(parts[2]), let expiry = Int64(parts[3]) {
                    let holder = ProcessIdentity(pid: pid, bootID: parts[1], startTicks: ticks)
                    if holder != me && expiry > now && holder.isAlive { return false }
                }
            }
            try Self.setMeta(db, "upload_lease", "\(me.pid)|\(me.bootID)|\(me.startTicks)|\(now + Int64(seconds * 1000))")
            return true
        }
    }

    /// Gives the upload lease back if we hold it.
    public func releaseUploadLease(_ me: ProcessIdentity = .current) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM meta WHERE key = 'upload_lease' AND value LIKE ?",
                           arguments: ["\(me.pid)|\(me.bootID)|\(me.startTicks)|%"])
        }
    }

    // MARK: - Run markers

    /// Stores the marker of a run that has just started.
    public func registerRun(_ marker: RunMarker) throws {
        try write { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO runs(run_id, pid, boot_id, start_ticks, start_wall_ms, start_mono_ns, refresh_wall_ms,
                    refresh_mono_ns, app_name, app_version, anonymous_id, login_id) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)
                """, arguments: [marker.runID, marker.process.pid, marker.process.bootID, marker.process.startTicks,
                                 marker.startWallMilliseconds, marker.startMonotonicNanoseconds, marker.refreshWallMilliseconds,
                                 marker.refreshMonotonicNanoseconds, marker.appName, marker.appVersion,
                                 marker.identity.anonymousID, marker.identity.loginID])
        }
    }

    /// Updates the identity a run's synthesized `$AppEnd` would carry.
    public func updateRunIdentity(_ runID: String, identity: EventIdentity) throws {
        try write { db in
            try db.execute(sql: "UPDATE runs SET anonymous_id = ?, login_id = ? WHERE run_id = ?",
                           arguments: [identity.anonymousID, identity.loginID, runID])
        }
    }

    /// Every run marker in the store.
    public func runMarkers() throws -> [RunMarker] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM runs ORDER BY start_wall_ms").map { row in
                RunMarker(runID: row["run_id"],
                          process: ProcessIdentity(pid: row["pid"], bootID: row["boot_id"], startTicks: row["start_ticks"]),
                          startWallMilliseconds: row["start_wall_ms"], startMonotonicNanoseconds: row["start_mono_ns"],
                          refreshWallMilliseconds: row["refresh_wall_ms"], refreshMonotonicNanoseconds: row["refresh_mono_ns"],
                          appName: row["app_name"], appVersion: row["app_version"],
                          identity: EventIdentity(anonymousID: row["anonymous_id"], loginID: row["login_id"]))
            }
        }
    }

    /// Forgets ingested crash record names older than `age` seconds (their files are long gone).
    public func pruneIngested(olderThan age: Double = 30 * 86400) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM ingested WHERE ingested_ms < ?", arguments: [Clock.wallMilliseconds() - Int64(age * 1000)])
        }
    }

    /// Whether a crash record of this name was already turned into events.
    public func wasIngested(_ name: String) throws -> Bool {
        try read { db in try Int.fetchOne(db, sql: "SELECT 1 FROM ingested WHERE name = ?", arguments: [name]) != nil }
    }

    // MARK: - Inspection

    /// Counts, the oldest pending event and the last upload outcome.
    public func summary() throws -> StoreSummary {
        try read { db in try Self.summary(db, path: path) }
    }

    /// The most recently quarantined events, newest first.
    public func quarantinedEvents(limit: Int = 100) throws -> [QuarantinedEvent] {
        try read { db in try Self.quarantined(db, limit: limit) }
    }

    /// Reads a store without writing to it (for the inspector; safe while a tracker runs).
    /// - Throws: ``TrackingStoreError`` when the file is missing or not a store.
    public static func inspect(path: String, quarantineLimit: Int = 100) throws -> (StoreSummary, [QuarantinedEvent]) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw TrackingStoreError(operation: "inspect \(path)", underlying: "no such file")
        }
        do {
            var config = Configuration()
            config.readonly = true
            config.busyMode = .timeout(5)
            let queue = try DatabaseQueue(path: path, configuration: config)
            defer { try? queue.close() }
            return try queue.read { db in (try summary(db, path: path), try quarantined(db, limit: quarantineLimit)) }
        } catch {
            throw TrackingStoreError(operation: "inspect \(path)", underlying: "\(error)")
        }
    }

    static func summary(_ db: Database, path: String) throws -> StoreSummary {
        var counters: [String: Int] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT name, value FROM counters") { counters[row["name"]] = row["value"] }
        let meta = Dictionary(try Row.fetchAll(db, sql: "SELECT key, value FROM meta").map { ($0["key"] as String, $0["value"] as String) },
                              uniquingKeysWith: { a, _ in a })
        var last: UploadOutcome?
        if let time = meta["last_upload_ms"].flatMap(Int64.init) {
            last = UploadOutcome(time: time, status: meta["last_upload_status"].flatMap(Int.init) ?? 0,
                                 events: meta["last_upload_events"].flatMap(Int.init) ?? 0, error: meta["last_upload_error"])
        }
        return StoreSummary(
            path: path,
            pending: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events") ?? 0,
            pendingCrash: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events WHERE priority = 1") ?? 0,
            quarantined: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM quarantine") ?? 0,
            counters: counters,
            oldestPending: try Row.fetchOne(db, sql: "SELECT id, track_id, event, time_ms, priority, json FROM events ORDER BY id LIMIT 1")
                .map(storedEvent),
            lastUpload: last,
            runMarkers: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM runs") ?? 0,
            anonymousID: meta["anonymous_id"])
    }

    static func quarantined(_ db: Database, limit: Int) throws -> [QuarantinedEvent] {
        try Row.fetchAll(db, sql: "SELECT * FROM quarantine ORDER BY id DESC LIMIT ?", arguments: [limit]).map { row in
            QuarantinedEvent(
                event: StoredEvent(id: row["event_id"], trackID: row["track_id"], event: row["event"], time: row["time_ms"],
                                   priority: EventPriority(rawValue: row["priority"]) ?? .ordinary, json: row["json"]),
                status: row["status"], reason: row["reason"], quarantinedAt: row["quarantined_ms"])
        }
    }

    /// Copies the WAL into the main file and truncates it (tests and tools; not needed for safety).
    func checkpoint() throws {
        let current = lock.withLock { pool }
        try current.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    /// Closes the database (further calls fail with an error, never a trap).
    public func close() {
        lock.withLock { try? pool.close() }
    }
}

/// Super properties as stored in `meta`: a JSON object of scalars.
enum SuperPropertiesCoding {
    static func encode(_ properties: [String: JSONScalar]) -> String {
        "{" + properties.keys.sorted().map { "\(JSONText.quote($0)):\(properties[$0]!.json)" }.joined(separator: ",") + "}"
    }

    static func decode(_ text: String) -> [String: JSONScalar] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return [:] }
        var out: [String: JSONScalar] = [:]
        for (key, value) in object {
            if let scalar = JSONScalar(any: value) { out[key] = scalar }
        }
        return out
    }
}

extension JSONScalar {
    /// A scalar from a `JSONSerialization` value (NSNumber booleans become `.bool`).
    public init?(any value: Any) {
        switch value {
        case let s as String: self = .string(s)
        case let n as NSNumber:
            switch String(cString: n.objCType) {
            case "c", "B": self = .bool(n.boolValue)
            case "f", "d": self = .double(n.doubleValue)
            default: self = .int(n.intValue)
            }
        default: return nil
        }
    }
}
