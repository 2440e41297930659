// CurrentRun.swift — this process's run, from the reporter's start to its end: its marker in the
// ledger (begun, counted, kept current, ended), the launch that hands the earlier runs' records
// and ends to the sinks (once, by whichever thread comes first), the watch that keeps the marker
// current, the hang still open when the process dies, and the end of the run for every sink.
//
// CrashReporting composes (the sinks, capture, this); this owns the run's life. The marker's
// states are a small machine of their own (``CurrentRunMarker``), so that what each step may write —
// never an end overwritten by a refresh, never a begin after an end — is tested without sinks or
// threads.
import HostFacts
import HTTPExchange
import RecordDelivery
import CrashCapture
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// This run's marker in the ledger and the steps that write it, under one lock: begun (by the
/// launch, possibly without the memory cgroup's OOM-kill counter, which is added later), kept
/// current (when the run was last seen, the counter read again), ended (once; by a run that ends
/// before its launch wrote the marker, with its start). Each step writes only from the state that
/// allows it, so an end is never overwritten by a refresh and a marker is never begun after its end.
final class CurrentRunMarker: Sendable {
    enum State: Sendable, Equatable {
        case none
        case begun(RunStart)
        /// Written with its end, or given up (it could not be written).
        case done
    }

    let ledger: RunLedger
    private let state = Mutex(State.none)

    init(ledger: RunLedger) { self.ledger = ledger }

    var current: State { state.withLock { $0 } }

    /// Writes the marker of `start` unless the run ended first (its marker then has its end
    /// already). Returns whether it did; throws what the ledger threw (the marker is then given up).
    func begin(_ start: RunStart) throws -> Bool {
        do {
            return try state.withLock { state throws -> Bool in
                guard case .none = state else { return false }
                try ledger.begin(start)
                state = .begun(start)
                return true
            }
        } catch {
            state.withLock { state in if case .none = state { state = .done } }
            throw error
        }
    }

    /// The OOM-kill reading added to a marker begun without one, while the run has not ended.
    /// Returns the start as the marker now says it, or nil when nothing was written.
    func addCounter(_ reading: OOMKillReading) -> RunStart? {
        state.withLock { state in
            guard case .begun(var start) = state, (try? ledger.appendCounter(start, reading)) != nil else { return nil }
            start.oomKills = reading
            state = .begun(start)
            return start
        }
    }

    /// Rewrites the running marker (last seen, a changed OOM-kill reading) while it has not ended.
    func refresh(oomKills: OOMKillReading?, seen: RunLastSeen) -> Bool {
        state.withLock { state in
            guard case .begun(let start) = state else { return false }
            return (try? ledger.refresh(runID: start.runID, oomKills: oomKills, seen: seen)) != nil
        }
    }

    /// The run's end, once: appended to the begun marker, or written with `start()` when the
    /// launch has not begun it. A later call, or one after the marker was given up, writes nothing.
    /// Returns whether this call ended it.
    @discardableResult
    func end(_ end: RunEnd, start: () -> RunStart, directory: String) -> Bool {
        state.withLock { state in
            defer { state = .done }
            switch state {
            case .begun(let begun):
                try? ledger.appendEnd(begun, end)
                return true
            case .none:
                if (try? Directory.create(directory)) != nil { try? ledger.end(start(), end) }
                return true
            case .done:
                return false
            }
        }
    }
}

/// This process's run (see the file comment).
final class CurrentRun: Sendable {
    let run: ReportingRun
    let marker: CurrentRunMarker
    var ledger: RunLedger { marker.ledger }
    /// When the run started (the call to `CrashReporting.start`).
    let started: (wall: Int64, monotonic: Int64)
    /// What the marker says of the run beside its start.
    struct Facts: Sendable {
        var release: String, environment: String, dist: String?
    }
    let facts: Facts
    let sinks: [any CrashRecordSink]
    let limits: RecordDirectoryLimits

