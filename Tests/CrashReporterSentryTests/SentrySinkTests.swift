// SentrySinkTests.swift — the Sentry sink's guarantees against a real HTTP server on 127.0.0.1: in
// order, retry with backoff, 429 and X-Sentry-Rate-Limits honoured, 400 and 413 quarantined and
// counted (the other answers: CrashReporterTests' DeliveryRuleTests), records deleted only once
// Sentry and the app's other sink (a recording sink here) both have them.
// (What the envelope holds is CrashSentry's, checked against Sentry's own parser elsewhere.)
@testable import CrashReporter
import CrashRecordFormat
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
@testable import CrashReporterSentry

final class SentrySinkTests: XCTestCase {
    /// `count` real records (the debug harness crashing `null-dereference` into `directory`).
    func records(_ count: Int, in directory: String) throws -> [String] { try Harness.records(count, in: directory) }

    func recordFiles(_ directory: String) throws -> [String] {
        try RecordFileName.names(in: directory).filter { RecordFileName($0) != nil }
    }

    /// Everything in `directory` but the crash-loop state.
    func leftovers(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0 != RecordFileName.crashLoopState }.sorted()
    }

    func sink(_ server: TestHTTPServer, policy: UploadPolicy = LoopbackSentry.policy()) throws -> SentrySink {
        try LoopbackSentry.sink(server, policy: policy)
    }

    /// One launch's inbox pass: the app's other sink (when there is one) and the Sentry sink.
    @discardableResult
    func pass(_ directory: String, other: RecordingSink?, _ sentry: SentrySink) -> CrashReporting.LaunchReport {
        CrashReporting.deliverRecords(in: directory, sinks: (other.map { [$0] } ?? []) + [sentry])
    }

    func deadline(_ seconds: Double) -> SuspendingClock.Instant { .now.advanced(by: .seconds(seconds)) }

    func testRecordsAreSentInOrderWithTheAuthHeaderAndDeletedOnlyOnceBothSinksHaveThem() throws {
        let directory = try Scratch.directory("sentry-order")
        let names = try records(3, in: directory)
        let other = RecordingSink("archive")
        // Sentry answers only once the test says so: the other sink has them first.
        let gate = Gate()
        let server = try TestHTTPServer { _ in gate.wait(); return .status(200) }
        let sentry = try sink(server)
        let report = pass(directory, other: other, sentry)
        XCTAssertEqual(other.names, names)
        XCTAssertEqual(report.recordsAwaitingSinks, names, "the other sink has them, Sentry not yet: the files stay")
        XCTAssertEqual(try recordFiles(directory), names)
        XCTAssertEqual(try leftovers(directory), (names + names.map { $0 + ".archive.ack" }).sorted(),
                       "the other sink's acknowledgments beside the records")
        gate.open()
        XCTAssertTrue(sentry.shutdown(deadline: deadline(30)))
        let requests = server.allRequests
        XCTAssertEqual(requests.compactMap(LoopbackSentry.sentName), names)
        for request in requests {
            XCTAssertEqual(request.path, "/api/42/envelope/")
            XCTAssertEqual(request.headers["x-sentry-auth"], "Sentry sentry_version=7, sentry_key=publickey, sentry_client=crashcapture/0.1.0")
            XCTAssertEqual(request.headers["content-type"], "application/x-sentry-envelope")
        }
        XCTAssertEqual(sentry.currentReport.sent, names)
        XCTAssertEqual(try leftovers(directory), [], "records and acknowledgments deleted")
        XCTAssertEqual(other.names, names, "each given to the other sink once")
    }

    func testServerErrorsAndNetworkFailuresAreRetriedAndTheRecordKeptUntilAcknowledged() throws {
        let directory = try Scratch.directory("sentry-retry")
        let names = try records(1, in: directory)
        let server = try TestHTTPServer { request in
            switch request.index {
            case 0: return .status(503)
            case 1: return .reset
            case 2: return .status(408)
            default: return .status(200)
            }
        }
        let sentry = try sink(server)
        _ = pass(directory, other: nil, sentry)
        XCTAssertTrue(sentry.shutdown(deadline: deadline(30)))
        XCTAssertEqual(server.allRequests.count, 4)
        XCTAssertEqual(server.allRequests.compactMap(LoopbackSentry.sentName), Array(repeating: names[0], count: 4))
        XCTAssertEqual(sentry.currentReport.sent, names)
        XCTAssertEqual(try leftovers(directory), [])
    }

    func testA429WaitsForTheRateLimitItAnnounces() throws {
        let directory = try Scratch.directory("sentry-429")
        _ = try records(2, in: directory)
        let times = TimeLog()
        let server = try TestHTTPServer { request in
            times.mark()
            return request.index == 0 ? .status(429, headers: ["X-Sentry-Rate-Limits": "1:error;attachment:organization, 900:transaction:project"])
                : .status(200)
        }
        var policy = LoopbackSentry.policy()
        policy.maxRetryDelay = .seconds(5) // the cap must not cut the 1 s limit short
        let sentry = try sink(server, policy: policy)
        _ = pass(directory, other: nil, sentry)
        XCTAssertTrue(sentry.shutdown(deadline: deadline(30)))
        let marks = times.marks
        XCTAssertEqual(marks.count, 3)
        XCTAssertGreaterThanOrEqual(marks[1] - marks[0], 0.95, "the retry came before the announced second")
        XCTAssertEqual(sentry.currentReport.sent.count, 2)
    }

    func testA413AndAPoisonEnvelopeAreQuarantinedCountedAndDoNotBlockTheNext() throws {
        let directory = try Scratch.directory("sentry-413")
        let names = try records(3, in: directory)
        let other = RecordingSink("archive")
        let server = try TestHTTPServer { request in
            switch LoopbackSentry.sentName(request) {
            case names[0]: return .status(413)
            case names[1]: return .status(400)
            default: return .status(200)
            }
        }
        let sentry = try sink(server)
        _ = pass(directory, other: other, sentry)
        XCTAssertTrue(sentry.shutdown(deadline: deadline(30)))
        XCTAssertEqual(server.allRequests.compactMap(LoopbackSentry.sentName), names, "each sent once, in order")
        let report = sentry.currentReport
        XCTAssertEqual(report.sent, [names[2]])
        XCTAssertEqual(Set(report.quarantined.keys), [names[0], names[1]])
        XCTAssertTrue(report.quarantined[names[0]]?.hasPrefix("HTTP 413") == true)
        XCTAssertEqual(sentry.currentReport.quarantined.count, 2)
        XCTAssertEqual(try leftovers(directory), [])
    }

    func testWhatIsNotSentByTheDeadlineIsSentByTheNextLaunchAndNothingIsTakenTwice() throws {
        let directory = try Scratch.directory("sentry-next")
        let names = try records(2, in: directory)
        let other = RecordingSink("archive")
        let down = try TestHTTPServer { _ in .reset } // no answer at all: retried without limit
        let first = try sink(down)
        _ = pass(directory, other: other, first)
        XCTAssertEqual(other.names, names)
        XCTAssertFalse(first.shutdown(deadline: deadline(0.5)))
        XCTAssertEqual(first.currentReport.sent, [])
        XCTAssertNotNil(first.currentReport.lastError)
        XCTAssertEqual(try recordFiles(directory), names)
        // Next launch: the other sink has them (its acknowledgments say so): only Sentry is offered them.
        let up = try TestHTTPServer()
        let second = try sink(up)
        let next = pass(directory, other: other, second)
        XCTAssertEqual(other.names, names, "the other sink was not asked again")
        // Taken by the Sentry sink: awaiting it, or already sent and deleted by its thread before
        // the pass looked again (a loopback Sentry answers within the pass).
        XCTAssertEqual((next.recordsAwaitingSinks + next.recordsDelivered).sorted(), names)
        XCTAssertTrue(second.shutdown(deadline: deadline(30)))
        XCTAssertEqual(second.currentReport.sent, names)
        XCTAssertEqual(other.names, names, "none given to the other sink twice")
        XCTAssertEqual(try leftovers(directory), [])
    }

    /// Server errors say nothing of the record (DeliveryRule): after the limit it waits for the
    /// next launch, and the next record goes through meanwhile.
    func testAnEnvelopeTheServerFailsOnEveryTimeIsKeptAfterTheLimitAndTheNextGoesThrough() throws {
        let directory = try Scratch.directory("sentry-5xx")
        let names = try records(2, in: directory)
        let server = try TestHTTPServer { request in LoopbackSentry.sentName(request) == names[0] ? .status(500) : .status(200) }
        var policy = LoopbackSentry.policy()
        policy.maxServerErrorAttempts = 3
        let sentry = try sink(server, policy: policy)
        _ = pass(directory, other: nil, sentry)
        XCTAssertTrue(sentry.shutdown(deadline: deadline(30)))
        XCTAssertEqual(server.allRequests.compactMap(LoopbackSentry.sentName), [names[0], names[0], names[0], names[1]])
        XCTAssertEqual(sentry.currentReport.sent, [names[1]])
        XCTAssertTrue(sentry.currentReport.kept[names[0]]?.hasPrefix("3 server errors in a row") == true)
        XCTAssertEqual(sentry.currentReport.quarantined, [:])
        XCTAssertEqual(try recordFiles(directory), [names[0]], "kept for the next launch")
    }

    /// A record the reader rejects still tells Sentry a crash happened: an event saying so
    /// (Sentry's own parser reads it). Its bytes (a file that does not parse cannot be minimised
    /// section by section) are attached only when the app sends everything.
    func testAnUnreadableRecordReachesSentryAsAnEventSayingSo() throws {
        for data in [CrashDataPolicy(), .everything] {
            let directory = try Scratch.directory("sentry-unreadable")
            let name = "crash-1700000000000-999999-999999.ccrec"
            try Data("not a record at all".utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
            let server = try TestHTTPServer()
            let sentry = SentrySink(dsn: try LoopbackSentry.dsn(server), policy: LoopbackSentry.policy(), data: data)
            _ = pass(directory, other: nil, sentry)
            XCTAssertTrue(sentry.shutdown(deadline: deadline(30)))
            XCTAssertEqual(sentry.currentReport.sent, [name])
            let body = try XCTUnwrap(server.allRequests.first?.bodyBytes)
            let lines = body.split(separator: 0x0A, omittingEmptySubsequences: false)
            let event = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(lines[2])) as? [String: Any])
            let exception = try XCTUnwrap(((event["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
            XCTAssertEqual(exception["type"] as? String, "UnreadableCrashRecord")
            XCTAssertTrue((exception["value"] as? String)?.contains("not a crash record") == true, "\(exception)")
            XCTAssertEqual(event["level"] as? String, "fatal")
            let everything = data == .everything
            XCTAssertEqual(String(decoding: body, as: UTF8.self).contains("not a record at all"), everything, "the bytes attached: \(everything)")
            XCTAssertEqual(try leftovers(directory), [])
            // Sentry's own envelope parser and Relay's normaliser accept it (the script fails otherwise).
            let file = try Scratch.directory("sentry-unreadable-envelope") + "/envelope"
            try Data(body).write(to: URL(fileURLWithPath: file))
            let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try Oracles.run("sentry_check.py", [file]).utf8)) as? [String: Any])
            XCTAssertEqual((summary["errors"] as? [Any])?.count, 0)
            XCTAssertEqual((summary["items"] as? [[String: Any]])?.compactMap { $0["type"] as? String }, everything ? ["event", "attachment"] : ["event"])
        }
    }

    /// A crash serving a request, through the sink's own envelope builder: the header's trace
    /// carries the DSN's public key and the event's trace id; the request's query (a token)
    /// reaches Sentry only with `requestQuery`.
    func testARequestsTraceAndQueryReachSentryAsTheDSNAndThePolicySay() throws {
        for data in [CrashDataPolicy(), CrashDataPolicy(requestQuery: true)] {
            let directory = try Scratch.directory("sentry-request")
            let child = try ChildProcess.run(BuiltProducts.harness, ["run", "request-with-query", "--dir", directory],
                                             environment: ["SWIFT_BACKTRACE": "enable=no"], timeout: 60)
            XCTAssertEqual(child.ending, .signaled(SIGILL))
            let server = try TestHTTPServer()
            let sentry = SentrySink(dsn: try LoopbackSentry.dsn(server), policy: LoopbackSentry.policy(), data: data)
            _ = pass(directory, other: nil, sentry)
            XCTAssertTrue(sentry.shutdown(deadline: deadline(30)))
            XCTAssertEqual(sentry.currentReport.sent.count, 1)
            let body = try XCTUnwrap(server.allRequests.first?.bodyBytes)
            let lines = body.split(separator: 0x0A, omittingEmptySubsequences: false)
            let header = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(lines[0])) as? [String: Any])
            let event = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(lines[2])) as? [String: Any])
            let trace = try XCTUnwrap(header["trace"] as? [String: String])
            XCTAssertEqual(trace["public_key"], "publickey")
            XCTAssertEqual(trace["trace_id"], ((event["contexts"] as? [String: Any])?["trace"] as? [String: Any])?["trace_id"] as? String)
            XCTAssertEqual(trace["trace_id"], "4bf92f3577b34da6a3ce929d0000000c")
            let token = Array("s3cr3t-query-token".utf8)
            let holdsToken = (0...(body.count - token.count)).contains { body[$0..<$0 + token.count].elementsEqual(token) }
            XCTAssertEqual(holdsToken, data.requestQuery, "the query in what was sent")
            XCTAssertEqual((event["request"] as? [String: Any])?["query_string"] != nil, data.requestQuery)
        }
    }

    /// A valid DSN starts the upload whatever else is configured; only a DSN that does not parse
    /// is reported as one (it once was, for a valid DSN, when no envelope builder was set).
    func testOnlyADSNThatDoesNotParseIsReportedAsNotADSN() throws {
        for (dsn, error) in [("http://0123456789abcdef@127.0.0.1:9/42", false), ("not a dsn", true)] {
            let directory = try Scratch.directory("dsn-report")
            var configuration = CrashReporting.Configuration(recordDirectory: directory + "/records", appName: "dsn-test", appVersion: "1")
            configuration.captureCrashes = false
            configuration.sentry = SentryOptions(dsn: dsn)
            let reporting = CrashReporting.start(configuration)
            XCTAssertEqual(reporting.sentryDSNError != nil, error, "\(dsn): \(reporting.sentryDSNError ?? "no error")")
            if error { XCTAssertTrue(reporting.sentryDSNError?.hasPrefix("not a Sentry DSN") == true) }
            _ = reporting.shutdown(timeout: .seconds(2))
        }
    }

    func testDSNs() throws {
        let dsn = try XCTUnwrap(SentryDSN("https://abc123@o1.ingest.sentry.example:8443/some/path/4505"))
        XCTAssertEqual(dsn.publicKey, "abc123")
        XCTAssertEqual(dsn.projectID, "4505")
        XCTAssertEqual(dsn.envelopeURL?.text, "https://o1.ingest.sentry.example:8443/some/path/api/4505/envelope/")
        XCTAssertEqual(SentryDSN("http://k:secret@127.0.0.1/7")?.envelopeURL?.text, "http://127.0.0.1/api/7/envelope/")
        XCTAssertEqual(SentryDSN(" HTTP://k@[::1]:9000/7 ")?.envelopeAddress, "http://[::1]:9000/api/7/envelope/")
        XCTAssertEqual(SentryDSN("https://k@sentry.example/42?x=1")?.envelopeAddress, "https://sentry.example/api/42/envelope/")
        for bad in ["", "nonsense", "https://sentry.example/42", "https://key@sentry.example/", "https://key@sentry.example/notanumber",
                    "ftp://key@sentry.example/1", "https://key@/1", "https://key@sentry.example:0/1", "https://key@sentry.example:99999/1",
                    "https://key@sentry.example:port/1", "https://k y@sentry.example/1", "https://key@sentry example/1",
                    "https://key@[::1/1", "https://@sentry.example/1"] {
            XCTAssertNil(SentryDSN(bad), bad)
        }
    }

    func testRateLimitHeadersArePerCategory() {
        func limits(_ header: String?, status: Int = 200) -> [SentryCategory: Int64] {
            var limits = SentryRateLimits()
            limits.update(header: header, retryAfter: nil, status: status, now: 1_000)
            return limits.until
        }
        XCTAssertEqual(limits("60:error:organization"), [.error: 61_000])
        XCTAssertEqual(limits("60::organization"), [.error: 61_000, .attachment: 61_000, .session: 61_000], "no categories: everything")
        XCTAssertEqual(limits("10:transaction:key, 30:attachment;error:org, 5:default:org"), [.error: 31_000, .attachment: 31_000])
        XCTAssertEqual(limits("60:transaction;session:organization"), [.session: 61_000], "a session limit holds back sessions alone")
        XCTAssertEqual(limits("soon:error"), [:])
        XCTAssertEqual(limits(nil), [:])
        XCTAssertEqual(limits(nil, status: 429), [.error: 61_000, .attachment: 61_000, .session: 61_000], "a 429 without the header: 60 s for all")
    }

    /// Limits and discards are kept beside the records for the next launch; what is in those
    /// files is untrusted (a limit longer than a day, garbage, a link: ignored).
    func testRateLimitsAndDiscardsOutliveTheLaunch() throws {
        let directory = try Scratch.directory("sentry-limits-kept")
        var limits = SentryRateLimits()
        limits.update(header: "120:session:org", retryAfter: nil, status: 200, now: 10_000)
        limits.save(directory)
        XCTAssertEqual(SentryRateLimits.load(directory, now: 20_000).wait(for: .session, now: 20_000), .milliseconds(110_000))
        XCTAssertNil(SentryRateLimits.load(directory, now: 200_000).wait(for: .session, now: 200_000), "past: gone")
        try Data("session 99999999999999\nerror x\nbogus 5\n".utf8).write(to: URL(fileURLWithPath: SentryRateLimits.path(directory)))
        XCTAssertEqual(SentryRateLimits.load(directory, now: 0).wait(for: .session, now: 0), .milliseconds(86_400_000), "capped at a day")
        var discards = SentryDiscards()
        discards.add(.beforeSend, .error)
        discards.add(.rateLimitBackoff, .session, 2)
        discards.save(directory)
        XCTAssertEqual(SentryDiscards.load(directory), discards)
        discards.subtract(discards)
        discards.save(directory)
        XCTAssertFalse(FileManager.default.fileExists(atPath: SentryDiscards.path(directory)), "nothing left to report: no file")
    }
}

/// Holds the server's answers until opened.
final class Gate: @unchecked Sendable {
    private let condition = NSCondition()
    private var isOpen = false
    func open() { condition.withLock { isOpen = true; condition.broadcast() } }
    func wait() { condition.withLock { while !isOpen { condition.wait() } } }
}
