// HangDetection.swift — a process that stops making progress writes a record of where it is stuck
// (a hang), while it lives; and a record of the live process can be asked for (a snapshot).
//
// One plain thread (not the Swift pool's, not an event loop's) watches, once per tick:
//   - the cooperative pool: a heartbeat job on the global concurrent executor must run within
//     the stall threshold of being enqueued;
//   - heartbeats (an event loop's, the app's own): each must beat within the threshold;
//   - requests (CrashContext): none may stay in flight longer than the request threshold;
//   - a graceful shutdown: it must end within the shutdown threshold;
//   - locks: a cycle of threads, each blocked on a lock the next one holds, seen at two ticks in
//     a row is a deadlock (LockWaits; any threads, not only the pool's);
//   - `crash-inspect snapshot <pid>`: a request file for this process in the record directory.
// The record itself is the C core's (cc_snapshot: every other thread stopped with ptrace, read
// and let go). The watcher never cries wolf for a process that was itself stopped (SIGSTOP, a
// debugger, a suspended machine): when its own sleep ends much later than asked, nothing it
// measured in that time counts, and every detector waits a whole threshold again.
import CShims
import CrashRecordFormat
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// What hang detection watches and when it writes a hang record. Off unless
/// ``CrashHandler/Configuration/hangDetection`` is set or the environment variable
/// `CRASHCAPTURE_HANG_SECONDS` gives a stall threshold (`0` turns it off).
public struct HangDetection: Sendable, Equatable {
    /// How late a heartbeat may run — the cooperative pool's, an event loop's, the app's own —
    /// before a hang record is written (at least 0.1 s).
    public var stallThreshold: Duration
    /// How long a request (a `CrashContext` attached) may stay in flight; `nil` watches no request.
    public var requestThreshold: Duration?
    /// How long a graceful shutdown (``HangDetector/shutdownBegan()``) may take before a record
    /// is written: 20 s by default, inside Kubernetes' 30 s grace period before SIGKILL.
    public var shutdownThreshold: Duration
    /// At most one hang record per cause (the detector, and the heartbeat's name) this often.
    public var minimumInterval: Duration
    /// Whether `crash-inspect snapshot <pid>` is answered (a request file in the record directory,
    /// looked for once per tick).
    public var answersSnapshotRequests: Bool
    /// The memory watch: the share of the memory cgroup's limit (0.9: 90 %) at which a memory
    /// record is written — usage and limit, the last minute's growth, how the memory splits,
    /// every thread and the requests in flight — so that an OOM kill that follows has a cause;
    /// `nil` turns the watch off. Where the cgroup has no limit nothing is watched. Defaults to
    /// `CRASHCAPTURE_MEMORY_PERCENT` (`0`: off), else 0.9.
    public var memoryThreshold: Double?

    /// The environment variable that turns detection on for any program that starts capture:
    /// the stall threshold in seconds (`CRASHCAPTURE_HANG_SECONDS=5`); `0` turns it off.
    package static let environmentVariable = "CRASHCAPTURE_HANG_SECONDS"

    /// - Parameter stallThreshold: how late a heartbeat may run (5 s by default).
    public init(stallThreshold: Duration = .seconds(5)) {
        self.stallThreshold = stallThreshold
        self.requestThreshold = .seconds(60)
        self.shutdownThreshold = .seconds(20)
        self.minimumInterval = .seconds(600)
        self.answersSnapshotRequests = true
        self.memoryThreshold = MemoryWatch.fromEnvironment()
    }

    /// What the environment asks for: `.some(nil)` for `0` (off), a detection with that stall
    /// threshold for a positive number of seconds, `nil` when the variable is unset or not a number.
    static func fromEnvironment() -> HangDetection?? {
        guard let raw = getenv(environmentVariable) else { return nil }
        var end: UnsafeMutablePointer<CChar>?
        let seconds = strtod(raw, &end)
        guard let end, end != raw, end.pointee == 0, seconds.isFinite, seconds >= 0 else { return nil }
        if seconds == 0 { return .some(nil) }
        return .some(HangDetection(stallThreshold: .nanoseconds(Int64(min(seconds, 86_400) * 1e9))))
    }

