// ThreadStateSampler.swift — busy or waiting: each thread's scheduler state and the CPU time it used in
// a short window, read from /proc/self/task just before a hang or snapshot record stops the
// threads (CC_SEC_THREAD_STATES). A pool starved by computation and one starved by blocking
// calls give records of the same shape otherwise. Ordinary code, on the watcher's thread.
import CShims
import HostFacts
#if canImport(Glibc)
import Glibc
#endif

enum ThreadStateSampler {
    /// How long the two readings are apart.
    static let window: UInt32 = 200

    /// The section's payload: two readings `window` ms apart of every thread but the caller.
    static func sample() -> [UInt8] {
        let me = cc_current_tid()
        let first = read(excluding: me)
        usleep(window * 1000)
        let second = read(excluding: me)
        let ticksPerMillisecond = max(1, Double(sysconf(Int32(_SC_CLK_TCK)))) / 1000
        var header = cc_sec_thread_states_t()
        var entries: [cc_thread_state_t] = []
        for (tid, now) in second.sorted(by: { $0.key < $1.key }) {
            var entry = cc_thread_state_t()
            entry.tid = tid
            entry.state = now.state
            let before = first[tid]?.ticks ?? now.ticks
            entry.window_cpu_ms = UInt32(clamping: Int64(Double(now.ticks &- before) / ticksPerMillisecond))
            entry.cpu_ms = UInt64(Double(now.ticks) / ticksPerMillisecond)
            entries.append(entry)
            if entries.count == 2000 { break }
        }
        header.count = UInt32(entries.count)
        header.window_ms = window
        return withUnsafeBytes(of: header) { Array($0) } + entries.withUnsafeBytes { Array($0) }
    }

    /// Each thread's state letter and utime + stime (clock ticks).
    static func read(excluding me: Int32) -> [Int32: (state: UInt8, ticks: UInt64)] {
        guard let directory = opendir("/proc/self/task") else { return [:] }
        defer { closedir(directory) }
        var threads: [Int32: (state: UInt8, ticks: UInt64)] = [:]
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let tid = Int32(name), tid != me,
                  let stat = SmallFile.read("/proc/self/task/\(name)/stat", limit: 1024)?.bytes,
                  let parsed = parse(stat) else { continue }
            threads[tid] = parsed
        }
        return threads
    }

    /// `/proc/<pid>/task/<tid>/stat`: after the name's closing parenthesis, the state, then
    /// fields 4–… of which utime and stime are the 14th and 15th of the line.
    static func parse(_ bytes: [UInt8]) -> (state: UInt8, ticks: UInt64)? {
        guard let close = bytes.lastIndex(of: UInt8(ascii: ")")), close + 2 < bytes.count else { return nil }
        let fields = bytes[(close + 2)...].split(separator: UInt8(ascii: " "))
        // fields[0] is the state (field 3); utime is field 14, stime 15.
        guard fields.count > 12, let state = fields[0].first,
              let utime = UInt64(String(decoding: fields[11], as: UTF8.self)),
              let stime = UInt64(String(decoding: fields[12], as: UTF8.self)) else { return nil }
        return (state, utime + stime)
    }
}
