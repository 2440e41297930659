// SentryRequestTests.swift — the request a crash killed, in the Sentry envelope of real crashes of
// the harness's request scenarios: the trace context, the request interface, the tag, the others
// in flight and the header's dynamic sampling context, read by sentry_sdk and normalized by Relay;
// what the data policy keeps of the query and the key/values, in the event and the attachment.
import CrashCapture
import CrashRecordFormat
import CrashScenarios
import CrashSentry
import Foundation
import TestSupport
import XCTest

final class SentryRequestTests: XCTestCase {
    static let dsnKey = "c0ffee5eed0123456789abcdef012345"
    static let dsn = "https://\(dsnKey)@o42.ingest.sentry.io/7"

    /// A crash of `scenario`: its record, its bytes and its envelope as a sink sends it
    /// (`redaction`: what the event and the attached record keep; the DSN's public key).
    func envelope(_ scenario: String, redaction: RecordRedaction = RecordRedaction(),
                  beforeSend: (@Sendable (String) -> String?)? = nil) throws -> (record: CrashRecord, bytes: [UInt8], directory: String) {
        let directory = try Scratch.directory("sentry-" + scenario)
        let path = try crash(scenario, into: directory)
        let raw = [UInt8](try XCTUnwrap(FileManager.default.contents(atPath: path)))
        let record = try CrashRecordReader.parse(raw)
        let bytes = try SentryEnvelope.outgoing(
            record: record, rawRecord: raw, fileName: (path as NSString).lastPathComponent, eventID: SentryEnvelope.eventID(rawRecord: raw),
            sentAt: Int64(Date().timeIntervalSince1970 * 1e9), minimised: RecordMinimisation(redaction: redaction, hostDetails: true), publicKey: Self.dsnKey,
            beforeSend: beforeSend).get()
        return (record, bytes, directory)
    }

    /// The attachment's bytes: the envelope's last item (`summary` is sentry_check.py's).
    func attachment(_ bytes: [UInt8], summary: [String: Any]) throws -> [UInt8] {
        let items = try XCTUnwrap(summary["items"] as? [[String: Any]])
        XCTAssertEqual(items.last?["type"] as? String, "attachment")
        let length = try XCTUnwrap(items.last?["length"] as? Int)
        return Array(bytes[(bytes.count - 1 - length) ..< (bytes.count - 1)])
    }

    func contains(_ bytes: [UInt8], _ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard needle.count <= bytes.count else { return false }
        return (0 ... bytes.count - needle.count).contains { bytes[$0 ..< $0 + needle.count].elementsEqual(needle) }
    }

