// EventRenderer.swift — the Sensors-style event: how a draft becomes one JSON object. The one
// renderer of every event this project produces (tracked, $AppStart, $AppEnd for every end
// reason, AppCrashed, $SignUp, and the $AppEnd template the signal handler completes).
import HostFacts
import CrashRecordFormat
import Foundation

/// How eagerly an event is kept when the store is full: ordinary events are evicted first,
/// crash events (AppCrashed and the `$AppEnd` that closes a crashed or killed run) last.
package enum EventPriority: Int, Sendable, Codable {
    case ordinary = 0
    case crash = 1
}

/// Everything an event is made of before it becomes JSON text.
package struct EventDraft: Sendable {
    /// `_track_id`: servers deduplicate on it.
    package var trackID: String
    /// `time`, ms since the epoch.
    package var time: Int64
    /// `type`: "track" (or "track_signup" for `$SignUp`).
    package var type: String
    /// `event`.
    package var event: String
    package var identity: EventIdentity
    /// `original_id` of a `$SignUp`.
    package var originalID: String?
    package var properties: [String: JSONScalar]
    package var priority: EventPriority

    package init(trackID: String = EventDraft.newTrackID(), time: Int64, type: String = "track", event: String,
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
    package static func newTrackID() -> String { randomUUIDText() }
}

/// Renders drafts as JSON objects, with the preset and super properties of this process.
package struct EventRenderer: Sendable {
    /// Longest string property value kept, in UTF-8 bytes (Sensors' limit); longer ones are cut.
    package static let maxStringBytes = 8192

    package let appName: String
    package let appVersion: String
    /// Preset properties (`$os`, `$model`, ..., `$app_name`, `$app_version`, `$cpu_count`).
    package var presets: [String: JSONScalar] { Dictionary(presetList, uniquingKeysWith: { _, last in last }) }
    /// The same, as a list in key order. A list, not a Dictionary: CrashCapture renders its
    /// template in `start`, on the launch path, where the first hashed collection costs ≈ 0.2 ms.
    let presetList: [(String, JSONScalar)]
    let libJSON: String

    package init(appName: String, appVersion: String, extraPresets: [String: JSONScalar] = [:]) {
        self.appName = appName
        self.appVersion = appVersion
        var list = PresetProperties.currentList()
        list.append(("$app_name", .string(appName)))
        list.append(("$app_version", .string(appVersion)))
        list.append(("$cpu_count", .int(Self.processorCount)))
        for (key, value) in extraPresets {
            list.removeAll { $0.0 == key }
            list.append((key, value))
        }
        presetList = list.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
        libJSON = "{\"$lib\":" + JSONText.quote(CrashCaptureLibrary.name) + ",\"$lib_version\":" + JSONText.quote(CrashCaptureLibrary.version)
            + ",\"$lib_method\":\"code\",\"$app_version\":" + JSONText.quote(appVersion) + "}"
    }

    /// `$cpu_count`, read once per process: ``PresetProperties/processorCount()``.
    static let processorCount = PresetProperties.processorCount()

    /// Keys in UTF-8 byte order: String's own ordering loads Unicode normalisation data on first
    /// use (on the launch path, through CrashCapture's template), and JSON does not care.
    static func sortedKeys<S: Sequence>(_ keys: S) -> [String] where S.Element == String {
        keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// `"key":value` (plain concatenation: interpolation goes through String(describing:), whose
    /// dynamic casts scan every image's conformances on first use).
    static func member(_ key: String, _ value: String) -> String { JSONText.quote(key) + ":" + value }

    /// The rendered members for presets overlaid with `superProperties` (sorted, each followed by ","),
    /// and the set of keys they hold. Computed once per super-property change, not per event.
    package func base(superProperties: [String: JSONScalar]) -> RenderedBase {
        var merged = presets
        for (key, value) in superProperties { merged[key] = value }
        let text = Self.sortedKeys(merged.keys).map { Self.member($0, Self.clip(merged[$0]!).json) }.joinedOnTheLaunchPath(separator: ",", terminator: ",")
        return RenderedBase(text: text, keys: Set(merged.keys), merged: merged)
    }

    /// The pre-rendered preset + super properties.
    package struct RenderedBase: Sendable {
        let text: String
        let keys: Set<String>
        let merged: [String: JSONScalar]
    }

    /// The event as one JSON object; event properties win over super properties, which win over presets.
    package func render(_ draft: EventDraft, base: RenderedBase) -> String {
        var out = head(draft, trackID: JSONText.quote(draft.trackID), time: String(draft.time))
        if draft.properties.keys.contains(where: { base.keys.contains($0) }) {
            var merged = base.merged
            for (key, value) in draft.properties { merged[key] = value }
            out += Self.sortedKeys(merged.keys).map { Self.member($0, Self.clip(merged[$0]!).json) }.joinedOnTheLaunchPath(separator: ",")
        } else {
            out += base.text
            for (key, value) in draft.properties { out += Self.member(key, Self.clip(value).json) + "," }
            if out.hasSuffix(",") { out.removeLast() }
        }
        return out + "}}"
    }

    /// The event as a template another writer completes: the members ``render(_:base:)`` gives
    /// a draft of `event`, `identity` and `properties` with a base of `superProperties` (in key
    /// order), but
    /// `_track_id`, `time` and the properties named in `rawProperties` hold the given raw text in
    /// place of a JSON value. CrashCapture renders its crash `$AppEnd` this way, with placeholder
    /// bytes its signal handler replaces. Works on lists, with no hashed collection (it runs in
    /// CrashCapture's `start`): event properties win over super properties, which win over presets.
    package func renderTemplate(event: String, identity: EventIdentity, properties: [(String, JSONScalar)],
                               superProperties: [String: JSONScalar], rawTrackID: String, rawTime: String,
                               rawProperties: [(String, String)]) -> String {
        let draft = EventDraft(trackID: "", time: 0, event: event, identity: identity, properties: [:])
        var members: [(String, String)] = rawProperties
        for (key, value) in properties where !members.contains(where: { $0.0 == key }) {
            members.append((key, Self.clip(value).json))
        }
        for (key, value) in superProperties where !members.contains(where: { $0.0 == key }) {
            members.append((key, Self.clip(value).json))
        }
        for (key, value) in presetList where !members.contains(where: { $0.0 == key }) {
            members.append((key, Self.clip(value).json))
        }
        members.sort { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
        var out = head(draft, trackID: rawTrackID, time: rawTime)
        out += members.map { Self.member($0.0, $0.1) }.joinedOnTheLaunchPath(separator: ",")
        return out + "}}"
    }

    /// Everything up to and including `"properties":{`.
    private func head(_ draft: EventDraft, trackID: String, time: String) -> String {
        var out = "{\"_track_id\":" + trackID + ",\"time\":" + time + ",\"type\":" + JSONText.quote(draft.type) + ","
        out += "\"event\":" + JSONText.quote(draft.event) + ","
        if let distinct = draft.identity.distinctID { out += "\"distinct_id\":" + JSONText.quote(distinct) + "," }
        if let anonymous = draft.identity.anonymousID { out += "\"anonymous_id\":" + JSONText.quote(anonymous) + "," }
        if let login = draft.identity.loginID { out += "\"login_id\":" + JSONText.quote(login) + "," }
        if let original = draft.originalID { out += "\"original_id\":" + JSONText.quote(original) + "," }
        return out + "\"lib\":" + libJSON + ",\"properties\":{"
    }

    static func clip(_ value: JSONScalar) -> JSONScalar {
        guard case .string(let s) = value, s.utf8.count > maxStringBytes else { return value }
        var cut = s.utf8.prefix(maxStringBytes)
        while !cut.isEmpty, String(cut) == nil { cut = cut.dropLast() }
        return .string(String(cut) ?? "")
    }
}
