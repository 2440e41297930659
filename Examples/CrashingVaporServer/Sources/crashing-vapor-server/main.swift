// crashing-vapor-server — a Vapor 4 server with CrashCapture started and each request's crash
// context attached (CrashCaptureVapor's CrashContextMiddleware), for the tests:
// `GET /ok` answers, `GET /slow` answers after ~2 s (`?seconds=N`: requests left in flight),
// `GET /crash/:id` dies of SIGSEGV inside its route handler (which Vapor runs in a Task of its
// own, created inside the middleware's call), after two async helpers that each suspend once.
//
//   crashing-vapor-server [--dir DIR] [--port PORT] [--tracer]   (DIR also from CRASH_DIR; PORT 0 by default)
//
// Prints `listening on 127.0.0.1:PORT` on stdout (flushed) once the server accepts connections.
// CRASHCAPTURE_DISABLE=1 leaves capture off (CrashHandler.start itself honours it). `--tracer`
// bootstraps a stand-in tracer and Vapor's TracingMiddleware (see StandInTracer).
import CrashCapture
import CrashCaptureVapor
import Foundation
import Instrumentation
import Vapor
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

/// The `/crash/:id` route handler. Says on stderr which request it serves (Vapor's request id).
@Sendable @inline(never) func crashRoute(_ request: Request) async throws -> String {
    FileHandle.standardError.write(Data("crash request \(request.id)\n".utf8))
    let value = await loadAccount(request.parameters.get("id", as: Int.self) ?? 0)
    return "not reached \(value)\n"
}

/// The `/slow` route handler: a request that stays in flight for ~2 s (or `?seconds=N`). Says
/// on stderr when it has started, so a test knows the request is in flight.
@Sendable @inline(never) func slowRoute(_ request: Request) async throws -> String {
    let seconds = (try? request.query.get(Double.self, at: "seconds")) ?? 2
    FileHandle.standardError.write(Data("slow request started\n".utf8))
    try await Task.sleep(for: .seconds(seconds))
    return "slow\n"
}

// MARK: Tracing

/// A stand-in for a real tracer's W3C propagation (swift-otel's, say), for `--tracer`: extracting
/// a `traceparent` header starts this server's span in the service context — the header's trace,
/// and as span id the header's parent id with its hex digits reversed (so that a test can tell it
/// from the random one CrashContext would make) — and injecting writes that span back as a
/// `traceparent`. With no Tracer bootstrapped, TracingMiddleware's span is a no-op span holding
/// exactly this context, which it puts in `request.serviceContext`.
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
    FileHandle.standardError.write(Data("usage: crashing-vapor-server --dir DIR [--port PORT] (or CRASH_DIR=DIR)\n".utf8))
    exit(2)
}
let port = argument("--port").flatMap { Int($0) } ?? 0

let started = try CrashHandler.start(.init(directory: directory, appName: "crashing-vapor-server", appVersion: "1.0"))
FileHandle.standardError.write(Data("crash capture: \(started)\n".utf8))

// Vapor's own command line is not parsed: the server is started by hand below.
let app = try await Application.make(Environment(name: "production", arguments: [CommandLine.arguments[0]]))
if CommandLine.arguments.contains("--tracer") {
    InstrumentationSystem.bootstrap(StandInTracer())
    app.middleware.use(TracingMiddleware())
}
// Vapor matches the route before the application's middleware runs: the context names its template.
app.middleware.use(CrashContextMiddleware())
app.get("ok") { _ in "ok\n" }
app.get("slow", use: slowRoute)
app.get("crash", ":id", use: crashRoute)

/// Boots the application and starts its HTTP server; returns the port it listens on. (A function:
/// in top-level code the compiler picks Server's synchronous `start(address:)`, unavailable there.)
func start(_ app: Application, port: Int) async throws -> Int {
    try await app.asyncBoot()
    try await app.server.start(address: .hostname("127.0.0.1", port: port))
    return app.http.server.shared.localAddress?.port ?? port
}

let listening = try await start(app, port: port)
// One write(2), unbuffered: the test waits for this line.
FileHandle.standardOutput.write(Data("listening on 127.0.0.1:\(listening)\n".utf8))
// Served until the process dies (the tests crash it or kill it).
while true { try await Task.sleep(for: .seconds(3600)) }
