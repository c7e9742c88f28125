import Foundation
import Testing
@testable import ObjectGraph

// The SQLite store as other tools see it (semantics §0, §1.1):
// the `sqlite3` command-line tool (installed by `make deps`) reads the Z tables and sees Z_OPT rise; a store
// refuses another model or a file that is not SQLite, naming the file and changing nothing. Helpers: `sl`.

/// Where the `sqlite3` CLI is, if installed.
let slSQLite3Path: String? = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3", "/bin/sqlite3"]
    .first { FileManager.default.isExecutableFile(atPath: $0) }

/// Runs the `sqlite3` CLI on `path` with `sql` and returns its standard output, trimmed.
func slCLI(_ path: String, _ sql: String) throws -> String {
    let cli = try #require(slSQLite3Path, "the sqlite3 command-line tool is missing: run `make deps`")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: cli)
    process.arguments = ["-batch", path, sql]
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    let errors = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "sqlite3 failed: \(String(decoding: errors, as: UTF8.self))")
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Size and modification date of every file of a store (main, -wal), by suffix. Read with stat only: opening
/// and closing a store file in this process would drop SQLite's POSIX locks on it (fcntl locks belong to the
/// process, and any close releases them), after which another process may checkpoint and delete the WAL.
func slFileStats(_ url: URL) -> [String: String] {
    var stats: [String: String] = [:]
    for suffix in ["", "-wal"] {
        if let a = try? FileManager.default.attributesOfItem(atPath: url.path + suffix) {
            stats[suffix] = "\(a[.size] ?? "?") \((a[.modificationDate] as? Date)?.timeIntervalSinceReferenceDate ?? 0)"
        }
    }
    return stats
}

@Suite struct StoreLayoutTests {

    // A store written by the tests opens in the sqlite3 CLI; semantics §0 (Z<ENTITY> tables
    // with Z_PK, Z_ENT, Z_OPT; Z_PRIMARYKEY; Z_METADATA; join tables; WAL) and §1.1 (Z_OPT starts at 1 and goes up
    // by one on every update).
    @Test func sqlite3CLIShowsZTablesAndRisingZOpt_1_1() throws {
        let stack = try TestStack()
        let path = stack.url.path
        let id = try stack.seed(3)[0]
        let pk = try #require(id.primaryKey)
        let tables = Set(try slCLI(path, "SELECT name FROM sqlite_master WHERE type = 'table'").split(separator: "\n").map(String.init))
        #expect(tables.isSuperset(of: ["ZITEM", "ZTAG", "ZLABEL", "Z_PRIMARYKEY", "Z_METADATA"]))
        let columns = try slCLI(path, "SELECT name FROM pragma_table_info('ZITEM')").split(separator: "\n").map(String.init)
        #expect(Array(columns.prefix(3)) == ["Z_PK", "Z_ENT", "Z_OPT"])
        #expect(columns.contains("ZNAME") && columns.contains("ZPRICE") && columns.contains("ZTAG"))
        #expect(try slCLI(path, "PRAGMA journal_mode") == "wal")
        #expect(try slCLI(path, "SELECT Z_HASH FROM Z_METADATA") == stack.model.versionHash)
        let itemEnt = try #require(stack.model.entity(named: "Item")).entityNumber
        #expect(tables.contains("Z_\(itemEnt)LABELS"))  // the many-to-many join table (Item.labels ↔ Label.items)
        #expect(try slCLI(path, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Item'") == "3")
        #expect(try slCLI(path, "SELECT DISTINCT Z_ENT FROM ZITEM") == "\(itemEnt)")

        func zopt() throws -> String { try slCLI(path, "SELECT Z_OPT FROM ZITEM WHERE Z_PK = \(pk)") }
        #expect(try zopt() == "1")
        let ctx = stack.context()
        for (n, price) in [111.0, 222.0, 333.0].enumerated() {
            try ctx.performAndWait {
                let item = try #require(try ctx.existingObject(with: id) as? Item)
                item.price = price
                try ctx.save()
            }
            #expect(try zopt() == "\(n + 2)")
            #expect(try slCLI(path, "SELECT ZPRICE FROM ZITEM WHERE Z_PK = \(pk)") == "\(price)")
        }
        // Rows nobody touched keep version 1.
        #expect(try slCLI(path, "SELECT group_concat(Z_OPT) FROM ZITEM WHERE Z_PK != \(pk)") == "1,1")
    }

