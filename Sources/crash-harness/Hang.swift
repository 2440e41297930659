// Hang.swift — `crash-harness hang`: a process that gets stuck (or is looked at) and lives on, for
// the hang-detection tests (Tests/CrashCaptureTests/HangDetectionTests.swift).
import ArgumentParser
import CrashCapture
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension CrashHarness {
    struct Hang: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Gets stuck in one way (or is looked at) and lives on; prints what it saw as JSON on stdout.",
            discussion: """
                Modes: pool (every cooperative-pool thread blocks in sleep(3) for --block seconds, with requests \
                attached; then a pool job must run again), snapshot (CrashHandler.snapshot while threads sleep and \
                requests await continuations never resumed; the sleeps must not end early), serve (requests that \
                await forever, pool busy with --load jobs, for --seconds: crash-inspect snapshot and SIGSTOP \
                come from outside), heartbeat (an app heartbeat that stops beating), pause (the pool blocked \
                between HangDetector.pause and resume: no record), snapshot-cost (--rounds snapshots of a process \
                with --threads sleeping threads and --waiting requests: how long its threads stood still; a benchmark), \
                deadlock (two plain threads take two locks of kind --lock in opposite order and a request then waits \
                on one: pthread or nslock; lives --seconds; mutex, two Synchronization.Mutexes, dies of SIGILL \
                instead: the kernel refuses the second lock), held (a thread holds a lock of kind --lock across a \
                blocking call while a request waits for it: rwlock, a glibc rwlock held for writing, or mutex, a \
                Synchronization.Mutex; a snapshot is taken), lock-scan-cost (what the hang watcher's deadlock \
                check costs a tick: --rounds scans of a process with --threads threads, half of them waiting on \
                mutexes, half in condition variables; a benchmark).
                """)

        @Option(help: "Directory for records.")
        var dir: String

        @Option(help: "pool, snapshot, serve, heartbeat or pause.")
        var mode: String

        @Option(help: "Stall threshold in seconds (hang detection on); 0 leaves it to the environment.")
        var threshold: Double = 1

        @Option(help: "Seconds the pool (or the heartbeat) stays blocked.")
        var block: Double = 3

        @Flag(help: "pool: the requests compute (spin) for --block seconds instead of sleeping: a pool starved by work.")
        var busy = false

        @Option(help: "Requests that await a continuation never resumed.")
        var waiting: Int = 3

        @Option(help: "Requests that await a continuation dropped without being resumed (leaked: the runtime warns, the request waits forever).")
        var leaking: Int = 0

        @Option(help: "serve: seconds to run.")
        var seconds: Double = 10

        @Option(help: "serve: CPU-bound jobs kept on the pool (a healthy process under full load).")
        var load: Int = 0

        @Option(name: .customLong("request-threshold"), help: "Seconds a request may stay in flight (0: the default, 60).")
        var requestThreshold: Double = 0

        @Option(name: .customLong("run-id"), help: "The run id written into the records (the reporter's runs).")
        var runID: String = ""

        @Option(help: "snapshot-cost: threads asleep beside the requests.")
        var threads: Int = 50

        @Option(help: "snapshot-cost: snapshots taken.")
        var rounds: Int = 20

        @Option(help: "deadlock: pthread (glibc mutexes), nslock (Foundation's NSLock) or mutex (Synchronization.Mutex: it traps); held: rwlock or mutex.")
        var lock: String = "pthread"

        func run() throws {
            var configuration = CrashHandler.Configuration(directory: dir, appName: "crash-harness", appVersion: "1.0")
            configuration.runID = runID
            if threshold > 0 { configuration.hangDetection = HangDetection(stallThreshold: .milliseconds(Int64(threshold * 1000))) }
            if requestThreshold > 0 { configuration.hangDetection?.requestThreshold = .milliseconds(Int64(requestThreshold * 1000)) }
            try CrashHandler.start(configuration)
            for index in 0 ..< waiting { startWaitingRequest(index) }
            for index in 0 ..< leaking { startLeakingRequest(index) }
            Thread.sleep(forTimeInterval: 0.2)   // the waiting requests are attached and suspended
            switch mode {
            case "pool": try blockPool(pause: false)
            case "pause": try blockPool(pause: true)
            case "snapshot": try snapshotWhileSleeping()
            case "serve": serve()
            case "heartbeat": heartbeat()
            case "snapshot-cost": try snapshotCost()
            case "deadlock": try deadlock()
            case "held": try lockHeldAcrossABlockingCall()
            case "lock-scan-cost": lockScanCost()
            default: throw ValidationError("unknown mode \(mode)")
            }
        }

        /// Every pool thread blocks in a synchronous sleep inside a request; afterwards a new pool job
        /// must run (the process recovered).
        func blockPool(pause: Bool) throws {
            let width = ProcessInfo.processInfo.activeProcessorCount * 4
            let done = DispatchSemaphore(value: 0)
            if pause { HangDetector.pause() }
            for index in 0 ..< width {
                Task.detached {
                    let context = CrashContext(requestID: "blocking-\(index)", method: "GET", route: "/block/{seconds}", path: "/block/\(index)")
                    await CrashContext.withValue(context) { if busy { busyCall(seconds: block) } else { blockingCall(seconds: block) } }
                    done.signal()
                }
            }
            for _ in 0 ..< width { done.wait() }
            if pause { HangDetector.resume() }
            let ran = DispatchSemaphore(value: 0)
            let start = Date()
            Task.detached { ran.signal() }
            let recovered = ran.wait(timeout: .now() + 10) == .success
            print("{\"recovered\":\(recovered),\"recovery_ms\":\(Int(Date().timeIntervalSince(start) * 1000))}")
            Thread.sleep(forTimeInterval: 0.5)   // a record being written finishes
        }

        /// Threads asleep while a snapshot is taken: each sleep must last as long as asked.
        func snapshotWhileSleeping() throws {
            let sleepers = 3
            let slept = Mutex<[Double]>([])
            var threads: [Thread] = []
            for _ in 0 ..< sleepers {
                let thread = Thread {
                    let start = Date()
                    sleep(2)   // glibc's sleep: one nanosleep, which a signal handler would cut short
                    slept.withLock { $0.append(Date().timeIntervalSince(start)) }
                }
                threads.append(thread)
                thread.start()
            }
            Thread.sleep(forTimeInterval: 0.3)
            let record = try CrashHandler.snapshot(reason: "harness")
            while slept.withLock({ $0.count }) < sleepers { Thread.sleep(forTimeInterval: 0.05) }
            let times = slept.withLock { $0 }.map { String(format: "%.3f", $0) }.joined(separator: ",")
            print("{\"record\":\"\(record.path)\",\"stopped_us\":\(record.stopped.components.attoseconds / 1_000_000_000_000 + record.stopped.components.seconds * 1_000_000),\"threads\":\(record.threads),\"slept\":[\(times)]}")
        }

        /// A process that keeps working: --load CPU-bound jobs cycling on the pool, for --seconds.
        func serve() {
            let deadline = Date().addingTimeInterval(seconds)
            for _ in 0 ..< load {
                Task.detached {
                    while Date() < deadline {
                        var x: UInt64 = 1
                        for i in 0 ..< 200_000 { x = x &* 6364136223846793005 &+ UInt64(i) }
                        blackHole(x)
                        serveCompleted.add(1, ordering: .relaxed)
                        await Task.yield()
                    }
                }
            }
            print("{\"serving\":\(getpid())}")
            FileHandle.standardOutput.synchronizeFile()
            while Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            let cpu = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000 + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000
            print("{\"jobs\":\(serveCompleted.load(ordering: .relaxed)),\"cpu_ms\":\(cpu)}")
        }

        /// --rounds snapshots of a process with --threads threads asleep and --waiting requests in
        /// flight: how long its threads stood still each time, and how long each record took.
        func snapshotCost() throws {
            for _ in 0 ..< threads {
                let thread = Thread { while true { sleep(60) } }
                thread.start()
            }
            Thread.sleep(forTimeInterval: 0.5)
            var stopped: [Int64] = [], written: [Double] = []
            for _ in 0 ..< rounds {
                let start = Date()
                let record = try CrashHandler.snapshot(reason: "benchmark")
                written.append(Date().timeIntervalSince(start) * 1000)
                stopped.append(record.stopped.components.seconds * 1_000_000 + record.stopped.components.attoseconds / 1_000_000_000_000)
                unlink(record.path)
            }
            let threadCount = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
            stopped.sort()
            written.sort()
            print("snapshot of \(threadCount) threads and \(waiting) requests in flight, \(rounds) rounds: threads stood still median \(stopped[stopped.count / 2]) µs "
                  + "(min \(stopped.first!), max \(stopped.last!)); the whole record took median \(String(format: "%.1f", written[written.count / 2])) ms")
        }

        /// Two plain threads take two locks in opposite order (each holds one and waits for the
        /// other), and a request on the pool then waits on the first: a deadlock no heartbeat sees.
        func deadlock() throws {
            let locks = try HarnessLocks(kind: lock)
            let both = DispatchSemaphore(value: 0)
            let tids = Mutex<[Int32]>([])
            func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
                let thread = Thread {
                    harnessNameThread(name)
                    tids.withLock { $0.append(harnessThreadID()) }
                    body()
                }
                thread.start()
            }
            start("ledger-writer") { transferFunds(locks, then: both) }
            start("audit-reader") { auditLedger(locks, then: both) }
            both.wait()
            Task.detached {
                let context = CrashContext(requestID: "balance-1", method: "GET", route: "/balance", path: "/balance")
                await CrashContext.withValue(context) { readBalance(locks) }
            }
            Thread.sleep(forTimeInterval: seconds)
            print("{\"threads\":[\(tids.withLock { $0 }.map(String.init).joined(separator: ","))]}")
            fflush(nil)
            _exit(0)
        }

        /// A thread holds a lock across a blocking call (a glibc rwlock for writing, or a
        /// Synchronization.Mutex) while a request waits for it; a snapshot is taken while it waits.
        func lockHeldAcrossABlockingCall() throws {
            guard ["rwlock", "mutex"].contains(lock) else { throw ValidationError("held: --lock rwlock or mutex") }
            let rwlock = HarnessRWLock()
            let holding = DispatchSemaphore(value: 0)
            let holder = Thread { [lock, block] in
                harnessNameThread("index-writer")
                print("{\"holder\":\(harnessThreadID())}")
                fflush(nil)
                if lock == "rwlock" { rewriteIndex(rwlock, block: block, then: holding) } else { refreshCache(block: block, then: holding) }
            }
            holder.start()
            holding.wait()
            Task.detached { [lock] in
                let context = CrashContext(requestID: "search-1", method: "GET", route: "/search", path: "/search")
                await CrashContext.withValue(context) { if lock == "rwlock" { searchIndex(rwlock) } else { readCache() } }
            }
            Thread.sleep(forTimeInterval: 0.5)
            let record = try CrashHandler.snapshot(reason: "held lock")
            print("{\"record\":\"\(record.path)\"}")
            fflush(nil)
            _exit(0)
        }

        /// --rounds scans of every thread's lock wait and the search for deadlocks, as the hang
        /// watcher runs them each tick, in a process with --threads threads blocked on locks (half
        /// on glibc mutexes held by one thread, half in a condition variable): the median time.
        func lockScanCost() {
            let held = HarnessRWLock()
            let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
            pthread_mutex_init(mutex, nil)
            let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
            pthread_cond_init(condition, nil)
            let cm = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
            pthread_mutex_init(cm, nil)
            let box = HarnessPointers(mutex: mutex, condition: condition, conditionMutex: cm)
            pthread_mutex_lock(mutex)
            for index in 0 ..< threads {
                let thread = Thread {
                    if index % 2 == 0 {
                        pthread_mutex_lock(box.mutex)
                    } else {
                        pthread_mutex_lock(box.conditionMutex)
                        while true { pthread_cond_wait(box.condition, box.conditionMutex) }
                    }
                }
                thread.stackSize = 256 << 10
                thread.start()
            }
            _ = held
            Thread.sleep(forTimeInterval: 1)
            var times: [Double] = []
            var found = 0, cycles = 0
            for _ in 0 ..< rounds {
                let start = DispatchTime.now().uptimeNanoseconds
                let scan = LockWaits.scan()
                cycles += scan.cycles
                times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1000)
                found = scan.waits
            }
            times.sort()
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
            print("deadlock check of \(tasks) threads (\(found) blocked in futex waits), \(rounds) rounds: median \(Int(times[times.count / 2])) µs "
                  + "(min \(Int(times.first!)), max \(Int(times.last!))); \(cycles) cycles found")
            fflush(nil)
            _exit(0)
        }

        /// An app heartbeat that beats, then stops for --block seconds, then beats again.
        func heartbeat() {
            let beat = HangDetector.heartbeat(named: "worker-loop")
            let thread = Thread {
                for _ in 0 ..< 5 { beat.beat(); Thread.sleep(forTimeInterval: 0.1) }
                Thread.sleep(forTimeInterval: block)
                for _ in 0 ..< 5 { beat.beat(); Thread.sleep(forTimeInterval: 0.1) }
            }
            thread.name = "worker-loop"
            thread.start()
            Thread.sleep(forTimeInterval: block + 1.5)
            print("{\"tid\":0}")
        }
    }
}

