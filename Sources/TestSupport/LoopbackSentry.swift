// LoopbackSentry.swift — the Sentry sink pointed at a TestHTTPServer, as the reporter's and the
// Sentry sink's tests set it up: a stand-in envelope, retries in milliseconds, and which record a
// request carried.
import Foundation
package import CrashReporterSentry
package import HTTPExchange
import XCTest

package enum LoopbackSentry {
    /// A stand-in envelope: enough to see which record was sent and when.
    package static let envelope: SentryEnvelopeMaker = { _, bytes, name, sentAt, _, _ in
        .success(Array("{\"sent_at\":\"\(Double(sentAt) / 1e9)\"}\n{\"type\":\"attachment\",\"length\":\(bytes.count),\"filename\":\"\(name)\"}\n".utf8) + bytes + [0x0A])
    }

    /// Retries after 10 ms, at most 50 ms apart; a request gives up after 5 s.
    package static func policy() -> UploadPolicy {
        var policy = UploadPolicy()
        policy.initialRetryDelay = .milliseconds(10)
        policy.maxRetryDelay = .milliseconds(50)
        policy.requestTimeout = .seconds(5)
        return policy
    }

    /// The DSN of `server`, project 42, public key `publickey`.
    package static func dsn(_ server: TestHTTPServer) throws -> SentryDSN {
        try XCTUnwrap(SentryDSN("http://publickey@127.0.0.1:\(server.port)/42"))
    }

    /// A Sentry sink sending the stand-in envelope to `server`.
    package static func sink(_ server: TestHTTPServer, policy: UploadPolicy = policy()) throws -> SentrySink {
        SentrySink(dsn: try dsn(server), policy: policy, envelope: envelope)
    }

    /// The file name of the record an envelope carries (its attachment item's header).
    package static func sentName(_ request: TestHTTPServer.Request) -> String? {
        for line in request.bodyBytes.split(separator: 0x0A) where line.first == UInt8(ascii: "{") && line.count < 4096 {
            if let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
               object["type"] as? String == "attachment" { return object["filename"] as? String }
        }
        return nil
    }
}
