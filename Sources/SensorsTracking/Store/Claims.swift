// Claims.swift — appends that happen at most once, even across processes sharing the store.
//
// A claim key (kept in the `ingested` table, its name from schema version 1) is taken in the same
// transaction as the events it guards: once taken, the same append is refused and writes nothing.
// A run claim is the removal of a run marker that must still exist. The store does not know what
// the keys mean; CrashReporter uses crash record file names, Tracker the runs of dead processes.
import HostFacts

extension TrackingStore {
    /// Appends `events` (as ``append(_:registeringRun:endingRun:addingCounters:)`` does) and takes
    /// the claim `key`, in one transaction; `endingRun` removes that run's marker in it too.
    /// - Returns: `false` when `key` was already claimed: nothing at all was written.
    @discardableResult
    package func appendOnce(_ events: [NewEvent], claim key: String, endingRun runID: String? = nil) throws -> Bool {
        try write { db in
            guard try Self.takeClaim(db, key) else { return false }
            if let runID { try Self.deleteRun(db, runID) }
            _ = try insert(db, events)
            return true
        }
    }

    /// Whether `key` was claimed by ``appendOnce(_:claim:endingRun:)`` (and not pruned since).
    package func isClaimed(_ key: String) throws -> Bool {
        try read { db in try Self.isClaimed(db, key) }
    }

    /// Forgets claims older than `age` seconds (default 30 days), except `keeping` (claims whose
    /// subject still exists: forgetting them would let it be appended again).
    package func pruneClaims(olderThan age: Double = 30 * 86400, keeping: Set<String> = []) throws {
        let cutoff = Clock.wallMilliseconds() - Int64(age * 1000)
        // A read first: nearly every launch finds nothing to forget, and writes nothing.
        let candidates = try read { db in
            try String.fetchAll(db, sql: "SELECT name FROM ingested WHERE ingested_ms < ?", arguments: [cutoff])
        }
        guard candidates.contains(where: { !keeping.contains($0) }) else { return }
        try write { db in
            let old = try String.fetchAll(db, sql: "SELECT name FROM ingested WHERE ingested_ms < ?", arguments: [cutoff])
            for name in old where !keeping.contains(name) {
                try db.execute(sql: "DELETE FROM ingested WHERE name = ?", arguments: [name])
            }
        }
    }

    /// Removes the marker of run `runID` and appends `events`, in one transaction, only if the
    /// marker still exists: of several processes claiming the same run, one succeeds.
    /// - Returns: `false` when the marker was already gone: nothing at all was written.
    @discardableResult
    package func claimRun(_ runID: String, appending events: [NewEvent]) throws -> Bool {
        try write { db in
            guard try Self.runExists(db, runID) else { return false }
            try Self.deleteRun(db, runID)
            _ = try insert(db, events)
            return true
        }
    }

    /// Takes the claim `key` within the caller's transaction; `false` when it was already taken
    /// (the caller then writes nothing).
    static func takeClaim(_ db: Database, _ key: String) throws -> Bool {
        if try isClaimed(db, key) { return false }
        try db.execute(sql: "INSERT INTO ingested(name, ingested_ms) VALUES(?, ?)", arguments: [key, Clock.wallMilliseconds()])
        return true
    }

    static func isClaimed(_ db: Database, _ key: String) throws -> Bool {
        try Int.fetchOne(db, sql: "SELECT 1 FROM ingested WHERE name = ?", arguments: [key]) != nil
    }
}
