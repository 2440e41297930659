// CrashCaptureLibrary.swift — this library's name and version, as every sink names it (the events' `$lib`, Sentry's client).

/// The library's name and version: the Sensors events' `$lib` and `$lib_version`, the Sentry
/// envelope's `sdk` and its `X-Sentry-Auth` client.
package enum CrashCaptureLibrary {
    package static let name = "CrashCapture"
    package static let version = "0.1.0"
}
