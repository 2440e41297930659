// EventsTests.swift — the event vocabulary on its own: JSON text, scalars, identity, presets.
import HostFacts
import CrashRecordFormat
import SensorsEvents
import Foundation
import TestSupport
import XCTest

final class EventsTests: XCTestCase {
    /// Decodes a JSON string literal with Foundation (a parser no one here wrote).
    func decode(_ literal: String) throws -> String {
        let array = try JSONSerialization.jsonObject(with: Data("[\(literal)]".utf8)) as? [String]
        return try XCTUnwrap(array?.first)
    }

    func testQuotedTextIsValidJSONAndDecodesToTheSameString() throws {
        var hostile = (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }.joined()
        hostile += "\"\\/\u{7F}\u{2028}\u{2029}é漢字🙂\u{FFFF}"
        for text in [hostile, "", "plain", "\u{2028}", "a\u{2029}b", "\\\"", String(repeating: "\u{1}", count: 1000)] {
            let literal = JSONText.quote(text)
            XCTAssertTrue(literal.hasPrefix("\"") && literal.hasSuffix("\""))
            XCTAssertEqual(try decode(literal), text)
            // No raw control character and no raw U+2028/U+2029 survives (JavaScript-safe).
            XCTAssertFalse(literal.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x2028 || $0.value == 0x2029 }, literal)
        }
    }

    func testScalarsRenderAsJSONAndNonFiniteNumbersAsNull() throws {
        XCTAssertEqual(JSONScalar.int(-42).json, "-42")
        XCTAssertEqual(JSONScalar.bool(true).json, "true")
        XCTAssertEqual(JSONScalar.string("x\"y").json, #""x\"y""#)
        XCTAssertEqual(JSONScalar.double(.infinity).json, "null")
        XCTAssertEqual(JSONScalar.double(.nan).json, "null")
        let parsed = try JSONSerialization.jsonObject(with: Data("[\(JSONScalar.double(0.1).json)]".utf8)) as? [Double]
        XCTAssertEqual(parsed, [0.1])
    }

    func testTheDistinctIDIsTheLoginIDOnceThereIsOne() {
        XCTAssertNil(EventIdentity().distinctID)
        XCTAssertEqual(EventIdentity(anonymousID: "anon").distinctID, "anon")
        XCTAssertEqual(EventIdentity(anonymousID: "anon", loginID: "user").distinctID, "user")
    }

    func testPresetsDescribeThisMachineWithoutHostOrUserIdentity() throws {
        let presets = PresetProperties.current()
        XCTAssertEqual(presets["$os"], .string("Linux"))
        XCTAssertEqual(presets["$lib"], .string(CrashCaptureLibrary.name))
        XCTAssertEqual(presets["$lib_version"], .string(CrashCaptureLibrary.version))
        var uts = utsname()
        uname(&uts)
        let release = withUnsafeBytes(of: &uts.release) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        guard case .string(let version) = presets["$os_version"] else { return XCTFail("no $os_version") }
        XCTAssertTrue(version.hasSuffix("kernel " + release), version)
        XCTAssertEqual(presets["$timezone_offset"], .int(-TimeZone.current.secondsFromGMT() / 60))
        for key in ["$hostname", "$user", "$argv", "$environment"] { XCTAssertNil(presets[key], key) }
        XCTAssertEqual(PresetProperties.currentList().map(\.0), ["$os", "$os_version", "$model", "$lib", "$lib_version", "$timezone_offset"])
    }

    /// `$cpu_count` agrees with coreutils' `nproc` (the affinity mask), capped by a cgroup v2
    /// quota when there is one.
    func testProcessorCountAgreesWithNproc() throws {
        let nproc = try XCTUnwrap(Int(try Tools.output(try XCTUnwrap(Tools.find("nproc")), []).trimmingCharacters(in: .whitespacesAndNewlines)))
        let count = PresetProperties.processorCount()
        if let quota = try? String(contentsOfFile: "/sys/fs/cgroup/cpu.max", encoding: .utf8), !quota.hasPrefix("max") {
            XCTAssertLessThanOrEqual(count, nproc)
            XCTAssertGreaterThanOrEqual(count, 1)
        } else {
            XCTAssertEqual(count, nproc)
        }
        let rendered = EventRenderer(appName: "a", appVersion: "1").presets["$cpu_count"]
        XCTAssertEqual(rendered, .int(count))
    }

    /// The template path (lists) and the ordinary path (dictionaries) render the same event.
    func testTheTemplateAndTheRenderedEventAgreeMemberForMember() throws {
        let renderer = EventRenderer(appName: "a", appVersion: "1")
        let identity = EventIdentity(anonymousID: "anon", loginID: "é-user")
        let superProperties: [String: JSONScalar] = ["zeta": .int(1), "Émile": .string("x"), "$os": .string("override")]
        let draft = AppEvents.appEnd(reason: .crash, durationSeconds: 1.5, runID: "r", time: 42, identity: identity, trackID: "t")
        let rendered = renderer.render(draft, base: renderer.base(superProperties: superProperties))
        let template = renderer.renderTemplate(
            event: draft.event, identity: identity,
            properties: AppEvents.appEndProperties(reason: .crash, durationSeconds: 1.5, runID: "r"),
            superProperties: superProperties, rawTrackID: "\"t\"", rawTime: "42", rawProperties: [])
        // The same object, member for member (the order of members may differ).
        let a = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(template.utf8)) as? NSDictionary)
        let b = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(rendered.utf8)) as? NSDictionary)
        XCTAssertEqual(a, b)
        XCTAssertEqual((a["properties"] as? NSDictionary)?["$os"] as? String, "override")
    }

    /// Track and run ids are random (v4) UUIDs as Foundation's parser reads them.
    func testNewTrackIDsAreDistinctVersion4UUIDs() throws {
        var seen = Set<String>()
        for _ in 0..<2000 {
            let id = EventDraft.newTrackID()
            let uuid = try XCTUnwrap(UUID(uuidString: id), id)
            XCTAssertEqual(uuid.uuidString.lowercased(), id)
            let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
            XCTAssertEqual(bytes[6] >> 4, 4, id)
            XCTAssertEqual(bytes[8] >> 6, 2, id)
            seen.insert(id)
        }
        XCTAssertEqual(seen.count, 2000)
    }

    // MARK: os-release

    /// Python's `platform` module parses os-release the way this does (a parser no one here
    /// wrote): the same fields of every text, and this machine's file found where Python finds it.
    func testOSReleaseIsParsedAsPythonParsesIt() throws {
        let output = try Tools.output(try Oracles.python(), ["-c", "import json, platform; print(json.dumps(platform.freedesktop_os_release()))"])
        let truth = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: String])
        let release = try XCTUnwrap(OSRelease.current())
        XCTAssertEqual(release.id, truth["ID"])
        XCTAssertEqual(release.versionID, truth["VERSION_ID"])
        XCTAssertEqual(release.prettyName, truth["PRETTY_NAME"])

        let texts = [
            "ID=fedora\nVERSION_ID=\"40\"\nPRETTY_NAME='Fedora Linux 40'\n",
            // Escapes inside quotes, a quote inside the other kind, an unmatched quote, a comment,
            // blank and indented lines, a key repeated (the last wins), CRLF, "=" in a value.
            "PRETTY_NAME=\"Joe\\'s \\\"OS\\\" \\$5 \\`x\\` C:\\\\dir \\n\"\nID=\"joe's\"\nVERSION_ID=\"12\n",
            "# ID=commented\n\n  ID=indented\nID=first\nID=second\nVERSION_ID='1=2'\r\nPRETTY_NAME=\"\"\n",
            "ID=\"\nVERSION_ID=''\nPRETTY_NAME=a b  \nBAD KEY=x\n=novalue\nID-X=y\n",
            "VERSION_ID=\"é 漢字\"\nPRETTY_NAME=\"tab\there\"",
        ]
        let directory = try Scratch.directory("os-release")
        for (index, text) in texts.enumerated() {
            let path = directory + "/\(index)"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let script = "import json, platform, sys; print(json.dumps(platform._parse_os_release(open(sys.argv[1], newline=''))))"
            let python = try Tools.output(try Oracles.python(), ["-c", script, path])
            let theirs = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(python.utf8)) as? [String: String])
            let mine = OSRelease(parsing: text)
            // Python fills ID and PRETTY_NAME with defaults ("linux", "Linux") where the text has none.
            XCTAssertEqual(mine.id ?? "linux", theirs["ID"], text)
            XCTAssertEqual(mine.versionID, theirs["VERSION_ID"], text)
            XCTAssertEqual(mine.prettyName ?? "Linux", theirs["PRETTY_NAME"], text)
            XCTAssertEqual(OSRelease.current(paths: [directory + "/missing", path]), mine)
        }
        XCTAssertNil(OSRelease.current(paths: [directory + "/missing"]))
        XCTAssertEqual(OSRelease(parsing: texts[0]), OSRelease(id: "fedora", versionID: "40", prettyName: "Fedora Linux 40"))
    }

    /// `$os_version` is os-release's PRETTY_NAME, as the one parser reads it, and the kernel.
    func testTheOSVersionPresetIsThePrettyNameOfTheOneParser() throws {
        guard case .string(let version) = PresetProperties.current()["$os_version"] else { return XCTFail("no $os_version") }
        let pretty = try XCTUnwrap(OSRelease.current()?.prettyName)
        XCTAssertTrue(version.hasPrefix(pretty + "; kernel "), version)
    }
}
