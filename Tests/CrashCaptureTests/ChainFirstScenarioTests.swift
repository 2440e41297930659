// ChainFirstScenarioTests.swift — real child processes for the chain-first core: previous handlers
// run as the kernel would run them, signals the program survives, other threads stopped, limits,
// and every run judged against the same scenario with CRASHCAPTURE_DISABLE=1.
import CrashCapture
import CrashScenarios
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class ChainFirstScenarioTests: XCTestCase {
    // MARK: Other threads

    func testAWorkerCrashEndsTheProcessWhileMainSleepsAndMainIsRecordedAsStopped() throws {
        let run = try Harness.run("main-returns-after-worker-crash")
        XCTAssertEqual(run.outcome.ending, .signal(SIGSEGV))
        XCTAssertEqual(run.reference?.ending, .signal(SIGSEGV))
        XCTAssertFalse(run.outcome.stderr.contains("nanosleep failed"), "main's sleep was cut short (EINTR): \(run.outcome.stderr)")
        let record = try XCTUnwrap(run.record)
        XCTAssertTrue(record.isComplete)
        let main = try XCTUnwrap(record.threads.first { $0.tid == record.process?.pid }, "the main thread is listed")
        XCTAssertFalse(main.crashed)
        XCTAssertTrue(main.stopped, "main was parked while the record was written")
        XCTAssertTrue(Harness.symbols(main, in: record).contains { $0.contains("nanosleep") || $0.contains("cch_sleep_once") },
                      "main's stack shows where it was sleeping: \(Harness.symbols(main, in: record).prefix(6))")
    }

    func testAThreadThatBlocksEverySignalIsStoppedByThePtraceHelperWithItsRegistersAndFrames() throws {
        let run = try Harness.run("crash-with-thread-blocking-signals")
        XCTAssertEqual(run.outcome.ending, .signal(SIGSEGV))
        XCTAssertEqual(run.outcome.leftRunning.count, 0, "the helper must not outlive the crash: \(run.outcome.leftRunning)")
        let record = try XCTUnwrap(run.record)
        let blocking = try XCTUnwrap(record.threads.first { $0.ptraced }, "\(record.threads.map { ($0.tid, $0.name) })")
        XCTAssertFalse(blocking.notStopped)
        XCTAssertFalse(blocking.registers.isEmpty)
        // Its registers are where it was stopped: the pc is its innermost frame.
        let pc = blocking.registers.first { $0.name == "rip" || $0.name == "pc" }?.value
        XCTAssertEqual(pc, blocking.frames.first)
        let names = Harness.symbols(blocking, in: record)
        XCTAssertTrue(names.contains { $0.contains("cch_blocking_thread") }, "\(names)")
        // Parked threads carry their registers too.
        for thread in record.threads where thread.stopped { XCTAssertFalse(thread.registers.isEmpty, "thread \(thread.tid)") }
    }

    func testWhenPtraceIsRefusedTheThreadIsListedWithoutFramesAndTheCrashIsUnchanged() throws {
        let run = try Harness.run("thread-blocking-signals-ptrace-refused")
        XCTAssertEqual(run.outcome.ending, .signal(SIGSEGV))
        XCTAssertEqual(run.outcome.leftRunning.count, 0)
        let record = try XCTUnwrap(run.record)
        XCTAssertTrue(record.isComplete)
        let refused = record.threads.filter(\.ptraceRefused)
        XCTAssertEqual(refused.count, 1, "\(record.threads.map { ($0.tid, $0.name) })")
        XCTAssertEqual(refused.first?.frames, [])
        XCTAssertTrue(record.notes.contains { $0.contains("could not ptrace 1 thread") && $0.contains("EPERM") }, "\(record.notes)")
    }

    func testEveryOneOfAHundredThreadsInBlockingCallsIsStoppedAndUnwound() throws {
        let run = try Harness.run("hundred-threads-blocking-calls")
        XCTAssertEqual(run.outcome.ending, .signal(SIGSEGV))
        XCTAssertEqual(run.outcome.leftRunning.count, 0)
        let record = try XCTUnwrap(run.record)
        let others = record.threads.filter { !$0.crashed }
        XCTAssertEqual(others.count, 100)
        // Odd-numbered threads block every signal, so only ptrace can stop them, except those
        // in sigsuspend (index % 12 == 11), whose empty mask lets the stop signal in.
        let blocking = (0..<100).filter { $0 % 2 == 1 && $0 % 12 != 11 }.count
        XCTAssertEqual(others.filter(\.ptraced).count, blocking)
        XCTAssertEqual(others.filter(\.stopped).count, 100 - blocking)
        for thread in others {
            XCTAssertFalse(thread.frames.isEmpty, "thread \(thread.tid)")
            XCTAssertTrue(Harness.symbols(thread, in: record).contains { $0.contains("cch_blocker") }, "thread \(thread.tid)")
        }
    }

    func testEveryThreadIsStoppedBeforeTheRecordIsCreatedEvenBeyondTheThreadsRecorded() throws {
        // 1,100 threads exit(0) the moment a file appears in the record directory.
        let run = try Harness.run("more-threads-than-recorded")
        XCTAssertEqual(run.outcome.ending, .signal(SIGSEGV), "a thread left running would have exited 0")
        let record = try XCTUnwrap(run.record)
        XCTAssertTrue(record.isComplete)
        let others = record.threads.filter { !$0.crashed }
        XCTAssertEqual(others.count, 1024)
        XCTAssertTrue(others.allSatisfy { $0.stopped && !$0.frames.isEmpty }, "every recorded thread was parked and unwound")
        XCTAssertTrue(record.notes.contains { $0.contains("the rest were stopped but left out") }, "\(record.notes)")
    }

    /// The truth for other threads' stacks: elfutils' eu-stack, attached to the same process just
    /// before it crashes, sees the same frames for every thread (parked or ptraced) as the record.
    func testEveryThreadsFramesMatchWhatEuStackSeesInTheSameProcess() throws {
        guard let euStack = ["/usr/bin/eu-stack", "/usr/local/bin/eu-stack"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("eu-stack (elfutils) is not installed; scripts/setup.sh installs it")
        }
        let directory = try Harness.scratchDirectory("eu-stack")
        let pause = directory + "/pause"
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment["CRASH_HARNESS_PAUSE_BEFORE_CRASH"] = pause
        let harness = try ChildProcess.start(Harness.debug, ["run", "hundred-threads-blocking-calls", "--dir", directory + "/records"],
                                             environment: environment)
        var ended: ChildProcess?
        defer { if ended == nil { kill(harness.pid, SIGKILL); _ = harness.wait() } }
        for _ in 0..<3000 where !FileManager.default.fileExists(atPath: pause + ".ready") { usleep(10_000) }
        let pid = try XCTUnwrap(Int32(String(contentsOfFile: pause + ".ready", encoding: .utf8)))

        let out = directory + "/eu-stack.txt"
        let stack = try ChildProcess.run(euStack, ["-p", String(pid)], stdout: out, stderr: directory + "/eu-stack.err", timeout: 60)
        XCTAssertEqual(stack.ending, .exited(0), (try? String(contentsOfFile: directory + "/eu-stack.err", encoding: .utf8)) ?? "")
        // "TID 1234:" then "#0  0x00007f... name" lines.
        var seen: [Int32: [UInt64]] = [:]
        var current: Int32?
        for line in try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n") {
            if line.hasPrefix("TID "), let tid = Int32(line.dropFirst(4).prefix { $0.isNumber }) { current = tid; seen[tid] = [] }
            else if line.hasPrefix("#"), let current, let hex = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first,
                    hex.hasPrefix("0x"), let address = UInt64(hex.dropFirst(2), radix: 16) { seen[current, default: []].append(address) }
        }
        XCTAssertTrue(FileManager.default.createFile(atPath: pause + ".go", contents: Data()))
        ended = harness.wait(timeout: 300)
        XCTAssertEqual(ended?.ending, .signaled(SIGSEGV))

        let files = try FileManager.default.contentsOfDirectory(atPath: directory + "/records").filter { $0.hasSuffix(".ccrec") }
        let record = try CrashRecordReader.read(path: directory + "/records/" + (files.first ?? "none"))
        let others = record.threads.filter { !$0.crashed }
        XCTAssertEqual(others.count, 100)
        for thread in others {
            let truth = try XCTUnwrap(seen[thread.tid], "eu-stack did not list thread \(thread.tid)")
            XCTAssertFalse(thread.frames.isEmpty, "thread \(thread.tid)")
            let count = min(thread.frames.count, truth.count)
            // Callers: the same return addresses, frame for frame.
            XCTAssertEqual(Array(thread.frames[1..<count]), Array(truth[1..<count]), "thread \(thread.tid) (ptraced: \(thread.ptraced))")
            // Frame 0: the same instruction for a ptraced thread; for a parked one the signal
            // context may point at the restarted syscall instruction, just before.
            if thread.ptraced {
                XCTAssertEqual(thread.frames[0], truth[0], "thread \(thread.tid)")
            } else {
                XCTAssertLessThanOrEqual(max(thread.frames[0], truth[0]) - min(thread.frames[0], truth[0]), 16, "thread \(thread.tid)")
            }
        }
    }

    // MARK: Frames

    func testACallThroughANullFunctionPointerKeepsItsCallers() throws {
        let run = try Harness.run("null-function-pointer")
        let thread = try XCTUnwrap(run.record?.crashedThread)
        let record = try XCTUnwrap(run.record)
        XCTAssertEqual(thread.frames.first, 0, "frame 0 is the pc the call jumped to")
        let symbols = Harness.symbols(thread, in: record)
        XCTAssertGreaterThan(symbols.count, 6, "the unwind goes on past pc 0: \(symbols)")
        XCTAssertTrue(symbols.dropFirst().first?.contains("cch_call_null_function_pointer") == true, "frame 1 is the caller: \(symbols.prefix(4))")
        XCTAssertEqual(symbols.compactMap { name in levelChain.first { name.contains($0) } }, levelChain,
                       "the level chain below the caller: \(symbols.prefix(12))")
        // No frame is lost above the chain: in the debug harness the scenario's closure (which
        // called cch_call_null_function_pointer) sits between it and level5, as it does in the
        // null-dereference record.
        XCTAssertTrue(symbols.count > 3 && symbols[2].contains("closure") && symbols[3].contains("level5"),
                      "frames 2 and 3 are the scenario's closure and level5: \(symbols.prefix(5))")
    }

    func testARunawayRecursionKeepsTheRecursingFrameOnTopAndTheLevelChainAtTheBottom() throws {
        for name in ["stack-overflow-main", "stack-overflow-thread"] {
            let run = try Harness.run(name)
            let record = try XCTUnwrap(run.record, name)
            let thread = try XCTUnwrap(record.crashedThread, name)
            XCTAssertGreaterThan(thread.omittedFrames, 0, name)
            let symbols = Harness.symbols(thread, in: record)
            XCTAssertTrue(symbols.prefix(5).allSatisfy { $0.contains("cch_recurse") }, "\(name): \(symbols.prefix(5))")
            // Below the recursion: the function that started it, then level5 … level1.
            let last = try XCTUnwrap(symbols.lastIndex { $0.contains("cch_recurse") }, name)
            let tail = Array(symbols[(last + 1)...])
            XCTAssertTrue(tail.first?.contains("cch_stack_overflow") == true, "\(name): \(tail.prefix(4))")
            XCTAssertEqual(tail.compactMap { frame in levelChain.first { frame.contains($0) } }, levelChain,
                           "\(name): the level chain at the bottom: \(tail.prefix(12))")
        }
    }

    // MARK: Previous handlers, chained first

    func testAPreviousHandlerRunsWithItsOwnFlagsMaskAndStackAsTheKernelWouldRunIt() throws {
        let run = try Harness.run("previous-handler-flags")
        let reference = try XCTUnwrap(run.reference)
        XCTAssertEqual(run.outcome.stdout, reference.stdout, "the handler saw what it sees without CrashCapture")
        for line in ["running inside the alternate stack: no", "sigaltstack says SS_ONSTACK: no",
                     "disposition already SIG_DFL (SA_RESETHAND): yes", "SIGUSR1 blocked: yes", "SIGPROF blocked: yes",
                     "si_code SEGV_MAPERR at address 0: yes", "errno 77"] {
            XCTAssertTrue(run.outcome.stdout.contains("previous-handler-flags: \(line)\n"), "\(line) in \(run.outcome.stdout)")
        }
        XCTAssertEqual(run.outcome.ending, .signal(SIGSEGV))
        XCTAssertEqual(run.outcome.recordFiles.count, 1)
        XCTAssertTrue(run.record?.isComplete == true)
    }

    func testAHandlerThatRepairsTheFaultLetsTheProgramGoOnWithoutARecord() throws {
        let run = try Harness.run("recovering-handler")
        XCTAssertEqual(run.outcome.ending, .exit(0))
        XCTAssertEqual(run.outcome.stdout, "recovering handler repaired the page\nrecovered 42\n")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: run.directory).filter { $0.contains(".ccrec") }, [])
    }

    func testAnIgnoredSIGTRAPSentByTheProcessIsStillIgnored() throws {
        let run = try Harness.run("sigtrap-ignored")
        XCTAssertEqual(run.outcome.ending, .exit(0))
        XCTAssertEqual(run.outcome.stdout, "still running after SIGTRAP\n")
        XCTAssertEqual(run.outcome.recordFiles, [])
    }

    func testASurvivedSIGBUSLeavesCaptureCleanForTheCrashThatFollows() throws {
        for name in ["survives-then-crashes", "survives-then-crashes-thread"] {
            let run = try Harness.run(name)
            XCTAssertEqual(run.outcome.ending, .signal(SIGSEGV), name)
            XCTAssertLessThan(run.outcome.seconds, 10, "\(name): no wait for a record that never comes")
            XCTAssertEqual(run.outcome.recordFiles.count, 1, "\(name): only the SIGSEGV is recorded")
            XCTAssertEqual(run.record?.signal?.number, SIGSEGV, name)
            XCTAssertTrue(run.record?.isComplete == true, name)
        }
    }

    func testAPreviousHandlerStillRunsWhenAnotherThreadHoldsTheLoaderLock() throws {
        let run = try Harness.run("crash-while-dl-iterate-phdr")
        XCTAssertLessThan(run.outcome.seconds, 4, "well under the 10 s watchdog")
        XCTAssertTrue(run.outcome.stderr.contains("previous handler ran while the loader lock was held"), run.outcome.stderr)
        let record = try XCTUnwrap(run.record)
        XCTAssertTrue(record.isComplete)
        let symbols = Harness.symbols(try XCTUnwrap(record.crashedThread), in: record)
        XCTAssertTrue(symbols.contains { $0.contains("level1") }, "frames through the level chain: \(symbols.prefix(10))")
    }

    // MARK: Processes

    func testAVforkChildsCrashDoesNotDisableCaptureInItsParent() throws {
        let run = try Harness.run("vfork-child-crash")
        XCTAssertEqual(run.outcome.ending, .signal(SIGSEGV))
        XCTAssertLessThan(run.outcome.seconds, 10, "the parent's crash does not wait for the child's")
        XCTAssertTrue(run.outcome.stdout.contains("vfork child ended by signal \(SIGSEGV)"), run.outcome.stdout)
        let record = try XCTUnwrap(run.record, "the parent's record")
        XCTAssertTrue(record.isComplete)
        XCTAssertEqual(record.process.map { Int($0.pid) }, Int(run.outcome.pid))
        for path in run.outcome.childRecordFiles {
            let child = try CrashRecordReader.read(path: path)
            XCTAssertNotEqual(child.process?.pid, record.process?.pid)
            XCTAssertEqual(child.process?.ppid, record.process?.pid)
        }
    }

    // MARK: Limits

    func testACrashWithEveryFileDescriptorInUseIsStillRecorded() throws {
        let run = try Harness.run("fd-limit")
        XCTAssertEqual(run.outcome.ending, .signal(SIGSEGV))
        let record = try XCTUnwrap(run.record)
        XCTAssertTrue(record.isComplete)
        XCTAssertFalse(record.images.isEmpty, "images were read although no fd could be opened")
    }

    func testAFileSizeLimitDoesNotTurnTheCrashIntoSIGXFSZ() throws {
        let run = try Harness.run("fsize-limit")
        XCTAssertEqual(run.outcome.ending, .signal(SIGSEGV), "not SIGXFSZ (\(SIGXFSZ))")
        let record = try XCTUnwrap(run.record)
        XCTAssertTrue(record.isComplete)
        let path = try XCTUnwrap(run.outcome.ownRecordFiles.first)
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)
        XCTAssertGreaterThan(size.intValue, 1024, "the record is written past the soft limit")
    }

    func testAHardFileSizeLimitStillKeepsTheSignalTheCrashedThreadsFramesAndTheMainImage() throws {
        let run = try Harness.run("fsize-limit-hard")
        XCTAssertEqual(run.outcome.ending, .signal(SIGSEGV), "not SIGXFSZ (\(SIGXFSZ))")
        let record = try XCTUnwrap(run.record)
        XCTAssertEqual(record.signal?.number, SIGSEGV)
        let thread = try XCTUnwrap(record.crashedThread)
        XCTAssertGreaterThan(thread.frames.count, levelChain.count)
        // The main executable's image comes right after the crashed thread, so the cut record
        // is symbolicated from what it holds (by the runner, with the record's images only).
        let main = try XCTUnwrap(record.images.first { $0.isMainExecutable }, "no main image in the cut record")
        XCTAssertEqual(main.path, Harness.debug)
        XCTAssertFalse(main.buildID.isEmpty)
        XCTAssertTrue(run.report.frames.contains { $0.contains("level1") }, "\(run.report.frames.prefix(10))")
        let path = try XCTUnwrap(run.outcome.ownRecordFiles.first)
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)
        XCTAssertLessThanOrEqual(size.intValue, 2048)
    }

    func testNoAsyncSignalHandlerOfTheProgramRunsAfterTheCrash() throws {
        let run = try Harness.run("async-signals-during-record")
        XCTAssertEqual(run.outcome.stdout, "SIGPROF, SIGUSR1 and SIGCHLD arriving; crashing\n")
        XCTAssertEqual(run.reference?.stdout, run.outcome.stdout)
        XCTAssertTrue(run.record?.isComplete == true)
    }

    // MARK: The Swift backtracer

    func testTheBacktracerJSONReportIsCompleteAndListsTheSameFramesAsWithoutCrashCapture() throws {
        let run = try Harness.run("backtracer-json")
        let reference = try XCTUnwrap(run.reference)
        var failures: [String] = []
        let mine = try XCTUnwrap(BacktracerOutput.loadReport(in: run.directory, failures: &failures, label: "run"), "\(failures)")
        let theirs = try XCTUnwrap(BacktracerOutput.loadReport(in: reference.directory, failures: &failures, label: "reference"), "\(failures)")
        let frames = BacktracerOutput.crashedFrames(mine)
        XCTAssertEqual(frames, BacktracerOutput.crashedFrames(theirs))
        XCTAssertTrue(frames.first?.contains("cch_null_dereference") == true, "\(frames.prefix(3))")
        XCTAssertTrue(frames.contains { $0.contains("level1") }, "\(frames)")
        XCTAssertTrue(run.record?.isComplete == true)
    }

    func testNoSwiftBacktraceProcessIsLeftAfterTheBacktracerScenarios() throws {
        for name in ["swift-backtracer", "backtracer-json"] {
            let run = try Harness.run(name)
            XCTAssertEqual(run.outcome.leftRunning.filter { $0.command.hasPrefix("swift-backtrac") }, [], name)
            XCTAssertEqual(run.reference?.leftRunning.filter { $0.command.hasPrefix("swift-backtrac") }, [], "\(name) reference run")
            // And none anywhere that carries the run token of a child of this test process
            // (the token starts with our pid), in case one left the process group.
            XCTAssertEqual(Self.strayBacktracers(), [], name)
        }
    }

    /// Live swift-backtrace processes whose environment holds a run token of this process's children.
    static func strayBacktracers() -> [String] {
        let prefix = Array("\(ChildProcess.runTokenVariable)=\(getpid())-".utf8)
        return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry -> String? in
            guard let pid = Int32(entry),
                  let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8), comm.hasPrefix("swift-backtrac"),
                  let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), !stat.contains(") Z "),
                  let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return nil }
            return [UInt8](environ).split(separator: 0).contains { $0.starts(with: prefix) } ? "swift-backtrace (\(pid))" : nil
        }
    }

    func testTheSwiftBacktracersTextIsTheSameAsWithoutCrashCaptureOnceAddressesAreTakenOut() throws {
        let run = try Harness.run("swift-backtracer")
        let reference = try XCTUnwrap(run.reference)
        let mine = BacktracerOutput.normaliseText(CrashLine.removed(from: run.outcome.stderr))
        XCTAssertEqual(mine, BacktracerOutput.normaliseText(reference.stderr))
        XCTAssertTrue(mine.contains("Registers:"), mine)
        XCTAssertTrue(mine.contains("Backtrace took ?s"), "the backtracer finished its report: \(mine.suffix(300))")
    }
}

