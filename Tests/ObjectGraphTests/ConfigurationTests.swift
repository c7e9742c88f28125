import Foundation
import ModelSchema
import Testing
@testable import ObjectGraph

/// Configurations and a coordinator with several stores (Docs/coredata-behaviour.md §14).
///
/// The model: Category and Product (the `Catalog` configuration), Order (`Orders`, its `number` unique), and Note,
/// which no configuration lists. `Order.product` reaches across the two configurations: saving it is refused.
@Suite struct ConfigurationTests {
    static func model(configurations: [ModelFile.Configuration] = [
        ModelFile.Configuration(name: "Catalog", entities: ["Category", "Product"]),
        ModelFile.Configuration(name: "Orders", entities: ["Order"]),
    ]) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Category", attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [RelationshipDescription(name: "products", destination: "Product", inverse: "category", toMany: true)]),
            EntityDescription(
                name: "Product",
                attributes: [AttributeDescription(name: "name", type: .string), AttributeDescription(name: "price", type: .integer64)],
                relationships: [
                    RelationshipDescription(name: "category", destination: "Category", inverse: "products"),
                    RelationshipDescription(name: "orders", destination: "Order", inverse: "product", toMany: true),
                ]),
            EntityDescription(
                name: "Order", attributes: [AttributeDescription(name: "number", type: .integer64)],
                relationships: [RelationshipDescription(name: "product", destination: "Product", inverse: "orders")],
                uniquenessConstraints: [["number"]]),
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)]),
        ], configurations: configurations)
    }

    /// A directory with a coordinator over `stores` (configuration, file name), added in that order.
    final class Stores: @unchecked Sendable {
        let directory: URL
        let model: ManagedObjectModel
        let coordinator: PersistentStoreCoordinator

        init(_ stores: [(String?, String)], options: StoreOptions = StoreOptions(), model: ManagedObjectModel? = nil) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("og-configurations-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            self.model = try model ?? ConfigurationTests.model()
            coordinator = PersistentStoreCoordinator(managedObjectModel: self.model, name: "main")
            for (configuration, file) in stores {
                try coordinator.addPersistentStore(type: .sqlite, configuration: configuration, at: url(file), options: options)
            }
        }

        deinit { try? FileManager.default.removeItem(at: directory) }

        func url(_ file: String) -> URL { directory.appendingPathComponent(file) }

        func context(_ coordinator: PersistentStoreCoordinator? = nil) -> ManagedObjectContext {
            let c = ManagedObjectContext(concurrencyType: .privateQueue)
            c.persistentStoreCoordinator = coordinator ?? self.coordinator
            return c
        }

        /// The rows of `entity` in `file`, read by a coordinator of its own with that one store.
        func count(_ entity: String, in file: String) throws -> Int {
            let other = PersistentStoreCoordinator(managedObjectModel: model, name: "reader")
            try other.addPersistentStore(type: .sqlite, at: url(file))
            let ctx = context(other)
            return try ctx.performAndWait { try ctx.count(for: FetchRequest(entityName: entity)) }
        }

        /// Saves products named `names` with prices `prices` into `file`, through a coordinator of that one store.
        func seedProducts(_ prices: [Int], in file: String) throws {
            let other = PersistentStoreCoordinator(managedObjectModel: model, name: "seeder")
            try other.addPersistentStore(type: .sqlite, at: url(file))
            let ctx = context(other)
            try ctx.performAndWait {
                for price in prices { _ = try insert(ctx, "Product", ["name": "p\(price)", "price": price]) }
                try ctx.save()
            }
        }
    }

    static func insert(_ ctx: ManagedObjectContext, _ entity: String, _ values: [String: Any]) throws -> ManagedObject {
        let object = try ctx.insertNewObject(forEntityName: entity)
        for (key, value) in values.sorted(by: { $0.key < $1.key }) { try object.setValue(value, forKey: key) }
        return object
    }

    static func prices(_ objects: [ManagedObject]) -> [Int] {
        objects.map { ($0.value(forKey: "price") as? Int64).map(Int.init) ?? -1 }
    }

    // MARK: The model (§14.1)

    // §14.1
    @Test("A model lists its configurations in order and each one's entities as it lists them")
    func modelListsConfigurations() throws {
        let model = try Self.model()
        #expect(model.configurations == ["Catalog", "Orders"])
        #expect(model.entities(forConfigurationName: "Catalog")?.map(\.name) == ["Category", "Product"])
        #expect(model.entities(forConfigurationName: "Orders")?.map(\.name) == ["Order"])
        #expect(model.entities(forConfigurationName: nil)?.count == 4)
        #expect(model.entities(forConfigurationName: "Archive") == nil)
    }

    // §14.1
    @Test("A configuration naming an entity the model lacks is refused, naming both")
    func configurationWithUnknownEntityIsRefused() throws {
        do {
            _ = try Self.model(configurations: [ModelFile.Configuration(name: "Catalog", entities: ["Product", "Shelf"])])
            Issue.record("the model loaded")
        } catch let error as ModelError {
            #expect(error.entity == "Shelf")
            #expect(error.message.contains("Catalog"))
        }
    }

    // §14.1
    @Test("A configuration named Default or named twice is refused")
    func defaultOrDuplicateConfigurationIsRefused() throws {
        #expect(throws: ModelError.self) { try Self.model(configurations: [ModelFile.Configuration(name: "Default", entities: ["Order"])]) }
        #expect(throws: ModelError.self) {
            try Self.model(configurations: [ModelFile.Configuration(name: "A", entities: ["Order"]), ModelFile.Configuration(name: "A", entities: ["Note"])])
        }
    }

    // §14.1
    @Test("A model file's configurations, and a versioned file's current version's, become the model's")
    func modelFileConfigurationsAreRead() throws {
        let json = #"""
        {"entities": [{"name": "A", "attributes": [{"name": "x", "type": "string"}]}, {"name": "B"}],
         "configurations": [{"name": "First", "entities": ["A"]}, {"name": "Second", "entities": ["B", "A"]}]}
        """#
        let model = try ManagedObjectModel(jsonData: Data(json.utf8))
        #expect(model.configurations == ["First", "Second"])
        #expect(model.entities(forConfigurationName: "Second")?.map(\.name) == ["B", "A"])
        let versioned = #"""
        {"versions": [{"name": "v1", "entities": [{"name": "A"}]},
                      {"name": "v2", "entities": [{"name": "A"}, {"name": "B"}], "configurations": [{"name": "Only", "entities": ["B"]}]}],
         "current": "v2"}
        """#
        let current = try ManagedObjectModel(jsonData: Data(versioned.utf8))
        #expect(current.configurations == ["Only"])
        #expect(current.previousVersions.first?.configurations == [])
    }

    // MARK: The coordinator (§14.2)

    // §14.2
    @Test("One store added without a configuration takes the single-store path")
    func oneStoreWithoutConfigurationIsNotRouted() throws {
        let stores = try Stores([(nil, "all.sqlite")])
        #expect(!stores.coordinator.routesRequests)
        #expect(stores.coordinator.persistentStores.map(\.configurationName) == [nil])
        #expect(stores.coordinator.supportsQueryGenerations)
    }

    // §14.2
    @Test("A store added with a configuration the model lacks is refused, naming it")
    func unknownConfigurationIsRefused() throws {
        let stores = try Stores([])
        do {
            try stores.coordinator.addPersistentStore(type: .sqlite, configuration: "Archive", at: stores.url("a.sqlite"))
            Issue.record("the store was added")
        } catch let error as ObjectGraphError {
            #expect(error.code == .persistentStoreOpen)
            #expect(error.message.contains("Archive"))
        }
        #expect(stores.coordinator.persistentStores.isEmpty)
    }

    // §14.2
    @Test("New objects go to the first store whose configuration holds their entity")
    func newObjectsGoToTheirConfigurationsStore() throws {
        let stores = try Stores([("Catalog", "catalog.sqlite"), ("Orders", "orders.sqlite"), (nil, "rest.sqlite")])
        let list = stores.coordinator.persistentStores
        #expect(list.map(\.configurationName) == ["Catalog", "Orders", nil])
        let ctx = stores.context()
        let (product, order, note) = try ctx.performAndWait {
            let product = try Self.insert(ctx, "Product", ["name": "lamp", "price": 30])
            let category = try Self.insert(ctx, "Category", ["name": "light"])
            try product.setValue(category, forKey: "category")
            let order = try Self.insert(ctx, "Order", ["number": 1])
            let note = try Self.insert(ctx, "Note", ["text": "n"])
            try ctx.save()
            return (product.objectID, order.objectID, note.objectID)
        }
        #expect(product.storeIdentifier == list[0].identifier)
        #expect(order.storeIdentifier == list[1].identifier)
        #expect(note.storeIdentifier == list[2].identifier)
        #expect(try stores.count("Product", in: "catalog.sqlite") == 1)
        #expect(try stores.count("Category", in: "catalog.sqlite") == 1)
        #expect(try stores.count("Order", in: "catalog.sqlite") == 0)
        #expect(try stores.count("Order", in: "orders.sqlite") == 1)
        #expect(try stores.count("Product", in: "orders.sqlite") == 0)
        #expect(try stores.count("Note", in: "rest.sqlite") == 1)
        // The ID's URI names its store, and the coordinator finds it again.
        #expect(stores.coordinator.managedObjectID(forURIRepresentation: order.uriRepresentation) == order)
    }

    // §14.2
    @Test("Faults, relationships and updates reach the store that holds the object")
    func faultsAndUpdatesReachTheirStore() throws {
        let stores = try Stores([("Orders", "orders.sqlite"), ("Catalog", "catalog.sqlite")])
        let ctx = stores.context()
        try ctx.performAndWait {
            let product = try Self.insert(ctx, "Product", ["name": "lamp", "price": 30])
            try product.setValue(try Self.insert(ctx, "Category", ["name": "light"]), forKey: "category")
            _ = try Self.insert(ctx, "Order", ["number": 7])
            try ctx.save()
        }
        let reader = stores.context()
        try reader.performAndWait {
            let products = try reader.fetch(FetchRequest(entityName: "Product"))
            let category = try #require(products.first?.value(forKey: "category") as? ManagedObject)
            #expect(category.value(forKey: "name") as? String == "light")
            #expect((category.value(forKey: "products") as? Set<ManagedObject>)?.count == 1)
            let order = try #require(try reader.fetch(FetchRequest(entityName: "Order")).first)
            try order.setValue(Int64(8), forKey: "number")
            try products[0].setValue(Int64(31), forKey: "price")
            try reader.save()
        }
        let check = stores.context()
        try check.performAndWait { () throws in
            check.refreshAllObjects()
            #expect(try check.fetch(FetchRequest(entityName: "Order")).first?.value(forKey: "number") as? Int64 == 8)
            #expect(Self.prices(try check.fetch(FetchRequest(entityName: "Product"))) == [31])
        }
    }

    // §14.2
    @Test("A fetch merges the stores' rows in its sort order, then applies its offset and limit; counts sum")
    func fetchMergesStoresInSortOrder() throws {
        let stores = try Stores([])
        try stores.seedProducts([10, 30, 50], in: "a.sqlite")
        try stores.seedProducts([20, 40, 60], in: "b.sqlite")
        try stores.coordinator.addPersistentStore(type: .sqlite, configuration: "Catalog", at: stores.url("a.sqlite"))
        try stores.coordinator.addPersistentStore(type: .sqlite, configuration: "Catalog", at: stores.url("b.sqlite"))
        let ctx = stores.context()
        try ctx.performAndWait { () throws in
            var request = FetchRequest(entityName: "Product", sortDescriptors: [ObjectSortDescriptor("price")])
            #expect(Self.prices(try ctx.fetch(request)) == [10, 20, 30, 40, 50, 60])
            request.fetchOffset = 1
            request.fetchLimit = 3
            #expect(Self.prices(try ctx.fetch(request)) == [20, 30, 40])
            #expect(try ctx.fetchObjectIDs(request).count == 3)
            var descending = FetchRequest(entityName: "Product", sortDescriptors: [ObjectSortDescriptor("price", ascending: false)])
            descending.fetchLimit = 2
            #expect(Self.prices(try ctx.fetch(descending)) == [60, 50])
            // Without a sort: the stores in the order added.
            #expect(Set(Self.prices(try ctx.fetch(FetchRequest(entityName: "Product")))) == [10, 20, 30, 40, 50, 60])
            #expect(try ctx.count(for: FetchRequest(entityName: "Product")) == 6)
            #expect(try ctx.count(for: FetchRequest(entityName: "Product", predicate: ObjectPredicate(format: "price > 25"))) == 4)
            #expect(try ctx.count(for: request) == 3)
        }
    }

    // §14.2
    @Test("An object assigned to a store is saved there, though an earlier store holds its entity")
    func assignedObjectGoesToItsStore() throws {
        let stores = try Stores([("Catalog", "a.sqlite"), ("Catalog", "b.sqlite")])
        let second = stores.coordinator.persistentStores[1]
        let ctx = stores.context()
        try ctx.performAndWait {
            let first = try Self.insert(ctx, "Product", ["name": "lamp", "price": 30])
            let assigned = try Self.insert(ctx, "Product", ["name": "desk", "price": 90])
            ctx.assign(assigned, to: second)
            let obtained = try Self.insert(ctx, "Product", ["name": "chair", "price": 60])
            ctx.assign(obtained, to: second)
            try ctx.obtainPermanentIDs(for: [obtained])
            #expect(obtained.objectID.storeIdentifier == second.identifier)
            try ctx.save()
            #expect(first.objectID.storeIdentifier != second.identifier)
            #expect(assigned.objectID.storeIdentifier == second.identifier)
        }
        #expect(try stores.count("Product", in: "a.sqlite") == 1)
        #expect(try stores.count("Product", in: "b.sqlite") == 2)
    }

    // MARK: What crosses stores (§14.3)

    // §14.3
    @Test("A relationship between objects of different stores is refused at save, naming entity, object and relationship")
    func crossStoreRelationshipIsRefused() throws {
        let stores = try Stores([("Catalog", "catalog.sqlite"), ("Orders", "orders.sqlite")])
        let ctx = stores.context()
        try ctx.performAndWait {
            let product = try Self.insert(ctx, "Product", ["name": "lamp", "price": 30])
            let order = try Self.insert(ctx, "Order", ["number": 1])
            try order.setValue(product, forKey: "product")
            do {
                try ctx.save()
                Issue.record("the save succeeded")
            } catch let error as ObjectGraphError {
                #expect(error.code == .externalRelationship)
                #expect(error.entityName == "Order")
                #expect(error.propertyName == "product")
                #expect(error.objectID == order.objectID)
            }
            #expect(ctx.hasChanges)
        }
        #expect(try stores.count("Product", in: "catalog.sqlite") == 0)
        #expect(try stores.count("Order", in: "orders.sqlite") == 0)
    }

    // §14.3
    @Test("A save across stores is not atomic: a store failing after another committed leaves that commit")
    func saveAcrossStoresIsNotAtomic() throws {
        let stores = try Stores([])
        // An order numbered 1 already in the orders file, which the coordinator's contexts have not seen.
        let seeder = PersistentStoreCoordinator(managedObjectModel: stores.model, name: "seeder")
        try seeder.addPersistentStore(type: .sqlite, at: stores.url("orders.sqlite"))
        let seed = stores.context(seeder)
        try seed.performAndWait {
            _ = try Self.insert(seed, "Order", ["number": 1])
            try seed.save()
        }
        try stores.coordinator.addPersistentStore(type: .sqlite, configuration: "Catalog", at: stores.url("catalog.sqlite"))
        try stores.coordinator.addPersistentStore(type: .sqlite, configuration: "Orders", at: stores.url("orders.sqlite"))
        let ctx = stores.context()
        try ctx.performAndWait {
            _ = try Self.insert(ctx, "Product", ["name": "lamp", "price": 30])
            _ = try Self.insert(ctx, "Order", ["number": 1])
            do {
                try ctx.save()
                Issue.record("the save succeeded")
            } catch let error as ObjectGraphError {
                #expect(error.code == .persistentStoreSave)
                #expect(error.message.contains("catalog.sqlite"))
                #expect(error.storePath?.hasSuffix("orders.sqlite") == true)
            }
        }
        #expect(try stores.count("Product", in: "catalog.sqlite") == 1)
        #expect(try stores.count("Order", in: "orders.sqlite") == 1)
    }

    // §14.3
    @Test("A version conflict in any store is found before any store writes")
    func conflictsAreFoundBeforeAnyStoreWrites() throws {
        let stores = try Stores([("Catalog", "catalog.sqlite"), ("Orders", "orders.sqlite")])
        let ctx = stores.context()
        // The context keeps the order (a registry holds objects weakly: a released one would read the new row).
        let order = try ctx.performAndWait {
            let order = try Self.insert(ctx, "Order", ["number": 1])
            try ctx.save()
            return order
        }
        let orderID = order.objectID
        // Another coordinator changes the order behind the first's back.
        let other = PersistentStoreCoordinator(managedObjectModel: stores.model, name: "other")
        try other.addPersistentStore(type: .sqlite, configuration: "Catalog", at: stores.url("catalog.sqlite"))
        try other.addPersistentStore(type: .sqlite, configuration: "Orders", at: stores.url("orders.sqlite"))
        let elsewhere = stores.context(other)
        try elsewhere.performAndWait {
            let order = try elsewhere.existingObject(with: orderID)
            try order.setValue(Int64(2), forKey: "number")
            try elsewhere.save()
        }
        try ctx.performAndWait {
            _ = try Self.insert(ctx, "Product", ["name": "lamp", "price": 30])
            try order.setValue(Int64(3), forKey: "number")
            do {
                try ctx.save()
                Issue.record("the save succeeded")
            } catch let error as ObjectGraphError {
                #expect(error.code == .merge)
            }
        }
        #expect(try stores.count("Product", in: "catalog.sqlite") == 0)
    }

    // MARK: Entities no store holds (§14.4)

    // §14.4
    @Test("An insert of an entity no store's configuration holds fails at save, naming the entity; its fetch finds nothing")
    func entityInNoConfigurationFailsAtSave() throws {
        let stores = try Stores([("Catalog", "catalog.sqlite"), ("Orders", "orders.sqlite")])
        let ctx = stores.context()
        try ctx.performAndWait {
            #expect(try ctx.fetch(FetchRequest(entityName: "Note")).isEmpty)
            #expect(try ctx.count(for: FetchRequest(entityName: "Note")) == 0)
            _ = try Self.insert(ctx, "Note", ["text": "n"])
            do {
                try ctx.save()
                Issue.record("the save succeeded")
            } catch let error as ObjectGraphError {
                #expect(error.code == .persistentStoreSave)
                #expect(error.entityName == "Note")
            }
            #expect(throws: ObjectGraphError.self) { try ctx.obtainPermanentIDs(for: Array(ctx.insertedObjects)) }
        }
    }

    // §14.2
    @Test("Permanent IDs come from the store each object goes to")
    func permanentIDsComeFromTheirStore() throws {
        let stores = try Stores([("Catalog", "catalog.sqlite"), ("Orders", "orders.sqlite")])
        let list = stores.coordinator.persistentStores
        let ctx = stores.context()
        try ctx.performAndWait {
            let product = try Self.insert(ctx, "Product", ["name": "lamp", "price": 30])
            let order = try Self.insert(ctx, "Order", ["number": 1])
            try ctx.obtainPermanentIDs(for: [order, product])
            #expect(product.objectID.storeIdentifier == list[0].identifier)
            #expect(order.objectID.storeIdentifier == list[1].identifier)
            try ctx.save()
        }
        #expect(try stores.count("Order", in: "orders.sqlite") == 1)
        #expect(try stores.count("Product", in: "catalog.sqlite") == 1)
    }

    // MARK: Batch requests, history, generations on a store with a configuration (§14.5)

    // §14.5
    @Test("A batch insert goes to the store holding its entity; a batch update and delete to the stores holding its rows")
    func batchRequestsGoToTheirStore() throws {
        let stores = try Stores([("Catalog", "catalog.sqlite"), ("Orders", "orders.sqlite")])
        let ctx = stores.context()
        try ctx.performAndWait {
            _ = try ctx.execute(BatchInsertRequest(entityName: "Order", objects: [["number": 1], ["number": 2]]))
            _ = try ctx.execute(BatchInsertRequest(entityName: "Product", objects: [["name": "a", "price": 1], ["name": "b", "price": 2]]))
            var update = BatchUpdateRequest(entityName: "Product", propertiesToUpdate: ["price": 5])
            update.resultType = .count
            let updated = try ctx.execute(update)
            #expect(updated.count == 2)
            #expect(Self.prices(try ctx.fetch(FetchRequest(entityName: "Product"))) == [5, 5])
        }
        #expect(try stores.count("Order", in: "orders.sqlite") == 2)
        #expect(try stores.count("Order", in: "catalog.sqlite") == 0)
        #expect(try stores.count("Product", in: "catalog.sqlite") == 2)
        try ctx.performAndWait {
            var delete = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Order"))
            delete.resultType = .count
            let deleted = try ctx.execute(delete)
            #expect(deleted.count == 2)
        }
        #expect(try stores.count("Order", in: "orders.sqlite") == 0)
    }

    // §14.5
    @Test("One store added with a configuration keeps persistent history and query generations")
    func historyAndGenerationsOnAConfiguredStore() throws {
        var options = StoreOptions()
        options.persistentHistoryTracking = true
        let stores = try Stores([("Catalog", "catalog.sqlite")], options: options)
        #expect(stores.coordinator.routesRequests)
        #expect(stores.coordinator.supportsQueryGenerations)
        let ctx = stores.context()
        try ctx.performAndWait {
            _ = try Self.insert(ctx, "Product", ["name": "lamp", "price": 30])
            try ctx.save()
        }
        let history = try stores.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
        #expect(history.count == 1)
        #expect(history.first?.changes?.first?.changedObjectID.entity.name == "Product")
        let pinned = stores.context()
        try pinned.performAndWait {
            try pinned.setQueryGenerationFrom(.current)
            #expect(Self.prices(try pinned.fetch(FetchRequest(entityName: "Product"))) == [30])
        }
        try ctx.performAndWait {
            _ = try Self.insert(ctx, "Product", ["name": "desk", "price": 90])
            try ctx.save()
        }
        try pinned.performAndWait { () throws in
            #expect(Self.prices(try pinned.fetch(FetchRequest(entityName: "Product"))) == [30])
        }
    }

    // §14.2
    @Test("With several stores, persistent history is the first store's: a save to another store adds no transaction to it")
    func historyIsTheFirstStores() throws {
        var options = StoreOptions()
        options.persistentHistoryTracking = true
        let stores = try Stores([("Catalog", "catalog.sqlite"), ("Orders", "orders.sqlite")], options: options)
        let ctx = stores.context()
        try ctx.performAndWait {
            _ = try Self.insert(ctx, "Order", ["number": 1])
            try ctx.save()
        }
        #expect(try stores.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?)).isEmpty)
        try ctx.performAndWait {
            _ = try Self.insert(ctx, "Product", ["name": "lamp", "price": 30])
            try ctx.save()
        }
        let history = try stores.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
        #expect(history.count == 1)
        #expect(history.first?.changes?.map(\.changedObjectID.entity.name) == ["Product"])
    }

    // §14.2
    @Test("Each SQLite store reads on read connections of its own")
    func eachStoreHasItsReaders() throws {
        let stores = try Stores([("Catalog", "catalog.sqlite"), ("Orders", "orders.sqlite")])
        let ctx = stores.context()
        try ctx.performAndWait {
            _ = try Self.insert(ctx, "Order", ["number": 1])
            try ctx.save()
        }
        let added = stores.coordinator.addedStores
        #expect(added.count == 2 && added.allSatisfy { $0.readers != nil })
        #expect(added[1].readers?.openReaders == 0)
        let reader = stores.context()
        try reader.performAndWait { () throws in
            #expect(try reader.fetch(FetchRequest(entityName: "Order")).count == 1)
        }
        #expect(added[1].readers?.openReaders == 1)
        #expect(added[0].readers?.openReaders == 0)
    }

    // §14.2
    @Test("A coordinator with several stores holds no query generation")
    func severalStoresHoldNoGeneration() throws {
        let stores = try Stores([("Catalog", "catalog.sqlite"), ("Orders", "orders.sqlite")])
        #expect(!stores.coordinator.supportsQueryGenerations)
    }

    // §14.2
    @Test("A file already added to the coordinator is refused")
    func sameFileTwiceIsRefused() throws {
        let stores = try Stores([("Catalog", "catalog.sqlite")])
        let twice = try #require(throws: ObjectGraphError.self) {
            try stores.coordinator.addPersistentStore(type: .sqlite, configuration: "Orders", at: stores.url("catalog.sqlite"))
        }
        #expect(twice.code == .persistentStoreOpen)
        // §13.5: a file of the same name with another extension would share the external data folder.
        let sameName = try #require(throws: ObjectGraphError.self) {
            try stores.coordinator.addPersistentStore(type: .sqlite, configuration: "Orders", at: stores.url("catalog.store"))
        }
        #expect(sameName.code == .persistentStoreOpen && sameName.description.contains("external data folder"))
    }
}
