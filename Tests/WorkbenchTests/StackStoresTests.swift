import Foundation
import Testing
@testable import ObjectGraph
@testable import Workbench

/// `stack.stores` (Docs/scenarios.md "The stack", Docs/coredata-behaviour.md §14): a store per configuration of the
/// model file, each in a file of its own, which every coordinator of the run adds in the listed order.
@Suite("A scenario's stores by configuration (stack.stores)")
struct StackStoresTests {
    /// A scenario over Scenarios/models/Shop.xcdatamodeld (configurations Catalog and Orders), read as if it were in
    /// Scenarios/, with `stores` as the stack's stores and `extra` appended to the stack.
    static func text(stores: String = "[{ configuration: Orders }, { configuration: Catalog }]", entity: String = "Order",
                     topology: String = "ambar", migrate: Bool = true) -> String {
        """
        name: shop-stores
        seed: 3
        model: { file: models/Shop.xcdatamodeld, entity: \(entity), idKey: number, version: Shop }
        stack:
          topology: \(topology)
          stores: \(stores)
        phases:
          - name: seed
            actors:
              - importer: { objects: 40, chunkSize: 20 }
          - name: run
            duration: 200ms
            actors:
              - viewer: { visibleObjects: 10 }
              - editor: { rate: 10/s, edits: 2 }
              - importer: { objects: 20, chunkSize: 10, updateFraction: 0.25 }
        \(migrate ? "  - name: migrate\n    actors:\n      - migrator: { version: Shop 2 }\n" : "")  - name: verify
        """
    }

    static let file = DocsTests.root.appendingPathComponent("Scenarios/stores.yaml").path

    static func scenario(_ text: String = StackStoresTests.text()) throws -> Scenario {
        try #require(try ScenarioLoader.load(text: text, file: file).variants.first)
    }

    /// Rows of `table` in the SQLite file at `url` (0 when the file has no such table).
    static func rows(_ table: String, in url: URL) throws -> Int64 {
        let connection = try SQLiteConnection(path: url.path, readOnly: true, busyTimeout: 1, countsOperations: false)
        let exists = try connection.statement("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '\(table)'")
        guard try exists.step(), exists.int64(at: 0) > 0 else { return 0 }
        let count = try connection.statement("SELECT COUNT(*) FROM \(table)")
        guard try count.step() else { return 0 }
        return count.int64(at: 0)
    }

    /// The columns of `table` in the SQLite file at `url`.
    static func columns(_ table: String, in url: URL) throws -> [String] {
        let connection = try SQLiteConnection(path: url.path, readOnly: true, busyTimeout: 1, countsOperations: false)
        let info = try connection.statement("PRAGMA table_info(\(table))")
        var names: [String] = []
        while try info.step() { names.append(info.string(at: 1)) }
        return names
    }

    // §14.2
    @Test("Each listed configuration gets a store file, the first the main file, in the listed order")
    func storeFiles() throws {
        let scenario = try Self.scenario()
        #expect(scenario.stack.stores == ["Orders", "Catalog"])
        let files = scenario.stack.storeFiles(main: URL(fileURLWithPath: "/tmp/run/store.sqlite"))
        #expect(files.map(\.configuration) == ["Orders", "Catalog"])
        #expect(files.map(\.url.path) == ["/tmp/run/store.sqlite", "/tmp/run/store-Catalog.sqlite"])
        var plain = scenario.stack
        plain.stores = nil
        #expect(plain.storeFiles(main: URL(fileURLWithPath: "/tmp/run/store.sqlite")).map(\.configuration) == [nil])
    }

