// DeliveryRuleTests.swift — which answers delete a record and which keep it (DeliveryRule), the
// same for the Sentry and the OTLP sink, against real HTTP servers on 127.0.0.1: every status
// once; a wrong key stops the launch's sending and loses nothing; a DSN that does not parse keeps
// the records and the runs' sessions, and each launch says so once on stderr, in real
// `crash-harness deliver` processes.
@testable import CrashReporter
import CrashRecordFormat
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
@testable import CrashReporterSentry
@testable import CrashReporterOTLP
#endif

final class DeliveryRuleTests: XCTestCase {
    static let statuses = [200, 204, 400, 413, 415, 422, 301, 401, 403, 404, 405, 407, 410, 418, 500, 503]

    /// Deleted: delivered, or refused for the record's own content. Kept: everything else.
    static func deletes(_ status: Int) -> Bool { (200..<300).contains(status) || [400, 413, 415, 422].contains(status) }

    func deadline(_ seconds: Double) -> SuspendingClock.Instant { .now.advanced(by: .seconds(seconds)) }

    func policy() -> UploadPolicy {
        var policy = UploadPolicy()
        policy.initialRetryDelay = .milliseconds(10)
        policy.maxRetryDelay = .milliseconds(50)
        policy.requestTimeout = .seconds(5)
        policy.maxServerErrorAttempts = 1
        return policy
    }

    func recordFiles(_ directory: String) throws -> [String] {
        try RecordFileName.names(in: directory).filter { RecordFileName($0) != nil }
    }

    /// One real record, crashed once and copied into a directory per case.
    static let record: Result<(directory: String, name: String), any Error> = Result {
        let directory = try Scratch.directory("delivery-rule-record")
        let name = try XCTUnwrap(try Harness.records(1, in: directory).first)
        return (directory, name)
    }

    func copyOfTheRecord(_ label: String) throws -> (directory: String, name: String) {
        let (source, name) = try Self.record.get()
        let directory = try Scratch.directory(label)
        try FileManager.default.copyItem(atPath: source + "/" + name, toPath: directory + "/" + name)
        return (directory, name)
    }

    func testTheRuleSortsEveryStatus() {
        for status in Self.statuses {
            let verdict = DeliveryRule.verdict(status: status)
            XCTAssertEqual(verdict == .delivered || verdict == .refused, Self.deletes(status), "\(status): \(verdict)")
        }
        XCTAssertEqual(DeliveryRule.verdict(status: 0), .retry)
        XCTAssertEqual(DeliveryRule.verdict(status: 429), .retry)
        XCTAssertEqual(DeliveryRule.verdict(status: 408), .retry)
    }

    func testEveryStatusDeletesOrKeepsTheRecordAlikeForSentryAndOTLP() throws {
        for status in Self.statuses {
            let server = try TestHTTPServer { _ in .status(status, headers: ["Content-Type": "text/plain"], body: Array("answer \(status)".utf8)) }
            let sentryCase = try copyOfTheRecord("rule-sentry-\(status)")
            let dsn = try XCTUnwrap(SentryDSN("http://publickey@127.0.0.1:\(server.port)/42"))
            let sentry = SentrySink(dsn: dsn, policy: policy(), envelope: LoopbackSentry.envelope)
            _ = CrashReporting.deliverRecords(in: sentryCase.directory, sinks: [sentry])
            XCTAssertTrue(sentry.shutdown(deadline: deadline(30)))
            let otlpCase = try copyOfTheRecord("rule-otlp-\(status)")
            let otlp = OTLPSink(options: OTLPOptions(logsEndpoint: server.origin + "/v1/logs", upload: policy()))
            _ = CrashReporting.deliverRecords(in: otlpCase.directory, sinks: [otlp])
            XCTAssertTrue(otlp.shutdown(deadline: deadline(30)))

            let expected = Self.deletes(status) ? [] : [sentryCase.name]
            XCTAssertEqual(try recordFiles(sentryCase.directory), expected, "Sentry, HTTP \(status)")
            XCTAssertEqual(try recordFiles(otlpCase.directory), expected, "OTLP, HTTP \(status)")
            // A kept record says why; an answer about the configuration is the launch's error.
            let configuration = !Self.deletes(status) && !(500..<600).contains(status)
            XCTAssertEqual(sentry.currentReport.kept[sentryCase.name] != nil, !Self.deletes(status), "Sentry, HTTP \(status)")
            XCTAssertEqual(otlp.currentReport.kept[otlpCase.name] != nil, !Self.deletes(status), "OTLP, HTTP \(status)")
            XCTAssertEqual(sentry.currentReport.configurationError?.hasPrefix("HTTP \(status)"), configuration ? true : nil, "Sentry, HTTP \(status)")
            XCTAssertEqual(otlp.currentReport.configurationError?.hasPrefix("HTTP \(status)"), configuration ? true : nil, "OTLP, HTTP \(status)")
            if [400, 413, 415, 422].contains(status) {
                XCTAssertNotNil(sentry.currentReport.quarantined[sentryCase.name], "Sentry, HTTP \(status)")
                XCTAssertNotNil(otlp.currentReport.rejected[otlpCase.name], "OTLP, HTTP \(status)")
            }
        }
    }

