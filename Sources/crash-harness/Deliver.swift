// Deliver.swift — crash-harness deliver: one launch of CrashReporting over a record directory, as
// an app configures it (Sentry alone, or with the events store or a recording sink), reported as
// JSON. Test support: run in a fresh process, so what the launch starts (threads, files) is the
// launch's alone.
import HostFacts
import ArgumentParser
import CrashCapture
import SensorsEvents
import CrashReporter
import CrashReporterSentry
import CrashReporterOTLP
import SensorsAnalytics
import CCrashScenarios
import Foundation

extension CrashHarness {
    struct Deliver: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Starts CrashReporting over a record directory, waits for its launch, shuts down; prints JSON.")

        @Option(help: "The record directory.")
        var records: String

        @Option(name: .customLong("sentry-dsn"), help: "Send records to this Sentry DSN.")
        var sentryDSN: String?

        @Option(help: "The events store (none: Sentry alone).")
        var store: String?

        @Option(help: "The events store's Sensors /sa endpoint (its events are uploaded at shutdown).")
        var endpoint: String?

        @Option(name: .customLong("recording-sink"),
                help: "Also a sink of the harness's own (id recording) that has every record and ended run at once and appends each to this file as a JSON line.")
        var recordingSink: String?

        @Option(help: "Seconds shutdown may take.")
        var timeout: Double = 20

        @Flag(help: "After the launch (its JSON printed), crash instead of shutting down (--crash-as says how): one turn of a crash loop.")
        var crash = false

        @Option(name: .customLong("crash-as"), help: "How --crash crashes: null-dereference (the default), abort or fatal-error.")
        var crashAs = "null-dereference"

        @Option(name: .customLong("crash-time-uploader"), help: "Turn crash-time upload on with this uploader (a path, or a name beside this executable).")
        var crashTimeUploader: String?

        @Option(help: "Before crashing, open this file without O_CLOEXEC, ignore SIGUSR2 and allow 1-byte core dumps (too small to write one): what a process started at the crash could inherit.")
        var inheritable: String?

        @Option(name: .customLong("data"),
                help: "What leaves with each crash, to Sentry and in its OTLP log record (the OTLP sink runs when OTEL_EXPORTER_OTLP_[LOGS_]ENDPOINT is set): raw-memory, breadcrumbs, identity, full-paths, host-details, request-query, request-attributes (comma-separated), none, or everything (default: CrashDataPolicy()).")
        var data: String?

        @Option(help: "With --crash (null-dereference): crash holding TEXT-CRUMB in a breadcrumb and TEXT-STACK on the stack (as emit --secret).")
        var secret: String?

        @Option(name: .customLong("run-id"), help: "This run's id (default: a new one).")
        var runID: String?

        @Option(help: "How the run ends after the launch: shutdown (the default), exit (exit(0) without shutdown: the exit hook), hold (sleep until killed; --ready-file is created first).")
        var end = "shutdown"

        @Option(name: .customLong("ready-file"), help: "With --end hold: created once the launch is done.")
        var readyFile: String?

        @Option(name: .customLong("before-send"),
                help: "A Sentry beforeSend hook: drop (returns nil), tag (adds tags.before_send = seen), not-json, new-id.")
        var beforeSend: String?

        @Option(help: "A tag of the app's scope, KEY=VALUE (repeatable), set before the reporter starts.")
        var tag: [String] = []

        @Option(name: .customLong("late-tag"), help: "With --crash: a tag KEY=VALUE (repeatable) set just before the crash.")
        var lateTag: [String] = []

        @Option(name: .customLong("start-first"),
                help: "Start something else before the reporter, as an app may: capture (CrashHandler.start into RECORDS-capture, another app name), reporter (the same CrashReporting.start a first time), or both.")
        var startFirst: String?

        @Flag(name: .customLong("check-setup"), help: "Instead of a launch: CrashReporting.verifySetup with this configuration; print what each sink answered, exit 0 when every sink has the crash, else 1.")
        var checkSetup = false

        @Option(help: "When the sessions of ended runs are sent: immediate (each launch sends the last run's: what the tests check the sessions with) or batched (the library's default: after 5 s of life, or once the oldest waited an hour).")
        var sessions = "immediate"

        @Option(help: "The scope's user: ID or ID,EMAIL.")
        var user: String?

        @Option(help: "A named context of the app's scope, NAME.KEY=VALUE (repeatable).")
        var context: [String] = []

