// JSONText.swift — a string as a JSON string literal, exactly and without Foundation: the one
// quoting every JSON text the package writes uses (the analytics' events, Sentry's envelopes through
// SortedJSONEncoder, the hang line on stderr).

/// Minimal JSON text helpers for pre-formatting (Foundation's encoder sorts and escapes
/// differently across platforms; this is exact and dependency-free).
package enum JSONText {
    /// `s` as a JSON string literal, with quotes. Works on UTF-8 bytes (no Foundation, no
    /// per-Character work): `"`, `\\` and control characters are escaped, as are U+2028 and
    /// U+2029 (valid JSON, but not valid JavaScript string literals).
    package static func quote(_ s: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count + 2)
        appendQuoted(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `s` as a JSON string literal to `out`, escaped as ``quote(_:)`` says, without
    /// making a String (the encoder's strings and keys). Runs of bytes that need no escape are
    /// copied whole.
    static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            let hex: StaticString = "0123456789abcdef"
            var runStart = 0
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                // Most bytes need no escape; 0xE2 may begin U+2028 or U+2029.
                if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") && byte != 0xE2 {
                    index += 1
                    continue
                }
                var consumed = 1
                let escape: (UInt8, UInt8)?  // a two-byte escape, or nil for \u
                var unicode: UInt16 = 0
                switch byte {
                case UInt8(ascii: "\""): escape = (0x5C, 0x22)
                case UInt8(ascii: "\\"): escape = (0x5C, 0x5C)
                case 0x0A: escape = (0x5C, UInt8(ascii: "n"))
                case 0x0D: escape = (0x5C, UInt8(ascii: "r"))
                case 0x09: escape = (0x5C, UInt8(ascii: "t"))
                case 0x00..<0x20:
                    escape = nil
                    unicode = UInt16(byte)
                default:  // 0xE2: U+2028 and U+2029 are E2 80 A8 and E2 80 A9
                    guard index + 2 < bytes.count, bytes[index + 1] == 0x80,
                          bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9 else {
                        index += 1
                        continue
                    }
                    escape = nil
                    unicode = bytes[index + 2] == 0xA8 ? 0x2028 : 0x2029
                    consumed = 3
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                if let escape {
                    out.append(escape.0)
                    out.append(escape.1)
                } else {
                    out.append(contentsOf: "\\u".utf8)
                    hex.withUTF8Buffer { digits in
                        for shift in stride(from: 12, through: 0, by: -4) {
                            out.append(digits[Int((unicode >> UInt16(shift)) & 0xF)])
                        }
                    }
                }
                index += consumed
                runStart = index
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
        }
        out.append(UInt8(ascii: "\""))
    }
}
