import Foundation
import Testing
@testable import ObjectGraph

/// Fetching (semantics §4): predicates, sorting, limits, result types, pending changes.
@Suite struct FetchTests {

    // MARK: - Predicates (semantics §4)

    // Semantics §4: compare / and / or / not / in.
    @Test func predicatesCompareAndOrNotIn_4() throws {
        let stack = try TestStack()
        try stack.seed(6)
        let ctx = stack.context()
        try ctx.performAndWait { () throws in
            #expect(ctxIDs(try fetchItems(ctx, .compare("price", .greaterThan, 35))) == [4, 5, 6])
            #expect(ctxIDs(try fetchItems(ctx, .compare("price", .lessThanOrEqualTo, 20))) == [1, 2])
            #expect(ctxIDs(try fetchItems(ctx, .compare("name", .equalTo, "item 3"))) == [3])
            #expect(ctxIDs(try fetchItems(ctx, .and([.compare("price", .greaterThan, 15), .compare("price", .lessThan, 45)]))) == [2, 3, 4])
            #expect(ctxIDs(try fetchItems(ctx, .or([.compare("id", .equalTo, 1), .compare("id", .equalTo, 6)]))) == [1, 6])
            #expect(ctxIDs(try fetchItems(ctx, .not(.compare("price", .greaterThan, 20)))) == [1, 2])
            #expect(ctxIDs(try fetchItems(ctx, .in("id", [1, 3, 5]))) == [1, 3, 5])
            #expect(ctxIDs(try fetchItems(ctx, .not(.in("id", [1, 3, 5])))) == [2, 4, 6])
            #expect(ctxIDs(try fetchItems(ctx, .compare("name", .beginsWith, "ITEM 1", options: .caseInsensitive))) == [1])
            #expect(try fetchItems(ctx, .false).isEmpty)
            #expect(try fetchItems(ctx, .true).count == 6)
        }
    }

    // Semantics §4: key paths through a to-one relationship, in predicates and sort descriptors.
    @Test func keyPathThroughToOne_4() throws {
        let stack = try TestStack()
        try ctxSeedTagged(stack, tagNames: ["red", "blue"], itemsPerTag: 3)
        let ctx = stack.context()
        try ctx.performAndWait {
            #expect(ctxIDs(try fetchItems(ctx, .compare("tag.name", .equalTo, "blue"))) == [4, 5, 6])
            #expect(ctxIDs(try fetchItems(ctx, .and([.compare("tag.name", .equalTo, "red"), .compare("price", .greaterThan, 10)]))) == [2, 3])
            let sorted = try fetchItems(ctx, sort: [ObjectSortDescriptor("tag.name"), ObjectSortDescriptor("id", ascending: false)])
            #expect(ctxIDs(sorted) == [6, 5, 4, 3, 2, 1])
            // Pending change: moving item 1 to blue is seen by the in-memory evaluation.
            let blue = try #require(sorted.first?.tag)
            sorted[5].tag = blue
            #expect(ctxIDs(try fetchItems(ctx, .compare("tag.name", .equalTo, "blue"))) == [1, 4, 5, 6])
        }
    }

    // MARK: - Sorting, limit, offset (semantics §4)

    // Semantics §4: ascending/descending sort; nil sorts first ascending (as SQLite), last descending — in the
    // store and in the in-memory overlay alike.
    @Test func sortDescriptorsAndNilOrdering_4() throws {
        let stack = try TestStack()
        try stack.seed(4)
        let setup = stack.context()
        try setup.performAndWait {
            try fetchItems(setup)[1].name = nil
            try setup.save()
        }
        let ctx = stack.context()
        try ctx.performAndWait {
            #expect(ctxIDs(try fetchItems(ctx, sort: [ObjectSortDescriptor("price", ascending: false)])) == [4, 3, 2, 1])
            #expect(ctxIDs(try fetchItems(ctx, sort: [ObjectSortDescriptor("name")])) == [2, 1, 3, 4])
            #expect(ctxIDs(try fetchItems(ctx, sort: [ObjectSortDescriptor("name", ascending: false)])) == [4, 3, 1, 2])
            // In-memory path (pending changes of the entity).
            try fetchItems(ctx)[2].name = nil
            #expect(ctxIDs(try fetchItems(ctx, sort: [ObjectSortDescriptor("name"), ObjectSortDescriptor("id")])) == [2, 3, 1, 4])
            #expect(ctxIDs(try fetchItems(ctx, sort: [ObjectSortDescriptor("name", ascending: false), ObjectSortDescriptor("id")])) == [4, 1, 2, 3])
        }
    }