        func validate() throws {
            for pair in tag + lateTag + context where !pair.contains("=") { throw ValidationError("\(pair): KEY=VALUE expected") }
            for pair in context where !(pair.split(separator: "=", maxSplits: 1).first ?? "").contains(".") {
                throw ValidationError("--context \(pair): NAME.KEY=VALUE expected")
            }
            guard ["shutdown", "exit", "hold"].contains(end) else { throw ValidationError("--end must be shutdown, exit or hold") }
            guard ["immediate", "batched"].contains(sessions) else { throw ValidationError("--sessions must be immediate or batched") }
            if let startFirst, !["capture", "reporter", "both"].contains(startFirst) {
                throw ValidationError("--start-first must be capture, reporter or both")
            }
            guard ["null-dereference", "abort", "fatal-error"].contains(crashAs) else {
                throw ValidationError("--crash-as must be null-dereference, abort or fatal-error")
            }
            if let data, data != "everything", CrashDataPolicy(argument: data) == nil {
                throw ValidationError("--data: raw-memory, breadcrumbs, identity, full-paths, host-details, request-query, request-attributes, none or everything")
            }
            if let beforeSend, !["drop", "tag", "not-json", "new-id"].contains(beforeSend) {
                throw ValidationError("--before-send must be drop, tag, not-json or new-id")
            }
        }

        /// The test hooks `--before-send` names, as an app writes one.
        static func hook(_ name: String) -> @Sendable (String) -> String? {
            { event in
                switch name {
                case "drop": return nil
                case "not-json": return "{not json"
                case "new-id": return event.replacingOccurrences(of: "\"event_id\":\"", with: "\"event_id\":\"f")
                default:
                    guard var object = try? JSONSerialization.jsonObject(with: Data(event.utf8)) as? [String: Any] else { return event }
                    var tags = object["tags"] as? [String: Any] ?? [:]
                    tags["before_send"] = "seen"
                    object["tags"] = tags
                    return (try? JSONSerialization.data(withJSONObject: object)).map { String(decoding: $0, as: UTF8.self) }
                }
            }
        }

