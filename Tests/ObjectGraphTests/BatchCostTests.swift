import Foundation
import Testing
@testable import ObjectGraph

/// What batch requests, fetches of IDs only, count requests and the merge of a batch's IDs count
/// (Docs/simulation.md, operations): a batch request is priced as SQLite runs it, its statements prepared once and
/// a batch row per row written; a row of IDs is not a full row. Exact counts, in a counting thread.
@Suite struct BatchCostTests {
    /// What a call counted on the calling thread.
    struct Counts {
        var ops: [Int]
        var statements: [Int]
        subscript(_ op: CostedOperation) -> Int { ops[op.rawValue] }
        subscript(_ kind: StatementKind) -> Int { statements[kind.rawValue] }
    }

    /// Runs `body` in a counting thread and returns what it counted.
    static func counting<T>(_ body: () throws -> T) rethrows -> (T, Counts) {
        let thread = ExecutionThread.countingOnly()
        ExecutionThread.install(thread)
        defer { ExecutionThread.install(nil) }
        let result = try body()
        let counts = Counts(ops: (0..<CostedOperation.count).map { thread.counts[$0] },
                            statements: (0..<StatementKind.count).map { thread.statementCounts[$0] })
        return (result, counts)
    }

    /// A batch insert of items with ids `ids` (a name and a price each).
    static func insertRequest(_ ids: ClosedRange<Int>) -> BatchInsertRequest {
        var request = BatchInsertRequest(entityName: "Item", objects: ids.map { ["id": Int64($0), "name": "item \($0)", "price": Double($0)] })
        request.resultType = .objectIDs
        return request
    }

