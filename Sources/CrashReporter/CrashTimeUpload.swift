// CrashTimeUpload.swift — a record sent to Sentry at crash time, by a process of its own: what
// CrashReporting hands capture (the uploader's path, arguments, the DSN in its environment), and
// the one inbox pass that process runs (crash-uploader).
//
// The crashed process cannot send anything (no malloc, no Swift after the signal), so its handler
// starts crash-uploader once the record is whole (CShims/upload/cc_uploader.c) and dies as it would have.
// The uploader goes through the same inbox and Sentry sink as the next launch, for that record
// alone: the sink's lease while it sends, its acknowledgment once Sentry has it. With Sentry the
// only sink the record is then deleted; with other sinks (the events store, the app's own) it
// stays with `<record>.sentry.ack` beside it, and the next launch gives it to those sinks only.
// A record the uploader could not send stays for the next launch, as without it.
//
// With an OTLP logs endpoint configured, the uploader sends the record to the collector too (or
// alone, without a DSN), through the OTLP sink: its settings travel as the OTEL_* variables of
// its environment (the configuration's values, taking precedence over what the app inherited),
// read back by the one reader the app uses (CrashOTLP's OTLPEnvironment).
package import CrashCapture
import CrashSentry
package import CrashReporterSentry
package import CrashReporterOTLP
package import RecordDelivery
import HostFacts
#if canImport(Glibc)
import Glibc
#endif

