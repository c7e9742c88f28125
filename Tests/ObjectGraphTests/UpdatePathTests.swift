import Foundation
import Testing
@testable import ObjectGraph

/// Behaviour kept by the fixes to the update path (Benchmarks/LOG.md, fourth round): the typed read, the stored
/// form of a typed value, the uniqueness check that skips groups with no new constrained value, the registry
/// sweep in one pass and the store deciding and running a fetch in one step.
@Suite struct UpdatePathTests {
    // Semantics §4: the typed read is `value(forKey:)` without boxing: it fires the fault as a read does, and
    // converts as a `@Managed` property of that type would.
    @Test func typedReadFiresTheFaultAndConverts_4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = try #require(ctx.object(with: ids[2]) as? Item)
            #expect(item.isFault)
            let before = ctx.counters.faultsFired
            #expect(item.value(forKey: "id", as: Int64.self) == 3)
            #expect(!item.isFault)
            #expect(ctx.counters.faultsFired == before + 1)
            #expect(item.value(forKey: "id", as: Int.self) == 3)
            #expect(item.value(forKey: "name", as: String?.self) == "item 3")
            #expect(item.value(forKey: "name", as: String.self) == "item 3")
            #expect(item.value(forKey: "price", as: Double.self) == 30)
            #expect(item.value(forKey: "added", as: Date?.self) == nil)
            #expect(item.value(forKey: "tag", as: Tag?.self) == nil)
            // Every form agrees with the boxed read.
            #expect(item.value(forKey: "id", as: Int64.self) == item.value(forKey: "id") as? Int64)
        }
    }

    @Test func storedFormOfATypedValueMatchesTheBoxedOne() {
        let date = Date(timeIntervalSinceReferenceDate: 12.5)
        #expect(PropertyValue(attribute: Int64(7)) == PropertyValue(any: Int64(7).attributeValue))
        #expect(PropertyValue(attribute: 7) == .integer(7))
        #expect(PropertyValue(attribute: "seven") == .string("seven"))
        #expect(PropertyValue(attribute: Optional("seven")) == .string("seven"))
        #expect(PropertyValue(attribute: String?.none) == .null)
        #expect(PropertyValue(attribute: 7.5) == .double(7.5))
        #expect(PropertyValue(attribute: date) == .date(date))
        #expect(PropertyValue(attribute: true) == .bool(true))
        #expect(PropertyValue(attribute: Int32(7)) == PropertyValue(any: Int32(7).attributeValue))  // the boxed way
    }

    // Semantics §1.6: objects whose constrained values are all as committed cannot collide with one another, so
    // a save that updates other attributes of many unique objects has nothing to check at context level...
    @Test func updatesThatKeepTheirUniqueIDsSaveWithoutConflict_1_6() throws {
        let stack = try TestStack()
        try stack.seed(5)
        let ctx = stack.context()
        try ctx.performAndWait {
            let items = try fetchItems(ctx)
            for item in items { item.name = "renamed \(item.id)" }
            try ctx.save()
        }
        let rows = try stack.sql("SELECT ZNAME FROM ZITEM ORDER BY ZID")
        #expect(rows.map { $0[0] } == (1...5).map { SQLiteValue.text("renamed \($0)") })
    }

    // ...while an update that moves one object onto another's unchanged value is still a conflict inside the save.
    @Test func anUpdateOntoAnUnchangedUniqueIDIsStillAConflict_1_6() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let ctx = stack.context()
        let error: ObjectGraphError? = try ctx.performAndWait {
            let items = try fetchItems(ctx).sorted { $0.id < $1.id }
            items[0].name = "kept id"  // updated, id unchanged
            items[1].id = 1  // moves onto the first one's id
            do { try ctx.save(); return nil } catch let error as ObjectGraphError { return error }
        }
        #expect(error?.code == .constraintMerge)
        let conflict = try #require(error?.constraintConflictList.first)
        #expect(conflict.constraint == ["id"])
        #expect(conflict.constraintValues["id"] as? Int64 == 1)
        #expect(conflict.conflictingObjects.count == 2)
        #expect(try stack.sql("SELECT ZID FROM ZITEM ORDER BY ZID").map { $0[0].int64 } == [1, 2])
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

    // The store translates a predicate once to decide and run (`fetchEntriesIfEvaluable`, `countIfEvaluable`): nil exactly
    // when it cannot evaluate the fetch, else the rows `fetch` gives; the coordinator then filters in memory, with
    // the same result.
    @Test func storeDecidesAndRunsAFetchInOneStep() throws {
        let stack = try TestStack()
        try stack.seed(4)
        let item = try #require(stack.model.entity(named: "Item"))
        var untranslated = 0
        for format in ["id IN {2, 4}", "ANY tag.name == 'x' OR id < 3", "labels.@count == 0 AND id < 3", "name BEGINSWITH 'item'"] {
            let p = try ObjectPredicate(format: format)
            let fetch = StoreFetch(entity: item, predicate: p, sortDescriptors: [], limit: 0, offset: 0, idsOnly: false)
            let (evaluable, oneStep, plain) = try stack.coordinator.withStore { store in
                (store.canEvaluate(fetch), try store.fetchEntriesIfEvaluable(fetch), store.canEvaluate(fetch) ? try store.fetch(fetch) : nil)
            }
            #expect((oneStep == nil) == !evaluable, "\(format)")
            #expect(oneStep?.map { $0.id.primaryKey! } == plain?.map(\.key), "\(format)")
            if !evaluable { untranslated += 1 }
            let ctx = stack.context()
            let viaContext = try ctx.performAndWait { Set(try fetchItems(ctx, p).map(\.id)) }
            let inMemory = try ctx.performAndWait { Set(try fetchItems(ctx).filter { try p.evaluate(with: $0) }.map(\.id)) }
            #expect(viaContext == inMemory, "\(format)")
            // The count takes the same step: counted by SQL when translatable, else by the coordinator.
            #expect(try ctx.performAndWait { try ctx.count(for: FetchRequest(entityName: "Item", predicate: p)) } == inMemory.count, "\(format)")
        }
        #expect(untranslated > 0)  // the fallback was exercised
    }
    // Semantics §4: the pending inverse changes of an unloaded to-many are laid on it in order when it loads, so
    // only the last change of each member counts (moved away, back, away again: away).
    @Test func pendingInverseChangesKeepTheLastChangePerMember_4() throws {
        let stack = try TestStack()
        let seed = stack.context()
        try seed.performAndWait {
            let a = Tag(context: seed)
            a.name = "a"
            let b = Tag(context: seed)
            b.name = "b"
            for i in 1...3 {
                let item = Item(context: seed)
                item.id = Int64(i)
                item.tag = a
            }
            try seed.save()
        }
        let ctx = stack.context()
        try ctx.performAndWait {
            let tags = try ctx.fetch(FetchRequest(entityName: "Tag", sortDescriptors: [ObjectSortDescriptor("name")])).compactMap { $0 as? Tag }
            let (a, b) = (tags[0], tags[1])
            let items = try fetchItems(ctx)
            let before = ctx.counters.relationshipFaultsFired
            items[0].tag = b
            items[0].tag = a
            items[0].tag = b       // 1: away from a, to b
            items[1].tag = b
            items[1].tag = a       // 2: back in a
            let fresh = Item(context: ctx)
            fresh.id = 4
            fresh.tag = b
            fresh.tag = a          // 4: new, in a
            #expect(ctx.counters.relationshipFaultsFired == before)  // both to-manys stayed faults
            #expect(Set(a.items.map(\.id)) == [2, 3, 4])
            #expect(Set(b.items.map(\.id)) == [1])
        }
    }

    // Semantics §4 and §2.1: an insert given its permanent ID before the save (obtainPermanentIDs) is found under
    // that ID in a to-many that was still a fault when the insert joined it.
    @Test func pendingInverseChangesFollowPermanentIDs_4() throws {
        let stack = try TestStack()
        let seed = stack.context()
        try seed.performAndWait {
            let tag = Tag(context: seed)
            tag.name = "t"
            try seed.save()
        }
        let ctx = stack.context()
        try ctx.performAndWait {
            let tag = try #require(try ctx.fetch(FetchRequest(entityName: "Tag")).first as? Tag)
            let item = Item(context: ctx)
            item.id = 9
            item.tag = tag
            try ctx.obtainPermanentIDs(for: [item])
            #expect(!item.objectID.isTemporaryID)
            let members = tag.items
            #expect(members.count == 1)
            #expect(members.first === item)
            try ctx.save()
        }
    }
}
