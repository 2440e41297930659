// ChildProcess.swift — spawn a program with posix_spawn and wait for it with a deadline.
//
// Foundation's Process reaps children from a SIGCHLD source of its own; with many short-lived
// children that die of signals it was seen here to miss an exit and wait forever. Crash tests
// need the exact signal and a hard time limit, so this goes straight to posix_spawn/waitpid.
// FoundationEssentials, not Foundation (no ICU): the symbolicator runs its children through here
// and every program that links the reporter links the symbolicator.
import FoundationEssentials
#if canImport(Glibc)
package import Glibc
#endif

/// A finished (or killed) child process.
package struct ChildProcess: Sendable {
    /// How a child ended.
    package enum Ending: Sendable, Equatable {
        case exited(Int32)
        case signaled(Int32)
        /// Still running at the deadline; it was killed with SIGKILL.
        case timedOut
    }

    /// A process the child left behind (in its process group, or carrying its run token).
    package struct Leftover: Sendable, Equatable, CustomStringConvertible {
        package var pid: pid_t
        /// `/proc/<pid>/comm`.
        package var command: String
        package var description: String { "\(command) (\(pid))" }
    }

    package var ending: Ending
    /// Wall seconds from spawn to exit.
    package var seconds: Double
    /// The child's pid (also its process group when spawned with `ownProcessGroup`).
    package var pid: pid_t = 0
    /// With `ownProcessGroup`: processes of the child's group (or descendants that carry its
    /// environment token) still running ~2 s after it ended. They were killed with SIGKILL.
    package var leftRunning: [Leftover] = []

    /// The environment variable that marks every process of one `ownProcessGroup` run, so a
    /// descendant that left the process group (setsid) is still found.
    package static let runTokenVariable = "CRASHCAPTURE_CHILD_RUN_TOKEN"

    /// Runs `path` with `arguments` to its end; stdout and stderr go to the given files (or
    /// /dev/null), stdin is /dev/null. The child is killed with SIGKILL once it has run
    /// `timeout` seconds. With `ownProcessGroup` the child leads a new process group; after it
    /// ends, the group is watched for up to `leftoverGrace` seconds and whatever is still
    /// running then is reported in `leftRunning` and killed. `precise`: see
    /// ``ChildProcess/Running/wait(timeout:leftoverGrace:precise:)``.
    /// - Throws: ``SpawnError`` when posix_spawn fails (e.g. no such executable).
    package static func run(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil,
        stdout: String? = nil, stderr: String? = nil, timeout: Double = 60,
        ownProcessGroup: Bool = false, leftoverGrace: Double = 2, precise: Bool = false
    ) throws -> ChildProcess {
        try start(path, arguments, environment: environment, stdout: stdout, stderr: stderr, ownProcessGroup: ownProcessGroup)
            .wait(timeout: timeout, leftoverGrace: leftoverGrace, precise: precise)
    }

    /// A descriptor that becomes readable when `pid` ends (pidfd_open, Linux 5.3, glibc 2.36), or
    /// -1 where there is none: looked up, not linked, so an older C library still runs this.
    package static func pidDescriptor(_ pid: pid_t) -> Int32 {
        guard let symbol = dlsym(nil, "pidfd_open") else { return -1 }
        typealias Open = @convention(c) (pid_t, UInt32) -> Int32
        return unsafeBitCast(symbol, to: Open.self)(pid, 0)
    }

    /// A child that was started and not yet waited for (``ChildProcess/start(_:_:environment:stdout:stderr:ownProcessGroup:)``).
    /// Wait for it exactly once.
    package struct Running: Sendable {
        /// The child's pid (also its process group when spawned with `ownProcessGroup`).
        package let pid: pid_t
        let started: ContinuousClock.Instant
        let ownProcessGroup: Bool
        let token: String?

        /// Waits until the child ends, or kills it with SIGKILL (its group, with
        /// `ownProcessGroup`) once `timeout` seconds have passed since it was spawned; then,
        /// with `ownProcessGroup`, reaps the group's leftovers as ``ChildProcess/run(_:_:environment:stdout:stderr:timeout:ownProcessGroup:leftoverGrace:)`` does.
        ///
        /// The child's end is noticed within 1 ms (polled); with `precise`, the moment it comes
        /// (poll(2) on a pidfd, where the kernel has them): what a benchmark of time-to-death needs.
        package func wait(timeout: Double = 60, leftoverGrace: Double = 2, precise: Bool = false) -> ChildProcess {
            var status: Int32 = 0
            var timedOut = false
            let descriptor = precise ? ChildProcess.pidDescriptor(pid) : -1
            defer { if descriptor >= 0 { close(descriptor) } }
            while true {
                let r = waitpid(pid, &status, WNOHANG)
                if r == pid { break }
                if r < 0 && errno != EINTR { break }
                if ChildProcess.seconds(since: started) > timeout {
                    timedOut = true
                    kill(ownProcessGroup ? -pid : pid, SIGKILL)
                    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                    break
                }
                if descriptor >= 0 {
                    var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                    _ = poll(&entry, 1, 100)
                } else {
                    usleep(1000)
                }
            }
            let seconds = ChildProcess.seconds(since: started)
            let ending: Ending
            if timedOut { ending = .timedOut }
            else if status & 0x7F == 0 { ending = .exited((status >> 8) & 0xFF) }
            else { ending = .signaled(status & 0x7F) }
            var child = ChildProcess(ending: ending, seconds: seconds, pid: pid)
            if ownProcessGroup { child.leftRunning = reapGroup(pid, token: token, grace: leftoverGrace) }
            return child
        }
    }

    /// Starts `path` with `arguments` and returns at once: for a test that must act on the
    /// child while it runs (kill it, attach to it). Redirections and `ownProcessGroup` as in
    /// ``ChildProcess/run(_:_:environment:stdout:stderr:timeout:ownProcessGroup:leftoverGrace:)``.
    /// - Throws: ``SpawnError`` when posix_spawn fails.
    package static func start(
        _ path: String, _ arguments: [String], environment: [String: String]? = nil,
        stdout: String? = nil, stderr: String? = nil, ownProcessGroup: Bool = false
    ) throws -> Running {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var environment = environment ?? ProcessInfo.processInfo.environment
        var token: String?
        if ownProcessGroup {
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
            posix_spawnattr_setpgroup(&attributes, 0)
            token = "\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
            environment[runTokenVariable] = token
        }
        let started = ContinuousClock.now
        let pid = try withUnsafePointer(to: &attributes) {
            try spawn(path, arguments, environment: environment, actions: &actions, attributes: $0)
        }
        return Running(pid: pid, started: started, ownProcessGroup: ownProcessGroup, token: token)
    }

    /// posix_spawn with the arguments and environment as C strings: the one place this package
    /// starts a process.
    static func spawn(_ path: String, _ arguments: [String], environment: [String: String],
                      actions: inout posix_spawn_file_actions_t, attributes: UnsafePointer<posix_spawnattr_t>?) throws -> pid_t {
        var cArgs: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        var cEnv: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, attributes, &cArgs, &cEnv)
        guard rc == 0 else { throw SpawnError(path: path, errno: rc) }
        return pid
    }

    /// A long-lived child spoken to in lines: each line written to its stdin, each answer read
    /// from its stdout (stderr goes to /dev/null). For a tool that keeps state between requests
    /// (llvm-symbolizer parses an object's debug information once). Ending it closes its input
    /// (it exits at end of input) and waits for it.
    package final class Conversation {
        private let pid: pid_t
        private let input: Int32
        private let output: Int32
        private var buffered: [UInt8] = []

        /// - Throws: ``SpawnError`` when the pipes cannot be made or posix_spawn fails.
        package init(_ path: String, _ arguments: [String], environment: [String: String]) throws {
            var toChild: [Int32] = [0, 0]
            var fromChild: [Int32] = [0, 0]
            guard pipe(&toChild) == 0 else { throw SpawnError(path: path, errno: errno) }
            guard pipe(&fromChild) == 0 else {
                let error = errno
                close(toChild[0]); close(toChild[1])
                throw SpawnError(path: path, errno: error)
            }
            // Close-on-exec: our ends must not leak into other children (a child that holds its
            // own input's write end never sees end of input). (pipe2 is not visible to Swift.)
            for fd in toChild + fromChild { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
            posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            let spawned = Result { try ChildProcess.spawn(path, arguments, environment: environment, actions: &actions, attributes: nil) }
            close(toChild[0])
            close(fromChild[1])
            switch spawned {
            case .success(let pid):
                self.pid = pid
                input = toChild[1]
                output = fromChild[0]
            case .failure(let error):
                close(toChild[1])
                close(fromChild[0])
                throw error
            }
        }

        deinit {
            close(input) // end of input: the child exits
            close(output)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }

        /// Writes `line` and a newline; `false` when the child is gone.
        package func send(_ line: String) -> Bool {
            let bytes = Array((line + "\n").utf8)
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }

        /// The next line the child writes (without its newline); nil at its end of output.
        package func readLine() -> String? {
            while true {
                if let newline = buffered.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffered[..<newline], as: UTF8.self)
                    buffered.removeSubrange(...newline)
                    return line
                }
                var chunk = [UInt8](repeating: 0, count: 65536)
                let n = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return nil }
                buffered += chunk[0..<n]
            }
        }
    }

    /// Seconds since `instant` on the monotonic clock (the standard library's: this file is also
    /// compiled alone into Benchmarks/LaunchBench, without this package's other modules).
    static func seconds(since instant: ContinuousClock.Instant) -> Double {
        let elapsed = instant.duration(to: .now).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }

    /// Waits up to `grace` seconds for every process of group `group` (and every process whose
    /// environment holds `token`) to end; returns those still running and kills them.
    static func reapGroup(_ group: pid_t, token: String?, grace: Double) -> [Leftover] {
        let start = ContinuousClock.now
        var found = survivors(group: group, token: token)
        while !found.isEmpty && seconds(since: start) < grace {
            usleep(10_000)
            found = survivors(group: group, token: token)
        }
        if !found.isEmpty {
            kill(-group, SIGKILL)
            for process in found { kill(process.pid, SIGKILL) }
            // SIGKILL takes effect asynchronously: wait (bounded) until they are gone.
            let killed = ContinuousClock.now
            while !survivors(group: group, token: token).isEmpty && seconds(since: killed) < 1 {
                usleep(5_000)
            }
        }
        return found
    }

    /// Live (not zombie) processes in process group `group`, or whose environment carries `token`.
    package static func survivors(group: pid_t, token: String?) -> [Leftover] {
        let needle = token.map { Array("\(runTokenVariable)=\($0)".utf8)[...] }
        var result: [Leftover] = []
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = pid_t(entry), pid != getpid() else { continue }
            guard let stat = FileManager.default.contents(atPath: "/proc/\(pid)/stat"),
                  let close = stat.lastIndex(of: UInt8(ascii: ")")) else { continue }
            // After "pid (comm) ": state ppid pgrp ...
            let fields = String(decoding: stat[(close + 2)...], as: UTF8.self).split(separator: " ")
            guard fields.count > 2, let pgrp = pid_t(fields[2]) else { continue }
            let state = fields[0]
            if state == "Z" || state == "X" { continue }
            var matches = pgrp == group
            if !matches, let needle, let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ") {
                matches = [UInt8](environ).split(separator: 0).contains { $0.elementsEqual(needle) }
            }
            guard matches else { continue }
            // The name, without the newline after it.
            let comm = FileManager.default.contents(atPath: "/proc/\(pid)/comm").map { bytes in
                let text = String(decoding: bytes, as: UTF8.self).drop(while: \.isWhitespace)
                return String(text.dropLast(text.reversed().prefix(while: \.isWhitespace).count))
            } ?? "?"
            result.append(Leftover(pid: pid, command: comm))
        }
        return result.sorted { $0.pid < $1.pid }
    }

    /// posix_spawn failed.
    package struct SpawnError: Error, CustomStringConvertible {
        package let path: String
        package let errno: Int32
        package var description: String { "cannot run \(path): \(String(cString: strerror(errno)))" }
    }
}