    // Semantics §4: fetchLimit and fetchOffset.
    @Test func fetchLimitAndOffset_4() throws {
        let stack = try TestStack()
        try stack.seed(10)
        let ctx = stack.context()
        try ctx.performAndWait { () throws in
            var request = ctxItemRequest()
            request.fetchLimit = 3
            #expect(ctxIDs(try ctx.fetch(request, as: Item.self)) == [1, 2, 3])
            request.fetchOffset = 4
            #expect(ctxIDs(try ctx.fetch(request, as: Item.self)) == [5, 6, 7])
            request.fetchOffset = 8
            #expect(ctxIDs(try ctx.fetch(request, as: Item.self)) == [9, 10])
            request.fetchLimit = 0
            request.fetchOffset = 7
            request.sortDescriptors = [ObjectSortDescriptor("price", ascending: false)]
            #expect(ctxIDs(try ctx.fetch(request, as: Item.self)) == [3, 2, 1])
        }
    }

    // Semantics §4 (includesPendingChanges): with a limit the unsaved changes are laid over
    // the store's window and the limit applies again; with an offset, Core Data's store skips rows but a pending
    // insert that sorts first still shows (the whole-result window, [2, 3], is the `.wholeResult` option).
    @Test("Limit and offset with pending changes, Core Data's window and ours (§4)")
    func fetchLimitWithPendingChanges_4() throws {
        let stack = try TestStack()
        try stack.seed(5)
        let ctx = stack.context()
        try ctx.performAndWait {
            let items = try fetchItems(ctx)
            ctx.delete(items[0])
            let cheap = Item(context: ctx)
            cheap.id = 100
            cheap.price = 1
            var request = ctxItemRequest(sort: [ObjectSortDescriptor("price")])
            request.fetchLimit = 2
            #expect(ctxIDs(try ctx.fetch(request, as: Item.self)) == [100, 2])
            request.fetchOffset = 1
            #expect(ctxIDs(try ctx.fetch(request, as: Item.self)) == [100, 2])
            request.pendingChangesOverlay = .wholeResult
            #expect(ctxIDs(try ctx.fetch(request, as: Item.self)) == [2, 3])
        }
    }

    // Second-hand, Docs/core-data-rules.md: a managed-object fetch with offset and limit
    // applies the window in the store (rows 3, 4, 5 by price), overlays pending changes (4 deleted, a cheap insert
    // added), sorts, and applies the limit again: a pending delete is not backfilled from beyond the window.
    @Test("A fetch with offset and limit windows in the store, overlays pending changes, then limits again (§4)")
    func fetchWindowThenOverlayThenLimit_4() throws {
        let stack = try TestStack()
        try stack.seed(10)
        let ctx = stack.context()
        try ctx.performAndWait {
            let items = try fetchItems(ctx)
            ctx.delete(items[3])
            let cheap = Item(context: ctx)
            cheap.id = 100
            cheap.price = 1
            var request = ctxItemRequest(sort: [ObjectSortDescriptor("price")])
            request.fetchOffset = 2
            request.fetchLimit = 3
            #expect(ctxIDs(try ctx.fetch(request, as: Item.self)) == [100, 3, 5])
            request.fetchLimit = 2
            #expect(ctxIDs(try ctx.fetch(request, as: Item.self)) == [100, 3])
            // Ours: the whole result overlaid and sorted (100, 1, 2, 3, 5, …), then the window.
            request.fetchLimit = 3
            request.pendingChangesOverlay = .wholeResult
            #expect(ctxIDs(try ctx.fetch(request, as: Item.self)) == [2, 3, 5])
            // The count follows the fetch.
            request.pendingChangesOverlay = .coreData
            #expect(try ctx.count(for: request) == 3)
        }
    }

