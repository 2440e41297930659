// CrashContextTraceTests.swift — a server request's trace as the framework integrations take it: the span a tracer made current, else the traceparent header continued.
import CrashCapture
import XCTest

final class CrashContextTraceTests: XCTestCase {
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    let parent = "00f067aa0ba902b7"
    var header: String { "00-\(trace)-\(parent)-01" }

    func testTheHeaderAloneIsContinuedWithANewSpan() {
        var context = CrashContext()
        context.takeTrace(header: header, tracer: nil)
        XCTAssertEqual(context.traceID, trace)
        XCTAssertEqual(context.parentSpanID, parent)
        XCTAssertEqual(context.spanID.count, 16)
        XCTAssertNotEqual(context.spanID, parent)
        XCTAssertTrue(context.sampled)
    }

    func testATracersSpanIsTheRequestsSpanAndTheHeadersParentItsParent() {
        var context = CrashContext()
        context.takeTrace(header: header, tracer: "00-\(trace)-b7ad6b7169203331-00")
        XCTAssertEqual(context.traceID, trace)
        XCTAssertEqual(context.spanID, "b7ad6b7169203331")
        XCTAssertEqual(context.parentSpanID, parent)
        XCTAssertFalse(context.sampled, "the tracer's sampling decision")
    }

    func testATracersSpanInANewTraceHasNoParentFromTheHeader() {
        var context = CrashContext()
        context.takeTrace(header: header, tracer: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        XCTAssertEqual(context.traceID, "0af7651916cd43dd8448eb211c80319c")
        XCTAssertEqual(context.spanID, "b7ad6b7169203331")
        XCTAssertEqual(context.parentSpanID, "")
    }

    func testATracerThatOnlyPassedTheHeaderOnHasNoSpanOfItsOwn() {
        var context = CrashContext()
        context.takeTrace(header: header, tracer: header)
        XCTAssertEqual(context.traceID, trace)
        XCTAssertEqual(context.parentSpanID, parent)
        XCTAssertNotEqual(context.spanID, parent)
    }

    func testInvalidTraceparentsChangeNothing() {
        var context = CrashContext(requestID: "r1")
        context.takeTrace(header: "00-\(String(repeating: "0", count: 32))-\(parent)-01", tracer: "garbage")
        XCTAssertEqual(context, CrashContext(requestID: "r1"))
        context.takeTrace(header: nil, tracer: nil)
        XCTAssertEqual(context, CrashContext(requestID: "r1"))
    }
}
