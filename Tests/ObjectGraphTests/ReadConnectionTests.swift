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
}
