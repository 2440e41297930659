// JSONValue.swift — a JSON document read without Foundation: a strict RFC 8259 parser for what the
// package reads back (a server's reply, a file it wrote), and the value it gives.
//
// The input may be anything (a truncated file, a hostile reply), and this runs inside a crash
// reporter: the parser never traps and never recurses. Open arrays and objects live on explicit
// stacks, at most `JSONValue.maximumDepth` deep, so nesting costs heap, not call stack.

/// A parsed JSON value.
///
/// A number keeps its exact text (`1`, `1.0` and `1e0` are different values; read them with
/// ``int`` or ``double``). An object is a dictionary: a key that occurs twice keeps the later
/// value, and the members' order is not kept.
package indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The deepest nesting of arrays and objects `parse` accepts
    /// (`[[1]]` is 2 deep); Foundation's `JSONSerialization` has the same limit.
    package static let maximumDepth = 512

    /// `bytes` (UTF-8) as one JSON value, or nil unless they are exactly one valid JSON text.
    ///
    /// Strict RFC 8259: any value at the top; whitespace (space, tab, LF, CR only) around it; no
    /// comments, trailing commas, byte-order mark, leading zeros, `+1`, `.5` or `1.`; no control
    /// character unescaped in a string, no lone surrogate escaped (`"\ud800"`), no invalid UTF-8;
    /// no nesting deeper than ``maximumDepth``. A number of any magnitude is accepted (its text
    /// is kept).
    package static func parse(_ bytes: some Collection<UInt8>) -> JSONValue? {
        if let parsed = bytes.withContiguousStorageIfAvailable({ JSONParser.parse($0) }) {
            return parsed
        }
        return Array(bytes).withUnsafeBufferPointer { JSONParser.parse($0) }
    }

    /// `text` as one JSON value, or nil unless it is exactly one valid JSON text (as for the
    /// bytes).
    package static func parse(_ text: String) -> JSONValue? {
        var text = text
        return text.withUTF8 { JSONParser.parse($0) }
    }

    // MARK: Reading

    /// The member named `key`, or nil unless this is an object with that key.
    package subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// The string, or nil unless this is a string.
    package var string: String? {
        guard case .string(let string) = self else { return nil }
        return string
    }

    /// The Bool, or nil unless this is `true` or `false`.
    package var bool: Bool? {
        guard case .bool(let bool) = self else { return nil }
        return bool
    }

    /// The number as an Int, or nil unless it is written as an integer (no fraction or exponent:
    /// `3`, not `3.0` or `3e0`) that fits in an Int.
    package var int: Int? {
        guard case .number(let text) = self else { return nil }
        return Int(text)
    }

    /// The number as the nearest Double, or nil unless this is a number within Double's range
    /// (`1e400` gives nil; `1e-400` gives 0).
    package var double: Double? {
        guard case .number(let text) = self, let double = Double(text), double.isFinite else { return nil }
        return double
    }

    /// The members, or nil unless this is an object.
    package var object: [String: JSONValue]? {
        guard case .object(let members) = self else { return nil }
        return members
    }

    /// The elements, or nil unless this is an array.
    package var array: [JSONValue]? {
        guard case .array(let elements) = self else { return nil }
        return elements
    }

    /// Whether this is an object.
    package var isObject: Bool {
        if case .object = self { return true }
        return false
    }
}

// MARK: - The parser

