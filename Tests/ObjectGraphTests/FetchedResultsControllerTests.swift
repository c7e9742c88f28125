import Foundation
import Testing
@testable import ObjectGraph

/// Records a fetched results controller's delegate calls as text, in order.
final class FRCRecorder: FetchedResultsControllerDelegate {
    var events: [String] = []

    func controllerWillChangeContent(_ controller: FetchedResultsController) { events.append("will") }
    func controller(_ controller: FetchedResultsController, didChange section: FetchedSectionInfo, atSectionIndex index: Int, for type: FetchedResultsChangeType) {
        events.append("section \(type) \(index) \(section.name)")
    }
    func controller(_ controller: FetchedResultsController, didChange object: ManagedObject, at indexPath: FetchedIndexPath?, for type: FetchedResultsChangeType, newIndexPath: FetchedIndexPath?) {
        events.append("\(type) #\((object as? Item)?.id ?? -1) \(indexPath?.description ?? "-") -> \(newIndexPath?.description ?? "-")")
    }
    func controllerDidChangeContent(_ controller: FetchedResultsController) { events.append("did") }

    /// The events so far, clearing them.
    func take() -> [String] {
        defer { events = [] }
        return events
    }
}

/// Adopts both delegate protocols: only the snapshot callback may be called (semantics §5).
final class FRCSnapshotRecorder: FetchedResultsControllerDelegate, FetchedResultsControllerSnapshotDelegate {
    var snapshots: [FetchedResultsSnapshot] = []
    var otherCalls = 0
    func controller(_ controller: FetchedResultsController, didChangeContentWith snapshot: FetchedResultsSnapshot) { snapshots.append(snapshot) }
    func controllerWillChangeContent(_ controller: FetchedResultsController) { otherCalls += 1 }
    func controllerDidChangeContent(_ controller: FetchedResultsController) { otherCalls += 1 }
}

/// `FetchedResultsController` (semantics §5) — sections, change sequences for local edits,
/// merges and child saves, reset, the snapshot callback, and the cost of an update.
@Suite struct FetchedResultsControllerTests {
    /// Saves items (id, name, price) and returns nothing; names are the section keys.
    static func seed(_ stack: TestStack, _ rows: [(Int64, String, Double)]) throws {
        let ctx = stack.context()
        try ctx.performAndWait {
            for (id, name, price) in rows {
                let item = Item(context: ctx)
                item.id = id
                item.name = name
                item.price = price
            }
            try ctx.save()
        }
    }

