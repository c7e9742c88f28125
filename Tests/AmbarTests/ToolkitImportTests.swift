import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph

/// PeakCoreData's `CoreDataBatchImportOperation` / `CoreDataSingleImportOperation` and `Changeset` (seed 001
/// "Operations"), as `BatchImport` / `SingleImport`.
@Suite struct ToolkitImportTests {
    static func storedItems(_ s: TKStack) throws -> [(id: Int64, name: String?, price: Double)] {
        let reader = s.container.importerContext()
        return try reader.performAndWait {
            try TKItem.fetch(in: reader).map { ($0.id, $0.name, $0.price) }
        }
    }

    static func storedIDs(_ s: TKStack, _ ids: [Int64]) throws -> Set<ManagedObjectID> {
        let reader = s.container.importerContext()
        return try reader.performAndWait { Set(try reader.fetchObjectIDs(TKItem.fetchRequest(predicate: .in("id", ids)))) }
    }

    @Test func batchImportInsertsThenUpdatesByUniqueID() async throws {
        let s = try TKStack()
        let first = try await BatchImport(values: (1...5).map { TKItemRecord(Int64($0)) }).run(in: s.container.importerContext())
        #expect(first.inserted.count == 5)
        #expect(first.updated.isEmpty)
        #expect(first.deleted.isEmpty)
        #expect(!first.isEmpty)
        #expect(first.inserted.allSatisfy { !$0.isTemporaryID })
        #expect(first.inserted == (try Self.storedIDs(s, [1, 2, 3, 4, 5])))

        // 4 and 5 exist (updated), 6 and 7 are new (inserted).
        let values = [TKItemRecord(4, name: "four", price: 40), TKItemRecord(5, name: "five", price: 50), TKItemRecord(6), TKItemRecord(7)]
        let second = try await BatchImport(values: values).run(in: s.container.importerContext())
        #expect(second.inserted == (try Self.storedIDs(s, [6, 7])))
        #expect(second.updated == (try Self.storedIDs(s, [4, 5])))
        let stored = try Self.storedItems(s)
        #expect(stored.map(\.id) == [1, 2, 3, 4, 5, 6, 7])
        #expect(stored.map(\.name) == ["record 1", "record 2", "record 3", "four", "five", "record 6", "record 7"])
        #expect(stored[3].price == 40)

        // Running the same import again: no new rows, nothing inserted, nothing changed.
        let rerun = try await BatchImport(values: values).run(in: s.container.importerContext())
        #expect(rerun.inserted.isEmpty)
        #expect(rerun.updated.isEmpty)
        #expect(rerun.isEmpty)
        #expect(try Self.storedItems(s).count == 7)
    }

    // Semantics §4 (returnsObjectsAsFaults = false): the objects an import updates come back filled by the chunk's
    // one `IN` fetch, so changing them fires no fault and reads no row again.
    @Test func batchImportUpdatesFetchedObjectsWithoutFiringFaults() throws {
        let s = try TKStack()
        let setup = s.container.importerContext()
        _ = try setup.performAndWait { try BatchImport(values: (1...10).map { TKItemRecord(Int64($0)) }).runSynchronously(in: setup) }
        let context = s.container.importerContext()
        let selectsBefore = s.container.writerCoordinator.counters.statements.select
        let changes = try context.performAndWait {
            try BatchImport(values: (1...10).map { TKItemRecord(Int64($0), name: "updated \($0)") }, chunkSize: 4).runSynchronously(in: context)
        }
        #expect(changes.updated.count == 10 && changes.inserted.isEmpty)
        context.performAndWait {
            #expect(context.counters.faultsFired == 0)
            #expect(context.counters.objectsRegistered == 10)
        }
        #expect(s.container.writerCoordinator.counters.statements.select - selectsBefore == 3)  // one per chunk of 4
        #expect(try Self.storedItems(s).map(\.name) == (1...10).map { "updated \($0)" })
    }

    @Test func batchImportNeverDuplicatesAndTheLastValueWins() async throws {
        let s = try TKStack()
        let values = [TKItemRecord(1, name: "first"), TKItemRecord(2), TKItemRecord(1, name: "second"), TKItemRecord(1, name: "last", price: 9)]
        let changes = try await BatchImport(values: values, chunkSize: 2).run(in: s.container.importerContext())
        #expect(changes.inserted.count == 2)
        let stored = try Self.storedItems(s)
        #expect(stored.map(\.id) == [1, 2])
        #expect(stored.first?.name == "last")
        #expect(stored.first?.price == 9)
        // Repeated ids across runs and chunks: still one row per id.
        let again = try await BatchImport(values: (1...6).map { TKItemRecord(Int64($0 % 3 + 1), name: "n\($0)") }, chunkSize: 1)
            .run(in: s.container.importerContext())
        #expect(again.inserted.count == 1)  // id 3
        #expect(again.updated.count == 2)  // ids 1 and 2
        let after = try Self.storedItems(s)
        #expect(after.map(\.id) == [1, 2, 3])
        #expect(after.map(\.name) == ["n6", "n4", "n5"])  // last value of each id
    }

