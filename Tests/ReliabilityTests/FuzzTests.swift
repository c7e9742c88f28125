import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph
import Workbench

/// Hostile input: seeded generators over predicate format strings, model files, scenario YAML and
/// object-ID URIs. No crash, no hang, and every rejection a typed error with a message. `make fuzz RUNS=N`
/// runs N inputs per target (FUZZ_RUNS); `make test` runs 1,000.
@Suite struct FuzzTests {
    @Test("make fuzz draws a fresh seed per run and replays a printed one; make test keeps the fixed seed")
    func fuzzSeeds() {
        #expect(ReliabilitySettings.fuzzSeed(from: nil) == ReliabilitySettings.fixedFuzzSeed)
        #expect(ReliabilitySettings.fuzzSeed(from: "12345") == 12345)
        let fresh = ReliabilitySettings.fuzzSeed(from: "random")
        #expect(fresh == ReliabilitySettings.freshFuzzSeed)  // one per process: every target uses the same
        #expect(fresh != ReliabilitySettings.fixedFuzzSeed)
    }

    // MARK: Predicate format strings (semantics §5: NSPredicate's grammar; errors name the column)

    static let predicateSeeds = [
        "id == 1", "title BEGINSWITH[c] 'no'", "title CONTAINS[cd] %@", "id IN {1, 2, 3}", "id BETWEEN {1, 10}",
        "folder.name == 'inbox'", "folder.notes.@count > 1", "NOT (id < 5) AND title != nil", "id > %d OR importerMark <= %f",
        "%K == %@", "TRUEPREDICATE", "FALSEPREDICATE", "title LIKE[c] '*note*'", "title MATCHES 'note [0-9]+'",
        "folder.notes.@count == 0 OR ANY folder.notes.id > 3", "title ENDSWITH '1' || id == 2 && importerMark == 0",
        "id == $ID", "title ==[c] \"Note 1\"", "id >= -3.5e2", "title IN %@", "ANY folder.notes.title == 'note 2'",
        "ALL folder.notes.id > 0", "NONE folder.notes.id < 0", "folder == nil", "title != NULL AND (id = 2 OR id => 3)",
    ]
    static let predicateTokens = [
        "==", "!=", "<", ">", "<=", ">=", "=<", "=>", "<>", "AND", "OR", "NOT", "&&", "||", "!", "(", ")", "{", "}", ",",
        "'", "\"", "%@", "%K", "%d", "%f", "%i", "%%", "$", "$n", "@count", "@sum", "@avg", ".", "IN", "BETWEEN", "ANY", "ALL",
        "NONE", "SOME", "SUBQUERY(", "[c]", "[cd]", "[", "]", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "MATCHES",
        "nil", "NULL", "TRUE", "FALSE", "YES", "TRUEPREDICATE", "id", "title", "folder", "notes", "name", "1", "-1",
        "9223372036854775808", "1e309", "0x1F", "0.5", "\\", "\\'", "SELF", "FUNCTION(", "*", "?", "\u{0}", "é", "🙂",
    ]

    /// Contexts on an in-memory and an SQLite store with a few rows; used only on the fuzz thread.
    final class PredicateTarget: @unchecked Sendable {  // used by one thread at a time (the fuzz thread)
        let directory: TemporaryDirectory
        let contexts: [ManagedObjectContext]

        /// One argument per placeholder, of the kind it asks for (`%K` a key, `%d` an integer, …).
        static func arguments(for format: String) -> [Any?] {
            var arguments: [Any?] = []
            let objects: [Any?] = ["note 1", 3, ["note 2", "note 3"], nil, 2.5]
            var characters = format.makeIterator()
            while let c = characters.next() {
                guard c == "%", let spec = characters.next() else { continue }
                switch spec {
                case "K": arguments.append("title")
                case "d", "i", "u", "l": arguments.append(3)
                case "f", "g", "e": arguments.append(1.5)
                case "%": break
                default: arguments.append(objects[arguments.count % objects.count])
                }
            }
            return arguments
        }

        init() throws {
            directory = try TemporaryDirectory("fuzz-predicate")
            let model = try makeNotesModel()
            var contexts: [ManagedObjectContext] = []
            for type in [PersistentStoreType.inMemory, .sqlite] {
                let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
                try coordinator.addPersistentStore(type: type, at: type == .sqlite ? directory.url.appendingPathComponent("p.sqlite") : nil)
                let context = ManagedObjectContext(concurrencyType: .privateQueue)
                context.persistentStoreCoordinator = coordinator
                try context.performAndWait {
                    let folder = try context.insertNewObject(forEntityName: "Folder")
                    try folder.setValue("inbox", forKey: "name")
                    for note in try insertNotes(1...5, in: context) { try note.setValue(folder, forKey: "folder") }
                    try context.save()
                }
                contexts.append(context)
            }
            self.contexts = contexts
        }

