import Foundation
import GRDB
import Synchronization

/// The GRDB record of the peer: hand-written row decoding and encoding (GRDB's fastest record form), dates
/// stored as seconds since the reference date, as the Core Data layout stores them.
public struct GItem: FetchableRecord, MutablePersistableRecord, Sendable {
    public static let databaseTableName = "item"
    public var id: Int64?
    public var remoteID: Int64
    public var name: String?
    public var price: Double
    public var createdAt: Date?
    public var groupID: Int64?

    public init(_ i: Int) {
        remoteID = Int64(i)
        name = Schema.name(i)
        price = Schema.price(i)
        createdAt = Schema.date(i)
        groupID = Int64(Schema.group(i) + 1)
    }

    public init(row: Row) throws {
        id = row[0]
        remoteID = row[1]
        name = row[2]
        price = row[3]
        createdAt = (row[4] as Double?).map(Date.init(timeIntervalSinceReferenceDate:))
        groupID = row[5]
    }

    public func encode(to container: inout PersistenceContainer) throws {
        container["id"] = id
        container["remoteID"] = remoteID
        container["name"] = name
        container["price"] = price
        container["createdAt"] = createdAt?.timeIntervalSinceReferenceDate
        container["groupID"] = groupID
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    public static var databaseSelection: [any SQLSelectable] { [Column("id"), Column("remoteID"), Column("name"), Column("price"), Column("createdAt"), Column("groupID")] }
}

/// The GRDB peer: a `DatabasePool` (WAL, `synchronous = NORMAL`, foreign keys off as in the raw peer and in ours),
/// one `write` per commit. Two forms: records (`GItem`), and the form an expert picks for speed,
/// cached statements (`db.cachedStatement`) inside `write`.
public final class GRDBPeer: @unchecked Sendable {  // the pool is thread-safe
    public let scratch: Scratch
    public let pool: DatabasePool

    public init() throws {
        scratch = Scratch("grdb")
        var configuration = Configuration()
        // The same settings as the other peers: GRDB turns foreign keys on by default, SQLite and ours leave them off.
        configuration.foreignKeysEnabled = false
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        pool = try DatabasePool(path: scratch.file("grdb.sqlite"), configuration: configuration)
        try pool.write { db in
            try db.execute(sql: Schema.sql)
            for g in 0..<Schema.groupCount {
                try db.execute(sql: "INSERT INTO grp (id, name) VALUES (?, ?)", arguments: [g + 1, "group \(g)"])
            }
        }
    }

    deinit { scratch.remove() }

    /// Inserts item records `range` in `DatabasePool.write` transactions of `chunk`; `afterCommit` is told after each.
    public func importItems(_ range: Range<Int>, chunk: Int, inEachCommit: ((Database, Int) throws -> Void)? = nil) throws {
        for start in stride(from: range.lowerBound, to: range.upperBound, by: chunk) {
            try pool.write { db in
                for i in start..<min(start + chunk, range.upperBound) {
                    var item = GItem(i)
                    try item.insert(db)
                }
                try inEachCommit?(db, start)
            }
        }
    }

    /// Inserts items `range` through one cached INSERT statement, in `write` transactions of `chunk`.
    public func importItemsCached(_ range: Range<Int>, chunk: Int) throws {
        for start in stride(from: range.lowerBound, to: range.upperBound, by: chunk) {
            try pool.write { db in
                let insert = try db.cachedStatement(sql: "INSERT INTO item (remoteID, name, price, createdAt, groupID) VALUES (?, ?, ?, ?, ?)")
                for i in start..<min(start + chunk, range.upperBound) {
                    try insert.execute(arguments: [Int64(i), Schema.name(i), Schema.price(i), Schema.date(i).timeIntervalSinceReferenceDate, Int64(Schema.group(i) + 1)])
                }
            }
        }
    }

    /// Updates items `range` by unique ID as an app does (read, then write): per transaction of `chunk`, one cached
    /// SELECT of the chunk's rows by ID, then one cached UPDATE of the three changed columns per row found.
    public func updateItemsCached(_ range: Range<Int>, chunk: Int, round: Int) throws {
        var changed = 0
        for start in stride(from: range.lowerBound, to: range.upperBound, by: chunk) {
            let ids = Array(start..<min(start + chunk, range.upperBound))
            changed += try pool.write { db in
                let marks = Array(repeating: "?", count: ids.count).joined(separator: ", ")
                let select = try db.cachedStatement(sql: "SELECT id, remoteID FROM item WHERE remoteID IN (\(marks))")
                let rows = try Row.fetchAll(select, arguments: StatementArguments(ids.map { Int64($0) }))
                let update = try db.cachedStatement(sql: "UPDATE item SET name = ?, price = ?, createdAt = ? WHERE id = ?")
                for row in rows {
                    let id: Int64 = row[0], remoteID: Int64 = row[1]
                    let record = PerfRecord(Int(remoteID), round: round)
                    try update.execute(arguments: [record.name, record.price, record.createdAt.timeIntervalSinceReferenceDate, id])
                }
                return rows.count
            }
        }
        precondition(changed == range.count, "GRDB cached update changed \(changed) of \(range.count)")
    }

    /// Updates items `range` by unique ID: per transaction of `chunk`, one fetch of the chunk's records by ID,
    /// then each record changed and its three changed columns updated (the same shape as the Ambar import operation).
    public func updateItems(_ range: Range<Int>, chunk: Int, round: Int) throws {
        var changed = 0
        for start in stride(from: range.lowerBound, to: range.upperBound, by: chunk) {
            let ids = Array(start..<min(start + chunk, range.upperBound))
            changed += try pool.write { db in
                var items = try GItem.filter(ids.contains(Column("remoteID"))).fetchAll(db)
                for index in items.indices {
                    let record = PerfRecord(Int(items[index].remoteID), round: round)
                    items[index].name = record.name
                    items[index].price = record.price
                    items[index].createdAt = record.createdAt
                    try items[index].update(db, columns: ["name", "price", "createdAt"])
                }
                return items.count
            }
        }
        precondition(changed == range.count, "GRDB update changed \(changed) of \(range.count)")
    }

    /// `fetchAll` of every item record.
    public func fetchAll() throws -> Int {
        let items = try pool.read { db in try GItem.fetchAll(db) }
        var sum = 0.0
        for item in items { sum += item.price }
        keep(sum)
        return items.count
    }
}
