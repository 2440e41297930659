// SetupCheck.swift — a setup you can verify: a throwaway child crashes with the app's own
// configuration, and its record goes through the app's own sinks, each saying what it answered.
//
// The child is the program itself (`/proc/self/exe`, its arguments), started with
// CRASHCAPTURE_VERIFY_CRASH=<a temporary directory>: its `CrashReporting.start` installs capture
// there, tags the scope `crashcapture.setup_check=true`, and crashes at once, before any launch,
// run marker or sink of its own. The caller's process then takes that record through a reporter
// of the same configuration over the temporary directory — no capture, no release health, no
// crash-time upload — and reports each sink's answer. A deployment pipeline runs it where the app
// runs: the same DSN, collector, endpoint, proxy and network.
import CrashCapture
import CrashReporterSentry
import CrashReporterOTLP
import CrashRecordFormat
#if canImport(Glibc)
import Glibc
#endif

extension CrashReporting {
    /// The environment variable that makes `start` a setup check's throwaway crash.
    static let verifyCrashVariable = "CRASHCAPTURE_VERIFY_CRASH"

    /// What ``verifySetup(_:timeout:)`` found.
    public struct SetupCheck: Sendable, CustomStringConvertible {
        /// How the throwaway child ended (`killed by SIGSEGV` when it crashed as meant).
        package var child: String
        /// Whether it left a readable, complete record.
        package var recorded: Bool
        /// Each sink's answer, by its id: `sent`, or why not.
        public var sinks: [String: String]
        /// Every sink has the record.
        public var passed: Bool

        /// One line per part, for a pipeline's log.
        public var description: String {
            var lines = ["crash: \(child), record \(recorded ? "written" : "missing")"]
            for (sink, answer) in sinks.sorted(by: { $0.key < $1.key }) { lines.append("\(sink): \(answer)") }
            lines.append(passed ? "setup check passed" : "setup check FAILED")
            return lines.joined(separator: "\n")
        }
    }

