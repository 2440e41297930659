// Symbolicator.swift — addresses from a crash record to function, file, line and column, offline, by build-id.
package import CrashRecordFormat
// The frames and the images' own symbol tables, which the reporter's sinks use without this
// module's llvm-symbolizer, debuginfod and symbol store (and without their Foundation).
@_exported import CrashFrames
import FoundationEssentials
import ProcessSpawning
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Turns recorded addresses into names with the toolchain's `llvm-symbolizer`.
///
/// Why llvm-symbolizer rather than a home-made DWARF reader: it already understands DWARF 5,
/// split debug info, inlined subroutines and (in the Swift toolchain's build) Swift
/// demangling, and it is on every machine that has the toolchain. It never sees a binary
/// whose build-id differs from the record's: such frames say so instead of showing a name.
// @unchecked: the resolution cache and the llvm-symbolizer server are guarded by `lock`.
package final class Symbolicator: @unchecked Sendable {
    /// Path of the llvm-symbolizer used.
    package let symbolizerPath: String
    private let searchDirectories: [String]
    private var resolved: [String: Resolution] = [:]
    private let lock = Mutex(())
    private var server: SymbolizerServer?
    private var serverFailed = false
    private let debuginfod: DebuginfodClient?
    private var flatIndexes: [String: [[UInt8]: [String]]] = [:]
    private var debuginfodAnswers: [[UInt8]: Result<String, DebuginfodClient.Failure>] = [:]
    private var debuginfodUnresponsive: Set<String> = []

    enum Resolution { case file(path: String, bias: UInt64, note: String?), problem(String) }

    /// What went wrong finding the tool.
    package struct Error: Swift.Error, CustomStringConvertible {
        package let description: String
    }

    /// - Parameters:
    ///   - symbolizer: explicit path of llvm-symbolizer; by default found on PATH or next to `swift`.
    ///   - symbolDirectories: symbol stores searched by build-id: the `.build-id/xx/rest.debug`
    ///     and `.build-id/xx/rest` layout, `<dir>/<hex>`, `<dir>/<basename>`, and any file of the
    ///     directory whose build-id matches.
    ///   - debuginfod: servers asked for debug information not found locally; by default the
    ///     ones `DEBUGINFOD_URLS` names (``DebuginfodClient/fromEnvironment(_:)``).
    /// - Throws: ``Symbolicator/Error`` when no llvm-symbolizer can be found.
    package init(symbolizer: String? = nil, symbolDirectories: [String] = [],
                debuginfod: DebuginfodClient? = DebuginfodClient.fromEnvironment()) throws {
        guard let path = symbolizer ?? Self.findSymbolizer() else {
            throw Error(description: "llvm-symbolizer not found (install the Swift toolchain or put it on PATH)")
        }
        self.symbolizerPath = path
        self.searchDirectories = symbolDirectories
        self.debuginfod = debuginfod
    }

    /// llvm-symbolizer's environment: ours without `DEBUGINFOD_URLS`.
    static var symbolizerEnvironment: [String: String] {
        ProcessInfo.processInfo.environment.filter { $0.key != "DEBUGINFOD_URLS" }
    }

    static func findSymbolizer() -> String? {
        var candidates: [String] = []
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            candidates.append("\(dir)/llvm-symbolizer")
            let swift = "\(dir)/swift"
            if FileManager.default.isExecutableFile(atPath: swift) {
                let real = (try? FileManager.default.destinationOfSymbolicLink(atPath: swift)) ?? swift
                let toolDir = real.hasPrefix("/") ? PathText.directory(real) : String(dir)
                candidates.append("\(toolDir)/llvm-symbolizer")
            }
        }
        candidates.append("/opt/swift/usr/bin/llvm-symbolizer")
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Symbolicates a thread's frames. `firstIsExact` says frame 0 is a precise pc (from a signal
    /// context); other frames are return addresses and are looked up one byte earlier, so the
    /// line is the call's, not the next statement's.
    package func symbolicate(frames: [UInt64], firstIsExact: Bool, images: [CrashImage]) -> [[SymbolicatedFrame]] {
        symbolicate(addresses: frames, exact: frames.indices.map { $0 == 0 && firstIsExact }, images: images)
    }

    /// Symbolicates addresses one by one: an `exact` one is looked up as is (a pc, an async
    /// resume point), any other one byte earlier (a return address: the call before it).
    package func symbolicate(addresses frames: [UInt64], exact: [Bool], images: [CrashImage]) -> [[SymbolicatedFrame]] {
        var result: [[SymbolicatedFrame]] = frames.map { [SymbolicatedFrame(address: $0, inlined: false)] }
        var byImage: [Int: [(index: Int, lookup: UInt64)]] = [:]
        for (index, address) in frames.enumerated() {
            guard let imageIndex = images.firstIndex(where: { $0.contains(address) }) else {
                result[index][0].problem = "not in any loaded image"
                continue
            }
            result[index][0].image = images[imageIndex].path
            let lookup = (index < exact.count && exact[index]) || address == 0 ? address : address - 1
            byImage[imageIndex, default: []].append((index, lookup))
        }
        for (imageIndex, entries) in byImage {
            let image = images[imageIndex]
            switch resolve(image) {
            case .problem(let reason):
                for entry in entries {
                    result[entry.index][0].problem = reason
                    result[entry.index][0].imageOffset = entry.lookup &- image.base
                }
            case .file(let path, let bias, let note):
                let offsets = entries.map { $0.lookup &- bias }
                let answers = run(object: path, offsets: offsets)
                for (position, entry) in entries.enumerated() {
                    let address = frames[entry.index]
                    var symbolicated = position < answers.count ? answers[position] : []
                    if symbolicated.isEmpty {
                        result[entry.index][0].imageOffset = offsets[position]
                        result[entry.index][0].problem = note ?? "no symbol"
                        continue
                    }
                    for i in symbolicated.indices {
                        symbolicated[i].address = address
                        symbolicated[i].image = image.path
                        symbolicated[i].imageOffset = offsets[position]
                        symbolicated[i].inlined = i < symbolicated.count - 1
                    }
                    result[entry.index] = symbolicated
                }
            }
        }
        return result
    }

    /// Finds a file whose build-id matches the image's; never one that differs.
    func resolve(_ image: CrashImage) -> Resolution {
        let key = "\(image.path)|\(image.buildIDHex)|\(image.base)"
        return lock.withLock { _ in
            if let known = resolved[key] { return known }
            let answer = findFile(for: image)
            resolved[key] = answer
            return answer
        }
    }

    /// Looks for the image's debug information wherever it may be, in this order: the recorded
    /// path; in each symbol directory `.build-id/xx/rest.debug`, `.build-id/xx/rest` (the
    /// executable itself), `<hex>`, `<hex>.debug`, the image's file name (and `.debug`), then
    /// any file of the directory whose build-id matches (a flat directory); then the debuginfod
    /// servers. A file whose build-id differs is never used; the first matching file with debug
    /// sections wins; a matching file without them (a stripped binary) is used only when no
    /// debug information is found anywhere, and its frames then say why they have no name.
    private func findFile(for image: CrashImage) -> Resolution {
        var candidates = [image.path]
        let hex = image.buildIDHex
        let name = PathText.lastComponent(image.path)
        for dir in searchDirectories {
            if hex.count > 2 {
                candidates.append(SymbolStore.debugFilePath(in: dir, buildID: image.buildID))
                candidates.append(SymbolStore.buildIDPath(in: dir, buildID: image.buildID))
                candidates.append("\(dir)/\(hex)")
                candidates.append("\(dir)/\(hex).debug")
            }
            if !name.isEmpty {
                candidates.append("\(dir)/\(name)")
                candidates.append("\(dir)/\(name).debug")
            }
        }
        if !image.buildID.isEmpty {
            for dir in searchDirectories { candidates += flatIndex(dir)[image.buildID] ?? [] }
        }
        var firstProblem: String?
        var withoutDebugInfo: (path: String, elf: ELFFile)?
        var seen = Set<String>()
        for candidate in candidates where seen.insert(candidate).inserted && FileManager.default.fileExists(atPath: candidate) {
            guard let elf = try? ELFFile(path: candidate) else {
                firstProblem = firstProblem ?? "\(candidate) is not a readable ELF file"
                continue
            }
            guard image.buildID.isEmpty || elf.buildID == image.buildID else {
                firstProblem = firstProblem
                    ?? "build-id differs: record has \(hex), \(candidate) has \(hexString(elf.buildID).isEmpty ? "none" : hexString(elf.buildID))"
                continue
            }
            // The image's load bias: where it was mapped minus where it asked to be.
            if elf.hasDebugInfo { return .file(path: candidate, bias: image.base &- elf.firstLoadAddress, note: nil) }
            if withoutDebugInfo == nil { withoutDebugInfo = (candidate, elf) }
        }
        var debuginfodFailure: String?
        if let debuginfod, !image.buildID.isEmpty {
            let answer = debuginfodAnswers[image.buildID] ?? debuginfod.debugInfo(buildID: image.buildID, unresponsive: &debuginfodUnresponsive)
            debuginfodAnswers[image.buildID] = answer
            switch answer {
            case .success(let path):
                if let elf = try? ELFFile(path: path) {
                    return .file(path: path, bias: image.base &- elf.firstLoadAddress, note: nil)
                }
                debuginfodFailure = "\(path) vanished from the debuginfod cache"
            case .failure(let failure):
                debuginfodFailure = failure.description
            }
        }
        let elsewhere = "no debug file with build-id \(hex) in " + (searchDirectories.isEmpty ? "any --symbols directory (none given)" : searchDirectories.joined(separator: ", "))
            + (debuginfodFailure.map { "; debuginfod: \($0)" } ?? (debuginfod == nil ? "; DEBUGINFOD_URLS not set" : ""))
        if let stripped = withoutDebugInfo {
            return .file(path: stripped.path, bias: image.base &- stripped.elf.firstLoadAddress,
                         note: "no symbol: \(stripped.path) has no debug information and \(elsewhere)")
        }
        if let firstProblem {
            return .problem(firstProblem + (debuginfodFailure.map { "; debuginfod: \($0)" } ?? ""))
        }
        return .problem("no binary with build-id \(hex.isEmpty ? "(none recorded)" : hex) found"
            + (debuginfodFailure.map { "; debuginfod: \($0)" } ?? ""))
    }

    /// Every regular file directly in `directory`, by build-id (read once per Symbolicator).
    private func flatIndex(_ directory: String) -> [[UInt8]: [String]] {
        if let known = flatIndexes[directory] { return known }
        var index: [[UInt8]: [String]] = [:]
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        for name in names where !name.hasPrefix(".") {
            let path = directory + "/" + name
            var isDirectory = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory,
                  let elf = try? ELFFile(path: path), !elf.buildID.isEmpty else { continue }
            index[elf.buildID, default: []].append(path)
        }
        flatIndexes[directory] = index
        return index
    }

    /// Asks llvm-symbolizer about offsets in one object: through the long-lived process (which
    /// keeps each object's debug info loaded between records), or one run per call if that fails.
    private func run(object: String, offsets: [UInt64]) -> [[SymbolicatedFrame]] {
        let answers: [String]? = lock.withLock { _ in
            if server == nil && !serverFailed {
                server = SymbolizerServer(symbolizer: symbolizerPath, extraArguments: debugFileArguments)
                serverFailed = server == nil
            }
            let answers = server?.query(object: object, offsets: offsets)
            if answers == nil, server != nil {
                server = nil
                serverFailed = true
            }
            return answers
        }
        if let answers { return answers.map(Self.frames(fromJSONLine:)) }
        return runOnce(object: object, offsets: offsets)
    }

    /// One llvm-symbolizer run for many offsets in one object; JSON output, inlined frames on.
    private func runOnce(object: String, offsets: [UInt64]) -> [[SymbolicatedFrame]] {
        let output = FileManager.default.temporaryDirectory
            .appendingPathComponent("symbolizer-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).json").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let arguments = ["--obj=\(object)", "--output-style=JSON", "--inlines", "--demangle", "--relativenames"] + debugFileArguments
            + offsets.map { "0x" + String($0, radix: 16) }
        guard let child = try? ChildProcess.run(symbolizerPath, arguments, environment: Self.symbolizerEnvironment, stdout: output, timeout: 120),
              child.ending == .exited(0),
              let data = FileManager.default.contents(atPath: output),
              let answers = try? JSONDecoder().decode([SymbolizerAnswer].self, from: data) else { return [] }
        return answers.map(Self.frames(from:))
    }

    /// A binary found at the recorded path may be stripped while its debug file sits in a
    /// symbol directory under `.build-id/xx/rest.debug`: llvm-symbolizer follows the build-id
    /// there itself when told where to look.
    private var debugFileArguments: [String] { searchDirectories.map { "--debug-file-directory=\($0)" } }

    static func frames(fromJSONLine line: String) -> [SymbolicatedFrame] {
        guard let answer = try? JSONDecoder().decode(SymbolizerAnswer.self, from: Data(line.utf8)) else { return [] }
        return frames(from: answer)
    }

    static func frames(from answer: SymbolizerAnswer) -> [SymbolicatedFrame] {
        answer.symbols.compactMap { symbol -> SymbolicatedFrame? in
            let name = SwiftDemangler.demangle(symbol.functionName)
            if name.isEmpty || name == "??" { return nil }
            return SymbolicatedFrame(
                address: 0, symbol: name, file: symbol.fileName.isEmpty ? nil : symbol.fileName,
                line: symbol.line > 0 ? symbol.line : nil, column: symbol.column > 0 ? symbol.column : nil,
                mangledSymbol: symbol.functionName)
        }
    }
}