    static func controller(_ ctx: ManagedObjectContext, _ predicate: ObjectPredicate? = nil) -> FetchedResultsController {
        FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Item", predicate: predicate, sortDescriptors: [ObjectSortDescriptor("name"), ObjectSortDescriptor("price")]),
            managedObjectContext: ctx, sectionNameKeyPath: "name")
    }

    static func item(_ ctx: ManagedObjectContext, _ id: Int64) throws -> Item {
        try #require(try fetchItems(ctx, .compare("id", .equalTo, id)).first)
    }

    static func layout(_ frc: FetchedResultsController) -> [String] {
        (frc.sections ?? []).map { s in s.name + ":" + s.objects.map { String(($0 as! Item).id) }.joined(separator: ",") }
    }

    // Semantics §5: a fetched results controller needs a sort descriptor.
    @Test func requiresASortDescriptor_5() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        ctx.performAndWait {
            let frc = FetchedResultsController(fetchRequest: FetchRequest(entityName: "Item"), managedObjectContext: ctx)
            #expect(throws: ObjectGraphError.self) { try frc.performFetch() }
            #expect(frc.fetchedObjects == nil)
        }
    }

    // Semantics §5: sections by sectionNameKeyPath, index paths, objects in sort order.
    @Test func sectionsAndIndexPaths_5() throws {
        let stack = try TestStack()
        try Self.seed(stack, [(1, "a", 10), (2, "a", 20), (3, "b", 30), (4, "c", 5)])
        let ctx = stack.context()
        try ctx.performAndWait {
            let frc = Self.controller(ctx)
            try frc.performFetch()
            #expect(Self.layout(frc) == ["a:1,2", "b:3", "c:4"])
            #expect(frc.sections?.map(\.numberOfObjects) == [2, 1, 1])
            let three = try Self.item(ctx, 3)
            #expect(frc.indexPath(forObject: three) == FetchedIndexPath(item: 0, section: 1))
            #expect(frc.object(at: FetchedIndexPath(item: 1, section: 0)) === (try Self.item(ctx, 2)))
            #expect(frc.snapshot.sectionIdentifiers == ["a", "b", "c"])
            #expect(frc.snapshot.itemIdentifiers["a"] == [try Self.item(ctx, 1).objectID, try Self.item(ctx, 2).objectID])
        }
    }

    // Semantics §5: local edits give inserts, updates, moves (in and across sections), deletes; sections
    // appear and disappear; section changes come before object changes; will/did bracket each batch.
    @Test func localEditsGiveTheChangeSequence_5() throws {
        let stack = try TestStack()
        try Self.seed(stack, [(1, "a", 10), (2, "a", 20), (3, "b", 30)])
        let ctx = stack.context()
        try ctx.performAndWait {
            let frc = Self.controller(ctx)
            let recorder = FRCRecorder()
            frc.delegate = recorder
            try frc.performFetch()
            #expect(Self.layout(frc) == ["a:1,2", "b:3"])

            let four = Item(context: ctx)
            four.id = 4
            four.name = "a"
            four.price = 25
            ctx.processPendingChanges()
            #expect(recorder.take() == ["will", "insert #4 - -> [0, 2]", "did"])

            try Self.item(ctx, 1).flag = true  // not a sort key: update in place
            ctx.processPendingChanges()
            #expect(recorder.take() == ["will", "update #1 [0, 0] -> [0, 0]", "did"])

            try Self.item(ctx, 1).price = 22  // moves after 2 within section a
            ctx.processPendingChanges()
            #expect(recorder.take() == ["will", "move #1 [0, 0] -> [0, 1]", "did"])
            #expect(Self.layout(frc) == ["a:2,1,4", "b:3"])

            let five = Item(context: ctx)
            five.id = 5
            five.name = "c"
            five.price = 1
            ctx.processPendingChanges()
            #expect(recorder.take() == ["will", "section insert 2 c", "insert #5 - -> [2, 0]", "did"])

            ctx.delete(try Self.item(ctx, 3))
            ctx.processPendingChanges()
            #expect(recorder.take() == ["will", "section delete 1 b", "delete #3 [1, 0] -> -", "did"])
            #expect(Self.layout(frc) == ["a:2,1,4", "c:5"])

            try Self.item(ctx, 4).name = "c"  // across sections
            ctx.processPendingChanges()
            #expect(recorder.take() == ["will", "move #4 [0, 2] -> [1, 1]", "did"])

            // One batch: a section appears and an object leaves, reported section first.
            try Self.item(ctx, 2).name = "b"
            ctx.delete(try Self.item(ctx, 5))
            ctx.processPendingChanges()
            #expect(recorder.take() == ["will", "section insert 1 b", "delete #5 [1, 0] -> -", "move #2 [0, 0] -> [1, 0]", "did"])
            #expect(Self.layout(frc) == ["a:1", "b:2", "c:4"])

            // Nothing of the entity changed: no callbacks at all.
            _ = Tag(context: ctx)
            ctx.processPendingChanges()
            #expect(recorder.take().isEmpty)
        }
    }

    // Semantics §5: with a predicate, an update that stops matching is a delete and one that starts matching
    // is an insert (CoreDataPlus test_DeleteDueToThePredicate).
    @Test func predicateChangesAreInsertsAndDeletes_5() throws {
        let stack = try TestStack()
        try Self.seed(stack, [(1, "a", 10), (2, "a", 20), (3, "a", 30)])
        let ctx = stack.context()
        try ctx.performAndWait {
            let frc = Self.controller(ctx, .compare("price", .greaterThanOrEqualTo, 20))
            let recorder = FRCRecorder()
            frc.delegate = recorder
            try frc.performFetch()
            #expect(Self.layout(frc) == ["a:2,3"])
            let one = try Self.item(ctx, 1), two = try Self.item(ctx, 2)
            one.price = 40
            two.price = 5
            ctx.processPendingChanges()
            #expect(recorder.take() == ["will", "insert #1 - -> [0, 1]", "delete #2 [0, 0] -> -", "did"])
            #expect(Self.layout(frc) == ["a:3,1"])
        }
    }

    // Semantics §5 / §3.1: a merged background save — inserts, updates of materialized objects (as refreshed)
    // and deletes — reaches the controller through objects-did-change.
    @Test func mergeFromABackgroundSave_5() throws {
        let stack = try TestStack()
        try Self.seed(stack, [(1, "a", 10), (2, "a", 20), (3, "b", 30)])
        let view = stack.context(name: "view")
        let frc = Self.controller(view)
        let recorder = FRCRecorder()
        try view.performAndWait {
            frc.delegate = recorder
            try frc.performFetch()
        }
        let background = stack.context()
        let saves = NotificationRecorder(ManagedObjectContext.didSaveObjectIDsNotification, object: background)
        try background.performAndWait {
            let four = Item(context: background)
            four.id = 4
            four.name = "a"
            four.price = 15
            try Self.item(background, 2).price = 5
            background.delete(try Self.item(background, 3))
            try background.save()
        }
        let note = try #require(saves.notes.first)
        view.performAndWait {
            #expect(recorder.take().isEmpty)  // nothing until the merge
            view.mergeChanges(fromContextDidSave: note)
            #expect(recorder.take() == ["will", "section delete 1 b", "insert #4 - -> [0, 2]", "delete #3 [1, 0] -> -", "move #2 [0, 1] -> [0, 0]", "did"])
            #expect(Self.layout(frc) == ["a:2,1,4"])
        }
    }

    // Semantics §5 / §2.2: a child context's save changes the parent, whose controller sees it.
    @Test func childSaveReachesTheParentsController_5() throws {
        let stack = try TestStack()
        try Self.seed(stack, [(1, "a", 10), (2, "a", 20)])
        let parent = stack.context()
        let frc = Self.controller(parent)
        let recorder = FRCRecorder()
        try parent.performAndWait {
            frc.delegate = recorder
            try frc.performFetch()
        }
        let child = stack.child(of: parent)
        try child.performAndWait {
            let three = Item(context: child)
            three.id = 3
            three.name = "b"
            three.price = 1
            try Self.item(child, 1).price = 50
            #expect(recorder.events.isEmpty)  // unsaved child edits are invisible to the parent
            try child.save()
        }
        parent.performAndWait {
            parent.processPendingChanges()
            #expect(recorder.take() == ["will", "section insert 1 b", "insert #3 - -> [1, 0]", "move #1 [0, 0] -> [0, 1]", "did"])
            #expect(Self.layout(frc) == ["a:2,1", "b:3"])
        }
    }

    // Semantics §5: reset() is invisible to the controller (no deletes); it needs performFetch() again, and
    // tracks changes after that.
    @Test func resetNeedsPerformFetch_5() throws {
        let stack = try TestStack()
        try Self.seed(stack, [(1, "a", 10), (2, "a", 20)])
        let ctx = stack.context()
        try ctx.performAndWait {
            let frc = Self.controller(ctx)
            let recorder = FRCRecorder()
            frc.delegate = recorder
            try frc.performFetch()
            ctx.reset()
            let three = Item(context: ctx)
            three.id = 3
            three.name = "a"
            three.price = 30
            ctx.processPendingChanges()
            #expect(recorder.take().isEmpty)
            #expect(frc.fetchedObjects?.count == 2)
            try frc.performFetch()
            #expect(Self.layout(frc) == ["a:1,2,3"])
            try Self.item(ctx, 1).price = 40
            ctx.processPendingChanges()
            #expect(recorder.take() == ["will", "move #1 [0, 0] -> [0, 2]", "did"])
        }
    }

    // Semantics §5: without a delegate the controller does not track changes (a static snapshot).
    @Test func withoutADelegateNothingIsTracked_5() throws {
        let stack = try TestStack()
        try Self.seed(stack, [(1, "a", 10)])
        let ctx = stack.context()
        try ctx.performAndWait {
            let frc = Self.controller(ctx)
            try frc.performFetch()
            let two = Item(context: ctx)
            two.id = 2
            two.name = "a"
            ctx.processPendingChanges()
            #expect(frc.fetchedObjects?.count == 1)
            #expect(frc.changesProcessed == 0)
        }
    }

    // Docs/coredata-behaviour.md §5: without a delegate, no tracking, whatever the source: a merged save and a
    // child's push reach the context and not the controller, which evaluates, compares and queries nothing and
    // keeps the objects of its fetch. A controller with a delegate on the same context follows both.
    @Test("A controller without a delegate evaluates nothing of a merge or a child's push and keeps its fetched objects (§5)")
    func withoutADelegateMergesAndPushesAreNotTracked_5() throws {
        let stack = try TestStack()
        try Self.seed(stack, [(1, "a", 10), (2, "a", 20), (3, "b", 30)])
        let ctx = stack.context(name: "view")
        let (silent, tracking, recorder, fetched) = try ctx.performAndWait {
            let silent = Self.controller(ctx, try ObjectPredicate(format: "price > 5"))
            try silent.performFetch()
            let tracking = Self.controller(ctx, try ObjectPredicate(format: "price > 5"))
            let recorder = FRCRecorder()
            tracking.delegate = recorder
            try tracking.performFetch()
            return (silent, tracking, recorder, try #require(silent.fetchedObjects))
        }
        let saver = stack.context(name: "saver")
        let saved = NotificationRecorder(ManagedObjectContext.didSaveNotification, object: saver)
        try saver.performAndWait {
            let items = try fetchItems(saver)
            items[0].price = 99
            saver.delete(items[2])
            let four = Item(context: saver)
            four.id = 4
            four.name = "b"
            four.price = 40
            try saver.save()
        }
        let note = try #require(saved.notes.first)
        let counted = ExecutionThread.countingOnly()
        ExecutionThread.install(counted)
        defer { ExecutionThread.install(nil) }
        let child = stack.child(of: ctx)
        try child.performAndWait {
            let five = Item(context: child)
            five.id = 5
            five.name = "a"
            five.price = 50
            try child.save()
        }
        ctx.performAndWait {
            ctx.mergeChanges(fromContextDidSave: note)
            ctx.processPendingChanges()
            #expect(silent.objectsEvaluated == 0 && silent.changePasses == 0 && silent.changesProcessed == 0)
            #expect(silent.fetchedObjects.map { $0.map { ObjectIdentifier($0) } } == fetched.map { ObjectIdentifier($0) })
            #expect(fetched[2].isDeleted, "the context has the merged delete; the controller still holds the object")
            // Only the tracking controller's work was counted: the push's insert, the merge's update, delete and insert.
            #expect(counted.counts[CostedOperation.controllerObjectEvaluated.rawValue] == tracking.objectsEvaluated)
            #expect(tracking.changePasses == 2 && tracking.objectsEvaluated > 0)
            #expect(recorder.take().filter { $0 == "did" }.count == 2)
            #expect(tracking.objectCount == 4 && silent.objectCount == 3)
        }
    }

    // Semantics §5 (diffable snapshots): a snapshot delegate gets section identifiers → object IDs, with items
    // updated in place as reloaded items, and no other delegate method is called.
    @Test func snapshotCallback_5() throws {
        let stack = try TestStack()
        try Self.seed(stack, [(1, "a", 10), (2, "a", 20)])
        let ctx = stack.context()
        try ctx.performAndWait {
            let frc = Self.controller(ctx)
            let recorder = FRCSnapshotRecorder()
            frc.delegate = recorder
            try frc.performFetch()
            let one = try Self.item(ctx, 1), two = try Self.item(ctx, 2)
            one.flag = true
            ctx.processPendingChanges()
            let three = Item(context: ctx)
            three.id = 3
            three.name = "b"
            try ctx.obtainPermanentIDs(for: [three])
            ctx.processPendingChanges()
            #expect(recorder.otherCalls == 0)
            #expect(recorder.snapshots.count == 2)
            #expect(recorder.snapshots.first == FetchedResultsSnapshot(
                sectionIdentifiers: ["a"], itemIdentifiers: ["a": [one.objectID, two.objectID]], reloadedItemIdentifiers: [one.objectID]))
            #expect(recorder.snapshots.last == FetchedResultsSnapshot(
                sectionIdentifiers: ["a", "b"], itemIdentifiers: ["a": [one.objectID, two.objectID], "b": [three.objectID]], reloadedItemIdentifiers: []))
        }
    }

    // Performance: an update costs no SQL and is handled per changed object, not by refetching.
    @Test func changesCostNoRefetch_5() throws {
        let stack = try TestStack()
        try stack.seed(1_000)
        let ctx = stack.context()
        try ctx.performAndWait {
            let frc = FetchedResultsController(fetchRequest: ctxItemRequest(sort: [ObjectSortDescriptor("price")]), managedObjectContext: ctx)
            let recorder = FRCRecorder()
            frc.delegate = recorder
            try frc.performFetch()
            let selects = ctxSelects(stack.coordinator)
            let cheapest = try #require(frc.fetchedObjects?.first as? Item)
            cheapest.price = 100_000
            let extra = Item(context: ctx)
            extra.id = 5_000
            extra.price = 5
            ctx.processPendingChanges()
            #expect(ctxSelects(stack.coordinator) == selects)
            #expect(frc.changesProcessed == 2)
            #expect(recorder.take() == ["will", "insert #5000 - -> [0, 0]", "move #1 [0, 0] -> [0, 1000]", "did"])
            #expect((frc.fetchedObjects?.last as? Item)?.id == 1)
        }
    }

    // MARK: Change cycles, batches and fault costs

    /// Saves `n` items (ids from `first`) with `price(id)` in a new context of `stack`, returning the
    /// did-save-object-IDs notification (or the one named `posting`).
    static func saveItems(_ stack: TestStack, _ ids: ClosedRange<Int64>, name: String = "n",
                          posting: Notification.Name = ManagedObjectContext.didSaveObjectIDsNotification, price: (Int64) -> Double) throws -> Notification {
        let background = stack.context()
        let saves = NotificationRecorder(posting, object: background)
        try background.performAndWait {
            for i in ids {
                let item = Item(context: background)
                item.id = i
                item.name = name
                item.price = price(i)
            }
            try background.save()
        }
        return try #require(saves.notes.first)
    }

    // Semantics §5, "Cost of change tracking": by default the controller decides each merged
    // insert of its entity on the object, which fires its fault: one fulfilment per insert, read from the store
    // when the view context's coordinator has no row cached (a coordinator of its own, as in the Ambar stack).
    @Test("Each merged insert is evaluated on its own, one fault fulfilment each (§5)")
    func rule23_mergedInsertsFireOneFaultEach_5() throws {
        let stack = try TestStack()
        let viewCoordinator = try stack.secondCoordinator()
        let view = stack.context(viewCoordinator, name: "view")
        let frc = FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Item", predicate: .compare("price", .lessThan, 5), sortDescriptors: [ObjectSortDescriptor("price")]),
            managedObjectContext: view)
        #expect(frc.changeEvaluation == .coreData)
        let recorder = FRCRecorder()
        try view.performAndWait {
            frc.delegate = recorder
            try frc.performFetch()
        }
        let note = try Self.saveItems(stack, 1...40) { $0 == 7 ? 1 : ($0 == 30 ? 2 : 100) }
        view.performAndWait {
            let fired = view.counters.faultsFired, misses = viewCoordinator.counters.rowCacheMisses
            view.mergeChanges(fromContextDidSave: note)
            #expect(recorder.take() == ["will", "section insert 0 ", "insert #7 - -> [0, 0]", "insert #30 - -> [0, 1]", "did"])
            #expect(view.counters.faultsFired - fired == 40)  // every insert, shown or not
            #expect(viewCoordinator.counters.rowCacheMisses - misses == 40)  // each one read from the store
            #expect(frc.objectsEvaluated == 40)
            #expect(frc.objectCount == 2)
        }
    }

    // Semantics §5: Core Data's controller does not respect fetchLimit after changes, the
    // results grow past it; the `batched` option evaluates merged faults in bulk and trims to the limit.
    @Test("fetchLimit is not respected after changes; the batched option trims and fires fewer faults (§5)")
    func rule23_fetchLimitGrowsAndBatchedOptionTrims_5() throws {
        var request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("price")])
        request.fetchLimit = 5
        var results: [FetchedResultsController.ChangeEvaluation: (count: Int, fired: Int, evaluated: Int, first: [Int64])] = [:]
        for mode in FetchedResultsController.ChangeEvaluation.allCases {
            let stack = try TestStack()
            try stack.seed(10)  // prices 10 … 100
            let view = stack.context(try stack.secondCoordinator(), name: "view")
            let frc = FetchedResultsController(fetchRequest: request, managedObjectContext: view, changeEvaluation: mode)
            let recorder = FRCRecorder()
            try view.performAndWait {
                frc.delegate = recorder
                try frc.performFetch()
                #expect(frc.objectCount == 5)
            }
            let note = try Self.saveItems(stack, 11...310) { $0 == 200 ? 15 : ($0 == 300 ? 5 : 1000 + Double($0)) }
            view.performAndWait {
                let fired = view.counters.faultsFired
                view.mergeChanges(fromContextDidSave: note)
                let first = (frc.fetchedObjects ?? []).prefix(5).compactMap { ($0 as? Item)?.id }
                results[mode] = (frc.objectCount, view.counters.faultsFired - fired, frc.objectsEvaluated, Array(first))
            }
        }
        #expect(results[.coreData]?.count == 305)
        #expect(results[.coreData]?.fired ?? 0 >= 300)  // the 300 inserts, and the few loaded rows the sorted insert compared with
        #expect(results[.coreData]?.evaluated == 300)
        #expect(results[.coreData]?.first == [300, 1, 200, 2, 3])
        #expect(results[.batched]?.count == 5)
        #expect((results[.batched]?.fired ?? .max) <= 10)  // at most the chunk's first five, and the five shown rows compared with
        #expect((results[.batched]?.evaluated ?? .max) <= 5)
        #expect(results[.batched]?.first == [300, 1, 200, 2, 3])
        #expect(FetchedResultsController.ChangeEvaluation(rawValue: "coreData") == .coreData)
        #expect(FetchedResultsController.ChangeEvaluation(rawValue: "batched") == .batched)
    }

    /// Items 1…100 in sections "s0" … "s9" (ten each), prices 10 … 1000.
    static func seedSections(_ stack: TestStack) throws {
        let ctx = stack.context()
        try ctx.performAndWait {
            for i in 1...100 {
                let item = Item(context: ctx)
                item.id = Int64(i)
                item.name = "s\((i - 1) / 10)"
                item.price = Double(i * 10)
            }
            try ctx.save()
        }
    }

    // Semantics §4 fetchBatchSize: performFetch reads the IDs (and, with sections, the
    // section sizes) and only the batches used: 100 rows with a batch size of 10 cost at most 3 SELECTs and one
    // batch's faults for the first rows of the first section, not 11 SELECTs and 100 faults.
    @Test("A controller with fetchBatchSize loads only the batches used (§4, §5)")
    func rule26_fetchBatchSizeLoadsOnlyUsedBatches_5() throws {
        let stack = try TestStack()
        try Self.seedSections(stack)
        let view = stack.context(try stack.secondCoordinator(), name: "view")
        var request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("name"), ObjectSortDescriptor("price")])
        request.fetchBatchSize = 10
        let frc = FetchedResultsController(fetchRequest: request, managedObjectContext: view, sectionNameKeyPath: "name")
        let recorder = FRCRecorder()
        let coordinator = try #require(view.persistentStoreCoordinator)
        try view.performAndWait {
            frc.delegate = recorder
            let selects = ctxSelects(coordinator), fired = view.counters.faultsFired
            try frc.performFetch()
            #expect(frc.sections?.count == 10)
            #expect(frc.sections?.map(\.numberOfObjects) == Array(repeating: 10, count: 10))
            #expect(frc.sections?.map(\.name) == (0..<10).map { "s\($0)" })
            for i in 0..<5 { _ = (frc.object(at: FetchedIndexPath(item: i, section: 0)) as! Item).price }
            #expect(ctxSelects(coordinator) - selects <= 3)
            #expect(view.counters.faultsFired - fired <= 10)
            #expect((frc.object(at: FetchedIndexPath(item: 4, section: 0)) as! Item).id == 5)
            #expect(view.registeredObjects.filter { !$0.isFault }.count <= 10)
        }
        // Change tracking after a merge stays right: an insert placed among unloaded batches.
        let note = try Self.saveItems(stack, 101...101, name: "s5") { _ in 555 }
        view.performAndWait {
            view.mergeChanges(fromContextDidSave: note)
            #expect(recorder.take() == ["will", "insert #101 - -> [5, 5]", "did"])
            #expect(view.registeredObjects.filter { !$0.isFault }.count < 60)  // the search read a few batches, not all
            let ids = (frc.fetchedObjects ?? []).compactMap { ($0 as? Item)?.id }
            #expect(ids == Array(1...55) + [101] + Array(56...100))
            #expect(frc.sections?.map(\.numberOfObjects) == [10, 10, 10, 10, 10, 11, 10, 10, 10, 10])
        }
    }

    // Without sections: the IDs in one SELECT, the first batch in a second.
    @Test("Without sections a batched controller needs two SELECTs for its first rows (§4)")
    func rule26_withoutSectionsTwoSelects_4() throws {
        let stack = try TestStack()
        try Self.seedSections(stack)
        let view = stack.context(try stack.secondCoordinator(), name: "view")
        var request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("price", ascending: false)])
        request.fetchBatchSize = 10
        let frc = FetchedResultsController(fetchRequest: request, managedObjectContext: view)
        let coordinator = try #require(view.persistentStoreCoordinator)
        try view.performAndWait {
            let selects = ctxSelects(coordinator), fired = view.counters.faultsFired
            try frc.performFetch()
            #expect(frc.objectCount == 100)
            for i in 0..<10 { _ = (frc.object(at: FetchedIndexPath(item: i, section: 0)) as! Item).price }
            #expect(ctxSelects(coordinator) - selects == 2)
            #expect(view.counters.faultsFired - fired == 10)
            #expect((frc.fetchedObjects?.first as? Item)?.id == 100)
        }
    }

    // Recorded on Apple, semantics §5: an empty sort descriptor list is accepted, nil is not.
    @Test("An empty sort descriptor list is accepted, nil still fails (§5)")
    func rule16_emptySortDescriptorsAccepted_5() throws {
        let stack = try TestStack()
        try Self.seed(stack, [(1, "a", 10), (2, "b", 20)])
        let ctx = stack.context()
        try ctx.performAndWait {
            let unset = FetchedResultsController(fetchRequest: FetchRequest(entityName: "Item"), managedObjectContext: ctx)
            #expect(throws: ObjectGraphError.self) { try unset.performFetch() }
            var request = FetchRequest(entityName: "Item")
            request.sortDescriptors = []
            let empty = FetchedResultsController(fetchRequest: request, managedObjectContext: ctx)
            try empty.performFetch()
            #expect(empty.objectCount == 2)
            let literal = FetchedResultsController(fetchRequest: FetchRequest(entityName: "Item", sortDescriptors: []), managedObjectContext: ctx)
            try literal.performFetch()
            #expect(literal.objectCount == 2)
        }
    }

    // Recorded on Apple, semantics §5: the section info of a section that disappears reports
    // 0 objects.
    @Test("A section that disappears reports 0 objects (§5)")
    func rule16_deletedSectionReportsNoObjects_5() throws {
        final class SectionRecorder: FetchedResultsControllerDelegate {
            var deleted: [(String, Int)] = []
            func controller(_ controller: FetchedResultsController, didChange section: FetchedSectionInfo, atSectionIndex index: Int, for type: FetchedResultsChangeType) {
                if type == .delete { deleted.append((section.name, section.numberOfObjects)) }
            }
        }
        let stack = try TestStack()
        try Self.seed(stack, [(1, "a", 10), (2, "b", 20), (3, "b", 30)])
        let ctx = stack.context()
        try ctx.performAndWait {
            let frc = Self.controller(ctx)
            let recorder = SectionRecorder()
            frc.delegate = recorder
            try frc.performFetch()
            ctx.delete(try Self.item(ctx, 2))
            ctx.delete(try Self.item(ctx, 3))
            ctx.processPendingChanges()
            #expect(recorder.deleted.count == 1)
            #expect(recorder.deleted.first?.0 == "b")
            #expect(recorder.deleted.first?.1 == 0)
        }
    }

    // Semantics §3.1, §4: refreshAllObjects() reports every materialized registered object as
    // refreshed in one objects-did-change (faults stay quiet), so a controller sees one change cycle of updates
    // or moves, never inserts or deletes, and nothing more follows.
    @Test("refreshAllObjects() is one change cycle of refreshed objects (§3.1, §4)")
    func rule9_refreshAllObjectsIsOneCycle_3_1() throws {
        let stack = try TestStack()
        try Self.seed(stack, [(1, "a", 10), (2, "a", 20), (3, "b", 30)])
        let ctx = stack.context()
        try ctx.performAndWait {
            let frc = Self.controller(ctx)
            let recorder = FRCRecorder()
            frc.delegate = recorder
            try frc.performFetch()
            let one = try Self.item(ctx, 1), two = try Self.item(ctx, 2)
            _ = one.price
            _ = two.price
            ctx.refresh(try Self.item(ctx, 3), mergeChanges: false)  // a fault: stays quiet
            one.price = 25  // unsaved, kept by the refresh; not yet announced
            let changes = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: ctx)
            ctx.refreshAllObjects()
            ctx.processPendingChanges()
            #expect(changes.notes.count == 1)
            let change = try #require(changes.notes.first.flatMap(ObjectsDidChange.init))
            #expect(change.refreshed == [one, two])
            #expect(change.inserted.isEmpty && change.updated.isEmpty && change.deleted.isEmpty)
            let events = recorder.take()
            #expect(events.first == "will" && events.last == "did" && events.count == 4)
            #expect(events.dropFirst().dropLast().allSatisfy { $0.hasPrefix("update ") || $0.hasPrefix("move ") })
            #expect(events.contains("update #1 [0, 0] -> [0, 1]") && events.contains("update #2 [0, 1] -> [0, 0]"))
            #expect(one.price == 25)
            #expect(Self.layout(frc) == ["a:2,1", "b:3"])
        }
    }

    // Semantics §3.1, §5: a background save merged into a context (automatically, as a
    // view context does) arrives as one change cycle in its controller: inserts, refreshed updates, deletes and
    // the objects that came to match, and no second cycle of updates for the same objects.
    @Test("A merged background save is one change cycle in the controller (§3.1, §5)")
    func rule10_mergedSaveIsOneCycle_5() throws {
        let stack = try TestStack()
        try Self.seed(stack, [(1, "a", 10), (2, "a", 20), (3, "a", 30), (4, "a", 1)])
        let view = stack.context(name: "view")
        view.automaticallyMergesChangesFromParent = true
        let frc = Self.controller(view, .compare("price", .greaterThanOrEqualTo, 5))
        let recorder = FRCRecorder()
        try view.performAndWait {
            frc.delegate = recorder
            try frc.performFetch()
            for object in frc.fetchedObjects ?? [] { _ = (object as! Item).price }
            try Self.item(view, 2).flag = true  // a local change on an object the save also updates
            view.processPendingChanges()
            _ = recorder.take()
        }
        let background = stack.context()
        try background.performAndWait {
            let five = Item(context: background)
            five.id = 5
            five.name = "a"
            five.price = 15
            try Self.item(background, 1).price = 35
            try Self.item(background, 2).price = 22
            try Self.item(background, 4).price = 50  // not loaded in the view: comes to match
            background.delete(try Self.item(background, 3))
            try background.save()
        }
        view.performAndWait {}  // the automatic merge ran on the view's queue
        view.performAndWait {
            view.processPendingChanges()
            let events = recorder.take()
            #expect(events == ["will", "insert #5 - -> [0, 0]", "insert #4 - -> [0, 3]", "delete #3 [0, 2] -> -",
                               "update #1 [0, 0] -> [0, 2]", "update #2 [0, 1] -> [0, 1]", "did"])
            #expect(Self.layout(frc) == ["a:5,2,1,4"])
        }
    }
}

