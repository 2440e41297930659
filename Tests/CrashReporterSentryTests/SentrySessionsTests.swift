// SentrySessionsTests.swift — release health as a Sentry SDK sends it: one session per run of the
// app, from how the reporter's ledger says each run ended, to a loopback Sentry; checked with
// Sentry's own code (sentry_sdk's envelope parser and Session model, Relay's release parser and
// normalizer) on real `crash-harness deliver` processes that shut down, exit, are SIGKILLed and crash.
import ProcessSpawning
@testable import CrashReporter
import CrashRecordFormat
import CrashSentry
import HostFacts
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
@testable import CrashReporterSentry
#endif

final class SentrySessionsTests: XCTestCase {
    /// What every child runs with: Sentry's variables as a deployment sets them.
    let environment = ["SWIFT_BACKTRACE": "enable=no", "SENTRY_ENVIRONMENT": "staging", "SENTRY_DIST": "7"]

    func deliver(_ records: String, _ arguments: [String], expect ending: ChildProcess.Ending = .exited(0)) throws {
        let child = try ChildProcess.run(BuiltProducts.harness, ["deliver", "--records", records] + arguments,
                                         environment: environment, timeout: 120)
        XCTAssertEqual(child.ending, ending, arguments.joined(separator: " "))
    }

    /// Each request the loopback Sentry received, as a file, and what the sessions oracle makes of them.
    func sessions(_ server: TestHTTPServer, where keep: (TestHTTPServer.Request) -> Bool = { _ in true }) throws
        -> (files: [String], sessions: [[String: Any]]) {
        let directory = try Scratch.directory("sessions-received")
        var files: [String] = []
        for (index, request) in server.allRequests.filter(keep).enumerated() {
            let file = directory + "/\(index).envelope"
            try Data(request.bodyBytes).write(to: URL(fileURLWithPath: file))
            files.append(file)
        }
        guard !files.isEmpty else { return ([], []) }
        let output = try Oracles.run("sentry_sessions.py", files)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        XCTAssertEqual((json["errors"] as? [Any])?.count, 0, "\(json["errors"] ?? "")")
        return (files, json["sessions"] as? [[String: Any]] ?? [])
    }

