// Tracker.swift — the public tracking API: track() hands off to a writer thread and returns.
//
// The caller appends to an in-memory queue under one short lock and, only if the writer is
// asleep, signals it. The writer renders the queued events to JSON and commits them in one
// transaction (this run's row with the first, removed with `$AppEnd`), and tells the uploader how
// many events are pending. How long a run lived and how it ended is its host's run ledger's to
// tell (CrashReporting's), never this store's. Tradeoff: events tracked in the last milliseconds before a SIGKILL (not
// yet committed) are lost; events committed never are (`waitUntilStored` tells which).
public import SensorsEvents
@_exported import struct HTTPExchange.UploadPolicy
import HTTPExchange
import Dispatch
package import Foundation
import Synchronization
import HostFacts

/// Tracks Sensors-style events into a ``TrackingStore`` and (with an endpoint) uploads them.
// @unchecked: the queue, the context and the lifecycle flags are guarded by `cond` (an
// NSCondition), which the compiler cannot see.
public final class Tracker: @unchecked Sendable {
    /// What a tracker needs.
    public struct Configuration: Sendable {
        /// The SQLite store file (created with its directory if missing).
        package var storePath: String
        package var appName: String
        package var appVersion: String
        /// The Sensors `/sa` URL; `nil` keeps events in the store (readable by the inspector).
        package var endpoint: URL?
        /// How much the store keeps at most.
        public var limits = StoreLimits()
        /// How uploads to `/sa` time out and retry.
        public var upload = UploadPolicy()
        /// Default bound for ``shutdown(timeout:)``.
        public var shutdownTimeout: Duration = .seconds(3)
        /// Events held in memory while the store cannot be written; beyond it new events are dropped (and counted).
        public var maxQueuedEvents = 100_000
        /// Track `$AppStart` when the tracker starts.
        public var trackAppStart = true
        /// Opt-in: add `$hostname` and `$user` to every event.
        public var includeHostInfo = false
        /// Called at start and on every login/logout with the new identity.
        public var onIdentityChange: (@Sendable (EventIdentity) -> Void)?
        /// Called at start and whenever the identity or the super properties change, with what
        /// every event carries now; never concurrently, and never with an older context after a
        /// newer one. ``CrashReporting`` passes it to its `CrashAppEndPublisher`, so a crash's
        /// `$AppEnd` carries what the session's other events carry.
        package var onEventContextChange: (@Sendable (EventContext) -> Void)?
        /// Identifies this run (its marker, and the crash record's `$AppEnd` if the integrator passes it on).
        package var runID: String = EventDraft.newTrackID()

        package init(storePath: String, appName: String, appVersion: String, endpoint: URL? = nil) {
            self.storePath = storePath
            self.appName = appName
            self.appVersion = appVersion
            self.endpoint = endpoint
        }
    }

    /// Identity and super properties at one moment, with the super properties pre-rendered.
    final class Context: Sendable {
        let identity: EventIdentity
        let superProperties: [String: JSONScalar]
        /// Nil only for the placeholder of events tracked before the launch (never rendered:
        /// the writer renders them with the launch's context).
        let base: EventRenderer.RenderedBase?
        init(identity: EventIdentity, superProperties: [String: JSONScalar], renderer: EventRenderer) {
            self.identity = identity
            self.superProperties = superProperties
            base = renderer.base(superProperties: superProperties)
        }
        /// The placeholder: no rendering on the caller's thread at start.
        init(placeholder: ()) {
            identity = EventIdentity()
            superProperties = [:]
            base = nil
        }
    }

    enum Item {
        case event(name: String, properties: [String: JSONScalar], time: Int64, context: Context, type: String,
                   originalID: String?, endsRun: Bool)
        case setLogin(String?, EventIdentity)
        case setSuperProperties([String: JSONScalar])
    }

    package let configuration: Configuration
    package let store: TrackingStore
    /// The renderer of this tracker's events, made on first use (at the launch, on the writer
    /// thread: reading the presets is not the caller's work at start).
    package var renderer: EventRenderer {
        rendererCell.withLock { cell in
            if let renderer = cell { return renderer }
            let renderer = EventRenderer(appName: configuration.appName, appVersion: configuration.appVersion, extraPresets: extraPresets)
            cell = renderer
            return renderer
        }
    }
    private let rendererCell = Mutex<EventRenderer?>(nil)
    /// The presets this tracker adds to the standard ones (``hostPresets()`` with `includeHostInfo`).
    package let extraPresets: [String: JSONScalar]

