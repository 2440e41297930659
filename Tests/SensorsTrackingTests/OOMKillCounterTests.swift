// OOMKillCounterTests.swift — the OOM-kill counter's parsers on real-format kernel text (and
// garbage), the counter file found from /proc/self/cgroup and mountinfo, and the end reason a dead
// run's marker yields (in process, with a regular file standing in for the counter; the real OOM
// killer is OOMKillTests').
@testable import HostFacts
@testable import SensorsTracking
import SensorsEvents
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class OOMKillCounterTests: XCTestCase {
    // MARK: - Counter files

    func testTheV1OOMControlFileGivesItsOOMKillLine() {
        XCTAssertEqual(OOMKillCounter.oomKills(in: "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), 3)
        XCTAssertEqual(OOMKillCounter.oomKills(in: "oom_kill_disable 1\nunder_oom 1\noom_kill 0\n"), 0)
    }

    func testTheV2MemoryEventsFileGivesOOMKillNotOOMOrGroupKills() {
        let events = "low 0\nhigh 17\nmax 523\noom 7\noom_kill 2\noom_group_kill 5\n"
        XCTAssertEqual(OOMKillCounter.oomKills(in: events), 2)
        XCTAssertEqual(OOMKillCounter.oomKills(in: "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"), 0)
    }

    func testACounterFileWithoutAnOOMKillLineOrWithGarbageIsUnknown() {
        // memory.oom_control before Linux 4.13 had no oom_kill line.
        XCTAssertNil(OOMKillCounter.oomKills(in: "oom_kill_disable 0\nunder_oom 0\n"))
        XCTAssertNil(OOMKillCounter.oomKills(in: ""))
        XCTAssertNil(OOMKillCounter.oomKills(in: "oom_kill\n"))
        XCTAssertNil(OOMKillCounter.oomKills(in: "oom_kill x\n"))
        XCTAssertNil(OOMKillCounter.oomKills(in: "oom_kill -1\n"))
        XCTAssertNil(OOMKillCounter.oomKills(in: "oom_kill 1 2\n"))
        XCTAssertNil(OOMKillCounter.oomKills(in: "oom_kill 99999999999999999999999\n"))
        XCTAssertNil(OOMKillCounter.oomKills(in: "oom_kills 4\noom 3\n"))
        XCTAssertNil(OOMKillCounter.oomKills(in: String(decoding: [0xFF, 0x00, 0x6F, 0x0A, 0xC3], as: UTF8.self)))
    }

    // MARK: - /proc/self/cgroup and mountinfo

    /// This machine's kind: cgroup v1 controllers, a v2 hierarchy beside them (systemd's "hybrid").
    static let hybridCgroup = """
        9:name=systemd:/
        8:pids:/
        4:memory:/process_api/5d98f16657861eb4beeb57d07baa5532
        2:cpu,cpuacct:/
        0::/

        """
    static let hybridMountinfo = """
        22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
        31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
        32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
        35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:13 - cgroup cgroup rw,memory
        40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw

        """

    func testProcSelfCgroupLinesAreParsedAndGarbageLinesSkipped() {
        let memberships = OOMKillCounter.parseProcCgroup(Self.hybridCgroup + "garbage\n7:blkio\nx:pids:/\n5:devices:relative\n")
        XCTAssertEqual(memberships, [
            .init(hierarchy: 9, controllers: ["name=systemd"], path: "/"),
            .init(hierarchy: 8, controllers: ["pids"], path: "/"),
            .init(hierarchy: 4, controllers: ["memory"], path: "/process_api/5d98f16657861eb4beeb57d07baa5532"),
            .init(hierarchy: 2, controllers: ["cpu", "cpuacct"], path: "/"),
            .init(hierarchy: 0, controllers: [], path: "/"),
        ])
        // A path may hold colons.
        XCTAssertEqual(OOMKillCounter.parseProcCgroup("0::/a:b/c\n"), [.init(hierarchy: 0, controllers: [], path: "/a:b/c")])
        XCTAssertEqual(OOMKillCounter.parseProcCgroup(""), [])
    }

    func testMountinfoGivesTheCgroupMountsWithOptionalFieldsAndEscapedSpaces() {
        let mounts = OOMKillCounter.parseMountinfo(Self.hybridMountinfo
            + "50 31 0:40 /docker/a\\040b /cg\\134x rw - cgroup2 cgroup2 rw,nsdelegate\n"
            + "51 31 0:41 / /short rw - cgroup\n" // cut: no source, no super options
            + "not a mountinfo line at all\n")
        XCTAssertEqual(mounts, [
            .init(root: "/", mountPoint: "/sys/fs/cgroup/cpu,cpuacct", fileSystem: "cgroup", superOptions: ["rw", "cpu", "cpuacct"]),
            .init(root: "/", mountPoint: "/sys/fs/cgroup/memory", fileSystem: "cgroup", superOptions: ["rw", "memory"]),
            .init(root: "/", mountPoint: "/sys/fs/cgroup/systemd", fileSystem: "cgroup", superOptions: ["rw", "xattr", "name=systemd"]),
            .init(root: "/", mountPoint: "/sys/fs/cgroup/unified", fileSystem: "cgroup2", superOptions: ["rw"]),
            .init(root: "/docker/a b", mountPoint: "/cg\\x", fileSystem: "cgroup2", superOptions: ["rw", "nsdelegate"]),
        ])
        XCTAssertEqual(OOMKillCounter.unescape("a\\040b\\011c\\"), "a b\tc\\")
        XCTAssertEqual(OOMKillCounter.unescape("\\999\\04"), "\\999\\04", "not octal, or cut: kept as it is")
    }

    func testTheV1MemoryHierarchyIsPreferredWhenTheMemoryControllerIsBoundToIt() {
        XCTAssertEqual(OOMKillCounter.candidates(procCgroup: Self.hybridCgroup, mountinfo: Self.hybridMountinfo), [
            "/sys/fs/cgroup/memory/process_api/5d98f16657861eb4beeb57d07baa5532/memory.oom_control",
            "/sys/fs/cgroup/unified/memory.events.local",
            "/sys/fs/cgroup/unified/memory.events",
        ])
    }

    func testAPureV2SystemUsesTheLocalEventsThenTheHierarchicalOnes() {
        let cgroup = "0::/system.slice/demo.service\n"
        let mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
        XCTAssertEqual(OOMKillCounter.candidates(procCgroup: cgroup, mountinfo: mountinfo), [
            "/sys/fs/cgroup/system.slice/demo.service/memory.events.local",
            "/sys/fs/cgroup/system.slice/demo.service/memory.events",
        ])
    }

    func testAMountOfASubtreeShowsOnlyThePathsUnderItsRoot() {
        // A container without a cgroup namespace: its cgroup is mounted at /sys/fs/cgroup.
        let mountinfo = "700 600 0:26 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n"
        XCTAssertEqual(OOMKillCounter.candidates(procCgroup: "0::/docker/abc\n", mountinfo: mountinfo),
                       ["/sys/fs/cgroup/memory.events.local", "/sys/fs/cgroup/memory.events"])
        XCTAssertEqual(OOMKillCounter.candidates(procCgroup: "0::/docker/abc/worker\n", mountinfo: mountinfo),
                       ["/sys/fs/cgroup/worker/memory.events.local", "/sys/fs/cgroup/worker/memory.events"])
        // Outside the mounted subtree (a sibling whose name shares the prefix), or outside the namespace.
        XCTAssertEqual(OOMKillCounter.candidates(procCgroup: "0::/docker/abcd\n", mountinfo: mountinfo), [])
        XCTAssertEqual(OOMKillCounter.candidates(procCgroup: "0::/../other\n", mountinfo: mountinfo), [])
        // No cgroup filesystem mounted, or nothing readable at all.
        XCTAssertEqual(OOMKillCounter.candidates(procCgroup: Self.hybridCgroup, mountinfo: ""), [])
        XCTAssertEqual(OOMKillCounter.candidates(procCgroup: "garbage", mountinfo: Self.hybridMountinfo), [])
        // A v1 memory line without a v1 memory mount falls back to v2.
        XCTAssertEqual(OOMKillCounter.candidates(procCgroup: "4:memory:/m\n0::/u\n",
                                                 mountinfo: "41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
                       ["/sys/fs/cgroup/u/memory.events.local", "/sys/fs/cgroup/u/memory.events"])
    }

    // MARK: - Reading and the end reason

    func testAReadingCarriesTheCountAndTheFilesInode() throws {
        let path = try Scratch.directory("oom-read") + "/memory.events"
        try write("low 0\noom 1\noom_kill 1\n", to: path)
        let reading = try XCTUnwrap(OOMKillCounter.read(path))
        var status = stat()
        XCTAssertEqual(stat(path, &status), 0)
        XCTAssertEqual(reading, OOMKillReading(path: path, inode: UInt64(status.st_ino), kills: 1))
        XCTAssertNil(OOMKillCounter.read(path + ".missing"))
        try write("oom_kill_disable 0\nunder_oom 0\n", to: path)
        XCTAssertNil(OOMKillCounter.read(path), "no oom_kill line: unknown")
        // Not a regular file: a FIFO (which would block a plain open) and a directory are refused.
        let fifo = (path as NSString).deletingLastPathComponent + "/memory.oom_control"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        XCTAssertNil(OOMKillCounter.read(fifo))
        XCTAssertNil(OOMKillCounter.read((path as NSString).deletingLastPathComponent))
    }

    func testADeadRunIsAnOOMKillOnlyWhenTheSameCounterGrewOnTheSameBoot() {
        let recorded = OOMKillReading(path: "/cg/memory.oom_control", inode: 77, kills: 2)
        func now(_ kills: Int64, inode: UInt64 = 77) -> (String) -> OOMKillReading? {
            { path in OOMKillReading(path: path, inode: inode, kills: kills) }
        }
        XCTAssertEqual(OOMKillCounter.endReason(recorded: recorded, sameBoot: true, now: now(3)), .oom)
        XCTAssertEqual(OOMKillCounter.endReason(recorded: recorded, sameBoot: true, now: now(2)), .abnormal, "no new kill")
        XCTAssertEqual(OOMKillCounter.endReason(recorded: recorded, sameBoot: true, now: now(0)), .abnormal, "counter went back")
        XCTAssertEqual(OOMKillCounter.endReason(recorded: recorded, sameBoot: true, now: now(3, inode: 78)), .abnormal,
                       "a cgroup recreated at the same path")
        XCTAssertEqual(OOMKillCounter.endReason(recorded: recorded, sameBoot: false, now: now(3)), .abnormal, "another boot")
        XCTAssertEqual(OOMKillCounter.endReason(recorded: recorded, sameBoot: true, now: { _ in nil }), .abnormal, "cgroup gone")
        XCTAssertEqual(OOMKillCounter.endReason(recorded: nil, sameBoot: true, now: now(3)), .abnormal, "an old marker")
        // The marker is untrusted: a path that names no counter file, or a relative one, is not read.
        for path in ["/etc/passwd", "/cg/memory.oom_control/..", "cg/memory.events", ""] {
            XCTAssertEqual(OOMKillCounter.endReason(recorded: OOMKillReading(path: path, inode: 77, kills: 2), sameBoot: true,
                                                    now: now(3)), .abnormal, path)
        }
        XCTAssertEqual(OOMKillCounter.endReason(recorded: OOMKillReading(path: "/x/memory.events.local", inode: 77, kills: 2),
                                                sameBoot: true, now: now(3)), .oom)
    }

    /// The tracker's launch: a dead run whose counter grew gets an `oom` `$AppEnd` with every other
    /// property an abnormal one has; one whose counter did not, or was replaced, or that recorded
    /// none, stays `abnormal`.
    func testATrackerEndsADeadRunWhoseCounterGrewWithAnOOMAppEnd() throws {
        let directory = try Scratch.directory("oom-dead-runs")
        let path = directory + "/s.sqlite"
        // Stand-ins for three cgroups' counter files (a counter's name is part of what is trusted).
        let grown = directory + "/grown/memory.oom_control", same = directory + "/same/memory.events.local"
        let replaced = directory + "/replaced/memory.events"
        for file in [grown, same, replaced] {
            try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try write("oom_kill 2\n", to: file)
        }
        let readings = try [grown, same, replaced].map { try XCTUnwrap(OOMKillCounter.read($0)) }
        try write("oom_kill 3\n", to: grown)
        try write("oom_kill 3\n", to: replaced + ".new")
        XCTAssertEqual(rename(replaced + ".new", replaced), 0)

        let store = try TrackingStore(path: path)
        let gone = ProcessIdentity(pid: getpid(), bootID: ProcessIdentity.bootID(), startTicks: 1)
        func marker(_ runID: String, _ reading: OOMKillReading?) -> RunMarker {
            RunMarker(runID: runID, process: gone, startWallMilliseconds: 1_000, startMonotonicNanoseconds: 0,
                      refreshWallMilliseconds: 5_000, refreshMonotonicNanoseconds: 4_000_000_000, appName: "demo",
                      appVersion: "0.9", identity: EventIdentity(anonymousID: "anon", loginID: "user"), oomKills: reading)
        }
        try store.registerRun(marker("grown", readings[0]))
        try store.registerRun(marker("same", readings[1]))
        try store.registerRun(marker("replaced", readings[2]))
        try store.registerRun(marker("none", nil))
        XCTAssertEqual(try store.runMarkers().first { $0.runID == "grown" }?.oomKills, readings[0], "the reading is stored")

        let tracker = try Tracker(Tracker.Configuration(storePath: path, appName: "tests", appVersion: "9.9.9"), store: store)
        XCTAssertEqual(Set(tracker.abnormalEnds), ["grown", "same", "replaced", "none"], "an OOM end is an abnormal end")
        tracker.shutdown()
        var ends: [String: [String: Any]] = [:]
        for event in try storedObjects(path) where event.event == "$AppEnd" {
            if let run = event.properties["$run_id"] as? String { ends[run] = event }
        }
        XCTAssertEqual(ends["grown"]?.properties["$app_end_reason"] as? String, "oom")
        XCTAssertEqual(ends["same"]?.properties["$app_end_reason"] as? String, "abnormal")
        XCTAssertEqual(ends["replaced"]?.properties["$app_end_reason"] as? String, "abnormal")
        XCTAssertEqual(ends["none"]?.properties["$app_end_reason"] as? String, "abnormal")
        // Every other property as an abnormal end has it.
        let oom = try XCTUnwrap(ends["grown"]), abnormal = try XCTUnwrap(ends["same"])
        XCTAssertEqual(oom.properties["$app_crashed"] as? Bool, false)
        XCTAssertEqual((oom.properties["$event_duration"] as? NSNumber)?.doubleValue, 4.0)
        XCTAssertEqual(oom["time"] as? Int, 5_000)
        XCTAssertEqual(oom["login_id"] as? String, "user")
        XCTAssertEqual(oom.properties["$app_version"] as? String, "0.9")
        XCTAssertEqual(Set(oom.properties.keys), Set(abnormal.properties.keys))
        XCTAssertEqual(Set(oom.keys), Set(abnormal.keys))
    }

    /// Writes `text` into the file at `path` in place (its inode kept), creating it if needed.
    func write(_ text: String, to path: String) throws {
        guard let file = fopen(path, "w") else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        fputs(text, file)
        fclose(file)
    }
}
