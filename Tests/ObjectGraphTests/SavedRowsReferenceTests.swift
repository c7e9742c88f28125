import Foundation
import Testing
@testable import ObjectGraph

// Semantics §2.3, §3.1 (Docs/core-data-rules.md, rule 23): the coordinator takes the did-save
// notification's reference on each row it writes in the lookup that caches the row, and the notification adopts
// them. The notification still holds exactly the rows it names: an object updated by a transient change alone is
// named but writes no row, and its row is held all the same; every reference goes with the notification.
@Suite struct SavedRowsReferenceTests {
    @Test("A did-save holds the rows of its inserts, its written updates and a transient-only update, and lets all go with it (§2.3, §3.1)")
    func savedRowsHoldEveryNamedRow_2_3() throws {
        let stack = try TestStack()
        let ids = try stack.seed(3)
        let baseline = stack.coordinator.counters.rowCacheEntries
        let editor = stack.context(name: "editor")
        var saves: NotificationRecorder? = NotificationRecorder(ManagedObjectContext.didSaveNotification, object: editor)
        try editor.performAndWait {
            let written = try #require(editor.existingObject(with: ids[0]) as? Item)
            written.price = 42
            let transientOnly = try #require(editor.existingObject(with: ids[1]) as? Item)
            try transientOnly.setValue("note", forKey: "scratch")  // updated, but no row to write (rule 3)
            let inserted = Item(context: editor)
            inserted.id = 100
            inserted.name = "new"
            let before = stack.coordinator.counters
            try editor.save()
            // One row written per insert and per persistent update: the transient-only update wrote none.
            #expect(stack.coordinator.counters.rowsUpdated - before.rowsUpdated == 1)
            #expect(stack.coordinator.counters.rowsInserted - before.rowsInserted == 1)
            editor.reset()  // the editor's objects let go of their rows; the notification still holds them
        }
        let changes = try #require(saves?.notes.first.flatMap(SavedRows.of)).changes
        #expect(changes.updated == [ids[0], ids[1]])
        #expect(changes.inserted.count == 1)
        let insertedID = try #require(changes.inserted.first)
        #expect(stack.coordinator.counters.rowCacheEntries - baseline == 3)

        // Another context on the coordinator fulfils the three from the row cache, none from the store.
        let view = stack.context(name: "view")
        let before = stack.coordinator.counters
        view.performAndWait {
            #expect((view.object(with: ids[0]) as? Item)?.price == 42)
            #expect((view.object(with: ids[1]) as? Item)?.name != nil)
            #expect((view.object(with: insertedID) as? Item)?.name == "new")
            view.reset()
        }
        #expect(stack.coordinator.counters.rowCacheHits - before.rowCacheHits == 3)
        #expect(stack.coordinator.counters.rowCacheMisses == before.rowCacheMisses)
        #expect(stack.coordinator.counters.rowsRead == before.rowsRead)

        saves = nil
        #expect(stack.coordinator.counters.rowCacheEntries == baseline)
    }
}
