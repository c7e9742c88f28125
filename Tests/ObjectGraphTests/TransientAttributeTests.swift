import Foundation
import Testing
@testable import ObjectGraph

/// Rules 3 to 5: transient attributes (`Item.scratch`, a string with no default). They live in the
/// object only: never in SQL, never in `changedValues()`, but a change to one is a change of the object.
@Suite struct TransientAttributeTests {
    private func scratch(_ item: Item) -> String? { item.value(forKey: "scratch") as? String }

    // Semantics §1.5 for changedValues: a change to a transient attribute alone makes the object
    // updated; the save succeeds and writes no SQL; changedValues() lists only persistent properties.
    @Test("A transient change alone makes the object updated; its save writes no SQL (§1.5)")
    func transientChangeAloneIsAnUpdate_rule3() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = try #require(ctx.existingObject(with: ids[0]) as? Item)
            #expect(!item.hasChanges)
            try item.setValue("note", forKey: "scratch")
            #expect(item.hasChanges)
            #expect(item.isUpdated)
            #expect(ctx.hasChanges)
            #expect(ctx.updatedObjects == [item])
            #expect(item.changedValues().isEmpty)
            let before = stack.coordinator.counters.statements
            let version = item.snapshotVersion
            try ctx.save()
            #expect(stack.coordinator.counters.statements == before)
            #expect(!item.hasChanges)
            #expect(!ctx.hasChanges)
            #expect(item.snapshotVersion == version)
            #expect(scratch(item) == "note")  // a save keeps transient values
            // Setting the value it already has is no change.
            try item.setValue("note", forKey: "scratch")
            #expect(!item.hasChanges)
        }
    }

    // Semantics §2.2: transient properties are copied into the parent: a child's save carries
    // transient values into its parent; a new fetch in a fresh child starts from the default.
    @Test("A child's save carries transient values to its parent; a fresh child starts from the default (§2.2)")
    func childSaveCarriesTransients_rule4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let parent = stack.context(name: "parent")
        let held = try parent.performAndWait { try #require(parent.existingObject(with: ids[1]) as? Item) }
        let child = stack.child(of: parent)
        try child.performAndWait {
            let items = try fetchItems(child)
            try items[0].setValue("from the child", forKey: "scratch")  // a transient change alone
            try items[1].setValue("and this one", forKey: "scratch")
            items[1].price = 5
            try child.save()
        }
        try parent.performAndWait {
            let first = try #require(parent.registeredObject(for: ids[0]) as? Item)
            #expect(scratch(first) == "from the child")
            #expect(scratch(held) == "and this one")
            #expect(held.price == 5)
            #expect(parent.updatedObjects.contains(first))
        }
        let fresh = stack.child(of: parent)
        try fresh.performAndWait {
            let items = try fetchItems(fresh)
            #expect(items.map(\.price) == [10, 5])  // the parent's unsaved change
            #expect(items.map { scratch($0) } == [nil, nil])
        }
    }

    // Semantics §3.2, §4; CoreDataPlus: refreshAllObjects(), refresh(_:mergeChanges: false) and
    // reset() put transient values back to their defaults; refresh(_:mergeChanges: true) keeps them.
    @Test("refreshAllObjects, refresh(false) and reset clear transients; refresh(true) keeps them (§3.2)")
    func refreshAndResetClearTransients_rule5() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let ctx = stack.context()
        try ctx.performAndWait {
            let clean = try #require(ctx.existingObject(with: ids[0]) as? Item)
            let dirty = try #require(ctx.existingObject(with: ids[1]) as? Item)
            func setBoth() throws {
                try clean.setValue("c", forKey: "scratch")
                try dirty.setValue("d", forKey: "scratch")
                dirty.price = 77
            }
            // refresh(mergeChanges: true) keeps them, for a clean object and for one with changes.
            try setBoth()
            ctx.refresh(clean, mergeChanges: true)
            ctx.refresh(dirty, mergeChanges: true)
            #expect(scratch(clean) == "c")
            #expect(scratch(dirty) == "d")
            #expect(dirty.price == 77)
            #expect(clean.hasChanges)  // its transient change stands
            // refresh(mergeChanges: false) clears them.
            ctx.refresh(clean, mergeChanges: false)
            ctx.refresh(dirty, mergeChanges: false)
            #expect(scratch(clean) == nil)
            #expect(scratch(dirty) == nil)
            #expect(dirty.price == 20)
            #expect(!ctx.hasChanges)
            // refreshAllObjects() clears them, and keeps the persistent change.
            try setBoth()
            ctx.refreshAllObjects()
            #expect(scratch(clean) == nil)
            #expect(scratch(dirty) == nil)
            #expect(dirty.price == 77)
            #expect(ctx.updatedObjects == [dirty])
            #expect(!clean.hasChanges)
            // reset() clears them.
            try setBoth()
            ctx.reset()
            #expect(scratch(clean) == nil)
            #expect(scratch(dirty) == nil)
        }
    }
}
