// crashing-vapor-server — a Vapor 4 server with CrashCapture started and each request's crash
// context attached (CrashCaptureVapor's CrashContextMiddleware), for the tests:
// `GET /ok` answers, `GET /slow` answers after ~2 s (`?seconds=N`: requests left in flight),
// `GET /crash/:id` dies of SIGSEGV inside its route handler (which Vapor runs in a Task of its
// own, created inside the middleware's call), after two async helpers that each suspend once.
//
// `GET /wait-forever` awaits a continuation never resumed (a graceful shutdown then waits for it).
// `GET /deadlock` starts two threads deadlocked on an NIOLock and an NSLock and waits on one of them.
//
//   crashing-vapor-server [--dir DIR] [--port PORT] [--tracer] [--report] [--shutdown-threshold S]
//   (DIR also from CRASH_DIR; PORT 0 by default)
//
// `--report` starts the whole reporter (Sentry from SENTRY_DSN, the runs) instead of capture alone,
// with CrashReportingLifecycle ending the run at the application's shutdown, which SIGTERM starts
// here as Vapor's serve command does (`application.running` stopped, the server shut down, waiting
// for the requests in flight, `asyncShutdown()`, exit 0). `--shutdown-threshold S`: hang detection
// on, and that shutdown may take S seconds before a hang record says where it waits.
// Prints `listening on 127.0.0.1:PORT` on stdout (flushed) once the server accepts connections.
// CRASHCAPTURE_DISABLE=1 leaves capture off (CrashHandler.start itself honours it). `--tracer`
// bootstraps a stand-in tracer and Vapor's TracingMiddleware (ExampleCrashes' StandInTracer).
import CrashCapture
import CrashCaptureVapor
import CrashReporter
import ExampleCrashes
import Foundation
import Instrumentation
import Synchronization
import Vapor
#if canImport(Glibc)
import Glibc
#endif

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

/// The `/wait-forever` route handler: awaits a continuation nobody resumes (kept, so the runtime
/// does not report it leaked). Says on stderr when it has started.
@Sendable @inline(never) func waitForeverRoute(_ request: Request) async throws -> String {
    FileHandle.standardError.write(Data("wait-forever request started\n".utf8))
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        forgotten.withLock { $0.append(continuation) }
    }
    return "not reached\n"
}
let forgotten = Mutex<[CheckedContinuation<Void, Never>]>([])

// MARK: Main

guard let directory = argument("--dir") ?? ProcessInfo.processInfo.environment["CRASH_DIR"] else {
    FileHandle.standardError.write(Data("usage: crashing-vapor-server --dir DIR [--port PORT] (or CRASH_DIR=DIR)\n".utf8))
    exit(2)
}
let port = argument("--port").flatMap { Int($0) } ?? 0

let shutdownThreshold = argument("--shutdown-threshold").flatMap(Double.init).map { seconds in
    var detection = HangDetection()
    detection.shutdownThreshold = .milliseconds(Int64(seconds * 1000))
    return detection
}
let reporting: CrashReporting?
if CommandLine.arguments.contains("--report") {
    var configuration = CrashReporting.Configuration(recordDirectory: directory, appName: "crashing-vapor-server", appVersion: "1.0")
    if let shutdownThreshold { configuration.hangDetection = shutdownThreshold }
    let started = CrashReporting.start(configuration)
    let result = switch started.captureResult {
    case .success(let result)?: "\(result)"
    case .failure(let error)?: "\(error)"
    case nil: "off"
    }
    FileHandle.standardError.write(Data("crash capture: \(result)\n".utf8))
    reporting = started
} else {
    var configuration = CrashHandler.Configuration(directory: directory, appName: "crashing-vapor-server", appVersion: "1.0")
    if let shutdownThreshold { configuration.hangDetection = shutdownThreshold }
    let started = try CrashHandler.start(configuration)
    FileHandle.standardError.write(Data("crash capture: \(started)\n".utf8))
    reporting = nil
}

// Vapor's own command line is not parsed: the server is started by hand below.
let app = try await Application.make(Environment(name: "production", arguments: [CommandLine.arguments[0]]))
if CommandLine.arguments.contains("--tracer") {
    InstrumentationSystem.bootstrap(StandInTracer())
    app.middleware.use(TracingMiddleware())
}
if let reporting { app.lifecycle.use(CrashReportingLifecycle(reporting)) }
// Vapor matches the route before the application's middleware runs: the context names its template.
app.middleware.use(CrashContextMiddleware())
app.get("ok") { _ in "ok\n" }
app.get("slow", use: slowRoute)
app.get("crash", ":id", use: crashRoute)
app.get("wait-forever", use: waitForeverRoute)
app.get("deadlock") { _ async -> String in "not reached \(readAccountsBehindADeadlock())\n" }
// A synchronous handler runs on the request's event loop: `/block-loop?seconds=N` blocks that loop
// (hang detection's event-loop test). Says on stderr when it has started.
app.get("block-loop") { request -> String in
    let seconds = request.query[Double.self, at: "seconds"] ?? 3
    FileHandle.standardError.write(Data("block-loop request started\n".utf8))
    usleep(useconds_t(seconds * 1_000_000))
    return "blocked\n"
}

/// Boots the application and starts its HTTP server; returns the port it listens on. (A function:
/// in top-level code the compiler picks Server's synchronous `start(address:)`, unavailable there.)
func start(_ app: Application, port: Int) async throws -> Int {
    try await app.asyncBoot()
    try await app.server.start(address: .hostname("127.0.0.1", port: port))
    return app.http.server.shared.localAddress?.port ?? port
}

/// The server shut down (waiting for the requests in flight), then the application (a function,
/// as `start`: top-level code would pick the synchronous `shutdown()`).
func stop(_ app: Application) async {
    await app.server.shutdown()
    try? await app.asyncShutdown()
}

// SIGTERM as Vapor's serve command takes it: `application.running` stopped (what the middleware's
// shutdown clock listens for), the server shut down (it waits for the requests in flight), the
// application shut down (its lifecycle handlers: the reporter's run ends), status 0. `_exit`, not
// `exit`: the reporter's exit hook would end the run too, and the tests check that the lifecycle
// handler does.
app.running = .start(using: app.eventLoopGroup.next().makePromise(of: Void.self))
signal(SIGTERM, SIG_IGN)
let terminate = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
terminate.setEventHandler { app.running?.stop() }
terminate.resume()

let listening = try await start(app, port: port)
// One write(2), unbuffered: the test waits for this line.
FileHandle.standardOutput.write(Data("listening on 127.0.0.1:\(listening)\n".utf8))
// Served until SIGTERM (or until the tests crash or kill it).
try await app.running?.onStop.get()
await stop(app)
_exit(0)
