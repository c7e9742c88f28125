import Foundation
import Testing
@testable import ObjectGraph

// External binary storage in the SQLite store (Docs/coredata-behaviour.md §13.5, §13.6). Helpers are prefixed `eb`.

/// Photo (name unique, image allowing external storage, thumbnail not), version "v1" or "v2" (v2 adds a caption);
/// with `external: false`, image does not allow external storage.
func ebModel(version: String = "v1", external: Bool = true, previous: [ManagedObjectModel] = []) throws -> ManagedObjectModel {
    var image = AttributeDescription(name: "image", type: .binaryData)
    image.allowsExternalBinaryDataStorage = external
    var attributes = [AttributeDescription(name: "name", type: .string), image, AttributeDescription(name: "thumbnail", type: .binaryData)]
    if version == "v2" { attributes.append(AttributeDescription(name: "caption", type: .string)) }
    return try ManagedObjectModel(entities: [
        EntityDescription(name: "Photo", attributes: attributes, uniquenessConstraints: [["name"]])
    ], versionName: version, previousVersions: previous)
}

/// `count` bytes, seeded by `seed`.
func ebBytes(_ count: Int, seed: UInt8) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0) &+ seed }) }

let ebLarge = SQLiteExternalData.threshold + 1

extension TestStack {
    var ebDirectory: URL { directory.appendingPathComponent(".store_SUPPORT/_EXTERNAL_DATA") }

    /// The files of the external data directory, sorted.
    func ebFiles() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: ebDirectory.path)) ?? []).sorted() }

    /// Inserts a photo and saves it; its ID.
    func ebInsert(_ name: String, image: Data?) throws -> ManagedObjectID {
        let ctx = context()
        return try ctx.performAndWait {
            let photo = try ctx.insertNewObject(forEntityName: "Photo")
            try photo.setValue(name, forKey: "name")
            try photo.setValue(image, forKey: "image")
            try ctx.save()
            return photo.objectID
        }
    }

    /// The image of the photo named `name`, read by a new coordinator (from the store, not a row cache).
    func ebReadImage(_ name: String) throws -> Data? {
        let ctx = context(try secondCoordinator())
        return try ctx.performAndWait {
            let photos = try ctx.fetch(FetchRequest(entityName: "Photo", predicate: ObjectPredicate(format: "name == %@", name)))
            return photos.first?.value(forKey: "image") as? Data
        }
    }
}

@Suite struct ExternalBinaryStorageTests {
    // §13.5: a value above the threshold goes to a file named by a UUID in .<store>_SUPPORT/_EXTERNAL_DATA; the row
    // keeps 0x02 and the name. A value at or below it stays in the row after 0x01. Both read back whole.
    @Test func aLargeValueGoesToAFileBesideTheStore_13_5() throws {
        let stack = try TestStack(model: ebModel())
        let large = ebBytes(ebLarge, seed: 1), small = ebBytes(SQLiteExternalData.threshold, seed: 2)
        _ = try stack.ebInsert("big", image: large)
        _ = try stack.ebInsert("small", image: small)
        let files = stack.ebFiles()
        #expect(files.count == 1)
        #expect(files.allSatisfy { UUID(uuidString: $0) != nil })
        let rows = try stack.sql("SELECT ZNAME, ZIMAGE FROM ZPHOTO ORDER BY ZNAME")
        #expect(rows[0][1] == .blob(Data([0x02]) + Data(files[0].utf8)))
        #expect(rows[1][1] == .blob(Data([0x01]) + small))
        #expect(try stack.ebReadImage("big") == large)
        #expect(try stack.ebReadImage("small") == small)
        #expect(try Data(contentsOf: stack.ebDirectory.appendingPathComponent(files[0])) == large)
    }

    // §13.5: a file is removed once the save that replaced its value or deleted its object commits.
    @Test func aReplacedOrDeletedValueLosesItsFile_13_5() throws {
        let stack = try TestStack(model: ebModel())
        let id = try stack.ebInsert("p", image: ebBytes(ebLarge, seed: 1))
        let first = stack.ebFiles()
        let ctx = stack.context()
        try ctx.performAndWait {
            let photo = try ctx.existingObject(with: id)
            try photo.setValue(ebBytes(ebLarge, seed: 9), forKey: "image")
            try ctx.save()
        }
        let second = stack.ebFiles()
        #expect(second.count == 1 && second != first)
        #expect(try stack.ebReadImage("p") == ebBytes(ebLarge, seed: 9))
        try ctx.performAndWait {
            ctx.delete(try ctx.existingObject(with: id))
            try ctx.save()
        }
        #expect(stack.ebFiles().isEmpty)
    }

    // §13.5: a save that fails in the store removes the files it wrote and leaves the committed value and its file.
    @Test func aFailedSaveKeepsTheCommittedValueAndItsFile_13_5() throws {
        let stack = try TestStack(model: ebModel())
        _ = try stack.ebInsert("taken", image: ebBytes(ebLarge, seed: 1))
        let committed = stack.ebFiles()
        let ctx = stack.context()
        ctx.performAndWait {
            let photo = try! ctx.insertNewObject(forEntityName: "Photo")
            try! photo.setValue("taken", forKey: "name")  // the stored row's unique name
            try! photo.setValue(ebBytes(ebLarge, seed: 5), forKey: "image")
            #expect(throws: ObjectGraphError.self) { try ctx.save() }
        }
        #expect(stack.ebFiles() == committed)
        #expect(try stack.ebReadImage("taken") == ebBytes(ebLarge, seed: 1))
    }

