// SeveralProcessesEventsTests.swift — several processes of one app over one record directory and
// one store (a pre-forked service, a process pool), Sentry on too: each crash becomes one AppCrashed
// at the /sa collector, whichever process took its record. (Sentry's side, and the reporter's
// guarantees across processes: CrashReporterTests' SeveralProcessesTests.)
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class SeveralProcessesEventsTests: XCTestCase {
    /// Eight processes of the app start together over 20 records, with Sentry configured beside
    /// the analytics: the `/sa` collector gets each record's AppCrashed once, and every record
    /// file is gone at the end.
    func testEightProcessesStartingTogetherStoreEachAppCrashedOnce() throws {
        let directory = try Scratch.directory("several-processes-events")
        let store = directory + "/s.sqlite"
        let records = store + ".records"
        try FileManager.default.createDirectory(atPath: records, withIntermediateDirectories: true)
        for _ in 0..<20 {
            let child = try ChildProcess.run(Harness.path, ["run", "null-dereference", "--dir", records], environment: Harness.environment,
                                             timeout: 60)
            XCTAssertEqual(child.ending, .signaled(SIGSEGV))
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: records).filter { $0.hasSuffix(".ccrec") }
        XCTAssertEqual(names.count, 20)
        let sensors = try TestHTTPServer()
        let sentry = try TestHTTPServer()
        let dsn = ["SENTRY_DSN": "http://0123456789abcdef@127.0.0.1:\(sentry.port)/42"]
        let processes = try (0..<8).map { _ in
            try ChildProcess.start(Harness.path, ["emit", "--count", "0", "--store", store, "--endpoint", sensors.url.absoluteString,
                                                  "--retry-delay", "0.01", "--max-retry-delay", "0.05"],
                                   environment: Harness.environment.merging(dsn) { $1 })
        }
        for process in processes { XCTAssertEqual(process.wait(timeout: 120).ending, .exited(0)) }

        let crashed = sensors.acceptedEvents.filter { $0.event == "AppCrashed" }.compactMap { $0.properties["$crash_record"] as? String }
        XCTAssertEqual(crashed.count, 20)
        XCTAssertEqual(Set(crashed), Set(names), "each record's AppCrashed once: \(crashed.sorted())")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: records).filter { $0.contains(".ccrec") }, [])
    }
}
