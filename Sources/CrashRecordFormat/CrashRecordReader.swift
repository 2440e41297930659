// CrashRecordReader.swift — turns the bytes of a crash record into a `CrashRecord`.
//
// Records are untrusted input: a file may be cut short, damaged, foreign, or hostile. The
// reader never traps on any input — every read is bounds checked, every size computed
// without overflow — and it keeps every whole section before the first damaged one.
// The layout comes from Sources/CCrashRecordLayout/include/cc_record.h via the imported C structs, so the writer
// and this reader share one definition of every size and offset.

import CCrashRecordLayout

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a crash record could not be read at all.
///
/// A record that is merely cut short or damaged after its header is not an error: the
/// reader returns what it found with `CrashRecord.Completeness.incomplete(reason:)`.
public enum CrashRecordError: Error, Equatable, CustomStringConvertible {
    /// The file could not be opened or read, is not a regular file, or is a symbolic link.
    case unreadable(path: String, reason: String)
    /// The file is larger than the reader's size limit.
    case tooLarge(size: Int, limit: Int)
    /// The file or byte buffer is empty.
    case empty
    /// The bytes are not a crash record (too short for the header, or the wrong magic).
    case notACrashRecord(reason: String)
    /// The record's version is 0 or newer than this reader knows (`CC_RECORD_VERSION`).
    case unsupportedVersion(Int)
    /// The file header is damaged (checksum mismatch, impossible size, wrong byte order).
    case corruptHeader(reason: String)

    /// One human line, e.g. "not a crash record: bad magic".
    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            return "cannot read crash record \(path): \(reason)"
        case .tooLarge(let size, let limit):
            return "crash record too large: \(size) bytes, limit \(limit)"
        case .empty:
            return "crash record is empty"
        case .notACrashRecord(let reason):
            return "not a crash record: \(reason)"
        case .unsupportedVersion(let version):
            return "unsupported crash record version \(version) (this reader knows 1...\(CrashRecordReader.knownVersion))"
        case .corruptHeader(let reason):
            return "corrupt crash record header: \(reason)"
        }
    }
}

/// Reads crash records written by CrashCapture's signal handler.
public enum CrashRecordReader {
    /// The largest record `read(path:sizeLimit:)` accepts by default: 16 MiB.
    public static let defaultSizeLimit: Int = 16 * 1024 * 1024

    /// The newest record version this reader understands (`CC_RECORD_VERSION`).
    static let knownVersion = Int(CC_RECORD_VERSION)

    /// Reads and parses the record at `path`.
    ///
    /// The file is opened with `O_NOFOLLOW` (a symbolic link is refused) and `O_NONBLOCK`
    /// (a FIFO cannot stall the reader), must be a regular file, and must not exceed
    /// `sizeLimit` bytes.
    ///
    /// - Throws: `CrashRecordError` when the file cannot be read or is not a readable
    ///   record; a record cut short or damaged after its header is returned, not thrown,
    ///   with `completeness == .incomplete(reason:)`.
    public static func read(path: String, sizeLimit: Int = defaultSizeLimit) throws -> CrashRecord {
        let bytes = try readFile(path: path, sizeLimit: sizeLimit)
        return try parse(bytes)
    }

    /// The bytes of the record file at `path`, read as ``read(path:sizeLimit:)`` reads them (no
    /// symbolic link, no FIFO, a regular file of at most `sizeLimit` bytes): for a sink that sends
    /// the record itself, such as the Sentry upload's attachment.
    package static func readBytes(path: String, sizeLimit: Int = defaultSizeLimit) throws -> [UInt8] {
        try readFile(path: path, sizeLimit: sizeLimit)
    }

    /// Parses a record held in memory.
    ///
    /// Any collection of bytes is accepted; it is copied into an array once (free for an
    /// `Array`). Never traps on any input.
    ///
    /// - Throws: `CrashRecordError.empty`, `.notACrashRecord`, `.unsupportedVersion` or
    ///   `.corruptHeader` when the file header is unusable. Damage after the header is
    ///   reported through `CrashRecord.completeness` instead.
    public static func parse<Bytes: Collection>(_ bytes: Bytes) throws -> CrashRecord where Bytes.Element == UInt8 {
        var parser = RecordParser(bytes: Array(bytes))
        return try parser.parse()
    }

    /// The record parsed as ``parse(_:)`` parses it, with where its header ends and each
    /// section it accepted lies (the sections before the first damaged one, up to and including
    /// END). Throws as ``parse(_:)`` does.
    package static func parseWithLayout(_ bytes: [UInt8]) throws -> (record: CrashRecord, layout: RecordLayout) {
        var parser = RecordParser(bytes: bytes)
        let record = try parser.parse()
        return (record, parser.layout)
    }
}

/// Where a record's parts lie in its bytes, as the reader accepted them.
package struct RecordLayout: Sendable, Equatable {
    /// One whole, checksum-verified section the reader decoded.
    package struct Section: Sendable, Equatable {
        /// `enum cc_section_type`.
        package var type: UInt32
        /// The offset of its 8-byte section header.
        package var start: Int
        /// Its payload's length (the header's `length`).
        package var payloadLength: Int
    }

    /// The file header's size (where sections start).
    package var headerSize: Int
    /// The accepted sections, in file order.
    package var sections: [Section]
}

// MARK: - CRC-32

/// CRC-32 as zlib computes it (IEEE 802.3 polynomial, reflected, initial value and final
/// xor 0xFFFFFFFF); the checksum of "123456789" is 0xCBF43926.
enum CRC32 {
    /// The reflected polynomial 0x04C11DB7.
    static let polynomial: UInt32 = 0xEDB8_8320

    /// The byte-at-a-time lookup table.
    static let table: [UInt32] = (0 ..< 256).map { index -> UInt32 in
        var crc = UInt32(index)
        for _ in 0 ..< 8 {
            crc = (crc & 1) != 0 ? (crc >> 1) ^ polynomial : crc >> 1
        }
        return crc
    }

    /// The CRC-32 of `bytes`, continuing from `initial` like zlib's `crc32(initial, ...)`:
    /// `checksum(b, initial: checksum(a)) == checksum(a + b)`, and `initial` 0 starts afresh.
    static func checksum<C: Collection>(_ bytes: C, initial: UInt32 = 0) -> UInt32 where C.Element == UInt8 {
        let table = self.table
        var crc = ~initial
        for byte in bytes {
            crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
        }
        return ~crc
    }
}

// MARK: - File access

