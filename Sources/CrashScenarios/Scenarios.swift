// Scenarios.swift — the one table of ways to die: the harness performs it, verify and the tests check it.
import HostFacts
import CCrashScenarios
import SensorsEvents
package import SensorsAnalytics
@_spi(Testing) import CrashCapture
import Dispatch
import Foundation
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One way a program can end, with what a correct crash reporter must leave behind.
package struct Scenario: Sendable {
    /// How the process must end.
    package enum Ending: Sendable, Equatable, CustomStringConvertible {
        case signal(Int32)
        case exit(Int32)

        package var description: String {
            switch self {
            case .signal(let s): return signalName(s)
            case .exit(let code): return "exit \(code)"
            }
        }
    }

    /// What the crash record must say; `nil` on a scenario means no record may appear.
    package struct RecordExpectation: Sendable {
        /// Signal in the record.
        package var signal: Int32
        /// si_code name, e.g. "SEGV_MAPERR" (nil: not checked).
        package var codeName: String?
        /// Function names that must appear in this order (innermost first) among the crashed
        /// thread's symbolicated frames; each matches a frame whose name contains it.
        package var frames: [String]
        /// Substring of the Swift fatal-error message, if the scenario has one.
        package var message: String?
        /// The runtime only reports `message` in debug builds (-O drops the stdlib's texts).
        package var messageOnlyInDebug: Bool = false
        /// The fault address the record must carry.
        package var faultAddress: UInt64?
        /// The signal came from another process (sender pid is not ours).
        package var fromOtherProcess: Bool = false
        /// The record may lack its end section (the handler itself crashed).
        package var mayBeIncomplete: Bool = false
        /// The unwind is expected to stop at the frame limit (runaway recursion).
        package var truncatedFrames: Bool = false
        /// The crashed thread is not the main thread.
        package var crashedOffMainThread: Bool = false
        /// The record comes from a child the harness process forked (its pid and parent differ).
        package var forkedChild: Bool = false
        /// A very deep stack: the crashed thread's record leaves frames out in the middle
        /// (`omittedFrames > 0`), keeping the innermost frames and the outermost (`frames` then
        /// spans both ends, e.g. the recursing function and the level chain below it).
        package var omittedFrames: Bool = false
        /// The crashed thread's frame 0 must be exactly this pc (0 for a call through NULL).
        package var firstFrameAddress: UInt64?
        /// How many records other processes (the scenario's own children, e.g. a vfork child
        /// that crashed) may leave next to the one of the harness process; told apart by pid.
        package var childRecords: ClosedRange<Int> = 0...0
        /// The record may or may not be complete (the handler ran out of room), but must still
        /// hold the signal and the crashed thread's frames.
        package var incompleteAllowed: Bool = false
        /// Every thread but the crashed one is listed as stopped (parked while the record was
        /// written) or, if it blocks the stop signal, as not stopped without frames.
        package var otherThreadsStopped: Bool = false
        /// At least one thread is listed as not stopped (it blocks the stop signal and could not
        /// be ptraced, or no helper ran), with no frames.
        package var threadNotStopped: Bool = false
        /// At least one thread blocks the stop signal and was read by the ptrace helper, with
        /// registers and frames.
        package var threadPtraced: Bool = false
        /// Every thread besides the crashed one was stopped (parked or ptraced) and has frames.
        package var everyThreadHasFrames: Bool = false
        /// The record lists at least this many threads besides the crashed one.
        package var minimumOtherThreads: Int = 0
        /// A note the record must carry (substring).
        package var note: String?
        /// Function names that must appear in this order among the async frames of a thread
        /// other than the crashed one (a task mid-chain on another thread).
        package var otherThreadAsyncFrames: [String] = []
        /// The thread with `otherThreadAsyncFrames` parked itself (it does not block the stop
        /// signal) rather than being read by the ptrace helper.
        package var asyncFramesOnParkedThread = false
        /// Function names that must appear in this order among the crashed thread's frames of
        /// its parent tasks (a child task's spawner, waiting for it).
        package var parentTaskFrames: [String] = []
        /// Text glibc's abort message must contain; the record's message must also be, line for
        /// line, what glibc printed on stderr in the reference run.
        package var abortMessage: String?
        /// Text one of the record's runtime warnings (the Swift runtime's earlier, non-fatal
        /// reports) must contain; the fatal message, if any, must not contain it.
        package var runtimeWarning: String?
        /// The record must have no fatal message (the death was not on the runtime's fatal path).
        package var noFatalMessage: Bool = false
    }

    /// How the child's stdout and stderr are compared with those of the reference run (the
    /// same scenario with `CRASHCAPTURE_DISABLE=1`, the truth CrashCapture must not change).
    package enum OutputComparison: Sendable {
        /// Byte for byte (after the run's directory is replaced by `<dir>`).
        case exact
        /// After a normaliser, for output that legitimately differs between any two runs
        /// (addresses under ASLR, pids, times); `reason` says what it removes.
        case normalised(reason: String, @Sendable (String) -> String)
        /// Not compared at all; `reason` says why. The ending is still compared.
        case notCompared(reason: String)
    }

    /// The scenario's name on the command line.
    package let name: String
    /// What the scenario proves, one line.
    package let summary: String
    package let ending: Ending
    package let record: RecordExpectation?
    /// Text that must appear on the child's stderr (e.g. a chained handler's marker).
    package let stderrContains: [String]
    /// Text that must appear on the child's stdout.
    package let stdoutContains: [String]
    /// Text that must not appear on the child's stdout.
    package let stdoutLacks: [String]
    /// How stdout and stderr are compared with the reference run's.
    package let output: OutputComparison
    /// The run must end within this many seconds (a hang shorter than the time limit).
    package let maxSeconds: Double?
    /// Further checks of a finished run (e.g. files the scenario leaves); failures, or [].
    package let check: (@Sendable (RunOutcome) -> [String])?
    /// The scenario is also run with CrashCapture disabled and Swift's backtracer writing its
    /// JSON report, and the record's crashed-thread frames (async ones included) must be the
    /// report's, frame for frame by image offset.
    package let backtracerReference: Bool
    /// Environment for the child on top of the harness defaults; `{dir}` in a value becomes
    /// the run's directory.
    package let environment: [String: String]
    /// Where the Swift runtime's backtracer alone (capture off) is not the truth for this
    /// scenario (``BacktracerAlongside``); nil where it is.
    package let backtracerAlone: BacktracerAlone?

    /// Why the runtime's backtracer without capture is no reference for a scenario, and what
    /// the run with capture must show instead.
    package struct BacktracerAlone: Sendable {
        /// What the runtime alone does wrong or differently here.
        package var reason: String
        /// How many reports the backtracer must print with capture.
        package var reports: Int
        /// The endings the run with capture may have.
        package var endings: [Ending]
    }
    /// Runs before CrashCapture starts (to install a handler that must be chained).
    let beforeStart: (@Sendable () -> Void)?
    /// Adjusts the configuration.
    let configure: (@Sendable (inout CrashHandler.Configuration) -> Void)?
    /// Performs the scenario (inside level5 unless it manages its own threads).
    let perform: @Sendable (ScenarioContext) -> Void

    init(
        _ name: String, _ summary: String, ending: Ending, record: RecordExpectation?,
        stderrContains: [String] = [], stdoutContains: [String] = [], stdoutLacks: [String] = [],
        output: OutputComparison = .exact, maxSeconds: Double? = nil,
        environment: [String: String] = [:],
        beforeStart: (@Sendable () -> Void)? = nil,
        configure: (@Sendable (inout CrashHandler.Configuration) -> Void)? = nil,
        check: (@Sendable (RunOutcome) -> [String])? = nil,
        backtracerReference: Bool = false,
        backtracerAlone: BacktracerAlone? = nil,
        perform: @escaping @Sendable (ScenarioContext) -> Void
    ) {
        self.backtracerReference = backtracerReference
        self.backtracerAlone = backtracerAlone
        self.name = name
        self.summary = summary
        self.ending = ending
        self.record = record
        self.stderrContains = stderrContains
        self.stdoutContains = stdoutContains
        self.stdoutLacks = stdoutLacks
        self.output = output
        self.maxSeconds = maxSeconds
        self.check = check
        self.environment = environment
        self.beforeStart = beforeStart
        self.configure = configure
        self.perform = perform
    }
}

