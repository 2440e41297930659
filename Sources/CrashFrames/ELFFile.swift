// ELFFile.swift — the two facts symbolication needs from a binary on disk: its build-id and its first load address.
import CrashRecordFormat
#if canImport(Glibc)
import Glibc
#endif

/// Reads an ELF64 little-endian file's GNU build-id and the virtual address of its first
/// `PT_LOAD` segment. The file is untrusted: every offset is bounds-checked and a malformed
/// file yields an error, never a crash.
package struct ELFFile: Sendable {
    /// The GNU build-id note's bytes, or empty when the file has none.
    package let buildID: [UInt8]
    /// `p_vaddr` of the first PT_LOAD, rounded down to its page: subtract it from the image's
    /// load address to get the load bias.
    package let firstLoadAddress: UInt64
    /// True when the file has DWARF: a `.debug_info` (or `.zdebug_info`) section with contents.
    /// A stripped binary has none; a separate debug file (`objcopy --only-keep-debug`) has it.
    package let hasDebugInfo: Bool
    /// True for a separate debug file: its `.text` is `SHT_NOBITS` (the code was left out),
    /// as `objcopy --only-keep-debug` and `eu-strip -f` write them.
    package let isSeparateDebugFile: Bool
    /// The file this was read from.
    package let path: String
    /// The span of the `PT_LOAD` segments, unrounded: what a mapping of the file covers.
    package let loadSpan: LoadSpan?
    /// `.text` when it has contents in the file (`SHT_PROGBITS`): file offset and size.
    let textSection: (offset: UInt64, size: UInt64)?

    /// Where the loadable segments lie in memory.
    package struct LoadSpan: Sendable, Equatable {
        /// The lowest `p_vaddr` of a `PT_LOAD`.
        package let first: UInt64
        /// `p_vaddr + p_filesz` and `p_vaddr + p_memsz` of the segment that reaches highest.
        package let fileEnd: UInt64
        package let memoryEnd: UInt64
    }

    /// Why a file could not be read as ELF.
    package struct Error: Swift.Error, CustomStringConvertible, Equatable {
        package let path: String
        package let reason: String
        package var description: String { "\(path): \(reason)" }
    }

    /// Reads only the headers and notes (a few KiB at most) from `path`.
    /// - Throws: ``ELFFile/Error`` when the file cannot be opened or is not ELF64 little-endian.
    package init(path: String) throws {
        guard let file = ReadOnlyFile(path: path) else {
            throw Error(path: path, reason: "cannot open")
        }
        func read(_ offset: UInt64, _ count: Int) -> [UInt8] {
            guard count > 0, count <= 1 << 20 else { return [] }
            return file.read(at: offset, count: count)
        }
        let header = read(0, 64)
        guard header.count == 64, header[0] == 0x7F, header[1] == 0x45, header[2] == 0x4C, header[3] == 0x46 else {
            throw Error(path: path, reason: "not an ELF file")
        }
        guard header[4] == 2, header[5] == 1 else { throw Error(path: path, reason: "not ELF64 little-endian") }
        let phoff = header.u64(at: 32)
        let phentsize = Int(header.u16(at: 54))
        let phnum = Int(header.u16(at: 56))
        guard phentsize == 56, phnum > 0, phnum <= 256 else { throw Error(path: path, reason: "bad program headers") }
        let table = read(phoff, phentsize * phnum)
        guard table.count == phentsize * phnum else { throw Error(path: path, reason: "truncated program headers") }
        var firstLoad: UInt64?
        var buildID: [UInt8] = []
        var lowest: UInt64?
        var fileEnd: UInt64 = 0, memoryEnd: UInt64 = 0, spanValid = true
        for index in 0..<phnum {
            let base = index * phentsize
            let type = table.u32(at: base)
            if type == 1, firstLoad == nil { firstLoad = table.u64(at: base + 16) & ~0xFFF }
            if type == 1 {
                let vaddr = table.u64(at: base + 16), filesz = table.u64(at: base + 32), memsz = table.u64(at: base + 40)
                lowest = min(lowest ?? vaddr, vaddr)
                let (end, overflow) = vaddr.addingReportingOverflow(memsz)
                if overflow { spanValid = false } else if end >= memoryEnd { memoryEnd = end; fileEnd = vaddr &+ filesz }
            }
            if type == 4, buildID.isEmpty {
                let offset = table.u64(at: base + 8)
                let size = Int(min(table.u64(at: base + 32), 1 << 16))
                buildID = Self.buildID(inNotes: read(offset, size))
            }
        }
        self.buildID = buildID
        self.firstLoadAddress = firstLoad ?? 0
        self.path = path
        self.loadSpan = spanValid ? lowest.map { LoadSpan(first: $0, fileEnd: fileEnd, memoryEnd: memoryEnd) } : nil
        // Section headers: only to tell whether debug info is there. A file whose section
        // table is missing or malformed simply has none (it may still be a usable binary).
        var hasDebugInfo = false
        var isSeparateDebugFile = false
        var textSection: (offset: UInt64, size: UInt64)?
        let shoff = header.u64(at: 40)
        let shentsize = Int(header.u16(at: 58))
        let shnum = Int(header.u16(at: 60))
        let shstrndx = Int(header.u16(at: 62))
        if shoff > 0, shentsize == 64, shnum > 0, shnum <= 16384, shstrndx < shnum {
            let sections = read(shoff, shentsize * shnum)
            if sections.count == shentsize * shnum {
                let namesHeader = shstrndx * shentsize
                let names = read(sections.u64(at: namesHeader + 24), Int(min(sections.u64(at: namesHeader + 32), 1 << 20)))
                for index in 0..<shnum {
                    let base = index * shentsize
                    let nameOffset = Int(sections.u32(at: base))
                    guard nameOffset < names.count else { continue }
                    let end = names[nameOffset...].firstIndex(of: 0) ?? names.count
                    let name = String(decoding: names[nameOffset..<end], as: UTF8.self)
                    let type = sections.u32(at: base + 4)
                    let size = sections.u64(at: base + 32)
                    if (name == ".debug_info" || name == ".zdebug_info"), type != 8, size > 0 { hasDebugInfo = true }
                    if name == ".text", type == 8 { isSeparateDebugFile = true }
                    if name == ".text", type == 1, textSection == nil { textSection = (sections.u64(at: base + 24), size) }
                }
            }
        }
        self.hasDebugInfo = hasDebugInfo
        self.isSeparateDebugFile = isSeparateDebugFile
        self.textSection = textSection
    }

    /// The first `min(count, size)` bytes of `.text`, read from the file now; nil when it has no
    /// `.text` with contents or the read comes up short.
    package func textPrefix(_ count: Int = 4096) -> [UInt8]? {
        guard let textSection, let file = ReadOnlyFile(path: path) else { return nil }
        let size = Int(min(textSection.size, UInt64(max(0, count))))
        if size == 0 { return [] }
        let bytes = file.read(at: textSection.offset, count: size)
        return bytes.count == size ? bytes : nil
    }

    /// The NT_GNU_BUILD_ID descriptor in a PT_NOTE segment's bytes, or empty.
    static func buildID(inNotes notes: [UInt8]) -> [UInt8] {
        var offset = 0
        while offset + 12 <= notes.count {
            let nameSize = Int(notes.u32(at: offset))
            let descSize = Int(notes.u32(at: offset + 4))
            let type = notes.u32(at: offset + 8)
            let nameStart = offset + 12
            let descStart = nameStart + ((nameSize + 3) & ~3)
            let next = descStart + ((descSize + 3) & ~3)
            guard nameSize <= notes.count, descSize <= notes.count, next <= notes.count, next > offset else { break }
            if type == 3, nameSize == 4, Array(notes[nameStart..<nameStart + 3]) == [0x47, 0x4E, 0x55] {
                return Array(notes[descStart..<descStart + descSize])
            }
            offset = next
        }
        return []
    }
}

