// CrashUploader.swift — crash-uploader: started by a crashing process's handler (CShims/upload/cc_uploader.c)
// to send its record to Sentry and/or an OpenTelemetry collector while it dies (CrashReporter's
// CrashTimeUpload does the work).
//
// Its options are read by hand, not with swift-argument-parser: the parser brings
// FoundationEssentials, and this program links nothing else of Foundation. It starts at a crash,
// so it should start fast, and it ships beside the program in a slim image, so it should be small
// (≈ 1 ms and 2 MiB at every start, ≈ 6 MB of a static binary). Only CrashTimeUpload starts it.
import CrashRecordFormat
import CrashReporter
import CrashReporterSentry
import CrashReporterOTLP
#if canImport(Glibc)
import Glibc
#endif

/// The options, as CrashTimeUpload passes them.
struct UploaderOptions {
    var directory: String?
    var record: String?
    var sinks = "sentry"
    var maxRecords = RecordDirectoryLimits.standard.maxRecords
    var maxRecordBytes = RecordDirectoryLimits.standard.maxBytes
    var timeout = CrashTimeUpload.timeoutSeconds
    var data = CrashDataPolicy().argument
    var sessions = "on"

    static let usage = """
        USAGE: crash-uploader --directory <directory> --record <record> [--sinks <sinks>] [--max-records <n>]
                              [--max-record-bytes <n>] [--timeout <seconds>] [--data <settings>]
                              [--sessions <on|off>]

        Sends one crash record to Sentry and/or an OpenTelemetry collector, through the record
        directory's inbox (what a crashing process starts when crash-time upload is on).

        The DSN comes from the environment (\(CrashTimeUpload.dsnVariable)), never the command line; the
        OTLP logs endpoint, headers, compression, timeout, service name and resource attributes from
        the standard OTEL_* variables. Each sink's acknowledgment is left beside the record for the
        other sinks, or the record is deleted when every sink has it. Exits 0 when each has the record
        (or another process is sending it), 1 when it is left for the next launch, 64 for a usage error.

        OPTIONS:
          --directory <directory>     The record directory.
          --record <record>           The record's file name (crash-<ms>-<pid>-<tid>.ccrec).
          --sinks <sinks>             The app's sink ids, comma-separated (sentry, events, its own): the
                                      others keep the record. (default: sentry)
          --max-records <n>           The record directory's bound in records.
          --max-record-bytes <n>      The record directory's bound in bytes.
          --timeout <seconds>         Seconds allowed in all, 1...3600.
          --data <settings>           What leaves the machine (the Sentry event, its attached record, the
                                      OTLP log record): raw-memory, breadcrumbs, identity, full-paths,
                                      host-details, request-query, request-attributes (comma-separated),
                                      or none.
          --sessions <on|off>         Release health: the crashed run's session with its crash. (default: on)
          -h, --help                  Show this help.

        """

    /// Why the arguments are not usable.
    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    /// The options `arguments` (without the program's name) give, checked; `--name value` and
    /// `--name=value` both. nil for `--help`.
    static func parse(_ arguments: [String]) throws(UsageError) -> UploaderOptions? {
        var options = UploaderOptions()
        var index = 0
        func integer(_ text: String, _ name: String) throws(UsageError) -> Int {
            guard let value = Int(text) else { throw UsageError(description: "--\(name) must be a whole number, not '\(text)'") }
            return value
        }
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "-h" || argument == "--help" { return nil }
            guard argument.hasPrefix("--") else { throw UsageError(description: "unexpected argument '\(argument)'") }
            var name = String(argument.dropFirst(2))
            let value: String
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            } else {
                guard index + 1 < arguments.count else { throw UsageError(description: "missing value for '--\(name)'") }
                index += 1
                value = arguments[index]
            }
            switch name {
            case "directory": options.directory = value
            case "record": options.record = value
            case "sinks": options.sinks = value
            case "max-records": options.maxRecords = try integer(value, name)
            case "max-record-bytes": options.maxRecordBytes = try integer(value, name)
            case "timeout": options.timeout = try integer(value, name)
            case "data": options.data = value
            case "sessions": options.sessions = value
            default: throw UsageError(description: "unknown option '--\(name)'")
            }
            index += 1
        }
        try options.validate()
        return options
    }

    func validate() throws(UsageError) {
        guard directory != nil else { throw UsageError(description: "missing '--directory <directory>'") }
        guard let record else { throw UsageError(description: "missing '--record <record>'") }
        guard sessions == "on" || sessions == "off" else { throw UsageError(description: "--sessions must be on or off") }
        guard RecordFileName(record) != nil, !record.contains("/") else { throw UsageError(description: "--record must be a record's file name") }
        guard (1...3600).contains(timeout) else { throw UsageError(description: "--timeout must be 1...3600 seconds") }
        guard CrashDataPolicy(argument: data) != nil else {
            throw UsageError(description: "--data: not a list of raw-memory, breadcrumbs, identity, full-paths, host-details, request-query, request-attributes, none")
        }
        for id in sinks.split(separator: ",") where RecordSinkID(String(id)) == nil {
            throw UsageError(description: "--sinks: \(id) is not a sink id")
        }
    }
}

/// A line to stderr (C's `stderr` is shared mutable state to Swift 6).
func writeError(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

@main
enum CrashUploader {
    static func main() {
        let options: UploaderOptions
        do {
            guard let parsed = try UploaderOptions.parse(Array(CommandLine.arguments.dropFirst())) else {
                var usage = UploaderOptions.usage
                usage.withUTF8 { _ = write(1, $0.baseAddress, $0.count) }
                exit(0)
            }
            options = parsed
        } catch {
            writeError("Error: \(error)\n\(UploaderOptions.usage)")
            exit(64)
        }
        let text = getenv(CrashTimeUpload.dsnVariable).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        let dsn = text.flatMap(SentryDSN.init)
        if text != nil, dsn == nil {
            writeError("Error: \(CrashTimeUpload.dsnVariable) must hold a Sentry DSN\n")
            exit(64)
        }
        // The options the app's uploader environment holds (CrashTimeUpload.otlpEnvironment), or its own OTEL_* variables.
        let otlp = OTLPOptions.fromEnvironment()
        guard dsn != nil || otlp != nil else {
            writeError("Error: nothing to send to: neither \(CrashTimeUpload.dsnVariable) nor an OTLP logs endpoint is set\n")
            exit(64)
        }
        let record = options.record ?? ""
        let outcome = CrashTimeUpload.send(record: record, directory: options.directory ?? "",
                                           sinks: options.sinks.split(separator: ",").compactMap { RecordSinkID(String($0)) },
                                           dsn: dsn, otlp: otlp,
                                           limits: RecordDirectoryLimits(maxRecords: options.maxRecords, maxBytes: options.maxRecordBytes),
                                           timeout: .seconds(options.timeout),
                                           data: CrashDataPolicy(argument: options.data) ?? CrashDataPolicy(),
                                           sessions: options.sessions == "on")
        guard outcome.settled else {
            let why = outcome.sentry.lastError ?? outcome.sentry.quarantined.values.first ?? outcome.otlp?.lastError
                ?? "not sent in \(options.timeout) s"
            writeError("crash-uploader: \(record) not sent to every sink (\(why)); the next launch sends it\n")
            exit(1)
        }
        exit(0)
    }
}
