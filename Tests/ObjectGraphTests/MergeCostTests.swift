import Foundation
import Testing
@testable import ObjectGraph

/// The cost of a merge on the receiving queue (issue "Conflicts, merge policies and merging", Performance;
/// semantics §3.1 cost model): with 10 objects registered, merging a save of many thousands of objects examines
/// and refreshes about 10 objects. Asserted with counters, never clocks.
@Suite struct MergeCostTests {

    /// Seeds items 1…n through a batch insert (SQL only, fast in debug builds) and returns nothing; the rows have
    /// Z_PK 1…n.
    private func seedBatch(_ stack: TestStack, _ n: Int) throws {
        let ctx = stack.context(name: "seed")
        try ctx.performAndWait {
            var i = 0
            let request = BatchInsertRequest(entityName: "Item") { row in
                i += 1
                guard i <= n else { return true }
                row = ["id": Int64(i), "name": "item \(i)", "price": Double(i * 10)]
                return false
            }
            _ = try ctx.execute(request)
        }
    }

    /// A receiver with items 1…10 registered: 1…6 loaded, 7…10 faults.
    private func receiver(_ stack: TestStack) throws -> (ManagedObjectContext, [Item]) {
        let ctx = stack.context(name: "receiver")
        let held: [Item] = try ctx.performAndWait {
            let items = try fetchItems(ctx, .compare("id", .lessThanOrEqualTo, 10))
            for item in items.prefix(6) { _ = item.name }
            return items
        }
        try #require(held.count == 10)
        return (ctx, held)
    }

    // Semantics §3.1 cost model: a real save of 20,000 updated rows (the 100,000 scaled down for debug
    // builds; the 100,000 case is the next test) merged into a context with 10 registered objects examines at
    // most 10 registry entries and refreshes exactly the 6 loaded ones; the 4 faults stay faults.
    @Test func mergingA20000RowSaveExaminesOnlyRegisteredObjects_3_1() throws {
        let n = 20_000
        let stack = try TestStack()
        try seedBatch(stack, n)
        let (receiver, held) = try receiver(stack)
        let saver = stack.context(name: "saver")
        let saved = NotificationRecorder(ManagedObjectContext.didSaveObjectIDsNotification, object: saver)
        try saver.performAndWait {
            for item in try fetchItems(saver, sort: []) { item.price += 1 }
            try saver.save()
            saver.reset()
        }
        let note = try #require(saved.notes.first)
        #expect(ContextObjectIDChanges(note)?.updated.count == n)
        let before = receiver.performAndWait { receiver.counters }
        receiver.performAndWait { receiver.mergeChanges(fromContextDidSave: note) }
        let after = receiver.performAndWait { receiver.counters }
        #expect(after.mergeObjectsExamined - before.mergeObjectsExamined <= 10)
        #expect(after.mergeObjectsRefreshed - before.mergeObjectsRefreshed == 6)
        #expect(after.objectsRegistered == before.objectsRegistered)  // nothing new was registered
        receiver.performAndWait {
            #expect(held.prefix(6).map { $0.price } == [11, 21, 31, 41, 51, 61])
            #expect(held.suffix(4).allSatisfy { $0.isFault })
            #expect(receiver.registeredObjectCount == 10)
        }
    }

    // Semantics §3.1 cost model, §3.4: 100,000 updated and 100,000 deleted object IDs merged into a context with 10
    // registered objects: at most 10 entries examined per change kind, 6 refreshed, the 2 registered deleted
    // objects deleted, nothing else registered. (The IDs beyond the 10 name no stored row: a merge never looks
    // at them.)
    @Test func merging100000IDsExaminesOnlyRegisteredObjects_3_1() throws {
        let stack = try TestStack()
        let seeded = try stack.seed(10)
        let (receiver, held) = try receiver(stack)
        let entity = seeded[0].entity
        let store = seeded[0].storeNumber
        func id(_ pk: Int64) -> ManagedObjectID { ManagedObjectID(entity: entity, primaryKey: pk, storeNumber: store) }
        let pks = seeded.map { $0.primaryKey! }
        var updated = Set<ManagedObjectID>(minimumCapacity: 100_000)
        for pk in Int64(1_000_001)...Int64(1_099_992) { updated.insert(id(pk)) }
        for pk in pks.prefix(8) { updated.insert(id(pk)) }
        var deleted = Set<ManagedObjectID>(minimumCapacity: 100_000)
        for pk in Int64(2_000_001)...Int64(2_099_998) { deleted.insert(id(pk)) }
        for pk in pks.suffix(2) { deleted.insert(id(pk)) }
        #expect(updated.count == 100_000)
        #expect(deleted.count == 100_000)
        let changes = MGChangeRecorder(receiver)
        let before = receiver.performAndWait { receiver.counters }
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: ContextObjectIDChanges(updated: updated, deleted: deleted), into: [receiver])
        let after = receiver.performAndWait { receiver.counters }
        #expect(after.mergeObjectsExamined - before.mergeObjectsExamined <= 20)
        #expect(after.mergeObjectsRefreshed - before.mergeObjectsRefreshed == 6)
        #expect(after.objectsRegistered == before.objectsRegistered)
        #expect(changes.refreshed == Set(held.prefix(6).map { $0.objectID }))
        #expect(changes.deleted == Set(held.suffix(2).map { $0.objectID }))
        receiver.performAndWait {
            #expect(receiver.registeredObjectCount == 10)
            #expect(held.suffix(2).allSatisfy { $0.isDeleted })
        }
    }
}
