import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph

/// PeakCoreData's `ManagedObjectObserver` and `CountObserver` (seed 001 "Observers"), fed by local edits and by
/// Ambar's smart merge.
@Suite struct ToolkitObserverTests {
    typealias Change = ManagedObjectObserver<TKItem>.ChangeType

    @Test func objectObserverReportsInitialisedRefreshedUpdatedDeleted() throws {
        let s = try TKStack()
        try s.seedAndSettle([TKSeed(1), TKSeed(2)])
        let view = s.view
        let shown = try s.viewItems([1, 2])
        try #require(shown.count == 2)  // sorted by id
        let one = shown[0]
        let log = TKLog<Change>()
        let observer = view.performAndWait {
            let observer = ManagedObjectObserver(managedObject: one)
            observer.startObserving { object, change in
                #expect(object === one)
                #expect(view.queue.isCurrent)
                log.append(change)
            }
            return observer
        }
        #expect(log.take() == [.initialised])

        // An importer save merged into the view context by the smart merge: refreshed, with the new values.
        try s.importerChange { importer in
            let theirs = try #require(try TKItem.first(in: importer, predicate: .compare("id", .equalTo, 1)))
            theirs.price = 100
        }
        s.drainMain()
        #expect(log.take() == [.refreshed])
        view.performAndWait { #expect(one.price == 100) }

        // A merge that touches another object says nothing.
        try s.importerChange { importer in
            try #require(try TKItem.first(in: importer, predicate: .compare("id", .equalTo, 2))).price = 200
        }
        s.drainMain()
        #expect(log.take().isEmpty)

        // A local edit: updated, once pending changes are processed.
        view.performAndWait {
            one.name = "edited here"
            #expect(log.count == 0)
            view.processPendingChanges()
        }
        #expect(log.take() == [.updated])

        // Deleted by an importer: the merge deletes it in the view context.
        try s.importerChange { importer in
            importer.delete(try #require(try TKItem.first(in: importer, predicate: .compare("id", .equalTo, 1))))
        }
        s.drainMain()
        #expect(log.take() == [.deleted])
        view.performAndWait { #expect(one.isDeleted) }
        // The view context can still save: the merged delete of a row already gone is ignored.
        try view.performAndWait {
            try view.save()
            #expect(!view.hasChanges)
        }
        withExtendedLifetime(observer) {}
    }

    @Test func objectObserverReportsLocalDeleteAndStopsWhenReleased() throws {
        let s = try TKStack()
        try s.seedAndSettle([TKSeed(1), TKSeed(2)])
        let view = s.view
        let shown = try s.viewItems([1, 2])
        try #require(shown.count == 2)  // sorted by id
        let one = shown[0], two = shown[1]
        let log = TKLog<Change>()
        let logTwo = TKLog<Change>()
        var observerOne: ManagedObjectObserver<TKItem>? = view.performAndWait {
            let o = ManagedObjectObserver(managedObject: one)
            o.startObserving { _, change in log.append(change) }
            return o
        }
        let observerTwo = view.performAndWait {
            let o = ManagedObjectObserver(managedObject: two)
            o.startObserving { _, change in logTwo.append(change) }
            return o
        }
        #expect(log.take() == [.initialised])
        #expect(logTwo.take() == [.initialised])

        view.performAndWait {
            view.delete(two)
            view.processPendingChanges()
        }
        #expect(logTwo.take() == [.deleted])
        #expect(log.take().isEmpty)

        // Released: no more callbacks, neither for local edits nor for merges.
        weak let weakObserver = observerOne
        observerOne = nil
        #expect(weakObserver == nil)
        view.performAndWait {
            one.name = "after release"
            view.processPendingChanges()
        }
        try s.importerChange { importer in
            try #require(try TKItem.first(in: importer, predicate: .compare("id", .equalTo, 1))).price = 7
        }
        s.drainMain()
        view.performAndWait {
            view.delete(one)
            view.processPendingChanges()
        }
        #expect(log.count == 0)
        withExtendedLifetime(observerTwo) {}
    }

    @Test func objectObserverStopObserving() throws {
        let s = try TKStack()
        try s.seedAndSettle([TKSeed(1)])
        let view = s.view
        let one = try #require(try s.viewItems([1]).first)
        let log = TKLog<Change>()
        let observer = view.performAndWait {
            let o = ManagedObjectObserver(managedObject: one)
            o.startObserving { _, change in log.append(change) }
            return o
        }
        view.performAndWait {
            observer.stopObserving()
            one.name = "x"
            view.processPendingChanges()
        }
        #expect(log.take() == [.initialised])
    }

    // MARK: CountObserver

    @Test func countObserverRecountsOnlyWhenTheCountCanChange() throws {
        let s = try TKStack()
        try s.seedAndSettle((1...10).map { TKSeed(Int64($0)) })  // prices 1...10
        let view = s.view
        let counts = TKLog<Int>()
        let observer = try view.performAndWait {
            let o = CountObserver<TKItem>(predicate: .compare("price", .greaterThan, 5.0), context: view)
            try o.startObserving { counts.append($0) }
            return o
        }
        #expect(counts.take() == [5])
        #expect(observer.recounts == 0)
        #expect(observer.count == 5)
        #expect(observer.predicate == .compare("price", .greaterThan, 5.0))

        // A matching insert: recount, new count.
        let inserted: TKItem = try view.performAndWait {
            let item = try TKItem.insert(into: view)
            item.id = 11
            item.price = 50
            view.processPendingChanges()
            return item
        }
        #expect(counts.take() == [6])
        #expect(observer.recounts == 1)

        // An insert that does not match: no recount.
        try view.performAndWait {
            let item = try TKItem.insert(into: view)
            item.id = 12
            item.price = 1
            view.processPendingChanges()
        }
        #expect(observer.recounts == 1)
        #expect(counts.take().isEmpty)

        // An update to a key the predicate does not read: no recount.
        let items = try s.viewItems([3, 8])
        try #require(items.count == 2)  // sorted by id
        let three = items[0], eight = items[1]
        view.performAndWait {
            three.name = "renamed"
            eight.name = "renamed too"
            eight.group = "Z"
            view.processPendingChanges()
        }
        #expect(observer.recounts == 1)
        #expect(counts.take().isEmpty)

        // An update to the key it reads: recount (the object leaves the count).
        view.performAndWait {
            eight.price = 0.5
            view.processPendingChanges()
        }
        #expect(observer.recounts == 2)
        #expect(counts.take() == [5])

        // A delete of a matching object: recount; of a non-matching one: none.
        view.performAndWait {
            view.delete(inserted)
            view.processPendingChanges()
        }
        #expect(observer.recounts == 3)
        #expect(counts.take() == [4])
        view.performAndWait {
            view.delete(three)
            view.processPendingChanges()
        }
        #expect(observer.recounts == 3)
        #expect(counts.take().isEmpty)
        view.performAndWait { #expect(observer.count == 4) }
    }

    /// An object whose predicate key changed earlier (unsaved) is updated again in another key only: that
    /// second change cannot move it in or out of the count, so no recount.
    @Test func countObserverDoesNotRecountForAnotherKeyOfAnAlreadyChangedObject() throws {
        let s = try TKStack()
        try s.seedAndSettle((1...10).map { TKSeed(Int64($0)) })
        let view = s.view
        let counts = TKLog<Int>()
        let observer = try view.performAndWait {
            let o = CountObserver<TKItem>(predicate: .compare("price", .greaterThan, 5.0), context: view)
            try o.startObserving { counts.append($0) }
            return o
        }
        let eight = try #require(try s.viewItems([8]).first)
        view.performAndWait {
            eight.price = 0.5
            view.processPendingChanges()
        }
        #expect(observer.recounts == 1)
        #expect(counts.take() == [5, 4])
        view.performAndWait {
            eight.name = "renamed"
            view.processPendingChanges()
        }
        #expect(observer.recounts == 1)
        #expect(counts.take().isEmpty)
    }

    @Test func countObserverWithoutPredicateRecountsOnInsertAndDeleteOnly() throws {
        let s = try TKStack()
        try s.seedAndSettle((1...3).map { TKSeed(Int64($0)) })
        let view = s.view
        let counts = TKLog<Int>()
        let observer = try view.performAndWait {
            let o = CountObserver<TKItem>(context: view)
            try o.startObserving { counts.append($0) }
            return o
        }
        #expect(counts.take() == [3])
        let items = try s.viewItems([1, 2, 3])
        try view.performAndWait {
            items[0].price = 99
            items[1].name = "x"
            view.processPendingChanges()
            #expect(observer.recounts == 0)  // updates never change an unfiltered count
            let tag = try TKTag.insert(into: view)
            tag.name = "another entity"
            view.processPendingChanges()
            #expect(observer.recounts == 0)
            view.delete(items[2])
            view.processPendingChanges()
            #expect(observer.recounts == 1)
        }
        #expect(counts.take() == [2])
        // Background: an update merged as a refresh does not recount; an insert does.
        try s.importerChange { importer in
            try #require(try TKItem.first(in: importer, predicate: .compare("id", .equalTo, 1))).name = "bg"
        }
        s.drainMain()
        #expect(observer.recounts == 1)
        try s.seed([TKSeed(10)])
        s.drainMain()
        #expect(observer.recounts == 2)
        #expect(counts.take() == [3])
    }

    /// A merged refresh does not say which keys changed, so a filtered observer recounts; the handler is
    /// only called when the count actually changed.
    @Test func countObserverCallsItsHandlerOnlyWhenTheCountChanges() throws {
        let s = try TKStack()
        try s.seedAndSettle((1...10).map { TKSeed(Int64($0)) })
        let view = s.view
        let counts = TKLog<Int>()
        let observer = try view.performAndWait {
            let o = CountObserver<TKItem>(predicate: .compare("price", .greaterThan, 5.0), context: view)
            try o.startObserving { counts.append($0) }
            return o
        }
        #expect(counts.take() == [5])
        let loaded = try s.viewItems([9])
        try s.importerChange { importer in
            try #require(try TKItem.first(in: importer, predicate: .compare("id", .equalTo, 9))).name = "renamed in the background"
        }
        s.drainMain()
        #expect(observer.recounts <= 1)
        #expect(counts.take().isEmpty)
        try s.importerChange { importer in
            try #require(try TKItem.first(in: importer, predicate: .compare("id", .equalTo, 9))).price = 1
        }
        s.drainMain()
        #expect(counts.take() == [4])
        withExtendedLifetime(loaded) {}
    }

    @Test func countObserverFollowsBackgroundImportsMergedIntoTheViewContext() throws {
        let s = try TKStack()
        try s.seedAndSettle((1...10).map { TKSeed(Int64($0)) })
        let view = s.view
        let counts = TKLog<Int>()
        let onMain = TKLog<Bool>()
        let observer = try view.performAndWait {
            let o = CountObserver<TKItem>(predicate: .compare("price", .greaterThan, 5.0), context: view)
            try o.startObserving { count in
                onMain.append(s.main.isCurrent)
                counts.append(count)
            }
            return o
        }
        #expect(counts.take() == [5])

        // Three matching inserts and one that does not match, in one importer save.
        try s.seed([TKSeed(20, price: 20), TKSeed(21, price: 21), TKSeed(22, price: 22), TKSeed(23, price: 1)])
        s.drainMain()
        #expect(counts.take() == [8])
        #expect(onMain.take().allSatisfy { $0 })
        #expect(observer.recounts == 1)

        // An import that only adds non-matching objects: no recount.
        try s.seed([TKSeed(30, price: 0), TKSeed(31, price: 1)])
        s.drainMain()
        #expect(counts.take().isEmpty)
        #expect(observer.recounts == 1)

        // A background delete of a matching object the view context has loaded.
        let twenty = try s.viewItems([20])
        try s.importerChange { importer in
            importer.delete(try #require(try TKItem.first(in: importer, predicate: .compare("id", .equalTo, 20))))
        }
        s.drainMain()
        withExtendedLifetime(twenty) {}
        #expect(counts.take() == [7])
        #expect(observer.recounts == 2)
        #expect(s.container.counters.mergesPerformed == 4)
    }
}

/// The headless `FetchedCollection` (seed 001 "Fetched Data Sources"): sections, subscripts, snapshots and
/// the update lists a table view would apply.
@Suite struct ToolkitFetchedCollectionTests {
    /// A: items 1, 2, 3 (prices 1, 2, 3); B: items 4, 5.
    static let seeds = [TKSeed(1, group: "A"), TKSeed(2, group: "A"), TKSeed(3, group: "A"), TKSeed(4, group: "B"), TKSeed(5, group: "B")]

    static func makeCollection(_ view: ManagedObjectContext, log: TKLog<[FetchedUpdate]>) throws -> FetchedCollection<TKItem> {
        try view.performAndWait {
            let request = TKItem.fetchRequest(sortedWith: [ObjectSortDescriptor("group"), ObjectSortDescriptor("price")])
            let collection = try FetchedCollection<TKItem>(fetchRequest: request, context: view, sectionNameKeyPath: "group")
            collection.onChange = { log.append($0) }
            return collection
        }
    }

    // Docs/coredata-behaviour.md §5 (PeakCoreData's batch import test, verified on Apple second-hand): an
    // importer's one save of 1,000 items, merged by the smart merge, reaches an empty collection as one change
    // list of exactly 1,000 inserts, and nothing follows.
    @Test func mergedImportIsOneChangeListOfInserts() throws {
        let s = try TKStack()
        let view = s.view
        let log = TKLog<[FetchedUpdate]>()
        let collection = try Self.makeCollection(view, log: log)
        try s.seed((1...1_000).map { TKSeed(Int64($0), group: "A") })
        s.drainMain()
        s.drainMain()
        let lists = log.take()
        #expect(lists.count == 1)
        let inserts = lists.first?.filter { if case .insert = $0 { true } else { false } }.count
        #expect(inserts == 1_000)
        #expect(lists.first?.count == 1_001)  // and the section "A"
        #expect(s.container.counters.mergesPerformed == 1)
        view.performAndWait { #expect(collection.objects.count == 1_000) }
    }

    // Docs/coredata-behaviour.md §5 (PeakCoreData's batch import test, verified on Apple second-hand): the
    // toolkit's batch import of 1,000 values saves once (PeakCoreData's batch of 50,000), so the smart merge
    // brings it to the collection as one change list of 1,000 inserts, fetched in chunks of 500 all the same.
    @Test func batchImportOfAThousandValuesIsOneChangeList() async throws {
        let s = try TKStack()
        let log = TKLog<[FetchedUpdate]>()
        let collection = try Self.makeCollection(s.view, log: log)
        let changes = try await BatchImport(values: (1...1_000).map { TKItemRecord(Int64($0), name: "n\($0)", price: Double($0)) })
            .run(in: s.container.importerContext())
        #expect(changes.inserted.count == 1_000)
        s.drainMain()
        s.drainMain()
        let lists = log.take()
        #expect(lists.count == 1)
        #expect(lists.first?.filter { if case .insert = $0 { true } else { false } }.count == 1_000)
        #expect(lists.first?.contains { if case .update = $0 { true } else { false } } == false)
        #expect(s.container.counters.mergesPerformed == 1)
        s.view.performAndWait { #expect(collection.objects.count == 1_000) }
    }

    // A batch size below the values saves once per batch: three saves of at most 400 values, three change lists.
    @Test func batchImportSavesOncePerBatch() async throws {
        let s = try TKStack()
        let log = TKLog<[FetchedUpdate]>()
        let collection = try Self.makeCollection(s.view, log: log)
        let changes = try await BatchImport(values: (1...1_000).map { TKItemRecord(Int64($0)) }, chunkSize: 200, batchSize: 400)
            .run(in: s.container.importerContext())
        #expect(changes.inserted.count == 1_000)
        #expect(changes.inserted.allSatisfy { !$0.isTemporaryID })
        s.drainMain()
        s.drainMain()
        #expect(log.take().map { $0.filter { if case .insert = $0 { true } else { false } }.count } == [400, 400, 200])
        #expect(s.container.counters.mergesPerformed == 3)
        s.view.performAndWait { #expect(collection.objects.count == 1_000) }
    }

    @Test func sectionsSubscriptsAndSnapshot() throws {
        let s = try TKStack()
        try s.seedAndSettle(Self.seeds)
        let view = s.view
        let log = TKLog<[FetchedUpdate]>()
        let collection = try Self.makeCollection(view, log: log)
        view.performAndWait {
            #expect(collection.numberOfSections == 2)
            #expect(collection.sectionName(0) == "A")
            #expect(collection.sectionName(1) == "B")
            #expect(collection.numberOfObjects(in: 0) == 3)
            #expect(collection.numberOfObjects(in: 1) == 2)
            #expect(collection.objects.map(\.id) == [1, 2, 3, 4, 5])
            #expect(collection[1, 1].id == 5)
            #expect(collection[tkPath(2, 0)].id == 3)
            let snapshot = collection.snapshot()
            #expect(snapshot.sectionIdentifiers == ["A", "B"])
            #expect(snapshot.itemIdentifiers["A"] == collection.objects.prefix(3).map(\.objectID))
            #expect(snapshot.itemIdentifiers["B"] == [collection[0, 1].objectID, collection[1, 1].objectID])
            #expect(snapshot.reloadedItemIdentifiers.isEmpty)
        }
        #expect(log.count == 0)
    }

    @Test func localChangesGiveTheUpdateLists() throws {
        let s = try TKStack()
        try s.seedAndSettle(Self.seeds)
        let view = s.view
        let log = TKLog<[FetchedUpdate]>()
        let collection = try Self.makeCollection(view, log: log)
        func change(_ body: () throws -> Void) throws -> [[FetchedUpdate]] {
            try view.performAndWait {
                try body()
                view.processPendingChanges()
            }
            return log.take()
        }
        let items = view.performAndWait { Dictionary(uniqueKeysWithValues: collection.objects.map { ($0.id, $0) }) }

        // Insert into an existing section.
        #expect(try change {
            let item = try TKItem.insert(into: view)
            item.id = 6; item.group = "B"; item.price = 6
        } == [[.insert(tkPath(2, 1))]])
        // Insert into a new section: the section first.
        let seven = try view.performAndWait { try TKItem.insert(into: view) }
        #expect(try change {
            seven.id = 7; seven.group = "C"; seven.price = 7
        } == [[.insertSection(2), .insert(tkPath(0, 2))]])
        // Update in place (a key that is not sorted on).
        #expect(try change { items[1]?.name = "renamed" } == [[.update(tkPath(0, 0))]])
        // Move within a section (price 1 → 2.5: after item 2).
        #expect(try change { items[1]?.price = 2.5 } == [[.move(tkPath(0, 0), tkPath(1, 0))]])
        // Move to another section.
        #expect(try change { items[3]?.group = "B" } == [[.move(tkPath(2, 0), tkPath(0, 1))]])
        view.performAndWait {
            #expect(collection.objects.map(\.id) == [2, 1, 3, 4, 5, 6, 7])
            #expect(collection.numberOfObjects(in: 0) == 2)
            #expect(collection.numberOfObjects(in: 1) == 4)
        }
        // Delete.
        #expect(try change { if let four = items[4] { view.delete(four) } } == [[.delete(tkPath(1, 1))]])
        // Delete the last object of a section: the section goes first.
        #expect(try change { view.delete(seven) } == [[.deleteSection(2), .delete(tkPath(0, 2))]])
        view.performAndWait {
            #expect(collection.numberOfSections == 2)
            #expect(collection.snapshot().sectionIdentifiers == ["A", "B"])
            #expect(collection.objects.map(\.id) == [2, 1, 3, 5, 6])
        }
        // A change to another entity says nothing.
        #expect(try change {
            let tag = try TKTag.insert(into: view)
            tag.name = "unrelated"
        }.isEmpty)
    }

    @Test func backgroundSavesMergedBySmartMergeGiveTheUpdateLists() throws {
        let s = try TKStack()
        try s.seedAndSettle(Self.seeds)
        let view = s.view
        let log = TKLog<[FetchedUpdate]>()
        let collection = try Self.makeCollection(view, log: log)
        func background(_ body: (ManagedObjectContext) throws -> Void) throws -> [[FetchedUpdate]] {
            try s.importerChange(body)
            s.drainMain()
            return log.take()
        }
        func item(_ id: Int64, _ context: ManagedObjectContext) throws -> TKItem {
            try #require(try TKItem.first(in: context, predicate: .compare("id", .equalTo, id)))
        }

        // Insert into an existing section.
        #expect(try background { importer in
            let x = try TKItem.insert(into: importer)
            x.id = 6; x.group = "B"; x.price = 6
        } == [[.insert(tkPath(2, 1))]])
        // Insert into a new section.
        #expect(try background { importer in
            let x = try TKItem.insert(into: importer)
            x.id = 7; x.group = "C"; x.price = 7
        } == [[.insertSection(2), .insert(tkPath(0, 2))]])
        // Update in place.
        #expect(try background { try item(2, $0).name = "renamed in the background" } == [[.update(tkPath(1, 0))]])
        view.performAndWait { #expect(collection[1, 0].name == "renamed in the background") }
        // Move within a section and to another section.
        #expect(try background { try item(1, $0).price = 2.5 } == [[.move(tkPath(0, 0), tkPath(1, 0))]])
        #expect(try background { try item(3, $0).group = "B" } == [[.move(tkPath(2, 0), tkPath(0, 1))]])
        // Delete, and delete the last object of a section.
        #expect(try background { $0.delete(try item(4, $0)) } == [[.delete(tkPath(1, 1))]])
        #expect(try background { $0.delete(try item(7, $0)) } == [[.deleteSection(2), .delete(tkPath(0, 2))]])
        view.performAndWait {
            #expect(collection.objects.map(\.id) == [2, 1, 3, 5, 6])
            #expect(collection.snapshot().sectionIdentifiers == ["A", "B"])
        }
        // Several changes in one save: one list, sections first, then inserts, deletes, moves, updates.
        #expect(try background { importer in
            let x = try TKItem.insert(into: importer)
            x.id = 8; x.group = "D"; x.price = 8
            importer.delete(try item(5, importer))
            try item(6, importer).name = "six"
        } == [[.insertSection(2), .insert(tkPath(0, 2)), .delete(tkPath(1, 1)), .update(tkPath(2, 1))]])
        view.performAndWait { #expect(collection.objects.map(\.id) == [2, 1, 3, 6, 8]) }
        #expect(s.container.counters.mergesPerformed == 9)
    }

    /// With a predicate: a background update can take a shown object out of the results (delete) and bring an
    /// object the view context never loaded into them (insert; semantics §5: "since iOS 10 new predicate
    /// matches are picked up").
    @Test func backgroundUpdatesMoveObjectsInAndOutOfAFilteredCollection() throws {
        let s = try TKStack()
        try s.seedAndSettle((1...6).map { TKSeed(Int64($0)) })  // prices 1...6
        let view = s.view
        let log = TKLog<[FetchedUpdate]>()
        let collection = try view.performAndWait {
            let request = TKItem.fetchRequest(predicate: .compare("price", .greaterThan, 3.0))
            let collection = try FetchedCollection<TKItem>(fetchRequest: request, context: view)
            collection.onChange = { log.append($0) }
            return collection
        }
        view.performAndWait {
            #expect(collection.objects.map(\.id) == [4, 5, 6])
            #expect(collection.numberOfSections == 1)
            #expect(collection.sectionName(0) == "")
        }
        // A shown object stops matching.
        try s.importerChange { importer in
            try #require(try TKItem.first(in: importer, predicate: .compare("id", .equalTo, 5))).price = 0
        }
        s.drainMain()
        #expect(log.take() == [[.delete(tkPath(1, 0))]])
        view.performAndWait { #expect(collection.objects.map(\.id) == [4, 6]) }
        // An object the view context never loaded starts matching.
        let reader = s.container.importerContext()
        let oneID = try reader.performAndWait { try #require(try TKItem.first(in: reader)).objectID }
        view.performAndWait { #expect(view.registeredObject(for: oneID) == nil) }
        try s.importerChange { importer in
            try #require(try TKItem.first(in: importer, predicate: .compare("id", .equalTo, 1))).price = 10
        }
        s.drainMain()
        #expect(log.take() == [[.insert(tkPath(0, 0))]])
        view.performAndWait { #expect(collection.objects.map(\.id) == [1, 4, 6]) }
    }
}
