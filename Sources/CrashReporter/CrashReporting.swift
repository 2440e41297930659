// CrashReporting.swift — one call that wires capture, next-launch ingest and tracking for an app.
import CrashCapture
import CrashEvents
import CrashTracking
import Foundation

/// Crash capture plus event tracking for one application.
///
/// ```swift
/// let reporting = try CrashReporting.start(directory: "/var/lib/myapp/telemetry", appName: "myapp",
///                                          appVersion: "1.4.2", endpoint: URL(string: "https://sa.example.com/sa?project=prod"))
/// reporting.tracker.track("Checkout", properties: ["items": .int(3)])
/// reporting.shutdown()   // $AppEnd, upload within a few seconds
/// ```
public final class CrashReporting: Sendable {
    /// Where things live and how the tracker behaves.
    public struct Configuration: Sendable {
        /// The tracking store file.
        public var storePath: String
        /// Where CrashCapture writes crash records (and the next launch reads them).
        public var recordDirectory: String
        public var appName: String
        public var appVersion: String
        public var endpoint: URL?
        /// Install the crash handlers (off: only the tracker and the ingest run).
        public var captureCrashes = true
        /// Adjusts the tracker's configuration (limits, upload policy, timeouts) before it starts.
        public var tracker: (@Sendable (inout Tracker.Configuration) -> Void)?
        /// Sends each crash record to Sentry too (an envelope with the record attached), beside
        /// the `/sa` events. Defaults to `SENTRY_DSN` from the environment; `nil` turns it off.
        /// A DSN that does not parse is reported in ``CrashReporting/sentryDSNError``.
        public var sentryDSN: String? = ProcessInfo.processInfo.environment["SENTRY_DSN"].flatMap { $0.isEmpty ? nil : $0 }
        /// Retries and timeouts of the Sentry upload.
        public var sentryUpload = SentryUploadPolicy()
        /// The envelope builder: CrashSentry's, the one `crash-inspect export --sentry` uses.
        /// (Not optional: `sentryDSN = nil` is what turns the upload off.)
        public var sentryEnvelope: SentryEnvelopeMaker = SentryUpload.standardEnvelope

        /// `<directory>/events.sqlite` and `<directory>/records`.
        public init(directory: String, appName: String, appVersion: String, endpoint: URL? = nil) {
            self.init(storePath: "\(directory)/events.sqlite", recordDirectory: "\(directory)/records",
                      appName: appName, appVersion: appVersion, endpoint: endpoint)
        }

        public init(storePath: String, recordDirectory: String, appName: String, appVersion: String, endpoint: URL? = nil) {
            self.storePath = storePath
            self.recordDirectory = recordDirectory
            self.appName = appName
            self.appVersion = appVersion
            self.endpoint = endpoint
        }
    }

    public let tracker: Tracker
    /// The Sentry upload, when a DSN is configured.
    public let sentry: SentryUpload?
    /// Why the configured DSN was not used, if it was not.
    public let sentryDSNError: String?
    /// What the next-launch ingest found (records, abnormal ends).
    public let ingestReport: NextLaunchIngest.Report
    /// What starting CrashCapture did, or the error it gave (tracking runs on regardless).
    public let captureResult: Result<CrashCapture.StartResult, CrashCaptureError>?

    /// Opens the store, starts CrashCapture (its `$AppEnd` carries the tracker's identity, super
    /// properties and run id, and follows their changes), turns
    /// records and dead run markers of earlier runs into events, then starts the tracker
    /// (`$AppStart`). - Throws: ``TrackingStoreError`` when the store cannot be used at all.
    public static func start(directory: String, appName: String, appVersion: String, endpoint: URL? = nil) throws -> CrashReporting {
        try start(Configuration(directory: directory, appName: appName, appVersion: appVersion, endpoint: endpoint))
    }

    /// See ``start(directory:appName:appVersion:endpoint:)``.
    public static func start(_ configuration: Configuration) throws -> CrashReporting {
        try CrashReporting(configuration)
    }

