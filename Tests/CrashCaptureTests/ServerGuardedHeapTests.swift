// ServerGuardedHeapTests.swift — the guarded heap on a real server under load: the Hummingbird
// example (which links CrashCaptureGuardedHeap as a canary would) with one allocation in 50
// sampled and 1024 slots, far more than production would, serving 4 clients for 60 s. A sound
// program under it finds nothing (no record, no fault, no abort) and loses nothing (every
// request answered, a graceful exit), while the heap demonstrably sampled its allocations.
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class ServerGuardedHeapTests: XCTestCase {
    func executable() throws -> String {
        guard let path = ProcessInfo.processInfo.environment["CRASHING_SERVER"], !path.isEmpty else {
            throw XCTSkip("set CRASHING_SERVER to a build of the Hummingbird example server (scripts/test.sh does)")
        }
        return path
    }

    /// Counts of one client's requests.
    final class Tally: @unchecked Sendable {
        private let lock = NSLock()
        private var answered = 0
        private var failures: [String] = []
        func add(_ ok: Bool, _ what: @autoclosure () -> String) {
            lock.withLock { if ok { answered += 1 } else if failures.count < 5 { failures.append(what()) } else { failures.append("…") } }
        }
        var result: (answered: Int, failures: [String]) { lock.withLock { (answered, failures) } }
    }

    func testASoundServerUnderLoadFindsNothingAndLosesNothing() throws {
        let server = try ExampleServer(try executable(), name: "guarded-heap-load",
                                       environment: ["CRASHCAPTURE_GUARDED_HEAP": "50:1024", "SWIFT_BACKTRACE": "enable=no"])
        let tally = Tally()
        let deadline = Date().addingTimeInterval(60)
        let port = server.port
        let done = DispatchGroup()
        for _ in 0 ..< 4 {
            done.enter()
            Thread {
                defer { done.leave() }
                while Date() < deadline {
                    do {
                        let answer = try HTTPConnection(port: port, path: "/ok").readToEnd(timeout: 10)
                        tally.add(answer.hasPrefix("HTTP/1.1 200") && answer.hasSuffix("ok\n"), answer.prefix(200).description)
                    } catch {
                        tally.add(false, "\(error)")
                    }
                }
            }.start()
        }
        done.wait()
        kill(server.pid, SIGTERM)
        let ended = server.wait(timeout: 120)   // counted from the server's start
        let (answered, failures) = tally.result
        XCTAssertEqual(failures, [], "requests that were not answered with 200 ok")
        XCTAssertGreaterThan(answered, 0)
        XCTAssertEqual(ended.ending, .exited(0), server.stderr)
        XCTAssertEqual(server.recordFiles, [], "a record of a sound server: \(server.stderr)")
        XCTAssertEqual(server.partialFiles, [])
        // The heap was on and sampled the server's own allocations.
        let line = try XCTUnwrap(server.stdout.split(separator: "\n").first { $0.hasPrefix("guarded heap: ") }, server.stdout)
        let sampled = Int(line.split(separator: " ")[2]) ?? 0
        XCTAssertGreaterThan(sampled, 1000, String(line))
    }
}
