// AppCrashedProperties.swift — what `AppCrashed` says about a crash record.
import CrashEvents
import CrashRecordFormat
import CrashSymbolication

extension EventsSink {
    /// Frames quoted in `app_crashed_reason`.
    public static let reasonFrames = 12

    /// The properties of `AppCrashed`: `app_crashed_reason` (signal, fatal message, top frames)
    /// and structured `$crash_*` properties.
    static func crashProperties(_ record: CrashRecord, name: String) -> [String: JSONScalar] {
        var properties: [String: JSONScalar] = ["$crash_record": .string(name),
                                                "$crash_record_complete": .bool(record.isComplete)]
        var lines: [String] = []
        if let signal = record.signal {
            var line = "\(signal.name) (\(signal.codeName): \(signal.codeDescription))"
            if let address = signal.faultAddress {
                line += " at 0x\(String(address, radix: 16))"
                properties["$crash_fault_address"] = .string("0x\(String(address, radix: 16))")
            }
            lines.append(line)
            properties["$crash_signal"] = .string(signal.name)
            properties["$crash_signal_number"] = .int(Int(signal.number))
            properties["$crash_signal_code"] = .string(signal.codeName)
        }
        if let message = record.fatalMessage, !message.isEmpty {
            lines.append(message)
            properties["$crash_fatal_message"] = .string(message)
        }
        if let message = record.abortMessage, !message.isEmpty {
            lines.append(message)
            properties["$crash_abort_message"] = .string(message)
        }
        if let thread = record.crashedThread {
            properties["$crash_thread"] = .string(thread.name)
            // The frames as Swift's backtracer shows them: async callers after the first async
            // frame, told from the symbol tables of the images on this machine (ThreadFrames).
            let frames = ThreadFrames.resolve(thread, isAsyncFunction: ImageSymbols(images: record.images).isAsyncFunction)
            for (index, frame) in frames.prefix(reasonFrames).enumerated() {
                var line = "#\(index) 0x\(String(frame.address, radix: 16))"
                if let label = record.offsetLabel(for: frame.address) { line += " " + label }
                if frame.kind == .asyncResumePoint { line += " [async]" }
                lines.append(line)
            }
            properties["$crash_frame_count"] = .int(thread.frames.count)
            properties["$crash_async_frame_count"] = .int(frames.filter { $0.kind == .asyncResumePoint }.count)
        }
        if let main = record.images.first(where: { $0.isMainExecutable }), !main.buildID.isEmpty {
            properties["$crash_build_id"] = .string(main.buildIDHex)
        }
        if let process = record.process {
            properties["$crash_uptime"] = .double((process.uptimeSeconds * 1000).rounded() / 1000)
            properties["$crash_pid"] = .int(Int(process.pid))
        }
        if !record.isComplete { lines.append("(record incomplete: \(record.completeness))") }
        properties["app_crashed_reason"] = .string(lines.isEmpty ? "crash (no details in record)" : lines.joined(separator: "\n"))
        return properties
    }
}
