// OSRelease.swift — the distribution this machine runs, from os-release(5): the one parser, for the
// `$os_version` preset and the Sentry event's `contexts.os`.
#if canImport(Glibc)
import Glibc
#endif

/// The fields of os-release(5) that events name: `ID`, `VERSION_ID`, `PRETTY_NAME`.
package struct OSRelease: Sendable, Equatable {
    /// `ID`, e.g. "debian" (Sentry's `distribution_name`).
    package var id: String?
    /// `VERSION_ID`, e.g. "12" (Sentry's `distribution_version`).
    package var versionID: String?
    /// `PRETTY_NAME`, e.g. "Debian GNU/Linux 12 (bookworm)" (`$os_version`, Sentry's
    /// `distribution_pretty_name`).
    package var prettyName: String?

    package init(id: String? = nil, versionID: String? = nil, prettyName: String? = nil) {
        self.id = id
        self.versionID = versionID
        self.prettyName = prettyName
    }

    /// Parses os-release text as Python's `platform.freedesktop_os_release` does: `KEY=value`
    /// lines whose key is letters, digits and `_` from the line's start; a value in matching
    /// double or single quotes loses them; a backslash before `\`, `$`, `"`, `'` or `` ` `` is
    /// dropped; any other line (a comment, a blank) is skipped; a later key wins. Works on bytes:
    /// this runs on the launch path, where String's Character-level work costs ~0.1 ms on first use.
    package init(parsing bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        var lineStart = 0
        while lineStart < bytes.count {
            let lineEnd = bytes[lineStart...].firstIndex(of: 0x0A) ?? bytes.count
            if let (key, value) = Self.assignment(bytes[lineStart..<lineEnd]) {
                switch key {
                case "ID": id = value
                case "VERSION_ID": versionID = value
                case "PRETTY_NAME": prettyName = value
                default: break
                }
            }
            lineStart = lineEnd + 1
        }
    }

    /// Parses os-release text (see ``init(parsing:)-(some Collection<UInt8>)``).
    package init(parsing text: String) {
        self.init(parsing: Array(text.utf8))
    }

    /// Where os-release(5) says the file is: `/etc/os-release`, else `/usr/lib/os-release`.
    package static let paths = ["/etc/os-release", "/usr/lib/os-release"]

    /// This machine's os-release: the first of `paths` that can be opened, parsed; nil when none can.
    /// Plain read(2) (no Foundation on the launch path).
    package static func current(paths: [String] = OSRelease.paths) -> OSRelease? {
        for path in paths {
            if let bytes = SmallFile.read(path, limit: 64 << 10)?.bytes { return OSRelease(parsing: bytes) }
        }
        return nil
    }

    /// One `KEY=value` line, its value unquoted and unescaped; nil for any other line.
    static func assignment(_ line: ArraySlice<UInt8>) -> (String, String)? {
        guard let equals = line.firstIndex(of: UInt8(ascii: "=")), equals > line.startIndex,
              line[..<equals].allSatisfy({ isKeyByte($0) }) else { return nil }
        var value = line[(equals + 1)...]
        if value.count >= 2, let quote = value.first, quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'"), value.last == quote {
            value = value.dropFirst().dropLast()
        }
        var out: [UInt8] = []
        out.reserveCapacity(value.count)
        var index = value.startIndex
        while index < value.endIndex {
            let next = value.index(after: index)
            if value[index] == UInt8(ascii: "\\"), next < value.endIndex, Self.isEscapable(value[next]) {
                out.append(value[next])
                index = value.index(after: next)
            } else {
                out.append(value[index])
                index = next
            }
        }
        return (String(decoding: line[..<equals], as: UTF8.self), String(decoding: out, as: UTF8.self))
    }

    /// `\`, `$`, `"`, `'`, `` ` ``: what a backslash escapes. A switch, not a Set: the first
    /// hashed collection of a process costs ≈ 0.1 ms (measured on the analytics' launch path).
    static func isEscapable(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "\\"), UInt8(ascii: "$"), UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "`"): return true
        default: return false
        }
    }

    static func isKeyByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F
    }
}
