// UnreadableRecordEnvelope.swift — the envelope of a crash whose record cannot be read.
//
// A record the reader rejects (cut short before its header, damaged, not a record at all) still
// says that a crash happened: Sentry gets a fatal error event saying so, the file attached as
// is (when there are bytes), and the same event id for the same file (a resend is deduplicated).
import HostFacts

/// The event of an unreadable record: what is known is that a crash happened, and why its
/// record says no more.
struct UnreadableRecordEvent: Encodable {
    var eventID: String
    var platform = "native"
    var level = "fatal"
    var timestamp: Double
    var exception: SentryEvent.Values<SentryEvent.Exception>
    var tags: [String: String]

    enum CodingKeys: String, CodingKey {
        case eventID = "event_id", platform, level, timestamp, exception, tags
    }
}

extension SentryEnvelope {
    /// A fatal event "unreadable crash record <file>: <reason>" at the time the file's name
    /// says, the bytes attached. Times are nanoseconds since the epoch.
    package static func unreadableRecord(fileName: String, rawRecord: [UInt8], reason: String, crashTime: Int64?, sentAt: Int64?) -> [UInt8] {
        let id = eventID(rawRecord: Array(fileName.utf8) + [0] + rawRecord)
        var mechanism = SentryEvent.Mechanism()
        mechanism.type = "crashcapture"
        let event = UnreadableRecordEvent(
            eventID: id, timestamp: Double(crashTime ?? sentAt ?? Clock.wallNanoseconds()) / 1e9,
            exception: .init(values: [SentryEvent.Exception(type: "UnreadableCrashRecord",
                                                            value: "unreadable crash record \(fileName): \(reason)",
                                                            mechanism: mechanism)]),
            tags: ["crash_record": fileName, "crash_record_complete": "false"])
        return envelope(eventID: id, sentAt: sentAt, event: json(event), attaching: rawRecord, fileName: fileName)
    }
}
