import Foundation
import Testing
@testable import ObjectGraph

/// The did-save notification a merge consumes (semantics §2.1 step 7, §3.1).
enum MGSaveNote: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case didSave, didSaveObjectIDs

    var name: Notification.Name {
        switch self {
        case .didSave: return ManagedObjectContext.didSaveNotification
        case .didSaveObjectIDs: return ManagedObjectContext.didSaveObjectIDsNotification
        }
    }

    var testDescription: String { rawValue }
}

/// Merging between contexts (semantics §3.1–§3.4, §2.3–§2.4, §10 items 8–9): the merge table, weak inserts, the
/// merge cost counters, refresh vs staleness, automatic merging, merges of remote object IDs.
@Suite struct MergeChangesTests {

    // MARK: - mergeChanges(fromContextDidSave:) — the table of §3.1

    // Semantics §3.1 (every row of the table), §10.8: the receiver has item 1 loaded with a local edit, item 2
    // loaded clean, item 3 as a registered fault, item 4 loaded; items 5 and 6 are not registered. The saver
    // updates 1, 2, 3, 5, deletes 4 and 6, inserts 7.
    @Test(arguments: MGSaveNote.allCases)
    func mergeFollowsTheTable(_ kind: MGSaveNote) throws {
        let stack = try TestStack()
        let ids = try stack.seed(6)
        let receiver = stack.context(name: "receiver")
        let r1: Item = try mgLoad(receiver, ids[0])
        let r2: Item = try mgLoad(receiver, ids[1])
        let r3 = try receiver.performAndWait { try #require(receiver.object(with: ids[2]) as? Item) }
        let r4: Item = try mgLoad(receiver, ids[3])
        receiver.performAndWait {
            r1.price = 555
            receiver.processPendingChanges()
        }
        let saver = stack.context(name: "saver")
        let saved = NotificationRecorder(kind.name, object: saver)
        let insertedID = try saver.performAndWait {
            let items = try fetchItems(saver)
            items[0].name = "S1"
            items[1].name = "S2"
            items[2].name = "S3"
            items[4].name = "S5"
            saver.delete(items[3])
            saver.delete(items[5])
            let item = Item(context: saver)
            item.id = 7
            item.name = "S7"
            item.price = 70
            try saver.save()
            return item.objectID
        }
        let note = try #require(saved.notes.first)
        let changes = MGChangeRecorder(receiver)
        let mergedNotes = NotificationRecorder(ManagedObjectContext.didMergeChangesObjectIDsNotification, object: receiver)
        let before = receiver.performAndWait { receiver.counters }
        receiver.performAndWait { receiver.mergeChanges(fromContextDidSave: note) }
        let after = receiver.performAndWait { receiver.counters }

        // What the receiver's objects-did-change reports.
        #expect(changes.inserted == [insertedID])  // inserted: always reported
        #expect(changes.refreshed == [ids[0], ids[1]])  // updated + registered + materialized: refreshed
        #expect(changes.updated.isEmpty)  // … not updated
        #expect(changes.deleted == [ids[3]])  // deleted + registered
        #expect(after.mergeObjectsRefreshed - before.mergeObjectsRefreshed == 2)

        try receiver.performAndWait {
            // Updated, registered, materialized: new values, local edit laid back on top, no conflict.
            #expect(r1.name == "S1")
            #expect(r1.price == 555)
            #expect(r1.isUpdated)
            #expect(receiver.updatedObjects.contains(r1))
            #expect(r2.name == "S2")
            #expect(!r2.hasChanges)
            // Updated, registered fault: silent and still a fault (its data is current when it fires).
            #expect(r3.isFault)
            // Updated or deleted, not registered: ignored (nothing gets registered for them).
            #expect(receiver.registeredObject(for: ids[4]) == nil)
            #expect(receiver.registeredObject(for: ids[5]) == nil)
            // Deleted, registered: deleted here, still registered and materialized, a pending delete.
            #expect(receiver.registeredObject(for: ids[3]) === r4)
            #expect(r4.isDeleted)
            #expect(!r4.isFault)
            #expect(receiver.deletedObjects.contains(r4))
            #expect(r4.name == "item 4")
            // Inserted: not pending inserts here.
            #expect(receiver.insertedObjects.isEmpty)
            #expect(r3.name == "S3")
            let fetched = try fetchItems(receiver).map { $0.id }
            #expect(fetched == [1, 2, 3, 5, 7])
        }

        // did-merge-changes-object-IDs is posted with the IDs the merge changed.
        #expect(mergedNotes.notes.count == 1)
        let merged = try #require(mergedNotes.notes.first.flatMap(ContextObjectIDChanges.init))
        #expect(merged.inserted == [insertedID])
        #expect(merged.deleted == [ids[3]])
        #expect(merged.refreshed == [ids[0], ids[1]])

        // The repeated delete of item 4 is ignored at the next save (§1.4), and the kept edit is written.
        #expect(mgTrySave(receiver) == nil)
        #expect(try mgRows(stack, id: 1).map { $0.name } == ["S1"])
        #expect(try mgRows(stack, id: 1).map { $0.price } == [555])
        #expect(try mgRows(stack, id: 4).isEmpty)
    }

    // Semantics §3.1 (faulted-in inserts are weakly registered), §2.1 step 8: merged inserts are registered and
    // reported, but only something else (here the notification's observer) keeps them alive.
    @Test(arguments: MGSaveNote.allCases)
    func mergedInsertsAreHeldWeakly(_ kind: MGSaveNote) throws {
        let stack = try TestStack()
        let receiver = stack.context(name: "receiver")
        let saver = stack.context(name: "saver")
        let saved = NotificationRecorder(kind.name, object: saver)
        let ids = try stack.seed(3, in: saver)
        let note = try #require(saved.notes.first)
        var holder: NotificationRecorder? = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: receiver)
        receiver.performAndWait { receiver.mergeChanges(fromContextDidSave: note) }
        let reported = Set((holder?.notes ?? []).compactMap(ObjectsDidChange.init).flatMap { $0.inserted.map { $0.objectID } })
        #expect(reported == Set(ids))
        receiver.performAndWait {
            #expect(receiver.insertedObjects.isEmpty)
            #expect(!receiver.hasChanges)
            #expect(receiver.registeredObjectCount == 3)  // the observer's notification holds them
        }
        holder = nil
        receiver.performAndWait {
            #expect(receiver.registeredObjectCount == 0)
            for id in ids { #expect(receiver.registeredObject(for: id) == nil) }
        }
    }

    // MARK: - Merge cost (semantics §3.1 cost model, §2.2)

    // Semantics §3.1 cost model (issue rule): with 10 objects registered in the receiver (6 materialized, 4
    // faults), merging a save that updated 5,000 objects examines at most 10 registry entries and refreshes
    // exactly the 6 registered materialized ones.
    @Test func mergeCostScalesWithRegisteredObjectsNotWithTheSave() throws {
        let stack = try TestStack()
        try stack.seed(5000)
        let receiver = stack.context(name: "receiver")
        let held: [Item] = try receiver.performAndWait {
            let items = try fetchItems(receiver, .compare("id", .lessThanOrEqualTo, 10))
            for item in items.prefix(6) { _ = item.name }
            return items
        }
        #expect(held.count == 10)
        receiver.performAndWait {
            #expect(receiver.registeredObjectCount == 10)
            #expect(held.filter { $0.isFault }.count == 4)
        }
        let saver = stack.context(name: "saver")
        let saved = NotificationRecorder(ManagedObjectContext.didSaveObjectIDsNotification, object: saver)
        try saver.performAndWait {
            for item in try fetchItems(saver) { item.price += 1 }
            try saver.save()
        }
        let note = try #require(saved.notes.first)
        #expect(ContextObjectIDChanges(note)?.updated.count == 5000)
        let changes = MGChangeRecorder(receiver)
        let before = receiver.performAndWait { receiver.counters }
        receiver.performAndWait { receiver.mergeChanges(fromContextDidSave: note) }
        let after = receiver.performAndWait { receiver.counters }
        #expect(after.mergeObjectsExamined - before.mergeObjectsExamined <= 10)
        #expect(after.mergeObjectsRefreshed - before.mergeObjectsRefreshed == 6)
        #expect(changes.refreshed == Set(held.prefix(6).map { $0.objectID }))
        receiver.performAndWait {
            #expect(held[0].price == 11)
            #expect(held.suffix(4).filter { $0.isFault }.count == 4)
            #expect(receiver.registeredObjectCount == 10)
        }
    }

    // MARK: - Refresh vs staleness (semantics §2.3, §2.4, §3.2, §10.9)

    // Semantics §2.3, §3.2: refresh reads the coordinator's row cache. Another coordinator's write leaves B's
    // cache stale: refresh and refreshAllObjects keep showing the old value until stalenessInterval = 0. On the
    // writer's own coordinator the cache is current and refresh shows the new value at once.
    @Test func refreshReadsTheRowCacheUntilStalenessIsZero() throws {
        let stack = try TestStack()
        let id = try stack.seed(1)[0]
        let a = stack.context(name: "A")
        let sibling = stack.context(name: "sibling of A")
        let b = stack.context(try stack.secondCoordinator(), name: "B")
        let itemA: Item = try mgLoad(a, id)
        let itemSibling: Item = try mgLoad(sibling, id)
        let itemB: Item = try mgLoad(b, id)
        try a.performAndWait {
            itemA.name = "A"
            try a.save()
        }
        sibling.performAndWait {
            #expect(itemSibling.name == "item 1")  // fetching or holding never changes a loaded object (§4)
            sibling.refresh(itemSibling, mergeChanges: false)
            #expect(itemSibling.name == "A")
        }
        b.performAndWait {
            #expect(b.stalenessInterval < 0)  // infinite by default
            b.refresh(itemB, mergeChanges: false)
            #expect(itemB.name == "item 1")
            b.refreshAllObjects()
            #expect(itemB.name == "item 1")
            b.stalenessInterval = 0
            b.refresh(itemB, mergeChanges: false)
            #expect(itemB.name == "A")
        }
    }

    // Semantics §3.2: refresh(mergeChanges: true) takes the store's values and lays the local changes on top,
    // never a conflict; with stalenessInterval 0 it reads past B's cache.
    @Test func refreshMergingKeepsLocalChanges() throws {
        let stack = try TestStack()
        let id = try stack.seed(1)[0]
        let a = stack.context(name: "A")
        let b = stack.context(try stack.secondCoordinator(), name: "B")
        let itemA: Item = try mgLoad(a, id)
        let itemB: Item = try mgLoad(b, id)
        try a.performAndWait {
            itemA.name = "A"
            try a.save()
        }
        b.performAndWait {
            itemB.price = 7
            b.refresh(itemB, mergeChanges: true)
            #expect(itemB.name == "item 1")  // stale cache
            #expect(itemB.price == 7)
            b.stalenessInterval = 0
            b.refresh(itemB, mergeChanges: true)
            #expect(itemB.name == "A")
            #expect(itemB.price == 7)
            #expect(itemB.isUpdated)
            #expect(itemB.changedValues().keys.sorted() == ["price"])
        }
        // The refreshed snapshot carries the new version: B saves without a conflict.
        #expect(mgTrySave(b) == nil)
        let rows = try mgRows(stack, id: 1)
        #expect(rows.map { $0.name } == ["A"])
        #expect(rows.map { $0.price } == [7])
    }

    // Semantics §2.4 pitfall (FreeCoreData testTwoStacksOnOneFileSyncThroughHistory), §3.6 replay: merging another
    // coordinator's save with the default infinite staleness re-reads B's stale cache; with stalenessInterval 0
    // the merged object shows the saved value.
    @Test func mergeFromAnotherCoordinatorNeedsZeroStaleness() throws {
        let stack = try TestStack()
        let id = try stack.seed(1)[0]
        let a = stack.context(name: "A")
        let b = stack.context(try stack.secondCoordinator(), name: "B")
        let itemA: Item = try mgLoad(a, id)
        let itemB: Item = try mgLoad(b, id)
        let saved = NotificationRecorder(ManagedObjectContext.didSaveObjectIDsNotification, object: a)
        try a.performAndWait {
            itemA.name = "A"
            try a.save()
        }
        let note = try #require(saved.notes.first)
        let changes = MGChangeRecorder(b)
        b.performAndWait {
            b.mergeChanges(fromContextDidSave: note)
            #expect(itemB.name == "item 1")
            b.stalenessInterval = 0
            b.mergeChanges(fromContextDidSave: note)
            #expect(itemB.name == "A")
        }
        #expect(changes.refreshed == [id])
        #expect(changes.updated.isEmpty)
    }

    // MARK: - automaticallyMergesChangesFromParent (semantics §3.3)

    // Semantics §3.3: off by default.
    @Test func automaticMergingIsOffByDefault() throws {
        let stack = try TestStack()
        let root = stack.context()
        let child = stack.child(of: root)
        #expect(root.performAndWait { root.automaticallyMergesChangesFromParent } == false)
        #expect(child.performAndWait { child.automaticallyMergesChangesFromParent } == false)
    }

    // Semantics §3.3 (FreeCoreData testAutomaticallyMergesFromCoordinatorSiblings): a root context merges saves of
    // sibling contexts on its coordinator, not of contexts on another coordinator; without the flag nothing is
    // merged.
    @Test func rootContextMergesSiblingSavesOnItsCoordinatorOnly() throws {
        let stack = try TestStack()
        let id = try stack.seed(1)[0]
        let coordinatorB = try stack.secondCoordinator()
        let auto = stack.context(name: "auto")
        let manual = stack.context(name: "manual")
        let autoB = stack.context(coordinatorB, name: "autoB")
        auto.performAndWait { auto.automaticallyMergesChangesFromParent = true }
        autoB.performAndWait { autoB.automaticallyMergesChangesFromParent = true }
        let autoItem: Item = try mgLoad(auto, id)
        let manualItem: Item = try mgLoad(manual, id)
        let autoBItem: Item = try mgLoad(autoB, id)

        // A sibling on the first coordinator saves.
        let sibling = stack.context(name: "sibling")
        let siblingItem: Item = try mgLoad(sibling, id)
        try sibling.performAndWait {
            siblingItem.name = "sibling"
            try sibling.save()
        }
        auto.performAndWait {}  // the merge runs on the context's own queue
        autoB.performAndWait {}
        auto.performAndWait {
            #expect(autoItem.name == "sibling")
            #expect(auto.counters.merges == 1)
        }
        manual.performAndWait {
            #expect(manualItem.name == "item 1")
            #expect(manual.counters.merges == 0)
        }
        autoB.performAndWait {
            #expect(autoBItem.name == "item 1")
            #expect(autoB.counters.merges == 0)
        }

        // A sibling on the second coordinator saves: autoB merges it, auto does not.
        // (B's row cache still holds the row as autoB loaded it; read past it, §2.3, or the save conflicts.)
        let siblingB = stack.context(coordinatorB, name: "siblingB")
        siblingB.performAndWait { siblingB.stalenessInterval = 0 }
        let siblingBItem: Item = try mgLoad(siblingB, id)
        siblingB.performAndWait { #expect(siblingBItem.name == "sibling") }
        try siblingB.performAndWait {
            siblingBItem.price = 42
            try siblingB.save()
        }
        auto.performAndWait {}
        autoB.performAndWait {}
        autoB.performAndWait {
            #expect(autoB.counters.merges == 1)
            #expect(autoBItem.price == 42)
        }
        auto.performAndWait {
            #expect(auto.counters.merges == 1)
            #expect(autoItem.price == 10)
        }
    }

    // Semantics §3.3 (CoreDataPlus: parent → child merge happens with the flag set and not without it): a child
    // merges its parent's saves; saves of other root contexts do not reach it.
    @Test func childMergesParentSavesWhenEnabled() throws {
        let stack = try TestStack()
        let id = try stack.seed(1)[0]
        let parent = stack.context(name: "parent")
        let autoChild = stack.child(of: parent)
        let plainChild = stack.child(of: parent)
        autoChild.performAndWait { autoChild.automaticallyMergesChangesFromParent = true }
        let parentItem: Item = try mgLoad(parent, id)
        let autoItem: Item = try mgLoad(autoChild, id)
        let plainItem: Item = try mgLoad(plainChild, id)
        try parent.performAndWait {
            parentItem.name = "parent"
            try parent.save()
        }
        autoChild.performAndWait {}
        plainChild.performAndWait {}
        autoChild.performAndWait {
            #expect(autoItem.name == "parent")
            #expect(autoChild.counters.merges == 1)
        }
        plainChild.performAndWait {
            #expect(plainItem.name == "item 1")
            #expect(plainChild.counters.merges == 0)
        }
        // Another root context's save is not the parent's.
        let other = stack.context(name: "other")
        let otherItem: Item = try mgLoad(other, id)
        try other.performAndWait {
            otherItem.price = 99
            try other.save()
        }
        autoChild.performAndWait {}
        autoChild.performAndWait { #expect(autoChild.counters.merges == 1) }
    }

    // MARK: - mergeChanges(fromRemoteContextSave:into:) (semantics §3.4)

    // Semantics §3.4: a dictionary keyed like objects-did-change, with arrays of object IDs or URIs, merged into
    // several contexts, a nested one included.
    @Test func remoteContextSaveMergesObjectIDsIntoSeveralContexts() throws {
        let stack = try TestStack()
        let ids = try stack.seed(3)
        let r1 = stack.context(name: "r1")
        let r2 = stack.context(name: "r2")
        let child = stack.child(of: r1)
        let r1Items: [Item] = try ids.prefix(2).map { try mgLoad(r1, $0) }
        let r2Items: [Item] = try ids.prefix(2).map { try mgLoad(r2, $0) }
        let childItem: Item = try mgLoad(child, ids[0])
        let writer = stack.context(name: "writer")
        let insertedID = try writer.performAndWait {
            let items = try fetchItems(writer)
            items[0].name = "W1"
            writer.delete(items[1])
            let item = Item(context: writer)
            item.id = 4
            try writer.save()
            return item.objectID
        }
        typealias Key = ManagedObjectContext.NotificationKey
        let remote: [String: Any] = [
            Key.updatedObjects.rawValue: [ids[0]],
            Key.deletedObjects.rawValue: [ids[1]],
            Key.insertedObjects.rawValue: [insertedID.uriRepresentation],
        ]
        let rec1 = MGChangeRecorder(r1)
        let rec2 = MGChangeRecorder(r2)
        let recChild = MGChangeRecorder(child)
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: remote, into: [r1, r2, child])
        for (ctx, items, rec) in [(r1, r1Items, rec1), (r2, r2Items, rec2)] {
            ctx.performAndWait {
                #expect(items[0].name == "W1")
                #expect(items[1].isDeleted)
                #expect(ctx.deletedObjects.contains(items[1]))
                #expect(ctx.insertedObjects.isEmpty)
            }
            #expect(rec.refreshed == [ids[0]])
            #expect(rec.deleted == [ids[1]])
            #expect(rec.inserted == [insertedID])
        }
        child.performAndWait { #expect(childItem.name == "W1") }
        #expect(recChild.refreshed == [ids[0]])
    }

    // Semantics §3.4, §2.3, §6: after a batch update (which leaves the row cache old), a
    // merge of a notification built from history keeps showing the cached row (verified on Apple: the history
    // topology shows it), while mergeChanges(fromRemoteContextSave:into:) with the updated IDs refreshes the
    // registered objects to the row in the store, with the default infinite staleness, keeping local changes.
    // The store read is one SELECT for the cached rows, and the row cache then holds the store's row.
    @Test("Only mergeChanges(fromRemoteContextSave:into:) refreshes past an older row cache entry (§3.4, §2.3)")
    func remoteContextSaveRefreshesPastTheRowCache_3_4() throws {
        var options = StoreOptions()
        options.persistentHistoryTracking = true
        let stack = try TestStack(options: options)
        let ids = try stack.seed(3)
        let viewer = stack.context(name: "viewer")
        #expect(viewer.stalenessInterval < 0)  // the default: cached rows never go stale
        let items: [Item] = try ids.prefix(2).map { try mgLoad(viewer, $0) }
        viewer.performAndWait {
            _ = items.map(\.price)
            items[1].name = "local"
        }
        let token = try stack.coordinator.currentPersistentHistoryToken()
        let batcher = stack.context(name: "batcher")
        let updated: [ManagedObjectID] = try batcher.performAndWait {
            var request = BatchUpdateRequest(entityName: "Item", propertiesToUpdate: ["price": 99.0])
            request.resultType = .objectIDs
            return try #require(try batcher.execute(request).objectIDs)
        }
        #expect(updated.count == 3)

        // From history: the merge refreshes from the row cache, which still holds the old rows.
        let transactions = try stack.coordinator.fetchHistory(.fetchHistory(after: token))
        #expect(transactions.count == 1)
        viewer.performAndWait {
            for t in transactions { viewer.mergeChanges(fromContextDidSave: t.objectIDNotification()) }
            #expect(items.map(\.price) == [10, 20])
        }

        // The remote-save merge reads the store's rows.
        let before = stack.coordinator.counters
        let recorder = MGChangeRecorder(viewer)
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: ContextObjectIDChanges(updated: Set(updated)), into: [viewer])
        let after = stack.coordinator.counters
        viewer.performAndWait {
            #expect(items.map(\.price) == [99, 99])
            #expect(items[1].name == "local" && items[1].hasChanges)
        }
        #expect(recorder.refreshed == Set(ids.prefix(2)))
        #expect(after.statements.select - before.statements.select == 1)  // the two cached rows, in one query
        #expect(after.rowsRead - before.rowsRead == 2)
        // Another context on the coordinator now faults the store's row in from the row cache.
        let other = stack.context(name: "other")
        let fresh: Item = try mgLoad(other, ids[0])
        other.performAndWait { #expect(fresh.price == 99) }
        #expect(stack.coordinator.counters.rowsRead == after.rowsRead)
    }
}
