// SetupCheckTests.swift — CrashReporting.verifySetup in a real program (`crash-harness deliver
// --check-setup`): a throwaway copy of the program crashes with its configuration, and the record
// goes through its sinks to a loopback Sentry and OTLP collector, each answer printed; a wrong key
// or a DSN that does not parse fails the check and says why; the app's own record directory is
// never touched.
@testable import CrashReporter
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class SetupCheckTests: XCTestCase {
    func check(_ arguments: [String], environment extra: [String: String] = [:]) throws -> (ending: ChildProcess.Ending, output: String, records: String) {
        let directory = try Scratch.directory("setup-check")
        let records = directory + "/records"
        let output = directory + "/stdout"
        let child = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", records, "--check-setup", "--timeout", "10"] + arguments,
                                         environment: Harness.environment.merging(extra) { $1 }, stdout: output, timeout: 120,
                                         ownProcessGroup: true)
        XCTAssertEqual(child.leftRunning, [])
        return (child.ending, String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self), records)
    }

    func testEverySinkAnswersForARealCrashAndTheAppsRecordsAreUntouched() throws {
        let sentry = try TestHTTPServer()
        let collector = try TestHTTPServer()
        let run = try check(["--sentry-dsn", "http://key@127.0.0.1:\(sentry.port)/1"],
                            environment: ["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": collector.origin + "/v1/logs"])
        XCTAssertEqual(run.ending, .exited(0), run.output)
        XCTAssertTrue(run.output.contains("crash: killed by SIGSEGV, record written"), run.output)
        XCTAssertTrue(run.output.contains("sentry: sent"), run.output)
        XCTAssertTrue(run.output.contains("otlp: sent"), run.output)
        XCTAssertTrue(run.output.contains("setup check passed"), run.output)
        let events = sentry.allRequests.map { String(decoding: $0.bodyBytes, as: UTF8.self) }
        XCTAssertEqual(events.count, 2, "the crash, then the hang: \(events.map { $0.prefix(300) })")
        XCTAssertTrue(events.allSatisfy { $0.contains("\"crashcapture.setup_check\":\"true\"") }, "the check's events say what they are")
        XCTAssertTrue(events.contains { $0.contains("\"signalhandler\"") }, "the crash")
        // The hang went while its process ran: the AppHang event, sent by the hung process.
        let lines = run.output.split(separator: "\n").map(String.init)
        let hangLine = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("hang: recorded while the process ran") }, run.output)
        XCTAssertEqual(Array(lines[(hangLine + 1)...].prefix(2)), ["  otlp: sent", "  sentry: sent"], run.output)
        XCTAssertTrue(events.contains { $0.contains("\"AppHang\"") && $0.contains("heartbeat") }, "the hang")
        XCTAssertEqual(collector.allRequests.count, 2)
        XCTAssertFalse(FileManager.default.fileExists(atPath: run.records), "the app's record directory is not touched")
    }

    func testAWrongKeyOrADSNThatDoesNotParseFailsTheCheckAndSaysWhy() throws {
        let refusing = try TestHTTPServer { _ in .status(401, body: Array("{\"detail\":\"invalid api key\"}".utf8)) }
        let wrongKey = try check(["--sentry-dsn", "http://wrong@127.0.0.1:\(refusing.port)/1"])
        XCTAssertEqual(wrongKey.ending, .exited(1), wrongKey.output)
        XCTAssertTrue(wrongKey.output.contains("sentry: kept: HTTP 401"), wrongKey.output)
        XCTAssertTrue(wrongKey.output.contains("invalid api key"), wrongKey.output)
        XCTAssertTrue(wrongKey.output.contains("setup check FAILED"), wrongKey.output)
        XCTAssertEqual(wrongKey.output.components(separatedBy: "sentry: kept: HTTP 401").count - 1, 2,
                       "the crash and the hang each say why: \(wrongKey.output)")

        // No sink at all: the check fails at once and says why, without waiting for a hang no sink could take.
        let noSink = try check([])
        XCTAssertEqual(noSink.ending, .exited(1), noSink.output)
        XCTAssertTrue(noSink.output.contains("hang: not checked: the configuration has no sink"), noSink.output)

        let notADSN = try check(["--sentry-dsn", "https://no-project"])
        XCTAssertEqual(notADSN.ending, .exited(1), notADSN.output)
        XCTAssertTrue(notADSN.output.contains("sentry: not sent: the DSN is not a Sentry DSN"), notADSN.output)
    }
}
