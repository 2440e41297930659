// ScenarioRunner.swift — runs one scenario as a child process of the harness binary and checks what it left.
import CrashCapture
import CrashSymbolication
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What happened to one child run.
public struct RunOutcome: Sendable {
    public var scenario: String
    /// How it ended, or nil when it had to be killed at the time limit (a hang).
    public var ending: Scenario.Ending?
    /// Seconds from spawn to exit.
    public var seconds: Double
    public var stderr: String
    /// Record files found afterwards (complete and `.partial`).
    public var recordFiles: [String]
}

/// One run's verdict.
public struct RunReport: Sendable {
    public var outcome: RunOutcome
    /// Empty when the run passed.
    public var failures: [String]
    /// The crashed thread's symbolicated frames (names), for diagnostics.
    public var frames: [String]
    public var passed: Bool { failures.isEmpty }
}

public enum ScenarioRunner {
    /// Spawns `harness run <scenario> --dir <directory>` with Swift's backtracer off (unless the
    /// scenario turns it on) and waits at most `timeout` seconds.
    /// - Throws: when the child cannot be spawned.
    public static func run(_ scenario: Scenario, harness: String, directory: String, timeout: Double = 60) throws -> RunOutcome {
        let stderrPath = directory + ".stderr"
        defer { try? FileManager.default.removeItem(atPath: stderrPath) }
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment.removeValue(forKey: CrashCapture.disableEnvironmentVariable)
        for (key, value) in scenario.environment { environment[key] = value }
        let child = try ChildProcess.run(harness, ["run", scenario.name, "--dir", directory],
                                         environment: environment, stderr: stderrPath, timeout: timeout)
        let seconds = child.seconds
        let ending: Scenario.Ending?
        switch child.ending {
        case .timedOut: ending = nil
        case .signaled(let signal): ending = .signal(signal)
        case .exited(let code): ending = .exit(code)
        }
        let stderr = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".ccrec") || $0.hasSuffix(".ccrec.partial") }
            .sorted()
            .map { directory + "/" + $0 }
        return RunOutcome(scenario: scenario.name, ending: ending, seconds: seconds, stderr: stderr, recordFiles: files)
    }

    /// Checks a run against its scenario. `debugHarness` says whether the harness was a debug
    /// build (the Swift runtime reports some fatal messages only there).
    public static func verify(_ outcome: RunOutcome, scenario: Scenario, symbolicator: Symbolicator, debugHarness: Bool) -> RunReport {
        var failures: [String] = []
        var frameNames: [String] = []
        switch outcome.ending {
        case nil: failures.append("hung: killed after the time limit")
        case let ending? where ending != scenario.ending:
            failures.append("ended with \(ending), expected \(scenario.ending)")
        default: break
        }
        for text in scenario.stderrContains where !outcome.stderr.contains(text) {
            failures.append("stderr lacks \(text.debugDescription)")
        }
        guard let expected = scenario.record else {
            if !outcome.recordFiles.isEmpty { failures.append("expected no record, found \(outcome.recordFiles.count)") }
            return RunReport(outcome: outcome, failures: failures, frames: [])
        }
        guard outcome.recordFiles.count == 1, let path = outcome.recordFiles.first else {
            failures.append("expected one record, found \(outcome.recordFiles.count)")
            return RunReport(outcome: outcome, failures: failures, frames: [])
        }
        let record: CrashRecord
        do { record = try CrashRecordReader.read(path: path) } catch {
            failures.append("record does not parse: \(error)")
            return RunReport(outcome: outcome, failures: failures, frames: [])
        }
        if path.hasSuffix(".partial") != !record.isComplete {
            failures.append("file name says \(path.hasSuffix(".partial") ? "partial" : "complete") but the record is \(record.completeness)")
        }
        if !record.isComplete && !expected.mayBeIncomplete { failures.append("record incomplete: \(record.completeness)") }
        if expected.mayBeIncomplete && record.isComplete { failures.append("expected the handler to be cut short, but the record is complete") }
        guard let signal = record.signal else {
            failures.append("record has no signal section")
            return RunReport(outcome: outcome, failures: failures, frames: [])
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
        guard let process = record.process else {
            failures.append("record has no process section")
            return RunReport(outcome: outcome, failures: failures, frames: [])
        }
        if record.appName != "crash-harness" { failures.append("app name \(record.appName ?? "none")") }
        // The harness is our child; a forked scenario's record comes from its child instead.
        if expected.forkedChild == (process.ppid == getpid()) {
            failures.append(expected.forkedChild ? "record is not from the forked child (parent \(process.ppid))"
                                                  : "record's parent pid \(process.ppid) is not the runner's \(getpid())")
        }
        if expected.mayBeIncomplete {
            return RunReport(outcome: outcome, failures: failures, frames: [])
        }
        // The compensating $AppEnd: a JSON object with a plausible duration.
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
        } else {
            failures.append("no parsable $AppEnd event")
        }
        guard let thread = record.crashedThread else {
            failures.append("no crashed thread")
            return RunReport(outcome: outcome, failures: failures, frames: [])
        }
        if thread.tid != process.tid { failures.append("crashed thread \(thread.tid) is not the process section's \(process.tid)") }
        if expected.crashedOffMainThread == (thread.tid == process.pid) {
            failures.append(expected.crashedOffMainThread ? "crash recorded on the main thread" : "crash recorded off the main thread")
        }
        if expected.truncatedFrames && !thread.truncated { failures.append("expected the unwind to stop at the frame limit") }
        if !record.images.contains(where: { $0.isMainExecutable && !$0.buildID.isEmpty }) {
            failures.append("main executable image with build-id missing")
        }
        let symbolicated = symbolicator.symbolicate(frames: thread.frames, firstIsExact: thread.framesFromSignalContext, images: record.images)
        frameNames = symbolicated.flatMap { $0.map { $0.symbol ?? "?" } }
        var remaining = expected.frames[...]
        for name in frameNames where !remaining.isEmpty && name.contains(remaining.first!) {
            remaining = remaining.dropFirst()
        }
        if let missing = remaining.first {
            failures.append("frames lack \(missing) (in order \(expected.frames)); got \(frameNames.prefix(12))")
        }
        return RunReport(outcome: outcome, failures: failures, frames: frameNames)
    }
}
