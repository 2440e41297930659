// JSONEncoding.swift — Codable values as compact JSON bytes with sorted keys, without Foundation:
// what the Sentry envelopes' events and headers are written with, so that no module a Sentry-only
// program links needs FoundationEssentials.
//
// Encoding builds a small tree (`JSONNode`) for the value through a full `Encoder`, then writes it
// once into one reserved byte array; strings are escaped byte by byte as `JSONText.quote` does.

/// Encodes `Encodable` values as compact JSON, with sorted keys and no whitespace.
///
/// A drop-in for Foundation's `JSONEncoder` with `outputFormatting = [.sortedKeys,
/// .withoutEscapingSlashes]` and the default strategies, for the package's own models:
/// - Object keys are sorted by their UTF-8 bytes (Unicode scalar order), which is the order
///   Foundation's `.sortedKeys` gives on Linux too.
/// - Strings are escaped as ``JSONText/quote(_:)`` does: `"`, `\`, `\n`, `\r`, `\t` by their short
///   escapes, other control characters as `\u00XX` (Foundation writes `\b` and `\f` for U+0008 and
///   U+000C), U+2028 and U+2029 as `\u2028` and `\u2029` (Foundation leaves them raw); `/` as is.
/// - Integers of every width are exact; a `Double` or `Float` is its shortest round-trip
///   `description` without a trailing `.0` (`3`, `0.1`, `1e+16`, `-0`), as Foundation writes it.
/// - A value whose `encode(to:)` encodes nothing is `{}`, nested or at the top (where Foundation
///   throws instead).
/// - `Date`, `Data`, `URL` and `Decimal` get no special treatment: they encode through their own
///   `Encodable` conformance, not Foundation's default strategies.
package struct SortedJSONEncoder: Sendable {
    /// An encoder; it has no options.
    package init() {}

    /// `value` as JSON bytes (UTF-8, no trailing newline).
    ///
    /// Throws `EncodingError.invalidValue` for a non-finite `Double` or `Float` (JSON has no NaN
    /// or infinity), with the coding path of the value; rethrows what `value.encode(to:)` throws.
    package func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let root = try JSONTreeEncoder.node(for: value, codingPath: [])
        var out: [UInt8] = []
        out.reserveCapacity(root.estimatedSize)
        root.write(into: &out)
        return out
    }
}

// MARK: - The tree

/// One JSON value being encoded. Objects and arrays are boxes (classes) because a container handed
/// out by the encoder keeps appending to them after the call that made it returns.
enum JSONNode {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)  // finite; checked when encoded
    case float(Float)  // finite; checked when encoded
    case digits(String)  // a 128-bit integer's decimal text
    case string(String)
    case array(JSONArrayBox)
    case object(JSONObjectBox)
    /// The value of a `superEncoder()`: its owner may still encode into it after the container
    /// call returns, so it is read only when written.
    case deferred(JSONTreeEncoder)
}

/// The elements of an array being encoded.
final class JSONArrayBox {
    var elements: [JSONNode] = []
}

/// The members of an object being encoded; a key encoded again replaces the earlier value.
final class JSONObjectBox {
    var members: [String: JSONNode] = [:]
}

// MARK: - The encoder

/// The `Encoder` one value is encoded through; it is also that value's single-value container,
/// which saves allocating one for every string and number.
final class JSONTreeEncoder: Encoder, SingleValueEncodingContainer {
    /// What was encoded so far.
    private enum Storage {
        case nothing
        case value(JSONNode)
        case object(JSONObjectBox)
        case array(JSONArrayBox)
    }

    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    private var storage = Storage.nothing

    init(codingPath: [any CodingKey]) {
        self.codingPath = codingPath
    }

    /// The tree of what was encoded; a value that encoded nothing is an empty object, as in
    /// Foundation's encoder.
    var node: JSONNode {
        switch storage {
        case .nothing: .object(JSONObjectBox())
        case .value(let node): node
        case .object(let box): .object(box)
        case .array(let box): .array(box)
        }
    }

    /// `value` as a tree: a string, number or Bool directly, anything else through an encoder of
    /// its own at `codingPath`.
    static func node<T: Encodable>(for value: T, codingPath: @autoclosure () -> [any CodingKey]) throws -> JSONNode {
        // The common leaves of arrays and dictionaries (whose elements come here generically),
        // without an encoder each. Each is what the type's own encode(to:) would produce.
        // Metatypes compare as pointers, cheaper than a dynamic cast each.
        if T.self == String.self { return .string(value as! String) }
        if T.self == Int.self { return .int(Int64(value as! Int)) }
        if T.self == Bool.self { return .bool(value as! Bool) }
        if T.self == Double.self { return try checked(value as! Double, codingPath()) }
        if T.self == Int64.self { return .int(value as! Int64) }
        if T.self == UInt64.self { return .uint(value as! UInt64) }
        let encoder = JSONTreeEncoder(codingPath: codingPath())
        try value.encode(to: encoder)
        return encoder.node
    }