    // Second-hand, Docs/core-data-rules.md: an object-ID fetch that includes pending changes
    // returns the store's rows in the store's order (a pending delete dropped, a pending update left where the
    // store sorted it) and appends the unsaved inserts' IDs after them without sorting, in insertion order.
    @Test("An object-ID fetch appends unsaved inserts after the store's rows, unsorted (§4)")
    func objectIDFetchAppendsInsertsUnsorted_4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let items = try fetchItems(ctx)
            ctx.delete(items[1])
            items[2].price = 0
            let first = Item(context: ctx), second = Item(context: ctx)
            (first.id, first.price, second.id, second.price) = (200, 5, 100, 1)
            var request = ctxItemRequest(sort: [ObjectSortDescriptor("price")])
            #expect(try ctx.fetchObjectIDs(request) == [ids[0], ids[2], first.objectID, second.objectID])
            request.fetchLimit = 3
            #expect(try ctx.fetchObjectIDs(request) == [ids[0], ids[2], first.objectID])
            // Ours: sorted like the objects.
            request.fetchLimit = 0
            request.pendingChangesOverlay = .wholeResult
            #expect(try ctx.fetchObjectIDs(request) == [ids[2], second.objectID, first.objectID, ids[0]])
            // A managed-object fetch sorts the inserts in either way.
            request.pendingChangesOverlay = .coreData
            #expect(try ctx.fetch(request).map(\.objectID) == [ids[2], second.objectID, first.objectID, ids[0]])
        }
    }

    // MARK: - Result types (semantics §4)

    // Semantics §4: fetchObjectIDs returns IDs and registers nothing.
    @Test func fetchObjectIDs_4() throws {
        let stack = try TestStack()
        let ids = try stack.seed(5)
        let ctx = stack.context()
        try ctx.performAndWait {
            let fetched = try ctx.fetchObjectIDs(ctxItemRequest(.compare("price", .greaterThan, 20)))
            #expect(fetched == Array(ids[2...]))
            #expect(ctx.registeredObjectCount == 0)
        }
    }

    // Semantics §4: fetchDictionaries returns propertiesToFetch only, registering nothing.
    @Test func fetchDictionaries_4() throws {
        let stack = try TestStack()
        try stack.seed(3)
        let ctx = stack.context()
        try ctx.performAndWait {
            var request = ctxItemRequest()
            request.propertiesToFetch = ["id", "name"]
            let rows = try ctx.fetchDictionaries(request)
            #expect(rows.count == 3)
            #expect(rows.allSatisfy { Set($0.keys) == ["id", "name"] })
            #expect(rows.map { $0["id"] as? Int64 } == [1, 2, 3])
            #expect(rows.map { $0["name"] as? String } == ["item 1", "item 2", "item 3"])
            #expect(ctx.registeredObjectCount == 0)
            request.propertiesToFetch = ["price"]
            request.predicate = .compare("id", .equalTo, 2)
            let one = try ctx.fetchDictionaries(request)
            #expect(one.count == 1)
            #expect(one.first?["price"] as? Double == 20)
        }
    }

    // Semantics §4: count(for:) counts matches, pending changes included.
    @Test func countForRequest_4() throws {
        let stack = try TestStack()
        try stack.seed(5)
        let ctx = stack.context()
        let selectsBefore = ctxSelects(stack.coordinator)
        try ctx.performAndWait { () throws in
            #expect(try ctx.count(for: ctxItemRequest()) == 5)
            #expect(try ctx.count(for: ctxItemRequest(.compare("price", .greaterThanOrEqualTo, 30))) == 3)
            #expect(ctx.registeredObjectCount == 0)
        }
        #expect(ctxSelects(stack.coordinator) - selectsBefore == 2)
        try ctx.performAndWait { () throws in
            let extra = Item(context: ctx)
            extra.id = 100
            extra.price = 1000
            #expect(try ctx.count(for: ctxItemRequest()) == 6)
            #expect(try ctx.count(for: ctxItemRequest(.compare("price", .greaterThanOrEqualTo, 30))) == 4)
            var request = ctxItemRequest()
            request.includesPendingChanges = false
            #expect(try ctx.count(for: request) == 5)
        }
    }

    // MARK: - includesPendingChanges (semantics §4)

    // Semantics §4: unsaved inserts included, deleted objects excluded, edited objects re-evaluated.
    @Test func includesPendingChanges_4() throws {
        let stack = try TestStack()
        try stack.seed(5)
        let ctx = stack.context()
        try ctx.performAndWait {
            let items = try fetchItems(ctx)
            items[0].price = 50  // 10 → 50: now matches
            items[1].price = 5  // 20 → 5: leaves the predicate
            ctx.delete(items[2])  // 30: matches in the store, deleted here
            let inserted = Item(context: ctx)
            inserted.id = 100
            inserted.price = 1000
            let cheapInsert = Item(context: ctx)
            cheapInsert.id = 101
            cheapInsert.price = 1

            let predicate = ObjectPredicate.compare("price", .greaterThanOrEqualTo, 15)
            let result = try ctx.fetch(ctxItemRequest(predicate), as: Item.self)
            #expect(ctxIDs(result) == [1, 4, 5, 100])
            #expect(result[0] === items[0])
            #expect(result[3] === inserted)
            #expect(try ctx.count(for: ctxItemRequest(predicate)) == 4)

            var storeOnly = ctxItemRequest(predicate)
            storeOnly.includesPendingChanges = false
            let stored = try ctx.fetch(storeOnly, as: Item.self)
            #expect(ctxIDs(stored) == [2, 3, 4, 5])
            #expect(!stored.contains { $0 === inserted })
            #expect(stored[0] === items[1])  // the registered instance, unchanged
            #expect(stored[0].price == 5)
        }
    }

    // MARK: - Faults and materialized objects (semantics §4)

    // Semantics §4: returnsObjectsAsFaults (default true) returns faults; false returns materialized objects.
    @Test func returnsObjectsAsFaults_4() throws {
        let stack = try TestStack()
        try stack.seed(5)
        let ctx = stack.context()
        try ctx.performAndWait {
            let faults = try ctx.fetch(ctxItemRequest(), as: Item.self)
            #expect(faults.allSatisfy { $0.isFault })
        }
        let other = stack.context()
        try other.performAndWait {
            var request = ctxItemRequest()
            request.returnsObjectsAsFaults = false
            let before = other.counters.faultsFired
            let items = try other.fetch(request, as: Item.self)
            #expect(items.allSatisfy { !$0.isFault })
            #expect(items.allSatisfy { $0.awakeFromFetchCalls == 1 })
            #expect(ctxIDs(items) == [1, 2, 3, 4, 5])
            #expect(other.counters.faultsFired == before)
        }
    }

    // Semantics §4: a fetch never changes realized objects or objects with pending changes.
    @Test func fetchNeverChangesObjectsInUse_4() throws {
        let stack = try TestStack()
        try stack.seed(3)
        let ctx = stack.context()
        let (dirty, clean): (Item, Item) = try ctx.performAndWait {
            let items = try fetchItems(ctx)
            items[0].price = 77
            #expect(items[1].price == 20)  // realized, clean
            return (items[0], items[1])
        }
        // Another context on the same coordinator writes both rows (the row cache gets the new values).
        let writer = stack.context()
        try writer.performAndWait {
            let items = try fetchItems(writer)
            items[0].price = 555
            items[1].price = 666
            try writer.save()
        }
        try ctx.performAndWait {
            let again = try fetchItems(ctx)
            #expect(again[0] === dirty)
            #expect(again[1] === clean)
            #expect(dirty.price == 77)
            #expect(dirty.isUpdated)
            #expect(clean.price == 20)
            #expect(!clean.hasChanges)
            // The dirty object's committed snapshot is untouched too.
            #expect(dirty.committedValues(forKeys: ["price"])["price"] as? Double == 10)
        }
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

    // The store translates a predicate once to decide and run (`fetchEntriesIfEvaluable`, `countIfEvaluable`): nil exactly
    // when it cannot evaluate the fetch, else the rows `fetch` gives; the coordinator then filters in memory, with
    // the same result.
    @Test func storeDecidesAndRunsAFetchInOneStep() throws {
        let stack = try TestStack()
        try stack.seed(4)
        let item = try #require(stack.model.entity(named: "Item"))
        var untranslated = 0
        for format in ["id IN {2, 4}", "ANY tag.name == 'x' OR id < 3", "labels.@count == 0 AND id < 3", "name BEGINSWITH 'item'"] {
            let p = try ObjectPredicate(format: format)
            let fetch = StoreFetch(entity: item, predicate: p, sortDescriptors: [], limit: 0, offset: 0, idsOnly: false)
            let (evaluable, oneStep, plain) = try stack.coordinator.withStore { store in
                (store.canEvaluate(fetch), try store.fetchEntriesIfEvaluable(fetch), store.canEvaluate(fetch) ? try store.fetch(fetch) : nil)
            }
            #expect((oneStep == nil) == !evaluable, "\(format)")
            #expect(oneStep?.map { $0.id.primaryKey! } == plain?.map(\.key), "\(format)")
            if !evaluable { untranslated += 1 }
            let ctx = stack.context()
            let viaContext = try ctx.performAndWait { Set(try fetchItems(ctx, p).map(\.id)) }
            let inMemory = try ctx.performAndWait { Set(try fetchItems(ctx).filter { try p.evaluate(with: $0) }.map(\.id)) }
            #expect(viaContext == inMemory, "\(format)")
            // The count takes the same step: counted by SQL when translatable, else by the coordinator.
            #expect(try ctx.performAndWait { try ctx.count(for: FetchRequest(entityName: "Item", predicate: p)) } == inMemory.count, "\(format)")
        }
        #expect(untranslated > 0)  // the fallback was exercised
    }

    // Semantics §2.3, §4: the store makes a fetch's entries as it reads the rows; they are the store's rows with
    // this store's object IDs, a row-cache reference marked on each entry with a row, nil exactly when the store
    // cannot evaluate the fetch, for the SQLite store (its own loop) and the in-memory one (the default mapping).
    @Test func storeEntriesAreItsRowsWithIDs_2_3_4() throws {
        for type in [PersistentStoreType.sqlite, .inMemory] {
            let stack = try TestStack(type: type)
            try stack.seed(5)
            let item = try #require(stack.model.entity(named: "Item"))
            for (format, idsOnly) in [("id >= 2", false), ("id IN {1, 4}", true), ("ANY tag.name == 'x' OR id < 3", false)] {
                let fetch = StoreFetch(entity: item, predicate: try ObjectPredicate(format: format), sortDescriptors: [ObjectSortDescriptor("id")],
                                       limit: 0, offset: 0, idsOnly: idsOnly)
                let (pairs, entries, number) = try stack.coordinator.withStore { store in
                    (store.canEvaluate(fetch) ? try store.fetch(fetch) : nil, try store.fetchEntriesIfEvaluable(fetch), store.storeNumber)
                }
                #expect((pairs == nil) == (entries == nil), "\(type) \(format)")
                guard let pairs, let entries else { continue }
                #expect(entries.map(\.id) == pairs.map { ManagedObjectID(entity: item, primaryKey: $0.key, storeNumber: number) }, "\(type) \(format)")
                #expect(entries.map(\.row) == pairs.map(\.row), "\(type) \(format)")
                #expect(entries.allSatisfy { $0.retained == ($0.row != nil) && $0.retained == !idsOnly }, "\(type) \(format)")
            }
        }
    }
}