/// Reads the whole regular file at `path`, refusing symbolic links, non-regular files and
/// files over `sizeLimit` bytes.
private func readFile(path: String, sizeLimit: Int) throws -> [UInt8] {
    let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
    if fd < 0 {
        let code = errno
        if code == ELOOP {
            throw CrashRecordError.unreadable(path: path, reason: "is a symbolic link")
        }
        throw CrashRecordError.unreadable(path: path, reason: errorText(code))
    }
    defer { _ = close(fd) }

    var info = stat()
    if fstat(fd, &info) != 0 {
        throw CrashRecordError.unreadable(path: path, reason: errorText(errno))
    }
    guard (info.st_mode & S_IFMT) == S_IFREG else {
        let kind = (info.st_mode & S_IFMT) == S_IFDIR ? "is a directory" : "is not a regular file"
        throw CrashRecordError.unreadable(path: path, reason: kind)
    }
    let statedSize = Int(exactly: info.st_size) ?? Int.max
    guard statedSize <= sizeLimit else {
        throw CrashRecordError.tooLarge(size: statedSize, limit: sizeLimit)
    }

    // The file may still be growing (a ".partial" whose writer is alive): read to EOF, but
    // never keep more than `sizeLimit` bytes.
    var bytes: [UInt8] = []
    bytes.reserveCapacity(max(0, statedSize))
    let chunkSize = 64 * 1024
    var chunk = [UInt8](repeating: 0, count: chunkSize)
    while true {
        let count = chunk.withUnsafeMutableBytes { buffer -> Int in
            read(fd, buffer.baseAddress, buffer.count)
        }
        if count < 0 {
            let code = errno
            if code == EINTR { continue }
            throw CrashRecordError.unreadable(path: path, reason: errorText(code))
        }
        if count == 0 { break }
        bytes.append(contentsOf: chunk[0 ..< min(count, chunkSize)])
        if bytes.count > sizeLimit {
            throw CrashRecordError.tooLarge(size: bytes.count, limit: sizeLimit)
        }
    }
    return bytes
}

/// `strerror` text for an errno value.
private func errorText(_ code: Int32) -> String {
    guard let text = strerror(code) else { return "error \(code)" }
    return String(cString: text)
}

// MARK: - Layout

/// Sizes and offsets of the C structs in cc_record.h, so the reader never re-types them.
private enum Layout {
    static func size<S>(_: S.Type) -> Int {
        MemoryLayout<S>.size
    }

    /// The offset of a stored field of an imported C struct. Imported C fields always have
    /// a fixed offset; the fallback is unreachable but avoids a force-unwrap.
    static func offset<S, T>(_ field: KeyPath<S, T>) -> Int {
        MemoryLayout<S>.offset(of: field) ?? 0
    }

    /// The size of a field of an imported C struct (a `char[N]` array imports as a tuple
    /// of N `CChar`s, whose size is N).
    static func size<S, T>(_: KeyPath<S, T>) -> Int {
        MemoryLayout<T>.size
    }

    static let fileHeaderSize = size(cc_file_header_t.self)
    static let sectionHeaderSize = size(cc_section_header_t.self)
    static let sectionCRCSize = MemoryLayout<UInt32>.size
    static let magic: [UInt8] = Array(CC_RECORD_MAGIC.utf8)
    static let sectionMaxLength = Int(CC_SECTION_MAX_LENGTH)
}

// MARK: - Bounds-checked byte access

/// A bounds-checked, little-endian view of `count` bytes starting at `start` in `bytes`.
/// Reads outside the view yield 0 or empty values instead of trapping.
private struct ByteView {
    let bytes: [UInt8]
    let start: Int
    let count: Int

    init(bytes: [UInt8], start: Int, count: Int) {
        self.bytes = bytes
        // Clamp to the array so no later read can leave it.
        let safeStart = min(max(0, start), bytes.count)
        self.start = safeStart
        self.count = min(max(0, count), bytes.count - safeStart)
    }

    /// The little-endian unsigned integer of `width` bytes at `offset`, or 0 if it does not fit.
    private func unsigned(at offset: Int, width: Int) -> UInt64 {
        guard offset >= 0, width <= count, offset <= count - width else { return 0 }
        var value: UInt64 = 0
        for index in stride(from: width - 1, through: 0, by: -1) {
            value = (value << 8) | UInt64(bytes[start + offset + index])
        }
        return value
    }

    func u8(_ offset: Int) -> UInt8 { UInt8(truncatingIfNeeded: unsigned(at: offset, width: 1)) }
    func u16(_ offset: Int) -> UInt16 { UInt16(truncatingIfNeeded: unsigned(at: offset, width: 2)) }
    func u32(_ offset: Int) -> UInt32 { UInt32(truncatingIfNeeded: unsigned(at: offset, width: 4)) }
    func i32(_ offset: Int) -> Int32 { Int32(truncatingIfNeeded: unsigned(at: offset, width: 4)) }
    func u64(_ offset: Int) -> UInt64 { unsigned(at: offset, width: 8) }
    func i64(_ offset: Int) -> Int64 { Int64(truncatingIfNeeded: unsigned(at: offset, width: 8)) }

    /// The bytes `offset ..< offset + length`, clipped to the view.
    func slice(_ offset: Int, _ length: Int) -> ArraySlice<UInt8> {
        let lower = min(max(0, offset), count)
        let upper = min(lower + min(max(0, length), count - lower), count)
        return bytes[(start + lower) ..< (start + upper)]
    }

    /// Everything from `offset` to the end of the view.
    func tail(from offset: Int) -> ArraySlice<UInt8> {
        slice(offset, count)
    }

    /// A NUL-padded fixed `char[length]` at `offset`: bytes up to the first NUL, as UTF-8
    /// with invalid sequences repaired.
    func fixedString(_ offset: Int, _ length: Int) -> String {
        let field = slice(offset, length)
        let end = field.firstIndex(of: 0) ?? field.endIndex
        return String(decoding: field[field.startIndex ..< end], as: UTF8.self)
    }

    /// Variable-length text from `offset` to the end of the view, as UTF-8 with repair.
    /// Bounded by `CC_SECTION_MAX_LENGTH`, since it never leaves its section.
    func text(from offset: Int) -> String {
        String(decoding: tail(from: offset), as: UTF8.self)
    }
}

// MARK: - Parsing

/// Why a section stops the parse.
private struct SectionDamage: Error {
    let reason: String
}

