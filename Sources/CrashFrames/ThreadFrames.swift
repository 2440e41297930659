// ThreadFrames.swift — a thread's frames as a Swift backtrace shows them: the physical frames up to the first async function, then its async callers from the context chain the record holds.
package import CrashRecordFormat

/// One frame of a thread as Swift's backtracer lists it.
package struct ThreadFrame: Sendable, Equatable {
    /// What kind of address a frame is (the backtracer's JSON `kind`).
    package enum Kind: String, Sendable, Equatable, Codable {
        /// The exact pc where the thread was interrupted (frame 0 from a signal context).
        case programCounter
        /// A return address: the call before it is looked up (address - 1).
        case returnAddress
        /// Where a suspended async caller resumes: a function entry, looked up as is.
        case asyncResumePoint
    }

    /// The address as recorded.
    package var address: UInt64
    package var kind: Kind
    /// The physical frame's index in the thread's recorded frames; nil for an async frame.
    package var physicalIndex: Int?
    /// 0 for the frames of the thread's own task; 1 for its parent task's (the task that spawned
    /// it with async let or a task group, waiting for it), 2 for that one's parent, and so on.
    /// Swift's backtracer shows only depth 0.
    package var taskDepth: Int = 0
    /// The id of the task the frame belongs to, where the record names it.
    package var taskID: UInt32?
    /// The frame symbolicated; inlined code expands it to several, innermost first, the last
    /// the function the address lies in. One entry without a symbol when none is known.
    package var symbols: [SymbolicatedFrame]

    /// Creates a frame.
    package init(address: UInt64, kind: Kind, physicalIndex: Int?, symbols: [SymbolicatedFrame]) {
        self.address = address
        self.kind = kind
        self.physicalIndex = physicalIndex
        self.symbols = symbols
    }

    /// The address a symbolicator looks up for this frame: a return address less one (the call
    /// instruction), anything else as is.
    package var lookupAddress: UInt64 { kind == .returnAddress && address > 0 ? address - 1 : address }
}

/// Telling Swift async functions by their symbols.
package enum SwiftAsyncSymbol {
    /// Whether a mangled name is an async function's partial function: on Linux (no frame-pointer
    /// bit marks async frames there) Swift's backtracer tells them by the suffix `TY<n>_` (an
    /// await resume) or `TQ<n>_` (a suspend resume), and so does this.
    package static func isAsyncFunction(mangledName name: String) -> Bool {
        var utf8 = Substring(name).utf8[...]
        guard utf8.last == UInt8(ascii: "_") else { return false }
        utf8 = utf8.dropLast()
        while let last = utf8.last, last >= UInt8(ascii: "0"), last <= UInt8(ascii: "9") { utf8 = utf8.dropLast() }
        let suffix = Array(utf8.suffix(2))
        return suffix == Array("TY".utf8) || suffix == Array("TQ".utf8)
    }
}

/// The one rule that turns a thread's recorded frames into the frames a Swift backtrace shows.
package enum ThreadFrames {
    /// The thread's frames as Swift's backtracer shows them, not yet symbolicated.
    ///
    /// Physical frames come first, up to and including the first one whose function is a Swift
    /// async partial function; after it come the resume points of the async context chain the
    /// record holds for that frame (``AsyncContextChain``), outermost last, as
    /// `asyncResumePoint` frames. Where the record has no chain for it, or the chain does not
    /// resume in async code (a runtime layout this reader does not understand, or a candidate
    /// that only looked like a context), the physical frames go on as recorded. Frame 0's async
    /// context register is tried after its frame pointer (a partial function that set up no
    /// frame record of its own).
    ///
    /// - Parameter isAsyncFunction: for addresses to look up (a return address already less
    ///   one), whether each lies in a Swift async partial function (its symbol's name ends in
    ///   `TY<n>_` or `TQ<n>_`, ``SwiftAsyncSymbol``); false where no name is known.
    package static func resolve(_ thread: CrashThread, isAsyncFunction: ([UInt64]) -> [Bool]) -> [ThreadFrame] {
        let physical = thread.frames.enumerated().map { index, address in
            ThreadFrame(address: address, kind: index == 0 && thread.framesFromSignalContext ? .programCounter : .returnAddress,
                        physicalIndex: index, symbols: [])
        }
        guard !thread.asyncChains.isEmpty else { return physical }
        // Frames of a stack cut in the middle (runaway recursion) never lead to async callers.
        let candidates = physical.prefix(thread.innermostFrameCount).filter { frame in
            thread.asyncChains.contains { $0.frameIndex == frame.physicalIndex }
        }
        let flags = isAsyncFunction(candidates.map(\.lookupAddress))
        guard let first = zip(candidates, flags).first(where: { $0.1 })?.0, let index = first.physicalIndex else { return physical }
        let sources: [AsyncContextChain.Source] = index == 0 ? [.framePointer, .contextRegister] : [.framePointer]
        for source in sources {
            guard let chain = thread.asyncChain(atFrame: index, source: source) else { continue }
            let links = thread.asyncLinks(from: chain.firstContext)
            let resumes = links.map(\.resume)
            guard !resumes.isEmpty else { continue }
            // Taken when it resumes in async code (a chain of one link is the task's entry).
            let resumesInAsyncCode = isAsyncFunction(resumes).contains(true) || (links.count == 1 && links[0].parent == 0)
            guard resumesInAsyncCode else { continue }
            var frames = Array(physical.prefix(index + 1)) + resumes.map {
                ThreadFrame(address: $0, kind: .asyncResumePoint, physicalIndex: nil, symbols: [])
            }
            frames += parentTaskFrames(thread, root: links.last, frames: &frames, isAsyncFunction: isAsyncFunction)
            return frames
        }
        return physical
    }

    /// Beyond the backtracer: when the chain is whole and its task is a child task, the parent
    /// that spawned it, where it waits (its resume point, when that is an async function and not
    /// a runtime adapter) and its own chain; then that task's parent, and so on. Marks the
    /// frames already taken with their task's id.
    static func parentTaskFrames(_ thread: CrashThread, root: AsyncContextChain.Link?, frames: inout [ThreadFrame],
                                 isAsyncFunction: ([UInt64]) -> [Bool]) -> [ThreadFrame] {
        var added: [ThreadFrame] = []
        var root = root
        var depth = 0
        var seenTasks: Set<UInt64> = []
        while let last = root, last.parent == 0, let task = thread.asyncTask(firstContext: last.context), seenTasks.insert(task.task).inserted {
            if depth == 0 {
                for index in frames.indices { frames[index].taskID = task.id }
            }
            guard let parent = task.parent, parent != 0 else { break }
            depth += 1
            let links = thread.asyncLinks(from: task.parentContext)
            // A parent waiting on a continuation resumes where its context resumes too: once.
            let own = task.parentResume != links.first?.resume && isAsyncFunction([task.parentResume]).first == true
            let resumes = (own ? [task.parentResume] : []) + links.map(\.resume)
            added += resumes.map {
                var frame = ThreadFrame(address: $0, kind: .asyncResumePoint, physicalIndex: nil, symbols: [])
                frame.taskDepth = depth
                frame.taskID = task.parentID
                return frame
            }
            root = links.last
        }
        return added
    }
}
