// SentryEnvelope.swift — a crash record as a Sentry envelope: the event (exception, threads, debug
// images, contexts) and the record file attached as is. The one builder crash-inspect's export and
// the uploader share.
package import CrashRecordFormat
package import HostFacts
package import CrashFrames

package enum SentryEnvelope {
    /// Sentry's debug id for an ELF image: the first 16 bytes of the GNU build-id read as a
    /// little-endian GUID (the first three fields byte-swapped), as sentry-native and
    /// symbolic compute it. Shorter build-ids are zero-padded.
    package static func debugID(buildID: [UInt8]) -> String {
        var bytes = Array(buildID.prefix(16))
        bytes += Array(repeating: 0, count: 16 - bytes.count)
        bytes[0..<4].reverse()
        bytes[4..<6].reverse()
        bytes[6..<8].reverse()
        let hex = hexString(bytes)
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.map(String.init).joined(separator: "-")
    }

    /// The event id of a record: the first 32 hex digits of the SHA-256 of its bytes. The same
    /// record always gets the same id, so a record sent again (the process died between the
    /// send and its acknowledgement) is deduplicated by Sentry instead of counted twice.
    package static func eventID(rawRecord: [UInt8]) -> String {
        String(hexString(SHA256.digest(rawRecord)).prefix(32))
    }

    /// The envelope bytes: header line (`event_id`, `sent_at`, `trace`), the event item, and an
    /// attachment item holding `rawRecord` as is, named `fileName`.
    /// - Parameters:
    ///   - eventID: 32 hex digits (dashes are removed), normally ``eventID(rawRecord:)``.
    ///   - sentAt: when the envelope is sent, in nanoseconds since the epoch: the caller sets it
    ///     at send time. Relay corrects the event's clock by the difference between `sent_at` and
    ///     when it receives the envelope, so an envelope written now and sent later
    ///     (`crash-inspect export`) passes nil: no `sent_at`, no correction.
    ///   - frames: each thread's frames as Swift's backtracer shows them, with names where known
    ///     locally; see ``event(record:eventID:frames:osRelease:readImageFiles:)``.
    ///   - osRelease: the distribution of the machine that crashed, when the caller knows it
    ///     (the uploader, at the next launch on that machine: ``OSRelease/current(paths:)``).
    ///   - readImageFiles: whether images without a build-id get the `.text` fallback id read
    ///     from their files on disk.
    ///   - publicKey: the DSN's public key, which the header's `trace` (the dynamic sampling
    ///     context) needs; nil (`crash-inspect export`: no DSN known) writes no `trace` header,
    ///     the event's `contexts.trace` still places the crash in its trace.
    package static func make(
        record: CrashRecord, rawRecord: [UInt8], fileName: String, eventID: String, sentAt: Int64?,
        frames: ((CrashThread) -> [ThreadFrame])? = nil, osRelease: OSRelease? = nil, readImageFiles: Bool = true,
        repetition: CrashRepetition = CrashRepetition(), minimised: RecordMinimisation? = nil, publicKey: String? = nil
    ) -> [UInt8] {
        // Without a hook there is nothing to refuse.
        (try? outgoing(record: record, rawRecord: rawRecord, fileName: fileName, eventID: eventID, sentAt: sentAt, frames: frames,
                       osRelease: osRelease, readImageFiles: readImageFiles, repetition: repetition, minimised: minimised,
                       publicKey: publicKey, beforeSend: nil).get()) ?? []
    }

    /// ``make(record:rawRecord:fileName:eventID:sentAt:frames:osRelease:readImageFiles:repetition:minimised:publicKey:)``
    /// as a sink sends it: `minimised` says what the event and the attached record keep (nil:
    /// everything, as `crash-inspect export` writes it), then the app's `beforeSend` hook sees the
    /// event's JSON and may change or drop it. The header's `trace` is made from the event as
    /// sent (the hook's), as sentry-python makes it after `before_send`: its `trace_id` is always
    /// the event's `contexts.trace.trace_id`.
    package static func outgoing(
        record: CrashRecord, rawRecord: [UInt8], fileName: String, eventID: String, sentAt: Int64?,
        frames: ((CrashThread) -> [ThreadFrame])? = nil, osRelease: OSRelease? = nil, readImageFiles: Bool = true,
        repetition: CrashRepetition = CrashRepetition(), minimised: RecordMinimisation?, publicKey: String? = nil,
        facts: SentryRunFacts? = nil, session: SentrySession? = nil,
        beforeSend: (@Sendable (String) -> String?)?, minidump: ((CrashRecord) -> [UInt8]?)? = nil
    ) -> Result<[UInt8], Refusal> {
        let id = eventID.filter { $0 != "-" }.lowercased()
        var event = self.event(record: record, eventID: id, frames: frames, osRelease: osRelease, readImageFiles: readImageFiles,
                               functionNames: minimised?.functionNames ?? true)
        say(repetition, in: &event)
        var attachment = rawRecord
        if let minimised {
            minimised.apply(to: &event)
            // Keeping everything attaches the file as it is (a torn tail included).
            if !minimised.redaction.keepsEverything { attachment = minimised.redaction.apply(to: rawRecord) }
        }
        // The run's release, environment, dist and host: before the app's hook, which sees it all.
        facts?.apply(to: &event)
        var eventJSON = json(event)
        if let beforeSend {
            switch hook(beforeSend, eventJSON, eventID: id) {
            case .success(let changed): eventJSON = changed
            case .failure(let refusal): return .failure(refusal)
            }
        }
        let trace = publicKey.flatMap { traceHeader(event: eventJSON, publicKey: $0, record: record) }
        var out = envelope(eventID: id, sentAt: sentAt, event: eventJSON, attaching: attachment, fileName: fileName, trace: trace)
        // The minidump is made from the record as attached (minimised as it is), so that it
        // says no more than the attachment; none when that copy does not read back.
        if let minidump {
            let attached = attachment == rawRecord ? record : try? CrashRecordReader.parse(attachment)
            if let bytes = attached.flatMap(minidump), !bytes.isEmpty { out += minidumpItem(bytes, fileName: fileName) }
        }
        // The crashed run's session goes with its crash: one request, so never one without the other.
        if let session { out += sessionItem(session) }
        return .success(out)
    }

    /// Why no envelope was made: the app's `before_send` hook dropped the event, or gave back
    /// something that is not an event.
    package enum Refusal: Error, Equatable, CustomStringConvertible {
        case dropped
        case notAnEvent(String)

        package var description: String {
            switch self {
            case .dropped: return "dropped by the app's Sentry beforeSend hook"
            case .notAnEvent(let why): return "the Sentry beforeSend hook returned no event: \(why)"
            }
        }
    }

    /// The app's hook on the event's JSON text, as Sentry's `before_send`: nil drops it; what it
    /// returns must be one JSON object with the same `event_id` (the id a resend is deduplicated by).
    static func hook(_ beforeSend: @Sendable (String) -> String?, _ event: [UInt8], eventID: String) -> Result<[UInt8], Refusal> {
        guard let changed = beforeSend(String(decoding: event, as: UTF8.self)) else { return .failure(.dropped) }
        let bytes = Array(changed.utf8)
        guard let fields = EventFields(json: bytes) else { return .failure(.notAnEvent("not a JSON object")) }
        guard fields.eventID == eventID else { return .failure(.notAnEvent("its event_id changed")) }
        return .success(bytes)
    }

    /// What is read back of an event's JSON after the app's hook had it: its id and what the
    /// envelope header's `trace` takes from it. A field missing or of another type is nil.
    struct EventFields {
        var eventID: String?
        var traceID: String?
        var release: String?
        var environment: String?

        /// nil when `json` is not one JSON object.
        init?(json: [UInt8]) {
            guard let object = JSONValue.parse(json), object.isObject else { return nil }
            eventID = object["event_id"]?.string
            release = object["release"]?.string
            environment = object["environment"]?.string
            traceID = object["contexts"]?["trace"]?["trace_id"]?.string
        }
    }

    /// The envelope's lines: its header, the event item, and the record attached as is (no
    /// attachment item when there are no bytes).
    static func envelope(eventID: String, sentAt: Int64?, event: [UInt8], attaching bytes: [UInt8], fileName: String,
                         trace: SentryTraceHeader? = nil) -> [UInt8] {
        var out = json(SentryEnvelopeHeader(eventID: eventID, sentAt: sentAt.map(isoTime), trace: trace)) + [0x0A]
        out += json(SentryItemHeader(type: "event", length: event.count, contentType: "application/json")) + [0x0A]
        out += event + [0x0A]
        guard !bytes.isEmpty else { return out }
        out += json(SentryItemHeader(type: "attachment", length: bytes.count, contentType: "application/octet-stream",
                                     filename: fileName, attachmentType: "event.attachment")) + [0x0A]
        out += bytes + [0x0A]
        return out
    }

    /// An envelope item holding a minidump of the crash (`attachment_type` `event.minidump`): Sentry
    /// stackwalks and symbolicates it beside the event, as it does sentry-native's.
    static func minidumpItem(_ bytes: [UInt8], fileName: String) -> [UInt8] {
        let name = (fileName.hasSuffix(".ccrec") ? String(fileName.dropLast(6)) : fileName) + ".dmp"
        return json(SentryItemHeader(type: "attachment", length: bytes.count, contentType: "application/x-dmp",
                                     filename: name, attachmentType: "event.minidump")) + [0x0A] + bytes + [0x0A]
    }

    /// Sentry's lock reasons for thread `tid`: the lock it waits on (`blocked`, naming the holder)
    /// and the locks other threads wait on that it holds (`locked`).
    static func lockReasons(of tid: Int32, in locks: LockWaits) -> [String: SentryEvent.LockReason]? {
        func className(_ wait: LockWait) -> String {
            switch wait.kind {
            case .mutex, .robustMutex, .priorityInheritanceMutex: "pthread_mutex_t"
            case .rwlockWriter, .rwlockReaders: "pthread_rwlock_t"
            case .priorityInheritanceFutex: "Synchronization.Mutex"
            case .futex, .unknown: "futex"
            }
        }
        var reasons: [String: SentryEvent.LockReason] = [:]
        for wait in locks.waits where wait.holder == tid && !wait.holderGone {
            reasons[hex(wait.lockAddress)] = .init(type: 1, address: hex(wait.lockAddress), className: className(wait))
        }
        if let mine = locks.of(tid) {
            reasons[hex(mine.lockAddress)] = .init(type: mine.holder == nil ? 2 : 8, address: hex(mine.lockAddress), className: className(mine),
                                                   threadID: mine.holder.map(Int.init))
        }
        return reasons.isEmpty ? nil : reasons
    }

    /// How many crashes the event stands for (`extra.crash_count`, `extra.first_crash`: records
    /// folded into this one when the record directory was over its bounds), and the crash loop
    /// it was part of (`tags.crash_loop`, `extra.crash_loop_length`). Nothing for a lone crash.
    package static func say(_ repetition: CrashRepetition, in event: inout SentryEvent) {
        var extra = event.extra ?? [:]
        if repetition.crashes > 1 {
            extra["crash_count"] = .text(String(repetition.crashes))
            if let first = repetition.firstMilliseconds { extra["first_crash"] = .text(CrashRecordFormat.isoTime(first * 1_000_000)) }
        }
        if let length = repetition.consecutiveCrashesAtStart, length > 0 { extra["crash_loop_length"] = .text(String(length)) }
        if repetition.isCrashLoop { event.tags["crash_loop"] = "yes" }
        event.extra = extra.isEmpty ? nil : extra
    }

    /// The event payload (Sentry's native-crash event shape, as sentry-native's inproc backend
    /// sends it): one stack frame per frame Swift's backtracer would show, outermost caller
    /// first. A thread without async frames is sent as recorded: frame 0 of a thread unwound
    /// from the signal context is the exact pc and the others are return addresses, which
    /// `instruction_addr_adjustment: all_but_first` tells Sentry's symbolicator ("all" for a
    /// thread whose frame 0 is a return address too). A thread with async frames mixes return
    /// addresses with resume points (function entries that must not be adjusted), which no
    /// stack-wide setting can say: its addresses are adjusted here, per frame kind, the way
    /// Sentry would (a return address to its call instruction: less 1 on x86-64, less 4 on
    /// arm64), and sent with `instruction_addr_adjustment: none`.
    ///
    /// `frames` gives each thread's frames (``ThreadFrames``), with their locally known names:
    /// only the function an address physically lies in (the last, non-inlined entry) is sent, as
    /// `function`, like sentry-native's `symbolize_stacktraces`; no file, line or inlined frames,
    /// which Sentry's own symbolication adds (and replaces `function` with) when it has the debug
    /// file. Without it the frames are resolved and named here from the symbol tables of the
    /// images on this machine (``ImageSymbols``: `function` in the short form Swift's backtracer
    /// prints, `raw_function` the full name, `symbol` the mangled one, `symbol_addr`), as
    /// sentry-native's `symbolize_stacktraces` names them and Sentry's own symbolication later
    /// replaces them — unless `readImageFiles` is false: then no file is read, the frames are
    /// the physical ones and carry no names. Every frame says whether it is the program's own
    /// code (`in_app`, ``FrameOrigin``).
    ///
    /// The request the crashed thread was serving and the others in flight: see
    /// ``describeRequests(of:in:)``.
    package static func event(
        record: CrashRecord, eventID: String, frames: ((CrashThread) -> [ThreadFrame])? = nil,
        osRelease: OSRelease? = nil, readImageFiles: Bool = true, functionNames: Bool = true
    ) -> SentryEvent {
        let local = ImageSymbols(images: record.images)
        // Function names from the images' own symbol tables for frames that have none.
        let names = readImageFiles && functionNames ? local : nil
        let framesOf = frames ?? { thread in
            ThreadFrames.resolve(thread) { readImageFiles ? local.isAsyncFunction($0) : $0.map { _ in false } }.map { frame in
                guard let names else { return frame }
                var named = frame
                named.symbols = [names.named(frame.address, lookup: callAddress(frame, architecture: record.architecture), in: record)]
                return named
            }
        }
        let signal = record.signal
        // A hang's or snapshot's thread is the one it is about (the crashed thread of a crash).
        let crashed = record.focusThread(frames: framesOf)
        let crashTime = record.process.map(\.crashWallNanoseconds)
        var mechanism = SentryEvent.Mechanism()
        if let signal {
            mechanism.meta = .init(signal: .init(number: Int(signal.number), code: Int(signal.code),
                                                 name: signal.name.isEmpty ? nil : signal.name,
                                                 codeName: signal.codeName.isEmpty ? nil : signal.codeName))
        }
        // The crash's one summary: Sentry shows "type: value" as its headline.
        let crashedFrames = crashed.map(framesOf) ?? []
        let summary = CrashSummary(record: record, frames: crashedFrames)
        if let live = record.event {
            // Not a crash: Sentry's SDKs send an app hang with a mechanism of its own ("AppHang"),
            // handled, so that Sentry does not count it as a crash; grouped by the frames
            // (synthetic), not by the text that says how late it was.
            mechanism.type = switch live.kind {
            case .hang: "AppHang"
            case .memory: live.fate != nil ? "out_of_memory" : "memory"
            default: "snapshot"
            }
            // A hang the process was killed in is fatal, as sentry-cocoa reports a fatal app hang:
            // not handled, level fatal; the same mechanism and frames, so it groups with the live one.
            mechanism.handled = live.fate == nil
        }
        var exception = SentryEvent.Exception(type: summary.title, value: summary.value, mechanism: mechanism)
        if let cxx = record.cxxException, let type = cxx.type {
            // An uncaught C++ exception, as Sentry's SDKs report one: its type and what(), mechanism
            // `cpp_exception`, not synthetic (Sentry groups by the type and the frames, not the text).
            exception.type = type
            exception.value = cxx.message ?? cxx.summary
            exception.mechanism.type = "cpp_exception"
            exception.mechanism.synthetic = false
        }
        if let heap = record.guardedHeap {
            // A memory error the guarded heap caught: named as AddressSanitizer names it, the
            // signal (or the abort) its consequence (in the mechanism's meta).
            exception.type = heap.kind.name
            exception.value = heap.detail
            exception.mechanism.type = "guarded_heap"
            exception.mechanism.synthetic = false
        }
        if let crashed {
            exception.threadID = Int(crashed.tid)
            var stacktrace = self.stacktrace(crashed, frames: crashedFrames, record: record)
            if !record.registers.isEmpty {
                stacktrace.registers = Dictionary(record.registers.map { ($0.name, hex($0.value)) }, uniquingKeysWith: { a, _ in a })
            }
            exception.stacktrace = stacktrace
        }
        let images = record.images.compactMap { image -> SentryEvent.Image? in
            guard let ids = imageIDs(image, crashTime: crashTime, readFiles: readImageFiles) else { return nil } // debug_id is required
            return SentryEvent.Image(codeFile: codeFile(image.path), debugID: ids.debugID, imageAddr: hex(image.base),
                                     imageSize: Int(clamping: image.size), codeID: ids.codeID)
        }
        let threads = record.threads.map { thread in
            SentryEvent.Thread(id: Int(thread.tid), crashed: thread.crashed, current: thread.tid == crashed?.tid,
                               name: thread.name.isEmpty ? nil : thread.name,
                               stacktrace: thread.frames.isEmpty ? nil : stacktrace(thread, frames: framesOf(thread), record: record),
                               state: record.event?.threadStates?.of(thread.tid).map { scheduling in
                                   switch scheduling.state {
                                   case "R": "Runnable"
                                   case "D": "DiskWait"
                                   case "T", "t": "Stopped"
                                   default: "Waiting"
                                   }
                               },
                               heldLocks: record.event?.lockWaits.flatMap { lockReasons(of: thread.tid, in: $0) })
        }
        var tags = ["record_complete": record.isComplete ? "yes" : "no"]
        // Relay rejects an empty tag value: the signal tag only when there is a name.
        if let signal, !signal.name.isEmpty { tags["signal"] = signal.name }
        var extra: [String: SentryEvent.Extra] = [:]
        if let message = record.fatalMessage { extra["fatal_message"] = .text(message) }
        if let message = record.abortMessage { extra["abort_message"] = .text(message) }
        // What the runtime warned of earlier: context, never the title, the exception or the grouping.
        if let warnings = record.runtimeWarningLines { extra["runtime_warnings"] = .text(warnings) }
        var event = SentryEvent(
            eventID: eventID,
            timestamp: record.process.map { Double($0.crashWallNanoseconds) / 1e9 },
            release: record.appName.map { "\($0)@\(record.appVersion ?? "unknown")" },
            exception: .init(values: [exception]),
            threads: .init(values: threads),
            debugMeta: .init(images: images),
            contexts: .init(os: osContext(kernel: record.kernel, osRelease: osRelease),
                            device: .init(arch: architecture(record.architecture), freeMemory: record.resources?.machineMemoryAvailable,
                                          processorCount: record.resources?.cpuCount, cpuDescription: record.resources?.cpuDescription),
                            app: .init(appName: record.appName ?? "", appVersion: record.appVersion ?? "",
                                       appMemory: record.resources?.residentBytes),
                            resources: record.resources.map(resourcesContext)),
            tags: tags,
            breadcrumbs: .init(values: record.breadcrumbs.map {
                SentryEvent.Breadcrumb(timestamp: Double($0.wallNanoseconds) / 1e9, level: level($0.level), message: $0.message)
            }),
            extra: extra.isEmpty ? nil : extra)
        if let live = record.event {
            event.level = live.fate != nil ? "fatal" : live.kind == .hang ? "error" : live.kind == .memory ? "warning" : "info"
            event.tags["record_kind"] = live.kind.rawValue
            if live.kind == .hang {
                event.tags["hang_detector"] = live.detector.name
                event.tags["hang_state"] = live.fate == nil ? "open" : live.fate!.oom ? "killed_oom" : "killed"
            }
            if let states = live.threadStates { event.tags["stall"] = states.verdict }
            if live.kind == .memory { event.tags["memory_state"] = live.fate == nil ? "near_limit" : live.fate!.oom ? "killed_oom" : "killed" }
            var extra = event.extra ?? [:]
            var hang = [
                "what": live.summary, "threshold_ms": String(live.thresholdMilliseconds), "observed_ms": String(live.observedMilliseconds),
                "threads_stopped_us": String(live.stoppedMicroseconds),
            ]
            if let states = live.threadStates {
                hang["threads"] = states.summary
                if let span = live.stallCPUSpanMilliseconds { hang["stall_cpu"] = states.stallSummary(span: span) }
            }
            if let memory = live.memory {
                hang["memory"] = memory.headline
                hang["usage_bytes"] = String(memory.usage)
                hang["limit_bytes"] = String(memory.limit)
                hang["growth_bytes"] = String(memory.growth)
                hang["growth_seconds"] = String(memory.growthSeconds)
                if let anon = memory.anon, let file = memory.file, let shmem = memory.shmem {
                    hang["split"] = "anon \(anon), file \(file), shmem \(shmem)"
                }
                if let inUse = memory.mallocInUse, let free = memory.mallocFree { hang["malloc"] = "in use \(inUse), free \(free)" }
            }
            if let fate = live.fate {
                hang["state"] = fate.summary(of: live.kind)
                if let after = fate.lastSeenAfterMilliseconds { hang["killed_after_ms"] = String(after) }
            }
            extra["hang"] = .pairs(hang)
            event.extra = extra
        }
        let localName = { (address: UInt64) -> String? in readImageFiles ? local.demangledName(at: address) : nil }
        if let live = record.event, let samples = live.stackSamples {
            // A computing hang: grouped by where its busy threads most often were, not by the one
            // reading of the focus thread (which may be anywhere in the loop).
            let hottest = samples.hottest(in: record, name: localName)
            if let top = hottest.first {
                event.fingerprint = ["hang", live.detector.name, "computing", top.place]
                var extra = event.extra ?? [:]
                if case .pairs(var hang)? = extra["hang"] {
                    hang["hot_frames"] = hottest.prefix(5).map { "\($0.place) (\($0.samples) of \(samples.samples.count) samples)" }.joined(separator: "; ")
                    extra["hang"] = .pairs(hang)
                }
                event.extra = extra
            }
        }
        if let live = record.event, live.detector == .deadlock, let cycle = live.lockWaits?.cycle, !cycle.isEmpty {
            // A deadlock is titled by the functions its threads wait in and grouped by them, not by
            // the first thread's frames alone (which of the threads comes first depends on their ids).
            let places = cycle.map { wait in
                record.threads.first { $0.tid == wait.tid }.map { thread in
                    record.place(ofStack: framesOf(thread).map(\.address), name: localName)
                } ?? "?"
            }
            event.exception.values[0].value = places.count == 1
                ? "\(places[0]) waits on a lock its own thread holds"
                : "between " + zip(cycle, places).map { "\($1) (thread \($0.tid))" }.joined(separator: " and ")
                    + ": each waits on a lock the next one holds"
            event.fingerprint = ["deadlock"] + places.sorted()
        }
        if record.event == nil, crashed != nil {
            // Sentry groups a crash by its in_app frames; with none, by every frame, so that
            // unrelated crashes in one runtime or libc function share an issue. Then the innermost
            // package frame and the fatal message group it instead (CrashGrouping); the tag says
            // which rule it was.
            let grouping = CrashGrouping(record: record, frames: crashedFrames.map { frame in
                let physical = frame.symbols.last { !$0.inlined }
                return CrashGrouping.Frame(address: frame.address, mangled: physical?.mangledSymbol, name: physical?.symbol,
                                           start: physical?.functionStart)
            })
            event.tags["grouping"] = grouping.rule.tag
            if grouping.rule == .packageFrame {
                event.fingerprint = ["crash", summary.title] + grouping.frames + (summary.message.map { [$0] } ?? [])
                event.culprit = grouping.frames.first
            }
        }
        if let heap = record.guardedHeap {
            // Grouped by the error and where the memory was allocated and freed (the first frames
            // that are not the allocator's), not by where the victim faulted.
            // Named from the symbol tables unless the policy says otherwise (then image+offset).
            let name = { (address: UInt64) in functionNames ? localName(address) : nil }
            let names = { (frames: [UInt64]) in frames.map { name($0 &- 1) } }
            let allocated = GuardedHeapError.site(names(heap.allocationFrames)), freed = GuardedHeapError.site(names(heap.freeFrames))
            event.tags["memory_error"] = heap.kind.name
            event.fingerprint = ["guarded-heap", heap.kind.name, allocated ?? "?"] + (heap.freeThread == nil ? [] : [freed ?? "?"])
            event.culprit = allocated
            var extra = event.extra ?? [:]
            let stack = { (frames: [UInt64]) in
                frames.map { address in name(address &- 1) ?? record.offsetLabel(for: address) ?? hex(address) }.joined(separator: "\n")
            }
            var pairs = ["error": heap.kind.name, "summary": heap.summary, "access_address": hex(heap.accessAddress),
                         "allocation_thread": String(heap.allocationThread), "allocation_stack": stack(heap.allocationFrames)]
            if let allocation = heap.allocation {
                pairs["allocation_address"] = hex(allocation.address)
                pairs["allocation_size"] = String(allocation.size)
                pairs["offset"] = String(heap.offset ?? 0)
            }
            if let freer = heap.freeThread {
                pairs["free_thread"] = String(freer)
                pairs["free_stack"] = stack(heap.freeFrames)
            }
            extra["guarded_heap"] = .pairs(pairs)
            event.extra = extra
        }
        if let scope = record.scope {
            // The app's tags beside the reporter's (which win a clash: they say what the record is);
            // Relay refuses an empty tag value.
            for (key, value) in scope.tags where event.tags[key] == nil && !value.isEmpty { event.tags[key] = value }
            event.user = scope.user.map { SentryEvent.User(id: $0.id, username: $0.username, email: $0.email, ipAddress: $0.ipAddress) }
            event.contexts.appContexts = scope.contexts
        }
        describeRequests(of: record, in: &event, names: localName)
        return event
    }

    /// One frame per thread frame, outermost first (see ``event(record:eventID:frames:osRelease:readImageFiles:)``).
    /// Each frame's function is the one its address lies in, as the frames name it (a
    /// symbolicator's, or the images' symbol tables', looked up at a return address's call as
    /// Sentry's symbolicator looks it up).
    static func stacktrace(_ thread: CrashThread, frames: [ThreadFrame], record: CrashRecord) -> SentryEvent.Stacktrace {
        let hasAsync = frames.contains { $0.kind == .asyncResumePoint }
        let sent = frames.reversed().map { threadFrame in
            let call = callAddress(threadFrame, architecture: record.architecture)
            let address = hasAsync ? call : threadFrame.address
            var frame = SentryEvent.Frame(instructionAddr: hex(address),
                                          package: record.image(containing: threadFrame.address).map { codeFile($0.path) }, function: nil)
            let physical = threadFrame.symbols.last(where: { !$0.inlined })
            let mangled = physical?.mangledSymbol
            if let physical, let symbol = physical.symbol {
                frame.function = mangled.map(SwiftDemangler.simplified) ?? symbol
                if frame.function != symbol { frame.rawFunction = symbol }
                frame.symbolAddr = physical.functionStart.map(hex)
            }
            if let mangled, mangled != frame.function { frame.symbol = mangled }
            frame.inApp = record.origin(ofFrameAt: threadFrame.address, mangledName: mangled).isApp
            return frame
        }
        let adjustment = hasAsync ? "none" : thread.framesFromSignalContext ? "all_but_first" : "all"
        return SentryEvent.Stacktrace(frames: sent, instructionAddrAdjustment: adjustment)
    }

    /// The address Sentry's symbolicator should look up for a frame: a return address moved
    /// back into its call instruction as symbolic's `caller_address` does (x86-64: less 1; arm64:
    /// less 4, instruction-aligned), a pc or an async resume point (a function entry) as is.
    package static func callAddress(_ frame: ThreadFrame, architecture: CrashRecord.Architecture) -> UInt64 {
        guard frame.kind == .returnAddress, frame.address >= 4 else { return frame.address }
        switch architecture {
        case .aarch64: return (frame.address - 4) & ~3
        default: return frame.address - 1
        }
    }

    /// The `resources` context of a record's resources.
    static func resourcesContext(_ resources: CrashResources) -> SentryEvent.Resources {
        let findings = resources.findings
        return SentryEvent.Resources(
            openDescriptors: resources.openDescriptors,
            descriptorLimit: resources.descriptorSoftLimit.flatMap { $0 == .max ? nil : $0 }, threads: resources.threads,
            peakResidentBytes: resources.peakResidentBytes, cgroupMemoryBytes: resources.cgroupUsage,
            cgroupMemoryLimitBytes: resources.cgroupLimit, cgroupOOMKills: resources.cgroupEventCounts["oom_kill"],
            load: resources.load, findings: findings.isEmpty ? nil : findings)
    }

    /// `contexts.os` as sentry-native fills it on Linux from uname and os-release: `name` the
    /// kernel's sysname ("Linux"), `version` the leading numeric part of the release ("6.1.0"),
    /// `build` the rest ("18-amd64"), and, from os-release when given, `distribution_name`
    /// (`ID`), `distribution_version` (`VERSION_ID`), `distribution_pretty_name` (`PRETTY_NAME`).
    /// `kernel_version` (which sentry-native sets only on macOS and Windows) is the whole release.
    /// The record's kernel line is uname's "sysname release version machine".
    package static func osContext(kernel: String?, osRelease: OSRelease?) -> SentryEvent.OS {
        let words = (kernel ?? "").split(separator: " ").map(String.init)
        var os = SentryEvent.OS(name: words.first ?? "Linux")
        if words.count >= 2 {
            let release = words[1]
            var dots = 0
            var end = release.startIndex
            while end < release.endIndex {
                let c = release[end]
                if c == "." { dots += 1 }
                if !(c.isASCII && c.isNumber) && (c != "." || dots > 2) { break }
                end = release.index(after: end)
            }
            var build = release[end...]
            if build.first == "-" || build.first == "." { build = build.dropFirst() }
            os.version = String(release[..<end])
            if !build.isEmpty { os.build = String(build) }
            os.kernelVersion = release
        }
        os.distributionName = osRelease?.id
        os.distributionVersion = osRelease?.versionID
        os.distributionPrettyName = osRelease?.prettyName
        return os
    }

    /// Sentry's architecture names: "x86_64", "arm64" (not "aarch64").
    package static func architecture(_ architecture: CrashRecord.Architecture) -> String {
        switch architecture {
        case .x86_64: return "x86_64"
        case .aarch64: return "arm64"
        case .unknown: return "unknown"
        }
    }

    /// The vdso is `[vdso]` in records and `linux-gate.so` to Sentry (as sentry-native names it).
    static func codeFile(_ path: String) -> String { path == "[vdso]" ? "linux-gate.so" : path }

    /// Sentry's breadcrumb level (debug, info, warning, error, fatal) for a record's: swift-log's
    /// seven fold into Sentry's five; an unknown level (every one is above critical) is fatal.
    static func level(_ level: BreadcrumbLevel) -> String {
        switch level {
        case .trace, .debug: return "debug"
        case .info, .notice: return "info"
        case .warning: return "warning"
        case .error: return "error"
        case .critical, .unknown: return "fatal"
        }
    }

    static func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }
}

