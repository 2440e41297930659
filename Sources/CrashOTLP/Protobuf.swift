// Protobuf.swift — the protocol-buffers wire format, as much of it as an OTLP logs request and its
// answer need: varints, fixed64/fixed32, length-delimited fields and nested messages written, and
// a reader that finds fields by number and skips the rest. By hand rather than swift-protobuf's
// generated code: four messages do not justify a code generator and its runtime in every
// program that links the reporter.

/// Appends protobuf fields to a byte buffer. Each call writes its field whatever the value (a
/// proto3 writer leaves a scalar at its default out: callers that want that skip the call).
package struct ProtobufWriter {
    package private(set) var bytes: [UInt8] = []

    package init() {}

    /// Wire types (the low three bits of a field's key).
    enum WireType: UInt64 {
        case varint = 0, fixed64 = 1, lengthDelimited = 2, fixed32 = 5
    }

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func key(_ field: Int, _ type: WireType) {
        varint(UInt64(field) << 3 | type.rawValue)
    }

    /// A `uint64`, `uint32`, enum or `bool` field (varint).
    package mutating func uint64(_ field: Int, _ value: UInt64) {
        key(field, .varint)
        varint(value)
    }

    /// An `int64` field: a negative value takes ten bytes, as protobuf writes it.
    package mutating func int64(_ field: Int, _ value: Int64) {
        uint64(field, UInt64(bitPattern: value))
    }

    package mutating func bool(_ field: Int, _ value: Bool) {
        uint64(field, value ? 1 : 0)
    }

    package mutating func fixed64(_ field: Int, _ value: UInt64) {
        key(field, .fixed64)
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    package mutating func fixed32(_ field: Int, _ value: UInt32) {
        key(field, .fixed32)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    package mutating func double(_ field: Int, _ value: Double) {
        fixed64(field, value.bitPattern)
    }

    package mutating func bytes(_ field: Int, _ value: [UInt8]) {
        key(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes += value
    }

    /// A `string` field: its UTF-8 bytes.
    package mutating func string(_ field: Int, _ value: String) {
        bytes(field, Array(value.utf8))
    }

    /// A nested message written by `body`.
    package mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        var nested = ProtobufWriter()
        body(&nested)
        bytes(field, nested.bytes)
    }
}

/// Reads the fields of one protobuf message. Untrusted input (a collector's answer): every length
/// is checked against what is left, and a malformed message reads as nil, never a crash.
package struct ProtobufReader {
    /// One field: its number and its value (a varint or fixed value as a number, a
    /// length-delimited one as its bytes).
    package enum Value: Equatable {
        case number(UInt64)
        case bytes([UInt8])
    }

    /// Every field of `message` in order; nil when it is not a well-formed message.
    package static func fields(_ message: [UInt8]) -> [(field: Int, value: Value)]? {
        var fields: [(Int, Value)] = []
        var index = 0
        func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < message.count, shift < 64 {
                let byte = message[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }
        func fixed(_ count: Int) -> UInt64? {
            guard message.count - index >= count else { return nil }
            var value: UInt64 = 0
            for offset in 0..<count { value |= UInt64(message[index + offset]) << UInt64(8 * offset) }
            index += count
            return value
        }
        while index < message.count {
            guard let key = varint(), key >> 3 > 0, key >> 3 <= UInt64(Int32.max) else { return nil }
            let field = Int(key >> 3)
            switch key & 7 {
            case 0:
                guard let value = varint() else { return nil }
                fields.append((field, .number(value)))
            case 1:
                guard let value = fixed(8) else { return nil }
                fields.append((field, .number(value)))
            case 2:
                guard let length = varint(), length <= UInt64(message.count - index) else { return nil }
                fields.append((field, .bytes(Array(message[index..<index + Int(length)]))))
                index += Int(length)
            case 5:
                guard let value = fixed(4) else { return nil }
                fields.append((field, .number(value)))
            default:
                return nil // groups (3, 4) are not in any message read here
            }
        }
        return fields
    }
}
