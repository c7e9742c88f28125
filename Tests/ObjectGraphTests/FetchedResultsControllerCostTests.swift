import Foundation
import Testing
@testable import ObjectGraph

/// What placing a change costs a fetched results controller (Docs/coredata-behaviour.md §5, "What placing a
/// change costs"): comparisons of a binary search, entries shifted in its array, sections adjusted.
@Suite struct FetchedResultsControllerCostTests {
    /// The controller's counted work for one change.
    struct Work: Equatable, CustomStringConvertible {
        var evaluated = 0, comparisons = 0, moved = 0, sections = 0
        var description: String { "evaluated \(evaluated), comparisons \(comparisons), moved \(moved), sections \(sections)" }
    }

    /// Runs `body` on a counting thread and returns the controller operations it counted.
    static func work(_ body: () throws -> Void) rethrows -> Work {
        let counting = ExecutionThread.countingOnly()
        ExecutionThread.install(counting)
        defer { ExecutionThread.install(nil) }
        try body()
        func n(_ op: CostedOperation) -> Int { counting.counts[op.rawValue] }
        return Work(evaluated: n(.controllerObjectEvaluated), comparisons: n(.controllerComparison),
                    moved: n(.controllerObjectMoved), sections: n(.controllerSectionUpdated))
    }

    /// Items with ids 0..<n, prices 0, 2, 4, … (index i holds price 2i), and names from `names` (index / per).
    static func seed(_ stack: TestStack, count n: Int, names: [String] = [""], per: Int = .max) throws {
        let ctx = stack.context()
        try ctx.performAndWait {
            for i in 0..<n {
                let item = Item(context: ctx)
                item.id = Int64(i)
                item.price = Double(2 * i)
                item.name = names[min(i / per, names.count - 1)]
            }
            try ctx.save()
        }
    }

    /// A controller with a delegate (so it tracks changes), sorted by price, or by name and price in sections.
    static func controller(_ ctx: ManagedObjectContext, sectioned: Bool = false) throws -> (FetchedResultsController, FRCRecorder) {
        let sorts = sectioned ? [ObjectSortDescriptor("name"), ObjectSortDescriptor("price")] : [ObjectSortDescriptor("price")]
        let frc = FetchedResultsController(fetchRequest: FetchRequest(entityName: "Item", sortDescriptors: sorts),
                                           managedObjectContext: ctx, sectionNameKeyPath: sectioned ? "name" : nil)
        let recorder = FRCRecorder()
        frc.delegate = recorder
        try frc.performFetch()
        return (frc, recorder)
    }

    static func prices(_ frc: FetchedResultsController) -> [Double] { (frc.fetchedObjects ?? []).map { ($0 as! Item).price } }

    // Docs/coredata-behaviour.md §5: an inserted object is placed by a binary search over the held objects (one
    // comparison per halving: log2(n) here, one more per doubling) and the entries after it shift by one.
    @Test("An insert costs log2(held) comparisons and shifts the entries after its place")
    func insertCostGrowsWithLogOfHeld() throws {
        var comparisons: [Int] = []
        for n in [64, 256, 1024] {
            let stack = try TestStack()
            try Self.seed(stack, count: n)
            let ctx = stack.context()
            try ctx.performAndWait {
                let (frc, recorder) = try Self.controller(ctx)
                let work = Self.work {
                    let item = Item(context: ctx)
                    item.id = Int64(n)
                    item.price = Double(n - 1)  // between index n/2 - 1 (price n - 2) and n/2 (price n)
                    ctx.processPendingChanges()
                }
                #expect(recorder.take() == ["will", "insert #\(n) - -> [0, \(n / 2)]", "did"])
                let log2n = Int(log2(Double(n)))
                #expect(work == Work(evaluated: 1, comparisons: log2n, moved: n - n / 2, sections: 1), "n = \(n)")
                comparisons.append(work.comparisons)
                #expect(frc.objectCount == n + 1)
            }
        }
        #expect(comparisons == [6, 8, 10])  // one more per doubling of the held objects
    }

    // Docs/coredata-behaviour.md §5: a changed sort key moves the object from a to b; the |a − b| entries between
    // shift by one, and within one section no section changes.
    @Test("A move shifts the entries between its old and new place", arguments: [(10, 50), (50, 10), (20, 21)])
    func moveShiftsTheDistance(from a: Int, to b: Int) throws {
        let stack = try TestStack()
        try Self.seed(stack, count: 64)
        let ctx = stack.context()
        try ctx.performAndWait {
            let (frc, recorder) = try Self.controller(ctx)
            let item = try FetchedResultsControllerTests.item(ctx, Int64(a))
            let work = Self.work {
                item.price = Double(2 * b) + (b > a ? 1 : -1)  // just after index b's price moving up, just before moving down
                ctx.processPendingChanges()
            }
            #expect(recorder.take() == ["will", "move #\(a) [0, \(a)] -> [0, \(b)]", "did"])
            #expect(work.moved == abs(a - b))
            #expect(work.sections == 0)
            #expect(work.evaluated == 1)
            // The search by halves over the 63 others (their keys are not loaded, so nothing to gallop over).
            #expect(work.comparisons == 6)
            #expect(Self.prices(frc) == Self.prices(frc).sorted())
        }
    }

