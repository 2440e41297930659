// SymbolStoreTests.swift — stripped builds of the harness symbolicated from a symbol store made by
// `crash-inspect symbols add`: local (--symbols), served by Debian's debuginfod (which answers 404
// for what it lacks), and by TestHTTPServer answering garbage, the wrong file or nothing. The truth:
// the unstripped build's record, readelf, debuginfod-find, and the bytes the stores hold.
import CrashSymbolication
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class SymbolStoreTests: XCTestCase {
    struct Output {
        let ending: ChildProcess.Ending
        let stdout: String
        let stderr: String
        var json: Any? { try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
    }

    /// crash-inspect with `arguments`; `environment` replaces DEBUGINFOD_* (none unless given).
    func inspect(_ arguments: [String], environment extra: [String: String] = [:]) throws -> Output {
        let base = try Scratch.directory("store-out")
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("DEBUGINFOD_") }
        environment["DEBUGINFOD_CACHE_PATH"] = base + "/unused-cache"
        environment.merge(extra) { $1 }
        let child = try ChildProcess.run(BuiltProducts.inspect, arguments, environment: environment,
                                         stdout: base + "/stdout", stderr: base + "/stderr", timeout: 300)
        return Output(ending: child.ending,
                      stdout: (try? String(contentsOfFile: base + "/stdout", encoding: .utf8)) ?? "",
                      stderr: (try? String(contentsOfFile: base + "/stderr", encoding: .utf8)) ?? "")
    }

    /// Crashes `scenario` with `harness` into a new directory; returns the record's path.
    func crash(_ scenario: String, harness: String) throws -> String {
        let directory = try Scratch.directory("store-records")
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let child = try ChildProcess.run(harness, ["run", scenario, "--dir", directory], environment: environment, timeout: 60)
        guard case .signaled = child.ending else { throw Tools.Failure(description: "\(scenario) ended \(child.ending)") }
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
        XCTAssertEqual(files.count, 1)
        return directory + "/" + (files.first ?? "")
    }

    /// readelf -n: the build-id.
    func readelfBuildID(_ path: String) throws -> String {
        let text = try Tools.output(try XCTUnwrap(Tools.find("readelf")), ["-n", "-W", path])
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.contains("Build ID:") }, "readelf -n \(path)")
        return String(try XCTUnwrap(line.components(separatedBy: "Build ID:").last).trimmingCharacters(in: .whitespaces))
    }

    /// readelf -S: section name → type.
    func readelfSections(_ path: String) throws -> [String: String] {
        let text = try Tools.output(try XCTUnwrap(Tools.find("readelf")), ["-S", "-W", path])
        var result: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let close = line.firstIndex(of: "]") else { continue }
            let fields = line[line.index(after: close)...].split(separator: " ")
            if fields.count >= 2 { result[String(fields[0])] = String(fields[1]) }
        }
        return result
    }

    /// One source-level frame reduced to what must agree.
    struct Frame: Equatable, CustomStringConvertible {
        var function: String?
        var file: String?
        var line: Int?
        var description: String { "\(function ?? "??") \(file ?? "??"):\(line.map(String.init) ?? "?")" }
    }

    /// The crashed thread's frames that fall in `image`, by frame index, innermost first; and
    /// every frame's `problem`.
    func crashedFrames(_ output: Output, image: String) throws -> (frames: [Int: [Frame]], problems: [String?]) {
        XCTAssertEqual(output.ending, .exited(0), output.stderr)
        let object = try XCTUnwrap(output.json as? [String: Any], output.stdout)
        let threads = try XCTUnwrap(object["threads"] as? [[String: Any]])
        let crashed = try XCTUnwrap(threads.first { $0["crashed"] as? Bool == true })
        var result: [Int: [Frame]] = [:]
        var problems: [String?] = []
        for frame in try XCTUnwrap(crashed["frames"] as? [[String: Any]]) where frame["image"] as? String == image {
            let index = try XCTUnwrap(frame["index"] as? Int)
            result[index, default: []].append(Frame(function: frame["symbol"] as? String,
                                                    file: (frame["file"] as? String).map { ($0 as NSString).lastPathComponent },
                                                    line: frame["line"] as? Int))
            problems.append(frame["problem"] as? String)
        }
        return (result, problems)
    }

    /// A store made by `symbols add` from the unstripped harness, a stripped copy, and the
    /// unstripped harness's frames for `scenario` (the truth the stripped copy must match).
    struct Setup {
        let store: String
        let stripped: String
        let buildID: String
        let truth: [Int: [Frame]]
    }

    func setUpStore(_ scenario: String = "null-dereference") throws -> Setup {
        let harness = BuiltProducts.harness
        let store = try Scratch.directory("store")
        let added = try inspect(["symbols", "add", harness, "--to", store])
        XCTAssertEqual(added.ending, .exited(0), added.stderr)
        let buildID = try readelfBuildID(harness)
        let stripped = try Scratch.directory("stripped") + "/crash-harness"
        _ = try Tools.output(try XCTUnwrap(Tools.find("strip")), ["-o", stripped, harness])
        XCTAssertNil(try readelfSections(stripped)[".debug_info"], "strip really removed the debug info")
        XCTAssertNil(try readelfSections(stripped)[".symtab"], "and the symbol table")
        XCTAssertEqual(try readelfBuildID(stripped), buildID)
        let record = try crash(scenario, harness: harness)
        let truth = try crashedFrames(try inspect(["show", record, "--json"]), image: harness).frames
        XCTAssertGreaterThan(truth.count, 8, "the unstripped run has frames in the harness")
        XCTAssertTrue(truth.values.allSatisfy { $0.allSatisfy { $0.function != nil } }, "\(truth)")
        return Setup(store: store, stripped: stripped, buildID: buildID, truth: truth)
    }

    func assertSameFrames(_ frames: [Int: [Frame]], _ truth: [Int: [Frame]], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(frames.keys.sorted(), truth.keys.sorted(), file: file, line: line)
        for index in truth.keys.sorted() {
            XCTAssertEqual(frames[index], truth[index], "frame \(index)", file: file, line: line)
        }
    }

    // MARK: a local store

    func testAStrippedHarnessIsNamedFromTheStoreExactlyAsTheUnstrippedOne() throws {
        let setup = try setUpStore()
        // The stripped copy is still at its recorded path, with the same build-id: it must not
        // win over the store's debug file.
        let record = try crash("null-dereference", harness: setup.stripped)
        let fromStore = try crashedFrames(try inspect(["show", record, "--json", "--symbols", setup.store]), image: setup.stripped)
        assertSameFrames(fromStore.frames, setup.truth)
        XCTAssertTrue(fromStore.frames.values.joined().contains { $0.function?.contains("CrashScenarios.level3(") == true })
        XCTAssertTrue(fromStore.problems.allSatisfy { $0 == nil }, "\(fromStore.problems)")
        // The same store given as a flat directory: the debug file under another name.
        let flat = try Scratch.directory("flat")
        try FileManager.default.copyItem(atPath: SymbolStore.debugFilePath(in: setup.store, buildID: try ELFFile(path: setup.stripped).buildID),
                                         toPath: flat + "/anything-at-all")
        let fromFlat = try crashedFrames(try inspect(["show", record, "--json", "--symbols", try Scratch.directory("empty"), "--symbols", flat]),
                                         image: setup.stripped)
        assertSameFrames(fromFlat.frames, setup.truth)
        // Without the store: no names, and each frame says why.
        let bare = try crashedFrames(try inspect(["show", record, "--json"]), image: setup.stripped)
        XCTAssertEqual(bare.frames.keys.sorted(), setup.truth.keys.sorted())
        XCTAssertTrue(bare.frames.values.allSatisfy { $0 == [Frame(function: nil, file: nil, line: nil)] }, "\(bare.frames)")
        for problem in bare.problems {
            XCTAssertEqual(problem, "no symbol: \(setup.stripped) has no debug information and no debug file with build-id \(setup.buildID) "
                           + "in any --symbols directory (none given); DEBUGINFOD_URLS not set")
        }
        // The text rendering names the level chain from the store too: short names by default,
        // full ones with --all-frames.
        let text = try inspect(["show", record, "--symbols", setup.store]).stdout
        XCTAssertTrue(text.contains(" level3(_:)"), text)
        let full = try inspect(["show", record, "--symbols", setup.store, "--all-frames"]).stdout
        XCTAssertTrue(full.contains("CrashScenarios.level3("), full)
    }

    func testAFatalErrorOfTheStrippedHarnessIsNamedFromTheStoreToo() throws {
        let setup = try setUpStore("fatal-error")
        let record = try crash("fatal-error", harness: setup.stripped)
        assertSameFrames(try crashedFrames(try inspect(["show", record, "--json", "--symbols", setup.store]), image: setup.stripped).frames,
                         setup.truth)
    }

    // MARK: debuginfod

    /// Debian's debuginfod serving `directory` on 127.0.0.1:port, killed (with its process group)
    /// by `stop()`; `timeout -s KILL` bounds its life even if the test process dies first.
    final class DebuginfodServer {
        let port: UInt16
        let running: ChildProcess.Running
        let log: String
        var url: String { "http://127.0.0.1:\(port)" }

        init(serving directory: String) throws {
            guard let debuginfod = Tools.find("debuginfod"), let timeout = Tools.find("timeout") else {
                throw Tools.Failure(description: "debuginfod (Debian package debuginfod) or timeout not installed")
            }
            let scratch = try Scratch.directory("debuginfod")
            port = try TestHTTPServer.unusedPort()
            log = scratch + "/log"
            running = try ChildProcess.start(timeout, ["-s", "KILL", "300", debuginfod, "-F", directory, "-p", String(port),
                                                       "-d", scratch + "/db.sqlite", "-t", "0", "-g", "0"],
                                             stdout: scratch + "/stdout", stderr: log, ownProcessGroup: true)
        }

        /// Waits until debuginfod-find (elfutils' client) fetches `buildID` from it; returns the file.
        func waitUntilServing(_ buildID: String) throws -> String {
            let find = try XCTUnwrap(Tools.find("debuginfod-find"), "elfutils' debuginfod-find")
            let deadline = Date().addingTimeInterval(60)
            var last = ""
            while Date() < deadline {
                let base = try Scratch.directory("find")
                // A fresh cache each time: elfutils caches a 404 (an empty file) and would not ask again.
                let cache = base + "/cache"
                var environment = ProcessInfo.processInfo.environment
                environment["DEBUGINFOD_URLS"] = url
                environment["DEBUGINFOD_CACHE_PATH"] = cache
                let child = try ChildProcess.run(find, ["debuginfo", buildID], environment: environment,
                                                 stdout: base + "/out", stderr: base + "/err", timeout: 30)
                let out = (try? String(contentsOfFile: base + "/out", encoding: .utf8)) ?? ""
                if child.ending == .exited(0) { return out.trimmingCharacters(in: .whitespacesAndNewlines) }
                last = (try? String(contentsOfFile: base + "/err", encoding: .utf8)) ?? ""
                usleep(200_000)
            }
            throw Tools.Failure(description: "debuginfod never served \(buildID): \(last)\n\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }

        /// Kills the server's process group; returns what was still running after it (nothing).
        func stop() -> [ChildProcess.Leftover] {
            kill(-running.pid, SIGKILL)
            let ended = running.wait(timeout: 10)
            return ended.leftRunning + ChildProcess.survivors(group: running.pid, token: nil)
        }
    }

    /// A copy of `binary` whose build-id note has its last byte flipped: it runs as before and
    /// records a build-id no store has.
    func withOtherBuildID(_ binary: String) throws -> (path: String, buildID: String) {
        let original = try ELFFile(path: binary).buildID
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: binary)))
        var patched = 0
        var index = 0
        while index + original.count <= bytes.count {
            if bytes[index] == original[0], Array(bytes[index..<index + original.count]) == original {
                bytes[index + original.count - 1] ^= 0xFF
                patched += 1
            }
            index += 1
        }
        XCTAssertEqual(patched, 1, "the build-id appears once, in its note")
        let path = try Scratch.directory("other-id") + "/crash-harness"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o755]))
        let buildID = try readelfBuildID(path)
        XCTAssertNotEqual(buildID, hexString(original))
        return (path, buildID)
    }

    func testTheStoreServedByDebuginfodNamesTheStrippedHarnessWithNoLocalSymbols() throws {
        let setup = try setUpStore()
        let server = try DebuginfodServer(serving: setup.store)
        var stopped = false
        defer { if !stopped { _ = server.stop() } }
        let fetched = try server.waitUntilServing(setup.buildID)
        let stored = SymbolStore.debugFilePath(in: setup.store, buildID: try ELFFile(path: setup.stripped).buildID)
        XCTAssertEqual(FileManager.default.contents(atPath: fetched), FileManager.default.contents(atPath: stored),
                       "debuginfod serves the file symbols add filed")

        let record = try crash("null-dereference", harness: setup.stripped)
        let cache = try Scratch.directory("client-cache")
        let environment = ["DEBUGINFOD_URLS": server.url, "DEBUGINFOD_CACHE_PATH": cache]
        let named = try crashedFrames(try inspect(["show", record, "--json"], environment: environment), image: setup.stripped)
        assertSameFrames(named.frames, setup.truth)
        XCTAssertTrue(named.problems.allSatisfy { $0 == nil }, "\(named.problems)")
        // Cached where elfutils caches it, byte for byte what the server has.
        let cached = "\(cache)/\(setup.buildID)/debuginfo"
        XCTAssertEqual(FileManager.default.contents(atPath: cached), FileManager.default.contents(atPath: stored))
        let served = try String(contentsOfFile: server.log, encoding: .utf8)
        XCTAssertTrue(served.contains("GET /buildid/\(setup.buildID)/debuginfo 200"), served)

        // export --sentry reads the same way (the envelope carries the names).
        let envelopeFile = try Scratch.directory("envelope") + "/envelope"
        let envelope = try inspect(["export", "--sentry", record, "-o", envelopeFile], environment: environment)
        XCTAssertEqual(envelope.ending, .exited(0), envelope.stderr)
        // The envelope holds the raw record (binary): search its bytes.
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: envelopeFile))
        // The short name as `function`, the full one as `raw_function`.
        XCTAssertNotNil(bytes.range(of: Data("\"function\":\"level3(_:)\"".utf8)), "names in the envelope")
        XCTAssertNotNil(bytes.range(of: Data("\"raw_function\":\"CrashScenarios.level3(".utf8)), "full names in the envelope")

        // A build-id the server does not have: 404, said in each frame.
        let other = try withOtherBuildID(setup.stripped)
        let otherRecord = try crash("null-dereference", harness: other.path)
        let missing = try crashedFrames(try inspect(["show", otherRecord, "--json"], environment: environment), image: other.path)
        XCTAssertTrue(missing.frames.values.allSatisfy { $0 == [Frame(function: nil, file: nil, line: nil)] }, "\(missing.frames)")
        XCTAssertFalse(missing.problems.isEmpty)
        for problem in missing.problems {
            XCTAssertEqual(problem, "no symbol: \(other.path) has no debug information and no debug file with build-id \(other.buildID) "
                           + "in any --symbols directory (none given); debuginfod: \(server.url)/buildid/\(other.buildID)/debuginfo: HTTP 404")
        }
        XCTAssertTrue(try String(contentsOfFile: server.log, encoding: .utf8).contains("GET /buildid/\(other.buildID)/debuginfo 404"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(cache)/\(other.buildID)/debuginfo"), "a 404 caches nothing")

        stopped = true
        XCTAssertEqual(server.stop(), [], "nothing of debuginfod is left running")
        XCTAssertNotEqual(kill(server.running.pid, 0), 0, "the server is gone")
        // Once cached, the server is no longer needed.
        let offline = try crashedFrames(try inspect(["show", record, "--json"], environment: environment), image: setup.stripped)
        assertSameFrames(offline.frames, setup.truth)
    }

    func testServersThatAnswerGarbageOrTheWrongFileAreRefused() throws {
        let setup = try setUpStore()
        let other = try withOtherBuildID(setup.stripped)
        let record = try crash("null-dereference", harness: other.path)
        let debugFile = SymbolStore.debugFilePath(in: setup.store, buildID: try ELFFile(path: setup.stripped).buildID)
        let wrongFile = try XCTUnwrap(FileManager.default.contents(atPath: debugFile))
        let garbage = Data("this is not an ELF file\n".utf8)
        // Every GET answered 200 with the same body, whatever it asks for.
        let garbageServer = try TestHTTPServer { _ in .status(200, body: [UInt8](garbage)) }
        let wrongServer = try TestHTTPServer { _ in .status(200, body: [UInt8](wrongFile)) }
        defer { garbageServer.stop(); wrongServer.stop() }
        let cache = try Scratch.directory("refused-cache")
        let environment = ["DEBUGINFOD_URLS": "\(garbageServer.origin) \(wrongServer.origin)", "DEBUGINFOD_CACHE_PATH": cache]
        let output = try inspect(["show", record, "--json"], environment: environment)
        let refused = try crashedFrames(output, image: other.path)
        XCTAssertFalse(refused.frames.isEmpty)
        XCTAssertTrue(refused.frames.values.allSatisfy { $0 == [Frame(function: nil, file: nil, line: nil)] },
                      "no name from a refused file: \(refused.frames)")
        let path = "/buildid/\(other.buildID)/debuginfo"
        for problem in refused.problems {
            XCTAssertEqual(problem, "no symbol: \(other.path) has no debug information and no debug file with build-id \(other.buildID) "
                           + "in any --symbols directory (none given); debuginfod: \(garbageServer.origin)\(path) refused: not an ELF file; "
                           + "\(wrongServer.origin)\(path) refused: its build-id is \(setup.buildID), not \(other.buildID)")
        }
        // Both were asked for the record's build-id (the other paths are the record's other
        // images). Not "exactly once": libcurl may resend a request on a new connection after the
        // server closed the previous one.
        let garbagePaths = garbageServer.allRequests.map(\.path), wrongPaths = wrongServer.allRequests.map(\.path)
        XCTAssertTrue(garbagePaths.contains(path), "\(garbagePaths)")
        XCTAssertTrue(wrongPaths.contains(path), "\(wrongPaths)")
        XCTAssertEqual(Set((garbageServer.allRequests + wrongServer.allRequests).map(\.method)), ["GET"])
        XCTAssertEqual(try FileManager.default.subpathsOfDirectory(atPath: cache).filter { $0.hasSuffix("debuginfo") || $0.contains("tmp") }, [],
                       "nothing refused is cached")
        // The text rendering says so too, and the process did not crash.
        let text = try inspect(["show", record], environment: environment)
        XCTAssertEqual(text.ending, .exited(0), text.stderr)
        XCTAssertTrue(text.stdout.contains("[no symbol"), text.stdout)
    }

    func testAServerThatNeverAnswersTimesOutAsDEBUGINFOD_TIMEOUTSays() throws {
        let setup = try setUpStore()
        let record = try crash("null-dereference", harness: setup.stripped)
        let silent = try TestHTTPServer { _ in .silence }
        defer { silent.stop() }
        let started = Date()
        let output = try inspect(["show", record, "--json"], environment: [
            "DEBUGINFOD_URLS": silent.origin, "DEBUGINFOD_CACHE_PATH": try Scratch.directory("silent-cache"), "DEBUGINFOD_TIMEOUT": "2",
        ])
        let elapsed = Date().timeIntervalSince(started)
        let frames = try crashedFrames(output, image: setup.stripped)
        XCTAssertTrue(frames.frames.values.allSatisfy { $0 == [Frame(function: nil, file: nil, line: nil)] })
        for problem in frames.problems {
            // The first image asked waits the 2 s; the server is then not asked again this run.
            let timedOut = problem?.hasSuffix("debuginfod: \(silent.origin)/buildid/\(setup.buildID)/debuginfo: timed out after 2.0 s") == true
            let skipped = problem?.hasSuffix("debuginfod: \(silent.origin): not asked (it did not answer in time before)") == true
            XCTAssertTrue(timedOut || skipped, problem ?? "nil")
        }
        XCTAssertLessThan(elapsed, 15, "one timeout for the run, not one per image (25 images would take 50 s)")
    }

    // MARK: symbols add

    func testSymbolsAddFilesTheDebugInfoUnderItsBuildIDAndIsIdempotent() throws {
        let harness = BuiltProducts.harness
        let store = try Scratch.directory("add")
        let buildID = try readelfBuildID(harness)
        let first = try inspect(["symbols", "add", harness, "--to", store, "--json"])
        XCTAssertEqual(first.ending, .exited(0), first.stderr)
        let expected = "\(store)/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).debug"
        let rows = try XCTUnwrap(first.json as? [[String: Any]])
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(rows.first?["path"] as? String, expected)
        XCTAssertEqual(rows.first?["result"] as? String, "added")
        XCTAssertEqual(try FileManager.default.subpathsOfDirectory(atPath: store).sorted(),
                       [".build-id", ".build-id/\(buildID.prefix(2))", ".build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).debug"])
        // readelf: same build-id, DWARF kept, code left out (a separate debug file).
        XCTAssertEqual(try readelfBuildID(expected), buildID)
        let sections = try readelfSections(expected)
        XCTAssertEqual(sections[".debug_info"], "PROGBITS")
        XCTAssertEqual(sections[".debug_line"], "PROGBITS")
        XCTAssertEqual(sections[".text"], "NOBITS")
        XCTAssertLessThan(try fileSize(expected), try fileSize(harness))
        let before = try FileManager.default.attributesOfItem(atPath: expected)

        // Twice: nothing changes.
        let second = try inspect(["symbols", "add", harness, "--to", store])
        XCTAssertEqual(second.ending, .exited(0), second.stderr)
        XCTAssertEqual(second.stdout, "\(harness): \(buildID) already present as \(expected)\n")
        let after = try FileManager.default.attributesOfItem(atPath: expected)
        XCTAssertEqual(before[.systemFileNumber] as? Int, after[.systemFileNumber] as? Int)
        XCTAssertEqual(before[.modificationDate] as? Date, after[.modificationDate] as? Date)

        // A file that already is a separate debug file is copied as it is.
        let separate = try Scratch.directory("separate") + "/harness.debug"
        _ = try Tools.output(try XCTUnwrap(Tools.find("objcopy")), ["--only-keep-debug", harness, separate])
        let store2 = try Scratch.directory("add2")
        let copied = try inspect(["symbols", "add", separate, "--to", store2])
        XCTAssertEqual(copied.ending, .exited(0), copied.stderr)
        let copiedPath = "\(store2)/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).debug"
        XCTAssertEqual(FileManager.default.contents(atPath: copiedPath), FileManager.default.contents(atPath: separate))
    }

    func fileSize(_ path: String) throws -> Int {
        try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
    }

    func testSymbolsAddRefusesWhatCannotBeFiledAndStillAddsTheRest() throws {
        let harness = BuiltProducts.harness
        let directory = try Scratch.directory("refuse")
        let stripped = directory + "/stripped"
        _ = try Tools.output(try XCTUnwrap(Tools.find("strip")), ["-o", stripped, harness])
        let cc = try XCTUnwrap(Tools.find("clang", "cc", "gcc"), "a C compiler")
        try "int main(void) { return 0; }\n".write(toFile: directory + "/p.c", atomically: true, encoding: .utf8)
        let noID = directory + "/no-build-id"
        _ = try Tools.output(cc, ["-g", "-Wl,--build-id=none", directory + "/p.c", "-o", noID])
        XCTAssertNil(try readelfSections(noID)[".note.gnu.build-id"], "linked without a build-id")
        XCTAssertNotNil(try readelfSections(noID)[".debug_info"])
        let text = directory + "/p.c"
        let store = try Scratch.directory("refuse-store")
        let output = try inspect(["symbols", "add", stripped, noID, text, harness, directory + "/missing", "--to", store])
        XCTAssertEqual(output.ending, .exited(1))
        XCTAssertEqual(output.stderr.split(separator: "\n").map(String.init), [
            "crash-inspect: \(stripped): no debug sections (.debug_info): build with -g and add the binary before stripping it",
            "crash-inspect: \(noID): no GNU build-id (link with -Wl,--build-id); a symbol store is keyed by it",
            "crash-inspect: \(text): not an ELF file",
            "crash-inspect: \(directory)/missing: cannot open",
        ])
        let buildID = try readelfBuildID(harness)
        XCTAssertEqual(output.stdout, "\(harness): \(buildID) added as \(store)/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).debug\n")
        XCTAssertEqual(try FileManager.default.subpathsOfDirectory(atPath: store).filter { $0.hasSuffix(".debug") || $0.contains("tmp") }.count, 1)
        // No binary at all is a usage error.
        XCTAssertEqual(try inspect(["symbols", "add", "--to", store]).ending, .exited(64))
    }
}
