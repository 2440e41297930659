// MemoryCgroup.swift — this process's memory cgroup as the memory watch reads it: its usage, the
// limit the OOM killer (or, with v2's memory.high, throttling) starts at, and how the usage
// splits (anon, file, shmem). Found as the OOM-kill counter is found (/proc/self/cgroup names the
// cgroup, /proc/self/mountinfo where its hierarchy is mounted); every read a small file, no
// Foundation; any failure is "unknown", never an error.

/// This process's memory cgroup (v1 or v2).
package struct MemoryCgroup: Sendable, Equatable {
    /// The cgroup's directory in cgroupfs.
    package var directory: String
    /// cgroup v2 (else v1's memory hierarchy).
    package var isV2: Bool

    package init(directory: String, isV2: Bool) {
        self.directory = directory
        self.isV2 = isV2
    }

    /// The memory cgroup of this process, or nil when there is none this code can read (no
    /// memory controller, v2's root cgroup, cgroupfs not mounted).
    package static func locate() -> MemoryCgroup? {
        guard let counter = OOMKillCounter.locate() else { return nil }
        let directory = String(counter[..<(counter.lastIndex(of: "/") ?? counter.endIndex)])
        return MemoryCgroup(directory: directory, isV2: !counter.hasSuffix("/memory.oom_control"))
    }

    /// What its usage is compared with.
    package struct Limit: Sendable, Equatable {
        package var bytes: UInt64
        /// v2's `memory.high`, lower than `memory.max`: the kernel throttles there (and may then
        /// reach `memory.max`).
        package var isHigh: Bool
        package init(bytes: UInt64, isHigh: Bool) {
            self.bytes = bytes
            self.isHigh = isHigh
        }
    }

    /// Bytes in use now: v2 `memory.current`, v1 `memory.usage_in_bytes`.
    package func usage() -> UInt64? {
        Self.number(SmallFile.text(directory + (isV2 ? "/memory.current" : "/memory.usage_in_bytes"), limit: 64)?.text)
    }

    /// The limit, or nil when there is none (v2 `max`; v1's "no limit", a page-rounded 2⁶³ − 1).
    package func limit() -> Limit? {
        if isV2 {
            let max = Self.number(SmallFile.text(directory + "/memory.max", limit: 64)?.text)
            let high = Self.number(SmallFile.text(directory + "/memory.high", limit: 64)?.text)
            switch (max, high) {
            case let (max?, high?) where high < max: return Limit(bytes: high, isHigh: true)
            case let (max?, _): return Limit(bytes: max, isHigh: false)
            case let (nil, high?): return Limit(bytes: high, isHigh: true)
            case (nil, nil): return nil
            }
        }
        guard let bytes = Self.number(SmallFile.text(directory + "/memory.limit_in_bytes", limit: 64)?.text),
              bytes < UInt64(1) << 62 else { return nil }
        return Limit(bytes: bytes, isHigh: false)
    }

    /// How the usage splits: anon (v1 `rss`), file (v1 `cache`), shmem.
    package func split() -> (anon: UInt64, file: UInt64, shmem: UInt64)? {
        guard let text = SmallFile.text(directory + "/memory.stat", limit: 16 << 10)?.text else { return nil }
        return Self.split(memoryStat: text, isV2: isV2)
    }

    /// ``split()`` from `memory.stat`'s text.
    package static func split(memoryStat text: String, isV2: Bool) -> (anon: UInt64, file: UInt64, shmem: UInt64)? {
        var values: [Substring: UInt64] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 2, let value = UInt64(fields[1]) { values[fields[0]] = value }
        }
        let keys: (Substring, Substring, Substring) = isV2 ? ("anon", "file", "shmem") : ("rss", "cache", "shmem")
        guard let anon = values[keys.0], let file = values[keys.1] else { return nil }
        return (anon, file, values[keys.2] ?? 0)
    }

    /// A file's one number; nil for `max`, an empty or bad text.
    static func number(_ text: String?) -> UInt64? {
        guard let text else { return nil }
        return UInt64(text.split(separator: "\n").first ?? "")
    }
}
