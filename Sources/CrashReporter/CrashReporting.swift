// CrashReporting.swift — one call that wires capture and the next launch's delivery for an app.
public import CrashCapture
import HostFacts
import HTTPExchange
package import CrashReporterSentry
package import CrashReporterOTLP
import CrashSentry
import CrashOTLP
import RecordDelivery
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Crash capture for one application, its records delivered at the next launch to Sentry and to
/// any sink of its own (the Sensors analytics is one: its own product, `SensorsAnalytics`).
///
/// Crashes in Sentry and nothing else:
/// ```swift
/// let reporting = CrashReporting.start(recordDirectory: "/var/lib/myapp/crashes", appName: "myapp",
///                                      appVersion: "1.4.2", sentryDSN: "https://<key>@o1.ingest.sentry.io/42")
/// ```
/// The reporter owns the launch: one thread takes every sink through it (`CrashRecordSink`'s hooks),
/// so a program's start never waits on the disk or the network.
public final class CrashReporting: Sendable {
    /// Where things live and where records go.
    public struct Configuration: Sendable {
        /// Where CrashCapture writes crash records (and the next launch reads them).
        public var recordDirectory: String
        /// The app's name (the release's first part, the record's and the events' app name).
        public var appName: String
        /// The app's version (the release's second part).
        public var appVersion: String
        /// Install the crash handlers (off: only the sinks run).
        public var captureCrashes = true
        /// Adjusts capture's configuration (frames, other threads, the record directory's bounds:
        /// `CrashHandler.Configuration.maxRecords`, `CrashHandler.Configuration.maxRecordBytes`)
        /// before it starts. The inbox keeps the directory under the same bounds.
        public var capture: (@Sendable (inout CrashHandler.Configuration) -> Void)?
        /// Hang detection (`HangDetection`): a process stuck for longer than its thresholds writes
        /// a hang record, which the sinks get while it lives. `nil` (the default) leaves it off,
        /// unless `CRASHCAPTURE_HANG_SECONDS` turns it on.
        public var hangDetection: HangDetection?
        /// The environment this run's events and session are filed under in Sentry. Defaults to
        /// `SENTRY_ENVIRONMENT`, else `production` (Sentry's own default).
        public var sentryEnvironment: String = Self.environmentVariable("SENTRY_ENVIRONMENT") ?? "production"
        /// The release (default `SENTRY_RELEASE`, else `<appName>@<appVersion>`).
        public var sentryRelease: String? = Self.environmentVariable("SENTRY_RELEASE")
        /// The release's build (default `SENTRY_DIST`).
        public var sentryDist: String? = Self.environmentVariable("SENTRY_DIST")
        /// Release health: each run a Sentry session (on by default, as Sentry's SDKs have it).
        /// Off, only crashes are sent: a launch after a run that ended without one sends nothing.
        /// The sessions of runs that ended without a crash are sent together, by a process that
        /// has lived 5 s or once the oldest has waited an hour: a command-line tool pays no
        /// request per launch (the Sentry article, "Release health").
        public var sentrySessions = true
        /// When those sessions are sent (tests send each at once).
        package var sentrySessionBatching = SessionBatching()
        /// Sends each crash record to Sentry (an envelope with the record attached). Defaults to
        /// `SENTRY_DSN` from the environment; `nil` turns it off. A DSN that does not parse is
        /// reported in ``CrashReporting/sentryDSNError``.
        /// (getenv, not ProcessInfo: building Foundation's environment dictionary costs the launch
        /// a third of a millisecond.)
        public var sentryDSN: String? = getenv("SENTRY_DSN").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        /// Retries and timeouts of the Sentry sink (one record per request).
        public var sentryUpload = UploadPolicy()
        /// What a crash's Sentry event and the record attached to it carry beyond what Sentry
        /// needs (CrashReporter.docc, "What leaves the machine"): by default no raw memory, no breadcrumbs,
        /// no identity, sanitised paths; the OS's details.
        public var sentryData = CrashDataPolicy()
        /// Sends a Linux minidump of each crash beside its Sentry event (an `event.minidump`
        /// attachment), for Sentry's own stackwalking and for downloading into a debugger. Off by
        /// default; sent only when ``sentryData`` allows `rawMemory` (a minidump is the crashed
        /// thread's stack memory): otherwise no minidump goes. Crash-time upload sends none.
        public var sentryMinidump = false
        /// Sees each crash's Sentry event (its JSON text) before it is sent, as Sentry's
        /// `before_send`: return it changed or as is, or nil to drop it (the record is then
        /// acknowledged as delivered). What it returns must be a JSON object with the same
        /// `event_id`, else the record is given up (in the Sentry sink's report as quarantined). With a hook,
        /// crash-time upload is off (the hook runs only in the app).
        public var sentryBeforeSend: (@Sendable (String) -> String?)?
        /// The envelope builder (tests); nil: CrashSentry's, minimised by ``sentryData``, then ``sentryBeforeSend``.
        package var sentryEnvelope: SentryEnvelopeMaker?
        /// Sends each crash record to an OpenTelemetry collector as one OTLP log record (event
        /// `app.crash`, severity FATAL; the <doc:OpenTelemetry> article), over OTLP/HTTP in
        /// protobuf, to this URL as it is. Defaults to `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`, else
        /// `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/logs` appended (`OTEL_LOGS_EXPORTER=none`: off);
        /// `nil` turns it off. A URL that is not http(s) keeps the records, the reason in the
        /// sink's report.
        public var otlpLogsEndpoint: String?
        /// Headers sent with each OTLP request (an API key). Defaults to `OTEL_EXPORTER_OTLP_HEADERS`
        /// and `OTEL_EXPORTER_OTLP_LOGS_HEADERS` (`key=value,…`, values percent-decoded).
        public var otlpHeaders: [String: String]
        /// gzip the OTLP requests. Defaults to whether `OTEL_EXPORTER_OTLP_LOGS_COMPRESSION` (else
        /// `OTEL_EXPORTER_OTLP_COMPRESSION`) is `gzip`.
        public var otlpGzip: Bool
        /// The resource's `service.name`. Defaults to `OTEL_SERVICE_NAME`; nil: the app's name.
        public var otlpServiceName: String?
        /// More resource attributes (`deployment.environment.name`, …). Defaults to `OTEL_RESOURCE_ATTRIBUTES`.
        public var otlpResourceAttributes: [String: String]
        /// Retries and timeouts of the OTLP sink; its `requestTimeout` defaults to
        /// `OTEL_EXPORTER_OTLP_LOGS_TIMEOUT` (else `OTEL_EXPORTER_OTLP_TIMEOUT`) milliseconds, else 10 s.
        public var otlpUpload: UploadPolicy
        /// What a crash's log record carries beyond the crash (as ``sentryData`` for Sentry): by
        /// default no breadcrumbs, sanitised paths, no request query or key/values; the host's details.
        public var otlpData = CrashDataPolicy()
        /// More destinations for the records (each with its own `RecordSinkID`). A
        /// sink takes part in the launch and the end of the run too, where it has hooks for them.
        public var sinks: [any CrashRecordSink] = []
        /// Sends a crash to Sentry (and to the OTLP logs endpoint, when one is set) at crash time,
        /// not only at the next launch (CrashReporter.docc, "Containers and crash-time upload"):
        /// once the record is written, the handler starts this executable, which sends it while
        /// the crashed process dies. `nil` (the default): off. A path, or a name
        /// (`"crash-uploader"`, this package's product) looked up in the main executable's
        /// directory. Only with a Sentry DSN or an OTLP endpoint, and capture on. An uploader that is not there is
        /// reported in the launch report's `errors`; capture works as without it.
        public var crashTimeUploader: String?

