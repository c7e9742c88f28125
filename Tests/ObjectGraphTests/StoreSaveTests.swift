import Foundation
import Testing
@testable import ObjectGraph

/// A note whose save hooks run a closure: hooks that change other objects while the save walks its change sets.
final class SPNote: ManagedObject {
    @Managed("text") var text: String?
    @Managed("stamp") var stamp: Int64
    var willSaveHook: (() -> Void)?
    var validateHook: (() -> Void)?
    var didSaveHook: (() -> Void)?
    var calls: [String: Int] = [:]
    override func willSave() { calls["willSave", default: 0] += 1; willSaveHook?() }
    override func validateForUpdate() throws { calls["validate", default: 0] += 1; validateHook?(); try super.validateForUpdate() }
    override func didSave() { calls["didSave", default: 0] += 1; didSaveHook?() }
}

func spModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [
        EntityDescription(name: "Note", managedObjectClass: SPNote.self, attributes: [
            AttributeDescription(name: "text", type: .string),
            AttributeDescription(name: "stamp", type: .integer64, isOptional: false, defaultValue: .integer(0)),
        ]),
    ])
}

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

    @Test func slotSetHoldsSlotsBeyondOneWord() {
        var set = SlotSet()
        #expect(set.isEmpty)
        for slot in [0, 3, 63, 64, 130] { set.insert(slot) }
        #expect(Array(set) == [0, 3, 63, 64, 130])
        #expect(set.count == 5 && set.contains(130) && !set.contains(129))
        set.remove(64)
        set.remove(0)
        #expect(Array(set) == [3, 63, 130])
        #expect(set == SlotSet([130, 63, 3]))
        set.remove(3); set.remove(63); set.remove(130)
        #expect(set.isEmpty && set == SlotSet())
    }

    // Semantics §2.1: one save with inserts of two entities and updates changing different columns writes every
    // row as asked (one statement per entity and set of changed columns, reused across rows).
    @Test func oneSaveMixesInsertAndUpdateShapes_2_1() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            for i in 1...4 {
                let item = Item(context: ctx)
                item.id = Int64(i)
                item.name = "n\(i)"
            }
            let tag = Tag(context: ctx)
            tag.name = "t"
            try ctx.save()
            let items = try ctx.fetch(FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])).compactMap { $0 as? Item }
            items[0].price = 1          // price only
            items[1].name = "renamed"   // name only
            items[2].price = 3          // price only, same shape as items[0]
            items[3].name = "four"
            items[3].price = 4          // both
            let fifth = Item(context: ctx)
            fifth.id = 5
            try ctx.save()
        }
        let check = stack.context()
        try check.performAndWait {
            let rows = try check.fetch(FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])).compactMap { $0 as? Item }
            #expect(rows.map(\.id) == [1, 2, 3, 4, 5])
            #expect(rows.map(\.price) == [1, 0, 3, 4, 0])
            #expect(rows.map(\.name) == ["n1", "renamed", "n3", "four", nil])
        }
    }

    // Semantics §1.5: a save writes exactly the changed properties of each object. The store keys its update
    // statements by the slot set the object keeps: rows with different changed slots, one shape coming back after
    // another (found again by hash, not as the last statement used), each write their own columns and nothing else.
    @Test func updatesWriteTheirOwnChangedSlotsWhateverTheOrder_1_5() throws {
        let stack = try TestStack()
        try stack.seed(4)
        let ctx = stack.context()
        try ctx.performAndWait {
            let items = try fetchItems(ctx)
            items[0].name = "a"
            items[1].price = 99
            items[2].name = "c"
            items[3].name = "d"
            items[3].price = 77
            try ctx.save()
        }
        let rows = try stack.sql("SELECT ZNAME, ZPRICE, Z_OPT FROM ZITEM ORDER BY ZID")
        #expect(rows.map { $0[0] } == [.text("a"), .text("item 2"), .text("c"), .text("d")])
        #expect(rows.map { $0[1] } == [.real(10), .real(99), .real(30), .real(77)])
        #expect(rows.map { $0[2] } == [.integer(2), .integer(2), .integer(2), .integer(2)])
    }

    // Semantics §2.1 steps 2, 3, 7: the save walks its change sets without retaining each object; the walks go
    // over the sets as they were when each walk began, so hooks that change other objects (and so the context's
    // sets) during willSave, validation or didSave neither disturb the walk nor lose a change: every object is
    // called once per walk, and the changes the hooks made are saved.
    @Test func hooksThatChangeOtherObjectsDuringTheSaveWalks_2_1() throws {
        let stack = try TestStack(model: try spModel())
        let ctx = stack.context()
        try ctx.performAndWait {
            for i in 1...4 {
                let note = try #require(ctx.insertNewObject(forEntityName: "Note") as? SPNote)
                note.text = "n\(i)"
            }
            try ctx.save()
        }
        let work = stack.context()
        try work.performAndWait {
            let notes = try work.fetch(FetchRequest(entityName: "Note", sortDescriptors: [ObjectSortDescriptor("text")]), as: SPNote.self)
            let (a, b, c, d) = (notes[0], notes[1], notes[2], notes[3])
            a.text = "a"
            b.text = "b"
            a.willSaveHook = { c.stamp = 3 }  // c joins the updated set while willSave walks it
            b.validateHook = { d.stamp = 4 }  // d joins it while validation walks it
            a.didSaveHook = { b.text = "after" }  // a change after the save: pending for the next one
            try work.save()
            #expect(a.calls["willSave"] == 1 && b.calls["willSave"] == 1)
            #expect(a.calls["validate"] == 1 && b.calls["validate"] == 1)
            #expect(a.calls["didSave"] == 1 && b.calls["didSave"] == 1)
            #expect(c.calls["didSave"] == 1 && d.calls["didSave"] == 1)
            #expect(work.updatedObjects == [b])
            a.didSaveHook = nil
            try work.save()
        }
        let rows = try stack.sql("SELECT ZTEXT, ZSTAMP FROM ZNOTE ORDER BY Z_PK")
        #expect(rows.map { $0[0] } == [.text("a"), .text("after"), .text("n3"), .text("n4")])
        #expect(rows.map { $0[1] } == [.integer(0), .integer(0), .integer(3), .integer(4)])
    }

    // Slot sets key the store's statements: equal sets hash alike, however their words beyond the first 64 slots
    // are held (none, or words of zeros left by a removal).
    @Test func equalSlotSetsHashAlike() {
        var spilled: SlotSet = [3, 70]
        spilled.remove(70)
        let plain: SlotSet = [3]
        #expect(spilled == plain)
        #expect(spilled.hashValue == plain.hashValue)
        #expect(Set([spilled, plain]).count == 1)
        let other: SlotSet = [3, 70]
        #expect(other != plain)
        #expect(Array(other) == [3, 70])
        // The low word inline, the words beyond it out of line: both answer alike.
        #expect(other.contains(3) && other.contains(70) && !other.contains(6) && !other.contains(134))
        var emptied = other
        emptied.remove(3)
        emptied.remove(70)
        #expect(emptied.isEmpty && emptied == SlotSet() && emptied.count == 0)
        emptied.insert(200)
        #expect(!emptied.isEmpty && emptied.contains(200) && Array(emptied) == [200])
    }
}

/// A simulation for a thread that only counts operations (as the workbench's calibration does): never asked
/// anything, since such a thread is not simulated.
