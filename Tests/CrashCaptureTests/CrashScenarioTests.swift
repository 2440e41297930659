// CrashScenarioTests.swift — real crashes in child processes: the signal they died of and the record they left.
import HostFacts
import CrashCapture
import CrashRecordFormat
import SensorsEvents
import CrashScenarios
import CrashSymbolication
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class CrashScenarioTests: XCTestCase {
    func testANullDereferenceLeavesACompleteRecordWithFramesImagesBreadcrumbsAndAppEnd() throws {
        let run = try Harness.run("null-dereference")
        let record = try XCTUnwrap(run.record)
        XCTAssertTrue(record.isComplete)
        XCTAssertNotNil(record.writeMicroseconds, "the end section says how long the handler took")
        let signal = try XCTUnwrap(record.signal)
        XCTAssertEqual(signal.number, SIGSEGV)
        XCTAssertEqual(signal.codeDescription, "address not mapped to object")
        XCTAssertEqual(signal.faultAddress, 0)
        XCTAssertNil(signal.sender)

        // Frames: the exact pc first, then the level chain, with source lines in Levels.swift.
        let thread = try XCTUnwrap(record.crashedThread)
        XCTAssertTrue(thread.framesFromSignalContext)
        let symbolicated = Harness.symbolicator.symbolicate(frames: thread.frames, firstIsExact: true, images: record.images)
        XCTAssertEqual(symbolicated.first?.last?.symbol, "cch_null_dereference")
        let level3 = try XCTUnwrap(symbolicated.joined().first { $0.symbol?.contains("level3") == true })
        XCTAssertEqual(level3.file.map { ($0 as NSString).lastPathComponent }, "Levels.swift")
        XCTAssertNotNil(level3.line)

        // Registers and memory windows agree with the frames.
        let rip = try XCTUnwrap(record.registers.first { $0.name == "rip" || $0.name == "pc" })
        XCTAssertEqual(rip.value, thread.frames.first)
        let pcWindow = try XCTUnwrap(record.memory.first { $0.label == "pc" })
        XCTAssertTrue(pcWindow.address <= rip.value && rip.value < pcWindow.address + UInt64(pcWindow.bytes.count))
        // The crashed thread's stack from sp up, as far as it is mapped (at most 64 KiB): every
        // return address of the frames above lies in it.
        let sp = try XCTUnwrap(record.registers.first { $0.name == "rsp" || $0.name == "sp" }).value
        let stack = try XCTUnwrap(record.memory.first { $0.label == "stack" })
        XCTAssertEqual(stack.address, sp)
        XCTAssertGreaterThan(stack.bytes.count, 256)
        XCTAssertLessThanOrEqual(stack.bytes.count, 64 * 1024)
        let words = Set(stride(from: 0, to: stack.bytes.count - 7, by: 8).map { offset in
            stack.bytes[offset ..< offset + 8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        })
        XCTAssertTrue(thread.frames.dropFirst().prefix(5).allSatisfy { words.contains($0) }, "return addresses are on the recorded stack")

        // Images carry the same build-ids as the files on disk.
        let main = try XCTUnwrap(record.images.first { $0.isMainExecutable })
        XCTAssertEqual(main.path, record.executablePath)
        XCTAssertEqual(main.buildID, try ELFFile(path: main.path).buildID)
        let libc = try XCTUnwrap(record.images.first { $0.path.contains("libc.so") })
        XCTAssertEqual(libc.buildID, try ELFFile(path: libc.path).buildID)
        XCTAssertFalse(libc.buildID.isEmpty)

        // Breadcrumbs left before the crash, in order, with their levels.
        XCTAssertEqual(record.breadcrumbs.map(\.message),
                       ["scenario null-dereference starting", "[crash-harness] performing null-dereference", "about to crash"])
        XCTAssertEqual(record.breadcrumbs.last?.level, .warning)

        // The compensating $AppEnd, in the tracking store's event shape.
        let process = try XCTUnwrap(record.process)
        let event = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try XCTUnwrap(record.appEndJSON).utf8)) as? [String: Any])
        XCTAssertEqual(event["event"] as? String, "$AppEnd")
        XCTAssertEqual(event["type"] as? String, "track")
        XCTAssertEqual(event["distinct_id"] as? String, "crash-harness-anonymous")
        XCTAssertEqual((event["time"] as? NSNumber)?.int64Value, process.crashWallNanoseconds / 1_000_000)
        let properties = try XCTUnwrap(event["properties"] as? [String: Any])
        XCTAssertEqual(properties["$os"] as? String, "Linux")
        XCTAssertEqual(properties["$app_version"] as? String, CrashCaptureLibrary.version)
        XCTAssertEqual(properties["$app_end_reason"] as? String, "crash")
        XCTAssertEqual(properties["$app_crashed"] as? Bool, true)
        // The run id is a record field, and the $AppEnd carries the same one.
        let runID = try XCTUnwrap(record.runID)
        XCTAssertEqual(runID.count, 36)
        XCTAssertEqual(properties["$run_id"] as? String, runID)
        XCTAssertNil(properties["$crash_signal"], "crash facts are AppCrashed's, not the $AppEnd's")
        let duration = try XCTUnwrap((properties["$event_duration"] as? NSNumber)?.doubleValue)
        XCTAssertEqual(duration, process.uptimeSeconds, accuracy: 0.002)

        // Files: directory 0700, record 0600, final name, no partial left behind.
        XCTAssertEqual(try permissions(run.directory), 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: run.directory)
        XCTAssertEqual(files.count, 1)
        XCTAssertTrue(files[0].hasPrefix("crash-") && files[0].hasSuffix(".ccrec"), files[0])
        XCTAssertEqual(try permissions(run.directory + "/" + files[0]), 0o600)
    }

    func testTheNameTheHandlerGivesARealRecordParses() throws {
        let run = try Harness.run("null-dereference")
        let path = try XCTUnwrap(run.outcome.ownRecordFiles.first)
        let name = try XCTUnwrap(RecordFileName(path), path)
        XCTAssertEqual(name.pid, run.outcome.pid)
        XCTAssertEqual(name.tid, run.outcome.pid, "the main thread crashed")
        XCTAssertFalse(name.isPartial)
        let crashMs = try XCTUnwrap(run.record?.process).crashWallNanoseconds / 1_000_000
        XCTAssertEqual(name.milliseconds, crashMs)
        XCTAssertEqual(try RecordFileName.names(in: (path as NSString).deletingLastPathComponent), [(path as NSString).lastPathComponent])
    }

    func testAbortIsRecordedAsSIGABRTSentByTheProcessItself() throws {
        let run = try Harness.run("abort")
        let record = try XCTUnwrap(run.record)
        let sender = try XCTUnwrap(record.signal?.sender)
        XCTAssertEqual(sender.pid, record.process?.pid)
    }

    func testSIGBUSFromATruncatedMappingIsRecorded() throws {
        let record = try XCTUnwrap(try Harness.run("sigbus").record)
        XCTAssertEqual(record.signal?.codeName, "BUS_ADRERR")
        XCTAssertNotNil(record.signal?.faultAddress)
    }

    func testIntegerDivideByZeroIsRecordedAsSIGFPE() throws {
        #if arch(x86_64)
        let record = try XCTUnwrap(try Harness.run("divide-by-zero").record)
        XCTAssertEqual(record.signal?.codeDescription, "integer divide by zero")
        #else
        throw XCTSkip("integer division by zero does not trap on this architecture")
        #endif
    }

    func testAnIllegalInstructionIsRecordedAsSIGILL() throws {
        let record = try XCTUnwrap(try Harness.run("illegal-instruction").record)
        XCTAssertEqual(record.signal?.number, SIGILL)
    }

    func testASwiftForceUnwrapOfNilCarriesTheRuntimesMessage() throws {
        let record = try XCTUnwrap(try Harness.run("force-unwrap-nil").record)
        XCTAssertEqual(record.signal?.number, swiftTrapSignal)
        // The debug harness always reports the message (the runner checks release separately).
        XCTAssertTrue(record.fatalMessage?.contains("Unexpectedly found nil while unwrapping an Optional value") == true,
                      record.fatalMessage ?? "no message")
    }

    func testFatalErrorTextIsRecorded() throws {
        let record = try XCTUnwrap(try Harness.run("fatal-error").record)
        XCTAssertTrue(record.fatalMessage?.contains("crash-harness fatalError text") == true)
    }

    /// A leaked CheckedContinuation's report ("SWIFT TASK CONTINUATION MISUSE: …") is a runtime
    /// warning of the record, never a crash's message: not a null dereference's, not the app's
    /// abort's, and a later fatalError's message is its own text alone. In both builds of the
    /// harness (the release one when the test command built it).
    func testALeakedContinuationIsARuntimeWarningNeverTheCrashsMessage() throws {
        for binary in [Harness.debug] + (Harness.release.map { [$0] } ?? []) {
            for name in ["leaked-continuation-then-segv", "leaked-continuation-then-fatal-error", "leaked-continuation-then-abort"] {
                let record = try XCTUnwrap(try Harness.run(name, binary: binary).record, name)
                let warnings = record.runtimeWarnings
                XCTAssertEqual(warnings.count, 1, "\(name): \(warnings)")
                XCTAssertTrue(warnings.first?.text.hasPrefix("SWIFT TASK CONTINUATION MISUSE: ") == true, "\(name): \(warnings)")
                XCTAssertEqual(warnings.first?.count, 1, name)
                XCTAssertFalse(record.fatalMessage?.contains("CONTINUATION MISUSE") == true, "\(name): \(record.fatalMessage ?? "")")
                XCTAssertTrue(record.breadcrumbs.contains { $0.message == "after the leak" }, name)
                if name.hasSuffix("fatal-error") {
                    XCTAssertTrue(record.fatalMessage?.contains("crash-harness fatalError after a leak") == true, record.fatalMessage ?? "no message")
                } else {
                    XCTAssertNil(record.fatalMessage, name)
                }
            }
        }
    }

    func testAStackOverflowOnTheMainThreadIsRecordedFromTheAlternateStack() throws {
        let record = try XCTUnwrap(try Harness.run("stack-overflow-main").record)
        let thread = try XCTUnwrap(record.crashedThread)
        XCTAssertTrue(thread.truncated)
        XCTAssertEqual(thread.frames.count, 256)
        XCTAssertEqual(thread.tid, record.process?.pid)
    }

    func testAStackOverflowOnASecondaryThreadIsRecorded() throws {
        let record = try XCTUnwrap(try Harness.run("stack-overflow-thread").record)
        let thread = try XCTUnwrap(record.crashedThread)
        XCTAssertNotEqual(thread.tid, record.process?.pid)
        XCTAssertTrue(Harness.symbols(thread, in: record).prefix(5).allSatisfy { $0.contains("cch_recurse") })
    }

    func testAHandlerInstalledBeforeCrashCaptureStillRunsAndTheProcessStillDies() throws {
        let run = try Harness.run("handler-before")
        XCTAssertTrue(run.report.outcome.stderr.contains("user handler ran"))
        XCTAssertTrue(run.report.outcome.stderr.contains("errno in user handler 4242\n"), "errno must reach the chained handler intact")
        XCTAssertEqual(run.report.outcome.ending, .signal(SIGSEGV))
        XCTAssertTrue(run.record?.isComplete == true)
        XCTAssertEqual(run.record?.signal?.errnoAtCrash, 4242)
    }

    func testAHandlerInstalledAfterCrashCaptureThatChainsStillGetsOurRecord() throws {
        let run = try Harness.run("handler-after")
        XCTAssertTrue(run.report.outcome.stderr.contains("late handler ran"))
        XCTAssertTrue(run.record?.isComplete == true)
    }

    func testTheSwiftBacktracerRunsFirstAndTheCrashIsStillRecorded() throws {
        let run = try Harness.run("swift-backtracer")
        XCTAssertTrue(run.report.outcome.stderr.contains("Program crashed"), run.report.outcome.stderr)
        XCTAssertTrue(run.record?.isComplete == true)
    }

    func testEightThreadsCrashingAtOnceLeaveOneCompleteRecordWithTheOthersStacks() throws {
        let run = try Harness.run("concurrent-crashes")
        let record = try XCTUnwrap(run.record)
        XCTAssertTrue(record.isComplete)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: run.directory).count, 1)
        // Main + 8 crashing threads, each listed once.
        XCTAssertGreaterThanOrEqual(record.threads.count, 9)
        XCTAssertEqual(Set(record.threads.map(\.tid)).count, record.threads.count)
        // The seven that lost the race: those that had faulted waited for their turn in our
        // handler and parked there with their own crash context when the record began, so each
        // is recorded as crashed too, at its own null dereference; the others were stopped on
        // their way to it.
        let losers = record.threads.filter { !$0.crashed && Harness.symbols($0, in: record).contains { $0.contains("cch_crash_at_barrier") } }
        XCTAssertEqual(losers.count, 7, "\(record.threads.map { Harness.symbols($0, in: record).prefix(6) })")
        for loser in losers {
            XCTAssertEqual(loser.alsoCrashed, Harness.symbols(loser, in: record).first == "cch_null_dereference",
                           "thread \(loser.tid): \(Harness.symbols(loser, in: record).prefix(4))")
        }
    }

    func testTheOtherThreadsStacksAreRecordedWhenTheyAnswer() throws {
        let record = try XCTUnwrap(try Harness.run("secondary-thread").record)
        let main = try XCTUnwrap(record.threads.first { $0.tid == record.process?.pid })
        XCTAssertFalse(main.crashed)
        XCTAssertFalse(main.stackUnavailable)
        XCTAssertTrue(Harness.symbols(main, in: record).contains { $0.contains("onSecondaryThread") })
    }

    func testAFaultInsideTheHandlerEndsTheProcessWithTheOriginalSignalAndKeepsWhatWasWritten() throws {
        let run = try Harness.run("crash-in-handler")
        let record = try XCTUnwrap(run.record)
        XCTAssertFalse(record.isComplete)
        XCTAssertEqual(record.signal?.number, SIGABRT)
        XCTAssertNotNil(record.appEndJSON, "the $AppEnd is written before the registers, where the test fault strikes")
        let files = try FileManager.default.contentsOfDirectory(atPath: run.directory)
        XCTAssertEqual(files.count, 1)
        XCTAssertTrue(files[0].hasSuffix(".ccrec.partial"))
    }

    func testASignalFromAnotherProcessRecordsItsSender() throws {
        let record = try XCTUnwrap(try Harness.run("signal-from-other-process").record)
        let sender = try XCTUnwrap(record.signal?.sender)
        XCTAssertNotEqual(sender.pid, record.process?.pid)
        XCTAssertEqual(sender.uid, getuid())
    }

    func testHeapCorruptionAbortingInsideFreeDoesNotDeadlock() throws {
        let run = try Harness.run("heap-corruption")
        XCTAssertTrue(run.report.outcome.stderr.contains("free()"), run.report.outcome.stderr)
        XCTAssertTrue(run.record?.isComplete == true)
    }

    /// Runs per scenario in the table-wide tests: CRASH_HARNESS_RUNS, by default 3 in the release
    /// build (the one that ships, where a race shows) and 1 in the debug build (the same
    /// expectations; `crash-harness verify --runs 1000` is the soak; see CONTRIBUTING.md).
    func runsPerScenario(release: Bool) -> Int {
        Int(ProcessInfo.processInfo.environment["CRASH_HARNESS_RUNS"] ?? "") ?? (release ? 3 : 1)
    }

    func testACrashWhileOtherThreadsHoldMallocLocksCompletesWithTheirStacks() throws {
        let run = try Harness.run("crash-while-malloc-busy")
        let record = try XCTUnwrap(run.record)
        XCTAssertTrue(record.isComplete)
        // The three threads were interrupted inside malloc/free and answered from there.
        let busy = record.threads.filter { !$0.crashed && Harness.symbols($0, in: record).contains { $0.contains("cch_malloc_forever") } }
        XCTAssertEqual(busy.count, 3, "\(record.threads.map { Harness.symbols($0, in: record).prefix(4) })")
    }

    func testEveryScenarioInTheTableEndsAsExpectedInTheDebugHarness() throws {
        for scenario in Scenarios.all {
            for _ in 0..<runsPerScenario(release: false) { _ = try Harness.run(scenario.name) }
        }
    }

    func testEveryScenarioInTheTableEndsAsExpectedInTheReleaseHarness() throws {
        guard let release = Harness.release else {
            throw XCTSkip("set CRASH_HARNESS_RELEASE to a release build of crash-harness (scripts/test.sh does)")
        }
        XCTAssertFalse(try Harness.isDebugBuild(release))
        for scenario in Scenarios.all {
            for _ in 0..<runsPerScenario(release: true) { _ = try Harness.run(scenario.name, binary: release) }
        }
    }

    func testCrashCaptureDisableEnvironmentVariableInstallsNothing() throws {
        let scenario = try XCTUnwrap(Scenarios.named("null-dereference"))
        let directory = try Harness.scratchDirectory("disabled")
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment[CrashHandler.disableEnvironmentVariable] = "1"
        let child = try ChildProcess.run(Harness.debug, ["run", scenario.name, "--dir", directory], environment: environment)
        XCTAssertEqual(child.ending, .signaled(SIGSEGV))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), [])
    }

    func testASetuidProcessRecordsNothingWhileTheSameBinaryWithoutSetuidDoes() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            throw XCTSkip("needs root and setpriv to run a setuid binary as another user")
        }
        let base = try Harness.scratchDirectory("setuid")
        chmod(base, 0o755)
        let binary = base + "/crash-harness"
        try FileManager.default.copyItem(atPath: Harness.debug, toPath: binary)
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        func crash(mode: mode_t) throws -> (ChildProcess.Ending, [String]) {
            let records = base + "/records-\(String(mode, radix: 8))"
            try FileManager.default.createDirectory(atPath: records, withIntermediateDirectories: true)
            chmod(records, 0o777)
            chmod(binary, mode)
            let child = try ChildProcess.run("/usr/bin/setpriv",
                ["--reuid=65534", "--regid=65534", "--clear-groups", binary, "run", "null-dereference", "--dir", records],
                environment: environment)
            return (child.ending, try FileManager.default.contentsOfDirectory(atPath: records))
        }
        let (plainEnding, plainRecords) = try crash(mode: 0o755)
        XCTAssertEqual(plainEnding, .signaled(SIGSEGV))
        XCTAssertEqual(plainRecords.count, 1, "control: the same binary without setuid records its crash")
        let (secureEnding, secureRecords) = try crash(mode: 0o4755)
        XCTAssertEqual(secureEnding, .signaled(SIGSEGV))
        XCTAssertEqual(secureRecords, [], "AT_SECURE: capture stays off")
    }

    private func permissions(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }
}
