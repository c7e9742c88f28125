import Foundation
import Testing
@testable import ObjectGraph

/// Batch insert, update and delete (semantics §6) — SQL only, no context, no row cache,
/// no did-save; upserts, `Z_OPT`, delete rules; errors naming the place.
@Suite struct BatchRequestTests {
    static func optimisticVersion(_ stack: TestStack, id: Int64) throws -> Int64? {
        try stack.sql("SELECT Z_OPT FROM ZITEM WHERE ZID = \(id)").first?[0].int64
    }

    // Semantics §6: a batch insert writes rows from dictionaries or a handler, missing attributes take their
    // model defaults, and the result type decides what comes back; no object is registered, no row cached,
    // no did-save posted.
    @Test func batchInsertWritesRowsWithoutObjects_6() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        let saves = NotificationRecorder(ManagedObjectContext.didSaveNotification, object: ctx)
        let changes = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: ctx)
        try ctx.performAndWait {
            var request = BatchInsertRequest(entityName: "Item", objects: [
                ["id": 1, "name": "one", "price": 1.5, "flag": true],
                ["id": 2, "name": NSNull()],
                ["id": 3, "price": 3],
            ])
            request.resultType = .objectIDs
            let result = try ctx.execute(request)
            #expect(result.status)
            #expect(result.count == 3)
            #expect(result.objectIDs?.count == 3)
            #expect(result.objectIDs?.allSatisfy { !$0.isTemporaryID } == true)
            #expect(ctx.registeredObjectCount == 0)
            #expect(!ctx.hasChanges)

            var n = 0
            var handled = BatchInsertRequest(entityName: "Item") { row in
                n += 1
                guard n <= 4 else { return true }
                row["id"] = 10 + n
                row["name"] = "handled \(n)"
                return false
            }
            handled.resultType = .count
            #expect(try ctx.execute(handled).count == 4)
            #expect(try ctx.execute(BatchInsertRequest(entityName: "Item", objects: [["id": 20]])).count == nil)
        }
        #expect(stack.coordinator.counters.rowCacheEntries == 0)
        #expect(saves.notes.isEmpty)
        #expect(changes.notes.isEmpty)
        let rows = try stack.sql("SELECT ZID, ZNAME, ZPRICE, ZFLAG, Z_OPT FROM ZITEM WHERE ZID <= 3 ORDER BY ZID")
        #expect(rows.map { $0[0].int64 } == [1, 2, 3])
        #expect(rows.map { $0[1] == .null } == [false, true, true])
        #expect(rows.map { $0[2] } == [.real(1.5), .real(0), .real(3)])  // price defaults to 0
        #expect(rows.map { $0[3].int64 } == [1, 0, 0])  // flag defaults to false
        #expect(rows.map { $0[4].int64 } == [1, 1, 1])
        #expect(try stack.sql("SELECT count(*) FROM ZITEM").first?[0].int64 == 8)
        // The rows are fetchable like any others.
        let reader = stack.context()
        try reader.performAndWait { () throws in
            #expect(ctxIDs(try fetchItems(reader, .compare("name", .beginsWith, "handled"))) == [11, 12, 13, 14])
        }
    }

    // Semantics §6: with uniqueness constraints and ObjectTrump the batch insert upserts whole rows: the
    // stored row is updated in place (Z_OPT bumped), attributes missing from the dictionary fall back to
    // their defaults, nothing is duplicated.
    @Test func batchInsertUpsertsWholeRowsUnderObjectTrump_6() throws {
        let stack = try TestStack()
        let seeder = stack.context()
        try seeder.performAndWait {
            let item = Item(context: seeder)
            item.id = 1
            item.name = "old"
            item.price = 99
            item.flag = true
            try seeder.save()
        }
        let ctx = stack.context(policy: .mergeByPropertyObjectTrump)
        let ids: [ManagedObjectID] = try ctx.performAndWait {
            var request = BatchInsertRequest(entityName: "Item", objects: [["id": 1, "name": "new"], ["id": 2, "name": "two"]])
            request.resultType = .objectIDs
            return try #require(try ctx.execute(request).objectIDs)
        }
        #expect(ids.count == 2)
        let rows = try stack.sql("SELECT ZID, ZNAME, ZPRICE, ZFLAG, Z_OPT FROM ZITEM ORDER BY ZID")
        #expect(rows.count == 2)
        #expect(rows[0] == [.integer(1), .text("new"), .real(0), .integer(0), .integer(2)])  // whole row replaced
        #expect(rows[1][1] == .text("two"))
    }

    // Semantics §6: StoreTrump/Rollback keep the stored row; the error policy fails the request (133021)
    // and writes nothing.
    @Test(arguments: [MergePolicy.mergeByPropertyStoreTrump, .rollback, .error])
    func batchInsertConstraintHitUnderOtherPolicies_6(policy: MergePolicy) throws {
        let stack = try TestStack()
        try stack.seed(1)
        let ctx = stack.context(policy: policy)
        try ctx.performAndWait { () throws in
            let request = BatchInsertRequest(entityName: "Item", objects: [["id": 5, "name": "five"], ["id": 1, "name": "clash"]])
            if policy.type == .error {
                #expect { try ctx.execute(request) } throws: { ($0 as? ObjectGraphError)?.code == .constraintMerge }
            } else {
                #expect(try ctx.execute(request).status)
            }
        }
        let names = try stack.sql("SELECT ZNAME FROM ZITEM ORDER BY ZID").map { $0[0].string }
        #expect(names == (policy.type == .error ? ["item 1"] : ["item 1", "five"]))
    }

    // Semantics §6 / bad input: an unknown entity, an unknown key and a value of the wrong type are errors
    // naming the entity and key, and nothing is written.
    @Test func batchRequestsAgainstTheWrongEntityOrKeyAreErrors_6() throws {
        let stack = try TestStack()
        try stack.seed(2)
        let ctx = stack.context()
        try ctx.performAndWait {
            #expect { try ctx.execute(BatchInsertRequest(entityName: "Nope", objects: [["id": 1]])) } throws: {
                ($0 as? ObjectGraphError)?.code == .invalidFetchRequest && ($0 as? ObjectGraphError)?.entityName == "Nope"
            }
            #expect { try ctx.execute(BatchInsertRequest(entityName: "Item", objects: [["id": 9], ["colour": "red"]])) } throws: {
                ($0 as? ObjectGraphError)?.propertyName == "colour" && ($0 as? ObjectGraphError)?.entityName == "Item"
            }
            #expect { try ctx.execute(BatchInsertRequest(entityName: "Item", objects: [["id": 9, "price": "cheap"]])) } throws: {
                ($0 as? ObjectGraphError)?.propertyName == "price"
            }
            #expect { try ctx.execute(BatchInsertRequest(entityName: "Item", objects: [["id": 9, "tag": NSNull()]])) } throws: {
                ($0 as? ObjectGraphError)?.propertyName == "tag"  // relationships are not set by batch inserts
            }
            #expect { try ctx.execute(BatchUpdateRequest(entityName: "Nope", propertiesToUpdate: ["price": 1])) } throws: {
                ($0 as? ObjectGraphError)?.entityName == "Nope"
            }
            #expect { try ctx.execute(BatchUpdateRequest(entityName: "Item", propertiesToUpdate: ["colour": 1])) } throws: {
                ($0 as? ObjectGraphError)?.propertyName == "colour"
            }
            #expect { try ctx.execute(BatchUpdateRequest(entityName: "Item", propertiesToUpdate: ["added": "yesterday"])) } throws: {
                ($0 as? ObjectGraphError)?.propertyName == "added"
            }
            #expect { try ctx.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Nope"))) } throws: {
                ($0 as? ObjectGraphError)?.entityName == "Nope"
            }
            let tag = Tag(context: ctx)
            try ctx.obtainPermanentIDs(for: [tag])
            let items = try fetchItems(ctx)
            #expect { try ctx.execute(BatchDeleteRequest(objectIDs: [items[0].objectID, tag.objectID])) } throws: {
                ($0 as? ObjectGraphError)?.code == .invalidFetchRequest  // IDs of one entity only
            }
            ctx.rollback()
        }
        #expect(try stack.sql("SELECT count(*) FROM ZITEM").first?[0].int64 == 2)
    }

    // Semantics §6: a batch update changes rows in SQL and bumps Z_OPT; registered objects keep their values
    // (no row cache update), so a later save of one of them is an optimistic-locking conflict.
    @Test func batchUpdateBumpsVersionAndLeavesObjectsStale_6() throws {
        let stack = try TestStack()
        try stack.seed(4)
        let holder = stack.context()
        let held: Item = try holder.performAndWait {
            let item = try #require(try fetchItems(holder, .compare("id", .equalTo, 4)).first)
            #expect(item.price == 40)
            return item
        }
        let ctx = stack.context()
        let saves = NotificationRecorder(ManagedObjectContext.didSaveNotification, object: ctx)
        try ctx.performAndWait {
            var request = BatchUpdateRequest(entityName: "Item", predicate: .compare("price", .greaterThan, 20), propertiesToUpdate: ["flag": true, "name": "batched"])
            request.resultType = .objectIDs
            let result = try ctx.execute(request)
            #expect(result.count == 2)
            #expect(Set(result.objectIDs?.compactMap(\.primaryKey) ?? []).count == 2)
            #expect(ctx.registeredObjectCount == 0)
            var counting = BatchUpdateRequest(entityName: "Item", predicate: .compare("id", .equalTo, 999), propertiesToUpdate: ["flag": true])
            counting.resultType = .count
            #expect(try ctx.execute(counting).count == 0)
        }
        #expect(saves.notes.isEmpty)
        #expect(try stack.sql("SELECT ZID, ZNAME, ZFLAG, Z_OPT FROM ZITEM ORDER BY ZID") == [
            [.integer(1), .text("item 1"), .integer(0), .integer(1)],
            [.integer(2), .text("item 2"), .integer(0), .integer(1)],
            [.integer(3), .text("batched"), .integer(1), .integer(2)],
            [.integer(4), .text("batched"), .integer(1), .integer(2)],
        ])
        holder.performAndWait {
            #expect(held.name == "item 4")  // stale until refreshed past the row cache
            held.price = 41
            #expect { try holder.save() } throws: { ($0 as? ObjectGraphError)?.code == .merge }
        }
    }

    // Semantics §6 / §3.4: the batch's IDs merged with mergeChanges(fromRemoteContextSave:into:) — deletes
    // delete registered objects; updates refresh them (with stalenessInterval 0 past the row cache).
    @Test func batchResultsMergeIntoContexts_3_4() throws {
        let stack = try TestStack()
        try stack.seed(3)
        let view = stack.context()
        view.stalenessInterval = 0
        let items: [Item] = try view.performAndWait { try fetchItems(view).map { _ = $0.price; return $0 } }
        let worker = stack.context()
        let (updated, deleted): ([ManagedObjectID], [ManagedObjectID]) = try worker.performAndWait {
            var update = BatchUpdateRequest(entityName: "Item", predicate: .compare("id", .equalTo, 1), propertiesToUpdate: ["price": 15])
            update.resultType = .objectIDs
            var delete = BatchDeleteRequest(fetchRequest: ctxItemRequest(.compare("id", .equalTo, 2)))
            delete.resultType = .objectIDs
            return (try #require(try worker.execute(update).objectIDs), try #require(try worker.execute(delete).objectIDs))
        }
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: ["updated": updated, "deleted": deleted], into: [view])
        view.performAndWait {
            #expect(items[0].price == 15)
            #expect(items[1].isDeleted)
            #expect(!items[2].isDeleted)
        }
    }

    // Semantics §6: batch delete applies delete rules in SQL — nullify clears the inverse (bumping its
    // version), many-to-many join rows go, cascade deletes destinations.
    @Test func batchDeleteAppliesNullifyAndCascadeInSQL_6() throws {
        for rule in [DeleteRule.nullify, .cascade] {
            let stack = try TestStack(model: try makeModel(tagItemsDeleteRule: rule))
            try ctxSeedTagged(stack, tagNames: ["red", "blue"], itemsPerTag: 2)
            let ctx = stack.context()
            try ctx.performAndWait {
                let label = Label(context: ctx)
                label.title = "l"
                label.items = Set(try fetchItems(ctx))
                try ctx.save()
                #expect(try stack.sql("SELECT count(*) FROM Z_1LABELS").first?[0].int64 == 4)
                var request = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Tag", predicate: .compare("name", .equalTo, "red")))
                request.resultType = .objectIDs
                let result = try ctx.execute(request)
                // Cascade: the tag and its two items.
                #expect(result.count == (rule == .cascade ? 3 : 1))
            }
            let items = try stack.sql("SELECT ZID, ZTAG, Z_OPT FROM ZITEM ORDER BY ZID")
            switch rule {
            case .cascade:
                #expect(items.map { $0[0].int64 } == [3, 4])
                #expect(try stack.sql("SELECT count(*) FROM Z_1LABELS").first?[0].int64 == 2)
            default:
                #expect(items.map { $0[0].int64 } == [1, 2, 3, 4])
                #expect(items.map { $0[1] == .null } == [true, true, false, false])
                #expect(items.map { $0[2].int64 } == [3, 3, 2, 2])  // seeded 1, labelled 2, nullified 3
            }
            #expect(try stack.sql("SELECT ZNAME FROM ZTAG").map { $0[0].string } == ["blue"])
        }
    }

    // Semantics §6: Deny is incompatible with a batch delete: a tag with items fails with 1600 and nothing is
    // deleted; a tag without items is deleted.
    @Test func batchDeleteWithDenyIsAnError_6() throws {
        let stack = try TestStack(model: try makeModel(tagItemsDeleteRule: .deny))
        try ctxSeedTagged(stack, tagNames: ["red"], itemsPerTag: 2)
        let ctx = stack.context()
        try ctx.performAndWait {
            let empty = Tag(context: ctx)
            empty.name = "empty"
            try ctx.save()
            #expect { try ctx.execute(BatchDeleteRequest(fetchRequest: FetchRequest(entityName: "Tag"))) } throws: {
                ($0 as? ObjectGraphError)?.code == .relationshipDeniedDelete && ($0 as? ObjectGraphError)?.propertyName == "items"
            }
            #expect(try stack.sql("SELECT count(*) FROM ZTAG").first?[0].int64 == 2)
            var request = BatchDeleteRequest(objectIDs: [empty.objectID])
            request.resultType = .count
            #expect(try ctx.execute(request).count == 1)
        }
        #expect(try stack.sql("SELECT ZNAME FROM ZTAG").map { $0[0].string } == ["red"])
        #expect(try stack.sql("SELECT count(*) FROM ZITEM").first?[0].int64 == 2)
    }

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
}
