// ChildProcessTests.swift — ChildProcess against real programs (/bin/sh, cat, env, sleep, setsid).
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class ChildProcessTests: XCTestCase {
    let sh = "/bin/sh"

    func tool(_ name: String) throws -> String {
        try XCTUnwrap(Tools.find(name), "\(name) not found")
    }

    func contents(_ path: String) -> Data { FileManager.default.contents(atPath: path) ?? Data() }

    /// Whether `pid` is a live process: a killed orphan may stay a zombie until its new parent
    /// reaps it, so kill(pid, 0) alone would say yes.
    func isRunning(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(close, offsetBy: 2)...].prefix(1)
        return state != "Z" && state != "X"
    }

    // MARK: how a child ends

    func testExitStatusesComeBackExactly() throws {
        for code: Int32 in [0, 1, 7, 42, 255] {
            let child = try ChildProcess.run(sh, ["-c", "exit \(code)"], timeout: 30)
            XCTAssertEqual(child.ending, .exited(code))
            XCTAssertGreaterThan(child.pid, 0)
        }
    }

    func testDeathBySignalNamesTheSignal() throws {
        for signal in [SIGSEGV, SIGABRT, SIGTERM, SIGKILL, SIGBUS] {
            let child = try ChildProcess.run(sh, ["-c", "kill -\(signal) $$"], timeout: 30)
            XCTAssertEqual(child.ending, .signaled(signal), "kill -\(signal)")
        }
    }

    func testAChildStillRunningAtTheDeadlineIsKilledAndReportedAsTimedOut() throws {
        let child = try ChildProcess.run(try tool("sleep"), ["30"], timeout: 0.5)
        XCTAssertEqual(child.ending, .timedOut)
        XCTAssertGreaterThanOrEqual(child.seconds, 0.5)
        XCTAssertLessThan(child.seconds, 10)
        // Reaped: no such process any more (not even a zombie of ours).
        XCTAssertEqual(kill(child.pid, 0), -1)
        XCTAssertEqual(errno, ESRCH)
    }

    func testSecondsMeasureTheChildsRunTime() throws {
        let child = try ChildProcess.run(try tool("sleep"), ["0.3"], timeout: 30)
        XCTAssertEqual(child.ending, .exited(0))
        XCTAssertGreaterThanOrEqual(child.seconds, 0.3)
        XCTAssertLessThan(child.seconds, 10)
    }

    /// The precise wait (a pidfd where the kernel has them) ends the same ways as the polled one:
    /// an exit status, a signal, the deadline.
    func testThePreciseWaitEndsAsThePolledOne() throws {
        let descriptor = ChildProcess.pidDescriptor(getpid())
        XCTAssertGreaterThanOrEqual(descriptor, 0, "pidfd_open on this kernel and C library")
        if descriptor >= 0 { close(descriptor) }
        XCTAssertEqual(try ChildProcess.run(sh, ["-c", "exit 7"], timeout: 30, precise: true).ending, .exited(7))
        XCTAssertEqual(try ChildProcess.run(sh, ["-c", "kill -\(SIGSEGV) $$"], timeout: 30, precise: true).ending, .signaled(SIGSEGV))
        let slept = try ChildProcess.run(try tool("sleep"), ["0.3"], timeout: 30, precise: true)
        XCTAssertEqual(slept.ending, .exited(0))
        XCTAssertGreaterThanOrEqual(slept.seconds, 0.3)
        let late = try ChildProcess.run(try tool("sleep"), ["30"], timeout: 0.5, precise: true)
        XCTAssertEqual(late.ending, .timedOut)
        XCTAssertGreaterThanOrEqual(late.seconds, 0.5)
        XCTAssertLessThan(late.seconds, 10)
    }

    func testAStartedChildCanBeSignalledBeforeItIsWaitedFor() throws {
        let running = try ChildProcess.start(try tool("sleep"), ["30"])
        XCTAssertEqual(kill(running.pid, 0), 0, "running")
        kill(running.pid, SIGTERM)
        let child = running.wait(timeout: 30)
        XCTAssertEqual(child.ending, .signaled(SIGTERM))
        XCTAssertEqual(child.pid, running.pid)
    }

    // MARK: spawning

    func testAMissingExecutableThrowsSpawnErrorWithENOENT() throws {
        let path = try Scratch.directory("missing") + "/no-such-program"
        XCTAssertThrowsError(try ChildProcess.run(path, [], timeout: 10)) { error in
            let spawn = error as? ChildProcess.SpawnError
            XCTAssertEqual(spawn?.errno, ENOENT, "\(error)")
            XCTAssertEqual(spawn?.path, path)
            XCTAssertTrue("\(error)".contains(path) && "\(error)".contains("No such file"), "\(error)")
        }
    }

    func testAFileThatIsNotExecutableThrowsSpawnErrorWithEACCES() throws {
        let path = try Scratch.directory("not-executable") + "/script"
        try "#!/bin/sh\nexit 0\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o644)
        XCTAssertThrowsError(try ChildProcess.run(path, [], timeout: 10)) { error in
            XCTAssertEqual((error as? ChildProcess.SpawnError)?.errno, EACCES, "\(error)")
        }
    }

    func testArgumentsArriveVerbatim() throws {
        let out = try Scratch.directory("args") + "/stdout"
        let arguments = ["a b", "", "c'd", "\"quoted\"", "$HOME", "ünïcødé", "--flag=x"]
        let child = try ChildProcess.run(sh, ["-c", #"for a in "$@"; do printf '[%s]\n' "$a"; done"#, "sh"] + arguments,
                                         stdout: out, timeout: 30)
        XCTAssertEqual(child.ending, .exited(0))
        XCTAssertEqual(String(decoding: contents(out), as: UTF8.self), arguments.map { "[\($0)]\n" }.joined())
    }

    // MARK: output and input

    /// 1 MiB and a bit of random bytes through stdout and stderr at once: far more than a pipe
    /// holds (64 KiB), byte for byte.
    func testLargeStdoutAndStderrAreCapturedWhole() throws {
        let directory = try Scratch.directory("large")
        var generator = SystemRandomNumberGenerator()
        let stdoutBytes = Data((0..<(1 << 20) + 12_345).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let stderrBytes = Data((0..<(1 << 20) + 777).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try stdoutBytes.write(to: URL(fileURLWithPath: directory + "/a"))
        try stderrBytes.write(to: URL(fileURLWithPath: directory + "/b"))
        let child = try ChildProcess.run(sh, ["-c", #"cat "$1"; cat "$2" >&2"#, "sh", directory + "/a", directory + "/b"],
                                         stdout: directory + "/stdout", stderr: directory + "/stderr", timeout: 60)
        XCTAssertEqual(child.ending, .exited(0))
        XCTAssertEqual(contents(directory + "/stdout"), stdoutBytes)
        XCTAssertEqual(contents(directory + "/stderr"), stderrBytes)
    }

    func testOutputFilesAreTruncatedNotAppendedTo() throws {
        let out = try Scratch.directory("truncate") + "/stdout"
        try String(repeating: "old output\n", count: 100).write(toFile: out, atomically: true, encoding: .utf8)
        XCTAssertEqual(try ChildProcess.run(sh, ["-c", "echo new"], stdout: out, timeout: 30).ending, .exited(0))
        XCTAssertEqual(String(decoding: contents(out), as: UTF8.self), "new\n")
    }

    func testStdinIsEmptySoAChildReadingItDoesNotWait() throws {
        let out = try Scratch.directory("stdin") + "/stdout"
        let child = try ChildProcess.run(try tool("cat"), [], stdout: out, timeout: 10)
        XCTAssertEqual(child.ending, .exited(0))
        XCTAssertEqual(contents(out), Data())
    }

    // MARK: environment

    func testAGivenEnvironmentIsExactlyTheChildsEnvironment() throws {
        let out = try Scratch.directory("env") + "/stdout"
        let environment = ["CC_TEST_ONE": "value with spaces = and equals", "CC_TEST_TWO": "ünïcødé", "CC_EMPTY": ""]
        let child = try ChildProcess.run(try tool("env"), [], environment: environment, stdout: out, timeout: 30)
        XCTAssertEqual(child.ending, .exited(0))
        let lines = String(decoding: contents(out), as: UTF8.self).split(separator: "\n").map(String.init)
        XCTAssertEqual(Set(lines), Set(environment.map { "\($0.key)=\($0.value)" }), "nothing inherited, nothing lost")
    }

    func testWithoutAnEnvironmentTheChildInheritsOurs() throws {
        let out = try Scratch.directory("inherit") + "/stdout"
        let child = try ChildProcess.run(try tool("env"), [], stdout: out, timeout: 30)
        XCTAssertEqual(child.ending, .exited(0))
        let lines = Set(String(decoding: contents(out), as: UTF8.self).split(separator: "\n").map(String.init))
        let ours = ProcessInfo.processInfo.environment
        XCTAssertFalse(ours.isEmpty)
        for (key, value) in ours where !value.contains("\n") {
            XCTAssertTrue(lines.contains("\(key)=\(value)"), "\(key) not inherited")
        }
        XCTAssertFalse(lines.contains { $0.hasPrefix(ChildProcess.runTokenVariable + "=") }, "no run token without ownProcessGroup")
    }

    // MARK: process groups

    func testWithOwnProcessGroupTheChildLeadsANewGroupAndCarriesARunToken() throws {
        let out = try Scratch.directory("group") + "/stdout"
        // Field 5 of /proc/self/stat is the process group; the token is in the environment.
        let child = try ChildProcess.run(sh, ["-c", #"cut -d' ' -f5 /proc/$$/stat; echo "$CRASHCAPTURE_CHILD_RUN_TOKEN""#],
                                         stdout: out, timeout: 30, ownProcessGroup: true)
        XCTAssertEqual(child.ending, .exited(0))
        let lines = String(decoding: contents(out), as: UTF8.self).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2, "\(lines)")
        XCTAssertEqual(lines.first.flatMap { pid_t($0) }, child.pid, "the child is its group's leader")
        XCTAssertNotEqual(child.pid, getpgrp())
        XCTAssertTrue(lines.last?.hasPrefix("\(getpid())-") == true, "\(lines)")
        XCTAssertEqual(child.leftRunning, [])
    }

    func testADescendantLeftRunningInTheGroupIsReportedAndKilled() throws {
        let child = try ChildProcess.run(sh, ["-c", "sleep 30 & exit 0"], timeout: 30, ownProcessGroup: true, leftoverGrace: 0.3)
        XCTAssertEqual(child.ending, .exited(0))
        XCTAssertEqual(child.leftRunning.map(\.command), ["sleep"])
        XCTAssertEqual(ChildProcess.survivors(group: child.pid, token: nil), [])
        for leftover in child.leftRunning { XCTAssertFalse(isRunning(leftover.pid), "\(leftover) killed") }
    }

    func testADescendantThatLeftTheGroupIsFoundByItsRunToken() throws {
        let setsid = try tool("setsid")
        let child = try ChildProcess.run(sh, ["-c", "\(setsid) sleep 30 & sleep 0.2; exit 0"], timeout: 30,
                                         ownProcessGroup: true, leftoverGrace: 0.3)
        XCTAssertEqual(child.ending, .exited(0))
        XCTAssertEqual(child.leftRunning.map(\.command), ["sleep"], "found outside the group by its environment")
        for leftover in child.leftRunning { XCTAssertFalse(isRunning(leftover.pid), "\(leftover) killed") }
    }

    func testDescendantsThatEndWithinTheGraceAreNotLeftovers() throws {
        let child = try ChildProcess.run(sh, ["-c", "sleep 0.2 & exit 0"], timeout: 30, ownProcessGroup: true, leftoverGrace: 5)
        XCTAssertEqual(child.ending, .exited(0))
        XCTAssertEqual(child.leftRunning, [])
    }

    func testATimedOutGroupIsKilledWhole() throws {
        // The shell waits on a grandchild; at the deadline the whole group gets SIGKILL.
        let child = try ChildProcess.run(sh, ["-c", "sleep 30 & wait"], timeout: 0.5, ownProcessGroup: true, leftoverGrace: 2)
        XCTAssertEqual(child.ending, .timedOut)
        XCTAssertEqual(child.leftRunning, [], "the grandchild died with its group")
        XCTAssertEqual(ChildProcess.survivors(group: child.pid, token: nil), [])
    }
}

final class ConversationTests: XCTestCase {
    /// A long-lived child answers line by line, keeps its state between lines, and ends when the
    /// conversation does (end of input), leaving no zombie.
    func testALongLivedChildAnswersLineByLineAndEndsWithTheConversation() throws {
        // sed -u: unbuffered, one answer per line, the line number showing that the same process
        // answers every line.
        var conversation: ChildProcess.Conversation? = try ChildProcess.Conversation(
            "/bin/sed", ["-u", "-n", "s/^/line /; =; p"], environment: [:])
        XCTAssertTrue(conversation!.send("first"))
        XCTAssertEqual(conversation!.readLine(), "1")
        XCTAssertEqual(conversation!.readLine(), "line first")
        XCTAssertTrue(conversation!.send("second"))
        XCTAssertEqual(conversation!.readLine(), "2")
        XCTAssertEqual(conversation!.readLine(), "line second")
        // Our children, running or zombie: every thread's /proc children list, and which are sed.
        let sedChildren = { () -> [String] in
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            let pids = tasks.flatMap { task in
                ((try? String(contentsOfFile: "/proc/self/task/\(task)/children", encoding: .utf8)) ?? "").split(separator: " ").map(String.init)
            }
            return pids.filter { ((try? String(contentsOfFile: "/proc/\($0)/comm", encoding: .utf8)) ?? "").hasPrefix("sed") }
        }
        XCTAssertEqual(sedChildren().count, 1, "sed runs")
        conversation = nil
        XCTAssertEqual(sedChildren(), [], "sed ended and was reaped")
    }

    /// A child that ends early: its output ends (nil), and writing to it fails instead of
    /// killing us with SIGPIPE (Swift programs ignore it).
    func testAChildThatIsGoneAnswersNil() throws {
        let conversation = try ChildProcess.Conversation("/bin/true", [], environment: [:])
        XCTAssertNil(conversation.readLine())
        XCTAssertThrowsError(try ChildProcess.Conversation("/nonexistent/tool", [], environment: [:]))
    }
}
