// RecordInboxTests.swift — one inbox, many sinks: every record read once and offered to each sink
// that lacks it, deleted only when all have it, one failing sink blocking none of the others, a
// sink of the app's own as one small type, Sentry alone without the events store, and a record
// directory holding things that are not records.
@testable import CrashReporter
@testable import SensorsAnalytics
import CrashRecordFormat
@testable import SensorsTracking
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
@testable import CrashReporterSentry

/// A sink of the test's own: what it was offered, and what it answers.
final class ListSink: CrashRecordSink, @unchecked Sendable {
    let id: RecordSinkID
    private let lock = NSLock()
    private var offered: [String] = []
    private var unreadableNames: [String] = []
    private var refusing: Set<String>
    init(_ id: String, refusing: Set<String> = []) {
        self.id = RecordSinkID(id)!
        self.refusing = refusing
    }
    var names: [String] { lock.withLock { offered } }
    var unreadable: [String] { lock.withLock { unreadableNames } }
    func accept(_ name: String) { _ = lock.withLock { refusing.remove(name) } }
    func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult {
        lock.withLock {
            offered.append(record.name)
            if case .failure = record.record { unreadableNames.append(record.name) }
            return refusing.contains(record.name) ? .later(reason: "not now") : .delivered
        }
    }
}

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
        let names = try SentrySinkTests.records(2, in: records)
        let server = try TestHTTPServer()
        let alone = try deliver(["--records", records, "--sentry-dsn", dsn(server)])
        XCTAssertEqual(alone["tracker"] as? Bool, false)
        XCTAssertEqual(alone["recordsAwaitingSinks"] as? [String], names, "taken by the Sentry sink at the launch")
        XCTAssertEqual(alone["sentToSentry"] as? Bool, true)
        let threads = try XCTUnwrap(alone["threads"] as? [String])
        XCTAssertFalse(threads.contains { $0.hasPrefix("Sensors.") }, "\(threads)")
        XCTAssertEqual(server.allRequests.compactMap(SentrySinkTests.sentName), names)
        XCTAssertEqual(try files(records), ["installation-id", "runs"], "records deleted, nothing else written but the run markers and the installation's id")
        XCTAssertEqual(try files(directory), ["records"], "no store file anywhere")

        // With a store: the tracker and the store file are there. (Its writer thread starts only
        // when something is tracked after the launch: this program tracks nothing.)
        let more = try SentrySinkTests.records(1, in: records)
        let withStore = try deliver(["--records", records, "--sentry-dsn", dsn(server), "--store", directory + "/events.sqlite"])
        XCTAssertEqual(withStore["tracker"] as? Bool, true)
        XCTAssertEqual(withStore["recordsIngested"] as? [String], more)
        XCTAssertTrue(try files(directory).contains("events.sqlite"))
    }

    /// The events store cannot be opened: Sentry still gets the record, which stays (with
    /// Sentry's acknowledgment) for the events sink. The next launch, with a store that works,
    /// stores its events, does not send it to Sentry again, and deletes it.
    func testAFailingSinkBlocksNoOtherAndTheRecordWaitsOnlyForIt() throws {
        let directory = try Scratch.directory("inbox-failing-sink")
        let names = try SentrySinkTests.records(1, in: directory)
        let blocked = directory + "/store-is-a-directory"
        try FileManager.default.createDirectory(atPath: blocked, withIntermediateDirectories: true)
        let server = try TestHTTPServer()
        let first = try SentrySinkTests.sink(server)
        let launch = SensorsAnalytics.pass(in: directory, store: TrackingStore(deferringOpen: blocked), appName: "t",
                                                   appVersion: "1", sinks: [first])
        XCTAssertTrue(first.shutdown(deadline: SuspendingClock.now.advanced(by: .seconds(30))))
        XCTAssertEqual(first.currentReport.sent, names, "Sentry got it although the store failed")
        XCTAssertEqual(launch.recordsIngested, [])
        XCTAssertEqual(launch.errors.count, 1, "\(launch.errors)")
        XCTAssertTrue(launch.errors.first?.contains("events") == true)
        XCTAssertEqual(try files(directory).filter { $0.hasPrefix("crash-") }, [names[0], names[0] + ".sentry.ack"])

        let store = try TrackingStore(path: directory + "/s.sqlite")
        let second = try SentrySinkTests.sink(server)
        let next = SensorsAnalytics.pass(in: directory, store: store, appName: "t", appVersion: "1", sinks: [second])
        XCTAssertTrue(second.shutdown(deadline: SuspendingClock.now.advanced(by: .seconds(30))))
        XCTAssertEqual(next.recordsIngested, names)
        XCTAssertEqual(next.recordsDelivered, names)
        XCTAssertEqual(second.currentReport.sent, [], "not sent to Sentry twice")
        XCTAssertEqual(server.allRequests.count, 1)
        XCTAssertEqual(try files(directory).filter { $0.hasPrefix("crash-") }, [])
    }

    /// A third sink is one small type: it is offered each record until it has it, never again
    /// after, and a record waits only for the sinks that lack it.
    func testASinkOfTheAppsOwnIsOfferedEachRecordUntilItHasIt() throws {
        let directory = try Scratch.directory("inbox-third-sink")
        let names = try SentrySinkTests.records(2, in: directory)
        let archive = ListSink("archive", refusing: [names[0]])
        let audit = ListSink("audit")
        let first = RecordInbox(directory: directory, sinks: [archive, audit]).pass()
        XCTAssertEqual(archive.unreadable, [], "real records arrive parsed")
        XCTAssertEqual(archive.names, names)
        XCTAssertEqual(audit.names, names)
        XCTAssertEqual(first.recordsDelivered, [names[1]])
        XCTAssertEqual(first.recordsAwaitingSinks, [names[0]])
        XCTAssertEqual(first.errors, ["\(names[0]): archive: not now"])
        XCTAssertEqual(try files(directory), [names[0], names[0] + ".audit.ack"])

        archive.accept(names[0])
        let second = RecordInbox(directory: directory, sinks: [archive, audit]).pass()
        XCTAssertEqual(archive.names, names + [names[0]])
        XCTAssertEqual(audit.names, names, "audit had it: not offered again")
        XCTAssertEqual(second.recordsDelivered, [names[0]])
        XCTAssertEqual(try files(directory), [])
        XCTAssertNil(RecordSinkID("Not A Sink"))
        XCTAssertNil(RecordSinkID(""))
        XCTAssertNil(RecordSinkID("../x"))
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
        let audit = ListSink("audit")
        let report = RecordInbox(directory: directory, sinks: [audit]).pass()
        XCTAssertEqual(audit.names, [link, fifo])
        XCTAssertEqual(audit.unreadable, [link, fifo])
        XCTAssertEqual(report.recordsDelivered, [link, fifo])
        XCTAssertEqual(try files(directory), ["crash-x.ack", "notes.txt"])
        XCTAssertEqual(try String(contentsOfFile: outside, encoding: .utf8), "precious")
    }
}
