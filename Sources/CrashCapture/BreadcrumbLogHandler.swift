// BreadcrumbLogHandler.swift — a swift-log LogHandler that leaves every log line as a crash breadcrumb.
public import Logging

/// Feeds log messages into the crash breadcrumb ring. A plain `LogHandler`: to keep logging
/// where it went before, compose it with swift-log's `MultiplexLogHandler`, which passes the
/// logger's metadata to every handler.
///
/// ```swift
/// LoggingSystem.bootstrap { label in
///     MultiplexLogHandler([BreadcrumbLogHandler(label: label), StreamLogHandler.standardError(label: label)])
/// }
/// ```
/// Never fails and never blocks: breadcrumbs are written to a lock-free ring.
public struct BreadcrumbLogHandler: LogHandler {
    /// The logger's label, recorded as a prefix of each breadcrumb.
    let label: String
    /// Messages below this level are not recorded.
    public var logLevel: Logger.Level
    /// Metadata added to every message (swift-log's `LogHandler` requirement).
    public var metadata: Logger.Metadata = [:]

    /// A handler for the logger labelled `label` that records messages at `logLevel` and above.
    public init(label: String, logLevel: Logger.Level = .info) {
        self.label = label
        self.logLevel = logLevel
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        guard event.level >= logLevel else { return }
        CrashHandler.leaveBreadcrumb("[\(label)] \(event.message)", level: event.level)
    }
}
