// SentryTestSupport.swift — what the Sentry tests share: a crash of the harness, and an envelope
// read by Sentry's own code (Tests/Oracles/sentry_check.py).
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

extension XCTestCase {
    /// Crashes `scenario` with the debug harness; returns the record's path.
    func crash(_ scenario: String, into directory: String) throws -> String {
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let child = try ChildProcess.run(BuiltProducts.harness, ["run", scenario, "--dir", directory], environment: environment, timeout: 120)
        guard case .signaled = child.ending else { throw Tools.Failure(description: "\(scenario) ended \(child.ending)") }
        let records = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".ccrec") }
        XCTAssertEqual(records.count, 1, "\(records)")
        return directory + "/" + (try XCTUnwrap(records.first))
    }

    /// Writes the envelope `bytes` to a file and runs Tests/Oracles/sentry_check.py on it (which
    /// fails on any normalization error): sentry_sdk's parse and Relay's normalized event.
    func check(_ bytes: [UInt8], in directory: String) throws -> [String: Any] {
        let path = directory + "/envelope"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        let output = try Oracles.run("sentry_check.py", [path])
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
    }
}

extension XCTestCase {
    /// A hang record of the debug harness (`hang --mode pool`: every pool thread blocked 2 s,
    /// stall threshold 1 s, three requests awaiting forever); returns its path.
    func hangRecord(into directory: String) throws -> String {
        var environment = ProcessInfo.processInfo.environment
        environment["CRASHCAPTURE_HANG_SECONDS"] = nil
        let child = try ChildProcess.run(BuiltProducts.harness, ["hang", "--mode", "pool", "--threshold", "1", "--block", "2", "--dir", directory],
                                         environment: environment, timeout: 120)
        guard child.ending == .exited(0) else { throw Tools.Failure(description: "hang --mode pool ended \(child.ending)") }
        let records = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".ccrec") }
        XCTAssertEqual(records.count, 1, "\(records)")
        return directory + "/" + (try XCTUnwrap(records.first))
    }
}