    /// The detection a start applies: the environment's, else the configuration's.
    static func effective(_ configured: HangDetection?) -> HangDetection? {
        switch fromEnvironment() {
        case .some(let fromEnvironment): return fromEnvironment.map { environment in
            var merged = configured ?? environment
            merged.stallThreshold = environment.stallThreshold
            return merged
        }
        case .none: return configured
        }
    }
}

/// The calls a running program makes to hang detection: heartbeats of its own loops, pauses
/// around deliberate blocking work, the start of a graceful shutdown.
public enum HangDetector {
    /// A heartbeat for a loop the program runs (a SwiftNIO event loop, a worker thread): call
    /// ``HangHeartbeat/beat()`` from that loop at least once per stall threshold (once a second
    /// is plenty); when it stops beating for longer, a hang record names it and the thread that
    /// beat last. Works whether or not detection is on (it is then only not watched).
    public static func heartbeat(named name: String) -> HangHeartbeat {
        let heartbeat = HangHeartbeat(name: name, detector: UInt32(CC_DETECTOR_HEARTBEAT.rawValue))
        HangMonitor.shared.add(heartbeat)
        return heartbeat
    }

    /// Watches loops that run work submitted to them — SwiftNIO's event loops — without a
    /// heartbeat call of their own: each tick the watcher submits a beat to every loop (one at a
    /// time per loop), and a loop that has not run it within the stall threshold writes a hang
    /// record of the event loop, naming the loop and its thread. The Hummingbird and Vapor
    /// middlewares (`CrashContextMiddleware`) watch the application's loops by themselves; for
    /// any other group:
    ///
    /// ```swift
    /// HangDetector.watch(group.makeIterator().enumerated().map { index, loop in
    ///     WatchedLoop(name: "event loop \(index)") { beat in loop.execute(beat) }
    /// })
    /// ```
    ///
    /// Once hang detection is off, nothing more is submitted (one beat goes to each loop at once,
    /// to learn its thread). Each call adds loops.
    public static func watch(_ loops: [WatchedLoop]) {
        for loop in loops {
            let heartbeat = HangHeartbeat(name: loop.name, detector: UInt32(CC_DETECTOR_EVENT_LOOP.rawValue), submit: loop.submit)
            HangMonitor.shared.add(heartbeat)
            // One beat now, so that the loop's thread is known before it can block.
            loop.submit { heartbeat.beat() }
        }
    }

    /// Deliberate blocking work is about to start (a long synchronous computation on the pool):
    /// no detector fires until the matching ``resume()``, and each then waits a whole threshold.
    /// Calls nest.
    public static func pause() { HangMonitor.shared.pauses.add(1, ordering: .sequentiallyConsistent) }

    /// Ends a ``pause()``.
    public static func resume() {
        HangMonitor.shared.resumedAt.store(monotonicNow(), ordering: .sequentiallyConsistent)
        HangMonitor.shared.pauses.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// Whether a watcher runs now.
    package static var isWatching: Bool { HangMonitor.shared.running.load(ordering: .sequentiallyConsistent) }

    /// A graceful shutdown began (SIGTERM): when the process still lives
    /// ``HangDetection/shutdownThreshold`` later, a hang record says where it is stuck, before
    /// the SIGKILL that follows. `CrashCaptureService`, `CrashReportingService` and the
    /// `CrashContextMiddleware`s of Hummingbird and Vapor call it when the server's graceful
    /// shutdown begins.
    public static func shutdownBegan() {
        _ = HangMonitor.shared.shutdownAt.compareExchange(expected: 0, desired: monotonicNow(), ordering: .sequentiallyConsistent)
    }

    /// Called with each hang, memory or snapshot record's path once it is written, and its kind
    /// (the reporter sends it while the process lives). Runs on the thread that wrote it: it must
    /// not wait for the Swift pool.
    package static func onRecord(_ handler: @escaping @Sendable (String, RecordKind) -> Void) {
        HangMonitor.shared.recordHandler.withLock { $0 = handler }
    }

    /// Called on the watcher's thread when every hang it recorded has ended: the pool ran its
    /// heartbeat, each late loop beat again, no request is older than its threshold. A graceful
    /// shutdown that hung never ends this way (the process exits, or is killed).
    package static func onResolved(_ handler: @escaping @Sendable () -> Void) {
        HangMonitor.shared.resolvedHandler.withLock { $0 = handler }
    }
}

/// A loop that runs work submitted to it, for ``HangDetector/watch(_:)``.
public struct WatchedLoop: Sendable {
    /// The name records give it ("event loop 3").
    let name: String
    /// Runs the beat on the loop (SwiftNIO: `loop.execute(beat)`); must not wait for it.
    let submit: @Sendable (@escaping @Sendable () -> Void) -> Void

