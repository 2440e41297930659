// Support.swift — scratch directories, child processes and event helpers shared by the tests.
import CrashSymbolication
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

enum Harness {
    /// The debug crash-harness SwiftPM built next to this test bundle.
    static var path: String { BuiltProducts.harness }

    static var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment.removeValue(forKey: "CRASHCAPTURE_DISABLE")
        return environment
    }

    /// Runs `crash-harness emit ...` to its end (or kills it with SIGKILL after `timeout`).
    static func emit(_ arguments: [String], timeout: Double = 60, stdout: String? = nil) throws -> ChildProcess {
        try ChildProcess.run(path, ["emit"] + arguments, environment: environment, stdout: stdout, timeout: timeout)
    }

    /// Starts `crash-harness emit ...` without waiting.
    static func spawnEmit(_ arguments: [String]) throws -> pid_t {
        let argv = [path, "emit"] + arguments
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var cEnv: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, &cArgs, &cEnv)
        guard rc == 0 else { throw POSIXError(.ENOENT) }
        return pid
    }

    /// Waits for a spawned child; SIGKILLs it after `timeout`. Returns the raw wait status.
    static func wait(_ pid: pid_t, timeout: Double = 60) -> Int32 {
        var status: Int32 = 0
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { return status }
            if r < 0 && errno != EINTR { return -1 }
            if Date() > deadline {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                return status
            }
            usleep(2000)
        }
    }

    /// Waits (bounded) until `path` exists.
    static func waitForFile(_ path: String, timeout: Double = 60) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !FileManager.default.fileExists(atPath: path) {
            if Date() > deadline { return false }
            usleep(5000)
        }
        return true
    }
}

extension Dictionary where Key == String, Value == Any {
    var event: String? { self["event"] as? String }
    var trackID: String? { self["_track_id"] as? String }
    var properties: [String: Any] { self["properties"] as? [String: Any] ?? [:] }
    var seq: Int? { properties["seq"] as? Int }
    var run: String? { properties["run"] as? String }
}

/// Parses a stored event's JSON.
func object(_ json: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]) ?? [:]
}
