// Joined.swift — strings joined without the standard library's generic `joined(separator:)`.

extension Array where Element == String {
    /// The strings with `separator` between them and `terminator` after the last (none when
    /// empty): `joined(separator:) + terminator`, for code every launch runs. The standard
    /// library's generic `joined` makes the runtime check `[String]: Collection` the first time,
    /// by searching every loaded image's conformances: ≈ 0.1 ms of a launch with Foundation
    /// loaded (measured: the run ledger's markers, the events' presets).
    package func joinedOnTheLaunchPath(separator: String, terminator: String = "") -> String {
        var out = ""
        var first = true
        for element in self {
            if !first { out += separator }
            out += element
            first = false
        }
        if !isEmpty { out += terminator }
        return out
    }
}