    // Pragmas as store options (semantics §8 "NSSQLitePragmasOption … journal_mode DELETE switches
    // back"): the journal mode option reaches the file.
    @Test func pragmaOptionSetsJournalMode_8() throws {
        var options = StoreOptions()
        options.pragmas = ["journal_mode": "DELETE"]
        let stack = try TestStack(options: options)
        try stack.seed(1)
        #expect(try slCLI(stack.url.path, "PRAGMA journal_mode") == "delete")
    }

    // "Bad input" (a model that does not match the store): opening a store with a model of
    // another version hash fails with 134100 naming the store, and changes nothing: the files' sizes and dates,
    // the metadata and the rows are as before, and the first coordinator keeps working.
    @Test func modelHashMismatchChangesNothing() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let dumpBefore = try slCLI(stack.url.path, ".dump")
        let filesBefore = slFileStats(stack.url)
        let other = try mdAllTypesModel()
        #expect(other.versionHash != stack.model.versionHash)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: other, name: "other model")
        let error = #expect(throws: ObjectGraphError.self) {
            try coordinator.addPersistentStore(type: .sqlite, at: stack.url)
        }
        #expect(error?.code == .persistentStoreIncompatibleVersionHash)
        #expect(error?.code.rawValue == 134100)
        #expect(error?.storePath == stack.url.path)
        #expect(error.map { String(describing: $0).contains(stack.url.path) } == true)
        #expect(coordinator.storeURL == nil)
        #expect(slFileStats(stack.url) == filesBefore)
        #expect(try slCLI(stack.url.path, ".dump") == dumpBefore)
        // The right model still opens it, and the first coordinator still saves.
        let reader = stack.context(try stack.secondCoordinator())
        #expect(try reader.performAndWait { try fetchItems(reader).count } == 2)
        let ctx = stack.context()
        try ctx.performAndWait {
            let item = Item(context: ctx)
            item.id = 50
            try ctx.save()
        }
        #expect(try slCLI(stack.url.path, "SELECT group_concat(ZID) FROM ZITEM") == "1,2,50")
    }

    // "Bad input" (a store file that is not SQLite): 134000 naming the file; the file is left as it was.
    @Test func fileThatIsNotSQLiteIsRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("og-notsqlite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("notes.sqlite")
        let text = Data(String(repeating: "these are my notes, not a database\n", count: 200).utf8)
        try text.write(to: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeModel(), name: "not sqlite")
        let error = #expect(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: .sqlite, at: url) }
        #expect(error?.code == .persistentStoreInvalidType)
        #expect(error?.code.rawValue == 134000)
        #expect(error?.storePath == url.path)
        #expect(error.map { String(describing: $0).contains(url.path) } == true)
        #expect(FileManager.default.contents(atPath: url.path) == text)
        #expect(coordinator.storeURL == nil)
    }

    // Found by input fuzzing: an SQLite database that is not a store of ours is refused
    // (134020) and left byte for byte as it was: its journal mode is not switched to WAL, and no -wal or -shm file
    // appears. Before, the pragmas ran before the refusal.
    @Test func foreignSQLiteFileIsLeftUnchanged_21() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("og-foreign-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("other.sqlite")
        _ = try slCLI(url.path, "CREATE TABLE contacts(name TEXT); INSERT INTO contacts VALUES ('Ada'), ('Grace');")
        #expect(try slCLI(url.path, "PRAGMA journal_mode") == "delete")
        let before = try #require(FileManager.default.contents(atPath: url.path))
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeModel(), name: "foreign")
        let error = #expect(throws: ObjectGraphError.self) { try coordinator.addPersistentStore(type: .sqlite, at: url) }
        #expect(error?.code == .persistentStoreIncompatibleSchema)
        #expect(error?.storePath == url.path)
        #expect(FileManager.default.contents(atPath: url.path) == before)
        #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: url.path + "-shm"))
        #expect(try slCLI(url.path, "PRAGMA journal_mode") == "delete")
        // A store of ours in DELETE mode opened with another model is refused before its pragmas run too.
        var options = StoreOptions()
        options.pragmas = ["journal_mode": "DELETE"]
        let stack = try TestStack(options: options)
        try stack.seed(1)
        let other = PersistentStoreCoordinator(managedObjectModel: try mdAllTypesModel(), name: "other model")
        #expect(throws: ObjectGraphError.self) { try other.addPersistentStore(type: .sqlite, at: stack.url) }
        #expect(try slCLI(stack.url.path, "PRAGMA journal_mode") == "delete")
    }
}