    /// Shut down, exited through the exit hook, SIGKILLed, crashed: each run's session arrives
    /// once, with its status; the crashed one in its crash's envelope; every one with the run's
    /// release and environment and this installation's id.
    func testEachRunIsOneSessionWithItsStatusOnce() throws {
        let directory = try Scratch.directory("sessions-every-way")
        let records = directory + "/records"
        let server = try TestHTTPServer()
        let dsn = ["--sentry-dsn", "http://key@127.0.0.1:\(server.port)/1"]
        try deliver(records, dsn + ["--run-id", "shut-down"])
        try deliver(records, dsn + ["--run-id", "exited", "--end", "exit"])
        let ready = directory + "/ready"
        let held = try ChildProcess.start(BuiltProducts.harness, ["deliver", "--records", records, "--run-id", "killed", "--end", "hold",
                                                                  "--ready-file", ready] + dsn, environment: environment)
        XCTAssertTrue(Harness.waitForFile(ready))
        // Killed once it has sent what it learned (the `exited` run's session: written before the
        // ready file, deleted once Sentry has it). A sender killed between Sentry's answer and
        // the deletion sends that session again at the next launch (at least once, documented).
        let sent = Date().addingTimeInterval(30)
        func waiting() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: records + "/sessions")) ?? []).filter { $0.hasSuffix(".envelope") }
        }
        while !waiting().isEmpty && Date() < sent { usleep(5000) }
        XCTAssertEqual(waiting(), [], "the held run sent the sessions it learned")
        Glibc.kill(held.pid, SIGKILL)
        XCTAssertEqual(held.wait(timeout: 30).ending, .signaled(SIGKILL))
        try deliver(records, dsn + ["--run-id", "crashed", "--crash"], expect: .signaled(SIGSEGV))
        try deliver(records, dsn + ["--run-id", "last"])

        let (_, received) = try sessions(server)
        var statuses: [String: [String]] = [:]
        for session in received {
            let payload = try XCTUnwrap(session["payload"] as? [String: Any])
            statuses[payload["sid"] as? String ?? "", default: []].append(payload["status"] as? String ?? "")
            let attrs = payload["attrs"] as? [String: Any] ?? [:]
            XCTAssertEqual(attrs["release"] as? String, "crash-harness@\(CrashCaptureLibrary.version)")
            XCTAssertEqual(attrs["environment"] as? String, "staging")
            XCTAssertEqual(payload["init"] as? Bool, true)
            XCTAssertEqual(payload["did"] as? String, try String(contentsOfFile: records + "/installation-id", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines), "this installation's id")
            if payload["status"] as? String == "crashed" {
                XCTAssertEqual(session["with_event"] as? Bool, true, "a crashed session goes with its crash")
                XCTAssertEqual(payload["errors"] as? Int, 1)
            }
            // Another run's session may ride in a crash's envelope (SessionBatchingTests).
        }
        let sid = { (run: String) in SentrySession.sessionID(run) }
        XCTAssertEqual(statuses, [sid("shut-down"): ["exited"], sid("exited"): ["exited"], sid("killed"): ["abnormal"],
                                  sid("crashed"): ["crashed"], sid("next-never-told"): []].filter { !$0.value.isEmpty })
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: records + "/sessions").filter { $0.hasSuffix(".envelope") }, [],
                       "every session sent and its file deleted")
    }

    /// The crash's event carries the run's release, environment, dist and host, and Relay's
    /// normalizer accepts it.
    func testTheCrashEventCarriesEnvironmentReleaseDistAndHost() throws {
        let directory = try Scratch.directory("sessions-event")
        let records = directory + "/records"
        let server = try TestHTTPServer()
        let dsn = ["--sentry-dsn", "http://key@127.0.0.1:\(server.port)/1"]
        try deliver(records, dsn + ["--run-id", "crashed", "--crash"], expect: .signaled(SIGSEGV))
        try deliver(records, dsn)
        let (_, event, body) = try crashEvent(server, in: directory)
        XCTAssertEqual(event["environment"] as? String, "staging")
        XCTAssertEqual(event["release"] as? String, "crash-harness@\(CrashCaptureLibrary.version)")
        XCTAssertEqual(event["dist"] as? String, "7")
        XCTAssertTrue(body.contains("\"server_name\":\"\(HostName.current() ?? "?")\""), "the event as sent names the host")
        // The runtime, and the machine's memory (where /proc/meminfo says it).
        let contexts = try XCTUnwrap(event["contexts"] as? [String: Any])
        XCTAssertEqual((contexts["runtime"] as? [String: Any])?["name"] as? String, "swift")
        XCTAssertEqual((contexts["runtime"] as? [String: Any])?["version"] as? String, SentryRunFacts.swiftVersion)
        if let memory = HostContext.current().memoryBytes {
            XCTAssertEqual((contexts["device"] as? [String: Any])?["memory_size"] as? Int64, memory)
        }
        // Relay's normalization files the host as the `server_name` tag.
        let tags = (event["tags"] as? [[Any]] ?? []).compactMap { pair in pair.count == 2 ? (pair[0] as? String, pair[1] as? String) : nil }
        XCTAssertTrue(tags.contains { $0.0 == "server_name" && $0.1 == HostName.current() }, "\(event["tags"] ?? "")")
    }

    /// A server up for a week that crashes: its crash goes with one `crashed` session, its start
    /// moved into Relay's window and its duration the week (the run marker's start made a week
    /// old, as a week of running would have left it).
    func testAWeekLongRunThatCrashesIsOneCrashedSessionWithItsCrash() throws {
        let directory = try Scratch.directory("sessions-week-crash")
        let records = directory + "/records"
        try deliver(records, ["--run-id", "weekcrash", "--crash"], expect: .signaled(SIGSEGV))
        let marker = records + "/runs/weekcrash.run"
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let week: Int64 = 7 * 86_400_000
        var text = try String(contentsOfFile: marker, encoding: .utf8)
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("start_wall_ms=") })
        let original = try XCTUnwrap(Int64(line.dropFirst("start_wall_ms=".count)))
        text = text.replacingOccurrences(of: String(line), with: "start_wall_ms=\(original - week)")
        try text.write(toFile: marker, atomically: true, encoding: .utf8)

        let server = try TestHTTPServer()
        try deliver(records, ["--sentry-dsn", "http://key@127.0.0.1:\(server.port)/1"])
        let (_, received) = try sessions(server)
        let crashed = received.filter { ($0["payload"] as? [String: Any])?["status"] as? String == "crashed" }
        XCTAssertEqual(crashed.count, 1, "\(received)")
        XCTAssertEqual(crashed.first?["with_event"] as? Bool, true, "the session goes with its crash")
        let payload = try XCTUnwrap(crashed.first?["payload"] as? [String: Any])
        XCTAssertEqual(payload["duration"] as? Double ?? 0, Double(week) / 1000, accuracy: 120, "the whole week")
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let started = try XCTUnwrap((payload["started"] as? String).flatMap { formatter.date(from: $0) ?? ISO8601DateFormatter().date(from: $0) })
        XCTAssertGreaterThanOrEqual(Int64(started.timeIntervalSince1970 * 1000), now - 4 * 86_400_000 - 60_000, "inside Relay's window")
    }

    /// Relay drops a session whose start or end is more than 5 days old when it arrives. A run
    /// that ended before the 4-day window is counted, not sent; a run that began a week ago and
    /// ended now is one session, its start moved into the window and its duration the whole run's.
    func testARunThatEndedBeforeTheWindowIsCountedAndAWeekLongRunIsOneSession() throws {
        let directory = try Scratch.directory("sessions-old")
        let server = try TestHTTPServer()
        let sink = SentrySink(dsn: try XCTUnwrap(SentryDSN("http://key@127.0.0.1:\(server.port)/1")), recordDirectory: directory,
                              sessionBatching: .immediate)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let day: Int64 = 86_400_000
        func run(_ id: String, startedDaysAgo days: Int64, end: RunEnd) -> EndedRun {
            EndedRun(start: RunStart(runID: id, process: .current, startWallMilliseconds: now - days * day, startMonotonicNanoseconds: 0,
                                     appName: "app", appVersion: "1", oomKills: nil), end: end)
        }
        let weekOfNanoseconds = 7 * day * 1_000_000
        XCTAssertTrue(sink.takeRuns([
            run("ended-long-ago", startedDaysAgo: 6, end: .exited(wallMilliseconds: now - 5 * day, durationNanoseconds: day * 1_000_000)),
            run("week-exited", startedDaysAgo: 7, end: .exited(wallMilliseconds: now - 3_600_000, durationNanoseconds: weekOfNanoseconds)),
            run("week-killed", startedDaysAgo: 7, end: .killed(oom: false)),
            run("recent", startedDaysAgo: 1, end: .killed(oom: false)),
        ]))
        XCTAssertTrue(sink.shutdown(deadline: .now.advanced(by: .seconds(30))))
        XCTAssertEqual(sink.currentReport.sessionsTooOld, ["ended-long-ago"])
        XCTAssertEqual(Set(sink.currentReport.sessionsSent), ["week-exited", "week-killed", "recent"])
        let (_, received) = try sessions(server)
        let payloads = received.compactMap { $0["payload"] as? [String: Any] }
        XCTAssertEqual(payloads.count, 3, "each run once")
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        func ms(_ value: Any?) -> Int64? {
            (value as? String).flatMap { formatter.date(from: $0) ?? ISO8601DateFormatter().date(from: $0) }
                .map { Int64($0.timeIntervalSince1970 * 1000) }
        }
        for payload in payloads {
            // Inside Relay's 5 days when it arrived, with a day to spare.
            let started = try XCTUnwrap(ms(payload["started"]), "\(payload)")
            XCTAssertGreaterThanOrEqual(started, now - 4 * day - 60_000, "\(payload)")
            XCTAssertGreaterThanOrEqual(try XCTUnwrap(ms(payload["timestamp"])), started)
        }
        let exited = try XCTUnwrap(payloads.first { $0["status"] as? String == "exited" })
        XCTAssertEqual(exited["duration"] as? Double ?? 0, 7 * 86_400, accuracy: 1, "the whole run's duration")
        XCTAssertEqual(payloads.filter { $0["status"] as? String == "abnormal" }.count, 2)
    }
}

