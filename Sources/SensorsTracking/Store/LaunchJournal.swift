// LaunchJournal.swift — a quiet run's `$AppStart` and `$AppEnd`, kept beside the store without
// opening SQLite, and folded into it by the next process that opens it.
//
// A command-line tool that tracks nothing stores two events per run. Opening SQLite for them (its
// first use in the process, the schema check, two write transactions) was most of what the
// analytics cost such a run. Instead, while this process has not opened the store, a hosted
// tracker appends each of those commits to `<store>-pending`, one line each, and reads the
// identity it starts with from `<store>-state` (StateCopy.swift). Whoever opens the store next
// (a launch with records, a run that tracks, every launch once the journal passes
// ``TrackingStore/journalFoldBytes``, the inspector reading it) folds the journal in first,
// in one transaction, so the store holds every event in the order it was committed.
//
// One entry is one line: a JSON object `{"id", "events": [...], "register": marker?, "ending": runID?}`,
// written by one `write(2)` on a descriptor opened with `O_APPEND`, under a shared `flock`. A line
// that does not parse whole (a process killed in the middle of its write, a full disk) is skipped
// and counted (`dropped_journal_unreadable`): every entry before and after it is kept.
//
// Folding, one process at a time (an exclusive `flock` on `<store>-pending.lock`, which an open
// waits for): a fold left by a process that died in it is done first; then the journal is renamed
// to `<store>-pending.folding` and locked exclusively, which waits for an append in progress; an
// appender that finds, once it holds its shared lock, that the journal's name no longer names the
// file it opened starts again on the new journal. The entries go into the store in one
// transaction that also takes the claim `journal:<first entry id>` (Claims.swift), so a fold
// interrupted after its commit and done again adds nothing twice; the file is deleted after the
// commit. An open returns only once every entry appended before it is in the store.
import Foundation
import SensorsEvents
import HostFacts
import CrashRecordFormat
#if canImport(Glibc)
import Glibc
#endif

