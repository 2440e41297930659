// SensorsAnalytics.swift — the Sensors analytics as one sink of CrashReporting.
//
// The reporter owns the launch; the analytics takes part in it through a sink's launch hooks:
//   attach   — the tracker is made for the reporter's run (its run id is the one capture writes
//              into a record) and the crash `$AppEnd` publisher is connected to it;
//   prepare  — the tracker loads its identity and super properties from the store and publishes
//              them (a crash from then on carries them);
//   records  — each record becomes `AppCrashed` + `$AppEnd` in the store (EventsSink);
//   finish   — this run's marker, the dead runs' abnormal `$AppEnd`s, `$AppStart`, the writer.
// Nothing of this is linked by a program that does not add the sink: CrashReporter knows no
// SQLite, no event model.
public import CrashReporter
@_exported public import SensorsEvents
@_exported public import SensorsTracking
public import Foundation
import CrashCapture
import CrashRecordFormat
import Synchronization

extension RecordSinkID {
    /// The Sensors events sink (`AppCrashed` and `$AppEnd` in the tracking store).
    package static let events = RecordSinkID("events")!
}

/// The Sensors analytics: an events store (SQLite) with its `Tracker`, fed with every crash
/// record (`AppCrashed` + `$AppEnd`) and every run (`$AppStart`, `$AppEnd`, the abnormal ends of
/// runs that vanished), uploaded to a Sensors `/sa` endpoint when one is given.
///
/// Add it to the reporter's sinks; its tracker exists from `CrashReporting.start(_:)` on:
/// ```swift
/// let analytics = SensorsAnalytics(storePath: "/var/lib/myapp/events.sqlite",
///                                  endpoint: URL(string: "https://sa.example.com/sa?project=prod"))
/// var configuration = CrashReporting.Configuration(recordDirectory: "/var/lib/myapp/crashes", appName: "myapp", appVersion: "1.4.2")
/// configuration.sinks.append(analytics)
/// let reporting = CrashReporting.start(configuration)
/// analytics.tracker?.track("Checkout", properties: ["items": .int(3)])
/// ```
public final class SensorsAnalytics: CrashRecordSink {
    /// What the analytics did at the launch.
    public struct LaunchReport: Sendable, Equatable {
        /// Records whose `AppCrashed` (+ `$AppEnd`) the store now has.
        public var recordsIngested: [String] = []
        /// Records whose events an earlier launch (or another process) had stored.
        public var recordsAlreadyIngested: [String] = []
        /// Records the reader rejected, stored as an `AppCrashed` that says so.
        public var recordsUnreadable: [String] = []
        /// Runs that vanished without an `$AppEnd` or a record, now ended by an abnormal (or
        /// `oom`) one (see `Tracker.abnormalEnds`).
        public var abnormalEnds: [String] = []
        /// Why records could not be stored (they wait for the next launch).
        public var errors: [String] = []
    }

    public var id: RecordSinkID { .events }

    private let storePath: String
    private let endpoint: URL?
    private let configure: (@Sendable (inout Tracker.Configuration) -> Void)?
    private struct State {
        var tracker: Tracker?
        var recordDirectory: String?
        var events: EventsSink?
        var shutdown: Tracker.ShutdownResult?
    }
    private let state = Mutex(State())
    private let launched = Latch<LaunchReport>()

    /// - Parameters:
    ///   - storePath: the SQLite store (created with its directory if missing).
    ///   - endpoint: the Sensors `/sa` URL; `nil` keeps the events in the store.
    ///   - tracker: adjusts the tracker's configuration (limits, upload policy, exit hook) before it starts.
    public init(storePath: String, endpoint: URL? = nil, tracker: (@Sendable (inout Tracker.Configuration) -> Void)? = nil) {
        // Its launch uses the events store only, each wait bounded by the store's busy timeout.
        BoundedLaunchSinks.register(SensorsAnalytics.self)
        self.storePath = storePath
        self.endpoint = endpoint
        configure = tracker
    }

    /// The tracker, once the reporter started with this sink (`nil` before).
    public var tracker: Tracker? { state.withLock { $0.tracker } }

    /// What the launch did. Waits until the reporter's launch is done.
    public var launchReport: LaunchReport { launched.wait() }

    /// What the tracker's shutdown achieved, once the reporter shut down.
    public var shutdownResult: Tracker.ShutdownResult? { state.withLock { $0.shutdown } }

    public func attach(to run: ReportingRun) {
        var configuration = Tracker.Configuration(storePath: storePath, appName: run.appName, appVersion: run.appVersion, endpoint: endpoint)
        configure?(&configuration)
        configuration.runID = run.runID
        // CrashCapture's compensating $AppEnd follows what the tracker's events carry (identity,
        // super properties): the tracker publishes its context as soon as its launch has loaded
        // it, and on every change; an integrator's own callback, if any, still runs after it.
        let appEnd = CrashAppEndPublisher(appName: run.appName, appVersion: run.appVersion, runID: run.runID)
        let integratorCallback = configuration.onEventContextChange
        configuration.onEventContextChange = { context in
            appEnd.publish(context)
            integratorCallback?(context)
        }
        let tracker = Tracker(hostedLaunch: configuration, store: TrackingStore(deferringOpen: storePath, limits: configuration.limits))
        state.withLock {
            $0.tracker = tracker
            $0.recordDirectory = run.recordDirectory
        }
    }

