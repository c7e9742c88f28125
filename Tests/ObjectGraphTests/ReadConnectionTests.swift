import Foundation
import Testing
@testable import ObjectGraph

/// The read connections of an SQLite store's pool (Docs/coredata-behaviour.md §8 "Concurrency", semantics §8
/// "Connection pool"): what a reader is set up with, when it is closed, and where the pool option applies.
@Suite struct ReadConnectionTests {
    /// `PRAGMA name` as one reader of the pool answers it (the hook: a read held on a reader of `coordinator`).
    static func readerAnswer(_ coordinator: PersistentStoreCoordinator, _ pragma: String) throws -> SQLiteValue? {
        let pool = try #require(coordinator.readerPool, "the store has read connections")
        let answer = try pool.withReader(capacity: 1) { try $0.connection.query("PRAGMA \(pragma)").first?.first }
        return try #require(answer, "a reader opened")
    }

    /// `PRAGMA name` as the writer answers it.
    static func writerAnswer(_ coordinator: PersistentStoreCoordinator, _ pragma: String) throws -> SQLiteValue? {
        try coordinator.withStore { store in try #require(store as? SQLiteStore).connection.query("PRAGMA \(pragma)").first?.first }
    }

    @Test("Docs §8 (read connections): a reader runs the store's per-connection pragmas as the writer does: cache_size, busy_timeout and mmap_size read back the same on a reader")
    func readersGetTheWritersPragmas() throws {
        var options = StoreOptions()
        options.pragmas = ["cache_size": "-1234", "busy_timeout": "4321", "mmap_size": "65536"]
        let stack = try TestStack(options: options)
        #expect(try Self.readerAnswer(stack.coordinator, "cache_size") == .integer(-1234))
        #expect(try Self.readerAnswer(stack.coordinator, "busy_timeout") == .integer(4321))
        #expect(try Self.writerAnswer(stack.coordinator, "cache_size") == .integer(-1234))
        // mmap_size answers what this SQLite's build allows (0 without memory maps): whatever it is, the same.
        #expect(try Self.readerAnswer(stack.coordinator, "mmap_size") == Self.writerAnswer(stack.coordinator, "mmap_size"))
        #expect(stack.coordinator.openReadConnections == 1)

        // Without the option a reader keeps SQLite's own default: the hook reads the reader, not the writer.
        let plain = try TestStack()
        #expect(try Self.readerAnswer(plain.coordinator, "cache_size") == .integer(-2000))
        #expect(try Self.readerAnswer(plain.coordinator, "busy_timeout") == .integer(5000), "the busy-timeout option (5 s)")
    }

    @Test("Docs §8 (read connections): a pragma that sets the file (user_version) runs on the writer only: a read-only reader still opens and reads the file's value")
    func filePragmasStayOnTheWriter() throws {
        var options = StoreOptions()
        options.pragmas = ["user_version": "7", "cache_size": "-999"]
        let stack = try TestStack(options: options)
        #expect(try Self.readerAnswer(stack.coordinator, "user_version") == .integer(7))
        #expect(try Self.readerAnswer(stack.coordinator, "cache_size") == .integer(-999))
        #expect(stack.coordinator.openReadConnections == 1)
        try stack.seed(2)
        let view = stack.context()
        #expect(try view.performAndWait { try fetchItems(view).count } == 2)
    }

    @Test("Docs §8 (read connections): a pool made smaller closes its idle readers beyond the new size at once, and the held ones beyond it as they are given back; a pool of 1 keeps none")
    func shrinkingThePoolClosesReaders() throws {
        let stack = try TestStack()
        let coordinator = stack.coordinator
        let path = stack.url.path
        let pool = try #require(coordinator.readerPool)
        /// Three readers held at once (nested reads on this thread); `inside` runs while they are.
        func holdThree(_ inside: () -> Void) throws {
            try pool.withReader(capacity: 3) { _ in try pool.withReader(capacity: 3) { _ in try pool.withReader(capacity: 3) { _ in inside() } } }
        }
        try holdThree {}
        #expect(coordinator.openReadConnections == 3)
        #expect(SQLiteConnection.openConnections(path: path) == 4, "the writer and three idle readers")
        coordinator.connectionPoolSize = 2
        #expect(coordinator.openReadConnections == 1, "one reader beside the writer")
        #expect(SQLiteConnection.openConnections(path: path) == 2)

        coordinator.connectionPoolSize = 4
        try holdThree { coordinator.connectionPoolSize = 1 }
        #expect(coordinator.openReadConnections == 0, "readers held while the pool shrank close as they are given back")
        #expect(SQLiteConnection.openConnections(path: path) == 1, "the writer alone")
        let view = stack.context()
        #expect(try view.performAndWait { try fetchItems(view).count } == 0)
        #expect(coordinator.openReadConnections == 0, "a pool of 1 reads on the writer")
    }

    @Test("Docs §8 (read connections): when its coordinator goes, a store closes its writer and every reader: idle, and one a pinned context's query generation held (§3.7)")
    func releasingTheCoordinatorClosesEveryConnection() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("og-readers-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("store.sqlite")
        try {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeModel())
            try coordinator.addPersistentStore(type: .sqlite, at: url)
            let pool = try #require(coordinator.readerPool)
            try pool.withReader(capacity: 3) { _ in try pool.withReader(capacity: 3) { _ in } }
            let pinned = ManagedObjectContext(concurrencyType: .privateQueue)
            pinned.persistentStoreCoordinator = coordinator
            try pinned.performAndWait {
                try pinned.setQueryGenerationFrom(.current)
                _ = try fetchItems(pinned)
            }
            #expect(coordinator.openReadConnections == 1, "one idle reader left in the pool; the generation took the other")
            #expect(SQLiteConnection.openConnections(path: url.path) == 3)
        }()
        #expect(SQLiteConnection.openConnections(path: url.path) == 0)
    }

