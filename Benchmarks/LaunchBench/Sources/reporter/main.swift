// reporter: foundation + CrashReporting.start (no endpoint) + shutdown; with
//   LAUNCH_BENCH_SENTRY_ALONE=1, the Sentry-only start (a DSN, no events store; the DSN's port is
//   closed, and with nothing pending nothing is sent).
//   reporter DIR   the store and records under DIR (or $LAUNCH_BENCH_DIR); prints
//                  "reporter start_us=T capture=R objects=N date=D", T the wall time of the
//                  start call, R what starting CrashCapture did
import CrashReporter
import Foundation
import LaunchSupport

// getenv, not ProcessInfo: foundation (the baseline) does not build the environment dictionary.
let directory = CommandLine.arguments.count > 1 ? CommandLine.arguments[1]
    : getenv("LAUNCH_BENCH_DIR").map { String(cString: $0) } ?? "/tmp/launch-bench-reporter"
let before = monotonicNanoseconds()
let reporting = getenv("LAUNCH_BENCH_SENTRY_ALONE") != nil
    ? CrashReporting.start(recordDirectory: directory + "/records", appName: "launch-bench", appVersion: "1.0.0",
                           sentryDSN: "http://launchbench@127.0.0.1:9/1")
    : CrashReporting.start(directory: directory, appName: "launch-bench", appVersion: "1.0.0")
let after = monotonicNanoseconds()
let capture = switch reporting.captureResult {
case .success(.installed): "installed"
case .success(.alreadyInstalled): "alreadyInstalled"
case .success(.disabledByEnvironment): "disabledByEnvironment"
case .success(.disabledInSecureProcess): "disabledInSecureProcess"
case .failure: "failed"
case nil: "off"
}
reporting.shutdown()
print("reporter start_us=\(microseconds(from: before, to: after)) capture=\(capture) objects=\(loadedSharedObjects()) date=\(Date())")
