// SQLite.swift — the part of SQLite the tracking store uses: one connection behind a lock,
// transactions, statements with bound arguments, rows read by column name.
//
// The store used GRDB until this layer replaced it: GRDB's first use in a process (its connection
// set-up, statement authorizer, dispatch queue and generic decoding) was most of what the
// analytics cost a short-lived program at launch (Benchmarks/README.md). The names follow GRDB's
// where the store already spoke them (`DatabaseQueue`, `Database`, `Row`, `DatabaseError`), so
// the store's statements read as before. Nothing here is public. SQLite itself is reached through
// CSQLite, which loads it when the first store is opened (csqlite.h).
import CSQLite
import Foundation

/// An error SQLite returned, with the statement it came from.
package struct DatabaseError: Error, CustomStringConvertible {
    /// A primary SQLite result code (`resultCode` compares primary codes only).
    package struct ResultCode: Equatable, Sendable, CustomStringConvertible {
        package let rawValue: Int32
        package init(_ rawValue: Int32) { self.rawValue = rawValue }
        package static let SQLITE_ERROR = ResultCode(CSQLite.SQLITE_ERROR)
        package static let SQLITE_BUSY = ResultCode(CSQLite.SQLITE_BUSY)
        package static let SQLITE_LOCKED = ResultCode(CSQLite.SQLITE_LOCKED)
        package static let SQLITE_CORRUPT = ResultCode(CSQLite.SQLITE_CORRUPT)
        package static let SQLITE_NOTADB = ResultCode(CSQLite.SQLITE_NOTADB)
        package var description: String { "\(rawValue)" }
    }

    /// The primary result code (SQLITE_BUSY, SQLITE_CORRUPT...).
    package let resultCode: ResultCode
    /// The extended result code, as SQLite gave it.
    package let extendedResultCode: Int32
    package let message: String
    /// The statement that failed, if one did.
    package let sql: String?

    package init(resultCode: ResultCode = .SQLITE_ERROR, message: String, sql: String? = nil) {
        self.resultCode = resultCode
        extendedResultCode = resultCode.rawValue
        self.message = message
        self.sql = sql
    }

    /// The error SQLite holds for `handle` after `code`.
    init(code: Int32, handle: OpaquePointer?, sql: String?) {
        resultCode = ResultCode(code & 0xff)
        extendedResultCode = code
        message = handle.flatMap { csqlite_errmsg($0) }.map { String(cString: $0) } ?? String(cString: csqlite_errstr(code))
        self.sql = sql
    }

    package var description: String {
        "SQLite error \(extendedResultCode): \(message)" + (sql.map { " - while executing `\($0)`" } ?? "")
    }
}

/// A value bound to a statement's `?`.
package protocol DatabaseValueConvertible {
    /// Binds the value to parameter `index` (1-based) of `statement`; returns SQLite's code.
    func bind(to statement: OpaquePointer, at index: Int32) -> Int32
}

/// A value read from a column.
package protocol DatabaseValueDecodable {
    init?(_ value: DatabaseValue)
    /// What a NULL (or a value of another type) reads as where the store asks for a value.
    static var fallback: Self { get }
}

/// One column's value in a row.
package enum DatabaseValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

extension String: DatabaseValueConvertible, DatabaseValueDecodable {
    package func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        // The UTF-8 bytes, all of them (a NUL inside the text included).
        var text = self
        return text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                guard let start = chars.baseAddress else { return "".withCString { csqlite_bind_text(statement, index, $0, 0) } }
                return csqlite_bind_text(statement, index, start, Int32(chars.count))
            }
        }
    }
    package init?(_ value: DatabaseValue) {
        switch value {
        case .text(let text): self = text
        case .integer(let number): self = String(number)
        case .real(let number): self = String(number)
        case .blob(let bytes): self = String(decoding: bytes, as: UTF8.self)
        case .null: return nil
        }
    }
    package static var fallback: String { "" }
}