/// The runner's judging, on synthetic outcomes and small real children: these need no core.
final class ScenarioRunnerJudgingTests: XCTestCase {
    private func outcome(_ scenario: String, ending: Scenario.Ending?, stdout: String = "", stderr: String = "",
                         reference: (Scenario.Ending?, String, String)?) -> RunOutcome {
        RunOutcome(scenario: scenario, ending: ending, seconds: 0.01, stderr: stderr, stdout: stdout, recordFiles: [],
                   ownRecordFiles: [], childRecordFiles: [], directory: "/nonexistent", pid: 1, leftRunning: [],
                   reference: reference.map {
                       ProcessOutcome(ending: $0.0, seconds: 0.01, stdout: $0.1, stderr: $0.2, directory: "/nonexistent-reference",
                                      pid: 2, leftRunning: [])
                   })
    }

    func testARunThatEndsDifferentlyFromItsReferenceRunFails() throws {
        let scenario = try XCTUnwrap(Scenarios.named("clean-exit"))
        let report = ScenarioRunner.verify(outcome("clean-exit", ending: .exit(0), reference: (.signal(SIGSEGV), "", "")),
                                           scenario: scenario, symbolicator: Harness.symbolicator, debugHarness: true)
        XCTAssertEqual(report.failures.count, 1, "\(report.failures)")
        XCTAssertTrue(report.failures.first?.contains("the reference run (CRASHCAPTURE_DISABLE=1) with SIGSEGV") == true, "\(report.failures)")
    }

