// CrashHandler.swift — the one call a program makes to have its crashes recorded.
//
// Capture imports no Foundation and knows no event model: a program that links it loads the C
// core and swift-log's Logging, nothing else (CaptureFootprintTests checks; the C core unwinds
// by the images' own call-frame information, CShims/unwind/cc_cfi.c). The
// compensating `$AppEnd` a crash writes is rendered by the reporter side (CrashReporter's
// `CrashAppEndPublisher`) and handed over through `setAppEndTemplate`.
import CShims
import HostFacts
#if canImport(Glibc)
import Glibc
#endif
public import Logging
import Synchronization
@_exported import CrashRecordFormat

/// Records fatal signals (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTRAP) of this process
/// as crash records on disk, then lets the process die exactly as it would have.
///
/// ```swift
/// try CrashHandler.start(.init(directory: "/var/lib/myapp/crashes", appName: "myapp", appVersion: "1.4.2"))
/// ```
///
/// Everything after the signal is done by the C core in `CShims` (async-signal-safe); this
/// type only prepares it. Records are read back with `CrashRecordReader` (module `CrashRecordFormat`, re-exported).
public enum CrashHandler {
    /// Setting this environment variable to `1` (or `true`/`yes`) makes ``start(_:)`` install nothing.
    package static let disableEnvironmentVariable = "CRASHCAPTURE_DISABLE"

    /// What ``start(_:)`` did.
    public enum StartResult: Equatable, Sendable {
        /// Handlers are installed; crashes from now on are recorded.
        case installed
        /// An earlier call installed them; this call changed nothing.
        case alreadyInstalled
        /// `CRASHCAPTURE_DISABLE=1` is set: nothing was installed.
        case disabledByEnvironment
        /// The process runs setuid/setgid (`AT_SECURE`): capture stays off, as core dumps do.
        case disabledInSecureProcess
    }

    /// Installs the crash handlers. Calling it again is harmless (returns `.alreadyInstalled`).
    ///
    /// Creates `configuration.directory` (mode 0700) if it does not exist.
    /// - Throws: ``CrashCaptureError`` when the directory cannot be created or opened, a
    ///   handler cannot be installed (everything is rolled back then), or a configuration
    ///   field is too long.
    @discardableResult
    public static func start(_ configuration: CrashHandler.Configuration) throws -> StartResult {
        // getenv and a byte comparison: start is on the launch path (Foundation's environment
        // dictionary costs a third of a millisecond; String.lowercased loads Unicode tables).
        if isDisabledByEnvironment() { return .disabledByEnvironment }
        if cc_is_installed() != 0 { return .alreadyInstalled }
        // Held across install so that a template published meanwhile is not lost: it is either
        // passed to cc_install or republished after it. The directory is made only when install
        // finds none there (ENOENT; ENOTDIR: mkdir then says which part is not a directory): an
        // existing one costs no `mkdir`.
        var (code, errnoValue) = appEndTemplate.withLock { template in call(configuration, template: template, cc_install) }
        if code == CC_ERR_DIRECTORY.rawValue && (errnoValue == ENOENT || errnoValue == ENOTDIR) {
            try Directory.createForCapture(configuration.directory)
            (code, errnoValue) = appEndTemplate.withLock { template in call(configuration, template: template, cc_install) }
        }
        let result = try startResult(code, errno: errnoValue, configuration)
        // Room for the next crash: a crash loop adds a record per start, so a start keeps the
        // directory under its bounds (RecordDirectoryBound; cheap when it is: a listing, here
        // through the directory fd install opened).
        var records: UInt64 = 0, bytes: UInt64 = 0
        let counted = result == .installed && cc_installed_directory_usage(&records, &bytes) == 0
        RecordDirectoryBound.enforce(directory: configuration.directory,
                                     limits: RecordDirectoryLimits(maxRecords: configuration.maxRecords, maxBytes: configuration.maxRecordBytes),
                                     counted: counted ? (Int(clamping: records), Int(clamping: bytes)) : nil)
        if result == .installed {
            running.withLock { $0 = configuration }
            startHangDetection(configuration)
        }
        return result
    }

