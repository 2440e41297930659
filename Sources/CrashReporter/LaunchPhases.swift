// LaunchPhases.swift — how every sink takes part in the reporter's launch and in the end of the run.
//
// CrashReporting owns the launch: one thread takes every sink through the same phases, in order.
//   1. prepare   — each sink opens what taking records needs (a store, say); one that
//                  cannot says why, and its records wait for the next launch.
//   2. records   — the inbox pass: every record to every sink that lacks it (RecordInbox).
//   3. runs      — the earlier runs that ended since (RunLedger: exited, crashed, killed, OOM),
//                  each handed to every sink once.
//   4. finish    — each sink completes its own launch (the analytics' `$AppStart`).
// At the end of the run (`shutdown`, or the exit hook) each gets the same deadline. Data flows one
// way: a sink is told; it never calls back into the reporter that hosts it. The hooks are
// requirements of CrashRecordSink with defaults that do nothing (not a second protocol: finding
// out at run time whether a sink conforms to one would cost the launch a conformance scan).

import Logging
import RecordDelivery

/// A configured sink that cannot take records this launch: they stay for it.
struct UnavailableSink: CrashRecordSink {
    let id: RecordSinkID
    let reason: String
    func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult { .later(reason: reason) }
}

/// A sink the app asked for whose configuration cannot work at all (a Sentry DSN that does not
/// parse): it takes no record and no run, so they wait for a launch whose configuration works
/// (DeliveryRule: a configuration mistake never deletes crashes), bounded by the record
/// directory's bound; every launch says so once, on stderr (swift-log's default handler) or
/// through the app's logging.
struct MisconfiguredSink: CrashRecordSink {
    let id: RecordSinkID
    let reason: String
    func prepareLaunch() -> String? {
        Logger(label: "CrashReporter").error("\(id.rawValue): \(reason). Crash records and runs are kept for a launch where it is fixed.")
        return reason
    }
    func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult { .later(reason: reason) }
    func takeRuns(_ runs: [EndedRun]) -> Bool { false }
}
