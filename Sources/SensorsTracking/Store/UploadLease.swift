// UploadLease.swift — in `meta`: the upload lease (one uploading process per store) and the
// outcome of the last upload attempt.
import HostFacts

/// The outcome of the most recent upload attempt.
package struct UploadOutcome: Sendable, Equatable {
    package var time: Int64
    /// HTTP status, or 0 for a network error.
    package var status: Int
    package var events: Int
    package var error: String?
}

extension TrackingStore {
    /// Takes (or keeps) the upload lease so that only one process sharing the store uploads at a
    /// time. Granted when free, expired, held by us, or held by a process that no longer lives.
    func acquireUploadLease(_ me: ProcessIdentity = .current, seconds: Double = 60) throws -> Bool {
        try write { db in
            let now = Clock.wallMilliseconds()
            if let text = try Self.meta(db, "upload_lease") {
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
    func releaseUploadLease(_ me: ProcessIdentity = .current) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM meta WHERE key = 'upload_lease' AND value LIKE ?",
                           arguments: ["\(me.pid)|\(me.bootID)|\(me.startTicks)|%"])
        }
    }

    /// Records a failed attempt (nothing leaves the store).
    func recordFailure(status: Int, events: Int, error: String) throws {
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

    /// The last upload outcome, from the `meta` rows `recordOutcome` wrote.
    static func lastUpload(meta: [String: String]) -> UploadOutcome? {
        guard let time = meta["last_upload_ms"].flatMap(Int64.init) else { return nil }
        return UploadOutcome(time: time, status: meta["last_upload_status"].flatMap(Int.init) ?? 0,
                             events: meta["last_upload_events"].flatMap(Int.init) ?? 0, error: meta["last_upload_error"])
    }
}
