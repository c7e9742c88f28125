import Foundation
import Testing
@testable import ObjectGraph

// Semantics §2.1 step 8 (Docs §10.11, the registry is weak): an object nobody holds is freed, and its registry
// entry (which keeps the freed object's memory, ObjectRegistry) goes at the next sweep, which comes whenever the
// registry outgrows twice the live objects it had at the last sweep or fetch. A fetch reserves room for its
// objects at once (ce9e2a6): the threshold it sets must still follow that rule when the fetch returns objects
// that were registered already.
@Suite struct RegistryThresholdTests {
    @Test("§2.1 step 8: a re-fetch of registered objects leaves the sweep at twice the live objects, not twice the fetched plus the registered")
    func refetchKeepsTheSweepAtTwiceTheLiveObjects_2_1() throws {
        let stack = try TestStack()
        let n = 10_000
        let ids = try stack.seed(n + 1)
        let ctx = stack.context()
        var request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])
        request.fetchLimit = n
        try ctx.performAndWait {
            do {
                let held = try ctx.fetch(request)
                #expect(held.count == n)
                // One more registered object, freed at once: the registry has an entry to sweep.
                _ = ctx.object(with: ids[n])
                #expect(ctx.registry.count == n + 1)
                // The same objects again: the fetch sweeps (the freed entry goes) and makes room.
                let again = try ctx.fetch(request)
                #expect(again.count == n)
                #expect(zip(held, again).allSatisfy { $0 === $1 })
                #expect(ctx.registry.count == n)
            }
            // Every fetched object is freed now; 2.5n objects registered and freed one by one after it (the registry
            // reached 3.5n entries while the threshold stayed at twice the registered plus the fetched, 4n).
            let entity = ids[0].entity
            let store = ids[0].storeNumber
            for k in 1...(2 * n + n / 2) {
                _ = ctx.object(with: ManagedObjectID(entity: entity, primaryKey: Int64(1_000_000 + k), storeNumber: store))
            }
            // The live objects at the fetch were n: the freed entries are swept once the registry passes 2n.
            #expect(ctx.registry.count <= 2 * n, "freed entries kept beyond twice the live objects of the last fetch")
            #expect(ctx.registeredObjectCount == 0)
        }
    }
}
