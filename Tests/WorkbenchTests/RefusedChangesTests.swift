import Foundation
import ObjectGraph
import Testing
@testable import Workbench

/// A save the `error` merge policy refuses writes nothing (Docs/coredata-behaviour.md §1.4: the save fails with
/// the conflict list and the store keeps its rows): the workload rolls its changes back, as an app that reports the
/// error without retrying. They are user work the store never got, counted as `refusedChanges` and ranked beside
/// `lostUpdates` (Docs/workbench.md, Docs/scenarios.md "objective").
@Suite("Refused saves: their changes are counted and ranked as work kept from the store")
struct RefusedChangesTests {
    /// Editor, second writer and importer on the same ten rows (conflict-storm scaled down), under `error` and
    /// `objectTrump`.
    static let storm = """
        name: refused-saves
        seed: 7
        stack:
          topology: ambar
          policies:
            all: objectTrump
        phases:
          - name: seed
            actors:
              - importer: { objects: 100, chunkSize: 100 }
          - name: run
            duration: 500ms
            actors:
              - viewer: { visibleObjects: 10 }
              - editor: { rate: 20/s, edits: 2 }
              - writer: { rate: 20/s, edits: 2, distribution: hotspot }
              - importer: { objects: 300, chunkSize: 30, updateFraction: 1.0, distribution: hotspot, rate: 20/s }
          - name: verify
        matrix:
          stack.policies.all: [error, objectTrump]
        """

    // Docs/coredata-behaviour.md §1.4
    @Test("A save the error policy refuses loses nothing the oracle sees, yet its changes count as refused; objectTrump refuses none; the ranking puts error below")
    func errorPolicyRefusesChanges() throws {
        let loaded = try ScenarioLoader.load(text: Self.storm, file: "refused-saves.yaml")
        let results = try loaded.variants.map(runVariant)
        let error = try #require(results.first { $0.policies["view"] == "error" })
        let objectTrump = try #require(results.first { $0.policies["view"] == "objectTrump" })
        let failures = try #require(error.value("saveFailures", "count"))
        #expect(failures > 0)
        // Nothing acknowledged was lost: the refused saves were never acknowledged. Their changes are counted.
        #expect(error.oracle.lostUpdates == 0 && error.oracle.promisedLosses == 0, "\(error.oracle.findings.prefix(3))")
        // Each failed save had at least one change (one per property of a stored record, one per record inserted).
        #expect(try #require(error.value("refusedChanges", "count")) >= failures)
        #expect(objectTrump.value("saveFailures", "count") == 0)
        #expect(objectTrump.value("refusedChanges", "count") == 0)
        let ranking = Ranking.make(results, objective: ObjectiveCriterion.defaultObjective)
        #expect(ranking.entries.map(\.variant) == ["stack.policies.all=objectTrump", "stack.policies.all=error"])
        #expect(ranking.entries[1].sentence.contains(" refused, "), "\(ranking.entries[1].sentence)")
        #expect(ranking.flags.contains { $0.variant == "stack.policies.all=error" && $0.text.contains("change(s) of failed saves never reached the store") })
    }

    @Test("What a refused save would have written: one per property changed on a stored record, one per record inserted or deleted")
    func changeCountUnit() throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(file: ScenarioLoader.workloadModel))
        try coordinator.addPersistentStore(type: .inMemory)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            var stored: [ManagedObject] = []
            for id in 1...3 {
                let object = try context.insertNewObject(forEntityName: "Record")
                try object.setValue(Int64(id), forKey: "id")
                stored.append(object)
            }
            try context.save()
            #expect(RunRecorder.changeCount(of: context) == 0)
            try stored[0].setValue("a", forKey: "title")
            try stored[0].setValue(Int64(5), forKey: "value")
            context.delete(stored[1])
            let inserted = try context.insertNewObject(forEntityName: "Record")
            try inserted.setValue(Int64(4), forKey: "id")
            try inserted.setValue("b", forKey: "title")
            #expect(RunRecorder.changeCount(of: context) == 2 + 1 + 1)
            // An insert deleted again writes nothing.
            context.delete(inserted)
            #expect(RunRecorder.changeCount(of: context) == 2 + 1)
        }
    }
}

/// `importThroughput` counts what reached the store: an importer whose every save is refused stored nothing.
@Suite("Refused saves: import throughput counts only stored objects")
struct RefusedImportThroughputTests {
    /// Every new record carries `code` 1, which the entity keeps unique, and the seed stores one (a batch insert,
    /// which is no importer's save): under `error` each import save meets a uniqueness-constraint conflict and fails (Docs/coredata-behaviour.md §1.6); `objectTrump` merges the
    /// records into the stored one and saves.
    static let clash = """
        name: refused-import
        seed: 5
        model:
          entities:
            - { name: Item, attributes: [{ name: id, type: integer64, optional: false, defaultValue: 0 }, { name: code, type: integer64, optional: false, defaultValue: 0 }], uniquenessConstraints: [[code]] }
          entity: Item
          idKey: id
          values: { code: { min: 1, max: 1 } }
        stack:
          topology: container
        phases:
          - name: seed
            actors:
              - batch: { kind: insert, size: 1, requests: 1 }
          - name: run
            actors:
              - importer: { objects: 20, chunkSize: 5 }
        matrix:
          stack.policies.all: [error, objectTrump]
        """

    // Docs/coredata-behaviour.md §1.6
    @Test("An importer whose saves are all refused imports nothing: its records are refused changes, not throughput")
    func refusedImportIsNoThroughput() throws {
        let loaded = try ScenarioLoader.load(text: Self.clash, file: "refused-import.yaml")
        let results = try loaded.variants.map(runVariant)
        let error = try #require(results.first { $0.policies["importer"] == "error" })
        let objectTrump = try #require(results.first { $0.policies["importer"] == "objectTrump" })
        // Four chunks of five new records, each save refused: one refused change per record it would have inserted.
        #expect(error.value("saveFailures", "count") == 4)
        #expect(error.value("refusedChanges", "count") == 20)
        #expect(error.value("importThroughput", "value") == 0)
        #expect(objectTrump.value("refusedChanges", "count") == 0)
        #expect(try #require(objectTrump.value("importThroughput", "value")) > 0)
    }
}
