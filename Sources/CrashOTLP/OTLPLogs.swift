// OTLPLogs.swift — the OTLP logs messages a crash is sent as (opentelemetry-proto's
// `collector/logs/v1` ExportLogsServiceRequest and its answer) as types, written and read in
// protobuf's binary format with the field numbers of opentelemetry-proto's .proto files.

/// An attribute's value (`AnyValue`).
package indirect enum OTLPValue: Sendable, Equatable {
    case string(String)
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case array([OTLPValue])
    /// `kvlist_value`: key/values.
    case map([OTLPAttribute])
    case bytes([UInt8])

    /// `AnyValue`'s fields: one of them always written (an empty string is a value).
    func write(to writer: inout ProtobufWriter) {
        switch self {
        case .string(let text): writer.string(1, text)
        case .bool(let flag): writer.bool(2, flag)
        case .int(let number): writer.int64(3, number)
        case .double(let number): writer.double(4, number)
        case .array(let values):
            writer.message(5) { list in for value in values { list.message(1) { value.write(to: &$0) } } }
        case .map(let attributes):
            writer.message(6) { list in for attribute in attributes { list.message(1) { attribute.write(to: &$0) } } }
        case .bytes(let bytes): writer.bytes(7, bytes)
        }
    }
}

/// One attribute (`KeyValue`).
package struct OTLPAttribute: Sendable, Equatable {
    package var key: String
    package var value: OTLPValue

    package init(_ key: String, _ value: OTLPValue) {
        self.key = key
        self.value = value
    }

    func write(to writer: inout ProtobufWriter) {
        writer.string(1, key)
        writer.message(2) { value.write(to: &$0) }
    }
}

/// One log record (`LogRecord`).
package struct OTLPLogRecord: Sendable, Equatable {
    /// When the event happened, ns since the epoch (0: unknown).
    package var timeUnixNano: UInt64
    /// When the exporter saw it, ns since the epoch.
    package var observedTimeUnixNano: UInt64
    /// `SeverityNumber`: 21 is FATAL.
    package var severityNumber: Int = 21
    package var severityText = "FATAL"
    package var body: OTLPValue?
    package var attributes: [OTLPAttribute] = []
    /// W3C trace flags (bit 0: sampled); 0 without a trace.
    package var flags: UInt32 = 0
    /// 16 bytes, or none.
    package var traceID: [UInt8] = []
    /// 8 bytes, or none.
    package var spanID: [UInt8] = []
    /// `event_name` (field 12).
    package var eventName: String = ""

    package init(timeUnixNano: UInt64, observedTimeUnixNano: UInt64) {
        self.timeUnixNano = timeUnixNano
        self.observedTimeUnixNano = observedTimeUnixNano
    }

    /// The value of attribute `key`, if the record has one.
    package subscript(key: String) -> OTLPValue? { attributes.first { $0.key == key }?.value }

    func write(to writer: inout ProtobufWriter) {
        if timeUnixNano != 0 { writer.fixed64(1, timeUnixNano) }
        writer.uint64(2, UInt64(severityNumber))
        writer.string(3, severityText)
        if let body { writer.message(5) { body.write(to: &$0) } }
        for attribute in attributes { writer.message(6) { attribute.write(to: &$0) } }
        if flags != 0 { writer.fixed32(8, flags) }
        if !traceID.isEmpty { writer.bytes(9, traceID) }
        if !spanID.isEmpty { writer.bytes(10, spanID) }
        if observedTimeUnixNano != 0 { writer.fixed64(11, observedTimeUnixNano) }
        if !eventName.isEmpty { writer.string(12, eventName) }
    }
}

/// An `ExportLogsServiceRequest` of one resource and one instrumentation scope.
package struct OTLPLogsRequest: Sendable, Equatable {
    /// The resource's attributes (`service.name`, `host.name`, …).
    package var resource: [OTLPAttribute]
    package var scopeName: String
    package var scopeVersion: String
    package var records: [OTLPLogRecord]

    package init(resource: [OTLPAttribute], scopeName: String, scopeVersion: String, records: [OTLPLogRecord]) {
        self.resource = resource
        self.scopeName = scopeName
        self.scopeVersion = scopeVersion
        self.records = records
    }

    /// The request in protobuf's binary format (`application/x-protobuf`).
    package var protobuf: [UInt8] {
        var writer = ProtobufWriter()
        writer.message(1) { resourceLogs in
            resourceLogs.message(1) { resource in
                for attribute in self.resource { resource.message(1) { attribute.write(to: &$0) } }
            }
            resourceLogs.message(2) { scopeLogs in
                scopeLogs.message(1) { scope in
                    scope.string(1, scopeName)
                    if !scopeVersion.isEmpty { scope.string(2, scopeVersion) }
                }
                for record in records { scopeLogs.message(2) { record.write(to: &$0) } }
            }
        }
        return writer.bytes
    }
}

/// What a collector answered (`ExportLogsServiceResponse`): how many records it rejected and why.
package struct OTLPLogsResponse: Sendable, Equatable {
    /// `partial_success.rejected_log_records`: records the collector will never store.
    package var rejectedLogRecords: Int64 = 0
    /// `partial_success.error_message`: why, or a warning even with nothing rejected.
    package var errorMessage = ""

    package init(rejectedLogRecords: Int64 = 0, errorMessage: String = "") {
        self.rejectedLogRecords = rejectedLogRecords
        self.errorMessage = errorMessage
    }

    /// The answer in a protobuf body (empty: a full success); nil when it is not one.
    package init?(protobuf body: [UInt8]) {
        guard let fields = ProtobufReader.fields(body) else { return nil }
        for case (1, .bytes(let partial)) in fields {
            guard let inner = ProtobufReader.fields(partial) else { return nil }
            for (field, value) in inner {
                switch (field, value) {
                case (1, .number(let count)): rejectedLogRecords = Int64(bitPattern: count)
                case (2, .bytes(let text)): errorMessage = String(decoding: text, as: UTF8.self)
                default: break
                }
            }
        }
    }
}
