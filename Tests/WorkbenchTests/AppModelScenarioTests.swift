import Foundation
import Testing
@testable import ObjectGraph
import SeededRandom
@testable import Workbench

/// A scenario over an app's own model file (Docs/scenarios.md "A model from a file", Docs/bring-your-own-app.md):
/// `Fixtures/app-model.json` has two versions, an abstract parent, every attribute type, a required to-one and an
/// ordered to-many with a minimum count.
@Suite("A scenario over an app's own model file")
struct AppModelScenarioTests {
    static var scenarioPath: String { Fixtures.url("app-scenario.yaml").path }

    /// The scenario fixture with `replacing` replaced, written beside a copy of the model file; the message the
    /// loader gives for it ("ok" when it loads).
    static func message(_ replacements: [(String, String)], folder: TemporaryDirectory) throws -> String {
        var text = try Fixtures.text("app-scenario.yaml")
        for (old, new) in replacements { text = text.replacingOccurrences(of: old, with: new) }
        try folder.write("app-model.json", try Fixtures.text("app-model.json"))
        let file = try folder.write("app.yaml", text)
        do {
            _ = try ScenarioLoader.load(file: file.path)
            return "ok"
        } catch { return "\(error)" }
    }

    @Test("A model file's first version makes the store; its entity, id key and fields are the file's, every other property is seeded")
    func loadsTheModelFile() throws {
        let scenario = try #require(try ScenarioLoader.load(file: Self.scenarioPath).variants.first)
        let model = scenario.model
        #expect(model.file == "app-model.json" && model.version == "Notes" && model.versions.map(\.name) == ["Notes", "Notes 2"])
        #expect(model.entity == "Note" && model.idKey == "id" && model.sortKey == "id")
        // Strings and numbers, the id and the constrained slug aside.
        #expect(model.fields == ["title", "rank", "views", "score", "weight", "code"], "\(model.fields)")
        #expect(model.entities?.entities.first { $0.name == "Note" }?.attributes?.contains { $0.name == "summary" } == false)
        let seeds = try #require(model.seeds)
        #expect(seeds.entity == "Note")
        // The migrator's version is the file's second.
        let migrator = scenario.phases.flatMap(\.actors).compactMap { if case .migrator(let m) = $0 { return m } else { return nil } }.first
        #expect(migrator?.to.entities.first { $0.name == "Note" }?.attributes?.contains { $0.name == "summary" } == true)
    }

