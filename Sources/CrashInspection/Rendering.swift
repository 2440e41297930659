// Rendering.swift — the text a person reads and the stable JSON a script reads, for show, list and groups.
package import CrashRecordFormat
import CrashFrames
import CrashSymbolication
import Foundation

package enum Rendering {
    // MARK: show, text

    /// The whole story of one crash, for a person. Each stack shows the program's own frames
    /// and folds runs of the others (packages, the runtime, libc) into one line, with names in
    /// the short form Swift's backtracer prints; `allFrames` shows every frame with its full name.
    package static func text(_ inspection: Inspection, allFrames: Bool = false) -> String {
        let record = inspection.record
        var out: [String] = []
        let state = record.isComplete ? "complete" : "INCOMPLETE: \(reason(record.completeness))"
        let live = record.event != nil
        out.append("\(record.kind.rawValue.capitalized) \(inspection.id)  (\(state))")
        out.append("  app         \(record.appName ?? "?") \(record.appVersion ?? "")")
        if let process = record.process {
            out.append("  when        \(isoTime(process.crashWallNanoseconds)), \(String(format: "%.3f", process.uptimeSeconds)) s after start")
            out.append("  process     pid \(process.pid), thread \(process.tid) \"\(process.threadName)\", parent \(process.ppid), uid \(process.uid)")
        }
        if let exe = record.executablePath { out.append("  executable  \(exe)") }
        if let kernel = record.kernel { out.append("  kernel      \(kernel)") }
        out.append("")
        out.append("What happened")
        // The crash's one summary (as AppCrashed's reason and the Sentry exception say it), then
        // what it means.
        out.append("  \(inspection.summary.headline)")
        if let heap = record.guardedHeap {
            // The guarded heap's account first: who allocated the memory and who freed it.
            let stack = { (title: String, frames: [SymbolicatedFrame]) in
                out.append("  \(title):")
                frames.prefix(allFrames ? frames.count : 8).forEach { out.append("    " + (allFrames ? Inspection.label($0) : Inspection.shortLabel($0))) }
                if !allFrames && frames.count > 8 { out.append("    … \(frames.count - 8) more (--all-frames)") }
            }
            if heap.allocation != nil { stack("allocated by thread \(heap.allocationThread)", inspection.guardedHeapStacks.allocation) }
            if let freer = heap.freeThread { stack("freed by thread \(freer)", inspection.guardedHeapStacks.free) }
        }
        if let event = record.event {
            if event.fate != nil {
                out.append(event.kind == .memory ? "  (the next launch told the kill: the memory cgroup's OOM killer counted it)"
                           : "  (the next launch told the kill: no detector had seen the hang end)")
            }
            if let states = event.threadStates {
                out.append("  \(states.summary)")
                if let span = event.stallCPUSpanMilliseconds { out.append("  \(states.stallSummary(span: span))") }
            }
            if let samples = event.stackSamples, !inspection.hotFrames.isEmpty {
                let threads = Set(samples.samples.map(\.tid)).count
                out.append("  most often in (\(samples.samples.count) samples of \(threads) busy thread\(threads == 1 ? "" : "s"), \(samples.rounds) rounds \(samples.intervalMilliseconds) ms apart):")
                inspection.hotFrames.prefix(5).forEach { out.append("    \($0.samples) × \($0.place)") }
            }
            if let locks = event.lockWaits, locks.cycleLength > 0 {
                let names = Dictionary(record.threads.map { ($0.tid, $0.name) }, uniquingKeysWith: { a, _ in a })
                out.append("  deadlock\(event.detector == .deadlock ? "" : " among its threads"):")
                for wait in locks.cycle {
                    let frames = inspection.threads.first { $0.thread.tid == wait.tid }?.symbolNames ?? []
                    out.append("    thread \(wait.tid) \"\(names[wait.tid] ?? "")\" \(wait.description(holderName: wait.holder.flatMap { names[$0] }, frameNames: frames))")
                }
            }
            if let memory = event.memory {
                var line = "  memory cgroup \(memory.headline)\(memory.limitIsHigh ? " of memory.high" : "")"
                if let anon = memory.anon, let file = memory.file, let shmem = memory.shmem {
                    line += "; anon \(RecordMemoryWatch.mebibytes(anon)) MiB, file \(RecordMemoryWatch.mebibytes(file)) MiB, shmem \(RecordMemoryWatch.mebibytes(shmem)) MiB"
                }
                if let inUse = memory.mallocInUse, let free = memory.mallocFree {
                    line += "; malloc \(RecordMemoryWatch.mebibytes(inUse)) MiB in use, \(RecordMemoryWatch.mebibytes(free)) MiB free"
                }
                out.append(line + "; \(memory.threads) threads")
            }
            out.append("  \(event.fate == nil ? "the process lived on: " : "")it was read while it ran, its threads stopped for \(event.stoppedMicroseconds) µs"
                       + " (\(event.threadsStopped) read; the thread that wrote the record is not listed)")
            if let thread = inspection.crashed?.thread {
                out.append("  \(event.kind == .hang ? "blocked thread" : "a thread running a task:") \(thread.tid) \"\(thread.name)\"")
            }
            if let key = event.requestKey, let stuck = record.requests?.others.first(where: { $0.key == key }) {
                out.append("  stuck request: \(servingLine(stuck).replacingOccurrences(of: "while serving ", with: ""))")
            }
        } else {
            out.append("  \(Explanation.whatHappened(record))")
        }
        if record.event == nil, let registers = Explanation.suspiciousRegisters(record) { out.append("  \(registers)") }
        // What the resources say, first of all (the Resources part below has them all).
        if let finding = record.resources?.findings.first { out.append("  \(finding)") }
        if let requests = record.requests {
            if let crashed = requests.crashed {
                out.append("  \(servingLine(crashed))")
            } else if case .unknown = requests.status {
                out.append("  the request it was serving could not be told (Notes say why)")
            }
        }
        if let message = record.fatalMessage {
            out.append("  Fatal error message:")
            message.split(separator: "\n", omittingEmptySubsequences: false).prefix(20).forEach { out.append("    \($0)") }
        }
        if let message = record.abortMessage {
            out.append("  C library abort message:")
            message.split(separator: "\n", omittingEmptySubsequences: false).prefix(20).forEach { out.append("    \($0)") }
        }
        out.append(contentsOf: runtimeWarningLines(record))
        var headedOthers = false
        let threadNames = Dictionary(record.threads.map { ($0.tid, $0.name) }, uniquingKeysWith: { a, _ in a })
        for thread in inspection.threads {
            out.append("")
            if thread.thread.crashed {
                out.append("Crashed thread")
            } else if live && thread.thread.tid == inspection.focusTID {
                out.append(record.kind == .hang ? "Blocked thread" : "Thread running a task")
            } else if !headedOthers {
                out.append("Other threads")
                headedOthers = true
            }
            out.append(contentsOf: threadText(thread, live: live, scheduling: record.event?.threadStates,
                                              stallSpan: record.event?.stallCPUSpanMilliseconds, locks: record.event?.lockWaits,
                                              names: threadNames, inspection: allFrames ? nil : inspection,
                                              fold: !allFrames && (thread.thread.tid != inspection.focusTID
                                                                   || thread.frames.contains { origin(of: $0, in: inspection).isApp })))
        }
        let problems = Set(inspection.threads.flatMap { $0.frames.flatMap(\.symbols).compactMap(\.problem) }).sorted()
        if !problems.isEmpty {
            out.append("")
            out.append("Symbolication")
            problems.forEach { out.append("  \($0)") }
        }
        if !record.registers.isEmpty {
            out.append("")
            out.append("Registers")
            let cells = record.registers.map { "\($0.name.padding(toLength: 6, withPad: " ", startingAt: 0)) \(String(format: "0x%016llx", $0.value))" }
            stride(from: 0, to: cells.count, by: 3).forEach { out.append("  " + cells[$0..<min($0 + 3, cells.count)].joined(separator: "   ")) }
        }
        for window in record.memory {
            out.append("")
            out.append("Memory around \(window.label) (\(window.bytes.count) bytes at \(Explanation.hex(window.address)))")
            // A whole stack window is for debuggers (show --json); the text shows its top.
            out.append(contentsOf: hexDump(Array(window.bytes.prefix(memoryShown)), at: window.address).map { "  " + $0 })
            if window.bytes.count > memoryShown {
                out.append("  … \(window.bytes.count - memoryShown) more bytes (all of them in show --json)")
            }
        }
        if !record.breadcrumbs.isEmpty {
            out.append("")
            out.append("Breadcrumbs (oldest first)")
            record.breadcrumbs.forEach { out.append("  \(isoTime($0.wallNanoseconds))  \($0.level.name.padding(toLength: 8, withPad: " ", startingAt: 0)) \($0.message)") }
        }
        if let requests = record.requests {
            out.append(contentsOf: requestsText(requests, record: record, waiting: inspection.waiting, leaked: inspection.leakedContinuations,
                                                inspection: allFrames ? nil : inspection))
        }
        if let scope = record.scope { out.append(contentsOf: scopeText(scope)) }
        if let resources = record.resources { out.append(contentsOf: resourcesText(resources)) }
        out.append("")
        out.append("Images")
        for image in record.images {
            let marker = image.isMainExecutable ? "*" : " "
            out.append("  \(marker) \(String(format: "0x%012llx", image.base)) \(String(format: "%10llu", image.size))  \(image.buildIDHex.isEmpty ? "(no build-id)".padding(toLength: 40, withPad: " ", startingAt: 0) : image.buildIDHex.padding(toLength: 40, withPad: " ", startingAt: 0))  \(image.path)")
        }
        if !live {
            out.append("")
            out.append("Compensating $AppEnd")
            out.append("  \(record.appEndJSON ?? "(none recorded)")")
        }
        if !record.notes.isEmpty {
            out.append("")
            out.append("Notes")
            record.notes.forEach { out.append("  \($0)") }
        }
        return out.joined(separator: "\n")
    }

    /// The runtime's warnings, after the crash's own facts: each once, with how many times,
    /// the first 10 (the rest counted). Never the crash's message.
    static func runtimeWarningLines(_ record: CrashRecord) -> [String] {
        let warnings = record.runtimeWarnings
        guard !warnings.isEmpty else { return [] }
        var lines = [record.event == nil ? "  The Swift runtime warned earlier in this run (not this crash's message):"
                                         : "  The Swift runtime warned during this run:"]
        for warning in warnings.prefix(10) {
            lines.append("    \(warning.line)")
        }
        if warnings.count > 10 { lines.append("    … and \(warnings.count - 10) other warnings (show --json lists them all)") }
        return lines
    }

    /// `while serving GET /orders/{id} — request req-37, trace 4bf9…` (the whole trace id:
    /// what a tracing backend is searched by).
    package static func servingLine(_ request: CrashRequest) -> String {
        var line = "while serving " + (request.label.isEmpty ? "a request" : request.label)
        var ids: [String] = []
        if !request.requestID.isEmpty { ids.append("request \(request.requestID)") }
        if let trace = request.traceID { ids.append("trace \(trace)") }
        if !ids.isEmpty { line += " — " + ids.joined(separator: ", ") }
        return line
    }

    /// What `list` names a crash's request by: its id, else its label.
    package static func requestName(_ request: CrashRequest) -> String {
        request.requestID.isEmpty ? request.label : request.requestID
    }

    /// The "Scope" part of `show`: the app's tags, user and named contexts at the crash.
    static func scopeText(_ scope: CrashScope) -> [String] {
        var out = ["", "Scope"]
        for key in scope.tags.keys.sorted() { out.append("  tag      \(key) = \(scope.tags[key]!)") }
        for (key, value) in scope.user?.fields ?? [] { out.append("  user     \(key) = \(value)") }
        for name in scope.contexts.keys.sorted() {
            let facts = scope.contexts[name]!
            for key in facts.keys.sorted() { out.append("  context  \(name).\(key) = \(facts[key]!)") }
        }
        return out
    }

    /// The "Requests in flight" part of `show`: how many, the others one per line (id, label,
    /// trace id, age at the crash), and the status when the crashed one could not be told.
    static func requestsText(_ requests: RequestsInFlight, record: CrashRecord, waiting: [[SymbolicatedFrame]] = [],
                             leaked: [RuntimeWarning?] = [], inspection: Inspection? = nil) -> [String] {
        var out = ["", "Requests in flight"]
        let live = record.event != nil
        var count = "  \(requests.inFlight) \(live ? "when recorded" : "at the crash")"
        if requests.crashed != nil { count += ", the crashed one included" }
        if !requests.others.isEmpty {
            count += live ? "; \(requests.others.count) recorded, oldest first"
                : "; \(requests.others.count) other\(requests.others.count == 1 ? "" : "s") recorded, most recent first"
        }
        out.append(count)
        if case .unknown = requests.status {
            out.append("  status unknown: which one the crashed thread was serving could not be told (Notes say why)")
        }
        if requests.dropped > 0 {
            out.append("  \(requests.dropped) could not be attached since start (the table was full) and are not listed")
        }
        let idWidth = min(40, requests.others.map { $0.requestID.count }.max() ?? 0)
        let labelWidth = min(60, requests.others.map { $0.label.count }.max() ?? 0)
        for (index, request) in requests.others.enumerated() {
            let age = record.age(of: request).map { String(format: "%.3f s", $0) } ?? "? s"
            let trace = request.traceID.map { "trace \($0)" } ?? "no trace".padding(toLength: 38, withPad: " ", startingAt: 0)
            out.append("  \(request.requestID.padding(toLength: max(idWidth, request.requestID.count), withPad: " ", startingAt: 0))  "
                       + "\(request.label.padding(toLength: max(labelWidth, request.label.count), withPad: " ", startingAt: 0))  \(trace)  \(age)")
            if let state = request.waiting.map(waitingState) { out.append("      \(state)") }
            if index < leaked.count, let warning = leaked[index], let function = warning.leakedContinuationFunction {
                out.append("      stuck for good: \(function) leaked the continuation it awaits (the runtime warned; nothing can resume it)")
            }
            let frames = index < waiting.count ? waiting[index] : []
            // Folded (a suspended chain is mostly the server's and NIO's code): the app's resume points, and the rest counted.
            let shown = inspection.map { inspection in folded(frames.map { inspection.origin(of: $0) }) } ?? frames.indices.map { Shown.frame($0) }
            for item in shown {
                switch item {
                case .folded(let count, let names): out.append("        … \(count) frames in \(names)")
                case .frame(let at):
                    let frame = frames[at]
                    let location = frame.file.map { "  \(($0 as NSString).lastPathComponent):\(frame.line.map(String.init) ?? "?")" } ?? ""
                    let label = inspection == nil ? Inspection.label(frame) : Inspection.shortLabel(frame)
                    out.append("        \(String(format: "0x%016llx", frame.address))  \(label)\(frame.inlined ? " [inlined]" : "")\(location)")
                }
            }
        }
        return out
    }

    /// What a request's ``SuspendedTask`` says, in a few words.
    static func waitingState(_ waiting: SuspendedTask) -> String {
        switch waiting.status {
        case .read where waiting.resume != 0:
            return "task \(waiting.taskID) resumes in (where it awaits, then its callers; a thread running it now is listed above):"
        case .read: return "task \(waiting.taskID): no resume point recorded"
        case .layoutUnknown: return "where its task waits is not known: the Swift runtime's task layout is not known in this process"
        case .notATask: return "its task could not be read (it ended, or its memory was reused)"
        case .unknown(let raw): return "where its task waits: status \(raw) unknown to this reader"
        }
    }

    /// What a stack shows of its frames: one, or a run of others folded into a line.
    enum Shown: Equatable {
        case frame(Int)
        /// How many frames, and in which modules or libraries ("Hummingbird, NIOCore, Swift").
        case folded(Int, String)
    }

    /// The frames a stack shows, innermost first: the innermost (where it stands), the program's
    /// own, and any other frame alone between two of them; every run of two or more other
    /// frames is folded into one line naming their modules.
    static func folded(_ origins: [FrameOrigin]) -> [Shown] {
        var out: [Shown] = []
        var index = 0
        while index < origins.count {
            var end = index
            while index > 0, end < origins.count, !origins[end].isApp { end += 1 }
            if end - index >= 2 {
                var names: [String] = []
                for origin in origins[index..<end] where !names.contains(origin.name) { names.append(origin.name) }
                let listed = names.prefix(4).joined(separator: ", ") + (names.count > 4 ? ", …" : "")
                out.append(.folded(end - index, listed))
                index = end
            } else {
                out.append(.frame(index))
                index += 1
            }
        }
        return out
    }

    /// Whose code a thread frame is: the function its address physically lies in.
    static func origin(of frame: ThreadFrame, in inspection: Inspection) -> FrameOrigin {
        (frame.symbols.last { !$0.inlined } ?? frame.symbols.last).map(inspection.origin(of:))
            ?? inspection.record.origin(ofFrameAt: frame.address, mangledName: nil)
    }

    static func threadText(_ inspected: InspectedThread, live: Bool = false, scheduling: ThreadStates? = nil, stallSpan: UInt32? = nil,
                           locks: LockWaits? = nil, names: [Int32: String] = [:], inspection: Inspection? = nil, fold: Bool = false) -> [String] {
        let thread = inspected.thread
        var flags: [String] = []
        if let states = scheduling, let mine = states.of(thread.tid) {
            flags.append("\(mine.stateName), \(mine.windowCPUMilliseconds) ms of CPU in the \(states.windowMilliseconds) ms before"
                         + (stallSpan.map { " (\(mine.stallCPUMilliseconds) ms in the \(RecordEvent.seconds(UInt64($0))) of the stall)" } ?? ""))
        }
        if let wait = locks?.of(thread.tid) {
            flags.append(wait.description(holderName: wait.holder.flatMap { names[$0] }, frameNames: inspected.symbolNames))
        }
        if thread.alsoCrashed { flags.append("crashed too, while the record was written") }
        if let state = stackState(thread, live: live) { flags.append(state) }
        if thread.truncated && thread.omittedFrames == 0 { flags.append("stopped at the unwind step limit") }
        if let task = inspected.frames.first(where: { $0.taskDepth == 0 })?.taskID {
            flags.append("running task \(task)")
        }
        var out = ["  thread \(thread.tid) \"\(thread.name)\"\(thread.crashed ? " (crashed)" : "")\(flags.isEmpty ? "" : " — " + flags.joined(separator: ", "))"]
        let shown = fold && inspection != nil ? folded(inspected.frames.map { origin(of: $0, in: inspection!) })
            : inspected.frames.indices.map { Shown.frame($0) }
        var foldAt: [Int: (Int, String)] = [:]
        var hidden = Set<Int>()
        var position = 0
        for item in shown {
            switch item {
            case .frame: position += 1
            case .folded(let count, let modules):
                foldAt[position] = (count, modules)
                hidden.formUnion(position..<position + count)
                position += count
            }
        }
        for (position, threadFrame) in inspected.frames.enumerated() {
            if thread.omittedFrames > 0 && threadFrame.physicalIndex == thread.innermostFrameCount {
                out.append("       … \(thread.omittedFrames) frames omitted …")
            }
            if let (count, modules) = foldAt[position] { out.append("       … \(count) frames in \(modules)") }
            if hidden.contains(position) { continue }
            let async = threadFrame.asyncMarker
            for frame in threadFrame.symbols {
                let number = frame.inlined ? "   " : String(format: "%3d", depth(of: threadFrame, at: position, in: thread))
                let location = frame.file.map { f in
                    "  \((f as NSString).lastPathComponent):\(frame.line.map(String.init) ?? "?")\(frame.column.map { ":\($0)" } ?? "")"
                } ?? ""
                let image = frame.image.map { ($0 as NSString).lastPathComponent } ?? "?"
                // The full reason is listed once under "Symbolication"; a frame names it short.
                let problem = frame.problem.map { "  [\($0.split(separator: ":").first.map(String.init) ?? $0)]" } ?? ""
                let inlined = frame.inlined ? " [inlined]" : ""
                let label = inspection != nil ? Inspection.shortLabel(frame) : Inspection.label(frame)
                out.append("  \(number)  \(String(format: "0x%016llx", frame.address))  \(image)\(async)  \(label)\(inlined)\(location)\(problem)")
            }
        }
        return out
    }

    /// A frame's depth in the whole stack: frames after the omitted ones keep their true depth
    /// (async frames follow the physical ones they continue).
    static func depth(of frame: ThreadFrame, at position: Int, in thread: CrashThread) -> Int {
        let index = frame.physicalIndex ?? position
        return index < thread.innermostFrameCount ? index : index + thread.omittedFrames
    }

    /// Bytes of a memory window the text view shows.
    static let memoryShown = 256

    /// How the thread's stack was obtained, when there is something to say: the crashed thread
    /// unwinds itself, parked threads are the rule; read by the ptrace helper, or not at all
    /// (and then why).
    static func stackState(_ thread: CrashThread, live: Bool = false) -> String? {
        if thread.crashed { return nil }
        if thread.ptraced && live { return "read by the ptrace helper" }
        if thread.ptraced { return "read by the ptrace helper (it blocks the stop signal)" }
        if thread.ptraceRefused { return "not stopped: it blocks the stop signal and ptrace was refused, so it has no stack" }
        if thread.notStopped { return "not stopped: it blocks the stop signal, so it ran on and has no stack" }
        if thread.stackUnavailable { return "stack not available: the thread did not stop in time" }
        return nil
    }

    /// The `stack` value of `show --json`: how a thread's stack was obtained.
    static func stackSource(_ thread: CrashThread) -> String {
        if thread.crashed { return "crashed" }
        if thread.ptraced { return "ptraced" }
        if thread.ptraceRefused { return "ptraceRefused" }
        if thread.notStopped { return "notStopped" }
        if thread.stackUnavailable { return "didNotStop" }
        return thread.stopped ? "stopped" : "unknown"
    }

    static func hexDump(_ bytes: [UInt8], at address: UInt64) -> [String] {
        stride(from: 0, to: bytes.count, by: 16).map { start in
            let row = bytes[start..<min(start + 16, bytes.count)]
            let hex = row.map { String(format: "%02x", $0) }.joined(separator: " ")
            let ascii = String(row.map { (0x20...0x7e).contains($0) ? Character(UnicodeScalar($0)) : "." })
            return "\(String(format: "0x%016llx", address &+ UInt64(start)))  \(hex.padding(toLength: 47, withPad: " ", startingAt: 0))  \(ascii)"
        }
    }

    static func reason(_ completeness: CrashRecord.Completeness) -> String {
        if case .incomplete(let reason) = completeness { return reason }
        return "complete"
    }

    // MARK: show, JSON

    /// The stable `show --json` object (schema documented in docs/inspector.md).
    package static func json(_ inspection: Inspection) -> ShowJSON {
        let record = inspection.record
        let signal = record.signal
        let process = record.process
        let appEnd: JSONValue? = record.appEndJSON.map { text in
            switch JSONValue.parse(text) {
            case .some(.object(let object)): return .object(object)
            case .some(.array(let array)): return .array(array)
            default: return .string(text) // not an object or array: shown as the text it is
            }
        }
        return ShowJSON(
            id: inspection.id,
            file: inspection.path,
            kind: record.kind.rawValue,
            event: Nullable(record.event.map { event in
                ShowJSON.Event(detector: event.detector.name, name: event.name, thresholdMilliseconds: event.thresholdMilliseconds,
                               observedMilliseconds: event.observedMilliseconds,
                               requestID: Nullable(event.requestKey.flatMap { key in record.requests?.others.first { $0.key == key }?.requestID }),
                               blockedThread: Nullable(inspection.focusTID.map(Int.init)), stoppedMicroseconds: event.stoppedMicroseconds,
                               threadsStopped: event.threadsStopped,
                               fate: Nullable(event.fate.map { fate in
                                   ShowJSON.Fate(state: fate.oom ? "killed_oom" : "killed",
                                                 lastSeenWallMilliseconds: Nullable(fate.lastSeenWallMilliseconds),
                                                 lastSeenAfterMilliseconds: Nullable(fate.lastSeenAfterMilliseconds))
                               }),
                               memory: Nullable(event.memory.map { memory in
                                   ShowJSON.MemoryWatch(usage: memory.usage, limit: memory.limit, limitIsHigh: memory.limitIsHigh, growth: memory.growth,
                                                   growthSeconds: memory.growthSeconds, anon: Nullable(memory.anon), file: Nullable(memory.file),
                                                   shmem: Nullable(memory.shmem), mallocInUse: Nullable(memory.mallocInUse),
                                                   mallocFree: Nullable(memory.mallocFree), threads: memory.threads)
                               }),
                               stall: Nullable(event.threadStates?.verdict),
                               stallCPUSpanMilliseconds: Nullable(event.stallCPUSpanMilliseconds),
                               deadlock: Nullable(event.lockWaits.flatMap { $0.cycleLength == 0 ? nil : $0.cycle.map { Int($0.tid) } }),
                               hotFrames: Nullable(event.stackSamples.map { samples in
                                   inspection.hotFrames.map { ShowJSON.HotFrame(place: $0.place, samples: $0.samples, of: samples.samples.count) }
                               }))
            }),
            complete: record.isComplete,
            incompleteReason: Nullable(record.isComplete ? nil : reason(record.completeness)),
            summary: inspection.summary.headline,
            explanation: Explanation.whatHappened(record),
            message: Nullable(record.fatalMessage),
            abortMessage: Nullable(record.abortMessage),
            runtimeWarnings: record.runtimeWarnings.map { RuntimeWarningJSON(text: $0.text, count: $0.count) },
            app: .init(name: Nullable(record.appName), version: Nullable(record.appVersion)),
            notes: record.notes,
            signal: Nullable(signal.map { Int($0.number) }),
            signalName: Nullable(signal?.name),
            code: Nullable(signal.map { Int($0.code) }),
            codeName: Nullable(signal?.codeName),
            codeDescription: Nullable(signal?.codeDescription),
            faultAddress: Nullable(signal?.faultAddress.map(Explanation.hex)),
            sender: Nullable(signal?.sender.map { ShowJSON.Sender(pid: Int($0.pid), uid: Int($0.uid)) }),
            process: Nullable(process.map {
                ShowJSON.Process(pid: Int($0.pid), tid: Int($0.tid), ppid: Int($0.ppid), uid: Int($0.uid), threadName: $0.threadName,
                                 executable: Nullable(record.executablePath), startTime: isoTime($0.startWallNanoseconds),
                                 crashTime: isoTime($0.crashWallNanoseconds), uptimeSeconds: $0.uptimeSeconds)
            }),
            threads: inspection.threads.map { inspected in
                ShowJSON.Thread(
                    tid: Int(inspected.thread.tid), name: inspected.thread.name, crashed: inspected.thread.crashed,
                    stackAvailable: !inspected.thread.stackUnavailable, truncated: inspected.thread.truncated,
                    stack: stackSource(inspected.thread), alsoCrashed: inspected.thread.alsoCrashed,
                    omittedFrames: inspected.thread.omittedFrames, registers: registers(inspected.thread.registers),
                    scheduling: Nullable(record.event?.threadStates.flatMap { states in
                        states.of(inspected.thread.tid).map {
                            ShowJSON.Scheduling(state: $0.stateName, windowCPUMilliseconds: $0.windowCPUMilliseconds,
                                                windowMilliseconds: states.windowMilliseconds, cpuMilliseconds: $0.cpuMilliseconds,
                                                stallCPUMilliseconds: Nullable(record.event?.stallCPUSpanMilliseconds == nil ? nil : $0.stallCPUMilliseconds))
                        }
                    }),
                    waitsOn: Nullable(record.event?.lockWaits.flatMap { locks in
                        locks.of(inspected.thread.tid).map { wait in
                            ShowJSON.LockWaitJSON(kind: wait.kind.name, what: wait.what(frameNames: inspected.symbolNames),
                                                  address: Explanation.hex(wait.lockAddress), futexAddress: Explanation.hex(wait.futexAddress),
                                                  holderTid: Nullable(wait.holder.map(Int.init)),
                                                  holderName: Nullable(wait.holder.flatMap { holder in record.threads.first { $0.tid == holder }?.name }),
                                                  holderEnded: wait.holderGone, released: wait.released, unreadable: wait.unreadable,
                                                  inDeadlock: locks.cycle.contains { $0.tid == wait.tid })
                        }
                    }),
                    holdsLocks: (record.event?.lockWaits?.waits ?? []).filter { $0.holder == inspected.thread.tid && !$0.holderGone }
                        .map { Explanation.hex($0.lockAddress) }.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } },
                    frames: inspected.frames.enumerated().flatMap { position, threadFrame in
                        threadFrame.symbols.map { frame in
                            ShowJSON.Frame(
                                index: depth(of: threadFrame, at: position, in: inspected.thread), kind: threadFrame.kind,
                                taskDepth: threadFrame.taskDepth, taskID: Nullable(threadFrame.taskID.map(Int.init)),
                                address: Explanation.hex(frame.address), image: Nullable(frame.image),
                                imageOffset: Nullable(frame.imageOffset.map(Explanation.hex)), symbol: Nullable(frame.symbol),
                                shortSymbol: Nullable(frame.symbol == nil ? nil : Inspection.shortLabel(frame)),
                                file: Nullable(frame.file), line: Nullable(frame.line), column: Nullable(frame.column),
                                inlined: frame.inlined, problem: Nullable(frame.problem),
                                inApp: inspection.origin(of: frame).isApp,
                                origin: Nullable(inspection.origin(of: frame).isApp ? nil : inspection.origin(of: frame).name))
                        }
                    })
            },
            registers: registers(record.registers),
            memory: record.memory.map {
                ShowJSON.Memory(label: $0.label, address: Explanation.hex($0.address), hex: $0.bytes.map { String(format: "%02x", $0) }.joined())
            },
            breadcrumbs: record.breadcrumbs.map {
                ShowJSON.Breadcrumb(time: isoTime($0.wallNanoseconds), level: $0.level.name, message: $0.message)
            },
            images: record.images.map {
                ShowJSON.Image(path: $0.path, buildID: $0.buildIDHex, base: Explanation.hex($0.base), size: Int(clamping: $0.size),
                               mainExecutable: $0.isMainExecutable)
            },
            appEnd: Nullable(appEnd),
            requests: Nullable(record.requests.map { requests in
                var task: String?
                if case .task(let address) = requests.status { task = Explanation.hex(address) }
                return ShowJSON.Requests(status: requests.status.name, currentTask: Nullable(task), inFlight: requests.inFlight,
                                         dropped: requests.dropped, crashed: Nullable(requests.crashed.map { requestJSON($0, record: record) }),
                                         others: requests.others.enumerated().map { index, request in
                                             requestJSON(request, record: record, waiting: index < inspection.waiting.count ? inspection.waiting[index] : [],
                                                         leaked: index < inspection.leakedContinuations.count ? inspection.leakedContinuations[index] : nil)
                                         })
            }),
            scope: Nullable(record.scope.map { scope in
                ShowJSON.Scope(tags: scope.tags, user: Nullable(scope.user.map { Dictionary($0.fields, uniquingKeysWith: { a, _ in a }) }),
                               contexts: scope.contexts)
            }),
            resources: Nullable(record.resources.map(resourcesJSON)),
            cxxException: Nullable(record.cxxException.map { cxx in
                let state: String
                switch cxx.what {
                case .text: state = "what"
                case .threw: state = "whatThrew"
                case .notStdException: state = "notStdException"
                case .noException: state = "noException"
                case .inFlight: state = "inFlight"
                }
                return ShowJSON.CxxExceptionJSON(type: Nullable(cxx.type), mangledType: Nullable(cxx.mangledType), what: Nullable(cxx.message),
                                                 whatState: state, summary: cxx.summary)
            }),
            guardedHeap: Nullable(record.guardedHeap.map { heap in
                let stack = { (frames: [SymbolicatedFrame]) in
                    frames.map { frame in
                        ShowJSON.StackFrame(address: Explanation.hex(frame.address), image: Nullable(frame.image),
                                            imageOffset: Nullable(frame.imageOffset.map(Explanation.hex)), symbol: Nullable(frame.symbol),
                                            shortSymbol: Nullable(frame.symbol == nil ? nil : Inspection.shortLabel(frame)),
                                            file: Nullable(frame.file), line: Nullable(frame.line), inlined: frame.inlined,
                                            inApp: inspection.origin(of: frame).isApp)
                    }
                }
                return ShowJSON.GuardedHeapJSON(
                    error: heap.kind.name, summary: heap.summary, accessAddress: Explanation.hex(heap.accessAddress),
                    allocationAddress: Nullable(heap.allocation.map { Explanation.hex($0.address) }), allocationSize: Nullable(heap.allocation?.size),
                    offset: Nullable(heap.offset), allocationThread: Int(heap.allocationThread), freeThread: Nullable(heap.freeThread.map(Int.init)),
                    allocationStack: stack(inspection.guardedHeapStacks.allocation), freeStack: stack(inspection.guardedHeapStacks.free))
            }))
    }

    /// `show --json`'s `resources`.
    static func resourcesJSON(_ resources: CrashResources) -> ShowJSON.Resources {
        let unlimited = { (limit: UInt64?) in limit == .max ? nil : limit }
        return ShowJSON.Resources(
            findings: resources.findings, residentBytes: Nullable(resources.residentBytes), peakResidentBytes: Nullable(resources.peakResidentBytes),
            threads: Nullable(resources.threads), openDescriptors: Nullable(resources.openDescriptors),
            descriptorLimit: Nullable(unlimited(resources.descriptorSoftLimit)), descriptorHardLimit: Nullable(unlimited(resources.descriptorHardLimit)),
            cgroup: Nullable(resources.cgroup.map { cgroup in
                ShowJSON.Cgroup(version: cgroup.version, directory: cgroup.directory, memoryBytes: Nullable(resources.cgroupUsage),
                                memoryLimitBytes: Nullable(resources.cgroupLimit), events: resources.cgroupEventCounts)
            }),
            cpuCount: Nullable(resources.cpuCount), cpu: Nullable(resources.cpuDescription), load: Nullable(resources.load),
            machineMemoryBytes: Nullable(resources.machineMemoryTotal), machineMemoryAvailableBytes: Nullable(resources.machineMemoryAvailable))
    }

    /// show's "Resources" part.
    static func resourcesText(_ resources: CrashResources) -> [String] {
        var out = ["", "Resources"]
        resources.findings.forEach { out.append("  ! \($0)") }
        let bytes = CrashResources.bytes
        if let resident = resources.residentBytes {
            out.append("  memory      \(bytes(resident)) resident" + (resources.peakResidentBytes.map { ", \(bytes($0)) at most" } ?? ""))
        }
        if let cgroup = resources.cgroup {
            let usage = resources.cgroupUsage.map(bytes) ?? "?"
            let limit = resources.cgroupLimit.map { "of \(bytes($0))" } ?? (resources.cgroupUnlimited ? "(no limit)" : "(limit unknown)")
            let events = resources.cgroupEventCounts.filter { $0.value > 0 && $0.key != "oom_kill_disable" }.sorted { $0.key < $1.key }
            out.append("  cgroup      v\(cgroup.version) \(cgroup.directory): \(usage) \(limit)"
                       + (events.isEmpty ? "" : "; " + events.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))
        }
        if let open = resources.openDescriptors {
            let limit = resources.descriptorSoftLimit.map { $0 == .max ? "no limit" : "limit \($0)" } ?? "limit unknown"
            out.append("  descriptors \(open) open (\(limit))")
        }
        if let threads = resources.threads { out.append("  threads     \(threads)") }
        var machine: [String] = []
        if let cpus = resources.cpuCount { machine.append("\(cpus) CPU\(cpus == 1 ? "" : "s")" + (resources.cpuDescription.map { " (\($0))" } ?? "")) }
        if let load = resources.load { machine.append("load " + load.map { String(format: "%.2f", $0) }.joined(separator: " ")) }
        if let available = resources.machineMemoryAvailable, let total = resources.machineMemoryTotal {
            machine.append("\(bytes(available)) of \(bytes(total)) memory available")
        }
        if !machine.isEmpty { out.append("  machine     " + machine.joined(separator: ", ")) }
        return out
    }

    /// One request of `show --json`'s `requests`.
    static func requestJSON(_ request: CrashRequest, record: CrashRecord, waiting: [SymbolicatedFrame] = [],
                            leaked: RuntimeWarning? = nil) -> ShowJSON.Request {
        ShowJSON.Request(requestID: request.requestID, method: request.method, route: request.route, path: request.path,
                         query: request.query, label: request.label, traceID: Nullable(request.traceID), spanID: Nullable(request.spanID),
                         parentSpanID: Nullable(request.parentSpanID), sampled: request.sampled,
                         attributes: Dictionary(request.attributes.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a }),
                         threadContext: request.isThreadContext, startTime: isoTime(request.startWallNanoseconds),
                         ageSeconds: Nullable(record.age(of: request)),
                         waiting: waiting.map { ShowJSON.WaitingFrame(address: Explanation.hex($0.address), symbol: Nullable($0.symbol),
                                                                      file: Nullable($0.file), line: Nullable($0.line),
                                                                      inApp: record.origin(ofFrameAt: $0.address, mangledName: $0.mangledSymbol ?? $0.symbol).isApp) },
                         waitingNote: Nullable(request.waiting.flatMap { $0.status == .read ? nil : waitingState($0) }),
                         leakedContinuation: Nullable(leaked?.text))
    }

    /// Registers by name, as hex strings (the first of a name wins).
    static func registers(_ registers: [Register]) -> [String: String] {
        Dictionary(registers.map { ($0.name, Explanation.hex($0.value)) }, uniquingKeysWith: { a, _ in a })
    }
}

/// A failure while running a tool (a file or directory that cannot be read or written):
/// ArgumentParser prints it as one line without the usage text, which is for mistakes on the
/// command line, and exits 1. crash-inspect's and sensors-store's.
package struct RuntimeFailure: Error, CustomStringConvertible {
    package let description: String
    package init(description: String) { self.description = description }
}
