// Uploader.swift — sends pending events to a Sensors `/sa` endpoint, oldest first, on an
// UploadWorker (HTTPExchange: the thread, the backoff, the deadline, shared with the Sentry sink).
//
// Events leave the store only after a 2xx. One request in flight, batches of at most
// `batchSize`. Retryable failures (network errors, 5xx, 408, 429) back off exponentially with
// jitter (429 honours Retry-After); 413 halves the batch down to a single event, which is then
// quarantined; any other 4xx quarantines the batch. A batch the server answers with 5xx
// `maxServerErrorAttempts` times in a row is halved the same way, so one poison event cannot
// block the queue forever; network errors (no answer at all) retry without limit.
import SensorsEvents
import Foundation
import HostFacts
import HTTPExchange

// @unchecked: `batchLimit` and `serverErrorsForBatch` and `holdsLease` are touched by the worker's
// thread only (its step), the rest is immutable.
final class Uploader: @unchecked Sendable {
    let store: TrackingStore
    let endpoint: URL
    let worker: UploadWorker
    var policy: UploadPolicy { worker.policy }
    // The worker's thread only.
    private var batchLimit: Int
    private var serverErrorsForBatch = 0
    private var holdsLease = false

    init(store: TrackingStore, endpoint: URL, policy: UploadPolicy) {
        self.store = store
        self.endpoint = endpoint
        worker = UploadWorker(name: "Sensors.upload", policy: policy, timer: policy.flushInterval)
        batchLimit = max(1, policy.batchSize)
    }

    func start() { worker.start { [self] in step() } }

    /// The writer committed; `pending` events wait in the store.
    func noteCommitted(pending: Int) {
        if pending >= policy.flushThreshold { worker.wake() }
    }

    /// Drains the store; `true` when it was empty at some point before `deadline`.
    func flush(deadline: SuspendingClock.Instant) -> Bool { worker.flush(deadline: deadline) }

    /// Drains until `deadline`, then stops the thread (an in-flight request is cancelled; its
    /// events stay in the store). Returns whether the store was drained.
    func finish(deadline: SuspendingClock.Instant) -> Bool {
        let drained = worker.finish(deadline: deadline)
        if holdsLease { try? store.releaseUploadLease() }
        holdsLease = false
        return drained
    }

    /// One batch: take the upload lease, send the oldest pending events, apply the answer.
    private func step() -> UploadWorker.Step {
        do {
            guard try store.acquireUploadLease() else {
                // Another live process sharing this store is uploading; it will send our events too.
                return .pause(.seconds(1))
            }
            holdsLease = true
            let batch = try store.pendingBatch(limit: batchLimit)
            if batch.isEmpty { return .idle }
            return try send(batch)
        } catch {
            try? store.recordFailure(status: 0, events: 0, error: "store: \(error)")
            return .failed(retryAfter: nil)
        }
    }

    /// Sends one batch and applies the outcome to the store.
    private func send(_ batch: [StoredEvent]) throws -> UploadWorker.Step {
        let flushTime = Clock.wallMilliseconds()
        let body: String
        do {
            body = try SensorsWire.body(forEvents: batch.map { $0.json.addingFlushTime(flushTime) })
        } catch {
            try store.quarantine(batch, status: 0, reason: "cannot encode: \(error)")
            return .sent
        }
        let answer = post(body)
        if answer.failure == .stopped || answer.failure == .cancelled { return .stopped }
        let (status, errorText) = (answer.status, answer.text)
        switch status {
        case 200..<300:
            try store.markDelivered(batch.map(\.id), status: status)
            serverErrorsForBatch = 0
            batchLimit = min(policy.batchSize, batchLimit * 2)
            return .sent
        case 413:
            if batch.count > 1 {
                batchLimit = max(1, batch.count / 2)
            } else {
                try store.quarantine(batch, status: 413, reason: "413 Payload Too Large for a single event")
            }
            return .sent
        case 0, 408, 429, 500...599:
            if status >= 500 {
                serverErrorsForBatch += 1
                if serverErrorsForBatch >= policy.maxServerErrorAttempts {
                    serverErrorsForBatch = 0
                    if batch.count > 1 {
                        batchLimit = max(1, batch.count / 2)
                    } else {
                        try store.quarantine(batch, status: status, reason: "\(status) \(policy.maxServerErrorAttempts) times: \(errorText)")
                        return .sent
                    }
                }
            }
            try store.recordFailure(status: status, events: batch.count, error: errorText)
            return .failed(retryAfter: status == 429 ? answer.retryAfter : nil)
        default:
            try store.quarantine(batch, status: status, reason: "HTTP \(status): \(errorText)")
            serverErrorsForBatch = 0
            return .sent
        }
    }

    /// POSTs the body.
    private func post(_ body: String) -> HTTPExchange.Answer {
        guard let address = HTTPExchange.Address(endpoint.absoluteString) else {
            // Not sent, as a network error: the batch stays pending (the endpoint is the app's to fix).
            return HTTPExchange.Answer(status: 0, text: "not an http(s) URL: \(endpoint.absoluteString.prefix(200))", failure: .network)
        }
        let request = HTTPExchange.Request(url: address, method: .post,
                                           headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                           body: Array(body.utf8), timeout: policy.requestTimeout)
        return HTTPExchange.send(request, cancellation: worker.cancellation)
    }
}
