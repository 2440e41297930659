// AnalyticsTestSupport.swift — what the analytics' tests read and run of the next launch: the
// store's pending events, and one inbox pass with the events sink.
@testable import CrashReporter
@testable import SensorsAnalytics
import CrashRecordFormat
@testable import SensorsTracking
import TestSupport

/// The store's pending events as JSON objects, oldest first.
func storedObjects(_ path: String) throws -> [[String: Any]] {
    let store = try TrackingStore(path: path)
    defer { store.close() }
    return try store.pendingBatch(limit: 100_000).map { object($0.json) }
}

extension SensorsAnalytics {
    /// What ``pass(in:store:appName:appVersion:)`` did: the inbox's report and the events sink's.
    struct Pass: Sendable, Equatable {
        var recordsUnreadable: [String]
        var recordsIngested: [String]
        var recordsAlreadyIngested: [String]
        var errors: [String]
    }

    /// One inbox pass over `directory` with the events sink over `store` alone: the records' part
    /// of a launch, without a tracker.
    static func pass(in directory: String, store: TrackingStore, appName: String, appVersion: String) -> Pass {
        let events = EventsSink(store: store, appName: appName, appVersion: appVersion)
        let launch = CrashReporting.deliverRecords(in: directory, sinks: [events])
        events.pruneClaims(keeping: Set((try? RecordFileName.names(in: directory)) ?? []))
        return Pass(recordsUnreadable: launch.recordsUnreadable, recordsIngested: events.report.recordsIngested,
                    recordsAlreadyIngested: events.report.recordsAlreadyIngested, errors: launch.errors)
    }
}
