// ExampleCrashes.swift — what both example servers share: the crash at the end of two async
// helpers, the deadlock, the stand-in tracer, the command line.
import Foundation
public import Instrumentation
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

// MARK: The crash

/// Where the helpers leave their work, so that the optimiser keeps it.
nonisolated(unsafe) public var crashSink = 0

/// 0, from something the optimiser cannot see through: a pid is below 2^22 (the kernel's
/// PID_MAX_LIMIT), which the compiler does not know.
@inline(never) func opaqueZero() -> UInt { UInt(bitPattern: Int(getpid())) >> 32 }

/// An address as a plain value (Swift's pointer initialisers from an integer give nil for 0).
struct RawAddress { var bits: UInt }

/// Writes through a NULL pointer: SIGSEGV (SEGV_MAPERR at address 0).
@inline(never) public func dereferenceNull() {
    let pointer = unsafeBitCast(RawAddress(bits: opaqueZero()), to: UnsafeMutablePointer<Int>.self)
    pointer.pointee = 1
    crashSink &+= 1
}

// MARK: The deadlock

/// The `/deadlock` route's two locks, of two libraries, as code that mixes them has: SwiftNIO's
/// NIOLock and Foundation's NSLock (both glibc mutexes underneath).
let accountsLock = NIOLock()
let metricsLock = NSLock()

/// Two plain threads that take the locks in opposite order, started once: `cache-refresh` holds
/// the accounts lock and waits for the metrics lock, `metrics-flush` the other way round.
let deadlockedThreads: Void = {
    let holding = DispatchSemaphore(value: 0)
    let both = DispatchGroup()
    both.enter()
    both.enter()
    let cache = Thread {
        nameThisThread("cache-refresh")
        refreshAccountsCache(holding: holding, both: both)
    }
    let metrics = Thread {
        nameThisThread("metrics-flush")
        flushMetrics(holding: holding, both: both)
    }
    cache.start()
    metrics.start()
    holding.wait()
    holding.wait()
}()

@inline(never) func refreshAccountsCache(holding: DispatchSemaphore, both: DispatchGroup) {
    accountsLock.withLock {
        holding.signal()
        both.leave()
        both.wait()
        metricsLock.lock()
        crashSink &+= 1
        metricsLock.unlock()
    }
}

@inline(never) func flushMetrics(holding: DispatchSemaphore, both: DispatchGroup) {
    metricsLock.lock()
    holding.signal()
    both.leave()
    both.wait()
    accountsLock.withLock { crashSink &+= 2 }
    metricsLock.unlock()
}

/// The `/deadlock` route's work: starts the two deadlocked threads (once), then reads the
/// accounts, waiting on the accounts lock for good. The calling thread is blocked (a pool thread,
/// in a route handler), not suspended.
@inline(never) public func readAccountsBehindADeadlock() -> Int {
    _ = deadlockedThreads
    return accountsLock.withLock { crashSink }
}

/// Names the calling thread, as /proc and every record show it.
func nameThisThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY)
    guard fd >= 0 else { return }
    var bytes = Array(name.utf8.prefix(15))
    _ = write(fd, &bytes, bytes.count)
    close(fd)
}

// Two async helpers: each suspends once (so its caller is only on the async context chain, no
// longer on the machine stack), then calls the next, and does work after the call so the call
// is not in tail position.

@inline(never) public func loadAccount(_ id: Int) async -> Int {
    await Task.yield()
    let balance = await renderAccount(id)
    crashSink &+= balance
    return crashSink
}

@inline(never) public func renderAccount(_ id: Int) async -> Int {
    await Task.yield()
    dereferenceNull()
    crashSink &+= id
    return crashSink
}

// MARK: Tracing

/// A stand-in for a real tracer's W3C propagation (swift-otel's, say), for `--tracer`: extracting
/// a `traceparent` header starts this server's span in the service context — the header's trace,
/// and as span id the header's parent id with its hex digits reversed (so that a test can tell it
/// from the random one CrashContext would make) — and injecting writes that span back as a
/// `traceparent`. With no Tracer bootstrapped, a framework's TracingMiddleware span is a no-op span
/// holding exactly this context (Vapor also puts it in `request.serviceContext`).
public struct StandInTracer: Instrument {
    enum SpanKey: ServiceContextKey {
        typealias Value = String
    }

    public init() {}

    public func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        let parts = (extractor.extract(key: "traceparent", from: carrier) ?? "").split(separator: "-")
        guard parts.count == 4 else { return }
        context[SpanKey.self] = "00-\(parts[1])-\(String(parts[2].reversed()))-\(parts[3])"
    }

    public func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        if let span = context[SpanKey.self] { injector.inject(span, forKey: "traceparent", into: &carrier) }
    }
}

// MARK: The command line

/// The value after `name` on the command line, if any.
public func argument(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