/// Counts a fetched results controller's change cycles and object changes by type.
final class FRCCounter: FetchedResultsControllerDelegate {
    var cycles = 0
    var open = false
    var changes: [FetchedResultsChangeType: Int] = [:]

    func controllerWillChangeContent(_ controller: FetchedResultsController) {
        #expect(!open)
        open = true
        cycles += 1
    }
    func controller(_ controller: FetchedResultsController, didChange object: ManagedObject, at indexPath: FetchedIndexPath?, for type: FetchedResultsChangeType, newIndexPath: FetchedIndexPath?) {
        #expect(open)
        changes[type, default: 0] += 1
    }
    func controllerDidChangeContent(_ controller: FetchedResultsController) {
        #expect(open)
        open = false
    }
    /// Cycles and counts of inserts, updates, moves and deletes so far, clearing them.
    func take() -> [Int] {
        defer { cycles = 0; changes = [:] }
        return [cycles, changes[.insert] ?? 0, changes[.update] ?? 0, changes[.move] ?? 0, changes[.delete] ?? 0]
    }
}

/// A merged import reaches a controller once: one change cycle of its inserts (semantics §5, Rule 10).
@Suite struct FetchedResultsControllerMergedImportTests {
    enum Merge: CaseIterable { case automatic, didSave, didSaveObjectIDs }

