import Foundation
import Testing
@testable import ObjectGraph

/// The batched controller (`changeEvaluation: .batched`, not Core Data's) against Core Data's for the same merge:
/// it shows the same objects and never costs more, and it costs less where Core Data's does work that cannot
/// change what is shown. Counts in a counting thread, weighed at the first estimates (what the controller itself
/// weighs its choice by outside a simulation).
@Suite struct BatchedControllerCostTests {
    /// Where the view context's rows come from: the coordinator the importer saved through (an
    /// `NSPersistentContainer`, whose row cache holds every merged insert) or a coordinator of its own (the Ambar
    /// stack, where a merged insert's row is a store trip).
    enum Topology: CaseIterable { case sharedCoordinator, ownCoordinator }

    /// What one merge did to a controller.
    struct Outcome {
        var counts: [Int]
        var events: [String]
        var sections: [String]
        var ids: [Int64]
        var faultsFromStore: Int { counts[CostedOperation.faultFulfilledFromStore.rawValue] }
        /// The counts weighed at the prices the controller chose by.
        var cost: UInt64 { CostedOperation.allCases.reduce(0) { $0 + UInt64(counts[$1.rawValue]) * $1.estimatedNanoseconds } }
    }

    /// Seeds items 1…10 (prices 10…100), fetches `request` in a view context on `topology`, saves items
    /// 11…310 from another context (price 5 for every 50th, 1000 + id otherwise) and merges that save, counting.
    static func merge(_ mode: FetchedResultsController.ChangeEvaluation, on topology: Topology, _ request: FetchRequest,
                      sectionKey: String? = nil) throws -> Outcome {
        let stack = try TestStack()
        try stack.seed(10)
        let view = stack.context(topology == .ownCoordinator ? try stack.secondCoordinator() : nil, name: "view")
        let frc = FetchedResultsController(fetchRequest: request, managedObjectContext: view, sectionNameKeyPath: sectionKey, changeEvaluation: mode)
        let recorder = FRCRecorder()
        try view.performAndWait {
            frc.delegate = recorder
            try frc.performFetch()
        }
        // The did-save notification (with objects) holds its save's rows in the row cache until merged
        // (core-data-rules.md "Rule 32"): what the shared coordinator's merge reads.
        let note = try FetchedResultsControllerTests.saveItems(stack, 11...310, posting: ManagedObjectContext.didSaveNotification) {
            $0 % 50 == 0 ? 5 : 1000 + Double($0)
        }
        let (_, counts) = BatchCostTests.counting { view.performAndWait { view.mergeChanges(fromContextDidSave: note) } }
        return view.performAndWait {
            Outcome(counts: counts.ops, events: recorder.take(), sections: (frc.sections ?? []).map(\.name),
                    ids: (frc.fetchedObjects ?? []).compactMap { ($0 as? Item)?.id })
        }
    }

    static let byPrice = [ObjectSortDescriptor("price"), ObjectSortDescriptor("id")]
    /// In sections by name: "item 1" … "item 9" for the seeded items, "n" for the merged ones.
    static let byName = [ObjectSortDescriptor("name"), ObjectSortDescriptor("price"), ObjectSortDescriptor("id")]
    static let cheap = FetchRequest(entityName: "Item", predicate: .compare("price", .lessThan, 50), sortDescriptors: byPrice)
    static let everything = FetchRequest(entityName: "Item", sortDescriptors: byPrice)
    static var firstFive: FetchRequest {
        var request = everything
        request.fetchLimit = 5
        return request
    }

    // Docs/coredata-behaviour.md §5 (Cost): a merge whose inserts all come from the row cache gives the batched
    // controller nothing to save without a predicate or a limit; it evaluates each as Core Data's does, with the
    // same counts, the same changes and the same results.
    @Test("with every merged row cached and no limit, the batched controller does exactly Core Data's work (§5)",
          arguments: [false, true])
    func cachedRowsCostTheSame(predicate: Bool) throws {
        var request = predicate ? Self.cheap : Self.everything
        request.sortDescriptors = Self.byName
        let core = try Self.merge(.coreData, on: .sharedCoordinator, request, sectionKey: "name")
        let batched = try Self.merge(.batched, on: .sharedCoordinator, request, sectionKey: "name")
        #expect(core.faultsFromStore == 0 && core.counts[CostedOperation.faultFulfilledFromCache.rawValue] >= 300)
        #expect(batched.counts == core.counts)
        #expect(batched.events == core.events)
        #expect(batched.sections == core.sections)
        #expect(batched.ids == core.ids)
        #expect(core.ids.count == (predicate ? 10 : 310))
    }

