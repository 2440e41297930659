// RunLedger.swift — how each run of the app ended (exited, crashed, killed, OOM-killed), told at
// a later launch from one small file per run, with no database: what every sink learns runs from.
//
// A run writes `<record directory>/runs/<run id>.run` as its launch ends (``RunLedger/begin(_:)``)
// and appends its end when it exits (``RunLedger/appendEnd(_:_:)``; one that exits first
// writes it once, with its end, ``RunLedger/end(_:_:)``; ``RunLedger/end(runID:_:)`` is the
// crash-time uploader's, for a crash it sent). A later launch (``RunLedger/classify(recordRuns:excluding:)``)
// reads every marker: one with an end is that outcome; one without, whose process is gone, crashed
// when a crash record names its run, else was killed (by the OOM killer when its memory cgroup's
// counter grew since the start, OOMKills.swift). The record directory's other owners (the inbox,
// the directory bound, crash-inspect) list only names they know, so the `runs` subdirectory is
// invisible to them.
//
// Several processes of one app share the directory and may start at the same moment, so each
// dead run is claimed before it is handed out: `<id>.run` renamed to `<id>.claim.<boot>.<pid>.<ticks>`
// (the claimer's ProcessIdentity). rename(2) is atomic: the loser of a race gets ENOENT and skips
// the run. A claim stays until the claimer's sinks have the outcome (``RunLedger/finish(_:)``); a
// claim whose claimer died first is taken over by the next launch, the same way.
//
// Every file in `runs/` is untrusted: opened without following links and without blocking (a FIFO
// is refused), a regular file of at most 4 KiB, a strict line format. What is not a marker this
// code can read is deleted with a line in the classification's errors: left in place it would be
// an error at every launch and could never become an outcome. At most 256 markers are kept; a crash
// loop that made more loses its oldest ones, each with an error line.
//
// No Foundation: ``RunLedger/end(runID:_:)`` runs at exit (atexit), and the ledger lives in the
// module every adopter of the reporter links.
#if canImport(Glibc)
import Glibc
#endif
package import HostFacts
package import RecordDelivery
import Synchronization

/// What a ledger call could not do.
package enum RunLedgerError: Error, Equatable, CustomStringConvertible {
    /// A run id that is not 1–64 of `A-Z`, `a-z`, `0-9`, `_`, `-`.
    case invalidRunID(String)
    /// A marker that is not one this code writes (``RunLedger/end(runID:_:)`` read it).
    case corruptMarker(path: String, reason: String)
    /// A system call failed.
    case system(call: String, path: String, errno: Int32)

    /// An errno as a failure of a `Result`.
    package struct Code: Error, Equatable {
        package let value: Int32
        init(_ value: Int32) { self.value = value }
    }

    package var description: String {
        switch self {
        case .invalidRunID(let id): return "invalid run id \(String(reflecting: id)): 1–64 of A-Z, a-z, 0-9, _, -"
        case .corruptMarker(let path, let reason): return "\(path): \(reason)"
        case .system(let call, let path, let code): return "\(call) \(path): \(String(cString: strerror(code)))"
        }
    }
}

