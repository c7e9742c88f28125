import Foundation
import ObjectGraph
import SeededRandom
import Testing
@testable import Workbench

/// The cost rules on the workbench side: what the main queue does, counted by kind and per queue.
@Suite("Cost fidelity: the viewer's controller, main-queue work by kind, per-queue counters, connections")
struct CostFidelityTests {
    static func run(_ overrides: [String]) throws -> VariantResult {
        let scenario = try #require(try tinyScenario(overrides: overrides).variants.first)
        return try runVariant(scenario)
    }

    static func busy(_ r: VariantResult, _ kind: MainBlockKind) -> Double { r.value("mainBusy", "total", label: kind.rawValue) ?? -1 }

    @Test("A nested stack's child pushes and the view context's own saves are main-queue busy time, by kind; the kinds add up to the whole")
    func nestedPushesAndSavesCountOnMain() throws {
        let r = try Self.run(["stack.topology=nested"])
        let total = try #require(r.value("mainBusy", "total"))
        #expect(Self.busy(r, .push) > 0)
        #expect(Self.busy(r, .save) > 0)
        #expect(Self.busy(r, .frame) > 0)
        #expect(Self.busy(r, .fetch) > 0)
        #expect(Self.busy(r, .merge) == 0, "a nested stack merges nothing: its child saves are pushes")
        let sum = MainBlockKind.allCases.map { Self.busy(r, $0) }.reduce(0, +)
        #expect(abs(sum - total) < 1e-6 * max(1, total), "kinds \(sum) ms vs whole \(total) ms")
        // Semantics §2.2: the child's objects are pushed and registered in the main-queue parent, on the main queue.
        #expect((r.value("objectsRegistered", "count", label: "queue=main") ?? 0) > 0)
    }

