// EventRenderer.swift — the Sensors-style event: how a draft becomes one JSON object. The one
// renderer of every event this project produces (tracked, $AppStart, $AppEnd for every end
// reason, AppCrashed, $SignUp, and the $AppEnd template the signal handler completes).
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
        var out = head(draft, trackID: JSONText.quote(draft.trackID), time: String(draft.time))
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

    /// The event as a template another writer completes: exactly ``render(_:base:)``'s text, but
    /// `_track_id`, `time` and the properties named in `rawProperties` hold the given raw text in
    /// place of a JSON value. CrashCapture renders its crash `$AppEnd` this way, with placeholder
    /// bytes its signal handler replaces; the draft's own values for those members are ignored.
    public func renderTemplate(_ draft: EventDraft, base: RenderedBase, rawTrackID: String, rawTime: String,
                               rawProperties: [String: String]) -> String {
        var merged = base.merged
        for (key, value) in draft.properties { merged[key] = value }
        var out = head(draft, trackID: rawTrackID, time: rawTime)
        out += Set(merged.keys).union(rawProperties.keys).sorted().map { key in
            JSONText.quote(key) + ":" + (rawProperties[key] ?? Self.clip(merged[key]!).json)
        }.joined(separator: ",")
        return out + "}}"
    }

    /// Everything up to and including `"properties":{`.
    private func head(_ draft: EventDraft, trackID: String, time: String) -> String {
        var out = "{\"_track_id\":\(trackID),\"time\":\(time),\"type\":\(JSONText.quote(draft.type)),"
        out += "\"event\":\(JSONText.quote(draft.event)),"
        if let distinct = draft.identity.distinctID { out += "\"distinct_id\":\(JSONText.quote(distinct)),"; }
        if let anonymous = draft.identity.anonymousID { out += "\"anonymous_id\":\(JSONText.quote(anonymous)),"; }
        if let login = draft.identity.loginID { out += "\"login_id\":\(JSONText.quote(login)),"; }
        if let original = draft.originalID { out += "\"original_id\":\(JSONText.quote(original)),"; }
        return out + "\"lib\":\(libJSON),\"properties\":{"
    }

    static func clip(_ value: JSONScalar) -> JSONScalar {
        guard case .string(let s) = value, s.utf8.count > maxStringBytes else { return value }
        var cut = s.utf8.prefix(maxStringBytes)
        while !cut.isEmpty, String(cut) == nil { cut = cut.dropLast() }
        return .string(String(cut) ?? "")
    }
}