    @Test("Docs §8 (read connections): connectionPoolMaxSize sizes the pool of a store that serves requests concurrently; an in-memory store has none: it takes any value (0 too) without error, keeps the coordinator's pool size and opens no reader",
          arguments: [0, 1, 8])
    func inMemoryStoreIgnoresThePoolOption(size: Int) throws {
        var options = StoreOptions()
        options.connectionPoolMaxSize = size
        let stack = try TestStack(type: .inMemory, options: options)
        #expect(stack.coordinator.connectionPoolSize == PersistentStoreCoordinator.defaultConnectionPoolSize)
        #expect(stack.coordinator.readerPool == nil && stack.coordinator.openReadConnections == 0)
        try stack.seed(2)
        let view = stack.context()
        #expect(try view.performAndWait { try fetchItems(view).count } == 2)

        // Core Data's key on a description, as a container passes it.
        var description = PersistentStoreDescription()
        description.type = .inMemory
        description.setOption(size, forKey: PersistentStoreDescription.connectionPoolMaxSizeKey)
        let other = PersistentStoreCoordinator(managedObjectModel: try makeModel())
        try other.addPersistentStore(with: description)
        #expect(other.connectionPoolSize == PersistentStoreCoordinator.defaultConnectionPoolSize)
        #expect(other.storeType == .inMemory)
    }

    @Test("Docs §8 (read connections, query generations §3.7): a closed pool gives no generation a reader: no connection opens to the file after the store closed")
    func closedPoolDetachesNoReader() throws {
        let stack = try TestStack()
        let pool = try #require(stack.coordinator.readerPool)
        _ = try Self.readerAnswer(stack.coordinator, "cache_size")
        let path = try #require(stack.coordinator.withStore { ($0 as? SQLiteStore)?.url?.path })
        let before = SQLiteConnection.openConnections(path: path)
        pool.close()
        #expect(throws: ObjectGraphError.self) { _ = try pool.detach() }
        #expect(SQLiteConnection.openConnections(path: path) <= before, "no reader was opened for the generation")
    }
}