private struct RecordParser {
    let bytes: [UInt8]
    var record = CrashRecord()
    /// CC_SEC_THREAD_REGISTERS by tid, attached to their threads once every section is read.
    var threadRegisters: [Int32: [Register]] = [:]
    /// CC_SEC_ASYNC_CHAIN by tid, attached to their threads once every section is read.
    var asyncChains: [Int32: [AsyncContextChain]] = [:]
    /// CC_SEC_ASYNC_TASK by tid, likewise.
    var asyncTasks: [Int32: [AsyncTaskInfo]] = [:]
    /// Where the file header ends and every section the parse accepted lies, in order: what
    /// ``RecordRedaction`` copies, so it stops exactly where this reader stops.
    var layout = RecordLayout(headerSize: 0, sections: [])

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func parse() throws -> CrashRecord {
        let headerSize = try parseHeader()
        layout.headerSize = headerSize
        record.completeness = parseSections(from: headerSize)
        // Each thread's own registers (CC_SEC_THREAD_REGISTERS), wherever they stood.
        for index in record.threads.indices where !record.threads[index].crashed {
            record.threads[index].registers = threadRegisters[record.threads[index].tid] ?? []
        }
        for index in record.threads.indices {
            // A chain names a frame of its thread; one past the frames is damage, not a chain.
            let count = record.threads[index].frames.count
            record.threads[index].asyncChains = (asyncChains[record.threads[index].tid] ?? []).filter { $0.frameIndex < count }
            record.threads[index].asyncTasks = asyncTasks[record.threads[index].tid] ?? []
        }
        return record
    }

    // MARK: Header

    /// Validates the file header and returns where the sections start.
    private mutating func parseHeader() throws -> Int {
        if bytes.isEmpty { throw CrashRecordError.empty }
        guard bytes.count >= Layout.fileHeaderSize else {
            throw CrashRecordError.notACrashRecord(
                reason: "\(bytes.count) bytes is too short for the \(Layout.fileHeaderSize)-byte header")
        }
        let header = ByteView(bytes: bytes, start: 0, count: Layout.fileHeaderSize)

        let magicOffset = Layout.offset(\cc_file_header_t.magic)
        guard Array(header.slice(magicOffset, Layout.magic.count)) == Layout.magic else {
            throw CrashRecordError.notACrashRecord(reason: "bad magic")
        }

        let version = Int(header.u16(Layout.offset(\cc_file_header_t.version)))
        guard version >= 1, version <= CrashRecordReader.knownVersion else {
            throw CrashRecordError.unsupportedVersion(version)
        }

        let crcOffset = Layout.offset(\cc_file_header_t.header_crc)
        let storedCRC = header.u32(crcOffset)
        let computedCRC = CRC32.checksum(header.slice(0, crcOffset))
        guard storedCRC == computedCRC else {
            throw CrashRecordError.corruptHeader(reason: "header checksum mismatch")
        }

        let byteOrder = header.u8(Layout.offset(\cc_file_header_t.byte_order))
        guard byteOrder == 1 else {
            throw CrashRecordError.corruptHeader(
                reason: "byte order \(byteOrder) is not little-endian (1)")
        }

        let headerSize = Int(header.u16(Layout.offset(\cc_file_header_t.header_size)))
        guard headerSize >= Layout.fileHeaderSize, headerSize <= bytes.count else {
            throw CrashRecordError.corruptHeader(
                reason: "impossible header size \(headerSize) in a \(bytes.count)-byte file")
        }

        record.version = version
        record.architecture = .init(rawValue: header.u16(Layout.offset(\cc_file_header_t.arch)))
        return headerSize
    }

    // MARK: Sections

    /// Reads sections from `start` until the end section, the end of the data, or the first
    /// damaged section, and says which of those it was.
    private mutating func parseSections(from start: Int) -> CrashRecord.Completeness {
        var offset = start
        while true {
            let remaining = bytes.count - offset
            if remaining <= 0 {
                return .incomplete(reason: "no end section: the writer stopped before finishing")
            }
            if remaining < Layout.sectionHeaderSize {
                return .incomplete(
                    reason: "truncated: \(remaining) bytes of a section header at offset \(offset)")
            }
            let header = ByteView(bytes: bytes, start: offset, count: Layout.sectionHeaderSize)
            let type = header.u32(Layout.offset(\cc_section_header_t.type))
            let length = Int(header.u32(Layout.offset(\cc_section_header_t.length)))
            if length > Layout.sectionMaxLength {
                return .incomplete(
                    reason: "corrupt section length \(length) at offset \(offset) (limit \(Layout.sectionMaxLength))")
            }
            let total = Layout.sectionHeaderSize + length + Layout.sectionCRCSize
            if remaining < total {
                return .incomplete(
                    reason: "truncated: section type \(type) at offset \(offset) needs \(total) bytes, \(remaining) remain")
            }

            let whole = ByteView(bytes: bytes, start: offset, count: total)
            let covered = Layout.sectionHeaderSize + length
            guard whole.u32(covered) == CRC32.checksum(whole.slice(0, covered)) else {
                return .incomplete(reason: "corrupt section at offset \(offset): checksum mismatch")
            }

            let payload = ByteView(bytes: bytes, start: offset + Layout.sectionHeaderSize, count: length)
            let isEnd: Bool
            do {
                isEnd = try decodeSection(type: type, payload)
            } catch let damage as SectionDamage {
                return .incomplete(reason: "corrupt section at offset \(offset): \(damage.reason)")
            } catch {
                return .incomplete(reason: "corrupt section at offset \(offset): \(error)")
            }
            record.sectionCount += 1
            layout.sections.append(.init(type: type, start: offset, payloadLength: length))
            offset += total

            if isEnd {
                let trailing = bytes.count - offset
                if trailing > 0 {
                    record.notes.append("\(trailing) trailing bytes after the end section")
                }
                return .complete
            }
        }
    }