    /// `$hostname` and `$user`: what `Configuration.includeHostInfo` adds to every event.
    package static func hostPresets() -> [String: JSONScalar] {
        ["$hostname": .string(ProcessInfo.processInfo.hostName), "$user": .string(NSUserName())]
    }
    /// This run's id (its marker row).
    public var runID: String { configuration.runID }
    /// Whether this is the first start ever on this store (`$is_first_time` of `$AppStart`).
    /// Waits for the launch (see ``init(_:store:launch:)``).
    public var isFirstStart: Bool { awaitLaunch { launch.isFirstStart } }
    let startMonotonic = Clock.monotonicNanoseconds()
    let startWall = Clock.wallMilliseconds()
    let uploader: Uploader?

    /// What the launch found (guarded by `cond`; final once `launch.done`).
    private struct Launch {
        var done = false
        var isFirstStart = false
        var abnormalEnds: [String] = []
        /// The context as loaded from the store: events queued before the launch was done carry
        /// `provisional` and are rendered with this one (identity changes wait for the launch, so
        /// nothing can have changed it in between).
        var context: Context?
        var error: TrackingStoreError?
    }
    private var launch = Launch()
    /// The context of events tracked before the launch loaded the store's.
    private let provisional: Context

    private let cond = NSCondition()
    // Guarded by `cond`.
    private var queue: [Item] = []
    private var spare: [Item] = []
    private var context: Context
    private var writerWaiting = false
    private var enqueued = 0
    private var processed = 0
    private var droppedQueueFull = 0
    private var accepting = true
    private var writerStop = false
    private var writerDone = false
    /// Whether the writer thread was started. A hosted tracker starts it only when something is
    /// tracked after its launch: a program that tracks nothing commits its `$AppStart` on the
    /// launch thread and its `$AppEnd` on the thread that ends the run, and starts no thread
    /// (measured: the thread's start and the two hand-offs to it were ≈ 0.4 ms of a short
    /// program's end).
    private var writerStarted = false
    /// A hosted run's row, stored by the next commit, with its `$AppStart` (guarded by `cond`).
    private var unregisteredRun: RunMarker?
    /// Whether the writer thread was started (for tests).
    package var writerThreadStarted: Bool { cond.withLock { writerStarted } }
    /// A batch is being committed on a thread other than the writer (guarded by `cond`): what is
    /// tracked meanwhile waits for it, so the store keeps the order events were tracked in.
    private var committingInline = false

    /// Opens the store and runs the launch on the caller's thread, as a host would (this run's
    /// row, `$AppStart`, the uploader when an endpoint is set). Tests and tools: an app's tracker
    /// is the reporter's (``init(hostedLaunch:store:)``).
    /// - Throws: ``TrackingStoreError`` when the store cannot be opened or written at all.
    package convenience init(_ configuration: Configuration) throws {
        try self.init(configuration, store: TrackingStore(path: configuration.storePath, limits: configuration.limits))
    }

    /// Like ``init(_:)`` with a store the caller opened.
    package convenience init(_ configuration: Configuration, store: TrackingStore) throws {
        self.init(configuration: configuration, store: store)
        try loadContext()
        try completeLaunchSteps()
    }

    /// A tracker whose launch its host runs (CrashReporting's launch thread, through the
    /// analytics sink), so that a program's launch never waits on the disk: this returns at once
    /// and touches no file. The host calls ``beginLaunch()`` (the store's identity and super
    /// properties), takes its records and runs, then ``completeLaunch()`` (this run's marker, dead
    /// runs, `$AppStart` — stamped with the time of this call — and the writer, which then commits
    /// the events tracked meanwhile, held in memory until then). ``track(_:properties:)`` never
    /// waits for it; calls that read or change the identity or super properties,
    /// ``isFirstStart`` and ``abnormalEnds`` wait until it is done.
    /// The host ends it too: its exit hook (CrashReporting's, the process's one) calls
    /// ``shutdown(fromHostWithin:)``.
    package convenience init(hostedLaunch configuration: Configuration, store: TrackingStore) {
        self.init(configuration: configuration, store: store)
    }

    /// The hosted launch's first phase, on the host's launch thread: loads the identity and the
    /// super properties and publishes them (a crash from here on carries them). Returns the store
    /// when it can be used; `nil` when it cannot be read at all: the launch is then over, with a
    /// temporary anonymous identity (``launchError`` says why), and the writer keeps retrying
    /// its writes as it always does.
    package func beginLaunch() -> TrackingStore? {
        do {
            try loadContext()
            return store
        } catch {
            endLaunch(error)
            return nil
        }
    }

    /// The hosted launch's last phase: this run's row (which identity the run has: what its
    /// `$AppEnd` carries when the host tells how it ended), `$AppStart`, the writer. Only after
    /// ``beginLaunch()`` returned the store. Every run's end is the host's to tell (``endRuns(_:)``,
    /// from its run ledger, the one record of runs): a hosted tracker keeps no clocks of its own
    /// run and ends no dead run itself — but once per store, the first time a host runs it, when
    /// the dead rows are an older version's that no host will tell.
    package func completeLaunch() {
        do {
            try completeLaunchSteps()
        } catch {
            endLaunch(error)
        }
    }

