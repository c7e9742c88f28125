import Foundation
import Testing
@testable import ObjectGraph

/// Indexed attributes and fetch indexes (Docs/coredata-behaviour.md §4.1): created as SQLite indexes, refused when
/// they cannot be, carried by a migration, and what they change in the rows SQLite examines, read from its own
/// statement counters (Docs/what-the-workbench-counts.md "Rows examined").
@Suite struct IndexTests {
    static let rows = 1_000

    /// Reading: code (0..<100, 10 rows each), a (0..<10), b (0..<7), note; indexed as asked.
    static func model(codeIndexed: Bool = false, fetchIndexes: [FetchIndexDescription] = [], extra: [AttributeDescription] = [],
                      modifier: String? = nil, version: String? = nil, previous: [ManagedObjectModel] = []) throws -> ManagedObjectModel {
        let reading = EntityDescription(name: "Reading", attributes: [
            AttributeDescription(name: "code", type: .integer64, isIndexed: codeIndexed),
            AttributeDescription(name: "a", type: .integer64),
            AttributeDescription(name: "b", type: .integer64),
            AttributeDescription(name: "note", type: .string),
        ] + extra, fetchIndexes: fetchIndexes)
        reading.versionHashModifier = modifier
        return try ManagedObjectModel(entities: [reading], versionName: version, previousVersions: previous)
    }

    static let byAB = FetchIndexDescription(name: "byAB", elements: [.init(property: "a"), .init(property: "b", ascending: false)])

    /// A store of `rows` readings.
    static func stack(_ model: ManagedObjectModel, options: StoreOptions = StoreOptions()) throws -> TestStack {
        let stack = try TestStack(model: model, options: options)
        let ctx = stack.context()
        try ctx.performAndWait {
            for i in 0..<rows {
                let reading = ManagedObject(entity: model.entity(named: "Reading")!, insertInto: ctx)
                try reading.setValue(Int64(i % 100), forKey: "code")
                try reading.setValue(Int64(i % 10), forKey: "a")
                try reading.setValue(Int64(i % 7), forKey: "b")
                try reading.setValue("note \(rows - i)", forKey: "note")
            }
            try ctx.save()
        }
        return stack
    }

    /// What SQLite examined, sorted and returned for `body`, run on a counting thread.
    struct Examined: Equatable {
        var rowsExamined = 0, sorts = 0, autoIndexRows = 0, rowsFetched = 0
    }

    static func examined(_ body: () throws -> Void) rethrows -> Examined {
        let counting = ExecutionThread.countingOnly()
        ExecutionThread.install(counting)
        defer { ExecutionThread.install(nil) }
        try body()
        func n(_ op: CostedOperation) -> Int { counting.counts[op.rawValue] }
        return Examined(rowsExamined: n(.rowExamined), sorts: n(.sortPerformed), autoIndexRows: n(.autoIndexRow), rowsFetched: n(.rowFetched))
    }

    static func fetch(_ stack: TestStack, _ format: String, sort: [ObjectSortDescriptor] = []) throws -> Examined {
        let ctx = stack.context()
        let request = FetchRequest(entityName: "Reading", predicate: try ObjectPredicate(format: format), sortDescriptors: sort)
        return try examined { _ = try ctx.performAndWait { try ctx.fetch(request) } }
    }

    /// The SQL of the store's indexes on ZREADING that the model asked for, by name.
    static func indexes(_ url: URL) throws -> [String: String] {
        let db = try SQLiteConnection(path: url.path, readOnly: true, busyTimeout: 1)
        var result: [String: String] = [:]
        for row in try db.query("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ZREADING' AND sql IS NOT NULL") {
            result[row[0].string!] = row[1].string!
        }
        return result
    }

