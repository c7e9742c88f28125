import Foundation
import Testing
@testable import ObjectGraph

/// Behaviour kept by the fifth round's fixes to the update path's bookkeeping (Benchmarks/README.md, "Fifth
/// round"): the typed fetch's cast, the uniqueness check's early exit, the changed slots handed to the store as
/// they are kept.
@Suite struct SavePathTests {
    // Semantics §4: a typed fetch returns the objects of the requested class, in the fetch's order; objects of
    // another class are left out (the loop that replaced `compactMap` keeps both paths: the exact class and a
    // cast to a superclass).
    @Test func typedFetchKeepsOrderAndCasts_4() throws {
        let stack = try TestStack()
        try stack.seed(5)
        let ctx = stack.context()
        try ctx.performAndWait {
            let request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id", ascending: false)])
            let items = try ctx.fetch(request, as: Item.self)
            #expect(items.map(\.id) == [5, 4, 3, 2, 1])
            let plain = try ctx.fetch(request, as: ManagedObject.self)
            #expect(plain.count == 5)
            #expect(zip(plain, items).allSatisfy { $0 === $1 })
            #expect(try ctx.fetch(request, as: Tag.self).isEmpty)
        }
    }
}
