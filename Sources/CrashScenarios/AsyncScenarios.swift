// AsyncScenarios.swift — crashes in Swift async code: a request-shaped chain of async functions, each suspending once before it calls the next, in the shapes servers run (a Task, a TaskGroup child, async let, an actor hop, the main actor, a detached task, other tasks mid-chain).
import CCrashScenarios
import CrashCapture
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// The async chain. Each level suspends once (so its caller is no longer on the machine stack:
// only the async context chain knows it), then calls the next, and does work after the call so
// that the call is not in tail position. @inline(never) keeps each a function of its own in -O.

@inline(never) package func handleRequest(_ crash: @Sendable () -> Void) async {
    await Task.yield()
    await asyncLevel1(crash)
    levelSink &+= 10
}

@inline(never) package func asyncLevel1(_ crash: @Sendable () -> Void) async {
    await Task.yield()
    await asyncLevel2(crash)
    levelSink &+= 11
}

@inline(never) package func asyncLevel2(_ crash: @Sendable () -> Void) async {
    await Task.yield()
    await asyncLevel3(crash)
    levelSink &+= 12
}

@inline(never) package func asyncLevel3(_ crash: @Sendable () -> Void) async {
    await Task.yield()
    crash()
    levelSink &+= 13
}

/// A second request handler that reaches the same last level directly: its crash differs from
/// handleRequest's only in the async callers.
@inline(never) package func handleOtherRequest(_ crash: @Sendable () -> Void) async {
    await Task.yield()
    await asyncLevel3(crash)
    levelSink &+= 20
}

/// Spawns the request as a task group's child and waits for it.
@inline(never) package func spawnGroupChild(_ crash: @escaping @Sendable () -> Void) async {
    await Task.yield()
    await withTaskGroup(of: Void.self) { group in
        // The child waits until the parent is waiting for the group: crashing at once, it could
        // beat the parent to `waitForAll`, and the parent's chain would then end at its last
        // suspension (the Task.yield above), not in TaskGroup (seen once in CI).
        group.addTask {
            try? await Task.sleep(nanoseconds: 100_000_000)
            await handleRequest(crash)
        }
        await group.waitForAll()
    }
    levelSink &+= 21
}

/// Spawns the request behind async let and waits for it.
@inline(never) package func spawnAsyncLet(_ crash: @escaping @Sendable () -> Void) async {
    await Task.yield()
    async let request: Void = handleRequest(crash)
    await request
    levelSink &+= 22
}

/// A last level that traps in its own code, calling nothing: optimised, it sets up no frame
/// record, so its context is only in the async context register.
@inline(never) package func leafLevel3(_ value: Int?) async -> Int {
    await Task.yield()
    return value! &+ 1
}

@inline(never) package func leafLevel2() async {
    await Task.yield()
    levelSink &+= await leafLevel3(opaque(nil))
    levelSink &+= 23
}

/// The async levels innermost first, as they appear among a crashed thread's frames.
package let asyncChain = ["asyncLevel3", "asyncLevel2", "asyncLevel1", "handleRequest"]

/// An actor whose method is the chain's last level: reaching it hops to the actor's executor.
package actor RequestActor {
    package init() {}
    @inline(never) package func actorLevel3(_ crash: @Sendable () -> Void) async {
        await Task.yield()
        crash()
        levelSink &+= 14
    }
}

@inline(never) package func actorLevel2(_ actor: RequestActor, _ crash: @Sendable () -> Void) async {
    await Task.yield()
    await actor.actorLevel3(crash)
    levelSink &+= 15
}

@MainActor @inline(never) package func mainActorLevel3(_ crash: @Sendable () -> Void) async {
    await Task.yield()
    crash()
    levelSink &+= 16
}

@inline(never) package func mainActorLevel2(_ crash: @Sendable () -> Void) async {
    await Task.yield()
    await mainActorLevel3(crash)
    levelSink &+= 17
}

/// A chain that never ends: it spins in its last level without suspending, holding a pool thread.
@inline(never) func busyLevel1(_ started: UpdateCounter) async {
    await Task.yield()
    await busyLevel2(started)
    levelSink &+= 18
}

@inline(never) func busyLevel2(_ started: UpdateCounter) async {
    await Task.yield()
    await busyLevel3(started)
    levelSink &+= 19
}

@inline(never) func busyLevel3(_ started: UpdateCounter) async {
    await Task.yield()
    started.increment()
    while true { usleep(1000); levelSink &+= 1 }
}