/// Counters: the cost of faulting, batching and prefetching in SQL statements (semantics §2.3, §4).
@Suite struct FetchCounterTests {

    // Semantics §2.3 / §4: fetching fills the row cache; firing 1,000 faults afterwards runs no SQL.
    @Test func firingFetchedFaultsRunsOneSelect_4() throws {
        let stack = try TestStack()
        try stack.seed(1_000)
        let ctx = stack.context()
        let selects = ctxSelects(stack.coordinator)
        let hits = stack.coordinator.counters.rowCacheHits
        try ctx.performAndWait {
            let fired = ctx.counters.faultsFired
            let items = try ctx.fetch(ctxItemRequest(), as: Item.self)
            #expect(items.count == 1_000)
            let faults = items.filter { $0.isFault }.count
            #expect(faults == 1_000)
            var total = 0.0
            for item in items { total += item.price }
            #expect(total == 10 * Double(1_000 * 1_001 / 2))
            #expect(ctx.counters.faultsFired - fired == 1_000)
        }
        #expect(ctxSelects(stack.coordinator) - selects == 1)
        #expect(stack.coordinator.counters.rowCacheHits - hits == 1_000)
    }

    // Semantics §2.3 / §4 / §2.2: the same holds for a child context — its fetch goes through the parent to the
    // coordinator, fills the row cache, and firing the faults afterwards runs no SQL.
    @Test func childFetchedFaultsFireFromRowCache_4() throws {
        let stack = try TestStack()
        try stack.seed(100)
        let parent = stack.context()
        let child = stack.child(of: parent)
        let selects = ctxSelects(stack.coordinator)
        try child.performAndWait {
            let items = try child.fetch(ctxItemRequest(), as: Item.self)
            let faults = items.filter { $0.isFault }.count
            #expect(faults == 100)
            #expect(ctxSelects(stack.coordinator) - selects == 1)
            var total = 0.0
            for item in items { total += item.price }
            #expect(total == 10 * Double(100 * 101 / 2))
        }
        #expect(ctxSelects(stack.coordinator) - selects == 1)
    }

