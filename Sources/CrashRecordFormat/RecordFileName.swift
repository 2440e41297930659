// RecordFileName.swift — the one place that knows what a record file is called and how to find
// the records in a directory (the handler makes the names from the same constants, cc_record.h).
import CCrashRecordLayout
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A record file's name: `crash-<unix ms>-<pid>-<tid>.ccrec`, or `.ccrec.partial` while the
/// handler writes it (it renames the file when the record is complete).
public struct RecordFileName: Sendable, Equatable {
    package static let prefix = CC_RECORD_PREFIX
    package static let completeExtension = CC_RECORD_EXTENSION
    package static let partialExtension = CC_RECORD_PARTIAL_EXTENSION

    /// When the crash was recorded, milliseconds since the Unix epoch.
    public var milliseconds: Int64
    /// The crashed process.
    public var pid: Int32
    /// The crashed thread.
    package var tid: Int32
    /// The file still has its `.partial` name: being written, or its writer died first.
    public var isPartial: Bool

    package init(milliseconds: Int64, pid: Int32, tid: Int32, isPartial: Bool = false) {
        self.milliseconds = milliseconds
        self.pid = pid
        self.tid = tid
        self.isPartial = isPartial
    }

    /// Parses a file name or path as the handler makes them; nil for anything else.
    public init?(_ nameOrPath: String) {
        let name = nameOrPath.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? ""
        guard let stem = Self.stem(of: name), stem.hasPrefix(Self.prefix) else { return nil }
        let parts = stem.dropFirst(Self.prefix.count).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, let ms = Int64(parts[0]), let pid = Int32(parts[1]), let tid = Int32(parts[2]) else { return nil }
        self.init(milliseconds: ms, pid: pid, tid: tid, isPartial: name.hasSuffix(Self.partialExtension))
    }

    /// The file name.
    package var name: String {
        Self.prefix + "\(milliseconds)-\(pid)-\(tid)" + (isPartial ? Self.partialExtension : Self.completeExtension)
    }

    /// A name without its record extension (`.ccrec` or `.ccrec.partial`), or nil when it has
    /// neither.
    package static func stem(of name: String) -> String? {
        for suffix in [partialExtension, completeExtension] where name.hasSuffix(suffix) {
            return String(name.dropLast(suffix.count))
        }
        return nil
    }

    /// Whether a directory entry is a record file (complete or partial), judged by its name only.
    package static func isRecordFile(_ name: String) -> Bool {
        !name.contains("/") && stem(of: name) != nil
    }

    // MARK: What lives beside the records

    /// Whether `name` can name a sink in the directory's files: 1–32 of `a-z`, `0-9`, `-`, `_`.
    package static func isSinkName(_ name: String) -> Bool {
        (1...32).contains(name.utf8.count)
            && name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F }
    }

    /// `<record>.<sink>.ack`: the sink has the record (the reporter's RecordInbox writes them).
    package static func acknowledgment(of record: String, by sink: String) -> String { "\(record).\(sink).ack" }

    /// The record and sink of an acknowledgment's name, if it is one.
    package static func parseAcknowledgment(_ entry: String) -> (record: String, sink: String)? {
        guard entry.hasSuffix(".ack") else { return nil }
        let stem = entry.dropLast(4)
        guard let dot = stem.lastIndex(of: ".") else { return nil }
        let sink = String(stem[stem.index(after: dot)...]), record = String(stem[..<dot])
        return isSinkName(sink) && RecordFileName(record) != nil ? (record, sink) : nil
    }

    /// `<record>.tally`: what the record stands for beyond its own crash (``RecordTally``).
    package static func tally(of record: String) -> String { record + ".tally" }

    /// The record a tally's name belongs to, if it is one.
    package static func parseTally(_ entry: String) -> String? {
        guard entry.hasSuffix(".tally") else { return nil }
        let record = String(entry.dropLast(6))
        return RecordFileName(record) != nil ? record : nil
    }

    /// The ledger of crashes whose records were pruned with no record of their signature left
    /// to fold them into (``PrunedCrashes``).
    package static let prunedLedger = CC_RECORD_PRUNED_LEDGER

    /// The reporter's crash-loop state (``CrashLoop``).
    package static let crashLoopState = "loop-state"

    /// Whether a directory entry is one of the files the record directory's owners keep: a record,
    /// an acknowledgment, a tally, the ledger or the crash-loop state.
    package static func isDirectoryFile(_ name: String) -> Bool {
        isRecordFile(name) || parseAcknowledgment(name) != nil || parseTally(name) != nil
            || name == prunedLedger || name == crashLoopState
    }

    /// `crash-inspect snapshot <pid>`'s request to process `pid`: a file of this name in the record
    /// directory, which the process's hang watcher answers (CrashCapture's HangDetection.swift).
    package static func snapshotRequest(pid: Int32) -> String { "snapshot-request-\(pid)" }
    /// The answer: the snapshot record's file name, or `error: …`, written whole (a rename).
    package static func snapshotAnswer(pid: Int32) -> String { "snapshot-answer-\(pid)" }

    /// Whether the process that wrote this record may still be writing it: a `.partial` record
    /// of a process that runs now (not a zombie) and started by the crash time (two seconds of
    /// slack for the boot time's whole seconds and clock steps) — a process that started later
    /// has only reused the pid. Complete records are never being written.
    package var writerMayBeRunning: Bool {
        guard isPartial, pid > 0, pid != getpid() else { return false }
        guard let stat = RecordDirectoryFile.readSmall("/proc/\(pid)/stat", limit: 4096),
              let close = stat.lastIndex(of: ")") else { return false }
        // The command name (field 2) is in parentheses and may hold spaces: parse after the last ')'.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = Int64(fields[19]) else { return false }   // field 22: starttime
        if fields[0] == "Z" || fields[0] == "X" { return false }
        guard let boot = RecordDirectoryFile.readSmall("/proc/stat", limit: 1 << 20)?.split(separator: "\n")
            .first(where: { $0.hasPrefix("btime ") }).flatMap({ Int64($0.dropFirst(6)) }) else { return true }
        let perSecond = max(1, Int64(sysconf(Int32(_SC_CLK_TCK))))
        return boot * 1000 + ticks * 1000 / perSecond <= milliseconds + 2000
    }

    /// The names of the record files in `directory` (complete and partial), sorted: oldest first
    /// for the handler's names. Taken from the directory listing only, so nothing outside it is
    /// ever opened.
    /// - Throws: ``CrashRecordError/unreadable(path:reason:)`` when the directory cannot be listed.
    public static func names(in directory: String) throws -> [String] {
        try names(in: directory, including: { _ in false })
    }

    /// ``names(in:)``, also listing the entries `including` accepts (the reporter's
    /// acknowledgments beside the records).
    package static func names(in directory: String, including: (String) -> Bool) throws -> [String] {
        guard let stream = opendir(directory) else {
            throw CrashRecordError.unreadable(path: directory, reason: "cannot list the directory (\(String(cString: strerror(errno))))")
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if isRecordFile(name) || including(name) { names.append(name) }
        }
        return names.sorted()
    }
}