extension Int64: DatabaseValueConvertible, DatabaseValueDecodable {
    package func bind(to statement: OpaquePointer, at index: Int32) -> Int32 { csqlite_bind_int64(statement, index, self) }
    package init?(_ value: DatabaseValue) {
        switch value {
        case .integer(let number): self = number
        case .real(let number): guard let exact = Int64(exactly: number) else { return nil }; self = exact
        case .text(let text): guard let number = Int64(text) else { return nil }; self = number
        case .null, .blob: return nil
        }
    }
    package static var fallback: Int64 { 0 }
}

extension Int: DatabaseValueConvertible, DatabaseValueDecodable {
    package func bind(to statement: OpaquePointer, at index: Int32) -> Int32 { csqlite_bind_int64(statement, index, Int64(self)) }
    package init?(_ value: DatabaseValue) {
        guard let number = Int64(value) else { return nil }
        self = Int(number)
    }
    package static var fallback: Int { 0 }
}

extension Int32: DatabaseValueConvertible, DatabaseValueDecodable {
    package func bind(to statement: OpaquePointer, at index: Int32) -> Int32 { csqlite_bind_int64(statement, index, Int64(self)) }
    package init?(_ value: DatabaseValue) {
        guard let number = Int64(value), let narrow = Int32(exactly: number) else { return nil }
        self = narrow
    }
    package static var fallback: Int32 { 0 }
}

extension Double: DatabaseValueConvertible {
    package func bind(to statement: OpaquePointer, at index: Int32) -> Int32 { csqlite_bind_double(statement, index, self) }
}

extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
    package func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        switch self {
        case .some(let value): value.bind(to: statement, at: index)
        case .none: csqlite_bind_null(statement, index)
        }
    }
}

/// The values bound to a statement's parameters, in order.
package struct StatementArguments: ExpressibleByArrayLiteral {
    var values: [(any DatabaseValueConvertible)?]
    package init(arrayLiteral elements: (any DatabaseValueConvertible)?...) { values = elements }
    package init(_ values: [(any DatabaseValueConvertible)?]) { self.values = values }
}

/// One result row: its columns by name.
package struct Row {
    package let columns: [(name: String, value: DatabaseValue)]

    /// The value of column `name` (the first of that name); `nil` for NULL or a missing column.
    package subscript<Value: DatabaseValueDecodable>(_ name: String) -> Value? {
        columns.first { $0.name == name }.flatMap { Value($0.value) }
    }

    /// The value of column `name`; NULL, a missing column or a value of another type reads as
    /// the type's fallback (0, ""): the store's columns are NOT NULL, and a file written by hand
    /// must not trap the process.
    package subscript<Value: DatabaseValueDecodable>(_ name: String) -> Value {
        columns.first { $0.name == name }.flatMap { Value($0.value) } ?? Value.fallback
    }

    package static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Row] {
        try db.rows(sql: sql, arguments: arguments, limit: .max)
    }

    package static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Row? {
        try db.rows(sql: sql, arguments: arguments, limit: 1).first
    }
}

extension DatabaseValueDecodable {
    /// The first column of the first row; `nil` without a row, or for NULL.
    package static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Self? {
        try db.rows(sql: sql, arguments: arguments, limit: 1).first.flatMap { $0.columns.first.flatMap { Self($0.value) } }
    }

    /// The first column of every row (NULLs left out).
    package static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Self] {
        try db.rows(sql: sql, arguments: arguments, limit: .max).compactMap { $0.columns.first.flatMap { Self($0.value) } }
    }
}

/// A prepared statement kept by its connection (``Database/cachedStatement(sql:)``).
package final class Statement {
    fileprivate let handle: OpaquePointer
    fileprivate let sql: String
    private unowned let database: Database

    fileprivate init(handle: OpaquePointer, sql: String, database: Database) {
        self.handle = handle
        self.sql = sql
        self.database = database
    }

    /// Runs the statement to its end with `arguments`.
    package func execute(arguments: StatementArguments = []) throws {
        try database.run(handle, sql: sql, arguments: arguments) { _ in true }
    }
}