extension SentrySessionsTests {
    /// Sessions left by a launch that ended before Sentry had them are sent by the next; the
    /// directory is untrusted like the records': a symbolic link is never followed (what it
    /// points at never leaves), an oversized file and one that is no session envelope of ours
    /// are deleted unsent.
    func testLeftoverSessionsAreSentAndHostileFilesNeverLeave() throws {
        let directory = try Scratch.directory("sessions-leftover")
        let sessions = directory + "/sessions"
        try FileManager.default.createDirectory(atPath: sessions, withIntermediateDirectories: true)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let facts = SentryRunFacts(release: "app@1", environment: "production", dist: nil, serverName: nil)
        let left = try XCTUnwrap(SentrySession(runID: "left", installation: nil, startedMilliseconds: now - 5000, endedMilliseconds: now,
                                               durationSeconds: 5, status: .exited, facts: facts))
        try Data(SentryEnvelope.sessions([left], sentAt: nil)).write(to: URL(fileURLWithPath: sessions + "/left.envelope"))
        let secret = directory + "/secret"
        try Data("SECRET-\(getpid())".utf8).write(to: URL(fileURLWithPath: secret))
        try FileManager.default.createSymbolicLink(atPath: sessions + "/link.envelope", withDestinationPath: secret)
        try Data(repeating: 0x41, count: 1 << 20).write(to: URL(fileURLWithPath: sessions + "/huge.envelope"))
        try Data("not an envelope\n".utf8).write(to: URL(fileURLWithPath: sessions + "/garbage.envelope"))
        let server = try TestHTTPServer { request in request.body.contains("not an envelope") ? .status(400) : .status(200) }
        let sink = SentrySink(dsn: try XCTUnwrap(SentryDSN("http://key@127.0.0.1:\(server.port)/1")), recordDirectory: directory,
                              sessionBatching: .immediate)
        XCTAssertNil(sink.prepareLaunch())
        XCTAssertTrue(sink.shutdown(deadline: .now.advanced(by: .seconds(30))))
        let bodies = server.allRequests.map(\.body)
        XCTAssertFalse(bodies.contains { $0.contains("SECRET-") }, "a link's target left the machine")
        XCTAssertFalse(bodies.contains { $0.contains("AAAA") }, "an oversized file was sent")
        XCTAssertEqual(sink.currentReport.sessionsSent, ["left"])
        XCTAssertEqual(Set(sink.currentReport.quarantined.keys), ["sessions/huge", "sessions/garbage"])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: sessions).sorted(), ["link.envelope"],
                       "sent and refused files deleted; the link left alone")
        XCTAssertEqual(try String(contentsOfFile: secret, encoding: .utf8), "SECRET-\(getpid())", "the link's target untouched")
        XCTAssertEqual(server.allRequests.count, 1, "the session alone: the garbage is no session envelope and never left")
        let (_, received) = try self.sessions(server) { !$0.body.contains("not an envelope") }
        XCTAssertEqual(received.count, 1)
    }
}

