// UploadWorker.swift — the one sending thread: when to send, how long to back off, when to stop.
//
// Both senders (the `/sa` event uploader and the Sentry sink) are an `UploadWorker` running their
// own `step`: one request and what the answer does to their data. The worker owns everything
// around it — the thread, the wake-ups (asked for, or every `flushInterval`), the exponential
// backoff after failures (at least a server's Retry-After or rate limit), flushes with a
// deadline, and the stop (a request in flight at the deadline is cancelled; its data stays for
// the next launch). One clock: `SuspendingClock`, which is CLOCK_MONOTONIC on Linux: the clock
// the handler and `$event_duration` measure on, never the wall clock.

/// How an uploader sends and retries: the events to `/sa`, the records to Sentry and OTLP.
public struct UploadPolicy: Sendable, Equatable {
    /// Most events per `/sa` request (the record sinks send one record per request).
    package var batchSize = 50
    /// Send as soon as this many events wait (`/sa`).
    package var flushThreshold = 100
    /// Send at least this often while events wait (`/sa`).
    package var flushInterval: Duration = .seconds(15)
    /// Without a byte moving for this long, a request counts as failed.
    public var requestTimeout: Duration = .seconds(30)
    /// The first retry delay; it doubles with each failure in a row.
    public var initialRetryDelay: Duration = .seconds(1)
    /// The longest retry delay, also the cap on what a server's Retry-After or rate limit asks for.
    public var maxRetryDelay: Duration = .seconds(300)
    /// 5xx answers in a row for the same batch or record before it is split or given up.
    public var maxServerErrorAttempts = 8
    /// The defaults: 30 s per request, retries from 1 s doubling to 300 s, 8 server errors in a row.
    public init() {}
}

/// A sending thread running one sender's `step` (see the file comment).
// @unchecked: every mutable field is guarded by `cond`, except `failures` (worker thread only).
package final class UploadWorker: @unchecked Sendable {
    /// What one step did.
    package enum Step: Sendable, Equatable {
        /// Nothing waits to be sent: a flush is complete.
        case idle
        /// Sent (or settled) something; the next step follows at once.
        case sent
        /// A failure that will be retried: wait the backoff, at least `retryAfter`.
        case failed(retryAfter: Duration?)
        /// Not a failure, but wait before the next step (a rate limit announced on a success,
        /// another process sending meanwhile).
        case pause(Duration)
        /// The step saw the worker stopping (its request was cancelled).
        case stopped
    }

    package let policy: UploadPolicy
    /// Set at the stop deadline: stops the request in flight and every later one.
    package let cancellation = HTTPExchange.Cancellation()
    private let name: String
    private let interval: Duration?
    private let clock = SuspendingClock()
    private let cond = ConditionLock()
    // Guarded by `cond`.
    private var wakeRequested = false
    private var flushRequested = 0
    private var flushCompleted = 0
    private var resumeAt: SuspendingClock.Instant
    /// `resumeAt` is a step's `.pause` (waiting for something to be due), not a failure's
    /// backoff: `finish` ends it, so that the step says at once what must still go.
    private var pausing = false
    private var nextTimer: SuspendingClock.Instant
    private var stopping = false
    private var stopDeadline = SuspendingClock.Instant.now.advanced(by: .seconds(1e9))
    private var started = false
    private var finished = false
    // The worker thread only.
    private var failures = 0

    /// - Parameters:
    ///   - name: the thread's name.
    ///   - timer: wake up this often even unasked (`nil`: only when asked).
    package init(name: String, policy: UploadPolicy, timer: Duration?) {
        self.name = name
        self.policy = policy
        interval = timer
        resumeAt = clock.now
        nextTimer = clock.now.advanced(by: timer ?? .seconds(1e9))
    }

    /// Starts the thread; it runs `step` whenever there may be something to send.
    package func start(_ step: @escaping @Sendable () -> Step) {
        cond.withLock { started = true }
        OSThread.start(name: name) { [self] in loop(step) }
    }

    /// Something waits to be sent: step soon (after any backoff).
    package func wake() {
        cond.withLock {
            wakeRequested = true
            cond.broadcast()
        }
    }

    /// Failures in a row so far (the worker thread's view; for the sender's own bookkeeping).
    package var consecutiveFailures: Int { failures }

    /// Whether the stop deadline has passed (a sender checks between requests).
    package var isStopping: Bool { cond.withLock { stopping && clock.now >= stopDeadline } }

    /// Whether `finish` was called: the worker sends what must go before the deadline, then stops.
    package var isFinishing: Bool { cond.withLock { stopping } }

    /// Steps until one says `.idle` or `deadline` passes. Returns whether it got to `.idle`.
    package func flush(deadline: SuspendingClock.Instant) -> Bool {
        cond.lock()
        defer { cond.unlock() }
        guard started else { return false }
        flushRequested += 1
        let ticket = flushRequested
        cond.broadcast()
        while flushCompleted < ticket && !finished {
            if clock.now >= deadline { return false }
            cond.wait(until: deadline)
        }
        return flushCompleted >= ticket
    }

    /// Flushes until `deadline`, then stops the thread: a request in flight is cancelled (its
    /// data stays), and a backoff that would end after the deadline stops it at once. Returns
    /// whether everything was sent.
    @discardableResult
    package func finish(deadline: SuspendingClock.Instant) -> Bool {
        cond.withLock {
            stopping = true
            stopDeadline = deadline
            if pausing { resumeAt = clock.now }
            cond.broadcast()
        }
        let drained = flush(deadline: deadline)
        cond.lock()
        stopDeadline = clock.now
        cancellation.cancel()
        cond.broadcast()
        // The thread notices within one request's cancellation (about a second).
        let grace = clock.now.advanced(by: .seconds(3))
        while started && !finished && clock.now < grace { cond.wait(until: grace) }
        cond.unlock()
        return drained
    }

    private func loop(_ step: @Sendable () -> Step) {
        while true {
            cond.lock()
            while true {
                let now = clock.now
                // Stopped: at the deadline, or when the backoff would outlive it.
                if stopping && (now >= stopDeadline || resumeAt > stopDeadline) {
                    finished = true
                    cond.broadcast()
                    cond.unlock()
                    return
                }
                let due = wakeRequested || now >= nextTimer || flushRequested > flushCompleted
                if due && now >= resumeAt { break }
                var until = now >= resumeAt ? nextTimer : resumeAt
                if stopping { until = min(until, stopDeadline) }
                cond.wait(until: max(until, now.advanced(by: .milliseconds(1))))
            }
            wakeRequested = false
            let ticket = flushRequested
            if let interval { nextTimer = clock.now.advanced(by: interval) }
            cond.unlock()

            var settled: Step = .stopped
            stepping: while !isStopping {
                let result = step()
                switch result {
                case .sent:
                    failures = 0
                    continue stepping
                case .failed(let retryAfter):
                    failures += 1
                    let delay = HTTPExchange.backoff(failures: failures, initial: policy.initialRetryDelay,
                                                     maximum: policy.maxRetryDelay, retryAfter: retryAfter)
                    cond.withLock {
                        resumeAt = clock.now.advanced(by: delay)
                        pausing = false
                    }
                case .pause(let delay):
                    cond.withLock {
                        resumeAt = clock.now.advanced(by: min(delay, policy.maxRetryDelay))
                        pausing = true
                        wakeRequested = true   // the next step follows the pause
                    }
                case .idle, .stopped:
                    break
                }
                settled = result
                break stepping
            }
            cond.withLock {
                if settled == .idle { flushCompleted = max(flushCompleted, ticket) }
                cond.broadcast()
            }
        }
    }
}
