// UploaderTests.swift — uploads against a real HTTP server on 127.0.0.1; without libcurl, in a child
// process (crash-harness emit): the upload fails saying so and a later run sends every event.
import SensorsEvents
import ProcessSpawning
@testable import SensorsTracking
import Foundation
import TestSupport
import XCTest

final class UploaderTests: XCTestCase {
    func tracker(_ name: String, server: TestHTTPServer, batchSize: Int = 50) throws -> Tracker {
        var config = Tracker.Configuration(storePath: try Scratch.directory(name) + "/s.sqlite", appName: "tests",
                                           appVersion: "1.0", endpoint: server.url)
        config.upload.initialRetryDelay = .milliseconds(10)
        config.upload.maxRetryDelay = .milliseconds(50)
        config.upload.maxServerErrorAttempts = 4
        config.upload.batchSize = batchSize
        config.trackAppStart = false
        return try Tracker(config)
    }

    func steps(_ events: [[String: Any]]) -> [Int] {
        events.filter { $0.event == "Step" }.compactMap { $0.properties["i"] as? Int }
    }

    func testHappyPathDeliversEveryEventOnceInOrder() throws {
        let server = try TestHTTPServer()
        let tracker = try tracker("happy", server: server)
        for i in 0..<1000 { tracker.track("Step", properties: ["i": .int(i)]) }
        XCTAssertTrue(tracker.flush(timeout: .seconds(60)))
        XCTAssertEqual(tracker.shutdown(timeout: .seconds(30)), Tracker.ShutdownResult(stored: true, uploaded: true))
        let accepted = server.acceptedEvents
        XCTAssertEqual(steps(accepted), Array(0..<1000))
        XCTAssertEqual(Set(accepted.compactMap(\.trackID)).count, accepted.count)
        XCTAssertEqual(accepted.last?.event, "$AppEnd")
        for request in server.allRequests {
            XCTAssertTrue(request.path.hasPrefix("/sa"))
            let events = try XCTUnwrap(request.events, "body must decode with a valid crc")
            XCTAssertLessThanOrEqual(events.count, 50)
            XCTAssertTrue(events.allSatisfy { $0["_flush_time"] is Int })
        }
        let summary = try tracker.store.summary()
        XCTAssertEqual(summary.pending, 0)
        XCTAssertEqual(summary.lastUpload?.status, 200)
    }

    func testAServerFailingAThirdOfRequestsLosesNothingAndKeepsOrder() throws {
        let server = try TestHTTPServer { request in
            guard request.index % 3 == 1 else { return .status(200) }
            switch (request.index / 3) % 3 {
            case 0: return .status(500)
            case 1: return .status(429, headers: ["Retry-After": "0"])
            default: return .reset
            }
        }
        let tracker = try tracker("flaky", server: server)
        for i in 0..<600 { tracker.track("Step", properties: ["i": .int(i)]) }
        XCTAssertTrue(tracker.flush(timeout: .seconds(120)))
        tracker.shutdown(timeout: .seconds(30))
        XCTAssertEqual(steps(server.acceptedEvents), Array(0..<600))
        XCTAssertGreaterThanOrEqual(server.allRequests.count, 18)
        XCTAssertEqual(try tracker.store.summary().quarantined, 0)
    }

    func testPayloadTooLargeSplitsTheBatchUntilItFits() throws {
        let server = try TestHTTPServer { request in (request.events?.count ?? 0) > 7 ? .status(413) : .status(200) }
        let tracker = try tracker("toolarge", server: server)
        for i in 0..<100 { tracker.track("Step", properties: ["i": .int(i)]) }
        XCTAssertTrue(tracker.flush(timeout: .seconds(60)))
        tracker.shutdown(timeout: .seconds(30))
        XCTAssertEqual(steps(server.acceptedEvents), Array(0..<100))
        XCTAssertTrue(server.allRequests.contains { $0.events?.count == 50 })
        XCTAssertEqual(try tracker.store.summary().quarantined, 0)
    }

    func testASingleEventTooLargeForTheServerIsQuarantined() throws {
        let server = try TestHTTPServer { request in
            (request.events ?? []).contains { $0.event == "Huge" } ? .status(413) : .status(200)
        }
        let tracker = try tracker("huge", server: server)
        tracker.track("Step", properties: ["i": .int(0)])
        tracker.track("Huge")
        tracker.track("Step", properties: ["i": .int(1)])
        XCTAssertTrue(tracker.flush(timeout: .seconds(60)))
        tracker.shutdown(timeout: .seconds(30))
        XCTAssertEqual(steps(server.acceptedEvents), [0, 1])
        let quarantined = try tracker.store.quarantinedEvents()
        XCTAssertEqual(quarantined.map(\.event.event), ["Huge"])
        XCTAssertEqual(quarantined.first?.status, 413)
    }

