// CrashContextMiddleware.swift — a Hummingbird 2 middleware that attaches each request's CrashContext (trait "Hummingbird").
#if Hummingbird
import CrashCapture
import CrashCaptureTracing
import Logging
public import Hummingbird
public import NIOCore
public import NIOPosix
import ServiceLifecycle
import Synchronization

/// Attaches a ``CrashContext`` to each request it sees: a crash while the request is served names
/// it (the record, the `crashcapture:` line on stderr), a crash elsewhere lists it in flight.
///
/// ```swift
/// let router = Router()
/// router.add(middleware: CrashContextMiddleware())   // before the routes it should cover
/// router.get("/orders/{id}") { request, context in … }
/// ```
///
/// What it records of a request:
/// - the request id: Hummingbird's own (`context.id`, the `hb.request.id` of its log lines), else
///   the `X-Request-Id` header; that header, when there is one beside Hummingbird's id, as the
///   attribute `x_request_id`;
/// - the method, the path without its query, and the route's template (`/orders/{id}`):
///   `Router`'s middleware runs once the route is matched (`context.endpointPath`). With
///   HummingbirdRouter's `RouterBuilder` middleware runs before the match: call
///   `CrashContext.setRoute(context.endpointPath ?? "")` in the handler to name the template;
/// - the trace: the span a tracer made current (add this middleware after Hummingbird's
///   `TracingMiddleware`), else the `traceparent` header continued with a new span id;
/// - the query only with `includeQuery` (it often carries tokens).
///
/// It changes nothing of the request or its response. With hang detection on, it also has the
/// application's event loops watched (CrashCapture's "When a server hangs"): a loop blocked for the
/// stall threshold writes a hang record naming its thread.
public struct CrashContextMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Whether the query string is recorded (off: it often carries tokens).
    public var includeQuery: Bool

    /// A middleware that records each request's context; the query only with `includeQuery`.
    /// - Parameter eventLoopGroup: the application's loops, which hang detection watches (once per
    ///   process): Hummingbird's default, `MultiThreadedEventLoopGroup.singleton`, unless the
    ///   application was given another; `nil` watches none. While hang detection is off, each loop
    ///   gets one beat when the middleware is made (to learn its thread) and nothing more.
    public init(includeQuery: Bool = false, eventLoopGroup: (any EventLoopGroup)? = MultiThreadedEventLoopGroup.singleton) {
        self.includeQuery = includeQuery
        if let eventLoopGroup, watchingEventLoops.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            HangDetector.watch(eventLoopGroup.makeIterator().enumerated().map { index, loop in
                WatchedLoop(name: "event loop \(index)") { beat in loop.execute(beat) }
            })
        }
    }

    /// Attaches the request's context for as long as `next` runs, then passes its response on unchanged.
    /// A graceful shutdown of the server (SIGTERM through ServiceLifecycle) that begins while the
    /// request is in flight starts hang detection's shutdown clock (``HangDetector/shutdownBegan()``):
    /// a shutdown that waits for this request longer than the shutdown threshold is recorded before
    /// the SIGKILL that ends it, wherever the reporter's service stands in the group.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await withGracefulShutdownHandler {
            try await CrashContext.withValue(crashContext(request, context: context)) {
                try await next(request, context)
            }
        } onGracefulShutdown: {
            HangDetector.shutdownBegan()
        }
    }

    /// What a crash record says of `request`.
    func crashContext(_ request: Request, context: Context) -> CrashContext {
        let header = Self.field("x-request-id", of: request)
        // The logger's metadata rather than `context.id`, which traps when a context source made
        // a logger without it.
        let frameworkID = context.logger[metadataKey: "hb.request.id"]?.description
        var crash = CrashContext(
            requestID: frameworkID ?? header ?? "",
            method: request.method.rawValue,
            route: context.endpointPath ?? "",
            path: request.uri.path,
            query: includeQuery ? request.uri.query ?? "" : ""
        )
        if let header, frameworkID != nil { crash.attributes["x_request_id"] = header }
        crash.takeTrace(header: Self.field("traceparent", of: request), tracer: TracerTraceparent.current())
        return crash
    }

    /// The value of the header named `name` (lowercase): by its canonical name, without
    /// importing swift-http-types for its field names.
    static func field(_ name: String, of request: Request) -> String? {
        request.headers.first { $0.name.canonicalName == name }?.value
    }
}
/// Whether a middleware has had its application's event loops watched (once per process).
private let watchingEventLoops = Atomic<Bool>(false)
#endif
