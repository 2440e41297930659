// SensorsStore.swift — sensors-store: the Sensors analytics' tracking store at a glance, read-only
// (the analytics' own tool: crash-inspect reads crash records and links no SQLite).
import ArgumentParser
import CrashInspection
import CrashRecordFormat
import SensorsTracking

@main
struct SensorsStore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sensors-store",
        abstract: "The tracking store: pending, quarantined and evicted counts, the oldest pending event, the last upload.")

    @Argument(help: "The tracking store file (SQLite). Opened read-only; safe while a program writes to it.")
    var path: String

    @Option(help: "Quarantined events to show.")
    var quarantined = 10

    @Flag(help: "Print JSON for scripts instead of text.")
    var json = false

    func run() throws {
        let (summary, quarantine): (StoreSummary, [QuarantinedEvent])
        do { (summary, quarantine) = try TrackingStore.inspect(path: path, quarantineLimit: quarantined) } catch {
            throw RuntimeFailure(description: "\(path): \(error)")
        }
        let last = summary.lastUpload
        if json {
            print(Rendering.encode(StoreJSON(summary, quarantine: quarantine)))
            return
        }
        print("Tracking store \(summary.path)")
        let journal = summary.journalEvents > 0 ? "; \(summary.journalEvents) in the journal of quiet runs" : ""
        print("  pending      \(summary.pending) events (\(summary.pendingCrash) from crashes\(journal))")
        print("  quarantined  \(summary.quarantined)")
        let evicted = summary.counters.filter { $0.value > 0 }.sorted { $0.key < $1.key }
        print("  evicted      " + (evicted.isEmpty ? "none" : evicted.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))
        print("  run markers  \(summary.runMarkers)")
        if let oldest = summary.oldestPending {
            print("  oldest       \(oldest.event) at \(isoTime(oldest.time * 1_000_000)) (\(oldest.trackID))")
        }
        if let last {
            let outcome = last.status == 0 ? "network error" : "HTTP \(last.status)"
            print("  last upload  \(isoTime(last.time * 1_000_000)): \(outcome), \(last.events) events\(last.error.map { " — \($0)" } ?? "")")
        } else {
            print("  last upload  never (no endpoint configured, or nothing sent yet)")
        }
        for item in quarantine {
            print("  quarantined  \(item.event.event) \(item.event.trackID): HTTP \(item.status) \(item.reason)")
        }
    }
}

/// `sensors-store --json`.
struct StoreJSON: Encodable {
    var path: String
    var pending: Int
    var pendingCrash: Int
    /// Of `pending`, the events quiet runs appended to the journal beside the store (folded in at its next open).
    var journalEvents: Int
    var quarantined: Int
    var counters: [String: Int]
    var runMarkers: Int
    var anonymousID: Nullable<String>
    var oldestPending: Nullable<Oldest>
    var lastUpload: Nullable<Upload>
    var quarantine: [Quarantined]

    struct Oldest: Encodable {
        var trackID: String
        var event: String
        var time: String
    }

    struct Upload: Encodable {
        var time: String
        /// The HTTP status; 0 for a network error.
        var status: Int
        var events: Int
        var error: Nullable<String>
    }

    struct Quarantined: Encodable {
        var trackID: String
        var event: String
        var status: Int
        var reason: String
        var quarantinedAt: String
    }

    init(_ summary: StoreSummary, quarantine: [QuarantinedEvent]) {
        path = summary.path
        pending = summary.pending
        pendingCrash = summary.pendingCrash
        journalEvents = summary.journalEvents
        quarantined = summary.quarantined
        counters = summary.counters
        runMarkers = summary.runMarkers
        anonymousID = Nullable(summary.anonymousID)
        oldestPending = Nullable(summary.oldestPending.map { Oldest(trackID: $0.trackID, event: $0.event, time: isoTime($0.time * 1_000_000)) })
        lastUpload = Nullable(summary.lastUpload.map {
            Upload(time: isoTime($0.time * 1_000_000), status: $0.status, events: $0.events, error: Nullable($0.error))
        })
        self.quarantine = quarantine.map {
            Quarantined(trackID: $0.event.trackID, event: $0.event.event, status: $0.status, reason: $0.reason,
                        quarantinedAt: isoTime($0.quarantinedAt * 1_000_000))
        }
    }
}

