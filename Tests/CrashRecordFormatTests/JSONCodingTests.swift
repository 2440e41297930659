// JSONCodingTests.swift — SortedJSONEncoder and JSONValue, judged against Foundation: the encoder's
// bytes are Foundation's JSONEncoder's ([.sortedKeys, .withoutEscapingSlashes]) up to the escapes
// JSONText chooses, and mean what they mean to JSONSerialization; the parser accepts exactly what
// RFC 8259 accepts, agrees with JSONSerialization on a corpus and on thousands of seeded random
// mutations wherever the two standards agree, reads what it reads, and survives any nesting.
//
// Where Foundation (swift-corelibs-foundation on Linux, measured with Swift 6.3) differs, and we
// follow the RFC or JSONText instead:
// - Encoding: Foundation writes U+0008 and U+000C as `\b` and `\f` (JSONText: `\u0008`, `\u000c`),
//   and leaves U+2028 and U+2029 raw (JSONText escapes them); a top-level value that encodes
//   nothing throws in Foundation and is `{}` here. Everything else is byte for byte the same,
//   doubles and floats included (both write the shortest round-trip description without ".0"),
//   and both sort keys by their UTF-8 bytes.
// - Parsing: JSONSerialization accepts trailing commas (`[1,]`, `{"a":1,}`), skips a UTF-8
//   byte-order mark, and reads UTF-16 and UTF-32 (guessed from NUL bytes in the first four, or
//   their BOMs); it refuses numbers beyond Double's range (`1e400`), which the RFC allows and
//   JSONValue keeps as text. Both refuse nesting deeper than 512.
import CrashRecordFormat
import Foundation
import XCTest

final class JSONCodingTests: XCTestCase {
    // MARK: - The encoder against Foundation's

    func testEveryFixtureMeansWhatFoundationsEncodingMeans() throws {
        for fixture in fixtures {
            let ours = try SortedJSONEncoder().encode(fixture.value)
            let theirs = try foundationEncoding(fixture.value)
            let oursRead = try XCTUnwrap(foundationObject(ours), "\(fixture.name): ours is not JSON to Foundation")
            let theirsRead = try XCTUnwrap(foundationObject(theirs), fixture.name)
            XCTAssertTrue(NSArray(array: [oursRead]).isEqual(NSArray(array: [theirsRead])),
                          "\(fixture.name): \(text(ours)) ≠ \(text(theirs))")
            // And our own parser reads it as Foundation does.
            XCTAssertEqual(JSONValue.parse(ours).map(Canonical.init), Canonical(foundation: theirsRead), fixture.name)
        }
    }

    func testEveryFixtureIsFoundationsBytesUpToJSONTextsEscapes() throws {
        for fixture in fixtures {
            let ours = try SortedJSONEncoder().encode(fixture.value)
            let theirs = try foundationEncoding(fixture.value)
            XCTAssertEqual(text(ours), text(withJSONTextEscapes(theirs)), fixture.name)
            if fixture.plain {
                // No U+0008, U+000C, U+2028 or U+2029 anywhere: the very same bytes.
                XCTAssertEqual(text(ours), text(theirs), "\(fixture.name) should be byte for byte Foundation's")
            } else {
                XCTAssertNotEqual(ours, theirs, "\(fixture.name) is marked as differing; it no longer does")
            }
        }
    }

