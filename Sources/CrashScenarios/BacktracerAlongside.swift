// BacktracerAlongside.swift — a scenario with Swift's own backtracer on, as every Swift program on
// Linux has it by default, run with capture and without (CRASHCAPTURE_DISABLE=1).
//
// Capture chains to the backtracer first (CShims/install/cc_chain.c). Whatever the crash, capture must
// leave nothing running that the runtime alone does not (a swift-backtrace process, the thread
// helper, a crash-time uploader past its deadline: none, since each run leads its own process
// group and anything of the group alive after it ended counts), and the backtracer must report
// exactly as often as it does alone: a second report means that a second thread entered it.
import CrashRecordFormat
import Foundation
import ProcessSpawning

/// Runs a scenario with Swift's backtracer on, with and without capture, and compares the two.
package enum BacktracerAlongside {
    /// The backtracer as a program that sets nothing has it (symbolication, threads, registers and
    /// images as preset), except that it never waits for a person at a terminal and writes no
    /// colour: its reports are counted on stderr.
    package static let setting = "enable=yes,interactive=no,color=no,output-to=stderr"

    /// One scenario's two runs and what differs between them.
    package struct Comparison: Sendable {
        package var scenario: String
        /// With capture.
        package var captured: ProcessOutcome
        /// With `CRASHCAPTURE_DISABLE=1`; nil where the scenario says the runtime alone is no
        /// reference (``Scenario/backtracerAlone``): it is not run.
        package var alone: ProcessOutcome?
        /// Empty when capture changed nothing that is compared.
        package var failures: [String]
    }

    /// How many times the runtime's handler started the backtracer: its "Backtracing from" line,
    /// which it writes once each time a thread enters it.
    package static func reports(in stderr: String) -> Int {
        stderr.components(separatedBy: "Backtracing from").count - 1
    }

    /// Runs `scenario` with the backtracer on (``setting``, over any the scenario sets), in
    /// `directory`, and again without capture in `directory-alone` unless the scenario says the
    /// runtime alone is no reference; compares the ending, what was left running, and how many
    /// reports the backtracer printed.
    /// - Throws: when a child cannot be spawned.
    package static func compare(_ scenario: Scenario, harness: String, directory: String, timeout: Double = 60) throws -> Comparison {
        let captured = try ScenarioRunner.spawn(scenario, harness: harness, directory: directory, timeout: timeout,
                                                captureDisabled: false, backtracer: setting)
        var failures: [String] = []
        let describe = { (ending: Scenario.Ending?) in ending.map(\.description) ?? "a hang" }
        let mine = reports(in: captured.stderr)
        var runs = [("with capture", captured)]
        var alone: ProcessOutcome?
        if let expected = scenario.backtracerAlone {
            // The runtime alone is no reference here (the scenario says why): capture's run
            // against what the scenario says it must be.
            if !expected.endings.contains(where: { $0 == captured.ending }) {
                failures.append("ended with \(describe(captured.ending)), not \(expected.endings.map(\.description).joined(separator: " or "))")
            }
            if mine != expected.reports {
                failures.append("the backtracer reported \(mine) time(s) with capture, not \(expected.reports)")
            }
        } else {
            let aloneDirectory = directory + "-alone"
            try FileManager.default.createDirectory(atPath: aloneDirectory, withIntermediateDirectories: true)
            let reference = try ScenarioRunner.spawn(scenario, harness: harness, directory: aloneDirectory, timeout: timeout,
                                                     captureDisabled: true, backtracer: setting)
            let theirs = reports(in: reference.stderr)
            if captured.ending != reference.ending {
                failures.append("ended with \(describe(captured.ending)), without capture with \(describe(reference.ending))")
            }
            if mine != theirs {
                failures.append("the backtracer reported \(mine) time(s) with capture, \(theirs) without")
            }
            runs.append(("without capture", reference))
            alone = reference
        }
        failures += checkRuntimeReports(scenario, captured: captured, alone: alone)
        for (label, run) in runs where !run.leftRunning.isEmpty {
            failures.append("\(label), left \(run.leftRunning.count) process(es) running: \(run.leftRunning.map(\.command).joined(separator: ", "))")
        }
        return Comparison(scenario: scenario.name, captured: captured, alone: alone, failures: failures)
    }

    /// For a scenario that expects the Swift runtime's earlier reports as warnings: with the
    /// backtracer on too, the record's fatal message is still this crash's alone (the backtracer
    /// writes its report to stderr, not to the runtime's buffer) and the warnings are still
    /// what the runtime printed without capture.
    static func checkRuntimeReports(_ scenario: Scenario, captured: ProcessOutcome, alone: ProcessOutcome?) -> [String] {
        guard let expected = scenario.record, expected.runtimeWarning != nil || expected.noFatalMessage else { return [] }
        let own = ScenarioRunner.recordFiles(in: captured.directory).filter { ScenarioRunner.recordPid($0) == captured.pid }
        guard own.count == 1, let record = try? CrashRecordReader.read(path: own[0]) else {
            return ["with capture, expected one readable record of the process, found \(own.count)"]
        }
        var failures = ScenarioRunner.checkRuntimeReports(record, expected: expected, referenceStderr: alone?.stderr)
        if let message = expected.message, !expected.messageOnlyInDebug, !(record.fatalMessage ?? "").contains(message) {
            failures.append("fatal message \((record.fatalMessage ?? "none").debugDescription) lacks \(message.debugDescription)")
        }
        return failures.map { "with the backtracer on, \($0)" }
    }
}