    /// The view context's controller (sorted by price, empty before) and its counter, after a background
    /// context of the same coordinator inserted `count` items and saved once, merged in the way given.
    static func importThrough(_ merge: Merge, count: Int = 1_000) throws -> (counts: [Int], frc: FetchedResultsController, view: ManagedObjectContext, stack: TestStack, counter: FRCCounter) {
        let stack = try TestStack()
        let view = stack.context(name: "view")
        view.automaticallyMergesChangesFromParent = merge == .automatic
        let frc = FetchedResultsController(fetchRequest: ctxItemRequest(sort: [ObjectSortDescriptor("price")]), managedObjectContext: view)
        let counter = FRCCounter()
        try view.performAndWait {
            frc.delegate = counter
            try frc.performFetch()
            #expect(frc.objectCount == 0)
        }
        let background = stack.context(name: "import")
        let name = merge == .didSave ? ManagedObjectContext.didSaveNotification : ManagedObjectContext.didSaveObjectIDsNotification
        let saves = NotificationRecorder(name, object: background)
        try background.performAndWait {
            for i in 1...count {
                let item = Item(context: background)
                item.id = Int64(i)
                item.price = Double(count - i)
            }
            try background.save()
        }
        let note = try #require(saves.notes.first)
        view.performAndWait {
            if merge != .automatic { view.mergeChanges(fromContextDidSave: note) }
        }
        view.performAndWait {  // anything the merge left pending is announced now
            view.processPendingChanges()
        }
        return (view.performAndWait { counter.take() }, frc, view, stack, counter)
    }

