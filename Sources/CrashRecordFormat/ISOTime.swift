// ISOTime.swift — a record's wall-clock times as text: the one formatter of the Sentry envelope's
// times and the inspector's. By hand with gmtime_r: no Foundation (whose formatter brings ICU).
#if canImport(Glibc)
import Glibc
#endif

/// RFC 3339 UTC with milliseconds, e.g. "2023-11-14T22:13:20.250Z", for nanoseconds since the
/// epoch, rounded to the nearest millisecond (as Foundation's ISO8601DateFormatter rounds).
package func isoTime(_ nanoseconds: Int64) -> String {
    let (rounded, overflow) = nanoseconds.addingReportingOverflow(500_000)
    let milliseconds = (overflow ? nanoseconds : rounded).dividingFloor(by: 1_000_000)
    var seconds = time_t(milliseconds.dividingFloor(by: 1000))
    let millisecond = Int(milliseconds - Int64(seconds) * 1000)
    var parts = tm()
    guard gmtime_r(&seconds, &parts) != nil else { return "?" }
    func digits(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
    return digits(Int(parts.tm_year) + 1900, 4) + "-" + digits(Int(parts.tm_mon) + 1, 2) + "-" + digits(Int(parts.tm_mday), 2)
        + "T" + digits(Int(parts.tm_hour), 2) + ":" + digits(Int(parts.tm_min), 2) + ":" + digits(Int(parts.tm_sec), 2)
        + "." + digits(millisecond, 3) + "Z"
}

extension Int64 {
    /// The quotient rounded towards minus infinity (times before 1970 too).
    fileprivate func dividingFloor(by divisor: Int64) -> Int64 {
        let (quotient, remainder) = quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? quotient - 1 : quotient
    }
}
