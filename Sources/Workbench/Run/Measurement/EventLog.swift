import Foundation
import ObjectGraph

/// A variant's write events, kept on disk rather than in memory. Events are buffered a few
/// thousand at a time and appended to a SQLite table in the variant's temporary folder (removed with it); the
/// oracle reads them back in key order, one key's history at a time, and events.jsonl gets a bounded part of
/// them (``kept(findingKeys:limit:)``). Without a folder (tests that build a recorder by hand) the events stay
/// in memory. Thread-safe: actors record from their own threads.
final class EventLog: @unchecked Sendable {  // every mutable member is guarded by `lock`
    private let lock = NSLock()
    private var buffer: [WriteEvent] = []
    private var db: SQLiteConnection?
    private var finished = false
    private(set) var failure: String?
    /// Events recorded so far.
    private var recorded = 0
    /// Events buffered before they go to disk.
    static let batch = 4096

    init(directory: URL?) {
        guard let directory else { return }
        do {
            let file = try SQLiteConnection(path: directory.appendingPathComponent("events.sqlite").path, busyTimeout: 0, countsOperations: false)
            // A scratch table, rebuilt by nobody: no journal, no syncs, a small page cache.
            try file.configure([("journal_mode", "OFF"), ("synchronous", "OFF"), ("cache_size", "-2048")])
            try file.execute("""
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
            try db.execute("BEGIN")
            let statement = try db.statement("INSERT INTO e(key, actor, role, policy, field, intended, committed, version, time, step, changed, deleted) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)")
            for e in buffer {
                statement.reset()
                try statement.bind(.integer(e.key), at: 1)
                try statement.bind(.string(e.actor), at: 2)
                try statement.bind(.string(e.role), at: 3)
                try statement.bind(.string(e.policy), at: 4)
                try statement.bind(.string(e.field), at: 5)
                try statement.bind(e.intended.map(PropertyValue.string) ?? .null, at: 6)
                try statement.bind(.string(e.committed), at: 7)
                try statement.bind(.integer(e.version), at: 8)
                try statement.bind(.integer(Int64(bitPattern: e.time)), at: 9)
                try statement.bind(e.step.map { .integer(Int64($0)) } ?? .null, at: 10)
                try statement.bind(e.changed.map { .integer($0 ? 1 : 0) } ?? .null, at: 11)
                try statement.bind(e.deleted.map { .integer($0 ? 1 : 0) } ?? .null, at: 12)
                try statement.step()
            }
            try db.execute("COMMIT")
            buffer.removeAll(keepingCapacity: true)
        } catch {
            try? db.execute("ROLLBACK")
            failure = failure ?? "\(error)"
        }
    }

    /// Writes what is buffered and indexes the table by key; nothing is recorded after.
    func finish() {
        lock.withLock {
            guard !finished else { return }
            finished = true
            flushLocked()
            do { try db?.execute("CREATE INDEX e_key ON e(key, seq)") } catch { failure = failure ?? "\(error)" }
        }
    }

    private static func event(_ row: SQLiteStatement) -> WriteEvent {
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
        try db.forEachRow("SELECT \(Self.columns) FROM e ORDER BY key, seq") { row in
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
            try db.forEachRow("SELECT \(Self.columns) FROM e WHERE key IN (\(keys)) ORDER BY key, seq LIMIT \(limit - result.count)") { result.append(Self.event($0)) }
        }
        if result.count < limit {
            let keys = wanted.isEmpty ? "" : " WHERE key NOT IN (\(wanted.map(String.init).joined(separator: ",")))"
            try db.forEachRow("SELECT \(Self.columns) FROM e\(keys) ORDER BY key, seq LIMIT \(limit - result.count)") { result.append(Self.event($0)) }
        }
        return result
    }
}

extension SQLiteConnection {
    /// Runs a query, calling `row` with the statement on each result row: one row in memory at a time, for the
    /// workbench's own files (the event log) and read-only queries of a run's store (the oracle's duplicate and
    /// batch checks).
    func forEachRow(_ sql: String, _ row: (SQLiteStatement) throws -> Void) throws {
        let statement = try self.statement(sql)
        defer { statement.reset() }
        while try statement.step() { try row(statement) }
    }
}

extension SQLiteStatement {
    /// Column `column` of the current row as an integer, nil when NULL.
    func int(_ column: Int) -> Int64? { isNull(at: column) ? nil : int64(at: column) }

    /// Column `column` of the current row as text, nil when NULL.
    func text(_ column: Int) -> String? { isNull(at: column) ? nil : string(at: column) }
}
