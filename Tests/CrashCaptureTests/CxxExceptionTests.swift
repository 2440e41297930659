// CxxExceptionTests.swift — a C++ exception no one catches, thrown from C++ that Swift called:
// the process dies of SIGABRT exactly as without capture (the runner compares each with the same
// scenario under CRASHCAPTURE_DISABLE=1, stderr's libstdc++ lines included), and the record names
// the exception: its type (demangled by the C++ runtime), its what(), a what() that threw, a value
// that is no std::exception, std::terminate with none in flight; a terminate handler the app
// installed before capture still runs; crash-inspect says it in "What happened". Built with Swift's
// C++ interoperability, the exception never reaches std::terminate: the Swift runtime's exception
// personality stops it at the first Swift frame with a fatal error, which the record keeps, with the
// C++ frames that threw — the same death as without capture — and the handler finds the exception
// in flight on the stack and names its type. An abort() in a catch block, or after an exception
// was caught and freed, names none.
import CrashRecordFormat
import CrashCapture
import CrashScenarios
import ProcessSpawning
import Foundation
import TestSupport
import XCTest

final class CxxExceptionTests: XCTestCase {
    func exception(_ scenario: String) throws -> (CxxException, Harness.Run) {
        let run = try Harness.run(scenario)
        XCTAssertEqual(run.outcome.ending, .signal(SIGABRT), scenario)
        let record = try XCTUnwrap(run.record, scenario)
        return (try XCTUnwrap(record.cxxException, "\(scenario): no C++ exception in the record"), run)
    }

    func testAnUncaughtRuntimeErrorIsNamedWithItsTypeAndWhat() throws {
        let (cxx, run) = try exception("cxx-exception")
        XCTAssertEqual(cxx.mangledType, "St13runtime_error")
        XCTAssertEqual(cxx.type, "std::runtime_error")
        XCTAssertEqual(cxx.what, .text("the order could not be priced: currency XTS"))
        // libstdc++ said the same on stderr, as it does without capture.
        XCTAssertTrue(run.outcome.stderr.contains("terminate called after throwing an instance of 'std::runtime_error'"), run.outcome.stderr)
        let shown = try Tools.output(BuiltProducts.inspect, ["show", try XCTUnwrap(run.outcome.ownRecordFiles.first)])
        XCTAssertTrue(shown.contains("uncaught C++ exception std::runtime_error: the order could not be priced: currency XTS; std::terminate, then abort()"),
                      shown)
        let json = try Tools.output(BuiltProducts.inspect, ["show", try XCTUnwrap(run.outcome.ownRecordFiles.first), "--json"])
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let shownException = try XCTUnwrap(object["cxxException"] as? [String: Any])
        XCTAssertEqual(shownException["type"] as? String, "std::runtime_error")
        XCTAssertEqual(shownException["whatState"] as? String, "what")
        XCTAssertTrue((object["summary"] as? String)?.contains("uncaught C++ exception std::runtime_error") == true, "\(object["summary"] ?? "")")
    }

    func testAWhatThatThrowsANonStdExceptionAndTerminateWithNoneAreEachSaidAsTheyAre() throws {
        let (throwing, _) = try exception("cxx-what-throws")
        XCTAssertEqual(throwing.type, "crash_harness::WhatThrows")
        XCTAssertEqual(throwing.what, .threw)
        let (plain, _) = try exception("cxx-not-std-exception")
        XCTAssertEqual(plain.type, "crash_harness::PlainOrder")
        XCTAssertEqual(plain.what, .notStdException)
        let (none, _) = try exception("cxx-terminate")
        XCTAssertNil(none.mangledType)
        XCTAssertEqual(none.what, .noException)
        XCTAssertEqual(none.summary, "std::terminate called with no C++ exception in flight")
    }

    func testATerminateHandlerTheAppInstalledBeforeCaptureStillRuns() throws {
        // The runner checks stdout for the app's handler's line, and the death against the same
        // scenario without capture.
        let (cxx, _) = try exception("cxx-app-terminate-handler")
        XCTAssertEqual(cxx.type, "std::runtime_error")
    }

    func testAPlainAbortHasNoCxxException() throws {
        let record = try XCTUnwrap(try Harness.run("abort").record)
        XCTAssertNil(record.cxxException)
    }

    /// The controls for the exception found in flight: a caught exception is no uncaught one, even
    /// while its catch block aborts, and one thrown, caught and freed earlier leaves no ghost.
    func testAnAbortInACatchBlockOrAfterACaughtExceptionHasNoCxxException() throws {
        for scenario in ["cxx-abort-in-catch", "cxx-abort-after-catch"] {
            let run = try Harness.run(scenario)
            XCTAssertEqual(run.outcome.ending, .signal(SIGABRT), scenario)
            let record = try XCTUnwrap(run.record, scenario)
            XCTAssertNil(record.cxxException, "\(scenario): \(record.cxxException?.summary ?? "")")
        }
    }

    func testWithSwiftsCxxInteropTheSwiftRuntimeStopsTheExceptionAndTheRecordFindsItsTypeInFlight() throws {
        let program = BuiltProducts.directory + "/cxx-interop-crasher"
        let directory = try Scratch.directory("cxx-interop")
        func run(_ extra: [String: String]) throws -> (ChildProcess.Ending, String) {
            var environment = ProcessInfo.processInfo.environment
            environment["SWIFT_BACKTRACE"] = "enable=no"
            environment.merge(extra) { $1 }
            let errors = try Scratch.directory("cxx-interop-stderr") + "/stderr"
            let child = try ChildProcess.run(program, [directory], environment: environment, stderr: errors, timeout: 60)
            let text = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            return (child.ending, text.split(separator: "\n").filter { !$0.hasPrefix("crashcapture: ") }.joined(separator: "\n"))
        }
        let without = try run([CrashHandler.disableEnvironmentVariable: "1"])
        let with = try run([:])
        XCTAssertEqual(with.0, .signaled(SIGABRT))
        XCTAssertEqual(with.0, without.0, "the same death as without capture")
        XCTAssertEqual(with.1, without.1, "the same stderr as without capture")
        let name = try XCTUnwrap(try RecordFileName.names(in: directory).first)
        let record = try CrashRecordReader.read(path: directory + "/" + name)
        // std::terminate never ran: the exception is the one found in flight on the stack, its type
        // read from libstdc++'s header; what() is not called at a crash.
        let cxx = try XCTUnwrap(record.cxxException, "the exception in flight was not found")
        XCTAssertEqual(cxx.type, "std::runtime_error")
        XCTAssertEqual(cxx.what, .inFlight)
        XCTAssertTrue(record.fatalMessage?.contains("C++ exception handling detected") == true, record.fatalMessage ?? "no fatal message")
        let shown = try Tools.output(BuiltProducts.inspect, ["show", directory + "/" + name, "--all-frames"])
        XCTAssertTrue(shown.contains("orders::price(int)") && shown.contains("__cxa_throw"), shown)
        XCTAssertTrue(shown.contains("uncaught C++ exception std::runtime_error (it never reached std::terminate: what() not read); "
                                     + "the process aborted while it was being thrown"), shown)
    }
}
