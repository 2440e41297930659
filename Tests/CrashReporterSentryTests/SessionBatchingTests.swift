// SessionBatchingTests.swift — release health without a request per launch: the sessions of runs
// that ended without a crash wait in their files until a process can afford the round trip (it
// has lived 5 s, or the oldest has waited an hour), then go together in one envelope; checked on
// real `crash-harness deliver --sessions batched` processes (the library's default) against a
// loopback Sentry, with Sentry's own code (sentry_sdk's envelope parser and Session model, Relay's
// normalizer) on what arrives: each run once, nothing lost, nothing sent twice when several
// processes launch at once.
import ProcessSpawning
@testable import CrashReporter
import CrashSentry
import HostFacts
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
@testable import CrashReporterSentry
#endif

final class SessionBatchingTests: XCTestCase {
    let environment = ["SWIFT_BACKTRACE": "enable=no", "SENTRY_ENVIRONMENT": "staging"]

    /// Runs a launch; the threads it had once its launch was done.
    @discardableResult
    func deliver(_ records: String, _ arguments: [String]) throws -> [String] {
        let output = try Scratch.directory("batched-deliver") + "/stdout"
        let child = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", records, "--sessions", "batched"] + arguments,
                                         environment: environment, stdout: output, timeout: 120)
        XCTAssertEqual(child.ending, .exited(0), arguments.joined(separator: " "))
        let last = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").last.map(String.init) ?? "{}"
        return (try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])?["threads"] as? [String] ?? []
    }

    /// The session files waiting in `records/sessions`.
    func waiting(_ records: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: records + "/sessions")) ?? []).filter { $0.hasSuffix(".envelope") }.sorted()
    }

    /// Makes the waiting files look written `seconds` ago, as they would be after that long.
    func age(_ records: String, by seconds: Int) {
        let then = time(nil) - seconds
        for name in waiting(records) {
            var times = [timeval(tv_sec: then, tv_usec: 0), timeval(tv_sec: then, tv_usec: 0)]
            XCTAssertEqual(utimes(records + "/sessions/" + name, &times), 0)
        }
    }

    /// The session payloads of every request, through sentry_sdk's parser and Relay's normalizer.
    func received(_ server: TestHTTPServer) throws -> [[String: Any]] {
        let directory = try Scratch.directory("batched-received")
        var files: [String] = []
        for (index, request) in server.allRequests.enumerated() {
            let file = directory + "/\(index).envelope"
            try Data(request.bodyBytes).write(to: URL(fileURLWithPath: file))
            files.append(file)
        }
        guard !files.isEmpty else { return [] }
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try Oracles.run("sentry_sessions.py", files).utf8)) as? [String: Any])
        XCTAssertEqual((json["errors"] as? [Any])?.count, 0, "\(json["errors"] ?? "")")
        return (json["sessions"] as? [[String: Any]] ?? []).compactMap { $0["payload"] as? [String: Any] }
    }

    /// A command-line tool's launches: each short, none sends a request; the runs' sessions wait.
    /// Once the oldest has waited an hour, the next launch sends every one of them in one
    /// envelope, each once, with its status, and deletes their files.
    func testShortLaunchesSendNoRequestUntilTheOldestSessionHasWaitedAnHourThenOneForAll() throws {
        let records = try Scratch.directory("batched-cli") + "/records"
        let server = try TestHTTPServer()
        let dsn = ["--sentry-dsn", "http://key@127.0.0.1:\(server.port)/1"]
        try deliver(records, dsn + ["--run-id", "first"])
        try deliver(records, dsn + ["--run-id", "second", "--end", "exit"])
        let third = try deliver(records, dsn + ["--run-id", "third"])
        XCTAssertEqual(server.allRequests.count, 0, "no launch paid a request")
        // Nor a thread for sessions that are not due: the sender's, or libdispatch's.
        XCTAssertTrue(third.contains("CrashReporter.l"), "\(third)")
        XCTAssertFalse(third.contains { $0.hasPrefix("CrashReporter.s") || $0.contains("qos") }, "\(third)")
        XCTAssertEqual(waiting(records), ["first.envelope", "second.envelope"], "the runs told so far wait in their files")

        age(records, by: 3700)
        try deliver(records, dsn + ["--run-id", "fourth"])
        XCTAssertEqual(server.allRequests.count, 1, "one request for every run since")
        let sessions = try received(server)
        let sids = sessions.compactMap { $0["sid"] as? String }
        XCTAssertEqual(sids.sorted(), ["first", "second", "third"].map(SentrySession.sessionID).sorted())
        XCTAssertTrue(sessions.allSatisfy { $0["status"] as? String == "exited" && ($0["attrs"] as? [String: Any])?["environment"] as? String == "staging" })
        XCTAssertEqual(waiting(records), [], "sent, and their files deleted")

        // The control: the same launches with every session sent at once pay a request each.
        let eager = try TestHTTPServer()
        let eagerRecords = try Scratch.directory("batched-cli-control") + "/records"
        for run in ["a", "b", "c"] {
            let child = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", eagerRecords, "--sessions", "immediate",
                                                                     "--sentry-dsn", "http://key@127.0.0.1:\(eager.port)/1", "--run-id", run],
                                             environment: environment, timeout: 120)
            XCTAssertEqual(child.ending, .exited(0))
        }
        XCTAssertEqual(eager.allRequests.count, 2, "a request per launch after the first")
    }

    /// A crash is never held back, and the sessions waiting go with it in its envelope: the
    /// crashed session does not reach Sentry ahead of the runs that ended before it (which would
    /// dip the crash-free rate until their batch went), and no request of their own is made.
    func testTheWaitingSessionsRideWithACrashInItsEnvelope() throws {
        let records = try Scratch.directory("batched-crash") + "/records"
        let server = try TestHTTPServer()
        let dsn = ["--sentry-dsn", "http://key@127.0.0.1:\(server.port)/1"]
        try deliver(records, dsn + ["--run-id", "first"])
        try deliver(records, dsn + ["--run-id", "second"])
        let crashed = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", records, "--sessions", "batched", "--run-id", "crashed",
                                                                   "--crash"] + dsn, environment: environment, timeout: 120)
        XCTAssertEqual(crashed.ending, .signaled(SIGSEGV))
        XCTAssertEqual(server.allRequests.count, 0, "nothing sent before the crash's record")
        try deliver(records, dsn + ["--run-id", "after"])
        XCTAssertEqual(server.allRequests.count, 1, "the crash, with every session waiting, in one request")
        XCTAssertTrue(server.allRequests.first?.body.contains("\"type\":\"event\"") == true)
        let statuses = Dictionary(try received(server).map { ($0["sid"] as? String ?? "", $0["status"] as? String ?? "") },
                                  uniquingKeysWith: { a, b in a + "," + b })
        XCTAssertEqual(statuses, [SentrySession.sessionID("first"): "exited", SentrySession.sessionID("second"): "exited",
                                  SentrySession.sessionID("crashed"): "crashed"])
        XCTAssertEqual(waiting(records), [])
    }

    /// An envelope refused whole with sessions riding is sent again without them: the crash is
    /// not given up for a session's sake, and the session waits for its own batch.
    func testACrashEnvelopeRefusedWithSessionsRidingIsSentAgainAlone() throws {
        let records = try Scratch.directory("batched-ride-refused") + "/records"
        try FileManager.default.createDirectory(atPath: records, withIntermediateDirectories: true)
        let names = try Harness.records(1, in: records)
        let bad = SentrySession.sessionID("bad")
        let server = try TestHTTPServer { request in request.body.contains(bad) ? .status(400) : .status(200) }
        let dsn = try XCTUnwrap(SentryDSN("http://key@127.0.0.1:\(server.port)/1"))
        let writer = SentrySink(dsn: dsn, recordDirectory: records)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        XCTAssertTrue(writer.takeRuns([EndedRun(start: RunStart(runID: "bad", process: .current, startWallMilliseconds: now - 2000,
                                                                startMonotonicNanoseconds: 0, appName: "app", appVersion: "1", oomKills: nil),
                                                end: .exited(wallMilliseconds: now - 1000, durationNanoseconds: 1_000_000_000))]))
        XCTAssertTrue(writer.shutdown(deadline: .now.advanced(by: .seconds(5))))

        let sink = SentrySink(dsn: dsn, recordDirectory: records)
        XCTAssertNil(sink.prepareLaunch())
        _ = CrashReporting.deliverRecords(in: records, sinks: [sink])
        XCTAssertTrue(sink.shutdown(deadline: .now.advanced(by: .seconds(30))))
        XCTAssertEqual(server.allRequests.count, 2, "with the session riding (refused), then alone")
        XCTAssertEqual(server.allRequests.first?.body.contains(bad), true)
        XCTAssertEqual(server.allRequests.last?.body.contains(bad), false)
        XCTAssertEqual(sink.currentReport.sent, names)
        XCTAssertEqual(waiting(records), ["bad.envelope"], "the session waits for its own batch")
    }

    /// A process that lives on (a server, a long job) sends the sessions waiting once it has lived
    /// 5 s, in the background, without ending.
    func testAProcessThatLivesOnSendsTheWaitingSessionsAfterFiveSeconds() throws {
        let directory = try Scratch.directory("batched-server")
        let records = directory + "/records"
        let server = try TestHTTPServer()
        let dsn = ["--sentry-dsn", "http://key@127.0.0.1:\(server.port)/1"]
        try deliver(records, dsn + ["--run-id", "before"])
        let ready = directory + "/ready"
        let held = try ChildProcess.start(BuiltProducts.harness, ["deliver", "--records", records, "--sessions", "batched", "--run-id", "server",
                                                                  "--end", "hold", "--ready-file", ready] + dsn, environment: environment)
        defer { Glibc.kill(held.pid, SIGKILL); _ = held.wait(timeout: 30) }
        XCTAssertTrue(Harness.waitForFile(ready))
        XCTAssertEqual(server.allRequests.count, 0, "not yet: the process may be a short one")
        let deadline = Date().addingTimeInterval(30)
        while server.allRequests.isEmpty && Date() < deadline { usleep(100_000) }
        XCTAssertEqual(server.allRequests.count, 1, "sent while the process lives on")
        XCTAssertEqual(try received(server).compactMap { $0["sid"] as? String }, [SentrySession.sessionID("before")])
        XCTAssertEqual(waiting(records), [])
    }

    /// Ten processes launch at once over forty waiting sessions (an hour old): each run's session
    /// reaches Sentry exactly once, however the processes divide them.
    func testTenProcessesLaunchingAtOnceSendEachWaitingSessionOnce() throws {
        let records = try Scratch.directory("batched-concurrent") + "/records"
        let server = try TestHTTPServer()
        let writer = SentrySink(dsn: try XCTUnwrap(SentryDSN("http://key@127.0.0.1:9/1")), recordDirectory: records)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let runs = (0..<40).map { index in
            EndedRun(start: RunStart(runID: "waiting-\(index)", process: .current, startWallMilliseconds: now - 60_000, startMonotonicNanoseconds: 0,
                                     appName: "crash-harness", appVersion: "1", oomKills: nil),
                     end: .exited(wallMilliseconds: now - 30_000, durationNanoseconds: 30_000_000_000))
        }
        XCTAssertTrue(writer.takeRuns(runs))
        XCTAssertTrue(writer.shutdown(deadline: .now.advanced(by: .seconds(5))), "not due in the writer: nothing to wait for")
        XCTAssertEqual(waiting(records).count, 40)
        age(records, by: 3700)

        let children = try (0..<10).map { index in
            try ChildProcess.start(BuiltProducts.harness, ["deliver", "--records", records, "--sessions", "batched", "--run-id", "launch-\(index)",
                                                           "--sentry-dsn", "http://key@127.0.0.1:\(server.port)/1"], environment: environment)
        }
        for child in children { XCTAssertEqual(child.wait(timeout: 120).ending, .exited(0)) }
        let sids = try received(server).compactMap { $0["sid"] as? String }
        let counted = Dictionary(sids.map { ($0, 1) }, uniquingKeysWith: +)
        XCTAssertEqual(counted.filter { $0.value > 1 }, [:], "no session sent twice")
        for run in runs { XCTAssertEqual(counted[SentrySession.sessionID(run.runID)], 1, run.runID) }
        XCTAssertEqual(waiting(records).filter { $0.hasPrefix("waiting-") }, [], "every waiting session sent")
        XCTAssertLessThanOrEqual(server.allRequests.count, 10, "together, not one request per session")
    }

    /// A session's wait is counted from when its run ended: a tool run once a day sends the last
    /// run's session at the next launch (well inside Relay's 5 days), and a run that ended a minute
    /// ago waits.
    func testARunThatEndedOverAnHourAgoIsSentByTheLaunchThatLearnsItAndARecentOneWaits() throws {
        let records = try Scratch.directory("batched-daily") + "/records"
        let server = try TestHTTPServer()
        let dsn = try XCTUnwrap(SentryDSN("http://key@127.0.0.1:\(server.port)/1"))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        func ended(_ id: String, minutesAgo: Int64) -> EndedRun {
            EndedRun(start: RunStart(runID: id, process: .current, startWallMilliseconds: now - minutesAgo * 60_000 - 3000,
                                     startMonotonicNanoseconds: 0, appName: "app", appVersion: "1", oomKills: nil),
                     end: .exited(wallMilliseconds: now - minutesAgo * 60_000, durationNanoseconds: 3_000_000_000))
        }
        let recent = SentrySink(dsn: dsn, recordDirectory: records)
        XCTAssertTrue(recent.takeRuns([ended("a-minute-ago", minutesAgo: 1)]))
        recent.finishLaunch()
        XCTAssertTrue(recent.shutdown(deadline: .now.advanced(by: .seconds(10))))
        XCTAssertEqual(server.allRequests.count, 0, "a run that ended a minute ago waits")

        let daily = SentrySink(dsn: dsn, recordDirectory: records)
        XCTAssertNil(daily.prepareLaunch())
        XCTAssertTrue(daily.takeRuns([ended("yesterday", minutesAgo: 24 * 60)]))
        daily.finishLaunch()
        XCTAssertTrue(daily.shutdown(deadline: .now.advanced(by: .seconds(10))))
        XCTAssertEqual(server.allRequests.count, 1, "yesterday's run is due: one request, with the waiting one")
        XCTAssertEqual(Set(daily.currentReport.sessionsSent), ["yesterday", "a-minute-ago"])
        XCTAssertEqual(waiting(records), [])
    }

    /// A batch Sentry refuses whole (400) is sent again one session at a time: one bad session
    /// does not lose the others, and only it is given up.
    func testABatchRefusedWholeIsSentAgainOneByOneAndOnlyTheBadSessionIsGivenUp() throws {
        let records = try Scratch.directory("batched-refused") + "/records"
        let bad = SentrySession.sessionID("bad")
        let server = try TestHTTPServer { request in request.body.contains(bad) ? .status(400) : .status(200) }
        let dsn = try XCTUnwrap(SentryDSN("http://key@127.0.0.1:\(server.port)/1"))
        let writer = SentrySink(dsn: dsn, recordDirectory: records)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        XCTAssertTrue(writer.takeRuns(["good-1", "bad", "good-2"].map { id in
            EndedRun(start: RunStart(runID: id, process: .current, startWallMilliseconds: now - 2000, startMonotonicNanoseconds: 0,
                                     appName: "app", appVersion: "1", oomKills: nil),
                     end: .exited(wallMilliseconds: now - 1000, durationNanoseconds: 1_000_000_000))
        }))
        XCTAssertTrue(writer.shutdown(deadline: .now.advanced(by: .seconds(5))))
        XCTAssertEqual(server.allRequests.count, 0)
        age(records, by: 3700)

        let sink = SentrySink(dsn: dsn, recordDirectory: records)
        XCTAssertNil(sink.prepareLaunch())
        XCTAssertTrue(sink.shutdown(deadline: .now.advanced(by: .seconds(30))))
        XCTAssertEqual(Set(sink.currentReport.sessionsSent), ["good-1", "good-2"])
        XCTAssertEqual(Array(sink.currentReport.quarantined.keys), ["sessions/bad"])
        XCTAssertEqual(server.allRequests.first?.body.contains(bad), true, "the first request carried the whole batch")
        XCTAssertEqual(server.allRequests.count, 4, "the batch, then each session alone")
        XCTAssertEqual(waiting(records), [])
    }

    /// Sentry failing (here a 503; the network, a DSN it does not know alike): the launch that
    /// finds the sessions due makes one request, and the sessions are held back, in their files:
    /// the launches after make none (nor list them) until the hold has passed; then one request
    /// sends them all and lifts it.
    func testAFailedSendHoldsTheWaitingSessionsBackFromTheLaunchesAfter() throws {
        final class Failing: @unchecked Sendable {
            private let lock = NSLock()
            private var value = true
            var on: Bool {
                get { lock.withLock { value } }
                set { lock.withLock { value = newValue } }
            }
        }
        let records = try Scratch.directory("batched-held") + "/records"
        let failing = Failing()
        let server = try TestHTTPServer { _ in failing.on ? .status(503) : .status(200) }
        let dsn = try XCTUnwrap(SentryDSN("http://key@127.0.0.1:\(server.port)/1"))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let writer = SentrySink(dsn: dsn, recordDirectory: records)
        XCTAssertTrue(writer.takeRuns(["one", "two"].map { id in
            EndedRun(start: RunStart(runID: id, process: .current, startWallMilliseconds: now - 2000, startMonotonicNanoseconds: 0,
                                     appName: "app", appVersion: "1", oomKills: nil),
                     end: .exited(wallMilliseconds: now - 1000, durationNanoseconds: 1_000_000_000))
        }))
        XCTAssertTrue(writer.shutdown(deadline: .now.advanced(by: .seconds(5))))
        age(records, by: 3700)
        func launch() -> SentrySink {
            let sink = SentrySink(dsn: dsn, recordDirectory: records)
            XCTAssertNil(sink.prepareLaunch())
            sink.finishLaunch()
            _ = sink.shutdown(deadline: .now.advanced(by: .seconds(10)))
            return sink
        }

        _ = launch()
        XCTAssertEqual(server.allRequests.count, 1, "the launch that found them due tried once")
        XCTAssertNotNil(SentrySessionsHold.until(records, now: now), "and held them back")
        XCTAssertEqual(waiting(records), ["one.envelope", "two.envelope"], "kept in their files")
        for _ in 0..<3 { _ = launch() }
        XCTAssertEqual(server.allRequests.count, 1, "no launch paid a request while they were held")

        // The hold has passed, and Sentry answers again.
        XCTAssertTrue(SmallFile.replace(SentrySessionsHold.path(records), with: Array("\(now - 1)\n".utf8)))
        failing.on = false
        let back = launch()
        XCTAssertEqual(server.allRequests.count, 2)
        XCTAssertEqual(Set(back.currentReport.sessionsSent), ["one", "two"])
        XCTAssertEqual(waiting(records), [])
        XCTAssertFalse(FileManager.default.fileExists(atPath: SentrySessionsHold.path(records)), "the hold lifted")
    }

    /// A hold file that is not one (garbage, a time more than a day away) holds nothing.
    func testAHoldThatDoesNotParseHoldsNothing() throws {
        let records = try Scratch.directory("batched-hold-bad")
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for text in ["soon\n", "", "\(now + 3 * 86_400_000)\n", "-5\n", String(repeating: "9", count: 40)] {
            XCTAssertTrue(SmallFile.replace(SentrySessionsHold.path(records), with: Array(text.utf8)))
            XCTAssertNil(SentrySessionsHold.until(records, now: now), String(reflecting: text))
        }
        SentrySessionsHold.hold(records, now: now, retryAfter: .seconds(7200))
        XCTAssertEqual(SentrySessionsHold.until(records, now: now), now + 7_200_000, "as long as the answer asked, when longer")
        SentrySessionsHold.hold(records, now: now, retryAfter: nil)
        XCTAssertEqual(SentrySessionsHold.until(records, now: now), now + SentrySessionsHold.minimum)
    }
}
