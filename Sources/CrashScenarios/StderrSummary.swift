// StderrSummary.swift — the lines the handler writes on stderr when a record cannot be written whole
// (CShims/crash/cc_summary.c), read back for the scenarios and the tests.
/// The handler's stderr summary of a crash whose record is not whole (`CrashCapture: ` lines):
/// the crash, why the record is not whole, where its partial file is, the top frames.
package struct StderrSummary: Sendable, Equatable {
    /// What starts every line of it.
    package static let prefix = "CrashCapture: "

    /// `pid 4242 tid 4242 crashed: SIGSEGV (SEGV_MAPERR) at 0x0`.
    package var crash: String
    /// `record not written whole: writing it failed: ENOSPC: no space left on device (errno 28)`.
    package var reason: String
    /// The partial record's full path; nil when no file could be created.
    package var partialRecord: String?
    /// The directory no file could be created in; nil when there is a partial record.
    package var uncreatedIn: String?
    /// The crashed thread's top frames, innermost first: `image+0xoffset`, or `0x…` outside every
    /// image; a line not numbered as expected is kept in angle brackets.
    package var frames: [String]
    /// How many `CrashCapture: ` lines there were.
    package var lineCount: Int

    /// The summary in `stderr`; nil when it has no `CrashCapture: ` line. A line without the
    /// expected shape leaves its field empty (or nil), for the test to see.
    package init?(stderr: String) {
        let lines = stderr.split(separator: "\n").filter { $0.hasPrefix(Self.prefix) }.map { String($0.dropFirst(Self.prefix.count)) }
        guard !lines.isEmpty else { return nil }
        crash = lines[0]
        reason = lines.count > 1 ? lines[1] : ""
        let place = lines.count > 2 ? lines[2] : ""
        let partial = "partial record: ", uncreated = "no record file could be created in "
        partialRecord = place.hasPrefix(partial) ? String(place.dropFirst(partial.count)) : nil
        uncreatedIn = place.hasPrefix(uncreated) ? String(place.dropFirst(uncreated.count)) : nil
        frames = lines.dropFirst(3).enumerated().map { index, line in
            let number = "#\(index) "
            return line.hasPrefix(number) ? String(line.dropFirst(number.count)) : "<\(line)>"
        }
        lineCount = lines.count
    }

    /// `text` without the summary's lines: what the program itself printed.
    package static func removed(from text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix(prefix) }.joined(separator: "\n")
    }
}
