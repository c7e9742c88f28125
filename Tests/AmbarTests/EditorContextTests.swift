import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph

/// The editor context (seed 000 "editorContext … will override whatever you have
/// in the main MOC and further along, all the way to the disk") against conflicting background changes.
/// Rules: semantics §2.2 (a child save has no conflict detection), §3.1 (a merge keeps local changes),
/// §1.4/§1.5 (the view context's StoreTrump on an optimistic-locking conflict).
@Suite struct EditorContextTests {
    static func product(_ context: ManagedObjectContext, _ id: Int64 = 1) throws -> Product {
        try #require(try context.fetch(FetchRequest(entityName: "Product", predicate: .compare("id", .equalTo, id)), as: Product.self).first)
    }

    static func stored(_ t: TestContainer, _ id: Int64 = 1) throws -> (String?, Double) {
        let reader = t.container.importerContext()
        return try reader.performAndWait {
            let p = try product(reader, id)
            return (p.name, p.price)
        }
    }

    /// The editor changes name and price; an importer changes the name (and only the name) and saves first.
    static func conflictingEdits(_ t: TestContainer) throws -> ManagedObjectContext {
        try t.importProducts(1...1, price: 1)
        t.drainMain()
        try t.view.performAndWait { _ = try product(t.view).name }  // the viewer shows product 1
        let editor = try t.container.editorContext()
        try editor.performAndWait {
            let p = try product(editor)
            p.name = "editor"
            p.price = 5
        }
        let importer = t.container.importerContext()
        try importer.performAndWait {
            try product(importer).name = "importer"
            try importer.save()
        }
        return editor
    }

    // Smart merge on (the default): the importer's save is merged into the view context before the editor
    // saves; the editor's save then pushes its values over it (§2.2), and the view's save is conflict-free.
    @Test func editorWinsOverAMergedBackgroundChange() throws {
        let t = try TestContainer()
        let editor = try Self.conflictingEdits(t)
        t.drainMain()
        try t.view.performAndWait { () throws in #expect(try Self.product(t.view).name == "importer") }
        try editor.performAndWait {
            #expect(try Self.product(editor).name == "editor")  // the editor's own edit is kept
            try editor.save()
        }
        try t.view.performAndWait {
            #expect(try Self.product(t.view).name == "editor")
            try t.view.save()
        }
        let (name, price) = try Self.stored(t)
        #expect(name == "editor")
        #expect(price == 5)
    }

    // Without the merge (shouldMergeIncomingSavedObjects = false) the view context's save meets an
    // optimistic-locking conflict; its StoreTrump policy keeps the store's name (changed on both sides) and the
    // editor's price (changed only in memory).
    @Test func viewContextStoreTrumpSettlesAnUnmergedConflict() throws {
        var options = AmbarContainer.Options()
        options.shouldMergeIncomingSavedObjects = false
        let t = try TestContainer(options: options)
        t.container.shouldMergeIncomingSavedObjects = true
        try t.importProducts(1...1, price: 1)
        t.drainMain()
        t.container.shouldMergeIncomingSavedObjects = false
        try t.view.performAndWait { _ = try Self.product(t.view).name }
        let editor = try t.container.editorContext()
        try editor.performAndWait {
            let p = try Self.product(editor)
            p.name = "editor"
            p.price = 5
        }
        let importer = t.container.importerContext()
        try importer.performAndWait {
            try Self.product(importer).name = "importer"
            try importer.save()
        }
        t.drainMain()
        try editor.performAndWait { try editor.save() }
        try t.view.performAndWait {
            #expect(try Self.product(t.view).name == "editor")  // not merged: the view holds the editor's values
            try t.view.save()
            let p = try Self.product(t.view)
            #expect(p.name == "importer")
            #expect(p.price == 5)
        }
        let (name, price) = try Self.stored(t)
        #expect(name == "importer")
        #expect(price == 5)
    }

    // Editor edits never reach the store, the view context or a new importer until saved; discarding the
    // editor discards them ("if you delete this context, everything goes away").
    @Test func discardedEditorLeavesNoTrace() throws {
        let t = try TestContainer()
        try t.importProducts(1...1, price: 1)
        t.drainMain()
        var editor: ManagedObjectContext? = try t.container.editorContext()
        try editor?.performAndWait {
            let p = try Self.product(editor!)
            p.name = "draft"
            let extra = Product(context: editor!)
            extra.id = 2
        }
        try t.view.performAndWait { () throws in
            #expect(try Self.product(t.view).name == "product 1")
            #expect(try t.view.count(for: FetchRequest(entityName: "Product")) == 1)
            #expect(!t.view.hasChanges)
        }
        editor = nil
        try t.view.performAndWait { try t.view.save() }
        #expect(try Self.stored(t).0 == "product 1")
        #expect(t.container.counters.mergesScheduled == 1)  // only the import
    }
}
