import Foundation
import Testing
@testable import ObjectGraph

// Objects and IDs (issue "ObjectGraph core" item 3; semantics §2.1 steps 2, 4, 7, §4): URI forms, life-cycle
// hooks, change tracking, obtainPermanentIDs, wrong-queue traps. Helpers are prefixed `lc`.

/// Counts every life-cycle hook on the instance.
final class LCNote: ManagedObject {
    @Managed("text") var text: String?
    var calls: [String: Int] = [:]
    override func awakeFromInsert() { calls["awakeFromInsert", default: 0] += 1 }
    override func awakeFromFetch() { calls["awakeFromFetch", default: 0] += 1 }
    override func willSave() { calls["willSave", default: 0] += 1 }
    override func didSave() { calls["didSave", default: 0] += 1 }
    override func prepareForDeletion() { calls["prepareForDeletion", default: 0] += 1 }
}

func lcModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [
        EntityDescription(name: "Note", managedObjectClass: LCNote.self, attributes: [AttributeDescription(name: "text", type: .string)]),
    ])
}

@Suite struct ObjectLifecycleTests {

    // A permanent ID's URI (`x-coredata://<store UUID>/<Entity>/p<Z_PK>`) turns back into an equal
    // ID, on the same coordinator and on another coordinator of the same file; a temporary ID has its own form;
    // a URI of another store or entity gives nil.
    @Test func uriRepresentationRoundTrips_4() throws {
        let stack = try TestStack()
        let id = try stack.seed(1)[0]
        let uri = id.uriRepresentation
        let storeID = try #require(stack.coordinator.storeIdentifier)
        #expect(uri.absoluteString == "x-coredata://\(storeID)/Item/p\(try #require(id.primaryKey))")
        #expect(stack.coordinator.managedObjectID(forURIRepresentation: uri) == id)
        let second = try stack.secondCoordinator()
        let again = try #require(second.managedObjectID(forURIRepresentation: uri))
        #expect(again == id)
        let ctx = stack.context(second)
        try ctx.performAndWait {
            let item = try #require(try ctx.existingObject(with: again) as? Item)
            #expect(item.id == 1)
        }
        #expect(stack.coordinator.managedObjectID(forURIRepresentation: URL(string: "x-coredata://OTHER-STORE/Item/p1")!) == nil)
        #expect(stack.coordinator.managedObjectID(forURIRepresentation: URL(string: "x-coredata://\(storeID)/Nope/p1")!) == nil)
        let scratch = stack.context()
        let temporary = scratch.performAndWait { Item(context: scratch).objectID }
        #expect(temporary.isTemporaryID)
        #expect(temporary.uriRepresentation.absoluteString.hasPrefix("x-coredata:///Item/t"))
    }

    // Semantics §2.1 steps 2 and 7, §4 (firing runs awakeFromFetch), §2.1 step 1 (prepareForDeletion in delete
    // propagation): each hook runs once per event.
    @Test func lifeCycleHooksRunOncePerEvent_2_1() throws {
        let stack = try TestStack(model: lcModel())
        let ctx = stack.context()
        let id = try ctx.performAndWait {
            let note = LCNote(context: ctx)
            #expect(note.calls == ["awakeFromInsert": 1])
            note.text = "a"
            try ctx.save()
            #expect(note.calls == ["awakeFromInsert": 1, "willSave": 1, "didSave": 1])
            note.text = "b"
            try ctx.save()
            #expect(note.calls == ["awakeFromInsert": 1, "willSave": 2, "didSave": 2])
            try ctx.save()  // nothing to save: no hooks
            #expect(note.calls["willSave"] == 2)
            return note.objectID
        }
        let reader = stack.context()
        try reader.performAndWait {
            let note = try #require(reader.object(with: id) as? LCNote)
            #expect(note.calls.isEmpty)  // a fault has not awoken
            #expect(note.text == "b")
            #expect(note.calls == ["awakeFromFetch": 1])
            reader.refresh(note, mergeChanges: false)
            _ = note.text
            #expect(note.calls["awakeFromFetch"] == 2)
            reader.delete(note)
            reader.processPendingChanges()
            #expect(note.calls["prepareForDeletion"] == 1)
            // Deleting it again calls prepareForDeletion again, and changes nothing else.
            reader.delete(note)
            #expect(note.calls["prepareForDeletion"] == 2)
            #expect(reader.deletedObjects.count == 1)
            try reader.save()
            #expect(note.calls["willSave"] == 1)
            #expect(note.calls["didSave"] == 1)
        }
    }

