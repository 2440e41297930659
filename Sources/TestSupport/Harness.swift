// Harness.swift — crash-harness as the tests drive it (`emit`: a program that tracks events,
// crashes on request and reports at its next launch), and the event JSON it leaves behind: in
// the store, and in the `/sa` bodies a TestHTTPServer received.
import Foundation
package import ProcessSpawning
import SensorsEvents
#if canImport(Glibc)
import Glibc
#endif

/// The debug crash-harness, run as a child process.
package enum Harness {
    /// The debug crash-harness SwiftPM built next to this test bundle.
    package static var path: String { BuiltProducts.harness }

    /// The test process's environment without what would change a child's behaviour: Swift's
    /// own backtracer off, CrashCapture not disabled, no Sentry DSN.
    package static var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment.removeValue(forKey: "CRASHCAPTURE_DISABLE")
        environment.removeValue(forKey: "SENTRY_DSN") // a developer's own DSN must not receive test crashes
        return environment
    }

    /// Runs `crash-harness emit ...` to its end (or kills it with SIGKILL after `timeout`).
    /// A `launcher` (an executable and its first arguments, ending with an exec of the rest, such
    /// as `/bin/sh -c '…; exec "$@"' sh`) starts it in a process it prepared (another cgroup, say).
    package static func emit(_ arguments: [String], timeout: Double = 60, stdout: String? = nil,
                            environment extra: [String: String] = [:], launcher: [String] = []) throws -> ChildProcess {
        let command = launcher + [path, "emit"] + arguments
        return try ChildProcess.run(command[0], Array(command.dropFirst()), environment: environment.merging(extra) { $1 },
                                    stdout: stdout, timeout: timeout)
    }

    /// Starts `crash-harness emit ...` without waiting (through `launcher`, as ``emit(_:timeout:stdout:environment:launcher:)``
    /// does); `.wait()` on the result ends it.
    package static func spawnEmit(_ arguments: [String], launcher: [String] = []) throws -> ChildProcess.Running {
        let command = launcher + [path, "emit"] + arguments
        return try ChildProcess.start(command[0], Array(command.dropFirst()), environment: environment)
    }

    /// Waits (bounded) until `path` exists.
    package static func waitForFile(_ path: String, timeout: Double = 60) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !FileManager.default.fileExists(atPath: path) {
            if Date() > deadline { return false }
            usleep(5000)
        }
        return true
    }
}

extension Dictionary where Key == String, Value == Any {
    /// The event's name (`event`).
    package var event: String? { self["event"] as? String }
    package var trackID: String? { self["_track_id"] as? String }
    package var properties: [String: Any] { self["properties"] as? [String: Any] ?? [:] }
    /// `emit`'s own numbering of its events (`seq`) and its run (`run`).
    package var seq: Int? { properties["seq"] as? Int }
    package var run: String? { properties["run"] as? String }
}

/// Parses a stored event's JSON ([:] when it is not a JSON object).
package func object(_ json: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]) ?? [:]
}

extension TestHTTPServer.Request {
    /// The events in a Sensors `/sa` body (nil when the body is not a valid Sensors form).
    package var events: [[String: Any]]? {
        guard let decoded = SensorsWire.decode(body: body) else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(decoded.json.utf8)) as? [[String: Any]]
    }
}

extension TestHTTPServer {
    /// Events of the requests answered with a 2xx, in order.
    package var acceptedEvents: [[String: Any]] {
        allRequests.filter { ($0.answeredStatus ?? 0) / 100 == 2 }.flatMap { $0.events ?? [] }
    }
}

/// Monotonic times of server answers.
// @unchecked: `values` is only touched under `lock`.
package final class TimeLog: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Double] = []
    private let start = SuspendingClock.now
    package init() {}
    package func mark() {
        let (seconds, attoseconds) = start.duration(to: .now).components
        lock.withLock { values.append(Double(seconds) + Double(attoseconds) / 1e18) }
    }
    package var marks: [Double] { lock.withLock { values } }
}
