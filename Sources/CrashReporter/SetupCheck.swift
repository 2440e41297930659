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
import HostFacts
#if canImport(Glibc)
import Glibc
#endif

extension CrashReporting {
    /// The environment variable that makes `start` a setup check's throwaway crash.
    static let verifyCrashVariable = "CRASHCAPTURE_VERIFY_CRASH"
    /// The environment variable that makes `start` a setup check's throwaway hang:
    /// `<milliseconds to wait for the sinks>:<directory>`.
    static let verifyHangVariable = "CRASHCAPTURE_VERIFY_HANG"
    /// The file in the hang check's directory where its child writes each sink's answer.
    static let hangAnswersFile = "setup-check-answers"

    /// What ``verifySetup(_:timeout:)`` found.
    public struct SetupCheck: Sendable, CustomStringConvertible {
        /// How the throwaway child ended (`killed by SIGSEGV` when it crashed as meant).
        package var child: String
        /// Whether it left a readable, complete record.
        package var recorded: Bool
        /// Each sink's answer for the crash, by its id: `sent`, or why not.
        public var sinks: [String: String]
        /// How the hang child went: `recorded while the process ran…`, or what went wrong.
        package var hang: String = "not checked"
        /// Each sink's answer for the hang, sent by the hung process itself while it ran.
        package var hangSinks: [String: String] = [:]
        /// Every sink has the crash and the hang.
        public var passed: Bool

        /// One line per part, for a pipeline's log.
        public var description: String {
            var lines = ["crash: \(child), record \(recorded ? "written" : "missing")"]
            for (sink, answer) in sinks.sorted(by: { $0.key < $1.key }) { lines.append("  \(sink): \(answer)") }
            lines.append("hang: \(hang)")
            for (sink, answer) in hangSinks.sorted(by: { $0.key < $1.key }) { lines.append("  \(sink): \(answer)") }
            lines.append(passed ? "setup check passed" : "setup check FAILED")
            return lines.joined(separator: "\n")
        }
    }

    /// Proves the setup where the app runs, against its real DSN, collector and network, with
    /// two throwaway copies of this program:
    /// - one crashes with `configuration`, and its record goes through every sink the
    ///   configuration has (Sentry, OTLP, the app's own), as the next launch sends it;
    /// - one hangs on purpose (a heartbeat that stops, one second), and sends the hang record
    ///   through those sinks itself while it still runs, as a hung server does.
    ///
    /// Waits at most `timeout` for each and returns what every sink answered. Call it first
    /// thing in `main`, from a switch such as `--check-crash-reporting`: each child runs the
    /// program with the same arguments up to this call (or `start`), where it crashes or hangs.
    /// The events are tagged `crashcapture.setup_check=true`. Nothing of the app's own record
    /// directory, runs or sessions is touched.
    public static func verifySetup(_ configuration: Configuration, timeout: Duration = .seconds(30)) -> SetupCheck {
        if let directory = getenv(verifyCrashVariable).map({ String(cString: $0) }), !directory.isEmpty {
            crashForSetupCheck(directory: directory, configuration: configuration)
        }
        if let value = getenv(verifyHangVariable).map({ String(cString: $0) }), !value.isEmpty {
            hangForSetupCheck(value, configuration: configuration)
        }
        guard let directory = temporaryDirectory() else {
            return SetupCheck(child: "not started: mkdtemp: \(String(cString: strerror(errno)))", recorded: false, sinks: [:], passed: false)
        }
        defer { removeTree(directory) }
        let child = runChild(setting: "\(verifyCrashVariable)=\(directory)", timeout: timeout)
        let names = (try? RecordFileName.names(in: directory))?.filter { RecordFileName($0) != nil } ?? []
        let recorded = names.count == 1 && (try? CrashRecordReader.read(path: directory + "/" + names[0]))?.isComplete == true
        var checking = configuration
        checking.recordDirectory = directory
        checking.captureCrashes = false
        checking.sentry?.sessions = false
        checking.crashTimeUploader = nil
        let reporter = CrashReporting(checking)
        _ = reporter.launched.wait(until: SuspendingClock.now.advanced(by: timeout))
        _ = reporter.shutdown(timeout: timeout)
        let sinks = answers(of: reporter, for: names.first, in: directory)
        var check = SetupCheck(child: child, recorded: recorded, sinks: sinks,
                               passed: child == "killed by SIGSEGV" && recorded && !sinks.isEmpty && sinks.values.allSatisfy { $0 == "sent" })
        // With no sink there is nothing a hang could reach (and its record would be deleted at once).
        if reporter.sinks.isEmpty {
            check.hang = "not checked: the configuration has no sink (no Sentry DSN, no OTLP endpoint, no sink of the app's)"
        } else {
            checkHang(into: &check, timeout: timeout)
        }
        return check
    }