    func testAPoisonBatchIsQuarantinedAndTheQueueMovesOn() throws {
        let server = try TestHTTPServer { request in
            (request.events ?? []).contains { $0.event == "Poison" } ? .status(400) : .status(200)
        }
        let tracker = try tracker("poison", server: server, batchSize: 10)
        for i in 0..<30 {
            tracker.track(i == 15 ? "Poison" : "Step", properties: ["i": .int(i)])
        }
        XCTAssertTrue(tracker.flush(timeout: .seconds(60)))
        tracker.shutdown(timeout: .seconds(30))
        // The batch holding event 15 (events 10..<20) is quarantined whole; the rest arrive in order.
        XCTAssertEqual(steps(server.acceptedEvents), Array(0..<10) + Array(20..<30))
        let summary = try tracker.store.summary()
        XCTAssertEqual(summary.quarantined, 10)
        XCTAssertEqual(summary.pending, 0)
        let quarantined = try tracker.store.quarantinedEvents()
        XCTAssertTrue(quarantined.allSatisfy { $0.status == 400 })
        XCTAssertTrue(quarantined.contains { $0.event.event == "Poison" })
    }

    func testAnEventTheServerAlwaysFailsWith500IsIsolatedInsteadOfBlockingTheQueue() throws {
        let server = try TestHTTPServer { request in
            (request.events ?? []).contains { $0.event == "Cursed" } ? .status(503) : .status(200)
        }
        let tracker = try tracker("cursed", server: server, batchSize: 8)
        for i in 0..<16 { tracker.track(i == 5 ? "Cursed" : "Step", properties: ["i": .int(i)]) }
        XCTAssertTrue(tracker.flush(timeout: .seconds(120)))
        tracker.shutdown(timeout: .seconds(30))
        XCTAssertEqual(steps(server.acceptedEvents), Array(0..<5) + Array(6..<16))
        XCTAssertEqual(try tracker.store.quarantinedEvents().map(\.event.event), ["Cursed"])
    }

    func testAnUnreachableServerKeepsEventsAndShutdownStaysBounded() throws {
        let server = try TestHTTPServer()
        let url = server.url
        server.stop() // nothing listens on that port any more: connection refused
        var config = Tracker.Configuration(storePath: try Scratch.directory("down") + "/s.sqlite", appName: "tests",
                                           appVersion: "1.0", endpoint: url)
        config.upload.initialRetryDelay = .milliseconds(10)
        config.upload.maxRetryDelay = .milliseconds(50)
        let tracker = try Tracker(config)
        tracker.track("Kept")
        XCTAssertTrue(tracker.waitUntilStored(timeout: .seconds(60)))
        let result = tracker.shutdown(timeout: .seconds(1))
        XCTAssertEqual(result, Tracker.ShutdownResult(stored: true, uploaded: false))
        let summary = try tracker.store.summary()
        XCTAssertEqual(summary.pending, 3)
        XCTAssertEqual(summary.lastUpload?.status, 0)
        XCTAssertNotNil(summary.lastUpload?.error)
    }

    func testWithoutLibcurlAnUploadFailsSayingSoKeepsEveryEventAndALaterRunSendsThem() throws {
        let server = try TestHTTPServer()
        let directory = try Scratch.directory("no-libcurl")
        let store = directory + "/s.sqlite"
        let retry = ["--retry-delay", "0.05", "--max-retry-delay", "0.2"]
        let without = try Harness.emit(["--count", "5", "--store", store, "--endpoint", server.url.absoluteString, "--run-id", "offline",
                                        "--flush-timeout", "2"] + retry,
                                       environment: ["CRASHCAPTURE_LIBCURL": "/nonexistent/libcurl.so.4"])
        XCTAssertEqual(without.ending, .exited(3), "stored but not uploaded")
        XCTAssertEqual(server.allRequests.count, 0)
        let (kept, _) = try TrackingStore.inspect(path: store)
        XCTAssertGreaterThanOrEqual(kept.pending, 5, "the 5 events (and the run's own) stay in the store")
        XCTAssertEqual(kept.quarantined, 0)
        let last = try XCTUnwrap(kept.lastUpload)
        XCTAssertEqual(last.status, 0)
        let error = try XCTUnwrap(last.error)
        XCTAssertTrue(error.hasPrefix("HTTP needs libcurl.so.4 (Debian/Ubuntu: apt-get install libcurl4): "), error)
        XCTAssertTrue(error.contains("/nonexistent/libcurl.so.4"), "dlerror names the file: \(error)")

        let with = try Harness.emit(["--count", "0", "--store", store, "--endpoint", server.url.absoluteString] + retry)
        XCTAssertEqual(with.ending, .exited(0))
        let seqs = server.acceptedEvents.filter { $0.event == "HarnessEvent" && $0.run == "offline" }.compactMap(\.seq)
        XCTAssertEqual(seqs.sorted(), Array(0..<5))
        XCTAssertEqual(try TrackingStore.inspect(path: store).0.pending, 0)
    }
}
