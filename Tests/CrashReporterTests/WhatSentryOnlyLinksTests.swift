// WhatSentryOnlyLinksTests.swift — the split's promise, checked on the built binaries: a program
// that links CrashReporter and nothing else (`sentry-only`) and the crash-uploader need no
// libsqlite3 and hold none of the analytics' store (SensorsTracking) — by their ELF dependencies (readelf -d), their closure (ldd) and
// their symbols (readelf -Ws) — while crash-harness, which links SensorsAnalytics, shows both
// (so the same checks can fail); and sentry-only starts, reports, shuts down and exits 0 without
// the loader ever opening libsqlite3. Neither needs full Foundation and ICU either, where
// crash-harness does; and neither needs FoundationEssentials at all (no module the reporter links
// imports it: it would cost every program ≈ 2 MiB and about a millisecond at exec).
// The inspector, which reads records and never the analytics store (that is sensors-store's),
// holds none of the store and needs no SQLite either.
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class WhatSentryOnlyLinksTests: XCTestCase {
    var sentryOnly: String { BuiltProducts.directory + "/sentry-only" }
    var uploader: String { BuiltProducts.directory + "/crash-uploader" }

    /// What one binary links, as binutils and the loader say.
    struct Linked {
        /// readelf -d's NEEDED entries ("Shared library: [libX.so.N]").
        var needed: [String]
        /// ldd's lines: every library the loader would map.
        var closure: [String]
        /// The names in readelf -Ws --wide's tables (.dynsym and .symtab), version suffixes left on.
        var symbols: [String]

        /// Libraries of `needed` and `closure` that are SQLite.
        var sqliteLibraries: [String] { (needed + closure).filter { $0.contains("libsqlite3") } }
        /// Libraries of `needed` and `closure` that are full Foundation or ICU (not FoundationEssentials).
        var foundationLibraries: [String] {
            (needed + closure).filter { $0.contains("libFoundation.so") || $0.contains("FoundationInternationalization") || $0.contains("ICU") }
        }
        /// Libraries of `needed` and `closure` that are any part of Foundation, FoundationEssentials included.
        var anyFoundationLibraries: [String] { (needed + closure).filter { $0.contains("libFoundation") || $0.contains("lib_Foundation") } }
        /// Symbols of the analytics' store module (Swift mangles module SensorsTracking as
        /// `15SensorsTracking` after `$s`).
        var storeSymbols: [String] { symbols.filter { $0.contains("$s15SensorsTracking") } }
        /// SQLite's C API, defined here or wanted from a library, and the store's loader of it (`csqlite_`).
        var sqliteSymbols: [String] { symbols.filter { $0.hasPrefix("sqlite3_") || $0.hasPrefix("csqlite_") } }
    }

    func linked(_ program: String) throws -> Linked {
        let readelf = try XCTUnwrap(Tools.find("readelf"), "binutils' readelf is needed")
        let ldd = try XCTUnwrap(Tools.find("ldd"), "ldd is needed")
        let needed = try Tools.output(readelf, ["-d", program]).split(separator: "\n").filter { $0.contains("(NEEDED)") }.map(String.init)
        let closure = try Tools.output(ldd, [program]).split(separator: "\n").map(String.init)
        // "Num: Value Size Type Bind Vis Ndx Name": the name is the eighth field (--wide: never cut).
        let symbols = try Tools.output(readelf, ["-Ws", "--wide", program]).split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            return fields.count >= 8 && fields[0].hasSuffix(":") ? String(fields[7]) : nil
        }
        return Linked(needed: needed, closure: closure, symbols: symbols)
    }

    /// No libsqlite3 needed, no symbol of SQLite or of the store; and `module`'s own symbols are there (the
    /// tables were read, and the program is the one meant).
    func assertNoSQLiteNorStore(_ program: String, holding module: String, foundationAllowed: Bool = false,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let linked = try linked(program)
        XCTAssertTrue(linked.needed.contains { $0.contains("libswiftCore") }, "readelf -d listed no libswiftCore: \(linked.needed)",
                      file: file, line: line)
        XCTAssertTrue(linked.symbols.contains { $0.hasPrefix("$s\(module.count)\(module)") }, "no symbol of \(module) in \(program)",
                      file: file, line: line)
        XCTAssertEqual(linked.sqliteLibraries, [], "\(program) needs SQLite", file: file, line: line)
        XCTAssertEqual(Array(linked.storeSymbols.prefix(5)), [], "\(program) holds the store (\(linked.storeSymbols.count) symbols)",
                       file: file, line: line)
        XCTAssertEqual(Array(linked.sqliteSymbols.prefix(5)), [], "\(program) holds or wants SQLite's API", file: file, line: line)
        if !foundationAllowed {
            XCTAssertEqual(linked.foundationLibraries, [], "\(program) needs full Foundation or ICU", file: file, line: line)
        }
    }

    func testTheSentryOnlyProgramNeedsNoSQLiteAndHoldsNoStore() throws {
        try assertNoSQLiteNorStore(sentryOnly, holding: "CrashReporter")
    }

    /// A program that links CrashReporter alone, and the crash-uploader, need no part of
    /// Foundation: not even FoundationEssentials.
    func testTheSentryOnlyProgramAndTheUploaderNeedNoFoundationEssentials() throws {
        XCTAssertEqual(try linked(sentryOnly).anyFoundationLibraries, [], "sentry-only needs Foundation")
        XCTAssertEqual(try linked(uploader).anyFoundationLibraries, [], "crash-uploader needs Foundation")
        // The same check sees Foundation where it is (crash-harness links it): not a blind spot.
        XCTAssertFalse(try self.linked(BuiltProducts.harness).anyFoundationLibraries.isEmpty)
    }

    func testTheCrashUploaderNeedsNoSQLiteAndHoldsNoStore() throws {
        try assertNoSQLiteNorStore(uploader, holding: "CrashReporter")
    }

    func testTheInspectorNeedsNoSQLiteAndHoldsNoStore() throws {
        try assertNoSQLiteNorStore(BuiltProducts.inspect, holding: "CrashInspection", foundationAllowed: true)
    }

    /// The contrary on a program that links the analytics: the same checks find the store and its
    /// loader of SQLite there, so their silence on the two above is not a blind spot. SQLite itself
    /// is not linked: it is loaded when the store is first opened (SensorsAnalyticsTests' SQLiteLoadingTests).
    func testTheHarnessWhichLinksTheAnalyticsHoldsTheStoreAndItsLoaderOfSQLite() throws {
        let linked = try linked(BuiltProducts.harness)
        XCTAssertEqual(linked.sqliteLibraries, [], "libsqlite3 is loaded when the store opens, not at exec")
        XCTAssertFalse(linked.storeSymbols.isEmpty, "no $s15SensorsTracking symbol in crash-harness")
        XCTAssertTrue(linked.sqliteSymbols.contains("csqlite_open_v2"), "no csqlite_open_v2 in crash-harness")
        XCTAssertFalse(linked.foundationLibraries.isEmpty, "crash-harness (Foundation) shows no libFoundation: \(linked.needed)")
    }

    func testTheSentryOnlyProgramStartsReportsAndExitsWithoutLoadingSQLite() throws {
        let directory = try Scratch.directory("sentry-only")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var environment = Harness.environment
        environment["LD_DEBUG"] = "files"
        // Port 9 (discard) on loopback: closed; with nothing pending nothing is sent there anyway.
        let child = try ChildProcess.run(sentryOnly, [directory + "/records", "http://k@127.0.0.1:9/1"], environment: environment,
                                         stdout: directory + "/stdout", stderr: directory + "/stderr", timeout: 60)
        let stdout = try String(contentsOfFile: directory + "/stdout", encoding: .utf8)
        let loaderLog = try String(contentsOfFile: directory + "/stderr", encoding: .utf8)
        XCTAssertEqual(child.ending, .exited(0), "stdout: \(stdout)")
        XCTAssertEqual(stdout, "started: installed sentry: on delivered: 0 errors: 0\n")
        // The loader's account of every object it opened, at exec and by dlopen.
        let opened = loaderLog.split(separator: "\n").filter { $0.contains("file=") }
        XCTAssertTrue(opened.contains { $0.contains("libswiftCore") }, "LD_DEBUG=files showed nothing: \(loaderLog.prefix(500))")
        XCTAssertEqual(opened.filter { $0.contains("libsqlite3") }, [])
        XCTAssertEqual(opened.filter { $0.contains("libFoundation") || $0.contains("lib_Foundation") || $0.contains("ICU") }, [])
    }
}
