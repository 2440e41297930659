// Event.swift — the Sensors-style event: how one tracked call becomes one JSON object.
import CrashEvents
import Foundation

/// How eagerly an event is kept when the store is full: ordinary events are evicted first,
/// crash events (AppCrashed and the `$AppEnd` that closes a crashed or killed run) last.
public enum EventPriority: Int, Sendable, Codable {
    case ordinary = 0
    case crash = 1
}

/// Everything an event is made of before it becomes JSON text.
public struct EventDraft: Sendable {
    /// `_track_id`: servers deduplicate on it.
    public var trackID: String
    /// `time`, ms since the epoch.
    public var time: Int64
    /// `type`: "track" (or "track_signup" for `$SignUp`).
    public var type: String
    /// `event`.
    public var event: String
    public var identity: EventIdentity
    /// `original_id` of a `$SignUp`.
    public var originalID: String?
    public var properties: [String: JSONScalar]
    public var priority: EventPriority

    public init(trackID: String = EventDraft.newTrackID(), time: Int64, type: String = "track", event: String,
                identity: EventIdentity, originalID: String? = nil, properties: [String: JSONScalar],
                priority: EventPriority = .ordinary) {
        self.trackID = trackID
        self.time = time
        self.type = type
        self.event = event
        self.identity = identity
        self.originalID = originalID
        self.properties = properties
        self.priority = priority
    }

    /// A fresh `_track_id`: a random (v4) UUID, lowercase.
    public static func newTrackID() -> String { UUID().uuidString.lowercased() }
}

/// Renders drafts as JSON objects, with the preset and super properties of this process.
public struct EventRenderer: Sendable {
    /// Longest string property value kept, in UTF-8 bytes (Sensors' limit); longer ones are cut.
    public static let maxStringBytes = 8192

    public let appName: String
    public let appVersion: String
    /// Preset properties (`$os`, `$model`, ..., `$app_name`, `$app_version`).
    public let presets: [String: JSONScalar]
    let libJSON: String

    public init(appName: String, appVersion: String, extraPresets: [String: JSONScalar] = [:]) {
        self.appName = appName
        self.appVersion = appVersion
        var presets = PresetProperties.current()
        presets["$app_name"] = .string(appName)
        presets["$app_version"] = .string(appVersion)
        presets["$cpu_count"] = .int(ProcessInfo.processInfo.activeProcessorCount)
        for (key, value) in extraPresets { presets[key] = value }
        self.presets = presets
        libJSON = "{\"$lib\":\(JSONText.quote(EventLibrary.name)),\"$lib_version\":\(JSONText.quote(EventLibrary.version)),"
            + "\"$lib_method\":\"code\",\"$app_version\":\(JSONText.quote(appVersion))}"
    }

    /// The rendered members for presets overlaid with `superProperties` (sorted, each followed by ","),
    /// and the set of keys they hold. Computed once per super-property change, not per event.
    public func base(superProperties: [String: JSONScalar]) -> RenderedBase {
        var merged = presets
        for (key, value) in superProperties { merged[key] = value }
        let text = merged.keys.sorted().map { "\(JSONText.quote($0)):\(Self.clip(merged[$0]!).json)," }.joined()
        return RenderedBase(text: text, keys: Set(merged.keys), merged: merged)
    }

    /// The pre-rendered preset + super properties.
    public struct RenderedBase: Sendable {
        let text: String
        let keys: Set<String>
        let merged: [String: JSONScalar]
    }

    /// The event as one JSON object; event properties win over super properties, which win over presets.
    public func render(_ draft: EventDraft, base: RenderedBase) -> String {
        var out = "{\"_track_id\":\(JSONText.quote(draft.trackID)),\"time\":\(draft.time),\"type\":\(JSONText.quote(draft.type)),"
        out += "\"event\":\(JSONText.quote(draft.event)),"
        if let distinct = draft.identity.distinctID { out += "\"distinct_id\":\(JSONText.quote(distinct)),"; }
        if let anonymous = draft.identity.anonymousID { out += "\"anonymous_id\":\(JSONText.quote(anonymous)),"; }
        if let login = draft.identity.loginID { out += "\"login_id\":\(JSONText.quote(login)),"; }
        if let original = draft.originalID { out += "\"original_id\":\(JSONText.quote(original)),"; }
        out += "\"lib\":\(libJSON),\"properties\":{"
        if draft.properties.keys.contains(where: { base.keys.contains($0) }) {
            var merged = base.merged
            for (key, value) in draft.properties { merged[key] = value }
            out += merged.keys.sorted().map { "\(JSONText.quote($0)):\(Self.clip(merged[$0]!).json)" }.joined(separator: ",")
        } else {
            out += base.text
            for (key, value) in draft.properties { out += "\(JSONText.quote(key)):\(Self.clip(value).json)," }
            if out.hasSuffix(",") { out.removeLast() }
        }
        return out + "}}"
    }

    static func clip(_ value: JSONScalar) -> JSONScalar {
        guard case .string(let s) = value, s.utf8.count > maxStringBytes else { return value }
        var cut = s.utf8.prefix(maxStringBytes)
        while !cut.isEmpty, String(cut) == nil { cut = cut.dropLast() }
        return .string(String(cut) ?? "")
    }
}

extension String {
    /// `self` (a JSON object) with `"_flush_time":ms` added as its last member.
    func addingFlushTime(_ ms: Int64) -> String {
        guard let close = lastIndex(of: "}") else { return self }
        return String(self[..<close]) + ",\"_flush_time\":\(ms)}"
    }
}