        func run(_ input: String) -> FuzzOutcome {
            let predicate: ObjectPredicate
            do { predicate = try ObjectPredicate(format: input, argumentArray: Self.arguments(for: input)) } catch {
                return clarity(of: error, allowed: [PredicateFormatError.self, ObjectGraphError.self])
            }
            // A predicate that parses must run, or fail with a clear error, in memory and in SQL; SQL that SQLite
            // rejects means the query builder let something through it cannot translate.
            var counts: [Int] = []
            for context in contexts {
                let outcome: FuzzOutcome = context.performAndWait {
                    do {
                        counts.append(try context.fetch(FetchRequest(entityName: "Note", predicate: predicate)).count)
                        return .accepted
                    } catch let error as ObjectGraphError where error.code == .sqlite {
                        return .unclear("generated SQL failed: \(error)")
                    } catch {
                        return clarity(of: error, allowed: [ObjectGraphError.self, PredicateFormatError.self])
                    }
                }
                if case .accepted = outcome { continue }
                return outcome
            }
            if counts.count == 2, counts[0] != counts[1] {
                return .unclear("in memory \(counts[0]) matches, in SQL \(counts[1]) (\(predicate))")
            }
            return .accepted
        }
    }

    @Test func predicateFormatStrings() throws {
        let target = try PredicateTarget()
        expectClean(fuzz("predicate", seeds: Self.predicateSeeds, tokens: Self.predicateTokens) { target.run($0) })
    }

    // MARK: Model files (JSON, ModelFile)

    static let modelSeeds = [
        #"{"entities": [{"name": "Item", "attributes": [{"name": "id", "type": "integer64", "optional": false}, {"name": "title", "type": "string", "maxLength": 80}], "relationships": [{"name": "tag", "destination": "Tag", "inverse": "items"}], "uniquenessConstraints": [["id"]]}, {"name": "Tag", "attributes": [{"name": "name", "type": "string"}], "relationships": [{"name": "items", "destination": "Item", "inverse": "tag", "toMany": true, "deleteRule": "cascade"}]}]}"#,
        #"{"entities": [{"name": "A", "attributes": [{"name": "d", "type": "date", "defaultValue": "2020-01-01T00:00:00Z"}, {"name": "u", "type": "uuid"}, {"name": "x", "type": "decimal", "defaultValue": "1.5"}, {"name": "b", "type": "boolean", "defaultValue": true}, {"name": "n", "type": "double", "minValue": 0, "maxValue": 10}, {"name": "t", "type": "string", "transient": true}]}]}"#,
        #"{"entities": [{"name": "P", "relationships": [{"name": "kids", "destination": "P", "inverse": "parent", "toMany": true, "minCount": 0, "maxCount": 3}, {"name": "parent", "destination": "P", "inverse": "kids", "deleteRule": "nullify"}]}]}"#,
        String(decoding: (try? JSONEncoder().encode(ScenarioLoader.workloadModel)) ?? Data(), as: UTF8.self),
        // A hierarchy (abstract root, constraint inherited, sibling names that clash).
        #"{"entities": [{"name": "Post", "abstract": true, "attributes": [{"name": "title", "type": "string"}], "relationships": [{"name": "tag", "destination": "Tag", "inverse": "posts"}], "uniquenessConstraints": [["title"]]}, {"name": "Note", "parent": "Post", "attributes": [{"name": "extra", "type": "string"}]}, {"name": "Photo", "parent": "Post", "attributes": [{"name": "extra", "type": "integer64"}]}, {"name": "Tag", "relationships": [{"name": "posts", "destination": "Post", "inverse": "tag", "toMany": true}]}]}"#,
    ]
    static let modelTokens = [
        "{", "}", "[", "]", ",", ":", "\"", "\"name\"", "\"type\"", "\"attributes\"", "\"relationships\"", "\"entities\"",
        "\"destination\"", "\"inverse\"", "\"toMany\"", "\"optional\"", "\"defaultValue\"", "\"minValue\"", "\"maxValue\"",
        "\"minLength\"", "\"maxLength\"", "\"minCount\"", "\"maxCount\"", "\"uniquenessConstraints\"", "\"deleteRule\"",
        "\"integer16\"", "\"integer64\"", "\"string\"", "\"binaryData\"", "\"uri\"", "\"cascade\"", "\"deny\"", "true", "false",
        "null", "-1", "1e400", "0", "9999999999999999999", "\"Z_PK\"", "\"objectID\"", "\"a\\\"b\"", "\"a b\"", "\"\"",
        "\"\\u0000\"", "\"🙂\"", "\"DROP TABLE x\"", "\"Item\"", "\"Tag\"",
        "\"parent\"", "\"abstract\"", "\"Post\"", "\"Note\"",
    ]