    /// ``completeLaunch()``'s steps, throwing what stops them.
    private func completeLaunchSteps() throws {
        // A launch from the state copy: the store was opened by a host before (the copy is
        // written after such a launch), which claimed its runs then.
        let quiet = cond.withLock { quietLaunch }
        try registerRunAndFinishLaunch(endingDeadRuns: quiet ? false : try store.claimRunsToldByHost())
        // `$AppStart` and what was tracked during the launch, committed here.
        commitInline()
        // A launch that opened the store leaves the copy the next launch can start from.
        if store.isOpen { store.refreshStateCopy() }
    }

    /// A launch that could not use the store: over without it, and the writer started.
    private func endLaunch(_ error: any Error) {
        finishLaunchWithoutStore(error as? TrackingStoreError ?? TrackingStoreError(operation: "launch", underlying: "\(error)"))
        startWriter()
    }

    /// The in-memory part every initialiser shares: no file is touched.
    private init(configuration: Configuration, store: TrackingStore) {
        self.configuration = configuration
        self.store = store
        extraPresets = configuration.includeHostInfo ? Self.hostPresets() : [:]
        provisional = Context(placeholder: ())
        context = provisional
        uploader = configuration.endpoint.map { Uploader(store: store, endpoint: $0, policy: configuration.upload) }
        queue.reserveCapacity(1024)
        spare.reserveCapacity(1024)
    }

    /// Starts the writer thread (once).
    private func startWriter() {
        guard cond.withLock({ () -> Bool in
            defer { writerStarted = true }
            return !writerStarted
        }) else { return }
        spawnWriter()
    }

    private func spawnWriter() {
        let writer = Thread { [self] in
            OSThread.name(Self.writerThreadName)
            cond.withLock { writerThread = pthread_self() }
            writerLoop()
        }
        writer.name = Self.writerThreadName
        writer.start()
    }

    /// The store's identity and super properties, published at once: a crash during the rest of
    /// the launch carries this identity.
    /// What ``loadContext()`` loaded (guarded by `cond`): the context as the store had it, which
    /// `$AppStart` and the events tracked before the launch carry, whatever changes it later.
    private var loaded: (state: StoreState, context: Context)?
    /// Whether this hosted launch started from the store's state copy without opening the store
    /// (guarded by `cond`): its launch and end are then appended to the journal while the store
    /// stays closed (LaunchJournal.swift). Only without an endpoint (uploading needs the store)
    /// and while the journal is small (past it, this launch opens the store, which folds it).
    private var quietLaunch = false
    private func loadContext() throws {
        var quiet = false
        let state: StoreState
        if uploader == nil, !store.isOpen, store.journalBytes <= TrackingStore.journalFoldBytes,
           let copy = store.stateFromCopy() {
            state = copy
            quiet = true
        } else {
            state = try store.loadState()
        }
        let identity = EventIdentity(anonymousID: state.anonymousID, loginID: state.loginID)
        let context = Context(identity: identity, superProperties: state.superProperties, renderer: renderer)
        cond.withLock {
            self.context = context
            loaded = (state, context)
            quietLaunch = quiet
            launchThread = pthread_self()
        }
        publishContext()
    }

    /// Queues this run's row (stored with `$AppStart`, in its transaction: a run killed before
    /// has neither), ends the rows an older version left (`endingDeadRuns`), starts the uploader
    /// and queues `$AppStart` ahead of anything tracked so far.
    private func registerRunAndFinishLaunch(endingDeadRuns: Bool) throws {
        guard let (state, loaded) = cond.withLock({ self.loaded }) else {
            preconditionFailure("completeLaunch() before beginLaunch() returned the store")
        }
        let identity = loaded.identity
        let row = RunMarker(
            runID: configuration.runID, process: .current, startWallMilliseconds: startWall, startMonotonicNanoseconds: startMonotonic,
            refreshWallMilliseconds: startWall, refreshMonotonicNanoseconds: startMonotonic, appName: configuration.appName,
            appVersion: configuration.appVersion, identity: identity)
        cond.withLock { unregisteredRun = row }
        let ended = cond.withLock { endedByHost } + (endingDeadRuns ? Self.reportDeadRuns(
            store: store, excluding: { $0 == configuration.runID }, superProperties: state.superProperties,
            extraPresets: extraPresets) : [])
        uploader?.start()
        configuration.onIdentityChange?(identity)
        finishLaunch(Launch(done: true, isFirstStart: state.isFirstStart, abnormalEnds: ended,
                            context: loaded))
    }