        /// A variable of the environment, nil when unset or empty (getenv: see ``sentryDSN``).
        static func environmentVariable(_ name: String) -> String? {
            getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        }

        /// Records in `recordDirectory`, sent to Sentry when `SENTRY_DSN` is set, and to ``sinks``.
        public init(recordDirectory: String, appName: String, appVersion: String) {
            self.recordDirectory = recordDirectory
            self.appName = appName
            self.appVersion = appVersion
            // The OTLP exporter's variables, read once.
            let otlp = OTLPEnvironment { name in getenv(name).map { String(cString: $0) } }
            otlpLogsEndpoint = otlp.logsEndpoint
            otlpHeaders = otlp.headers
            otlpGzip = otlp.gzip
            otlpServiceName = otlp.serviceName
            otlpResourceAttributes = otlp.resourceAttributes
            otlpUpload = UploadPolicy()
            otlpUpload.requestTimeout = .milliseconds(otlp.timeoutMilliseconds)
        }

        /// Records in `recordDirectory`, sent to Sentry at `sentryDSN` (`nil`: not to Sentry).
        public init(recordDirectory: String, appName: String, appVersion: String, sentryDSN: String?) {
            self.init(recordDirectory: recordDirectory, appName: appName, appVersion: appVersion)
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
        /// Records the reader rejected (each sink still reports the crash, saying so).
        public var recordsUnreadable: [String] = []
        /// Earlier runs of the app that ended since, each handed to the sinks once: how each
        /// ended (exited, crashed, killed, killed by the OOM killer), oldest first.
        public var runsEnded: [EndedRun] = []
        /// Runs of other processes of the app (over the same record directory) still running.
        public var runsRunning = 0
        /// Records taken out to keep the directory under its bounds: folded into the latest
        /// record of their crash (which counts them) or counted in the directory's ledger.
        public var recordsFolded: [String] = []
        /// Problems that left something in place for the next launch, and a crash-time uploader
        /// that was asked for and is not there.
        public var errors: [String] = []
        package init() {}

        /// What an inbox pass did.
        init(_ inbox: RecordInbox.Report) {
            recordsDelivered = inbox.recordsDelivered
            recordsAwaitingSinks = inbox.recordsAwaitingSinks
            recordsInProgress = inbox.recordsInProgress
            recordsUnreadable = inbox.recordsUnreadable
            errors = inbox.errors + inbox.bound.errors
            recordsFolded = inbox.bound.folded.keys.sorted() + inbox.bound.pruned
        }
    }

