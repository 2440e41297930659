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

    /// The launch's result, set once by the launch thread.
    let launched = Latch<LaunchReport>()
    /// Open once the end of the run need not wait for the launch any longer: the records and the
    /// runs that ended were handed to the sinks, and, where a sink of the app's takes part in the
    /// launch (the analytics' `$AppStart`), its launch is done too. This run's marker (and its
    /// OOM-kill counter) is not waited for: a run that ends first writes it itself.
    private let handedOver = Latch<Bool>()
    /// The run markers beside the records.
    private let ledger: RunLedger
    /// When this run started (the call to ``start(_:)``), its marker (written by the launch
    /// thread, or with its end by the end of a run that came first) and its end (once).
    private let started: (wall: Int64, monotonic: Int64)
    private let marker = MarkerCell()
    private final class MarkerCell: Sendable {
        let state = Mutex(MarkerState.none)
    }
    private enum MarkerState: Sendable {
        case none
        case begun(RunStart)
        /// Written with its end, or given up (it could not be written).
        case done
    }
    private let ended = Mutex(false)
    private let sinksEnded = Mutex(false)
    /// Keeps this run's marker current while it runs (last seen, the OOM-kill counter).
    private let runWatch = RunWatch()
    /// What this run's marker says of it beside its start.
    private let markerFacts: MarkerFacts
    private struct MarkerFacts: Sendable {
        var release: String, environment: String, dist: String?
    }

    /// What the launch did with earlier records. Waits until the launch is done.
    public var launchReport: LaunchReport { launched.wait() }

    /// A reporter let go of stops keeping its run's marker current (its shutdown stopped that
    /// already; this is for one that never shut down).
    deinit { runWatch.stop() }

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
        return running.withLock { running in
            if let running = running.reporting, !running.ended.withLock({ $0 }) {
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
        started = (Clock.wallMilliseconds(), Clock.monotonicNanoseconds())
        ledger = RunLedger(recordDirectory: configuration.recordDirectory)
        // By hand and cheap (no Foundation URL): parsed on the caller's thread.
        let dsnText = configuration.sentryDSN
        let parsedDSN = dsnText.flatMap(SentryDSN.init)
        var uploaderError: String?
        // Capture the app started itself is taken over (CrashHandler.adopt): what this
        // configuration sets replaces the app's — the record directory, app name and version, the
        // run id, hang detection when set, crash-time upload when configured, and whatever the
        // `capture` closure sets — and every other setting stays as the app set it.
        var captureConfiguration = CrashHandler.runningConfiguration ?? CrashHandler.Configuration(directory: "", appName: "", appVersion: "")
        captureConfiguration.directory = configuration.recordDirectory
        captureConfiguration.appName = configuration.appName
        captureConfiguration.appVersion = configuration.appVersion
        captureConfiguration.runID = ""   // the reporter's run, never the app's
        if let hangDetection = configuration.hangDetection { captureConfiguration.hangDetection = hangDetection }
        configuration.capture?(&captureConfiguration)
        if captureConfiguration.runID.isEmpty { captureConfiguration.runID = randomUUIDText() }
        let run = ReportingRun(runID: captureConfiguration.runID, appName: configuration.appName, appVersion: configuration.appVersion,
                               recordDirectory: configuration.recordDirectory)
        self.run = run
        let limits = RecordDirectoryLimits(maxRecords: captureConfiguration.maxRecords, maxBytes: captureConfiguration.maxRecordBytes)
        let release = configuration.sentryRelease ?? "\(configuration.appName)@\(configuration.appVersion)"
        var sentry: SentrySink?
        var dsnError: String?
        if let text = dsnText {
            if let dsn = parsedDSN {
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
        sentryDSNError = dsnError
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
        let sinks: [any CrashRecordSink] = (sentry.map { [$0] } ?? []) + unconfigured + (otlp.map { [$0] } ?? []) + configuration.sinks
        self.sinks = sinks
        // Before capture: a crash from here on finds each sink knowing its run (the analytics
        // publishes the crash `$AppEnd` for this run id).
        for sink in sinks { sink.attach(to: run) }
        if configuration.captureCrashes {
            var capture = captureConfiguration
            let sentryDSN = parsedDSN != nil ? dsnText : nil
            if let configured = configuration.crashTimeUploader, sentryDSN != nil || otlp != nil {
                if configuration.sentryBeforeSend != nil, sentryDSN != nil {
                    // The hook is the app's code: only the app can run it (the next launch does).
                    uploaderError = "crash-time upload is off: a sentryBeforeSend hook runs only in the app (the next launch sends every record)"
                } else {
                    // The sinks the app has, so that the uploader's acknowledgment leaves the record to them.
                    switch CrashTimeUpload.uploader(configured: configured, recordDirectory: configuration.recordDirectory,
                                                    sinks: sinks.map(\.id), dsn: sentryDSN, otlp: otlp?.settings,
                                                    otlpTimeout: configuration.otlpUpload.requestTimeout, limits: limits,
                                                    data: configuration.sentryData, sessions: configuration.sentrySessions) {
                    case .success(let uploader): capture.uploader = uploader
                    case .failure(let unavailable): uploaderError = unavailable.description
                    }
                }
            }
            // Capture first and on the caller's thread: a crash from here on is recorded. Capture
            // the app started itself is adopted: this configuration is applied to it, so that its
            // records come here with this run's id, and crash-time upload is on as configured.
            do {
                if CrashHandler.isInstalled {
                    captureResult = .success(try CrashHandler.adopt(capture))
                    Logger(label: "CrashReporter").info(
                        "CrashReporting.start: capture was already running (CrashHandler.start); the reporter applied its own configuration to it (records in \(configuration.recordDirectory)).")
                } else {
                    captureResult = .success(try CrashHandler.start(capture))
                }
            } catch let error as CrashCaptureError {
                captureResult = .failure(error)
            } catch {
                captureResult = .failure(CrashCaptureError(operation: "start: \(error)", errno: 0))
            }
        } else {
            captureResult = nil
        }
        let uploaderNote = uploaderError
        let launched = self.launched, handedOver = self.handedOver, marker = self.marker, ledger = self.ledger, started = self.started
        let runWatch = self.runWatch, sentrySink = sentry
        let environment = configuration.sentryEnvironment, dist = configuration.sentryDist
        markerFacts = MarkerFacts(release: release, environment: environment, dist: dist)
        let endFollowsLaunch = !configuration.sinks.isEmpty
        // A hang or snapshot record goes to the sinks while the process lives, from a thread of
        // its own (the Swift pool may be the thing that is stuck), once the launch has offered
        // the earlier records; the inbox's acknowledgments keep it from being sent twice. A
        // snapshot waits 10 s first: the person who asked for it (crash-inspect snapshot) reads it
        // before a sink's acknowledgment deletes it.
        if captureResult != nil {
            HangDetector.onRecord { path, snapshot in
                let name = String(path.split(separator: "/").last ?? "")
                OSThread.start(name: "CrashReporter.hang") {
                    if snapshot { usleep(10_000_000) }
                    _ = launched.wait(until: .now + .seconds(60))
                    _ = RecordInbox(directory: run.recordDirectory, sinks: sinks, limits: limits).pass(only: name)
                }
            }
        }
        // The launch's phases, run once by whichever thread claims them first: the launch
        // thread, or the end of the run (shutdown, the exit hook) when it comes before that
        // thread has begun, as in a short program; `byTheEnd` then says the run is ending.
        let phases: @Sendable (_ byTheEnd: Bool) -> (start: RunStart, counter: String?)? = { byTheEnd in
            // The records' directory (capture made it, unless capture is off).
            let directoryError = (try? Directory.create(run.recordDirectory)) == nil
            // This run's marker: with the app's sinks, once they have taken the records and the
            // runs that ended and before they finish their launch, since one may then keep a run
            // of its own (the analytics' row, stored with its `$AppStart`, which its `$AppEnd`
            // comes from) and is told only the runs the ledger knows; a run killed before its
            // marker would leave that row for good. Written after the runs were handed out, it
            // is written into the file of a finished claim (RunLedger.finish), not a new one.
            // Without them (Sentry alone), after the launch, which the end of the run then does
            // not wait for: the file work is not in a short program's way (measured: ≈ 0.9 ms
            // when it was), a run that ends first writes the marker itself, and one killed before
            // it is written is not told.
            // With the app's sinks the marker is written without the memory cgroup's OOM-kill
            // counter: finding it (/proc/self/cgroup, /proc/self/mountinfo, parsed) costs ≈ 0.3 ms
            // that the end of a short program would wait for. It is found and read after the
            // launch, and appended to the marker unless the run has ended by then (a run killed
            // in between has no reading and is told `killed`, not `oom`).
            var markerError: String?
            var watched: (start: RunStart, counter: String?)?
            func beginMarker(locatingCounter: Bool) {
                do {
                    if directoryError { try Directory.create(run.recordDirectory) }
                    let counter = locatingCounter ? OOMKillCounter.locate() : nil
                    let start = RunStart(runID: run.runID, process: .current, startWallMilliseconds: started.wall,
                                         startMonotonicNanoseconds: started.monotonic, appName: run.appName,
                                         appVersion: run.appVersion, oomKills: counter.flatMap(OOMKillCounter.read),
                                         release: release, environment: environment, dist: dist)
                    // Unless the run ended first: its marker then has its end already (endRun).
                    let begun = try marker.state.withLock { state throws -> Bool in
                        guard case .none = state else { return false }
                        try ledger.begin(start)
                        state = .begun(start)
                        return true
                    }
                    if begun { watched = (start, counter) }
                } catch {
                    markerError = "this run's marker: \(error)"
                    marker.state.withLock { state in if case .none = state { state = .done } }
                }
            }
            /// The OOM-kill counter of a marker begun without it: found, read, and written into
            /// the marker while the run has not ended (under the marker's lock: endRun's end is
            /// never overwritten).
            func addCounter(to begun: (start: RunStart, counter: String?)) -> (start: RunStart, counter: String?) {
                guard let counter = OOMKillCounter.locate(), let reading = OOMKillCounter.read(counter) else { return begun }
                return marker.state.withLock { state in
                    guard case .begun(var start) = state else { return begun }
                    guard (try? ledger.appendCounter(start, reading)) != nil else { return begun }
                    start.oomKills = reading
                    state = .begun(start)
                    return (start, counter)
                }
            }
            var report = Self.launch(in: run.recordDirectory, sinks: sinks, ledger: ledger, excluding: run.runID, limits: limits,
                                     beforeFinishing: endFollowsLaunch ? { beginMarker(locatingCounter: false) } : nil)
            if !endFollowsLaunch {
                handedOver.open(true)
                // A run that is ending writes its marker with its end (endRun).
                if !byTheEnd { beginMarker(locatingCounter: true) }
            }
            if let markerError { report.errors.append(markerError) }
            if let uploaderNote { report.errors.append(uploaderNote) }
            launched.open(report)
            handedOver.open(true)
            // An exited run's OOM-kill counter is never read: a run that is ending needs none.
            if byTheEnd { return nil }
            if endFollowsLaunch, let begun = watched { watched = addCounter(to: begun) }
            return watched
        }
        // This package's own sinks are known by type; the analytics registers its own.
        let bounded = [ObjectIdentifier(SentrySink.self), ObjectIdentifier(OTLPSink.self), ObjectIdentifier(MisconfiguredSink.self)]
        let launchOnce = LaunchOnce(phases, endMayRun: sinks.allSatisfy {
            bounded.contains(ObjectIdentifier(type(of: $0))) || BoundedLaunchSinks.contains($0)
        })
        self.launchOnce = launchOnce
        RunEndHook.register(self)
        OSThread.start(name: "CrashReporter.launch") {
            guard launchOnce.claim(), let watched = phases(false) else { return }
            // Then, on this thread, the marker kept current while the run lives.
            // (Sessions that came due since are sent from here: no thread waits for them.)
            // Each rewrite under the marker's lock, and only while the run has not ended:
            // an end written meanwhile (endRun) is never overwritten by a refresh.
            let refresh = { (reading: OOMKillReading?, seen: RunLastSeen) -> Bool in
                marker.state.withLock { state in
                    guard case .begun = state else { return false }
                    return (try? ledger.refresh(runID: run.runID, oomKills: reading, seen: seen)) != nil
                }
            }
            runWatch.watch(watched.start, counter: watched.counter, refresh: refresh) { sentrySink?.sendSessionsIfDue() }
        }
    }

    /// The launch, once (see ``LaunchOnce``).
    private let launchOnce: LaunchOnce
    /// The launch's phases and who runs them: the launch thread, started by ``start(_:)``, or,
    /// when the run ends before that thread has begun (a short program calls `shutdown` right
    /// after `start`), the thread that ends it, which then runs them itself instead of waiting
    /// for a thread to start and to wake it (measured: ≈ 0.1 ms for the thread to begin and
    /// 0.25–0.5 ms for the waiting thread to be woken on this project's virtual machines). Only
    /// when every sink's launch is bounded (`BoundedLaunchSinks`): an app's own sink may block in
    /// it, and the end of the run then waits for the launch thread no longer than its deadline.
    private final class LaunchOnce: Sendable {
        private let claimed = Atomic(false)
        private let endMayRun: Bool
        /// The phases; `byTheEnd` when the end of the run runs them. Returns this run's marker
        /// to keep current (the launch thread's).
        let phases: @Sendable (_ byTheEnd: Bool) -> (start: RunStart, counter: String?)?
        init(_ phases: @escaping @Sendable (_ byTheEnd: Bool) -> (start: RunStart, counter: String?)?, endMayRun: Bool) {
            self.phases = phases
            self.endMayRun = endMayRun
        }
        /// `true` for the first caller only: it runs the phases.
        func claim() -> Bool { claimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged }
        /// The end of the run runs the phases when they have not begun and it may (see above).
        func runByTheEnd() {
            if endMayRun, claim() { _ = phases(true) }
        }
    }

    /// The launch's phases over `sinks` (LaunchPhases.swift), on the caller's thread: with a
    /// ledger, the runs that ended (but `excluding`) are classified and handed out after the records.
    package static func launch(in directory: String, sinks: [any CrashRecordSink], ledger: RunLedger? = nil, excluding runID: String = "",
                               limits: RecordDirectoryLimits = .standard, beforeFinishing: (() -> Void)? = nil) -> LaunchReport {
        var unavailable: [RecordSinkID: String] = [:]
        for sink in sinks {
            if let reason = sink.prepareLaunch() { unavailable[sink.id] = reason }
        }
        let offered: [any CrashRecordSink] = sinks.map { sink in
            unavailable[sink.id].map { UnavailableSink(id: sink.id, reason: $0) } ?? sink
        }
        let inbox = RecordInbox(directory: directory, sinks: offered, limits: limits).pass()
        var report = LaunchReport(inbox)
        if let ledger {
            let runs = ledger.classify(recordRuns: inbox.recordRuns, excluding: runID)
            report.runsEnded = runs.outcomes
            report.runsRunning = runs.running
            report.errors += runs.errors
            if !runs.outcomes.isEmpty {
                var taken = true
                for sink in sinks where !sink.takeRuns(runs.outcomes) {
                    taken = false
                    report.errors.append("runs: \(sink.id): kept for the next launch")
                }
                // A sink that could not take them: claimed still, a later launch hands them out again.
                if taken { ledger.finish(runs.outcomes) }
            }
        }
        beforeFinishing?()
        for sink in sinks { sink.finishLaunch() }
        return report
    }

    /// The end of this run, in its marker (once): ``shutdown(timeout:)`` and the exit hook. When
    /// the launch thread has not written the marker yet, it is written here, with its end (the
    /// launch thread then leaves it), so that a short program never waits for that thread.
    func endRun() {
        guard ended.withLock({ done in defer { done = true }; return !done }) else { return }
        runWatch.stop()
        let end = RunEnd.exited(wallMilliseconds: Clock.wallMilliseconds(), durationNanoseconds: Clock.monotonicNanoseconds() - started.monotonic)
        let run = self.run, ledger = self.ledger, started = self.started, facts = markerFacts
        marker.state.withLock { state in
            switch state {
            case .begun(let start):
                try? ledger.appendEnd(start, end)
            case .none:
                // An exited run's OOM-kill counter is never read: the marker needs none.
                let start = RunStart(runID: run.runID, process: .current, startWallMilliseconds: started.wall,
                                     startMonotonicNanoseconds: started.monotonic, appName: run.appName, appVersion: run.appVersion,
                                     oomKills: nil, release: facts.release, environment: facts.environment, dist: facts.dist)
                if (try? Directory.create(run.recordDirectory)) != nil { try? ledger.end(start, end) }
            case .done:
                break
            }
            state = .done
        }
    }

    /// The end of the run for every sink, then for the ledger: ``shutdown(timeout:)`` and the exit
    /// hook. The records and the runs that ended reach the sinks in the launch, so that is waited
    /// for first (within the deadline; not this run's own marker, see ``handedOver``); then every
    /// sink hands on what it has, all at once and each by the same deadline (one slow backend
    /// takes no time from another); then this run's marker says it ended, after what the sinks
    /// stored of the end (a session cut off mid-request would be sent again by the next launch
    /// and counted twice). Returns each sink's answer.
    /// Once: a later call (the exit hook after ``shutdown(timeout:)``) finds nothing to end.
    func endSinks(deadline: SuspendingClock.Instant) -> [(id: RecordSinkID, finished: Bool)] {
        guard sinksEnded.withLock({ done in defer { done = true }; return !done }) else { return [] }
        // A launch that has not begun is run here (see ``LaunchOnce``); one under way is waited for.
        launchOnce.runByTheEnd()
        _ = handedOver.wait(until: deadline)
        let sinks = self.sinks
        var finished: [Bool]
        if sinks.count <= 1 {
            // One sink (the common case: Sentry alone): on this thread, no thread started.
            finished = sinks.map { $0.shutdown(deadline: deadline) }
        } else {
            // The others each on a thread of their own; a sink not done a moment after the
            // deadline counts as not finished, and the run still ends.
            let results = Mutex([Bool](repeating: false, count: sinks.count))
            let left = Atomic(sinks.count - 1)
            let done = Latch<Bool>()
            for (index, sink) in sinks.enumerated().dropFirst() {
                OSThread.start(name: "CrashReporter.end") {
                    let ended = sink.shutdown(deadline: deadline)
                    results.withLock { $0[index] = ended }
                    if left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.open(true) }
                }
            }
            let first = sinks[0].shutdown(deadline: deadline)
            results.withLock { $0[0] = first }
            _ = done.wait(until: max(deadline, .now) + .milliseconds(100))
            finished = results.withLock { $0 }
        }
        endRun()
        return zip(sinks, finished).map { (id: $0.id, finished: $1) }
    }

    /// One inbox pass over `directory`: every record to every sink that lacks it.
    package static func deliverRecords(in directory: String, sinks: [any CrashRecordSink], limits: RecordDirectoryLimits = .standard) -> LaunchReport {
        LaunchReport(RecordInbox(directory: directory, sinks: sinks, limits: limits).pass())
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
        let results = endSinks(deadline: SuspendingClock.now.advanced(by: timeout ?? .seconds(3)))
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
        for reporting in reporters { _ = reporting.endSinks(deadline: deadline) }
    }
}

/// Keeps a running run's marker current: every 2 s it says when the run was last seen alive
/// (what a killed run's duration is, for Sentry's session and the analytics' `$AppEnd`), and its
/// memory cgroup's OOM-kill counter is read again (a few small reads) so that a neighbour in the
/// cgroup killed by the OOM killer earlier in the run is not taken for this run's own later
/// SIGKILL. One small file rewritten every 2 s, by the launch thread once its launch is done: no
/// thread of its own, and no dispatch timer (resuming one starts libdispatch's manager and worker
/// threads, which every launch would pay). A program that exits within 2 s never rewrites it.
final class RunWatch: Sendable {
    private let stopped = Latch<Bool>()
    static let interval = Duration.seconds(2)

    /// Rewrites the marker of `run` every ``interval`` from its start until ``stop()``, on the
    /// calling thread (returns at once when stopped already), calling `tick` after each.
    /// `refresh` rewrites it (with a changed OOM-kill reading, if any) and says whether it did.
    func watch(_ run: RunStart, counter: String?, refresh: (OOMKillReading?, RunLastSeen) -> Bool, tick: () -> Void = {}) {
        var last = run.oomKills?.kills
        let began = SuspendingClock.now - Duration.nanoseconds(max(0, Clock.monotonicNanoseconds() - run.startMonotonicNanoseconds))
        var next = began + Self.interval
        while stopped.wait(until: max(next, .now)) == nil {
            var changed: OOMKillReading?
            if let counter, let reading = OOMKillCounter.read(counter), last != reading.kills { changed = reading }
            let seen = RunLastSeen(wallMilliseconds: Clock.wallMilliseconds(),
                                   durationNanoseconds: max(0, Clock.monotonicNanoseconds() - run.startMonotonicNanoseconds))
            if refresh(changed, seen), let changed { last = changed.kills }
            CrashHandler.noteRuntimeReports()   // what the runtime reported so far is no later crash's message
            tick()
            next = max(next + Self.interval, .now)
        }
    }

    func stop() { stopped.open(true) }
}
