// ServerHangTests.swift — hang detection in a real Hummingbird 2 server (Examples/CrashingServer's
// crashing-server, CrashContextMiddleware and CrashCaptureService), turned on by
// CRASHCAPTURE_HANG_SECONDS alone: blocking requests that starve the pool, requests that await
// forever, a graceful shutdown that never ends, and snapshots of a server under load.
import CrashCapture
import CrashInspection
import CrashSymbolication
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class ServerHangTests: XCTestCase {
    func executable() throws -> String {
        guard let path = ProcessInfo.processInfo.environment["CRASHING_SERVER"], !path.isEmpty else {
            throw XCTSkip("set CRASHING_SERVER to a build of the Hummingbird example server (scripts/test.sh does)")
        }
        return path
    }

    static let symbolicator: Symbolicator = { try! Symbolicator() }()

    func inspect(_ path: String) throws -> Inspection {
        Inspection(path: path, record: try CrashRecordReader.read(path: path), symbolicator: Self.symbolicator)
    }

    func get(_ port: UInt16, _ path: String, timeout: Double = 30) -> String { Self.fetch(port, path, timeout: timeout) }

    static func fetch(_ port: UInt16, _ path: String, timeout: Double = 30) -> String {
        guard let connection = try? HTTPConnection(port: port, path: path) else { return "" }
        return connection.readToEnd(timeout: timeout)
    }

    /// Twice as many requests blocking their pool thread (a synchronous 3 s sleep) as the pool
    /// has threads, stall threshold 1 s: one hang record of the pool, about a thread blocked in
    /// the route's blocking call, listing the blocking requests by route; the requests all
    /// complete and the server answers again.
    func testBlockingRequestsStarveThePoolAndTheServerAnswersAfterwards() throws {
        let server = try ExampleServer(try executable(), name: "hang-block", environment: [HangDetection.environmentVariable: "1"])
        let count = 2 * ProcessInfo.processInfo.activeProcessorCount
        let connections = try (0 ..< count).map { _ in try HTTPConnection(port: server.port, path: "/block?seconds=3") }
        XCTAssertEqual(server.waitForStderr("crashcapture: {\"hang\"", count: 1, timeout: 20), 1, server.stderr)
        for connection in connections { XCTAssertTrue(connection.readToEnd(timeout: 30).contains("blocked"), "a blocking request failed") }
        XCTAssertTrue(get(server.port, "/ok").hasSuffix("ok\n"), "the server does not answer again")
        kill(server.pid, SIGTERM)
        XCTAssertEqual(server.wait(timeout: 30).ending, .exited(0), server.stderr)
        XCTAssertEqual(server.recordFiles.count, 1, "\(server.recordFiles)")
        let inspection = try inspect(try XCTUnwrap(server.recordFiles.first))
        XCTAssertEqual(inspection.record.event?.detector, .pool)
        let names = (inspection.crashed?.frames ?? []).flatMap(\.symbols).compactMap(\.symbol)
        XCTAssertTrue(names.contains { $0.contains("blockingLibraryCall") || $0.contains("blockRoute") }, "blocked thread: \(names.prefix(8))")
        let routes = inspection.record.requests?.others.map(\.route) ?? []
        XCTAssertGreaterThanOrEqual(routes.filter { $0 == "/block" }.count, 2, "\(routes)")
    }

    /// The whole reporter (`--report`, Sentry on a local server): the hang record reaches Sentry
    /// while the server lives, as an AppHang event, once; the run ends as `exited` (a hang
    /// crashes no session), and the next launch sends the record no second time.
    func testHangReachesSentryWhileTheServerLivesAndTheRunStillEndsExited() throws {
        let sentry = try TestHTTPServer()
        let dsn = "http://key@127.0.0.1:\(sentry.port)/1"
        let server = try ExampleServer(try executable(), name: "hang-report", arguments: ["--report"],
                                       environment: ["SENTRY_DSN": dsn, HangDetection.environmentVariable: "1"])
        let count = 2 * ProcessInfo.processInfo.activeProcessorCount
        let connections = try (0 ..< count).map { _ in try HTTPConnection(port: server.port, path: "/block?seconds=3") }
        XCTAssertEqual(server.waitForStderr("crashcapture: {\"hang\"", count: 1, timeout: 20), 1, server.stderr)
        func hangEvents() -> Int { sentry.allRequests.filter { $0.body.contains("\"AppHang\"") }.count }
        let deadline = Date().addingTimeInterval(60)
        while hangEvents() == 0 && Date() < deadline { usleep(100_000) }
        XCTAssertEqual(hangEvents(), 1, "the hang did not reach Sentry while the server lived")
        XCTAssertEqual(kill(server.pid, 0), 0, "the server is still running")
        for connection in connections { _ = connection.readToEnd(timeout: 30) }
        kill(server.pid, SIGTERM)
        XCTAssertEqual(server.wait(timeout: 60).ending, .exited(0), server.stderr)
        XCTAssertEqual(server.recordFiles, [], "the delivered record is gone")

        let next = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", server.directory + "/records", "--sentry-dsn", dsn],
                                        environment: ["SENTRY_DSN": dsn, "SWIFT_BACKTRACE": "enable=no"], timeout: 120)
        XCTAssertEqual(next.ending, .exited(0))
        XCTAssertEqual(hangEvents(), 1, "sent twice")
        let files = try sentry.allRequests.enumerated().map { index, request in
            let file = server.directory + "/received-\(index).envelope"
            try Data(request.bodyBytes).write(to: URL(fileURLWithPath: file))
            return file
        }
        let output = try Oracles.run("sentry_sessions.py", files)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        XCTAssertEqual((json["errors"] as? [Any])?.count, 0, "\(json["errors"] ?? "")")
        let payloads = (json["sessions"] as? [[String: Any]] ?? []).compactMap { $0["payload"] as? [String: Any] }
        let servers = payloads.filter { ($0["attrs"] as? [String: Any])?["release"] as? String == "crashing-server@1.0" }
        XCTAssertEqual(servers.map { $0["status"] as? String }, ["exited"], "\(payloads)")
    }

    /// The server killed while hung — the pool starved by requests that block for a minute, the
    /// hang reported live, then SIGKILL, as a liveness probe does — is told by the next launch as
    /// one fatal hang: an AppHang event of level fatal, not handled, beside the run's `abnormal`
    /// session; a later launch sends it no second time. A run whose hang ended (the requests
    /// blocked 3 s) and that was killed afterwards gets its `abnormal` session and no fatal hang.
    /// Each event as Relay's normalizer takes it.
    func testAServerKilledWhileHungIsOneFatalHangAtTheNextLaunchAndOneWhoseHangEndedIsNone() throws {
        let sentry = try TestHTTPServer()
        let dsn = "http://key@127.0.0.1:\(sentry.port)/1"
        let directory = try Scratch.directory("hang-killed")
        func events(_ level: String) -> [TestHTTPServer.Request] {
            sentry.allRequests.filter { $0.body.contains("\"AppHang\"") && $0.body.contains("\"level\":\"\(level)\"") }
        }
        func deliver() throws {
            let next = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", directory + "/records", "--sentry-dsn", dsn,
                                                                    "--sessions", "immediate"],
                                            environment: ["SENTRY_DSN": dsn, "SWIFT_BACKTRACE": "enable=no"], timeout: 120)
            XCTAssertEqual(next.ending, .exited(0))
        }
        func hang(seconds: Int, thenWait: Bool) throws {
            let server = try ExampleServer(try executable(), name: "hang-killed", arguments: ["--report"],
                                           environment: ["SENTRY_DSN": dsn, HangDetection.environmentVariable: "1"], directory: directory)
            let before = events("error").count
            let count = 2 * ProcessInfo.processInfo.activeProcessorCount
            let connections = try (0 ..< count).map { _ in try HTTPConnection(port: server.port, path: "/block?seconds=\(seconds)") }
            let deadline = Date().addingTimeInterval(60)
            while events("error").count == before && Date() < deadline { usleep(100_000) }
            XCTAssertEqual(events("error").count, before + 1, "the hang did not reach Sentry while the server lived\n\(server.stderr)")
            if thenWait {
                for connection in connections { _ = connection.readToEnd(timeout: 30) }
                XCTAssertTrue(get(server.port, "/ok").hasSuffix("ok\n"), "the server does not answer again")
                usleep(1_000_000)   // a few of the watcher's ticks: it sees the pool move again
            }
            kill(-server.pid, SIGKILL)
            XCTAssertEqual(server.wait(timeout: 30).ending, .signaled(SIGKILL))
        }

        try hang(seconds: 60, thenWait: false)
        XCTAssertEqual(events("fatal").count, 0)
        try deliver()
        XCTAssertEqual(events("fatal").count, 1, "killed while hung: one fatal hang")
        try deliver()
        XCTAssertEqual(events("fatal").count, 1, "sent once")

        try hang(seconds: 3, thenWait: true)
        try deliver()
        XCTAssertEqual(events("fatal").count, 1, "a hang that ended is no fatal hang")

        let files = try sentry.allRequests.enumerated().map { index, request in
            let file = directory + "/received-\(index).envelope"
            try Data(request.bodyBytes).write(to: URL(fileURLWithPath: file))
            return file
        }
        let fatal = try XCTUnwrap(events("fatal").first)
        let fatalFile = try XCTUnwrap(zip(sentry.allRequests, files).first { $0.0.body == fatal.body }?.1)
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try Oracles.run("sentry_check.py", [fatalFile]).utf8)) as? [String: Any])
        XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(summary["errors"] ?? "")")
        let normalized = try XCTUnwrap(summary["normalized"] as? [String: Any])
        XCTAssertEqual(normalized["level"] as? String, "fatal")
        let exception = try XCTUnwrap(((normalized["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
        XCTAssertEqual((exception["mechanism"] as? [String: Any])?["handled"] as? Bool, false)
        XCTAssertEqual((exception["mechanism"] as? [String: Any])?["type"] as? String, "AppHang")
        let output = try Oracles.run("sentry_sessions.py", files)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        XCTAssertEqual((json["errors"] as? [Any])?.count, 0, "\(json["errors"] ?? "")")
        let payloads = (json["sessions"] as? [[String: Any]] ?? []).compactMap { $0["payload"] as? [String: Any] }
        let servers = payloads.filter { ($0["attrs"] as? [String: Any])?["release"] as? String == "crashing-server@1.0" }
        XCTAssertEqual(servers.map { $0["status"] as? String }, ["abnormal", "abnormal"], "\(payloads)")
    }

    /// The server in a 256 MiB memory cgroup, four clients on a route that keeps what it
    /// allocates: the memory watch writes a memory record near the limit (usage, limit, growth,
    /// the `/leak` requests in flight) before the OOM killer's SIGKILL; the next launch sends one
    /// fatal event, killed for memory, with those requests, and none at the launch after. The same
    /// server under a steady load of the same clients on `/ok` writes no memory record.
    func testAServerThatLeaksIsKilledForMemoryWithAMemoryRecordFirstAndOneUnderSteadyLoadHasNone() throws {
        let cgroup = try TestMemoryCgroup("leak", limitBytes: 256 << 20)
        defer { cgroup.remove() }
        let sentry = try TestHTTPServer()
        let dsn = "http://key@127.0.0.1:\(sentry.port)/1"
        // Threshold 1 s: the watcher reads the usage every 250 ms; the clients grow it by about 40 MiB a second.
        let environment = ["SENTRY_DSN": dsn, HangDetection.environmentVariable: "1"]

        // Steady load first: no memory record.
        let steady = try ExampleServer(try executable(), name: "memory-steady", arguments: ["--report"], environment: environment,
                                       launcher: cgroup.launcher)
        let steadyEnd = Date().addingTimeInterval(30), steadyPort = steady.port
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            while Date() < steadyEnd { _ = Self.fetch(steadyPort, "/ok", timeout: 5) }
        }
        XCTAssertFalse(steady.stderr.contains("crashcapture: {\"memory\""), steady.stderr)
        XCTAssertFalse(steady.stderr.contains("memory watch:"), "the cgroup's limit is seen: \(steady.stderr)")
        kill(steady.pid, SIGTERM)
        XCTAssertEqual(steady.wait(timeout: 60).ending, .exited(0), steady.stderr)
        XCTAssertEqual(steady.recordFiles, [])

        let before = try XCTUnwrap(cgroup.oomKills())
        // The container's termination message file, as the kubelet makes it.
        let termination = try Scratch.directory("memory-leak-termination") + "/termination-log"
        XCTAssertTrue(FileManager.default.createFile(atPath: termination, contents: Data()))
        let server = try ExampleServer(try executable(), name: "memory-leak", arguments: ["--report"],
                                       environment: environment.merging(["CRASHCAPTURE_TERMINATION_LOG": termination]) { $1 },
                                       launcher: cgroup.launcher)
        let pid = server.pid, port = server.port
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let deadline = Date().addingTimeInterval(120)
            // Until the server is gone (a zombie still answers kill 0: its connections fail instead).
            while Date() < deadline, kill(pid, 0) == 0, !Self.fetch(port, "/leak?mb=8&ms=100", timeout: 10).isEmpty {}
        }
        XCTAssertEqual(server.wait(timeout: 120).ending, .signaled(SIGKILL), server.stderr)
        XCTAssertGreaterThan(try XCTUnwrap(cgroup.oomKills()), before, "the OOM killer killed it")
        // One near the limit, and one more for each further 5 % of it.
        XCTAssertGreaterThanOrEqual(server.waitForStderr("crashcapture: {\"memory\"", count: 1, timeout: 1), 1,
                                    "a memory record before the kill\n\(server.stderr)")

        // What `kubectl describe pod` shows beside OOMKilled.
        let message = try String(contentsOfFile: termination, encoding: .utf8)
        // (Memory first: near the limit the server may stall too, and a hang's line comes after it.)
        XCTAssertTrue(message.hasPrefix("memory: ") && message.contains(" of 256 MiB (") && message.contains("; record "), message)

        func fatal() -> [TestHTTPServer.Request] {
            sentry.allRequests.filter { $0.body.contains("\"out_of_memory\"") && $0.body.contains("\"level\":\"fatal\"") }
        }
        let deliver = { () throws -> Void in
            let next = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", server.directory + "/records", "--sentry-dsn", dsn],
                                            environment: ["SENTRY_DSN": dsn, "SWIFT_BACKTRACE": "enable=no"], timeout: 120)
            XCTAssertEqual(next.ending, .exited(0))
        }
        try deliver()
        XCTAssertEqual(fatal().count, 1, "killed for memory: one fatal event")
        let body = try XCTUnwrap(fatal().first).body
        XCTAssertTrue(body.contains("Killed for memory"), body.prefix(2000).description)
        XCTAssertTrue(body.contains("/leak"), "the leaking route's requests in flight")
        try deliver()
        XCTAssertEqual(fatal().count, 1, "sent once")
    }

    /// The Vapor example: a synchronous route handler blocking its event loop for 3 s, stall
    /// threshold 1 s: a hang record of the event loop (CrashContextMiddleware watches the
    /// application's loops), about that loop's thread, which stands in the route's sleep; the
    /// server answers again afterwards.
    func testVaporBlockedEventLoopIsNamedWithItsThread() throws {
        guard let executable = ProcessInfo.processInfo.environment["CRASHING_VAPOR_SERVER"], !executable.isEmpty else {
            throw XCTSkip("set CRASHING_VAPOR_SERVER to a build of the Vapor example server (scripts/test.sh does)")
        }
        try checkBlockedEventLoop(executable, name: "vapor")
    }

    /// The Hummingbird example: a task submitted to one of its event loops sleeps 3 s
    /// (CrashContextMiddleware watches `MultiThreadedEventLoopGroup.singleton`, Hummingbird's).
    func testHummingbirdBlockedEventLoopIsNamedWithItsThread() throws {
        try checkBlockedEventLoop(try executable(), name: "hummingbird")
    }

    func checkBlockedEventLoop(_ executable: String, name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let server = try ExampleServer(executable, name: "hang-\(name)-loop", environment: [HangDetection.environmentVariable: "1"])
        XCTAssertTrue(get(server.port, "/ok").hasSuffix("ok\n"), "the first request starts the watching", file: file, line: line)
        Thread.sleep(forTimeInterval: 0.5)
        let blocking = try HTTPConnection(port: server.port, path: "/block-loop?seconds=3")
        XCTAssertEqual(server.waitForStderr("crashcapture: {\"hang\":\"event loop", count: 1, timeout: 20), 1, server.stderr, file: file, line: line)
        XCTAssertFalse(blocking.readToEnd(timeout: 30).isEmpty, file: file, line: line)
        Thread.sleep(forTimeInterval: 3)
        XCTAssertTrue(get(server.port, "/ok").hasSuffix("ok\n"), "the server does not answer again", file: file, line: line)
        kill(server.pid, SIGTERM)
        _ = server.wait(timeout: 30)
        let records = try server.recordFiles.map { try CrashRecordReader.read(path: $0) }.filter { $0.event?.detector == .eventLoop }
        XCTAssertEqual(records.count, 1, "\(server.recordFiles)", file: file, line: line)
        let record = try XCTUnwrap(records.first, file: file, line: line)
        let tid = try XCTUnwrap(record.event?.blockedThread, "the loop's thread is not named", file: file, line: line)
        let inspection = Inspection(path: "", record: record, symbolicator: Self.symbolicator)
        XCTAssertEqual(inspection.crashed?.thread.tid, tid, file: file, line: line)
        let names = (inspection.crashed?.frames ?? []).flatMap(\.symbols).compactMap(\.symbol)
        XCTAssertTrue(names.contains { $0.contains("usleep") || $0.contains("nanosleep") }, "the loop's thread: \(names.prefix(8))", file: file, line: line)
        XCTAssertTrue(names.contains { $0.contains("SelectableEventLoop") }, "not an event loop's thread: \(names.suffix(8))", file: file, line: line)
    }

    /// A request that reads behind two plain threads deadlocked on an NIOLock and an NSLock (each
    /// holds one, waits for the other): no heartbeat is late, no request is past its threshold and
    /// nobody asks for a snapshot, yet one hang record of the deadlock is written in both example
    /// servers — the two threads by name, each waiting on a mutex the other holds — and the
    /// request's thread waits on a lock one of them holds.
    func testADeadlockBehindARequestIsFoundWithoutASnapshotInBothServers() throws {
        var servers = [("hummingbird", try executable())]
        if let vapor = ProcessInfo.processInfo.environment["CRASHING_VAPOR_SERVER"], !vapor.isEmpty { servers.append(("vapor", vapor)) }
        for (name, executable) in servers {
            let server = try ExampleServer(executable, name: "deadlock-\(name)", environment: [HangDetection.environmentVariable: "5"])
            XCTAssertTrue(get(server.port, "/ok").hasSuffix("ok\n"), name)
            let stuck = try HTTPConnection(port: server.port, path: "/deadlock")
            XCTAssertEqual(server.waitForStderr("crashcapture: {\"hang\":\"deadlock\"", count: 1, timeout: 20), 1, server.stderr)
            Thread.sleep(forTimeInterval: 3)   // no second record of the same deadlock
            XCTAssertTrue(get(server.port, "/ok").hasSuffix("ok\n"), "\(name): the server answers beside the deadlock")
            kill(server.pid, SIGKILL)
            _ = server.wait(timeout: 30)
            _ = stuck
            let records = try server.recordFiles.map { ($0, try CrashRecordReader.read(path: $0)) }.filter { $0.1.event?.detector == .deadlock }
            XCTAssertEqual(records.count, 1, "\(name): \(server.recordFiles)")
            let text = try Tools.output(BuiltProducts.inspect, ["show", try XCTUnwrap(records.first?.0), "--json"])
            let show = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            let cycle = try XCTUnwrap((show["event"] as? [String: Any])?["deadlock"] as? [Int], name)
            let threads = show["threads"] as? [[String: Any]] ?? []
            func entry(_ tid: Int) -> [String: Any]? { threads.first { $0["tid"] as? Int == tid } }
            XCTAssertEqual(Set(cycle.compactMap { entry($0)?["name"] as? String }), ["cache-refresh", "metrics-flush"], name)
            for (position, tid) in cycle.enumerated() {
                let waits = entry(tid)?["waitsOn"] as? [String: Any]
                XCTAssertEqual(waits?["kind"] as? String, "mutex", name)
                XCTAssertEqual(waits?["holderTid"] as? Int, cycle[(position + 1) % cycle.count], name)
            }
            let request = threads.filter { thread in
                (thread["frames"] as? [[String: Any]] ?? []).contains { ($0["symbol"] as? String ?? "").contains("readAccountsBehindADeadlock") }
            }
            XCTAssertEqual(request.count, 1, "\(name): the request's thread")
            let holder = (request.first?["waitsOn"] as? [String: Any])?["holderTid"] as? Int
            XCTAssertEqual(holder.flatMap { entry($0)?["name"] as? String }, "cache-refresh", "\(name): the request waits on the accounts lock")
        }
    }

    /// Three requests awaiting a continuation nobody resumes: `crash-inspect snapshot <pid>` lists
    /// each with where it waits, down to the function that awaits and the route handler that
    /// called it; the server answers meanwhile and afterwards.
    func testSnapshotShowsEachRequestAwaitingForeverDownToTheAwaitingFunction() throws {
        let server = try ExampleServer(try executable(), name: "hang-wait", environment: [HangDetection.environmentVariable: "5"])
        let waiting = try (0 ..< 3).map { _ in try HTTPConnection(port: server.port, path: "/wait-forever") }
        XCTAssertEqual(server.waitForStderr("wait-forever request started", count: 3, timeout: 20), 3, server.stderr)
        let out = server.directory + "/snapshot.json"
        let asked = try ChildProcess.run(BuiltProducts.inspect, ["snapshot", String(server.pid), "--dir", server.directory + "/records", "--json"],
                                         stdout: out, timeout: 30)
        XCTAssertEqual(asked.ending, .exited(0))
        let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: XCTUnwrap(FileManager.default.contents(atPath: out))) as? [String: Any])
        XCTAssertEqual(shown["kind"] as? String, "snapshot")
        let requests = try XCTUnwrap((shown["requests"] as? [String: Any])?["others"] as? [[String: Any]])
        let forever = requests.filter { $0["route"] as? String == "/wait-forever" }
        XCTAssertEqual(forever.count, 3, "\(requests.map { $0["route"] ?? "?" })")
        for request in forever {
            let frames = (request["waiting"] as? [[String: Any]] ?? []).compactMap { $0["symbol"] as? String }
            let awaiting = frames.firstIndex { $0.contains("awaitSomethingThatNeverComes") }
            let route = frames.firstIndex { $0.contains("waitForeverRoute") }
            XCTAssertNotNil(awaiting, "\(frames.prefix(6))")
            XCTAssertNotNil(route, "\(frames.prefix(6))")
            if let awaiting, let route { XCTAssertLessThan(awaiting, route, "the awaiting function comes before its caller") }
            // The chain's frames are mostly Hummingbird's and NIO's: marked, and the app's are its own.
            let marks = (request["waiting"] as? [[String: Any]] ?? []).map { ($0["symbol"] as? String ?? "", $0["inApp"] as? Bool) }
            for index in [awaiting, route].compactMap({ $0 }) where index < marks.count { XCTAssertEqual(marks[index].1, true, marks[index].0) }
            XCTAssertGreaterThan(marks.filter { $0.1 == false }.count, 10, "\(marks.prefix(20))")
        }
        // The text view: each stuck request's chain is the app's own frames, the rest folded into one line.
        let snapshot = try XCTUnwrap(shown["file"] as? String)
        let text = try ChildProcess.run(BuiltProducts.inspect, ["show", snapshot], stdout: server.directory + "/snapshot.txt", timeout: 30)
        XCTAssertEqual(text.ending, .exited(0))
        let lines = String(decoding: FileManager.default.contents(atPath: server.directory + "/snapshot.txt") ?? Data(), as: UTF8.self)
            .split(separator: "\n").map(String.init)
        let chain = try XCTUnwrap(lines.firstIndex { $0.contains("resumes in") })
        let shownChain = lines[(chain + 1)...].prefix { $0.hasPrefix("        ") }
        XCTAssertLessThanOrEqual(shownChain.count, 6, "\(shownChain)")
        XCTAssertTrue(shownChain.contains { $0.contains("awaitSomethingThatNeverComes()") }, "\(shownChain)")
        XCTAssertTrue(shownChain.contains { $0.contains("frames in ") && $0.contains("Hummingbird") }, "\(shownChain)")
        XCTAssertTrue(get(server.port, "/ok").hasSuffix("ok\n"))
        _ = waiting
        kill(server.pid, SIGKILL)
        _ = server.wait(timeout: 30)
    }

    /// SIGTERM while a request awaits forever: the graceful shutdown waits for it and never ends;
    /// 2 s later (`--shutdown-threshold 2`) a hang record of the shutdown lists that request,
    /// written before the SIGKILL that ends the process. The server is set up as the README shows
    /// (capture among the application's services, which ServiceLifecycle shuts down only after the
    /// server): the middleware starts the shutdown clock from inside the waiting request.
    func testShutdownThatNeverEndsIsRecordedBeforeSIGKILL() throws {
        try checkShutdownThatNeverEnds(try executable(), name: "hang-shutdown")
    }

    /// The same in the Vapor example, SIGTERM taken as Vapor's serve command takes it
    /// (`application.running` stopped, then the server's shutdown waits for the request).
    func testVaporShutdownThatNeverEndsIsRecordedBeforeSIGKILL() throws {
        guard let executable = ProcessInfo.processInfo.environment["CRASHING_VAPOR_SERVER"], !executable.isEmpty else {
            throw XCTSkip("set CRASHING_VAPOR_SERVER to a build of the Vapor example server (scripts/test.sh does)")
        }
        try checkShutdownThatNeverEnds(executable, name: "hang-shutdown-vapor")
    }

    func checkShutdownThatNeverEnds(_ executable: String, name: String) throws {
        let server = try ExampleServer(executable, name: name, arguments: ["--shutdown-threshold", "2"])
        let waiting = try HTTPConnection(port: server.port, path: "/wait-forever")
        XCTAssertEqual(server.waitForStderr("wait-forever request started", count: 1, timeout: 20), 1, server.stderr)
        kill(server.pid, SIGTERM)
        XCTAssertEqual(server.waitForStderr("crashcapture: {\"hang\":\"graceful shutdown\"", count: 1, timeout: 20), 1, server.stderr)
        kill(server.pid, SIGKILL)
        XCTAssertEqual(server.wait(timeout: 30).ending, .signaled(SIGKILL))
        let record = try CrashRecordReader.read(path: try XCTUnwrap(server.recordFiles.first))
        XCTAssertEqual(record.event?.detector, .shutdown)
        XCTAssertGreaterThanOrEqual(record.event?.observedMilliseconds ?? 0, 2000)
        XCTAssertTrue(record.requests?.others.contains { $0.route == "/wait-forever" } == true)
        _ = waiting

        // With the reporter: the shutdown's hang goes to Sentry while the process lives, and the
        // SIGKILL that ends the grace period makes it a fatal hang at the next launch.
        let sentry = try TestHTTPServer()
        let dsn = "http://key@127.0.0.1:\(sentry.port)/1"
        let reported = try ExampleServer(executable, name: name + "-report", arguments: ["--shutdown-threshold", "2", "--report"],
                                         environment: ["SENTRY_DSN": dsn])
        let stuck = try HTTPConnection(port: reported.port, path: "/wait-forever")
        XCTAssertEqual(reported.waitForStderr("wait-forever request started", count: 1, timeout: 20), 1, reported.stderr)
        kill(reported.pid, SIGTERM)
        XCTAssertEqual(reported.waitForStderr("crashcapture: {\"hang\":\"graceful shutdown\"", count: 1, timeout: 20), 1, reported.stderr)
        func shutdownHangs(_ level: String) -> Int {
            sentry.allRequests.filter { $0.body.contains("graceful shutdown") && $0.body.contains("\"level\":\"\(level)\"") }.count
        }
        let deadline = Date().addingTimeInterval(30)
        while shutdownHangs("error") == 0 && Date() < deadline { usleep(100_000) }
        XCTAssertEqual(shutdownHangs("error"), 1, "the shutdown's hang reached Sentry while the process lived")
        kill(-reported.pid, SIGKILL)
        XCTAssertEqual(reported.wait(timeout: 30).ending, .signaled(SIGKILL))
        let next = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", reported.directory + "/records", "--sentry-dsn", dsn],
                                        environment: ["SENTRY_DSN": dsn, "SWIFT_BACKTRACE": "enable=no"], timeout: 120)
        XCTAssertEqual(next.ending, .exited(0))
        XCTAssertEqual(shutdownHangs("fatal"), 1, "killed in a shutdown that hung: a fatal hang that says so")
        _ = stuck
    }

    /// Snapshots of a healthy server under load (four clients in a loop): every request completes
    /// and no request fails; the threads stood still for milliseconds at most per snapshot.
    func testSnapshotsOfAServerUnderLoadFailNoRequest() throws {
        let server = try ExampleServer(try executable(), name: "hang-load", environment: [HangDetection.environmentVariable: "5"])
        let deadline = Date().addingTimeInterval(6)
        let results = Mutex<(ok: Int, failed: Int)>((0, 0))
        let port = server.port
        let clients = (0 ..< 4).map { _ in
            Thread {
                while Date() < deadline {
                    let answer = (try? HTTPConnection(port: port, path: "/ok"))?.readToEnd(timeout: 10) ?? ""
                    results.withLock { answer.hasSuffix("ok\n") ? ($0.ok += 1) : ($0.failed += 1) }
                }
            }
        }
        clients.forEach { $0.start() }
        var snapshots = 0
        while Date() < deadline.addingTimeInterval(-1) {
            let asked = try ChildProcess.run(BuiltProducts.inspect, ["snapshot", String(server.pid), "--dir", server.directory + "/records"],
                                             timeout: 30)
            XCTAssertEqual(asked.ending, .exited(0))
            snapshots += 1
        }
        Thread.sleep(forTimeInterval: max(0, deadline.timeIntervalSinceNow) + 1)
        kill(server.pid, SIGTERM)
        XCTAssertEqual(server.wait(timeout: 30).ending, .exited(0), server.stderr)
        let counts = results.withLock { $0 }
        XCTAssertEqual(counts.failed, 0, "requests failed during snapshots")
        XCTAssertGreaterThan(counts.ok, 100)
        XCTAssertGreaterThanOrEqual(snapshots, 2)
        for path in server.recordFiles {
            let record = try CrashRecordReader.read(path: path)
            XCTAssertEqual(record.kind, .snapshot)
            XCTAssertLessThan(record.event?.stoppedMicroseconds ?? .max, 100_000, "threads stood still too long")
        }
    }
}

import Synchronization
