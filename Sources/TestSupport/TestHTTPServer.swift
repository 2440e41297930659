// TestHTTPServer.swift — the one HTTP/1.1 server on 127.0.0.1 (port 0) that every test talks to.
//
// Each connection gets one request and one answer, then is closed. What to answer is decided
// by a policy closure from the request (its index, method, path, headers, body): a status with
// headers and a body of any bytes, `.reset` (the connection closed with an RST), or `.silence`
// (the request read and never answered). The policy runs on the connection's own thread, so a
// policy that sleeps delays that answer only. Shared by the /sa upload tests (which decode Sensors
// bodies), the Sentry upload tests (which parse envelopes with Sentry's own code) and the
// debuginfod client tests (which are served garbage, the wrong file, or nothing).
package import Foundation
#if canImport(Glibc)
import Glibc
#endif

// @unchecked: the request log, the stopped flag and the silent connections are guarded by `lock`.
package final class TestHTTPServer: @unchecked Sendable {
    package struct Request: Sendable {
        package let index: Int
        /// "GET", "POST", …
        package let method: String
        /// The request target as sent: a path ("/sa?project=test"), or an absolute URL to a proxy.
        package let path: String
        /// Header names lowercased.
        package let headers: [String: String]
        package let bodyBytes: [UInt8]
        package var body: String { String(decoding: bodyBytes, as: UTF8.self) }
        /// The status it was answered with (nil: reset, or not answered yet).
        package internal(set) var answeredStatus: Int?
    }

    package enum Answer: Sendable {
        /// This status, these headers and this body (`ok` unless given), then the connection is closed.
        case status(Int, headers: [String: String] = [:], body: [UInt8] = Array("ok".utf8))
        /// The connection is closed with an RST instead of an answer.
        case reset
        /// No answer: the connection stays open until the client closes it or the server stops.
        case silence
    }

    private let lock = NSLock()
    private let listenFD: Int32
    private var requests: [Request] = []
    private var stopped = false
    private var silent: Set<Int32> = []
    private let policy: @Sendable (Request) -> Answer
    package private(set) var port: UInt16 = 0

    /// `http://127.0.0.1:PORT`, with no path.
    package var origin: String { "http://127.0.0.1:\(port)" }

    /// A Sensors-style `/sa` URL on this server.
    package var url: URL { URL(string: origin + "/sa?project=test")! }

    /// Starts listening on 127.0.0.1 at a port the kernel picks; every request is answered as
    /// `policy` says (200 `ok` by default). Throws when no socket can be bound.
    package init(policy: @escaping @Sendable (Request) -> Answer = { _ in .status(200) }) throws {
        self.policy = policy
        listenFD = try Self.boundSocket()
        do {
            guard listen(listenFD, 64) == 0 else { throw POSIXError(.EADDRINUSE) }
            port = try Self.localPort(listenFD)
        } catch {
            close(listenFD)
            throw error
        }
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    /// Stops listening (a new connection is refused) and ends the connections left without an
    /// answer. Harmless twice.
    package func stop() {
        lock.lock()
        defer { lock.unlock() }
        let wasStopped = stopped
        stopped = true
        if !wasStopped {
            shutdown(listenFD, Int32(SHUT_RDWR))
            close(listenFD)
        }
        // Under the lock: a connection's thread closes it only after taking it out of `silent`.
        // The thread then sees the end of input and closes it.
        for connection in silent { shutdown(connection, Int32(SHUT_RDWR)) }
    }

    /// A port on 127.0.0.1 that nothing listens on: bound to port 0 and released at once. For a
    /// server started on it later (debuginfod), or a connection to be refused.
    package static func unusedPort() throws -> UInt16 {
        let fd = try boundSocket()
        defer { close(fd) }
        return try localPort(fd)
    }

    /// A TCP socket bound to 127.0.0.1 at a port the kernel picks.
    private static func boundSocket() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        return fd
    }

    /// The port `fd` is bound to.
    private static func localPort(_ fd: Int32) throws -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw POSIXError(.EIO) }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Every request received, in arrival order.
    package var allRequests: [Request] { lock.withLock { requests } }

    private func acceptLoop() {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            let thread = Thread { [self] in handle(fd) }
            thread.start()
        }
    }

    private func handle(_ fd: Int32) {
        defer { close(fd) }
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        var headerEnd: Int?
        while headerEnd == nil {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return }
            buffer.append(contentsOf: chunk[0..<n])
            headerEnd = Self.find(buffer, Array("\r\n\r\n".utf8))
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self)
        let lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.first?.split(separator: " ").map(String.init) ?? []
        let method = requestLine.first ?? ""
        let path = requestLine.dropFirst().first ?? "/"
        var contentLength = 0
        var expectContinue = false
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            headers[parts[0].lowercased()] = parts[1]
            if parts[0].lowercased() == "content-length" { contentLength = Int(parts[1]) ?? 0 }
            if parts[0].lowercased() == "expect", parts[1].lowercased() == "100-continue" { expectContinue = true }
        }
        var body = Array(buffer[(headerEnd! + 4)...])
        if expectContinue && body.count < contentLength { Self.sendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n") }
        while body.count < contentLength {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return }
            body.append(contentsOf: chunk[0..<n])
        }
        let request: Request = lock.withLock {
            let request = Request(index: requests.count, method: method, path: path, headers: headers, bodyBytes: body, answeredStatus: nil)
            requests.append(request)
            return request
        }
        let answer = policy(request)
        switch answer {
        case .reset:
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        case let .status(code, headers, body):
            lock.withLock { requests[request.index].answeredStatus = code }
            var response = "HTTP/1.1 \(code) Test\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
            for (key, value) in headers { response += "\(key): \(value)\r\n" }
            Self.sendAll(fd, Array((response + "\r\n").utf8) + body)
        case .silence:
            let open = lock.withLock {
                if !stopped { silent.insert(fd) }
                return !stopped
            }
            // Read (and drop) until the client closes or stop() shuts the connection down.
            while open, recv(fd, &chunk, chunk.count, 0) > 0 {}
            lock.withLock { _ = silent.remove(fd) }
        }
    }

    private static func sendAll(_ fd: Int32, _ text: String) {
        sendAll(fd, Array(text.utf8))
    }

    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    private static func find(_ haystack: [UInt8], _ needle: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }
}
