// sentry-only — the smallest adopter of CrashReporter with Sentry and nothing else: it imports
// CrashReporter only, starts it, waits for the launch, prints one line and shuts down.
// WhatSentryOnlyLinksTests checks what linking it needs (not the analytics' store, no SQLite) and runs it once.
//
//   sentry-only DIR [DSN]    records in DIR, sent to Sentry at DSN (default: $SENTRY_DSN; none:
//                            no Sentry sink); prints "started: <capture> sentry: <on|off|error>
//                            delivered: <n> errors: <n>" and exits 0
import CrashReporter
#if canImport(Glibc)
import Glibc
#endif

/// One line to stdout, unbuffered.
func say(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { _ = write(1, $0.baseAddress, $0.count) }
}

let arguments = CommandLine.arguments
guard arguments.count == 2 || arguments.count == 3 else {
    say("usage: sentry-only DIR [DSN]")
    exit(64)
}
let dsn = arguments.count == 3 ? arguments[2] : getenv("SENTRY_DSN").map { String(cString: $0) }
let reporting = CrashReporting.start(recordDirectory: arguments[1], appName: "sentry-only", appVersion: "1.0", sentryDSN: dsn)
let capture = switch reporting.captureResult {
case .success(let result): "\(result)"
case .failure(let error): "failed (\(error))"
case nil: "off"
}
let sentry = reporting.sentryDSNError.map { "error (\($0))" } ?? (dsn == nil ? "off" : "on")
// The launch's pass over DIR, on the reporter's thread: with nothing pending, nothing is sent.
let launch = reporting.launchReport
say("started: \(capture) sentry: \(sentry) delivered: \(launch.recordsDelivered.count) errors: \(launch.errors.count)")
reporting.shutdown(timeout: .seconds(3))
