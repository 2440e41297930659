// SentrySink.swift — crash records sent straight to Sentry, one envelope each.
//
// The inbox hands the sink each record Sentry does not have yet; an UploadWorker thread
// (HTTPExchange, the one the `/sa` uploader runs on too) sends them oldest first to the DSN's
// envelope endpoint, the record attached. Which answers delete a record and which keep it is
// DeliveryRule's (the OTLP sink's too): the sink acknowledges a record to the inbox when Sentry
// acknowledged it (2xx) or refused it for its content (400, 413, 415, 422); the inbox deletes the
// file once every sink has it. An answer about the configuration (401, 403, 404: a wrong key or
// project) keeps every record and session for a later launch, and one line on stderr says what to
// check. 429 waits for `X-Sentry-Rate-Limits` / `Retry-After`; network errors, 408 and 5xx back
// off exponentially, and after `maxServerErrorAttempts` 5xx in a row the record waits for the
// next launch. What is not sent by the deadline is sent next launch, with the same event id
// (Sentry drops the repeat). A record the reader rejects still goes, as an event saying so with
// the file attached.
//
// Several processes of one app over one record directory (a pre-forked service, a pool, several
// instances on one volume) send each record once: a process sends a record only while it holds
// an exclusive flock(2) on the record file (RecordLease, shared with the other sinks of the process: SinkLease), from before the request until it is
// acknowledged; the others leave it (the queue, the leases and the worker are LeasedSender's, the OTLP sink's too). The kernel releases the lock when its holder dies, however
// it dies, so a killed sender blocks nothing: the next process sends the record again, with the
// same event id. A lock rather than a mark on disk: a mark taken before sending would outlive a
// sender killed mid-send and need a timeout to be taken back.
//
// The sessions of runs that ended without a crash (release health) are files in
// `<records>/sessions`, leased the same way while they are sent, and sent together when a process
// can afford the round trip (SessionBatching, below): never one request per launch.
import HostFacts
import CrashMinidump
package import CrashRecordFormat
package import CrashSentry
package import HTTPExchange
import Logging
package import RecordDelivery
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A Sentry DSN: `https://<public key>@<host>[:port]/[path/]<project id>`.
package struct SentryDSN: Sendable, Equatable, CustomStringConvertible {
    package let publicKey: String
    package let projectID: String
    /// `<scheme>://<host>[:port]/[path/]api/<project id>/envelope/`.
    package let envelopeAddress: String

    /// Parses `dsn`; `nil` when it is not a DSN (no key, no project id, not http(s), a host or
    /// port that is not one). By hand, not with URLComponents: `start` parses the DSN on the
    /// caller's thread, and Foundation's first URL parse costs it about half a millisecond.
    package init?(_ dsn: String) {
        // Over the UTF-8 bytes, ASCII only: Character's Unicode properties, `firstRange(of:)` and
        // Foundation's URL parsing each cost `start`'s first call a tenth of a millisecond or more.
        let bytes = Array(dsn.utf8)
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || (0x09...0x0D).contains(b) }
        func isAlphanumeric(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) }
        func text(_ slice: ArraySlice<UInt8>) -> String { String(decoding: slice, as: UTF8.self) }
        var lower = bytes.startIndex, upper = bytes.endIndex
        while lower < upper && isSpace(bytes[lower]) { lower += 1 }
        while upper > lower && isSpace(bytes[upper - 1]) { upper -= 1 }
        let trimmed = bytes[lower..<upper]
        let separator: [UInt8] = Array("://".utf8)
        guard let schemeEnd = trimmed.indices.first(where: { trimmed[$0...].starts(with: separator) }) else { return nil }
        let scheme = text(trimmed[..<schemeEnd]).lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        let rest = trimmed[(schemeEnd + 3)...]
        let ends: (UInt8) -> Bool = { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        let authority = rest.prefix { !ends($0) }
        guard let at = authority.lastIndex(of: UInt8(ascii: "@")) else { return nil }
        let key = authority[..<at].prefix { $0 != UInt8(ascii: ":") }
        let hostPort = authority[(at + 1)...]
        var host = hostPort, port: ArraySlice<UInt8>?
        if hostPort.first == UInt8(ascii: "[") {
            guard let close = hostPort.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            host = hostPort[...close]
            let after = hostPort[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return nil }
                port = after.dropFirst()
            }
        } else if let colon = hostPort.firstIndex(of: UInt8(ascii: ":")) {
            host = hostPort[..<colon]
            port = hostPort[(colon + 1)...]
        }
        let keyBytes = { (b: UInt8) in isAlphanumeric(b) || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") }
        let hostBytes = { (b: UInt8) in isAlphanumeric(b) || Array("-.[]:".utf8).contains(b) }
        guard !key.isEmpty, key.allSatisfy(keyBytes), !host.isEmpty, host.allSatisfy(hostBytes) else { return nil }
        if let port {
            guard !port.isEmpty, port.count <= 5, port.allSatisfy({ (0x30...0x39).contains($0) }),
                  let number = Int(text(port)), (1...65535).contains(number) else { return nil }
        }
        let pathBytes = rest[authority.endIndex...].prefix { $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        var parts = pathBytes.split(separator: UInt8(ascii: "/"))
        let partBytes = { (b: UInt8) in isAlphanumeric(b) || Array("-._~".utf8).contains(b) }
        guard let project = parts.popLast(), project.allSatisfy({ (0x30...0x39).contains($0) }), parts.allSatisfy({ $0.allSatisfy(partBytes) })
        else { return nil }
        publicKey = text(key)
        projectID = text(project)
        // Appended by hand: the first `joined(separator:)` in a process costs ≈ 0.3 ms of
        // generic-metadata work in the runtime, on the caller's thread in `start`.
        var address = scheme + "://" + text(host) + (port.map { ":" + text($0) } ?? "") + "/"
        for part in parts { address += text(part) + "/" }
        envelopeAddress = address + "api/" + projectID + "/envelope/"
    }

    /// ``envelopeAddress`` checked as an http(s) URL (when sending, on the sink's thread).
    package var envelopeURL: HTTPExchange.Address? { HTTPExchange.Address(envelopeAddress) }

    /// The `X-Sentry-Auth` header (protocol 7, the public key, this client).
    package var authHeader: String {
        "Sentry sentry_version=7, sentry_key=\(publicKey), sentry_client=\(CrashCaptureLibrary.name.lowercased())/\(CrashCaptureLibrary.version)"
    }

    /// The DSN without its key (for logs).
    package var description: String { envelopeAddress }
}

