import Ambar
import Dispatch
import Foundation
import ObjectGraph
import Synchronization

/// How long a fetch waits while another context of the same coordinator saves.
///
/// One coordinator with `connectionPoolMaxSize` `pool`; a background context updates every one of `rows` items in
/// one save, while another context fetches 20 items again and again (one fetch after the other, from the moment
/// the save begins until it returns). Returns the longest of those fetches, split by the thread's scheduler accounting,
/// and the save's own time (``ReaderWait``). With
/// a pool of 1 a fetch that reaches the coordinator during the save's store transaction waits for all of it; with
/// read connections it reads the last committed rows at once.
///
/// `autocheckpoint` false turns SQLite's automatic checkpoint off (`wal_autocheckpoint = 0`): a diagnostic, since the
/// checkpoint that runs inside the save's `COMMIT` holds a WAL lock that new read transactions wait for.
public func fetchWaitDuringSave(pool: Int, rows: Int, autocheckpoint: Bool = true) throws -> ReaderWait {
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
                item.name = Schema.name(i)
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
    var result = ReaderWait()
    while saving.load(ordering: .sequentiallyConsistent) {
        // The clock reads bracket the schedstat reads: a preemption on the way out of reading the file is inside the
        // wall time, so the wall time less the time runnable without a CPU never comes out too small.
        let t0 = nowNanos()
        let s0 = threadSchedStat(), c0 = threadCPUNanos()
        let found = try view.performAndWait { try view.fetch(request).count }
        let c1 = threadCPUNanos(), s1 = threadSchedStat()
        let wall = nowNanos() - t0
        precondition(found == 20)
        // CPU time from the thread's CPU clock (exact); the run-queue delay from schedstat, which is up to date while
        // the thread runs (its CPU total there lags by up to a scheduler tick).
        let onCPU = Double(c1 - c0) / 1e9
        var runQueue = 0.0
        if let s0, let s1 { runQueue = Double(s1.runQueue &- s0.runQueue) / 1e9 }
        let seconds = Double(wall) / 1e9
        let blocked = max(0, seconds - onCPU - runQueue)
        if seconds > result.longestFetch { (result.longestFetch, result.longestParts) = (seconds, (onCPU, runQueue, blocked)) }
        result.longestBlocked = max(result.longestBlocked, blocked)
        result.longestWithACPU = max(result.longestWithACPU, max(0, seconds - runQueue))
        view.performAndWait { view.reset() }
    }
    done.wait()
    result.save = saveTime.withLock { $0 }
    return result
}

/// What ``fetchWaitDuringSave(pool:rows:autocheckpoint:)`` measured (seconds).
public struct ReaderWait: Sendable {
    /// The longest fetch, wall clock.
    public var longestFetch = 0.0
    /// That fetch's wall time split by the thread's scheduler accounting (`/proc/thread-self/schedstat`): on a CPU,
    /// runnable but waiting for a CPU (the machine's other threads: on 2 cores the save's own thread is one), and
    /// blocked (a lock, a condition, I/O: the part a reader waits for the writer).
    public var longestParts = (onCPU: 0.0, runQueue: 0.0, blocked: 0.0)
    /// The longest time any fetch was blocked.
    public var longestBlocked = 0.0
    /// The longest fetch counting only the time its thread had a CPU or was blocked: its wall time less the time it
    /// was runnable but waited for a CPU (a lock the kernel makes a waiter spin on counts as on a CPU).
    public var longestWithACPU = 0.0
    /// The save's wall time.
    public var save = 0.0
}