    final class ModelTarget: @unchecked Sendable {  // used by one thread at a time (the fuzz thread)
        let directory: TemporaryDirectory
        var opened = 0
        init() throws { directory = try TemporaryDirectory("fuzz-model") }

        func run(_ input: String) -> FuzzOutcome {
            let model: ManagedObjectModel
            do { model = try ManagedObjectModel(jsonData: Data(input.utf8), source: "fuzz.json") } catch {
                return clarity(of: error, allowed: [ModelError.self])
            }
            // A model that validates must make a store; saving one object of each entity works or fails clearly.
            opened += 1
            let url = directory.url.appendingPathComponent("m\(opened).sqlite")
            defer {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
            }
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            do { try coordinator.addPersistentStore(type: .sqlite, at: url) } catch {
                return .unclear("a model that validates cannot make a store: \(error)")
            }
            do {
                let context = ManagedObjectContext(concurrencyType: .privateQueue)
                context.persistentStoreCoordinator = coordinator
                try context.performAndWait {
                    for entity in model.entities { _ = try context.insertNewObject(forEntityName: entity.name) }
                    try context.save()
                    for entity in model.entities { _ = try context.count(for: FetchRequest(entityName: entity.name)) }
                }
                return .accepted
            } catch {
                return clarity(of: error, allowed: [ObjectGraphError.self, ModelError.self])
            }
        }
    }

    @Test func modelFiles() throws {
        let target = try ModelTarget()
        expectClean(fuzz("model", seeds: Self.modelSeeds, tokens: Self.modelTokens) { target.run($0) })
    }

    // MARK: Scenario YAML (workbench.md "Scenario files": errors name file, line, column and key path)

    static var scenarioSeeds: [String] {
        let directory = ReliabilitySettings.packageDirectory
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("Scenarios").path)) ?? []
        var seeds = files.filter { $0.hasSuffix(".yaml") }.sorted().compactMap {
            try? String(contentsOf: directory.appendingPathComponent("Scenarios").appendingPathComponent($0), encoding: .utf8)
        }
        if let tiny = try? String(contentsOf: directory.appendingPathComponent("Tests/WorkbenchTests/Fixtures/tiny.yaml"), encoding: .utf8) {
            seeds.append(tiny)
        }
        return seeds
    }
    static let scenarioTokens = [
        ":", " ", "\n", "  ", "- ", "{", "}", "[", "]", ",", "#", "&a", "*a", "!!str", "!!int", "|", ">", "'", "\"", "---", "...",
        "name:", "phases:", "actors:", "importer:", "viewer:", "editor:", "writer:", "temporary:", "matrix:", "repeat:", "seed:",
        "duration:", "rate:", "objects:", "chunkSize:", "stack:", "topology:", "policies:", "thresholds:", "1", "0", "-1", "1e9",
        "99999999999999999999", "2s", "300ms", "10/s", "0/s", "1.5", "null", "~", "true", "ambar", "nested", "apple", "hotspot",
        "<<: *a", "\t", "\u{0}", "🙂",
    ]

    @Test func scenarioYAML() throws {
        let seeds = Self.scenarioSeeds
        try #require(seeds.count >= 5)
        expectClean(fuzz("scenario", seeds: seeds, tokens: Self.scenarioTokens) { input in
            do {
                _ = try ScenarioLoader.load(text: input, file: "fuzz.yaml")
                return .accepted
            } catch {
                return clarity(of: error, allowed: [ScenarioError.self])
            }
        })
    }

    // MARK: Object-ID URIs (semantics §4: managedObjectID(forURIRepresentation:) is nil for foreign URIs)

    final class URITarget: @unchecked Sendable {  // used by one thread at a time (the fuzz thread)
        let directory: TemporaryDirectory
        let coordinator: PersistentStoreCoordinator
        let context: ManagedObjectContext
        let seeds: [String]

        init() throws {
            directory = try TemporaryDirectory("fuzz-uri")
            coordinator = PersistentStoreCoordinator(managedObjectModel: try makeNotesModel())
            try coordinator.addPersistentStore(type: .sqlite, at: directory.url.appendingPathComponent("u.sqlite"))
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            self.context = context
            seeds = try context.performAndWait {
                let notes = try insertNotes(1...3, in: context)
                let folder = try context.insertNewObject(forEntityName: "Folder")
                let temporary = folder.objectID.uriRepresentation.absoluteString
                try context.save()
                return notes.map(\.objectID.uriRepresentation.absoluteString) + [folder.objectID.uriRepresentation.absoluteString, temporary]
            }
        }

        func run(_ input: String) -> FuzzOutcome {
            guard let url = URL(string: input), let id = coordinator.managedObjectID(forURIRepresentation: url) else { return .rejected }
            return context.performAndWait {
                do {
                    _ = try context.existingObject(with: id)
                    return .accepted
                } catch {
                    return clarity(of: error, allowed: [ObjectGraphError.self])
                }
            }
        }
    }

    @Test func objectIDURIs() throws {
        let target = try URITarget()
        let tokens = ["x-coredata", "://", "/", "p", "t", "Note", "Folder", "Item", "0", "1", "-1", "9223372036854775807",
                      "9223372036854775808", "%00", "%2F", "?", "#", "@", ":", "..", "//", UUID().uuidString, "http", "file", "🙂", " "]
        expectClean(fuzz("uri", seeds: target.seeds, tokens: tokens) { target.run($0) })
    }
}