    /// `double` as a node, or the error Foundation's encoder throws for a non-finite one.
    static func checked(_ double: Double, _ codingPath: [any CodingKey]) throws -> JSONNode {
        guard double.isFinite else { throw nonFinite(double, codingPath) }
        return .double(double)
    }

    static func checked(_ float: Float, _ codingPath: [any CodingKey]) throws -> JSONNode {
        guard float.isFinite else { throw nonFinite(float, codingPath) }
        return .float(float)
    }

    private static func nonFinite(_ value: some BinaryFloatingPoint, _ codingPath: [any CodingKey]) -> EncodingError {
        EncodingError.invalidValue(value, EncodingError.Context(
            codingPath: codingPath, debugDescription: "Unable to encode \(type(of: value)).\(value) directly in JSON."))
    }

    // MARK: Encoder

    /// The object this encoder encodes into; a second call (with any key type) adds to the same
    /// object, so that a type may encode fixed keys and then dynamic ones.
    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let box: JSONObjectBox
        if case .object(let existing) = storage {
            box = existing
        } else {
            box = JSONObjectBox()
            storage = .object(box)
        }
        return KeyedEncodingContainer(JSONKeyedContainer<Key>(box: box, codingPath: codingPath))
    }

    /// The array this encoder encodes into; a second call adds to the same array.
    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let box: JSONArrayBox
        if case .array(let existing) = storage {
            box = existing
        } else {
            box = JSONArrayBox()
            storage = .array(box)
        }
        return JSONUnkeyedContainer(box: box, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    // MARK: SingleValueEncodingContainer (a value encoded again replaces the earlier one)

    func encodeNil() throws { storage = .value(.null) }
    func encode(_ value: Bool) throws { storage = .value(.bool(value)) }
    func encode(_ value: String) throws { storage = .value(.string(value)) }
    func encode(_ value: Double) throws { storage = .value(try Self.checked(value, codingPath)) }
    func encode(_ value: Float) throws { storage = .value(try Self.checked(value, codingPath)) }
    func encode(_ value: Int) throws { storage = .value(.int(Int64(value))) }
    func encode(_ value: Int8) throws { storage = .value(.int(Int64(value))) }
    func encode(_ value: Int16) throws { storage = .value(.int(Int64(value))) }
    func encode(_ value: Int32) throws { storage = .value(.int(Int64(value))) }
    func encode(_ value: Int64) throws { storage = .value(.int(value)) }
    func encode(_ value: Int128) throws { storage = .value(.digits(String(value))) }
    func encode(_ value: UInt) throws { storage = .value(.uint(UInt64(value))) }
    func encode(_ value: UInt8) throws { storage = .value(.uint(UInt64(value))) }
    func encode(_ value: UInt16) throws { storage = .value(.uint(UInt64(value))) }
    func encode(_ value: UInt32) throws { storage = .value(.uint(UInt64(value))) }
    func encode(_ value: UInt64) throws { storage = .value(.uint(value)) }
    func encode(_ value: UInt128) throws { storage = .value(.digits(String(value))) }
    func encode<T: Encodable>(_ value: T) throws {
        storage = .value(try Self.node(for: value, codingPath: codingPath))
    }
}

/// A key for an array element's coding path ("Index 3", as Foundation names it) or for
/// `superEncoder()`'s "super".
private struct JSONCodingKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init(intValue: Int) {
        stringValue = "Index \(intValue)"
        self.intValue = intValue
    }
}

// MARK: - Containers

private struct JSONKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: JSONObjectBox
    let codingPath: [any CodingKey]

    private func set(_ node: JSONNode, _ key: Key) { box.members[key.stringValue] = node }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        set(try JSONTreeEncoder.checked(value, codingPath + [key]), key)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        set(try JSONTreeEncoder.checked(value, codingPath + [key]), key)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
    mutating func encode(_ value: Int128, forKey key: Key) throws { set(.digits(String(value)), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(.uint(value), key) }
    mutating func encode(_ value: UInt128, forKey key: Key) throws { set(.digits(String(value)), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        set(try JSONTreeEncoder.node(for: value, codingPath: codingPath + [key]), key)
    }

    /// The object under `key`: the one already there if there is one (as in Foundation), else a
    /// new one that replaces whatever was there.
    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested: JSONObjectBox
        if case .object(let existing) = box.members[key.stringValue] {
            nested = existing
        } else {
            nested = JSONObjectBox()
            set(.object(nested), key)
        }
        return KeyedEncodingContainer(JSONKeyedContainer<NestedKey>(box: nested, codingPath: codingPath + [key]))
    }

    /// The array under `key`, reused or made as for ``nestedContainer(keyedBy:forKey:)``.
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested: JSONArrayBox
        if case .array(let existing) = box.members[key.stringValue] {
            nested = existing
        } else {
            nested = JSONArrayBox()
            set(.array(nested), key)
        }
        return JSONUnkeyedContainer(box: nested, codingPath: codingPath + [key])
    }

    /// An encoder for the value under "super".
    mutating func superEncoder() -> any Encoder {
        superEncoder(named: JSONCodingKey(stringValue: "super"))
    }

    /// An encoder for the value under `key`.
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(named: key)
    }

    private func superEncoder(named key: some CodingKey) -> any Encoder {
        let encoder = JSONTreeEncoder(codingPath: codingPath + [key])
        box.members[key.stringValue] = .deferred(encoder)
        return encoder
    }
}