/// A task executor with a thread of its own (a plain thread: it does not block signals, unlike
/// the pool's), as a server might run a subsystem's tasks on a dedicated thread.
final class ThreadTaskExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` is guarded by `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    init() {
        let thread = Thread { [self] in run() }
        thread.name = "task-executor"
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        condition.withLock {
            jobs.append(unowned)
            condition.signal()
        }
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// The crash at the end of every chain: a force-unwrap of nil.
@inline(never) @Sendable func asyncForceUnwrapNil() { let value: Int? = opaque(nil); levelSink &+= value! }

extension Scenarios {
    static func asyncExpectation(_ frames: [String], _ adjust: (inout Scenario.RecordExpectation) -> Void = { _ in }) -> Scenario.RecordExpectation {
        var expectation = Scenario.RecordExpectation(signal: swiftTrapSignal, frames: ["asyncForceUnwrapNil"] + frames,
                                                     message: "Unexpectedly found nil while unwrapping an Optional value",
                                                     messageOnlyInDebug: true, crashedOffMainThread: true)
        adjust(&expectation)
        return expectation
    }

    static func asyncScenario(_ name: String, _ summary: String, frames: [String] = asyncChain, mainThread: Bool = false,
                              adjust: (inout Scenario.RecordExpectation) -> Void = { _ in },
                              _ perform: @escaping @Sendable (ScenarioContext) -> Void) -> Scenario {
        Scenario(name, summary, ending: .signal(swiftTrapSignal),
                 record: asyncExpectation(frames) { $0.crashedOffMainThread = !mainThread; adjust(&$0) },
                 output: swiftRuntimeOutput, backtracerReference: true, perform: perform)
    }

