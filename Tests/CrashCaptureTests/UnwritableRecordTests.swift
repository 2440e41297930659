// UnwritableRecordTests.swift — a crash whose record cannot be written whole (a full or read-only
// filesystem, a hard file-size limit, a directory removed after start) still dies of its signal and
// says on stderr what happened, with the frames a whole record of the same crash has.
import CrashCapture
import CrashRecordFormat
import CrashScenarios
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class UnwritableRecordTests: XCTestCase {
    /// The scenario every run here performs.
    static let scenario = "null-dereference"
    /// Frames the summary shows (CShims/crash/cc_summary.c, CC__SUMMARY_FRAMES).
    static let summaryFrames = 8

    /// One run of the scenario's harness child.
    struct Crash {
        var ending: ChildProcess.Ending
        var pid: pid_t
        var stdout: String
        var stderr: String
        var leftRunning: [ChildProcess.Leftover]
        var summary: StderrSummary? { StderrSummary(stderr: stderr) }
    }

    /// The same crash into a writable directory: its whole record's top frames as the record's
    /// readers label them, its stderr and its reference run.
    struct Baseline {
        var labels: [String]
        var stderr: String
        var reference: ProcessOutcome
    }

    nonisolated(unsafe) private static var cachedBaseline: Baseline?

    /// Runs the scenario once into a writable directory (with its CRASHCAPTURE_DISABLE=1 reference,
    /// both verified against the scenario table by ``Harness/run(_:binary:file:line:)``).
    static func baseline() throws -> Baseline {
        if let cachedBaseline { return cachedBaseline }
        let run = try Harness.run(scenario)
        let record = try XCTUnwrap(run.record, "the writable run's record")
        XCTAssertTrue(record.isComplete)
        let thread = try XCTUnwrap(record.crashedThread)
        let labels = thread.frames.prefix(summaryFrames).map { record.offsetLabel(for: $0) ?? "0x" + String($0, radix: 16) }
        let baseline = Baseline(labels: labels, stderr: run.outcome.stderr, reference: try XCTUnwrap(run.reference))
        cachedBaseline = baseline
        return baseline
    }

    /// `crash-harness run null-dereference --dir directory` through `launcher` (nsenter, prlimit),
    /// its stdout and stderr kept; CrashCapture off with `captureDisabled`; `before` acts on the
    /// running child before it is waited for.
    static func crash(into directory: String, launcher: [String] = [], captureDisabled: Bool = false,
                      environment extra: [String: String] = [:], before: ((ChildProcess.Running) throws -> Void)? = nil) throws -> Crash {
        let output = try Scratch.directory("output")
        defer { try? FileManager.default.removeItem(atPath: output) }
        var environment = Harness.environment.merging(extra) { $1 }
        if captureDisabled { environment[CrashHandler.disableEnvironmentVariable] = "1" }
        let command = launcher + [Harness.debug, "run", scenario, "--dir", directory]
        let running = try ChildProcess.start(command[0], Array(command.dropFirst()), environment: environment,
                                             stdout: output + "/stdout", stderr: output + "/stderr", ownProcessGroup: true)
        do { try before?(running) } catch { kill(-running.pid, SIGKILL); _ = running.wait(); throw error }
        let child = running.wait(timeout: 60)
        func text(_ name: String) -> String { String(decoding: FileManager.default.contents(atPath: output + "/" + name) ?? Data(), as: UTF8.self) }
        return Crash(ending: child.ending, pid: child.pid, stdout: text("stdout"), stderr: text("stderr"), leftRunning: child.leftRunning)
    }

    /// Checks a run whose record could not be written whole: it died as its reference run did and
    /// printed what it printed, plus a summary with the crash, `reason`, the partial record (a
    /// file `exists` says is there, of this process) or the directory none could be created in,
    /// and the whole record's top frames.
    func assertSummarised(_ crash: Crash, reference: Crash, reason: String, partialIn directory: String?, uncreatedIn: String? = nil,
                          exists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) },
                          file: StaticString = #filePath, line: UInt = #line) throws {
        let baseline = try Self.baseline()
        XCTAssertEqual(crash.ending, .signaled(SIGSEGV), file: file, line: line)
        XCTAssertEqual(crash.ending, reference.ending, "the CRASHCAPTURE_DISABLE=1 run", file: file, line: line)
        XCTAssertEqual(crash.leftRunning, [], file: file, line: line)
        XCTAssertEqual(crash.stdout, reference.stdout, file: file, line: line)
        XCTAssertEqual(CrashLine.removed(from: StderrSummary.removed(from: crash.stderr)), reference.stderr, "stderr besides the summary and the crash line",
                       file: file, line: line)
        // The crash line came first, before anything could fail, and names the record it tried.
        let crashLine = try XCTUnwrap(try CrashLine.all(in: crash.stderr).first, crash.stderr, file: file, line: line)
        XCTAssertEqual(crashLine.signal, "SIGSEGV", file: file, line: line)
        XCTAssertEqual(crashLine.pid, crash.pid, file: file, line: line)
        let summary = try XCTUnwrap(crash.summary, "no summary on stderr: \(crash.stderr)", file: file, line: line)
        XCTAssertEqual(summary.crash, "pid \(crash.pid) tid \(crash.pid) crashed: SIGSEGV (SEGV_MAPERR) at 0x0", file: file, line: line)
        XCTAssertEqual(summary.reason, "record not written whole: " + reason, file: file, line: line)
        XCTAssertEqual(summary.lineCount, 3 + Self.summaryFrames, crash.stderr, file: file, line: line)
        XCTAssertEqual(summary.frames, baseline.labels, "the whole record's frames, labelled as CrashRecord labels them", file: file, line: line)
        if let directory {
            let path = try XCTUnwrap(summary.partialRecord, crash.stderr, file: file, line: line)
            XCTAssertEqual((path as NSString).deletingLastPathComponent, directory, file: file, line: line)
            let name = try XCTUnwrap(RecordFileName(path), "not a record's name: \(path)", file: file, line: line)
            XCTAssertEqual(name.pid, crash.pid, file: file, line: line)
            XCTAssertTrue(path.hasSuffix(".partial"), path, file: file, line: line)
            XCTAssertTrue(exists(path), "no \(path)", file: file, line: line)
            XCTAssertNil(summary.uncreatedIn, file: file, line: line)
        } else {
            XCTAssertNil(summary.partialRecord, file: file, line: line)
            XCTAssertEqual(summary.uncreatedIn, uncreatedIn, file: file, line: line)
        }
    }

    // MARK: A whole record

    func testAWholeRecordAddsOnlyTheCrashLineToStderr() throws {
        let baseline = try Self.baseline()
        XCTAssertNil(StderrSummary(stderr: baseline.stderr), baseline.stderr)
        XCTAssertFalse(baseline.stderr.contains(StderrSummary.prefix))
        XCTAssertEqual(CrashLine.removed(from: baseline.stderr), baseline.reference.stderr)
        let lines = try CrashLine.all(in: baseline.stderr)
        XCTAssertEqual(lines.count, 1, baseline.stderr)
        XCTAssertEqual(baseline.labels.count, Self.summaryFrames)
        XCTAssertTrue(baseline.labels.allSatisfy { $0.hasPrefix("crash-harness+0x") }, "\(baseline.labels)")
    }

    // MARK: A full filesystem (a tiny tmpfs in a mount namespace of its own)

    func testAFourKibibyteFilesystemKeepsWhatFitAndTheSummaryNamesIt() throws {
        let namespace = try MountNamespace()
        defer { namespace.end() }
        let directory = try namespace.tmpfs("size=4k")
        let crash = try Self.crash(into: directory, launcher: namespace.launcher)
        let reference = try Self.crash(into: directory, launcher: namespace.launcher, captureDisabled: true)
        try assertSummarised(crash, reference: reference, reason: "writing it failed: ENOSPC: no space left on device (errno 28)",
                             partialIn: directory, exists: { FileManager.default.fileExists(atPath: namespace.outside($0)) })
        // The most valuable part came first: the cut record still holds the signal.
        let path = try XCTUnwrap(crash.summary?.partialRecord)
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: namespace.outside(path))[.size] as? NSNumber)
        XCTAssertEqual(size.intValue, 4096, "the filesystem's one page, filled")
        let record = try CrashRecordReader.read(path: namespace.outside(path))
        XCTAssertFalse(record.isComplete)
        XCTAssertEqual(record.signal?.number, SIGSEGV)
        XCTAssertEqual(record.process.map { Int($0.pid) }, Int(crash.pid))
    }

    func testAFullFilesystemWhereEvenTheHeaderDoesNotFitLeavesAnEmptyPartialRecord() throws {
        let namespace = try MountNamespace()
        defer { namespace.end() }
        let directory = try namespace.tmpfs("size=4k")
        XCTAssertTrue(FileManager.default.createFile(atPath: namespace.outside(directory + "/filler"), contents: Data(count: 4096)))
        let crash = try Self.crash(into: directory, launcher: namespace.launcher)
        let reference = try Self.crash(into: directory, launcher: namespace.launcher, captureDisabled: true)
        try assertSummarised(crash, reference: reference, reason: "writing it failed: ENOSPC: no space left on device (errno 28)",
                             partialIn: directory, exists: { FileManager.default.fileExists(atPath: namespace.outside($0)) })
        let path = try XCTUnwrap(crash.summary?.partialRecord)
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: namespace.outside(path))[.size] as? NSNumber)
        XCTAssertEqual(size.intValue, 0)
    }

    func testAFilesystemOutOfInodesCreatesNoFileAndTheSummarySaysWhere() throws {
        // The root directory takes the only inode.
        try assertNoFileCreated(tmpfs: "size=64k,nr_inodes=1", reason: "creating its file failed: ENOSPC: no space left on device (errno 28)")
    }

    /// A crash into a tmpfs mounted with `options` where no record file can be created: the
    /// summary says `reason` and names the directory, and the directory stays empty.
    func assertNoFileCreated(tmpfs options: String, reason: String) throws {
        let namespace = try MountNamespace()
        defer { namespace.end() }
        let directory = try namespace.tmpfs(options)
        let crash = try Self.crash(into: directory, launcher: namespace.launcher)
        let reference = try Self.crash(into: directory, launcher: namespace.launcher, captureDisabled: true)
        try assertSummarised(crash, reference: reference, reason: reason, partialIn: nil, uncreatedIn: directory)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: namespace.outside(directory)), [])
    }

    // MARK: A read-only filesystem

    func testAReadOnlyFilesystemCreatesNoFileAndTheSummarySaysWhere() throws {
        try assertNoFileCreated(tmpfs: "size=64k,ro", reason: "creating its file failed: EROFS: read-only file system (errno 30)")
    }

    // MARK: A hard file-size limit

    func testAHardFileSizeLimitCutsTheRecordAndTheSummaryNamesIt() throws {
        let prlimit = try XCTUnwrap(Tools.find("prlimit"), "prlimit (util-linux) is not installed")
        let launcher = [prlimit, "--fsize=4096:4096", "--"]
        let directory = try Harness.scratchDirectory("fsize")
        let crash = try Self.crash(into: directory, launcher: launcher)
        let reference = try Self.crash(into: try Harness.scratchDirectory("fsize-reference"), launcher: launcher, captureDisabled: true)
        try assertSummarised(crash, reference: reference, reason: "writing it failed: EFBIG: file too large (errno 27)", partialIn: directory)
        let path = try XCTUnwrap(crash.summary?.partialRecord)
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)
        XCTAssertEqual(size.intValue, 4096)
        XCTAssertEqual(try CrashRecordReader.read(path: path).signal?.number, SIGSEGV)
    }

    // MARK: A directory removed after start

    func testADirectoryRemovedAfterStartCreatesNoFileAndTheSummarySaysWhere() throws {
        let scratch = try Harness.scratchDirectory("removed")
        let directory = scratch + "/records"
        let pause = scratch + "/pause"
        let crash = try Self.crash(into: directory, environment: ["CRASH_HARNESS_PAUSE_BEFORE_CRASH": pause]) { _ in
            XCTAssertTrue(Harness.waitForFile(pause + ".ready"), "the harness did not pause before its crash")
            try FileManager.default.removeItem(atPath: directory)   // after CrashHandler.start opened it
            XCTAssertTrue(FileManager.default.createFile(atPath: pause + ".go", contents: Data()))
        }
        let reference = try Self.crash(into: scratch + "/reference", captureDisabled: true)
        try assertSummarised(crash, reference: reference, reason: "creating its file failed: ENOENT: no such file or directory (errno 2)",
                             partialIn: nil, uncreatedIn: directory)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory))
    }
}

