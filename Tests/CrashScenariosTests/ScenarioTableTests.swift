// ScenarioTableTests.swift — the scenario table's own invariants: every name unique and usable on
// the command line, every expectation consistent with the ending it goes with.
import CrashCapture
import CrashScenarios
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class ScenarioTableTests: XCTestCase {
    /// The signals CrashCapture installs a handler for: the only ones a record can name.
    let recordedSignals: Set<Int32> = [SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTRAP]

    func testNamesAreUniqueAndCommandLineFriendly() {
        let names = Scenarios.all.map(\.name)
        XCTAssertGreaterThan(names.count, 40)
        XCTAssertEqual(Set(names).count, names.count, "duplicates: \(Dictionary(grouping: names) { $0 }.filter { $0.value.count > 1 }.keys.sorted())")
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-")
        for name in names {
            let ok = !name.isEmpty && name.allSatisfy(allowed.contains) && !name.hasPrefix("-") && !name.hasSuffix("-") && !name.contains("--")
            XCTAssertTrue(ok, "\(name.debugDescription) is not lowercase-with-hyphens")
        }
    }

    func testEveryNameLeadsBackToItsScenario() {
        for scenario in Scenarios.all {
            XCTAssertEqual(Scenarios.named(scenario.name)?.name, scenario.name)
            XCTAssertEqual(Scenarios.named(scenario.name)?.summary, scenario.summary)
        }
        XCTAssertNil(Scenarios.named("no-such-scenario"))
        XCTAssertNil(Scenarios.named(""))
        XCTAssertNil(Scenarios.named("Null-Dereference"))
    }

    func testEveryScenarioSaysWhatItProves() {
        for scenario in Scenarios.all {
            XCTAssertFalse(scenario.summary.trimmingCharacters(in: .whitespaces).isEmpty, scenario.name)
            XCTAssertFalse(scenario.summary.contains("\n"), "\(scenario.name): one line")
            if let limit = scenario.maxSeconds { XCTAssertGreaterThan(limit, 0, scenario.name) }
            switch scenario.output {
            case .exact: break
            case .normalised(let reason, _), .notCompared(let reason):
                XCTAssertFalse(reason.isEmpty, "\(scenario.name): a comparison other than exact says why")
            }
        }
    }

    /// Every signal the table names is a real signal — asked of bash's `kill -l`, which knows
    /// nothing of this project — and its name is the conventional one.
    func testEverySignalNamedIsARealSignal() throws {
        var signals = Set<Int32>()
        for scenario in Scenarios.all {
            if case .signal(let s) = scenario.ending { signals.insert(s) }
            if let record = scenario.record { signals.insert(record.signal) }
        }
        XCTAssertTrue(signals.isSuperset(of: [SIGSEGV, SIGABRT, SIGKILL]))
        let bash = try XCTUnwrap(Tools.find("bash"))
        for signal in signals.sorted() {
            let name = try Tools.output(bash, ["-c", "kill -l \(signal)"]).trimmingCharacters(in: .whitespacesAndNewlines)
            XCTAssertFalse(name.isEmpty, "bash knows no signal \(signal)")
            XCTAssertEqual(signalName(signal), "SIG" + name)
            XCTAssertEqual(Scenario.Ending.signal(signal).description, "SIG" + name)
        }
    }

    func testEveryRecordExpectationAgreesWithItsEnding() {
        for scenario in Scenarios.all {
            let name = scenario.name
            switch (scenario.ending, scenario.record) {
            case (.signal(let s), nil):
                // No record: only what no handler can see (SIGKILL) or a run that survives.
                XCTAssertFalse(recordedSignals.contains(s), "\(name) dies of \(signalName(s)) yet expects no record")
            case (.signal(let s), let record?):
                XCTAssertEqual(record.signal, s, "\(name): the record names the signal the process dies of")
                XCTAssertFalse(record.forkedChild, "\(name): a forked child's crash does not kill the harness child")
            case (.exit(let code), let record?):
                // Only a forked child's crash leaves a record when the harness child exits; it
                // reports the child's signal as 100 + signal.
                XCTAssertTrue(record.forkedChild, "\(name) exits \(code) yet expects a record of its own")
                XCTAssertEqual(code, 100 + record.signal, name)
            case (.exit(let code), nil):
                XCTAssertTrue((0...255).contains(code), name)
            }
            guard let record = scenario.record else { continue }
            XCTAssertTrue(recordedSignals.contains(record.signal), "\(name): \(signalName(record.signal)) has no handler to record it")
            if let code = record.codeName {
                let prefix = ["SIGSEGV": "SEGV_", "SIGBUS": "BUS_", "SIGFPE": "FPE_", "SIGILL": "ILL_", "SIGTRAP": "TRAP_"][signalName(record.signal)]
                XCTAssertTrue(code.hasPrefix("SI_") || prefix.map { code.hasPrefix($0) } == true,
                              "\(name): si_code \(code) does not belong to \(signalName(record.signal))")
            }
            if record.fromOtherProcess { XCTAssertEqual(record.codeName, "SI_USER", "\(name): kill(2) from another process") }
            XCTAssertFalse(record.mayBeIncomplete && record.incompleteAllowed, "\(name): one of the two")
            if record.mayBeIncomplete { XCTAssertEqual(record.frames, [], "\(name): frames of a record cut short are not checked") }
            if record.everyThreadHasFrames || record.threadPtraced {
                XCTAssertTrue(record.otherThreadsStopped, "\(name): threads with frames were stopped")
            }
            XCTAssertFalse(record.threadNotStopped && record.everyThreadHasFrames, "\(name): contradictory")
            XCTAssertEqual(Set(record.frames).count, record.frames.count, "\(name): frame names in order, each once")
            // The level chain, where a scenario expects it, is in the order frames are listed.
            let levels = record.frames.filter { levelChain.contains($0) }
            if !levels.isEmpty { XCTAssertEqual(levels, levelChain, name) }
            if let first = record.firstFrameAddress, first == 0 { XCTAssertEqual(record.faultAddress, 0, name) }
            XCTAssertFalse(record.noFatalMessage && record.message != nil, "\(name): a message and none")
            if let warning = record.runtimeWarning, let message = record.message {
                XCTAssertFalse(message.contains(warning), "\(name): the message must not hold the runtime warning")
            }
        }
    }

    func testTextTheRunMustPrintDoesNotContradictTextItMustNot() {
        for scenario in Scenarios.all {
            for lacking in scenario.stdoutLacks {
                XCTAssertFalse(scenario.stdoutContains.contains { $0.contains(lacking) }, scenario.name)
            }
        }
    }

    /// The built harness lists exactly this table, in this order, with these endings.
    func testTheHarnessListsTheTable() throws {
        let out = try Tools.output(BuiltProducts.harness, ["list", "--json"])
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])
        let listed = try XCTUnwrap(object["scenarios"] as? [[String: Any]])
        XCTAssertEqual(listed.compactMap { $0["name"] as? String }, Scenarios.all.map(\.name))
        XCTAssertEqual(listed.compactMap { $0["ending"] as? String }, Scenarios.all.map(\.ending.description))
        XCTAssertEqual(listed.compactMap { $0["record"] as? Bool }, Scenarios.all.map { $0.record != nil })
    }
}