extension SentrySessionsTests {
    /// Sentry limits sessions alone (`X-Sentry-Rate-Limits: 60:session`): crashes still go, without
    /// their session, and the next envelope's client report counts the session held back
    /// (`ratelimit_backoff`); a run's own session waits in its file; the limit is kept for the
    /// next launch. Every envelope passes Sentry's parser and Relay's normalizer.
    func testASessionRateLimitHoldsBackSessionsAloneAndTheClientReportSaysSo() throws {
        let directory = try Scratch.directory("sessions-limited")
        let records = directory + "/records"
        // Two crashed runs whose records stay (their Sentry is down).
        let down = ["--sentry-dsn", "http://key@127.0.0.1:9/1"]
        try deliver(records, down + ["--run-id", "one", "--crash"], expect: .signaled(SIGSEGV))
        usleep(2000)
        try deliver(records, down + ["--run-id", "two", "--crash"], expect: .signaled(SIGSEGV))
        let names = try RecordFileName.names(in: records)
        XCTAssertEqual(names.count, 2)

        let server = try TestHTTPServer { request in
            request.index == 0 ? .status(200, headers: ["X-Sentry-Rate-Limits": "60:session:organization"]) : .status(200)
        }
        let sink = SentrySink(dsn: try XCTUnwrap(SentryDSN("http://key@127.0.0.1:\(server.port)/1")),
                              facts: SentryRunFacts(release: "app@1", environment: "production", dist: nil, serverName: nil),
                              recordDirectory: records, sessionBatching: .immediate)
        _ = CrashReporting.deliverRecords(in: records, sinks: [sink])
        // The killed run is learned once both crashes went: before, its session would ride with a crash.
        let sent = Date().addingTimeInterval(30)
        while server.allRequests.count < 2 && Date() < sent { usleep(20_000) }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        XCTAssertTrue(sink.takeRuns([EndedRun(start: RunStart(runID: "killed", process: .current, startWallMilliseconds: now - 1000,
                                                              startMonotonicNanoseconds: 0, appName: "app", appVersion: "1", oomKills: nil),
                                              end: .killed(oom: false))]))
        XCTAssertFalse(sink.shutdown(deadline: .now.advanced(by: .seconds(3))), "the session waits out the limit")

        let requests = server.allRequests
        XCTAssertEqual(requests.count, 2, "both crashes went; the lone session did not")
        func itemTypes(_ request: TestHTTPServer.Request) -> [String] {
            request.bodyBytes.split(separator: 0x0A).compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])?["type"] as? String
            }
        }
        XCTAssertEqual(itemTypes(requests[0]), ["event", "attachment", "session"])
        XCTAssertEqual(itemTypes(requests[1]), ["event", "attachment", "client_report"], "its session held back, and said so")
        let report = try XCTUnwrap(requests[1].bodyBytes.split(separator: 0x0A).compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any]
        }.first { $0["discarded_events"] != nil })
        let discarded = try XCTUnwrap(report["discarded_events"] as? [[String: Any]])
        XCTAssertEqual(discarded.count, 1)
        XCTAssertEqual(discarded.first?["reason"] as? String, "ratelimit_backoff")
        XCTAssertEqual(discarded.first?["category"] as? String, "session")
        XCTAssertEqual(discarded.first?["quantity"] as? Int, 1)
        for (index, request) in requests.enumerated() {
            let file = directory + "/\(index).envelope"
            try Data(request.bodyBytes).write(to: URL(fileURLWithPath: file))
            let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try Oracles.run("sentry_check.py", [file]).utf8)) as? [String: Any])
            XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(summary["errors"] ?? "")")
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: records + "/sessions/killed.envelope"), "kept for later")
        XCTAssertNotNil(SentryRateLimits.load(records, now: Int64(Date().timeIntervalSince1970 * 1000)).wait(for: .session, now: now),
                        "the limit is kept for the next launch")
        XCTAssertFalse(FileManager.default.fileExists(atPath: SentryDiscards.path(records)), "reported: nothing left to report")
    }
}

