// HTTPExchange.swift — one HTTP request, waited for with a bound, and the retry backoff: the one
// place this project talks HTTP (the `/sa` uploader, the Sentry upload, the debuginfod client).
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

public enum HTTPExchange {
    /// What came back. `status` is 0 when there was no answer (network error, timeout, cancelled).
    public struct Answer: Sendable, Equatable {
        public var status: Int
        /// Retry-After, in seconds, when the server sent one.
        public var retryAfter: Double?
        /// Response headers, names lowercased.
        public var headers: [String: String]
        /// The first 200 bytes of the body, or the error.
        public var text: String
        /// The whole body (empty without an answer).
        public var body: Data = Data()
        /// The request timed out (URLSession's timeout, or the bound on the wait).
        public var timedOut = false
    }

    /// Sends `request` and waits at most `wait` seconds (default: its timeout + 5 s; URLSession
    /// enforces the timeouts, this bound only guards against it never answering). `begin` sees
    /// the task before it starts (return `false` to not send at all: the answer is then status 0,
    /// "stopped"); `end` runs after the task finished or was given up.
    public static func send(_ request: URLRequest, session: URLSession, wait: Double? = nil,
                            begin: (URLSessionDataTask) -> Bool = { _ in true }, end: () -> Void = {}) -> Answer {
        let done = DispatchSemaphore(value: 0)
        // @unchecked: written by URLSession's completion handler before the semaphore is signalled,
        // read only after the wait.
        final class Box: @unchecked Sendable { var answer = Answer(status: 0, retryAfter: nil, headers: [:], text: "no response") }
        let box = Box()
        let task = session.dataTask(with: request) { data, response, error in
            if let http = response as? HTTPURLResponse, error == nil {
                var headers: [String: String] = [:]
                for (name, value) in http.allHeaderFields {
                    if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
                }
                box.answer = Answer(status: http.statusCode, retryAfter: headers["retry-after"].flatMap(parseRetryAfter),
                                    headers: headers, text: String(decoding: (data ?? Data()).prefix(200), as: UTF8.self),
                                    body: data ?? Data())
            } else {
                box.answer.text = error.map { "\($0.localizedDescription)" } ?? "no response"
                box.answer.timedOut = (error as? URLError)?.code == .timedOut
            }
            done.signal()
        }
        guard begin(task) else { return Answer(status: 0, retryAfter: nil, headers: [:], text: "stopped") }
        defer { end() }
        task.resume()
        if done.wait(timeout: .now() + (wait ?? request.timeoutInterval + 5)) == .timedOut {
            task.cancel()
            _ = done.wait(timeout: .now() + 5)
            return Answer(status: 0, retryAfter: nil, headers: [:], text: "timed out", timedOut: true)
        }
        return box.answer
    }

    /// Retry-After as seconds: a number of seconds or an HTTP date.
    public static func parseRetryAfter(_ value: String) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed) { return max(0, seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return max(0, date.timeIntervalSinceNow)
    }

    /// Exponential backoff with jitter: after the `failures`-th failure in a row, half to all of
    /// `initial` · 2^(failures−1), at least `retryAfter`, at most `maximum`.
    public static func backoff(failures: Int, initial: Double, maximum: Double, retryAfter: Double? = nil) -> Double {
        let step = initial * pow(2, Double(max(0, min(failures - 1, 30))))
        let jittered = min(maximum, step) * Double.random(in: 0.5...1.0)
        return min(maximum, max(jittered, retryAfter ?? 0))
    }
}
