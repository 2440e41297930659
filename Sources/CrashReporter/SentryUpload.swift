// SentryUpload.swift — crash records sent straight to Sentry, beside the `/sa` events.
//
// At the next launch, after the ingest stored a record's events, one thread sends each record
// (oldest first) to the DSN's envelope endpoint as an envelope with the record attached. The
// record file stays on disk until Sentry acknowledged it (2xx), or it was given up (413, any
// other 4xx but 408 and 429, a record no longer readable, `maxServerErrorAttempts` 5xx in a row):
// then the claim `sentry:<name>` is taken in the store (with a counter) and the file is deleted,
// its events being stored already. 429 waits for `Retry-After` / `X-Sentry-Rate-Limits`; network
// errors, 408 and 5xx back off exponentially. What is not sent by shutdown is sent next launch,
// with the same event id (Sentry drops the repeat).
//
// Several processes of one app over one record directory (a pre-forked service, a pool, several
// instances on one volume) send each record once: a process sends a record only while it holds
// an exclusive flock(2) on the record file (RecordLease), from before the request until the file
// is deleted; the others skip it. The kernel releases the lock when its holder dies, however it
// dies, so a killed sender blocks nothing: the next process sends the record again, with the
// same event id. A lock rather than a claim in the store: a claim taken before sending would
// outlive a sender killed mid-send and need a timeout to be taken back.
import CrashEvents
import CrashRecordFormat
import CrashSentry
import CrashTracking
import Foundation
import HTTPExchange
#if canImport(Glibc)
import Glibc
#endif

/// A Sentry DSN: `https://<public key>@<host>[:port]/[path/]<project id>`.
public struct SentryDSN: Sendable, Equatable, CustomStringConvertible {
    public let publicKey: String
    public let projectID: String
    /// `<scheme>://<host>[:port]/[path/]api/<project id>/envelope/`.
    public let envelopeURL: URL

    /// Parses `dsn`; `nil` when it is not a DSN (no key, no project id, not http(s)).
    public init?(_ dsn: String) {
        guard let components = URLComponents(string: dsn.trimmingCharacters(in: .whitespaces)),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty,
              let key = components.user, !key.isEmpty else { return nil }
        var parts = components.path.split(separator: "/").map(String.init)
        guard let project = parts.popLast(), !project.isEmpty, project.allSatisfy(\.isNumber) else { return nil }
        var url = URLComponents()
        url.scheme = scheme
        url.host = host
        url.port = components.port
        url.path = "/" + (parts + ["api", project, "envelope"]).joined(separator: "/") + "/"
        guard let envelopeURL = url.url else { return nil }
        publicKey = key
        projectID = project
        self.envelopeURL = envelopeURL
    }

    /// The `X-Sentry-Auth` header (protocol 7, the public key, this client).
    public var authHeader: String {
        "Sentry sentry_version=7, sentry_key=\(publicKey), sentry_client=\(EventLibrary.name.lowercased())/\(EventLibrary.version)"
    }

    /// The DSN without its key (for logs).
    public var description: String { envelopeURL.absoluteString }
}

/// How the Sentry upload retries.
public struct SentryUploadPolicy: Sendable {
    /// Seconds before a request counts as failed.
    public var requestTimeout: Double = 30
    /// First retry delay (seconds); doubles per consecutive failure.
    public var initialRetryDelay: Double = 1
    /// Longest retry delay, also the cap on what a server's rate limit asks for.
    public var maxRetryDelay: Double = 300
    /// 5xx answers in a row for the same record before it is given up.
    public var maxServerErrorAttempts = 8
    public init() {}
}

/// Builds the envelope of one record: (record, its bytes, its file name, the time of sending).
public typealias SentryEnvelopeMaker = @Sendable (CrashRecord, [UInt8], String, Date) -> [UInt8]

/// The thread that sends records to Sentry (see the file comment).
// @unchecked: the report and the stop/finish flags are guarded by `cond`.
public final class SentryUpload: @unchecked Sendable {
    /// The claim prefix that marks a record as done for Sentry (sent or given up).
    public static let claimPrefix = "sentry:"

    /// CrashSentry's envelope (the one `crash-inspect export --sentry` writes), with the event id
    /// derived from the record's bytes (a resend is deduplicated) and this machine's os-release
    /// (the next launch runs where the crash happened). No local symbols: Sentry symbolicates.
    public static let standardEnvelope: SentryEnvelopeMaker = { record, raw, name, sentAt in
        SentryEnvelope.make(record: record, rawRecord: raw, fileName: name, eventID: SentryEnvelope.eventID(rawRecord: raw),
                            sentAt: sentAt, osRelease: SentryOSRelease.current())
    }

