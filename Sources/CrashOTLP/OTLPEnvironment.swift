// OTLPEnvironment.swift — the OTLP exporter's standard environment variables, read as
// OpenTelemetry's SDKs read them for logs over OTLP/HTTP: the signal's own variable
// (`OTEL_EXPORTER_OTLP_LOGS_*`) before the generic one (`OTEL_EXPORTER_OTLP_*`).

/// What the environment says of exporting logs over OTLP/HTTP.
package struct OTLPEnvironment: Sendable, Equatable {
    /// The logs endpoint: `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` as it is, else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/logs` appended; nil when neither is set, or
    /// `OTEL_LOGS_EXPORTER` is `none`.
    package var logsEndpoint: String?
    /// `OTEL_EXPORTER_OTLP_HEADERS`, then `OTEL_EXPORTER_OTLP_LOGS_HEADERS` (a key in both: the
    /// logs one), values percent-decoded.
    package var headers: [String: String] = [:]
    /// `…_TIMEOUT` in milliseconds (OpenTelemetry's default: 10 s).
    package var timeoutMilliseconds = 10_000
    /// `…_COMPRESSION` is `gzip`.
    package var gzip = false
    /// `OTEL_SERVICE_NAME`.
    package var serviceName: String?
    /// `OTEL_RESOURCE_ATTRIBUTES`, in order, values percent-decoded.
    package var resourceAttributes: [String: String] = [:]

    package init() {}

    /// The settings `variable` (a lookup of the environment; unset and empty read alike) gives.
    package init(_ variable: (String) -> String?) {
        func value(_ name: String) -> String? { variable(name).flatMap { $0.isEmpty ? nil : $0 } }
        func logs(_ suffix: String) -> String? { value("OTEL_EXPORTER_OTLP_LOGS_" + suffix) ?? value("OTEL_EXPORTER_OTLP_" + suffix) }
        if value("OTEL_LOGS_EXPORTER")?.lowercased() != "none" {
            if let endpoint = value("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT") {
                logsEndpoint = Self.trimmed(endpoint)
            } else if let base = value("OTEL_EXPORTER_OTLP_ENDPOINT") {
                logsEndpoint = Self.logsEndpoint(base: base)
            }
        }
        for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS"] {
            for (key, text) in Self.pairs(value(name) ?? "") { headers[key] = text }
        }
        if let text = logs("TIMEOUT"), let milliseconds = Int(Self.trimmed(text)), milliseconds > 0 { timeoutMilliseconds = milliseconds }
        gzip = logs("COMPRESSION").map { Self.trimmed($0).lowercased() == "gzip" } ?? false
        serviceName = value("OTEL_SERVICE_NAME").map(Self.trimmed)
        for (key, text) in Self.pairs(value("OTEL_RESOURCE_ATTRIBUTES") ?? "") { resourceAttributes[key] = text }
    }

    /// `base` with `v1/logs` appended as a path (one slash between them).
    package static func logsEndpoint(base: String) -> String {
        let base = trimmed(base)
        return base + (base.hasSuffix("/") ? "" : "/") + "v1/logs"
    }

    /// `key1=value1,key2=value2` (the W3C Baggage form OpenTelemetry's header and resource
    /// variables use): keys and values trimmed, values percent-decoded; a member without `=`
    /// or with an empty key is skipped, as the SDKs skip it.
    package static func pairs(_ text: String) -> [(key: String, value: String)] {
        text.split(separator: ",").compactMap { (member: Substring) -> (key: String, value: String)? in
            let parts = member.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { return nil }
            let key = trimmed(String(parts[0]))
            guard !key.isEmpty else { return nil }
            return (key, percentDecoded(trimmed(String(parts[1]))))
        }
    }

    /// `%XX` escapes decoded; a `%` not followed by two hex digits stays as it is.
    static func percentDecoded(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        var index = 0
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x41...0x46: return c - 0x41 + 10
            case 0x61...0x66: return c - 0x61 + 10
            default: return nil
            }
        }
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func trimmed(_ text: String) -> String {
        let isSpace = { (c: Character) in c == " " || c == "\t" || c == "\n" || c == "\r" }
        return String(text.drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