    /// The hang half of the check: a child that hangs and sends its record while it runs.
    private static func checkHang(into check: inout SetupCheck, timeout: Duration) {
        guard let directory = temporaryDirectory() else {
            check.hang = "not started: mkdtemp: \(String(cString: strerror(errno)))"
            check.passed = false
            return
        }
        defer { removeTree(directory) }
        // The child waits for its sinks a little less than it is given, so that it can still say what they answered.
        let wait = max(1_000, Int(timeout.components.seconds) * 1_000 - 3_000)
        let ending = runChild(setting: "\(verifyHangVariable)=\(wait):\(directory)", timeout: timeout)
        let text = SmallFile.read(directory + "/" + hangAnswersFile, limit: 64 << 10).map { String(decoding: $0.bytes, as: UTF8.self) } ?? ""
        var lines = text.split(separator: "\n").map(String.init)
        let headline = lines.isEmpty ? nil : lines.removeFirst()
        for line in lines {
            let parts = line.split(separator: "\t", maxSplits: 1).map(String.init)
            if parts.count == 2 { check.hangSinks[parts[0]] = parts[1] }
        }
        check.hang = headline ?? "the child \(ending) before it wrote a hang record"
        let hung = ending == "exited with status 0" && headline?.hasPrefix("recorded") == true
        check.passed = check.passed && hung && !check.hangSinks.isEmpty && check.hangSinks.values.allSatisfy { $0 == "sent" }
    }

    /// Each sink's answer for the record `name` in `directory`: `sent` when it has it, else what
    /// its sender last said.
    static func answers(of reporter: CrashReporting, for name: String?, in directory: String) -> [String: String] {
        var sinks: [String: String] = [:]
        for sink in reporter.sinks {
            let id = sink.id.rawValue
            let delivered = name.map {
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
        if let name, let sentry = reporter.sentry {
            let report = sentry.currentReport
            sinks[sentry.id.rawValue] = answer(sent: report.sent.contains(name), kept: report.kept[name],
                                               refused: report.quarantined[name], lastError: report.lastError)
        }
        if let name, let otlp = reporter.otlp {
            let report = otlp.currentReport
            sinks[otlp.id.rawValue] = answer(sent: report.sent.contains(name), kept: report.kept[name],
                                             refused: report.rejected[name], lastError: report.lastError)
        }
        if let error = reporter.sentryDSNError { sinks[RecordSinkID.sentry.rawValue] = "not sent: the DSN is \(error)" }
        return sinks
    }

    /// In the hang check's throwaway child (`start` with CRASHCAPTURE_VERIFY_HANG set): the
    /// reporter with the app's configuration over the check's directory (no sessions, no
    /// crash-time upload), hang detection at one second, a heartbeat that never beats; once the
    /// hang record is written, the reporter sends it while the process runs, as it sends a hung
    /// server's. Writes the outcome and each sink's answer to the directory, then exits 0.
    static func hangForSetupCheck(_ value: String, configuration: Configuration) -> Never {
        let parts = value.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2, let wait = Int(parts[0]) else { exit(2) }
        let directory = parts[1]
        var checking = configuration
        checking.recordDirectory = directory
        checking.sentry?.sessions = false
        checking.crashTimeUploader = nil
        var detection = configuration.hangDetection ?? HangDetection()
        detection.stallThreshold = .seconds(1)
        checking.hangDetection = detection
        let reporter = CrashReporting(checking)
        CrashHandler.updateScope { $0.tags["crashcapture.setup_check"] = "true" }
        let deadline = SuspendingClock.now.advanced(by: .milliseconds(wait))
        let heartbeat = HangDetector.heartbeat(named: "setup check: a heartbeat stopped on purpose")
        heartbeat.beat()
        var name: String?
        var answers: [String: String] = [:]
        while SuspendingClock.now < deadline {
            usleep(20_000)
            if name == nil {
                // The hang record: the only record this directory gets (gone again once every sink has it).
                name = (try? RecordFileName.names(in: directory))?.first { RecordFileName($0).map { !$0.isPartial } ?? false }
                    ?? reporter.sentry.flatMap { $0.currentReport.sent.first ?? $0.currentReport.kept.keys.first }
                    ?? reporter.otlp.flatMap { $0.currentReport.sent.first ?? $0.currentReport.kept.keys.first }
                if name == nil { continue }
            }
            answers = Self.answers(of: reporter, for: name, in: directory)
            // Done once every sink has it, or said why not.
            if answers.values.allSatisfy({ $0 != "not sent" }) { break }
        }
        heartbeat.stop()
        let headline = name == nil ? "no hang record within \(wait) ms: hang detection did not fire"
            : "recorded while the process ran (a heartbeat stopped for 1 s) and sent by it"
        let text = ([headline] + answers.sorted { $0.key < $1.key }.map { "\($0.key)\t\($0.value)" }).joined(separator: "\n") + "\n"
        _ = SmallFile.replace(directory + "/" + hangAnswersFile, with: Array(text.utf8))
        _ = reporter.shutdown(timeout: .seconds(2))
        exit(0)
    }

    /// A new private directory under /tmp; nil when none could be made.
    private static func temporaryDirectory() -> String? {
        var template = "/tmp/crashcapture-check-XXXXXX".utf8CString
        return template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) }
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

    /// Runs this program again with `setting` (`NAME=value`) in its environment and waits for its end.
    private static func runChild(setting: String, timeout: Duration) -> String {
        let name = String(setting.prefix { $0 != "=" }) + "="
        var environment = ProcessEnvironment.current.filter { !$0.hasPrefix(name) && !$0.hasPrefix("SWIFT_BACKTRACE=") }
        environment += [setting, "SWIFT_BACKTRACE=enable=no"]
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
