// RecordingSink.swift — `crash-harness deliver --recording-sink FILE`: a sink of the harness's own,
// standing in for an app's second sink (the analytics, a sink of its own) where a test checks the
// reporter's part across processes: it takes every record and every ended run it is offered and
// writes what it was given to FILE, one JSON object a line, for the test to read. Like the events
// store, it claims each record by its name (a file in FILE.claims), so that the processes of one
// app that are offered the same record at once note it once.
import CrashReporter
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Has every record at once (`.delivered`) and every ended run, each noted as one line appended to
/// `path` in one write (O_APPEND: the processes of one app can share the file); a record claimed
/// already (by another process's sink, since its inbox listed the directory) is not noted again.
final class FileRecordingSink: CrashRecordSink {
    let id = RecordSinkID("recording")!
    let path: String

    init(path: String) { self.path = path }

    /// A record as the sink got it: its name, whether it was readable, and what its event would
    /// say beyond its own crash (the crashes it stands for for this sink, the crash loop).
    struct RecordLine: Encodable {
        var record: String
        var readable: Bool
        var crashes: Int
        var firstCrashMilliseconds: Int64?
        var crashLoop: Bool
        var crashLoopLength: Int?
    }

    /// An ended run as the sink got it: its id, how it ended, and when it was last seen alive.
    struct RunLine: Encodable {
        var run: String
        /// exited, crashed, killed or oom.
        var end: String
        var lastSeenMilliseconds: Int64?
        var lastSeenDurationMilliseconds: Int64?
    }

    func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult {
        let claims = path + ".claims"
        if mkdir(claims, 0o700) != 0 && errno != EEXIST { return .later(reason: "\(claims) cannot be made") }
        let claim = open(claims + "/" + record.name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard claim >= 0 else { return errno == EEXIST ? .delivered : .later(reason: "\(record.name) cannot be claimed") }
        close(claim)
        let repetition = record.tally.repetition(forSink: id.rawValue)
        var readable = true
        if case .failure = record.record { readable = false }
        let line = RecordLine(record: record.name, readable: readable, crashes: repetition.crashes,
                              firstCrashMilliseconds: repetition.firstMilliseconds, crashLoop: repetition.isCrashLoop,
                              crashLoopLength: repetition.consecutiveCrashesAtStart)
        guard append(line) else {
            unlink(claims + "/" + record.name)
            return .later(reason: "\(path) cannot be written")
        }
        return .delivered
    }

    func takeRuns(_ runs: [EndedRun]) -> Bool {
        for run in runs {
            let end: String
            switch run.end {
            case .exited: end = "exited"
            case .crashed: end = "crashed"
            case .killed(let oom): end = oom ? "oom" : "killed"
            }
            let line = RunLine(run: run.runID, end: end, lastSeenMilliseconds: run.lastSeen?.wallMilliseconds,
                               lastSeenDurationMilliseconds: run.lastSeen.map { $0.durationNanoseconds / 1_000_000 })
            guard append(line) else { return false }
        }
        return true
    }

    /// Appends `line` and a newline in one write; whether all of it was written.
    private func append(_ line: some Encodable) -> Bool {
        guard let text = try? HarnessJSON.text(line) else { return false }
        let bytes = Array((text + "\n").utf8)
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count
    }
}
