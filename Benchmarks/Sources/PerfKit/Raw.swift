import Foundation
import GRDBSQLite

/// The raw-SQLite peer: one connection, prepared statements reused for every row, explicit transactions.
public final class RawPeer {
    public let scratch: Scratch
    let db: OpaquePointer
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    public init() throws {
        scratch = Scratch("raw")
        var handle: OpaquePointer?
        guard sqlite3_open_v2(scratch.file("raw.sqlite"), &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK, let handle else {
            throw PeerError("cannot open raw store")
        }
        db = handle
        try exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
        try exec(Schema.sql)
        try exec("BEGIN")
        let insert = try prepare("INSERT INTO grp (id, name) VALUES (?, ?)")
        for g in 0..<Schema.groupCount {
            sqlite3_bind_int64(insert, 1, Int64(g + 1))
            bindText(insert, 2, "group \(g)")
            try step(insert)
        }
        sqlite3_finalize(insert)
        try exec("COMMIT")
    }

    deinit {
        sqlite3_close_v2(db)
        scratch.remove()
    }

    func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw PeerError(String(cString: sqlite3_errmsg(db))) }
    }

    func prepare(_ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK, let statement else {
            throw PeerError(String(cString: sqlite3_errmsg(db)))
        }
        return statement
    }

    func step(_ statement: OpaquePointer) throws {
        guard sqlite3_step(statement) == SQLITE_DONE else { throw PeerError(String(cString: sqlite3_errmsg(db))) }
        sqlite3_reset(statement)
    }

    func bindText(_ statement: OpaquePointer, _ index: Int32, _ text: String) {
        var text = text
        text.withUTF8 { buffer in
            _ = sqlite3_bind_text(statement, index, UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(buffer.count), Self.transient)
        }
    }

    /// Inserts items `range`, committing every `chunk`.
    public func importItems(_ range: Range<Int>, chunk: Int) throws {
        let insert = try prepare("INSERT INTO item (remoteID, name, price, createdAt, groupID) VALUES (?, ?, ?, ?, ?)")
        defer { sqlite3_finalize(insert) }
        for start in stride(from: range.lowerBound, to: range.upperBound, by: chunk) {
            try exec("BEGIN IMMEDIATE")
            for i in start..<min(start + chunk, range.upperBound) {
                sqlite3_bind_int64(insert, 1, Int64(i))
                bindText(insert, 2, Schema.name(i))
                sqlite3_bind_double(insert, 3, Schema.price(i))
                sqlite3_bind_double(insert, 4, Schema.date(i).timeIntervalSinceReferenceDate)
                sqlite3_bind_int64(insert, 5, Int64(Schema.group(i) + 1))
                try step(insert)
            }
            try exec("COMMIT")
        }
    }

    /// Updates items `range` by unique ID as an app does (read, then write; a blind UPDATE skips
    /// the read the object graph must do): per transaction of `chunk`, one prepared SELECT of the chunk's rows by
    /// ID, then one prepared UPDATE of the three changed columns per row found, by its primary key.
    public func updateItems(_ range: Range<Int>, chunk: Int, round: Int) throws {
        let update = try prepare("UPDATE item SET name = ?, price = ?, createdAt = ? WHERE id = ?")
        defer { sqlite3_finalize(update) }
        var selects: [Int: OpaquePointer] = [:]
        defer { for s in selects.values { sqlite3_finalize(s) } }
        var changed = 0
        for start in stride(from: range.lowerBound, to: range.upperBound, by: chunk) {
            let ids = start..<min(start + chunk, range.upperBound)
            let select: OpaquePointer
            if let cached = selects[ids.count] { select = cached } else {
                select = try prepare("SELECT id, remoteID FROM item WHERE remoteID IN (\(Array(repeating: "?", count: ids.count).joined(separator: ", ")))")
                selects[ids.count] = select
            }
            try exec("BEGIN IMMEDIATE")
            for (k, i) in ids.enumerated() { sqlite3_bind_int64(select, Int32(k + 1), Int64(i)) }
            var found: [(Int64, Int64)] = []
            found.reserveCapacity(ids.count)
            while sqlite3_step(select) == SQLITE_ROW { found.append((sqlite3_column_int64(select, 0), sqlite3_column_int64(select, 1))) }
            sqlite3_reset(select)
            for (id, remoteID) in found {
                let record = PerfRecord(Int(remoteID), round: round)
                bindText(update, 1, record.name)
                sqlite3_bind_double(update, 2, record.price)
                sqlite3_bind_double(update, 3, record.createdAt.timeIntervalSinceReferenceDate)
                sqlite3_bind_int64(update, 4, id)
                try step(update)
                changed += Int(sqlite3_changes(db))
            }
            try exec("COMMIT")
        }
        precondition(changed == range.count, "raw update changed \(changed) of \(range.count)")
    }

    /// Selects every item, stepping every column into Swift values.
    public func fetchAll() throws -> Int {
        let select = try prepare("SELECT id, remoteID, name, price, createdAt, groupID FROM item")
        defer { sqlite3_finalize(select) }
        var count = 0
        var sum = 0.0
        var chars = 0
        while sqlite3_step(select) == SQLITE_ROW {
            count += 1
            sum += Double(sqlite3_column_int64(select, 0) + sqlite3_column_int64(select, 1))
            if let text = sqlite3_column_text(select, 2) { chars += String(cString: text).utf8.count }
            sum += sqlite3_column_double(select, 3)
            sum += sqlite3_column_double(select, 4)
            sum += Double(sqlite3_column_int64(select, 5))
        }
        keep((sum, chars))
        return count
    }
}

public struct PeerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ message: String) { description = message }
}
