import Foundation
import Testing
@testable import ObjectGraph

/// The smaller gaps — a batch insert filled through managed objects, the count result type as
/// Core Data's `fetch(_:)` returns it, and `requestType` on every request.
@Suite struct SmallGapsTests {
    // Semantics §6 (batch requests bypass the object graph): a managed-object handler fills one new object per
    // row, which belongs to no context; its attributes (defaults included) become the row; true stops the request.
    @Test("A batch insert's managed-object handler fills unregistered objects, one row each")
    func batchInsertManagedObjectHandler() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        var seen: [ManagedObject] = []  // held, so that no two can share an address
        try ctx.performAndWait {
            let entity = try #require(stack.model.entity(named: "Item"))
            var n = 0
            var request = BatchInsertRequest(entity: entity) { object in
                n += 1
                guard n <= 3 else { return true }
                #expect(object.managedObjectContext == nil)
                #expect(object is Item)
                seen.append(object)
                try? object.setValue(Int64(100 + n), forKey: "id")
                if n != 2 { try? object.setValue("row \(n)", forKey: "name") }
                return false
            }
            request.resultType = .count
            #expect(request.requestType == .batchInsertRequestType)
            #expect(try ctx.execute(request).count == 3)
            #expect(ctx.registeredObjectCount == 0 && !ctx.hasChanges)
        }
        #expect(Set(seen.map(ObjectIdentifier.init)).count == 3)  // a new object per call
        let rows = try stack.sql("SELECT ZID, ZNAME, ZPRICE FROM ZITEM ORDER BY ZID")
        #expect(rows.map { $0[0].int64 } == [101, 102, 103])
        #expect(rows.map { $0[1] == .null } == [false, true, false])
        #expect(rows.map { $0[2] } == [.real(0), .real(0), .real(0)])  // the model's default price
    }

    // NSCountResultType: `fetch(_:)` returns one element, the number of matches, pending changes included
    // (as `count(for:)`); the other result types return what their own fetch methods return.
    @Test("fetchResults follows resultType; .count is a one-element array")
    func countResultTypeIsOneElementArray() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            for i in 1...3 {
                let item = Item(context: ctx)
                item.id = Int64(i)
                item.name = "n\(i)"
            }
            try ctx.save()
            let pending = Item(context: ctx)
            pending.id = 4
            var request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])
            #expect(request.requestType == .fetchRequestType)
            request.resultType = .count
            let counted = try ctx.fetchResults(request)
            #expect(counted.count == 1 && counted.first as? Int == 4)
            request.resultType = .managedObjectID
            #expect((try ctx.fetchResults(request)).count == 4)
            request.resultType = .dictionary
            request.propertiesToFetch = ["id"]
            // Dictionaries never include pending changes (Core Data's rule, semantics §4).
            #expect((try ctx.fetchResults(request)).compactMap { ($0 as? [String: Any])?["id"] as? Int64 } == [1, 2, 3])
            request.resultType = .managedObject
            #expect((try ctx.fetchResults(request)).compactMap { ($0 as? Item)?.id } == [1, 2, 3, 4])
        }
        #expect(BatchUpdateRequest(entityName: "Item", propertiesToUpdate: [:]).requestType == .batchUpdateRequestType)
        #expect(BatchDeleteRequest(objectIDs: []).requestType == .batchDeleteRequestType)
        #expect(PersistentStoreRequestType.saveRequestType.rawValue == 2)
    }
}
