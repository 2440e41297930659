// RecordRedaction.swift — a minimised copy of a crash record (what a sink may send), and the path
// sanitiser it uses.
//
// The copy is made on the section level with the one layout (cc_record.h): the file header as is,
// every kept section byte for byte, sections whose strings are sanitised rewritten with a fresh
// CRC-32, dropped sections left out, and END's section count rewritten to what precedes it in the
// copy, so a reader sees a complete record when the original was complete. Which sections the
// input has, and where it stops, is the reader's own judgement (`CrashRecordReader.parseWithLayout`):
// the copy stops at the first torn or invalid section exactly as the reader does.

import CCrashRecordLayout

/// What a copy of a crash record keeps. The default keeps nothing that can hold user data beyond
/// what grouping and symbolication need (CrashRecordFormat.docc/RecordFormat.md, "Sections that can hold user data").
package struct RecordRedaction: Sendable, Equatable {
    /// Keep CC_SEC_MEMORY sections (the crashed thread's stack, the windows around pc and the fault address).
    package var rawMemory: Bool
    /// Keep CC_SEC_BREADCRUMB sections (log lines).
    package var breadcrumbs: Bool
    /// Keep CC_SEC_APP_END (the compensating `$AppEnd`: `distinct_id`, login id, super properties)
    /// and the user in CC_SEC_SCOPE (its tags and contexts are kept either way).
    package var identity: Bool
    /// Keep paths as written; `false`: the executable path string, every image's path and the
    /// fatal and abort message texts are sanitised with ``PathSanitizer``.
    package var fullPaths: Bool
    /// Keep each CC_SEC_REQUEST's query string; `false`: the field is zeroed (a query often
    /// carries tokens).
    package var requestQuery: Bool
    /// Keep each CC_SEC_REQUEST's key/values (the program's own: a tenant, a user's id);
    /// `false`: the field is zeroed.
    package var requestAttributes: Bool

    package init(rawMemory: Bool = false, breadcrumbs: Bool = false, identity: Bool = false, fullPaths: Bool = false,
                 requestQuery: Bool = false, requestAttributes: Bool = false) {
        self.rawMemory = rawMemory
        self.breadcrumbs = breadcrumbs
        self.identity = identity
        self.fullPaths = fullPaths
        self.requestQuery = requestQuery
        self.requestAttributes = requestAttributes
    }

    /// Every opt-in on: the copy is the record as the reader accepts it (a sink that keeps
    /// everything sends the file as it is instead, a torn tail included).
    package var keepsEverything: Bool { rawMemory && breadcrumbs && identity && fullPaths && requestQuery && requestAttributes }

    /// Every opt-in on.
    package static let everything = RecordRedaction(rawMemory: true, breadcrumbs: true, identity: true, fullPaths: true,
                                                    requestQuery: true, requestAttributes: true)

    /// A copy of `bytes` (a record as read from disk: untrusted, possibly partial or torn) with only
    /// what this policy keeps.
    ///
    /// - The file header is copied as is; the sections the reader accepts are copied in order, up
    ///   to END or the first torn or invalid section (the copy then has no END: incomplete, as the
    ///   original is). Anything after END is left out.
    /// - MEMORY, BREADCRUMB and APP_END are left out unless their opt-in is on. STRING 3 (the
    ///   executable path), 4 (the Swift fatal message), 8 (the C library's abort message) and each
    ///   IMAGE's path are sanitised unless `fullPaths` is on (the section is rewritten, its CRC
    ///   recomputed). Each REQUEST's query and key/value fields are zeroed unless their opt-in
    ///   is on (the section is rewritten to the layout's size, its CRC recomputed): the copy
    ///   reads as the original but for those two fields, empty. REQUESTS is copied as is.
    /// - RESOURCES and the process's own status (STRING 9) are copied; the machine's memory and
    ///   load and the cgroup's directory and figures (STRING 10–15, the host's) only with every opt-in.
    /// - A live process's sections (EVENT, REQUEST_TASK, FATE, MEMORY_WATCH, THREAD_STATES,
    ///   STACK_SAMPLES) are copied: a hang's copy still reads as a hang. LOCK_WAITS is copied with
    ///   each lock's 32 bytes of words zeroed unless `rawMemory` is on.
    /// - SCOPE loses its user entries unless `identity` is on (rewritten from the entries read).
    ///   Section types and STRING keys this reader does not know (a newer writer's: nobody can
    ///   say what they hold) are left out unless every opt-in is on.
    /// - END's section count is rewritten to the number of sections before it in the copy.
    ///
    /// Bytes the reader refuses outright (no header, bad magic, unknown version, corrupt header)
    /// give an empty copy: nothing of them leaves. Never traps on any input.
    package func apply(to bytes: [UInt8]) -> [UInt8] {
        guard let (_, layout) = try? CrashRecordReader.parseWithLayout(bytes),
              layout.headerSize >= 0, layout.headerSize <= bytes.count else { return [] }
        var copy = Array(bytes[0 ..< layout.headerSize])
        var written: UInt32 = 0
        let headerSize = MemoryLayout<cc_section_header_t>.size
        let crcSize = MemoryLayout<UInt32>.size
        for section in layout.sections {
            let payloadStart = section.start + headerSize
            let end = payloadStart + section.payloadLength + crcSize
            // The reader checked these bounds; checked again so no input can trap here.
            guard section.start >= 0, section.payloadLength >= 0, end <= bytes.count else { break }
            let whole = bytes[section.start ..< end]
            let payload = bytes[payloadStart ..< payloadStart + section.payloadLength]
            switch section.type {
            case CC_SEC_MEMORY.rawValue where !rawMemory,
                 CC_SEC_BREADCRUMB.rawValue where !breadcrumbs,
                 CC_SEC_APP_END.rawValue where !identity:
                continue
            case CC_SEC_STRING.rawValue:
                let keySize = MemoryLayout<cc_sec_string_t>.size
                let key = littleEndianU32(payload, at: 0)
                let text = payload.dropFirst(keySize)
                switch key {
                case CC_STR_EXECUTABLE_PATH.rawValue where !fullPaths:
                    append(type: section.type, Array(payload.prefix(keySize)), PathSanitizer.sanitizePath(text), to: &copy)
                case CC_STR_FATAL_MESSAGE.rawValue where !fullPaths, CC_STR_ABORT_MESSAGE.rawValue where !fullPaths,
                     CC_STR_CXX_WHAT.rawValue where !fullPaths, CC_STR_RUNTIME_WARNINGS.rawValue where !fullPaths:
                    append(type: section.type, Array(payload.prefix(keySize)), Array(PathSanitizer.sanitize(String(decoding: text, as: UTF8.self)).utf8), to: &copy)
                case CC_STR_APP_NAME.rawValue, CC_STR_APP_VERSION.rawValue, CC_STR_EXECUTABLE_PATH.rawValue, CC_STR_FATAL_MESSAGE.rawValue,
                     CC_STR_KERNEL.rawValue, CC_STR_NOTE.rawValue, CC_STR_RUN_ID.rawValue, CC_STR_ABORT_MESSAGE.rawValue,
                     CC_STR_PROC_STATUS.rawValue, CC_STR_CXX_TYPE.rawValue, CC_STR_CXX_WHAT.rawValue, CC_STR_CXX_WHAT_STATE.rawValue,
                     CC_STR_RUNTIME_WARNINGS.rawValue:
                    copy.append(contentsOf: whole)
                default:
                    guard keepsEverything else { continue }
                    copy.append(contentsOf: whole)
                }
            case CC_SEC_REQUEST.rawValue where !requestQuery || !requestAttributes:
                typealias S = cc_sec_request_t
                // The reader accepted it, so it holds the layout; bytes past it (a newer
                // writer's) are left out with the fields blanked.
                var fixed = Array(payload.prefix(MemoryLayout<S>.size))
                guard fixed.count == MemoryLayout<S>.size else { continue }
                func blank<T>(_ field: KeyPath<S, T>) {
                    let start = MemoryLayout<S>.offset(of: field) ?? fixed.count
                    for index in start ..< min(fixed.count, start + MemoryLayout<T>.size) { fixed[index] = 0 }
                }
                if !requestQuery { blank(\S.query) }
                if !requestAttributes { blank(\S.attributes) }
                append(type: section.type, fixed, [], to: &copy)
            case CC_SEC_LOCK_WAITS.rawValue where !rawMemory:
                // Each lock's words are memory of the program (a futex with no known layout may sit
                // in any structure): zeroed; the kinds, holders and addresses read from them stay.
                typealias S = cc_sec_lock_waits_t
                typealias T = cc_lock_wait_t
                var rewritten = Array(payload)
                let count = rewritten.count >= MemoryLayout<S>.size ? Int(littleEndianU32(payload, at: 0)) : 0
                let words = MemoryLayout<T>.offset(of: \T.words) ?? 0
                for index in 0 ..< count {
                    let at = MemoryLayout<S>.size + index * MemoryLayout<T>.size + words
                    guard at + 32 <= rewritten.count else { break }
                    for byte in at ..< at + 32 { rewritten[byte] = 0 }
                }
                append(type: section.type, rewritten, [], to: &copy)
            case CC_SEC_SCOPE.rawValue where !identity:
                // The app's tags and contexts stay; its user does not.
                var ignored: [String] = []
                guard var scope = CrashScope(section: payload, notes: &ignored) else { continue }
                scope.user = nil
                guard !scope.isEmpty, let rendered = scope.rendered() else { continue }
                append(type: section.type, rendered, [], to: &copy)
            case CC_SEC_IMAGE.rawValue where !fullPaths:
                let fixed = MemoryLayout<cc_sec_image_t>.size
                append(type: section.type, Array(payload.prefix(fixed)), PathSanitizer.sanitizePath(payload.dropFirst(fixed)), to: &copy)
            case CC_SEC_END.rawValue:
                var rewritten = Array(payload)
                let countOffset = MemoryLayout<cc_sec_end_t>.offset(of: \cc_sec_end_t.section_count) ?? 0
                if rewritten.count >= countOffset + 4 {
                    for index in 0 ..< 4 { rewritten[countOffset + index] = UInt8(truncatingIfNeeded: written >> (8 * UInt32(index))) }
                }
                append(type: section.type, rewritten, [], to: &copy)
            case CC_SEC_CRASH.rawValue, CC_SEC_PROCESS.rawValue, CC_SEC_REGISTERS.rawValue, CC_SEC_THREAD.rawValue,
                 CC_SEC_THREAD_REGISTERS.rawValue, CC_SEC_ASYNC_CHAIN.rawValue, CC_SEC_ASYNC_TASK.rawValue,
                 CC_SEC_MEMORY.rawValue, CC_SEC_BREADCRUMB.rawValue, CC_SEC_APP_END.rawValue, CC_SEC_IMAGE.rawValue,
                 CC_SEC_REQUESTS.rawValue, CC_SEC_REQUEST.rawValue, CC_SEC_SCOPE.rawValue, CC_SEC_RESOURCES.rawValue,
                 // A live process's record: what fired and how the threads stood (numbers, thread
                 // ids, addresses; the event's name is the detector's or the program's reason).
                 CC_SEC_EVENT.rawValue, CC_SEC_REQUEST_TASK.rawValue, CC_SEC_FATE.rawValue, CC_SEC_MEMORY_WATCH.rawValue,
                 CC_SEC_THREAD_STATES.rawValue, CC_SEC_LOCK_WAITS.rawValue, CC_SEC_STACK_SAMPLES.rawValue,
                 // A guarded allocation's error: its kind, size, addresses and two stacks (no memory).
                 CC_SEC_GUARDED_HEAP.rawValue:
                copy.append(contentsOf: whole)
            default:
                guard keepsEverything else { continue }
                copy.append(contentsOf: whole)
            }
            written &+= 1
            if section.type == CC_SEC_END.rawValue { break }
        }
        return copy
    }

    /// Appends a section of `type` whose payload is `fixed` + `text` (the text cut so the payload
    /// stays within CC_SECTION_MAX_LENGTH), with its header and CRC-32.
    private func append(type: UInt32, _ fixed: [UInt8], _ text: [UInt8], to copy: inout [UInt8]) {
        let room = max(0, Int(CC_SECTION_MAX_LENGTH) - fixed.count)
        var section: [UInt8] = []
        let payloadLength = UInt32(truncatingIfNeeded: fixed.count + min(text.count, room))
        for value in [type, payloadLength] {
            for index in 0 ..< 4 { section.append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(index)))) }
        }
        section.append(contentsOf: fixed)
        section.append(contentsOf: text.prefix(room))
        let crc = CRC32.checksum(section)
        for index in 0 ..< 4 { section.append(UInt8(truncatingIfNeeded: crc >> (8 * UInt32(index)))) }
        copy.append(contentsOf: section)
    }

    /// The little-endian u32 at `offset` into `bytes`, 0 when it does not fit.
    private func littleEndianU32(_ bytes: ArraySlice<UInt8>, at offset: Int) -> UInt32 {
        guard offset >= 0, bytes.count >= offset + 4 else { return 0 }
        var value: UInt32 = 0
        for index in (0 ..< 4).reversed() { value = (value << 8) | UInt32(bytes[bytes.startIndex + offset + index]) }
        return value
    }
}

