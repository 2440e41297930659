// CrashSummary.swift — a crash in one line and a few frames: the one summary every place that shows
// a crash briefly uses (AppCrashed's reason, the Sentry exception, crash-inspect's list and show).
package import CrashRecordFormat

/// What a crash was, briefly: the signal and its code, the fault address, the first line of the
/// process's last words, and the top frames as Swift's backtracer shows them.
///
/// The one-line form, ``headline``, is Sentry's "type: value" of the exception:
/// `SIGSEGV: SEGV_MAPERR (address not mapped to object) at 0x0`, then ` — ` and the first line of
/// the Swift fatal message (else glibc's abort message) exactly as the process wrote it, e.g.
/// `CrashScenarios/Scenarios.swift:294: Fatal error: text`. Nothing is stripped from that line: it is
/// what Swift's runtime printed on stderr, what Sentry's own Swift SDK (sentry-cocoa) sends as the
/// exception value (libswiftCore's crash-info message, as is), and the runtime's prefix tells a
/// `fatalError` from a failed `precondition` or `assert` ("Precondition failed: ", "Assertion
/// failed: ") and from a message that only mentions "Fatal error: ".
package struct CrashSummary: Sendable, Equatable {
    /// One frame of the summary.
    package struct Frame: Sendable, Equatable {
        package var address: UInt64
        package var kind: ThreadFrame.Kind
        /// 0 for the crashed task's frames, 1 for its parent task's, and so on.
        package var taskDepth: Int
        package var taskID: UInt32?
        /// `image+0xoffset` (``CrashImage/offsetLabel(path:offset:)``); nil outside every image.
        package var label: String?
    }

    /// Frames a summary keeps by default (AppCrashed's reason quotes them).
    package static let frameLimit = 12

    /// The signal's name ("SIGSEGV"), "signal N" for one without a name, "unknown signal" when the
    /// record has none: Sentry's exception type.
    package var title: String
    /// What the signal says beyond its name: its code (with the code's description), the fault
    /// address, the sender.
    package var detail: String
    /// The first non-empty line of the process's last words (an uncaught C++ exception, else the
    /// Swift fatal message, else the C library's abort message), as written.
    package var message: String?
    /// The top frames of the crashed thread, innermost first.
    package var frames: [Frame]
    /// Why the record is incomplete; nil when it is complete.
    package var incompleteReason: String?

    /// The summary of `record`, whose crashed thread's frames are `frames` (``ThreadFrames``:
    /// async callers after the first async frame), of which the first `frameLimit` are kept.
    package init(record: CrashRecord, frames: [ThreadFrame], frameLimit: Int = CrashSummary.frameLimit) {
        if let event = record.event {
            // A record of a live process: Sentry's exception type says which kind, its value what fired.
            switch event.kind {
            case .hang: title = event.detector == .deadlock ? "Deadlock" : "Hang"
            case .memory: title = event.fate != nil ? "Killed for memory" : "Memory"
            default: title = "Snapshot"
            }
            detail = event.fate.map { "\(event.summary); \($0.summary(of: event.kind))" } ?? event.summary
        } else if let signal = record.signal {
            title = signal.name.isEmpty ? "signal \(signal.number)" : signal.name
            var detail = signal.codeName.isEmpty ? "si_code \(signal.code)" : signal.codeName
            if !signal.codeDescription.isEmpty { detail += " (\(signal.codeDescription))" }
            if let fault = signal.faultAddress { detail += " at 0x" + String(fault, radix: 16) }
            if let sender = signal.sender { detail += ", sent by pid \(sender.pid)" }
            self.detail = detail
        } else {
            title = "unknown signal"
            detail = "not recorded (the record is cut short before it)"
        }
        // A memory error the guarded heap caught says most (the fault or the abort is its
        // consequence); then an uncaught C++ exception (the abort that followed it is glibc's part).
        message = record.guardedHeap?.summary ?? record.cxxException?.summary ?? [record.fatalMessage, record.abortMessage].lazy.compactMap { $0.flatMap(Self.firstLine) }.first
        self.frames = frames.prefix(max(0, frameLimit)).map {
            Frame(address: $0.address, kind: $0.kind, taskDepth: $0.taskDepth, taskID: $0.taskID, label: record.offsetLabel(for: $0.address))
        }
        if case .incomplete(let reason) = record.completeness { incompleteReason = reason }
    }

    /// The first line of `text` that is not empty, as written; nil when there is none.
    package static func firstLine(of text: String) -> String? {
        text.split(separator: "\n").first { !$0.allSatisfy(\.isWhitespace) }.map(String.init)
    }

    /// Sentry's exception value: ``detail``, then ` — ` and ``message``.
    package var value: String { message.map { detail + " — " + $0 } ?? detail }

    /// The crash in one line: "``title``: ``value``", as Sentry shows an exception.
    package var headline: String { title + ": " + value }

    /// `#0 0x55d0c0ffee00 crash-harness+0x1a2b [async]` for the frame at `index`.
    package func frameLine(_ index: Int) -> String {
        let frame = frames[index]
        var line = "#\(index) 0x" + String(frame.address, radix: 16)
        if let label = frame.label { line += " " + label }
        return line + ThreadFrame.asyncMarker(kind: frame.kind, taskDepth: frame.taskDepth, taskID: frame.taskID)
    }

    /// The headline, a line per frame, and "(record incomplete: …)" when it is.
    package var lines: [String] {
        [headline] + frames.indices.map(frameLine) + (incompleteReason.map { ["(record incomplete: \($0))"] } ?? [])
    }
}

extension ThreadFrame {
    /// How a frame's kind reads after it: "" for a physical frame, " [async]" for an async
    /// caller of the crashed task, " [async, parent task 3]" for one of a parent task's.
    package static func asyncMarker(kind: Kind, taskDepth: Int, taskID: UInt32?) -> String {
        guard kind == .asyncResumePoint else { return "" }
        return taskDepth == 0 ? " [async]" : " [async, parent task\(taskID.map { " \($0)" } ?? "")]"
    }

    /// ``asyncMarker(kind:taskDepth:taskID:)`` of this frame.
    package var asyncMarker: String { Self.asyncMarker(kind: kind, taskDepth: taskDepth, taskID: taskID) }
}

extension CrashRecord {
    /// The thread a summary, a group and a sink's exception are about: the crashed thread of a
    /// crash; in a record of a live process, the thread its detector named (an event loop's),
    /// else the first thread that was running a Swift task (async frames, or `swift_job_run`
    /// among its frames: in a starved pool, a thread the pool cannot get back), else none.
    package func focusThread(frames framesOf: (CrashThread) -> [ThreadFrame]) -> CrashThread? {
        if let crashed = crashedThread { return crashed }
        guard let event else { return nil }
        if let tid = event.blockedThread, let thread = threads.first(where: { $0.tid == tid }) { return thread }
        return threads.first { thread in
            !thread.frames.isEmpty && framesOf(thread).contains { frame in
                frame.kind == .asyncResumePoint
                    || frame.symbols.contains { ($0.symbol ?? "").contains("swift_job_run") || ($0.symbol ?? "").contains("runJobInEstablishedExecutorContext") }
            }
        }
    }
}