    /// The launch could not read the store: a temporary anonymous identity (not stored), and the
    /// writer's usual retries for the events.
    private func finishLaunchWithoutStore(_ error: TrackingStoreError) {
        let identity = EventIdentity(anonymousID: EventDraft.newTrackID())
        let temporary = Context(identity: identity, superProperties: [:], renderer: renderer)
        cond.withLock { context = temporary }
        publishContext()
        configuration.onIdentityChange?(identity)
        finishLaunch(Launch(done: true, isFirstStart: false, abnormalEnds: [], context: temporary, error: error))
    }

    /// Makes the launch's result visible and queues `$AppStart` ahead of what was tracked meanwhile.
    private func finishLaunch(_ result: Launch) {
        guard let loaded = result.context else { preconditionFailure("a finished launch has a context") }
        cond.withLock {
            launch = result
            if configuration.trackAppStart {
                let draft = AppEvents.appStart(isFirstTime: result.isFirstStart, runID: configuration.runID, time: startWall,
                                               identity: loaded.identity)
                queue.insert(.event(name: draft.event, properties: draft.properties, time: startWall, context: loaded,
                                    type: "track", originalID: nil, endsRun: false), at: 0)
                enqueued += 1
            }
            cond.broadcast()
        }
    }

    /// Waits until the launch is done (it always ends: the store's busy timeout bounds it), then
    /// reads `value` under the lock.
    /// On the writer thread itself (a context or identity callback the launch runs, which
    /// logs in, say) it does not wait: the launch has loaded the context by then.
    private func awaitLaunch<T>(_ value: () -> T) -> T {
        cond.lock()
        defer { cond.unlock() }
        waitForLaunchLocked()
        return value()
    }

    /// ``awaitLaunch(_:)``'s wait, for a caller that holds `cond`.
    private func waitForLaunchLocked() {
        while !launch.done && !onWriterThread && !onLaunchThread { cond.wait() }
    }

    /// The thread that runs the launch (guarded by `cond`): a call it makes meanwhile (a
    /// context callback that logs in, say) must not wait for the launch it is part of.
    private var launchThread: pthread_t?
    /// Whether the caller runs the launch. Call with `cond` held.
    private var onLaunchThread: Bool { !launch.done && launchThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }

    static let writerThreadName = "Sensors.writer"
    /// The writer thread, once it runs (guarded by `cond`). By identity, not by name: Linux keeps
    /// 15 bytes of a thread's name, so `Thread.current.name` there is "Sensors.writer".
    private var writerThread: pthread_t?
    /// Whether the caller is the writer thread. Call with `cond` held.
    private var onWriterThread: Bool { writerThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }

    /// Why the launch could not use the store, if it could not (its events then wait in memory
    /// and are written once the store can be). Waits for the launch.
    public var launchError: TrackingStoreError? { awaitLaunch { launch.error } }

    /// The runs found dead at start (their marker left, their process gone, no `$AppEnd` and no
    /// crash record claimed them: SIGKILL, the OOM killer, power loss), each now ended by an
    /// `$AppEnd` in the store (`$app_end_reason` `oom` when the run's memory cgroup counted an
    /// OOM kill after its marker's last reading, else `abnormal`) and its marker removed. Waits
    /// for the launch.
    public var abnormalEnds: [String] { awaitLaunch { launch.abnormalEnds } }

    /// Ends every dead run but `excluding` with an abnormal (or `oom`) `$AppEnd`, each in one
    /// transaction that also removes its marker, so that two processes starting at once report it once.
    static func reportDeadRuns(store: TrackingStore, excluding: (String) -> Bool, superProperties: [String: JSONScalar],
                               extraPresets: [String: JSONScalar]) -> [String] {
        var ended: [String] = []
        for marker in (try? store.runMarkers()) ?? [] where !excluding(marker.runID) && !marker.process.isAlive {
            if (try? store.claimRun(marker.runID, appending: [abnormalAppEnd(marker, superProperties: superProperties, extraPresets: extraPresets)])) == true {
                ended.append(marker.runID)
            }
        }
        return ended
    }

    /// The `$AppEnd` of a run that vanished without one: `$event_duration` from the marker
    /// (monotonic start to last refresh), `"$app_end_reason": "abnormal"` — `"oom"` when its
    /// memory cgroup counted an OOM kill since the marker's last reading
    /// (``OOMKillCounter/endReason(recorded:sameBoot:now:)``) —, the super properties the store
    /// holds (the dead run was the last to set them).
    static func abnormalAppEnd(_ marker: RunMarker, superProperties: [String: JSONScalar],
                               extraPresets: [String: JSONScalar], told: HostedRunEnd? = nil) -> NewEvent {
        let renderer = EventRenderer(appName: marker.appName, appVersion: marker.appVersion, extraPresets: extraPresets)
        let bootID = marker.process.bootID
        let reason = told?.reason ?? OOMKillCounter.endReason(recorded: marker.oomKills,
                                                              sameBoot: !bootID.isEmpty && bootID == ProcessIdentity.current.bootID)
        let draft = AppEvents.appEnd(reason: reason, durationSeconds: told?.durationSeconds ?? marker.knownDurationSeconds,
                                     runID: marker.runID, time: told?.wallMilliseconds ?? marker.refreshWallMilliseconds,
                                     identity: marker.identity)
        return NewEvent(trackID: draft.trackID, event: draft.event, time: draft.time, priority: draft.priority,
                        json: renderer.render(draft, base: renderer.base(superProperties: superProperties)))
    }

