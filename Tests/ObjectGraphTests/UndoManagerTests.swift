import Foundation
import Testing
@testable import ObjectGraph

/// A context's undo manager (Docs/coredata-behaviour.md §4 "Undo"; semantics §2.1 step 8, §4).
/// An event (one `processPendingChanges()`: the end of a `perform` block, a save, an explicit call) is one undo
/// group unless the app groups explicitly.
@Suite struct UndoManagerTests {
    private func changes(_ recorder: NotificationRecorder) -> [ObjectsDidChange] {
        recorder.notes.compactMap(ObjectsDidChange.init)
    }

    // Apple: "The default value is nil". Without one, undo() and redo() do nothing and nothing is recorded.
    @Test("A context has no undo manager by default; undo() then changes nothing (§4)")
    func nilByDefault() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let ctx = stack.context()
        try ctx.performAndWait {
            #expect(ctx.undoManager == nil)
            let item = try #require(ctx.existingObject(with: ids[0]) as? Item)
            item.price = 99
            ctx.processPendingChanges()
            ctx.undo()
            #expect(item.price == 99)
            #expect(ctx.updatedObjects == [item])
            #expect(ctx.undoRecords == nil)
        }
    }

    // Undo of an attribute change returns the committed value: the object leaves updatedObjects; an
    // objects-did-change reports it updated; redo puts the change back.
    @Test("Undo and redo an attribute change, with the updated set and objects-did-change (§4)")
    func undoRedoAttribute() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let ctx = stack.context()
        let recorder = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: ctx)
        try ctx.performAndWait {
            ctx.undoManager = UndoManager()
            let item = try #require(ctx.existingObject(with: ids[0]) as? Item)
            item.price = 99
            item.name = "renamed"
            ctx.processPendingChanges()  // one event: one group
            #expect(ctx.undoManager!.canUndo)
            #expect(ctx.undoManager!.undoGroupCount == 1)
            let before = changes(recorder).count
            ctx.undo()
            #expect(item.price == 10)
            #expect(item.name == "item 1")
            #expect(!item.hasChanges)
            #expect(!ctx.hasChanges)
            #expect(ctx.updatedObjects.isEmpty)
            let undone = changes(recorder)
            #expect(undone.count == before + 1)
            #expect(undone.last?.updated == [item])
            #expect(Set(item.changedValuesForCurrentEvent().keys).isEmpty)  // announced, so the event is over
            #expect(ctx.undoManager!.canRedo)
            #expect(!ctx.undoManager!.canUndo)
            ctx.redo()
            #expect(item.price == 99)
            #expect(item.name == "renamed")
            #expect(ctx.updatedObjects == [item])
            #expect(changes(recorder).last?.updated == [item])
            #expect(ctx.undoManager!.canUndo)
            #expect(!ctx.undoManager!.canRedo)
            try ctx.save()
        }
        #expect(try stack.sql("SELECT ZPRICE, ZNAME FROM ZITEM") == [[.real(99), .text("renamed")]])
    }

    // Each event is its own group: two perform blocks undo one at a time, newest first.
    @Test("Each perform block is one undo group; undo goes back one block at a time")
    func groupPerPerformBlock() async throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let ctx = stack.context()
        let id = ids[0]
        try await ctx.perform { ctx.undoManager = UndoManager() }
        try await ctx.perform {
            let item = try ctx.existingObject(with: id) as! Item
            item.price = 20.5
            item.name = "first"
        }
        try await ctx.perform { (ctx.registeredObject(for: id) as! Item).price = 30.5 }
        try await ctx.perform {
            let item = ctx.registeredObject(for: id) as! Item
            #expect(ctx.undoManager!.undoGroupCount == 2)
            ctx.undo()
            #expect(item.price == 20.5)
            #expect(item.name == "first")
            ctx.undo()
            #expect(item.price == 10)
            #expect(item.name == "item 1")
            #expect(!ctx.undoManager!.canUndo)
            #expect(ctx.undoManager!.redoGroupCount == 2)
        }
    }

    // Explicit grouping: everything between begin and end is one group, whatever is processed inside.
    @Test("beginUndoGrouping/endUndoGrouping make one group of several events")
    func explicitGroup() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let ctx = stack.context()
        try ctx.performAndWait {
            let manager = UndoManager()
            ctx.undoManager = manager
            let items = try fetchItems(ctx)
            manager.beginUndoGrouping()
            items[0].price = 1
            ctx.processPendingChanges()
            items[1].price = 2
            ctx.processPendingChanges()
            #expect(manager.groupingLevel == 1)
            manager.endUndoGrouping()
            #expect(manager.undoGroupCount == 1)
            ctx.undo()
            #expect(items.map(\.price) == [10, 20])
            #expect(!ctx.hasChanges)
            _ = ids
            // As NSUndoManager's undo(): a group the app left open at the top level is closed, then undone.
            manager.beginUndoGrouping()
            items[0].price = 3
            ctx.undo()
            #expect(manager.groupingLevel == 0)
            #expect(items[0].price == 10)
        }
    }

    // Undoing an insert takes the object out of the context: not in insertedObjects, reported deleted; redo puts
    // it back as an insert with its values, and the save writes it.
    @Test("Undo of an insert removes it (reported deleted); redo inserts it again (§4)")
    func undoRedoInsert() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let recorder = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: ctx)
        try ctx.performAndWait {
            ctx.undoManager = UndoManager()
            let item = Item(context: ctx)
            item.id = 7
            item.name = "new"
            item.price = 3
            ctx.processPendingChanges()
            #expect(changes(recorder).last?.inserted == [item])
            ctx.undo()
            #expect(ctx.insertedObjects.isEmpty)
            #expect(!ctx.hasChanges)
            #expect(item.managedObjectContext == nil)
            #expect(!item.isInserted)
            #expect(ctx.registeredObject(for: item.objectID) == nil)
            #expect(changes(recorder).last?.deleted == [item])
            ctx.redo()
            #expect(ctx.insertedObjects == [item])
            #expect(item.managedObjectContext === ctx)
            #expect(item.isInserted)
            #expect(item.name == "new")
            #expect(item.price == 3)
            #expect(changes(recorder).last?.inserted == [item])
            try ctx.save()
        }
        #expect(try stack.sql("SELECT ZID, ZNAME, ZPRICE FROM ZITEM") == [[.integer(7), .text("new"), .real(3)]])
    }

    // Undoing a delete brings the object back (reported inserted); its delete rule's effects on related objects
    // are undone with it (nullify: the tag gets the item back).
    @Test("Undo of a delete restores the object and what its delete rule changed (§4)")
    func undoDeleteWithRules() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let recorder = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: ctx)
        try ctx.performAndWait {
            let tag = Tag(context: ctx)
            tag.name = "t"
            let item = Item(context: ctx)
            item.id = 1
            item.tag = tag
            try ctx.save()
            ctx.undoManager = UndoManager()
            ctx.delete(item)
            ctx.processPendingChanges()  // the nullify rule runs here
            #expect(ctx.deletedObjects == [item])
            #expect(tag.items.isEmpty)
            #expect(ctx.updatedObjects == [tag])
            ctx.undo()
            #expect(!item.isDeleted)
            #expect(ctx.deletedObjects.isEmpty)
            #expect(ctx.updatedObjects.isEmpty)
            #expect(!ctx.hasChanges)
            #expect(tag.items == [item])
            #expect(item.tag === tag)
            let last = try #require(changes(recorder).last)
            #expect(last.inserted == [item])
            #expect(last.updated == [tag])
            ctx.redo()
            #expect(item.isDeleted)
            #expect(tag.items.isEmpty)
            try ctx.save()
        }
        #expect(try stack.sql("SELECT count(*) FROM ZITEM") == [[.integer(0)]])
    }

    // Relationship changes are undone on both sides (to-one, to-many, many-to-many).
    @Test("Undo and redo relationship changes on both sides")
    func undoRelationships() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let a = Tag(context: ctx), b = Tag(context: ctx)
            let label = Label(context: ctx)
            let item = Item(context: ctx)
            item.id = 1
            item.tag = a
            try ctx.save()
            ctx.undoManager = UndoManager()
            item.tag = b
            try item.addObject(label, toRelationship: "labels")
            ctx.processPendingChanges()
            #expect(a.items.isEmpty && b.items == [item] && label.items == [item])
            ctx.undo()
            #expect(item.tag === a)
            #expect(a.items == [item])
            #expect(b.items.isEmpty)
            #expect(item.labels.isEmpty)
            #expect(label.items.isEmpty)
            #expect(!ctx.hasChanges)
            ctx.redo()
            #expect(item.tag === b)
            #expect(b.items == [item] && a.items.isEmpty)
            #expect(label.items == [item] && item.labels == [label])
            #expect(Set(ctx.updatedObjects) == Set([item, a, b, label] as [ManagedObject]))
            try ctx.save()
        }
        let other = stack.context()
        try other.performAndWait {
            let item = try #require(try fetchItems(other).first)
            #expect(item.tag?.objectID != nil)
            #expect(item.labels.count == 1)
        }
    }

    // A new change after an undo empties the redo stack; rollback and reset empty the undo stack (semantics §4).
    @Test("A new change clears redo; rollback() and reset() clear the undo stack (§4)")
    func clearing() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let ctx = stack.context()
        try ctx.performAndWait {
            let manager = UndoManager()
            ctx.undoManager = manager
            let item = try #require(ctx.existingObject(with: ids[0]) as? Item)
            item.price = 1
            ctx.processPendingChanges()
            item.price = 2
            ctx.processPendingChanges()
            ctx.undo()
            #expect(manager.canRedo)
            item.name = "other"
            ctx.processPendingChanges()
            #expect(!manager.canRedo)
            #expect(manager.undoGroupCount == 2)
            ctx.rollback()
            #expect(!manager.canUndo)
            #expect(item.price == 10)
            item.price = 5
            ctx.processPendingChanges()
            #expect(manager.canUndo)
            ctx.reset()
            #expect(!manager.canUndo && !manager.canRedo)
        }
    }

    // Undo works across a save: the undone change is measured against the new committed values, so the object
    // is updated again and the next save writes the old value back.
    @Test("Undo after a save makes the object updated again, and a save writes it")
    func undoAcrossSave() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let ctx = stack.context()
        try ctx.performAndWait {
            ctx.undoManager = UndoManager()
            let item = try #require(ctx.existingObject(with: ids[0]) as? Item)
            item.price = 42
            try ctx.save()
            #expect(!ctx.hasChanges)
            ctx.undo()
            #expect(item.price == 10)
            #expect(ctx.updatedObjects == [item])
            #expect(item.changedValues().keys.sorted() == ["price"])
            try ctx.save()
        }
        #expect(try stack.sql("SELECT ZPRICE FROM ZITEM") == [[.real(10)]])
    }

    // Disabled registration records nothing when the changes are processed while it is disabled; a change set
    // back to its old value in the same event is not an undo step.
    @Test("disableUndoRegistration and a value set back leave no undo step")
    func disabledAndSetBack() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let ctx = stack.context()
        try ctx.performAndWait {
            let manager = UndoManager()
            ctx.undoManager = manager
            let item = try #require(ctx.existingObject(with: ids[0]) as? Item)
            manager.disableUndoRegistration()
            item.price = 1
            ctx.processPendingChanges()
            manager.enableUndoRegistration()
            #expect(!manager.canUndo)
            item.name = "x"
            item.name = "item 1"
            ctx.processPendingChanges()
            #expect(!manager.canUndo)
        }
    }

    // Semantics §2.1 step 8, §4: the undo manager holds changed objects strongly; without one, a changed object
    // that was saved and nothing references any more leaves the registry.
    @Test("The undo manager keeps changed objects alive after a save (§2.1 step 8, §4)")
    func holdsChangedObjects() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        for withUndo in [false, true] {
            let ctx = stack.context()
            try ctx.performAndWait {
                if withUndo { ctx.undoManager = UndoManager() }
                do {
                    let item = try #require(ctx.existingObject(with: ids[0]) as? Item)
                    item.price += 1
                }
                try ctx.save()
                #expect((ctx.registeredObject(for: ids[0]) != nil) == withUndo)
                if withUndo {
                    ctx.undoManager = nil  // the manager goes, and the object with it
                    #expect(ctx.registeredObject(for: ids[0]) == nil)
                }
            }
        }
    }

    // Transient values are undone too (they are changes).
    @Test("A transient change is undone and redone")
    func undoTransient() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let ctx = stack.context()
        try ctx.performAndWait {
            ctx.undoManager = UndoManager()
            let item = try #require(ctx.existingObject(with: ids[0]) as? Item)
            try item.setValue("note", forKey: "scratch")
            ctx.processPendingChanges()
            ctx.undo()
            #expect(item.value(forKey: "scratch") == nil)
            #expect(!item.hasChanges)
            ctx.redo()
            #expect(item.value(forKey: "scratch") as? String == "note")
            #expect(item.isUpdated)
        }
    }

    // A fetched results controller follows an undo: an undone insert leaves its results, an undone delete comes
    // back, an undone change re-sorts.
    @Test("A fetched results controller follows undo and redo of inserts, deletes and changes")
    func controllerFollowsUndo() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let ctx = stack.context()
        try ctx.performAndWait {
            ctx.undoManager = UndoManager()
            let frc = FetchedResultsController(fetchRequest: FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("price")]),
                                               managedObjectContext: ctx)
            let recorder = FRCRecorder()
            frc.delegate = recorder  // a controller without a delegate tracks nothing (semantics §5)
            try frc.performFetch()
            func prices() -> [Double] { (frc.fetchedObjects ?? []).map { ($0 as! Item).price } }
            #expect(prices() == [10, 20])
            let item = Item(context: ctx)
            item.id = 3
            item.price = 5
            ctx.processPendingChanges()
            #expect(prices() == [5, 10, 20])
            _ = recorder.take()
            ctx.undo()
            #expect(prices() == [10, 20])
            #expect(recorder.take() == ["will", "delete #3 [0, 0] -> -", "did"])
            ctx.redo()
            #expect(prices() == [5, 10, 20])
            #expect(recorder.take() == ["will", "insert #3 - -> [0, 0]", "did"])
            let first = try #require(ctx.existingObject(with: ids[0]) as? Item)
            ctx.delete(first)
            ctx.processPendingChanges()
            #expect(prices() == [5, 20])
            ctx.undo()
            #expect(prices() == [5, 10, 20])
            first.price = 30
            ctx.processPendingChanges()
            #expect(prices() == [5, 20, 30])
            ctx.undo()
            #expect(prices() == [5, 10, 20])
        }
    }

    // After a save: undoing the insert deletes the saved row; undoing the delete puts the row back under its ID.
    @Test("After a save, undoing an insert deletes the row and undoing a delete inserts it again")
    func undoInsertAndDeleteAcrossSave() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let ctx = stack.context()
        try ctx.performAndWait {
            ctx.undoManager = UndoManager()
            let item = Item(context: ctx)
            item.id = 2
            item.price = 2
            try ctx.save()
            ctx.undo()
            #expect(item.isDeleted)
            #expect(ctx.deletedObjects == [item])
            try ctx.save()
        }
        #expect(try stack.sql("SELECT ZID FROM ZITEM") == [[.integer(1)]])
        let pk = try stack.sql("SELECT Z_PK FROM ZITEM")
        try ctx.performAndWait {
            ctx.undoManager!.removeAllActions()
            let old = try #require(ctx.existingObject(with: ids[0]) as? Item)
            ctx.delete(old)
            try ctx.save()
            #expect(old.managedObjectContext == nil)
            ctx.undo()
            #expect(old.managedObjectContext === ctx)
            #expect(ctx.insertedObjects == [old])
            #expect(old.objectID == ids[0])
            #expect(old.price == 10)
            try ctx.save()
        }
        #expect(try stack.sql("SELECT Z_PK FROM ZITEM") == pk)
        #expect(try stack.sql("SELECT ZID, ZNAME, ZPRICE FROM ZITEM") == [[.integer(1), .text("item 1"), .real(10)]])
    }

    // CoreDataPlus's test_InvestigationUndoManager, run on Apple (second-hand): undo without processing first
    // undoes the unprocessed inserts (the undo manager's checkpoint processes them); rollback empties the stacks;
    // inserts processed while registration was off cannot be undone.
    @Test("CoreDataPlus's undo investigation: undo, redo, rollback, disabled registration (verified on Apple, second-hand)")
    func coreDataPlusInvestigation() throws {
        let stack = try TestStack()
        func fill(_ ctx: ManagedObjectContext) {
            for i in 1...3 {
                let item = Item(context: ctx)
                item.id = Int64(i)
            }
        }
        let first = stack.context()
        first.undoManager = UndoManager()  // set off the context's queue, as the investigation does
        first.performAndWait {
            fill(first)
            first.undo()
            #expect(first.insertedObjects.isEmpty)
            first.redo()
            #expect(first.insertedObjects.count == 3)
            first.rollback()
            #expect(first.insertedObjects.isEmpty)
            first.redo()
            #expect(first.insertedObjects.isEmpty)
        }
        let second = stack.context()
        second.performAndWait {
            fill(second)
            second.undo()  // no undo manager: nothing happens
            #expect(second.insertedObjects.count == 3)
            second.rollback()
            #expect(second.insertedObjects.isEmpty)
        }
        let third = stack.context()
        third.performAndWait {
            third.undoManager = UndoManager()
            third.processPendingChanges()
            third.undoManager!.disableUndoRegistration()
            fill(third)
            third.processPendingChanges()
            third.undoManager!.enableUndoRegistration()
            third.undo()
            #expect(third.insertedObjects.count == 3)
        }
    }

    // The manager itself: levels of undo keep the newest groups; registerUndo with a target of the app's.
    @Test("UndoManager keeps levelsOfUndo groups and runs the app's own actions")
    func managerBasics() {
        final class Box { var value = 0 }
        let manager = UndoManager()
        let box = Box()
        manager.levelsOfUndo = 2
        for v in 1...3 {
            let old = box.value
            box.value = v
            manager.registerUndo(withTarget: box) { $0.value = old }
            manager.endEventGroup()
        }
        #expect(manager.undoGroupCount == 2)
        manager.undo()
        #expect(box.value == 2)
        manager.undo()
        #expect(box.value == 1)
        manager.undo()  // the oldest group was dropped
        #expect(box.value == 1)
        #expect(!manager.canRedo)  // the actions registered no redo
    }
}
