// CrashReporting.swift — one call that wires capture, next-launch ingest and tracking for an app.
public import CrashCapture
// What a reporter user names: the tracker (SensorsTracking), property values and identity
// (SensorsEvents), the upload policy (re-exported by SensorsTracking).
@_exported import SensorsEvents
@_exported import SensorsTracking
public import Foundation
import HTTPExchange

/// Crash capture for one application, its records delivered at the next launch to Sentry, to
/// the Sensors events store, and to any sink of its own.
///
/// Crashes in Sentry and nothing else (no events store, no tracker thread, no exit hook):
/// ```swift
/// let reporting = CrashReporting.start(recordDirectory: "/var/lib/myapp/crashes", appName: "myapp",
///                                      appVersion: "1.4.2", sentryDSN: "https://<key>@o1.ingest.sentry.io/42")
/// ```
/// With the Sensors analytics events too (a store in `directory`, uploaded to `/sa`):
/// ```swift
/// let reporting = CrashReporting.start(directory: "/var/lib/myapp/telemetry", appName: "myapp",
///                                      appVersion: "1.4.2", endpoint: URL(string: "https://sa.example.com/sa?project=prod"))
/// reporting.tracker?.track("Checkout", properties: ["items": .int(3)])
/// reporting.shutdown()   // $AppEnd, upload within a few seconds
/// ```
public final class CrashReporting: Sendable {
    /// Where things live and where records go.
    public struct Configuration: Sendable {
        /// Where CrashCapture writes crash records (and the next launch reads them).
        public var recordDirectory: String
        public var appName: String
        public var appVersion: String
        /// The Sensors events store (`AppCrashed` + `$AppEnd` for each record, `$AppStart`/`$AppEnd`
        /// for each run, the app's own events through ``CrashReporting/tracker``). `nil`: no
        /// store, no tracker, no exit hook — the records go to the other sinks only.
        public var storePath: String?
        /// Where the events store uploads (`nil`: the events stay in the store).
        public var endpoint: URL?
        /// Install the crash handlers (off: only the sinks run).
        public var captureCrashes = true
        /// Adjusts capture's configuration (frames, other threads, the record directory's bounds:
        /// ``CrashHandler/Configuration/maxRecords``, ``CrashHandler/Configuration/maxRecordBytes``)
        /// before it starts. The inbox keeps the directory under the same bounds.
        public var capture: (@Sendable (inout CrashHandler.Configuration) -> Void)?
        /// Adjusts the tracker's configuration (limits, upload policy, timeouts) before it starts.
        public var tracker: (@Sendable (inout Tracker.Configuration) -> Void)?
        /// Sends each crash record to Sentry (an envelope with the record attached). Defaults to
        /// `SENTRY_DSN` from the environment; `nil` turns it off. A DSN that does not parse is
        /// reported in ``CrashReporting/sentryDSNError``.
        /// (getenv, not ProcessInfo: building Foundation's environment dictionary costs the launch
        /// a third of a millisecond.)
        public var sentryDSN: String? = getenv("SENTRY_DSN").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        /// Retries and timeouts of the Sentry sink (one record per request: the batch fields do not apply).
        public var sentryUpload = UploadPolicy()
        /// What a crash's Sentry event and the record attached to it carry beyond what Sentry
        /// needs (README, "What leaves the machine"): by default no raw memory, no breadcrumbs,
        /// no identity, sanitised paths; the OS's details.
        public var sentryData = CrashDataPolicy()
        /// Sees each crash's Sentry event (its JSON text) before it is sent, as Sentry's
        /// `before_send`: return it changed or as is, or nil to drop it (the record is then
        /// acknowledged as delivered). What it returns must be a JSON object with the same
        /// `event_id`, else the record is given up (counted `sentry_quarantined`). With a hook,
        /// crash-time upload is off (the hook runs only in the app).
        public var sentryBeforeSend: (@Sendable (String) -> String?)?
        /// The envelope builder (tests); nil: CrashSentry's, minimised by ``sentryData``, then ``sentryBeforeSend``.
        package var sentryEnvelope: SentryEnvelopeMaker?
        /// More destinations for the records (each with its own ``RecordSinkID``).
        public var sinks: [any CrashRecordSink] = []
        /// Sends a crash to Sentry at crash time, not only at the next launch (README,
        /// "Containers"): once the record is written, the handler starts this executable, which
        /// sends it while the crashed process dies. `nil` (the default): off. A path, or a name
        /// (`"crash-uploader"`, this package's product) looked up in the main executable's
        /// directory. Only with a Sentry DSN and capture on. An uploader that is not there is
        /// reported in the launch report's `errors`; capture works as without it.
        public var crashTimeUploader: String?

