// ELFFileTests.swift — ELFFile on real binaries (compared with readelf) and on bad files.
import CrashSymbolication
import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class ELFFileTests: XCTestCase {
    func testBuildIDAndFirstLoadAddressAreWhatReadelfSays() throws {
        let fixture = try Fixture.get()
        for (path, idBytes) in [(fixture.pie, 20), (fixture.nonPIE, 16)] {
            let elf = try ELFFile(path: path)
            let truth = try XCTUnwrap(try Oracle.buildID(path), "readelf finds a build-id in \(path)")
            XCTAssertEqual(hexString(elf.buildID), truth, path)
            XCTAssertEqual(elf.buildID.count, idBytes, path)
            let load = try XCTUnwrap(try Oracle.firstLoadAddress(path))
            XCTAssertEqual(elf.firstLoadAddress, load & ~0xFFF, path)
        }
        // The two kinds differ where it matters: a PIE asks for 0, the other for 0x400000.
        XCTAssertEqual(try ELFFile(path: fixture.pie).firstLoadAddress, 0)
        XCTAssertEqual(try ELFFile(path: fixture.nonPIE).firstLoadAddress, 0x400000)
    }

    func testABinaryLinkedWithoutABuildIDHasAnEmptyOne() throws {
        let fixture = try Fixture.get()
        XCTAssertNil(try Oracle.buildID(fixture.noBuildID))
        let elf = try ELFFile(path: fixture.noBuildID)
        XCTAssertEqual(elf.buildID, [])
        XCTAssertEqual(elf.firstLoadAddress, try XCTUnwrap(try Oracle.firstLoadAddress(fixture.noBuildID)) & ~0xFFF)
    }

    func testAStrippedCopyAndItsSeparateDebugFileKeepTheBuildID() throws {
        let fixture = try Fixture.get()
        let original = try ELFFile(path: fixture.pie)
        for path in [fixture.stripped, fixture.debugFile] {
            let elf = try ELFFile(path: path)
            XCTAssertEqual(hexString(elf.buildID), try XCTUnwrap(try Oracle.buildID(path)), path)
            XCTAssertEqual(elf.buildID, original.buildID, path)
            XCTAssertEqual(elf.firstLoadAddress, original.firstLoadAddress, path)
        }
        // The strip really happened (else this test proves nothing about stripped files).
        XCTAssertNil(try Oracle.functions(fixture.stripped)["alpha"])
    }

    func testTheTestProcessItselfMatchesReadelf() throws {
        // A large real binary: the SwiftPM test bundle running this test.
        let path = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let elf = try ELFFile(path: path)
        XCTAssertEqual(hexString(elf.buildID), try XCTUnwrap(try Oracle.buildID(path)))
        XCTAssertEqual(elf.firstLoadAddress, try XCTUnwrap(try Oracle.firstLoadAddress(path)) & ~0xFFF)
    }

    // MARK: bad input: an error with the path and a reason, never a crash

    func assertError(_ path: String, reason: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try ELFFile(path: path), file: file, line: line) { error in
            let elfError = error as? ELFFile.Error
            XCTAssertEqual(elfError?.path, path, file: file, line: line)
            XCTAssertEqual(elfError?.reason, reason, file: file, line: line)
            XCTAssertEqual("\(error)", "\(path): \(reason)", file: file, line: line)
        }
    }

    func testAMissingFileCannotBeOpened() throws {
        assertError(try Scratch.directory("missing") + "/nothing-here", reason: "cannot open")
    }

    func testADirectoryIsNotAnELFFile() throws {
        assertError(try Scratch.directory("directory"), reason: "not an ELF file")
    }

    func testATextFileAndAnEmptyFileAreNotELFFiles() throws {
        let directory = try Scratch.directory("not-elf")
        try programSource.write(toFile: directory + "/prog.c", atomically: true, encoding: .utf8)
        assertError(directory + "/prog.c", reason: "not an ELF file")
        XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/empty", contents: Data()))
        assertError(directory + "/empty", reason: "not an ELF file")
        // "\u{7F}ELF" and nothing else.
        XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/magic", contents: Data([0x7F, 0x45, 0x4C, 0x46])))
        assertError(directory + "/magic", reason: "not an ELF file")
    }

    func testA32BitOrBigEndianHeaderIsRefused() throws {
        let fixture = try Fixture.get()
        let directory = try Scratch.directory("class")
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: fixture.pie)))
        bytes[4] = 1 // ELFCLASS32
        XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/elf32", contents: Data(bytes)))
        assertError(directory + "/elf32", reason: "not ELF64 little-endian")
        bytes[4] = 2
        bytes[5] = 2 // ELFDATA2MSB
        XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/msb", contents: Data(bytes)))
        assertError(directory + "/msb", reason: "not ELF64 little-endian")
    }

    func testAFileCutInsideItsProgramHeadersSaysSo() throws {
        let fixture = try Fixture.get()
        let directory = try Scratch.directory("truncated")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: fixture.pie))
        // The ELF header is whole (64 bytes), the program header table (at 64) is not.
        XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/cut", contents: bytes.prefix(100)))
        assertError(directory + "/cut", reason: "truncated program headers")
    }

    /// Every prefix of a real binary up to past its notes: an error, or the true facts — never a
    /// crash, never a wrong build-id.
    func testEveryTruncationOfARealBinaryFailsCleanlyOrReadsTheTruth() throws {
        let fixture = try Fixture.get()
        let directory = try Scratch.directory("prefixes")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: fixture.pie))
        let truth = try ELFFile(path: fixture.pie)
        let path = directory + "/prefix"
        var errors = 0, whole = 0
        for length in 0...min(bytes.count, 2048) {
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: bytes.prefix(length)))
            do {
                let elf = try ELFFile(path: path)
                XCTAssertTrue(elf.buildID.isEmpty || elf.buildID == truth.buildID, "prefix \(length): \(hexString(elf.buildID))")
                XCTAssertEqual(elf.firstLoadAddress, truth.firstLoadAddress, "prefix \(length)")
                if elf.buildID == truth.buildID { whole += 1 }
            } catch let error as ELFFile.Error {
                XCTAssertEqual(error.path, path)
                XCTAssertFalse(error.reason.isEmpty)
                errors += 1
            }
        }
        XCTAssertGreaterThan(errors, 0)
        XCTAssertGreaterThan(whole, 0, "a prefix that holds the notes reads the build-id")
    }
}