/// A request that awaits a continuation nobody resumes (an actor-style deadlock).
func startWaitingRequest(_ index: Int) {
    Task.detached {
        let context = CrashContext(requestID: "waiting-\(index)", method: "GET", route: "/wait-forever", path: "/wait-forever/\(index)")
        await CrashContext.withValue(context) { await awaitForever() }
    }
}

/// A request whose continuation is dropped without being resumed: the runtime reports "SWIFT TASK
/// CONTINUATION MISUSE: awaitLeakedContinuation() leaked its continuation…" and the request waits
/// forever.
func startLeakingRequest(_ index: Int) {
    Task.detached {
        let context = CrashContext(requestID: "leaking-\(index)", method: "GET", route: "/leak", path: "/leak/\(index)")
        await CrashContext.withValue(context) { await awaitLeakedContinuation() }
    }
}

@inline(never) func awaitLeakedContinuation() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in _ = continuation }
}

@inline(never) func awaitForever() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        abandoned.withLock { $0.append(continuation) }
    }
}

/// Continuations kept (never resumed), so they are not reported as leaked.
let abandoned = Mutex<[CheckedContinuation<Void, Never>]>([])

let serveCompleted = Atomic<Int>(0)

/// A library call that blocks its thread.
@inline(never) func blockingCall(seconds: Double) {
    usleep(useconds_t(seconds * 1_000_000))
}

