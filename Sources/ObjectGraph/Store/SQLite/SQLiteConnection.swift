import CSQLite
import Foundation
import Synchronization

typealias SQLiteHandle = OpaquePointer
typealias SQLiteStatementHandle = OpaquePointer

/// An SQLite failure: the result code, SQLite's message and the statement that failed.
struct SQLiteError: Error, CustomStringConvertible {
    var code: Int32
    var message: String
    var sql: String?

    var description: String {
        var text = "SQLite error \(code): \(message)"
        if let sql { text += " (in \(sql))" }
        return text
    }

    var isBusy: Bool { code & 0xff == SQLITE_BUSY || code & 0xff == SQLITE_LOCKED }
    var isConstraint: Bool { code & 0xff == SQLITE_CONSTRAINT }
    var isFull: Bool { code & 0xff == SQLITE_FULL }
    var isNotADatabase: Bool { code & 0xff == SQLITE_NOTADB || code & 0xff == SQLITE_CORRUPT }
    var isReadOnly: Bool { code & 0xff == SQLITE_READONLY || code & 0xff == SQLITE_CANTOPEN }
}

/// One SQLite connection. Not thread-safe: its owner serializes use (a store on its coordinator's queue; any other
/// owner under a lock of its own or on one thread).
package final class SQLiteConnection {
    let handle: SQLiteHandle
    let path: String
    private var cache: [String: SQLiteStatement] = [:]
    /// Statements executed, by first keyword (SELECT, INSERT, UPDATE, DELETE, other).
    var statementCounts = StatementCounts()
    /// The batch request running now (its number, from 1), 0 outside one: inside one a prepared statement counts
    /// once however many times it is stepped (``countingEachStatementOnce(_:)``).
    private(set) var batchNumber = 0
    private var batchesRun = 0
    /// Whether its statements and the rows they examine are costed operations of the calling thread (``Probe``): a
    /// store's connection is; one that reads or writes a file of the harness's own (a run's event log, a check of
    /// the store after the run) is not, so no figure counts it.
    let countsOperations: Bool

    package init(path: String, readOnly: Bool = false, busyTimeout: TimeInterval, countsOperations: Bool = true) throws {
        self.countsOperations = countsOperations
        var db: SQLiteHandle?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: message, sql: nil)
        }
        self.handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, Int32(max(0, busyTimeout * 1000)))
        Self.open.withLock { $0[path, default: 0] += 1 }
    }

    deinit {
        cache.removeAll()
        sqlite3_close_v2(handle)
        Self.open.withLock { counts in
            counts[path, default: 1] -= 1
            if counts[path] == 0 { counts[path] = nil }
        }
    }

    /// Connections of this process open now, by file: what a closed store or a shrunk pool leaves open (tests).
    private static let open = Mutex<[String: Int]>([:])

    /// The connections of this process open on the file at `path` now (writer, readers, any other).
    static func openConnections(path: String) -> Int { open.withLock { $0[path] ?? 0 } }

    /// Raises the error of the last call when `rc` is not one of `ok`.
    func check(_ rc: Int32, sql: String? = nil, ok: Set<Int32> = [SQLITE_OK]) throws {
        guard !ok.contains(rc) else { return }
        throw SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    /// Runs one or more statements with no results.
    package func execute(_ sql: String) throws {
        statementCounts.other += 1
        if countsOperations { Probe.countStatement(.other) }
        try executeUncounted(sql)
    }

    /// Sets a connection up as it opens (a reader of the pool, with the writer's per-connection pragmas): not
    /// counted with the store's statements, as opening the connection is not (how many readers open depends on
    /// the threads, and the counters must not).
    package func configure(_ pragmas: [(name: String, value: String)]) throws {
        for (name, value) in pragmas { try executeUncounted("PRAGMA \(name) = \(value)") }
    }

    private func executeUncounted(_ sql: String) throws {
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errmsg)
        if rc != SQLITE_OK {
            let message = errmsg.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(errmsg)
            throw SQLiteError(code: rc, message: message, sql: sql)
        }
    }

    /// Runs `body` as one batch request (Docs/coredata-behaviour.md §6): each statement it prepares counts once,
    /// in ``statementCounts`` and as one ``CostedOperation/sqlStatement`` of its kind, however many rows it is
    /// re-bound and stepped for. A batch request prepares its statements once and SQLite re-runs them per row;
    /// that per-row work is the request's batch rows (``CostedOperation/batchRowInserted`` and the others).
    func countingEachStatementOnce<T>(_ body: () throws -> T) rethrows -> T {
        precondition(batchNumber == 0, "a batch request inside another one")
        batchesRun += 1
        batchNumber = batchesRun
        defer { batchNumber = 0 }
        return try body()
    }

    /// A prepared statement for `sql`, cached by its text and reset for reuse.
    func cachedStatement(_ sql: String) throws -> SQLiteStatement {
        if let statement = cache[sql] {
            statement.reset()
            return statement
        }
        let statement = try SQLiteStatement(connection: self, sql: sql)
        cache[sql] = statement
        return statement
    }

    /// A prepared statement that is not cached (for one-off SQL such as IN lists of varying length).
    package func statement(_ sql: String) throws -> SQLiteStatement {
        try SQLiteStatement(connection: self, sql: sql)
    }

    var changes: Int { Int(sqlite3_changes(handle)) }
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Rows of a query, each as an array of values.
    func query(_ sql: String, _ arguments: [PropertyValue] = []) throws -> [[SQLiteValue]] {
        let statement = try self.statement(sql)
        try statement.bind(arguments)
        var rows: [[SQLiteValue]] = []
        while try statement.step() {
            rows.append((0..<statement.columnCount).map { statement.value(at: $0) })
        }
        return rows
    }
}

