// SecretCrash.swift — a real crash that holds four known secrets (in a breadcrumb, on the stack,
// in the identity, in a path): what the tests of "what leaves the machine" look for in what a
// sink sends.
import CrashRecordFormat
import Foundation
import ProcessSpawning
import XCTest

/// A crash of a copy of the harness run from a directory named by `path`, logged in as `login`,
/// with `stack` in a buffer on the crashing thread's stack and `breadcrumb` in a breadcrumb
/// (`crash-harness emit --secret`).
package struct SecretCrash {
    package let stack: String, breadcrumb: String, login: String, path: String
    /// The four secrets.
    package var all: [String] { [stack, breadcrumb, login, path] }
    /// The crash's store (its records in `store + ".records"`), the record's path and bytes, the
    /// directory the harness copy ran from.
    package private(set) var store = "", recordPath = "", bytes: [UInt8] = [], binaryDirectory = ""

    /// Secrets named by `tag` (unique per test process, so a match is ours).
    package init(_ tag: String) {
        stack = "CRASHCAPTURE-SECRET-\(tag)-STACK"
        breadcrumb = "CRASHCAPTURE-SECRET-\(tag)-CRUMB"
        login = "CRASHCAPTURE-SECRET-LOGIN-\(tag)"
        path = "CRASHCAPTURE-SECRET-PATH-\(tag)"
    }

    /// Crashes (it must die of SIGSEGV and leave one record holding every secret, else the tests
    /// built on it could not fail) and returns the crash with its files.
    package func crash(in scratch: String) throws -> SecretCrash {
        var crashed = self
        crashed.binaryDirectory = scratch + "/" + path
        try FileManager.default.createDirectory(atPath: crashed.binaryDirectory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: BuiltProducts.harness, toPath: crashed.binaryDirectory + "/crash-harness")
        crashed.store = scratch + "/s.sqlite"
        let child = try ChildProcess.run(crashed.binaryDirectory + "/crash-harness",
                                         ["emit", "--count", "1", "--store", crashed.store, "--crash-after", "0",
                                          "--secret", String(stack.dropLast("-STACK".count)), "--login", login],
                                         environment: ["SWIFT_BACKTRACE": "enable=no"], timeout: 60)
        XCTAssertEqual(child.ending, .signaled(SIGSEGV))
        let names = try RecordFileName.names(in: crashed.store + ".records")
        XCTAssertEqual(names.count, 1)
        crashed.recordPath = crashed.store + ".records/" + (try XCTUnwrap(names.first))
        crashed.bytes = try CrashRecordReader.readBytes(path: crashed.recordPath)
        for secret in all { XCTAssertTrue(Self.contains(crashed.bytes, secret), "the record holds \(secret)") }
        return crashed
    }

    /// Whether `bytes` hold `text`.
    package static func contains<Bytes: Collection>(_ bytes: Bytes, _ text: String) -> Bool where Bytes.Element == UInt8 {
        Data(bytes).range(of: Data(text.utf8)) != nil
    }
}
