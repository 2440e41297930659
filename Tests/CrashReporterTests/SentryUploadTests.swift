// SentryUploadTests.swift — the Sentry upload's guarantees against a real HTTP server on
// 127.0.0.1: in order, retry with backoff, 429 and X-Sentry-Rate-Limits honoured, 413 and other
// 4xx quarantined and counted, records deleted only once Sentry and the store both have them.
// (What the envelope holds is CrashSentry's, checked against Sentry's own parser elsewhere.)
@testable import CrashReporter
import CrashRecordFormat
@testable import CrashTracking
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class SentryUploadTests: XCTestCase {
    static let dsn = "http://publickey@127.0.0.1:PORT/42"

    /// A stand-in envelope: enough to see which record was sent and when.
    static let envelope: SentryEnvelopeMaker = { _, bytes, name, sentAt in
        Array("{\"sent_at\":\"\(sentAt.timeIntervalSince1970)\"}\n{\"type\":\"attachment\",\"length\":\(bytes.count),\"filename\":\"\(name)\"}\n".utf8) + bytes + [0x0A]
    }

    /// `count` real records (the debug harness crashing `null-dereference` into `directory`).
    func records(_ count: Int, in directory: String) throws -> [String] {
        for _ in 0..<count {
            let child = try ChildProcess.run(BuiltProducts.harness, ["run", "null-dereference", "--dir", directory],
                                             environment: ["SWIFT_BACKTRACE": "enable=no"], timeout: 60)
            XCTAssertEqual(child.ending, .signaled(SIGSEGV))
            usleep(2000) // distinct millisecond names
        }
        return try RecordFileName.names(in: directory).filter { RecordFileName($0) != nil }
    }

    /// `count` real records in a new directory, their events stored by the ingest, the files
    /// kept for Sentry.
    func ingested(_ count: Int, _ name: String) throws -> (String, [String], TrackingStore) {
        let directory = try Scratch.directory(name)
        let names = try records(count, in: directory)
        let store = try TrackingStore(path: directory + "/s.sqlite")
        _ = NextLaunchIngest.run(store: store, recordDirectory: directory, appName: "t", appVersion: "1",
                                 awaitingClaims: [SentryUpload.claimPrefix])
        return (directory, names, store)
    }

    func upload(_ store: TrackingStore, _ directory: String, _ server: TestHTTPServer, policy: SentryUploadPolicy = fast()) throws -> SentryUpload {
        let dsn = try XCTUnwrap(SentryDSN(Self.dsn.replacingOccurrences(of: "PORT", with: String(server.port))))
        return SentryUpload(store: store, directory: directory, dsn: dsn, policy: policy, envelope: Self.envelope)
    }

    static func fast() -> SentryUploadPolicy {
        var policy = SentryUploadPolicy()
        policy.initialRetryDelay = 0.01
        policy.maxRetryDelay = 0.05
        policy.requestTimeout = 5
        return policy
    }

    static func sentName(_ request: TestHTTPServer.Request) -> String? {
        guard let line = request.body.split(separator: "\n").dropFirst().first,
              let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
        return object["filename"] as? String
    }

    func deadline(_ seconds: Double) -> Int64 { SentryUpload.monotonic() + Int64(seconds * 1e9) }

    func testRecordsAreSentInOrderWithTheAuthHeaderAndDeletedOnlyOnceBothSinksHaveThem() throws {
        let directory = try Scratch.directory("sentry-order")
        let names = try records(3, in: directory)
        let store = try TrackingStore(path: directory + "/s.sqlite")
        let ingest = NextLaunchIngest.run(store: store, recordDirectory: directory, appName: "t", appVersion: "1",
                                          awaitingClaims: [SentryUpload.claimPrefix])
        XCTAssertEqual(ingest.recordsIngested, names)
        XCTAssertEqual(ingest.recordsAwaitingSinks, names, "events stored, Sentry not yet: the files stay")
        XCTAssertEqual(try RecordFileName.names(in: directory).filter { RecordFileName($0) != nil }, names)
        // A second ingest stores nothing twice and still keeps them.
        let again = NextLaunchIngest.run(store: store, recordDirectory: directory, appName: "t", appVersion: "1",
                                         awaitingClaims: [SentryUpload.claimPrefix])
        XCTAssertEqual(again.recordsAlreadyIngested, names)
        XCTAssertEqual(try store.pendingBatch(limit: 100).filter { $0.event == "AppCrashed" }.count, 3)

        let server = try TestHTTPServer()
        let sentry = try upload(store, directory, server)
        sentry.start()
        XCTAssertTrue(sentry.finish(deadline: deadline(30)))
        let requests = server.allRequests
        XCTAssertEqual(requests.compactMap(Self.sentName), names)
        for request in requests {
            XCTAssertEqual(request.path, "/api/42/envelope/")
            XCTAssertEqual(request.headers["x-sentry-auth"], "Sentry sentry_version=7, sentry_key=publickey, sentry_client=crashcapture/0.1.0")
            XCTAssertEqual(request.headers["content-type"], "application/x-sentry-envelope")
        }
        XCTAssertEqual(sentry.currentReport.sent, names)
        XCTAssertEqual(try RecordFileName.names(in: directory).filter { RecordFileName($0) != nil }, [])
        XCTAssertEqual(try store.summary().counters["sentry_sent"], 3)
    }

    func testServerErrorsAndNetworkFailuresAreRetriedAndTheRecordKeptUntilAcknowledged() throws {
        let (directory, names, store) = try ingested(1, "sentry-retry")
        let server = try TestHTTPServer { request in
            switch request.index {
            case 0: return .status(503)
            case 1: return .reset
            case 2: return .status(408)
            default: return .status(200)
            }
        }
        let sentry = try upload(store, directory, server)
        sentry.start()
        XCTAssertTrue(sentry.finish(deadline: deadline(30)))
        XCTAssertEqual(server.allRequests.count, 4)
        XCTAssertEqual(server.allRequests.compactMap(Self.sentName), Array(repeating: names[0], count: 4))
        XCTAssertEqual(sentry.currentReport.sent, names)
        XCTAssertEqual(try RecordFileName.names(in: directory).filter { RecordFileName($0) != nil }, [])
    }

    func testA429WaitsForTheRateLimitItAnnounces() throws {
        let (directory, _, store) = try ingested(2, "sentry-429")
        let times = TimeLog()
        let server = try TestHTTPServer { request in
            times.mark()
            return request.index == 0 ? .status(429, headers: ["X-Sentry-Rate-Limits": "1:error;attachment:organization, 900:transaction:project"])
                : .status(200)
        }
        var policy = Self.fast()
        policy.maxRetryDelay = 5 // the cap must not cut the 1 s limit short
        let sentry = try upload(store, directory, server, policy: policy)
        sentry.start()
        XCTAssertTrue(sentry.finish(deadline: deadline(30)))
        let marks = times.marks
        XCTAssertEqual(marks.count, 3)
        XCTAssertGreaterThanOrEqual(marks[1] - marks[0], 0.95, "the retry came before the announced second")
        XCTAssertEqual(sentry.currentReport.sent.count, 2)
    }

    func testA413AndAPoisonEnvelopeAreQuarantinedCountedAndDoNotBlockTheNext() throws {
        let (directory, names, store) = try ingested(3, "sentry-413")
        let server = try TestHTTPServer { request in
            switch Self.sentName(request) {
            case names[0]: return .status(413)
            case names[1]: return .status(400)
            default: return .status(200)
            }
        }
        let sentry = try upload(store, directory, server)
        sentry.start()
        XCTAssertTrue(sentry.finish(deadline: deadline(30)))
        XCTAssertEqual(server.allRequests.compactMap(Self.sentName), names, "each sent once, in order")
        let report = sentry.currentReport
        XCTAssertEqual(report.sent, [names[2]])
        XCTAssertEqual(Set(report.quarantined.keys), [names[0], names[1]])
        XCTAssertTrue(report.quarantined[names[0]]?.hasPrefix("HTTP 413") == true)
        XCTAssertEqual(try store.summary().counters["sentry_quarantined"], 2)
        XCTAssertEqual(try RecordFileName.names(in: directory).filter { RecordFileName($0) != nil }, [])
    }

    func testWhatIsNotSentByTheDeadlineIsSentByTheNextLaunch() throws {
        let (directory, names, store) = try ingested(2, "sentry-next")
        let down = try TestHTTPServer { _ in .reset } // no answer at all: retried without limit
        let first = try upload(store, directory, down)
        first.start()
        XCTAssertFalse(first.finish(deadline: deadline(0.5)))
        XCTAssertEqual(first.currentReport.sent, [])
        XCTAssertNotNil(first.currentReport.lastError)
        XCTAssertEqual(try RecordFileName.names(in: directory).filter { RecordFileName($0) != nil }, names)
        // Next launch: the ingest finds them stored already and keeps them; the upload sends them.
        let next = NextLaunchIngest.run(store: store, recordDirectory: directory, appName: "t", appVersion: "1",
                                        awaitingClaims: [SentryUpload.claimPrefix])
        XCTAssertEqual(next.recordsAlreadyIngested, names)
        let up = try TestHTTPServer()
        let second = try upload(store, directory, up)
        second.start()
        XCTAssertTrue(second.finish(deadline: deadline(30)))
        XCTAssertEqual(second.currentReport.sent, names)
        XCTAssertEqual(try store.pendingBatch(limit: 100).filter { $0.event == "AppCrashed" }.count, 2, "no event twice")
    }

    func testAnEnvelopeTheServerFailsOnEveryTimeIsGivenUpAfterTheLimitAndTheNextGoesThrough() throws {
        let (directory, names, store) = try ingested(2, "sentry-5xx")
        let server = try TestHTTPServer { request in Self.sentName(request) == names[0] ? .status(500) : .status(200) }
        var policy = Self.fast()
        policy.maxServerErrorAttempts = 3
        let sentry = try upload(store, directory, server, policy: policy)
        sentry.start()
        XCTAssertTrue(sentry.finish(deadline: deadline(30)))
        XCTAssertEqual(server.allRequests.compactMap(Self.sentName), [names[0], names[0], names[0], names[1]])
        XCTAssertEqual(sentry.currentReport.sent, [names[1]])
        XCTAssertTrue(sentry.currentReport.quarantined[names[0]]?.hasPrefix("3 server errors in a row") == true)
    }

    func testARecordDamagedAfterItsEventsWereStoredIsGivenUpNotSent() throws {
        let (directory, names, store) = try ingested(1, "sentry-damaged")
        try Data("not a record any more".utf8).write(to: URL(fileURLWithPath: directory + "/" + names[0]))
        let server = try TestHTTPServer()
        let sentry = try upload(store, directory, server)
        sentry.start()
        XCTAssertTrue(sentry.finish(deadline: deadline(30)))
        XCTAssertEqual(server.allRequests.count, 0)
        XCTAssertTrue(sentry.currentReport.quarantined[names[0]]?.hasPrefix("unreadable record") == true)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/" + names[0]))
    }

    /// A valid DSN starts the upload whatever else is configured; only a DSN that does not parse
    /// is reported as one (it once was, for a valid DSN, when no envelope builder was set).
    func testOnlyADSNThatDoesNotParseIsReportedAsNotADSN() throws {
        for (dsn, error) in [("http://0123456789abcdef@127.0.0.1:9/42", false), ("not a dsn", true)] {
            let directory = try Scratch.directory("dsn-report")
            var configuration = CrashReporting.Configuration(directory: directory, appName: "dsn-test", appVersion: "1")
            configuration.captureCrashes = false
            configuration.sentryDSN = dsn
            let reporting = CrashReporting.start(configuration)
            XCTAssertEqual(reporting.sentryDSNError != nil, error, "\(dsn): \(reporting.sentryDSNError ?? "no error")")
            if error { XCTAssertTrue(reporting.sentryDSNError?.hasPrefix("not a Sentry DSN") == true) }
            _ = reporting.shutdown(timeout: 2.0)
        }
    }

    func testDSNs() throws {
        let dsn = try XCTUnwrap(SentryDSN("https://abc123@o1.ingest.sentry.example:8443/some/path/4505"))
        XCTAssertEqual(dsn.publicKey, "abc123")
        XCTAssertEqual(dsn.projectID, "4505")
        XCTAssertEqual(dsn.envelopeURL.absoluteString, "https://o1.ingest.sentry.example:8443/some/path/api/4505/envelope/")
        XCTAssertEqual(SentryDSN("http://k:secret@127.0.0.1/7")?.envelopeURL.absoluteString, "http://127.0.0.1/api/7/envelope/")
        for bad in ["", "nonsense", "https://sentry.example/42", "https://key@sentry.example/", "https://key@sentry.example/notanumber",
                    "ftp://key@sentry.example/1", "https://key@/1"] {
            XCTAssertNil(SentryDSN(bad), bad)
        }
    }

    func testRateLimitHeaders() {
        XCTAssertEqual(SentryUpload.rateLimit("60:error:organization"), 60)
        XCTAssertEqual(SentryUpload.rateLimit("60::organization"), 60, "no categories: everything")
        XCTAssertEqual(SentryUpload.rateLimit("10:transaction:key, 30:attachment;error:org, 5:default:org"), 30)
        XCTAssertNil(SentryUpload.rateLimit("60:transaction;session:organization"))
        XCTAssertNil(SentryUpload.rateLimit("soon:error"))
        XCTAssertNil(SentryUpload.rateLimit(nil))
    }
}

/// Monotonic times of server answers.
// @unchecked: `values` is only touched under `lock`.
final class TimeLog: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Double] = []
    func mark() { lock.withLock { values.append(Double(SentryUpload.monotonic()) / 1e9) } }
    var marks: [Double] { lock.withLock { values } }
}
