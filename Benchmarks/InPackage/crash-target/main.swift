// main.swift — crash-target: the program whose crash-to-exit time is measured.
//
//   crash-target none            dies of SIGSEGV with no handler of ours
//   crash-target capture DIR     starts CrashCapture writing to DIR, then dies of SIGSEGV
//   crash-target deep DIR        as capture, under 60 nested calls (a 64-frame record)
// Swift's own backtracer is on or off through SWIFT_BACKTRACE, as for any program.
// CRASH_TARGET_THREADS=N first starts N-1 more threads that block every signal and sleep (as
// libdispatch workers do: only the ptrace helper can stop them); CRASH_TARGET_NO_HELPER=1
// starts CrashCapture with threadHelper off.
// CRASH_TARGET_ASYNC_DEPTH=N (N ≥ 1; none and capture) crashes instead at the end of an N-deep
// chain of async functions in a Task, each level suspending once (so its callers are only in the
// async context chain, not on the machine stack) before it awaits the next, while the main
// thread sleeps.
// CRASH_TARGET_REQUESTS=N (with CRASH_TARGET_ASYNC_DEPTH) first puts N-1 requests in flight, each
// a task with a CrashContext attached that sleeps, and runs the crashing chain as the N-th.
import CrashCapture
#if canImport(Glibc)
import Glibc
#endif

@inline(never) func opaque<T>(_ value: T) -> T { value }

/// A line to stderr with write(2) (C's `stderr` is shared mutable state to Swift 6).
func writeError(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

@inline(never) func crash() {
    let pointer = UnsafeMutablePointer<Int>(bitPattern: opaque(8))!
    pointer.pointee = 1
}

@inline(never) func nest(_ depth: Int) {
    if depth == 0 { crash() } else { nest(depth - 1) }
    _ = opaque(depth)
}

nonisolated(unsafe) var asyncSink = 0

/// One level of the async chain: suspends once, then awaits the next level (or crashes at the
/// last), and works after the call so that the call is not in tail position.
@inline(never) func chain(_ level: Int) async {
    await Task.yield()
    if level == 0 { crash() } else { await chain(level - 1) }
    asyncSink &+= opaque(level)
}

/// Request `index`'s context. A global function: one declared in the top-level code would be the
/// main actor's, and the tasks calling it would wait forever behind the sleeping main thread.
func context(_ index: Int) -> CrashContext {
    var context = CrashContext(requestID: "req-\(index)", method: "GET", route: "/orders/{id}", path: "/orders/\(index)")
    context.continueTrace(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    return context
}

/// A thread that blocks every signal and sleeps for good.
func startBlockingThread() {
    var thread = pthread_t()
    let started = pthread_create(&thread, nil, { _ in
        var all = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_BLOCK, &all, nil)
        while true { sleep(60) }
    }, nil)
    if started != 0 { writeError("crash-target: pthread_create failed\n"); exit(70) }
}

if let count = getenv("CRASH_TARGET_THREADS").flatMap({ Int(String(cString: $0)) }), count > 1 {
    for _ in 1..<count { startBlockingThread() }
    usleep(5000)
}

let arguments = CommandLine.arguments
let mode = arguments.count > 1 ? arguments[1] : "none"
if mode != "none" {
    guard arguments.count > 2 else { writeError("usage: crash-target none | capture DIR | deep DIR\n"); exit(64) }
    var before = timespec()
    clock_gettime(CLOCK_MONOTONIC, &before)
    var configuration = CrashHandler.Configuration(directory: arguments[2], appName: "crash-target", appVersion: "1.0")
    configuration.threadHelper = getenv("CRASH_TARGET_NO_HELPER") == nil
    do { try CrashHandler.start(configuration) } catch {
        writeError("crash-target: \(error)\n")
        exit(70)
    }
    if getenv("CRASH_TARGET_TIME_START") != nil {
        var after = timespec()
        clock_gettime(CLOCK_MONOTONIC, &after)
        let micros = (after.tv_sec - before.tv_sec) * 1_000_000 + (after.tv_nsec - before.tv_nsec) / 1000
        writeError("start took \(micros) us\n")
    }
}
if let depth = getenv("CRASH_TARGET_ASYNC_DEPTH").flatMap({ Int(String(cString: $0)) }), depth >= 1 {
    let requests = getenv("CRASH_TARGET_REQUESTS").flatMap { Int(String(cString: $0)) } ?? 0
    for index in 1..<max(1, requests) {
        Task.detached { await CrashContext.withValue(context(index)) { while true { try? await Task.sleep(nanoseconds: 1_000_000_000) } } }
    }
    if requests > 0 { usleep(100_000) }
    // Detached: a task that inherited the main actor would wait forever behind the sleeping main thread.
    Task.detached {
        if requests > 0 { await CrashContext.withValue(context(0)) { await chain(depth - 1) } } else { await chain(depth - 1) }
    }
    while true { sleep(60) }
}
// CRASH_TARGET_DELAY_MS: crash that long after start (a crash once the program has settled, beside
// one at once).
if let delay = getenv("CRASH_TARGET_DELAY_MS").flatMap({ Int(String(cString: $0)) }), delay > 0 { usleep(UInt32(delay) * 1000) }
// CRASH_TARGET_MARK: the CLOCK_MONOTONIC nanoseconds just before the crash, on stderr ("mark N"),
// so that a timeline can split the crash's time from the process's end (Benchmarks/crash-timeline.py).
if getenv("CRASH_TARGET_MARK") != nil {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    writeError("mark \(Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec))\n")
}
if mode == "deep" { nest(60) } else { crash() }
exit(71)
