// HarnessRecords.swift — real records of the debug harness for the tests of what receives them
// (crashes, a hang), and what `crash-harness deliver --recording-sink` noted that it was given.
import CrashRecordFormat
import Foundation
import ProcessSpawning
import XCTest
#if canImport(Glibc)
import Glibc
#endif

extension Harness {
    /// `count` more real records in `directory` (the debug harness crashing `null-dereference`,
    /// each in its own millisecond) and the names of all the records there, oldest first.
    package static func records(_ count: Int, in directory: String) throws -> [String] {
        for _ in 0..<count {
            let child = try ChildProcess.run(path, ["run", "null-dereference", "--dir", directory],
                                             environment: ["SWIFT_BACKTRACE": "enable=no"], timeout: 60)
            XCTAssertEqual(child.ending, .signaled(SIGSEGV))
            usleep(2000) // distinct millisecond names
        }
        return try RecordFileName.names(in: directory).filter { RecordFileName($0) != nil }
    }

    /// A hang record of the debug harness (the cooperative pool starved 2 s, threshold 1 s) with
    /// run id `run`, written into `directory`, which holds no other record: its path.
    package static func hangRecord(run: String, in directory: String) throws -> String {
        var environment = ProcessInfo.processInfo.environment
        environment["CRASHCAPTURE_HANG_SECONDS"] = nil // HangDetection.environmentVariable: the harness's own threshold holds
        let child = try ChildProcess.run(path, ["hang", "--mode", "pool", "--threshold", "1", "--block", "2",
                                                "--dir", directory, "--run-id", run],
                                         environment: environment, timeout: 120)
        XCTAssertEqual(child.ending, .exited(0))
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".ccrec") }
        XCTAssertEqual(names.count, 1, "\(names)")
        return directory + "/" + (try XCTUnwrap(names.first))
    }

    /// What `crash-harness deliver --recording-sink <file>` wrote there, in order: one object per
    /// record (`record`, `readable`, `crashes`, `firstCrashMilliseconds`, `crashLoop`,
    /// `crashLoopLength`) or ended run (`run`, `end`, `lastSeenMilliseconds`,
    /// `lastSeenDurationMilliseconds`); none when there is no file yet.
    package static func recorded(_ file: String) throws -> (records: [[String: Any]], runs: [[String: Any]]) {
        guard FileManager.default.fileExists(atPath: file) else { return ([], []) }
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        let objects = try lines.map { line in
            try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], String(line))
        }
        return (objects.filter { $0["record"] != nil }, objects.filter { $0["run"] != nil })
    }
}
