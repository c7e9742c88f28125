import Foundation
import ModelSchema
import Testing
@testable import ObjectGraph
import XcodeModel

/// An Xcode model's configurations through a coordinator with one store per configuration
/// (Docs/coredata-behaviour.md §14, §15).
@Suite struct XcodeModelConfigurationTests {
    /// A coordinator of `model` with the Catalog and Orders stores in `scratch`.
    static func coordinator(_ model: ManagedObjectModel, in scratch: Scratch, options: StoreOptions = StoreOptions()) throws -> PersistentStoreCoordinator {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model, name: "shop")
        for name in ["Catalog", "Orders"] {
            try coordinator.addPersistentStore(type: .sqlite, configuration: name, at: scratch.folder.appendingPathComponent("\(name).sqlite"), options: options)
        }
        return coordinator
    }

    /// The rows of `table` in `file`.
    static func rows(_ table: String, in scratch: Scratch, _ file: String) throws -> Int {
        let connection = try SQLiteConnection(path: scratch.folder.appendingPathComponent(file).path, busyTimeout: 5)
        guard case .integer(let n) = try connection.query("SELECT count(*) FROM \(table)")[0][0] else { return -1 }
        return Int(n)
    }

    @Test("An Xcode model's configurations place each entity's rows in its configuration's store")  // §14.1, §14.2
    func configurationsPlaceRows() throws {
        let scratch = try Scratch()
        let model = try ManagedObjectModel(xcodeModelAt: Fixtures.shop)
        #expect(model.configurations == ["Catalog", "Orders"])
        #expect(model.entities(forConfigurationName: "Orders")?.map(\.name) == ["Order", "OrderLine"])
        let coordinator = try Self.coordinator(model, in: scratch)
        try XcodeModelStoreTests.seed(coordinator, quantityName: "units", quantity: 2)
        #expect(try Self.rows("ZPRODUCT", in: scratch, "Catalog.sqlite") == 1)
        #expect(try Self.rows("ZPRODUCT", in: scratch, "Orders.sqlite") == 0)
        #expect(try Self.rows("ZORDERLINE", in: scratch, "Orders.sqlite") == 1)
        #expect(try Self.rows("ZORDER", in: scratch, "Catalog.sqlite") == 0)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let line = try #require(try context.fetch(FetchRequest(entityName: "OrderLine")).first)
            #expect((line.value(forKey: "order") as? ManagedObject)?.value(forKey: "number") as? Int64 == 1)
            #expect(try context.fetch(FetchRequest(entityName: "Product")).first?.entity.name == "Book")
        }
    }

    @Test("Each store of a configuration migrates its own file to the current version")  // §14.2, §7
    func eachStoreMigrates() throws {
        let scratch = try Scratch()
        let versions = try #require(try XcodeModelReader.read(at: Fixtures.shop).model.versions)
        let first = try ManagedObjectModel(file: ModelFile(versions: [versions[0]], current: "Shop"))
        try XcodeModelStoreTests.seed(try Self.coordinator(first, in: scratch), quantityName: "quantity", quantity: 3)
        var options = StoreOptions()
        options.migrateAutomatically = true
        options.inferMappingModel = true
        let coordinator = try Self.coordinator(try ManagedObjectModel(xcodeModelAt: Fixtures.shop), in: scratch, options: options)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let line = try #require(try context.fetch(FetchRequest(entityName: "OrderLine")).first)
            #expect(line.value(forKey: "units") as? Int16 == 3)
            #expect(try context.fetch(FetchRequest(entityName: "Product")).first?.value(forKey: "title") as? String == "Dune")
        }
        #expect(try Self.rows("ZPRODUCT", in: scratch, "Catalog.sqlite") == 1)
        #expect(try Self.rows("ZORDERLINE", in: scratch, "Orders.sqlite") == 1)
    }
}
