import CSQLite
import Foundation

/// Persistent history in the store file (semantics §3.6): `ATRANSACTION` and `ACHANGE`, written in the same
/// SQLite transaction as the save or batch request they record.
extension SQLiteStore {
    static let historySchema = [
        "CREATE TABLE IF NOT EXISTS ATRANSACTION (Z_PK INTEGER PRIMARY KEY AUTOINCREMENT, ZTIMESTAMP REAL, ZAUTHOR VARCHAR, ZCONTEXTNAME VARCHAR, ZBUNDLEID VARCHAR, ZPROCESSID VARCHAR)",
        "CREATE TABLE IF NOT EXISTS ACHANGE (Z_PK INTEGER PRIMARY KEY AUTOINCREMENT, ZCHANGETYPE INTEGER, ZENTITY INTEGER, ZENTITYPK INTEGER, ZTRANSACTIONID INTEGER, ZCOLUMNS VARCHAR, ZTOMBSTONE VARCHAR)",
        "CREATE INDEX IF NOT EXISTS ACHANGE_ZTRANSACTIONID_INDEX ON ACHANGE (ZTRANSACTIONID)",
    ]

    struct HistoryRecord {
        var inserts: [ManagedObjectID] = []
        var updates: [(ManagedObjectID, [String])] = []
        var deletes: [(ManagedObjectID, [String: PropertyValue])] = []
        var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty }
    }

    /// Writes one history transaction; call inside the write transaction. Its timestamp is the executor's date
    /// (``Execution/date()``): the wall clock, or the virtual clock's inside a simulation.
    func recordHistory(_ record: HistoryRecord, author: String?, contextName: String?) throws -> PersistentHistoryToken? {
        guard historyTracking, !record.isEmpty else { return nil }
        let tx = try connection.cachedStatement("INSERT INTO ATRANSACTION (ZTIMESTAMP, ZAUTHOR, ZCONTEXTNAME, ZBUNDLEID, ZPROCESSID) VALUES (?, ?, ?, ?, ?)")
        try tx.bind([
            .double(Execution.date().timeIntervalSinceReferenceDate), author.map { .string($0) } ?? .null, contextName.map { .string($0) } ?? .null,
            .string(ProcessInfo.processInfo.processName), .string(String(ProcessInfo.processInfo.processIdentifier)),
        ])
        try tx.run()
        let number = connection.lastInsertRowID
        let change = try connection.cachedStatement("INSERT INTO ACHANGE (ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS, ZTOMBSTONE) VALUES (?, ?, ?, ?, ?, ?)")
        func write(_ type: PersistentHistoryChangeType, _ id: ManagedObjectID, _ columns: [String]?, _ tombstone: [String: PropertyValue]?) throws {
            change.reset()
            try change.bind([
                .integer(Int64(type.rawValue)), .integer(Int64(id.entity.entityNumber)), .integer(id.key), .integer(number),
                columns.map { .string($0.joined(separator: ",")) } ?? .null,
                tombstone.map { .string(Self.encodeTombstone($0)) } ?? .null,
            ])
            try change.run()
        }
        for id in record.inserts { try write(.insert, id, nil, nil) }
        for (id, columns) in record.updates { try write(.update, id, columns, nil) }
        for (id, tombstone) in record.deletes { try write(.delete, id, nil, tombstone) }
        return PersistentHistoryToken(transactionNumber: number, storeIdentifier: identifier)
    }

    func history(after number: Int64?, since date: Date?) throws -> [PersistentHistoryTransaction] {
        guard historyTracking else {
            throw ObjectGraphError(.persistentStoreOperation, "persistent history tracking is off for this store", storePath: url?.path)
        }
        var sql = "SELECT Z_PK, ZTIMESTAMP, ZAUTHOR, ZCONTEXTNAME, ZBUNDLEID, ZPROCESSID FROM ATRANSACTION"
        var arguments: [PropertyValue] = []
        if let number {
            sql += " WHERE Z_PK > ?"
            arguments.append(.integer(number))
        } else if let date {
            sql += " WHERE ZTIMESTAMP >= ?"
            arguments.append(.double(date.timeIntervalSinceReferenceDate))
        }
        sql += " ORDER BY Z_PK"
        let entitiesByNumber = Dictionary(uniqueKeysWithValues: model.entities.map { ($0.entityNumber, $0) })
        return try runReading {
            if let number { try checkNotExpired(after: number) }
            var transactions: [PersistentHistoryTransaction] = []
            var index: [Int64: Int] = [:]
            let statement = try connection.statement(sql)
            try statement.bind(arguments)
            while try statement.step() {
                let n = statement.int64(at: 0)
                index[n] = transactions.count
                transactions.append(PersistentHistoryTransaction(
                    transactionNumber: n, timestamp: Date(timeIntervalSinceReferenceDate: statement.double(at: 1)),
                    author: statement.isNull(at: 2) ? nil : statement.string(at: 2),
                    contextName: statement.isNull(at: 3) ? nil : statement.string(at: 3), storeIdentifier: identifier,
                    bundleID: statement.string(at: 4), processID: statement.string(at: 5), changes: []))
            }
            guard let first = transactions.first?.transactionNumber else { return [] }
            let changes = try connection.statement("SELECT Z_PK, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS, ZTOMBSTONE FROM ACHANGE WHERE ZTRANSACTIONID >= ? ORDER BY Z_PK")
            changes.bindInt(first, at: 1)
            while try changes.step() {
                guard let t = index[changes.int64(at: 4)], let entity = entitiesByNumber[Int(changes.int64(at: 2))],
                      let type = PersistentHistoryChangeType(rawValue: Int(changes.int64(at: 1))) else { continue }
                let id = ManagedObjectID(entity: entity, primaryKey: changes.int64(at: 3), storeNumber: storeNumber)
                let columns = changes.isNull(at: 5) ? nil : Set(changes.string(at: 5).split(separator: ",").map(String.init))
                let tombstone = changes.isNull(at: 6) ? nil : Self.decodeTombstone(changes.string(at: 6))
                transactions[t].changes!.append(PersistentHistoryChange(
                    changeID: changes.int64(at: 0), changedObjectID: id, changeType: type, updatedProperties: columns, tombstone: tombstone))
            }
            return transactions
        }
    }

    func deleteHistory(before number: Int64?, before date: Date?) throws -> Int {
        guard historyTracking else { return 0 }
        return try runWriting {
            let condition: String
            let argument: PropertyValue
            if let number {
                condition = "Z_PK < ?"
                argument = .integer(number)
            } else {
                condition = "ZTIMESTAMP < ?"
                argument = .double(date?.timeIntervalSinceReferenceDate ?? 0)
            }
            let changes = try connection.statement("DELETE FROM ACHANGE WHERE ZTRANSACTIONID IN (SELECT Z_PK FROM ATRANSACTION WHERE \(condition))")
            try changes.bind([argument])
            try changes.run()
            let tx = try connection.statement("DELETE FROM ATRANSACTION WHERE \(condition)")
            try tx.bind([argument])
            return try tx.run()
        }
    }

    /// The newest transaction's token. Recorded on Apple: a brand-new store has one too (number
    /// 0, before any transaction), and a store whose history was all purged keeps the number of the last one.
    func currentHistoryToken() throws -> PersistentHistoryToken? {
        guard historyTracking else { return nil }
        return try runReading {
            PersistentHistoryToken(transactionNumber: try lastTransactionNumber(), storeIdentifier: identifier)
        }
    }

    /// The number of the newest transaction ever written (AUTOINCREMENT never reuses one), 0 before the first.
    private func lastTransactionNumber() throws -> Int64 {
        let rows = try connection.query("SELECT seq FROM sqlite_sequence WHERE name = 'ATRANSACTION'")
        return rows.first?[0].int64 ?? 0
    }

    /// A token whose transaction was purged has expired (134301). Purges delete the oldest
    /// transactions, so once anything was purged, a token older than the oldest survivor has expired; with none
    /// surviving, every token but the newest (the current token keeps working).
    func checkNotExpired(after number: Int64) throws {
        let oldest = try connection.query("SELECT min(Z_PK) FROM ATRANSACTION").first?[0].int64
        let last = try lastTransactionNumber()
        guard (oldest ?? last + 1) > 1 else { return }  // nothing was ever purged
        if number < (oldest ?? last) {
            throw ObjectGraphError(.persistentHistoryTokenExpired,
                                   "history after \(PersistentHistoryToken(transactionNumber: number, storeIdentifier: identifier)) was purged; fetch from a newer token",
                                   storePath: url?.path)
        }
    }

    /// Docs/coredata-behaviour.md §3.6: a token in a history predicate must name a transaction the history holds.
    /// The initial token (number 0) names none, and a purged token's transaction is gone, the current token's
    /// included once everything was purged: 134301, as for an expired token.
    func checkHistoryHolds(transaction number: Int64) throws {
        guard historyTracking else {
            throw ObjectGraphError(.persistentStoreOperation, "persistent history tracking is off for this store", storePath: url?.path)
        }
        let held = try runReading {
            let statement = try connection.cachedStatement("SELECT 1 FROM ATRANSACTION WHERE Z_PK = ?")
            statement.bindInt(number, at: 1)
            defer { statement.reset() }
            return try statement.step()
        }
        guard held else {
            let token = PersistentHistoryToken(transactionNumber: number, storeIdentifier: identifier)
            let what = number == 0 ? "is the initial token (taken before any transaction)" : "names a transaction the history no longer holds (purged)"
            throw ObjectGraphError(.persistentHistoryTokenExpired,
                                   "\(token) in a history predicate \(what): compare with a transaction's token, or use fetchHistory(after:)",
                                   storePath: url?.path)
        }
    }

    // Tombstone values as tagged text, so they come back with their types.
    static func encodeTombstone(_ values: [String: PropertyValue]) -> String {
        var parts: [String: String] = [:]
        for (key, value) in values {
            switch value {
            case .null: parts[key] = "n:"
            case .integer(let v): parts[key] = "i:\(v)"
            case .double(let v): parts[key] = "f:\(v)"
            case .decimal(let v): parts[key] = "m:\(v)"
            case .string(let v): parts[key] = "s:\(v)"
            case .bool(let v): parts[key] = "b:\(v ? 1 : 0)"
            case .date(let v): parts[key] = "t:\(v.timeIntervalSinceReferenceDate)"
            case .data(let v): parts[key] = "x:\(v.base64EncodedString())"
            case .uuid(let v): parts[key] = "u:\(v.uuidString)"
            case .uri(let v): parts[key] = "r:\(v.absoluteString)"
            case .objectID(let v): parts[key] = "o:\(v.key)"
            }
        }
        let data = (try? JSONSerialization.data(withJSONObject: parts, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    static func decodeTombstone(_ text: String) -> [String: PropertyValue] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String] else { return [:] }
        var values: [String: PropertyValue] = [:]
        for (key, tagged) in object {
            let tag = tagged.prefix(1), body = String(tagged.dropFirst(2))
            switch tag {
            case "i": values[key] = Int64(body).map { .integer($0) } ?? .null
            case "f": values[key] = Double(body).map { .double($0) } ?? .null
            case "m": values[key] = Decimal(string: body).map { .decimal($0) } ?? .null
            case "s": values[key] = .string(body)
            case "b": values[key] = .bool(body == "1")
            case "t": values[key] = Double(body).map { .date(Date(timeIntervalSinceReferenceDate: $0)) } ?? .null
            case "x": values[key] = Data(base64Encoded: body).map { .data($0) } ?? .null
            case "u": values[key] = UUID(uuidString: body).map { .uuid($0) } ?? .null
            case "r": values[key] = URL(string: body).map { .uri($0) } ?? .null
            default: values[key] = .null
            }
        }
        return values
    }
}
