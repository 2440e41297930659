// SentryEnvelopeTests.swift — envelopes of real crashes, read by Sentry's own code: sentry_sdk parses
// them, sentry_relay normalizes the event, symbolic computes the images' ids from the same files.
import HostFacts
import SensorsEvents
import CrashRecordFormat
import CrashSentry
import CrashSymbolication
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class SentryEnvelopeTests: XCTestCase {
    // MARK: helpers

    // crash(_:into:) and check(_:in:): SentryTestSupport.swift.

    /// symbolic's ids of files: path -> ["code_id": String or NSNull, "debug_id": String].
    func symbolicIDs(_ paths: [String]) throws -> [String: [String: Any]] {
        let output = try Oracles.run("symbolic_ids.py", paths)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: [String: Any]])
    }

    func sha256(_ path: String) throws -> String {
        let tool = try XCTUnwrap(Tools.find("sha256sum"), "sha256sum")
        return String(try Tools.output(tool, [path]).prefix(64))
    }

    func address(_ value: Any?) -> UInt64? {
        guard let text = value as? String, text.hasPrefix("0x") else { return nil }
        return UInt64(text.dropFirst(2), radix: 16)
    }

    /// Each thread's frames with local function names, from the Symbolicator (llvm-symbolizer).
    func frames(_ record: CrashRecord) throws -> [Int32: [ThreadFrame]] {
        let symbolicator = try Symbolicator()
        return Dictionary(record.threads.map { ($0.tid, symbolicator.threadFrames(of: $0, images: record.images)) }, uniquingKeysWith: { a, _ in a })
    }

    // MARK: real crashes

    func testEnvelopesOfRealCrashesAreWhatSentryExpects() throws {
        let uname = try Tools.output(try XCTUnwrap(Tools.find("uname")), ["-r"]).trimmingCharacters(in: .whitespacesAndNewlines)
        let machine = try Tools.output(try XCTUnwrap(Tools.find("uname")), ["-m"]).trimmingCharacters(in: .whitespacesAndNewlines)
        var checkedPaths: [String: (codeID: Any?, debugID: Any?)] = [:]
        for (scenario, signal) in [("null-dereference", SIGSEGV), ("fatal-error", -1), ("stack-overflow-thread", SIGSEGV),
                                   ("abort", SIGABRT), ("secondary-thread", SIGSEGV)] {
            let directory = try Scratch.directory("sentry-" + scenario)
            let path = try crash(scenario, into: directory)
            let raw = [UInt8](try XCTUnwrap(FileManager.default.contents(atPath: path)))
            let record = try CrashRecordReader.read(path: path)
            let local = try frames(record)
            let sentAt = Clock.wallNanoseconds() / 1_000_000 * 1_000_000
            let bytes = SentryEnvelope.make(record: record, rawRecord: raw, fileName: (path as NSString).lastPathComponent,
                                            eventID: SentryEnvelope.eventID(rawRecord: raw), sentAt: sentAt, frames: { local[$0.tid] ?? [] })
            let summary = try check(bytes, in: directory)
            XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(scenario): \(summary["errors"] ?? "")")

            // Envelope header: event_id from the record's bytes (sha256sum's digest), sent_at as passed.
            let headers = try XCTUnwrap(summary["headers"] as? [String: Any])
            let digest = try sha256(path)
            XCTAssertEqual(headers["event_id"] as? String, String(digest.prefix(32)), scenario)
            let sent = ISO8601DateFormatter()
            sent.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            XCTAssertEqual(sent.date(from: headers["sent_at"] as? String ?? "")?.timeIntervalSince1970 ?? 0, Double(sentAt) / 1e9, accuracy: 0.0005, scenario)

            // The attachment is the record file, byte for byte.
            let items = try XCTUnwrap(summary["items"] as? [[String: Any]])
            XCTAssertEqual(items.map { $0["type"] as? String }, ["event", "attachment"], scenario)
            XCTAssertEqual(items[1]["length"] as? Int, raw.count, scenario)
            XCTAssertEqual(items[1]["sha256"] as? String, digest, scenario)
            XCTAssertEqual((items[1]["headers"] as? [String: Any])?["filename"] as? String, (path as NSString).lastPathComponent)

            let event = try XCTUnwrap(summary["normalized"] as? [String: Any])
            XCTAssertEqual(event["event_id"] as? String, headers["event_id"] as? String)
            let exception = try XCTUnwrap(((event["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
            let mechanism = try XCTUnwrap(exception["mechanism"] as? [String: Any])
            XCTAssertEqual(mechanism["type"] as? String, "signalhandler")
            XCTAssertEqual(mechanism["handled"] as? Bool, false)
            let meta = try XCTUnwrap((mechanism["meta"] as? [String: Any])?["signal"] as? [String: Any])
            let recordedSignal = try XCTUnwrap(record.signal)
            if signal > 0 { XCTAssertEqual(recordedSignal.number, signal, scenario) }
            XCTAssertEqual(meta["number"] as? Int, Int(recordedSignal.number), scenario)
            XCTAssertEqual(meta["name"] as? String, recordedSignal.name, scenario)
            XCTAssertEqual(exception["type"] as? String, recordedSignal.name)

            // One frame per recorded address, outermost first, addresses exactly as recorded.
            let crashed = try XCTUnwrap(record.crashedThread)
            XCTAssertEqual(exception["thread_id"] as? Int, Int(crashed.tid))
            let stacktrace = try XCTUnwrap(exception["stacktrace"] as? [String: Any])
            let frames = try XCTUnwrap(stacktrace["frames"] as? [[String: Any]])
            XCTAssertEqual(frames.count, crashed.frames.count, scenario)
            XCTAssertEqual(frames.map { address($0["instruction_addr"]) }, crashed.frames.reversed().map { Optional($0) }, scenario)
            XCTAssertTrue(crashed.framesFromSignalContext, scenario)
            XCTAssertEqual(stacktrace["instruction_addr_adjustment"] as? String, "all_but_first", scenario)
            XCTAssertNotNil(stacktrace["registers"], scenario)
            // A function name at most once per address: the physical function, never an inlined one,
            // in the short form the toolchain's `swift demangle --simplified` prints, the full name as raw_function.
            let crashedLocal = try XCTUnwrap(local[crashed.tid]).reversed().map { $0 }
            let mangled = crashedLocal.compactMap { $0.symbols.last?.mangledSymbol }
            let simplified = Dictionary(zip(mangled, try simplifiedByTheToolchain(mangled)), uniquingKeysWith: { a, _ in a })
            for (frame, mine) in zip(frames, crashedLocal) {
                guard let function = frame["function"] as? String else { continue }
                XCTAssertEqual(function, mine.symbols.last?.mangledSymbol.flatMap { simplified[$0] }, scenario)
                XCTAssertEqual(frame["raw_function"] as? String ?? function, mine.symbols.last?.symbol, scenario)
            }
            XCTAssertGreaterThan(frames.filter { $0["function"] != nil }.count, 3, scenario)
            if scenario == "null-dereference" {
                XCTAssertEqual(frames.last?["function"] as? String, "cch_null_dereference", "the crashing function is the last frame")
            }
            // Threads: the crashed one marked, each thread's frames one per address too.
            let threads = try XCTUnwrap((event["threads"] as? [String: Any])?["values"] as? [[String: Any]])
            XCTAssertEqual(threads.count, record.threads.count, scenario)
            for (value, thread) in zip(threads, record.threads) {
                XCTAssertEqual(value["id"] as? Int, Int(thread.tid))
                XCTAssertEqual(value["crashed"] as? Bool, thread.crashed)
                let threadFrames = ((value["stacktrace"] as? [String: Any])?["frames"] as? [[String: Any]]) ?? []
                XCTAssertEqual(threadFrames.map { address($0["instruction_addr"]) }, thread.frames.reversed().map { Optional($0) }, scenario)
            }
            if scenario == "secondary-thread" || scenario == "stack-overflow-thread" {
                XCTAssertNotEqual(crashed.tid, record.process?.pid, "\(scenario) crashes off the main thread")
            }

            // contexts: os from uname as sentry-native fills it, arch in Sentry's naming.
            let contexts = try XCTUnwrap(event["contexts"] as? [String: Any])
            let os = try XCTUnwrap(contexts["os"] as? [String: Any])
            XCTAssertEqual(os["name"] as? String, "Linux")
            XCTAssertEqual(os["kernel_version"] as? String, uname)
            let version = try XCTUnwrap(os["version"] as? String)
            XCTAssertTrue(uname.hasPrefix(version), "\(version) of \(uname)")
            XCTAssertEqual(version.split(separator: ".").count, 3, version)
            if let build = os["build"] as? String {
                XCTAssertEqual(version + String(uname.dropFirst(version.count).prefix(1)) + build, uname)
            } else {
                XCTAssertEqual(version, uname)
            }
            XCTAssertEqual((contexts["device"] as? [String: Any])?["arch"] as? String, machine == "aarch64" ? "arm64" : machine)
            // The process's resources, as Relay keeps them: the device's CPUs and processor, the
            // app's memory, and the resources context (descriptors and their limit, threads).
            if let resources = record.resources {
                let device = try XCTUnwrap(contexts["device"] as? [String: Any])
                XCTAssertEqual(device["processor_count"] as? Int, resources.cpuCount, scenario)
                XCTAssertEqual(device["cpu_description"] as? String, resources.cpuDescription, scenario)
                XCTAssertEqual((contexts["app"] as? [String: Any])?["app_memory"] as? Int, resources.residentBytes.map { Int($0) }, scenario)
                let kept = try XCTUnwrap(contexts["resources"] as? [String: Any], "\(scenario): no resources context")
                XCTAssertEqual(kept["open_descriptors"] as? Int, resources.openDescriptors, scenario)
                XCTAssertEqual(kept["threads"] as? Int, resources.threads, scenario)
            }

            // Debug images: the ids symbolic computes from the same files; the vdso as linux-gate.so.
            let images = try XCTUnwrap((event["debug_meta"] as? [String: Any])?["images"] as? [[String: Any]])
            XCTAssertEqual(images.count, record.images.count, "every image of these records has a build-id")
            XCTAssertFalse(images.contains { $0["code_file"] as? String == "[vdso]" })
            if record.images.contains(where: { $0.path == "[vdso]" }) {
                XCTAssertTrue(images.contains { $0["code_file"] as? String == "linux-gate.so" })
            }
            let files = images.compactMap { $0["code_file"] as? String }.filter { $0.hasPrefix("/") && checkedPaths[$0] == nil }
            if !files.isEmpty {
                for (file, ids) in try symbolicIDs(files) {
                    XCTAssertNil(ids["error"], file)
                    checkedPaths[file] = (ids["code_id"], ids["debug_id"])
                }
            }
            for image in images {
                guard let file = image["code_file"] as? String, let expected = checkedPaths[file] else { continue }
                XCTAssertEqual(image["code_id"] as? String, expected.codeID as? String, file)
                XCTAssertEqual(image["debug_id"] as? String, expected.debugID as? String, file)
            }
            XCTAssertTrue(images.contains { $0["code_file"] as? String == record.images.first { $0.isMainExecutable }?.path })
        }
        XCTAssertGreaterThan(checkedPaths.count, 3)
    }

    // MARK: async frames

    /// A crash at the end of an async chain: the stack Sentry gets continues with the async
    /// callers (as Swift's backtracer shows them), every address already where Sentry must look
    /// it up (`instruction_addr_adjustment: none`: return addresses moved to their call, resume
    /// points as they are), Relay normalizes it without an error, and Sentry's `symbolic` names
    /// each address in the harness as the function our Symbolicator names. The uploader's path
    /// (no symbolizer: async frames told from the images' symbol tables) sends the same addresses.
    func testAnAsyncCrashsStackCarriesItsAsyncCallersAtAddressesSentryLooksUpAsTheyAre() throws {
        let directory = try Scratch.directory("sentry-async")
        let path = try crash("async-task-chain", into: directory)
        let raw = [UInt8](try XCTUnwrap(FileManager.default.contents(atPath: path)))
        let record = try CrashRecordReader.read(path: path)
        let crashed = try XCTUnwrap(record.crashedThread)
        let local = try frames(record)
        let mine = try XCTUnwrap(local[crashed.tid])
        XCTAssertGreaterThanOrEqual(mine.filter { $0.kind == .asyncResumePoint }.count, 4)
        let bytes = SentryEnvelope.make(record: record, rawRecord: raw, fileName: (path as NSString).lastPathComponent,
                                        eventID: SentryEnvelope.eventID(rawRecord: raw), sentAt: Clock.wallNanoseconds(), frames: { local[$0.tid] ?? [] })
        let summary = try check(bytes, in: directory)
        XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(summary["errors"] ?? "")")
        let event = try XCTUnwrap(summary["normalized"] as? [String: Any])
        let exception = try XCTUnwrap(((event["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first)
        let stacktrace = try XCTUnwrap(exception["stacktrace"] as? [String: Any])
        XCTAssertEqual(stacktrace["instruction_addr_adjustment"] as? String, "none")
        let sent = try XCTUnwrap(stacktrace["frames"] as? [[String: Any]]).reversed().map { address($0["instruction_addr"]) }
        XCTAssertEqual(sent, mine.map { Optional($0.lookupAddress) }, "pc as is, return addresses less one, resume points as is")

        // symbolic, at the addresses as sent (relative to the harness's base: a PIE).
        let harness = try XCTUnwrap(record.images.first { $0.isMainExecutable })
        let inHarness = mine.filter { harness.contains($0.address) }
        let answer = try Oracles.run("symbolic_lookup.py", [harness.path] + inHarness.map { "0x" + String($0.lookupAddress - harness.base, radix: 16) })
        let lookups = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])?["lookups"] as? [[String: Any]])
        XCTAssertEqual(lookups.count, inHarness.count)
        var asyncNamed = 0
        for (lookup, frame) in zip(lookups, inHarness) {
            let theirs = (lookup["frames"] as? [[String: Any]] ?? []).last?["symbol"] as? String
            XCTAssertEqual(theirs, frame.symbols.last?.mangledSymbol, "\(frame.kind) 0x\(String(frame.address, radix: 16))")
            if frame.kind == .asyncResumePoint, theirs.map({ SwiftAsyncSymbol.isAsyncFunction(mangledName: $0) }) == true { asyncNamed += 1 }
        }
        XCTAssertGreaterThanOrEqual(asyncNamed, 4, "symbolic names the resume points async partial functions too")

        // The sinks' and the uploader's envelope (no symbolizer): the same frames at the same
        // addresses, each named from the images' own symbol tables as symbolic names it (the
        // function, the toolchain's short form of it), and the program's own frames in_app.
        let plain = SentryEnvelope.event(record: record, eventID: SentryEnvelope.eventID(rawRecord: raw))
        let plainFrames = try XCTUnwrap(plain.exception.values.first?.stacktrace?.frames).reversed().map { $0 }
        XCTAssertEqual(plainFrames.map { address($0.instructionAddr) }, sent)
        let inHarnessSent = zip(plainFrames, mine).filter { harness.contains($0.1.address) }.map(\.0)
        let theirNames = lookups.map { ($0["frames"] as? [[String: Any]] ?? []).last?["symbol"] as? String ?? "" }
        let short = try simplifiedByTheToolchain(theirNames)
        for ((frame, theirs), shortName) in zip(zip(inHarnessSent, theirNames), short) where !theirs.isEmpty {
            XCTAssertEqual(frame.symbol ?? frame.function, theirs, frame.instructionAddr)
            XCTAssertEqual(frame.function, shortName, frame.instructionAddr)
            XCTAssertNotNil(frame.symbolAddr, frame.instructionAddr)
        }
        // The scenario's own functions (asyncLevel1…3, handleRequest) are the app's; the runtime's are not.
        XCTAssertGreaterThanOrEqual(plainFrames.filter { $0.inApp == true && ($0.function ?? "").hasPrefix("asyncLevel") }.count, 3)
        XCTAssertTrue(plainFrames.filter { $0.package.map { $0.contains("libswift") } ?? false }.allSatisfy { $0.inApp == false })
        // Off in the data policy: addresses and images only.
        var unnamed = plain
        RecordMinimisation(functionNames: false).apply(to: &unnamed)
        XCTAssertTrue(unnamed.exception.values[0].stacktrace!.frames.allSatisfy { $0.function == nil && $0.symbol == nil && $0.symbolAddr == nil })
    }

    /// Whose code a frame is, from its image and its mangled name's module, and what a crash with
    /// no frame of the program's own code is grouped by: the innermost package frame and the
    /// fatal message, in `crash-inspect groups`' rule and in the Sentry event's fingerprint.
    func testACrashWithNoFrameOfTheProgramsOwnGroupsByTheInnermostPackageFrame() throws {
        let directory = try Scratch.directory("sentry-grouping")
        let path = try crash("null-dereference", into: directory)
        let record = try CrashRecordReader.read(path: path)
        let main = try XCTUnwrap(record.images.first { $0.isMainExecutable })
        let libc = try XCTUnwrap(record.images.first { ($0.path as NSString).lastPathComponent.hasPrefix("libc.so") })
        // Origins: a module of the program, a package's, the runtime's, a thunk, libc, a C function.
        let inMain = main.base + 0x100
        XCTAssertEqual(record.origin(ofFrameAt: inMain, mangledName: "$s6Orders6ChargeV3runyyF"), .app)
        XCTAssertEqual(record.origin(ofFrameAt: inMain, mangledName: "$s8NIOPosix19SelectableEventLoopC3runyyKF"), .dependency("NIOPosix"))
        XCTAssertEqual(record.origin(ofFrameAt: inMain, mangledName: "$s11Hummingbird6RouterV7respondyyF"), .dependency("Hummingbird"))
        XCTAssertEqual(record.origin(ofFrameAt: inMain, mangledName: "$sSS5countSivg"), .system("Swift"))
        XCTAssertEqual(record.origin(ofFrameAt: inMain, mangledName: "$sScTss5NeverORs_rlE5sleep11nanosecondsys6UInt64V_tYaKFZ"), .system("Swift"))
        XCTAssertEqual(record.origin(ofFrameAt: inMain, mangledName: "$sxIeAgHr_xs5Error_pIegHrzo_s8SendableRzlTR"), .system("Swift"))
        XCTAssertEqual(record.origin(ofFrameAt: inMain, mangledName: "swift_task_switch"), .system("Swift"))
        XCTAssertEqual(record.origin(ofFrameAt: inMain, mangledName: "c_nio_posix_accept"), .dependency("NIO"))
        XCTAssertEqual(record.origin(ofFrameAt: inMain, mangledName: "order_checksum"), .app)
        XCTAssertEqual(record.origin(ofFrameAt: libc.base + 0x100, mangledName: "raise"), .system("libc"))

        // A crash whose frames are libc's, then a package's (innermost first), then the runtime's.
        func frame(_ address: UInt64, _ mangled: String) -> ThreadFrame {
            ThreadFrame(address: address, kind: .returnAddress, physicalIndex: nil,
                        symbols: [SymbolicatedFrame(address: address, image: record.image(containing: address)?.path,
                                                    symbol: SwiftDemangler.demangle(mangled), mangledSymbol: mangled)])
        }
        let noneOfOurs = [frame(libc.base + 0x100, "raise"), frame(inMain, "$s8NIOPosix19SelectableEventLoopC3runyyKF"),
                          frame(inMain + 8, "$sSS5countSivg")]
        let event = SentryEnvelope.event(record: record, eventID: String(repeating: "a", count: 32), frames: { _ in noneOfOurs })
        XCTAssertEqual(event.tags["grouping"], "innermost_package_frame")
        let fingerprint = try XCTUnwrap(event.fingerprint)
        XCTAssertEqual(Array(fingerprint.prefix(3)), ["crash", "SIGSEGV", "NIOPosix: NIOPosix.SelectableEventLoop.run() throws -> ()"])
        XCTAssertEqual(event.culprit, "NIOPosix: NIOPosix.SelectableEventLoop.run() throws -> ()")
        // Relay takes it as it is.
        let envelope = SentryEnvelope.make(record: record, rawRecord: [UInt8](try XCTUnwrap(FileManager.default.contents(atPath: path))),
                                           fileName: (path as NSString).lastPathComponent, eventID: String(repeating: "c", count: 32),
                                           sentAt: nil, frames: { _ in noneOfOurs })
        let normalized = try XCTUnwrap(try check(envelope, in: directory)["normalized"] as? [String: Any])
        XCTAssertEqual(normalized["culprit"] as? String, event.culprit)
        XCTAssertEqual(normalized["fingerprint"] as? [String], fingerprint)
        let sent = try XCTUnwrap(event.exception.values.first?.stacktrace?.frames)
        XCTAssertEqual(sent.map(\.inApp), [false, false, false])
        XCTAssertEqual(sent.map(\.function), ["String.count.getter", "SelectableEventLoop.run()", "raise"])
        XCTAssertEqual(CrashGrouping(record: record, frames: noneOfOurs.map {
            CrashGrouping.Frame(address: $0.address, mangled: $0.symbols[0].mangledSymbol, name: $0.symbols[0].symbol)
        }).rule, .packageFrame)
        // With a frame of the program's own: Sentry's own grouping by the in_app frames, no fingerprint.
        let ours = [noneOfOurs[0], frame(inMain + 16, "$s6Orders6ChargeV3runyyF")] + noneOfOurs[1...]
        let grouped = SentryEnvelope.event(record: record, eventID: String(repeating: "b", count: 32), frames: { _ in ours })
        XCTAssertEqual(grouped.tags["grouping"], "app_frames")
        XCTAssertNil(grouped.fingerprint)
        XCTAssertNil(grouped.culprit)
        XCTAssertEqual(grouped.exception.values.first?.stacktrace?.frames.map(\.inApp), [false, false, true, false])
    }

    /// What the toolchain's `swift demangle --simplified` prints for each name (Swift's backtracer's short form).
    func simplifiedByTheToolchain(_ names: [String]) throws -> [String] {
        guard !names.isEmpty else { return [] }
        let swift = try XCTUnwrap(Tools.find("swift"))
        let input = try Scratch.directory("names") + "/names.txt"
        try (names.map { $0.isEmpty ? "-" : $0 }.joined(separator: "\n") + "\n").write(toFile: input, atomically: true, encoding: .utf8)
        let out = try Tools.output("/bin/sh", ["-c", "\"$0\" demangle --simplified < \"$1\"", swift, input])
        return out.split(separator: "\n", omittingEmptySubsequences: false).prefix(names.count).map(String.init)
    }

    /// glibc's abort message is in the exception's value (and `extra`), and Relay takes it.
    func testAnAbortWithGlibcsMessageCarriesItInTheException() throws {
        let directory = try Scratch.directory("sentry-abort")
        let (record, event, exception) = try relayedException("fortify-overflow", in: directory)
        XCTAssertEqual(record.abortMessage, "*** buffer overflow detected ***: terminated")
        XCTAssertEqual(exception["type"] as? String, "SIGABRT")
        XCTAssertTrue((exception["value"] as? String ?? "").hasSuffix(" — *** buffer overflow detected ***: terminated"), "\(exception["value"] ?? "")")
        XCTAssertEqual((event["extra"] as? [String: Any])?["abort_message"] as? String, "*** buffer overflow detected ***: terminated")
    }

    /// A crash of `scenario`, its envelope through Relay (no errors): the record, the normalized
    /// event and its first exception.
    func relayedException(_ scenario: String, in directory: String) throws -> (CrashRecord, [String: Any], [String: Any]) {
        let path = try crash(scenario, into: directory)
        let raw = [UInt8](try XCTUnwrap(FileManager.default.contents(atPath: path)))
        let record = try CrashRecordReader.read(path: path)
        let bytes = SentryEnvelope.make(record: record, rawRecord: raw, fileName: (path as NSString).lastPathComponent,
                                        eventID: SentryEnvelope.eventID(rawRecord: raw), sentAt: Clock.wallNanoseconds())
        let summary = try check(bytes, in: directory)
        XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(summary["errors"] ?? "")")
        let event = try XCTUnwrap(summary["normalized"] as? [String: Any])
        return (record, event, try XCTUnwrap(((event["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first))
    }

    /// An uncaught C++ exception, as Sentry's SDKs report one and Relay keeps it: the C++ type as
    /// the exception's type, what() as its value, mechanism `cpp_exception` (not synthetic, so
    /// Sentry groups by the type and the frames).
    func testAnUncaughtCxxExceptionIsItsTypeAndWhatWithMechanismCppException() throws {
        let directory = try Scratch.directory("sentry-cxx")
        let (_, _, exception) = try relayedException("cxx-exception", in: directory)
        XCTAssertEqual(exception["type"] as? String, "std::runtime_error")
        XCTAssertEqual(exception["value"] as? String, "the order could not be priced: currency XTS")
        let mechanism = try XCTUnwrap(exception["mechanism"] as? [String: Any])
        XCTAssertEqual(mechanism["type"] as? String, "cpp_exception")
        XCTAssertEqual(mechanism["synthetic"] as? Bool, false)
        XCTAssertEqual(mechanism["handled"] as? Bool, false)
        XCTAssertEqual(((mechanism["meta"] as? [String: Any])?["signal"] as? [String: Any])?["number"] as? Int, Int(SIGABRT))
    }

    // MARK: images without a build-id

    /// Builds a shared library with `-Wl,--build-id=none`, loads it into this process and
    /// returns its path and mapping as /proc/self/maps shows it (what the record writer reads).
    func loadLibraryWithoutBuildID(_ directory: String, name: String, body: String) throws -> (path: String, image: CrashImage) {
        let cc = try XCTUnwrap(Tools.find("cc", "gcc", "clang"))
        let source = directory + "/\(name).c", library = directory + "/lib\(name).so"
        try body.write(toFile: source, atomically: true, encoding: .utf8)
        _ = try Tools.output(cc, ["-shared", "-fPIC", "-O1", "-Wl,--build-id=none", source, "-o", library])
        XCTAssertNotNil(dlopen(library, RTLD_NOW), String(cString: dlerror()))
        // Read to the end (a /proc file's size is 0; a one-shot read may stop early).
        let handle = try XCTUnwrap(FileHandle(forReadingAtPath: "/proc/self/maps"))
        defer { try? handle.close() }
        let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        var base: UInt64?, end: UInt64 = 0
        for line in maps.split(separator: "\n") where line.hasSuffix(library) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            let range = fields[0].split(separator: "-").compactMap { UInt64($0, radix: 16) }
            if base == nil, UInt64(fields[2], radix: 16) == 0 { base = range[0] }
            end = max(end, range[1])
        }
        let start = try XCTUnwrap(base, "\(library) not in /proc/self/maps")
        return (library, CrashImage(path: library, base: start, size: end - start))
    }

    func testImagesWithoutABuildIDGetSymbolicsTextHashFromTheFileOnDisk() throws {
        let directory = try Scratch.directory("sentry-no-build-id")
        // More than 4,096 bytes of .text, so the page limit of the hash matters.
        let body = (0..<600).map { "int noid_f\($0)(int x) { return x * \($0 * 7 + 3) + (x >> \($0 % 13)); }" }.joined(separator: "\n")
        let (path, image) = try loadLibraryWithoutBuildID(directory, name: "noid", body: body)
        let readelf = try XCTUnwrap(Tools.find("readelf", "llvm-readelf"))
        let text = try XCTUnwrap(try Tools.output(readelf, ["-SW", path]).split(separator: "\n").first { $0.contains(" .text ") })
        let textSize = try XCTUnwrap(text.split(separator: "]").last?.split(separator: " ", omittingEmptySubsequences: true)[4]).description
        XCTAssertGreaterThan(Int(textSize, radix: 16) ?? 0, 4096, String(text))
        XCTAssertTrue(try ELFFile(path: path).buildID.isEmpty, "built without a build-id")
        let truth = try XCTUnwrap(try symbolicIDs([path])[path])
        XCTAssertTrue(truth["code_id"] is NSNull, "symbolic has no code id without a build-id")
        let expected = try XCTUnwrap(truth["debug_id"] as? String)
        XCTAssertNotEqual(expected, "00000000-0000-0000-0000-000000000000")

        let ids = try XCTUnwrap(SentryEnvelope.imageIDs(image, crashTime: Clock.wallNanoseconds()))
        XCTAssertEqual(ids.debugID, expected)
        XCTAssertNil(ids.codeID)

        // In an envelope Sentry accepts: the image with that debug id and no code id.
        let pc = image.base + 0x10
        let record = CrashRecord(architecture: .x86_64, signal: SignalInfo(number: SIGSEGV, name: "SIGSEGV"),
                                 kernel: "Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) x86_64",
                                 threads: [CrashThread(tid: 7, crashed: true, framesFromSignalContext: true, frames: [pc])], images: [image])
        let summary = try check(SentryEnvelope.make(record: record, rawRecord: [1, 2, 3], fileName: "r.ccrec", eventID: SentryEnvelope.eventID(rawRecord: [1, 2, 3]), sentAt: Clock.wallNanoseconds()), in: directory)
        let images = try XCTUnwrap(((summary["normalized"] as? [String: Any])?["debug_meta"] as? [String: Any])?["images"] as? [[String: Any]])
        XCTAssertEqual(images.count, 1)
        XCTAssertEqual(images.first?["debug_id"] as? String, expected)
        XCTAssertNil(images.first?["code_id"] ?? nil)
        XCTAssertEqual(address(images.first?["image_addr"]), image.base)

        // Not the mapped file any more: no id rather than an invented one.
        XCTAssertNil(SentryEnvelope.imageIDs(image, crashTime: Clock.wallNanoseconds() - 3_600_000_000_000), "modified after the crash")
        XCTAssertNil(SentryEnvelope.imageIDs(CrashImage(path: path, base: image.base, size: image.size + (1 << 20)), crashTime: nil), "another size")
        XCTAssertNil(SentryEnvelope.imageIDs(CrashImage(path: directory + "/missing.so", base: image.base, size: image.size), crashTime: nil))
        XCTAssertNil(SentryEnvelope.imageIDs(image, crashTime: nil, readFiles: false))
        let withID = directory + "/libwithid.so"
        _ = try Tools.output(try XCTUnwrap(Tools.find("cc", "gcc", "clang")), ["-shared", "-fPIC", "-O1", "-Wl,--build-id", directory + "/noid.c", "-o", withID])
        XCTAssertNil(SentryEnvelope.imageIDs(CrashImage(path: withID, base: image.base, size: image.size), crashTime: nil),
                     "the file on disk has a build-id, the mapped one had none")
        // An image the envelope cannot identify is left out of debug_meta (Relay requires debug_id).
        let gone = CrashRecord(architecture: .x86_64, threads: record.threads, images: [CrashImage(path: directory + "/missing.so", base: image.base, size: image.size)])
        let goneSummary = try check(SentryEnvelope.make(record: gone, rawRecord: [4], fileName: "r.ccrec", eventID: SentryEnvelope.eventID(rawRecord: [4]), sentAt: Clock.wallNanoseconds()), in: directory)
        let goneImages = ((goneSummary["normalized"] as? [String: Any])?["debug_meta"] as? [String: Any])?["images"] as? [Any]
        XCTAssertEqual(goneImages?.count ?? 0, 0)
    }

    // MARK: unit level, still against outside truth

    func testSentryDebugIDsSwapTheFirstThreeGUIDFieldsOfTheBuildID() {
        let buildID: [UInt8] = Array(0x00...0x13)
        XCTAssertEqual(SentryEnvelope.debugID(buildID: buildID), "03020100-0504-0706-0809-0a0b0c0d0e0f")
        XCTAssertEqual(SentryEnvelope.debugID(buildID: [0xAB]), "000000ab-0000-0000-0000-000000000000")
    }

    func testEventIDIsTheRecordsSHA256Prefix() throws {
        let directory = try Scratch.directory("sentry-event-id")
        for (index, bytes) in [[UInt8](), [0x61, 0x62, 0x63], [UInt8](repeating: 0x5A, count: 1000), (0..<200).map { UInt8($0) }].enumerated() {
            let path = directory + "/\(index)"
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
            XCTAssertEqual(SentryEnvelope.eventID(rawRecord: bytes), String(try sha256(path).prefix(32)), "\(bytes.count) bytes")
            XCTAssertEqual(SentryEnvelope.eventID(rawRecord: bytes), SentryEnvelope.eventID(rawRecord: bytes))
        }
        XCTAssertNotEqual(SentryEnvelope.eventID(rawRecord: [1, 2, 3]), SentryEnvelope.eventID(rawRecord: [1, 2, 4]))
    }

    /// An envelope written now and sent later (`crash-inspect export`) carries no `sent_at`:
    /// Relay corrects an event's clock by `sent_at` against the time it receives the envelope,
    /// so a stamp from the export would move the crash by the delay. Without it the envelope is
    /// still what sentry_sdk parses and Relay normalizes, and the crash keeps its time.
    func testAnEnvelopeForLaterHasNoSentAtAndKeepsTheCrashTime() throws {
        let directory = try Scratch.directory("sentry-sent-later")
        let crashTime = Date().timeIntervalSince1970 - 2 * 86400
        let nanoseconds = Int64(crashTime * 1e9)
        let record = CrashRecord(signal: SignalInfo(number: SIGSEGV, name: "SIGSEGV"),
                                 process: CrashedProcess(pid: 1, tid: 1, ppid: 0, uid: 0, startWallNanoseconds: nanoseconds,
                                                         crashWallNanoseconds: nanoseconds, startMonotonicNanoseconds: 0,
                                                         crashMonotonicNanoseconds: 0, threadName: "main"),
                                 threads: [CrashThread(tid: 1, crashed: true, framesFromSignalContext: true, frames: [0x1000])])
        let bytes = SentryEnvelope.make(record: record, rawRecord: [1], fileName: "r.ccrec", eventID: "0123456789abcdef0123456789abcdef",
                                        sentAt: nil)
        let summary = try check(bytes, in: directory)
        XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(summary["errors"] ?? "")")
        XCTAssertNil((summary["headers"] as? [String: Any])?["sent_at"])
        XCTAssertEqual((summary["headers"] as? [String: Any])?["event_id"] as? String, "0123456789abcdef0123456789abcdef")
        let timestamp = try XCTUnwrap((summary["normalized"] as? [String: Any])?["timestamp"] as? Double)
        XCTAssertEqual(timestamp, crashTime, accuracy: 0.001)
    }

    func testSentAtIsTheTimeOfSendingAndArm64IsSentryArm64() throws {
        let directory = try Scratch.directory("sentry-sent-at")
        let record = CrashRecord(architecture: .aarch64, signal: SignalInfo(number: SIGABRT, name: "SIGABRT"),
                                 kernel: "Linux 6.1.0-18-arm64 #1 SMP Debian 6.1.76-1 (2024-02-01) aarch64",
                                 threads: [CrashThread(tid: 1, crashed: true, framesFromSignalContext: false, frames: [0x1000, 0x2000])])
        let bytes = SentryEnvelope.make(record: record, rawRecord: [9], fileName: "r.ccrec", eventID: "0123456789abcdef0123456789abcdef",
                                        sentAt: 1_700_000_000_250_000_000,
                                        osRelease: OSRelease(id: "debian", versionID: "12", prettyName: "Debian GNU/Linux 12 (bookworm)"))
        let summary = try check(bytes, in: directory)
        XCTAssertEqual((summary["headers"] as? [String: Any])?["sent_at"] as? String, "2023-11-14T22:13:20.250Z")
        XCTAssertEqual((summary["headers"] as? [String: Any])?["event_id"] as? String, "0123456789abcdef0123456789abcdef")
        let event = try XCTUnwrap(summary["normalized"] as? [String: Any])
        let contexts = try XCTUnwrap(event["contexts"] as? [String: Any])
        XCTAssertEqual((contexts["device"] as? [String: Any])?["arch"] as? String, "arm64")
        let os = try XCTUnwrap(contexts["os"] as? [String: Any])
        XCTAssertEqual(os["name"] as? String, "Linux")
        XCTAssertEqual(os["version"] as? String, "6.1.0")
        XCTAssertEqual(os["build"] as? String, "18-arm64")
        XCTAssertEqual(os["kernel_version"] as? String, "6.1.0-18-arm64")
        XCTAssertEqual(os["distribution_name"] as? String, "debian")
        XCTAssertEqual(os["distribution_version"] as? String, "12")
        XCTAssertEqual(os["distribution_pretty_name"] as? String, "Debian GNU/Linux 12 (bookworm)")
        // Frame 0 of a thread not unwound from the signal context is a return address too.
        let stacktrace = try XCTUnwrap(((event["exception"] as? [String: Any])?["values"] as? [[String: Any]])?.first?["stacktrace"] as? [String: Any])
        XCTAssertEqual(stacktrace["instruction_addr_adjustment"] as? String, "all")
        XCTAssertEqual((stacktrace["frames"] as? [[String: Any]])?.compactMap { address($0["instruction_addr"]) }, [0x2000, 0x1000])
    }
}

extension SentryEnvelopeTests {
    /// A session's payload, written by hand (no JSONEncoder on the launch thread), is the JSON the
    /// envelope's encoder writes: the same object, member for member, for strings that need
    /// escaping, a missing installation, environment and duration, and every status.
    func testASessionWrittenByHandIsWhatTheEncoderWrites() throws {
        let tricky = "rel\"ease\\/1.0\n\t\u{01}é🙂"
        for (environment, installation, duration) in [(tricky, "did-1" as String?, 12.5 as Double?), (nil, nil, nil), ("prod", "x", 1e-05)] {
            for status in [SentrySession.Status.exited, .crashed, .abnormal] {
                let facts = SentryRunFacts(release: tricky, environment: environment, dist: nil, serverName: nil)
                let session = try XCTUnwrap(SentrySession(runID: "run-\(status)", installation: installation, startedMilliseconds: 1_000,
                                                          endedMilliseconds: 61_000, durationSeconds: duration, status: status,
                                                          facts: facts, now: 100_000))
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                let byEncoder = try JSONSerialization.jsonObject(with: try encoder.encode(session)) as? NSDictionary
                let byHand = try JSONSerialization.jsonObject(with: Data(session.payload)) as? NSDictionary
                XCTAssertEqual(byHand, byEncoder, String(decoding: session.payload, as: UTF8.self))
            }
        }
        // The envelope: a header line, then per session an item header with the payload's length.
        let session = try XCTUnwrap(SentrySession(runID: "r", installation: nil, startedMilliseconds: 1_000, endedMilliseconds: 2_000,
                                                  durationSeconds: 1, status: .exited,
                                                  facts: SentryRunFacts(release: "a@1", environment: nil, dist: nil, serverName: nil), now: 3_000))
        let lines = SentryEnvelope.sessions([session, session], sentAt: 4_000_000_000).split(separator: 0x0A).map { Data($0) }
        XCTAssertEqual(lines.count, 5)
        XCTAssertEqual(try JSONSerialization.jsonObject(with: lines[0]) as? NSDictionary, ["sent_at": "1970-01-01T00:00:04.000Z"])
        XCTAssertEqual(try JSONSerialization.jsonObject(with: lines[1]) as? NSDictionary,
                       ["type": "session", "length": lines[2].count, "content_type": "application/json"])
        XCTAssertEqual(String(decoding: SentryEnvelope.sessions([session], sentAt: nil).prefix(3), as: UTF8.self), "{}\n")
    }
}
