import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph

@Suite struct AmbarContainerTests {
    @Test func contextFactoriesHaveTheSeedsWiring() throws {
        let t = try TestContainer()
        let c = t.container
        #expect(c.mainCoordinator !== c.writerCoordinator)
        #expect(c.viewContext.persistentStoreCoordinator === c.mainCoordinator)
        #expect(c.viewContext.concurrencyType == .mainQueue)
        #expect(c.viewContext.mergePolicy.type == .mergeByPropertyStoreTrump)
        let importer = c.importerContext()
        #expect(importer.concurrencyType == .privateQueue)
        #expect(importer.persistentStoreCoordinator === c.writerCoordinator)
        #expect(importer.mergePolicy.type == .mergeByPropertyObjectTrump)
        let temporary = c.temporaryContext()
        #expect(temporary.persistentStoreCoordinator === c.mainCoordinator)
        #expect(temporary.mergePolicy.type == .rollback)
        let editor = try c.editorContext()
        #expect(editor.parent === c.viewContext)
        #expect(editor.concurrencyType == .privateQueue)
        #expect(editor.mergePolicy.type == .mergeByPropertyObjectTrump)
        c.isViewContextReadOnly = true
        #expect(c.viewContext.mergePolicy.type == .rollback)
        #expect(throws: AmbarError.self) { try c.editorContext() }
        c.isViewContextReadOnly = false
        #expect(c.storeURL?.lastPathComponent == "Ambar.sqlite")
    }

    @Test func inMemoryAndSingleCoordinatorShareTheCoordinator() throws {
        let memory = try TestContainer(storeType: .inMemory)
        #expect(memory.container.writerCoordinator === memory.container.mainCoordinator)
        #expect(memory.container.storeURL == nil)
        var options = AmbarContainer.Options()
        options.singleCoordinator = true
        let single = try TestContainer(options: options)
        #expect(single.container.writerCoordinator === single.container.mainCoordinator)
        // With one coordinator the 9.2 filter still merges importer saves.
        try single.importProducts(1...3)
        single.drainMain()
        #expect(single.container.counters.mergesPerformed == 1)
    }

    /// Ambar's promise (seeds: "if you are showing just 10 of them, those 10 will be updated and the rest never
    /// clog your UI thread"), checked with counters; semantics §3.1 (merges touch registered objects only).
    @Test func smartMergeRefreshesOnlyWhatTheViewContextHolds() throws {
        let t = try TestContainer()
        try t.importProducts(1...50_000, price: 1, chunk: 5_000)
        t.drainMain()
        let view = t.view
        let visible: [Product] = try view.performAndWait {
            var request = FetchRequest(entityName: "Product", predicate: .compare("id", .lessThanOrEqualTo, 20), sortDescriptors: [ObjectSortDescriptor("id")])
            request.returnsObjectsAsFaults = false
            return try view.fetch(request, as: Product.self)
        }
        #expect(visible.count == 20)
        let before = view.performAndWait { (view.counters, view.registeredObjectCount) }
        #expect(before.1 == 20)
        // Update all 50,000 in chunks through importer contexts (find by unique id with one IN fetch per chunk).
        for start in stride(from: 1, through: 50_000, by: 5_000) {
            let importer = t.container.importerContext()
            try importer.performAndWait {
                let ids = Array(start..<(start + 5_000))
                let products = try importer.fetch(FetchRequest(entityName: "Product", predicate: .in("id", ids)), as: Product.self)
                #expect(products.count == 5_000)
                for p in products { p.price = 2 }
                try importer.save()
            }
        }
        t.drainMain()
        let after = view.performAndWait { (view.counters, view.registeredObjectCount, visible.map(\.price)) }
        #expect(after.2 == Array(repeating: 2.0, count: 20))
        #expect(after.1 == 20)
        #expect(after.0.merges - before.0.merges == 10)
        #expect(after.0.mergeObjectsRefreshed - before.0.mergeObjectsRefreshed == 10 * 20 / 10)
        #expect(after.0.mergeObjectsExamined - before.0.mergeObjectsExamined <= 10 * 20)
        #expect(after.0.faultsFired - before.0.faultsFired == 20)
        // The main coordinator read nothing from SQL for the refresh: the saved rows reached its cache.
        #expect(t.container.counters.mergesPerformed == 20)
    }

    @Test(arguments: AmbarMergeFilter.allCases)
    func mergeFiltersSelectWhichSavesReachTheViewContext(filter: AmbarMergeFilter) throws {
        var options = AmbarContainer.Options()
        options.mergeFilter = filter
        let t = try TestContainer(options: options)
        let c = t.container
        try t.importProducts(1...2)  // importer: merged under both filters
        t.drainMain()
        #expect(c.counters.mergesPerformed == 1)
        let temporary = c.temporaryContext()
        try temporary.performAndWait {
            let p = Product(context: temporary)
            p.id = 100
            try temporary.save()
        }
        t.drainMain()
        // A temporary context's save (main coordinator): merged only by the 8.0-9.1 filter.
        #expect(c.counters.mergesPerformed == (filter == .writerOnly ? 1 : 2))
        // The view context and its direct children are never merged back into it.
        let editor = try c.editorContext()
        try editor.performAndWait {
            let p = Product(context: editor)
            p.id = 200
            try editor.save()
        }
        try t.view.performAndWait { try t.view.save() }
        t.drainMain()
        #expect(c.counters.mergesPerformed == (filter == .writerOnly ? 1 : 2))
        // A grandchild of the view context: its save reaches only the editor, yet the 8.x filter merges it.
        let grandchild = ManagedObjectContext(concurrencyType: .privateQueue)
        grandchild.parent = editor
        try grandchild.performAndWait {
            let p = Product(context: grandchild)
            p.id = 300
            try grandchild.save()
        }
        t.drainMain()
        #expect(c.counters.mergesPerformed == (filter == .writerOnly ? 1 : 3))
        #expect(c.counters.mergesOfUnsavedChanges == (filter == .writerOnly ? 0 : 1))
    }

