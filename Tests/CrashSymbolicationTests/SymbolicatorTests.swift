// SymbolicatorTests.swift — Symbolicator on the fixture program, compared with addr2line; images it must refuse.
import CrashRecordFormat
import CrashSymbolication
import Foundation
import TestSupport
import XCTest

final class SymbolicatorTests: XCTestCase {
    /// Where the PIE is pretended to be loaded.
    let base: UInt64 = 0x5555_5555_4000

    func image(_ path: String, base: UInt64, buildIDOf idPath: String? = nil) throws -> CrashImage {
        CrashImage(path: path, base: base, size: 0x10_0000, buildID: try ELFFile(path: idPath ?? path).buildID)
    }

    /// Every byte address of the given functions (per nm), at `base` + bias.
    func addresses(of functions: [String], in binary: String) throws -> [UInt64] {
        let table = try Oracle.functions(binary)
        return try functions.flatMap { name -> [UInt64] in
            let function = try XCTUnwrap(table[name], "nm lists \(name)")
            XCTAssertGreaterThan(function.size, 0)
            return Array(function.address..<(function.address + function.size))
        }
    }

    /// Symbolicator's frames for one address, reduced to what addr2line prints.
    func simplified(_ frames: [SymbolicatedFrame]) -> [Oracle.Frame] {
        frames.map { Oracle.Frame(function: $0.symbol ?? "??", file: $0.file.map { ($0 as NSString).lastPathComponent }, line: $0.line) }
    }

    /// Symbolicates a thread whose frames look up every given offset and compares each with
    /// addr2line there. Frame 0 is a pc from a signal context, looked up exactly; the others are
    /// return addresses, which the Symbolicator must look up one byte earlier — so they are
    /// given as offset + 1.
    func checkAgainstAddr2line(image: CrashImage, binaryForTruth: String, offsets lookups: [UInt64], bias: UInt64,
                               symbolicator: Symbolicator, file: StaticString = #filePath, line: UInt = #line) throws {
        let frames = lookups.enumerated().map { ($0.offset == 0 ? $0.element : $0.element + 1) &+ bias }
        let result = symbolicator.symbolicate(frames: frames, firstIsExact: true, images: [image])
        XCTAssertEqual(result.count, frames.count, file: file, line: line)
        let truth = try Oracle.addr2line(binaryForTruth, lookups)
        XCTAssertEqual(truth.count, lookups.count, file: file, line: line)
        var inlinedSeen = 0
        for index in 0..<min(result.count, truth.count) {
            let mine = result[index]
            let where_ = "frame \(index) at offset 0x\(String(lookups[index], radix: 16))"
            XCTAssertEqual(simplified(mine), truth[index], where_, file: file, line: line)
            for (position, frame) in mine.enumerated() {
                XCTAssertEqual(frame.address, frames[index], where_, file: file, line: line)
                XCTAssertEqual(frame.image, image.path, where_, file: file, line: line)
                XCTAssertEqual(frame.imageOffset, lookups[index], where_, file: file, line: line)
                XCTAssertEqual(frame.inlined, position < mine.count - 1, where_, file: file, line: line)
                XCTAssertNil(frame.problem, where_, file: file, line: line)
            }
            if mine.count > 1 { inlinedSeen += 1 }
        }
        XCTAssertGreaterThan(inlinedSeen, 0, "some addresses fall in the inlined square()", file: file, line: line)
    }

    func testEveryAddressOfAPIEIsNamedAsAddr2lineNamesIt() throws {
        let fixture = try Fixture.get()
        let offsets = try addresses(of: ["alpha", "beta", "main"], in: fixture.pie)
        try checkAgainstAddr2line(image: try image(fixture.pie, base: base), binaryForTruth: fixture.pie, offsets: offsets,
                                  bias: base, symbolicator: try Symbolicator())
    }

    func testANonPIEBinaryLoadedWhereItAskedIsNamedToo() throws {
        let fixture = try Fixture.get()
        // nm's addresses are the run-time addresses here; the image starts at its first load.
        let offsets = try addresses(of: ["alpha", "beta"], in: fixture.nonPIE)
        try checkAgainstAddr2line(image: try image(fixture.nonPIE, base: 0x400000), binaryForTruth: fixture.nonPIE,
                                  offsets: offsets, bias: 0, symbolicator: try Symbolicator())
    }

    func testAStrippedBinaryIsNamedFromItsDebugFileFoundByBuildID() throws {
        let fixture = try Fixture.get()
        let hex = hexString(try ELFFile(path: fixture.pie).buildID)
        let symbols = try Scratch.directory("symbols")
        try FileManager.default.createDirectory(atPath: symbols + "/.build-id/" + hex.prefix(2), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fixture.debugFile, toPath: symbols + "/.build-id/\(hex.prefix(2))/\(hex.dropFirst(2)).debug")
        let offsets = try addresses(of: ["alpha", "beta"], in: fixture.pie)
        let symbolicator = try Symbolicator(symbolDirectories: [symbols])
        // The binary is not where the record says (deployed elsewhere): the debug file is used.
        let gone = try image(try Scratch.directory("deployed") + "/prog", base: base, buildIDOf: fixture.pie)
        try checkAgainstAddr2line(image: gone, binaryForTruth: fixture.pie, offsets: offsets, bias: base, symbolicator: symbolicator)
        // The stripped binary is where the record says: its debug file still names the frames.
        let deployed = try image(fixture.stripped, base: base)
        try checkAgainstAddr2line(image: deployed, binaryForTruth: fixture.pie, offsets: offsets, bias: base, symbolicator: symbolicator)
    }

