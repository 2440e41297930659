// MemoryWatch.swift — the memory watch: on each of the hang watcher's ticks, this process's
// memory cgroup's usage against its limit. Near the limit (90 % by default) it writes a memory
// record: usage and limit, the growth over the last minute, how the memory splits (anon, file,
// shmem), glibc's own counts (mallinfo2), every thread's frames and the requests in flight. The
// OOM killer's SIGKILL runs no handler, so a record written before it is the only word the run
// gets; the next launch cites it when the run was killed for memory. At most one record per
// 10 minutes, unless usage grew by a further 5 % of the limit.
import CShims
import CrashRecordFormat
import HostFacts
#if canImport(Glibc)
import Glibc
#endif

/// When the memory watch writes a record, from its readings alone (no files, no clock: tested as is).
struct MemoryWatch {
    /// What a record says of the readings.
    struct Firing: Equatable {
        var usage: UInt64
        var limit: UInt64
        /// Usage now less the oldest sample of the last minute, and how long ago that was.
        var growth: Int64
        var growthSeconds: UInt32
    }

    let threshold: Double
    private(set) var samples: [(at: Int64, usage: UInt64)] = []
    private var lastRecord: (at: Int64, usage: UInt64)?
    static let window: Int64 = 60_000_000_000
    static let quiet: Int64 = 600_000_000_000
    static let furtherGrowth = 0.05

    init(threshold: Double) { self.threshold = min(max(threshold, 0.01), 1) }

    /// A reading at `now` (monotonic ns): the record to write, if one is due.
    mutating func observe(now: Int64, usage: UInt64, limit: UInt64) -> Firing? {
        // One sample a second is plenty for a minute's growth.
        if samples.last.map({ now - $0.at >= 1_000_000_000 }) ?? true { samples.append((now, usage)) }
        while let first = samples.first, now - first.at > Self.window { samples.removeFirst() }
        guard limit > 0, Double(usage) >= threshold * Double(limit) else { return nil }
        if let last = lastRecord, now - last.at < Self.quiet, Double(usage) < Double(last.usage) + Self.furtherGrowth * Double(limit) {
            return nil
        }
        lastRecord = (now, usage)
        let oldest = samples.first ?? (now, usage)
        return Firing(usage: usage, limit: limit, growth: Int64(usage) - Int64(oldest.usage),
                      growthSeconds: UInt32(max(0, now - oldest.at) / 1_000_000_000))
    }

    /// The environment's threshold: `CRASHCAPTURE_MEMORY_PERCENT` (1–100; `0` off), else 90 %.
    static let environmentVariable = "CRASHCAPTURE_MEMORY_PERCENT"
    static func fromEnvironment() -> Double? {
        guard let raw = getenv(environmentVariable) else { return 0.9 }
        var end: UnsafeMutablePointer<CChar>?
        let percent = strtod(raw, &end)
        guard let end, end != raw, end.pointee == 0, percent.isFinite, percent >= 0 else { return 0.9 }
        return percent == 0 ? nil : min(percent, 100) / 100
    }
}

/// The watch as the hang watcher runs it: the cgroup found once, its limit read every 10 s, its
/// usage each tick.
final class MemoryWatcher {
    private var watch: MemoryWatch
    private let cgroup: MemoryCgroup?
    private var limit: MemoryCgroup.Limit?
    private var limitReadAt: Int64?

    init(threshold: Double) {
        watch = MemoryWatch(threshold: threshold)
        cgroup = MemoryCgroup.locate()
        // Read once here (the first tick uses it): a cgroup without one says so now.
        limit = cgroup?.limit()
        limitReadAt = monotonicNow()
        if cgroup == nil || limit == nil {
            let line = "crashcapture: memory watch: \(cgroup == nil ? "no memory cgroup found" : "the memory cgroup \(cgroup!.directory) has no limit"); nothing watched\n"
            var bytes = Array(line.utf8)
            bytes.withUnsafeMutableBytes { _ = Glibc.write(2, $0.baseAddress, $0.count) }
        }
    }

    /// One tick: writes a memory record when one is due.
    func tick(now: Int64, write: (cc_sec_memory_watch_t) -> Void) {
        guard let cgroup else { return }
        if limitReadAt.map({ now - $0 >= 10_000_000_000 }) ?? true {
            limit = cgroup.limit()
            limitReadAt = now
        }
        guard let limit, let usage = cgroup.usage(), let firing = watch.observe(now: now, usage: usage, limit: limit.bytes) else { return }
        var section = cc_sec_memory_watch_t()
        section.usage_bytes = firing.usage
        section.limit_bytes = firing.limit
        section.growth_bytes = firing.growth
        section.growth_seconds = firing.growthSeconds
        section.threshold_percent = UInt32((watch.threshold * 100).rounded())
        section.flags = (cgroup.isV2 ? UInt32(CC_MEMORY_V2) : 0) | (limit.isHigh ? UInt32(CC_MEMORY_HIGH) : 0)
        if let split = cgroup.split() {
            section.anon_bytes = split.anon
            section.file_bytes = split.file
            section.shmem_bytes = split.shmem
            section.flags |= UInt32(CC_MEMORY_STAT)
        }
        // Before the snapshot stops any thread: mallinfo2 takes the allocator's locks.
        var info: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        if withUnsafeMutableBytes(of: &info, { cc_malloc_info($0.baseAddress!.assumingMemoryBound(to: UInt64.self)) }) == 0 {
            (section.malloc_arena, section.malloc_in_use, section.malloc_free, section.malloc_mmapped) = info
            section.flags |= UInt32(CC_MEMORY_MALLINFO)
        }
        section.threads = Self.threads()
        write(section)
    }

    /// `Threads:` of /proc/self/status.
    static func threads() -> UInt32 {
        guard let text = SmallFile.text("/proc/self/status", limit: 8 << 10)?.text,
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") }) else { return 0 }
        return UInt32(line.dropFirst(8).trimmingCharacters(in: " \t")) ?? 0
    }
}

private extension Substring {
    func trimmingCharacters(in set: String) -> Substring {
        var text = self
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return text
    }
}
