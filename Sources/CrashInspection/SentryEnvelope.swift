// SentryEnvelope.swift — a crash record as a Sentry envelope: event with exception, threads, debug images, and the raw record attached.
import CrashRecordFormat
import CrashSymbolication
import Foundation

public enum SentryEnvelope {
    /// Sentry's debug id for an ELF image: the first 16 bytes of the GNU build-id read as a
    /// little-endian GUID (the first three fields byte-swapped), as sentry-native and
    /// symbolic compute it. Shorter build-ids are zero-padded.
    public static func debugID(buildID: [UInt8]) -> String {
        var bytes = Array(buildID.prefix(16))
        bytes += Array(repeating: 0, count: 16 - bytes.count)
        bytes[0..<4].reverse()
        bytes[4..<6].reverse()
        bytes[6..<8].reverse()
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.map(String.init).joined(separator: "-")
    }

    /// The envelope bytes: header line, event item, attachment item (the record file as is).
    public static func make(_ inspection: Inspection, rawRecord: [UInt8], eventID: String = UUID().uuidString) -> [UInt8] {
        let id = eventID.replacingOccurrences(of: "-", with: "").lowercased()
        let event = self.event(inspection, eventID: id)
        let eventData = (try? JSONSerialization.data(withJSONObject: event, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        func line(_ object: [String: Any]) -> [UInt8] {
            Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)) + [0x0A]
        }
        let sentAt = isoTime(Int64(Date().timeIntervalSince1970 * 1e9))
        var out = line(["event_id": id, "sent_at": sentAt])
        out += line(["type": "event", "length": eventData.count])
        out += Array(eventData) + [0x0A]
        out += line([
            "type": "attachment", "length": rawRecord.count, "filename": (inspection.path as NSString).lastPathComponent,
            "content_type": "application/octet-stream", "attachment_type": "event.attachment",
        ])
        out += rawRecord + [0x0A]
        return out
    }

    /// The event payload (Sentry's native-crash event shape).
    public static func event(_ inspection: Inspection, eventID: String) -> [String: Any] {
        let record = inspection.record
        let signal = record.signal
        let crashedTID = inspection.crashed.map { Int($0.thread.tid) }
        var exception: [String: Any] = [
            "type": signal?.name ?? "unknown signal",
            "value": Explanation.whatHappened(record) + (record.fatalMessage.map { " — " + Explanation.firstLine($0) } ?? ""),
            "mechanism": [
                "type": "signalhandler", "handled": false, "synthetic": true,
                "meta": ["signal": [
                    "number": Int(signal?.number ?? 0), "code": Int(signal?.code ?? 0),
                    "name": signal?.name ?? "", "code_name": signal?.codeName ?? "",
                ] as [String: Any]],
            ] as [String: Any],
        ]
        if let crashed = inspection.crashed {
            exception["thread_id"] = Int(crashed.thread.tid)
            var stacktrace = stack(crashed)
            stacktrace["registers"] = Dictionary(record.registers.map { ($0.name, Explanation.hex($0.value)) }, uniquingKeysWith: { a, _ in a })
            exception["stacktrace"] = stacktrace
        }
        var event: [String: Any] = [
            "event_id": eventID,
            "platform": "native",
            "level": "fatal",
            "exception": ["values": [exception]],
            "threads": ["values": inspection.threads.map { thread -> [String: Any] in
                var value: [String: Any] = ["id": Int(thread.thread.tid), "name": thread.thread.name, "crashed": thread.thread.crashed,
                                            "current": Int(thread.thread.tid) == crashedTID]
                if !thread.thread.frames.isEmpty { value["stacktrace"] = stack(thread) }
                return value
            }],
            "debug_meta": ["images": record.images.map { image -> [String: Any] in
                [
                    "type": "elf", "code_file": image.path, "code_id": image.buildIDHex,
                    "debug_id": debugID(buildID: image.buildID), "image_addr": Explanation.hex(image.base),
                    "image_size": Int(clamping: image.size),
                ]
            }],
            "contexts": [
                "os": ["type": "os", "name": "Linux", "kernel_version": record.kernel ?? ""],
                "device": ["type": "device", "arch": record.architecture.description],
                "app": ["type": "app", "app_name": record.appName ?? "", "app_version": record.appVersion ?? ""],
            ],
            "tags": ["signal": signal?.name ?? "", "record_complete": record.isComplete ? "yes" : "no"],
            "breadcrumbs": ["values": record.breadcrumbs.map {
                ["timestamp": Double($0.wallNanoseconds) / 1e9, "level": sentryLevel($0.level), "message": $0.message] as [String: Any]
            }],
        ]
        if let process = record.process { event["timestamp"] = Double(process.crashWallNanoseconds) / 1e9 }
        if let name = record.appName { event["release"] = "\(name)@\(record.appVersion ?? "unknown")" }
        if let message = record.fatalMessage { event["extra"] = ["fatal_message": message] }
        return event
    }

    /// Sentry wants frames outermost first, one per (possibly inlined) function.
    static func stack(_ thread: InspectedThread) -> [String: Any] {
        let frames = thread.frames.reversed().flatMap { group in
            group.reversed().map { frame -> [String: Any] in
                var value: [String: Any] = ["instruction_addr": Explanation.hex(frame.address)]
                if let image = frame.image { value["package"] = image }
                if let symbol = frame.symbol { value["function"] = symbol }
                if let file = frame.file { value["filename"] = file }
                if let line = frame.line { value["lineno"] = line }
                if let column = frame.column { value["colno"] = column }
                value["in_app"] = !Inspection.isSystemImage(frame.image)
                return value
            }
        }
        return ["frames": frames]
    }

    static func sentryLevel(_ level: UInt32) -> String {
        switch level {
        case 0, 1: return "debug"
        case 2, 3: return "info"
        case 4: return "warning"
        case 5: return "error"
        default: return "fatal"
        }
    }
}