    private init(_ configuration: Configuration) throws {
        let store = try TrackingStore(path: configuration.storePath)
        var trackerConfiguration = Tracker.Configuration(storePath: configuration.storePath, appName: configuration.appName,
                                                         appVersion: configuration.appVersion, endpoint: configuration.endpoint)
        configuration.tracker?(&trackerConfiguration)
        // CrashCapture's compensating $AppEnd follows what the tracker's events carry (identity,
        // super properties); an integrator's own callback, if any, still runs after it.
        let appEnd = configuration.captureCrashes
            ? CrashAppEndPublisher(appName: configuration.appName, appVersion: configuration.appVersion, runID: trackerConfiguration.runID)
            : nil
        if let appEnd {
            let integratorCallback = trackerConfiguration.onEventContextChange
            trackerConfiguration.onEventContextChange = { context in
                appEnd.publish(context)
                integratorCallback?(context)
            }
        }
        // Until the tracker starts (after the ingest), the context the store holds.
        let state = try store.loadState(claimingFirstStart: false)
        let extraPresets = trackerConfiguration.includeHostInfo ? Tracker.hostPresets() : [:]
        appEnd?.publish(EventContext(identity: EventIdentity(anonymousID: state.anonymousID, loginID: state.loginID),
                                     superProperties: state.superProperties, extraPresets: extraPresets))
        if configuration.captureCrashes {
            var capture = CrashCaptureConfiguration(directory: configuration.recordDirectory, appName: configuration.appName,
                                                    appVersion: configuration.appVersion)
            capture.runID = trackerConfiguration.runID
            do {
                captureResult = .success(try CrashCapture.start(capture))
            } catch let error as CrashCaptureError {
                captureResult = .failure(error)
            }
        } else {
            captureResult = nil
        }
        var sentry: SentryUpload?
        var dsnError: String?
        if let text = configuration.sentryDSN {
            if let dsn = SentryDSN(text) {
                sentry = SentryUpload(store: store, directory: configuration.recordDirectory, dsn: dsn,
                                      policy: configuration.sentryUpload, envelope: configuration.sentryEnvelope)
            } else {
                dsnError = "not a Sentry DSN (https://<key>@<host>/<project id>): \(text.prefix(200))"
            }
        }
        var report = NextLaunchIngest.run(store: store, recordDirectory: configuration.recordDirectory,
                                          appName: configuration.appName, appVersion: configuration.appVersion,
                                          awaitingClaims: sentry == nil ? [] : [SentryUpload.claimPrefix],
                                          extraPresets: extraPresets)
        self.sentry = sentry
        sentryDSNError = dsnError
        // The tracker ends the dead runs the records did not claim.
        tracker = try Tracker(trackerConfiguration, store: store)
        report.abnormalEnds = tracker.abnormalEnds
        ingestReport = report
        sentry?.start()
    }

    /// `$AppEnd`, then upload for at most `timeout` seconds (see ``Tracker/shutdown(timeout:)``);
    /// the Sentry upload, if any, gets the same deadline (what it has not sent, it sends next launch).
    @discardableResult
    public func shutdown(timeout: Double? = nil) -> Tracker.ShutdownResult {
        let seconds = timeout ?? tracker.configuration.shutdownTimeout
        let deadline = SentryUpload.monotonic() + Int64(seconds * 1e9)
        let result = tracker.shutdown(timeout: seconds)
        sentry?.finish(deadline: deadline)
        return result
    }

    /// ``shutdown(timeout:)`` for async code: the wait never holds the caller's executor.
    @discardableResult
    public func shutdown(timeout: Duration? = nil) async -> Tracker.ShutdownResult {
        await withCheckedContinuation { continuation in
            let thread = Thread { [self] in
                let seconds = timeout.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
                continuation.resume(returning: shutdown(timeout: seconds))
            }
            thread.name = "CrashReporter.shutdown"
            thread.start()
        }
    }
}