    func testAStrippedBinaryWithoutDebugInfoGivesNoNameRatherThanAWrongOne() throws {
        let fixture = try Fixture.get()
        let offsets = try addresses(of: ["alpha"], in: fixture.pie)
        let emptyStore = try Scratch.directory("empty-store")
        let hex = hexString(try ELFFile(path: fixture.pie).buildID)
        let result = try Symbolicator(symbolDirectories: [emptyStore], debuginfod: nil).symbolicate(
            frames: offsets.map { $0 + base }, firstIsExact: true, images: [try image(fixture.stripped, base: base)])
        for (index, frames) in result.enumerated() {
            XCTAssertEqual(frames.count, 1)
            XCTAssertNil(frames.first?.symbol, "frame \(index): \(frames)")
            // Why: the binary is stripped and its debug file is nowhere.
            XCTAssertEqual(frames.first?.problem, "no symbol: \(fixture.stripped) has no debug information and no debug file "
                           + "with build-id \(hex) in \(emptyStore); DEBUGINFOD_URLS not set")
            XCTAssertEqual(frames.first?.imageOffset, index == 0 ? offsets[index] : offsets[index] - 1, "frame \(index)")
        }
    }

    func testABinaryWhoseBuildIDDiffersIsNeverUsed() throws {
        let fixture = try Fixture.get()
        let recorded = try ELFFile(path: fixture.nonPIE).buildID
        let onDisk = try ELFFile(path: fixture.pie).buildID
        XCTAssertNotEqual(recorded, onDisk)
        let image = CrashImage(path: fixture.pie, base: base, size: 0x10_0000, buildID: recorded)
        let alpha = try XCTUnwrap(try Oracle.functions(fixture.pie)["alpha"]).address
        let result = try Symbolicator().symbolicate(frames: [base + alpha], firstIsExact: true, images: [image])
        let frame = try XCTUnwrap(result.first?.first)
        XCTAssertNil(frame.symbol)
        XCTAssertEqual(frame.problem, "build-id differs: record has \(hexString(recorded)), \(fixture.pie) has \(hexString(onDisk))")
    }

    func testImagesThatCannotBeReadSayWhy() throws {
        let fixture = try Fixture.get()
        let directory = try Scratch.directory("unreadable")
        let buildID = try ELFFile(path: fixture.pie).buildID
        let hex = hexString(buildID)
        try programSource.write(toFile: directory + "/text", atomically: true, encoding: .utf8)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: fixture.pie))
        XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/truncated", contents: bytes.prefix(40)))
        let cases: [(path: String, problem: String)] = [
            (directory + "/text", "\(directory)/text is not a readable ELF file"),
            (directory + "/truncated", "\(directory)/truncated is not a readable ELF file"),
            (directory, "\(directory) is not a readable ELF file"),
            (directory + "/missing", "no binary with build-id \(hex) found"),
        ]
        let symbolicator = try Symbolicator()
        for (index, item) in cases.enumerated() {
            // A different base each time: the resolution is cached per path, build-id and base.
            let imageBase = base + UInt64(index) << 32
            let image = CrashImage(path: item.path, base: imageBase, size: 0x1000, buildID: buildID)
            let result = symbolicator.symbolicate(frames: [imageBase + 0x10, imageBase + 0x20], firstIsExact: false, images: [image])
            XCTAssertEqual(result.map(\.count), [1, 1])
            for frames in result {
                XCTAssertNil(frames[0].symbol, item.path)
                XCTAssertEqual(frames[0].problem, item.problem)
                XCTAssertEqual(frames[0].image, item.path)
            }
            XCTAssertEqual(result.map { $0[0].imageOffset }, [0x0F, 0x1F], "return addresses are looked up one byte earlier")
        }
    }

    func testAnAddressOutsideEveryImageIsSaidToBe() throws {
        let fixture = try Fixture.get()
        let image = try image(fixture.pie, base: base)
        let outside: [UInt64] = [0, base - 1, base + image.size, 0xFFFF_FFFF_FFFF_FFFF]
        let result = try Symbolicator().symbolicate(frames: outside, firstIsExact: true, images: [image])
        XCTAssertEqual(result.map(\.count), [1, 1, 1, 1])
        for (index, frames) in result.enumerated() {
            XCTAssertEqual(frames[0].address, outside[index])
            XCTAssertNil(frames[0].image)
            XCTAssertNil(frames[0].symbol)
            XCTAssertEqual(frames[0].problem, "not in any loaded image")
        }
    }

    // MARK: Swift names

    /// Swift symbols of this very test binary (200 of them, from nm), demangled in process,
    /// compared with the toolchain's swift-demangle.
    func testSwiftNamesAreDemangledAsSwiftDemangleDoes() throws {
        let swiftDemangle = try XCTUnwrap(Tools.find("swift-demangle"), "the toolchain's swift-demangle")
        let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let mangled = try Oracle.functions(binary).keys.filter { $0.hasPrefix("$s") }.sorted().prefix(200)
        XCTAssertGreaterThan(mangled.count, 50)
        // The runtime's swift_demangle (default options) writes Optional<T>, not T?: --no-sugar.
        let text = try Tools.output(swiftDemangle, ["--no-sugar"] + Array(mangled))
        // One "mangled ---> demangled" line per name.
        var truth: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.components(separatedBy: " ---> ")
            if parts.count == 2 { truth[parts[0]] = parts[1] }
        }
        XCTAssertEqual(truth.count, mangled.count)
        for name in mangled {
            XCTAssertEqual(SwiftDemangler.demangle(name), truth[name], name)
            XCTAssertNotEqual(SwiftDemangler.demangle(name), name, "a Swift name changes")
        }
    }

    func testOtherNamesAreLeftAlone() {
        for name in ["alpha", "main", "_ZN3foo3barEv", "", "$", "$x", "s14CrashScenarios6level1yyyyXEF"] {
            XCTAssertEqual(SwiftDemangler.demangle(name), name)
        }
    }
}

