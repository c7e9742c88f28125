import Foundation
import Testing
@testable import ObjectGraph

/// Inverse relationships (semantics §0, §4): setting a to-one keeps its inverse to-many exact, loaded or not;
/// changes pending on an unloaded to-many are laid on it, in order, when it loads.
@Suite struct InverseRelationshipTests {
    // Semantics §0 (inverse maintenance): setting many to-ones keeps the inverse to-many exact, marks its owner
    // updated, and removing one takes it out again.
    @Test func inverseToManyKeptExact_0() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let tag = Tag(context: ctx)
            tag.name = "t"
            try ctx.save()
            var items: [Item] = []
            for i in 1...50 {
                let item = Item(context: ctx)
                item.id = Int64(i)
                item.tag = tag
                items.append(item)
            }
            #expect(tag.items.count == 50)
            #expect(ctx.updatedObjects.contains(tag))
            items[0].tag = nil
            #expect(tag.items.count == 49)
            #expect(!tag.items.contains(items[0]))
            try ctx.save()
        }
        let check = stack.context()
        try check.performAndWait {
            let tag = try #require(try check.fetch(FetchRequest(entityName: "Tag")).first as? Tag)
            #expect(tag.items.count == 49)
        }
    }

    // Semantics §4: setting a to-one does not load the inverse to-many when it is a fault (Core Data keeps the
    // change pending); the owner still counts as updated, and loading the relationship later shows the change.
    @Test func inverseOfUnloadedToManyStaysAFault_4() throws {
        let stack = try TestStack()
        let seed = stack.context()
        try seed.performAndWait {
            let tag = Tag(context: seed)
            tag.name = "t"
            for i in 1...3 {
                let item = Item(context: seed)
                item.id = Int64(i)
                item.tag = tag
            }
            try seed.save()
        }
        let ctx = stack.context()
        try ctx.performAndWait {
            let tag = try #require(try ctx.fetch(FetchRequest(entityName: "Tag")).first as? Tag)
            let old = try #require(try ctx.fetch(FetchRequest(entityName: "Item", predicate: .compare("id", .equalTo, 1))).first as? Item)
            let before = ctx.counters.relationshipFaultsFired
            let fresh = Item(context: ctx)
            fresh.id = 4
            fresh.tag = tag
            old.tag = nil
            #expect(ctx.counters.relationshipFaultsFired == before)  // the to-many stayed a fault
            #expect(ctx.updatedObjects.contains(tag))
            #expect(Set(tag.items.map(\.id)) == [2, 3, 4])         // loading it lays the pending changes on top
            #expect(ctx.counters.relationshipFaultsFired == before + 1)
            let other = Item(context: ctx)
            other.id = 5
            other.tag = tag                                         // loaded now: changed in place
            try ctx.save()
        }
        let check = stack.context()
        try check.performAndWait {
            let tag = try #require(try check.fetch(FetchRequest(entityName: "Tag")).first as? Tag)
            #expect(Set(tag.items.map(\.id)) == [2, 3, 4, 5])
        }
        // Saved while still a fault: the foreign keys alone carry the change.
        let third = stack.context()
        try third.performAndWait {
            let tag = try #require(try third.fetch(FetchRequest(entityName: "Tag")).first as? Tag)
            let item = Item(context: third)
            item.id = 6
            item.tag = tag
            try third.save()
            #expect(!tag.hasChanges)
            #expect(Set(tag.items.map(\.id)) == [2, 3, 4, 5, 6])
        }
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