    // Docs/coredata-behaviour.md §5 (verified on Apple, second-hand: PeakCoreData's batch import test): one
    // save of 1,000 inserts, merged into a view context, is one change cycle of exactly 1,000 inserts.
    @Test("A merged import of 1,000 objects is one change cycle of 1,000 inserts, however it is merged (§5)",
          arguments: Merge.allCases)
    func mergedImportIsOneCycleOfInserts_5(_ merge: Merge) throws {
        let result = try Self.importThrough(merge)
        #expect(result.counts == [1, 1_000, 0, 0, 0])
        result.view.performAndWait {
            #expect(result.frc.objectCount == 1_000)
            #expect((result.frc.fetchedObjects?.first as? Item)?.id == 1_000)
        }
    }

    // Docs/coredata-behaviour.md §5: a later save that updates objects the controller has loaded is reported
    // as updates, in a cycle of its own.
    @Test("Merged updates of loaded objects are still reported as updates (§5)")
    func mergedUpdatesOfLoadedObjectsAreUpdates_5() throws {
        let result = try Self.importThrough(.automatic, count: 20)
        #expect(result.counts == [1, 20, 0, 0, 0])
        let background = result.stack.context(name: "edit")
        try background.performAndWait {
            for item in try fetchItems(background, .compare("id", .lessThanOrEqualTo, 3)) { item.flag = true }
            try background.save()
        }
        result.view.performAndWait {}
        result.view.performAndWait {
            result.view.processPendingChanges()
            #expect(result.counter.take() == [1, 0, 3, 0, 0])
        }
    }
}

