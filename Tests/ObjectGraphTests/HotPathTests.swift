import Foundation
import Testing
@testable import ObjectGraph

/// Behaviour kept by the hot-path changes of issue 7 (Benchmarks/README.md): statements reused within a save,
/// inverse to-many maintenance in place, and a fetched results controller that evaluates merged faults in one
/// query. Deterministic counters only.
@Suite struct HotPathTests {
    // Semantics §2.1: one save with inserts of two entities and updates changing different columns writes every
    // row as asked (one statement per entity and set of changed columns, reused across rows).
    @Test func oneSaveMixesInsertAndUpdateShapes_2_1() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            for i in 1...4 {
                let item = Item(context: ctx)
                item.id = Int64(i)
                item.name = "n\(i)"
            }
            let tag = Tag(context: ctx)
            tag.name = "t"
            try ctx.save()
            let items = try ctx.fetch(FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])).compactMap { $0 as? Item }
            items[0].price = 1          // price only
            items[1].name = "renamed"   // name only
            items[2].price = 3          // price only, same shape as items[0]
            items[3].name = "four"
            items[3].price = 4          // both
            let fifth = Item(context: ctx)
            fifth.id = 5
            try ctx.save()
        }
        let check = stack.context()
        try check.performAndWait {
            let rows = try check.fetch(FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])).compactMap { $0 as? Item }
            #expect(rows.map(\.id) == [1, 2, 3, 4, 5])
            #expect(rows.map(\.price) == [1, 0, 3, 4, 0])
            #expect(rows.map(\.name) == ["n1", "renamed", "n3", "four", nil])
        }
    }

    // Semantics §0 (inverse maintenance): setting many to-ones keeps the inverse to-many exact, marks its owner
    // updated, and removing one takes it out again.
    @Test func inverseToManyKeptExact_0() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let tag = Tag(context: ctx)
            tag.name = "t"
            try ctx.save()
            var items: [Item] = []
            for i in 1...50 {
                let item = Item(context: ctx)
                item.id = Int64(i)
                item.tag = tag
                items.append(item)
            }
            #expect(tag.items.count == 50)
            #expect(ctx.updatedObjects.contains(tag))
            items[0].tag = nil
            #expect(tag.items.count == 49)
            #expect(!tag.items.contains(items[0]))
            try ctx.save()
        }
        let check = stack.context()
        try check.performAndWait {
            let tag = try #require(try check.fetch(FetchRequest(entityName: "Tag")).first as? Tag)
            #expect(tag.items.count == 49)
        }
    }

    // Semantics §5: with the `batched` option (not Core Data's default), inserts merged from
    // another context arrive as faults and, when each would be a store trip (the view context has a coordinator of
    // its own), the controller evaluates its predicate for all of them in one query, so only the matching ones
    // are filled (Core Data's controller fires all 40).
    @Test func mergedInsertsEvaluatedWithoutFiringFaults_5() throws {
        let stack = try TestStack()
        let view = stack.context(try stack.secondCoordinator(), name: "view")
        let frc = FetchedResultsController(
            fetchRequest: FetchRequest(entityName: "Item", predicate: .compare("price", .lessThan, 5), sortDescriptors: [ObjectSortDescriptor("price")]),
            managedObjectContext: view, changeEvaluation: .batched)
        let recorder = FRCRecorder()
        try view.performAndWait {
            frc.delegate = recorder
            try frc.performFetch()
        }
        let background = stack.context()
        let saves = NotificationRecorder(ManagedObjectContext.didSaveObjectIDsNotification, object: background)
        try background.performAndWait {
            for i in 1...40 {
                let item = Item(context: background)
                item.id = Int64(i)
                item.price = i == 7 ? 1 : (i == 30 ? 2 : 100)
            }
            try background.save()
        }
        let note = try #require(saves.notes.first)
        view.performAndWait {
            let fired = view.counters.faultsFired
            view.mergeChanges(fromContextDidSave: note)
            #expect(recorder.take() == ["will", "section insert 0 ", "insert #7 - -> [0, 0]", "insert #30 - -> [0, 1]", "did"])
            #expect((frc.fetchedObjects ?? []).compactMap { ($0 as? Item)?.id } == [7, 30])
            #expect(view.counters.faultsFired - fired == 2)  // the two matches are filled; the 38 others stay faults
            #expect(view.registeredObjects.filter { !$0.isFault }.count == 2)
        }
    }

    // Semantics §5, `batched` option, with a fetch limit and no predicate: of the merged
    // inserts only the first `fetchLimit` in sort order can be shown, so one query per chunk finds them and only
    // they are filled; the others stay faults (Core Data's controller fires all 300, one SELECT each).
    @Test func mergedInsertsBeyondTheFetchLimitStayFaults_5() throws {
        let stack = try TestStack()
        let seed = stack.context()
        try seed.performAndWait {
            for i in 1...10 {
                let item = Item(context: seed)
                item.id = Int64(i)
                item.price = Double(i) * 10  // 10, 20, … 100
            }
            try seed.save()
        }
        let view = stack.context(name: "view")
        var request = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("price")])
        request.fetchLimit = 5
        let frc = FetchedResultsController(fetchRequest: request, managedObjectContext: view, changeEvaluation: .batched)
        let recorder = FRCRecorder()
        try view.performAndWait {
            frc.delegate = recorder
            try frc.performFetch()
            #expect((frc.fetchedObjects ?? []).compactMap { ($0 as? Item)?.id } == [1, 2, 3, 4, 5])
        }
        let background = stack.context()
        let saves = NotificationRecorder(ManagedObjectContext.didSaveObjectIDsNotification, object: background)
        try background.performAndWait {
            for i in 11...310 {
                let item = Item(context: background)
                item.id = Int64(i)
                item.price = i == 200 ? 15 : (i == 300 ? 5 : 1000 + Double(i))  // two sort into the first five
            }
            try background.save()
        }
        let note = try #require(saves.notes.first)
        view.performAndWait {
            let fired = view.counters.faultsFired
            view.mergeChanges(fromContextDidSave: note)
            #expect((frc.fetchedObjects ?? []).compactMap { ($0 as? Item)?.id } == [300, 1, 200, 2, 3])
            #expect(view.counters.faultsFired - fired <= 5)  // at most the first five of the one chunk of 300
            #expect(view.registeredObjects.filter { !$0.isFault && ($0 as? Item).map { $0.id > 10 } == true }.count <= 5)
        }
    }

    // Semantics §4: setting a to-one does not load the inverse to-many when it is a fault (Core Data keeps the
    // change pending); the owner still counts as updated, and loading the relationship later shows the change.
    @Test func inverseOfUnloadedToManyStaysAFault_4() throws {
        let stack = try TestStack()
        let seed = stack.context()
        try seed.performAndWait {
            let tag = Tag(context: seed)
            tag.name = "t"
            for i in 1...3 {
                let item = Item(context: seed)
                item.id = Int64(i)
                item.tag = tag
            }
            try seed.save()
        }
        let ctx = stack.context()
        try ctx.performAndWait {
            let tag = try #require(try ctx.fetch(FetchRequest(entityName: "Tag")).first as? Tag)
            let old = try #require(try ctx.fetch(FetchRequest(entityName: "Item", predicate: .compare("id", .equalTo, 1))).first as? Item)
            let before = ctx.counters.relationshipFaultsFired
            let fresh = Item(context: ctx)
            fresh.id = 4
            fresh.tag = tag
            old.tag = nil
            #expect(ctx.counters.relationshipFaultsFired == before)  // the to-many stayed a fault
            #expect(ctx.updatedObjects.contains(tag))
            #expect(Set(tag.items.map(\.id)) == [2, 3, 4])         // loading it lays the pending changes on top
            #expect(ctx.counters.relationshipFaultsFired == before + 1)
            let other = Item(context: ctx)
            other.id = 5
            other.tag = tag                                         // loaded now: changed in place
            try ctx.save()
        }
        let check = stack.context()
        try check.performAndWait {
            let tag = try #require(try check.fetch(FetchRequest(entityName: "Tag")).first as? Tag)
            #expect(Set(tag.items.map(\.id)) == [2, 3, 4, 5])
        }
        // Saved while still a fault: the foreign keys alone carry the change.
        let third = stack.context()
        try third.performAndWait {
            let tag = try #require(try third.fetch(FetchRequest(entityName: "Tag")).first as? Tag)
            let item = Item(context: third)
            item.id = 6
            item.tag = tag
            try third.save()
            #expect(!tag.hasChanges)
            #expect(Set(tag.items.map(\.id)) == [2, 3, 4, 5, 6])
        }
    }

    // Semantics §4 (fetch by object IDs): a `SELF IN` list whose primary keys form runs is sent to SQLite as
    // ranges plus the leftover IDs; the fetch returns exactly the listed objects, not their neighbours.
    @Test func objectIDListWithRunsFetchesExactlyThose_4() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            for i in 1...40 {
                let item = Item(context: ctx)
                item.id = Int64(i)
            }
            try ctx.save()
            let all = try ctx.fetch(FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])).compactMap { $0 as? Item }
            let wanted = all.filter { (3...12).contains($0.id) || (20...25).contains($0.id) || [15, 17, 30, 38].contains($0.id) }
            let request = FetchRequest(entityName: "Item", predicate: ObjectPredicate(.comparison(PredicateComparison(.evaluatedObject, .in, .list(wanted.map { .objectID($0.objectID) })))),
                                       sortDescriptors: [ObjectSortDescriptor("id")])
            let found = try ctx.fetch(request).compactMap { $0 as? Item }
            #expect(found.map(\.id) == wanted.map(\.id))
            var narrowed = request
            narrowed.predicate = .and([.compare("id", .greaterThan, 10), request.predicate!])
            #expect(try ctx.fetch(narrowed).compactMap { ($0 as? Item)?.id } == [11, 12, 15, 17, 20, 21, 22, 23, 24, 25, 30, 38])
        }
    }

    // Semantics §1.5 (typed properties read and write what key-value access does): optionals set to nil and back,
    // integers, booleans, dates and to-ones through @Managed agree with value(forKey:) and track changes.
    @Test func typedPropertiesAgreeWithKeyValueAccess_1_5() throws {
        let stack = try TestStack()
        let ctx = stack.context()
        try ctx.performAndWait {
            let tag = Tag(context: ctx)
            let item = Item(context: ctx)
            item.id = 7
            item.name = "seven"
            item.price = 2.5
            item.flag = true
            item.added = Date(timeIntervalSinceReferenceDate: 42)
            item.tag = tag
            try ctx.save()
            #expect(item.value(forKey: "id") as? Int64 == 7)
            #expect(item.value(forKey: "flag") as? Bool == true)
            item.name = nil
            item.added = nil
            item.tag = nil
            #expect(item.name == nil && item.added == nil && item.tag == nil)
            #expect(Set(item.changedValues().keys) == ["name", "added", "tag"])
            #expect(tag.items.isEmpty)
            item.name = "seven"
            #expect(Set(item.changedValues().keys) == ["added", "tag"])
            try ctx.save()
        }
        let check = stack.context()
        try check.performAndWait {
            let item = try #require(try check.fetch(FetchRequest(entityName: "Item")).first as? Item)
            #expect(item.id == 7 && item.name == "seven" && item.price == 2.5 && item.flag && item.added == nil && item.tag == nil)
        }
    }
}

