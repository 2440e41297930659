// SentryNextLaunchTests.swift — the next launch after a crash, Sentry and another sink configured,
// with real child processes (crash-harness deliver): the crashed run's record reaches Sentry as an
// envelope that Sentry's own parser and Relay's normalizer accept, and is deleted only once every
// sink has it.
import CrashRecordFormat
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class SentryNextLaunchTests: XCTestCase {
    /// The next launch sends the crashed run's record to Sentry as an envelope that Sentry's own
    /// parser and Relay's normaliser accept, with the record attached minimised (byte for byte
    /// what the redaction makes of it), and the app's other sink (a recording one) gets it too;
    /// the record is deleted only after both.
    func testTheNextLaunchSendsTheRecordAsAnEnvelopeSentryAccepts() throws {
        let directory = try Scratch.directory("sentry-e2e")
        let records = directory + "/records", recorded = directory + "/recorded"
        let crashed = try ChildProcess.run(Harness.path, ["deliver", "--records", records, "--run-id", "sentry-run", "--crash"],
                                           environment: Harness.environment, timeout: 60)
        XCTAssertEqual(crashed.ending, .signaled(SIGSEGV))
        let name = try XCTUnwrap(try RecordFileName.names(in: records).first)
        let recordBytes = try Data(contentsOf: URL(fileURLWithPath: records + "/" + name))

        let sentry = try TestHTTPServer()
        let dsn = "http://0123456789abcdef@127.0.0.1:\(sentry.port)/42"
        let next = try ChildProcess.run(Harness.path, ["deliver", "--records", records, "--sentry-dsn", dsn, "--recording-sink", recorded],
                                        environment: Harness.environment, timeout: 120)
        XCTAssertEqual(next.ending, .exited(0))
        // The other sink: the record, readable.
        let taken = try Harness.recorded(recorded).records
        XCTAssertEqual(taken.compactMap { $0["record"] as? String }, [name])
        XCTAssertEqual(taken.first?["readable"] as? Bool, true)
        // Sentry: one envelope, to the project's endpoint, authenticated.
        let requests = sentry.allRequests
        XCTAssertEqual(requests.count, 1)
        let request = try XCTUnwrap(requests.first)
        XCTAssertEqual(request.path, "/api/42/envelope/")
        XCTAssertTrue(request.headers["x-sentry-auth"]?.contains("sentry_key=0123456789abcdef") == true)
        let envelopePath = directory + "/sent.envelope"
        try Data(request.bodyBytes).write(to: URL(fileURLWithPath: envelopePath))
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try Oracles.run("sentry_check.py", [envelopePath]).utf8))
            as? [String: Any])
        XCTAssertEqual((summary["errors"] as? [Any])?.count ?? 0, 0, "\(summary["errors"] ?? "")")
        let items = try XCTUnwrap(summary["items"] as? [[String: Any]])
        let attachment = try XCTUnwrap(items.first { $0["type"] as? String == "attachment" })
        // The record minimised as the default CrashDataPolicy says (CrashReporter.docc, "What leaves the
        // machine"), byte for byte what the redaction makes of the file on disk.
        let minimised = RecordRedaction().apply(to: [UInt8](recordBytes))
        XCTAssertLessThan(minimised.count, recordBytes.count)
        XCTAssertEqual(attachment["length"] as? Int, minimised.count)
        let copy = directory + "/record-before-upload"
        try Data(minimised).write(to: URL(fileURLWithPath: copy))
        let sha = try Tools.output(try XCTUnwrap(Tools.find("sha256sum")), [copy]).split(separator: " ").first.map(String.init)
        XCTAssertEqual(attachment["sha256"] as? String, sha, "the minimised record attached byte for byte")
        let normalized = try XCTUnwrap(summary["normalized"] as? [String: Any])
        let exception = try XCTUnwrap(((normalized["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
        XCTAssertEqual(((exception["mechanism"] as? [String: Any])?["meta"] as? [String: Any]).flatMap { ($0["signal"] as? [String: Any])?["name"] as? String },
                       "SIGSEGV")
        let os = try XCTUnwrap((normalized["contexts"] as? [String: Any])?["os"] as? [String: Any])
        XCTAssertNotNil(os["distribution_name"], "the next launch runs on the machine that crashed: os-release is sent")
        // Both sinks have it: the file is gone (the installation's id stays, for Sentry's sessions).
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: records).sorted(), ["installation-id", RecordFileName.crashLoopState, "runs"])
    }
}