/// What a controller does with a merge's updates of rows it holds as faults, and what placing a local edit costs
/// in a batched controller (semantics §5, Rules 10 and 26).
@Suite struct FetchedResultsControllerFaultedRowsTests {
    /// A view context on a coordinator of its own with a controller over items 1…200 by price, in batches of 10,
    /// with the first batch loaded.
    static func batchedView(_ stack: TestStack) throws -> (view: ManagedObjectContext, frc: FetchedResultsController, recorder: FRCRecorder, coordinator: PersistentStoreCoordinator) {
        try stack.seed(200)  // prices 10 … 2000
        let coordinator = try stack.secondCoordinator()
        let view = stack.context(coordinator, name: "view")
        var request = ctxItemRequest(sort: [ObjectSortDescriptor("price")])
        request.fetchBatchSize = 10
        let frc = FetchedResultsController(fetchRequest: request, managedObjectContext: view)
        let recorder = FRCRecorder()
        try view.performAndWait {
            frc.delegate = recorder
            try frc.performFetch()
            for i in 0..<10 { _ = (frc.object(at: FetchedIndexPath(item: i, section: 0)) as! Item).price }
        }
        return (view, frc, recorder, coordinator)
    }

    // Docs/coredata-behaviour.md §5 (Rule 26): local edits of loaded objects are placed among their loaded
    // neighbours; an edit that changes no sort key keeps its place unsearched. No other batch is read.
    @Test("Three local edits of loaded objects in a batched controller read no batch (§5)")
    func localEditsOfLoadedObjectsReadNoBatch_5() throws {
        let stack = try TestStack()
        let (view, frc, recorder, coordinator) = try Self.batchedView(stack)
        try view.performAndWait {
            let selects = ctxSelects(coordinator), fired = view.counters.faultsFired
            let items = (0..<10).map { frc.object(at: FetchedIndexPath(item: $0, section: 0)) as! Item }
            items[9].flag = true  // the batch's last row: not a sort key
            items[2].price = 35  // stays between 20 and 40
            items[4].price = 75  // moves after 70
            view.processPendingChanges()
            #expect(recorder.take() == ["will", "move #5 [0, 4] -> [0, 6]", "update #3 [0, 2] -> [0, 2]", "update #10 [0, 9] -> [0, 9]", "did"])
            #expect(ctxSelects(coordinator) - selects == 0)
            #expect(view.counters.faultsFired - fired == 0)
            #expect(frc.changePasses == 1)
            #expect(view.registeredObjects.filter { !$0.isFault }.count == 10)
            let ids = (frc.fetchedObjects ?? []).prefix(10).compactMap { ($0 as? Item)?.id }
            #expect(ids == [1, 2, 3, 4, 6, 7, 5, 8, 9, 10])
            _ = try #require(frc.fetchedObjects?.last as? Item)
        }
    }

