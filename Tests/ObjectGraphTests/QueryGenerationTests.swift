import Foundation
import Testing
@testable import ObjectGraph

/// Query generations (semantics §3.7 "Query generations"; Apple, "Accessing data when the store
/// changes"). A pinned context reads one snapshot of the store, an SQLite read transaction held open on a read
/// connection of the pool, until its generation advances.
@Suite struct QueryGenerationTests {
    /// Raises every item's price by `by` in a context of its own (on `coordinator`, the stack's by default) and saves.
    static func raisePrices(_ stack: TestStack, by: Double, coordinator: PersistentStoreCoordinator? = nil) throws {
        let writer = stack.context(coordinator, name: "writer")
        try writer.performAndWait {
            for item in try fetchItems(writer) { item.price += by }
            try writer.save()
        }
    }

    /// Inserts an item with `id` and `price` in a context of its own and saves it.
    static func insert(_ stack: TestStack, id: Int64, price: Double) throws {
        let writer = stack.context(name: "inserter")
        try writer.performAndWait {
            let item = Item(context: writer)
            item.id = id
            item.price = price
            try writer.save()
        }
    }

    static func prices(_ context: ManagedObjectContext) throws -> [Double] {
        try context.performAndWait { try fetchItems(context).map(\.price) }
    }