    // §13.5: opening the store removes the files no row refers to (a kill between a file's write and the commit).
    @Test func openingTheStoreRemovesOrphanFiles_13_5() throws {
        let stack = try TestStack(model: ebModel())
        _ = try stack.ebInsert("kept", image: ebBytes(ebLarge, seed: 1))
        let kept = stack.ebFiles()
        try Data([1, 2, 3]).write(to: stack.ebDirectory.appendingPathComponent(UUID().uuidString))
        #expect(stack.ebFiles().count == 2)
        _ = try stack.secondCoordinator()
        #expect(stack.ebFiles() == kept)
        #expect(try stack.ebReadImage("kept") == ebBytes(ebLarge, seed: 1))
    }

    // §13.6: a batch delete removes the files of the rows it deleted once it commits.
    @Test func aBatchDeleteRemovesTheFilesOfItsRows_13_6() throws {
        let stack = try TestStack(model: ebModel())
        let id = try stack.ebInsert("gone", image: ebBytes(ebLarge, seed: 1))
        #expect(stack.ebFiles().count == 1)
        let ctx = stack.context()
        _ = try ctx.performAndWait { try ctx.execute(BatchDeleteRequest(objectIDs: [id])) }
        #expect(stack.ebFiles().isEmpty)
        #expect(try stack.sql("SELECT COUNT(*) FROM ZPHOTO") == [[.integer(0)]])
    }

    // §13.6: a batch insert and a batch update keep their values in the row; they read back whole.
    @Test func batchRequestsKeepValuesInTheRow_13_6() throws {
        let stack = try TestStack(model: ebModel())
        let ctx = stack.context()
        let large = ebBytes(ebLarge, seed: 3)
        try ctx.performAndWait {
            _ = try ctx.execute(BatchInsertRequest(entityName: "Photo", objects: [["name": "b", "image": large]]))
            _ = try ctx.execute(BatchUpdateRequest(entityName: "Photo", propertiesToUpdate: ["image": ebBytes(10, seed: 4)]))
        }
        #expect(stack.ebFiles().isEmpty)
        let photos = try ctx.performAndWait { try ctx.fetch(FetchRequest(entityName: "Photo")).map { $0.value(forKey: "image") as? Data } }
        #expect(photos == [ebBytes(10, seed: 4)])
    }

    // §13.6: a lightweight migration copies the rows with their references; the files stay and read back. An
    // attribute that starts allowing external storage keeps its values in the row.
    @Test func aMigrationKeepsExternalValues_13_6() throws {
        let stack = try TestStack(model: ebModel())
        _ = try stack.ebInsert("m", image: ebBytes(ebLarge, seed: 7))
        let files = stack.ebFiles()
        let image = try Self.migratedImage(at: stack.url, from: try ebModel())
        #expect(image == ebBytes(ebLarge, seed: 7))
        #expect(stack.ebFiles() == files)
    }

    /// The first photo's image after a lightweight migration of the store at `url` from `previous` to the external
    /// storage model's next version.
    static func migratedImage(at url: URL, from previous: ManagedObjectModel) throws -> Data? {
        var options = StoreOptions()
        options.migrateAutomatically = true
        options.inferMappingModel = true
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ebModel(version: "v2", previous: [previous]), name: "v2")
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: options)
        let ctx = ManagedObjectContext(concurrencyType: .privateQueue)
        ctx.persistentStoreCoordinator = coordinator
        return try ctx.performAndWait {
            try ctx.fetch(FetchRequest(entityName: "Photo")).first?.value(forKey: "image") as? Data
        }
    }

    @Test func aMigrationToExternalStorageKeepsValuesInTheRow_13_6() throws {
        let stack = try TestStack(model: ebModel(external: false))
        _ = try stack.ebInsert("m", image: ebBytes(ebLarge, seed: 7))
        let image = try Self.migratedImage(at: stack.url, from: try ebModel(external: false))
        #expect(image == ebBytes(ebLarge, seed: 7))
        #expect(stack.ebFiles().isEmpty)
    }

    // §13.5: the column of an attribute that allows external storage holds a marker, so a fetch compares it with nil
    // only.
    @Test func aFetchComparesAnExternalAttributeWithNilOnly_13_5() throws {
        let stack = try TestStack(model: ebModel())
        _ = try stack.ebInsert("small", image: ebBytes(16, seed: 1))
        let ctx = stack.context()
        try ctx.performAndWait {
            let present = try ctx.fetch(FetchRequest(entityName: "Photo", predicate: try ObjectPredicate(format: "image != nil")))
            #expect(present.count == 1)
            let error = try #require(throws: ObjectGraphError.self) {
                try ctx.fetch(FetchRequest(entityName: "Photo", predicate: ObjectPredicate(format: "image == %@", ebBytes(16, seed: 1))))
            }
            #expect(error.code == .invalidFetchRequest)
        }
    }

    // §13.5: the in-memory store keeps every value in memory, whatever its size.
    @Test func theInMemoryStoreKeepsValuesInline_13_5() throws {
        let stack = try TestStack(model: ebModel(), type: .inMemory)
        let id = try stack.ebInsert("mem", image: ebBytes(ebLarge, seed: 1))
        #expect(stack.ebFiles().isEmpty)
        let ctx = stack.context()
        let image = try ctx.performAndWait { try ctx.existingObject(with: id).value(forKey: "image") as? Data }
        #expect(image == ebBytes(ebLarge, seed: 1))
    }
}
