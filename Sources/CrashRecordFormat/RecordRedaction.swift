// RecordRedaction.swift — PLACEHOLDER (replaced by the i21-redact branch): the API the Sentry sink
// is wired against. Keeps everything.
package struct RecordRedaction: Sendable, Equatable {
    package var rawMemory: Bool
    package var breadcrumbs: Bool
    package var identity: Bool
    package var fullPaths: Bool
    package init(rawMemory: Bool = false, breadcrumbs: Bool = false, identity: Bool = false, fullPaths: Bool = false) {
        self.rawMemory = rawMemory
        self.breadcrumbs = breadcrumbs
        self.identity = identity
        self.fullPaths = fullPaths
    }
    package func apply(to bytes: [UInt8]) -> [UInt8] { bytes }
}

package enum PathSanitizer {
    package static func sanitize(_ text: String) -> String { text }
}
