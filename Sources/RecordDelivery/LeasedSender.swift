// LeasedSender.swift — the records a sending sink has taken, sent one at a time on a thread of its
// own, each while this process holds its lease: the one queue the Sentry and OTLP sinks share.
//
// A sink hands its records here from `take` (the launch thread) and sends them from its `step`
// (the UploadWorker thread, started with the first record: a launch with nothing to send starts
// none). A record is queued only while this process holds its lease (SinkLease: several processes
// over one record directory send each record once); another process holding it is sending it
// (`.later`). The head of the queue leaves it one of two ways:
//   settle — the backend has it (or never will, for its content: DeliveryRule's `refused`): the
//            record is acknowledged to the inbox, which deletes the file once every sink has it;
//   keep   — not sent, and not again this launch (an answer about the configuration, or
//            `maxServerErrorAttempts` 5xx in a row): the record stays for a later launch.
// An answer about the configuration is said once on stderr, and every later record is kept
// without a request. Log lines name their source as the product users know, `CrashReporter`
// (swift-log would name this module). What is queued at the deadline (`finish`) loses its lease and is sent by a
// later launch.
import Logging
package import HTTPExchange
import Synchronization

/// What every sending sink's report says beyond what it sent.
package protocol SenderReport: Sendable {
    init()
    /// Records kept for a later launch, with why.
    var kept: [String: String] { get set }
    /// An answer about the configuration this launch: nothing more was sent after it.
    var configurationError: String? { get set }
    /// Records another process of the app was sending (left to it).
    var leftToOthers: [String] { get set }
    /// The last failure (retried, or a record kept), if any.
    var lastError: String? { get set }
}

