// Uploader.swift — one thread that sends pending events to a Sensors `/sa` endpoint, oldest first.
//
// Events leave the store only after a 2xx. One request in flight, batches of at most
// `batchSize`. Retryable failures (network errors, 5xx, 408, 429) back off exponentially with
// jitter (429 honours Retry-After); 413 halves the batch down to a single event, which is then
// quarantined; any other 4xx quarantines the batch. A batch the server answers with 5xx
// `maxServerErrorAttempts` times in a row is halved the same way, so one poison event cannot
// block the queue forever; network errors (no answer at all) retry without limit.
import Foundation
import HTTPExchange

/// When and how the uploader sends.
public struct UploadPolicy: Sendable {
    /// Most events per request.
    public var batchSize = 50
    /// Flush as soon as this many events are pending.
    public var flushThreshold = 100
    /// Flush at least this often (seconds) while events are pending.
    public var flushInterval: Double = 15
    /// Seconds before a request counts as failed.
    public var requestTimeout: Double = 30
    /// First retry delay (seconds); doubles per consecutive failure.
    public var initialRetryDelay: Double = 1
    /// Longest retry delay (seconds), also the cap on a server's Retry-After.
    public var maxRetryDelay: Double = 300
    /// 5xx answers for the same batch before it is split (and a single event quarantined).
    public var maxServerErrorAttempts = 8
    public init() {}
}

// @unchecked: its state (lease, backoff, the worker's flags) is guarded by its condition lock.
final class Uploader: @unchecked Sendable {
    enum DrainResult {
        case empty
        case retry(after: Double)
        case stopped
    }

    let store: TrackingStore
    let endpoint: URL
    let policy: UploadPolicy
    /// Cancelled by ``finish(deadline:)`` once the deadline passed: stops the request in flight.
    private let cancellation = HTTPExchange.Cancellation()
    private let cond = NSCondition()
    // Guarded by `cond`.
    private var wakeRequested = false
    private var flushRequested = 0
    private var flushCompleted = 0
    private var backoffUntil: Int64 = 0
    private var nextTimer: Int64
    private var stopping = false
    private var stopDeadline: Int64 = .max
    private var finished = false
    // Uploader thread only.
    private var batchLimit: Int
    private var consecutiveFailures = 0
    private var serverErrorsForBatch = 0
    private var holdsLease = false

    init(store: TrackingStore, endpoint: URL, policy: UploadPolicy) {
        self.store = store
        self.endpoint = endpoint
        self.policy = policy
        batchLimit = max(1, policy.batchSize)
        nextTimer = Clock.monotonicNanoseconds() + Int64(policy.flushInterval * 1e9)
    }

    func start() {
        let thread = Thread { [self] in loop() }
        thread.name = "CrashTracking.uploader"
        thread.start()
    }

    /// The writer committed; `pending` events wait in the store.
    func noteCommitted(pending: Int) {
        guard pending >= policy.flushThreshold else { return }
        cond.withLock {
            wakeRequested = true
            cond.broadcast()
        }
    }

    /// Drains the store; `true` when it was empty at some point before `deadline` (monotonic ns).
    func flush(deadline: Int64) -> Bool {
        cond.lock()
        defer { cond.unlock() }
        flushRequested += 1
        let ticket = flushRequested
        cond.broadcast()
        while flushCompleted < ticket && !finished {
            let now = Clock.monotonicNanoseconds()
            if now >= deadline { return false }
            _ = cond.wait(until: Date(timeIntervalSinceNow: Double(deadline - now) / 1e9))
        }
        return flushCompleted >= ticket
    }

    /// Drains until `deadline`, then stops the thread (an in-flight request is cancelled; its
    /// events stay in the store). Returns whether the store was drained.
    func finish(deadline: Int64) -> Bool {
        cond.withLock {
            stopping = true
            stopDeadline = deadline
            cond.broadcast()
        }
        let drained = flush(deadline: deadline)
        cond.lock()
        stopDeadline = 0
        cancellation.cancel()
        cond.broadcast()
        // The thread notices within one request's cancellation.
        let graceEnd = Date(timeIntervalSinceNow: 2)
        while !finished { if !cond.wait(until: graceEnd) { break } }
        cond.unlock()
        return drained
    }

