// DebugFileIdentityTests.swift — the ids a Sentry event gives a binary are the ids Sentry's own
// tooling computes for the files a team uploads: `sentry-cli debug-files check` (PyPI's sentry-cli,
// offline) on the harness binary, on its stripped copy and on its separate debug file
// (objcopy --only-keep-debug) must print the `debug_id` and `code_id` of the event's
// `debug_meta.images` entry for that binary, so that a change to how we compute them fails here.
import CrashInspection
import CrashRecordFormat
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class DebugFileIdentityTests: XCTestCase {
    /// `sentry-cli debug-files check --json FILE`: its first variant's ids.
    func sentryCLIIDs(_ file: String) throws -> (debugID: String, codeID: String) {
        let cli = Oracles.repositoryRoot + "/.venv-oracles/bin/sentry-cli"
        guard FileManager.default.isExecutableFile(atPath: cli) else {
            throw XCTSkip("sentry-cli is not installed in .venv-oracles (scripts/setup.sh installs it)")
        }
        let output = try Tools.output(cli, ["debug-files", "check", "--json", file], timeout: 120)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], output)
        XCTAssertEqual(object["is_usable"] as? Bool, true, "\(file): \(output)")
        let variant = try XCTUnwrap((object["variants"] as? [[String: Any]])?.first, output)
        return (try XCTUnwrap(variant["debug_id"] as? String), try XCTUnwrap(variant["code_id"] as? String))
    }

    func testTheEventsDebugIdsAreWhatSentryCLIComputesForTheBinaryItsStrippedCopyAndItsDebugFile() throws {
        let directory = try Scratch.directory("debug-file-identity")
        let records = directory + "/records"
        try FileManager.default.createDirectory(atPath: records, withIntermediateDirectories: true)
        let child = try ChildProcess.run(BuiltProducts.harness, ["run", "null-dereference", "--dir", records],
                                         environment: ["SWIFT_BACKTRACE": "enable=no"], timeout: 60)
        XCTAssertEqual(child.ending, .signaled(SIGSEGV))
        let record = records + "/" + (try XCTUnwrap(try RecordFileName.names(in: records).first { RecordFileName($0) != nil }))
        let envelope = directory + "/envelope"
        let export = try ChildProcess.run(BuiltProducts.inspect, ["export", record, "--sentry", "-o", envelope], timeout: 120)
        XCTAssertEqual(export.ending, .exited(0))
        // The event item: the envelope's second line.
        let lines = String(decoding: try XCTUnwrap(FileManager.default.contents(atPath: envelope)), as: UTF8.self).split(separator: "\n")
        let event = try XCTUnwrap(lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .first { $0["debug_meta"] != nil })
        let images = try XCTUnwrap((event["debug_meta"] as? [String: Any])?["images"] as? [[String: Any]])
        let harness = URL(fileURLWithPath: BuiltProducts.harness).resolvingSymlinksInPath().path
        let entry = try XCTUnwrap(images.first { ($0["code_file"] as? String).map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path } == harness },
                                  "\(images.compactMap { $0["code_file"] })")
        let eventDebugID = try XCTUnwrap(entry["debug_id"] as? String), eventCodeID = try XCTUnwrap(entry["code_id"] as? String)

        let objcopy = try XCTUnwrap(Tools.find("objcopy", "llvm-objcopy"), "objcopy (binutils)")
        let stripped = directory + "/crash-harness.stripped", debugFile = directory + "/crash-harness.debug"
        _ = try Tools.output(objcopy, ["--strip-all", harness, stripped], timeout: 120)
        _ = try Tools.output(objcopy, ["--only-keep-debug", harness, debugFile], timeout: 120)
        for file in [harness, stripped, debugFile] {
            let ids = try sentryCLIIDs(file)
            XCTAssertEqual(ids.debugID, eventDebugID, (file as NSString).lastPathComponent)
            XCTAssertEqual(ids.codeID, eventCodeID, (file as NSString).lastPathComponent)
        }
    }
}

/// The lines of /proc/locks that say where a process's hang watcher answers snapshot requests.
final class WatchedDirectoryTests: XCTestCase {
    func testOnlyThatProcesssSharedFlocksAreTaken() {
        let locks = """
            1: FLOCK  ADVISORY  WRITE 26600 fe:00:16220439 0 EOF
            2: FLOCK  ADVISORY  READ  4242 fe:01:131074 0 EOF
            3: POSIX  ADVISORY  READ  4242 fe:01:99 0 EOF
            4: FLOCK  ADVISORY  READ  42420 fe:01:7 0 EOF
            5: FLOCK  ADVISORY  READ  4242 103:0a:1 0 EOF
            6: FLOCK  ADVISORY  READ  4242 nonsense 0 EOF
            """
        XCTAssertEqual(WatchedDirectory.locked(by: 4242, in: locks),
                       [.init(major: 0xfe, minor: 1, inode: 131074), .init(major: 0x103, minor: 0xa, inode: 1)])
        XCTAssertEqual(WatchedDirectory.locked(by: 1, in: locks), [])
        XCTAssertEqual(WatchedDirectory.of(pid: 4242, locks: ""), [])
    }
}
