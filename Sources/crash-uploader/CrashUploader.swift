// CrashUploader.swift — crash-uploader: started by a crashing process's handler (CShims/cc_uploader.c)
// to send its record to Sentry and/or an OpenTelemetry collector while it dies (CrashReporter's
// CrashTimeUpload does the work).
import ArgumentParser
import CrashOTLP
import CrashRecordFormat
import CrashReporter
import CrashReporterSentry
import CrashReporterOTLP
#if canImport(Glibc)
import Glibc
#endif

@main
struct CrashUploader: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crash-uploader",
        abstract: "Sends one crash record to Sentry and/or an OpenTelemetry collector, through the record directory's inbox (what a crashing process starts when crash-time upload is on).",
        discussion: """
            The DSN comes from the environment (\(CrashTimeUpload.dsnVariable)), never the command line; the OTLP \
            logs endpoint, headers, compression, timeout, service name and resource attributes from the standard \
            OTEL_* variables. Each sink's acknowledgment is left beside the record for the other sinks, or the record \
            is deleted when every sink has it. Exits 0 when each has the record (or another process is sending it), \
            1 when it is left for the next launch.
            """)

    @Option(help: "The record directory.")
    var directory: String

    @Option(help: "The record's file name (crash-<ms>-<pid>-<tid>.ccrec).")
    var record: String

    @Option(help: "The app's sink ids, comma-separated (sentry, events, its own): the others keep the record.")
    var sinks: String = "sentry"

    @Option(name: .customLong("max-records"), help: "The record directory's bound in records (the app's; the inbox pass keeps it).")
    var maxRecords: Int = RecordDirectoryLimits.standard.maxRecords

    @Option(name: .customLong("max-record-bytes"), help: "The record directory's bound in bytes.")
    var maxRecordBytes: Int = RecordDirectoryLimits.standard.maxBytes

    @Option(help: "Seconds allowed in all.")
    var timeout: Int = CrashTimeUpload.timeoutSeconds

    @Option(name: .customLong("sentry-data"),
            help: "What the event and the attached record keep: raw-memory, breadcrumbs, identity, full-paths, host-details, request-query, request-attributes (comma-separated), or none.")
    var sentryData: String = CrashDataPolicy().argument

    @Option(name: .customLong("otlp-data"), help: "What the OTLP log record keeps (as --sentry-data).")
    var otlpData: String = CrashDataPolicy().argument

    @Option(help: "Release health: the crashed run's session with its crash (on or off).")
    var sessions: String = "on"

    func validate() throws {
        guard sessions == "on" || sessions == "off" else { throw ValidationError("--sessions must be on or off") }
        guard RecordFileName(record) != nil, !record.contains("/") else { throw ValidationError("--record must be a record's file name") }
        guard (1...3600).contains(timeout) else { throw ValidationError("--timeout must be 1...3600 seconds") }
        guard CrashDataPolicy(argument: otlpData) != nil else { throw ValidationError("--otlp-data: as --sentry-data") }
        guard CrashDataPolicy(argument: sentryData) != nil else { throw ValidationError("--sentry-data: not a list of raw-memory, breadcrumbs, identity, full-paths, host-details, request-query, request-attributes, none") }
        for id in sinks.split(separator: ",") where RecordSinkID(String(id)) == nil {
            throw ValidationError("--sinks: \(id) is not a sink id")
        }
    }

    func run() throws {
        let text = getenv(CrashTimeUpload.dsnVariable).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        let dsn = text.flatMap(SentryDSN.init)
        if text != nil, dsn == nil { throw ValidationError("\(CrashTimeUpload.dsnVariable) must hold a Sentry DSN") }
        let otlp = CrashTimeUpload.otlpSettings(environment: OTLPEnvironment { getenv($0).map { String(cString: $0) } },
                                                data: CrashDataPolicy(argument: otlpData) ?? CrashDataPolicy())
        guard dsn != nil || otlp != nil else {
            throw ValidationError("nothing to send to: neither \(CrashTimeUpload.dsnVariable) nor an OTLP logs endpoint is set")
        }
        let outcome = CrashTimeUpload.send(record: record, directory: directory,
                                           sinks: sinks.split(separator: ",").compactMap { RecordSinkID(String($0)) },
                                           dsn: dsn, otlp: otlp, limits: RecordDirectoryLimits(maxRecords: maxRecords, maxBytes: maxRecordBytes),
                                           timeout: .seconds(timeout), data: CrashDataPolicy(argument: sentryData) ?? CrashDataPolicy(),
                                           sessions: sessions == "on")
        guard outcome.settled else {
            let why = outcome.sentry.lastError ?? outcome.sentry.quarantined.values.first ?? outcome.otlp?.lastError
                ?? "not sent in \(timeout) s"
            let line = "crash-uploader: \(record) not sent to every sink (\(why)); the next launch sends it\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
            throw ExitCode(1)
        }
    }
}
