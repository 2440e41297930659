// SensorsStoreToolTests.swift — the built sensors-store binary on a real tracking store that a
// crashing harness and its next launch filled, and on a missing or foreign file.
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class SensorsStoreToolTests: XCTestCase {
    struct Output {
        let ending: ChildProcess.Ending
        let stdout: String
        let stderr: String
        var json: Any? { try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
    }

    func sensorsStore(_ arguments: [String]) throws -> Output {
        let base = try Scratch.directory("sensors-store-out")
        let child = try ChildProcess.run(BuiltProducts.directory + "/sensors-store", arguments, stdout: base + "/stdout", stderr: base + "/stderr",
                                         timeout: 120)
        return Output(ending: child.ending,
                      stdout: (try? String(contentsOfFile: base + "/stdout", encoding: .utf8)) ?? "",
                      stderr: (try? String(contentsOfFile: base + "/stderr", encoding: .utf8)) ?? "")
    }

    func testStoreShowsPendingCrashEventsAfterTheNextLaunchIngestedARecord() throws {
        let directory = try Scratch.directory("sensors-store")
        let store = directory + "/app.sqlite"
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let crashed = try ChildProcess.run(BuiltProducts.harness, ["emit", "--count", "5", "--store", store, "--crash-after", "2"],
                                           environment: environment, timeout: 60)
        XCTAssertEqual(crashed.ending, .signaled(SIGSEGV))
        let next = try ChildProcess.run(BuiltProducts.harness, ["emit", "--count", "1", "--store", store], environment: environment, timeout: 60)
        XCTAssertEqual(next.ending, .exited(0))
        let output = try sensorsStore([store, "--json"])
        XCTAssertEqual(output.ending, .exited(0), output.stderr)
        let summary = try XCTUnwrap(output.json as? [String: Any])
        // Run 1: $AppStart + events 0...2 (then the crash). Run 2: AppCrashed + the record's $AppEnd,
        // $AppStart, one event, $AppEnd.
        XCTAssertEqual(summary["pending"] as? Int, 9)
        XCTAssertEqual(summary["pendingCrash"] as? Int, 2)
        // Run 2's $AppEnd waits in the journal beside the store (its end commits there): counted.
        XCTAssertEqual(summary["journalEvents"] as? Int, 1)
        XCTAssertEqual(summary["quarantined"] as? Int, 0)
        XCTAssertEqual((summary["oldestPending"] as? [String: Any])?["event"] as? String, "$AppStart")
        XCTAssertTrue(summary["lastUpload"] is NSNull)
        let text = try sensorsStore([store])
        XCTAssertTrue(text.stdout.contains("pending      9 events (2 from crashes; 1 in the journal of quiet runs)"), text.stdout)
    }

    func testStoreOnAMissingOrForeignFileIsAOneLineError() throws {
        let directory = try Scratch.directory("sensors-store-bad")
        let missing = try sensorsStore([directory + "/nope.sqlite"])
        XCTAssertEqual(missing.ending, .exited(1))
        XCTAssertEqual(missing.stderr.split(separator: "\n").count, 1, missing.stderr)
        XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/foreign.sqlite", contents: Data(repeating: 0x41, count: 8192)))
        let foreign = try sensorsStore([directory + "/foreign.sqlite"])
        XCTAssertEqual(foreign.ending, .exited(1))
        XCTAssertEqual(foreign.stderr.split(separator: "\n").count, 1, foreign.stderr)
    }
}