extension SentrySessionsTests {
    /// A container runtime's id is found in the cgroup and mountinfo lines they write.
    func testTheContainerIDIsReadFromTheCgroupPath() {
        let id = String(repeating: "0123456789abcdef", count: 4)
        XCTAssertEqual(HostContext.containerID(in: "12:memory:/docker/\(id)\n"), id)
        XCTAssertEqual(HostContext.containerID(in: "0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-\(id).scope\n"), id)
        XCTAssertEqual(HostContext.containerID(in: "1234 56 0:1 /var/lib/docker/containers/\(id)/hostname /etc/hostname rw\n"), id)
        XCTAssertNil(HostContext.containerID(in: "0::/user.slice/user-0.slice/session-1.scope\n"))
        XCTAssertNil(HostContext.containerID(in: "0::/docker/\(id)0\n"), "65 digits: not an id")
    }

    /// The container and the Kubernetes pod, as custom contexts, pass Relay's normalizer, and
    /// stay home when the policy keeps the host's details.
    func testContainerAndPodContextsPassRelay() throws {
        let directory = try Scratch.directory("sessions-contexts")
        let name = try XCTUnwrap(try Harness.records(1, in: directory).first)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
        let record = try CrashRecordReader.parse(bytes)
        let host = HostContext(memoryBytes: 8 << 30, containerID: String(repeating: "ab", count: 32), kubernetesNamespace: "shop", kubernetesPod: "cart-7d9")
        let facts = SentryRunFacts(release: "app@1", environment: "production", dist: nil, serverName: "cart-7d9", host: host)
        let envelope = try SentryEnvelope.outgoing(record: record, rawRecord: bytes, fileName: name, eventID: SentryEnvelope.eventID(rawRecord: bytes),
                                                   sentAt: Clock.wallNanoseconds(), minimised: nil, facts: facts, beforeSend: nil).get()
        let file = directory + "/contexts.envelope"
        try Data(envelope).write(to: URL(fileURLWithPath: file))
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try Oracles.run("sentry_check.py", [file]).utf8)) as? [String: Any])
        XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(summary["errors"] ?? "")")
        let contexts = try XCTUnwrap((summary["normalized"] as? [String: Any])?["contexts"] as? [String: Any])
        XCTAssertEqual((contexts["container"] as? [String: Any])?["id"] as? String, host.containerID)
        XCTAssertEqual((contexts["k8s"] as? [String: Any])?["namespace"] as? String, "shop")
        XCTAssertEqual((contexts["k8s"] as? [String: Any])?["pod"] as? String, "cart-7d9")
        XCTAssertEqual((contexts["device"] as? [String: Any])?["memory_size"] as? Int, 8 << 30)

        // The Sentry sink reads this host's only where the policy lets the host's details leave.
        let dsn = try XCTUnwrap(SentryDSN("http://key@127.0.0.1:9/1"))
        XCTAssertNotNil(SentrySink(dsn: dsn, data: CrashDataPolicy(), recordDirectory: directory).runOf(record, start: nil).facts.host)
        XCTAssertNil(SentrySink(dsn: dsn, data: CrashDataPolicy(hostDetails: false), recordDirectory: directory).runOf(record, start: nil).facts.host)
    }
}

