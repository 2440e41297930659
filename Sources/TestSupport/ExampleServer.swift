// ExampleServer.swift — the example servers (Examples/) as the tests run them: started in a process group of their own, their port read from what they print, HTTP/1.1 requests on connections of their own.
package import Foundation
package import ProcessSpawning
#if canImport(Glibc)
import Glibc
#endif

/// One run of an example server (Examples/CrashingServer's crashing-server and crashing-vapor-server): started
/// with `--dir <directory>/records --port 0` in a process group of its own, ready once it has
/// printed `listening on 127.0.0.1:PORT`. Whatever goes wrong, its group does not outlive the
/// object: a server not waited for with ``wait(timeout:)`` is killed.
package final class ExampleServer {
    /// The run's scratch directory: `records/`, `stdout`, `stderr`.
    package let directory: String
    package let running: ChildProcess.Running
    package private(set) var port: UInt16 = 0
    private var ended = false

    /// Starts `executable` and waits (at most 60 s) until it says where it listens. The test's
    /// environment without `CRASHCAPTURE_DISABLE` and `CRASH_DIR`, then `environment`.
    /// - Throws: when it cannot be started or does not say where it listens.
    /// `launcher`: what starts the server (a memory cgroup's, ``TestMemoryCgroup/launcher``), the
    /// server's path and arguments after it.
    package init(_ executable: String, name: String, arguments: [String] = [], environment extra: [String: String] = [:],
                 directory: String? = nil, launcher: [String] = []) throws {
        self.directory = try directory ?? Scratch.directory(name)
        var environment = ProcessInfo.processInfo.environment
        environment["CRASHCAPTURE_DISABLE"] = nil
        environment["CRASH_DIR"] = nil
        for (key, value) in extra { environment[key] = value }
        let command = launcher + [executable, "--dir", self.directory + "/records", "--port", "0"] + arguments
        running = try ChildProcess.start(command[0], Array(command.dropFirst()),
                                         environment: environment, stdout: self.directory + "/stdout",
                                         stderr: self.directory + "/stderr", ownProcessGroup: true)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let line = stdout.split(separator: "\n").first(where: { $0.hasPrefix("listening on 127.0.0.1:") }),
               let port = UInt16(line.split(separator: ":").last ?? "") {
                self.port = port
                return
            }
            if kill(running.pid, 0) != 0 { break }
            usleep(20_000)
        }
        throw Tools.Failure(description: "\(name): the server did not say where it listens\nstdout:\n\(stdout)\nstderr:\n\(stderr)")
    }

    deinit {
        if !ended {
            kill(-running.pid, SIGKILL)
            _ = running.wait(timeout: 10, leftoverGrace: 1)
        }
    }

    package var pid: pid_t { running.pid }
    package var stdout: String { Self.read(directory + "/stdout") }
    package var stderr: String { Self.read(directory + "/stderr") }
    package var recordFiles: [String] { files(in: directory + "/records", suffix: ".ccrec") }
    package var partialFiles: [String] { files(in: directory + "/records", suffix: ".partial") }

    /// How many times `marker` is on stderr, once it is there `count` times or `timeout` seconds passed.
    @discardableResult
    package func waitForStderr(_ marker: String, count: Int, timeout: Double) -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        var found = 0
        repeat {
            found = stderr.components(separatedBy: marker).count - 1
            if found >= count { break }
            usleep(10_000)
        } while Date() < deadline
        return found
    }

    /// Waits for the server to end (killing its group after `timeout` seconds from its start);
    /// see ``ChildProcess/Running/wait(timeout:leftoverGrace:)``. Once only.
    package func wait(timeout: Double, leftoverGrace: Double = 2) -> ChildProcess {
        ended = true
        return running.wait(timeout: timeout, leftoverGrace: leftoverGrace)
    }

    private func files(in directory: String, suffix: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(suffix) }.sorted()
            .map { directory + "/" + $0 }
    }

    private static func read(_ path: String) -> String {
        String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
    }
}

/// One HTTP/1.1 GET on its own connection to 127.0.0.1, sent at once, read when asked.
package final class HTTPConnection {
    let fd: Int32

    /// Connects and sends `GET path` with `headers` (and `Host`, `Connection: close`).
    package init(port: UInt16, path: String, headers: [(name: String, value: String)] = []) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Tools.Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let error = errno
            close(fd)
            throw Tools.Failure(description: "connect to 127.0.0.1:\(port): errno \(error)")
        }
        let fields = headers.map { "\($0.name): \($0.value)\r\n" }.joined()
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(fields)Connection: close\r\n\r\n".utf8)
        let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == request.count else {
            close(fd)
            throw Tools.Failure(description: "send \(path): \(sent) of \(request.count) bytes, errno \(errno)")
        }
    }

    deinit { close(fd) }

    /// Everything received until the peer closed (or reset) the connection, or `timeout` seconds passed.
    package func readToEnd(timeout: Double) -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 100)
            if ready < 0 && errno != EINTR { break }
            guard ready > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { received += buffer[..<count] } else if count < 0 && errno == EINTR { continue } else { break }
        }
        return String(decoding: received, as: UTF8.self)
    }
}