    /// The configuration capture runs with (the last ``start(_:)`` that installed it, or
    /// ``adopt(_:)``), `nil` while it does not run: what the reporter builds on when it takes
    /// capture over, so that every setting it does not set stays as the app set it.
    package static var runningConfiguration: Configuration? {
        cc_is_installed() != 0 ? running.withLock { $0 } : nil
    }
    private static let running = Mutex<Configuration?>(nil)

    /// Hang detection as the configuration and the environment ask (HangDetection.swift): no
    /// thread at all when neither does.
    private static func startHangDetection(_ configuration: CrashHandler.Configuration) {
        let detection = HangDetection.effective(configuration.hangDetection)
        guard detection != nil || (HangMonitor.everStarted.load(ordering: .sequentiallyConsistent) &&
                                   HangMonitor.shared.running.load(ordering: .relaxed)) else { return }
        HangMonitor.configure(detection, directory: configuration.directory,
                              limits: RecordDirectoryLimits(maxRecords: configuration.maxRecords, maxBytes: configuration.maxRecordBytes))
    }

    /// Applies `configuration` to the capture that is already running (started by an earlier
    /// ``start(_:)``), in place: its record directory, app name and version, run id, frames,
    /// flags, watchdog, crash-time uploader and hang detection; the signal actions stay as they
    /// are. What `CrashReporting.start` does when the app started capture itself first: it builds
    /// `configuration` on ``runningConfiguration`` with its own settings on top, so its runs and
    /// crash-time upload work and every setting it does not set stays the app's.
    /// - Returns: `.installed`; `.disabledByEnvironment` with `CRASHCAPTURE_DISABLE=1`.
    /// - Throws: ``CrashCaptureError`` when nothing is running, or the directory cannot be made.
    @discardableResult
    package static func adopt(_ configuration: CrashHandler.Configuration) throws -> StartResult {
        if isDisabledByEnvironment() { return .disabledByEnvironment }
        try Directory.createForCapture(configuration.directory)
        RecordDirectoryBound.enforce(directory: configuration.directory,
                                     limits: RecordDirectoryLimits(maxRecords: configuration.maxRecords, maxBytes: configuration.maxRecordBytes))
        let result = try appEndTemplate.withLock { template in try install(configuration, template: template, call: cc_reconfigure) }
        running.withLock { $0 = configuration }
        startHangDetection(configuration)
        return result
    }

    /// Whether `CRASHCAPTURE_DISABLE` is `1`, `true` or `yes` (any case). C string calls only: in
    /// a fresh process the first Swift array or generic use costs more than all of this.
    static func isDisabledByEnvironment() -> Bool {
        guard let raw = getenv(disableEnvironmentVariable) else { return false }
        return strcmp(raw, "1") == 0 || strcasecmp(raw, "true") == 0 || strcasecmp(raw, "yes") == 0
    }

    private static func install(_ configuration: CrashHandler.Configuration, template: String,
                                call install: (UnsafePointer<cc_config_t>, UnsafeMutablePointer<Int32>) -> Int32) throws -> StartResult {
        let (code, errnoValue) = call(configuration, template: template, install)
        return try startResult(code, errno: errnoValue, configuration)
    }

