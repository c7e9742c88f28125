import Foundation
import Testing
@testable import ObjectGraph

// Row cache side (semantics §5 "Cost of change tracking", §2.3, §3.1): a did-save notification
// keeps the rows of its save in the saving coordinator's row cache until every observer has let go of it, as the
// saved objects in Core Data's notification keep their snapshots. A context on the same coordinator that merges
// the save then fulfils the faults of the merged inserts from the row cache, even when the saving context was
// reset right after saving; a context on another coordinator still reads them from the store; once the
// notification and the objects are gone, so are the rows.
@Suite struct RowCacheTests {
    static let count = 40

    /// A fetched results controller on Item (price < 5, by price) with a delegate, fetched on `context`'s queue.
    static func controller(on context: ManagedObjectContext, recorder: FRCRecorder) throws -> FetchedResultsController {
        let frc = FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Item", predicate: .compare("price", .lessThan, 5), sortDescriptors: [ObjectSortDescriptor("price")]),
            managedObjectContext: context)
        try context.performAndWait {
            frc.delegate = recorder
            try frc.performFetch()
        }
        return frc
    }

    /// Saves `count` new items (two of them priced under 5) from a background context on the stack's coordinator
    /// and resets that context right after the save, as the workbench's importer does.
    /// Returns a recorder of that context's did-save alone (other tests save in parallel).
    @discardableResult
    static func saveAndReset(_ stack: TestStack) throws -> NotificationRecorder {
        let background = stack.context(name: "importer")
        let saves = NotificationRecorder(ManagedObjectContext.didSaveNotification, object: background)
        try background.performAndWait {
            for i in 1...Int64(count) {
                let item = Item(context: background)
                item.id = i
                item.name = "n"
                item.price = i == 7 ? 1 : (i == 30 ? 2 : 100)
            }
            try background.save()
            background.reset()
        }
        return saves
    }

    @Test("A shared-coordinator merge of N inserts fulfils N faults from the row cache, none from the store, after the saver's reset (§5, §2.3)")
    func rule23RowCache_sharedCoordinatorMergeFulfilsFromRowCache_5() throws {
        let stack = try TestStack()
        let view = stack.context(name: "view")
        let recorder = FRCRecorder()
        var frc: FetchedResultsController? = try Self.controller(on: view, recorder: recorder)
        let baseline = stack.coordinator.counters.rowCacheEntries
        var saves: NotificationRecorder? = try Self.saveAndReset(stack)
        var note: Notification? = try #require(saves?.notes.first)
        // The reset let go of the saver's references; the notification still holds the rows.
        #expect(stack.coordinator.counters.rowCacheEntries - baseline == Self.count)

        let counting = ExecutionThread.countingOnly()
        ExecutionThread.install(counting)
        defer { ExecutionThread.install(nil) }
        let before = stack.coordinator.counters
        view.performAndWait {
            let fired = view.counters.faultsFired
            view.mergeChanges(fromContextDidSave: note!)
            #expect(view.counters.faultsFired - fired == Self.count)  // every merged insert is evaluated
            #expect(frc?.objectCount == 2)
        }
        let after = stack.coordinator.counters
        #expect(counting.counts[CostedOperation.faultFulfilledFromCache.rawValue] == Self.count)
        #expect(counting.counts[CostedOperation.faultFulfilledFromStore.rawValue] == 0)
        #expect(after.rowCacheHits - before.rowCacheHits == Self.count)
        #expect(after.rowCacheMisses == before.rowCacheMisses)
        #expect(after.rowsRead == before.rowsRead)

        // Released: the notification first (the controller's two objects keep theirs), then the controller.
        saves = nil
        note = nil
        #expect(stack.coordinator.counters.rowCacheEntries - baseline == 2)
        view.performAndWait { frc = nil }
        #expect(stack.coordinator.counters.rowCacheEntries == baseline)
    }

    @Test("The automatic merge keeps the saved rows until it has merged them, then lets go (§3.3, §2.3)")
    func rule23RowCache_automaticMergeFulfilsFromRowCacheThenReleases_3_3() throws {
        let stack = try TestStack()
        let counting = ExecutionThread.countingOnly()
        // The view's queue counts what runs on it, wherever dispatch runs the block.
        let queue = ContextQueue(label: "view") { block in
            ExecutionThread.install(counting)
            block()
            ExecutionThread.install(nil)
        }
        let view = ManagedObjectContext(concurrencyType: .mainQueue, queue: queue)
        view.persistentStoreCoordinator = stack.coordinator
        view.name = "view"
        view.automaticallyMergesChangesFromParent = true
        let recorder = FRCRecorder()
        var frc: FetchedResultsController? = try Self.controller(on: view, recorder: recorder)
        let baseline = stack.coordinator.counters.rowCacheEntries
        let before = stack.coordinator.counters
        let fromCache = counting.counts[CostedOperation.faultFulfilledFromCache.rawValue]
        let fromStore = counting.counts[CostedOperation.faultFulfilledFromStore.rawValue]

        try Self.saveAndReset(stack)
        view.performAndWait {}  // the merge was queued before this block
        let after = stack.coordinator.counters
        #expect(view.counters.merges == 1)
        #expect(counting.counts[CostedOperation.faultFulfilledFromCache.rawValue] - fromCache == Self.count)
        #expect(counting.counts[CostedOperation.faultFulfilledFromStore.rawValue] - fromStore == 0)
        #expect(after.rowCacheMisses == before.rowCacheMisses)
        view.performAndWait { #expect(frc?.objectCount == 2) }
        // Merged: only the rows of the two objects the controller keeps are left.
        #expect(after.rowCacheEntries - baseline == 2)
        view.performAndWait { frc = nil }
        #expect(stack.coordinator.counters.rowCacheEntries == baseline)
    }

    @Test("With two coordinators the merged inserts come from the store (§2.4, §5)")
    func rule23RowCache_twoCoordinatorsFulfilFromStore_2_4() throws {
        let stack = try TestStack()
        let viewCoordinator = try stack.secondCoordinator()
        let view = stack.context(viewCoordinator, name: "view")
        let recorder = FRCRecorder()
        let frc = try Self.controller(on: view, recorder: recorder)
        let saves = try Self.saveAndReset(stack)
        let note = try #require(saves.notes.first)
        // The saving coordinator holds the rows for the notification; the view's coordinator never had them.
        #expect(stack.coordinator.counters.rowCacheEntries >= Self.count)

        let counting = ExecutionThread.countingOnly()
        ExecutionThread.install(counting)
        defer { ExecutionThread.install(nil) }
        let before = viewCoordinator.counters
        view.performAndWait {
            view.mergeChanges(fromContextDidSave: note)
            #expect(frc.objectCount == 2)
        }
        let after = viewCoordinator.counters
        #expect(counting.counts[CostedOperation.faultFulfilledFromStore.rawValue] == Self.count)
        #expect(counting.counts[CostedOperation.faultFulfilledFromCache.rawValue] == 0)
        #expect(after.rowCacheMisses - before.rowCacheMisses == Self.count)
        #expect(after.rowCacheHits == before.rowCacheHits)
    }

    @Test("A did-save nobody keeps releases its rows as the save returns (no leak, §2.3)")
    func rule23RowCache_unobservedSaveKeepsNoRows_2_3() throws {
        let stack = try TestStack()
        let baseline = stack.coordinator.counters.rowCacheEntries
        try Self.saveAndReset(stack)
        #expect(stack.coordinator.counters.rowCacheEntries == baseline)

        // Updated rows are held too, and released with the notification.
        let editor = stack.context(name: "editor")
        var saves: NotificationRecorder? = NotificationRecorder(ManagedObjectContext.didSaveNotification, object: editor)
        try editor.performAndWait {
            let items = try editor.fetch(FetchRequest(entityName: "Item", predicate: .compare("price", .lessThan, 5)))
            #expect(items.count == 2)
            for case let item as Item in items { item.price += 1 }
            try editor.save()
            editor.reset()
        }
        #expect(stack.coordinator.counters.rowCacheEntries - baseline == 2)
        let updated = try #require(saves?.notes.first.flatMap(SavedRows.of)).changes.updated
        #expect(updated.count == 2)
        let view = stack.context(name: "view")
        let before = stack.coordinator.counters
        view.performAndWait {
            for id in updated { #expect(((view.object(with: id) as? Item)?.price ?? 0) >= 2) }
        }
        #expect(stack.coordinator.counters.rowCacheHits - before.rowCacheHits == 2)
        #expect(stack.coordinator.counters.rowCacheMisses == before.rowCacheMisses)
        saves = nil
        #expect(stack.coordinator.counters.rowCacheEntries == baseline)
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
}
