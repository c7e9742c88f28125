import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph

final class IOShape: ManagedObject, ManagedObjectType {}
final class IOCircle: ManagedObject, ManagedObjectType {}

/// Docs/coredata-behaviour.md §11.5: a count observer of a parent entity recounts when an object
/// of a sub-entity changes, as the fetch it counts with includes sub-entities.
@Suite struct InheritanceObserverTests {
    @Test("§11.5: CountObserver of a parent counts and notices its sub-entities' objects")
    func countObserverIncludesSubentities() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "IOShape", managedObjectClass: IOShape.self, attributes: [AttributeDescription(name: "area", type: .double)], isAbstract: true),
            EntityDescription(name: "IOCircle", managedObjectClass: IOCircle.self, attributes: [AttributeDescription(name: "radius", type: .double)], parent: "IOShape"),
        ])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("inheritance-observer-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("store.sqlite"), options: StoreOptions())
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        let counts = TKLog<Int>()
        let observer = try context.performAndWait {
            let o = CountObserver<IOShape>(context: context)
            try o.startObserving { counts.append($0) }
            return o
        }
        #expect(counts.take() == [0])
        try context.performAndWait {
            _ = try IOCircle.insert(into: context)
            context.processPendingChanges()
        }
        #expect(counts.take() == [1])
        #expect(observer.recounts == 1)
    }
}
