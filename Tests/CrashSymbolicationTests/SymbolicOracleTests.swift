// SymbolicOracleTests.swift — every scenario of the harness table, crashed; each frame of the
// crashed thread that falls in the harness executable named as Sentry's `symbolic` (PyPI,
// Tests/Oracles/symbolic_lookup.py) names the same address of the same binary.
import CrashSymbolication
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class SymbolicOracleTests: XCTestCase {
    /// Scenarios whose run leaves no record of the harness's own crash in the directory (they
    /// end by exit or SIGKILL), or whose record is written by a child process.
    /// Scenarios left out besides those that leave no record (the table says which): the forked
    /// child's record is the child's.
    static let skipped: Set<String> = ["forked-child"]

    struct Frame: Equatable, CustomStringConvertible {
        var function: String
        var line: Int?
        var description: String { "\(function):\(line.map(String.init) ?? "?")" }
    }

    func testEveryScenarioIsNamedAsSymbolicNamesIt() throws {
        let harness = BuiltProducts.harness
        // The scenarios that leave a record, as the table says (`list --json`).
        let listing = try Tools.output(harness, ["list", "--json"])
        let table = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(listing.utf8)) as? [String: Any])
        let scenarios = try XCTUnwrap(table["scenarios"] as? [[String: Any]])
            .filter { $0["record"] as? Bool == true }.compactMap { $0["name"] as? String }
        XCTAssertGreaterThan(scenarios.count, 40)
        // The harness is a PIE: image-relative addresses are offsets from its load base (readelf).
        let program = try Tools.output(try XCTUnwrap(Tools.find("readelf")), ["-l", "-W", harness])
        let firstLoad = try XCTUnwrap(program.split(separator: "\n").first { $0.split(separator: " ").first == "LOAD" })
        XCTAssertEqual(firstLoad.split(separator: " ")[2], "0x0000000000000000", "first PT_LOAD at 0")

        // Ours: per scenario, per frame index of the crashed thread in the harness, the chain.
        var ours: [(scenario: String, index: Int, lookup: UInt64, chain: [Frame])] = []
        var checked: [String] = []
        var withoutImages: [String] = []
        for scenario in scenarios where !Self.skipped.contains(scenario) {
            let directory = try Scratch.directory("oracle-\(scenario)")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var environment = ProcessInfo.processInfo.environment
            environment["SWIFT_BACKTRACE"] = "enable=no"
            _ = try ChildProcess.run(harness, ["run", scenario, "--dir", directory], environment: environment, timeout: 120,
                                     ownProcessGroup: true)
            let records = try FileManager.default.contentsOfDirectory(atPath: directory)
                .filter { $0.hasSuffix(".ccrec") || $0.hasSuffix(".ccrec.partial") } // a handler that fails leaves a partial one
            guard let record = records.sorted().first else {
                XCTFail("\(scenario) left no record")
                continue
            }
            let output = try Tools.output(BuiltProducts.inspect, ["show", directory + "/" + record, "--json"])
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
            let images = try XCTUnwrap(object["images"] as? [[String: Any]])
            guard let main = images.first(where: { $0["path"] as? String == harness }) else {
                // A partial record cut before its image list has nothing to compare.
                XCTAssertTrue(record.hasSuffix(".partial"), "\(scenario): the harness image")
                withoutImages.append(scenario)
                continue
            }
            let base = try XCTUnwrap(UInt64((main["base"] as? String ?? "").dropFirst(2), radix: 16))
            let thread = try XCTUnwrap((object["threads"] as? [[String: Any]])?.first { $0["crashed"] as? Bool == true }, scenario)
            var chains: [Int: (lookup: UInt64, chain: [Frame])] = [:]
            for frame in try XCTUnwrap(thread["frames"] as? [[String: Any]]) where frame["image"] as? String == harness {
                let index = try XCTUnwrap(frame["index"] as? Int)
                let address = try XCTUnwrap(UInt64((frame["address"] as? String ?? "").dropFirst(2), radix: 16))
                // Frame 0 is the signal context's pc and async frames are resume points (function
                // entries), both looked up as they are; other callers are return addresses: pc − 1.
                let kind = try XCTUnwrap(frame["kind"] as? String)
                let lookup = address - base - (kind == "returnAddress" ? 1 : 0)
                if index == 0 { XCTAssertEqual(kind, "programCounter", scenario) }
                XCTAssertEqual(frame["imageOffset"] as? String, "0x" + String(lookup, radix: 16), "\(scenario) frame \(index)")
                chains[index, default: (lookup, [])].chain.append(Frame(function: frame["symbol"] as? String ?? "??", line: frame["line"] as? Int))
            }
            if record.hasSuffix(".ccrec") { XCTAssertFalse(chains.isEmpty, "\(scenario): frames in the harness") }
            for (index, entry) in chains { ours.append((scenario, index, entry.lookup, entry.chain)) }
            checked.append(scenario)
        }
        XCTAssertGreaterThan(ours.count, 200)

        // symbolic, once for every address; its names demangled by the toolchain's swift-demangle
        // (Swift) and binutils' c++filt (C++).
        let answer = try Oracles.run("symbolic_lookup.py", [harness] + ours.map { "0x" + String($0.lookup, radix: 16) })
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])
        XCTAssertEqual(object["code_id"] as? String, hexString(try ELFFile(path: harness).buildID), "symbolic read the same binary")
        let lookups = try XCTUnwrap(object["lookups"] as? [[String: Any]])
        XCTAssertEqual(lookups.count, ours.count)
        let raw = lookups.map { ($0["frames"] as? [[String: Any]] ?? []).map { ($0["symbol"] as? String ?? "", $0["line"] as? Int ?? 0) } }
        let mangled = Set(raw.joined().map(\.0).filter { $0.hasPrefix("$s") })
        let demangler = try XCTUnwrap(Tools.find("swift-demangle"), "the toolchain's swift-demangle")
        var demangled: [String: String] = [:]
        for line in try Tools.output(demangler, ["--no-sugar"] + mangled.sorted()).split(separator: "\n") {
            let parts = line.components(separatedBy: " ---> ")
            if parts.count == 2 { demangled[parts[0]] = parts[1] }
        }
        XCTAssertEqual(demangled.count, mangled.count)
        // C++ names (the harness's C++ scenarios, capture's terminate handler): binutils' c++filt.
        let mangledCxx = Set(raw.joined().map(\.0).filter { $0.hasPrefix("_Z") }).sorted()
        if !mangledCxx.isEmpty {
            let filter = try XCTUnwrap(Tools.find("c++filt"), "binutils' c++filt")
            let lines = try Tools.output(filter, mangledCxx).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for (name, plain) in zip(mangledCxx, lines) { demangled[name] = plain }
        }
        var compared = 0, chainsCompared = 0
        for (position, mine) in ours.enumerated() {
            let theirs = raw[position].map { Frame(function: demangled[$0.0] ?? $0.0, line: $0.1 == 0 ? nil : $0.1) }
            let place = "\(mine.scenario) frame \(mine.index) at 0x\(String(mine.lookup, radix: 16))"
            guard let innermost = theirs.first else {
                XCTFail("\(place): symbolic finds nothing, we say \(mine.chain)")
                continue
            }
            XCTAssertEqual(mine.chain.first, innermost, "\(place): innermost; ours \(mine.chain), symbolic \(theirs)")
            if mine.chain.count > 1 && theirs.count > 1 {
                XCTAssertEqual(mine.chain, theirs, "\(place): inlined chain")
                chainsCompared += 1
            }
            compared += 1
        }
        XCTAssertEqual(compared, ours.count)
        print("symbolic oracle: \(compared) frames in \(checked.count) scenarios compared (\(chainsCompared) inlined chains); skipped \(Self.skipped.sorted()); partial records without images: \(withoutImages)")
        XCTAssertLessThanOrEqual(withoutImages.count, 3, "\(withoutImages)")
    }
}
