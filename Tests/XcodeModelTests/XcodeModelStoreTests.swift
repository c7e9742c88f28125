import Foundation
import ModelSchema
import Testing
@testable import ObjectGraph
import XcodeModel

/// An Xcode model through the whole library: a model, a store opened with it through a coordinator, and a
/// lightweight migration between a bundle's versions (Docs/coredata-behaviour.md §15, §7).
@Suite struct XcodeModelStoreTests {
    /// A store file in a scratch folder.
    static func storeURL(_ scratch: Scratch) -> URL { scratch.folder.appendingPathComponent("Shop.sqlite") }

    static func columns(_ table: String, at url: URL) throws -> [String] {
        let connection = try SQLiteConnection(path: url.path, busyTimeout: 5)
        return try connection.query("SELECT name FROM pragma_table_info('\(table)')").compactMap {
            if case .text(let name) = $0[0] { return name } else { return nil }
        }
    }

    /// Inserts a book and an order of one line of `quantity` (named `quantityName` in the model), and saves.
    static func seed(_ coordinator: PersistentStoreCoordinator, quantityName: String, quantity: Int16) throws {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let model = coordinator.managedObjectModel
            let book = ManagedObject(entity: try #require(model.entity(named: "Book")), insertInto: context)
            try book.setValue("BK-1", forKey: "sku")
            try book.setValue("Dune", forKey: "title")
            try book.setValue(Int32(412), forKey: "pages")
            let order = ManagedObject(entity: try #require(model.entity(named: "Order")), insertInto: context)
            try order.setValue(Int64(1), forKey: "number")
            let line = ManagedObject(entity: try #require(model.entity(named: "OrderLine")), insertInto: context)
            try line.setValue("BK-1", forKey: "sku")
            try line.setValue(quantity, forKey: quantityName)
            try line.setValue(order, forKey: "order")
            try context.save()
        }
    }

    @Test("An Xcode model opens an SQLite store: one table per hierarchy, a column per stored attribute and to-one")  // §15.2
    func storeSchema() throws {
        let scratch = try Scratch()
        let url = Self.storeURL(scratch)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(xcodeModelAt: Fixtures.shop), name: "shop")
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        try Self.seed(coordinator, quantityName: "units", quantity: 2)
        let product = try Self.columns("ZPRODUCT", at: url)
        for column in ["Z_PK", "Z_ENT", "ZSKU", "ZTITLE", "ZSUBTITLE", "ZPRICE", "ZSTOCK", "ZTAGS", "ZAUTHOR", "ZISBN", "ZPAGES", "ZARTIST", "ZCOVER", "ZTRACKS"] {
            #expect(product.contains(column), "ZPRODUCT lacks \(column): \(product)")
        }
        #expect(try Self.columns("ZBOOK", at: url).isEmpty)  // a sub-entity lives in its root's table
        let orderLine = try Self.columns("ZORDERLINE", at: url)
        for column in ["ZSKU", "ZUNITPRICE", "ZUNITS", "ZORDER"] { #expect(orderLine.contains(column), "ZORDERLINE lacks \(column): \(orderLine)") }
        #expect(try Self.columns("ZORDER", at: url).contains("ZNUMBER"))
    }

    @Test("A store of a bundle's first version migrates to the current one: an added attribute, one renamed by its elementID")  // §15.2, §7
    func lightweightMigration() throws {
        let scratch = try Scratch()
        let url = Self.storeURL(scratch)
        let versions = try #require(try XcodeModelReader.read(at: Fixtures.shop).model.versions)
        let first = try ManagedObjectModel(file: ModelFile(versions: [versions[0]], current: "Shop"))
        let old = PersistentStoreCoordinator(managedObjectModel: first, name: "v1")
        try old.addPersistentStore(type: .sqlite, at: url)
        try Self.seed(old, quantityName: "quantity", quantity: 3)
        var options = StoreOptions()
        options.migrateAutomatically = true
        options.inferMappingModel = true
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(xcodeModelAt: Fixtures.shop), name: "v2")
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: options)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let line = try #require(try context.fetch(FetchRequest(entityName: "OrderLine")).first)
            #expect(line.value(forKey: "units") as? Int16 == 3)
            #expect((line.value(forKey: "order") as? ManagedObject)?.value(forKey: "number") as? Int64 == 1)
            let book = try #require(try context.fetch(FetchRequest(entityName: "Product")).first)
            #expect(book.entity.name == "Book" && book.value(forKey: "subtitle") == nil && book.value(forKey: "title") as? String == "Dune")
        }
        #expect(try Self.columns("ZORDERLINE", at: url).contains("ZUNITS"))
        #expect(!(try Self.columns("ZORDERLINE", at: url).contains("ZQUANTITY")))
    }
}