    func testARunWhoseStdoutOrStderrDiffersFromItsReferenceRunFails() throws {
        let scenario = try XCTUnwrap(Scenarios.named("clean-exit"))
        let report = ScenarioRunner.verify(outcome("clean-exit", ending: .exit(0), stdout: "a\nb\n", stderr: "late marker\n",
                                                   reference: (.exit(0), "a\nc\n", "")),
                                           scenario: scenario, symbolicator: Harness.symbolicator, debugHarness: true)
        XCTAssertEqual(report.failures.count, 2, "\(report.failures)")
        XCTAssertTrue(report.failures.contains { $0.hasPrefix("stdout differs") && $0.contains("line 2") }, "\(report.failures)")
        XCTAssertTrue(report.failures.contains { $0.hasPrefix("stderr differs") && $0.contains("late marker") }, "\(report.failures)")
    }

    func testAMatchingReferenceRunPasses() throws {
        let scenario = try XCTUnwrap(Scenarios.named("clean-exit"))
        let report = ScenarioRunner.verify(outcome("clean-exit", ending: .exit(0), stdout: "x\n", reference: (.exit(0), "x\n", "")),
                                           scenario: scenario, symbolicator: Harness.symbolicator, debugHarness: true)
        XCTAssertEqual(report.failures, [])
    }