        /// Records in `<directory>/records`, the events store in `<directory>/events.sqlite`.
        public init(directory: String, appName: String, appVersion: String, endpoint: URL? = nil) {
            self.init(storePath: "\(directory)/events.sqlite", recordDirectory: "\(directory)/records",
                      appName: appName, appVersion: appVersion, endpoint: endpoint)
        }

        public init(storePath: String?, recordDirectory: String, appName: String, appVersion: String, endpoint: URL? = nil) {
            self.storePath = storePath
            self.recordDirectory = recordDirectory
            self.appName = appName
            self.appVersion = appVersion
            self.endpoint = endpoint
        }

        /// Records in `recordDirectory`, sent to Sentry; no events store.
        public init(recordDirectory: String, appName: String, appVersion: String, sentryDSN: String?) {
            self.init(storePath: nil, recordDirectory: recordDirectory, appName: appName, appVersion: appVersion)
            self.sentryDSN = sentryDSN
        }
    }

    /// What the launch did with the records of earlier runs.
    public struct LaunchReport: Sendable, Equatable {
        /// Records every sink has now (their files deleted).
        public var recordsDelivered: [String] = []
        /// Records some sink does not have yet: kept for it.
        public var recordsAwaitingSinks: [String] = []
        /// Partial records of a process that still runs (left alone).
        public var recordsInProgress: [String] = []
        /// Records whose `AppCrashed` (+ `$AppEnd`) the events sink stored.
        public var recordsIngested: [String] = []
        /// Records whose events an earlier launch (or another process) had stored.
        public var recordsAlreadyIngested: [String] = []
        /// Records the reader rejected (each sink still reports the crash, saying so).
        public var recordsUnreadable: [String] = []
        /// Run markers of dead runs turned into abnormal (or `oom`) `$AppEnd`s (see ``Tracker/abnormalEnds``).
        public var abnormalEnds: [String] = []
        /// Records taken out to keep the directory under its bounds: folded into the latest
        /// record of their crash (which counts them) or counted in the directory's ledger.
        public var recordsFolded: [String] = []
        /// Problems that left something in place for the next launch, and a crash-time uploader
        /// that was asked for and is not there.
        public var errors: [String] = []
        package init() {}
    }

    /// The events tracker, when the configuration has an events store.
    public let tracker: Tracker?
    /// The Sentry sink, when a DSN is configured.
    package let sentry: SentrySink?
    /// Why the configured DSN was not used, if it was not.
    public let sentryDSNError: String?
    /// What starting CrashCapture did, or the error it gave (the sinks run regardless).
    public let captureResult: Result<CrashHandler.StartResult, CrashCaptureError>?

    /// The inbox pass's result, set once by the thread that runs it.
    private let launched = Latch<LaunchReport>()

    /// What the launch did with earlier records. Waits until the launch (on the tracker's
    /// writer thread, or the reporter's own thread without a store) is done.
    public var launchReport: LaunchReport {
        let abnormalEnds = tracker?.abnormalEnds ?? [] // waits for the tracker's launch
        var report = launched.wait()
        report.abnormalEnds = abnormalEnds
        return report
    }

    /// Starts CrashCapture, then the delivery of earlier records (and, with an events store, the
    /// tracker), and returns at once: everything that touches the disk beyond capture's own
    /// start runs on another thread. With an events store that is the tracker's writer thread,
    /// in this order: opening the store, the crash `$AppEnd`'s identity, the inbox pass (every
    /// record to every sink), this run's marker, dead runs, `$AppStart` (see ``Tracker``'s
    /// launch). A store that cannot be used is reported by `tracker.launchError`; its events
    /// wait in memory meanwhile, and the other sinks still get the records.
    public static func start(directory: String, appName: String, appVersion: String, endpoint: URL? = nil) -> CrashReporting {
        start(Configuration(directory: directory, appName: appName, appVersion: appVersion, endpoint: endpoint))
    }

    /// Crashes to Sentry only: capture, and the Sentry sink at the next launch. No events store.
    public static func start(recordDirectory: String, appName: String, appVersion: String, sentryDSN: String?) -> CrashReporting {
        start(Configuration(recordDirectory: recordDirectory, appName: appName, appVersion: appVersion, sentryDSN: sentryDSN))
    }

    /// See ``start(directory:appName:appVersion:endpoint:)``.
    public static func start(_ configuration: Configuration) -> CrashReporting {
        CrashReporting(configuration)
    }

