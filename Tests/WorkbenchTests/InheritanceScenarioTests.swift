import Foundation
import Testing
@testable import ObjectGraph
@testable import Workbench

/// Docs/coredata-behaviour.md §11: a scenario's inline model may use `parent` and `abstract`;
/// the workload's entity may be a sub-entity (its inherited attributes are its own), not an abstract one.
@Suite struct InheritanceScenarioTests {
    static let yaml = """
        name: shelf
        model:
          entities:
            - { name: Item, abstract: true, attributes: [{ name: id, type: integer64, optional: false, defaultValue: 0 }, { name: title, type: string }], uniquenessConstraints: [[id]] }
            - { name: Book, parent: Item, attributes: [{ name: pages, type: integer64, optional: false, defaultValue: 0 }] }
            - { name: Film, parent: Item, attributes: [{ name: minutes, type: double }] }
          entity: Book
        stack: { topology: ambar }
        phases:
          - name: seed
            actors:
              - importer: { objects: 60, chunkSize: 20 }
          - name: run
            duration: 200ms
            actors:
              - viewer: { visibleObjects: 10 }
              - editor: { rate: 10/s, edits: 2 }
              - importer: { objects: 40, chunkSize: 20, updateFraction: 0.25 }
          - name: verify
        """

    @Test("§11.1, §11.2: a sub-entity workload runs end to end: inherited id and title drive the importer, viewer and editor; the oracle finds the store as it expects")
    func subEntityWorkloadRuns() throws {
        let scenario = try #require(try ScenarioLoader.load(text: Self.yaml, file: "shelf.yaml").variants.first)
        #expect(scenario.model.idKey == "id" && scenario.model.fields.contains("title") && scenario.model.fields.contains("pages"))
        let r = try runVariant(scenario)
        // 60 seeded, then 40 of which a quarter update seeded ones: 90 rows, checked against the store by the
        // oracle (its SQL reads only the Books of Item's table: no duplicate, no mismatch).
        #expect(r.counters["rowsInserted"] == 90)
        #expect(r.oracle.verdict == .pass && r.oracle.lostUpdates == 0 && r.oracle.duplicates == 0 && r.oracle.storeMismatches == 0)
        #expect((r.counters["saves"] ?? 0) > 3)
    }

    @Test("§11.8: an abstract workload entity is refused at load, naming it and the file's line")
    func abstractWorkloadEntityRefused() throws {
        let text = Self.yaml.replacingOccurrences(of: "entity: Book", with: "entity: Item")
        do {
            _ = try ScenarioLoader.load(text: text, file: "shelf.yaml")
            Issue.record("an abstract workload entity was accepted")
        } catch {
            let message = "\(error)"
            #expect(message.contains("shelf.yaml") && message.contains("'Item' is abstract"))
        }
    }
}