    /// `install` (cc_install or cc_reconfigure) called with `configuration` as C sees it: its
    /// result code and errno.
    private static func call(_ configuration: CrashHandler.Configuration, template: String,
                             _ call: (UnsafePointer<cc_config_t>, UnsafeMutablePointer<Int32>) -> Int32) -> (Int32, Int32) {
        var errnoValue: Int32 = 0
        let result: Int32 = configuration.directory.withCString { dir in
            configuration.appName.withCString { name in
                configuration.appVersion.withCString { version in
                    template.withCString { templatePointer in configuration.runID.withCString { runID in
                        var config = cc_config_t()
                        config.directory = dir
                        config.app_name = name
                        config.app_version = version
                        config.app_end_template = templatePointer
                        config.run_id = runID
                        config.max_frames = UInt32(clamping: configuration.maxFrames)
                        var flags: UInt32 = 0
                        if !configuration.recordOtherThreads { flags |= UInt32(CC_FLAG_NO_THREAD_STACKS) }
                        if !configuration.threadHelper { flags |= UInt32(CC_FLAG_NO_THREAD_HELPER) }
                        if !configuration.alternateStacksForNewThreads { flags |= UInt32(CC_FLAG_NO_ALTSTACK_NEW_THREADS) }
                        if configuration._testCrashInsideHandler { flags |= UInt32(CC_FLAG_TEST_CRASH_IN_HANDLER) }
                        if configuration._testHangInsideHandler { flags |= UInt32(CC_FLAG_TEST_HANG_IN_HANDLER) }
                        if configuration._testSlowThreadHelper { flags |= UInt32(CC_FLAG_TEST_SLOW_HELPER) }
                        if configuration._testFaultInsideUnwinder { flags |= UInt32(CC_FLAG_TEST_FAULT_IN_UNWINDER) }
                        if configuration._testFrameRecordsOnly { flags |= UInt32(CC_FLAG_TEST_FRAME_RECORDS_ONLY) }
                        if configuration._testUnknownTaskLayout { flags |= UInt32(CC_FLAG_TEST_UNKNOWN_TASK_LAYOUT) }
                        if configuration._testListDescriptors { flags |= UInt32(CC_FLAG_TEST_LIST_DESCRIPTORS) }
                        if configuration._testImagesFromMaps { flags |= UInt32(CC_FLAG_TEST_IMAGES_FROM_MAPS) }
                        if !configuration.crashLine { flags |= UInt32(CC_FLAG_NO_CRASH_LINE) }
                        config.watchdog_seconds = configuration.watchdogWholeSeconds
                        config.flags = flags
                        config.thread_dump_signal = configuration.threadDumpSignal ?? 0
                        // No uploader (the default): no array of C strings either (in a fresh
                        // process, the first generic array work costs more than the install).
                        guard let uploader = configuration.uploader else { return call(&config, &errnoValue) }
                        // The uploader's strings: copied by cc_install, alive until it returns.
                        return withCStrings(uploader.arguments) { arguments in
                            withCStrings(uploader.environment) { environment in
                                uploader.path.withCString { path in
                                    config.uploader_path = path
                                    config.uploader_arguments = arguments
                                    config.uploader_environment = environment
                                    return call(&config, &errnoValue)
                                }
                            }
                        }
                    } }
                }
            }
        }
        return (result, errnoValue)
    }

    /// The result of `call` as ``start(_:)`` returns it, or the error it throws.
    private static func startResult(_ result: Int32, errno errnoValue: Int32,
                                    _ configuration: CrashHandler.Configuration) throws -> StartResult {
        switch result {
        case Int32(CC_INSTALLED.rawValue):
            return .installed
        case Int32(CC_ALREADY_INSTALLED.rawValue):
            return .alreadyInstalled
        case CC_ERR_SECURE.rawValue:
            return .disabledInSecureProcess
        case CC_ERR_DIRECTORY.rawValue:
            throw CrashCaptureError(operation: "open record directory \(configuration.directory)", errno: errnoValue)
        case CC_ERR_SIGACTION.rawValue:
            throw CrashCaptureError(operation: "sigaction", errno: errnoValue)
        case CC_ERR_BUSY.rawValue:
            throw CrashCaptureError(operation: "start (another thread is starting or stopping CrashCapture)", errno: EBUSY)
        case CC_ERR_NOT_INSTALLED.rawValue:
            throw CrashCaptureError(operation: "adopt (capture is not running)", errno: ESRCH)
        default:
            throw CrashCaptureError(operation: "start (invalid configuration)", errno: EINVAL)
        }
    }

    /// Puts back the signal actions that were there before ``start(_:)``, where ours is still
    /// installed. Meant for tests and for programs that hand crash handling to something else.
    /// Returns `false` if nothing was installed.
    @discardableResult
    public static func stop() -> Bool {
        HangMonitor.configure(nil, directory: "", limits: .standard)
        running.withLock { $0 = nil }
        return cc_uninstall() == 0
    }

    /// Dies of SIGSEGV, a write through a null pointer: the throwaway child of
    /// `CrashReporting.verifySetup`.
    package static func crashForSetupCheck() -> Never {
        cc_verify_crash()
        fatalError("cc_verify_crash returned")
    }

