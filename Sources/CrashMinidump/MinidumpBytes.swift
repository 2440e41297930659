// MinidumpBytes.swift — the little-endian byte buffer a minidump is laid out in, with the
// format's three ways of pointing: an RVA (offset from the file's start), a location (size and
// RVA) and a string (a length-prefixed UTF-16LE or UTF-8 text).

/// A growing minidump file. Every offset is an RVA: a minidump is addressed from its first byte.
struct MinidumpBytes {
    private(set) var bytes: [UInt8] = []

    /// The RVA of the next byte appended.
    var rva: UInt32 { UInt32(bytes.count) }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func zeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }
    mutating func append(_ data: some Collection<UInt8>) { bytes.append(contentsOf: data) }

    /// A location descriptor (MINIDUMP_LOCATION_DESCRIPTOR): data size, then RVA.
    mutating func location(_ location: Location) {
        u32(location.size)
        u32(location.rva)
    }

    /// Pads with zeros to a multiple of `alignment` (the format aligns its structures to 4, memory to 8).
    mutating func align(_ alignment: Int) {
        let remainder = bytes.count % alignment
        if remainder != 0 { zeros(alignment - remainder) }
    }

    /// Overwrites bytes already written, from `offset` on (the header, written last).
    mutating func replace(at offset: Int, with data: [UInt8]) {
        bytes.replaceSubrange(offset..<(offset + data.count), with: data)
    }

    /// Appends a MINIDUMP_STRING (byte length without the terminator, UTF-16LE, a 16-bit NUL),
    /// 4-aligned; returns its RVA.
    mutating func utf16String(_ text: String) -> UInt32 {
        align(4)
        let start = rva
        let units = Array(text.utf16)
        u32(UInt32(units.count * 2))
        for unit in units { u16(unit) }
        u16(0)
        return start
    }

    /// Appends a Crashpad MinidumpUTF8String (byte length without the terminator, UTF-8, a NUL),
    /// 4-aligned; returns its RVA.
    mutating func utf8String(_ text: String) -> UInt32 {
        align(4)
        let start = rva
        let utf8 = Array(text.utf8)
        u32(UInt32(utf8.count))
        append(utf8)
        u8(0)
        return start
    }

    /// Appends `body`'s bytes 4-aligned and returns where they are.
    mutating func block(_ body: (inout MinidumpBytes) -> Void) -> Location {
        align(4)
        let start = rva
        body(&self)
        return Location(size: rva - start, rva: start)
    }
}

/// MINIDUMP_LOCATION_DESCRIPTOR: where a structure is, and how many bytes it has.
struct Location: Equatable {
    var size: UInt32
    var rva: UInt32
    static let none = Location(size: 0, rva: 0)
}
