import Foundation
import Testing
@testable import ObjectGraph

// A fault a fetch made fires from the coordinator's row cache (Docs/coredata-behaviour.md §2.3): with the row the
// cache holds when it fires, counted as a cache hit, whatever the fetch itself read. The fetch keeps its row with the
// fault only as a way to find that row without a lookup; these tests state the rule for every way the cache's row
// can change between the fetch and the firing.
@Suite struct FetchedFaultRowTests {
    /// The item with `id`, fetched as a fault in `context` (not fired).
    static func fault(_ id: Int64, in context: ManagedObjectContext) throws -> Item {
        try context.performAndWait {
            let items = try fetchItems(context, .compare("id", .equalTo, id))
            let item = try #require(items.first)
            #expect(item.isFault)
            return item
        }
    }

    /// A store of three items and item 2 fetched as a fault in a reader context of its coordinator.
    static func seededFault() throws -> (TestStack, ManagedObjectContext, Item) {
        let stack = try TestStack()
        try stack.seed(3)
        let reader = stack.context(name: "reader")
        return (stack, reader, try fault(2, in: reader))
    }

    /// Renames item `id` in a context of `coordinator` and saves.
    static func rename(_ id: Int64, to name: String, on coordinator: PersistentStoreCoordinator) throws {
        let writer = ManagedObjectContext(concurrencyType: .privateQueue)
        writer.persistentStoreCoordinator = coordinator
        try writer.performAndWait {
            let item = try #require(try fetchItems(writer, .compare("id", .equalTo, id)).first)
            item.name = name
            try writer.save()
        }
    }

    @Test("§2.3: fetched faults fire from the row cache, one hit each and no statement")
    func fetchedFaultsFireFromTheCacheWithoutSQL() throws {
        let stack = try TestStack()
        try stack.seed(20)
        let reader = stack.context(name: "reader")
        try reader.performAndWait {
            let items = try fetchItems(reader)
            // Each fault keeps the row its fetch cached, and gives it up when it fires.
            #expect(items.allSatisfy { $0.fetchedRow != nil })
            let (hits, misses) = (stack.coordinator.counters.rowCacheHits, stack.coordinator.counters.rowCacheMisses)
            let statements = stack.coordinator.counters.statements
            #expect(items.map(\.name) == (1...20).map { "item \($0)" })
            #expect(items.allSatisfy { $0.fetchedRow == nil })
            #expect(stack.coordinator.counters.rowCacheHits - hits == 20)
            #expect(stack.coordinator.counters.rowCacheMisses == misses)
            #expect(stack.coordinator.counters.statements == statements)
        }
    }

    @Test("§2.3: a save through the same coordinator after the fetch is what the fault shows when it fires")
    func faultFiresWithTheRowASaveCachedAfterTheFetch() throws {
        let (stack, reader, item) = try Self.seededFault()
        try Self.rename(2, to: "renamed", on: stack.coordinator)
        reader.performAndWait { #expect(item.name == "renamed") }
    }

    @Test("§2.3, §2.4: a newer row another fetch cached after this one is what the fault shows")
    func faultFiresWithTheNewerRowAnotherFetchCached() throws {
        let (stack, reader, item) = try Self.seededFault()
        // Another coordinator on the file saves; this coordinator's cache learns of it only through a read.
        try Self.rename(2, to: "elsewhere", on: try stack.secondCoordinator())
        let other = stack.context(name: "other")
        try other.performAndWait {
            var request = FetchRequest(entityName: "Item", predicate: .compare("id", .equalTo, Int64(2)))
            request.returnsObjectsAsFaults = false
            _ = try other.fetch(request)
        }
        reader.performAndWait { #expect(item.name == "elsewhere") }
    }

    @Test("§2.3: a fault of a context with a zero staleness reads the store, not the row its fetch cached")
    func zeroStalenessReadsTheStore() throws {
        let (stack, reader, item) = try Self.seededFault()
        let misses = stack.coordinator.counters.rowCacheMisses
        reader.performAndWait {
            reader.stalenessInterval = 0
            #expect(item.name == "item 2")
        }
        #expect(stack.coordinator.counters.rowCacheMisses - misses == 1)
    }

    @Test("§2.3, §4: a fault whose row was deleted after the fetch finds it gone (shouldDeleteInaccessibleFaults)")
    func rowDeletedAfterTheFetchFailsTheFault() throws {
        let (stack, reader, item) = try Self.seededFault()
        let writer = stack.context(name: "writer")
        try writer.performAndWait {
            writer.delete(try #require(try fetchItems(writer, .compare("id", .equalTo, Int64(2))).first))
            try writer.save()
        }
        reader.performAndWait {
            #expect(item.name == nil)
            #expect(item.isDeleted)
        }
    }

    @Test("A typed to-one declared as the related object's class, or as its parent entity's class, reads the object (§11.3)")
    func typedToOneOfOwnOrParentClass() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Owner", managedObjectClass: Owner.self,
                              relationships: [RelationshipDescription(name: "pet", destination: "Animal", inverse: "owner"),
                                              RelationshipDescription(name: "dog", destination: "Dog", inverse: "walker")]),
            EntityDescription(name: "Animal", managedObjectClass: Animal.self,
                              attributes: [AttributeDescription(name: "name", type: .string)],
                              relationships: [RelationshipDescription(name: "owner", destination: "Owner", inverse: "pet")]),
            EntityDescription(name: "Dog", managedObjectClass: Dog.self,
                              relationships: [RelationshipDescription(name: "walker", destination: "Owner", inverse: "dog")], parent: "Animal"),
        ])
        let stack = try TestStack(model: model)
        let context = stack.context()
        try context.performAndWait {
            let owner = Owner(context: context)
            let dog = Dog(context: context)
            try dog.setValue("rex", forKey: "name")
            owner.pet = dog
            owner.dog = dog
            try context.save()
        }
        let reader = stack.context()
        try reader.performAndWait {
            let owner = try #require(try reader.fetch(FetchRequest(entityName: "Owner"), as: Owner.self).first)
            let pet = try #require(owner.pet)
            #expect(pet is Dog)
            #expect(pet.value(forKey: "name") as? String == "rex")
            #expect(owner.dog === pet)
        }
    }
}

final class Owner: ManagedObject {
    @Managed("pet") var pet: Animal?
    @Managed("dog") var dog: Dog?
}

class Animal: ManagedObject {}

final class Dog: Animal {}
