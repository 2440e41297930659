// CrashAppEndPublisher.swift — the compensating `$AppEnd` of a crash: rendered ahead of time by the
// one event renderer, with placeholders the signal handler fills, and handed to CrashCapture
// through its one narrow call (capture knows no key names and no event model).
import CrashCapture
import SensorsEvents
import Synchronization

/// Keeps the `$AppEnd` that CrashCapture writes into a crash record equal to what the session's
/// other events carry: the same presets, identity, super properties and run id.
///
/// ``CrashReporting`` runs one and feeds it the tracker's context. A program that starts
/// CrashCapture and a `Tracker` itself connects them the same way:
/// ```swift
/// let appEnd = CrashAppEndPublisher(appName: "myapp", appVersion: "1.4.2", runID: trackerConfiguration.runID)
/// trackerConfiguration.onEventContextChange = { appEnd.publish($0) }
/// ```
/// Publishing before or after `CrashHandler.start` both work; the latest publication wins.
package final class CrashAppEndPublisher: Sendable {
    private struct State {
        /// Made by the first publication (CrashReporting's launch, off the caller's thread).
        var renderer: EventRenderer?
        /// The extra presets `renderer` was made with.
        var rendererExtras: [String: JSONScalar] = [:]
        var context = EventContext()
    }
    private let state: Mutex<State>
    private let appName: String
    private let appVersion: String
    /// The run id the `$AppEnd` carries as `$run_id` (the one passed to CrashCapture's configuration).
    package let runID: String

    package init(appName: String, appVersion: String, runID: String) {
        self.appName = appName
        self.appVersion = appVersion
        self.runID = runID
        state = Mutex(State())
    }

    /// Renders the crash `$AppEnd` for `context` and hands it to CrashCapture. Safe from any
    /// thread; concurrent calls are serialised, so the handler never sees a mix of two.
    package func publish(_ context: EventContext) {
        update { $0 = context }
    }

    /// Changes only the identity of the published context (in the same step, so a concurrent
    /// ``publish(_:)`` is never undone by an older context).
    package func publish(identity: EventIdentity) {
        update { $0.identity = identity }
    }

    private func update(_ change: (inout EventContext) -> Void) {
        state.withLock { state in
            change(&state.context)
            let context = state.context
            let renderer: EventRenderer
            if let current = state.renderer, state.rendererExtras == context.extraPresets {
                renderer = current
            } else {
                renderer = EventRenderer(appName: appName, appVersion: appVersion, extraPresets: context.extraPresets)
                state.renderer = renderer
                state.rendererExtras = context.extraPresets
            }
            // Under the lock: two publications reach capture in the order they were made.
            CrashHandler.setAppEndTemplate(Self.template(renderer: renderer, runID: runID, context: context))
        }
    }

    /// The crash `$AppEnd` as ``EventRenderer`` renders every `$AppEnd` (same presets, super
    /// properties, identity and end keys), with `_track_id`, `time` and `$event_duration` left as
    /// capture's placeholders. When the super properties make it longer than the handler's
    /// buffer, it is rendered without them (the presets and end keys still fit); `""` (no
    /// `$AppEnd` in the record, the next launch makes one) if even that does not fit.
    static func template(renderer: EventRenderer, runID: String, context: EventContext) -> String {
        let properties = AppEvents.appEndProperties(reason: .crash, durationSeconds: 0, runID: runID)
        for superProperties in [context.superProperties, [:]] {
            let text = renderer.renderTemplate(
                event: AppEvents.appEnd, identity: context.identity, properties: properties, superProperties: superProperties,
                rawTrackID: CrashHandler.AppEndTemplate.trackIDPlaceholder, rawTime: CrashHandler.AppEndTemplate.timePlaceholder,
                rawProperties: [(AppEvents.eventDurationProperty, CrashHandler.AppEndTemplate.durationPlaceholder)])
            if text.utf8.count < CrashHandler.AppEndTemplate.maxBytes { return text }
        }
        return ""
    }
}
