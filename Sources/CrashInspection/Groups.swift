// Groups.swift — records grouped by crash signature, with counts, first/last seen and app versions.
import Foundation

/// Records that share a crash signature.
public struct CrashGroup: Sendable {
    public var signature: String
    public var ids: [String]
    public var firstSeenNanoseconds: Int64?
    public var lastSeenNanoseconds: Int64?
    public var appVersions: [String]
    /// The explanation of the most recent member.
    public var explanation: String

    /// Groups inspections by ``Inspection/signature``; largest group first, then most recent.
    public static func make(_ inspections: [Inspection]) -> [CrashGroup] {
        var groups: [String: CrashGroup] = [:]
        for inspection in inspections {
            let signature = inspection.signature
            let time = inspection.record.process?.crashWallNanoseconds
            var group = groups[signature] ?? CrashGroup(signature: signature, ids: [], firstSeenNanoseconds: nil,
                                                        lastSeenNanoseconds: nil, appVersions: [], explanation: "")
            group.ids.append(inspection.id)
            if let time {
                group.firstSeenNanoseconds = min(group.firstSeenNanoseconds ?? time, time)
                if time >= (group.lastSeenNanoseconds ?? Int64.min) {
                    group.lastSeenNanoseconds = time
                    group.explanation = Explanation.whatHappened(inspection.record)
                }
            }
            if group.explanation.isEmpty { group.explanation = Explanation.whatHappened(inspection.record) }
            if let version = inspection.record.appVersion, !group.appVersions.contains(version) { group.appVersions.append(version) }
            groups[signature] = group
        }
        return groups.values.sorted {
            ($0.ids.count, $0.lastSeenNanoseconds ?? 0) > ($1.ids.count, $1.lastSeenNanoseconds ?? 0)
        }
    }

    public var json: [String: Any] {
        [
            "signature": signature, "count": ids.count, "ids": ids,
            "firstSeen": firstSeenNanoseconds.map { isoTime($0) as Any } ?? NSNull(),
            "lastSeen": lastSeenNanoseconds.map { isoTime($0) as Any } ?? NSNull(),
            "appVersions": appVersions.sorted(), "explanation": explanation,
        ]
    }
}
