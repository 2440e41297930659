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
    public var tid: Int32
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