    // Semantics §4: fetchBatchSize = 100 over 1,000 objects: 1 SELECT for the IDs, then 1 per batch touched.
    @Test func fetchBatchSizeLoadsPerBatch_4() throws {
        let stack = try TestStack()
        try stack.seed(1_000)
        let ctx = stack.context()
        let selects = ctxSelects(stack.coordinator)
        try ctx.performAndWait {
            var request = ctxItemRequest()
            request.fetchBatchSize = 100
            let items = try ctx.fetch(request, as: Item.self)
            #expect(items.count == 1_000)
            #expect(ctxSelects(stack.coordinator) - selects == 1)
            _ = items[0].price
            #expect(ctxSelects(stack.coordinator) - selects == 2)
            _ = items[99].price  // same batch
            #expect(ctxSelects(stack.coordinator) - selects == 2)
            var ids: [Int64] = []
            for item in items { ids.append(item.id) }
            #expect(ids == Array(1...1_000))
        }
        #expect(ctxSelects(stack.coordinator) - selects == 1 + 10)
    }

    // Semantics §4: includesPropertyValues = false fetches only IDs; each fire is its own SELECT.
    @Test func includesPropertyValuesFalseFiresOneSelectEach_4() throws {
        let stack = try TestStack()
        try stack.seed(50)
        let ctx = stack.context()
        let selects = ctxSelects(stack.coordinator)
        let misses = stack.coordinator.counters.rowCacheMisses
        try ctx.performAndWait {
            var request = ctxItemRequest()
            request.includesPropertyValues = false
            let items = try ctx.fetch(request, as: Item.self)
            #expect(ctxSelects(stack.coordinator) - selects == 1)
            for item in items { _ = item.price }
            #expect(ctx.counters.faultsFired == 50)
        }
        #expect(ctxSelects(stack.coordinator) - selects == 1 + 50)
        #expect(stack.coordinator.counters.rowCacheMisses - misses == 50)
    }

