// RecordRedactionTests.swift — the minimised copy of a crash record (what the Sentry sink sends under CrashDataPolicy), on real records: a
// crash of the harness seeded with four known secrets (a buffer on the crashing thread's stack, a
// breadcrumb, the login id in the compensating $AppEnd, the directory the executable ran from),
// redacted under each policy, read back with the reader and crash-inspect; cut, torn and garbage
// input; the path sanitiser's rules.
import CCrashRecordLayout
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

@testable import CrashRecordFormat

#if canImport(Glibc)
import Glibc
#endif

final class RecordRedactionTests: XCTestCase {
    /// One crash of the harness per test process, holding four known secrets (TestSupport's
    /// `SecretCrash`: a stack buffer, a breadcrumb, the login id, the executable's directory).
    nonisolated(unsafe) static var crashed: SecretCrash?
    static let secrets = SecretCrash("r\(getpid())")

    func secretCrash() throws -> (bytes: [UInt8], path: String, binaryDirectory: String) {
        if Self.crashed == nil { Self.crashed = try Self.secrets.crash(in: try Scratch.directory("redaction")) }
        let crashed = try XCTUnwrap(Self.crashed)
        return (crashed.bytes, crashed.recordPath, crashed.binaryDirectory)
    }

    /// The record a table scenario leaves (`crash-harness run <scenario> --dir D`).
    func scenarioRecord(_ scenario: String) throws -> [UInt8] {
        let directory = try Scratch.directory("redaction-\(scenario)")
        let child = try ChildProcess.run(BuiltProducts.harness, ["run", scenario, "--dir", directory],
                                         environment: ["SWIFT_BACKTRACE": "enable=no"], timeout: 60)
        XCTAssertNotEqual(child.ending, .exited(0), scenario)
        let names = try RecordFileName.names(in: directory)
        return try CrashRecordReader.readBytes(path: directory + "/" + (try XCTUnwrap(names.first)))
    }

    func contains(_ bytes: [UInt8], _ text: String) -> Bool { SecretCrash.contains(bytes, text) }

    /// `record` as the default redaction must read it back: no memory, breadcrumbs or $AppEnd,
    /// paths and last words sanitised, everything else (signal, threads and their frames,
    /// registers and async chains, images' bases, sizes and build ids) as it was.
    func expectedDefault(_ original: CrashRecord, sectionCount: Int) -> CrashRecord {
        var expected = original
        expected.memory = []
        expected.breadcrumbs = []
        expected.appEndJSON = nil
        expected.executablePath = original.executablePath.map { String(decoding: PathSanitizer.sanitizePath(Array($0.utf8)), as: UTF8.self) }
        expected.fatalMessage = original.fatalMessage.map(PathSanitizer.sanitize)
        expected.abortMessage = original.abortMessage.map(PathSanitizer.sanitize)
        for index in expected.images.indices {
            expected.images[index].path = String(decoding: PathSanitizer.sanitizePath(Array(original.images[index].path.utf8)), as: UTF8.self)
        }
        // The host's texts (the machine's memory and load, the cgroup's) go only with every opt-in.
        var hostTexts = 0
        if var resources = original.resources {
            hostTexts = [resources.machineMemory, resources.loadAverage, resources.cgroupDirectory, resources.cgroupCurrent,
                         resources.cgroupMax, resources.cgroupEvents].compactMap { $0 }.count
            resources.machineMemory = nil
            resources.loadAverage = nil
            resources.cgroupDirectory = nil
            resources.cgroupCurrent = nil
            resources.cgroupMax = nil
            resources.cgroupEvents = nil
            expected.resources = resources
        }
        expected.sectionCount = sectionCount - hostTexts
        return expected
    }

    // MARK: Secrets

