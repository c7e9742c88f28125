import Foundation
import Testing
@testable import ObjectGraph

/// The context's registry (semantics §2.1): one object per ID, held without keeping it alive, through unowned
/// references instead of Swift `weak` ones (Benchmarks/LOG.md).
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

    // Semantics §2.1 (uniquing): the sweep of freed registry entries keeps every live object, so asking for its ID
    // again gives the same instance; freed entries leave.
    @Test func registrySweepKeepsLiveObjects_2_1() throws {
        let stack = try TestStack()
        let ids = try stack.seed(ObjectRegistry.minimumSweepThreshold + 500)
        let ctx = stack.context()
        try ctx.performAndWait {
            var kept: [ManagedObject] = []
            do {
                let all = try ctx.fetch(FetchRequest(entityName: "Item"))
                kept = stride(from: 0, to: all.count, by: 97).map { all[$0] }
            }
            // The fetch registered more than the threshold: most entries are freed now, and the next
            // registrations sweep them.
            #expect(ctx.registeredObjectCount == kept.count)
            for object in kept { #expect(ctx.object(with: object.objectID) === object) }
            for id in ids.prefix(10) { _ = ctx.object(with: id) }
            for object in kept { #expect(ctx.registeredObject(for: object.objectID) === object) }
        }
    }
}

/// An object that reports, from its deinit, what its context's registry answers for it then.
final class RuntimeProbe: ManagedObject {
    nonisolated(unsafe) static var duringDeinit: ((ManagedObjectID) -> Void)?
    deinit { Self.duringDeinit?(objectID) }
}

/// Rule 0: the registry keeps Swift's runtime shim (`CObjectRuntime`: `swift_tryRetain`,
/// `swift_unownedRetain`/`Release`, `swift_isDeallocating`), because plain `weak` references cost 12–34 % more
/// instructions (Docs/core-data-rules.md). No public Swift API promises what the shim relies on; these checks fail
/// loudly if a Swift release changes it.
@Suite struct RuntimeContractTests {
    private func probeModel() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(name: "Probe", managedObjectClass: RuntimeProbe.self,
                              attributes: [AttributeDescription(name: "n", type: .integer64, isOptional: false, defaultValue: .integer(0))]),
        ])
    }

    // Semantics §2.1 step 8, uniquing: an object whose deinitialization has begun is never handed
    // out (swift_tryRetain fails once the strong count reached zero), its entry stays readable while its memory is
    // held by the unowned count, and the sweep drops it.
    @Test("The runtime behaviour the registry's shim relies on still holds")
    func runtimeContractHolds_rule0() throws {
        let stack = try TestStack(model: try probeModel())
        let ctx = stack.context()
        try ctx.performAndWait {
            var seenDuringDeinit: [Bool] = []
            var deallocatingDuringDeinit: [Bool] = []
            RuntimeProbe.duringDeinit = { id in
                seenDuringDeinit.append(ctx.registeredObject(for: id) != nil)
                deallocatingDuringDeinit.append(ctx.registry.count == 1 && ctx.registry.liveObjects().isEmpty)
            }
            defer { RuntimeProbe.duringDeinit = nil }
            var id: ManagedObjectID?
            do {
                let probe = try ctx.insertNewObject(forEntityName: "Probe")
                try ctx.save()
                id = probe.objectID
                #expect(ctx.registeredObject(for: probe.objectID) === probe)  // tryRetain succeeds while alive
                #expect(ctx.registry.liveObjects().count == 1)
            }
            #expect(seenDuringDeinit == [false], "swift_tryRetain handed out an object being deinitialized")
            #expect(deallocatingDuringDeinit == [true], "swift_isDeallocating did not see the deinitialization")
            #expect(ctx.registry.count <= 1)  // the entry (if not swept yet) keeps the memory, not the object
            #expect(ctx.registeredObject(for: id!) == nil)
            #expect(ctx.registeredObjectCount == 0)
            #expect(ctx.registry.count == 0)
        }
    }
}