/// llvm-symbolizer's JSON answer for one address (`--output-style=JSON`): its symbols, the
/// innermost inlined one first. Read leniently: a field that is missing or of another type is
/// empty (or 0), and so are the symbols when they are not a list of objects.
struct SymbolizerAnswer: Decodable {
    var symbols: [Symbol]

    struct Symbol: Decodable {
        var functionName: String
        var fileName: String
        var line: Int
        var column: Int

        private enum CodingKeys: String, CodingKey { case functionName = "FunctionName", fileName = "FileName", line = "Line", column = "Column" }

        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: CodingKeys.self)
            functionName = (try? fields.decode(String.self, forKey: .functionName)) ?? ""
            fileName = (try? fields.decode(String.self, forKey: .fileName)) ?? ""
            line = (try? fields.decode(Int.self, forKey: .line)) ?? 0
            column = (try? fields.decode(Int.self, forKey: .column)) ?? 0
        }
    }

    private enum CodingKeys: String, CodingKey { case symbols = "Symbol" }

    init(from decoder: any Decoder) throws {
        symbols = (try? decoder.container(keyedBy: CodingKeys.self).decode([Symbol].self, forKey: .symbols)) ?? []
    }
}

/// A long-lived `llvm-symbolizer` reading `"object" 0xoffset` lines on stdin and answering one
/// JSON line each: debug info is parsed once per object, not once per record.
final class SymbolizerServer {
    private let child: ChildProcess.Conversation