    func testTheDefaultCopyHoldsNoSecretAndEachOptInBringsBackItsOwn() throws {
        let crash = try secretCrash()
        let secrets = Self.secrets
        let settings: [(String, RecordRedaction, [String])] = [
            ("default", RecordRedaction(), []),
            // Raw memory is whatever the process held (checked below): not only the stack buffer.
            ("rawMemory", RecordRedaction(rawMemory: true), [secrets.stack]),
            ("breadcrumbs", RecordRedaction(breadcrumbs: true), [secrets.breadcrumb]),
            ("identity", RecordRedaction(identity: true), [secrets.login]),
            ("fullPaths", RecordRedaction(fullPaths: true), [secrets.path]),
            ("everything", RecordRedaction.everything, secrets.all),
        ]
        for (name, policy, expected) in settings {
            let copy = policy.apply(to: crash.bytes)
            XCTAssertTrue(try CrashRecordReader.parse(copy).isComplete, name)
            if name == "rawMemory" {
                // The crashed thread's stack holds the buffer, and may hold anything else the
                // process had there: here the executable's path too (argv and the auxiliary vector
                // at the top of the main thread's stack). Only the MEMORY sections brought it back.
                XCTAssertTrue(contains(copy, secrets.stack), name)
                XCTAssertFalse(contains(copy, secrets.breadcrumb), name)
                let memory = try CrashRecordReader.parse(copy).memory.flatMap(\.bytes)
                for secret in secrets.all where contains(copy, secret) {
                    XCTAssertTrue(contains(memory, secret), "\(name): \(secret) outside the memory sections")
                }
                continue
            }
            for secret in secrets.all {
                XCTAssertEqual(contains(copy, secret), expected.contains(secret), "\(name): \(secret)")
            }
        }
        // Every opt-in: the record as the reader accepts it, byte for byte.
        XCTAssertEqual(settings.last?.1.apply(to: crash.bytes), crash.bytes)
    }

    func testTheDefaultCopyReadsAsTheOriginalWithoutUserData() throws {
        let crash = try secretCrash()
        let original = try CrashRecordReader.parse(crash.bytes)
        let copy = RecordRedaction().apply(to: crash.bytes)
        let redacted = try CrashRecordReader.parse(copy)
        XCTAssertTrue(original.isComplete)
        XCTAssertTrue(redacted.isComplete)
        XCTAssertFalse(original.memory.isEmpty)
        XCTAssertFalse(original.breadcrumbs.isEmpty)
        XCTAssertNotNil(original.appEndJSON)
        let dropped = original.memory.count + original.breadcrumbs.count + 1
        let expected = expectedDefault(original, sectionCount: original.sectionCount - dropped)
        XCTAssertLessThan(expected.sectionCount, original.sectionCount - dropped, "the host's texts are dropped too")
        XCTAssertEqual(redacted.sectionCount, expected.sectionCount)
        XCTAssertEqual(redacted, expected)
        // What stays is what grouping and symbolication need, spelled out.
        XCTAssertEqual(redacted.signal, original.signal)
        XCTAssertEqual(redacted.crashedThread?.frames, original.crashedThread?.frames)
        XCTAssertFalse(redacted.crashedThread?.frames.isEmpty ?? true)
        XCTAssertEqual(redacted.registers, original.registers)
        XCTAssertEqual(redacted.threads.map(\.asyncChains), original.threads.map(\.asyncChains))
        XCTAssertEqual(redacted.images.map(\.base), original.images.map(\.base))
        XCTAssertEqual(redacted.images.map(\.size), original.images.map(\.size))
        XCTAssertEqual(redacted.images.map(\.buildID), original.images.map(\.buildID))
        let executable = try XCTUnwrap(redacted.executablePath)
        XCTAssertTrue(executable.hasSuffix("/*/crash-harness"), executable)
        XCTAssertTrue(redacted.images.contains { $0.path == executable }, "the main image's path is sanitised alike")
        let sizes = "secret crash: \(crash.bytes.count) bytes, default redaction \(copy.count) bytes"
        print("RecordRedactionTests size: \(sizes)")
        XCTAssertLessThan(copy.count, crash.bytes.count / 2, sizes)
    }