    /// What this process's upload did.
    public struct Report: Sendable, Equatable {
        /// Records Sentry acknowledged.
        public var sent: [String] = []
        /// Records given up, with why (also counted in the store: `sentry_quarantined`).
        public var quarantined: [String: String] = [:]
        /// The last failure that will be retried, if any.
        public var lastError: String?
    }

    let store: TrackingStore
    let directory: String
    let dsn: SentryDSN
    let policy: SentryUploadPolicy
    let makeEnvelope: SentryEnvelopeMaker
    /// Cancelled by ``finish(deadline:)`` at the deadline: stops the request in flight.
    private let cancellation = HTTPExchange.Cancellation()
    private let cond = NSCondition()
    // Guarded by `cond`.
    private var report = Report()
    private var stopping = false
    private var stopDeadline: Int64 = .max
    private var finished = false

    public init(store: TrackingStore, directory: String, dsn: SentryDSN, policy: SentryUploadPolicy = SentryUploadPolicy(),
                envelope: @escaping SentryEnvelopeMaker) {
        self.store = store
        self.directory = directory
        self.dsn = dsn
        self.policy = policy
        self.makeEnvelope = envelope
    }

    /// What was sent and given up so far.
    public var currentReport: Report { cond.withLock { report } }

    /// Starts the sending thread.
    public func start() {
        let thread = Thread { [self] in run() }
        thread.name = "CrashReporter.sentry"
        thread.start()
    }

    /// Sends until nothing is pending or `deadline` (monotonic ns) passes, then stops (a request
    /// in flight at the deadline is cancelled: it is sent again next launch). Returns whether
    /// nothing is left pending.
    @discardableResult
    public func finish(deadline: Int64) -> Bool {
        cond.lock()
        stopping = true
        stopDeadline = deadline
        cond.broadcast()
        while !finished {
            let now = Self.monotonic()
            if now >= deadline {
                cancellation.cancel()
                if !cond.wait(until: Date(timeIntervalSinceNow: 5)) { break }
            } else if !cond.wait(until: Date(timeIntervalSinceNow: Double(deadline - now) / 1e9)) {
                continue
            }
        }
        cond.unlock()
        return pending().isEmpty
    }

    /// Records whose events are stored and which Sentry does not have yet, oldest first.
    func pending() -> [String] {
        ((try? RecordFileName.names(in: directory)) ?? []).filter { name in
            RecordFileName(name) != nil && (try? store.isClaimed(name)) == true
                && (try? store.isClaimed(Self.claimPrefix + name)) != true
        }
    }

    private func run() {
        defer { cond.withLock { finished = true; cond.broadcast() } }
        var failures = 0
        // A snapshot at a time (one directory listing, not one per record); the next snapshot
        // picks up whatever is still pending.
        var previous: [String]?
        while true {
            let batch = pending()
            // Nothing left, or a whole pass changed nothing (the store refuses the claims): the
            // next launch tries again rather than this one spinning.
            if batch.isEmpty || batch == previous { return }
            previous = batch
            for name in batch {
                if (try? store.isClaimed(Self.claimPrefix + name)) == true { continue } // another process sent it
                // The lease: held from here until the record is acknowledged (or given up) and
                // deleted, across retries. Another process of the app sending it holds it now:
                // leave the record to that one. A sender that dies lets go with its last fd.
                guard let lease = RecordLease(path: directory + "/" + name) else { continue }
                defer { lease.release() }
                // Sent and deleted by another process between our listing and our lease.
                if (try? store.isClaimed(Self.claimPrefix + name)) == true { continue }
                var serverErrors = 0
                sending: while true {
                    switch send(name) {
                    case .done:
                        failures = 0
                        break sending
                    case .retry(let retryAfter, let serverError):
                        failures += 1
                        if serverError {
                            serverErrors += 1
                            if serverErrors >= policy.maxServerErrorAttempts {
                                giveUp(name, reason: "\(serverErrors) server errors in a row: \(currentReport.lastError ?? "")")
                                failures = 0
                                break sending
                            }
                        }
                        let delay = HTTPExchange.backoff(failures: failures, initial: policy.initialRetryDelay,
                                                         maximum: policy.maxRetryDelay, retryAfter: retryAfter)
                        if !sleep(seconds: delay) { return }
                    case .stopped:
                        return
                    }
                }
            }
        }
    }

    enum Outcome {
        case done
        case retry(after: Double?, serverError: Bool)
        case stopped
    }

