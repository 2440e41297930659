// NewEvent+Draft.swift — a rendered draft as the row the store appends.
package import SensorsEvents

extension NewEvent {
    /// The row for `draft`, rendered as `json` (by ``EventRenderer``): its track id, name, time
    /// and priority come from the draft, so they cannot disagree with the JSON text.
    package init(_ draft: EventDraft, json: String) {
        self.init(trackID: draft.trackID, event: draft.event, time: draft.time, priority: draft.priority, json: json)
    }
}
