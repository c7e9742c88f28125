import Foundation
import Testing
@testable import Workbench

/// `-p key=value` overrides, `matrix:` and `repeat:` expansion, and the resolved scenario written beside the
/// results (workbench.md "Scenario files").
@Suite("Overrides, matrix and repeat (workbench.md: Scenario files)")
struct OverrideAndMatrixTests {
    @Test("-p overrides a stack key, an actor's setting by phase name, and the seed")
    func overrides() throws {
        let loaded = try tinyScenario(overrides: [
            "stack.mergePolicy=overwrite", "phases.run.importer.objects=300", "seed=42", "topology=container",
        ])
        let scenario = try #require(loaded.variants.first)
        #expect(loaded.variants.count == 1)
        #expect(scenario.stack.mergePolicy == "overwrite")
        #expect(scenario.stack.topology == .container)
        #expect(scenario.seed == 42)
        guard case .importer(let importer) = scenario.phases[1].actors[2] else { Issue.record("the run phase's third actor is not the importer"); return }
        #expect(importer.objects == 300)
        #expect(importer.chunkSize == 50)  // untouched
        guard case .importer(let seedImporter) = scenario.phases[0].actors[0] else { Issue.record("no seed importer"); return }
        #expect(seedImporter.objects == 200)  // the seed phase's importer is another key path
        // The resolved scenario carries the overrides.
        #expect(loaded.resolvedYAML.contains("mergePolicy: overwrite"))
        #expect(loaded.resolvedYAML.contains("seed: 42"))
        #expect(loaded.resolvedYAML.contains("objects: 300"))
        // and reads back as the same scenario.
        let again = try ScenarioLoader.load(text: loaded.resolvedYAML, file: "resolved.yaml")
        #expect(again.variants == loaded.variants)
    }

    @Test("-p adds a key that is not in the file yet, and a list value")
    func overrideAddsKeys() throws {
        let loaded = try tinyScenario(overrides: ["stack.policies.editor=rollback", "matrix.stack.topology=[ambar, nested]"])
        #expect(loaded.variants.map(\.stack.topology) == [.ambar, .nested])
        #expect(loaded.variants.allSatisfy { $0.stack.policies == ["editor": "rollback"] })
    }

    @Test("matrix: the cartesian product, in the file's order, with variant names")
    func matrix() throws {
        let yaml = try Fixtures.text("tiny.yaml") + """

            matrix:
              stack.topology: [ambar, container, nested]
              mergePolicy: [storeTrump, objectTrump]
            """
        let loaded = try ScenarioLoader.load(text: yaml, file: "tiny.yaml")
        #expect(loaded.variants.count == 6)
        #expect(loaded.variants.map { "\($0.stack.topology.rawValue)/\($0.stack.mergePolicy ?? "-")" } == [
            "ambar/storeTrump", "ambar/objectTrump", "container/storeTrump", "container/objectTrump", "nested/storeTrump", "nested/objectTrump",
        ])
        #expect(loaded.variants[0].variantName == "mergePolicy=storeTrump,stack.topology=ambar")
        #expect(loaded.variants[5].variantParameters == ["stack.topology": "nested", "mergePolicy": "objectTrump"])
        #expect(loaded.variants.allSatisfy { $0.repetition == 1 && $0.repetitions == 1 })
        // The matrix stays in the resolved scenario: it describes the whole run.
        #expect(loaded.resolvedYAML.contains("matrix:"))
    }

    @Test("matrix reaches an actor's setting; repeat runs each variant N times")
    func matrixAndRepeat() throws {
        let yaml = try Fixtures.text("tiny.yaml") + """

            repeat: 2
            matrix:
              phases.run.importer.chunkSize: [25, 100]
            """
        let loaded = try ScenarioLoader.load(text: yaml, file: "tiny.yaml")
        #expect(loaded.variants.count == 4)
        let chunks = loaded.variants.map { v -> Int in
            if case .importer(let i) = v.phases[1].actors[2] { return i.chunkSize }
            return -1
        }
        #expect(chunks == [25, 25, 100, 100])
        #expect(loaded.variants.map(\.repetition) == [1, 2, 1, 2])
        #expect(loaded.variants.allSatisfy { $0.repetitions == 2 })
        #expect(Set(loaded.variants.map(\.variantName)) == ["phases.run.importer.chunkSize=25", "phases.run.importer.chunkSize=100"])
    }

    @Test("no matrix: one variant named default")
    func noMatrix() throws {
        let loaded = try tinyScenario()
        #expect(loaded.variants.count == 1)
        #expect(loaded.variants[0].variantName == "default")
        #expect(loaded.variants[0].seed == 7)
    }

    @Test("every shipped scenario validates")
    func shippedScenarios() throws {
        let folder = Fixtures.sourceFolder().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Scenarios")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".yaml") }.sorted()
        #expect(files.count >= 9)
        for file in files {
            #expect(throws: Never.self, "\(file)") { try ScenarioLoader.load(file: folder.appendingPathComponent(file).path) }
        }
    }
}