    private func loop() {
        while true {
            cond.lock()
            var ticket = 0
            while true {
                let now = Clock.monotonicNanoseconds()
                if stopping && now >= stopDeadline {
                    finished = true
                    cond.broadcast()
                    cond.unlock()
                    releaseLease()
                    return
                }
                let due = wakeRequested || now >= nextTimer || flushRequested > flushCompleted
                if due && now >= backoffUntil { break }
                var until = now >= backoffUntil ? nextTimer : backoffUntil
                if stopping { until = min(until, stopDeadline) }
                _ = cond.wait(until: Date(timeIntervalSinceNow: max(0.001, Double(until - now) / 1e9)))
            }
            wakeRequested = false
            ticket = flushRequested
            nextTimer = Clock.monotonicNanoseconds() + Int64(policy.flushInterval * 1e9)
            cond.unlock()

            let result = drain()
            cond.lock()
            switch result {
            case .empty:
                flushCompleted = max(flushCompleted, ticket)
            case .retry(let seconds):
                backoffUntil = Clock.monotonicNanoseconds() + Int64(seconds * 1e9)
            case .stopped:
                break
            }
            cond.broadcast()
            cond.unlock()
        }
    }

    private var shouldStop: Bool {
        cond.withLock { stopping && Clock.monotonicNanoseconds() >= stopDeadline }
    }

    private func releaseLease() {
        if holdsLease { try? store.releaseUploadLease() }
        holdsLease = false
    }

    private func drain() -> DrainResult {
        while true {
            if shouldStop { return .stopped }
            do {
                guard try store.acquireUploadLease() else {
                    // Another live process sharing this store is uploading; it will send our events too.
                    return .retry(after: 1)
                }
                holdsLease = true
                let batch = try store.pendingBatch(limit: batchLimit)
                if batch.isEmpty { return .empty }
                if let retry = try send(batch) { return .retry(after: retry) }
            } catch {
                try? store.recordFailure(status: 0, events: 0, error: "store: \(error)")
                return .retry(after: nextDelay(retryAfter: nil))
            }
        }
    }

    /// Sends one batch and applies the outcome to the store. Returns a retry delay, or nil to go on.
    private func send(_ batch: [StoredEvent]) throws -> Double? {
        let flushTime = Clock.wallMilliseconds()
        let body: String
        do {
            body = try SensorsWire.body(forEvents: batch.map { $0.json.addingFlushTime(flushTime) })
        } catch {
            try store.quarantine(batch, status: 0, reason: "cannot encode: \(error)")
            return nil
        }
        let (status, retryAfter, errorText) = post(body)
        switch status {
        case 200..<300:
            try store.markDelivered(batch.map(\.id), status: status)
            consecutiveFailures = 0
            serverErrorsForBatch = 0
            batchLimit = min(policy.batchSize, batchLimit * 2)
            return nil
        case 413:
            if batch.count > 1 {
                batchLimit = max(1, batch.count / 2)
            } else {
                try store.quarantine(batch, status: 413, reason: "413 Payload Too Large for a single event")
            }
            return nil
        case 0, 408, 429, 500...599:
            consecutiveFailures += 1
            if status >= 500 {
                serverErrorsForBatch += 1
                if serverErrorsForBatch >= policy.maxServerErrorAttempts {
                    serverErrorsForBatch = 0
                    if batch.count > 1 {
                        batchLimit = max(1, batch.count / 2)
                    } else {
                        try store.quarantine(batch, status: status, reason: "\(status) \(policy.maxServerErrorAttempts) times: \(errorText)")
                        return nil
                    }
                }
            }
            try store.recordFailure(status: status, events: batch.count, error: errorText)
            return nextDelay(retryAfter: status == 429 ? retryAfter : nil)
        default:
            try store.quarantine(batch, status: status, reason: "HTTP \(status): \(errorText)")
            serverErrorsForBatch = 0
            return nil
        }
    }

    /// The next retry delay (``HTTPExchange/backoff(failures:initial:maximum:retryAfter:)``).
    private func nextDelay(retryAfter: Double?) -> Double {
        HTTPExchange.backoff(failures: consecutiveFailures, initial: policy.initialRetryDelay, maximum: policy.maxRetryDelay,
                         retryAfter: retryAfter)
    }

    /// POSTs the body; returns (status or 0 for a network error, Retry-After seconds, error text).
    private func post(_ body: String) -> (Int, Double?, String) {
        let request = HTTPExchange.Request(url: endpoint, method: .post,
                                           headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                           body: Data(body.utf8), timeout: policy.requestTimeout)
        let answer = HTTPExchange.send(request, cancellation: cancellation)
        return (answer.status, answer.retryAfter, answer.text)
    }
}
