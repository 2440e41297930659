// ImageIdentity.swift — the ids Sentry matches debug files by, for an image without a GNU build-id:
// the XOR of the first page of `.text`, read from the file on disk, as sentry-native and symbolic do.
import CrashRecordFormat
import CrashSymbolication
import Foundation

/// What CrashSentry needs from an ELF file that ``ELFFile`` (build-id, first load address) does
/// not give: the `.text` section's first bytes and the span of the `PT_LOAD` segments. A minimal
/// reader of the section and program headers of an ELF64 little-endian file; the file is
/// untrusted, so every offset is bounds-checked and a malformed file yields nil, never a crash.
struct ELFSections {
    /// The first `min(size, 4096)` bytes of the `.text` section (SHT_PROGBITS), or nil.
    let textPage: [UInt8]?
    /// The lowest `p_vaddr` of a PT_LOAD segment.
    let firstLoadAddress: UInt64
    /// The end of the last PT_LOAD's file contents (`p_vaddr + p_filesz`) and of its memory
    /// (`p_vaddr + p_memsz`).
    let loadFileEnd: UInt64
    let loadMemoryEnd: UInt64

    init?(path: String) {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        func read(_ offset: UInt64, _ count: Int) -> [UInt8] {
            guard count > 0, count <= 1 << 22, (try? handle.seek(toOffset: offset)) != nil else { return [] }
            return [UInt8]((try? handle.read(upToCount: count)) ?? Data())
        }
        let header = read(0, 64)
        guard header.count == 64, header[0] == 0x7F, header[1] == 0x45, header[2] == 0x4C, header[3] == 0x46,
              header[4] == 2, header[5] == 1 else { return nil }
        // Program headers: the PT_LOAD span.
        let phoff = header.le64(32), phentsize = Int(header.le16(54)), phnum = Int(header.le16(56))
        guard phentsize == 56, phnum > 0, phnum <= 256 else { return nil }
        let programs = read(phoff, phentsize * phnum)
        guard programs.count == phentsize * phnum else { return nil }
        var first: UInt64?
        var fileEnd: UInt64 = 0, memoryEnd: UInt64 = 0
        for index in 0..<phnum where programs.le32(index * 56) == 1 {
            let base = index * 56
            let vaddr = programs.le64(base + 16), filesz = programs.le64(base + 32), memsz = programs.le64(base + 40)
            first = min(first ?? vaddr, vaddr)
            let (end, overflow) = vaddr.addingReportingOverflow(memsz)
            guard !overflow else { return nil }
            if end >= memoryEnd { memoryEnd = end; fileEnd = vaddr &+ filesz }
        }
        guard let first else { return nil }
        firstLoadAddress = first
        loadFileEnd = fileEnd
        loadMemoryEnd = memoryEnd
        // Section headers: `.text` by name through the section-name string table.
        textPage = Self.textPage(header: header, read: read)
    }

    private static func textPage(header: [UInt8], read: (UInt64, Int) -> [UInt8]) -> [UInt8]? {
        let shoff = header.le64(40), shentsize = Int(header.le16(58)), shnum = Int(header.le16(60)), shstrndx = Int(header.le16(62))
        guard shoff > 0, shentsize == 64, shnum > 0, shnum <= 65_535, shstrndx < shnum else { return nil }
        let sections = read(shoff, shentsize * shnum)
        guard sections.count == shentsize * shnum else { return nil }
        let strings = shstrndx * 64
        let names = read(sections.le64(strings + 24), Int(min(sections.le64(strings + 32), 1 << 20)))
        for index in 0..<shnum {
            let base = index * 64
            guard sections.le32(base + 4) == 1 else { continue } // SHT_PROGBITS
            let nameOffset = Int(sections.le32(base))
            guard nameOffset + 6 <= names.count, Array(names[nameOffset..<nameOffset + 6]) == Array(".text\0".utf8) else { continue }
            let size = Int(min(sections.le64(base + 32), 4096))
            let bytes = size == 0 ? [] : read(sections.le64(base + 24), size)
            return bytes.count == size ? bytes : nil
        }
        return nil
    }
}

extension SentryEnvelope {
    /// The ids of one image as Sentry wants them: `code_id` (the build-id as hex) and `debug_id`.
    public struct ImageIDs: Sendable, Equatable {
        /// The GNU build-id as lowercase hex; nil when the image has none (as symbolic and
        /// sentry-native leave it out then).
        public var codeID: String?
        public var debugID: String
    }

    /// The ids of an image in a record. With a build-id, both come from it. Without one, the
    /// debug id is the XOR of the first 4,096 bytes of `.text` (sentry-native's and symbolic's
    /// fallback), read from the file at `image.path` — only when that file still looks like the
    /// one that was mapped: an ELF file without a build-id whose `PT_LOAD` span fits the
    /// record's mapping size and that was not modified after the crash (`crashTime`). Otherwise
    /// nil: no id rather than an invented one. `[vdso]` without a build-id has no file: nil.
    public static func imageIDs(_ image: CrashImage, crashTime: Date?, readFiles: Bool = true) -> ImageIDs? {
        if !image.buildID.isEmpty {
            return ImageIDs(codeID: image.buildIDHex, debugID: debugID(buildID: image.buildID))
        }
        guard readFiles, image.path.hasPrefix("/"), let hash = textHash(path: image.path, mappedSize: image.size, crashTime: crashTime) else {
            return nil
        }
        return ImageIDs(codeID: nil, debugID: debugID(buildID: hash))
    }

    /// The 16-byte XOR of the first page of `.text` of the file at `path`, when it passes the
    /// identity checks described at ``imageIDs(_:crashTime:readFiles:)``.
    static func textHash(path: String, mappedSize: UInt64, crashTime: Date?) -> [UInt8]? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              attributes[.type] as? FileAttributeType == .typeRegular else { return nil }
        if let crashTime, let modified = attributes[.modificationDate] as? Date, modified > crashTime { return nil }
        guard let file = try? ELFFile(path: path), file.buildID.isEmpty else { return nil }
        guard let sections = ELFSections(path: path), let text = sections.textPage else { return nil }
        // The mapping runs from the first segment's page to at least the end of the last
        // segment's file contents, and at most to the end of its memory rounded up to the
        // largest page size (64 KiB).
        let pageMask: UInt64 = 0xFFFF
        let start = sections.firstLoadAddress & ~0xFFF
        let smallest = sections.loadFileEnd &- start
        let largest = ((sections.loadMemoryEnd &+ pageMask) & ~pageMask) &- (sections.firstLoadAddress & ~pageMask)
        guard mappedSize >= smallest, mappedSize <= largest else { return nil }
        var hash = [UInt8](repeating: 0, count: 16)
        for (index, byte) in text.enumerated() { hash[index % 16] ^= byte }
        return hash
    }
}

extension Array where Element == UInt8 {
    func le16(_ offset: Int) -> UInt16 {
        guard offset >= 0, offset + 2 <= count else { return 0 }
        return UInt16(self[offset]) | UInt16(self[offset + 1]) << 8
    }
    func le32(_ offset: Int) -> UInt32 {
        guard offset >= 0, offset + 4 <= count else { return 0 }
        return (0..<4).reduce(0) { $0 | UInt32(self[offset + $1]) << (8 * UInt32($1)) }
    }
    func le64(_ offset: Int) -> UInt64 {
        guard offset >= 0, offset + 8 <= count else { return 0 }
        return (0..<8).reduce(0) { $0 | UInt64(self[offset + $1]) << (8 * UInt64($1)) }
    }
}
