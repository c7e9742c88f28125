import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph

/// Leaks: released stacks leave nothing behind (semantics §0: the context's registry is weak, strong
/// only for dirty objects; objects hold related objects until refresh or reset), and a long import keeps the
/// row cache and registries bounded (architecture: "memory that stays flat when the importer saves and resets").
@Suite struct LeakTests {
    /// Weak references to everything a stack made.
    final class Watch {
        private var items: [(String, () -> AnyObject?)] = []
        func add(_ name: String, _ object: AnyObject) {
            weak let weakObject = object
            items.append((name, { weakObject }))
        }
        var alive: [String] { items.filter { $0.1() != nil }.map(\.0) }
        var count: Int { items.count }
    }

    @Test func aReleasedStackDeallocatesEverything() throws {
        let watch = Watch()
        let main = ContextQueue(label: "leak.main")
        var storePath = ""
        var registryCount = -1
        do {
            let directory = try TemporaryDirectory("leak")
            var options = AmbarContainer.Options()
            options.mainQueue = main
            let container = try AmbarContainer(model: makeNotesModel(), storeURL: directory.url.appendingPathComponent("Notes.sqlite"), options: options)
            storePath = container.storeURL!.path
            watch.add("container", container)
            watch.add("main coordinator", container.mainCoordinator)
            watch.add("writer coordinator", container.writerCoordinator)
            watch.add("view context", container.viewContext)
            let view = container.viewContext
            // An importer with related objects (a cycle note ↔ folder that the context must not keep alive).
            let importer = container.importerContext()
            watch.add("importer context", importer)
            try importer.performAndWait {
                let folder = try importer.insertNewObject(forEntityName: "Folder")
                watch.add("imported folder", folder)
                for note in try insertNotes(1...50, in: importer) {
                    try note.setValue(folder, forKey: "folder")
                    watch.add("imported note", note)
                }
                try importer.save()
            }
            main.sync {}
            // The view shows objects through a fetched collection and an object observer.
            var request = FetchRequest(entityName: "Note", predicate: try ObjectPredicate(format: "id <= 10"), sortDescriptors: [ObjectSortDescriptor("id")])
            request.relationshipKeyPathsForPrefetching = ["folder"]
            let (collection, observer, notifications): (FetchedCollection<ManagedObject>, ManagedObjectObserver<ManagedObject>, Int) = try view.performAndWait {
                let collection = try FetchedCollection<ManagedObject>(fetchRequest: request, context: view)
                for object in collection.objects { watch.add("view note", object) }
                let first = try #require(collection.objects.first)
                _ = first.value(forKey: "folder")
                let observer = ManagedObjectObserver(managedObject: first)
                var seen = 0
                observer.startObserving { _, _ in seen += 1 }
                return (collection, observer, seen)
            }
            watch.add("fetched collection", collection)
            watch.add("fetched results controller", collection.controller)
            watch.add("object observer", observer)
            _ = notifications
            // An editor (child of the view context) and a temporary context, both saving.
            let editor = try container.editorContext()
            watch.add("editor context", editor)
            try editor.performAndWait {
                let note = try #require(try editor.fetch(FetchRequest(entityName: "Note", predicate: try ObjectPredicate(format: "id == 1"))).first)
                watch.add("editor note", note)
                try note.setValue(Int64(1), forKey: "editorMark")
                try editor.save()
            }
            try view.performAndWait { try view.save() }
            let temporary = container.temporaryContext()
            watch.add("temporary context", temporary)
            try temporary.performAndWait {
                let note = try #require(try temporary.fetch(FetchRequest(entityName: "Note", predicate: try ObjectPredicate(format: "id == 2"))).first)
                watch.add("temporary note", note)
                try note.setValue(Int64(1), forKey: "temporaryMark")
                try temporary.save()
            }
            // A save whose smart merge is still pending on the main queue when everything is released.
            try importer.performAndWait {
                try insertNotes(51...60, in: importer)
                try importer.save()
            }
            registryCount = CoordinatorRegistry.coordinators(path: storePath).count
        }
        main.sync {}  // pending merges run (they hold only object IDs and the view context)
        #expect(watch.count > 70)
        #expect(watch.alive == [], "still alive: \(watch.alive)")
        #expect(registryCount == 2)
        #expect(CoordinatorRegistry.coordinators(path: storePath).isEmpty)
    }

    @Test func aLongImportKeepsTheRowCacheAndRegistriesBounded() throws {
        let stack = try NotesStack()
        let container = stack.container, view = container.viewContext
        let visible = try view.performAndWait {
            try insertNotes(1...10, in: view)
            try view.save()
            return try view.fetch(FetchRequest(entityName: "Note"))
        }
        #expect(visible.count == 10)
        let importer = container.importerContext()
        var peaks = (writerCache: 0, mainCache: 0, importerRegistered: 0, viewRegistered: 0)
        let chunk = 250
        for round in 0..<40 {
            try importer.performAndWait {
                try insertNotes((100 + round * chunk)..<(100 + (round + 1) * chunk), in: importer)
                try importer.save()
                importer.reset()
            }
            stack.main.sync {}
            peaks.writerCache = max(peaks.writerCache, container.writerCoordinator.counters.rowCacheEntries)
            peaks.mainCache = max(peaks.mainCache, container.mainCoordinator.counters.rowCacheEntries)
            peaks.importerRegistered = max(peaks.importerRegistered, importer.performAndWait { importer.registeredObjectCount })
            peaks.viewRegistered = max(peaks.viewRegistered, view.performAndWait { view.registeredObjectCount })
        }
        print("long import of \(40 * chunk) notes: peaks \(peaks)")
        #expect(try storedNoteIDs(stack.storePath).count == 10 + 40 * chunk)
        // Only the view's 10 objects hold snapshots; the importer's are released by reset.
        #expect(peaks.writerCache <= 10)
        #expect(peaks.mainCache <= 10)
        #expect(peaks.importerRegistered == 0)
        #expect(peaks.viewRegistered == 10)
        withExtendedLifetime(visible) {}
    }
}
