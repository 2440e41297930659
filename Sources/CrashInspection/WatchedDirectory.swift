// WatchedDirectory.swift — where a running process's hang watcher answers snapshot requests, found from /proc without asking it.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The record directory a running process watches for `crash-inspect snapshot <pid>`'s
/// requests. Its hang watcher holds a shared `flock` on that directory while it watches
/// (HangDetection's `SnapshotRequest.advertise`); the kernel lists each lock with its holder's pid
/// and the locked file's device and inode in /proc/locks. The process's own descriptors
/// (/proc/<pid>/fd, readable by its owner and root) then give that inode's path.
package enum WatchedDirectory {
    /// The directories `pid` holds a shared flock on, as that process names them; [] when it
    /// holds none or its descriptors cannot be read.
    package static func of(pid: Int32, locks: String? = nil) -> [String] {
        guard let text = locks ?? (try? String(contentsOfFile: "/proc/locks", encoding: .utf8)) else { return [] }
        let wanted = Set(locked(by: pid, in: text))
        guard !wanted.isEmpty,
              let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { return [] }
        var found: [String] = []
        for descriptor in descriptors.sorted() {
            let link = "/proc/\(pid)/fd/\(descriptor)"
            var info = stat()
            guard stat(link, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR,
                  wanted.contains(FileID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))),
                  let path = try? FileManager.default.destinationOfSymbolicLink(atPath: link), !found.contains(path) else { continue }
            found.append(path)
        }
        return found
    }

    /// A locked file as /proc/locks names it.
    package struct FileID: Hashable, Sendable {
        package var major: UInt32
        package var minor: UInt32
        package var inode: UInt64

        package init(major: UInt32, minor: UInt32, inode: UInt64) {
            self.major = major
            self.minor = minor
            self.inode = inode
        }

        /// From `stat`'s st_dev, split as glibc's major() and minor() split it.
        init(device: UInt64, inode: UInt64) {
            self.init(major: UInt32(truncatingIfNeeded: ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)),
                      minor: UInt32(truncatingIfNeeded: (device & 0xff) | ((device >> 12) & ~0xff)), inode: inode)
        }
    }

    /// The files of /proc/locks's text that `pid` holds a shared (READ) flock on:
    /// `1: FLOCK  ADVISORY  READ 4242 fe:01:131074 0 EOF` (major and minor in hex).
    package static func locked(by pid: Int32, in text: String) -> [FileID] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", fields[3] == "READ", Int32(fields[4]) == pid else { return nil }
            let parts = fields[5].split(separator: ":")
            guard parts.count == 3, let major = UInt32(parts[0], radix: 16), let minor = UInt32(parts[1], radix: 16),
                  let inode = UInt64(parts[2]) else { return nil }
            return FileID(major: major, minor: minor, inode: inode)
        }
    }
}
