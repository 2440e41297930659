// CrashCaptureService.swift — crash capture as a Service of a swift-service-lifecycle ServiceGroup (trait "ServiceLifecycle").
#if ServiceLifecycle
public import CrashCapture
public import ServiceLifecycle

/// Crash capture for a program run by a `ServiceGroup` (a Hummingbird application, a gRPC server):
///
/// ```swift
/// let capture = try CrashCaptureService(.init(directory: "/var/lib/orders/crashes", appName: "orders", appVersion: "1.4.2"))
/// let group = ServiceGroup(configuration: .init(services: [capture, server], logger: logger))
/// try await group.run()
/// ```
///
/// Capture starts when the service is made, before the group runs any service, so a crash while
/// the others start is recorded too. Graceful shutdown leaves it installed: capture has nothing to
/// flush, and a crash during the rest of the shutdown is still recorded.
public struct CrashCaptureService: Service {
    /// What ``CrashHandler/start(_:)`` did (`.disabledByEnvironment` with `CRASHCAPTURE_DISABLE=1`).
    public let started: CrashHandler.StartResult

    /// Starts crash capture now (``CrashHandler/start(_:)``).
    /// - Throws: ``CrashCaptureError`` when capture cannot start (the record directory cannot be
    ///   created or opened, a handler cannot be installed); nothing is left installed then.
    public init(_ configuration: CrashHandler.Configuration) throws {
        started = try CrashHandler.start(configuration)
    }

    /// Waits for the group's graceful shutdown (or cancellation), then returns. Never throws:
    /// returning early would end the group (a service's end cancels it by default).
    public func run() async {
        try? await gracefulShutdown()
    }
}
#endif
