// RecordInboxTests.swift — one inbox, many sinks: every record read once and offered to each sink
// that lacks it, deleted only when all have it, one failing sink blocking none of the others, a
// sink of the app's own as one small type (TestSupport's RecordingSink), Sentry alone without the
// events store, a partial record left only while its writer may be at work, and a record
// directory holding things that are not records.
@testable import CrashReporter
import CrashRecordFormat
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
@testable import CrashReporterSentry

final class RecordInboxTests: XCTestCase {
    func files(_ directory: String) throws -> [String] {
        // Without the directory's crash-loop state, which a pass that judged a record keeps.
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0 != RecordFileName.crashLoopState }.sorted()
    }

    /// The DSN of a loopback Sentry.
    func dsn(_ server: TestHTTPServer) -> String { "http://publickey@127.0.0.1:\(server.port)/42" }

    func deliver(_ arguments: [String]) throws -> [String: Any] {
        let output = try Scratch.directory("inbox-deliver-output") + "/stdout"
        let child = try ChildProcess.run(BuiltProducts.harness, ["deliver"] + arguments,
                                         environment: ["SWIFT_BACKTRACE": "enable=no"], stdout: output, timeout: 120)
        XCTAssertEqual(child.ending, .exited(0))
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: output))) as? [String: Any])
    }

    /// A Sentry user configures a DSN and no events store: the records reach Sentry and are
    /// deleted, and there is no store file, no tracker and no tracker thread. The same launch
    /// with a store has them (so the checks can fail).
    func testSentryAloneStartsNoEventsStoreNoTrackerAndNoTrackerThread() throws {
        let directory = try Scratch.directory("sentry-alone")
        let records = directory + "/records"
        let names = try Harness.records(2, in: records)
        let server = try TestHTTPServer()
        let alone = try deliver(["--records", records, "--sentry-dsn", dsn(server)])
        XCTAssertEqual(alone["tracker"] as? Bool, false)
        XCTAssertEqual(alone["recordsAwaitingSinks"] as? [String], names, "taken by the Sentry sink at the launch")
        XCTAssertEqual(alone["sentToSentry"] as? Bool, true)
        let threads = try XCTUnwrap(alone["threads"] as? [String])
        XCTAssertFalse(threads.contains { $0.hasPrefix("Sensors.") }, "\(threads)")
        XCTAssertEqual(server.allRequests.compactMap(LoopbackSentry.sentName), names)
        XCTAssertEqual(try files(records), ["installation-id", "runs"], "records deleted, nothing else written but the run markers and the installation's id")
        XCTAssertEqual(try files(directory), ["records"], "no store file anywhere")

        // With a store: the tracker and the store file are there. (Its writer thread starts only
        // when something is tracked after the launch: this program tracks nothing.)
        let more = try Harness.records(1, in: records)
        let withStore = try deliver(["--records", records, "--sentry-dsn", dsn(server), "--store", directory + "/events.sqlite"])
        XCTAssertEqual(withStore["tracker"] as? Bool, true)
        XCTAssertEqual(withStore["recordsIngested"] as? [String], more)
        XCTAssertTrue(try files(directory).contains("events.sqlite"))
    }

    /// The app's other sink cannot take the record (its store cannot be opened, say): Sentry
    /// still gets it, and it stays (with Sentry's acknowledgment) for that sink. The next launch,
    /// with the sink working, gives it the record, does not send it to Sentry again, and deletes it.
    func testAFailingSinkBlocksNoOtherAndTheRecordWaitsOnlyForIt() throws {
        let directory = try Scratch.directory("inbox-failing-sink")
        let names = try Harness.records(1, in: directory)
        let archive = RecordingSink("archive", answering: .later(reason: "the archive cannot be opened"))
        let server = try TestHTTPServer()
        let first = try LoopbackSentry.sink(server)
        let launch = CrashReporting.deliverRecords(in: directory, sinks: [archive, first])
        XCTAssertTrue(first.shutdown(deadline: SuspendingClock.now.advanced(by: .seconds(30))))
        XCTAssertEqual(first.currentReport.sent, names, "Sentry got it although the other sink failed")
        XCTAssertEqual(archive.names, names)
        XCTAssertEqual(launch.errors, ["\(names[0]): archive: the archive cannot be opened"])
        XCTAssertEqual(try files(directory).filter { $0.hasPrefix("crash-") }, [names[0], names[0] + ".sentry.ack"])

        archive.answer(.delivered, for: names[0])
        let second = try LoopbackSentry.sink(server)
        let next = CrashReporting.deliverRecords(in: directory, sinks: [archive, second])
        XCTAssertTrue(second.shutdown(deadline: SuspendingClock.now.advanced(by: .seconds(30))))
        XCTAssertEqual(archive.names, names + names, "offered again, and taken")
        XCTAssertEqual(next.recordsDelivered, names)
        XCTAssertEqual(second.currentReport.sent, [], "not sent to Sentry twice")
        XCTAssertEqual(server.allRequests.count, 1)
        XCTAssertEqual(try files(directory).filter { $0.hasPrefix("crash-") }, [])
    }

    /// A third sink is one small type: it is offered each record until it has it, never again
    /// after, and a record waits only for the sinks that lack it.
    func testASinkOfTheAppsOwnIsOfferedEachRecordUntilItHasIt() throws {
        let directory = try Scratch.directory("inbox-third-sink")
        let names = try Harness.records(2, in: directory)
        let archive = RecordingSink("archive", answers: [names[0]: .later(reason: "not now")])
        let audit = RecordingSink("audit")
        let first = RecordInbox(directory: directory, sinks: [archive, audit]).pass()
        XCTAssertEqual(archive.unreadable, [], "real records arrive parsed")
        XCTAssertEqual(archive.names, names)
        XCTAssertEqual(audit.names, names)
        XCTAssertEqual(first.recordsDelivered, [names[1]])
        XCTAssertEqual(first.recordsAwaitingSinks, [names[0]])
        XCTAssertEqual(first.errors, ["\(names[0]): archive: not now"])
        XCTAssertEqual(try files(directory), [names[0], names[0] + ".audit.ack"])

        archive.answer(.delivered, for: names[0])
        let second = RecordInbox(directory: directory, sinks: [archive, audit]).pass()
        XCTAssertEqual(archive.names, names + [names[0]])
        XCTAssertEqual(audit.names, names, "audit had it: not offered again")
        XCTAssertEqual(second.recordsDelivered, [names[0]])
        XCTAssertEqual(try files(directory), [])
        XCTAssertNil(RecordSinkID("Not A Sink"))
        XCTAssertNil(RecordSinkID(""))
        XCTAssertNil(RecordSinkID("../x"))
    }

    /// A `.partial` record is left alone only while its writer may still be at work: a live
    /// process with its pid that started before the record's time. A live process that started
    /// after it has reused the pid (kill(pid, 0) alone would be fooled), so the record is offered.
    func testAPartialRecordIsLeftOnlyWhileItsWriterCanBeAlive() throws {
        let directory = try Scratch.directory("partial-liveness")
        let records = directory + "/records"
        try FileManager.default.createDirectory(atPath: records, withIntermediateDirectories: true)
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["30"]
        try sleeper.run()
        defer { sleeper.terminate(); sleeper.waitUntilExit() }
        let pid = sleeper.processIdentifier
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        // Written "a minute ago" by this pid: the live sleeper started after it, so it is not the writer.
        let reused = "crash-\(now - 60_000)-\(pid)-\(pid).ccrec.partial"
        // Written "now" (after the sleeper started): the sleeper may be its writer.
        let live = "crash-\(now + 100)-\(pid)-\(pid).ccrec.partial"
        for name in [reused, live] { try Data("torn".utf8).write(to: URL(fileURLWithPath: records + "/" + name)) }
        let audit = RecordingSink("audit")
        let report = CrashReporting.deliverRecords(in: records, sinks: [audit])
        XCTAssertEqual(report.recordsInProgress, [live])
        XCTAssertEqual(report.recordsUnreadable, [reused])
        XCTAssertEqual(audit.unreadable, [reused], "only the record whose writer is gone is offered")
        XCTAssertEqual(audit.names, [reused])
        XCTAssertTrue(FileManager.default.fileExists(atPath: records + "/" + live))
        XCTAssertFalse(FileManager.default.fileExists(atPath: records + "/" + reused))
        XCTAssertTrue(RecordFileName(live)!.writerMayBeRunning)
        XCTAssertFalse(RecordFileName(reused)!.writerMayBeRunning)
        XCTAssertFalse(RecordFileName(live.replacingOccurrences(of: ".partial", with: ""))!.writerMayBeRunning, "a complete record is written")
    }

    /// What is not a record is never opened or deleted; what is named like one but is a link or
    /// a FIFO is offered as unreadable (the link's target untouched, no hang); an
    /// acknowledgment whose record is gone is removed.
    func testTheInboxTreatsTheDirectoryAsUntrusted() throws {
        let directory = try Scratch.directory("inbox-hostile")
        let outside = try Scratch.directory("inbox-hostile-outside") + "/precious"
        try Data("precious".utf8).write(to: URL(fileURLWithPath: outside))
        let link = "crash-1700000000000-1-1.ccrec", fifo = "crash-1700000000001-1-1.ccrec"
        XCTAssertEqual(symlink(outside, directory + "/" + link), 0)
        XCTAssertEqual(mkfifo(directory + "/" + fifo, 0o600), 0)
        let orphan = "crash-1700000000002-1-1.ccrec.audit.ack"
        for name in [orphan, "notes.txt", "crash-x.ack"] { try Data().write(to: URL(fileURLWithPath: directory + "/" + name)) }
        let audit = RecordingSink("audit")
        let report = RecordInbox(directory: directory, sinks: [audit]).pass()
        XCTAssertEqual(audit.names, [link, fifo])
        XCTAssertEqual(audit.unreadable, [link, fifo])
        XCTAssertEqual(report.recordsDelivered, [link, fifo])
        XCTAssertEqual(try files(directory), ["crash-x.ack", "notes.txt"])
        XCTAssertEqual(try String(contentsOfFile: outside, encoding: .utf8), "precious")
    }
}
