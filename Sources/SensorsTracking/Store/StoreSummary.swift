// StoreSummary.swift — what the inspector shows about a store, read from every table.
import Foundation
import SensorsEvents

/// What the inspector shows about a store.
package struct StoreSummary: Sendable, Equatable {
    package var path: String
    package var pending: Int
    package var pendingCrash: Int
    package var quarantined: Int
    /// Evictions and drops by reason: `evicted_ordinary`, `evicted_crash`, `evicted_quarantine`,
    /// `dropped_queue_full`, `dropped_oversize`, `dropped_store_error`.
    package var counters: [String: Int]
    package var oldestPending: StoredEvent?
    package var lastUpload: UploadOutcome?
    package var runMarkers: Int
    package var anonymousID: String?
    /// Of `pending`, the events quiet runs left in the journal (LaunchJournal.swift), which the
    /// next open of the store folds in.
    package var journalEvents = 0
}

extension TrackingStore {
    /// Counts, the oldest pending event and the last upload outcome.
    package func summary() throws -> StoreSummary {
        try read { db in try Self.summary(db, path: path) }
    }

    /// Reads a store without writing to it (for the inspector; safe while a tracker runs).
    /// - Throws: ``TrackingStoreError`` when the file is missing, not a store, or written by a
    ///   newer schema than this code knows.
    package static func inspect(path: String, quarantineLimit: Int = 100) throws -> (StoreSummary, [QuarantinedEvent]) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw TrackingStoreError(operation: "inspect \(path)", underlying: "no such file")
        }
        do {
            var config = DatabaseQueue.Configuration()
            config.readonly = true
            config.busyTimeoutSeconds = 5
            let queue = try DatabaseQueue(path: path, configuration: config)
            defer { try? queue.close() }
            let read: (StoreSummary, [QuarantinedEvent], [String]) = try queue.read { db in
                try StoreSchema.refuseNewer(db, operation: "inspect \(path)")
                return (try Self.summary(db, path: path), try Self.quarantined(db, limit: quarantineLimit),
                        try String.fetchAll(db, sql: "SELECT run_id FROM runs"))
            }
            var summary = read.0
            let quarantine = read.1
            var runIDs = Set(read.2)
            // What quiet runs appended to the journal is the store's too (it is folded in at the next open).
            let journal = readJournal(path)
            for entry in journal.entries {
                summary.pending += entry.events.count
                summary.pendingCrash += entry.events.filter { $0.priority == .crash }.count
                if summary.oldestPending == nil, let first = entry.events.first {
                    summary.oldestPending = StoredEvent(id: 0, trackID: first.trackID, event: first.event, time: first.time,
                                                        priority: first.priority, json: first.json)
                }
                if let marker = entry.registered { runIDs.insert(marker.runID) }
                if let ended = entry.endingRun { runIDs.remove(ended) }
            }
            summary.runMarkers = runIDs.count
            summary.journalEvents = journal.entries.reduce(0) { $0 + $1.events.count }
            if journal.unreadableLines > 0 {
                summary.counters["dropped_journal_unreadable", default: 0] += journal.unreadableLines
            }
            return (summary, quarantine)
        } catch let error as TrackingStoreError {
            throw error
        } catch {
            throw TrackingStoreError(operation: "inspect \(path)", underlying: "\(error)")
        }
    }

    static func summary(_ db: Database, path: String) throws -> StoreSummary {
        let meta = try allMeta(db)
        return StoreSummary(
            path: path,
            pending: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events") ?? 0,
            pendingCrash: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events WHERE priority = 1") ?? 0,
            quarantined: try quarantinedCount(db),
            counters: try counters(db),
            oldestPending: try Row.fetchOne(db, sql: "SELECT id, track_id, event, time_ms, priority, json FROM events ORDER BY id LIMIT 1")
                .map(storedEvent),
            lastUpload: lastUpload(meta: meta),
            runMarkers: try runCount(db),
            anonymousID: meta["anonymous_id"])
    }
}