    /// The launch's result, set once.
    let launched = Latch<CrashReporting.LaunchReport>()
    /// Open once the end of the run need not wait for the launch any longer: the records and the
    /// runs that ended were handed to the sinks, and, where a sink of the app's takes part in the
    /// launch (the analytics' `$AppStart`), its launch is done too. This run's marker (and its
    /// OOM-kill counter) is not waited for: a run that ends first writes it itself.
    private let handedOver = Latch<Bool>()
    private let ended = Atomic(false)
    private let sinksEnded = Atomic(false)
    private let launchClaimed = Atomic(false)
    /// Whether the end of the run may run the launch itself (see ``endSinks(deadline:)``).
    private let endMayLaunch: Bool
    /// With the app's own sinks the marker is written before they finish their launch (see ``launch(byTheEnd:)``).
    private let endFollowsLaunch: Bool
    private let watch = RunWatch()
    /// A hang record of this run that has not ended (see ``holdHang(_:)``).
    private let openHang = Mutex<String?>(nil)

    /// Notes the launch report carries (a crash-time uploader that is not there).
    private let notes: [String]

    /// - Parameters:
    ///   - appSinks: whether the app configured sinks of its own (the marker is then written
    ///     within the launch, see ``launch(byTheEnd:)``).
    ///   - endMayLaunch: whether every sink's launch is bounded (see ``endSinks(deadline:)``).
    init(run: ReportingRun, started: (wall: Int64, monotonic: Int64), facts: Facts, sinks: [any CrashRecordSink],
         limits: RecordDirectoryLimits, appSinks: Bool, endMayLaunch: Bool, notes: [String]) {
        self.run = run
        self.marker = CurrentRunMarker(ledger: RunLedger(recordDirectory: run.recordDirectory))
        self.started = started
        self.facts = facts
        self.sinks = sinks
        self.limits = limits
        self.endFollowsLaunch = appSinks
        self.endMayLaunch = endMayLaunch
        self.notes = notes
    }

    /// Stops keeping the marker current (a reporter let go of without a shutdown).
    func stopWatch() { watch.stop() }

    var hasEnded: Bool { ended.load(ordering: .acquiring) }

    /// This run's start as its marker says it.
    func runStart(oomKills: OOMKillReading?) -> RunStart {
        RunStart(runID: run.runID, process: .current, startWallMilliseconds: started.wall, startMonotonicNanoseconds: started.monotonic,
                 appName: run.appName, appVersion: run.appVersion, oomKills: oomKills,
                 release: facts.release, environment: facts.environment, dist: facts.dist)
    }

    // MARK: - The launch

    /// Starts the launch on a thread of its own; then, on that thread, the watch. Returns at once.
    func start() {
        OSThread.start(name: "CrashReporter.launch") { [self] in
            guard claimLaunch(), let watched = launch(byTheEnd: false) else { return }
            // Each rewrite under the marker's lock, and only while the run has not ended: an end
            // written meanwhile is never overwritten by a refresh.
            watch.watch(watched.start, counter: watched.counter, refresh: marker.refresh) {
                for sink in sinks { sink.runTick() }
            }
        }
    }

