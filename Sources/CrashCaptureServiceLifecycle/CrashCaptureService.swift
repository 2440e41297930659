// CrashCaptureService.swift — crash capture as a Service of a swift-service-lifecycle ServiceGroup (trait "ServiceLifecycle").
#if ServiceLifecycle
public import CrashCapture
public import ServiceLifecycle

/// Crash capture for a program run by a `ServiceGroup` (a Hummingbird application, a gRPC server):
///
/// ```swift
/// let capture = try CrashCaptureService(.init(directory: "/var/lib/orders/crashes", appName: "orders", appVersion: "1.4.2"))
/// let group = ServiceGroup(configuration: .init(services: [server, capture], logger: logger))
/// try await group.run()
/// ```
///
/// Capture starts when the service is made, before the group runs any service, so a crash while
/// the others start is recorded too. A group shuts its services down in reverse order: after the
/// server, this service hears of the graceful shutdown first and starts hang detection's shutdown
/// clock at once. (Hummingbird's and Vapor's `CrashContextMiddleware` start it from the requests in
/// flight, so there the order does not matter.) Graceful shutdown leaves it installed: capture has nothing to
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
    /// returning early would end the group (a service's end cancels it by default). A graceful
    /// shutdown starts hang detection's shutdown clock (``HangDetector/shutdownBegan()``).
    public func run() async {
        if (try? await gracefulShutdown()) != nil { HangDetector.shutdownBegan() }
    }
}
#endif

#if ServiceLifecycle
public import CrashReporter

/// The whole reporter for a program run by a `ServiceGroup`: capture, the next launch's sinks
/// (Sentry, the app's own) and the runs, with the run ended when the group shuts down.
///
/// ```swift
/// let reporting = CrashReportingService(.init(recordDirectory: "/var/lib/orders/crashes",
///                                              appName: "orders", appVersion: "1.4.2"))   // Sentry from SENTRY_DSN
/// let group = ServiceGroup(configuration: .init(services: [reporting, server], logger: logger))
/// try await group.run()
/// ```
///
/// The reporter starts when the service is made, before the group runs any service. At the
/// group's graceful shutdown (SIGTERM on a redeploy) it ends the run: the sinks get their
/// deadline, the Sentry sink sends what it can, and the run is told as exited at the next launch
/// (Sentry's release health counts it as a clean session, not a crash or an abnormal end).
/// Capture stays installed: a crash during the rest of the shutdown is still recorded, and told.
/// Before the server, the run ends once the server has finished; a shutdown that hangs is then
/// timed by the server's `CrashContextMiddleware` (Hummingbird, Vapor), which starts hang
/// detection's shutdown clock from the requests in flight.
public struct CrashReportingService: Service {
    /// The reporter this service started.
    public let reporting: CrashReporting

    /// Starts the reporter now (``CrashReporting/start(_:)``).
    public init(_ configuration: CrashReporting.Configuration) {
        reporting = CrashReporting.start(configuration)
    }

    /// Waits for the group's graceful shutdown (or cancellation), then ends the run
    /// (``CrashReporting/shutdown(timeout:)``, without holding the group's executor). Never
    /// throws: returning early would end the group.
    public func run() async {
        if (try? await gracefulShutdown()) != nil { HangDetector.shutdownBegan() }
        await reporting.shutdown()
    }
}
#endif
