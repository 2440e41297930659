// crashing-server — a Hummingbird 2 server with CrashCapture started (CrashCaptureService) and
// each request's crash context attached (CrashContextMiddleware), for the tests:
// `GET /ok` answers, `GET /slow` answers after ~2 s (`?seconds=N`: requests left in flight),
// `GET /crash` and `GET /crash/{id}` die of SIGSEGV inside their route handler, below an app
// middleware and two async helpers that each suspend once; `GET /block` blocks its pool thread in
// a synchronous sleep (`?seconds=N`), `GET /wait-forever` awaits a continuation never resumed
// (hang detection's tests: CRASHCAPTURE_HANG_SECONDS turns it on), `GET /leak` keeps what it
// allocates (`?mb=N`, 16 by default, a MiB every `?ms=M` ms, 20 by default: the memory watch's tests),
// `GET /deadlock` starts two threads deadlocked on an NIOLock and an NSLock and waits on one of them.
//
//   crashing-server [--dir DIR] [--port PORT] [--tracer] [--no-crash-context] [--report] [--shutdown-threshold S]
//   (DIR also from CRASH_DIR; PORT 0 by default)
//
// The guarded heap is linked (off unless CRASHCAPTURE_GUARDED_HEAP is set; then it prints what
// it sampled after a graceful shutdown).
//
// `--report` starts the whole reporter (CrashReportingService: Sentry from SENTRY_DSN, the runs)
// instead of capture alone (CrashCaptureService).
//
// Prints `listening on 127.0.0.1:PORT` on stdout (flushed) once the server accepts connections.
// CRASHCAPTURE_DISABLE=1 leaves capture off (CrashHandler.start itself honours it). SIGTERM
// ends it gracefully (exit 0). `--tracer` bootstraps a stand-in tracer and Hummingbird's
// TracingMiddleware (ExampleCrashes' StandInTracer).
import CrashCapture
import CrashCaptureGuardedHeap
import CrashCaptureHummingbird
import CrashCaptureServiceLifecycle
import CrashReporter
import ServiceLifecycle
import ExampleCrashes
import Foundation
import Hummingbird
import Instrumentation
import NIOCore
import NIOPosix
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// MARK: Routes

/// The `/crash` and `/crash/{id}` route handler. Says on stderr which request it serves
/// (Hummingbird's request id), so a test knows which one the record must name.
@Sendable @inline(never) func crashRoute(_ request: Request, _ context: BasicRequestContext) async throws -> String {
    FileHandle.standardError.write(Data("crash request \(context.id)\n".utf8))
    let value = await loadAccount(42)
    return "not reached \(value)\n"
}

/// The `/slow` route handler: a request that stays in flight for ~2 s (or `?seconds=N`). Says
/// on stderr when it has started, so a test knows the request is in flight.
@Sendable @inline(never) func slowRoute(_ request: Request, _ context: BasicRequestContext) async throws -> String {
    let seconds = request.uri.queryParameters.get("seconds", as: Double.self) ?? 2
    FileHandle.standardError.write(Data("slow request started\n".utf8))
    try await Task.sleep(for: .seconds(seconds))
    return "slow\n"
}

/// The `/block` route handler: a library call that blocks its thread for `?seconds=N` (3 by
/// default), a synchronous sleep on the Swift pool. Says on stderr when it has started.
@Sendable @inline(never) func blockRoute(_ request: Request, _ context: BasicRequestContext) async throws -> String {
    let seconds = request.uri.queryParameters.get("seconds", as: Double.self) ?? 3
    FileHandle.standardError.write(Data("block request started\n".utf8))
    blockingLibraryCall(seconds: seconds)
    return "blocked\n"
}

/// The `/block-loop` route handler: blocks one of the application's event loops (a task submitted
/// to it sleeps `?seconds=N`, 3 by default) and answers at once. Says on stderr when it has started.
@Sendable @inline(never) func blockLoopRoute(_ request: Request, _ context: BasicRequestContext) async throws -> String {
    let seconds = request.uri.queryParameters.get("seconds", as: Double.self) ?? 3
    MultiThreadedEventLoopGroup.singleton.next().execute { blockingLibraryCall(seconds: seconds) }
    FileHandle.standardError.write(Data("block-loop request started\n".utf8))
    return "blocking a loop\n"
}

/// The `/leak` route handler: allocates `?mb=N` MiB (16 by default), a MiB every `?ms=M`
/// milliseconds (20), each touched and kept for good (a cache that never evicts).
@Sendable @inline(never) func leakRoute(_ request: Request, _ context: BasicRequestContext) async throws -> String {
    let megabytes = request.uri.queryParameters.get("mb", as: Int.self) ?? 16
    let pause = request.uri.queryParameters.get("ms", as: Int.self) ?? 20
    for _ in 0 ..< megabytes {
        keepForGood(1 << 20)
        try await Task.sleep(for: .milliseconds(pause))
    }
    return "kept \(megabytes) MiB\n"
}

