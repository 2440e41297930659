// reporter: plain + the Sentry-only CrashReporting.start + shutdown: what a Sentry-only user of
//   the CrashReporter product pays. No Foundation import of its own (CrashReporter's is what it
//   loads); the DSN's port is closed, and with nothing pending nothing is sent.
//   reporter DIR   records in DIR/records (or $LAUNCH_BENCH_DIR/records); prints
//                  "reporter start_us=T capture=R objects=N", T the wall time of the start call,
//                  R what starting CrashCapture did
import CrashReporter
import LaunchSupport
#if canImport(Glibc)
import Glibc
#endif

let directory = CommandLine.arguments.count > 1 ? CommandLine.arguments[1]
    : getenv("LAUNCH_BENCH_DIR").map { String(cString: $0) } ?? "/tmp/launch-bench-reporter"
let before = monotonicNanoseconds()
let reporting = CrashReporting.start(recordDirectory: directory + "/records", appName: "launch-bench", appVersion: "1.0.0",
                                     sentryDSN: "http://launchbench@127.0.0.1:9/1")
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
print("reporter start_us=\(microseconds(from: before, to: after)) capture=\(capture) objects=\(loadedSharedObjects())")
