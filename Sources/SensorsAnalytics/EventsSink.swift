// EventsSink.swift — the Sensors events sink: on the next launch, crash records become events.
//
// The inbox (RecordInbox) hands it each record; the file is deleted once every sink has it. Runs
// that died with neither a `$AppEnd` nor a record are told by the reporter after the records
// (SensorsAnalytics.takeRuns: an abnormal or `oom` `$AppEnd` from the store's row of the run),
// after this sink has claimed the crashed runs' rows.
import CrashRecordFormat
import CrashReporter
import HostFacts
import SensorsEvents
import CrashFrames
import SensorsTracking
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The Sensors events sink: each record becomes `AppCrashed` (crash priority) plus the
/// compensating `$AppEnd` it carries, in one transaction of the tracking store that also takes
/// the record's claim (its file name: the same events are never stored twice, even by several
/// processes) and removes the crashed run's marker. Made for one inbox pass, on the tracker's
/// writer thread (the launch); its report is read after the pass.
// @unchecked: used by the one thread that runs the pass.
final class EventsSink: CrashRecordSink, @unchecked Sendable {
    /// What the sink did in one pass.
    struct Report: Sendable, Equatable {
        /// Records turned into `AppCrashed` (+ `$AppEnd`).
        var recordsIngested: [String] = []
        /// Records whose events an earlier launch (or another process) stored.
        var recordsAlreadyIngested: [String] = []
        /// Records the reader rejected; still stored as an `AppCrashed` saying so.
        var recordsUnreadable: [String] = []
        /// Why a record's events could not be stored (it stays for the next launch).
        var errors: [String] = []
    }

    let id = RecordSinkID.events
    private let store: TrackingStore
    private let appName: String
    private let appVersion: String
    private let extraPresets: [String: JSONScalar]
    /// What the store holds of earlier runs, read at the first record (a launch without records
    /// reads nothing): the markers, of which a record's crashed run is removed as it is matched;
    /// the super properties, which the crashed run was the last to set (the store keeps them
    /// across runs); and the identity, for a record that carries no `$AppEnd` (capture was not
    /// given one yet, or ran alone) and matches no run marker.
    private struct Stored {
        var markers: [RunMarker]
        var superProperties: [String: JSONScalar]
        var identity: EventIdentity
    }
    private lazy var stored: Stored = {
        let state = try? store.loadState(claimingFirstStart: false)
        return Stored(markers: (try? store.runMarkers()) ?? [], superProperties: state?.superProperties ?? [:],
                      identity: state.map { EventIdentity(anonymousID: $0.anonymousID, loginID: $0.loginID) } ?? EventIdentity())
    }()
    private var markers: [RunMarker] {
        get { stored.markers }
        set { stored.markers = newValue }
    }
    private var superProperties: [String: JSONScalar] { stored.superProperties }
    private var storedIdentity: EventIdentity { stored.identity }
    private(set) var report = Report()

    init(store: TrackingStore, appName: String, appVersion: String, extraPresets: [String: JSONScalar] = [:]) {
        self.store = store
        self.appName = appName
        self.appVersion = appVersion
        self.extraPresets = extraPresets
    }

    func take(_ record: InboxRecord, receipt: SinkReceipt) -> SinkResult {
        let events: [NewEvent]
        var endingRun: String?
        switch record.record {
        case .success(let crash):
            let (made, marker) = self.events(for: crash, name: record.name, repetition: record.tally.repetition(forSink: id.rawValue))
            events = made
            if let marker {
                endingRun = marker.runID
                markers.removeAll { $0.runID == marker.runID }
            }
        case .failure(let error):
            events = [unreadableEvent(name: record.name, error: error)]
        }
        do {
            if try !store.appendOnce(events, claim: record.name, endingRun: endingRun) {
                report.recordsAlreadyIngested.append(record.name)
            } else if case .failure = record.record {
                report.recordsUnreadable.append(record.name)
            } else {
                report.recordsIngested.append(record.name)
            }
            return .delivered
        } catch {
            report.errors.append("\(record.name): \(error)")
            return .later(reason: "\(error)")
        }
    }

    /// Forgets the claims of records no longer on disk (after 30 days): `present` are the
    /// records still there, whose claims must stay.
    func pruneClaims(keeping present: Set<String>) {
        try? store.pruneClaims(keeping: present)
    }

