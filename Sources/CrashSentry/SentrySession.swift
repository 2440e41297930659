// SentrySession.swift — release health: one Sentry session per run of the app, as Sentry's session
// protocol has it (the `session` envelope item), and the run facts every event and session carry.
import CrashRecordFormat
package import HostFacts

/// What Sentry files a run's events and session under: the release, the environment (Sentry's
/// default is `production`), the release's build (`dist`) and the host (`server_name`).
package struct SentryRunFacts: Sendable, Equatable {
    package var release: String?
    package var environment: String?
    package var dist: String?
    /// `nil` where the data policy keeps the host's details on the machine.
    package var serverName: String?
    /// The machine and container, where readable (`nil` as `serverName`).
    package var host: HostContext?

    package init(release: String?, environment: String?, dist: String?, serverName: String?, host: HostContext? = nil) {
        self.release = release
        self.environment = environment
        self.dist = dist
        self.serverName = serverName
        self.host = host
    }

    /// Sets them on `event` (a release here wins over the record's `app@version`), with the
    /// Swift runtime's version in `contexts.runtime`.
    package func apply(to event: inout SentryEvent) {
        if let release { event.release = release }
        event.environment = environment
        event.dist = dist
        event.serverName = serverName
        event.contexts.runtime = SentryEvent.Runtime(version: Self.swiftVersion)
        guard let host else { return }
        event.contexts.device.memorySize = host.memoryBytes
        event.contexts.container = host.containerID.map { SentryEvent.Container(id: $0) }
        if host.kubernetesNamespace != nil || host.kubernetesPod != nil {
            event.contexts.kubernetes = SentryEvent.Kubernetes(namespace: host.kubernetesNamespace, pod: host.kubernetesPod)
        }
    }

    /// The Swift toolchain this was built with: the app's, as the reporter is built with it.
    package static let swiftVersion: String = {
        #if compiler(>=6.5)
        return "6.5"
        #elseif compiler(>=6.4)
        return "6.4"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #else
        return "6"
        #endif
    }()
}

/// One run as a Sentry session update that opens and closes it at once (`init` true, a final
/// `status`): the next launch, or the crash-time uploader, knows the whole run.
package struct SentrySession: Encodable, Sendable, Equatable {
    /// Sentry's terminal statuses: `exited` (ended normally), `crashed` (a fatal crash),
    /// `abnormal` (ended without a word: SIGKILL, the OOM killer, a power cut).
    package enum Status: String, Encodable, Sendable {
        case exited, crashed, abnormal
    }

    /// The session's id: the run's (a UUID).
    package var sid: String
    /// The installation (or user) the session is counted for.
    package var did: String?
    package var initial = true
    /// RFC 3339.
    package var started: String
    /// When it ended, or when it was last known alive; RFC 3339.
    package var timestamp: String
    /// Seconds, when known.
    package var duration: Double?
    package var status: Status
    package var errors: Int
    package var attrs: Attributes

    package struct Attributes: Encodable, Sendable, Equatable {
        package var release: String
        package var environment: String?
    }

    enum CodingKeys: String, CodingKey {
        case sid, did, initial = "init", started, timestamp, duration, status, errors, attrs
    }

    /// Relay drops a session whose `started` or `timestamp` is more than 5 days before it is
    /// received (`max_session_secs_in_past`). A session is made only for a run that ended within
    /// `window` (4 days: a day's margin for a send that waits, a wrong DSN's say); one that ended
    /// before is counted, not sent. A run that began before the window — a server up for a week —
    /// is still one session: its `started` is moved to the window's start, its `duration` stays
    /// the whole run's. Sentry counts it once, for its release, in the crash-free numbers; only
    /// the time it is charted at moves.
    package static let window: Duration = .seconds(4 * 24 * 3600)
    package static var windowMilliseconds: Int64 { Int64(window.components.seconds) * 1000 }

    /// - Parameters: times in ms since the epoch; `release` is required by Sentry (a session
    ///   without one is dropped), so `nil` makes no session, and so does an end before the
    ///   ``window`` as it is at `now` (the time the session is made).
    package init?(runID: String, installation: String?, startedMilliseconds: Int64, endedMilliseconds: Int64,
                  durationSeconds: Double?, status: Status, facts: SentryRunFacts,
                  now: Int64 = Clock.wallMilliseconds()) {
        guard let release = facts.release, !release.isEmpty else { return nil }
        let earliest = now - Self.windowMilliseconds
        guard endedMilliseconds >= earliest else { return nil }
        sid = SentrySession.sessionID(runID)
        did = installation
        let start = max(startedMilliseconds, earliest)
        started = isoTime(start * 1_000_000)
        timestamp = isoTime(max(endedMilliseconds, start) * 1_000_000)
        duration = durationSeconds.map { max(0, $0) }
        self.status = status
        errors = status == .crashed ? 1 : 0
        attrs = Attributes(release: release, environment: facts.environment)
    }

    /// The `session` item's payload: this session as JSON, keys sorted.
    package var payload: [UInt8] {
        let q = JSONText.quote
        var out = "{\"attrs\":{" + (attrs.environment.map { "\"environment\":" + q($0) + "," } ?? "") + "\"release\":" + q(attrs.release) + "}"
        if let did { out += ",\"did\":" + q(did) }
        if let duration, duration.isFinite { out += ",\"duration\":\(duration)" }
        out += ",\"errors\":\(errors),\"init\":\(initial),\"sid\":" + q(sid) + ",\"started\":" + q(started) + ",\"status\":" + q(status.rawValue)
        out += ",\"timestamp\":" + q(timestamp) + "}"
        return Array(out.utf8)
    }

    /// Sentry takes a UUID: the run id when it is one (the reporter's are), else a UUID made from
    /// its SHA-256 (a run id of the app's own).
    package static func sessionID(_ runID: String) -> String {
        let lower = runID.lowercased()
        let hex = lower.utf8.filter { $0 != UInt8(ascii: "-") }
        if lower.utf8.count == 36, hex.count == 32, hex.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) {
            return lower
        }
        var digest = Array(SHA256.digest(Array(runID.utf8)).prefix(16))
        digest[6] = digest[6] & 0x0F | 0x50   // a name-based UUID (version 5's layout)
        digest[8] = digest[8] & 0x3F | 0x80
        let text = CrashImage.lowercaseHex(digest)
        let chars = Array(text)
        return String(chars[0..<8]) + "-" + String(chars[8..<12]) + "-" + String(chars[12..<16]) + "-"
            + String(chars[16..<20]) + "-" + String(chars[20..<32])
    }
}