    /// Decodes one checksum-verified section into `record`; returns `true` for the end section.
    private mutating func decodeSection(type: UInt32, _ payload: ByteView) throws -> Bool {
        switch type {
        case CC_SEC_CRASH.rawValue: try decodeCrash(payload)
        case CC_SEC_PROCESS.rawValue: try decodeProcess(payload)
        case CC_SEC_STRING.rawValue: try decodeString(payload)
        case CC_SEC_REGISTERS.rawValue: record.registers.append(contentsOf: try decodeRegisters(payload, from: 0))
        case CC_SEC_THREAD_REGISTERS.rawValue: try decodeThreadRegisters(payload)
        case CC_SEC_MEMORY.rawValue: try decodeMemory(payload)
        case CC_SEC_THREAD.rawValue: try decodeThread(payload)
        case CC_SEC_ASYNC_CHAIN.rawValue: try decodeAsyncChain(payload)
        case CC_SEC_ASYNC_TASK.rawValue: try decodeAsyncTask(payload)
        case CC_SEC_REQUESTS.rawValue: try decodeRequests(payload)
        case CC_SEC_REQUEST.rawValue: try decodeRequest(payload)
        case CC_SEC_IMAGE.rawValue: try decodeImage(payload)
        case CC_SEC_BREADCRUMB.rawValue: try decodeBreadcrumb(payload)
        case CC_SEC_APP_END.rawValue: record.appEndJSON = payload.text(from: 0)
        case CC_SEC_SCOPE.rawValue: record.scope = CrashScope(section: payload.tail(from: 0), notes: &record.notes)
        case CC_SEC_EVENT.rawValue: try decodeEvent(payload)
        case CC_SEC_REQUEST_TASK.rawValue: try decodeRequestTask(payload)
        case CC_SEC_RESOURCES.rawValue: try decodeResources(payload)
        case CC_SEC_FATE.rawValue: try decodeFate(payload)
        case CC_SEC_MEMORY_WATCH.rawValue: try decodeMemoryWatch(payload)
        case CC_SEC_THREAD_STATES.rawValue: try decodeThreadStates(payload)
        case CC_SEC_LOCK_WAITS.rawValue: try decodeLockWaits(payload)
        case CC_SEC_STACK_SAMPLES.rawValue: try decodeStackSamples(payload)
        case CC_SEC_GUARDED_HEAP.rawValue: try decodeGuardedHeap(payload)
        case CC_SEC_END.rawValue:
            try decodeEnd(payload)
            return true
        default:
            record.unknownSectionTypes.append(type)
        }
        return false
    }

    /// Fails unless the payload holds at least the fixed struct `S`.
    private func require<S>(_ payload: ByteView, holds _: S.Type, _ name: String) throws {
        let size = Layout.size(S.self)
        guard payload.count >= size else {
            throw SectionDamage(reason: "\(name) payload is \(payload.count) bytes, shorter than its \(size)-byte struct")
        }
    }

    private mutating func decodeCrash(_ p: ByteView) throws {
        typealias S = cc_sec_crash_t
        try require(p, holds: S.self, "crash")
        guard record.event == nil else { throw SectionDamage(reason: "a crash section in a record of a live process") }
        let flags = p.u32(Layout.offset(\S.flags))
        var sender: SignalInfo.Sender?
        if flags & CC_CRASH_FROM_PROCESS != 0 {
            sender = .init(pid: p.i32(Layout.offset(\S.sender_pid)), uid: p.u32(Layout.offset(\S.sender_uid)))
        }
        record.signal = SignalInfo(
            number: p.i32(Layout.offset(\S.signo)),
            name: p.fixedString(Layout.offset(\S.signal_name), Layout.size(\S.signal_name)),
            code: p.i32(Layout.offset(\S.code)),
            codeName: p.fixedString(Layout.offset(\S.code_name), Layout.size(\S.code_name)),
            codeDescription: p.fixedString(Layout.offset(\S.code_description), Layout.size(\S.code_description)),
            faultAddress: flags & CC_CRASH_FAULT_ADDRESS != 0 ? p.u64(Layout.offset(\S.fault_address)) : nil,
            sender: sender,
            errnoAtCrash: p.i32(Layout.offset(\S.errno_at_crash))
        )
    }

    private mutating func decodeProcess(_ p: ByteView) throws {
        typealias S = cc_sec_process_t
        try require(p, holds: S.self, "process")
        record.process = CrashedProcess(
            pid: p.i32(Layout.offset(\S.pid)),
            tid: p.i32(Layout.offset(\S.tid)),
            ppid: p.i32(Layout.offset(\S.ppid)),
            uid: p.u32(Layout.offset(\S.uid)),
            startWallNanoseconds: p.i64(Layout.offset(\S.start_wall_ns)),
            crashWallNanoseconds: p.i64(Layout.offset(\S.crash_wall_ns)),
            startMonotonicNanoseconds: p.i64(Layout.offset(\S.start_mono_ns)),
            crashMonotonicNanoseconds: p.i64(Layout.offset(\S.crash_mono_ns)),
            threadName: p.fixedString(Layout.offset(\S.thread_name), Layout.size(\S.thread_name))
        )
    }

    private mutating func decodeString(_ p: ByteView) throws {
        typealias S = cc_sec_string_t
        try require(p, holds: S.self, "string")
        let text = p.text(from: Layout.size(S.self))
        switch p.u32(Layout.offset(\S.key)) {
        case CC_STR_APP_NAME.rawValue: record.appName = text
        case CC_STR_APP_VERSION.rawValue: record.appVersion = text
        case CC_STR_EXECUTABLE_PATH.rawValue: record.executablePath = text
        case CC_STR_FATAL_MESSAGE.rawValue: record.fatalMessage = text
        case CC_STR_ABORT_MESSAGE.rawValue: record.abortMessage = text
        case CC_STR_RUNTIME_WARNINGS.rawValue: record.runtimeWarningText = text
        case CC_STR_KERNEL.rawValue: record.kernel = text
        case CC_STR_RUN_ID.rawValue: record.runID = text
        case CC_STR_NOTE.rawValue: record.notes.append(text)
        case CC_STR_PROC_STATUS.rawValue: resource { $0.processStatus = text }
        case CC_STR_PROC_MEMINFO.rawValue: resource { $0.machineMemory = text }
        case CC_STR_PROC_LOADAVG.rawValue: resource { $0.loadAverage = text }
        case CC_STR_CGROUP_MEMORY.rawValue: resource { $0.cgroupDirectory = text }
        case CC_STR_CGROUP_MEMORY_CURRENT.rawValue: resource { $0.cgroupCurrent = text }
        case CC_STR_CGROUP_MEMORY_MAX.rawValue: resource { $0.cgroupMax = text }
        case CC_STR_CGROUP_MEMORY_EVENTS.rawValue: resource { $0.cgroupEvents = text }
        case CC_STR_CXX_WHAT_STATE.rawValue:
            let what: CxxException.What
            switch text {
            case "1": what = .text(record.cxxException?.message ?? "")
            case "2": what = .threw
            case "3": what = .noException
            case "4": what = .inFlight
            default: what = .notStdException
            }
            record.cxxException = CxxException(mangledType: record.cxxException?.mangledType, what: what)
        case CC_STR_CXX_TYPE.rawValue:
            record.cxxException = CxxException(mangledType: text, what: record.cxxException?.what ?? .notStdException)
        case CC_STR_CXX_WHAT.rawValue:
            record.cxxException = CxxException(mangledType: record.cxxException?.mangledType, what: .text(text))
        default: break  // A key from a newer writer: nothing to put it in.
        }
    }

