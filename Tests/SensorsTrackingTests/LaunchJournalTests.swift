// LaunchJournalTests.swift — a quiet run's launch and end kept beside the store (the journal and
// the state copy), and folded in by the next open: in order, once, whatever was cut short.
@testable import SensorsTracking
import SensorsEvents
import Foundation
import TestSupport
import XCTest
import HostFacts

final class LaunchJournalTests: XCTestCase {
    func event(_ name: String, json: String? = nil) -> NewEvent { Self.event(name, json: json) }

    static func event(_ name: String, json: String? = nil) -> NewEvent {
        NewEvent(trackID: EventDraft.newTrackID(), event: name, time: 7, priority: .ordinary, json: json ?? "{\"event\":\"\(name)\"}")
    }

    func marker(_ runID: String, login: String? = nil) -> RunMarker {
        RunMarker(runID: runID, process: ProcessIdentity(pid: 424_242, bootID: "boot", startTicks: 17), startWallMilliseconds: 1,
                  startMonotonicNanoseconds: 2, refreshWallMilliseconds: 3, refreshMonotonicNanoseconds: 4, appName: "app \"q\"",
                  appVersion: "1.0", identity: EventIdentity(anonymousID: "anon", loginID: login),
                  oomKills: OOMKillReading(path: "/sys/fs/cgroup/x/memory.events", inode: UInt64.max - 1, kills: 3))
    }

    func testAnEntryReadsBackAsItWasWrittenWhateverItsTextHolds() throws {
        let awkward = "{\"text\":\"line\\nbreak \\\"quoted\\\" \\\\ back, é, 😀, \\u0001\"}"
        let entry = JournalEntry(events: [event("$AppStart", json: awkward), event("two")], registered: marker("run-1", login: "who\nme"),
                                 endingRun: "run-0")
        let line = entry.line
        XCTAssertTrue(line.hasSuffix("}\n"))
        XCTAssertEqual(line.filter { $0 == "\n" }.count, 1, "one entry, one line")
        XCTAssertEqual(JournalEntry(line: Substring(line.dropLast())), entry)
        XCTAssertEqual(JournalEntry(events: [event("x")]).line.contains("register"), false)
        // Cut anywhere, it is not an entry.
        for cut in stride(from: 1, to: line.utf8.count - 1, by: 37) {
            XCTAssertNil(JournalEntry(line: Substring(String(decoding: Array(line.utf8.prefix(cut)), as: UTF8.self))))
        }
    }

    /// The store's events, oldest first, as their names.
    func names(_ path: String) throws -> [String] {
        let store = try TrackingStore(path: path)
        defer { store.close() }
        return try store.pendingBatch(limit: 10_000).map(\.event)
    }

    func testAnOpenFoldsTheJournalInAfterWhatTheStoreHeldInOrderAndDeletesIt() throws {
        let path = try Scratch.directory("journal-fold") + "/s.sqlite"
        let first = try TrackingStore(path: path)
        try first.append([event("stored")])
        first.close()
        let closed = TrackingStore(deferringOpen: path)
        try closed.appendToJournal(JournalEntry(events: [event("$AppStart")], registered: marker("run-1")))
        try closed.appendToJournal(JournalEntry(events: [event("$AppEnd")], endingRun: "run-1"))
        try closed.appendToJournal(JournalEntry(events: [event("$AppStart")], registered: marker("run-2")))
        XCTAssertFalse(closed.isOpen, "appending to the journal opens no database")
        XCTAssertEqual(TrackingStore.journalEnds(path, runs: ["run-1", "run-2", "run-3"]), ["run-1"])
        let inspected = try TrackingStore.inspect(path: path).0
        XCTAssertEqual(inspected.pending, 4, "the inspector counts the journal's events")
        XCTAssertEqual(inspected.journalEvents, 3)
        XCTAssertEqual(inspected.runMarkers, 1, "run-2 is live, run-1 ended")
        XCTAssertTrue(FileManager.default.fileExists(atPath: TrackingStore.journalPath(path)), "inspecting folds nothing")

        let opened = try TrackingStore(path: path)
        XCTAssertEqual(try opened.pendingBatch(limit: 100).map(\.event), ["stored", "$AppStart", "$AppEnd", "$AppStart"])
        let markers = try opened.runMarkers()
        XCTAssertEqual(markers, [marker("run-2")], "the live run's marker, as the journal had it")
        opened.close()
        XCTAssertFalse(FileManager.default.fileExists(atPath: TrackingStore.journalPath(path)))
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-pending.folding"))
        XCTAssertEqual(try names(path), ["stored", "$AppStart", "$AppEnd", "$AppStart"], "folded once")
    }

