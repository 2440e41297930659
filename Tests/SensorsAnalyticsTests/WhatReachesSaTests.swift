// WhatReachesSaTests.swift — what the analytics sends of a crash, whatever the user chose for what
// leaves with it (CrashDataPolicy): a real crash seeded with four known secrets (TestSupport's
// SecretCrash: a buffer on the crashing thread's stack, a breadcrumb, the login id in the
// compensating $AppEnd, the executable's path), delivered to a loopback /sa collector (and Sentry)
// under each setting of `dataPolicy`, and looked for in the events it received. (What reaches
// Sentry: CrashReporterSentryTests' WhatLeavesTests.)
import Foundation
import ProcessSpawning
import SensorsEvents
import TestSupport
import XCTest

final class WhatReachesSaTests: XCTestCase {
    /// The events a loopback /sa collector received when the next launch delivered a copy of the
    /// crash's store and records with these harness options, Sentry configured too.
    func deliver(_ crash: SecretCrash, _ options: [String]) throws -> String {
        let copy = try Scratch.directory("what-reaches-sa-copy")
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: crash.store + suffix) {
            try FileManager.default.copyItem(atPath: crash.store + suffix, toPath: copy + "/s.sqlite" + suffix)
        }
        try FileManager.default.copyItem(atPath: crash.store + ".records", toPath: copy + "/records")
        let sentry = try TestHTTPServer(), sensors = try TestHTTPServer()
        let child = try ChildProcess.run(BuiltProducts.harness,
                                         ["deliver", "--records", copy + "/records", "--store", copy + "/s.sqlite",
                                          "--endpoint", sensors.url.absoluteString,
                                          "--sentry-dsn", "http://key@127.0.0.1:\(sentry.port)/42"] + options,
                                         environment: ["SWIFT_BACKTRACE": "enable=no"], stdout: copy + "/stdout", timeout: 120)
        XCTAssertEqual(child.ending, .exited(0))
        let sa = sensors.allRequests.compactMap { SensorsWire.decode(body: $0.body)?.json }.joined(separator: "\n")
        XCTAssertFalse(sa.isEmpty, "the events reached /sa")
        return sa
    }

    /// Under every setting, /sa never gets the stack, the breadcrumb or the path; it gets the login
    /// id as the events' identity (what the app's analytics is for), and nowhere else.
    func testSaGetsTheLoginAsTheIdentityAndNoOtherSecretUnderEverySetting() throws {
        let secrets = SecretCrash("a\(getpid())")
        let crashed = try secrets.crash(in: try Scratch.directory("what-reaches-sa"))
        for setting in ["default", "raw-memory", "breadcrumbs", "identity", "full-paths", "everything", "none"] {
            let options = setting == "default" ? [] : ["--data", ["everything", "none"].contains(setting) ? setting : setting + ",host-details"]
            let sa = try deliver(crashed, options)
            for secret in [secrets.stack, secrets.breadcrumb, secrets.path] {
                XCTAssertFalse(sa.contains(secret), "\(setting): \(secret) in what /sa received")
            }
            // The login id is the events' identity, and only that.
            let events = try sa.split(separator: "\n").flatMap {
                try XCTUnwrap(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [[String: Any]])
            }
            XCTAssertTrue(events.contains { $0["event"] as? String == "AppCrashed" }, setting)
            for event in events {
                var stripped = event
                stripped["distinct_id"] = nil
                stripped["login_id"] = nil
                stripped["identities"] = nil
                let text = String(decoding: try JSONSerialization.data(withJSONObject: stripped), as: UTF8.self)
                XCTAssertFalse(text.contains(secrets.login), "\(setting): the login id outside the identity: \(text)")
            }
        }
    }
}