    /// Table scenarios: the copy reads as the original without user data, and the sizes (printed)
    /// of what the default leaves.
    func testScenarioRecordsRedactToTheirFramesAndImages() throws {
        for scenario in ["null-dereference", "task-crash", "c-assert"] {
            let bytes = try scenarioRecord(scenario)
            let original = try CrashRecordReader.parse(bytes)
            let copy = RecordRedaction().apply(to: bytes)
            let redacted = try CrashRecordReader.parse(copy)
            XCTAssertEqual(redacted.isComplete, original.isComplete, scenario)
            let dropped = original.memory.count + original.breadcrumbs.count + (original.appEndJSON == nil ? 0 : 1)
            XCTAssertEqual(redacted, expectedDefault(original, sectionCount: original.sectionCount - dropped), scenario)
            print("RecordRedactionTests size: \(scenario): \(bytes.count) bytes, default redaction \(copy.count) bytes")
            if scenario == "c-assert" {
                // glibc's assert message names the source file by its full path: the directories go,
                // the file, line and assertion stay.
                XCTAssertTrue(original.abortMessage?.contains(Oracles.repositoryRoot + "/Sources/CCrashScenarios/scenarios.c:") ?? false,
                              original.abortMessage ?? "no abort message")
                let message = try XCTUnwrap(redacted.abortMessage)
                XCTAssertTrue(message.contains("/*/scenarios.c:") && message.contains("Assertion"), message)
                XCTAssertFalse(message.contains(Oracles.repositoryRoot), message)
            }
        }
    }

    /// A server's crash: the requests in flight are kept (ids, methods, routes, paths, traces),
    /// their query and key/values zeroed unless kept; the copy reads as the original but for
    /// those fields, and their bytes are gone from it.
    func testARequestRecordReadsAsTheOriginalButForTheQueryAndKeyValuesItDoesNotKeep() throws {
        let bytes = try scenarioRecord("request-with-query")
        let original = try CrashRecordReader.parse(bytes)
        let requests = try XCTUnwrap(original.requests)
        let crashed = try XCTUnwrap(requests.crashed)
        XCTAssertEqual(crashed.requestID, "req-12")
        let query = "token=s3cr3t-query-token&page=2"
        XCTAssertEqual(crashed.query, query)
        XCTAssertEqual(requests.others.count, 4)
        XCTAssertTrue(([crashed] + requests.others).allSatisfy { $0.attributes.contains { $0.key == "attached_tid" } })
        let dropped = original.memory.count + original.breadcrumbs.count + (original.appEndJSON == nil ? 0 : 1)
        for (name, policy) in [("default", RecordRedaction()), ("query", RecordRedaction(requestQuery: true)),
                               ("attributes", RecordRedaction(requestAttributes: true)),
                               ("both", RecordRedaction(requestQuery: true, requestAttributes: true))] {
            let copy = policy.apply(to: bytes)
            let redacted = try CrashRecordReader.parse(copy)
            var expected = expectedDefault(original, sectionCount: original.sectionCount - dropped)
            func blank(_ request: CrashRequest) -> CrashRequest {
                var request = request
                if !policy.requestQuery { request.query = "" }
                if !policy.requestAttributes { request.attributes = [] }
                return request
            }
            var blanked = requests
            blanked.crashed = blanked.crashed.map(blank)
            blanked.others = blanked.others.map(blank)
            expected.requests = blanked
            XCTAssertEqual(redacted, expected, name)
            XCTAssertEqual(contains(copy, "s3cr3t-query-token"), policy.requestQuery, name)
            XCTAssertEqual(contains(copy, "attached_tid="), policy.requestAttributes, name)
            // Kept whatever the policy: what tells the crash's request apart.
            XCTAssertTrue(contains(copy, "req-12") && contains(copy, "/orders/12") && contains(copy, "/orders/{id}"), name)
        }
        XCTAssertEqual(RecordRedaction.everything.apply(to: bytes), bytes)
    }

