// Minidump.swift — a crash record as a Linux minidump: the file lldb (`lldb -c`), Breakpad's
// minidump_stackwalk, Sentry's minidump processing (rust-minidump, symbolic) and every other
// minidump reader open.
//
// The layout is Microsoft's MINIDUMP format with the extensions Breakpad and Crashpad write on
// Linux: a 32-byte header, the stream directory, then the streams, every structure 4-aligned and
// every integer little-endian. What goes in, from what the record holds:
//
//   ThreadList (3)          every recorded thread: its id, its registers as a CPU context
//                           (MinidumpContext), its stack as a memory range (the crashed thread's
//                           from sp up, as far as the record kept it; other threads have none)
//   ThreadNames (24)        each thread's name
//   ModuleList (4)          every image: base, size, path, a CodeView record `BpEL` + GNU build-id
//   MemoryList (5)          the record's memory windows (stack, around pc, around the fault address),
//                           overlapping ones merged: a reader wants disjoint ranges, and lldb reads a
//                           thread's stack only through this list
//   Exception (6)           the signal (ExceptionCode), si_code (ExceptionFlags), the fault address
//                           (or, for a signal without one, the crashed thread's pc), its context
//   SystemInfo (7)          the CPU architecture, how many CPUs the process could use and which
//                           processor (CPUID / MIDR_EL1), platform 0x8201 (Linux, as Breakpad and
//                           Crashpad write it), the kernel's release as the OS version
//   LinuxProcStatus         the kernel's /proc/<pid>/status at the crash (memory, threads) when the
//     (0x47670004)          record has it, else Name, Pid, PPid, Uid as it would say them (lldb
//                           takes the pid from here)
//   LinuxMaps (0x47670009)  one line per image span, one for the stack window
//   CrashpadInfo            simple annotations: the Swift runtime's fatal-error message, glibc's abort
//     (0x43500001)          message, an uncaught C++ exception (type, what()), the record's notes,
//                           why the record is incomplete
//
// What a minidump cannot say (Swift async callers, parent tasks, breadcrumbs, requests in flight,
// the other threads' unwound frames) stays in the record and in the JSON event
// (the CrashReporter catalog's Minidumps article).

package import CrashRecordFormat

