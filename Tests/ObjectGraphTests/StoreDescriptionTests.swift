import Foundation
import Synchronization
import Testing
@testable import ObjectGraph

/// Store descriptions with Core Data's defaults, accepted by the coordinator (semantics §7,
/// "Store descriptions").
@Suite struct StoreDescriptionTests {
    @Test("A description has Core Data's defaults, and its option keys set the store's options")
    func defaultsAndOptionKeys() {
        var d = PersistentStoreDescription(url: URL(fileURLWithPath: "/tmp/x.sqlite"))
        #expect(d.type == .sqlite && !d.isReadOnly && !d.shouldAddStoreAsynchronously)
        #expect(d.shouldMigrateStoreAutomatically && d.shouldInferMappingModelAutomatically)
        #expect(d.storeOptions == StoreOptions())
        d.setOption(true, forKey: PersistentStoreDescription.persistentHistoryTrackingKey)
        d.setOption(true, forKey: PersistentStoreDescription.remoteChangeNotificationPostOptionKey)
        d.setOption(false, forKey: PersistentStoreDescription.migrateAutomaticallyOptionKey)
        d.setOption(true, forKey: "SomeOtherKey")
        d.setValue("FULL", forPragmaNamed: "synchronous")
        d.timeout = 2
        #expect(d.storeOptions.persistentHistoryTracking && d.storeOptions.remoteChangeNotifications)
        #expect(!d.shouldMigrateStoreAutomatically)
        #expect(d.options["SomeOtherKey"] == "true" && d.options[PersistentStoreDescription.persistentHistoryTrackingKey] == "true")
        #expect(d.sqlitePragmas == ["synchronous": "FULL"] && d.storeOptions.busyTimeout == 2)
    }

    @Test("The coordinator adds a described store synchronously or on a background queue; its options take effect")
    func coordinatorAddsDescribedStore() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("desc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try makeModel()
        var description = PersistentStoreDescription(url: directory.appendingPathComponent("a.sqlite"))
        description.setOption(true, forKey: PersistentStoreDescription.persistentHistoryTrackingKey)
        let sync = PersistentStoreCoordinator(managedObjectModel: model, name: "sync")
        let calledBeforeReturn = Mutex(false)
        sync.addPersistentStore(with: description) { _, error in
            #expect(error == nil)
            calledBeforeReturn.withLock { $0 = true }
        }
        #expect(calledBeforeReturn.withLock { $0 })  // synchronous by default: done before the call returns
        #expect(try sync.currentPersistentHistoryToken() != nil)  // history tracking is on
        description.shouldAddStoreAsynchronously = true
        description.isReadOnly = true
        let async = PersistentStoreCoordinator(managedObjectModel: model, name: "async")
        let calls = Mutex(0)
        let failure: String? = await withCheckedContinuation { continuation in
            async.addPersistentStore(with: description) { added, error in
                #expect(added.isReadOnly)
                #expect(async.storeURL?.lastPathComponent == "a.sqlite")  // loaded when the handler runs
                calls.withLock { $0 += 1 }
                continuation.resume(returning: error.map { "\($0)" })
            }
        }
        #expect(failure == nil)
        #expect(async.storeURL?.lastPathComponent == "a.sqlite")
        #expect(calls.withLock { $0 } == 1)
        // Another model's store fails with 134100 whatever the migration flags say (no model versions yet).
        let other = try ManagedObjectModel(entities: [EntityDescription(name: "Other", attributes: [AttributeDescription(name: "x", type: .string)])])
        for migrate in [true, false] {
            var mismatched = PersistentStoreDescription(url: directory.appendingPathComponent("a.sqlite"))
            mismatched.shouldMigrateStoreAutomatically = migrate
            #expect(throws: ObjectGraphError.self) { try PersistentStoreCoordinator(managedObjectModel: other, name: "other").addPersistentStore(with: mismatched) }
            do {
                try PersistentStoreCoordinator(managedObjectModel: other, name: "other").addPersistentStore(with: mismatched)
            } catch let error as ObjectGraphError {
                #expect(error.code == .persistentStoreIncompatibleVersionHash)
            }
        }
    }
}