    /// crash-inspect shows the same symbolicated crashed thread for the copy as for the original,
    /// once told where the executable is (`--symbols`: its path in the copy is sanitised; the
    /// system's libraries keep theirs).
    func testCrashInspectShowsTheSameCrashedThreadForTheCopy() throws {
        let crash = try secretCrash()
        let copyPath = try Scratch.directory("redaction-inspect") + "/crash-1-2-3.ccrec"
        try Data(RecordRedaction().apply(to: crash.bytes)).write(to: URL(fileURLWithPath: copyPath))
        func crashedFrames(_ arguments: [String]) throws -> [String] {
            let output = try Tools.output(BuiltProducts.inspect, ["show"] + arguments + ["--json"])
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
            let threads = try XCTUnwrap(object["threads"] as? [[String: Any]])
            let crashed = try XCTUnwrap(threads.first { $0["crashed"] as? Bool == true })
            return try XCTUnwrap(crashed["frames"] as? [[String: Any]]).map { "\($0["address"] ?? "") \($0["symbol"] ?? "") \($0["line"] ?? "")" }
        }
        let original = try crashedFrames([crash.path, "--symbols", crash.binaryDirectory])
        let redacted = try crashedFrames([copyPath, "--symbols", crash.binaryDirectory])
        XCTAssertEqual(redacted, original)
        XCTAssertTrue(original.contains { $0.contains("Emit.crash(holding") }, "\(original)")
    }

    // MARK: Cut, torn and garbage records

    func testACutOrTornRecordRedactsToAValidPartialCopy() throws {
        let crash = try secretCrash()
        let original = try CrashRecordReader.parse(crash.bytes)
        // Every cut is short of the whole record (a record of 97 × n bytes once made the last "cut" whole).
        var cuts = Array(stride(from: 0, to: crash.bytes.count, by: 97))
        cuts.append(crash.bytes.count - 1)
        for cut in cuts {
            let bytes = Array(crash.bytes.prefix(cut))
            let copy = RecordRedaction().apply(to: bytes)
            guard let cutRecord = try? CrashRecordReader.parse(bytes) else {
                XCTAssertEqual(copy, [], "a header the reader refuses leaves nothing (cut at \(cut))")
                continue
            }
            let redacted = try CrashRecordReader.parse(copy)
            XCTAssertFalse(redacted.isComplete, "cut at \(cut)")
            XCTAssertFalse(contains(copy, Self.secrets.stack) || contains(copy, Self.secrets.path), "cut at \(cut)")
            let dropped = cutRecord.memory.count + cutRecord.breadcrumbs.count + (cutRecord.appEndJSON == nil ? 0 : 1)
            var expected = expectedDefault(cutRecord, sectionCount: cutRecord.sectionCount - dropped)
            expected.completeness = redacted.completeness  // the reason names the copy's offsets
            XCTAssertEqual(redacted, expected, "cut at \(cut)")
        }
        // A torn section in the middle: the copy stops where the reader stops (no END), and keeps
        // what came before.
        let thread = try XCTUnwrap(CrashRecordReader.parseWithLayout(crash.bytes).layout.sections.first { $0.type == CC_SEC_THREAD.rawValue })
        var torn = crash.bytes
        torn[thread.start + 8 + 20] ^= 0xFF
        let redacted = try CrashRecordReader.parse(RecordRedaction().apply(to: torn))
        XCTAssertFalse(redacted.isComplete)
        XCTAssertTrue(redacted.threads.isEmpty)
        XCTAssertEqual(redacted.signal, original.signal)
    }

