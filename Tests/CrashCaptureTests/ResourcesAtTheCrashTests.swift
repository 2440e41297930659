// ResourcesAtTheCrashTests.swift — what a record says the process had when it died, against the
// truth of the same machine: a crash at the fd limit names the limit (a plain crash does not);
// the memory, the threads and the machine's CPUs and memory match what the kernel says of the
// harness's kind of process; a crash inside a memory-limited cgroup (made for the test, as the
// OOM-kill tests make theirs) names that cgroup, its limit and its usage; crash-inspect shows it.
@testable import CrashRecordFormat
import CrashScenarios
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class ResourcesAtTheCrashTests: XCTestCase {
    func testACrashAtTheDescriptorLimitNamesTheLimitAndAPlainCrashDoesNot() throws {
        try checkDescriptorLimit("fd-limit")
    }

    /// The count a kernel before 6.2 gives (the listing, where stat says no size): the same.
    func testTheListedCountOfAKernelBefore62IsTheSame() throws {
        try checkDescriptorLimit("fd-limit-listed")
    }

    /// At a hard limit the handler cannot raise, it has only the descriptor it kept for itself.
    /// Every text a plain crash has is still read, one file at a time (a way of reading that held
    /// two files open at once, the cgroup's directory and one of its files, lost the cgroup's).
    func testAtAHardDescriptorLimitEveryTextAPlainCrashHasIsStillRead() throws {
        let run = try Harness.run("fd-limit-hard")
        let resources = try XCTUnwrap(run.record?.resources, "no resources in the record")
        let limit = try XCTUnwrap(resources.descriptorSoftLimit)
        XCTAssertEqual(resources.descriptorHardLimit, limit, "the scenario lowers the hard limit too")
        XCTAssertEqual(UInt64(try XCTUnwrap(resources.openDescriptors)), limit)
        let plain = try XCTUnwrap(try Harness.run("null-dereference").record?.resources)
        // The same machine and cgroup: the same texts, present or absent alike.
        XCTAssertNotNil(resources.processStatus)
        XCTAssertNotNil(resources.machineMemory)
        XCTAssertNotNil(resources.loadAverage)
        XCTAssertEqual(resources.cgroupDirectory, plain.cgroupDirectory)
        XCTAssertEqual(resources.cgroupCurrent != nil, plain.cgroupCurrent != nil, "usage")
        XCTAssertEqual(resources.cgroupMax, plain.cgroupMax, "limit")
        XCTAssertEqual(resources.cgroupEvents != nil, plain.cgroupEvents != nil, "events")
    }

    func checkDescriptorLimit(_ scenario: String) throws {
        let run = try Harness.run(scenario)
        let resources = try XCTUnwrap(run.record?.resources, "no resources in the record")
        let limit = try XCTUnwrap(resources.descriptorSoftLimit)
        let open = try XCTUnwrap(resources.openDescriptors)
        // The scenario lowers the soft limit, then opens /dev/null until EMFILE: every slot is taken.
        XCTAssertLessThan(limit, 4096, "the scenario's own lowered limit, not the one the handler raised it to")
        XCTAssertEqual(UInt64(open), limit, "open descriptors at the crash: \(open) of \(limit)")
        XCTAssertTrue(resources.findings.contains { $0.contains("at the limit (RLIMIT_NOFILE)") }, "\(resources.findings)")
        let shown = try Tools.output(BuiltProducts.inspect, ["show", try XCTUnwrap(run.outcome.ownRecordFiles.first)])
        XCTAssertTrue(shown.contains("\(open) descriptors open of \(limit) allowed: at the limit (RLIMIT_NOFILE)"), shown)

        // The control: a plain crash is far from its limit, and nothing is said of it.
        let plain = try XCTUnwrap(try Harness.run("null-dereference").record?.resources)
        XCTAssertLessThan(UInt64(try XCTUnwrap(plain.openDescriptors)) + 2, try XCTUnwrap(plain.descriptorSoftLimit))
        XCTAssertEqual(plain.findings.filter { $0.contains("RLIMIT_NOFILE") }, [])
    }

    /// The kernel's status is read before the other threads are stopped, and its Threads: decides
    /// whether they are listed at all: a crash alone records its one thread, a crash among others
    /// records every one the kernel counted.
    func testTheKernelsThreadCountDecidesTheListingAndMatchesTheThreadsRecorded() throws {
        let alone = try XCTUnwrap(try Harness.run("null-dereference").record)
        XCTAssertEqual(alone.resources?.threads, 1, "the harness's null dereference runs on its only thread")
        XCTAssertEqual(alone.threads.count, 1)
        let many = try XCTUnwrap(try Harness.run("concurrent-crashes").record)
        let counted = try XCTUnwrap(many.resources?.threads)
        XCTAssertGreaterThanOrEqual(counted, 9)
        XCTAssertEqual(many.threads.count, counted, "every thread the kernel counted is recorded")
    }

    func testTheMemoryThreadsAndMachineAreTheKernelsFigures() throws {
        let record = try XCTUnwrap(try Harness.run("null-dereference").record)
        let resources = try XCTUnwrap(record.resources)
        // A debug Swift program's resident memory: some MiB, never more than its peak.
        let resident = try XCTUnwrap(resources.residentBytes), peak = try XCTUnwrap(resources.peakResidentBytes)
        XCTAssertGreaterThan(resident, 1 << 20)
        XCTAssertLessThan(resident, 1 << 30)
        XCTAssertLessThanOrEqual(resident, peak)
        XCTAssertEqual(resources.threads, record.threads.count, "the kernel's Threads: against the threads recorded")
        // The machine, as nproc and /proc/meminfo say it now.
        let nproc = try Tools.output("/bin/sh", ["-c", "nproc"]).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(resources.cpuCount, Int(nproc))
        let meminfo = try String(contentsOfFile: "/proc/meminfo", encoding: .utf8)
        XCTAssertEqual(resources.machineMemoryTotal, CrashResources.kilobytes(meminfo, "MemTotal:"))
        XCTAssertEqual(resources.load?.count, 3)
        #if arch(x86_64)
        let vendor = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8).split(separator: "\n")
            .first { $0.hasPrefix("vendor_id") }.map { $0.split(separator: ":").last!.trimmingCharacters(in: .whitespaces) }
        XCTAssertEqual(resources.cpuVendor, vendor)
        #endif
    }

    func testACrashInAMemoryLimitedCgroupNamesTheCgroupItsLimitAndItsUsage() throws {
        let cgroup = try TestMemoryCgroup("record", limitBytes: 96 << 20)
        defer { cgroup.remove() }
        let directory = try Scratch.directory("resources-cgroup")
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let child = try ChildProcess.run(cgroup.launcher[0], Array(cgroup.launcher.dropFirst()) + [BuiltProducts.harness, "run", "null-dereference",
                                                                                                 "--dir", directory],
                                         environment: environment, timeout: 60)
        XCTAssertEqual(child.ending, .signaled(SIGSEGV))
        let name = try XCTUnwrap(try RecordFileName.names(in: directory).first)
        let resources = try XCTUnwrap(try CrashRecordReader.read(path: directory + "/" + name).resources)
        let cgroupSeen = try XCTUnwrap(resources.cgroup, "no cgroup in the record")
        XCTAssertEqual(cgroupSeen.version, 1)
        XCTAssertEqual(cgroupSeen.directory, cgroup.directory)
        XCTAssertEqual(resources.cgroupLimit, 96 << 20)
        let usage = try XCTUnwrap(resources.cgroupUsage)
        XCTAssertGreaterThan(usage, 1 << 20, "the crashed process's own memory is in its cgroup")
        XCTAssertLessThanOrEqual(usage, 96 << 20)
        XCTAssertNotNil(resources.cgroupEventCounts["oom_kill"])
        let shown = try Tools.output(BuiltProducts.inspect, ["show", directory + "/" + name])
        XCTAssertTrue(shown.contains("cgroup      v1 \(cgroup.directory): ") && shown.contains("of 96 MiB"), shown)
    }
}