    /// A CC_SEC_REGISTERS payload that starts `start` bytes into `p`.
    private func decodeRegisters(_ p: ByteView, from start: Int) throws -> [Register] {
        typealias S = cc_sec_registers_t
        typealias R = cc_register_t
        guard p.count - start >= Layout.size(S.self) else {
            throw SectionDamage(reason: "registers payload is \(p.count - start) bytes, shorter than its \(Layout.size(S.self))-byte struct")
        }
        let count = Int(p.u32(start + Layout.offset(\S.count)))
        let fixed = start + Layout.size(S.self)
        let entry = Layout.size(R.self)
        let (needed, overflow) = count.multipliedReportingOverflow(by: entry)
        guard !overflow, needed <= p.count - fixed else {
            throw SectionDamage(reason: "\(count) registers do not fit in a \(p.count)-byte payload")
        }
        var registers: [Register] = []
        registers.reserveCapacity(count)
        for index in 0 ..< count {
            let base = fixed + index * entry
            registers.append(Register(
                name: p.fixedString(base + Layout.offset(\R.name), Layout.size(\R.name)),
                value: p.u64(base + Layout.offset(\R.value))
            ))
        }
        return registers
    }

    private mutating func decodeThreadRegisters(_ p: ByteView) throws {
        typealias S = cc_sec_thread_registers_t
        try require(p, holds: S.self, "thread registers")
        threadRegisters[p.i32(Layout.offset(\S.tid))] = try decodeRegisters(p, from: Layout.size(S.self))
    }

    private mutating func decodeMemory(_ p: ByteView) throws {
        typealias S = cc_sec_memory_t
        try require(p, holds: S.self, "memory")
        record.memory.append(MemoryWindow(
            label: p.fixedString(Layout.offset(\S.label), Layout.size(\S.label)),
            address: p.u64(Layout.offset(\S.address)),
            bytes: Array(p.tail(from: Layout.size(S.self)))
        ))
    }

    private mutating func decodeThread(_ p: ByteView) throws {
        typealias S = cc_sec_thread_t
        try require(p, holds: S.self, "thread")
        let count = Int(p.u32(Layout.offset(\S.frame_count)))
        let fixed = Layout.size(S.self)
        let entry = MemoryLayout<UInt64>.size
        let (needed, overflow) = count.multipliedReportingOverflow(by: entry)
        guard !overflow, needed <= p.count - fixed else {
            throw SectionDamage(reason: "\(count) frames do not fit in a \(p.count)-byte thread payload")
        }
        var frames: [UInt64] = []
        frames.reserveCapacity(count)
        for index in 0 ..< count {
            frames.append(p.u64(fixed + index * entry))
        }
        let flags = p.u32(Layout.offset(\S.flags))
        record.threads.append(CrashThread(
            tid: p.i32(Layout.offset(\S.tid)),
            name: p.fixedString(Layout.offset(\S.name), Layout.size(\S.name)),
            crashed: flags & CC_THREAD_CRASHED != 0,
            framesFromSignalContext: flags & CC_THREAD_FROM_CONTEXT != 0,
            truncated: flags & CC_THREAD_TRUNCATED != 0,
            stackUnavailable: flags & CC_THREAD_NO_STACK != 0,
            stopped: flags & CC_THREAD_STOPPED != 0,
            notStopped: flags & CC_THREAD_NOT_STOPPED != 0,
            alsoCrashed: flags & CC_THREAD_ALSO_CRASHED != 0,
            ptraced: flags & CC_THREAD_PTRACED != 0,
            ptraceRefused: flags & CC_THREAD_PTRACE_REFUSED != 0,
            omittedFrames: Int(p.u32(Layout.offset(\S.omitted_frames))),
            frames: frames
        ))
    }

    private mutating func decodeAsyncChain(_ p: ByteView) throws {
        typealias S = cc_sec_async_chain_t
        typealias L = cc_async_link_t
        try require(p, holds: S.self, "async chain")
        let count = Int(p.u32(Layout.offset(\S.link_count)))
        let fixed = Layout.size(S.self)
        let entry = Layout.size(L.self)
        let (needed, overflow) = count.multipliedReportingOverflow(by: entry)
        guard !overflow, needed <= p.count - fixed else {
            throw SectionDamage(reason: "\(count) async links do not fit in a \(p.count)-byte async chain payload")
        }
        var links: [AsyncContextChain.Link] = []
        links.reserveCapacity(count)
        for index in 0 ..< count {
            let base = fixed + index * entry
            links.append(.init(context: p.u64(base + Layout.offset(\L.context)), parent: p.u64(base + Layout.offset(\L.parent)),
                               resume: p.u64(base + Layout.offset(\L.resume))))
        }
        let flags = p.u32(Layout.offset(\S.flags))
        let endValue = p.u32(Layout.offset(\S.end))
        let end: AsyncContextChain.End
        switch endValue {
        case CC_ASYNC_END_PARENT_NULL.rawValue: end = .parentNull
        case CC_ASYNC_END_UNREADABLE.rawValue: end = .unreadable
        case CC_ASYNC_END_MISALIGNED.rawValue: end = .misaligned
        case CC_ASYNC_END_CYCLE.rawValue: end = .cycle
        case CC_ASYNC_END_LIMIT.rawValue: end = .limit
        case CC_ASYNC_END_NOT_CODE.rawValue: end = .notCode
        case CC_ASYNC_END_SEEN.rawValue: end = .joinsEarlierChain
        default: end = .unknown(endValue)
        }
        let tid = p.i32(Layout.offset(\S.tid))
        let chain = AsyncContextChain(
            frameIndex: Int(p.u32(Layout.offset(\S.frame_index))),
            source: flags & CC_ASYNC_REQUEST_TASK != 0 ? .requestTask : flags & CC_ASYNC_PARENT_TASK != 0 ? .parentTask
                : flags & CC_ASYNC_CONTEXT_REGISTER != 0 ? .contextRegister : .framePointer,
            firstContext: p.u64(Layout.offset(\S.first_context)),
            links: links,
            end: end)
        if chain.source == .requestTask {
            // It follows its request's CC_SEC_REQUEST_TASK, which named the same context.
            guard let last = record.requests?.others.indices.last, var waiting = record.requests?.others[last].waiting,
                  waiting.chain == nil, waiting.context == chain.firstContext else {
                throw SectionDamage(reason: "a request task's chain without its request task")
            }
            waiting.chain = chain
            record.requests?.others[last].waiting = waiting
            return
        }
        asyncChains[tid, default: []].append(chain)
    }