    /// How the host (CrashReporting's run ledger) says a run ended, for the `$AppEnd` made here.
    package struct HostedRunEnd: Sendable, Equatable {
        package var runID: String
        /// `.abnormal` or `.oom` for a run that was killed; `.normal` for one that exited without
        /// storing its `$AppEnd` (its tracker's exit hook was off, or could not store it).
        package var reason: AppEndReason
        /// When it ended and how long it ran, when the host knows (an exit); else the marker's
        /// last refresh says.
        package var wallMilliseconds: Int64?
        package var durationSeconds: Double?

        package init(runID: String, reason: AppEndReason, wallMilliseconds: Int64? = nil, durationSeconds: Double? = nil) {
            self.runID = runID
            self.reason = reason
            self.wallMilliseconds = wallMilliseconds
            self.durationSeconds = durationSeconds
        }
    }

    /// Ends the runs the host found ended, between ``beginLaunch()`` and ``completeLaunch(hostKnows:)``:
    /// each whose marker is still here gets its `$AppEnd` (with the identity the marker holds) in the
    /// transaction that removes the marker, so a run is ended once whoever tells it. A run without
    /// a marker here stored its own `$AppEnd`, or never started tracking: nothing to do. Returns
    /// the runs ended (also in ``abnormalEnds``). `false`-free: a store error leaves the marker,
    /// and the run is told again (the host hands it out again).
    @discardableResult
    package func endRuns(_ ends: [HostedRunEnd]) -> [String] {
        guard let state = cond.withLock({ loaded?.state }) else { return [] }
        var ends = ends.filter { $0.runID != configuration.runID }
        // A run that exited and whose `$AppEnd` the journal holds has nothing left to end: its
        // marker goes when the journal is folded. Known without opening the store.
        if !store.isOpen, ends.contains(where: { $0.reason == .normal }) {
            let endedInJournal = TrackingStore.journalEnds(store.path, runs: Set(ends.filter { $0.reason == .normal }.map(\.runID)))
            ends.removeAll { $0.reason == .normal && endedInJournal.contains($0.runID) }
        }
        guard !ends.isEmpty else { return [] }
        let markers = Dictionary(((try? store.runMarkers()) ?? []).map { ($0.runID, $0) }, uniquingKeysWith: { first, _ in first })
        var ended: [String] = []
        for end in ends {
            guard let marker = markers[end.runID] else { continue }
            let event = Self.abnormalAppEnd(marker, superProperties: state.superProperties, extraPresets: extraPresets, told: end)
            if (try? store.claimRun(end.runID, appending: [event])) == true { ended.append(end.runID) }
        }
        cond.withLock { endedByHost += ended }
        return ended
    }

    /// Runs ended by ``endRuns(_:)`` this launch (guarded by `cond`).
    private var endedByHost: [String] = []

    /// Hands the current context to `onEventContextChange`. The lock keeps calls apart and in
    /// order: each reads the context inside it, so the last call always publishes the newest.
    private func publishContext() {
        guard let callback = configuration.onEventContextChange else { return }
        publishLock.lock()
        defer { publishLock.unlock() }
        let current = cond.withLock {
            EventContext(identity: context.identity, superProperties: context.superProperties, extraPresets: extraPresets)
        }
        callback(current)
    }

    private let publishLock = NSLock()

    /// The current identity.
    public var identity: EventIdentity { awaitLaunch { context.identity } }

    /// Tracks an event. Never waits on disk or network: the event is queued for the writer.
    /// Events tracked after ``shutdown(timeout:)`` are ignored.
    public func track(_ event: String, properties: [String: JSONScalar] = [:]) {
        enqueue(name: event, properties: properties, type: "track", originalID: nil, endsRun: false)
    }

    /// Queues an event; `startingWriter: false` leaves a writer that does not run yet unstarted
    /// (the end of the run commits on its own thread).
    private func enqueue(name: String, properties: [String: JSONScalar], type: String, originalID: String?, endsRun: Bool,
                         startingWriter: Bool = true) {
        let time = Clock.wallMilliseconds()
        cond.lock()
        guard accepting else { cond.unlock(); return }
        if queue.count >= configuration.maxQueuedEvents {
            droppedQueueFull += 1
            cond.unlock()
            return
        }
        queue.append(.event(name: name, properties: properties, time: time, context: context, type: type,
                            originalID: originalID, endsRun: endsRun))
        enqueued += 1
        let spawn = startingWriter ? writerWantedLocked() : false
        if !startingWriter && writerWaiting { cond.signal() }
        cond.unlock()
        if spawn { spawnWriter() }
    }