// MARK: A to-many relationship that is its own inverse

final class Pal: ManagedObject {
    @Managed("name") var name: String?
    @Managed("friends") var friends: Set<Pal>
}

/// `Pal.friends` is its own inverse (a reflexive many-to-many), with `rule` on delete.
func slPalModel(_ rule: DeleteRule) throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [
        EntityDescription(
            name: "Pal", managedObjectClass: Pal.self,
            attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [RelationshipDescription(name: "friends", destination: "Pal", inverse: "friends", toMany: true, deleteRule: rule)]),
    ])
}

extension StoreLayoutTests {
    /// Names of the store's pals, sorted.
    private func palNames(_ ctx: ManagedObjectContext, _ predicate: ObjectPredicate? = nil) throws -> [String] {
        try ctx.fetch(FetchRequest(entityName: "Pal", predicate: predicate), as: Pal.self).compactMap(\.name).sorted()
    }

    // Bug found by input fuzzing: a relationship that is its own inverse validated, but the
    // store could not be created ("duplicate column name": both join columns were Z_1FRIENDS). Core Data names the
    // join table's columns apart (Z_1FRIENDS and Z_1FRIENDS1); each side's membership is a row of its own, so a
    // fault of either side reads it with one SELECT on one column (semantics §0 storage layout, §4 faults).
    @Test("A reflexive many-to-many (its own inverse) creates its store, saves, fetches and faults both sides",
          arguments: [PersistentStoreType.sqlite, .inMemory])
    func selfInverseToManyRoundTrips(type: PersistentStoreType) throws {
        let stack = try TestStack(model: try slPalModel(.nullify), type: type)
        let ctx = stack.context()
        let ids = try ctx.performAndWait {
            let ann = Pal(context: ctx), bob = Pal(context: ctx), cat = Pal(context: ctx)
            (ann.name, bob.name, cat.name) = ("ann", "bob", "cat")
            ann.friends = [bob, cat]
            // Inverse maintenance of a self-inverse relationship: bob and cat list ann at once.
            #expect(bob.friends.map(\.name) == ["ann"] && cat.friends.map(\.name) == ["ann"])
            try ctx.save()
            return [ann, bob, cat].map(\.objectID)
        }
        if type == .sqlite {
            let ent = try #require(stack.model.entity(named: "Pal")).entityNumber
            let columns = try stack.sql("SELECT name FROM pragma_table_info('Z_\(ent)FRIENDS') ORDER BY cid").map { $0[0] }
            #expect(columns == [.text("Z_\(ent)FRIENDS"), .text("Z_\(ent)FRIENDS1")])
            #expect(try stack.sql("SELECT COUNT(*) FROM Z_\(ent)FRIENDS") == [[.integer(4)]])  // ann→bob, ann→cat, bob→ann, cat→ann
        }
        // A fresh context faults each side in from the store.
        let reader = stack.context()
        try reader.performAndWait {
            let ann = try #require(try reader.existingObject(with: ids[0]) as? Pal)
            let bob = try #require(try reader.existingObject(with: ids[1]) as? Pal)
            #expect(ann.friends.compactMap(\.name).sorted() == ["bob", "cat"])
            #expect(bob.friends.compactMap(\.name) == ["ann"])
            // SQL (ANY through the join table) and memory agree on both sides.
            #expect(try palNames(reader, try ObjectPredicate(format: "ANY friends.name == %@", "ann")) == ["bob", "cat"])
            #expect(try palNames(reader, try ObjectPredicate(format: "ANY friends.name == %@", "bob")) == ["ann"])
            #expect(try palNames(reader, try ObjectPredicate(format: "friends.@count == 0")) == [])
            // Removing from one side removes it from the other, and the store keeps that.
            let cat = try #require(try reader.existingObject(with: ids[2]) as? Pal)
            cat.friends = []
            #expect(ann.friends.compactMap(\.name) == ["bob"])
            try reader.save()
        }
        let third = stack.context()
        try third.performAndWait {
            let ann = try #require(try third.existingObject(with: ids[0]) as? Pal)
            let cat = try #require(try third.existingObject(with: ids[2]) as? Pal)
            #expect(ann.friends.compactMap(\.name) == ["bob"])
            #expect(cat.friends.isEmpty)
        }
        if type == .sqlite {
            let ent = try #require(stack.model.entity(named: "Pal")).entityNumber
            #expect(try stack.sql("SELECT COUNT(*) FROM Z_\(ent)FRIENDS") == [[.integer(2)]])
        }
    }

