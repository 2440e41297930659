// RecordEvent.swift — a record that is not a crash: a live process's hang or snapshot
// (`CC_SEC_EVENT`), and where each request's task waits (`CC_SEC_REQUEST_TASK`).
import CCrashRecordLayout

/// What became of a hang record's process while the hang was open (`CC_SEC_FATE`): it was
/// killed (a liveness probe's SIGKILL, the end of a grace period, the OOM killer).
package struct RecordFate: Sendable, Equatable {
    /// Its memory cgroup's OOM killer counted a kill since the run began.
    package var oom: Bool
    /// When the run was last seen alive (Unix ms): it died within 2 s after. nil: not known.
    package var lastSeenWallMilliseconds: Int64?
    /// From the record's time to that sighting: how long, at least, the hang went on before the
    /// kill. nil: not known.
    package var lastSeenAfterMilliseconds: Int64?

    package init(oom: Bool, lastSeenWallMilliseconds: Int64?, lastSeenAfterMilliseconds: Int64?) {
        self.oom = oom
        self.lastSeenWallMilliseconds = lastSeenWallMilliseconds
        self.lastSeenAfterMilliseconds = lastSeenAfterMilliseconds
    }

    /// "killed while hung, at least 41.2 s after this record" (or "… by the OOM killer …").
    package var summary: String { summary(of: .hang) }

    /// The fate of a record of `kind`: a memory record's run was killed for memory.
    package func summary(of kind: RecordKind) -> String {
        var text = kind == .memory ? (oom ? "killed by the OOM killer" : "killed") : oom ? "killed by the OOM killer while hung" : "killed while hung"
        if let after = lastSeenAfterMilliseconds { text += ", at least \(RecordEvent.seconds(UInt64(max(0, after)))) after this record" }
        return text
    }
}

/// What a record is of.
public enum RecordKind: String, Sendable, Equatable, CaseIterable {
    /// The process died of a signal (a record without an event section).
    case crash
    /// The process was stuck and lived on: a hang detector fired.
    case hang
    /// The process was running and a record of it was asked for.
    case snapshot
    /// The process's memory cgroup came near its limit (the memory watch) and it lived on.
    case memory
}

/// One thread as the scheduler had it just before a hang or snapshot record stopped the threads
/// (`CC_SEC_THREAD_STATES`).
package struct ThreadScheduling: Sendable, Equatable {
    package var tid: Int32
    /// The scheduler's letter: R running, S sleeping, D disk wait, T stopped, …
    package var state: Character
    /// CPU time (user + system) in the window before the record, and in all.
    package var windowCPUMilliseconds: UInt32
    package var cpuMilliseconds: UInt64
    /// CPU time since the stall began (``RecordEvent/stallCPUSpanMilliseconds`` says over how long).
    package var stallCPUMilliseconds: UInt32

    package init(tid: Int32, state: Character, windowCPUMilliseconds: UInt32, cpuMilliseconds: UInt64, stallCPUMilliseconds: UInt32 = 0) {
        self.tid = tid
        self.state = state
        self.windowCPUMilliseconds = windowCPUMilliseconds
        self.cpuMilliseconds = cpuMilliseconds
        self.stallCPUMilliseconds = stallCPUMilliseconds
    }

    /// "running", "sleeping", "disk wait", …
    package var stateName: String {
        switch state {
        case "R": return "running"
        case "S": return "sleeping"
        case "D": return "disk wait"
        case "T", "t": return "stopped"
        case "Z": return "zombie"
        case "I": return "idle"
        default: return "state \(state)"
        }
    }
}

