// CrashInspectTests.swift — the built crash-inspect binary on records left by real crashes of the harness.
import CrashInspection
import CrashRecordFormat
import CrashSentry
import CrashSymbolication
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class CrashInspectTests: XCTestCase {
    static var inspect: String { BuiltProducts.inspect }
    static var harness: String { BuiltProducts.harness }

    struct Output {
        let ending: ChildProcess.Ending
        let stdout: String
        let stderr: String
        var json: Any? { try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
    }

    func inspect(_ arguments: [String]) throws -> Output {
        let base = try scratch("out")
        let child = try ChildProcess.run(Self.inspect, arguments, stdout: base + "/stdout", stderr: base + "/stderr", timeout: 120)
        return Output(ending: child.ending,
                      stdout: (try? String(contentsOfFile: base + "/stdout", encoding: .utf8)) ?? "",
                      stderr: (try? String(contentsOfFile: base + "/stderr", encoding: .utf8)) ?? "")
    }

    func scratch(_ name: String) throws -> String { try Scratch.directory("inspect-" + name) }

    /// Crashes `scenario` with `harness` into `directory`; returns the record's path.
    @discardableResult
    func crash(_ scenario: String, harness: String = CrashInspectTests.harness, into directory: String) throws -> String {
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: directory))
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let child = try ChildProcess.run(harness, ["run", scenario, "--dir", directory], environment: environment, timeout: 60)
        guard case .signaled = child.ending else { XCTFail("\(scenario) ended \(child.ending)"); return "" }
        let added = Set(try FileManager.default.contentsOfDirectory(atPath: directory)).subtracting(before)
        XCTAssertEqual(added.count, 1)
        return directory + "/" + (added.first ?? "")
    }

    /// Line of `func levelN` in Levels.swift: each level's call is on that same line.
    func levelLines() throws -> [String: Int] {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/CrashScenarios/Levels.swift")
        var lines: [String: Int] = [:]
        for (index, line) in try String(contentsOf: source, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            for level in 1...5 where line.contains(" func level\(level)(") { lines["level\(level)"] = index + 1 }
        }
        XCTAssertEqual(lines.count, 5)
        return lines
    }

    func checkLevelChain(harness: String) throws {
        let directory = try scratch("chain")
        let path = try crash("null-dereference", harness: harness, into: directory)
        let output = try inspect(["show", path, "--json"])
        XCTAssertEqual(output.ending, .exited(0), output.stderr)
        let object = try XCTUnwrap(output.json as? [String: Any])
        XCTAssertEqual(object["signal"] as? Int, Int(SIGSEGV))
        XCTAssertEqual(object["signalName"] as? String, "SIGSEGV")
        XCTAssertEqual(object["codeName"] as? String, "SEGV_MAPERR")
        XCTAssertEqual(object["faultAddress"] as? String, "0x0")
        XCTAssertTrue(object["message"] is NSNull)
        XCTAssertEqual(object["explanation"] as? String, "null pointer dereference at 0x0")
        let threads = try XCTUnwrap(object["threads"] as? [[String: Any]])
        let crashed = try XCTUnwrap(threads.first { $0["crashed"] as? Bool == true })
        let frames = try XCTUnwrap(crashed["frames"] as? [[String: Any]])
        XCTAssertEqual(frames.first?["symbol"] as? String, "cch_null_dereference")
        XCTAssertEqual((frames.first?["file"] as? String).map { ($0 as NSString).lastPathComponent }, "scenarios.c")
        // The level chain, demangled, innermost first, each on its own source line.
        let expectedLines = try levelLines()
        var lastIndex = -1
        for level in ["level5", "level4", "level3", "level2", "level1"] {
            let position = try XCTUnwrap(frames.firstIndex { ($0["symbol"] as? String)?.contains("CrashScenarios.\(level)(") == true },
                                         "\(level) missing in \(frames.map { $0["symbol"] ?? "?" })")
            XCTAssertGreaterThan(position, lastIndex, "\(level) out of order")
            lastIndex = position
            let frame = frames[position]
            XCTAssertEqual((frame["file"] as? String).map { ($0 as NSString).lastPathComponent }, "Levels.swift")
            XCTAssertEqual(frame["line"] as? Int, expectedLines[level], "\(level) line")
            XCTAssertNotNil(frame["column"] as? Int)
        }
        let images = try XCTUnwrap(object["images"] as? [[String: Any]])
        let main = try XCTUnwrap(images.first { $0["mainExecutable"] as? Bool == true })
        XCTAssertEqual(main["buildID"] as? String, hexString(try ELFFile(path: harness).buildID))
        XCTAssertNotNil((object["appEnd"] as? [String: Any])?["properties"])
        XCTAssertEqual((object["breadcrumbs"] as? [[String: Any]])?.last?["message"] as? String, "about to crash")

        let text = try inspect(["show", path])
        XCTAssertTrue(text.stdout.contains("null pointer dereference at 0x0"), text.stdout)
        XCTAssertTrue(text.stdout.contains("Levels.swift:\(expectedLines["level3"]!)"), text.stdout)
    }

    func testShowSymbolicatesTheLevelChainWithSourceLinesInTheDebugHarness() throws {
        try checkLevelChain(harness: Self.harness)
    }

    func testShowSymbolicatesTheLevelChainWithSourceLinesInTheReleaseHarness() throws {
        guard let release = ProcessInfo.processInfo.environment["CRASH_HARNESS_RELEASE"], !release.isEmpty else {
            throw XCTSkip("set CRASH_HARNESS_RELEASE to a release build of crash-harness (scripts/test.sh does)")
        }
        try checkLevelChain(harness: release)
    }

    func testShowExplainsTheFatalMessageOfASwiftTrap() throws {
        let directory = try scratch("fatal")
        let path = try crash("fatal-error", into: directory)
        let object = try XCTUnwrap(try inspect(["show", path, "--json"]).json as? [String: Any])
        XCTAssertTrue((object["message"] as? String)?.contains("crash-harness fatalError text") == true)
        // The runtime's line as it printed it ("<file>:<line>: Fatal error: <text>"): nothing is
        // stripped, as in the crash's one summary (CrashSummary) and Sentry's Swift SDK.
        let explanation = try XCTUnwrap(object["explanation"] as? String)
        XCTAssertTrue(explanation.hasPrefix("Swift runtime trap: CrashScenarios/Scenarios.swift:"), explanation)
        XCTAssertTrue(explanation.hasSuffix(": Fatal error: crash-harness fatalError text"), explanation)
    }

    func testARunawayRecursionShowsItsTopAndBottomWithTheNumberOfFramesOmittedBetween() throws {
        let directory = try scratch("overflow")
        let path = try crash("stack-overflow-main", into: directory)
        let object = try XCTUnwrap(try inspect(["show", path, "--json"]).json as? [String: Any])
        let crashed = try XCTUnwrap((object["threads"] as? [[String: Any]])?.first)
        let omitted = try XCTUnwrap(crashed["omittedFrames"] as? Int)
        XCTAssertGreaterThan(omitted, 0, "a runaway recursion must omit frames")
        XCTAssertEqual(crashed["stack"] as? String, "crashed")
        let frames = try XCTUnwrap(crashed["frames"] as? [[String: Any]])
        let depths = frames.filter { $0["inlined"] as? Bool == false }.compactMap { $0["index"] as? Int }
        // Depths run 0, 1, … up to the cut, then jump by exactly the omitted count.
        let jumps = zip(depths, depths.dropFirst()).filter { $1 - $0 != 1 }
        XCTAssertEqual(jumps.count, 1, "\(depths)")
        XCTAssertEqual(jumps.first.map { $1 - $0 }, omitted + 1)
        XCTAssertEqual(depths.first, 0)
        // The bottom of the stack, where the recursion began, is kept: the level chain is there.
        let symbols = frames.compactMap { $0["symbol"] as? String }
        XCTAssertTrue(symbols.contains { $0.contains("level5") }, "\(symbols.suffix(12))")
        XCTAssertTrue(symbols.prefix(4).contains { $0.contains("cch_recurse") }, "\(symbols.prefix(4))")
        let text = try inspect(["show", path]).stdout
        XCTAssertTrue(text.contains("… \(omitted) frames omitted …"), text)
    }

    func testShowSaysHowEachThreadsStackWasObtained() throws {
        let directory = try scratch("states")
        let path = try crash("crash-with-thread-blocking-signals", into: directory)
        let threads = try XCTUnwrap(try inspect(["show", path, "--json"]).json as? [String: Any])["threads"] as? [[String: Any]]
        let stacks = try XCTUnwrap(threads).compactMap { $0["stack"] as? String }
        XCTAssertEqual(stacks.first, "crashed")
        XCTAssertEqual(stacks.filter { $0 == "ptraced" }.count, 1, "\(stacks)")
        XCTAssertTrue(stacks.dropFirst().allSatisfy { $0 == "stopped" || $0 == "ptraced" }, "\(stacks)")
        for thread in try XCTUnwrap(threads).dropFirst() {
            XCTAssertFalse((thread["frames"] as? [Any])?.isEmpty ?? true, "a stopped thread has frames: \(thread)")
            XCTAssertFalse((thread["registers"] as? [String: Any])?.isEmpty ?? true, "and registers: \(thread)")
        }
        let text = try inspect(["show", path]).stdout
        XCTAssertTrue(text.contains("read by the ptrace helper"), text)

        let refusedPath = try crash("thread-blocking-signals-ptrace-refused", into: directory)
        let refused = try XCTUnwrap(try inspect(["show", refusedPath, "--json"]).json as? [String: Any])["threads"] as? [[String: Any]]
        XCTAssertEqual(try XCTUnwrap(refused).filter { $0["stack"] as? String == "ptraceRefused" }.count, 1)
        XCTAssertTrue(try inspect(["show", refusedPath]).stdout.contains("ptrace was refused"))
    }

    func testAMismatchedBuildIDIsReportedAndNoNamesAreShownUntilTheRightBinaryIsGiven() throws {
        let directory = try scratch("mismatch")
        let binDir = try scratch("bin")
        let copy = binDir + "/crash-harness"
        try FileManager.default.copyItem(atPath: Self.harness, toPath: copy)
        let path = try crash("null-dereference", harness: copy, into: directory)
        let buildID = hexString(try ELFFile(path: copy).buildID)
        // Replace the binary at the recorded path with a different one.
        try FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: Self.inspect, toPath: copy)
        let object = try XCTUnwrap(try inspect(["show", path, "--json"]).json as? [String: Any])
        let frames = try XCTUnwrap(((object["threads"] as? [[String: Any]])?.first?["frames"]) as? [[String: Any]])
        let mainFrames = frames.filter { $0["image"] as? String == copy }
        XCTAssertFalse(mainFrames.isEmpty)
        for frame in mainFrames {
            XCTAssertTrue(frame["symbol"] is NSNull, "a name from a binary whose build-id differs: \(frame)")
            XCTAssertTrue((frame["problem"] as? String)?.hasPrefix("build-id differs") == true, "\(frame)")
        }
        // The right binary, found by build-id in a --symbols directory (.build-id layout).
        let symbols = try scratch("symbols")
        let debugDir = symbols + "/.build-id/" + buildID.prefix(2)
        try FileManager.default.createDirectory(atPath: debugDir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.harness, toPath: debugDir + "/" + buildID.dropFirst(2) + ".debug")
        let fixed = try XCTUnwrap(try inspect(["show", path, "--json", "--symbols", symbols]).json as? [String: Any])
        let fixedFrames = try XCTUnwrap(((fixed["threads"] as? [[String: Any]])?.first?["frames"]) as? [[String: Any]])
        XCTAssertTrue(fixedFrames.contains { ($0["symbol"] as? String)?.contains("CrashScenarios.level3(") == true })
    }

    func testEveryKindOfBadInputGetsOneLineAndTheRestAreStillListed() throws {
        let directory = try scratch("hostile")
        let good = try crash("abort", into: directory)
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: good))
        let fm = FileManager.default
        XCTAssertTrue(fm.createFile(atPath: directory + "/truncated.ccrec", contents: bytes.prefix(bytes.count / 2)))
        var flipped = [UInt8](bytes)
        flipped[300] ^= 0xFF
        XCTAssertTrue(fm.createFile(atPath: directory + "/corrupt.ccrec", contents: Data(flipped)))
        XCTAssertTrue(fm.createFile(atPath: directory + "/foreign.ccrec", contents: try XCTUnwrap(fm.contents(atPath: Self.inspect)).prefix(4096)))
        XCTAssertTrue(fm.createFile(atPath: directory + "/empty.ccrec", contents: Data()))
        XCTAssertTrue(fm.createFile(atPath: directory + "/header-only.ccrec", contents: bytes.prefix(20)))
        try fm.createSymbolicLink(atPath: directory + "/link.ccrec", withDestinationPath: "/etc/passwd")
        try fm.createDirectory(atPath: directory + "/dir.ccrec", withIntermediateDirectories: false)
        mkfifo(directory + "/fifo.ccrec", 0o600)
        XCTAssertTrue(fm.createFile(atPath: directory + "/huge.ccrec", contents: nil))
        truncate(directory + "/huge.ccrec", 64 << 20)
        XCTAssertTrue(fm.createFile(atPath: directory + "/ignored.txt", contents: Data("not a record".utf8)))

        let output = try inspect(["list", "--dir", directory, "--json"])
        XCTAssertEqual(output.ending, .exited(0), output.stderr)
        let rows = try XCTUnwrap(output.json as? [[String: Any]])
        let byID = Dictionary(rows.map { ($0["id"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        // Readable records are listed, damaged ones as incomplete.
        XCTAssertEqual(byID[RecordDirectory.id(of: good)]?["complete"] as? Bool, true)
        XCTAssertEqual(byID["truncated"]?["complete"] as? Bool, false)
        XCTAssertEqual(byID["corrupt"]?["complete"] as? Bool, false)
        XCTAssertEqual(byID["truncated"]?["signalName"] as? String, "SIGABRT")
        // Unreadable ones get an error each.
        for id in ["foreign", "empty", "header-only", "link", "dir", "fifo", "huge"] {
            XCTAssertNotNil(byID[id]?["error"] as? String, "\(id): \(byID[id] ?? [:])")
        }
        XCTAssertNil(byID["ignored"])
        let errorLines = output.stderr.split(separator: "\n")
        XCTAssertEqual(errorLines.count, 7, output.stderr)
        XCTAssertTrue(errorLines.allSatisfy { $0.hasPrefix("crash-inspect: ") })

        // Text mode too, and groups, never crash on the same directory.
        XCTAssertEqual(try inspect(["list", "--dir", directory]).ending, .exited(0))
        XCTAssertEqual(try inspect(["groups", "--dir", directory]).ending, .exited(0))
        // show on a hostile file: a clear one-line error and exit 1.
        let refused = try inspect(["show", directory + "/foreign.ccrec"])
        XCTAssertEqual(refused.ending, .exited(1))
        XCTAssertTrue(refused.stderr.contains("not a crash record"), refused.stderr)
        let missing = try inspect(["show", "no-such-id", "--dir", directory])
        XCTAssertEqual(missing.ending, .exited(64))
        // show on the truncated one still tells what it can.
        let partial = try inspect(["show", "truncated", "--dir", directory])
        XCTAssertEqual(partial.ending, .exited(0))
        XCTAssertTrue(partial.stdout.contains("INCOMPLETE"), partial.stdout)
    }

    func testGroupsPutTheSameCrashTogetherAcrossRunsAndASLR() throws {
        let directory = try scratch("groups")
        for _ in 0..<3 { try crash("null-dereference", into: directory) }
        try crash("abort", into: directory)
        let groups = try XCTUnwrap(try inspect(["groups", "--dir", directory, "--json"]).json as? [[String: Any]])
        XCTAssertEqual(groups.map { $0["count"] as? Int }, [3, 1])
        let signature = try XCTUnwrap(groups.first?["signature"] as? String)
        XCTAssertTrue(signature.hasPrefix("SIGSEGV | cch_null_dereference | closure () -> () in closure @Sendable"), signature)
        XCTAssertFalse(signature.contains("#"), "closure numbers must not be part of a signature: \(signature)")
        XCTAssertEqual(groups.first?["appVersions"] as? [String], ["0.1.0"])
    }

    /// Two crashes in the same code reached from two request handlers: only their async callers
    /// differ. They group apart; read as physical frames only (the record without its async
    /// context chains, as records were before async chains were recorded) they would have grouped together under the executor.
    func testCrashesInDifferentAsyncHandlersGroupApartWhereThePhysicalStackCannotTellThem() throws {
        let directory = try scratch("async-groups")
        let first = try crash("async-task-chain", into: directory)
        try crash("async-task-chain", into: directory)
        let other = try crash("async-other-handler", into: directory)
        let groups = try XCTUnwrap(try inspect(["groups", "--dir", directory, "--json"]).json as? [[String: Any]])
        XCTAssertEqual(groups.map { $0["count"] as? Int }, [2, 1])
        let signatures = groups.compactMap { $0["signature"] as? String }
        XCTAssertTrue(signatures[0].contains("asyncLevel2"), signatures[0])
        XCTAssertTrue(signatures[1].contains("handleOtherRequest"), signatures[1])

        let symbolicator = try Symbolicator()
        func physicalSignature(_ path: String) throws -> String {
            var record = try CrashRecordReader.read(path: path)
            for index in record.threads.indices { record.threads[index].asyncChains = [] }
            return Inspection(path: path, record: record, symbolicator: symbolicator).signature
        }
        XCTAssertEqual(try physicalSignature(first), try physicalSignature(other))
        XCTAssertNotEqual(Inspection(path: first, record: try CrashRecordReader.read(path: first), symbolicator: symbolicator).signature,
                          Inspection(path: other, record: try CrashRecordReader.read(path: other), symbolicator: symbolicator).signature)
    }

    /// show: the async callers after the first async frame, marked [async] in the text and with
    /// their kind in --json, numbered on from the physical frames; resume points looked up as is.
    func testShowListsTheAsyncCallersWithTheirKind() throws {
        let directory = try scratch("async-show")
        let path = try crash("async-task-chain", into: directory)
        let object = try XCTUnwrap(try inspect(["show", path, "--json"]).json as? [String: Any])
        let crashed = try XCTUnwrap((object["threads"] as? [[String: Any]])?.first { $0["crashed"] as? Bool == true })
        let frames = try XCTUnwrap(crashed["frames"] as? [[String: Any]]).filter { $0["inlined"] as? Bool == false }
        let kinds = frames.map { $0["kind"] as? String ?? "?" }
        XCTAssertEqual(kinds.first, "programCounter")
        let firstAsync = try XCTUnwrap(kinds.firstIndex(of: "asyncResumePoint"))
        XCTAssertTrue(kinds[1..<firstAsync].allSatisfy { $0 == "returnAddress" }, "\(kinds)")
        XCTAssertTrue(kinds[firstAsync...].allSatisfy { $0 == "asyncResumePoint" }, "\(kinds)")
        XCTAssertEqual(frames.map { $0["index"] as? Int }, Array(0..<frames.count).map { Optional($0) })
        let names = frames.map { $0["symbol"] as? String ?? "?" }
        for name in ["asyncLevel3", "asyncLevel2", "asyncLevel1", "handleRequest"] {
            XCTAssertTrue(names.contains { $0.contains(name) }, "\(name) in \(names)")
        }
        for frame in frames[firstAsync...] {
            let address = try XCTUnwrap(UInt64((frame["address"] as? String ?? "").dropFirst(2), radix: 16))
            let images = try XCTUnwrap(object["images"] as? [[String: Any]])
            guard let image = images.first(where: { $0["path"] as? String == frame["image"] as? String }),
                  let base = UInt64((image["base"] as? String ?? "").dropFirst(2), radix: 16) else { continue }
            XCTAssertEqual(frame["imageOffset"] as? String, "0x" + String(address - base, radix: 16), "a resume point is looked up as is")
        }
        let text = try inspect(["show", path]).stdout
        let asyncLines = text.split(separator: "\n").filter { $0.contains("[async]") }
        XCTAssertGreaterThanOrEqual(asyncLines.count, 4, text)
        XCTAssertTrue(asyncLines.contains { $0.contains("asyncLevel2") }, text)
    }

    /// The text view shows the program's own frames and folds the rest, in the short names Swift's
    /// backtracer prints; --all-frames and the JSON keep every frame, marked in_app or not.
    func testShowFoldsOtherCodeAndMarksTheProgramsOwnFrames() throws {
        let directory = try scratch("fold-show")
        let path = try crash("async-task-chain", into: directory)
        let object = try XCTUnwrap(try inspect(["show", path, "--json"]).json as? [String: Any])
        let threads = try XCTUnwrap(object["threads"] as? [[String: Any]])
        let all = threads.flatMap { ($0["frames"] as? [[String: Any]]) ?? [] }
        func frames(where test: ([String: Any]) -> Bool) -> [[String: Any]] { all.filter(test) }
        // The scenario's functions are the harness's own; the runtime's, libc's and ArgumentParser's are not.
        let own = frames { ($0["symbol"] as? String ?? "").contains("asyncLevel") }
        XCTAssertGreaterThanOrEqual(own.count, 3)
        XCTAssertTrue(own.allSatisfy { $0["inApp"] as? Bool == true && $0["origin"] is NSNull }, "\(own)")
        let runtime = frames { ($0["image"] as? String ?? "").contains("libswiftCore") || ($0["image"] as? String ?? "").contains("libc.so") }
        XCTAssertFalse(runtime.isEmpty)
        XCTAssertTrue(runtime.allSatisfy { $0["inApp"] as? Bool == false && $0["origin"] as? String != nil }, "\(runtime)")
        let parser = frames { ($0["shortSymbol"] as? String ?? "").hasPrefix("static ParsableCommand.main") }
        XCTAssertFalse(parser.isEmpty)
        XCTAssertTrue(parser.allSatisfy { $0["origin"] as? String == "ArgumentParser" }, "\(parser)")

        let folded = try inspect(["show", path]).stdout
        let everything = try inspect(["show", path, "--all-frames"]).stdout
        func frameLines(_ text: String) -> [Substring] { text.split(separator: "\n").filter { $0.contains("  0x0000") } }
        // A fold counts frames; a frame with inlined calls (libc's, from its debug file) prints a
        // line for each of them, marked, beside the frame's own line.
        func physicalFrameLines(_ text: String) -> [Substring] { frameLines(text).filter { !$0.contains(" [inlined]") } }
        let foldLines = folded.split(separator: "\n").filter { $0.contains("… ") && $0.contains(" frames in ") }
        XCTAssertFalse(foldLines.isEmpty, folded)
        // Every frame is either shown or counted in a fold line.
        let counted = foldLines.compactMap { line in line.split(separator: " ").first { Int($0) != nil }.flatMap { Int($0) } }.reduce(0, +)
        XCTAssertEqual(physicalFrameLines(folded).count + counted, physicalFrameLines(everything).count, folded)
        XCTAssertTrue(foldLines.contains { $0.contains("libc") }, "\(foldLines)")
        // Short names in the text, full ones with --all-frames and in the JSON: the full name of a
        // closure carries its signature, the short one not.
        let asyncLine = try XCTUnwrap(frameLines(folded).first { $0.contains("asyncLevel2") })
        XCTAssertTrue(asyncLine.contains("asyncLevel2(_:)"), String(asyncLine))
        XCTAssertFalse(folded.contains(" -> "), "no full signature in the folded view")
        XCTAssertTrue(everything.contains(" -> "), "full signatures with --all-frames")
    }

    /// glibc's last words in show (text and --json) and in the groups: a double free and heap
    /// corruption found by free() abort alike, their messages tell them apart.
    func testShowAndGroupsUseGlibcsAbortMessage() throws {
        let directory = try scratch("abort-message")
        let path = try crash("double-free", into: directory)
        try crash("double-free", into: directory)
        try crash("heap-corruption", into: directory)
        try crash("abort", into: directory)
        let text = try inspect(["show", path]).stdout
        XCTAssertTrue(text.contains("abort() by the C library: free(): double free detected in tcache 2"), text)
        XCTAssertTrue(text.contains("C library abort message:"), text)
        let object = try XCTUnwrap(try inspect(["show", path, "--json"]).json as? [String: Any])
        XCTAssertEqual(object["abortMessage"] as? String, "free(): double free detected in tcache 2")
        let groups = try XCTUnwrap(try inspect(["groups", "--dir", directory, "--json"]).json as? [[String: Any]])
        let signatures = groups.compactMap { $0["signature"] as? String }
        XCTAssertEqual(groups.map { $0["count"] as? Int }, [2, 1, 1], "\(signatures)")
        XCTAssertTrue(signatures.contains { $0.hasPrefix("SIGABRT | free(): double free detected in tcache 2 | ") }, "\(signatures)")
        XCTAssertTrue(signatures.contains { $0.hasPrefix("SIGABRT | free(): invalid next size (normal) | ") }, "\(signatures)")
        let list = try inspect(["list", "--dir", directory]).stdout
        XCTAssertTrue(list.contains("\"free(): double free detected in tcache 2\""), list)
    }

    /// The signature keeps an assert's message without the program's name (the path it was run
    /// by differs between hosts) and without addresses; different messages, different groups.
    func testTheAbortMessageInASignatureDropsTheProgramNameAndAddresses() {
        XCTAssertEqual(Explanation.abortSignature("/usr/bin/app: src/x.c:12: int f(int): Assertion `a > 0' failed.\nmore"),
                       "src/x.c:12: int f(int): Assertion `a > 0' failed.")
        XCTAssertEqual(Explanation.abortSignature("app: src/x.c:12: int f(int): Assertion `a > 0' failed."),
                       Explanation.abortSignature("/opt/app/bin/app: src/x.c:12: int f(int): Assertion `a > 0' failed."))
        XCTAssertEqual(Explanation.abortSignature("munmap_chunk(): invalid pointer at 0x55d0c0ffee00"), "munmap_chunk(): invalid pointer at 0x?")
        func signature(_ message: String?) -> String {
            var record = CrashRecord(signal: SignalInfo(number: SIGABRT, name: "SIGABRT", code: -6, codeName: "SI_TKILL", codeDescription: "",
                                                        faultAddress: nil, sender: nil, errnoAtCrash: 0))
            record.abortMessage = message
            record.threads = [CrashThread(tid: 1, crashed: true, framesFromSignalContext: true, frames: [0x1000])]
            return Inspection(path: "x.ccrec", record: record, symbolicator: nil).signature
        }
        XCTAssertNotEqual(signature("app: h.c:3: void check(int): Assertion `ok' failed."),
                          signature("app: h.c:3: void check(int): Assertion `ready' failed."))
        XCTAssertEqual(signature("/a/app: h.c:3: void check(int): Assertion `ok' failed."),
                       signature("/b/app: h.c:3: void check(int): Assertion `ok' failed."))
        XCTAssertFalse(signature(nil).contains("Assertion"))
    }

    func testListShowsOneLinePerRecordWithTheTopFrameOfOurCode() throws {
        let directory = try scratch("list")
        let path = try crash("fatal-error", into: directory)
        let output = try inspect(["list", "--dir", directory])
        let line = try XCTUnwrap(output.stdout.split(separator: "\n").first.map(String.init))
        XCTAssertTrue(line.hasPrefix(RecordDirectory.id(of: path)), line)
        XCTAssertTrue(line.contains("crash-harness 0.1.0"), line)
        // The fatal message's first line as the runtime wrote it (CrashSummary strips nothing).
        XCTAssertTrue(line.contains(": Fatal error: crash-harness fatalError text\""), line)
        XCTAssertTrue(line.contains("closure #1 () -> () in closure"), "the fatalError call site: \(line)")
    }

    // MARK: requests

    /// show names the request the crash killed near the top, lists the others with their trace
    /// and age, and --json has them typed; list names it too.
    func testShowAndListNameTheRequestTheCrashKilledAndTheOthersInFlight() throws {
        let directory = try scratch("requests")
        let path = try crash("request-among-fifty", into: directory)
        let record = try CrashRecordReader.read(path: path)
        let crashed = try XCTUnwrap(record.requests?.crashed)
        let trace = "4bf92f3577b34da6a3ce929d00000025"
        XCTAssertEqual(crashed.traceID, trace)

        let text = try inspect(["show", path]).stdout
        let lines = text.split(separator: "\n").map(String.init)
        let serving = try XCTUnwrap(lines.firstIndex { $0.contains("while serving") }, text)
        XCTAssertEqual(lines[serving], "  while serving POST /orders/{id} — request req-37, trace \(trace)")
        XCTAssertLessThan(serving, 15, "near the top")
        let heading = try XCTUnwrap(lines.firstIndex(of: "Requests in flight"), text)
        XCTAssertEqual(lines[heading + 1], "  50 at the crash, the crashed one included; 32 others recorded, most recent first")
        let listed = lines[(heading + 2)...].prefix { $0.hasPrefix("  req-") }
        XCTAssertEqual(listed.count, 32)
        XCTAssertFalse(listed.contains { $0.hasPrefix("  req-37 ") })
        for (line, other) in zip(listed, try XCTUnwrap(record.requests?.others)) {
            XCTAssertTrue(line.hasPrefix("  \(other.requestID) "), line)
            XCTAssertTrue(line.contains(" \(other.label) ") && line.contains("trace \(other.traceID ?? "-")"), line)
            XCTAssertTrue(line.hasSuffix(" s"), line)
        }
        XCTAssertFalse(text.contains("status unknown"))

        let object = try XCTUnwrap(try inspect(["show", path, "--json"]).json as? [String: Any])
        let requests = try XCTUnwrap(object["requests"] as? [String: Any])
        XCTAssertEqual(requests["status"] as? String, "task")
        XCTAssertEqual(requests["inFlight"] as? Int, 50)
        XCTAssertEqual(requests["dropped"] as? Int, 0)
        XCTAssertEqual((requests["currentTask"] as? String)?.hasPrefix("0x"), true)
        let named = try XCTUnwrap(requests["crashed"] as? [String: Any])
        XCTAssertEqual(named["requestID"] as? String, "req-37")
        XCTAssertEqual(named["label"] as? String, "POST /orders/{id}")
        XCTAssertEqual(named["path"] as? String, "/orders/37")
        XCTAssertEqual(named["traceID"] as? String, trace)
        XCTAssertEqual(named["spanID"] as? String, crashed.spanID)
        XCTAssertEqual(named["parentSpanID"] as? String, "00f067aa0ba90025")
        XCTAssertEqual(named["sampled"] as? Bool, true)
        XCTAssertEqual((named["attributes"] as? [String: String])?["index"], "37")
        XCTAssertNotNil(named["ageSeconds"] as? Double)
        let others = try XCTUnwrap(requests["others"] as? [[String: Any]])
        XCTAssertEqual(others.compactMap { $0["requestID"] as? String }, record.requests?.others.map(\.requestID))

        let list = try inspect(["list", "--dir", directory])
        XCTAssertTrue(list.stdout.contains("  serving req-37"), list.stdout)
        let rows = try XCTUnwrap(try inspect(["list", "--dir", directory, "--json"]).json as? [[String: Any]])
        XCTAssertEqual(rows.first?["request"] as? String, "req-37")
    }

    /// Where the crashed thread's request could not be told, show says so and names none; a
    /// record without requests has `requests: null`.
    func testShowSaysWhenTheCrashedRequestCouldNotBeTold() throws {
        let directory = try scratch("requests-unknown")
        let path = try crash("request-unknown-layout", into: directory)
        let text = try inspect(["show", path]).stdout
        XCTAssertFalse(text.contains("while serving"), text)
        XCTAssertTrue(text.contains("  the request it was serving could not be told (Notes say why)"), text)
        XCTAssertTrue(text.contains("  status unknown: which one the crashed thread was serving could not be told"), text)
        let requests = try XCTUnwrap((try inspect(["show", path, "--json"]).json as? [String: Any])?["requests"] as? [String: Any])
        XCTAssertEqual(requests["status"] as? String, "unknown")
        XCTAssertTrue(requests["crashed"] is NSNull)
        XCTAssertEqual((requests["others"] as? [Any])?.count, 4)
        let rows = try XCTUnwrap(try inspect(["list", "--dir", directory, "--json"]).json as? [[String: Any]])
        XCTAssertTrue(rows.first?["request"] is NSNull)

        let plain = try crash("null-dereference", into: try scratch("requests-none"))
        XCTAssertTrue((try inspect(["show", plain, "--json"]).json as? [String: Any])?["requests"] is NSNull)
        XCTAssertFalse(try inspect(["show", plain]).stdout.contains("Requests in flight"))
    }

    /// Two crashes of the same code serving different requests (their ids, paths, traces and a
    /// query differ) are one group: a request's values are never part of a signature.
    func testCrashesOfTheSameCodeServingDifferentRequestsAreOneGroup() throws {
        let directory = try scratch("requests-groups")
        let first = try crash("request-among-fifty", into: directory)
        let second = try crash("request-with-query", into: directory)
        let records = try [first, second].map { try CrashRecordReader.read(path: $0) }
        XCTAssertNotEqual(records[0].requests?.crashed?.requestID, records[1].requests?.crashed?.requestID)
        XCTAssertNotEqual(records[0].requests?.crashed?.traceID, records[1].requests?.crashed?.traceID)
        let groups = try XCTUnwrap(try inspect(["groups", "--dir", directory, "--json"]).json as? [[String: Any]])
        XCTAssertEqual(groups.map { $0["count"] as? Int }, [2], "\(groups.map { $0["signature"] ?? "" })")
        let signature = try XCTUnwrap(groups.first?["signature"] as? String)
        XCTAssertFalse(signature.contains("req-") || signature.contains("4bf92f35") || signature.contains("/orders/"), signature)
        // And by construction: the same record serving another request, or none, has the same signature.
        let symbolicator = try Symbolicator()
        var other = records[0]
        other.requests?.crashed?.requestID = "req-other"
        other.requests?.crashed?.traceID = "0af7651916cd43dd8448eb211c80319c"
        other.requests?.crashed?.route = "/payments/{id}"
        other.requests?.others = []
        var none = records[0]
        none.requests = nil
        let signatures = Set([records[0], other, none].map { Inspection(path: first, record: $0, symbolicator: symbolicator).signature })
        XCTAssertEqual(signatures.count, 1, "\(signatures)")
    }

    /// The directory as people type it: `list DIR`, `groups DIR` as with `--dir DIR`, and `show DIR`
    /// the newest record there.
    func testTheDirectoryIsAcceptedAsAPlainArgument() throws {
        let directory = try scratch("plain-directory")
        try crash("null-dereference", into: directory)
        Thread.sleep(forTimeInterval: 0.01)   // a later millisecond in the newer record's name
        let newest = try crash("abort", into: directory)
        for command in ["list", "groups"] {
            let plain = try inspect([command, directory, "--json"])
            XCTAssertEqual(plain.ending, .exited(0), plain.stderr)
            XCTAssertEqual(plain.stdout, try inspect([command, "--dir", directory, "--json"]).stdout, command)
            XCTAssertEqual((plain.json as? [Any])?.count, 2, "\(command): \(plain.stdout)")
        }
        let shown = try XCTUnwrap(try inspect(["show", directory, "--json"]).json as? [String: Any])
        XCTAssertEqual(shown["file"] as? String, newest)
        XCTAssertEqual(shown["signalName"] as? String, "SIGABRT")
        let empty = try scratch("plain-directory-empty")
        let none = try inspect(["show", empty])
        XCTAssertNotEqual(none.ending, .exited(0))
        XCTAssertTrue(none.stderr.contains("no crash records in \(empty)"), none.stderr)
    }

    /// The event of an exported Sentry envelope (`export --sentry`).
    func sentryEvent(_ path: String, directory: String) throws -> [String: Any] {
        let out = directory + "/" + UUID().uuidString + ".envelope"
        XCTAssertEqual(try inspect(["export", path, "--sentry", "-o", out]).ending, .exited(0))
        let lines = try XCTUnwrap(FileManager.default.contents(atPath: out)).split(separator: 0x0A)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lines[2])) as? [String: Any])
    }

    /// A leaked continuation makes the runtime print a warning it also keeps in the buffer that
    /// holds fatal errors. A later crash of another cause has no message from it, a later Swift
    /// trap keeps its own message alone, and the warning is shown apart, after the crash's facts:
    /// in show, show --json, the Sentry event's extra data; never in the message, the summary, the
    /// exception, the title or the group.
    func testARuntimeWarningIsNeverALaterCrashsMessageTitleOrGroup() throws {
        let directory = try scratch("runtime-warnings")
        let leak = "leaked its continuation without resuming it"
        #if arch(x86_64)
        let trap = "SIGILL"
        #else
        let trap = "SIGTRAP"
        #endif
        let cases: [(scenario: String, message: String?, type: String)] = [
            ("leaked-continuation-then-segv", nil, "SIGSEGV"),
            ("leaked-continuation-then-fatal-error", "crash-harness fatalError after a leak", trap),
            ("leaked-continuation-then-abort", nil, "SIGABRT"),
        ]
        for (scenario, message, type) in cases {
            let path = try crash(scenario, into: directory)
            let object = try XCTUnwrap(try inspect(["show", path, "--json"]).json as? [String: Any], scenario)
            if let message {
                let text = try XCTUnwrap(object["message"] as? String, scenario)
                XCTAssertTrue(text.hasSuffix("Fatal error: " + message), "\(scenario): \(text)")
                XCTAssertFalse(text.contains("CONTINUATION MISUSE"), "\(scenario): \(text)")
            } else {
                XCTAssertTrue(object["message"] is NSNull, "\(scenario): \(object["message"] ?? "")")
            }
            for key in ["summary", "explanation"] {
                XCTAssertFalse((object[key] as? String ?? "").contains("CONTINUATION MISUSE"), "\(scenario) \(key): \(object[key] ?? "")")
            }
            let warnings = try XCTUnwrap(object["runtimeWarnings"] as? [[String: Any]], scenario)
            XCTAssertEqual(warnings.count, 1, "\(scenario): \(warnings)")
            XCTAssertTrue((warnings.first?["text"] as? String)?.contains(leak) == true, "\(scenario): \(warnings)")
            XCTAssertEqual(warnings.first?["count"] as? Int, 1)

            let text = try inspect(["show", path]).stdout
            let warned = try XCTUnwrap(text.range(of: "The Swift runtime warned earlier in this run"), "\(scenario): \(text)")
            XCTAssertTrue(text[warned.upperBound...].contains(leak), text)
            if let message { XCTAssertLessThan(try XCTUnwrap(text.range(of: message)).lowerBound, warned.lowerBound, text) }
            XCTAssertFalse(text[..<warned.lowerBound].contains("CONTINUATION MISUSE"), "\(scenario): the warning before the crash's own facts\n\(text)")

            let event = try sentryEvent(path, directory: directory)
            let exception = try XCTUnwrap(((event["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
            XCTAssertEqual(exception["type"] as? String, type, scenario)
            XCTAssertFalse((exception["value"] as? String ?? "").contains("CONTINUATION MISUSE"), "\(scenario): \(exception)")
            if let message { XCTAssertTrue((exception["value"] as? String ?? "").contains(message), "\(scenario): \(exception)") }
            let extra = try XCTUnwrap(event["extra"] as? [String: Any], scenario)
            XCTAssertTrue((extra["runtime_warnings"] as? String)?.contains(leak) == true, "\(scenario): \(extra)")
            XCTAssertFalse((extra["fatal_message"] as? String ?? "").contains("CONTINUATION MISUSE"), "\(scenario): \(extra)")
            XCTAssertFalse("\(event["fingerprint"] ?? "")".contains("CONTINUATION"), "\(scenario)")
        }
        let groups = try XCTUnwrap(try inspect(["groups", "--dir", directory, "--json"]).json as? [[String: Any]])
        XCTAssertEqual(groups.count, 3, "three causes, three groups: \(groups.map { $0["signature"] ?? "" })")
        for group in groups { XCTAssertFalse("\(group["signature"] ?? "")".contains("CONTINUATION"), "\(group)") }
    }

    func testASentryEnvelopeCarriesTheEventDebugImagesAndTheRawRecord() throws {
        let directory = try scratch("sentry")
        let path = try crash("null-dereference", into: directory)
        let out = directory + "/envelope"
        XCTAssertEqual(try inspect(["export", path, "--sentry", "-o", out]).ending, .exited(0))
        let bytes = [UInt8](try XCTUnwrap(FileManager.default.contents(atPath: out)))
        var cursor = 0
        func line() throws -> [String: Any] {
            let end = try XCTUnwrap(bytes[cursor...].firstIndex(of: 0x0A))
            defer { cursor = end + 1 }
            return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(bytes[cursor..<end])) as? [String: Any])
        }
        func payload(_ length: Int) -> [UInt8] {
            defer { cursor += length + 1 }
            return Array(bytes[cursor..<cursor + length])
        }
        let header = try line()
        let eventID = try XCTUnwrap(header["event_id"] as? String)
        XCTAssertEqual(eventID.count, 32)
        XCTAssertNil(header["sent_at"], "an exported envelope is sent later: no sent_at for Relay to correct the clock by")
        let eventHeader = try line()
        XCTAssertEqual(eventHeader["type"] as? String, "event")
        let eventBytes = payload(try XCTUnwrap(eventHeader["length"] as? Int))
        let event = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(eventBytes)) as? [String: Any])
        XCTAssertEqual(event["event_id"] as? String, eventID)
        XCTAssertEqual(event["platform"] as? String, "native")
        XCTAssertEqual(event["level"] as? String, "fatal")
        let exception = try XCTUnwrap(((event["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
        XCTAssertEqual(exception["type"] as? String, "SIGSEGV")
        let frames = try XCTUnwrap((exception["stacktrace"] as? [String: Any])?["frames"] as? [[String: Any]])
        XCTAssertEqual(frames.last?["function"] as? String, "cch_null_dereference", "Sentry frames are outermost first")
        let images = try XCTUnwrap((event["debug_meta"] as? [String: Any])?["images"] as? [[String: Any]])
        let main = try XCTUnwrap(images.first { $0["code_file"] as? String == Self.harness })
        let buildID = try ELFFile(path: Self.harness).buildID
        XCTAssertEqual(main["code_id"] as? String, hexString(buildID))
        XCTAssertEqual(main["debug_id"] as? String, SentryEnvelope.debugID(buildID: buildID))
        let attachmentHeader = try line()
        XCTAssertEqual(attachmentHeader["type"] as? String, "attachment")
        let attachment = payload(try XCTUnwrap(attachmentHeader["length"] as? Int))
        XCTAssertEqual(attachment, [UInt8](try XCTUnwrap(FileManager.default.contents(atPath: path))))
        XCTAssertEqual(cursor, bytes.count)
        // The event id comes from the record's bytes: exporting again gives the same one (Sentry
        // deduplicates a record sent twice). Frames: one per recorded address, no inline expansion.
        XCTAssertEqual(eventID, SentryEnvelope.eventID(rawRecord: attachment))
        let again = directory + "/envelope-again"
        XCTAssertEqual(try inspect(["export", path, "--sentry", "-o", again]).ending, .exited(0))
        let againHeader = try JSONSerialization.jsonObject(with: Data(try XCTUnwrap(FileManager.default.contents(atPath: again)).prefix { $0 != 0x0A }))
        XCTAssertEqual((againHeader as? [String: Any])?["event_id"] as? String, eventID)
        XCTAssertEqual(Set(frames.compactMap { $0["instruction_addr"] as? String }).count, frames.count, "one frame per address")
    }

    /// An open(2) wrapper for LD_PRELOAD: every open of the path in SHIM_RECORD is logged to
    /// SHIM_LOG ("nofollow" or "follow"), and its second open first renames SHIM_SWAP over that
    /// path, as another process could between two reads of it.
    static let openShim = #"""
        #undef _FORTIFY_SOURCE
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <fcntl.h>
        #include <stdarg.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <unistd.h>

        static int opens;

        static void note(const char *path, int flags) {
            const char *record = getenv("SHIM_RECORD"), *log = getenv("SHIM_LOG"), *swap = getenv("SHIM_SWAP");
            if (!record || !path || strcmp(path, record) != 0) return;
            opens += 1;
            if (log) {
                int (*real_open)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
                int fd = real_open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
                if (fd >= 0) {
                    dprintf(fd, "%s\n", (flags & O_NOFOLLOW) ? "nofollow" : "follow");
                    close(fd);
                }
            }
            if (opens == 2 && swap) rename(swap, record);
        }

        #define WRAP(name, type)                                                              \
            int name(const char *path, int flags, ...) {                                      \
                mode_t mode = 0;                                                              \
                if (flags & (O_CREAT | O_TMPFILE)) {                                          \
                    va_list list; va_start(list, flags); mode = va_arg(list, mode_t); va_end(list); \
                }                                                                             \
                note(path, flags);                                                            \
                type real = (type)dlsym(RTLD_NEXT, #name);                                    \
                return real(path, flags, mode);                                               \
            }
        typedef int (*open_t)(const char *, int, ...);
        WRAP(open, open_t)
        WRAP(open64, open_t)

        #define WRAPAT(name)                                                                  \
            int name(int dir, const char *path, int flags, ...) {                             \
                mode_t mode = 0;                                                              \
                if (flags & (O_CREAT | O_TMPFILE)) {                                          \
                    va_list list; va_start(list, flags); mode = va_arg(list, mode_t); va_end(list); \
                }                                                                             \
                note(path, flags);                                                            \
                int (*real)(int, const char *, int, ...) = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, #name); \
                return real(dir, path, flags, mode);                                          \
            }
        WRAPAT(openat)
        WRAPAT(openat64)

        int __open_2(const char *path, int flags) { return open(path, flags); }
        int __open64_2(const char *path, int flags) { return open64(path, flags); }
        int __openat_2(int dir, const char *path, int flags) { return openat(dir, path, flags); }
        int __openat64_2(int dir, const char *path, int flags) { return openat64(dir, path, flags); }
        """#

    /// The open(2) wrapper, compiled with the C compiler into `directory`.
    func openShim(in directory: String) throws -> String {
        let cc = try XCTUnwrap(Tools.find("clang", "cc", "gcc"), "a C compiler")
        try Self.openShim.write(toFile: directory + "/open-shim.c", atomically: true, encoding: .utf8)
        _ = try Tools.output(cc, ["-shared", "-fPIC", "-O1", "-U_FORTIFY_SOURCE", directory + "/open-shim.c", "-o", directory + "/open-shim.so", "-ldl"])
        return directory + "/open-shim.so"
    }

    /// export --sentry reads the record once, through the reader's checks, and attaches the bytes
    /// it parsed: the file replaced by a symbolic link to another file after that read changes
    /// nothing, since it is never opened again.
    func testExportReadsTheRecordOnceThroughTheReadersChecksAndAttachesThoseBytes() throws {
        let directory = try scratch("read-once")
        let path = try crash("null-dereference", into: directory)
        let original = try XCTUnwrap(FileManager.default.contents(atPath: path))
        let outside = try scratch("read-once-outside")
        let secret = Data("not a crash record: a file of someone else's that a symbolic link points to\n".utf8)
        XCTAssertTrue(FileManager.default.createFile(atPath: outside + "/secret", contents: secret))
        try FileManager.default.createSymbolicLink(atPath: outside + "/swap", withDestinationPath: outside + "/secret")
        let shim = try openShim(in: outside)
        let out = outside + "/envelope", log = outside + "/opens"
        let child = try ChildProcess.run(Self.inspect, ["export", path, "--sentry", "-o", out],
                                         environment: ProcessInfo.processInfo.environment.merging([
                                             "LD_PRELOAD": shim, "SHIM_RECORD": path, "SHIM_LOG": log, "SHIM_SWAP": outside + "/swap",
                                         ]) { $1 },
                                         stdout: outside + "/stdout", stderr: outside + "/stderr", timeout: 120)
        let stderr = (try? String(contentsOfFile: outside + "/stderr", encoding: .utf8)) ?? ""
        XCTAssertEqual(child.ending, .exited(0), stderr)
        // The shim saw the reader's one open, with O_NOFOLLOW; there was no second one to swap at.
        XCTAssertEqual(try String(contentsOfFile: log, encoding: .utf8), "nofollow\n", "the record's path was opened once, by the reader")
        XCTAssertEqual(try? FileManager.default.destinationOfSymbolicLink(atPath: outside + "/swap"), outside + "/secret", "never swapped in")
        let envelope = try XCTUnwrap(FileManager.default.contents(atPath: out))
        XCTAssertNotNil(envelope.range(of: original), "the record as read is attached")
        XCTAssertNil(envelope.range(of: secret), "nothing of the other file")
        let header = try XCTUnwrap(try JSONSerialization.jsonObject(with: envelope.prefix { $0 != 0x0A }) as? [String: Any])
        XCTAssertEqual(header["event_id"] as? String, SentryEnvelope.eventID(rawRecord: [UInt8](original)), "the event id is the read bytes' hash")
    }

    /// A symbolic link named like a record is refused in one line, and nothing is written.
    func testExportRefusesASymbolicLinkNamedLikeARecord() throws {
        let directory = try scratch("symlink-record")
        let target = try crash("null-dereference", into: try scratch("symlink-target"))
        let link = directory + "/crash-1700000000000-1-1.ccrec"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        for argument in [link, "crash-1700000000000-1-1"] {
            let out = directory + "/envelope"
            let output = try inspect(["export", argument, "--sentry", "-o", out, "--dir", directory])
            XCTAssertEqual(output.ending, .exited(1), argument)
            XCTAssertEqual(output.stderr, "Error: crash-1700000000000-1-1.ccrec: cannot read crash record \(link): is a symbolic link\n", argument)
            XCTAssertFalse(FileManager.default.fileExists(atPath: out), "nothing written for \(argument)")
        }
    }

    func testAnUnreadableDirectoryOrAnUnwritableOutputIsARuntimeErrorWithoutTheUsageText() throws {
        let directory = try scratch("runtime-errors")
        let missing = try inspect(["list", "--dir", directory + "/no-such-directory"])
        XCTAssertEqual(missing.ending, .exited(1))
        XCTAssertEqual(missing.stderr.split(separator: "\n").count, 1, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("cannot list the directory"), missing.stderr)
        XCTAssertFalse(missing.stderr.contains("Usage:"), missing.stderr)
        let path = try crash("null-dereference", into: directory)
        let unwritable = try inspect(["export", path, "--sentry", "-o", directory + "/no-such-directory/out.envelope"])
        XCTAssertEqual(unwritable.ending, .exited(1))
        XCTAssertTrue(unwritable.stderr.contains("cannot write"), unwritable.stderr)
        XCTAssertFalse(unwritable.stderr.contains("Usage:"), unwritable.stderr)
    }

    func testTheInspectorDoesNotLinkTheSignalHandlerOrItsLibcWrappers() throws {
        // crash-inspect only reads records (CrashRecordFormat): no handler, no process-wide
        // pthread_create of ours. The harness, which starts CrashCapture, has them; no one has a
        // dl_iterate_phdr of ours any more (the unwinder reads the crash's own image table).
        let nm = try XCTUnwrap(["/opt/swift/usr/bin/llvm-nm", "/usr/bin/llvm-nm", "/usr/bin/nm"].first { FileManager.default.isExecutableFile(atPath: $0) })
        func definedSymbols(_ binary: String) throws -> Set<String> {
            let out = try scratch("nm") + "/symbols"
            let run = try ChildProcess.run(nm, ["--defined-only", binary], stdout: out, timeout: 120)
            XCTAssertEqual(run.ending, .exited(0))
            return Set(try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) })
        }
        let ours = ["cc_install", "pthread_create"]
        let inspector = try definedSymbols(Self.inspect)
        XCTAssertTrue(ours.allSatisfy { !inspector.contains($0) }, "\(ours.filter { inspector.contains($0) })")
        XCTAssertFalse(inspector.contains { $0.hasPrefix("cc__") })
        let harness = try definedSymbols(Self.harness)
        XCTAssertTrue(ours.allSatisfy { harness.contains($0) }, "the check itself sees them where they are")
        XCTAssertFalse(harness.contains("dl_iterate_phdr"), "the harness defines dl_iterate_phdr")
    }

    func testHelpTextIsPinned() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        for (name, arguments) in [("help.txt", ["--help"]), ("help-show.txt", ["show", "--help"]), ("help-list.txt", ["list", "--help"])] {
            let output = try inspect(arguments)
            XCTAssertEqual(output.ending, .exited(0))
            let pinned = try String(contentsOf: fixtures.appendingPathComponent(name), encoding: .utf8)
            XCTAssertEqual(output.stdout, pinned, "crash-inspect \(arguments.joined(separator: " ")) changed; update Fixtures/\(name) if intended")
        }
    }
}
