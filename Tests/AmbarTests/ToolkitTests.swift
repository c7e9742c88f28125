import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph

/// PeakCoreData's `ManagedObjectType` helpers (seed 001 "Protocols"), `localInstance(of:)` and
/// `CoreDataRepresentable`.
@Suite struct ToolkitHelperTests {
    static let tenItems = (1...10).map { TKSeed(Int64($0), group: $0 <= 5 ? "A" : "B") }

    @Test func entityNameAndFetchRequestBuilder() throws {
        #expect(TKItem.entityName == "TKItem")
        #expect(TKTag.entityName == "TKTag")
        #expect(TKTag.defaultSortDescriptors.isEmpty)
        let plain = TKItem.fetchRequest()
        #expect(plain.entityName == "TKItem")
        #expect(plain.predicate == nil)
        #expect(plain.sortDescriptors == [ObjectSortDescriptor("id")])  // the type's default sort
        let predicate = try ObjectPredicate(format: "price > %@", 5.0)
        let custom = TKItem.fetchRequest(predicate: predicate, sortedWith: [ObjectSortDescriptor("price", ascending: false)])
        #expect(custom.predicate == predicate)
        #expect(custom.sortDescriptors == [ObjectSortDescriptor("price", ascending: false)])
        #expect(TKTag.fetchRequest().sortDescriptors.isEmpty)
    }

    @Test func fetchFirstAndCount() throws {
        let s = try TKStack()
        try s.seedAndSettle(Self.tenItems)
        let view = s.view
        try view.performAndWait {
            let cheap = try TKItem.fetch(in: view, predicate: .compare("price", .lessThan, 4.0))
            #expect(cheap.map(\.id) == [1, 2, 3])  // default sort by id
            let limited = try TKItem.fetch(in: view, sortedWith: [ObjectSortDescriptor("price", ascending: false)]) { $0.fetchLimit = 2 }
            #expect(limited.map(\.id) == [10, 9])
            #expect(try TKItem.first(in: view)?.id == 1)
            #expect(try TKItem.first(in: view, sortedWith: [ObjectSortDescriptor("price", ascending: false)])?.id == 10)
            #expect(try TKItem.first(in: view, predicate: .compare("group", .equalTo, "B"))?.id == 6)
            #expect(try TKItem.first(in: view, predicate: .compare("group", .equalTo, "nope")) == nil)
            #expect(try TKItem.count(in: view) == 10)
            #expect(try TKItem.count(in: view, predicate: .compare("group", .equalTo, "A")) == 5)
            // Pending changes count, and first(in:) sees a pending insert that sorts first.
            let zero = try TKItem.insert(into: view)
            zero.id = 0
            zero.group = "Z"
            #expect(try TKItem.first(in: view) === zero)
            #expect(try TKItem.count(in: view) == 11)
            view.delete(zero)
            let extra = try TKItem.insert(into: view)
            extra.id = 11
            extra.group = "A"
            #expect(try TKItem.count(in: view, predicate: .compare("group", .equalTo, "A")) == 6)
            #expect(try TKItem.count(in: view) == 11)
        }
    }

    @Test func distinctValuesAndValuesRegisterNoObjects() throws {
        let s = try TKStack()
        try s.seedAndSettle(Self.tenItems)
        let view = s.view
        try view.performAndWait {
            let before = view.registeredObjectCount
            let groups = try TKItem.fetchDistinctValues(of: "group", in: view)
            #expect(groups.count == 2)
            #expect(Set(groups.compactMap { $0 as? String }) == ["A", "B"])
            let expensive = try TKItem.fetchDistinctValues(of: "group", in: view, predicate: .compare("price", .greaterThan, 7.0))
            #expect(expensive.compactMap { $0 as? String } == ["B"])
            let rows = try TKItem.fetchValues(of: ["id", "name"], in: view, predicate: .compare("group", .equalTo, "A"),
                                              sortedWith: [ObjectSortDescriptor("id", ascending: false)])
            #expect(rows.count == 5)
            #expect(rows.compactMap { $0["id"] as? Int64 } == [5, 4, 3, 2, 1])
            #expect(rows.first?["name"] as? String == "item 5")
            #expect(rows.first?["price"] == nil)  // only the keys asked for
            #expect(view.registeredObjectCount == before)
        }
    }