    /// Each object a chunk's fetch finds goes to its own value, whatever order the values and the rows come in:
    /// the import places fetched objects by the position of their ID in the chunk (no table by ID per chunk).
    @Test func batchImportPairsFetchedObjectsWithTheirValuesInAnyOrder() throws {
        let s = try TKStack()
        let setup = s.container.importerContext()
        _ = try setup.performAndWait { try BatchImport(values: (1...6).map { TKItemRecord(Int64($0)) }).runSynchronously(in: setup) }
        let order: [Int64] = [6, 3, 5, 8, 1, 4, 2, 7]  // 7 and 8 are new, one in each chunk
        let values = order.map { TKItemRecord($0, name: "v\($0)", price: Double($0) * 100) }
        let context = s.container.importerContext()
        let changes = try context.performAndWait { try BatchImport(values: values, chunkSize: 4).runSynchronously(in: context) }
        #expect(changes.updated == (try Self.storedIDs(s, [1, 2, 3, 4, 5, 6])))
        #expect(changes.inserted == (try Self.storedIDs(s, [7, 8])))
        let stored = try Self.storedItems(s)
        #expect(stored.map(\.id) == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(stored.map(\.name) == (1...8).map { "v\($0)" })
        #expect(stored.map(\.price) == (1...8).map { Double($0) * 100 })
    }

    /// One `IN` fetch per chunk: an import of existing objects costs one SELECT per chunk on the writer
    /// coordinator and nothing per object.
    @Test func oneInFetchPerChunk() throws {
        let s = try TKStack()
        let writer = s.container.writerCoordinator
        // What one save of new objects reads by itself (primary-key allocation and the like).
        let probe = s.container.importerContext()
        let probeStart = writer.counters.statements.select
        try probe.performAndWait {
            let item = try TKItem.insert(into: probe)
            item.id = 100_000
            try probe.save()
        }
        let selectsPerInsertSave = writer.counters.statements.select - probeStart

        s.drainMain()
        let mergesBefore = s.container.counters.mergesScheduled
        let values = (1...1_200).map { TKItemRecord(Int64($0)) }
        let importer = s.container.importerContext()
        let before = writer.counters.statements
        let inserted = try importer.performAndWait { try BatchImport(values: values, chunkSize: 500, batchSize: 500).runSynchronously(in: importer) }
        let afterInsert = writer.counters.statements
        #expect(inserted.inserted.count == 1_200)
        // Three chunks: three IN fetches plus what three saves read by themselves; nothing per object.
        #expect(afterInsert.select - before.select == 3 + 3 * selectsPerInsertSave)
        #expect(afterInsert.insert - before.insert >= 1_200)
        // One save per batch of 500, each merged into the view context by the smart merge.
        #expect(s.container.counters.mergesScheduled - mergesBefore == 3)

        // The update path in a fresh context: three chunks → three SELECTs (the IN fetches), and the saves
        // write UPDATEs without reading.
        let updater = s.container.importerContext()
        let changed = (1...1_200).map { TKItemRecord(Int64($0), name: "changed \($0)") }
        let start = writer.counters.statements
        let updated = try updater.performAndWait { try BatchImport(values: changed, chunkSize: 500, batchSize: 500).runSynchronously(in: updater) }
        let end = writer.counters.statements
        #expect(updated.updated.count == 1_200)
        #expect(updated.inserted.isEmpty)
        #expect(end.select - start.select == 3)
        #expect(end.update - start.update >= 1_200)
        #expect(writer.counters.saves >= 6)

        // Chunk size 100: twelve IN fetches.
        let small = s.container.importerContext()
        let s2 = writer.counters.statements.select
        _ = try small.performAndWait {
            try BatchImport(values: (1...1_200).map { TKItemRecord(Int64($0), name: "again \($0)") }, chunkSize: 100).runSynchronously(in: small)
        }
        #expect(writer.counters.statements.select - s2 == 12)
        // The chunk size is capped at 500 (SQLite's variable limit).
        #expect(BatchImport<TKItemRecord>(values: [], chunkSize: 10_000).chunkSize == 500)
        #expect(BatchImport<TKItemRecord>(values: [], chunkSize: 0).chunkSize == 1)
    }