    init?(symbolizer: String, extraArguments: [String] = []) {
        // Without DEBUGINFOD_URLS: the toolchain's llvm-symbolizer would otherwise fetch debug
        // files itself, past the Symbolicator's build-id checks (it has decided already).
        guard let child = try? ChildProcess.Conversation(
            symbolizer, ["--output-style=JSON", "--inlines", "--demangle", "--relativenames"] + extraArguments,
            environment: Symbolicator.symbolizerEnvironment) else { return nil }
        self.child = child
    }

    /// One JSON line per offset, or nil if the process is gone or answers nonsense.
    func query(object: String, offsets: [UInt64]) -> [String]? {
        guard !object.contains("\""), !object.contains("\n") else { return nil }
        var lines: [String] = []
        for offset in offsets {
            guard child.send("\"\(object)\" 0x\(String(offset, radix: 16))"), let line = child.readLine() else { return nil }
            lines.append(line)
        }
        return lines
    }
}

extension Symbolicator {
    /// The thread's frames as Swift's backtracer shows them (``ThreadFrames/resolve(_:isAsyncFunction:)``),
    /// symbolicated: async functions are told by the names the symbolizer gives.
    package func threadFrames(of thread: CrashThread, images: [CrashImage]) -> [ThreadFrame] {
        var known: [UInt64: [SymbolicatedFrame]] = [:]
        func names(_ lookups: [UInt64]) -> [[SymbolicatedFrame]] {
            let missing = Array(Set(lookups.filter { known[$0] == nil }))
            for (address, symbols) in zip(missing, symbolicate(addresses: missing, exact: missing.map { _ in true }, images: images)) {
                known[address] = symbols
            }
            return lookups.map { known[$0] ?? [] }
        }
        var frames = ThreadFrames.resolve(thread) { lookups in names(lookups).map(Self.isAsync) }
        let symbols = names(frames.map(\.lookupAddress))
        for index in frames.indices {
            // The names were looked up at the lookup address; the frame keeps its own.
            frames[index].symbols = symbols[index].map { var s = $0; s.address = frames[index].address; return s }
        }
        return frames
    }

    static func isAsync(_ symbols: [SymbolicatedFrame]) -> Bool {
        guard let outer = symbols.last, let mangled = outer.mangledSymbol else { return false }
        return SwiftAsyncSymbol.isAsyncFunction(mangledName: mangled)
    }
}
