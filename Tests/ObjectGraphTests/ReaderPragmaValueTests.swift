import Foundation
import Testing
@testable import ObjectGraph

/// A pragma of the store's options is one setting (Docs/coredata-behaviour.md §8 "Concurrency", semantics §8
/// "Connection pool"): the writer runs `PRAGMA name = value` and every reader of the pool runs the same statement as
/// it opens. A value that carries SQL after it (`-1234; PRAGMA cache_size = -77`) is bad input: the writer compiled
/// the first statement only and left the rest unrun, while a reader ran all of it, so readers read with settings
/// the writer never had, or (when the rest fails on a read-only connection) no reader opened and every read fell
/// back to the writer, each one trying again to open a reader. Now such a value is refused when the store opens,
/// with an error naming the pragma, before any pragma touches the file.
@Suite struct ReaderPragmaValueTests {
    static func store(_ name: String) -> (directory: URL, url: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("og-pragma-\(name)-\(UUID().uuidString)")
        return (directory, directory.appendingPathComponent("store.sqlite"))
    }

    @Test("§8: a pragma value holding a second statement is refused at open, naming the pragma; the store file is left as it was",
          arguments: ["-1234; PRAGMA cache_size = -77", "-1234; nonsense", "NORMAL; PRAGMA query_only = 1", "'a';'b'", "1 /* x */ ; 2"])
    func valueWithMoreSQLIsRefused(value: String) throws {
        let (directory, url) = Self.store("refused")
        defer { try? FileManager.default.removeItem(at: directory) }
        // A store made and closed first: its bytes are compared after the refused open.
        try {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeModel())
            try coordinator.addPersistentStore(type: .sqlite, at: url, options: {
                var o = StoreOptions()
                o.pragmas = ["journal_mode": "DELETE"]
                return o
            }())
        }()
        let before = try Data(contentsOf: url)

        var options = StoreOptions()
        // Sorted by name the pragmas run auto_vacuum, journal_mode, synchronous: the bad one comes last, after two
        // that would change the file (journal_mode WAL, and auto_vacuum on the next VACUUM).
        options.pragmas = ["auto_vacuum": "FULL", "synchronous": value]
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeModel())
        let error = try #require(throws: ObjectGraphError.self) {
            try coordinator.addPersistentStore(type: .sqlite, at: url, options: options)
        }
        #expect(error.code == .persistentStoreOpen)
        #expect(error.message.contains("synchronous"), "the error names the pragma: \(error.message)")
        #expect(error.storePath == url.path)
        #expect(try Data(contentsOf: url) == before, "no pragma ran: the file is still in DELETE mode, byte for byte")
        #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"))
    }

    @Test("§8: a value with a semicolon inside a quoted string or a comment, or with trailing semicolons, is one statement and is taken; the readers get it as the writer does")
    func quotedSemicolonIsOneValue() throws {
        var options = StoreOptions()
        options.pragmas = ["cache_size": "-1234 /* KiB; */ -- negative: kibibytes; not a statement", "application_id": "'12;34' ;; ", "synchronous": "NORMAL;"]
        // application_id = '12;34' is a string SQLite converts to a number (12): one statement, whatever it sets.
        let stack = try TestStack(options: options)
        #expect(try ReadConnectionTests.readerAnswer(stack.coordinator, "cache_size") == .integer(-1234))
        #expect(try ReadConnectionTests.writerAnswer(stack.coordinator, "cache_size") == .integer(-1234))
        #expect(try ReadConnectionTests.writerAnswer(stack.coordinator, "application_id") == .integer(12))
        #expect(stack.coordinator.openReadConnections == 1)
    }

    @Test("§8: a pragma's name is case-insensitive as SQLite's: JOURNAL_MODE = DELETE replaces the default WAL (no readers then), and one pragma named twice is refused, naming both")
    func pragmaNamesIgnoreCase() throws {
        var options = StoreOptions()
        options.pragmas = ["JOURNAL_MODE": "DELETE", "Cache_Size": "-321"]
        let stack = try TestStack(options: options)
        #expect(try ReadConnectionTests.writerAnswer(stack.coordinator, "journal_mode") == .text("delete"))
        #expect(try ReadConnectionTests.writerAnswer(stack.coordinator, "cache_size") == .integer(-321))
        #expect(stack.coordinator.readerPool == nil, "a file not in WAL mode has no read connections")

        let (directory, url) = Self.store("twice")
        defer { try? FileManager.default.removeItem(at: directory) }
        options.pragmas = ["cache_size": "-100", "CACHE_SIZE": "-200"]
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeModel())
        let error = try #require(throws: ObjectGraphError.self) {
            try coordinator.addPersistentStore(type: .sqlite, at: url, options: options)
        }
        #expect(error.code == .persistentStoreOpen)
        #expect(error.message.contains("CACHE_SIZE") && error.message.contains("cache_size"), "\(error.message)")
    }
}
