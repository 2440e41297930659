// CrashScopeTests.swift — the app's scope in a record (CC_SEC_SCOPE): rendered and read back by the
// one layout, kept within its bounds, hostile payloads read without trapping, and the user left
// out of a redacted copy; on a real crash of the harness whose scope changed just before it died.
import CCrashRecordLayout
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

@testable import CrashRecordFormat

final class CrashScopeTests: XCTestCase {
    func read(_ bytes: [UInt8]) -> (CrashScope?, [String]) {
        var notes: [String] = []
        return (CrashScope(section: bytes[...], notes: &notes), notes)
    }

    func testARenderedScopeReadsBackAsItWas() throws {
        let scope = CrashScope(tags: ["tenant": "acme", "région": "eu-west-1"],
                               user: CrashUser(id: "u-42", username: "ada", email: "ada@example.com", ipAddress: "192.0.2.1"),
                               contexts: ["database": ["engine": "postgres", "pool": "8"], "feature": ["checkout": "v2"]])
        let bytes = try XCTUnwrap(scope.rendered())
        let (read, notes) = read(bytes)
        XCTAssertEqual(read, scope)
        XCTAssertEqual(notes, [])
        XCTAssertEqual(scope.rendered(), bytes, "rendered in a stable order")
    }

    func testBoundsAreKeptWhenRenderedAndReadBack() throws {
        var scope = CrashScope()
        scope.tags["long"] = String(repeating: "é", count: 150)          // 300 bytes: cut to 200, whole characters
        scope.tags[String(repeating: "k", count: 65)] = "too long a key"   // left out
        scope.tags["nul"] = "a\0b"                                          // the separator removed
        scope.tags[""] = "empty key"                                        // left out
        scope.contexts["c"] = ["v": String(repeating: "x", count: 5000)]   // cut to 1024
        let bounded = scope.bounded
        XCTAssertEqual(bounded.tags["long"], String(repeating: "é", count: 100))
        XCTAssertEqual(bounded.tags["nul"], "ab")
        XCTAssertEqual(Set(bounded.tags.keys), ["long", "nul"])
        XCTAssertEqual(bounded.contexts["c"]?["v"]?.utf8.count, CrashScope.maxValueBytes)
        XCTAssertEqual(read(try XCTUnwrap(scope.rendered())).0, bounded)

        // Too much in all: refused, not cut.
        var big = CrashScope()
        for index in 0 ..< 60 { big.contexts["c\(index)"] = ["v": String(repeating: "x", count: 200)] }
        XCTAssertNil(big.rendered(), "over \(CrashScope.maxBytes) bytes")
    }

    /// Untrusted payloads: never a trap; whole entries within the bounds taken, the rest noted.
    func testHostilePayloadsAreReadAsFarAsTheyAreWhole() throws {
        XCTAssertNil(read([]).0)
        let (cut, cutNotes) = read(Array("tag\0tenant\0acme\0tag\0other".utf8))
        XCTAssertEqual(cut?.tags, ["tenant": "acme"])
        XCTAssertEqual(cutNotes.count, 1, "the torn entry is noted")
        let (unknown, unknownNotes) = read(Array("planet\0k\0v\0user\0shoe_size\0v\0context:\0k\0v\0".utf8))
        XCTAssertNil(unknown, "no entry a reader knows")
        XCTAssertEqual(unknownNotes, ["the scope section had 3 entries that could not be read (left out)"])
        let (long, _) = read(Array(("tag\0k\0" + String(repeating: "v", count: 201) + "\0").utf8))
        XCTAssertNil(long, "a tag value longer than a writer keeps")
        // Bytes that are not UTF-8 are repaired, not trusted.
        let (repaired, _) = read([0x74, 0x61, 0x67, 0, 0x6B, 0, 0xFF, 0xFE, 0])
        XCTAssertEqual(repaired?.tags["k"], "\u{FFFD}\u{FFFD}")
        // Random bytes, many times: no trap, never more than the payload.
        var generator = SystemRandomNumberGenerator()
        for _ in 0 ..< 2000 {
            let bytes = (0 ..< Int.random(in: 0 ... 64, using: &generator)).map { _ in
                [0, 0x74, 0x61, 0x67, 0x3A, 0x75, UInt8.random(in: 0 ... 255, using: &generator)].randomElement(using: &generator)!
            }
            _ = read(bytes)
        }
    }

    /// A real crash: the harness set its scope, changed a tag just before it crashed; the record
    /// holds the scope as it was then, and a copy redacted for identity keeps all but the user.
    func testACrashCarriesTheScopeAsItWasAndRedactionDropsTheUser() throws {
        let directory = try Scratch.directory("scope-crash")
        let child = try ChildProcess.run(BuiltProducts.harness,
                                         ["deliver", "--records", directory, "--tag", "tenant=acme", "--tag", "phase=start",
                                          "--late-tag", "phase=crash", "--user", "u-42,ada@example.com", "--context", "database.engine=postgres",
                                          "--crash"],
                                         environment: ["SWIFT_BACKTRACE": "enable=no"], timeout: 120)
        XCTAssertEqual(child.ending, .signaled(SIGSEGV))
        let name = try XCTUnwrap(try RecordFileName.names(in: directory).first)
        let bytes = try CrashRecordReader.readBytes(path: directory + "/" + name)
        let record = try CrashRecordReader.parse(bytes)
        XCTAssertEqual(record.scope, CrashScope(tags: ["tenant": "acme", "phase": "crash"], user: CrashUser(id: "u-42", email: "ada@example.com"),
                                                contexts: ["database": ["engine": "postgres"]]))

        let redacted = try CrashRecordReader.parse(RecordRedaction().apply(to: bytes))
        XCTAssertEqual(redacted.scope, CrashScope(tags: ["tenant": "acme", "phase": "crash"], contexts: ["database": ["engine": "postgres"]]))
        XCTAssertFalse(SecretCrash.contains(RecordRedaction().apply(to: bytes), "ada@example.com"))
        XCTAssertTrue(redacted.isComplete, "the rewritten section keeps the copy whole")
        XCTAssertEqual(try CrashRecordReader.parse(RecordRedaction(identity: true).apply(to: bytes)).scope, record.scope)
    }
}