/// What a scenario may use while it runs.
package struct ScenarioContext: Sendable {
    /// The record directory (also a scratch place for files the scenario needs).
    package let directory: String
    /// Publishes the crash `$AppEnd` (as CrashReporting does for an app).
    package let appEnd: CrashAppEndPublisher

    /// Test support: with `CRASH_HARNESS_PAUSE_BEFORE_CRASH=PATH` in the environment, writes this
    /// process's pid to PATH.ready and waits (at most a minute) for PATH.go, so that a test can
    /// look at the process with an outside tool (eu-stack) just before it crashes, or take its
    /// record directory away.
    package func pauseIfAsked() {
        guard let path = ProcessInfo.processInfo.environment["CRASH_HARNESS_PAUSE_BEFORE_CRASH"] else { return }
        _ = FileManager.default.createFile(atPath: path + ".ready", contents: Data("\(getpid())".utf8))
        for _ in 0..<6000 where !FileManager.default.fileExists(atPath: path + ".go") { usleep(10_000) }
    }
}

/// Swift traps (force-unwrap, overflow, fatalError) are `ud2` on x86-64 and `brk` on arm64.
#if arch(x86_64)
package let swiftTrapSignal = SIGILL
let swiftTrapCode = "ILL_ILLOPN"
let builtinTrapSignal = SIGILL
#else
package let swiftTrapSignal = SIGTRAP
let swiftTrapCode = "TRAP_BRKPT"
let builtinTrapSignal = SIGTRAP
#endif

/// Runs `body` under the level chain on a new thread and never returns (the thread ends us).
func onSecondaryThread(stackSize: Int = 1 << 20, _ body: @escaping @Sendable () -> Void) -> Never {
    let thread = Thread {
        cch_wait_main_settled()
        throughLevels { body() }
    }
    thread.stackSize = stackSize
    thread.start()
    cch_mark_main_settled()
    while true { sleep(60) }
}

/// A library no scenario program links and every Debian-based system has (dpkg needs it): the
/// one the image-table scenarios load and unload after start.
package let laterLibrary = "libbz2.so.1.0"

/// dlopen `name` (the program must be able to: the scenario fails loudly if not) and say so.
func loadLibrary(_ name: String, quiet: Bool = false) {
    guard dlopen(name, RTLD_NOW) != nil else { fatalError("cannot load \(name): \(String(cString: dlerror()))") }
    if !quiet { say("loaded \(name)\n") }
}

/// `text` on stdout at once (unbuffered: the process is about to crash).
func say(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(1, $0.baseAddress, $0.count) }
}

@inline(never) func forceUnwrapNil() { let value: Int? = opaque(nil); levelSink &+= value! }
@inline(never) func indexOutOfRange() { let array = opaque([1, 2, 3]); levelSink &+= array[opaque(5)] }
@inline(never) func integerOverflow() { levelSink &+= opaque(Int.max) + opaque(1) }

