// CrashLoop.swift — crashes in a row, each soon after its process started: a crash loop, as
// under systemd's `Restart=always` or Kubernetes' CrashLoopBackOff. The next launch's inbox judges
// each record the first time it reads it, against the directory's crash-loop state (the length of
// the current run of such crashes and when the last one happened), and keeps the verdict in the
// same file while the record is there, so a record delivered later (Sentry down) still says what it
// was part of. One small file, `loop-state`, under an exclusive flock for the pass.
package import CrashRecordFormat
#if canImport(Glibc)
import Glibc
#endif

/// The crash-loop state of one record directory, held (flock) while a pass judges its records.
package struct CrashLoop {
    /// A crash this soon after its process started (CrashCapture's start) is a crash at start.
    package static let startWindowSeconds = 30.0
    /// A crash at start continues a loop when its process started this soon after the last crash
    /// (Kubernetes' back-off grows to five minutes).
    package static let restartGapMilliseconds: Int64 = 10 * 60 * 1000

    /// Crashes at start in a row, the last one included; 0 when the last crash was not at start.
    package private(set) var length = 0
    /// When the last judged crash happened, ms since the epoch (0: none yet).
    package private(set) var lastCrashMilliseconds: Int64 = 0
    /// The last crash judged before this pass: crashes folded into a record that are later than
    /// it were never judged.
    private var judgedUntil: Int64 = 0
    /// Verdicts of records judged and still in the directory: record name → length.
    private var verdicts: [String: Int] = [:]
    private var fd: Int32

    private init(fd: Int32) { self.fd = fd }

    /// The state of `directory`, locked (created if missing); nil when the file cannot be opened
    /// (nothing is judged then). Read as untrusted: lines that do not parse are ignored.
    package static func open(directory: String) -> CrashLoop? {
        let path = directory + "/" + RecordFileName.crashLoopState
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= 64 << 10, flock(fd, LOCK_EX) == 0 else {
            Glibc.close(fd)
            return nil
        }
        var loop = CrashLoop(fd: fd)
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        let got = bytes.isEmpty ? 0 : bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, 0) }
        let lines = String(decoding: bytes.prefix(max(0, got)), as: UTF8.self).split(separator: "\n")
        for (index, line) in lines.enumerated() {
            let fields = line.split(separator: " ")
            guard fields.count == 2 else { continue }
            if index == 0, let length = Int(fields[0]), length >= 0, let last = Int64(fields[1]) {
                loop.length = length
                loop.lastCrashMilliseconds = last
                loop.judgedUntil = last
            } else if index > 0, RecordFileName(String(fields[0])) != nil, let length = Int(fields[1]), length >= 0 {
                loop.verdicts[String(fields[0])] = length
            }
        }
        return loop
    }

    /// Where record `name` stands in a crash loop: its verdict when it was judged before, else
    /// it is judged now (records come oldest first). nil for a crash older than the last one
    /// judged (seen out of order: left unjudged) or one without its process section.
    package mutating func verdict(for name: String, _ record: CrashRecord, tally: RecordTally) -> Int? {
        if let known = verdicts[name] { return known }
        guard let length = judge(record, tally: tally) else { return nil }
        verdicts[name] = length
        return length
    }

    /// Judges a crash not judged before: its place in the current run of crashes at start (0
    /// when it was not at start). Crashes folded into its record that were never judged (all
    /// later than the last one judged before this pass: a directory filled while no reporter
    /// ran) count in the run.
    package mutating func judge(_ record: CrashRecord, tally: RecordTally = RecordTally()) -> Int? {
        guard let process = record.process else { return nil }
        let crash = process.crashWallNanoseconds / 1_000_000, start = process.startWallNanoseconds / 1_000_000
        guard crash > lastCrashMilliseconds else { return nil }
        let uptime = process.uptimeSeconds
        if uptime >= 0 && uptime <= Self.startWindowSeconds {
            let continues = lastCrashMilliseconds > 0 && length > 0 && start >= lastCrashMilliseconds - 2000
                && start - lastCrashMilliseconds <= Self.restartGapMilliseconds
            let unjudged = (tally.firstFoldedMilliseconds ?? 0) > judgedUntil ? tally.folded : 0
            length = (continues ? length : 0) + 1 + unjudged
        } else {
            length = 0
        }
        lastCrashMilliseconds = crash
        return length
    }

    /// Writes the state, with the verdicts of the records still `present`, and lets go of it.
    package mutating func close(keeping present: (String) -> Bool) {
        guard fd >= 0 else { return }
        var text = "\(length) \(lastCrashMilliseconds)\n"
        for (name, length) in verdicts.sorted(by: { $0.key < $1.key }) where present(name) { text += "\(name) \(length)\n" }
        let bytes = Array(text.utf8)
        if ftruncate(fd, 0) == 0 { _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, 0) } }
        Glibc.close(fd)
        fd = -1
    }
}
