// JSONOutput.swift — crash-inspect's JSON shapes as types (show's schema, the groups), the one
// encoder every --json output is written with, and the two helpers they need: an explicit null and
// any JSON value (the record's $AppEnd, shown as it parses).
package import CrashRecordFormat
package import CrashSymbolication
import Foundation

/// A value written as JSON `null` when absent (a key the schema always has), where a plain
/// optional would leave the key out.
package struct Nullable<Wrapped: Encodable & Sendable>: Encodable, Sendable, ExpressibleByNilLiteral {
    package var value: Wrapped?

    package init(_ value: Wrapped?) { self.value = value }
    package init(nilLiteral: ()) { value = nil }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let value { try container.encode(value) } else { try container.encodeNil() }
    }
}

extension Rendering {
    /// Pretty, key-sorted JSON text: the one encoder of every `--json` output.
    package static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// `show --json`'s text (the object of ``json(_:)``).
    package static func jsonText(_ inspection: Inspection) -> String { encode(json(inspection)) }
}

/// The `show --json` object, schema version 1 (docs/inspector.md). Every key is always present;
/// what the record does not hold is `null`.
package struct ShowJSON: Encodable, Sendable {
    package var schemaVersion = 1
    package var id: String
    package var file: String
    /// `crash`, `hang` or `snapshot` (``RecordKind``).
    package var kind: String
    /// What fired (a hang) or why it was asked for (a snapshot); null for a crash.
    package var event: Nullable<Event>
    package var complete: Bool
    package var incompleteReason: Nullable<String>
    package var summary: String
    package var explanation: String
    package var message: Nullable<String>
    package var abortMessage: Nullable<String>
    /// What the Swift runtime reported before the crash that is not its message (a leaked
    /// continuation's warning), each once: never part of `message` or `summary`.
    package var runtimeWarnings: [RuntimeWarningJSON]
    package var app: App
    package var notes: [String]
    package var signal: Nullable<Int>
    package var signalName: Nullable<String>
    package var code: Nullable<Int>
    package var codeName: Nullable<String>
    package var codeDescription: Nullable<String>
    package var faultAddress: Nullable<String>
    package var sender: Nullable<Sender>
    package var process: Nullable<Process>
    package var threads: [Thread]
    package var registers: [String: String]
    package var memory: [Memory]
    package var breadcrumbs: [Breadcrumb]
    package var images: [Image]
    /// The record's `$AppEnd` as it parses, its text when it does not, null without one.
    package var appEnd: Nullable<JSONValue>
    /// The requests in flight and the one the crashed thread was serving; null when the
    /// program attaches no `CrashContext`.
    package var requests: Nullable<Requests>
    /// The app's scope at the crash; null when none was set.
    package var scope: Nullable<Scope>
    /// What the process had and was allowed at the crash; null in a record of an older writer.
    package var resources: Nullable<Resources>
    /// The uncaught C++ exception that ended in std::terminate; null when there was none.
    package var cxxException: Nullable<CxxExceptionJSON>
    /// The memory error the guarded heap caught; null when the crash is not one.
    package var guardedHeap: Nullable<GuardedHeapJSON>

    /// `guardedHeap`.
    package struct GuardedHeapJSON: Encodable, Sendable {
        /// AddressSanitizer's name: `heap-use-after-free`, `heap-buffer-overflow`,
        /// `heap-buffer-underflow`, `double-free`, `invalid-free`, `wild-access`.
        package var error: String
        package var summary: String
        /// The faulting address, or the pointer given to free.
        package var accessAddress: String
        package var allocationAddress: Nullable<String>
        package var allocationSize: Nullable<UInt64>
        /// From the allocation's first byte (negative: before it).
        package var offset: Nullable<Int64>
        package var allocationThread: Int
        /// Null when the allocation was not freed.
        package var freeThread: Nullable<Int>
        /// Innermost first.
        package var allocationStack: [StackFrame]
        package var freeStack: [StackFrame]
    }

    /// A frame of a stack kept beside a thread's (the guarded heap's allocation and free).
    package struct StackFrame: Encodable, Sendable {
        package var address: String
        package var image: Nullable<String>
        package var imageOffset: Nullable<String>
        package var symbol: Nullable<String>
        package var shortSymbol: Nullable<String>
        package var file: Nullable<String>
        package var line: Nullable<Int>
        package var inlined: Bool
        package var inApp: Bool
    }

    /// `cxxException`.
    package struct CxxExceptionJSON: Encodable, Sendable {
        /// As C++ spells it ("std::runtime_error"); null for std::terminate with no exception.
        package var type: Nullable<String>
        package var mangledType: Nullable<String>
        /// what()'s text; null when there is none.
        package var what: Nullable<String>
        /// `what`, `whatThrew`, `notStdException`, `noException` or `inFlight` (found thrown and not
        /// caught on the crashed thread's stack; no terminate handler ran, what() not read).
        package var whatState: String
        package var summary: String
    }

    /// `resources`: each figure null when it could not be read; bytes as numbers.
    package struct Resources: Encodable, Sendable {
        /// What stands out (``CrashResources/findings``), worst first.
        package var findings: [String]
        package var residentBytes: Nullable<UInt64>
        package var peakResidentBytes: Nullable<UInt64>
        package var threads: Nullable<Int>
        package var openDescriptors: Nullable<Int>
        /// RLIMIT_NOFILE (soft, hard); null: unlimited or unknown.
        package var descriptorLimit: Nullable<UInt64>
        package var descriptorHardLimit: Nullable<UInt64>
        package var cgroup: Nullable<Cgroup>
        package var cpuCount: Nullable<Int>
        /// x86-64: "GenuineIntel family 6 model 85 stepping 7"; aarch64: "implementer 0x41 part 0xd0c r0p1".
        package var cpu: Nullable<String>
        package var load: Nullable<[Double]>
        package var machineMemoryBytes: Nullable<UInt64>
        package var machineMemoryAvailableBytes: Nullable<UInt64>
    }

    /// The process's memory cgroup.
    package struct Cgroup: Encodable, Sendable {
        package var version: Int
        package var directory: String
        package var memoryBytes: Nullable<UInt64>
        /// null: no limit.
        package var memoryLimitBytes: Nullable<UInt64>
        /// `memory.events` (v2) or `memory.oom_control` (v1) counters.
        package var events: [String: UInt64]
    }

    package struct Scope: Encodable, Sendable {
        package var tags: [String: String]
        /// The user's fields by Sentry's names (`id`, `username`, `email`, `ip_address`).
        package var user: Nullable<[String: String]>
        package var contexts: [String: [String: String]]
    }

    package struct Requests: Encodable, Sendable {
        /// How the crashed thread's request was told: `task`, `noTask`, `unknown`, `other N`.
        package var status: String
        /// The crashed thread's task (status `task`).
        package var currentTask: Nullable<String>
        /// In flight at the crash, the crashed one included.
        package var inFlight: Int
        /// Contexts that could not be attached since start (the table was full).
        package var dropped: Int
        /// The request the crashed thread was serving; null when none can be named.
        package var crashed: Nullable<Request>
        /// The others, most recent first.
        package var others: [Request]
    }

    package struct Request: Encodable, Sendable {
        package var requestID: String
        package var method: String
        package var route: String
        package var path: String
        package var query: String
        /// `GET /orders/{id}`: the method and the route, else the path.
        package var label: String
        package var traceID: Nullable<String>
        package var spanID: Nullable<String>
        package var parentSpanID: Nullable<String>
        package var sampled: Bool
        package var attributes: [String: String]
        /// Attached to a thread rather than a task.
        package var threadContext: Bool
        package var startTime: String
        /// Seconds in flight at the crash.
        package var ageSeconds: Nullable<Double>
        /// In a record of a live process, where its task waits: the function it resumes in, then
        /// its callers (empty when not known; `waitingNote` says why).
        package var waiting: [WaitingFrame]
        package var waitingNote: Nullable<String>
        /// The runtime's leaked-continuation warning for the function it waits in: nothing can
        /// resume it (null: none).
        package var leakedContinuation: Nullable<String>
    }

    package struct WaitingFrame: Encodable, Sendable {
        package var address: String
        package var symbol: Nullable<String>
        package var file: Nullable<String>
        package var line: Nullable<Int>
        /// The program's own code (see ``Frame/inApp``).
        package var inApp: Bool
    }

    package struct Event: Encodable, Sendable {
        /// `cooperative_pool`, `event_loop`, `request`, `shutdown`, `heartbeat`, `snapshot`.
        package var detector: String
        package var name: String
        package var thresholdMilliseconds: UInt64
        package var observedMilliseconds: UInt64
        /// The stuck request's id (detector `request`), when the record lists it.
        package var requestID: Nullable<String>
        /// The thread the record is about (an event loop's; in a starved pool, one running a task).
        package var blockedThread: Nullable<Int>
        package var stoppedMicroseconds: UInt32
        package var threadsStopped: UInt32
        /// A hang the process was killed in (a later launch said so): null while nothing is known.
        package var fate: Nullable<Fate>
        /// A memory record's readings (the memory watch): null in any other record.
        package var memory: Nullable<MemoryWatch>
        /// `computing` or `waiting`: whether a thread was on the CPU for a quarter of the window before the record.
        package var stall: Nullable<String>
        /// What each thread's `scheduling.stallCPUMilliseconds` covers: from the watcher's tick
        /// before the stall began to the record; null when the record has none (a snapshot).
        package var stallCPUSpanMilliseconds: Nullable<UInt32>
        /// The threads of a deadlock, in order (each waits on a lock the next one holds); null: none found.
        package var deadlock: Nullable<[Int]>
        /// A computing hang's busy threads sampled over a second: where they most often were,
        /// most samples first; null when no samples were taken (a waiting stall, a snapshot).
        package var hotFrames: Nullable<[HotFrame]>
    }

    /// A place the sampled threads were in: the program's innermost function and its caller.
    package struct HotFrame: Encodable, Sendable {
        package var place: String
        package var samples: Int
        /// All the samples taken.
        package var of: Int
    }

    /// The lock a blocked thread waited on (`CC_SEC_LOCK_WAITS`).
    package struct LockWaitJSON: Encodable, Sendable {
        /// `mutex`, `robust_mutex`, `pi_mutex`, `rwlock_writer`, `rwlock_readers`, `pi_futex`, `futex`.
        package var kind: String
        /// In words: "a recursive mutex", "a condition variable", …
        package var what: String
        package var address: String
        package var futexAddress: String
        package var holderTid: Nullable<Int>
        package var holderName: Nullable<String>
        /// The holder the lock names has ended (it never unlocked it).
        package var holderEnded: Bool
        /// The lock was free when read (the thread was about to wake).
        package var released: Bool
        /// Its words could not be read.
        package var unreadable: Bool
        /// Whether this thread is one of the event's deadlock.
        package var inDeadlock: Bool
    }

    /// What the memory watch saw (`CC_SEC_MEMORY_WATCH`), in bytes.
    package struct MemoryWatch: Encodable, Sendable {
        package var usage: UInt64
        package var limit: UInt64
        /// The limit is v2's `memory.high` (throttling), not `memory.max`.
        package var limitIsHigh: Bool
        package var growth: Int64
        package var growthSeconds: UInt32
        package var anon: Nullable<UInt64>, file: Nullable<UInt64>, shmem: Nullable<UInt64>
        package var mallocInUse: Nullable<UInt64>, mallocFree: Nullable<UInt64>
        package var threads: UInt32
    }

    /// What became of a hang's process (`CC_SEC_FATE`).
    package struct Fate: Encodable, Sendable {
        /// `killed`, or `killed_oom` (its memory cgroup's OOM killer).
        package var state: String
        /// When the run was last seen alive (Unix ms): it died within 2 s after.
        package var lastSeenWallMilliseconds: Nullable<Int64>
        /// From the record to that sighting: how long, at least, the hang went on.
        package var lastSeenAfterMilliseconds: Nullable<Int64>
    }

    package struct App: Encodable, Sendable {
        package var name: Nullable<String>
        package var version: Nullable<String>
    }

    package struct Sender: Encodable, Sendable {
        package var pid: Int
        package var uid: Int
    }

    package struct Process: Encodable, Sendable {
        package var pid, tid, ppid, uid: Int
        package var threadName: String
        package var executable: Nullable<String>
        package var startTime: String
        package var crashTime: String
        package var uptimeSeconds: Double
    }

    package struct Thread: Encodable, Sendable {
        package var tid: Int
        package var name: String
        package var crashed: Bool
        package var stackAvailable: Bool
        package var truncated: Bool
        /// How the stack was obtained (``Rendering/stackSource(_:)``).
        package var stack: String
        package var alsoCrashed: Bool
        package var omittedFrames: Int
        package var registers: [String: String]
        /// In a hang or snapshot: the scheduler's state and CPU time before the record; null otherwise.
        package var scheduling: Nullable<Scheduling>
        /// In a hang or snapshot: the lock it was blocked on and its holder; null when it was not.
        package var waitsOn: Nullable<LockWaitJSON>
        /// The addresses of locks other threads waited on that it held.
        package var holdsLocks: [String]
        package var frames: [Frame]
    }

    /// A thread as the scheduler had it just before a hang or snapshot record.
    package struct Scheduling: Encodable, Sendable {
        /// `running`, `sleeping`, `disk wait`, …
        package var state: String
        package var windowCPUMilliseconds: UInt32
        package var windowMilliseconds: UInt32
        package var cpuMilliseconds: UInt64
        /// CPU time since the stall began (over the event's `stallCPUSpanMilliseconds`); null without one.
        package var stallCPUMilliseconds: Nullable<UInt32>
    }

    /// One symbolicated frame: an inlined call expands a thread frame into several, innermost first.
    package struct Frame: Encodable, Sendable {
        package var index: Int
        package var kind: ThreadFrame.Kind
        package var taskDepth: Int
        package var taskID: Nullable<Int>
        package var address: String
        package var image: Nullable<String>
        package var imageOffset: Nullable<String>
        /// The full demangled name.
        package var symbol: Nullable<String>
        /// The name as `show` prints it: the short form Swift's backtracer prints.
        package var shortSymbol: Nullable<String>
        package var file: Nullable<String>
        package var line: Nullable<Int>
        package var column: Nullable<Int>
        package var inlined: Bool
        package var problem: Nullable<String>
        /// The program's own code: not a package it links, the Swift runtime or the C library.
        package var inApp: Bool
        /// The module or library of a frame that is not the program's own (`NIOPosix`, `Swift`, `libc`).
        package var origin: Nullable<String>
    }

    package struct Memory: Encodable, Sendable {
        package var label: String
        package var address: String
        package var hex: String
    }

    package struct Breadcrumb: Encodable, Sendable {
        package var time: String
        /// ``BreadcrumbLevel/name``.
        package var level: String
        package var message: String
    }

    package struct Image: Encodable, Sendable {
        package var path: String
        package var buildID: String
        package var base: String
        package var size: Int
        package var mainExecutable: Bool
    }
}

/// One of `show --json`'s `runtimeWarnings`: the runtime's text, and how many times the record holds it.
package struct RuntimeWarningJSON: Encodable, Sendable {
    package var text: String
    package var count: Int
}