/// Found by the model fuzzer: property names were spliced into `CREATE TABLE` unchecked, so `"a b"` made a
/// column `ZA` of type `B TEXT` and `"a-b"` a store that could not open. Architecture, storage layout: each
/// attribute is a column `Z<NAME>`, so names follow the entity-name rule (letters, digits, '_').
@Suite struct ModelNameTests {
    @Test(arguments: ["a b", "a-b", "a'b", "a;b", "ti\"tle", "x)"]) func propertyNamesThatCannotBeColumnsAreRejected(_ name: String) throws {
        let entity = EntityDescription(name: "Item", attributes: [AttributeDescription(name: name, type: .string)])
        let error = try #require(throws: ModelError.self) { try ManagedObjectModel(entities: [entity]) }
        #expect(error.property == name)
        #expect(error.message.contains("letters, digits or '_'"))
        let relationship = EntityDescription(name: "Tag", relationships: [RelationshipDescription(name: name, destination: "Tag", inverse: name)])
        #expect(throws: ModelError.self) { try ManagedObjectModel(entities: [relationship]) }
    }

    @Test func unicodeLettersAndUnderscoresStayValid() throws {
        let entity = EntityDescription(name: "Item", attributes: [AttributeDescription(name: "größe_2", type: .string), AttributeDescription(name: "_hidden", type: .integer64)])
        let model = try ManagedObjectModel(entities: [entity])
        let directory = try TemporaryDirectory("names")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: directory.url.appendingPathComponent("n.sqlite"))
    }
}

/// Found by the predicate fuzzer: strings went to SQLite as C strings, so everything after a NUL was lost on
/// save and in SQL comparisons (in memory `"Note 1\0"` matched nothing, in SQL it matched `"Note 1"`).
/// Semantics §2: a save writes the object's values; §5: a fetch gives the same result in SQL and in memory.
@Suite struct EmbeddedNULTests {
    @Test func stringsWithNULRoundTripAndCompareAlikeInSQL() throws {
        let stack = try NotesStack()
        let title = "before\0after"
        let importer = stack.container.importerContext()
        try importer.performAndWait {
            let note = try #require(try insertNotes(1...2, in: importer).first)
            try note.setValue(title, forKey: "title")
            try importer.save()
        }
        let reader = stack.container.temporaryContext()
        try reader.performAndWait {
            var request = FetchRequest(entityName: "Note", predicate: try ObjectPredicate(format: "id == 1"))
            request.returnsObjectsAsFaults = false
            #expect(try reader.fetch(request).first?.value(forKey: "title") as? String == title)
            for (format, expected) in [("title == %@", 1), ("title ==[c] %@", 1), ("title BEGINSWITH %@", 1)] {
                let matches = try reader.fetch(FetchRequest(entityName: "Note", predicate: try ObjectPredicate(format: format, title)))
                #expect(matches.count == expected, "\(format)")
            }
            let cut = try reader.fetch(FetchRequest(entityName: "Note", predicate: try ObjectPredicate(format: "title ==[c] %@", "before")))
            #expect(cut.isEmpty)
        }
    }
}
