// CrashReporting.swift — one call that wires capture and the next launch's delivery for an app.
public import CrashCapture
import HostFacts
import HTTPExchange
public import CrashReporterSentry
public import CrashReporterOTLP
import CrashSentry
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
        /// Sends each crash (and hang) record to Sentry (an event with the record attached, each run
        /// a release-health session; the <doc:Sentry> article). Defaults to `SENTRY_DSN` from the
        /// environment (with `SENTRY_ENVIRONMENT`, `SENTRY_RELEASE`, `SENTRY_DIST`); `nil` turns it off.
        public var sentry: SentryOptions? = SentryOptions.fromEnvironment()
        /// Sends each crash (and hang) record to an OpenTelemetry collector as one OTLP log record
        /// (the <doc:OpenTelemetry> article). Defaults to `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`, else
        /// `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/logs` appended (`OTEL_LOGS_EXPORTER=none`: off),
        /// with the exporter's other variables; `nil` turns it off.
        public var otlp: OTLPOptions? = OTLPOptions.fromEnvironment()
        /// What a crash's Sentry event, its attached record and its OTLP log record carry beyond
        /// the crash itself, for every sink that sends off the machine and for crash-time upload
        /// (CrashReporter.docc, "What leaves the machine"): by default no raw memory, no
        /// breadcrumbs, no identity, sanitised paths, no request query or key/values; the OS's
        /// and the host's details.
        public var dataPolicy = CrashDataPolicy()
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

        /// Records in `recordDirectory`, sent to Sentry when `SENTRY_DSN` is set (and to an
        /// OpenTelemetry collector when the OTLP exporter's variables name one), and to ``sinks``.
        public init(recordDirectory: String, appName: String, appVersion: String) {
            self.recordDirectory = recordDirectory
            self.appName = appName
            self.appVersion = appVersion
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
        var configuration = Configuration(recordDirectory: recordDirectory, appName: appName, appVersion: appVersion)
        configuration.sentry = sentryDSN.map { SentryOptions(dsn: $0) }
        return start(configuration)
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
        let facts = Self.runFacts(configuration)
        let built = Self.makeSinks(configuration, facts: facts)
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
                             facts: facts,
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

    /// What the run's marker says of the run beside its start: the release, environment and dist
    /// Sentry files it under, from the Sentry options or, without them, from the same defaults (a
    /// later launch that sends to Sentry files the run as this one would have).
    private static func runFacts(_ configuration: Configuration) -> CurrentRun.Facts {
        let sentry = configuration.sentry
        return CurrentRun.Facts(release: (sentry.map { $0.release } ?? SentryOptions.defaultRelease)
                                    ?? "\(configuration.appName)@\(configuration.appVersion)",
                                environment: sentry?.environment ?? SentryOptions.defaultEnvironment,
                                dist: sentry.map { $0.dist } ?? SentryOptions.defaultDist)
    }

    /// The sinks the configuration asks for: Sentry's (by hand and cheap, no Foundation URL: the
    /// DSN parsed on the caller's thread), the OTLP sink, the app's own.
    private static func makeSinks(_ configuration: Configuration, facts: CurrentRun.Facts)
        -> (sinks: [any CrashRecordSink], otlp: OTLPSink?, dsnError: String?) {
        var sentry: SentrySink?
        var dsnError: String?
        let data = configuration.dataPolicy
        if let options = configuration.sentry {
            if let dsn = SentryDSN(options.dsn) {
                let envelope = options.envelope
                    ?? SentrySink.envelope(data: data, publicKey: dsn.publicKey, beforeSend: options.beforeSend, minidump: options.minidump)
                sentry = SentrySink(dsn: dsn, policy: options.upload, data: data, envelope: envelope,
                                    facts: SentryRunFacts(release: facts.release, environment: facts.environment, dist: facts.dist,
                                                          serverName: data.hostDetails ? HostName.current() : nil),
                                    appVersion: configuration.appVersion, recordDirectory: configuration.recordDirectory,
                                    sessions: options.sessions, sessionBatching: options.sessionBatching)
            } else {
                dsnError = "not a Sentry DSN (https://<key>@<host>/<project id>): \(options.dsn.prefix(200))"
            }
        }
        var otlp: OTLPSink?
        if let options = configuration.otlp {
            otlp = OTLPSink(options: options, appName: configuration.appName, data: data, recordDirectory: configuration.recordDirectory)
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
        let sentryDSN = configuration.sentry.flatMap { SentryDSN($0.dsn) != nil ? $0.dsn : nil }
        if let uploader = configuration.crashTimeUploader, sentryDSN != nil || otlp != nil {
            if configuration.sentry?.beforeSend != nil, sentryDSN != nil {
                // The hook is the app's code: only the app can run it (the next launch does).
                uploaderError = "crash-time upload is off: a Sentry beforeSend hook runs only in the app (the next launch sends every record)"
            } else {
                // The sinks the app has, so that the uploader's acknowledgment leaves the record to them.
                switch CrashTimeUpload.uploader(configured: uploader, recordDirectory: configuration.recordDirectory,
                                                sinks: sinks.map(\.id), dsn: sentryDSN, otlp: configuration.otlp, limits: limits,
                                                data: configuration.dataPolicy, sessions: configuration.sentry?.sessions ?? true) {
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
