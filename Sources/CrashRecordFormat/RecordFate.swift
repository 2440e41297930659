// RecordFate.swift — what a later launch writes into the record format (never the handler): a
// hang or memory record's fate (CC_SEC_FATE) added to the record the run kept, and, for a run the
// OOM killer ended with no memory record, a record of that kill made from what the run's ledger
// saw. Both with the layout the C writer and every reader share (cc_record.h).
import CCrashRecordLayout

extension RecordFate {
    /// Why a fate could not be added to a record.
    package struct Refusal: Error, Equatable, CustomStringConvertible {
        package let description: String
    }

    /// `bytes` (a whole hang record, read as untrusted) with this fate added: a `CC_SEC_FATE`
    /// section just before its `CC_SEC_END`, which is written again with the new count. Refused
    /// for anything but a complete hang record that has no fate yet; what was before END is kept
    /// byte for byte (a torn tail after END is dropped).
    package func added(to bytes: [UInt8]) throws -> [UInt8] {
        let (record, layout) = try CrashRecordReader.parseWithLayout(bytes)
        guard record.isComplete, let end = layout.sections.last, end.type == CC_SEC_END.rawValue else {
            throw Refusal(description: "not a complete record")
        }
        guard let event = record.event, event.kind == .hang || event.kind == .memory else { throw Refusal(description: "not a hang or memory record") }
        guard event.fate == nil else { throw Refusal(description: "its fate is told already") }
        var fate = cc_sec_fate_t()
        fate.fate = CC_FATE_KILLED.rawValue
        fate.flags = oom ? UInt32(CC_FATE_OOM) : 0
        fate.last_seen_wall_ms = lastSeenWallMilliseconds ?? 0
        fate.last_seen_after_ms = lastSeenAfterMilliseconds ?? -1
        var endPayload = Array(bytes[(end.start + 8)..<(end.start + 8 + end.payloadLength)])
        let count = UInt32(record.sectionCount)   // END's new count: every section before it, the fate included
        withUnsafeBytes(of: count.littleEndian) { endPayload.replaceSubrange(0..<4, with: $0) }
        var out = Array(bytes[..<end.start])
        out += Self.section(type: CC_SEC_FATE.rawValue, payload: withUnsafeBytes(of: fate) { Array($0) })
        out += Self.section(type: CC_SEC_END.rawValue, payload: endPayload)
        return out
    }

    /// A section as the writer makes one: header, payload, CRC-32 of both.
    private static func section(type: UInt32, payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        withUnsafeBytes(of: type.littleEndian) { out += $0 }
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { out += $0 }
        out += payload
        withUnsafeBytes(of: CRC32.checksum(out).littleEndian) { out += $0 }
        return out
    }
}

extension RecordFate {
    /// A record of a run the OOM killer ended that wrote no memory record (no limit was watched,
    /// hang detection was off, or usage passed the limit between two of the watch's reads): made
    /// by a later launch from the run's ledger, so that the kill is an event in every sink like
    /// one with a memory record. A memory record (kind 3) with no readings, no threads: its
    /// PROCESS says the pid and when the run was last seen alive, its STRINGs the app, the run
    /// id and a note that says where it came from, then this fate.
    package func killedRunRecord(pid: Int32, startWallMilliseconds: Int64, appName: String, appVersion: String, runID: String) -> [UInt8] {
        #if arch(arm64)
        let architecture = UInt16(CC_ARCH_AARCH64.rawValue)
        #else
        let architecture = UInt16(CC_ARCH_X86_64.rawValue)
        #endif
        var header = cc_file_header_t()
        withUnsafeMutableBytes(of: &header.magic) { $0.copyBytes(from: Array(CC_RECORD_MAGIC.utf8).prefix(8)) }
        header.version = UInt16(CC_RECORD_VERSION)
        header.header_size = UInt16(MemoryLayout<cc_file_header_t>.size)
        header.arch = architecture
        header.byte_order = 1
        header.pointer_size = 8
        var out = withUnsafeBytes(of: header) { Array($0) }
        let crc = CRC32.checksum(out.prefix(28))
        withUnsafeBytes(of: crc.littleEndian) { out.replaceSubrange(28..<32, with: $0) }

        var event = cc_sec_event_t()
        event.kind = CC_KIND_MEMORY.rawValue
        event.detector = CC_DETECTOR_MEMORY.rawValue
        withUnsafeMutableBytes(of: &event.name) { $0.copyBytes(from: Array("memory".utf8)) }
        var sections = 0
        func add(_ type: UInt32, _ payload: [UInt8]) {
            out += Self.section(type: type, payload: payload)
            sections += 1
        }
        add(CC_SEC_EVENT.rawValue, withUnsafeBytes(of: event) { Array($0) })
        var process = cc_sec_process_t()
        process.pid = pid
        process.start_wall_ns = startWallMilliseconds * 1_000_000
        process.crash_wall_ns = (lastSeenWallMilliseconds ?? startWallMilliseconds) * 1_000_000
        add(CC_SEC_PROCESS.rawValue, withUnsafeBytes(of: process) { Array($0) })
        let note = "made by the next launch from the run's ledger: the OOM killer ended the run and it wrote no memory record "
            + "(no memory limit watched, hang detection off, or the usage passed the limit between two reads); when it was last seen alive"
        for (key, text) in [(CC_STR_APP_NAME, appName), (CC_STR_APP_VERSION, appVersion), (CC_STR_RUN_ID, runID), (CC_STR_NOTE, note)]
        where !text.isEmpty {
            var string = cc_sec_string_t()
            string.key = key.rawValue
            add(CC_SEC_STRING.rawValue, withUnsafeBytes(of: string) { Array($0) } + Array(text.utf8.prefix(4096)))
        }
        var fate = cc_sec_fate_t()
        fate.fate = CC_FATE_KILLED.rawValue
        fate.flags = oom ? UInt32(CC_FATE_OOM) : 0
        fate.last_seen_wall_ms = lastSeenWallMilliseconds ?? 0
        fate.last_seen_after_ms = -1
        add(CC_SEC_FATE.rawValue, withUnsafeBytes(of: fate) { Array($0) })
        var end = cc_sec_end_t()
        end.section_count = UInt32(sections)
        add(CC_SEC_END.rawValue, withUnsafeBytes(of: end) { Array($0) })
        return out
    }
}