    /// `find` looks among registered, loaded objects only, never does SQL, and gives nil when several match.
    @Test func findUsesRegisteredObjectsOnlyWithoutSQL() throws {
        let s = try TKStack()
        try s.seedAndSettle(Self.tenItems)
        let view = s.view
        let coordinator = s.container.mainCoordinator
        try view.performAndWait {
            var statements = coordinator.counters.statements
            // Nothing registered: nil, no SQL, nothing registered.
            #expect(TKItem.find(in: view, predicate: .compare("id", .equalTo, 3)) == nil)
            #expect(coordinator.counters.statements == statements)
            #expect(view.registeredObjectCount == 0)

            let loaded = try TKItem.fetch(in: view, predicate: .in("id", [3, 4])) { $0.returnsObjectsAsFaults = false }
            #expect(loaded.count == 2)
            // Registered faults do not count (PeakCoreData's "materialised object").
            let faults = try TKItem.fetch(in: view, predicate: .compare("id", .equalTo, 7))
            #expect(faults.first?.isFault == true)
            statements = coordinator.counters.statements
            let three = TKItem.find(in: view, predicate: .compare("id", .equalTo, 3))
            #expect(three === loaded.first { $0.id == 3 })
            #expect(TKItem.find(in: view, predicate: .compare("id", .equalTo, 7)) == nil)
            #expect(TKItem.find(in: view, predicate: .compare("id", .equalTo, 8)) == nil)
            // Two registered objects match: nil, as documented.
            #expect(TKItem.find(in: view, predicate: .compare("group", .equalTo, "A")) == nil)
            #expect(TKItem.find(in: view, predicate: .in("id", [3, 8])) === three)
            #expect(coordinator.counters.statements == statements)
            // Pending local changes are what find sees; deleted objects are skipped.
            three?.name = "renamed"
            #expect(TKItem.find(in: view, predicate: .compare("name", .equalTo, "renamed")) === three)
            if let three { view.delete(three) }
            #expect(TKItem.find(in: view, predicate: .compare("name", .equalTo, "renamed")) == nil)
            #expect(coordinator.counters.statements == statements)
            withExtendedLifetime(faults) {}
        }
    }

    @Test func findOrFetchFetchesOnlyWhenNothingRegisteredMatches() throws {
        let s = try TKStack()
        try s.seedAndSettle(Self.tenItems)
        let view = s.view
        let coordinator = s.container.mainCoordinator
        try view.performAndWait {
            var selects = coordinator.counters.statements.select
            let four = try TKItem.findOrFetch(in: view, predicate: .compare("id", .equalTo, 4))
            #expect(four?.id == 4)
            #expect(coordinator.counters.statements.select == selects + 1)  // one fetch
            selects = coordinator.counters.statements.select
            let again = try TKItem.findOrFetch(in: view, predicate: .compare("id", .equalTo, 4))
            #expect(again === four)
            #expect(coordinator.counters.statements.select == selects)  // found registered: no SQL
            #expect(try TKItem.findOrFetch(in: view, predicate: .compare("id", .equalTo, 404)) == nil)
            #expect(coordinator.counters.statements.select == selects + 1)
        }
    }

    @Test func fetchedResultsControllerBuilder() throws {
        let s = try TKStack()
        try s.seedAndSettle(Self.tenItems)
        let view = s.view
        try view.performAndWait {
            let frc = TKItem.fetchedResultsController(in: view, predicate: .compare("price", .greaterThan, 2.0), sectionNameKeyPath: "group")
            #expect(frc.fetchRequest.entityName == "TKItem")
            #expect(frc.fetchRequest.sortDescriptors == [ObjectSortDescriptor("id")])
            #expect(frc.sectionNameKeyPath == "group")
            #expect(frc.managedObjectContext === view)
            try frc.performFetch()
            #expect(frc.sections?.map(\.name) == ["A", "B"])
            #expect(frc.sections?.map(\.numberOfObjects) == [3, 5])
            let sorted = TKItem.fetchedResultsController(in: view, sortedWith: [ObjectSortDescriptor("price", ascending: false)])
            try sorted.performFetch()
            #expect((sorted.fetchedObjects?.first as? TKItem)?.id == 10)
        }
    }

