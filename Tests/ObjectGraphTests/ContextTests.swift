import Foundation
import Testing
@testable import ObjectGraph

/// Contexts: registry, child contexts, perform/performAndWait, staleness, object lookup, delete rules,
/// relationships, rollback/reset/refresh, save notifications.
@Suite struct ContextTests {

    // MARK: - Weak registry (semantics §2.1 step 8)

    // Semantics §2.1 step 8: after a save, objects that nothing else references are dropped.
    @Test func registryIsWeakAfterSave_2_1() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            var items: [Item] = []
            for i in 1...10 {
                let item = Item(context: ctx)
                item.id = Int64(i)
                item.price = Double(i)
                items.append(item)
            }
            #expect(ctx.registeredObjectCount == 10)
            try ctx.save()
            #expect(ctx.registeredObjectCount == 10)  // still referenced by `items`
            items.removeAll()
        }
        let count = ctx.performAndWait { ctx.registeredObjectCount }
        #expect(count == 0)
    }

    // Semantics §2.1 step 8: a context holds strong references to objects with pending changes.
    @Test func objectsWithPendingChangesStayRegistered_2_1() throws {
        let stack = try TestStack()
        try stack.seed(5)
        let ctx = stack.context()
        try ctx.performAndWait {
            let items = try fetchItems(ctx)
            items[0].price = 111  // updated
            ctx.delete(items[1])  // deleted
            for i in 100..<103 {  // inserted, never referenced by the test
                let item = Item(context: ctx)
                item.id = Int64(i)
            }
        }
        let (count, inserted, updated, deleted) = ctx.performAndWait {
            (ctx.registeredObjectCount, ctx.insertedObjects.count, ctx.updatedObjects.count, ctx.deletedObjects.count)
        }
        #expect(count == 5)  // 3 inserted + 1 updated + 1 deleted; the 3 clean ones went away
        #expect(inserted == 3)
        #expect(updated == 1)
        #expect(deleted == 1)
        let price = ctx.performAndWait { (ctx.updatedObjects.first as? Item)?.price }
        #expect(price == 111)
    }

    // Semantics §2.1 step 8 / §4: retainsRegisteredObjects = true makes the registry strong.
    @Test func retainsRegisteredObjectsKeepsThem_2_1() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            ctx.retainsRegisteredObjects = true
            for i in 1...10 {
                let item = Item(context: ctx)
                item.id = Int64(i)
            }
            try ctx.save()
        }
        #expect(ctx.performAndWait { ctx.registeredObjectCount } == 10)
        // Fetched (clean) objects are kept too.
        let reader = stack.context()
        try reader.performAndWait {
            reader.retainsRegisteredObjects = true
            _ = try fetchItems(reader)
        }
        #expect(reader.performAndWait { reader.registeredObjectCount } == 10)
    }

    // MARK: - Child contexts (semantics §2.2)

    // Semantics §2.2 / §2.1 step 4: a child save keeps IDs temporary, leaves the child clean and makes the
    // changes the parent's own inserted/updated/deleted objects (also in its objects-did-change).
    @Test func childSaveBecomesParentsPendingChanges_2_2() throws {
        let stack = try TestStack()
        let ids = try stack.seed(3)
        let parent = stack.context(name: "parent")
        let child = stack.child(of: parent)
        let parentChanges = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: parent)
        let newID: ManagedObjectID = try child.performAndWait {
            let items = try fetchItems(child)
            items[0].price = 111
            child.delete(items[1])
            let item = Item(context: child)
            item.id = 50
            item.price = 500
            try child.save()
            #expect(!child.hasChanges)
            #expect(item.objectID.isTemporaryID)
            return item.objectID
        }
        #expect(newID.isTemporaryID)
        try parent.performAndWait {
            #expect(parent.hasChanges)
            #expect(Set(parent.insertedObjects.map(\.objectID)) == [newID])
            #expect(Set(parent.updatedObjects.map(\.objectID)) == [ids[0]])
            #expect(Set(parent.deletedObjects.map(\.objectID)) == [ids[1]])
            let inserted = try #require(parent.registeredObject(for: newID) as? Item)
            #expect(inserted.objectID.isTemporaryID)
            #expect(inserted.price == 500)
            #expect(inserted.isInserted)
            let updated = try #require(parent.registeredObject(for: ids[0]) as? Item)
            #expect(updated.price == 111)
            #expect(updated.isUpdated)
        }
        let notes = parentChanges.notes.compactMap(ObjectsDidChange.init)
        let reportedInserted = Set(notes.flatMap { $0.inserted.map(\.objectID) })
        let reportedUpdated = Set(notes.flatMap { $0.updated.map(\.objectID) })
        let reportedDeleted = Set(notes.flatMap { $0.deleted.map(\.objectID) })
        let reportedRefreshed = notes.flatMap { $0.refreshed }
        #expect(reportedInserted == [newID])
        #expect(reportedUpdated == [ids[0]])
        #expect(reportedDeleted == [ids[1]])
        #expect(reportedRefreshed.isEmpty)
    }

    // Semantics §2.2 / §10 (item 7): a child save writes nothing to the store; an independent context on the
    // same coordinator sees nothing until the parent (root) saves.
    @Test func independentContextSeesNothingUntilParentSaves_2_2() throws {
        let stack = try TestStack()
        let ids = try stack.seed(3)
        let parent = stack.context()
        let child = stack.child(of: parent)
        try child.performAndWait {
            let items = try fetchItems(child)
            items[0].price = 111
            child.delete(items[2])
            let item = Item(context: child)
            item.id = 50
            item.price = 500
        }
        let writesBefore = ctxWrites(stack.coordinator)
        try child.performAndWait { try child.save() }
        #expect(ctxWrites(stack.coordinator) == writesBefore)

        let independent = stack.context()
        try independent.performAndWait {
            let items = try fetchItems(independent)
            #expect(ctxIDs(items) == [1, 2, 3])
            #expect(items[0].price == 10)
        }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZITEM") == [[.integer(3)]])

        try parent.performAndWait { try parent.save() }
        #expect(ctxWrites(stack.coordinator) > writesBefore)
        let fresh = stack.context()
        try fresh.performAndWait {
            let items = try fetchItems(fresh)
            #expect(ctxIDs(items) == [1, 2, 50])
            #expect(items[0].price == 111)
            #expect(items[0].objectID == ids[0])
            #expect(items[2].price == 500)
        }
    }

    // Semantics §2.2 / §10 (item 7): "A child save … does no I/O". Here the child saves inserts and updates of
    // objects it has loaded (no deletes, whose propagation may legitimately need unloaded relationships).
    @Test func childSaveDoesNoStoreIO_2_2() throws {
        let stack = try TestStack()
        try stack.seed(3)
        let parent = stack.context()
        let child = stack.child(of: parent)
        try child.performAndWait {
            let items = try fetchItems(child)
            items[0].price = 111
            items[1].name = "renamed"
            let item = Item(context: child)
            item.id = 50
        }
        let before = stack.coordinator.counters.statements
        try child.performAndWait { try child.save() }
        #expect(stack.coordinator.counters.statements == before)
        parent.performAndWait {
            #expect(parent.updatedObjects.count == 2)
            #expect(parent.insertedObjects.count == 1)
        }
    }

    // Semantics §2.2: a child fetch sees the parent's unsaved inserts, edits and deletes, with the child's
    // own pending inserts laid on top.
    @Test func childFetchSeesParentsUnsavedState_2_2() throws {
        let stack = try TestStack()
        try stack.seed(3)
        let parent = stack.context()
        try parent.performAndWait {
            let items = try fetchItems(parent)
            items[0].price = 999
            parent.delete(items[1])
            let item = Item(context: parent)
            item.id = 100
            item.name = "parent insert"
            item.price = 1000
        }
        let child = stack.child(of: parent)
        try child.performAndWait {
            let own = Item(context: child)
            own.id = 200
            own.price = 2000
            let items = try fetchItems(child)
            #expect(ctxIDs(items) == [1, 3, 100, 200])
            #expect(items[0].price == 999)
            #expect(items[2].name == "parent insert")
            #expect(items[2].price == 1000)
            #expect(items[3] === own)
            // Objects in the child are the child's own instances.
            #expect(items[0].managedObjectContext === child)
            let expensive = try fetchItems(child, .compare("price", .greaterThan, 500))
            #expect(ctxIDs(expensive) == [1, 100, 200])
        }
    }

    // Docs/coredata-behaviour.md §2.2: a child's fetch with no predicate and a limit sees the parent's stored rows,
    // then its unsaved inserts; the child's deletes of them, pushed, take them out of the parent's inserts, and the
    // parent's save writes no row for them.
    @Test func childDeletesOfParentsUnsavedInsertsLeaveNoInsert_2_2() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let parent = stack.context()
        parent.performAndWait {
            for i in 1...5 {
                let item = Item(context: parent)
                item.id = Int64(100 + i)
            }
        }
        let child = stack.child(of: parent)
        try child.performAndWait {
            var request = FetchRequest(entityName: "Item")
            request.fetchLimit = 4
            let items = try child.fetch(request, as: Item.self)
            #expect(items.map(\.id) == [1, 2, 101, 102])
            #expect(items.map(\.objectID.isTemporaryID) == [false, false, true, true])
            for item in items { child.delete(item) }
            try child.save()
        }
        try parent.performAndWait {
            #expect(parent.insertedObjects.map { ($0 as! Item).id }.sorted() == [103, 104, 105])
            #expect(parent.deletedObjects.filter { !$0.isInserted }.count == 2)
            try parent.save()
        }
        let reader = stack.context()
        let stored = try reader.performAndWait { try fetchItems(reader).map(\.id) }
        #expect(stored == [103, 104, 105])
    }

    // Semantics §2.1 step 4 / §2.2: after the parent (root) saves, the objects have permanent IDs in the parent.
    @Test func parentSaveMakesIDsPermanent_2_2() throws {
        let stack = try TestStack()
        let parent = stack.context()
        let child = stack.child(of: parent)
        let tempIDs: [ManagedObjectID] = try child.performAndWait {
            var ids: [ManagedObjectID] = []
            for i in 1...3 {
                let item = Item(context: child)
                item.id = Int64(i)
                ids.append(item.objectID)
            }
            try child.save()
            return ids
        }
        #expect(tempIDs.allSatisfy { $0.isTemporaryID })
        try parent.performAndWait {
            let objects = try tempIDs.map { try #require(parent.registeredObject(for: $0)) }
            try parent.save()
            #expect(!parent.hasChanges)
            let stillTemporary = objects.filter { $0.objectID.isTemporaryID }
            #expect(stillTemporary.isEmpty)
            let permanent = objects.map(\.objectID)
            for id in permanent { #expect(parent.registeredObject(for: id) != nil) }
        }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZITEM") == [[.integer(3)]])
    }

    // Semantics §2.2: awakeFromInsert runs again in every context of the parent chain.
    @Test func awakeFromInsertRunsInParent_2_2() throws {
        let stack = try TestStack(model: ctxNoteModel())
        let parent = stack.context()
        let child = stack.child(of: parent)
        let (id, childCount) = try child.performAndWait {
            let note = CtxNote(context: child)
            note.text = "hello"
            try child.save()
            return (note.objectID, note.awakeFromInsertCount)
        }
        #expect(childCount == 1)
        try parent.performAndWait {
            let note = try #require(parent.registeredObject(for: id) as? CtxNote)
            #expect(note.awakeFromInsertCount == 1)
            #expect(note.text == "hello")
        }
    }

    // MARK: - perform vs performAndWait (semantics §8)

    // Semantics §8: performAndWait is reentrant and does not process pending changes by itself.
    @Test func performAndWaitIsReentrantAndPostsNothing_8() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let recorder = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: ctx)
        let depth = ctx.performAndWait {
            ctx.performAndWait {
                ctx.performAndWait {
                    let item = Item(context: ctx)
                    item.id = 1
                    return 3
                }
            }
        }
        #expect(depth == 3)
        #expect(recorder.notes.isEmpty)
        #expect(ctx.performAndWait { ctx.insertedObjects.count } == 1)
        // processPendingChanges by hand posts it.
        ctx.performAndWait { ctx.processPendingChanges() }
        #expect(recorder.notes.count == 1)
    }

    // Semantics §8: perform processes pending changes after the block (objects-did-change is posted).
    @Test func performProcessesPendingChanges_8() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let recorder = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: ctx)
        let inserted = CtxBox<ManagedObjectID?>(nil)
        let done = DispatchSemaphore(value: 0)
        ctx.perform {
            let item = Item(context: ctx)
            item.id = 1
            inserted.value = item.objectID
            done.signal()
        }
        done.wait()
        ctx.performAndWait {}  // the perform block, including its processPendingChanges, has finished
        let notes = recorder.notes
        #expect(notes.count == 1)
        let payload = try #require(notes.first.flatMap(ObjectsDidChange.init))
        let reported = ctx.performAndWait { Set(payload.inserted.map(\.objectID)) }
        #expect(reported == Set([try #require(inserted.value)]))
    }

    // Semantics §8: the async perform variant processes pending changes too.
    @Test func asyncPerformProcessesPendingChanges_8() async throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let recorder = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: ctx)
        let id = try await ctx.perform {
            let item = Item(context: ctx)
            item.id = 1
            return item.objectID
        }
        #expect(recorder.notes.count == 1)
        #expect(id.isTemporaryID)
    }

    // MARK: - Staleness (semantics §2.3)

    // Semantics §2.3 / §2.4 / §10 (item 9): with the default infinite staleness, refresh(mergeChanges: false)
    // re-reads the coordinator's row cache and still shows the old value after another coordinator wrote the
    // row; with stalenessInterval = 0 it reads SQL and shows the new one.
    @Test func refreshUsesRowCacheUntilStalenessIsZero_2_3() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let ctx = stack.context()
        let item: Item = try ctx.performAndWait {
            #expect(ctx.stalenessInterval < 0)  // default: infinite
            let item = try #require(try ctx.existingObject(with: ids[0]) as? Item)
            #expect(item.price == 10)
            return item
        }
        let other = stack.context(try stack.secondCoordinator())
        try other.performAndWait {
            let item = try #require(try other.existingObject(with: ids[0]) as? Item)
            item.price = 500
            try other.save()
        }
        #expect(try stack.sql("SELECT ZPRICE FROM ZITEM WHERE Z_PK = \(try #require(ids[0].primaryKey))") == [[.real(500)]])
        ctx.performAndWait {
            ctx.refresh(item, mergeChanges: false)
            #expect(item.isFault)
            #expect(item.price == 10)
        }
        ctx.performAndWait {
            ctx.stalenessInterval = 0
            ctx.refresh(item, mergeChanges: false)
            #expect(item.price == 500)
        }
    }

    // MARK: - object(with:) / existingObject(with:) / registeredObject(for:) (semantics §4)

    // Semantics §4: object(with:) never does I/O and never fails, even for a missing row.
    @Test func objectWithReturnsFaultWithoutIO_4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let missing = ManagedObjectID(entity: ids[0].entity, primaryKey: 9_999, storeNumber: ids[0].storeNumber)
        let ctx = stack.context()
        let before = stack.coordinator.counters.statements
        ctx.performAndWait {
            let object = ctx.object(with: missing)
            #expect(object.isFault)
            #expect(object.objectID == missing)
            #expect(ctx.object(with: missing) === object)  // uniqued
            let existing = ctx.object(with: ids[0])
            #expect(existing.isFault)
        }
        #expect(stack.coordinator.counters.statements == before)
    }

    // Semantics §4: existingObject(with:) fails (133000) for a missing row and never returns a fault.
    @Test func existingObjectThrowsForMissingRow_4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let missing = ManagedObjectID(entity: ids[0].entity, primaryKey: 9_999, storeNumber: ids[0].storeNumber)
        let ctx = stack.context()
        try ctx.performAndWait {
            let error = #expect(throws: ObjectGraphError.self) { try ctx.existingObject(with: missing) }
            #expect(error?.code == .referentialIntegrity)
            #expect(error?.code.rawValue == 133000)
            let item = try #require(try ctx.existingObject(with: ids[0]) as? Item)
            #expect(!item.isFault)
            #expect(item.id == 1)
            // A registered fault is loaded by existingObject.
            let other = stack.context()
            try other.performAndWait {
                let fault = other.object(with: ids[0])
                #expect(fault.isFault)
                let loaded = try other.existingObject(with: ids[0])
                #expect(loaded === fault)
                #expect(!loaded.isFault)
            }
        }
    }

    // Semantics §4: registeredObject(for:) returns only objects already in memory.
    @Test func registeredObjectReturnsOnlyRegistered_4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let ctx = stack.context()
        let before = stack.coordinator.counters.statements
        ctx.performAndWait {
            #expect(ctx.registeredObject(for: ids[0]) == nil)
            let fault = ctx.object(with: ids[0])
            #expect(ctx.registeredObject(for: ids[0]) === fault)
            #expect(ctx.registeredObject(for: ids[1]) == nil)
        }
        #expect(stack.coordinator.counters.statements == before)
    }

    // Semantics §4: shouldDeleteInaccessibleFaults (default true): a fault whose row is gone reads as a
    // deleted object with nil/zero values.
    @Test func inaccessibleFaultReadsAsDeleted_4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let ctx = stack.context()
        let item: Item = ctx.performAndWait {
            #expect(ctx.shouldDeleteInaccessibleFaults)
            return ctx.object(with: ids[1]) as! Item
        }
        let other = stack.context(try stack.secondCoordinator())
        try other.performAndWait {
            other.delete(try other.existingObject(with: ids[1]))
            try other.save()
        }
        ctx.performAndWait {
            #expect(item.isFault)
            #expect(item.name == nil)
            #expect(item.isDeleted)
            #expect(item.price == 0)
            #expect(item.id == 0)
            #expect(item.tag == nil)
        }
    }

    // Semantics §4 shouldDeleteInaccessibleFaults: a fault whose row was deleted elsewhere
    // joins deletedObjects and the next objects-did-change reports it; the cache miss reads no row (the store
    // returned none), so it counts no row read and no fault fulfilled from the store.
    @Test("An inaccessible fault joins deletedObjects and is reported; no row read is counted (§4)")
    func rule27_inaccessibleFaultIsADeleteReported_4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let coordinator = try stack.secondCoordinator()
        let ctx = stack.context(coordinator)
        let item: Item = ctx.performAndWait { ctx.object(with: ids[1]) as! Item }
        let other = stack.context()
        try other.performAndWait {
            other.delete(try other.existingObject(with: ids[1]))
            try other.save()
        }
        let changes = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: ctx)
        try ctx.performAndWait {
            let reads = coordinator.counters.rowsRead, misses = coordinator.counters.rowCacheMisses
            #expect(item.name == nil)
            #expect(item.isDeleted)
            #expect(coordinator.counters.rowCacheMisses - misses == 1)
            #expect(coordinator.counters.rowsRead == reads)
            #expect(ctx.deletedObjects == [item])
            #expect(ctx.hasChanges)
            ctx.processPendingChanges()
            let change = try #require(changes.notes.last.flatMap(ObjectsDidChange.init))
            #expect(change.deleted == [item])
            try ctx.save()  // the row is already gone: the delete is not an error
            #expect(!ctx.hasChanges)
        }
    }

    // Semantics §4: with shouldDeleteInaccessibleFaults = false, firing such a fault throws.
    @Test func inaccessibleFaultThrowsWhenNotDeleting_4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let ctx = stack.context()
        let item: Item = ctx.performAndWait {
            ctx.shouldDeleteInaccessibleFaults = false
            return ctx.object(with: ids[1]) as! Item
        }
        let other = stack.context(try stack.secondCoordinator())
        try other.performAndWait {
            other.delete(try other.existingObject(with: ids[1]))
            try other.save()
        }
        ctx.performAndWait {
            let error = #expect(throws: ObjectGraphError.self) { try item.materialize() }
            #expect(error?.code == .referentialIntegrity)
            #expect(item.isFault)
            #expect(!item.isDeleted)
        }
    }

    // MARK: - Delete rules (semantics §2.1 step 1)

    // Semantics §2.1 step 1: nullify — deleting a tag clears its items' tag.
    @Test func deleteRuleNullify_2_1() throws {
        let stack = try TestStack()
        let seeded = try ctxSeedTagged(stack, tagNames: ["red"], itemsPerTag: 3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let tag = try #require(try ctx.existingObject(with: seeded.tags[0]) as? Tag)
            let items = try fetchItems(ctx)
            #expect(items.allSatisfy { $0.tag === tag })
            ctx.delete(tag)
            ctx.processPendingChanges()
            #expect(items.allSatisfy { $0.tag == nil })
            #expect(items.allSatisfy { $0.isUpdated })
            try ctx.save()
        }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZTAG") == [[.integer(0)]])
        let fresh = stack.context()
        try fresh.performAndWait {
            let items = try fetchItems(fresh)
            #expect(items.count == 3)
            #expect(items.allSatisfy { $0.tag == nil })
        }
    }

    // Semantics §2.1 step 1: cascade — deleting a tag deletes its items.
    @Test func deleteRuleCascade_2_1() throws {
        let stack = try TestStack(model: makeModel(tagItemsDeleteRule: .cascade))
        let seeded = try ctxSeedTagged(stack, tagNames: ["red", "blue"], itemsPerTag: 3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let red = try ctx.existingObject(with: seeded.tags[0])
            let items = try fetchItems(ctx)
            ctx.delete(red)
            ctx.processPendingChanges()
            #expect(items.filter { $0.isDeleted }.map { $0.id } == [1, 2, 3])
            #expect(items.filter { !$0.isDeleted }.map { $0.id } == [4, 5, 6])
            #expect(ctx.deletedObjects.count == 4)
            try ctx.save()
        }
        let fresh = stack.context()
        try fresh.performAndWait { () throws in
            #expect(ctxIDs(try fetchItems(fresh)) == [4, 5, 6])
            #expect(try fresh.count(for: FetchRequest(entityName: "Tag")) == 1)
        }
    }

    // Semantics §2.1 steps 1 and 3: deny — the save fails with 1600 and nothing is written.
    @Test func deleteRuleDeny_2_1() throws {
        let stack = try TestStack(model: makeModel(tagItemsDeleteRule: .deny))
        let seeded = try ctxSeedTagged(stack, tagNames: ["red"], itemsPerTag: 2)
        let ctx = stack.context()
        let writes = ctxWrites(stack.coordinator)
        try ctx.performAndWait {
            let tag = try ctx.existingObject(with: seeded.tags[0])
            ctx.delete(tag)
            let error = #expect(throws: ObjectGraphError.self) { try ctx.save() }
            #expect(error?.code == .relationshipDeniedDelete)
            #expect(error?.code.rawValue == 1600)
            #expect(tag.isDeleted)  // the context keeps its changes
            #expect(ctx.hasChanges)
        }
        #expect(ctxWrites(stack.coordinator) == writes)
        #expect(try stack.sql("SELECT COUNT(*) FROM ZTAG") == [[.integer(1)]])
        // Emptying the relationship makes the delete legal.
        try ctx.performAndWait {
            let tag = try #require(ctx.registeredObject(for: seeded.tags[0]) as? Tag)
            for item in try fetchItems(ctx) { item.tag = nil }
            #expect(tag.items.isEmpty)
            try ctx.save()
        }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZTAG") == [[.integer(0)]])
    }

    // Semantics §2.1 step 1: noAction — the destinations keep pointing at the deleted object.
    @Test func deleteRuleNoAction_2_1() throws {
        let stack = try TestStack(model: makeModel(tagItemsDeleteRule: .noAction))
        let seeded = try ctxSeedTagged(stack, tagNames: ["red"], itemsPerTag: 2)
        let ctx = stack.context()
        try ctx.performAndWait {
            let tag = try ctx.existingObject(with: seeded.tags[0])
            let items = try fetchItems(ctx)
            ctx.delete(tag)
            ctx.processPendingChanges()
            for item in items {
                #expect(item.primitiveValue(forKey: "tag") == .objectID(seeded.tags[0]))
                #expect(!item.isUpdated)
            }
            #expect(ctx.deletedObjects.count == 1)
            #expect(ctx.updatedObjects.isEmpty)
            try ctx.save()
        }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZTAG") == [[.integer(0)]])
        #expect(try stack.sql("SELECT COUNT(*) FROM ZITEM WHERE ZTAG IS NOT NULL") == [[.integer(2)]])
    }

    // MARK: - Relationships and inverses (semantics §4)

    // Semantics §4: setting a to-one updates the inverse to-many.
    @Test func settingToOneUpdatesInverse_4() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let tag = Tag(context: ctx)
            let item = Item(context: ctx)
            item.id = 1
            item.tag = tag
            #expect(tag.items == [item])
            item.tag = nil
            #expect(tag.items.isEmpty)
            item.tag = tag
            try ctx.save()
        }
        let fresh = stack.context()
        try fresh.performAndWait {
            let items = try fetchItems(fresh)
            let tag = try #require(items.first?.tag)
            #expect(tag.items == Set(items))
        }
    }

    // Semantics §4: moving an item between tags (from either side) updates both tags.
    @Test func movingBetweenTagsUpdatesBoth_4() throws {
        let stack = try TestStack()
        let seeded = try ctxSeedTagged(stack, tagNames: ["red", "blue"], itemsPerTag: 2)
        let ctx = stack.context()
        try ctx.performAndWait {
            let red = try #require(try ctx.existingObject(with: seeded.tags[0]) as? Tag)
            let blue = try #require(try ctx.existingObject(with: seeded.tags[1]) as? Tag)
            let items = try fetchItems(ctx)
            #expect(red.items == [items[0], items[1]])
            #expect(blue.items == [items[2], items[3]])
            // To-one side.
            items[0].tag = blue
            #expect(red.items == [items[1]])
            #expect(blue.items == [items[0], items[2], items[3]])
            // To-many side.
            red.items = red.items.union([items[2]])
            #expect(items[2].tag === red)
            #expect(blue.items == [items[0], items[3]])
            #expect(red.items == [items[1], items[2]])
            try ctx.save()
        }
        let fresh = stack.context()
        try fresh.performAndWait {
            let items = try fetchItems(fresh)
            #expect(items.map { $0.tag?.name } == ["blue", "red", "red", "blue"])
        }
    }

    // Semantics §4: a to-many relationship fault costs one round trip on first access.
    @Test func toManyFaultLoadsWithOneSelect_4() throws {
        let stack = try TestStack()
        let seeded = try ctxSeedTagged(stack, tagNames: ["red"], itemsPerTag: 5)
        let ctx = stack.context()
        try ctx.performAndWait {
            let tag = try #require(try ctx.existingObject(with: seeded.tags[0]) as? Tag)
            #expect(tag.name == "red")
            let selects = ctxSelects(stack.coordinator)
            let relationshipFaults = ctx.counters.relationshipFaultsFired
            let items = tag.items
            #expect(items.count == 5)
            #expect(ctxSelects(stack.coordinator) - selects == 1)
            #expect(ctx.counters.relationshipFaultsFired - relationshipFaults == 1)
            #expect(Set(items.map(\.objectID)) == Set(seeded.items))
            _ = tag.items
            #expect(ctxSelects(stack.coordinator) - selects == 1)
        }
    }

    // Semantics §4: many-to-many relationships keep both sides, in memory and in the store.
    @Test func manyToManyKeepsBothSides_4() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let a = Label(context: ctx)
            a.title = "a"
            let b = Label(context: ctx)
            b.title = "b"
            let one = Item(context: ctx)
            one.id = 1
            let two = Item(context: ctx)
            two.id = 2
            one.labels = [a, b]
            two.labels = [a]
            #expect(a.items == [one, two])
            #expect(b.items == [one])
            try ctx.save()
        }
        let fresh = stack.context()
        try fresh.performAndWait {
            let items = try fetchItems(fresh)
            #expect(Set(items[0].labels.map { $0.title ?? "" }) == ["a", "b"])
            #expect(Set(items[1].labels.map { $0.title ?? "" }) == ["a"])
            let labels = try fresh.fetch(FetchRequest(entityName: "Label", sortDescriptors: [ObjectSortDescriptor("title")]), as: Label.self)
            #expect(Set(labels[0].items.map { $0.id }) == [1, 2])
            #expect(Set(labels[1].items.map { $0.id }) == [1])
            // Removing from the to-many side updates the item.
            labels[0].items = labels[0].items.filter { $0.id == 2 }
            #expect(Set(items[0].labels.map { $0.title ?? "" }) == ["b"])
            try fresh.save()
        }
        let third = stack.context()
        try third.performAndWait {
            let items = try fetchItems(third)
            #expect(Set(items[0].labels.map { $0.title ?? "" }) == ["b"])
            #expect(Set(items[1].labels.map { $0.title ?? "" }) == ["a"])
        }
    }

    // MARK: - rollback, reset, refreshAllObjects (semantics §4)

    // Semantics §4: rollback throws away inserts and deletes and returns updated objects to committed values.
    @Test func rollbackRestoresCommittedState_4() throws {
        let stack = try TestStack()
        try stack.seed(3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let items = try fetchItems(ctx)
            items[0].price = 999
            ctx.delete(items[1])
            let inserted = Item(context: ctx)
            inserted.id = 100
            #expect(ctx.hasChanges)
            ctx.rollback()
            #expect(!ctx.hasChanges)
            #expect(items[0].price == 10)
            #expect(!items[0].hasChanges)
            #expect(!items[1].isDeleted)
            #expect(items[1].price == 20)
            #expect(inserted.managedObjectContext == nil)
            #expect(ctx.registeredObject(for: inserted.objectID) == nil)
            #expect(ctxIDs(try fetchItems(ctx)) == [1, 2, 3])
        }
    }

    // Semantics §4: reset forgets every object and posts objects-did-change with invalidatedAll.
    @Test func resetInvalidatesAll_4() throws {
        let stack = try TestStack()
        try stack.seed(3)
        let ctx = stack.context()
        let recorder = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: ctx)
        try ctx.performAndWait {
            let items = try fetchItems(ctx)
            items[0].price = 999
            let inserted = Item(context: ctx)
            inserted.id = 100
            ctx.processPendingChanges()
            let registered = Set(items.map(\.objectID) + [inserted.objectID])
            let before = recorder.notes.count
            ctx.reset()
            #expect(recorder.notes.count == before + 1)
            let payload = try #require(recorder.notes.last.flatMap(ObjectsDidChange.init))
            #expect(payload.invalidatedAll)
            // The invalidatedAll key carries the invalidated objects' IDs, not a Bool.
            #expect(payload.invalidatedAllObjectIDs == registered)
            #expect(recorder.notes.last?.userInfo?["invalidatedAll"] is Set<ManagedObjectID>)
            #expect(ctx.registeredObjectCount == 0)
            #expect(!ctx.hasChanges)
            #expect(items.allSatisfy { $0.managedObjectContext == nil })
            #expect(inserted.managedObjectContext == nil)
            let again = try fetchItems(ctx)
            #expect(again[0] !== items[0])
            #expect(again[0].price == 10)
        }
    }

    // Semantics §4: refreshAllObjects keeps dirty objects' changes (materialized) and turns clean ones into faults.
    @Test func refreshAllObjectsKeepsDirtyFaultsClean_4() throws {
        let stack = try TestStack()
        try stack.seed(3)
        let ctx = stack.context()
        try ctx.performAndWait {
            var request = ctxItemRequest()
            request.returnsObjectsAsFaults = false
            let items = try ctx.fetch(request, as: Item.self)
            #expect(items.allSatisfy { !$0.isFault })
            items[0].price = 999
            let inserted = Item(context: ctx)
            inserted.id = 100
            ctx.refreshAllObjects()
            #expect(!items[0].isFault)
            #expect(items[0].isUpdated)
            #expect(items[0].price == 999)
            #expect(items[1].isFault)
            #expect(items[2].isFault)
            #expect(inserted.isInserted)
            #expect(!inserted.isFault)
            #expect(inserted.id == 100)
            #expect(ctx.hasChanges)
            #expect(items[1].price == 20)
        }
    }

    // MARK: - Save notifications (semantics §2.1 steps 2 and 7)

    // Semantics §2.1 steps 2 and 7: will-save is posted before did-save and did-save-object-IDs, whose payloads
    // list the inserted, updated and deleted objects (IDs permanent).
    @Test func saveNotificationsPayloads_2_1() throws {
        let stack = try TestStack()
        let ids = try stack.seed(3)
        let ctx = stack.context()
        let recorder = CtxSequenceRecorder([
            ManagedObjectContext.willSaveNotification, ManagedObjectContext.didSaveNotification,
            ManagedObjectContext.didSaveObjectIDsNotification,
        ], object: ctx)
        try ctx.performAndWait {
            let items = try fetchItems(ctx)
            items[0].price = 111
            ctx.delete(items[1])
            let inserted = Item(context: ctx)
            inserted.id = 100
            try ctx.save()

            #expect(recorder.names == [ManagedObjectContext.willSaveNotification, ManagedObjectContext.didSaveNotification,
                                       ManagedObjectContext.didSaveObjectIDsNotification])
            let notes = recorder.notes
            #expect(notes[0].object as AnyObject? === ctx)
            let didSave = try #require(ContextDidSave(notes[1]))
            #expect(didSave.context === ctx)
            #expect(didSave.inserted == [inserted])
            #expect(didSave.updated == [items[0]])
            #expect(didSave.deleted == [items[1]])
            let objectIDs = try #require(ContextObjectIDChanges(notes[2]))
            #expect(objectIDs.inserted == [inserted.objectID])
            #expect(!inserted.objectID.isTemporaryID)
            #expect(objectIDs.updated == [ids[0]])
            #expect(objectIDs.deleted == [ids[1]])
        }
    }

    // Semantics §2.1 step 2: will-save is posted while the changes are still pending (before anything is written).
    @Test func willSaveIsPostedBeforeWriting_2_1() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let rowsAtWillSave = CtxBox<Int>(-1)
        let observer = NotificationCenter.default.addObserver(forName: ManagedObjectContext.willSaveNotification, object: ctx, queue: nil) { [stack] _ in
            rowsAtWillSave.value = (try? stack.sql("SELECT COUNT(*) FROM ZITEM").first?.first?.int64).flatMap { $0 }.map(Int.init) ?? -2
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try ctx.performAndWait {
            let item = Item(context: ctx)
            item.id = 1
            try ctx.save()
        }
        #expect(rowsAtWillSave.value == 0)
        #expect(try stack.sql("SELECT COUNT(*) FROM ZITEM") == [[.integer(1)]])
    }
}

