// BacktracerOutputTests.swift — BacktracerOutput on real reports of the Swift runtime's
// backtracer (the debug harness crashing with its null dereference), and on damaged ones.
import CrashCapture
import CrashScenarios
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class BacktracerOutputTests: XCTestCase {
    /// Runs `crash-harness run null-dereference` with the backtracer set by `backtrace` (and
    /// CrashCapture off: the backtracer's output is the subject). Returns the run's directory
    /// and its stderr.
    static func crash(_ name: String, backtrace: String) throws -> (directory: String, stderr: String) {
        let directory = try Scratch.directory(name)
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = backtrace.replacingOccurrences(of: "{dir}", with: directory)
        environment[CrashHandler.disableEnvironmentVariable] = "1"
        let stderr = directory + ".stderr"
        let child = try ChildProcess.run(BuiltProducts.harness, ["run", "null-dereference", "--dir", directory + "/records"],
                                         environment: environment, stderr: stderr, timeout: 120)
        XCTAssertEqual(child.ending, .signaled(SIGSEGV))
        return (directory, String(decoding: FileManager.default.contents(atPath: stderr) ?? Data(), as: UTF8.self))
    }

    static let json = "enable=yes,interactive=no,color=no,format=json,output-to={dir},symbolicate=full"

    /// Two real JSON reports of the same crash, made once.
    static let reports: Result<[String], any Error> = Result {
        try [crash("backtrace-json-a", backtrace: json).directory, crash("backtrace-json-b", backtrace: json).directory]
    }

    func outcome(_ directory: String, reference: String?) -> RunOutcome {
        RunOutcome(scenario: "null-dereference", ending: .signal(SIGSEGV), seconds: 1, stderr: "", stdout: "", recordFiles: [],
                   ownRecordFiles: [], childRecordFiles: [], directory: directory, pid: 1, leftRunning: [],
                   reference: reference.map {
                       ProcessOutcome(ending: .signal(SIGSEGV), seconds: 1, stdout: "", stderr: "", directory: $0, pid: 2, leftRunning: [])
                   })
    }

    /// The harness's text symbols per nm: the truth for addresses relative to its base.
    func harnessSymbols() throws -> [String: UInt64] {
        let nm = try XCTUnwrap(Tools.find("nm", "llvm-nm"))
        var result: [String: UInt64] = [:]
        for line in try Tools.output(nm, ["--defined-only", BuiltProducts.harness]).split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 3, let address = UInt64(fields[0], radix: 16) { result[String(fields[2])] = address }
        }
        return result
    }

    func testTheCrashedThreadsFramesOfARealReport() throws {
        let directory = try Self.reports.get()[0]
        var failures: [String] = []
        let report = try XCTUnwrap(BacktracerOutput.loadReport(in: directory, failures: &failures, label: "run"))
        XCTAssertEqual(failures, [])
        let frames = BacktracerOutput.crashedFrames(report)
        XCTAssertGreaterThan(frames.count, 8)
        // "programCounter crash-harness@0x… cch_null_dereference+22", then return addresses.
        XCTAssertTrue(frames[0].hasPrefix("programCounter crash-harness@0x"), frames[0])
        XCTAssertTrue(frames[0].contains(" cch_null_dereference+"), frames[0])
        XCTAssertGreaterThan(frames.dropFirst().filter { $0.hasPrefix("returnAddress ") }.count, 8, "\(frames)")
        let levels = frames.compactMap { frame in levelChain.first { frame.contains("CrashScenarios\($0.count)\($0)yyyyXEF+") } }
        XCTAssertEqual(levels, levelChain)
        // Every harness frame's address relative to the image is its symbol's address (nm) plus
        // its offset in the symbol: the base was subtracted, not something else. (The
        // backtracer names a return address by the call before it: its offset is that of
        // address - 1.)
        let symbols = try harnessSymbols()
        var checked = 0
        for frame in frames where frame.contains(" crash-harness@") {
            let parts = frame.split(separator: " ")
            guard parts.count == 3, let at = parts[1].split(separator: "@").last, let plus = parts[2].lastIndex(of: "+") else {
                XCTFail("unexpected frame \(frame)")
                continue
            }
            let symbol = String(parts[2][..<plus])
            guard let address = symbols[symbol], let offset = UInt64(parts[2][parts[2].index(after: plus)...]) else { continue }
            let callSite: UInt64 = frame.hasPrefix("returnAddress ") ? 1 : 0
            XCTAssertEqual(String(at), "0x" + String(address + offset + callSite, radix: 16), frame)
            checked += 1
        }
        XCTAssertGreaterThanOrEqual(checked, 7, "cch_null_dereference, the five levels and throughLevels at least")
    }

    func testTwoRunsOfTheSameCrashCompareEqualAndADifferentCrashDoesNot() throws {
        let directories = try Self.reports.get()
        XCTAssertEqual(BacktracerOutput.compareJSONReports(outcome(directories[0], reference: directories[1])), [])
        // The same report with one frame's symbol changed: named as the first difference.
        let other = try Scratch.directory("backtrace-json-changed")
        let name = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: directories[1]).first { $0.hasSuffix(".json") })
        let text = try String(contentsOfFile: directories[1] + "/" + name, encoding: .utf8)
        XCTAssertTrue(text.contains("\"cch_null_dereference\""))
        try text.replacingOccurrences(of: "\"cch_null_dereference\"", with: "\"cch_other_function\"")
            .write(toFile: other + "/" + name, atomically: true, encoding: .utf8)
        let failures = BacktracerOutput.compareJSONReports(outcome(directories[0], reference: other))
        XCTAssertEqual(failures.count, 1, "\(failures)")
        XCTAssertTrue(failures.first?.hasPrefix("JSON report frame 0: ") == true, "\(failures)")
        XCTAssertTrue(failures.first?.contains("cch_other_function") == true, "\(failures)")
    }

    func testTruncatedEmptyGarbageMissingOrExtraReportsAreFailuresNotCrashes() throws {
        let good = try Self.reports.get()[0]
        let name = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: good).first { $0.hasSuffix(".json") })
        let bytes = try Data(contentsOf: URL(fileURLWithPath: good + "/" + name))
        func directory(_ label: String, _ files: [String: Data]) throws -> String {
            let path = try Scratch.directory("backtrace-\(label)")
            for (file, data) in files { XCTAssertTrue(FileManager.default.createFile(atPath: path + "/" + file, contents: data)) }
            return path
        }
        let cases: [(String, [String: Data], String)] = [
            ("truncated", [name: bytes.prefix(bytes.count / 2)], "(\(bytes.count / 2) bytes) is not complete JSON"),
            ("cut-at-end", [name: bytes.dropLast(2)], "is not complete JSON"),
            ("garbage", [name: Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) })], "is not complete JSON"),
            ("empty", [name: Data()], "backtracer JSON report \(name) is empty"),
            ("none", [:], "expected one backtracer JSON report in its directory, found 0"),
            ("two", [name: bytes, "other.json": bytes], "expected one backtracer JSON report in its directory, found 2"),
            ("array", [name: Data("[1, 2, 3]".utf8)], "is not complete JSON"),
        ]
        for (label, files, expected) in cases {
            let bad = try directory(label, files)
            var failures: [String] = []
            XCTAssertNil(BacktracerOutput.loadReport(in: bad, failures: &failures, label: "reference run"), label)
            XCTAssertEqual(failures.count, 1, "\(label): \(failures)")
            XCTAssertTrue(failures.first?.hasPrefix("reference run: ") == true, "\(label): \(failures)")
            XCTAssertTrue(failures.first?.contains(expected) == true, "\(label): \(failures) lacks \(expected)")
            let compared = BacktracerOutput.compareJSONReports(outcome(good, reference: bad))
            XCTAssertEqual(compared, failures, label)
        }
        XCTAssertEqual(BacktracerOutput.compareJSONReports(outcome(good, reference: nil)),
                       ["no reference run to compare the backtracer's JSON report with"])
    }

    func testAReportWithoutACrashedThreadHasNoFrames() throws {
        let good = try Self.reports.get()[0]
        var failures: [String] = []
        var report = try XCTUnwrap(BacktracerOutput.loadReport(in: good, failures: &failures, label: "run"))
        XCTAssertFalse(BacktracerOutput.crashedFrames(report).isEmpty)
        report["threads"] = (report["threads"] as? [[String: Any]])?.map { thread in
            var thread = thread
            thread["crashed"] = false
            return thread
        }
        XCTAssertEqual(BacktracerOutput.crashedFrames(report), [])
        XCTAssertEqual(BacktracerOutput.crashedFrames([:]), [])
        XCTAssertEqual(BacktracerOutput.crashedFrames(["threads": "not a list"]), [])
    }

    /// The text report of two runs of one crash: different (ASLR moves every address), the
    /// same once normalised, and no hex address left in it.
    func testTheTextReportsOfTwoRunsAreTheSameOnceNormalised() throws {
        let text = "enable=yes,interactive=no,color=no,symbolicate=off"
        let first = try Self.crash("backtrace-text-a", backtrace: text).stderr
        let second = try Self.crash("backtrace-text-b", backtrace: text).stderr
        XCTAssertTrue(first.contains("Program crashed"), first)
        XCTAssertTrue(first.contains("\" crashed:"), first)
        let aslr = (try? String(contentsOfFile: "/proc/sys/kernel/randomize_va_space", encoding: .utf8))?.hasPrefix("0") == false
        if aslr { XCTAssertNotEqual(first, second, "addresses differ between runs") }
        let a = BacktracerOutput.normaliseText(first), b = BacktracerOutput.normaliseText(second)
        XCTAssertEqual(a, b)
        XCTAssertNil(a.range(of: "0x[0-9a-fA-F]", options: .regularExpression), "an address survived normalising")
        XCTAssertNil(a.range(of: "\\b[0-9a-f]{32,}\\b", options: .regularExpression), "a build-id survived normalising")
        XCTAssertTrue(a.contains("Program crashed"))
        XCTAssertEqual(a.split(separator: "\n", omittingEmptySubsequences: false).count,
                       first.split(separator: "\n", omittingEmptySubsequences: false).count, "line for line")
    }

    /// The Swift runtime's own fatal-error stack trace (backtracer off) of two runs.
    func testTheRuntimesFatalErrorTraceIsTheSameOnceAddressesAreTakenOut() throws {
        func run(_ name: String) throws -> String {
            let directory = try Scratch.directory(name)
            var environment = ProcessInfo.processInfo.environment
            environment["SWIFT_BACKTRACE"] = "enable=no"
            environment[CrashHandler.disableEnvironmentVariable] = "1"
            let child = try ChildProcess.run(BuiltProducts.harness, ["run", "fatal-error", "--dir", directory + "/records"],
                                             environment: environment, stderr: directory + "/stderr", timeout: 120)
            XCTAssertEqual(child.ending, .signaled(swiftTrapSignal))
            return String(decoding: FileManager.default.contents(atPath: directory + "/stderr") ?? Data(), as: UTF8.self)
        }
        let first = try run("fatal-a"), second = try run("fatal-b")
        XCTAssertTrue(first.contains("Fatal error: crash-harness fatalError text"), first)
        XCTAssertTrue(first.contains("Current stack trace:"), first)
        let a = RuntimeOutput.normaliseAddresses(first)
        XCTAssertEqual(a, RuntimeOutput.normaliseAddresses(second))
        XCTAssertNil(a.range(of: "0x[0-9a-fA-F]", options: .regularExpression))
        XCTAssertTrue(a.contains("0x?"))
        XCTAssertTrue(a.contains("Fatal error: crash-harness fatalError text"), "the message is kept")
    }
}
