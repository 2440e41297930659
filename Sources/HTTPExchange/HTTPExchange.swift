// HTTPExchange.swift — one HTTP request, its bounds and cancellation, and the retry backoff: the
// one place this project talks HTTP (the `/sa` uploader, the Sentry upload, the debuginfod client).
//
// The request goes through libcurl, loaded on the first request (CHTTPCurl): no module of this
// package imports FoundationNetworking, whose libcurl and its ~30 libraries every program linking
// the reporter would otherwise load at exec, whether or not it ever sends anything. A program
// that never sends never loads libcurl; one without libcurl.so.4 gets status 0 and an error
// saying so (the callers keep their data and retry, as for any network error). No Foundation
// either: the reporter links this module, and FoundationEssentials alone costs a program that
// does not use it ≈ 2 MiB and a few tenths of a millisecond at every exec.
import CHTTPCurl
#if canImport(Glibc)
import Glibc
#endif

package enum HTTPExchange {
    /// An http or https URL, checked: what a request is sent to. Its text goes to libcurl as is.
    package struct Address: Sendable, Equatable, CustomStringConvertible {
        /// The URL as given.
        package let text: String
        /// "http" or "https", lowercased.
        package let scheme: String

        /// nil unless `text` is `http://` or `https://` (any case), a host, then an optional port,
        /// path, query and fragment, with no space, control character, non-ASCII byte or a
        /// character RFC 3986 leaves out of URLs (`"<>\^`{|}`).
        package init?(_ text: String) {
            let bytes = Array(text.utf8)
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon + 3 <= bytes.count,
                  bytes[colon + 1] == UInt8(ascii: "/"), bytes[colon + 2] == UInt8(ascii: "/") else { return nil }
            let scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
            guard scheme == "http" || scheme == "https" else { return nil }
            let hostEnd = bytes[(colon + 3)...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            guard (hostEnd ?? bytes.count) > colon + 3, bytes[colon + 3] != UInt8(ascii: ":") else { return nil }
            let excluded = Set("\"<>\\^`{|}".utf8)
            guard !bytes.contains(where: { $0 <= 0x20 || $0 >= 0x7F || excluded.contains($0) }) else { return nil }
            self.text = text
            self.scheme = scheme
        }

        package var description: String { text }
    }

    /// One request.
    package struct Request: Sendable {
        package enum Method: String, Sendable { case get = "GET", post = "POST" }

        package var url: Address
        package var method: Method
        /// Sent in this order ("Content-Type", "X-Sentry-Auth", "User-Agent"…).
        package var headers: [(name: String, value: String)]
        /// The POST body.
        package var body: [UInt8]
        /// Time without a byte moving (connecting included) before the request counts as timed
        /// out: what URLSession called the request timeout.
        package var timeout: Duration
        /// The whole exchange, redirects included (default: `timeout` + 5 s).
        package var totalTimeout: Duration?
        /// A longer response body fails the request (status 0).
        package var maxBodyBytes: Int = 64 << 20

        package init(url: Address, method: Method = .get, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
                    timeout: Duration, totalTimeout: Duration? = nil) {
            self.url = url
            self.method = method
            self.headers = headers
            self.body = body
            self.timeout = timeout
            self.totalTimeout = totalTimeout
        }
    }

    /// Why there was no answer.
    package enum Failure: Sendable, Equatable {
        /// Not sent: its cancellation was set before it started.
        case stopped
        /// Aborted in flight by its cancellation.
        case cancelled
        /// Its idle, connect or total timeout passed.
        case timedOut
        /// Anything else: no connection, a reset, TLS, libcurl missing… (the reason is in `text`).
        case network
    }

    /// What came back. `status` is 0 when there was no answer; `failure` then says why.
    package struct Answer: Sendable, Equatable {
        package var status: Int
        /// Retry-After, when the server sent one.
        package var retryAfter: Duration?
        /// Response headers, names lowercased.
        package var headers: [String: String]
        /// The first 200 bytes of the body, or the error.
        package var text: String
        /// The whole body (empty without an answer).
        package var body: [UInt8] = []
        /// Why there was no answer (`nil` when there was one).
        package var failure: Failure?
        /// The request timed out (its idle, connect or total timeout).
        package var timedOut: Bool { failure == .timedOut }

        package init(status: Int, retryAfter: Duration? = nil, headers: [String: String] = [:], text: String, body: [UInt8] = [],
                     failure: Failure? = nil) {
            self.status = status
            self.retryAfter = retryAfter
            self.headers = headers
            self.text = text
            self.body = body
            self.failure = failure
        }
    }

    /// A flag that stops the requests given it: one in flight is aborted within about a second
    /// (status 0, "cancelled"), and one not yet started is not sent (status 0, "stopped"). Once
    /// cancelled it stays cancelled: a sender keeps one for its life and cancels it at its deadline.
    package final class Cancellation: Sendable {
        // A C atomic int (cc_http_cancel) that libcurl's progress callback reads. Sendable: it is
        // only ever read and set through atomic operations, and freed in deinit.
        nonisolated(unsafe) let flag: OpaquePointer

        package init() {
            guard let flag = cc_http_cancel_create() else { fatalError("out of memory") }
            self.flag = flag
        }

        deinit { cc_http_cancel_destroy(flag) }

        /// Stops the request in flight, if any, and every later one.
        package func cancel() { cc_http_cancel_set(flag) }

        package var isCancelled: Bool { cc_http_cancel_is_set(flag) != 0 }
    }

    /// Sends `request` and waits for the answer (on the calling thread: blocking). Never throws:
    /// whatever went wrong is status 0 with the reason in `text`.
    package static func send(_ request: Request, cancellation: Cancellation? = nil) -> Answer {
        if cancellation?.isCancelled == true {
            return Answer(status: 0, retryAfter: nil, headers: [:], text: "stopped", failure: .stopped)
        }
        let total = request.totalTimeout ?? request.timeout + .seconds(5)
        let headerLines = request.headers.map { "\($0.name): \($0.value)" }
        var response = cc_http_response()
        defer { cc_http_response_free(&response) }
        withCStrings(headerLines) { lines in
            request.url.text.withCString { url in
                request.body.withUnsafeBytes { body in
                    var c = cc_http_request()
                    c.url = url
                    c.post = request.method == .post ? 1 : 0
                    c.headers = lines.baseAddress
                    c.header_count = lines.count
                    c.body = body.baseAddress
                    c.body_length = body.count
                    c.total_timeout_ms = milliseconds(total)
                    c.connect_timeout_ms = milliseconds(request.timeout)
                    c.idle_timeout_ms = milliseconds(request.timeout)
                    c.max_body = request.maxBodyBytes
                    c.cancel = cancellation?.flag
                    cc_http_perform(&c, &response)
                }
            }
        }
        guard response.status > 0 else {
            let error = withUnsafeBytes(of: response.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let failure: Failure = response.timed_out != 0 ? .timedOut
                : cancellation?.isCancelled == true ? .cancelled : .network
            return Answer(status: 0, retryAfter: nil, headers: [:], text: error.isEmpty ? "no response" : error, failure: failure)
        }
        let body = response.body.map { Array(UnsafeBufferPointer(start: $0, count: response.body_length)) } ?? []
        let headers = response.headers.map { parseHeaders(String(decoding: UnsafeRawBufferPointer(start: $0, count: response.headers_length), as: UTF8.self)) } ?? [:]
        return Answer(status: response.status, retryAfter: headers["retry-after"].flatMap(parseRetryAfter), headers: headers,
                      text: String(decoding: body.prefix(200), as: UTF8.self), body: body)
    }

    /// A response's header block (status line first, "Name: value" lines) as names lowercased;
    /// a name sent twice has its values joined with ", " (RFC 9110 §5.3).
    static func parseHeaders(_ block: String) -> [String: String] {
        var headers: [String: String] = [:]
        for line in block.split(whereSeparator: { $0 == "\r\n" || $0 == "\n" || $0 == "\r" }).dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = trimmingWhitespace(line[..<colon]).lowercased()
            let value = trimmingWhitespace(line[line.index(after: colon)...])
            guard !name.isEmpty else { continue }
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        return headers
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, duration > .zero else { return 0 }
        return Int(min(seconds, 1_000_000_000)) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }

    /// Calls `body` with the strings as an array of C strings, alive for the call.
    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafeBufferPointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        return copies.map { UnsafePointer($0) }.withUnsafeBufferPointer(body)
    }

    /// Retry-After: a number of seconds or an HTTP date.
    package static func parseRetryAfter(_ value: String) -> Duration? {
        let trimmed = trimmingWhitespace(value)
        if let seconds = Double(trimmed), seconds.isFinite { return .seconds(min(max(0, seconds), 1e9)) }
        guard let date = parseHTTPDate(trimmed) else { return nil }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return .seconds(max(0, min(date - (Double(now.tv_sec) + Double(now.tv_nsec) / 1e9), 1e9)))
    }

    /// An HTTP date, "Wed, 21 Oct 2015 07:28:00 GMT" (RFC 9110's IMF-fixdate; a day of one
    /// digit and the zone UTC are taken too), as seconds since the epoch; nil for anything else.
    static func parseHTTPDate(_ text: String) -> Double? {
        let fields = text.split(separator: " ")
        guard fields.count == 6, fields[0].count == 4, fields[0].hasSuffix(","),
              ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].contains(fields[0].dropLast()),
              (1...2).contains(fields[1].count), let day = Int32(fields[1]), (1...31).contains(day),
              let month = months.firstIndex(of: String(fields[2])),
              fields[3].count == 4, let year = Int32(fields[3]),
              fields[5] == "GMT" || fields[5] == "UTC" else { return nil }
        let time = fields[4].split(separator: ":", omittingEmptySubsequences: false)
        guard time.count == 3, time.allSatisfy({ $0.count == 2 }), let hour = Int32(time[0]), let minute = Int32(time[1]),
              let second = Int32(time[2]), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = Int32(month)
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        return Double(timegm(&parts))
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `text` without the whitespace at its ends that Foundation's `CharacterSet.whitespaces`
    /// holds (spaces of every kind and tabs; not line breaks): what HTTP's optional whitespace
    /// around header values is, and more.
    package static func trimmingWhitespace(_ text: some StringProtocol) -> String {
        let isSpace = { (scalar: Unicode.Scalar) in scalar == "\t" || scalar.properties.generalCategory == .spaceSeparator }
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isSpace($0) }), let last = scalars.lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: scalars[first...last])
        return String(kept)
    }

    /// `bytes` gzip-compressed (RFC 1952), for a `Content-Encoding: gzip` body: zlib is loaded
    /// with dlopen on the first call, as libcurl is (CHTTPCurl's cc_gzip.c). nil when zlib cannot
    /// be loaded or fails: send the body as it is then.
    package static func gzip(_ bytes: [UInt8]) -> [UInt8]? {
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        let done = bytes.withUnsafeBytes { cc_http_gzip($0.baseAddress, $0.count, &output, &length) }
        guard done == 1, let output else { return nil }
        defer { cc_http_gzip_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: length))
    }

    /// Exponential backoff with jitter: after the `failures`-th failure in a row, half to all of
    /// `initial` · 2^(failures−1), at least `retryAfter`, at most `maximum`.
    package static func backoff(failures: Int, initial: Duration, maximum: Duration, retryAfter: Duration? = nil) -> Duration {
        let step = initial * (1 << max(0, min(failures - 1, 30)))
        let jittered = min(maximum, step) * Double.random(in: 0.5...1.0)
        return min(maximum, max(jittered, retryAfter ?? .zero))
    }
}