/// Rule 12: refreshing an inserted, unsaved object (semantics §3.2; Docs/core-data-rules.md).
@Suite struct RefreshInsertedObjectTests {
    // Semantics §3.2 (the state it ends in is our reading, Docs/core-data-rules.md):
    // refresh(_:mergeChanges: false) turns an inserted, unsaved object into a fault: its values and transient
    // values are gone and it holds no related objects. It stays registered and inserted (the insert is the
    // context's change, not a value of the object); having no row, it fires as an inaccessible fault, and the save
    // drops it without writing anything.
    @Test("refresh(mergeChanges: false) turns an inserted object into a fault (§3.2)")
    func refreshingAnInsertTurnsItIntoAFault_rule12() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = Item(context: ctx)
            item.id = 7
            item.name = "unsaved"
            try item.setValue("t", forKey: "scratch")
            let tag = Tag(context: ctx)
            item.tag = tag
            weak let weakTag = tag
            let kept = Item(context: ctx)
            kept.id = 8
            ctx.processPendingChanges()
            ctx.refresh(item, mergeChanges: false)
            #expect(item.isFault)
            #expect(item.isInserted)
            #expect(ctx.insertedObjects.contains(item))
            #expect(ctx.registeredObject(for: item.objectID) === item)
            #expect(item.objectID.isTemporaryID)
            _ = consume tag
            #expect(weakTag != nil)  // still an insert of the context: the context holds it
            // Firing it finds no row: an inaccessible fault (shouldDeleteInaccessibleFaults: nil and zero values).
            #expect(item.name == nil)
            #expect(item.id == 0)
            try ctx.save()
            #expect(try stack.sql("SELECT ZID FROM ZITEM") == [[.integer(8)]])
            #expect(try stack.sql("SELECT COUNT(*) FROM ZTAG") == [[.integer(1)]])
            #expect(item.managedObjectContext == nil)
            #expect(!ctx.hasChanges)
            withExtendedLifetime(kept) {}
        }
    }
}