    func testGarbageAndDamagedRecordsNeverTrap() throws {
        let crash = try secretCrash()
        var random = SplitMix64(seed: 21)
        for _ in 0 ..< 300 {
            var bytes = crash.bytes
            for _ in 0 ..< 1 + Int(random.next() % 8) {
                bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
            }
            let copy = RecordRedaction().apply(to: bytes)
            if !copy.isEmpty { XCTAssertNoThrow(try CrashRecordReader.parse(copy)) }
            _ = RecordRedaction.everything.apply(to: bytes)
        }
        for length in [0, 1, 31, 32, 33, 100, 5000] {
            let garbage = (0 ..< length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            XCTAssertEqual(RecordRedaction().apply(to: garbage), [])
            // A valid header followed by garbage: a copy of the header, no sections.
            let headed = Array(crash.bytes.prefix(32)) + garbage
            let headedCopy = RecordRedaction().apply(to: headed)
            XCTAssertEqual(Array(headedCopy.prefix(32)), Array(headed.prefix(32)))
            XCTAssertLessThanOrEqual(try CrashRecordReader.parse(headedCopy).sectionCount, try CrashRecordReader.parse(headed).sectionCount)
        }
    }

    /// Section types and STRING keys of a newer writer: nobody can say what they hold, so only
    /// the everything-on copy keeps them; a header padded beyond 32 bytes is copied as is.
    func testWhatThisReaderDoesNotKnowIsLeftOutUnlessEverythingIsKept() throws {
        var builder = RecordBuilder()
        builder.headerPadding = 8
        builder.crash(signo: SIGSEGV, code: 1, faultAddress: 0, senderPID: 0, senderUID: 0, flags: 0)
        builder.raw(99, Array("CRASHCAPTURE-SECRET-unknown-type".utf8))
        builder.string(cc_string_key(rawValue: 42), "CRASHCAPTURE-SECRET-unknown-key")
        builder.string(CC_STR_APP_NAME, "demo")
        builder.end()
        let bytes = builder.build()
        let copy = RecordRedaction().apply(to: bytes)
        XCTAssertFalse(contains(copy, "CRASHCAPTURE-SECRET"))
        XCTAssertEqual(Array(copy.prefix(40)), Array(bytes.prefix(40)))
        let redacted = try CrashRecordReader.parse(copy)
        XCTAssertEqual(redacted.completeness, .complete)
        XCTAssertEqual(redacted.sectionCount, 3)
        XCTAssertEqual(redacted.notes, [])
        XCTAssertEqual(redacted.appName, "demo")
        XCTAssertEqual(RecordRedaction.everything.apply(to: bytes), bytes)
        // Trailing bytes after END are not copied.
        XCTAssertEqual(RecordRedaction.everything.apply(to: bytes + [1, 2, 3]), bytes)
    }

    // MARK: The path sanitiser

    func testPathsLoseTheirUserSpecificDirectoriesAndKeepTheirFileNames() {
        let cases: [(String, String)] = [
            ("/home/alice/src/app/.build/debug/app", "/home/USER/*/app"),
            ("/home/alice/app", "/home/USER/app"),
            ("/home/alice", "/home/USER"),
            ("/Users/bob/Projects/Tool.app/Contents/MacOS/Tool", "/Users/USER/*/Tool"),
            ("/var/home/carol/bin/svc", "/var/home/USER/*/svc"),
            ("/root/deploy/current/server", "/root/*/server"),
            ("/tmp/CRASHCAPTURE-SECRET-x/crash-harness", "/tmp/*/crash-harness"),
            ("/srv/customer-acme/releases/42/bin/api", "/srv/*/api"),
            ("/tmp/app", "/tmp/app"),
            ("/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
            ("/opt/swift/usr/lib/swift/linux/libswiftCore.so", "/opt/swift/usr/lib/swift/linux/libswiftCore.so"),
            ("/lib64/ld-linux-x86-64.so.2", "/lib64/ld-linux-x86-64.so.2"),
            ("/home/alice/My Projects/app (deleted)", "/home/USER/*/app (deleted)"),
            ("~/work/secret/app", "~/*/app"),
            ("[vdso]", "[vdso]"),
            ("", ""),
            ("/", "/"),
        ]
        for (path, expected) in cases {
            XCTAssertEqual(String(decoding: PathSanitizer.sanitizePath(Array(path.utf8)), as: UTF8.self), expected, path)
        }
    }

    func testPathsInTextAreSanitisedAndTheRestKept() {
        XCTAssertEqual(PathSanitizer.sanitize("crash-harness: /home/alice/src/x.c:12: main: Assertion `0' failed."),
                       "crash-harness: /home/USER/*/x.c:12: main: Assertion `0' failed.")
        XCTAssertEqual(PathSanitizer.sanitize("Fatal error: cannot open '/srv/acme/data/users.db' (errno 2)"),
                       "Fatal error: cannot open '/srv/*/users.db' (errno 2)")
        XCTAssertEqual(PathSanitizer.sanitize("CrashScenarios/Scenarios.swift:42: Fatal error: a/b/c and 1/2"),
                       "CrashScenarios/Scenarios.swift:42: Fatal error: a/b/c and 1/2")
        XCTAssertEqual(PathSanitizer.sanitize("path=/tmp/a/b/c,next"), "path=/tmp/*/c,next")
        XCTAssertEqual(PathSanitizer.sanitize("héllo /home/zoë/ß/ü.swift"), "héllo /home/USER/*/ü.swift")
    }
}