    /// A loop named `name` that runs what `submit` is given.
    public init(name: String, submit: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.name = name
        self.submit = submit
    }
}

/// A loop's heartbeat (``HangDetector/heartbeat(named:)``).
public final class HangHeartbeat: Sendable {
    /// The name records give it.
    let name: String
    let detector: UInt32
    let lastBeat = Atomic<Int64>(0)
    let thread = Atomic<Int32>(0)
    let stopped = Atomic<Bool>(false)
    /// For a watched loop: how the watcher submits a beat to it, and whether one is on its way.
    let submit: (@Sendable (@escaping @Sendable () -> Void) -> Void)?
    let submitted = Atomic<Bool>(false)

    init(name: String, detector: UInt32, submit: (@Sendable (@escaping @Sendable () -> Void) -> Void)? = nil) {
        self.name = String(name.utf8.prefix(Int(CC_EVENT_NAME_MAX) - 1)) ?? name
        self.detector = detector
        self.submit = submit
        lastBeat.store(monotonicNow(), ordering: .relaxed)
    }

    /// The loop is alive: call it from the loop's own thread.
    public func beat() {
        lastBeat.store(monotonicNow(), ordering: .relaxed)
        thread.store(cc_current_tid(), ordering: .relaxed)
    }

    /// The loop ended on purpose: it is no longer watched.
    public func stop() { stopped.store(true, ordering: .relaxed) }
}

extension CrashHandler {
    /// A record of the process as it is now, written while it runs (a snapshot): every other
    /// thread's frames and async chains, the requests in flight and where each one's task waits,
    /// breadcrumbs and scope. The other threads stand still only while they are read
    /// (``SnapshotRecord/stopped``). `crash-inspect show` reads it like a crash record.
    /// - Parameter reason: why it was taken, kept in the record (at most 63 bytes).
    /// - Throws: ``CrashCaptureError`` when capture is not running, a crash or another snapshot
    ///   is being recorded (EBUSY), or the record could not be written.
    @discardableResult
    public static func snapshot(reason: String = "asked for") throws -> SnapshotRecord {
        try HangMonitor.write(kind: UInt32(CC_KIND_SNAPSHOT.rawValue), detector: UInt32(CC_DETECTOR_NONE.rawValue), name: reason)
    }
}

/// A record of the live process that was written (``CrashHandler/snapshot(reason:)``).
public struct SnapshotRecord: Sendable, Equatable {
    /// The record's path.
    public var path: String
    /// How long the other threads were stopped while they were read.
    public var stopped: Duration
    /// How many threads were stopped and read.
    public var threads: Int
}

/// The watcher and the state the calls above share.
final class HangMonitor: Sendable {
    static let shared = HangMonitor()
    /// Whether a watcher was ever started in this process: until then a start without hang
    /// detection has nothing to stop and need not make `shared` (≈ 8 µs of every start on the
    /// project's VM, most of it the first use of its locks' generic types).
    static let everStarted = Atomic<Bool>(false)

    struct Settings: Sendable {
        var detection: HangDetection
        var directory: String
        var limits: RecordDirectoryLimits
    }

    let settings = Mutex<Settings?>(nil)
    let heartbeats = Mutex<[HangHeartbeat]>([])
    let recordHandler = Mutex<(@Sendable (String, RecordKind) -> Void)?>(nil)
    let resolvedHandler = Mutex<(@Sendable () -> Void)?>(nil)
    let pauses = Atomic<Int>(0)
    let resumedAt = Atomic<Int64>(0)
    let shutdownAt = Atomic<Int64>(0)
    /// The number of the pool's last heartbeat job that ran (the watcher numbers them).
    let poolBeat = Atomic<Int>(0)
    /// Whether a watcher runs (of the current generation).
    let running = Atomic<Bool>(false)
    /// Bumped by every start and stop: a watcher of an older generation ends at its next tick, so
    /// a start right after a stop is never left without one.
    let generation = Atomic<Int>(0)

