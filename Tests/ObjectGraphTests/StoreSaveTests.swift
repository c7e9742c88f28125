import Foundation
import Testing
@testable import ObjectGraph

/// The store and coordinator side of a save (semantics §2.1 steps 4–6): permanent keys per entity, references
/// between objects of the same save, the rows the row cache takes, and the row cache's batched references.
@Suite struct StoreSaveTests {

    // Inserts of two entities interleaved in one save, each item referring to a tag inserted by the same save:
    // every row gets its entity's next key, every reference the referred object's permanent key, in the file
    // (read through a second coordinator) and in the row cache (read through another context).
    @Test(arguments: [PersistentStoreType.sqlite, .inMemory])
    func interleavedInsertsReferringToEachOther_2_1(type: PersistentStoreType) throws {
        let stack = try TestStack(type: type)
        let ctx = stack.context()
        let names = ["plain", "", "with\0nul", String(repeating: "long text ", count: 4)]
        try ctx.performAndWait {
            for i in 0..<20 {
                let tag = Tag(context: ctx)
                tag.name = "tag \(i)"
                let item = Item(context: ctx)
                item.id = Int64(i)
                item.name = names[i % names.count]
                item.price = Double(i)
                item.tag = tag
            }
            try ctx.save()
        }
        var readers = [stack.context()]
        if type == .sqlite { readers.append(stack.context(try stack.secondCoordinator())) }
        for reader in readers {
            try reader.performAndWait {
                let items = try fetchItems(reader)
                #expect(items.count == 20)
                for (i, item) in items.enumerated() {
                    #expect(item.id == Int64(i))
                    #expect(item.name == names[i % names.count])
                    #expect(item.price == Double(i))
                    #expect(item.tag?.name == "tag \(i)")
                    #expect(item.objectID.isTemporaryID == false)
                    #expect(item.tag?.objectID.isTemporaryID == false)
                }
                let keys = Set(items.compactMap(\.objectID.primaryKey))
                #expect(keys == Set(1...20))
            }
        }
        // A second save continues each entity's keys.
        try ctx.performAndWait {
            let item = Item(context: ctx)
            item.id = 100
            item.tag = Tag(context: ctx)
            try ctx.save()
            #expect(item.objectID.primaryKey == 21)
            #expect(item.tag?.objectID.primaryKey == 21)
        }
    }

    // Semantics §2.3: a reference per user; `retain(_:)` over several IDs takes one per occurrence.
    @Test func batchedRetainTakesOneReferencePerID_2_3() throws {
        let stack = try TestStack()
        let entity = try #require(stack.model.entity(named: "Item"))
        let cache = RowCache()
        let a = ManagedObjectID(entity: entity, primaryKey: 1, storeNumber: 1)
        let b = ManagedObjectID(entity: entity, primaryKey: 2, storeNumber: 1)
        cache.retain([a, a, b])
        #expect(cache.count == 2)
        cache.install([(a, RowSnapshot(values: [], version: 3))], retain: false)
        #expect(cache.version(of: a)?.version == 3)
        cache.install([(ManagedObjectID(entity: entity, primaryKey: 3, storeNumber: 1), RowSnapshot(values: [], version: 1))], retain: false)
        #expect(cache.count == 2)  // a row nobody uses is not kept
        cache.release(a)
        #expect(cache.version(of: a)?.version == 3)
        cache.release([a, b])
        #expect(cache.count == 0)
        cache.release(a)  // releasing an unknown ID does nothing
        #expect(cache.count == 0)
    }

    // Semantics §2.1 steps 4 and 6; Core Data's SQL log: a save that inserts rows allocates
    // their keys from Z_PRIMARYKEY in a transaction of its own, committed before the rows' transaction begins,
    // and both are counted; a save without inserts is one transaction. Since the keys' transaction commits on
    // its own, a save whose rows then fail (a uniqueness conflict under the error policy) leaves Z_MAX advanced
    // and writes no row.
    @Test("An inserting save allocates keys in a transaction of its own before the rows' one (§2.1)")
    func insertingSaveAllocatesKeysInItsOwnTransaction_2_1() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let counting = ExecutionThread.countingOnly()
        ExecutionThread.install(counting)
        defer { ExecutionThread.install(nil) }
        func transactions() -> Int { counting.counts[CostedOperation.transaction.rawValue] }
        let c0 = stack.coordinator.counters
        let ids = try ctx.performAndWait {
            let items = (1...3).map { i -> Item in let item = Item(context: ctx); item.id = Int64(i); return item }
            let tag = Tag(context: ctx)
            tag.name = "t"
            try ctx.save()
            return items.map(\.objectID)
        }
        let c1 = stack.coordinator.counters
        #expect(transactions() == 2)
        #expect(c1.statements.other - c0.statements.other == 4)  // BEGIN IMMEDIATE, COMMIT; BEGIN IMMEDIATE, COMMIT
        #expect(c1.statements.update - c0.statements.update == 2)  // Z_MAX of Item and of Tag, in the first one
        #expect(ids.map(\.primaryKey) == [1, 2, 3])
        try ctx.performAndWait {
            (try ctx.existingObject(with: ids[0]) as? Item)?.price = 5
            try ctx.save()
        }
        #expect(transactions() == 3)  // no inserts: the rows' transaction only
        #expect(stack.coordinator.counters.statements.other - c1.statements.other == 2)

        // The keys stay allocated when the rows' transaction fails.
        let failing = stack.context()
        let error = failing.performAndWait { () -> (any Error)? in
            let duplicate = Item(context: failing)
            duplicate.id = 2
            do { try failing.save(); return nil } catch { return error }
        }
        #expect((error as? ObjectGraphError)?.code == .constraintMerge)
        #expect(try stack.sql("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Item'") == [[.integer(4)]])
        #expect(try stack.sql("SELECT COUNT(*) FROM ZITEM") == [[.integer(3)]])
        #expect(transactions() == 4)  // the keys' one committed; the rows' one rolled back
    }
}

/// A simulation for a thread that only counts operations (as the workbench's calibration does): never asked
/// anything, since such a thread is not simulated.