    @Test func runSynchronouslyInsidePerformAndWait() throws {
        let s = try TKStack()
        try s.seedAndSettle([TKSeed(1), TKSeed(2)])
        let importer = s.container.importerContext()
        let changes = try importer.performAndWait {
            try BatchImport(values: [TKItemRecord(2, name: "two"), TKItemRecord(3, name: "three")]).runSynchronously(in: importer)
        }
        #expect(changes.inserted == (try Self.storedIDs(s, [3])))
        #expect(changes.updated == (try Self.storedIDs(s, [2])))
        importer.performAndWait { #expect(!importer.hasChanges) }  // saved
        // The writer coordinator's save reached the view context through the smart merge.
        s.drainMain()
        #expect(s.container.counters.mergesPerformed == 2)
        let view = s.view
        try view.performAndWait { () throws in #expect(try TKItem.count(in: view) == 3) }
    }

    /// `updateRelationships(on:in:)` runs once every object of the chunk exists.
    @Test func importSetsRelationshipsAfterProperties() async throws {
        struct TaggedRecord: ManagedObjectUpdatable, UniqueIdentifiable, Sendable {
            typealias ManagedObjectKind = TKItem
            static var uniqueIDKey: String { "id" }
            var id: Int64
            var tag: String
            var uniqueIDValue: Int64 { id }
            func updateProperties(on managedObject: TKItem) { managedObject.name = "tagged \(id)" }
            func updateRelationships(on managedObject: TKItem, in context: ManagedObjectContext) throws {
                #expect(managedObject.name == "tagged \(id)")
                let existing = try TKTag.findOrFetch(in: context, predicate: .compare("name", .equalTo, tag))
                let tag = try existing ?? {
                    let t = try TKTag.insert(into: context)
                    t.name = self.tag
                    return t
                }()
                managedObject.tag = tag
            }
        }
        let s = try TKStack()
        let values = [TaggedRecord(id: 1, tag: "red"), TaggedRecord(id: 2, tag: "blue"), TaggedRecord(id: 3, tag: "red")]
        let changes = try await BatchImport(values: values).run(in: s.container.importerContext())
        #expect(changes.inserted.count == 3)
        let reader = s.container.importerContext()
        try reader.performAndWait {
            #expect(try TKTag.count(in: reader) == 2)
            let red = try #require(try TKTag.first(in: reader, predicate: .compare("name", .equalTo, "red")))
            #expect(Set(red.items.map(\.id)) == [1, 3])
        }
    }

    @Test func singleImportInsertsThenUpdates() async throws {
        let s = try TKStack()
        let inserted = try await SingleImport(value: TKItemRecord(10, name: "ten")).run(in: s.container.importerContext())
        #expect(inserted.inserted.count == 1)
        #expect(inserted.updated.isEmpty)
        let updated = try await SingleImport(value: TKItemRecord(10, name: "TEN", price: 11)).run(in: s.container.importerContext())
        #expect(updated.inserted.isEmpty)
        #expect(updated.updated == inserted.inserted)
        let unchanged = try await SingleImport(value: TKItemRecord(10, name: "TEN", price: 11)).run(in: s.container.importerContext())
        #expect(unchanged.isEmpty)
        let stored = try Self.storedItems(s)
        #expect(stored.count == 1)
        #expect(stored.first?.name == "TEN")
        #expect(stored.first?.price == 11)
    }

    /// A failing save is the operation's failure (here a validation error: `name` has `maxLength` 8).
    @Test func failingSaveIsThrownAsync() async throws {
        let s = try TKStack(nameMaxLength: 8)
        let importer = s.container.importerContext()
        await #expect(throws: ObjectGraphError.self) {
            try await SingleImport(value: TKItemRecord(1, name: "a name that is far too long")).run(in: importer)
        }
        do {
            _ = try await BatchImport(values: [TKItemRecord(1, name: "much too long a name")]).run(in: s.container.importerContext())
            Issue.record("the import should have failed")
        } catch let error as ObjectGraphError {
            #expect(error.code == .stringTooLong)
            #expect(error.propertyName == "name")
        }
        #expect(try Self.storedItems(s).isEmpty)
    }

    @Test func failingSaveIsThrownSynchronouslyAfterEarlierChunksSaved() throws {
        let s = try TKStack(nameMaxLength: 8)
        let importer = s.container.importerContext()
        let values = [TKItemRecord(1, name: "ok"), TKItemRecord(2, name: "ok"), TKItemRecord(3, name: "ok"), TKItemRecord(4, name: "way too long")]
        importer.performAndWait {
            #expect(throws: ObjectGraphError.self) { try BatchImport(values: values, chunkSize: 2, batchSize: 2).runSynchronously(in: importer) }
            #expect(importer.hasChanges)  // the failed chunk's changes stay in the context
        }
        // One save per batch of two: the first batch was saved before the second failed.
        #expect(try Self.storedItems(s).map(\.id) == [1, 2])
    }
}