/// Computes for `seconds` without giving its thread up: a request that is CPU-bound.
@inline(never) func busyCall(seconds: Double) {
    let deadline = Date().addingTimeInterval(seconds)
    var sum: UInt64 = 0
    while Date() < deadline { for i in 0 ..< 10_000 { sum &+= UInt64(i) &* 2_654_435_761 } }
    blackHole(sum)
}

@inline(never) func blackHole(_ value: UInt64) { if value == 42 { print("") } }

/// The two locks of `crash-harness hang --mode deadlock`, of one kind.
final class HarnessLocks: @unchecked Sendable {
    let kind: String
    let first = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    let second = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    let firstLock = NSLock(), secondLock = NSLock()
    /// How many of the two threads hold their first lock.
    let held = Atomic<Int>(0)

    init(kind: String) throws {
        guard ["pthread", "nslock", "mutex"].contains(kind) else { throw ValidationError("unknown lock \(kind)") }
        self.kind = kind
        pthread_mutex_init(first, nil)
        pthread_mutex_init(second, nil)
    }

    func withFirst<T>(_ body: () -> T) -> T {
        switch kind {
        case "nslock": firstLock.lock(); defer { firstLock.unlock() }; return body()
        case "mutex": return harnessCache.withLock { _ in body() }
        default: pthread_mutex_lock(first); defer { pthread_mutex_unlock(first) }; return body()
        }
    }