    @Test func readOnlySavesReachTheStoreUnlessStrict() throws {
        let t = try TestContainer()
        try t.importProducts(1...1)
        t.drainMain()
        t.container.isViewContextReadOnly = true
        let view = t.view
        try view.performAndWait {
            let p = try #require(try view.fetch(FetchRequest(entityName: "Product"), as: Product.self).first)
            p.name = "edited in a read-only view"
            try view.save()  // .rollback settles conflicts only: a conflict-free save is written
        }
        let stored = t.container.temporaryContext()
        try stored.performAndWait {
            let p = try #require(try stored.fetch(FetchRequest(entityName: "Product"), as: Product.self).first)
            #expect(p.name == "edited in a read-only view")
        }
        #expect(t.container.counters.readOnlySavesReachedStore == 1)

        var options = AmbarContainer.Options()
        options.strictReadOnly = true
        let strict = try TestContainer(options: options)
        try strict.importProducts(1...1)
        strict.drainMain()
        strict.container.isViewContextReadOnly = true
        let strictView = strict.view
        try strictView.performAndWait {
            let p = try #require(try strictView.fetch(FetchRequest(entityName: "Product"), as: Product.self).first)
            p.name = "refused"
            #expect(throws: AmbarError.self) { try strictView.save() }
            #expect(strictView.hasChanges)
        }
        let temporary = strict.container.temporaryContext()
        temporary.performAndWait {
            let p = Product(context: temporary)
            p.id = 9
            #expect(throws: AmbarError.self) { try temporary.save() }
        }
        #expect(strict.container.counters.readOnlySavesRefused == 2)
        #expect(strict.container.counters.readOnlySavesReachedStore == 0)
    }

    // The read-only counter is per container. Did-save notifications reach every observer in
    // the process, so a temporary context's save in one container must not count in another (found by a
    // parallel test run where the strict container counted a neighbour's save).
    @Test func readOnlySavesAreCountedByTheirOwnContainerOnly() throws {
        let a = try TestContainer()
        let b = try TestContainer()
        let temporary = a.container.temporaryContext()
        try temporary.performAndWait {
            let p = Product(context: temporary)
            p.id = 1
            try temporary.save()
        }
        a.drainMain()
        b.drainMain()
        #expect(a.container.counters.readOnlySavesReachedStore == 1)
        #expect(b.container.counters.readOnlySavesReachedStore == 0)
        #expect(b.container.counters.saveNotificationsSeen == 0)
    }

    @Test func editorChangesReachTheViewContextOnSaveAndTheStoreOnTheViewSave() throws {
        let t = try TestContainer()
        try t.importProducts(1...1)
        t.drainMain()
        let editor = try t.container.editorContext()
        let id: ManagedObjectID = try editor.performAndWait {
            let p = try #require(try editor.fetch(FetchRequest(entityName: "Product"), as: Product.self).first)
            p.name = "edited"
            return p.objectID
        }
        let view = t.view
        view.performAndWait {
            let p = view.object(with: id) as! Product
            #expect(p.name == "product 1")  // invisible until the editor saves
        }
        try editor.performAndWait { try editor.save() }
        view.performAndWait {
            #expect((view.object(with: id) as! Product).name == "edited")
            #expect(view.hasChanges)
        }
        try view.performAndWait { try view.save() }
        let reader = t.container.importerContext()
        try reader.performAndWait {
            let p = try reader.existingObject(with: id) as! Product
            #expect(p.name == "edited")
        }
    }

    @Test func defaultDirectoryAndModelSearch() throws {
        #expect(AmbarContainer.defaultDirectoryURL().path.hasSuffix("ambar"))
        #expect(throws: AmbarError.self) { try AmbarContainer.loadModel(named: "no-such-model-\(UUID().uuidString)") }
    }

    // Docs/core-data-rules.md: each smart merge's ID sets are freed where Core Data frees
    // them, on the merging (main) queue as the merge finishes, by default; `mergeRelease = .background` (ours)
    // hands them to the background release queue instead.
    @Test("A smart merge frees its ID sets on the merging queue by default, in the background as an option",
          arguments: AmbarMergeRelease.allCases)
    func mergeSetsAreFreedWhereTheOptionSays(place: AmbarMergeRelease) throws {
        var options = AmbarContainer.Options()
        if place == .background { options.mergeRelease = .background }
        let t = try TestContainer(options: options)
        #expect(AmbarContainer.Options().mergeRelease == .mergingQueue)
        try t.importProducts(1...3_000, chunk: 1_000)
        t.drainMain()
        t.container.releaseQueue.sync {}  // whatever the background queue was given has run
        let counters = t.container.counters
        #expect(counters.mergesPerformed == 3)
        #expect(counters.mergeSetsReleasedOnMergingQueue == (place == .mergingQueue ? 3 : 0))
        #expect(counters.mergeSetsReleasedInBackground == (place == .background ? 3 : 0))
    }
}
