// TestHTTPServer.swift — a real HTTP/1.1 server on 127.0.0.1 (port 0) for the upload tests.
//
// Each connection gets one request and one answer, then is closed. What to answer is decided
// by a policy closure from the request (its index, path, headers, body); `.reset` closes the
// connection with an RST instead of answering. Shared by the /sa upload tests (which decode
// Sensors bodies) and the Sentry upload tests (which parse envelopes with Sentry's own code).
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// @unchecked: the request log and the stopped flag are guarded by `lock`.
public final class TestHTTPServer: @unchecked Sendable {
    public struct Request: Sendable {
        public let index: Int
        public let path: String
        /// Header names lowercased.
        public let headers: [String: String]
        public let bodyBytes: [UInt8]
        public var body: String { String(decoding: bodyBytes, as: UTF8.self) }
        /// The status it was answered with (nil: reset, or not answered yet).
        public internal(set) var answeredStatus: Int?
    }

    public enum Answer: Sendable {
        case status(Int, headers: [String: String] = [:])
        case reset
    }

    private let lock = NSLock()
    private var listenFD: Int32 = -1
    private var requests: [Request] = []
    private var stopped = false
    private let policy: @Sendable (Request) -> Answer
    public private(set) var port: UInt16 = 0

    /// A Sensors-style `/sa` URL on this server.
    public var url: URL { URL(string: "http://127.0.0.1:\(port)/sa?project=test")! }

    public init(policy: @escaping @Sendable (Request) -> Answer = { _ in .status(200) }) throws {
        self.policy = policy
        listenFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listenFD >= 0 else { throw POSIXError(.EIO) }
        var one: Int32 = 1
        setsockopt(listenFD, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listenFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listenFD, 64) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listenFD, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    public func stop() {
        lock.lock()
        let fd = listenFD
        let wasStopped = stopped
        stopped = true
        lock.unlock()
        if !wasStopped {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
    }

    /// Every request received, in arrival order.
    public var allRequests: [Request] { lock.withLock { requests } }

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
        let path = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
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
            let request = Request(index: requests.count, path: path, headers: headers, bodyBytes: body, answeredStatus: nil)
            requests.append(request)
            return request
        }
        let answer = policy(request)
        switch answer {
        case .reset:
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        case let .status(code, headers):
            lock.withLock { requests[request.index].answeredStatus = code }
            var response = "HTTP/1.1 \(code) Test\r\nContent-Length: 2\r\nConnection: close\r\n"
            for (key, value) in headers { response += "\(key): \(value)\r\n" }
            Self.sendAll(fd, response + "\r\nok")
        }
    }

    private static func sendAll(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
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
