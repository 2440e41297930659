// ImageTableTests.swift — the images a record names, made at the crash from the loader's link map
// as install saw it (cc_images.c), against the truth: the table the kernel's /proc/self/maps gives
// for the same program (the images-from-maps test hook), and each file's own build-id on disk.
// Libraries loaded after start, one (read from its link-map node) or thirty-odd (past the limit:
// from /proc/self/maps), are in it; one unloaded after start is not.
import CrashRecordFormat
import CrashScenarios
import CrashSymbolication
import Foundation
import TestSupport
import XCTest

final class ImageTableTests: XCTestCase {
    /// An image by its file, however it was named (the loader's name may be a link to the
    /// kernel's: libsqlite3.so.0 → libsqlite3.so.0.8.6, /lib → /usr/lib).
    func file(_ image: CrashImage) -> String {
        image.path.hasPrefix("/") ? URL(fileURLWithPath: image.path).resolvingSymlinksInPath().path : image.path
    }

    struct Facts: Equatable, CustomStringConvertible {
        var size: UInt64, buildID: [UInt8], main: Bool
        var description: String { "size \(size) main \(main) id \(buildID.prefix(4).map { String(format: "%02x", $0) }.joined())…" }
    }

    func facts(_ record: CrashRecord) -> [String: Facts] {
        Dictionary(record.images.map { (file($0), Facts(size: $0.size, buildID: $0.buildID, main: $0.isMainExecutable)) },
                   uniquingKeysWith: { first, _ in first })
    }

    /// Every image that is a file has the build-id its file has.
    func assertBuildIDsAreTheFiles(_ record: CrashRecord, file: StaticString = #filePath, line: UInt = #line) throws {
        for image in record.images where image.path.hasPrefix("/") {
            let onDisk = try ELFFile(path: image.path)
            XCTAssertEqual(image.buildID, onDisk.buildID, "\(image.path)", file: file, line: line)
            XCTAssertFalse(image.buildID.isEmpty, "\(image.path) has a build-id", file: file, line: line)
        }
    }

    func testTheLinkMapsTableIsTheKernelsTable() throws {
        let fromLinks = try XCTUnwrap(try Harness.run("null-dereference").record)
        let fromMaps = try XCTUnwrap(try Harness.run("images-from-maps").record)
        XCTAssertGreaterThan(fromLinks.images.count, 10)
        // The same files, each as long (to the end of its last file-backed page) and with the same
        // build-id; the same main executable; the kernel's vDSO under the kernel's name.
        XCTAssertEqual(facts(fromLinks), facts(fromMaps))
        XCTAssertEqual(fromLinks.images.count, fromMaps.images.count)
        XCTAssertTrue(fromLinks.images.contains { $0.path == "[vdso]" })
        XCTAssertEqual(fromLinks.images.filter(\.isMainExecutable).count, 1)
        // Made the two ways: the link map's in the loader's order (the executable first) and by the
        // loader's names (sonames, links); /proc/self/maps's by address, by the kernel's names.
        XCTAssertTrue(fromLinks.images.first?.isMainExecutable == true)
        XCTAssertTrue(fromLinks.images.contains { $0.path.hasPrefix("/") && file($0) != $0.path }, "no loader name in \(fromLinks.images.map(\.path))")
        XCTAssertEqual(fromMaps.images.map(\.base), fromMaps.images.map(\.base).sorted())
        XCTAssertEqual(fromMaps.images.filter { $0.path.hasPrefix("/") && file($0) != $0.path }.map(\.path), [])
        try assertBuildIDsAreTheFiles(fromLinks)
    }

    func testALibraryLoadedAfterStartIsReadFromItsNode() throws {
        let record = try XCTUnwrap(try Harness.run("dlopen-after-start").record)
        // Appended to the link map, so last in the table (the maps table would put it by address).
        let later = try XCTUnwrap(record.images.last)
        XCTAssertEqual(later.path.split(separator: "/").last.map(String.init), laterLibrary)
        let onDisk = try ELFFile(path: later.path)
        let span = try XCTUnwrap(onDisk.loadSpan)
        let page: UInt64 = UInt64(sysconf(Int32(_SC_PAGESIZE)))
        XCTAssertEqual(later.size, (span.fileEnd + page - 1) / page * page - span.first / page * page, "to its last file-backed page")
        XCTAssertEqual(later.base % page, 0)
        try assertBuildIDsAreTheFiles(record)
    }

    func testThirtyLibrariesLoadedAfterStartAreAllThere() throws {
        let record = try XCTUnwrap(try Harness.run("dlopen-many-after-start").record)
        let curl = try XCTUnwrap(record.images.first { $0.path.contains("libcurl.so.4") }, "\(record.images.map(\.path))")
        // What libcurl needs, as the loader resolves it on this machine: every one in the table.
        let needed = try Tools.output("/usr/bin/ldd", [curl.path]).split(separator: "\n").compactMap { line -> String? in
            let parts = line.split(separator: " ")
            return parts.count >= 3 && parts[1] == "=>" && parts[2].hasPrefix("/") ? String(parts[2]) : nil
        }
        XCTAssertGreaterThan(needed.count, 8, "more than the table reads node by node: \(needed)")
        let files = Set(record.images.map(file))
        for library in needed {
            let real = URL(fileURLWithPath: library).resolvingSymlinksInPath().path
            XCTAssertTrue(files.contains(real), "\(library) (\(real)) is not in \(record.images.map(\.path))")
        }
        try assertBuildIDsAreTheFiles(record)
    }

    func testALibraryUnloadedAfterStartIsNotThere() throws {
        let record = try XCTUnwrap(try Harness.run("dlclose-after-start").record)
        XCTAssertFalse(record.images.contains { $0.path.hasSuffix("/" + laterLibrary) || file($0).contains("libbz2") },
                       "\(record.images.map(\.path))")
        XCTAssertTrue(record.images.contains { $0.path.contains("libc.so") })
        try assertBuildIDsAreTheFiles(record)
    }
}