    private mutating func decodeEvent(_ p: ByteView) throws {
        typealias S = cc_sec_event_t
        try require(p, holds: S.self, "event")
        guard record.event == nil, record.signal == nil else { throw SectionDamage(reason: "a second event section, or one in a crash record") }
        let kindValue = p.u32(Layout.offset(\S.kind))
        let kind: RecordKind
        switch kindValue {
        case CC_KIND_HANG.rawValue: kind = .hang
        case CC_KIND_MEMORY.rawValue: kind = .memory
        case CC_KIND_SNAPSHOT.rawValue: kind = .snapshot
        default: throw SectionDamage(reason: "an event of unknown kind \(kindValue)")
        }
        let key = p.u64(Layout.offset(\S.request_key)), tid = p.i32(Layout.offset(\S.blocked_tid))
        record.event = RecordEvent(
            kind: kind,
            detector: .init(raw: p.u32(Layout.offset(\S.detector))),
            thresholdMilliseconds: p.u64(Layout.offset(\S.threshold_ms)),
            observedMilliseconds: p.u64(Layout.offset(\S.observed_ms)),
            requestKey: key == 0 ? nil : key,
            blockedThread: tid == 0 ? nil : tid,
            stoppedMicroseconds: p.u32(Layout.offset(\S.stopped_microseconds)),
            threadsStopped: p.u32(Layout.offset(\S.threads_stopped)),
            name: p.fixedString(Layout.offset(\S.name), Layout.size(\S.name)))
        let span = p.u32(Layout.offset(\S.stall_cpu_span_ms))
        record.event?.stallCPUSpanMilliseconds = span == 0 ? nil : span
    }

    /// Sets a resource of the record (made with the first).
    private mutating func resource(_ set: (inout CrashResources) -> Void) {
        var resources = record.resources ?? CrashResources()
        set(&resources)
        record.resources = resources
    }

    private mutating func decodeResources(_ p: ByteView) throws {
        typealias S = cc_sec_resources_t
        try require(p, holds: S.self, "resources")
        let flags = p.u32(Layout.offset(\S.flags))
        resource { resources in
            if flags & CC_RESOURCES_CPU_COUNT != 0 { resources.cpuCount = Int(p.u32(Layout.offset(\S.cpu_count))) }
            if flags & CC_RESOURCES_OPEN_FDS != 0 { resources.openDescriptors = Int(p.u32(Layout.offset(\S.open_fds))) }
            if flags & CC_RESOURCES_NOFILE != 0 {
                resources.descriptorSoftLimit = p.u64(Layout.offset(\S.nofile_soft))
                resources.descriptorHardLimit = p.u64(Layout.offset(\S.nofile_hard))
            }
            if flags & CC_RESOURCES_CPU_ID != 0 {
                resources.cpuSignature = p.u32(Layout.offset(\S.cpu_signature))
                let vendor = p.fixedString(Layout.offset(\S.cpu_vendor), Layout.size(\S.cpu_vendor))
                resources.cpuVendor = vendor.isEmpty ? nil : vendor
            }
        }
    }

    private mutating func decodeRequestTask(_ p: ByteView) throws {
        typealias S = cc_sec_request_task_t
        try require(p, holds: S.self, "request task")
        let key = p.u64(Layout.offset(\S.key))
        guard let last = record.requests?.others.indices.last, record.requests?.others[last].key == key,
              record.requests?.others[last].waiting == nil else {
            throw SectionDamage(reason: "a request task that does not follow its request")
        }
        let raw = p.u32(Layout.offset(\S.status))
        let status: SuspendedTask.Status
        switch raw {
        case CC_REQUEST_TASK_READ.rawValue: status = .read
        case CC_REQUEST_TASK_UNKNOWN.rawValue: status = .layoutUnknown
        case CC_REQUEST_TASK_NOT_TASK.rawValue: status = .notATask
        default: status = .unknown(raw)
        }
        record.requests?.others[last].waiting = SuspendedTask(
            status: status, resume: p.u64(Layout.offset(\S.resume)), context: p.u64(Layout.offset(\S.context)),
            taskID: p.u32(Layout.offset(\S.task_id)), jobFlags: p.u32(Layout.offset(\S.job_flags)))
    }

    private mutating func decodeAsyncTask(_ p: ByteView) throws {
        typealias S = cc_sec_async_task_t
        try require(p, holds: S.self, "async task")
        let parent = p.u64(Layout.offset(\S.parent))
        asyncTasks[p.i32(Layout.offset(\S.tid)), default: []].append(AsyncTaskInfo(
            task: p.u64(Layout.offset(\S.task)), id: p.u32(Layout.offset(\S.task_id)), jobFlags: p.u32(Layout.offset(\S.job_flags)),
            firstContext: p.u64(Layout.offset(\S.first_context)), parent: parent == 0 ? nil : parent,
            parentID: p.u32(Layout.offset(\S.parent_id)), parentResume: p.u64(Layout.offset(\S.parent_resume)),
            parentContext: p.u64(Layout.offset(\S.parent_context))))
    }

    private mutating func decodeRequests(_ p: ByteView) throws {
        typealias S = cc_sec_requests_t
        try require(p, holds: S.self, "requests")
        record.requests = RequestsInFlight(
            status: .init(raw: p.u32(Layout.offset(\S.status)), currentTask: p.u64(Layout.offset(\S.current_task))),
            inFlight: Int(p.u32(Layout.offset(\S.in_flight))), dropped: Int(p.u32(Layout.offset(\S.dropped))))
    }