        func run() throws {
            var configuration = CrashReporting.Configuration(recordDirectory: records, appName: "crash-harness",
                                                             appVersion: CrashCaptureLibrary.version)
            configuration.sentry = sentryDSN.map { SentryOptions(dsn: $0) }
            if let store { configuration.sinks = [SensorsAnalytics(storePath: store, endpoint: endpoint.flatMap(URL.init(string:)))] }
            if let recordingSink { configuration.sinks.append(FileRecordingSink(path: recordingSink)) }
            configuration.crashTimeUploader = crashTimeUploader
            configuration.sentry?.sessionBatching = sessions == "batched" ? SessionBatching() : .immediate
            if let data {
                configuration.dataPolicy = data == "everything" ? .everything : CrashDataPolicy(argument: data)!
            }
            configuration.sentry?.beforeSend = beforeSend.map(Self.hook)
            if let runID { configuration.capture = { $0.runID = runID } }
            func pair(_ text: String) -> (String, String) {
                let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                return (parts[0], parts.count > 1 ? parts[1] : "")
            }
            if !tag.isEmpty || user != nil || !context.isEmpty {
                let updated = CrashHandler.updateScope { scope in
                    for (key, value) in tag.map(pair) { scope.tags[key] = value }
                    if let user {
                        let parts = user.split(separator: ",", maxSplits: 1).map(String.init)
                        scope.user = CrashUser(id: parts.first, email: parts.count > 1 ? parts[1] : nil)
                    }
                    for (name, value) in context.map(pair) {
                        let (context, key) = name.split(separator: ".", maxSplits: 1).map(String.init).pair
                        scope.contexts[context, default: [:]][key] = value
                    }
                }
                guard updated else { throw ValidationError("the scope does not fit") }
            }
            if checkSetup {
                let check = CrashReporting.verifySetup(configuration, timeout: .seconds(timeout))
                print(check)
                fflush(nil)
                Glibc.exit(check.passed ? 0 : 1)
            }
            if startFirst == "capture" || startFirst == "both" {
                // As the capture-only guides have it, before the reporter: another directory, name and
                // version, hang detection on and no other threads' stacks (settings the reporter's
                // configuration does not set, which its takeover keeps).
                var own = CrashHandler.Configuration(directory: records + "-capture", appName: "capture-first", appVersion: "0")
                own.hangDetection = HangDetection(stallThreshold: .seconds(30))
                own.recordOtherThreads = false
                try CrashHandler.start(own)
            }
            if startFirst == "reporter" || startFirst == "both" {
                // The same reporter started twice (a service and a manual start, say).
                _ = CrashReporting.start(configuration)
            }
            let reporting = CrashReporting.start(configuration)
            if let taken = CrashHandler.runningConfiguration {
                // What capture runs with after the reporter started (took it over, or started it).
                FileHandle.standardError.write(Data(("capture after start: directory \(taken.directory), app \(taken.appName), "
                    + "hang detection \(taken.hangDetection.map { "\($0.stallThreshold)" } ?? "off") (watching \(HangDetector.isWatching)), "
                    + "other threads \(taken.recordOtherThreads)\n").utf8))
            }
            let report = reporting.launchReport
            // The tracker's writer names itself once it runs: it has when `$AppStart` is stored.
            reporting.tracker?.waitUntilStored(timeout: .seconds(10))
            // The threads while the launch's work runs (before shutdown stops the senders).
            let threads = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap {
                (try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            }.sorted()
            if crash {
                // The launch's report first (tests read it), then the crash.
                struct Launched: Encodable {
                    var captureInstalled: Bool, recordsDelivered: [String], recordsFolded: [String], errors: [String]
                    var runsEnded: [Runs.Run], runsRunning: Int
                }
                let runs = Runs(report)
                print(try HarnessJSON.text(Launched(captureInstalled: CrashHandler.isInstalled, recordsDelivered: report.recordsDelivered,
                                                    recordsFolded: report.recordsFolded, errors: report.errors,
                                                    runsEnded: runs.runsEnded, runsRunning: runs.runsRunning)))
                fflush(nil)
                if let inheritable {
                    _ = open(inheritable, O_RDONLY)
                    signal(SIGUSR2, SIG_IGN)
                    var core = rlimit()
                    getrlimit(Int32(RLIMIT_CORE.rawValue), &core)
                    var one = rlimit(rlim_cur: 1, rlim_max: max(core.rlim_max, 1))
                    if setrlimit(Int32(RLIMIT_CORE.rawValue), &one) != 0 && core.rlim_max >= 1 {
                        one.rlim_max = core.rlim_max
                        setrlimit(Int32(RLIMIT_CORE.rawValue), &one)
                    }
                }
                if !lateTag.isEmpty {
                    CrashHandler.updateScope { scope in for (key, value) in lateTag.map(pair) { scope.tags[key] = value } }
                }
                switch crashAs {
                case "abort": abort()
                case "fatal-error": fatalError("crash-harness deliver --crash --crash-as fatal-error")
                default:
                    if let secret { Emit.crash(holding: secret) }
                    cch_null_dereference()
                }
            }
            switch end {
            case "exit":
                print(try HarnessJSON.text(Runs(report)))
                fflush(nil)
                Glibc.exit(0)
            case "hold":
                print(try HarnessJSON.text(Runs(report)))
                fflush(nil)
                if let readyFile { _ = FileManager.default.createFile(atPath: readyFile, contents: Data(reporting.run.runID.utf8)) }
                while true { sleep(60) }
            default:
                break
            }
            let result = reporting.shutdown(timeout: .milliseconds(Int64(timeout * 1000)))
            struct Summary: Encodable {
                var tracker: Bool, threads: [String], recordsDelivered: [String], recordsAwaitingSinks: [String]
                var recordsIngested: [String], errors: [String], sentToSentry: Bool, sentryDSNError: String?
                var sentryDropped: Int, sentryQuarantined: Int
                var runsEnded: [Runs.Run], runsRunning: Int
                var sinksFinished: Bool, otlp: OTLP?
            }
            /// The OTLP sink's report.
            struct OTLP: Encodable {
                var sent: [String], rejected: [String: String], kept: [String: String], leftToOthers: [String], lastError: String?
            }
            let otlp = reporting.otlp?.currentReport
            let sentry = reporting.sentry?.currentReport
            print(try HarnessJSON.text(Summary(tracker: reporting.tracker != nil, threads: threads,
                                               recordsDelivered: report.recordsDelivered, recordsAwaitingSinks: report.recordsAwaitingSinks,
                                               recordsIngested: reporting.analytics?.launchReport.recordsIngested ?? [], errors: report.errors,
                                               sentToSentry: result.sentToSentry, sentryDSNError: reporting.sentryDSNError,
                                               sentryDropped: sentry?.dropped.count ?? 0, sentryQuarantined: sentry?.quarantined.count ?? 0,
                                               runsEnded: Runs(report).runsEnded, runsRunning: report.runsRunning,
                                               sinksFinished: result.sinksFinished,
                                               otlp: otlp.map { OTLP(sent: $0.sent, rejected: $0.rejected, kept: $0.kept,
                                                                     leftToOthers: $0.leftToOthers, lastError: $0.lastError) })))
        }
    }
}

/// The runs a launch found ended, as the harness prints them.
struct Runs: Encodable {
    struct Run: Encodable {
        var runID: String
        /// exited, crashed, killed or oom.
        var end: String
        var record: String?
        var pid: Int32
        var durationMilliseconds: Int64?
    }
    var runsEnded: [Run]
    var runsRunning: Int

    init(_ report: CrashReporting.LaunchReport) {
        runsRunning = report.runsRunning
        runsEnded = report.runsEnded.map { run in
            switch run.end {
            case .exited(_, let duration):
                return Run(runID: run.runID, end: "exited", pid: run.pid, durationMilliseconds: duration / 1_000_000)
            case .crashed(let record): return Run(runID: run.runID, end: "crashed", record: record, pid: run.pid)
            case .killed(let oom): return Run(runID: run.runID, end: oom ? "oom" : "killed", pid: run.pid)
            }
        }
    }
}

extension Array where Element == String {
    /// The first two elements (the second "" when missing).
    fileprivate var pair: (String, String) { (first ?? "", count > 1 ? self[1] : "") }
}