/// A crash record written as a Linux minidump.
package struct Minidump: Sendable {
    /// The minidump file.
    package let bytes: [UInt8]
    /// What the minidump leaves out or cannot say, one line each (also in its annotations).
    package let notes: [String]

    /// Why a record cannot become a minidump.
    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// The record's CPU is neither x86-64 nor aarch64: there is no context layout to write its
        /// registers in.
        case unknownArchitecture(UInt16)

        package var description: String {
            switch self {
            case .unknownArchitecture(let value):
                return "the record's architecture (\(value)) has no minidump context here: only x86-64 and aarch64 records can be exported"
            }
        }
    }

    /// Stream types written (minidump_format.h; Breakpad's Linux and Crashpad's extensions).
    enum Stream: UInt32 {
        case threadList = 3
        case moduleList = 4
        case memoryList = 5
        case exception = 6
        case systemInfo = 7
        case threadNames = 24
        case linuxProcStatus = 0x4767_0004
        case linuxMaps = 0x4767_0009
        case crashpadInfo = 0x4350_0001
    }

    static let signature: UInt32 = 0x504D_444D     // "MDMP"
    static let version: UInt32 = 0xA793            // MD_HEADER_VERSION
    static let platformLinux: UInt32 = 0x8201       // MD_OS_LINUX
    static let codeViewELF: UInt32 = 0x4270_454C    // "BpEL": MDCVInfoELF
    static let architectureAMD64: UInt16 = 9        // MD_CPU_ARCHITECTURE_AMD64
    static let architectureARM64: UInt16 = 0x8003   // MD_CPU_ARCHITECTURE_ARM64_OLD (Breakpad's Linux writer)

    /// The annotation keys of the CrashpadInfo stream's simple annotations.
    package enum AnnotationKey {
        package static let fatalMessage = "swift.fatal_message"
        package static let abortMessage = "glibc.abort_message"
        package static let runtimeWarnings = "swift.runtime_warnings"
        /// An uncaught C++ exception: its one-line summary (type, what()).
        package static let cxxException = "cxx.uncaught_exception"
        package static let notes = "crashcapture.notes"
        package static let incomplete = "crashcapture.incomplete"
    }

    /// Writes `record` as a minidump. `memory: false` leaves every byte of process memory out (the
    /// MemoryList is empty and no thread has a stack): what a sink sends when stack memory may
    /// not leave the machine. Throws ``Failure/unknownArchitecture(_:)`` for a record of another CPU.
    package init(record: CrashRecord, memory: Bool = true) throws(Failure) {
        let architecture = record.architecture
        if case .unknown(let value) = architecture { throw Failure.unknownArchitecture(value) }
        var notes: [String] = []
        if case .incomplete(let reason) = record.completeness {
            notes.append("the record is incomplete (\(reason)): the minidump holds what it has")
        }
        if !memory && !record.memory.isEmpty { notes.append("memory left out: no stack or memory window is included") }
        let ranges = memory ? Self.disjointRanges(record.memory) : []

        // Each thread's registers: a thread's own, the crashed thread's from CC_SEC_REGISTERS,
        // else its innermost frame as pc (a thread that was not stopped has none of these).
        let crashedTID = record.crashedThread?.tid ?? record.process?.tid
        var threads: [(tid: Int32, name: String, registers: [Register])] = record.threads.map { thread in
            var registers = thread.registers
            if registers.isEmpty && thread.crashed { registers = record.registers }
            if registers.isEmpty, let pc = thread.frames.first {
                registers = MinidumpContext.programCounterOnly(pc, architecture: architecture)
            }
            return (thread.tid, thread.name, registers)
        }
        if threads.isEmpty, let process = record.process, !record.registers.isEmpty {
            threads = [(process.tid, process.threadName, record.registers)]
        }
        let withoutRegisters = threads.filter { $0.registers.isEmpty }.count
        if withoutRegisters > 0 {
            notes.append("\(withoutRegisters) of \(threads.count) threads have no registers in the record (not stopped in time): their contexts are zero")
        }
        if threads.isEmpty { notes.append("the record holds no thread: the minidump has none") }
        if memory && threads.count > 1 {
            let others = threads.count == 2 ? "1 other thread has" : "\(threads.count - 1) other threads have"
            notes.append("\(others) no stack (the record keeps their frames, not their memory): a debugger shows their innermost frame; crash-inspect show, all of them")
        }

        let images = record.images
        if images.contains(where: { $0.buildID.isEmpty }) {
            notes.append("\(images.filter { $0.buildID.isEmpty }.count) images have no GNU build-id: their CodeView records are empty")
        }
        if record.signal == nil { notes.append("the record holds no signal: the minidump has no exception stream") }

        var maps = images.map { image in
            Self.mapsLine(start: image.base, end: image.base &+ image.size, permissions: "r-xp", path: image.path)
        }
        if let crashedTID, let sp = MinidumpContext.stackPointer(threads.first { $0.tid == crashedTID }?.registers ?? [], architecture: architecture),
           let index = Self.stackRange(at: sp, in: ranges), case let range = ranges[index],
           !images.contains(where: { $0.contains(range.address) }) {
            maps.append(Self.mapsLine(start: range.address, end: range.address + UInt64(range.bytes.count), permissions: "rw-p", path: "[stack]"))
        }

        var annotations: [(String, String)] = []
        if let message = record.fatalMessage { annotations.append((AnnotationKey.fatalMessage, message)) }
        if let message = record.abortMessage { annotations.append((AnnotationKey.abortMessage, message)) }
        if let warnings = record.runtimeWarningLines { annotations.append((AnnotationKey.runtimeWarnings, warnings)) }
        if let cxx = record.cxxException { annotations.append((AnnotationKey.cxxException, cxx.summary)) }
        if case .incomplete(let reason) = record.completeness { annotations.append((AnnotationKey.incomplete, reason)) }
        let allNotes = record.notes + notes
        if !allNotes.isEmpty { annotations.append((AnnotationKey.notes, allNotes.joined(separator: "\n"))) }

        // The header and the directory come first; their size is known before any stream is written.
        let streamCount = 5 + (record.signal != nil ? 1 : 0) + (record.process != nil ? 1 : 0)
            + (maps.isEmpty ? 0 : 1) + (annotations.isEmpty ? 0 : 1)
        let headerSize = 32, entrySize = 12
        var out = MinidumpBytes()
        out.zeros(headerSize + entrySize * streamCount)
        var directory: [(Stream, Location)] = []

        // Memory first, 8-aligned: the MemoryList and the crashed thread's stack point into it.
        var memoryLocations: [Location] = []
        for range in ranges {
            out.align(8)
            let start = out.rva
            out.append(range.bytes)
            memoryLocations.append(Location(size: out.rva - start, rva: start))
        }
        // A thread's stack: the range holding its sp, else (sp in a stack overflow's guard page)
        // the range the record read from the first readable page above it.
        func stack(at sp: UInt64?) -> (start: UInt64, location: Location) {
            guard let sp, let index = Self.stackRange(at: sp, in: ranges) else { return (sp ?? 0, .none) }
            return (ranges[index].address, memoryLocations[index])
        }

        // The contexts.
        var contexts: [Int32: Location] = [:]
        for thread in threads {
            let context = MinidumpContext.bytes(thread.registers, architecture: architecture) ?? []
            contexts[thread.tid] = out.block { $0.append(context) }
        }

        let threadList = out.block { out in
            out.u32(UInt32(threads.count))
            for thread in threads {
                out.u32(UInt32(bitPattern: thread.tid))
                out.u32(0)                                    // suspend_count
                out.u32(0)                                    // priority_class
                out.u32(0)                                    // priority
                out.u64(0)                                    // teb
                let stack = stack(at: MinidumpContext.stackPointer(thread.registers, architecture: architecture))
                out.u64(stack.start)
                out.location(stack.location)
                out.location(contexts[thread.tid] ?? .none)
            }
        }
        directory.append((.threadList, threadList))

        let nameRVAs = threads.map { out.utf16String($0.name) }
        let threadNames = out.block { out in
            out.u32(UInt32(threads.count))
            for (thread, rva) in zip(threads, nameRVAs) {
                out.u32(UInt32(bitPattern: thread.tid))
                out.u64(UInt64(rva))                          // RVA64 of a MINIDUMP_STRING
            }
        }
        directory.append((.threadNames, threadNames))

        // Modules: names and CodeView records first, then the list that points at them.
        let moduleNames = images.map { out.utf16String($0.path) }
        let codeViews = images.map { image in
            out.block { out in
                out.u32(Self.codeViewELF)
                out.append(image.buildID)
            }
        }
        let moduleList = out.block { out in
            out.u32(UInt32(images.count))
            for (index, image) in images.enumerated() {
                out.u64(image.base)
                out.u32(UInt32(clamping: image.size))
                out.u32(0)                                    // checksum
                out.u32(0)                                    // time_date_stamp
                out.u32(moduleNames[index])
                out.zeros(52)                                 // VS_FIXEDFILEINFO: no version resource on Linux
                out.location(image.buildID.isEmpty ? .none : codeViews[index])
                out.location(.none)                           // misc_record
                out.u64(0)                                    // reserved0
                out.u64(0)                                    // reserved1
            }
        }
        directory.append((.moduleList, moduleList))

        let memoryList = out.block { out in
            out.u32(UInt32(ranges.count))
            for (range, location) in zip(ranges, memoryLocations) {
                out.u64(range.address)
                out.location(location)
            }
        }
        directory.append((.memoryList, memoryList))

        if let signal = record.signal {
            let crashedRegisters = threads.first { $0.tid == crashedTID }?.registers ?? record.registers
            let pc = crashedRegisters.first { $0.name == (architecture == .x86_64 ? "rip" : "pc") }?.value ?? 0
            let exception = out.block { out in
                out.u32(UInt32(bitPattern: crashedTID ?? 0))
                out.u32(0)                                    // __align
                out.u32(UInt32(bitPattern: signal.number))    // exception_code: the signal
                out.u32(UInt32(bitPattern: signal.code))      // exception_flags: si_code
                out.u64(0)                                    // exception_record
                out.u64(signal.faultAddress ?? pc)            // exception_address
                out.u32(0)                                    // number_parameters
                out.u32(0)                                    // __align
                out.zeros(15 * 8)                             // exception_information
                out.location(crashedTID.flatMap { contexts[$0] } ?? .none)
            }
            directory.append((.exception, exception))
        }

        let kernel = Self.kernel(record.kernel)
        let csdVersion = out.utf16String(kernel.description)
        // The processor as the record's resources name it (CPUID / MIDR, read by the handler), the
        // way Breakpad's writer fills these: x86 family as the level, model and stepping as the
        // revision, the vendor and CPUID leaf 1 EAX in the CPU union; on arm64 MIDR_EL1 there.
        let resources = record.resources
        let x86 = architecture == .x86_64 ? resources?.x86Identity : nil
        let systemInfo = out.block { out in
            out.u16(architecture == .x86_64 ? Self.architectureAMD64 : Self.architectureARM64)
            out.u16(UInt16(clamping: x86?.family ?? 0))                               // processor_level
            out.u16(UInt16(clamping: ((x86?.model ?? 0) << 8) | (x86?.stepping ?? 0))) // processor_revision
            out.u8(UInt8(clamping: resources?.cpuCount ?? 0))                         // number_of_processors
            out.u8(0)                                         // product_type
            out.u32(kernel.version.0)
            out.u32(kernel.version.1)
            out.u32(kernel.version.2)
            out.u32(Self.platformLinux)
            out.u32(csdVersion)
            out.u16(0)                                        // suite_mask
            out.u16(0)                                        // reserved2
            if x86 != nil, let vendor = resources?.cpuVendor, let eax = resources?.cpuSignature {
                // x86_cpu_info: vendor_id[3] (EBX, EDX, ECX of leaf 0), version_information, feature_information, amd_extended.
                let vendorBytes = Array(vendor.utf8.prefix(12)) + Array(repeating: 0, count: max(0, 12 - vendor.utf8.count))
                for word in 0..<3 {
                    out.u32(UInt32(vendorBytes[word * 4]) | UInt32(vendorBytes[word * 4 + 1]) << 8
                            | UInt32(vendorBytes[word * 4 + 2]) << 16 | UInt32(vendorBytes[word * 4 + 3]) << 24)
                }
                out.u32(eax)
                out.zeros(8)
            } else if architecture == .aarch64, let midr = resources?.cpuSignature {
                out.u32(midr)                                 // arm_cpu_info.cpuid: MIDR_EL1
                out.zeros(20)
            } else {
                out.zeros(24)                                 // the CPU union: no identity in the record
            }
        }
        directory.append((.systemInfo, systemInfo))

        if let status = resources?.processStatus, status.hasPrefix("Name:") {
            // The kernel's own /proc/<pid>/status at the crash (memory, threads, limits).
            directory.append((.linuxProcStatus, out.block { $0.append(Array(status.utf8)) }))
        } else if let process = record.process {
            let name = String((record.appName ?? record.executablePath?.split(separator: "/").last.map(String.init) ?? process.threadName).prefix(15))
            let status = "Name:\t\(name)\nTgid:\t\(process.pid)\nPid:\t\(process.pid)\nPPid:\t\(process.ppid)\nUid:\t\(process.uid)\nThreads:\t\(threads.count)\n"
            directory.append((.linuxProcStatus, out.block { $0.append(Array(status.utf8)) }))
        }

        if !maps.isEmpty {
            directory.append((.linuxMaps, out.block { $0.append(Array(maps.joined().utf8)) }))
        }

        if !annotations.isEmpty {
            let strings = annotations.map { (out.utf8String($0.0), out.utf8String($0.1)) }
            let dictionary = out.block { out in
                out.u32(UInt32(strings.count))
                for (key, value) in strings {
                    out.u32(key)
                    out.u32(value)
                }
            }
            let moduleLinks = out.block { $0.u32(0) }             // MinidumpModuleCrashpadInfoList: none
            let info = out.block { out in
                out.u32(1)                                    // version
                out.zeros(16)                                 // report_id
                out.zeros(16)                                 // client_id
                out.location(dictionary)
                out.location(moduleLinks)
            }
            directory.append((.crashpadInfo, info))
        }

        precondition(directory.count == streamCount, "the stream count written differs from the one reserved")
        var header = MinidumpBytes()
        header.u32(Self.signature)
        header.u32(Self.version)
        header.u32(UInt32(directory.count))
        header.u32(UInt32(headerSize))                        // stream_directory_rva
        header.u32(0)                                         // checksum
        header.u32(UInt32(truncatingIfNeeded: max(0, (record.process?.crashWallNanoseconds ?? 0) / 1_000_000_000)))
        header.u64(0)                                         // flags: MiniDumpNormal
        for (stream, location) in directory {
            header.u32(stream.rawValue)
            header.location(location)
        }
        out.replace(at: 0, with: header.bytes)
        self.bytes = out.bytes
        self.notes = notes
    }

    /// A memory range of the minidump: bytes read at an address.
    struct Range {
        var address: UInt64
        var bytes: [UInt8]
    }

    /// The record's windows as disjoint ranges in address order: overlapping or adjacent windows
    /// merged (the later window's bytes beyond the earlier one's end appended).
    static func disjointRanges(_ windows: [MemoryWindow]) -> [Range] {
        var merged: [Range] = []
        // A window running past the end of the address space is no memory a process has (a
        // damaged record): left out, so that every range's end is an address.
        let windows = windows.filter { !$0.bytes.isEmpty && !$0.address.addingReportingOverflow(UInt64($0.bytes.count)).overflow }
        for window in windows.sorted(by: { $0.address < $1.address }) {
            if var last = merged.last, window.address <= last.address + UInt64(last.bytes.count) {
                let end = last.address + UInt64(last.bytes.count)
                let windowEnd = window.address + UInt64(window.bytes.count)
                if windowEnd > end { last.bytes += window.bytes.suffix(Int(windowEnd - end)) }
                merged[merged.count - 1] = last
            } else {
                merged.append(Range(address: window.address, bytes: window.bytes))
            }
        }
        return merged
    }

    /// The index of the range that holds a thread's stack at `sp`: the one containing sp, else the
    /// first one starting less than a stack window (64 KiB) above it.
    static func stackRange(at sp: UInt64, in ranges: [Range]) -> Int? {
        if let index = ranges.firstIndex(where: { $0.address <= sp && sp - $0.address < UInt64($0.bytes.count) }) { return index }
        return ranges.firstIndex { $0.address > sp && $0.address - sp < 64 * 1024 }
    }

    /// The kernel string of the record ("Linux 6.1.0-18-amd64 #1 SMP … x86_64") as the OS
    /// version: the release's first three numbers, and the text after the system's name.
    static func kernel(_ text: String?) -> (version: (UInt32, UInt32, UInt32), description: String) {
        guard let text else { return ((0, 0, 0), "") }
        let words = text.split(separator: " ", omittingEmptySubsequences: true)
        let rest = words.first == "Linux" ? words.dropFirst().joined(separator: " ") : text
        let release = words.first == "Linux" ? words.dropFirst().first ?? "" : words.first ?? ""
        var numbers: [UInt32] = []
        for part in release.split(whereSeparator: { !$0.isNumber }).prefix(3) { numbers.append(UInt32(part) ?? 0) }
        while numbers.count < 3 { numbers.append(0) }
        return ((numbers[0], numbers[1], numbers[2]), rest)
    }

    /// One line of /proc/<pid>/maps.
    static func mapsLine(start: UInt64, end: UInt64, permissions: String, path: String) -> String {
        "\(hex(start))-\(hex(end)) \(permissions) 00000000 00:00 0 \(path)\n"
    }

    static func hex(_ value: UInt64) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 8 - text.count)) + text
    }

}
