// UnreadableRecordEnvelope.swift — the envelope of a crash whose record cannot be read.
//
// A record the reader rejects (cut short before its header, damaged, not a record at all) still
// says that a crash happened: Sentry gets a fatal error event saying so, the file attached as
// is (when there are bytes), and the same event id for the same bytes (a resend is deduplicated).
import Foundation

extension SentryEnvelope {
    /// A fatal event "unreadable crash record <file>: <reason>", the bytes attached.
    package static func unreadableRecord(fileName: String, rawRecord: [UInt8], reason: String, sentAt: Date?) -> [UInt8] {
        let id = eventID(rawRecord: Array(fileName.utf8) + [0] + rawRecord)
        let event: [String: Any] = [
            "event_id": id,
            "platform": "native",
            "level": "fatal",
            "logger": "crashcapture",
            "timestamp": isoTime(sentAt ?? Date()),
            "exception": ["values": [[
                "type": "UnreadableCrashRecord",
                "value": "unreadable crash record \(fileName): \(reason)",
                "mechanism": ["type": "crashcapture", "handled": false, "synthetic": true],
            ]]],
            "tags": ["crash_record": fileName, "crash_record_complete": "false"],
        ]
        let eventData = json(event)
        var header: [String: Any] = ["event_id": id]
        if let sentAt { header["sent_at"] = isoTime(sentAt) }
        var out = json(header) + [0x0A]
        out += json(["type": "event", "length": eventData.count, "content_type": "application/json"]) + [0x0A]
        out += eventData + [0x0A]
        if !rawRecord.isEmpty {
            out += json([
                "type": "attachment", "length": rawRecord.count, "filename": fileName,
                "content_type": "application/octet-stream", "attachment_type": "event.attachment",
            ]) + [0x0A]
            out += rawRecord + [0x0A]
        }
        return out
    }
}
