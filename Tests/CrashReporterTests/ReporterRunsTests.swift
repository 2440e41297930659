// ReporterRunsTests.swift — how each run of an app ended, told by the next launch of the reporter
// alone (Sentry, no analytics store): real `crash-harness deliver` processes that shut down,
// exit without shutting down, are SIGKILLed, crash (with and without the crash-time uploader),
// or still run; several launching at once.
import ProcessSpawning
@testable import CrashReporter
import CrashRecordFormat
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class ReporterRunsTests: XCTestCase {
    struct Launched {
        var json: [String: Any]
        /// Run id → how it ended (exited, crashed, killed, oom).
        var ends: [String: String] {
            Dictionary(uniqueKeysWithValues: runs.map { ($0["runID"] as? String ?? "", $0["end"] as? String ?? "") })
        }
        var runs: [[String: Any]] { json["runsEnded"] as? [[String: Any]] ?? [] }
        var running: Int { json["runsRunning"] as? Int ?? -1 }
    }

    /// One `deliver` to its end; its last JSON line.
    func deliver(_ records: String, _ arguments: [String], expect ending: ChildProcess.Ending = .exited(0)) throws -> Launched {
        let output = try Scratch.directory("runs-deliver-output") + "/stdout"
        let child = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", records] + arguments,
                                         environment: ["SWIFT_BACKTRACE": "enable=no"], stdout: output, timeout: 120)
        XCTAssertEqual(child.ending, ending, arguments.joined(separator: " "))
        let last = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").last.map(String.init) ?? "{}"
        return Launched(json: try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any], last))
    }

    /// A `deliver` that holds after its launch until the test kills it, and what its launch told.
    func hold(_ records: String, runID: String, _ arguments: [String] = []) throws -> (ChildProcess.Running, Launched) {
        let scratch = try Scratch.directory("runs-hold")
        let ready = scratch + "/\(runID).ready", output = scratch + "/\(runID).stdout"
        let child = try ChildProcess.start(BuiltProducts.harness, ["deliver", "--records", records, "--run-id", runID, "--end", "hold",
                                                                   "--ready-file", ready] + arguments,
                                           environment: ["SWIFT_BACKTRACE": "enable=no"], stdout: output)
        XCTAssertTrue(Harness.waitForFile(ready), "\(runID) launched")
        let line = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").last.map(String.init) ?? "{}"
        return (child, Launched(json: try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)))
    }

    func kill(_ child: ChildProcess.Running) {
        Glibc.kill(child.pid, SIGKILL)
        XCTAssertEqual(child.wait(timeout: 30).ending, .signaled(SIGKILL))
    }

    /// Each launch tells the runs that ended before it, each once: a run that shut down or exited
    /// (the exit hook), one SIGKILLed, one that crashed (naming its record); one still running is
    /// counted, and told once it is gone.
    func testEachWayARunEndsIsToldOnceByTheNextLaunch() throws {
        let directory = try Scratch.directory("runs-every-way")
        let records = directory + "/records"
        let server = try TestHTTPServer()
        let dsn = ["--sentry-dsn", "http://key@127.0.0.1:\(server.port)/1"]
        XCTAssertEqual(try deliver(records, dsn + ["--run-id", "shut-down"]).ends, [:])
        let exited = try deliver(records, dsn + ["--run-id", "exited", "--end", "exit"])
        XCTAssertEqual(exited.ends, ["shut-down": "exited"])
        let (killed, killedLaunch) = try hold(records, runID: "killed", dsn)
        XCTAssertEqual(killedLaunch.ends, ["exited": "exited"], "the exit hook ended it")
        XCTAssertGreaterThan(killedLaunch.runs.first?["durationMilliseconds"] as? Int ?? -1, 0, "an exit says how long the run lasted")
        kill(killed)
        let crashed = try deliver(records, dsn + ["--run-id", "crashed", "--crash"], expect: .signaled(SIGSEGV))
        XCTAssertEqual(crashed.ends, ["killed": "killed"])
        let crashRecord = try XCTUnwrap(try RecordFileName.names(in: records).first)
        let (alive, aliveLaunch) = try hold(records, runID: "still-running", dsn)
        defer { Glibc.kill(alive.pid, SIGKILL); _ = alive.wait(timeout: 30) }
        XCTAssertEqual(aliveLaunch.ends, ["crashed": "crashed"])
        XCTAssertEqual(aliveLaunch.runs.first?["record"] as? String, crashRecord, "the crash names its record")

        let next = try deliver(records, dsn + ["--run-id", "next"])
        XCTAssertEqual(next.ends, [:])
        XCTAssertEqual(next.running, 1, "the held run is alive: counted, not told")
        // The held launch sends the crash (it holds the record's lease); killed before it has
        // deleted the record, its delivery would be offered again by the next launch (by design:
        // Sentry drops the repeated event id), so it is given the time to finish first.
        let sent = Date(timeIntervalSinceNow: 30)
        while !((try? RecordFileName.names(in: records)) ?? []).isEmpty && Date() < sent { usleep(20_000) }
        kill(alive)
        let last = try deliver(records, dsn + ["--run-id", "last"])
        XCTAssertEqual(last.ends, ["next": "exited", "still-running": "killed"])
        XCTAssertEqual(server.allRequests.filter { $0.body.contains("\"type\":\"event\"") }.count, 1, "the crash went to Sentry, once")
    }

    /// The crash-time uploader sends the record and deletes it (Sentry is the only sink): the
    /// next launch has no record to go by, and the run's marker says it crashed.
    func testARunWhoseRecordTheCrashTimeUploaderSentIsStillToldAsCrashed() throws {
        let directory = try Scratch.directory("runs-uploader")
        let records = directory + "/records"
        let server = try TestHTTPServer()
        let dsn = ["--sentry-dsn", "http://key@127.0.0.1:\(server.port)/1"]
        _ = try deliver(records, dsn + ["--run-id", "uploaded", "--crash", "--crash-time-uploader", "crash-uploader"],
                        expect: .signaled(SIGSEGV))
        let deadline = Date(timeIntervalSinceNow: 60)
        while (server.allRequests.isEmpty || !((try? RecordFileName.names(in: records)) ?? ["x"]).isEmpty) && Date() < deadline {
            usleep(20_000)
        }
        XCTAssertEqual(server.allRequests.count, 1, "sent at crash time")
        XCTAssertEqual(try RecordFileName.names(in: records), [], "and deleted")
        let marker = try String(contentsOfFile: records + "/runs/uploaded.run", encoding: .utf8)
        XCTAssertTrue(marker.contains("end=crashed"), marker)
        let next = try deliver(records, dsn)
        XCTAssertEqual(next.ends, ["uploaded": "crashed"])
        XCTAssertEqual(server.allRequests.count, 1, "not sent twice")
    }

    /// Four processes launch at once over one record directory with twelve dead runs: each run is
    /// told by exactly one of them.
    func testSeveralProcessesLaunchingAtOnceTellEachRunOnce() throws {
        let directory = try Scratch.directory("runs-several")
        let records = directory + "/records"
        // Twelve runs that launch together (each finds the others running), then are killed.
        let dead = (0..<12).map { "dead-\($0)" }
        let held = try dead.map { try hold(records, runID: $0) }
        for (child, launch) in held {
            XCTAssertEqual(launch.ends, [:])
            kill(child)
        }
        let outputs = try (0..<4).map { try Scratch.directory("runs-several-\($0)") + "/stdout" }
        let children = try outputs.enumerated().map { index, output in
            try ChildProcess.start(BuiltProducts.harness, ["deliver", "--records", records, "--run-id", "launch-\(index)"],
                                   environment: ["SWIFT_BACKTRACE": "enable=no"], stdout: output)
        }
        for child in children { XCTAssertEqual(child.wait(timeout: 120).ending, .exited(0)) }
        var told: [String] = []
        for output in outputs {
            let last = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").last.map(String.init) ?? "{}"
            let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
            let runs = json["runsEnded"] as? [[String: Any]] ?? []
            told += runs.filter { ($0["runID"] as? String)?.hasPrefix("dead-") == true }.map { "\($0["runID"]!) \($0["end"]!)" }
        }
        XCTAssertEqual(told.sorted(), dead.map { "\($0) killed" }.sorted(), "each dead run told once, by one launch")
    }
}
