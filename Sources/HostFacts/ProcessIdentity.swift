// ProcessIdentity.swift — which process a run marker, a claim or an upload lease belongs to, and
// whether it still lives; and the clocks runs are timed on. Glibc only, no Foundation.
#if canImport(Glibc)
import Glibc
#endif

/// A process named so that pid reuse cannot fool a liveness check: pid, boot id and the
/// process's start time in clock ticks since boot (`/proc/<pid>/stat` field 22).
package struct ProcessIdentity: Sendable, Equatable {
    package var pid: Int32
    package var bootID: String
    package var startTicks: Int64

    package init(pid: Int32, bootID: String, startTicks: Int64) {
        self.pid = pid
        self.bootID = bootID
        self.startTicks = startTicks
    }

    /// This process.
    package static let current = ProcessIdentity(pid: getpid(), bootID: bootID(), startTicks: startTicks(of: getpid()) ?? 0)

    /// `/proc/sys/kernel/random/boot_id`, or "" when unreadable.
    package static func bootID() -> String {
        let bytes = SmallFile.read("/proc/sys/kernel/random/boot_id", limit: 128)?.bytes ?? []
        // One line: the id and a newline.
        return String(decoding: bytes.prefix { $0 != 0x0A && $0 != 0x20 && $0 != 0x09 }, as: UTF8.self)
    }

    /// Field 22 (starttime) of `/proc/<pid>/stat`, or `nil` if there is no such process.
    package static func startTicks(of pid: Int32) -> Int64? {
        // fields[0] after the command name is field 3 (state), so field 22 is field 19 there.
        guard let field = statField(19, of: pid), !field.isEmpty else { return nil }
        var ticks: Int64 = 0
        for byte in field {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflow) = ticks.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            ticks = times + Int64(byte - UInt8(ascii: "0"))
        }
        return ticks
    }

    /// Whether `pid` is a zombie (or dead, `X`): exited and not yet reaped.
    package static func isZombie(_ pid: Int32) -> Bool {
        guard let state = statField(0, of: pid) else { return false }
        return state.elementsEqual([UInt8(ascii: "Z")]) || state.elementsEqual([UInt8(ascii: "X")])
    }

    /// Field `index` after the command name of `/proc/<pid>/stat` (0: field 3, the state), or
    /// `nil` when there is no such process or field. Parsed as bytes, after the last `)`: the
    /// command name (field 2) is in parentheses and may hold spaces. (This runs at every launch;
    /// splitting the text into `Substring`s cost it more than the read.)
    private static func statField(_ index: Int, of pid: Int32) -> ArraySlice<UInt8>? {
        guard let bytes = SmallFile.read("/proc/\(pid)/stat", limit: 4096)?.bytes,
              let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        var field = -1
        var start = close + 1
        for position in (close + 1)...bytes.count {
            let end = position == bytes.count || bytes[position] == UInt8(ascii: " ") || bytes[position] == 0x0A
            guard end else { continue }
            if position > start {
                field += 1
                if field == index { return bytes[start..<position] }
            }
            start = position + 1
        }
        return nil
    }

    /// Whether this process is still running (same boot, same pid, same start time).
    /// A process of another boot is never alive. A zombie counts as dead.
    package var isAlive: Bool {
        if pid == getpid() && startTicks == ProcessIdentity.current.startTicks { return true }
        guard bootID == ProcessIdentity.current.bootID, !bootID.isEmpty else { return false }
        guard let ticks = ProcessIdentity.startTicks(of: pid), ticks == startTicks else { return false }
        return !ProcessIdentity.isZombie(pid)
    }
}

/// Clocks in the units events and run markers use.
package enum Clock {
    /// Wall clock, ms since the epoch.
    package static func wallMilliseconds() -> Int64 { wallNanoseconds() / 1_000_000 }

    /// Wall clock, ns since the epoch.
    package static func wallNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// CLOCK_MONOTONIC in ns (the clock `$event_duration` is measured on).
    package static func monotonicNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
