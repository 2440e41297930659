// CrashHarness.swift — crash-harness: every way a Linux Swift program dies, performed and verified.
import HostFacts
import ArgumentParser
import CrashCapture
import SensorsEvents
import CrashScenarios
import CrashSymbolication
import Foundation
#if canImport(Glibc)
import Glibc
#endif

@main
struct CrashHarness: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crash-harness",
        abstract: "Performs and verifies every way a Linux Swift program can die under CrashCapture.",
        subcommands: [List.self, Run.self, Verify.self, IdleCheck.self, Emit.self, Deliver.self, Hang.self]
    )
}

/// The harness's JSON outputs: one encoder, keys sorted.
enum HarnessJSON {
    static func text(_ value: some Encodable, pretty: Bool = false) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

#if DEBUG
let buildConfiguration = "debug"
#else
let buildConfiguration = "release"
#endif

extension CrashHarness {
    /// Test support: proves capture adds nothing that runs while nothing crashes. Run in a fresh
    /// process so no other test's threads come and go meanwhile.
    struct IdleCheck: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "idle-check",
            abstract: "Starts CrashCapture and reports threads and timers before and after, as JSON.")

        @Option(help: "Directory for crash records.")
        var dir: String

        func run() throws {
            func threads() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1 }
            func timers() -> Int {
                let text = (try? String(contentsOfFile: "/proc/self/timers", encoding: .utf8)) ?? ""
                return text.components(separatedBy: "signal:").count - 1
            }
            let before = (threads: threads(), timers: timers())
            try CrashHandler.start(.init(directory: dir, appName: "crash-harness", appVersion: CrashCaptureLibrary.version))
            usleep(50_000)
            let after = (threads: threads(), timers: timers())
            print("{\"threadsBefore\":\(before.threads),\"threadsAfter\":\(after.threads),\"timersBefore\":\(before.timers),\"timersAfter\":\(after.timers)}")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Lists the scenarios: name, expected ending, what it proves.")

        @Flag(help: "Print JSON (with the harness's build configuration).")
        var json = false