    // Docs/coredata-behaviour.md §5 (Rule 10): a merged save that updates rows the controller holds as faults
    // is evaluated in the merge's one pass: the faults fire (with their batches) and are reported as updates
    // or moves.
    @Test("A merge that updates rows the controller holds as faults is one pass that reports them (§5)")
    func mergedUpdatesOfFaultedRowsAreOnePass_5() throws {
        let stack = try TestStack()
        let (view, frc, recorder, coordinator) = try Self.batchedView(stack)
        let background = stack.context(name: "edit")
        let saves = NotificationRecorder(ManagedObjectContext.didSaveObjectIDsNotification, object: background)
        try background.performAndWait {
            try #require(try fetchItems(background, .compare("id", .equalTo, 150)).first).price = 5  // to the top
            try #require(try fetchItems(background, .compare("id", .equalTo, 100)).first).flag = true  // stays
            try background.save()
        }
        let note = try #require(saves.notes.first)
        view.performAndWait {
            #expect(view.registeredObject(for: frc.fetchedObjects![149].objectID)?.isFault == true)
            let selects = ctxSelects(coordinator), fired = view.counters.faultsFired
            view.mergeChanges(fromContextDidSave: note)
            #expect(recorder.take() == ["will", "move #150 [0, 149] -> [0, 0]", "update #100 [0, 99] -> [0, 100]", "did"])
            #expect(frc.changePasses == 1)
            let firedNow = view.counters.faultsFired - fired, selectsNow = ctxSelects(coordinator) - selects
            #expect(firedNow >= 2)  // the two updated rows, with their batches' rows and the rows searched
            #expect(firedNow <= 60)
            #expect(selectsNow >= 1 && selectsNow <= 8)  // batches, not one SELECT per row
            #expect((frc.fetchedObjects?.first as? Item)?.id == 150)
            #expect((frc.fetchedObjects?[100] as? Item)?.flag == true)
        }
    }