/// Takes the user-specific parts out of paths, keeping each path's file name.
///
/// What Swift's backtracer does with `SWIFT_BACKTRACE=sanitize=yes`: its `sanitizePath` calls
/// CrashReporter's `CRCopySanitizedPath` with `kCRSanitizePathGlobAllTypes | kCRSanitizePathKeepFile`
/// on macOS — home directories and volume names globbed, the file name kept, as macOS crash reports
/// show (`/Users/USER/*/MyApp`) — and does nothing on other systems ("For now, on non-macOS
/// systems, do nothing"). This is the equivalent for Linux, where a service's binaries rarely live
/// under a home directory but often under a directory named after a user, a project, a customer
/// or a build (`/tmp/…`, `/srv/…`, `/work/…`, `/mnt/<volume>/…`):
///
/// - Under a home directory (`/home/<name>/`, `/Users/<name>/`, `/var/home/<name>/`): the user name
///   becomes `USER` and the directories below it `*`: `/home/alice/src/app/.build/debug/app` →
///   `/home/USER/*/app`; `~/…` likewise becomes `~/*/<file>`.
/// - Under the system's own directories (`/usr`, `/lib`, `/lib64`, `/lib32`, `/libx32`, `/bin`,
///   `/sbin`, `/etc`, `/opt`, `/nix`, `/gnu`, `/snap`, `/proc`, `/dev`, `/sys`, `/System`,
///   `/Library`): unchanged — they name the distribution's libraries and toolchains, which tell
///   a reader (and Sentry's symbolication) what ran, and nothing about the user.
/// - Anywhere else, including `/root` and `/tmp`: the first directory is kept and the ones between
///   it and the file become `*`: `/tmp/build-7/SECRET/app` → `/tmp/*/app`; a path of two parts or
///   fewer (`/tmp/app`) is unchanged.
///
/// The file name is always kept: Sentry and crash-inspect show it, and with the build id it is
/// what matching an image to its debug file needs.
package enum PathSanitizer {
    /// `text` with user-specific parts of paths replaced, as the Swift backtracer's `sanitize`
    /// option does. Text (a fatal message, an assert's text) may hold paths among other words: a
    /// path is a run of characters starting with `/` (or `~/`) at the start of the text or after
    /// whitespace, a quote, a bracket, `=`, `,`, `;` or `:`, and ending before whitespace, a quote,
    /// a closing bracket, `,`, `;` or `:` (`/src/x.c:12: main: Assertion…`).
    package static func sanitize(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let startsPath = bytes[index] == UInt8(ascii: "/")
                || (bytes[index] == UInt8(ascii: "~") && index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "/"))
            if startsPath, index == 0 || opens.contains(bytes[index - 1]) {
                var end = index
                while end < bytes.count, !closes.contains(bytes[end]) { end += 1 }
                out.append(contentsOf: sanitizePath(bytes[index ..< end]))
                index = end
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// One whole path (an image's, the executable's: spaces and all) sanitised as ``sanitize(_:)``
    /// describes; bytes that are not an absolute or `~/` path are returned as they are.
    package static func sanitizePath<Bytes: Collection>(_ path: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        let bytes = Array(path)
        let slash = UInt8(ascii: "/")
        let home = bytes.starts(with: [UInt8(ascii: "~"), slash])
        guard bytes.first == slash || home else { return bytes }
        let parts = bytes.split(separator: slash, omittingEmptySubsequences: true).map { Array($0) }
        guard let file = parts.last else { return bytes }
        if home {
            // ~ / dirs… / file
            return parts.count <= 2 ? bytes : Array("~/*/".utf8) + file
        }
        let first = String(decoding: parts[0], as: UTF8.self)
        if systemDirectories.contains(first) { return bytes }
        let userIndex: Int? = switch first {
        case "home", "Users": 1
        case "var" where parts.count > 1 && parts[1] == Array("home".utf8): 2
        default: nil
        }
        if let userIndex {
            guard parts.count > userIndex else { return bytes }
            var result = [slash] + parts[0 ..< userIndex].joined(separator: [slash]) + Array("/USER".utf8)
            let below = parts.count - userIndex - 1
            if below > 1 { result += Array("/*".utf8) }
            if below > 0 { result += [slash] + file }
            return result
        }
        return parts.count <= 2 ? bytes : [slash] + parts[0] + Array("/*/".utf8) + file
    }

    /// Top-level directories that hold the system's and the toolchains' files, not the user's.
    static let systemDirectories: Set<String> = [
        "usr", "lib", "lib32", "lib64", "libx32", "bin", "sbin", "etc", "opt", "nix", "gnu", "snap", "proc", "dev", "sys",
        "System", "Library",
    ]
    /// Bytes after which a path may start in text.
    static let opens: Set<UInt8> = Set(" \t\n\r'\"`([{<=,;:".utf8)
    /// Bytes that end a path in text.
    static let closes: Set<UInt8> = Set(" \t\n\r'\"`)]}>,;:".utf8)
}

/// What a sink sends of a crash beyond what its backend needs to group and symbolicate it
/// (CrashReporter's `CrashDataPolicy`, less raw memory, which decides attachments): the record's
/// redaction, whose breadcrumbs, identity, paths, query and key/values settings apply to the
/// event or log record too, and whether the host's details (name, OS details, container) go.
/// The one value the Sentry envelope and the OTLP log record both take.
package struct RecordMinimisation: Sendable, Equatable {
    package var redaction: RecordRedaction
    package var hostDetails: Bool
    /// Frames named from the images' symbol tables on this machine.
    package var functionNames: Bool

    package init(redaction: RecordRedaction = RecordRedaction(), hostDetails: Bool = true, functionNames: Bool = true) {
        self.redaction = redaction
        self.hostDetails = hostDetails
        self.functionNames = functionNames
    }
}
