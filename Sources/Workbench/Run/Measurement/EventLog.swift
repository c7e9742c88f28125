import CSQLite
import Foundation

/// A variant's write events, kept on disk rather than in memory. Events are buffered a few
/// thousand at a time and appended to a SQLite table in the variant's temporary folder (removed with it); the
/// oracle reads them back in key order, one key's history at a time, and events.jsonl gets a bounded part of
/// them (``kept(findingKeys:limit:)``). Without a folder (tests that build a recorder by hand) the events stay
/// in memory. Thread-safe: actors record from their own threads.
final class EventLog: @unchecked Sendable {  // every mutable member is guarded by `lock`
    private let lock = NSLock()
    private var buffer: [WriteEvent] = []
    private var db: SQLiteFile?
    private var finished = false
    private(set) var failure: String?
    /// Events recorded so far.
    private var recorded = 0
    /// Events buffered before they go to disk.
    static let batch = 4096

    init(directory: URL?) {
        guard let directory else { return }
        do {
            let file = try SQLiteFile(path: directory.appendingPathComponent("events.sqlite").path, readOnly: false)
            // A scratch table, rebuilt by nobody: no journal, no syncs, a small page cache.
            try file.exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-2048;")
            try file.exec("""
                CREATE TABLE e(seq INTEGER PRIMARY KEY, key INTEGER NOT NULL, actor TEXT, role TEXT, policy TEXT, field TEXT,
                intended TEXT, committed TEXT, version INTEGER, time INTEGER, step INTEGER, changed INTEGER, deleted INTEGER)
                """)
            db = file
        } catch {
            failure = "\(error)"
        }
    }

    var count: Int { lock.withLock { recorded } }

    func append(_ events: [WriteEvent]) {
        guard !events.isEmpty else { return }
        lock.withLock {
            recorded += events.count
            buffer.append(contentsOf: events)
            if db != nil, buffer.count >= Self.batch { flushLocked() }
        }
    }

    private func flushLocked() {
        guard let db, !buffer.isEmpty else { return }
        do {
            try db.exec("BEGIN")
            try db.prepare("INSERT INTO e(key, actor, role, policy, field, intended, committed, version, time, step, changed, deleted) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)") { statement in
                for e in buffer {
                    statement.reset()
                    statement.bind(1, e.key)
                    statement.bind(2, e.actor)
                    statement.bind(3, e.role)
                    statement.bind(4, e.policy)
                    statement.bind(5, e.field)
                    statement.bind(6, e.intended)
                    statement.bind(7, e.committed)
                    statement.bind(8, e.version)
                    statement.bind(9, Int64(bitPattern: e.time))
                    statement.bind(10, e.step.map(Int64.init))
                    statement.bind(11, e.changed.map { $0 ? Int64(1) : 0 })
                    statement.bind(12, e.deleted.map { $0 ? Int64(1) : 0 })
                    try statement.step()
                }
            }
            try db.exec("COMMIT")
            buffer.removeAll(keepingCapacity: true)
        } catch {
            try? db.exec("ROLLBACK")
            failure = failure ?? "\(error)"
        }
    }

    /// Writes what is buffered and indexes the table by key; nothing is recorded after.
    func finish() {
        lock.withLock {
            guard !finished else { return }
            finished = true
            flushLocked()
            do { try db?.exec("CREATE INDEX e_key ON e(key, seq)") } catch { failure = failure ?? "\(error)" }
        }
    }

    private static func event(_ row: SQLiteFile.Row) -> WriteEvent {
        var e = WriteEvent(actor: row.text(1) ?? "", role: row.text(2) ?? "", policy: row.text(3) ?? "", key: row.int(0) ?? 0, field: row.text(4) ?? "",
                           intended: row.text(5), committed: row.text(6) ?? "", version: row.int(7) ?? 0, time: UInt64(bitPattern: row.int(8) ?? 0),
                           step: row.int(9).map(Int.init))
        if let changed = row.int(10) { e.changed = changed != 0 }
        if let deleted = row.int(11) { e.deleted = deleted != 0 }
        return e
    }

    private static let columns = "key, actor, role, policy, field, intended, committed, version, time, step, changed, deleted"

