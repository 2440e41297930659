// OneStartTests.swift — one start per program, whatever an app combines: capture started first
// (CrashHandler.start, as the capture-only guides have it) and then the reporter, the reporter
// started twice, or both. In real `crash-harness deliver` processes that crash with crash-time
// upload to a loopback Sentry, and a next launch: the crash reaches Sentry once, from the crashing
// process, with its run's `crashed` session; every run is counted once; no record is left behind,
// none in the directory the app's own capture named.
@testable import CrashReporter
import CrashRecordFormat
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class OneStartTests: XCTestCase {
    func deliver(_ records: String, _ arguments: [String], expect ending: ChildProcess.Ending = .exited(0)) throws -> String {
        let stderr = records + "-\(UInt32.random(in: 0...UInt32.max)).stderr"
        let child = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", records] + arguments,
                                         environment: Harness.environment, stderr: stderr, timeout: 120, ownProcessGroup: true, leftoverGrace: 20)
        XCTAssertEqual(child.ending, ending, arguments.joined(separator: " "))
        XCTAssertEqual(child.leftRunning, [], "the uploader ended by itself")
        return String(decoding: FileManager.default.contents(atPath: stderr) ?? Data(), as: UTF8.self)
    }

    func testEveryWayOfStartingTwiceRecordsTheCrashUploadsItAtTheCrashAndCountsEachRunOnce() throws {
        for first in ["none", "capture", "reporter", "both"] {
            let directory = try Scratch.directory("one-start-\(first)")
            let records = directory + "/records"
            let server = try TestHTTPServer()
            let dsn = ["--sentry-dsn", "http://0123456789abcdef@127.0.0.1:\(server.port)/42"]
            let extra = first == "none" ? [] : ["--start-first", first]
            let stderr = try deliver(records, dsn + extra + ["--crash", "--crash-time-uploader", CrashTimeUpload.executableName],
                                     expect: .signaled(SIGSEGV))
            // Said once, where it happened.
            let twice = stderr.components(separatedBy: "CrashReporting.start was called again").count - 1
            XCTAssertEqual(twice, first == "reporter" || first == "both" ? 1 : 0, "\(first): \(stderr)")
            // The crash, sent by the crash-time uploader before the next launch.
            let deadline = Date().addingTimeInterval(30)
            while server.allRequests.isEmpty && Date() < deadline { usleep(20_000) }
            let atCrash = server.allRequests.map { String(decoding: $0.bodyBytes, as: UTF8.self) }
            XCTAssertEqual(atCrash.filter { $0.contains("\"type\":\"event\"") }.count, 1, "\(first): the crash at crash time")
            XCTAssertTrue(atCrash.first?.contains("\"status\":\"crashed\"") == true, "\(first): with its run's crashed session")

            _ = try deliver(records, dsn + ["--run-id", "next"])
            let all = server.allRequests.map { String(decoding: $0.bodyBytes, as: UTF8.self) }
            XCTAssertEqual(all.filter { $0.contains("\"type\":\"event\"") }.count, 1, "\(first): the crash once, not again at the next launch")
            let crashedSessions = all.joined().components(separatedBy: "\"status\":\"crashed\"").count - 1
            XCTAssertEqual(crashedSessions, 1, "\(first): one crashed session")
            XCTAssertFalse(all.contains { $0.contains("\"status\":\"abnormal\"") }, "\(first): no run counted as killed")
            XCTAssertEqual(try RecordFileName.names(in: records).filter { RecordFileName($0) != nil }, [], "\(first)")
            if first == "capture" || first == "both" {
                // Taken over: what the reporter sets (the directory, the app) is its own; what it
                // does not set (hang detection, no other threads' stacks) stays as the app set it.
                XCTAssertTrue(stderr.contains("capture after start: directory \(records), app crash-harness, hang detection 30.0 seconds (watching true), other threads false"),
                              "\(first): \(stderr)")
                let appsOwn = (try? RecordFileName.names(in: records + "-capture")) ?? []
                XCTAssertEqual(appsOwn.filter { RecordFileName($0) != nil }, [], "\(first): the adopted capture writes where the reporter reads")
            }
        }
    }
}
