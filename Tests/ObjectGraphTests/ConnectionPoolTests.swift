import Dispatch
import Foundation
import Synchronization
import Testing
@testable import ObjectGraph

/// A coordinator's SQLite store reads on a pool of read connections beside its writer (semantics
/// §8 "Connection pool"): a fetch does not wait for a save of another context on the same coordinator, and a pool
/// of one keeps the serialized coordinator. Each test orders its events with semaphores and an event log, not
/// with clocks: the save's transaction is held open (inside it, before its `COMMIT`) until the test lets it go.
@Suite struct ConnectionPoolTests {
    /// Events in the order they happened, from any thread.
    final class EventLog: Sendable {
        private let events = Mutex<[String]>([])
        func add(_ event: String) { events.withLock { $0.append(event) } }
        var all: [String] { events.withLock { $0 } }
    }

    /// A background save of `inserted` new items whose write transaction stays open until `release` is signalled;
    /// `inTransaction` is signalled once it is open. Runs on a thread of its own; `done` is signalled after it.
    final class HeldSave: Sendable {
        let inTransaction = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let errors = EventLog()

        func start(_ stack: TestStack, inserting inserted: Int, log: EventLog) {
            let (inTransaction, release) = (self.inTransaction, self.release)
            stack.coordinator.setBeforeCommit {
                inTransaction.signal()
                release.wait()
                log.add("commit")
            }
            let background = stack.context(name: "background")
            let (done, errors) = (self.done, self.errors)
            Thread {
                do {
                    try background.performAndWait {
                        for i in 0..<inserted {
                            let item = Item(context: background)
                            item.id = Int64(100 + i)
                            item.price = 1
                        }
                        try background.save()
                    }
                } catch { errors.add("\(error)") }
                log.add("saved")
                done.signal()
            }.start()
        }
    }

    @Test("§8 Connection pool: a fetch on the same coordinator completes while a background save's transaction is open, and reads the last committed rows")
    func fetchDoesNotWaitForTheWriter() throws {
        let stack = try TestStack()
        try stack.seed(3)
        #expect(stack.coordinator.connectionPoolSize == PersistentStoreCoordinator.defaultConnectionPoolSize)
        let log = EventLog()
        let save = HeldSave()
        save.start(stack, inserting: 2, log: log)
        save.inTransaction.wait()
        let view = stack.context(name: "view")
        let (fetched, counted) = try view.performAndWait {
            (try fetchItems(view).map(\.id), try view.count(for: FetchRequest(entityName: "Item")))
        }
        log.add("fetched")
        // The fault of an object not yet registered in `view` reads its row on a read connection too.
        save.release.signal()
        save.done.wait()
        #expect(save.errors.all == [])
        #expect(fetched == [1, 2, 3], "a read connection sees the last committed state, not the open transaction's rows")
        #expect(counted == 3)
        #expect(log.all == ["fetched", "commit", "saved"], "the fetch completed while the save's transaction was open")
        #expect(stack.coordinator.openReadConnections >= 1)
        // After the commit, a read sees the saved rows.
        #expect(try view.performAndWait { try fetchItems(view).map(\.id) } == [1, 2, 3, 100, 101])
    }