    // Docs/coredata-behaviour.md §4.1: a predicate on an attribute no index leads with makes SQLite step through
    // every row of the table (a scan of n rows is n − 1 steps: the first row is where the scan starts).
    @Test("A fetch by an unindexed attribute examines every row")
    func unindexedFetchExaminesEveryRow() throws {
        let stack = try Self.stack(try Self.model())
        #expect(try Self.fetch(stack, "code == 7") == Examined(rowsExamined: Self.rows - 1, rowsFetched: 10))
        // A count and a batch update by the same predicate go through the same rows.
        let ctx = stack.context()
        var matches = 0
        let counted = try Self.examined { matches = try ctx.performAndWait { try ctx.count(for: FetchRequest(entityName: "Reading", predicate: .compare("code", .equalTo, 7))) } }
        #expect(matches == 10 && counted.rowsExamined == Self.rows - 1)
        let updated = try Self.examined {
            _ = try ctx.performAndWait { try ctx.execute(BatchUpdateRequest(entityName: "Reading", predicate: .compare("code", .equalTo, 7), propertiesToUpdate: ["note": "seven"])) }
        }
        #expect(updated.rowsExamined >= Self.rows - 1)
    }

    // Docs/coredata-behaviour.md §4.1: equality on an indexed attribute reads the matching rows through the index;
    // no full-scan step is taken, and the rows it reads are the rows the fetch returns.
    @Test("A fetch by an indexed attribute examines only the matching rows")
    func indexedFetchExaminesOnlyTheMatches() throws {
        let stack = try Self.stack(try Self.model(codeIndexed: true))
        #expect(try Self.indexes(stack.url)["ZREADING_ZCODE_INDEX"] == "CREATE INDEX ZREADING_ZCODE_INDEX ON ZREADING (ZCODE)")
        #expect(try Self.fetch(stack, "code == 7") == Examined(rowsExamined: 0, rowsFetched: 10))
        let ctx = stack.context()
        let counted = try Self.examined { _ = try ctx.performAndWait { try ctx.count(for: FetchRequest(entityName: "Reading", predicate: .compare("code", .equalTo, 7))) } }
        #expect(counted.rowsExamined == 0)
    }

    // Docs/coredata-behaviour.md §4.1: an ORDER BY no index gives is a sort SQLite runs; one an index gives is a
    // walk of the index (every row, in order, no sort).
    @Test("A sort on an unindexed attribute counts a sort")
    func unindexedSortCountsASort() throws {
        let stack = try Self.stack(try Self.model(codeIndexed: true))
        #expect(try Self.fetch(stack, "code == 7", sort: [ObjectSortDescriptor("note")]) == Examined(rowsExamined: 0, sorts: 1, rowsFetched: 10))
        #expect(try Self.fetch(stack, "code >= 0", sort: [ObjectSortDescriptor("code")]) == Examined(rowsExamined: 0, sorts: 0, rowsFetched: Self.rows))
        #expect(try Self.fetch(stack, "note != nil", sort: [ObjectSortDescriptor("code")]) == Examined(rowsExamined: Self.rows - 1, sorts: 0, rowsFetched: Self.rows))
    }

    // Docs/coredata-behaviour.md §4.1: a fetch index on (a, b) serves equality on a and b, and on a alone; a
    // predicate on b alone does not lead with the index and scans.
    @Test("A fetch index on (a, b) serves a predicate on a and b")
    func compoundIndexServesItsLeadingElements() throws {
        let stack = try Self.stack(try Self.model(fetchIndexes: [Self.byAB]))
        #expect(try Self.indexes(stack.url)["Z_Reading_byAB"] == "CREATE INDEX Z_Reading_byAB ON ZREADING (ZA COLLATE BINARY ASC, ZB COLLATE BINARY DESC)")
        // i % 10 == 3 and i % 7 == 2 for i in 0..<1000: i ≡ 23 (mod 70), 14 rows.
        #expect(try Self.fetch(stack, "a == 3 AND b == 2") == Examined(rowsExamined: 0, rowsFetched: 14))
        #expect(try Self.fetch(stack, "a == 3") == Examined(rowsExamined: 0, rowsFetched: 100))
        #expect(try Self.fetch(stack, "b == 2").rowsExamined == Self.rows - 1)
    }