    /// A fold that committed and died before deleting its file leaves the file behind: the next
    /// open folds it again and adds nothing twice (its claim), then deletes it.
    func testAFoldLeftBehindAfterItsCommitAddsNothingTwice() throws {
        let path = try Scratch.directory("journal-again") + "/s.sqlite"
        let closed = TrackingStore(deferringOpen: path)
        try closed.appendToJournal(JournalEntry(events: [event("a")]))
        try closed.appendToJournal(JournalEntry(events: [event("b")]))
        let saved = try Data(contentsOf: URL(fileURLWithPath: TrackingStore.journalPath(path)))
        XCTAssertEqual(try names(path), ["a", "b"])
        try saved.write(to: URL(fileURLWithPath: path + "-pending.folding"))
        // And a newer journal beside it, which is folded after it.
        try closed.appendToJournal(JournalEntry(events: [event("c")]))
        XCTAssertEqual(try names(path), ["a", "b", "c"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-pending.folding"))
    }

    /// A process killed in the middle of its append leaves a line without its end: that line is
    /// skipped and counted, and every entry before and after it is kept (the next append starts
    /// on a line of its own).
    func testALineCutShortIsCountedAndNothingElseIsLost() throws {
        let path = try Scratch.directory("journal-cut") + "/s.sqlite"
        let closed = TrackingStore(deferringOpen: path)
        try closed.appendToJournal(JournalEntry(events: [event("before")]))
        let cut = JournalEntry(events: [event("cut")]).line.utf8.prefix(40)
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: TrackingStore.journalPath(path)))
        handle.seekToEndOfFile()
        handle.write(Data(cut))
        handle.closeFile()
        try closed.appendToJournal(JournalEntry(events: [event("after")]))
        let store = try TrackingStore(path: path)
        XCTAssertEqual(try store.pendingBatch(limit: 100).map(\.event), ["before", "after"])
        XCTAssertEqual(try store.summary().counters["dropped_journal_unreadable"], 1)
        store.close()
    }

    /// An appender that opened the journal just before a fold took it and read it: its entry is
    /// not written into the file the fold has read (and deleted), but into the new journal.
    func testAnAppendThatOpenedTheJournalBeforeAFoldTookItLandsInTheNextJournal() throws {
        let path = try Scratch.directory("journal-taken") + "/s.sqlite"
        let closed = TrackingStore(deferringOpen: path)
        try closed.appendToJournal(JournalEntry(events: [event("first")]))
        var folded: [String]?
        try closed.appendToJournal(JournalEntry(events: [event("second")]), afterOpening: {
            // Once: the append's second attempt opens the new journal undisturbed.
            if folded == nil { folded = (try? self.names(path)) ?? ["the store did not open"] }
        })
        XCTAssertEqual(folded, ["first"])
        XCTAssertEqual(TrackingStore.readJournal(path).entries.flatMap { $0.events.map(\.event) }, ["second"])
        XCTAssertEqual(try names(path), ["first", "second"])
    }

    /// Appends racing folds: processes' threads appending while others open the store (each open
    /// folds) lose no entry and store none twice — the appender that opened the journal before a
    /// fold took it either lands in what the fold reads or starts again on the new journal.
    func testAppendsDuringFoldsLoseNothingAndDuplicateNothing() throws {
        let path = try Scratch.directory("journal-race") + "/s.sqlite"
        try TrackingStore(path: path).close()
        let appenders = 4, each = 150
        let group = DispatchGroup()
        let failures = Collected<String>()
        let stop = Collected<Bool>()
        for writer in 0..<appenders {
            group.enter()
            Thread {
                let store = TrackingStore(deferringOpen: path)
                for index in 0..<each {
                    do { try store.appendToJournal(JournalEntry(events: [LaunchJournalTests.event("w\(writer)-\(index)")])) } catch {
                        failures.append("\(error)")
                    }
                }
                group.leave()
            }.start()
        }
        let folder = Thread {
            while stop.all.isEmpty {
                if let store = try? TrackingStore(path: path) { store.close() }
            }
        }
        folder.start()
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
        stop.append(true)
        Thread.sleep(forTimeInterval: 0.05)
        XCTAssertEqual(failures.all, [])
        let stored = try names(path)
        XCTAssertEqual(stored.count, appenders * each, "every append stored once")
        XCTAssertEqual(Set(stored).count, appenders * each)
        for writer in 0..<appenders {
            XCTAssertEqual(stored.filter { $0.hasPrefix("w\(writer)-") }, (0..<each).map { "w\(writer)-\($0)" }, "each writer's order kept")
        }
    }