    @Test("A seeded Note has a value for every attribute within its bounds, a folder and two attachments, and saves")
    func seedsEveryProperty() throws {
        let scenario = try #require(try ScenarioLoader.load(file: Self.scenarioPath).variants.first)
        let seeds = try #require(scenario.model.seeds)
        let model = try ManagedObjectModel(file: try #require(scenario.model.entities))
        let folder = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(with: PersistentStoreDescription(url: folder.file("notes.sqlite")))
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        var rng = SeededGenerator(seed: 5)
        let numbers = SeedPlan.Numbers()
        try context.performAndWait {
            var notes: [ManagedObject] = []
            for key in Int64(1)...20 {
                let note = try context.insertNewObject(forEntityName: "Note")
                try note.setValue(key, forKey: "id")
                try seeds.fill(note, number: key, skipping: ["id"], numbers: numbers, rng: &rng)
                notes.append(note)
            }
            try context.save()
            let code = try NSRegularExpression(pattern: "^[A-Z]{3}[0-9]+$")
            for note in notes {
                for attribute in note.entity.attributes where attribute.name != "id" {
                    #expect(note.value(forKey: attribute.name) != nil, "\(attribute.name) is not set")
                }
                let rank = try #require(note.value(forKey: "rank") as? Int16)
                #expect((1...100).contains(rank))
                let score = try #require(note.value(forKey: "score") as? Double)
                #expect((0...5).contains(score))
                let price = try #require(note.value(forKey: "price") as? Decimal)
                #expect(price >= Decimal(string: "0.5")! && price <= Decimal(string: "99.99")!)
                let text = try #require(note.value(forKey: "code") as? String)
                #expect(code.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil, "\(text)")
                let title = try #require(note.value(forKey: "title") as? String)
                #expect((3...40).contains(title.count))
                let thumbnail = try #require(note.value(forKey: "thumbnail") as? Data)
                #expect((4...32).contains(thumbnail.count))
                #expect((note.value(forKey: "folder") as? ManagedObject)?.value(forKey: "name") is String)
                // An ordered to-many reads as an array, in the order the plan made (§12).
                #expect((note.value(forKey: "attachments") as? [ManagedObject])?.count == 2)
            }
            // Constrained values come from the record's number: no two notes share a slug.
            #expect(Set(notes.compactMap { $0.value(forKey: "slug") as? String }).count == 20)
        }
        // The same seed stores the same values.
        var again = SeededGenerator(seed: 5), first = SeededGenerator(seed: 5)
        let slug = try #require(seeds.entities["Note"]?.attributes.first { $0.name == "slug" })
        #expect(SeedPlan.value(slug, entity: "Note", number: 3, rng: &again) as? String == SeedPlan.value(slug, entity: "Note", number: 3, rng: &first) as? String)
    }

    @Test("The scenario runs, migrates the store to the named version and reports, with no failed save and the oracle's pass")
    func runsAndMigrates() throws {
        let scenario = try #require(try ScenarioLoader.load(file: Self.scenarioPath).variants.first)
        let result = try runVariant(scenario)
        #expect(result.notes.isEmpty, "\(result.notes)")
        // 60 seeded, then 40 of which a quarter update seeded ones: 90 notes, each with a folder and two attachments.
        #expect(result.counters["rowsInserted"] == 90)
        #expect(result.value("rowsMigrated", "value") ?? 0 >= 90 * 4)
        #expect(result.counters["migrationFailures"] == nil)
        #expect(result.oracle.verdict == .pass && result.oracle.storeMismatches == 0, "\(result.oracle.summary)")
        let again = try runVariant(scenario)
        #expect(again.value("rowsMigrated", "value") == result.value("rowsMigrated", "value"))
    }

    @Test("The scenario's operation trace, every attribute type and inserted destination in it, replays through ObjectGraph with every count exact")
    func traceReplays() throws {
        let scenario = try #require(try ScenarioLoader.load(file: Self.scenarioPath).variants.first)
        try OperationTraceTests.check(scenario)
    }

    @Test("A missing model file is refused at the scenario's line and field, naming the path")
    func missingFile() throws {
        let folder = try TemporaryDirectory()
        let message = try Self.message([("file: app-model.json", "file: no-such-model.json")], folder: folder)
        #expect(message.contains("app.yaml:7:") && message.contains("model.file") && message.contains("no-such-model.json") && message.contains("no such file"), "\(message)")
        let short = try Self.message([("\n  file: app-model.json\n  entity: Note", " Models/App.yaml")], folder: folder)
        #expect(short.contains("app.yaml:6:") && short.contains(": model:") && short.contains("Models/App.yaml: no such file"), "\(short)")
    }

    @Test("Without entity:, a model file with several candidate entities lists them; one with a single candidate uses it")
    func candidateEntities() throws {
        let folder = try TemporaryDirectory()
        let message = try Self.message([("  entity: Note\n", "")], folder: folder)
        #expect(message.contains("app.yaml:7:") && message.contains("model.file") && message.contains("(Note, Folder, Attachment): name one with entity:"), "\(message)")
        try folder.write("one.yaml", """
            entities:
              - { name: Base, abstract: true, attributes: [{ name: id, type: integer64 }] }
              - { name: Song, parent: Base, attributes: [{ name: title, type: string }] }
              - { name: Empty }
            """)
        let file = try folder.write("one-scenario.yaml", """
            name: songs
            mode: real
            model: one.yaml
            stack: { topology: headless }
            phases:
              - name: seed
                actors:
                  - importer: { objects: 10 }
            """)
        let scenario = try #require(try ScenarioLoader.load(file: file.path).variants.first)
        #expect(scenario.model.entity == "Song" && scenario.model.idKey == "id" && scenario.model.fields == ["title"])
    }

    @Test("An unknown version is refused, for the store's and for the migrator's, listing the file's versions")
    func unknownVersion() throws {
        let folder = try TemporaryDirectory()
        let store = try Self.message([("  entity: Note\n", "  entity: Note\n  version: Notes 3\n")], folder: folder)
        #expect(store.contains("app.yaml:9:") && store.contains("model.version") && store.contains("no version 'Notes 3' in app-model.json (its versions: Notes, Notes 2)"), "\(store)")
        let migrator = try Self.message([("version: Notes 2", "version: Notes 9")], folder: folder)
        #expect(migrator.contains("phases.migrate.migrator.version") && migrator.contains("no version 'Notes 9'"), "\(migrator)")
        let same = try Self.message([("version: Notes 2", "version: Notes")], folder: folder)
        #expect(same.contains("nothing to migrate"), "\(same)")
    }

    @Test("A pattern beyond simple character classes is refused at load, asking for values:")
    func unsupportedPattern() throws {
        let folder = try TemporaryDirectory()
        try folder.write("p.json", """
            {"entities": [{"name": "Tag", "attributes": [{"name": "code", "type": "string", "regularExpression": "(ab|cd)+"}]}]}
            """)
        let file = try folder.write("p.yaml", "name: tags\nmode: real\nmodel: p.json\nstack: { topology: headless }\nphases:\n  - name: seed\n")
        let message: String
        do { _ = try ScenarioLoader.load(file: file.path); message = "ok" } catch { message = "\(error)" }
        #expect(message.contains("p.yaml:3:") && message.contains("Tag.code") && message.contains("values:"), "\(message)")
    }

    @Test("A required relationship back to the scenario's own entity, or a loop of required relationships, is refused, naming it")
    func unseedableRelationships() throws {
        let folder = try TemporaryDirectory()
        func message(_ model: String, entity: String) throws -> String {
            try folder.write("m.yaml", model)
            let file = try folder.write("s.yaml", "name: rel\nmode: real\nmodel: { file: m.yaml, entity: \(entity) }\nstack: { topology: headless }\nphases:\n  - name: seed\n")
            do { _ = try ScenarioLoader.load(file: file.path); return "ok" } catch { return "\(error)" }
        }
        let manager = try message("""
            entities:
              - name: Person
                attributes: [{ name: name, type: string }]
                relationships:
                  - { name: manager, destination: Person, inverse: reports, optional: false }
                  - { name: reports, destination: Person, inverse: manager, toMany: true }
            """, entity: "Person")
        #expect(manager.contains("s.yaml:3:") && manager.contains("model.entity") && manager.contains("Person.manager: a required relationship to Person"), "\(manager)")
        let loop = try message("""
            entities:
              - { name: Order, attributes: [{ name: total, type: double }], relationships: [{ name: box, destination: Box, inverse: order }] }
              - name: Box
                attributes: [{ name: size, type: integer16 }]
                relationships:
                  - { name: order, destination: Order, inverse: box }
                  - { name: label, destination: Label, inverse: box, optional: false }
                  - { name: sheets, destination: Sheet, inverse: box, toMany: true }
              - name: Label
                attributes: [{ name: text, type: string }]
                relationships:
                  - { name: box, destination: Box, inverse: label }
                  - { name: sheet, destination: Sheet, inverse: labels, optional: false }
              - name: Sheet
                attributes: [{ name: code, type: string }]
                relationships:
                  - { name: labels, destination: Label, inverse: sheet, toMany: true }
                  - { name: box, destination: Box, inverse: sheets, optional: false }
            """, entity: "Order")
        #expect(loop.contains("Sheet.box: required relationships loop back (Order → Box → Label → Sheet → Box)"), "\(loop)")
    }

    @Test("Each type's values lie within the attribute's bounds and the type's, from 0 (1 when constrained) without a minimum")
    func valueBounds() throws {
        func values(_ type: AttributeType, unique: Bool = false, _ shape: (inout ModelFile.Attribute) -> Void = { _ in }) throws -> SeedPlan.Values {
            var attribute = ModelFile.Attribute(name: "a", type: type)
            shape(&attribute)
            return try SeedPlan.values(of: attribute, entity: "E", unique: unique)
        }
        #expect(try values(.integer16) == .integer(min: 0, max: Int64(Int16.max)))
        #expect(try values(.integer32) { $0.maxValue = 50 } == .integer(min: 0, max: 50))
        #expect(try values(.integer64) { $0.maxValue = -10 } == .integer(min: -1_000_010, max: -10))
        #expect(try values(.integer64, unique: true) == .integer(min: 1, max: 1_000_001))
        #expect(try values(.double) { $0.minValue = 2.5 } == .real(min: 2.5, max: 10_002.5))
        #expect(try values(.decimal) { $0.minValue = 0.005; $0.maxValue = 1 } == .decimal(minCents: 1, maxCents: 100))
        #expect(try values(.string) { $0.maxLength = 5 } == .string(minLength: 5, maxLength: 5))
        #expect(try values(.string) { $0.maxLength = 1_000_000 } == .string(minLength: 8, maxLength: 264))
        #expect(try values(.binaryData) == .binary(minLength: 16, maxLength: 64))
        #expect(try values(.date) { $0.minValue = 0; $0.maxValue = 10 } == .date(min: 0, max: 10))
        #expect(throws: SeedPlan.Refusal.self) { try values(.integer16) { $0.minValue = 0.2; $0.maxValue = 0.8 } }
        #expect(throws: SeedPlan.Refusal.self) { try values(.boolean, unique: true) }
        // A constrained value is the record's number from the minimum: unique, in order.
        var rng = SeededGenerator(seed: 1)
        let id = SeedPlan.AttributeSeed(name: "id", values: .integer(min: 1, max: 1_000_001), unique: true)
        #expect((1...5).map { SeedPlan.value(id, entity: "E", number: $0, rng: &rng) as? Int64 } == [1, 2, 3, 4, 5])
    }

    @Test("Simple patterns generate strings that match them whole", arguments: ["[A-Z]{3}[0-9]+", "^[a-f0-9]{8}-[a-f0-9]{4}$", "\\d{2,4}x?[_.]*", "ID-[0-9]{1,}"])
    func simplePatterns(_ pattern: String) throws {
        let atoms = try SeedPlan.atoms(of: pattern) { SeedPlan.Refusal(entity: "E", property: "p", message: $0) }
        let whole = try NSRegularExpression(pattern: "^(?:\(pattern))$")
        var rng = SeededGenerator(seed: 9)
        for _ in 0..<50 {
            let text = try #require(SeedPlan.value(.init(name: "p", values: .pattern(atoms), unique: false), entity: "E", number: 1, rng: &rng) as? String)
            #expect(whole.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil, "\(text)")
        }
    }
}