/// One commit kept in the journal: what ``TrackingStore/append(_:registeringRun:endingRun:addingCounters:)``
/// would have written.
package struct JournalEntry: Sendable, Equatable {
    package var id: String
    package var events: [NewEvent]
    package var registered: RunMarker?
    package var endingRun: String?

    package init(id: String = EventDraft.newTrackID(), events: [NewEvent], registered: RunMarker? = nil, endingRun: String? = nil) {
        self.id = id
        self.events = events
        self.registered = registered
        self.endingRun = endingRun
    }

    /// The entry as one journal line (with its newline).
    var line: String {
        var out = "{\"id\":\(JSONText.quote(id)),\"events\":["
        for (index, event) in events.enumerated() {
            if index > 0 { out += "," }
            out += "{\"track_id\":\(JSONText.quote(event.trackID)),\"event\":\(JSONText.quote(event.event)),"
            out += "\"time\":\(event.time),\"priority\":\(event.priority.rawValue),\"json\":\(JSONText.quote(event.json))}"
        }
        out += "]"
        if let marker = registered {
            out += ",\"register\":{\"run_id\":\(JSONText.quote(marker.runID)),\"pid\":\(marker.process.pid),"
            out += "\"boot_id\":\(JSONText.quote(marker.process.bootID)),\"start_ticks\":\(marker.process.startTicks),"
            out += "\"start_wall_ms\":\(marker.startWallMilliseconds),\"start_mono_ns\":\(marker.startMonotonicNanoseconds),"
            out += "\"refresh_wall_ms\":\(marker.refreshWallMilliseconds),\"refresh_mono_ns\":\(marker.refreshMonotonicNanoseconds),"
            out += "\"app_name\":\(JSONText.quote(marker.appName)),\"app_version\":\(JSONText.quote(marker.appVersion))"
            if let anonymous = marker.identity.anonymousID { out += ",\"anonymous_id\":\(JSONText.quote(anonymous))" }
            if let login = marker.identity.loginID { out += ",\"login_id\":\(JSONText.quote(login))" }
            if let oom = marker.oomKills {
                out += ",\"oom_counter_path\":\(JSONText.quote(oom.path)),\"oom_counter_inode\":\(oom.inode),\"oom_kills\":\(oom.kills)"
            }
            out += "}"
        }
        if let endingRun { out += ",\"ending\":\(JSONText.quote(endingRun))" }
        return out + "}\n"
    }

    /// An entry from one line (without its newline); `nil` when the line is not a whole entry.
    init?(line: Substring) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let id = object["id"] as? String, !id.isEmpty, let events = object["events"] as? [[String: Any]]
        else { return nil }
        var parsed: [NewEvent] = []
        for event in events {
            guard let trackID = event["track_id"] as? String, let name = event["event"] as? String,
                  let time = (event["time"] as? NSNumber)?.int64Value,
                  let priority = (event["priority"] as? NSNumber).flatMap({ EventPriority(rawValue: $0.intValue) }),
                  let json = event["json"] as? String
            else { return nil }
            parsed.append(NewEvent(trackID: trackID, event: name, time: time, priority: priority, json: json))
        }
        var marker: RunMarker?
        if let row = object["register"] {
            guard let row = row as? [String: Any], let runID = row["run_id"] as? String,
                  let pid = (row["pid"] as? NSNumber)?.int32Value, let bootID = row["boot_id"] as? String,
                  let ticks = (row["start_ticks"] as? NSNumber)?.int64Value,
                  let startWall = (row["start_wall_ms"] as? NSNumber)?.int64Value,
                  let startMono = (row["start_mono_ns"] as? NSNumber)?.int64Value,
                  let refreshWall = (row["refresh_wall_ms"] as? NSNumber)?.int64Value,
                  let refreshMono = (row["refresh_mono_ns"] as? NSNumber)?.int64Value,
                  let appName = row["app_name"] as? String, let appVersion = row["app_version"] as? String
            else { return nil }
            var oom: OOMKillReading?
            if let path = row["oom_counter_path"] as? String, let inode = (row["oom_counter_inode"] as? NSNumber)?.uint64Value,
               let kills = (row["oom_kills"] as? NSNumber)?.int64Value {
                oom = OOMKillReading(path: path, inode: inode, kills: kills)
            }
            marker = RunMarker(runID: runID, process: ProcessIdentity(pid: pid, bootID: bootID, startTicks: ticks),
                               startWallMilliseconds: startWall, startMonotonicNanoseconds: startMono,
                               refreshWallMilliseconds: refreshWall, refreshMonotonicNanoseconds: refreshMono,
                               appName: appName, appVersion: appVersion,
                               identity: EventIdentity(anonymousID: row["anonymous_id"] as? String, loginID: row["login_id"] as? String),
                               oomKills: oom)
        }
        var ending: String?
        if let value = object["ending"] {
            guard let runID = value as? String else { return nil }
            ending = runID
        }
        self.init(id: id, events: parsed, registered: marker, endingRun: ending)
    }
}

/// What a journal file holds: its whole entries, and how many lines were not whole.
package struct JournalContents: Sendable, Equatable {
    package var entries: [JournalEntry] = []
    package var unreadableLines = 0

    /// Entries from a file's bytes: one per line that ends with a newline and parses whole.
    init(bytes: [UInt8]) {
        var start = 0
        for index in bytes.indices where bytes[index] == 0x0A {
            let line = Substring(decoding: bytes[start..<index], as: UTF8.self)
            start = index + 1
            if line.isEmpty { continue }
            if let entry = JournalEntry(line: line) { entries.append(entry) } else { unreadableLines += 1 }
        }
        // A last line without its newline: a write cut short.
        if start < bytes.count { unreadableLines += 1 }
    }

    init() {}
}

extension TrackingStore {
    /// Past this size the journal is folded at the next launch (the launch opens the store): about
    /// 40 quiet runs of `$AppStart` and `$AppEnd`.
    package static let journalFoldBytes = 64 * 1024

    /// The journal of a store at `path`.
    package static func journalPath(_ path: String) -> String { path + "-pending" }
    /// A journal being folded (or left by a fold that did not finish).
    static func foldingPath(_ path: String) -> String { path + "-pending.folding" }

    /// The journal's size in bytes (0 when there is none).
    package var journalBytes: Int {
        var info = stat()
        guard stat(Self.journalPath(path), &info) == 0 else { return 0 }
        return Int(info.st_size)
    }

