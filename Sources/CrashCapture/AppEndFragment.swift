// AppEndFragment.swift — the preset properties and the pre-formatted $AppEnd the signal handler completes.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Builds the part of the compensating `$AppEnd` event that is known before any crash:
/// everything but `_track_id`, `time`, `$event_duration` and the crash facts, which the
/// handler writes. The result ends inside `"properties":{` with a trailing comma.
enum AppEndFragment {
    // Plain concatenation throughout: string interpolation goes through String(describing:),
    // whose dynamic casts scan every loaded image's protocol conformances on first use
    // (≈ 0.1–0.3 ms in a program that links Foundation) — and this runs in `start`.
    static func make(configuration: CrashCaptureConfiguration, identity: EventIdentity) -> String {
        var members: [String] = [#""type":"track""#, #""event":"$AppEnd""#]
        if let distinct = identity.distinctID { members.append(#""distinct_id":"# + JSONText.quote(distinct)) }
        if let anonymous = identity.anonymousID { members.append(#""anonymous_id":"# + JSONText.quote(anonymous)) }
        if let login = identity.loginID { members.append(#""login_id":"# + JSONText.quote(login)) }
        members.append(
            #""lib":{"$lib":"# + JSONText.quote(CrashCapture.libraryName)
                + #","$lib_version":"# + JSONText.quote(CrashCapture.libraryVersion)
                + #","$lib_method":"code","$app_version":"# + JSONText.quote(configuration.appVersion) + "}")
        // A list, not a Dictionary, sorted by UTF-8 bytes: String's own ordering loads Unicode
        // normalisation data on first use.
        var properties = PresetProperties.currentList()
        properties.append(("$app_name", .string(configuration.appName)))
        properties.append(("$app_version", .string(configuration.appVersion)))
        for (key, value) in configuration.superProperties where !properties.contains(where: { $0.0 == key }) {
            properties.append((key, .string(value)))
        }
        properties.sort { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
        var props = ""
        for (key, value) in properties { props += JSONText.quote(key) + ":" + value.json + "," }
        return members.joined(separator: ",") + #","properties":{"# + props
    }
}