    // Deleting one side of a reflexive many-to-many nullifies (or cascades to) the other side,
    // in the context, in the join table (no row keeps the deleted key in either column) and for a batch delete.
    @Test("Deleting a pal nullifies or cascades both sides of a reflexive many-to-many",
          arguments: [DeleteRule.nullify, .cascade])
    func selfInverseToManyDeleteRules(rule: DeleteRule) throws {
        let stack = try TestStack(model: try slPalModel(rule))
        let ent = try #require(stack.model.entity(named: "Pal")).entityNumber
        let ctx = stack.context()
        let ids = try ctx.performAndWait {
            let pals = ["ann", "bob", "cat", "dan"].map { name in let p = Pal(context: ctx); p.name = name; return p }
            pals[0].friends = [pals[1]]  // ann – bob; cat – dan apart
            pals[2].friends = [pals[3]]
            try ctx.save()
            return pals.map(\.objectID)
        }
        let editor = stack.context()
        try editor.performAndWait {
            let ann = try editor.existingObject(with: ids[0])
            editor.delete(ann)
            try editor.save()
            let expected = rule == .cascade ? ["cat", "dan"] : ["bob", "cat", "dan"]
            #expect(try palNames(editor) == expected)
            if rule == .nullify {
                let bob = try #require(try editor.existingObject(with: ids[1]) as? Pal)
                #expect(bob.friends.isEmpty)
            }
        }
        #expect(try stack.sql("SELECT Z_\(ent)FRIENDS, Z_\(ent)FRIENDS1 FROM Z_\(ent)FRIENDS ORDER BY 1")
                == [[.integer(ids[2].primaryKey!), .integer(ids[3].primaryKey!)], [.integer(ids[3].primaryKey!), .integer(ids[2].primaryKey!)]])
        // A batch delete (no context, no delete propagation in the graph) leaves no row naming cat in either column.
        try editor.performAndWait { _ = try editor.execute(BatchDeleteRequest(objectIDs: [ids[2]])) }
        #expect(try stack.sql("SELECT COUNT(*) FROM Z_\(ent)FRIENDS") == [[.integer(0)]])
    }
}
