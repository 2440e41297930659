// reporter: plain + the Sentry-only CrashReporting.start + shutdown: what a Sentry-only user of
//   the CrashReporter product pays. No Foundation import of its own (CrashReporter's is what it
//   loads). The DSN is $LAUNCH_BENCH_DSN (launch-cost's loopback Sentry, which answers 200), else
//   a closed port; LAUNCH_BENCH_SESSIONS=off turns release health off (then, with no crash
//   pending, nothing is sent; on, the last run's session is written to wait for its batch, and
//   is sent only by a launch after the oldest waiting run ended an hour ago).
//   reporter DIR   records in DIR/records (or $LAUNCH_BENCH_DIR/records); prints
//                  "reporter start_us=T shutdown_us=S capture=R objects=N", T and S the wall
//                  times of the start and shutdown calls, R what starting CrashCapture did
import CrashReporter
import LaunchSupport
#if canImport(Glibc)
import Glibc
#endif

let directory = CommandLine.arguments.count > 1 ? CommandLine.arguments[1]
    : getenv("LAUNCH_BENCH_DIR").map { String(cString: $0) } ?? "/tmp/launch-bench-reporter"
let dsn = getenv("LAUNCH_BENCH_DSN").map { String(cString: $0) } ?? "http://launchbench@127.0.0.1:9/1"
let sessions = getenv("LAUNCH_BENCH_SESSIONS").map { String(cString: $0) } != "off"
let before = monotonicNanoseconds()
var configuration = CrashReporting.Configuration(recordDirectory: directory + "/records", appName: "launch-bench", appVersion: "1.0.0")
var sentry = SentryOptions(dsn: dsn)
sentry.sessions = sessions
configuration.sentry = sentry
let reporting = CrashReporting.start(configuration)
let after = monotonicNanoseconds()
let capture = switch reporting.captureResult {
case .success(.installed): "installed"
case .success(.alreadyInstalled): "alreadyInstalled"
case .success(.disabledByEnvironment): "disabledByEnvironment"
case .success(.disabledInSecureProcess): "disabledInSecureProcess"
case .failure: "failed"
case nil: "off"
}
let ending = monotonicNanoseconds()
reporting.shutdown()
let ended = monotonicNanoseconds()
print("reporter start_us=\(microseconds(from: before, to: after)) shutdown_us=\(microseconds(from: ending, to: ended)) capture=\(capture) objects=\(loadedSharedObjects())")
