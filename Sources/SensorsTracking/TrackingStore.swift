// TrackingStore.swift — the SQLite (WAL) store events wait in until a server acknowledged them.
//
// This file owns the connection: open, the schema check, corruption recovery, and the one
// `write`/`read` path every table goes through. Each table's statements live in Store/:
//   StoreSchema.swift       the migrator: the only DDL, and the refusal of a newer schema
//   EventQueue.swift        events: append, pending batches, delivered, eviction
//   Quarantine.swift        quarantine: refused events
//   UploadLease.swift       meta: the upload lease and the last upload outcome
//   StoreStateTable.swift   meta and counters: anonymous id, login id, super properties, counters
//   RunMarkers.swift        runs: one marker per live (or unreported) process
//   Claims.swift            ingested: appends that happen at most once (claim keys, run claims)
//   StoreSummary.swift      the read-only inspection summary
//
// Every write is one IMMEDIATE transaction, so two processes sharing the file serialize on
// SQLite's lock (with a busy timeout) instead of failing.
import Foundation
import HostFacts
#if canImport(Glibc)
import Glibc
#endif

/// Limits that keep the store bounded. Defaults: 10,000 pending events, 1,000 quarantined,
/// 64 KiB per event — about 10–20 MB at most.
public struct StoreLimits: Sendable {
    /// Events waiting for upload at most; beyond it the oldest are evicted (ordinary events before crashes) and counted.
    public var maxEvents: Int = 10_000
    /// Events the server refused, kept for inspection, at most.
    public var maxQuarantined: Int = 1_000
    /// The largest event stored, in bytes of JSON; a larger one is dropped and counted.
    public var maxEventBytes: Int = 64 * 1024
    /// Limits with these values.
    public init(maxEvents: Int = 10_000, maxQuarantined: Int = 1_000, maxEventBytes: Int = 64 * 1024) {
        self.maxEvents = maxEvents
        self.maxQuarantined = maxQuarantined
        self.maxEventBytes = maxEventBytes
    }
}

/// A failure of the store that the caller may want to show (the store itself never traps).
public struct TrackingStoreError: Error, CustomStringConvertible {
    /// What kind of failure, for a caller that must act on it.
    package enum Kind: Sendable, Equatable {
        /// The file was written by a newer schema than this code knows; it was left untouched
        /// (an older build must not use it: upgrade, or point it at another file).
        case newerSchema
        /// Anything else (I/O, SQLite, a file that is not a store).
        case other
    }
    package let operation: String
    package let underlying: String
    package let kind: Kind
    public var description: String { "\(operation): \(underlying)" }

    package init(operation: String, underlying: String, kind: Kind = .other) {
        self.operation = operation
        self.underlying = underlying
        self.kind = kind
    }
}

