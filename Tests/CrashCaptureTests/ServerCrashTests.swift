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

    /// Starts the server (ExampleServer), checks `/ok`, leaves `/slow` requests in flight, then
    /// sends `/crash` and waits for the server to die. `{dir}` in the environment's values is the
    /// run's backtracer directory.
    static func crashServer(_ executable: String, name: String, environment extra: [String: String]) throws -> ServerRun {
        let directory = try Scratch.directory(name)
        try FileManager.default.createDirectory(atPath: directory + "/backtracer", withIntermediateDirectories: true)
        let server = try ExampleServer(executable, name: name, environment: extra.mapValues {
            $0.replacingOccurrences(of: "{dir}", with: directory + "/backtracer")
        }, directory: directory)
        let port = server.port

        let ok = try HTTPConnection(port: port, path: "/ok")
        let okReply = ok.readToEnd(timeout: 30)
        guard okReply.hasPrefix("HTTP/1.1 200"), okReply.hasSuffix("ok\n") else {
            throw Tools.Failure(description: "\(name): GET /ok answered \(okReply.debugDescription)\nstderr:\n\(server.stderr)")
        }

        // Requests in flight: each handler has said it started (and sleeps 10 s).
        let slow = try (0..<slowRequests).map { _ in try HTTPConnection(port: port, path: "/slow?seconds=10") }
        let started = server.waitForStderr("slow request started", count: slowRequests, timeout: 30)
        guard started == slowRequests else {
            throw Tools.Failure(description: "\(name): \(started) of \(slowRequests) /slow requests started\nstderr:\n\(server.stderr)")
        }

        let crash = try HTTPConnection(port: port, path: "/crash")
        let crashReply = crash.readToEnd(timeout: 120)
        let ended = server.wait(timeout: 180, leftoverGrace: 2)
        let slowReplies = slow.map { $0.readToEnd(timeout: 5) }
        return ServerRun(directory: directory, pid: server.pid, child: ended, slowReplies: slowReplies, crashReply: crashReply,
                         stdout: server.stdout, stderr: server.stderr,
                         leftAfter: ChildProcess.survivors(group: server.pid, token: nil))
    }
}