    /// Appends one entry to the journal. Throws when it cannot be written whole (the caller then
    /// writes to the store itself).
    /// - Parameter afterOpening: runs between opening the journal and locking it (tests: a fold
    ///   taking the journal at that moment).
    package func appendToJournal(_ entry: JournalEntry, afterOpening: (() -> Void)? = nil) throws {
        let journal = Self.journalPath(path)
        let bytes = Array(entry.line.utf8)
        for _ in 0..<8 {
            let fd = Self.openRegular(journal, O_RDWR | O_APPEND | O_CREAT)
            guard fd >= 0 else { throw TrackingStoreError(operation: "append to \(journal)", underlying: String(cString: strerror(errno))) }
            defer { Glibc.close(fd) }
            afterOpening?()
            guard flock(fd, LOCK_SH) == 0 else { throw TrackingStoreError(operation: "lock \(journal)", underlying: String(cString: strerror(errno))) }
            // A fold renamed the file after it was opened: start again on the journal that is there now.
            var opened = stat(), named = stat()
            guard fstat(fd, &opened) == 0 else { continue }
            guard stat(journal, &named) == 0, named.st_ino == opened.st_ino, named.st_dev == opened.st_dev else { continue }
            // A line cut short by a process killed in its write: this entry starts on a line of its own.
            var last: UInt8 = 0x0A
            let line = opened.st_size > 0 && pread(fd, &last, 1, opened.st_size - 1) == 1 && last != 0x0A ? [0x0A] + bytes : bytes
            let written = line.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            guard written == line.count else {
                let reason = written < 0 ? String(cString: strerror(errno)) : "short write (\(written) of \(line.count) bytes)"
                // A partial line stays: it is skipped and counted at the fold, and the next entry
                // starts on a line of its own (above). Cutting it off could cut another process's entry.
                throw TrackingStoreError(operation: "append to \(journal)", underlying: reason)
            }
            return
        }
        throw TrackingStoreError(operation: "append to \(journal)", underlying: "the journal kept being folded")
    }

    /// What the journal (and a fold in progress or left behind) holds, read without changing it.
    package static func readJournal(_ path: String) -> JournalContents {
        var contents = JournalContents()
        for file in [foldingPath(path), journalPath(path)] {
            guard let bytes = try? readWhole(file) else { continue }
            let part = JournalContents(bytes: bytes)
            contents.entries += part.entries
            contents.unreadableLines += part.unreadableLines
        }
        return contents
    }

    /// Which of `runs` the journal (or a fold in progress) holds the end of. Read as bytes, without
    /// parsing: an entry that ends a run is a line ending in `,"ending":"<run id>"}` (a quote
    /// inside an event's JSON text is escaped, so no event can end a line that way).
    package static func journalEnds(_ path: String, runs: Set<String>) -> Set<String> {
        let needles = runs.map { (runID: $0, bytes: Array(",\"ending\":\(JSONText.quote($0))}".utf8)) }
        var found = Set<String>()
        func search(_ bytes: [UInt8]) {
            // From the end: the run asked about is nearly always the last to have ended.
            for index in bytes.indices.reversed() where bytes[index] == 0x0A && found.count < needles.count {
                for needle in needles where index >= needle.bytes.count
                    && bytes[(index - needle.bytes.count)..<index].elementsEqual(needle.bytes) {
                    found.insert(needle.runID)
                }
            }
        }
        // The journal's last few entries first; the whole of both files only when they do not tell.
        if let tail = try? readTail(journalPath(path), bytes: 8 * 1024) { search(tail) }
        if found.count < needles.count {
            for file in [foldingPath(path), journalPath(path)] {
                if let bytes = try? readWhole(file) { search(bytes) }
            }
        }
        return found
    }

