import Foundation
import Testing
@testable import ObjectGraph

/// The context's registry (semantics §2.1): one object per ID, held without keeping it alive, through unowned
/// references instead of Swift `weak` ones (Benchmarks/README.md, fifth round).
@Suite struct RegistryTests {
    /// Whether Swift's runtime gave `object` a side table (what a weak reference does): the inline reference-count
    /// word then holds the side table's address with its two top bits set (64-bit layout of swift/RefCount.h).
    private static func hasSideTable(_ object: AnyObject) -> Bool {
        let word = Unmanaged.passUnretained(object).toOpaque().load(fromByteOffset: MemoryLayout<Int>.size, as: UInt64.self)
        return word >> 62 == 0b11
    }

    // Semantics §2.1 step 8: registering objects, fetched or inserted and saved, holds them without a weak
    // reference, so every retain and release of them stays on the runtime's fast path.
    @Test func registrationGivesNoSideTable_2_1() throws {
        let stack = try TestStack()
        _ = try stack.seed(5)
        let ctx = stack.context()
        try ctx.performAndWait {
            let fetched = try ctx.fetch(FetchRequest(entityName: "Item"))
            #expect(fetched.count == 5)
            for object in fetched { #expect(!Self.hasSideTable(object)) }
            let item = Item(context: ctx)
            item.id = 99
            try ctx.save()
            #expect(!Self.hasSideTable(item))
            #expect(ctx.registeredObject(for: item.objectID) === item)
            // A weak reference does give one: the probe reads the word it means to.
            weak let weakItem = item
            #expect(weakItem != nil)
            #expect(Self.hasSideTable(item))
        }
    }

    // Semantics §2.1 (uniquing) and step 8: a registered object that the app drops is freed; asking for its ID
    // then makes a new fault instead of returning the freed one, and the sweep removes the freed entries.
    @Test func droppedObjectIsFreedAndItsEntryGoes_2_1() throws {
        let stack = try TestStack()
        let ids = try stack.seed(3)
        let ctx = stack.context()
        ctx.performAndWait {
            weak var dropped: ManagedObject?
            do {
                let object = ctx.object(with: ids[0])
                dropped = object
                #expect(ctx.registeredObject(for: ids[0]) === object)
            }
            #expect(dropped == nil)
            #expect(ctx.registeredObject(for: ids[0]) == nil)
            let kept = ctx.object(with: ids[1])
            #expect(ctx.registeredObjectCount == 1)
            let again = ctx.object(with: ids[0])
            #expect(again.objectID == ids[0])
            #expect(ctx.registeredObject(for: ids[0]) === again)
            #expect(ctx.registeredObject(for: ids[1]) === kept)
            #expect(ctx.registeredObjectCount == 2)
        }
    }

    // Semantics §2.1 step 4: a temporary ID's entry moves to the permanent ID when the insert is saved, and the
    // saved object, dropped by the app, is freed (the context held it only while the insert was unsaved).
    @Test func savedInsertMovesToItsPermanentIDAndIsThenHeldByTheAppOnly_2_1() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            weak var saved: Item?
            var permanent: ManagedObjectID?
            do {
                let item = Item(context: ctx)
                item.id = 1
                let temporary = item.objectID
                try ctx.save()
                permanent = item.objectID
                #expect(!permanent!.isTemporaryID)
                #expect(ctx.registeredObject(for: temporary) == nil)
                #expect(ctx.registeredObject(for: permanent!) === item)
                saved = item
            }
            #expect(saved == nil)
            #expect(ctx.registeredObject(for: permanent!) == nil)
            #expect(ctx.registeredObjectCount == 0)
        }
    }

    // Semantics §3.1 (merged inserts are registered and reported, held only by observers) and §2.1 step 8: the
    // merged inserts no observer kept are freed as the merge returns, and their entries leave the registry then,
    // not at a later sweep (an entry keeps its freed object's memory).
    @Test func mergedInsertsNobodyKeptLeaveTheRegistry_3_1() throws {
        let stack = try TestStack()
        let receiver = stack.context(name: "receiver")
        let saver = stack.context(name: "saver")
        let saved = NotificationRecorder(ManagedObjectContext.didSaveObjectIDsNotification, object: saver)
        let ids = try stack.seed(40, in: saver)
        let note = try #require(saved.notes.first)
        receiver.performAndWait {
            let kept = receiver.object(with: ids[0])
            receiver.mergeChanges(fromContextDidSave: note)
            #expect(receiver.registry.count == 1)
            #expect(receiver.registeredObject(for: ids[0]) === kept)
            for id in ids.dropFirst() { #expect(receiver.registeredObject(for: id) == nil) }
        }
    }

    // Semantics §3.2 / §4: a loaded object holds the related objects read through it (a to-one's object, a
    // to-many's objects) strongly, so they outlive the app's references; changing the relationship or refreshing
    // the object lets them go.
    @Test func readRelationshipsAreHeldUntilChangedOrRefreshed_4() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = Item(context: ctx)
            item.id = 1
            let tag = Tag(context: ctx)
            tag.name = "t"
            item.tag = tag
            let other = Item(context: ctx)
            other.id = 2
            other.tag = tag
            try ctx.save()
        }
        try ctx.performAndWait {
            ctx.reset()
            let items = try ctx.fetch(FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")]), as: Item.self)
            weak var heldTag: Tag?
            heldTag = items[0].tag
            #expect(heldTag?.name == "t")  // held by items[0] alone
            ctx.refresh(items[0], mergeChanges: false)
            #expect(heldTag == nil)
            ctx.reset()
            let tag = try #require(try ctx.fetch(FetchRequest(entityName: "Tag"), as: Tag.self).first)
            weak var member: Item?
            member = tag.items.first
            #expect(member != nil)  // held by the tag alone
            ctx.refresh(tag, mergeChanges: false)
            #expect(member == nil)
        }
    }

    /// Objects handed to another thread (test only: objects are confined to their context's queue).
    private final class Handoff: @unchecked Sendable {
        var objects: [ManagedObject] = []
    }

    // Semantics §2.1 step 8 and §8: the app may release its last reference to an object on any thread. The
    // registry never hands out an object whose deinitialization has begun, and never touches freed memory: while
    // another thread drops the objects, the context keeps looking them up; each lookup gives the same live
    // instance or nothing (run under ThreadSanitizer by `make tsan`).
    @Test func objectsReleasedOnAnotherThreadWhileLookedUp_2_1() throws {
        let stack = try TestStack()
        let ids = try stack.seed(200)
        let ctx = stack.context()
        for _ in 0..<20 {
            let handoff = Handoff()
            try ctx.performAndWait {
                handoff.objects = try ctx.fetch(FetchRequest(entityName: "Item"))
                #expect(handoff.objects.count == ids.count)
            }
            let released = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                while !handoff.objects.isEmpty { handoff.objects.removeLast() }
                released.signal()
            }
            ctx.performAndWait {
                for _ in 0..<5 {
                    for id in ids {
                        if let object = ctx.registeredObject(for: id) { #expect(object.objectID == id) }
                    }
                }
            }
            released.wait()
            ctx.performAndWait {
                for id in ids { #expect(ctx.registeredObject(for: id) == nil) }
                #expect(ctx.registeredObjectCount == 0)
            }
        }
    }
}