    /// A tracking controller over items 1 (price 1), 2 (price 2) and 3 (price 3), ordered by name only, with no
    /// sections: a price is no sort key.
    static func byNameOnly(_ stack: TestStack, _ ctx: ManagedObjectContext, _ predicate: ObjectPredicate?) throws -> (FetchedResultsController, FRCRecorder) {
        try FetchedResultsControllerTests.seed(stack, [(1, "a", 1), (2, "b", 2), (3, "c", 3)])
        return try ctx.performAndWait {
            let frc = FetchedResultsController(
                fetchRequest: FetchRequest(entityName: "Item", predicate: predicate, sortDescriptors: [ObjectSortDescriptor("name")]), managedObjectContext: ctx)
            let recorder = FRCRecorder()
            frc.delegate = recorder
            try frc.performFetch()
            return (frc, recorder)
        }
    }

    // Docs/coredata-behaviour.md §5: a local edit that makes a shown object stop matching the predicate is a
    // delete, even when it changed no sort or section key.
    @Test("A local edit that stops an object matching is a delete, though no sort key changed (§5)")
    func editThatStopsMatchingIsADelete_5() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let (frc, recorder) = try Self.byNameOnly(stack, ctx, .compare("price", .lessThan, 10.0))
        try ctx.performAndWait {
            try FetchedResultsControllerTests.item(ctx, 2).price = 20
            ctx.processPendingChanges()
            #expect(recorder.take() == ["will", "delete #2 [0, 1] -> -", "did"])
            #expect(frc.fetchedObjects?.map { ($0 as! Item).id } == [1, 3])
            #expect(frc.objectCount == 2)
        }
    }

    // Docs/coredata-behaviour.md §5: an object edited and deleted in one change cycle is a delete.
    @Test("An object edited and deleted in one cycle is a delete (§5)")
    func editedAndDeletedIsADelete_5() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let (frc, recorder) = try Self.byNameOnly(stack, ctx, nil)
        try ctx.performAndWait {
            let two = try FetchedResultsControllerTests.item(ctx, 2)
            two.price = 20
            ctx.delete(two)
            ctx.processPendingChanges()
            #expect(recorder.take() == ["will", "delete #2 [0, 1] -> -", "did"])
            #expect(frc.fetchedObjects?.map { ($0 as! Item).id } == [1, 3])
        }
    }
}

/// Several controllers on one context (Docs/coredata-behaviour.md §5): each runs its own pass over each
/// notification, and they are told in the order they first fetched, whatever their addresses.
@Suite struct SeveralControllersTests {
    /// Records, for every controller it serves, the order their change cycles began in.
    final class OrderLog: FetchedResultsControllerDelegate {
        var began: [Int] = []
        var names: [ObjectIdentifier: Int] = [:]
        func controllerWillChangeContent(_ controller: FetchedResultsController) { began.append(names[ObjectIdentifier(controller)] ?? -1) }
    }

    @Test("Controllers on one context are told of a change in the order they first fetched, each in its own cycle (§5)")
    func controllersAreToldInTheOrderTheyFetched() throws {
        let stack = try TestStack()
        try FetchedResultsControllerCostTests.seed(stack, count: 10)
        let ctx = stack.context()
        try ctx.performAndWait {
            let log = OrderLog()
            let controllers = (0..<8).map { _ in
                FetchedResultsController(fetchRequest: FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("price")]),
                                         managedObjectContext: ctx, sectionNameKeyPath: nil)
            }
            let fetchOrder = [5, 2, 7, 0, 3, 6, 1, 4]
            for (n, i) in fetchOrder.enumerated() {
                log.names[ObjectIdentifier(controllers[i])] = n
                controllers[i].delegate = log
                try controllers[i].performFetch()
            }
            let item = Item(context: ctx)
            item.id = 100
            item.price = 1
            ctx.processPendingChanges()
            #expect(log.began == Array(0..<8))
            #expect(controllers.allSatisfy { $0.objectCount == 11 })
        }
    }
}
