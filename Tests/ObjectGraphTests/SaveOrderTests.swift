import Foundation
import Testing
@testable import ObjectGraph

// Semantics §3.6 for the determinism rule: a save writes its updated rows in (entity, store,
// primary key) order. A large save of one entity's dense keys is ordered by placing each row by its key; every
// other save by a comparison sort. Both give the same order.
@Suite struct SaveOrderTests {
    /// Entries for `keys` (entity and store from `group`), each with an object of its own, in the order given.
    private static func entries(_ keys: [(entity: Int, store: UInt32, key: Int64)], objects: [ManagedObject]) -> ManagedObjectContext.UpdateOrder {
        keys.enumerated().map { n, k in (k.entity, k.store, k.key, Unmanaged.passUnretained(objects[n])) }
    }

    private static func sortedByComparison(_ order: ManagedObjectContext.UpdateOrder) -> ManagedObjectContext.UpdateOrder {
        order.sorted { a, b in (a.entity, a.store, a.key) < (b.entity, b.store, b.key) }
    }

    private static func same(_ a: ManagedObjectContext.UpdateOrder, _ b: ManagedObjectContext.UpdateOrder) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { x, y in
            x.entity == y.entity && x.store == y.store && x.key == y.key && x.object.toOpaque() == y.object.toOpaque()
        }
    }

    /// Each case (up to 300 entries) placed by ``ManagedObjectContext/sortInKeyOrder(_:)`` comes out in the
    /// comparison sort's order, objects included.
    private static func expectPlacementIsTheSort(_ cases: [[(entity: Int, store: UInt32, key: Int64)]],
                                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let objects: [ManagedObject] = ctx.performAndWait { (0..<300).map { _ in Item(context: ctx) } }
        for keys in cases {
            let order = entries(keys, objects: objects)
            var placed = order
            ManagedObjectContext.sortInKeyOrder(&placed)
            #expect(same(placed, sortedByComparison(order)), sourceLocation: sourceLocation)
        }
        withExtendedLifetime(objects) {}
    }

    @Test("The save's key order is the comparison sort's, for dense keys, sparse keys, several entities or stores, and small saves (§3.6)")
    func keyOrderIsTheComparisonSortsWhateverTheKeys_3_6() throws {
        // 1...300 in a fixed order of no pattern (7919 is prime to 300): the same entries on every run.
        let dense = (0..<300).map { Int64($0 * 7919 % 300 + 1) }
        #expect(Set(dense).count == 300)
        let cases: [[(entity: Int, store: UInt32, key: Int64)]] = [
            dense.map { (3, 1, $0) },                                   // one entity, dense keys: placed by key
            dense.map { (3, 1, $0 + 1_000_000) },                       // dense keys far from 1
            dense.map { (3, 1, $0 * 10) },                              // sparse keys: sorted
            dense.map { (3 + Int($0 % 2), 1, $0) },                     // two entities
            dense.map { (3, 1 + UInt32($0 % 3), $0) },                  // three stores
            dense.prefix(40).map { (3, 1, $0) },                        // a small save
            dense.map { (3, 1, $0 == 7 ? Int64.max : ($0 == 8 ? Int64.min : $0)) },  // a range that overflows
        ]
        try Self.expectPlacementIsTheSort(cases)
    }

    @Test("Negative keys, keys at Int64.max, a repeated key and one far key among dense ones keep the comparison sort's order; the far key is not placed (a table of 10^12 slots would not fit) (§3.6)")
    func keyOrderAtTheEdgesOfTheKeyRange_3_6() throws {
        let dense = (0..<300).map { Int64($0 * 7919 % 300 + 1) }
        let cases: [[(entity: Int, store: UInt32, key: Int64)]] = [
            dense.map { (3, 1, $0 - 1_000) },                           // dense keys below and above 0
            dense.map { (3, 1, Int64.max - 300 + $0) },                 // dense keys up to Int64.max
            dense.map { (3, 1, Int64.min + $0 - 1) },                   // dense keys from Int64.min
            dense.map { (3, 1, $0 == 150 ? 149 : $0) },                 // one key twice: sorted
            dense.prefix(64).map { (3, 1, $0 == dense[63] ? 1_000_000_000_000 : $0) },  // 63 small keys and 10^12
            [(3, 1, 1), (3, 1, 1_000_000_000_000)],                     // two keys far apart
        ]
        try Self.expectPlacementIsTheSort(cases)
    }

    // House rule (nothing that feeds work or output depends on set order or addresses), semantics §3.6: a save
    // writes its updated and deleted rows in primary-key order, not in the order its change sets hash their
    // objects (addresses). The history changes of the transaction, which record the rows in the order they
    // were written, come out in key order on every run. Key order also walks the table's
    // B-tree once, front to back, instead of at random (Benchmarks/LOG.md).
    @Test func updatesAndDeletesAreWrittenInKeyOrder_3_6() throws {
        let stack = try TestStack(model: PersistentHistoryTests.historyModel(), options: PersistentHistoryTests.tracked())
        let ctx = stack.context()
        let keys: [Int64] = try ctx.performAndWait {
            for i in 0..<200 {
                let item = Item(context: ctx)
                item.id = Int64(i)
            }
            try ctx.save()
            ctx.reset()
            let items = try fetchItems(ctx)
            // Changed in an order of their own (descending ids), so neither the fetch's order nor the order of
            // the changes decides.
            for item in items.reversed() { item.price = 1 }
            try ctx.save()
            for item in items where item.id % 3 == 0 { ctx.delete(item) }
            try ctx.save()
            return items.map { $0.objectID.primaryKey! }
        }
        let history = try stack.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
        #expect(history.count == 3)
        let updated = history[1].changes!.map { $0.changedObjectID.primaryKey! }
        #expect(updated.count == 200)
        #expect(updated == keys.sorted())
        let deleted = history[2].changes!.map { $0.changedObjectID.primaryKey! }
        #expect(deleted.count == 67)
        #expect(deleted == deleted.sorted())
    }
}
