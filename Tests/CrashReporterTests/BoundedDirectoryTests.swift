// BoundedDirectoryTests.swift — a crash loop cannot fill the disk, and no crash is lost keeping the
// record directory small: real crash loops of child processes (capture alone, and the reporter at
// every start with the network down), every crash counted by crash-inspect, Sentry and the app's
// other sink (crash-harness's recording sink, told what each record stands for; the analytics says
// it as AppCrashed's `$crash_count` and `$crash_loop`: SensorsAnalyticsTests' EventsSinkUnitTests);
// folding that never hides a crash from a sink that had not reported it; records that are
// being written or sent left alone; hostile entries; the tally and ledger files read as untrusted.
@testable import CrashReporter
import CrashRecordFormat
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
@testable import CrashReporterSentry

final class BoundedDirectoryTests: XCTestCase {
    let quiet = ["SWIFT_BACKTRACE": "enable=no"]

    func recordNames(_ directory: String) throws -> [String] {
        try RecordFileName.names(in: directory)
    }

    /// Bytes of every file in `directory`.
    func bytes(_ directory: String) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: directory).reduce(0) {
            $0 + ((try? FileManager.default.attributesOfItem(atPath: directory + "/" + $1)[.size] as? Int) ?? 0)
        }
    }

    func crash(into directory: String) throws {
        let child = try ChildProcess.run(BuiltProducts.harness, ["run", "null-dereference", "--dir", directory], environment: quiet, timeout: 60)
        XCTAssertEqual(child.ending, .signaled(SIGSEGV))
    }

    func deliver(_ arguments: [String], crash: Bool = false) throws -> [String: Any] {
        let output = try Scratch.directory("bounded-deliver-output") + "/stdout"
        let child = try ChildProcess.run(BuiltProducts.harness, ["deliver"] + arguments + (crash ? ["--crash"] : []),
                                         environment: quiet, stdout: output, timeout: 120)
        XCTAssertEqual(child.ending, crash ? .signaled(SIGSEGV) : .exited(0))
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: output))) as? [String: Any])
    }

    /// The events of each envelope a loopback Sentry received.
    func sentryEvents(_ server: TestHTTPServer) throws -> [[String: Any]] {
        try server.allRequests.filter { $0.path.hasSuffix("/envelope/") }.map { request in
            let lines = request.bodyBytes.split(separator: 0x0A, omittingEmptySubsequences: false)
            return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lines[2])) as? [String: Any])
        }
    }

    /// The records the harness's recording sink was given, in order (its file, `deliver --recording-sink`).
    func recorded(_ file: String) throws -> [[String: Any]] { try Harness.recorded(file).records }

    /// The issue's crash loop: one program crashing 300 times into one directory, capture alone
    /// (no reporter runs meanwhile). The directory never holds more than 64 records or 32 MiB;
    /// the first and the latest records are kept; `crash-inspect groups` counts 300; the next
    /// launch's Sentry events, and what it tells its other sink, say how many crashes each stands
    /// for, 300 in all, and Relay's normaliser accepts an event that says so.
    func testACrashLoopOf300CrashesStaysBoundedAndCountsEveryCrash() throws {
        let directory = try Scratch.directory("crash-loop-300")
        let records = directory + "/records"
        var first: String?
        var most = 0
        for turn in 0..<300 {
            try crash(into: records)
            let names = try recordNames(records)
            if turn == 0 { first = names.first }
            most = max(most, names.count)
            XCTAssertLessThanOrEqual(names.count, 64, "after crash \(turn + 1)")
            XCTAssertLessThanOrEqual(try bytes(records), 32 << 20)
        }
        XCTAssertEqual(most, 64, "the bound was reached (else nothing was tested)")
        let names = try recordNames(records)
        XCTAssertEqual(names.first, first, "the first crash's record is kept")

        let groups = try XCTUnwrap(try JSONSerialization.jsonObject(
            with: Data(try Tools.output(BuiltProducts.inspect, ["groups", "--dir", records, "--json"]).utf8)) as? [[String: Any]])
        XCTAssertEqual(groups.compactMap { $0["count"] as? Int }.reduce(0, +), 300, "\(groups.map { ($0["count"], $0["records"]) })")
        XCTAssertEqual(groups.count, 1)
        XCTAssertEqual(groups.first?["records"] as? Int, names.count)
        let listed = try XCTUnwrap(try JSONSerialization.jsonObject(
            with: Data(try Tools.output(BuiltProducts.inspect, ["list", "--dir", records, "--json"]).utf8)) as? [[String: Any]])
        XCTAssertEqual(listed.compactMap { $0["crashes"] as? Int }.reduce(0, +), 300, "list says what each record stands for")

        let server = try TestHTTPServer()
        _ = try deliver(["--records", records, "--recording-sink", directory + "/recorded", "--sentry-dsn", "http://key@127.0.0.1:\(server.port)/42"])
        let events = try sentryEvents(server)
        XCTAssertEqual(events.count, names.count)
        let counts = events.map { Int((($0["extra"] as? [String: String])?["crash_count"]) ?? "1") ?? -1 }
        XCTAssertEqual(counts.reduce(0, +), 300, "\(counts)")
        XCTAssertTrue(counts.contains { $0 > 1 }, "the latest record stands for the folded crashes")
        let crashed = try recorded(directory + "/recorded")
        XCTAssertEqual(crashed.compactMap { $0["record"] as? String }.sorted(), names.sorted(), "each record once")
        XCTAssertEqual(crashed.compactMap { $0["crashes"] as? Int }.reduce(0, +), 300)
        // Crashes right after start, one after another: a crash loop, whose length counts the
        // folded crashes the loop went through.
        XCTAssertEqual(crashed.compactMap { $0["crashLoopLength"] as? Int }.max(), 300)
        XCTAssertTrue(crashed.contains { $0["crashLoop"] as? Bool == true })
        XCTAssertTrue(events.contains { ($0["tags"] as? [String: String])?["crash_loop"] == "yes" })
        XCTAssertEqual(try recordNames(records), [], "every record delivered")
        // Each folded crash is reported to Sentry as discarded (`queue_overflow`, client reports),
        // once: in the envelopes that followed, or kept for the next one.
        var overflow = SentryDiscards.load(records).counts[SentryDiscards.Key(reason: .queueOverflow, category: .error)] ?? 0
        for request in server.allRequests {
            let lines = request.bodyBytes.split(separator: 0x0A, omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() where index + 1 < lines.count && String(decoding: line, as: UTF8.self).contains("\"type\":\"client_report\"") {
                let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(lines[index + 1])) as? [String: Any])
                for discarded in report["discarded_events"] as? [[String: Any]] ?? [] where discarded["reason"] as? String == "queue_overflow" {
                    XCTAssertEqual(discarded["category"] as? String, "error")
                    overflow += discarded["quantity"] as? Int ?? 0
                }
            }
        }
        XCTAssertEqual(overflow, 300 - events.count, "the folded crashes, each reported as discarded once")

        // Sentry's own parser and Relay's normaliser accept the event that stands for many.
        let request = try XCTUnwrap(server.allRequests.first { $0.body.contains("\"crash_count\"") })
        let file = directory + "/envelope"
        try Data(request.bodyBytes).write(to: URL(fileURLWithPath: file))
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try Oracles.run("sentry_check.py", [file]).utf8)) as? [String: Any])
        XCTAssertEqual((summary["errors"] as? [Any])?.count, 0, "\(summary)")
    }

    /// A crash loop with the reporter at every start and Sentry unreachable (the network is
    /// down): each launch gives the app's other sink the previous crash, saying where it stands in
    /// the loop; the records stay for Sentry, under the bound, folded; when Sentry is back, its
    /// events count every crash once, and the other sink still got each crash once (folding never
    /// counted a crash that sink had again).
    func testACrashLoopWithTheNetworkDownIsReportedAsOneAndCountedOnce() throws {
        let directory = try Scratch.directory("crash-loop-reporter")
        let records = directory + "/records", other = directory + "/recorded"
        let down = "http://key@127.0.0.1:\(try TestHTTPServer.unusedPort())/42"
        let turns = 70
        for turn in 0..<turns {
            _ = try deliver(["--records", records, "--recording-sink", other, "--sentry-dsn", down], crash: true)
            XCTAssertLessThanOrEqual(try recordNames(records).count, 64, "after crash \(turn + 1)")
        }
        let taken = try recorded(other)
        XCTAssertEqual(taken.count, turns - 1, "each launch gave it the crash before it")
        XCTAssertEqual(taken.compactMap { $0["crashLoopLength"] as? Int }, Array(1..<turns))
        XCTAssertEqual(taken.map { $0["crashLoop"] as? Bool }, (1..<turns).map { $0 >= 3 })
        XCTAssertTrue(taken.allSatisfy { $0["crashes"] as? Int == 1 })
        let kept = try recordNames(records)
        XCTAssertLessThan(kept.count, turns, "records were folded")

        let server = try TestHTTPServer()
        _ = try deliver(["--records", records, "--recording-sink", other, "--sentry-dsn", "http://key@127.0.0.1:\(server.port)/42"])
        let events = try sentryEvents(server)
        XCTAssertEqual(events.count, kept.count)
        let counts = events.map { Int((($0["extra"] as? [String: String])?["crash_count"]) ?? "1") ?? -1 }
        XCTAssertEqual(counts.reduce(0, +), turns, "\(counts)")
        // Each event says where its crash stood in the loop, judged when its launch first read
        // it; from the third crash on it is a crash loop.
        let lengths = events.map { Int((($0["extra"] as? [String: String])?["crash_loop_length"]) ?? "0") ?? -1 }
        XCTAssertEqual(lengths.min(), 1)
        XCTAssertEqual(lengths.max(), turns)
        for (event, length) in zip(events, lengths) {
            XCTAssertEqual((event["tags"] as? [String: String])?["crash_loop"] == "yes", length >= 3, "\(length)")
        }
        let all = try recorded(other)
        XCTAssertEqual(all.count, turns)
        XCTAssertEqual(all.compactMap { $0["crashes"] as? Int }.reduce(0, +), turns, "no crash counted twice")
        XCTAssertEqual(try recordNames(records), [])
    }

    /// Copies of one real record under new names (crash times `milliseconds`), the crash of a
    /// null dereference in the harness.
    func copies(of record: String, in directory: String, at milliseconds: [Int64]) throws -> [String] {
        try milliseconds.map { ms in
            let name = RecordFileName(milliseconds: ms, pid: 999_999, tid: 999_999).name
            try FileManager.default.copyItem(atPath: record, toPath: directory + "/" + name)
            return name
        }
    }

    func oneRecord() throws -> String {
        let source = try Scratch.directory("bounded-source")
        try crash(into: source)
        return source + "/" + (try XCTUnwrap(try recordNames(source).first))
    }

    /// Folding: the middle records of a signature go into its latest, whose tally counts them
    /// (and which sinks had them); a record is never folded into one a sink has while it lacks
    /// the folded one (that sink would never hear of it): it is counted in the ledger instead.
    /// A `.partial` record whose writer runs and a record another process is sending stay.
    func testFoldingKeepsFirstAndLatestAndNeverHidesACrashFromASink() throws {
        let record = try oneRecord()
        let directory = try Scratch.directory("bounded-fold")
        let names = try copies(of: record, in: directory, at: (0..<8).map { 1_700_000_000_000 + $0 * 1000 })
        // Two of the middle ones were delivered to the events sink already.
        for name in names[2...3] {
            XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/" + RecordFileName.acknowledgment(of: name, by: "events"), contents: nil))
        }
        let outcome = RecordDirectoryBound.enforce(directory: directory, limits: RecordDirectoryLimits(maxRecords: 8, maxBytes: 32 << 20))
        XCTAssertEqual(outcome.recordsBefore, 8)
        XCTAssertEqual(outcome.recordsAfter, 6, "down to three quarters of the bound")
        XCTAssertEqual(Set(outcome.folded.keys), Set(names[1...2]), "the oldest middle ones")
        XCTAssertTrue(outcome.folded.values.allSatisfy { $0 == names[7] })
        XCTAssertEqual(try recordNames(directory), [names[0]] + Array(names[3...7]))
        let tally = RecordTally.read(record: names[7], in: directory)
        XCTAssertEqual(tally.folded, 2)
        XCTAssertEqual(tally.deliveredBySink, ["events": 1])
        XCTAssertEqual(tally.firstFoldedMilliseconds, 1_700_000_001_000)
        XCTAssertEqual(tally.lastFoldedMilliseconds, 1_700_000_002_000)
        XCTAssertEqual(tally.crashes(forSink: "events"), 2, "its own and the folded one the events sink lacked")
        XCTAssertEqual(tally.crashes(forSink: "sentry"), 3)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/" + RecordFileName.acknowledgment(of: names[2], by: "events")))

        // The latest is with Sentry already; the middle ones are not: none is folded into it.
        let second = try Scratch.directory("bounded-fold-acked")
        let more = try copies(of: record, in: second, at: (0..<8).map { 1_700_000_000_000 + $0 * 1000 })
        XCTAssertTrue(FileManager.default.createFile(atPath: second + "/" + RecordFileName.acknowledgment(of: more[7], by: "sentry"), contents: nil))
        let acked = RecordDirectoryBound.enforce(directory: second, limits: RecordDirectoryLimits(maxRecords: 8, maxBytes: 32 << 20))
        XCTAssertEqual(acked.folded.count, 0)
        XCTAssertEqual(acked.pruned.count, 2)
        XCTAssertEqual(RecordTally.read(record: more[7], in: second), RecordTally())
        XCTAssertEqual(PrunedCrashes.read(in: second).totalCrashes, 2, "counted in the ledger")

        // A partial record whose writer runs, and a record leased by a sender, are left alone.
        let third = try Scratch.directory("bounded-fold-busy")
        let sleeper = try ChildProcess.start("/bin/sleep", ["30"])
        defer { kill(sleeper.pid, SIGKILL); _ = sleeper.wait() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let live = RecordFileName(milliseconds: now + 60_000, pid: sleeper.pid, tid: sleeper.pid, isPartial: true).name
        try FileManager.default.copyItem(atPath: record, toPath: third + "/" + live)
        let busy = try copies(of: record, in: third, at: (0..<7).map { 1_600_000_000_000 + $0 * 1000 })
        let lease = try XCTUnwrap(RecordLease(path: third + "/" + busy[1]))
        let bounded = RecordDirectoryBound.enforce(directory: third, limits: RecordDirectoryLimits(maxRecords: 8, maxBytes: 32 << 20))
        lease.release()
        let left = try recordNames(third)
        XCTAssertTrue(left.contains(live), "its writer may still be writing it")
        XCTAssertTrue(left.contains(busy[1]), "another process is sending it")
        XCTAssertEqual(left.count, 6)
        XCTAssertTrue(bounded.errors.contains { $0.hasPrefix(busy[1]) }, "\(bounded.errors)")
    }

    /// The byte bound holds with few records, and entries that are not the handler's files
    /// (a symbolic link named like a record, a FIFO) are removed without following them and
    /// counted; files that are not the directory's are never touched.
    func testTheByteBoundAndHostileEntries() throws {
        let record = try oneRecord()
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: record)[.size] as? Int)
        let directory = try Scratch.directory("bounded-bytes")
        let count = (1 << 20) / size + 4   // just over 1 MiB
        _ = try copies(of: record, in: directory, at: (0..<Int64(count)).map { 1_700_000_000_000 + $0 * 1000 })
        let secret = try Scratch.directory("bounded-secret") + "/secret"
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: secret))
        let link = RecordFileName(milliseconds: 1_500_000_000_000, pid: 1, tid: 1).name
        try FileManager.default.createSymbolicLink(atPath: directory + "/" + link, withDestinationPath: secret)
        let fifo = RecordFileName(milliseconds: 1_500_000_000_001, pid: 1, tid: 1).name
        XCTAssertEqual(mkfifo(directory + "/" + fifo, 0o600), 0)
        try Data("not ours".utf8).write(to: URL(fileURLWithPath: directory + "/notes.txt"))
        let outcome = RecordDirectoryBound.enforce(directory: directory, limits: RecordDirectoryLimits(maxRecords: 1000, maxBytes: 1 << 20))
        XCTAssertLessThanOrEqual(outcome.bytesAfter, (1 << 20) * 3 / 4)
        XCTAssertLessThanOrEqual(try bytes(directory) - 8, (1 << 20) * 3 / 4 + 4096, "the ledger and tally are small")
        XCTAssertEqual(try String(contentsOfFile: secret, encoding: .utf8), "keep me")
        XCTAssertFalse(try recordNames(directory).contains(link))
        XCTAssertFalse(try recordNames(directory).contains(fifo))
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory + "/notes.txt"))
        XCTAssertEqual(PrunedCrashes.read(in: directory).entries.first { $0.key == "unreadable record" }?.count, 2)
        // Every crash is still counted: the records kept, what their tallies stand for, the ledger.
        let kept = try recordNames(directory)
        let total = kept.reduce(0) { $0 + RecordTally.read(record: $1, in: directory).totalCrashes } + PrunedCrashes.read(in: directory).totalCrashes
        XCTAssertEqual(total, count + 2)
    }

    /// The tally, the ledger and the crash-loop state are files anyone who can write the
    /// directory can write: garbage is ignored, never trusted, never a crash.
    func testTallyAndLedgerAreReadAsUntrusted() throws {
        var tally = RecordTally()
        tally.fold(crashedAt: 5, tally: RecordTally(), deliveredTo: ["events"])
        XCTAssertEqual(RecordTally(text: tally.text), tally)
        XCTAssertEqual(RecordTally(text: "folded -5\nfirst x\ndelivered ../../etc 3\ndelivered events -1\nfolded 9999999999999999999999\n\u{0}"), RecordTally())
        XCTAssertEqual(RecordTally(text: "folded 3\nfolded 3 4\n").folded, 3)
        XCTAssertEqual(RecordTally(text: "folded 3\ndelivered sentry 99").crashes(forSink: "sentry"), 1, "never fewer than its own")
        let directory = try Scratch.directory("bounded-untrusted")
        let name = RecordFileName(milliseconds: 1, pid: 2, tid: 3).name
        try Data(repeating: 0x41, count: 10_000).write(to: URL(fileURLWithPath: directory + "/" + RecordFileName.tally(of: name)))
        XCTAssertEqual(RecordTally.read(record: name, in: directory), RecordTally(), "an oversized tally is not read")
        try Data("3 10 20 SIGSEGV | a\nnonsense\n-4 1 2 b\n2 5 30 SIGSEGV | a\n".utf8).write(to: URL(fileURLWithPath: directory + "/" + RecordFileName.prunedLedger))
        let ledger = PrunedCrashes.read(in: directory)
        XCTAssertEqual(ledger.entries, [.init(key: "SIGSEGV | a", count: 5, firstMilliseconds: 5, lastMilliseconds: 30)])
    }
}