    public func prepareLaunch() -> String? {
        guard let tracker else { return "not attached to a CrashReporting" }
        guard let store = tracker.beginLaunch() else {
            return "the events store cannot be opened: \(tracker.launchError.map { "\($0)" } ?? "unknown")"
        }
        let events = EventsSink(store: store, appName: tracker.configuration.appName, appVersion: tracker.configuration.appVersion,
                                extraPresets: tracker.extraPresets)
        state.withLock { $0.events = events }
        return nil
    }

    public func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult {
        guard let events = state.withLock({ $0.events }) else { return .later(reason: "the events store is not open") }
        return events.take(record, receipt: receipt)
    }

    /// The runs the reporter found ended: each that this store still holds as running (it
    /// stored no `$AppEnd`) gets one now — `abnormal`, `oom` when the OOM killer ended it, `normal`
    /// for a run that exited without storing its own. A crashed run's `$AppEnd` comes with its record.
    public func takeRuns(_ runs: [EndedRun]) -> Bool {
        guard let tracker, state.withLock({ $0.events != nil }) else { return false }
        tracker.endRuns(runs.compactMap { run in
            switch run.end {
            case .killed(let oom):
                // Its end and duration: the ledger's last sighting of it (2 s at most before it died).
                return Tracker.HostedRunEnd(runID: run.runID, reason: oom ? .oom : run.fatalRecord != nil ? .hang : .abnormal, wallMilliseconds: run.lastSeen?.wallMilliseconds,
                                            durationSeconds: run.lastSeen.map { Double($0.durationNanoseconds) / 1e9 })
            case .exited(let wall, let duration):
                return Tracker.HostedRunEnd(runID: run.runID, reason: .normal, wallMilliseconds: wall, durationSeconds: Double(duration) / 1e9)
            case .crashed: return nil
            }
        })
        return true
    }

    public func finishLaunch() {
        let (tracker, events, directory) = state.withLock { ($0.tracker, $0.events, $0.recordDirectory) }
        var report = LaunchReport()
        if let tracker, let events {
            // The claims of records no longer in the directory can go (after their retention),
            // at a launch that opened the store (a quiet one leaves it closed: LaunchJournal.swift).
            if tracker.store.isOpen {
                let present = directory.flatMap { try? RecordFileName.names(in: $0) } ?? []
                events.pruneClaims(keeping: Set(present))
            }
            // Every run's end is the reporter's to tell (takeRuns): the store keeps only which
            // identity each run had.
            tracker.completeLaunch()
            report.recordsIngested = events.report.recordsIngested
            report.recordsAlreadyIngested = events.report.recordsAlreadyIngested
            report.recordsUnreadable = events.report.recordsUnreadable
            report.errors = events.report.errors
            report.abnormalEnds = tracker.abnormalEnds
        } else if let error = tracker?.launchError {
            report.errors = ["\(error)"]
        }
        launched.open(report)
    }

    public func shutdown(deadline: SuspendingClock.Instant) -> Bool {
        guard let tracker else { return true }
        let left = SuspendingClock.now.duration(to: deadline)
        let result = tracker.shutdown(fromHostWithin: max(left, .zero))
        state.withLock { $0.shutdown = result }
        return result.stored && (endpoint == nil || result.uploaded)
    }
}

extension CrashReporting {
    /// The Sensors analytics among the reporter's sinks, if one was added.
    public var analytics: SensorsAnalytics? { sinks.lazy.compactMap { $0 as? SensorsAnalytics }.first }

    /// The analytics' tracker, if the reporter has the analytics sink.
    public var tracker: Tracker? { analytics?.tracker }

    /// Capture, Sentry when `SENTRY_DSN` is set, and the Sensors analytics: records in
    /// `<directory>/records`, the events store in `<directory>/events.sqlite`, uploaded to
    /// `endpoint` when given.
    public static func start(directory: String, appName: String, appVersion: String, endpoint: URL? = nil) -> CrashReporting {
        start(Configuration(directory: directory, appName: appName, appVersion: appVersion, endpoint: endpoint))
    }
}

extension CrashReporting.Configuration {
    /// Records in `<directory>/records`; the Sensors analytics' store in
    /// `<directory>/events.sqlite`, uploaded to `endpoint` when given; Sentry when `SENTRY_DSN` is set.
    public init(directory: String, appName: String, appVersion: String, endpoint: URL? = nil,
                tracker: (@Sendable (inout Tracker.Configuration) -> Void)? = nil) {
        self.init(recordDirectory: "\(directory)/records", appName: appName, appVersion: appVersion)
        sinks.append(SensorsAnalytics(storePath: "\(directory)/events.sqlite", endpoint: endpoint, tracker: tracker))
    }
}
