// Output.swift — the JSON shapes of list, store and symbols add (show's and groups' are
// CrashInspection's), written by the one encoder, `Rendering.encode`.
import CrashInspection
import CrashRecordFormat

/// A row of `list --json`: a record, or a file that could not be read.
enum ListRow: Encodable {
    case record(Record)
    case unreadable(id: String, error: String)

    struct Record: Encodable {
        var id: String
        var file: String
        /// `crash`, `hang` or `snapshot`.
        var kind: String
        var complete: Bool
        var time: Nullable<String>
        var app: Nullable<String>
        var version: Nullable<String>
        var signalName: Nullable<String>
        /// The crash in one line (`CrashSummary`'s headline).
        var summary: String
        /// The first line of the process's last words.
        var message: Nullable<String>
        var topFrame: Nullable<String>
        /// Crashes the record stands for: 1, or more when records of the same crash were folded
        /// into it to keep the directory under its bounds.
        var crashes: Int
        /// The request the crashed thread was serving: its id, else its label; null when none
        /// is named.
        var request: Nullable<String>
    }

    private struct Unreadable: Encodable {
        var id: String
        var error: String
    }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .record(let record): try record.encode(to: encoder)
        case .unreadable(let id, let error): try Unreadable(id: id, error: error).encode(to: encoder)
        }
    }
}

/// A row of `symbols add --json`: what became of one binary (`error` alone when it was refused).
struct SymbolsAddRow: Encodable {
    var binary: String
    var buildID: String?
    var path: String?
    /// "added" or "alreadyPresent".
    var result: String?
    var error: String?
}
