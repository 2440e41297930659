// CrashScope.swift — the app's scope (tags, user, named contexts) as a crash record carries it
// (CC_SEC_SCOPE in cc_record.h): the one place that renders it for capture and reads it back for
// the sinks, so the writer and the readers share one layout.
import CCrashRecordLayout

/// What the app says about its run and its user, carried by every crash record from the moment
/// it is set: tags, the user, and named contexts (what a Sentry SDK keeps in its scope).
///
/// Set it with `CrashHandler.updateScope(_:)`, at start or any time later; a record holds the
/// scope as it was at the crash. It is bounded (``maxBytes`` rendered, values cut at
/// ``maxValueBytes``, tag values at ``maxTagValueBytes``) because the signal handler copies it
/// into a fixed-size area. What leaves the machine is the reporter's data policy's choice: the
/// user only with its `identity` setting.
public struct CrashScope: Sendable, Equatable {
    /// Short labels to search and group crashes by (`tenant`, `region`, `feature_flag`...).
    public var tags: [String: String]
    /// Who was using the program (off the machine only where the data policy allows).
    public var user: CrashUser?
    /// Named groups of facts (`"database": ["engine": "postgres", "pool": "8"]`).
    public var contexts: [String: [String: String]]

    /// A scope with these tags, user and named contexts (kept within the bounds when set).
    public init(tags: [String: String] = [:], user: CrashUser? = nil, contexts: [String: [String: String]] = [:]) {
        self.tags = tags
        self.user = user
        self.contexts = contexts
    }

    /// Whether nothing is set.
    package var isEmpty: Bool { tags.isEmpty && (user?.isEmpty ?? true) && contexts.allSatisfy(\.value.isEmpty) }

    /// The largest rendered scope the handler carries, in bytes.
    package static let maxBytes = Int(CC_SCOPE_MAX) - 1
    /// Keys and context names longer than this (in UTF-8 bytes) are left out.
    package static let maxKeyBytes = 64
    /// Tag values are cut to this many bytes (Sentry keeps 200 characters of a tag value).
    package static let maxTagValueBytes = 200
    /// User and context values are cut to this many bytes.
    package static let maxValueBytes = 1024
}

/// The user of a run, as Sentry's `user` interface names it.
public struct CrashUser: Sendable, Equatable {
    /// The app's id for the user.
    public var id: String?
    /// The user's name.
    public var username: String?
    /// The user's email address.
    public var email: String?
    /// The address the user came from.
    public var ipAddress: String?

    /// A user with these fields (nil: not known).
    public init(id: String? = nil, username: String? = nil, email: String? = nil, ipAddress: String? = nil) {
        self.id = id
        self.username = username
        self.email = email
        self.ipAddress = ipAddress
    }

    var isEmpty: Bool { id == nil && username == nil && email == nil && ipAddress == nil }

    /// The fields by their record (and Sentry) keys.
    package var fields: [(String, String)] {
        [("id", id), ("username", username), ("email", email), ("ip_address", ipAddress)].compactMap { key, value in value.map { (key, $0) } }
    }
}

// MARK: - The record's layout

extension CrashScope {
    private static let tagGroup = "tag"
    private static let userGroup = "user"
    private static let contextPrefix = "context:"

    /// The scope within its bounds: keys and names that are empty or too long left out, values
    /// cut at a character boundary, NUL bytes (the layout's separator) removed.
    package var bounded: CrashScope {
        func clean(_ text: String) -> String { text.contains("\0") ? text.replacingNUL() : text }
        func key(_ text: String) -> String? {
            let text = clean(text)
            return text.isEmpty || text.utf8.count > Self.maxKeyBytes ? nil : text
        }
        func value(_ text: String, _ limit: Int) -> String { clean(text).utf8Prefix(limit) }
        var out = CrashScope()
        for (name, text) in tags { if let name = key(name) { out.tags[name] = value(text, Self.maxTagValueBytes) } }
        if let user {
            let kept = CrashUser(id: user.id.map { value($0, Self.maxValueBytes) }, username: user.username.map { value($0, Self.maxValueBytes) },
                                 email: user.email.map { value($0, Self.maxValueBytes) }, ipAddress: user.ipAddress.map { value($0, Self.maxValueBytes) })
            out.user = kept.isEmpty ? nil : kept
        }
        for (name, facts) in contexts {
            guard let name = key(name) else { continue }
            var kept: [String: String] = [:]
            for (field, text) in facts { if let field = key(field) { kept[field] = value(text, Self.maxValueBytes) } }
            if !kept.isEmpty { out.contexts[name] = kept }
        }
        return out
    }