    func add(_ heartbeat: HangHeartbeat) {
        heartbeats.withLock { list in
            list.removeAll { $0.stopped.load(ordering: .relaxed) }
            list.append(heartbeat)
        }
    }

    /// Starts (or retunes) the watcher; `nil` stops it.
    static func configure(_ detection: HangDetection?, directory: String, limits: RecordDirectoryLimits) {
        let monitor = shared
        let generation = monitor.generation.add(1, ordering: .sequentiallyConsistent).newValue
        guard let detection else {
            monitor.settings.withLock { $0 = nil }
            monitor.running.store(false, ordering: .sequentiallyConsistent)
            return
        }
        var clamped = detection
        if clamped.stallThreshold < .milliseconds(100) { clamped.stallThreshold = .milliseconds(100) }
        monitor.settings.withLock { $0 = Settings(detection: clamped, directory: directory, limits: limits) }
        everStarted.store(true, ordering: .sequentiallyConsistent)
        monitor.running.store(true, ordering: .sequentiallyConsistent)
        let box = Unmanaged.passRetained(WatcherStart(monitor: monitor, generation: generation))
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            let start = Unmanaged<WatcherStart>.fromOpaque(raw!).takeRetainedValue()
            start.monitor.watch(generation: start.generation)
            return nil
        }, box.toOpaque())
        if rc != 0 {
            box.release()
            _ = monitor.generation.compareExchange(expected: generation, desired: generation + 1, ordering: .sequentiallyConsistent)
            monitor.running.store(false, ordering: .sequentiallyConsistent)
        } else {
            pthread_detach(thread)
        }
    }

    final class WatcherStart: @unchecked Sendable {
        let monitor: HangMonitor
        let generation: Int
        init(monitor: HangMonitor, generation: Int) { self.monitor = monitor; self.generation = generation }
    }

    /// The watching thread's loop (see the top of this file).
    private func watch(generation: Int) {
        "crashcapture-hang".withCString { cc_name_current_thread($0) }
        let advertised = SnapshotRequest.advertise(settings.withLock { $0 })
        defer {
            if advertised >= 0 { close(advertised) }
            if self.generation.load(ordering: .sequentiallyConsistent) == generation { running.store(false, ordering: .sequentiallyConsistent) }
        }
        var poolSent: Int64 = 0          // when the pending pool heartbeat was enqueued (or the watcher last ran late); 0: none pending
        var poolNumber = poolBeat.load(ordering: .sequentiallyConsistent)   // the pending heartbeat's number (going on from an earlier watcher's)
        var quietUntil = monotonicNow()  // no detector fires before this
        var lastFired: [String: Int64] = [:]
        var open: Set<String> = []      // the causes recorded whose hang has not ended
        var memory: (watcher: MemoryWatcher, threshold: Double)?
        var stalls: [(end: Int64, length: Int64)] = []   // the watcher's own late wake-ups: time the process was stopped
        var cpuHistory: [CPUReading] = []               // each thread's CPU time at the last ticks (at most 64)
        var deadlocksSeen: [String: Int64] = [:]         // each cycle of lock waits seen at the last tick, and since when
        var deadlocksRecorded: Set<String> = []          // the cycles recorded (one record each)
        var target = monotonicNow()
        while self.generation.load(ordering: .sequentiallyConsistent) == generation {
            guard let current = settings.withLock({ $0 }) else { return }
            let threshold = current.detection.stallThreshold.nanoseconds
            let tick = min(max(threshold / 4, 50_000_000), 1_000_000_000)
            target += tick
            var now = monotonicNow()
            if target < now { target = now + tick }
            sleepUntil(target)
            now = monotonicNow()
            cc_note_runtime_reports()   // what the runtime reported so far is no later crash's message
            // The watcher itself ran late: this process (or machine) was stopped, not stuck.
            if now - target > max(tick, 250_000_000) {
                stalls.append((end: now, length: now - target))
                if stalls.count > 64 { stalls.removeFirst() }
                quietUntil = now + threshold
                if poolSent != 0 { poolSent = now }
                target = now
            }
            if pauses.load(ordering: .sequentiallyConsistent) > 0 {
                quietUntil = max(quietUntil, now + threshold)
            }
            quietUntil = max(quietUntil, resumedAt.load(ordering: .sequentiallyConsistent) + threshold)
            let quiet = now < quietUntil
            // Each thread's CPU time, so that a hang record can say what each used since its stall began.
            cpuHistory.append(CPUReading(time: now, cpu: ThreadStateSampler.cpuTimes()))
            if cpuHistory.count > 64 { cpuHistory.removeFirst() }

            func fire(_ detector: UInt32, name: String, threshold: Int64, observed: Int64,
                      requestKey: UInt64 = 0, thread: Int32 = 0) {
                let cause = "\(detector)/\(name)"
                if let last = lastFired[cause], now - last < current.detection.minimumInterval.nanoseconds { return }
                lastFired[cause] = now
                open.insert(cause)
                _ = RecordDirectoryBound.enforce(directory: current.directory, limits: current.limits)
                // The reading of the last tick at or before the stall began (else the oldest kept).
                let baseline = cpuHistory.last { $0.time <= now - observed } ?? cpuHistory.first
                let written = try? HangMonitor.write(kind: UInt32(CC_KIND_HANG.rawValue), detector: detector, name: name,
                                                     threshold: threshold, observed: observed, requestKey: requestKey, thread: thread,
                                                     stallBaseline: baseline)
                HangMonitor.say(detector: detector, name: name, observed: observed, record: written)
                HangMonitor.leaveTerminationMessage(name: name, threshold: threshold, observed: observed, record: written)
            }

            let wasOpen = !open.isEmpty
            // The cooperative pool: one heartbeat job pending at a time.
            if poolSent != 0 {
                if poolBeat.load(ordering: .sequentiallyConsistent) >= poolNumber {
                    poolSent = 0
                    open.remove("\(CC_DETECTOR_POOL.rawValue)/cooperative pool")
                } else if !quiet, now - poolSent > threshold {
                    fire(UInt32(CC_DETECTOR_POOL.rawValue), name: "cooperative pool", threshold: threshold, observed: now - poolSent)
                }
            }
            if poolSent == 0 {
                poolSent = now
                poolNumber += 1
                let number = poolNumber
                Task.detached(priority: .medium) { [self] in poolBeat.store(number, ordering: .sequentiallyConsistent) }
            }
            // Heartbeats: a watched loop's beat submitted to it first (one on its way at a time).
            for heartbeat in heartbeats.withLock({ $0 }) where !heartbeat.stopped.load(ordering: .relaxed) {
                if let submit = heartbeat.submit,
                   heartbeat.submitted.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged {
                    submit {
                        heartbeat.beat()
                        heartbeat.submitted.store(false, ordering: .sequentiallyConsistent)
                    }
                }
                let late = now - heartbeat.lastBeat.load(ordering: .relaxed)
                if late <= threshold { open.remove("\(heartbeat.detector)/\(heartbeat.name)") }
                if !quiet, late > threshold {
                    fire(heartbeat.detector, name: heartbeat.name, threshold: threshold, observed: late,
                         thread: heartbeat.thread.load(ordering: .relaxed))
                }
            }
            // Requests: the oldest one's age, less the time the process stood stopped meanwhile.
            if let requestThreshold = current.detection.requestThreshold?.nanoseconds {
                var key: UInt64 = 0
                var age: Int64 = 0
                let stuck = cc_requests_older_than(requestThreshold, &key, &age) > 0
                if !stuck { open.remove("\(CC_DETECTOR_REQUEST.rawValue)/request") }
                if stuck, !quiet {
                    let stopped = stalls.reduce(Int64(0)) { $0 + ($1.end > now - age ? $1.length : 0) }
                    if age - stopped > requestThreshold {
                        fire(UInt32(CC_DETECTOR_REQUEST.rawValue), name: "request", threshold: requestThreshold, observed: age - stopped,
                             requestKey: key)
                    }
                }
            }
            // A graceful shutdown that does not end.
            let shutdown = shutdownAt.load(ordering: .sequentiallyConsistent)
            if shutdown != 0, !quiet, now - shutdown > current.detection.shutdownThreshold.nanoseconds {
                fire(UInt32(CC_DETECTOR_SHUTDOWN.rawValue), name: "graceful shutdown",
                     threshold: current.detection.shutdownThreshold.nanoseconds, observed: now - shutdown)
            }
            // The memory cgroup's usage against its limit.
            if let threshold = current.detection.memoryThreshold {
                if memory?.threshold != threshold { memory = (MemoryWatcher(threshold: threshold), threshold) }
                memory?.watcher.tick(now: now) { section in
                    _ = RecordDirectoryBound.enforce(directory: current.directory, limits: current.limits)
                    let written = try? HangMonitor.write(kind: UInt32(CC_KIND_MEMORY.rawValue), detector: UInt32(CC_DETECTOR_MEMORY.rawValue),
                                                         name: "memory", extra: (CC_SEC_MEMORY_WATCH.rawValue, withUnsafeBytes(of: section) { Array($0) }))
                    HangMonitor.sayMemory(section, record: written)
                }
            } else {
                memory = nil
            }
            // Deadlocks among any threads: the same cycle of lock waits at two ticks in a row.
            let waits = LockWaits.read()
            var cycleKeys: [String: [Int]] = [:]
            for cycle in LockWaits.cycles(in: waits) { cycleKeys[LockWaits.key(cycle, in: waits)] = cycle }
            for (key, cycle) in cycleKeys.sorted(by: { $0.key < $1.key }) {
                let firstSeen = deadlocksSeen[key] ?? now
                deadlocksSeen[key] = firstSeen
                guard firstSeen < now, !quiet, !deadlocksRecorded.contains(key) else { continue }
                deadlocksRecorded.insert(key)
                if deadlocksRecorded.count > 64 { deadlocksRecorded.remove(deadlocksRecorded.first!) }
                open.insert("\(CC_DETECTOR_DEADLOCK.rawValue)/\(key)")
                _ = RecordDirectoryBound.enforce(directory: current.directory, limits: current.limits)
                let observed = max(now - firstSeen, tick)
                let written = try? HangMonitor.write(kind: UInt32(CC_KIND_HANG.rawValue), detector: UInt32(CC_DETECTOR_DEADLOCK.rawValue),
                                                     name: "deadlock", threshold: tick, observed: observed,
                                                     thread: waits[cycle[0]].tid, deadlock: key)
                HangMonitor.say(detector: UInt32(CC_DETECTOR_DEADLOCK.rawValue), name: "deadlock", observed: observed, record: written)
                let threads = cycle.map { String(waits[$0].tid) }.joined(separator: ", ")
                HangMonitor.terminationLines(hang: "deadlock: threads \(threads) wait on each other's locks"
                                             + (written.map { "; record \($0.path)" } ?? "") + "\n")
            }
            for key in deadlocksSeen.keys where cycleKeys[key] == nil {
                deadlocksSeen[key] = nil
                open.remove("\(CC_DETECTOR_DEADLOCK.rawValue)/\(key)")
            }
            // Every recorded hang ended: the run is no longer hung (its record need not be kept).
            if wasOpen, open.isEmpty, let resolved = resolvedHandler.withLock({ $0 }) { resolved() }
            // crash-inspect snapshot <pid>.
            if current.detection.answersSnapshotRequests {
                SnapshotRequest.answer(directory: current.directory)
            }
        }
    }

    /// Writes a record of the live process and hands its path to the reporter's handler.
    static func write(kind: UInt32, detector: UInt32, name: String, threshold: Int64 = 0, observed: Int64 = 0,
                      requestKey: UInt64 = 0, thread: Int32 = 0, extra given: (type: UInt32, bytes: [UInt8])? = nil,
                      deadlock: String? = nil, stallBaseline: CPUReading? = nil) throws -> SnapshotRecord {
        var extras: [(type: UInt32, bytes: [UInt8])] = []
        var stallSpan: UInt32 = 0
        if let given {
            extras.append(given)
        } else {
            // A hang or snapshot says whether each thread was computing or waiting (ThreadStateSampler),
            // then which lock each blocked thread waits on and who holds it, read last, just before
            // the threads are stopped: a deadlock among them comes first (the one `deadlock` names).
            let states = ThreadStateSampler.sample(since: stallBaseline?.cpu)
            if let stallBaseline { stallSpan = UInt32(clamping: (monotonicNow() - stallBaseline.time) / 1_000_000) }
            extras.append((CC_SEC_THREAD_STATES.rawValue, states.section))
            // A computing hang: where its busy threads spend the time, sampled over a second.
            if kind == UInt32(CC_KIND_HANG.rawValue), detector != UInt32(CC_DETECTOR_DEADLOCK.rawValue),
               let samples = ThreadStateSampler.stackSamples(of: states.busy) {
                extras.append((CC_SEC_STACK_SAMPLES.rawValue, samples))
            }
            let waits = LockWaits.read()
            let cycles = LockWaits.cycles(in: waits)
            let cycle = cycles.first { LockWaits.key($0, in: waits) == deadlock } ?? cycles.first ?? []
            extras.append((CC_SEC_LOCK_WAITS.rawValue, LockWaits.section(waits, cycle: cycle)))
        }
        var request = cc_snapshot_request_t()
        request.kind = kind
        request.detector = detector
        request.threshold_ms = UInt64(max(0, threshold / 1_000_000))
        request.observed_ms = UInt64(max(0, observed / 1_000_000))
        request.request_key = requestKey
        request.blocked_tid = thread
        request.stall_cpu_span_ms = stallSpan
        var result = cc_snapshot_result_t()
        var error: Int32 = 0
        let rc = name.withCString { pointer in
            request.name = pointer
            // One buffer holds every extra section's bytes, one after another.
            let joined = extras.flatMap(\.bytes)
            return joined.withUnsafeBytes { bytes in
                var offset = 0
                var described: [cc_snapshot_extra_t] = extras.map { extra in
                    defer { offset += extra.bytes.count }
                    return cc_snapshot_extra_t(type: extra.type, length: UInt32(extra.bytes.count), bytes: bytes.baseAddress.map { $0 + offset })
                }
                return described.withUnsafeMutableBufferPointer { list in
                    request.extras = UnsafePointer(list.baseAddress)
                    request.extra_count = UInt32(list.count)
                    return cc_snapshot(&request, &result, &error)
                }
            }
        }
        switch rc {
        case 0: break
        case CC_ERR_NOT_INSTALLED.rawValue:
            throw CrashCaptureError(operation: "snapshot (capture is not running)", errno: ESRCH)
        case CC_ERR_BUSY.rawValue:
            throw CrashCaptureError(operation: "snapshot (a crash or another snapshot is being recorded)", errno: EBUSY)
        default:
            throw CrashCaptureError(operation: "snapshot (writing the record)", errno: error)
        }
        let fileName = withUnsafeBytes(of: result.file_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let directory = CrashHandler.recordDirectory ?? "."
        let written = SnapshotRecord(path: directory + "/" + fileName,
                                     stopped: .microseconds(Int64(result.stopped_microseconds)),
                                     threads: Int(result.threads_stopped))
        let recordKind: RecordKind = switch kind {
        case CC_KIND_SNAPSHOT.rawValue: .snapshot
        case CC_KIND_MEMORY.rawValue: .memory
        default: .hang
        }
        if let handler = shared.recordHandler.withLock({ $0 }) { handler(written.path, recordKind) }
        return written
    }

    /// The container's termination message (`cc_termination_message`; where there is no such
    /// file, nothing): a pod killed later, by its liveness probe or for memory, shows the hang
    /// in `kubectl describe pod` — `hang: cooperative pool stalled for 5.2 s (threshold 2.0 s); record …`.
    static func leaveTerminationMessage(name: String, threshold: Int64, observed: Int64, record: SnapshotRecord?) {
        func seconds(_ nanoseconds: Int64) -> String {
            let tenths = (nanoseconds + 50_000_000) / 100_000_000
            return "\(tenths / 10).\(tenths % 10) s"
        }
        var line = "hang: \(name) stalled for \(seconds(observed)) (threshold \(seconds(threshold)))"
        if let record { line += "; record \(record.path)" }
        terminationLines(hang: line + "\n")
    }

    /// The termination message's lines: the last memory record's, then the last hang's. A pod the
    /// OOM killer ends while it also stalls (memory near the limit slows everything) still says
    /// memory first.
    private static let lastLines = Mutex<(memory: String, hang: String)>(("", ""))
    static func terminationLines(memory: String? = nil, hang: String? = nil) {
        let text = lastLines.withLock { lines in
            if let memory { lines = (memory, "") }
            if let hang { lines.hang = hang }
            return lines.memory + lines.hang
        }
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { _ = cc_termination_message($0.baseAddress, $0.count) }
    }

    /// A memory record's line on stderr and in the container's termination message:
    /// `memory: 290 of 320 MiB (91 %), +41 MiB in 60 s; record …`.
    static func sayMemory(_ section: cc_sec_memory_watch_t, record: SnapshotRecord?) {
        let file = record.map { String($0.path.split(separator: "/").last ?? "") } ?? ""
        let line = "crashcapture: {\"memory\":\(section.usage_bytes),\"limit\":\(section.limit_bytes),\"growth\":\(section.growth_bytes),"
            + "\"growth_seconds\":\(section.growth_seconds),\"record\":\(record == nil ? "null" : JSONText.quote(file))}\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in _ = Glibc.write(2, buffer.baseAddress, buffer.count) }
        var message = RecordMemoryWatch.headline(usage: section.usage_bytes, limit: section.limit_bytes, growth: section.growth_bytes,
                                                 growthSeconds: section.growth_seconds)
        if let record { message += "; record \(record.path)" }
        terminationLines(memory: "memory: " + message + "\n")
    }

    /// One line on stderr per hang record, as a crash has its own: a log pipeline learns of it
    /// even when the record never leaves the machine.
    static func say(detector: UInt32, name: String, observed: Int64, record: SnapshotRecord?) {
        let file = record.map { String($0.path.split(separator: "/").last ?? "") } ?? ""
        let line = "crashcapture: {\"hang\":\(JSONText.quote(name)),\"detector\":\(detector),\"observed_ms\":\(observed / 1_000_000),"
            + "\"record\":\(record == nil ? "null" : JSONText.quote(file)),\"stopped_us\":\(record.map { $0.stopped.microsecondsRounded } ?? 0)}\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in _ = Glibc.write(2, buffer.baseAddress, buffer.count) }
    }
}

