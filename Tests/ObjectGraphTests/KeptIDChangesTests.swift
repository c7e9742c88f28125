import Foundation
import Testing
@testable import ObjectGraph

/// What a context keeps after its saves (semantics §2.1 step 7, §2.2): a saved object nothing holds leaves the
/// registry, in a parent as anywhere; a context that serves children keeps one temporary-to-permanent ID change per
/// object that took a permanent ID in it, until `reset()` (Core Data's `_changeIDsForManagedObjects:toIDs:`).
@Suite struct KeptIDChangesTests {
    /// Inserts `count` items in `context` and saves it.
    static func importChunk(_ context: ManagedObjectContext, first: Int, count: Int) throws -> [ManagedObjectID] {
        try context.performAndWait {
            let items = (first..<first + count).map { i -> Item in
                let item = Item(context: context)
                item.id = Int64(i)
                item.name = "item \(i)"
                return item
            }
            try context.save()
            return items.map(\.objectID)
        }
    }

    // Semantics §2.2 (kept ID changes), §2.1 step 7: six chunks imported through a child, the parent saved after
    // each; the parent holds none of the objects, and one ID change per imported object until it is reset.
    @Test("A parent keeps an ID change per object imported through its child until reset, and none of the objects")
    func parentKeepsIDChangesUntilReset() throws {
        let stack = try TestStack()
        let parent = stack.context(name: "parent")
        let child = stack.child(of: parent)
        for chunk in 0..<6 {
            _ = try Self.importChunk(child, first: chunk * 50, count: 50)
            try parent.performAndWait { try parent.save() }
        }
        parent.performAndWait {
            #expect(parent.registeredObjectCount == 0)
            #expect(parent.keptIDChangeCount == 300)
            parent.reset()
            #expect(parent.keptIDChangeCount == 0)
        }
        // After the reset the next import's changes are kept again (the context still serves its child).
        _ = try Self.importChunk(child, first: 300, count: 50)
        try parent.performAndWait {
            try parent.save()
            #expect(parent.keptIDChangeCount == 50)
        }
        child.performAndWait { #expect(child.keptIDChangeCount == 0) }
    }

    // Semantics §2.2 (kept ID changes): a context on the coordinator that never served a child keeps no ID
    // changes, however many objects it saved.
    @Test("A sibling on the coordinator keeps no ID changes after its saves")
    func siblingKeepsNothing() throws {
        let stack = try TestStack()
        let sibling = stack.context(name: "sibling")
        for chunk in 0..<6 { _ = try Self.importChunk(sibling, first: chunk * 50, count: 50) }
        sibling.performAndWait {
            #expect(sibling.registeredObjectCount == 0)
            #expect(sibling.keptIDChangeCount == 0)
        }
    }

    // Semantics §2.2 (kept ID changes): a child's read by the temporary ID it pushed an object with, after the
    // parent saved it, is answered from the parent's saved object (Core Data looks the ID up in the kept map).
    @Test("A child's read by the temporary ID it pushed is answered after the parent saved the object")
    func childReadByTemporaryIDAfterParentSave() throws {
        let stack = try TestStack()
        let parent = stack.context(name: "parent")
        let child = stack.child(of: parent)
        let temporary = try Self.importChunk(child, first: 1, count: 1)[0]
        #expect(temporary.isTemporaryID)
        let row = try parent.performAndWait { () -> RowSnapshot? in
            try parent.save()
            return try parent.rowForChild(temporary)
        }
        let values = try #require(row).values
        #expect(values.contains(.string("item 1")))
    }
}