@inline(never) func keepForGood(_ bytes: Int) {
    let block = [UInt8](repeating: 1, count: bytes)
    kept.withLock { $0.append(block) }
}

/// What `/leak` keeps.
let kept = Mutex<[[UInt8]]>([])

@inline(never) func blockingLibraryCall(seconds: Double) {
    usleep(useconds_t(seconds * 1_000_000))
}

/// The `/wait-forever` route handler: awaits a continuation nobody resumes (an actor-style
/// deadlock); the request never ends. Says on stderr when it waits.
@Sendable @inline(never) func waitForeverRoute(_ request: Request, _ context: BasicRequestContext) async throws -> String {
    FileHandle.standardError.write(Data("wait-forever request started\n".utf8))
    await awaitSomethingThatNeverComes()
    return "not reached\n"
}

@inline(never) func awaitSomethingThatNeverComes() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        forgotten.withLock { $0.append(continuation) }
    }
}

/// Continuations nobody resumes (kept, so the runtime does not report them leaked).
let forgotten = Mutex<[CheckedContinuation<Void, Never>]>([])

/// The app's own middleware: every `/crash` request passes through it, awaiting the next responder.
struct AuditMiddleware<Context: RequestContext>: RouterMiddleware {
    @inline(never)
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        crashSink &+= 1
        var response = try await next(request, context)
        response.headers[.init("X-Audited")!] = "yes"
        crashSink &+= 2
        return response
    }
}

// MARK: Main

guard let directory = argument("--dir") ?? ProcessInfo.processInfo.environment["CRASH_DIR"] else {
    FileHandle.standardError.write(Data("usage: crashing-server --dir DIR [--port PORT] (or CRASH_DIR=DIR)\n".utf8))
    exit(2)
}
let port = argument("--port").flatMap { Int($0) } ?? 0

// Capture starts here, before the application's services run; it stays installed through a
// graceful shutdown.
let capture: any Service
// `--shutdown-threshold S`: hang detection on, and a graceful shutdown may take S seconds.
let shutdownThreshold = argument("--shutdown-threshold").flatMap(Double.init).map { seconds in
    var detection = HangDetection()
    detection.shutdownThreshold = .milliseconds(Int64(seconds * 1000))
    return detection
}
if CommandLine.arguments.contains("--report") {
    var configuration = CrashReporting.Configuration(recordDirectory: directory, appName: "crashing-server", appVersion: "1.0")
    if let shutdownThreshold { configuration.hangDetection = shutdownThreshold }
    let reporting = CrashReportingService(configuration)
    let started = switch reporting.reporting.captureResult {
    case .success(let result)?: "\(result)"
    case .failure(let error)?: "\(error)"
    case nil: "off"
    }
    FileHandle.standardError.write(Data("crash capture: \(started)\n".utf8))
    capture = reporting
} else {
    var configuration = CrashHandler.Configuration(directory: directory, appName: "crashing-server", appVersion: "1.0")
    if let shutdownThreshold { configuration.hangDetection = shutdownThreshold }
    let service = try CrashCaptureService(configuration)
    FileHandle.standardError.write(Data("crash capture: \(service.started)\n".utf8))
    capture = service
}

let router = Router()
if CommandLine.arguments.contains("--tracer") {
    InstrumentationSystem.bootstrap(StandInTracer())
    router.add(middleware: TracingMiddleware())
}
// Every route below is matched before its middleware runs: the context names its template.
// `--no-crash-context` leaves the middleware out (scripts/server-rps.sh measures what it costs).
if !CommandLine.arguments.contains("--no-crash-context") {
    router.add(middleware: CrashContextMiddleware())
}
router.get("ok") { _, _ in "ok\n" }
router.get("slow", use: slowRoute)
router.get("block", use: blockRoute)
router.get("block-loop", use: blockLoopRoute)
router.get("wait-forever", use: waitForeverRoute)
router.get("leak", use: leakRoute)
router.get("deadlock") { _, _ in "not reached \(readAccountsBehindADeadlock())\n" }
router.group("crash").add(middleware: AuditMiddleware()).get(use: crashRoute).get("{id}", use: crashRoute)

// The README's shape: capture (or the reporter) among the application's services, the middleware
// before the routes. A graceful shutdown that waits for a request starts the shutdown clock from
// inside that request (CrashContextMiddleware), wherever the service stands.
let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "crashing-server"),
    services: [capture],
    onServerRunning: { channel in
        // One write(2), unbuffered: the test waits for this line.
        FileHandle.standardOutput.write(Data("listening on 127.0.0.1:\(channel.localAddress?.port ?? port)\n".utf8))
    }
)
try await app.runService()
// The guarded heap (linked; on when CRASHCAPTURE_GUARDED_HEAP set it): what it sampled, for the
// tests and scripts/server-rps.sh --guarded-heap.
var sampled: UInt64 = 0, inUse: UInt32 = 0
if cc_guarded_malloc_status(&sampled, &inUse) != 0 {
    FileHandle.standardOutput.write(Data("guarded heap: \(sampled) allocations sampled, \(inUse) in use\n".utf8))
}
