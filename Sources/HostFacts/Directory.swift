// Directory.swift — `mkdir -p` for the record directory and the files beside it, in the module
// capture, the reporter and every sink can reach (no sink imports capture for it).
#if canImport(Glibc)
import Glibc
#endif

/// Makes directories.
package enum Directory {
    /// `mkdir -p` with mode 0700 for what it creates; the last component must not be a symlink.
    /// - Throws: ``DirectoryError``.
    package static func create(_ path: String) throws {
        if mkdir(path, 0o700) == 0 || errno == EEXIST { return }
        guard errno == ENOENT else { throw DirectoryError(operation: "mkdir \(path)", errno: errno) }
        // A parent is missing: make it (0700 too), then try again.
        let parent = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        guard !parent.isEmpty, parent != path else { throw DirectoryError(operation: "mkdir \(path)", errno: ENOENT) }
        try create(parent)
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw DirectoryError(operation: "mkdir \(path)", errno: errno)
        }
    }
}

/// A directory that could not be made: the call and its errno.
package struct DirectoryError: Error, Equatable, CustomStringConvertible {
    package var operation: String
    package var errno: Int32

    package init(operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    package var description: String { "\(operation): \(String(cString: strerror(errno))) (errno \(errno))" }
}