/// Each thread's CPU time (ns) at one of the watcher's ticks.
struct CPUReading: Sendable {
    var time: Int64
    var cpu: [Int32: UInt64]
}

/// `crash-inspect snapshot <pid>`'s request: a file `snapshot-request-<pid>` in the record
/// directory, answered by the watcher with `snapshot-answer-<pid>` (the record's file name, or
/// `error: …`), written whole (a rename) before the request is removed.
enum SnapshotRequest {
    /// While it watches, the watcher holds a shared `flock` on its record directory: the sign
    /// `crash-inspect snapshot <pid>` finds in /proc/locks (that pid, a directory's inode) to know
    /// where to leave its request without `--dir`. Nothing else locks the directory itself, and a
    /// shared lock keeps no one out; it goes with the process. The descriptor, or -1.
    static func advertise(_ settings: HangMonitor.Settings?) -> Int32 {
        guard let settings, settings.detection.answersSnapshotRequests else { return -1 }
        let fd = open(settings.directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return -1 }
        if flock(fd, LOCK_SH | LOCK_NB) != 0 {
            close(fd)
            return -1
        }
        return fd
    }

    static func answer(directory: String) {
        let pid = getpid()
        let request = directory + "/" + RecordFileName.snapshotRequest(pid: pid)
        guard access(request, F_OK) == 0 else { return }
        let text: String
        do {
            let record = try HangMonitor.write(kind: UInt32(CC_KIND_SNAPSHOT.rawValue), detector: UInt32(CC_DETECTOR_NONE.rawValue),
                                               name: "crash-inspect snapshot")
            text = String(record.path.split(separator: "/").last ?? "")
        } catch {
            text = "error: \(error)"
        }
        let answer = directory + "/" + RecordFileName.snapshotAnswer(pid: pid)
        let temporary = answer + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd >= 0 {
            var bytes = Array((text + "\n").utf8)
            bytes.withUnsafeMutableBytes { _ = Glibc.write(fd, $0.baseAddress, $0.count) }
            close(fd)
            rename(temporary, answer)
        }
        unlink(request)
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue &+ attoseconds / 1_000_000_000
    }
    var microsecondsRounded: Int64 { nanoseconds / 1000 }
}

func monotonicNow() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

private func sleepUntil(_ deadline: Int64) {
    var when = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &when, nil) == EINTR {}
}