/// What the threads did in the window before a hang or snapshot record: busy or waiting.
package struct ThreadStates: Sendable, Equatable {
    package var windowMilliseconds: UInt32
    package var threads: [ThreadScheduling]

    package init(windowMilliseconds: UInt32, threads: [ThreadScheduling]) {
        self.windowMilliseconds = windowMilliseconds
        self.threads = threads
    }

    /// The threads on the CPU for at least a quarter of the window (a quarter, not all of it: on a
    /// loaded machine a thread that computes shares its core).
    package var busy: [ThreadScheduling] { threads.filter { UInt64($0.windowCPUMilliseconds) * 4 >= UInt64(windowMilliseconds) } }

    /// `computing` when some thread was on the CPU for at least a quarter of the window, else `waiting`.
    package var verdict: String { busy.isEmpty ? "waiting" : "computing" }

    /// "computing: 2 threads on the CPU through the 200 ms before the record" /
    /// "waiting: no thread on the CPU for a quarter of the 200 ms before the record".
    package var summary: String {
        let count = busy.count
        return count == 0
            ? "waiting: no thread on the CPU for a quarter of the \(windowMilliseconds) ms before the record"
            : "computing: \(count) thread\(count == 1 ? "" : "s") on the CPU through the \(windowMilliseconds) ms before the record"
    }

    package func of(_ tid: Int32) -> ThreadScheduling? { threads.first { $0.tid == tid } }

    /// "since the stall began (5.2 s before the record) the threads used 9.8 s of CPU; most thread
    /// 4012, 4.9 s" — given the span the stall CPU times cover.
    package func stallSummary(span milliseconds: UInt32) -> String {
        let total = threads.reduce(UInt64(0)) { $0 + UInt64($1.stallCPUMilliseconds) }
        var text = "since the stall began (\(RecordEvent.seconds(UInt64(milliseconds))) before the record) the threads used "
            + "\(RecordEvent.seconds(total)) of CPU"
        if let most = threads.max(by: { $0.stallCPUMilliseconds < $1.stallCPUMilliseconds }), most.stallCPUMilliseconds > 0 {
            text += "; most thread \(most.tid), \(RecordEvent.seconds(UInt64(most.stallCPUMilliseconds)))"
        }
        return text
    }
}

/// A thread blocked in futex(2) before a hang or snapshot record: the word it waited on, the lock
/// that word belongs to and its holder, where the lock's layout says (`CC_SEC_LOCK_WAITS`).
package struct LockWait: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        case futex, mutex, robustMutex, priorityInheritanceMutex, rwlockWriter, rwlockReaders, priorityInheritanceFutex
        case unknown(UInt32)

        init(raw: UInt32) {
            switch raw {
            case CC_LOCK_FUTEX.rawValue: self = .futex
            case CC_LOCK_MUTEX.rawValue: self = .mutex
            case CC_LOCK_MUTEX_ROBUST.rawValue: self = .robustMutex
            case CC_LOCK_MUTEX_PI.rawValue: self = .priorityInheritanceMutex
            case CC_LOCK_RWLOCK_WRITER.rawValue: self = .rwlockWriter
            case CC_LOCK_RWLOCK_READERS.rawValue: self = .rwlockReaders
            case CC_LOCK_PI_FUTEX.rawValue: self = .priorityInheritanceFutex
            default: self = .unknown(raw)
            }
        }

        /// The name `show --json` and the sinks give it.
        package var name: String {
            switch self {
            case .futex: return "futex"
            case .mutex: return "mutex"
            case .robustMutex: return "robust_mutex"
            case .priorityInheritanceMutex: return "pi_mutex"
            case .rwlockWriter: return "rwlock_writer"
            case .rwlockReaders: return "rwlock_readers"
            case .priorityInheritanceFutex: return "pi_futex"
            case .unknown(let raw): return "unknown_\(raw)"
            }
        }
    }

    package var tid: Int32
    package var kind: Kind
    /// The lock's holder (nil: no holder, or none the lock records).
    package var holder: Int32?
    /// The holder the lock names is no thread of the process: it ended holding the lock.
    package var holderGone: Bool
    /// The lock's words could not be read (freed meanwhile).
    package var unreadable: Bool
    /// The lock was free when read: the thread was about to wake.
    package var released: Bool
    package var futexAddress: UInt64
    package var lockAddress: UInt64
    package var futexOperation: UInt32
    package var futexValue: UInt32
    /// The lock's first 32 bytes as read.
    package var words: [UInt32]

    package init(tid: Int32, kind: Kind, holder: Int32?, holderGone: Bool = false, unreadable: Bool = false, released: Bool = false,
                 futexAddress: UInt64, lockAddress: UInt64, futexOperation: UInt32 = 0, futexValue: UInt32 = 0, words: [UInt32] = []) {
        self.tid = tid
        self.kind = kind
        self.holder = holder
        self.holderGone = holderGone
        self.unreadable = unreadable
        self.released = released
        self.futexAddress = futexAddress
        self.lockAddress = lockAddress
        self.futexOperation = futexOperation
        self.futexValue = futexValue
        self.words = words
    }

    /// What the lock is, in words: "a mutex", "an rwlock", "a condition variable"
    /// (a futex with no owner, named from `frameNames`, the waiting thread's symbols innermost first).
    package func what(frameNames: [String] = []) -> String {
        switch kind {
        case .mutex:
            let type = words.count > 4 ? words[4] & 3 : 0
            return ["a mutex", "a recursive mutex", "an error-checking mutex", "an adaptive mutex"][Int(type)]
        case .robustMutex: return "a robust mutex"
        case .priorityInheritanceMutex: return "a priority-inheritance mutex"
        case .rwlockWriter: return "an rwlock"
        case .rwlockReaders: return "an rwlock held by \(words.first.map { $0 >> 3 } ?? 0) readers"
        case .priorityInheritanceFutex:
            return frameNames.contains { $0.contains("Synchronization") && $0.contains("Mutex") }
                ? "a Synchronization.Mutex" : "a priority-inheritance lock (Synchronization.Mutex, or one of its kind)"
        case .futex, .unknown:
            if frameNames.contains(where: { $0.contains("pthread_cond_") || $0.contains("cond_wait") }) { return "a condition variable" }
            if frameNames.contains(where: { $0.hasPrefix("sem_") || $0.contains("sem_wait") || $0.contains("sem_timedwait") }) { return "a semaphore" }
            if frameNames.contains(where: { $0.contains("pthread_join") || $0.contains("pthread_clockjoin") }) { return "a thread's end (pthread_join)" }
            return "a futex with no owner"
        }
    }

    /// "waits on a mutex at 0x5581… held by thread 4012 \"worker\"".
    package func description(holderName: String? = nil, frameNames: [String] = []) -> String {
        var text = "waits on \(what(frameNames: frameNames)) at 0x\(String(lockAddress, radix: 16))"
        if unreadable { return text + " (its words could not be read)" }
        if let holder {
            text += kind == .rwlockWriter ? " held for writing by thread \(holder)" : " held by thread \(holder)"
            if let holderName, !holderName.isEmpty { text += " \"\(holderName)\"" }
            if holderGone { text += ", which has ended (it never unlocked it)" }
        } else if released {
            text += " (free when read: about to wake)"
        }
        return text
    }
}