    @Test func insertAndDeleteThroughTheContext() throws {
        let s = try TKStack()
        try s.seedAndSettle(Self.tenItems)
        let view = s.view
        try view.performAndWait {
            let item = try TKItem.insert(into: view)
            #expect(item.isInserted)
            #expect(item.entity.name == "TKItem")
            #expect(item.managedObjectContext === view)
            item.id = 99
            let tag = try TKTag.insert(into: view)
            tag.name = "t"
            item.tag = tag
            #expect(view.insertedObjects.count == 2)

            let deleted = try TKItem.delete(in: view, predicate: .compare("group", .equalTo, "A"))
            #expect(deleted == 5)
            #expect(view.deletedObjects.count == 5)
            #expect(view.deletedObjects.allSatisfy { $0.isDeleted })
            #expect(try TKItem.count(in: view) == 6)  // 10 - 5 + 1 pending
            try view.save()
        }
        let reader = s.container.temporaryContext()
        try reader.performAndWait { () throws in
            #expect(try TKItem.count(in: reader) == 6)
            #expect(try TKItem.count(in: reader, predicate: .compare("group", .equalTo, "A")) == 0)
            #expect(try TKItem.first(in: reader, predicate: .compare("id", .equalTo, 99))?.tag?.name == "t")
        }
    }