extension SentrySessionsTests {
    /// The app's `SentryOptions.beforeSend` drops the crash's event: the run still crashed, and its
    /// session goes alone (as Sentry's SDKs end it), the event counted as `before_send`.
    func testACrashWhoseEventTheAppDropsStillEndsItsSessionAsCrashed() throws {
        let directory = try Scratch.directory("sessions-dropped")
        let records = directory + "/records"
        let server = try TestHTTPServer()
        let dsn = ["--sentry-dsn", "http://key@127.0.0.1:\(server.port)/1"]
        try deliver(records, dsn + ["--run-id", "dropped", "--crash"], expect: .signaled(SIGSEGV))
        try deliver(records, dsn + ["--before-send", "drop"])
        XCTAssertFalse(server.allRequests.contains { $0.body.contains("\"type\":\"event\"") }, "the event was dropped")
        let (_, received) = try sessions(server)
        XCTAssertEqual(received.compactMap { ($0["payload"] as? [String: Any])?["status"] as? String }, ["crashed"])
        XCTAssertEqual(received.first?["with_event"] as? Bool, false)
        XCTAssertEqual(SentryDiscards.load(records).counts[SentryDiscards.Key(reason: .beforeSend, category: .error)] ?? 0
                       + (server.allRequests.contains { $0.body.contains("before_send") } ? 1 : 0), 1,
                       "the dropped event is counted: in the client report sent, or kept for the next one")
    }
}

