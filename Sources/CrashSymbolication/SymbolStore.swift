// SymbolStore.swift — debug information kept apart from shipped binaries: a directory keyed by
// build-id (the `.build-id/xx/rest.debug` layout gdb, lldb and elfutils read) and debuginfod servers.
import FoundationEssentials
import HTTPExchange
import ProcessSpawning
#if canImport(Glibc)
import Glibc
#endif

/// Paths taken apart as NSString did it: what symbolication needs of the paths it builds and of
/// those a record names.
enum PathText {
    /// The last component ("libc.so.6" of "/usr/lib/libc.so.6", "b" of "a/b/"); "/" for "/".
    static func lastComponent(_ path: String) -> String {
        let trimmed = withoutTrailingSlashes(path[...])
        guard trimmed != "/", let slash = trimmed.lastIndex(of: "/") else { return String(trimmed) }
        return String(trimmed[trimmed.index(after: slash)...])
    }

    /// All but the last component ("/usr/lib" of "/usr/lib/libc.so.6", "/" of "/swift", "" of "swift").
    static func directory(_ path: String) -> String {
        let trimmed = withoutTrailingSlashes(path[...])
        guard trimmed != "/", let slash = trimmed.lastIndex(of: "/") else { return trimmed == "/" ? "/" : "" }
        if slash == trimmed.startIndex { return "/" }
        return String(withoutTrailingSlashes(trimmed[..<slash]))
    }

    private static func withoutTrailingSlashes(_ path: Substring) -> Substring {
        var path = path
        while path.count > 1, path.hasSuffix("/") { path = path.dropLast() }
        return path
    }
}

/// A symbol store: a directory in the standard build-id layout.
package enum SymbolStore {
    /// Where a store keeps the debug file of `buildID`: `.build-id/xx/rest.debug`.
    package static func debugFilePath(in directory: String, buildID: [UInt8]) -> String {
        buildIDPath(in: directory, buildID: buildID) + ".debug"
    }

    /// `DIR/.build-id/xx/rest`: where the layout keeps the binary itself (its debug file adds `.debug`).
    package static func buildIDPath(in directory: String, buildID: [UInt8]) -> String {
        let hex = hexString(buildID)
        return "\(directory)/.build-id/\(hex.prefix(2))/\(hex.dropFirst(2))"
    }

    /// What ``add(binary:to:objcopy:)`` did.
    package enum Added: Equatable, Sendable {
        /// The debug file was written to `path`.
        case added(path: String)
        /// A valid debug file with the same build-id was already at `path`: nothing written.
        case alreadyPresent(path: String)
    }

    /// Why a binary could not be added.
    package struct Refusal: Error, CustomStringConvertible, Equatable {
        package let path: String
        package let reason: String
        package var description: String { "\(path): \(reason)" }
    }

    /// Files `binary`'s debug information under `directory/.build-id/xx/rest.debug`:
    /// `objcopy --only-keep-debug` of a binary, or a copy of a file that already is a separate
    /// debug file. The result is checked (same build-id, debug sections present) before it is
    /// renamed into place, so the store never holds a half-written or wrong file.
    /// - Throws: ``Refusal`` for a file that is not ELF, has no GNU build-id or no debug
    ///   sections, or when objcopy fails.
    package static func add(binary: String, to directory: String, objcopy: String? = nil) throws -> Added {
        let elf: ELFFile
        do { elf = try ELFFile(path: binary) } catch let error as ELFFile.Error {
            throw Refusal(path: binary, reason: error.reason)
        }
        guard !elf.buildID.isEmpty else {
            throw Refusal(path: binary, reason: "no GNU build-id (link with -Wl,--build-id); a symbol store is keyed by it")
        }
        guard elf.hasDebugInfo else {
            throw Refusal(path: binary, reason: "no debug sections (.debug_info): build with -g and add the binary before stripping it")
        }
        let destination = debugFilePath(in: directory, buildID: elf.buildID)
        if let existing = try? ELFFile(path: destination), existing.buildID == elf.buildID, existing.hasDebugInfo {
            return .alreadyPresent(path: destination)
        }
        let folder = PathText.directory(destination)
        do { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
            throw Refusal(path: binary, reason: "cannot create \(folder): \(Self.reason(error))")
        }
        let temporary = "\(folder)/.tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).debug"
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        if elf.isSeparateDebugFile {
            do { try FileManager.default.copyItem(atPath: binary, toPath: temporary) } catch {
                throw Refusal(path: binary, reason: "cannot copy to \(folder): \(Self.reason(error))")
            }
        } else {
            guard let tool = objcopy ?? findObjcopy() else {
                throw Refusal(path: binary, reason: "objcopy not found (install binutils, or llvm-objcopy on PATH)")
            }
            let errors = temporary + ".stderr"
            defer { try? FileManager.default.removeItem(atPath: errors) }
            let child: ChildProcess
            do { child = try ChildProcess.run(tool, ["--only-keep-debug", binary, temporary], stderr: errors, timeout: 600) } catch {
                throw Refusal(path: binary, reason: "\(error)")
            }
            guard child.ending == .exited(0) else {
                let text = String(decoding: FileManager.default.contents(atPath: errors) ?? Data(), as: UTF8.self)
                throw Refusal(path: binary, reason: "objcopy --only-keep-debug failed (\(child.ending)): \(text.prefix(500))")
            }
        }
        guard let written = try? ELFFile(path: temporary), written.buildID == elf.buildID, written.hasDebugInfo else {
            throw Refusal(path: binary, reason: "the debug file written for it lacks its build-id or debug sections")
        }
        guard rename(temporary, destination) == 0 else {
            throw Refusal(path: binary, reason: "cannot rename into \(destination): \(String(cString: strerror(errno)))")
        }
        return .added(path: destination)
    }

    /// Why a FileManager call failed, in a few words: the system's message for its errno
    /// (FoundationEssentials has no localized descriptions), else the error as it prints.
    static func reason(_ error: any Error) -> String {
        if let posix = (error as? CocoaError)?.userInfo["NSUnderlyingError"] as? POSIXError {
            return String(cString: strerror(posix.code.rawValue))
        }
        return "\(error)"
    }

    static func findObjcopy() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let directories = path.split(separator: ":").map(String.init) + ["/usr/bin", "/opt/swift/usr/bin"]
        for name in ["objcopy", "llvm-objcopy"] {
            if let found = directories.map({ "\($0)/\(name)" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
                return found
            }
        }
        return nil
    }
}

