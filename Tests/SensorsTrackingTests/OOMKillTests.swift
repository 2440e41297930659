// OOMKillTests.swift — the kernel's OOM killer, for real: `crash-harness emit` run in a
// memory-limited cgroup (v1) made for the test, killed by the OOM killer or by the test's own
// SIGKILL, and the `$AppEnd` the next launch stores for it. Skipped, saying why, where no memory
// cgroup can be made (not root, no v1 memory hierarchy, read-only cgroupfs, kernel before 4.13).
import ProcessSpawning
@testable import HostFacts
@testable import SensorsTracking
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class OOMKillTests: XCTestCase {
    func testARunTheOOMKillerKillsGetsAnOOMAppEndOnTheNextLaunch() throws {
        let cgroup = try TestMemoryCgroup("oom", limitBytes: 128 << 20)
        defer { cgroup.remove() }
        let directory = try Scratch.directory("oom-killed")
        let store = directory + "/s.sqlite"
        let ready = directory + "/ready"
        let before = try XCTUnwrap(cgroup.oomKills())
        let child = try Harness.spawnEmit(["--count", "3", "--store", store, "--run-id", "oom-run", "--ready-file", ready, "--grow-memory"],
                                          launcher: cgroup.launcher)
        XCTAssertEqual(child.wait(timeout: 120).ending, .signaled(SIGKILL))
        XCTAssertTrue(FileManager.default.fileExists(atPath: ready), "the run's tracker had started")
        XCTAssertGreaterThan(try XCTUnwrap(cgroup.oomKills()), before, "the kernel counted the OOM kill")

        XCTAssertEqual(try Harness.emit(["--count", "0", "--store", store], launcher: cgroup.launcher).ending, .exited(0))
        let events = try storedObjects(store)
        XCTAssertEqual(events.filter { $0.run == "oom-run" }.compactMap(\.seq), [0, 1, 2])
        let ends = events.filter { $0.event == "$AppEnd" && $0.properties["$run_id"] as? String == "oom-run" }
        XCTAssertEqual(ends.count, 1)
        let end = try XCTUnwrap(ends.first)
        XCTAssertEqual(end.properties["$app_end_reason"] as? String, "oom")
        XCTAssertEqual(end.properties["$app_crashed"] as? Bool, false)
        XCTAssertNotNil(end.properties["$event_duration"] as? NSNumber)
        XCTAssertFalse(events.contains { $0.event == "AppCrashed" })
        // A third launch reports nothing more.
        XCTAssertEqual(try Harness.emit(["--count", "0", "--store", store], launcher: cgroup.launcher).ending, .exited(0))
        XCTAssertEqual(try storedObjects(store).filter { $0.event == "$AppEnd" && $0.properties["$run_id"] as? String == "oom-run" }.count, 1)
    }

    /// The control: the same run in the same kind of cgroup, killed by the test's SIGKILL.
    func testARunKilledWithSIGKILLInAMemoryLimitedCgroupStaysAbnormal() throws {
        let cgroup = try TestMemoryCgroup("sigkill", limitBytes: 128 << 20)
        defer { cgroup.remove() }
        let directory = try Scratch.directory("oom-control")
        let store = directory + "/s.sqlite"
        let ready = directory + "/ready"
        let before = try XCTUnwrap(cgroup.oomKills())
        let child = try Harness.spawnEmit(["--count", "3", "--store", store, "--run-id", "killed-run", "--ready-file", ready, "--hold"],
                                         launcher: cgroup.launcher)
        XCTAssertTrue(Harness.waitForFile(ready))
        kill(child.pid, SIGKILL)
        XCTAssertEqual(child.wait().ending, .signaled(SIGKILL))
        XCTAssertEqual(cgroup.oomKills(), before, "no OOM kill")

        XCTAssertEqual(try Harness.emit(["--count", "0", "--store", store], launcher: cgroup.launcher).ending, .exited(0))
        let ends = try storedObjects(store).filter { $0.event == "$AppEnd" && $0.properties["$run_id"] as? String == "killed-run" }
        XCTAssertEqual(ends.map { $0.properties["$app_end_reason"] as? String }, ["abnormal"])
    }

    /// Another process of the cgroup killed by the OOM killer while the run lives is read at the
    /// run's next refresh (the reporter's run marker, every 2 s), so the run's own later SIGKILL
    /// is not blamed on it.
    func testAnOOMKillOfAnotherProcessEarlierInTheRunIsNotBlamedOnIt() throws {
        let cgroup = try TestMemoryCgroup("neighbour", limitBytes: 128 << 20)
        defer { cgroup.remove() }
        let directory = try Scratch.directory("oom-neighbour")
        let store = directory + "/s.sqlite"
        let ready = directory + "/ready"
        let before = try XCTUnwrap(cgroup.oomKills())
        let held = try Harness.spawnEmit(["--count", "3", "--store", store, "--run-id", "held-run", "--ready-file", ready, "--hold"],
                                         launcher: cgroup.launcher)
        XCTAssertTrue(Harness.waitForFile(ready))
        // The neighbour (its own store) grows until the OOM killer picks it, the largest process.
        let neighbour = try Harness.spawnEmit(["--count", "0", "--store", directory + "/n.sqlite", "--grow-memory"], launcher: cgroup.launcher)
        XCTAssertEqual(neighbour.wait(timeout: 120).ending, .signaled(SIGKILL))
        let after = try XCTUnwrap(cgroup.oomKills())
        XCTAssertGreaterThan(after, before)
        // Wait for the held run's marker refresh (every 2 s) to read the new count.
        let deadline = Date(timeIntervalSinceNow: 30)
        while markerKills(store, "held-run") != after && Date() < deadline { usleep(100_000) }
        XCTAssertEqual(markerKills(store, "held-run"), after, "the marker refresh read the count")
        kill(held.pid, SIGKILL)
        XCTAssertEqual(held.wait().ending, .signaled(SIGKILL))

        XCTAssertEqual(try Harness.emit(["--count", "0", "--store", store], launcher: cgroup.launcher).ending, .exited(0))
        let ends = try storedObjects(store).filter { $0.event == "$AppEnd" && $0.properties["$run_id"] as? String == "held-run" }
        XCTAssertEqual(ends.map { $0.properties["$app_end_reason"] as? String }, ["abnormal"])
    }

    /// The OOM-kill count in the run's marker (the reporter's, beside the harness's records).
    func markerKills(_ store: String, _ runID: String) -> Int64? {
        let text = (try? String(contentsOfFile: store + ".records/runs/\(runID).run", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").first { $0.hasPrefix("oom_kills=") }.flatMap { Int64($0.dropFirst("oom_kills=".count)) }
    }
}