    /// A key Sentry refuses: one request, not one per record; every record kept; the next launch,
    /// with the key fixed, sends each once.
    func testAfterAWrongKeyNothingMoreIsSentThatLaunchAndTheNextSendsEverything() throws {
        let directory = try Scratch.directory("rule-wrong-key")
        let names = try Harness.records(3, in: directory)
        let refusing = try TestHTTPServer { _ in .status(401, body: Array("{\"detail\":\"invalid api key\"}".utf8)) }
        let first = SentrySink(dsn: try XCTUnwrap(SentryDSN("http://wrongkey@127.0.0.1:\(refusing.port)/42")), policy: policy(),
                               envelope: LoopbackSentry.envelope)
        _ = CrashReporting.deliverRecords(in: directory, sinks: [first])
        XCTAssertTrue(first.shutdown(deadline: deadline(30)))
        XCTAssertEqual(refusing.allRequests.count, 1)
        XCTAssertEqual(Set(first.currentReport.kept.keys), Set(names))
        XCTAssertTrue(first.currentReport.configurationError?.contains("invalid api key") == true)
        XCTAssertEqual(try recordFiles(directory).sorted(), names.sorted())

        let taking = try TestHTTPServer()
        let second = SentrySink(dsn: try XCTUnwrap(SentryDSN("http://rightkey@127.0.0.1:\(taking.port)/42")), policy: policy(),
                                envelope: LoopbackSentry.envelope)
        _ = CrashReporting.deliverRecords(in: directory, sinks: [second])
        XCTAssertTrue(second.shutdown(deadline: deadline(30)))
        XCTAssertEqual(taking.allRequests.compactMap(LoopbackSentry.sentName), names)
        XCTAssertEqual(try recordFiles(directory), [])
    }

    // MARK: whole reporters, in child processes

    let environment = ["SWIFT_BACKTRACE": "enable=no"]

    func deliver(_ records: String, _ arguments: [String], expect ending: ChildProcess.Ending = .exited(0)) throws -> String {
        let stderr = records + "-\(UInt32.random(in: 0...UInt32.max)).stderr"
        let child = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", records, "--timeout", "5"] + arguments,
                                         environment: environment, stderr: stderr, timeout: 120)
        XCTAssertEqual(child.ending, ending, arguments.joined(separator: " "))
        return String(decoding: FileManager.default.contents(atPath: stderr) ?? Data(), as: UTF8.self)
    }

    /// A wrong key (403, as Relay answers for a project that refuses events) and then a DSN that
    /// does not parse: the crashed run's record and session stay, each launch says so once on
    /// stderr; the launch with the right DSN sends the crash with its session.
    func testAWrongDSNLosesNeitherTheCrashNorItsSessionAndSaysSoOncePerLaunch() throws {
        let directory = try Scratch.directory("rule-wrong-dsn")
        let records = directory + "/records"
        _ = try deliver(records, ["--run-id", "crashed", "--crash"], expect: .signaled(SIGSEGV))
        let crashed = try recordFiles(records)
        XCTAssertEqual(crashed.count, 1)

        let refusing = try TestHTTPServer { _ in .status(403, body: Array("{\"detail\":\"event submission rejected with_reason: ProjectId\"}".utf8)) }
        let wrongKey = try deliver(records, ["--run-id", "second", "--sentry-dsn", "http://key@127.0.0.1:\(refusing.port)/42"])
        XCTAssertEqual(wrongKey.components(separatedBy: "Sentry: HTTP 403").count - 1, 1, wrongKey)
        XCTAssertTrue(wrongKey.contains("kept for a later launch"), wrongKey)
        XCTAssertEqual(try recordFiles(records), crashed)

        let notADSN = try deliver(records, ["--run-id", "third", "--sentry-dsn", "https://no-project-here"])
        XCTAssertEqual(notADSN.components(separatedBy: "the Sentry DSN is not a Sentry DSN").count - 1, 1, notADSN)
        XCTAssertEqual(try recordFiles(records), crashed)

        let taking = try TestHTTPServer()
        _ = try deliver(records, ["--run-id", "fourth", "--sentry-dsn", "http://key@127.0.0.1:\(taking.port)/42"])
        XCTAssertEqual(try recordFiles(records), [])
        let bodies = taking.allRequests.map { String(decoding: $0.bodyBytes, as: UTF8.self) }
        let crashEnvelope = try XCTUnwrap(bodies.first { $0.contains("\"type\":\"event\"") }, "the crash reached Sentry")
        XCTAssertTrue(crashEnvelope.contains("\"status\":\"crashed\""), "with its run's session")
        // The runs the unparseable DSN could not take were kept too: their sessions arrive now.
        XCTAssertTrue(bodies.contains { $0.contains("\"type\":\"session\"") && $0.contains("\"status\":\"exited\"") }, bodies.joined(separator: "\n---\n").prefix(3000).description)
    }
}
