// CrashReporting.swift — one call that wires capture, next-launch ingest and tracking for an app.
import CrashCapture
import CrashEvents
import CrashTracking
import Foundation
import Synchronization

/// Crash capture plus event tracking for one application.
///
/// ```swift
/// let reporting = CrashReporting.start(directory: "/var/lib/myapp/telemetry", appName: "myapp",
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
        /// (getenv, not ProcessInfo: building Foundation's environment dictionary costs the launch
        /// a third of a millisecond.)
        public var sentryDSN: String? = getenv("SENTRY_DSN").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
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
    /// The Sentry upload, when a DSN is configured (it starts once the launch has ingested).
    public let sentry: SentryUpload?
    /// Why the configured DSN was not used, if it was not.
    public let sentryDSNError: String?
    /// What starting CrashCapture did, or the error it gave (tracking runs on regardless).
    public let captureResult: Result<CrashCapture.StartResult, CrashCaptureError>?

    /// What the launch's ingest found (records, abnormal ends). Waits until the launch, which
    /// runs on the tracker's writer thread, is done.
    public var ingestReport: NextLaunchIngest.Report {
        let abnormalEnds = tracker.abnormalEnds // waits for the launch
        var report = launched.withLock { $0.report } ?? NextLaunchIngest.Report()
        report.abnormalEnds = abnormalEnds
        return report
    }

    /// Filled by the launch (the tracker's writer thread).
    private final class Launched: Sendable {
        struct State {
            var report: NextLaunchIngest.Report?
            var sentryStarted = false
        }
        let state = Mutex(State())
        func withLock<T>(_ body: (inout State) -> T) -> T { state.withLock { body(&$0) } }
    }
    private let launched: Launched

    /// Starts CrashCapture (its `$AppEnd` carries the tracker's identity, super properties and run
    /// id, and follows their changes) and the tracker, and returns: everything that touches the
    /// disk beyond capture's own start — opening the store, the crash `$AppEnd`'s identity,
    /// turning the records and dead run markers of earlier runs into events, this run's marker,
    /// `$AppStart`, the Sentry upload — is the launch, done on the tracker's writer thread in
    /// that order (see ``Tracker``'s launch). A store that cannot be used is reported by
    /// `tracker.launchError`; its events wait in memory meanwhile.
    public static func start(directory: String, appName: String, appVersion: String, endpoint: URL? = nil) -> CrashReporting {
        start(Configuration(directory: directory, appName: appName, appVersion: appVersion, endpoint: endpoint))
    }

    /// See ``start(directory:appName:appVersion:endpoint:)``.
    public static func start(_ configuration: Configuration) -> CrashReporting {
        CrashReporting(configuration)
    }

    private init(_ configuration: Configuration) {
        var trackerConfiguration = Tracker.Configuration(storePath: configuration.storePath, appName: configuration.appName,
                                                         appVersion: configuration.appVersion, endpoint: configuration.endpoint)
        configuration.tracker?(&trackerConfiguration)
        // CrashCapture's compensating $AppEnd follows what the tracker's events carry (identity,
        // super properties): the tracker publishes its context as soon as its launch has loaded
        // it, and on every change; an integrator's own callback, if any, still runs after it.
        if configuration.captureCrashes {
            let appEnd = CrashAppEndPublisher(appName: configuration.appName, appVersion: configuration.appVersion,
                                              runID: trackerConfiguration.runID)
            let integratorCallback = trackerConfiguration.onEventContextChange
            trackerConfiguration.onEventContextChange = { context in
                appEnd.publish(context)
                integratorCallback?(context)
            }
            // Capture first and on the caller's thread: a crash from here on is recorded (with
            // this run's id; its $AppEnd once the launch has published one, else the next launch
            // makes it from the record).
            var capture = CrashCaptureConfiguration(directory: configuration.recordDirectory, appName: configuration.appName,
                                                    appVersion: configuration.appVersion)
            capture.runID = trackerConfiguration.runID
            do {
                captureResult = .success(try CrashCapture.start(capture))
            } catch let error as CrashCaptureError {
                captureResult = .failure(error)
            } catch {
                captureResult = .failure(CrashCaptureError(operation: "start: \(error)", errno: 0))
            }
        } else {
            captureResult = nil
        }
        let store = TrackingStore(deferringOpen: configuration.storePath, limits: trackerConfiguration.limits)
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
        self.sentry = sentry
        sentryDSNError = dsnError
        let extraPresets = trackerConfiguration.includeHostInfo ? Tracker.hostPresets() : [:]
        let launched = Launched()
        self.launched = launched
        tracker = Tracker(trackerConfiguration, store: store) { [sentry] store, _ in
            let report = NextLaunchIngest.run(store: store, recordDirectory: configuration.recordDirectory,
                                              appName: configuration.appName, appVersion: configuration.appVersion,
                                              awaitingClaims: sentry == nil ? [] : [SentryUpload.claimPrefix],
                                              extraPresets: extraPresets)
            sentry?.start()
            launched.withLock {
                $0.report = report
                $0.sentryStarted = sentry != nil
            }
        }
    }

    /// `$AppEnd`, then upload for at most `timeout` seconds (see ``Tracker/shutdown(timeout:)``);
    /// the Sentry upload, if any, gets the same deadline (what it has not sent, it sends next launch).
    @discardableResult
    public func shutdown(timeout: Double? = nil) -> Tracker.ShutdownResult {
        let seconds = timeout ?? tracker.configuration.shutdownTimeout
        let deadline = SentryUpload.monotonic() + Int64(seconds * 1e9)
        let result = tracker.shutdown(timeout: seconds) // waits for the launch
        if launched.withLock({ $0.sentryStarted }) { sentry?.finish(deadline: deadline) }
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