    func withSecond<T>(_ body: () -> T) -> T {
        switch kind {
        case "nslock": secondLock.lock(); defer { secondLock.unlock() }; return body()
        case "mutex": return harnessSecondMutex.withLock { _ in body() }
        default: pthread_mutex_lock(second); defer { pthread_mutex_unlock(second) }; return body()
        }
    }
}

/// The Synchronization.Mutex of `hang --mode held --lock mutex`, and with the second one those of
/// `--mode deadlock --lock mutex`: two taken in opposite order do not hang on Linux. Mutex's lock
/// is a priority-inheritance futex, whose owner chain the kernel walks; it refuses the lock that
/// closes the cycle with EDEADLK and Mutex traps, "Recursive call to lock Mutex" (SIGILL).
let harnessCache = Mutex<Int>(0)
let harnessSecondMutex = Mutex<Int>(0)

/// Holds the Mutex across a blocking call.
@inline(never) func refreshCache(block: Double, then holding: DispatchSemaphore) {
    harnessCache.withLock { value in
        holding.signal()
        blockingCall(seconds: block)
        value += 1
    }
}

/// A request that waits for the Mutex.
@inline(never) func readCache() {
    blackHole(UInt64(harnessCache.withLock { $0 }))
}

/// Names the calling thread (what /proc and every record show).
func harnessNameThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY)
    guard fd >= 0 else { return }
    var bytes = Array(name.utf8.prefix(15))
    _ = write(fd, &bytes, bytes.count)
    close(fd)
}