/// A mount namespace of its own (`unshare --mount`, held open by a sleeping child), where a test
/// mounts what it needs without touching the machine's mounts: they vanish with the holder.
/// Programs run inside it through ``launcher``; its files are read from outside through
/// `/proc/<holder>/root`.
final class MountNamespace {
    let holder: ChildProcess.Running
    private var ended = false

    /// Starts the holder and waits until it is in its new namespace. Skips the test where
    /// mounting needs privileges this process lacks.
    init() throws {
        guard getuid() == 0 else { throw XCTSkip("mounting a tmpfs in a mount namespace needs root") }
        let unshare = try XCTUnwrap(Tools.find("unshare"), "unshare (util-linux) is not installed")
        holder = try ChildProcess.start(unshare, ["--mount", "--propagation", "private", "sleep", "600"])
        let ours = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/mnt")
        for _ in 0..<2000 {
            if let theirs = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(holder.pid)/ns/mnt"), theirs != ours { return }
            usleep(5000)
        }
        end()
        throw Tools.Failure(description: "unshare --mount did not enter a new mount namespace")
    }

    /// Runs a command inside the namespace: `nsenter` then the command (no fork: same pid).
    var launcher: [String] { [Tools.find("nsenter") ?? "/usr/bin/nsenter", "--target", "\(holder.pid)", "--mount", "--"] }

    /// `path` of the namespace, as this process reaches it.
    func outside(_ path: String) -> String { "/proc/\(holder.pid)/root" + path }

    /// A new directory with a tmpfs mounted on it with `options` (`size=4k,ro`), in the namespace.
    func tmpfs(_ options: String) throws -> String {
        let directory = try Harness.scratchDirectory("tmpfs")
        _ = try Tools.output(launcher[0], Array(launcher.dropFirst()) + ["mount", "-t", "tmpfs", "-o", options, "tmpfs", directory])
        return directory
    }

    /// Ends the holder: the namespace and its mounts go with it.
    func end() {
        guard !ended else { return }
        ended = true
        kill(holder.pid, SIGKILL)
        _ = holder.wait()
    }

    deinit { end() }
}
