import Foundation
import ObjectGraph
import Testing
@testable import Workbench

/// The everyday workloads a scenario can write (Docs/scenarios.md "Actors"): a `fetcher`, deletes of managed
/// objects (an importer's `deleteFraction` and the `deleter`), and several viewers in one phase. Loader refusals
/// first (file:line:column: key.path: what was expected), then tiny simulated runs with exact counts.
@Suite("Everyday workloads: fetchers, deletes of managed objects, several controllers")
struct EverydayWorkloadTests {
    /// The message `ScenarioLoader` gives for `yaml`, or "ok".
    static func message(_ yaml: String) -> String { ScenarioValidationTests().message(yaml) }

    /// A store of 200 records, then a run phase of `actors` (each a line of YAML at the actors' indentation).
    static func scenario(_ actors: [String], topology: String = "ambar", model: String = "", duration: String? = nil) -> String {
        """
        name: everyday
        seed: 3
        \(model)stack: { topology: \(topology) }
        phases:
          - name: seed
            actors:
              - importer: { objects: 200, chunkSize: 100 }
          - name: run
        \(duration.map { "    duration: \($0)\n" } ?? "")    actors:\(actors.isEmpty ? " []" : "")
        \(actors.map { "      - \($0)" }.joined(separator: "\n"))
          - name: verify
        """
    }

    static func run(_ yaml: String) throws -> VariantResult {
        let scenario = try #require(try ScenarioLoader.load(text: yaml, file: "everyday.yaml").variants.first)
        return try runVariant(scenario)
    }

    static let noID = "model:\n  entities:\n    - { name: Note, attributes: [{ name: title, type: string }] }\n  entity: Note\n"

    // MARK: The loader's refusals