    /// Whether the handlers are installed now.
    public static var isInstalled: Bool { cc_is_installed() != 0 }

    /// The directory records are written to, or `nil` before ``start(_:)``.
    public static var recordDirectory: String? {
        let directory = String(cString: cc_record_directory())
        return directory.isEmpty ? nil : directory
    }

    /// Looks at the Swift runtime's message buffer, so that a crash later tells the runtime's
    /// earlier warnings from its own fatal-error message (`cc_note_runtime_reports`): the
    /// watchers call it each tick. One load and a compare while nothing new was reported.
    package static func noteRuntimeReports() { cc_note_runtime_reports() }

    /// Leaves a breadcrumb: a short message the next crash record will carry (the last 64 are
    /// kept; longer messages are cut at 232 bytes). Lock-free, safe from any thread, never fails.
    public static func leaveBreadcrumb(_ message: String, level: Logger.Level = .info) {
        var message = message
        message.withUTF8 { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                cc_breadcrumb(BreadcrumbLevel(level).rawValue, chars.baseAddress, chars.count)
            }
        }
    }

    /// The app's scope a crash record carries: tags, the user, named contexts (`CrashScope`).
    public static var scope: CrashScope { scopeState.withLock { $0 } }

    /// Changes the app's scope. A crash after this returns carries the new scope, one during it
    /// the old or the new, whole (the C core keeps two copies and the handler copies one).
    /// Safe at any time, before or after ``start(_:)``, from any thread:
    ///
    /// ```swift
    /// CrashHandler.updateScope { scope in
    ///     scope.tags["tenant"] = "acme"
    ///     scope.contexts["database"] = ["engine": "postgres", "pool": "8"]
    /// }
    /// ```
    ///
    /// The scope is kept within its bounds (see `CrashScope`). Returns `false`, keeping the scope
    /// as it was, when it would still not fit in the 8 KiB the handler carries.
    @discardableResult
    public static func updateScope(_ change: (inout CrashScope) -> Void) -> Bool {
        scopeState.withLock { scope in
            var next = scope
            change(&next)
            next = next.bounded
            guard let bytes = next.rendered() else { return false }
            // Serialised by the lock, as cc_set_scope requires; the C core keeps it whether or
            // not the handlers are installed.
            guard bytes.withUnsafeBytes({ cc_set_scope($0.baseAddress, $0.count) }) == 0 else { return false }
            scope = next
            return true
        }
    }

    /// The latest scope (``updateScope(_:)``).
    private static let scopeState = Mutex(CrashScope())

    /// The compensating `$AppEnd` the handler writes into a crash record: JSON text with
    /// ``AppEndTemplate`` placeholders where the crash supplies a value. The one narrow call
    /// between the event model (CrashReporter renders it) and capture, which knows no key names.
    /// Safe at any time, before or after ``start(_:)``, from any thread; the latest call wins.
    /// `""` writes no `$AppEnd` (the next launch makes one from the record). Returns `false`
    /// (and changes nothing) when the text is ``AppEndTemplate/maxBytes`` or longer.
    @discardableResult
    package static func setAppEndTemplate(_ template: String) -> Bool {
        guard template.utf8.count < AppEndTemplate.maxBytes else { return false }
        return appEndTemplate.withLock { stored in
            stored = template
            // Serialised by the lock, as cc_set_app_end_template requires. Before install, start
            // passes it (under the same lock).
            return cc_is_installed() == 0 || cc_set_app_end_template(template) == 0
        }
    }

    /// The placeholders of a `$AppEnd` template (crashcapture.h): the handler replaces each with
    /// the crash's value.
    package enum AppEndTemplate {
        /// A fresh random (v4) UUID, as a JSON string.
        package static let trackIDPlaceholder = CC_TEMPLATE_TRACK_ID
        /// The crash time, ms since the epoch, as a JSON number.
        package static let timePlaceholder = CC_TEMPLATE_TIME_MS
        /// Seconds from install to the crash on the monotonic clock, as a JSON number.
        package static let durationPlaceholder = CC_TEMPLATE_DURATION
        /// A template must be shorter than this many bytes.
        package static let maxBytes = Int(CC_TEMPLATE_MAX)
    }

    /// Gives the calling thread an alternate signal stack so a stack overflow on it can be
    /// recorded. Threads created after ``start(_:)`` get one automatically; call this only on
    /// threads that existed before it. Returns `false` if no stack could be set up.
    @discardableResult
    public static func prepareCurrentThread() -> Bool { cc_prepare_current_thread() == 0 }

    /// The latest `$AppEnd` template (``setAppEndTemplate(_:)``).
    private static let appEndTemplate = Mutex("")
}

