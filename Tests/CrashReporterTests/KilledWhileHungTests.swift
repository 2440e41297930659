// KilledWhileHungTests.swift — the run's marker as a state machine of its own, and a run killed
// while a hang it recorded was still open: its kept hang record becomes one fatal hang record at
// the next launch (killed, how long after), which every sink gets once; a hang that ended, a run
// that exited, and a kept file that is not a hang record give none.
@testable import CrashReporter
import CrashCapture
import CrashOTLP
import CrashRecordFormat
@testable import CrashSentry
import Foundation
import HostFacts
import ProcessSpawning
import RecordDelivery
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class KilledWhileHungTests: XCTestCase {
    // MARK: - The marker's states

    func marker(_ directory: String, runID: String) throws -> RunLedger.Marker {
        try RunLedger.readMarker(directory + "/runs/" + runID + ".run", runID: runID).get()
    }

    /// Begun, refreshed, ended: each step writes only from the state that allows it — a refresh
    /// or a counter after the end writes nothing, a second end nothing, a begin after an end nothing.
    func testTheMarkerStepsWriteOnlyFromTheStateThatAllowsThem() throws {
        let directory = try Scratch.directory("marker-states")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let machine = CurrentRunMarker(ledger: RunLedger(recordDirectory: directory))
        let start = RunStart.now(runID: "states-1", appName: "demo", appVersion: "1")
        XCTAssertEqual(machine.current, .none)
        XCTAssertFalse(machine.refresh(oomKills: nil, seen: RunLastSeen(wallMilliseconds: 5, durationNanoseconds: 5)), "nothing to refresh")
        XCTAssertTrue(try machine.begin(start))
        XCTAssertEqual(machine.current, .begun(start))
        XCTAssertFalse(try machine.begin(start), "begun once")
        XCTAssertTrue(machine.refresh(oomKills: nil, seen: RunLastSeen(wallMilliseconds: 7, durationNanoseconds: 2_000_000_000)))
        XCTAssertEqual(try marker(directory, runID: "states-1").seen?.durationNanoseconds, 2_000_000_000)
        let reading = OOMKillReading(path: "/sys/fs/cgroup/memory.events", inode: 9, kills: 3)
        XCTAssertEqual(machine.addCounter(reading)?.oomKills, reading)
        XCTAssertTrue(machine.end(.exited(wallMilliseconds: 9, durationNanoseconds: 4), start: { XCTFail("begun: no start needed"); return start },
                                  directory: directory))
        XCTAssertEqual(machine.current, .done)
        XCTAssertFalse(machine.end(.killed(oom: false), start: { start }, directory: directory), "ended once")
        XCTAssertFalse(machine.refresh(oomKills: nil, seen: RunLastSeen(wallMilliseconds: 11, durationNanoseconds: 9)))
        XCTAssertNil(machine.addCounter(reading))
        let ended = try marker(directory, runID: "states-1")
        XCTAssertEqual(ended.end, .exited(wallMilliseconds: 9, durationNanoseconds: 4), "the end is never overwritten")
        XCTAssertEqual(ended.start.oomKills, reading)

        // A run that ends before its launch began the marker writes it whole, with its end; the
        // launch's begin afterwards writes nothing.
        let early = CurrentRunMarker(ledger: RunLedger(recordDirectory: directory))
        let second = RunStart.now(runID: "states-2", appName: "demo", appVersion: "1")
        XCTAssertTrue(early.end(.exited(wallMilliseconds: 1, durationNanoseconds: 1), start: { second }, directory: directory))
        XCTAssertFalse(try early.begin(second))
        XCTAssertEqual(try marker(directory, runID: "states-2").end, .exited(wallMilliseconds: 1, durationNanoseconds: 1))
    }

    // MARK: - Killed while hung

    func hangRecord(run: String, in directory: String) throws -> String { try Harness.hangRecord(run: run, in: directory) }

    /// The identity of a process of this boot that was SIGKILLed and reaped.
    func deadProcess() throws -> ProcessIdentity {
        let running = try ChildProcess.start("/bin/sleep", ["30"])
        let ticks = try XCTUnwrap(ProcessIdentity.startTicks(of: running.pid))
        Glibc.kill(running.pid, SIGKILL)
        XCTAssertEqual(running.wait(timeout: 10).ending, .signaled(SIGKILL))
        return ProcessIdentity(pid: running.pid, bootID: ProcessIdentity.bootID(), startTicks: ticks)
    }

    /// A run of a process that is gone, its marker last refreshed 40 s after its hang record,
    /// which it kept as its open hang (and then the sinks had it: the record's file is gone).
    func killedRun(_ runID: String, hang path: String, directory: String, release: Bool = false) throws {
        let process = try deadProcess()
        let ledger = RunLedger(recordDirectory: directory, claimer: process)
        let recordMilliseconds = (try? CrashRecordReader.read(path: path))?.process.map { $0.crashWallNanoseconds / 1_000_000 }
            ?? Int64(Date().timeIntervalSince1970 * 1000)
        try ledger.begin(RunStart(runID: runID, process: process, startWallMilliseconds: recordMilliseconds - 5_000,
                                  startMonotonicNanoseconds: 1, appName: "server", appVersion: "1.0", oomKills: nil))
        try ledger.refresh(runID: runID, seen: RunLastSeen(wallMilliseconds: recordMilliseconds + 40_000, durationNanoseconds: 45_000_000_000))
        ledger.hold(.hang, recordPath: path, runID: runID)
        if release { ledger.release(.hang, runID: runID) }
        XCTAssertEqual(unlink(path), 0)
    }

    func testARunKilledWhileHungIsOneFatalHangRecordOnceAndOneWhoseHangEndedIsNot() throws {
        let directory = try Scratch.directory("killed-while-hung")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hung = try hangRecord(run: "hung-1", in: directory)
        try killedRun("hung-1", hang: hung, directory: directory)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/runs").filter { $0.contains(".hang.") }.count, 1,
                       "the ledger keeps the record its sinks deleted")

        let sink = RecordingSink("app")
        let report = CrashReporting.launch(in: directory, sinks: [sink], ledger: RunLedger(recordDirectory: directory))
        XCTAssertEqual(report.errors, [])
        XCTAssertEqual(report.runsEnded.map(\.end), [.killed(oom: false)])
        let name = try XCTUnwrap(report.runsEnded.first?.fatalRecord, "the run was killed while hung")
        XCTAssertEqual(sink.names, [name], "the sink got the fatal hang record")
        XCTAssertEqual(report.recordsDelivered, [name])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/runs").filter { !$0.contains(".tmp.") }, [],
                       "the kept record and the claim are gone")

        // Once: a later launch tells neither the run nor the hang again.
        let again = CrashReporting.launch(in: directory, sinks: [sink], ledger: RunLedger(recordDirectory: directory))
        XCTAssertEqual(again.runsEnded.count, 0)
        XCTAssertEqual(sink.names, [name])

        // A hang that ended before the kill: the run is killed, and no fatal hang.
        let recovered = try hangRecord(run: "hung-2", in: directory)
        try killedRun("hung-2", hang: recovered, directory: directory, release: true)
        let third = CrashReporting.launch(in: directory, sinks: [sink], ledger: RunLedger(recordDirectory: directory))
        XCTAssertEqual(third.runsEnded.map(\.end), [.killed(oom: false)])
        XCTAssertNil(third.runsEnded.first?.fatalRecord)
        XCTAssertEqual(sink.names, [name])
    }

    /// The fatal hang record reads as the hang it was, with its fate; Sentry gets a fatal,
    /// unhandled AppHang (grouped as the live one: the same exception type and mechanism), OTLP a
    /// FATAL `app.hang` with state `killed`. A fate is added once, and only to a whole hang record.
    func testTheFatalHangIsFatalInSentryAndOTLPAndReadsAsTheHangItWas() throws {
        let directory = try Scratch.directory("fatal-hang-sinks")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = try hangRecord(run: "hung-3", in: directory)
        let bytes = try CrashRecordReader.readBytes(path: path)
        let live = try CrashRecordReader.parse(bytes)
        let fate = RecordFate(oom: false, lastSeenWallMilliseconds: 1_700_000_000_000, lastSeenAfterMilliseconds: 41_200)
        let amended = try fate.added(to: bytes)
        let fatal = try CrashRecordReader.parse(amended)
        XCTAssertTrue(fatal.isComplete, "\(fatal.completeness)")
        XCTAssertEqual(fatal.notes, live.notes, "the END's count is right")
        XCTAssertEqual(fatal.event?.fate, fate)
        var unchanged = fatal
        unchanged.event?.fate = nil
        unchanged.sectionCount = live.sectionCount
        XCTAssertEqual(unchanged, live, "the hang as it was, and the fate")
        XCTAssertThrowsError(try fate.added(to: amended), "told once")
        XCTAssertThrowsError(try fate.added(to: Array(bytes.dropLast(3))), "a torn record")

        let liveEvent = SentryEnvelope.event(record: live, eventID: "a", readImageFiles: false)
        let fatalEvent = SentryEnvelope.event(record: fatal, eventID: "b", readImageFiles: false)
        XCTAssertEqual(liveEvent.level, "error")
        XCTAssertEqual(fatalEvent.level, "fatal")
        let liveException = try XCTUnwrap(liveEvent.exception.values.first), fatalException = try XCTUnwrap(fatalEvent.exception.values.first)
        XCTAssertEqual(fatalException.type, liveException.type, "grouped with the live hang")
        XCTAssertEqual(fatalException.mechanism.type, "AppHang")
        XCTAssertTrue(liveException.mechanism.handled)
        XCTAssertFalse(fatalException.mechanism.handled, "a hang the process died in is not handled")
        XCTAssertEqual(fatalEvent.tags["hang_state"], "killed")
        XCTAssertTrue(fatalException.value.contains("killed while hung, at least 41.2 s after this record"), fatalException.value)

        let log = CrashLogRecord.logRecord(record: fatal, fileName: "f.ccrec", observedNanoseconds: 1)
        XCTAssertEqual(log.eventName, "app.hang")
        XCTAssertEqual(log.severityNumber, 21)
        XCTAssertEqual(log.severityText, "FATAL")
        XCTAssertTrue(log.attributes.contains(OTLPAttribute("hang.state", .string("killed"))))
        XCTAssertTrue(log.attributes.contains(OTLPAttribute("hang.killed_after_ms", .int(41_200))))
    }

    /// What the ledger kept is untrusted: a file that is not a hang record is an error line, the
    /// run is still told as killed, and nothing is made of it.
    func testAKeptFileThatIsNotAHangRecordIsAnErrorAndTheRunIsStillKilled() throws {
        let directory = try Scratch.directory("killed-while-hung-hostile")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/not-a-record"
        try Data("CCRECORD and then nonsense".utf8).write(to: URL(fileURLWithPath: path))
        try killedRun("hung-4", hang: path, directory: directory)
        let sink = RecordingSink("app")
        let report = CrashReporting.launch(in: directory, sinks: [sink], ledger: RunLedger(recordDirectory: directory))
        XCTAssertEqual(report.runsEnded.map(\.end), [.killed(oom: false)])
        XCTAssertNil(report.runsEnded.first?.fatalRecord)
        XCTAssertEqual(report.errors.count, 1, "\(report.errors)")
        XCTAssertTrue(report.errors.first?.contains("killed, but the kept record") == true, "\(report.errors)")
        XCTAssertEqual(sink.names, [])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/runs").filter { $0.contains(".hang.") }, [])
    }

    /// Killed by the OOM killer with no memory record kept (no limit watched): the next launch
    /// still makes one fatal record of the kill from the ledger — the app, the pid, the run, when it
    /// was last seen — which Sentry gets as a fatal, unhandled "Killed for memory" (Relay's
    /// normalizer takes it), once.
    func testAnOOMKillWithNoMemoryRecordIsStillOneFatalRecordFromTheLedger() throws {
        let directory = try Scratch.directory("oom-no-memory-record")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A stand-in for the run's memory cgroup's counter, one kill more after the run began.
        let counter = directory + "/cgroup/memory.events"
        try FileManager.default.createDirectory(atPath: directory + "/cgroup", withIntermediateDirectories: true)
        try Data("oom_kill 3\n".utf8).write(to: URL(fileURLWithPath: counter))
        let reading = try XCTUnwrap(OOMKillCounter.read(counter))
        let process = try deadProcess()
        let ledger = RunLedger(recordDirectory: directory, claimer: process)
        try ledger.begin(RunStart(runID: "oom-1", process: process, startWallMilliseconds: 1_700_000_000_000, startMonotonicNanoseconds: 1,
                                  appName: "server", appVersion: "2.0", oomKills: reading))
        try ledger.refresh(runID: "oom-1", seen: RunLastSeen(wallMilliseconds: 1_700_000_060_000, durationNanoseconds: 60_000_000_000))
        let grown = open(counter, O_WRONLY | O_TRUNC)
        XCTAssertEqual(Glibc.write(grown, "oom_kill 4\n", 11), 11)
        close(grown)

        let sink = RecordingSink("app")
        let report = CrashReporting.launch(in: directory, sinks: [sink], ledger: RunLedger(recordDirectory: directory))
        XCTAssertEqual(report.errors, [])
        XCTAssertEqual(report.runsEnded.map(\.end), [.killed(oom: true)])
        let name = try XCTUnwrap(report.runsEnded.first?.fatalRecord)
        XCTAssertEqual(sink.names, [name])
        XCTAssertEqual(CrashReporting.launch(in: directory, sinks: [sink], ledger: RunLedger(recordDirectory: directory)).runsEnded.count, 0)
        XCTAssertEqual(sink.names, [name], "once")

        // The record as the ledger made it.
        let bytes = RecordFate(oom: true, lastSeenWallMilliseconds: 1_700_000_060_000, lastSeenAfterMilliseconds: nil)
            .killedRunRecord(pid: process.pid, startWallMilliseconds: 1_700_000_000_000, appName: "server", appVersion: "2.0", runID: "oom-1")
        let record = try CrashRecordReader.parse(bytes)
        XCTAssertTrue(record.isComplete, "\(record.completeness)")
        XCTAssertEqual(record.notes.count, 1)
        XCTAssertTrue(record.notes.first?.hasPrefix("made by the next launch from the run's ledger") == true, "\(record.notes)")
        XCTAssertEqual(record.kind, .memory)
        XCTAssertEqual(record.event?.fate?.oom, true)
        XCTAssertEqual(record.runID, "oom-1")
        XCTAssertEqual(record.process?.pid, process.pid)
        XCTAssertEqual(name, RecordFileName(milliseconds: 1_700_000_060_000, pid: process.pid, tid: 0).name)

        let envelope = try SentryEnvelope.outgoing(record: record, rawRecord: bytes, fileName: name, eventID: SentryEnvelope.eventID(rawRecord: bytes),
                                                   sentAt: nil, readImageFiles: false, minimised: nil, beforeSend: nil).get()
        let file = directory + "/envelope"
        try Data(envelope).write(to: URL(fileURLWithPath: file))
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try Oracles.run("sentry_check.py", [file]).utf8)) as? [String: Any])
        XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(summary["errors"] ?? "")")
        let normalized = try XCTUnwrap(summary["normalized"] as? [String: Any])
        XCTAssertEqual(normalized["level"] as? String, "fatal")
        let exception = try XCTUnwrap(((normalized["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
        XCTAssertEqual(exception["type"] as? String, "Killed for memory")
        XCTAssertEqual((exception["mechanism"] as? [String: Any])?["type"] as? String, "out_of_memory")
        XCTAssertEqual((exception["mechanism"] as? [String: Any])?["handled"] as? Bool, false)
    }
}