    /// Batch delete runs in SQL (no objects loaded) and merges the deletions into the given contexts.
    @Test func batchDeleteMergesIntoGivenContexts() throws {
        let s = try TKStack()
        try s.seedAndSettle(Self.tenItems)
        let view = s.view
        let shown = try s.viewItems([1, 2, 6])
        #expect(shown.count == 3)
        let importer = s.container.importerContext()
        let deleted = try importer.performAndWait {
            let n = try TKItem.batchDelete(in: importer, predicate: .compare("group", .equalTo, "A"), mergeInto: [view])
            #expect(importer.registeredObjectCount == 0)  // nothing was loaded
            return n
        }
        #expect(deleted == 5)
        try view.performAndWait { () throws in
            let byID = Dictionary(uniqueKeysWithValues: shown.map { ($0.id, $0) })
            #expect(byID[1]?.isDeleted == true)
            #expect(byID[2]?.isDeleted == true)
            #expect(byID[6]?.isDeleted == false)
            #expect(try TKItem.count(in: view) == 5)
            #expect(try TKItem.fetch(in: view).map(\.id) == [6, 7, 8, 9, 10])
        }
        try importer.performAndWait { () throws in #expect(try TKItem.count(in: importer) == 5) }
        // Merged directly: the smart merge had nothing to do with it.
        s.drainMain()
        #expect(s.container.counters.mergesPerformed == 1)  // the seed only
        // The merged deletions are pending deletes of rows already gone: the next save ignores them.
        try view.performAndWait {
            #expect(view.deletedObjects.count == 2)
            try view.save()
            #expect(!view.hasChanges)
            #expect(try TKItem.count(in: view) == 5)
        }
    }

    /// Batch update runs in SQL and merges the updates into the given contexts; with `stalenessInterval = 0`
    /// (semantics §6) their loaded objects show the new values.
    @Test func batchUpdateMergesIntoGivenContexts() throws {
        let s = try TKStack()
        try s.seedAndSettle(Self.tenItems)
        let view = s.view
        view.performAndWait { view.stalenessInterval = 0 }
        let shown = try s.viewItems([1, 6])
        let before = view.performAndWait { view.counters }
        let importer = s.container.importerContext()
        let updated = try importer.performAndWait {
            let n = try TKItem.batchUpdate(in: importer, predicate: .compare("group", .equalTo, "A"), values: ["price": 99.0], mergeInto: [view])
            #expect(importer.registeredObjectCount == 0)
            return n
        }
        #expect(updated == 5)
        view.performAndWait {
            let after = view.counters
            #expect(after.merges == before.merges + 1)
            #expect(after.mergeObjectsRefreshed == before.mergeObjectsRefreshed + 1)  // item 1 only (item 6 untouched)
            let byID = Dictionary(uniqueKeysWithValues: shown.map { ($0.id, $0) })
            #expect(byID[1]?.price == 99)
            #expect(byID[6]?.price == 6)
            #expect(!view.hasChanges)
        }
        try importer.performAndWait { () throws in
            #expect(try TKItem.count(in: importer, predicate: .compare("price", .equalTo, 99.0)) == 5)
        }
    }

    // MARK: localInstance(of:)

    @Test func localInstanceAcrossContextsOfOneCoordinator() throws {
        let s = try TKStack()
        try s.seedAndSettle(Self.tenItems)
        let view = s.view
        let temporary = s.container.temporaryContext()
        try view.performAndWait {
            let item = try #require(try TKItem.first(in: view, predicate: .compare("id", .equalTo, 5)))
            temporary.performAndWait {
                let local = temporary.localInstance(of: item)
                #expect(local != nil)
                #expect(local !== item)
                #expect(local?.objectID == item.objectID)
                #expect(local?.managedObjectContext === temporary)
                #expect(local?.id == 5)
                #expect(local?.isFault == false)  // existingObject: loaded
            }
            // Unsaved objects have no local instance elsewhere.
            let unsaved = try TKItem.insert(into: view)
            temporary.performAndWait { #expect(temporary.localInstance(of: unsaved) == nil) }
            // Within its own context it is the same object.
            #expect(view.localInstance(of: item) === item)
        }
    }

    @Test func localInstanceAcrossTheMainAndWriterCoordinators() throws {
        let s = try TKStack()
        try s.seedAndSettle(Self.tenItems)
        let view = s.view
        let importer = s.container.importerContext()
        #expect(importer.persistentStoreCoordinator !== view.persistentStoreCoordinator)
        try importer.performAndWait {
            let item = try #require(try TKItem.first(in: importer, predicate: .compare("id", .equalTo, 7)))
            view.performAndWait {
                let local = view.localInstance(of: item)
                #expect(local?.managedObjectContext === view)
                #expect(local?.objectID == item.objectID)
                #expect(local?.id == 7)
                #expect(local?.name == "item 7")
            }
            // An object saved by the writer coordinator is found through the main coordinator too.
            let fresh = try TKItem.insert(into: importer)
            fresh.id = 42
            fresh.name = "forty-two"
            view.performAndWait { #expect(view.localInstance(of: fresh) == nil) }  // temporary ID
            try importer.save()
            view.performAndWait {
                let local = view.localInstance(of: fresh)
                #expect(local?.name == "forty-two")
                #expect(local?.managedObjectContext === view)
            }
            // Once the row is deleted in the store there is no local instance.
            importer.delete(fresh)
            try importer.save()
            view.performAndWait { #expect(view.localInstance(of: fresh) == nil) }
        }
    }

    @Test func localInstanceOfADeletedRowIsNil() throws {
        let s = try TKStack()
        let ids = try s.seedAndSettle([TKSeed(1), TKSeed(2)])
        let importer = s.container.importerContext()
        let other = s.container.importerContext()
        try importer.performAndWait {
            let one = try #require(try importer.existingObject(with: ids[0]) as? TKItem)
            try other.performAndWait {
                let theirs = try other.existingObject(with: ids[0])
                other.delete(theirs)
                try other.save()
            }
            let temporary = s.container.temporaryContext()
            temporary.performAndWait { #expect(temporary.localInstance(of: one) == nil) }
        }
    }

    // MARK: CoreDataRepresentable

    @Test func enumBackedAttributeStoresItsRawValue() throws {
        let s = try TKStack()
        let importer = s.container.importerContext()
        let id: ManagedObjectID = try importer.performAndWait {
            let item = try TKItem.insert(into: importer)
            item.id = 1
            #expect(item.status == .draft)  // nil stored → coreDataDefault
            item.status = .published
            #expect(item.value(forKey: "status") as? String == "published")
            #expect(item.primitiveValue(forKey: "status") == .string("published"))
            try importer.save()
            return item.objectID
        }
        s.drainMain()
        let view = s.view
        try view.performAndWait {
            let item = try #require(try view.existingObject(with: id) as? TKItem)
            #expect(item.status == .published)
            // Predicates see the raw value.
            #expect(try TKItem.count(in: view, predicate: .compare("status", .equalTo, TKStatus.published.rawValue)) == 1)
            #expect(try TKItem.count(in: view, predicate: .compare("status", .equalTo, "draft")) == 0)
            // An unknown stored value reads as the default case.
            try item.setValue("retired-in-v2", forKey: "status")
            #expect(item.status == .draft)
            try item.setValue(nil, forKey: "status")
            #expect(item.status == .draft)
            item.status = .archived
            try view.save()
        }
        let reader = s.container.temporaryContext()
        try reader.performAndWait {
            let item = try #require(try TKItem.first(in: reader))
            #expect(item.status == .archived)
            let raw = try TKItem.fetchValues(of: ["status"], in: reader)
            #expect(raw.first?["status"] as? String == "archived")
        }
        #expect(TKStatus.fromAttribute("published") == .published)
        #expect(TKStatus.fromAttribute(42) == .draft)
        #expect(TKStatus.fromAttribute(nil) == .draft)
        #expect(TKStatus.archived.attributeValue as? String == "archived")
    }
}
