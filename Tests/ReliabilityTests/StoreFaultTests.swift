import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph

/// Store faults: each gives a clear error naming the store, a failed save leaves the context's
/// changes in place so it can be retried (semantics §2: a failed save changes nothing), and nothing already
/// saved is lost.
@Suite struct StoreFaultTests {
    /// Saves `ids` through a new importer context and returns the context.
    @discardableResult
    static func importNotes(_ ids: ClosedRange<Int>, into container: AmbarContainer, bodyBytes: Int = 0) throws -> ManagedObjectContext {
        let context = container.importerContext()
        try context.performAndWait {
            try insertNotes(ids, in: context, bodyBytes: bodyBytes)
            try context.save()
        }
        return context
    }

    static func expectNamesStore(_ error: ObjectGraphError, _ path: String, _ code: ObjectGraphError.Code, fault: String) {
        print("store fault \(fault): \(error)")
        #expect(error.code == code, "\(error)")
        #expect(error.storePath == path)
        #expect(error.description.contains(path))
    }

    @Test func notAnSQLiteFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.url.appendingPathComponent("Notes.sqlite").path
        let garbage = Data(String(repeating: "this is not a database\n", count: 200).utf8)
        _ = FileManager.default.createFile(atPath: path, contents: garbage)
        let error = try #require(throws: ObjectGraphError.self) { try NotesStack(directory: directory) }
        Self.expectNamesStore(error, path, .persistentStoreInvalidType, fault: "non-SQLite file")
        #expect(FileManager.default.contents(atPath: path) == garbage)
    }

    /// A store cut short or overwritten in the middle: opening or the first read fails with 134000 naming it.
    @Test(arguments: ["truncated", "corrupt"]) func damagedStore(_ damage: String) throws {
        let directory = try TemporaryDirectory()
        var path = ""
        do {
            let stack = try NotesStack(directory: directory)
            path = stack.storePath
            try Self.importNotes(1...400, into: stack.container, bodyBytes: 300)
            stack.main.sync {}  // the pending smart merge holds the view context (and its coordinator)
        }  // released: the last connection checkpoints the WAL into the file
        let file = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        let size = try file.seekToEnd()
        #expect(size > 16 * 4096)
        if damage == "truncated" {
            try file.truncate(atOffset: size / 2)
        } else {
            try file.seek(toOffset: 4096 * 2)
            try file.write(contentsOf: Data((0..<(4096 * 8)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 13) }))
        }
        try file.close()
        let error: ObjectGraphError
        do {
            let stack = try NotesStack(directory: directory)
            let context = stack.container.importerContext()
            error = try #require(throws: ObjectGraphError.self) {
                try context.performAndWait {
                    var request = FetchRequest(entityName: "Note")
                    request.returnsObjectsAsFaults = false
                    _ = try context.fetch(request)
                    try insertNotes(1000...1010, in: context)
                    try context.save()
                }
            }
        } catch let opening as ObjectGraphError {
            error = opening
        }
        Self.expectNamesStore(error, path, .persistentStoreInvalidType, fault: "\(damage) store")
    }

    @Test func storeOfAnotherModel() throws {
        let directory = try TemporaryDirectory()
        let stack = try NotesStack(directory: directory)
        let path = stack.storePath
        try Self.importNotes(1...20, into: stack.container)
        let before = try #require(FileManager.default.contents(atPath: path))
        let other = try ManagedObjectModel(entities: [
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "id", type: .string)]),
        ])
        let error = try #require(throws: ObjectGraphError.self) {
            try AmbarContainer(model: other, storeURL: URL(fileURLWithPath: path))
        }
        Self.expectNamesStore(error, path, .persistentStoreIncompatibleVersionHash, fault: "another model")
        #expect(FileManager.default.contents(atPath: path) == before)
        #expect(try storedNoteIDs(path) == Array(1...20))
    }

    /// Root ignores directory permissions, so the probe (the `ambar-crash` tool) drops to uid 65534 first.
    @Test func readOnlyDirectory() throws {
        let directory = try TemporaryDirectory()
        let dir = directory.url.path
        let first = try CrashTests.run(["probe", "--directory", dir])
        #expect(first.status == 0, "\(first.output)\(first.errors)")
        let store = directory.url.appendingPathComponent("crash.sqlite").path
        // As root, the files go to uid 65534, which then finds only the directory read-only.
        let root = getuid() == 0
        if root {
            for path in [dir, store] { try FileManager.default.setAttributes([.ownerAccountID: 65534, .groupOwnerAccountID: 65534], ofItemAtPath: path) }
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: dir)
        let refused = try CrashTests.run(["probe", "--directory", dir] + (root ? ["--uid", "65534"] : []))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: dir)
        print("store fault read-only directory: \(refused.output)")
        #expect(refused.status == 2, "\(refused.output)\(refused.errors)")
        #expect(refused.output.contains("error 1340"))
        #expect(refused.output.contains("store \(store)"))
        // Nothing was lost, and the store works again once the directory is writable.
        let again = try CrashTests.run(["probe", "--directory", dir])
        #expect(again.status == 0, "\(again.output)\(again.errors)")
        let connection = try SQLiteConnection(path: store, busyTimeout: 5)
        #expect(try connection.query("SELECT ZSAVES FROM ZLEDGER").first?[0].int64 == 2)
    }

    /// A full disk, simulated with `PRAGMA max_page_count` (``StoreOptions/pragmas``).
    @Test func fullDisk() throws {
        let directory = try TemporaryDirectory()
        var path = ""
        do {
            let stack = try NotesStack(directory: directory)
            path = stack.storePath
            try Self.importNotes(1...50, into: stack.container, bodyBytes: 100)
            stack.main.sync {}
        }
        let pages = try SQLiteConnection(path: path, busyTimeout: 5).query("PRAGMA page_count").first?[0].int64 ?? 0
        var options = StoreOptions()
        options.pragmas["max_page_count"] = String(pages + 2)
        let stack = try NotesStack(directory: directory, storeOptions: options)
        let context = stack.container.importerContext()
        let error = try #require(throws: ObjectGraphError.self) {
            try context.performAndWait {
                try insertNotes(51...150, in: context, bodyBytes: 1000)
                try context.save()
            }
        }
        Self.expectNamesStore(error, path, .persistentStoreSave, fault: "full disk")
        // The context keeps its changes; nothing saved before is lost, nothing of the failed save is there.
        #expect(context.performAndWait { context.insertedObjects.count } == 100)
        #expect(try storedNoteIDs(path) == Array(1...50))
        // Space is freed (the limit raised, as an operator would), and the same save goes through.
        try stack.container.writerCoordinator.withStore { store in
            try (store as! SQLiteStore).connection.execute("PRAGMA max_page_count = 1000000")
        }
        try context.performAndWait { try context.save() }
        #expect(context.performAndWait { context.hasChanges } == false)
        #expect(try storedNoteIDs(path) == Array(1...150))
    }

    /// Another connection holds the write lock past the busy timeout.
    @Test func lockedPastTheBusyTimeout() throws {
        var options = StoreOptions()
        options.busyTimeout = 0.2
        let stack = try NotesStack(storeOptions: options)
        try Self.importNotes(1...10, into: stack.container)
        let blocker = try SQLiteConnection(path: stack.storePath, busyTimeout: 0)
        try blocker.execute("BEGIN IMMEDIATE")
        let context = stack.container.importerContext()
        let error = try #require(throws: ObjectGraphError.self) {
            try context.performAndWait {
                try insertNotes(11...20, in: context)
                try context.save()
            }
        }
        Self.expectNamesStore(error, stack.storePath, .persistentStoreTimeout, fault: "locked database")
        #expect(context.performAndWait { context.insertedObjects.count } == 10)
        try blocker.execute("COMMIT")
        try context.performAndWait { try context.save() }
        #expect(try storedNoteIDs(stack.storePath) == Array(1...20))
    }
}