    private func send(_ name: String) -> Outcome {
        let path = directory + "/" + name
        let bytes: [UInt8]
        let record: CrashRecord
        do {
            bytes = try CrashRecordReader.readBytes(path: path)
            record = try CrashRecordReader.parse(bytes)
        } catch {
            // Unreadable now (its AppCrashed says so already): nothing Sentry could use.
            if access(path, F_OK) != 0 { return .done } // gone meanwhile (another process finished it)
            giveUp(name, reason: "unreadable record: \(error)")
            return .done
        }
        let request = HTTPExchange.Request(url: dsn.envelopeURL, method: .post,
                                           headers: [("Content-Type", "application/x-sentry-envelope"), ("X-Sentry-Auth", dsn.authHeader)],
                                           body: Data(makeEnvelope(record, bytes, name, Date())), timeout: policy.requestTimeout)
        let answer = HTTPExchange.send(request, cancellation: cancellation)
        let limit = Self.rateLimit(answer.headers["x-sentry-rate-limits"])
        switch answer.status {
        case 200..<300:
            done(name, counter: "sentry_sent")
            cond.withLock { report.sent.append(name); report.lastError = nil }
            // A 2xx may announce a limit for what follows.
            if let limit, limit > 0, !sleep(seconds: min(limit, policy.maxRetryDelay)) { return .stopped }
            return .done
        case 429:
            note("HTTP 429 \(answer.text)")
            return .retry(after: min(policy.maxRetryDelay, limit ?? answer.retryAfter ?? 60), serverError: false)
        case 0:
            if answer.text == "stopped" { return .stopped }
            note(answer.text)
            return .retry(after: nil, serverError: false)
        case 408:
            note("HTTP 408 \(answer.text)")
            return .retry(after: nil, serverError: false)
        case 500..<600:
            note("HTTP \(answer.status) \(answer.text)")
            return .retry(after: answer.retryAfter, serverError: true)
        default:
            // 413 (too large) and every other 4xx: sending it again cannot help.
            giveUp(name, reason: "HTTP \(answer.status): \(answer.text)")
            return .done
        }
    }

    private func note(_ error: String) { cond.withLock { report.lastError = error } }

    private func giveUp(_ name: String, reason: String) {
        done(name, counter: "sentry_quarantined")
        cond.withLock { report.quarantined[name] = reason }
    }

    /// Takes the claim and deletes the file if the events are stored too (they are: only such
    /// records are sent).
    private func done(_ name: String, counter: String) {
        do {
            try store.appendOnce([], claim: Self.claimPrefix + name)
            try store.append([], addingCounters: [counter: 1])
        } catch {
            note("store: \(error)")
            return
        }
        NextLaunchIngest.finish(name: name, directory: directory, store: store, awaitingClaims: [Self.claimPrefix])
    }

    /// Sleeps `seconds` unless stopped past the deadline first; `false` when stopped.
    private func sleep(seconds: Double) -> Bool {
        let until = Self.monotonic() + Int64(seconds * 1e9)
        cond.lock()
        defer { cond.unlock() }
        while true {
            let now = Self.monotonic()
            if stopping && now >= stopDeadline { return false }
            if stopping && until > stopDeadline { return false } // would outlive the deadline
            if now >= until { return true }
            _ = cond.wait(until: Date(timeIntervalSinceNow: Double(until - now) / 1e9))
        }
    }

    /// The wait `X-Sentry-Rate-Limits` asks for before the next error event or attachment:
    /// the longest `retry_after` among limits whose categories are empty (all), `error`,
    /// `default` or `attachment`. `nil` when none applies.
    public static func rateLimit(_ header: String?) -> Double? {
        guard let header else { return nil }
        var wait: Double?
        for limit in header.split(separator: ",") {
            let fields = limit.trimmingCharacters(in: .whitespaces).split(separator: ":", omittingEmptySubsequences: false)
            guard let seconds = fields.first.flatMap({ Double($0) }), seconds >= 0 else { continue }
            let categories = fields.count > 1 ? fields[1].split(separator: ";").map(String.init) : []
            if categories.isEmpty || categories.contains(where: { ["error", "default", "attachment"].contains($0) }) {
                wait = max(wait ?? 0, seconds)
            }
        }
        return wait
    }

    static func monotonic() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

/// An exclusive, non-blocking `flock(2)` on a record file: whoever holds it is the one process
/// sending that record. Released by ``release()``, or by the kernel when the process dies.
final class RecordLease {
    private var fd: Int32

    /// The lease on the record at `path`, or nil when another process holds it, or the file is
    /// gone (sent and deleted by another process) or is not a regular file.
    init?(path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        var opened = stat(), current = stat()
        guard fstat(fd, &opened) == 0, (opened.st_mode & S_IFMT) == S_IFREG, flock(fd, LOCK_EX | LOCK_NB) == 0,
              // Still the file at that path (not deleted, nor replaced, while we waited for the lock).
              stat(path, &current) == 0, current.st_ino == opened.st_ino, current.st_dev == opened.st_dev else {
            close(fd)
            return nil
        }
        self.fd = fd
    }

    func release() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
    }

    deinit { release() }
}

