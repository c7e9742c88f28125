import Foundation
import Testing
@testable import ObjectGraph

/// `shouldRefreshRefetchedObjects` (semantics §2.3; Docs/core-data-rules.md). Apple
/// documents that it updates refetched objects with the store's values; CoreDataPlus's
/// `test_InvestigationShouldRefreshRefetchedObjectsIsStillBroken` (FB7419788) shows that it does not. The default
/// follows Apple's observed behaviour; `.documented` does what the documentation says.
@Suite struct RefetchedObjectsTests {
    /// A reader holding item 1 loaded at price 10 and item 2 as a fault; then a writer on the same coordinator
    /// saves new prices for both.
    private func setUp() throws -> (TestStack, ManagedObjectContext, [ManagedObjectID]) {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let reader = stack.context(name: "reader")
        try reader.performAndWait {
            reader.retainsRegisteredObjects = true
            let item = try #require(reader.existingObject(with: ids[0]) as? Item)
            #expect(item.price == 10)
            _ = reader.object(with: ids[1])
        }
        let writer = stack.context(name: "writer")
        try writer.performAndWait {
            for (i, id) in ids.enumerated() { (try writer.existingObject(with: id) as! Item).price = Double(100 + i) }
            try writer.save()
        }
        return (stack, reader, ids)
    }

    @Test("shouldRefreshRefetchedObjects defaults to false and to Apple's observed behaviour")
    func defaults() {
        let request = FetchRequest(entityName: "Item")
        #expect(!request.shouldRefreshRefetchedObjects)
        #expect(request.refetchedObjectsRefresh == .coreData)
    }

    // Verified on Apple (second-hand, CoreDataPlus, FB7419788): the refetch leaves the loaded object's old value;
    // refresh(_:mergeChanges: false) then shows the new one.
    @Test("As on Apple, a refetch with shouldRefreshRefetchedObjects leaves a loaded object's old values (FB7419788)")
    func appleKeepsOldValues() throws {
        let (_, reader, _) = try setUp()
        try reader.performAndWait {
            var request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])
            request.shouldRefreshRefetchedObjects = true
            let items = try reader.fetch(request, as: Item.self)
            #expect(items[0].price == 10)  // still the old value
            #expect(items[1].price == 101)  // a fault fires with the row the fetch cached
            reader.refresh(items[0], mergeChanges: false)
            #expect(items[0].price == 100)
        }
    }

    // Apple's documentation: the refetched objects take the store's values; an unsaved change stays on top.
    @Test("Documented way, refetched loaded objects take the store's values and keep unsaved changes")
    func documentedRefreshes() throws {
        let (stack, reader, ids) = try setUp()
        let recorder = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: reader)
        try reader.performAndWait {
            let item = try #require(reader.registeredObject(for: ids[0]) as? Item)
            item.name = "mine"  // an unsaved change of another attribute
            reader.processPendingChanges()
            var request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])
            request.shouldRefreshRefetchedObjects = true
            request.refetchedObjectsRefresh = .documented
            let before = recorder.notes.count
            let items = try reader.fetch(request, as: Item.self)
            #expect(items[0] === item)
            #expect(item.price == 100)
            #expect(item.name == "mine")
            #expect(item.changedValues().keys.sorted() == ["name"])
            let refreshed = recorder.notes[before...].compactMap(ObjectsDidChange.init).map(\.refreshed)
            #expect(refreshed == [[item]])  // the fault was not refreshed: it had nothing to refresh
            try reader.save()  // no conflict: the object has the row's version now
        }
        #expect(try stack.sql("SELECT ZNAME, ZPRICE FROM ZITEM ORDER BY ZID") == [[.text("mine"), .real(100)], [.text("item 2"), .real(101)]])
    }

    // The semantics doc's case: a batch update bypasses the row cache; the refetch reads the newer rows.
    @Test("After a batch update, only the documented way shows the new value on refetch")
    func afterBatchUpdate() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = try #require(ctx.existingObject(with: ids[0]) as? Item)
            _ = try ctx.execute(BatchUpdateRequest(entityName: "Item", propertiesToUpdate: ["price": 7.0]))
            var request = FetchRequest(entityName: "Item")
            request.shouldRefreshRefetchedObjects = true
            _ = try ctx.fetch(request)
            #expect(item.price == 10)
            request.refetchedObjectsRefresh = .documented
            _ = try ctx.fetch(request)
            #expect(item.price == 7)
            #expect(!item.hasChanges)
        }
    }
}
