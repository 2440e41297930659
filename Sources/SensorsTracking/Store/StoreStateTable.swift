// StoreStateTable.swift — the `meta` key-value state (anonymous id, login id, super properties,
// first start) and the `counters` table (evictions and drops: nothing disappears uncounted).
package import SensorsEvents
import Foundation
import HostFacts
import CrashRecordFormat

/// Persistent state a tracker starts from.
package struct StoreState: Sendable {
    package var anonymousID: String
    package var loginID: String?
    package var superProperties: [String: JSONScalar]
    /// `true` only for the first process ever to start on this store.
    package var isFirstStart: Bool
}

extension TrackingStore {
    /// Loads the anonymous id (creating it on first use), login id, super properties, and
    /// whether this is the store's very first start (claimed atomically by one process).
    package func loadState(claimingFirstStart: Bool = true) throws -> StoreState {
        // A read first: every launch but a store's first (or the first to claim its first start)
        // finds everything there, and writes nothing.
        let found = try read { db -> StoreState? in
            guard let anonymous = try Self.meta(db, "anonymous_id") else { return nil }
            if claimingFirstStart, try Self.meta(db, "first_start_ms") == nil { return nil }
            return StoreState(anonymousID: anonymous, loginID: try Self.meta(db, "login_id"),
                              superProperties: try Self.meta(db, "super_properties").map(SuperPropertiesCoding.decode) ?? [:],
                              isFirstStart: false)
        }
        if let found { return found }
        return try write { db in
            var anonymous = try Self.meta(db, "anonymous_id")
            if anonymous == nil {
                anonymous = EventDraft.newTrackID()
                try Self.setMeta(db, "anonymous_id", anonymous)
            }
            let login = try Self.meta(db, "login_id")
            let superText = try Self.meta(db, "super_properties")
            var first = false
            if claimingFirstStart, try Self.meta(db, "first_start_ms") == nil {
                first = true
                try Self.setMeta(db, "first_start_ms", String(Clock.wallMilliseconds()))
            }
            return StoreState(anonymousID: anonymous!, loginID: login,
                              superProperties: superText.map(SuperPropertiesCoding.decode) ?? [:], isFirstStart: first)
        }
    }

    /// Marks the store as one whose runs' ends its host tells (CrashReporting's run ledger);
    /// `true` the first time only, in one transaction (one process of several wins). That first
    /// time, the rows of dead runs the store holds are from a version before the ledger, which no
    /// host will ever tell: the tracker ends them once.
    package func claimRunsToldByHost() throws -> Bool {
        // A read first: every launch but the store's first finds the mark, and writes nothing.
        guard try read({ db in try Self.meta(db, "runs_told_by_host") }) == nil else { return false }
        return try write { db in
            guard try Self.meta(db, "runs_told_by_host") == nil else { return false }
            try Self.setMeta(db, "runs_told_by_host", String(Clock.wallMilliseconds()))
            return true
        }
    }

    /// Persists the login id (`nil` = logged out), and in the state copy when there is one.
    func setLoginID(_ id: String?) throws {
        try write { db in try Self.setMeta(db, "login_id", id) }
        refreshStateCopyIfPresent()
    }

    /// Persists the super properties, and in the state copy when there is one.
    func setSuperProperties(_ properties: [String: JSONScalar]) throws {
        try write { db in try Self.setMeta(db, "super_properties", SuperPropertiesCoding.encode(properties)) }
        refreshStateCopyIfPresent()
    }

    /// The copy follows every change of the state it holds (a store no hosted launch used has none).
    private func refreshStateCopyIfPresent() {
        refreshStateCopy(onlyIfPresent: true)
    }

    /// Adds `delta` to a named counter, in its own transaction.
    func addCounter(_ name: String, _ delta: Int) throws {
        try write { db in try Self.addCounter(db, name, delta) }
    }

    static func meta(_ db: Database, _ key: String) throws -> String? {
        try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key])
    }

    /// Every `meta` row (for the summary).
    static func allMeta(_ db: Database) throws -> [String: String] {
        Dictionary(try Row.fetchAll(db, sql: "SELECT key, value FROM meta").map { ($0["key"] as String, $0["value"] as String) },
                   uniquingKeysWith: { a, _ in a })
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

    /// Every counter (for the summary).
    static func counters(_ db: Database) throws -> [String: Int] {
        var counters: [String: Int] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT name, value FROM counters") { counters[row["name"]] = row["value"] }
        return counters
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
    package init?(any value: Any) {
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
