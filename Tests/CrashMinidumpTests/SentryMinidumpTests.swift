// SentryMinidumpTests.swift — the Sentry sink's envelope with a minidump beside the event
// (SentryOptions.minidump), read by sentry_sdk's envelope parser
// (Tests/Oracles/sentry_check.py) and the minidump by PyPI's minidump parser.
import CrashRecordFormat
import CrashReporter
import CrashSentry
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
@testable import CrashReporterSentry

final class SentryMinidumpTests: XCTestCase {
    /// One crash of the harness: its record's bytes and file name.
    func crashRecord() throws -> (record: CrashRecord, raw: [UInt8], name: String) {
        let directory = try Scratch.directory("sentry-minidump")
        let child = try ChildProcess.run(Harness.path, ["run", "null-dereference", "--dir", directory], environment: Harness.environment, timeout: 60)
        guard case .signaled = child.ending else { throw Tools.Failure(description: "null-dereference ended \(child.ending)") }
        let name = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasSuffix(".ccrec") })
        let raw = try CrashRecordReader.readBytes(path: directory + "/" + name)
        return (try CrashRecordReader.parse(raw), raw, name)
    }

    /// The envelope the sink sends for `policy` and `minidump`, as sentry_check.py reads it, and its
    /// path.
    func envelope(policy: CrashDataPolicy, minidump: Bool, crash: (record: CrashRecord, raw: [UInt8], name: String))
        throws -> (summary: [String: Any], path: String) {
        let maker = SentrySink.envelope(data: policy, publicKey: "0123456789abcdef0123456789abcdef", beforeSend: nil, minidump: minidump)
        let bytes = try maker(crash.record, crash.raw, crash.name, Int64(Date().timeIntervalSince1970 * 1e9), CrashRepetition(), nil).get()
        let path = try Scratch.directory("sentry-envelope") + "/envelope"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let json = try Oracles.run("sentry_check.py", [path])
        return (try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]), path)
    }

    func items(_ summary: [String: Any]) -> [[String: Any]] { summary["items"] as? [[String: Any]] ?? [] }

    func attachmentTypes(_ summary: [String: Any]) -> [String] {
        items(summary).compactMap { ($0["headers"] as? [String: Any])?["attachment_type"] as? String }
    }

    func testWithRawMemoryAllowedTheMinidumpGoesBesideTheEvent() throws {
        let crash = try crashRecord()
        let (summary, path) = try envelope(policy: CrashDataPolicy(rawMemory: true), minidump: true, crash: crash)
        XCTAssertEqual(items(summary).first?["type"] as? String, "event", "the JSON event stays the event")
        XCTAssertEqual(attachmentTypes(summary), ["event.attachment", "event.minidump"])
        let item = try XCTUnwrap(items(summary).first { ($0["headers"] as? [String: Any])?["attachment_type"] as? String == "event.minidump" })
        XCTAssertEqual((item["headers"] as? [String: Any])?["filename"] as? String, String(crash.name.dropLast(6)) + ".dmp")
        XCTAssertTrue((summary["errors"] as? [Any])?.isEmpty ?? false, "\(summary["errors"] ?? "")")

        // The minidump as sent: the envelope's last item, read by the minidump parser.
        let envelope = try XCTUnwrap(FileManager.default.contents(atPath: path))
        let length = try XCTUnwrap(item["length"] as? Int)
        let minidump = Array(envelope.suffix(length + 1).dropLast())
        XCTAssertEqual(Array(minidump.prefix(4)), Array("MDMP".utf8))
        let file = path + ".dmp"
        try Data(minidump).write(to: URL(fileURLWithPath: file))
        let parsed = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try Oracles.run("minidump_check.py", [file]).utf8)) as? [String: Any])
        XCTAssertNotNil(parsed["stackAtSP"] as? String, "the stack went with it")
        XCTAssertEqual((parsed["exception"] as? [String: Any])?["code"] as? Int, Int(SIGSEGV))
        // Paths as the policy sends them (sanitised by default): the minidump says no more than the attachment.
        let modules = try XCTUnwrap(parsed["modules"] as? [[String: Any]])
        XCTAssertFalse(modules.contains { ($0["name"] as? String) == Harness.path }, "a full path left in the minidump")
        XCTAssertTrue(modules.contains { ($0["name"] as? String)?.hasSuffix("/crash-harness") == true })
    }

    func testWithoutRawMemoryNoMinidumpIsSent() throws {
        let crash = try crashRecord()
        let (summary, _) = try envelope(policy: CrashDataPolicy(), minidump: true, crash: crash)
        XCTAssertEqual(attachmentTypes(summary), ["event.attachment"])
    }

    func testTheMinidumpIsOffByDefault() throws {
        XCTAssertFalse(SentryOptions(dsn: "http://key@127.0.0.1:9/1").minidump)
        let crash = try crashRecord()
        let (summary, _) = try envelope(policy: .everything, minidump: false, crash: crash)
        XCTAssertEqual(attachmentTypes(summary), ["event.attachment"])
    }
}
