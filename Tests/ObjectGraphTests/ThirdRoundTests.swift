import Foundation
import Testing
@testable import ObjectGraph

/// Behaviour kept by the third round of import fixes (Benchmarks/LOG.md, fixes 12–21): the registry's strong
/// then weak hold, the object's unowned pointer to its context, the flags that stand in for set membership, and
/// the bit set of changed slots.
@Suite struct ThirdRoundTests {
    // Semantics §2.1 step 8: an unsaved insert stays registered although nothing else holds it; once saved and
    // dropped by the app it is freed and leaves the registry.
    @Test func unsavedInsertIsHeldThenReleasedAfterSave_2_1() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            var id: ManagedObjectID?
            do {
                let item = Item(context: ctx)
                item.id = 1
                id = item.objectID
            }
            #expect(ctx.registeredObject(for: id!) != nil)
            #expect(ctx.insertedObjects.count == 1)
            try ctx.save()
            #expect(ctx.registeredObjectCount == 0)
        }
    }

    // Semantics §4: an object that outlives its context no longer points at it (the pointer is unowned and the
    // context clears it when it goes away).
    @Test func objectOutlivingItsContextHasNoContext_4() throws {
        let stack = try TestStack()
        var ctx: ManagedObjectContext? = stack.context()
        let item: Item = try ctx!.performAndWait {
            let item = Item(context: ctx!)
            item.id = 7
            try ctx!.save()
            return item
        }
        #expect(item.managedObjectContext === ctx)
        ctx = nil
        #expect(item.managedObjectContext == nil)
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
}