    func testTheBacktracerNormaliserKeepsStructureButNotAddressesOrTimes() {
        let a = "*** Signal 11: Backtracing from 0x5593d31ee306... done ***\n 1 [ra] 0x00005593d323a6c9\nrax 0x0000000000000000  0\nBacktrace took 0.01s"
        let b = "*** Signal 11: Backtracing from 0x55d3b17f4306... done ***\n 1 [ra] 0x000055d3b18406c9\nrax 0x00007ffe876a2308  fd 29 6a\nBacktrace took 0.31s"
        XCTAssertEqual(BacktracerOutput.normaliseText(a), BacktracerOutput.normaliseText(b))
        XCTAssertNotEqual(BacktracerOutput.normaliseText(a), BacktracerOutput.normaliseText(a.replacingOccurrences(of: "\nrax", with: "\nRegisters:\nrax")))
    }

    func testProcessesLeftInTheChildsProcessGroupAreReportedAndKilled() throws {
        let child = try ChildProcess.run("/bin/sh", ["-c", "sleep 30 & exit 0"], timeout: 10, ownProcessGroup: true, leftoverGrace: 0.3)
        XCTAssertEqual(child.ending, .exited(0))
        XCTAssertEqual(child.leftRunning.map(\.command), ["sleep"])
        usleep(100_000)
        XCTAssertEqual(ChildProcess.survivors(group: child.pid, token: nil), [], "the leftover was killed")
    }

    func testAChildThatLeavesNothingBehindHasNoLeftovers() throws {
        let child = try ChildProcess.run("/bin/sh", ["-c", "sleep 0.1 & wait"], timeout: 10, ownProcessGroup: true)
        XCTAssertEqual(child.ending, .exited(0))
        XCTAssertEqual(child.leftRunning, [])
    }

    func testTheRecordPidIsReadFromTheFileName() {
        XCTAssertEqual(ScenarioRunner.recordPid("/x/crash-1732000000000-4242-4243.ccrec"), 4242)
        XCTAssertEqual(ScenarioRunner.recordPid("/x/crash-1732000000000-77-78.ccrec.partial"), 77)
        XCTAssertNil(ScenarioRunner.recordPid("/x/other.ccrec"))
    }
}
