// RunLedgerTests.swift — the run ledger on real files and real processes: a run that exited, one
// whose process is SIGKILLed (and, before that, still running), one with a crash record, OOM kills
// told by a counter file standing in for the cgroup's, two claimers racing over the same dead runs,
// a claim left by a dead claimer, hostile files in the ledger's directory, and the record
// directory's other owners, which never see the ledger's subdirectory.
@testable import CrashReporter
import CrashRecordFormat
import HostFacts
import Foundation
import ProcessSpawning
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class RunLedgerTests: XCTestCase {
    /// A running `/bin/sleep` and its identity; kill it with ``kill(_:)``.
    func sleeper() throws -> (running: ChildProcess.Running, identity: ProcessIdentity) {
        let running = try ChildProcess.start("/bin/sleep", ["30"])
        let ticks = try XCTUnwrap(ProcessIdentity.startTicks(of: running.pid), "the child's /proc/<pid>/stat")
        return (running, ProcessIdentity(pid: running.pid, bootID: ProcessIdentity.bootID(), startTicks: ticks))
    }

    /// SIGKILL and reap.
    func kill(_ running: ChildProcess.Running) {
        Glibc.kill(running.pid, SIGKILL)
        XCTAssertEqual(running.wait(timeout: 10).ending, .signaled(SIGKILL))
    }

    /// The identity of a process of this boot that was SIGKILLed and reaped.
    func deadProcess() throws -> ProcessIdentity {
        let (running, identity) = try sleeper()
        kill(running)
        XCTAssertFalse(identity.isAlive)
        return identity
    }

    func start(_ runID: String, _ process: ProcessIdentity, wall: Int64 = 1_000, oom: OOMKillReading? = nil) -> RunStart {
        RunStart(runID: runID, process: process, startWallMilliseconds: wall, startMonotonicNanoseconds: 5_000,
                 appName: "demo app=1\n%", appVersion: "2.0", oomKills: oom)
    }

    func runFiles(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory + "/runs")) ?? []).sorted()
    }

    func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    // MARK: - Outcomes

    func testARunThatEndedIsHandedOutOnceWithItsStartAndGoneAfterFinish() throws {
        let directory = try Scratch.directory("runs-exited")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = RunStart.now(runID: "exited-1", appName: "demo\napp", appVersion: "1.2.3")
        let writer = RunLedger(recordDirectory: directory)
        try writer.begin(run)
        var info = stat()
        XCTAssertEqual(lstat(directory + "/runs", &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700, "runs/ is the owner's alone")
        XCTAssertEqual(lstat(directory + "/runs/exited-1.run", &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        try writer.end(runID: "exited-1", .exited(wallMilliseconds: run.startWallMilliseconds + 7, durationNanoseconds: 42))
        XCTAssertEqual(runFiles(directory), ["exited-1.run"], "no temporary file left")
        // Its process lives on (this one): an exited run is handed out only once its process is
        // gone (its sinks may still be storing its end at exit).
        XCTAssertEqual(RunLedger(recordDirectory: directory).classify(recordRuns: [:], excluding: "next-run").running, 1)

        // The same, written by a process that is gone now.
        var ended = run
        ended.process = try deadProcess()
        try writer.begin(ended)
        try writer.end(runID: "exited-1", .exited(wallMilliseconds: run.startWallMilliseconds + 7, durationNanoseconds: 42))
        let launch = RunLedger(recordDirectory: directory)
        let classification = launch.classify(recordRuns: [:], excluding: "next-run")
        XCTAssertEqual(classification.errors, [])
        XCTAssertEqual(classification.running, 0)
        XCTAssertEqual(classification.outcomes, [EndedRun(start: ended, end: .exited(wallMilliseconds: run.startWallMilliseconds + 7, durationNanoseconds: 42))])
        XCTAssertEqual(classification.outcomes.first?.start.process, ended.process, "the start as written")
        XCTAssertEqual(launch.classify(recordRuns: [:], excluding: "next-run").outcomes, [], "claimed: not handed out again")
        launch.finish(classification.outcomes)
        // The claim is gone; its file is kept, under a temporary name of this process's, for the
        // next marker this ledger writes, and the next launch leaves it alone while it lives.
        let kept = runFiles(directory)
        XCTAssertEqual(kept.count, 1, "\(kept)")
        XCTAssertTrue(kept.first?.hasPrefix("exited-1.tmp.\(RunLedger.ownerName(.current)).") ?? false, "\(kept)")
        XCTAssertEqual(RunLedger(recordDirectory: directory).classify(recordRuns: [:], excluding: "next-run"), RunLedger.Classification())
        XCTAssertEqual(runFiles(directory), kept)
    }

    func testTheCurrentRunIsNeverTouched() throws {
        let directory = try Scratch.directory("runs-current")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ledger = RunLedger(recordDirectory: directory)
        try ledger.begin(start("me", try deadProcess()))
        XCTAssertEqual(ledger.classify(recordRuns: [:], excluding: "me"), RunLedger.Classification())
        XCTAssertEqual(runFiles(directory), ["me.run"])
    }

    func testARunIsRunningWhileItsProcessLivesAndKilledOnceItWasSIGKILLed() throws {
        let directory = try Scratch.directory("runs-killed")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (child, identity) = try sleeper()
        let ledger = RunLedger(recordDirectory: directory)
        try ledger.begin(start("child", identity))
        let alive = ledger.classify(recordRuns: [:], excluding: "me")
        XCTAssertEqual(alive.running, 1)
        XCTAssertEqual(alive.outcomes, [])
        XCTAssertEqual(runFiles(directory), ["child.run"], "a running run is not claimed")

        kill(child)
        let dead = ledger.classify(recordRuns: [:], excluding: "me")
        XCTAssertEqual(dead.running, 0)
        XCTAssertEqual(dead.outcomes, [EndedRun(start: start("child", identity), end: .killed(oom: false))])
        XCTAssertEqual(dead.errors, [])
    }

    func testADeadRunWithACrashRecordCrashed() throws {
        let directory = try Scratch.directory("runs-crashed")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let dead = try deadProcess()
        let ledger = RunLedger(recordDirectory: directory)
        try ledger.begin(start("crashed", dead, wall: 2))
        try ledger.begin(start("killed", dead, wall: 1))
        let record = "crash-1700000000000-\(dead.pid)-\(dead.pid).ccrec"
        let outcomes = ledger.classify(recordRuns: ["crashed": record, "elsewhere": "crash-1-2-3.ccrec"], excluding: "me").outcomes
        XCTAssertEqual(outcomes.map(\.end), [.killed(oom: false), .crashed(record: record)], "oldest start first")
    }

    func testAnEndWrittenByTheCrashTimeUploaderWinsAndEndOfNoMarkerThrows() throws {
        let directory = try Scratch.directory("runs-uploader")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let dead = try deadProcess()
        try RunLedger(recordDirectory: directory).begin(start("sent", dead))
        try RunLedger(recordDirectory: directory).end(runID: "sent", .crashed(record: "crash-1-2-3.ccrec"))
        XCTAssertEqual(RunLedger(recordDirectory: directory).classify(recordRuns: [:], excluding: "me").outcomes.map(\.end),
                       [.crashed(record: "crash-1-2-3.ccrec")])
        XCTAssertThrowsError(try RunLedger(recordDirectory: directory).end(runID: "sent", .exited(wallMilliseconds: 1, durationNanoseconds: 1))) {
            XCTAssertEqual($0 as? RunLedgerError, .system(call: "open", path: directory + "/runs/sent.run", errno: ENOENT), "claimed: gone")
        }
    }

    func testARunOfAnotherBootWithoutAnEndWasKilled() throws {
        let directory = try Scratch.directory("runs-reboot")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // This very process, as if of another boot: alive by pid and start time, but not this boot's.
        let me = ProcessIdentity.current
        let earlier = ProcessIdentity(pid: me.pid == 1 ? 2 : 1, bootID: "00000000-0000-0000-0000-000000000000", startTicks: 1)
        let ledger = RunLedger(recordDirectory: directory)
        try ledger.begin(start("before-reboot", earlier))
        XCTAssertEqual(ledger.classify(recordRuns: [:], excluding: "me").outcomes.map(\.end), [.killed(oom: false)])
    }

    // MARK: - OOM kills

    func testADeadRunIsAnOOMKillOnlyWhenTheSameCounterFileCountsMoreKills() throws {
        let directory = try Scratch.directory("runs-oom")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Stand-ins for three cgroups' counter files (the name is part of what is trusted).
        var readings: [String: OOMKillReading] = [:]
        for name in ["grown", "same", "replaced"] {
            try FileManager.default.createDirectory(atPath: directory + "/" + name, withIntermediateDirectories: true)
            try write("low 0\noom 3\noom_kill 3\n", to: directory + "/\(name)/memory.events")
            readings[name] = try XCTUnwrap(OOMKillCounter.read(directory + "/\(name)/memory.events"))
        }
        // The same file, one kill more (rewritten in place: same inode).
        let grown = open(directory + "/grown/memory.events", O_WRONLY | O_TRUNC)
        XCTAssertGreaterThanOrEqual(grown, 0)
        XCTAssertEqual(Glibc.write(grown, "oom 4\noom_kill 4\n", 17), 17)
        close(grown)
        // Another file at the same path (a cgroup removed and made again), with more kills: made
        // beside the old one before the rename, so it cannot reuse the old inode.
        try write("oom_kill 9\n", to: directory + "/replaced/memory.events.new")
        XCTAssertEqual(rename(directory + "/replaced/memory.events.new", directory + "/replaced/memory.events"), 0)
        XCTAssertNotEqual(OOMKillCounter.read(directory + "/replaced/memory.events")?.inode, readings["replaced"]?.inode)

        let dead = try deadProcess()
        let ledger = RunLedger(recordDirectory: directory)
        for (index, name) in ["grown", "same", "replaced"].enumerated() {
            try ledger.begin(start(name, dead, wall: Int64(index), oom: readings[name]))
        }
        let outcomes = ledger.classify(recordRuns: [:], excluding: "me").outcomes
        XCTAssertEqual(outcomes.map(\.start.runID), ["grown", "same", "replaced"])
        XCTAssertEqual(outcomes.map(\.end), [.killed(oom: true), .killed(oom: false), .killed(oom: false)])
        XCTAssertEqual(outcomes.first?.start.oomKills, readings["grown"], "the reading at start, as written")
    }

    // MARK: - Several processes

    func testTwoClaimersRacingOverFiftyDeadRunsHandEachOutExactlyOnce() throws {
        let directory = try Scratch.directory("runs-race")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let dead = try deadProcess()
        let writer = RunLedger(recordDirectory: directory)
        let ids = (0..<50).map { "run-\($0)" }
        for (index, id) in ids.enumerated() { try writer.begin(start(id, dead, wall: Int64(index))) }
        // The other claimer stands for a live process of its own (a sleeping child): each sees the
        // other's claims as a live claimer's and leaves them.
        let (other, otherIdentity) = try sleeper()
        defer { kill(other) }
        let ledgers = [RunLedger(recordDirectory: directory), RunLedger(recordDirectory: directory, claimer: otherIdentity)]
        let results = Collected<RunLedger.Classification>()
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            results.append(ledgers[index].classify(recordRuns: [:], excluding: "me"))
        }
        let all = results.all
        XCTAssertEqual(all.count, 2)
        XCTAssertEqual(all.flatMap(\.errors), [])
        let handedOut = all.flatMap { $0.outcomes.map(\.start.runID) }
        XCTAssertEqual(handedOut.sorted(), ids.sorted(), "each exactly once")
        // A second round: nothing left, the live claimers' claims kept.
        for ledger in ledgers { XCTAssertEqual(ledger.classify(recordRuns: [:], excluding: "me").outcomes, []) }
        XCTAssertEqual(runFiles(directory).count, 50)
        XCTAssertTrue(runFiles(directory).allSatisfy { $0.contains(".claim.") })
    }

    func testAClaimLeftByADeadClaimerIsTakenOver() throws {
        let directory = try Scratch.directory("runs-stale-claim")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let deadRun = try deadProcess(), deadClaimer = try deadProcess()
        let run = start("orphan", deadRun)
        try RunLedger(recordDirectory: directory, claimer: deadClaimer).begin(run)
        let first = RunLedger(recordDirectory: directory, claimer: deadClaimer).classify(recordRuns: [:], excluding: "me")
        XCTAssertEqual(first.outcomes.map(\.start.runID), ["orphan"])
        XCTAssertEqual(runFiles(directory), ["orphan.claim.\(deadClaimer.bootID).\(deadClaimer.pid).\(deadClaimer.startTicks)"])
        // The claimer "died" before finish: the next launch takes its claim over.
        let next = RunLedger(recordDirectory: directory)
        let taken = next.classify(recordRuns: ["orphan": "crash-1-2-3.ccrec"], excluding: "me")
        XCTAssertEqual(taken.outcomes, [EndedRun(start: run, end: .crashed(record: "crash-1-2-3.ccrec"))])
        let me = ProcessIdentity.current
        XCTAssertEqual(runFiles(directory), ["orphan.claim.\(me.bootID).\(me.pid).\(me.startTicks)"])
        next.finish(taken.outcomes)
        XCTAssertEqual(runFiles(directory).filter { !$0.hasPrefix("orphan.tmp.\(RunLedger.ownerName(me)).") }, [], "only the kept file")
    }

    // MARK: - Files made and freed

    /// A finished claim's file becomes the next marker (renamed, rewritten, renamed), whether the
    /// new text is shorter or longer than the old; a file kept by a process that died is deleted
    /// by the next launch, as a marker being written by one is.
    func testTheNextMarkerIsWrittenIntoAFinishedClaimsFile() throws {
        let directory = try Scratch.directory("runs-spare")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let dead = try deadProcess()
        for (old, new) in [(start("long-old", dead, oom: OOMKillReading(path: "/sys/fs/cgroup/memory.events", inode: 7, kills: 1)),
                            start("short", .current)),
                           (start("old", dead), RunStart(runID: "longer-new", process: .current, startWallMilliseconds: 9,
                                                         startMonotonicNanoseconds: 1, appName: String(repeating: "a", count: 900),
                                                         appVersion: "3", oomKills: nil, release: "r", environment: "e", dist: "d"))] {
            try RunLedger(recordDirectory: directory, claimer: dead).end(old, .killed(oom: true))
            let ledger = RunLedger(recordDirectory: directory)
            let classification = ledger.classify(recordRuns: [:], excluding: new.runID)
            XCTAssertEqual(classification.outcomes.map(\.start.runID), [old.runID])
            let claim = "\(directory)/runs/\(old.runID).claim.\(RunLedger.ownerName(.current))"
            var info = stat()
            XCTAssertEqual(lstat(claim, &info), 0)
            let inode = info.st_ino
            ledger.finish(classification.outcomes)
            try ledger.begin(new)
            XCTAssertEqual(runFiles(directory), ["\(new.runID).run"], "no claim, no temporary, no other file")
            XCTAssertEqual(lstat("\(directory)/runs/\(new.runID).run", &info), 0)
            XCTAssertEqual(info.st_ino, inode, "the claim's file, not a new one")
            XCTAssertEqual(info.st_mode & 0o777, 0o600)
            XCTAssertEqual(try RunLedger.readMarker("\(directory)/runs/\(new.runID).run", runID: new.runID).get(),
                           RunLedger.Marker(start: new, end: nil), "exactly the new text: \(old.runID) → \(new.runID)")
            unlink("\(directory)/runs/\(new.runID).run")
        }
        // A kept file whose process died: deleted by the next launch, without an error.
        let claimer = try deadProcess()
        try RunLedger(recordDirectory: directory, claimer: dead).end(start("gone", dead), .exited(wallMilliseconds: 5, durationNanoseconds: 1))
        let ledger = RunLedger(recordDirectory: directory, claimer: claimer)
        ledger.finish(ledger.classify(recordRuns: [:], excluding: "me").outcomes)
        XCTAssertEqual(runFiles(directory).count, 1)
        XCTAssertTrue(runFiles(directory).first?.hasPrefix("gone.tmp.") ?? false, "\(runFiles(directory))")
        XCTAssertEqual(RunLedger(recordDirectory: directory).classify(recordRuns: [:], excluding: "me"), RunLedger.Classification())
        XCTAssertEqual(runFiles(directory), [])
    }

    /// The run's own end and its OOM-kill reading are appended to its marker (no file made, none
    /// freed), and read back as if the marker had been written whole; with no marker to append
    /// to, or a link in its place, the marker is written whole.
    func testTheEndAndTheCounterAreAppendedToTheRunsOwnMarker() throws {
        let directory = try Scratch.directory("runs-append")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ledger = RunLedger(recordDirectory: directory)
        let run = RunStart(runID: "appended", process: .current, startWallMilliseconds: 1_000, startMonotonicNanoseconds: 5,
                           appName: "a%b\u{1}", appVersion: "1", oomKills: nil, release: "a@1", environment: "production", dist: nil)
        let path = "\(directory)/runs/appended.run"
        try ledger.begin(run)
        try ledger.refresh(runID: "appended", seen: RunLastSeen(wallMilliseconds: 1_500, durationNanoseconds: 500))
        var info = stat()
        XCTAssertEqual(lstat(path, &info), 0)
        let inode = info.st_ino
        let reading = OOMKillReading(path: "/sys/fs/cgroup/a b/memory.events", inode: 42, kills: 3)
        try ledger.appendCounter(run, reading)
        var counted = run
        counted.oomKills = reading
        XCTAssertEqual(try RunLedger.readMarker(path, runID: "appended").get(),
                       RunLedger.Marker(start: counted, end: nil, seen: RunLastSeen(wallMilliseconds: 1_500, durationNanoseconds: 500)))
        let end = RunEnd.exited(wallMilliseconds: 2_000, durationNanoseconds: 1_000_000)
        try ledger.appendEnd(counted, end)
        XCTAssertEqual(try RunLedger.readMarker(path, runID: "appended").get(),
                       RunLedger.Marker(start: counted, end: end, seen: RunLastSeen(wallMilliseconds: 1_500, durationNanoseconds: 500)))
        XCTAssertEqual(lstat(path, &info), 0)
        XCTAssertEqual(info.st_ino, inode, "appended, not replaced")
        XCTAssertEqual(runFiles(directory), ["appended.run"])
        // The next launch tells it as any exited run.
        XCTAssertEqual(RunLedger(recordDirectory: directory).classify(recordRuns: [:], excluding: "me").running, 1, "its process lives")

        // No marker to append to: written whole.
        unlink(path)
        try ledger.appendEnd(run, end)
        XCTAssertEqual(try RunLedger.readMarker(path, runID: "appended").get(), RunLedger.Marker(start: run, end: end))
        // A link in its place: not followed (its target untouched), the marker written whole.
        unlink(path)
        let target = "\(directory)/target"
        try write("not a marker\n", to: target)
        XCTAssertEqual(symlink(target, path), 0)
        try ledger.appendEnd(run, end)
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "not a marker\n")
        XCTAssertEqual(lstat(path, &info), 0)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFREG)
        XCTAssertEqual(try RunLedger.readMarker(path, runID: "appended").get(), RunLedger.Marker(start: run, end: end))
    }

    // MARK: - Hostile files

    func testHostileFilesAreErrorsAndTheGoodMarkersAreStillClassified() throws {
        let directory = try Scratch.directory("runs-hostile")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let dead = try deadProcess()
        let ledger = RunLedger(recordDirectory: directory)
        try ledger.begin(start("good", dead))
        let runs = directory + "/runs"
        // A valid marker elsewhere, reached only through a symbolic link: never followed.
        try write(RunLedger.render(start("x", dead), end: nil), to: directory + "/target")
        XCTAssertEqual(symlink(directory + "/target", runs + "/x.run"), 0)
        XCTAssertEqual(mkfifo(runs + "/y.run", 0o600), 0)
        try Data(repeating: 0x41, count: 1 << 20).write(to: URL(fileURLWithPath: runs + "/z.run"))
        try write("garbage\n\u{0}\u{1}", to: runs + "/g.run")
        try write(RunLedger.render(start("other", dead), end: nil), to: runs + "/renamed.run")
        try write(RunLedger.render(start("good", dead), end: nil), to: runs + "/bad id!.run")
        try write(RunLedger.render(start("t", dead), end: nil).replacingOccurrences(of: "pid=", with: "pid=-"), to: runs + "/negative.run")
        try write("crashcapture-run 1\nrun=dup\nrun=dup\n", to: runs + "/dup.run")
        try write("not ours", to: runs + "/README")

        let started = Date()
        let classification = ledger.classify(recordRuns: [:], excluding: "me")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "the FIFO did not block")
        XCTAssertEqual(classification.outcomes.map(\.start.runID), ["good"])
        XCTAssertEqual(classification.outcomes.first?.end, .killed(oom: false))
        let named = Set(classification.errors.compactMap { $0.split(separator: ":").first.map(String.init) })
        XCTAssertEqual(named, ["x.run", "y.run", "z.run", "g.run", "renamed.run", "bad id!.run", "negative.run", "dup.run"],
                       classification.errors.joined(separator: "\n"))
        XCTAssertEqual(classification.errors.count, 8)
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory + "/target"), "the link removed, not what it points to")
        XCTAssertEqual(runFiles(directory), ["README", "good.claim.\(ProcessIdentity.current.bootID).\(getpid()).\(ProcessIdentity.current.startTicks)"],
                       "the hostile ones deleted; a file not named as the ledger's left alone")
        XCTAssertEqual(ledger.classify(recordRuns: [:], excluding: "me").errors, [], "reported once")
    }

    func testATextRoundTripsAndTheParserRefusesWhatItDoesNotWrite() throws {
        let dead = ProcessIdentity(pid: 7, bootID: "b", startTicks: 9)
        let oom = OOMKillReading(path: "/sys/fs/cgroup/a b/memory.events", inode: 12, kills: 3)
        for end: RunEnd? in [nil, .exited(wallMilliseconds: 5, durationNanoseconds: 6), .crashed(record: nil),
                             .crashed(record: "crash-1-2-3.ccrec"), .killed(oom: true), .killed(oom: false)] {
            let text = RunLedger.render(start("rt", dead, oom: oom), end: end)
            XCTAssertEqual(try RunLedger.parse(Array(text.utf8)).get(), RunLedger.Marker(start: start("rt", dead, oom: oom), end: end))
        }
        let good = RunLedger.render(start("rt", dead), end: nil)
        for bad in ["", good.dropLast() + "", "crashcapture-run 2\n" + good.drop { $0 != "\n" }.dropFirst(), good + "extra=1\n",
                    good + "end=exited\n", good + "end=crashed\nend_record=a/b\n", good + "oom_path=/x\n", good + "end=killed\nend_oom=2\n",
                    good.replacingOccurrences(of: "app=", with: "app=%zz"), good.replacingOccurrences(of: "ticks=", with: "ticks=x")] {
            XCTAssertThrowsError(try RunLedger.parse(Array(bad.utf8)).get(), String(reflecting: bad))
        }
    }

    func testBeginRefusesAnInvalidRunID() throws {
        let directory = try Scratch.directory("runs-invalid")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ledger = RunLedger(recordDirectory: directory)
        for id in ["", "a/b", "..", "a.run", "with space", "ä", String(repeating: "a", count: 65)] {
            XCTAssertThrowsError(try ledger.begin(start(id, .current)), id) { XCTAssertEqual($0 as? RunLedgerError, .invalidRunID(id)) }
            XCTAssertThrowsError(try ledger.end(runID: id, .killed(oom: false)), id)
        }
        try ledger.begin(start(String(repeating: "a", count: 64), .current))
        try ledger.begin(start("A-z_09", .current))
        XCTAssertEqual(runFiles(directory), ["A-z_09.run", String(repeating: "a", count: 64) + ".run"])
    }

    func testMoreThanTheBoundOfMarkersLosesTheOldest() throws {
        let directory = try Scratch.directory("runs-bound")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let dead = try deadProcess()
        let ledger = RunLedger(recordDirectory: directory)
        let count = RunLedger.maxMarkers + 4
        for index in 0..<count {
            try ledger.begin(start("r\(index)", dead, wall: Int64(index)))
            // Oldest by modification time: r0 … r3 are the oldest.
            var times = [timespec(tv_sec: 1_000 + index, tv_nsec: 0), timespec(tv_sec: 1_000 + index, tv_nsec: 0)]
            XCTAssertEqual(utimensat(AT_FDCWD, directory + "/runs/r\(index).run", &times, AT_SYMLINK_NOFOLLOW), 0)
        }
        let classification = ledger.classify(recordRuns: [:], excluding: "me")
        XCTAssertEqual(classification.outcomes.count, RunLedger.maxMarkers)
        XCTAssertEqual(classification.errors.count, 4)
        XCTAssertEqual(Set(classification.errors.compactMap { $0.split(separator: ":").first.map(String.init) }),
                       ["r0.run", "r1.run", "r2.run", "r3.run"])
    }

    func testTheRecordDirectorysOtherOwnersIgnoreTheRunsSubdirectory() throws {
        let directory = try Scratch.directory("runs-beside-records")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try RunLedger(recordDirectory: directory).begin(start("beside", try deadProcess()))
        XCTAssertEqual(try RecordFileName.names(in: directory, including: RecordFileName.isDirectoryFile), [])
        // Bounds small enough that any file counted would be over them: nothing is counted or pruned.
        let outcome = RecordDirectoryBound.enforce(directory: directory, limits: RecordDirectoryLimits(maxRecords: 2, maxBytes: 1 << 20))
        XCTAssertEqual(outcome.recordsBefore, 0)
        XCTAssertEqual(outcome.bytesBefore, 0)
        XCTAssertEqual(outcome.errors, [])
        XCTAssertEqual(runFiles(directory), ["beside.run"])
    }
}
