// Groups.swift — records grouped by crash signature, with counts, first/last seen and app versions.
import Foundation

/// Records that share a crash signature.
package struct CrashGroup: Sendable {
    package var signature: String
    package var ids: [String]
    package var firstSeenNanoseconds: Int64?
    package var lastSeenNanoseconds: Int64?
    package var appVersions: [String]
    /// The explanation of the most recent member.
    package var explanation: String

    /// Groups inspections by ``Inspection/signature``; largest group first, then most recent.
    package static func make(_ inspections: [Inspection]) -> [CrashGroup] {
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

    /// One entry of `groups --json`.
    package struct JSON: Encodable, Sendable {
        package var signature: String
        package var count: Int
        package var ids: [String]
        package var firstSeen: Nullable<String>
        package var lastSeen: Nullable<String>
        package var appVersions: [String]
        package var explanation: String
    }

    package var json: JSON {
        JSON(signature: signature, count: ids.count, ids: ids, firstSeen: Nullable(firstSeenNanoseconds.map(isoTime)),
             lastSeen: Nullable(lastSeenNanoseconds.map(isoTime)), appVersions: appVersions.sorted(), explanation: explanation)
    }
}
