// AppEvents.swift — the lifecycle events (`$AppStart`, `$AppEnd` for every end reason,
// `AppCrashed`, `$SignUp`): their names and the properties each must carry, in one place. Every
// module that makes one of them starts from a draft made here and renders it with
// ``EventRenderer``, so a data team sees the same keys whoever wrote the event.

/// How a run ended, as `$app_end_reason` says it.
package enum AppEndReason: String, Sendable, CaseIterable {
    /// `Tracker.shutdown`, or a normal process exit caught by the tracker's exit hook.
    case normal
    /// A fatal signal CrashCapture recorded: the signal handler completes this `$AppEnd`, or the
    /// next launch makes it from the record when the record holds none.
    case crash
    /// The run vanished with neither (SIGKILL, power loss, or an OOM kill that could not be
    /// told): made at the next launch from the run's marker.
    case abnormal
    /// Like `abnormal`, but the kernel's OOM killer counted a kill in the run's memory cgroup
    /// after the marker's last reading (SensorsTracking's `OOMKillCounter`): made at the next launch.
    case oom
    /// Like `abnormal`, but a hang the run had recorded (an `AppHang`) was still open: killed
    /// while hung (a liveness probe, a graceful shutdown's deadline). Made at the next launch.
    case hang
}

/// The lifecycle events and the properties each carries.
package enum AppEvents {
    package static let appStart = "$AppStart"
    package static let appEnd = "$AppEnd"
    package static let appCrashed = "AppCrashed"
    /// A hang detector fired in a process that lived on (CrashCapture's hang detection).
    package static let appHang = "AppHang"
    package static let signUp = "$SignUp"

    /// The property that carries the run id: in `$AppStart`, every `$AppEnd` and `AppCrashed`,
    /// so a data team can pair a session's start, crash and end.
    package static let runIDProperty = "$run_id"
    package static let eventDurationProperty = "$event_duration"
    package static let endReasonProperty = "$app_end_reason"
    package static let crashedProperty = "$app_crashed"

    /// The event properties of every `$AppEnd`, whatever the reason (presets, super properties
    /// and identity come on top, from the renderer): the same keys for each reason.
    package static let appEndPropertyKeys: Set<String> = [eventDurationProperty, endReasonProperty, crashedProperty, runIDProperty]

    /// The `$AppEnd` of a run. `durationSeconds` is measured on the monotonic clock and kept to
    /// the millisecond. Crash and abnormal ends are kept longest when the store is full.
    package static func appEnd(reason: AppEndReason, durationSeconds: Double, runID: String, time: Int64,
                              identity: EventIdentity, trackID: String = EventDraft.newTrackID()) -> EventDraft {
        EventDraft(trackID: trackID, time: time, event: appEnd, identity: identity,
                   properties: Dictionary(appEndProperties(reason: reason, durationSeconds: durationSeconds, runID: runID),
                                          uniquingKeysWith: { _, last in last }),
                   priority: reason == .normal ? .ordinary : .crash)
    }

    /// The event properties of ``appEnd(reason:durationSeconds:runID:time:identity:trackID:)``
    /// as a list (what CrashCapture's template takes in `start`, where a first Dictionary costs
    /// ≈ 0.2 ms): the one definition of them.
    package static func appEndProperties(reason: AppEndReason, durationSeconds: Double, runID: String) -> [(String, JSONScalar)] {
        [
            (eventDurationProperty, .double((max(0, durationSeconds) * 1000).rounded() / 1000)),
            (endReasonProperty, .string(reason.rawValue)),
            (crashedProperty, .bool(reason == .crash)),
            (runIDProperty, .string(runID)),
        ]
    }

    /// `$AppStart`: `$is_first_time` (the first start ever on this store) and the run id.
    package static func appStart(isFirstTime: Bool, runID: String, time: Int64, identity: EventIdentity) -> EventDraft {
        EventDraft(time: time, event: appStart, identity: identity,
                   properties: ["$is_first_time": .bool(isFirstTime), runIDProperty: .string(runID)])
    }

    /// `$SignUp` (Sensors' `track_signup`): the login id replaces the anonymous one, which
    /// `original_id` keeps.
    package static func signUp(time: Int64, identity: EventIdentity) -> EventDraft {
        EventDraft(time: time, type: "track_signup", event: signUp, identity: identity, originalID: identity.anonymousID,
                   properties: [:])
    }

    /// `AppCrashed` (crash priority) with the run id and the crash's own properties
    /// (`app_crashed_reason`, `$crash_*`), which the caller that read the record supplies.
    package static func appCrashed(runID: String, time: Int64, identity: EventIdentity,
                                  properties: [String: JSONScalar]) -> EventDraft {
        var properties = properties
        properties[runIDProperty] = .string(runID)
        return EventDraft(time: time, event: appCrashed, identity: identity, properties: properties, priority: .crash)
    }

    /// `AppHang`: a hang record of a run that went on (no `$AppEnd` goes with it).
    package static func appHang(runID: String, time: Int64, identity: EventIdentity,
                               properties: [String: JSONScalar]) -> EventDraft {
        var properties = properties
        properties[runIDProperty] = .string(runID)
        return EventDraft(time: time, event: appHang, identity: identity, properties: properties, priority: .crash)
    }
}

/// Who the events of a run belong to and what they all carry: what the crash `$AppEnd` template
/// is rendered from, and what the tracker republishes when it changes (login, logout, super
/// properties).
package struct EventContext: Sendable, Equatable {
    package var identity: EventIdentity
    package var superProperties: [String: JSONScalar]
    /// Presets beyond the standard ones (``EventRenderer``'s `extraPresets`): the tracker's
    /// `$hostname` and `$user` when it includes host info, so the crash `$AppEnd` has them too.
    package var extraPresets: [String: JSONScalar]

    package init(identity: EventIdentity = EventIdentity(), superProperties: [String: JSONScalar] = [:],
                extraPresets: [String: JSONScalar] = [:]) {
        self.identity = identity
        self.superProperties = superProperties
        self.extraPresets = extraPresets
    }
}
