// SmallFile.swift — the one reader of small host files (/proc, cgroupfs, os-release, run markers):
// open/read/close with raw calls, no Foundation, bounded, never blocking on a FIFO.
#if canImport(Glibc)
import Glibc
#endif

/// Reads small files whole, as untrusted: only a regular file, at most a given number of bytes.
package enum SmallFile {
    /// The first `limit` bytes of the regular file at `path` and its inode, or `nil` when it cannot
    /// be opened or read or is not a regular file. Reads to the end rather than trusting `st_size`
    /// (/proc and cgroupfs files report 0). Opened non-blocking, so that a FIFO at the path cannot
    /// stall the caller (it is then refused); with `followLinks: false` a symbolic link at the path
    /// is refused too (O_NOFOLLOW). A caller that must tell a file longer than it wants reads
    /// `limit + 1` bytes.
    package static func read(_ path: String, limit: Int, followLinks: Bool = true) -> (bytes: [UInt8], inode: UInt64)? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (followLinks ? 0 : O_NOFOLLOW))
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG, let bytes = read(descriptor: fd, limit: limit) else { return nil }
        return (bytes, UInt64(status.st_ino))
    }

    /// The first `limit` bytes read from `fd`, from where it stands to its end (`nil` on a read
    /// error): for a caller that opened (and locked) the file itself.
    package static func read(descriptor fd: Int32, limit: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: min(limit, 4096))
        var count = 0
        while count < limit {
            if count == bytes.count { bytes.append(contentsOf: repeatElement(0, count: min(bytes.count, limit - count))) }
            let got = bytes.withUnsafeMutableBytes { buffer in
                Glibc.read(fd, buffer.baseAddress! + count, buffer.count - count)
            }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { return nil }
            if got == 0 { break }
            count += got
        }
        bytes.removeSubrange(count...)
        return bytes
    }

    /// ``read(_:limit:followLinks:)`` as UTF-8 text (invalid bytes repaired).
    package static func text(_ path: String, limit: Int, followLinks: Bool = true) -> (text: String, inode: UInt64)? {
        read(path, limit: limit, followLinks: followLinks).map { (String(decoding: $0.bytes, as: UTF8.self), $0.inode) }
    }
}

extension SmallFile {
    /// Replaces the file at `path` with `bytes`: written to a temporary file beside it and renamed
    /// over it (a reader sees the old file or the new, never half). Not fsync'ed. Returns whether
    /// it was.
    package static func replace(_ path: String, with bytes: [UInt8]) -> Bool {
        let temporary = path + ".tmp." + String(getpid()) + "." + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return false }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            written += count
        }
        close(fd)
        guard written == bytes.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }
}
