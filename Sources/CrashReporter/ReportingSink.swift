// ReportingSink.swift — a sink that takes part in the reporter's launch and in the end of the run.
//
// CrashReporting owns the launch: one thread takes every sink through the same phases, in order.
//   1. prepare   — each ReportingSink opens what taking records needs (a store, say); one that
//                  cannot says why, and its records wait for the next launch.
//   2. records   — the inbox pass: every record to every sink that lacks it (RecordInbox).
//   3. runs      — the earlier runs that ended since (RunLedger: exited, crashed, killed, OOM),
//                  each handed to every ReportingSink once.
//   4. finish    — each ReportingSink completes its own launch (the analytics' `$AppStart`).
// At the end of the run (`shutdown`, or the exit hook) each gets the same deadline. Data flows one
// way: a sink is told; it never calls back into the reporter that hosts it.

/// What a sink learns of the run it reports for when ``CrashReporting`` starts.
public struct ReportingRun: Sendable, Equatable {
    /// This run's id: the one capture writes into a crash record, and the run marker's name.
    public let runID: String
    public let appName: String
    public let appVersion: String
    /// Where capture writes this app's records.
    public let recordDirectory: String
}

/// A ``CrashRecordSink`` that also takes part in the reporter's launch and in the end of the run.
/// Every method but ``CrashRecordSink/take(_:receipt:)`` has a default that does nothing.
public protocol ReportingSink: CrashRecordSink {
    /// In ``CrashReporting/start(_:)``, on the caller's thread, before capture is installed: what
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
    /// The run ends (``CrashReporting/shutdown(timeout:)``): hand on what is pending, by
    /// `deadline` at the latest. Returns whether everything was.
    func shutdown(deadline: SuspendingClock.Instant) -> Bool
}

extension ReportingSink {
    public func attach(to run: ReportingRun) {}
    public func prepareLaunch() -> String? { nil }
    public func takeRuns(_ runs: [EndedRun]) -> Bool { true }
    public func finishLaunch() {}
    public func shutdown(deadline: SuspendingClock.Instant) -> Bool { true }
}

/// A configured sink that cannot take records this launch: they stay for it.
struct UnavailableSink: CrashRecordSink {
    let id: RecordSinkID
    let reason: String
    func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult { .later(reason: reason) }
}
