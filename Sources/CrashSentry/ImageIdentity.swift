// ImageIdentity.swift — the ids Sentry matches debug files by, for an image without a GNU build-id:
// the XOR of the first page of `.text`, read from the file on disk, as sentry-native and symbolic do.
package import CrashRecordFormat
import CrashFrames
#if canImport(Glibc)
import Glibc
#endif

extension SentryEnvelope {
    /// The ids of one image as Sentry wants them: `code_id` (the build-id as hex) and `debug_id`.
    package struct ImageIDs: Sendable, Equatable {
        /// The GNU build-id as lowercase hex; nil when the image has none (as symbolic and
        /// sentry-native leave it out then).
        package var codeID: String?
        package var debugID: String
    }

    /// The ids of an image in a record. With a build-id, both come from it. Without one, the
    /// debug id is the XOR of the first 4,096 bytes of `.text` (sentry-native's and symbolic's
    /// fallback), read from the file at `image.path` — only when that file still looks like the
    /// one that was mapped: an ELF file without a build-id whose `PT_LOAD` span fits the
    /// record's mapping size and that was not modified after the crash (`crashTime`, in
    /// nanoseconds since the epoch). Otherwise nil: no id rather than an invented one. `[vdso]`
    /// without a build-id has no file: nil.
    package static func imageIDs(_ image: CrashImage, crashTime: Int64?, readFiles: Bool = true) -> ImageIDs? {
        if !image.buildID.isEmpty {
            return ImageIDs(codeID: image.buildIDHex, debugID: debugID(buildID: image.buildID))
        }
        guard readFiles, image.path.hasPrefix("/"), let hash = textHash(path: image.path, mappedSize: image.size, crashTime: crashTime) else {
            return nil
        }
        return ImageIDs(codeID: nil, debugID: debugID(buildID: hash))
    }

    /// The 16-byte XOR of the first page of `.text` of the file at `path`, when it passes the
    /// identity checks described at ``imageIDs(_:crashTime:readFiles:)``.
    static func textHash(path: String, mappedSize: UInt64, crashTime: Int64?) -> [UInt8]? {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        let modified = Int64(status.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(status.st_mtim.tv_nsec)
        if let crashTime, modified > crashTime { return nil }
        guard let file = try? ELFFile(path: path), file.buildID.isEmpty, let span = file.loadSpan,
              let text = file.textPrefix(4096) else { return nil }
        // The mapping runs from the first segment's page to at least the end of the last
        // segment's file contents, and at most to the end of its memory rounded up to the
        // largest page size (64 KiB).
        let pageMask: UInt64 = 0xFFFF
        let start = span.first & ~0xFFF
        let smallest = span.fileEnd &- start
        let largest = ((span.memoryEnd &+ pageMask) & ~pageMask) &- (span.first & ~pageMask)
        guard mappedSize >= smallest, mappedSize <= largest else { return nil }
        var hash = [UInt8](repeating: 0, count: 16)
        for (index, byte) in text.enumerated() { hash[index % 16] ^= byte }
        return hash
    }
}