/// Holds the first lock, then wants the second.
@inline(never) func transferFunds(_ locks: HarnessLocks, then both: DispatchSemaphore) {
    locks.withFirst {
        if locks.held.add(1, ordering: .sequentiallyConsistent).newValue == 2 { both.signal() }
        while locks.held.load(ordering: .sequentiallyConsistent) < 2 { usleep(1000) }
        locks.withSecond { blackHole(1) }
    }
}

/// Holds the second lock, then wants the first.
@inline(never) func auditLedger(_ locks: HarnessLocks, then both: DispatchSemaphore) {
    locks.withSecond {
        if locks.held.add(1, ordering: .sequentiallyConsistent).newValue == 2 { both.signal() }
        while locks.held.load(ordering: .sequentiallyConsistent) < 2 { usleep(1000) }
        locks.withFirst { blackHole(2) }
    }
}

/// A request that waits on the first lock.
@inline(never) func readBalance(_ locks: HarnessLocks) {
    locks.withFirst { blackHole(3) }
}

/// Holds the rwlock for writing across a blocking call.
@inline(never) func rewriteIndex(_ rwlock: HarnessRWLock, block: Double, then holding: DispatchSemaphore) {
    pthread_rwlock_wrlock(rwlock.pointer)
    holding.signal()
    blockingCall(seconds: block)
    pthread_rwlock_unlock(rwlock.pointer)
}

/// A glibc rwlock the harness's threads share.
final class HarnessRWLock: @unchecked Sendable {
    let pointer = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
    init() { pthread_rwlock_init(pointer, nil) }
}

/// A request that waits to read the rwlock.
@inline(never) func searchIndex(_ rwlock: HarnessRWLock) {
    pthread_rwlock_rdlock(rwlock.pointer)
    blackHole(4)
    pthread_rwlock_unlock(rwlock.pointer)
}

/// The calling thread's id (gettid(2), which Glibc's module does not export).
func harnessThreadID() -> Int32 {
    // /proc/thread-self links to /proc/<pid>/task/<tid>.
    var buffer = [CChar](repeating: 0, count: 64)
    let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
    guard length > 0 else { return 0 }
    return Int32(String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: "/").last ?? "") ?? 0
}

/// Pointers the lock-scan benchmark's threads share.
final class HarnessPointers: @unchecked Sendable {
    let mutex: UnsafeMutablePointer<pthread_mutex_t>
    let condition: UnsafeMutablePointer<pthread_cond_t>
    let conditionMutex: UnsafeMutablePointer<pthread_mutex_t>
    init(mutex: UnsafeMutablePointer<pthread_mutex_t>, condition: UnsafeMutablePointer<pthread_cond_t>,
         conditionMutex: UnsafeMutablePointer<pthread_mutex_t>) {
        self.mutex = mutex
        self.condition = condition
        self.conditionMutex = conditionMutex
    }
}
