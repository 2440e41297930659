// Runs.swift — how a run of the app started and ended, as the reporter's run ledger (CrashReporter's
// RunLedger, its only record of runs) tells every sink.
package import HostFacts

/// How one run started: written by the run itself at its start.
package struct RunStart: Sendable, Equatable {
    /// The app's name for this run: 1–64 of `A-Z`, `a-z`, `0-9`, `_`, `-` (it names the marker file).
    package var runID: String
    /// The process (pid, boot, start time: pid reuse cannot pass for it).
    package var process: ProcessIdentity
    /// When the run started, ms since the epoch.
    package var startWallMilliseconds: Int64
    /// When the run started on CLOCK_MONOTONIC, ns.
    package var startMonotonicNanoseconds: Int64
    package var appName: String
    package var appVersion: String
    /// The run's memory cgroup OOM-kill counter at start (`OOMKillCounter`); nil when none can be read.
    package var oomKills: OOMKillReading?
    /// What the run's events and session are filed under, as the run had them (a later launch
    /// may be another release): its release, environment and the release's build.
    package var release: String?
    package var environment: String?
    package var dist: String?

    package init(runID: String, process: ProcessIdentity, startWallMilliseconds: Int64, startMonotonicNanoseconds: Int64,
                 appName: String, appVersion: String, oomKills: OOMKillReading?,
                 release: String? = nil, environment: String? = nil, dist: String? = nil) {
        self.runID = runID
        self.process = process
        self.startWallMilliseconds = startWallMilliseconds
        self.startMonotonicNanoseconds = startMonotonicNanoseconds
        self.appName = appName
        self.appVersion = appVersion
        self.oomKills = oomKills
        self.release = release
        self.environment = environment
        self.dist = dist
    }

    /// Whether `id` can be a run id: 1–64 of `A-Z`, `a-z`, `0-9`, `_`, `-` (it names files).
    package static func isValidRunID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count) && id.utf8.allSatisfy(isRunIDByte)
    }

    package static func isRunIDByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F || byte == 0x2D
    }

    /// This process's run, started now, with its memory cgroup's counter read now.
    package static func now(runID: String, appName: String, appVersion: String) -> RunStart {
        RunStart(runID: runID, process: .current, startWallMilliseconds: Clock.wallMilliseconds(),
                 startMonotonicNanoseconds: Clock.monotonicNanoseconds(), appName: appName, appVersion: appVersion,
                 oomKills: OOMKillCounter.locate().flatMap(OOMKillCounter.read))
    }
}

/// How a run of the app ended.
public enum RunEnd: Sendable, Equatable {
    /// It exited normally (its end was written at exit): when, and how long it ran on CLOCK_MONOTONIC.
    case exited(wallMilliseconds: Int64, durationNanoseconds: Int64)
    /// It crashed: the name of its crash record when known.
    case crashed(record: String?)
    /// It vanished without an end and without a crash record: a SIGKILL, a power cut, a reboot.
    /// `oom` when its memory cgroup counted an OOM kill since the run started.
    case killed(oom: Bool)
}

/// When a running run was last seen alive: its marker's clocks, rewritten every 2 s while it runs.
/// A run that was killed ended between this and 2 s later.
package struct RunLastSeen: Sendable, Equatable {
    /// ms since the epoch.
    package var wallMilliseconds: Int64
    /// How long it had run then, on CLOCK_MONOTONIC.
    package var durationNanoseconds: Int64

    package init(wallMilliseconds: Int64, durationNanoseconds: Int64) {
        self.wallMilliseconds = wallMilliseconds
        self.durationNanoseconds = durationNanoseconds
    }
}

/// One finished run of the app, as a later launch hands it to every sink (``CrashRecordSink/takeRuns(_:)``).
public struct EndedRun: Sendable, Equatable {
    package var start: RunStart
    /// How it ended.
    public var end: RunEnd
    /// When it was last seen alive (nil when it ended within its first 2 s, or before it was
    /// first seen): what a killed run's duration is.
    package var lastSeen: RunLastSeen?
    /// A run killed while a hang was still open, or killed by the OOM killer after a memory
    /// record: the name of its fatal record in the record directory (that record, with how the
    /// run ended), which the sinks get like any record.
    package var fatalRecord: String?

    /// The run's id (the one its crash record, if any, carries).
    public var runID: String { start.runID }
    /// When it started, ms since the epoch.
    public var startWallMilliseconds: Int64 { start.startWallMilliseconds }
    /// The app's name the run started with.
    public var appName: String { start.appName }
    /// The app's version the run started with (a later launch may be another version).
    public var appVersion: String { start.appVersion }
    /// Its process id.
    public var pid: Int32 { start.process.pid }

    package init(start: RunStart, end: RunEnd, lastSeen: RunLastSeen? = nil) {
        self.start = start
        self.end = end
        self.lastSeen = lastSeen
    }
}