extension Array where Element == UInt8 {
    func u16(at offset: Int) -> UInt16 {
        guard offset >= 0, offset + 2 <= count else { return 0 }
        return UInt16(self[offset]) | UInt16(self[offset + 1]) << 8
    }
    func u32(at offset: Int) -> UInt32 {
        guard offset >= 0, offset + 4 <= count else { return 0 }
        return (0..<4).reduce(0) { $0 | UInt32(self[offset + $1]) << (8 * UInt32($1)) }
    }
    func u64(at offset: Int) -> UInt64 {
        guard offset >= 0, offset + 8 <= count else { return 0 }
        return (0..<8).reduce(0) { $0 | UInt64(self[offset + $1]) << (8 * UInt64($1)) }
    }
}

/// Lowercase hex of bytes, the way build-ids are written.
package func hexString(_ bytes: [UInt8]) -> String { CrashImage.lowercaseHex(bytes) }

/// A file open for reading at offsets (pread), closed when the last copy goes: what the ELF
/// readers take their headers, notes and tables from.
final class ReadOnlyFile {
    private let fd: Int32

    init?(path: String) {
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
    }

    deinit { close(fd) }

    /// Up to `count` bytes at `offset`: fewer at the end of the file, none when the offset is
    /// past it or the read fails.
    func read(at offset: UInt64, count: Int) -> [UInt8] {
        guard count > 0, offset <= UInt64(Int64.max) else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { buffer in
                pread(fd, buffer.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
            }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            filled += got
        }
        bytes.removeSubrange(filled...)
        return bytes
    }
}
