// CrashTimeUploadTests.swift — crash-time upload for real: the debug harness crashes with
// `crashTimeUploader` set, the handler starts the built crash-uploader, and a loopback Sentry
// (TestHTTPServer on 127.0.0.1) receives the envelope while (or after) the crashed process dies;
// the next launch sends nothing more; as PID 1 of a new PID namespace the handler waits for the
// uploader and nothing is left behind; off by default; an uploader that is not there changes nothing.
import CrashCapture
@testable import CrashReporter
import CrashRecordFormat
import Foundation
import ProcessSpawning
import Synchronization
import TestSupport
import XCTest
@testable import CrashReporterSentry

final class CrashTimeUploadTests: XCTestCase {
    /// A loopback Sentry that notes, as each request arrives, the state of the process in
    /// `watched` (`/proc/<pid>/stat`: "gone" once reaped, "Z" dead and not yet reaped).
    final class Sentry: Sendable {
        final class Watch: Sendable {
            let pid = Mutex<pid_t>(0)
            let statesAtArrival = Mutex<[String]>([])
        }
        let watch = Watch()
        let server: TestHTTPServer
        var statesAtArrival: [String] { watch.statesAtArrival.withLock { $0 } }

        /// With `hold`, each answer waits (at most 60 s) for a signal on it.
        init(hold: DispatchSemaphore? = nil) throws {
            let watch = watch
            server = try TestHTTPServer { _ in
                let pid = watch.pid.withLock { $0 }
                watch.statesAtArrival.withLock { $0.append(pid == 0 ? "none" : CrashTimeUploadTests.state(of: pid)) }
                if let hold { _ = hold.wait(timeout: .now() + 60) }
                return .status(200, body: Array("{}".utf8))
            }
        }

        var dsn: String { "http://0123456789abcdef@127.0.0.1:\(server.port)/42" }
        var envelopes: Int { server.allRequests.filter { $0.path == "/api/42/envelope/" }.count }

        /// Waits (bounded) until `count` envelopes arrived.
        func waitForEnvelopes(_ count: Int, timeout: Double = 60) -> Bool {
            let deadline = Date(timeIntervalSinceNow: timeout)
            while envelopes < count && Date() < deadline { usleep(10_000) }
            return envelopes >= count
        }
    }

    /// The state letter of `/proc/<pid>/stat`, or "gone".
    static func state(of pid: pid_t) -> String {
        guard let stat = FileManager.default.contents(atPath: "/proc/\(pid)/stat"), let close = stat.lastIndex(of: UInt8(ascii: ")")),
              close + 2 < stat.count else { return "gone" }
        return String(decoding: [stat[close + 2]], as: UTF8.self)
    }

    /// Pids of every process whose name is crash-uploader (zombies included).
    static func uploaderProcesses() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { entry in
            guard Int32(entry) != nil, let comm = FileManager.default.contents(atPath: "/proc/\(entry)/comm") else { return false }
            return String(decoding: comm, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == CrashTimeUpload.executableName
        }.map { "\($0) (\(state(of: pid_t($0)!)))" }
    }