    private func enqueueControl(_ item: Item, update: ((inout Context) -> Void)? = nil) -> EventIdentity {
        cond.lock()
        update?(&context)
        let identity = context.identity
        queue.append(item)
        enqueued += 1
        let spawn = writerWantedLocked()
        cond.unlock()
        if spawn { spawnWriter() }
        return identity
    }

    /// Logs in: later events carry `login_id` and `distinct_id` = `id`; tracks `$SignUp` (Sensors'
    /// `track_signup` with `original_id` = the anonymous id) when the login id changes.
    public func login(_ id: String) {
        guard !id.isEmpty else { return }
        var changed = false
        let identity: EventIdentity = awaitLaunch {
            changed = context.identity.loginID != id
            if changed {
                context = Context(identity: EventIdentity(anonymousID: context.identity.anonymousID, loginID: id),
                                  superProperties: context.superProperties, renderer: renderer)
            }
            return context.identity
        }
        guard changed else { return }
        _ = enqueueControl(.setLogin(id, identity))
        let signUp = AppEvents.signUp(time: 0, identity: identity)
        enqueue(name: signUp.event, properties: signUp.properties, type: signUp.type, originalID: signUp.originalID, endsRun: false)
        configuration.onIdentityChange?(identity)
        publishContext()
    }

    /// Logs out: later events are anonymous again.
    public func logout() {
        let identity: EventIdentity = awaitLaunch {
            context = Context(identity: EventIdentity(anonymousID: context.identity.anonymousID, loginID: nil),
                              superProperties: context.superProperties, renderer: renderer)
            return context.identity
        }
        _ = enqueueControl(.setLogin(nil, identity))
        configuration.onIdentityChange?(identity)
        publishContext()
    }

    /// Registers super properties: merged into every later event (event properties win) and kept across runs.
    public func registerSuperProperties(_ properties: [String: JSONScalar]) {
        updateSuperProperties { merged in for (key, value) in properties { merged[key] = value } }
    }

    /// Removes one super property.
    public func unregisterSuperProperty(_ key: String) {
        updateSuperProperties { $0[key] = nil }
    }

    /// Removes every super property.
    public func clearSuperProperties() {
        updateSuperProperties { $0 = [:] }
    }

    /// The super properties now registered.
    public var superProperties: [String: JSONScalar] { awaitLaunch { context.superProperties } }

    private func updateSuperProperties(_ change: (inout [String: JSONScalar]) -> Void) {
        cond.lock()
        waitForLaunchLocked()
        var merged = context.superProperties
        change(&merged)
        context = Context(identity: context.identity, superProperties: merged, renderer: renderer)
        queue.append(.setSuperProperties(merged))
        enqueued += 1
        let spawn = writerWantedLocked()
        cond.unlock()
        if spawn { spawnWriter() }
        publishContext()
    }