/// The run markers of one record directory (see the file comment).
package final class RunLedger: Sendable {
    /// What ``classify(recordRuns:excluding:)`` found.
    package struct Classification: Sendable, Equatable {
        /// The finished runs this call claimed, oldest start first. Hand them to the sinks, then
        /// ``RunLedger/finish(_:)``.
        package var outcomes: [EndedRun] = []
        /// Runs of other processes still running.
        package var running = 0
        /// What could not be read or was dropped, one line each ("name: why").
        package var errors: [String] = []
        /// For an outcome killed while it held a record (``hold(_:recordPath:runID:)``), by run
        /// id: the kept record's path in the ledger (deleted by ``finish(_:)``) — its last memory
        /// record when the OOM killer killed it and it had one, else its open hang.
        package var held: [String: String] = [:]
    }

    /// `<record directory>/runs`.
    package let directory: String
    /// The process claims are made in the name of (this one; a test gives another). Read when
    /// first needed (on the launch thread), not when the ledger is made in `start`: this
    /// process's identity costs two /proc reads.
    var claimer: ProcessIdentity { otherClaimer ?? .current }
    private let otherClaimer: ProcessIdentity?

    /// The largest marker read (ours are about 300 bytes).
    static let maxMarkerBytes = 4096
    /// Markers and claims kept at most; the oldest beyond are deleted by ``classify(recordRuns:excluding:)``.
    static let maxMarkers = 256
    static let formatLine = "crashcapture-run 1"

    /// The ledger of `recordDirectory`; nothing is touched until the first call.
    package init(recordDirectory: String) {
        self.directory = recordDirectory + "/runs"
        self.otherClaimer = nil
    }

    /// A ledger that claims in the name of `claimer` (a test stands in for another process).
    init(recordDirectory: String, claimer: ProcessIdentity) {
        self.directory = recordDirectory + "/runs"
        self.otherClaimer = claimer
    }

    // MARK: - Writing

    /// Writes the marker of a run that starts: `runs/<run id>.run`, created with the directory
    /// (0700) if need be. A run id names one run: a marker of the same id is replaced.
    /// - Throws: ``RunLedgerError/invalidRunID(_:)``, or ``RunLedgerError/system(call:path:errno:)``
    ///   when the directory or the file cannot be made.
    package func begin(_ start: RunStart) throws {
        guard RunStart.isValidRunID(start.runID) else { throw RunLedgerError.invalidRunID(start.runID) }
        try makeDirectory()
        try write(Self.render(start, end: nil, seen: nil), runID: start.runID)
    }

    /// Rewrites the marker of `runID` with its end (at exit: `.exited`; the crash-time uploader:
    /// `.crashed(record:)` once its pass has taken the record). Atomic: a reader sees the marker before or
    /// after, never half of it. No Foundation, a few system calls: fit for atexit.
    /// - Throws: ``RunLedgerError/invalidRunID(_:)``; ``RunLedgerError/system(call:path:errno:)``
    ///   (ENOENT when there is no such marker: never begun, or already claimed by a later launch);
    ///   ``RunLedgerError/corruptMarker(path:reason:)``.
    package func end(runID: String, _ end: RunEnd) throws {
        guard RunStart.isValidRunID(runID) else { throw RunLedgerError.invalidRunID(runID) }
        let path = directory + "/" + runID + ".run"
        switch Self.readMarker(path, runID: runID) {
        case .success(let marker): try write(Self.render(marker.start, end: end, seen: marker.seen), runID: runID)
        case .failure(.vanished): throw RunLedgerError.system(call: "open", path: path, errno: ENOENT)
        case .failure(let reason): throw RunLedgerError.corruptMarker(path: path, reason: reason.text)
        }
    }

    /// The run's own end, written from the start it began with (no read: it runs at exit): the
    /// marker of `start.runID` replaced by `start` and `end`.
    package func end(_ start: RunStart, _ end: RunEnd) throws {
        guard RunStart.isValidRunID(start.runID) else { throw RunLedgerError.invalidRunID(start.runID) }
        try makeDirectory()   // a run that ends before its launch wrote the marker
        try write(Self.render(start, end: end, seen: nil), runID: start.runID)
    }

    /// This process's own run ends: `end` appended to the marker it began for `start` and has
    /// not ended (the caller keeps that true: CrashReporting's marker state), in one write(2) to
    /// the end of the file. Making a file and renaming it over the marker costs the file system an
    /// inode made and one freed, ≈ 0.1–0.2 ms at the exit of every run on ext4 (measured); an
    /// append costs neither. A reader sees the marker before or after, never half of it: the
    /// lines are a few dozen bytes written by one call into a file of less than a page, and the
    /// kernel moves the file's size past them only once they are all in it. When the append
    /// cannot be made (no marker: a later launch deleted it to keep the ledger's bound), the
    /// marker is written whole, as ``end(_:_:)`` does.
    package func appendEnd(_ start: RunStart, _ end: RunEnd) throws {
        guard RunStart.isValidRunID(start.runID) else { throw RunLedgerError.invalidRunID(start.runID) }
        if append(Self.lines(of: end), runID: start.runID) { return }
        try self.end(start, end)
    }

    /// The OOM-kill reading of a marker this process began without one (and has not ended or
    /// refreshed since: the caller keeps that true), appended as ``appendEnd(_:_:)`` appends;
    /// written whole when that cannot be done.
    package func appendCounter(_ start: RunStart, _ reading: OOMKillReading) throws {
        guard RunStart.isValidRunID(start.runID) else { throw RunLedgerError.invalidRunID(start.runID) }
        if start.oomKills == nil, append(Self.lines(of: reading), runID: start.runID) { return }
        try refresh(runID: start.runID, oomKills: reading)
    }

    /// `lines` (each ended by a newline) at the end of `<run id>.run`, in one write; `false`,
    /// with the file as it was, when the marker is not a regular file of this ledger's size or the
    /// write fails.
    private func append(_ lines: [String], runID: String) -> Bool {
        let text = Array(lines.joinedOnTheLaunchPath(separator: "\n", terminator: "\n").utf8)
        let fd = open(directory + "/" + runID + ".run", O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0,
              Int(info.st_size) + text.count <= Self.maxMarkerBytes else { return false }
        var count: Int
        repeat { count = text.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, $0.count) } } while count < 0 && errno == EINTR
        guard count == text.count else {
            // A short write (the disk full): the marker as it was, and then written whole.
            if count > 0 { _ = ftruncate(fd, info.st_size) }
            return false
        }
        return true
    }

    // MARK: - Records a run holds

    /// What a running run keeps in the ledger for a later launch to tell its death by.
    package enum Held: String, Sendable, CaseIterable {
        /// Its open hang: the hang record no detector has seen end.
        case hang
        /// Its last memory record (the memory watch): what an OOM kill is told by.
        case memory
    }

    /// Keeps the record at `recordPath` as what the running `runID` holds of `kind`: a hard link
    /// `<run id>.<kind>.<this process>` beside the marker (made under a temporary name and renamed
    /// over the last one: one of each kind per run, the latest). The record's own file is deleted
    /// once the sinks have it; the link keeps its bytes until it is released
    /// (``release(_:runID:)``: the hang ended), the run exits, or a later launch tells the run as
    /// killed (``classify(recordRuns:excluding:)``). Best effort: a link that cannot be made leaves
    /// a killed run told as killed.
    package func hold(_ kind: Held, recordPath: String, runID: String) {
        guard RunStart.isValidRunID(runID) else { return }
        let owner = Self.ownerName(claimer)
        let temporary = path(runID + ".tmp." + owner + "." + String(UInt64.random(in: 0...UInt64.max), radix: 16))
        guard link(recordPath, temporary) == 0 else { return }
        if rename(temporary, path(runID + "." + kind.rawValue + "." + owner)) != 0 { unlink(temporary) }
    }

    /// What the running `runID` held of `kind` is let go (its link deleted).
    package func release(_ kind: Held, runID: String) {
        guard RunStart.isValidRunID(runID) else { return }
        unlink(path(runID + "." + kind.rawValue + "." + Self.ownerName(claimer)))
    }

    /// How the run `runID` started, from its marker or a claim of it; nil when the ledger has
    /// neither (never begun, told and deleted, or unreadable).
    package func start(of runID: String) -> RunStart? {
        guard RunStart.isValidRunID(runID) else { return nil }
        if case .success(let marker) = Self.readMarker(directory + "/" + runID + ".run", runID: runID) { return marker.start }
        guard case .success(let entries) = list() else { return nil }
        for entry in entries where entry.runID == runID {
            if case .claim = entry.kind, case .success(let marker) = Self.readMarker(path(entry.name), runID: runID) { return marker.start }
        }
        return nil
    }

    /// Rewrites the running `runID`'s marker with when it was last seen alive (`seen`: what a
    /// killed run's duration is) and, when given, its OOM-kill reading (its memory cgroup's
    /// counter read again: a kill of another process of the cgroup earlier in the run is then
    /// not blamed on this run's death). A marker that has an end, or none, is left as it is.
    package func refresh(runID: String, oomKills: OOMKillReading? = nil, seen: RunLastSeen? = nil) throws {
        guard RunStart.isValidRunID(runID) else { throw RunLedgerError.invalidRunID(runID) }
        let path = directory + "/" + runID + ".run"
        guard case .success(let marker) = Self.readMarker(path, runID: runID), marker.end == nil else { return }
        var start = marker.start
        if let oomKills { start.oomKills = oomKills }
        try write(Self.render(start, end: nil, seen: seen ?? marker.seen), runID: runID)
    }

    /// The marker's text in a file of its own, renamed over `<run id>.run`. Not fsync'ed: a power
    /// cut between the write and the disk loses the marker (the run then tells nothing at the next
    /// launch), which is not worth a disk flush on every launch and exit (milliseconds on a busy disk).
    /// The file is the spare a ``finish(_:)`` kept, when there is one, else a new one.
    private func write(_ text: String, runID: String) throws {
        let bytes = Array(text.utf8)
        var temporary = ""
        var fd: Int32 = -1
        if let spare = spare.withLock({ spare in defer { spare = nil }; return spare }) {
            fd = open(spare, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
            var info = stat()
            if fd >= 0, fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, ftruncate(fd, off_t(bytes.count)) == 0 {
                temporary = spare
            } else {
                if fd >= 0 { close(fd) }
                fd = -1
                unlink(spare)
            }
        }
        if fd < 0 {
            temporary = directory + "/" + runID + ".tmp." + Self.ownerName(claimer) + "." + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw RunLedgerError.system(call: "open", path: temporary, errno: errno) }
        }
        var written = 0
        var failure: Int32 = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + written, $0.count - written, off_t(written)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { failure = count < 0 ? errno : EIO; break }
            written += count
        }
        if close(fd) != 0 && failure == 0 && errno != EINTR { failure = errno }
        guard failure == 0 else {
            unlink(temporary)
            throw RunLedgerError.system(call: "write", path: temporary, errno: failure)
        }
        guard rename(temporary, directory + "/" + runID + ".run") == 0 else {
            let code = errno
            unlink(temporary)
            throw RunLedgerError.system(call: "rename", path: temporary, errno: code)
        }
    }

    /// `runs/`, made 0700 when missing. Refused when it is anything but a directory (a symbolic
    /// link would send the markers elsewhere).
    private func makeDirectory() throws {
        if mkdir(directory, 0o700) == 0 { return }
        let code = errno
        var info = stat()
        guard code == EEXIST, lstat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw RunLedgerError.system(call: "mkdir", path: directory, errno: code == EEXIST ? ENOTDIR : code)
        }
    }

    // MARK: - The next launch

    /// The entries of `runs/` that name ledger files, or the listing's errno.
    private func list() -> Result<[Entry], RunLedgerError.Code> {
        guard let stream = opendir(directory) else { return .failure(RunLedgerError.Code(errno)) }
        defer { closedir(stream) }
        var entries: [Entry] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
            guard name != "." && name != "..", let parsed = Entry(name) else { continue }
            entries.append(parsed)
        }
        return .success(entries)
    }

    /// Claims and returns the finished runs of other processes (see the file comment).
    /// `recordRuns` maps a run id to the name of a crash record of that run (present in the record
    /// directory or delivered this launch): a run that vanished without an end crashed when it is
    /// there. `currentRunID`'s marker (this run's) is never touched.
    ///
    /// - A marker with an end: that end.
    /// - Without an end, its process alive (same boot, pid and start time): counted in `running`.
    /// - Without an end, its process gone: `.crashed(record:)` when `recordRuns` names it, else
    ///   `.killed(oom:)`, `oom` when the same counter file (same path and inode) now counts more
    ///   kills than at the run's start. A run of another boot is `.killed(oom: false)`: the machine
    ///   went down under it (a reboot, a power cut, a kernel panic: one cannot be told from another,
    ///   and the OOM counters of that boot are gone).
    ///
    /// A claim left by a process that died before ``finish(_:)`` is taken over, so an outcome may
    /// be handed out twice (and `.crashed` by the crash-time uploader while a launch takes the
    /// same run as dead): sinks must take an outcome twice without harm (by run id). Never throws:
    /// what cannot be done is a line in `errors`.
    package func classify(recordRuns: [String: String], excluding currentRunID: String) -> Classification {
        var result = Classification()
        let entries: [Entry]
        switch list() {
        case .success(let listed): entries = listed
        case .failure(let code):
            if code.value != ENOENT { result.errors.append("\(directory): cannot list (\(String(cString: strerror(code.value))))") }
            return result
        }

        // Leftovers and hostile names first; then the bound, then the markers and the claims.
        var kept: [Entry] = []
        var held: [String: [Entry]] = [:]
        for entry in entries {
            switch entry.kind {
            case .held:
                if entry.runID != currentRunID { held[entry.runID, default: []].append(entry) }
            case .temporary(let owner):
                // A marker's text its writer died before renaming into place.
                if !owner.isAlive { unlink(path(entry.name)) }
            case .malformed(let why):
                if unlink(path(entry.name)) == 0 { result.errors.append("\(entry.name): \(why); deleted") }
            case .marker, .claim:
                // This run's own marker is neither counted nor dropped.
                if entry.runID != currentRunID { kept.append(entry) }
            }
        }
        if kept.count > Self.maxMarkers {
            // Oldest first by modification time (the names are the app's and say nothing of age).
            let dated = kept.map { ($0, modificationTime(path($0.name))) }.sorted { $0.1 < $1.1 }
            for (entry, _) in dated.prefix(kept.count - Self.maxMarkers) where unlink(path(entry.name)) == 0 {
                result.errors.append("\(entry.name): more than \(Self.maxMarkers) run markers; the oldest deleted")
            }
            kept = dated.suffix(Self.maxMarkers).map(\.0)
        }

        let mine = Self.ownerName(claimer)
        for entry in kept {
            let claimName = entry.runID + ".claim." + mine
            switch entry.kind {
            case .claim(let owner):
                // A live claimer (this process too) has it in hand; a dead one's is taken over.
                guard !owner.isAlive, Self.ownerName(owner) != mine else { continue }
                guard rename(path(entry.name), path(claimName)) == 0 else { continue }   // another launch took it over
                switch Self.readMarker(path(claimName), runID: entry.runID) {
                case .success(let marker): result.outcomes.append(outcome(marker, recordRuns: recordRuns))
                case .failure(let reason):
                    unlink(path(claimName))
                    result.errors.append("\(entry.name): \(reason.text); deleted")
                }
            case .marker:
                let marker: Marker
                switch Self.readMarker(path(entry.name), runID: entry.runID) {
                case .success(let parsed): marker = parsed
                case .failure(.vanished): continue   // claimed by another launch since the listing
                case .failure(let reason):
                    if unlink(path(entry.name)) == 0 { result.errors.append("\(entry.name): \(reason.text); deleted") }
                    continue
                }
                // A run is handed out once its process is gone, whatever its marker says: an
                // exited run's sinks may still be storing its end in their atexit handlers.
                if marker.start.process.isAlive {
                    result.running += 1
                    continue
                }
                guard rename(path(entry.name), path(claimName)) == 0 else { continue }   // another launch claimed it
                // What was claimed is the truth: the marker may have been rewritten since it was read.
                switch Self.readMarker(path(claimName), runID: entry.runID) {
                case .success(let claimed) where claimed.start.process.isAlive:
                    // A run that began again under the same id in between: not ours to hand out.
                    if rename(path(claimName), path(entry.name)) != 0 { unlink(path(claimName)) }
                    result.running += 1
                case .success(let claimed):
                    result.outcomes.append(outcome(claimed, recordRuns: recordRuns))
                case .failure(let reason):
                    unlink(path(claimName))
                    result.errors.append("\(entry.name): \(reason.text); deleted")
                }
            case .temporary, .malformed, .held:
                continue
            }
        }
        // What the runs held: for an outcome killed by the OOM killer its memory record, else
        // for one killed its open hang (the newest link of the kind); the others deleted — an
        // exited or crashed run's, and a dead process's whose run has no marker or claim left.
        let told = Dictionary(result.outcomes.map { ($0.runID, $0) }, uniquingKeysWith: { a, _ in a })
        let named = Set(kept.map(\.runID))
        for (runID, links) in held {
            var chosen: Entry?
            if let outcome = told[runID], case .killed(let oom) = outcome.end {
                let newest = { (kind: Held) in
                    links.filter { if case .held(kind, _) = $0.kind { return true } else { return false } }
                        .max { self.modificationTime(self.path($0.name)) < self.modificationTime(self.path($1.name)) }
                }
                chosen = (oom ? newest(.memory) : nil) ?? newest(.hang)
            }
            if let chosen { result.held[runID] = path(chosen.name) }
            for link in links where link.name != chosen?.name {
                guard case .held(_, let owner) = link.kind else { continue }
                if told[runID] != nil || (!named.contains(runID) && !owner.isAlive) { unlink(path(link.name)) }
            }
        }
        result.outcomes.sort {
            ($0.start.startWallMilliseconds, $0.start.runID) < ($1.start.startWallMilliseconds, $1.start.runID)
        }
        return result
    }

    /// Deletes the claims of `outcomes` (from ``classify(recordRuns:excluding:)``) once every sink
    /// has them. A claim already gone is not an error. One of them is kept as this ledger's spare
    /// (renamed to a temporary name of this process), which the next marker written is written
    /// into: a file deleted and another made cost ext4 an inode freed and one allocated, ≈ 0.3 ms
    /// of a short program's launch on this project's machines (measured), a rename neither. A
    /// spare never used is deleted by the next launch after this process has gone, as a marker
    /// being written by a process that died is.
    package func finish(_ outcomes: [EndedRun]) {
        let mine = Self.ownerName(claimer)
        var keep = spare.withLock { $0 == nil }
        for outcome in outcomes where RunStart.isValidRunID(outcome.start.runID) {
            // What it held, if anything: told (a record of its own now) or not to be.
            if case .success(let entries) = list() {
                for entry in entries where entry.runID == outcome.start.runID {
                    if case .held = entry.kind { unlink(path(entry.name)) }
                }
            }
            let claim = path(outcome.start.runID + ".claim." + mine)
            let kept = path(outcome.start.runID + ".tmp." + mine + "." + String(UInt64.random(in: 0...UInt64.max), radix: 16))
            if keep, rename(claim, kept) == 0 {
                keep = false
                // One spare at a time: one kept meanwhile (another call of this) is deleted.
                if let replaced = spare.withLock({ spare in defer { spare = kept }; return spare }) { unlink(replaced) }
            } else {
                unlink(claim)
            }
        }
    }

    /// A finished claim kept to be written as the next marker (see ``finish(_:)``), by path.
    private let spare = Mutex<String?>(nil)

    /// How a claimed run ended (see ``classify(recordRuns:excluding:)``).
    private func outcome(_ marker: Marker, recordRuns: [String: String]) -> EndedRun {
        if let end = marker.end { return EndedRun(start: marker.start, end: end, lastSeen: marker.seen) }
        if let record = recordRuns[marker.start.runID] {
            return EndedRun(start: marker.start, end: .crashed(record: record), lastSeen: marker.seen)
        }
        let bootID = marker.start.process.bootID
        let sameBoot = !bootID.isEmpty && bootID == ProcessIdentity.current.bootID
        return EndedRun(start: marker.start, end: .killed(oom: OOMKillCounter.killedByOOM(recorded: marker.start.oomKills, sameBoot: sameBoot)),
                        lastSeen: marker.seen)
    }

    private func path(_ name: String) -> String { directory + "/" + name }

    private func modificationTime(_ path: String) -> Int64 {
        var info = stat()
        guard lstat(path, &info) == 0 else { return 0 }
        return Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }

    // MARK: - Names

    /// One entry of `runs/`, by its name.
    struct Entry {
        enum Kind {
            /// `<id>.run`.
            case marker
            /// `<id>.claim.<boot>.<pid>.<ticks>`.
            case claim(owner: ProcessIdentity)
            /// `<id>.tmp.<boot>.<pid>.<ticks>.<random>`: a marker being written.
            case temporary(owner: ProcessIdentity)
            /// `<id>.hang.<boot>.<pid>.<ticks>`, `<id>.memory.…`: a record its run's process holds.
            case held(Held, owner: ProcessIdentity)
            /// A name in the ledger's form that is not one it makes.
            case malformed(String)
        }
        var name: String
        var runID: String
        var kind: Kind

        /// nil for a name the ledger never makes in any form (left alone: not ours).
        init?(_ name: String) {
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count >= 2 else { return nil }
            self.name = name
            self.runID = String(parts[0])
            switch parts[1] {
            case "run" where parts.count == 2: kind = .marker
            case "claim" where parts.count == 5:
                guard let owner = RunLedger.owner(parts[2...4]) else { kind = .malformed("a claim of no process"); break }
                kind = .claim(owner: owner)
            case "tmp" where parts.count == 6:
                guard let owner = RunLedger.owner(parts[2...4]) else { kind = .malformed("a marker being written by no process"); break }
                kind = .temporary(owner: owner)
            case "hang" where parts.count == 5, "memory" where parts.count == 5:
                guard let owner = RunLedger.owner(parts[2...4]) else { kind = .malformed("a held record of no process"); break }
                kind = .held(Held(rawValue: String(parts[1]))!, owner: owner)
            case "run", "claim", "tmp", "hang", "memory": kind = .malformed("not a name the ledger makes")
            default: return nil
            }
            if !RunStart.isValidRunID(runID) { kind = .malformed("an invalid run id") }
        }
    }

    /// `<boot id>.<pid>.<start ticks>`: a claimer or writer, in a file name. With the boot id, a
    /// process of an earlier boot is never taken for a live one of this boot with the same pid and
    /// start time (services started at boot often have both).
    static func ownerName(_ process: ProcessIdentity) -> String {
        "\(process.bootID).\(process.pid).\(process.startTicks)"
    }

    static func owner(_ parts: ArraySlice<Substring>) -> ProcessIdentity? {
        let parts = Array(parts)
        guard parts.count == 3, (1...64).contains(parts[0].utf8.count), parts[0].utf8.allSatisfy(RunStart.isRunIDByte),
              let pid = Int32(parts[1]), pid > 0, let ticks = Int64(parts[2]), ticks >= 0 else { return nil }
        return ProcessIdentity(pid: pid, bootID: String(parts[0]), startTicks: ticks)
    }


    // MARK: - The marker's text

    /// A marker as read: the start and, once written, the end.
    struct Marker: Equatable {
        var start: RunStart
        var end: RunEnd?
        /// When the running run was last seen alive (``refresh(runID:oomKills:seen:)``).
        var seen: RunLastSeen? = nil
    }

    /// A marker read, or why it could not be: `Result<Marker, ReadFailure>` but for the generic
    /// type, whose first use at every launch made the runtime check `ReadFailure: Error` by
    /// searching every loaded image's conformances (≈ 0.1 ms with Foundation loaded, measured).
    enum MarkerRead: Equatable {
        case success(Marker)
        case failure(ReadFailure)

        /// The marker, or the failure thrown.
        func get() throws -> Marker {
            switch self {
            case .success(let marker): return marker
            case .failure(let failure): throw failure
            }
        }
    }

    /// Why a marker could not be read.
    enum ReadFailure: Error, Equatable {
        /// The file is gone (claimed or deleted by another process since the listing).
        case vanished
        case unreadable(String)

        var text: String {
            switch self {
            case .vanished: return "gone"
            case .unreadable(let why): return why
            }
        }
    }

    /// The marker at `path`, which must name run `runID`: a regular file (no link, no FIFO) of at
    /// most ``maxMarkerBytes`` in the format ``render(_:end:seen:)`` writes.
    static func readMarker(_ path: String, runID: String) -> MarkerRead {
        guard let file = SmallFile.read(path, limit: maxMarkerBytes + 1, followLinks: false) else {
            var info = stat()
            guard lstat(path, &info) == 0 else { return .failure(errno == ENOENT ? .vanished : .unreadable("cannot read")) }
            return .failure(.unreadable(info.st_mode & S_IFMT == S_IFREG ? "cannot read" : "not a regular file"))
        }
        guard file.bytes.count <= maxMarkerBytes else { return .failure(.unreadable("larger than \(maxMarkerBytes) bytes")) }
        switch parse(file.bytes) {
        case .success(let marker) where marker.start.runID != runID:
            return .failure(.unreadable("names run \(String(reflecting: marker.start.runID))"))
        case let result: return result
        }
    }

    /// The marker's text: a version line, then `key=value` lines (text values escaped: `%`, control
    /// characters and DEL as `%XX`), each ended by a newline.
    static func render(_ start: RunStart, end: RunEnd?, seen: RunLastSeen? = nil) -> String {
        var lines = [formatLine, "run=\(start.runID)", "pid=\(start.process.pid)", "boot=\(escape(start.process.bootID))",
                     "ticks=\(start.process.startTicks)", "start_wall_ms=\(start.startWallMilliseconds)",
                     "start_mono_ns=\(start.startMonotonicNanoseconds)", "app=\(escape(start.appName))",
                     "version=\(escape(start.appVersion))"]
        if let oom = start.oomKills { lines += Self.lines(of: oom) }
        for (key, value) in [("release", start.release), ("environment", start.environment), ("dist", start.dist)] {
            if let value { lines.append("\(key)=\(escape(value))") }
        }
        if let seen { lines += ["seen_wall_ms=\(seen.wallMilliseconds)", "seen_duration_ns=\(seen.durationNanoseconds)"] }
        if let end { lines += Self.lines(of: end) }
        return lines.joinedOnTheLaunchPath(separator: "\n", terminator: "\n")
    }

    /// An end's lines (``render(_:end:seen:)``; ``appendEnd(_:_:)``).
    static func lines(of end: RunEnd) -> [String] {
        switch end {
        case .exited(let wall, let duration): return ["end=exited", "end_wall_ms=\(wall)", "end_duration_ns=\(duration)"]
        case .crashed(let record): return ["end=crashed"] + (record.map { ["end_record=\(escape($0))"] } ?? [])
        case .killed(let oom): return ["end=killed", "end_oom=\(oom ? 1 : 0)"]
        }
    }

    /// An OOM-kill reading's lines (``render(_:end:seen:)``; ``appendCounter(_:_:)``).
    static func lines(of oom: OOMKillReading) -> [String] {
        ["oom_path=\(escape(oom.path))", "oom_inode=\(oom.inode)", "oom_kills=\(oom.kills)"]
    }

    /// Parses what ``render(_:end:seen:)`` writes, strictly: the version line first, every line ended by
    /// a newline, known keys only and each once, every field of the start present, the end's
    /// fields exactly those of its kind.
    static func parse(_ bytes: [UInt8]) -> MarkerRead {
        func fail(_ why: String) -> MarkerRead { .failure(.unreadable(why)) }
        guard bytes.last == 0x0A else { return fail("not a run marker (no final newline)") }
        let lines = bytes.dropLast().split(separator: 0x0A, omittingEmptySubsequences: false)
        guard let first = lines.first, first.elementsEqual(formatLine.utf8) else { return fail("not a run marker of format 1") }
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let equals = line.firstIndex(of: UInt8(ascii: "=")), let key = String(validating: line[..<equals], as: UTF8.self),
                  let value = unescape(line[(equals + 1)...]) else { return fail("a line that is not key=value") }
            guard fields.updateValue(value, forKey: key) == nil else { return fail("\(key) twice") }
        }
        func take(_ key: String) -> String? { fields.removeValue(forKey: key) }
        func integer(_ key: String) -> Int64? { take(key).flatMap { Int64($0) } }
        guard let runID = take("run"), RunStart.isValidRunID(runID) else { return fail("no valid run id") }
        guard let pid = integer("pid").flatMap({ Int32(exactly: $0) }), pid > 0, let bootID = take("boot"),
              let ticks = integer("ticks"), let wall = integer("start_wall_ms"), let monotonic = integer("start_mono_ns"),
              let app = take("app"), let version = take("version") else { return fail("a field of the start missing or bad") }
        var oomKills: OOMKillReading?
        switch (take("oom_path"), take("oom_inode").flatMap({ UInt64($0) }), integer("oom_kills")) {
        case (nil, nil, nil): break
        case let (path?, inode?, kills?): oomKills = OOMKillReading(path: path, inode: inode, kills: kills)
        default: return fail("the OOM-kill reading incomplete or bad")
        }
        let release = take("release"), environment = take("environment"), dist = take("dist")
        var seen: RunLastSeen?
        switch (integer("seen_wall_ms"), integer("seen_duration_ns")) {
        case (nil, nil): break
        case let (wall?, duration?) where duration >= 0: seen = RunLastSeen(wallMilliseconds: wall, durationNanoseconds: duration)
        default: return fail("the last sighting incomplete or bad")
        }
        var end: RunEnd?
        switch take("end") {
        case nil: break
        case "exited":
            guard let wall = integer("end_wall_ms"), let duration = integer("end_duration_ns") else { return fail("the exit incomplete") }
            end = .exited(wallMilliseconds: wall, durationNanoseconds: duration)
        case "crashed":
            let record = take("end_record")
            if let record, record.isEmpty || record.contains("/") { return fail("a bad record name") }
            end = .crashed(record: record)
        case "killed":
            guard let oom = take("end_oom"), oom == "0" || oom == "1" else { return fail("the kill incomplete") }
            end = .killed(oom: oom == "1")
        default: return fail("an unknown end")
        }
        guard fields.isEmpty else { return fail("unknown fields \(fields.keys.sorted())") }
        let start = RunStart(runID: runID, process: ProcessIdentity(pid: pid, bootID: bootID, startTicks: ticks),
                             startWallMilliseconds: wall, startMonotonicNanoseconds: monotonic,
                             appName: app, appVersion: version, oomKills: oomKills,
                             release: release, environment: environment, dist: dist)
        return .success(Marker(start: start, end: end, seen: seen))
    }

    static func escape(_ text: String) -> String {
        var out: [UInt8] = []
        for byte in text.utf8 {
            if byte == UInt8(ascii: "%") || byte < 0x20 || byte == 0x7F {
                out += [UInt8(ascii: "%"), hexDigit(byte >> 4), hexDigit(byte & 0xF)]
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// ``escape(_:)`` undone; nil for a bad escape, a raw control character or invalid UTF-8.
    static func unescape(_ bytes: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte < 0x20 || byte == 0x7F { return nil }
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) else { return nil }
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(byte)
                index += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? 0x30 + value : 0x41 + value - 10 }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        default: return nil
        }
    }
}
