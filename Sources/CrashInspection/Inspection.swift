// Inspection.swift — a record with its threads symbolicated: the one model show, list, groups and export read from.
package import CrashRecordFormat
package import CrashFrames
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
        // Without a symbolizer, the functions come from the images' own symbol tables (no file
        // or line), as the sinks name them.
        let local = symbolicator == nil ? ImageSymbols(images: record.images) : nil
        let all = record.threads.map { thread in
            let frames = symbolicator?.threadFrames(of: thread, images: record.images)
                ?? ThreadFrames.resolve(thread) { local!.isAsyncFunction($0) }.map {
                    var frame = $0
                    frame.symbols = [local!.named($0.address, lookup: $0.lookupAddress, in: record)]
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
                ?? points.map { [local!.named($0, lookup: $0, in: record)] }
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
        // A guarded allocation's stacks: return addresses, each named by its call.
        if let heap = record.guardedHeap {
            func named(_ addresses: [UInt64]) -> [SymbolicatedFrame] {
                let symbols = symbolicator?.symbolicate(addresses: addresses, exact: addresses.map { _ in false }, images: record.images)
                    ?? addresses.map { [local!.named($0, lookup: $0 &- 1, in: record)] }
                return symbols.flatMap { $0 }
            }
            self.guardedHeapStacks = (named(heap.allocationFrames), named(heap.freeFrames))
        } else {
            self.guardedHeapStacks = ([], [])
        }
        let warnings = record.runtimeWarnings
        self.leakedContinuations = waiting.map { frames in warnings.leakedContinuation(awaitedIn: frames.compactMap(\.symbol)) }
    }

    /// For each of `record.requests.others`, the runtime's leaked-continuation warning for the
    /// function its task waits in, when there is one: the request waits forever, since nothing
    /// can resume it (`nil`: none, or its frames have no names here).
    package var leakedContinuations: [RuntimeWarning?]

    /// A guarded heap error's allocation and free stacks, symbolicated (empty without one).
    package var guardedHeapStacks: (allocation: [SymbolicatedFrame], free: [SymbolicatedFrame])

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

    /// Whose code `frame` is (``FrameOrigin``): the program's own, a package's, the system's.
    package func origin(of frame: SymbolicatedFrame) -> FrameOrigin {
        record.origin(ofFrameAt: frame.address, mangledName: frame.mangledSymbol ?? frame.symbol)
    }

    /// The innermost frame of the program's own code (not a package it links, libc or the Swift runtime).
    package var topFrameOfOurCode: SymbolicatedFrame? {
        crashed?.frames.flatMap(\.symbols).first { origin(of: $0).isApp }
    }

    /// How a frame reads in one short line: the symbol, or image+offset without one.
    package static func label(_ frame: SymbolicatedFrame) -> String {
        if let symbol = frame.symbol { return symbol }
        if let path = frame.image, let offset = frame.imageOffset { return CrashImage.offsetLabel(path: path, offset: offset) }
        let image = frame.image.map { ($0 as NSString).lastPathComponent } ?? "?"
        return "\(image) \(Explanation.hex(frame.address))"
    }

    /// ``label(_:)`` with a Swift or C++ name in the short form Swift's backtracer prints
    /// (``SwiftDemangler/simplified(_:)``): what the text view shows.
    package static func shortLabel(_ frame: SymbolicatedFrame) -> String {
        if let mangled = frame.mangledSymbol, mangled != frame.symbol { return SwiftDemangler.simplified(mangled) }
        return label(frame)
    }

    /// The frames the crash is grouped by, and the rule that chose them (``CrashGrouping``):
    /// inlined frames count, async callers too (``ThreadFrames``), so crashes in two request
    /// handlers that share their innermost code but not their callers group apart.
    package var grouping: CrashGrouping {
        let frames = (crashed?.frames.flatMap(\.symbols) ?? []).map {
            CrashGrouping.Frame(address: $0.address, mangled: $0.mangledSymbol, name: $0.symbol)
        }
        return CrashGrouping(record: record, frames: frames)
    }

    /// A crash signature that survives ASLR and rebuilds of unrelated code: what fired (the
    /// signal, or the hang's detector), the C library's abort message, and ``grouping``'s frames.
    package var signature: String {
        // The C library's abort message tells apart aborts whose frames are alike (two asserts
        // in one helper, double free against heap corruption in free()).
        let abort = record.abortMessage.map { [Explanation.abortSignature($0)] } ?? []
        // A hang groups apart from every crash, by what fired and the frames it stood in.
        let head = record.event.map { "\($0.kind.rawValue) \($0.detector.name)" + ($0.fate != nil ? " killed" : "") } ?? record.signal?.name ?? "no-signal"
        let grouping = self.grouping
        // Without the program's own frames, the fatal message tells apart crashes in one place of
        // a package or the runtime.
        let message = grouping.rule == .appFrames || !abort.isEmpty ? [] : record.fatalMessage.flatMap(CrashSummary.firstLine).map { [$0] } ?? []
        return ([head] + abort + message + grouping.frames).joined(separator: " | ")
    }
}