    // Docs/coredata-behaviour.md §5 (Cost): where each merged insert is a store trip, one query per 500 IDs
    // replaces them, and with a predicate only the matches are read; the results and changes are Core Data's.
    @Test("with merged rows read from the store, the batched controller shows the same for less (§5)", arguments: [false, true])
    func storeReadsCostLess(predicate: Bool) throws {
        let request = predicate ? Self.cheap : Self.everything
        let core = try Self.merge(.coreData, on: .ownCoordinator, request)
        let batched = try Self.merge(.batched, on: .ownCoordinator, request)
        #expect(batched.events == core.events)
        #expect(batched.ids == core.ids)
        #expect(core.faultsFromStore >= 300)
        #expect(batched.faultsFromStore == 0)
        #expect(batched.cost < core.cost)
    }

    // Docs/coredata-behaviour.md §5 (Cost): past the fetch limit Core Data's controller fires every merged
    // insert, though at most `fetchLimit` of them can be shown; the batched one reads the first of each chunk
    // only, on either topology, and shows what Core Data's shows within the limit.
    @Test("past the fetch limit the batched controller costs less on either topology (§5)", arguments: Topology.allCases)
    func insertsPastTheLimitCostLess(topology: Topology) throws {
        let core = try Self.merge(.coreData, on: topology, Self.firstFive)
        let batched = try Self.merge(.batched, on: topology, Self.firstFive)
        #expect(core.ids.count == 305)  // Core Data's grows past the limit
        #expect(batched.ids == Array(core.ids.prefix(5)))
        #expect(batched.ids == [50, 100, 150, 200, 250])
        #expect(batched.cost < core.cost)
        #expect(batched.counts[CostedOperation.controllerObjectEvaluated.rawValue] <= 5)
        #expect(core.counts[topology == .ownCoordinator ? CostedOperation.faultFulfilledFromStore.rawValue
                                                         : CostedOperation.faultFulfilledFromCache.rawValue] >= 300)
    }

    // Docs/coredata-behaviour.md §5 (Cost): a query has a fixed price (a fetch) that a few faults do not repay,
    // and cannot beat faults filled from the row cache unless a limit bounds what it returns.
    @Test("the batched controller queries only when that costs less than firing the faults (§5)")
    func queryOnlyWhereItPays() {
        #expect(FetchedResultsController.queryPlan(storeReads: 1, cached: 0, limit: 0) == .none)
        #expect(FetchedResultsController.queryPlan(storeReads: 300, cached: 0, limit: 0) == .storeReads)
        #expect(FetchedResultsController.queryPlan(storeReads: 0, cached: 300, limit: 0) == .none)
        #expect(FetchedResultsController.queryPlan(storeReads: 300, cached: 300, limit: 0) == .storeReads)
        #expect(FetchedResultsController.queryPlan(storeReads: 0, cached: 300, limit: 5) == .all)
        #expect(FetchedResultsController.queryPlan(storeReads: 0, cached: 0, limit: 5) == .none)
    }

    // Docs/coredata-behaviour.md §5 (Cost): outside a simulation the controller weighs its choice at the first
    // estimates, which are the estimates profile's figures.
    @Test("the prices a choice is weighed at outside a simulation are Profiles/estimates.yaml's (§5)")
    func fallbackPricesAreTheEstimates() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("Profiles/estimates.yaml"), encoding: .utf8)
        var figures: [String: UInt64] = [:]
        for line in text.split(separator: "\n") {
            guard let match = line.firstMatch(of: /^\s+(\w+):\s+\{ ns: *([0-9]+)/) else { continue }
            figures[String(match.1)] = UInt64(match.2)
        }
        #expect(figures.count == CostedOperation.count)
        for op in CostedOperation.allCases { #expect(figures[op.name] == op.estimatedNanoseconds, "\(op.name)") }
        #expect(Execution.price(.fetchExecuted) == CostedOperation.fetchExecuted.estimatedNanoseconds)
    }
}