    // Semantics §4: relationshipKeyPathsForPrefetching ["tag"] loads the tags with one extra query instead
    // of one fault per tag.
    @Test func prefetchingToOneAvoidsPerObjectSQL_4() throws {
        let stack = try TestStack()
        try ctxSeedTagged(stack, tagNames: ["a", "b", "c", "d", "e"], itemsPerTag: 20)
        let ctx = stack.context()
        let selects = ctxSelects(stack.coordinator)
        try ctx.performAndWait {
            var request = ctxItemRequest()
            request.relationshipKeyPathsForPrefetching = ["tag"]
            let items = try ctx.fetch(request, as: Item.self)
            #expect(ctxSelects(stack.coordinator) - selects == 2)
            let names = items.map { $0.tag?.name ?? "" }
            #expect(names.count == 100)
            #expect(Set(names) == ["a", "b", "c", "d", "e"])
        }
        #expect(ctxSelects(stack.coordinator) - selects == 2)
    }

    // Semantics §3.2 / §4 (inferred): a realized object holds its related objects strongly — refresh(…, false)
    // "releases strong references to related objects" and refreshAllObjects "breaks retain cycles". So after
    // item.tag has been loaded once, reading it again through the same item (or another item of the same tag)
    // finds the registered tag and runs no SQL. Without prefetching: 1 fetch + 1 fault per distinct tag.
    @Test func toOneDestinationIsHeldBySource_4() throws {
        let stack = try TestStack()
        try ctxSeedTagged(stack, tagNames: ["a", "b", "c", "d", "e"], itemsPerTag: 20)
        let ctx = stack.context()
        let selects = ctxSelects(stack.coordinator)
        try ctx.performAndWait {
            let items = try ctx.fetch(ctxItemRequest(), as: Item.self)
            _ = items[0].tag?.name
            #expect(ctxSelects(stack.coordinator) - selects == 2)
            _ = items[0].tag?.name
            #expect(ctxSelects(stack.coordinator) - selects == 2)
            #expect(Set(items.map { $0.tag?.name ?? "" }) == ["a", "b", "c", "d", "e"])
        }
        #expect(ctxSelects(stack.coordinator) - selects == 1 + 5)
    }

