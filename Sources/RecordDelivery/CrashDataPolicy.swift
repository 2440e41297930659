// CrashDataPolicy.swift — what a crash's Sentry event and the record attached to it carry beyond
// what Sentry needs to group and symbolicate the crash (CrashReporter.docc, "What leaves the machine").
package import CrashRecordFormat

/// What leaves the machine with a crash, beyond its signal, frames, registers, images (build ids,
/// addresses, file names), the fatal message and the app's name and version. Everything is off
/// by default but ``hostDetails``, which names the host as Sentry's server SDKs do by default (a
/// server team needs to know which host crashed); the record on disk stays complete whatever is
/// chosen.
public struct CrashDataPolicy: Sendable, Equatable {
    /// Raw memory: the crashed thread's stack (64 KiB from sp) and the windows around pc and the
    /// fault address, in the attached record. Whatever the process held there (request bodies,
    /// tokens, keys) goes with it.
    public var rawMemory: Bool
    /// The breadcrumbs (log lines left through `CrashHandler.leaveBreadcrumb` or the
    /// `BreadcrumbLogHandler`): in the event and in the attached record.
    public var breadcrumbs: Bool
    /// Who the user was: the compensating `$AppEnd` in the attached record (the user's
    /// `distinct_id`, login id and the tracker's super properties), the app scope's user
    /// (`CrashHandler.updateScope`) as the Sentry event's `user` and the OTLP record's `user.*`.
    /// Off, none of it leaves; the session's `did` is the installation's id either way.
    public var identity: Bool
    /// Paths as they are. Off, the user-specific directories of the executable's and images'
    /// paths and of the messages are taken out, as the Swift backtracer's `sanitize` does on macOS
    /// (`/home/alice/src/app/app` becomes `/home/USER/*/app`, `/tmp/build-7/x/app` becomes
    /// `/tmp/*/app`; the system's own directories stay); the file names, which symbolication
    /// needs, are kept.
    public var fullPaths: Bool
    /// The host: its name (the Sentry event's and session's `server_name`, OTLP's `host.name`),
    /// the kernel release and distribution (`contexts.os`, `os.*`), its memory, container id and
    /// Kubernetes namespace and pod (`contexts.host`, `container.id`, `k8s.*`). On by default, as
    /// Sentry's server SDKs send `server_name`; off leaves only the OS's name.
    public var hostDetails: Bool
    /// The query string of the request a crash killed (`CrashContext.query`, empty unless the
    /// app records it): the event's `request.query_string` and the record's query fields. Off,
    /// neither leaves; queries often carry tokens. The request's id, method, route, path and
    /// trace always go (they tell the crash's request apart, and hold no more than an access log).
    public var requestQuery: Bool
    /// The requests' own key/values (`CrashContext.attributes`: a tenant, a user's id, whatever
    /// the app put there): the event's `extra.request_attributes` and the record's key/value
    /// fields. Off, neither leaves: the app chose them, so nobody here can say they are harmless.
    public var requestAttributes: Bool
    /// The frames' function names, read from the program's own binaries on this machine (their
    /// symbol tables) when the event or log record is made, so that a frame reads
    /// `OrderRoutes.charge(_:)` before any debug file is uploaded; Sentry's own symbolication
    /// replaces them once it has the debug files. On by default: they name the program's code,
    /// not its data, and are what Sentry shows after an upload anyway. Off, frames carry their
    /// addresses and images only.
    public var functionNames: Bool

    /// A policy with these settings; the defaults send what Sentry needs to group and symbolicate, the functions' names, and the host's OS details.
    public init(rawMemory: Bool = false, breadcrumbs: Bool = false, identity: Bool = false, fullPaths: Bool = false,
                hostDetails: Bool = true, requestQuery: Bool = false, requestAttributes: Bool = false, functionNames: Bool = true) {
        self.functionNames = functionNames
        self.rawMemory = rawMemory
        self.breadcrumbs = breadcrumbs
        self.identity = identity
        self.fullPaths = fullPaths
        self.hostDetails = hostDetails
        self.requestQuery = requestQuery
        self.requestAttributes = requestAttributes
    }

    /// Everything, as before this policy existed: the record attached as it is on disk, the
    /// breadcrumbs in the event, full paths, the OS's details, the request's query and key/values.
    public static let everything = CrashDataPolicy(rawMemory: true, breadcrumbs: true, identity: true, fullPaths: true, hostDetails: true,
                                                   requestQuery: true, requestAttributes: true, functionNames: true)

    /// What the attached record keeps (its request settings apply to the event too).
    package var redaction: RecordRedaction {
        RecordRedaction(rawMemory: rawMemory, breadcrumbs: breadcrumbs, identity: identity, fullPaths: fullPaths,
                        requestQuery: requestQuery, requestAttributes: requestAttributes)
    }

    /// What the Sentry event and the OTLP log record keep (raw memory aside: it decides attachments).
    package var minimisation: RecordMinimisation { RecordMinimisation(redaction: redaction, hostDetails: hostDetails, functionNames: functionNames) }

    /// The settings by their ``argument`` words.
    private var words: [(String, Bool)] {
        [("raw-memory", rawMemory), ("breadcrumbs", breadcrumbs), ("identity", identity), ("full-paths", fullPaths),
         ("host-details", hostDetails), ("request-query", requestQuery), ("request-attributes", requestAttributes),
         ("function-names", functionNames)]
    }

    /// The policy as the crash-time uploader's `--data` argument: the settings that are
    /// on, comma-separated (`none` when none is).
    package var argument: String {
        let on = words.filter(\.1).map(\.0)
        return on.isEmpty ? "none" : on.joined(separator: ",")
    }

    /// The policy an ``argument`` says; nil for anything else.
    package init?(argument: String) {
        let words = Set(argument.split(separator: ",").map(String.init))
        let known = Set(CrashDataPolicy().words.map(\.0) + ["none"])
        guard words.isSubset(of: known), !words.isEmpty else { return nil }
        self.init(rawMemory: words.contains("raw-memory"), breadcrumbs: words.contains("breadcrumbs"), identity: words.contains("identity"),
                  fullPaths: words.contains("full-paths"), hostDetails: words.contains("host-details"),
                  requestQuery: words.contains("request-query"), requestAttributes: words.contains("request-attributes"),
                  functionNames: words.contains("function-names"))
    }
}
