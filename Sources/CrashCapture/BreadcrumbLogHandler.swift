// BreadcrumbLogHandler.swift — a swift-log LogHandler that leaves every log line as a crash breadcrumb.
import Logging

/// Feeds log messages into the crash breadcrumb ring, optionally passing them on to another
/// handler so logging still goes where it went before.
///
/// ```swift
/// LoggingSystem.bootstrap { label in
///     BreadcrumbLogHandler(label: label, forwardingTo: StreamLogHandler.standardError(label: label))
/// }
/// ```
/// Never fails and never blocks: breadcrumbs are written to a lock-free ring.
public struct BreadcrumbLogHandler: LogHandler {
    /// The logger's label, recorded as a prefix of each breadcrumb.
    public let label: String
    /// Messages below this level are not recorded (they still reach `upstream`).
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    /// Where log lines go besides the breadcrumb ring, if anywhere.
    public var upstream: (any LogHandler)?

    public init(label: String, logLevel: Logger.Level = .info, forwardingTo upstream: (any LogHandler)? = nil) {
        self.label = label
        self.logLevel = logLevel
        self.upstream = upstream
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        if event.level >= logLevel {
            CrashCapture.leaveBreadcrumb("[\(label)] \(event.message)", level: event.level)
        }
        upstream?.log(event: event)
    }
}
