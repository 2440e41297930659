// WireTests.swift — the /sa body must match Sensors' servers byte for byte.
@testable import SensorsTracking
@testable import SensorsEvents
import Foundation
import XCTest

final class WireTests: XCTestCase {
    func testJavaHashCodeMatchesJavaStringHashCode() {
        XCTAssertEqual(SensorsWire.javaHashCode("abc"), 96354)
        XCTAssertEqual(SensorsWire.javaHashCode(""), 0)
        XCTAssertEqual(SensorsWire.javaHashCode("hello world"), 1_794_106_052)
        XCTAssertEqual(SensorsWire.javaHashCode("Sensors Analytics data_list"), 1_597_386_002) // wraps in Int32
        XCTAssertEqual(SensorsWire.javaHashCode("H4sIAAAAAAAAA+3O"), -620_278_360) // negative after wrapping
        XCTAssertEqual(SensorsWire.javaHashCode("\u{1F600}"), 1_772_899) // over UTF-16 surrogates, not scalars
    }

    func testPercentEncodingEscapesReservedCharactersAndSlash() {
        XCTAssertEqual(SensorsWire.percentEncode(":#[]@!$&'()*+,;=/"), "%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D%2F")
        XCTAssertEqual(SensorsWire.percentEncode("AZaz09-._~"), "AZaz09-._~")
        XCTAssertEqual(SensorsWire.percentEncode("a b%é"), "a%20b%25%C3%A9")
        XCTAssertEqual(SensorsWire.percentEncode("H4sI+ab/c=="), "H4sI%2Bab%2Fc%3D%3D")
    }

    func testGzipIsRealGzipAndRoundTrips() throws {
        let text = Data(String(repeating: "{\"event\":\"x\"},", count: 100).utf8)
        let zipped = try Gzip.compress(text)
        XCTAssertEqual(Array(zipped.prefix(2)), [0x1F, 0x8B])
        XCTAssertLessThan(zipped.count, text.count)
        XCTAssertEqual(try Gzip.decompress(zipped), text)
        XCTAssertThrowsError(try Gzip.decompress(Data("not gzip".utf8)))
    }

    func testBodyCarriesCrcGzipFlagAndPercentEncodedBase64() throws {
        let events = [#"{"a":1}"#, #"{"b":"\u00e9"}"#]
        let body = try SensorsWire.body(forEvents: events)
        let fields = Dictionary(uniqueKeysWithValues: body.split(separator: "&").map { pair -> (String, String) in
            let parts = pair.split(separator: "=", maxSplits: 1)
            return (String(parts[0]), String(parts[1]))
        })
        XCTAssertEqual(fields["gzip"], "1")
        let base64 = try XCTUnwrap(fields["data_list"]?.removingPercentEncoding)
        XCTAssertFalse(fields["data_list"]!.contains("+") || fields["data_list"]!.contains("/") || fields["data_list"]!.contains("="))
        XCTAssertEqual(fields["crc"], String(SensorsWire.javaHashCode(base64)))
        let decoded = try XCTUnwrap(SensorsWire.decode(body: body))
        XCTAssertEqual(decoded.json, "[" + events.joined(separator: ",") + "]")
    }

    func testFlushTimeIsAddedAsTheLastMember() {
        XCTAssertEqual(#"{"a":{"b":1}}"#.addingFlushTime(42), #"{"a":{"b":1},"_flush_time":42}"#)
    }
}