    @Test("In a nested stack each chunk's push and parent save cost the main queue more as chunks grow (the whole chunk crosses the main queue)")
    func nestedMainQueueTimeGrowsWithChunkSize() throws {
        // 400 objects in all (200 seeded, 200 in the run phase), in chunks of 20 or of 100.
        func perChunk(_ size: Int) throws -> (busy: Double, stall: Double) {
            let r = try Self.run(["stack.topology=nested", "phases.seed.importer.chunkSize=\(size)", "phases.run.importer.chunkSize=\(size)"])
            let chunks = Double(400 / size)
            return ((Self.busy(r, .push) + Self.busy(r, .save)) / chunks, try #require(r.value("mainStall", "max")))
        }
        let small = try perChunk(20), large = try perChunk(100)
        #expect(large.busy > 3 * small.busy, "push + save per chunk: \(small.busy) ms at 20, \(large.busy) ms at 100")
        #expect(large.stall > small.stall)
    }

    @Test("The Ambar stack's main queue merges, fetches and draws frames; background imports push nothing into it")
    func ambarMainQueueKinds() throws {
        let r = try Self.run([])
        #expect(Self.busy(r, .merge) > 0)
        #expect(Self.busy(r, .frame) > 0)
        #expect(Self.busy(r, .fetch) > 0)
        // The tiny scenario's editor is a child of the view context: its saves are pushes.
        #expect(Self.busy(r, .push) > 0)
    }

    @Test("per-queue counters with queue (and source, kind) labels, zeros included, exact in simulated mode")
    func perQueueCounters() throws {
        let r = try Self.run([])
        let names = ["objectsRegistered", "rowsFetched", "objectsRefreshed", "transactions", "notificationsPosted", "frcObjectsEvaluated"]
        for name in names {
            for queue in ["main", "background"] {
                #expect(r.value(name, "count", label: "queue=\(queue)") != nil, "\(name) queue=\(queue) missing")
            }
        }
        for source in ["rowCache", "store"] {
            #expect(r.value("faultsFulfilled", "count", label: "queue=main,source=\(source)") != nil)
        }
        for kind in StatementKind.allCases {
            #expect(r.value("sqlStatements", "count", label: "queue=background,kind=\(kind.name)") != nil)
        }
        // Imports write on background queues only: every INSERT and every commit is theirs.
        #expect((r.value("sqlStatements", "count", label: "queue=background,kind=insert") ?? 0) > 0)
        #expect(r.value("sqlStatements", "count", label: "queue=main,kind=insert") == 0)
        #expect((r.value("transactions", "count", label: "queue=background") ?? 0) > 0)
        // The breakdown adds up to the costed statement count.
        let statements = StatementKind.allCases.flatMap { k in ["main", "background"].map { r.value("sqlStatements", "count", label: "queue=\($0),kind=\(k.name)") ?? 0 } }.reduce(0, +)
        #expect(statements == r.value("costedOperations", "count", label: "sqlStatement"))
        // The same scenario and seed give the same counters.
        let again = try Self.run([])
        let pick = { (x: VariantResult) in x.metrics.filter { QueueCounters.metricNames.contains($0.metric) } }
        #expect(pick(r) == pick(again))
    }

    @Test("On one shared coordinator the view's reads overlap a background save with a connection pool, and wait for it with stack.connectionPool 1 (semantics §8)")
    func connectionPoolLetsReadersOverlapTheWriter() throws {
        let pooled = try Self.run(["stack.topology=container"])
        let serial = try Self.run(["stack.topology=container", "stack.connectionPool=1"])
        let (p, s) = (try #require(pooled.value("mainBlocked", "total")), try #require(serial.value("mainBlocked", "total")))
        #expect(s > p, "main queue waited \(s) ms with one connection, \(p) ms with the pool")
        // The pool changes when reads run, never what they read: the same rows reach the store and the view.
        #expect(pooled.counters["rowsInserted"] == serial.counters["rowsInserted"])
        #expect(pooled.oracle.lostUpdates == 0 && serial.oracle.lostUpdates == 0)
    }

    @Test("The Ambar stack's view context fires one store fault per merged insert its controller watches (Core Data's controller, §5); batched saves the store trips; the window stays a screenful")
    func controllerFiresAFaultPerMergedInsert() throws {
        // The tiny scenario: 200 seeded records, then 200 imported in chunks of 50, half of them new (100 inserts).
        let core = try Self.run(["phases.run.viewer.request.fetchBatchSize=20"])
        let batched = try Self.run(["phases.run.viewer.request.fetchBatchSize=20", "phases.run.viewer.frc=batched"])
        let inserted = try #require(core.counters["rowsInserted"]) - 200
        #expect(inserted == 100)
        // The view has its own coordinator in the Ambar stack: each merged insert is a store trip on the main queue.
        #expect(core.value("faultsFulfilled", "count", label: "queue=main,source=store") == Double(inserted))
        #expect(batched.value("faultsFulfilled", "count", label: "queue=main,source=store") == 0)
        #expect((batched.value("sqlStatements", "count", label: "queue=main,kind=select") ?? 0) < (core.value("sqlStatements", "count", label: "queue=main,kind=select") ?? 0) - Double(inserted) / 2)
        #expect(Self.busy(batched, .merge) < Self.busy(core, .merge))
        // The controller holds every record; a frame reads the window only.
        #expect(core.value("frcObjects", "value") == 300)
        #expect(core.costRules.contains("frc-evaluates-each-insert") && batched.costRules.contains("frc-batched-option"))
        #expect(!batched.costRules.contains("frc-evaluates-each-insert"))
    }

    @Test("Core Data's controller grows past its fetchLimit as inserts merge; the batched option keeps to it")
    func controllerGrowsPastItsLimit() throws {
        // Newest first, so merged inserts sort into the top of a 10-row list.
        let request = ["phases.run.viewer.request.fetchLimit=10", "phases.run.viewer.request.sort=[-id]"]
        let core = try Self.run(request)
        let batched = try Self.run(request + ["phases.run.viewer.frc=batched"])
        #expect((core.value("frcObjects", "value") ?? 0) > 10)
        #expect(batched.value("frcObjects", "value") == 10)
        #expect(core.costRules.contains("frc-limit-grows"))
    }

    @Test("An import that never resets keeps what records and their groups hold registered (its registry grows with the import); unreferenced objects leave after each save; a reset per save keeps it to a chunk")
    func importerRegistryGrowsWithoutReset() throws {
        func peak(_ overrides: [String]) throws -> Int {
            try #require(try Self.run(overrides).counters["importerRegisteredObjects"])
        }
        // The run phase imports 200 records in chunks of 50: 100 new (linked to one of 2 groups), 100 updated.
        let cycles = try peak(["phases.run.importer.reset=never", "phases.run.importer.groups=2"])
        let noCycles = try peak(["phases.run.importer.reset=never"])
        let resetting = try peak(["phases.run.importer.groups=2"])
        #expect(cycles >= 100 + 2, "records and groups that hold each other stay: \(cycles)")
        #expect(noCycles <= 50, "nothing holds the saved records: \(noCycles)")
        #expect(resetting <= 50 + 2, "a reset per save: \(resetting)")
    }

    @Test("saveEvery N saves every N chunks (and after the last); the rows are the same")
    func saveEvery() throws {
        let each = try Self.run([])
        let everyTwo = try Self.run(["phases.run.importer.saveEvery=2"])
        #expect(everyTwo.counters["rowsInserted"] == each.counters["rowsInserted"])
        #expect(everyTwo.counters["rowsUpdated"] == each.counters["rowsUpdated"])
        // The run phase's 4 chunks: 4 saves each, 2 saves every two (the editor's saves are the same in both).
        #expect((each.counters["saves"] ?? 0) - (everyTwo.counters["saves"] ?? 0) == 2)
        #expect(everyTwo.oracle.lostUpdates == 0)
    }

    @Test("Docs/what-the-workbench-counts.md names every per-queue counter, every main-queue kind and every cost rule's confidence")
    func countersAreDocumented() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let page = try String(contentsOf: root.appendingPathComponent("Docs/what-the-workbench-counts.md"), encoding: .utf8)
        for name in QueueCounters.metricNames.sorted() { #expect(page.contains("`\(name)`"), "\(name) is not on the page") }
        for kind in MainBlockKind.allCases { #expect(page.contains("`\(kind.rawValue)`"), "kind \(kind.rawValue) is not on the page") }
        for label in ["source=rowCache", "source=store", "kind=select"] { #expect(page.contains(label)) }
        // The report's confidence words are the page's.
        for confidence in [CostRule.Confidence.documented, .secondHand, .inferred] {
            #expect(page.lowercased().contains(confidence.rawValue.replacingOccurrences(of: " by Apple", with: "")), "\(confidence.rawValue)")
        }
        for rule in CostRule.catalog { #expect(!rule.statement.isEmpty && !rule.figures.isEmpty) }
    }

    @Test("Each variant's resident memory is measured from its own start, after the previous variant's freed pages were returned")
    func memoryFromTheVariantsOwnStart() throws {
        guard MemoryProbe.isAvailable else { return }  // built without jemalloc (make tsan)
        let first = try Self.run([])
        let second = try Self.run([])
        for r in [first, second] {
            let start = try #require(r.value("memoryResident", "value", label: "start"), "the start is measured after a purge")
            let growth = try #require(r.value("memoryResident", "peak", label: "growth"))
            let peak = try #require(r.value("memoryResident", "peak"))
            #expect(start > 0 && growth >= 0)
            #expect(abs(start + growth - peak) < 1 || growth == 0)
        }
    }

    @Test("An entity with no integer id imports, is viewed and edited; values follow model.values (string lengths, number ranges)")
    func entityWithoutAnIntegerID() throws {
        let yaml = """
            name: notes
            model:
              entities:
                - { name: Note, attributes: [{ name: title, type: string }, { name: body, type: string }, { name: score, type: double, optional: false, defaultValue: 0 }, { name: stars, type: integer16, optional: false, defaultValue: 0 }, { name: tag, type: uuid }] }
              entity: Note
              fields: [title, score]
              values: { title: { length: 12 }, body: { length: 200 }, score: { min: 1, max: 5 }, stars: { min: 0, max: 3 } }
            stack: { topology: ambar }
            phases:
              - name: seed
                actors:
                  - importer: { objects: 100, chunkSize: 50 }
              - name: run
                duration: 300ms
                actors:
                  - viewer: { visibleObjects: 10 }
                  - editor: { rate: 10/s, edits: 2 }
                  - importer: { objects: 100, chunkSize: 50 }
              - name: verify
            """
        let scenario = try #require(try ScenarioLoader.load(text: yaml, file: "notes.yaml").variants.first)
        #expect(scenario.model.idKey == nil && scenario.model.sortKey == "title")
        let r = try runVariant(scenario)
        #expect(r.counters["rowsInserted"] == 200)
        #expect(r.oracle.lostUpdates == 0)
        #expect((r.counters["saves"] ?? 0) > 4, "the editor saved too")
        // The importer's values follow their specs: every title 12 characters, every score in 1...5.
        var w = ValueCheck(scenario: scenario)
        for _ in 0..<50 {
            let title = w.value("title", .string) as? String ?? ""
            let body = w.value("body", .string) as? String ?? ""
            let score = w.value("score", .double) as? Double ?? -1
            let stars = w.value("stars", .integer16) as? Int16 ?? -1
            #expect(title.count == 12 && body.count == 200)
            #expect((1...5).contains(score) && (0...3).contains(stars))
        }
        // Actors that pick records by number are refused for such an entity, naming the actor.
        let withWriter = yaml.replacingOccurrences(of: "- editor: { rate: 10/s, edits: 2 }", with: "- writer: { rate: 5/s }")
        do {
            _ = try ScenarioLoader.load(text: withWriter, file: "notes.yaml")
            Issue.record("a writer was accepted")
        } catch let error as ScenarioError {
            #expect(error.description.contains("phases.run.writer") && error.description.contains("has none"))
        }
    }

    @Test("Every variant, simulated or real, reports the main queue's whole busy time and its longest single block")
    func mainQueueTotalsInBothModes() throws {
        for mode in ["simulated", "real"] {
            let r = try Self.run(["mode=\(mode)", "stack.topology=nested"])
            let total = try #require(r.value("mainBusy", "total"), "\(mode)")
            let stall = try #require(r.value("mainStall", "max"), "\(mode)")
            #expect(total > 0 && stall > 0 && stall <= total + 1e-9, "\(mode): busy \(total) ms, stall \(stall) ms")
            // The nested stack's pushes and parent saves are in it.
            #expect((r.value("mainBusy", "total", label: "push") ?? 0) + (r.value("mainBusy", "total", label: "save") ?? 0) > 0, "\(mode)")
        }
    }
}

/// Draws values the way the importer does, for checking `model.values` without a run.
struct ValueCheck {
    let scenario: Scenario
    var rng = SeededGenerator(seed: 1)
    init(scenario: Scenario) { self.scenario = scenario }
    mutating func value(_ field: String, _ type: AttributeType) -> Any {
        Workload.value(for: type, spec: scenario.model.values[field], actor: "check", op: 0, rng: &rng)
    }
}

extension CostFidelityTests {
    @Test("Merge none skips every merge; notifyAndRefetch skips them and refetches once the import ends; didSave merges each save")
    func mergeModes() throws {
        for topology in ["ambar", "container", "privateRoot", "history"] {
            let merged = try Self.run(["stack.topology=\(topology)"])
            let none = try Self.run(["stack.topology=\(topology)", "stack.merge=none"])
            let refetch = try Self.run(["stack.topology=\(topology)", "stack.merge=notifyAndRefetch"])
            #expect((merged.value("mainBusy", "total", label: "merge") ?? 0) > 0, "\(topology)")
            #expect(none.value("mainBusy", "total", label: "merge") == 0, "\(topology): no merge")
            #expect(refetch.value("mainBusy", "total", label: "merge") == 0, "\(topology): no merge")
            #expect(refetch.counters["refetches"] == 1, "\(topology): one refetch when the viewer's import phase ends")
            #expect(refetch.oracle.staleReads == 0, "\(topology): the refetch shows the store's values")
            #expect((refetch.value("mainBusy", "total", label: "fetch") ?? 0) > (none.value("mainBusy", "total", label: "fetch") ?? 0), "\(topology)")
            #expect(none.counters["refetches"] == nil)
            // The refetched controller lists every record; without it the view still lists what it first fetched.
            #expect(refetch.value("frcObjects", "value") == 300, "\(topology)")
            #expect((none.value("frcObjects", "value") ?? 0) < 300, "\(topology)")
        }
        // Stacks whose background saves are pushes have no merge to change.
        do {
            _ = try tinyScenario(overrides: ["stack.topology=nested", "stack.merge=none"])
            Issue.record("nested accepted merge: none")
        } catch let error as ScenarioError {
            #expect(error.description.contains("has no merge to change"))
        }
    }
}

extension CostFidelityTests {
    static let threeTiers = """
        name: tiers
        model:
          entities:
            - { name: Root, attributes: [{ name: name, type: string }], relationships: [{ name: groups, destination: Folder, inverse: root, toMany: true }] }
            - { name: Folder, attributes: [{ name: name, type: string }], relationships: [{ name: root, destination: Root, inverse: groups }, { name: items, destination: Item, inverse: folder, toMany: true }] }
            - { name: Item, attributes: [{ name: id, type: integer64, optional: false, defaultValue: 0 }, { name: title, type: string }], relationships: [{ name: folder, destination: Folder, inverse: items }] }
          entity: Item
        stack: { topology: ambar }
        phases:
          - name: run
            actors:
              - importer: { objects: 1000, chunkSize: 100, groups: 10, groupParents: 1, reset: never }
          - name: verify
        """

    @Test("A 1 → 10 → 1,000 graph (root, folders, items) built by the importer stays registered without a reset, and leaves with one")
    func threeTierGraph() throws {
        let kept = try runVariant(try #require(try ScenarioLoader.load(text: Self.threeTiers, file: "tiers.yaml").variants.first))
        #expect(kept.counters["rowsInserted"] == 1000)
        #expect(kept.counters["importerRegisteredObjects"] == 1000 + 10 + 1)
        let reset = try runVariant(try #require(try ScenarioLoader.load(text: Self.threeTiers.replacingOccurrences(of: "reset: never", with: "reset: afterChunk"), file: "tiers.yaml").variants.first))
        // At most a chunk: the first one makes the folders and the root, whose new to-manys hold that chunk until the reset.
        #expect((reset.counters["importerRegisteredObjects"] ?? 0) <= 100 + 10 + 1)
        // groupParents needs a to-one above the groups.
        do {
            _ = try tinyScenario(overrides: ["phases.run.importer.groups=2", "phases.run.importer.groupParents=1"])
            Issue.record("Group has no to-one above it, yet groupParents was accepted")
        } catch let error as ScenarioError {
            #expect(error.description.contains("groupParents needs groups"))
        }
    }
}

extension CostFidelityTests {
    @Test("A phase's duration caps it: an importer starts no chunk after it (the save it began is finished)")
    func durationCapsThePhase() throws {
        // 200 records in chunks of 50 would take well over 1 ms of virtual time.
        let capped = try Self.run(["phases.run.duration=1ms", "phases.run.importer.chunkSize=50"])
        #expect((capped.counters["rowsInserted"] ?? 0) + (capped.counters["rowsUpdated"] ?? 0) < 200 + 200)
        #expect(capped.counters["importerStoppedByDuration"] == 1)
        let whole = try Self.run([])
        #expect(whole.counters["importerStoppedByDuration"] == nil)
        #expect(capped.oracle.lostUpdates == 0)
    }
}