extension SentrySessionsTests {
    /// Release health off (`SentryOptions.sessions = false`): no session is written or sent, and a crash's
    /// envelope carries none.
    func testReleaseHealthOffSendsNoSession() throws {
        let directory = try Scratch.directory("sessions-off")
        let name = try XCTUnwrap(try Harness.records(1, in: directory).first)
        let record = try CrashRecordReader.read(path: directory + "/" + name)
        let server = try TestHTTPServer()
        let dsn = try XCTUnwrap(SentryDSN("http://key@127.0.0.1:\(server.port)/1"))
        let on = SentrySink(dsn: dsn, recordDirectory: directory)
        let off = SentrySink(dsn: dsn, recordDirectory: directory, sessions: false)
        var withRun = record
        withRun.runID = "a-run"
        XCTAssertNotNil(on.runOf(withRun, start: nil).session, "the control: on, the crash carries its session")
        XCTAssertNil(off.runOf(withRun, start: nil).session)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        XCTAssertTrue(off.takeRuns([EndedRun(start: RunStart(runID: "exited", process: .current, startWallMilliseconds: now - 1000,
                                                             startMonotonicNanoseconds: 0, appName: "app", appVersion: "1", oomKills: nil),
                                             end: .exited(wallMilliseconds: now, durationNanoseconds: 1_000_000_000))]))
        XCTAssertTrue(off.shutdown(deadline: .now.advanced(by: .seconds(5))))
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/sessions"), "no session written")
        XCTAssertEqual(server.allRequests.count, 0)
    }
}

extension SentrySessionsTests {
    /// The envelope with the crash's event the loopback Sentry received, checked by the oracle
    /// (sentry_sdk's parser, Relay's normalizer): the event as sent and as Relay normalizes it.
    func crashEvent(_ server: TestHTTPServer, in directory: String) throws -> (sent: [String: Any], normalized: [String: Any], body: String) {
        let withEvent = try XCTUnwrap(server.allRequests.first { $0.body.contains("\"type\":\"event\"") })
        let file = directory + "/event-\(server.port).envelope"
        try Data(withEvent.bodyBytes).write(to: URL(fileURLWithPath: file))
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try Oracles.run("sentry_check.py", [file]).utf8)) as? [String: Any])
        XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(summary["errors"] ?? "")")
        return (try XCTUnwrap(summary["event"] as? [String: Any]), try XCTUnwrap(summary["normalized"] as? [String: Any]), withEvent.body)
    }

    /// The app's scope goes with its crash as it was at the crash: the tags (one changed just
    /// before the crash), the named contexts; the user only where the data policy lets identity
    /// leave, and then as Sentry's `user`. Relay's normalizer accepts both.
    func testTheAppScopeAsItWasAtTheCrashGoesWithTheEvent() throws {
        let scope = ["--tag", "tenant=acme", "--tag", "phase=start", "--late-tag", "phase=crash", "--tag", "signal=mine",
                     "--user", "u-42,ada@example.com", "--context", "database.engine=postgres", "--context", "database.pool=8",
                     "--context", "os.name=not the reporter's"]
        for identity in [false, true] {
            let directory = try Scratch.directory("sessions-scope-\(identity)")
            let records = directory + "/records"
            let server = try TestHTTPServer()
            let dsn = ["--sentry-dsn", "http://key@127.0.0.1:\(server.port)/1"]
            try deliver(records, dsn + scope + ["--crash"], expect: .signaled(SIGSEGV))
            try deliver(records, dsn + (identity ? ["--data", "identity,host-details"] : []))
            let (sent, normalized, body) = try crashEvent(server, in: directory)

            let tags = Dictionary((normalized["tags"] as? [[Any]] ?? []).compactMap { pair -> (String, String)? in
                guard pair.count == 2, let key = pair[0] as? String, let value = pair[1] as? String else { return nil }
                return (key, value)
            }, uniquingKeysWith: { a, _ in a })
            XCTAssertEqual(tags["tenant"], "acme")
            XCTAssertEqual(tags["phase"], "crash", "the scope as it was at the crash")
            XCTAssertEqual(tags["signal"], "SIGSEGV", "the reporter's own tag wins a clash")
            let contexts = try XCTUnwrap(normalized["contexts"] as? [String: Any])
            let database = try XCTUnwrap(contexts["database"] as? [String: Any])
            XCTAssertEqual(database["engine"] as? String, "postgres")
            XCTAssertEqual(database["pool"] as? String, "8")
            XCTAssertNotEqual((contexts["os"] as? [String: Any])?["name"] as? String, "not the reporter's", "the reporter's os context stays")
            if identity {
                let user = try XCTUnwrap(normalized["user"] as? [String: Any])
                XCTAssertEqual(user["id"] as? String, "u-42")
                XCTAssertEqual(user["email"] as? String, "ada@example.com")
            } else {
                XCTAssertNil(sent["user"])
                XCTAssertFalse(body.contains("u-42") || body.contains("ada@example.com"), "the user leaves in neither the event nor the attached record")
            }
        }
    }
}