extension RecordMinimisation {
    /// The event as this says: breadcrumbs only when kept; the app's user only with identity; paths (images' `code_file`,
    /// frames' `package`, the exception's value, the fatal and abort messages) sanitised unless
    /// full paths are kept; the OS's name alone without host details; the request's query
    /// and key/values only when kept. (A request's path is a URL's, not a file's: never
    /// sanitised as one.)
    package func apply(to event: inout SentryEvent) {
        if !redaction.breadcrumbs { event.breadcrumbs.values = [] }
        if !redaction.identity { event.user = nil }
        if !hostDetails {
            event.contexts.os = SentryEvent.OS(name: event.contexts.os.name)
            // The machine's processor, memory and load are the host's details too.
            event.contexts.device.freeMemory = nil
            event.contexts.device.processorCount = nil
            event.contexts.device.cpuDescription = nil
            event.contexts.resources?.load = nil
        }
        if !redaction.requestQuery { event.request?.queryString = nil }
        if !redaction.requestAttributes { event.extra?["request_attributes"] = nil }
        if !functionNames {
            func unnamed(_ stacktrace: SentryEvent.Stacktrace?) -> SentryEvent.Stacktrace? {
                stacktrace.map {
                    var trace = $0
                    trace.frames = trace.frames.map {
                        SentryEvent.Frame(instructionAddr: $0.instructionAddr, package: $0.package, function: nil, inApp: $0.inApp)
                    }
                    return trace
                }
            }
            event.exception.values = event.exception.values.map { var exception = $0; exception.stacktrace = unnamed(exception.stacktrace); return exception }
            event.threads.values = event.threads.values.map { var thread = $0; thread.stacktrace = unnamed(thread.stacktrace); return thread }
        }
        guard !redaction.fullPaths else { return }
        // A path whole (its file name kept), as the attached record's; free text by its paths.
        let clean = PathSanitizer.sanitize
        let path: (String) -> String = { String(decoding: PathSanitizer.sanitizePath(Array($0.utf8)), as: UTF8.self) }
        event.debugMeta.images = event.debugMeta.images.map { var image = $0; image.codeFile = path(image.codeFile); return image }
        func cleaned(_ stacktrace: SentryEvent.Stacktrace?) -> SentryEvent.Stacktrace? {
            stacktrace.map { var trace = $0; trace.frames = trace.frames.map { var frame = $0; frame.package = frame.package.map(path); return frame }; return trace }
        }
        event.exception.values = event.exception.values.map {
            var exception = $0
            exception.value = clean(exception.value)
            exception.stacktrace = cleaned(exception.stacktrace)
            return exception
        }
        event.threads.values = event.threads.values.map { var thread = $0; thread.stacktrace = cleaned(thread.stacktrace); return thread }
        event.extra = event.extra.map {
            $0.mapValues { value in
                guard case .text(let text) = value else { return value }
                return .text(clean(text))
            }
        }
    }
}
