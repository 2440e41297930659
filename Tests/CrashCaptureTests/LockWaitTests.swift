// LockWaitTests.swift — a stuck thread names the lock it waits on and who holds it, and a deadlock
// among plain threads is found unasked (`crash-harness hang --mode deadlock | held`), each judged
// from `crash-inspect show --json` of the record a child process left.
@testable import CrashCapture
import CrashRecordFormat
import CrashSentry
import Foundation
import ProcessSpawning
import TestSupport
import XCTest

final class LockWaitTests: XCTestCase {
    /// Runs `crash-harness hang --mode <mode>` and returns its stdout lines' JSON objects, its
    /// records and stderr.
    func harness(_ mode: String, _ arguments: [String]) throws -> (lines: [[String: Any]], records: [String], stderr: String) {
        let directory = try Scratch.directory("locks-\(mode)")
        var env = ProcessInfo.processInfo.environment
        env[HangDetection.environmentVariable] = nil
        env["SWIFT_BACKTRACE"] = "enable=no"
        let child = try ChildProcess.run(BuiltProducts.harness, ["hang", "--dir", directory, "--mode", mode, "--waiting", "0"] + arguments,
                                         environment: env, stdout: directory + ".stdout", stderr: directory + ".stderr", timeout: 60,
                                         ownProcessGroup: true)
        let stderr = (try? String(contentsOfFile: directory + ".stderr", encoding: .utf8)) ?? ""
        XCTAssertEqual(child.ending, .exited(0), stderr)
        let lines = ((try? String(contentsOfFile: directory + ".stdout", encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let records = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".ccrec") }.sorted()
            .map { directory + "/" + $0 }
        return (lines, records, stderr)
    }

    func showJSON(_ record: String) throws -> [String: Any] {
        let text = try Tools.output(BuiltProducts.inspect, ["show", record, "--json"])
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    func thread(_ tid: Int, in show: [String: Any]) -> [String: Any]? {
        (show["threads"] as? [[String: Any]])?.first { $0["tid"] as? Int == tid }
    }

    func frameSymbols(_ thread: [String: Any]?) -> [String] {
        (thread?["frames"] as? [[String: Any]] ?? []).compactMap { $0["symbol"] as? String }
    }

    /// Two plain threads take two glibc mutexes (then two NSLocks) in opposite order and a request
    /// on the pool waits on the first: no heartbeat is late and no request is old, yet exactly one
    /// hang record of its own cause is written, the cycle first — each thread, the mutex it waits
    /// on and the other as its holder, its frames in `transferFunds` / `auditLedger` — and Sentry
    /// titles it by those functions, groups it by them, and sends each thread's lock reasons.
    func testADeadlockAmongPlainThreadsIsFoundUnasked() throws {
        for lock in ["pthread", "nslock"] {
            let run = try harness("deadlock", ["--lock", lock, "--threshold", "1", "--seconds", "3"])
            let threads = try XCTUnwrap(run.lines.last?["threads"] as? [Int], run.stderr)
            XCTAssertEqual(threads.count, 2)
            XCTAssertEqual(run.records.count, 1, "one record per cycle: \(run.stderr)")
            let show = try showJSON(try XCTUnwrap(run.records.first, run.stderr))
            let event = try XCTUnwrap(show["event"] as? [String: Any])
            XCTAssertEqual(event["detector"] as? String, "deadlock")
            let cycle = try XCTUnwrap(event["deadlock"] as? [Int], "\(event)")
            XCTAssertEqual(Set(cycle), Set(threads), lock)
            XCTAssertEqual(cycle, cycle.sorted(), "starts at the lowest thread id")
            XCTAssertEqual(event["blockedThread"] as? Int, cycle[0])
            let listed = (show["threads"] as? [[String: Any]] ?? []).prefix(2).compactMap { $0["tid"] as? Int }
            XCTAssertEqual(listed, cycle, "the cycle's threads come first")
            for (position, tid) in cycle.enumerated() {
                let entry = thread(tid, in: show)
                let waits = try XCTUnwrap(entry?["waitsOn"] as? [String: Any], "\(String(describing: entry))")
                XCTAssertEqual(waits["kind"] as? String, "mutex", lock)
                XCTAssertEqual(waits["holderTid"] as? Int, cycle[(position + 1) % cycle.count], "the other thread holds it")
                XCTAssertEqual(waits["inDeadlock"] as? Bool, true)
                XCTAssertEqual(entry?["holdsLocks"] as? [String], [try XCTUnwrap(thread(cycle[(position + 1) % cycle.count], in: show)?["waitsOn"] as? [String: Any])["address"] as! String])
                let symbols = frameSymbols(entry)
                XCTAssertTrue(symbols.contains { $0.contains("transferFunds") || $0.contains("auditLedger") }, "\(symbols)")
            }
            // The request waits on a lock of the cycle, outside it.
            let outside = (show["threads"] as? [[String: Any]] ?? []).filter { entry in
                (entry["waitsOn"] as? [String: Any])?["inDeadlock"] as? Bool == false && frameSymbols(entry).contains { $0.contains("readBalance") }
            }
            XCTAssertEqual(outside.count, 1, "the request on the pool waits on the first lock")
            XCTAssertTrue(cycle.contains((outside.first?["waitsOn"] as? [String: Any])?["holderTid"] as? Int ?? 0))
            XCTAssertTrue(run.stderr.contains("\"hang\":\"deadlock\""), run.stderr)

            let record = try CrashRecordReader.read(path: run.records[0])
            // The copy a sink attaches still reads as this deadlock, with the locks' words zeroed.
            let copy = try CrashRecordReader.parse(RecordRedaction().apply(to: Array(try Data(contentsOf: URL(fileURLWithPath: run.records[0])))))
            XCTAssertEqual(copy.event?.detector, .deadlock)
            XCTAssertEqual(copy.event?.lockWaits?.cycle.map(\.holder), record.event?.lockWaits?.cycle.map(\.holder))
            XCTAssertTrue(record.event?.lockWaits?.waits.contains { $0.words.contains { $0 != 0 } } == true)
            XCTAssertEqual(copy.event?.lockWaits?.waits.allSatisfy { $0.words.allSatisfy { $0 == 0 } }, true)
            let sentry = SentryEnvelope.event(record: record, eventID: "e")
            XCTAssertEqual(sentry.exception.values.first?.type, "Deadlock")
            let value = sentry.exception.values.first?.value ?? ""
            XCTAssertTrue(value.contains("transferFunds") && value.contains("auditLedger"), value)
            XCTAssertEqual(sentry.fingerprint?.first, "deadlock")
            XCTAssertEqual(sentry.fingerprint?.count, 3, "\(String(describing: sentry.fingerprint))")
            let first = try XCTUnwrap(sentry.threads.values.first { $0.id == cycle[0] }?.heldLocks)
            XCTAssertEqual(first.values.filter { $0.type == 8 }.map(\.threadID), [cycle[1]], "blocked on the other's lock")
            XCTAssertEqual(first.values.filter { $0.type == 1 }.count, 1, "and holding its own")
        }
    }

    /// Two Synchronization.Mutexes taken in opposite order do not hang on Linux: the kernel's
    /// priority-inheritance futex refuses the lock that closes the cycle and Mutex traps with
    /// "Recursive call to lock Mutex". The process dies of SIGILL as it does without CrashCapture,
    /// and the record says that this message is also how a deadlock ends there.
    func testTwoSynchronizationMutexesInOppositeOrderTrapAndTheRecordSaysWhy() throws {
        let directory = try Scratch.directory("locks-mutex-abba")
        for disabled in [true, false] {
            var env = ProcessInfo.processInfo.environment
            env[HangDetection.environmentVariable] = nil
            env["SWIFT_BACKTRACE"] = "enable=no"
            env["CRASHCAPTURE_DISABLE"] = disabled ? "1" : nil
            let child = try ChildProcess.run(BuiltProducts.harness, ["hang", "--dir", directory, "--mode", "deadlock", "--lock", "mutex",
                                                                     "--waiting", "0", "--threshold", "0", "--seconds", "10"],
                                             environment: env, stdout: directory + ".stdout", stderr: directory + ".stderr", timeout: 60,
                                             ownProcessGroup: true)
            XCTAssertEqual(child.ending, .signaled(SIGILL), "disabled: \(disabled)")
        }
        let records = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".ccrec") }
        XCTAssertEqual(records.count, 1)
        let show = try showJSON(directory + "/" + (try XCTUnwrap(records.first)))
        XCTAssertTrue((show["message"] as? String ?? "").contains("Recursive call to lock Mutex"), "\(show["message"] ?? "")")
        let explanation = show["explanation"] as? String ?? ""
        XCTAssertTrue(explanation.contains("also a deadlock"), explanation)
    }

