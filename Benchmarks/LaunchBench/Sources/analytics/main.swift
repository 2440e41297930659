// analytics: plain + CrashReporter + SensorsAnalytics: CrashReporting.start(directory:appName:appVersion:)
//   (the events store, no endpoint) + shutdown; what a user of the analytics pays. With
//   LAUNCH_BENCH_SENTRY_ALONE=1, the Sentry-only start instead (as `reporter` does it), the
//   analytics still linked (the store in the binary, libsqlite3 loaded at exec) and no release health:
//   what a Sentry-only user paid while CrashReporter held the analytics.
//   analytics DIR  the store and records under DIR (or $LAUNCH_BENCH_DIR); prints
//                  "analytics start_us=T shutdown_us=S capture=R objects=N", T and S the
//                  wall times of the start and shutdown calls, R what starting CrashCapture did
import CrashReporter
import SensorsAnalytics
import LaunchSupport
#if canImport(Glibc)
import Glibc
#endif

let directory = CommandLine.arguments.count > 1 ? CommandLine.arguments[1]
    : getenv("LAUNCH_BENCH_DIR").map { String(cString: $0) } ?? "/tmp/launch-bench-analytics"
let before = monotonicNanoseconds()
let reporting: CrashReporting
if getenv("LAUNCH_BENCH_SENTRY_ALONE") != nil {
    // As the reporter was before the split: no release health (sessions came after it).
    var configuration = CrashReporting.Configuration(recordDirectory: directory + "/records", appName: "launch-bench", appVersion: "1.0.0")
    var sentry = SentryOptions(dsn: "http://launchbench@127.0.0.1:9/1")
    sentry.sessions = false
    configuration.sentry = sentry
    reporting = CrashReporting.start(configuration)
} else {
    reporting = CrashReporting.start(directory: directory, appName: "launch-bench", appVersion: "1.0.0")
}
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
print("analytics start_us=\(microseconds(from: before, to: after)) shutdown_us=\(microseconds(from: ending, to: ended)) capture=\(capture) objects=\(loadedSharedObjects())")