    @Test("§8 Connection pool: a fault of another context fires on a read connection while a save's transaction is open")
    func faultDoesNotWaitForTheWriter() throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let log = EventLog()
        let save = HeldSave()
        save.start(stack, inserting: 1, log: log)
        save.inTransaction.wait()
        let view = stack.context(name: "view")
        let price = try view.performAndWait { () throws -> Double in
            let item = try #require(view.object(with: ids[1]) as? Item)
            return item.price
        }
        log.add("faulted")
        save.release.signal()
        save.done.wait()
        #expect(price == 20)
        #expect(log.all == ["faulted", "commit", "saved"])
    }

    @Test("§8 Connection pool: connectionPoolMaxSize 1 keeps the serialized coordinator: a fetch during an open save waits for its commit and sees its rows")
    func poolOfOneSerializes() throws {
        var options = StoreOptions()
        options.connectionPoolMaxSize = 1
        let stack = try TestStack(options: options)
        #expect(stack.coordinator.connectionPoolSize == 1)
        try stack.seed(3)
        let log = EventLog()
        let save = HeldSave()
        save.start(stack, inserting: 2, log: log)
        save.inTransaction.wait()
        let view = stack.context(name: "view")
        let asking = DispatchSemaphore(value: 0)
        let fetchDone = DispatchSemaphore(value: 0)
        let fetched = EventLog()
        Thread {
            asking.signal()
            let ids = (try? view.performAndWait { try fetchItems(view).map(\.id) }) ?? []
            for id in ids { fetched.add("\(id)") }
            log.add("fetched")
            fetchDone.signal()
        }.start()
        asking.wait()
        log.add("released")
        save.release.signal()
        fetchDone.wait()
        save.done.wait()
        // Whenever the fetch reached the coordinator, it could not complete before the commit.
        #expect(fetched.all == ["1", "2", "3", "100", "101"])
        let events = log.all
        #expect(events.firstIndex(of: "commit")! < events.firstIndex(of: "fetched")!)
        #expect(stack.coordinator.openReadConnections == 0, "a pool of one opens no read connection")
    }

    @Test("§8: connectionPoolMaxSize comes from NSPersistentStoreConnectionPoolMaxSizeKey; 0 is refused naming the option")
    func poolSizeOption() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("og-pool-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var description = PersistentStoreDescription(url: directory.appendingPathComponent("a.sqlite"))
        description.setOption(2, forKey: PersistentStoreDescription.connectionPoolMaxSizeKey)
        #expect(description.storeOptions.connectionPoolMaxSize == 2)
        #expect(description.options[PersistentStoreDescription.connectionPoolMaxSizeKey] == "2")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeModel())
        try coordinator.addPersistentStore(with: description)
        #expect(coordinator.connectionPoolSize == 2)

        var bad = PersistentStoreDescription(url: directory.appendingPathComponent("b.sqlite"))
        bad.setOption(0, forKey: PersistentStoreDescription.connectionPoolMaxSizeKey)
        let other = PersistentStoreCoordinator(managedObjectModel: try makeModel())
        let error = #expect(throws: ObjectGraphError.self) { try other.addPersistentStore(with: bad) }
        #expect(error?.message.contains("NSPersistentStoreConnectionPoolMaxSizeKey") == true)
    }

    @Test("§8: a store in another journal mode has no read connections (a reader would wait for the writer's lock); reads go through the coordinator")
    func poolNeedsWAL() throws {
        var options = StoreOptions()
        options.pragmas["journal_mode"] = "DELETE"
        let stack = try TestStack(options: options)
        try stack.seed(2)
        let view = stack.context()
        #expect(try view.performAndWait { try fetchItems(view).count } == 2)
        #expect(stack.coordinator.openReadConnections == 0)
    }

    // MARK: The row cache with readers and the writer at once

    @Test("§2.3: a reader's row older than the writer's install leaves the writer's row, even at the same version; a later reader's row is taken")
    func readerSnapshotOlderThanWriterInstallIsRefused() throws {
        let stack = try TestStack()
        let id = try #require(try stack.seed(1).first)
        let cache = stack.coordinator.rowCache
        cache.retain(id)
        defer { cache.release(id) }
        let old = RowSnapshot(values: [.integer(1), .string("reader"), .double(10), .null, .bool(false), .null], version: 2)
        let saved = RowSnapshot(values: [.integer(1), .string("writer"), .double(20), .null, .bool(false), .null], version: 2)
        cache.reading { before in  // a reader starts ...
            cache.install([(id, saved)], retain: false)  // ... the writer installs its save ...
            cache.install([(id, old)], retain: false, snapshot: before)  // ... the reader's rows arrive
        }
        #expect(cache.version(of: id)?.row == saved)
        let newer = RowSnapshot(values: saved.values, version: 3)
        cache.reading { after in cache.install([(id, newer)], retain: false, snapshot: after) }
        #expect(cache.version(of: id)?.version == 3, "a read begun after the writer's install is taken")
    }

    @Test("§2.3: a row a save changed while no object held it is not cached from a read begun before the save")
    func readerSnapshotOlderThanUnheldWriteIsRefused() throws {
        let stack = try TestStack()
        let id = try #require(try stack.seed(1).first)
        let cache = stack.coordinator.rowCache
        let saved = RowSnapshot(values: [.integer(1), .string("writer"), .double(20), .null, .bool(false), .null], version: 3)
        let old = RowSnapshot(values: [.integer(1), .string("reader"), .double(10), .null, .bool(false), .null], version: 2)
        cache.reading { before in
            // The save's row is cached while an object holds it; the object goes away before the read's rows arrive.
            cache.retain(id)
            cache.install([(id, saved)], retain: false)
            cache.release(id)
            var fetched = [FetchEntry(id: id, row: old, retained: true)]
            cache.installRetaining(&fetched, snapshot: before)
            #expect(cache.version(of: id) == nil, "the row read before the save was cached")
            cache.release(id)
        }
        // With no read under way the record of the save is gone, and a new read caches what it reads.
        cache.reading { now in
            var fetched = [FetchEntry(id: id, row: saved, retained: true)]
            cache.installRetaining(&fetched, snapshot: now)
        }
        #expect(cache.version(of: id)?.version == 3)
        cache.release(id)
    }

    @Test("§2.3: a reader's row read before a delete does not bring the deleted row back into the cache")
    func readerSnapshotOlderThanDeleteIsRefused() throws {
        let stack = try TestStack()
        let id = try #require(try stack.seed(1).first)
        let cache = stack.coordinator.rowCache
        cache.retain(id)
        defer { cache.release(id) }
        try cache.reading { before in
            let row = try #require(try stack.coordinator.readStore { try $0.rows(of: id.entity, keys: [id.key]) }[id.key])
            cache.markDeleted([id])
            var fetched = [FetchEntry(id: id, row: row, retained: true)]
            cache.installRetaining(&fetched, snapshot: before)
            cache.release(id)
        }
        #expect(cache.version(of: id)?.version == 0, "the entry stays deleted")
        if case .deleted = cache.lookup(id, staleness: -1) {} else { Issue.record("a fault would see the deleted row again") }
    }

    @Test("§1.1, §2.3: readers on the pool and saves on one coordinator at once: no lost update, every save's value read back (TSan suite)")
    func readersAndWriterAtOnce() throws {
        let stack = try TestStack()
        let ids = try stack.seed(20)
        let rounds = 30
        let failures = EventLog()
        let group = DispatchGroup()
        // Two writers each own half of the items and raise their prices once per round.
        for w in 0..<2 {
            group.enter()
            let writer = stack.context(policy: .error, name: "writer\(w)")
            Thread {
                defer { group.leave() }
                do {
                    for _ in 0..<rounds {
                        try writer.performAndWait {
                            for (n, id) in ids.enumerated() where n % 2 == w {
                                let item = try #require(writer.existingObject(with: id) as? Item)
                                item.price += 1
                            }
                            try writer.save()
                        }
                    }
                } catch { failures.add("writer\(w): \(error)") }
            }.start()
        }
        // Three readers fetch and fault the same items meanwhile; prices only grow.
        for r in 0..<3 {
            group.enter()
            let reader = stack.context(name: "reader\(r)")
            reader.stalenessInterval = 0
            Thread {
                defer { group.leave() }
                do {
                    var last = [Double](repeating: 0, count: ids.count)
                    for _ in 0..<rounds {
                        try reader.performAndWait {
                            let items = try fetchItems(reader)
                            for (n, item) in items.enumerated() {
                                reader.refresh(item, mergeChanges: false)
                                if item.price < last[n] { failures.add("reader\(r) saw item \(n) go back") }
                                last[n] = item.price
                            }
                            reader.reset()
                        }
                    }
                } catch { failures.add("reader\(r): \(error)") }
            }.start()
        }
        group.wait()
        #expect(failures.all == [])
        let rows = try stack.sql("SELECT ZID, ZPRICE, Z_OPT FROM ZITEM ORDER BY ZID")
        for row in rows {
            let n = Int(row[0].int64!)
            #expect(row[1] == .real(Double(n * 10 + rounds)), "item \(n) lost an update")
            #expect(row[2].int64 == Int64(1 + rounds))
        }
        // What the cache holds for a saved row is the saved row.
        let check = stack.context()
        try check.performAndWait {
            for item in try fetchItems(check) { #expect(item.price == Double(Int(item.id) * 10 + rounds)) }
        }
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
        #expect(try QueryGenerationTests.prices(view) == [10, 25, 30], "the saved row had left the predicate when the batch ran")
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
