// CrashEndTemplate.swift — the compensating `$AppEnd` of a crash, rendered ahead of time by the
// one event renderer, with placeholders the signal handler fills (CShims knows no key names).
import CShims
import CrashEvents

enum CrashEndTemplate {
    /// The crash `$AppEnd` as ``EventRenderer`` renders every `$AppEnd` (same presets, super
    /// properties, identity and end keys), with `_track_id`, `time` and `$event_duration` left as
    /// `CC_TEMPLATE_*` placeholders. When the super properties make it longer than the handler's
    /// buffer, it is rendered without them (the presets and end keys still fit); `""` (no
    /// `$AppEnd` in the record, the next launch makes one) if even that does not fit.
    static func render(renderer: EventRenderer, runID: String, context: EventContext) -> String {
        let properties = AppEvents.appEndProperties(reason: .crash, durationSeconds: 0, runID: runID)
        for superProperties in [context.superProperties, [:]] {
            let text = renderer.renderTemplate(
                event: AppEvents.appEnd, identity: context.identity, properties: properties, superProperties: superProperties,
                rawTrackID: CC_TEMPLATE_TRACK_ID, rawTime: CC_TEMPLATE_TIME_MS,
                rawProperties: [(AppEvents.eventDurationProperty, CC_TEMPLATE_DURATION)])
            if text.utf8.count < Int(CC_TEMPLATE_MAX) { return text }
        }
        return ""
    }
}