    /// Every async scenario is compared frame for frame with Swift's backtracer's JSON report of
    /// the same crash (`backtracerReference`).
    static let asyncScenarios: [Scenario] = [
        asyncScenario("async-task-chain", "a force-unwrap at the end of a request-shaped async chain in a Task keeps every async caller, as Swift's backtracer shows them") { _ in
            Task { await handleRequest(asyncForceUnwrapNil) }
            while true { sleep(60) }
        },
        asyncScenario("async-other-handler", "the same last level reached from another handler: the async callers are what tells the two crashes apart",
                      frames: ["asyncLevel3", "handleOtherRequest"]) { _ in
            Task { await handleOtherRequest(asyncForceUnwrapNil) }
            while true { sleep(60) }
        },
        asyncScenario("async-taskgroup-child", "the same chain in a TaskGroup child task keeps its callers up to the child's root, then the parent task that spawned it, waiting for the group",
                      adjust: { $0.parentTaskFrames = ["TaskGroup", "spawnGroupChild"] }) { _ in
            Task { await spawnGroupChild(asyncForceUnwrapNil) }
            while true { sleep(60) }
        },
        asyncScenario("async-let", "the same chain behind async let keeps its callers up to the child's root, then the parent task waiting for it",
                      adjust: { $0.parentTaskFrames = ["spawnAsyncLet"] }) { _ in
            Task { await spawnAsyncLet(asyncForceUnwrapNil) }
            while true { sleep(60) }
        },
        asyncScenario("async-actor-hop", "a crash in an actor method reached by a hop to the actor's executor keeps the callers across the hop",
                      frames: ["actorLevel3", "actorLevel2"]) { _ in
            let actor = RequestActor()
            Task { await actorLevel2(actor, asyncForceUnwrapNil) }
            while true { sleep(60) }
        },
        asyncScenario("async-main-actor", "a crash in a @MainActor function (the main queue, which dispatchMain hands to a libdispatch thread on Linux) keeps its callers",
                      frames: ["mainActorLevel3", "mainActorLevel2"]) { _ in
            Task { await mainActorLevel2(asyncForceUnwrapNil) }
            dispatchMain()
        },
        Scenario("async-leaf-trap", "a force-unwrap trapping in the async function's own code (frame 0 is the async partial function itself) keeps its async callers",
                 ending: .signal(swiftTrapSignal),
                 record: .init(signal: swiftTrapSignal, frames: ["leafLevel3", "leafLevel2"],
                               message: "Unexpectedly found nil while unwrapping an Optional value", messageOnlyInDebug: true,
                               crashedOffMainThread: true),
                 output: swiftRuntimeOutput, backtracerReference: true) { _ in
            Task.detached { await leafLevel2() }
            while true { sleep(60) }
        },
        asyncScenario("async-detached", "the same chain in a detached task keeps every async caller") { _ in
            Task.detached { await handleRequest(asyncForceUnwrapNil) }
            while true { sleep(60) }
        },
        asyncScenario("async-chain-on-parked-thread", "a crash at the end of an async chain while another task spins mid-chain on a task executor's own thread (which does not block signals, so it parks itself): that thread's async callers are recorded too",
                      adjust: { $0.otherThreadAsyncFrames = ["busyLevel3", "busyLevel2", "busyLevel1"]; $0.asyncFramesOnParkedThread = true
                                $0.otherThreadsStopped = true }) { _ in
            let started = UpdateCounter()
            let executor = ThreadTaskExecutor()
            Task(executorPreference: executor) { await busyLevel1(started) }
            while started.value < 1 { usleep(1000) }
            Task.detached { await handleRequest(asyncForceUnwrapNil) }
            while true { sleep(60) }
        },
        asyncScenario("async-others-mid-chain", "a crash at the end of an async chain while another task spins mid-chain on a pool thread (which blocks every signal): that thread's async callers are recorded too",
                      adjust: { $0.otherThreadAsyncFrames = ["busyLevel3", "busyLevel2", "busyLevel1"]; $0.threadPtraced = true; $0.otherThreadsStopped = true }) { _ in
            // One spinning chain fewer than the pool has threads (one per core), so the crashing
            // task still gets a thread.
            let started = UpdateCounter()
            let busy = max(1, ProcessInfo.processInfo.activeProcessorCount - 1)
            for _ in 0..<busy { Task.detached { await busyLevel1(started) } }
            while started.value < busy { usleep(1000) }
            Task.detached { await handleRequest(asyncForceUnwrapNil) }
            while true { sleep(60) }
        },
    ]
}

extension Scenarios {
    /// A crash whose frame 0 leads to a fake async context chain of a bad shape: the handler
    /// must stop where the chain goes wrong, keep the death as it is, and a reader must not
    /// take the chain for async callers (the frame is no async function).
    static func fakeContextScenario(_ name: String, shape: Int32, _ summary: String, end: AsyncContextChain.End?, links: Int) -> Scenario {
        Scenario(name, summary, ending: .signal(SIGSEGV),
                 record: .init(signal: SIGSEGV, codeName: "SEGV_MAPERR", frames: ["cch_crash_with_fake_async_context"], faultAddress: 0),
                 check: { outcome in
                     guard let path = outcome.ownRecordFiles.first, let record = try? CrashRecordReader.read(path: path),
                           let thread = record.crashedThread else { return ["no record with a crashed thread"] }
                     var failures: [String] = []
                     if !record.isComplete { failures.append("record incomplete: \(record.completeness)") }
                     let chain = thread.asyncChain(atFrame: 0, source: .framePointer)
                     if let end {
                         if chain?.end != end { failures.append("frame 0's chain ends \(chain.map { "\($0.end)" } ?? "missing"), expected \(end)") }
                         if chain?.links.count != links { failures.append("frame 0's chain has \(chain?.links.count ?? 0) links, expected \(links)") }
                     } else if let chain {
                         failures.append("a chain was recorded for a candidate whose resume point is not code: \(chain)")
                     }
                     return failures
                 })
        { _ in throughLevels { cch_crash_with_fake_async_context(shape) } }
    }

    static let fakeContextScenarios: [Scenario] = [
        fakeContextScenario("async-context-cycle", shape: 0, "a context chain that loops (A → B → A) is cut where it repeats: two links, a cycle",
                            end: .cycle, links: 2),
        fakeContextScenario("async-context-unreadable", shape: 1, "a context whose Parent lies on a page that cannot be read ends the chain there without a second fault",
                            end: .unreadable, links: 1),
        fakeContextScenario("async-context-misaligned", shape: 2, "a misaligned Parent (AsyncContext is 16-byte aligned) ends the chain",
                            end: .misaligned, links: 1),
        fakeContextScenario("async-context-too-long", shape: 3, "a chain of 2,000 contexts stops at the crashed thread's 512-link budget",
                            end: .limit, links: 512),
        fakeContextScenario("async-context-not-code", shape: 4, "a candidate whose resume point is heap memory, not code, is not recorded at all",
                            end: nil, links: 0),
    ]
}

