import Dispatch
import Foundation
import Testing
@testable import ObjectGraph

/// Review of issue 22 item 8 (read connections beside the writer) and issue 21 item 4 (query generations): the
/// defects found, each stated as the rule it broke (Docs/coredata-behaviour.md §3.7, §8; semantics §3.7, §8).
@Suite struct PoolGenerationReviewTests {
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

    @Test("§8: with locking_mode EXCLUSIVE (set through the pragmas) no other connection can read the file: reads stay on the writer's connection instead of failing with a busy timeout")
    func exclusiveLockingModeHasNoReaders() throws {
        var options = StoreOptions()
        options.pragmas["locking_mode"] = "EXCLUSIVE"
        options.busyTimeout = 0.2
        let stack = try TestStack(options: options)
        try stack.seed(2)
        let view = stack.context(name: "view")
        #expect(try QueryGenerationTests.prices(view) == [10, 20])
        try QueryGenerationTests.raisePrices(stack, by: 1)
        #expect(try QueryGenerationTests.prices(view) == [11, 21])
        #expect(stack.coordinator.openReadConnections == 0)
        #expect(!stack.coordinator.supportsQueryGenerations)
    }

    @Test("§3.7: a pinned context that goes away without unpinning ends its generation: the WAL is checkpointed whole")
    func deallocatedPinnedContextEndsItsGeneration() throws {
        let stack = try TestStack()
        try stack.seed(3)
        do {
            let view = stack.context(name: "view")
            try view.setQueryGenerationFrom(.current)
            _ = try QueryGenerationTests.prices(view)
            for round in 1...3 { try QueryGenerationTests.raisePrices(stack, by: Double(round)) }
            let held = try #require(try stack.sql("PRAGMA wal_checkpoint(PASSIVE)").first)
            #expect(held[2].int64! < held[1].int64!)
        }
        let released = try #require(try stack.sql("PRAGMA wal_checkpoint(PASSIVE)").first)
        #expect(released[2].int64! == released[1].int64!, "the generation ended with its context: \(released)")
    }

    // MARK: Batch requests select their rows in the writer's turn

    /// Saves item 2's price as 25 in a background context while `batch` runs on another thread. The save's
    /// transaction stays open until the batch has read rows (the coordinator counts them) or, when the batch waits
    /// for the save as it must, for half a second; the outcome does not depend on that wait.
    static func saveBeside(_ stack: TestStack, batch: @escaping @Sendable (ManagedObjectContext) throws -> Void) throws {
        let coordinator = stack.coordinator
        let errors = ConnectionPoolTests.EventLog()
        let inTransaction = DispatchSemaphore(value: 0)
        coordinator.setBeforeCommit {
            let before = coordinator.counters.rowsRead
            inTransaction.signal()
            let deadline = DispatchTime.now() + .milliseconds(500)
            while coordinator.counters.rowsRead == before, DispatchTime.now() < deadline { usleep(1000) }
        }
        let saved = DispatchSemaphore(value: 0), batched = DispatchSemaphore(value: 0)
        let background = stack.context(name: "background")
        let batcher = stack.context(name: "batcher")
        Thread {
            do {
                try background.performAndWait {
                    let item = try #require(try fetchItems(background, .compare("id", .equalTo, 2)).first)
                    item.price = 25
                    try background.save()
                }
            } catch { errors.add("save: \(error)") }
            saved.signal()
        }.start()
        // The batch starts once the save is inside its transaction (it reads no rows before then).
        Thread {
            inTransaction.wait()
            do { try batcher.performAndWait { try batch(batcher) } } catch { errors.add("batch: \(error)") }
            batched.signal()
        }.start()
        saved.wait()
        batched.wait()
        coordinator.setBeforeCommit(nil)
        #expect(errors.all == [])
    }

    @Test("§8 (one writer per coordinator: a batch request is serialized with the coordinator's saves), §6: a batch delete selects its rows in the writer's turn: a row a concurrent save moved out of its predicate is not deleted")
    func batchDeleteSelectsInTheWritersTurn() throws {
        let stack = try TestStack()
        try stack.seed(3)
        try Self.saveBeside(stack) { context in
            _ = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Item", predicate: .compare("price", .equalTo, 20))))
        }
        let view = stack.context()
        #expect(try QueryGenerationTests.prices(view) == [10, 25, 30], "the saved row no longer matched when the batch ran")
    }

    @Test("§8, §6: a batch update selects its rows in the writer's turn: a row a concurrent save moved out of its predicate is not updated")
    func batchUpdateSelectsInTheWritersTurn() throws {
        let stack = try TestStack()
        try stack.seed(3)
        try Self.saveBeside(stack) { context in
            _ = try context.execute(BatchUpdateRequest(entityName: "Item", predicate: .compare("price", .equalTo, 20), propertiesToUpdate: ["name": "batched"]))
        }
        let view = stack.context()
        let names = try view.performAndWait { try fetchItems(view).map { "\($0.name ?? "-") \($0.price)" } }
        #expect(names == ["item 1 10.0", "item 2 25.0", "item 3 30.0"])
    }

    @Test("§3.7, §8: a generation's connection handed back still inside its read transaction (its COMMIT failed) is closed, not reused: later reads see later commits")
    func readerStillInTransactionIsNotReused() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let pool = try #require(stack.coordinator.readerPool)
        let reader = try pool.detach()
        try reader.connection.execute("BEGIN DEFERRED")
        _ = try reader.connection.query("SELECT count(*) FROM Z_METADATA")
        pool.adopt(reader, capacity: 3)
        #expect(pool.openReaders == 0)
        try QueryGenerationTests.raisePrices(stack, by: 1)
        #expect(try QueryGenerationTests.prices(stack.context()) == [11, 21])
        try reader.connection.execute("ROLLBACK")
    }
}
