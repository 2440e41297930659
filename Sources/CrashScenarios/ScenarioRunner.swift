// ScenarioRunner.swift — runs one scenario as a child process of the harness binary, with and without CrashCapture, and checks what it left.
//
// Every run is judged against the truth: the same scenario run again with CRASHCAPTURE_DISABLE=1
// (CrashHandler.start installs nothing) is the reference. A crash reporter must not change how
// a program ends or what it prints, so the run fails when its ending, stdout or stderr differ
// from the reference's (a scenario whose output legitimately differs between any two runs
// declares a normaliser, or opts out with a reason; the ending is always compared). Each child
// leads its own process group; anything of that group still running after it ended is a failure.
import CrashCapture
package import CrashSymbolication
package import Foundation
package import ProcessSpawning
#if canImport(Glibc)
import Glibc
#endif

/// One child process of a scenario.
package struct ProcessOutcome: Sendable {
    /// How it ended, or nil when it had to be killed at the time limit (a hang).
    package var ending: Scenario.Ending?
    /// Seconds from spawn to exit.
    package var seconds: Double
    package var stdout: String
    package var stderr: String
    /// The run's directory (records, and files the scenario leaves).
    package var directory: String
    /// The child's pid (and process group).
    package var pid: pid_t
    /// Processes of its group still running ~2 s after it ended (they were killed).
    package var leftRunning: [ChildProcess.Leftover]

    package init(ending: Scenario.Ending?, seconds: Double, stdout: String, stderr: String, directory: String, pid: pid_t,
                leftRunning: [ChildProcess.Leftover]) {
        self.ending = ending
        self.seconds = seconds
        self.stdout = stdout
        self.stderr = stderr
        self.directory = directory
        self.pid = pid
        self.leftRunning = leftRunning
    }
}

/// What happened to one child run.
package struct RunOutcome: Sendable {
    package var scenario: String
    /// How it ended, or nil when it had to be killed at the time limit (a hang).
    package var ending: Scenario.Ending?
    /// Seconds from spawn to exit.
    package var seconds: Double
    package var stderr: String
    package var stdout: String
    /// Record files found afterwards (complete and `.partial`), from any process.
    package var recordFiles: [String]
    /// The records of the process the scenario is about: the harness child, or for a
    /// `forkedChild` scenario the child it forked.
    package var ownRecordFiles: [String]
    /// Records left by other processes (children of the harness child).
    package var childRecordFiles: [String]
    /// The run's directory.
    package var directory: String
    /// The harness child's pid.
    package var pid: pid_t
    /// Processes of the child's group still running ~2 s after it ended (they were killed).
    package var leftRunning: [ChildProcess.Leftover]
    /// The same scenario with `CRASHCAPTURE_DISABLE=1`; nil when it was not run.
    package var reference: ProcessOutcome?
    /// For a scenario with `backtracerReference`: the same scenario with CrashCapture disabled
    /// and Swift's backtracer writing its JSON report into this run's directory.
    package var backtracerRun: ProcessOutcome?

    package init(scenario: String, ending: Scenario.Ending?, seconds: Double, stderr: String, stdout: String, recordFiles: [String],
                ownRecordFiles: [String], childRecordFiles: [String], directory: String, pid: pid_t,
                leftRunning: [ChildProcess.Leftover], reference: ProcessOutcome?, backtracerRun: ProcessOutcome? = nil) {
        self.backtracerRun = backtracerRun
        self.scenario = scenario
        self.ending = ending
        self.seconds = seconds
        self.stderr = stderr
        self.stdout = stdout
        self.recordFiles = recordFiles
        self.ownRecordFiles = ownRecordFiles
        self.childRecordFiles = childRecordFiles
        self.directory = directory
        self.pid = pid
        self.leftRunning = leftRunning
        self.reference = reference
    }
}

/// One run's verdict.
package struct RunReport: Sendable {
    package var outcome: RunOutcome
    /// Empty when the run passed.
    package var failures: [String]
    /// The crashed thread's symbolicated frames (names), for diagnostics.
    package var frames: [String]
    package var passed: Bool { failures.isEmpty }
}

