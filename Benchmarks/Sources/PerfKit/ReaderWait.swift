import Ambar
import Dispatch
import Foundation
import ObjectGraph
import Synchronization

/// Issue 22 item 8: how long a fetch waits while another context of the same coordinator saves.
///
/// One coordinator with `connectionPoolMaxSize` `pool`; a background context updates every one of `rows` items in
/// one save, while another context fetches 20 items again and again (one fetch after the other, from the moment
/// the save begins until it returns). Returns the longest of those fetches and the save's own time (seconds). With
/// a pool of 1 a fetch that reaches the coordinator during the save's store transaction waits for all of it; with
/// read connections it reads the last committed rows at once.
///
/// `autocheckpoint` false turns SQLite's automatic checkpoint off (`wal_autocheckpoint = 0`): a diagnostic, since the
/// checkpoint that runs inside the save's `COMMIT` holds a WAL lock that new read transactions wait for.
public func fetchWaitDuringSave(pool: Int, rows: Int, autocheckpoint: Bool = true) throws -> (longestFetch: Double, fetches: Int, save: Double) {
    let scratch = Scratch("readers-\(pool)")
    defer { scratch.remove() }
    let coordinator = PersistentStoreCoordinator(managedObjectModel: try OursModel.make(), name: "readers")
    var options = StoreOptions()
    options.connectionPoolMaxSize = pool
    if !autocheckpoint { options.pragmas["wal_autocheckpoint"] = "0" }
    try coordinator.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: scratch.file("store.sqlite")), options: options)
    let background = ManagedObjectContext(concurrencyType: .privateQueue)
    background.persistentStoreCoordinator = coordinator
    try background.performAndWait {
        for start in stride(from: 0, to: rows, by: 10_000) {
            for i in start..<min(start + 10_000, rows) {
                let item = try PerfItem.insert(into: background)
                item.remoteID = Int64(i)
                item.name = "item \(i)"
                item.price = 1
            }
            try background.save()
            background.reset()
        }
        for item in try PerfItem.fetch(in: background) { item.price += 1 }
    }
    let view = ManagedObjectContext(concurrencyType: .privateQueue)
    view.persistentStoreCoordinator = coordinator
    var request = FetchRequest(entityName: PerfItem.entityName, sortDescriptors: [ObjectSortDescriptor("remoteID")])
    request.fetchLimit = 20
    _ = try view.performAndWait { try view.fetch(request) }  // warm: statements prepared, a reader open

    let saving = Atomic<Bool>(true)
    let saveTime = Mutex<Double>(0)
    let started = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
    Thread {
        started.signal()
        let t0 = nowNanos()
        try? background.performAndWait { try background.save() }
        saveTime.withLock { $0 = Double(nowNanos() - t0) / 1e9 }
        saving.store(false, ordering: .sequentiallyConsistent)
        done.signal()
    }.start()
    started.wait()
    var longest = 0.0, fetches = 0
    while saving.load(ordering: .sequentiallyConsistent) {
        let t0 = nowNanos()
        let found = try view.performAndWait { try view.fetch(request).count }
        precondition(found == 20)
        longest = max(longest, Double(nowNanos() - t0) / 1e9)
        fetches += 1
        view.performAndWait { view.reset() }
    }
    done.wait()
    return (longest, fetches, saveTime.withLock { $0 })
}
