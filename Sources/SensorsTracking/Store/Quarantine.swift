// Quarantine.swift — the `quarantine` table: events the server refused, kept for inspection.
import SensorsEvents
import HostFacts

/// A quarantined event and why the server refused it.
package struct QuarantinedEvent: Sendable, Equatable {
    package var event: StoredEvent
    /// HTTP status of the refusal (0 when quarantined for another reason).
    package var status: Int
    package var reason: String
    package var quarantinedAt: Int64
}

extension TrackingStore {
    /// Moves events to the quarantine (oldest quarantined evicted beyond the limit, counted).
    func quarantine(_ events: [StoredEvent], status: Int, reason: String) throws {
        try write { db in
            let now = Clock.wallMilliseconds()
            for event in events {
                try db.execute(sql: """
                    INSERT INTO quarantine(event_id, track_id, event, time_ms, priority, json, status, reason, quarantined_ms)
                    VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [event.id, event.trackID, event.event, event.time, event.priority.rawValue, event.json,
                                     status, reason, now])
            }
            try Self.deleteEvents(db, events.map(\.id))
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM quarantine") ?? 0
            if count > limits.maxQuarantined {
                try db.execute(sql: "DELETE FROM quarantine WHERE id IN (SELECT id FROM quarantine ORDER BY id LIMIT ?)",
                               arguments: [count - limits.maxQuarantined])
                try Self.addCounter(db, "evicted_quarantine", db.changesCount)
            }
            try Self.recordOutcome(db, UploadOutcome(time: now, status: status, events: events.count, error: reason))
        }
    }

    /// The most recently quarantined events, newest first.
    package func quarantinedEvents(limit: Int = 100) throws -> [QuarantinedEvent] {
        try read { db in try Self.quarantined(db, limit: limit) }
    }

    static func quarantined(_ db: Database, limit: Int) throws -> [QuarantinedEvent] {
        try Row.fetchAll(db, sql: "SELECT * FROM quarantine ORDER BY id DESC LIMIT ?", arguments: [limit]).map { row in
            QuarantinedEvent(
                event: StoredEvent(id: row["event_id"], trackID: row["track_id"], event: row["event"], time: row["time_ms"],
                                   priority: EventPriority(rawValue: row["priority"]) ?? .ordinary, json: row["json"]),
                status: row["status"], reason: row["reason"], quarantinedAt: row["quarantined_ms"])
        }
    }

    static func quarantinedCount(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM quarantine") ?? 0
    }
}