    private func claimLaunch() -> Bool {
        launchClaimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    /// The launch's phases, once (by the launch thread, or by the end of a run that comes before
    /// that thread has begun: `byTheEnd`). Returns this run's marker to keep current.
    ///
    /// The marker: with the app's sinks, once they have taken the records and the runs that
    /// ended and before they finish their launch, since one may then keep a run of its own (the
    /// analytics' row, stored with its `$AppStart`, which its `$AppEnd` comes from) and is told
    /// only the runs the ledger knows; a run killed before its marker would leave that row for
    /// good. Without them (Sentry alone), after the launch, which the end of the run then does
    /// not wait for: the file work is not in a short program's way (measured: ≈ 0.9 ms when it
    /// was), a run that ends first writes the marker itself, and one killed before it is
    /// written is not told. With the app's sinks the marker is written without the memory
    /// cgroup's OOM-kill counter: finding it (/proc/self/cgroup, /proc/self/mountinfo, parsed)
    /// costs ≈ 0.3 ms that the end of a short program would wait for. It is found and read after
    /// the launch, and added unless the run has ended by then (a run killed in between has no
    /// reading and is told `killed`, not `oom`).
    private func launch(byTheEnd: Bool) -> (start: RunStart, counter: String?)? {
        // The records' directory (capture made it, unless capture is off).
        let directoryError = (try? Directory.create(run.recordDirectory)) == nil
        var markerError: String?
        var watched: (start: RunStart, counter: String?)?
        func beginMarker(locatingCounter: Bool) {
            do {
                if directoryError { try Directory.create(run.recordDirectory) }
                let counter = locatingCounter ? OOMKillCounter.locate() : nil
                let start = runStart(oomKills: counter.flatMap(OOMKillCounter.read))
                if try marker.begin(start) { watched = (start, counter) }
            } catch {
                markerError = "this run's marker: \(error)"
            }
        }
        var report = CrashReporting.launch(in: run.recordDirectory, sinks: sinks, ledger: ledger, excluding: run.runID, limits: limits,
                                           beforeFinishing: endFollowsLaunch ? { beginMarker(locatingCounter: false) } : nil)
        if !endFollowsLaunch {
            handedOver.open(true)
            // A run that is ending writes its marker with its end.
            if !byTheEnd { beginMarker(locatingCounter: true) }
        }
        if let markerError { report.errors.append(markerError) }
        report.errors += notes
        launched.open(report)
        handedOver.open(true)
        // An exited run's OOM-kill counter is never read: a run that is ending needs none.
        if byTheEnd { return nil }
        if endFollowsLaunch, let begun = watched, begun.counter == nil,
           let counter = OOMKillCounter.locate(), let reading = OOMKillCounter.read(counter) {
            watched = marker.addCounter(reading).map { ($0, counter) } ?? begun
        }
        // A hang record written before the marker: held now.
        if let open = openHang.withLock({ $0 }) { holdHang(open) }
        return watched
    }

    // MARK: - Records of the live process

    /// A hang or snapshot record goes to the sinks while the process lives, from a thread of its
    /// own (the Swift pool may be the thing that is stuck), once the launch has offered the
    /// earlier records; the inbox's acknowledgments keep it from being sent twice. A snapshot
    /// waits 10 s first: the person who asked for it (crash-inspect snapshot) reads it before a
    /// sink's acknowledgment deletes it. A hang record is held in the ledger until the hang ends
    /// (``HangDetector``'s resolution), so that a run killed while hung is told at the next
    /// launch as such, with that record.
    func deliverLiveRecords() {
        HangDetector.onRecord { [weak self] path, kind in
            guard let self else { return }
            let snapshot = kind == .snapshot
            if kind == .hang { self.holdHang(path) }
            if kind == .memory, !self.hasEnded { self.ledger.hold(.memory, recordPath: path, runID: self.run.runID) }
            let name = String(path.split(separator: "/").last ?? "")
            OSThread.start(name: "CrashReporter.hang") { [self] in
                if snapshot { usleep(10_000_000) }
                _ = launched.wait(until: .now + .seconds(60))
                _ = RecordInbox(directory: run.recordDirectory, sinks: sinks, limits: limits).pass(only: name)
            }
        }
        HangDetector.onResolved { [weak self] in self?.releaseHang() }
    }

    /// Keeps `path` (a hang record) in the ledger as this run's open hang: linked beside the
    /// marker, so that the record's deletion once the sinks have it leaves the ledger's copy.
    func holdHang(_ path: String) {
        openHang.withLock { $0 = path }
        guard !hasEnded else { return }
        ledger.hold(.hang, recordPath: path, runID: run.runID)
    }

    /// The open hang ended (the detectors found the process moving again).
    func releaseHang() {
        guard openHang.withLock({ state in defer { state = nil }; return state != nil }) else { return }
        ledger.release(.hang, runID: run.runID)
    }

    // MARK: - The end

    /// The end of this run, in its marker (once): `shutdown` and the exit hook. A run that exits
    /// ended its hang too (a graceful shutdown that hung and then finished).
    func endMarker() {
        guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
        watch.stop()
        let end = RunEnd.exited(wallMilliseconds: Clock.wallMilliseconds(), durationNanoseconds: Clock.monotonicNanoseconds() - started.monotonic)
        // An exited run's OOM-kill counter is never read: the marker needs none.
        marker.end(end, start: { runStart(oomKills: nil) }, directory: run.recordDirectory)
        // Nothing held outlives an exit: the run did not die of it.
        for kind in RunLedger.Held.allCases { ledger.release(kind, runID: run.runID) }
    }

    /// The end of the run for every sink, then for the ledger: the records and the runs that
    /// ended reach the sinks in the launch, so that is waited for first (within the deadline; not
    /// this run's own marker, see ``handedOver``); then every sink hands on what it has, all at
    /// once and each by the same deadline (one slow backend takes no time from another); then
    /// this run's marker says it ended, after what the sinks stored of the end (a session cut off
    /// mid-request would be sent again by the next launch and counted twice). Returns each
    /// sink's answer. Once: a later call (the exit hook after `shutdown`) finds nothing to end.
    ///
    /// A launch that has not begun is run here, instead of waiting for a thread to start and to
    /// wake it (measured: ≈ 0.1 ms for the thread to begin and 0.25–0.5 ms for the waiting thread
    /// to be woken on this project's virtual machines): a short program calls `shutdown` right
    /// after `start`. Only when every sink's launch is bounded (`BoundedLaunchSinks`): an app's own
    /// sink may block in it, and the end then waits for the launch thread no longer than its deadline.
    func endSinks(deadline: SuspendingClock.Instant) -> [(id: RecordSinkID, finished: Bool)] {
        guard !sinksEnded.exchange(true, ordering: .acquiringAndReleasing) else { return [] }
        if endMayLaunch, claimLaunch() { _ = launch(byTheEnd: true) }
        _ = handedOver.wait(until: deadline)
        var finished: [Bool]
        if sinks.count <= 1 {
            // One sink (the common case: Sentry alone): on this thread, no thread started.
            finished = sinks.map { $0.shutdown(deadline: deadline) }
        } else {
            // The others each on a thread of their own; a sink not done a moment after the
            // deadline counts as not finished, and the run still ends.
            let results = Mutex([Bool](repeating: false, count: sinks.count))
            let left = Atomic(sinks.count - 1)
            let done = Latch<Bool>()
            for (index, sink) in sinks.enumerated().dropFirst() {
                OSThread.start(name: "CrashReporter.end") {
                    let ended = sink.shutdown(deadline: deadline)
                    results.withLock { $0[index] = ended }
                    if left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.open(true) }
                }
            }
            let first = sinks[0].shutdown(deadline: deadline)
            results.withLock { $0[0] = first }
            _ = done.wait(until: max(deadline, .now) + .milliseconds(100))
            finished = results.withLock { $0 }
        }
        endMarker()
        return zip(sinks, finished).map { (id: $0.id, finished: $1) }
    }
}

