import Foundation
import Testing
@testable import ObjectGraph

/// What an in-memory store counts (Docs/coredata-behaviour.md §7 "The in-memory store"): its own rows written and
/// read, and none of SQLite's statements, transactions and row writes.
@Suite struct InMemoryStoreCountTests {
    func counts(_ counting: ExecutionThread, _ op: CostedOperation) -> Int { counting.counts[op.rawValue] }

    // Semantics §7: a save into memory writes rows without SQL or a transaction.
    @Test("Semantics §7: an in-memory save counts a row written per inserted, updated and deleted object, no transaction or statement")
    func saveCountsRowsWritten() throws {
        let stack = try TestStack(type: .inMemory)
        let ctx = stack.context()
        let counting = ExecutionThread.countingOnly()
        ExecutionThread.install(counting)
        defer { ExecutionThread.install(nil) }
        try ctx.performAndWait {
            for i in 1...5 { Item(context: ctx).id = Int64(i) }
            try ctx.save()
        }
        #expect(counts(counting, .inMemoryRowWritten) == 5)
        try ctx.performAndWait {
            let items = try fetchItems(ctx)
            items[0].price = 2
            items[1].price = 3
            ctx.delete(items[4])
            try ctx.save()
        }
        #expect(counts(counting, .inMemoryRowWritten) == 5 + 3)
        for op in [CostedOperation.transaction, .sqlStatement, .rowInserted, .rowUpdated, .rowDeleted] {
            #expect(counts(counting, op) == 0, "\(op)")
        }
        #expect(counts(counting, .contextSave) == 2)  // the object graph's save is counted on both stores
    }

    // Semantics §7 and §2.3: the row cache is in front of the in-memory store too; a miss is a copy from memory.
    @Test("Semantics §7: a fault that misses the row cache is filled from memory (faultFulfilledFromCache and one row read), never a SELECT")
    func faultIsACopyFromMemory() throws {
        let stack = try TestStack(type: .inMemory)
        let ids = try stack.seed(4)
        let ctx = stack.context()
        let counting = ExecutionThread.countingOnly()
        ExecutionThread.install(counting)
        defer { ExecutionThread.install(nil) }
        let misses = stack.coordinator.counters.rowCacheMisses
        try ctx.performAndWait {
            let item = try #require(ctx.object(with: ids[0]) as? Item)
            _ = item.price  // fires the fault: no object holds the row, so the cache has none
        }
        #expect(stack.coordinator.counters.rowCacheMisses - misses == 1)
        #expect(counts(counting, .faultFulfilledFromStore) == 0)
        #expect(counts(counting, .faultFulfilledFromCache) == 1)
        #expect(counts(counting, .inMemoryRowRead) == 1)
        // A fetch with a predicate walks every row of the entity (no index), and delivers the matching ones.
        let read = counts(counting, .inMemoryRowRead)
        let found = try ctx.performAndWait { try fetchItems(ctx, ObjectPredicate(format: "id == 2")).count }
        #expect(found == 1)
        #expect(counts(counting, .inMemoryRowRead) - read == 4)
        #expect(counts(counting, .sqlStatement) == 0)
    }

    // Docs/coredata-behaviour.md §7 "The in-memory store": a fetch walks every row of the entity with or without a
    // predicate, and a count walks them too.
    @Test("Semantics §7: an in-memory fetch without a predicate and a count each read every row of the entity")
    func fetchAndCountWalkEveryRow() throws {
        let stack = try TestStack(type: .inMemory)
        _ = try stack.seed(4)
        let ctx = stack.context()
        let counting = ExecutionThread.countingOnly()
        ExecutionThread.install(counting)
        defer { ExecutionThread.install(nil) }
        let fetched = try ctx.performAndWait { try fetchItems(ctx).count }
        #expect(fetched == 4)
        #expect(counts(counting, .inMemoryRowRead) == 4)
        let counted = try ctx.performAndWait { try ctx.count(for: FetchRequest(entityName: "Item")) }
        #expect(counted == 4)
        #expect(counts(counting, .inMemoryRowRead) == 8)
        #expect(counts(counting, .idRowFetched) == 0)
    }
}
