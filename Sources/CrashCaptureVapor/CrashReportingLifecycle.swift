// CrashReportingLifecycle.swift — the reporter's run ended with a Vapor 4 application (trait "Vapor").
#if Vapor
public import CrashReporter
public import Vapor

/// Ends the reporter's run when the Vapor application shuts down, so a redeploy's SIGTERM is told
/// as a clean exit (Sentry's release health: `exited`), not a crash or an abnormal end.
///
/// ```swift
/// let reporting = CrashReporting.start(.init(recordDirectory: "/var/lib/orders/crashes",
///                                            appName: "orders", appVersion: "1.4.2"))  // Sentry from SENTRY_DSN
/// let app = try await Application.make(.detect())
/// app.lifecycle.use(CrashReportingLifecycle(reporting))
/// app.middleware.use(CrashContextMiddleware())
/// try await app.execute()
/// try await app.asyncShutdown()   // ends the run: the sinks get their deadline
/// ```
///
/// Vapor does not use swift-service-lifecycle by default: its own lifecycle calls this handler
/// from `asyncShutdown()`, after the server stopped (`app.execute()` returns on SIGTERM and
/// SIGINT). Capture stays installed: a crash during the rest of the shutdown is still recorded.
public struct CrashReportingLifecycle: LifecycleHandler {
    /// The reporter whose run the application's shutdown ends.
    let reporting: CrashReporting
    /// How long the sinks may take at shutdown (``CrashReporting/shutdown(timeout:)``).
    let timeout: Duration

    /// Ends `reporting`'s run at the application's shutdown, giving the sinks `timeout`.
    public init(_ reporting: CrashReporting, timeout: Duration = .seconds(3)) {
        self.reporting = reporting
        self.timeout = timeout
    }

    /// Ends the run (``CrashReporting/shutdown(timeout:)``, without holding an event loop).
    public func shutdownAsync(_ application: Application) async {
        await reporting.shutdown(timeout: timeout)
    }

    /// Ends the run, for an application shut down with the synchronous `shutdown()`.
    public func shutdown(_ application: Application) {
        reporting.shutdown(timeout: timeout)
    }
}
#endif
