// Events.swift — the event vocabulary shared by capture, tracking store and reporter: identity, presets, JSON text.
import HostFacts
import CrashRecordFormat
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Who the events belong to (the Sensors model: anonymous until login).
public struct EventIdentity: Sendable, Equatable {
    /// The id created once per installation and kept across runs.
    public var anonymousID: String?
    /// The logged-in user's id, if any.
    public var loginID: String?
    /// `loginID` when logged in, else `anonymousID`.
    public var distinctID: String? { loginID ?? anonymousID }

    /// An identity with these ids (nil: none yet).
    public init(anonymousID: String? = nil, loginID: String? = nil) {
        self.anonymousID = anonymousID
        self.loginID = loginID
    }
}

/// Preset (`$`-prefixed) properties every event of this process carries: what a data team
/// expects to segment by. No hostname, user name, environment or argv.
package enum PresetProperties {
    /// `$os`, `$os_version`, `$model`, `$lib`, `$lib_version`, `$timezone_offset`; the app's
    /// name and version are added by the caller that knows them.
    package static func current() -> [String: JSONScalar] {
        Dictionary(currentList(), uniquingKeysWith: { first, _ in first })
    }

    /// The same presets as an ordered list (no Dictionary: this runs on the launch path, where
    /// the first use of a hashed collection costs more than the work itself).
    package static func currentList() -> [(String, JSONScalar)] {
        var uts = utsname()
        uname(&uts)
        let machine = withUnsafeBytes(of: &uts.machine) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let release = withUnsafeBytes(of: &uts.release) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        return [
            ("$os", .string("Linux")),
            ("$os_version", .string(osVersion(kernelRelease: release))),
            ("$model", .string(machine)),
            ("$lib", .string(CrashCaptureLibrary.name)),
            ("$lib_version", .string(CrashCaptureLibrary.version)),
            // Sensors' convention: minutes to add to local time to get UTC (UTC+8 is -480).
            ("$timezone_offset", .int(-secondsEastOfUTC() / 60)),
        ]
    }

    /// The CPUs this process can use: those its affinity mask allows (what `nproc` prints),
    /// fewer when a cgroup v2 CPU quota (`cpu.max`) caps it, rounded up. Read directly: Foundation's
    /// `activeProcessorCount` costs ≈ 0.3 ms on first use, and this runs in CrashCapture's `start`.
    package static func processorCount() -> Int {
        // The affinity mask, from the kernel: one system call, where /proc/self/status's
        // Cpus_allowed, read before, cost a fresh process ≈ 25–40 µs. glibc declares
        // sched_getaffinity only for _GNU_SOURCE, which Swift's Glibc module is not built with:
        // found by name. Beyond 1024 CPUs it says EINVAL, and the count comes from sysconf.
        typealias Affinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer) -> Int32
        var count = 0
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_getaffinity") {
            var mask = cpu_set_t()
            if unsafeBitCast(symbol, to: Affinity.self)(0, MemoryLayout<cpu_set_t>.size, &mask) == 0 {
                count = withUnsafeBytes(of: &mask) { $0.reduce(0) { $0 + $1.nonzeroBitCount } }
            }
        }
        if count == 0 { count = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
        // "max 100000" (no quota) or "150000 100000" (1.5 CPUs).
        let fields = smallFile("/sys/fs/cgroup/cpu.max").split(whereSeparator: { $0 == 0x20 || $0 == 0x0A })
        if fields.count >= 2, let quota = Int(String(decoding: fields[0], as: UTF8.self)),
           let period = Int(String(decoding: fields[1], as: UTF8.self)), quota > 0, period > 0 {
            count = min(count, max(1, (quota + period - 1) / period))
        }
        return count
    }

    /// The local time zone's offset now, from localtime_r (Foundation's TimeZone costs ~0.4 ms
    /// to load on first use, on the launch path).
    static func secondsEastOfUTC() -> Int {
        var now = time(nil)
        var local = tm()
        localtime_r(&now, &local)
        return local.tm_gmtoff
    }

    /// A small file's bytes, or none (plain read(2): no Foundation on the launch path).
    static func smallFile(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 8192)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return count > 0 ? Array(bytes[0..<count]) : []
    }

    /// "Debian GNU/Linux 12 (bookworm); kernel 6.1.0-18-amd64": os-release's `PRETTY_NAME`
    /// (``OSRelease``) and uname's release.
    static func osVersion(kernelRelease: String) -> String {
        if let pretty = OSRelease.current()?.prettyName, !pretty.isEmpty { return pretty + "; kernel " + kernelRelease }
        return "kernel " + kernelRelease
    }
}

/// A JSON scalar: enough for event properties.
public enum JSONScalar: Sendable, Equatable {
    /// A JSON string.
    case string(String)
    /// A JSON integer.
    case int(Int)
    /// A JSON number with a fraction.
    case double(Double)
    /// `true` or `false`.
    case bool(Bool)

    /// The JSON text of this value.
    package var json: String {
        switch self {
        case .string(let s): return JSONText.quote(s)
        case .int(let i): return String(i)
        case .double(let d): return d.isFinite ? String(d) : "null"
        case .bool(let b): return b ? "true" : "false"
        }
    }
}
