import Foundation
import ObjectGraph
import Synchronization
import Testing
import TraceReplay
@testable import Workbench

/// Three settings for replaying apps that delete what a context sees and leave children's saves in their parents
/// (Docs/scenarios.md "Actors"): a batch delete of every record (`batch: { kind: delete, size: all }`), a deleter
/// that fetches with no predicate (`select: all`), and `saveParents: false` on importers and deleters whose contexts
/// are children. Loader refusals first, then tiny simulated runs with exact counts.
@Suite("Whole-entity deletes, deletes of what a context sees, children left unsaved in their parents")
struct EntityDeletesAndUnsavedParentsTests {
    static func message(_ yaml: String) -> String { ScenarioValidationTests().message(yaml) }

    /// A store of 200 records, then a run phase of `actors`, then verify (EverydayWorkloadTests' shape).
    static func scenario(_ actors: [String], topology: String = "ambar", model: String = "", duration: String? = nil) -> String {
        EverydayWorkloadTests.scenario(actors, topology: topology, model: model, duration: duration)
    }

    /// Runs `yaml`'s first variant with an operation trace: the result and the trace's records.
    static func traced(_ yaml: String) throws -> (VariantResult, [OperationRecord]) {
        let scenario = try #require(try ScenarioLoader.load(text: yaml, file: "entity-deletes.yaml").variants.first)
        let work = try TemporaryDirectory("workbench-entity-deletes")
        let captured = Mutex<[OperationRecord]>([])
        var runner = VariantRunner(scenario: scenario, workDirectory: work.url)
        runner.operationTrace = { _, records in captured.withLock { $0 = records } }
        let result = try runner.run()
        return (result, captured.withLock { $0 })
    }

    static func unsaved(_ r: VariantResult, _ kind: String) -> Double? { r.value("unsavedObjects", "value", label: kind) }

    // MARK: The loader

