// HTTPExchangeTests.swift — HTTP without FoundationNetworking: a program linking the reporter
// needs no libcurl (readelf -d, ldd) and opens it only when it sends (LD_DEBUG=files); redirects and
// proxies are honoured as URLSession honoured them; Retry-After and repeated headers are read as HTTP
// says. Real child processes, a real server on 127.0.0.1.
// (What the uploader does without libcurl is SensorsTrackingTests' UploaderTests.)
import Foundation
@testable import HTTPExchange
import ProcessSpawning
import TestSupport
import XCTest

final class HTTPExchangeTests: XCTestCase {
    /// What a program must not need before it sends anything.
    static let forbidden = ["libcurl", "libFoundationNetworking"]

    private func offenders(_ lines: [String]) -> [String] {
        lines.filter { line in Self.forbidden.contains { line.contains($0) } }
    }

    func testAProgramLinkingTheReporterNeedsNeitherLibcurlNorFoundationNetworking() throws {
        // The debug crash-harness links every module: the reporter, the uploader, the Sentry
        // upload, symbolication.
        let readelf = try XCTUnwrap(Tools.find("readelf"), "binutils' readelf is needed")
        let dynamic = try Tools.output(readelf, ["-d", Harness.path])
        let needed = dynamic.split(separator: "\n").filter { $0.contains("(NEEDED)") }.map(String.init)
        XCTAssertTrue(needed.contains { $0.contains("libFoundation") }, "readelf -d listed no Foundation: \(dynamic.prefix(800))")
        XCTAssertEqual(offenders(needed), [])
        let closure = try Tools.output(try XCTUnwrap(Tools.find("ldd")), [Harness.path])
        let libraries = closure.split(separator: "\n").map(String.init)
        XCTAssertTrue(libraries.contains { $0.contains("libFoundationEssentials") }, "ldd listed no Foundation: \(closure.prefix(800))")
        XCTAssertEqual(offenders(libraries), [])
    }

    /// The objects the loader opened while `crash-harness emit` ran, by LD_DEBUG=files.
    private func librariesOpened(emitting arguments: [String], in directory: String) throws -> (ChildProcess, [String]) {
        var environment = Harness.environment
        environment["LD_DEBUG"] = "files"
        let child = try ChildProcess.run(Harness.path, ["emit"] + arguments, environment: environment,
                                         stdout: directory + "/stdout", stderr: directory + "/stderr", timeout: 60)
        let log = try String(contentsOfFile: directory + "/stderr", encoding: .utf8)
        return (child, log.split(separator: "\n").filter { $0.contains("file=") }.map(String.init))
    }

    func testLibcurlIsLoadedOnlyWhenARequestIsMade() throws {
        let quiet = try Scratch.directory("libcurl-quiet")
        let (stored, openedStoring) = try librariesOpened(emitting: ["--count", "3", "--store", quiet + "/s.sqlite"], in: quiet)
        XCTAssertEqual(stored.ending, .exited(0))
        XCTAssertTrue(openedStoring.contains { $0.contains("libFoundationEssentials") }, "\(openedStoring.prefix(40))")
        XCTAssertEqual(offenders(openedStoring), [], "nothing to send: no libcurl")

        let server = try TestHTTPServer()
        let sending = try Scratch.directory("libcurl-sending")
        let (sent, openedSending) = try librariesOpened(
            emitting: ["--count", "3", "--store", sending + "/s.sqlite", "--endpoint", server.url.absoluteString], in: sending)
        XCTAssertEqual(sent.ending, .exited(0))
        XCTAssertEqual(server.acceptedEvents.filter { $0.event == "HarnessEvent" }.count, 3)
        // Loaded by dlopen ("dynamically loaded by"), not as anything's dependency at exec.
        let curl = openedSending.filter { $0.contains("file=libcurl.so.4") }
        XCTAssertFalse(curl.isEmpty, "LD_DEBUG=files showed no libcurl although the events were sent")
        XCTAssertTrue(curl.contains { $0.contains("dynamically loaded by") }, "\(curl)")
        XCTAssertFalse(curl.contains { $0.contains("needed by") }, "\(curl)")
    }