final class SymbolStoreUnitTests: XCTestCase {
    let base: UInt64 = 0x5555_5555_4000

    /// readelf -S says which files have DWARF and which are separate debug files.
    func testDebugSectionsAreSeenAsReadelfSeesThem() throws {
        let fixture = try Fixture.get()
        for (path, debug, separate) in [(fixture.pie, true, false), (fixture.stripped, false, false), (fixture.debugFile, true, true)] {
            let text = try Tools.output(try Oracle.tool("readelf"), ["-S", "-W", path])
            XCTAssertEqual(text.contains(" .debug_info "), debug, path)
            XCTAssertEqual(text.split(separator: "\n").contains { $0.contains(" .text ") && $0.contains("NOBITS") }, separate, path)
            let elf = try ELFFile(path: path)
            XCTAssertEqual(elf.hasDebugInfo, debug, path)
            XCTAssertEqual(elf.isSeparateDebugFile, separate, path)
        }
    }

    /// A stripped binary at its recorded path, its debug file in a flat directory under any
    /// name, a mismatched file beside it: the debug file wins and names as addr2line does.
    func testTheDebugFileInAFlatDirectoryWinsOverTheStrippedBinaryAtItsPath() throws {
        let fixture = try Fixture.get()
        let flat = try Scratch.directory("flat")
        try FileManager.default.copyItem(atPath: fixture.nonPIE, toPath: flat + "/a-first") // another build-id
        try FileManager.default.copyItem(atPath: fixture.debugFile, toPath: flat + "/whatever-name")
        let alpha = try XCTUnwrap(try Oracle.functions(fixture.pie)["alpha"])
        let image = CrashImage(path: fixture.stripped, base: base, size: 0x10_0000, buildID: try ELFFile(path: fixture.stripped).buildID)
        let result = try Symbolicator(symbolDirectories: [flat], debuginfod: nil).symbolicate(
            frames: [base + alpha.address], firstIsExact: true, images: [image])
        let truth = try Oracle.addr2line(fixture.pie, [alpha.address])
        XCTAssertEqual(result.first?.map { Oracle.Frame(function: $0.symbol ?? "??", file: $0.file.map { ($0 as NSString).lastPathComponent }, line: $0.line) },
                       truth.first)
        XCTAssertEqual(result.first?.last?.symbol, "alpha")
    }

    func testDebuginfodSettingsAreReadAsElfutilsReadsThem() {
        XCTAssertNil(DebuginfodClient.fromEnvironment([:]))
        XCTAssertNil(DebuginfodClient.fromEnvironment(["DEBUGINFOD_URLS": "  "]))
        XCTAssertEqual(DebuginfodClient.fromEnvironment(["DEBUGINFOD_URLS": "http://a/ https://b", "HOME": "/h"]),
                       DebuginfodClient(urls: ["http://a", "https://b"], cacheDirectory: "/h/.cache/debuginfod_client", timeout: 90))
        XCTAssertEqual(DebuginfodClient.fromEnvironment(["DEBUGINFOD_URLS": "http://a", "XDG_CACHE_HOME": "/x", "HOME": "/h"])?.cacheDirectory,
                       "/x/debuginfod_client")
        XCTAssertEqual(DebuginfodClient.fromEnvironment(["DEBUGINFOD_URLS": "http://a", "DEBUGINFOD_CACHE_PATH": "/c", "XDG_CACHE_HOME": "/x",
                                                         "DEBUGINFOD_TIMEOUT": "5"]),
                       DebuginfodClient(urls: ["http://a"], cacheDirectory: "/c", timeout: 5))
    }
}
