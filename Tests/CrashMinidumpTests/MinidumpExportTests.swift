// MinidumpExportTests.swift — `crash-inspect export --minidump` on records of real crashes of the
// harness, read back by tools no one here wrote: lldb-16 (`-c FILE` with the executable) and PyPI's
// `minidump` parser (Tests/Oracles/minidump_check.py).
import CrashMinidump
import CrashRecordFormat
import CrashSymbolication
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class MinidumpExportTests: XCTestCase {
    static let codeViewELF = 0x4270_454C // "BpEL"

    func scratch(_ name: String) throws -> String { try Scratch.directory("minidump-" + name) }

    /// Crashes `scenario` in the harness into a fresh directory; returns the record's path.
    func crash(_ scenario: String) throws -> String {
        let directory = try scratch(scenario)
        let child = try ChildProcess.run(Harness.path, ["run", scenario, "--dir", directory], environment: Harness.environment, timeout: 60)
        guard case .signaled = child.ending else {
            XCTFail("\(scenario) ended \(child.ending)")
            throw Tools.Failure(description: "\(scenario) did not crash")
        }
        let records = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".ccrec") }
        XCTAssertEqual(records.count, 1, "\(records)")
        return directory + "/" + (try XCTUnwrap(records.first))
    }

    struct Export {
        let ending: ChildProcess.Ending
        let path: String
        let stderr: String
    }

    /// Runs `crash-inspect export --minidump record -o <record>.dmp`.
    func export(_ record: String, to output: String? = nil) throws -> Export {
        let path = output ?? record + ".dmp"
        let errors = record + ".export-stderr"
        let child = try ChildProcess.run(BuiltProducts.inspect, ["export", "--minidump", record, "-o", path], stderr: errors, timeout: 60)
        return Export(ending: child.ending, path: path, stderr: (try? String(contentsOfFile: errors, encoding: .utf8)) ?? "")
    }

    /// The minidump as PyPI's parser reads it (minidump_check.py's JSON).
    func parsed(_ minidump: String) throws -> [String: Any] {
        let json = try Oracles.run("minidump_check.py", [minidump])
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }

    /// lldb-16 with the executable and the minidump as its core, running `commands` in batch mode.
    func lldb(_ minidump: String, executable: String, _ commands: [String]) throws -> String {
        let lldb = try XCTUnwrap(Tools.find("lldb-16", "lldb"), "no lldb-16: run scripts/setup.sh")
        return try Tools.output(lldb, ["--no-lldbinit", "-b", "-c", minidump, executable] + commands.flatMap { ["-o", $0] }, timeout: 180)
    }

    /// Function names of lldb's `bt` lines in `image`, innermost first: mangled Swift names
    /// demangled by the toolchain's swift-demangle, a C function's argument list dropped.
    func lldbFunctions(_ backtrace: String, image: String) throws -> [String] {
        var names: [String] = []
        for line in backtrace.split(separator: "\n") where line.contains("frame #") {
            guard let tick = line.firstIndex(of: "`") else { continue }
            let module = line[..<tick].split(separator: " ").last.map(String.init) ?? ""
            guard module == image else { continue }
            var name = String(line[line.index(after: tick)...])
            if let cut = name.range(of: " at ") ?? name.range(of: " + ") { name = String(name[..<cut.lowerBound]) }
            if !name.hasPrefix("$s"), let paren = name.firstIndex(of: "(") { name = String(name[..<paren]) }
            names.append(name)
        }
        let demangler = try XCTUnwrap(Tools.find("swift-demangle"), "no swift-demangle in the toolchain")
        let input = try scratch("demangle") + "/names"
        try names.joined(separator: "\n").write(toFile: input, atomically: true, encoding: .utf8)
        let output = try Tools.output("/bin/sh", ["-c", "\"$0\" --no-sugar < \"$1\"", demangler, input])
        return output.split(separator: "\n", omittingEmptySubsequences: false).prefix(names.count).map(String.init)
    }

    /// The crashed thread's function names in `image` as `crash-inspect show --json` gives them.
    func shownFunctions(_ record: String, image: String) throws -> [String] {
        let out = try Tools.output(BuiltProducts.inspect, ["show", record, "--json"])
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])
        let threads = try XCTUnwrap(object["threads"] as? [[String: Any]])
        let crashed = try XCTUnwrap(threads.first { $0["crashed"] as? Bool == true })
        let frames = try XCTUnwrap(crashed["frames"] as? [[String: Any]])
        return frames.filter { frame in
            ["programCounter", "returnAddress"].contains(frame["kind"] as? String) && frame["inlined"] as? Bool == false
                && (frame["image"] as? String).map { ($0 as NSString).lastPathComponent } == image
        }.compactMap { $0["symbol"] as? String }
    }

    func register(_ name: String, of registers: [Register]) throws -> UInt64 {
        try XCTUnwrap(registers.first { $0.name == name }, "no \(name)").value
    }

    /// What every x86-64 crash's minidump must say, in the parser and in lldb: the threads of the
    /// record each with a full context, the crashed one's pc and sp, the signal, the modules with
    /// their build-ids, the crashed thread's stack, and lldb's backtrace naming the functions
    /// `show` names. Returns the record and the parser's view for the scenario's own checks.
    @discardableResult
    func checkExport(_ scenario: String, frames compared: Int = 64,
                     file: StaticString = #filePath, line: UInt = #line) throws -> (CrashRecord, [String: Any], String) {
        let path = try crash(scenario)
        let record = try CrashRecordReader.read(path: path)
        let exported = try export(path)
        XCTAssertEqual(exported.ending, .exited(0), exported.stderr, file: file, line: line)
        let dump = try parsed(exported.path)

        XCTAssertEqual(dump["architecture"] as? String, "AMD64", file: file, line: line)
        XCTAssertEqual(dump["platform"] as? Int, 0x8201, file: file, line: line)
        // The machine: as many CPUs as nproc says this process may use, and the processor the
        // kernel names in /proc/cpuinfo (family as the level, model and stepping as the revision).
        let nproc = try Tools.output("/bin/sh", ["-c", "nproc"]).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(dump["processors"] as? Int, Int(nproc), file: file, line: line)
        let cpuinfo = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8).split(separator: "\n")
        func cpuField(_ name: String) -> Int? {
            cpuinfo.first { $0.hasPrefix(name + "\t") || $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: ":").last!.trimmingCharacters(in: .whitespaces)) }
        }
        if let family = cpuField("cpu family"), let model = cpuField("model"), let stepping = cpuField("stepping") {
            XCTAssertEqual(dump["processorLevel"] as? Int, family, file: file, line: line)
            XCTAssertEqual(dump["processorRevision"] as? Int, model << 8 | stepping, file: file, line: line)
        }
        // The kernel's own /proc/<pid>/status at the crash, with the memory it reported.
        let status = try XCTUnwrap(dump["procStatus"] as? String, "no LinuxProcStatus stream", file: file, line: line)
        XCTAssertTrue(status.hasPrefix("Name:"), status, file: file, line: line)
        XCTAssertTrue(status.contains("\nVmRSS:") && status.contains("\nPid:\t\(record.process?.pid ?? -1)\n"), status, file: file, line: line)
        let threads = try XCTUnwrap(dump["threads"] as? [[String: Any]])
        XCTAssertEqual(threads.compactMap { $0["tid"] as? Int }, record.threads.map { Int($0.tid) }, "one thread per recorded thread", file: file, line: line)
        XCTAssertTrue(threads.allSatisfy { $0["contextSize"] as? Int == 1232 }, "MDRawContextAMD64 for every thread", file: file, line: line)
        let crashedThread = try XCTUnwrap(record.crashedThread)
        let crashed = try XCTUnwrap(threads.first { $0["tid"] as? Int == Int(crashedThread.tid) })
        XCTAssertEqual(crashed["pc"] as? UInt64, try register("rip", of: record.registers), file: file, line: line)
        let sp = try register("rsp", of: record.registers)
        XCTAssertEqual(crashed["sp"] as? UInt64, sp, file: file, line: line)
        for thread in record.threads where !thread.crashed && !thread.registers.isEmpty {
            let other = try XCTUnwrap(threads.first { $0["tid"] as? Int == Int(thread.tid) })
            XCTAssertEqual(other["pc"] as? UInt64, try register("rip", of: thread.registers), "thread \(thread.tid)", file: file, line: line)
            XCTAssertEqual(other["sp"] as? UInt64, try register("rsp", of: thread.registers), "thread \(thread.tid)", file: file, line: line)
        }

        let signal = try XCTUnwrap(record.signal)
        let exception = try XCTUnwrap(dump["exception"] as? [String: Any], "no exception stream", file: file, line: line)
        XCTAssertEqual(exception["thread"] as? Int, Int(crashedThread.tid), file: file, line: line)
        XCTAssertEqual(exception["code"] as? Int, Int(signal.number), file: file, line: line)
        XCTAssertEqual(exception["flags"] as? Int, Int(UInt32(bitPattern: signal.code)), file: file, line: line)
        XCTAssertEqual(exception["address"] as? UInt64, signal.faultAddress, file: file, line: line)

        let modules = try XCTUnwrap(dump["modules"] as? [[String: Any]])
        XCTAssertEqual(modules.compactMap { $0["name"] as? String }, record.images.map(\.path), file: file, line: line)
        let main = try XCTUnwrap(modules.first { $0["name"] as? String == Harness.path })
        XCTAssertEqual(main["cvSignature"] as? Int, Self.codeViewELF, file: file, line: line)
        XCTAssertEqual(main["buildID"] as? String, hexString(try ELFFile(path: Harness.path).buildID), "the executable's GNU build-id", file: file, line: line)
        XCTAssertEqual(main["base"] as? UInt64, record.images.first { $0.isMainExecutable }?.base, file: file, line: line)

        // lldb: every thread, the signal as the stop reason, the pid, the crashed thread's functions.
        let output = try lldb(exported.path, executable: Harness.path, ["thread list", "bt \(compared)"])
        for thread in record.threads {
            XCTAssertTrue(output.contains("tid = \(thread.tid),"), "thread \(thread.tid) missing in lldb:\n\(output)", file: file, line: line)
        }
        XCTAssertTrue(output.contains("tid = \(crashedThread.tid), ") && output.contains("stop reason = signal \(signal.name)"), output, file: file, line: line)
        XCTAssertTrue(output.contains("Process \(record.process?.pid ?? -1) stopped"), "lldb's pid (LinuxProcStatus):\n\(output)", file: file, line: line)
        let backtrace = String(output[(output.range(of: "(lldb) bt")?.upperBound ?? output.endIndex)...])
        let image = (Harness.path as NSString).lastPathComponent
        let lldbNames = try lldbFunctions(backtrace, image: image)
        let shown = Array(try shownFunctions(path, image: image).prefix(lldbNames.count))
        XCTAssertGreaterThanOrEqual(lldbNames.count, min(compared, 5), "lldb unwound too little:\n\(backtrace)", file: file, line: line)
        XCTAssertEqual(lldbNames, shown, "lldb's backtrace and crash-inspect show name different functions", file: file, line: line)
        return (record, dump, output)
    }

    func testANullDereferenceIsReadByLLDBAndTheParserWithTheStackAtSP() throws {
        let (record, dump, output) = try checkExport("null-dereference")
        XCTAssertTrue(output.contains("cch_null_dereference"), output)
        // The crashed thread's stack, read by the parser's memory reader at sp: the record's bytes.
        let sp = try register("rsp", of: record.registers)
        let stack = try XCTUnwrap(record.memory.first { $0.label == "stack" })
        XCTAssertEqual(stack.address, sp)
        XCTAssertEqual(dump["stackAtSP"] as? String, hexString(Array(stack.bytes.prefix(16))))
        let threads = try XCTUnwrap(dump["threads"] as? [[String: Any]])
        XCTAssertEqual(threads.first?["stackStart"] as? UInt64, sp)
        XCTAssertEqual(threads.first?["stackSize"] as? Int, stack.bytes.count)
        // Every image's build-id in its CodeView record, and the /proc-like streams lldb reads.
        let modules = try XCTUnwrap(dump["modules"] as? [[String: Any]])
        XCTAssertEqual(modules.compactMap { $0["buildID"] as? String }, record.images.map(\.buildIDHex))
        XCTAssertTrue((dump["procStatus"] as? String)?.contains("Pid:\t\(record.process?.pid ?? -1)\n") == true)
        XCTAssertTrue((dump["maps"] as? String)?.contains(" r-xp 00000000 00:00 0 \(Harness.path)\n") == true)
    }

    /// The memory the crash was holding: the heap object the crashing function was given is in a
    /// window of the record (labelled by the register that pointed at it), and lldb-16, on the
    /// exported minidump, prints its bytes at that address — which no minidump of ours held before
    /// (the control: an address just past every window is not readable in lldb).
    func testLLDBPrintsTheHeapObjectTheCrashingFrameHeld() throws {
        let path = try crash("heap-object")
        let record = try CrashRecordReader.read(path: path)
        let marker = Array("CRASHCAPTURE-HEAP-OBJECT".utf8)
        let window = try XCTUnwrap(record.memory.first { window in
            window.label.hasPrefix("*") && window.bytes.indices.contains { window.bytes[$0...].starts(with: marker) }
        }, "no window of pointed-at memory holds the heap object: \(record.memory.map(\.label))")
        let offset = try XCTUnwrap(window.bytes.indices.first { window.bytes[$0...].starts(with: marker) })
        let address = window.address + UInt64(offset)
        let exported = try export(path)
        XCTAssertEqual(exported.ending, .exited(0), exported.stderr)
        let output = try lldb(exported.path, executable: Harness.path, ["memory read --force -c 24 -f c 0x\(String(address, radix: 16))"])
        XCTAssertTrue(output.contains("CRASHCAPTURE-HEAP-OBJECT"), "lldb did not print the object at 0x\(String(address, radix: 16)):\n\(output)")
        // The control: past the windows, lldb has nothing to print.
        let beyond = record.memory.map { $0.address + UInt64($0.bytes.count) }.max()! + 0x10_0000
        do {
            let none = try lldb(exported.path, executable: Harness.path, ["memory read --force -c 8 0x\(String(beyond, radix: 16))"])
            XCTFail("lldb read memory the minidump does not hold:\n\(none)")
        } catch {
            XCTAssertTrue("\(error)".contains("memory"), "lldb failed otherwise: \(error)")   // "could not parse memory info" / "memory read failed"
        }
    }

    func testAMultiThreadedCrashListsEveryThreadInLLDB() throws {
        let (record, _, output) = try checkExport("secondary-thread")
        XCTAssertGreaterThanOrEqual(record.threads.count, 2)
        XCTAssertFalse(record.crashedThread?.tid == record.process?.pid, "the crash is on a secondary thread")
        XCTAssertTrue(output.contains("onSecondaryThread"), output)
    }

    func testAThreadReadByThePtraceHelperHasItsRegistersInTheMinidump() throws {
        let (record, dump, output) = try checkExport("crash-with-thread-blocking-signals")
        let ptraced = try XCTUnwrap(record.threads.first { $0.ptraced }, "no thread read by the ptrace helper")
        let threads = try XCTUnwrap(dump["threads"] as? [[String: Any]])
        let thread = try XCTUnwrap(threads.first { $0["tid"] as? Int == Int(ptraced.tid) })
        XCTAssertEqual(thread["pc"] as? UInt64, ptraced.frames.first)
        XCTAssertTrue(output.contains("tid = \(ptraced.tid), 0x\(String(ptraced.frames.first ?? 0, radix: 16, uppercase: false).leftPadded(16))"), output)
    }

    func testAStackOverflowKeepsTheStackAboveTheGuardPage() throws {
        let (record, dump, output) = try checkExport("stack-overflow-thread", frames: 8)
        let sp = try register("rsp", of: record.registers)
        let crashed = try XCTUnwrap((dump["threads"] as? [[String: Any]])?.first { $0["tid"] as? Int == Int(record.crashedThread?.tid ?? 0) })
        let start = try XCTUnwrap(crashed["stackStart"] as? UInt64)
        XCTAssertTrue(start >= sp && start - sp < 4096 + 4096, "the stack starts at sp or the first readable page above it")
        XCTAssertGreaterThan(crashed["stackSize"] as? Int ?? 0, 4096)
        let recursing = output.components(separatedBy: "`cch_recurse").count - 1
        XCTAssertGreaterThanOrEqual(recursing, 8, "lldb unwinds the recursion from the recorded stack:\n\(output)")
    }

    func testTheSwiftFatalMessageIsACrashpadAnnotation() throws {
        let path = try crash("fatal-error")
        let exported = try export(path)
        XCTAssertEqual(exported.ending, .exited(0), exported.stderr)
        let dump = try parsed(exported.path)
        let annotations = try XCTUnwrap(dump["annotations"] as? [String: String])
        XCTAssertEqual(annotations[Minidump.AnnotationKey.fatalMessage], try CrashRecordReader.read(path: path).fatalMessage)
        XCTAssertTrue(annotations[Minidump.AnnotationKey.fatalMessage]?.hasSuffix("Fatal error: crash-harness fatalError text") == true, "\(annotations)")
        XCTAssertEqual((dump["exception"] as? [String: Any])?["code"] as? Int, Int(SIGILL))
        XCTAssertTrue((dump["streamTypes"] as? [Int])?.contains(0x4350_0001) == true)
    }

    func testGlibcsAbortMessageIsACrashpadAnnotation() throws {
        let path = try crash("fortify-overflow")
        let exported = try export(path)
        XCTAssertEqual(exported.ending, .exited(0), exported.stderr)
        let annotations = try XCTUnwrap(try parsed(exported.path)["annotations"] as? [String: String])
        XCTAssertTrue(annotations[Minidump.AnnotationKey.abortMessage]?.contains("buffer overflow detected") == true, "\(annotations)")
    }

    /// Breakpad and Crashpad readers show simple annotations; the exception's type and what()
    /// would otherwise be nowhere in the minidump.
    func testAnUncaughtCxxExceptionIsACrashpadAnnotation() throws {
        let path = try crash("cxx-exception")
        let exported = try export(path)
        XCTAssertEqual(exported.ending, .exited(0), exported.stderr)
        let annotations = try XCTUnwrap(try parsed(exported.path)["annotations"] as? [String: String])
        XCTAssertEqual(annotations[Minidump.AnnotationKey.cxxException],
                       "uncaught C++ exception std::runtime_error: the order could not be priced: currency XTS", "\(annotations)")
    }

    /// The other threads' stacks are not in the record: the export says so on stderr and in the
    /// notes annotation (Breakpad's stackwalker logs an error for each such thread).
    func testTheExportSaysTheOtherThreadsHaveNoStack() throws {
        let path = try crash("secondary-thread")
        let exported = try export(path)
        XCTAssertEqual(exported.ending, .exited(0), exported.stderr)
        XCTAssertTrue(exported.stderr.contains("note: 1 other thread has no stack"), exported.stderr)
        let annotations = try XCTUnwrap(try parsed(exported.path)["annotations"] as? [String: String])
        XCTAssertTrue(annotations[Minidump.AnnotationKey.notes]?.contains("1 other thread has no stack") == true, "\(annotations)")
    }

    /// A record cut anywhere gives a minidump the parser reads, of what the record holds, with a
    /// note that it is incomplete; or, cut inside its file header, a one-line error and no file.
    func testATruncatedRecordGivesAMinidumpOfWhatItHoldsOrAClearError() throws {
        let path = try crash("secondary-thread")
        let whole = try XCTUnwrap(FileManager.default.contents(atPath: path))
        let directory = try scratch("truncated")
        var exportedCuts = 0
        for cut in [16, 40, 200, whole.count / 5, whole.count / 3, whole.count / 2, whole.count * 3 / 4, whole.count - 3] {
            let file = directory + "/crash-cut-\(cut).ccrec"
            try whole.prefix(cut).write(to: URL(fileURLWithPath: file))
            let output = directory + "/cut-\(cut).dmp"
            let exported = try export(file, to: output)
            if exported.ending == .exited(0) {
                exportedCuts += 1
                XCTAssertTrue(exported.stderr.contains("note: the record is incomplete"), "cut \(cut): \(exported.stderr)")
                let dump = try parsed(output)
                let annotations = try XCTUnwrap(dump["annotations"] as? [String: String], "cut \(cut)")
                XCTAssertNotNil(annotations[Minidump.AnnotationKey.incomplete], "cut \(cut)")
                XCTAssertEqual(dump["architecture"] as? String, "AMD64")
                let record = try CrashRecordReader.read(path: file)
                XCTAssertEqual((dump["threads"] as? [[String: Any]])?.count, record.threads.isEmpty && !record.registers.isEmpty ? 1 : record.threads.count, "cut \(cut)")
            } else {
                XCTAssertEqual(exported.ending, .exited(1), "cut \(cut)")
                XCTAssertEqual(exported.stderr.split(separator: "\n").count, 1, "one line: \(exported.stderr)")
                XCTAssertFalse(FileManager.default.fileExists(atPath: output), "no minidump for cut \(cut)")
            }
        }
        XCTAssertGreaterThanOrEqual(exportedCuts, 5, "cuts past the file header are exported")
    }

    // In process, on a record made here: what the options change.

    func record(architecture: CrashRecord.Architecture) -> CrashRecord {
        let registerNames = architecture == .x86_64 ? ["rip", "rsp"] : ["pc", "sp"]
        var record = CrashRecord(architecture: architecture, completeness: .complete)
        record.registers = [Register(name: registerNames[0], value: 0x1000_0010), Register(name: registerNames[1], value: 0x7000_0000)]
        record.memory = [MemoryWindow(label: "stack", address: 0x7000_0000, bytes: Array(repeating: 0xAB, count: 64)),
                         MemoryWindow(label: "fault", address: 0x7000_0020, bytes: Array(repeating: 0xAB, count: 64)),
                         MemoryWindow(label: "pc", address: 0x1000_0000, bytes: [0x90, 0x90])]
        record.threads = [CrashThread(tid: 7, name: "main", crashed: true, frames: [0x1000_0010])]
        record.signal = SignalInfo(number: 11, name: "SIGSEGV", code: 1, codeName: "SEGV_MAPERR", codeDescription: "", faultAddress: 0x7000_0050)
        return record
    }

    func testWithoutMemoryTheMinidumpHoldsNoByteOfTheProcess() throws {
        let record = self.record(architecture: .x86_64)
        let with = try Minidump(record: record)
        let without = try Minidump(record: record, memory: false)
        let file = try scratch("memory") + "/without.dmp"
        try Data(without.bytes).write(to: URL(fileURLWithPath: file))
        let dump = try parsed(file)
        XCTAssertEqual((dump["memory"] as? [[Int]])?.count, 0)
        XCTAssertEqual((dump["threads"] as? [[String: Any]])?.first?["stackSize"] as? Int, 0)
        XCTAssertTrue(without.notes.contains { $0.hasPrefix("memory left out") })
        XCTAssertFalse(without.bytes.contains(0xAB))
        XCTAssertTrue(with.bytes.contains(0xAB))
    }

    func testOverlappingWindowsBecomeOneRangeAndTheStackPointsAtIt() throws {
        let file = try scratch("overlap") + "/with.dmp"
        try Data(try Minidump(record: record(architecture: .x86_64)).bytes).write(to: URL(fileURLWithPath: file))
        let dump = try parsed(file)
        XCTAssertEqual(dump["memory"] as? [[Int]], [[0x1000_0000, 2], [0x7000_0000, 0x60]])
        XCTAssertEqual((dump["threads"] as? [[String: Any]])?.first?["stackSize"] as? Int, 0x60)
    }

    func testAnArm64RecordHasBreakpadsArm64Context() throws {
        let minidump = try Minidump(record: record(architecture: .aarch64))
        let file = try scratch("arm64") + "/arm64.dmp"
        try Data(minidump.bytes).write(to: URL(fileURLWithPath: file))
        let dump = try parsed(file)
        XCTAssertEqual(dump["architecture"] as? String, "AARCH64")
        let thread = try XCTUnwrap((dump["threads"] as? [[String: Any]])?.first)
        XCTAssertEqual(thread["contextSize"] as? Int, 796)
        XCTAssertEqual(thread["pc"] as? UInt64, 0x1000_0010)
        XCTAssertEqual(thread["sp"] as? UInt64, 0x7000_0000)
    }

    func testARecordOfAnotherCPUIsRefused() {
        XCTAssertThrowsError(try Minidump(record: record(architecture: .unknown(7)))) { error in
            XCTAssertEqual(error as? Minidump.Failure, .unknownArchitecture(7))
        }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