/// Builds the envelope of one record: (record, its bytes, its file name, the time of sending in
/// nanoseconds since the epoch, how many crashes it stands for, its run as Sentry files it), or
/// why none is sent (the app's hook dropped the event).
package typealias SentryEnvelopeMaker = @Sendable (CrashRecord, [UInt8], String, Int64, CrashRepetition, SentryRecordRun?)
    -> Result<[UInt8], SentryEnvelope.Refusal>

/// The run a record belongs to, as Sentry files it: the run's release, environment, dist and host,
/// and its session (crashed), sent in the record's envelope.
package struct SentryRecordRun: Sendable, Equatable {
    package var facts: SentryRunFacts
    package var session: SentrySession?
}

extension RecordSinkID {
    /// The Sentry sink.
    package static let sentry = RecordSinkID("sentry")!
}

/// When the sessions of ended runs are sent: together, by a process that can afford the round
/// trip. A run's session is a file from the launch that learns how the run ended, dated when the
/// run ended; the files are sent in one envelope (up to ``maxSessions`` runs), and only once this
/// process has lived ``processAge`` (a server, a long job: in the background, as before) or the
/// oldest run ended ``batchAge`` ago (a command-line tool that never lives that long: the first
/// launch after that sends every run since, and its exit waits for that one request). Until then
/// the files wait and `shutdown` does not wait for them. A crash's event, and the crashed run's
/// session with it, is never held back.
package struct SessionBatching: Sendable, Equatable {
    package var processAge: Duration
    package var batchAge: Duration
    package var maxSessions: Int

    package init(processAge: Duration = .seconds(5), batchAge: Duration = .seconds(3600), maxSessions: Int = 100) {
        self.processAge = processAge
        self.batchAge = batchAge
        self.maxSessions = max(1, maxSessions)
    }

    /// Every session as soon as it is known (each launch sends the last run's: a request per launch).
    package static let immediate = SessionBatching(processAge: .zero, batchAge: .zero)
}

