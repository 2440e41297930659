// HostName.swift — this host's name, as Sentry's `server_name` and OpenTelemetry's `host.name` take it.
#if canImport(Glibc)
import Glibc
#endif

package enum HostName {
    /// gethostname(2); nil when it fails or is empty.
    package static func current() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? nil : name
    }
}