    /// A request waits to read a glibc rwlock a plain thread holds for writing across a blocking
    /// call, then for a Synchronization.Mutex held the same way: the snapshot names the lock's
    /// kind and the holder, and no deadlock.
    func testAWaitingThreadNamesTheLockAndItsHolder() throws {
        for (lock, kind, what) in [("rwlock", "rwlock_writer", "an rwlock"), ("mutex", "pi_futex", "a Synchronization.Mutex")] {
            let run = try harness("held", ["--lock", lock, "--threshold", "0", "--block", "3"])
            let holder = try XCTUnwrap(run.lines.first?["holder"] as? Int, run.stderr)
            let show = try showJSON(try XCTUnwrap(run.records.first, run.stderr))
            XCTAssertTrue((show["event"] as? [String: Any])?["deadlock"] is NSNull, "no deadlock")
            let waiter = try XCTUnwrap((show["threads"] as? [[String: Any]])?.first { entry in
                frameSymbols(entry).contains { $0.contains(lock == "rwlock" ? "searchIndex" : "readCache") }
            }, "no thread in the request's frames")
            let waits = try XCTUnwrap(waiter["waitsOn"] as? [String: Any], "\(waiter)")
            XCTAssertEqual(waits["kind"] as? String, kind)
            XCTAssertEqual(waits["what"] as? String, what)
            XCTAssertEqual(waits["holderTid"] as? Int, holder)
            XCTAssertEqual(waits["holderName"] as? String, "index-writer")
            XCTAssertEqual(thread(holder, in: show)?["holdsLocks"] as? [String], [waits["address"] as! String])
            XCTAssertTrue(thread(holder, in: show)?["waitsOn"] is NSNull, "the holder sleeps in nanosleep, on no lock")
        }
    }

