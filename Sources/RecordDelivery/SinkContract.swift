// SinkContract.swift — what a destination of crash records is, and what it is given.
//
// The reporter's launch (CrashReporter: RecordInbox, RunLedger, LaunchPhases) reads each record
// once and offers it to every sink that lacks it, then tells every sink the runs that ended. A
// sink is a leaf: it is told, it never calls back into the reporter that hosts it. The Sentry and
// OTLP sinks (CrashReporterSentry, CrashReporterOTLP), the Sensors analytics and an app's own
// sinks all implement this one protocol and nothing else of the reporter.
public import CrashRecordFormat
import Synchronization

/// A sink's name in the record directory's acknowledgments: 1–32 lowercase ASCII letters,
/// digits, `-` or `_`.
public struct RecordSinkID: Hashable, Sendable, CustomStringConvertible {
    /// The name as written in the acknowledgments.
    public let rawValue: String

    /// `nil` when `rawValue` is not 1–32 of `a-z`, `0-9`, `-`, `_`.
    public init?(_ rawValue: String) {
        guard RecordFileName.isSinkName(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
}

/// One record as every sink gets it: read and verified once by the inbox.
public struct InboxRecord: Sendable {
    /// The file name (`crash-<ms>-<pid>-<tid>.ccrec`, or `.ccrec.partial` for one whose writer died).
    public let name: String
    /// The file's path (the sinks' lease is taken on it).
    package let path: String
    /// The file's bytes as read (empty when it could not be read at all).
    public let bytes: [UInt8]
    /// The parsed record, or why the file is not a readable record. An unreadable record still
    /// says that a crash happened: each of our sinks reports it as such.
    public let record: Result<CrashRecord, CrashRecordError>
    /// What the record stands for beyond its own crash: the crashes folded into it when the
    /// directory was over its bounds, the crash loop it was part of.
    package var tally: RecordTally
    /// How the record's run started, from the reporter's run ledger (its release, environment,
    /// dist and start time, as the run had them): nil when the ledger does not know the run.
    /// The inbox looks it up; no sink reads the ledger itself.
    package var runStart: RunStart?

    package init(name: String, path: String, bytes: [UInt8], record: Result<CrashRecord, CrashRecordError>, tally: RecordTally = RecordTally(),
                 runStart: RunStart? = nil) {
        self.runStart = runStart
        self.name = name
        self.path = path
        self.bytes = bytes
        self.record = record
        self.tally = tally
    }
}

/// What a sink did with a record.
public enum SinkResult: Sendable, Equatable {
    /// The sink has the record for good: stored, sent, or given up with a reason it reports.
    case delivered
    /// The sink took the record and calls its ``SinkReceipt/acknowledge()`` once it has it.
    case accepted
    /// Not now (the store is locked, another process sends it…): the next launch offers it again.
    case later(reason: String)
}

/// Given to a sink with each record: the sink's acknowledgment, for a sink that delivers later.
public final class SinkReceipt: Sendable {
    private let acknowledging: @Sendable () -> Void
    private let acknowledged: @Sendable () -> Bool

    /// The inbox's acknowledgment of one record by one sink, and whether it is there.
    package init(acknowledge: @escaping @Sendable () -> Void, isAcknowledged: @escaping @Sendable () -> Bool) {
        acknowledging = acknowledge
        acknowledged = isAcknowledged
    }

    /// The sink has the record: once every sink has it, the file is deleted.
    public func acknowledge() { acknowledging() }

    /// Whether the sink's acknowledgment is there now (another process of the app delivered the
    /// record since this pass listed the directory).
    package var isAcknowledged: Bool { acknowledged() }
}

/// A destination for crash records: the inbox offers it every record it does not have yet,
/// oldest first, on the reporter's launch thread (return quickly; send on a thread of your own
/// and return `.accepted` if delivering takes long). A sink also takes part in the reporter's
/// launch — prepare, the records, the runs that ended, finish — and in the end of the run, where
/// it has something to do there (``attach(to:)``, ``prepareLaunch()``, ``takeRuns(_:)``,
/// ``finishLaunch()``, ``shutdown(deadline:)``; each does nothing by default).
public protocol CrashRecordSink: Sendable {
    /// Its name in the acknowledgments (unique among the configured sinks).
    var id: RecordSinkID { get }
    /// Takes `record`. `.accepted` promises a later `receipt.acknowledge()`.
    func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult

    // The reporter's launch and the end of the run (LaunchPhases.swift); each does nothing by default.

    /// In `CrashReporting.start(_:)`, on the caller's thread, before capture is installed: what
    /// the run is. Return at once: no disk, no network.
    func attach(to run: ReportingRun)
    /// The launch's first phase, on the launch thread: open what taking records needs. Return
    /// why the sink cannot take records this launch, or `nil`; records then wait for it.
    func prepareLaunch() -> String?
    /// After the records: the earlier runs of the app that ended since the last launch, each with
    /// how it ended. Return `false` when the sink could not take them now: they are then handed
    /// out again by a later launch (to every sink: a sink tells a run it has by its ``EndedRun/runID``).
    func takeRuns(_ runs: [EndedRun]) -> Bool
    /// The launch's last phase, after every record and run was offered.
    func finishLaunch()
    /// Every 2 s while the run lives, once its launch is done, on the reporter's launch thread
    /// (after this run's marker is kept current): send what has come due (Sentry's batched
    /// sessions). Return at once: no waiting on the network.
    func runTick()
    /// The run ends (`CrashReporting.shutdown(timeout:)`): hand on what is pending, by
    /// `deadline` at the latest. Returns whether everything was.
    func shutdown(deadline: SuspendingClock.Instant) -> Bool
}

/// What a sink learns of the run it reports for when `CrashReporting` starts.
public struct ReportingRun: Sendable, Equatable {
    /// This run's id: the one capture writes into a crash record, and the run marker's name.
    public let runID: String
    /// The app's name, as configured.
    public let appName: String
    /// The app's version, as configured.
    public let appVersion: String
    /// Where capture writes this app's records.
    public let recordDirectory: String

    package init(runID: String, appName: String, appVersion: String, recordDirectory: String) {
        self.runID = runID
        self.appName = appName
        self.appVersion = appVersion
        self.recordDirectory = recordDirectory
    }
}

/// The launch and end-of-run hooks do nothing unless a sink has something to do in them.
extension CrashRecordSink {
    public func attach(to run: ReportingRun) {}
    public func prepareLaunch() -> String? { nil }
    public func takeRuns(_ runs: [EndedRun]) -> Bool { true }
    public func finishLaunch() {}
    public func runTick() {}
    public func shutdown(deadline: SuspendingClock.Instant) -> Bool { true }
}

/// The sinks of this package whose launch hooks (`prepareLaunch`, `take`, `takeRuns`,
/// `finishLaunch`) only queue work for threads of their own or use local files, each wait bounded
/// by the sink (the events store's busy timeout): the end of a run that comes before the
/// reporter's launch thread has begun (a short program) runs the launch itself instead of waiting
/// for that thread, when every sink is one of these. An app's own sink may do anything in them,
/// so with one the end of the run waits for the launch thread, within its deadline. By type
/// (each registers its own), not by a protocol: a cast to a protocol searches every loaded
/// image's conformances the first time, ≈ 0.1 ms of a launch with Foundation loaded (measured).
package enum BoundedLaunchSinks {
    private static let types = Mutex<[ObjectIdentifier]>([])

    /// Says that `type`'s launch hooks are bounded (see above).
    package static func register(_ type: any CrashRecordSink.Type) {
        let id = ObjectIdentifier(type)
        types.withLock { if !$0.contains(id) { $0.append(id) } }
    }

    /// Whether `sink` is of a type registered with ``register(_:)``.
    package static func contains(_ sink: any CrashRecordSink) -> Bool {
        let id = ObjectIdentifier(type(of: sink))
        return types.withLock { $0.contains(id) }
    }
}
