// StoreSummary.swift — what the inspector shows about a store, read from every table.
import Foundation

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
            return try queue.read { db in
                try StoreSchema.refuseNewer(db, operation: "inspect \(path)")
                return (try summary(db, path: path), try quarantined(db, limit: quarantineLimit))
            }
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