    /// Crashes a throwaway copy of this program with `configuration` and sends its record
    /// through every sink `configuration` has (Sentry, OTLP, the app's own), waiting at most
    /// `timeout`; returns what each answered. Call it first thing in `main`, from a switch such as
    /// `--check-crash-reporting`: the child runs the program with the same arguments up to this
    /// call (or `start`), where it crashes. The event is tagged `crashcapture.setup_check=true`.
    /// Nothing of the app's own record directory, runs or sessions is touched.
    public static func verifySetup(_ configuration: Configuration, timeout: Duration = .seconds(30)) -> SetupCheck {
        if let directory = getenv(verifyCrashVariable).map({ String(cString: $0) }), !directory.isEmpty {
            crashForSetupCheck(directory: directory, configuration: configuration)
        }
        var template = "/tmp/crashcapture-check-XXXXXX".utf8CString
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            return SetupCheck(child: "not started: mkdtemp: \(String(cString: strerror(errno)))", recorded: false, sinks: [:], passed: false)
        }
        let directory = String(cString: made)
        defer { removeTree(directory) }
        let child = crashChild(directory: directory, timeout: timeout)
        let names = (try? RecordFileName.names(in: directory))?.filter { RecordFileName($0) != nil } ?? []
        let recorded = names.count == 1 && (try? CrashRecordReader.read(path: directory + "/" + names[0]))?.isComplete == true
        var checking = configuration
        checking.recordDirectory = directory
        checking.captureCrashes = false
        checking.sentrySessions = false
        checking.crashTimeUploader = nil
        let reporter = CrashReporting(checking)
        _ = reporter.launched.wait(until: SuspendingClock.now.advanced(by: timeout))
        _ = reporter.shutdown(timeout: timeout)
        var sinks: [String: String] = [:]
        for sink in reporter.sinks {
            let id = sink.id.rawValue
            let delivered = names.first.map {
                access(directory + "/" + $0, F_OK) != 0 || access(directory + "/" + RecordFileName.acknowledgment(of: $0, by: id), F_OK) == 0
            } ?? false
            sinks[id] = delivered ? "sent" : "not sent"
        }
        // The senders say why, where they did not send it.
        func answer(sent: Bool, kept: String?, refused: String?, lastError: String?) -> String {
            if sent { return "sent" }
            if let kept { return "kept: " + kept }
            if let refused { return "refused: " + refused }
            if let lastError { return "not sent: " + lastError }
            return "not sent"
        }
        if let name = names.first, let sentry = reporter.sentry {
            let report = sentry.currentReport
            sinks[sentry.id.rawValue] = answer(sent: report.sent.contains(name), kept: report.kept[name],
                                               refused: report.quarantined[name], lastError: report.lastError)
        }
        if let name = names.first, let otlp = reporter.otlp {
            let report = otlp.currentReport
            sinks[otlp.id.rawValue] = answer(sent: report.sent.contains(name), kept: report.kept[name],
                                             refused: report.rejected[name], lastError: report.lastError)
        }
        if let error = reporter.sentryDSNError { sinks[RecordSinkID.sentry.rawValue] = "not sent: the DSN is \(error)" }
        let passed = child == "killed by SIGSEGV" && recorded && !sinks.isEmpty && sinks.values.allSatisfy { $0 == "sent" }
        return SetupCheck(child: child, recorded: recorded, sinks: sinks, passed: passed)
    }

    /// In the throwaway child (`start` with CRASHCAPTURE_VERIFY_CRASH set): capture into that
    /// directory with the app's capture settings, the scope tagged, then the crash. Never returns.
    static func crashForSetupCheck(directory: String, configuration: Configuration) -> Never {
        var capture = CrashHandler.Configuration(directory: directory, appName: configuration.appName, appVersion: configuration.appVersion)
        configuration.capture?(&capture)
        capture.directory = directory
        capture.uploader = nil
        // Capture the program started itself is pointed here too: the record must not land in
        // the app's own directory.
        if CrashHandler.isInstalled { _ = try? CrashHandler.adopt(capture) } else { _ = try? CrashHandler.start(capture) }
        CrashHandler.updateScope { $0.tags["crashcapture.setup_check"] = "true" }
        CrashHandler.crashForSetupCheck()
    }

    /// Runs this program again with CRASHCAPTURE_VERIFY_CRASH=`directory` and waits for its end.
    private static func crashChild(directory: String, timeout: Duration) -> String {
        var environment = ProcessEnvironment.current.filter { !$0.hasPrefix(verifyCrashVariable + "=") && !$0.hasPrefix("SWIFT_BACKTRACE=") }
        environment += ["\(verifyCrashVariable)=\(directory)", "SWIFT_BACKTRACE=enable=no"]
        let arguments = ["/proc/self/exe"] + CommandLine.arguments.dropFirst()
        var pid: pid_t = 0
        let spawned = withCStringArray(arguments) { argv in
            withCStringArray(environment) { envp in posix_spawn(&pid, "/proc/self/exe", nil, nil, argv, envp) }
        }
        guard spawned == 0 else { return "not started: posix_spawn: \(String(cString: strerror(spawned)))" }
        let deadline = SuspendingClock.now.advanced(by: timeout)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if SuspendingClock.now >= deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                return "hung (killed after \(timeout))"
            }
            usleep(5000)
        }
        if status & 0x7F == 0 { return "exited with status \((status >> 8) & 0xFF)" }
        let signal = status & 0x7F
        return signal == SIGSEGV ? "killed by SIGSEGV" : "killed by signal \(signal)"
    }

    private static func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { pointers.forEach { free($0) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    /// Deletes the check's temporary directory: its files and its directories (`runs/`), never
    /// following a link.
    private static func removeTree(_ path: String) {
        let entries = (try? RecordFileName.names(in: path, including: { $0 != "." && $0 != ".." })) ?? []
        for entry in entries {
            let child = path + "/" + entry
            var info = stat()
            if lstat(child, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { removeTree(child) } else { unlink(child) }
        }
        rmdir(path)
    }
}

/// The process's environment as `KEY=VALUE` strings.
enum ProcessEnvironment {
    static var current: [String] {
        var result: [String] = []
        var entry = environ
        while let pointer = entry.pointee {
            result.append(String(cString: pointer))
            entry += 1
        }
        return result
    }
}
