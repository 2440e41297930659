// AppCrashedProperties.swift — what `AppCrashed` says about a crash record.
import SensorsEvents
import CrashReporter
import CrashRecordFormat
import CrashFrames

extension EventsSink {
    /// Frames quoted in `app_crashed_reason`.
    package static let reasonFrames = CrashSummary.frameLimit

    /// The properties of `AppCrashed`: `app_crashed_reason` (the crash's one summary,
    /// ``CrashSummary``: its headline, then its top frames) and structured `$crash_*` properties.
    ///
    /// How many crashes the event stands for (`$crash_count`: 1, or more when records of the same
    /// signature were folded into this one; `$crash_first_time`, ms, the earliest of them) and the
    /// crash loop it was part of (`$crash_loop`, `$crash_loop_length`: crashes at start in a row).
    ///
    /// The request the crashed thread was serving, when the record names one:
    /// `$crash_request_id`, `$crash_request_method`, `$crash_request_route` (the route's
    /// template, else the path), `$crash_trace_id`, `$crash_span_id` (when it carried a
    /// trace); never its query or key/values. `$crash_requests_in_flight`: how many requests
    /// were in flight, the crashed one included, when the program attaches `CrashContext`s.
    static func crashProperties(_ record: CrashRecord, name: String, repetition: CrashRepetition = CrashRepetition()) -> [String: JSONScalar] {
        var properties: [String: JSONScalar] = ["$crash_record": .string(name),
                                                "$crash_record_complete": .bool(record.isComplete),
                                                "$crash_count": .int(repetition.crashes),
                                                "$crash_loop": .bool(repetition.isCrashLoop)]
        if let first = repetition.firstMilliseconds { properties["$crash_first_time"] = .int(Int(first)) }
        if let length = repetition.consecutiveCrashesAtStart { properties["$crash_loop_length"] = .int(length) }
        if let signal = record.signal {
            if let address = signal.faultAddress {
                properties["$crash_fault_address"] = .string("0x\(String(address, radix: 16))")
            }
            properties["$crash_signal"] = .string(signal.name)
            properties["$crash_signal_number"] = .int(Int(signal.number))
            properties["$crash_signal_code"] = .string(signal.codeName)
        }
        if let message = record.fatalMessage, !message.isEmpty {
            properties["$crash_fatal_message"] = .string(message)
        }
        if let cxx = record.cxxException {
            properties["$crash_cxx_exception_type"] = cxx.type.map(JSONScalar.string)
            properties["$crash_cxx_exception_message"] = cxx.message.map(JSONScalar.string)
        }
        if let message = record.abortMessage, !message.isEmpty {
            properties["$crash_abort_message"] = .string(message)
        }
        // The frames as Swift's backtracer shows them: async callers after the first async
        // frame, told from the symbol tables of the images on this machine (ThreadFrames).
        var frames: [ThreadFrame] = []
        if let thread = record.crashedThread {
            properties["$crash_thread"] = .string(thread.name)
            frames = ThreadFrames.resolve(thread, isAsyncFunction: ImageSymbols(images: record.images).isAsyncFunction)
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
        if let resources = record.resources {
            // What the process had and was allowed (bytes as numbers; absent when unknown).
            let int = { (value: UInt64?) in value.flatMap { Int(exactly: $0) }.map(JSONScalar.int) }
            properties["$crash_memory_resident"] = int(resources.residentBytes)
            properties["$crash_memory_peak"] = int(resources.peakResidentBytes)
            properties["$crash_threads"] = resources.threads.map(JSONScalar.int)
            properties["$crash_open_descriptors"] = resources.openDescriptors.map(JSONScalar.int)
            properties["$crash_descriptor_limit"] = int(resources.descriptorSoftLimit.flatMap { $0 == .max ? nil : $0 })
            properties["$crash_cgroup_memory"] = int(resources.cgroupUsage)
            properties["$crash_cgroup_memory_limit"] = int(resources.cgroupLimit)
            if let finding = resources.findings.first { properties["$crash_resource_finding"] = .string(finding) }
        }
        if let requests = record.requests {
            properties["$crash_requests_in_flight"] = .int(requests.inFlight)
            if let request = requests.crashed {
                for (key, value) in [("$crash_request_id", request.requestID), ("$crash_request_method", request.method),
                                     ("$crash_request_route", request.target), ("$crash_trace_id", request.traceID ?? ""),
                                     ("$crash_span_id", request.spanID ?? "")] where !value.isEmpty {
                    properties[key] = .string(value)
                }
            }
        }
        let summary = CrashSummary(record: record, frames: frames, frameLimit: reasonFrames)
        properties["app_crashed_reason"] = .string(summary.lines.joined(separator: "\n"))
        return properties
    }
}