/// A debuginfod client, configured as elfutils' is: `DEBUGINFOD_URLS` (space-separated server
/// URLs, tried in order), `DEBUGINFOD_CACHE_PATH` (else `$XDG_CACHE_HOME/debuginfod_client`, else
/// `~/.cache/debuginfod_client`), `DEBUGINFOD_TIMEOUT` (seconds without progress, default 90).
///
/// The cache uses elfutils' layout, `<cache>/<build-id>/debuginfo`, so files fetched by
/// `debuginfod-find` or gdb are reused and the other way round. A fetched file is used (and
/// cached) only if it is ELF, carries the requested build-id and has debug sections; a cached
/// file is checked the same way before each use. Failures are not written to the cache (an
/// empty file there, elfutils' mark of a failed query, is ignored); a ``Symbolicator`` asks
/// once per build-id.
package struct DebuginfodClient: Sendable, Equatable {
    package var urls: [String]
    package var cacheDirectory: String
    package var timeout: Double

    package init(urls: [String], cacheDirectory: String, timeout: Double = 90) {
        self.urls = urls.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.cacheDirectory = cacheDirectory
        self.timeout = timeout
    }

    /// The client `environment` describes, or nil when `DEBUGINFOD_URLS` names no server.
    package static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> DebuginfodClient? {
        let urls = (environment["DEBUGINFOD_URLS"] ?? "").split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).map(String.init)
        guard !urls.isEmpty else { return nil }
        let cache: String
        if let path = environment["DEBUGINFOD_CACHE_PATH"], !path.isEmpty {
            cache = path
        } else if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty {
            cache = xdg + "/debuginfod_client"
        } else {
            cache = (environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path) + "/.cache/debuginfod_client"
        }
        let timeout = environment["DEBUGINFOD_TIMEOUT"].flatMap(Double.init).flatMap { $0 > 0 ? $0 : nil } ?? 90
        return DebuginfodClient(urls: urls, cacheDirectory: cache, timeout: timeout)
    }

    /// Why no debug file was obtained: one reason per server (and for a bad cached file).
    package struct Failure: Error, CustomStringConvertible, Equatable {
        package let reasons: [String]
        package var description: String { reasons.joined(separator: "; ") }
    }

    /// The path of a verified debug file for `buildID`: from the cache, or fetched from the
    /// first server that has one and cached.
    package func debugInfo(buildID: [UInt8]) -> Result<String, Failure> {
        var unresponsive: Set<String> = []
        return debugInfo(buildID: buildID, unresponsive: &unresponsive)
    }

    /// ``debugInfo(buildID:)`` across many build-ids: a server that timed out once is in
    /// `unresponsive` and is not asked again (a stalled server would otherwise cost the timeout
    /// for every image of every record).
    package func debugInfo(buildID: [UInt8], unresponsive: inout Set<String>) -> Result<String, Failure> {
        let hex = hexString(buildID)
        guard !hex.isEmpty else { return .failure(Failure(reasons: ["no build-id to ask debuginfod for"])) }
        let folder = "\(cacheDirectory)/\(hex)"
        let cached = folder + "/debuginfo"
        var reasons: [String] = []
        // An empty file is elfutils' record of a failed query: not ours to honour or report.
        var info = stat()
        if lstat(cached, &info) == 0, info.st_size > 0 {
            if let problem = Self.problem(with: cached, buildID: buildID) {
                reasons.append("cached \(cached) refused: \(problem)")
            } else {
                return .success(cached)
            }
        }
        for url in urls {
            let address = "\(url)/buildid/\(hex)/debuginfo"
            if unresponsive.contains(url) {
                reasons.append("\(url): not asked (it did not answer in time before)")
                continue
            }
            switch fetch(address) {
            case .failure(let reason):
                reasons.append("\(address): \(reason)")
                if reason.timedOut { unresponsive.insert(url) }
            case .success(let data):
                do { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
                    reasons.append("cannot create the cache directory \(folder)")
                    return .failure(Failure(reasons: reasons))
                }
                let temporary = "\(folder)/.debuginfo.tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
                defer { try? FileManager.default.removeItem(atPath: temporary) }
                guard FileManager.default.createFile(atPath: temporary, contents: data) else {
                    reasons.append("cannot write into the cache directory \(folder)")
                    return .failure(Failure(reasons: reasons))
                }
                if let problem = Self.problem(with: temporary, buildID: buildID) {
                    reasons.append("\(address) refused: \(problem)")
                    continue
                }
                guard rename(temporary, cached) == 0 else {
                    reasons.append("cannot rename into \(cached): \(String(cString: strerror(errno)))")
                    return .failure(Failure(reasons: reasons))
                }
                return .success(cached)
            }
        }
        return .failure(Failure(reasons: reasons))
    }

    /// Why `path` is not a usable debug file for `buildID`, or nil when it is.
    static func problem(with path: String, buildID: [UInt8]) -> String? {
        let elf: ELFFile
        do { elf = try ELFFile(path: path) } catch let error as ELFFile.Error {
            return error.reason
        } catch { return "\(error)" }
        if elf.buildID != buildID {
            return "its build-id is \(elf.buildID.isEmpty ? "none" : hexString(elf.buildID)), not \(hexString(buildID))"
        }
        if !elf.hasDebugInfo { return "no debug sections" }
        return nil
    }

    /// One GET, synchronously, with the timeout: the body on HTTP 200, else why not.
    func fetch(_ address: String) -> Result<Data, FetchError> {
        guard let url = HTTPExchange.Address(address) else {
            return .failure(FetchError(description: "not an http(s) URL"))
        }
        // `timeout` is without progress (elfutils' DEBUGINFOD_TIMEOUT); a debug file may take
        // long to download, so the whole exchange may take ten times that.
        var request = HTTPExchange.Request(url: url, headers: [("User-Agent", "crash-inspect")], timeout: .seconds(timeout),
                                           totalTimeout: .seconds(timeout * 10))
        // Debug information of a large program runs to hundreds of MiB; a file this size is not.
        request.maxBodyBytes = 4 << 30
        let answer = HTTPExchange.send(request)
        if answer.status == 0 {
            return .failure(FetchError(description: answer.timedOut ? "timed out after \(timeout) s" : answer.text, timedOut: answer.timedOut))
        }
        guard answer.status == 200 else { return .failure(FetchError(description: "HTTP \(answer.status)")) }
        return .success(Data(answer.body))
    }

    struct FetchError: Error, CustomStringConvertible {
        let description: String
        var timedOut = false
    }
}