    @Test("A fetcher loads with its defaults, and each wrong setting is refused at its file:line:column")
    func fetcherValidation() throws {
        let loaded = try #require(try ScenarioLoader.load(text: Self.scenario(["fetcher: { rate: 30/s }"]), file: "f.yaml").variants.first)
        guard case .fetcher(let f) = loaded.phases[1].actors[0] else { Issue.record("not a fetcher"); return }
        #expect(f.requests == 100 && f.by == .key && f.context == .view && f.distribution == .uniform && f.rate == .perSecond(30))
        #expect(f.request.fetchBatchSize == 0)
        let search = try #require(try ScenarioLoader.load(text: Self.scenario(["fetcher: { by: predicate, predicate: \"value >= 2\", sort: [-value], fetchLimit: 5, context: background }"]), file: "f.yaml").variants.first)
        guard case .fetcher(let s) = search.phases[1].actors[0] else { Issue.record("not a fetcher"); return }
        #expect(s.request.predicate == "value >= 2" && s.request.sort == ["-value"] && s.request.fetchLimit == 5 && s.context == .background)

        #expect(Self.message(Self.scenario(["fetcher: { by: key }"], model: Self.noID))
                == "bad.yaml:14:24: phases.run.fetcher.by: a fetch by key picks records by their integer id, and Note has none (give the model an idKey, or fetch 'by: predicate')")
        #expect(Self.message(Self.scenario(["fetcher: { by: key, predicate: \"value > 1\" }"]))
                == "bad.yaml:10:40: phases.run.fetcher.predicate: a fetch by key reads one record by its id: remove 'predicate' or set 'by: predicate'")
        #expect(Self.message(Self.scenario(["fetcher: { by: predicate }"]))
                == "bad.yaml:10:24: phases.run.fetcher.by: a fetch by predicate needs 'predicate' (Docs/predicate-grammar.md)")
        #expect(Self.message(Self.scenario(["fetcher: { by: predicate, predicate: \"nope > 1\" }"])).contains("'nope' is not a property of Record"))
        #expect(Self.message(Self.scenario(["fetcher: { by: predicate, predicate: \"value > 1\", distribution: zipfian }"]))
                == "bad.yaml:10:73: phases.run.fetcher.distribution: 'distribution' draws the ids of a fetch by key: remove it or set 'by: key'")
        #expect(Self.message(Self.scenario(["fetcher: { context: sideways }"]))
                == "bad.yaml:10:29: phases.run.fetcher.context: expected one of view, background, found 'sideways'")
        // Docs/scenarios.md: a headless stack has no view context, so a fetcher on it (the default) is refused.
        #expect(Self.message(Self.scenario(["fetcher: { context: view }"], topology: "headless"))
                == "bad.yaml:10:29: phases.run.fetcher.context: the `headless` topology has no view context to fetch in: set 'context: background' or choose a topology with a view context")
        #expect(Self.message(Self.scenario(["fetcher: { requests: 5 }"], topology: "headless"))
                == "bad.yaml:10:9: phases.run.fetcher: the `headless` topology has no view context to fetch in: set 'context: background' or choose a topology with a view context")
        #expect(Self.message(Self.scenario(["fetcher: { context: background }"], topology: "headless")) == "ok")
    }

    @Test("Deletes load: deleteFraction beside updateFraction at most 1, a deleter with objects or fraction; refusals name the key")
    func deleteValidation() throws {
        #expect(Self.message(Self.scenario(["importer: { objects: 100, updateFraction: 0.5, deleteFraction: 0.5 }"])) == "ok")
        #expect(Self.message(Self.scenario(["importer: { objects: 100, updateFraction: 0.6, deleteFraction: 0.5 }"]))
                == "bad.yaml:10:72: phases.run.importer.deleteFraction: updateFraction + deleteFraction must be at most 1 (each chunk's objects are updated, deleted or inserted), found 0.6 + 0.5")
        #expect(Self.message(Self.scenario(["importer: { objects: 100, deleteFraction: 0.1 }"], model: Self.noID))
                .hasSuffix("phases.run.importer: an importer with deleteFraction picks records by their integer id, and Note has none (give the model an idKey)"))
        let loaded = try #require(try ScenarioLoader.load(text: Self.scenario(["deleter: { fraction: 0.25 }"]), file: "d.yaml").variants.first)
        #expect(loaded.phases[1].actors[0] == .deleter(.init(objects: nil, fraction: 0.25, chunkSize: 100, rate: .unlimited)))
        #expect(Self.message(Self.scenario(["deleter: { chunkSize: 10 }"]))
                == "bad.yaml:10:18: phases.run.deleter: a deleter needs 'objects' (how many records) or 'fraction' (of the records stored when it starts)")
        #expect(Self.message(Self.scenario(["deleter: { objects: 10, fraction: 0.5 }"]))
                == "bad.yaml:10:43: phases.run.deleter.fraction: give 'objects' or 'fraction', not both")
        #expect(Self.message(Self.scenario(["deleter: { fraction: 0 }"]))
                == "bad.yaml:10:30: phases.run.deleter.fraction: a fraction of the records stored, more than 0 and at most 1, found 0.0")
        #expect(Self.message(Self.scenario(["deleter: { objects: 10 }"], model: Self.noID))
                == "bad.yaml:14:18: phases.run.deleter: a deleter picks records by their integer id, and Note has none (give the model an idKey)")
    }

    @Test("Several viewers in one phase load; they share one frame rate and one readOnly, and none is frames-only")
    func viewersValidation() throws {
        let two = Self.scenario(["viewer: { visibleObjects: 5 }", "viewer: { window: 3, request: { predicate: \"id <= 50\" } }"], duration: "100ms")
        let loaded = try #require(try ScenarioLoader.load(text: two, file: "v.yaml").variants.first)
        #expect(loaded.phases[1].actors.count == 2)
        #expect(Self.message(Self.scenario(["viewer: {}", "viewer: { frameRate: 120 }"], duration: "1s"))
                == "bad.yaml:12:30: phases.run.viewer.frameRate: the viewers of one phase share the main queue's display link: give them one frameRate (60, found 120)")
        #expect(Self.message(Self.scenario(["viewer: {}", "viewer: { frames: only }"], duration: "1s"))
                == "bad.yaml:12:27: phases.run.viewer.frames: a viewer with 'frames: only' shows nothing: beside another viewer it adds no frames (the viewers share one display link); remove it")
        #expect(Self.message(Self.scenario(["viewer: {}", "viewer: { readOnly: true }"], duration: "1s"))
                == "bad.yaml:12:29: phases.run.viewer.readOnly: the viewers of one phase share the view context: give them one readOnly (false, found true)")
    }

    // MARK: The oracle and deletes

    static func delete(_ actor: String, key: Int64 = 1, time: UInt64) -> WriteEvent {
        var event = WriteEvent(actor: actor, role: "deleter", policy: "objectTrump", key: key, field: "", intended: nil, committed: WriteEvent.deletedValue,
                               version: 0, time: time)
        event.deleted = true
        return event
    }

    static func check(_ events: [WriteEvent], row: Oracle.Row?, shown: [String: String]? = nil) -> OracleReport {
        Oracle.check(events: events, finalRows: row.map { [1: $0] } ?? [:], viewValues: shown.map { [1: $0] } ?? [:],
                     duplicates: [], readOnlySaves: 0, batchTouched: [])
    }

    // Docs/coredata-behaviour.md §1.4, §10.2: a save that meets a row deleted elsewhere follows its policy: Overwrite
    // puts the row back; the oracle checks what is stored against the saves after the delete.
    @Test("The oracle: a deleted record is meant to be gone; still stored, or gone without a delete, is a store mismatch; a row put back after the delete is checked as any")
    func oracleKnowsDeletes() {
        let insert = OracleTests.write("importer", policy: "objectTrump", field: "title", intended: "a", committed: "a", version: 1, time: 10)
        let gone = Self.check([insert, Self.delete("deleter", time: 20)], row: nil)
        #expect(gone.verdict == .pass && gone.lostUpdates == 0 && gone.storeMismatches == 0, "\(gone.summary)")
        let kept = Self.check([insert, Self.delete("deleter", time: 20)], row: (1, ["title": "a"]))
        #expect(kept.storeMismatches == 1 && kept.verdict == .fail)
        #expect(kept.findings.first?.detail == "deleter's save deleted this record, yet the store still has it")
        let vanished = Self.check([insert], row: nil)
        #expect(vanished.storeMismatches == 1 && vanished.verdict == .fail)
        let putBack = OracleTests.write("writer", policy: "overwrite", field: "title", intended: "b", committed: "b", version: 1, time: 30)
        let resurrected = Self.check([insert, Self.delete("deleter", time: 20), putBack], row: (1, ["title": "b"]))
        #expect(resurrected.verdict == .pass, "\(resurrected.summary)")
        // On screen, yet gone from the store: a stale read.
        let shown = Self.check([insert, Self.delete("deleter", time: 20)], row: nil, shown: ["title": "a"])
        #expect(shown.staleReads == 1)
    }

    // MARK: Runs (simulated, exact)

    /// Every SELECT the run's coordinators ran.
    static func selects(_ r: VariantResult) -> Int { r.counters.filter { $0.key.hasPrefix("sqlSelect.") }.values.reduce(0, +) }

    // Docs/coredata-behaviour.md §4: every fetch request is a query of the store; its rows land in the row cache, from
    // which the faults it returned are fulfilled.
    @Test("A fetcher's fetches are counted, each one SELECT of the store (its faults fulfilled from the row cache); on the view context they are main-queue time")
    func fetcherRuns() throws {
        let plain = try Self.run(Self.scenario([]))
        let byKey = try Self.run(Self.scenario(["fetcher: { requests: 20, rate: 100/s }"]))
        #expect(byKey.counters["fetches.view"] == 20)
        #expect(byKey.counters["fetchedObjects.view"] == 20)
        #expect(byKey.value("fetchLatency", "count", label: "fetcher:view") == 20)
        #expect(Self.selects(byKey) - Self.selects(plain) == 20)
        #expect((byKey.value("mainBusy", "total", label: MainBlockKind.fetch.rawValue) ?? 0) > 0)
        #expect(byKey.value("fetchLatency", "count") == 0, "the viewer's fetches keep the unlabelled figure")
        let search = try Self.run(Self.scenario(["fetcher: { by: predicate, predicate: \"value >= 0\", fetchLimit: 10, requests: 5, rate: unlimited, context: background }"]))
        #expect(search.counters["fetches.background"] == 5)
        #expect(search.counters["fetchedObjects.background"] == 50)
        #expect(Self.selects(search) - Self.selects(plain) == 5)
        #expect(search.value("mainBusy", "total", label: MainBlockKind.fetch.rawValue) == 0)
        #expect(search.oracle.verdict == .pass)
    }

    // Docs/coredata-behaviour.md §3.1 and §5: a merged delete deletes the object in the view context and takes it out
    // of the controller; the oracle holds the store to having no row for a deleted record.
    @Test("A deleter's deletes reach the store and, merged, leave the controller; the oracle passes (ambar, nested)")
    func deleterRuns() throws {
        for topology in ["ambar", "nested"] {
            let r = try Self.run(Self.scenario(["viewer: { visibleObjects: 10 }", "deleter: { objects: 50, chunkSize: 10 }",
                                                "writer: { rate: 50/s, edits: 2 }"], topology: topology, duration: "200ms"))
            #expect(r.counters["rowsDeleted"] == 50, "\(topology)")
            // Docs/coredata-behaviour.md §2.1: each delete(_:) is one object deleted, where the deleter makes it; the
            // view context's merge (ambar) and the pushes into its parents (nested) count none.
            #expect(r.value("objectsDeleted", "count", label: "queue=background") == 50, "\(topology)")
            #expect(r.value("objectsDeleted", "count", label: "queue=main") == 0, "\(topology)")
            #expect(r.value("frcObjects", "value") == 150, "\(topology)")
            #expect(r.oracle.verdict == .pass, "\(topology): \(r.oracle.summary) \(r.oracle.findings.prefix(3))")
            // The writer writes through a coordinator of its own, like another process: the view context never merges
            // its saves, so stale values are expected; lost updates, duplicates and mismatches are not.
            #expect(r.oracle.lostUpdates == 0 && r.oracle.duplicates == 0 && r.oracle.storeMismatches == 0, "\(topology)")
            #expect(r.notes.isEmpty, "\(topology): \(r.notes)")
        }
    }

    @Test("An importer's deleteFraction deletes that share of each chunk beside its updates and inserts")
    func importerDeletes() throws {
        // Two chunks of 50: 10 updates, 10 deletes and 30 inserts each.
        let r = try Self.run(Self.scenario(["viewer: { visibleObjects: 10 }", "importer: { objects: 100, chunkSize: 50, updateFraction: 0.2, deleteFraction: 0.2 }"]))
        #expect(r.counters["rowsDeleted"] == 20)
        #expect(r.value("objectsDeleted", "count", label: "queue=background") == 20)
        #expect(r.counters["rowsUpdated"] == 20)
        #expect(r.counters["rowsInserted"] == 260)
        #expect(r.value("frcObjects", "value") == 240)
        #expect(r.oracle.verdict == .pass, "\(r.oracle.summary)")
    }

    @Test("With updateFraction + deleteFraction = 1 a chunk touches exactly its size: the deletes take what the updates leave")
    func importerFractionsShareTheChunk() throws {
        // Chunks of 5 at 0.5 + 0.5: 2.5 rounds to 3 updates, and the deletes take the 2 left; nothing is inserted.
        let r = try Self.run(Self.scenario(["importer: { objects: 10, chunkSize: 5, updateFraction: 0.5, deleteFraction: 0.5 }"]))
        #expect(r.counters["rowsUpdated"] == 6)
        #expect(r.counters["rowsDeleted"] == 4)
        #expect(r.counters["rowsInserted"] == 200)
        #expect(r.oracle.verdict == .pass, "\(r.oracle.summary)")
        #expect(r.notes.isEmpty, "\(r.notes)")
    }

    @Test("A deleter asked for more records than are stored ends when none is left, having deleted every one")
    func deleterEndsWhenNothingIsLeft() throws {
        // 200 records in chunks of 7: 28 full chunks and one of 4, then no id is left to pick and the deleter ends.
        let r = try Self.run(Self.scenario(["deleter: { objects: 100000000, chunkSize: 7 }"]))
        #expect(r.counters["rowsDeleted"] == 200)
        #expect(r.counters["operations"] == 2 + 29, "the seed's two chunks and the deleter's 29")
        #expect(r.value("saveLatency", "count", label: "deleter") == 29)
        #expect(r.oracle.verdict == .pass, "\(r.oracle.summary)")
    }

    /// A store of 100 records, each updated once (so each has a saved write: the first chunk inserts, the second
    /// updates), then a batch delete alone in a phase of its own, then `after` (phases of YAML at the phases'
    /// indentation).
    static func batchDeleteScenario(after: String = "") -> String {
        """
        name: batch-deletes
        seed: 3
        stack: { topology: ambar }
        phases:
          - name: seed
            actors:
              - importer: { objects: 200, chunkSize: 100, updateFraction: 1 }
          - name: delete
            duration: 100ms
            actors:
              - batch: { kind: delete, size: 100, rate: 10/s }
        \(after)
        """
    }

    // Docs/coredata-behaviour.md §6: a batch delete removes rows in the store, outside the object graph.
    @Test("A batch delete's records are deleted for the oracle (it passes, nothing unknown) and for every picker (a deleter's fraction counts the rest)")
    func batchDeletesAreDeletes() throws {
        let r = try Self.run(Self.batchDeleteScenario())
        #expect(r.counters["rowsInserted"] == 100 && r.counters["rowsUpdated"] == 100)
        // The ids drawn (uniformly, sparing the 20 the importers treat as on screen) that the store had.
        let deletedByBatch = try #require(r.counters["rowsDeleted"])
        #expect(deletedByBatch == 80)
        #expect(r.oracle.verdict == .pass, "\(r.oracle.summary) \(r.oracle.findings.prefix(3))")
        #expect(r.oracle.storeMismatches == 0 && r.oracle.unknown == 0)
        // Half of what is left: the batch's deletes are not counted among the records stored.
        let after = try Self.run(Self.batchDeleteScenario(after: "  - name: trim\n    actors:\n      - deleter: { fraction: 0.5, chunkSize: 25 }"))
        let left = 100 - deletedByBatch
        #expect(after.counters["rowsDeleted"] == deletedByBatch + Int((Double(left) * 0.5).rounded()))
        #expect(after.oracle.verdict == .pass, "\(after.oracle.summary)")
    }

    // Docs/coredata-behaviour.md §3.1: without a merge the view context keeps deleted objects until it is reset.
    @Test("merge: notifyAndRefetch refetches after a phase with only a deleter: the controller shows no deleted record")
    func refetchAfterDeletes() throws {
        let yaml = """
            name: refetch
            seed: 3
            stack: { topology: ambar, merge: notifyAndRefetch }
            phases:
              - name: seed
                actors:
                  - importer: { objects: 200, chunkSize: 100 }
              - name: show
                duration: 100ms
                actors:
                  - viewer: { visibleObjects: 10 }
              - name: delete
                actors:
                  - deleter: { objects: 50, chunkSize: 25 }
            """
        let r = try Self.run(yaml)
        #expect(r.counters["rowsDeleted"] == 50)
        #expect(r.value("frcObjects", "value") == 150)
        #expect(r.value("refetches", "value") == 1)
        #expect(r.oracle.staleReads == 0 && r.oracle.verdict == .pass, "\(r.oracle.summary)")
    }

    @Test("Two viewers are two controllers with their own requests: each one's size and changes under viewer=n, the sums unlabelled")
    func twoViewers() throws {
        let r = try Self.run(Self.scenario(["viewer: { visibleObjects: 10 }", "viewer: { window: 5, request: { predicate: \"id <= 50\" } }",
                                            "importer: { objects: 100, chunkSize: 50 }"]))
        #expect(r.value("frcObjects", "value", label: "viewer=1") == 300)
        #expect(r.value("frcObjects", "value", label: "viewer=2") == 50)
        #expect(r.value("frcObjects", "value") == 350)
        // Two merged saves of new records (ids above 50): the first controller changes with each, the second never.
        #expect(r.value("frcChanges", "count", label: "viewer=1") == 2)
        #expect(r.value("frcChanges", "count", label: "viewer=2") == 0)
        #expect(r.oracle.verdict == .pass, "\(r.oracle.summary)")
        // One viewer keeps its figures unlabelled, and adds none.
        let one = try Self.run(Self.scenario(["viewer: { visibleObjects: 10 }", "importer: { objects: 100, chunkSize: 50 }"]))
        #expect(one.value("frcObjects", "value") == 300)
        #expect(!one.metrics.contains { $0.label.hasPrefix("viewer=") })
    }
}
