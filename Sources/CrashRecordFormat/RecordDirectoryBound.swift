// RecordDirectoryBound.swift — the record directory never grows without bound, and no crash is
// lost by keeping it small.
//
// A crash loop (a program restarted by systemd or Kubernetes that crashes at every start, while the
// network is down) adds a record per crash: 13–70 KB each, a disk a day. So the directory is kept
// under a number of records and a number of bytes (64 and 32 MiB by default), counting complete
// and `.partial` records (and what lies beside them). Enforced where it is safe: by
// `CrashHandler.start` (once the handlers are installed, through their directory fd) and by the
// reporter's inbox before each pass; never in the signal handler. A start adds at most one
// record (its own crash) before the next start, so pruning at a start to below the limit keeps a
// crash loop under it.
//
// Nothing is silently lost. When the directory is over its bounds, records are brought down to
// three quarters of them (so the work, which reads every record, is not done at every start),
// in this order:
//   1. the records of a signature between its first and its latest (oldest first) are folded into
//      the latest: deleted, and counted in the latest's tally (``RecordTally``: how many, first and
//      last time, how many each sink already had), so its event says how many crashes it stands for;
//   2. then the first of a signature, into its latest;
//   3. then, oldest first, any record left (many different crashes), counted in the directory's
//      ledger (``PrunedCrashes``) by signature.
// A record is folded only into one that no sink has and the folded one lacks (so a sink never
// misses a crash it had not reported). Never touched: a `.partial` record whose writer may still
// be writing it, a record another process holds the lease of (``RecordLease``: it is being sent).
import CCrashRecordLayout
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How much a record directory may hold.
package struct RecordDirectoryLimits: Sendable, Equatable {
    /// Records (complete and `.partial`) at most.
    package var maxRecords: Int
    /// Bytes at most: records and the files beside them.
    package var maxBytes: Int

    package init(maxRecords: Int, maxBytes: Int) {
        self.maxRecords = max(2, maxRecords)
        self.maxBytes = max(1 << 20, maxBytes)
    }

    /// 64 records, 32 MiB.
    package static let standard = RecordDirectoryLimits(maxRecords: 64, maxBytes: 32 << 20)

    /// Room kept for the next crash's record by a start: bytes a large record takes (a thousand
    /// threads' stacks and the crashed thread's 64 KiB window), a sixteenth of the bound at most.
    var reserveBytes: Int { min(2 << 20, maxBytes / 16) }
}

