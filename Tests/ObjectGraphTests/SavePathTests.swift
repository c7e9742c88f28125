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

/// Behaviour kept by the fifth round's fixes to the update path's bookkeeping (Benchmarks/README.md, "Fifth
/// round"): the typed fetch's cast, the uniqueness check's early exit, the changed slots handed to the store as
/// they are kept.
@Suite struct SavePathTests {
    // Semantics §4: a typed fetch returns the objects of the requested class, in the fetch's order; objects of
    // another class are left out (the loop that replaced `compactMap` keeps both paths: the exact class and a
    // cast to a superclass).
    @Test func typedFetchKeepsOrderAndCasts_4() throws {
        let stack = try TestStack()
        try stack.seed(5)
        let ctx = stack.context()
        try ctx.performAndWait {
            let request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id", ascending: false)])
            let items = try ctx.fetch(request, as: Item.self)
            #expect(items.map(\.id) == [5, 4, 3, 2, 1])
            let plain = try ctx.fetch(request, as: ManagedObject.self)
            #expect(plain.count == 5)
            #expect(zip(plain, items).allSatisfy { $0 === $1 })
            #expect(try ctx.fetch(request, as: Tag.self).isEmpty)
        }
    }

    // Semantics §1.6, context level: the check first looks for a group with something new (an insert, or an update
    // of a constrained value) and only then collects the group's objects, every one of them: an insert that takes
    // the unchanged ID of an object updated in the same save collides with it inside the save (no database object).
    @Test func anInsertOntoAnUpdatedObjectsUnchangedIDCollidesInTheContext_1_6() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let ctx = stack.context()
        let error: ObjectGraphError? = try ctx.performAndWait {
            let items = try fetchItems(ctx)
            items[0].name = "kept id"  // updated, id 1 unchanged
            let newcomer = Item(context: ctx)
            newcomer.id = 1
            do { try ctx.save(); return nil } catch let error as ObjectGraphError { return error }
        }
        #expect(error?.code == .constraintMerge)
        let conflict = try #require(error?.constraintConflictList.first)
        #expect(conflict.constraint == ["id"])
        #expect(conflict.databaseObject == nil)
        #expect(conflict.conflictingObjects.count == 2)
        #expect(try stack.sql("SELECT ZID, ZNAME FROM ZITEM ORDER BY ZID").map { $0[1] } == [.text("item 1"), .text("item 2")])
    }

    // ...and a save whose only news are in another entity's group checks nothing in the unchanged group: updates
    // that keep their IDs beside inserted tags save.
    @Test func updatesKeepingTheirIDsBesideInsertsOfAnotherEntitySave_1_6() throws {
        let stack = try TestStack()
        try stack.seed(3)
        let ctx = stack.context()
        try ctx.performAndWait {
            for item in try fetchItems(ctx) { item.price += 1 }
            let tag = Tag(context: ctx)
            tag.name = "new"
            try ctx.save()
        }
        #expect(try stack.sql("SELECT ZPRICE FROM ZITEM ORDER BY ZID").map { $0[0] } == [.real(11), .real(21), .real(31)])
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

    // Semantics §1.5, §5: objects join the updated and pending-update sets once (`update(with:)` behind the
    // membership flag), whatever the number of their changes; one reverted to its snapshot leaves `updatedObjects`
    // but its changes are still announced once; the save reports exactly the changed ones.
    @Test func changedObjectsJoinTheChangeSetsOnce_1_5_5() throws {
        let stack = try TestStack()
        try stack.seed(3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let items = try fetchItems(ctx)
            let changes = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: ctx)
            for item in items { item.name = "x"; item.price = 5; item.name = "y" }
            items[2].name = "item 3"
            items[2].price = 30  // back to the snapshot
            #expect(ctx.updatedObjects == Set(items[0...1]))
            ctx.processPendingChanges()
            let announced = changes.notes.last?.userInfo?[ManagedObjectContext.NotificationKey.updatedObjects.rawValue] as? Set<ManagedObject>
            #expect(announced == Set(items))
            let saved = NotificationRecorder(ManagedObjectContext.didSaveNotification, object: ctx)
            try ctx.save()
            let reported = saved.notes.last?.userInfo?[ManagedObjectContext.NotificationKey.updatedObjects.rawValue] as? Set<ManagedObject>
            #expect(reported == Set(items[0...1]))
            #expect(ctx.updatedObjects.isEmpty)
            items[2].price = 31  // joins again after the save emptied the set
            #expect(ctx.updatedObjects == [items[2]])
        }
    }

    // Semantics §1.5, §2.3: the first change to a fetched object copies the values it shares with its snapshot and
    // the row cache; the snapshot (committed values), the cached row (what another context's fault reads) and
    // the change set stay exact, and later changes write in place.
    @Test func firstChangeLeavesSnapshotAndRowCacheAlone_1_5_2_3() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let ctx = stack.context()
        let other = stack.context()
        try ctx.performAndWait {
            var request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])
            request.returnsObjectsAsFaults = false
            let item = try ctx.fetch(request, as: Item.self)[0]
            item.name = "changed"
            item.price = 11
            item.price = 12
            #expect(item.committedValues(forKeys: ["name", "price"])["name"] as? String == "item 1")
            #expect(item.committedValues(forKeys: ["name", "price"])["price"] as? Double == 10)
            #expect(Set(item.changedValues().keys) == ["name", "price"])
            #expect(item.name == "changed" && item.price == 12)
            let seen = other.performAndWait { () -> (String?, Double) in
                let twin = other.object(with: item.objectID) as! Item
                return (twin.name, twin.price)
            }
            #expect(seen.0 == "item 1" && seen.1 == 10)
            item.price = 10  // back to the snapshot: only the name is changed
            #expect(Set(item.changedValues().keys) == ["name"])
        }
    }

    // Semantics §4: an `IN` list fetches the matching rows whatever its length; its placeholders are written in
    // one buffer (one for one value, none dangling).
    @Test func inListsOfAnyLengthFetchTheirRows_4() throws {
        #expect(SQLiteQueryBuilder.placeholders(1) == "?")
        #expect(SQLiteQueryBuilder.placeholders(2) == "?, ?")
        #expect(SQLiteQueryBuilder.placeholders(500) == Array(repeating: "?", count: 500).joined(separator: ", "))
        let stack = try TestStack()
        try stack.seed(600)
        let ctx = stack.context()
        try ctx.performAndWait {
            for ids in [[7], [3, 9], Array(1...500).map { $0 * 3 % 601 }] {
                let found = try fetchItems(ctx, .in("id", ids.map { Int64($0) })).map(\.id)
                #expect(found == ids.filter { $0 <= 600 }.sorted().map { Int64($0) })
            }
        }
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

    // Semantics §1.1 (layer 1): the coordinator checks every updated row of a save against the row cache under one
    // lock; the rows another context saved meanwhile are the conflicts (new version 2, the cached row), the others
    // pass, and nothing is written.
    @Test func layerOneChecksEveryUpdatedRowOfASave_1_1() throws {
        let stack = try TestStack()
        try stack.seed(6)
        let stale = stack.context()
        let fresh = stack.context()
        let staleItems = try stale.performAndWait {
            let items = try fetchItems(stale)
            for item in items { _ = item.name }  // loaded (faults fired) at version 1
            return items
        }
        try fresh.performAndWait {
            let items = try fetchItems(fresh)
            items[1].price = 200
            items[4].price = 500
            try fresh.save()  // rows 2 and 5 are at version 2 in the cache now
        }
        let (error, conflicted): (ObjectGraphError?, Set<Int64>) = stale.performAndWait {
            for item in staleItems { item.name = "stale \(item.id)" }
            do { try stale.save(); return (nil, []) } catch let error as ObjectGraphError {
                return (error, Set(error.conflictList.map { ($0.sourceObject as! Item).id }))
            } catch { return (nil, []) }
        }
        #expect(error?.code == .merge)
        let conflicts = error?.conflictList ?? []
        #expect(conflicted == [2, 5])
        #expect(conflicts.allSatisfy { $0.oldVersionNumber == 1 && $0.newVersionNumber == 2 })
        #expect(conflicts.allSatisfy { $0.cachedSnapshot != nil && $0.persistedSnapshot == nil })
        #expect(try stack.sql("SELECT ZNAME FROM ZITEM ORDER BY ZID").map { $0[0] } == (1...6).map { .text("item \($0)") })
    }

    // Semantics §2.3, §4: the store makes a fetch's entries as it reads the rows; they are the store's rows with
    // this store's object IDs, a row-cache reference marked on each entry with a row, nil exactly when the store
    // cannot evaluate the fetch, for the SQLite store (its own loop) and the in-memory one (the default mapping).
    @Test func storeEntriesAreItsRowsWithIDs_2_3_4() throws {
        for type in [PersistentStoreType.sqlite, .inMemory] {
            let stack = try TestStack(type: type)
            try stack.seed(5)
            let item = try #require(stack.model.entity(named: "Item"))
            for (format, idsOnly) in [("id >= 2", false), ("id IN {1, 4}", true), ("ANY tag.name == 'x' OR id < 3", false)] {
                let fetch = StoreFetch(entity: item, predicate: try ObjectPredicate(format: format), sortDescriptors: [ObjectSortDescriptor("id")],
                                       limit: 0, offset: 0, idsOnly: idsOnly)
                let (pairs, entries, number) = try stack.coordinator.withStore { store in
                    (store.canEvaluate(fetch) ? try store.fetch(fetch) : nil, try store.fetchEntriesIfEvaluable(fetch), store.storeNumber)
                }
                #expect((pairs == nil) == (entries == nil), "\(type) \(format)")
                guard let pairs, let entries else { continue }
                #expect(entries.map(\.id) == pairs.map { ManagedObjectID(entity: item, primaryKey: $0.key, storeNumber: number) }, "\(type) \(format)")
                #expect(entries.map(\.row) == pairs.map(\.row), "\(type) \(format)")
                #expect(entries.allSatisfy { $0.retained == ($0.row != nil) && $0.retained == !idsOnly }, "\(type) \(format)")
            }
        }
    }

    // Semantics §4: an `IN` list binds its values in one loop with the checks of a single comparison: a value of the
    // wrong type is reported (invalid fetch request, naming the value), a list of object IDs matches a to-one.
    @Test func inListsCheckEveryValue_4() throws {
        let stack = try TestStack()
        try stack.seed(3)
        let ctx = stack.context()
        try ctx.performAndWait {
            do {
                _ = try fetchItems(ctx, .in("id", [Int64(1), "two"]))
                Issue.record("a string in an integer IN list was accepted")
            } catch let error as ObjectGraphError {
                #expect(error.code == .invalidFetchRequest)
                #expect("\(error)".contains("two"))
            }
            let items = try fetchItems(ctx)
            let tags = (0..<2).map { n -> Tag in
                let tag = Tag(context: ctx)
                tag.name = "t\(n)"
                return tag
            }
            items[0].tag = tags[0]
            items[2].tag = tags[1]
            try ctx.save()
            let tagged = try fetchItems(ctx, .in("tag", stored: tags.map { .objectID($0.objectID) }))
            #expect(tagged.map(\.id) == [1, 3])
            do {
                _ = try fetchItems(ctx, .in("tag", stored: [.objectID(tags[0].objectID), .integer(7)]))
                Issue.record("an integer in a relationship IN list was accepted")
            } catch let error as ObjectGraphError {
                #expect(error.code == .invalidFetchRequest)
            }
        }
    }

    // A property is found by its name as `==` compares strings: the comparison of representations that comes
    // first only finds a key sooner. Keys built at run time (a long name, not a literal), and a name written with
    // another Unicode form (decomposed é), find the same property; an unknown key finds none.
    @Test func propertiesAreFoundByEqualNamesWhateverTheirRepresentation() throws {
        let long = "aVeryLongAttributeNameBeyondSmallStrings"
        let entity = EntityDescription(
            name: "Thing", managedObjectClass: ManagedObject.self,
            attributes: [
                AttributeDescription(name: "id", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                AttributeDescription(name: "caf\u{E9}", type: .string),
                AttributeDescription(name: long, type: .string),
            ])
        _ = try ManagedObjectModel(entities: [entity])
        let built = ["aVeryLong", "AttributeName", "BeyondSmallStrings"].joined()
        #expect(entity.propertyRef(built) == entity.propertyRef(long))
        #expect(entity.propertyRef(built) != nil)
        #expect(entity.propertyRef("cafe\u{301}") == entity.propertyRef("caf\u{E9}"))
        #expect(entity.propertyRef("cafe\u{301}") != nil)
        #expect(entity.propertyRef(String("xid".dropFirst())) == entity.propertyRef("id"))
        #expect(entity.propertyRef("cafe") == nil)
        #expect(entity.propertyRef("Id") == nil)
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

    // House rule (nothing that feeds work or output depends on set order or addresses), semantics §3.6: a save
    // writes its updated and deleted rows in primary-key order, not in the order its change sets hash their
    // objects (addresses). The history changes of the transaction, which record the rows in the order they
    // were written, come out in key order on every run. Key order also walks the table's
    // B-tree once, front to back, instead of at random (Benchmarks/README.md).
    @Test func updatesAndDeletesAreWrittenInKeyOrder_3_6() throws {
        let stack = try TestStack(model: PersistentHistoryTests.historyModel(), options: PersistentHistoryTests.tracked())
        let ctx = stack.context()
        let keys: [Int64] = try ctx.performAndWait {
            for i in 0..<200 {
                let item = Item(context: ctx)
                item.id = Int64(i)
            }
            try ctx.save()
            ctx.reset()
            let items = try fetchItems(ctx)
            // Changed in an order of their own (descending ids), so neither the fetch's order nor the order of
            // the changes decides.
            for item in items.reversed() { item.price = 1 }
            try ctx.save()
            for item in items where item.id % 3 == 0 { ctx.delete(item) }
            try ctx.save()
            return items.map { $0.objectID.primaryKey! }
        }
        let history = try stack.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
        #expect(history.count == 3)
        let updated = history[1].changes!.map { $0.changedObjectID.primaryKey! }
        #expect(updated.count == 200)
        #expect(updated == keys.sorted())
        let deleted = history[2].changes!.map { $0.changedObjectID.primaryKey! }
        #expect(deleted.count == 67)
        #expect(deleted == deleted.sorted())
    }
}
