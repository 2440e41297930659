// RecordInbox.swift — the one way a crash record goes from the record directory to its sinks.
//
// At the next launch the inbox lists the record directory once, reads and verifies each record
// once (through CrashRecordReader: no symbolic link, no FIFO, a size limit), and hands it to every
// configured sink that does not have it yet: the Sentry sink, and any sink of the app's own (the
// Sensors analytics' events sink is one). A sink says it has the
// record (`.delivered`), that it took it and will say so later (`.accepted`, the Sentry sink,
// whose requests retry on their own thread), or that it cannot take it now (`.later`: the next
// launch offers it again). One sink failing never keeps the record from the others.
//
// The record file is deleted only when every configured sink has it. What each sink has is kept
// beside the record, one empty file per sink and record (`<record>.<sink id>.ack`, created with
// O_EXCL): written only while some other sink still lacks the record, so with one sink, or when
// every sink takes a record in the same pass, nothing but the deletion touches the directory. A
// sink whose acknowledgment is lost (the process died between its delivery and the file) is
// offered the record again; each of ours makes that harmless (the analytics store's claim
// refuses the same events twice, Sentry drops an event id it has).
package import CrashRecordFormat
package import RecordDelivery
#if canImport(Glibc)
import Glibc
#endif

/// The record directory and the sinks its records go to (see the file comment).
package final class RecordInbox: Sendable {
    /// What one pass did.
    package struct Report: Sendable, Equatable {
        /// Records every sink has now (their files deleted).
        package var recordsDelivered: [String] = []
        /// Records some sink does not have yet (kept for it): sink ids by record.
        package var recordsAwaitingSinks: [String] = []
        /// Partial records of a process that still runs (left alone).
        package var recordsInProgress: [String] = []
        /// `.later` answers: "record: sink: reason".
        package var errors: [String] = []
        /// Records the reader rejected (each sink was still given the crash, and says so).
        package var recordsUnreadable: [String] = []
        /// The run id of each record read in this pass, and the record's name: which earlier
        /// runs crashed.
        package var recordRuns: [String: String] = [:]
        /// What keeping the directory under its bounds did first (records folded and pruned).
        package var bound = RecordDirectoryBound.Outcome()
        package init() {}
    }

    package let directory: String
    let sinks: [any CrashRecordSink]
    let limits: RecordDirectoryLimits

    /// - Precondition: the sinks' ids are distinct.
    package init(directory: String, sinks: [any CrashRecordSink], limits: RecordDirectoryLimits = .standard) {
        precondition(Set(sinks.map(\.id)).count == sinks.count, "two record sinks with one id")
        self.directory = directory
        self.sinks = sinks
        self.limits = limits
    }

    /// One pass over the directory: each record not in progress is read once and offered to
    /// every sink that lacks it; acknowledgments of records no longer there are removed. Never
    /// throws: a directory that cannot be listed is an error in the report. With `only`, that
    /// record alone is offered (the crash-time uploader's pass).
    @discardableResult
    package func pass(only: String? = nil) -> Report {
        var report = Report()
        // The directory under its bounds first (cheap when it is: a listing).
        report.bound = RecordDirectoryBound.enforce(directory: directory, limits: limits)
        let entries: [String]
        let listed: Set<String>
        do {
            entries = try Self.entries(in: directory)
            listed = Set(entries)
        } catch {
            report.errors.append("\(directory): \(error)")
            return report
        }
        let records = entries.filter { RecordFileName($0) != nil }
        let present = Set(records)
        for entry in entries where RecordFileName(entry) == nil {
            // An acknowledgment or tally whose record is gone (deleted by another process after ours).
            let owner = RecordFileName.parseAcknowledgment(entry)?.record ?? RecordFileName.parseTally(entry)
            if let owner, !present.contains(owner) { unlink(path(entry)) }
        }
        // The crash-loop state: opened (and created) with the first readable record.
        var loop: CrashLoop?
        var loopOpened = false
        defer { loop?.close(keeping: { access(self.path($0), F_OK) == 0 }) }
        for name in records where only == nil || name == only {
            if let parsed = RecordFileName(name), parsed.writerMayBeRunning {
                // A live process's handler may still be writing it (it renames the file when
                // done); a live process that started after the crash has only reused the pid.
                report.recordsInProgress.append(name)
                continue
            }
            let missing = sinks.filter { !listed.contains(Self.acknowledgment(name, $0.id)) }
            if missing.isEmpty {
                // Every sink has it (or there is none): read only for its run, which crashed.
                if case .success(let crash) = read(name).record, crash.kind == .crash, let run = crash.runID, !run.isEmpty { report.recordRuns[run] = name }
                delete(name)
                report.recordsDelivered.append(name)
                continue
            }
            var record = read(name)
            switch record.record {
            case .success(let crash):
                if crash.kind == .crash {
                    if !loopOpened { loop = CrashLoop.open(directory: directory); loopOpened = true }
                    record.tally.consecutiveCrashesAtStart = loop?.verdict(for: name, crash, tally: record.tally)
                }
                // A hang or snapshot ended no run: only a crash's record tells how its run ended.
                if crash.kind == .crash, let run = crash.runID, !run.isEmpty { report.recordRuns[run] = name }
            case .failure:
                report.recordsUnreadable.append(name)
            }
            var waiting = false
            for sink in missing {
                switch sink.take(record, receipt: receipt(name, sink.id)) {
                case .delivered:
                    acknowledge(name, by: sink.id)
                case .accepted:
                    waiting = true
                case .later(let reason):
                    waiting = true
                    report.errors.append("\(name): \(sink.id): \(reason)")
                }
            }
            if access(path(name), F_OK) != 0 {
                report.recordsDelivered.append(name)
                continue
            }
            if waiting || !sinks.allSatisfy({ has(name, $0.id) }) {
                report.recordsAwaitingSinks.append(name)
            }
        }
        return report
    }

    /// The receipt of record `name` for `sink`: its acknowledgment through this inbox.
    private func receipt(_ name: String, _ sink: RecordSinkID) -> SinkReceipt {
        SinkReceipt(acknowledge: { self.acknowledge(name, by: sink) }, isAcknowledged: { self.has(name, sink) })
    }

    /// `sink` has record `name`: the file is deleted if every sink has it now, else the
    /// acknowledgment is kept beside it.
    func acknowledge(_ name: String, by sink: RecordSinkID) {
        guard RecordFileName(name) != nil else { return }
        let others = sinks.map(\.id).filter { $0 != sink }
        if !others.allSatisfy({ has(name, $0) }) {
            let ack = path(Self.acknowledgment(name, sink))
            let fd = open(ack, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 { close(fd) }
            // Another process finished the record meanwhile (it deletes the record, then the
            // acknowledgments): ours, if made after that, goes too.
            if access(path(name), F_OK) != 0 {
                unlink(ack)
                return
            }
            // Another sink may have acknowledged meanwhile (from another thread or process):
            // whoever acknowledges last sees every acknowledgment and deletes.
            guard others.allSatisfy({ has(name, $0) }) else { return }
        }
        delete(name)
    }

    /// The record is gone for every sink: the file, then its acknowledgments and its tally.
    private func delete(_ name: String) {
        unlink(path(name))
        for sink in sinks { unlink(path(Self.acknowledgment(name, sink.id))) }
        unlink(path(RecordFileName.tally(of: name)))
    }

    /// Whether `sink` acknowledged record `name` (its acknowledgment file is there).
    func has(_ name: String, _ sink: RecordSinkID) -> Bool {
        var info = stat()
        return lstat(path(Self.acknowledgment(name, sink)), &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// The record's bytes and parse, read once through the record reader's checks, its tally and
    /// its run's start.
    private func read(_ name: String) -> InboxRecord {
        let file = path(name)
        var bytes: [UInt8] = []
        let record: Result<CrashRecord, CrashRecordError>
        do {
            bytes = try CrashRecordReader.readBytes(path: file)
            record = .success(try CrashRecordReader.parse(bytes))
        } catch let error as CrashRecordError {
            record = .failure(error)
        } catch {
            record = .failure(.unreadable(path: file, reason: "\(error)"))
        }
        // The run's start, while its marker is there (the runs are told after the records).
        let runStart = (try? record.get())?.runID.flatMap { RunLedger(recordDirectory: directory).start(of: $0) }
        return InboxRecord(name: name, path: file, bytes: bytes, record: record, tally: RecordTally.read(record: name, in: directory),
                           runStart: runStart)
    }

    private func path(_ name: String) -> String { directory + "/" + name }

    /// `<record>.<sink>.ack`.
    static func acknowledgment(_ record: String, _ sink: RecordSinkID) -> String {
        RecordFileName.acknowledgment(of: record, by: sink.rawValue)
    }

    /// The record files, acknowledgments and tallies in `directory` (nothing else), sorted.
    static func entries(in directory: String) throws -> [String] {
        try RecordFileName.names(in: directory, including: { RecordFileName.parseAcknowledgment($0) != nil || RecordFileName.parseTally($0) != nil })
    }
}
