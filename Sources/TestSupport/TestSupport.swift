// TestSupport.swift — what every test target needs once: where SwiftPM put the built tools, and
// fresh scratch directories. Test-only: no product ships it.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The executables SwiftPM built next to the running test bundle.
public enum BuiltProducts {
    /// The directory of the running test binary (SwiftPM's bin path for this build).
    public static var directory: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
    }

    /// The crash-harness built with the tests (debug).
    public static var harness: String { directory + "/crash-harness" }

    /// The crash-inspect built with the tests (debug).
    public static var inspect: String { directory + "/crash-inspect" }

    /// The release crash-harness, when the test command built one (scripts/test.sh sets
    /// CRASH_HARNESS_RELEASE).
    public static var releaseHarness: String? {
        guard let path = ProcessInfo.processInfo.environment["CRASH_HARNESS_RELEASE"], !path.isEmpty else { return nil }
        return path
    }
}

/// Fresh directories for one test's files.
public enum Scratch {
    /// A new, empty directory under the temporary directory, named after `name`, the test
    /// process and a random number (tests run in parallel processes and reruns).
    public static func directory(_ name: String) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("crashcapture-tests-\(getpid())-\(name)-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
