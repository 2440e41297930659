// ServerCrashTests.swift — a real server among the tests: the Hummingbird 2 server of
// Examples/CrashingServer crashes in a route handler with requests in flight; its record's
// crashed thread must show what Swift's own backtracer shows of the same crash, frame for frame,
// async callers included.
import CrashCapture
import CrashScenarios
import CrashSymbolication
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class ServerCrashTests: XCTestCase {
    /// The release build of Examples/CrashingServer (scripts/test.sh builds it and sets CRASHING_SERVER).
    static var server: String? {
        guard let path = ProcessInfo.processInfo.environment["CRASHING_SERVER"], !path.isEmpty else { return nil }
        return path
    }

    /// How many `/slow` requests are left in flight when `/crash` arrives.
    static let slowRequests = 3

    func testServerCrashInRouteHandlerMatchesTheBacktracerFrameForFrame() throws {
        guard let server = Self.server else {
            throw XCTSkip("set CRASHING_SERVER to a build of Examples/CrashingServer's crashing-server (scripts/test.sh does)")
        }
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: server), "CRASHING_SERVER=\(server) is not an executable")

        // The run with CrashCapture (the Swift backtracer off, as an app that ships it would have it).
        let captured = try Self.crashServer(server, name: "server-capture", environment: ["SWIFT_BACKTRACE": "enable=no"])
        captured.checkDeath(file: #filePath, line: #line)
        let records = captured.recordFiles
        XCTAssertEqual(records.count, 1, "one record expected in \(captured.directory)/records: \(records)\n\(captured.stderr.suffix(2000))")
        XCTAssertEqual(captured.partialFiles, [], "a record left unfinished")
        let record = try CrashRecordReader.read(path: try XCTUnwrap(records.first))
        XCTAssertEqual(record.completeness, .complete)
        XCTAssertEqual(record.signal?.number, SIGSEGV)
        XCTAssertEqual(record.signal?.codeName, "SEGV_MAPERR")
        XCTAssertEqual(record.signal?.faultAddress, 0)
        XCTAssertEqual(record.process?.pid, captured.pid, "the record is the server's")
        XCTAssertEqual(record.appName, "crashing-server")
        XCTAssertEqual(record.appVersion, "1.0")
        let thread = try XCTUnwrap(record.crashedThread, "no crashed thread")

        // The reference run: no CrashCapture, Swift's backtracer writes its JSON report.
        let reference = try Self.crashServer(server, name: "server-backtracer", environment: [
            CrashHandler.disableEnvironmentVariable: "1",
            "SWIFT_BACKTRACE": "enable=yes,interactive=no,format=json,output-to={dir}",
        ])
        reference.checkDeath(file: #filePath, line: #line)
        XCTAssertEqual(reference.recordFiles, [], "CRASHCAPTURE_DISABLE=1 left a record")

        // Frame for frame, by image offset, async resume points included (the same binary, so
        // the same offsets). The backtracer stops at the crashed task's first context: the
        // frames of the tasks that spawned it (taskDepth > 0) are the record's alone.
        let all = Harness.symbolicator.threadFrames(of: thread, images: record.images)
        let frames = all.filter { $0.taskDepth == 0 }
        let failures = BacktracerOutput.compareRecordFrames(frames, images: record.images, backtracerDirectory: reference.backtracerDirectory)
        XCTAssertEqual(failures, [], failures.joined(separator: "\n"))

        // What the frames must name: the handler, the app's middleware, the helpers between them
        // and Hummingbird's responder chain as async callers.
        func name(_ frame: ThreadFrame) -> String { frame.symbols.map { $0.symbol ?? "?" }.joined(separator: " / ") }
        let asyncFrames = frames.filter { $0.kind == .asyncResumePoint }
        let names = frames.map(name)
        let asyncNames = asyncFrames.map(name)
        let parentNames = all.filter { $0.taskDepth > 0 }.map(name)
        let summary = "\(frames.count) frames of the crashed task, \(asyncFrames.count) of them async resume points, "
            + "\(parentNames.count) of its parent tasks:\n"
            + all.enumerated().map { "  \($0) [\($1.kind.rawValue), task depth \($1.taskDepth)] \(name($1).prefix(200))" }.joined(separator: "\n")
        for wanted in ["dereferenceNull", "renderAccount", "loadAccount", "crashRoute", "AuditMiddleware.handle"] {
            XCTAssertTrue(names.contains { $0.contains(wanted) }, "no frame names \(wanted); \(summary)")
        }
        for wanted in ["loadAccount", "crashRoute", "AuditMiddleware.handle", "Hummingbird.MiddlewareResponder.respond", "Hummingbird.RouterResponder.respond"] {
            XCTAssertTrue(asyncNames.contains { $0.contains(wanted) }, "no async resume point in \(wanted); \(summary)")
        }
        XCTAssertGreaterThanOrEqual(asyncFrames.count, 1, summary)
        // In the order of the calls: innermost first.
        let order = ["dereferenceNull", "renderAccount", "loadAccount", "crashRoute", "AuditMiddleware.handle", "RouterResponder.respond"]
        let positions = order.map { wanted in names.firstIndex { $0.contains(wanted) } ?? -1 }
        XCTAssertEqual(positions, positions.sorted(), "frames out of order \(Array(zip(order, positions))); \(summary)")
        // Beyond the backtracer: the connection's task is a child of the server's accept loop,
        // itself a child of the application's service group, down to the program's main.
        var left = ["HummingbirdCore.Server.run", "ServiceLifecycle.ServiceGroup.run", "runService"][...]
        for parent in parentNames where !left.isEmpty && parent.contains(left.first!) { left = left.dropFirst() }
        XCTAssertTrue(left.isEmpty, "the parent tasks' frames lack \(left.first ?? ""); \(summary)")

        if testRun?.failureCount == 0 {
            try? FileManager.default.removeItem(atPath: captured.directory)
            try? FileManager.default.removeItem(atPath: reference.directory)
        }
    }

    // MARK: Running the server

    /// One run of the server to its crash.
    struct ServerRun {
        var directory: String
        var pid: pid_t
        var child: ChildProcess
        /// What each `/slow` connection received before it closed.
        var slowReplies: [String]
        /// What the `/crash` connection received before it closed.
        var crashReply: String
        var stdout: String
        var stderr: String
        /// Processes of the server's group still running after it ended (whatever was found was killed).
        var leftAfter: [ChildProcess.Leftover]

        var recordFiles: [String] { files(in: directory + "/records", suffix: ".ccrec") }
        var partialFiles: [String] { files(in: directory + "/records", suffix: ".partial") }
        var backtracerDirectory: String { directory + "/backtracer" }

        func files(in directory: String, suffix: String) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(suffix) }.sorted()
                .map { directory + "/" + $0 }
        }

        /// Died of SIGSEGV from `/crash`, with the `/slow` requests unanswered (in flight to the
        /// end), and left nothing running.
        func checkDeath(file: StaticString, line: UInt) {
            let context = "\(directory)\nstdout:\n\(stdout.suffix(1000))\nstderr:\n\(stderr.suffix(3000))"
            XCTAssertEqual(child.ending, .signaled(SIGSEGV), "server: \(context)", file: file, line: line)
            XCTAssertEqual(crashReply, "", "/crash answered", file: file, line: line)
            XCTAssertEqual(slowReplies, Array(repeating: "", count: ServerCrashTests.slowRequests),
                           "a /slow request was answered: it was not in flight when the server died", file: file, line: line)
            XCTAssertEqual(child.leftRunning, [], "processes of the server's group left running", file: file, line: line)
            XCTAssertEqual(leftAfter, [], "processes of the server's group still running", file: file, line: line)
        }
    }

    /// Starts the server in a process group of its own, waits for it to listen, checks `/ok`,
    /// leaves `/slow` requests in flight, then sends `/crash` and waits for the server to die.
    /// `{dir}` in the environment's values is the run's backtracer directory.
    static func crashServer(_ server: String, name: String, environment extra: [String: String]) throws -> ServerRun {
        let directory = try Scratch.directory(name)
        try FileManager.default.createDirectory(atPath: directory + "/backtracer", withIntermediateDirectories: true)
        var environment = ProcessInfo.processInfo.environment
        environment[CrashHandler.disableEnvironmentVariable] = nil
        environment["CRASH_DIR"] = nil
        for (key, value) in extra { environment[key] = value.replacingOccurrences(of: "{dir}", with: directory + "/backtracer") }
        let stdoutPath = directory + "/stdout", stderrPath = directory + "/stderr"
        let running = try ChildProcess.start(server, ["--dir", directory + "/records", "--port", "0"], environment: environment,
                                             stdout: stdoutPath, stderr: stderrPath, ownProcessGroup: true)
        var child: ChildProcess?
        // Whatever goes wrong below, the server's group does not outlive the test.
        defer {
            if child == nil {
                kill(-running.pid, SIGKILL)
                _ = running.wait(timeout: 10, leftoverGrace: 1)
            }
        }
        func read(_ path: String) -> String { String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self) }

        // "listening on 127.0.0.1:PORT"
        var port: UInt16?
        let deadline = Date().addingTimeInterval(60)
        while port == nil && Date() < deadline {
            if let line = read(stdoutPath).split(separator: "\n").first(where: { $0.hasPrefix("listening on 127.0.0.1:") }) {
                port = UInt16(line.split(separator: ":").last ?? "")
            } else if kill(running.pid, 0) != 0 {
                break
            } else {
                usleep(20_000)
            }
        }
        guard let port else {
            throw Tools.Failure(description: "\(name): the server did not say where it listens\nstdout:\n\(read(stdoutPath))\nstderr:\n\(read(stderrPath))")
        }

        let ok = try HTTPConnection(port: port, path: "/ok")
        let okReply = ok.readToEnd(timeout: 30)
        guard okReply.hasPrefix("HTTP/1.1 200"), okReply.hasSuffix("ok\n") else {
            throw Tools.Failure(description: "\(name): GET /ok answered \(okReply.debugDescription)\nstderr:\n\(read(stderrPath))")
        }

        // Requests in flight: each handler has said it started (and sleeps 10 s).
        let slow = try (0..<slowRequests).map { _ in try HTTPConnection(port: port, path: "/slow?seconds=10") }
        let slowDeadline = Date().addingTimeInterval(30)
        while read(stderrPath).components(separatedBy: "slow request started").count - 1 < slowRequests && Date() < slowDeadline {
            usleep(10_000)
        }
        let started = read(stderrPath).components(separatedBy: "slow request started").count - 1
        guard started == slowRequests else {
            throw Tools.Failure(description: "\(name): \(started) of \(slowRequests) /slow requests started\nstderr:\n\(read(stderrPath))")
        }

        let crash = try HTTPConnection(port: port, path: "/crash")
        let crashReply = crash.readToEnd(timeout: 120)
        let ended = running.wait(timeout: 180, leftoverGrace: 2)
        child = ended
        let slowReplies = slow.map { $0.readToEnd(timeout: 5) }
        return ServerRun(directory: directory, pid: running.pid, child: ended, slowReplies: slowReplies, crashReply: crashReply,
                         stdout: read(stdoutPath), stderr: read(stderrPath),
                         leftAfter: ChildProcess.survivors(group: running.pid, token: nil))
    }
}

/// One HTTP/1.1 request on its own connection to 127.0.0.1, sent at once, read when asked.
final class HTTPConnection {
    let fd: Int32

    init(port: UInt16, path: String) throws {
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
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == request.count else {
            close(fd)
            throw Tools.Failure(description: "send \(path): \(sent) of \(request.count) bytes, errno \(errno)")
        }
    }

    deinit { close(fd) }

    /// Everything received until the peer closed (or reset) the connection, or `timeout` seconds passed.
    func readToEnd(timeout: Double) -> String {
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
