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
#if canImport(Glibc)
import Glibc
#endif

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

extension CrashReporting {
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
            var runs = ledger.classify(recordRuns: inbox.recordRuns, excluding: runID)
            // A run killed while hung: its hang record, with how it ended, becomes a record of
            // its own (KilledRun), which the sinks get below like any record.
            var fatalHangs: [String] = []
            for index in runs.outcomes.indices {
                let outcome = runs.outcomes[index]
                let made: Result<String, KilledRun.Refusal>
                if let held = runs.held[outcome.runID] {
                    made = KilledRun.revive(held, outcome: outcome, into: directory, sizeLimit: limits.maxBytes)
                    if case .success = made { unlink(held) }
                } else if case .killed(oom: true) = outcome.end {
                    // Killed for memory with no memory record: a record of the kill from the ledger.
                    made = KilledRun.fromLedger(outcome, into: directory)
                } else {
                    continue
                }
                switch made {
                case .success(let name):
                    runs.outcomes[index].fatalRecord = name
                    fatalHangs.append(name)
                case .failure(let refusal):
                    report.errors.append("run \(outcome.runID): killed, but \(refusal)")
                }
            }
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
            for name in fatalHangs {
                let pass = RecordInbox(directory: directory, sinks: offered, limits: limits).pass(only: name)
                report.recordsDelivered += pass.recordsDelivered
                report.recordsAwaitingSinks += pass.recordsAwaitingSinks
                report.recordsUnreadable += pass.recordsUnreadable
                report.errors += pass.errors
            }
        }
        beforeFinishing?()
        for sink in sinks { sink.finishLaunch() }
        return report
    }

    /// One inbox pass over `directory`: every record to every sink that lacks it.
    package static func deliverRecords(in directory: String, sinks: [any CrashRecordSink], limits: RecordDirectoryLimits = .standard) -> LaunchReport {
        LaunchReport(RecordInbox(directory: directory, sinks: sinks, limits: limits).pass())
    }
}
