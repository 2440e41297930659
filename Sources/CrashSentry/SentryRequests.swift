// SentryRequests.swift — the request a crash killed, and the others lost with it, as Sentry says
// them: the trace context, the request interface, a tag, bounded extra data, and the envelope
// header's dynamic sampling context.
package import CrashRecordFormat

extension SentryEnvelope {
    /// At most this many other requests go in `extra.requests_in_flight` (a record holds 32).
    package static let requestsInFlightLimit = 32
    /// Each text of an entry of `extra.requests_in_flight` is cut to this many characters (the
    /// record's fields are at most 127 bytes; a damaged or foreign record is not trusted).
    package static let requestTextLimit = 128

    /// What `event` says of the requests in `record` (nothing when it has no requests section):
    ///
    /// - The crashed request (only when the record names one: a wrong request is worse than
    ///   none): `contexts.trace` with its trace id, span id, parent span id, `op` and `status:
    ///   internal_error` when it carried a trace; the `request` interface (`method`, `url`: the
    ///   path, relative, which Relay keeps as it is; `query_string`, which `RecordMinimisation` drops
    ///   unless the policy keeps it) when its method is an HTTP method; the tag `request_id`;
    ///   its key/values as `extra.request_attributes` (dropped by `RecordMinimisation` unless kept).
    /// - The others in flight, most recent first, as `extra.requests_in_flight` (at most
    ///   ``requestsInFlightLimit``, each `{id, method, route, trace_id, age}`, texts cut to
    ///   ``requestTextLimit``) and how many were in flight in all, `extra.requests_in_flight_count`.
    ///
    /// `op` is `http.server` for an HTTP method, as Sentry's server SDKs name a request's span;
    /// for other work (`CrashContext.method` `"grpc"`, `"job"`) it is that word, lowercased,
    /// since no convention of Sentry's fits every kind of work and the app's own word says
    /// what it was. Such work gets no `request` interface: it was not an HTTP request (and Relay
    /// would refuse a method outside `[A-Z_-]{3,32}`).
    package static func describeRequests(of record: CrashRecord, in event: inout SentryEvent,
                                         names: (UInt64) -> String? = { _ in nil }) {
        guard let requests = record.requests else { return }
        var extra = event.extra ?? [:]
        // A hang of a stuck request is about that request, as a crash is about the crashed one.
        let stuck = record.event?.requestKey.flatMap { key in requests.others.first { $0.key == key } }
        if let crashed = requests.crashed ?? stuck {
            let id = tagValue(crashed.requestID)
            if !id.isEmpty { event.tags["request_id"] = id }
            let http = httpMethods.contains(crashed.method.uppercased())
            if let traceID = crashed.traceID, let spanID = crashed.spanID, isHexID(traceID, digits: 32), isHexID(spanID, digits: 16) {
                let method = crashed.method.lowercased()
                event.contexts.trace = SentryEvent.Trace(
                    traceID: traceID, spanID: spanID, parentSpanID: crashed.parentSpanID.flatMap { isHexID($0, digits: 16) ? $0 : nil },
                    op: http ? "http.server" : method.isEmpty ? nil : String(method.prefix(requestTextLimit)))
            }
            if http {
                // The path has no query (CrashContext says so); should one hold a `?` or `#`
                // anyway, what follows is left out: Relay would make it the query string.
                let path = crashed.path.prefix { $0 != "?" && $0 != "#" }
                event.request = SentryEvent.Request(method: crashed.method.uppercased(), url: path.isEmpty ? nil : String(path),
                                                    queryString: crashed.query.isEmpty ? nil : crashed.query)
            }
            if !crashed.attributes.isEmpty {
                extra["request_attributes"] = .pairs(Dictionary(crashed.attributes.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a }))
            }
        }
        let warnings = record.runtimeWarnings
        let others = requests.others.prefix(requestsInFlightLimit).map { request in
            let waitsIn: [String]? = request.waiting.flatMap { waiting in
                let points = waiting.resumePoints.prefix(waitingFramesLimit)
                return points.isEmpty ? nil : points.map { names($0) ?? record.offsetLabel(for: $0) ?? "0x" + String($0, radix: 16) }
            }
            return SentryEvent.InFlightRequest(
                id: String(request.requestID.prefix(requestTextLimit)), method: String(request.method.prefix(requestTextLimit)),
                route: String(request.target.prefix(requestTextLimit)),
                traceID: request.traceID.flatMap { isHexID($0, digits: 32) ? $0 : nil },
                age: record.age(of: request).map { ($0 * 1000).rounded() / 1000 },
                waitsIn: waitsIn, leakedContinuation: warnings.leakedContinuation(awaitedIn: waitsIn ?? [])?.text)
        }
        if !others.isEmpty { extra["requests_in_flight"] = .requests(Array(others)) }
        if requests.inFlight > 0 { extra["requests_in_flight_count"] = .text(String(requests.inFlight)) }
        event.extra = extra.isEmpty ? nil : extra
    }

    /// Resume points of a waiting request sent in `waits_in`.
    static let waitingFramesLimit = 16

    /// HTTP's methods (RFC 9110's and PATCH): the requests Sentry's `request` interface describes.
    static let httpMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]

    /// `text` as a tag's value: control characters (Relay refuses a newline) as spaces, trimmed,
    /// at most 200 characters (Relay's limit); empty when nothing is left (Relay refuses an
    /// empty value: no tag then).
    static func tagValue(_ text: String) -> String {
        let spaced = String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) })
        // Trimmed of what Foundation's `CharacterSet.whitespaces` holds: tabs (controls, spaces
        // already) and the spaces of every kind.
        let isSpace = { (character: Character) in character.unicodeScalars.allSatisfy { $0.properties.generalCategory == .spaceSeparator } }
        let trimmed = spaced.drop(while: isSpace)
        return String(trimmed.dropLast(trimmed.reversed().prefix(while: isSpace).count).prefix(200))
    }

    /// Exactly `digits` lowercase hex digits, not all zero (W3C trace-context's ids).
    static func isHexID(_ text: String, digits: Int) -> Bool {
        text.utf8.count == digits && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
            && text.utf8.contains { $0 != 0x30 }
    }

    /// The envelope header's `trace` for the event `event` (its JSON as sent, after the app's
    /// hook): its `contexts.trace.trace_id`, the DSN's `publicKey`, its `release` and
    /// `environment`, and `sampled` (the traceparent's flag) when the trace is the one of the
    /// request `record` names. nil when the event has no trace: no header then, as
    /// sentry-python writes none without a trace.
    static func traceHeader(event: [UInt8], publicKey: String, record: CrashRecord) -> SentryTraceHeader? {
        guard !publicKey.isEmpty, let fields = EventFields(json: event),
              let traceID = fields.traceID, isHexID(traceID, digits: 32) else { return nil }
        let crashed = record.requests?.crashed
        return SentryTraceHeader(traceID: traceID, publicKey: publicKey,
                                 release: fields.release.flatMap { $0.isEmpty ? nil : $0 },
                                 environment: fields.environment.flatMap { $0.isEmpty ? nil : $0 },
                                 sampled: crashed?.traceID == traceID ? (crashed?.sampled == true ? "true" : "false") : nil)
    }
}
