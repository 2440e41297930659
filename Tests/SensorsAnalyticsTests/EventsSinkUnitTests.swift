// EventsSinkUnitTests.swift — CrashReporter's own pieces, on real records and hostile text:
// the parse of a record's $AppEnd, the pairing of a record with its run marker, and AppCrashed's
// properties checked against readelf (an oracle no one here wrote), and the crash said in the same
// words by AppCrashed, the Sentry event and crash-inspect.
import CrashCapture
@testable import CrashReporter
@testable import SensorsAnalytics
import SensorsEvents
import CrashInspection
import CrashRecordFormat
import CrashScenarios
import CrashSentry
import CrashSymbolication
import SensorsTracking
import Foundation
import TestSupport
import XCTest
import HostFacts

final class EventsSinkUnitTests: XCTestCase {
    // MARK: the record's $AppEnd is untrusted text

    func testAValidAppEndIsTakenWithItsTrackIDTimeAndIdentity() throws {
        let text = #"  {"_track_id":"t-1","time":1700000000123,"type":"track","event":"$AppEnd","anonymous_id":"a","login_id":"u","properties":{"$run_id":"r"}} "#
        let end = try XCTUnwrap(EventsSink.parseAppEnd(text))
        XCTAssertEqual(end.trackID, "t-1")
        XCTAssertEqual(end.time, 1_700_000_000_123)
        XCTAssertEqual(end.identity, EventIdentity(anonymousID: "a", loginID: "u"))
        XCTAssertEqual(end.json, text.trimmingCharacters(in: .whitespaces), "stored as written, trimmed")
    }

    func testHostileOrIncompleteAppEndsAreRefused() {
        let refused = [
            nil, "", "null", "[]", "\"$AppEnd\"", "{", #"{"event":"$AppEnd"}"#,
            #"{"_track_id":"t","time":1,"event":"AppCrashed","properties":{}}"#,          // not an $AppEnd
            #"{"_track_id":"","time":1,"event":"$AppEnd","properties":{}}"#,              // empty track id
            #"{"_track_id":"t","time":"soon","event":"$AppEnd","properties":{}}"#,        // time not a number
            #"{"_track_id":"t","time":1,"event":"$AppEnd","properties":[]}"#,             // properties not an object
            #"{"_track_id":"t","time":1,"event":"$AppEnd"}"#,                             // no properties
            #"{"_track_id":"t","time":1,"event":"$AppEnd","properties":{}"#,              // cut short
            "{\"_track_id\":\"t\",\"time\":1,\"event\":\"$AppEnd\",\"properties\":{\"x\":\"\u{1}T\"}}", // a raw control byte
        ]
        for text in refused {
            XCTAssertNil(EventsSink.parseAppEnd(text), text ?? "nil")
        }
    }

    // MARK: pairing a record with its run

    private func marker(_ runID: String, pid: Int32, startTicks: Int64 = 1, start: Int64) -> RunMarker {
        RunMarker(runID: runID, process: ProcessIdentity(pid: pid, bootID: ProcessIdentity.bootID(), startTicks: startTicks),
                  startWallMilliseconds: start, startMonotonicNanoseconds: 0, refreshWallMilliseconds: start,
                  refreshMonotonicNanoseconds: 0, appName: "a", appVersion: "1", identity: EventIdentity())
    }

    func testARecordPairsWithItsRunByRunIDFirst() {
        let markers = [marker("a", pid: 999_990, start: 1_000), marker("b", pid: 999_991, start: 2_000)]
        XCTAssertEqual(EventsSink.matchMarker(markers, runID: "b", pid: 999_990, crashMs: 1_500)?.runID, "b")
    }

