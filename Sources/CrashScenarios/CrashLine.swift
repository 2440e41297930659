// CrashLine.swift — the one line the handler writes on stderr at every crash (CShims/crash/cc_summary.c), read back for the scenarios and the tests.
import Foundation

/// `crashcapture: {"signal":"SIGSEGV",…}`: the crash, its record and its request, one JSON object.
package struct CrashLine: Sendable, Equatable, Decodable {
    /// What starts the line.
    package static let prefix = "crashcapture: {"

    package var signal: String
    package var code: String
    package var pid: Int32
    package var tid: Int32
    package var thread: String
    package var record: String
    package var requestID: String?
    package var traceID: String?
    package var spanID: String?

    enum CodingKeys: String, CodingKey {
        case signal, code, pid, tid, thread, record
        case requestID = "request_id", traceID = "trace_id", spanID = "span_id"
    }

    /// Every crash line in `stderr`, in order; a line that starts like one but does not parse
    /// throws (the handler must always write valid JSON).
    package static func all(in stderr: String) throws -> [CrashLine] {
        try stderr.split(separator: "\n").filter { $0.hasPrefix(prefix) }.map { line in
            try JSONDecoder().decode(CrashLine.self, from: Data(line.dropFirst(prefix.count - 1).utf8))
        }
    }

    /// `text` without the crash lines: what the program itself printed.
    package static func removed(from text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix(prefix) }.joined(separator: "\n")
    }
}
