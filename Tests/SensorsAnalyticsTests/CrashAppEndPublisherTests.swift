// CrashAppEndPublisherTests.swift — the crash $AppEnd template: valid JSON once its placeholders are
// filled, whatever the names hold; the same keys as every other $AppEnd; bounded in size.
import CrashCapture
import SensorsEvents
@testable import CrashReporter
@testable import SensorsAnalytics
import Foundation
import XCTest

final class CrashAppEndPublisherTests: XCTestCase {
    /// Fills the placeholders with values of the documented shapes (crashcapture.h).
    private func fill(_ template: String) -> String {
        template.replacingOccurrences(of: CrashHandler.AppEndTemplate.trackIDPlaceholder, with: #""00000000-0000-4000-8000-000000000000""#)
            .replacingOccurrences(of: CrashHandler.AppEndTemplate.timePlaceholder, with: "1700000000123")
            .replacingOccurrences(of: CrashHandler.AppEndTemplate.durationPlaceholder, with: "1.250")
    }

    private func object(_ json: String) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }

    func testTheFilledTemplateIsValidJSONEvenWithHostileNames() throws {
        let renderer = EventRenderer(appName: "app \"quoted\"\n\\ name", appVersion: "1.0\u{1}")
        let context = EventContext(identity: EventIdentity(anonymousID: "anon\u{2028}", loginID: "user\"1"),
                                   superProperties: ["team": .string("a\"b\u{1}T"), "n": .int(3)])
        let template = CrashAppEndPublisher.template(renderer: renderer, runID: "run-1", context: context)
        // Each placeholder once; no other raw 0x01 (the hostile \u{1}T value is escaped).
        for placeholder in [CrashHandler.AppEndTemplate.trackIDPlaceholder, CrashHandler.AppEndTemplate.timePlaceholder, CrashHandler.AppEndTemplate.durationPlaceholder] {
            XCTAssertEqual(template.components(separatedBy: placeholder).count, 2, placeholder.debugDescription)
        }
        XCTAssertEqual(template.utf8.filter { $0 == 1 }.count, 3)
        let event = try object(fill(template))
        XCTAssertEqual(event["_track_id"] as? String, "00000000-0000-4000-8000-000000000000")
        XCTAssertEqual((event["time"] as? NSNumber)?.int64Value, 1_700_000_000_123)
        XCTAssertEqual(event["event"] as? String, "$AppEnd")
        XCTAssertEqual(event["distinct_id"] as? String, "user\"1")
        XCTAssertEqual(event["login_id"] as? String, "user\"1")
        XCTAssertEqual(event["anonymous_id"] as? String, "anon\u{2028}")
        let properties = try XCTUnwrap(event["properties"] as? [String: Any])
        XCTAssertEqual(properties["$app_name"] as? String, "app \"quoted\"\n\\ name")
        XCTAssertEqual(properties["$app_version"] as? String, "1.0\u{1}")
        XCTAssertEqual(properties["team"] as? String, "a\"b\u{1}T")
        XCTAssertEqual(properties["n"] as? Int, 3)
        XCTAssertEqual((properties["$event_duration"] as? NSNumber)?.doubleValue, 1.25)
        XCTAssertEqual(properties["$app_end_reason"] as? String, "crash")
        XCTAssertEqual(properties["$app_crashed"] as? Bool, true)
        XCTAssertEqual(properties["$run_id"] as? String, "run-1")
        let lib = try XCTUnwrap(event["lib"] as? [String: Any])
        XCTAssertEqual(lib["$lib"] as? String, "CrashCapture")
    }

    /// The template and the renderer's own `$AppEnd` (what the tracker stores at a normal end)
    /// differ in values only: same top-level members, same property keys.
    func testTheTemplateHasTheKeysOfEveryOtherAppEnd() throws {
        let renderer = EventRenderer(appName: "app", appVersion: "1")
        let context = EventContext(identity: EventIdentity(anonymousID: "a", loginID: "u"), superProperties: ["plan": .string("pro")])
        let crash = try object(fill(CrashAppEndPublisher.template(renderer: renderer, runID: "r", context: context)))
        let normalDraft = AppEvents.appEnd(reason: .normal, durationSeconds: 2, runID: "r", time: 5, identity: context.identity)
        let normal = try object(renderer.render(normalDraft, base: renderer.base(superProperties: context.superProperties)))
        XCTAssertEqual(Set(crash.keys), Set(normal.keys))
        let crashKeys = Set(try XCTUnwrap(crash["properties"] as? [String: Any]).keys)
        XCTAssertEqual(crashKeys, Set(try XCTUnwrap(normal["properties"] as? [String: Any]).keys))
        XCTAssertTrue(AppEvents.appEndPropertyKeys.isSubset(of: crashKeys))
        XCTAssertTrue(crashKeys.contains("$cpu_count"))
        XCTAssertTrue(crashKeys.contains("plan"))
    }

    func testSuperPropertiesTooLargeForTheHandlerAreLeftOutNotTheEvent() throws {
        let renderer = EventRenderer(appName: "app", appVersion: "1")
        let huge = EventContext(superProperties: ["blob": .string(String(repeating: "x", count: 8000)),
                                                  "blob2": .string(String(repeating: "y", count: 8000))])
        let template = CrashAppEndPublisher.template(renderer: renderer, runID: "r", context: huge)
        XCTAssertLessThan(template.utf8.count, CrashHandler.AppEndTemplate.maxBytes)
        let properties = try XCTUnwrap(try object(fill(template))["properties"] as? [String: Any])
        XCTAssertNil(properties["blob"])
        XCTAssertEqual(properties["$app_end_reason"] as? String, "crash")
    }

    func testPresetPropertiesCarryNoHostOrUserIdentity() {
        let presets = PresetProperties.current()
        XCTAssertEqual(presets["$os"], .string("Linux"))
        XCTAssertNotNil(presets["$os_version"])
        XCTAssertNotNil(presets["$model"])
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count)
        let hostname = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        for value in presets.values {
            if case .string(let text) = value, !hostname.isEmpty { XCTAssertFalse(text.contains(hostname)) }
        }
    }

    func testATemplateTooLongForTheHandlerIsRefused() {
        XCTAssertFalse(CrashHandler.setAppEndTemplate(String(repeating: "x", count: CrashHandler.AppEndTemplate.maxBytes)))
        XCTAssertTrue(CrashHandler.setAppEndTemplate(String(repeating: "x", count: CrashHandler.AppEndTemplate.maxBytes - 1)))
        XCTAssertTrue(CrashHandler.setAppEndTemplate(""))
    }
}
