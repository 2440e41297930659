// SQLiteLayerTests.swift — the store's own SQLite layer (Store/SQLite.swift) on real files: values
// round-trip exactly (text with a NUL, 64-bit integers, NULL), arguments match parameters or the
// statement is refused, a failed transaction leaves nothing, a file that is not a database is
// refused at open with SQLITE_NOTADB, and a second connection waits on the first one's write lock.
import Foundation
@testable import SensorsTracking
import TestSupport
import XCTest

final class SQLiteLayerTests: XCTestCase {
    func queue(_ name: String) throws -> (DatabaseQueue, String) {
        let path = try Scratch.directory("sqlite-layer") + "/\(name).sqlite"
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: "CREATE TABLE t(id INTEGER PRIMARY KEY, text TEXT, number INTEGER)") }
        return (queue, path)
    }

    func testValuesRoundTripExactly() throws {
        let (queue, _) = try queue("values")
        let texts = ["", "plain", "with\u{0}nul", "é漢字🙂", String(repeating: "x", count: 70_000)]
        try queue.write { db in
            for (index, text) in texts.enumerated() {
                try db.execute(sql: "INSERT INTO t(id, text, number) VALUES(?, ?, ?)", arguments: [index, text, Int64.min + Int64(index)])
            }
            try db.execute(sql: "INSERT INTO t(id, text, number) VALUES(?, ?, ?)", arguments: [99, nil, Int64.max])
        }
        let rows = try queue.read { db in try Row.fetchAll(db, sql: "SELECT id, text, number FROM t ORDER BY id") }
        XCTAssertEqual(rows.prefix(texts.count).map { $0["text"] as String }, texts)
        XCTAssertEqual(rows.prefix(texts.count).map { $0["number"] as Int64 }, (0..<texts.count).map { Int64.min + Int64($0) })
        let last = try XCTUnwrap(rows.last)
        XCTAssertNil(last["text"] as String?, "NULL reads as nil where a value may be missing")
        XCTAssertEqual(last["text"] as String, "", "and as the fallback where one is required")
        XCTAssertEqual(last["number"] as Int64, .max)
        XCTAssertNil(last["no_such_column"] as Int?)
        XCTAssertEqual(try queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t") }, texts.count + 1)
        XCTAssertNil(try queue.read { db in try String.fetchOne(db, sql: "SELECT text FROM t WHERE id = 12345") })
    }

    func testArgumentsMustMatchTheParameters() throws {
        let (queue, _) = try queue("arguments")
        XCTAssertThrowsError(try queue.write { db in try db.execute(sql: "INSERT INTO t(id, text) VALUES(?, ?)", arguments: [1]) })
        XCTAssertThrowsError(try queue.write { db in try db.execute(sql: "INSERT INTO t(id) VALUES(?)", arguments: [1, "extra"]) })
        // Several statements take their arguments in order.
        try queue.write { db in
            try db.execute(sql: "INSERT INTO t(id, text) VALUES(?, ?); INSERT INTO t(id) VALUES(?)", arguments: [1, "one", 2])
        }
        XCTAssertEqual(try queue.read { db in try String.fetchAll(db, sql: "SELECT coalesce(text, '-') FROM t ORDER BY id") }, ["one", "-"])
        // Nothing of the refused writes was stored.
        XCTAssertEqual(try queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t") }, 2)
    }

    func testAFailedTransactionLeavesNothingAndTheConnectionGoesOn() throws {
        let (queue, _) = try queue("rollback")
        struct Stop: Error {}
        XCTAssertThrowsError(try queue.write { db in
            try db.execute(sql: "INSERT INTO t(id) VALUES(1)")
            throw Stop()
        })
        XCTAssertThrowsError(try queue.write { db in
            try db.execute(sql: "INSERT INTO t(id) VALUES(2)")
            try db.execute(sql: "INSERT INTO no_such_table VALUES(1)")
        }) { error in
            XCTAssertTrue("\(error)".contains("no such table"), "\(error)")
        }
        try queue.write { db in try db.execute(sql: "INSERT INTO t(id) VALUES(3)") }
        XCTAssertEqual(try queue.read { db in try Int.fetchAll(db, sql: "SELECT id FROM t") }, [3])
    }

    func testAFileThatIsNotADatabaseIsRefusedAtOpen() throws {
        let path = try Scratch.directory("sqlite-layer") + "/not-a-database.sqlite"
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try DatabaseQueue(path: path)) { error in
            XCTAssertEqual((error as? DatabaseError)?.resultCode, .SQLITE_NOTADB, "\(error)")
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), Data(repeating: 0x41, count: 8192), "left as it was")
    }

    func testASecondConnectionWaitsForTheFirstOnesWriteLock() throws {
        let (first, path) = try queue("busy")
        var configuration = DatabaseQueue.Configuration()
        configuration.busyTimeoutSeconds = 10
        let second = try DatabaseQueue(path: path, configuration: configuration)
        let holding = DispatchSemaphore(value: 0)
        let holder = Thread {
            try? first.write { db in
                try db.execute(sql: "INSERT INTO t(id) VALUES(1)")
                holding.signal()
                Thread.sleep(forTimeInterval: 0.3)
            }
        }
        holder.start()
        holding.wait()
        let started = Date()
        try second.write { db in try db.execute(sql: "INSERT INTO t(id) VALUES(2)") }
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 0.1, "the second write waited for the first")
        XCTAssertEqual(try second.read { db in try Int.fetchAll(db, sql: "SELECT id FROM t ORDER BY id") }, [1, 2])

        // Without a timeout it is refused at once with SQLITE_BUSY.
        configuration.busyTimeoutSeconds = 0
        let impatient = try DatabaseQueue(path: path, configuration: configuration)
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let blocker = Thread {
            try? first.write { _ in
                held.signal()
                release.wait()
            }
        }
        blocker.start()
        held.wait()
        XCTAssertThrowsError(try impatient.write { db in try db.execute(sql: "INSERT INTO t(id) VALUES(3)") }) { error in
            XCTAssertEqual((error as? DatabaseError)?.resultCode, .SQLITE_BUSY, "\(error)")
        }
        release.signal()
    }
}
