// CrashLogRecord.swift — a crash record as one OpenTelemetry log record: event `app.crash`,
// severity FATAL, the crash time, the exception attributes of OpenTelemetry's semantic conventions
// (type, message, stack trace), the crashed thread, the images a backend symbolicates by, the
// request the crash killed (its trace and span, its method, route and path), and the resource
// the crash happened in. Formatting only: the sink that sends it is CrashReporter's OTLPSink.
package import CrashRecordFormat
package import CrashFrames
package import HostFacts

package enum CrashLogRecord {
    /// The record's event name (`LogRecord.event_name`).
    package static let eventName = "app.crash"
    /// The event names of a record of a live process: a hang (severity WARN), a snapshot (INFO).
    package static let hangEventName = "app.hang"
    /// A memory record's event: the memory cgroup near its limit (WARN), or the run killed for memory (FATAL).
    package static let memoryEventName = "app.memory"
    package static let snapshotEventName = "app.snapshot"
    /// `exception.stacktrace` holds at most this many frames…
    package static let maxStackFrames = 256
    /// …and at most this many bytes: a runaway recursion's stack would otherwise make the record
    /// larger than collectors accept (a line saying how many frames were left out ends it).
    package static let maxStacktraceBytes = 64 * 1024
    /// At most this many images in `crash.images`.
    package static let maxImages = 512

    /// Where the crash happened, as the resource says it: read on the machine that crashed (the
    /// next launch, the crash-time uploader).
    package struct Origin: Sendable, Equatable {
        /// `service.name` (`OTEL_SERVICE_NAME`); nil: the record's app name.
        package var serviceName: String?
        /// The app's name as configured: `service.name` for a record that names none.
        package var appName: String?
        /// `service.instance.id`: the installation's id.
        package var instanceID: String?
        /// `OTEL_RESOURCE_ATTRIBUTES`, in their order; they override what is detected, never
        /// `service.name` (as OpenTelemetry's SDKs have it).
        package var resourceAttributes: [(key: String, value: String)]
        package var hostName: String?
        package var host: HostContext?
        package var osRelease: OSRelease?

        package init(serviceName: String? = nil, appName: String? = nil, instanceID: String? = nil, resourceAttributes: [(key: String, value: String)] = [],
                     hostName: String? = nil, host: HostContext? = nil, osRelease: OSRelease? = nil) {
            self.serviceName = serviceName
            self.appName = appName
            self.instanceID = instanceID
            self.resourceAttributes = resourceAttributes
            self.hostName = hostName
            self.host = host
            self.osRelease = osRelease
        }

        package static func == (a: Origin, b: Origin) -> Bool {
            a.serviceName == b.serviceName && a.appName == b.appName && a.instanceID == b.instanceID && a.hostName == b.hostName && a.host == b.host
                && a.osRelease == b.osRelease && a.resourceAttributes.map(\.key) == b.resourceAttributes.map(\.key)
                && a.resourceAttributes.map(\.value) == b.resourceAttributes.map(\.value)
        }
    }

    /// The export request for `record` (file `fileName`): one resource, one scope, one record,
    /// observed at `observedNanoseconds` (ns since the epoch). `frames` gives a thread's frames
    /// with names where known (``ThreadFrames``); nil: resolved here, named from the symbol tables
    /// of the images on this machine whose build-id is the record's.
    package static func request(record: CrashRecord, fileName: String, observedNanoseconds: UInt64, origin: Origin,
                                minimised: RecordMinimisation = RecordMinimisation(), frames: ((CrashThread) -> [ThreadFrame])? = nil) -> OTLPLogsRequest {
        OTLPLogsRequest(resource: resource(record: record, origin: origin, minimised: minimised),
                        scopeName: CrashCaptureLibrary.name, scopeVersion: CrashCaptureLibrary.version,
                        records: [logRecord(record: record, fileName: fileName, observedNanoseconds: observedNanoseconds,
                                            minimised: minimised, frames: frames)])
    }

    /// The resource: the service, its instance, the SDK, the host, the OS, the container and pod.
    package static func resource(record: CrashRecord?, origin: Origin, minimised: RecordMinimisation) -> [OTLPAttribute] {
        var attributes: [OTLPAttribute] = []
        func set(_ key: String, _ value: String?) {
            guard let value, !value.isEmpty else { return }
            attributes.removeAll { $0.key == key }
            attributes.append(OTLPAttribute(key, .string(value)))
        }
        set("service.version", record?.appVersion)
        set("service.instance.id", origin.instanceID)
        set("telemetry.sdk.name", CrashCaptureLibrary.name.lowercased())
        set("telemetry.sdk.language", "swift")
        set("telemetry.sdk.version", CrashCaptureLibrary.version)
        set("host.arch", record.flatMap { hostArch($0.architecture) })
        set("os.type", "linux")
        if minimised.hostDetails {
            set("host.name", origin.hostName)
            let kernel = (record?.kernel ?? "").split(separator: " ").map(String.init)
            if kernel.count >= 2 { set("os.version", kernel[1]) }
            set("os.description", origin.osRelease?.prettyName)
            set("os.name", origin.osRelease?.id)
            set("container.id", origin.host?.containerID)
            set("k8s.namespace.name", origin.host?.kubernetesNamespace)
            set("k8s.pod.name", origin.host?.kubernetesPod)
        }
        for (key, value) in origin.resourceAttributes where key != "service.name" { set(key, value) }
        let configuredName = origin.resourceAttributes.last { $0.key == "service.name" }?.value
        set("service.name", origin.serviceName ?? configuredName ?? record?.appName ?? origin.appName ?? "unknown_service")
        return attributes
    }

    /// A record the reader rejected still says that a crash happened: a log record of the same
    /// event and severity whose `exception.type` says the record is unreadable and why, at the
    /// crash time its file name holds.
    package static func unreadable(fileName: String, reason: String, crashNanoseconds: UInt64, observedNanoseconds: UInt64,
                                   origin: Origin, minimised: RecordMinimisation = RecordMinimisation()) -> OTLPLogsRequest {
        var log = OTLPLogRecord(timeUnixNano: crashNanoseconds, observedTimeUnixNano: observedNanoseconds)
        log.eventName = eventName
        log.body = .string("unreadable crash record: " + reason)
        log.attributes = [OTLPAttribute("exception.type", .string("unreadable crash record")),
                          OTLPAttribute("exception.message", .string(reason)),
                          OTLPAttribute("crash.record", .string(fileName)),
                          OTLPAttribute("crash.complete", .bool(false))]
        return OTLPLogsRequest(resource: resource(record: nil, origin: origin, minimised: minimised),
                               scopeName: CrashCaptureLibrary.name, scopeVersion: CrashCaptureLibrary.version, records: [log])
    }

    /// The log record alone (see ``request(record:fileName:observedNanoseconds:origin:minimised:frames:)``).
    package static func logRecord(record: CrashRecord, fileName: String, observedNanoseconds: UInt64,
                                  minimised: RecordMinimisation = RecordMinimisation(), frames: ((CrashThread) -> [ThreadFrame])? = nil) -> OTLPLogRecord {
        let redaction = minimised.redaction
        let local = ImageSymbols(images: record.images)
        let framesOf = frames ?? { thread in ThreadFrames.resolve(thread, isAsyncFunction: local.isAsyncFunction) }
        let crashed = record.focusThread(frames: framesOf)
        let crashedFrames = crashed.map(framesOf) ?? []
        let summary = CrashSummary(record: record, frames: crashedFrames)
        let fullPaths = redaction.fullPaths
        let text = { (words: String) -> String in fullPaths ? words : PathSanitizer.sanitize(words) }
        let path = { (file: String) -> String in
            fullPaths ? file : String(decoding: PathSanitizer.sanitizePath(Array(file.utf8)), as: UTF8.self)
        }

        var log = OTLPLogRecord(timeUnixNano: record.process.map { UInt64(clamping: $0.crashWallNanoseconds) } ?? 0,
                                observedTimeUnixNano: observedNanoseconds)
        log.eventName = eventName
        if let live = record.event {
            // Not a crash: not FATAL — unless the process was killed while hung.
            log.eventName = live.kind == .hang ? hangEventName : live.kind == .memory ? memoryEventName : snapshotEventName
            log.severityNumber = live.fate != nil ? 21 : live.kind == .snapshot ? 9 : 13
            log.severityText = live.fate != nil ? "FATAL" : live.kind == .snapshot ? "INFO" : "WARN"
        }
        log.body = .string(text(summary.headline))
        var attributes: [OTLPAttribute] = []
        func add(_ key: String, _ value: OTLPValue?) { if let value { attributes.append(OTLPAttribute(key, value)) } }
        func add(_ key: String, _ value: String?) { if let value, !value.isEmpty { add(key, .string(value)) } }

        if let heap = record.guardedHeap {
            // A memory error the guarded heap caught: AddressSanitizer's name, then what it did.
            add("exception.type", heap.kind.name)
            add("exception.message", heap.detail + " (" + summary.detail + ")")
            add("crash.guarded_heap.error", heap.kind.name)
            add("crash.guarded_heap.access_address", "0x" + String(heap.accessAddress, radix: 16))
            if let allocation = heap.allocation {
                add("crash.guarded_heap.allocation_size", .int(Int64(clamping: allocation.size)))
                add("crash.guarded_heap.offset", .int(heap.offset ?? 0))
            }
            // Each stack innermost first, named from the binaries' symbol tables where they are here.
            let stack = { (frames: [UInt64]) -> OTLPValue in
                .array(frames.map { address in .string((minimised.functionNames ? local.demangledName(at: address &- 1) : nil) ?? record.offsetLabel(for: address) ?? "0x" + String(address, radix: 16)) })
            }
            add("crash.guarded_heap.allocation_thread", .int(Int64(heap.allocationThread)))
            add("crash.guarded_heap.allocation_stack", stack(heap.allocationFrames))
            if let freer = heap.freeThread {
                add("crash.guarded_heap.free_thread", .int(Int64(freer)))
                add("crash.guarded_heap.free_stack", stack(heap.freeFrames))
            }
        } else if let cxx = record.cxxException, let type = cxx.type {
            // An uncaught C++ exception: its type and what(), as an OpenTelemetry C++ SDK records one.
            add("exception.type", type)
            add("exception.message", text(cxx.message ?? cxx.summary))
        } else {
            add("exception.type", summary.title)
            // The reason (code, fault address, sender), then the Swift runtime's fatal message or
            // the C library's abort message, whole: the first line alone may not say enough.
            let lastWords = [record.fatalMessage, record.abortMessage].lazy.compactMap { $0 }.first { !$0.allSatisfy(\.isWhitespace) }
            add("exception.message", text(lastWords.map { summary.detail + " — " + trimmed($0) } ?? summary.detail))
        }
        // What the runtime warned of earlier in the run: never part of exception.message.
        let warnings = record.runtimeWarnings
        if !warnings.isEmpty {
            add("swift.runtime_warnings", .array(warnings.map { .string(text($0.line)) }))
        }
        if let crashed {
            add("exception.stacktrace", stacktrace(crashed, frames: crashedFrames, record: record, symbols: frames == nil && minimised.functionNames ? local : nil, path: path))
            add("thread.id", .int(Int64(crashed.tid)))
            add("thread.name", crashed.name)
        }
        if let signal = record.signal {
            add("signal.number", .int(Int64(signal.number)))
            add("signal.code", signal.codeName)
        }
        if let process = record.process { add("process.pid", .int(Int64(process.pid))) }
        add("process.executable.path", record.executablePath.map(path))
        // What the process had and was allowed: the semantic conventions' metric names for the
        // process's and system's figures, `crash.resources.*` for the rest.
        if let resources = record.resources {
            let int = { (value: UInt64?) in value.map { OTLPValue.int(Int64(clamping: $0)) } }
            add("process.memory.usage", int(resources.residentBytes))
            add("process.thread.count", resources.threads.map { .int(Int64($0)) })
            add("process.open_file_descriptor.count", resources.openDescriptors.map { .int(Int64($0)) })
            add("crash.resources.open_file_descriptor.limit", int(resources.descriptorSoftLimit.flatMap { $0 == .max ? nil : $0 }))
            add("crash.resources.memory.peak", int(resources.peakResidentBytes))
            add("crash.resources.cgroup.memory.usage", int(resources.cgroupUsage))
            add("crash.resources.cgroup.memory.limit", int(resources.cgroupLimit))
            add("crash.resources.cgroup.oom_kills", int(resources.cgroupEventCounts["oom_kill"]))
            if minimised.hostDetails {
                add("system.cpu.logical.count", resources.cpuCount.map { .int(Int64($0)) })
                add("system.memory.available", int(resources.machineMemoryAvailable))
                add("system.memory.limit", int(resources.machineMemoryTotal))
            }
            if !resources.findings.isEmpty { add("crash.resources.findings", .array(resources.findings.map { .string($0) })) }
        }
        add("crash.record", fileName)
        add("crash.run_id", record.runID)
        add("crash.complete", .bool(record.isComplete))
        if let live = record.event {
            add("hang.detector", live.detector.name)
            add("hang.threshold_ms", .int(Int64(clamping: live.thresholdMilliseconds)))
            add("hang.observed_ms", .int(Int64(clamping: live.observedMilliseconds)))
            add("hang.threads_stopped_us", .int(Int64(live.stoppedMicroseconds)))
            if let states = live.threadStates {
                add("hang.stall", states.verdict)
                // What the threads used since the stall began, and over how long.
                if let span = live.stallCPUSpanMilliseconds {
                    add("hang.stall_cpu_span_ms", .int(Int64(span)))
                    add("hang.stall_cpu_ms", .int(Int64(clamping: states.threads.reduce(UInt64(0)) { $0 + UInt64($1.stallCPUMilliseconds) })))
                }
            }
            if let samples = live.stackSamples {
                // A computing hang: where its sampled threads most often were.
                let hottest = samples.hottest(in: record) { local.demangledName(at: $0) }
                add("hang.hot_frames", .array(hottest.prefix(5).map { .string("\($0.place) (\($0.samples) of \(samples.samples.count) samples)") }))
            }
            if let locks = live.lockWaits, !locks.waits.isEmpty {
                // Each blocked thread, the lock it waits on and its holder; a deadlock's threads first.
                add("hang.lock_waits", .array(locks.waits.prefix(64).map { wait in
                    var fields = [OTLPAttribute("thread.id", .int(Int64(wait.tid))), OTLPAttribute("kind", .string(wait.kind.name)),
                                  OTLPAttribute("address", .string("0x" + String(wait.lockAddress, radix: 16)))]
                    if let holder = wait.holder { fields.append(OTLPAttribute("holder.thread.id", .int(Int64(holder)))) }
                    if wait.holderGone { fields.append(OTLPAttribute("holder.ended", .bool(true))) }
                    return .map(fields)
                }))
                if locks.cycleLength > 0 { add("hang.deadlock.thread_ids", .array(locks.cycle.map { .int(Int64($0.tid)) })) }
            }
            if live.kind == .hang { add("hang.state", live.fate == nil ? "open" : live.fate!.oom ? "killed_oom" : "killed") }
            if let after = live.fate?.lastSeenAfterMilliseconds { add("hang.killed_after_ms", .int(after)) }
            if let memory = live.memory {
                add("memory.state", live.fate == nil ? "near_limit" : "killed")
                add("memory.usage_bytes", .int(Int64(clamping: memory.usage)))
                add("memory.limit_bytes", .int(Int64(clamping: memory.limit)))
                add("memory.growth_bytes", .int(memory.growth))
                add("memory.growth_seconds", .int(Int64(memory.growthSeconds)))
            }
        }
        // The images, for a backend to symbolicate the addresses in the stack trace by.
        let images = record.images.prefix(maxImages).map { image -> OTLPValue in
            var fields = [OTLPAttribute("path", .string(path(image.path))),
                          OTLPAttribute("load_address", .string("0x" + String(image.base, radix: 16))),
                          OTLPAttribute("size", .int(Int64(clamping: image.size)))]
            if !image.buildID.isEmpty { fields.append(OTLPAttribute("build_id", .string(image.buildIDHex))) }
            if image.isMainExecutable { fields.append(OTLPAttribute("main", .bool(true))) }
            return .map(fields)
        }
        if !images.isEmpty { add("crash.images", .array(Array(images))) }
        if redaction.breadcrumbs, !record.breadcrumbs.isEmpty {
            add("crash.breadcrumbs", .array(record.breadcrumbs.map {
                .string(CrashRecordFormat.isoTime($0.wallNanoseconds) + " " + $0.level.name + " " + text($0.message))
            }))
        }
        if let scope = record.scope {
            // The app's scope as it was at the crash: its tags and named contexts as maps (their
            // names are the app's, so they stay apart from the conventions' attributes), its user
            // as the conventions' `user.*` and `client.address` only where identity may leave.
            func map(_ pairs: [String: String]) -> OTLPValue { .map(pairs.sorted { $0.key < $1.key }.map { OTLPAttribute($0.key, .string($0.value)) }) }
            if !scope.tags.isEmpty { add("crash.tags", map(scope.tags)) }
            if !scope.contexts.isEmpty {
                add("crash.contexts", .map(scope.contexts.sorted { $0.key < $1.key }.map { OTLPAttribute($0.key, map($0.value)) }))
            }
            if redaction.identity, let user = scope.user {
                add("user.id", user.id)
                add("user.name", user.username)
                add("user.email", user.email)
                add("client.address", user.ipAddress)
            }
        }
        describeRequest(of: record, redaction: redaction, in: &log, attributes: &attributes)
        log.attributes = attributes
        return log
    }

    /// The crashed request (only when the record names one): its trace and span on the record,
    /// its method, route, path and id as attributes; the query and its key/values when the
    /// policy lets them leave.
    static func describeRequest(of record: CrashRecord, redaction: RecordRedaction, in log: inout OTLPLogRecord, attributes: inout [OTLPAttribute]) {
        guard let crashed = record.requests?.crashed else { return }
        if let traceID = crashed.traceID.flatMap({ hexBytes($0, count: 16) }), let spanID = crashed.spanID.flatMap({ hexBytes($0, count: 8) }) {
            log.traceID = traceID
            log.spanID = spanID
            log.flags = crashed.sampled ? 1 : 0
        }
        func add(_ key: String, _ value: String) { if !value.isEmpty { attributes.append(OTLPAttribute(key, .string(value))) } }
        add("crash.request.id", crashed.requestID)
        if httpMethods.contains(crashed.method.uppercased()) {
            add("http.request.method", crashed.method.uppercased())
        } else {
            add("crash.request.kind", crashed.method)
        }
        add("http.route", crashed.route)
        add("url.path", String(crashed.path.prefix { $0 != "?" && $0 != "#" }))
        if redaction.requestQuery { add("url.query", crashed.query) }
        if redaction.requestAttributes, !crashed.attributes.isEmpty {
            attributes.append(OTLPAttribute("crash.request.attributes", .map(crashed.attributes.map { OTLPAttribute($0.key, .string($0.value)) })))
        }
    }

    /// HTTP's methods (RFC 9110's and PATCH).
    static let httpMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]

    /// The crashed thread's stack as text, innermost first: `#3 0x00005581d5a8c1f0 level3() (crash-harness+0x1c1f0) [async]`.
    /// Names from `frames`' symbols, else from `symbols` (demangled); at most ``maxStackFrames``
    /// frames and ``maxStacktraceBytes`` bytes.
    static func stacktrace(_ thread: CrashThread, frames: [ThreadFrame], record: CrashRecord, symbols: ImageSymbols?, path: (String) -> String) -> String {
        var text = "Thread \(thread.tid)" + (thread.name.isEmpty ? "" : " \"\(thread.name)\"") + " crashed:\n"
        for (index, frame) in frames.enumerated() {
            let digits = String(frame.address, radix: 16)
            var line = "#\(index) 0x" + String(repeating: "0", count: max(0, 16 - digits.count)) + digits
            if let name = frame.symbols.last(where: { !$0.inlined })?.symbol ?? symbols?.demangledName(at: frame.lookupAddress) {
                line += " " + name
            }
            if let label = record.offsetLabel(for: frame.address) { line += " (" + label + ")" }
            line += frame.asyncMarker + "\n"
            guard index < maxStackFrames, text.utf8.count + line.utf8.count + 64 <= maxStacktraceBytes else {
                text += "… \(frames.count - index) more frames not shown\n"
                return text
            }
            text += line
        }
        if thread.omittedFrames > 0 { text += "… \(thread.omittedFrames) frames not recorded\n" }
        return text
    }

    /// OpenTelemetry's `host.arch` values.
    static func hostArch(_ architecture: CrashRecord.Architecture) -> String? {
        switch architecture {
        case .x86_64: return "amd64"
        case .aarch64: return "arm64"
        case .unknown: return nil
        }
    }

    /// `text` without the newlines and spaces that end it.
    static func trimmed(_ text: String) -> String {
        String(text.reversed().drop { $0.isWhitespace }.reversed())
    }

    /// The bytes of exactly `count * 2` lowercase hex digits, not all zero (W3C trace-context's ids).
    static func hexBytes(_ text: String, count: Int) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == count * 2 else { return nil }
        var bytes: [UInt8] = []
        for pair in stride(from: 0, to: digits.count, by: 2) {
            guard let high = hexDigit(digits[pair]), let low = hexDigit(digits[pair + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes.contains { $0 != 0 } ? bytes : nil
    }

    private static func hexDigit(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }
}