    /// 50 requests in flight, req-37 crashes: the event names exactly req-37's trace, span,
    /// parent span, method and path, as Relay keeps them; the header's trace is the event's; the
    /// others are in `extra`, req-37 not among them; sentry_sdk writes the same trace header.
    func testTheEventOfACrashServingARequestNamesItsTraceAndRequestAndListsTheOthers() throws {
        let (record, bytes, directory) = try envelope("request-among-fifty")
        let crashed = try XCTUnwrap(record.requests?.crashed)
        let expected = harnessRequestContext(37)
        XCTAssertEqual(crashed.requestID, "req-37")
        let summary = try check(bytes, in: directory)
        XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(summary["errors"] ?? "")")
        let event = try XCTUnwrap(summary["normalized"] as? [String: Any])

        // contexts.trace, as Relay keeps it.
        let trace = try XCTUnwrap((event["contexts"] as? [String: Any])?["trace"] as? [String: Any])
        XCTAssertEqual(trace["trace_id"] as? String, expected.traceID)
        XCTAssertEqual(trace["trace_id"] as? String, "4bf92f3577b34da6a3ce929d00000025")
        XCTAssertEqual(trace["span_id"] as? String, crashed.spanID)
        XCTAssertEqual((trace["span_id"] as? String)?.count, 16)
        XCTAssertEqual(trace["parent_span_id"] as? String, expected.parentSpanID)
        XCTAssertEqual(trace["op"] as? String, "http.server")
        XCTAssertEqual(trace["status"] as? String, "internal_error")

        // The request interface: method and the path, relative, as Relay keeps it; nothing else.
        let request = try XCTUnwrap(event["request"] as? [String: Any])
        XCTAssertEqual(request["method"] as? String, expected.method)
        XCTAssertEqual(request["url"] as? String, "/orders/37")
        XCTAssertEqual(Set(request.keys), ["method", "url"], "\(request)")

        // The tag (Relay's normalized tags are pairs).
        let tags = try XCTUnwrap(event["tags"] as? [[String]])
        XCTAssertEqual(tags.filter { $0.first == "request_id" }.map { $0.last }, ["req-37"])

        // The others: 32 of the 49, req-37 not among them, each whole (its own trace), bounded.
        let extra = try XCTUnwrap(event["extra"] as? [String: Any])
        let others = try XCTUnwrap(extra["requests_in_flight"] as? [[String: Any]])
        XCTAssertEqual(others.count, 32)
        XCTAssertEqual(extra["requests_in_flight_count"] as? String, "50")
        XCTAssertFalse(others.contains { $0["id"] as? String == "req-37" })
        XCTAssertFalse(others.contains { $0["trace_id"] as? String == expected.traceID })
        for other in others {
            let id = try XCTUnwrap(other["id"] as? String)
            let index = try XCTUnwrap(Int(id.dropFirst(4)), id)
            XCTAssertEqual(other["trace_id"] as? String, harnessRequestContext(index).traceID, id)
            XCTAssertEqual(other["method"] as? String, harnessRequestContext(index).method, id)
            XCTAssertEqual(other["route"] as? String, "/orders/{id}", id)
            XCTAssertEqual(Set(other.keys), ["id", "method", "route", "trace_id", "age"], id)
            let age = try XCTUnwrap(other["age"] as? Double, id)
            XCTAssertTrue((0 ..< 60).contains(age), "\(id): \(age)")
        }
        XCTAssertEqual(others.compactMap { $0["id"] as? String }, record.requests?.others.map(\.requestID), "most recent first, as recorded")
        // Key/values stay out by default.
        XCTAssertNil(extra["request_attributes"])

        // The envelope header's trace: the event's trace id, the DSN's key, the event's release.
        let headers = try XCTUnwrap(summary["headers"] as? [String: Any])
        let header = try XCTUnwrap(headers["trace"] as? [String: String], "\(headers)")
        XCTAssertEqual(header["trace_id"], trace["trace_id"] as? String)
        XCTAssertEqual(header["public_key"], Self.dsnKey)
        XCTAssertEqual(header["release"], event["release"] as? String)
        XCTAssertEqual(header["sampled"], "true")
        XCTAssertNil(header["environment"], "the event has no environment")

        // sentry_sdk's own header for an error in a request that continued the same trace: every
        // key we write is one it writes, with the same value.
        let oracle = try Oracles.run("sentry_dsc.py", [Self.dsn, try XCTUnwrap(event["release"] as? String), harnessTraceparent(37)])
        let theirs = try XCTUnwrap(((try JSONSerialization.jsonObject(with: Data(oracle.utf8)) as? [String: Any])?["headers"]
                                        as? [String: Any])?["trace"] as? [String: String])
        for (key, value) in header {
            XCTAssertEqual(theirs[key], value, "\(key): sentry_sdk writes \(theirs)")
        }
    }

