import Foundation
import Testing
@testable import ObjectGraph
import SeededRandom
@testable import Workbench

/// A scenario whose `model:` is an app's Xcode model bundle (Docs/bring-your-own-app.md): `Scenarios/shop-orders.yaml`
/// over `Scenarios/models/Shop.xcdatamodeld`, which has entity inheritance, an ordered to-many, a Transformable, two
/// configurations, uniqueness constraints, fetch indexes and two versions.
@Suite("A scenario over an app's Xcode model")
struct XcodeModelScenarioTests {
    static var scenarioPath: String { OperationTraceTests.root.appendingPathComponent("Scenarios/shop-orders.yaml").path }

    /// The shipped scenario, scaled down to a few hundred orders.
    static func scenario(_ overrides: [String] = []) throws -> Scenario {
        let scaled = ["phases.seed.importer.objects=60", "phases.run.importer.objects=90", "phases.seed.importer.chunkSize=30",
                      "phases.run.importer.chunkSize=30"] + overrides
        return try #require(try ScenarioLoader.load(file: scenarioPath, overrides: scaled).variants.first)
    }

    @Test("The bundle's versions, configurations, inheritance, constraints and fetch indexes reach the scenario's model")
    func readsTheBundle() throws {
        let model = try Self.scenario().model
        #expect(model.file == "models/Shop.xcdatamodeld" && model.version == "Shop" && model.versions.map(\.name) == ["Shop", "Shop 2"])
        #expect(model.skipped == nil)
        let file = try #require(model.entities)
        let byName = Dictionary(uniqueKeysWithValues: file.entities.map { ($0.name, $0) })
        #expect(byName["Product"]?.abstract == true && byName["Book"]?.parent == "Product")
        #expect(byName["Order"]?.uniquenessConstraints == [["number"]] && byName["Order"]?.fetchIndexes?.map(\.name) == ["byPlacedAt"])
        #expect(byName["Order"]?.relationships?.first { $0.name == "lines" }?.ordered == true)
        #expect(byName["Product"]?.attributes?.first { $0.name == "tags" }?.type == .transformable)
        #expect(model.versions.last?.configurations?.map(\.name) == ["Catalog", "Orders"])
        // Every order is filled with its lines; an edit changes none of the constrained number.
        #expect(model.entity == "Order" && model.idKey == "number" && model.sortKey == "number" && !model.fields.contains("number"))
    }

    @Test("The scenario runs over the Xcode model, migrates Shop to Shop 2 and reports, with the oracle's pass")
    func runsAndMigrates() throws {
        let result = try runVariant(try Self.scenario())
        #expect(result.notes.isEmpty, "\(result.notes)")
        // 60 orders seeded, 90 more of which 30% update seeded ones: 123 orders, each with one line (rowsInserted
        // counts the scenario's entity; the migration copies both tables).
        let orders = 60 + 90 - Int((90 * 0.3).rounded())
        #expect(result.counters["rowsInserted"] == orders, "\(result.counters["rowsInserted"] ?? -1)")
        #expect(result.value("rowsMigrated", "value") == Double(orders * 2))
        #expect(result.oracle.verdict == .pass && result.oracle.storeMismatches == 0, "\(result.oracle.summary)")
    }

    @Test("The run's operation trace, ordered lines, Transformables and migration included, replays through ObjectGraph exactly")
    func traceReplays() throws {
        try OperationTraceTests.check(try Self.scenario())
    }

    @Test("A Book, a sub-entity of an abstract Product, gets its inherited Transformable tags and a pattern-matching ISBN")
    func seedsASubEntity() throws {
        let scenario = try Self.scenario(["model.entity=Book", "model.idKey=stock", "phases.run.importer.updateFraction=0"])
        let seeds = try #require(scenario.model.seeds)
        let model = try ManagedObjectModel(file: try #require(scenario.model.entities))
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .inMemory, at: nil)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        var rng = SeededGenerator(seed: 3)
        try context.performAndWait {
            let book = try context.insertNewObject(forEntityName: "Book")
            try seeds.fill(book, number: 1, skipping: [], numbers: SeedPlan.Numbers(), rng: &rng)
            try context.save()
            // §13.1: the Transformable reads back as the array of strings it was given.
            let tags = try #require(book.value(forKey: "tags") as? [String])
            #expect((1...3).contains(tags.count))
            // §13.7: the pattern and lengths the model gives the ISBN.
            let isbn = try #require(book.value(forKey: "isbn") as? String)
            #expect((10...13).contains(isbn.count) && isbn.allSatisfy { "0123456789X".contains($0) }, "\(isbn)")
        }
    }

    @Test("What an Xcode model has that the library leaves out reaches the scenario's model, each with its file and line")
    func listsWhatTheReaderSkipped() throws {
        let folder = try TemporaryDirectory()
        let library = OperationTraceTests.root.appendingPathComponent("Tests/XcodeModelTests/Fixtures/Library.xcdatamodel").path
        let file = try folder.write("library.yaml", """
            name: library
            model: { file: \(library), entity: Note }
            stack: { topology: headless }
            phases:
              - name: seed
                actors:
                  - importer: { objects: 10 }
            """)
        let skipped = try #require(try ScenarioLoader.load(file: file.path).variants.first?.model.skipped)
        #expect(skipped.contains { $0.contains("Library.xcdatamodel/contents:24: skipped <fetchedProperty name=\"recentVolumes\">") }, "\(skipped)")
        #expect(skipped.contains { $0.contains("skipped <fetchRequest name=\"LongVolumes\">") })
    }
}