    private mutating func decodeRequest(_ p: ByteView) throws {
        typealias S = cc_sec_request_t
        try require(p, holds: S.self, "request")
        guard record.requests != nil else { throw SectionDamage(reason: "a request section before the requests section") }
        let flags = p.u32(Layout.offset(\S.flags))
        func hex(_ offset: Int, _ length: Int) -> String? {
            let bytes = p.slice(offset, length)
            guard bytes.contains(where: { $0 != 0 }) else { return nil }
            return bytes.map { byte in String(byte >> 4, radix: 16) + String(byte & 15, radix: 16) }.joined()
        }
        let traced = flags & CC_REQUEST_HAS_TRACE != 0
        // "key=value" entries, each NUL-terminated; an empty one ends them.
        let attributeBytes = p.slice(Layout.offset(\S.attributes), Layout.size(\S.attributes))
        let attributes: [(key: String, value: String)] = attributeBytes.split(separator: 0, omittingEmptySubsequences: false)
            .prefix { !$0.isEmpty }
            .map { entry in
                let text = String(decoding: entry, as: UTF8.self)
                guard let equals = text.firstIndex(of: "=") else { return (key: text, value: "") }
                return (key: String(text[..<equals]), value: String(text[text.index(after: equals)...]))
            }
        let request = CrashRequest(
            requestID: p.fixedString(Layout.offset(\S.request_id), Layout.size(\S.request_id)),
            method: p.fixedString(Layout.offset(\S.method), Layout.size(\S.method)),
            route: p.fixedString(Layout.offset(\S.route), Layout.size(\S.route)),
            path: p.fixedString(Layout.offset(\S.path), Layout.size(\S.path)),
            query: p.fixedString(Layout.offset(\S.query), Layout.size(\S.query)),
            traceID: traced ? hex(Layout.offset(\S.trace_id), Layout.size(\S.trace_id)) : nil,
            spanID: traced ? hex(Layout.offset(\S.span_id), Layout.size(\S.span_id)) : nil,
            parentSpanID: traced && flags & CC_REQUEST_HAS_PARENT != 0 ? hex(Layout.offset(\S.parent_span_id), Layout.size(\S.parent_span_id)) : nil,
            sampled: flags & CC_REQUEST_SAMPLED != 0,
            attributes: attributes,
            isThreadContext: flags & CC_REQUEST_THREAD != 0,
            key: p.u64(Layout.offset(\S.key)),
            startWallNanoseconds: p.i64(Layout.offset(\S.start_wall_ns)),
            startMonotonicNanoseconds: p.i64(Layout.offset(\S.start_mono_ns)))
        // Only the first request flagged crashed names the crash; one flagged later is damage
        // of a kind the writer never makes, kept among the others.
        if flags & CC_REQUEST_CRASHED != 0 && record.requests?.crashed == nil && record.requests?.others.isEmpty == true {
            record.requests?.crashed = request
        } else {
            record.requests?.others.append(request)
        }
    }

    private mutating func decodeImage(_ p: ByteView) throws {
        typealias S = cc_sec_image_t
        try require(p, holds: S.self, "image")
        // build_id_length beyond the 32-byte field cannot come from the writer; keep what
        // the field can hold rather than dropping the image.
        let capacity = Layout.size(\S.build_id)
        let buildIDLength = min(Int(p.u32(Layout.offset(\S.build_id_length))), capacity)
        record.images.append(CrashImage(
            path: p.text(from: Layout.size(S.self)),
            base: p.u64(Layout.offset(\S.base)),
            size: p.u64(Layout.offset(\S.size)),
            buildID: Array(p.slice(Layout.offset(\S.build_id), buildIDLength)),
            isMainExecutable: p.u32(Layout.offset(\S.flags)) & CC_IMAGE_MAIN_EXECUTABLE != 0
        ))
    }

    private mutating func decodeBreadcrumb(_ p: ByteView) throws {
        typealias S = cc_sec_breadcrumb_t
        try require(p, holds: S.self, "breadcrumb")
        record.breadcrumbs.append(Breadcrumb(
            wallNanoseconds: p.i64(Layout.offset(\S.wall_ns)),
            level: BreadcrumbLevel(rawValue: p.u32(Layout.offset(\S.level))),
            message: p.text(from: Layout.size(S.self))
        ))
    }

    /// A later launch's word on a hang record's process (``RecordFate``): only on a hang record.
    private mutating func decodeFate(_ p: ByteView) throws {
        typealias S = cc_sec_fate_t
        try require(p, holds: S.self, "fate")
        guard p.u32(Layout.offset(\S.fate)) == CC_FATE_KILLED.rawValue else { throw SectionDamage(reason: "an unknown fate") }
        guard record.event?.kind == .hang || record.event?.kind == .memory, record.event?.fate == nil else {
            throw SectionDamage(reason: "a fate on a record that is not one hang or memory record")
        }
        let wall = p.i64(Layout.offset(\S.last_seen_wall_ms)), after = p.i64(Layout.offset(\S.last_seen_after_ms))
        record.event?.fate = RecordFate(oom: p.u32(Layout.offset(\S.flags)) & CC_FATE_OOM != 0,
                                        lastSeenWallMilliseconds: wall > 0 ? wall : nil, lastSeenAfterMilliseconds: after >= 0 ? after : nil)
    }

    /// A memory record's readings: only in a memory record, once.
    private mutating func decodeMemoryWatch(_ p: ByteView) throws {
        typealias S = cc_sec_memory_watch_t
        try require(p, holds: S.self, "memory watch")
        guard record.event?.kind == .memory, record.event?.memory == nil else {
            throw SectionDamage(reason: "a memory watch section in a record that is not one memory record")
        }
        let flags = p.u32(Layout.offset(\S.flags))
        var memory = RecordMemoryWatch(usage: p.u64(Layout.offset(\S.usage_bytes)), limit: p.u64(Layout.offset(\S.limit_bytes)),
                                       limitIsHigh: flags & CC_MEMORY_HIGH != 0, isV2: flags & CC_MEMORY_V2 != 0,
                                       growth: p.i64(Layout.offset(\S.growth_bytes)), growthSeconds: p.u32(Layout.offset(\S.growth_seconds)),
                                       threads: p.u32(Layout.offset(\S.threads)), thresholdPercent: p.u32(Layout.offset(\S.threshold_percent)))
        if flags & CC_MEMORY_STAT != 0 {
            memory.anon = p.u64(Layout.offset(\S.anon_bytes))
            memory.file = p.u64(Layout.offset(\S.file_bytes))
            memory.shmem = p.u64(Layout.offset(\S.shmem_bytes))
        }
        if flags & CC_MEMORY_MALLINFO != 0 {
            memory.mallocArena = p.u64(Layout.offset(\S.malloc_arena))
            memory.mallocInUse = p.u64(Layout.offset(\S.malloc_in_use))
            memory.mallocFree = p.u64(Layout.offset(\S.malloc_free))
            memory.mallocMmapped = p.u64(Layout.offset(\S.malloc_mmapped))
        }
        record.event?.memory = memory
    }

    /// Each thread's state and CPU time: only in a record of a live process, once.
    private mutating func decodeThreadStates(_ p: ByteView) throws {
        typealias S = cc_sec_thread_states_t
        typealias T = cc_thread_state_t
        try require(p, holds: S.self, "thread states")
        guard record.event != nil, record.event?.threadStates == nil else {
            throw SectionDamage(reason: "thread states in a crash record, or twice")
        }
        let count = Int(p.u32(Layout.offset(\S.count))), size = Layout.size(T.self), base = Layout.size(S.self)
        guard count <= (p.count - base) / size else { throw SectionDamage(reason: "\(count) thread states in \(p.count) bytes") }
        var threads: [ThreadScheduling] = []
        for index in 0 ..< count {
            let at = base + index * size
            let letter = UInt8(truncatingIfNeeded: p.u32(at + Layout.offset(\T.state)) & 0xFF)
            threads.append(ThreadScheduling(tid: p.i32(at + Layout.offset(\T.tid)),
                                            state: (0x21...0x7E).contains(letter) ? Character(UnicodeScalar(letter)) : "?",
                                            windowCPUMilliseconds: p.u32(at + Layout.offset(\T.window_cpu_ms)),
                                            cpuMilliseconds: p.u64(at + Layout.offset(\T.cpu_ms)),
                                            stallCPUMilliseconds: p.u32(at + Layout.offset(\T.stall_cpu_ms))))
        }
        record.event?.threadStates = ThreadStates(windowMilliseconds: p.u32(Layout.offset(\S.window_ms)), threads: threads)
    }

