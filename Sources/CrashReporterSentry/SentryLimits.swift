// SentryLimits.swift — what Sentry asked this app to hold back, and what the app did not send:
// rate limits per data category (`X-Sentry-Rate-Limits`, `Retry-After`), kept across launches,
// and client reports (`client_report` items: discarded events counted by reason and category),
// as the Sentry SDKs keep them. Both live in small files beside the records, read as untrusted.
import CrashRecordFormat
package import CrashSentry
import HostFacts
#if canImport(Glibc)
import Glibc
#endif

/// The data categories this reporter sends: a crash's event (`error`) and attached record
/// (`attachment`), a run's session (`session`).
package enum SentryCategory: String, Sendable, CaseIterable {
    case error, attachment, session
}

/// Until when each category may not be sent (ms since the epoch), per `X-Sentry-Rate-Limits`.
package struct SentryRateLimits: Sendable, Equatable {
    package private(set) var until: [SentryCategory: Int64] = [:]

    package init() {}

    /// How long `category` must still wait at `now` (ms), or nil.
    package func wait(for category: SentryCategory, now: Int64) -> Duration? {
        guard let end = until[category], end > now else { return nil }
        return .milliseconds(end - now)
    }

    /// Takes in an answer's `X-Sentry-Rate-Limits` (`retry_after:categories:scope…`, comma
    /// separated; no categories means all; `default` is an event's) or, on a 429 without it,
    /// `Retry-After` for everything. Returns whether anything changed.
    @discardableResult
    package mutating func update(header: String?, retryAfter: Duration?, status: Int, now: Int64) -> Bool {
        var changed = false
        func hold(_ category: SentryCategory, seconds: Double) {
            let end = now + Int64(min(seconds, 86_400) * 1000)
            if end > until[category] ?? 0 {
                until[category] = end
                changed = true
            }
        }
        if let header {
            for limit in header.split(separator: ",") {
                let fields = limit.split(separator: ":", omittingEmptySubsequences: false)
                let text = fields.first.map { String($0).trimmingSpaces() } ?? ""
                guard let seconds = Double(text), seconds >= 0, seconds.isFinite else { continue }
                let named = fields.count > 1 ? fields[1].split(separator: ";").map(String.init) : []
                for category in SentryCategory.allCases
                where named.isEmpty || named.contains(category.rawValue) || (category == .error && named.contains("default")) {
                    hold(category, seconds: seconds)
                }
            }
        } else if status == 429 {
            let seconds = retryAfter.map { Double($0.components.seconds) } ?? 60
            for category in SentryCategory.allCases { hold(category, seconds: seconds) }
        }
        return changed
    }

    /// `<records>/sentry-rate-limits`: one `category until-ms` line each.
    package static func path(_ recordDirectory: String) -> String { recordDirectory + "/sentry-rate-limits" }

    /// The limits kept in `recordDirectory` (lines that do not parse are ignored; past ones dropped).
    package static func load(_ recordDirectory: String, now: Int64) -> SentryRateLimits {
        var limits = SentryRateLimits()
        guard let (text, _) = SmallFile.text(path(recordDirectory), limit: 1024, followLinks: false) else { return limits }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 2, let category = SentryCategory(rawValue: String(fields[0])), let end = Int64(fields[1]),
                  end > now else { continue }
            // A limit longer than a day is not Sentry's (it caps at hours): ignored.
            limits.until[category] = min(end, now + 86_400_000)
        }
        return limits
    }

    /// Written beside the records (a temporary file renamed into place), so a later launch holds back too.
    package func save(_ recordDirectory: String) {
        let text = until.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)\n" }.joined()
        _ = SmallFile.replace(SentryRateLimits.path(recordDirectory), with: Array(text.utf8))
    }
}