    // isInserted / isUpdated / isDeleted / hasChanges, changedValues() and
    // committedValues(forKeys:) through an object's life.
    @Test func changeTrackingThroughLife_4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = try #require(try ctx.existingObject(with: ids[0]) as? Item)
            #expect(!item.isInserted && !item.isUpdated && !item.isDeleted && !item.hasChanges)
            #expect(item.changedValues().isEmpty)
            item.name = "renamed"
            item.price = 99
            #expect(item.isUpdated && item.hasChanges)
            #expect(Set(item.changedValues().keys) == ["name", "price"])
            #expect(item.changedValues()["name"] as? String == "renamed")
            let committed = item.committedValues(forKeys: ["name", "price"])
            #expect(committed["name"] as? String == "item 1")
            #expect(committed["price"] as? Double == 10)
            #expect(item.committedValues(forKeys: nil).keys.contains("tag"))  // every attribute and to-one
            try ctx.save()
            #expect(!item.hasChanges && item.changedValues().isEmpty)
            #expect(item.committedValues(forKeys: ["name"])["name"] as? String == "renamed")
            ctx.delete(item)
            #expect(item.isDeleted && item.hasChanges && !item.isUpdated)
            let fresh = Item(context: ctx)
            #expect(fresh.isInserted && fresh.hasChanges && !fresh.isUpdated)
            #expect(fresh.committedValues(forKeys: ["name"]).isEmpty || fresh.committedValues(forKeys: ["name"])["name"] is NSNull)
        }
    }

    // Semantics §2.1 step 4: obtainPermanentIDs(for:) mints the ID early from Z_PRIMARYKEY; the object stays
    // inserted, is found under its new ID, and the save writes that Z_PK.
    @Test func obtainPermanentIDsEarly_2_1() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = Item(context: ctx)
            item.id = 10
            let temporary = item.objectID
            #expect(temporary.isTemporaryID)
            try ctx.obtainPermanentIDs(for: [item])
            let permanent = item.objectID
            #expect(!permanent.isTemporaryID)
            #expect(permanent.primaryKey == 3)
            #expect(item.isInserted)
            #expect(ctx.insertedObjects.contains(item))
            #expect(ctx.registeredObject(for: permanent) === item)
            #expect(ctx.registeredObject(for: temporary) == nil)
            try ctx.save()
            #expect(item.objectID == permanent)
            #expect(!item.isInserted)
        }
        #expect(try stack.sql("SELECT Z_PK FROM ZITEM WHERE ZID = 10") == [[.integer(3)]])
        #expect(try stack.sql("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Item'") == [[.integer(3)]])
    }

    // Issue "Bad input" (wrong-queue use traps with a message) and semantics §8 (ConcurrencyDebug): touching a
    // private-queue context off its queue stops the process with a message naming the context.
    @Test func wrongQueueUseTraps_8() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            ManagedObjectContext.concurrencyDebug = true
            let ctx = ManagedObjectContext(concurrencyType: .privateQueue)
            ctx.name = "the-trapping-context"
            _ = ctx.registeredObjects  // off the context's queue
        }.map { result in
            let text = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(text.contains("concurrency violation"))
            #expect(text.contains("the-trapping-context"))
        }
    }

    // Same rule for the change-set accessors (insertedObjects, updatedObjects, deletedObjects, hasChanges): reading
    // them off the queue traps too (before, they read silently).
    @Test func wrongQueueChangeSetAccessTraps_8() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            ManagedObjectContext.concurrencyDebug = true
            let ctx = ManagedObjectContext(concurrencyType: .privateQueue)
            ctx.name = "the-trapping-context"
            _ = ctx.hasChanges  // off the context's queue
        }.map { result in
            let text = String(decoding: result.standardErrorContent, as: UTF8.self)
            #expect(text.contains("concurrency violation"))
            #expect(text.contains("hasChanges"))
        }
    }

    // 134050 (persistent store save conflicts) is defined and never raised; an unresolved
    // optimistic-locking conflict is 133020 (semantics §1.4, §10 item 6).
    @Test func saveConflictsCodeIsDefinedButNotRaised_18() throws {
        #expect(ObjectGraphError.Code.persistentStoreSaveConflicts.rawValue == 134050)
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let a = stack.context(), b = stack.context()
        try a.performAndWait { try #require(try a.existingObject(with: ids[0]) as? Item).name = "a" }
        try b.performAndWait {
            try #require(try b.existingObject(with: ids[0]) as? Item).name = "b"
            try b.save()
        }
        try a.performAndWait {
            a.mergePolicy = .error
            do { try a.save(); Issue.record("a conflicting save under the error policy succeeded") } catch let error as ObjectGraphError {
                #expect(error.code == .merge)
                #expect(error.code != .persistentStoreSaveConflicts)
            }
        }
    }

    // Semantics §5: a change to an insert already announced is reported once as an update; the flag that stands
    // in for the pending-insert set is cleared by objects-did-change, by rollback and by reset.
    @Test func announcedInsertReportsLaterChangesAsUpdates_5() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        ctx.performAndWait {
            let item = Item(context: ctx)
            item.id = 1
            #expect(item.isInsertPending)
            ctx.processPendingChanges()
            #expect(!item.isInsertPending)
            let changes = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: ctx)
            item.name = "changed"
            item.price = 2
            ctx.processPendingChanges()
            let updated = changes.notes.last?.userInfo?[ManagedObjectContext.NotificationKey.updatedObjects.rawValue] as? Set<ManagedObject>
            #expect(updated == [item])
            #expect(ctx.updatedObjects.isEmpty)  // an insert never joins updatedObjects
            let other = Item(context: ctx)
            ctx.rollback()
            #expect(!other.isInsertPending)
        }
    }

    // Semantics §1.5: an object's updated-set flag follows the changed values back to the snapshot.
    @Test func updatedFlagFollowsChanges_1_5() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = Item(context: ctx)
            item.id = 1
            item.price = 1
            try ctx.save()
            item.price = 2
            #expect(item.isInUpdatedSet && ctx.updatedObjects == [item])
            item.price = 1
            #expect(!item.isInUpdatedSet && ctx.updatedObjects.isEmpty)
            item.price = 3
            try ctx.save()
            #expect(!item.isInUpdatedSet && ctx.updatedObjects.isEmpty)
        }
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
}

