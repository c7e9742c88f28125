import Foundation
import Testing
@testable import ObjectGraph

/// What marking objects deleted counts (``CostedOperation/objectDeleted``): one per object a context marks deleted
/// itself, by `delete(_:)` or by a cascade delete rule when it processes its pending changes; a child's deletes
/// reaching its parent and a merge's deletes are priced as the push and the merge. Exact counts, in a counting
/// thread.
@Suite struct DeleteCostTests {
    /// What `body` counted of `ops` on the calling thread.
    static func counting<T>(_ ops: [CostedOperation] = [.objectDeleted], _ body: () throws -> T) rethrows -> (T, [Int]) {
        let thread = ExecutionThread.countingOnly()
        ExecutionThread.install(thread)
        defer { ExecutionThread.install(nil) }
        let result = try body()
        return (result, ops.map { thread.counts[$0.rawValue] })
    }

    // Docs/coredata-behaviour.md §2.1: delete(_:) marks the object deleted (its rules run later); deleting an object
    // already deleted changes nothing.
    @Test("A delete counts one object deleted; deleting the same object again counts none (§2.1)")
    func deleteCountsOnceAndARepeatedDeleteNothing() throws {
        let stack = try TestStack()
        let ids = try stack.seed(3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = try ctx.existingObject(with: ids[0])
            let (_, first) = Self.counting { ctx.delete(item) }
            #expect(first == [1])
            let (_, again) = Self.counting { ctx.delete(item) }
            #expect(again == [0])
            let (_, processed) = Self.counting { ctx.processPendingChanges() }
            #expect(processed == [0], "no delete rule deletes anything more")
            #expect(ctx.deletedObjects.count == 1)
        }
    }

    // Docs/coredata-behaviour.md §2.1 step 1: a cascade rule deletes the destinations when the context processes its
    // pending changes; each is an object the context marks deleted.
    @Test("A cascade counts the deleted object, then each object its delete rule deletes when changes are processed (§2.1)")
    func cascadeCountsTheObjectAndEachCascadedOne() throws {
        let stack = try TestStack(model: makeModel(tagItemsDeleteRule: .cascade))
        let seeded = try ctxSeedTagged(stack, tagNames: ["red", "blue"], itemsPerTag: 3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let red = try ctx.existingObject(with: seeded.tags[0])
            let (_, deleted) = Self.counting { ctx.delete(red) }
            #expect(deleted == [1])
            let (_, processed) = Self.counting { ctx.processPendingChanges() }
            #expect(processed == [3])
            #expect(ctx.deletedObjects.count == 4)
            let (_, saved) = try Self.counting { try ctx.save() }
            #expect(saved == [0], "the save deletes rows, it marks no object")
        }
    }

    // Docs/coredata-behaviour.md §2.2: a child's save copies its deletes into the parent (a push, not a delete of
    // the parent's own); the child's cascade ran in the child, so the parent's delete rules find nothing more.
    @Test("A child's deletes count in the child only: its save pushes them into the parent as objects pushed (§2.2)")
    func childDeletesCountInTheChildOnly() throws {
        let stack = try TestStack(model: makeModel(tagItemsDeleteRule: .cascade))
        let seeded = try ctxSeedTagged(stack, tagNames: ["red", "blue"], itemsPerTag: 3)
        let parent = stack.context(name: "parent")
        let child = stack.child(of: parent)
        try child.performAndWait {
            let red = try child.existingObject(with: seeded.tags[0])
            let (_, deleted) = Self.counting { child.delete(red) }
            #expect(deleted == [1])
            let (_, saved) = try Self.counting([.objectDeleted, .objectPushed]) { try child.save() }
            #expect(saved == [3, 4], "the child's cascade (3), none in the parent; the tag and its 3 items pushed")
        }
        try parent.performAndWait {
            #expect(parent.deletedObjects.count == 4)
            let (_, saved) = try Self.counting { try parent.save() }
            #expect(saved == [0])
        }
    }

    // Docs/coredata-behaviour.md §3.1: a merged delete of a registered object is the merge's work (priced as the
    // merge), not a delete the receiving context makes.
    @Test("A merge's deletes of registered objects count no object deleted in the receiver (§3.1)")
    func mergedDeletesCountNothing() throws {
        let stack = try TestStack()
        let ids = try stack.seed(4)
        let receiver = stack.context(name: "receiver")
        let loaded = try receiver.performAndWait { try fetchItems(receiver) }
        let saver = stack.context(name: "saver")
        let saved = NotificationRecorder(ManagedObjectContext.didSaveNotification, object: saver)
        try saver.performAndWait {
            for id in ids.prefix(2) { saver.delete(try saver.existingObject(with: id)) }
            try saver.save()
        }
        let note = try #require(saved.notes.first)
        let (_, merged) = Self.counting { receiver.performAndWait { receiver.mergeChanges(fromContextDidSave: note) } }
        #expect(merged == [0])
        #expect(loaded.prefix(2).allSatisfy { $0.isDeleted })
    }

    // Docs/coredata-behaviour.md §2.1: rollback() discards a delete; the marking (and its undo bookkeeping) was done.
    @Test("A delete then a rollback still counts the delete, and the object is not deleted after it (§2.1)")
    func rollbackKeepsTheDeleteCounted() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = try ctx.existingObject(with: ids[0])
            let (_, counted) = Self.counting {
                ctx.delete(item)
                ctx.rollback()
            }
            #expect(counted == [1])
            #expect(!item.isDeleted)
            #expect(ctx.deletedObjects.isEmpty)
        }
    }
}