package enum ScenarioRunner {
    /// Spawns `harness run <scenario> --dir <directory>` with Swift's backtracer off (unless the
    /// scenario turns it on) and waits at most `timeout` seconds; then, with `reference`, the
    /// same with `CRASHCAPTURE_DISABLE=1` in `<directory>-reference`.
    /// - Throws: when a child cannot be spawned.
    package static func run(_ scenario: Scenario, harness: String, directory: String, timeout: Double = 60,
                           reference: Bool = true) throws -> RunOutcome {
        let main = try spawn(scenario, harness: harness, directory: directory, timeout: timeout, captureDisabled: false)
        var referenceOutcome: ProcessOutcome?
        if reference {
            let referenceDirectory = directory + "-reference"
            try FileManager.default.createDirectory(atPath: referenceDirectory, withIntermediateDirectories: true)
            referenceOutcome = try spawn(scenario, harness: harness, directory: referenceDirectory, timeout: timeout, captureDisabled: true)
        }
        var backtracerRun: ProcessOutcome?
        if scenario.backtracerReference {
            let backtracerDirectory = directory + "-backtracer"
            try FileManager.default.createDirectory(atPath: backtracerDirectory, withIntermediateDirectories: true)
            backtracerRun = try spawn(scenario, harness: harness, directory: backtracerDirectory, timeout: timeout, captureDisabled: true,
                                      backtracer: "enable=yes,interactive=no,format=json,output-to=\(backtracerDirectory)")
        }
        let files = recordFiles(in: directory)
        let forked = scenario.record?.forkedChild ?? false
        let own = files.filter { (recordPid($0) == main.pid) != forked }
        let children = forked ? [] : files.filter { recordPid($0) != main.pid }
        return RunOutcome(scenario: scenario.name, ending: main.ending, seconds: main.seconds, stderr: main.stderr, stdout: main.stdout,
                          recordFiles: files, ownRecordFiles: own, childRecordFiles: children, directory: directory,
                          pid: main.pid, leftRunning: main.leftRunning, reference: referenceOutcome, backtracerRun: backtracerRun)
    }

    /// One child: its ending, output (the directory replaced by `<dir>`), group leftovers.
    static func spawn(_ scenario: Scenario, harness: String, directory: String, timeout: Double, captureDisabled: Bool,
                      backtracer: String? = nil) throws -> ProcessOutcome {
        let stdoutPath = directory + ".stdout", stderrPath = directory + ".stderr"
        defer {
            try? FileManager.default.removeItem(atPath: stdoutPath)
            try? FileManager.default.removeItem(atPath: stderrPath)
        }
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment.removeValue(forKey: CrashHandler.disableEnvironmentVariable)
        for (key, value) in scenario.environment { environment[key] = value.replacingOccurrences(of: "{dir}", with: directory) }
        if captureDisabled { environment[CrashHandler.disableEnvironmentVariable] = "1" }
        if let backtracer { environment["SWIFT_BACKTRACE"] = backtracer }
        let child = try ChildProcess.run(harness, ["run", scenario.name, "--dir", directory], environment: environment,
                                         stdout: stdoutPath, stderr: stderrPath, timeout: timeout, ownProcessGroup: true)
        let ending: Scenario.Ending?
        switch child.ending {
        case .timedOut: ending = nil
        case .signaled(let signal): ending = .signal(signal)
        case .exited(let code): ending = .exit(code)
        }
        func text(_ path: String) -> String {
            // Lossy: the backtracer dumps raw memory bytes.
            String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
                .replacingOccurrences(of: directory, with: "<dir>")
        }
        return ProcessOutcome(ending: ending, seconds: child.seconds, stdout: text(stdoutPath), stderr: text(stderrPath),
                              directory: directory, pid: child.pid, leftRunning: child.leftRunning)
    }

    static func recordFiles(in directory: String) -> [String] {
        ((try? RecordFileName.names(in: directory)) ?? []).map { directory + "/" + $0 }
    }

    /// The pid in a record's file name.
    package static func recordPid(_ path: String) -> pid_t? { RecordFileName(path)?.pid }

    /// The first line where two outputs differ, for a failure message.
    static func firstDifference(_ mine: String, _ theirs: String) -> String {
        let a = mine.split(separator: "\n", omittingEmptySubsequences: false)
        let b = theirs.split(separator: "\n", omittingEmptySubsequences: false)
        for index in 0..<max(a.count, b.count) {
            let left = index < a.count ? String(a[index]) : "<end>"
            let right = index < b.count ? String(b[index]) : "<end>"
            if left != right {
                return "line \(index + 1): \(left.prefix(200).debugDescription) vs reference \(right.prefix(200).debugDescription)"
            }
        }
        return "(trailing difference)"
    }

    /// Checks a run against its scenario and its reference run. `debugHarness` says whether the
    /// harness was a debug build (the Swift runtime reports some fatal messages only there).
    package static func verify(_ outcome: RunOutcome, scenario: Scenario, symbolicator: Symbolicator, debugHarness: Bool) -> RunReport {
        var failures: [String] = []
        switch outcome.ending {
        case nil: failures.append("hung: killed after the time limit")
        case let ending? where ending != scenario.ending:
            failures.append("ended with \(ending), expected \(scenario.ending)")
        default: break
        }
        if let limit = scenario.maxSeconds, outcome.seconds > limit {
            failures.append(String(format: "took %.2f s, more than the scenario's %.1f s", outcome.seconds, limit))
        }
        if !outcome.leftRunning.isEmpty {
            failures.append("left \(outcome.leftRunning.count) process(es) running: \(outcome.leftRunning.map(\.command).joined(separator: ", "))")
        }
        for text in scenario.stderrContains where !outcome.stderr.contains(text) {
            failures.append("stderr lacks \(text.debugDescription)")
        }
        for text in scenario.stdoutContains where !outcome.stdout.contains(text) {
            failures.append("stdout lacks \(text.debugDescription)")
        }
        for text in scenario.stdoutLacks where outcome.stdout.contains(text) {
            failures.append("stdout has \(text.debugDescription)")
        }
        if let reference = outcome.reference {
            failures += compare(outcome, with: reference, scenario: scenario)
        }
        if let check = scenario.check { failures += check(outcome) }
        failures += checkCrashLine(outcome, scenario: scenario)
        let (recordFailures, frames) = verifyRecords(outcome, scenario: scenario, symbolicator: symbolicator, debugHarness: debugHarness)
        return RunReport(outcome: outcome, failures: failures + recordFailures, frames: frames)
    }

    /// The one line the handler writes on stderr at a crash (CShims/crash/cc_summary.c): valid JSON, and
    /// for every record of the scenario's process one that names its file and its signal.
    static func checkCrashLine(_ outcome: RunOutcome, scenario: Scenario) -> [String] {
        let lines: [CrashLine]
        do { lines = try CrashLine.all(in: outcome.stderr) } catch { return ["a crash line on stderr is not valid JSON: \(error)"] }
        var failures: [String] = []
        for path in outcome.ownRecordFiles {
            var name = (path as NSString).lastPathComponent
            if name.hasSuffix(".partial") { name.removeLast(".partial".count) }
            guard let line = lines.first(where: { $0.record == name }) else {
                failures.append("no crash line on stderr names \(name): \(lines.map(\.record))")
                continue
            }
            if let record = try? CrashRecordReader.read(path: path), let signal = record.signal {
                if line.signal != signal.name || line.code != signal.codeName || line.tid != record.process?.tid ?? line.tid {
                    failures.append("the crash line says \(line.signal) \(line.code) on thread \(line.tid), the record \(signal.name) \(signal.codeName) on \(record.process?.tid ?? 0)")
                }
            }
        }
        return failures
    }

    /// The run against the truth: same ending, same output.
    static func compare(_ outcome: RunOutcome, with reference: ProcessOutcome, scenario: Scenario) -> [String] {
        var failures: [String] = []
        let describe = { (ending: Scenario.Ending?) in ending.map(\.description) ?? "a hang" }
        if reference.ending != outcome.ending {
            failures.append("ended with \(describe(outcome.ending)), the reference run (\(CrashHandler.disableEnvironmentVariable)=1) with \(describe(reference.ending))")
        }
        if !reference.leftRunning.isEmpty {
            failures.append("reference run left \(reference.leftRunning.count) process(es) running: \(reference.leftRunning.map(\.command).joined(separator: ", "))")
        }
        let normalise: (String) -> String
        switch scenario.output {
        case .exact: normalise = { $0 }
        case .normalised(_, let function): normalise = function
        case .notCompared: return failures
        }
        // The handler's one line at a crash is the only thing capture adds to the output.
        for (name, mine, theirs) in [("stdout", outcome.stdout, reference.stdout), ("stderr", CrashLine.removed(from: outcome.stderr), reference.stderr)] {
            let a = normalise(mine), b = normalise(theirs)
            if a != b { failures.append("\(name) differs from the reference run's: \(firstDifference(a, b))") }
        }
        return failures
    }

    /// The records: none, or exactly one of the scenario's process (plus what its children may
    /// leave), parsed and checked against the expectation.
    static func verifyRecords(_ outcome: RunOutcome, scenario: Scenario, symbolicator: Symbolicator, debugHarness: Bool) -> ([String], [String]) {
        var failures: [String] = []
        guard let expected = scenario.record else {
            if !outcome.recordFiles.isEmpty {
                failures.append("expected no record, found \(outcome.recordFiles.count): \(outcome.recordFiles.map { ($0 as NSString).lastPathComponent })")
            }
            return (failures, [])
        }
        if !expected.childRecords.contains(outcome.childRecordFiles.count) {
            failures.append("expected \(expected.childRecords) record(s) from child processes, found \(outcome.childRecordFiles.count)")
        }
        for path in outcome.childRecordFiles {
            do {
                let child = try CrashRecordReader.read(path: path)
                if let process = child.process, process.ppid != outcome.pid {
                    failures.append("a child's record (pid \(process.pid)) has parent \(process.ppid), not the harness child \(outcome.pid)")
                }
            } catch {
                failures.append("a child's record does not parse: \(error)")
            }
        }
        guard outcome.ownRecordFiles.count == 1, let path = outcome.ownRecordFiles.first else {
            failures.append("expected one record of pid \(outcome.pid)\(expected.forkedChild ? "'s forked child" : ""), found \(outcome.ownRecordFiles.count)")
            return (failures, [])
        }
        let record: CrashRecord
        do { record = try CrashRecordReader.read(path: path) } catch {
            failures.append("record does not parse: \(error)")
            return (failures, [])
        }
        let partialName = RecordFileName(path)?.isPartial ?? path.hasSuffix(RecordFileName.partialExtension)
        if partialName != !record.isComplete {
            failures.append("file name says \(partialName ? "partial" : "complete") but the record is \(record.completeness)")
        }
        if !record.isComplete && !expected.mayBeIncomplete && !expected.incompleteAllowed {
            failures.append("record incomplete: \(record.completeness)")
        }
        if expected.mayBeIncomplete && record.isComplete { failures.append("expected the handler to be cut short, but the record is complete") }
        guard let signal = record.signal else {
            failures.append("record has no signal section")
            return (failures, [])
        }
        if signal.number != expected.signal { failures.append("record signal \(signal.number), expected \(expected.signal)") }
        if signal.name != signalName(expected.signal) { failures.append("record signal name \(signal.name)") }
        if let code = expected.codeName, signal.codeName != code { failures.append("si_code \(signal.codeName), expected \(code)") }
        if let address = expected.faultAddress, signal.faultAddress != address {
            failures.append("fault address \(signal.faultAddress.map { "0x" + String($0, radix: 16) } ?? "none"), expected 0x\(String(address, radix: 16))")
        }
        if expected.fromOtherProcess {
            if let sender = signal.sender, let process = record.process, sender.pid != process.pid, sender.pid > 0 {} else {
                failures.append("expected a sender pid other than the process's own")
            }
        }
        if let message = expected.message, debugHarness || !expected.messageOnlyInDebug {
            if !(record.fatalMessage ?? "").contains(message) {
                failures.append("fatal message \((record.fatalMessage ?? "none").debugDescription) lacks \(message.debugDescription)")
            }
        }
        failures += checkRuntimeReports(record, expected: expected, referenceStderr: outcome.reference?.stderr)
        if let expectedAbort = expected.abortMessage {
            if let message = record.abortMessage {
                if !message.contains(expectedAbort) {
                    failures.append("abort message \(message.debugDescription) lacks \(expectedAbort.debugDescription)")
                }
                // The truth: what glibc printed on stderr when CrashCapture was not there.
                if let reference = outcome.reference {
                    for line in message.split(separator: "\n") where !reference.stderr.contains(line) {
                        failures.append("abort message line \(String(line).debugDescription) is not what glibc printed in the reference run: \(reference.stderr.suffix(300).debugDescription)")
                    }
                }
            } else {
                failures.append("no abort message; expected one containing \(expectedAbort.debugDescription)")
            }
        } else if let message = record.abortMessage {
            failures.append("an abort message where glibc printed none: \(message.debugDescription)")
        }
        if expected.mayBeIncomplete {
            if let process = record.process { failures += checkParent(process, expected: expected, outcome: outcome) }
            return (failures, [])
        }
        // A record cut short (incompleteAllowed) must still hold the crashed thread's frames;
        // the sections the handler may not have reached are checked only when it is complete.
        let cutShort = expected.incompleteAllowed && !record.isComplete
        let process = record.process
        if process == nil && !cutShort {
            failures.append("record has no process section")
            return (failures, [])
        }
        if let process { failures += checkParent(process, expected: expected, outcome: outcome) }
        if !cutShort, let process {
            if record.appName != "crash-harness" { failures.append("app name \(record.appName ?? "none")") }
            failures += checkAppEnd(record, process: process, outcome: outcome)
            if !record.images.contains(where: { $0.isMainExecutable && !$0.buildID.isEmpty }) {
                failures.append("main executable image with build-id missing")
            }
        }
        guard let thread = record.crashedThread else {
            failures.append("no crashed thread")
            return (failures, [])
        }
        if let process {
            if thread.tid != process.tid { failures.append("crashed thread \(thread.tid) is not the process section's \(process.tid)") }
            if expected.crashedOffMainThread == (thread.tid == process.pid) {
                failures.append(expected.crashedOffMainThread ? "crash recorded on the main thread" : "crash recorded off the main thread")
            }
        }
        if expected.truncatedFrames && !thread.truncated { failures.append("expected the unwind to stop at the frame limit") }
        if expected.omittedFrames && thread.omittedFrames <= 0 {
            failures.append("expected frames omitted in the middle of the deep stack, omittedFrames is \(thread.omittedFrames)")
        }
        if let first = expected.firstFrameAddress, thread.frames.first != first {
            failures.append("frame 0 is \(thread.frames.first.map { "0x" + String($0, radix: 16) } ?? "missing"), expected 0x\(String(first, radix: 16))")
        }
        failures += checkOtherThreads(record, expected: expected)
        if let note = expected.note, !record.notes.contains(where: { $0.contains(note) }) {
            failures.append("no note contains \(note.debugDescription); notes: \(record.notes)")
        }
        let threadFrames = symbolicator.threadFrames(of: thread, images: record.images)
        let frameNames = threadFrames.flatMap { $0.symbols.map { $0.symbol ?? "?" } }
        var remaining = expected.frames[...]
        for name in frameNames where !remaining.isEmpty && name.contains(remaining.first!) {
            remaining = remaining.dropFirst()
        }
        if let missing = remaining.first {
            failures.append("frames lack \(missing) (in order \(expected.frames)); got \(frameNames.count) frames: \(abbreviate(frameNames))")
        }
        if !expected.otherThreadAsyncFrames.isEmpty {
            let found = record.threads.filter { !$0.crashed }.first { other in
                let names = symbolicator.threadFrames(of: other, images: record.images)
                    .flatMap { $0.symbols.map { $0.symbol ?? "?" } }
                var left = expected.otherThreadAsyncFrames[...]
                for name in names where !left.isEmpty && name.contains(left.first!) { left = left.dropFirst() }
                return left.isEmpty
            }
            if let found {
                if expected.asyncFramesOnParkedThread && !(found.stopped && !found.ptraced) {
                    failures.append("the thread mid-chain (\(found.tid) \(found.name.debugDescription)) was not parked (stopped: \(found.stopped), ptraced: \(found.ptraced))")
                }
            } else {
                failures.append("no other thread's frames hold \(expected.otherThreadAsyncFrames) (a task mid-chain)")
            }
        }
        if !expected.parentTaskFrames.isEmpty {
            let names = threadFrames.filter { $0.taskDepth > 0 }.flatMap { $0.symbols.map { $0.symbol ?? "?" } }
            var left = expected.parentTaskFrames[...]
            for name in names where !left.isEmpty && name.contains(left.first!) { left = left.dropFirst() }
            if let missing = left.first {
                failures.append("the parent task's frames lack \(missing) (in order \(expected.parentTaskFrames)); got \(abbreviate(names))")
            }
        }
        if let run = outcome.backtracerRun {
            // The backtracer stops at the task's first context: its parent tasks are ours alone.
            failures += BacktracerOutput.compareRecordFrames(threadFrames.filter { $0.taskDepth == 0 }, images: record.images,
                                                             backtracerDirectory: run.directory)
        }
        return (failures, frameNames)
    }

    /// The Swift runtime's reports in a record: its fatal message when the scenario says there is
    /// none, the warning the scenario expects, and every warning against the truth (what the
    /// runtime printed on stderr in the reference run) and apart from the fatal message.
    static func checkRuntimeReports(_ record: CrashRecord, expected: Scenario.RecordExpectation, referenceStderr: String?) -> [String] {
        var failures: [String] = []
        let warnings = record.runtimeWarnings.map(\.text)
        if expected.noFatalMessage, let message = record.fatalMessage {
            failures.append("a fatal message where the runtime's fatal path was not taken: \(message.debugDescription)")
        }
        if let expectedWarning = expected.runtimeWarning {
            if !warnings.contains(where: { $0.contains(expectedWarning) }) {
                failures.append("no runtime warning contains \(expectedWarning.debugDescription); warnings: \(warnings)")
            }
            if let message = record.fatalMessage, message.contains(expectedWarning) {
                failures.append("the fatal message holds the runtime warning \(expectedWarning.debugDescription): \(message.debugDescription)")
            }
        }
        for warning in warnings {
            if let message = record.fatalMessage, message.contains(warning) {
                failures.append("the runtime warning \(warning.debugDescription) is in the fatal message too: \(message.debugDescription)")
            }
            if let referenceStderr, !referenceStderr.contains(warning) {
                failures.append("runtime warning \(warning.debugDescription) is not what the runtime printed in the reference run: \(referenceStderr.suffix(300).debugDescription)")
            }
        }
        return failures
    }

    /// The first and last frames of a long list, for a failure message.
    static func abbreviate(_ names: [String]) -> String {
        let short = names.map { $0.count > 60 ? String($0.prefix(60)) + "…" : $0 }
        if short.count <= 16 { return "\(short)" }
        return "\(Array(short.prefix(8))) … \(Array(short.suffix(8)))"
    }

    /// The record's process is the harness child (or, for a forked scenario, the child's child).
    static func checkParent(_ process: CrashedProcess, expected: Scenario.RecordExpectation, outcome: RunOutcome) -> [String] {
        if expected.forkedChild {
            return process.ppid == outcome.pid ? [] : ["record is not from the forked child (parent \(process.ppid), harness child \(outcome.pid))"]
        }
        var failures: [String] = []
        if process.pid != outcome.pid { failures.append("record's pid \(process.pid) is not the harness child's \(outcome.pid)") }
        if process.ppid != getpid() { failures.append("record's parent pid \(process.ppid) is not the runner's \(getpid())") }
        return failures
    }

    /// The compensating $AppEnd: a JSON object with a plausible duration.
    static func checkAppEnd(_ record: CrashRecord, process: CrashedProcess, outcome: RunOutcome) -> [String] {
        var failures: [String] = []
        if let json = record.appEndJSON, let data = json.data(using: .utf8),
           let event = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
           let properties = event["properties"] as? [String: Any] {
            if event["event"] as? String != "$AppEnd" { failures.append("app end event is \(event["event"] ?? "missing")") }
            let duration = (properties["$event_duration"] as? NSNumber)?.doubleValue ?? -1
            let uptime = process.uptimeSeconds
            if duration < 0 || duration > outcome.seconds + 1 || abs(duration - uptime) > 0.01 {
                failures.append("$event_duration \(duration) implausible (uptime \(uptime), run \(outcome.seconds) s)")
            }
            if (event["_track_id"] as? String)?.count != 36 { failures.append("$AppEnd lacks a UUID _track_id") }
            if properties["$app_end_reason"] as? String != "crash" { failures.append("$AppEnd's $app_end_reason is not \"crash\"") }
            if record.runID == nil || properties["$run_id"] as? String != record.runID {
                failures.append("$AppEnd's $run_id \(properties["$run_id"] ?? "missing") is not the record's run id \(record.runID ?? "missing")")
            }
        } else {
            failures.append("no parsable $AppEnd event")
        }
        return failures
    }

    /// Stopped / not stopped threads.
    static func checkOtherThreads(_ record: CrashRecord, expected: Scenario.RecordExpectation) -> [String] {
        guard expected.otherThreadsStopped || expected.threadNotStopped || expected.threadPtraced || expected.everyThreadHasFrames
        else { return [] }
        var failures: [String] = []
        let others = record.threads.filter { !$0.crashed }
        if others.isEmpty { failures.append("the record lists no thread besides the crashed one") }
        for thread in others {
            let held = thread.stopped || thread.ptraced, notStopped = thread.notStopped
            let who = "thread \(thread.tid) \(thread.name.debugDescription)"
            if (expected.otherThreadsStopped || expected.everyThreadHasFrames) && !held && !notStopped {
                failures.append("\(who) is listed neither as stopped (parked or ptraced) nor as not stopped")
            }
            if notStopped && !thread.frames.isEmpty {
                failures.append("\(who) is not stopped yet has \(thread.frames.count) frames")
            }
            if held && thread.registers.isEmpty {
                failures.append("\(who) was stopped but the record has no registers for it")
            }
            if expected.everyThreadHasFrames && (!held || thread.frames.isEmpty) {
                failures.append("\(who) has no frames (stopped: \(thread.stopped), ptraced: \(thread.ptraced), ptrace refused: \(thread.ptraceRefused))")
            }
        }
        if expected.threadNotStopped && !others.contains(where: { $0.notStopped }) {
            failures.append("no thread is listed as not stopped (one blocks every signal)")
        }
        if expected.threadPtraced && !others.contains(where: { $0.ptraced && !$0.frames.isEmpty }) {
            failures.append("no thread was read by the ptrace helper (one blocks every signal)")
        }
        if others.count < expected.minimumOtherThreads {
            failures.append("the record lists \(others.count) threads besides the crashed one, expected at least \(expected.minimumOtherThreads)")
        }
        return failures
    }
}
