// CaptureFootprintTests.swift — what adopting capture costs a program in libraries: a program that
// links CrashCapture and nothing else (`capture-only`) loads no Foundation, no ICU and no
// Dispatch overlay, and no libunwind, neither to start nor at its crash (capture unwinds by the
// images' call-frame information itself) —
// by its ELF dependencies (readelf -d), their closure (ldd) and what the loader
// actually opened while it ran and crashed (LD_DEBUG=files) — and its crash is still recorded.
// And at a crash the dynamic loader binds no function: install bound every one the handler and
// its helper call (LD_DEBUG=bindings).
import CrashCapture
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class CaptureFootprintTests: XCTestCase {
    var program: String { BuiltProducts.directory + "/capture-only" }

    /// Libraries a capture-only program must not load: Foundation, its ICU data and the Swift
    /// Dispatch overlay (libdispatch itself comes with the concurrency runtime, as in every
    /// Swift program).
    static let forbidden = ["libFoundation", "lib_FoundationICU", "libFoundationEssentials", "libFoundationInternationalization",
                            "libicu", "libswiftDispatch"]

    private func offenders(_ names: [String]) -> [String] {
        names.filter { name in Self.forbidden.contains { name.contains($0) } }
    }

    func testTheProgramNeedsNoFoundationByItsELFDependencies() throws {
        let readelf = try XCTUnwrap(Tools.find("readelf"), "binutils' readelf is needed")
        let dynamic = try Tools.output(readelf, ["-d", program])
        let needed = dynamic.split(separator: "\n").filter { $0.contains("(NEEDED)") }.map(String.init)
        XCTAssertTrue(needed.contains { $0.contains("libswiftCore") }, "readelf -d listed no libswiftCore: \(dynamic.prefix(500))")
        XCTAssertEqual(offenders(needed), [])
        let closure = try Tools.output(try XCTUnwrap(Tools.find("ldd")), [program])
        let libraries = closure.split(separator: "\n").map(String.init)
        XCTAssertEqual(offenders(libraries), [])
        // No unwinding library: a static-stdlib build of this program starts and unwinds in an
        // image without one (scripts/slim-image-check.sh).
        XCTAssertEqual(libraries.filter { $0.contains("libunwind") || $0.contains("liblzma") }, [],
                       "ldd lists libunwind or liblzma: \(closure.prefix(600))")
    }

    func testTheProgramLoadsNoFoundationWhileItRunsAndCrashesAndItsCrashIsRecorded() throws {
        let directory = try Scratch.directory("footprint")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var environment = ProcessInfo.processInfo.environment
        environment["LD_DEBUG"] = "files"
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment.removeValue(forKey: CrashHandler.disableEnvironmentVariable)
        let child = try ChildProcess.run(program, [directory + "/records", "crash"], environment: environment,
                                         stdout: directory + "/stdout", stderr: directory + "/stderr", timeout: 60)
        XCTAssertEqual(child.ending, .signaled(SIGSEGV))
        let stdout = try String(contentsOfFile: directory + "/stdout", encoding: .utf8)
        XCTAssertEqual(stdout, "started: installed\n")
        // The loader's own account of every object it opened ("file=libX.so [0];  needed by …"
        // and "file=… [0];  dynamically loaded by …" for a dlopen, e.g. from inside the handler).
        let loaderLog = try String(contentsOfFile: directory + "/stderr", encoding: .utf8)
        let opened = loaderLog.split(separator: "\n").filter { $0.contains("file=") }.map(String.init)
        // Nothing is opened after the program starts: no unwinder at start, nothing in the handler.
        XCTAssertTrue(opened.contains { $0.contains("libswiftCore") }, "LD_DEBUG=files listed nothing: \(loaderLog.prefix(800))")
        XCTAssertEqual(opened.filter { $0.contains("dynamically loaded by") || $0.contains("libunwind") || $0.contains("liblzma") }, [],
                       "the program opened more than its dependencies: \(loaderLog.prefix(800))")
        XCTAssertEqual(offenders(opened), [])

        let names = try RecordFileName.names(in: directory + "/records")
        XCTAssertEqual(names.count, 1, "\(names)")
        let record = try CrashRecordReader.read(path: directory + "/records/" + names[0])
        XCTAssertEqual(record.signal?.number, SIGSEGV)
        XCTAssertEqual(record.appName, "capture-only")
        XCTAssertTrue(record.isComplete)
        XCTAssertFalse(try XCTUnwrap(record.crashedThread).frames.isEmpty)
        // No reporter published a $AppEnd (capture knows no event model) and no run id was given.
        XCTAssertNil(record.appEndJSON)
        XCTAssertNil(record.runID)
    }

    /// A program linked for lazy binding has the loader look up each library function at its
    /// first call. Install binds every one the handler, the thread helper and the watchdog call,
    /// so that none is looked up at a crash: no binding is printed after `crash-target` says it
    /// is about to crash (`CRASH_TARGET_MARK`), alone, or with threads that block every signal
    /// (the thread helper's process then stops and reads them).
    func testAtACrashTheLoaderBindsNothing() throws {
        let target = BuiltProducts.directory + "/crash-target"
        for threads in ["1", "3"] {
            let directory = try Scratch.directory("bindings-\(threads)")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var environment = ProcessInfo.processInfo.environment
            environment["LD_DEBUG"] = "bindings"
            environment["SWIFT_BACKTRACE"] = "enable=no"
            environment["CRASH_TARGET_MARK"] = "1"
            environment["CRASH_TARGET_THREADS"] = threads
            environment.removeValue(forKey: CrashHandler.disableEnvironmentVariable)
            let child = try ChildProcess.run(target, ["capture", directory + "/records"], environment: environment,
                                             stdout: directory + "/stdout", stderr: directory + "/stderr", timeout: 60)
            XCTAssertEqual(child.ending, .signaled(SIGSEGV), "threads \(threads)")
            let lines = try String(contentsOfFile: directory + "/stderr", encoding: .utf8).split(separator: "\n")
            let mark = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("mark ") }, "no mark on stderr (threads \(threads))")
            XCTAssertTrue(lines[..<mark].contains { $0.contains("binding file") }, "LD_DEBUG=bindings printed nothing")
            let atTheCrash = lines[mark...].filter { $0.contains("binding file") }.map { $0.split(separator: "`").last.map(String.init) ?? String($0) }
            XCTAssertEqual(atTheCrash, [], "bound at the crash (threads \(threads))")
            let names = try RecordFileName.names(in: directory + "/records")
            XCTAssertEqual(names.count, 1, "\(names)")
            let record = try CrashRecordReader.read(path: directory + "/records/" + names[0])
            XCTAssertTrue(record.isComplete)
            XCTAssertEqual(record.threads.count, Int(threads), "every thread recorded")
        }
    }
}
