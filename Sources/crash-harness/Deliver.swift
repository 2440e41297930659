// Deliver.swift — crash-harness deliver: one launch of CrashReporting over a record directory, as
// an app configures it (Sentry alone, or with the events store), reported as JSON. Test support:
// run in a fresh process, so what the launch starts (threads, files) is the launch's alone.
import ArgumentParser
import CrashCapture
import SensorsEvents
import CrashReporter
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

        @Option(help: "Seconds shutdown may take.")
        var timeout: Double = 20

        @Flag(help: "After the launch (its JSON printed), crash with a null dereference instead of shutting down: one turn of a crash loop.")
        var crash = false

        func run() throws {
            var configuration = CrashReporting.Configuration(storePath: store, recordDirectory: records, appName: "crash-harness",
                                                             appVersion: EventLibrary.version)
            configuration.sentryDSN = sentryDSN
            let reporting = CrashReporting.start(configuration)
            let report = reporting.launchReport
            // The threads while the launch's work runs (before shutdown stops the senders).
            let threads = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap {
                (try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            }.sorted()
            if crash {
                print(try HarnessJSON.text(["recordsDelivered": report.recordsDelivered, "recordsFolded": report.recordsFolded,
                                            "errors": report.errors]))
                fflush(nil)
                cch_null_dereference()
            }
            let result = reporting.shutdown(timeout: timeout)
            struct Summary: Encodable {
                var tracker: Bool, threads: [String], recordsDelivered: [String], recordsAwaitingSinks: [String]
                var recordsIngested: [String], errors: [String], sentToSentry: Bool, sentryDSNError: String?
            }
            print(try HarnessJSON.text(Summary(tracker: reporting.tracker != nil, threads: threads,
                                               recordsDelivered: report.recordsDelivered, recordsAwaitingSinks: report.recordsAwaitingSinks,
                                               recordsIngested: report.recordsIngested, errors: report.errors,
                                               sentToSentry: result.sentToSentry, sentryDSNError: reporting.sentryDSNError)))
        }
    }
}