    /// The last `count` bytes of a file (all of it when shorter).
    private static func readTail(_ file: String, bytes count: Int) throws -> [UInt8] {
        let fd = openRegular(file, O_RDONLY)
        guard fd >= 0 else { throw TrackingStoreError(operation: "read \(file)", underlying: String(cString: strerror(errno))) }
        defer { Glibc.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw TrackingStoreError(operation: "read \(file)", underlying: String(cString: strerror(errno))) }
        let start = max(0, Int(info.st_size) - count)
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size) - start)
        let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(start)) }
        guard got >= 0 else { throw TrackingStoreError(operation: "read \(file)", underlying: String(cString: strerror(errno))) }
        return Array(bytes.prefix(got))
    }

    /// A journal larger than this was not written by quiet runs (they keep it near
    /// ``journalFoldBytes``): it is moved aside, not read into memory.
    static let journalReadLimit = 16 << 20

    /// Opens `file` (never through a symbolic link, never blocking on a FIFO) only if it is a
    /// regular file; -1 with `errno` set otherwise (EINVAL: not a regular file).
    static func openRegular(_ file: String, _ flags: Int32) -> Int32 {
        let fd = open(file, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else { return -1 }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(fd)
            errno = EINVAL
            return -1
        }
        return fd
    }

    /// Moves something at a journal's path that quiet runs did not write (not a regular file, or
    /// far too large) aside, to `<file>.refused-<ms>-<random>`, where it is kept, not read.
    private static func refuse(_ file: String) {
        rename(file, "\(file).refused-\(Clock.wallMilliseconds())-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))")
    }

    /// Whether `file` exists and is not a regular file of a size quiet runs write.
    private static func foreign(_ file: String) -> Bool {
        var info = stat()
        guard lstat(file, &info) == 0 else { return false }
        return info.st_mode & S_IFMT != S_IFREG || Int(info.st_size) > journalReadLimit
    }

    /// Folds the journal into the freshly opened `database` (see the file's comment). A journal
    /// that cannot be folded now stays for the next open; opening the store never fails for it.
    /// When this returns, every entry appended before it was called is in the store (folded here
    /// or by another process, which is waited for): a process whose own launch is in the journal
    /// and whose writer then opens the store never commits its end before its launch.
    static func foldJournal(_ path: String, into database: DatabaseQueue, limits: StoreLimits) {
        let journal = journalPath(path), folding = foldingPath(path), lockPath = path + "-pending.lock"
        for file in [folding, journal, lockPath] where foreign(file) { refuse(file) }
        // Nothing appended and nothing being folded: the common open.
        guard access(journal, F_OK) == 0 || access(folding, F_OK) == 0 else { return }
        // One folder at a time, across processes: the journal is only ever renamed to a folding
        // name that no one else holds, and an open waits here for a fold in progress.
        let lock = openRegular(lockPath, O_RDWR | O_CREAT)
        guard lock >= 0 else { return }
        defer { Glibc.close(lock) }
        guard flock(lock, LOCK_EX) == 0 else { return }
        // A fold left by a process that died in it, first (its entries are the older).
        if access(folding, F_OK) == 0 { foldFile(folding, into: database, limits: limits) }
        guard access(folding, F_OK) != 0, rename(journal, folding) == 0 else { return }
        foldFile(folding, into: database, limits: limits)
    }

    /// Folds one taken journal file and deletes it, once it holds the file's exclusive lock
    /// (an append that began before the rename finishes first).
    private static func foldFile(_ file: String, into database: DatabaseQueue, limits: StoreLimits) {
        let fd = openRegular(file, O_RDONLY)
        guard fd >= 0 else {
            if errno == EINVAL || errno == ELOOP { refuse(file) }
            return
        }
        defer { Glibc.close(fd) }
        guard flock(fd, LOCK_EX) == 0 else { return }
        guard let bytes = try? readAll(fd) else { return }
        let contents = JournalContents(bytes: bytes)
        do {
            try database.write { db in
                if let first = contents.entries.first, try !TrackingStore.takeClaim(db, "journal:\(first.id)") { return }
                for entry in contents.entries {
                    if let marker = entry.registered { try TrackingStore.insertRun(db, marker) }
                    if let runID = entry.endingRun { try TrackingStore.deleteRun(db, runID) }
                    _ = try TrackingStore.insert(db, entry.events, limits: limits)
                }
                try TrackingStore.addCounter(db, "dropped_journal_unreadable", contents.unreadableLines)
            }
        } catch {
            return   // stays for the next open
        }
        unlink(file)
    }

    private static func readWhole(_ file: String) throws -> [UInt8] {
        let fd = openRegular(file, O_RDONLY)
        guard fd >= 0 else { throw TrackingStoreError(operation: "read \(file)", underlying: String(cString: strerror(errno))) }
        defer { Glibc.close(fd) }
        return try readAll(fd)
    }

    /// The whole file at `fd`, refused past ``journalReadLimit``.
    private static func readAll(_ fd: Int32) throws -> [UInt8] {
        guard let bytes = SmallFile.read(descriptor: fd, limit: journalReadLimit + 1) else {
            throw TrackingStoreError(operation: "read the journal", underlying: String(cString: strerror(errno)))
        }
        guard bytes.count <= journalReadLimit else {
            throw TrackingStoreError(operation: "read the journal", underlying: "larger than \(journalReadLimit) bytes")
        }
        return bytes
    }
}