    /// `AppCrashed` and `$AppEnd` of a readable record, and the marker of its run if one matches.
    private func events(for record: CrashRecord, name: String, repetition: CrashRepetition) -> ([NewEvent], RunMarker?) {
        let parsed = RecordFileName(name)
        let appEnd = Self.parseAppEnd(record.appEndJSON)
        let crashMs = record.process.map { $0.crashWallNanoseconds / 1_000_000 } ?? parsed?.milliseconds
        let marker = Self.matchMarker(markers, runID: record.runID, pid: record.process?.pid ?? parsed?.pid, crashMs: crashMs)
        let runID = record.runID ?? marker?.runID ?? ""
        let identity = appEnd?.identity ?? marker?.identity ?? storedIdentity
        let renderer = EventRenderer(appName: record.appName ?? marker?.appName ?? appName,
                                     appVersion: record.appVersion ?? marker?.appVersion ?? appVersion, extraPresets: extraPresets)
        let base = renderer.base(superProperties: superProperties)
        let time = crashMs ?? Self.nowMilliseconds()
        if let live = record.event {
            // A hang is an event of its own and ends no run; a snapshot, asked for by a person,
            // is not an event of the app at all; a hang the run was later killed in was an
            // `AppHang` already, and its end is the run's `$AppEnd` (reason `hang`).
            guard live.kind == .hang, live.fate == nil else { return ([], nil) }
            var properties: [String: JSONScalar] = [
                "$hang_record": .string(name), "$hang_detector": .string(live.detector.name), "$hang_reason": .string(live.summary),
                "$hang_threshold_ms": .int(Int(clamping: live.thresholdMilliseconds)),
                "$hang_observed_ms": .int(Int(clamping: live.observedMilliseconds)),
            ]
            if let requests = record.requests { properties["$hang_requests_in_flight"] = .int(requests.inFlight) }
            let hang = AppEvents.appHang(runID: runID, time: time, identity: identity, properties: properties)
            return ([NewEvent(hang, json: renderer.render(hang, base: base))], nil)
        }
        let crashed = AppEvents.appCrashed(runID: runID, time: time, identity: identity,
                                           properties: Self.crashProperties(record, name: name, repetition: repetition))
        var events = [NewEvent(crashed, json: renderer.render(crashed, base: base))]
        if let appEnd {
            events.append(NewEvent(trackID: appEnd.trackID, event: AppEvents.appEnd, time: appEnd.time, priority: .crash, json: appEnd.json))
        } else {
            // No usable compensating $AppEnd: the same one, made from what the record knows.
            let end = AppEvents.appEnd(reason: .crash, durationSeconds: record.process?.uptimeSeconds ?? 0, runID: runID,
                                       time: time, identity: identity)
            events.append(NewEvent(end, json: renderer.render(end, base: base)))
        }
        return (events, marker)
    }

    /// The `AppCrashed` of a record the reader rejected: a crash happened, its record says no more.
    private func unreadableEvent(name: String, error: CrashRecordError) -> NewEvent {
        let renderer = EventRenderer(appName: appName, appVersion: appVersion, extraPresets: extraPresets)
        let time = RecordFileName(name)?.milliseconds ?? Self.nowMilliseconds()
        let draft = AppEvents.appCrashed(runID: "", time: time, identity: storedIdentity, properties: [
            "app_crashed_reason": .string("unreadable crash record \(name): \(error)"),
            "$crash_record": .string(name), "$crash_record_complete": .bool(false),
        ])
        return NewEvent(draft, json: renderer.render(draft, base: renderer.base(superProperties: superProperties)))
    }

    struct AppEnd {
        var json: String
        var trackID: String
        var time: Int64
        var identity: EventIdentity
    }

    /// The members of a record's `$AppEnd` the ingest reads (the rest is stored as written).
    private struct AppEndHead: Decodable {
        var event: String
        var trackID: String
        var time: Int64
        var anonymousID: String?
        var loginID: String?
        /// Present and a JSON object (its members are not read).
        var properties: AnyObject

        /// Any JSON object.
        struct AnyObject: Decodable {
            init(from decoder: any Decoder) throws { _ = try decoder.container(keyedBy: Key.self) }
            struct Key: CodingKey {
                var stringValue: String
                var intValue: Int? { nil }
                init(stringValue: String) { self.stringValue = stringValue }
                init?(intValue: Int) { nil }
            }
        }

        enum CodingKeys: String, CodingKey {
            case event, trackID = "_track_id", time, anonymousID = "anonymous_id", loginID = "login_id", properties
        }
    }

    /// The record's compensating `$AppEnd`, if it is a JSON object with the members it must have.
    static func parseAppEnd(_ text: String?) -> AppEnd? {
        guard let text, !hasRawControlCharacterInString(text),
              let head = try? JSONDecoder().decode(AppEndHead.self, from: Data(text.utf8)),
              head.event == AppEvents.appEnd, !head.trackID.isEmpty
        else { return nil }
        return AppEnd(json: text.trimmingCharacters(in: .whitespacesAndNewlines), trackID: head.trackID, time: head.time,
                      identity: EventIdentity(anonymousID: head.anonymousID, loginID: head.loginID))
    }

    /// Whether a JSON text has a raw control character inside a string, which RFC 8259 forbids
    /// (and the /sa server would refuse) but Foundation's decoder lets through.
    static func hasRawControlCharacterInString(_ text: String) -> Bool {
        var inString = false, escaped = false
        for byte in text.utf8 {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                } else if byte < 0x20 {
                    return true
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            }
        }
        return false
    }

    /// The marker of the crashed run: by run id, else the latest dead one of that pid started before the crash.
    static func matchMarker(_ markers: [RunMarker], runID: String?, pid: Int32?, crashMs: Int64?) -> RunMarker? {
        if let runID, let marker = markers.first(where: { $0.runID == runID }) { return marker }
        guard let pid, let crashMs else { return nil }
        return markers.filter { $0.process.pid == pid && $0.startWallMilliseconds <= crashMs + 1000 && !$0.process.isAlive }
            .max { $0.startWallMilliseconds < $1.startWallMilliseconds }
    }

    static func nowMilliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
