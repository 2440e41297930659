// Installation.swift — this installation's id: a UUID kept beside the records, made once.
//
// Sentry counts release health per installation (a session's `did`): the id must outlive runs and
// be the same for every process over one record directory. It is made by the first launch that
// needs it: written to a temporary file and linked into place, so that of two processes making
// one at once, both end up with the one that was linked first. The file is untrusted like every
// file there: read without following a link, at most 64 bytes, and a UUID or nothing.
import HostFacts
#if canImport(Glibc)
import Glibc
#endif

package enum Installation {
    static let fileName = "installation-id"

    /// The id in `recordDirectory`, made when there is none (or it is not a UUID); nil when the
    /// directory cannot be written.
    package static func id(recordDirectory: String) -> String? {
        let path = recordDirectory + "/" + fileName
        if let existing = read(path) { return existing }
        let made = randomUUIDText()
        let temporary = path + ".tmp." + String(getpid()) + "." + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return nil }
        let bytes = Array((made + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        defer { unlink(temporary) }
        guard written == bytes.count else { return nil }
        if link(temporary, path) == 0 { return made }
        // Another process linked its id first: that one. A file that is no id is replaced.
        if let theirs = read(path) { return theirs }
        return rename(temporary, path) == 0 ? made : nil
    }

    /// The UUID in the file at `path`, if it holds one.
    static func read(_ path: String) -> String? {
        guard let (bytes, _) = SmallFile.read(path, limit: 65, followLinks: false), bytes.count <= 64 else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).trimmingSuffixNewlines()
        let hex = text.utf8.filter { $0 != UInt8(ascii: "-") }
        guard text.utf8.count == 36, hex.count == 32,
              hex.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return nil }
        return text
    }
}

extension String {
    fileprivate func trimmingSuffixNewlines() -> String {
        var text = Substring(self)
        while text.last == "\n" || text.last == "\r" { text = text.dropLast() }
        return String(text)
    }
}
