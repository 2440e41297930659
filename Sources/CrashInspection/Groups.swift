// Groups.swift — records grouped by crash signature, with counts, first/last seen and app versions.
import CrashFrames
import CrashRecordFormat
import Foundation

/// Records that share a crash signature.
package struct CrashGroup: Sendable {
    package var signature: String
    /// Which frames grouped it (``CrashGrouping/Rule``): the program's own, a package's, the system's.
    package var rule: String = ""
    package var ids: [String]
    /// Every crash the group stands for: its records and the crashes folded into them when the
    /// record directory was over its bounds (``RecordTally``), or counted in its ledger.
    package var crashes = 0
    package var firstSeenNanoseconds: Int64?
    package var lastSeenNanoseconds: Int64?
    package var appVersions: [String]
    /// The explanation of the most recent member.
    package var explanation: String

    /// Groups inspections by ``Inspection/signature``; largest group first, then most recent.
    /// With the record directory: each record counts the crashes folded into it, unreadable
    /// records (`unreadable`: their ids) are one group, and the directory's ledger of pruned
    /// crashes adds a group per signature it counts (by image offsets: no record is left to
    /// symbolicate).
    package static func make(_ inspections: [Inspection], directory: String? = nil, unreadable: [String] = []) -> [CrashGroup] {
        var groups: [String: CrashGroup] = [:]
        for inspection in inspections {
            let signature = inspection.signature
            let time = inspection.record.process?.crashWallNanoseconds
            var group = groups[signature] ?? CrashGroup(signature: signature, ids: [], firstSeenNanoseconds: nil,
                                                        lastSeenNanoseconds: nil, appVersions: [], explanation: "")
            group.ids.append(inspection.id)
            group.rule = inspection.grouping.rule.rawValue
            let name = String(inspection.path.split(separator: "/").last ?? "")
            let tally = directory.map { RecordTally.read(record: name, in: $0) } ?? RecordTally()
            group.crashes += tally.totalCrashes
            if let first = tally.firstFoldedMilliseconds {
                group.firstSeenNanoseconds = min(group.firstSeenNanoseconds ?? first * 1_000_000, first * 1_000_000)
            }
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
        if !unreadable.isEmpty {
            groups["unreadable record"] = CrashGroup(signature: "unreadable record", ids: unreadable, crashes: unreadable.count,
                                                     firstSeenNanoseconds: nil, lastSeenNanoseconds: nil, appVersions: [],
                                                     explanation: "Records the reader rejected (crash-inspect list says why).")
        }
        for entry in directory.map(PrunedCrashes.read(in:))?.entries ?? [] {
            let signature = "pruned: " + entry.key
            var group = groups[signature] ?? CrashGroup(signature: signature, ids: [], crashes: 0, firstSeenNanoseconds: nil,
                                                        lastSeenNanoseconds: nil, appVersions: [],
                                                        explanation: "Records pruned to keep the directory under its bounds; counted by signal and image offsets.")
            group.crashes += entry.count
            group.firstSeenNanoseconds = entry.firstMilliseconds * 1_000_000
            group.lastSeenNanoseconds = entry.lastMilliseconds * 1_000_000
            groups[signature] = group
        }
        return groups.values.sorted {
            ($0.crashes, $0.lastSeenNanoseconds ?? 0) > ($1.crashes, $1.lastSeenNanoseconds ?? 0)
        }
    }

    /// One entry of `groups --json`.
    package struct JSON: Encodable, Sendable {
        package var signature: String
        /// Which frames grouped it: `app frames`, `innermost package frame` or `system frames`.
        package var rule: String
        /// Crashes (records and the crashes folded into them).
        package var count: Int
        /// Records kept.
        package var records: Int
        package var ids: [String]
        package var firstSeen: Nullable<String>
        package var lastSeen: Nullable<String>
        package var appVersions: [String]
        package var explanation: String
    }

    package var json: JSON {
        JSON(signature: signature, rule: rule, count: crashes, records: ids.count, ids: ids, firstSeen: Nullable(firstSeenNanoseconds.map(isoTime)),
             lastSeen: Nullable(lastSeenNanoseconds.map(isoTime)), appVersions: appVersions.sorted(), explanation: explanation)
    }
}
