// AppEndFragmentTests.swift — the pre-formatted $AppEnd is valid JSON once the handler completes it, whatever the names hold.
import CShims
@testable import CrashCapture
import Foundation
import XCTest

final class AppEndFragmentTests: XCTestCase {
    /// Completes a fragment the way cc_handler.c does.
    private func complete(_ fragment: String) -> String {
        #"{"_track_id":"00000000-0000-4000-8000-000000000000","time":1,"# + fragment
            + #""$event_duration":1.250,"$app_crashed":true,"$crash_signal":"SIGSEGV","$crash_record":"crash-1-2-3.ccrec"}}"#
    }

    func testTheCompletedEventIsValidJSONEvenWithHostileNames() throws {
        var configuration = CrashCaptureConfiguration(directory: "/tmp/x", appName: "app \"quoted\"\n\\ name", appVersion: "1.0\u{1}")
        configuration.superProperties = ["team": "a\"b", "$app_name": "must not override"]
        let identity = EventIdentity(anonymousID: "anon\u{2028}", loginID: "user\"1")
        let json = complete(AppEndFragment.make(configuration: configuration, identity: identity))
        let event = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        XCTAssertEqual(event["distinct_id"] as? String, "user\"1")
        XCTAssertEqual(event["login_id"] as? String, "user\"1")
        XCTAssertEqual(event["anonymous_id"] as? String, "anon\u{2028}")
        let properties = try XCTUnwrap(event["properties"] as? [String: Any])
        XCTAssertEqual(properties["$app_name"] as? String, "app \"quoted\"\n\\ name")
        XCTAssertEqual(properties["$app_version"] as? String, "1.0\u{1}")
        XCTAssertEqual(properties["team"] as? String, "a\"b")
        XCTAssertEqual((properties["$event_duration"] as? NSNumber)?.doubleValue, 1.25)
        let lib = try XCTUnwrap(event["lib"] as? [String: Any])
        XCTAssertEqual(lib["$lib"] as? String, "CrashCapture")
    }

    func testPresetPropertiesCarryNoHostOrUserIdentity() {
        let presets = PresetProperties.current()
        XCTAssertEqual(presets["$os"], .string("Linux"))
        XCTAssertNotNil(presets["$os_version"])
        XCTAssertNotNil(presets["$model"])
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count)
        let hostname = String(cString: host)
        for value in presets.values {
            if case .string(let text) = value, !hostname.isEmpty { XCTAssertFalse(text.contains(hostname)) }
        }
    }

    func testAFragmentTooLongForTheHandlerIsRefused() {
        XCTAssertEqual(cc_set_app_end_fragment(String(repeating: "x", count: 5000)), -1)
    }
}
