// HangDetectionTests.swift — records of a live process, in child processes (`crash-harness hang`):
// a starved cooperative pool writes one hang record naming the blocking frames and the requests,
// and the process recovers; a snapshot stops no sleep short; the watcher never cries wolf (paused
// work, SIGSTOP, full load); a stuck request and a silent heartbeat are named; crash-inspect
// snapshot asks a running process for a record.
import CrashCapture
import CrashInspection
import CrashSymbolication
import CrashSentry
import CrashRecordFormat
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class HangDetectionTests: XCTestCase {
    struct Hang {
        let directory: String
        let child: ChildProcess
        let stdout: String
        let stderr: String

        var recordFiles: [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".ccrec") }.sorted()
                .map { directory + "/" + $0 }
        }

        func records() throws -> [CrashRecord] { try recordFiles.map { try CrashRecordReader.read(path: $0) } }

        func json() throws -> [String: Any] {
            let line = try XCTUnwrap(stdout.split(separator: "\n").last.map(String.init), "no JSON on stdout; stderr: \(stderr)")
            return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    /// Runs `crash-harness hang --mode <mode>` to its end.
    func hang(_ mode: String, _ arguments: [String] = [], environment: [String: String] = [:], timeout: Double = 60) throws -> Hang {
        let directory = try Scratch.directory("hang-\(mode)")
        let out = directory + ".stdout", err = directory + ".stderr"
        var env = ProcessInfo.processInfo.environment
        env[HangDetection.environmentVariable] = nil
        env["SWIFT_BACKTRACE"] = "enable=no"
        env.merge(environment) { _, new in new }
        let child = try ChildProcess.run(Harness.debug, ["hang", "--dir", directory, "--mode", mode] + arguments,
                                         environment: env, stdout: out, stderr: err, timeout: timeout, ownProcessGroup: true)
        return Hang(directory: directory, child: child, stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
                    stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }

    /// Starts `crash-harness hang` in `directory` (not waited for), with `CRASHCAPTURE_HANG_SECONDS`
    /// set to `hangSeconds` (unset: nil).
    func startHarness(_ directory: String, _ arguments: [String], hangSeconds: String? = nil) throws -> ChildProcess.Running {
        var env = ProcessInfo.processInfo.environment
        env[HangDetection.environmentVariable] = hangSeconds
        return try ChildProcess.start(Harness.debug, ["hang", "--dir", directory] + arguments, environment: env,
                                      stdout: directory + ".stdout", stderr: directory + ".stderr", ownProcessGroup: true)
    }

    static let symbolicator: Symbolicator = { try! Symbolicator() }()

    func inspect(_ path: String) throws -> Inspection {
        Inspection(path: path, record: try CrashRecordReader.read(path: path), symbolicator: Self.symbolicator)
    }

    /// Every pool thread blocked in a synchronous sleep for 3 s, stall threshold 1 s: exactly one
    /// hang record (one per cause per 10 minutes), of the pool, whose blocked thread stands in
    /// `blockingCall`, listing the blocking requests and the waiting ones with where they wait;
    /// the process recovers and exits 0, as it does with capture off.
    func testStarvedPoolWritesOneHangRecordThatNamesTheBlockingFramesAndTheProcessRecovers() throws {
        let run = try hang("pool", ["--threshold", "1", "--block", "3"])
        XCTAssertEqual(try run.json()["recovered"] as? Bool, true)
        let records = try run.records()
        XCTAssertEqual(records.count, 1, "one hang record per cause: \(run.recordFiles)")
        let record = try XCTUnwrap(records.first)
        XCTAssertEqual(record.kind, .hang)
        XCTAssertNil(record.signal, "a hang is no signal")
        XCTAssertNil(record.appEndJSON, "a hang ends no run")
        let event = try XCTUnwrap(record.event)
        XCTAssertEqual(event.detector, .pool)
        XCTAssertEqual(event.thresholdMilliseconds, 1000)
        XCTAssertGreaterThanOrEqual(event.observedMilliseconds, 1000)
        XCTAssertGreaterThan(event.threadsStopped, 0)
        XCTAssertTrue(record.isComplete)
        let inspection = try inspect(run.recordFiles[0])
        let blocked = try XCTUnwrap(inspection.crashed, "no blocked thread chosen")
        let names = blocked.frames.flatMap(\.symbols).compactMap(\.symbol)
        XCTAssertTrue(names.contains { $0.contains("blockingCall") }, "blocked thread's frames: \(names.prefix(8))")
        let requests = try XCTUnwrap(record.requests)
        XCTAssertTrue(requests.others.contains { $0.requestID.hasPrefix("blocking-") }, "\(requests.others.map(\.requestID))")
        XCTAssertTrue(run.stderr.contains("crashcapture: {\"hang\":\"cooperative pool\""), run.stderr)
        // The line on stderr names the record.
        XCTAssertTrue(run.stderr.contains((run.recordFiles[0] as NSString).lastPathComponent), run.stderr)
        XCTAssertTrue(inspection.signature.hasPrefix("hang cooperative_pool | "), inspection.signature)
        let text = Rendering.text(inspection)
        XCTAssertTrue(text.hasPrefix("Hang "), String(text.prefix(200)))
        XCTAssertTrue(text.contains("Blocked thread"), text)
    }

    /// Busy or waiting: a pool starved by requests that sleep is `waiting` (no thread on the CPU,
    /// the blocked ones sleeping), one starved by requests that compute is `computing` (its pool
    /// threads running, each on the CPU for most of the window), in `show`, `show --json`, Sentry
    /// and OTLP.
    func testAStarvedPoolSaysWhetherItIsComputingOrWaiting() throws {
        for busy in [false, true] {
            let run = try hang("pool", ["--threshold", "1", "--block", busy ? "2" : "3"] + (busy ? ["--busy"] : []))
            XCTAssertEqual(try run.json()["recovered"] as? Bool, true, run.stderr)
            let record = try XCTUnwrap(try run.records().first, "no record: \(run.stderr)")
            let states = try XCTUnwrap(record.event?.threadStates, "no thread states")
            XCTAssertEqual(states.windowMilliseconds, 200)
            XCTAssertEqual(states.threads.count, record.threads.count, "every thread in the record, no other")
            XCTAssertEqual(states.verdict, busy ? "computing" : "waiting", "\(states.threads)")
            let inspection = try inspect(run.recordFiles[0])
            let blocked = try XCTUnwrap(inspection.crashed).thread
            let mine = try XCTUnwrap(states.of(blocked.tid))
            // And since the stall began (the watcher's tick before it): a span at least the threshold.
            let span = try XCTUnwrap(record.event?.stallCPUSpanMilliseconds, "no stall CPU span")
            XCTAssertGreaterThanOrEqual(span, 1000)
            if busy {
                XCTAssertEqual(mine.state, "R", "\(mine)")
                XCTAssertGreaterThanOrEqual(mine.windowCPUMilliseconds, 50, "\(mine)")
                XCTAssertGreaterThanOrEqual(mine.stallCPUMilliseconds * 4, span, "computing through a quarter of the stall at least: \(mine)")
            } else {
                XCTAssertEqual(mine.state, "S", "\(mine)")
                XCTAssertLessThanOrEqual(mine.windowCPUMilliseconds, 20, "\(mine)")
                XCTAssertLessThanOrEqual(mine.stallCPUMilliseconds, 100, "\(mine)")
            }
            let text = Rendering.text(inspection)
            XCTAssertTrue(text.contains(busy ? "computing: " : "waiting: "), text)
            // A computing stall's busy threads sampled over a second: most often in busyCall.
            if busy {
                let samples = try XCTUnwrap(record.event?.stackSamples, "no stack samples")
                XCTAssertEqual(samples.rounds, 5)
                XCTAssertGreaterThanOrEqual(samples.samples.count, 5, "\(samples.samples.map(\.tid))")
                let hottest = try XCTUnwrap(inspection.hotFrames.first)
                XCTAssertTrue(hottest.place.contains("busyCall"), "\(inspection.hotFrames)")
                XCTAssertGreaterThanOrEqual(hottest.samples * 2, samples.samples.count, "most samples in busyCall: \(inspection.hotFrames)")
                XCTAssertTrue(text.contains("most often in"), text)
                let grouped = SentryEnvelope.event(record: record, eventID: "e")
                XCTAssertEqual(grouped.fingerprint?.prefix(3), ["hang", "cooperative_pool", "computing"])
                XCTAssertTrue(grouped.fingerprint?.last?.contains("busyCall") == true, "\(String(describing: grouped.fingerprint))")
            } else {
                XCTAssertNil(record.event?.stackSamples, "a waiting stall is not sampled")
            }
            let event = SentryEnvelope.event(record: record, eventID: "e", readImageFiles: false)
            XCTAssertEqual(event.tags["stall"], busy ? "computing" : "waiting")
            XCTAssertEqual(event.threads.values.first { $0.id == Int(blocked.tid) }?.state, busy ? "Runnable" : "Waiting")
        }
    }

    /// The container's termination message file, as the kubelet makes it: a hang record leaves
    /// its line there, replacing what the file held, for `kubectl describe pod` should the pod be
    /// killed while hung (SIGKILL: the line stays); a process that recovers and exits normally
    /// takes its line away again.
    func testAHangLeavesTheTerminationMessageUntilANormalExit() throws {
        for killed in [true, false] {
            let directory = try Scratch.directory("hang-termination-\(killed)")
            let termination = directory + ".termination-log"
            XCTAssertTrue(FileManager.default.createFile(atPath: termination, contents: Data(String(repeating: "x", count: 5000).utf8)))
            var env = ProcessInfo.processInfo.environment
            env[HangDetection.environmentVariable] = nil
            env["CRASHCAPTURE_TERMINATION_LOG"] = termination
            let child = try ChildProcess.start(Harness.debug, ["hang", "--dir", directory, "--mode", "pool", "--threshold", "1", "--block", "4"],
                                               environment: env, stdout: directory + ".stdout", stderr: directory + ".stderr", ownProcessGroup: true)
            var message = ""
            for _ in 0..<100 where !message.hasPrefix("hang: ") {
                Thread.sleep(forTimeInterval: 0.1)
                message = (try? String(contentsOfFile: termination, encoding: .utf8)) ?? ""
            }
            let record = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).first { $0.hasSuffix(".ccrec") }
            XCTAssertTrue(message.hasPrefix("hang: cooperative pool stalled for "), message)
            XCTAssertTrue(message.hasSuffix("(threshold 1.0 s); record \(directory)/\(record ?? "?")\n"), message)
            XCTAssertFalse(message.contains("xxx"), "what the file held before is replaced: \(message)")
            if killed { kill(child.pid, SIGKILL) }
            let ended = child.wait(timeout: 60)
            let after = try String(contentsOfFile: termination, encoding: .utf8)
            if killed {
                XCTAssertEqual(ended.ending, .signaled(SIGKILL))
                XCTAssertEqual(after, message, "killed while hung: the line stays for the pod's status")
            } else {
                XCTAssertEqual(ended.ending, .exited(0))
                XCTAssertEqual(after, "", "recovered and exited normally: the line is taken away")
            }
        }
    }

    /// The same with capture off: the process recovers the same way and writes nothing.
    func testStarvedPoolWithCaptureOffRecoversTheSameWay() throws {
        let termination = try Scratch.directory("hang-pool-off-termination") + "/termination-log"
        XCTAssertTrue(FileManager.default.createFile(atPath: termination, contents: Data("the app's own\n".utf8)))
        let missing = termination + "-missing"
        let run = try hang("pool", ["--threshold", "1", "--block", "2"], environment: [CrashHandler.disableEnvironmentVariable: "1",
                                                                                       "CRASHCAPTURE_TERMINATION_LOG": termination])
        XCTAssertEqual(run.child.ending, .exited(0), run.stderr)
        XCTAssertEqual(try run.json()["recovered"] as? Bool, true)
        XCTAssertEqual(run.recordFiles, [])
        XCTAssertEqual(try String(contentsOfFile: termination, encoding: .utf8), "the app's own\n", "capture off writes no termination message")
        // Capture on, no such file: none is made.
        let on = try hang("pool", ["--threshold", "1", "--block", "2"], environment: ["CRASHCAPTURE_TERMINATION_LOG": missing])
        XCTAssertEqual(on.child.ending, .exited(0), on.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: missing))
    }

    /// A snapshot while three threads sleep (glibc's sleep: one nanosleep, which any signal
    /// handler cuts short) and three requests await continuations nobody resumes: each sleep
    /// lasts its full 2 s, the record lists the sleeping threads in `sleep` and each request's
    /// task waiting in `awaitForever`.
    func testSnapshotCutsNoSleepShortAndSaysWhereEachRequestWaits() throws {
        let run = try hang("snapshot", ["--threshold", "0"])
        XCTAssertEqual(run.child.ending, .exited(0), run.stderr)
        let json = try run.json()
        let slept = try XCTUnwrap(json["slept"] as? [Double])
        XCTAssertEqual(slept.count, 3)
        for seconds in slept { XCTAssertGreaterThanOrEqual(seconds, 1.99, "a sleep was cut short: \(slept)") }
        let path = try XCTUnwrap(json["record"] as? String)
        let inspection = try inspect(path)
        XCTAssertEqual(inspection.record.kind, .snapshot)
        XCTAssertEqual(inspection.record.event?.name, "harness")
        let sleeping = inspection.threads.filter { $0.frames.flatMap(\.symbols).contains { $0.symbol == "sleep" } }
        XCTAssertGreaterThanOrEqual(sleeping.count, 3, inspection.threads.map { $0.frames.first?.symbols.first?.symbol ?? "?" }.description)
        XCTAssertTrue(inspection.threads.allSatisfy(\.thread.ptraced), "every thread read by the helper")
        let others = try XCTUnwrap(inspection.record.requests?.others)
        XCTAssertEqual(others.map(\.requestID).sorted(), ["waiting-0", "waiting-1", "waiting-2"])
        for (index, request) in others.enumerated() {
            XCTAssertEqual(request.waiting?.status, .read, request.requestID)
            let names = inspection.waiting[index].compactMap(\.symbol)
            XCTAssertTrue(names.contains { $0.contains("awaitForever") }, "\(request.requestID) waits in \(names)")
            XCTAssertTrue(names.contains { $0.contains("startWaitingRequest") }, "\(request.requestID)'s callers: \(names)")
        }
        XCTAssertGreaterThan(json["stopped_us"] as? Int ?? 0, 0)
    }

    /// Two requests whose continuation was dropped without being resumed (the runtime warns that
    /// the function leaked it) and one whose continuation is kept: the snapshot keeps the
    /// runtime's warning, once with its count, and ties it to the two requests whose task waits in
    /// that function — in `show`, `show --json` and the Sentry event — and not to the third.
    func testARequestStuckBehindALeakedContinuationIsExplained() throws {
        let run = try hang("snapshot", ["--threshold", "0", "--waiting", "1", "--leaking", "2"])
        XCTAssertEqual(run.child.ending, .exited(0), run.stderr)
        let path = try XCTUnwrap(try run.json()["record"] as? String)
        let inspection = try inspect(path)
        let leak = "SWIFT TASK CONTINUATION MISUSE: awaitLeakedContinuation() leaked its continuation without resuming it."
        XCTAssertEqual(inspection.record.runtimeWarnings.map(\.count), [2])
        XCTAssertTrue(inspection.record.runtimeWarnings.first?.text.hasPrefix(leak) == true, "\(inspection.record.runtimeWarnings)")
        let others = try XCTUnwrap(inspection.record.requests?.others)
        let leaked = Dictionary(uniqueKeysWithValues: zip(others.map(\.requestID), inspection.leakedContinuations.map { $0?.text }))
        XCTAssertEqual(Set(leaked.keys), ["waiting-0", "leaking-0", "leaking-1"])
        XCTAssertNil(leaked["waiting-0"] ?? nil, "a kept continuation is no leak")
        XCTAssertTrue(leaked["leaking-0"]??.hasPrefix(leak) == true, "\(leaked)")
        XCTAssertTrue(leaked["leaking-1"]??.hasPrefix(leak) == true, "\(leaked)")
        let text = Rendering.text(inspection)
        XCTAssertEqual(text.components(separatedBy: "stuck for good: awaitLeakedContinuation() leaked the continuation it awaits").count - 1, 2, text)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(Rendering.jsonText(inspection).utf8)) as? [String: Any])
        let requests = try XCTUnwrap((json["requests"] as? [String: Any])?["others"] as? [[String: Any]])
        XCTAssertEqual(requests.filter { ($0["leakedContinuation"] as? String)?.hasPrefix(leak) == true }.count, 2, "\(requests)")
        // The Sentry event (crash-inspect export --sentry): each stuck request says so.
        let envelope = path + ".envelope"
        XCTAssertEqual(try ChildProcess.run(BuiltProducts.inspect, ["export", path, "--sentry", "-o", envelope], timeout: 60).ending, .exited(0))
        let lines = try XCTUnwrap(FileManager.default.contents(atPath: envelope)).split(separator: 0x0A)
        let event = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lines[2])) as? [String: Any])
        let inFlight = try XCTUnwrap((event["extra"] as? [String: Any])?["requests_in_flight"] as? [[String: Any]])
        XCTAssertEqual(inFlight.filter { ($0["leaked_continuation"] as? String)?.hasPrefix(leak) == true }.map { $0["id"] as? String }.sorted { ($0 ?? "") < ($1 ?? "") },
                       ["leaking-0", "leaking-1"])
        XCTAssertTrue(((event["extra"] as? [String: Any])?["runtime_warnings"] as? String)?.hasPrefix(leak) == true)
        try? FileManager.default.removeItem(atPath: envelope)
    }

    /// Deliberate blocking work between HangDetector.pause() and resume(): no record.
    func testBlockingWorkBetweenPauseAndResumeWritesNoRecord() throws {
        let run = try hang("pause", ["--threshold", "1", "--block", "3"])
        XCTAssertEqual(run.child.ending, .exited(0), run.stderr)
        XCTAssertEqual(run.recordFiles, [], run.stderr)
    }

    /// A process stopped with SIGSTOP for 10 s, then continued: its watcher's own sleep ran late,
    /// so nothing it measured in that time counts — no record. Its three requests that never end
    /// are 16 s old at the end, 6 s of it running: under the 12 s request threshold.
    func testStoppedForTenSecondsWritesNoRecord() throws {
        let directory = try Scratch.directory("hang-sigstop")
        let child = try startHarness(directory, ["--mode", "serve", "--threshold", "1",
                                                 "--seconds", "16", "--load", "2", "--request-threshold", "12"])
        Thread.sleep(forTimeInterval: 2)
        XCTAssertEqual(kill(child.pid, SIGSTOP), 0)
        Thread.sleep(forTimeInterval: 10)
        XCTAssertEqual(kill(child.pid, SIGCONT), 0)
        let ended = child.wait(timeout: 60)
        XCTAssertEqual(ended.ending, .exited(0))
        let records = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".ccrec") }
        XCTAssertEqual(records, [], (try? String(contentsOfFile: directory + ".stderr", encoding: .utf8)) ?? "")
    }

    /// A healthy process keeping the pool busy with CPU-bound jobs (four per core) for 15 s,
    /// stall threshold 1 s: no record.
    func testFullLoadWritesNoRecord() throws {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let run = try hang("serve", ["--threshold", "1", "--seconds", "15", "--load", String(4 * cores), "--waiting", "0"])
        XCTAssertEqual(run.child.ending, .exited(0), run.stderr)
        XCTAssertGreaterThan(try run.json()["jobs"] as? Int ?? 0, 100, "the load did run")
        XCTAssertEqual(run.recordFiles, [], run.stderr)
    }

    /// Three requests that never end, a request threshold of 2 s: one record of the request
    /// detector naming the oldest of them, which the record lists first with where it waits.
    func testStuckRequestIsNamed() throws {
        let run = try hang("serve", ["--threshold", "1", "--seconds", "4", "--request-threshold", "2"])
        XCTAssertEqual(run.child.ending, .exited(0), run.stderr)
        let records = try run.records()
        XCTAssertEqual(records.count, 1, "\(run.recordFiles)")
        let record = try XCTUnwrap(records.first)
        let event = try XCTUnwrap(record.event)
        XCTAssertEqual(event.detector, .request)
        XCTAssertGreaterThanOrEqual(event.observedMilliseconds, 2000)
        let key = try XCTUnwrap(event.requestKey)
        let stuck = try XCTUnwrap(record.requests?.others.first { $0.key == key }, "the stuck request is not listed")
        XCTAssertTrue(stuck.requestID.hasPrefix("waiting-"), stuck.requestID)
        XCTAssertEqual(record.requests?.others.first?.key, key, "the oldest comes first")
        let text = Rendering.text(try inspect(run.recordFiles[0]))
        XCTAssertTrue(text.contains("stuck request: GET /wait-forever — request \(stuck.requestID)"), text)
    }

    /// An app heartbeat that stops beating for 3 s: a record of it, naming the thread that beat.
    func testSilentHeartbeatNamesItsThread() throws {
        let run = try hang("heartbeat", ["--threshold", "1", "--block", "3", "--waiting", "0"])
        XCTAssertEqual(run.child.ending, .exited(0), run.stderr)
        let record = try XCTUnwrap(try run.records().first, run.stderr)
        let event = try XCTUnwrap(record.event)
        XCTAssertEqual(event.detector, .heartbeat)
        XCTAssertEqual(event.name, "worker-loop")
        let tid = try XCTUnwrap(event.blockedThread)
        let thread = try XCTUnwrap(record.threads.first { $0.tid == tid }, "the named thread is not in the record")
        let inspection = try inspect(run.recordFiles[0])
        XCTAssertEqual(inspection.crashed?.thread.tid, tid, "the record is about the heartbeat's thread")
        let names = (inspection.crashed?.frames ?? []).flatMap(\.symbols).compactMap(\.symbol)
        XCTAssertTrue(names.contains { $0.contains("heartbeat()") }, "\(thread.tid): \(names.prefix(10))")
    }

    /// `crash-inspect snapshot <pid>` of a running process with hang detection on (by the
    /// environment variable alone), typed as one types `jcmd <pid> Thread.print`: no --dir, from
    /// another directory. The record directory is found from /proc (the watcher's shared lock on
    /// it), the process answers, the record shows the waiting requests, and the process goes on to
    /// exit 0.
    func testCrashInspectSnapshotAsksARunningProcess() throws {
        let directory = try Scratch.directory("hang-inspect")
        let child = try startHarness(directory, ["--mode", "serve", "--threshold", "0",
                                                 "--seconds", "6", "--load", "2"], hangSeconds: "2")
        Thread.sleep(forTimeInterval: 1.5)
        let inspect = BuiltProducts.inspect
        let out = directory + ".snapshot"
        XCTAssertEqual(WatchedDirectory.of(pid: child.pid).map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path },
                       [URL(fileURLWithPath: directory).resolvingSymlinksInPath().path])
        var environment = ProcessInfo.processInfo.environment
        environment["CRASHCAPTURE_DIR"] = nil
        let elsewhere = try Scratch.directory("hang-inspect-elsewhere")
        let asked = try ChildProcess.run("/bin/sh", ["-c", "cd \"$1\" && exec \"$2\" snapshot \"$3\" --json", "sh", elsewhere, inspect, String(child.pid)],
                                         environment: environment, stdout: out, timeout: 30)
        XCTAssertEqual(asked.ending, .exited(0))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: elsewhere), [], "nothing left where it was run")
        let data = try XCTUnwrap(FileManager.default.contents(atPath: out))
        let shown = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        XCTAssertEqual(shown["kind"] as? String, "snapshot")
        let requests = try XCTUnwrap((shown["requests"] as? [String: Any])?["others"] as? [[String: Any]])
        XCTAssertEqual(requests.count, 3)
        let listed = directory + ".list"
        XCTAssertEqual(try ChildProcess.run(BuiltProducts.inspect, ["list", "--dir", directory, "--json"], stdout: listed, timeout: 30).ending, .exited(0))
        let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: XCTUnwrap(FileManager.default.contents(atPath: listed))) as? [[String: Any]])
        XCTAssertEqual(rows.compactMap { $0["kind"] as? String }, ["snapshot"], "list --json says the kind")
        for request in requests {
            let frames = (request["waiting"] as? [[String: Any]] ?? []).compactMap { $0["symbol"] as? String }
            XCTAssertTrue(frames.contains { $0.contains("awaitForever") }, "\(frames)")
        }
        let ended = child.wait(timeout: 60)
        XCTAssertEqual(ended.ending, .exited(0))
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/" + RecordFileName.snapshotRequest(pid: child.pid)))
    }

    /// A process that does not watch (hang detection off) is not disturbed: crash-inspect says
    /// so after its timeout and leaves no request behind.
    func testCrashInspectSnapshotOfAProcessThatDoesNotWatchSaysSo() throws {
        let directory = try Scratch.directory("hang-inspect-off")
        let child = try startHarness(directory, ["--mode", "serve", "--threshold", "0", "--seconds", "4"])
        Thread.sleep(forTimeInterval: 1)
        let err = directory + ".inspect-stderr"
        let asked = try ChildProcess.run(BuiltProducts.inspect, ["snapshot", String(child.pid), "--dir", directory, "--timeout", "1.5"],
                                         stderr: err, timeout: 30)
        XCTAssertNotEqual(asked.ending, .exited(0))
        let message = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        XCTAssertTrue(message.contains("did not answer"), message)
        XCTAssertEqual(child.wait(timeout: 60).ending, .exited(0))
        XCTAssertEqual(((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("snapshot-") }, [])
    }

    /// A debugger that attaches (every thread stopped) and holds the process for 6 s, then
    /// detaches: the watcher stood still with the rest, so no record.
    func testAttachedDebuggerWritesNoRecord() throws {
        let lldb = try XCTUnwrap(Tools.find("lldb-16", "lldb"), "no lldb-16: run scripts/setup.sh")
        let directory = try Scratch.directory("hang-debugger")
        let child = try startHarness(directory, ["--mode", "serve", "--threshold", "1",
                                                 "--seconds", "12", "--load", "2", "--waiting", "0"])
        Thread.sleep(forTimeInterval: 2)
        let held = try ChildProcess.run(lldb, ["--batch", "-p", String(child.pid), "-o", "script import time; time.sleep(6)", "-o", "process detach"],
                                        stdout: directory + ".lldb", stderr: directory + ".lldb-stderr", timeout: 60)
        XCTAssertEqual(held.ending, .exited(0), (try? String(contentsOfFile: directory + ".lldb-stderr", encoding: .utf8)) ?? "")
        let lldbOutput = (try? String(contentsOfFile: directory + ".lldb", encoding: .utf8)) ?? ""
        XCTAssertTrue(lldbOutput.contains("Process \(child.pid) stopped") || lldbOutput.contains("attach"), lldbOutput)
        XCTAssertEqual(child.wait(timeout: 60).ending, .exited(0))
        let records = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".ccrec") }
        XCTAssertEqual(records, [], (try? String(contentsOfFile: directory + ".stderr", encoding: .utf8)) ?? "")
    }
}