    // Docs/coredata-behaviour.md §5: a local edit that changed no sort or section key keeps its place unsearched.
    @Test("An edit of no sort key costs its evaluation only")
    func editOfNoSortKeyCostsNoPlacement() throws {
        let stack = try TestStack()
        try Self.seed(stack, count: 64)
        let ctx = stack.context()
        try ctx.performAndWait {
            let (frc, recorder) = try Self.controller(ctx)
            let item = try FetchedResultsControllerTests.item(ctx, Int64(7))
            let work = Self.work {
                item.flag = true
                ctx.processPendingChanges()
            }
            #expect(recorder.take() == ["will", "update #7 [0, 7] -> [0, 7]", "did"])
            #expect(work == Work(evaluated: 1, comparisons: 0, moved: 0, sections: 0))
            #expect(frc.objectCount == 64)
        }
    }

    // Docs/coredata-behaviour.md §5: a delete at i shifts the n − 1 − i entries after it; its section counts
    // one fewer.
    @Test("A delete shifts the entries after it")
    func deleteShiftsTheTail() throws {
        let stack = try TestStack()
        try Self.seed(stack, count: 64)
        let ctx = stack.context()
        try ctx.performAndWait {
            let (frc, recorder) = try Self.controller(ctx)
            let item = try FetchedResultsControllerTests.item(ctx, Int64(20))
            let work = Self.work {
                ctx.delete(item)
                ctx.processPendingChanges()
            }
            #expect(recorder.take() == ["will", "delete #20 [0, 20] -> -", "did"])
            #expect(work == Work(evaluated: 0, comparisons: 0, moved: 43, sections: 1))
            #expect(frc.objectCount == 63)
        }
    }

    // Docs/coredata-behaviour.md §5: with sections the search stays within the object's section; a new section
    // is placed by comparing with each section's first object, and every section after a change has its offset
    // adjusted.
    @Test("Sections: an insert into a section adjusts it and the offsets after it; a new section is one more")
    func sectionBookkeeping() throws {
        let stack = try TestStack()
        try Self.seed(stack, count: 16, names: ["a", "c", "e", "g"], per: 4)  // 4 sections of 4
        let ctx = stack.context()
        try ctx.performAndWait {
            let (frc, recorder) = try Self.controller(ctx, sectioned: true)
            // Into section c (indices 4–7, prices 8, 10, 12, 14): 2 comparisons over its 4, 10 entries shifted,
            // section c counted and e and g moved.
            var work = Self.work {
                let item = Item(context: ctx)
                item.id = 100
                item.name = "c"
                item.price = 11
                ctx.processPendingChanges()
            }
            #expect(recorder.take() == ["will", "insert #100 - -> [1, 2]", "did"])
            #expect(work == Work(evaluated: 1, comparisons: 2, moved: 10, sections: 3))

            // A new section b: 3 comparisons with the 4 sections' first objects, 13 entries shifted (all but
            // section a's 4), section b inserted and c, e, g moved.
            work = Self.work {
                let item = Item(context: ctx)
                item.id = 101
                item.name = "b"
                item.price = 1
                ctx.processPendingChanges()
            }
            #expect(recorder.take() == ["will", "section insert 1 b", "insert #101 - -> [1, 0]", "did"])
            #expect(work == Work(evaluated: 1, comparisons: 3, moved: 13, sections: 4))
            #expect(frc.sections?.map(\.name) == ["a", "b", "c", "e", "g"])
            #expect(frc.sections?.map(\.numberOfObjects) == [4, 1, 5, 4, 4])

            // From section a (index 1) into section e: the 9 entries between shift; a, b, c and e are adjusted,
            // g is not.
            let one = try FetchedResultsControllerTests.item(ctx, Int64(1))
            work = Self.work {
                one.name = "e"
                one.price = 17  // after e's first object (price 16), before its second (18)
                ctx.processPendingChanges()
            }
            #expect(recorder.take() == ["will", "move #1 [0, 1] -> [3, 1]", "did"])
            // Its neighbours' keys are loaded (the fetch read every section name), so the search gallops from
            // the start of section e: 2 comparisons.
            #expect(work == Work(evaluated: 1, comparisons: 2, moved: 9, sections: 4))
            #expect(frc.sections?.map(\.numberOfObjects) == [3, 1, 5, 5, 4])

            // The last object of section b goes: the section is removed and c, e, g moved.
            let b = try FetchedResultsControllerTests.item(ctx, Int64(101))
            work = Self.work {
                ctx.delete(b)
                ctx.processPendingChanges()
            }
            #expect(recorder.take() == ["will", "section delete 1 b", "delete #101 [1, 0] -> -", "did"])
            #expect(work == Work(evaluated: 0, comparisons: 0, moved: 14, sections: 4))
            #expect(FetchedResultsControllerTests.layout(frc) == ["a:0,2,3", "c:4,5,100,6,7", "e:8,1,9,10,11", "g:12,13,14,15"])
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
}
