import Foundation
import ObjectGraph

/// The oracle's reads of the store once the actors are done: through `reader`, a private context over `verifier`
/// (a coordinator of the oracle's own), and for duplicates and batch-touched rows by queries of the store file.
struct OracleReader {
    let reader: ManagedObjectContext
    let verifier: PersistentStoreCoordinator
    let workload: Workload
    let storeURL: URL
    /// An in-memory store: no file to query, and a fetch walks its whole table.
    let isInMemoryStore: Bool
    /// The identifier of the verifier's store holding the workload's entity (its only store without `stack.stores`),
    /// read once (a read of the coordinator on its queue).
    let storeIdentifier: String

    init(reader: ManagedObjectContext, verifier: PersistentStoreCoordinator, workload: Workload, storeURL: URL, isInMemoryStore: Bool) {
        (self.reader, self.verifier, self.workload, self.storeURL, self.isInMemoryStore) = (reader, verifier, workload, storeURL, isInMemoryStore)
        if workload.scenario.stack.stores == nil {
            storeIdentifier = verifier.storeIdentifier ?? ""
        } else {
            // Docs/coredata-behaviour.md §14.2: object IDs name their store; the rows are in `storeURL`'s.
            let path = storeURL.standardizedFileURL.path
            storeIdentifier = verifier.persistentStores.first { $0.url?.standardizedFileURL.path == path }?.identifier ?? verifier.storeIdentifier ?? ""
        }
    }

    /// The oracle's pass: every event `recorder` holds by key, a thousand keys at a time, against its row; then the
    /// view's values, the duplicates and the batch-touched rows. Returns its report and the events events.jsonl
    /// keeps (at most `eventsKept`).
    func checkEvents(_ recorder: RunRecorder, viewValues: [Int64: [String: String]], readOnlySaves: Int, eventsKept: Int) throws -> (OracleReport, [WriteEvent]) {
        let (duplicates, batchTouched) = try duplicatesAndBatchTouched()
        var checker = Oracle.Checker(viewKeys: Set(viewValues.keys), batchTouched: batchTouched)
        var pending: [(Int64, [WriteEvent])] = []
        func checkPending() throws {
            let found = try rows(pending.map(\.0))
            for (key, events) in pending { checker.visit(key: key, events: events, row: found[key]) }
            pending.removeAll(keepingCapacity: true)
        }
        try recorder.events.forEachKey { key, events in
            pending.append((key, events))
            if pending.count >= 1000 { try checkPending() }
        }
        try checkPending()
        let report = checker.finish(viewValues: viewValues, viewRows: try rows(viewValues.keys.sorted()), duplicates: duplicates, readOnlySaves: readOnlySaves)
        // events.jsonl keeps a bounded part of the history, and says which.
        return (report, try recorder.events.kept(findingKeys: report.findings.map(\.key), limit: eventsKept))
    }

    /// The rows of `keys` (primary keys of the workload's entity) as the oracle reads them: each one's version and
    /// field values, read through `reader` and let go after.
    func rows(_ keys: [Int64]) throws -> [Int64: Oracle.Row] {
        guard !keys.isEmpty else { return [:] }
        let reader = reader, verifier = verifier, workload = workload, storeID = storeIdentifier, isInMemoryStore = isInMemoryStore
        let entityName = workload.entity.name
        return try reader.performAndWait {
            defer { reader.reset() }
            let ids = keys.compactMap { URL(string: "x-coredata://\(storeID)/\(entityName)/p\($0)").flatMap(verifier.managedObjectID(forURIRepresentation:)) }
            let objects: [ManagedObject]
            if isInMemoryStore {
                // An in-memory store walks its whole table for every fetch: one look-up per key keeps this linear.
                objects = ids.compactMap { try? reader.existingObject(with: $0) }
            } else {
                var request = FetchRequest(entityName: entityName,
                                           predicate: ObjectPredicate(.comparison(PredicateComparison(.evaluatedObject, .in, .list(ids.map { .objectID($0) })))))
                request.returnsObjectsAsFaults = false
                objects = try reader.fetch(request)
            }
            var found: [Int64: Oracle.Row] = [:]
            for object in objects {
                guard let key = object.objectID.primaryKey else { continue }
                var fields: [String: String] = [:]
                for (field, _) in workload.fieldTypes { fields[field] = object.primitiveValue(forKey: field).description }
                found[key] = (object.snapshotVersion, fields)
            }
            return found
        }
    }

    /// The ids stored more than once, and the primary keys of the rows batch requests touched: by queries of the
    /// store file, or for an in-memory store by a fetch of every id through `reader`.
    func duplicatesAndBatchTouched() throws -> ([Int64], Set<Int64>) {
        let entityName = workload.entity.name
        var duplicates: [Int64] = []
        var batchTouched: Set<Int64> = []
        if isInMemoryStore, let idKey = workload.idKey {
            // No SQL: the id of every row, counted here (batch requests, refused with this store, touch none).
            var request = FetchRequest(entityName: entityName)
            request.resultType = .dictionary
            request.propertiesToFetch = [idKey]
            var seen: [Int64: Int] = [:]
            for row in try reader.performAndWait({ try reader.fetchDictionaries(request) }) {
                if let id = (row[idKey] as? Int64) ?? (row[idKey] as? Int).map(Int64.init) { seen[id, default: 0] += 1 }
            }
            duplicates = seen.filter { $0.value > 1 }.map(\.key).sorted()
        } else if let idKey = workload.idKey, let slot = workload.entity.slotIndex(of: idKey) {
            let store = try SQLiteConnection(path: storeURL.path, readOnly: true, busyTimeout: 0, countsOperations: false)
            let table = workload.entity.tableName, column = workload.entity.columnName(forSlot: slot)
            // A sub-entity's table is its hierarchy's; only the workload entity's rows count.
            let rows = workload.entity.entityCondition(alias: table, includesSubentities: true).map { " AND \($0)" } ?? ""
            try store.forEachRow("SELECT \(column) FROM \(table) WHERE \(column) IS NOT NULL\(rows) GROUP BY \(column) HAVING COUNT(*) > 1 ORDER BY \(column)") { row in
                if let id = row.int(0) { duplicates.append(id) }
            }
            // Batch requests name records by id; the oracle knows them by primary key.
            let touched = workload.batchTouchedKeys.sorted()
            for start in stride(from: 0, to: touched.count, by: 500) {
                let list = touched[start..<min(start + 500, touched.count)].map(String.init).joined(separator: ",")
                try store.forEachRow("SELECT Z_PK FROM \(table) WHERE \(column) IN (\(list))\(rows)") { row in if let key = row.int(0) { batchTouched.insert(key) } }
            }
        }
        return (duplicates, batchTouched)
    }
}
