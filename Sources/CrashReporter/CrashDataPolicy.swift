// CrashDataPolicy.swift — what a crash's Sentry event and the record attached to it carry beyond
// what Sentry needs to group and symbolicate the crash (README, "What leaves the machine").
import CrashRecordFormat
import CrashSentry

/// What leaves the machine with a crash, beyond its signal, frames, registers, images (build ids,
/// addresses, file names), the fatal message and the app's name and version. Everything is off
/// by default but the host's OS details; the record on disk stays complete whatever is chosen.
public struct CrashDataPolicy: Sendable, Equatable {
    /// Raw memory: the crashed thread's stack (64 KiB from sp) and the windows around pc and the
    /// fault address, in the attached record. Whatever the process held there (request bodies,
    /// tokens, keys) goes with it.
    public var rawMemory: Bool
    /// The breadcrumbs (log lines left through `CrashHandler.leaveBreadcrumb` or the
    /// `BreadcrumbLogHandler`): in the event and in the attached record.
    public var breadcrumbs: Bool
    /// The compensating `$AppEnd` in the attached record: the user's `distinct_id`, login id and
    /// the tracker's super properties.
    public var identity: Bool
    /// Paths as they are: off, home directories in the executable's and images' paths and in the
    /// messages become `/home/<user>` (as the Swift backtracer's `sanitize` does).
    public var fullPaths: Bool
    /// The OS's kernel release and distribution (`contexts.os`); off leaves the OS's name alone.
    public var hostDetails: Bool

    public init(rawMemory: Bool = false, breadcrumbs: Bool = false, identity: Bool = false, fullPaths: Bool = false,
                hostDetails: Bool = true) {
        self.rawMemory = rawMemory
        self.breadcrumbs = breadcrumbs
        self.identity = identity
        self.fullPaths = fullPaths
        self.hostDetails = hostDetails
    }

    /// Everything, as before this policy existed: the record attached as it is on disk, the
    /// breadcrumbs in the event, full paths, the OS's details.
    public static let everything = CrashDataPolicy(rawMemory: true, breadcrumbs: true, identity: true, fullPaths: true, hostDetails: true)

    /// What the attached record keeps.
    package var redaction: RecordRedaction {
        RecordRedaction(rawMemory: rawMemory, breadcrumbs: breadcrumbs, identity: identity, fullPaths: fullPaths)
    }

    /// The policy as the crash-time uploader's `--sentry-data` argument: the settings that are
    /// on, comma-separated (`none` when none is).
    package var argument: String {
        let on = [("raw-memory", rawMemory), ("breadcrumbs", breadcrumbs), ("identity", identity), ("full-paths", fullPaths),
                  ("host-details", hostDetails)].filter(\.1).map(\.0)
        return on.isEmpty ? "none" : on.joined(separator: ",")
    }

    /// The policy an ``argument`` says; nil for anything else.
    package init?(argument: String) {
        let words = Set(argument.split(separator: ",").map(String.init))
        let known: Set = ["raw-memory", "breadcrumbs", "identity", "full-paths", "host-details", "none"]
        guard words.isSubset(of: known), !words.isEmpty else { return nil }
        self.init(rawMemory: words.contains("raw-memory"), breadcrumbs: words.contains("breadcrumbs"), identity: words.contains("identity"),
                  fullPaths: words.contains("full-paths"), hostDetails: words.contains("host-details"))
    }
}