    private init(_ configuration: Configuration) {
        var trackerConfiguration: Tracker.Configuration?
        if let storePath = configuration.storePath {
            var tracking = Tracker.Configuration(storePath: storePath, appName: configuration.appName,
                                                 appVersion: configuration.appVersion, endpoint: configuration.endpoint)
            configuration.tracker?(&tracking)
            trackerConfiguration = tracking
        }
        // By hand and cheap (no Foundation URL): parsed on the caller's thread.
        let dsn = configuration.sentryDSN.map { ($0, SentryDSN($0)) }
        var uploaderError: String?
        var captureConfiguration = CrashHandler.Configuration(directory: configuration.recordDirectory, appName: configuration.appName,
                                                              appVersion: configuration.appVersion)
        configuration.capture?(&captureConfiguration)
        let limits = RecordDirectoryLimits(maxRecords: captureConfiguration.maxRecords, maxBytes: captureConfiguration.maxRecordBytes)
        if configuration.captureCrashes {
            var capture = captureConfiguration
            if var tracking = trackerConfiguration {
                // CrashCapture's compensating $AppEnd follows what the tracker's events carry
                // (identity, super properties): the tracker publishes its context as soon as its
                // launch has loaded it, and on every change; an integrator's own callback, if
                // any, still runs after it.
                let appEnd = CrashAppEndPublisher(appName: configuration.appName, appVersion: configuration.appVersion,
                                                  runID: tracking.runID)
                let integratorCallback = tracking.onEventContextChange
                tracking.onEventContextChange = { context in
                    appEnd.publish(context)
                    integratorCallback?(context)
                }
                trackerConfiguration = tracking
                capture.runID = tracking.runID
            }
            if let configured = configuration.crashTimeUploader, let (text, parsed) = dsn, parsed != nil {
                // The sinks the app has, so that the uploader's acknowledgment leaves the record to them.
                let sinks = [RecordSinkID.sentry] + (configuration.storePath != nil ? [.events] : []) + configuration.sinks.map(\.id)
                if configuration.sentryBeforeSend != nil {
                    // The hook is the app's code: only the app can run it (the next launch does).
                    uploaderError = "crash-time upload is off: a sentryBeforeSend hook runs only in the app (the next launch sends every record)"
                } else {
                    switch CrashTimeUpload.uploader(configured: configured, recordDirectory: configuration.recordDirectory,
                                                    sinks: sinks, dsn: text, limits: limits, data: configuration.sentryData) {
                    case .success(let uploader): capture.uploader = uploader
                    case .failure(let unavailable): uploaderError = unavailable.description
                    }
                }
            }
            // Capture first and on the caller's thread: a crash from here on is recorded (with
            // this run's id; its $AppEnd once the launch has published one, else the next launch
            // makes it from the record).
            do {
                captureResult = .success(try CrashHandler.start(capture))
            } catch let error as CrashCaptureError {
                captureResult = .failure(error)
            } catch {
                captureResult = .failure(CrashCaptureError(operation: "start: \(error)", errno: 0))
            }
        } else {
            captureResult = nil
        }
        let uploaderNote = uploaderError
        let store = trackerConfiguration.map { TrackingStore(deferringOpen: $0.storePath, limits: $0.limits) }
        var sentry: SentrySink?
        var dsnError: String?
        if let (text, parsed) = dsn {
            if let dsn = parsed {
                // Sentry's counters go where the app keeps counters: its events store, if any.
                var count: (@Sendable (String) -> Void)?
                if let store {
                    count = { counter in _ = try? store.append([], addingCounters: [counter: 1]) }
                }
                let envelope = configuration.sentryEnvelope
                    ?? SentrySink.envelope(data: configuration.sentryData, publicKey: dsn.publicKey, beforeSend: configuration.sentryBeforeSend)
                sentry = SentrySink(dsn: dsn, policy: configuration.sentryUpload, data: configuration.sentryData, envelope: envelope, count: count)
            } else {
                dsnError = "not a Sentry DSN (https://<key>@<host>/<project id>): \(text.prefix(200))"
            }
        }
        self.sentry = sentry
        sentryDSNError = dsnError
        let launched = self.launched
        let otherSinks: [any CrashRecordSink] = (sentry.map { [$0] } ?? []) + configuration.sinks
        let recordDirectory = configuration.recordDirectory
        guard let trackerConfiguration, let store else {
            tracker = nil
            // No events store: the inbox pass on a thread of its own.
            let thread = Thread {
                OSThread.name("CrashReporter.inbox")
                var report = Self.deliverRecords(in: recordDirectory, store: nil, appName: configuration.appName,
                                                 appVersion: configuration.appVersion, sinks: otherSinks, limits: limits)
                if let uploaderNote { report.errors.append(uploaderNote) }
                launched.open(report)
            }
            thread.name = "CrashReporter.inbox"
            thread.start()
            return
        }
        let extraPresets = trackerConfiguration.includeHostInfo ? Tracker.hostPresets() : [:]
        tracker = Tracker(trackerConfiguration, store: store) { store in
            // The tracker's launch, on its writer thread: every record to every sink (the events
            // sink claims the crashed runs before the tracker ends the dead ones). A store that
            // cannot be opened keeps the records for the events sink, and the others get them.
            var report = Self.deliverRecords(in: recordDirectory, store: store, appName: configuration.appName,
                                             appVersion: configuration.appVersion, extraPresets: extraPresets,
                                             sinks: (store == nil ? [UnavailableSink(id: .events, reason: "the events store cannot be opened")] : [])
                                                 + otherSinks, limits: limits)
            if let uploaderNote { report.errors.append(uploaderNote) }
            launched.open(report)
        }
    }