    /// The run this process is: its id is in every crash record it writes.
    public let run: ReportingRun
    /// The Sentry sink, when a DSN is configured (a view of ``sinks``).
    package var sentry: SentrySink? { sinks.lazy.compactMap { $0 as? SentrySink }.first }
    /// The OTLP sink, when a logs endpoint is configured (a view of ``sinks``).
    package var otlp: OTLPSink? { sinks.lazy.compactMap { $0 as? OTLPSink }.first }
    /// Why the configured DSN was not used, if it was not.
    public let sentryDSNError: String?
    /// What starting CrashCapture did, or the error it gave (the sinks run regardless).
    public let captureResult: Result<CrashHandler.StartResult, CrashCaptureError>?
    /// Every sink, in the order the records reach them: Sentry's first, then the OTLP sink, then
    /// the configured ones.
    public let sinks: [any CrashRecordSink]
    /// The run's life: its marker, the launch, the watch, the end (CurrentRun.swift).
    let current: CurrentRun
    /// The launch's result, set once by the launch thread.
    var launched: Latch<LaunchReport> { current.launched }

    /// What the launch did with earlier records. Waits until the launch is done.
    public var launchReport: LaunchReport { launched.wait() }

    /// A reporter let go of stops keeping its run's marker current (its shutdown stopped that
    /// already; this is for one that never shut down).
    deinit { current.stopWatch() }

    /// Starts CrashCapture on the caller's thread, then the launch on a thread of its own, and
    /// returns at once. The launch takes every sink through its phases (`CrashRecordSink`'s hooks):
    /// each prepares, the inbox offers every record of earlier runs to every sink that lacks it,
    /// each finishes. A sink that cannot take records this launch keeps them for the next.
    public static func start(recordDirectory: String, appName: String, appVersion: String, sentryDSN: String?) -> CrashReporting {
        start(Configuration(recordDirectory: recordDirectory, appName: appName, appVersion: appVersion, sentryDSN: sentryDSN))
    }


