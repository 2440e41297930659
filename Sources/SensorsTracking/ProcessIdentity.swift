// ProcessIdentity.swift — which process a run marker or upload lease belongs to, and whether it still lives.
import Foundation
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
        let text = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Field 22 (starttime) of `/proc/<pid>/stat`, or `nil` if there is no such process.
    package static func startTicks(of pid: Int32) -> Int64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return nil }
        // The command name (field 2) is in parentheses and may hold spaces: parse after the last ')'.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state), so field 22 is fields[19].
        guard fields.count > 19, let ticks = Int64(fields[19]) else { return nil }
        return ticks
    }

    static func isZombie(_ pid: Int32) -> Bool {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return false }
        let state = text[text.index(after: close)...].split(separator: " ").first
        return state == "Z" || state == "X"
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

/// Clocks in the units events use.
enum Clock {
    /// Wall clock, ms since the epoch.
    static func wallMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// CLOCK_MONOTONIC in ns (the clock `$event_duration` is measured on).
    static func monotonicNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