/// Rules 1 and 2: how long objects live (semantics §2.1 step 8, §3.2, §4). A materialized object holds
/// its relationships' objects strongly, as Core Data's do; the registry itself holds nothing.
@Suite struct ObjectLifetimeTests {
    /// An item and its tag, saved (the cycle item → tag → items → item).
    private func seedPair(_ stack: TestStack) throws -> (item: ManagedObjectID, tag: ManagedObjectID) {
        let ctx = stack.context()
        return try ctx.performAndWait {
            let item = Item(context: ctx)
            item.id = 1
            let tag = Tag(context: ctx)
            tag.name = "t"
            item.tag = tag
            try ctx.save()
            return (item.objectID, tag.objectID)
        }
    }

    // Semantics §4, §3.2: setting a to-one holds its object, and an inserted object's loaded
    // to-many holds the objects added to it (the inverse of that set), before and after the save.
    @Test("Relationships hold their targets strongly (§4)")
    func relationshipsHoldTheirTargets_rule1() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            weak var weakTag: Tag?
            weak var weakMember: Item?
            let item = Item(context: ctx)
            item.id = 1
            let tag = Tag(context: ctx)
            do {
                let newTag = Tag(context: ctx)
                newTag.name = "held by the item"
                item.tag = newTag
                weakTag = newTag
                let member = Item(context: ctx)
                member.id = 2
                member.tag = tag
                weakMember = member
            }
            try ctx.save()
            // Saved: the context holds nothing now; the item holds its tag, the tag its member.
            #expect(weakTag != nil)
            #expect(weakMember != nil)
            #expect(ctx.registeredObject(for: weakTag!.objectID) === weakTag)
            #expect(tag.items.map(\.id) == [2])
            // Changing the relationship lets the old target go (once saved: until then it has changes, the
            // inverse side, and the context holds it).
            item.tag = nil
            try ctx.save()
            #expect(weakTag == nil)
            withExtendedLifetime((item, tag)) {}
        }
    }

    // Semantics §2.1 step 8, §4: objects kept alive only by a relationship cycle stay
    // registered after the save until refreshed; an object nobody references leaves the registry after the save.
    @Test("A relationship cycle stays registered after a save, until refreshed (§2.1, §3.2)")
    func cycleStaysRegisteredUntilRefreshed_rule1() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            var ids: (item: ManagedObjectID, tag: ManagedObjectID, lone: ManagedObjectID)
            do {
                let item = Item(context: ctx)
                item.id = 1
                let tag = Tag(context: ctx)
                tag.name = "t"
                item.tag = tag
                let lone = Item(context: ctx)
                lone.id = 2
                try ctx.save()
                ids = (item.objectID, tag.objectID, lone.objectID)
            }
            #expect(ctx.registeredObject(for: ids.lone) == nil)
            let item = try #require(ctx.registeredObject(for: ids.item) as? Item)
            #expect(ctx.registeredObject(for: ids.tag) != nil)
            #expect(ctx.registeredObjectCount == 2)
            #expect(!item.isFault)
            // Refreshing one side breaks the cycle: both go once the app lets go.
            weak let weakItem = item
            ctx.refresh(item, mergeChanges: false)
            #expect(ctx.registeredObject(for: ids.tag) == nil)
            _ = consume item
            #expect(weakItem == nil)
            #expect(ctx.registeredObjectCount == 0)
        }
    }

    // Semantics §4: refreshAllObjects() and reset() break cycles as refresh does.
    @Test("refreshAllObjects and reset release a cycle (§4)")
    func refreshAllAndResetReleaseCycles_rule1() throws {
        let stack = try TestStack()
        let ids = try seedPair(stack)
        let ctx = stack.context()
        for release in [{ (c: ManagedObjectContext) in c.refreshAllObjects() }, { (c: ManagedObjectContext) in c.reset() }] {
            try ctx.performAndWait {
                do {
                    let item = try #require(ctx.existingObject(with: ids.item) as? Item)
                    #expect(item.tag?.items.count == 1)  // both sides read: the cycle is made
                }
                #expect(ctx.registeredObject(for: ids.item) != nil)
                #expect(ctx.registeredObject(for: ids.tag) != nil)
                release(ctx)
                #expect(ctx.registeredObjectCount == 0)
            }
        }
    }

    // Semantics §4: filling a fault keeps the objects it already held through a relationship it
    // read while still a fault (a to-many is a relationship fault of its own).
    @Test("Filling a fault does not forget its relationship targets (§4)")
    func fillingAFaultKeepsHeldTargets_rule1() throws {
        let stack = try TestStack()
        let ids = try seedPair(stack)
        let ctx = stack.context()
        ctx.performAndWait {
            let tag = ctx.object(with: ids.tag) as! Tag
            weak var member: Item?
            member = tag.items.first
            #expect(tag.isFault)  // reading a to-many does not fire the object's own fault
            #expect(member != nil)
            #expect(tag.name == "t")  // fires the fault
            #expect(!tag.isFault)
            #expect(member != nil)
            #expect(ctx.registeredObject(for: ids.item) === member)
        }
    }

    // Semantics §4, reset: a context that is deinitialized turns its objects into faults as
    // reset() does, which breaks their cycles; an object the app still holds has no context.
    @Test("A deinitialized context turns its objects into faults (§4)")
    func deinitializedContextFaultsItsObjects_rule1() throws {
        let stack = try TestStack()
        let ids = try seedPair(stack)
        var kept: Item?
        weak var weakTag: Tag?
        weak var weakContext: ManagedObjectContext?
        do {
            let ctx = stack.context()
            weakContext = ctx
            try ctx.performAndWait {
                let item = try #require(ctx.existingObject(with: ids.item) as? Item)
                weakTag = item.tag
                #expect(weakTag?.items.count == 1)
                kept = item
            }
        }
        #expect(weakContext == nil)
        let item = try #require(kept)
        #expect(item.isFault)
        #expect(item.managedObjectContext == nil)
        #expect(weakTag == nil)
    }

    // Semantics §2.2: a child save copies its graph into the parent: a cycle made in a child
    // and pushed up stays registered in the parent after the parent's own save, as it would have in the child.
    @Test("A cycle pushed into a parent stays registered after the parent's save (§2.2)")
    func pushedCycleStaysInParent_rule1() throws {
        let stack = try TestStack()
        let parent = stack.context(name: "parent")
        let child = stack.child(of: parent)
        try child.performAndWait {
            let item = Item(context: child)
            item.id = 1
            let tag = Tag(context: child)
            item.tag = tag
            let lone = Item(context: child)
            lone.id = 2
            try child.save()
        }
        try parent.performAndWait {
            try parent.save()
            #expect(parent.registeredObjectCount == 2)  // the item and its tag; the lone item went
            parent.refreshAllObjects()
            #expect(parent.registeredObjectCount == 0)
        }
    }

    // Semantics §4 reset, recorded on Apple: after reset() an object the caller holds is a fault
    // with no context and its transient values are gone; touching it fulfils it from the store, still without a
    // context.
    @Test("reset() orphans what it drops; touching it fulfils it from the store (§4)")
    func resetOrphansHeldObjects_rule2() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = try #require(ctx.existingObject(with: ids[1]) as? Item)
            try item.setValue("scratch value", forKey: "scratch")
            item.price = 999  // an unsaved change, dropped by the reset
            ctx.reset()
            #expect(item.isFault)
            #expect(item.managedObjectContext == nil)
            #expect(!item.hasChanges)
            #expect(item.value(forKey: "scratch") == nil)
            #expect(item.isFault)  // a transient read does not fire the fault
            let selects = stack.coordinator.counters.statements.select
            #expect(item.price == 20)  // fulfilled from the store
            #expect(!item.isFault)
            #expect(item.managedObjectContext == nil)
            #expect(item.name == "item 2")
            #expect(stack.coordinator.counters.statements.select - selects <= 1)
            #expect(ctx.registeredObject(for: ids[1]) == nil)
        }
    }

    // Raising instead is an option, off by default (`orphanedFaultsRaise`).
    @Test("An orphaned fault can be made to fail instead (option, off by default)")
    func orphanedFaultCanFail_rule2() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let ctx = stack.context()
        #expect(ctx.orphanedFaultsFailToFire == false)
        ctx.orphanedFaultsFailToFire = true
        try ctx.performAndWait {
            let item = try #require(ctx.existingObject(with: ids[0]) as? Item)
            ctx.reset()
            #expect(throws: ObjectGraphError.self) { try item.materialize() }
            #expect(item.isFault)
        }
    }

    // Semantics §4: an object that outlives its context does not point at it (the pointer is unowned and the
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
}
