import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph

/// A container with several store descriptions, each with its configuration (Docs/coredata-behaviour.md §14.2).
@Suite struct AmbarContainerStoresTests {
    static func model() throws -> ManagedObjectModel {
        var file = ModelFile(entities: [
            ModelFile.Entity(name: "Product", attributes: [ModelFile.Attribute(name: "name", type: .string)]),
            ModelFile.Entity(name: "Order", attributes: [ModelFile.Attribute(name: "number", type: .integer64)]),
        ])
        file.configurations = [
            ModelFile.Configuration(name: "Catalog", entities: ["Product"]),
            ModelFile.Configuration(name: "Orders", entities: ["Order"]),
        ]
        return try ManagedObjectModel(file: file)
    }

    // §14.2
    @Test("The container adds every store description to each of its coordinators, each with its configuration")
    func containerLoadsEveryDescription() throws {
        let directory = try AmbarContainerConfigurationTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var catalog = PersistentStoreDescription(url: directory.appendingPathComponent("Catalog.sqlite"))
        catalog.configuration = "Catalog"
        var orders = PersistentStoreDescription(url: directory.appendingPathComponent("Orders.sqlite"))
        orders.configuration = "Orders"
        let container = try AmbarContainer(model: try Self.model(), options: AmbarContainerConfigurationTests.options,
                                           persistentStoreDescriptions: [catalog, orders])
        #expect(container.storeURL?.lastPathComponent == "Catalog.sqlite")
        #expect(container.persistentStoreDescriptions.map(\.configuration) == ["Catalog", "Orders"])
        for coordinator in [container.mainCoordinator, container.writerCoordinator] {
            #expect(coordinator.persistentStores.map(\.configurationName) == ["Catalog", "Orders"])
            #expect(coordinator.persistentStores.map { $0.url?.lastPathComponent } == ["Catalog.sqlite", "Orders.sqlite"])
        }
        #expect(container.mainCoordinator !== container.writerCoordinator)
        let importer = container.importerContext()
        let (product, order) = try importer.performAndWait {
            let product = try importer.insertNewObject(forEntityName: "Product")
            try product.setValue("lamp", forKey: "name")
            let order = try importer.insertNewObject(forEntityName: "Order")
            try order.setValue(Int64(1), forKey: "number")
            try importer.save()
            return (product.objectID, order.objectID)
        }
        let stores = container.mainCoordinator.persistentStores
        #expect(product.storeIdentifier == stores[0].identifier)
        #expect(order.storeIdentifier == stores[1].identifier)
        let reader = container.temporaryContext()
        try reader.performAndWait { () throws in
            #expect(try reader.count(for: FetchRequest(entityName: "Product")) == 1)
            #expect(try reader.count(for: FetchRequest(entityName: "Order")) == 1)
        }
    }
}
