import Foundation
import Testing
@testable import ObjectGraph

/// Two coordinators on one SQLite file (semantics §2.3, §2.4): each sees
/// the other's committed rows after a refresh past staleness).
@Suite struct TwoCoordinatorTests {

    // Semantics §2.4 (each coordinator has its own row cache; writes from A are invisible to B's cache) and §2.3
    // (refresh reads the row cache unless it is stale; infinite staleness by default): A and B each update one
    // row and insert one. Fetches run SQL, so each sees the other's new row at once; loaded objects keep the old
    // values through refresh and refreshAllObjects until stalenessInterval = 0, then show the other's values.
    // (The fetch comes last: a refetch also refreshes the row cache, semantics §6.)
    @Test func eachSeesTheOthersCommittedRowsAfterRefreshPastStaleness_2_4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let coordinatorB = try stack.secondCoordinator()
        let a = stack.context(name: "A")
        let b = stack.context(coordinatorB, name: "B")
        let a1: Item = try mgLoad(a, ids[0])
        let a2: Item = try mgLoad(a, ids[1])
        let b1: Item = try mgLoad(b, ids[0])
        let b2: Item = try mgLoad(b, ids[1])
        try a.performAndWait {
            a1.name = "from A"
            let item = Item(context: a)
            item.id = 3
            item.name = "inserted by A"
            try a.save()
        }
        try b.performAndWait {
            b2.name = "from B"
            let item = Item(context: b)
            item.id = 4
            item.name = "inserted by B"
            try b.save()
        }
        for (ctx, theirs, theirName, mine, myName) in [(a, a2, "from B", a1, "from A"), (b, b1, "from A", b2, "from B")] {
            try ctx.performAndWait {
                // The other's update: the row cache is stale, refresh keeps the old value…
                ctx.refresh(theirs, mergeChanges: false)
                #expect(theirs.name == "item \(theirs.id)")
                ctx.refreshAllObjects()
                #expect(theirs.name == "item \(theirs.id)")
                // … until staleness lets the fault go past the cache.
                ctx.stalenessInterval = 0
                ctx.refresh(theirs, mergeChanges: false)
                #expect(theirs.name == theirName)
                #expect(mine.name == myName)
                // New rows: a fetch reads SQL and sees both inserts.
                #expect(ctxIDs(try fetchItems(ctx)) == [1, 2, 3, 4])
                let inserted = try fetchItems(ctx, .compare("id", .greaterThan, 2))
                #expect(inserted.map { $0.name } == ["inserted by A", "inserted by B"])
            }
        }
        // After the refresh past staleness each context's snapshot is current: a further edit saves with no conflict.
        try a.performAndWait {
            a2.price = 1
            try a.save()
        }
        try b.performAndWait {
            b1.price = 2
            try b.save()
        }
        #expect(try mgRows(stack, id: 1).map { $0.name } == ["from A"])
        #expect(try mgRows(stack, id: 1).map { $0.price } == [2])
        #expect(try mgRows(stack, id: 2).map { $0.name } == ["from B"])
        #expect(try mgRows(stack, id: 2).map { $0.price } == [1])
    }

    // Semantics §2.3 (a finite interval): a cache entry younger than the interval is used, an older one is not.
    // Deterministic: the interval is huge, then tiny, and the entry is checked against each.
    @Test func finiteStalenessIntervalUsesOnlyYoungEntries_2_3() throws {
        let stack = try TestStack()
        let id = try stack.seed(1)[0]
        let a = stack.context(name: "A")
        let b = stack.context(try stack.secondCoordinator(), name: "B")
        let itemA: Item = try mgLoad(a, id)
        let itemB: Item = try mgLoad(b, id)
        try a.performAndWait {
            itemA.name = "from A"
            try a.save()
        }
        b.performAndWait {
            b.stalenessInterval = 3_600  // the entry was made well within the hour
            b.refresh(itemB, mergeChanges: false)
            #expect(itemB.name == "item 1")
            b.stalenessInterval = 1e-9  // and is older than a nanosecond by now
            b.refresh(itemB, mergeChanges: false)
            #expect(itemB.name == "from A")
        }
    }

    // Semantics §2.4 + §4 (shouldDeleteInaccessibleFaults): a row deleted through A is seen by B after a refresh
    // past staleness: the fault reads as deleted.
    @Test func deleteThroughOtherCoordinatorSeenAfterRefreshPastStaleness_2_4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let a = stack.context(name: "A")
        let b = stack.context(try stack.secondCoordinator(), name: "B")
        let itemA: Item = try mgLoad(a, ids[0])
        let itemB: Item = try mgLoad(b, ids[0])
        try a.performAndWait {
            a.delete(itemA)
            try a.save()
        }
        try b.performAndWait { () throws in
            b.refresh(itemB, mergeChanges: false)
            #expect(itemB.name == "item 1")  // B's cache still has the row
            b.stalenessInterval = 0
            b.refresh(itemB, mergeChanges: false)
            #expect(itemB.name == nil)
            #expect(itemB.isDeleted)
            #expect(ctxIDs(try fetchItems(b)) == [2])
        }
    }
}