    /// The threads blocked on locks: only in a record of a live process, once.
    private mutating func decodeLockWaits(_ p: ByteView) throws {
        typealias S = cc_sec_lock_waits_t
        typealias T = cc_lock_wait_t
        try require(p, holds: S.self, "lock waits")
        guard record.event != nil, record.event?.lockWaits == nil else {
            throw SectionDamage(reason: "lock waits in a crash record, or twice")
        }
        let count = Int(p.u32(Layout.offset(\S.count))), size = Layout.size(T.self), base = Layout.size(S.self)
        guard count <= (p.count - base) / size else { throw SectionDamage(reason: "\(count) lock waits in \(p.count) bytes") }
        let cycle = Int(p.u32(Layout.offset(\S.cycle_length)))
        guard cycle <= count else { throw SectionDamage(reason: "a deadlock of \(cycle) threads among \(count) waits") }
        var waits: [LockWait] = []
        let wordsAt = Layout.offset(\T.words)
        for index in 0 ..< count {
            let at = base + index * size
            let flags = p.u32(at + Layout.offset(\T.flags))
            let holder = p.i32(at + Layout.offset(\T.holder_tid))
            waits.append(LockWait(tid: p.i32(at + Layout.offset(\T.tid)), kind: LockWait.Kind(raw: p.u32(at + Layout.offset(\T.kind))),
                                  holder: holder > 0 ? holder : nil, holderGone: flags & CC_LOCK_HOLDER_GONE != 0,
                                  unreadable: flags & CC_LOCK_UNREADABLE != 0, released: flags & CC_LOCK_RELEASED != 0,
                                  futexAddress: p.u64(at + Layout.offset(\T.futex_address)), lockAddress: p.u64(at + Layout.offset(\T.lock_address)),
                                  futexOperation: p.u32(at + Layout.offset(\T.futex_op)), futexValue: p.u32(at + Layout.offset(\T.futex_value)),
                                  words: (0 ..< 8).map { p.u32(at + wordsAt + 4 * $0) }))
        }
        record.event?.lockWaits = LockWaits(waits: waits, cycleLength: cycle)
    }

    /// A computing hang's stack samples: only in a record of a live process, once.
    private mutating func decodeStackSamples(_ p: ByteView) throws {
        typealias S = cc_sec_stack_samples_t
        typealias T = cc_stack_sample_t
        try require(p, holds: S.self, "stack samples")
        guard record.event != nil, record.event?.stackSamples == nil else {
            throw SectionDamage(reason: "stack samples in a crash record, or twice")
        }
        let count = Int(p.u32(Layout.offset(\S.count)))
        var at = Layout.size(S.self)
        var samples: [StackSamples.Sample] = []
        for _ in 0 ..< count {
            guard at + Layout.size(T.self) <= p.count else { throw SectionDamage(reason: "stack samples cut short at sample \(samples.count)") }
            let frameCount = Int(p.u32(at + Layout.offset(\T.frame_count)))
            let frames = at + Layout.size(T.self)
            guard frameCount <= 256, frames + frameCount * 8 <= p.count else {
                throw SectionDamage(reason: "a stack sample of \(frameCount) frames in \(p.count - frames) bytes")
            }
            samples.append(StackSamples.Sample(tid: p.i32(at + Layout.offset(\T.tid)), round: p.u32(at + Layout.offset(\T.round)),
                                               frames: (0 ..< frameCount).map { p.u64(frames + 8 * $0) }))
            at = frames + frameCount * 8
        }
        record.event?.stackSamples = StackSamples(rounds: p.u32(Layout.offset(\S.samples)), intervalMilliseconds: p.u32(Layout.offset(\S.interval_ms)),
                                                  samples: samples)
    }

    /// The guarded heap's account of the crash: at most once, each stack at most CC_GH_MAX_FRAMES.
    private mutating func decodeGuardedHeap(_ p: ByteView) throws {
        typealias S = cc_sec_guarded_heap_t
        try require(p, holds: S.self, "guarded heap")
        guard record.guardedHeap == nil else { throw SectionDamage(reason: "a second guarded heap section") }
        let allocCount = Int(p.u32(Layout.offset(\S.alloc_frame_count)))
        let freeCount = Int(p.u32(Layout.offset(\S.free_frame_count)))
        let frames = Layout.size(S.self)
        guard allocCount <= Int(CC_GH_MAX_FRAMES), freeCount <= Int(CC_GH_MAX_FRAMES), frames + (allocCount + freeCount) * 8 <= p.count else {
            throw SectionDamage(reason: "guarded heap stacks of \(allocCount) and \(freeCount) frames in \(p.count - frames) bytes")
        }
        let freed = p.u32(Layout.offset(\S.flags)) & CC_GH_FREED != 0
        record.guardedHeap = GuardedHeapError(
            kind: GuardedHeapError.Kind(p.u32(Layout.offset(\S.error))),
            accessAddress: p.u64(Layout.offset(\S.access_address)),
            allocationAddress: p.u64(Layout.offset(\S.allocation_address)), allocationSize: p.u64(Layout.offset(\S.allocation_size)),
            allocationThread: p.i32(Layout.offset(\S.alloc_tid)), allocationFrames: (0 ..< allocCount).map { p.u64(frames + 8 * $0) },
            freeThread: freed ? p.i32(Layout.offset(\S.free_tid)) : nil,
            freeFrames: (0 ..< freeCount).map { p.u64(frames + 8 * (allocCount + $0)) })
    }

    private mutating func decodeEnd(_ p: ByteView) throws {
        typealias S = cc_sec_end_t
        try require(p, holds: S.self, "end")
        let declared = Int(p.u32(Layout.offset(\S.section_count)))
        let micros = p.u32(Layout.offset(\S.write_microseconds))
        record.writeMicroseconds = micros == 0 ? nil : Int(micros)
        if declared != record.sectionCount {
            record.notes.append(
                "the end section counts \(declared) sections before it, but \(record.sectionCount) were read")
        }
    }
}