    /// A model of one entity without relationships or constraints: a batch request on it runs nothing but its rows.
    static func notesModel() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(name: "Note", attributes: [
                AttributeDescription(name: "n", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                AttributeDescription(name: "text", type: .string),
            ]),
        ])
    }

    /// The object IDs of every note, the first `n` inserted by a batch.
    static func insertNotes(_ stack: TestStack, _ n: Int) throws -> [ManagedObjectID] {
        let ctx = stack.context()
        return try ctx.performAndWait {
            var request = BatchInsertRequest(entityName: "Note", objects: (1...n).map { ["n": Int64($0), "text": "note \($0)"] })
            request.resultType = .objectIDs
            return try #require(try ctx.execute(request).objectIDs)
        }
    }

    // Docs/coredata-behaviour.md §6, §10.10: the request's statements (the key read, the uniqueness lookup, the
    // insert, the key update) are prepared once and re-run per row; each row is one batch row, with no object.
    @Test("a batch insert of N rows prepares its statements once and counts N batch rows (§6, §10.10)")
    func batchInsertPreparesStatementsOnceAndCountsBatchRows() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let (ids, counts) = try Self.counting { try ctx.performAndWait { try ctx.execute(Self.insertRequest(1...200)).objectIDs } }
        #expect(ids?.count == 200)
        #expect(counts[.batchRowInserted] == 200)
        #expect(counts[.transaction] == 1)
        // BEGIN and COMMIT; Z_MAX read and the uniqueness lookup; the INSERT; Z_PRIMARYKEY's update.
        #expect(counts.statements == [2, 1, 1, 0, 2])
        #expect(counts[.sqlStatement] == 6)
        for op in [CostedOperation.rowInserted, .rowUpdated, .objectRegistered, .rowFetched, .idRowFetched, .contextSave] {
            #expect(counts[op] == 0, "\(op.name)")
        }
    }

    // Docs/coredata-behaviour.md §6: an upsert (ObjectTrump) of rows that exist rewrites them, one batch row
    // updated each; the insert is never run, so it is not counted.
    @Test("a batch upsert of N stored rows counts N batch rows updated and one UPDATE (§6)")
    func batchUpsertCountsBatchRowsUpdated() throws {
        let stack = try TestStack()
        let ctx = stack.context(policy: .mergeByPropertyObjectTrump)
        try ctx.performAndWait { _ = try ctx.execute(Self.insertRequest(1...100)) }
        let (_, counts) = try Self.counting { try ctx.performAndWait { try ctx.execute(Self.insertRequest(1...100)) } }
        #expect(counts[.batchRowUpdated] == 100)
        #expect(counts[.batchRowInserted] == 0)
        #expect(counts[.transaction] == 1)
        // BEGIN and COMMIT; Z_MAX read and the lookup; the row UPDATE and Z_PRIMARYKEY's.
        #expect(counts.statements == [2, 0, 2, 0, 2])
    }

    // Docs/coredata-behaviour.md §6, §10.10: a batch delete by IDs runs one DELETE re-stepped per row.
    @Test("a batch delete of N rows counts one statement and N batch rows deleted, no objects (§6, §10.10)")
    func batchDeleteCountsOneStatementAndBatchRowsDeleted() throws {
        let stack = try TestStack(model: try Self.notesModel())
        let ids = try Self.insertNotes(stack, 150)
        let ctx = stack.context()
        let (result, counts) = try Self.counting { try ctx.performAndWait { try ctx.execute(BatchDeleteRequest(objectIDs: ids)) } }
        #expect(result.status)
        #expect(counts[.batchRowDeleted] == 150)
        #expect(counts[.transaction] == 1)
        #expect(counts.statements == [0, 0, 0, 1, 2])  // the DELETE; BEGIN and COMMIT
        for op in [CostedOperation.rowDeleted, .objectDeleted, .objectRegistered, .rowFetched, .idRowFetched, .faultFulfilledFromStore] {
            #expect(counts[op] == 0, "\(op.name)")
        }
    }

    // Docs/coredata-behaviour.md §6: delete rules run in SQL, each of their statements prepared once: the
    // statements of a batch delete do not grow with its rows.
    @Test("a batch delete's delete-rule statements count once whatever its size (§6)")
    func batchDeleteRuleStatementsCountOnce() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let ids = try ctx.performAndWait { try #require(try ctx.execute(Self.insertRequest(1...150)).objectIDs) }
        let (_, small) = try Self.counting { try ctx.performAndWait { try ctx.execute(BatchDeleteRequest(objectIDs: Array(ids.prefix(50)))) } }
        let (_, large) = try Self.counting { try ctx.performAndWait { try ctx.execute(BatchDeleteRequest(objectIDs: Array(ids.suffix(100)))) } }
        #expect(small[.batchRowDeleted] == 50 && large[.batchRowDeleted] == 100)
        #expect(small.statements == large.statements)
        #expect(small[.sqlStatement] == large[.sqlStatement])
    }

    // Docs/coredata-behaviour.md §6: a batch update selects its rows (a fetch of IDs), then runs one UPDATE.
    @Test("a batch update of N rows counts N ID rows, one UPDATE and N batch rows updated (§6)")
    func batchUpdateCountsIDRowsAndBatchRowsUpdated() throws {
        let stack = try TestStack(model: try Self.notesModel())
        _ = try Self.insertNotes(stack, 120)
        let ctx = stack.context()
        let request = BatchUpdateRequest(entityName: "Note", predicate: .compare("n", .lessThanOrEqualTo, 80), propertiesToUpdate: ["text": "x"])
        let (_, counts) = try Self.counting { try ctx.performAndWait { try ctx.execute(request) } }
        #expect(counts[.idRowFetched] == 80)
        #expect(counts[.batchRowUpdated] == 80)
        #expect(counts[.transaction] == 1)
        #expect(counts.statements == [1, 0, 1, 0, 2])  // the selection, the UPDATE, BEGIN and COMMIT
        #expect(counts[.rowUpdated] == 0 && counts[.rowFetched] == 0 && counts[.objectRegistered] == 0)
    }

    // Docs/coredata-behaviour.md §4: a fetch of object IDs reads Z_PK only.
    @Test("a fetch of object IDs counts ID rows, not full rows (§4)")
    func fetchOfObjectIDsCountsIDRows() throws {
        let stack = try TestStack()
        try stack.seed(60)
        let ctx = stack.context()
        let (ids, counts) = try Self.counting { try ctx.performAndWait { try ctx.fetchObjectIDs(FetchRequest(entityName: "Item")) } }
        #expect(ids.count == 60)
        #expect(counts[.fetchExecuted] == 1 && counts[.idRowFetched] == 60)
        #expect(counts[.rowFetched] == 0 && counts[.objectRegistered] == 0)
        #expect(counts.statements == [1, 0, 0, 0, 0])
    }

    // Docs/coredata-behaviour.md §4, §5: a batched fetch (a batched controller's first fetch) reads the IDs, then
    // full rows one batch at a time as objects are touched; so does a fetch without property values.
    @Test("a batched fetch counts ID rows first and full rows only for the batch touched (§4, §5)")
    func batchedFetchCountsIDRowsThenOneBatch() throws {
        let stack = try TestStack()
        try stack.seed(60)
        let ctx = stack.context()
        var request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])
        request.fetchBatchSize = 20
        let (items, first) = try Self.counting { try ctx.performAndWait { try ctx.fetch(request, as: Item.self) } }
        #expect(items.count == 60)
        #expect(first[.fetchExecuted] == 1 && first[.idRowFetched] == 60 && first[.rowFetched] == 0)
        let (_, touched) = Self.counting { ctx.performAndWait { _ = items[0].name } }
        #expect(touched[.rowFetched] == 20 && touched[.idRowFetched] == 0)
        var plain = FetchRequest(entityName: "Item")
        plain.includesPropertyValues = false
        let (_, noValues) = try Self.counting { try ctx.performAndWait { try ctx.fetch(plain) } }
        #expect(noValues[.idRowFetched] == 60 && noValues[.rowFetched] == 0)
    }

    // Docs/coredata-behaviour.md §4: a to-many fault is a fetch of its destinations' IDs.
    @Test("a to-many fault counts ID rows (§4)")
    func toManyFaultCountsIDRows() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let tag = try ctx.performAndWait {
            let tag = Tag(context: ctx)
            for i in 1...30 {
                let item = Item(context: ctx)
                item.id = Int64(i)
                item.tag = tag
            }
            try ctx.save()
            return tag.objectID
        }
        let reader = stack.context()
        let (n, counts) = Self.counting { reader.performAndWait { (reader.object(with: tag) as! Tag).items.count } }
        #expect(n == 30)
        #expect(counts[.idRowFetched] == 30 && counts[.rowFetched] == 0)
    }

    // Docs/coredata-behaviour.md §4: a count request is one `SELECT count(*)`: no row comes back.
    @Test("a count request counts no rows (§4)")
    func countRequestCountsNoRows() throws {
        let stack = try TestStack()
        try stack.seed(60)
        let ctx = stack.context()
        let (n, counts) = try Self.counting { try ctx.performAndWait { try ctx.count(for: FetchRequest(entityName: "Item")) } }
        #expect(n == 60)
        #expect(counts[.fetchExecuted] == 1)
        #expect(counts[.rowFetched] == 0 && counts[.idRowFetched] == 0 && counts[.objectRegistered] == 0)
        #expect(counts.statements == [1, 0, 0, 0, 0])
    }

    // Docs/coredata-behaviour.md §3.4, §3.1, §10.8: merging a batch's IDs as updated touches only the registered
    // objects: the 5 loaded are re-read (one query) and refreshed, the other 9,995 IDs cost a lookup each.
    @Test("a merge of batch IDs touches only registered objects (§3.4, §10.8)")
    func mergeOfBatchIDsTouchesOnlyRegisteredObjects() throws {
        let stack = try TestStack()
        let ctx = stack.context(policy: .mergeByPropertyObjectTrump)
        try ctx.performAndWait { _ = try ctx.execute(Self.insertRequest(1...5)) }
        let view = stack.context(name: "view")
        let held = try view.performAndWait {
            let items = try fetchItems(view)
            for item in items { _ = item.name }
            return items
        }
        try #require(held.count == 5)
        let ids = try ctx.performAndWait { try #require(try ctx.execute(Self.insertRequest(1...10_000)).objectIDs) }
        try #require(ids.count == 10_000)
        let registered = view.performAndWait { view.counters.objectsRegistered }
        let (_, counts) = Self.counting {
            ManagedObjectContext.mergeChanges(fromRemoteContextSave: ContextObjectIDChanges(updated: Set(ids)), into: [view])
        }
        #expect(counts[.objectRefreshed] == 5)
        #expect(counts[.rowFetched] == 5)  // the five registered rows, read again past the row cache (§3.4)
        #expect(counts[.objectRegistered] == 0 && counts[.idRowFetched] == 0 && counts[.faultFulfilledFromStore] == 0)
        #expect(counts.statements == [1, 0, 0, 0, 0])
        #expect(counts[.notificationPosted] == 1)
        view.performAndWait {
            #expect(view.counters.objectsRegistered == registered)
            #expect(view.registeredObjectCount == 5)
        }
    }

    // Docs/coredata-behaviour.md §3.1, §3.4: merged as inserted, each ID is faulted in (documented: the merge
    // "faults in any newly-inserted objects"), with no I/O: a registration each, no row read.
    @Test("a merge of batch-inserted IDs registers a fault per ID and reads no row (§3.1, §3.4)")
    func mergeOfInsertedBatchIDsRegistersFaultsWithoutRows() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let ids = try ctx.performAndWait { try #require(try ctx.execute(Self.insertRequest(1...500)).objectIDs) }
        let view = stack.context(name: "view")
        let (_, counts) = Self.counting {
            ManagedObjectContext.mergeChanges(fromRemoteContextSave: ContextObjectIDChanges(inserted: Set(ids)), into: [view])
        }
        #expect(counts[.objectRegistered] == 500)
        #expect(counts[.rowFetched] == 0 && counts[.idRowFetched] == 0 && counts[.faultFulfilledFromStore] == 0)
        #expect(counts[.objectRefreshed] == 0)
        #expect(counts[.sqlStatement] == 0)
    }

    // Docs/coredata-behaviour.md §6: a batch insert that fails on a uniqueness constraint writes nothing; its rows
    // are counted when the request's rows are all written, so a rolled-back request counts its statements and no
    // batch row.
    @Test("a batch insert that fails midway counts its statements but no batch row (§6)")
    func failedBatchInsertCountsNoBatchRows() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait { _ = try ctx.execute(Self.insertRequest(1...5)) }
        var request = Self.insertRequest(6...10)
        request.objects.append(["id": Int64(3), "name": "again", "price": 3.0])  // collides after five new rows
        let (failed, counts) = Self.counting { ctx.performAndWait { (try? ctx.execute(request)) == nil } }
        #expect(failed)
        #expect(counts[.batchRowInserted] == 0)
        #expect(counts[.batchRowUpdated] == 0)
        #expect(counts[.transaction] == 0)
        #expect(counts[.sqlStatement] > 0)
        #expect(try ctx.performAndWait { try ctx.count(for: FetchRequest(entityName: "Item")) } == 5)
    }
}