/// A sending sink's queue of leased records and its worker thread (see the file comment).
// @unchecked: `queue`, `report` and `step` are guarded by `lock`; `serverErrors` is the worker thread's.
package final class LeasedSender<Extra: Sendable, Report: SenderReport>: @unchecked Sendable {
    /// A record taken from the inbox, sent while its lease is held, with what the sink made of
    /// it when it took it.
    package struct Taken: Sendable {
        package var record: InboxRecord
        package var receipt: SinkReceipt
        package var lease: SinkLease
        package var extra: Extra
    }

    package let worker: UploadWorker
    /// How the backend is named on stderr ("Sentry", "OTLP").
    private let backend: String
    private let logger: Logger
    private let lock = Mutex(())
    // Guarded by `lock`.
    private var queue: [Taken] = []
    private var report = Report()
    private var step: (@Sendable () -> UploadWorker.Step)?
    private var started = false
    // The worker thread only: 5xx answers in a row for the record at the head of the queue.
    private var serverErrors = 0

    /// - Parameters:
    ///   - name: the worker thread's name and the logger's label.
    ///   - backend: the backend's name in log lines.
    package init(name: String, backend: String, policy: UploadPolicy) {
        self.backend = backend
        logger = Logger(label: name)
        worker = UploadWorker(name: name, policy: policy, timer: nil)
    }

    /// The sink's step, run by the worker (set once, before the first record).
    package func sends(with step: @escaping @Sendable () -> UploadWorker.Step) {
        lock.withLock { _ in self.step = step }
    }

    /// Queues `record` while this process holds its lease; `.later` when another process holds
    /// it (it is sending it); `.delivered` when another process delivered it since the inbox
    /// listed it. `extra` is made only for a record that is queued.
    package func take(_ record: InboxRecord, receipt: SinkReceipt, extra: () -> Extra) -> SinkResult {
        // Held from here until the record is settled or kept, across retries. A sender that dies
        // lets go with its last fd.
        guard let lease = SinkLease(path: record.path) else {
            update { $0.leftToOthers.append(record.name) }
            return .later(reason: "another process is sending it")
        }
        if receipt.isAcknowledged {
            lease.release()
            return .delivered
        }
        let taken = Taken(record: record, receipt: receipt, lease: lease, extra: extra())
        lock.withLock { _ in queue.append(taken) }
        wake()
        return .accepted
    }

    /// Starts the worker if it is not running, and has it look at the queue again.
    package func wake() {
        let start: (@Sendable () -> UploadWorker.Step)? = lock.withLock { _ in
            guard !started, let step else { return nil }
            started = true
            return step
        }
        if let start { worker.start(start) }
        worker.wake()
    }

    /// The record to send next.
    package var head: Taken? { lock.withLock { _ in queue.first } }

    /// Whether nothing is queued.
    package var isEmpty: Bool { lock.withLock { _ in queue.isEmpty } }

    /// What was sent and given up so far.
    package var currentReport: Report { lock.withLock { _ in report } }

    /// Changes the report.
    package func update(_ change: (inout Report) -> Void) {
        lock.withLock { _ in change(&report) }
    }

    /// The answer about the configuration this launch had, if any: every record is kept after it.
    package var configurationError: String? { lock.withLock { _ in report.configurationError } }

    /// A failure that will be retried.
    package func note(_ error: String) { update { $0.lastError = error } }

    /// The backend has `taken` (or never will): acknowledged to the inbox, in the report, unleased.
    package func settle(_ taken: Taken, _ change: (inout Report) -> Void) {
        serverErrors = 0
        taken.receipt.acknowledge()
        taken.lease.release()
        lock.withLock { _ in
            if queue.first?.record.name == taken.record.name { queue.removeFirst() }
            change(&report)
            report.lastError = nil
        }
    }

    /// Not sent, and not again this launch: the record stays (unacknowledged) for a later one.
    package func keep(_ taken: Taken, reason: String) {
        serverErrors = 0
        taken.lease.release()
        lock.withLock { _ in
            if queue.first?.record.name == taken.record.name { queue.removeFirst() }
            report.kept[taken.record.name] = reason
            report.lastError = reason
        }
    }

    /// A 5xx for `taken`: retried after the backoff (at least `retryAfter`), until
    /// `maxServerErrorAttempts` in a row keep it for a later launch (availability, not the
    /// record: DeliveryRule).
    package func serverError(_ taken: Taken, _ why: String, retryAfter: Duration?) -> UploadWorker.Step {
        serverErrors += 1
        guard serverErrors >= worker.policy.maxServerErrorAttempts else {
            note(why)
            return .failed(retryAfter: retryAfter)
        }
        let reason = "\(serverErrors) server errors in a row: \(why)"
        logger.warning("\(backend): \(taken.record.name): \(reason) (kept for the next launch)", source: "CrashReporter")
        keep(taken, reason: reason)
        return .sent
    }

    /// The backend answered about the configuration, not a record (DeliveryRule's `kept`):
    /// nothing more is sent this launch, and one line says so (the first time).
    package func refuseForThisLaunch(_ why: String, advice: String, kept: String = "Crash records are") {
        let first = lock.withLock { _ in
            defer { report.configurationError = why }
            return report.configurationError == nil
        }
        if first { logger.error("\(backend): \(why); \(advice). \(kept) kept for a later launch.", source: "CrashReporter") }
    }

    /// Sends until nothing is queued (and `alsoDone` says the sink's own work is done) or
    /// `deadline` passes, then stops: a request in flight at the deadline is cancelled and its
    /// record sent again next launch. What is left keeps its file, and loses its lease. Returns
    /// whether everything queued was sent or settled.
    package func finish(deadline: SuspendingClock.Instant, alsoDone: () -> Bool = { true }) -> Bool {
        worker.finish(deadline: deadline)
        let left = lock.withLock { _ in
            defer { queue.removeAll() }
            return queue
        }
        left.forEach { $0.lease.release() }
        return left.isEmpty && alsoDone()
    }
}

/// A sink's sender, made on first use (the first record or session, on the launch thread) rather
/// than in the sink's initializer: making a generic class's metadata costs the caller of
/// `CrashReporting.start` tens of µs otherwise. Not generic itself, for the same reason.
package final class SenderCell: Sendable {
    private let cell = Mutex<AnyObject?>(nil)

    package init() {}

    /// The sender, made now by `make` if it was not yet.
    package func sender(_ make: () -> AnyObject) -> AnyObject {
        cell.withLock { made in
            if let made { return made }
            let new = make()
            made = new
            return new
        }
    }

    /// Whether it was made.
    package var isMade: Bool { cell.withLock { $0 != nil } }
}