    @Test("§3.7: contexts are unpinned by default; an unpinned context reads each commit")
    func unpinnedByDefault() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let view = stack.context()
        #expect(view.queryGenerationToken == nil)
        try Self.raisePrices(stack, by: 1)
        #expect(try Self.prices(view) == [11, 21])
    }

    @Test("§3.7: setQueryGenerationFrom(.current) pins lazily: a commit before the first read is seen, one after it is not, by fetches and counts")
    func pinnedLazily() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let view = stack.context(name: "view")
        try view.setQueryGenerationFrom(.current)
        let token = try #require(view.queryGenerationToken)
        #expect(token != QueryGenerationToken.current, "the context holds its own generation's token")
        #expect(!token.isBound)
        try Self.raisePrices(stack, by: 1)  // before the first read: part of the generation
        #expect(try Self.prices(view) == [11, 21])
        #expect(token.isBound)
        try Self.raisePrices(stack, by: 100)  // after it: not seen
        try Self.insert(stack, id: 3, price: 5)  // a third item, not seen either
        #expect(try Self.prices(view) == [11, 21])
        #expect(try view.performAndWait { try view.count(for: FetchRequest(entityName: "Item")) } == 2)
        #expect(view.queryGenerationToken === token, "reading does not advance the generation")
        // Another context reads the current state meanwhile.
        #expect(try Self.prices(stack.context()) == [111, 121, 5])
    }

    @Test("§3.7: a fault of a pinned context reads its generation, even when the row cache holds a newer row of the same coordinator")
    func faultsReadTheGeneration() throws {
        let stack = try TestStack()
        let ids = try stack.seed(1)
        let view = stack.context(name: "view")
        try view.setQueryGenerationFrom(.current)
        _ = try Self.prices(view)  // takes the generation
        let writer = stack.context(name: "writer")
        let held = try writer.performAndWait { () throws -> Item in
            let item = try #require(writer.existingObject(with: ids[0]) as? Item)
            item.price = 99
            try writer.save()
            return item  // kept: the cache keeps the saved row
        }
        #expect(stack.coordinator.rowCache.version(of: ids[0])?.version == 2)
        let price = try view.performAndWait { () throws -> Double in
            view.reset()  // advances the generation: see below; so pin again to a generation taken before the save
            return try #require(view.object(with: ids[0]) as? Item).price
        }
        #expect(price == 99, "reset() advanced the generation to one after the save")
        // A context pinned before the save, faulting only now.
        let early = stack.context(name: "early")
        try early.setQueryGenerationFrom(.current)
        _ = try early.performAndWait { try early.count(for: FetchRequest(entityName: "Item")) }
        try writer.performAndWait {
            held.price = 7
            try writer.save()
        }
        let faulted = try early.performAndWait { try #require(early.object(with: ids[0]) as? Item).price }
        #expect(faulted == 99, "the fault read the generation, not the cache's row at version 3")
        #expect(stack.coordinator.rowCache.version(of: ids[0])?.version == 3, "the pinned read left the cache's newer row")
    }

    @Test("§3.7: passing another context's token aligns the two on one generation; nil unpins")
    func alignedAndUnpinned() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let a = stack.context(name: "a")
        try a.setQueryGenerationFrom(.current)
        _ = try Self.prices(a)
        try Self.raisePrices(stack, by: 5)
        let b = stack.context(name: "b")
        try b.setQueryGenerationFrom(a.queryGenerationToken)
        #expect(b.queryGenerationToken == a.queryGenerationToken)
        #expect(try Self.prices(b) == [10, 20], "b reads a's generation, taken before the commit")
        try b.setQueryGenerationFrom(nil)
        #expect(b.queryGenerationToken == nil)
        #expect(try Self.prices(b) == [15, 25])
        #expect(try Self.prices(a) == [10, 20])
    }

    @Test("§3.7: a pinned context's generation advances on its own save, on mergeChanges and on reset(), to one taken at its next read")
    func advancesOnSaveMergeAndReset() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let view = stack.context(name: "view")
        try view.setQueryGenerationFrom(.current)
        _ = try Self.prices(view)
        // Own save: a commit of another context (a new item) is not seen before it, and is after it.
        try Self.insert(stack, id: 3, price: 1)
        #expect(try Self.prices(view) == [10, 20])
        let before = view.queryGenerationToken
        try view.performAndWait {
            let item = try #require(view.object(with: ids[0]) as? Item)
            item.name = "renamed"
            try view.save()
        }
        #expect(view.queryGenerationToken != before)
        #expect(view.queryGenerationToken != nil, "still pinned")
        #expect(try Self.prices(view) == [10, 20, 1])
        try Self.raisePrices(stack, by: 1)
        #expect(try Self.prices(view) == [10, 20, 1])
        view.performAndWait { view.reset() }
        #expect(try Self.prices(view) == [11, 21, 2])
        // Merge.
        let recorder = NotificationRecorder(ManagedObjectContext.didSaveNotification)
        try Self.raisePrices(stack, by: 1)
        #expect(try Self.prices(view) == [11, 21, 2])
        let note = try #require(recorder.notes.last)
        let merged = view.queryGenerationToken
        view.performAndWait {
            view.mergeChanges(fromContextDidSave: note)
            view.reset()
        }
        #expect(view.queryGenerationToken != merged)
        #expect(try Self.prices(view) == [12, 22, 3])
        // reset() alone.
        try Self.raisePrices(stack, by: 1)
        #expect(try Self.prices(view) == [12, 22, 3])
        view.performAndWait { view.reset() }
        #expect(try Self.prices(view) == [13, 23, 4])
    }

    @Test("§3.7: batch update and batch delete do not advance a pinned context's generation")
    func batchRequestsDoNotAdvance() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let view = stack.context(name: "view")
        try view.setQueryGenerationFrom(.current)
        _ = try Self.prices(view)
        let token = view.queryGenerationToken
        try view.performAndWait {
            _ = try view.execute(BatchUpdateRequest(entityName: "Item", propertiesToUpdate: ["price": 5]))
            _ = try view.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Item", predicate: .compare("id", .equalTo, 2))))
        }
        #expect(view.queryGenerationToken === token)
        #expect(try Self.prices(view) == [10, 20], "the pinned context still reads the generation before the batches")
        #expect(try Self.prices(stack.context()) == [5])
    }

    @Test("§2.1 step 7, §3.7: the did-save carries the generation after the save (NSManagedObjectContextQueryGenerationKey); pinning to it shows the saved rows")
    func didSaveCarriesTheGeneration() throws {
        let stack = try TestStack()
        try stack.seed(1)
        let recorder = NotificationRecorder(ManagedObjectContext.didSaveNotification)
        try Self.raisePrices(stack, by: 1)
        let note = try #require(recorder.notes.last)
        let token = try #require(note.userInfo?[ManagedObjectContext.NotificationKey.queryGeneration.rawValue] as? QueryGenerationToken)
        #expect(ContextDidSave(note)?.queryGeneration === token)
        let reader = stack.context(name: "reader")
        try reader.setQueryGenerationFrom(token)
        #expect(try Self.prices(reader) == [11])
        try Self.raisePrices(stack, by: 1)
        #expect(try Self.prices(reader) == [11])
        // A child's save into its parent reaches no store and carries none.
        let parent = stack.context()
        let child = stack.child(of: parent)
        let childRecorder = NotificationRecorder(ManagedObjectContext.didSaveNotification, object: child)
        try child.performAndWait {
            let item = Item(context: child)
            item.id = 9
            try child.save()
        }
        #expect(ContextDidSave(try #require(childRecorder.notes.last))?.queryGeneration == nil)
    }

    @Test("§3.7: a child context cannot be pinned, nor a context to another coordinator's token; an in-memory store leaves the context unpinned")
    func errorsAndStoresWithoutGenerations() throws {
        let stack = try TestStack()
        try stack.seed(1)
        let parent = stack.context()
        let child = stack.child(of: parent)
        let childError = #expect(throws: ObjectGraphError.self) { try child.setQueryGenerationFrom(.current) }
        #expect(childError?.code == .persistentStoreOperation)
        #expect(childError?.message.contains("child context") == true)

        let other = try stack.secondCoordinator()
        let foreign = stack.context(other)
        try foreign.setQueryGenerationFrom(.current)
        let wrong = #expect(throws: ObjectGraphError.self) { try parent.setQueryGenerationFrom(foreign.queryGenerationToken) }
        #expect(wrong?.message.contains("another coordinator") == true)

        let loose = ManagedObjectContext(concurrencyType: .privateQueue)
        #expect(throws: ObjectGraphError.self) { try loose.setQueryGenerationFrom(.current) }

        let memory = try TestStack(type: .inMemory)
        #expect(!memory.coordinator.supportsQueryGenerations)
        let view = memory.context()
        try view.setQueryGenerationFrom(.current)
        #expect(view.queryGenerationToken == nil, "quietly unpinned: in-memory stores have no generations")

        var options = StoreOptions()
        options.pragmas["journal_mode"] = "DELETE"
        let rollback = try TestStack(options: options)
        #expect(!rollback.coordinator.supportsQueryGenerations, "generations need WAL")
    }

    @Test("§3.7: a live generation keeps SQLite from checkpointing the WAL past it; once it ends, the WAL is checkpointed whole")
    func generationHoldsTheWAL() throws {
        let stack = try TestStack()
        try stack.seed(5)
        let view = stack.context(name: "view")
        try view.setQueryGenerationFrom(.current)
        _ = try Self.prices(view)
        for step in 1...5 { try Self.raisePrices(stack, by: Double(step)) }
        // (busy, frames in the WAL, frames checkpointed)
        let held = try #require(try stack.sql("PRAGMA wal_checkpoint(PASSIVE)").first)
        #expect(held[2].int64! < held[1].int64!, "the pinned generation kept frames from being checkpointed: \(held)")
        try view.setQueryGenerationFrom(nil)
        let released = try #require(try stack.sql("PRAGMA wal_checkpoint(PASSIVE)").first)
        #expect(released[2].int64! == released[1].int64!, "every frame checkpointed once the generation ended: \(released)")
    }

    @Test("§3.7 (semantics §3.7: WAL only, otherwise quietly unpinned): a read-only store on a file in rollback-journal mode holds no generation, so a writer of the file is not locked out")
    func readOnlyRollbackStoreHoldsNoGeneration() throws {
        var options = StoreOptions()
        options.pragmas["journal_mode"] = "DELETE"
        options.busyTimeout = 0.2
        let stack = try TestStack(options: options)
        try stack.seed(2)
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        readOnly.busyTimeout = 0.2
        let reading = try stack.secondCoordinator(options: readOnly)
        #expect(!reading.supportsQueryGenerations, "the file is not in WAL mode")
        let view = stack.context(reading, name: "view")
        try view.setQueryGenerationFrom(.current)
        #expect(view.queryGenerationToken == nil, "quietly unpinned: no generation outside WAL")
        #expect(try QueryGenerationTests.prices(view) == [10, 20])
        // A rollback-journal read transaction held open would keep this commit from getting its lock.
        try QueryGenerationTests.raisePrices(stack, by: 1)
        #expect(try QueryGenerationTests.prices(view) == [11, 21])
    }

    @Test("§3.7, §8: a read-only store on a WAL file keeps its read connections and generations (the file's own mode decides)")
    func readOnlyWALStoreKeepsItsReaders() throws {
        let stack = try TestStack()
        try stack.seed(2)
        var readOnly = StoreOptions()
        readOnly.readOnly = true
        let reading = try stack.secondCoordinator(options: readOnly)
        #expect(reading.supportsQueryGenerations)
        let view = stack.context(reading, name: "view")
        try view.setQueryGenerationFrom(.current)
        #expect(try QueryGenerationTests.prices(view) == [10, 20])
        try QueryGenerationTests.raisePrices(stack, by: 1)
        #expect(try QueryGenerationTests.prices(view) == [10, 20], "pinned")
        #expect(reading.openReadConnections == 0, "the generation's connection is outside the pool")
    }

    @Test("§3.7: a pinned context that goes away without unpinning ends its generation: the WAL is checkpointed whole")
    func deallocatedPinnedContextEndsItsGeneration() throws {
        let stack = try TestStack()
        try stack.seed(3)
        do {
            let view = stack.context(name: "view")
            try view.setQueryGenerationFrom(.current)
            _ = try QueryGenerationTests.prices(view)
            for step in 1...3 { try QueryGenerationTests.raisePrices(stack, by: Double(step)) }
            let held = try #require(try stack.sql("PRAGMA wal_checkpoint(PASSIVE)").first)
            #expect(held[2].int64! < held[1].int64!)
        }
        let released = try #require(try stack.sql("PRAGMA wal_checkpoint(PASSIVE)").first)
        #expect(released[2].int64! == released[1].int64!, "the generation ended with its context: \(released)")
    }
}
