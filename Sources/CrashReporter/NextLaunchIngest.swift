// NextLaunchIngest.swift — on the next launch, crash records become events.
//
// A record becomes `AppCrashed` (crash priority) plus the compensating `$AppEnd` it carries, in
// one transaction that also marks the record ingested and removes the crashed run's marker; the
// file is deleted only after that commit. The markers of runs that died with neither a
// `$AppEnd` nor a record are the Tracker's own business (it reports them as abnormal ends when
// it starts, after this ingest has claimed the crashed runs).
import CrashCapture
import CrashEvents
import CrashSymbolication
import CrashTracking
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The next-launch ingest of crash records and run markers into a ``TrackingStore``.
public enum NextLaunchIngest {
    /// What one ingest did.
    public struct Report: Sendable, Equatable {
        /// Records turned into `AppCrashed` (+ `$AppEnd`) and deleted.
        public var recordsIngested: [String] = []
        /// Records already ingested by an earlier launch (or another process), now deleted.
        public var recordsAlreadyIngested: [String] = []
        /// Records the reader rejected; still ingested as an `AppCrashed` saying so, and deleted.
        public var recordsUnreadable: [String] = []
        /// Partial records of a process that still runs (left alone).
        public var recordsInProgress: [String] = []
        /// Records whose events are stored but which another sink (Sentry) has not acknowledged
        /// yet: kept on disk for it.
        public var recordsAwaitingSinks: [String] = []
        /// Run markers of dead runs turned into abnormal `$AppEnd`s (by the Tracker that
        /// started after the ingest; see ``Tracker/abnormalEnds``).
        public var abnormalEnds: [String] = []
        /// Problems that left something in place for the next launch.
        public var errors: [String] = []
        public init() {}
    }

    /// Ingests every record in `recordDirectory` (if any). Never throws: failures are reported
    /// and retried at the next launch. A record file is deleted once its events are stored and,
    /// for each prefix in `awaitingClaims` (one per other sink, e.g. the Sentry upload's
    /// `"sentry:"`), the claim `prefix + name` is taken: until then it stays for that sink.
    public static func run(store: TrackingStore, recordDirectory: String?, appName: String, appVersion: String,
                           awaitingClaims: [String] = [], extraPresets: [String: JSONScalar] = [:]) -> Report {
        var report = Report()
        var markers = (try? store.runMarkers()) ?? []
        // The crashed run was the last to set them (the store keeps them across runs). Its
        // identity too, for a record that carries no $AppEnd (capture was not given one yet, or
        // capture ran alone) and matches no run marker.
        let state = try? store.loadState(claimingFirstStart: false)
        let superProperties = state?.superProperties ?? [:]
        let storedIdentity = state.map { EventIdentity(anonymousID: $0.anonymousID, loginID: $0.loginID) } ?? EventIdentity()
        var present: Set<String> = []
        if let recordDirectory {
            let names = ((try? RecordFileName.names(in: recordDirectory)) ?? []).filter { RecordFileName($0) != nil }
            for name in names {
                ingestRecord(name: name, directory: recordDirectory, store: store, markers: &markers,
                             superProperties: superProperties, storedIdentity: storedIdentity, extraPresets: extraPresets, appName: appName,
                             appVersion: appVersion, report: &report)
                if let done = finish(name: name, directory: recordDirectory, store: store, awaitingClaims: awaitingClaims,
                                     report: &report), !done {
                    present.insert(name)
                    for prefix in awaitingClaims { present.insert(prefix + name) }
                }
            }
        }
        try? store.pruneClaims(keeping: present)
        return report
    }

    /// Deletes the record file if every sink has it: its events stored (claim `name`) and each
    /// `awaitingClaims` prefix claimed. Returns `nil` when the events are not stored (the file
    /// was left for a reason already reported), else whether the file was deleted.
    @discardableResult
    public static func finish(name: String, directory: String, store: TrackingStore, awaitingClaims: [String]) -> Bool? {
        var report = Report()
        return finish(name: name, directory: directory, store: store, awaitingClaims: awaitingClaims, report: &report)
    }

    private static func finish(name: String, directory: String, store: TrackingStore, awaitingClaims: [String],
                               report: inout Report) -> Bool? {
        guard (try? store.isClaimed(name)) == true else { return nil }
        for prefix in awaitingClaims where (try? store.isClaimed(prefix + name)) != true {
            report.recordsAwaitingSinks.append(name)
            return false
        }
        unlink("\(directory)/\(name)")
        return true
    }