/// The threads blocked on locks before a hang or snapshot record, and the deadlock among them.
package struct LockWaits: Sendable, Equatable {
    package var waits: [LockWait]
    /// The deadlock's threads, first in `waits` (each waits on a lock the next one holds); 0: none.
    package var cycleLength: Int

    package init(waits: [LockWait], cycleLength: Int) {
        self.waits = waits
        self.cycleLength = cycleLength
    }

    package var cycle: [LockWait] { Array(waits.prefix(cycleLength)) }
    package func of(_ tid: Int32) -> LockWait? { waits.first { $0.tid == tid } }
}

/// A computing hang's busy threads, stopped and unwound a few times over a second before the
/// record (`CC_SEC_STACK_SAMPLES`).
package struct StackSamples: Sendable, Equatable {
    package struct Sample: Sendable, Equatable {
        package var tid: Int32
        package var round: UInt32
        /// Innermost first: the first exact, the others return addresses.
        package var frames: [UInt64]

        package init(tid: Int32, round: UInt32, frames: [UInt64]) {
            self.tid = tid
            self.round = round
            self.frames = frames
        }
    }

    package var rounds: UInt32
    package var intervalMilliseconds: UInt32
    package var samples: [Sample]

    package init(rounds: UInt32, intervalMilliseconds: UInt32, samples: [Sample]) {
        self.rounds = rounds
        self.intervalMilliseconds = intervalMilliseconds
        self.samples = samples
    }
}

