// TracerTraceparent.swift — the span a tracer made current, as the W3C traceparent its instrument writes: what both server middlewares ask of swift-distributed-tracing.
#if Hummingbird || Vapor || GRPC
package import Instrumentation

/// The `traceparent` the bootstrapped instrument (`InstrumentationSystem.instrument`) writes for
/// a context: the tracer's own ids, whatever tracer it is (swift-otel's W3C propagator writes
/// one), without depending on it. `nil` when it writes none: no tracer bootstrapped (the
/// no-op instrument writes nothing), or a propagator that is not W3C's.
package enum TracerTraceparent {
    /// For the task's current context (`ServiceContext.current`, where Hummingbird's
    /// `TracingMiddleware` and `withSpan` put their span).
    package static func current() -> String? { of(ServiceContext.current) }

    /// For `context` (Vapor's `request.serviceContext`, where its `TracingMiddleware` puts its span).
    package static func of(_ context: ServiceContext?) -> String? {
        guard let context else { return nil }
        var carrier = Carrier()
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: Injecting())
        return carrier.traceparent
    }

    struct Carrier: Sendable {
        var traceparent: String?
    }

    struct Injecting: Injector {
        func inject(_ value: String, forKey key: String, into carrier: inout Carrier) {
            if key.lowercased() == "traceparent" { carrier.traceparent = value }
        }
    }
}
#endif
