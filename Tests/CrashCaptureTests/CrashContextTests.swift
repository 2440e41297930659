// CrashContextTests.swift — a request's context as the record will hold it: traceparent parsing, the fixed fields, the table's bounds.
import CShims
@testable import CrashCapture
import XCTest

final class CrashContextTests: XCTestCase {
    // MARK: W3C traceparent

    func testAValidTraceparentIsContinuedWithANewSpanOfThisRequest() {
        var context = CrashContext()
        XCTAssertTrue(context.continueTrace(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        XCTAssertEqual(context.traceID, "4bf92f3577b34da6a3ce929d0e0e4736")
        XCTAssertEqual(context.parentSpanID, "00f067aa0ba902b7")
        XCTAssertTrue(context.sampled)
        XCTAssertEqual(context.spanID.utf8.count, 16)
        XCTAssertTrue(context.spanID.allSatisfy { "0123456789abcdef".contains($0) }, context.spanID)
        XCTAssertNotEqual(context.spanID, context.parentSpanID)
        var other = CrashContext()
        other.continueTrace(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
        XCTAssertFalse(other.sampled)
        XCTAssertNotEqual(other.spanID, context.spanID, "each request gets a span of its own")
    }

    func testInvalidTraceparentsChangeNothing() {
        let invalid = [
            "", "garbage",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",                 // no flags
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",              // all-zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",              // all-zero parent id
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",              // version ff
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",              // uppercase
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",        // version 00 with more
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",              // not hex
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",              // wrong separators
        ]
        for header in invalid {
            var context = CrashContext(traceID: "keep")
            XCTAssertFalse(context.continueTrace(traceparent: header), header)
            XCTAssertEqual(context.traceID, "keep", header)
            XCTAssertEqual(context.spanID, "", header)
        }
        var future = CrashContext()
        XCTAssertTrue(future.continueTrace(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later"),
                      "a later version may carry more fields")
    }

    // MARK: The record's fixed fields

    func testTextsAreCutAtACharacterBoundaryToTheirFields() {
        let context = CrashContext(requestID: String(repeating: "é", count: 40), method: "PROPFIND-LONGER-THAN-15",
                                   path: "/" + String(repeating: "a", count: 300))
        var body = context.recordBody(flags: 0, key: 1)
        let id = withUnsafeBytes(of: &body.request_id) { Array($0) }
        let idText = String(decoding: id.prefix { $0 != 0 }, as: UTF8.self)
        XCTAssertEqual(idText, String(repeating: "é", count: 31), "62 bytes: the 32nd é would split at byte 63")
        XCTAssertEqual(id[62], 0)
        XCTAssertEqual(withUnsafeBytes(of: &body.method) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }, "PROPFIND-LONGER")
        XCTAssertEqual(withUnsafeBytes(of: &body.path) { $0.prefix { $0 != 0 }.count }, 255)
    }

    func testTraceIdsAreStoredAsBytesOnlyWhenValid() {
        var context = CrashContext(traceID: "4bf92f3577b34da6a3ce929d0e0e4736", spanID: "00f067aa0ba902b7", parentSpanID: "nothex", sampled: true)
        var body = context.recordBody(flags: 0, key: 1)
        XCTAssertEqual(body.flags & UInt32(CC_REQUEST_HAS_TRACE), UInt32(CC_REQUEST_HAS_TRACE))
        XCTAssertEqual(body.flags & UInt32(CC_REQUEST_HAS_PARENT), 0, "an invalid parent span id is left out")
        XCTAssertEqual(body.flags & UInt32(CC_REQUEST_SAMPLED), UInt32(CC_REQUEST_SAMPLED))
        XCTAssertEqual(withUnsafeBytes(of: &body.trace_id) { Array($0) }.prefix(4), [0x4b, 0xf9, 0x2f, 0x35])
        context.spanID = "short"
        body = context.recordBody(flags: 0, key: 1)
        XCTAssertEqual(body.flags & UInt32(CC_REQUEST_HAS_TRACE), 0, "no valid span: no trace at all")
        XCTAssertTrue(withUnsafeBytes(of: &body.trace_id) { $0.allSatisfy { $0 == 0 } })
    }

    func testAttributesAreWrittenSortedAndWhatDoesNotFitIsLeftOut() {
        let context = CrashContext(attributes: ["tenant": "acme", "b": String(repeating: "x", count: 240), "a": "1"])
        var body = context.recordBody(flags: 0, key: 1)
        let bytes = withUnsafeBytes(of: &body.attributes) { Array($0) }
        let entries = bytes.split(separator: 0, omittingEmptySubsequences: false).prefix { !$0.isEmpty }.map { String(decoding: $0, as: UTF8.self) }
        XCTAssertEqual(entries.first, "a=1")
        XCTAssertEqual(entries.count, 2, "a=1 and b fit (249 bytes with the ending); tenant=acme no longer does: \(entries)")
        XCTAssertTrue(entries.contains("tenant=acme") || entries.contains { $0.hasPrefix("b=") })
    }

    // MARK: The table

    func testMoreThanTheTableHoldsAreRefusedAndFreedSlotsAreReused() {
        var body = CrashContext(requestID: "table").recordBody(flags: 0, key: 0x5000)
        var handles: [UInt64] = []
        for _ in 0..<400 {
            let handle = cc_context_attach(&body)
            if handle == 0 { break }
            handles.append(handle)
        }
        defer { handles.forEach(cc_context_detach) }
        XCTAssertLessThanOrEqual(handles.count, 256)
        XCTAssertGreaterThan(handles.count, 200, "other tests may hold a few slots, not dozens")
        XCTAssertEqual(cc_context_attach(&body), 0, "the table is full")
        let freed = handles.removeLast()
        cc_context_detach(freed)
        cc_context_detach(freed)   // a stale handle changes nothing
        let again = cc_context_attach(&body)
        XCTAssertNotEqual(again, 0)
        XCTAssertNotEqual(again, freed, "a reused slot has a new generation")
        handles.append(again)
        XCTAssertEqual(cc_context_set_route(freed, "/x", 2), -1, "a stale handle sets nothing")
        XCTAssertEqual(cc_context_set_route(again, "/orders/{id}", 12), 0)
    }

    func testSetRouteOutsideARequestSaysSo() {
        XCTAssertFalse(CrashContext.setRoute("/orders/{id}"))
    }

    func testWithValueRunsTheOperationAndBindsAHandleOnlyInside() async throws {
        XCTAssertEqual(CrashContext.handle, 0)
        let inside = await CrashContext.withValue(CrashContext(requestID: "inside")) {
            (CrashContext.handle, CrashContext.setRoute("/inside/{id}"))
        }
        XCTAssertNotEqual(inside.0, 0)
        XCTAssertTrue(inside.1)
        XCTAssertEqual(CrashContext.handle, 0)
        struct Failure: Error {}
        do {
            try await CrashContext.withValue(CrashContext(requestID: "throws")) { throw Failure() }
            XCTFail("the error is rethrown")
        } catch is Failure {}
    }
}
