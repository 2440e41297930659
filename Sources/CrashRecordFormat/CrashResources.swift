// CrashResources.swift — what the process had and was allowed when it crashed (CC_SEC_RESOURCES
// and the CC_STR_PROC_* / CC_STR_CGROUP_* texts), and what they say together: the one place the
// kernel's texts are parsed and the findings worded, for crash-inspect, the minidump and the sinks.
//
// The handler keeps the kernel's texts as they were (cc_resources.c); every number here is read
// from them with the format each file has had since Linux 4.x, and a field the text does not have
// (another kernel, a file that could not be read) is nil, never a guess.

/// The process's resources at the crash.
package struct CrashResources: Sendable, Equatable {
    /// The CPUs the process could run on (its affinity).
    package var cpuCount: Int?
    /// Descriptors open when the crash began.
    package var openDescriptors: Int?
    /// RLIMIT_NOFILE as the process had it (before the handler raised it): `UInt64.max` is unlimited.
    package var descriptorSoftLimit: UInt64?
    package var descriptorHardLimit: UInt64?
    /// x86-64: CPUID leaf 1 EAX; aarch64: MIDR_EL1.
    package var cpuSignature: UInt32?
    /// x86-64: CPUID's vendor ("GenuineIntel"); nil on aarch64.
    package var cpuVendor: String?
    /// The kernel's texts, as read at the crash.
    package var processStatus: String?
    package var machineMemory: String?
    package var loadAverage: String?
    /// "v1 <dir>" or "v2 <dir>": the memory cgroup the next three come from.
    package var cgroupDirectory: String?
    package var cgroupCurrent: String?
    package var cgroupMax: String?
    package var cgroupEvents: String?

    package init() {}

    // MARK: - Parsed

    /// Resident memory (`VmRSS`), bytes.
    package var residentBytes: UInt64? { Self.kilobytes(processStatus, "VmRSS:") }
    /// The most the process ever had resident (`VmHWM`), bytes.
    package var peakResidentBytes: UInt64? { Self.kilobytes(processStatus, "VmHWM:") }
    /// Threads (`Threads`).
    package var threads: Int? { Self.field(processStatus, "Threads:").flatMap { Int($0) } }
    /// The machine's memory and what is available for new work (`MemTotal`, `MemAvailable`), bytes.
    package var machineMemoryTotal: UInt64? { Self.kilobytes(machineMemory, "MemTotal:") }
    package var machineMemoryAvailable: UInt64? { Self.kilobytes(machineMemory, "MemAvailable:") }
    /// The 1, 5 and 15 minute load averages.
    package var load: [Double]? {
        guard let words = loadAverage?.split(separator: " ").prefix(3), words.count == 3 else { return nil }
        let values = words.compactMap { Double($0) }
        return values.count == 3 ? values : nil
    }
    /// The cgroup's memory use (v2 `memory.current`, v1 `memory.usage_in_bytes`), bytes.
    package var cgroupUsage: UInt64? { cgroupCurrent.flatMap { UInt64($0.trimmingSpace) } }
    /// The cgroup's memory limit (v2 `memory.max`, v1 `memory.limit_in_bytes`), bytes; nil when
    /// there is none (`max`, or v1's page-rounded 2^63).
    package var cgroupLimit: UInt64? {
        guard let value = cgroupMax.flatMap({ UInt64($0.trimmingSpace) }), value < (1 << 62) else { return nil }
        return value
    }
    /// Whether the cgroup has no memory limit (read, and none set).
    package var cgroupUnlimited: Bool {
        guard let text = cgroupMax?.trimmingSpace else { return false }
        return text == "max" || (UInt64(text).map { $0 >= (1 << 62) } ?? false)
    }
    /// The cgroup's memory events: v2 `oom`, `oom_kill`, `max`, `high`, `low`; v1 `oom_kill`,
    /// `under_oom`, `oom_kill_disable`.
    package var cgroupEventCounts: [String: UInt64] {
        var counts: [String: UInt64] = [:]
        for line in (cgroupEvents ?? "").split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 2, let value = UInt64(words[1]) { counts[String(words[0])] = value }
        }
        return counts
    }
    /// The cgroup's version and directory.
    package var cgroup: (version: Int, directory: String)? {
        guard let text = cgroupDirectory, text.count > 3, text.hasPrefix("v1 ") || text.hasPrefix("v2 ") else { return nil }
        return (text.hasPrefix("v1 ") ? 1 : 2, String(text.dropFirst(3)))
    }

    /// The processor as a minidump and a person name it: x86-64 family, model, stepping (with the
    /// extended fields, as Intel and AMD define them); aarch64 implementer, variant, part, revision.
    package var x86Identity: (family: UInt32, model: UInt32, stepping: UInt32)? {
        guard cpuVendor != nil, let eax = cpuSignature else { return nil }
        let base = (eax >> 8) & 0xF
        let family = base == 0xF ? base + ((eax >> 20) & 0xFF) : base
        let model = base == 0x6 || base == 0xF ? ((eax >> 4) & 0xF) | (((eax >> 16) & 0xF) << 4) : (eax >> 4) & 0xF
        return (family, model, eax & 0xF)
    }
    package var armIdentity: (implementer: UInt32, variant: UInt32, part: UInt32, revision: UInt32)? {
        guard cpuVendor == nil, let midr = cpuSignature else { return nil }
        return ((midr >> 24) & 0xFF, (midr >> 20) & 0xF, (midr >> 4) & 0xFFF, midr & 0xF)
    }

    /// The processor as people name it: "GenuineIntel family 6 model 85 stepping 7",
    /// "implementer 0x41 part 0xd0c r0p1".
    package var cpuDescription: String? {
        if let x86 = x86Identity, let vendor = cpuVendor {
            return "\(vendor) family \(x86.family) model \(x86.model) stepping \(x86.stepping)"
        }
        if let arm = armIdentity {
            return "implementer 0x\(String(arm.implementer, radix: 16)) part 0x\(String(arm.part, radix: 16)) r\(arm.variant)p\(arm.revision)"
        }
        return nil
    }

    // MARK: - Findings

    /// What the resources say about the crash, worst first, each one line: a cgroup near or at its
    /// memory limit, OOM events in it, the descriptors at their limit, the machine short of
    /// memory. Empty when nothing stands out.
    package var findings: [String] {
        var found: [String] = []
        if let usage = cgroupUsage, let limit = cgroupLimit, limit > 0 {
            let percent = Double(usage) / Double(limit) * 100
            if percent >= 90 {
                found.append("at \(Int(percent.rounded(.down))) % of the cgroup's memory limit (\(Self.bytes(usage)) of \(Self.bytes(limit)))")
            }
        }
        let events = cgroupEventCounts
        if let kills = events["oom_kill"], kills > 0 {
            found.append("the cgroup's OOM killer had killed \(kills) process\(kills == 1 ? "" : "es") in it")
        } else if let ooms = events["oom"], ooms > 0 {
            found.append("the cgroup had reached its memory limit \(ooms) time\(ooms == 1 ? "" : "s") (memory.events oom)")
        }
        if let open = openDescriptors, let limit = descriptorSoftLimit, limit != .max, limit > 0, UInt64(open) + 2 >= limit {
            found.append("\(open) descriptors open of \(limit) allowed: at the limit (RLIMIT_NOFILE)")
        }
        if let available = machineMemoryAvailable, let total = machineMemoryTotal, total > 0, Double(available) / Double(total) < 0.05 {
            found.append("the machine had \(Self.bytes(available)) of \(Self.bytes(total)) memory available")
        }
        return found
    }

    /// `bytes` as a person reads it: "1.9 GiB", "312 MiB", "640 KiB".
    package static func bytes(_ bytes: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes), unit = 0
        while value >= 1024, unit < units.count - 1 { value /= 1024; unit += 1 }
        let digits = value < 10 && unit > 0 ? 1 : 0
        var text = String(Int(value))
        if digits == 1 {
            let tenths = Int((value * 10).rounded(.down)) % 10
            text += ".\(tenths)"
        }
        return text + " " + units[unit]
    }

    // MARK: - The kernel's formats

    /// The value after `key` on its line of `text` ("VmRSS:\t  123 kB" → "123 kB").
    static func field(_ text: String?, _ key: String) -> Substring? {
        guard let text else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(key) {
            return line.dropFirst(key.count).drop { $0 == " " || $0 == "\t" }
        }
        return nil
    }

    /// A "<number> kB" field, in bytes.
    static func kilobytes(_ text: String?, _ key: String) -> UInt64? {
        guard let value = field(text, key), value.hasSuffix(" kB"), let number = UInt64(value.dropLast(3)) else { return nil }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: 1024)
        return overflow ? nil : bytes
    }
}

extension String {
    /// Without spaces and newlines at either end.
    fileprivate var trimmingSpace: String {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\n" || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\n" || last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
