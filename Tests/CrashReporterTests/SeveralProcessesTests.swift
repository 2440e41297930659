// SeveralProcessesTests.swift — several processes of one app over one record directory (a
// pre-forked service, a process pool): each crash reaches each sink (Sentry, and the harness's
// recording sink standing in for the app's other one) once, and a sender killed mid-send is
// followed by exactly one resend. (The analytics' events of the same, over one store:
// SensorsAnalyticsTests' SeveralProcessesEventsTests.)
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class SeveralProcessesTests: XCTestCase {
    /// `count` records of real crashes in `records`, none ingested yet (a crash loop).
    func crashes(_ count: Int, into records: String) throws {
        try FileManager.default.createDirectory(atPath: records, withIntermediateDirectories: true)
        for _ in 0..<count {
            let child = try ChildProcess.run(Harness.path, ["run", "null-dereference", "--dir", records], environment: Harness.environment,
                                             timeout: 60)
            XCTAssertEqual(child.ending, .signaled(SIGSEGV))
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: records).filter { $0.hasSuffix(".ccrec") }.count, count)
    }

    /// The event id of an envelope (its header's `event_id`).
    static func eventID(_ request: TestHTTPServer.Request) -> String? {
        let header = request.bodyBytes.prefix { $0 != 0x0A }
        return ((try? JSONSerialization.jsonObject(with: Data(header))) as? [String: Any])?["event_id"] as? String
    }

    /// A next launch of the app (`crash-harness deliver`) over `records`, with Sentry and, when
    /// `recorded` is given, the recording sink.
    func nextLaunch(records: String, sentry: TestHTTPServer, recorded: String? = nil) -> [String] {
        ["deliver", "--records", records, "--sentry-dsn", "http://0123456789abcdef@127.0.0.1:\(sentry.port)/42"]
            + (recorded.map { ["--recording-sink", $0] } ?? [])
    }

    /// Eight processes of the app start together over 20 records: Sentry gets each record once,
    /// the other sink each record once, and every record file is gone at the end.
    func testEightProcessesStartingTogetherSendEachRecordOnce() throws {
        let directory = try Scratch.directory("several-processes")
        let records = directory + "/records", recorded = directory + "/recorded"
        try crashes(20, into: records)
        let sentry = try TestHTTPServer()
        let processes = try (0..<8).map { _ in
            try ChildProcess.start(Harness.path, nextLaunch(records: records, sentry: sentry, recorded: recorded),
                                   environment: Harness.environment)
        }
        for process in processes { XCTAssertEqual(process.wait(timeout: 120).ending, .exited(0)) }

        // Every request is an envelope: a record's (with its run's session), or runs' sessions alone.
        let ids = sentry.allRequests.compactMap(Self.eventID)
        let sessionsAlone = sentry.allRequests.filter { !$0.body.contains("\"type\":\"event\"") && $0.body.contains("\"type\":\"session\"") }
        XCTAssertEqual(ids.count + sessionsAlone.count, sentry.allRequests.count, "every request is an envelope")
        // Each run's session once, whichever process told it.
        let sids = sentry.allRequests.flatMap { request in
            request.bodyBytes.split(separator: 0x0A).compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])?["sid"] as? String
            }
        }
        XCTAssertEqual(sids.count, Set(sids).count, "a session sent twice: \(sids.sorted())")
        let perRecord = Dictionary(ids.map { ($0, 1) }, uniquingKeysWith: +)
        XCTAssertEqual(perRecord.count, 20, "every record reached Sentry")
        XCTAssertEqual(perRecord.values.filter { $0 > 1 }.count, 0, "sent more than once: \(perRecord.filter { $0.value > 1 })")
        let taken = try Harness.recorded(recorded).records.compactMap { $0["record"] as? String }
        XCTAssertEqual(Set(taken).count, 20, "every record reached the other sink: \(taken.sorted())")
        XCTAssertEqual(taken.count, 20, "noted once each (the sink claims a record, as the events store does)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: records).filter { $0.contains(".ccrec") }, [])
    }

    /// A sender killed with SIGKILL while its request is in flight leaves the record to the next
    /// process, which sends it exactly once more (with the same event id); the others once.
    func testASenderKilledMidSendIsFollowedByExactlyOneResend() throws {
        let directory = try Scratch.directory("killed-sender")
        let records = directory + "/records"
        try crashes(3, into: records)
        let release = DispatchSemaphore(value: 0)
        let sentry = try TestHTTPServer { request in
            if request.index == 0 { _ = release.wait(timeout: .now() + 60); return .reset }
            return .status(200)
        }
        let first = try ChildProcess.start(Harness.path, nextLaunch(records: records, sentry: sentry), environment: Harness.environment)
        let deadline = Date(timeIntervalSinceNow: 60)
        while sentry.allRequests.isEmpty && Date() < deadline { usleep(5000) }
        let held = try XCTUnwrap(sentry.allRequests.first.flatMap(Self.eventID), "the first sender's request arrived")
        kill(first.pid, SIGKILL)
        XCTAssertEqual(first.wait(timeout: 60).ending, .signaled(SIGKILL))
        release.signal()

        let second = try ChildProcess.run(Harness.path, nextLaunch(records: records, sentry: sentry), environment: Harness.environment,
                                          timeout: 120)
        XCTAssertEqual(second.ending, .exited(0))
        let perRecord = Dictionary(sentry.allRequests.compactMap(Self.eventID).map { ($0, 1) }, uniquingKeysWith: +)
        XCTAssertEqual(perRecord.count, 3)
        XCTAssertEqual(perRecord[held], 2, "the killed sender's record: its request, then one resend")
        XCTAssertEqual(perRecord.filter { $0.key != held }.values.sorted(), [1, 1])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: records).filter { $0.contains(".ccrec") }, [])
    }
}