package enum RecordDirectoryBound {
    /// What enforcing the bounds did.
    package struct Outcome: Sendable, Equatable {
        /// Records before and after.
        package var recordsBefore = 0, recordsAfter = 0
        /// Bytes before and after.
        package var bytesBefore = 0, bytesAfter = 0
        /// Folded records: name → the record it was folded into.
        package var folded: [String: String] = [:]
        /// Records pruned into the ledger.
        package var pruned: [String] = []
        /// What could not be done ("name: why").
        package var errors: [String] = []
        package init() {}
    }

    /// One record file as the bound sees it.
    private struct Entry {
        var name: String
        var milliseconds: Int64
        var bytes: Int
        var acknowledgedBy: Set<String>
        var key = ""
    }

    /// Brings `directory` under `limits` with room for one more record (see the file comment).
    /// Cheap when it is under them: one listing and an `lstat` per file. `counted`: that
    /// listing's records and bytes when the caller has it already (capture's start counts through
    /// its own directory fd, `cc_installed_directory_usage`). Never throws.
    @discardableResult
    package static func enforce(directory: String, limits: RecordDirectoryLimits = .standard,
                                counted: (records: Int, bytes: Int)? = nil) -> Outcome {
        var outcome = Outcome()
        // The common case, on every start: under the bound, told from the raw directory entries
        // (no String, no sort: in a fresh process those cost more than the listing itself).
        if let (records, bytes) = counted ?? quickCount(directory), records < limits.maxRecords, bytes + limits.reserveBytes <= limits.maxBytes {
            outcome.recordsBefore = records
            outcome.recordsAfter = records
            outcome.bytesBefore = bytes
            outcome.bytesAfter = bytes
            return outcome
        }
        let names: [String]
        do {
            names = try RecordFileName.names(in: directory, including: RecordFileName.isDirectoryFile)
        } catch {
            outcome.errors.append("\(directory): \(error)")
            return outcome
        }
        var records: [Entry] = []
        var acknowledgments: [String: Set<String>] = [:]
        var besideBytes = 0
        for name in names {
            if let (record, sink) = RecordFileName.parseAcknowledgment(name) {
                acknowledgments[record, default: []].insert(sink)
            } else if !RecordFileName.isRecordFile(name) {
                besideBytes += size(directory + "/" + name)
            }
        }
        var untouchable: Set<String> = []
        for name in names where RecordFileName.isRecordFile(name) {
            guard let parsed = RecordFileName(name) else { continue }
            if parsed.writerMayBeRunning { untouchable.insert(name) }
            records.append(Entry(name: name, milliseconds: parsed.milliseconds, bytes: size(directory + "/" + name),
                                 acknowledgedBy: acknowledgments[name] ?? []))
        }
        var count = records.count
        var bytes = records.reduce(besideBytes) { $0 + $1.bytes }
        outcome.recordsBefore = count
        outcome.bytesBefore = bytes
        outcome.recordsAfter = count
        outcome.bytesAfter = bytes
        // Room for the next crash: under the bound with one record more.
        guard count >= limits.maxRecords || bytes + limits.reserveBytes > limits.maxBytes else { return outcome }
        let targetRecords = limits.maxRecords * 3 / 4, targetBytes = limits.maxBytes * 3 / 4
        func done() -> Bool { count <= targetRecords && bytes <= targetBytes }

        // Every record's signature: each is read once, as untrusted.
        for index in records.indices {
            records[index].key = foldKey(path: directory + "/" + records[index].name)
        }
        var groups: [String: [Int]] = [:]   // key → indices, oldest first
        for (index, entry) in records.enumerated() where !untouchable.contains(entry.name) {
            groups[entry.key, default: []].append(index)
        }
        // The candidates, in the order they go, each with the record it is folded into (nil: the ledger).
        // Entries that are not files the handler writes (a symbolic link, a FIFO…) go first.
        var candidates: [(Int, Int?)] = records.indices.filter { !isRegularFile(directory + "/" + records[$0].name) }.map { ($0, nil) }
        let middles = groups.values.flatMap { members in members.count >= 3 ? members.dropFirst().dropLast().map { ($0, members.last!) } : [] }
        let firsts = groups.values.compactMap { members in members.count >= 2 ? (members.first!, members.last!) : nil }
        candidates += middles.sorted { $0.0 < $1.0 }.map { ($0.0, Optional($0.1)) }
        candidates += firsts.sorted { $0.0 < $1.0 }.map { ($0.0, Optional($0.1)) }
        candidates += records.indices.filter { !untouchable.contains(records[$0].name) }.map { ($0, nil) }

        var gone: Set<Int> = []
        var ledger: PrunedCrashes?
        for (index, into) in candidates where !done() && !gone.contains(index) {
            let entry = records[index]
            var target = into
            // Folded only into a record whose every sink also had this one (else that sink would
            // never hear of this crash); failing that, into the ledger.
            if let t = target, gone.contains(t) || !records[t].acknowledgedBy.isSubset(of: entry.acknowledgedBy) { target = nil }
            if target == nil && into != nil { continue }   // its turn in the ledger comes last
            let path = directory + "/" + entry.name
            if !isRegularFile(path) {
                // Not a file the handler writes (a symbolic link, a FIFO…): hostile or broken.
                // Removed (a link, never what it points to) and counted as a crash we cannot read.
                unlink(path)
                ledgerAdd(&ledger, entry, tally: RecordTally(), outcome: &outcome, directory: directory)
                gone.insert(index)
                count -= 1
                continue
            }
            guard let lease = RecordLease(path: path) else {
                if access(path, F_OK) == 0 { outcome.errors.append("\(entry.name): another process is sending it") }
                continue
            }
            let tally = RecordTally.read(record: entry.name, in: directory)
            if let t = target {
                var kept = RecordTally.read(record: records[t].name, in: directory)
                kept.fold(crashedAt: entry.milliseconds, tally: tally, deliveredTo: entry.acknowledgedBy)
                guard kept.write(record: records[t].name, in: directory) else {
                    outcome.errors.append("\(entry.name): cannot write the tally of \(records[t].name) (\(String(cString: strerror(errno))))")
                    continue
                }
                outcome.folded[entry.name] = records[t].name
            } else if !ledgerAdd(&ledger, entry, tally: tally, outcome: &outcome, directory: directory) {
                continue
            }
            let tallyPath = directory + "/" + RecordFileName.tally(of: entry.name)
            let freed = entry.bytes + size(tallyPath)
            unlink(path)
            unlink(tallyPath)
            for sink in entry.acknowledgedBy { unlink(directory + "/" + RecordFileName.acknowledgment(of: entry.name, by: sink)) }
            lease.release()
            gone.insert(index)
            count -= 1
            bytes -= freed
        }
        outcome.recordsAfter = count
        outcome.bytesAfter = bytes
        return outcome
    }

    /// The record files in `directory` and the bytes of what lies beside them, as the C side
    /// counts them (`cc_record_directory_usage`, cc_record.h: an upper bound, without a String
    /// or an allocation). nil when the directory cannot be listed.
    static func quickCount(_ directory: String) -> (records: Int, bytes: Int)? {
        var records: UInt64 = 0, bytes: UInt64 = 0
        guard cc_record_directory_usage(directory, &records, &bytes) == 0 else { return nil }
        return (Int(clamping: records), Int(clamping: bytes))
    }

    /// Counts `entry` (and what its tally stands for) in the directory's ledger. False when the
    /// ledger could not be written (the record then stays).
    @discardableResult
    private static func ledgerAdd(_ ledger: inout PrunedCrashes?, _ entry: Entry, tally: RecordTally, outcome: inout Outcome,
                                  directory: String) -> Bool {
        var updated = ledger ?? PrunedCrashes.read(in: directory)
        updated.add(key: entry.key, crashes: tally.totalCrashes, first: tally.firstFoldedMilliseconds ?? entry.milliseconds,
                    last: max(entry.milliseconds, tally.lastFoldedMilliseconds ?? entry.milliseconds))
        guard updated.write(in: directory) else {
            outcome.errors.append("\(entry.name): cannot write the ledger (\(String(cString: strerror(errno))))")
            return false
        }
        ledger = updated
        outcome.pruned.append(entry.name)
        return true
    }

    private static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// The signature a record is folded by (``CrashRecord/foldKey``), or what kind of unreadable it is.
    private static func foldKey(path: String) -> String {
        do {
            return try CrashRecordReader.parse(CrashRecordReader.readBytes(path: path)).foldKey
        } catch {
            return "unreadable record"
        }
    }

    /// The size of a regular file (0 for anything else, or when it is gone).
    private static func size(_ path: String) -> Int {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return 0 }
        return Int(info.st_size)
    }
}

