// DeliveryRule.swift — which answers of a server delete a record and which keep it: one rule for
// every sink that sends over HTTP (Sentry, OTLP).
//
// A record is deleted once every sink has it, so a sink acknowledges it only when the server has
// it, or has refused it for good for what the record itself holds. An answer about the sink's
// configuration or the server's availability says nothing about the record, and a configuration
// mistake (a typo in the DSN's key, a token that expired, a wrong project or path) must never
// delete crashes: those records stay for a later launch, bounded by the record directory's bound
// like every other record.
//   delivered   2xx (Sentry has it; an OTLP collector that rejects it in `partial_success` has
//               answered for its content: delivered, not sent again)
//   refused     400 (the request is malformed: Relay's answer to an invalid or oversized
//               envelope), 413 (too large), 415 (a content type it will not take), 422 (content
//               it cannot process): the same record would be refused again — deleted, counted
//   retry       no answer (the network), 408, 429 (after the wait it asks for), 5xx (up to the
//               policy's limit in a row, then kept for the next launch)
//   kept        everything else: 401 and 403 (the key or the token refused; Relay answers 403 for
//               a project that rejects events), 404 and 405 (a wrong address or project), 407
//               (a proxy), a redirect, any other status — for the next launch, and the sink
//               sends nothing more this launch: the answer is about every record. One line on
//               stderr (swift-log's default; the app's handler where it bootstrapped one) names
//               the sink, the status and what to check.
package enum DeliveryRule {
    /// What an answer means for the record it was about.
    package enum Verdict: Equatable, Sendable {
        case delivered
        case refused
        case retry
        case serverError
        case kept
    }

    /// The verdict for an HTTP status (0: no answer).
    package static func verdict(status: Int) -> Verdict {
        switch status {
        case 200..<300: return .delivered
        case 400, 413, 415, 422: return .refused
        case 0, 408, 429: return .retry
        case 500..<600: return .serverError
        default: return .kept
        }
    }

    /// What to check, for the stderr line of a kept answer.
    package static func advice(status: Int, what: String) -> String {
        switch status {
        case 401, 403: return "check \(what): its key or token was refused"
        case 404, 405: return "check \(what): nothing answers at that address or project"
        case 407: return "check the proxy's credentials"
        default: return "check \(what)"
        }
    }
}