    /// Waits (bounded) until no crash-uploader process is left, zombies included (an orphaned
    /// uploader is reaped by init, or the subreaper, once it exits); what is left then.
    static func uploadersLeft(timeout: Double = 10) -> [String] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var left = uploaderProcesses()
        while !left.isEmpty && Date() < deadline {
            usleep(10_000)
            left = uploaderProcesses()
        }
        return left
    }

    func records(_ directory: String) throws -> [String] {
        try RecordFileName.names(in: directory, including: { RecordFileName.parseAcknowledgment($0) != nil })
    }

    /// `crash-harness deliver ... --crash <kind>` (optionally as PID 1 of a new PID namespace),
    /// in its own process group, with the harness's recording sink writing to `recorded` when
    /// given (the app's other sink): waits for its end, then up to `grace` seconds for what it left
    /// (the uploader carries the run's token), and returns how it ended and its JSON line.
    func crash(_ kind: String, records: String, recorded: String? = nil, sentry: Sentry?, uploader: String?, pid1: Bool = false,
               disabled: Bool = false, grace: Double = 40, ownGroup: Bool = true,
               extra: [String] = []) throws -> (child: ChildProcess, launch: [String: Any], stderr: String) {
        var arguments = ["deliver", "--records", records, "--crash", "--crash-as", kind] + extra
        if let recorded { arguments += ["--recording-sink", recorded] }
        if let sentry { arguments += ["--sentry-dsn", sentry.dsn] }
        if let uploader { arguments += ["--crash-time-uploader", uploader] }
        var environment = Harness.environment
        if disabled { environment[CrashHandler.disableEnvironmentVariable] = "1" }
        let output = try Scratch.directory("crash-time-output")
        let path = pid1 ? "/usr/bin/unshare" : Harness.path
        if pid1 { arguments = ["--pid", "--fork", "--mount-proc", Harness.path] + arguments }
        let running = try ChildProcess.start(path, arguments, environment: environment, stdout: output + "/stdout",
                                             stderr: output + "/stderr", ownProcessGroup: ownGroup)
        if !pid1 { sentry?.watch.pid.withLock { $0 = running.pid } }
        let child = running.wait(timeout: 90, leftoverGrace: grace)
        let stdout = (try? String(contentsOfFile: output + "/stdout", encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: output + "/stderr", encoding: .utf8)) ?? ""
        let line = stdout.split(separator: "\n").first.map(String.init) ?? ""
        let launch = (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
        return (child, launch, stderr)
    }

    /// How the same crash ends with CrashCapture off (CRASHCAPTURE_DISABLE=1).
    func endingWithoutCapture(_ kind: String, pid1: Bool = false) throws -> ChildProcess.Ending {
        try crash(kind, records: try Scratch.directory("crash-time-disabled"), sentry: nil, uploader: nil, pid1: pid1, disabled: true).child.ending
    }

    /// Sentry alone: the envelope arrives once the crashed process is dead (a zombie or reaped,
    /// never running), the process died of SIGSEGV as without CrashCapture, the uploader ended
    /// by itself, and the record is gone (Sentry was its only sink).
    /// The built crash-uploader's command line, read by hand: `--help` prints the usage, and each
    /// argument CrashTimeUpload could get wrong is refused with exit 64 and says why, before anything
    /// is read or sent. (The crashes above pass it arguments as the handler does.)
    func testTheUploadersCommandLineIsCheckedBeforeAnythingIsSent() throws {
        let directory = try Scratch.directory("crash-uploader-usage")
        let uploader = BuiltProducts.directory + "/" + CrashTimeUpload.executableName
        func run(_ arguments: [String]) throws -> (ending: ChildProcess.Ending, stdout: String, stderr: String) {
            let child = try ChildProcess.run(uploader, arguments, environment: ["PATH": "/usr/bin:/bin"],
                                             stdout: directory + "/stdout", stderr: directory + "/stderr", timeout: 30)
            return (child.ending, try String(contentsOfFile: directory + "/stdout", encoding: .utf8),
                    try String(contentsOfFile: directory + "/stderr", encoding: .utf8))
        }
        let help = try run(["--help"])
        XCTAssertEqual(help.ending, .exited(0))
        XCTAssertTrue(help.stdout.hasPrefix("USAGE: crash-uploader --directory <directory> --record <record>"), help.stdout)
        let record = "crash-1700000000000-42-42.ccrec"
        let refused: [([String], String)] = [
            ([], "missing '--directory <directory>'"),
            (["--directory", directory], "missing '--record <record>'"),
            (["--directory", directory, "--record", "../etc/passwd"], "--record must be a record's file name"),
            (["--directory=\(directory)", "--record=\(record)", "--sessions", "maybe"], "--sessions must be on or off"),
            (["--directory", directory, "--record", record, "--timeout", "0"], "--timeout must be 1...3600 seconds"),
            (["--directory", directory, "--record", record, "--timeout", "soon"], "--timeout must be a whole number"),
            (["--directory", directory, "--record", record, "--sinks", "sentry,no such"], "--sinks: no such is not a sink id"),
            (["--directory", directory, "--record", record, "--data", "everything"], "--data: not a list of"),
            (["--directory", directory, "--record", record, "--colour", "red"], "unknown option '--colour'"),
            (["--directory", directory, "--record"], "missing value for '--record'"),
            (["--directory", directory, "--record", record], "nothing to send to"),
        ]
        for (arguments, why) in refused {
            let result = try run(arguments)
            XCTAssertEqual(result.ending, .exited(64), "\(arguments)")
            XCTAssertTrue(result.stderr.hasPrefix("Error: ") && result.stderr.contains(why), "\(arguments): \(result.stderr)")
        }
    }

    func testWithSentryAloneTheRecordIsSentAsTheProcessDiesAndThenDeleted() throws {
        let directory = try Scratch.directory("crash-time-sentry-alone")
        let sentry = try Sentry()
        let run = try crash("null-dereference", records: directory, sentry: sentry, uploader: CrashTimeUpload.executableName)
        XCTAssertEqual(run.child.ending, .signaled(SIGSEGV))
        XCTAssertEqual(run.child.ending, try endingWithoutCapture("null-dereference"))
        XCTAssertEqual(run.launch["errors"] as? [String], [])
        XCTAssertTrue(sentry.waitForEnvelopes(1), "the crash-time upload never arrived")
        XCTAssertEqual(run.child.leftRunning, [], "the uploader ended by itself")
        let states = sentry.statesAtArrival
        XCTAssertEqual(states.count, 1)
        XCTAssertTrue(states.allSatisfy { $0 == "Z" || $0 == "gone" }, "the crashed process was still running when its envelope arrived: \(states)")
        XCTAssertEqual(sentry.envelopes, 1)
        let request = try XCTUnwrap(sentry.server.allRequests.first)
        XCTAssertTrue(request.headers["x-sentry-auth"]?.contains("sentry_key=0123456789abcdef") == true)
        XCTAssertEqual(try records(directory), [], "Sentry was the only sink: the uploader's acknowledgment deletes the record")
        XCTAssertEqual(Self.uploadersLeft(), [])
    }

    /// The uploader sends what the app's `dataPolicy` keeps, as the next launch does: by default neither the
    /// stack's nor the breadcrumb's secret; with those opted in, both.
    func testTheCrashTimeUploaderSendsWhatTheDataPolicyKeeps() throws {
        for optIn in [false, true] {
            let directory = try Scratch.directory("crash-time-data")
            let sentry = try Sentry()
            let run = try crash("null-dereference", records: directory, sentry: sentry, uploader: CrashTimeUpload.executableName,
                                extra: ["--secret", "SECRET-UPLOAD"] + (optIn ? ["--data", "raw-memory,breadcrumbs,host-details"] : []))
            XCTAssertEqual(run.child.ending, .signaled(SIGSEGV))
            XCTAssertTrue(sentry.waitForEnvelopes(1), "the crash-time upload never arrived")
            let body = Data(try XCTUnwrap(sentry.server.allRequests.first).bodyBytes)
            for secret in ["SECRET-UPLOAD-STACK", "SECRET-UPLOAD-CRUMB"] {
                XCTAssertEqual(body.range(of: Data(secret.utf8)) != nil, optIn, "\(secret), opted in: \(optIn)")
            }
            XCTAssertEqual(Self.uploadersLeft(), [])
        }
    }

    /// With another sink too (the harness's recording sink): the uploader leaves
    /// `<record>.sentry.ack`; the next launch (a new process over the same directory) gives that
    /// sink the crash and sends nothing more to Sentry.
    func testWithAnotherSinkTheNextLaunchGivesItTheCrashAndSendsNothingMoreToSentry() throws {
        let directory = try Scratch.directory("crash-time-with-other")
        let records = directory + "/records", recorded = directory + "/recorded"
        let sentry = try Sentry()
        let run = try crash("null-dereference", records: records, recorded: recorded, sentry: sentry, uploader: CrashTimeUpload.executableName)
        XCTAssertEqual(run.child.ending, .signaled(SIGSEGV))
        XCTAssertTrue(sentry.waitForEnvelopes(1), "the crash-time upload never arrived")
        XCTAssertEqual(run.child.leftRunning, [], "the uploader ended by itself")
        XCTAssertTrue(sentry.statesAtArrival.allSatisfy { $0 == "Z" || $0 == "gone" })
        let left = try self.records(records)
        XCTAssertEqual(left.count, 2, "\(left)")
        let record = try XCTUnwrap(left.first { RecordFileName($0) != nil })
        XCTAssertEqual(left, [record, record + ".sentry.ack"], "kept for the other sink, Sentry's acknowledgment beside it")

        let next = try Tools.output(Harness.path, ["deliver", "--records", records, "--recording-sink", recorded, "--sentry-dsn", sentry.dsn])
        let launch = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(next.utf8)) as? [String: Any])
        XCTAssertEqual(try Harness.recorded(recorded).records.compactMap { $0["record"] as? String }, [record], "the other sink still gets the crash")
        XCTAssertEqual(launch["recordsDelivered"] as? [String], [record])
        XCTAssertEqual(sentry.envelopes, 1, "the next launch sent the crash to Sentry again")
        XCTAssertEqual(try self.records(records), [])
    }

    /// A next launch while the uploader is still sending (Sentry holds its request) finds the
    /// record's lease held and leaves the record to it: it gives its other sink the crash and
    /// sends nothing; once Sentry answers, the uploader's acknowledgment is the last one and the
    /// record is deleted.
    func testANextLaunchWhileTheUploaderIsStillSendingLeavesTheRecordToIt() throws {
        let directory = try Scratch.directory("crash-time-lease")
        let records = directory + "/records", recorded = directory + "/recorded"
        let gate = DispatchSemaphore(value: 0)
        let sentry = try Sentry(hold: gate)
        defer { gate.signal() }
        let run = try crash("null-dereference", records: records, recorded: recorded, sentry: sentry,
                            uploader: CrashTimeUpload.executableName, ownGroup: false)
        XCTAssertEqual(run.child.ending, .signaled(SIGSEGV))
        XCTAssertTrue(sentry.waitForEnvelopes(1), "the crash-time upload never arrived")
        let record = try XCTUnwrap(try self.records(records).first { RecordFileName($0) != nil })

        let next = try Tools.output(Harness.path, ["deliver", "--records", records, "--recording-sink", recorded, "--sentry-dsn", sentry.dsn,
                                                   "--timeout", "3"])
        let launch = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(next.utf8)) as? [String: Any])
        XCTAssertEqual(try Harness.recorded(recorded).records.compactMap { $0["record"] as? String }, [record])
        XCTAssertEqual(launch["recordsAwaitingSinks"] as? [String], [record], "left for the uploader's acknowledgment")
        XCTAssertEqual(launch["errors"] as? [String], ["\(record): sentry: another process is sending it"])
        XCTAssertEqual(sentry.envelopes, 1, "the next launch sent the record the uploader was sending")
        XCTAssertEqual(try self.records(records), [record, record + ".recording.ack"])

        gate.signal()
        let deadline = Date(timeIntervalSinceNow: 30)
        while try !self.records(records).isEmpty && Date() < deadline { usleep(10_000) }
        XCTAssertEqual(try self.records(records), [], "the uploader's acknowledgment, the last, deletes the record")
        XCTAssertEqual(sentry.envelopes, 1)
        XCTAssertEqual(Self.uploadersLeft(timeout: 30), [])
    }

    /// As PID 1 of a new PID namespace (a container without an init), whose death kills the
    /// uploader: the handler waits for it, so the envelope is there when the process has died;
    /// it died as it does without CrashCapture (a null dereference: SIGSEGV; fatalError: SIGILL;
    /// abort(): SIGSEGV — glibc's abort falls through to `hlt` because a namespace's init cannot
    /// send itself SIGABRT — with or without CrashCapture); nothing is left running or a zombie.
    func testAsPID1OfANewPIDNamespaceTheHandlerWaitsForTheUploaderAndNothingIsLeft() throws {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else {
            throw XCTSkip("needs root and unshare(1) to make a PID namespace")
        }
        let sentry = try Sentry()
        for (index, kind) in ["null-dereference", "fatal-error", "abort"].enumerated() {
            let directory = try Scratch.directory("crash-time-pid1-\(kind)")
            let run = try crash(kind, records: directory, sentry: sentry, uploader: CrashTimeUpload.executableName, pid1: true, grace: 5)
            XCTAssertEqual(sentry.envelopes, index + 1, "\(kind): the envelope was not sent before PID 1 died (stderr: \(run.stderr))")
            XCTAssertEqual(run.child.ending, try endingWithoutCapture(kind, pid1: true), kind)
            XCTAssertEqual(run.child.leftRunning, [], "\(kind): left running")
            XCTAssertEqual(Self.uploaderProcesses(), [], "\(kind): an uploader is left (running or a zombie)")
            XCTAssertEqual(try records(directory), [], "\(kind): sent, so deleted")
        }
        XCTAssertEqual(try endingWithoutCapture("null-dereference", pid1: true), .signaled(SIGSEGV))
        XCTAssertEqual(try endingWithoutCapture("fatal-error", pid1: true), .signaled(SIGILL))
    }

    /// Under an init that exits with its only child — a shell script as the entry point, tini
    /// (`docker run --init`) where it is installed — the PID namespace goes as soon as the crashed
    /// process is reaped, the uploader with it: the handler of a process whose parent is PID 1
    /// waits for the uploader too, so the envelope is there when the init has exited, and the
    /// container ends as it does without CrashCapture.
    func testUnderAnInitThatExitsWithItsChildTheHandlerWaitsForTheUploader() throws {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else {
            throw XCTSkip("needs root and unshare(1) to make a PID namespace")
        }
        let sentry = try Sentry()
        var inits: [[String]] = [["/bin/sh", "-c", "\"$0\" \"$@\"; exit 0"]]
        if let tini = Tools.find("tini") { inits.append([tini, "--"]) }
        for (index, initCommand) in inits.enumerated() {
            var endings: [ChildProcess.Ending] = []
            for disabled in [false, true] {
                let directory = try Scratch.directory("crash-time-init")
                var environment = Harness.environment
                if disabled { environment[CrashHandler.disableEnvironmentVariable] = "1" }
                let arguments = ["--pid", "--fork", "--mount-proc"] + initCommand
                    + [Harness.path, "deliver", "--records", directory, "--sentry-dsn", sentry.dsn,
                       "--crash-time-uploader", CrashTimeUpload.executableName, "--crash"]
                let child = try ChildProcess.run("/usr/bin/unshare", arguments, environment: environment, timeout: 60,
                                                 ownProcessGroup: true, leftoverGrace: 5)
                endings.append(child.ending)
                XCTAssertEqual(child.leftRunning, [], "\(initCommand[0])")
                if !disabled {
                    XCTAssertEqual(sentry.envelopes, index + 1, "\(initCommand[0]): the envelope was not sent before the namespace went")
                    XCTAssertEqual(try records(directory), [], "\(initCommand[0]): sent, so deleted")
                }
            }
            XCTAssertEqual(endings[0], endings[1], "\(initCommand[0]): the container ends as without CrashCapture")
        }
        XCTAssertEqual(Self.uploadersLeft(), [])
    }

    /// As PID 1, the handler's own ends (its watchdog; a fault inside it) cannot be a signal it
    /// sends itself, which the kernel drops for a namespace's init: they die as the same crash
    /// does without CrashCapture (both SIGSEGV: the hang's null dereference; glibc's abort()
    /// ending in `hlt`), not with exit(128 + signal).
    func testAsPID1TheWatchdogAndAFaultInTheHandlerStillEndTheProcessByASignal() throws {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else {
            throw XCTSkip("needs root and unshare(1) to make a PID namespace")
        }
        for scenario in ["hang-in-handler", "crash-in-handler"] {
            var endings: [ChildProcess.Ending] = []
            for disabled in [false, true] {
                var environment = Harness.environment
                if disabled { environment[CrashHandler.disableEnvironmentVariable] = "1" }
                let directory = try Scratch.directory("crash-time-pid1-\(scenario)")
                endings.append(try ChildProcess.run("/usr/bin/unshare", ["--pid", "--fork", "--mount-proc", Harness.path, "run", scenario,
                                                                         "--dir", directory],
                                                    environment: environment, timeout: 60).ending)
            }
            XCTAssertEqual(endings[0], endings[1], scenario)
            XCTAssertEqual(endings[0], .signaled(SIGSEGV), scenario)
        }
    }

    /// The uploader as the handler starts it (a Python script standing in, noting its own state
    /// before anything else: Python blocks no signal at start, and ignores only SIGPIPE and
    /// SIGXFSZ itself): the DSN in its environment and not on its command line, the record's name
    /// as its last argument, no signal blocked, the program's ignored SIGUSR2 back to the default,
    /// none of the program's fds (one opened without O_CLOEXEC), a session of its own, no core dumps.
    func testTheUploaderStartsCleanWithTheDSNInItsEnvironmentOnly() throws {
        let python = try XCTUnwrap(Tools.find("python3"), "python3 stands in for the uploader")
        let directory = try Scratch.directory("crash-time-child-state")
        let script = directory + "/uploader.py", inheritable = directory + "/inheritable"
        try Data("inherit me\n".utf8).write(to: URL(fileURLWithPath: inheritable))
        try Data("""
            #!\(python)
            import json, os, resource, sys
            status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
            fds = {fd: os.readlink("/proc/self/fd/" + fd) for fd in os.listdir("/proc/self/fd") if os.path.exists("/proc/self/fd/" + fd)}
            state = {"blocked": int(status["SigBlk"], 16), "ignored": int(status["SigIgn"], 16), "fds": fds,
                     "pid": os.getpid(), "sid": os.getsid(0), "core": resource.getrlimit(resource.RLIMIT_CORE)[0],
                     "dsn": os.environ.get("\(CrashTimeUpload.dsnVariable)"), "argv": sys.argv,
                     "cmdline": open("/proc/self/cmdline").read()}
            path = os.path.join(os.path.dirname(sys.argv[0]), "observed")
            open(path + ".tmp", "w").write(json.dumps(state))
            os.rename(path + ".tmp", path)

            """.utf8).write(to: URL(fileURLWithPath: script))
        XCTAssertEqual(chmod(script, 0o755), 0)
        let sentry = try Sentry()
        let run = try crash("null-dereference", records: directory + "/records", sentry: sentry, uploader: script, grace: 10,
                            extra: ["--inheritable", inheritable])
        XCTAssertEqual(run.child.ending, .signaled(SIGSEGV))
        XCTAssertTrue(Harness.waitForFile(directory + "/observed", timeout: 30), "the uploader never ran (stderr: \(run.stderr))")
        let state = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/observed")))
                                  as? [String: Any])
        let record = try XCTUnwrap(try records(directory + "/records").first)
        let argv = try XCTUnwrap(state["argv"] as? [String])
        XCTAssertEqual(argv.suffix(2), ["--record", record])
        XCTAssertTrue(argv.contains("--directory") && argv.contains(directory + "/records"), "\(argv)")
        // The app's bounds for the directory (the uploader's inbox pass keeps them too).
        let limits = RecordDirectoryLimits.standard
        XCTAssertEqual(argv.firstIndex(of: "--max-records").map { argv[$0 + 1] }, String(limits.maxRecords))
        XCTAssertEqual(argv.firstIndex(of: "--max-record-bytes").map { argv[$0 + 1] }, String(limits.maxBytes))
        XCTAssertEqual((state["cmdline"] as? String)?.contains("0123456789abcdef"), false, "the DSN is on the command line")
        XCTAssertEqual(state["dsn"] as? String, sentry.dsn)
        XCTAssertEqual(state["core"] as? Int, 0)
        XCTAssertEqual(state["sid"] as? Int, state["pid"] as? Int, "the uploader leads a session of its own")
        XCTAssertEqual(state["blocked"] as? Int, 0, "signals blocked in the uploader")
        let ignored = try XCTUnwrap(state["ignored"] as? Int)
        XCTAssertEqual(ignored & (1 << (SIGUSR2 - 1)), 0, "the program's ignored SIGUSR2 is still ignored in the uploader")
        let fds = try XCTUnwrap(state["fds"] as? [String: String])
        XCTAssertFalse(fds.values.contains(inheritable), "the program's fd leaked into the uploader: \(fds)")
        XCTAssertFalse(fds.values.contains { $0.hasPrefix(directory + "/records") }, "\(fds)")
    }

    /// Off by default: no uploader starts; the record waits, whole, for the next launch, which sends it.
    func testOffByDefaultNothingIsSentUntilTheNextLaunch() throws {
        let directory = try Scratch.directory("crash-time-off")
        let sentry = try Sentry()
        let run = try crash("null-dereference", records: directory, sentry: sentry, uploader: nil, grace: 2)
        XCTAssertEqual(run.child.ending, .signaled(SIGSEGV))
        XCTAssertEqual(run.child.leftRunning, [])
        XCTAssertFalse(sentry.waitForEnvelopes(1, timeout: 5), "an envelope arrived although crash-time upload is off")
        let left = try records(directory)
        XCTAssertEqual(left.count, 1, "\(left)")
        _ = try Tools.output(Harness.path, ["deliver", "--records", directory, "--sentry-dsn", sentry.dsn])
        XCTAssertEqual(sentry.envelopes, 1, "the next launch sends it")
        XCTAssertEqual(try records(directory), [])
    }

    /// An uploader that is not there at start is reported by the launch and changes nothing
    /// else; one that cannot be exec'd at crash time (not an executable format) gets one line on
    /// stderr. Either way the record is whole and the death is the one without CrashCapture.
    func testAnUploaderThatIsMissingOrCannotRunLeavesTheRecordAndTheDeathAsTheyWere() throws {
        let expected = try endingWithoutCapture("null-dereference")
        let sentry = try Sentry()

        let missing = try Scratch.directory("crash-time-missing")
        let run = try crash("null-dereference", records: missing + "/records", sentry: sentry, uploader: missing + "/crash-uploader", grace: 2)
        XCTAssertEqual(run.child.ending, expected)
        XCTAssertEqual(run.launch["captureInstalled"] as? Bool, true)
        let errors = try XCTUnwrap(run.launch["errors"] as? [String])
        XCTAssertEqual(errors.count, 1)
        XCTAssertTrue(errors.first?.hasPrefix("crash-time upload is off: \(missing)/crash-uploader: No such file or directory") == true, "\(errors)")

        let broken = try Scratch.directory("crash-time-broken")
        let notExecutable = broken + "/crash-uploader"
        try Data("not a program\n".utf8).write(to: URL(fileURLWithPath: notExecutable))
        XCTAssertEqual(chmod(notExecutable, 0o755), 0)
        let second = try crash("null-dereference", records: broken + "/records", sentry: sentry, uploader: notExecutable, grace: 2)
        XCTAssertEqual(second.child.ending, expected)
        XCTAssertEqual(second.launch["errors"] as? [String], [])
        XCTAssertTrue(second.stderr.contains("crashcapture: the crash-time uploader did not start (execve: ENOEXEC"), second.stderr)

        for directory in [missing + "/records", broken + "/records"] {
            let names = try records(directory)
            XCTAssertEqual(names.count, 1, "\(directory): \(names)")
            let record = try CrashRecordReader.read(path: directory + "/" + (names.first ?? ""))
            XCTAssertTrue(record.isComplete)
            XCTAssertEqual(record.signal?.number, SIGSEGV)
        }
        XCTAssertFalse(sentry.waitForEnvelopes(1, timeout: 2))
    }
}
