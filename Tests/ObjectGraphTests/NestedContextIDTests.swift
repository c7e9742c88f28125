import Foundation
import Testing
@testable import ObjectGraph

/// Permanent IDs in nested contexts (semantics §2.1 step 4, §2.2): a child save mints none; the root's save to the
/// store does, and then every descendant re-keys the objects it holds for those rows (Core Data's
/// `_changeIDsForManagedObjects:toIDs:`).
@Suite struct NestedContextIDTests {
    /// A root on the stack's coordinator, a child of it (the middle) and a child of that.
    static func chain(_ stack: TestStack) -> (root: ManagedObjectContext, middle: ManagedObjectContext, child: ManagedObjectContext) {
        let root = stack.context(name: "root")
        let middle = stack.child(of: root)
        middle.name = "middle"
        let child = stack.child(of: middle)
        child.name = "child"
        return (root, middle, child)
    }

    // Semantics §2.1 step 4, §2.2: after the root saves, the middle's and the child's objects have the root's
    // permanent IDs, are found under them, and not under the temporary ones any more (the registry re-keys them, as
    // the saving root's own registry does: `registeredObject(for: temporaryID)` is nil; inferred, see
    // Docs/core-data-rules.md "ids"). References between the new objects follow. An object inserted in the child
    // after its save, not pushed up, keeps its temporary ID.
    @Test("Nested contexts (§2.2): after the root saves, the middle and the child hold their objects under the permanent IDs")
    func descendantsTakeThePermanentIDs() throws {
        let stack = try TestStack()
        let seededID = try stack.seed(1)[0]
        let (root, middle, child) = Self.chain(stack)
        let (childItems, childTag, tempIDs, unpushed, seeded): ([Item], Tag, [ManagedObjectID], Item, Item) = try child.performAndWait {
            let items = (11...13).map { i -> Item in
                let item = Item(context: child)
                item.id = Int64(i)
                item.name = "item \(i)"
                return item
            }
            let tag = Tag(context: child)
            tag.name = "t"
            items[0].tag = tag
            // A row already in the store, now naming the new tag: clean after the push, it names it still.
            let seeded = try #require(try child.existingObject(with: seededID) as? Item)
            seeded.tag = tag
            try child.save()
            let later = Item(context: child)
            later.id = 14
            return (items, tag, items.map(\.objectID), later, seeded)
        }
        let middleItems: [Item] = try middle.performAndWait {
            let items = try tempIDs.map { try #require(middle.registeredObject(for: $0) as? Item) }
            try middle.save()
            return items
        }
        let permanentIDs: [ManagedObjectID] = try root.performAndWait {
            let items = try tempIDs.map { try #require(root.registeredObject(for: $0) as? Item) }
            try root.save()
            return items.map(\.objectID)
        }
        #expect(permanentIDs.allSatisfy { !$0.isTemporaryID })
        for (context, items) in [(middle, middleItems), (child, childItems)] {
            try context.performAndWait {
                for (n, item) in items.enumerated() {
                    #expect(item.objectID == permanentIDs[n])
                    #expect(!item.objectID.isTemporaryID)
                    #expect(try context.existingObject(with: permanentIDs[n]) === item)
                    #expect(context.registeredObject(for: permanentIDs[n]) === item)
                    #expect(context.registeredObject(for: tempIDs[n]) == nil)
                }
                let tag = try #require(items[0].tag)
                #expect(!tag.objectID.isTemporaryID)
                #expect(context.registeredObject(for: tag.objectID) === tag)
                #expect(tag.items.contains(items[0]))
            }
        }
        try child.performAndWait {
            #expect(childItems[0].tag === childTag)
            #expect(seeded.tag === childTag)
            #expect(childTag.items == [childItems[0], seeded])
            #expect(unpushed.objectID.isTemporaryID)
            #expect(child.registeredObject(for: unpushed.objectID) === unpushed)
            #expect(unpushed.isInserted)
            // Pushed up now, it is a new row of its own.
            try child.save()
        }
        try middle.performAndWait { try middle.save() }
        try root.performAndWait { try root.save() }
        child.performAndWait { #expect(!unpushed.objectID.isTemporaryID) }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZITEM") == [[.integer(5)]])
        #expect(try stack.sql("SELECT COUNT(*) FROM ZITEM WHERE ZTAG IS NOT NULL") == [[.integer(2)]])
    }

    // Semantics §2.2: the duplicate an ID left temporary would make. After the root saved, a new child of the
    // middle fetches a row by key (so by its permanent ID), updates it and saves: the push finds the middle's own
    // object for that row, and a fetched results controller on the middle keeps showing it once.
    @Test("Nested contexts (§2.2): an update pushed by permanent ID after the root saved reaches the parent's one object")
    func pushAfterRootSaveFindsTheParentsObject() throws {
        let stack = try TestStack()
        let (root, middle, importer) = Self.chain(stack)
        let frc = FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")]), managedObjectContext: middle)
        let recorder = FRCRecorder()
        try middle.performAndWait {
            frc.delegate = recorder
            try frc.performFetch()
        }
        try importer.performAndWait {
            for i in 1...3 {
                let item = Item(context: importer)
                item.id = Int64(i)
                item.price = Double(i)
            }
            try importer.save()
        }
        try middle.performAndWait { try middle.save() }
        try root.performAndWait { try root.save() }
        let next = stack.child(of: middle)
        let updatedID: ManagedObjectID = try next.performAndWait {
            let item = try #require(try fetchItems(next, .compare("id", .equalTo, Int64(2))).first)
            #expect(!item.objectID.isTemporaryID)
            item.price = 99
            try next.save()
            return item.objectID
        }
        middle.performAndWait {
            middle.processPendingChanges()
            let rowTwo = middle.registeredObjects.compactMap { $0 as? Item }.filter { $0.id == 2 }
            #expect(rowTwo.count == 1)
            #expect(rowTwo.first?.objectID == updatedID)
            #expect(rowTwo.first?.price == 99)
            #expect(rowTwo.first?.isUpdated == true)
            let shown = (frc.fetchedObjects ?? []).compactMap { $0 as? Item }
            #expect(shown.map(\.id) == [1, 2, 3])
            #expect(frc.objectCount == 3)
            #expect(shown[1] === rowTwo.first)
        }
        // Saved down to the store, the update lands on the one row.
        try middle.performAndWait { try middle.save() }
        try root.performAndWait { try root.save() }
        #expect(try stack.sql("SELECT ZID, ZPRICE FROM ZITEM ORDER BY ZID") == [
            [.integer(1), .real(1)], [.integer(2), .real(99)], [.integer(3), .real(3)],
        ])
    }

    // Semantics §2.1 step 4 (FreeCoreData testIDsStayTemporaryUntilTheRootSaves): a child save alone, and the
    // middle's save into the root, mint no permanent IDs and write nothing.
    @Test("Nested contexts (§2.2): IDs stay temporary after child saves, until the root saves")
    func idsStayTemporaryUntilTheRootSaves() throws {
        let stack = try TestStack()
        let (root, middle, child) = Self.chain(stack)
        let (item, id): (Item, ManagedObjectID) = try child.performAndWait {
            let item = Item(context: child)
            item.id = 1
            try child.save()
            return (item, item.objectID)
        }
        #expect(id.isTemporaryID)
        let middleItem: ManagedObject = try middle.performAndWait {
            let object = try #require(middle.registeredObject(for: id))
            #expect(object.objectID.isTemporaryID)
            try middle.save()
            #expect(object.objectID == id)
            return object
        }
        try root.performAndWait {
            let object = try #require(root.registeredObject(for: id))
            #expect(object.objectID.isTemporaryID)
        }
        child.performAndWait { #expect(item.objectID == id) }
        middle.performAndWait { #expect(middleItem.objectID == id) }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZITEM") == [[.integer(0)]])
    }

    // Semantics §2.2: a descendant on the root's own queue (two main-queue contexts) re-keys within the root's
    // save, so code right after the save sees the permanent IDs there too.
    @Test("Nested contexts (§2.2): a child on the root's queue has the permanent IDs as soon as the root's save returns")
    func childOnTheRootsQueueReKeysInPlace() throws {
        let stack = try TestStack()
        let (root, child) = stack.mainQueueRootAndChild(label: "shared main")
        try root.performAndWait {
            let item = Item(context: child)
            item.id = 1
            try child.save()
            try root.save()
            #expect(!item.objectID.isTemporaryID)
            #expect(child.registeredObject(for: item.objectID) === item)
        }
    }

    // Semantics §2.2, §8: the root's save may run while a descendant's queue waits for it (a main-queue block
    // inside the private writer's performAndWait). The descendant re-keys on its own queue afterwards, with no
    // deadlock.
    @Test("Nested contexts (§2.2): a root save run from inside a waiting child's block does not deadlock")
    func rootSaveFromInsideTheChildsBlock() throws {
        let stack = try TestStack()
        let writer = stack.context(name: "writer")
        let view = ManagedObjectContext(concurrencyType: .mainQueue, queue: ContextQueue(label: "view main"))
        view.parent = writer
        let item: Item = try view.performAndWait {
            let item = Item(context: view)
            item.id = 1
            try view.save()
            try writer.performAndWait { try writer.save() }
            return item
        }
        view.performAndWait {
            #expect(!item.objectID.isTemporaryID)
            #expect(view.registeredObject(for: item.objectID) === item)
        }
    }

    // The parent knows its live children in creation order, weakly: a child that goes leaves the list.
    @Test("Nested contexts (§2.2): a context lists its live children in creation order, weakly")
    func childrenAreWeakAndOrdered() throws {
        let stack = try TestStack()
        let parent = stack.context()
        let first = stack.child(of: parent)
        var second: ManagedObjectContext? = stack.child(of: parent)
        let third = stack.child(of: parent)
        let grandchild = stack.child(of: first)
        #expect(parent.liveChildren().map(ObjectIdentifier.init) == [first, second!, third].map(ObjectIdentifier.init))
        second = nil
        #expect(parent.liveChildren().map(ObjectIdentifier.init) == [first, third].map(ObjectIdentifier.init))
        #expect(parent.liveDescendants().map(ObjectIdentifier.init) == [first, grandchild, third].map(ObjectIdentifier.init))
    }
}