/// Statements run, by kind: deterministic counters, the same on every run of the same work.
package struct StatementCounts: Sendable, Equatable, Codable {
    package var select = 0
    package var insert = 0
    package var update = 0
    package var delete = 0
    package var other = 0

    package init() {}

    package static func + (a: StatementCounts, b: StatementCounts) -> StatementCounts {
        var r = a
        r.select += b.select; r.insert += b.insert; r.update += b.update; r.delete += b.delete; r.other += b.other
        return r
    }

    mutating func record(_ kind: SQLiteStatement.Kind) {
        switch kind {
        case .select: select += 1
        case .insert: insert += 1
        case .update: update += 1
        case .delete: delete += 1
        case .other: other += 1
        }
    }
}

/// A raw column value.
enum SQLiteValue: Equatable {
    case null, integer(Int64), real(Double), text(String), blob(Data)

    var int64: Int64? {
        switch self {
        case .integer(let v): return v
        case .real(let v): return Int64(v)
        default: return nil
        }
    }

    var string: String? {
        if case .text(let s) = self { return s }
        return nil
    }
}

/// A prepared statement. Bind, step, read columns; owned by one connection.
package final class SQLiteStatement {
    enum Kind {
        case select, insert, update, delete, other

        /// The kind the simulation's per-queue counts use.
        var counted: StatementKind {
            switch self {
            case .select: .select
            case .insert: .insert
            case .update: .update
            case .delete: .delete
            case .other: .other
            }
        }
    }

    let handle: SQLiteStatementHandle
    // unowned(unsafe): the connection owns its cached statements and outlives every statement it hands out;
    // a checked unowned reference cost a retain and a release of the connection per step.
    unowned(unsafe) let connection: SQLiteConnection
    /// The connection's ``SQLiteConnection/countsOperations``, kept here for the count a release makes.
    private let countsOperations: Bool
    let sql: String
    let kind: Kind
    let columnCount: Int
    /// The batch request (``SQLiteConnection/batchNumber``) this statement was last counted in, 0 for none.
    private var countedInBatch = 0

    init(connection: SQLiteConnection, sql: String) throws {
        var stmt: SQLiteStatementHandle?
        let rc = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            throw SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(connection.handle)), sql: sql)
        }
        self.handle = stmt
        self.connection = connection
        countsOperations = connection.countsOperations
        self.sql = sql
        self.columnCount = Int(sqlite3_column_count(stmt))
        switch sql.prefix(6).uppercased() {
        case "SELECT": kind = .select
        case "INSERT": kind = .insert
        case "UPDATE": kind = .update
        case "DELETE": kind = .delete
        default: kind = .other
        }
    }

    deinit {
        countScan()
        sqlite3_finalize(handle)
    }

    package func reset() {
        countScan()
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Resets for another run without clearing bindings: for a statement whose every parameter is bound again
    /// before it runs (the per-row INSERT and UPDATE of a save), where clearing them would be wasted work.
    func resetKeepingBindings() {
        countScan()
        sqlite3_reset(handle)
    }

    /// Counts the rows this run of the statement examined, from SQLite's own counters, and zeroes them (so each
    /// run reads its own): at SQLITE_DONE, and at a reset or finalize for a run stopped before it (a lookup that
    /// reads one row). Reads and writes through a WHERE clause only: an INSERT's SELECT (a migration's copy) is
    /// priced per row copied, and other statements go through no rows.
    @inline(__always)
    private func countScan() {
        guard countsOperations, kind == .select || kind == .update || kind == .delete else { return }
        let steps = sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_FULLSCAN_STEP, 1)
        let sorts = sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_SORT, 1)
        let autoIndexRows = sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_AUTOINDEX, 1)
        guard steps | sorts | autoIndexRows != 0 else { return }
        Probe.count(.rowExamined, Int(steps))
        Probe.count(.sortPerformed, Int(sorts))
        Probe.count(.autoIndexRow, Int(autoIndexRows))
    }

    func bind(_ values: [PropertyValue]) throws {
        for (i, v) in values.enumerated() { try bind(v, at: Int32(i + 1)) }
    }

    package func bind(_ value: PropertyValue, at index: Int32) throws {
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(handle, index)
        case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
        case .double(let v): rc = sqlite3_bind_double(handle, index, v)
        case .bool(let v): rc = sqlite3_bind_int64(handle, index, v ? 1 : 0)
        case .date(let v): rc = sqlite3_bind_double(handle, index, v.timeIntervalSinceReferenceDate)
        case .decimal(let v): rc = bindText(v.description, at: index)
        case .string(let v): rc = bindText(v, at: index)
        case .uuid(let v): rc = bindText(v.uuidString, at: index)
        case .uri(let v): rc = bindText(v.absoluteString, at: index)
        case .data(let v):
            rc = v.withUnsafeBytes { buf in
                sqlite3_bind_blob(handle, index, buf.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buf.count), csqlite_transient())
            }
        case .objectID(let id): rc = sqlite3_bind_int64(handle, index, id.key)
        }
        if rc == SQLITE_OK { return }  // the common case, without building `check`'s default set per bind
        try connection.check(rc, sql: sql)
    }

    /// Binds text with its byte length: a string may contain NUL, which a C-string length would cut off
    /// (found by the predicate fuzzer: `"a\0b"` was stored and compared as `"a"`).
    private func bindText(_ text: String, at index: Int32) -> Int32 {
        // Native strings are contiguous UTF-8: bind them in place, without the mutable copy `withUTF8` needs.
        if let rc = text.utf8.withContiguousStorageIfAvailable({ bindUTF8($0, at: index) }) { return rc }
        var text = text
        return text.withUTF8 { bindUTF8($0, at: index) }
    }

    private func bindUTF8(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int32) -> Int32 {
        // An empty buffer may have no address, and a NULL pointer would bind NULL instead of "".
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return sqlite3_bind_text(handle, index, "", 0, csqlite_transient()) }
        return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
            sqlite3_bind_text(handle, index, $0, Int32(bytes.count), csqlite_transient())
        }
    }

    func bindInt(_ value: Int64, at index: Int32) {
        sqlite3_bind_int64(handle, index, value)
    }

    /// Steps once; true when a row is available.
    @discardableResult
    package func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE {
            countScan()
            // Inside a batch request, a statement stepped again is the same prepared statement re-run for
            // another row: counted once per request.
            let batch = connection.batchNumber
            if batch == 0 || countedInBatch != batch {
                countedInBatch = batch
                connection.statementCounts.record(kind)
                if countsOperations { Probe.countStatement(kind.counted) }
            }
            return false
        }
        throw SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(connection.handle)), sql: sql)
    }

    /// Runs a statement that returns no rows; returns the number of rows it changed.
    @discardableResult
    func run() throws -> Int {
        while try step() {}
        return connection.changes
    }

    package func isNull(at column: Int) -> Bool { sqlite3_column_type(handle, Int32(column)) == SQLITE_NULL }
    package func int64(at column: Int) -> Int64 { sqlite3_column_int64(handle, Int32(column)) }
    func double(at column: Int) -> Double { sqlite3_column_double(handle, Int32(column)) }

    package func string(at column: Int) -> String {
        guard let p = sqlite3_column_text(handle, Int32(column)) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(handle, Int32(column)))), as: UTF8.self)
    }

    func data(at column: Int) -> Data {
        let n = Int(sqlite3_column_bytes(handle, Int32(column)))
        guard n > 0, let p = sqlite3_column_blob(handle, Int32(column)) else { return Data() }
        return Data(bytes: p, count: n)
    }

    func value(at column: Int) -> SQLiteValue {
        switch sqlite3_column_type(handle, Int32(column)) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER: return .integer(int64(at: column))
        case SQLITE_FLOAT: return .real(double(at: column))
        case SQLITE_TEXT: return .text(string(at: column))
        default: return .blob(data(at: column))
        }
    }
}
