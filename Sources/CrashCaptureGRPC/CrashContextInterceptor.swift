// CrashContextInterceptor.swift — a grpc-swift 2 server interceptor that attaches each RPC's CrashContext (trait "GRPC").
#if GRPC
import CrashCapture
import CrashCaptureTracing
public import GRPCCore

/// Attaches a ``CrashContext`` to each RPC the server handles: a crash while the RPC is served
/// names it (the record, the `crashcapture:` line on stderr, the Sentry event and the OTLP log
/// record), a crash elsewhere lists it in flight.
///
/// ```swift
/// let server = GRPCServer(transport: transport, services: [orders], interceptors: [CrashContextInterceptor()])
/// ```
///
/// What it records of an RPC:
/// - the method as `POST` (every gRPC call is an HTTP/2 POST) and the route and path
///   `/<package.Service>/<Method>`, the method's path, which names the RPC as a route names a
///   request;
/// - the request id: the `x-request-id` metadata, when the client sent one;
/// - the trace: the span a tracer made current (add this interceptor after a tracing
///   interceptor), else the `traceparent` metadata continued with a new span id.
///
/// The handler runs inside this interceptor's call; a streaming response's messages are produced
/// after it returns, so they are served under the same context again.
public struct CrashContextInterceptor: ServerInterceptor {
    /// An interceptor for every RPC of the server it is given to.
    public init() {}

    /// Runs the rest of the RPC with its ``CrashContext`` attached.
    public func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>,
        context: ServerContext,
        next: @Sendable (_ request: StreamingServerRequest<Input>, _ context: ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        let crash = Self.crashContext(request.metadata, method: context.descriptor)
        var response = try await CrashContext.withValue(crash) { try await next(request, context) }
        if case .success(var contents) = response.accepted {
            let producer = contents.producer
            contents.producer = { writer in try await CrashContext.withValue(crash) { try await producer(writer) } }
            response.accepted = .success(contents)
        }
        return response
    }

    static func crashContext(_ metadata: Metadata, method: MethodDescriptor) -> CrashContext {
        let path = "/" + method.fullyQualifiedMethod
        var crash = CrashContext(requestID: metadata[stringValues: "x-request-id"].first { _ in true } ?? "",
                                 method: "POST", route: path, path: path)
        crash.takeTrace(header: metadata[stringValues: "traceparent"].first { _ in true }, tracer: TracerTraceparent.current())
        return crash
    }
}
#endif
