import Foundation
import Testing
@testable import Workbench

/// `stack.store: inMemory` (Docs/coredata-behaviour.md §7 "The in-memory store"): the stack's coordinator opens an
/// in-memory store, which counts no SQL and no transaction, so a run on it shows the object graph's work without
/// SQLite's; what needs SQLite or a second coordinator on the store is refused where it is written.
@Suite("An in-memory store in scenarios (stack.store)")
struct InMemoryStoreScenarioTests {
    /// The message `ScenarioLoader` gives for `yaml`, or "ok".
    func message(_ yaml: String, overrides: [String] = []) -> String {
        loaderMessage(yaml, file: "mem.yaml", overrides: overrides)
    }

    static let valid = """
        name: mem
        stack:
          topology: container
          store: inMemory
        phases:
          - name: seed
            actors:
              - importer: { objects: 100, chunkSize: 50 }
        """

    /// A run phase with `actor` after the seed (lines 9 and 12: the phase, and the actor at column 9).
    static func with(_ actor: String) -> String {
        valid + "\n  - name: run\n    duration: 1s\n    actors:\n      - \(actor)"
    }

    // Docs/coredata-behaviour.md §7: the store is sqlite unless the scenario says inMemory.
    @Test("stack.store loads: sqlite by default, inMemory when written; another value names the choices")
    func storeLoads() throws {
        #expect(try ScenarioLoader.load(text: Self.valid, file: "mem.yaml").variants[0].stack.store == .inMemory)
        let plain = Self.valid.replacingOccurrences(of: "  store: inMemory\n", with: "")
        #expect(try ScenarioLoader.load(text: plain, file: "mem.yaml").variants[0].stack.store == .sqlite)
        #expect(message(Self.valid.replacingOccurrences(of: "store: inMemory", with: "store: memory"))
            == "mem.yaml:4:10: stack.store: expected one of sqlite, inMemory, found 'memory' (did you mean 'inMemory'?)")
    }

    // Docs/coredata-behaviour.md §7 "The in-memory store" and §2.4: each coordinator that adds an in-memory store
    // gets one of its own, so the stacks of two coordinators on one store are refused where `store` is written.
    @Test("Semantics §7: topologies of two coordinators on one store are refused at stack.store, also from a matrix or -p")
    func twoCoordinatorTopologiesRefused() throws {
        let history = Self.valid.replacingOccurrences(of: "topology: container", with: "topology: history")
        #expect(message(history) == "mem.yaml:4:10: stack.store: the `history` topology opens two coordinators on one store, and an in-memory store cannot be shared: each coordinator would get an empty store of its own (choose container, nested, viewChildren, privateRoot or headless, or store: sqlite)")
        // The Ambar topologies are the Ambar container, which opens the store file whether it has one coordinator or two.
        for topology in ["ambar", "ambar8", "ambar7"] {
            for single in ["", "\n  singleCoordinator: true"] {
                let text = Self.valid.replacingOccurrences(of: "topology: container", with: "topology: \(topology)\(single)")
                #expect(message(text).hasSuffix("stack.store: the `\(topology)` topology is the Ambar container, which the workbench opens on an SQLite store file (with one coordinator or two): it has no in-memory store (choose container, nested, viewChildren, privateRoot or headless, or store: sqlite)"), "\(topology)\(single)")
            }
        }
        for topology in ["container", "nested", "viewChildren", "privateRoot", "headless"] {
            #expect(message(Self.valid.replacingOccurrences(of: "topology: container", with: "topology: \(topology)")) == "ok")
        }
        // Chosen by a matrix: the matrix's value is where inMemory is written.
        let sqlite = Self.valid.replacingOccurrences(of: "  store: inMemory\n", with: "").replacingOccurrences(of: "container", with: "ambar")
        #expect(message(sqlite + "\nmatrix:\n  stack.store: [sqlite, inMemory]").hasPrefix("mem.yaml:9:25: stack.store: the `ambar` topology is the Ambar container"))
        // A matrix of topologies with an in-memory store written in the stack: the store's place.
        #expect(message(Self.valid + "\nmatrix:\n  stack.topology: [container, ambar]").hasPrefix("mem.yaml:4:10: stack.store: the `ambar` topology"))
        // From the command line: the override is named.
        #expect(message(sqlite, overrides: ["stack.store=inMemory"]).hasPrefix("mem.yaml (-p stack.store=inMemory): stack.store: the `ambar` topology"))
        #expect(message(Self.valid, overrides: ["stack.topology=history"]).hasPrefix("mem.yaml:4:10: stack.store: the `history` topology"))
    }

    // Docs/coredata-behaviour.md §3.7 (query generations need SQLite in WAL mode), §8 (the pool is SQLite's read
    // connections), §6 (batch requests are SQLite's), §7 (a writer's second coordinator, the migrator's file).
    @Test("Semantics §3.7, §6, §7, §8: pinViewGeneration, connectionPool, writer, batch and migrator are refused where written")
    func sqliteOnlyFeaturesRefused() throws {
        let pinned = Self.valid.replacingOccurrences(of: "  store: inMemory\n", with: "  store: inMemory\n  pinViewGeneration: true\n")
        #expect(message(pinned) == "mem.yaml:5:22: stack.pinViewGeneration: query generations need an SQLite store in WAL mode; an in-memory store has none (remove pinViewGeneration or use store: sqlite)")
        let pool = Self.valid.replacingOccurrences(of: "  store: inMemory\n", with: "  connectionPool: 2\n  store: inMemory\n")
        #expect(message(pool) == "mem.yaml:4:19: stack.connectionPool: the connection pool is an SQLite store's read connections; an in-memory store has none (remove connectionPool or use store: sqlite)")
        #expect(message(Self.with("writer: { rate: 5/s }")) == "mem.yaml:12:9: phases.run.writer: stack.store is inMemory, and a writer opens a coordinator of its own, which would get an empty in-memory store of its own (an in-memory store cannot be shared): remove the writer or use store: sqlite")
        #expect(message(Self.with("batch: { kind: delete }")) == "mem.yaml:12:9: phases.run.batch: stack.store is inMemory, and a batch runs batch requests, which Core Data supports on SQLite stores only: remove the batch or use store: sqlite")
        #expect(message(Self.valid + "\n  - name: migrate\n    actors:\n      - migrator: {}").hasPrefix("mem.yaml:11:9: phases.migrate.migrator: stack.store is inMemory, and a migrator migrates a store file"))
        // The same actors are fine on SQLite, and the object graph's actors on either store.
        let sqlite = Self.valid.replacingOccurrences(of: "  store: inMemory\n", with: "")
        #expect(message(sqlite + "\n  - name: run\n    duration: 1s\n    actors:\n      - writer: {}\n      - batch: {}") == "ok")
        #expect(message(Self.with("viewer: { visibleObjects: 5 }\n      - editor: {}\n      - temporary: { save: true }")) == "ok")
    }

    /// Seeds 300 records, then updates 150 and inserts 150: no viewer or editor, so the work does not depend on
    /// how long the store's operations take (the same saves, merges and faults on both stores).
    static let comparison = """
        name: compare
        seed: 5
        stack:
          topology: container
        phases:
          - name: seed
            actors:
              - importer: { objects: 300, chunkSize: 100 }
          - name: run
            actors:
              - importer: { objects: 300, chunkSize: 100, updateFraction: 0.5 }
          - name: verify
        matrix:
          stack.store: [sqlite, inMemory]
          stack.topology: [container, nested]
        """

    // Docs/coredata-behaviour.md §7 "The in-memory store"; §2 (the saves and pushes are the object graph's on both
    // stores); §2.3 (the coordinator's row cache is in front of both).
    @Test("Semantics §7: an in-memory run counts no SQL statement, transaction or SQLite row, and the object graph's counts of an SQLite run")
    func sameObjectGraphWithoutSQLite() throws {
        let variants = try ScenarioLoader.load(text: Self.comparison, file: "compare.yaml").variants
        #expect(variants.count == 4)
        for topology in [TopologyKind.container, .nested] {
            let pair = variants.filter { $0.stack.topology == topology }
            let sqliteScenario = try #require(pair.first { $0.stack.store == .sqlite })
            let memoryScenario = try #require(pair.first { $0.stack.store == .inMemory })
            let sqlite = try runVariant(sqliteScenario), memory = try runVariant(memoryScenario)
            func ops(_ r: VariantResult, _ name: String) -> Int { Int(r.value("costedOperations", "count", label: name) ?? 0) }
            // SQLite's work is absent.
            for op in ["sqlStatement", "transaction", "rowInserted", "rowUpdated", "rowDeleted"] {
                #expect(ops(memory, op) == 0, "\(topology) \(op)")
                #expect(op == "rowDeleted" || ops(sqlite, op) > 0, "\(topology) \(op) on SQLite")
            }
            // The store's own: every row the saves wrote, and rows read (the importer's look-ups walk the table).
            #expect(ops(memory, "inMemoryRowWritten") == ops(sqlite, "rowInserted") + ops(sqlite, "rowUpdated") + ops(sqlite, "rowDeleted"))
            #expect(ops(memory, "inMemoryRowRead") > 0 && ops(sqlite, "inMemoryRowRead") == 0 && ops(sqlite, "inMemoryRowWritten") == 0)
            // The object graph's work is the same.
            for op in ["objectRegistered", "notificationPosted", "objectPushed", "contextSave", "fetchExecuted", "rowFetched",
                       "propertySet", "objectRefreshed", "blockRun"] {
                #expect(ops(memory, op) == ops(sqlite, op), "\(topology) \(op): in memory \(ops(memory, op)), SQLite \(ops(sqlite, op))")
            }
            #expect(ops(memory, "objectPushed") > 0 || topology == .container)
            // Faults: as many on both; a row-cache miss is filled from memory, not by a SELECT (semantics §7).
            let faults = { (r: VariantResult) in ops(r, "faultFulfilledFromCache") + ops(r, "faultFulfilledFromStore") }
            #expect(faults(memory) == faults(sqlite))
            #expect(ops(memory, "faultFulfilledFromStore") == 0)
            #expect(memory.value("rowCacheMisses", "value", label: topology.rawValue) == sqlite.value("rowCacheMisses", "value", label: topology.rawValue))
            // The oracle read the rows from the in-memory store.
            #expect(memory.oracle.verdict == .pass && memory.notes.isEmpty, "\(memory.oracle.summary) \(memory.notes)")
            #expect(memory.value("duplicates", "count") == 0)
            // No file: the store's SQLite figures are absent, not zero.
            #expect(memory.value("walSize", "peak") == nil && memory.value("sqliteMemory", "peak") == nil)
            #expect(sqlite.value("walSize", "peak") != nil && sqlite.value("sqliteMemory", "peak") != nil)
            // SQLite's time is gone from the run: the in-memory run is shorter on the simulated clock.
            #expect((memory.value("runTime", "value") ?? 0) < (sqlite.value("runTime", "value") ?? 0))
        }
    }
}
