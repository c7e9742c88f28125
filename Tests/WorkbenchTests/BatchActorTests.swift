import Foundation
import Testing
@testable import Workbench

/// The batch actor's inserts (Docs/coredata-behaviour.md §6): a batch insert fails on a row without a value for a
/// required attribute, so the rows the actor generates carry one for each.
@Suite("Batch actor")
struct BatchActorTests {
    // Docs/coredata-behaviour.md §6: `code` is required and has no default; `note` is optional. Every batch the
    // actor runs is written, and none fails on the missing value.
    @Test("The batch actor's inserted rows carry a value for every required attribute without a default", .timeLimit(.minutes(1)))
    func insertedRowsCarryRequiredValues() throws {
        let text = """
            name: batch-required
            model:
              entities:
                - { name: Record, attributes: [{ name: id, type: integer64, optional: false, defaultValue: 0 }, { name: code, type: string, optional: false }, { name: note, type: string }] }
              entity: Record
            stack: { topology: headless }
            phases:
              - name: run
                duration: 20ms
                actors:
                  - batch: { kind: insert, rate: 200/s, size: 5, mergeBy: none }
            """
        let scenario = try #require(try ScenarioLoader.load(text: text, file: "batch-required.yaml").variants.first)
        let result = try runVariant(scenario)
        let operations = try #require(result.counters["operations"])
        #expect(operations > 0)
        #expect(result.counters["rowsInserted"] == operations * 5)
        #expect(result.notes.isEmpty, "\(result.notes)")
    }
}