    private static func ingestRecord(name: String, directory: String, store: TrackingStore, markers: inout [RunMarker],
                                     superProperties: [String: JSONScalar], storedIdentity: EventIdentity, extraPresets: [String: JSONScalar],
                                     appName: String, appVersion: String, report: inout Report) {
        let path = "\(directory)/\(name)"
        let parsed = RecordFileName(name)
        if let parsed, parsed.isPartial, parsed.pid != getpid(),
           ProcessIdentity.isRunning(pid: parsed.pid, startedBy: parsed.milliseconds) {
            // The handler of a live process may still be writing it (it renames when done); a
            // live process that started after the crash has only reused the pid.
            report.recordsInProgress.append(name)
            return
        }
        do {
            if try store.isClaimed(name) {
                report.recordsAlreadyIngested.append(name)
                return
            }
        } catch {
            report.errors.append("\(name): \(error)")
            return
        }
        var events: [NewEvent] = []
        var endingRun: String?
        var unreadable = false
        do {
            let record = try CrashRecordReader.read(path: path)
            let appEnd = parseAppEnd(record.appEndJSON)
            let crashMs = record.process.map { $0.crashWallNanoseconds / 1_000_000 } ?? parsed?.milliseconds
            let marker = matchMarker(markers, runID: record.runID, pid: record.process?.pid ?? parsed?.pid, crashMs: crashMs)
            let runID = record.runID ?? marker?.runID ?? ""
            let identity = appEnd?.identity ?? marker?.identity ?? storedIdentity
            let renderer = EventRenderer(appName: record.appName ?? marker?.appName ?? appName,
                                         appVersion: record.appVersion ?? marker?.appVersion ?? appVersion, extraPresets: extraPresets)
            let base = renderer.base(superProperties: superProperties)
            let time = crashMs ?? nowMilliseconds()
            let crashed = AppEvents.appCrashed(runID: runID, time: time, identity: identity,
                                               properties: crashProperties(record, name: name))
            events.append(NewEvent(crashed, json: renderer.render(crashed, base: base)))
            if let appEnd {
                events.append(NewEvent(trackID: appEnd.trackID, event: AppEvents.appEnd, time: appEnd.time, priority: .crash, json: appEnd.json))
            } else {
                // No usable compensating $AppEnd: the same one, made from what the record knows.
                let end = AppEvents.appEnd(reason: .crash, durationSeconds: record.process?.uptimeSeconds ?? 0, runID: runID,
                                           time: time, identity: identity)
                events.append(NewEvent(end, json: renderer.render(end, base: base)))
            }
            if let marker {
                endingRun = marker.runID
                markers.removeAll { $0.runID == marker.runID }
            }
        } catch {
            unreadable = true
            let renderer = EventRenderer(appName: appName, appVersion: appVersion, extraPresets: extraPresets)
            let time = parsed?.milliseconds ?? nowMilliseconds()
            let draft = AppEvents.appCrashed(runID: "", time: time, identity: storedIdentity, properties: [
                "app_crashed_reason": .string("unreadable crash record \(name): \(error)"),
                "$crash_record": .string(name), "$crash_record_complete": .bool(false),
            ])
            events.append(NewEvent(draft, json: renderer.render(draft, base: renderer.base(superProperties: superProperties))))
        }
        do {
            if try !store.appendOnce(events, claim: name, endingRun: endingRun) {
                report.recordsAlreadyIngested.append(name)
            } else if unreadable {
                report.recordsUnreadable.append(name)
            } else {
                report.recordsIngested.append(name)
            }
            // The caller deletes the file now that its events are committed (by us or by someone
            // before us), unless another sink still needs it.
        } catch {
            report.errors.append("\(name): \(error)")
        }
    }

    struct AppEnd {
        var json: String
        var trackID: String
        var time: Int64
        var identity: EventIdentity
    }

    /// The record's compensating `$AppEnd`, if it is a JSON object with the fields it must have.
    static func parseAppEnd(_ text: String?) -> AppEnd? {
        guard let text, let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              object["event"] as? String == AppEvents.appEnd, let trackID = object["_track_id"] as? String, !trackID.isEmpty,
              let time = (object["time"] as? NSNumber)?.int64Value, object["properties"] is [String: Any]
        else { return nil }
        return AppEnd(json: text.trimmingCharacters(in: .whitespacesAndNewlines), trackID: trackID, time: time,
                      identity: EventIdentity(anonymousID: object["anonymous_id"] as? String, loginID: object["login_id"] as? String))
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
