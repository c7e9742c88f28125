import Ambar
import Foundation
import ObjectGraph
import Synchronization
import Testing
@testable import Workbench

final class SimItem: ManagedObject, ManagedObjectType {
    @Managed("id") var id: Int64
    @Managed("name") var name: String?
}

struct SimItemRecord: ManagedObjectUpdatable, UniqueIdentifiable, Sendable {
    typealias ManagedObjectKind = SimItem
    static var uniqueIDKey: String { "id" }
    var id: Int64
    var name: String
    var uniqueIDValue: Int64 { id }
    func updateProperties(on managedObject: SimItem) { managedObject.name = name }
}

/// Swift concurrency under the scheduler (Docs/simulation.md "Swift concurrency"): `BatchImport` (async) runs
/// one step at a time on the virtual clock, and gives the same result and time every run.
@Suite("Simulated time: async code (Docs/simulation.md)")
struct SimulatedTaskTests {
    static func importOnce(seed: UInt64) throws -> (inserted: Int, updated: Int, time: UInt64, saves: Int) {
        var text = "description: t\nfittedTo: nothing\ncosts:\n"
        for op in CostedOperation.allCases { text += "  \(op.name): { ns: \(op == .rowInserted ? 1000 : op == .blockRun ? 500 : 0) }\n" }
        let scheduler = Scheduler(seed: seed, profile: try CostProfile.parse(text, file: "t.yaml", name: "t"))
        let directory = try TemporaryDirectory("sim-task")
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "SimItem", managedObjectClass: SimItem.self, attributes: [
                AttributeDescription(name: "id", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                AttributeDescription(name: "name", type: .string),
            ]),
        ])
        return try scheduler.run {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: .sqlite, at: directory.file("store.sqlite"))
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            let first = (1...300).map { SimItemRecord(id: $0, name: "first \($0)") }
            let second = (201...450).map { SimItemRecord(id: $0, name: "second \($0)") }
            let a = try scheduler.runTask { try await BatchImport(values: first, chunkSize: 100, batchSize: 100).run(in: context) }
            let b = try scheduler.runTask { try await BatchImport(values: second, chunkSize: 100, batchSize: 100).run(in: context) }
            let saves = context.performAndWait { context.counters.saves }
            return (a.inserted.count + b.inserted.count, a.updated.count + b.updated.count, Clock.now(), saves)
        }
    }

    @Test("BatchImport runs under the scheduler: its chunks are saved in virtual time, the same every run")
    func batchImportIsSimulated() throws {
        let first = try Self.importOnce(seed: 1)
        #expect(first.inserted == 450 && first.updated == 100)
        #expect(first.saves == 6)
        // 450 rows inserted at 1 µs, six queued blocks at 0.5 µs (each import's `perform` block and its task's two
        // jobs: the start, and the resumption when `perform` returns), and 1 ns for each of the fifteen store
        // accesses this profile prices at nothing (no block takes no time): nine, and the
        // six saves' key transactions, each a hold of the file's writer of its own.
        #expect(first.time == 450 * 1000 + 6 * 500 + 15)
        let second = try Self.importOnce(seed: 1)
        #expect(second.time == first.time && second.inserted == first.inserted)
    }
}