extension CrashRecord {
    /// The signature records are folded by when the directory is over its bounds: the signal
    /// and its code, the first line of the abort message, and the crashed thread's first three
    /// frames as `image+0xoffset` (the same across runs of one build whatever ASLR did). Read
    /// from the record alone: no symbol is looked up, so it costs no more than reading it.
    package var foldKey: String {
        var parts = [event.map { "\($0.kind.rawValue) \($0.detector.name) \($0.name)" } ?? signal.map { "\($0.name) \($0.codeName)" } ?? "no signal"]
        if let abort = abortMessage, let line = abort.split(separator: "\n").first { parts.append(String(line)) }
        let frames = crashedThread?.frames.prefix(3).map { offsetLabel(for: $0) ?? "0x" + String($0, radix: 16) } ?? []
        parts += frames.isEmpty ? ["no frames"] : frames
        return parts.joined(separator: " | ")
    }
}

/// An exclusive, non-blocking `flock(2)` on a record file: whoever holds it is the one process
/// sending (or folding) that record. Released by ``release()``, or by the kernel when the process dies.
package final class RecordLease {
    private var fd: Int32

    /// The lease on the record at `path`, or nil when another process holds it, or the file is
    /// gone (sent and deleted by another process) or is not a regular file.
    package init?(path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        var opened = stat(), current = stat()
        guard fstat(fd, &opened) == 0, (opened.st_mode & S_IFMT) == S_IFREG, flock(fd, LOCK_EX | LOCK_NB) == 0,
              // Still the file at that path (not deleted, nor replaced, while we waited for the lock).
              stat(path, &current) == 0, current.st_ino == opened.st_ino, current.st_dev == opened.st_dev else {
            close(fd)
            return nil
        }
        self.fd = fd
    }

    package func release() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
    }

    deinit { release() }
}

