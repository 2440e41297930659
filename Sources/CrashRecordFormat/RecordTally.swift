// RecordTally.swift — what a kept record stands for beyond its own crash: the crashes of the same
// signature folded into it when the record directory was over its bounds (RecordDirectoryBound),
// and how many of those each sink already had (and, in memory, the crash loop it was part of,
// which the reporter's crash-loop state keeps). Kept beside the
// record as `<record>.tally`, a few `key value` lines; read as untrusted (a line that does not
// parse is ignored, a file over 4 KiB is not read), written whole (a temporary file, renamed).
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What one record stands for beyond its own crash (see the file comment).
package struct RecordTally: Sendable, Equatable {
    /// Crashes of the same signature whose records were folded into this one (not counting its own).
    package var folded: Int = 0
    /// The earliest and the latest crash among the folded ones, ms since the epoch.
    package var firstFoldedMilliseconds: Int64?
    package var lastFoldedMilliseconds: Int64?
    /// Of the folded crashes, how many each sink (by id) had already reported before its record was folded.
    package var deliveredBySink: [String: Int] = [:]
    /// The crash loop this crash was part of: how many crashes in a row, this one included,
    /// each happened soon after its process started; nil until the reporter judged it. Not in the
    /// file: the reporter's crash-loop state (`loop-state`) keeps the verdicts.
    package var consecutiveCrashesAtStart: Int?

    package init() {}

    /// The crashes a sink's event for this record stands for: its own, and the folded ones that
    /// sink has not reported yet.
    package func crashes(forSink sink: String) -> Int {
        1 + max(0, folded - min(folded, deliveredBySink[sink] ?? 0))
    }

    /// Every crash this record stands for, its own included.
    package var totalCrashes: Int { 1 + folded }

    /// Adds a folded record (`other`, crashed at `milliseconds`, whose own tally is `tally`,
    /// already delivered to `deliveredTo`) to this one.
    package mutating func fold(crashedAt milliseconds: Int64, tally other: RecordTally, deliveredTo: Set<String>) {
        folded += other.totalCrashes
        let times = [milliseconds] + [other.firstFoldedMilliseconds, other.lastFoldedMilliseconds].compactMap { $0 }
        firstFoldedMilliseconds = min(firstFoldedMilliseconds ?? Int64.max, times.min()!)
        lastFoldedMilliseconds = max(lastFoldedMilliseconds ?? Int64.min, times.max()!)
        for sink in deliveredTo.union(other.deliveredBySink.keys) {
            let delivered = deliveredTo.contains(sink) ? other.totalCrashes : min(other.folded, other.deliveredBySink[sink] ?? 0)
            deliveredBySink[sink, default: 0] += delivered
        }
    }

    /// The file's text.
    package var text: String {
        var lines = ["folded \(folded)"]
        if let first = firstFoldedMilliseconds { lines.append("first \(first)") }
        if let last = lastFoldedMilliseconds { lines.append("last \(last)") }
        for (sink, count) in deliveredBySink.sorted(by: { $0.key < $1.key }) { lines.append("delivered \(sink) \(count)") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses a tally's text; lines that do not parse (and negative counts) are ignored.
    package init(text: String) {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            switch (fields.first, fields.count) {
            case ("folded", 2): if let n = Int(fields[1]), n >= 0 { folded = n }
            case ("first", 2): firstFoldedMilliseconds = Int64(fields[1])
            case ("last", 2): lastFoldedMilliseconds = Int64(fields[1])
            case ("delivered", 3):
                if RecordFileName.isSinkName(String(fields[1])), let n = Int(fields[2]), n >= 0 { deliveredBySink[String(fields[1])] = n }
            default: continue
            }
        }
    }

    /// The tally of record `record` in `directory`: empty when there is none, or it is not a
    /// regular file of at most 4 KiB.
    package static func read(record: String, in directory: String) -> RecordTally {
        guard let text = RecordDirectoryFile.readSmall(directory + "/" + RecordFileName.tally(of: record), limit: 4096) else {
            return RecordTally()
        }
        return RecordTally(text: text)
    }

    /// Writes the tally of `record` whole (a temporary file renamed over it). False when it could not.
    @discardableResult
    package func write(record: String, in directory: String) -> Bool {
        RecordDirectoryFile.writeWhole(directory + "/" + RecordFileName.tally(of: record), text)
    }
}

/// Small files of the record directory beside the records (tallies, the pruned-crash ledger),
/// and the /proc files a liveness check reads: read bounded and only when regular (a /proc file
/// says size 0 and is read to its end), written through a temporary name.
package enum RecordDirectoryFile {
    /// The text of the regular file at `path` if it is at most `limit` bytes; nil otherwise.
    package static func readSmall(_ path: String, limit: Int) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= limit else { return nil }
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var length = 0
        while length < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + length, $0.count - length) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            length += got
        }
        guard length <= limit else { return nil }
        return String(decoding: bytes[..<length], as: UTF8.self)
    }

    /// Writes `text` to `path` whole: to `path.tmp-<pid>` (0600), then renamed over `path`.
    package static func writeWhole(_ path: String, _ text: String) -> Bool {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            written += n
        }
        let closed = close(fd) == 0
        guard written == bytes.count, closed, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }
}

/// What one event says beyond its crash: how many crashes it stands for, and the crash loop the
/// crash was part of (from the record's ``RecordTally``, for one sink).
package struct CrashRepetition: Sendable, Equatable {
    /// Crashes at start in a row that make a crash loop.
    package static let crashLoopLength = 3

    /// Crashes the event stands for, its own included (≥ 1).
    package var crashes: Int
    /// The earliest of them, ms since the epoch, when there are others.
    package var firstMilliseconds: Int64?
    /// Crashes at start in a row up to this one (0: it was not at start); nil when not judged.
    package var consecutiveCrashesAtStart: Int?

    package init(crashes: Int = 1, firstMilliseconds: Int64? = nil, consecutiveCrashesAtStart: Int? = nil) {
        self.crashes = max(1, crashes)
        self.firstMilliseconds = firstMilliseconds
        self.consecutiveCrashesAtStart = consecutiveCrashesAtStart
    }

    /// Whether the crash was part of a crash loop.
    package var isCrashLoop: Bool { (consecutiveCrashesAtStart ?? 0) >= Self.crashLoopLength }
}

extension RecordTally {
    /// What a sink's event for this record says.
    package func repetition(forSink sink: String) -> CrashRepetition {
        let crashes = crashes(forSink: sink)
        return CrashRepetition(crashes: crashes, firstMilliseconds: crashes > 1 ? firstFoldedMilliseconds : nil,
                               consecutiveCrashesAtStart: consecutiveCrashesAtStart)
    }
}
