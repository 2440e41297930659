// RandomUUID.swift — a random (v4) UUID as lowercase text: run ids, event track ids, Sentry session ids.

/// A random (v4) UUID, lowercase, from the system generator (getrandom), formatted by hand:
/// Foundation's UUID costs more on first use, and the reporter makes one at start (the run id).
package func randomUUIDText() -> String {
    var generator = SystemRandomNumberGenerator()
    let high = generator.next() as UInt64, low = generator.next() as UInt64
    var bytes = [UInt8](repeating: 0, count: 16)
    for index in 0..<8 {
        bytes[index] = UInt8(truncatingIfNeeded: high >> (8 * index))
        bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (8 * index))
    }
    bytes[6] = bytes[6] & 0x0F | 0x40 // RFC 4122 version 4
    bytes[8] = bytes[8] & 0x3F | 0x80
    let hex = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(36)
    for (index, byte) in bytes.enumerated() {
        if index == 4 || index == 6 || index == 8 || index == 10 { out.append(0x2D) }
        out.append(hex[Int(byte >> 4)])
        out.append(hex[Int(byte & 0xF)])
    }
    return String(decoding: out, as: UTF8.self)
}
