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
}