    /// Each key's events in ascending key order, each history in recording order; one key in memory at a time.
    func forEachKey(_ body: (Int64, [WriteEvent]) throws -> Void) throws {
        finish()
        let (db, memory) = lock.withLock { (self.db, self.db == nil ? buffer : []) }
        guard let db else {
            for (key, events) in Dictionary(grouping: memory, by: \.key).sorted(by: { $0.key < $1.key }) { try body(key, events) }
            return
        }
        var key: Int64?
        var history: [WriteEvent] = []
        try db.query("SELECT \(Self.columns) FROM e ORDER BY key, seq") { row in
            let e = Self.event(row)
            if e.key != key, let done = key {
                try body(done, history)
                history.removeAll(keepingCapacity: true)
            }
            key = e.key
            history.append(e)
        }
        if let key { try body(key, history) }
    }

    /// What events.jsonl keeps: every event of the keys with findings, then the others in key order, `limit` in
    /// all (recording order within a key).
    func kept(findingKeys: [Int64], limit: Int) throws -> [WriteEvent] {
        finish()
        let wanted = Array(Set(findingKeys)).sorted()
        let (db, memory) = lock.withLock { (self.db, self.db == nil ? buffer : []) }
        var result: [WriteEvent] = []
        guard let db else {
            let byKey = Dictionary(grouping: memory, by: \.key)
            for key in wanted { result += byKey[key] ?? [] }
            let chosen = Set(wanted)
            for (key, events) in byKey.sorted(by: { $0.key < $1.key }) where !chosen.contains(key) { result += events }
            return Array(result.prefix(limit))
        }
        for start in stride(from: 0, to: wanted.count, by: 500) where result.count < limit {
            let keys = wanted[start..<min(start + 500, wanted.count)].map(String.init).joined(separator: ",")
            try db.query("SELECT \(Self.columns) FROM e WHERE key IN (\(keys)) ORDER BY key, seq LIMIT \(limit - result.count)") { result.append(Self.event($0)) }
        }
        if result.count < limit {
            let keys = wanted.isEmpty ? "" : " WHERE key NOT IN (\(wanted.map(String.init).joined(separator: ",")))"
            try db.query("SELECT \(Self.columns) FROM e\(keys) ORDER BY key, seq LIMIT \(limit - result.count)") { result.append(Self.event($0)) }
        }
        return result
    }
}

/// A minimal SQLite connection for the workbench's own files (the event log) and read-only queries of a run's
/// store (the oracle's duplicate and batch checks).
final class SQLiteFile {
    private var db: OpaquePointer?

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    init(path: String, readOnly: Bool) throws {
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        guard sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            db = nil
            throw Failure(description: "cannot open \(path): \(message)")
        }
    }

    deinit { sqlite3_close_v2(db) }

    private var message: String { db.map { String(cString: sqlite3_errmsg($0)) } ?? "closed" }

    func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw Failure(description: "\(sql.prefix(60)): \(message)") }
    }

    final class Statement {
        let handle: OpaquePointer
        init(_ handle: OpaquePointer) { self.handle = handle }
        func reset() {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        func bind(_ index: Int32, _ value: Int64?) {
            if let value { sqlite3_bind_int64(handle, index, value) } else { sqlite3_bind_null(handle, index) }
        }
        func bind(_ index: Int32, _ value: String?) {
            // SQLITE_TRANSIENT: SQLite copies the text.
            if let value { sqlite3_bind_text(handle, index, value, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self)) } else { sqlite3_bind_null(handle, index) }
        }
        func step() throws {
            let rc = sqlite3_step(handle)
            guard rc == SQLITE_DONE || rc == SQLITE_ROW else { throw Failure(description: "step failed (\(rc))") }
        }
    }

    struct Row {
        let handle: OpaquePointer
        func int(_ column: Int32) -> Int64? { sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, column) }
        func text(_ column: Int32) -> String? { sqlite3_column_text(handle, column).map { String(cString: $0) } }
    }

    func prepare(_ sql: String, _ body: (Statement) throws -> Void) throws {
        var handle: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &handle, nil) == SQLITE_OK, let handle else { throw Failure(description: "\(sql.prefix(60)): \(message)") }
        defer { sqlite3_finalize(handle) }
        try body(Statement(handle))
    }

    /// Runs a query, calling `row` for each result row.
    func query(_ sql: String, _ row: (Row) throws -> Void) throws {
        try prepare(sql) { statement in
            while true {
                let rc = sqlite3_step(statement.handle)
                if rc == SQLITE_DONE { return }
                guard rc == SQLITE_ROW else { throw Failure(description: "\(sql.prefix(60)): \(message)") }
                try row(Row(handle: statement.handle))
            }
        }
    }
}