    /// See ``start(recordDirectory:appName:appVersion:sentryDSN:)``.
    ///
    /// One reporter per program: while one runs (not yet shut down), another `start` returns it,
    /// ignores its own configuration and says so on stderr (through swift-log): two reporters
    /// would each count the same process as a run. Capture the app started itself
    /// (`CrashHandler.start`, `CrashCaptureService`) is adopted: the reporter applies its
    /// own capture configuration to it (record directory, run id, crash-time upload), so the
    /// crash's run gets its session.
    public static func start(_ configuration: Configuration) -> CrashReporting {
        // A setup check's throwaway child (verifySetup): capture there, and the crash.
        if let directory = getenv(verifyCrashVariable).map({ String(cString: $0) }), !directory.isEmpty {
            crashForSetupCheck(directory: directory, configuration: configuration)
        }
        if let value = getenv(verifyHangVariable).map({ String(cString: $0) }), !value.isEmpty {
            hangForSetupCheck(value, configuration: configuration)
        }
        return running.withLock { running in
            if let running = running.reporting, !running.current.hasEnded {
                Logger(label: "CrashReporter").error(
                    "CrashReporting.start was called again while a reporter runs (records in \(running.run.recordDirectory)): that reporter is returned and this call's configuration is ignored. Start the reporter once per program, or shut the first down before starting another.")
                return running
            }
            let reporting = CrashReporting(configuration)
            running.reporting = reporting
            return reporting
        }
    }

    /// The reporter of this process: held until it is shut down, even where the app let go of
    /// it (`_ = CrashReporting.start(…)`), so that a later `start` finds it running.
    private static let running = Mutex(Running())
    private struct Running: Sendable { var reporting: CrashReporting? }

    init(_ configuration: Configuration) {
        let started = (wall: Clock.wallMilliseconds(), monotonic: Clock.monotonicNanoseconds())
        let capture = Self.captureConfiguration(configuration)
        let run = ReportingRun(runID: capture.runID, appName: configuration.appName, appVersion: configuration.appVersion,
                               recordDirectory: configuration.recordDirectory)
        self.run = run
        let limits = RecordDirectoryLimits(maxRecords: capture.maxRecords, maxBytes: capture.maxRecordBytes)
        let release = configuration.sentryRelease ?? "\(configuration.appName)@\(configuration.appVersion)"
        let built = Self.makeSinks(configuration, release: release)
        sentryDSNError = built.dsnError
        sinks = built.sinks
        // Before capture: a crash from here on finds each sink knowing its run (the analytics
        // publishes the crash `$AppEnd` for this run id).
        for sink in sinks { sink.attach(to: run) }
        var notes: [String] = []
        if configuration.captureCrashes {
            let started = Self.startCapture(capture, configuration, sinks: sinks, otlp: built.otlp, limits: limits)
            captureResult = started.result
            if let note = started.uploaderError { notes.append(note) }
        } else {
            captureResult = nil
        }
        // This package's own sinks are known by type; the analytics registers its own.
        let bounded = [ObjectIdentifier(SentrySink.self), ObjectIdentifier(OTLPSink.self), ObjectIdentifier(MisconfiguredSink.self)]
        current = CurrentRun(run: run, started: started,
                             facts: CurrentRun.Facts(release: release, environment: configuration.sentryEnvironment, dist: configuration.sentryDist),
                             sinks: sinks, limits: limits, appSinks: !configuration.sinks.isEmpty,
                             endMayLaunch: sinks.allSatisfy { bounded.contains(ObjectIdentifier(type(of: $0))) || BoundedLaunchSinks.contains($0) },
                             notes: notes)
        if captureResult != nil { current.deliverLiveRecords() }
        RunEndHook.register(self)
        current.start()
    }

    /// Capture's configuration for this reporter. Capture the app started itself is taken over
    /// (CrashHandler.adopt): what this configuration sets replaces the app's — the record
    /// directory, app name and version, the run id, hang detection when set, crash-time upload
    /// when configured, and whatever the `capture` closure sets — and every other setting stays
    /// as the app set it.
    private static func captureConfiguration(_ configuration: Configuration) -> CrashHandler.Configuration {
        var capture = CrashHandler.runningConfiguration ?? CrashHandler.Configuration(directory: "", appName: "", appVersion: "")
        capture.directory = configuration.recordDirectory
        capture.appName = configuration.appName
        capture.appVersion = configuration.appVersion
        capture.runID = ""   // the reporter's run, never the app's
        if let hangDetection = configuration.hangDetection { capture.hangDetection = hangDetection }
        configuration.capture?(&capture)
        if capture.runID.isEmpty { capture.runID = randomUUIDText() }
        return capture
    }