    func testAnUploadGoesThroughTheProxyThatHttpProxyNames() throws {
        // The endpoint's host does not resolve (.invalid, RFC 6761): only the proxy can deliver.
        let proxy = try TestHTTPServer()
        let directory = try Scratch.directory("proxy")
        let child = try Harness.emit(["--count", "2", "--store", directory + "/s.sqlite", "--endpoint", "http://sensors.invalid/sa?project=p",
                                      "--flush-timeout", "20"],
                                     environment: ["http_proxy": "http://127.0.0.1:\(proxy.port)", "no_proxy": ""])
        XCTAssertEqual(child.ending, .exited(0))
        // A proxy is sent the absolute URL.
        XCTAssertTrue(proxy.allRequests.allSatisfy { $0.path == "http://sensors.invalid/sa?project=p" }, "\(proxy.allRequests.map(\.path))")
        XCTAssertEqual(proxy.acceptedEvents.filter { $0.event == "HarnessEvent" }.compactMap(\.seq).sorted(), [0, 1])
    }

    func testARedirectIsFollowedAndTheFinalAnswerIsReturned() throws {
        let server = try TestHTTPServer { request in
            request.path == "/moved" ? .status(302, headers: ["Location": "/final", "X-Step": "redirect"])
                : .status(200, headers: ["X-Step": "final", "Retry-After": "7"])
        }
        let url = try XCTUnwrap(HTTPExchange.Address("http://127.0.0.1:\(server.port)/moved"))
        let answer = HTTPExchange.send(HTTPExchange.Request(url: url, headers: [("User-Agent", "test")], timeout: .seconds(10)))
        XCTAssertEqual(answer.status, 200, answer.text)
        XCTAssertEqual(answer.headers["x-step"], "final", "the redirect's own headers are not kept")
        XCTAssertEqual(answer.retryAfter, .seconds(7))
        XCTAssertEqual(answer.body, Array("ok".utf8))
        XCTAssertEqual(server.allRequests.map(\.path), ["/moved", "/final"])
        XCTAssertEqual(server.allRequests.map { $0.headers["user-agent"] }, ["test", "test"])
    }

    func testACancelledExchangeIsNotSent() throws {
        let server = try TestHTTPServer()
        let cancellation = HTTPExchange.Cancellation()
        cancellation.cancel()
        let answer = HTTPExchange.send(HTTPExchange.Request(url: try XCTUnwrap(HTTPExchange.Address(server.url.absoluteString)), method: .post, timeout: .seconds(10)), cancellation: cancellation)
        XCTAssertEqual(answer.status, 0)
        XCTAssertEqual(answer.failure, .stopped)
        XCTAssertEqual(server.allRequests.count, 0)
    }

    /// An address is taken only when it is an http(s) URL with a host; every one taken is one
    /// Foundation's URL parser reads the same way (scheme and host), so nothing it sent to is lost.
    func testAnAddressIsAnHTTPURLWithAHostAsFoundationReadsIt() throws {
        let taken = ["http://127.0.0.1:9/1", "https://o1.ingest.sentry.io/api/4505/envelope/", "HTTP://Example.com",
                     "http://[::1]:4318/v1/logs", "https://k@host.example/api/7/envelope/?a=1&b=%20#top", "http://h"]
        for text in taken {
            let address = try XCTUnwrap(HTTPExchange.Address(text), text)
            XCTAssertEqual(address.text, text)
            let url = try XCTUnwrap(URL(string: text), "Foundation refuses \(text)")
            XCTAssertEqual(address.scheme, url.scheme?.lowercased(), text)
            XCTAssertNotNil(url.host, text)
        }
        let refused = ["", "ftp://example.com/x", "http:/example.com", "http://", "http:///path", "http://:80/x", "http://?q",
                       "http://a b/", "http://a/\n", "http://\u{e4}.example/", "http://a/\"x\"", "http://a/{x}", "mailto:x@example.com",
                       "://example.com", "example.com", "https//example.com", " http://example.com"]
        for text in refused { XCTAssertNil(HTTPExchange.Address(text), text.debugDescription) }
    }

    func testRetryAfterAcceptsSecondsAndHTTPDates() {
        XCTAssertEqual(HTTPExchange.parseRetryAfter("7"), .seconds(7))
        XCTAssertEqual(HTTPExchange.parseRetryAfter(" 0 "), .zero)
        XCTAssertNil(HTTPExchange.parseRetryAfter("soon"))
        let later = HTTPExchange.parseRetryAfter("Wed, 21 Oct 2099 07:28:00 GMT")
        XCTAssertNotNil(later)
        XCTAssertGreaterThan(later ?? .zero, .seconds(1000))
    }

    func testHeadersAreLowercasedAndRepeatsJoined() {
        let headers = HTTPExchange.parseHeaders("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Sentry-Rate-Limits: 60:error\r\n"
                                                + "x-sentry-rate-limits: 10::org\r\nBroken line\r\n\r\n")
        XCTAssertEqual(headers, ["content-type": "text/plain", "x-sentry-rate-limits": "60:error, 10::org"])
    }
}