package enum Scenarios {
    static let chain = levelChain

    /// The record of a null dereference in cch_null_dereference under the level chain, adjusted
    /// for what else the scenario proves.
    static func nullDereference(_ adjust: (inout Scenario.RecordExpectation) -> Void = { _ in }) -> Scenario.RecordExpectation {
        var expectation = Scenario.RecordExpectation(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference"] + chain, faultAddress: 0)
        adjust(&expectation)
        return expectation
    }
    static let chained = "crash-harness: user handler ran\n"
    static let late = "crash-harness: late handler ran\n"
    /// The runtime's fatal-error stack trace holds absolute addresses.
    static let swiftRuntimeOutput = Scenario.OutputComparison.normalised(
        reason: "the runtime's fatal-error stack trace lists absolute addresses (ASLR)", RuntimeOutput.normaliseAddresses)
    static let phdrMarker = "crash-harness: previous handler ran while the loader lock was held\n"

    /// What the Swift runtime reports (on stderr, and appended to its fatal-error message buffer)
    /// when a CheckedContinuation is dropped without being resumed, after the function's name.
    static let leakReport = "leaked its continuation without resuming it"
    static let leakReported = "the runtime reported the leaked continuation\n"

    /// A detached task leaks a CheckedContinuation (drops it without resuming it: the task stays
    /// suspended forever and the runtime reports "SWIFT TASK CONTINUATION MISUSE"); waits, at most
    /// 5 s, until the runtime's report text has grown, says so, and leaves a breadcrumb, as a
    /// program goes on after a warning it does not see.
    static func leakContinuation() {
        let before = cch_swift_reports_length()
        Task.detached {
            let _: Int = await withCheckedContinuation { continuation in _ = continuation }
        }
        for _ in 0..<500 where cch_swift_reports_length() == before { usleep(10_000) }
        if cch_swift_reports_length() != before { say(leakReported) }
        CrashHandler.leaveBreadcrumb("after the leak", level: .info)
    }

    /// Every scenario, in the order `list` prints them.
    /// Every scenario: the synchronous ones, then the async ones (AsyncScenarios.swift).
    package static let all: [Scenario] = basicScenarios + asyncScenarios + fakeContextScenarios + requestScenarios

    static let basicScenarios: [Scenario] = [
        Scenario("null-dereference", "a write through a null pointer is recorded as SEGV_MAPERR at 0x0",
                 ending: .signal(SIGSEGV),
                 record: nullDereference())
        { context in
            context.pauseIfAsked()
            throughLevels { cch_null_dereference() }
        },
        Scenario("write-read-only", "a write to a read-only page is recorded as SEGV_ACCERR",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_ACCERR", frames: ["cch_write_read_only"] + chain))
        { _ in throughLevels { cch_write_read_only() } },
        Scenario("wild-pointer", "a write to an unmapped address keeps that address",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_wild_pointer"] + chain, faultAddress: 0x3ead_0000_beef))
        { _ in throughLevels { cch_wild_pointer() } },
        Scenario("stack-overflow-main", "runaway recursion on the main thread is recorded from the alternate stack: recursing frames on top, the level chain at the bottom",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, frames: ["cch_recurse"] + chain, omittedFrames: true))
        { _ in throughLevels { cch_stack_overflow() } },
        Scenario("stack-overflow-thread", "runaway recursion on a thread created after start is recorded: recursing frames on top, the level chain at the bottom",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, frames: ["cch_recurse"] + chain, crashedOffMainThread: true, omittedFrames: true),
                 backtracerAlone: .init(reason: "without capture the thread has no alternate signal stack, so the runtime's handler cannot run on its overflow and nothing is reported; capture gives every new thread one",
                                        reports: 1, endings: [.signal(SIGSEGV)]))
        { _ in onSecondaryThread(stackSize: 512 << 10) { cch_stack_overflow() } },
        Scenario("abort", "abort() is recorded as SIGABRT sent by the process itself",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, codeName: "SI_TKILL", frames: ["abort", "cch_abort"] + chain))
        { _ in throughLevels { cch_abort() } },
        Scenario("fault-in-signal-handler", "a fault inside the program's own signal handler is unwound through the signal trampoline to where the signal arrived, and on to main",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR",
                               frames: ["cch_null_dereference", "cch_usr2_handler", "raise", "cch_fault_in_signal_handler"] + chain))
        { _ in throughLevels { cch_fault_in_signal_handler() } },
        Scenario("cxx-exception", "a C++ std::runtime_error no one catches: SIGABRT after std::terminate, with the exception's type and what()",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, frames: ["abort", "cch_cxx_throw_runtime_error"] + chain),
                 stderrContains: ["what():  the order could not be priced: currency XTS\n"])
        { _ in throughLevels { cch_cxx_throw_runtime_error() } },
        Scenario("cxx-what-throws", "a C++ exception whose what() throws: still SIGABRT after std::terminate, the record says what() threw",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, frames: ["abort", "cch_cxx_throw_what_throws"] + chain))
        { _ in throughLevels { cch_cxx_throw_what_throws() } },
        Scenario("cxx-not-std-exception", "a thrown C++ value that is no std::exception: its type, no what()",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, frames: ["abort", "cch_cxx_throw_plain"] + chain))
        { _ in throughLevels { cch_cxx_throw_plain() } },
        Scenario("cxx-terminate", "std::terminate called with no exception in flight",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, frames: ["abort", "cch_cxx_terminate"] + chain))
        { _ in throughLevels { cch_cxx_terminate() } },
        Scenario("cxx-abort-in-catch", "abort() inside a catch block: a C++ exception was caught, none is uncaught",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, frames: ["abort", "cch_cxx_abort_in_catch"] + chain))
        { _ in throughLevels { cch_cxx_abort_in_catch() } },
        Scenario("cxx-abort-after-catch", "abort() after a C++ exception was thrown, caught and freed: none is uncaught",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, frames: ["abort", "cch_cxx_abort_after_catch"] + chain))
        { _ in throughLevels { cch_cxx_abort_after_catch() } },
        Scenario("cxx-app-terminate-handler", "a terminate handler the app installed before capture still runs after capture's",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, frames: ["abort", "cch_cxx_throw_runtime_error"] + chain),
                 stdoutContains: ["crash-harness: the app's terminate handler ran\n"],
                 beforeStart: { cch_cxx_install_app_terminate() })
        { _ in throughLevels { cch_cxx_throw_runtime_error() } },
        Scenario("c-assert", "a failed C assert() aborts and is recorded with glibc's message, as it printed it",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, frames: ["cch_assert"] + chain,
                               abortMessage: "cch_assert(void): Assertion `cch_sink == 12345 && \"crash-harness assertion\"' failed."))
        { _ in throughLevels { cch_assert() } },
        Scenario("sigbus", "touching a truncated mmap'd file is recorded as SIGBUS BUS_ADRERR",
                 ending: .signal(SIGBUS),
                 record: .init(signal: SIGBUS, codeName: "BUS_ADRERR", frames: ["cch_sigbus"] + chain))
        { context in throughLevels { cch_sigbus(context.directory) } },
        Scenario("divide-by-zero", "integer division by zero is recorded as SIGFPE FPE_INTDIV (x86-64)",
                 ending: .signal(SIGFPE),
                 record: .init(signal: SIGFPE, codeName: "FPE_INTDIV", frames: ["cch_divide_by_zero"] + chain))
        { _ in throughLevels { cch_divide_by_zero() } },
        Scenario("illegal-instruction", "an undefined instruction is recorded as SIGILL",
                 ending: .signal(SIGILL),
                 record: .init(signal: SIGILL, frames: ["cch_illegal_instruction"] + chain))
        { _ in throughLevels { cch_illegal_instruction() } },
        Scenario("builtin-trap", "__builtin_trap() is recorded (SIGILL on x86-64, SIGTRAP on arm64)",
                 ending: .signal(builtinTrapSignal),
                 record: .init(signal: builtinTrapSignal, frames: ["cch_builtin_trap"] + chain))
        { _ in throughLevels { cch_builtin_trap() } },
        Scenario("force-unwrap-nil", "a Swift force-unwrap of nil is recorded with the runtime's message",
                 ending: .signal(swiftTrapSignal),
                 record: .init(signal: swiftTrapSignal, frames: chain,
                               message: "Unexpectedly found nil while unwrapping an Optional value", messageOnlyInDebug: true),
                 output: swiftRuntimeOutput)
        { _ in throughLevels { forceUnwrapNil() } },
        Scenario("array-index-out-of-range", "a Swift array index out of range is recorded with its message",
                 ending: .signal(swiftTrapSignal),
                 record: .init(signal: swiftTrapSignal, frames: chain, message: "Index out of range", messageOnlyInDebug: true),
                 output: swiftRuntimeOutput)
        { _ in throughLevels { indexOutOfRange() } },
        Scenario("fatal-error", "Swift fatalError(\"…\") is recorded with its text",
                 ending: .signal(swiftTrapSignal),
                 record: .init(signal: swiftTrapSignal, frames: chain, message: "crash-harness fatalError text"),
                 output: swiftRuntimeOutput)
        { _ in throughLevels { fatalError("crash-harness fatalError text") } },
        Scenario("precondition", "a failed Swift precondition is recorded with its text",
                 ending: .signal(swiftTrapSignal),
                 record: .init(signal: swiftTrapSignal, frames: chain, message: "crash-harness precondition text", messageOnlyInDebug: true),
                 output: swiftRuntimeOutput)
        { _ in throughLevels { precondition(opaque(false), "crash-harness precondition text") } },
        Scenario("integer-overflow", "Swift arithmetic overflow traps and is recorded",
                 ending: .signal(swiftTrapSignal),
                 record: .init(signal: swiftTrapSignal, frames: chain),
                 output: swiftRuntimeOutput)
        { _ in throughLevels { integerOverflow() } },
        Scenario("leaked-continuation-then-segv", "a CheckedContinuation leaked before a null dereference: the runtime's report is a warning of the record, not its message",
                 ending: .signal(SIGSEGV),
                 record: nullDereference { $0.runtimeWarning = leakReport; $0.noFatalMessage = true },
                 stdoutContains: [leakReported])
        { _ in
            leakContinuation()
            throughLevels { cch_null_dereference() }
        },
        Scenario("leaked-continuation-then-fatal-error", "a CheckedContinuation leaked before a fatalError: the message is the fatalError's text alone, the leak a warning",
                 ending: .signal(swiftTrapSignal),
                 record: .init(signal: swiftTrapSignal, frames: chain, message: "crash-harness fatalError after a leak", runtimeWarning: leakReport),
                 stdoutContains: [leakReported],
                 output: swiftRuntimeOutput)
        { _ in
            leakContinuation()
            usleep(200_000)   // a look counts once it is 100 ms old
            throughLevels { fatalError("crash-harness fatalError after a leak") }
        },
        Scenario("leaked-continuation-then-abort", "a CheckedContinuation leaked before the app's abort(): no message (the runtime did not abort), the leak a warning",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, codeName: "SI_TKILL", frames: ["abort", "cch_abort"] + chain,
                               runtimeWarning: leakReport, noFatalMessage: true),
                 stdoutContains: [leakReported])
        { _ in
            leakContinuation()
            usleep(200_000)   // as in leaked-continuation-then-fatal-error: the look before counts
            throughLevels { cch_abort() }
        },
        Scenario("secondary-thread", "a crash on a secondary thread is recorded from that thread",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference"] + chain, crashedOffMainThread: true))
        { _ in onSecondaryThread { cch_null_dereference() } },
        Scenario("task-crash", "a crash inside a Swift concurrency Task is recorded",
                 ending: .signal(swiftTrapSignal),
                 record: .init(signal: swiftTrapSignal, frames: chain,
                               message: "Unexpectedly found nil while unwrapping an Optional value", messageOnlyInDebug: true,
                               crashedOffMainThread: true),
                 output: swiftRuntimeOutput)
        { _ in
            Task.detached { throughLevels { forceUnwrapNil() } }
            while true { sleep(60) }
        },
        Scenario("task-crash-busy-pool", "a crash in a Task while the cooperative pool's other threads (which block every signal) are busy: every thread has frames",
                 ending: .signal(swiftTrapSignal),
                 record: .init(signal: swiftTrapSignal, frames: chain,
                               message: "Unexpectedly found nil while unwrapping an Optional value", messageOnlyInDebug: true,
                               crashedOffMainThread: true, otherThreadsStopped: true, everyThreadHasFrames: true),
                 output: swiftRuntimeOutput)
        { _ in
            // Busy pool threads, one fewer than the pool has (one per core), so the crashing
            // task still gets a thread.
            let started = UpdateCounter()
            let busy = max(1, ProcessInfo.processInfo.activeProcessorCount - 1)
            for _ in 0..<busy { Task.detached { started.increment(); while true { usleep(1000); await Task.yield() } } }
            while started.value < busy { usleep(1000) }
            Task.detached { throughLevels { forceUnwrapNil() } }
            while true { sleep(60) }
        },
        Scenario("concurrent-crashes", "eight threads crashing at once leave one complete record and no hang",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference", "cch_crash_at_barrier"],
                               crashedOffMainThread: true),
                 backtracerAlone: .init(reason: "without capture the runtime's own lock lets a second crashing thread in once the first report is done, and it sometimes starts the backtracer again before the process dies and hangs there",
                                        reports: 1, endings: [.signal(SIGSEGV)]))
        { _ in throughLevels { cch_concurrent_crashes(8) } },
        Scenario("heap-corruption", "glibc aborting inside free() (arena lock held) is recorded without deadlock, with glibc's message",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, frames: ["cch_heap_corruption"] + chain, abortMessage: "free(): invalid next size (normal)"))
        { _ in throughLevels { cch_heap_corruption() } },
        Scenario("double-free", "a double free caught by glibc's tcache is recorded with glibc's message, as it printed it",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, frames: ["cch_double_free"] + chain, abortMessage: "double free detected"))
        { _ in throughLevels { cch_double_free() } },
        Scenario("fortify-overflow", "a fortified memcpy overflowing its destination is recorded with glibc's message, as it printed it",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, frames: ["cch_fortify_overflow"] + chain, abortMessage: "*** buffer overflow detected ***"))
        { _ in throughLevels { cch_fortify_overflow() } },
        Scenario("crash-while-malloc-busy", "a crash while other threads hold glibc's malloc locks is recorded without deadlock",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference", "cch_crash_while_malloc_busy"] + chain))
        { _ in throughLevels { cch_crash_while_malloc_busy(3) } },
        Scenario("forked-child", "a child forked after start records its own crash under its own pid",
                 ending: .exit(100 + SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference", "cch_crash_in_forked_child"] + chain,
                               forkedChild: true))
        { _ in throughLevels { cch_crash_in_forked_child() } },
        Scenario("crash-in-handler", "a fault inside the crash handler still ends the process with the original signal",
                 ending: .signal(SIGABRT),
                 record: .init(signal: SIGABRT, frames: [], mayBeIncomplete: true),
                 configure: { $0._testCrashInsideHandler = true })
        { _ in throughLevels { cch_abort() } },
        Scenario("fault-in-unwinder", "a fault inside the unwinder (as damaged unwind tables would cause) keeps the frames found so far, and the process dies of its signal",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference"],
                               incompleteAllowed: true,
                               note: "the unwinder faulted on the crashed thread's stack after 4 frames"),
                 configure: { $0._testFaultInsideUnwinder = true })
        { _ in throughLevels { cch_null_dereference() } },
        Scenario("frame-records-only", "walked by frame records alone (as code without call-frame information is), the crash keeps its frames down to main, and a note says so",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference"] + chain,
                               note: "frames come from frame records only, not call-frame information (test hook)"),
                 configure: { $0._testFrameRecordsOnly = true })
        { _ in throughLevels { cch_null_dereference() } },
        Scenario("max-frames-one", "maxFrames 1 keeps the faulting frame alone and counts the frames left out",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference"],
                               truncatedFrames: true, omittedFrames: true),
                 configure: { $0.maxFrames = 1 })
        { _ in throughLevels { cch_null_dereference() } },
        Scenario("hang-in-handler", "a handler that hangs is ended by its watchdog with the original signal",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, frames: [], mayBeIncomplete: true),
                 configure: {
                     $0._testHangInsideHandler = true
                     $0.watchdog = .seconds(1)
                 })
        { _ in throughLevels { cch_null_dereference() } },
        Scenario("signal-from-other-process", "kill -SEGV from another process is recorded with the sender",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SI_USER", frames: chain, fromOtherProcess: true))
        { _ in throughLevels { cch_signal_from_other_process(SIGSEGV) } },
        Scenario("handler-before", "a handler installed before CrashCapture still runs, and the process still dies",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference_with_errno"] + chain),
                 stderrContains: [chained, "errno in user handler 4242\n"],
                 beforeStart: { cch_install_handler_before(chained) })
        { _ in throughLevels { cch_null_dereference_with_errno(4242) } },
        Scenario("handler-after", "a handler installed after CrashCapture that chains to it still gets the record written",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference"] + chain),
                 stderrContains: [late],
                 backtracerAlone: .init(reason: "without capture the scenario's handler calls the runtime's as a plain function, without the mask and SA_NODEFER it was installed with, and the runtime's report then leaves swift-backtrace running; capture delivers it as the kernel would",
                                        reports: 1, endings: [.signal(SIGSEGV)]))
        { _ in
            cch_install_handler_after(late)
            throughLevels { cch_null_dereference() }
        },
        Scenario("swift-backtracer", "the Swift runtime's backtracer still prints after CrashCapture wrote its record",
                 ending: .signal(SIGSEGV),
                 record: nullDereference(),
                 stderrContains: ["Program crashed"],
                 output: .normalised(reason: "the backtracer prints addresses (ASLR), register and memory contents, build-ids and its own run time",
                                     BacktracerOutput.normaliseText),
                 environment: ["SWIFT_BACKTRACE": "enable=yes,interactive=no,color=no,symbolicate=off"])
        { _ in throughLevels { cch_null_dereference() } },
        Scenario("backtracer-json", "the Swift backtracer's JSON report is complete and lists the same crashed-thread frames as without CrashCapture",
                 ending: .signal(SIGSEGV),
                 record: nullDereference(),
                 output: .normalised(reason: "the backtracer's notice on stderr holds the crash address (ASLR)", BacktracerOutput.normaliseText),
                 environment: ["SWIFT_BACKTRACE": "enable=yes,interactive=no,color=no,format=json,output-to={dir},symbolicate=full"],
                 check: BacktracerOutput.compareJSONReports)
        { _ in throughLevels { cch_null_dereference() } },
        Scenario("main-returns-after-worker-crash", "a worker's crash ends the process even though main's nanosleep would be cut short and main would exit(0)",
                 ending: .signal(SIGSEGV),
                 record: nullDereference { $0.crashedOffMainThread = true; $0.otherThreadsStopped = true },
                 backtracerAlone: .init(reason: "the runtime's backtracer runs first, with or without capture, and the signal it suspends main with cuts main's nanosleep short: main's exit(0) and the crash race",
                                        reports: 1, endings: [.signal(SIGSEGV), .exit(0)]))
        { _ in
            let worker = Thread {
                cch_wait_main_settled()
                usleep(20_000) // main is inside its nanosleep by now
                throughLevels { cch_null_dereference() }
            }
            worker.start()
            cch_mark_main_settled()
            cch_sleep_once_then_exit(10)
        },
        Scenario("more-threads-than-recorded", "1,100 threads that exit(0) as soon as a file appears in the record directory: all are stopped before the record is created, 1,024 recorded, a note says the rest were left out",
                 ending: .signal(SIGSEGV),
                 record: nullDereference { $0.otherThreadsStopped = true; $0.minimumOtherThreads = 1024; $0.note = "the rest were stopped but left out" },
                 maxSeconds: 20)
        { context in
            cch_start_threads_that_exit_on_new_file(1100, context.directory, 0)
            throughLevels { cch_null_dereference() }
        },
        Scenario("threads-stopped-though-not-recorded", "with recordOtherThreads off, 50 threads that exit(0) as soon as a file appears in the record directory, half of them blocking every signal, are still stopped: death by the crash, only the crashed thread in the record",
                 ending: .signal(SIGSEGV),
                 record: nullDereference(),
                 configure: { $0.recordOtherThreads = false },
                 check: { outcome in
                     guard let path = outcome.ownRecordFiles.first, let record = try? CrashRecordReader.read(path: path) else { return ["no record"] }
                     return record.threads.count == 1 ? [] : ["recordOtherThreads is off, yet the record lists \(record.threads.count) threads"]
                 })
        { context in
            cch_start_threads_that_exit_on_new_file(25, context.directory, 0)
            cch_start_threads_that_exit_on_new_file(25, context.directory, 1)
            throughLevels { cch_null_dereference() }
        },
        Scenario("thread-helper-too-slow", "a thread helper that stalls past its deadline (half the 2 s watchdog) is killed: the blocking thread is listed without frames, a note says why, the crash is unchanged and nothing is left running",
                 ending: .signal(SIGSEGV),
                 record: nullDereference { $0.otherThreadsStopped = true; $0.threadNotStopped = false; $0.note = "did not finish (ETIMEDOUT" },
                 maxSeconds: 6,
                 configure: { $0.watchdog = .seconds(2); $0._testSlowThreadHelper = true },
                 check: { outcome in
                     guard let path = outcome.ownRecordFiles.first, let record = try? CrashRecordReader.read(path: path) else { return ["no record"] }
                     let others = record.threads.filter { !$0.crashed }
                     return others.count == 1 && others[0].frames.isEmpty && !others[0].ptraced
                         ? [] : ["expected one thread without frames, not ptraced: \(others.map { ($0.tid, $0.frames.count, $0.ptraced) })"]
                 })
        { _ in
            cch_start_thread_blocking_all_signals()
            throughLevels { cch_null_dereference() }
        },
        Scenario("blocking-threads-stopped-before-record", "20 threads that block every signal and exit(0) as soon as a file appears in the record directory: the ptrace helper stops them before the record file is created; all have frames",
                 ending: .signal(SIGSEGV),
                 record: nullDereference { $0.otherThreadsStopped = true; $0.threadPtraced = true; $0.everyThreadHasFrames = true; $0.minimumOtherThreads = 20 })
        { context in
            cch_start_threads_that_exit_on_new_file(20, context.directory, 1)
            throughLevels { cch_null_dereference() }
        },
        Scenario("identity-changing-during-crash", "a thread republishing the $AppEnd (a new identity published in a loop) while main crashes: the record's $AppEnd is whole, with one of the identities set",
                 ending: .signal(SIGSEGV),
                 record: nullDereference { $0.otherThreadsStopped = true },
                 check: { outcome in
                     guard let path = outcome.ownRecordFiles.first, let record = try? CrashRecordReader.read(path: path),
                           let json = record.appEndJSON,
                           let event = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] else {
                         return ["no parsable $AppEnd"]
                     }
                     // One update's values, all three: a torn copy would mix two updates.
                     let distinctID = event["distinct_id"] as? String ?? ""
                     let login = event["login_id"] as? String ?? ""
                     let anonymous = event["anonymous_id"] as? String ?? ""
                     let number = distinctID.hasPrefix("user-") ? Int(distinctID.dropFirst(5)) : nil
                     return number != nil && login == distinctID && anonymous == "anonymous-\(number!)"
                         ? [] : ["$AppEnd identity torn or missing: distinct_id \(distinctID.debugDescription), login_id \(login.debugDescription), anonymous_id \(anonymous.debugDescription)"]
                 })
        { context in
            let updates = UpdateCounter()
            let updater = Thread {
                var i = 0
                while true {
                    i += 1
                    context.appEnd.publish(identity: EventIdentity(anonymousID: "anonymous-\(i)", loginID: "user-\(i)"))
                    updates.increment()
                }
            }
            updater.start()
            while updates.value < 2000 { usleep(1000) }
            throughLevels { cch_null_dereference() }
        },
        Scenario("null-function-pointer", "a call through a NULL function pointer keeps its callers: frame 0 is 0x0, then the caller and the level chain",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_call_null_function_pointer"] + chain, faultAddress: 0,
                               firstFrameAddress: 0))
        { _ in throughLevels { cch_call_null_function_pointer() } },
        Scenario("null-function-pointer-by-frame-records", "walked by frame records alone, a call through NULL still keeps its caller (the return address the call pushed) and the frame records below it",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_call_null_function_pointer"] + chain, faultAddress: 0,
                               firstFrameAddress: 0, note: "frames come from frame records only, not call-frame information (test hook)"),
                 configure: { $0._testFrameRecordsOnly = true })
        { _ in throughLevels { cch_call_null_function_pointer() } },
        Scenario("previous-handler-flags", "a previous handler runs as the kernel would run it: SA_RESETHAND, its own full mask, not on the alternate stack",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference_with_errno"] + chain, faultAddress: 0),
                 stdoutContains: ["previous-handler-flags: running inside the alternate stack: no\n",
                                  "previous-handler-flags: disposition already SIG_DFL (SA_RESETHAND): yes\n",
                                  "previous-handler-flags: SIGUSR1 blocked: yes\n", "previous-handler-flags: SIGPROF blocked: yes\n",
                                  "previous-handler-flags: errno 77\n"],
                 beforeStart: { cch_install_flags_probe_handler() })
        { _ in throughLevels { cch_null_dereference_with_errno(77) } },
        Scenario("recovering-handler", "a previous handler that repairs the fault (mprotect) lets the program go on: exit 0, no record",
                 ending: .exit(0), record: nil,
                 stdoutContains: ["recovering handler repaired the page\n", "recovered 42\n"],
                 beforeStart: { cch_install_recovering_handler() })
        { _ in
            var value: Int32 = 0
            throughLevels { value = cch_write_protected_page() }
            print("recovered \(value)")
            exit(0)
        },
        Scenario("one-thread-in-previous-handler", "four threads crashing at once: one at a time enters the previous handler, and its crash is the record's, the others crashed too",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference", "cch_crash_at_barrier"],
                               crashedOffMainThread: true),
                 stdoutContains: ["counting handler: threads inside at once 1\n"],
                 stdoutLacks: ["counting handler: threads inside at once 2\n"],
                 output: .notCompared(reason: "without capture the kernel lets every crashing thread into the handler at once, as many as reach it before the process dies"),
                 beforeStart: { cch_install_counting_handler() },
                 check: { outcome in
                     var failures: [String] = []
                     let entries = outcome.stdout.components(separatedBy: "threads inside at once").count - 1
                     if entries != 1 { failures.append("the previous handler ran \(entries) times, not once: the first thread's fault ends the process") }
                     guard let path = outcome.ownRecordFiles.first, let record = try? CrashRecordReader.read(path: path) else { return failures }
                     let others = record.threads.filter(\.alsoCrashed).count
                     if others != 3 { failures.append("\(others) other threads recorded as crashed too, not 3") }
                     return failures
                 })
        { _ in throughLevels { cch_concurrent_crashes(4) } },
        Scenario("concurrent-repairs", "a previous handler that repairs faults, four threads faulting at once: each is repaired in turn, the program goes on (exit 0, no record)",
                 ending: .exit(0), record: nil,
                 stdoutContains: ["4 writes landed\n"],
                 maxSeconds: 10,
                 beforeStart: { cch_install_silent_repairing_handler() })
        { _ in
            var written: Int32 = 0
            throughLevels { written = cch_concurrent_repaired_writes(4) }
            print("\(written) writes landed")
            exit(0)
        },
        Scenario("previous-handler-longjmp", "a thread left a previous handler with siglongjmp (a memory probe): a later crash on another thread is still recorded, at once",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference", "cch_probe_on_thread_then_crash"] + chain),
                 stdoutContains: ["probe: unreadable\n"],
                 maxSeconds: 10,
                 beforeStart: { cch_install_probing_handler() })
        { _ in throughLevels { cch_probe_on_thread_then_crash() } },
        Scenario("sigtrap-ignored", "SIGTRAP ignored before start and sent by the process is still ignored: exit 0, no record",
                 ending: .exit(0), record: nil,
                 stdoutContains: ["still running after SIGTRAP\n"],
                 beforeStart: { _ = signal(SIGTRAP, SIG_IGN) })
        { _ in
            throughLevels { _ = kill(getpid(), SIGTRAP) }
            usleep(20_000)
            print("still running after SIGTRAP")
            exit(0)
        },
        Scenario("survives-then-crashes", "a SIGBUS the program survives (BUS_MCEERR_AO, handled) leaves capture clean for the SIGSEGV that follows",
                 ending: .signal(SIGSEGV),
                 record: nullDereference(),
                 stdoutContains: ["survived SIGBUS BUS_MCEERR_AO\n"], maxSeconds: 10,
                 beforeStart: { cch_install_mce_handler() })
        { _ in
            throughLevels {
                cch_queue_sigbus_mce_ao()
                cch_null_dereference()
            }
        },
        Scenario("survives-then-crashes-thread", "after a survived SIGBUS on main, a crash on another thread is recorded at once",
                 ending: .signal(SIGSEGV),
                 record: nullDereference { $0.crashedOffMainThread = true },
                 stdoutContains: ["survived SIGBUS BUS_MCEERR_AO\n"], maxSeconds: 10,
                 beforeStart: { cch_install_mce_handler() })
        { _ in
            cch_queue_sigbus_mce_ao()
            onSecondaryThread { cch_null_dereference() }
        },
        Scenario("vfork-child-crash", "a vfork child that crashes does not disable capture in its parent, which then crashes and is recorded",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference", "cch_vfork_child_crash"] + chain,
                               faultAddress: 0, childRecords: 0...1),
                 stdoutContains: ["vfork child ended by signal \(SIGSEGV)\n"], maxSeconds: 10)
        { _ in throughLevels { cch_vfork_child_crash() } },
        Scenario("fd-limit", "a crash with every file descriptor in use (EMFILE) still leaves a complete record",
                 ending: .signal(SIGSEGV),
                 record: nullDereference(),
                 stdoutContains: ["file descriptors exhausted (EMFILE)\n"])
        { _ in crashAtTheDescriptorLimit() },
        Scenario("fd-limit-listed", "fd-limit with the descriptors counted by listing /proc/self/fd, as on a kernel before 6.2",
                 ending: .signal(SIGSEGV),
                 record: nullDereference(),
                 stdoutContains: ["file descriptors exhausted (EMFILE)\n"],
                 configure: { $0._testListDescriptors = true })
        { _ in crashAtTheDescriptorLimit() },
        Scenario("fd-limit-hard", "fd-limit with the hard limit lowered too: the handler cannot raise it and has only the descriptor it kept",
                 ending: .signal(SIGSEGV),
                 record: nullDereference(),
                 stdoutContains: ["file descriptors exhausted (EMFILE)\n"])
        { _ in crashAtTheDescriptorLimit(hard: true) },
        Scenario("images-from-maps", "a null dereference whose image table comes from /proc/self/maps alone, as the kernel names the files",
                 ending: .signal(SIGSEGV),
                 record: nullDereference(),
                 configure: { $0._testImagesFromMaps = true })
        { _ in throughLevels { cch_null_dereference() } },
        Scenario("dlopen-after-start", "a library loaded after start (libbz2, one object) is in the image table, read from the link map",
                 ending: .signal(SIGSEGV),
                 record: nullDereference(),
                 stdoutContains: ["loaded \(laterLibrary)\n"])
        { _ in
            loadLibrary(laterLibrary)
            throughLevels { cch_null_dereference() }
        },
        Scenario("dlopen-many-after-start", "libcurl and the thirty-odd libraries it needs, loaded after start, are all in the image table",
                 ending: .signal(SIGSEGV),
                 record: nullDereference(),
                 stdoutContains: ["loaded libcurl.so.4\n"])
        { _ in
            loadLibrary("libcurl.so.4")
            throughLevels { cch_null_dereference() }
        },
        Scenario("dlclose-after-start", "a library loaded before start and unloaded after it is not in the image table",
                 ending: .signal(SIGSEGV),
                 record: nullDereference(),
                 stdoutContains: ["unloaded \(laterLibrary)\n"],
                 beforeStart: { loadLibrary(laterLibrary, quiet: true) })
        { _ in
            if let handle = dlopen(laterLibrary, RTLD_NOW | RTLD_NOLOAD) {
                dlclose(handle)   // the reference just taken
                dlclose(handle)   // the one beforeStart took: the last
            }
            if dlopen(laterLibrary, RTLD_NOW | RTLD_NOLOAD) == nil { say("unloaded \(laterLibrary)\n") }
            throughLevels { cch_null_dereference() }
        },
        Scenario("heap-object", "a crash holding a heap object: the record keeps a window of the memory its registers and stack point at",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference_holding"] + chain, faultAddress: 0))
        { _ in
            throughLevels {
                cch_null_dereference_holding(cch_heap_object())
            }
        },
        Scenario("fsize-limit", "RLIMIT_FSIZE soft limit of 1 KiB: still death by SIGSEGV (not SIGXFSZ) and a complete record",
                 ending: .signal(SIGSEGV),
                 record: nullDereference())
        { _ in
            throughLevels {
                cch_limit_file_size(1024, -1)
                cch_null_dereference()
            }
        },
        Scenario("fsize-limit-hard", "RLIMIT_FSIZE soft = hard = 2 KiB: death by SIGSEGV, a record that holds at least the signal, the crashed thread's frames and the main executable's image",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference"] + chain, incompleteAllowed: true),
                 stderrContains: [StderrSummary.prefix + "record not written whole: writing it failed: EFBIG: file too large (errno \(EFBIG))\n"],
                 output: .normalised(reason: "the handler adds its summary of the record it could not write whole", StderrSummary.removed(from:)),
                 check: { outcome in
                     // The summary says who crashed how, and names the record file the run left.
                     guard let summary = StderrSummary(stderr: outcome.stderr) else { return ["no summary on stderr"] }
                     var failures: [String] = []
                     let crash = "pid \(outcome.pid) tid \(outcome.pid) crashed: SIGSEGV (SEGV_MAPERR) at 0x0"
                     if summary.crash != crash { failures.append("the summary says \(summary.crash.debugDescription), not \(crash.debugDescription)") }
                     let named = summary.partialRecord?.replacingOccurrences(of: "<dir>", with: outcome.directory)
                     if named == nil || named != outcome.ownRecordFiles.first {
                         failures.append("the summary names \(named ?? "no file"), the run left \(outcome.ownRecordFiles)")
                     }
                     return failures
                 })
        { _ in
            throughLevels {
                cch_limit_file_size(2048, 2048)
                cch_null_dereference()
            }
        },
        Scenario("async-signals-during-record", "SIGPROF, SIGUSR1 and SIGCHLD handlers of the program do not run after the crash",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference", "cch_async_signals_then_crash"] + chain,
                               faultAddress: 0),
                 stdoutContains: ["SIGPROF, SIGUSR1 and SIGCHLD arriving; crashing\n"], stdoutLacks: ["late async signal"])
        { context in throughLevels { cch_async_signals_then_crash(context.directory) } },
        Scenario("crash-while-dl-iterate-phdr", "a crash while another thread holds the loader lock (inside dl_iterate_phdr) is recorded with frames, quickly, and the previous handler runs",
                 ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_null_dereference_with_errno"] + chain, faultAddress: 0,
                               otherThreadsStopped: true, everyThreadHasFrames: true),
                 stderrContains: [phdrMarker, "errno in user handler 4242\n"], maxSeconds: 4,
                 beforeStart: { cch_install_handler_before(phdrMarker) })
        { _ in
            cch_start_thread_inside_dl_iterate_phdr()
            throughLevels { cch_null_dereference_with_errno(4242) }
        },
        Scenario("crash-with-thread-blocking-signals", "a thread that blocks every signal cannot stop itself: the ptrace helper stops it and records its registers and frames",
                 ending: .signal(SIGSEGV),
                 record: nullDereference { $0.otherThreadsStopped = true; $0.threadPtraced = true; $0.everyThreadHasFrames = true })
        { _ in
            cch_start_thread_blocking_all_signals()
            throughLevels { cch_null_dereference() }
        },
        Scenario("thread-blocking-signals-ptrace-refused", "a seccomp filter refuses ptrace: the thread that blocks every signal is listed as not stopped, without frames, and a note says why; the crash is unchanged",
                 ending: .signal(SIGSEGV),
                 record: nullDereference { $0.otherThreadsStopped = true; $0.threadNotStopped = true; $0.note = "could not ptrace" },
                 beforeStart: { cch_refuse_ptrace() })
        { _ in
            cch_start_thread_blocking_all_signals()
            throughLevels { cch_null_dereference() }
        },
        Scenario("memory-reads-refused", "a seccomp filter refuses process_vm_readv: the handler reads memory through a pipe instead, and the record is as complete as without the filter",
                 ending: .signal(SIGSEGV),
                 record: nullDereference(),
                 beforeStart: { cch_refuse_memory_reads() })
        { _ in
            throughLevels { cch_null_dereference() }
        },
        Scenario("thread-blocking-signals-no-helper", "with threadHelper off, the thread that blocks every signal is listed as not stopped, without frames",
                 ending: .signal(SIGSEGV),
                 record: nullDereference { $0.otherThreadsStopped = true; $0.threadNotStopped = true },
                 configure: { $0.threadHelper = false })
        { _ in
            cch_start_thread_blocking_all_signals()
            throughLevels { cch_null_dereference() }
        },
        Scenario("hundred-threads-blocking-calls", "100 threads, each in one of a dozen blocking calls, half of them blocking every signal: every thread is stopped and has registers and frames",
                 ending: .signal(SIGSEGV),
                 record: nullDereference { $0.otherThreadsStopped = true; $0.threadPtraced = true; $0.everyThreadHasFrames = true; $0.minimumOtherThreads = 100 },
                 maxSeconds: 20)
        { context in
            cch_start_blocking_threads(100)
            context.pauseIfAsked()
            throughLevels { cch_null_dereference() }
        },
        Scenario("dispatch-crash", "a crash in a block on a global Dispatch queue (its workers block every signal): recorded with every worker's frames",
                 ending: .signal(SIGSEGV),
                 record: nullDereference { $0.crashedOffMainThread = true; $0.otherThreadsStopped = true; $0.everyThreadHasFrames = true })
        { _ in
            // One busy worker (more would wait for libdispatch to grow its pool, a second each).
            let started = UpdateCounter()
            DispatchQueue.global().async { started.increment(); while true { usleep(1000) } }
            while started.value < 1 { usleep(1000) }
            DispatchQueue.global().async { throughLevels { cch_null_dereference() } }
            while true { sleep(60) }
        },
        Scenario("sigkill", "SIGKILL ends the process and no handler can run: no record",
                 ending: .signal(SIGKILL), record: nil)
        { _ in throughLevels { kill(getpid(), SIGKILL) } },
        Scenario("clean-exit", "a normal exit leaves no crash record",
                 ending: .exit(0), record: nil)
        { _ in throughLevels { exit(0) } },
        Scenario("exit-from-thread", "exit() from a secondary thread ends the process with that status and no record",
                 ending: .exit(3), record: nil)
        { _ in throughLevels { cch_exit_from_thread(3) } },
    ]

    /// The scenario called `name`, if any.
    package static func named(_ name: String) -> Scenario? { all.first { $0.name == name } }

    /// Performs `scenario` in this process: starts CrashCapture writing to `directory`, then
    /// dies (or exits) as the scenario says. Returns only if the scenario failed to end the
    /// process, which the caller reports.
    package static func perform(_ scenario: Scenario, directory: String) throws {
        scenario.beforeStart?()
        var configuration = CrashHandler.Configuration(directory: directory, appName: "crash-harness", appVersion: CrashCaptureLibrary.version)
        configuration.runID = EventDraft.newTrackID()
        scenario.configure?(&configuration)
        // The compensating $AppEnd, as CrashReporting publishes it for an app.
        let appEnd = CrashAppEndPublisher(appName: configuration.appName, appVersion: configuration.appVersion, runID: configuration.runID)
        appEnd.publish(identity: EventIdentity(anonymousID: "crash-harness-anonymous"))
        try CrashHandler.start(configuration)
        CrashHandler.leaveBreadcrumb("scenario \(scenario.name) starting", level: .notice)
        var logger = Logger(label: "crash-harness") { BreadcrumbLogHandler(label: $0) }
        logger.logLevel = .info
        logger.info("performing \(scenario.name)")
        CrashHandler.leaveBreadcrumb("about to crash", level: .warning)
        scenario.perform(ScenarioContext(directory: directory, appEnd: appEnd))
    }
}

/// A count shared between a scenario's threads.
final class UpdateCounter: Sendable {
    private let count = Atomic<Int>(0)
    func increment() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

/// Every descriptor slot taken (EMFILE), then a null dereference, through the levels (fd-limit;
/// with `hard`, the hard limit lowered to the soft one).
func crashAtTheDescriptorLimit(hard: Bool = false) {
    throughLevels {
        cch_exhaust_file_descriptors(hard ? 1 : 0)
        cch_null_dereference()
    }
}