    /// The sinks the configuration asks for: Sentry's (by hand and cheap, no Foundation URL: the
    /// DSN parsed on the caller's thread), the OTLP sink, the app's own.
    private static func makeSinks(_ configuration: Configuration, release: String)
        -> (sinks: [any CrashRecordSink], otlp: OTLPSink?, dsnError: String?) {
        var sentry: SentrySink?
        var dsnError: String?
        if let text = configuration.sentryDSN {
            if let dsn = SentryDSN(text) {
                let envelope = configuration.sentryEnvelope
                    ?? SentrySink.envelope(data: configuration.sentryData, publicKey: dsn.publicKey, beforeSend: configuration.sentryBeforeSend,
                                           minidump: configuration.sentryMinidump)
                sentry = SentrySink(dsn: dsn, policy: configuration.sentryUpload, data: configuration.sentryData, envelope: envelope,
                                    facts: SentryRunFacts(release: release, environment: configuration.sentryEnvironment,
                                                          dist: configuration.sentryDist,
                                                          serverName: configuration.sentryData.hostDetails ? HostName.current() : nil),
                                    appVersion: configuration.appVersion, recordDirectory: configuration.recordDirectory,
                                    sessions: configuration.sentrySessions, sessionBatching: configuration.sentrySessionBatching)
            } else {
                dsnError = "not a Sentry DSN (https://<key>@<host>/<project id>): \(text.prefix(200))"
            }
        }
        var otlp: OTLPSink?
        if let endpoint = configuration.otlpLogsEndpoint {
            var settings = OTLPSink.Settings(endpoint: endpoint)
            settings.headers = configuration.otlpHeaders
            settings.gzip = configuration.otlpGzip
            settings.serviceName = configuration.otlpServiceName
            settings.appName = configuration.appName
            settings.resourceAttributes = configuration.otlpResourceAttributes
            settings.data = configuration.otlpData
            otlp = OTLPSink(settings: settings, policy: configuration.otlpUpload, recordDirectory: configuration.recordDirectory)
        }
        // A DSN that does not parse still names a sink the app wants: its records and runs wait.
        let unconfigured: [any CrashRecordSink] = dsnError.map {
            [MisconfiguredSink(id: .sentry, reason: "the Sentry DSN is \($0)")]
        } ?? []
        return ((sentry.map { [$0] } ?? []) + unconfigured + (otlp.map { [$0] } ?? []) + configuration.sinks, otlp, dsnError)
    }

    /// Starts capture (or adopts the app's) on the caller's thread, first: a crash from here on is
    /// recorded, with this run's id, in this directory, and uploaded at crash time as configured.
    private static func startCapture(_ configured: CrashHandler.Configuration, _ configuration: Configuration, sinks: [any CrashRecordSink],
                                     otlp: OTLPSink?, limits: RecordDirectoryLimits)
        -> (result: Result<CrashHandler.StartResult, CrashCaptureError>, uploaderError: String?) {
        var capture = configured
        var uploaderError: String?
        let sentryDSN = configuration.sentryDSN.flatMap { SentryDSN($0) != nil ? $0 : nil }
        if let uploader = configuration.crashTimeUploader, sentryDSN != nil || otlp != nil {
            if configuration.sentryBeforeSend != nil, sentryDSN != nil {
                // The hook is the app's code: only the app can run it (the next launch does).
                uploaderError = "crash-time upload is off: a sentryBeforeSend hook runs only in the app (the next launch sends every record)"
            } else {
                // The sinks the app has, so that the uploader's acknowledgment leaves the record to them.
                switch CrashTimeUpload.uploader(configured: uploader, recordDirectory: configuration.recordDirectory,
                                                sinks: sinks.map(\.id), dsn: sentryDSN, otlp: otlp?.settings,
                                                otlpTimeout: configuration.otlpUpload.requestTimeout, limits: limits,
                                                data: configuration.sentryData, sessions: configuration.sentrySessions) {
                case .success(let found): capture.uploader = found
                case .failure(let unavailable): uploaderError = unavailable.description
                }
            }
        }
        do {
            if CrashHandler.isInstalled {
                let adopted = try CrashHandler.adopt(capture)
                Logger(label: "CrashReporter").info(
                    "CrashReporting.start: capture was already running (CrashHandler.start); the reporter applied its own configuration to it (records in \(configuration.recordDirectory)).")
                return (.success(adopted), uploaderError)
            }
            return (.success(try CrashHandler.start(capture)), uploaderError)
        } catch let error as CrashCaptureError {
            return (.failure(error), uploaderError)
        } catch {
            return (.failure(CrashCaptureError(operation: "start: \(error)", errno: 0)), uploaderError)
        }
    }


