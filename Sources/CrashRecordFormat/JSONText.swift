// JSONText.swift — a string as a JSON string literal, exactly and without Foundation: the one
// quoting every hand-written JSON text in the package uses (the analytics' events, Sentry's session
// envelopes, the hang line on stderr).

/// Minimal JSON text helpers for pre-formatting (Foundation's encoder sorts and escapes
/// differently across platforms; this is exact and dependency-free).
package enum JSONText {
    /// `s` as a JSON string literal, with quotes. Works on UTF-8 bytes (no Foundation, no
    /// per-Character work): `"`, `\\` and control characters are escaped, as are U+2028 and
    /// U+2029 (valid JSON, but not valid JavaScript string literals).
    package static func quote(_ s: String) -> String {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [0x22]
        out.reserveCapacity(s.utf8.count + 2)
        let bytes = Array(s.utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, 0x6E]
            case 0x0D: out += [0x5C, 0x72]
            case 0x09: out += [0x5C, 0x74]
            case 0x00..<0x20: out += [0x5C, 0x75, 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            case 0xE2 where index + 2 < bytes.count && bytes[index + 1] == 0x80 && (bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9):
                out += Array("\\u202".utf8) + [bytes[index + 2] == 0xA8 ? 0x38 : 0x39]
                index += 2
            default: out.append(byte)
            }
            index += 1
        }
        out.append(0x22)
        return String(decoding: out, as: UTF8.self)
    }
}
