// crashing-server — a Hummingbird 2 server with CrashCapture started (CrashCaptureService) and
// each request's crash context attached (CrashContextMiddleware), for the tests:
// `GET /ok` answers, `GET /slow` answers after ~2 s (`?seconds=N`: requests left in flight),
// `GET /crash` and `GET /crash/{id}` die of SIGSEGV inside their route handler, below an app
// middleware and two async helpers that each suspend once.
//
//   crashing-server [--dir DIR] [--port PORT] [--tracer] [--no-crash-context]   (DIR also from CRASH_DIR; PORT 0 by default)
//
// Prints `listening on 127.0.0.1:PORT` on stdout (flushed) once the server accepts connections.
// CRASHCAPTURE_DISABLE=1 leaves capture off (CrashHandler.start itself honours it). SIGTERM
// ends it gracefully (exit 0). `--tracer` bootstraps a stand-in tracer and Hummingbird's
// TracingMiddleware (see StandInTracer).
import CrashCapture
import CrashCaptureHummingbird
import CrashCaptureServiceLifecycle
import Foundation
import Hummingbird
import Instrumentation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

// MARK: The crash

nonisolated(unsafe) var crashSink = 0

/// 0, from something the optimiser cannot see through: a pid is below 2^22 (the kernel's
/// PID_MAX_LIMIT), which the compiler does not know.
@inline(never) func opaqueZero() -> UInt { UInt(bitPattern: Int(getpid())) >> 32 }

/// An address as a plain value (Swift's pointer initialisers from an integer give nil for 0).
struct RawAddress { var bits: UInt }

/// Writes through a NULL pointer: SIGSEGV (SEGV_MAPERR at address 0).
@inline(never) func dereferenceNull() {
    let pointer = unsafeBitCast(RawAddress(bits: opaqueZero()), to: UnsafeMutablePointer<Int>.self)
    pointer.pointee = 1
    crashSink &+= 1
}

// Two async helpers: each suspends once (so its caller is only on the async context chain, no
// longer on the machine stack), then calls the next, and does work after the call so the call
// is not in tail position.

@inline(never) func loadAccount(_ id: Int) async -> Int {
    await Task.yield()
    let balance = await renderAccount(id)
    crashSink &+= balance
    return crashSink
}

@inline(never) func renderAccount(_ id: Int) async -> Int {
    await Task.yield()
    dereferenceNull()
    crashSink &+= id
    return crashSink
}

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

// MARK: Tracing

/// A stand-in for a real tracer's W3C propagation (swift-otel's, say), for `--tracer`: extracting
/// a `traceparent` header starts this server's span in the service context — the header's trace,
/// and as span id the header's parent id with its hex digits reversed (so that a test can tell it
/// from the random one CrashContext would make) — and injecting writes that span back as a
/// `traceparent`. With no Tracer bootstrapped, TracingMiddleware's span is a no-op span holding
/// exactly this context.
struct StandInTracer: Instrument {
    enum SpanKey: ServiceContextKey {
        typealias Value = String
    }

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        let parts = (extractor.extract(key: "traceparent", from: carrier) ?? "").split(separator: "-")
        guard parts.count == 4 else { return }
        context[SpanKey.self] = "00-\(parts[1])-\(String(parts[2].reversed()))-\(parts[3])"
    }

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        if let span = context[SpanKey.self] { injector.inject(span, forKey: "traceparent", into: &carrier) }
    }
}

// MARK: Main

func argument(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

guard let directory = argument("--dir") ?? ProcessInfo.processInfo.environment["CRASH_DIR"] else {
    FileHandle.standardError.write(Data("usage: crashing-server --dir DIR [--port PORT] (or CRASH_DIR=DIR)\n".utf8))
    exit(2)
}
let port = argument("--port").flatMap { Int($0) } ?? 0

// Capture starts here, before the application's services run; it stays installed through a
// graceful shutdown.
let capture = try CrashCaptureService(.init(directory: directory, appName: "crashing-server", appVersion: "1.0"))
FileHandle.standardError.write(Data("crash capture: \(capture.started)\n".utf8))

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
router.group("crash").add(middleware: AuditMiddleware()).get(use: crashRoute).get("{id}", use: crashRoute)

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
