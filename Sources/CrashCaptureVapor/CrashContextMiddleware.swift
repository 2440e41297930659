// CrashContextMiddleware.swift — a Vapor 4 middleware that attaches each request's CrashContext (trait "Vapor").
#if Vapor
import CrashCapture
import CrashCaptureTracing
public import Vapor
import Synchronization

/// Attaches a ``CrashContext`` to each request it sees: a crash while the request is served names
/// it (the record, the `crashcapture:` line on stderr), a crash elsewhere lists it in flight.
///
/// ```swift
/// app.middleware.use(CrashContextMiddleware())
/// ```
///
/// What it records of a request:
/// - the request id: Vapor's `request.id` (the `X-Request-Id` header when the request has one,
///   else a UUID; the `request-id` of Vapor's log lines);
/// - the method, the path without its query, and the route's template as Vapor writes it
///   (`/orders/:id`, as its `TracingMiddleware` sets `http.route`): Vapor matches the route
///   before it runs the application's middleware;
/// - the trace: the span a tracer put in `request.serviceContext` (add this middleware after
///   Vapor's `TracingMiddleware`) or made current, else the `traceparent` header continued with
///   a new span id;
/// - the query only with `includeQuery` (it often carries tokens).
///
/// Vapor runs an async route handler in a `Task` it creates inside this middleware's call; the
/// context is bound to the task-local values such a `Task` inherits, so a crash there names the
/// request too. It changes nothing of the request or its response.
public struct CrashContextMiddleware: AsyncMiddleware {
    /// Whether the query string is recorded (off: it often carries tokens).
    public var includeQuery: Bool

    /// A middleware that records each request's context; the query only with `includeQuery`.
    public init(includeQuery: Bool = false) {
        self.includeQuery = includeQuery
    }

    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        Self.watchEventLoops(of: request.application)
        Self.watchStop(of: request.application)
        return try await CrashContext.withValue(crashContext(request)) {
            try await next.respond(to: request)
        }
    }

    /// The application's event loops, watched by hang detection from the first request on (a loop
    /// blocked for the stall threshold writes a hang record naming its thread; while hang detection
    /// is off, each loop gets one beat at the first request, to learn its thread, and nothing
    /// more). Once per process.
    static func watchEventLoops(of application: Application) {
        guard watching.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        HangDetector.watch(application.eventLoopGroup.makeIterator().enumerated().map { index, loop in
            WatchedLoop(name: "event loop \(index)") { beat in loop.execute(beat) }
        })
    }

    private static let watching = Atomic<Bool>(false)

    /// Vapor's serve command (`app.execute()`) stops the application on SIGTERM and SIGINT by
    /// completing `application.running`'s `onStop`; the server then waits for the requests in
    /// flight. From the first request served once it runs, that moment starts hang detection's
    /// shutdown clock (``HangDetector/shutdownBegan()``): a shutdown that waits for a request
    /// longer than the shutdown threshold is recorded before the SIGKILL that ends it.
    static func watchStop(of application: Application) {
        guard !stopWatched.load(ordering: .relaxed), let running = application.running,
              stopWatched.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        running.onStop.whenComplete { _ in HangDetector.shutdownBegan() }
    }

    private static let stopWatched = Atomic<Bool>(false)

    /// What a crash record says of `request`.
    func crashContext(_ request: Request) -> CrashContext {
        var crash = CrashContext(
            requestID: request.id,
            method: request.method.rawValue,
            route: request.route.map { "/" + $0.path.map { "\($0)" }.joined(separator: "/") } ?? "",
            path: request.url.path,
            query: includeQuery ? request.url.query ?? "" : ""
        )
        crash.takeTrace(header: request.headers.first(name: "traceparent"),
                        tracer: TracerTraceparent.of(request.serviceContext) ?? TracerTraceparent.current())
        return crash
    }
}
#endif