/// How long the waiting sessions are held back after a send of them failed (the network, a 5xx,
/// a DSN Sentry does not know): kept beside the records, so that the launches in between (a
/// command-line tool's, each short) neither list the waiting files nor make a request that will
/// fail too. Without it, every launch once the sessions were due paid a request (≈ 15 ms with
/// libcurl loaded, and an error on stderr) for as long as Sentry could not be reached. Only the
/// batch of waiting sessions is held: a crash and its own session go as ever. A send that
/// succeeds (the batch, or sessions riding with a crash) lifts it.
package enum SentrySessionsHold {
    /// Held this long after a failed send, or as long as the answer asked (up to a day).
    package static let minimum: Int64 = 15 * 60 * 1000

    /// `<records>/sentry-sessions-held`: the time, ms since the epoch, until which they wait.
    package static func path(_ recordDirectory: String) -> String { recordDirectory + "/sentry-sessions-held" }

    /// Until when the sessions are held, when that is later than `now` (a file that does not
    /// parse, or a time more than a day away, holds nothing).
    package static func until(_ recordDirectory: String, now: Int64) -> Int64? {
        guard let (bytes, _) = SmallFile.read(path(recordDirectory), limit: 32, followLinks: false),
              !bytes.isEmpty, bytes.count <= 21 else { return nil }
        var until: Int64 = 0
        for byte in bytes where byte != 0x0A {
            guard (0x30...0x39).contains(byte), until < Int64.max / 10 - 9 else { return nil }
            until = until * 10 + Int64(byte - 0x30)
        }
        return until > now && until <= now + 86_400_000 ? until : nil
    }

    /// Holds them from `now` for ``minimum``, or `retryAfter` when longer (at most a day).
    package static func hold(_ recordDirectory: String, now: Int64, retryAfter: Duration?) {
        let asked = retryAfter.map { Int64($0.components.seconds) * 1000 } ?? 0
        let until = now + min(max(minimum, asked), 86_400_000)
        _ = SmallFile.replace(path(recordDirectory), with: Array("\(until)\n".utf8))
    }

    /// Lifts the hold (a send went through).
    package static func lift(_ recordDirectory: String) {
        unlink(path(recordDirectory))
    }
}

/// Events this reporter did not send, by reason and category: Sentry's client report, sent with
/// the next envelope that goes out, and kept beside the records until then.
package struct SentryDiscards: Sendable, Equatable {
    /// Sentry's reasons this reporter has: the app's hook dropped it (`before_send`), Sentry
    /// refused it for good (`send_error`), a rate limit held it back past its use
    /// (`ratelimit_backoff`), the record directory's bound folded its record into a later one of
    /// the same crash, whose event stands for it (`queue_overflow`).
    package enum Reason: String, Sendable, CaseIterable {
        case beforeSend = "before_send", sendError = "send_error", rateLimitBackoff = "ratelimit_backoff"
        case queueOverflow = "queue_overflow"
    }

    package struct Key: Hashable, Sendable {
        package var reason: Reason
        package var category: SentryCategory
    }

    package private(set) var counts: [Key: Int] = [:]

    package init() {}

    package var isEmpty: Bool { counts.isEmpty }

    package mutating func add(_ reason: Reason, _ category: SentryCategory, _ quantity: Int = 1) {
        counts[Key(reason: reason, category: category), default: 0] += quantity
    }

    package mutating func subtract(_ other: SentryDiscards) {
        for (key, quantity) in other.counts {
            let left = (counts[key] ?? 0) - quantity
            counts[key] = left > 0 ? left : nil
        }
    }

    package mutating func merge(_ other: SentryDiscards) {
        for (key, quantity) in other.counts { counts[key, default: 0] += quantity }
    }

    /// The `client_report` item's payload.
    package func payload(timestamp: Int64) -> SentryClientReport {
        SentryClientReport(timestamp: Double(timestamp) / 1000, discardedEvents: counts.sorted {
            ($0.key.reason.rawValue, $0.key.category.rawValue) < ($1.key.reason.rawValue, $1.key.category.rawValue)
        }.map { SentryClientReport.Discarded(reason: $0.key.reason.rawValue, category: $0.key.category.rawValue, quantity: $0.value) })
    }

    /// `<records>/sentry-discarded`: one `reason category count` line each.
    package static func path(_ recordDirectory: String) -> String { recordDirectory + "/sentry-discarded" }

    package static func load(_ recordDirectory: String) -> SentryDiscards {
        var discards = SentryDiscards()
        guard let (text, _) = SmallFile.text(path(recordDirectory), limit: 4096, followLinks: false) else { return discards }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, let reason = Reason(rawValue: String(fields[0])),
                  let category = SentryCategory(rawValue: String(fields[1])), let count = Int(fields[2]), (1...1_000_000).contains(count)
            else { continue }
            discards.add(reason, category, count)
        }
        return discards
    }

    package func save(_ recordDirectory: String) {
        guard !isEmpty else {
            unlink(SentryDiscards.path(recordDirectory))
            return
        }
        let text = counts.map { "\($0.key.reason.rawValue) \($0.key.category.rawValue) \($0.value)\n" }.sorted().joined()
        _ = SmallFile.replace(SentryDiscards.path(recordDirectory), with: Array(text.utf8))
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var text = Substring(self)
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return String(text)
    }
}