    @Test("batch size: all loads with kind: delete and needs no idKey; another kind or size is refused at its line; requests ends the actor")
    func batchAllLoads() throws {
        let loaded = try #require(try ScenarioLoader.load(text: Self.scenario(["batch: { kind: delete, size: all, requests: 1 }"]), file: "b.yaml").variants.first)
        var expected = ActorSpec.Batch(kind: .delete, rate: .perSecond(1), size: 100, mergeBy: .ids)
        expected.allRecords = true
        expected.requests = 1
        #expect(loaded.phases[1].actors[0] == .batch(expected))
        // A phase whose only actor is a batch with `requests` ends by itself: no duration needed.
        #expect(loaded.phases[1].duration == nil)
        #expect(Self.message(Self.scenario(["batch: { kind: delete, size: 5 }"])).hasSuffix("phases.run: a run phase without an importer needs a duration"))
        #expect(Self.message(Self.scenario(["batch: { kind: update, size: all }"]))
                == "bad.yaml:10:38: phases.run.batch.size: size: all is every record of the entity, which only a batch delete takes (set kind: delete, found update)")
        #expect(Self.message(Self.scenario(["batch: { size: all }"], duration: "1s"))
                == "bad.yaml:11:24: phases.run.batch.size: size: all is every record of the entity, which only a batch delete takes (set kind: delete, found update)")
        #expect(Self.message(Self.scenario(["batch: { kind: delete, size: most }"], duration: "1s"))
                == "bad.yaml:11:38: phases.run.batch.size: expected a number of records or all, found 'most'")
        #expect(Self.message(Self.scenario(["batch: { kind: delete, requests: 0 }"]))
                == "bad.yaml:10:42: phases.run.batch.requests: must be at least 1, found 0")
        // A delete of every record names none by its id; one of some records does.
        #expect(Self.message(Self.scenario(["batch: { kind: delete, size: all, requests: 1 }"], model: EverydayWorkloadTests.noID)) == "ok")
        #expect(Self.message(Self.scenario(["batch: { kind: delete, size: 5, requests: 1 }"], model: EverydayWorkloadTests.noID))
                .hasSuffix("phases.run.batch: a batch request picks records by their integer id, and Note has none (give the model an idKey)"))
    }

    @Test("deleter select loads (keys by default; all needs no idKey); saveParents: false is refused at its line where background saves reach the store")
    func selectAndSaveParentsLoad() throws {
        let loaded = try #require(try ScenarioLoader.load(text: Self.scenario(["deleter: { objects: 10, select: all, saveParents: false }"], topology: "nested"),
                                                          file: "d.yaml").variants.first)
        #expect(loaded.phases[1].actors[0] == .deleter(.init(objects: 10, fraction: nil, chunkSize: 100, rate: .unlimited, select: .all, saveParents: false)))
        #expect(Self.message(Self.scenario(["deleter: { objects: 10, select: some }"]))
                == "bad.yaml:10:41: phases.run.deleter.select: expected one of keys, all, found 'some'")
        #expect(Self.message(Self.scenario(["deleter: { objects: 10, select: all }"], model: EverydayWorkloadTests.noID)) == "ok")
        for topology in TopologyKind.allCases {
            let importer = Self.message(Self.scenario(["importer: { objects: 10, saveParents: false }"], topology: topology.rawValue))
            let deleter = Self.message(Self.scenario(["deleter: { objects: 10, saveParents: false }"], topology: topology.rawValue))
            if TopologyKind.backgroundContextsAreChildren.contains(topology) {
                #expect(importer == "ok" && deleter == "ok", "\(topology)")
            } else {
                let why = "the `\(topology.rawValue)` topology's background contexts save to the store themselves: they have no parent to leave unsaved (remove saveParents or choose nested, viewChildren, privateRoot)"
                #expect(importer == "bad.yaml:10:47: phases.run.importer.saveParents: \(why)", "\(topology)")
                #expect(deleter == "bad.yaml:10:46: phases.run.deleter.saveParents: \(why)", "\(topology)")
            }
            #expect(Self.message(Self.scenario(["importer: { objects: 10, saveParents: true }"], topology: topology.rawValue)) == "ok", "\(topology)")
        }
        // A matrix that chooses a topology: refused where the key is written.
        let matrix = Self.scenario(["importer: { objects: 10, saveParents: false }"], topology: "viewChildren") + "\nmatrix:\n  stack.topology: [viewChildren, container]"
        #expect(Self.message(matrix).hasPrefix("bad.yaml:10:47: phases.run.importer.saveParents: the `container` topology's background contexts save to the store themselves"))
    }

    // MARK: Runs (simulated, exact)

    // Docs/coredata-behaviour.md §6: a batch delete runs in the store, outside the object graph; its result's IDs,
    // merged, delete the objects in the view context and take them out of its controller (§3.4).
    @Test("A batch delete of size all is one request that deletes every record: the oracle records each delete, the view drops them, no actor picks an id again")
    func batchDeleteOfEveryRecord() throws {
        let yaml = """
            name: delete-all
            seed: 3
            stack: { topology: container }
            phases:
              - name: seed
                actors:
                  - importer: { objects: 200, chunkSize: 100 }
              - name: show
                duration: 50ms
                actors:
                  - viewer: { visibleObjects: 10 }
              - name: delete
                actors:
                  - batch: { kind: delete, size: all, requests: 1, rate: unlimited }
              - name: trim
                actors:
                  - deleter: { fraction: 1, chunkSize: 50 }
              - name: verify
            """
        let (r, records) = try Self.traced(yaml)
        #expect(r.counters["rowsDeleted"] == 200)
        // The seed's two chunks and the one request; the deleter finds no record stored, and makes no chunk.
        #expect(r.counters["operations"] == 2 + 1)
        let batches = records.filter { $0.op == "batch" }
        #expect(batches.count == 1)
        #expect(batches.first?.batch?.kind == "delete" && batches.first?.batch?.predicate == nil)
        #expect(r.value("frcObjects", "value") == 0)
        #expect(r.oracle.verdict == .pass && r.oracle.storeMismatches == 0 && r.oracle.staleReads == 0, "\(r.oracle.summary) \(r.oracle.findings.prefix(3))")
        #expect(r.notes.isEmpty, "\(r.notes)")
    }

    // Docs/coredata-behaviour.md §4: each fetch request is one query of the store.
    @Test("A select: all deleter fetches each chunk once, with no predicate and the chunk's size as its limit, and marks the ids it deleted")
    func selectAllDeleter() throws {
        let plain = try EverydayWorkloadTests.run(Self.scenario([]))
        let yaml = Self.scenario(["deleter: { objects: 50, chunkSize: 20, select: all }"])
            .replacingOccurrences(of: "  - name: verify", with: "  - name: trim\n    actors:\n      - deleter: { objects: 1000, chunkSize: 100 }\n  - name: verify")
        let (r, records) = try Self.traced(yaml)
        let fetches = records.filter { $0.op == "fetch" && $0.thread == "run.deleter0" }
        #expect(fetches.map(\.request?.limit) == [20, 20, 10])
        #expect(fetches.allSatisfy { $0.request?.predicate == nil })
        // The picking deleter finds the 150 records left (its ids skip the 50 deleted): 50 + 150.
        #expect(r.counters["rowsDeleted"] == 200)
        #expect(r.counters["operations"] == 2 + 3 + 2)
        #expect(r.oracle.verdict == .pass && r.oracle.storeMismatches == 0, "\(r.oracle.summary) \(r.oracle.findings.prefix(3))")
        #expect(r.notes.isEmpty, "\(r.notes)")
        // One SELECT per chunk, as the only deleter of a phase.
        let alone = try EverydayWorkloadTests.run(Self.scenario(["deleter: { objects: 50, chunkSize: 20, select: all }"]))
        #expect(EverydayWorkloadTests.selects(alone) - EverydayWorkloadTests.selects(plain) == 3)
        #expect(alone.counters["rowsDeleted"] == 50)
    }

    // Docs/coredata-behaviour.md §2.2: nothing reaches the store until the root context saves.
    @Test("saveParents: false leaves an import in the parents: nothing reaches the store, the oracle records nothing and passes", arguments: TopologyKind.backgroundContextsAreChildren)
    func unsavedImport(topology: TopologyKind) throws {
        let yaml = """
            name: unsaved-import
            seed: 3
            stack: { topology: \(topology.rawValue) }
            phases:
              - name: run
                actors:
                  - importer: { objects: 100, chunkSize: 50, saveParents: false }
              - name: verify
            """
        let r = try EverydayWorkloadTests.run(yaml)
        // What the store holds after a run that writes nothing: its metadata.
        let empty = try EverydayWorkloadTests.run("name: empty\nstack: { topology: \(topology.rawValue) }\nphases:\n  - name: verify\n")
        func inserts(_ r: VariantResult) -> Int { r.counters.filter { $0.key.hasPrefix("sqlInsert.") }.values.reduce(0, +) }
        #expect((r.counters["rowsInserted"] ?? 0) == 0)
        #expect(inserts(r) == inserts(empty))
        #expect(r.counters["operations"] == 2)
        #expect(Self.unsaved(r, "inserted") == 100)
        #expect(Self.unsaved(r, "deleted") == 0 && Self.unsaved(r, "updated") == 0)
        #expect(r.oracle.verdict == .pass, "\(r.oracle.summary)")
        #expect(r.notes.isEmpty, "\(r.notes)")
    }

    // Docs/coredata-behaviour.md §2.2: a child's fetch sees its parent's state, and a delete pushed into the parent
    // waits there for the parent's save. Docs/core-data-rules.md Rule 14: a fetch with a limit takes its window from
    // the store and lays the pending deletes over it, so the next chunk's window (the same stored rows, all deleted in
    // the parent) comes back empty, and the deleter ends.
    @Test("saveParents: false on a select: all deleter deletes stored records in the parents only; the next chunk's window is short", arguments: TopologyKind.backgroundContextsAreChildren)
    func unsavedDeletes(topology: TopologyKind) throws {
        let r = try EverydayWorkloadTests.run(Self.scenario(["deleter: { objects: 30, chunkSize: 10, select: all, saveParents: false }"], topology: topology.rawValue))
        #expect(r.counters["rowsDeleted"] == 0)
        #expect(r.counters.filter { $0.key.hasPrefix("sqlDelete.") }.values.reduce(0, +) == 0)
        #expect(Self.unsaved(r, "deleted") == 10 && Self.unsaved(r, "inserted") == 0)
        #expect(r.counters["operations"] == 2 + 1)
        #expect(r.oracle.verdict == .pass && r.oracle.storeMismatches == 0, "\(r.oracle.summary)")
        #expect(r.notes.isEmpty, "\(r.notes)")
        // One chunk of all 30: each is deleted in the parents, and the store keeps every row.
        let one = try EverydayWorkloadTests.run(Self.scenario(["deleter: { objects: 30, chunkSize: 30, select: all, saveParents: false }"], topology: topology.rawValue))
        #expect(Self.unsaved(one, "deleted") == 30)
        #expect(one.oracle.verdict == .pass && one.oracle.storeMismatches == 0, "\(one.oracle.summary)")
    }

    // Docs/coredata-behaviour.md §2.2: a child sees its parent's unsaved inserts, and its delete of one, pushed, takes
    // it out of the parent's inserted objects. Docs/coredata-behaviour.md §7: the in-memory store.
    @Test("viewChildren in memory: a select: all deleter's unsaved deletes take an unsaved import out of the view context's inserts")
    func unsavedImportDeletedInMemory() throws {
        func yaml(_ deleter: String) -> String {
            """
            name: in-memory-children
            seed: 3
            stack: { topology: viewChildren, store: inMemory }
            phases:
              - name: import
                actors:
                  - importer: { objects: 300, chunkSize: 100, saveParents: false }
              - name: delete
                actors:
                  - deleter: { \(deleter), select: all, saveParents: false }
              - name: verify
            """
        }
        let all = try EverydayWorkloadTests.run(yaml("fraction: 1, chunkSize: 100"))
        #expect(Self.unsaved(all, "inserted") == 0 && Self.unsaved(all, "deleted") == 0 && Self.unsaved(all, "updated") == 0)
        #expect(all.counters["operations"] == 3 + 3)
        #expect((all.counters["rowsDeleted"] ?? 0) == 0)
        #expect(all.oracle.verdict == .pass, "\(all.oracle.summary)")
        #expect(all.notes.isEmpty, "\(all.notes)")
        // Some of them: the rest stay unsaved inserts of the view context.
        let some = try EverydayWorkloadTests.run(yaml("objects: 120, chunkSize: 50"))
        #expect(Self.unsaved(some, "inserted") == 180 && Self.unsaved(some, "deleted") == 0)
        #expect(some.counters["operations"] == 3 + 3)
        #expect(some.oracle.verdict == .pass, "\(some.oracle.summary)")
    }
}