private struct JSONUnkeyedContainer: UnkeyedEncodingContainer {
    let box: JSONArrayBox
    let codingPath: [any CodingKey]
    var count: Int { box.elements.count }

    private func append(_ node: JSONNode) { box.elements.append(node) }
    /// The coding path of the element about to be appended.
    private var nextPath: [any CodingKey] { codingPath + [JSONCodingKey(intValue: count)] }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try JSONTreeEncoder.checked(value, nextPath)) }
    mutating func encode(_ value: Float) throws { append(try JSONTreeEncoder.checked(value, nextPath)) }
    mutating func encode(_ value: Int) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { append(.int(value)) }
    mutating func encode(_ value: Int128) throws { append(.digits(String(value))) }
    mutating func encode(_ value: UInt) throws { append(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { append(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt16) throws { append(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt32) throws { append(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt64) throws { append(.uint(value)) }
    mutating func encode(_ value: UInt128) throws { append(.digits(String(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        append(try JSONTreeEncoder.node(for: value, codingPath: nextPath))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let nested = JSONObjectBox()
        let path = nextPath
        append(.object(nested))
        return KeyedEncodingContainer(JSONKeyedContainer<NestedKey>(box: nested, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = JSONArrayBox()
        let path = nextPath
        append(.array(nested))
        return JSONUnkeyedContainer(box: nested, codingPath: path)
    }

    /// An encoder for the next element (its place is taken now, as in Foundation).
    mutating func superEncoder() -> any Encoder {
        let encoder = JSONTreeEncoder(codingPath: nextPath)
        append(.deferred(encoder))
        return encoder
    }
}

// MARK: - Writing

extension JSONNode {
    /// About the written size (exact for strings without escapes), for reserving the output once.
    var estimatedSize: Int {
        switch self {
        case .null, .bool: 5
        case .int, .uint, .double, .float: 20
        case .digits(let text): text.utf8.count
        case .string(let string): string.utf8.count + 2
        case .array(let box): box.elements.reduce(2) { $0 + $1.estimatedSize + 1 }
        case .object(let box): box.members.reduce(2) { $0 + $1.key.utf8.count + 4 + $1.value.estimatedSize }
        case .deferred(let encoder): encoder.node.estimatedSize
        }
    }

    /// Appends the node's JSON text to `out`: no whitespace, object members in key order.
    func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let bool): out.append(contentsOf: bool ? "true".utf8 : "false".utf8)
        case .int(let int): Self.appendDecimal(int.magnitude, negative: int < 0, to: &out)
        case .uint(let uint): Self.appendDecimal(uint, negative: false, to: &out)
        case .double(let double): Self.appendShortest(double.description, to: &out)
        case .float(let float): Self.appendShortest(float.description, to: &out)
        case .digits(let text): out.append(contentsOf: text.utf8)
        case .string(let string): JSONText.appendQuoted(string, to: &out)
        case .array(let box):
            out.append(UInt8(ascii: "["))
            for (index, element) in box.elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let box):
            out.append(UInt8(ascii: "{"))
            // By UTF-8 bytes, not String's `<` (which compares canonical forms): the order is then
            // the same on every platform and equals Foundation's.
            let members = box.members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONText.appendQuoted(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .deferred(let encoder): encoder.node.write(into: &out)
        }
    }

    /// Appends `magnitude` in decimal, after a minus sign if `negative`.
    private static func appendDecimal(_ magnitude: UInt64, negative: Bool, to out: inout [UInt8]) {
        if negative { out.append(UInt8(ascii: "-")) }
        var digitCount = 1
        var rest = magnitude
        while rest >= 10 {
            rest /= 10
            digitCount += 1
        }
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digitCount))
        var index = out.count - 1
        rest = magnitude
        repeat {
            out[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
            index -= 1
        } while rest > 0
    }

    /// Appends a float's shortest round-trip `description` without a trailing ".0", as
    /// Foundation's encoder writes it ("3", "0.1", "1e+16", "-0").
    private static func appendShortest(_ description: String, to out: inout [UInt8]) {
        let text = description.utf8
        if text.count > 2, text.suffix(2).elementsEqual(".0".utf8) {
            out.append(contentsOf: text.dropLast(2))
        } else {
            out.append(contentsOf: text)
        }
    }
}