/// The SQLite tracking store. Thread-safe; one instance per process and file is enough, and
/// several processes may open the same file.
// @unchecked: `database` (replaced on corruption recovery) and the moved-aside list change only under `lock`.
package final class TrackingStore: @unchecked Sendable {
    package let path: String
    package let limits: StoreLimits
    /// Where a corrupt file found at open (or later) was moved, if that happened. Read under the
    /// same lock the recovery appends under (a writer thread may recover while a caller reads).
    package var movedAsideCorruptFiles: [String] { lock.withLock { _movedAsideCorruptFiles } }
    private var _movedAsideCorruptFiles: [String] = []

    private let lock = NSLock()
    /// Keeps this process's rewrites of the state copy in order (StateCopy.swift).
    let copyLock = NSLock()
    /// The connection; nil until first used when opening was deferred (``init(deferringOpen:limits:)``).
    private var database: DatabaseQueue?
    private var closed = false

    /// Opens (creating or migrating if needed) the store at `path`. A file that is not a
    /// database or is corrupt is moved aside to `<path>.corrupt-<ms>` and a fresh store is created.
    /// - Throws: ``TrackingStoreError`` when the file cannot be opened at all (permissions, no
    ///   space), or when it was written by a newer schema than this code knows (it is left as it is).
    package init(path: String, limits: StoreLimits = StoreLimits()) throws {
        self.path = path
        self.limits = limits
        var moved: [String] = []
        database = try TrackingStore.open(path, limits: limits, movedAside: &moved)
        _movedAsideCorruptFiles = moved
    }

    /// A store whose file is opened by its first read or write, on whatever thread makes it:
    /// CrashReporting's launch leaves opening, migrating and checking the file to its tracker's
    /// writer thread. Every read and write throws what ``init(path:limits:)`` would have thrown
    /// until the file can be opened (each one tries again).
    package init(deferringOpen path: String, limits: StoreLimits = StoreLimits()) {
        self.path = path
        self.limits = limits
        database = nil
    }

    /// The connection, opening the file first if that was deferred (or failed before).
    private func connection() throws -> DatabaseQueue {
        try lock.withLock {
            if let database { return database }
            guard !closed else { throw TrackingStoreError(operation: "open \(path)", underlying: "the store was closed") }
            let opened = try TrackingStore.open(path, limits: limits, movedAside: &_movedAsideCorruptFiles)
            database = opened
            return opened
        }
    }

    /// Folds in what the journal holds now (the store's open did it once; readers of the runs do
    /// it again). Opens the store if it is not.
    func foldJournal() throws {
        let database = try connection()
        TrackingStore.foldJournal(path, into: database, limits: limits)
    }

    /// Whether this process has opened the file (a deferred store is not open until its first
    /// read or write). While it is not, a hosted tracker's launch and end go to the journal.
    package var isOpen: Bool { lock.withLock { database != nil } }

    /// Creates the parent directory, opens the file, moves a corrupt one aside (once), and folds
    /// in the journal of quiet runs (LaunchJournal.swift), so every reader sees their events.
    private static func open(_ path: String, limits: StoreLimits, movedAside moved: inout [String]) throws -> DatabaseQueue {
        let database = try openMovingCorruptAside(path, movedAside: &moved)
        foldJournal(path, into: database, limits: limits)
        return database
    }

    private static func openMovingCorruptAside(_ path: String, movedAside moved: inout [String]) throws -> DatabaseQueue {
        let directory = (path as NSString).deletingLastPathComponent
        // Usually there already: one mkdir says so (FileManager's first use costs a launch ≈ 0.1 ms).
        if !directory.isEmpty, mkdir(directory, 0o777) != 0, errno != EEXIST {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        do {
            return try TrackingStore.openRetryingBusy(path)
        } catch let error as TrackingStoreError {
            throw error
        } catch let error as DatabaseError where TrackingStore.isCorruption(error) {
            moved.append(TrackingStore.moveAside(path))
            do { return try TrackingStore.openRetryingBusy(path) } catch {
                throw TrackingStoreError(operation: "open \(path) after moving a corrupt file aside", underlying: "\(error)")
            }
        } catch {
            throw TrackingStoreError(operation: "open \(path)", underlying: "\(error)")
        }
    }

    static func isCorruption(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB
    }

    /// Two processes opening a new store at the same moment race to switch it to WAL, and
    /// SQLite answers `PRAGMA journal_mode = WAL` with SQLITE_BUSY at once (the busy timeout
    /// does not apply to that lock). Retry for up to 10 s with a growing pause.
    private static func openRetryingBusy(_ path: String) throws -> DatabaseQueue {
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

    /// One connection (a `DatabaseQueue`) in WAL mode with `synchronous = NORMAL`: other
    /// processes read while this one writes, and a commit does not wait for the disk (a process
    /// kill loses nothing committed; a power loss may lose the last commits). A `DatabasePool`
    /// cost every launch more than a millisecond beyond this: a second connection for reads
    /// and, whenever the WAL file is empty (after every clean close), a schema write to make
    /// it non-empty (so that its read-only connections can open a WAL database), with Foundation's file attributes to check it.
    private static func openChecked(_ path: String) throws -> DatabaseQueue {
        var config = DatabaseQueue.Configuration()
        config.busyTimeoutSeconds = 10
        config.prepareDatabase = { db in
            let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
            guard mode == "wal" else { throw DatabaseError(message: "could not switch \(path) to WAL (journal mode \(mode ?? "none"))") }
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // A short-lived program exits without closing the store, so its WAL is never
            // checkpointed at a close, and the next launch's open reads every frame of it to
            // rebuild its index: at SQLite's default (1000 pages) a tool run every minute read up
            // to 4 MiB, a page at a time, at each launch. Checkpointed every 64 pages and cut
            // back to 256 KiB after, it reads at most 64.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 64")
            try db.execute(sql: "PRAGMA journal_size_limit = 262144")
        }
        let database = try DatabaseQueue(path: path, configuration: config)
        do {
            try StoreSchema.migrate(database, path: path)
        } catch {
            try? database.close()
            throw error
        }
        // `quick_check` reads every page of the file: ≈ 4 ms a launch for a store holding 10,000
        // unsent events. Run at the first open and then at most once a day (the last good check is
        // in `meta`); in between, the first read or write that meets a damaged page moves the file
        // aside (``read(_:)``, ``write(_:)``), as this check would have.
        let now = Clock.wallMilliseconds()
        let lastCheck = try database.read { db in try TrackingStore.meta(db, TrackingStore.quickCheckKey).flatMap { Int64($0) } }
        if let lastCheck, lastCheck <= now, now - lastCheck < TrackingStore.quickCheckInterval { return database }
        let check = try database.read { db in try String.fetchOne(db, sql: "PRAGMA quick_check(1)") }
        if check != "ok" {
            try? database.close()
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "quick_check: \(check ?? "nil")")
        }
        try database.write { db in try TrackingStore.setMeta(db, TrackingStore.quickCheckKey, String(now)) }
        return database
    }

    /// Where the time of the last `quick_check` that found the file sound is kept (`meta`).
    static let quickCheckKey = "quick_check_ms"
    /// How long an open trusts that check: a day, in milliseconds.
    static let quickCheckInterval: Int64 = 86_400_000

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
        try recovering { current in
            try current.write(body)
        }
    }

    /// Runs `body` in a read transaction. A corrupt database found on the way is moved aside and
    /// reopened empty (the read is retried once on the fresh file), as for ``write(_:)``.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try recovering { current in try current.read { db in try body(db) } }
    }

    /// `operation` on the connection; once more on a fresh file when it met a corrupt one.
    private func recovering<T>(_ operation: (DatabaseQueue) throws -> T) throws -> T {
        for attempt in 0..<2 {
            let current = try connection()
            do {
                return try operation(current)
            } catch where attempt == 0 && TrackingStore.isCorruption(error) {
                try recoverFromCorruption(seen: current)
            }
        }
        preconditionFailure("unreachable")
    }

    private func recoverFromCorruption(seen: DatabaseQueue) throws {
        try lock.withLock {
            guard database === seen else { return } // another thread already did it
            try? seen.close()
            _movedAsideCorruptFiles.append(TrackingStore.moveAside(path))
            let reopened = try TrackingStore.openRetryingBusy(path)
            TrackingStore.foldJournal(path, into: reopened, limits: limits)
            database = reopened
        }
    }

    /// Copies the WAL into the main file and truncates it (tests and tools; not needed for safety).
    func checkpoint() throws {
        try connection().writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    /// Closes the database (further calls fail with an error, never a trap). The last connection
    /// to close checkpoints the WAL into the file, which changes it: a state copy that named the
    /// file before is made to name it after (its state is the same).
    package func close() {
        let copied = lock.withLock { () -> Bool in
            closed = true
            guard let database else { return false }
            let copied = copyNamesFile()
            try? database.close()
            self.database = nil
            return copied
        }
        // Outside `lock`: a rewrite of the copy takes `copyLock` first, then `lock`.
        if copied { restampStateCopy() }
    }

    deinit { close() }
}