    /// A detached task's crash names no request (the record says none): no trace context, no
    /// request interface, no trace header, no tag; the requests in flight are still listed.
    func testAnEventOfACrashServingNoNamedRequestHasNoTraceRequestOrTag() throws {
        let (record, bytes, directory) = try envelope("request-detached-task")
        XCTAssertNil(record.requests?.crashed)
        let summary = try check(bytes, in: directory)
        XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(summary["errors"] ?? "")")
        let sent = try XCTUnwrap(summary["event"] as? [String: Any])
        XCTAssertNil((sent["contexts"] as? [String: Any])?["trace"])
        let event = try XCTUnwrap(summary["normalized"] as? [String: Any])
        // Relay gives an event without a trace one of its own, made from the event id (status
        // unknown): not any request's.
        if let trace = (event["contexts"] as? [String: Any])?["trace"] as? [String: Any] {
            XCTAssertEqual(trace["trace_id"] as? String, event["event_id"] as? String, "\(trace)")
            XCTAssertEqual(trace["status"] as? String, "unknown", "\(trace)")
        }
        XCTAssertNil(sent["request"])
        XCTAssertNil(event["request"])
        XCTAssertNil((summary["headers"] as? [String: Any])?["trace"])
        XCTAssertFalse((event["tags"] as? [[String]] ?? []).contains { $0.first == "request_id" })
        let extra = try XCTUnwrap(event["extra"] as? [String: Any])
        XCTAssertEqual((extra["requests_in_flight"] as? [Any])?.count, 5)
        XCTAssertEqual(extra["requests_in_flight_count"] as? String, "5")
    }

    /// The query (a token) and the key/values leave only where the policy keeps them: by default
    /// neither the event nor the attached record holds them, and the record reads as the original
    /// but for those two fields; each opt-in brings back its own, in the event (as Relay keeps
    /// it) and in the record.
    func testTheQueryAndTheKeyValuesLeaveOnlyWhereThePolicyKeepsThem() throws {
        let token = "s3cr3t-query-token"
        XCTAssertTrue(harnessQuery.contains(token))
        for (name, redaction) in [("default", RecordRedaction()), ("query", RecordRedaction(requestQuery: true)),
                                  ("attributes", RecordRedaction(requestAttributes: true))] {
            let (record, bytes, directory) = try envelope("request-with-query", redaction: redaction)
            let crashed = try XCTUnwrap(record.requests?.crashed, name)
            XCTAssertEqual(crashed.query, harnessQuery, "the record on disk holds it")
            XCTAssertFalse(crashed.attributes.isEmpty)
            let summary = try check(bytes, in: directory)
            XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(name): \(summary["errors"] ?? "")")
            let event = try XCTUnwrap(summary["normalized"] as? [String: Any])
            let request = try XCTUnwrap(event["request"] as? [String: Any], name)
            let attached = try CrashRecordReader.parse(try attachment(bytes, summary: summary))
            let sentCrashed = try XCTUnwrap(attached.requests?.crashed, name)
            let extra = event["extra"] as? [String: Any] ?? [:]

            XCTAssertEqual(contains(bytes, token), redaction.requestQuery, "\(name): the token in the envelope")
            if redaction.requestQuery {
                XCTAssertEqual(request["query_string"] as? [[String]], [["token", token], ["page", "2"]], name)
                XCTAssertEqual(sentCrashed.query, harnessQuery, name)
            } else {
                XCTAssertNil(request["query_string"], name)
                XCTAssertEqual(sentCrashed.query, "", name)
            }
            if redaction.requestAttributes {
                XCTAssertEqual(extra["request_attributes"] as? [String: String], Dictionary(uniqueKeysWithValues: crashed.attributes.map { ($0.key, $0.value) }))
                XCTAssertTrue(sentCrashed.attributes.elementsEqual(crashed.attributes) { $0 == $1 }, name)
            } else {
                XCTAssertNil(extra["request_attributes"], name)
                XCTAssertTrue(sentCrashed.attributes.isEmpty, name)
                XCTAssertTrue((attached.requests?.others ?? []).allSatisfy { $0.attributes.isEmpty }, name)
            }
            // Everything else of the requests reads as on disk.
            func blank(_ request: CrashRequest) -> CrashRequest {
                var request = request
                if !redaction.requestQuery { request.query = "" }
                if !redaction.requestAttributes { request.attributes = [] }
                return request
            }
            var expected = try XCTUnwrap(record.requests)
            expected.crashed = expected.crashed.map(blank)
            expected.others = expected.others.map(blank)
            XCTAssertEqual(attached.requests, expected, name)
        }
    }