/// The directory's ledger of crashes whose records were pruned with no record of their
/// signature left to fold them into: a count per signature, with the first and last time.
/// One line each, `<count> <first ms> <last ms> <signature>`; lines that do not parse are ignored.
package struct PrunedCrashes: Sendable, Equatable {
    package struct Entry: Sendable, Equatable {
        package var key: String
        package var count: Int
        package var firstMilliseconds: Int64
        package var lastMilliseconds: Int64

        package init(key: String, count: Int, firstMilliseconds: Int64, lastMilliseconds: Int64) {
            self.key = key
            self.count = count
            self.firstMilliseconds = firstMilliseconds
            self.lastMilliseconds = lastMilliseconds
        }
    }

    /// Oldest signature first.
    package var entries: [Entry] = []

    /// At most this many signatures are kept (the oldest merge into one "other crashes" line).
    static let maxEntries = 256

    package init() {}

    package static func read(in directory: String) -> PrunedCrashes {
        var ledger = PrunedCrashes()
        guard let text = RecordDirectoryFile.readSmall(directory + "/" + RecordFileName.prunedLedger, limit: 1 << 20) else { return ledger }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count == 4, let count = Int(fields[0]), count > 0, let first = Int64(fields[1]), let last = Int64(fields[2]) else { continue }
            ledger.add(key: String(fields[3]), crashes: count, first: first, last: last)
        }
        return ledger
    }

    /// Every crash the ledger counts.
    package var totalCrashes: Int { entries.reduce(0) { $0 + $1.count } }

    package mutating func add(key: String, crashes: Int, first: Int64, last: Int64) {
        let key = String(key.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
        if let index = entries.firstIndex(where: { $0.key == key }) {
            entries[index].count += crashes
            entries[index].firstMilliseconds = min(entries[index].firstMilliseconds, first)
            entries[index].lastMilliseconds = max(entries[index].lastMilliseconds, last)
            return
        }
        entries.append(Entry(key: key, count: crashes, firstMilliseconds: first, lastMilliseconds: last))
        if entries.count > Self.maxEntries {
            let oldest = entries.removeFirst(), next = entries.removeFirst()
            entries.insert(Entry(key: "other crashes", count: oldest.count + next.count,
                                 firstMilliseconds: min(oldest.firstMilliseconds, next.firstMilliseconds),
                                 lastMilliseconds: max(oldest.lastMilliseconds, next.lastMilliseconds)), at: 0)
        }
    }

    package func write(in directory: String) -> Bool {
        let text = entries.map { "\($0.count) \($0.firstMilliseconds) \($0.lastMilliseconds) \($0.key)\n" }.joined()
        return RecordDirectoryFile.writeWhole(directory + "/" + RecordFileName.prunedLedger, text)
    }
}