    /// Waits until everything tracked before this call is committed to the store (or dropped and
    /// counted). Returns `false` on timeout.
    @discardableResult
    public func waitUntilStored(timeout: Duration = .seconds(10)) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout.seconds)
        cond.lock()
        defer { cond.unlock() }
        let target = enqueued
        while processed < target && !writerDone {
            if !cond.wait(until: deadline) { return processed >= target }
        }
        return processed >= target
    }

    /// Commits what was tracked, then uploads until the store is empty. Returns `true` when
    /// everything pending was delivered (or quarantined) within `timeout`; `false` on timeout or
    /// without an endpoint (events then simply stay in the store).
    @discardableResult
    public func flush(timeout: Duration = .seconds(10)) -> Bool {
        let deadline = SuspendingClock.now.advanced(by: timeout)
        guard waitUntilStored(timeout: timeout), let uploader else { return false }
        return uploader.flush(deadline: deadline)
    }

    /// What ``shutdown(timeout:)`` achieved.
    public struct ShutdownResult: Sendable, Equatable {
        /// Everything tracked, including `$AppEnd`, was committed.
        public var stored: Bool
        /// The store was drained to the server (always `false` without an endpoint).
        public var uploaded: Bool
    }

    /// Tracks `$AppEnd` (`$event_duration` on the monotonic clock), removes this run's marker in
    /// the same transaction, stops the writer and uploads for at most `timeout`
    /// (default `configuration.shutdownTimeout`). Later calls return the first result.
    @discardableResult
    public func shutdown(timeout: Duration? = nil) -> ShutdownResult {
        let bound = timeout ?? configuration.shutdownTimeout
        let deadline = SuspendingClock.now.advanced(by: bound)
        let duration = Double(Clock.monotonicNanoseconds() - startMonotonic) / 1e9
        let end = AppEvents.appEnd(reason: .normal, durationSeconds: duration, runID: configuration.runID, time: 0, identity: identity)
        enqueue(name: end.event, properties: end.properties, type: end.type, originalID: nil, endsRun: true, startingWriter: false)
        let alreadyStopped: Bool = cond.withLock {
            let was = !accepting
            accepting = false
            return was
        }
        if alreadyStopped { return lastShutdown ?? ShutdownResult(stored: false, uploaded: false) }
        // No writer running (a hosted run that tracked nothing after its launch): `$AppEnd` is
        // committed here, on the caller's thread, which waits for it anyway.
        commitInline()
        let stored = waitUntilStored(timeout: bound)
        cond.withLock {
            writerStop = true
            cond.broadcast()
        }
        let uploaded = uploader?.finish(deadline: deadline) ?? false
        let result = ShutdownResult(stored: stored, uploaded: uploaded)
        cond.withLock { lastShutdown = result }
        return result
    }

    private var lastShutdown: ShutdownResult?

    // MARK: - async

    /// ``waitUntilStored(timeout:)`` for async code: the wait happens on a thread of its own,
    /// never on the caller's executor.
    @discardableResult
    public func waitUntilStored(timeout: Duration = .seconds(10)) async -> Bool {
        await BlockingWait.offload { [self] in waitUntilStored(timeout: timeout) }
    }

    /// ``flush(timeout:)`` for async code (the wait happens on a thread of its own).
    @discardableResult
    public func flush(timeout: Duration = .seconds(10)) async -> Bool {
        await BlockingWait.offload { [self] in flush(timeout: timeout) }
    }

    /// ``shutdown(timeout:)`` for async code (the wait happens on a dispatch worker, not on the caller's executor).
    @discardableResult
    public func shutdown(timeout: Duration? = nil) async -> ShutdownResult {
        await BlockingWait.offload { [self] in shutdown(timeout: timeout) }
    }

    /// The host's end of the run (its `shutdown` or its exit hook): ``shutdown(timeout:)``, except
    /// on the writer thread itself (a process exiting from it: it could not wait for itself).
    package func shutdown(fromHostWithin timeout: Duration) -> ShutdownResult {
        guard !cond.withLock({ onWriterThread }) else { return ShutdownResult(stored: false, uploaded: false) }
        return shutdown(timeout: timeout)
    }

    // MARK: - Writer

    /// Renders `items` and commits their events in one transaction (with this run's row when it
    /// is not stored yet, and the counters), then stores the identity and super-property changes among them.
    /// Returns the number of events pending after it. On the writer thread, or on a thread that
    /// commits while no writer runs (``commitInline()``).
    private func commit(_ items: [Item], loadedContext: Context, registeringRun registered: RunMarker?,
                        addingCounters counters: [String: Int], journaling: Bool = false) throws -> Int {
        let renderer = self.renderer
        var endingRun: String?
        var events: [NewEvent] = []
        events.reserveCapacity(items.count)
        var controls: [Item] = []
        for item in items {
            switch item {
            case let .event(name, properties, time, tracked, type, originalID, endsRun):
                // Only the placeholder has no pre-rendered base, and it is replaced here.
                let context = tracked === provisional ? loadedContext : tracked
                let draft = EventDraft(time: time, type: type, event: name, identity: context.identity,
                                       originalID: originalID, properties: properties)
                events.append(NewEvent(trackID: draft.trackID, event: name, time: time, priority: .ordinary,
                                       json: renderer.render(draft, base: context.base!)))
                if endsRun { endingRun = configuration.runID }
            case .setLogin, .setSuperProperties:
                controls.append(item)
            }
        }
        // A quiet launch's `$AppStart`, and the end of a hosted run with no writer: to the
        // journal, the launch only while this process has not opened the store (a journal that
        // cannot be written: to the store, as always). Such a run's end is in the journal even
        // when the run opened the store, so that the next quiet launch knows its predecessor
        // ended without opening the store (``endRuns(_:)``).
        if journaling, controls.isEmpty, counters.values.allSatisfy({ $0 == 0 }), !store.isOpen || endingRun != nil,
           (try? store.appendToJournal(JournalEntry(events: events, registered: registered, endingRun: endingRun))) != nil {
            return 0
        }
        let pending = try store.append(events, registeringRun: registered, endingRun: endingRun, addingCounters: counters)
        for control in controls {
            switch control {
            case let .setLogin(id, identity):
                try store.setLoginID(id)
                try store.updateRunIdentity(configuration.runID, identity: identity)
            case let .setSuperProperties(properties):
                try store.setSuperProperties(properties)
            case .event:
                break
            }
        }
        return pending
    }

    /// Commits what is queued on the calling thread while no writer thread runs (a hosted
    /// tracker's launch: `$AppStart`; its end: `$AppEnd`). What is tracked meanwhile waits for it
    /// and then starts the writer. When the store cannot be written, the items go back to the
    /// front of the queue and the writer is started: it retries them as it retries its own.
    private func commitInline() {
        cond.lock()
        guard !writerStarted, launch.done, !committingInline, !queue.isEmpty || unregisteredRun != nil else {
            cond.unlock()
            return
        }
        committingInline = true
        let items = queue
        queue.removeAll(keepingCapacity: true)
        let (registered, dropped, loadedContext) = takeCommitStateLocked()
        // The run's end, committed here when no writer runs (``shutdown(timeout:)``).
        let endsRun = items.contains { if case .event(_, _, _, _, _, _, true) = $0 { return true } else { return false } }
        // Never with an uploader: what it is to send must be in the store, which it sends from.
        let journaling = uploader == nil && (quietLaunch || endsRun)
        cond.unlock()
        var pending: Int?
        do {
            pending = try commit(items, loadedContext: loadedContext, registeringRun: registered,
                                 addingCounters: ["dropped_queue_full": dropped], journaling: journaling)
        } catch {
            pending = nil
        }
        cond.lock()
        committingInline = false
        if pending != nil {
            processed += items.count
        } else {
            queue.insert(contentsOf: items, at: 0)
            giveBackCommitStateLocked(registered: registered, dropped: dropped)
        }
        let spawn = (!queue.isEmpty || unregisteredRun != nil) && !writerStarted
        if spawn { writerStarted = true }
        cond.broadcast()
        cond.unlock()
        if let pending { uploader?.noteCommitted(pending: pending) }
        if spawn { spawnWriter() }
    }

    /// With `cond` held: what a commit takes besides the queued items, each handed over once: the
    /// run's row not stored yet, the drops counted since the last commit, and the context the
    /// launch loaded (for events queued before it).
    private func takeCommitStateLocked() -> (registered: RunMarker?, dropped: Int, loadedContext: Context) {
        defer {
            unregisteredRun = nil
            droppedQueueFull = 0
        }
        return (unregisteredRun, droppedQueueFull, launch.context ?? provisional)
    }

    /// With `cond` held: a commit that failed gives back what it took, for the next one.
    private func giveBackCommitStateLocked(registered: RunMarker?, dropped: Int) {
        droppedQueueFull += dropped
        if unregisteredRun == nil { unregisteredRun = registered }
    }

    /// With `cond` held, after queueing: wakes the writer, or says that it must be started (the
    /// first item a hosted tracker queues after its launch); the caller then calls
    /// ``spawnWriter()`` once it has unlocked.
    private func writerWantedLocked() -> Bool {
        if writerWaiting { cond.signal() }
        guard !writerStarted, launch.done, !committingInline else { return false }
        writerStarted = true
        return true
    }

    private func writerLoop() {
        var carry: [Item] = []
        var droppedStoreError = 0
        while true {
            cond.lock()
            while queue.isEmpty && carry.isEmpty && unregisteredRun == nil && !writerStop {
                writerWaiting = true
                cond.wait()
                writerWaiting = false
            }
            if writerStop && queue.isEmpty && carry.isEmpty && unregisteredRun == nil {
                writerDone = true
                cond.broadcast()
                cond.unlock()
                return
            }
            swap(&queue, &spare)
            // The writer runs only after the launch, so its context is set.
            let (registered, dropped, loadedContext) = takeCommitStateLocked()
            cond.unlock()

            let items = carry + spare
            let counters = ["dropped_queue_full": dropped, "dropped_store_error": droppedStoreError]
            do {
                let pending = try commit(items, loadedContext: loadedContext, registeringRun: registered, addingCounters: counters)
                carry = []
                droppedStoreError = 0
                cond.withLock {
                    processed += items.count
                    spare.removeAll(keepingCapacity: true)
                    cond.broadcast()
                }
                uploader?.noteCommitted(pending: pending)
            } catch {
                // The store cannot be written now (disk full, locked for too long...): keep the
                // items (bounded) and retry in a second; they count as processed only once committed.
                cond.withLock {
                    spare.removeAll(keepingCapacity: true)
                    giveBackCommitStateLocked(registered: registered, dropped: dropped)
                }
                carry = items
                if carry.count > configuration.maxQueuedEvents {
                    let excess = carry.count - configuration.maxQueuedEvents
                    carry.removeFirst(excess)
                    droppedStoreError += excess
                    cond.withLock { processed += excess; cond.broadcast() }
                }
                Thread.sleep(forTimeInterval: 1)
                if cond.withLock({ writerStop }) {
                    cond.withLock { writerDone = true; cond.broadcast() }
                    return
                }
            }
        }
    }
}

extension Duration {
    /// The duration in seconds, as the blocking API takes it.
    package var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