extension SentrySessionsTests {
    /// A run SIGKILLed after about 5 s lasted as long as the run ledger last saw it alive (its
    /// marker's sighting, every 2 s): its Sentry session (`abnormal`) carries that duration, the
    /// one the ledger told every sink (the app's other sink, a recording one here, got the same).
    /// (The analytics' `$AppEnd` of such a run: SensorsAnalyticsTests' NextLaunchEventsTests.)
    func testAKilledRunLastsUntilTheLedgerLastSawItInItsSession() throws {
        let directory = try Scratch.directory("sessions-killed-duration")
        let records = directory + "/records", recorded = directory + "/recorded"
        let server = try TestHTTPServer()
        let dsn = ["--sentry-dsn", "http://key@127.0.0.1:\(server.port)/1"]
        let ready = directory + "/ready"
        let started = Date()
        let held = try ChildProcess.start(BuiltProducts.harness, ["deliver", "--records", records, "--recording-sink", recorded,
                                                                  "--run-id", "killed", "--end", "hold", "--ready-file", ready] + dsn,
                                          environment: environment)
        XCTAssertTrue(Harness.waitForFile(ready))
        Thread.sleep(forTimeInterval: 5.2)
        Glibc.kill(held.pid, SIGKILL)
        XCTAssertEqual(held.wait(timeout: 30).ending, .signaled(SIGKILL))
        let lived = Date().timeIntervalSince(started)
        try deliver(records, dsn + ["--recording-sink", recorded, "--run-id", "next"])

        // Sightings every 2 s (0.5 s leeway): the last one at least 3 s in, never after the kill.
        let (_, received) = try sessions(server)
        let abnormal = received.compactMap { $0["payload"] as? [String: Any] }.filter { $0["status"] as? String == "abnormal" }
        XCTAssertEqual(abnormal.count, 1, "\(received)")
        let sessionDuration = try XCTUnwrap(abnormal.first?["duration"] as? Double, "the killed run's session has a duration")
        XCTAssertGreaterThanOrEqual(sessionDuration, 3.0)
        XCTAssertLessThanOrEqual(sessionDuration, lived)

        let killed = try Harness.recorded(recorded).runs.filter { $0["run"] as? String == "killed" }
        XCTAssertEqual(killed.count, 1)
        XCTAssertEqual(killed.first?["end"] as? String, "killed")
        let told = try XCTUnwrap(killed.first?["lastSeenDurationMilliseconds"] as? Int)
        XCTAssertEqual(Double(told) / 1000, sessionDuration, accuracy: 0.002, "one sighting, told to both")
        // The sighting's time is the run's start plus its duration.
        let seen = try XCTUnwrap(killed.first?["lastSeenMilliseconds"] as? Int)
        XCTAssertEqual(Double(seen) / 1000, started.timeIntervalSince1970 + sessionDuration, accuracy: 1.0)
    }
}
