// ThreadStateSampler.swift — busy or waiting: each thread's scheduler state and the CPU time it used in
// a short window, read from /proc/self/task just before a hang or snapshot record stops the
// threads (CC_SEC_THREAD_STATES). A pool starved by computation and one starved by blocking
// calls give records of the same shape otherwise. For a computing hang, the busy threads' stacks
// sampled over a second (CC_SEC_STACK_SAMPLES): where they most often were. Ordinary code, on the
// watcher's thread.
import CShims
import HostFacts
#if canImport(Glibc)
import Glibc
#endif

enum ThreadStateSampler {
    /// How long the two readings are apart.
    static let window: UInt32 = 200

    /// Each thread's CPU time in ns, from its own CPU clock (cc_thread_cpu_times): the hang
    /// watcher reads it every tick, so that a hang record can say what each thread used since
    /// the stall began.
    static func cpuTimes() -> [Int32: UInt64] {
        let capacity = 4096
        var tids = [Int32](repeating: 0, count: capacity), times = [UInt64](repeating: 0, count: capacity)
        let count = Int(cc_thread_cpu_times(&tids, &times, UInt32(capacity)))
        return Dictionary(zip(tids.prefix(count), times.prefix(count)), uniquingKeysWith: { a, _ in a })
    }

    /// The section's payload: two readings `window` ms apart of every thread but the caller, and,
    /// given the threads' CPU times at a tick before the stall (`since`), what each used since
    /// (a thread not there then: all it used); and the threads on the CPU for at least a quarter
    /// of the window, busiest first (the reader's `ThreadStates.busy`).
    static func sample(since baseline: [Int32: UInt64]? = nil) -> (section: [UInt8], busy: [Int32]) {
        let me = cc_current_tid()
        let first = read(excluding: me)
        usleep(window * 1000)
        let second = read(excluding: me)
        let cpuNow = baseline == nil ? [:] : cpuTimes()
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
            if let baseline, let cpu = cpuNow[tid] {
                let before = baseline[tid].flatMap { $0 <= cpu ? $0 : nil } ?? 0   // a thread id used again: the new thread's all
                entry.stall_cpu_ms = UInt32(clamping: (cpu - before) / 1_000_000)
            }
            entries.append(entry)
            if entries.count == 2000 { break }
        }
        header.count = UInt32(entries.count)
        header.window_ms = window
        let busy = entries.filter { UInt64($0.window_cpu_ms) * 4 >= UInt64(window) }.sorted { $0.window_cpu_ms > $1.window_cpu_ms }.map(\.tid)
        return (withUnsafeBytes(of: header) { Array($0) } + entries.withUnsafeBytes { Array($0) }, busy)
    }

    /// How many rounds a computing hang's busy threads are sampled, and how far apart.
    static let rounds = 5
    static let interval: UInt32 = 200
    static let maxFrames = 64

    /// CC_SEC_STACK_SAMPLES's payload: `threads` (at most 8) stopped and unwound `rounds` times,
    /// `interval` ms apart (cc_sample_threads); nil when capture could take none.
    static func stackSamples(of threads: [Int32]) -> [UInt8]? {
        let tids = Array(threads.prefix(Int(CC_SAMPLE_THREADS_MAX)))
        guard !tids.isEmpty else { return nil }
        var entries: [UInt8] = []
        var count: UInt32 = 0
        for round in 0 ..< rounds {
            if round > 0 { usleep(interval * 1000) }
            var frames = [UInt64](repeating: 0, count: tids.count * maxFrames)
            var counts = [UInt32](repeating: 0, count: tids.count)
            guard cc_sample_threads(tids, UInt32(tids.count), &frames, UInt32(maxFrames), &counts) == 0 else { continue }
            for (index, tid) in tids.enumerated() where counts[index] > 0 {
                var entry = cc_stack_sample_t()
                entry.tid = tid
                entry.round = UInt32(round)
                entry.frame_count = counts[index]
                entries += withUnsafeBytes(of: entry) { Array($0) }
                entries += frames[index * maxFrames ..< index * maxFrames + Int(counts[index])].withUnsafeBytes { Array($0) }
                count += 1
            }
        }
        guard count > 0 else { return nil }
        var header = cc_sec_stack_samples_t()
        header.count = count
        header.samples = UInt32(rounds)
        header.interval_ms = interval
        return withUnsafeBytes(of: header) { Array($0) } + entries
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