    /// What `shutdown(timeout:)` achieved.
    public struct ShutdownResult: Sendable, Equatable {
        /// Every record handed to Sentry was sent or given up (`true` without a DSN).
        public var sentToSentry: Bool
        /// Every other sink that takes part in the run's end (the OTLP sink too) handed on what
        /// it had by the deadline.
        public var sinksFinished: Bool
    }

    /// Ends the run for every sink within `timeout` (default 3 s), all at once: what the Sentry
    /// sink has not sent by then it sends next launch; every other sink gets the same deadline
    /// (the analytics stores `$AppEnd` and uploads).
    @discardableResult
    public func shutdown(timeout: Duration? = nil) -> ShutdownResult {
        let results = current.endSinks(deadline: SuspendingClock.now.advanced(by: timeout ?? .seconds(3)))
        return ShutdownResult(sentToSentry: results.allSatisfy { $0.id != .sentry || $0.finished },
                              sinksFinished: results.allSatisfy { $0.id == .sentry || $0.finished })
    }

    /// ``shutdown(timeout:)`` for async code: the wait never holds the caller's executor (nor a
    /// thread of Swift's cooperative pool); it waits on a thread of its own (once per run: not
    /// on a dispatch worker, which would link the Dispatch overlay into every program).
    @discardableResult
    public func shutdown(timeout: Duration? = nil) async -> ShutdownResult {
        await withCheckedContinuation { continuation in
            let started = OSThread.start(name: "CrashReporter.end") { [self] in continuation.resume(returning: shutdown(timeout: timeout)) }
            // No thread to be had: waited for here, as the blocking shutdown does.
            if !started { continuation.resume(returning: shutdown(timeout: timeout)) }
        }
    }
}

/// Ends, at a normal process exit (`exit`, a return from `main`), the run of every reporter that
/// did not shut down: what its Sentry sink is sending gets a second to arrive, and its marker
/// says `exited`, so the next launch does not take the run for a killed one. One `atexit` handler for the process; reporters are held weakly. A child that
/// `fork`ed and exits ends nothing: the run is its parent's.
enum RunEndHook {
    private struct Entry: Sendable {
        weak var reporting: CrashReporting?
    }
    private struct State: Sendable {
        var entries: [Entry] = []
        var installed = false
        var pid: Int32 = 0
    }
    private static let state = Mutex(State())

    static func register(_ reporting: CrashReporting) {
        let install: Bool = state.withLock { state in
            state.entries.removeAll { $0.reporting == nil }
            state.entries.append(Entry(reporting: reporting))
            defer { state.installed = true; state.pid = getpid() }
            return !state.installed
        }
        if install { atexit { RunEndHook.runAtExit() } }
    }

    private static func runAtExit() {
        let reporters: [CrashReporting] = state.withLock { state in
            defer { state.entries.removeAll() }
            return state.pid == getpid() ? state.entries.compactMap(\.reporting) : []
        }
        // Bounded: the launch thread writes the marker within milliseconds of start.
        let deadline = SuspendingClock.now.advanced(by: .seconds(1))
        for reporting in reporters { _ = reporting.current.endSinks(deadline: deadline) }
    }
}