extension SentryEnvelope {
    // An envelope of sessions is written by hand, byte for byte as the envelope's encoder
    // (SortedJSONEncoder) would write it: the launch that learns a run ended writes it, and a short
    // program's end waits for that launch, so it goes without Codable's first use
    // (SentryEnvelopeTests compares the two).

    /// An envelope of sessions alone (one `session` item each).
    package static func sessions(_ sessions: [SentrySession], sentAt: Int64?) -> [UInt8] {
        var out = sessionsHeader(sentAt: sentAt)
        for session in sessions { out += sessionItem(session) }
        return out
    }

    /// One `session` item, its header and its line.
    static func sessionItem(_ session: SentrySession) -> [UInt8] {
        sessionItem(payload: session.payload)
    }

    private static func sessionItem(payload: [UInt8]) -> [UInt8] {
        Array("{\"content_type\":\"application/json\",\"length\":\(payload.count),\"type\":\"session\"}\n".utf8) + payload + [0x0A]
    }

    /// The header line of an envelope of sessions alone (no event id, no trace).
    private static func sessionsHeader(sentAt: Int64?) -> [UInt8] {
        Array((sentAt.map { "{\"sent_at\":" + JSONText.quote(isoTime($0)) + "}" } ?? "{}").utf8) + [0x0A]
    }

    /// An envelope of many runs' sessions (Relay takes up to 100 in one), each payload as it is.
    package static func sessions(payloads: [[UInt8]], sentAt: Int64?) -> [UInt8] {
        sessionsHeader(sentAt: sentAt) + sessionItems(payloads: payloads)
    }

    /// `session` items, each payload as it is: appended to another envelope (a crash's).
    package static func sessionItems(payloads: [[UInt8]]) -> [UInt8] {
        payloads.reduce(into: []) { $0 += sessionItem(payload: $1) }
    }

    /// The session payloads of an envelope a file holds (one that ``sessions(_:sentAt:)`` wrote),
    /// checked as untrusted input: every item a `session` of its stated length whose payload is
    /// a JSON object with a string `sid`; nil when anything else is there (not ours to send).
    package static func sessionPayloads(of envelope: [UInt8]) -> [[UInt8]]? {
        func line(from start: Int) -> (bytes: ArraySlice<UInt8>, next: Int)? {
            guard start < envelope.count else { return nil }
            let end = envelope[start...].firstIndex(of: 0x0A) ?? envelope.count
            return (envelope[start..<end], end + 1)
        }
        guard let header = line(from: 0), JSONValue.parse(header.bytes)?.isObject == true else { return nil }
        var payloads: [[UInt8]] = []
        var at = header.next
        while at < envelope.count {
            guard let itemLine = line(from: at), !itemLine.bytes.isEmpty, let item = JSONValue.parse(itemLine.bytes),
                  item["type"]?.string == "session" else { return nil }
            // A length that is there must be an integer.
            if let length = item["length"], length != .null, length.int == nil { return nil }
            let payload: ArraySlice<UInt8>
            if let length = item["length"]?.int {
                guard length >= 0, itemLine.next + length <= envelope.count else { return nil }
                payload = envelope[itemLine.next..<(itemLine.next + length)]
                at = itemLine.next + length
                if at < envelope.count { guard envelope[at] == 0x0A else { return nil }; at += 1 }
            } else {
                guard let body = line(from: itemLine.next) else { return nil }
                payload = body.bytes
                at = body.next
            }
            guard JSONValue.parse(payload)?["sid"]?.string != nil else { return nil }
            payloads.append(Array(payload))
        }
        return payloads.isEmpty ? nil : payloads
    }
}

/// A `client_report` item: what the client did not send, by reason and category, since the last one.
package struct SentryClientReport: Encodable, Sendable, Equatable {
    package struct Discarded: Encodable, Sendable, Equatable {
        package var reason: String
        package var category: String
        package var quantity: Int

        package init(reason: String, category: String, quantity: Int) {
            self.reason = reason
            self.category = category
            self.quantity = quantity
        }
    }

    /// Seconds since the epoch.
    package var timestamp: Double
    package var discardedEvents: [Discarded]

    package init(timestamp: Double, discardedEvents: [Discarded]) {
        self.timestamp = timestamp
        self.discardedEvents = discardedEvents
    }

    enum CodingKeys: String, CodingKey {
        case timestamp, discardedEvents = "discarded_events"
    }
}

extension SentryEnvelope {
    /// One `client_report` item, its header and its line.
    package static func clientReportItem(_ report: SentryClientReport) -> [UInt8] {
        let body = json(report)
        return json(SentryItemHeader(type: "client_report", length: body.count, contentType: "application/json")) + [0x0A] + body + [0x0A]
    }
}