    // §14.2
    @Test("Every coordinator of the stack adds both stores in order; an Order is saved to the Orders file, not the Catalog file, and a migrator migrates both files",
          arguments: ["ambar", "container", "history"])
    func ordersInTheirFile(_ topology: String) throws {
        let scenario = try Self.scenario(Self.text(topology: topology))
        let model = try ManagedObjectModel(file: try #require(scenario.model.entities))
        let directory = try TemporaryDirectory("workbench-stores")
        let main = SimulatedMainThread(label: "test-main"), recorder = RunRecorder()
        let storeURL = directory.file("store.sqlite")
        let stack = try TopologyBuilder(scenario: scenario, model: model, storeURL: storeURL, main: main, recorder: recorder).build()
        let catalogURL = directory.file("store-Catalog.sqlite")
        for (name, coordinator) in stack.coordinators {
            let stores = coordinator.persistentStores
            #expect(stores.map(\.configurationName) == ["Orders", "Catalog"], "\(name)")
            #expect(stores.map { $0.url?.standardizedFileURL.path } == [storeURL.standardizedFileURL.path, catalogURL.standardizedFileURL.path], "\(name)")
        }
        let importer = stack.makeImporter()
        try importer.performAndWait {
            for number in Int64(1)...5 {
                let order = try importer.insertNewObject(forEntityName: "Order")
                try order.setValue(number, forKey: "number")
            }
            try importer.save()
        }
        try stack.afterBackgroundSave(importer)
        #expect(try Self.rows("ZORDER", in: storeURL) == 5)
        #expect(try Self.rows("ZORDER", in: catalogURL) == 0)

        let workload = Workload(scenario: scenario, stack: stack, recorder: recorder, main: main, model: model)
        let spec = try #require(scenario.phases.flatMap(\.actors).compactMap { if case .migrator(let m) = $0 { return m } else { return nil } }.first)
        let migrator = MigratorActor(name: "migrator", spec: spec, workload: workload, storeFiles: scenario.stack.storeFiles(main: storeURL))
        migrator.run(start: 0, duration: nil, keepGoing: { true })
        let notes = recorder.state.withLock { $0.notes }
        #expect(notes.isEmpty, "\(notes)")
        #expect(migrator.migrated.withLock { $0 } != nil)
        // Shop 2 renames OrderLine.quantity to units (Orders) and adds Product.subtitle (Catalog).
        #expect(try Self.columns("ZORDERLINE", in: storeURL).contains("ZUNITS"))
        #expect(try Self.columns("ZPRODUCT", in: catalogURL).contains("ZSUBTITLE"))
        #expect(try Self.rows("ZORDER", in: storeURL) == 5)
    }

    // §14.2
    @Test("A scenario with stores by configuration runs, migrates to Shop 2 and passes the oracle, its entity's store first or not",
          arguments: ["[{ configuration: Orders }, { configuration: Catalog }]", "[{ configuration: Catalog }, { configuration: Orders }]"])
    func runs(_ stores: String) throws {
        let result = try runVariant(try Self.scenario(Self.text(stores: stores)))
        #expect(result.notes.isEmpty, "\(result.notes)")
        #expect(result.counters["migrationFailures"] == nil)
        #expect(result.value("rowsMigrated", "value") ?? 0 >= 60)
        #expect(result.oracle.verdict == .pass && result.oracle.storeMismatches == 0, "\(result.oracle.summary)")
    }

    @Test("stores naming a configuration the model lacks is refused, listing the model's configurations")
    func unknownConfiguration() {
        let message = loaderMessage(Self.text(stores: "[{ configuration: Orders }, { configuration: Archive }]"), file: Self.file)
        #expect(message.contains("stack.stores") && message.contains("no configuration 'Archive'") && message.contains("Catalog, Orders"), "\(message)")
        #expect(message.contains("stores.yaml:"), "\(message)")
    }

    @Test("The scenario's entity in no listed configuration is refused at stack.stores, naming the one that holds it")
    func entityOutsideTheStores() {
        let message = loaderMessage(Self.text(stores: "[{ configuration: Catalog }]"), file: Self.file)
        #expect(message.contains("stores.yaml:") && message.contains("stack.stores"), "\(message)")
        #expect(message.contains("'Order' is in no listed configuration") && message.contains("list Orders"), "\(message)")
    }

    // §14.3, §14.4
    @Test("A required destination the seeds fill in no listed configuration, or in another store than the entity, is refused")
    func seededDestinations() throws {
        let folder = try TemporaryDirectory("workbench-stores")
        try folder.write("notes.json", """
            {"entities": [
              {"name": "Note", "attributes": [{"name": "id", "type": "integer64", "optional": false, "defaultValue": 0}],
               "relationships": [{"name": "folder", "destination": "Folder", "inverse": "notes", "optional": false}]},
              {"name": "Folder", "attributes": [{"name": "name", "type": "string"}],
               "relationships": [{"name": "notes", "destination": "Note", "inverse": "folder", "toMany": true}]}],
             "configurations": [{"name": "Notes", "entities": ["Note"]}, {"name": "Folders", "entities": ["Folder"]}]}
            """)
        func message(_ stores: String) throws -> String {
            let file = try folder.write("notes.yaml", """
                name: notes
                model: { file: notes.json, entity: Note }
                stack: { topology: container, stores: \(stores) }
                phases:
                  - name: seed
                    actors: [{ importer: { objects: 10 } }]
                """)
            do { _ = try ScenarioLoader.load(file: file.path); return "ok" } catch { return "\(error)" }
        }
        let missing = try message("[{ configuration: Notes }]")
        #expect(missing.contains("notes.yaml:3:") && missing.contains("an entity the seed plan fills 'Folder' is in no listed configuration") && missing.contains("list Folders"), "\(missing)")
        let crossing = try message("[{ configuration: Notes }, { configuration: Folders }]")
        #expect(crossing.contains("may not cross stores"), "\(crossing)")
    }

    @Test("stores over a model without configurations, twice the same configuration, an in-memory store or the 7.x stack are refused")
    func otherRefusals() {
        let workload = Self.text().replacingOccurrences(of: "model: { file: models/Shop.xcdatamodeld, entity: Order, idKey: number, version: Shop }", with: "")
            .replacingOccurrences(of: "\n  - name: migrate\n    actors:\n      - migrator: { version: Shop 2 }", with: "")
        #expect(loaderMessage(workload, file: Self.file).contains("has none"))
        let twice = loaderMessage(Self.text(stores: "[{ configuration: Orders }, { configuration: Orders }]"), file: Self.file)
        #expect(twice.contains("listed twice"), "\(twice)")
        let memory = loaderMessage(Self.text(topology: "container", migrate: false).replacingOccurrences(of: "  stores:", with: "  store: inMemory\n  stores:"), file: Self.file)
        #expect(memory.contains("in-memory"), "\(memory)")
        let inline = loaderMessage(Self.text().replacingOccurrences(of: "idKey: number,", with: "idKey: number, fields: [status],")
            .replacingOccurrences(of: "migrator: { version: Shop 2 }", with: "migrator: { entities: [{ name: Order, attributes: [{ name: number, type: integer64 }, { name: status, type: string }] }] }"), file: Self.file)
        #expect(inline.contains("the migrator's next version has no configuration 'Orders'"), "\(inline)")
        let legacy = loaderMessage(Self.text(topology: "ambar7"), file: Self.file)
        #expect(legacy.contains("ambar7"), "\(legacy)")
        // §14.2: history is the first store's, and several stores have no query generation.
        let history = loaderMessage(Self.text(stores: "[{ configuration: Catalog }, { configuration: Orders }]", topology: "history"), file: Self.file)
        #expect(history.contains("list Orders first (it holds Order)"), "\(history)")
        let pinned = loaderMessage(Self.text().replacingOccurrences(of: "  stores:", with: "  pinViewGeneration: true\n  stores:"), file: Self.file)
        #expect(pinned.contains("no query generation"), "\(pinned)")
    }
}