    /// The cycle search alone: each thread waits on at most one lock; cycles of one, two and three
    /// threads are found, each from its lowest thread id; a chain that ends, or ends in a cycle,
    /// is not one.
    func testCyclesAreFoundFromTheWaitsAlone() {
        typealias W = (tid: Int32, holder: Int32?)
        func tids(_ waits: [W]) -> [[Int32]] { LockWaits.cycles(in: waits).map { $0.map { waits[$0].tid } } }
        XCTAssertEqual(tids([(5, 7), (7, 5)]), [[5, 7]])
        XCTAssertEqual(tids([(9, 4), (4, 6), (6, 9)]), [[4, 6, 9]])
        XCTAssertEqual(tids([(3, 3)]), [[3]], "a thread that waits on a lock it holds")
        XCTAssertEqual(tids([(1, 2), (2, 3), (3, nil)]), [], "a chain that ends")
        XCTAssertEqual(tids([(1, 2), (2, 8), (8, 2)]), [[2, 8]], "a chain into a cycle: the cycle only")
        XCTAssertEqual(tids([(1, 99)]), [], "a holder that waits on nothing")
        XCTAssertEqual(tids([(20, 21), (21, 20), (10, 11), (11, 10)]), [[10, 11], [20, 21]])
        XCTAssertEqual(tids([]), [])
    }
}
