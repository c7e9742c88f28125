import Foundation
import Testing
@testable import ObjectGraph

/// An object that notes, in a log its test owns, the key of each object loaded in a merge's refresh.
final class MergeOrderItem: ManagedObject {
    nonisolated(unsafe) static var log: [Int64] = []
    override func awakeFromFetch() { Self.log.append(objectID.primaryKey ?? -1) }
}

/// A merge refreshes (and deletes) the registered objects a save touched in key order, not in the order of the
/// change set: a refresh in a child context fulfils the object from its parent at a scheduling point, where
/// another thread of a simulation may change what the parent holds, so the order decides counts. In the set's
/// order (its storage's address seeds the hash) one scenario and seed counted a fault fulfilled from the row
/// cache in one run and from the parent's object in another (semantics §3.1, §3.2: Core Data's
/// own order is not documented, ours is the save's key order, §2.1).
@Suite(.serialized) struct MergeOrderTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(name: "Thing", managedObjectClass: MergeOrderItem.self,
                              attributes: [AttributeDescription(name: "value", type: .integer64, isOptional: false, defaultValue: .integer(0))]),
        ])
    }

    @Test func mergeRefreshesRegisteredObjectsInKeyOrder_3_1() throws {
        let stack = try TestStack(model: try Self.model())
        let writer = stack.context(), reader = stack.context()
        let ids: [ManagedObjectID] = try writer.performAndWait {
            let things = (0..<300).map { _ in ManagedObject(entity: stack.model.entitiesByName["Thing"]!, insertInto: writer) }
            try writer.save()
            return things.map(\.objectID)
        }
        // The reader holds every object, loaded (a merge refreshes only objects in use).
        let held: [ManagedObject] = try reader.performAndWait {
            try ids.map { id in
                let o = try reader.existingObject(with: id)
                _ = o.value(forKey: "value")
                return o
            }
        }
        // Updated in an order of their own, so neither the insert order nor the update order decides.
        let updated: Set<ManagedObjectID> = try writer.performAndWait {
            for id in ids.reversed() { try writer.existingObject(with: id).setValue(Int64(7), forKey: "value") }
            try writer.save()
            return Set(ids)
        }
        MergeOrderItem.log = []
        reader.performAndWait { reader.mergeChanges(fromObjectIDs: ContextObjectIDChanges(updated: updated)) }
        let log = MergeOrderItem.log
        #expect(log.count == 300, "each held object is loaded again once")
        #expect(log == log.sorted(), "refreshed in key order")
        #expect(held.count == 300)
    }
}