    // Docs/coredata-behaviour.md §4.1 and §11.7: a migration rebuilds the tables with the new version's indexes and
    // without those it dropped; the fetch it serves stops scanning.
    @Test("Migration adds an index")
    func migrationAddsAnIndex() throws {
        let directory = try TemporaryStoreDirectory()
        let url = directory.url.appendingPathComponent("store.sqlite")
        let v1 = try Self.model(codeIndexed: true, version: "v1")
        let v2 = try Self.model(fetchIndexes: [Self.byAB], extra: [AttributeDescription(name: "added", type: .string)], version: "v2", previous: [v1])
        do {
            let ctx = try MigrationTests.open(v1, at: url)
            try ctx.performAndWait {
                for i in 0..<100 {
                    let reading = ManagedObject(entity: v1.entity(named: "Reading")!, insertInto: ctx)
                    try reading.setValue(Int64(i % 10), forKey: "a")
                    try reading.setValue(Int64(i % 7), forKey: "b")
                }
                try ctx.save()
            }
        }
        #expect(try Set(Self.indexes(url).keys) == ["ZREADING_ZCODE_INDEX"])
        let ctx = try MigrationTests.open(v2, at: url)
        #expect(try Set(Self.indexes(url).keys) == ["Z_Reading_byAB"])
        let seen = try Self.examined { _ = try ctx.performAndWait { try ctx.fetch(FetchRequest(entityName: "Reading", predicate: try ObjectPredicate(format: "a == 3 AND b == 2"))) } }
        #expect(seen == Examined(rowsExamined: 0, rowsFetched: 2))  // i ≡ 23 (mod 70) below 100: 23 and 93
    }

    // Docs/coredata-behaviour.md §4.1: an entity's version hash modifier is part of the hash, so an index change
    // that comes with a new modifier migrates the store and builds the new indexes.
    @Test("An index added with a new version hash modifier migrates the store and reaches it")
    func versionHashModifierForcesTheMigration() throws {
        let plain = try Self.model(version: "v1")
        let modified = try Self.model(fetchIndexes: [Self.byAB], modifier: "2", version: "v2", previous: [try Self.model(version: "v1")])
        #expect(plain.versionHash != modified.versionHash)
        let stack = try TestStack(model: plain)
        _ = try MigrationTests.open(modified, at: stack.url)
        #expect(try Set(Self.indexes(stack.url).keys) == ["Z_Reading_byAB"])
    }

