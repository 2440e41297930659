// EventQueue.swift — the `events` table: append, pending batches, delivered, eviction.
package import SensorsEvents
import HostFacts

/// An event ready to be stored.
package struct NewEvent: Sendable, Equatable {
    package var trackID: String
    package var event: String
    package var time: Int64
    package var priority: EventPriority
    /// The complete JSON object.
    package var json: String

    package init(trackID: String, event: String, time: Int64, priority: EventPriority, json: String) {
        self.trackID = trackID
        self.event = event
        self.time = time
        self.priority = priority
        self.json = json
    }
}

/// A pending (or quarantined) event as stored.
package struct StoredEvent: Sendable, Equatable {
    /// Position in the store's order (SQLite rowid).
    package var id: Int64
    package var trackID: String
    package var event: String
    package var time: Int64
    package var priority: EventPriority
    package var json: String
}

extension TrackingStore {
    /// Appends events in one transaction, in order, evicting the oldest events beyond the limit
    /// (ordinary first, crash last; every eviction counted); an event over `maxEventBytes` is
    /// dropped and counted (`dropped_oversize`). In the same transaction:
    /// - `registeringRun`: stores that run's marker first (its `$AppStart` is among the events);
    /// - `endingRun`: removes that run's marker (its `$AppEnd` is among the events);
    /// - `addingCounters`: adds to named counters (drops the caller counted before the store).
    /// - Returns: the number of pending events after the append.
    @discardableResult
    package func append(_ events: [NewEvent], registeringRun registered: RunMarker? = nil, endingRun runID: String? = nil,
                       addingCounters counters: [String: Int] = [:]) throws -> Int {
        try write { db in
            if let registered { try Self.insertRun(db, registered) }
            if let runID { try Self.deleteRun(db, runID) }
            return try insert(db, events, counters: counters)
        }
    }

    /// Inserts `events` within the caller's transaction: oversize ones dropped and counted,
    /// `counters` added, the oldest beyond the limit evicted. Returns the pending count after.
    func insert(_ db: Database, _ events: [NewEvent], counters: [String: Int] = [:]) throws -> Int {
        try Self.insert(db, events, limits: limits, counters: counters)
    }

    /// ``insert(_:_:counters:)`` with the store's limits given (a journal folded while the store opens).
    static func insert(_ db: Database, _ events: [NewEvent], limits: StoreLimits, counters: [String: Int] = [:]) throws -> Int {
        var oversize = 0
        let insert = try db.cachedStatement(sql: "INSERT INTO events(track_id, event, time_ms, priority, json) VALUES(?, ?, ?, ?, ?)")
        for event in events {
            if event.json.utf8.count > limits.maxEventBytes { oversize += 1; continue }
            try insert.execute(arguments: [event.trackID, event.event, event.time, event.priority.rawValue, event.json])
        }
        try Self.addCounter(db, "dropped_oversize", oversize)
        for (name, delta) in counters { try Self.addCounter(db, name, delta) }
        return try evictBeyondLimit(db, limits: limits)
    }

    private static func evictBeyondLimit(_ db: Database, limits: StoreLimits) throws -> Int {
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

    /// The oldest `limit` pending events, in order.
    func pendingBatch(limit: Int) throws -> [StoredEvent] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT id, track_id, event, time_ms, priority, json FROM events ORDER BY id LIMIT ?",
                             arguments: [limit]).map(Self.storedEvent)
        }
    }

    /// Number of pending events.
    func pendingCount() throws -> Int {
        try read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events") ?? 0 }
    }

    static func storedEvent(_ row: Row) -> StoredEvent {
        StoredEvent(id: row["id"], trackID: row["track_id"], event: row["event"], time: row["time_ms"],
                    priority: EventPriority(rawValue: row["priority"]) ?? .ordinary, json: row["json"])
    }

    /// Removes delivered events and records the outcome, in one transaction.
    func markDelivered(_ ids: [Int64], status: Int) throws {
        try write { db in
            try Self.deleteEvents(db, ids)
            try Self.recordOutcome(db, UploadOutcome(time: Clock.wallMilliseconds(), status: status, events: ids.count, error: nil))
            try Self.setMeta(db, "last_success_ms", String(Clock.wallMilliseconds()))
        }
    }

    static func deleteEvents(_ db: Database, _ ids: [Int64]) throws {
        for chunk in stride(from: 0, to: ids.count, by: 500) {
            let part = ids[chunk..<min(ids.count, chunk + 500)]
            try db.execute(sql: "DELETE FROM events WHERE id IN (\(part.map { String($0) }.joined(separator: ",")))")
        }
    }
}
