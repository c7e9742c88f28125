import Foundation
import Synchronization
import Testing
@testable import ObjectGraph

// Custom merge policies (policies users can subclass or
// compose through resolve(mergeConflicts:) / resolve(constraintConflicts:); semantics §1.3 order; "Bad input":
// conflicts are never silent). Helpers are prefixed `cp`.

/// Records what the save hands to the policy, then lets the built-in behaviour of `type` do the work.
final class CPRecordingPolicy: MergePolicy, @unchecked Sendable {
    let calls = Mutex<[String]>([])

    override func resolve(optimisticLockingConflicts conflicts: [MergeConflict]) throws {
        calls.withLock { $0.append("locking:\(conflicts.count)") }
        try super.resolve(optimisticLockingConflicts: conflicts)
    }

    override func resolve(constraintConflicts conflicts: [ConstraintConflict]) throws {
        calls.withLock { $0.append("constraint:\(conflicts.count)") }
        try super.resolve(constraintConflicts: conflicts)
    }
}

/// A composed policy: for each locking conflict the larger price wins (an app rule), the rest is ObjectTrump.
final class CPMaxPricePolicy: MergePolicy, @unchecked Sendable {
    init() { super.init(type: .mergeByPropertyObjectTrump) }

    override func resolve(optimisticLockingConflicts conflicts: [MergeConflict]) throws {
        for conflict in conflicts {
            guard let item = conflict.sourceObject as? Item, let external = conflict.cachedSnapshot?["price"] as? Double else { continue }
            if external > item.price { item.price = external }
        }
        try super.resolve(optimisticLockingConflicts: conflicts)
    }
}

@Suite struct CustomMergePolicyTests {

    // Semantics §1.3: a subclass sees locking conflicts first, then uniqueness conflicts, and super resolves them
    // (here as ObjectTrump: ctx2's name wins, and the duplicate insert upserts onto the stored row).
    @Test func subclassSeesLockingThenConstraintConflicts_1_3() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let policy = CPRecordingPolicy(type: .mergeByPropertyObjectTrump)
        let s = try MGPair(stack, id: ids[0], policy: policy)
        try s.ctx1.performAndWait {
            s.item1.name = "ctx1"
            try s.ctx1.save()
        }
        let error = s.ctx2.performAndWait { () -> ObjectGraphError? in
            s.item2.name = "ctx2"
            let duplicate = Item(context: s.ctx2)
            duplicate.id = 2  // item 2 is stored
            duplicate.name = "upserted"
            return mgTrySave(s.ctx2)
        }
        #expect(error == nil)
        #expect(policy.calls.withLock { $0 } == ["locking:1", "constraint:1"])
        #expect(try mgRows(stack, id: 1).map { $0.name } == ["ctx2"])
        #expect(try mgRows(stack, id: 2).map { $0.name } == ["upserted"])
        #expect(try mgRows(stack, id: 2).map { $0.pk } == [ids[1].primaryKey!])
    }

    // Composed policies: an app rule runs before the built-in one. ctx1 raised the price to 50,
    // ctx2 set 30 and a name; the larger price and ctx2's name are saved.
    @Test func composedPolicyAppliesAnAppRule_1_4() throws {
        let stack = try TestStack()
        let id = try stack.seed(1)[0]
        let s = try MGPair(stack, id: id, policy: CPMaxPricePolicy())
        try s.ctx1.performAndWait {
            s.item1.price = 50
            try s.ctx1.save()
        }
        let error = s.ctx2.performAndWait { () -> ObjectGraphError? in
            s.item2.price = 30
            s.item2.name = "ctx2"
            return mgTrySave(s.ctx2)
        }
        #expect(error == nil)
        #expect(try mgRows(stack, id: 1).map { $0.price } == [50])
        #expect(try mgRows(stack, id: 1).map { $0.name } == ["ctx2"])
        s.ctx2.performAndWait {
            #expect(s.item2.price == 50)
            #expect(!s.ctx2.hasChanges)
        }
    }

    // Issue "Bad input" (conflicts are never silent under .error: the error lists every conflict with object,
    // property and versions), semantics §1.2 and §1.6 (conflictingSnapshots: NSNull for unchanged objects).
    @Test func errorDescriptionListsEveryConflict_1_2() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let ctx1 = stack.context(name: "ctx1")
        let ctx2 = stack.context(name: "ctx2")
        let a1: Item = try mgLoad(ctx1, ids[0])
        let b1: Item = try mgLoad(ctx1, ids[1])
        let a2: Item = try mgLoad(ctx2, ids[0])
        let b2: Item = try mgLoad(ctx2, ids[1])
        try ctx1.performAndWait {
            a1.name = "ctx1 a"
            b1.price = 99
            try ctx1.save()
        }
        let error = try #require(ctx2.performAndWait { () -> ObjectGraphError? in
            a2.price = 1
            b2.name = "ctx2 b"
            return mgTrySave(ctx2)
        })
        #expect(error.code == .merge)
        #expect(error.conflictList.count == 2)
        let text = ctx2.performAndWait { String(describing: error) }
        for id in [ids[0], ids[1]] { #expect(text.contains(id.description)) }
        #expect(text.contains("version 1 → 2"))
        #expect(text.contains("changed elsewhere: [\"name\"], changed here: [\"price\"]"))
        #expect(text.contains("changed elsewhere: [\"price\"], changed here: [\"name\"]"))

        // Constraint conflict against the database: snapshots of the conflicting objects (inserted → values).
        let ctx3 = stack.context(name: "ctx3")
        let constraint = try #require(ctx3.performAndWait { () -> ObjectGraphError? in
            let dup = Item(context: ctx3)
            dup.id = 2
            dup.name = "dup"
            return mgTrySave(ctx3)
        })
        #expect(constraint.code == .constraintMerge)
        let conflict = try #require(constraint.constraintConflictList.first)
        ctx3.performAndWait {
            #expect(conflict.conflictingSnapshots.count == 1)
            #expect((conflict.conflictingSnapshots.first as? [String: Any])?["name"] as? String == "dup")
            #expect(String(describing: constraint).contains("constraint conflict on [\"id\"]"))
        }
    }
}