/// One pass over the bytes. Every read checks the bounds; every failure returns nil.
private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// `bytes` as one JSON text.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        var parser = JSONParser(bytes: bytes)
        return parser.parseDocument()
    }

    /// The byte at the read position, or nil at the end.
    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func parseDocument() -> JSONValue? {
        guard let value = parseValue() else { return nil }
        skipWhitespace()
        return index == bytes.count ? value : nil
    }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
            index += 1
        }
    }

    /// One value with all it contains. The arrays and objects still open are kept on stacks,
    /// innermost last, rather than in recursive calls.
    private mutating func parseValue() -> JSONValue? {
        var openIsObject: [Bool] = []  // the kind of each open container
        var openArrays: [[JSONValue]] = []  // the elements so far of each open array
        var openObjects: [[String: JSONValue]] = []  // the members so far of each open object
        var pendingKeys: [String] = []  // the key of the value being read, per open object

        nextValue: while true {
            skipWhitespace()
            guard let first = current else { return nil }
            var value: JSONValue
            switch first {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                // The one being opened counts too: `[]` 513 deep is too deep.
                guard openIsObject.count < JSONValue.maximumDepth else { return nil }
                index += 1
                skipWhitespace()
                let isObject = first == UInt8(ascii: "{")
                let closing = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
                if current == closing {
                    index += 1
                    value = isObject ? .object([:]) : .array([])
                } else if isObject {
                    guard let key = parseKey() else { return nil }
                    openIsObject.append(true)
                    openObjects.append([:])
                    pendingKeys.append(key)
                    continue nextValue
                } else {
                    openIsObject.append(false)
                    openArrays.append([])
                    continue nextValue
                }
            case UInt8(ascii: "\""):
                guard let string = parseString() else { return nil }
                value = .string(string)
            case UInt8(ascii: "t"):
                guard skip("true") else { return nil }
                value = .bool(true)
            case UInt8(ascii: "f"):
                guard skip("false") else { return nil }
                value = .bool(false)
            case UInt8(ascii: "n"):
                guard skip("null") else { return nil }
                value = .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard let number = parseNumber() else { return nil }
                value = .number(number)
            default:
                return nil
            }

            // The value is complete: add it to the innermost open container, and close every
            // container that ends right after it.
            while let isObject = openIsObject.last {
                if isObject {
                    openObjects[openObjects.count - 1][pendingKeys.removeLast()] = value
                } else {
                    openArrays[openArrays.count - 1].append(value)
                }
                skipWhitespace()
                guard let separator = current else { return nil }
                index += 1
                switch separator {
                case UInt8(ascii: ","):
                    if isObject {
                        skipWhitespace()
                        guard let key = parseKey() else { return nil }
                        pendingKeys.append(key)
                    }
                    continue nextValue
                case UInt8(ascii: "}") where isObject:
                    openIsObject.removeLast()
                    value = .object(openObjects.removeLast())
                case UInt8(ascii: "]") where !isObject:
                    openIsObject.removeLast()
                    value = .array(openArrays.removeLast())
                default:
                    return nil
                }
            }
            return value
        }
    }

    /// A member's key and the colon after it.
    private mutating func parseKey() -> String? {
        guard current == UInt8(ascii: "\""), let key = parseString() else { return nil }
        skipWhitespace()
        guard current == UInt8(ascii: ":") else { return nil }
        index += 1
        return key
    }

    /// Skips `literal` if the bytes at the read position are it.
    private mutating func skip(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { return false }
        for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] {
            return false
        }
        index += count
        return true
    }

    private func isDigit(_ byte: UInt8?) -> Bool {
        guard let byte else { return false }
        return byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// A number's text: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func parseNumber() -> String? {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1  // a digit after it is left to fail as what follows the value
        } else {
            guard isDigit(current) else { return nil }
            while isDigit(current) { index += 1 }
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard isDigit(current) else { return nil }
            while isDigit(current) { index += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard isDigit(current) else { return nil }
            while isDigit(current) { index += 1 }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    /// A string, from its opening quote to past its closing one, escapes decoded. Its bytes must
    /// be valid UTF-8: they are validated together with the decoded escapes, which are complete
    /// sequences and so can neither mend nor break the bytes around them.
    private mutating func parseString() -> String? {
        index += 1
        let start = index
        // Most strings have no escape: validated in place.
        while let byte = current, byte != UInt8(ascii: "\\") {
            if byte == UInt8(ascii: "\"") {
                let string = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return string
            }
            guard byte >= 0x20 else { return nil }
            index += 1
        }
        guard current != nil else { return nil }
        var decoded = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while let byte = current {
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: decoded, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escaped = current else { return nil }
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escaped)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"):
                    guard let scalar = parseUnicodeEscape() else { return nil }
                    UTF8.encode(scalar) { decoded.append($0) }
                default: return nil
                }
            case 0x00..<0x20:
                return nil
            default:
                decoded.append(byte)
            }
        }
        return nil
    }

    /// The scalar of a `\uXXXX` escape (read past the `u`), combined with the low surrogate's
    /// escape that must follow a high surrogate; nil for a lone surrogate.
    private mutating func parseUnicodeEscape() -> Unicode.Scalar? {
        guard let unit = parseHex4() else { return nil }
        switch unit {
        case 0xD800...0xDBFF:
            guard skip("\\u"), let low = parseHex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
            return Unicode.Scalar(0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00))
        case 0xDC00...0xDFFF:
            return nil
        default:
            return Unicode.Scalar(unit)
        }
    }

    /// Four hex digits as a UTF-16 code unit.
    private mutating func parseHex4() -> UInt16? {
        guard bytes.count - index >= 4 else { return nil }
        var unit: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            unit = unit << 4 | UInt16(digit)
            index += 1
        }
        return unit
    }
}

extension JSONValue: Encodable {
    /// Written back as it was read: a number as an integer when its text is one (a millisecond
    /// time stays exact), else as a Double; one past a Double's range (which the parser keeps) as
    /// its text in a string, since no encoder writes an infinite number.
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let text):
            if let value = Int64(text) { try container.encode(value) }
            else if let value = UInt64(text) { try container.encode(value) }
            else if let value = Double(text), value.isFinite { try container.encode(value) }
            else { try container.encode(text) }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
