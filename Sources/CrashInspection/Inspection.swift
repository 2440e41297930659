// Inspection.swift — a record with its threads symbolicated: the one model show, list, groups and export read from.
package import CrashRecordFormat
package import CrashSymbolication
import Foundation

/// A thread whose frames have been through the symbolicator.
package struct InspectedThread: Sendable {
    package var thread: CrashThread
    /// The frames as a Swift backtrace shows them (async callers after the first async frame,
    /// ``ThreadFrames``); each one's `symbols` expand inlined code, innermost first.
    package var frames: [ThreadFrame]

    /// Its frames' function names, innermost first (what a lock wait is named from).
    package var symbolNames: [String] { frames.flatMap(\.symbols).compactMap(\.symbol) }
}

/// A record and everything derived from it.
package struct Inspection: Sendable {
    package var id: String
    package var path: String
    package var record: CrashRecord
    /// Crashed thread first, then the others in record order.
    package var threads: [InspectedThread]

    /// Symbolicates every thread of `record`.
    package init(path: String, record: CrashRecord, symbolicator: Symbolicator?) {
        self.id = RecordDirectory.id(of: path)
        self.path = path
        self.record = record
        let all = record.threads.map { thread in
            let frames = symbolicator?.threadFrames(of: thread, images: record.images)
                ?? ThreadFrames.resolve(thread) { $0.map { _ in false } }.map {
                    var frame = $0
                    frame.symbols = [SymbolicatedFrame(address: $0.address, inlined: false)]
                    return frame
                }
            return InspectedThread(thread: thread, frames: frames)
        }
        // The crashed thread first (in a record of a live process, the thread it is about).
        let focus = record.focusThread { thread in all.first { $0.thread.tid == thread.tid }?.frames ?? [] }?.tid
        self.focusTID = focus
        // Then a deadlock's other threads, in the cycle's order.
        let cycle = (record.event?.lockWaits?.cycle ?? []).map(\.tid).filter { $0 != focus }
        self.threads = all.filter { $0.thread.tid == focus } + cycle.compactMap { tid in all.first { $0.thread.tid == tid } }
            + all.filter { $0.thread.tid != focus && !cycle.contains($0.thread.tid) }
        self.waiting = record.requests?.others.map { request in
            guard let waiting = request.waiting, !waiting.resumePoints.isEmpty else { return [] }
            let points = waiting.resumePoints
            let symbols = symbolicator?.symbolicate(addresses: points, exact: points.map { _ in true }, images: record.images)
                ?? points.map { [SymbolicatedFrame(address: $0, inlined: false)] }
            return symbols.flatMap { $0 }
        } ?? []
        // A computing hang's samples: where its busy threads most often were.
        if let samples = record.event?.stackSamples {
            let addresses = Array(Set(samples.samples.flatMap(\.frames)))
            let symbols = symbolicator?.symbolicate(addresses: addresses, exact: addresses.map { _ in false }, images: record.images)
            var names: [UInt64: String] = [:]
            for (address, frames) in zip(addresses, symbols ?? []) { names[address] = frames.last(where: { !$0.inlined })?.symbol ?? frames.last?.symbol }
            self.hotFrames = samples.hottest(in: record) { names[$0] }
        } else {
            self.hotFrames = []
        }
        let warnings = record.runtimeWarnings
        self.leakedContinuations = waiting.map { frames in warnings.leakedContinuation(awaitedIn: frames.compactMap(\.symbol)) }
    }

    /// For each of `record.requests.others`, the runtime's leaked-continuation warning for the
    /// function its task waits in, when there is one: the request waits forever, since nothing
    /// can resume it (`nil`: none, or its frames have no names here).
    package var leakedContinuations: [RuntimeWarning?]

    /// Where a computing hang's sampled threads most often were, most samples first (empty: no samples).
    package var hotFrames: [(place: String, samples: Int)]

    /// The thread the record is about: the crashed one, or the one a hang names (``CrashRecord/focusThread(frames:)``).
    package var focusTID: Int32?

    /// For each of `record.requests.others`, where its task waits, innermost first (symbolicated
    /// resume points; empty when the record does not say).
    package var waiting: [[SymbolicatedFrame]]

    package var crashed: InspectedThread? { threads.first { $0.thread.tid == focusTID } }

    /// The crash's one summary (``CrashSummary``), from the crashed thread's frames as shown here.
    package var summary: CrashSummary { CrashSummary(record: record, frames: crashed?.frames ?? []) }

    /// Whether an image belongs to the system or toolchain rather than to the program.
    package static func isSystemImage(_ path: String?) -> Bool {
        guard let path else { return true }
        return path.hasPrefix("/lib") || path.hasPrefix("/usr/lib") || path.hasPrefix("/opt/swift/")
            || path.hasPrefix("/usr/libexec") || path.hasPrefix("[")
    }

    /// The innermost frame of the program's own code (not libc, not the Swift runtime).
    package var topFrameOfOurCode: SymbolicatedFrame? {
        crashed?.frames.flatMap(\.symbols).first { !Self.isSystemImage($0.image) }
    }

    /// How a frame reads in one short line: the symbol, or image+offset without one.
    package static func label(_ frame: SymbolicatedFrame) -> String {
        if let symbol = frame.symbol { return symbol }
        if let path = frame.image, let offset = frame.imageOffset { return CrashImage.offsetLabel(path: path, offset: offset) }
        let image = frame.image.map { ($0 as NSString).lastPathComponent } ?? "?"
        return "\(image) \(Explanation.hex(frame.address))"
    }

    /// A crash signature that survives ASLR and rebuilds of unrelated code: the signal and the
    /// first three frames of the program's own code by symbol (image+offset where there is none),
    /// or the first three frames at all when none is the program's. Async callers count as
    /// frames (``ThreadFrames``), so crashes in two request handlers that share their innermost
    /// code but not their callers group apart, as they do not when the executor's frames follow.
    package var signature: String {
        let all = crashed?.frames.flatMap(\.symbols) ?? []
        // CrashCapture's own thread trampoline (cc__*) is in every thread started after install.
        let ours = all.filter { !Self.isSystemImage($0.image) && !($0.symbol ?? "").hasPrefix("cc__") }
        // "closure #14 in …" renumbers when unrelated closures are added nearby: drop the numbers.
        let chosen = (ours.isEmpty ? all : ours).prefix(3).map {
            Self.label($0).replacingOccurrences(of: #"closure #\d+"#, with: "closure", options: .regularExpression)
        }
        // The C library's abort message tells apart aborts whose frames are alike (two asserts
        // in one helper, double free against heap corruption in free()).
        let abort = record.abortMessage.map { [Explanation.abortSignature($0)] } ?? []
        // A hang groups apart from every crash, by what fired and the frames it stood in.
        let head = record.event.map { "\($0.kind.rawValue) \($0.detector.name)" + ($0.fate != nil ? " killed" : "") } ?? record.signal?.name ?? "no-signal"
        return ([head] + abort + chosen).joined(separator: " | ")
    }
}