    /// What quiet runs never write at the journal's paths — a symbolic link (to a file elsewhere),
    /// a FIFO, a directory, a file far too large — is neither followed, nor blocked on, nor read
    /// into memory: an append fails at once (the tracker then writes to the store), and the next
    /// open moves it aside (`.refused-<ms>`, kept) and goes on folding.
    func testWhatQuietRunsNeverWriteAtTheJournalsPathsIsRefusedAndKept() throws {
        let directory = try Scratch.directory("journal-hostile")
        let path = directory + "/s.sqlite"
        let elsewhere = directory + "/elsewhere"
        try "keep me\n".write(toFile: elsewhere, atomically: true, encoding: .utf8)
        let closed = TrackingStore(deferringOpen: path)
        for make in [{ symlink(elsewhere, TrackingStore.journalPath(path)) }, { mkfifo(TrackingStore.journalPath(path), 0o600) },
                     { mkdir(TrackingStore.journalPath(path), 0o700) }] {
            XCTAssertEqual(make(), 0)
            XCTAssertThrowsError(try closed.appendToJournal(JournalEntry(events: [event("x")])))
            XCTAssertEqual(try names(path), [], "nothing folded from it")
            XCTAssertFalse(FileManager.default.fileExists(atPath: TrackingStore.journalPath(path)), "moved aside")
        }
        XCTAssertEqual(try String(contentsOfFile: elsewhere, encoding: .utf8), "keep me\n", "the link's target untouched")
        // A file far larger than quiet runs write, at the folding path: moved aside unread, and the
        // journal beside it folded.
        XCTAssertTrue(FileManager.default.createFile(atPath: path + "-pending.folding", contents: nil))
        let huge = try XCTUnwrap(FileHandle(forWritingAtPath: path + "-pending.folding"))
        huge.truncateFile(atOffset: UInt64(TrackingStore.journalReadLimit) + 1)
        huge.closeFile()
        try closed.appendToJournal(JournalEntry(events: [event("after")]))
        XCTAssertEqual(try names(path), ["after"])
        let refused = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".refused-") }
        XCTAssertEqual(refused.count, 4, "\(refused)")
    }

    func testTheStateCopyServesOnlyTheStoreFileItWasMadeFromAndFollowsItsChanges() throws {
        let path = try Scratch.directory("state-copy") + "/s.sqlite"
        let store = try TrackingStore(path: path)
        let state = try store.loadState()
        XCTAssertNil(TrackingStore(deferringOpen: path).stateFromCopy(), "no copy yet")
        store.refreshStateCopy()
        var copy = try XCTUnwrap(TrackingStore(deferringOpen: path).stateFromCopy())
        XCTAssertEqual(copy.anonymousID, state.anonymousID)
        XCTAssertNil(copy.loginID)
        XCTAssertFalse(copy.isFirstStart)
        // A change of what it holds rewrites it, whatever the text.
        try store.setLoginID("line\nbreak \\ back")
        try store.setSuperProperties(["plan": .string("pro\n"), "n": .int(3)])
        copy = try XCTUnwrap(TrackingStore(deferringOpen: path).stateFromCopy())
        XCTAssertEqual(copy.loginID, "line\nbreak \\ back")
        XCTAssertEqual(copy.superProperties, ["plan": .string("pro\n"), "n": .int(3)])
        store.close()
        // Another store file at the path (deleted and made again): the copy is not its.
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
        let fresh = try TrackingStore(path: path)
        XCTAssertNil(TrackingStore(deferringOpen: path).stateFromCopy())
        XCTAssertNotEqual(try fresh.loadState().anonymousID, state.anonymousID)
        fresh.close()
        // A copy that is not whole is not used.
        let copyPath = TrackingStore.stateCopyPath(path)
        try "sensors-store-state 1\nstore=1:2\nanonymous_id=x".write(toFile: copyPath, atomically: true, encoding: .utf8)
        XCTAssertNil(TrackingStore(deferringOpen: path).stateFromCopy())
    }
}