package enum CrashTimeUpload {
    /// The uploader this package builds (the `crash-uploader` product).
    package static let executableName = "crash-uploader"
    /// Carries the DSN to the uploader: its environment, never its command line (any user may
    /// read `/proc/<pid>/cmdline`; `/proc/<pid>/environ` only the process's owner).
    package static let dsnVariable = "CRASHCAPTURE_UPLOAD_DSN"
    /// Seconds the uploader may take in all.
    package static let timeoutSeconds = 30

    /// The uploader's path: `configured` itself when it holds a `/`, else that name in the main
    /// executable's directory (`/proc/self/exe`).
    package static func path(for configured: String) -> String {
        guard !configured.contains("/") else { return configured }
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = buffer.withUnsafeMutableBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { readlink("/proc/self/exe", $0.baseAddress!, $0.count - 1) }
        }
        guard length > 0 else { return configured }
        let executable = String(decoding: buffer[..<length], as: UTF8.self)
        let directory = executable.lastIndex(of: "/").map { String(executable[..<$0]) } ?? "."
        return directory + "/" + configured
    }

    /// What capture starts after a crash: `configured` (see ``path(for:)``) with the record
    /// directory, the app's sink ids and the timeout as arguments (the record's name is appended
    /// at crash time), and the DSN in its environment. The reason instead when the file is not
    /// an executable regular file.
    package static func uploader(configured: String, recordDirectory: String, sinks: [RecordSinkID], dsn: String?,
                                 otlp: OTLPOptions? = nil,
                                 limits: RecordDirectoryLimits, data: CrashDataPolicy = CrashDataPolicy(), sessions: Bool = true)
        -> Result<CrashHandler.Configuration.Uploader, UploaderUnavailable> {
        let path = path(for: configured)
        var info = stat()
        guard stat(path, &info) == 0 else { return .failure(UploaderUnavailable(path: path, reason: String(cString: strerror(errno)))) }
        guard (info.st_mode & S_IFMT) == S_IFREG, access(path, X_OK) == 0 else {
            return .failure(UploaderUnavailable(path: path, reason: "not an executable file"))
        }
        // The Swift runtime's backtracer off: an uploader that crashes must not hold the
        // program's stderr for seconds.
        var environment = ["SWIFT_BACKTRACE=enable=no"]
        if let dsn { environment.append("\(dsnVariable)=\(dsn)") }
        if let otlp { environment += otlpEnvironment(otlp) }
        return .success(CrashHandler.Configuration.Uploader(
            path: path,
            // The directory's bounds as the app set them: the uploader's pass keeps them too.
            arguments: ["--directory", recordDirectory, "--sinks", sinks.map(\.rawValue).joined(separator: ","),
                        "--max-records", String(limits.maxRecords), "--max-record-bytes", String(limits.maxBytes),
                        // What leaves the machine, as the app chose it (one policy for every sink).
                        "--data", data.argument,
                        // Release health as the app chose it: the crashed run's session with its crash.
                        "--sessions", sessions ? "on" : "off",
                        "--timeout", String(timeoutSeconds), "--record"],
            environment: environment))
    }

    /// The OTLP options as the OTEL_* variables OTLPEnvironment reads back: each one set (empty
    /// when the options have nothing), so that what the app inherited does not mix in.
    static func otlpEnvironment(_ options: OTLPOptions) -> [String] {
        func pairs(_ values: [String: String]) -> String {
            values.sorted { $0.key < $1.key }.map { $0.key + "=" + percentEncoded($0.value) }.joined(separator: ",")
        }
        let timeout = options.upload.requestTimeout
        let milliseconds = timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        return ["OTEL_LOGS_EXPORTER=otlp",
                "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=" + options.logsEndpoint,
                "OTEL_EXPORTER_OTLP_HEADERS=",
                "OTEL_EXPORTER_OTLP_LOGS_HEADERS=" + pairs(options.headers),
                "OTEL_EXPORTER_OTLP_LOGS_COMPRESSION=" + (options.gzip ? "gzip" : "none"),
                "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT=" + String(max(1, milliseconds)),
                "OTEL_SERVICE_NAME=" + (options.serviceName ?? ""),
                "OTEL_RESOURCE_ATTRIBUTES=" + pairs(options.resourceAttributes)]
    }

    /// Every byte but ASCII letters, digits and `-._~/:` as `%XX`.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if byte < 0x80, c.isLetter || c.isNumber || "-._~/:".contains(c) {
                out.append(c)
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return out
    }

    /// Why crash-time upload is off although it was asked for.
    package struct UploaderUnavailable: Error, CustomStringConvertible, Equatable {
        package var path: String
        package var reason: String
        package var description: String { "crash-time upload is off: \(path): \(reason) (the next launch still sends every record)" }
    }

    /// What the uploader's pass did with its record.
    package struct Outcome: Sendable, Equatable {
        /// The inbox pass (for that record alone).
        package var inbox: RecordInbox.Report
        /// The Sentry sink's report after it finished (empty without a DSN).
        package var sentry: SentrySink.Report
        /// The OTLP sink's, when there is one.
        package var otlp: OTLPSink.Report? = nil
        /// Everything taken was sent or given up by the deadline.
        package var finished: Bool

        /// Each sink has the record now, or another process is sending it, or it was gone already.
        package var settled: Bool { finished && sentry.quarantined.isEmpty && (otlp?.kept.isEmpty ?? true) }
    }

    /// The uploader's work: record `name` in `directory` to Sentry, through the inbox (the other
    /// `sinks` keep it for the next launch), within `timeout`.
    package static func send(record name: String, directory: String, sinks: [RecordSinkID], dsn: SentryDSN?,
                             otlp: OTLPOptions? = nil,
                             limits: RecordDirectoryLimits, timeout: Duration, policy: UploadPolicy = UploadPolicy(),
                             data: CrashDataPolicy = CrashDataPolicy(), sessions: Bool = true) -> Outcome {
        let deadline = SuspendingClock.now.advanced(by: timeout)
        // The run's release, environment and dist are its marker's (the sink reads them); the
        // host is this one, the crashed process's.
        let facts = SentryRunFacts(release: nil, environment: SentryOptions.defaultEnvironment,
                                   dist: nil, serverName: data.hostDetails ? HostName.current() : nil)
        let sentry = dsn.map { SentrySink(dsn: $0, policy: policy, data: data, facts: facts, recordDirectory: directory, sessions: sessions) }
        let collector = otlp.map { OTLPSink(options: $0, data: data, recordDirectory: directory) }
        let sending: [any CrashRecordSink] = (sentry.map { [$0] } ?? []) + (collector.map { [$0] } ?? [])
        let others: [any CrashRecordSink] = Array(Set(sinks)).filter { id in !sending.contains { $0.id == id } }
            .sorted { $0.rawValue < $1.rawValue }
            .map { UnavailableSink(id: $0, reason: "left for the next launch") }
        let inbox = RecordInbox(directory: directory, sinks: sending + others, limits: limits).pass(only: name)
        // The run crashed, and its marker says so now, whether or not Sentry takes the record:
        // the record may be gone (Sentry was its only sink) before the next launch could see it.
        // (No marker yet — a crash during the launch — or one claimed already: the next launch
        // has the record, or the claim, to go by.)
        if let run = inbox.recordRuns.first(where: { $0.value == name })?.key {
            try? RunLedger(recordDirectory: directory).end(runID: run, .crashed(record: name))
        }
        // Both senders work at once; each is waited for until the one deadline.
        let sentryFinished = sentry?.shutdown(deadline: deadline) ?? true
        let otlpFinished = collector?.shutdown(deadline: deadline) ?? true
        return Outcome(inbox: inbox, sentry: sentry?.currentReport ?? SentrySink.Report(), otlp: collector?.currentReport,
                       finished: sentryFinished && otlpFinished)
    }
}
