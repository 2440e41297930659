// OTLPSink.swift — crash records sent to an OpenTelemetry collector, each as one OTLP log record.
//
// The inbox hands the sink each record the collector does not have yet; an UploadWorker thread
// (HTTPExchange, as the Sentry sink's) POSTs each, oldest first, as an ExportLogsServiceRequest
// in protobuf (CrashOTLP makes it) to the logs endpoint. The sink acknowledges a record to the
// inbox once the collector answered 2xx — also when the answer's `partial_success` says the
// record was rejected: sending it again would be rejected again, so that is logged (and in the
// report) and not retried. Network errors, 408, 429 and 5xx back off exponentially (at least
// the answer's Retry-After) on the worker's schedule, the one every sender here shares; after
// `maxServerErrorAttempts` 5xx in a row the record waits for the next launch. Which answers
// delete a record and which keep it is DeliveryRule's, the Sentry sink's too: 400, 413, 415 and
// 422 refuse the record for its content (acknowledged, in the report's `rejected`); any other
// answer (401, 403, 404: a wrong endpoint, a missing token) keeps every record for the next
// launch, nothing more is sent this launch, and one line says what to check: a configuration
// mistake must not lose crashes. What is not sent by the deadline is sent next launch.
//
// The queue, the leases and the worker thread are LeasedSender's (the Sentry sink's too): a process
// sends a record only while it holds the record's lease, so that several processes over one
// record directory send it once.
import CrashOTLP
import CrashRecordFormat
import HostFacts
import HTTPExchange
import Logging
package import RecordDelivery

