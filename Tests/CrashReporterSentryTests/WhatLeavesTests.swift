// WhatLeavesTests.swift — what leaves the machine for Sentry is what the user chose (CrashDataPolicy):
// a real crash seeded with four known secrets (a buffer on the crashing thread's stack, a
// breadcrumb, the login id in the compensating $AppEnd, the executable's path), delivered to a
// loopback Sentry under each setting of `dataPolicy`, and looked for in the bytes it received; the
// app's `SentryOptions.beforeSend` hook changing, dropping and breaking the event; Sentry's own parser and
// Relay's normaliser on every envelope. (What the /sa collector gets of the same crash:
// SensorsAnalyticsTests' WhatReachesSaTests.)
import CrashRecordFormat
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class WhatLeavesTests: XCTestCase {
    /// A crash holding four known secrets (TestSupport's `SecretCrash`): its records.
    func crash(_ secrets: SecretCrash) throws -> String {
        let directory = try Scratch.directory("what-leaves")
        return try secrets.crash(in: directory).store + ".records"
    }

    /// What a loopback Sentry received when the next launch, Sentry its only sink, delivered a
    /// copy of the crash's records with these harness options.
    func deliver(_ records: String, _ options: [String]) throws -> (envelopes: [[UInt8]], left: [String], counters: [String: Int]) {
        let copy = try Scratch.directory("what-leaves-copy")
        try FileManager.default.copyItem(atPath: records, toPath: copy + "/records")
        let sentry = try TestHTTPServer()
        let output = copy + "/stdout"
        let child = try ChildProcess.run(BuiltProducts.harness,
                                         ["deliver", "--records", copy + "/records",
                                          "--sentry-dsn", "http://key@127.0.0.1:\(sentry.port)/42"] + options,
                                         environment: ["SWIFT_BACKTRACE": "enable=no"], stdout: output, timeout: 120)
        XCTAssertEqual(child.ending, .exited(0))
        // The crashes' envelopes (a run's session alone, as a dropped crash's, is no crash).
        let envelopes = sentry.allRequests.filter { $0.path.hasSuffix("/envelope/") && $0.body.contains("\"type\":\"event\"") }.map(\.bodyBytes)
        // The Sentry sink's own counts, from the harness's summary (its last line).
        let summary = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").last.map(String.init) ?? ""
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(summary.utf8)) as? [String: Any], summary)
        let counters = ["sentry_dropped": object["sentryDropped"] as? Int ?? -1, "sentry_quarantined": object["sentryQuarantined"] as? Int ?? -1]
        return (envelopes, try RecordFileName.names(in: copy + "/records"), counters)
    }

    func contains(_ bytes: [UInt8], _ text: String) -> Bool { SecretCrash.contains(bytes, text) }

    /// Sentry's own parser and Relay's normaliser accept the envelope (the script fails otherwise).
    func assertSentryAccepts(_ envelope: [UInt8], _ setting: String) throws {
        let file = try Scratch.directory("what-leaves-envelope") + "/envelope"
        try Data(envelope).write(to: URL(fileURLWithPath: file))
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try Oracles.run("sentry_check.py", [file]).utf8)) as? [String: Any])
        XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(setting): \(summary["errors"] ?? "")")
        // The crashed run's session goes with its crash (the release and environment, no user data).
        XCTAssertEqual((summary["items"] as? [[String: Any]])?.compactMap { $0["type"] as? String }, ["event", "attachment", "session"], setting)
    }

    /// By default none of the four secrets reaches Sentry, and each opt-in brings back its own
    /// secret and no other; `everything` sends them all (the record as it is on disk).
    func testEachSecretLeavesOnlyWithItsOptIn() throws {
        let secrets = SecretCrash("w\(getpid())")
        let crashed = try crash(secrets)
        let settings: [(String, [String])] = [
            ("default", []), ("raw-memory", [secrets.stack]), ("breadcrumbs", [secrets.breadcrumb]),
            ("identity", [secrets.login]), ("full-paths", [secrets.path]), ("everything", secrets.all), ("none", []),
        ]
        var sizes: [String: Int] = [:]
        for (setting, expected) in settings {
            let options = setting == "default" ? [] : ["--data", ["everything", "none"].contains(setting) ? setting : setting + ",host-details"]
            let (envelopes, _, _) = try deliver(crashed, options)
            XCTAssertEqual(envelopes.count, 1, setting)
            let envelope = try XCTUnwrap(envelopes.first)
            sizes[setting] = envelope.count
            for secret in secrets.all {
                // Raw memory holds whatever the process held: the top of the main thread's stack
                // has its arguments and environment (the path), and the login id may be in a
                // buffer too. There, only the stack's secret must be there and the breadcrumb's not.
                if setting == "raw-memory" && (secret == secrets.login || secret == secrets.path) { continue }
                XCTAssertEqual(contains(envelope, secret), expected.contains(secret), "\(setting): \(secret) in what Sentry received")
            }
            try assertSentryAccepts(envelope, setting)
            // Host details: the OS's release and distribution by default, its name alone without.
            let lines = envelope.split(separator: 0x0A, omittingEmptySubsequences: false)
            let event = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lines[2])) as? [String: Any])
            let os = try XCTUnwrap((event["contexts"] as? [String: Any])?["os"] as? [String: Any])
            XCTAssertEqual(Set(os.keys) == ["type", "name"], setting == "none", "\(setting): \(os)")
        }
        XCTAssertLessThan(sizes["default"]!, sizes["everything"]!, "\(sizes)")
        print("what-leaves: envelope bytes by setting: \(sizes.sorted { $0.key < $1.key })")
    }

    /// The app's hook sees each event before it is sent, as Sentry's `before_send`: what it
    /// changes arrives; nil sends nothing and the record counts as delivered; a hook that returns
    /// no JSON object, or another event id, sends nothing and the record is given up.
    func testTheBeforeSendHookChangesDropsOrIsRefused() throws {
        let crashed = try crash(SecretCrash("h\(getpid())"))
        let (tagged, _, _) = try deliver(crashed, ["--before-send", "tag"])
        XCTAssertEqual(tagged.count, 1)
        let lines = try XCTUnwrap(tagged.first).split(separator: 0x0A, omittingEmptySubsequences: false)
        let event = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lines[2])) as? [String: Any])
        XCTAssertEqual((event["tags"] as? [String: Any])?["before_send"] as? String, "seen")
        try assertSentryAccepts(try XCTUnwrap(tagged.first), "tag")
        for hook in ["drop", "not-json", "new-id"] {
            let (envelopes, left, counters) = try deliver(crashed, ["--before-send", hook])
            XCTAssertEqual(envelopes.count, 0, "\(hook): nothing sent")
            XCTAssertEqual(left, [], "\(hook): the record is done with")
            // Dropped by the app's choice, or given up because the hook broke the event: counted apart.
            XCTAssertEqual(counters[hook == "drop" ? "sentry_dropped" : "sentry_quarantined"], 1, "\(hook): \(counters)")
        }
    }
}
