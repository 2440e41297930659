// SentryOptions.swift — what the app says of its Sentry project: where the crashes go, which
// release and environment they are filed under, release health, the minidump, the app's hook.
// The reporter's configuration holds one (`CrashReporting.Configuration.sentry`); what every
// sink shares (the data policy) stays the reporter's.
public import HTTPExchange
#if canImport(Glibc)
import Glibc
#endif

/// Crashes (and hangs) sent to a Sentry project, each as an event with the record attached, and
/// each run as a release-health session. The release, environment and dist default to
/// `SENTRY_RELEASE`, `SENTRY_ENVIRONMENT` and `SENTRY_DIST`, as Sentry's SDKs read them.
///
/// ```swift
/// var sentry = SentryOptions(dsn: "https://<key>@o1.ingest.sentry.io/42")
/// sentry.environment = "staging"
/// configuration.sentry = sentry
/// ```
public struct SentryOptions: Sendable {
    /// The project's DSN (`https://<key>@<host>/<project id>`). One that does not parse keeps the
    /// records for the next launch and says why in `CrashReporting.sentryDSNError`.
    public var dsn: String
    /// The environment this run's events and session are filed under. Defaults to
    /// `SENTRY_ENVIRONMENT`, else `production` (Sentry's own default).
    public var environment: String
    /// The release (default `SENTRY_RELEASE`; nil: `<appName>@<appVersion>`).
    public var release: String?
    /// The release's build (default `SENTRY_DIST`).
    public var dist: String?
    /// Release health: each run a Sentry session (on by default, as Sentry's SDKs have it).
    /// Off, only crashes are sent: a launch after a run that ended without one sends nothing.
    /// The sessions of runs that ended without a crash are sent together, by a process that
    /// has lived 5 s or once the oldest has waited an hour: a command-line tool pays no
    /// request per launch (the Sentry article, "Release health").
    public var sessions = true
    /// When those sessions are sent (tests send each at once).
    package var sessionBatching = SessionBatching()
    /// Retries and timeouts (one record per request).
    public var upload = UploadPolicy()
    /// Sends a Linux minidump of each crash beside its event (an `event.minidump` attachment),
    /// for Sentry's own stackwalking and for downloading into a debugger. Off by default; sent
    /// only where the data policy allows `rawMemory` (a minidump is the crashed thread's stack
    /// memory): otherwise no minidump goes. Crash-time upload sends none.
    public var minidump = false
    /// Sees each crash's event (its JSON text) before it is sent, as Sentry's `before_send`:
    /// return it changed or as is, or nil to drop it (the record is then acknowledged as
    /// delivered). What it returns must be a JSON object with the same `event_id`, else the
    /// record is given up (in the Sentry sink's report as quarantined). With a hook, crash-time
    /// upload is off (the hook runs only in the app).
    public var beforeSend: (@Sendable (String) -> String?)?
    /// The envelope builder (tests); nil: CrashSentry's, minimised by the data policy, then ``beforeSend``.
    package var envelope: SentryEnvelopeMaker?

    /// Crashes sent to the project at `dsn`; the release, environment and dist from the environment.
    public init(dsn: String) {
        self.dsn = dsn
        environment = Self.defaultEnvironment
        release = Self.defaultRelease
        dist = Self.defaultDist
    }

    /// The environment a run is filed under when the app set none: `SENTRY_ENVIRONMENT`, else
    /// "production". (Also what the run's marker says without Sentry options, so that a later
    /// launch that sends to Sentry files the run as this one would have.)
    package static var defaultEnvironment: String { variable("SENTRY_ENVIRONMENT") ?? "production" }
    /// `SENTRY_RELEASE`, nil when unset.
    package static var defaultRelease: String? { variable("SENTRY_RELEASE") }
    /// `SENTRY_DIST`, nil when unset.
    package static var defaultDist: String? { variable("SENTRY_DIST") }

    /// What `SENTRY_DSN` asks for (nil when it is unset or empty).
    package static func fromEnvironment() -> SentryOptions? {
        variable("SENTRY_DSN").map { SentryOptions(dsn: $0) }
    }

    /// A variable of the environment, nil when unset or empty. (getenv, not ProcessInfo: building
    /// Foundation's environment dictionary costs the launch a third of a millisecond.)
    package static func variable(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
    }
}
