import Foundation
import ObjectGraph
import Synchronization
import Testing
@testable import Workbench

/// What the simulated clock also drives (Docs/simulation.md "What the simulated clock also drives"): a history
/// transaction's timestamp and an asynchronous store load run on the executor, so a run repeats with its seed.
@Suite("Simulated time: history timestamps and asynchronous store loading (Docs/simulation.md)")
struct SimulatedClockDrivesTests {
    /// Three saves of 10 records each on a store with history, under a scheduler of `seed`: each transaction's
    /// timestamp, and the run's virtual end.
    static func historyTimestamps(seed: UInt64) throws -> (timestamps: [Date], end: UInt64) {
        let scheduler = Scheduler(seed: seed, profile: try SimulationTests.profile())
        let directory = try TemporaryDirectory("sim-history")
        let model = try ManagedObjectModel(file: ScenarioLoader.workloadModel)
        return try scheduler.run {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model, name: "history")
            var options = StoreOptions()
            options.persistentHistoryTracking = true
            try coordinator.addPersistentStore(type: .sqlite, at: directory.file("store.sqlite"), options: options)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            for save in 0..<3 {
                try context.performAndWait {
                    for i in 0..<10 { try context.insertNewObject(forEntityName: "Record").setValue(Int64(save * 10 + i), forKey: "id") }
                    try context.save()
                }
            }
            let history = try coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
            return (history.map(\.timestamp), Clock.now())
        }
    }

    // Docs/coredata-behaviour.md §3.6: a transaction's timestamp is the date it was written.
    @Test("A history transaction's timestamp comes from the virtual clock: the same every run of a seed")
    func historyTimestampsRepeatWithTheSeed() throws {
        let first = try Self.historyTimestamps(seed: 7)
        let second = try Self.historyTimestamps(seed: 7)
        #expect(first.timestamps.count == 3)
        #expect(first.timestamps == second.timestamps)
        // Each save sets 10 ids at 1 µs: the transactions are written 10 µs of virtual time apart, as dates
        // counted from the reference date, none after the run's end.
        #expect(first.timestamps == first.timestamps.sorted())
        #expect(first.timestamps.first! > Execution.simulatedDate(0))
        #expect(first.timestamps.last! <= Execution.simulatedDate(first.end))
        let gaps = zip(first.timestamps.dropFirst(), first.timestamps).map { $0.timeIntervalSince($1) }
        #expect(gaps.allSatisfy { abs($0 - 0.000_010) < 0.000_000_5 })
    }

    /// An asynchronous store load under a scheduler of `seed`: how many times its completion handler ran, whether
    /// on a simulated thread with the store added and no error, and the virtual time it ran at.
    static func asynchronousLoad(seed: UInt64) throws -> (calls: Int, simulatedAndLoaded: Bool, at: UInt64) {
        let scheduler = Scheduler(seed: seed, profile: try SimulationTests.profile())
        let directory = try TemporaryDirectory("sim-async-load")
        let model = try ManagedObjectModel(file: ScenarioLoader.workloadModel)
        let reports = Mutex<[(Bool, UInt64)]>([])
        scheduler.run {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model, name: "async")
            var description = PersistentStoreDescription(url: directory.file("store.sqlite"))
            description.shouldAddStoreAsynchronously = true
            coordinator.addPersistentStore(with: description) { _, error in
                let loaded = error == nil && Execution.isSimulated && coordinator.storeURL != nil
                reports.withLock { $0.append((loaded, Clock.now())) }
            }
        }
        return reports.withLock { ($0.count, $0.allSatisfy(\.0), $0.first?.1 ?? 0) }
    }

    // Docs/coredata-behaviour.md §7: `shouldAddStoreAsynchronously` adds the store on a background queue and
    // reports through the completion handler.
    @Test("An asynchronous store load runs on a queue of the simulation and reports once, the same every run")
    func asynchronousLoadIsScheduled() throws {
        let first = try Self.asynchronousLoad(seed: 3)
        let second = try Self.asynchronousLoad(seed: 3)
        #expect(first.calls == 1 && first.simulatedAndLoaded)
        #expect(first.calls == second.calls && first.at == second.at)
    }
}