    /// One inbox pass over `directory`: every record to the events sink (with a store) and `sinks`.
    package static func deliverRecords(in directory: String, store: TrackingStore?, appName: String, appVersion: String,
                                       extraPresets: [String: JSONScalar] = [:], sinks: [any CrashRecordSink],
                                       limits: RecordDirectoryLimits = .standard) -> LaunchReport {
        let events = store.map { EventsSink(store: $0, appName: appName, appVersion: appVersion, extraPresets: extraPresets) }
        let inbox = RecordInbox(directory: directory, sinks: (events.map { [$0] } ?? []) + sinks, limits: limits).pass()
        events?.pruneClaims(keeping: Set(inbox.recordsAwaitingSinks + inbox.recordsInProgress))
        var report = LaunchReport()
        report.recordsDelivered = inbox.recordsDelivered
        report.recordsAwaitingSinks = inbox.recordsAwaitingSinks
        report.recordsInProgress = inbox.recordsInProgress
        report.errors = inbox.errors + inbox.bound.errors
        report.recordsFolded = inbox.bound.folded.keys.sorted() + inbox.bound.pruned
        if let events = events?.report {
            report.recordsIngested = events.recordsIngested
            report.recordsAlreadyIngested = events.recordsAlreadyIngested
            report.recordsUnreadable = events.recordsUnreadable
        }
        return report
    }

    /// What ``shutdown(timeout:)`` achieved.
    public struct ShutdownResult: Sendable, Equatable {
        /// Everything tracked, `$AppEnd` included, was committed (`true` without an events store).
        public var stored: Bool
        /// The events store was drained to the endpoint (`false` without an endpoint).
        public var uploaded: Bool
        /// Every record handed to Sentry was sent or given up (`true` without a DSN).
        public var sentToSentry: Bool
    }

    /// `$AppEnd`, then upload for at most `timeout` (see ``Tracker/shutdown(timeout:)``); the
    /// Sentry sink gets the same deadline (what it has not sent, it sends next launch).
    @discardableResult
    public func shutdown(timeout: Duration? = nil) -> ShutdownResult {
        let bound = timeout ?? tracker?.configuration.shutdownTimeout ?? .seconds(3)
        let deadline = SuspendingClock.now.advanced(by: bound)
        let result = tracker?.shutdown(timeout: bound) // waits for the launch
        var sent = true
        if let sentry {
            // The records reach the sink in the launch's pass: wait for it, within the deadline.
            _ = launched.wait(until: deadline)
            sent = sentry.finish(deadline: deadline)
        }
        return ShutdownResult(stored: result?.stored ?? true, uploaded: result?.uploaded ?? false, sentToSentry: sent)
    }

    /// ``shutdown(timeout:)`` for async code: the wait never holds the caller's executor (nor a
    /// thread of Swift's cooperative pool); it waits on a dispatch worker, not on a thread
    /// started per call.
    @discardableResult
    public func shutdown(timeout: Duration? = nil) async -> ShutdownResult {
        await Tracker.offload { [self] in shutdown(timeout: timeout) }
    }
}

/// A configured sink that cannot take records this launch: they stay for it.
struct UnavailableSink: CrashRecordSink {
    let id: RecordSinkID
    let reason: String
    func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult { .later(reason: reason) }
}

/// A one-way gate carrying a value: closed until ``open(_:)``, then open for good with it.
// @unchecked: `value` is only touched under `condition`.
final class Latch<Value: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Value?

    func open(_ value: Value) {
        condition.withLock {
            self.value = value
            condition.broadcast()
        }
    }

    func wait() -> Value {
        condition.withLock {
            while value == nil { condition.wait() }
            return value!
        }
    }

    /// Waits at most until `deadline`; the value if it came by then.
    @discardableResult
    func wait(until deadline: SuspendingClock.Instant) -> Value? {
        condition.withLock {
            while value == nil {
                let left = SuspendingClock.now.duration(to: deadline).components
                let seconds = Double(left.seconds) + Double(left.attoseconds) / 1e18
                if seconds <= 0 { break }
                _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
            }
            return value
        }
    }
}
