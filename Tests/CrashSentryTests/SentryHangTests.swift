// SentryHangTests.swift — a hang record as Sentry gets it, read by Sentry's own code
// (Tests/Oracles/sentry_check.py: sentry_sdk's envelope parser, Relay's normalizer): an event
// Sentry does not count as a crash.
import CrashRecordFormat
import CrashSentry
import CrashSymbolication
import Foundation
import TestSupport
import XCTest

final class SentryHangTests: XCTestCase {
    func testAHangIsAnAppHangEventNotACrashWithItsWaitingRequests() throws {
        let directory = try Scratch.directory("sentry-hang")
        let path = try hangRecord(into: directory)
        let raw = [UInt8](try XCTUnwrap(FileManager.default.contents(atPath: path)))
        let record = try CrashRecordReader.read(path: path)
        let symbolicator = try Symbolicator()
        let local = Dictionary(record.threads.map { ($0.tid, symbolicator.threadFrames(of: $0, images: record.images)) }, uniquingKeysWith: { a, _ in a })
        let bytes = SentryEnvelope.make(record: record, rawRecord: raw, fileName: (path as NSString).lastPathComponent,
                                        eventID: SentryEnvelope.eventID(rawRecord: raw), sentAt: Int64(Date().timeIntervalSince1970 * 1e9), frames: { local[$0.tid] ?? [] })
        let summary = try check(bytes, in: directory)
        XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(summary["errors"] ?? "")")
        let event = try XCTUnwrap(summary["normalized"] as? [String: Any])
        XCTAssertEqual(event["level"] as? String, "error", "a hang is not fatal")
        let exception = try XCTUnwrap(((event["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
        XCTAssertEqual(exception["type"] as? String, "Hang")
        XCTAssertTrue((exception["value"] as? String ?? "").contains("cooperative pool"), "\(exception["value"] ?? "")")
        let mechanism = try XCTUnwrap(exception["mechanism"] as? [String: Any])
        XCTAssertEqual(mechanism["type"] as? String, "AppHang")
        XCTAssertEqual(mechanism["handled"] as? Bool, true, "handled: Sentry counts no crash")
        XCTAssertNil(mechanism["meta"], "no signal")
        let frames = ((exception["stacktrace"] as? [String: Any])?["frames"] as? [[String: Any]] ?? []).compactMap { $0["function"] as? String }
        XCTAssertTrue(frames.contains { $0.contains("blockingCall") }, "the blocked thread's frames: \(frames.suffix(6))")
        let threads = try XCTUnwrap((event["threads"] as? [String: Any])?["values"] as? [[String: Any]])
        XCTAssertFalse(threads.contains { $0["crashed"] as? Bool == true }, "no thread crashed")
        XCTAssertEqual(threads.filter { $0["current"] as? Bool == true }.count, 1)
        let tags = Dictionary(uniqueKeysWithValues: (event["tags"] as? [[String]] ?? []).compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil })
        XCTAssertEqual(tags["record_kind"], "hang")
        XCTAssertEqual(tags["hang_detector"], "cooperative_pool")
        XCTAssertNil(tags["signal"])
        let extra = try XCTUnwrap(event["extra"] as? [String: Any])
        let requests = try XCTUnwrap(extra["requests_in_flight"] as? [[String: Any]])
        let waiting = requests.filter { ($0["id"] as? String ?? "").hasPrefix("waiting-") }
        XCTAssertEqual(waiting.count, 3, "\(requests)")
        for request in waiting {
            let waitsIn = request["waits_in"] as? [String] ?? []
            XCTAssertTrue(waitsIn.contains { $0.contains("awaitForever") }, "\(waitsIn)")
        }
    }
}
