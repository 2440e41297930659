// SQLiteLoadingTests.swift — when a program with the analytics loads SQLite: never at exec (it is
// dlopen'ed, not linked), not in a run that tracks nothing, and in a run that opens the store, as
// the loader itself tells it (LD_DEBUG=files) in real `crash-harness emit` processes. (That a
// program without the analytics needs no SQLite at all: CrashReporterTests' WhatSentryOnlyLinksTests.)
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class SQLiteLoadingTests: XCTestCase {
    /// The libraries the loader opened in one run of `crash-harness emit` (LD_DEBUG=files), and how it ended.
    func emitOpening(_ arguments: [String], in directory: String, name: String) throws -> (ending: ChildProcess.Ending, opened: [Substring]) {
        var environment = Harness.environment
        environment["LD_DEBUG"] = "files"
        let child = try ChildProcess.run(BuiltProducts.harness, ["emit"] + arguments, environment: environment,
                                         stdout: "\(directory)/\(name).stdout", stderr: "\(directory)/\(name).stderr", timeout: 60)
        let log = try String(contentsOfFile: "\(directory)/\(name).stderr", encoding: .utf8)
        let opened = log.split(separator: "\n").filter { $0.contains("file=") }
        XCTAssertTrue(opened.contains { $0.contains("libswiftCore") }, "LD_DEBUG=files showed nothing: \(log.prefix(500))")
        return (child.ending, opened)
    }

    /// A run of a program with the analytics that tracks nothing (its launch and end go to the
    /// journal beside the store) never loads SQLite; a run that opens the store loads it then, by
    /// dlopen, and works.
    func testAQuietRunOfTheAnalyticsNeverLoadsSQLiteAndARunThatStoresLoadsIt() throws {
        let directory = try Scratch.directory("quiet-sqlite")
        let store = directory + "/s.sqlite"
        // The first run makes the store (and the copy of its state the quiet ones start from).
        let first = try emitOpening(["--count", "0", "--store", store], in: directory, name: "first")
        XCTAssertEqual(first.ending, .exited(0))
        XCTAssertTrue(first.opened.contains { $0.contains("libsqlite3") }, "the store was made: SQLite loaded")
        let quiet = try emitOpening(["--count", "0", "--store", store], in: directory, name: "quiet")
        XCTAssertEqual(quiet.ending, .exited(0))
        XCTAssertEqual(quiet.opened.filter { $0.contains("libsqlite3") }, [])
        // A login is stored by the tracker's writer, in the store itself: this run opens it.
        let storing = try emitOpening(["--count", "2", "--store", store, "--login", "user-1"], in: directory, name: "storing")
        XCTAssertEqual(storing.ending, .exited(0))
        XCTAssertTrue(storing.opened.contains { $0.contains("libsqlite3") }, "\(storing.opened)")
        // All three runs, in order: the quiet one's from the journal, folded in by the third.
        let events = try storedObjects(store).map { $0.event ?? "?" }
        XCTAssertEqual(Array(events.prefix(5)), ["$AppStart", "$AppEnd", "$AppStart", "$AppEnd", "$AppStart"], "\(events)")
        XCTAssertEqual(events.filter { $0 == "HarnessEvent" }.count, 2, "\(events)")
        XCTAssertEqual(events.last, "$AppEnd")
    }
}
