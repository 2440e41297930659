// TestSupport.swift — what every test target needs once: where SwiftPM put the built tools, and
// fresh scratch directories. Test-only: no product ships it.
import Foundation
import ProcessSpawning
#if canImport(Glibc)
import Glibc
#endif

/// The executables SwiftPM built next to the running test bundle.
package enum BuiltProducts {
    /// The directory of the running test binary (SwiftPM's bin path for this build).
    package static var directory: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
    }

    /// The crash-harness built with the tests (debug).
    package static var harness: String { directory + "/crash-harness" }

    /// The crash-inspect built with the tests (debug).
    package static var inspect: String { directory + "/crash-inspect" }

    /// The release crash-harness, when the test command built one (scripts/test.sh sets
    /// CRASH_HARNESS_RELEASE).
    package static var releaseHarness: String? {
        guard let path = ProcessInfo.processInfo.environment["CRASH_HARNESS_RELEASE"], !path.isEmpty else { return nil }
        return path
    }
}

/// Fresh directories for one test's files.
package enum Scratch {
    /// A new, empty directory under the temporary directory, named after `name`, the test
    /// process and a random number (tests run in parallel processes and reruns).
    package static func directory(_ name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("crashcapture-tests-\(getpid())-\(name)-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

/// Outside tools the tests take as the truth (binutils' readelf, nm, addr2line; the C compiler).
package enum Tools {
    /// The first of `names` found as an executable on PATH, then in /usr/bin and the Swift
    /// toolchain's directory; nil when none is.
    package static func find(_ names: String...) -> String? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let directories = path + ["/usr/bin", "/usr/local/bin", "/opt/swift/usr/bin"]
        for name in names {
            if name.hasPrefix("/") {
                if FileManager.default.isExecutableFile(atPath: name) { return name }
                continue
            }
            if let found = directories.map({ $0 + "/" + name }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
                return found
            }
        }
        return nil
    }

    /// What a tool's run failed with.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        package init(description: String) { self.description = description }
    }

    /// Runs `tool` with `arguments` (stdout and stderr to files in a scratch directory) and
    /// returns its stdout. Throws ``Failure`` (with its stderr) unless it exits 0.
    package static func output(_ tool: String, _ arguments: [String], timeout: Double = 120) throws -> String {
        let directory = try Scratch.directory((tool as NSString).lastPathComponent)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let child = try ChildProcess.run(tool, arguments, stdout: directory + "/stdout", stderr: directory + "/stderr", timeout: timeout)
        let stdout = String(decoding: FileManager.default.contents(atPath: directory + "/stdout") ?? Data(), as: UTF8.self)
        guard child.ending == .exited(0) else {
            let stderr = String(decoding: FileManager.default.contents(atPath: directory + "/stderr") ?? Data(), as: UTF8.self)
            throw Failure(description: "\(tool) \(arguments.joined(separator: " ")): \(child.ending)\n\(stderr.suffix(2000))")
        }
        return stdout
    }
}

/// The Python test oracles (Sentry's envelope parser and normalizer, symbolic) that
/// scripts/setup.sh installs into `.venv-oracles`, and the scripts in `Tests/Oracles` that drive them.
package enum Oracles {
    /// The repository's root (this file is `Sources/TestSupport/TestSupport.swift`).
    package static var repositoryRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    /// `.venv-oracles/bin/python`; throws when scripts/setup.sh has not installed it (the tests
    /// that need it fail rather than skip: a skipped oracle is an untested claim).
    package static func python() throws -> String {
        let path = repositoryRoot + "/.venv-oracles/bin/python"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Tools.Failure(description: "no \(path): run scripts/setup.sh (it installs the Python test oracles)")
        }
        return path
    }

    /// Runs `Tests/Oracles/<script>` with the oracles' Python and returns its stdout; throws (with
    /// its stderr) unless it exits 0.
    package static func run(_ script: String, _ arguments: [String], timeout: Double = 300) throws -> String {
        try Tools.output(try python(), [repositoryRoot + "/Tests/Oracles/" + script] + arguments, timeout: timeout)
    }
}
