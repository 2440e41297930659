// AppEndFragment.swift — the preset properties and the pre-formatted $AppEnd the signal handler completes.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Preset (`$`-prefixed) properties every event of this process carries: what a data team
/// expects to segment by. No hostname, user name, environment or argv.
public enum PresetProperties {
    /// `$os`, `$os_version`, `$model`, `$lib`, `$lib_version`, `$timezone_offset`; the app's
    /// name and version are added by the caller that knows them.
    public static func current() -> [String: JSONScalar] {
        var uts = utsname()
        uname(&uts)
        let machine = withUnsafeBytes(of: &uts.machine) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let release = withUnsafeBytes(of: &uts.release) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        return [
            "$os": .string("Linux"),
            "$os_version": .string(osVersion(kernelRelease: release)),
            "$model": .string(machine),
            "$lib": .string(CrashCapture.libraryName),
            "$lib_version": .string(CrashCapture.libraryVersion),
            // Sensors' convention: minutes to add to local time to get UTC (UTC+8 is -480).
            "$timezone_offset": .int(-TimeZone.current.secondsFromGMT() / 60),
        ]
    }

    /// "Debian GNU/Linux 12 (bookworm); kernel 6.1.0-18-amd64" from /etc/os-release and uname.
    static func osVersion(kernelRelease: String) -> String {
        let text = (try? String(contentsOfFile: "/etc/os-release", encoding: .utf8)) ?? ""
        var pretty: String?
        for line in text.split(separator: "\n") where line.hasPrefix("PRETTY_NAME=") {
            pretty = String(line.dropFirst("PRETTY_NAME=".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
        }
        if let pretty, !pretty.isEmpty { return "\(pretty); kernel \(kernelRelease)" }
        return "kernel \(kernelRelease)"
    }
}

/// A JSON scalar: enough for event properties.
public enum JSONScalar: Sendable, Equatable {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    /// The JSON text of this value.
    public var json: String {
        switch self {
        case .string(let s): return JSONText.quote(s)
        case .int(let i): return String(i)
        case .double(let d): return d.isFinite ? String(d) : "null"
        case .bool(let b): return b ? "true" : "false"
        }
    }
}

/// Minimal JSON text helpers for pre-formatting (Foundation's encoder sorts and escapes
/// differently across platforms; this is exact and dependency-free).
public enum JSONText {
    /// `s` as a JSON string literal, with quotes.
    public static func quote(_ s: String) -> String {
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

/// Builds the part of the compensating `$AppEnd` event that is known before any crash:
/// everything but `_track_id`, `time`, `$event_duration` and the crash facts, which the
/// handler writes. The result ends inside `"properties":{` with a trailing comma.
enum AppEndFragment {
    static func make(configuration: CrashCaptureConfiguration, identity: EventIdentity) -> String {
        var members: [String] = [#""type":"track""#, #""event":"$AppEnd""#]
        if let distinct = identity.distinctID { members.append("\"distinct_id\":\(JSONText.quote(distinct))") }
        if let anonymous = identity.anonymousID { members.append("\"anonymous_id\":\(JSONText.quote(anonymous))") }
        if let login = identity.loginID { members.append("\"login_id\":\(JSONText.quote(login))") }
        members.append(
            "\"lib\":{\"$lib\":\(JSONText.quote(CrashCapture.libraryName)),"
                + "\"$lib_version\":\(JSONText.quote(CrashCapture.libraryVersion)),"
                + "\"$lib_method\":\"code\","
                + "\"$app_version\":\(JSONText.quote(configuration.appVersion))}")
        var properties = PresetProperties.current()
        properties["$app_name"] = .string(configuration.appName)
        properties["$app_version"] = .string(configuration.appVersion)
        for (key, value) in configuration.superProperties where properties[key] == nil {
            properties[key] = .string(value)
        }
        let props = properties.keys.sorted().map { "\(JSONText.quote($0)):\(properties[$0]!.json)," }.joined()
        return members.joined(separator: ",") + ",\"properties\":{" + props
    }
}