/// Semantics §2.1, the save flow: saving a context with no changes still posts will-save and
/// did-save, with empty sets.
@Suite struct EmptySaveNotificationTests {
    @Test func emptySavePostsWillAndDidSave_6() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let seen = NotificationLog()
        let tokens = [ManagedObjectContext.willSaveNotification, ManagedObjectContext.didSaveNotification, ManagedObjectContext.didSaveObjectIDsNotification].map { name in
            NotificationCenter.default.addObserver(forName: name, object: ctx, queue: nil) { note in
                let sets = ["inserted", "updated", "deleted"].map { (note.userInfo?[$0] as? Set<ManagedObject>)?.count ?? (note.userInfo?["\($0)_objectIDs"] as? Set<ManagedObjectID>)?.count ?? -1 }
                seen.add("\(note.name.rawValue.split(separator: ".").last ?? "") \(sets)")
            }
        }
        defer { for t in tokens { NotificationCenter.default.removeObserver(t) } }
        let statementsBefore = stack.coordinator.counters.statements
        try ctx.performAndWait { try ctx.save() }
        let names = seen.entries.map { String($0.split(separator: " ")[0]) }
        #expect(names.count == 3)
        #expect(seen.entries.filter { !$0.contains("[-1, -1, -1]") }.allSatisfy { $0.hasSuffix("[0, 0, 0]") })
        #expect(stack.coordinator.counters.statements == statementsBefore)  // nothing reached the store
        #expect(ctx.performAndWait { ctx.counters.saves } == 0)
    }
}

final class NotificationLog: @unchecked Sendable {  // appended on the posting thread (the context's queue), read after
    private(set) var entries: [String] = []
    func add(_ s: String) { entries.append(s) }
}