/// What the memory watch saw (`CC_SEC_MEMORY_WATCH`).
package struct RecordMemoryWatch: Sendable, Equatable {
    package var usage: UInt64
    package var limit: UInt64
    /// v2's `memory.high` (throttling starts there), not the hard limit.
    package var limitIsHigh: Bool
    package var isV2: Bool
    /// Usage now less usage `growthSeconds` ago (the last minute's oldest sample).
    package var growth: Int64
    package var growthSeconds: UInt32
    /// memory.stat's split, when read.
    package var anon: UInt64?, file: UInt64?, shmem: UInt64?
    /// glibc's mallinfo2, when read: held from the system, handed out, held and free, in chunks of their own.
    package var mallocArena: UInt64?, mallocInUse: UInt64?, mallocFree: UInt64?, mallocMmapped: UInt64?
    package var threads: UInt32
    package var thresholdPercent: UInt32

    package init(usage: UInt64, limit: UInt64, limitIsHigh: Bool = false, isV2: Bool = false, growth: Int64 = 0, growthSeconds: UInt32 = 0,
                 threads: UInt32 = 0, thresholdPercent: UInt32 = 90) {
        self.usage = usage
        self.limit = limit
        self.limitIsHigh = limitIsHigh
        self.isV2 = isV2
        self.growth = growth
        self.growthSeconds = growthSeconds
        self.threads = threads
        self.thresholdPercent = thresholdPercent
    }

    /// "290 of 320 MiB (91 %), +41 MiB in 60 s".
    package var headline: String {
        Self.headline(usage: usage, limit: limit, growth: growth, growthSeconds: growthSeconds)
    }

    package static func headline(usage: UInt64, limit: UInt64, growth: Int64, growthSeconds: UInt32) -> String {
        var text = "\(mebibytes(usage)) of \(mebibytes(limit)) MiB (\(limit == 0 ? 0 : usage * 100 / limit) %)"
        if growthSeconds > 0 { text += ", \(growth >= 0 ? "+" : "−")\(mebibytes(UInt64(growth.magnitude))) MiB in \(growthSeconds) s" }
        return text
    }

    package static func mebibytes(_ bytes: UInt64) -> UInt64 { (bytes + (1 << 19)) >> 20 }
}

/// Why a record of a live process was written (`CC_SEC_EVENT`).
package struct RecordEvent: Sendable, Equatable {
    /// Which detector fired (`CC_DETECTOR_*`).
    package enum Detector: Sendable, Equatable {
        case none, pool, eventLoop, request, shutdown, heartbeat, memory, deadlock
        case unknown(UInt32)

        init(raw: UInt32) {
            switch raw {
            case CC_DETECTOR_NONE.rawValue: self = .none
            case CC_DETECTOR_POOL.rawValue: self = .pool
            case CC_DETECTOR_EVENT_LOOP.rawValue: self = .eventLoop
            case CC_DETECTOR_REQUEST.rawValue: self = .request
            case CC_DETECTOR_SHUTDOWN.rawValue: self = .shutdown
            case CC_DETECTOR_HEARTBEAT.rawValue: self = .heartbeat
            case CC_DETECTOR_MEMORY.rawValue: self = .memory
            case CC_DETECTOR_DEADLOCK.rawValue: self = .deadlock
            default: self = .unknown(raw)
            }
        }

        /// The name `show --json` and the sinks give it.
        package var name: String {
            switch self {
            case .none: return "snapshot"
            case .pool: return "cooperative_pool"
            case .eventLoop: return "event_loop"
            case .request: return "request"
            case .shutdown: return "shutdown"
            case .heartbeat: return "heartbeat"
            case .memory: return "memory"
            case .deadlock: return "deadlock"
            case .unknown(let raw): return "unknown_\(raw)"
            }
        }
    }

    package var kind: RecordKind
    package var detector: Detector
    package var thresholdMilliseconds: UInt64
    package var observedMilliseconds: UInt64
    /// The stuck request's key (detector `request`), matching a ``CrashRequest/key``.
    package var requestKey: UInt64?
    /// The thread the detector names (an event loop's), if any.
    package var blockedThread: Int32?
    package var stoppedMicroseconds: UInt32
    package var threadsStopped: UInt32
    /// What fired, or why it was asked for.
    package var name: String
    /// What became of the process while this hang was still open (`CC_SEC_FATE`, added by a later
    /// launch): nil while nothing is known of it (it lived on, or recovered).
    package var fate: RecordFate?
    /// A memory record's readings (`CC_SEC_MEMORY_WATCH`).
    package var memory: RecordMemoryWatch?
    /// Each thread's scheduler state and CPU time before a hang or snapshot record (`CC_SEC_THREAD_STATES`).
    package var threadStates: ThreadStates?
    /// The threads blocked on locks, their holders, and a deadlock among them (`CC_SEC_LOCK_WAITS`).
    package var lockWaits: LockWaits?
    /// A computing hang's busy threads sampled over a second (`CC_SEC_STACK_SAMPLES`).
    package var stackSamples: StackSamples?
    /// What each thread's ``ThreadScheduling/stallCPUMilliseconds`` covers: from the hang
    /// watcher's tick before the stall began to the record; nil in a record without them.
    package var stallCPUSpanMilliseconds: UInt32?

    package init(kind: RecordKind, detector: Detector, thresholdMilliseconds: UInt64 = 0, observedMilliseconds: UInt64 = 0,
                 requestKey: UInt64? = nil, blockedThread: Int32? = nil, stoppedMicroseconds: UInt32 = 0,
                 threadsStopped: UInt32 = 0, name: String = "") {
        self.kind = kind
        self.detector = detector
        self.thresholdMilliseconds = thresholdMilliseconds
        self.observedMilliseconds = observedMilliseconds
        self.requestKey = requestKey
        self.blockedThread = blockedThread
        self.stoppedMicroseconds = stoppedMicroseconds
        self.threadsStopped = threadsStopped
        self.name = name
    }

    /// One line that says what happened: "the cooperative pool's heartbeat ran 7.2 s late
    /// (threshold 2 s)".
    package var summary: String {
        let observed = Self.seconds(observedMilliseconds), threshold = Self.seconds(thresholdMilliseconds)
        switch detector {
        case .none: return name.isEmpty ? "a snapshot of the running process" : "a snapshot of the running process (\(name))"
        case .pool: return "the cooperative pool's heartbeat ran \(observed) late (threshold \(threshold))"
        case .eventLoop: return "\(name.isEmpty ? "an event loop" : name) did not run for \(observed) (threshold \(threshold))"
        case .heartbeat: return "heartbeat \(name) did not beat for \(observed) (threshold \(threshold))"
        case .request: return "a request was in flight for \(observed) (threshold \(threshold))"
        case .shutdown: return "the graceful shutdown had not ended after \(observed) (threshold \(threshold))"
        case .memory: return memory.map { "memory at \($0.headline)" } ?? "memory at its cgroup's limit (no reading: told from the run's ledger)"
        case .deadlock:
            let threads = lockWaits?.cycle.map { String($0.tid) } ?? []
            let who = threads.count == 1 ? "thread \(threads[0]) waits on a lock it holds itself"
                : threads.isEmpty ? "threads wait on each other's locks"
                : "threads \(threads.dropLast().joined(separator: ", ")) and \(threads.last!) wait on each other's locks"
            return "\(who) (seen for \(observed))"
        case .unknown(let raw): return "detector \(raw) fired (\(name)): \(observed), threshold \(threshold)"
        }
    }

    package static func seconds(_ milliseconds: UInt64) -> String {
        if milliseconds < 1000 { return "\(milliseconds) ms" }
        let tenths = (milliseconds + 50) / 100
        return tenths % 10 == 0 ? "\(tenths / 10) s" : "\(tenths / 10).\(tenths % 10) s"
    }
}