        func run() throws {
            if json {
                struct Row: Encodable { var name, ending: String; var record: Bool; var summary: String }
                struct Listing: Encodable { var build: String; var scenarios: [Row] }
                print(try HarnessJSON.text(Listing(build: buildConfiguration, scenarios: Scenarios.all.map {
                    Row(name: $0.name, ending: $0.ending.description, record: $0.record != nil, summary: $0.summary)
                }), pretty: true))
                return
            }
            let width = Scenarios.all.map(\.name.count).max() ?? 0
            for scenario in Scenarios.all {
                let name = scenario.name.padding(toLength: width, withPad: " ", startingAt: 0)
                let ending = scenario.ending.description.padding(toLength: 8, withPad: " ", startingAt: 0)
                print("\(name)  \(ending)  \(scenario.summary)")
            }
        }
    }

    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Starts CrashCapture writing to DIR, then performs the scenario in this process.")

        @Argument(help: "Scenario name (see `list`).")
        var scenario: String

        @Option(help: "Directory for crash records.")
        var dir: String

        func validate() throws {
            guard Scenarios.named(scenario) != nil else {
                throw ValidationError("unknown scenario '\(scenario)'; `crash-harness list` shows them")
            }
        }

        func run() throws {
            try Scenarios.perform(Scenarios.named(scenario)!, directory: dir)
            // A scenario that returns did not end the process as it should have.
            FileHandle.standardError.write(Data("crash-harness: scenario \(scenario) returned\n".utf8))
            throw ExitCode(70)
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Runs scenarios as child processes and checks how each ended and the record it left, against a reference run with CRASHCAPTURE_DISABLE=1.")

        @Option(help: "Runs per scenario.")
        var runs = 1

        @Option(name: .customLong("scenario"), help: "Only this scenario (repeatable).")
        var scenarios: [String] = []

        @Option(help: "Seconds before a run counts as hung.")
        var timeout: Double = 60

        @Flag(help: "Print JSON instead of a table.")
        var json = false

        @Flag(help: "Print each failure as it happens.")
        var verbose = false

        @Flag(help: "Instead: run each scenario with Swift's backtracer on, with and without capture, and compare the endings, what each left running and how many reports the backtracer printed.")
        var backtracer = false

        func validate() throws {
            guard runs >= 1 else { throw ValidationError("--runs must be at least 1") }
            for name in scenarios where Scenarios.named(name) == nil {
                throw ValidationError("unknown scenario '\(name)'")
            }
        }

        func run() throws {
            let harness = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
            let selected = scenarios.isEmpty ? Scenarios.all : scenarios.compactMap(Scenarios.named)
            let symbolicator = try Symbolicator()
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("crash-harness-\(getpid())").path
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            var rows: [(scenario: Scenario, passed: Int, times: [Double], references: [String], failures: [String])] = []
            for scenario in selected {
                var passed = 0
                var times: [Double] = []
                var references: [String] = []
                var failures: [String] = []
                for index in 0..<runs {
                    let directory = "\(scratch)/\(scenario.name)-\(index)"
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                    let runFailures: [String]
                    if backtracer {
                        let comparison = try BacktracerAlongside.compare(scenario, harness: harness, directory: directory, timeout: timeout)
                        times.append(comparison.captured.seconds)
                        let reference = comparison.alone.map { $0.ending?.description ?? "hang" } ?? "-"
                        if !references.contains(reference) { references.append(reference) }
                        runFailures = comparison.failures
                    } else {
                        let outcome = try ScenarioRunner.run(scenario, harness: harness, directory: directory, timeout: timeout)
                        let report = ScenarioRunner.verify(outcome, scenario: scenario, symbolicator: symbolicator,
                                                           debugHarness: buildConfiguration == "debug")
                        times.append(outcome.seconds)
                        let reference = outcome.reference.map { $0.ending?.description ?? "hang" } ?? "-"
                        if !references.contains(reference) { references.append(reference) }
                        runFailures = report.failures
                    }
                    if runFailures.isEmpty { passed += 1 } else {
                        failures.append(contentsOf: runFailures.map { "run \(index + 1): \($0)" })
                        if verbose { runFailures.forEach { print("\(scenario.name) run \(index + 1): \($0)") } }
                    }
                    for suffix in ["", "-reference", "-alone"] { try? FileManager.default.removeItem(atPath: directory + suffix) }
                }
                rows.append((scenario, passed, times, references, failures))
            }
            let failed = rows.contains { $0.passed < runs }
            if json {
                struct Row: Encodable {
                    var name: String, runs: Int, passed: Int, expectedEnding: String, referenceEndings: [String]
                    var medianSeconds: Double, failures: [String]
                }
                struct Verdict: Encodable { var build: String; var runs: Int; var passed: Bool; var scenarios: [Row] }
                print(try HarnessJSON.text(Verdict(build: buildConfiguration, runs: runs, passed: !failed, scenarios: rows.map { row in
                    Row(name: row.scenario.name, runs: runs, passed: row.passed, expectedEnding: row.scenario.ending.description,
                        referenceEndings: row.references, medianSeconds: median(row.times), failures: Array(row.failures.prefix(20)))
                }), pretty: true))
            } else {
                let width = max(8, rows.map(\.scenario.name.count).max() ?? 0)
                func column(_ text: String, _ width: Int) -> String { text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0) }
                print(column("scenario", width) + "  runs  passed  " + column("expected", 8) + "  " + column("reference", 9) + "  median exit (ms)")
                for row in rows {
                    let name = column(row.scenario.name, width)
                    let expected = column(row.scenario.ending.description, 8)
                    let reference = column(row.references.joined(separator: "/"), 9)
                    print("\(name)  \(pad(runs, 4))  \(pad(row.passed, 6))  \(expected)  \(reference)  \(String(format: "%.1f", median(row.times) * 1000))")
                }
                for row in rows where !row.failures.isEmpty {
                    print("\nFAILED \(row.scenario.name):")
                    row.failures.prefix(10).forEach { print("  \($0)") }
                }
                let total = rows.reduce(0) { $0 + $1.passed }
                print("\(total) passed, \(rows.count * runs - total) failed")
            }
            if failed { throw ExitCode.failure }
        }

        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        }

        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: " ", count: max(0, width - text.count)) + text
        }
    }
}
