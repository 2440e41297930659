// BacktracerOutput.swift — comparing what the Swift runtime (its fatal-error stack trace, its backtracer) printed or wrote in two runs, and a record's frames with the backtracer's.
package import CrashRecordFormat
package import CrashSymbolication
import Foundation

package enum RuntimeOutput {
    /// The Swift runtime's "Current stack trace:" after a fatal error lists absolute addresses,
    /// which differ between any two runs (ASLR); the image names, symbols and image-relative
    /// offsets stay and must be the same with and without CrashCapture.
    @Sendable package static func normaliseAddresses(_ text: String) -> String {
        text.replacing(hex, with: "0x?")
    }

    nonisolated(unsafe) private static let hex = try! Regex(#"0x[0-9a-fA-F]+"#)
}

package enum BacktracerOutput {
    /// The backtracer's text with what differs between any two runs taken out: addresses
    /// (ASLR), register values and the memory they point to, build-ids and its own run time. What
    /// is left — the lines, the frame numbers and their [ra] marks, the crash description, the
    /// register names, how many images it leaves out of its list and the names and paths of those
    /// it lists — must be the same with and without CrashCapture (which loads no library).
    @Sendable package static func normaliseText(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { normaliseLine(String($0)) }.joined(separator: "\n")
    }

    nonisolated(unsafe) private static let registerLine = try! Regex(#"^(\s*[a-z][a-z0-9]*) 0x[0-9a-fA-F]+.*$"#)
    nonisolated(unsafe) private static let hex = try! Regex(#"0x[0-9a-fA-F]+"#)
    nonisolated(unsafe) private static let buildID = try! Regex(#"\b[0-9a-f]{32,}\b"#)
    nonisolated(unsafe) private static let took = try! Regex(#"Backtrace took [0-9.]+s"#)

    static func normaliseLine(_ line: String) -> String {
        if let match = try? registerLine.wholeMatch(in: line), let name = match.output[1].substring {
            return String(name)
        }
        var line = line.replacing(took, with: "Backtrace took ?s")
        line = line.replacing(hex, with: "0x?")
        line = line.replacing(buildID, with: "<build-id>")
        return line
    }

    /// The backtracer's JSON reports (`format=json,output-to={dir}`) of the run and of its
    /// reference run: both must be complete JSON, and the crashed thread's frames must agree
    /// frame by frame — kind, image, symbol, offset in the symbol, and address relative to the
    /// image's base (absolute addresses differ under ASLR).
    @Sendable package static func compareJSONReports(_ outcome: RunOutcome) -> [String] {
        guard let reference = outcome.reference else { return ["no reference run to compare the backtracer's JSON report with"] }
        var failures: [String] = []
        let mine = loadReport(in: outcome.directory, failures: &failures, label: "run")
        let theirs = loadReport(in: reference.directory, failures: &failures, label: "reference run")
        guard let mine, let theirs else { return failures }
        let mineFrames = crashedFrames(mine), theirFrames = crashedFrames(theirs)
        if theirFrames.isEmpty { failures.append("the reference run's JSON report has no crashed thread with frames") }
        if mineFrames.isEmpty { failures.append("the run's JSON report has no crashed thread with frames") }
        for (index, pair) in zip(mineFrames, theirFrames).enumerated() where pair.0 != pair.1 {
            failures.append("JSON report frame \(index): \(pair.0), reference run: \(pair.1)")
            break
        }
        if mineFrames.count != theirFrames.count {
            failures.append("JSON report has \(mineFrames.count) crashed-thread frames, the reference run's \(theirFrames.count)")
        }
        return failures
    }

    /// The one `.json` file in `directory`, parsed.
    package static func loadReport(in directory: String, failures: inout [String], label: String) -> [String: Any]? {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
        guard names.count == 1, let name = names.first else {
            failures.append("\(label): expected one backtracer JSON report in its directory, found \(names.count)")
            return nil
        }
        let data = FileManager.default.contents(atPath: directory + "/" + name) ?? Data()
        if data.isEmpty {
            failures.append("\(label): backtracer JSON report \(name) is empty")
            return nil
        }
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            failures.append("\(label): backtracer JSON report \(name) (\(data.count) bytes) is not complete JSON")
            return nil
        }
        return object
    }

    /// The crashed thread's frames as comparable strings.
    package static func crashedFrames(_ report: [String: Any]) -> [String] {
        let threads = report["threads"] as? [[String: Any]] ?? []
        guard let crashed = threads.first(where: { $0["crashed"] as? Bool == true }) else { return [] }
        var bases: [String: UInt64] = [:]
        for image in report["images"] as? [[String: Any]] ?? [] {
            if let name = image["name"] as? String, let base = (image["baseAddress"] as? String).flatMap(parseHex) { bases[name] = base }
        }
        return (crashed["frames"] as? [[String: Any]] ?? []).map { frame in
            let kind = frame["kind"] as? String ?? "?"
            let image = frame["image"] as? String ?? "?"
            let symbol = frame["symbol"] as? String ?? "?"
            let offset = (frame["offset"] as? NSNumber).map { "+\($0)" } ?? ""
            var relative = "?"
            if let address = (frame["address"] as? String).flatMap(parseHex) {
                if let base = bases[image], address >= base { relative = "0x" + String(address - base, radix: 16) }
                else if address == 0 { relative = "0x0" }
            }
            return "\(kind) \(image)@\(relative) \(symbol)\(offset)"
        }
    }

    /// The crashed thread's frames of a report as (kind, image name, offset from the image's
    /// base), without the entries that are not addresses (`truncated`, `omittedFrames`) or that
    /// repeat one (inlined frames); and whether the backtracer cut its walk short.
    package static func reportFrames(_ report: [String: Any]) -> (frames: [String], truncated: Bool) {
        let threads = report["threads"] as? [[String: Any]] ?? []
        guard let crashed = threads.first(where: { $0["crashed"] as? Bool == true }) else { return ([], false) }
        var bases: [String: UInt64] = [:]
        for image in report["images"] as? [[String: Any]] ?? [] {
            if let name = image["name"] as? String, let base = (image["baseAddress"] as? String).flatMap(parseHex) { bases[name] = base }
        }
        var frames: [String] = []
        var truncated = false
        for frame in crashed["frames"] as? [[String: Any]] ?? [] {
            let kind = frame["kind"] as? String ?? "?"
            if kind == "truncated" || kind == "omittedFrames" { truncated = true; continue }
            if frame["inlined"] as? Bool == true { continue }
            guard let address = (frame["address"] as? String).flatMap(parseHex) else { continue }
            let image = frame["image"] as? String ?? "?"
            let offset = bases[image].map { address >= $0 ? "0x" + String(address - $0, radix: 16) : "?" } ?? "?"
            frames.append("\(kind) \(image)@\(offset)")
        }
        return (frames, truncated)
    }

    /// A record's frames (``Symbolicator/threadFrames(of:images:)``) in the same form.
    package static func recordFrames(_ frames: [ThreadFrame], images: [CrashImage]) -> [String] {
        frames.map { frame in
            let image = images.first { $0.contains(frame.address) }
            let name = image.map { ($0.path as NSString).lastPathComponent } ?? "?"
            let offset = image.map { "0x" + String(frame.address - $0.base, radix: 16) } ?? "?"
            return "\(frame.kind.rawValue) \(name)@\(offset)"
        }
    }

    /// The record's crashed-thread frames against the backtracer's JSON report of the same
    /// crash (the one report in `backtracerDirectory`), frame for frame: kind, image and offset
    /// in the image, async resume points included, and as many. (The backtracer ends every
    /// crashed thread with a `truncated` entry, walk finished or not: it is not a frame.)
    /// Failures, or [].
    package static func compareRecordFrames(_ frames: [ThreadFrame], images: [CrashImage], backtracerDirectory: String) -> [String] {
        var failures: [String] = []
        guard let report = loadReport(in: backtracerDirectory, failures: &failures, label: "backtracer run") else { return failures }
        let theirs = reportFrames(report).frames
        let mine = recordFrames(frames, images: images)
        if theirs.isEmpty { return ["the backtracer's report has no crashed-thread frames"] }
        for (index, pair) in zip(mine, theirs).enumerated() where pair.0 != pair.1 {
            return ["frame \(index) is \(pair.0), the backtracer's is \(pair.1); record: \(mine), backtracer: \(theirs)"]
        }
        if mine.count != theirs.count {
            failures.append("the record has \(mine.count) crashed-thread frames, the backtracer \(theirs.count); record: \(mine), backtracer: \(theirs)")
        }
        return failures
    }

    static func parseHex(_ text: String) -> UInt64? {
        UInt64(text.hasPrefix("0x") ? String(text.dropFirst(2)) : text, radix: 16)
    }
}