    /// The CC_SEC_SCOPE payload of the bounded scope (entries in a stable order), or nil when it
    /// is longer than ``maxBytes``.
    package func rendered() -> [UInt8]? {
        let scope = bounded
        var bytes: [UInt8] = []
        func entry(_ group: String, _ key: String, _ value: String) {
            bytes.append(contentsOf: group.utf8); bytes.append(0)
            bytes.append(contentsOf: key.utf8); bytes.append(0)
            bytes.append(contentsOf: value.utf8); bytes.append(0)
        }
        for key in scope.tags.keys.sorted() { entry(Self.tagGroup, key, scope.tags[key]!) }
        for (key, value) in scope.user?.fields ?? [] { entry(Self.userGroup, key, value) }
        for name in scope.contexts.keys.sorted() {
            let facts = scope.contexts[name]!
            for key in facts.keys.sorted() { entry(Self.contextPrefix + name, key, facts[key]!) }
        }
        return bytes.count <= Self.maxBytes ? bytes : nil
    }

    /// Reads a CC_SEC_SCOPE payload (untrusted): whole entries only, within the bounds a writer
    /// keeps; what is left out is said in `notes`. Nil when no entry could be read.
    package init?(section payload: ArraySlice<UInt8>, notes: inout [String]) {
        self.init()
        var texts: [String] = []
        var start = payload.startIndex
        var index = payload.startIndex
        while index < payload.endIndex {
            if payload[index] == 0 {
                texts.append(String(decoding: payload[start ..< index], as: UTF8.self))
                start = payload.index(after: index)
            }
            index = payload.index(after: index)
        }
        var skipped = 0
        if start < payload.endIndex || texts.count % 3 != 0 { skipped += 1 }
        var user = CrashUser()
        for entry in stride(from: 0, to: texts.count - texts.count % 3, by: 3) {
            let (group, key, value) = (texts[entry], texts[entry + 1], texts[entry + 2])
            guard !key.isEmpty, key.utf8.count <= Self.maxKeyBytes, value.utf8.count <= Self.maxValueBytes else {
                skipped += 1
                continue
            }
            switch group {
            case Self.tagGroup where value.utf8.count <= Self.maxTagValueBytes:
                tags[key] = value
            case Self.userGroup where key == "id": user.id = value
            case Self.userGroup where key == "username": user.username = value
            case Self.userGroup where key == "email": user.email = value
            case Self.userGroup where key == "ip_address": user.ipAddress = value
            case _ where group.hasPrefix(Self.contextPrefix) && group.utf8.count > Self.contextPrefix.utf8.count
                && group.utf8.count - Self.contextPrefix.utf8.count <= Self.maxKeyBytes:
                contexts[String(group.dropFirst(Self.contextPrefix.count)), default: [:]][key] = value
            default:
                skipped += 1
            }
        }
        self.user = user.isEmpty ? nil : user
        if skipped > 0 { notes.append("the scope section had \(skipped) entr\(skipped == 1 ? "y" : "ies") that could not be read (left out)") }
        if isEmpty { return nil }
    }
}

extension String {
    /// At most `limit` UTF-8 bytes of the text, cut at a character boundary.
    fileprivate func utf8Prefix(_ limit: Int) -> String {
        guard utf8.count > limit else { return self }
        var kept = ""
        var bytes = 0
        for character in self {
            let size = character.utf8.count
            if bytes + size > limit { break }
            kept.append(character)
            bytes += size
        }
        return kept
    }

    fileprivate func replacingNUL() -> String { String(String.UnicodeScalarView(unicodeScalars.filter { $0 != "\0" })) }
}
