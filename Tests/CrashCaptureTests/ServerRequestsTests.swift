// ServerRequestsTests.swift — the server integrations in real servers: the Hummingbird 2 server of
// Examples/CrashingServer (CrashCaptureHummingbird's middleware, CrashCaptureService) and the
// Vapor 4 server of Examples/CrashingServer (crashing-vapor-server) (CrashCaptureVapor's middleware). With 50
// requests in flight, each with its own trace and X-Request-Id, one crashes its route handler
// after an await: the record and the stderr line must name exactly that request, and the record
// must list the others in flight.
import CrashCapture
import CrashScenarios
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class ServerRequestsTests: XCTestCase {
    /// A framework's example server and what its middleware records.
    struct Framework {
        var name: String
        /// Where scripts/test.sh puts the path of its release build.
        var variable: String
        /// The `/crash/{id}` route's template as the framework writes it.
        var crashRoute: String
        /// Whether the framework takes its request id from `X-Request-Id` (Vapor); Hummingbird
        /// makes its own, and the middleware keeps the header as the attribute `x_request_id`.
        var requestIDFromHeader: Bool

        static let hummingbird = Framework(name: "hummingbird", variable: "CRASHING_SERVER", crashRoute: "/crash/{id}", requestIDFromHeader: false)
        static let vapor = Framework(name: "vapor", variable: "CRASHING_VAPOR_SERVER", crashRoute: "/crash/:id", requestIDFromHeader: true)

        func executable() throws -> String {
            guard let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty else {
                throw XCTSkip("set \(variable) to a build of the \(name) example server (scripts/test.sh does)")
            }
            XCTAssertTrue(FileManager.default.isExecutableFile(atPath: path), "\(variable)=\(path) is not an executable")
            return path
        }
    }

    /// A grpc-swift 2 server (HTTP/2 over SwiftNIO, `crashing-grpc-server`) with
    /// CrashContextInterceptor, crashing in one of 20 concurrent RPCs: the record and the Sentry
    /// event name that RPC — its method path, its `x-request-id` metadata and the trace of its
    /// `traceparent` — and the server dies of SIGSEGV as without capture.
    func testGRPCCrashAmongTwentyRPCsNamesThatRPCInTheRecordAndTheSentryEvent() throws {
        guard let executable = ProcessInfo.processInfo.environment["CRASHING_GRPC_SERVER"], !executable.isEmpty else {
            throw XCTSkip("set CRASHING_GRPC_SERVER to a build of the gRPC example server (scripts/test.sh does)")
        }
        func crash(disabled: Bool) throws -> ExampleServer {
            var environment = ["SWIFT_BACKTRACE": "enable=no"]
            if disabled { environment[CrashHandler.disableEnvironmentVariable] = "1" }
            let server = try ExampleServer(executable, name: disabled ? "grpc-twenty-disabled" : "grpc-twenty", environment: environment)
            let client = try ChildProcess.run(executable, ["client", "--port", String(server.port), "--count", "20", "--crash", "7"],
                                              environment: environment, timeout: 60)
            XCTAssertEqual(client.ending, .exited(0))
            return server
        }
        let server = try crash(disabled: false)
        let ended = server.wait(timeout: 60)
        XCTAssertEqual(ended.ending, .signaled(SIGSEGV), server.stderr)
        XCTAssertEqual(ended.leftRunning, [])
        let reference = try crash(disabled: true)
        XCTAssertEqual(reference.wait(timeout: 60).ending, ended.ending, "without capture, the same death")

        XCTAssertEqual(server.recordFiles.count, 1, server.stderr)
        let path = try XCTUnwrap(server.recordFiles.first)
        let record = try CrashRecordReader.read(path: path)
        let requests = try XCTUnwrap(record.requests)
        let crashed = try XCTUnwrap(requests.crashed, "no RPC named crashed; others: \(requests.others.map(\.requestID))")
        XCTAssertEqual(crashed.requestID, "rpc-7")
        XCTAssertEqual(crashed.method, "POST")
        XCTAssertEqual(crashed.route, "/crashcapture.example.Orders/Get")
        XCTAssertEqual(crashed.path, "/crashcapture.example.Orders/Get")
        XCTAssertEqual(crashed.traceID, "4bf92f3577b34da6a3ce929d0e0e4707")
        XCTAssertEqual(crashed.parentSpanID, "00f067aa0ba902b7")
        XCTAssertEqual(crashed.spanID?.count, 16)
        XCTAssertTrue(requests.others.allSatisfy { $0.requestID.hasPrefix("rpc-") && $0.requestID != "rpc-7" }, "\(requests.others.map(\.requestID))")

        // The Sentry event, as the sink would send it.
        let envelope = server.directory + "/event.envelope"
        let export = try ChildProcess.run(BuiltProducts.inspect, ["export", path, "--sentry", "-o", envelope], timeout: 120)
        XCTAssertEqual(export.ending, .exited(0))
        let lines = String(decoding: try XCTUnwrap(FileManager.default.contents(atPath: envelope)), as: UTF8.self).split(separator: "\n")
        let event = try XCTUnwrap(lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .first { $0["exception"] != nil })
        let trace = try XCTUnwrap((event["contexts"] as? [String: Any])?["trace"] as? [String: Any])
        XCTAssertEqual(trace["trace_id"] as? String, "4bf92f3577b34da6a3ce929d0e0e4707")
        let tags = event["tags"] as? [String: Any] ?? [:]
        XCTAssertEqual(tags["request_id"] as? String, "rpc-7", "\(event["tags"] ?? "")")
        let request = try XCTUnwrap(event["request"] as? [String: Any])
        XCTAssertEqual(request["method"] as? String, "POST")
        XCTAssertTrue((request["url"] as? String ?? "").hasSuffix("/crashcapture.example.Orders/Get"), "\(request)")
    }

    /// How many requests are in flight when the crash comes, the crashing one included, and which one crashes.
    static let requestCount = 50
    static let crashingIndex = 37

    func testHummingbirdCrashAmongFiftyRequestsNamesExactlyThatRequestAndDiesAsWithoutCapture() throws {
        try checkCrashAmongFifty(.hummingbird, tracer: false)
    }

    func testHummingbirdCrashNamesTheSpanATracerMadeCurrent() throws {
        try checkCrashAmongFifty(.hummingbird, tracer: true)
    }

    func testVaporCrashAmongFiftyRequestsNamesExactlyThatRequestAndDiesAsWithoutCapture() throws {
        try checkCrashAmongFifty(.vapor, tracer: false)
    }

    func testVaporCrashNamesTheSpanATracerPutInTheRequest() throws {
        try checkCrashAmongFifty(.vapor, tracer: true)
    }

    /// CrashCaptureService: a graceful shutdown (SIGTERM to the ServiceGroup) ends the server
    /// normally, with no record and no crash line.
    func testHummingbirdServerWithCrashCaptureServiceEndsGracefullyOnSIGTERM() throws {
        let server = try ExampleServer(try Framework.hummingbird.executable(), name: "hummingbird-sigterm")
        let ok = try HTTPConnection(port: server.port, path: "/ok").readToEnd(timeout: 30)
        XCTAssertTrue(ok.hasPrefix("HTTP/1.1 200"), ok)
        kill(server.pid, SIGTERM)
        let ended = server.wait(timeout: 60)
        XCTAssertEqual(ended.ending, .exited(0), server.stderr)
        XCTAssertEqual(ended.leftRunning, [])
        XCTAssertEqual(server.recordFiles + server.partialFiles, [])
        XCTAssertEqual(try CrashLine.all(in: server.stderr), [])
        XCTAssertTrue(server.stderr.contains("crash capture: installed"), server.stderr)
        if testRun?.failureCount == 0 { try? FileManager.default.removeItem(atPath: server.directory) }
    }

    /// CrashReportingService: a redeploy's SIGTERM to the ServiceGroup ends the server's run as
    /// exited, not as a crash or a killed run. The next launch over the same records (the
    /// harness's `deliver`, Sentry at a loopback address) sends one `exited` session for it, with
    /// the server's release and environment, which Relay's session schema and sentry_sdk's
    /// Session model accept (Tests/Oracles/sentry_sessions.py).
    func testHummingbirdServerWithCrashReportingServiceEndsItsRunAsExitedOnSIGTERM() throws {
        try checkRunEndsAsExitedOnSIGTERM(.hummingbird, release: "crashing-server@1.0")
    }

    /// Vapor's lifecycle, not ServiceLifecycle: CrashReportingLifecycle ends the run at the
    /// application's shutdown.
    func testVaporServerWithCrashReportingLifecycleEndsItsRunAsExitedOnSIGTERM() throws {
        try checkRunEndsAsExitedOnSIGTERM(.vapor, release: "crashing-vapor-server@1.0")
    }

    /// The server with the reporter (`--report`), SIGTERM: exit 0, no record, and the next launch
    /// sends one `exited` session with the server's release and environment (the sessions oracle).
    func checkRunEndsAsExitedOnSIGTERM(_ framework: Framework, release: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let sentry = try TestHTTPServer()
        let sentryEnvironment = ["SENTRY_DSN": "http://key@127.0.0.1:\(sentry.port)/1", "SENTRY_ENVIRONMENT": "staging"]
        let server = try ExampleServer(try framework.executable(), name: "\(framework.name)-sigterm-report", arguments: ["--report"],
                                       environment: sentryEnvironment)
        let ok = try HTTPConnection(port: server.port, path: "/ok").readToEnd(timeout: 30)
        XCTAssertTrue(ok.hasPrefix("HTTP/1.1 200"), ok)
        kill(server.pid, SIGTERM)
        let ended = server.wait(timeout: 60)
        XCTAssertEqual(ended.ending, .exited(0), server.stderr)
        XCTAssertTrue(server.stderr.contains("crash capture: installed"), server.stderr)
        XCTAssertEqual(server.recordFiles + server.partialFiles, [])

        let next = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", server.directory + "/records",
                                                                         "--sentry-dsn", sentryEnvironment["SENTRY_DSN"]!],
                                        environment: sentryEnvironment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 }, timeout: 120)
        XCTAssertEqual(next.ending, .exited(0))
        let files = try sentry.allRequests.enumerated().map { index, request in
            let file = server.directory + "/received-\(index).envelope"
            try Data(request.bodyBytes).write(to: URL(fileURLWithPath: file))
            return file
        }
        XCTAssertFalse(files.isEmpty, "the next launch sent the server's session")
        let output = try Oracles.run("sentry_sessions.py", files)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        XCTAssertEqual((json["errors"] as? [Any])?.count, 0, "\(json["errors"] ?? "")")
        let payloads = (json["sessions"] as? [[String: Any]] ?? []).compactMap { $0["payload"] as? [String: Any] }
        let servers = payloads.filter { ($0["attrs"] as? [String: Any])?["release"] as? String == release }
        XCTAssertEqual(servers.map { $0["status"] as? String }, ["exited"], "\(payloads)", file: file, line: line)
        XCTAssertEqual((servers.first?["attrs"] as? [String: Any])?["environment"] as? String, "staging", file: file, line: line)
        if testRun?.failureCount == 0 { try? FileManager.default.removeItem(atPath: server.directory) }
    }

    // MARK: The scenario

    /// One request the test sent: its own X-Request-Id and W3C trace (the ids end in its index,
    /// so that a mix-up of two shows).
    struct SentRequest {
        var index: Int
        var path: String
        var requestID: String
        var traceID: String
        var parentSpanID: String
        var headers: [(name: String, value: String)] {
            [("traceparent", "00-\(traceID)-\(parentSpanID)-01"), ("X-Request-Id", requestID)]
        }

        init(index: Int, path: String) {
            func hex(_ digits: Int) -> String {
                String((0..<digits).map { _ in "0123456789abcdef".randomElement()! })
            }
            let suffix = String(index, radix: 16)
            self.index = index
            self.path = path
            requestID = "req-\(index)-\(hex(8))"
            traceID = hex(32 - suffix.count - 1) + "f" + suffix
            parentSpanID = hex(16 - suffix.count - 1) + "e" + suffix
        }
    }

    /// A run of a server to its crash.
    struct Run {
        var server: ExampleServer
        var child: ChildProcess
        var sent: [SentRequest]
        var slowReplies: [String]
        var crashReply: String
        var crashing: SentRequest { sent[ServerRequestsTests.crashingIndex] }
    }

    /// Starts the server, leaves 49 `/slow` requests in flight (each handler has said it
    /// started), sends `/crash/37` and waits for the server to die.
    func crashAmongFifty(_ executable: String, name: String, arguments: [String], environment: [String: String]) throws -> Run {
        let server = try ExampleServer(executable, name: name, arguments: arguments, environment: environment)
        let ok = try HTTPConnection(port: server.port, path: "/ok").readToEnd(timeout: 30)
        guard ok.hasPrefix("HTTP/1.1 200") else {
            throw Tools.Failure(description: "\(name): GET /ok answered \(ok.debugDescription)\nstderr:\n\(server.stderr)")
        }
        let sent = (0..<Self.requestCount).map {
            SentRequest(index: $0, path: $0 == Self.crashingIndex ? "/crash/\($0)" : "/slow")
        }
        let slow = try sent.filter { $0.index != Self.crashingIndex }.map {
            try HTTPConnection(port: server.port, path: $0.path + "?seconds=60", headers: $0.headers)
        }
        let started = server.waitForStderr("slow request started", count: slow.count, timeout: 60)
        guard started == slow.count else {
            throw Tools.Failure(description: "\(name): \(started) of \(slow.count) /slow requests started\nstderr:\n\(server.stderr)")
        }
        let crash = try HTTPConnection(port: server.port, path: sent[Self.crashingIndex].path, headers: sent[Self.crashingIndex].headers)
        let crashReply = crash.readToEnd(timeout: 120)
        let child = server.wait(timeout: 240)
        return Run(server: server, child: child, sent: sent, slowReplies: slow.map { $0.readToEnd(timeout: 5) }, crashReply: crashReply)
    }

    func checkCrashAmongFifty(_ framework: Framework, tracer: Bool, file: StaticString = #filePath, line: UInt = #line) throws {
        let executable = try framework.executable()
        let name = framework.name + (tracer ? "-tracer" : "")
        let run = try crashAmongFifty(executable, name: name, arguments: tracer ? ["--tracer"] : [], environment: ["SWIFT_BACKTRACE": "enable=no"])
        let stderr = run.server.stderr
        let context = "\(run.server.directory)\nstderr:\n\(stderr.suffix(3000))"

        // Died of the crash, with every other request unanswered (in flight to the end).
        XCTAssertEqual(run.child.ending, .signaled(SIGSEGV), context, file: file, line: line)
        XCTAssertEqual(run.crashReply, "", "/crash answered", file: file, line: line)
        XCTAssertEqual(run.slowReplies.filter { !$0.isEmpty }, [], "a /slow request was answered", file: file, line: line)
        XCTAssertEqual(run.child.leftRunning, [], "processes of the server's group left running", file: file, line: line)

        // Which request the server says crashed: Hummingbird's own id, or Vapor's (the header's).
        let said = stderr.split(separator: "\n").filter { $0.hasPrefix("crash request ") }.map { String($0.dropFirst(14)) }
        XCTAssertEqual(said.count, 1, "the crash handler ran \(said.count) times; \(context)", file: file, line: line)
        let crashingID = framework.requestIDFromHeader ? run.crashing.requestID : said.first ?? "?"
        if framework.requestIDFromHeader { XCTAssertEqual(said, [run.crashing.requestID], file: file, line: line) }

        XCTAssertEqual(run.server.recordFiles.count, 1, "one record expected; \(context)", file: file, line: line)
        let record = try CrashRecordReader.read(path: try XCTUnwrap(run.server.recordFiles.first, context))
        let requests = try XCTUnwrap(record.requests, "the record has no requests section")
        guard case .task = requests.status else { return XCTFail("requests' status \(requests.status)", file: file, line: line) }

        // The crashed request is exactly the one that crashed.
        let crashed = try XCTUnwrap(requests.crashed, "no request named crashed; others: \(requests.others.map(\.requestID))")
        XCTAssertEqual(crashed.requestID, crashingID, "the crashed request's id", file: file, line: line)
        XCTAssertEqual(crashed.method, "GET", "its method", file: file, line: line)
        XCTAssertEqual(crashed.path, run.crashing.path, "its path", file: file, line: line)
        XCTAssertEqual(crashed.route, framework.crashRoute, "its route template", file: file, line: line)
        XCTAssertEqual(crashed.query, "", "the query is recorded only when asked for", file: file, line: line)
        XCTAssertEqual(crashed.traceID, run.crashing.traceID, "its trace id", file: file, line: line)
        XCTAssertEqual(crashed.parentSpanID, run.crashing.parentSpanID, "its parent span id (the header's)", file: file, line: line)
        XCTAssertTrue(crashed.sampled, file: file, line: line)
        XCTAssertFalse(crashed.isThreadContext, file: file, line: line)
        if tracer {
            // The stand-in tracer's span (the header's parent id reversed), not a new random one.
            XCTAssertEqual(crashed.spanID, String(run.crashing.parentSpanID.reversed()), "not the tracer's span", file: file, line: line)
        } else {
            XCTAssertEqual(crashed.spanID?.count, 16, file: file, line: line)
            XCTAssertNotEqual(crashed.spanID, run.crashing.parentSpanID, file: file, line: line)
        }
        let headerAttribute = crashed.attributes.first { $0.key == "x_request_id" }?.value
        XCTAssertEqual(headerAttribute, framework.requestIDFromHeader ? nil : run.crashing.requestID, "its x_request_id attribute", file: file, line: line)

        // The others: 49 in flight, 32 of them recorded, each whole and its own, none the crashed one.
        XCTAssertEqual(requests.inFlight, Self.requestCount, file: file, line: line)
        XCTAssertEqual(requests.others.count, min(32, Self.requestCount - 1), file: file, line: line)
        var seen = Set<Int>()
        for other in requests.others {
            guard let sent = run.sent.first(where: { $0.traceID == other.traceID }) else {
                XCTFail("a request in flight with a trace that was not sent: \(other)", file: file, line: line)
                continue
            }
            XCTAssertNotEqual(sent.index, Self.crashingIndex, "the crashed request is among the others", file: file, line: line)
            XCTAssertTrue(seen.insert(sent.index).inserted, "request \(sent.index) recorded twice", file: file, line: line)
            XCTAssertNotEqual(other.requestID, crashed.requestID, file: file, line: line)
            let ownID = framework.requestIDFromHeader ? other.requestID : other.attributes.first { $0.key == "x_request_id" }?.value
            XCTAssertEqual(ownID, sent.requestID, "request \(sent.index) is not whole: \(other)", file: file, line: line)
            XCTAssertEqual([other.method, other.path, other.route], ["GET", "/slow", "/slow"], file: file, line: line)
            XCTAssertEqual(other.parentSpanID, sent.parentSpanID, "request \(sent.index)'s parent span id", file: file, line: line)
        }

        // The stderr line names the same request and trace.
        let lines = try CrashLine.all(in: stderr)
        XCTAssertEqual(lines.count, 1, context, file: file, line: line)
        XCTAssertEqual(lines.first?.requestID, crashingID, "the stderr line's request id", file: file, line: line)
        XCTAssertEqual(lines.first?.traceID, run.crashing.traceID, "the stderr line's trace id", file: file, line: line)
        XCTAssertEqual(lines.first?.spanID, crashed.spanID, "the stderr line's span id", file: file, line: line)
        XCTAssertEqual(lines.first.map { run.server.directory + "/records/" + $0.record }, run.server.recordFiles.first, file: file, line: line)

        // Without capture, the same requests end the server by the same signal, and leave nothing.
        if !tracer {
            let reference = try crashAmongFifty(executable, name: name + "-disabled", arguments: [],
                                                environment: ["SWIFT_BACKTRACE": "enable=no", CrashHandler.disableEnvironmentVariable: "1"])
            XCTAssertEqual(reference.child.ending, run.child.ending, "\(reference.server.directory)\n\(reference.server.stderr.suffix(2000))",
                           file: file, line: line)
            XCTAssertEqual(reference.server.recordFiles, [], "CRASHCAPTURE_DISABLE=1 left a record", file: file, line: line)
            XCTAssertEqual(try CrashLine.all(in: reference.server.stderr), [], file: file, line: line)
            XCTAssertTrue(reference.server.stderr.contains("crash capture: disabledByEnvironment"), file: file, line: line)
            if testRun?.failureCount == 0 { try? FileManager.default.removeItem(atPath: reference.server.directory) }
        }
        if testRun?.failureCount == 0 { try? FileManager.default.removeItem(atPath: run.server.directory) }
    }
}