extension CrashHandler {
/// What ``CrashHandler/start(_:)`` needs to know.
public struct Configuration: Sendable {
    /// Directory for crash records; created with mode 0700 if missing.
    public var directory: String
    /// Recorded in every crash record and as `$app_name`.
    public var appName: String
    /// Recorded in every crash record and as `$app_version`.
    public var appVersion: String
    /// Most frames recorded for the crashing thread (1...512).
    public var maxFrames: Int
    /// List the other threads, with their stacks, in the record. They are stopped at a crash
    /// either way (CrashCapture.docc, "What happens at a crash"); `false` only leaves them out.
    public var recordOtherThreads: Bool
    /// Give threads created after start an alternate signal stack (needed to record a stack
    /// overflow on them). Done by wrapping `pthread_create`.
    public var alternateStacksForNewThreads: Bool
    /// Threads that block the stop signal (libdispatch workers, the Swift concurrency pool) are
    /// stopped with ptrace and unwound by a helper process the recording thread starts with
    /// `clone(CLONE_VM)` (it shares the process's memory: nothing is exec'd or copied).
    /// `false` leaves them running and without frames.
    public var threadHelper: Bool
    /// Signal used to stop the other threads at a crash; `nil` means `SIGRTMAX-3` (or the next
    /// free real-time signal below it). Only used if no handler is installed for it at start.
    package var threadDumpSignal: Int32?
    /// This run's id, written into the record so that the next launch pairs the record with the
    /// run's marker: the reporter's run id (`CrashReporting` passes it). Empty (the
    /// default) writes none. At most 63 bytes.
    package var runID: String
    /// How long the handler may take before its watchdog ends the process with the original
    /// signal (a hang while writing must not keep a dead process alive): 1 s to 1 h, counted in
    /// whole seconds (a fraction is rounded up).
    public var watchdog: Duration
    /// Records the directory keeps at most (complete and partial; at least 2). Over it, a start
    /// folds records of a crash that repeats into its latest record (which then says how many
    /// crashes it stands for) and prunes the oldest (CrashCapture.docc, "A bounded record directory").
    public var maxRecords: Int
    /// Bytes the directory's records (and the files beside them) take at most (at least 1 MiB).
    public var maxRecordBytes: Int
    /// The crash-time uploader (CrashReporter's `crashTimeUploader` sets it): an executable the
    /// handler starts once a record is whole, to send it while the process dies. `nil` (the
    /// default): none.
    package var uploader: Uploader?
    /// Test hook: fault inside the signal handler after the first sections are written.
    @_spi(Testing) public var _testCrashInsideHandler: Bool
    /// Test hook: hang inside the signal handler after the first sections are written.
    @_spi(Testing) public var _testHangInsideHandler: Bool
    /// Test hook: the thread helper stalls after stopping its threads (it must be killed at its
    /// deadline, half the watchdog).
    @_spi(Testing) public var _testSlowThreadHelper: Bool
    /// Test hook: fault inside the unwinder, after the crashed thread's fourth frame (as reading
    /// damaged unwind tables would): the frames found so far must be kept.
    package var _testFaultInsideUnwinder: Bool
    /// Test hook: walk every frame by its frame record, none by call-frame information (what the
    /// unwinder does for code without it).
    package var _testFrameRecordsOnly: Bool
    /// Test hook: treat the Swift runtime's task layout as unknown (no crashed request is named).
    package var _testUnknownTaskLayout: Bool
    /// Test hook: count the descriptors at a crash by listing /proc/self/fd, as on a kernel before
    /// 6.2 (where stat gives no count).
    package var _testListDescriptors: Bool
    /// Test hook: make the crash's image table from /proc/self/maps alone, with the kernel's
    /// paths, as when the loader's link map cannot be used (the table to check the other against).
    package var _testImagesFromMaps: Bool
    /// One line on stderr at every crash, before the record is written (default on):
    /// `crashcapture: {"signal":…,"record":…,"request_id":…,"trace_id":…}`, so that a log
    /// pipeline learns of the crash and its request even when the record is lost with the
    /// machine. It holds ids only: no path, query or key/values.
    public var crashLine: Bool
    /// Hang detection (HangDetection): `nil` (the default) watches nothing, unless the
    /// environment variable `CRASHCAPTURE_HANG_SECONDS` turns it on.
    public var hangDetection: HangDetection?