/// The OTLP sink (see the file comment).
// @unchecked: `origin` is the worker thread's.
package final class OTLPSink: CrashRecordSink, @unchecked Sendable {
    package static let sinkID = RecordSinkID("otlp")!
    package let id = OTLPSink.sinkID

    /// What this process's OTLP sink did.
    package struct Report: SenderReport, Equatable {
        /// Records the collector acknowledged.
        package var sent: [String] = []
        /// Records the collector acknowledged but rejected (`partial_success`), with its words:
        /// acknowledged, not sent again.
        package var rejected: [String: String] = [:]
        /// Records kept for the next launch after an answer that sending again now cannot change
        /// (about the configuration: DeliveryRule's `kept`; or 5xx until the limit), with why.
        package var kept: [String: String] = [:]
        /// An answer about the configuration this launch (401, 403, 404…): nothing more was sent after it.
        package var configurationError: String?
        /// Records another process of the app was sending (left to it).
        package var leftToOthers: [String] = []
        /// The last failure (retried, or a record kept), if any.
        package var lastError: String?
        package init() {}
    }

    /// Where and how the records go (the app's options).
    package let options: OTLPOptions
    /// `service.name` when the options name none (else the record's app name).
    let appName: String?
    /// What a record carries beyond the crash itself.
    let data: CrashDataPolicy
    let recordDirectory: String?
    private typealias Sender = LeasedSender<Void, Report>
    /// The sender, made with the first record (SenderCell).
    private let senderCell = SenderCell()
    private var sender: Sender {
        unsafeDowncast(senderCell.sender {
            let made = Sender(name: "CrashReporter.otlp", backend: "OTLP", policy: options.upload)
            made.sends { [unowned self] in step() }
            return made
        }, to: Sender.self)
    }
    private let logger = Logger(label: "CrashReporter.otlp")
    // The worker thread only.
    private var origin: CrashLogRecord.Origin?
    private typealias Taken = Sender.Taken

    /// - Parameters:
    ///   - options: the collector, the resource, retries and timeouts (one record per request).
    ///   - recordDirectory: where the installation id (`service.instance.id`) is kept.
    package init(options: OTLPOptions, appName: String? = nil, data: CrashDataPolicy = CrashDataPolicy(), recordDirectory: String? = nil) {
        self.options = options
        self.appName = appName
        self.data = data
        self.recordDirectory = recordDirectory
    }

    /// What was sent, rejected and kept so far.
    package var currentReport: Report { senderCell.isMade ? sender.currentReport : Report() }

    /// Queues the record for sending while this process holds its lease.
    package func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult {
        sender.take(record, receipt: receipt) { () }
    }

    /// Sends until nothing is queued or `deadline` passes, then stops; what is left is sent next
    /// launch. Returns whether everything queued was sent (or settled).
    @discardableResult
    package func shutdown(deadline: SuspendingClock.Instant) -> Bool {
        guard senderCell.isMade else { return true }   // nothing was ever queued
        return sender.finish(deadline: deadline)
    }

    /// The resource's facts of this machine, read once, on the worker thread.
    private func currentOrigin() -> CrashLogRecord.Origin {
        if let origin { return origin }
        let details = data.hostDetails
        let made = CrashLogRecord.Origin(
            serviceName: options.serviceName, appName: appName,
            instanceID: recordDirectory.flatMap { Installation.id(recordDirectory: $0) },
            resourceAttributes: options.resourceAttributes.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) },
            hostName: details ? HostName.current() : nil, host: details ? HostContext.current() : nil,
            osRelease: details ? OSRelease.current() : nil)
        origin = made
        return made
    }

    /// The request body for `taken`: the crash as a log record; an unreadable record as one that says so.
    private func body(_ taken: Taken) -> [UInt8] {
        let now = UInt64(max(0, Clock.wallNanoseconds()))
        let minimised = data.minimisation
        let request: OTLPLogsRequest
        switch taken.record.record {
        case .success(let record):
            request = CrashLogRecord.request(record: record, fileName: taken.record.name, observedNanoseconds: now,
                                             origin: currentOrigin(), minimised: minimised)
        case .failure(let error):
            let crashTime = RecordFileName(taken.record.name).map { UInt64(max(0, $0.milliseconds)) * 1_000_000 } ?? 0
            request = CrashLogRecord.unreadable(fileName: taken.record.name, reason: "\(error)", crashNanoseconds: crashTime,
                                                observedNanoseconds: now, origin: currentOrigin(), minimised: minimised)
        }
        return request.protobuf
    }

    private func step() -> UploadWorker.Step {
        guard let head = sender.head else { return .idle }
        if let refused = sender.configurationError {
            sender.keep(head, reason: refused)
            return .sent
        }
        guard let url = HTTPExchange.Address(options.logsEndpoint) else {
            let why = "not an http(s) URL: \(options.logsEndpoint.prefix(200))"
            sender.refuseForThisLaunch(why, advice: "check the endpoint (OTEL_EXPORTER_OTLP_ENDPOINT)")
            sender.keep(head, reason: why)
            return .sent
        }
        var body = body(head)
        var headers: [(name: String, value: String)] = [("Content-Type", "application/x-protobuf")]
        if options.gzip, let compressed = HTTPExchange.gzip(body) {
            body = compressed
            headers.append(("Content-Encoding", "gzip"))
        }
        headers += options.headers.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        let request = HTTPExchange.Request(url: url, method: .post, headers: headers, body: body, timeout: sender.worker.policy.requestTimeout)
        let answer = HTTPExchange.send(request, cancellation: sender.worker.cancellation)
        switch DeliveryRule.verdict(status: answer.status) {
        case .delivered:
            let response = OTLPLogsResponse(protobuf: [UInt8](answer.body)) ?? OTLPLogsResponse()
            if response.rejectedLogRecords > 0 {
                let why = "the collector rejected \(response.rejectedLogRecords) log record(s)"
                    + (response.errorMessage.isEmpty ? "" : ": \(response.errorMessage.prefix(500))")
                logger.warning("\(head.record.name): \(why) (not sent again)", source: "CrashReporter")
                sender.settle(head) { $0.rejected[head.record.name] = why }
            } else {
                sender.settle(head) { $0.sent.append(head.record.name) }
            }
            return .sent
        case .retry where answer.status == 0:
            if answer.failure == .stopped || answer.failure == .cancelled { return .stopped }
            sender.note(answer.text)
            return .failed(retryAfter: nil)
        case .retry:
            sender.note("HTTP \(answer.status) \(Self.words(answer))")
            return .failed(retryAfter: answer.retryAfter)
        case .serverError:
            return sender.serverError(head, "HTTP \(answer.status) \(Self.words(answer))", retryAfter: answer.retryAfter)
        case .refused:
            let why = "HTTP \(answer.status): \(Self.words(answer))"
            logger.warning("\(head.record.name): the collector refused it for its content, \(why) (not sent again)", source: "CrashReporter")
            sender.settle(head) { $0.rejected[head.record.name] = why }
            return .sent
        case .kept:
            let why = "HTTP \(answer.status) from \(options.logsEndpoint.prefix(200)): \(Self.words(answer))"
            sender.refuseForThisLaunch(why, advice: DeliveryRule.advice(status: answer.status, what: "the endpoint and its headers (OTEL_EXPORTER_OTLP_*)"))
            sender.keep(head, reason: why)
            return .sent
        }
    }

    /// What an answer's body says: an OTLP error's `google.rpc.Status` message when it is one
    /// (protobuf field 2), else its first 200 bytes as text.
    static func words(_ answer: HTTPExchange.Answer) -> String {
        if answer.headers["content-type"]?.contains("protobuf") == true, let fields = ProtobufReader.fields([UInt8](answer.body)) {
            for case (2, .bytes(let text)) in fields { return String(decoding: text.prefix(500), as: UTF8.self) }
        }
        return answer.text
    }
}