    // Docs/coredata-behaviour.md §4.1: indexes are not part of the version hash, so a change of indexes alone is no
    // model change: the store opens without migrating and keeps the indexes it was made with.
    @Test("An index added without another change does not reach an existing store")
    func indexOnlyChangeIsNoModelChange() throws {
        let plain = try Self.model(), indexed = try Self.model(codeIndexed: true, fetchIndexes: [Self.byAB])
        #expect(plain.versionHash == indexed.versionHash)
        let stack = try TestStack(model: plain)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: indexed, name: "indexed")
        try coordinator.addPersistentStore(type: .sqlite, at: stack.url)
        #expect(try Self.indexes(stack.url).isEmpty)
    }

    // Docs/coredata-behaviour.md §4.1 and §11.2: a sub-entity's index is on its hierarchy's table, over its own
    // column, and serves a fetch of the sub-entity.
    @Test("A sub-entity's fetch index is on its hierarchy's table and serves its fetches")
    func subEntityIndexLivesOnTheRootTable() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Reading", attributes: [AttributeDescription(name: "code", type: .integer64)]),
            EntityDescription(name: "Probe", attributes: [AttributeDescription(name: "serial", type: .integer64)], parent: "Reading",
                              fetchIndexes: [FetchIndexDescription(name: "bySerial", elements: [.init(property: "serial")])]),
        ])
        let stack = try TestStack(model: model)
        #expect(try Self.indexes(stack.url)["Z_Probe_bySerial"] == "CREATE INDEX Z_Probe_bySerial ON ZREADING (ZSERIAL COLLATE BINARY ASC)")
        let ctx = stack.context()
        try ctx.performAndWait {
            for i in 0..<100 {
                let entity = model.entity(named: i.isMultiple(of: 2) ? "Probe" : "Reading")!
                let object = ManagedObject(entity: entity, insertInto: ctx)
                try object.setValue(Int64(i), forKey: "code")
                if entity.name == "Probe" { try object.setValue(Int64(i % 10), forKey: "serial") }
            }
            try ctx.save()
        }
        let seen = try Self.examined { _ = try ctx.performAndWait { try ctx.fetch(FetchRequest(entityName: "Probe", predicate: .compare("serial", .equalTo, 4))) } }
        #expect(seen == Examined(rowsExamined: 0, rowsFetched: 10))
    }

    // Docs/coredata-behaviour.md §4.1: an index the store could not create is refused with the entity, the index
    // and the element at fault.
    @Test("A model refuses an index it could not create, naming the entity, the index and the element", arguments: [
        (FetchIndexDescription(name: "byNothing", elements: [.init(property: "nope")]), "nope", "is not a property of Reading"),
        (FetchIndexDescription(name: "empty", elements: []), nil, "needs at least one element"),
        (FetchIndexDescription(name: "byTags", elements: [.init(property: "tags")]), "tags", "to-many relationship"),
        (FetchIndexDescription(name: "byScratch", elements: [.init(property: "scratch")]), "scratch", "transient"),
        (FetchIndexDescription(name: "by note", elements: [.init(property: "note")]), nil, "letter followed by"),
        (FetchIndexDescription(name: "byTwice", elements: [.init(property: "code"), .init(property: "code")]), "code", "appears twice"),
    ] as [(FetchIndexDescription, String?, String)])
    func refusedIndexes(_ index: FetchIndexDescription, _ property: String?, _ message: String) throws {
        func model(_ indexes: [FetchIndexDescription]) throws -> ManagedObjectModel {
            try ManagedObjectModel(entities: [
                EntityDescription(name: "Reading", attributes: [
                    AttributeDescription(name: "code", type: .integer64), AttributeDescription(name: "note", type: .string),
                    AttributeDescription(name: "scratch", type: .string, isTransient: true),
                ], relationships: [RelationshipDescription(name: "tags", destination: "Tag", inverse: "reading", toMany: true)], fetchIndexes: indexes),
                EntityDescription(name: "Tag", relationships: [RelationshipDescription(name: "reading", destination: "Reading", inverse: "tags")]),
            ])
        }
        #expect { try model([index]) } throws: { error in
            guard let error = error as? ModelError else { return false }
            return error.entity == "Reading" && error.fetchIndex == index.name && error.property == property && error.message.contains(message)
        }
        let named = FetchIndexDescription(name: "byCode", elements: [.init(property: "code")])
        #expect(throws: ModelError.self) { try model([named, FetchIndexDescription(name: "BYCODE", elements: [.init(property: "note")])]) }
    }

    // Docs/coredata-behaviour.md §4.1: attribute, to-one and fetch indexes share one namespace per file; a clash
    // of names is a model error naming the entity and property, not an SQLite error when the store is made.
    @Test("Two indexes whose store names meet are a model error naming entity and property (§4.1)")
    func clashingIndexNamesAreAModelError() throws {
        #expect { try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", attributes: [AttributeDescription(name: "a_zb", type: .integer64, isIndexed: true)]),
            EntityDescription(name: "Item_za", attributes: [AttributeDescription(name: "b", type: .integer64, isIndexed: true)]),
        ]) } throws: { error in
            guard let error = error as? ModelError else { return false }
            return error.entity == "Item_za" && error.property == "b" && error.fetchIndex == nil
                && error.message.contains("ZITEM_ZA_ZB_INDEX") && error.message.contains("Item.a_zb")
        }
        // A to-one's index meets an indexed attribute's the same way.
        #expect { try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", attributes: [AttributeDescription(name: "a_zb", type: .integer64, isIndexed: true)],
                              relationships: [RelationshipDescription(name: "others", destination: "Item_za", inverse: "b", toMany: true)]),
            EntityDescription(name: "Item_za", relationships: [RelationshipDescription(name: "b", destination: "Item", inverse: "others")]),
        ]) } throws: { error in
            (error as? ModelError).map { $0.entity == "Item_za" && $0.property == "b" && $0.message.contains("ZITEM_ZA_ZB_INDEX") } ?? false
        }
    }
}
