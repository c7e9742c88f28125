import Foundation
import Testing
@testable import ObjectGraph

/// Deterministic counters (issue "ObjectGraph core" item 10 and "Performance from the start"): SQL statements by
/// kind, rows read / inserted / updated / deleted, row-cache hits and misses and entries, registered objects.
/// (Faults fired vs SELECTs for 1,000 fetched faults: FetchCounterTests.firingFetchedFaultsRunsOneSelect_4.)
@Suite struct CounterTests {

    // Issue "Performance from the start" (one transaction per save, one statement per row, no per-object SQL
    // text) and semantics §2.1 steps 4 and 6: a save of 100 inserts, then of 10 updates and 5 deletes.
    @Test func saveStatementsAndRowCounts_2_1() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let c0 = stack.coordinator.counters
        try ctx.performAndWait {
            for i in 1...100 {
                let item = Item(context: ctx)
                item.id = Int64(i)
            }
            try ctx.save()
        }
        let c1 = stack.coordinator.counters
        #expect(c1.saves - c0.saves == 1)
        #expect(c1.rowsInserted - c0.rowsInserted == 100)
        #expect(c1.statements.insert - c0.statements.insert == 100)
        #expect(c1.statements.update - c0.statements.update == 1)  // Z_PRIMARYKEY.Z_MAX, once per entity
        #expect(c1.statements.select - c0.statements.select == 1)  // reading Z_MAX
        // BEGIN IMMEDIATE and COMMIT twice: the keys' transaction, then the rows'.
        #expect(c1.statements.other - c0.statements.other == 4)
        try ctx.performAndWait {
            let items = try fetchItems(ctx)
            for item in items.prefix(10) { item.price = 1 }
            for item in items.suffix(5) { ctx.delete(item) }
            try ctx.save()
        }
        let c2 = stack.coordinator.counters
        #expect(c2.rowsUpdated - c1.rowsUpdated == 10)
        #expect(c2.rowsDeleted - c1.rowsDeleted == 5)
        #expect(c2.statements.update - c1.statements.update == 10)
        #expect(c2.statements.delete - c1.statements.delete == 5 + 5)  // each row, and its many-to-many join rows
        #expect(c2.statements.insert - c1.statements.insert == 0)
        #expect(c2.statements.other - c1.statements.other == 2)
        #expect(c2.rowsRead - c1.rowsRead == 100)  // the fetch
    }

    // Semantics §2.3 (fetch fills the row cache; a snapshot lives while some object uses it and is released when
    // none does) and the context's registered-objects counter.
    @Test func rowCacheEntriesFollowTheObjectsThatUseThem_2_3() throws {
        let stack = try TestStack()
        try stack.seed(50)
        let ctx = stack.context()
        let base = stack.coordinator.counters.rowCacheEntries
        let registered = ctx.performAndWait { ctx.counters.objectsRegistered }
        let (misses, hits) = (stack.coordinator.counters.rowCacheMisses, stack.coordinator.counters.rowCacheHits)
        var items: [Item]? = try ctx.performAndWait { try fetchItems(ctx) }
        #expect(stack.coordinator.counters.rowCacheEntries - base == 50)
        #expect(ctx.performAndWait { ctx.counters.objectsRegistered } - registered == 50)
        #expect(ctx.performAndWait { ctx.registeredObjectCount } == 50)
        ctx.performAndWait { for item in items ?? [] { _ = item.name } }
        #expect(stack.coordinator.counters.rowCacheHits - hits == 50)
        #expect(stack.coordinator.counters.rowCacheMisses - misses == 0)
        ctx.performAndWait { items = nil }
        #expect(ctx.performAndWait { ctx.registeredObjectCount } == 0)
        #expect(stack.coordinator.counters.rowCacheEntries == base)
    }
}