/// Where a request's task will resume (`CC_SEC_REQUEST_TASK`): the function it resumes in, and
/// the chain of its callers.
package struct SuspendedTask: Sendable, Equatable {
    package enum Status: Sendable, Equatable {
        /// Read from the task.
        case read
        /// The runtime's task layout is not known in that process.
        case layoutUnknown
        /// The key did not read as a task (it ended, or its memory was reused).
        case notATask
        case unknown(UInt32)
    }
    package var status: Status
    /// ResumeTask: the function the task resumes in (the awaiting function's continuation).
    package var resume: UInt64
    package var context: UInt64
    package var taskID: UInt32
    package var jobFlags: UInt32
    /// Its callers: each link's `resume` is where a caller resumes.
    package var chain: AsyncContextChain?

    package init(status: Status, resume: UInt64 = 0, context: UInt64 = 0, taskID: UInt32 = 0, jobFlags: UInt32 = 0,
                 chain: AsyncContextChain? = nil) {
        self.status = status
        self.resume = resume
        self.context = context
        self.taskID = taskID
        self.jobFlags = jobFlags
        self.chain = chain
    }

    /// The resume points from the innermost (where it waits) out: what a reader symbolicates.
    package var resumePoints: [UInt64] {
        guard status == .read, resume != 0 else { return [] }
        // The task resumes where its innermost context's caller does when that function has no
        // context of its own to resume (a continuation): the same address twice is one frame.
        var points = [resume]
        for link in chain?.links ?? [] where link.resume != points.last { points.append(link.resume) }
        return points
    }
}

extension CrashRecord {
    /// What the record is of: a crash, unless an event section says it is a hang or a snapshot.
    public var kind: RecordKind { event?.kind ?? .crash }
}
