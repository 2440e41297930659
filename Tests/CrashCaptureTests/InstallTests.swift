// InstallTests.swift — start/stop in this process: idempotence, rollback of what we replaced, directories, threads, stacks.
import CShims
@testable import CrashCapture
@testable import CrashRecordFormat
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class InstallTests: XCTestCase {
    var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("install-tests-\(getpid())-\(UInt32.random(in: 0...UInt32.max))/records").path
        unsetenv(CrashHandler.disableEnvironmentVariable)
    }

    override func tearDown() {
        CrashHandler.stop()
        unsetenv(CrashHandler.disableEnvironmentVariable)
    }

    private func config() -> CrashHandler.Configuration {
        CrashHandler.Configuration(directory: directory, appName: "install-tests", appVersion: "1.0")
    }

    private func currentAction(_ signo: Int32) -> sigaction {
        var action = sigaction()
        sigaction(signo, nil, &action)
        return action
    }

    private func handlerAddress(_ action: sigaction) -> UInt {
        unsafeBitCast(action.__sigaction_handler, to: UInt.self)
    }

    func testStartingTwiceIsHarmlessAndStopRestoresThePreviousActions() throws {
        let before = [SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTRAP].map { handlerAddress(currentAction($0)) }
        XCTAssertEqual(try CrashHandler.start(config()), .installed)
        XCTAssertTrue(CrashHandler.isInstalled)
        let installed = currentAction(SIGSEGV)
        XCTAssertNotEqual(installed.sa_flags & SA_SIGINFO, 0)
        XCTAssertNotEqual(installed.sa_flags & Int32(SA_ONSTACK), 0)
        XCTAssertEqual(installed.sa_flags & Int32(bitPattern: UInt32(SA_RESETHAND)), 0)
        XCTAssertEqual(try CrashHandler.start(config()), .alreadyInstalled)
        XCTAssertEqual(handlerAddress(currentAction(SIGSEGV)), handlerAddress(installed), "a second start must not reinstall")
        XCTAssertTrue(CrashHandler.stop())
        XCTAssertFalse(CrashHandler.isInstalled)
        XCTAssertFalse(CrashHandler.stop())
        let after = [SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTRAP].map { handlerAddress(currentAction($0)) }
        XCTAssertEqual(after, before)
    }

    func testStopLeavesAHandlerInstalledAfterUsInPlace() throws {
        try CrashHandler.start(config())
        let original = currentAction(SIGBUS)
        var mine = sigaction()
        mine.__sigaction_handler.sa_handler = { _ in }
        sigaction(SIGBUS, &mine, nil)
        CrashHandler.stop()
        XCTAssertEqual(handlerAddress(currentAction(SIGBUS)), handlerAddress(mine))
        var restore = original
        sigaction(SIGBUS, &restore, nil)
    }

    func testStartCreatesTheRecordDirectoryWithMode0700() throws {
        try CrashHandler.start(config())
        let attributes = try FileManager.default.attributesOfItem(atPath: directory)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o700)
        XCTAssertEqual(CrashHandler.recordDirectory, directory)
    }

    func testStartThrowsAClearErrorWhenTheDirectoryCannotBeMade() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-dir-\(getpid())").path
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        defer { try? FileManager.default.removeItem(atPath: file) }
        var configuration = config()
        configuration.directory = file + "/records"
        XCTAssertThrowsError(try CrashHandler.start(configuration)) { error in
            let failure = error as? CrashCaptureError
            XCTAssertEqual(failure?.errno, ENOTDIR, "\(error)")
            XCTAssertTrue("\(error)".contains("mkdir"), "\(error)")
        }
        XCTAssertFalse(CrashHandler.isInstalled)
    }

    func testARecordDirectoryThatIsASymlinkIsRefused() throws {
        let real = directory + "-real"
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: (directory as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: directory, withDestinationPath: real)
        XCTAssertThrowsError(try CrashHandler.start(config())) { error in
            XCTAssertTrue([ELOOP, ENOTDIR].contains((error as? CrashCaptureError)?.errno ?? 0), "\(error)")
            XCTAssertTrue("\(error)".contains("open record directory"), "\(error)")
        }
    }

    func testTheDisableEnvironmentVariableInstallsNothing() throws {
        setenv(CrashHandler.disableEnvironmentVariable, "1", 1)
        XCTAssertEqual(try CrashHandler.start(config()), .disabledByEnvironment)
        XCTAssertFalse(CrashHandler.isInstalled)
    }

    func testStartAddsNoThreadAndNoTimer() throws {
        // In a fresh child: this test process has other tests' threads coming and going.
        let harness = Harness.debug
        let out = directory + "-idle.json"
        try FileManager.default.createDirectory(atPath: (directory as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let child = try ChildProcess.run(harness, ["idle-check", "--dir", directory], stdout: out)
        XCTAssertEqual(child.ending, .exited(0))
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: try XCTUnwrap(FileManager.default.contents(atPath: out))) as? [String: Int])
        XCTAssertEqual(report["threadsAfter"], report["threadsBefore"], "\(report)")
        XCTAssertEqual(report["timersAfter"], 0, "\(report)")
        XCTAssertGreaterThan(report["threadsBefore"] ?? 0, 0)
    }

    func testThreadsCreatedAfterStartGetAnAlternateStack() throws {
        try CrashHandler.start(config())
        XCTAssertEqual(alternateStackOnNewThread().flags & Int32(SS_DISABLE), 0)
        XCTAssertGreaterThanOrEqual(alternateStackOnNewThread().size, 64 * 1024)
        CrashHandler.stop()
        XCTAssertNotEqual(alternateStackOnNewThread().flags & Int32(SS_DISABLE), 0, "after stop, new threads are left alone")
    }

    func testAnExistingLargeEnoughAlternateStackIsKept() throws {
        let result = onNewThread { () -> (before: UInt, after: UInt) in
            let size = 256 * 1024
            let memory = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
            var mine = stack_t(ss_sp: memory, ss_flags: 0, ss_size: size)
            sigaltstack(&mine, nil)
            _ = cc_prepare_current_thread()
            var now = stack_t()
            sigaltstack(nil, &now)
            var off = stack_t(ss_sp: nil, ss_flags: Int32(SS_DISABLE), ss_size: 0)
            sigaltstack(&off, nil)
            memory.deallocate()
            return (UInt(bitPattern: memory), UInt(bitPattern: now.ss_sp))
        }
        XCTAssertEqual(result.after, result.before)
    }

    func testTheWriterAndTheReaderComputeTheSameChecksum() {
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 7, 64, 4096] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let c = bytes.withUnsafeBytes { cc_crc32(0, $0.baseAddress, $0.count) }
            XCTAssertEqual(c, CRC32.checksum(bytes))
        }
    }

    func testSignalNamesAreTheConventionalOnes() {
        XCTAssertEqual(signalName(SIGSEGV), "SIGSEGV")
        XCTAssertEqual(signalName(SIGTRAP), "SIGTRAP")
        XCTAssertEqual(signalName(1234), "signal 1234")
    }

    // MARK: helpers

    private func alternateStackOnNewThread() -> (flags: Int32, size: Int) {
        onNewThread { () -> (Int32, Int) in
            var stack = stack_t()
            sigaltstack(nil, &stack)
            return (stack.ss_flags, stack.ss_size)
        }
    }

    private func onNewThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let box = ThreadResultBox<T>()
        let thread = Thread {
            box.value = body()
            box.done.signal()
        }
        thread.start()
        box.done.wait()
        return box.value!
    }
}

// @unchecked: `value` is written by the thread before `done` is signalled and read only after.
private final class ThreadResultBox<T>: @unchecked Sendable {
    var value: T?
    let done = DispatchSemaphore(value: 0)
}
