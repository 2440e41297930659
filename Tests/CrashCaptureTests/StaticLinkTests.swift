// StaticLinkTests.swift — the C core linked into a fully static program (cc -static): threads
// can still be created, before and after cc_install, and a crash is recorded and unwound (the
// wrapper must find the real pthread_create without the dynamic loader, and the unwinder the
// executable's call-frame information without a link map).
import CrashCapture
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class StaticLinkTests: XCTestCase {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let program = #"""
    #define _GNU_SOURCE 1
    #include <pthread.h>
    #include <signal.h>
    #include <stdio.h>
    #include "crashcapture.h"

    static void *run(void *arg) {
        stack_t ss;
        int has_altstack = sigaltstack(0, &ss) == 0 && !(ss.ss_flags & SS_DISABLE);
        *(volatile int *)arg = 1 + has_altstack;
        return 0;
    }

    static __attribute__((noinline)) void *crash(void *arg) {
        (void)arg;
        *(volatile int *)0 = 1;
        return 0;
    }

    static void spawn(const char *when) {
        pthread_t thread;
        int ran = 0;
        int rc = pthread_create(&thread, 0, run, &ran);
        if (rc == 0) pthread_join(thread, 0);
        printf("%s: pthread_create=%d ran=%d altstack=%d\n", when, rc, ran > 0, ran == 2);
    }

    int main(int argc, char **argv) {
        spawn("before install");
        cc_config_t config = { .directory = argv[1], .app_name = "static-test", .app_version = "1" };
        int err = 0;
        printf("install=%d\n", cc_install(&config, &err));
        spawn("after install");
        spawn("after install again");
        fflush(stdout);
        if (argc > 2) {   /* a crash on a thread: recorded, unwound without the loader's lock */
            pthread_t thread;
            pthread_create(&thread, 0, crash, 0);
            pthread_join(thread, 0);
        }
        return 0;
    }
    """#

    /// `cc -print-file-name=NAME`: the library's full path, or nil when the toolchain lacks it.
    func staticLibrary(_ cc: String, _ name: String, in directory: String) throws -> String? {
        let out = directory + "/print-\(name)"
        _ = try ChildProcess.run(cc, ["-print-file-name=\(name)"], stdout: out, timeout: 60)
        let path = (try? String(contentsOfFile: out, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        return path.hasPrefix("/") && FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// Whether an ELF file has a PT_INTERP program header (is dynamically linked).
    func hasInterpreter(_ path: String) throws -> Bool {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        func read<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            data[offset..<(offset + MemoryLayout<T>.size)].withUnsafeBytes { $0.loadUnaligned(as: T.self) }
        }
        XCTAssertEqual(data.prefix(4), Data([0x7F, 0x45, 0x4C, 0x46]))
        let phoff = Int(read(0x20, UInt64.self)), phentsize = Int(read(0x36, UInt16.self)), phnum = Int(read(0x38, UInt16.self))
        return (0..<phnum).contains { read(phoff + $0 * phentsize, UInt32.self) == 3 /* PT_INTERP */ }
    }

    func testThreadsCanBeCreatedBeforeAndAfterInstallInAFullyStaticProgram() throws {
        // The compiler SwiftPM builds CShims with (the toolchain's clang) comes first; the
        // system cc after it.
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let candidates = path.map { $0 + "/clang" } + ["/opt/swift/usr/bin/clang", "/usr/bin/clang", "/usr/bin/cc", "/usr/bin/gcc"]
        let cc = candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let cc else { throw XCTSkip("no C compiler (clang, cc or gcc)") }
        let work = try Harness.scratchDirectory("static")
        let missing = try ["libc.a", "libpthread.a"].filter { try staticLibrary(cc, $0, in: work) == nil }
        if !missing.isEmpty {
            throw XCTSkip("the static toolchain lacks \(missing.joined(separator: ", ")) (libc6-dev)")
        }
        let shims = Self.packageRoot.appendingPathComponent("CShims").path
        // The core and the record layout's C it depends on (CCrashRecordLayout), as SwiftPM links them.
        // Every C file of the core, in its folders.
        let sources = (FileManager.default.enumerator(atPath: shims)?.compactMap { $0 as? String } ?? [])
            .filter { $0.hasSuffix(".c") }.sorted().map { shims + "/" + $0 }
            + [Self.packageRoot.appendingPathComponent("Sources/CCrashRecordLayout/layout.c").path]
        XCTAssertFalse(sources.isEmpty)
        try Self.program.write(toFile: work + "/static-threads.c", atomically: true, encoding: .utf8)
        let binary = work + "/static-threads"
        let compileLog = work + "/cc.log"
        let layout = Self.packageRoot.appendingPathComponent("Sources/CCrashRecordLayout/include").path
        let compiled = try ChildProcess.run(cc, ["-static", "-O1", "-g", "-I", shims + "/include", "-I", layout, "-I", shims] + sources +
                                            [work + "/static-threads.c", "-o", binary, "-lpthread"],
                                            stderr: compileLog, timeout: 300)
        let log = (try? String(contentsOfFile: compileLog, encoding: .utf8)) ?? ""
        XCTAssertEqual(compiled.ending, .exited(0), "\(cc) -static failed:\n\(log.suffix(3000))")
        guard compiled.ending == .exited(0) else { return }
        XCTAssertFalse(try hasInterpreter(binary), "the program is fully static (no PT_INTERP)")

        let records = work + "/records"
        try FileManager.default.createDirectory(atPath: records, withIntermediateDirectories: true)
        let out = work + "/out"
        let child = try ChildProcess.run(binary, [records], stdout: out, timeout: 60)
        let output = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        XCTAssertEqual(child.ending, .exited(0), output)
        let lines = output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "before install: pthread_create=0 ran=1 altstack=0", output)
        XCTAssertTrue(lines.contains("install=0"), "cc_install returns CC_INSTALLED: \(output)")
        // Threads created after install run, and get their alternate stack from the wrapper.
        XCTAssertTrue(lines.contains("after install: pthread_create=0 ran=1 altstack=1"), output)
        XCTAssertTrue(lines.contains("after install again: pthread_create=0 ran=1 altstack=1"), output)

        // A crash on a thread of the static program: death by SIGSEGV and a complete record
        // whose crashed thread was unwound by the executable's CFI (-O1 keeps no frame pointers,
        // so frame records alone would not reach start_thread).
        let crashed = try ChildProcess.run(binary, [records, "crash"], stdout: out, timeout: 60)
        XCTAssertEqual(crashed.ending, .signaled(SIGSEGV))
        let left = try FileManager.default.contentsOfDirectory(atPath: records)
        let files = left.filter { $0.hasSuffix(".ccrec") }
        XCTAssertEqual(files.count, 1, "\(left)")
        let record = try CrashRecordReader.read(path: records + "/" + (files.first ?? "none"))
        XCTAssertTrue(record.isComplete)
        XCTAssertEqual(record.signal?.number, SIGSEGV)
        let thread = try XCTUnwrap(record.crashedThread)
        XCTAssertGreaterThanOrEqual(thread.frames.count, 3, "the crash function, start_thread and clone3 at least: \(thread.frames)")
        let main = try XCTUnwrap(record.images.first { $0.isMainExecutable })
        XCTAssertTrue(thread.frames.first.map { $0 >= main.base && $0 < main.base + main.size } ?? false,
                      "frame 0 lies in the static executable")
    }
}