    func testWithoutARunIDTheLatestDeadRunOfThatPidStartedBeforeTheCrashIsTaken() {
        let dead = 999_990 as Int32 // no such process here
        let markers = [marker("old", pid: dead, start: 2_000), marker("newer", pid: dead, start: 5_000),
                       marker("after-crash", pid: dead, start: 60_000), marker("other-pid", pid: 999_991, start: 6_000)]
        XCTAssertEqual(EventsSink.matchMarker(markers, runID: nil, pid: dead, crashMs: 10_000)?.runID, "newer")
        XCTAssertEqual(EventsSink.matchMarker(markers, runID: "unknown", pid: dead, crashMs: 10_000)?.runID, "newer")
        // Started more than the one-second slack after the crash: not the crashed run.
        XCTAssertNil(EventsSink.matchMarker(markers, runID: nil, pid: dead, crashMs: 500))
        XCTAssertNil(EventsSink.matchMarker(markers, runID: nil, pid: nil, crashMs: 10_000))
        // A live process's run (this one) never pairs with a record by pid.
        let live = ProcessIdentity.current
        let mine = RunMarker(runID: "live", process: live, startWallMilliseconds: 1, startMonotonicNanoseconds: 0,
                             refreshWallMilliseconds: 1, refreshMonotonicNanoseconds: 0, appName: "a", appVersion: "1",
                             identity: EventIdentity())
        XCTAssertNil(EventsSink.matchMarker([mine], runID: nil, pid: live.pid, crashMs: 10_000))
    }

    // MARK: AppCrashed from a real record

    /// Crashes `scenario` in the debug harness (with its reference run, CrashCapture disabled,
    /// unless `reference` is false); the run, the record and its file name.
    func crash(_ name: String, reference: Bool = true) throws -> (outcome: RunOutcome, record: CrashRecord, name: String) {
        let scenario = try XCTUnwrap(Scenarios.named(name))
        let directory = try Scratch.directory("reporter-" + name)
        let outcome = try ScenarioRunner.run(scenario, harness: BuiltProducts.harness, directory: directory, timeout: 60, reference: reference)
        let path = try XCTUnwrap(outcome.ownRecordFiles.first)
        return (outcome, try CrashRecordReader.read(path: path), (path as NSString).lastPathComponent)
    }

    func testAppCrashedOfAnUncaughtCxxExceptionNamesItsTypeAndWhat() throws {
        let (_, record, name) = try crash("cxx-exception")
        let properties = EventsSink.crashProperties(record, name: name)
        XCTAssertEqual(properties["$crash_cxx_exception_type"], .string("std::runtime_error"))
        XCTAssertEqual(properties["$crash_cxx_exception_message"], .string("the order could not be priced: currency XTS"))
        guard case .string(let reason)? = properties["app_crashed_reason"] else { return XCTFail("no reason") }
        XCTAssertTrue(reason.hasPrefix("SIGABRT: ") && reason.contains("uncaught C++ exception std::runtime_error: the order could not be priced"), reason)
    }