    /// - Parameters:
    ///   - directory: where records go; created (0700) if missing.
    ///   - appName: the program's name, e.g. `"inventory-service"`.
    ///   - appVersion: the program's version, e.g. `"2.3.0"`.
    public init(directory: String, appName: String, appVersion: String) {
        self.directory = directory
        self.appName = appName
        self.appVersion = appVersion
        self.maxFrames = 256
        self.recordOtherThreads = true
        self.alternateStacksForNewThreads = true
        self.threadHelper = true
        self.threadDumpSignal = nil
        self.runID = ""
        self.watchdog = .seconds(10)
        self.maxRecords = 64
        self.maxRecordBytes = 32 << 20
        self._testCrashInsideHandler = false
        self._testHangInsideHandler = false
        self._testSlowThreadHelper = false
        self._testFaultInsideUnwinder = false
        self._testFrameRecordsOnly = false
        self._testUnknownTaskLayout = false
        self._testListDescriptors = false
        self._testImagesFromMaps = false
        self.crashLine = true
        self.hangDetection = nil
    }

    /// ``watchdog`` as the C core counts it (alarm(2)): whole seconds, rounded up, 1...3600.
    var watchdogWholeSeconds: UInt32 {
        let parts = watchdog.components
        let seconds = parts.seconds + (parts.attoseconds > 0 ? 1 : 0)
        return UInt32(clamping: min(max(seconds, 1), 3600))
    }

    /// What the handler starts after a record is written (CShims/upload/cc_uploader.c): `path` with
    /// `arguments`, then the record's file name; its environment is `environment` ("KEY=value",
    /// taking precedence) and this process's environment as it is at start. All copied at start.
    /// A process whose death would end it too (PID 1, a parent that is PID 1 or outside the PID
    /// namespace) waits for it, within the watchdog, before dying (CShims/upload/cc_uploader.c).
    package struct Uploader: Sendable, Equatable {
        package var path: String
        package var arguments: [String]
        package var environment: [String]

        package init(path: String, arguments: [String], environment: [String]) {
            self.path = path
            self.arguments = arguments
            self.environment = environment
        }
    }
}
}

/// `strings` as a NULL-terminated array of C strings, alive for the duration of `body`.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// A failed system call made by ``CrashCapture``: which operation, and errno.
public struct CrashCaptureError: Error, CustomStringConvertible, Equatable {
    /// What was being done, e.g. `"mkdir /var/crashes"`.
    public var operation: String
    /// The errno it failed with.
    public var errno: Int32

    package init(operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String { "\(operation): \(String(cString: strerror(errno))) (errno \(errno))" }
}

extension Directory {
    /// ``Directory/create(_:)`` (HostFacts), failing as capture fails: a ``CrashCaptureError``.
    static func createForCapture(_ path: String) throws {
        do { try create(path) } catch let error as DirectoryError { throw CrashCaptureError(operation: error.operation, errno: error.errno) }
    }
}

extension BreadcrumbLevel {
    /// The record's level for a swift-log level (the record format names swift-log's levels).
    init(_ level: Logger.Level) {
        switch level {
        case .trace: self = .trace
        case .debug: self = .debug
        case .info: self = .info
        case .notice: self = .notice
        case .warning: self = .warning
        case .error: self = .error
        case .critical: self = .critical
        }
    }
}

/// "SIGSEGV" for 11; "signal N" for a signal without a conventional name here.
package func signalName(_ signo: Int32) -> String {
    if let name = cc_signal_name(signo) { return String(cString: name) }
    return "signal \(signo)"
}
