// Issue 21 item 8: a lightweight migration killed with SIGKILL at a seeded moment leaves either the previous
// version's store, whole, or the next version's, whole: never a half-migrated file.
//
//   ambar-crash migrate-harness [--trials N] [--rows R] [--seed S] [--max-delay-ms M]
//   ambar-crash migrate-child --store FILE [--step-pause-ms P]   open the store with the next version (migrating
//     it, pausing P ms at each of its steps), then exit 0
import Foundation
import ObjectGraph

enum MigrationModels {
    /// v1: Item (id, name, price).
    static func v1() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "id", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                AttributeDescription(name: "name", type: .string),
                AttributeDescription(name: "price", type: .double),
            ]),
        ], versionName: "v1")
    }

    /// v2: `name` renamed `title`, `stock` added (required, default 0).
    static func v2() throws -> ManagedObjectModel {
        var title = AttributeDescription(name: "title", type: .string)
        title.renamingIdentifier = "name"
        return try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "id", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                title,
                AttributeDescription(name: "price", type: .double),
                AttributeDescription(name: "stock", type: .integer64, isOptional: false, defaultValue: .integer(0)),
            ]),
        ], versionName: "v2", previousVersions: [try v1()])
    }

    static var migrating: StoreOptions {
        var options = StoreOptions()
        options.migrateAutomatically = true
        options.inferMappingModel = true
        return options
    }
}

func runMigrateChild(_ arguments: [String]) throws -> Never {
    guard let store = option("--store", in: arguments) else { throw CrashToolError("migrate-child needs --store") }
    // A pause at each step of the migration widens the window a kill can land in (the steps are what it cuts).
    if let pause = option("--step-pause-ms", in: arguments).flatMap({ UInt32($0) }), pause > 0 {
        MigrationHooks.step.withLock { $0 = { _ in usleep(pause * 1000) } }
    }
    let coordinator = PersistentStoreCoordinator(managedObjectModel: try MigrationModels.v2(), name: "child")
    try coordinator.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: store), options: MigrationModels.migrating)
    exit(0)
}

struct MigrationHarness {
    var executable: String
    var trials = 20
    var rows = 20_000
    var seed: UInt64 = 1
    var maxDelayMilliseconds = 400
    /// The child pauses this long at each of the migration's five steps, so kills land inside it.
    var stepPauseMilliseconds = 40

    struct Figures {
        var trials = 0
        /// Killed before the migration committed: the v1 store was found whole.
        var previousVersionWhole = 0
        /// The migration had committed (or the child finished): the v2 store was found whole.
        var nextVersionWhole = 0
        var failures: [String] = []
        var summary: String {
            "migrate-crash-test: trials=\(trials) previousVersionWhole=\(previousVersionWhole) nextVersionWhole=\(nextVersionWhole) failures=\(failures.count)"
        }
    }

    /// A v1 store of `rows` items: id i, name "item i", price i / 2.
    func makeStore(at url: URL) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try MigrationModels.v1(), name: "seed")
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            var request = BatchInsertRequest(entityName: "Item", objects: (1...rows).map { ["id": Int64($0), "name": "item \($0)", "price": Double($0) / 2] })
            request.resultType = .count
            _ = try context.execute(request)
        }
    }

    /// Every row, as the model in use names its text field: (id, text, price).
    func contents(_ coordinator: PersistentStoreCoordinator, textKey: String) throws -> [(Int64, String, Double)] {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])).map {
                ($0.value(forKey: "id") as? Int64 ?? -1, $0.value(forKey: textKey) as? String ?? "", $0.value(forKey: "price") as? Double ?? -1)
            }
        }
    }

    func run(progress: (Int, Figures) -> Void = { _, _ in }) throws -> Figures {
        var figures = Figures()
        var rng = SeededGenerator(seed: seed)
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-migrate-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let expected = (1...rows).map { (Int64($0), "item \($0)", Double($0) / 2) }
        for trial in 1...trials {
            figures.trials = trial
            let store = work.appendingPathComponent("trial-\(trial).sqlite")
            try makeStore(at: store)
            let child = Process()
            child.executableURL = URL(fileURLWithPath: executable)
            child.arguments = ["migrate-child", "--store", store.path, "--step-pause-ms", String(stepPauseMilliseconds)]
            child.standardOutput = FileHandle.nullDevice
            child.standardError = FileHandle.nullDevice
            try child.run()
            usleep(UInt32(Int.random(in: 0..<max(1, maxDelayMilliseconds), using: &rng)) * 1000)
            if child.isRunning { kill(child.processIdentifier, SIGKILL) }
            child.waitUntilExit()
            // Which version is the file now? The previous one opens without migrating; else the next one must.
            let previous = PersistentStoreCoordinator(managedObjectModel: try MigrationModels.v1(), name: "check-v1")
            do {
                try previous.addPersistentStore(type: .sqlite, at: store)
                let found = try contents(previous, textKey: "name")
                if found.count != rows || !zip(found, expected).allSatisfy({ $0 == $1 }) {
                    figures.failures.append("trial \(trial): the previous version's store has \(found.count) of \(rows) rows, or changed values")
                } else {
                    figures.previousVersionWhole += 1
                }
            } catch let error as ObjectGraphError where error.code == .persistentStoreIncompatibleVersionHash {
                let next = PersistentStoreCoordinator(managedObjectModel: try MigrationModels.v2(), name: "check-v2")
                do {
                    try next.addPersistentStore(type: .sqlite, at: store)
                    let found = try contents(next, textKey: "title")
                    if found.count != rows || !zip(found, expected).allSatisfy({ $0 == $1 }) {
                        figures.failures.append("trial \(trial): the migrated store has \(found.count) of \(rows) rows, or changed values")
                    } else {
                        figures.nextVersionWhole += 1
                    }
                } catch {
                    figures.failures.append("trial \(trial): the store is neither version: \(error)")
                }
            }
            // Whatever the kill left, opening with the next version now completes the migration.
            let finish = PersistentStoreCoordinator(managedObjectModel: try MigrationModels.v2(), name: "finish")
            do {
                try finish.addPersistentStore(type: .sqlite, at: store, options: MigrationModels.migrating)
                if try contents(finish, textKey: "title").count != rows { figures.failures.append("trial \(trial): the finished migration lost rows") }
            } catch {
                figures.failures.append("trial \(trial): the migration could not be finished: \(error)")
            }
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store.path + suffix) }
            progress(trial, figures)
        }
        return figures
    }
}