    func testAppCrashedPropertiesOfARealCrashAgreeWithTheRecordAndReadelf() throws {
        let (outcome, record, name) = try crash("null-dereference")
        let properties = EventsSink.crashProperties(record, name: name)

        XCTAssertEqual(properties["$crash_signal"], .string("SIGSEGV"))
        XCTAssertEqual(properties["$crash_signal_number"], .int(Int(SIGSEGV)))
        XCTAssertEqual(properties["$crash_signal_code"], .string("SEGV_MAPERR"))
        XCTAssertEqual(properties["$crash_fault_address"], .string("0x0"))
        XCTAssertEqual(properties["$crash_record"], .string(name))
        XCTAssertEqual(properties["$crash_record_complete"], .bool(true))
        XCTAssertEqual(properties["$crash_pid"], .int(Int(outcome.pid)))
        // What the process had at the crash: the record's figures, as numbers.
        let resources = try XCTUnwrap(record.resources)
        XCTAssertEqual(properties["$crash_open_descriptors"], resources.openDescriptors.map(JSONScalar.int))
        XCTAssertEqual(properties["$crash_threads"], resources.threads.map(JSONScalar.int))
        XCTAssertEqual(properties["$crash_memory_resident"], .int(Int(try XCTUnwrap(resources.residentBytes))))
        let thread = try XCTUnwrap(record.crashedThread)
        XCTAssertEqual(properties["$crash_frame_count"], .int(thread.frames.count))

        // The build id, as binutils' readelf prints it for the harness executable.
        let readelf = try Tools.output(try XCTUnwrap(Tools.find("readelf")), ["-n", BuiltProducts.harness])
        let buildID = try XCTUnwrap(readelf.split(separator: "\n").first { $0.contains("Build ID:") }?
            .split(separator: " ").last.map(String.init))
        XCTAssertEqual(properties["$crash_build_id"], .string(buildID))

        // app_crashed_reason: the crash's one summary (CrashSummary), its headline as Sentry shows
        // the exception ("type: value"), then the first frames as #n 0xpc image+0xoffset.
        guard case .string(let reason) = try XCTUnwrap(properties["app_crashed_reason"]) else { return XCTFail("not a string") }
        let lines = reason.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines[0].hasPrefix("SIGSEGV: SEGV_MAPERR ("), lines[0])
        XCTAssertTrue(lines[0].hasSuffix(" at 0x0"), lines[0])
        let frameLines = lines.filter { $0.hasPrefix("#") }
        XCTAssertEqual(frameLines.count, min(EventsSink.reasonFrames, thread.frames.count))
        let harnessName = (BuiltProducts.harness as NSString).lastPathComponent
        let first = try XCTUnwrap(frameLines.first)
        XCTAssertTrue(first.hasPrefix("#0 0x" + String(thread.frames[0], radix: 16) + " " + harnessName + "+0x"), first)
        // The offset is the pc's place in the file: nm's address of the crashing function is at or
        // just below it (a PIE's symbol values are offsets from its base).
        let offset = try XCTUnwrap(UInt64(first.split(separator: "+0x").last.map(String.init) ?? "", radix: 16))
        let nm = try Tools.output(try XCTUnwrap(Tools.find("nm")), ["--defined-only", BuiltProducts.harness])
        let symbol = try XCTUnwrap(nm.split(separator: "\n").first { $0.hasSuffix(" cch_null_dereference") })
        let start = try XCTUnwrap(UInt64(symbol.split(separator: " ")[0], radix: 16))
        XCTAssertGreaterThanOrEqual(offset, start)
        XCTAssertLessThan(offset, start + 64, "frame 0 is inside cch_null_dereference")
    }

    /// An async crash: AppCrashed's reason frames continue past the first async frame with its
    /// async callers, marked [async], told from the symbol tables of the files here (no
    /// symbolizer) — and they are the frames the Symbolicator (llvm-symbolizer's names) and
    /// `nm` (each resume point is the start of a function) agree on.
    func testAppCrashedOfAnAsyncCrashListsTheAsyncCallersAsTheSymbolizerAndNmSeeThem() throws {
        let (_, record, name) = try crash("async-task-chain", reference: false)
        let thread = try XCTUnwrap(record.crashedThread)
        let properties = EventsSink.crashProperties(record, name: name)
        guard case .string(let reason) = try XCTUnwrap(properties["app_crashed_reason"]) else { return XCTFail("not a string") }
        let frameLines = reason.split(separator: "\n").map(String.init).filter { $0.hasPrefix("#") }

        let truth = try Symbolicator().threadFrames(of: thread, images: record.images)
        let asyncTruth = truth.filter { $0.kind == .asyncResumePoint }
        XCTAssertGreaterThanOrEqual(asyncTruth.count, 4, "handleRequest, asyncLevel1, asyncLevel2 and the task's closure")
        XCTAssertEqual(properties["$crash_async_frame_count"], .int(asyncTruth.count))
        XCTAssertEqual(frameLines.count, min(EventsSink.reasonFrames, truth.count))
        for (line, frame) in zip(frameLines, truth) {
            XCTAssertTrue(line.contains("0x" + String(frame.address, radix: 16) + " "), "\(line) vs \(frame.address)")
            XCTAssertEqual(line.hasSuffix(" [async]"), frame.kind == .asyncResumePoint, line)
        }
        // Every async frame in the harness is the first byte of a function, as nm lists them.
        let nm = try Tools.output(try XCTUnwrap(Tools.find("nm")), ["--defined-only", BuiltProducts.harness])
        let starts = Set(nm.split(separator: "\n").compactMap { UInt64($0.split(separator: " ").first ?? "", radix: 16) })
        let harness = try XCTUnwrap(record.images.first { $0.isMainExecutable })
        for frame in asyncTruth where harness.contains(frame.address) {
            XCTAssertTrue(starts.contains(frame.address - harness.base), "0x\(String(frame.address - harness.base, radix: 16)) is no function start")
        }
    }

    /// The request the crash killed: its id, method, route, trace and span, and how many were in
    /// flight; never its query or key/values. A crash that names no request says only the count.
    func testAppCrashedNamesTheRequestTheCrashKilledAndHowManyWereInFlight() throws {
        let (_, record, name) = try crash("request-with-query", reference: false)
        let crashed = try XCTUnwrap(record.requests?.crashed)
        let properties = EventsSink.crashProperties(record, name: name)
        XCTAssertEqual(properties["$crash_request_id"], .string("req-12"))
        XCTAssertEqual(properties["$crash_request_method"], .string(harnessRequestContext(12).method))
        XCTAssertEqual(properties["$crash_request_route"], .string("/orders/{id}"))
        XCTAssertEqual(properties["$crash_trace_id"], .string(harnessRequestContext(12).traceID))
        XCTAssertEqual(properties["$crash_span_id"], crashed.spanID.map { .string($0) })
        XCTAssertEqual(properties["$crash_requests_in_flight"], .int(5))
        let everything = properties.values.map { "\($0)" }.joined(separator: " ")
        XCTAssertFalse(everything.contains("s3cr3t"), "the query stays out")
        XCTAssertFalse(properties.keys.contains { $0.contains("query") || $0.contains("attribute") })

        let (_, detached, detachedName) = try crash("request-detached-task", reference: false)
        let none = EventsSink.crashProperties(detached, name: detachedName)
        XCTAssertEqual(none["$crash_requests_in_flight"], .int(5))
        for key in ["$crash_request_id", "$crash_request_method", "$crash_request_route", "$crash_trace_id", "$crash_span_id"] {
            XCTAssertNil(none[key], key)
        }
        // A program without request contexts: none of them.
        let (_, plain, plainName) = try crash("null-dereference", reference: false)
        XCTAssertFalse(EventsSink.crashProperties(plain, name: plainName).keys.contains { $0.hasPrefix("$crash_request") || $0 == "$crash_trace_id" })
    }

    /// glibc's abort message reaches AppCrashed: its own property, and the end of the reason's
    /// headline (the first line of the process's last words), as glibc printed it on stderr (the
    /// reference run, CrashCapture disabled).
    func testAppCrashedCarriesGlibcsAbortMessage() throws {
        let (outcome, record, name) = try crash("double-free")
        let properties = EventsSink.crashProperties(record, name: name)
        let printed = try XCTUnwrap(outcome.reference?.stderr.split(separator: "\n").first { $0.contains("double free") }.map(String.init))
        XCTAssertEqual(properties["$crash_abort_message"], .string(printed))
        guard case .string(let reason) = try XCTUnwrap(properties["app_crashed_reason"]) else { return XCTFail("not a string") }
        XCTAssertTrue(reason.split(separator: "\n").first?.hasSuffix(" — " + printed) == true, reason)
        XCTAssertNil(properties["$crash_fatal_message"])
    }

    /// What a record stands for beyond its own crash, as the reporter hands it to the events sink
    /// (its tally, the crash loop it was judged part of): AppCrashed counts its own crash and the
    /// folded ones this sink had not reported (`$crash_count`, since `$crash_first_time`) and says
    /// the loop (`$crash_loop`, `$crash_loop_length`); a record that stands for itself alone says
    /// one crash. (That the reporter hands a sink the right tally and loop, in real crash loops:
    /// CrashReporterTests' BoundedDirectoryTests.)
    func testAppCrashedSaysTheFoldedCrashesAndTheCrashLoopTheRecordStandsFor() throws {
        let (_, record, _) = try crash("null-dereference", reference: false)
        let directory = try Scratch.directory("events-repetition")
        let store = try TrackingStore(path: directory + "/s.sqlite")
        let sink = EventsSink(store: store, appName: "t", appVersion: "1")
        var folded = RecordTally()
        folded.folded = 4
        folded.firstFoldedMilliseconds = 1_700_000_000_000
        folded.lastFoldedMilliseconds = 1_700_000_003_000
        folded.deliveredBySink = ["events": 1, "sentry": 4]
        folded.consecutiveCrashesAtStart = 5
        var atStart = RecordTally()
        atStart.consecutiveCrashesAtStart = 2
        let tallies = [folded, atStart, RecordTally()]
        let receipt = SinkReceipt(acknowledge: {}, isAcknowledged: { false })
        // One real record under three names (the events sink claims a record by its name).
        for (index, tally) in tallies.enumerated() {
            let name = RecordFileName(milliseconds: 1_700_000_004_000 + Int64(index), pid: 999_999, tid: 999_999).name
            let given = InboxRecord(name: name, path: directory + "/" + name, bytes: [], record: .success(record), tally: tally)
            XCTAssertEqual(sink.take(given, receipt: receipt), .delivered)
        }
        let crashed = try storedObjects(directory + "/s.sqlite").filter { $0.event == "AppCrashed" }.map(\.properties)
        XCTAssertEqual(crashed.count, 3)
        XCTAssertEqual(crashed[0]["$crash_count"] as? Int, 4, "its own and the three folded ones the events sink had not reported")
        XCTAssertEqual(crashed[0]["$crash_first_time"] as? Int, 1_700_000_000_000)
        XCTAssertEqual(crashed[0]["$crash_loop"] as? Bool, true)
        XCTAssertEqual(crashed[0]["$crash_loop_length"] as? Int, 5)
        XCTAssertEqual(crashed[1]["$crash_count"] as? Int, 1)
        XCTAssertNil(crashed[1]["$crash_first_time"])
        XCTAssertEqual(crashed[1]["$crash_loop"] as? Bool, false, "two crashes at start are no loop yet")
        XCTAssertEqual(crashed[1]["$crash_loop_length"] as? Int, 2)
        XCTAssertEqual(crashed[2]["$crash_count"] as? Int, 1)
        XCTAssertEqual(crashed[2]["$crash_loop"] as? Bool, false)
        XCTAssertNil(crashed[2]["$crash_loop_length"], "not judged: no length")
    }

    // MARK: one summary of a crash

    /// A crash reads the same wherever it is said in one line: AppCrashed's reason, the Sentry
    /// exception (which Sentry shows as "type: value") and crash-inspect (show's text and JSON,
    /// list's JSON) — the signal, its code, the fault address, then the fatal message's first
    /// line as the Swift runtime printed it on stderr (the reference run, CrashCapture disabled);
    /// and AppCrashed's frames, told from the images' symbol tables, are the ones crash-inspect's
    /// summary takes from llvm-symbolizer's names, async callers included.
    func testAppCrashedSentryAndCrashInspectSayACrashInTheSameWords() throws {
        for (scenario, reference) in [("fatal-error", true), ("async-task-chain", false), ("double-free", true)] {
            let (outcome, record, name) = try crash(scenario, reference: reference)
            let signal = try XCTUnwrap(record.signal)
            guard case .string(let reason) = try XCTUnwrap(EventsSink.crashProperties(record, name: name)["app_crashed_reason"]) else {
                return XCTFail("not a string")
            }
            let reasonLines = reason.split(separator: "\n").map(String.init)
            let headline = try XCTUnwrap(reasonLines.first)

            // Against the record and what the process printed.
            XCTAssertTrue(headline.hasPrefix("\(signal.name): \(signal.codeName) (\(signal.codeDescription))"), headline)
            if let stderr = outcome.reference?.stderr {
                let printed = try XCTUnwrap(stderr.split(separator: "\n").first { $0.contains("Fatal error: ") || $0.contains("double free") })
                XCTAssertTrue(headline.hasSuffix(" — " + printed), "\(headline) vs \(printed)")
            }

            // The Sentry event as the uploader makes it (frames from the symbol tables here).
            let exception = try XCTUnwrap(SentryEnvelope.event(record: record, eventID: SentryEnvelope.eventID(rawRecord: [])).exception.values.first)
            XCTAssertEqual(exception.type + ": " + exception.value, headline, scenario)

            // crash-inspect, with llvm-symbolizer's names.
            let inspection = Inspection(path: name, record: record, symbolicator: try Symbolicator())
            XCTAssertTrue(Rendering.text(inspection).contains("\nWhat happened\n  " + headline + "\n"), scenario)
            XCTAssertEqual(Rendering.json(inspection).summary, headline, scenario)
            XCTAssertEqual(inspection.summary.lines, reasonLines, scenario)
            if scenario == "async-task-chain" {
                XCTAssertTrue(reasonLines.contains { $0.hasSuffix(" [async]") }, reason)
            }
        }
    }
}
