// MemoryWatchTests.swift — the memory watch's rule on readings alone (near the limit once, again
// only after 10 minutes or a further 5 % of the limit, the last minute's growth), memory.stat's
// split in both cgroup versions, and a memory record read back.
@testable import CrashCapture
import CrashRecordFormat
import HostFacts
import XCTest

final class MemoryWatchTests: XCTestCase {
    let second: Int64 = 1_000_000_000
    let mebibyte: UInt64 = 1 << 20

    func testARecordNearTheLimitOnceThenOnlyAfterTenMinutesOrAFurtherFivePercent() {
        var watch = MemoryWatch(threshold: 0.9)
        let limit = 100 * mebibyte
        // A minute of growth below the threshold: nothing.
        for t in 0 ..< 60 { XCTAssertNil(watch.observe(now: Int64(t) * second, usage: UInt64(30 + t) * mebibyte, limit: limit)) }
        XCTAssertLessThanOrEqual(watch.samples.count, 61, "one sample a second, a minute kept")
        // At 90 %: a record, with the growth since the oldest sample of the last minute.
        let firing = watch.observe(now: 61 * second, usage: 90 * mebibyte, limit: limit)
        XCTAssertEqual(firing?.usage, 90 * mebibyte)
        XCTAssertEqual(firing?.growthSeconds, 60)
        XCTAssertEqual(firing?.growth, Int64(90 - 31) * Int64(mebibyte))
        // Staying there, or growing less than 5 % of the limit: no second record.
        XCTAssertNil(watch.observe(now: 62 * second, usage: 90 * mebibyte, limit: limit))
        XCTAssertNil(watch.observe(now: 63 * second, usage: 94 * mebibyte, limit: limit))
        // A further 5 %: one more.
        XCTAssertNotNil(watch.observe(now: 64 * second, usage: 95 * mebibyte, limit: limit))
        // Ten minutes later at the same level: one more.
        XCTAssertNil(watch.observe(now: 600 * second, usage: 95 * mebibyte, limit: limit))
        XCTAssertNotNil(watch.observe(now: 665 * second, usage: 95 * mebibyte, limit: limit))
        // Below the threshold: nothing, whatever the time.
        var calm = MemoryWatch(threshold: 0.9)
        XCTAssertNil(calm.observe(now: 0, usage: 89 * mebibyte, limit: limit))
        XCTAssertNil(calm.observe(now: 0, usage: 89 * mebibyte, limit: 0), "no limit: nothing watched")
    }

    func testMemoryStatSplitInBothVersions() {
        let v2 = "anon 104857600\nfile 52428800\nkernel 1000\nshmem 4096\nfile_mapped 1\n"
        XCTAssertEqual(MemoryCgroup.split(memoryStat: v2, isV2: true).map { [$0.anon, $0.file, $0.shmem] }, [104_857_600, 52_428_800, 4096])
        let v1 = "cache 2048\nrss 8192\nrss_huge 0\nshmem 0\nmapped_file 0\ntotal_rss 9999\n"
        XCTAssertEqual(MemoryCgroup.split(memoryStat: v1, isV2: false).map { [$0.anon, $0.file, $0.shmem] }, [8192, 2048, 0])
        XCTAssertNil(MemoryCgroup.split(memoryStat: "nonsense", isV2: true))
    }

    func testTheHeadlineSaysUsageLimitShareAndGrowth() {
        let memory = RecordMemoryWatch(usage: 290 * mebibyte, limit: 320 * mebibyte, growth: 41 * Int64(mebibyte), growthSeconds: 60)
        XCTAssertEqual(memory.headline, "290 of 320 MiB (90 %), +41 MiB in 60 s")
        var event = RecordEvent(kind: .memory, detector: .memory, name: "memory")
        event.memory = memory
        XCTAssertEqual(event.summary, "memory at 290 of 320 MiB (90 %), +41 MiB in 60 s")
    }
}