/// One open connection. Used only inside a ``DatabaseQueue``'s lock.
package final class Database {
    fileprivate let handle: OpaquePointer
    private var cache: [String: Statement] = [:]

    fileprivate init(handle: OpaquePointer) { self.handle = handle }

    /// The rows changed by the last INSERT, UPDATE or DELETE.
    package var changesCount: Int { Int(csqlite_changes(handle)) }

    /// Runs `sql`: one statement with `arguments`, or several separated by `;` (each takes as many
    /// arguments as it has parameters, in order).
    package func execute(sql: String, arguments: StatementArguments = []) throws {
        var remaining = arguments.values[...]
        try sql.withCString { start in
            var next: UnsafePointer<CChar>? = start
            while let current = next, current.pointee != 0 {
                var statement: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let code = csqlite_prepare_v2(handle, current, -1, &statement, &tail)
                guard code == SQLITE_OK else { throw DatabaseError(code: code, handle: handle, sql: sql) }
                next = tail
                guard let statement else { continue } // whitespace or a comment
                defer { csqlite_finalize(statement) }
                let count = Int(csqlite_bind_parameter_count(statement))
                let taken = StatementArguments(Array(remaining.prefix(count)))
                remaining = remaining.dropFirst(count)
                try run(statement, sql: sql, arguments: taken) { _ in true }
            }
        }
        guard remaining.isEmpty else {
            throw DatabaseError(message: "\(remaining.count) arguments more than the statements' parameters", sql: sql)
        }
    }

    /// A statement prepared once and kept while the connection lives.
    package func cachedStatement(sql: String) throws -> Statement {
        if let statement = cache[sql] { return statement }
        var handle: OpaquePointer?
        let code = csqlite_prepare_v3(self.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard code == SQLITE_OK, let handle else { throw DatabaseError(code: code, handle: self.handle, sql: sql) }
        let statement = Statement(handle: handle, sql: sql, database: self)
        cache[sql] = statement
        return statement
    }

    /// The rows of one statement, at most `limit`.
    fileprivate func rows(sql: String, arguments: StatementArguments, limit: Int) throws -> [Row] {
        let statement = try cachedStatement(sql: sql)
        var rows: [Row] = []
        try run(statement.handle, sql: sql, arguments: arguments) { handle in
            let count = csqlite_column_count(handle)
            var columns: [(name: String, value: DatabaseValue)] = []
            columns.reserveCapacity(Int(count))
            for index in 0..<count {
                let name = csqlite_column_name(handle, index).map { String(cString: $0) } ?? ""
                columns.append((name, Self.value(handle, index)))
            }
            rows.append(Row(columns: columns))
            return rows.count < limit
        }
        return rows
    }

    private static func value(_ statement: OpaquePointer, _ index: Int32) -> DatabaseValue {
        switch csqlite_column_type(statement, index) {
        case SQLITE_INTEGER: return .integer(csqlite_column_int64(statement, index))
        case SQLITE_FLOAT: return .real(csqlite_column_double(statement, index))
        case SQLITE_TEXT:
            let count = Int(csqlite_column_bytes(statement, index))
            guard let bytes = csqlite_column_text(statement, index) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(csqlite_column_bytes(statement, index))
            guard let bytes = csqlite_column_blob(statement, index) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default: return .null
        }
    }

    /// Binds `arguments` to `statement` and steps it; `row` sees each row and says whether to go on.
    fileprivate func run(_ statement: OpaquePointer, sql: String, arguments: StatementArguments,
                         row: (OpaquePointer) -> Bool) throws {
        csqlite_reset(statement)
        csqlite_clear_bindings(statement)
        defer { csqlite_reset(statement) }
        guard arguments.values.count == Int(csqlite_bind_parameter_count(statement)) else {
            throw DatabaseError(message: "\(arguments.values.count) arguments for \(csqlite_bind_parameter_count(statement)) parameters", sql: sql)
        }
        for (offset, value) in arguments.values.enumerated() {
            let index = Int32(offset + 1)
            let code = value?.bind(to: statement, at: index) ?? csqlite_bind_null(statement, index)
            guard code == SQLITE_OK else { throw DatabaseError(code: code, handle: handle, sql: sql) }
        }
        while true {
            let code = csqlite_step(statement)
            switch code {
            case SQLITE_ROW:
                if !row(statement) { return }
            case SQLITE_DONE:
                return
            default:
                throw DatabaseError(code: csqlite_extended_errcode(handle), handle: handle, sql: sql)
            }
        }
    }

    fileprivate func close() {
        for statement in cache.values { csqlite_finalize(statement.handle) }
        cache = [:]
        csqlite_close_v2(handle)
    }
}

/// One connection to a database file, used by one thread at a time (a lock around every access).
// @unchecked: `database` is used only under `lock`.
package final class DatabaseQueue: @unchecked Sendable {
    /// How to open the file.
    package struct Configuration {
        /// Open the file read-only (it must exist).
        package var readonly = false
        /// How long a statement waits for another connection's lock before SQLITE_BUSY.
        package var busyTimeoutSeconds: Double = 5
        /// Runs on the new connection before anything else (pragmas).
        package var prepareDatabase: ((Database) throws -> Void)?
        package init() {}
    }

    private let lock = NSLock()
    private var database: Database?

    /// Opens (or creates, unless read-only) the file at `path`. A file that is not a database
    /// fails here with SQLITE_NOTADB, as a damaged header does with SQLITE_CORRUPT.
    package init(path: String, configuration: Configuration = Configuration()) throws {
        var handle: OpaquePointer?
        let flags = (configuration.readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let code = csqlite_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let error = DatabaseError(code: code, handle: handle, sql: nil)
            // No handle when SQLite could not be loaded at all (the error says why).
            if handle != nil { csqlite_close_v2(handle) }
            throw error
        }
        csqlite_extended_result_codes(handle, 1)
        csqlite_busy_timeout(handle, Int32(configuration.busyTimeoutSeconds * 1000))
        let database = Database(handle: handle)
        do {
            // Reading the schema is what finds a file that is not a database.
            _ = try Row.fetchOne(database, sql: "SELECT * FROM sqlite_master LIMIT 1")
            try configuration.prepareDatabase?(database)
        } catch {
            database.close()
            throw error
        }
        self.database = database
    }

    deinit { database?.close() }

    /// `body` on the connection, under the lock, in no transaction of its own.
    package func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        try lock.withLock {
            guard let database else { throw DatabaseError(resultCode: .SQLITE_ERROR, message: "the connection is closed") }
            return try body(database)
        }
    }

    /// `body` in one IMMEDIATE transaction (SQLite's write lock taken at its start), committed
    /// when it returns, rolled back when it throws.
    package func write<T>(_ body: (Database) throws -> T) throws -> T {
        try transaction("BEGIN IMMEDIATE", body)
    }

    /// `body` in one read transaction: every statement in it sees the same state of the file.
    package func read<T>(_ body: (Database) throws -> T) throws -> T {
        try transaction("BEGIN DEFERRED", body)
    }

    private func transaction<T>(_ begin: String, _ body: (Database) throws -> T) throws -> T {
        try writeWithoutTransaction { db in
            try db.cachedStatement(sql: begin).execute()
            do {
                let result = try body(db)
                try db.cachedStatement(sql: "COMMIT").execute()
                return result
            } catch {
                if csqlite_get_autocommit(db.handle) == 0 { try? db.execute(sql: "ROLLBACK") }
                throw error
            }
        }
    }

    /// Closes the connection; later calls throw.
    package func close() throws {
        lock.withLock {
            database?.close()
            database = nil
        }
    }
}
