// ChildProcess.swift — spawn a program with posix_spawn and wait for it with a deadline.
//
// Foundation's Process reaps children from a SIGCHLD source of its own; with many short-lived
// children that die of signals it was seen here to miss an exit and wait forever. Crash tests
// need the exact signal and a hard time limit, so this goes straight to posix_spawn/waitpid.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A finished (or killed) child process.
public struct ChildProcess: Sendable {
    /// How a child ended.
    public enum Ending: Sendable, Equatable {
        case exited(Int32)
        case signaled(Int32)
        /// Still running at the deadline; it was killed with SIGKILL.
        case timedOut
    }

    public var ending: Ending
    /// Wall seconds from spawn to exit.
    public var seconds: Double

    /// Runs `path` with `arguments`; stdout and stderr go to the given files (or /dev/null).
    /// - Throws: `CocoaError`-free ``SpawnError`` when posix_spawn fails.
    public static func run(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil,
        stdout: String? = nil, stderr: String? = nil, timeout: Double = 60
    ) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let argv = [path] + arguments
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var cEnv: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid: pid_t = 0
        let start = DispatchTime.now().uptimeNanoseconds
        let rc = posix_spawn(&pid, path, &actions, nil, &cArgs, &cEnv)
        guard rc == 0 else { throw SpawnError(path: path, errno: rc) }
        var status: Int32 = 0
        var timedOut = false
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { break }
            if r < 0 && errno != EINTR { break }
            if Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 > timeout {
                timedOut = true
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                break
            }
            usleep(1000)
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let ending: Ending
        if timedOut { ending = .timedOut }
        else if status & 0x7F == 0 { ending = .exited((status >> 8) & 0xFF) }
        else { ending = .signaled(status & 0x7F) }
        return ChildProcess(ending: ending, seconds: seconds)
    }

    /// posix_spawn failed.
    public struct SpawnError: Error, CustomStringConvertible {
        public let path: String
        public let errno: Int32
        public var description: String { "cannot run \(path): \(String(cString: strerror(errno)))" }
    }
}