    func testTheFixturesComeOutAsExpected() throws {
        let encoder = SortedJSONEncoder()
        XCTAssertEqual(text(try encoder.encode(ContainerCalls())), #"""
            {"a":"later","b":{"a":true,"c":null},"c":[1,2,3,{"d":-8},[null,16]],"d":["x","y"],"f":{},"super":{"e":1.5}}
            """#)
        XCTAssertEqual(text(try encoder.encode(Contexts.sample)),
                       #"{"app":{"name":"shop"},"device":"x86_64","os":{"name":"Linux","version":"6.8"},"tenant":{"id":"acme"}}"#)
        XCTAssertEqual(text(try encoder.encode(Numbers())), """
            {"int":9223372036854775807,"int128":-170141183460469231731687303715884105728,\
            "int128s":[-170141183460469231731687303715884105728,170141183460469231731687303715884105727],\
            "int16":-32768,"int16s":[-32768,32767],"int32":-2147483648,"int32s":[-2147483648,2147483647],\
            "int64":-9223372036854775808,"int64s":[-9223372036854775808,-1,9223372036854775807],"int8":-128,\
            "int8s":[-128,-1,127],"ints":[-9223372036854775808,-1,0,9223372036854775807],\
            "listed":[-9223372036854775808,-128,-32768,-2147483648,-9223372036854775808,\
            -170141183460469231731687303715884105728,18446744073709551615,255,65535,4294967295,\
            18446744073709551615,340282366920938463463374607431768211455,-2.5,0.5,false,"s",null],\
            "uint":18446744073709551615,"uint128":340282366920938463463374607431768211455,\
            "uint128s":[340282366920938463463374607431768211455],"uint16":65535,"uint16s":[65535],\
            "uint32":4294967295,"uint32s":[4294967295],"uint64":18446744073709551615,\
            "uint64s":[0,18446744073709551615],"uint8":255,"uint8s":[0,255],"uints":[0,18446744073709551615]}
            """)
        XCTAssertEqual(text(try encoder.encode(Doubles.sample)), """
            {"float":0.1,"floats":[3,-0,1e+20],"values":[0.1,1732000000.123,1e+300,-0,5e-324,1e+16,\
            1000000000000000,1.7976931348623157e+308,0.30000000000000004,-1.5,100,1e-07]}
            """)
    }

    func testAValueThatEncodesNothingIsAnEmptyObjectAtTheTopToo() throws {
        XCTAssertEqual(text(try SortedJSONEncoder().encode(Empty())), "{}")
        XCTAssertEqual(text(try SortedJSONEncoder().encode(HoldsEmpty())), #"{"empty":{},"list":[{},{}]}"#)
        // Foundation throws at the top instead (nested, it writes {} as we do).
        XCTAssertThrowsError(try foundationEncoding(Empty()))
    }

    func testTopLevelFragmentsAreWrittenAsTheyAre() throws {
        let encoder = SortedJSONEncoder()
        XCTAssertEqual(text(try encoder.encode("a/b")), #""a/b""#)
        XCTAssertEqual(text(try encoder.encode(42)), "42")
        XCTAssertEqual(text(try encoder.encode(Int?.none)), "null")
        XCTAssertEqual(text(try encoder.encode(false)), "false")
        XCTAssertEqual(text(try encoder.encode(2.5)), "2.5")
        XCTAssertEqual(text(try encoder.encode([Int]())), "[]")
        XCTAssertEqual(text(try encoder.encode([String: Int]())), "{}")
    }

    func testKeysComeOutSortedByTheirUTF8Bytes() throws {
        // "a\u{30A}" is "å" decomposed: by bytes it sorts before "b", by String's `<` (which
        // compares canonical forms) after.
        let keys = ["b", "a", "B", "a10", "a2", "_", "", "é", "😀", "\u{FFFD}", "\u{E000}", "z", "Z", "a-b", "aa", "a\u{30A}", "Å"]
        let dictionary = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) })
        let ours = try SortedJSONEncoder().encode(dictionary)
        let expected = keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            .map { "\(JSONText.quote($0)):\(dictionary[$0]!)" }.joined(separator: ",")
        XCTAssertEqual(text(ours), "{\(expected)}")
        XCTAssertEqual(text(ours), "{\"\":6,\"B\":2,\"Z\":12,\"_\":5,\"a\":1,\"a-b\":13,\"a10\":3,\"a2\":4,\"aa\":14,\"a\u{30A}\":15,\"b\":0,\"z\":11,\"Å\":16,\"é\":7,\"\u{E000}\":10,\"\u{FFFD}\":9,\"😀\":8}")
        // Foundation's .sortedKeys gives the same order on Linux (bytes, not UTF-16 units: U+E000
        // and U+FFFD before the emoji, whose UTF-16 surrogates would sort first).
        XCTAssertEqual(ours, try foundationEncoding(dictionary))
    }

    func testStringsAreQuotedExactlyAsJSONTextQuotesThem() throws {
        var random = SplitMix64(seed: 0x5EED_0001)
        // Near misses of U+2028 (E2 80 A8) among them: U+2027, U+202A, U+2128, U+20AC.
        let alphabet: [Unicode.Scalar] = Array("aZ09 /\"\\'{}:,é€\u{7F}\u{80}\u{2027}\u{2028}\u{2029}\u{202A}\u{2128}\u{FFFD}😀".unicodeScalars)
            + (0..<0x20).map { Unicode.Scalar(UInt8($0)) }
        var strings = ["", "plain", "a\"b\\c/d", "\u{2028}\u{2029}", "\u{0}\u{8}\u{C}\u{1F}\u{7F}", "e\u{301}", "end\u{E2}"]
        for _ in 0..<500 {
            var string = ""
            for _ in 0..<random.below(24) { string.unicodeScalars.append(alphabet[random.below(alphabet.count)]) }
            strings.append(string)
        }
        for string in strings {
            let ours = try SortedJSONEncoder().encode(string)
            XCTAssertEqual(text(ours), JSONText.quote(string))
            XCTAssertEqual(try SortedJSONEncoder().encode([string: [string]]),
                           Array("{\(JSONText.quote(string)):[\(JSONText.quote(string))]}".utf8))
            XCTAssertEqual(foundationObject(ours) as? String, string, "Foundation reads it back")
            XCTAssertEqual(JSONValue.parse(ours)?.string, string, "we read it back")
        }
    }

    func testDoublesAndFloatsAreWrittenAsFoundationWritesThem() throws {
        var random = SplitMix64(seed: 0x5EED_0002)
        var doubles: [Double] = [0, -0.0, 1, 0.1, 1e-5, 1e-4, 1e15, 1e16, 1e21, 2.5e-5, 123456789012345680,
                                 .leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude, .ulpOfOne]
        var floats: [Float] = [0, -0.0, 0.1, 3, 1e20, 16_777_216, .leastNonzeroMagnitude, .greatestFiniteMagnitude]
        while doubles.count < 3000 {
            // Any bit pattern, and decimals of a few digits (what a timestamp or a ratio is).
            let double = random.below(2) == 0 ? Double(bitPattern: random.next())
                : Double(Int64(truncatingIfNeeded: random.next()) % 10_000_000) / [1, 10, 1000, 1e6][random.below(4)]
            if double.isFinite { doubles.append(double) }
            let float = Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))
            if float.isFinite { floats.append(float) }
        }
        XCTAssertEqual(text(try SortedJSONEncoder().encode(doubles)), text(try foundationEncoding(doubles)))
        XCTAssertEqual(text(try SortedJSONEncoder().encode(floats)), text(try foundationEncoding(floats)))
        // Read back, each is the same Double.
        let read = try XCTUnwrap(JSONValue.parse(try SortedJSONEncoder().encode(doubles))?.array)
        XCTAssertEqual(read.compactMap(\.double).map(\.bitPattern), doubles.map(\.bitPattern))
    }

    func testNonFiniteFloatsThrowInvalidValueWithTheirCodingPath() throws {
        struct Holder: Encodable {
            var values: [Double]
            var ratio: Float
            var nested: [String: Double]
        }
        let cases: [(any Encodable, [String])] = [
            (Double.nan, []),
            (Double.infinity, []),
            (Float.nan, []),
            ([1, -Double.infinity], ["Index 1"]),
            (Holder(values: [1, .nan], ratio: 0, nested: [:]), ["values", "Index 1"]),
            (Holder(values: [], ratio: .infinity, nested: [:]), ["ratio"]),
            (Holder(values: [], ratio: 0, nested: ["x": .nan]), ["nested", "x"]),
        ]
        for (value, path) in cases {
            XCTAssertThrowsError(try SortedJSONEncoder().encode(value)) { error in
                guard case EncodingError.invalidValue(_, let context) = error else {
                    return XCTFail("not invalidValue: \(error)")
                }
                XCTAssertEqual(context.codingPath.map(\.stringValue), path)
            }
            XCTAssertThrowsError(try foundationEncoding(value), "Foundation throws too")
        }
    }

    // MARK: - The parser against RFC 8259 and JSONSerialization

    func testTheCorpusIsAcceptedExactlyWhereTheRFCAcceptsIt() throws {
        for entry in corpus {
            let ours = JSONValue.parse(entry.bytes)
            XCTAssertEqual(ours != nil, entry.valid, "RFC 8259: \(entry)")
            let theirs = foundationObject(entry.bytes)
            if let difference = entry.foundationDiffers {
                XCTAssertNotEqual(theirs != nil, entry.valid, "Foundation no longer differs (\(difference)): \(entry)")
            } else {
                XCTAssertEqual(theirs != nil, entry.valid, "Foundation: \(entry)")
            }
            if let ours, let theirs {
                XCTAssertEqual(Canonical(ours), Canonical(foundation: theirs), "content: \(entry)")
            }
            // The String overload and a collection without contiguous storage read the same.
            if let string = String(validating: entry.bytes, as: UTF8.self) {
                XCTAssertEqual(JSONValue.parse(string), ours, "as a String: \(entry)")
            }
            XCTAssertEqual(JSONValue.parse(entry.bytes.lazy.map { $0 }), ours, "not contiguous: \(entry)")
        }
    }

    func testWhatIsReadIsWhatWasWritten() throws {
        let value = try XCTUnwrap(JSONValue.parse(#"""
            {"s":"a\"\\\/\b\f\n\r\t\u0041\u00e9\u2028\ud83d\ude00é","n":[0,-0,1.50,1e2,-2E-3],
             "b":[true,false,null],"o":{"k":{}},"e":[],"dup":1,"dup":2}
            """#))
        XCTAssertEqual(value["s"], .string("a\"\\/\u{8}\u{C}\n\r\tAé\u{2028}😀é"))
        XCTAssertEqual(value["n"], .array([.number("0"), .number("-0"), .number("1.50"), .number("1e2"), .number("-2E-3")]))
        XCTAssertEqual(value["b"], .array([.bool(true), .bool(false), .null]))
        XCTAssertEqual(value["o"], .object(["k": .object([:])]))
        XCTAssertEqual(value["e"], .array([]))
        XCTAssertEqual(value["dup"], .number("2"), "a key that occurs twice keeps the later value")
        XCTAssertEqual(value.object?.count, 6)
    }

    func testTheAccessorsAnswerOnlyForTheirKind() throws {
        let value = try XCTUnwrap(JSONValue.parse(#"{"s":"x","i":42,"f":1.5,"e":1e2,"big":9223372036854775808,"min":-9223372036854775808,"huge":1e400,"t":true,"a":[1],"o":{}}"#))
        XCTAssertTrue(value.isObject)
        XCTAssertEqual(value["s"]?.string, "x")
        XCTAssertNil(value["i"]?.string)
        XCTAssertEqual(value["i"]?.int, 42)
        XCTAssertEqual(value["i"]?.double, 42)
        XCTAssertNil(value["f"]?.int, "a fraction is not an Int")
        XCTAssertEqual(value["f"]?.double, 1.5)
        XCTAssertNil(value["e"]?.int, "an exponent is not an Int")
        XCTAssertEqual(value["e"]?.double, 100)
        XCTAssertNil(value["big"]?.int, "beyond Int")
        XCTAssertEqual(value["min"]?.int, Int.min)
        XCTAssertNil(value["huge"]?.double, "beyond Double")
        XCTAssertEqual(value["huge"], .number("1e400"), "but kept as text")
        XCTAssertEqual(value["t"]?.bool, true)
        XCTAssertNil(value["s"]?.bool)
        XCTAssertEqual(value["a"]?.array, [.number("1")])
        XCTAssertNil(value["a"]?.object)
        XCTAssertEqual(value["o"]?.object, [:])
        XCTAssertEqual(value["o"]?.isObject, true)
        XCTAssertEqual(value["a"]?.isObject, false)
        XCTAssertNil(value["missing"])
        XCTAssertNil(value["a"]?["s"], "only an object has members")
        XCTAssertNil(JSONValue.string("x")["s"])
    }

    func testNestingIsBoundedAndNeverRecurses() {
        // Far deeper than any stack would survive if each level were a call.
        let deep = 100_000
        XCTAssertNil(JSONValue.parse([UInt8](repeating: UInt8(ascii: "["), count: deep)))
        XCTAssertNil(JSONValue.parse([UInt8](repeating: UInt8(ascii: "["), count: deep) + [UInt8](repeating: UInt8(ascii: "]"), count: deep)))
        XCTAssertNil(JSONValue.parse(String(repeating: #"{"a":"#, count: deep) + "1" + String(repeating: "}", count: deep)))
        XCTAssertNil(JSONValue.parse(String(repeating: "[{\"a\":", count: deep / 2)))
        // 512 deep is read, 513 is not, as in JSONSerialization; empty innermost containers count.
        for (depth, accepted) in [(JSONValue.maximumDepth, true), (JSONValue.maximumDepth + 1, false)] {
            let arrays = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            let objects = String(repeating: #"{"a":"#, count: depth - 1) + "{}" + String(repeating: "}", count: depth - 1)
            let mixed = String(repeating: #"[{"a":"#, count: depth / 2) + (depth % 2 == 0 ? "1" : "[1]")
                + String(repeating: "}]", count: depth / 2)
            for document in [arrays, objects] {
                XCTAssertEqual(JSONValue.parse(document) != nil, accepted, "\(depth) deep")
                XCTAssertEqual(foundationObject(Array(document.utf8)) != nil, accepted, "Foundation, \(depth) deep")
            }
            XCTAssertEqual(JSONValue.parse(mixed) != nil, accepted, "\(depth) deep, mixed")
        }
        var value = JSONValue.parse(String(repeating: "[", count: 512) + "7" + String(repeating: "]", count: 512))
        for _ in 0..<512 { value = value?.array?.first }
        XCTAssertEqual(value, .number("7"))
    }

    func testRandomMutationsNeverCrashAndAgreeWithJSONSerialization() throws {
        var random = SplitMix64(seed: 0x5EED_0003)
        var documents = corpus.filter(\.valid).map(\.bytes).filter { $0.count > 4 }.prefix(12).map { $0 }
        for fixture in fixtures.prefix(8) { documents.append(try SortedJSONEncoder().encode(fixture.value)) }
        XCTAssertEqual(documents.count, 20)
        // JSON's own bytes most of the time, so that mutations make near misses, not noise.
        let structural = Array(#"{}[],:"\/ -+.0123456789eEtrufalsn"#.utf8) + [0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x80, 0xC3, 0xE2, 0xED, 0xFF]
        var tally: [String: Int] = [:]
        for round in 0..<2000 {
            var bytes = documents[round % documents.count]
            for _ in 0...random.below(3) {
                let position = random.below(bytes.count + 1)
                let byte = random.below(4) == 0 ? UInt8(truncatingIfNeeded: random.next()) : structural[random.below(structural.count)]
                switch random.below(4) {
                case 0 where position < bytes.count: bytes[position] = byte
                case 1: bytes.insert(byte, at: position)
                case 2 where position < bytes.count: bytes.remove(at: position)
                default: bytes.removeSubrange(position...)
                }
            }
            let ours = JSONValue.parse(bytes)
            let theirs = foundationObject(bytes)
            let shown = String(decoding: bytes, as: UTF8.self).debugDescription
            switch (ours, theirs) {
            case (let ours?, let theirs?):
                tally["both accept", default: 0] += 1
                XCTAssertEqual(Canonical(ours), Canonical(foundation: theirs), shown)
            case (nil, nil):
                tally["both refuse", default: 0] += 1
            case (nil, _?):
                let reason = foundationLaxness(bytes)
                XCTAssertNotNil(reason, "only Foundation accepts \(shown)")
                tally["only Foundation accepts: \(reason ?? "?")", default: 0] += 1
            case (let ours?, nil):
                XCTAssertTrue(ours.hasNumberBeyondDouble, "only we accept \(shown)")
                tally["only we accept: a number beyond Double", default: 0] += 1
            }
        }
        // Both outcomes must be well represented, or the test proves little.
        XCTAssertGreaterThan(tally["both accept", default: 0], 200, "\(tally)")
        XCTAssertGreaterThan(tally["both refuse", default: 0], 500, "\(tally)")
    }
}

// MARK: - Foundation as the oracle

private func foundationEncoding<T: Encodable>(_ value: T) throws -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return Array(try encoder.encode(value))
}

private func foundationObject(_ bytes: [UInt8]) -> Any? {
    try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
}

private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

/// Foundation's encoding with JSONText's escapes: `\b` → `\u0008`, `\f` → `\u000c`, raw U+2028
/// and U+2029 → `\u2028`, `\u2029` (a backslash outside an escape never occurs in its output).
private func withJSONTextEscapes(_ bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var index = 0
    while index < bytes.count {
        if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count {
            switch bytes[index + 1] {
            case UInt8(ascii: "b"): out += Array(#"\u0008"#.utf8)
            case UInt8(ascii: "f"): out += Array(#"\u000c"#.utf8)
            default: out += bytes[index...index + 1]
            }
            index += 2
        } else if bytes[index...].starts(with: [0xE2, 0x80]), index + 2 < bytes.count, bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9 {
            out += Array((bytes[index + 2] == 0xA8 ? #"\u2028"# : #"\u2029"#).utf8)
            index += 3
        } else {
            out.append(bytes[index])
            index += 1
        }
    }
    return out
}

/// Why JSONSerialization accepts `bytes` though RFC 8259 does not, or nil if it should not.
private func foundationLaxness(_ bytes: [UInt8]) -> String? {
    // It reads UTF-16 and UTF-32, guessed from a BOM or NUL bytes in the first four; it skips a
    // UTF-8 BOM. RFC 8259 §8.1: JSON exchanged between systems is UTF-8, without a BOM.
    if bytes.prefix(4).contains(0) || [[0xEF, 0xBB, 0xBF], [0xFE, 0xFF], [0xFF, 0xFE]].contains(where: bytes.starts(with:)) {
        return "another encoding or a byte-order mark"
    }
    // It accepts a comma before a closing bracket or brace.
    var out: [UInt8] = []
    var inString = false
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        if inString {
            if byte == UInt8(ascii: "\\"), index + 1 < bytes.count {
                out += bytes[index...index + 1]
                index += 2
                continue
            }
            if byte == UInt8(ascii: "\"") { inString = false }
        } else if byte == UInt8(ascii: "\"") {
            inString = true
        } else if byte == UInt8(ascii: ",") {
            let next = bytes[(index + 1)...].first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
            if next == UInt8(ascii: "]") || next == UInt8(ascii: "}") {
                index += 1
                continue
            }
        }
        out.append(byte)
        index += 1
    }
    return out != bytes && JSONValue.parse(out) != nil ? "a trailing comma" : nil
}

/// A JSON value compared by meaning: numbers as Doubles, Bool distinct from 0 and 1.
private indirect enum Canonical: Equatable, CustomStringConvertible {
    case null, bool(Bool), number(Double), string(String), array([Canonical]), object([String: Canonical])

    init(_ value: JSONValue) {
        switch value {
        case .null: self = .null
        case .bool(let bool): self = .bool(bool)
        case .number(let text): self = .number(Double(text)!)
        case .string(let string): self = .string(string)
        case .array(let elements): self = .array(elements.map(Canonical.init))
        case .object(let members): self = .object(members.mapValues(Canonical.init))
        }
    }

    /// What JSONSerialization returns: NSNull, String, NSNumber (a Bool is a CFBoolean, "c"),
    /// NSDecimalNumber for an integer beyond 64 bits, [Any], [String: Any].
    init(foundation value: Any) {
        switch value {
        case is NSNull: self = .null
        case let string as String: self = .string(string)
        case let decimal as NSDecimalNumber: self = .number(Double(decimal.description) ?? decimal.doubleValue)
        case let number as NSNumber:
            self = String(cString: number.objCType) == "c" ? .bool(number.boolValue) : .number(number.doubleValue)
        case let elements as [Any]: self = .array(elements.map(Canonical.init(foundation:)))
        case let members as [String: Any]: self = .object(members.mapValues(Canonical.init(foundation:)))
        default: preconditionFailure("JSONSerialization returned \(type(of: value))")
        }
    }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let bool): "\(bool)"
        case .number(let number): "\(number)"
        case .string(let string): string.debugDescription
        case .array(let elements): "[\(elements.map(\.description).joined(separator: ","))]"
        case .object(let members):
            "{\(members.sorted { $0.key < $1.key }.map { "\($0.key.debugDescription):\($0.value)" }.joined(separator: ","))}"
        }
    }
}

extension JSONValue {
    /// Whether a number in it is too large for a Double (which JSONSerialization refuses).
    fileprivate var hasNumberBeyondDouble: Bool {
        switch self {
        case .number(let text): !(Double(text)?.isFinite ?? false)
        case .array(let elements): elements.contains { $0.hasNumberBeyondDouble }
        case .object(let members): members.values.contains { $0.hasNumberBeyondDouble }
        default: false
        }
    }
}

/// A seeded generator (SplitMix64): the same mutations on every run and platform.
private struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in 0..<bound.
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

// MARK: - Encoder fixtures

private struct Fixture {
    let name: String
    let value: any Encodable & Sendable
    /// Byte for byte Foundation's: none of the characters JSONText escapes differently.
    let plain: Bool
}

private let fixtures: [Fixture] = [
    Fixture(name: "profile", value: Profile.sample, plain: true),
    Fixture(name: "profile without optionals", value: Profile.sparse, plain: true),
    Fixture(name: "contexts (two keyed containers)", value: Contexts.sample, plain: true),
    Fixture(name: "container calls", value: ContainerCalls(), plain: true),
    Fixture(name: "integers", value: Numbers(), plain: true),
    Fixture(name: "doubles", value: Doubles.sample, plain: true),
    Fixture(name: "int keys", value: [10: "ten", 2: "two", 1: "one", -1: "minus one"], plain: true),
    Fixture(name: "nested collections", value: [["a": [1, 2]], ["b": [], "c": [3]]], plain: true),
    Fixture(name: "strings", value: Strings.plain, plain: true),
    Fixture(name: "strings with control characters", value: Strings.control, plain: false),
    Fixture(name: "strings with line separators", value: Strings.separators, plain: false),
    Fixture(name: "keys with control characters", value: ["tab\t": 1, "bell\u{7}": 2, "back\u{8}": 3], plain: false),
    Fixture(name: "nested empty values", value: HoldsEmpty(), plain: true),
    Fixture(name: "a string", value: "top \"level\" / \\", plain: true),
    Fixture(name: "an integer", value: UInt64.max, plain: true),
    Fixture(name: "null", value: String?.none, plain: true),
    Fixture(name: "a Bool", value: true, plain: true),
    Fixture(name: "a level", value: Level.high, plain: true),
]

private struct Address: Encodable {
    var street: String
    var city: String
    var zip: String?
}

/// Encodes itself as a string in a single-value container.
private enum Level: Encodable {
    case low, high

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self == .low ? "low" : "high")
    }
}

/// Encodes itself as an Int or as null in a single-value container.
private enum Code: Encodable {
    case known(Int), unknown

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .known(let code): try container.encode(code)
        case .unknown: try container.encodeNil()
        }
    }
}

private struct Profile: Encodable {
    var name: String
    var age: Int
    var nickname: String?
    var email: String?
    var address: Address
    var previous: Address?
    var tags: [String]
    var attributes: [String: String]
    var homes: [String: Address]
    var level: Level
    var levels: [Level]
    var code: Code
    var missing: Code
    var active: Bool
    var matrix: [[Int]]
    var ratio: Double?

    static let sample = Profile(
        name: "Ada", age: 36, nickname: nil, email: "ada@example.com",
        address: Address(street: "1 Analytical Way", city: "London", zip: nil),
        previous: Address(street: "2 Difference Row", city: "Marylebone", zip: "NW1"),
        tags: ["math", "engines", ""], attributes: ["role": "engineer", "team": "core", "empty": ""],
        homes: ["london": Address(street: "a", city: "b", zip: "c"), "paris": Address(street: "d", city: "e", zip: nil)],
        level: .high, levels: [.low, .high, .low], code: .known(-7), missing: .unknown, active: true,
        matrix: [[1, 2], [], [3]], ratio: 0.25)
    static let sparse = Profile(
        name: "", age: 0, nickname: nil, email: nil, address: Address(street: "", city: "", zip: nil), previous: nil,
        tags: [], attributes: [:], homes: [:], level: .low, levels: [], code: .unknown, missing: .unknown,
        active: false, matrix: [], ratio: nil)
}

/// Fixed keys, then dynamic ones through a second `container(keyedBy:)` into the same object (as
/// the Sentry event's contexts do).
private struct Contexts: Encodable {
    var os: [String: String]
    var device: String?
    var gpu: String?
    var named: [String: [String: String]]

    enum CodingKeys: String, CodingKey { case os, device, gpu }

    struct Name: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var fixed = encoder.container(keyedBy: CodingKeys.self)
        try fixed.encode(os, forKey: .os)
        try fixed.encodeIfPresent(device, forKey: .device)
        try fixed.encodeIfPresent(gpu, forKey: .gpu)
        var named = encoder.container(keyedBy: Name.self)
        for (name, facts) in self.named {
            try named.encode(facts, forKey: Name(stringValue: name))
        }
    }

    static let sample = Contexts(os: ["name": "Linux", "version": "6.8"], device: "x86_64", gpu: nil,
                                 named: ["tenant": ["id": "acme"], "app": ["name": "shop"]])
}

/// Every container call: a key encoded twice, a nested container asked for twice, nested
/// unkeyed containers, super encoders (one used after later elements, one never used), an
/// unkeyed container asked for twice, `encodeIfPresent(nil)`.
private struct ContainerCalls: Encodable {
    enum Key: String, CodingKey { case a, b, c, d, e, f }

    func encode(to encoder: any Encoder) throws {
        var keyed = encoder.container(keyedBy: Key.self)
        try keyed.encode(1, forKey: .a)
        try keyed.encode("later", forKey: .a)
        var first = keyed.nestedContainer(keyedBy: Key.self, forKey: .b)
        try first.encode(true, forKey: .a)
        var second = keyed.nestedContainer(keyedBy: Key.self, forKey: .b)
        try second.encodeNil(forKey: .c)
        var list = keyed.nestedUnkeyedContainer(forKey: .c)
        try list.encode(1)
        let superOfList = list.superEncoder()
        try list.encode(3)
        var single = superOfList.singleValueContainer()
        try single.encode(2)
        var nestedInList = list.nestedContainer(keyedBy: Key.self)
        try nestedInList.encode(Int8(-8), forKey: .d)
        var deeper = list.nestedUnkeyedContainer()
        try deeper.encodeNil()
        try deeper.encode(UInt16(16))
        var superKeyed = keyed.superEncoder().container(keyedBy: Key.self)
        try superKeyed.encode(Float(1.5), forKey: .e)
        let superD = keyed.superEncoder(forKey: .d)
        var superList = superD.unkeyedContainer()
        try superList.encode("x")
        var again = superD.unkeyedContainer()
        try again.encode("y")
        _ = keyed.superEncoder(forKey: .f)
        try keyed.encodeIfPresent(Int?.none, forKey: .e)
    }
}

/// Every integer width at its extremes: through a keyed container's own methods (the stored
/// properties), a single-value container (the arrays' elements) and an unkeyed container's own
/// methods (`listed`).
private struct Numbers: Encodable {
    var int8 = Int8.min, int16 = Int16.min, int32 = Int32.min, int64 = Int64.min, int = Int.max
    var uint8 = UInt8.max, uint16 = UInt16.max, uint32 = UInt32.max, uint64 = UInt64.max, uint = UInt.max
    var int128 = Int128.min, uint128 = UInt128.max
    var ints: [Int] = [.min, -1, 0, .max]
    var int8s: [Int8] = [.min, -1, .max], int16s: [Int16] = [.min, .max], int32s: [Int32] = [.min, .max]
    var int64s: [Int64] = [.min, -1, .max], int128s: [Int128] = [.min, .max]
    var uints: [UInt] = [0, .max], uint8s: [UInt8] = [0, .max], uint16s: [UInt16] = [.max], uint32s: [UInt32] = [.max]
    var uint64s: [UInt64] = [0, .max], uint128s: [UInt128] = [.max]
    var listed = Listed()

    struct Listed: Encodable {
        func encode(to encoder: any Encoder) throws {
            var list = encoder.unkeyedContainer()
            try list.encode(Int.min)
            try list.encode(Int8.min)
            try list.encode(Int16.min)
            try list.encode(Int32.min)
            try list.encode(Int64.min)
            try list.encode(Int128.min)
            try list.encode(UInt.max)
            try list.encode(UInt8.max)
            try list.encode(UInt16.max)
            try list.encode(UInt32.max)
            try list.encode(UInt64.max)
            try list.encode(UInt128.max)
            try list.encode(Float(-2.5))
            try list.encode(0.5)
            try list.encode(false)
            try list.encode("s")
            try list.encodeNil()
        }
    }
}

private struct Doubles: Encodable {
    var values: [Double]
    var float: Float
    var floats: [Float]

    static let sample = Doubles(
        values: [0.1, 1732000000.123, 1e300, -0.0, .leastNonzeroMagnitude, 1e16, 1e15, .greatestFiniteMagnitude, 0.1 + 0.2, -1.5, 100, 1e-7],
        float: 0.1, floats: [3, -0.0, 1e20])
}

private struct Strings: Encodable {
    var values: [String]
    var keyed: [String: String]

    static let plain = Strings(
        values: ["quote \" backslash \\ slash / ", "tab\tnew\nline\rreturn", "nul \u{0} unit \u{1F} del \u{7F}",
                 "é e\u{301} € 😀 \u{FFFD}", "</script>", ""],
        keyed: ["slash/key": "v", "quote\"key": "w", "emoji😀": "x", "Upper": "y", "lower": "z"])
    static let control = Strings(values: ["bell \u{7} backspace \u{8} form feed \u{C}"], keyed: ["k": "\u{8}\u{C}"])
    static let separators = Strings(values: ["line \u{2028} paragraph \u{2029}"], keyed: ["\u{2028}": "\u{2029}"])
}

/// Encodes nothing at all.
private struct Empty: Encodable {
    func encode(to encoder: any Encoder) throws {}
}

private struct HoldsEmpty: Encodable {
    var empty = Empty()
    var list = [Empty(), Empty()]
}

// MARK: - Parser corpus

private struct CorpusEntry: CustomStringConvertible {
    let bytes: [UInt8]
    /// Whether RFC 8259 accepts it.
    let valid: Bool
    /// Why JSONSerialization decides the other way, if it does.
    let foundationDiffers: String?

    var description: String { String(decoding: bytes, as: UTF8.self).debugDescription + " \(bytes.prefix(8))" }
}

private func valid(_ text: String, foundationRefuses reason: String? = nil) -> CorpusEntry {
    CorpusEntry(bytes: Array(text.utf8), valid: true, foundationDiffers: reason)
}

private func invalid(_ text: String, foundationAccepts reason: String? = nil) -> CorpusEntry {
    CorpusEntry(bytes: Array(text.utf8), valid: false, foundationDiffers: reason)
}

private func invalid(bytes: [UInt8], foundationAccepts reason: String? = nil) -> CorpusEntry {
    CorpusEntry(bytes: bytes, valid: false, foundationDiffers: reason)
}

private let corpus: [CorpusEntry] = [
    // Valid: every kind of value, at the top too.
    valid(#"{"a":{"b":[1,{"c":null}],"d":"e"},"f":[true,false],"g":-0.5e-3}"#),
    valid(#"[1, 2.5, -3, 4e2, 5E-1, 6.25e+1, 0, -0, 0.0]"#),
    valid(" \t\n\r{ \"a\" : [ 1 , 2 ] , \"b\" : { } } \t\n\r"),
    valid(#"{"a":1,"a":2}"#),
    valid(#"[[[[[]]]],{},[{}]]"#),
    valid(#""\"\\\/\b\f\n\r\t""#),
    valid(#""\u0041\u00e9\u00E9\u2028\ud83d\ude00\uDBFF\uDFFF""#),
    valid(#"["\u0000", "a\u0000b"]"#),
    valid("\"é😀\u{7F}\u{80}\u{10FFFF}\""),
    valid(#"{"":"","key with spaces":"value with \"quotes\""}"#),
    valid(#"123456789012345678901234567890"#),
    valid(#"{"n":-9223372036854775808,"m":18446744073709551615}"#),
    valid("1e400", foundationRefuses: "a number beyond Double"),
    valid("[-1e400]", foundationRefuses: "a number beyond Double"),
    valid("1e-400"),
    valid("0"), valid("-0"), valid("1.5"), valid("-1.5e10"), valid("1E+2"),
    valid("true"), valid("false"), valid("null"), valid(#""a""#), valid(#""""#), valid(" 1 "),
    valid("[]"), valid("{}"),
    // Invalid: numbers.
    invalid("01"), invalid("-01"), invalid("[00]"), invalid("+1"), invalid(".5"), invalid("1."), invalid("1.e3"),
    invalid("-"), invalid("1e"), invalid("1e+"), invalid("0x10"), invalid("NaN"), invalid("Infinity"),
    invalid("-Infinity"), invalid("1 2"),
    // Invalid: structure.
    invalid(""), invalid(" "), invalid("[1,]", foundationAccepts: "a trailing comma"),
    invalid(#"{"a":1,}"#, foundationAccepts: "a trailing comma"), invalid("[,1]"), invalid("[1,,2]"),
    invalid("[,]"), invalid("{,}"), invalid(#"{"a"}"#), invalid(#"{"a" 1}"#), invalid("{a:1}"), invalid("{1:2}"),
    invalid("'a'"), invalid(#""a"#), invalid("[1"), invalid(#"{"a":1"#), invalid("]"), invalid("}"),
    invalid("[1] x"), invalid("[1]]"), invalid("// c\n1"), invalid("/* c */ 1"), invalid("tru"), invalid("truex"),
    invalid("nul"), invalid("True"), invalid("\u{C}1"), invalid("\u{A0}1"), invalid("\u{B}1"),
    // Invalid: strings.
    invalid(#""\x""#), invalid(#""\U0041""#), invalid(#""\u00g0""#), invalid(#""\u12""#), invalid(#""\"#),
    invalid(#""\ud800""#), invalid(#""\udc00""#), invalid(#""\ud800\u0041""#), invalid(#""\ud800\ud800""#),
    invalid(#""\ude00\ud83d""#), invalid(#""\ud83d""#), invalid("\"\t\""), invalid("\"\n\""), invalid("\"\u{1}\""),
    invalid("\"\u{1F}\""),
    invalid(bytes: [0x22, 0xFF, 0x22]), invalid(bytes: [0x22, 0xC3, 0x28, 0x22]),
    invalid(bytes: [0x22, 0xED, 0xA0, 0x80, 0x22]),  // a surrogate encoded in UTF-8
    invalid(bytes: [0x22, 0xC0, 0xAF, 0x22]),  // overlong
    invalid(bytes: [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22]),  // beyond U+10FFFF
    invalid(bytes: [0x22, 0xE2, 0x82, 0x22]),  // truncated
    invalid(bytes: [0x22, 0xC3, 0x5C, 0x75, 0x30, 0x30, 0x41, 0x39, 0x22]),  // a lead byte, then an escape
    invalid(bytes: [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]),  // in a key
    // Invalid: encodings other than UTF-8.
    invalid(bytes: [0xEF, 0xBB, 0xBF, 0x31], foundationAccepts: "a byte-order mark"),
    invalid(bytes: [0x31, 0x00], foundationAccepts: "read as UTF-16"),
    invalid(bytes: [0x5B, 0x00, 0x31, 0x00, 0x5D, 0x00], foundationAccepts: "read as UTF-16"),
    invalid(bytes: [0x31, 0x00, 0x00, 0x00], foundationAccepts: "read as UTF-32"),
    invalid(bytes: [0x22, 0x41, 0x00, 0x22]),
    invalid(bytes: [0x5B, 0x5D, 0x00]),
]