    /// The header's trace follows the event as sent: a `SentryOptions.beforeSend` that takes the trace
    /// context out leaves no trace header.
    func testAHookThatRemovesTheTraceContextLeavesNoTraceHeader() throws {
        let (_, bytes, directory) = try envelope("request-child-task", beforeSend: { event in
            guard var object = try? JSONSerialization.jsonObject(with: Data(event.utf8)) as? [String: Any],
                  var contexts = object["contexts"] as? [String: Any] else { return event }
            contexts["trace"] = nil
            object["contexts"] = contexts
            return (try? JSONSerialization.data(withJSONObject: object)).map { String(decoding: $0, as: UTF8.self) }
        })
        let summary = try check(bytes, in: directory)
        XCTAssertNil((summary["headers"] as? [String: Any])?["trace"])
        XCTAssertEqual(((summary["normalized"] as? [String: Any])?["tags"] as? [[String]])?.first { $0.first == "request_id" }?.last, "req-7")
    }

    // MARK: unit level

    /// Work that is not an HTTP request (`method` "grpc") gets its word as `op` and no request
    /// interface; a tag value loses its control characters; an empty id gives no tag.
    func testWorkThatIsNotAnHTTPRequestHasItsOwnOpAndNoRequestInterface() throws {
        let traceID = "4bf92f3577b34da6a3ce929d0000abcd", spanID = "00f067aa0ba9abcd"
        func record(method: String, id: String) -> CrashRecord {
            let request = CrashRequest(requestID: id, method: method, route: "/pkg.Orders/Get", path: "/pkg.Orders/Get?x=1",
                                       traceID: traceID, spanID: spanID, sampled: true)
            return CrashRecord(signal: SignalInfo(number: SIGSEGV, name: "SIGSEGV"),
                               threads: [CrashThread(tid: 1, crashed: true, framesFromSignalContext: true, frames: [0x1000])],
                               requests: RequestsInFlight(status: .task(1), crashed: request, inFlight: 1))
        }
        func event(method: String, id: String) -> SentryEvent {
            SentryEnvelope.event(record: record(method: method, id: id), eventID: "0123456789abcdef0123456789abcdef")
        }
        let grpc = event(method: "grpc", id: "a\nb\u{7}")
        XCTAssertEqual(grpc.contexts.trace?.op, "grpc")
        XCTAssertNil(grpc.request)
        XCTAssertEqual(grpc.tags["request_id"], "a b")
        XCTAssertNil(grpc.contexts.trace?.parentSpanID)
        let get = event(method: "get", id: "")
        XCTAssertEqual(get.contexts.trace?.op, "http.server")
        XCTAssertEqual(get.request?.method, "GET")
        XCTAssertEqual(get.request?.url, "/pkg.Orders/Get", "the path cut at `?`")
        XCTAssertNil(get.request?.queryString)
        XCTAssertNil(get.tags["request_id"])
        let directory = try Scratch.directory("sentry-grpc")
        for (method, id) in [("grpc", "a\nb\u{7}"), ("get", "")] {
            let bytes = SentryEnvelope.make(record: record(method: method, id: id), rawRecord: [], fileName: "r.ccrec",
                                            eventID: "0123456789abcdef0123456789abcdef", sentAt: nil, publicKey: Self.dsnKey)
            let summary = try check(bytes, in: directory)
            XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(summary["errors"] ?? "")")
            XCTAssertEqual(((summary["headers"] as? [String: Any])?["trace"] as? [String: String])?["trace_id"], traceID)
        }
    }
}