    // Semantics §4: prefetching the to-many "items" loads every tag's items with one extra query: no
    // relationship fault per tag and no fault per item afterwards (2 SELECTs in all).
    @Test func prefetchingToManyAvoidsPerObjectSQL_4() throws {
        let stack = try TestStack()
        try ctxSeedTagged(stack, tagNames: ["a", "b", "c", "d"], itemsPerTag: 5)
        let ctx = stack.context()
        let selects = ctxSelects(stack.coordinator)
        try ctx.performAndWait {
            var request = FetchRequest(entityName: "Tag", sortDescriptors: [ObjectSortDescriptor("name")])
            request.relationshipKeyPathsForPrefetching = ["items"]
            let tags = try ctx.fetch(request, as: Tag.self)
            let relationshipFaults = ctx.counters.relationshipFaultsFired
            #expect(tags.map { $0.items.count } == [5, 5, 5, 5])
            #expect(tags.map { tag in tag.items.map { $0.price }.reduce(0, +) } == [150, 400, 650, 900])
            #expect(ctx.counters.relationshipFaultsFired == relationshipFaults)
        }
        #expect(ctxSelects(stack.coordinator) - selects == 2)
    }
}

/// Rule 11: `returnsObjectsAsFaults = false` (semantics §4).
@Suite struct MaterializingFetchTests {
    // Semantics §4 returnsObjectsAsFaults: a fetch with returnsObjectsAsFaults = false returns
    // its instances materialized, including ones already registered as faults, from the rows it read (no SQL per
    // object); objects already loaded or changed are returned as they are.
    @Test("returnsObjectsAsFaults = false materializes registered faults too (§4)")
    func materializesRegisteredFaults_rule11() throws {
        let stack = try TestStack()
        let ids = try stack.seed(3)
        let ctx = stack.context()
        try ctx.performAndWait {
            let fault = ctx.object(with: ids[0]) as! Item
            #expect(fault.isFault)
            var request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])
            request.returnsObjectsAsFaults = false
            let selects = stack.coordinator.counters.statements.select
            let fired = ctx.counters.faultsFired
            let items = try ctx.fetch(request, as: Item.self)
            #expect(stack.coordinator.counters.statements.select - selects == 1)
            #expect(items.count == 3)
            #expect(items[0] === fault)
            #expect(items.allSatisfy { !$0.isFault })
            #expect(fault.awakeFromFetchCalls == 1)
            #expect(ctx.counters.faultsFired == fired)  // filled by the fetch, not fired one by one
            #expect(items.map(\.name) == ["item 1", "item 2", "item 3"])
            #expect(stack.coordinator.counters.statements.select - selects == 1)
            // Objects already loaded, or with changes, come back as they are.
            items[1].price = 1
            ctx.refresh(items[2], mergeChanges: false)
            let again = try ctx.fetch(request, as: Item.self)
            #expect(again[1].price == 1)  // a fetch never changes an object with changes
            #expect(again.allSatisfy { !$0.isFault })
            #expect(fault.awakeFromFetchCalls == 1)
        }
    }
}