/// Keeps a running run's marker current: every 2 s it says when the run was last seen alive
/// (what a killed run's duration is, for Sentry's session and the analytics' `$AppEnd`), and its
/// memory cgroup's OOM-kill counter is read again (a few small reads) so that a neighbour in the
/// cgroup killed by the OOM killer earlier in the run is not taken for this run's own later
/// SIGKILL. One small file rewritten every 2 s, by the launch thread once its launch is done: no
/// thread of its own, and no dispatch timer (resuming one starts libdispatch's manager and worker
/// threads, which every launch would pay). A program that exits within 2 s never rewrites it.
final class RunWatch: Sendable {
    private let stopped = Latch<Bool>()
    static let interval = Duration.seconds(2)

    /// Rewrites the marker of `run` every ``interval`` from its start until ``stop()``, on the
    /// calling thread (returns at once when stopped already), calling `tick` after each.
    /// `refresh` rewrites it (with a changed OOM-kill reading, if any) and says whether it did.
    func watch(_ run: RunStart, counter: String?, refresh: (OOMKillReading?, RunLastSeen) -> Bool, tick: () -> Void = {}) {
        var last = run.oomKills?.kills
        let began = SuspendingClock.now - Duration.nanoseconds(max(0, Clock.monotonicNanoseconds() - run.startMonotonicNanoseconds))
        var next = began + Self.interval
        while stopped.wait(until: max(next, .now)) == nil {
            var changed: OOMKillReading?
            if let counter, let reading = OOMKillCounter.read(counter), last != reading.kills { changed = reading }
            let seen = RunLastSeen(wallMilliseconds: Clock.wallMilliseconds(),
                                   durationNanoseconds: max(0, Clock.monotonicNanoseconds() - run.startMonotonicNanoseconds))
            if refresh(changed, seen), let changed { last = changed.kills }
            CrashHandler.noteRuntimeReports()   // what the runtime reported so far is no later crash's message
            tick()
            next = max(next + Self.interval, .now)
        }
    }

    func stop() { stopped.open(true) }
}