/// The Sentry sink (see the file comment).
// @unchecked: `sessionFiles` is guarded by `lock`; `limits`, `discards` and `persistedLoaded` are the worker thread's.
package final class SentrySink: CrashRecordSink, @unchecked Sendable {
    package let id = RecordSinkID.sentry

    /// CrashSentry's envelope (the one `crash-inspect export --sentry` writes), with the event id
    /// derived from the record's bytes (a resend is deduplicated) and this machine's os-release
    /// (the next launch runs where the crash happened). Frames are named from the images' own
    /// symbol tables unless the policy says otherwise (``CrashDataPolicy/functionNames``); Sentry's
    /// symbolication with uploaded debug files replaces those names and adds files and lines.
    /// What the configuration's ``CrashDataPolicy`` keeps of it, then the app's `beforeSend` hook.
    /// `publicKey` (the DSN's) goes in the envelope header's `trace` when the crash killed a
    /// traced request. `minidump`: a minidump of the crash goes beside the event
    /// (`SentryOptions.minidump`), only where the policy lets raw memory
    /// leave the machine (`rawMemory`): a minidump is the stack memory, without it none is sent.
    package static func envelope(data: CrashDataPolicy, publicKey: String, beforeSend: (@Sendable (String) -> String?)?,
                                 minidump: Bool = false) -> SentryEnvelopeMaker {
        let minimised = data.minimisation
        let attachMinidump = minidump && data.rawMemory
        return { record, raw, name, sentAt, repetition, run in
            SentryEnvelope.outgoing(record: record, rawRecord: raw, fileName: name, eventID: SentryEnvelope.eventID(rawRecord: raw),
                                    sentAt: sentAt, osRelease: OSRelease.current(), repetition: repetition, minimised: minimised,
                                    publicKey: publicKey, facts: run?.facts, session: run?.session, beforeSend: beforeSend,
                                    minidump: attachMinidump ? { try? Minidump(record: $0).bytes } : nil)
        }
    }

    /// What this process's Sentry sink did.
    package struct Report: SenderReport, Equatable {
        /// Records Sentry acknowledged.
        package var sent: [String] = []
        /// Records given up, with why: Sentry refused them for good for their content (400,
        /// 413, 415, 422; DeliveryRule), or the reader or the envelope could not make an event.
        package var quarantined: [String: String] = [:]
        /// Records (and `sessions/<run>`) kept for a later launch after an answer about the
        /// configuration (DeliveryRule's `kept`: 401, 403, 404…), with why.
        package var kept: [String: String] = [:]
        /// That answer, when there was one this launch: nothing more was sent after it.
        package var configurationError: String?
        /// Records another process of the app was sending (left to it).
        package var leftToOthers: [String] = []
        /// Records whose event the app's `beforeSend` hook dropped (not sent, acknowledged).
        package var dropped: [String] = []
        /// Runs whose session Sentry acknowledged (with their crash, or alone).
        package var sessionsSent: [String] = []
        /// Runs too old for a session (Relay keeps 5 days): counted, not sent.
        package var sessionsTooOld: [String] = []
        /// The last failure (retried, or a record kept), if any.
        package var lastError: String?
        package init() {}
    }

    let dsn: SentryDSN
    let data: CrashDataPolicy
    let makeEnvelope: SentryEnvelopeMaker
    private typealias Sender = LeasedSender<SentryRecordRun?, Report>
    /// The sender, made with the first record or session (SenderCell).
    private let senderCell = SenderCell()
    private let policy: UploadPolicy
    private var sender: Sender {
        unsafeDowncast(senderCell.sender {
            let made = Sender(name: "CrashReporter.sentry", backend: "Sentry", policy: policy)
            made.sends { [unowned self] in step() }
            return made
        }, to: Sender.self)
    }
    private typealias Taken = Sender.Taken
    /// How this run is filed (its release, environment, dist, host); a record of a run the
    /// ledger no longer knows is filed with these, its own app version kept.
    let facts: SentryRunFacts
    /// This run's app version: a record of another version keeps its own release.
    let appVersion: String?
    /// The record directory: its runs (the ledger), the installation id, the pending sessions.
    let recordDirectory: String?
    /// Whether runs become sessions (release health).
    let sessions: Bool
    /// When their sessions are sent (``SessionBatching``).
    let sessionBatching: SessionBatching
    /// When this sink was made (about when the process started): how long it has lived.
    private let made = ContinuousClock.now
    /// ``shutdown(deadline:)`` was called: a launch still going (the reporter does not wait for
    /// what a short program does not need) starts no sending any more; what it queues stays in
    /// its files for the next launch.
    private let runEnded = Atomic<Bool>(false)
    /// The session's `did`.
    private let installation = Mutex<String??>(nil)
    private let lock = Mutex(())
    // Guarded by `lock`.
    /// Session envelopes waiting in `<records>/sessions` (files, so a run's session outlives this process).
    private var sessionFiles: [String] = []
    /// When each of them was written, in ms since the epoch.
    private var sessionWritten: [String: Int64] = [:]
    /// The last batch was refused whole (400…): send one session at a time until one goes.
    private var sessionsSingly = false
    /// Whether waiting sessions ride with a crash's envelope (until one such is refused whole).
    private var sessionsMayRide = true
    /// Sentry's rate limits per category and the discards not yet reported: the worker thread's,
    /// read from beside the records on its first step (the crash-time uploader's too) and written
    /// back when they change.
    private var limits = SentryRateLimits()
    private var discards = SentryDiscards()
    private var persistedLoaded = false

    /// - Parameters:
    ///   - data: what the events and attachments keep (also of an unreadable record's event).
    ///   - envelope: the envelope builder; nil: ``envelope(data:publicKey:beforeSend:)`` without a hook.
    package init(dsn: SentryDSN, policy: UploadPolicy = UploadPolicy(), data: CrashDataPolicy = CrashDataPolicy(),
                 envelope: SentryEnvelopeMaker? = nil, facts: SentryRunFacts? = nil, appVersion: String? = nil,
                 recordDirectory: String? = nil, sessions: Bool = true, sessionBatching: SessionBatching = SessionBatching()) {
        self.sessions = sessions
        self.sessionBatching = sessionBatching
        self.dsn = dsn
        self.data = data
        self.facts = facts ?? SentryRunFacts(release: nil, environment: nil, dist: nil, serverName: nil)
        self.appVersion = appVersion
        self.recordDirectory = recordDirectory
        self.makeEnvelope = envelope ?? Self.envelope(data: data, publicKey: dsn.publicKey, beforeSend: nil)
        self.policy = policy
    }

    /// What was sent and given up so far.
    package var currentReport: Report { senderCell.isMade ? sender.currentReport : Report() }

    /// Queues the record for sending while this process holds its lease; another process
    /// holding it is sending it (`.later`).
    package func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult {
        if runEnded.load(ordering: .acquiring) { return .later(reason: "the run had ended: sent by a later launch") }
        // How Sentry files its run, made now, on the launch thread.
        return sender.take(record, receipt: receipt) { (try? record.record.get()).map { runOf($0, start: record.runStart) } }
    }

    /// How Sentry files the run `record` crashed in: the run's own release, environment and dist
    /// from its marker (they may differ from this run's); and its session, crashed, from the
    /// marker's start (else the record's uptime) to the crash. A record of a run the ledger does
    /// not know is filed with this run's facts, its own release kept when its version differs.
    func runOf(_ record: CrashRecord, start: RunStart?) -> SentryRecordRun {
        var facts = self.facts
        let ownRelease = record.appName.map { "\($0)@\(record.appVersion ?? "unknown")" }
        if let start {
            facts.release = start.release ?? ownRelease
            facts.environment = start.environment ?? facts.environment
            facts.dist = start.dist
        } else if record.appVersion != appVersion {
            facts.release = ownRelease ?? facts.release
            facts.dist = nil
        }
        // The machine and container it crashed in: this one (the next launch and the uploader run
        // where the crash happened), where the policy lets the host's details leave.
        if data.hostDetails { facts.host = Self.hostContext }
        // A hang or a snapshot ends no run: no session goes with it (its run's session is sent
        // when the run ends, as for any run).
        guard sessions, record.kind == .crash, let process = record.process else { return SentryRecordRun(facts: facts, session: nil) }
        let crashMilliseconds = process.crashWallNanoseconds / 1_000_000
        let uptime = process.uptime.components
        let uptimeMilliseconds = uptime.seconds * 1000 + uptime.attoseconds / 1_000_000_000_000_000
        let started = start?.startWallMilliseconds ?? (crashMilliseconds - uptimeMilliseconds)
        let session = SentrySession(runID: record.runID ?? start?.runID ?? "", installation: installationID(), startedMilliseconds: started,
                                    endedMilliseconds: crashMilliseconds, durationSeconds: Double(crashMilliseconds - started) / 1000,
                                    status: .crashed, facts: facts)
        return SentryRecordRun(facts: facts, session: record.runID == nil ? nil : session)
    }

    /// This host's memory, container and pod, read once per process (on first use: the launch thread).
    static let hostContext = HostContext.current()

    /// This installation's id (made once, beside the records), read once per process.
    func installationID() -> String? {
        installation.withLock { cached in
            if let cached { return cached }
            let id = recordDirectory.flatMap { Installation.id(recordDirectory: $0) }
            cached = .some(id)
            return id
        }
    }

    /// Where session envelopes wait to be sent.
    var sessionsDirectory: String? { recordDirectory.map { $0 + "/sessions" } }

    /// Sessions left by an earlier launch (not sent before it ended) are queued again.
    package func prepareLaunch() -> String? {
        // Held back after a failed send (SentrySessionsHold): they wait in their files, unlisted.
        if let recordDirectory, SentrySessionsHold.until(recordDirectory, now: Self.nowMilliseconds()) != nil { return nil }
        guard let directory = sessionsDirectory, let names = try? RecordFileName.names(in: directory, including: { $0.hasSuffix(".envelope") })
        else { return nil }
        // Woken at the end of the launch, with this launch's ended runs queued too: one envelope.
        if !names.isEmpty { queueSessions(names.map { directory + "/" + $0 }, wake: false) }
        return nil
    }

    /// The launch is over: the sessions queued (left by earlier launches, or of the runs it
    /// learned had ended) go now when they are due; otherwise when ``sendSessionsIfDue()`` finds
    /// them due (the reporter asks every 2 s while the run lives), or at ``shutdown(deadline:)``.
    /// No thread is started for sessions that are not due: a short program never pays for one.
    package func finishLaunch() {
        sendSessionsIfDue()
    }

    /// The run's watch ticks (every 2 s): the sessions that came due are sent.
    package func runTick() { sendSessionsIfDue() }

    /// Starts sending the waiting sessions when they are due (``SessionBatching``).
    package func sendSessionsIfDue() {
        if runEnded.load(ordering: .acquiring) { return }
        if sessionsDueIn() == .zero { sender.wake() }
    }

    /// Each run that exited or was killed becomes a session (`exited`, `abnormal`), written to
    /// `<records>/sessions/<run id>.envelope` and sent from there; a crashed run's session went
    /// with its crash. A run that began before Relay's window is still one session, its start
    /// moved into the window (SentrySession.window); one that ended before the window is counted
    /// instead (Relay would drop it). Returns false when a session could not be written: the
    /// runs are told again.
    package func takeRuns(_ runs: [EndedRun]) -> Bool {
        guard sessions, let directory = sessionsDirectory else { return true }
        let now = Clock.wallMilliseconds()
        let oldest = now - SentrySession.windowMilliseconds
        var written: [String] = []
        var endedAt: [String: Int64] = [:]   // each file's date, known: queued without a stat
        var tooOld: [String] = []
        for run in runs {
            let status: SentrySession.Status
            var ended = now
            var duration: Double?
            switch run.end {
            case .crashed: continue
            case .exited(let wall, let nanoseconds):
                status = .exited
                ended = wall
                duration = Double(nanoseconds) / 1e9
            case .killed:
                // Ended between its last sighting and 2 s later: the sighting is its end and duration.
                status = .abnormal
                if let seen = run.lastSeen {
                    ended = seen.wallMilliseconds
                    duration = Double(seen.durationNanoseconds) / 1e9
                }
            }
            guard ended >= oldest else {
                tooOld.append(run.runID)
                continue
            }
            var facts = self.facts
            facts.release = run.start.release ?? "\(run.appName)@\(run.appVersion)"
            facts.environment = run.start.environment ?? facts.environment
            guard let session = SentrySession(runID: run.runID, installation: installationID(),
                                              startedMilliseconds: run.startWallMilliseconds, endedMilliseconds: ended,
                                              durationSeconds: duration, status: status, facts: facts, now: now) else { continue }
            let path = directory + "/" + run.runID + ".envelope"
            guard (try? Directory.create(directory)) != nil,
                  SmallFile.replace(path, with: SentryEnvelope.sessions([session], sentAt: nil)) else { return false }
            // Dated when the run ended: its wait for a batch is counted from then (SessionBatching),
            // so that a tool run every few days sends each run's session at the next launch,
            // well inside Relay's window.
            let end = timespec(tv_sec: Int(ended / 1000), tv_nsec: Int(ended % 1000) * 1_000_000)
            var times = [end, end]
            _ = utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
            written.append(path)
            endedAt[path] = ended
        }
        if !tooOld.isEmpty { sender.update { $0.sessionsTooOld += tooOld } }
        if !written.isEmpty { queueSessions(written, wake: false, written: endedAt) }
        return true
    }

    private func queueSessions(_ paths: [String], wake: Bool = true, written known: [String: Int64] = [:]) {
        var written = known
        for path in paths where written[path] == nil {
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            written[path] = Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000
        }
        lock.withLock { _ in
            var queued = Set(sessionFiles)
            for path in paths where queued.insert(path).inserted { sessionFiles.append(path) }
            sessionWritten.merge(written) { old, _ in old }
        }
        if wake { sender.wake() }
    }

    /// How long until the waiting sessions are due (``SessionBatching``): zero when they are,
    /// nil when none waits.
    private func sessionsDueIn() -> Duration? {
        let (waiting, oldest) = lock.withLock { _ in (!sessionFiles.isEmpty, sessionFiles.compactMap { sessionWritten[$0] }.min()) }
        guard waiting else { return nil }
        let lived = ContinuousClock.now - made
        var due = sessionBatching.processAge - lived
        if let oldest {
            let age = Duration.milliseconds(Self.nowMilliseconds() - oldest)
            due = min(due, sessionBatching.batchAge - age)
        }
        return max(due, .zero)
    }

    /// Sends until nothing is queued or `deadline` passes, then stops: a request in flight at
    /// the deadline is cancelled and its record sent again next launch (a session, from its file).
    /// Returns whether everything queued was sent (or given up).
    @discardableResult
    package func shutdown(deadline: SuspendingClock.Instant) -> Bool {
        runEnded.store(true, ordering: .releasing)
        // Sessions not yet due are not waited for: they stay in their files (SessionBatching).
        let done = { self.sessionsDueIn().map { $0 > .zero } ?? true }
        if !done() { sender.wake() }   // due, and queued by a launch that did not finish (a sink used alone)
        // Nothing was ever queued (no sender made): nothing to wait for, nothing to make now.
        guard senderCell.isMade else { return true }
        return sender.finish(deadline: deadline, alsoDone: done)
    }

    /// Now, in ms since the epoch (what the rate limits are kept in).
    static func nowMilliseconds() -> Int64 { Clock.wallMilliseconds() }

    /// The rate limits and discards kept beside the records, read on the worker's first step.
    private func loadPersisted() {
        guard !persistedLoaded else { return }
        persistedLoaded = true
        guard let recordDirectory else { return }
        limits = SentryRateLimits.load(recordDirectory, now: Self.nowMilliseconds())
        discards.merge(SentryDiscards.load(recordDirectory))
    }

    private func saveDiscards() {
        if let recordDirectory { discards.save(recordDirectory) }
    }

    /// Takes in what an answer says of rate limits, kept for later launches when it changed them.
    private func noteLimits(_ answer: HTTPExchange.Answer) {
        if limits.update(header: answer.headers["x-sentry-rate-limits"], retryAfter: answer.retryAfter, status: answer.status,
                         now: Self.nowMilliseconds()), let recordDirectory {
            limits.save(recordDirectory)
        }
    }

    /// `body` and, when something was not sent, a client report saying so; the report it carries.
    private func withClientReport(_ body: [UInt8]) -> ([UInt8], SentryDiscards) {
        guard !discards.isEmpty else { return (body, SentryDiscards()) }
        return (body + SentryEnvelope.clientReportItem(discards.payload(timestamp: Self.nowMilliseconds())), discards)
    }

    private func step() -> UploadWorker.Step {
        loadPersisted()
        let now = Self.nowMilliseconds()
        // Records first (unless Sentry holds back errors), then the sessions of runs that ended without a crash.
        guard let head = sender.head else { return sessionStep() }
        if let refused = sender.configurationError {
            sender.keep(head, reason: refused)
            return .sent
        }
        if let wait = limits.wait(for: .error, now: now) {
            let sessions = lock.withLock { _ in !sessionFiles.isEmpty }
            return sessions && limits.wait(for: .session, now: now) == nil ? sessionStep() : .pause(wait)
        }
        var run = head.extra
        if run?.session != nil, limits.wait(for: .session, now: now) != nil {
            // Sessions held back and the crash not: the crash goes, its session is counted as discarded.
            run?.session = nil
            discards.add(.rateLimitBackoff, .session)
            saveDiscards()
        }
        var body: [UInt8]
        switch head.record.record {
        case .success(let record):
            switch makeEnvelope(record, head.record.bytes, head.record.name, Clock.wallNanoseconds(), head.record.tally.repetition(forSink: id.rawValue), run) {
            case .success(let bytes):
                body = bytes
            case .failure(.dropped):
                // The app chose not to send the event: Sentry has all it will get of it. The run
                // still crashed: its session goes alone, as Sentry's SDKs end it.
                discards.add(.beforeSend, .error)
                saveDiscards()
                if let session = run?.session, let directory = sessionsDirectory, (try? Directory.create(directory)) != nil {
                    // Named by the run id only when it can name a file (the record is untrusted).
                    let name = record.runID.flatMap { RunStart.isValidRunID($0) ? $0 : nil } ?? head.record.name
                    let path = directory + "/" + name + ".envelope"
                    if SmallFile.replace(path, with: SentryEnvelope.sessions([session], sentAt: nil)) { queueSessions([path]) }
                }
                sender.settle(head) { $0.dropped.append(head.record.name) }
                return .sent
            case .failure(let refusal):
                giveUp(head, reason: refusal.description)
                return .sent
            }
        case .failure(let error):
            // A crash whose record cannot be read still happened: an event that says so.
            let crashTime = RecordFileName(head.record.name).map { $0.milliseconds &* 1_000_000 }
            // Its bytes attached as the policy says: they may hold anything a record holds.
            let attached = data.redaction.keepsEverything ? head.record.bytes : data.redaction.apply(to: head.record.bytes)
            body = SentryEnvelope.unreadableRecord(fileName: head.record.name, rawRecord: attached,
                                                   reason: "\(error)", crashTime: crashTime, sentAt: Clock.wallNanoseconds())
        }
        guard let url = dsn.envelopeURL else {
            let why = "not a URL: \(dsn.envelopeAddress)"
            sender.refuseForThisLaunch(why, advice: "check the DSN (SENTRY_DSN)", kept: sessionsToo)
            sender.keep(head, reason: why)
            return .sent
        }
        // The sessions waiting, due or not, ride with the crash (no request of their own): a
        // crashed session never reaches Sentry ahead of the runs that ended before it, which
        // would make the crash-free rate dip until their batch went. Not after such an envelope
        // was refused whole: the crash then goes alone.
        let mayRide = lock.withLock { _ in sessionsMayRide } && limits.wait(for: .session, now: now) == nil
        let riding: (batch: [(path: String, lease: RecordLease)], payloads: [[UInt8]]) = mayRide
            ? leaseWaitingSessions(lock.withLock { _ in Array(sessionFiles.prefix(sessionBatching.maxSessions - 1)) })
            : ([], [])
        defer { riding.batch.forEach { $0.lease.release() } }
        body += SentryEnvelope.sessionItems(payloads: riding.payloads)
        switch post(body, url: url, category: .error) {
        case .accepted:
            let rode = riding.batch.map(\.path)
            rode.forEach { unlink($0) }
            if !rode.isEmpty, let recordDirectory { SentrySessionsHold.lift(recordDirectory) }
            dequeueSessions(rode) { $0.sessionsSent += rode.map(Self.runOf) }
            settle(head) { report in
                report.sent.append(head.record.name)
                if let runID = run?.session.flatMap({ _ in (try? head.record.record.get())?.runID }) { report.sessionsSent.append(runID) }
            }
            return .sent
        case .refused where !riding.batch.isEmpty:
            lock.withLock { _ in sessionsMayRide = false }
            return .sent
        case .stopped:
            return .stopped
        case .retry(let after):
            return .failed(retryAfter: after)
        case .serverError(let why, let after):
            return sender.serverError(head, why, retryAfter: after)
        case .refused(let why):
            giveUp(head, reason: why)
            return .sent
        case .kept(let why):
            sender.keep(head, reason: why)
            return .sent
        }
    }

    /// What Sentry did with an envelope.
    private enum Posted {
        case accepted
        /// Cancelled (the deadline, the worker stopping): sent again later.
        case stopped
        /// Not now (the network, 408, 429): after that long, or the backoff.
        case retry(after: Duration?)
        case serverError(String, retryAfter: Duration?)
        /// For good, for its content (400, 413, 415, 422): sending it again cannot help.
        case refused(String)
        /// About the configuration (401, 403, 404…): kept, and nothing more sent this launch.
        case kept(String)
    }

    /// POSTs one envelope (of `category`'s data) with the client report of what was not sent, and
    /// takes in what the answer says: its rate limits, the report Sentry now has, the last error.
    private func post(_ envelope: [UInt8], url: HTTPExchange.Address, category: SentryCategory) -> Posted {
        let (body, reported) = withClientReport(envelope)
        let request = HTTPExchange.Request(url: url, method: .post,
                                           headers: [("Content-Type", "application/x-sentry-envelope"), ("X-Sentry-Auth", dsn.authHeader)],
                                           body: body, timeout: sender.worker.policy.requestTimeout)
        let answer = HTTPExchange.send(request, cancellation: sender.worker.cancellation)
        // A 2xx may announce a limit for what follows; a 429 says how long to hold back what.
        noteLimits(answer)
        switch DeliveryRule.verdict(status: answer.status) {
        case .delivered:
            if !reported.isEmpty {
                discards.subtract(reported)
                saveDiscards()
            }
            return .accepted
        case .retry where answer.status == 429:
            note("HTTP 429 \(answer.text)")
            return .retry(after: limits.wait(for: category, now: Self.nowMilliseconds()) ?? answer.retryAfter ?? .seconds(60))
        case .retry where answer.status == 0:
            if answer.failure == .stopped || answer.failure == .cancelled { return .stopped }
            note(answer.text)
            return .retry(after: nil)
        case .retry:
            note("HTTP \(answer.status) \(answer.text)")
            return .retry(after: nil)
        case .serverError:
            note("HTTP \(answer.status) \(answer.text)")
            return .serverError("HTTP \(answer.status) \(answer.text)", retryAfter: answer.retryAfter)
        case .refused:
            return .refused("HTTP \(answer.status): \(answer.text)")
        case .kept:
            let why = "HTTP \(answer.status) from \(dsn.envelopeAddress): \(answer.text.prefix(300))"
            sender.refuseForThisLaunch(why, advice: DeliveryRule.advice(status: answer.status, what: "the DSN (SENTRY_DSN)"), kept: sessionsToo)
            return .kept(why)
        }
    }

    /// What an answer about the configuration keeps besides the records.
    private let sessionsToo = "Crash records and sessions are"

    /// Sends the first waiting session envelope while holding its file's lease (another process
    /// holding it sends it); deleted once Sentry has it, or refused for good (a 4xx).
    /// Leases the waiting session files at `paths` (one only when `singly`) and reads their
    /// sessions, as untrusted files: one leased or gone is another process's (left to it), one
    /// that is no session envelope of ours (unreadable, over 64 KiB, a link, other items) is
    /// deleted unsent. The caller releases the leases.
    private func leaseWaitingSessions(_ paths: [String], singly: Bool = false) -> (batch: [(path: String, lease: RecordLease)], payloads: [[UInt8]]) {
        let maxBytes = 64 * 1024   // a session envelope is a few hundred bytes
        var batch: [(path: String, lease: RecordLease)] = []
        var payloads: [[UInt8]] = []
        for path in paths where !(singly && !batch.isEmpty) {
            guard let lease = RecordLease(path: path) else {
                dequeueSessions([path])
                continue
            }
            guard let (bytes, _) = SmallFile.read(path, limit: maxBytes + 1, followLinks: false), bytes.count <= maxBytes,
                  let items = SentryEnvelope.sessionPayloads(of: bytes) else {
                unlink(path)
                lease.release()
                dequeueSessions([path]) { $0.quarantined["sessions/" + Self.runOf(path)] = "not a session envelope (unreadable, over 64 KiB, or with other items)" }
                continue
            }
            batch.append((path, lease))
            payloads += items
        }
        return (batch, payloads)
    }

    /// The run a session file is named for.
    private static func runOf(_ path: String) -> String { String(path.split(separator: "/").last ?? "").replacingSuffix(".envelope") }

    /// Takes session files off the queue (sent, given up, left to another process), with what
    /// the report says of them.
    private func dequeueSessions(_ done: [String], _ update: (inout Report) -> Void = { _ in }) {
        lock.withLock { _ in
            sessionFiles.removeAll { done.contains($0) }
            done.forEach { sessionWritten[$0] = nil }
        }
        sender.update { report in
            update(&report)
            report.lastError = nil
        }
    }

    /// The sessions waiting, when they are due: up to ``SessionBatching/maxSessions`` runs in one
    /// envelope, each file leased while it is sent (another process sending it is left to it) and
    /// read as untrusted (a link is never followed; a file that is not a session envelope of ours
    /// is deleted unsent). Not due: a pause until they are, or, while `shutdown` waits, nothing.
    private func sessionStep() -> UploadWorker.Step {
        guard let dueIn = sessionsDueIn() else { return .idle }
        if dueIn > .zero { return sender.worker.isFinishing ? .idle : .pause(dueIn) }
        let (paths, singly) = lock.withLock { _ in (Array(sessionFiles.prefix(sessionBatching.maxSessions)), sessionsSingly) }
        let runOf = Self.runOf, dequeue = dequeueSessions
        if let refused = sender.configurationError {
            // In their files for a later launch.
            dequeue(paths) { report in for path in paths { report.kept["sessions/" + runOf(path)] = refused } }
            return .sent
        }
        // Held back by Sentry, or after a send that failed: waits (in its file, for a later launch if need be).
        let now = Self.nowMilliseconds()
        if let wait = limits.wait(for: .session, now: now) { return .pause(wait) }
        if let recordDirectory, let until = SentrySessionsHold.until(recordDirectory, now: now) { return .pause(.milliseconds(until - now)) }
        let (batch, payloads) = leaseWaitingSessions(paths, singly: singly)
        defer { batch.forEach { $0.lease.release() } }
        let sending = batch.map(\.path)
        guard !sending.isEmpty, let url = dsn.envelopeURL else { return .sent }
        switch post(SentryEnvelope.sessions(payloads: payloads, sentAt: nil), url: url, category: .session) {
        case .accepted:
            sending.forEach { unlink($0) }
            lock.withLock { _ in sessionsSingly = false }
            dequeue(sending) { $0.sessionsSent += sending.map(runOf) }
            if let recordDirectory { SentrySessionsHold.lift(recordDirectory) }
            return .sent
        case .stopped:
            return .stopped
        case .retry(let after), .serverError(_, let after):
            if let recordDirectory { SentrySessionsHold.hold(recordDirectory, now: Self.nowMilliseconds(), retryAfter: after) }
            return .failed(retryAfter: after)
        case .refused(let why):
            // One bad session must not lose the others: a batch refused whole is sent again one
            // at a time, and only a session refused alone is given up.
            if sending.count > 1 {
                lock.withLock { _ in sessionsSingly = true }
                return .sent
            }
            sending.forEach { unlink($0) }
            dequeue(sending) { report in for path in sending { report.quarantined["sessions/" + runOf(path)] = why } }
            return .sent
        case .kept(let why):
            if let recordDirectory { SentrySessionsHold.hold(recordDirectory, now: Self.nowMilliseconds(), retryAfter: nil) }
            dequeue(sending) { report in for path in sending { report.kept["sessions/" + runOf(path)] = why } }
            return .sent
        }
    }

    private func note(_ error: String) { sender.note(error) }

    private func giveUp(_ taken: Taken, reason: String) {
        discards.add(.sendError, .error)
        saveDiscards()
        settle(taken) { $0.quarantined[taken.record.name] = reason }
    }

    /// Sentry has the record (or never will): settled (LeasedSender). The crashes folded into it
    /// when the directory was over its bounds had no event of their own: Sentry learns of them as
    /// discarded (its own event says how many it stands for).
    private func settle(_ taken: Taken, _ update: (inout Report) -> Void) {
        let folded = taken.record.tally.repetition(forSink: id.rawValue).crashes - 1
        if folded > 0 {
            discards.add(.queueOverflow, .error, folded)
            saveDiscards()
        }
        sender.settle(taken, update)
    }
}

extension String {
    /// The string without `suffix` at its end, when it has it.
    fileprivate func replacingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
