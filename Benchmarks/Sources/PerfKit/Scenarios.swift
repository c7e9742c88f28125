import Ambar
import Foundation
import GRDB
import ObjectGraph
import Synchronization

/// The median of a non-empty list.
public func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

// MARK: Merge into a view context holding 10 objects

/// The main-queue time of merging one background save that updates items `0..<n`, into a view context holding
/// items 0..<10 (loaded). The store must already hold at least `n` items. Returns seconds per merge, one per rep.
/// Each rep writes the prices of round `firstRound + rep`: calls that go on from one another pass distinct rounds,
/// so every save changes every item.
///
/// With an `evictor`, the main queue is held from before the save until the save returned, and then streams the
/// evictor's buffer through its caches (that time is not counted) before the merge runs: every merge starts from
/// the same cold caches, whatever the save before it touched. Without it, the merge finds the caches as the save
/// left them (a save of 100,000 objects streams far more than the last-level cache; one of 1,000 does not).
public func mergeMainQueueTimes(stack: OursStack, n: Int, reps: Int, firstRound: Int = 0, evictor: CacheEvictor? = nil) throws -> [Double] {
    let view = stack.container.viewContext
    let visible: [PerfItem] = try view.performAndWait {
        let items = try PerfItem.fetch(in: view, predicate: .compare("remoteID", .lessThan, 10))
        for item in items { keep(item.price) }
        return items
    }
    precondition(visible.count == 10)
    var times: [Double] = []
    for rep in firstRound..<(firstRound + reps) {
        let importer = stack.container.importerContext()
        let merged = stack.container.counters.mergesPerformed
        // The importer's objects are freed only after the merge ran: freeing N objects on the benchmark's thread
        // while the main queue merges would measure that cleanup's pressure on the shared caches and allocator,
        // not the merge.
        let (before, items): ((nanos: UInt64, blocks: Int), [PerfItem]) = try importer.performAndWait {
            let items = try PerfItem.fetch(in: importer, predicate: .compare("remoteID", .lessThan, n))
            precondition(items.count == n)
            for item in items { item.price = Schema.price(Int(item.remoteID), round: 1000 + rep) }
            stack.drainMain()
            let saved = DispatchSemaphore(value: 0)
            // Queued before the save, so the merge the save schedules runs after it, on the same thread.
            if let evictor { stack.main.async { evictor.evict(after: saved) } }
            defer { saved.signal() }  // also when the save throws: the held main queue must go on
            let before = stack.clock.reading
            try importer.save()
            return (before, items)
        }
        stack.drainMain()
        let after = stack.clock.reading
        importer.performAndWait { withExtendedLifetime(items) {} }
        precondition(stack.container.counters.mergesPerformed == merged + 1, "the save was not merged")
        let price = view.performAndWait { visible[3].price }
        precondition(price == Schema.price(3, round: 1000 + rep), "the view did not see the update")
        times.append(Double(after.nanos - before.nanos - (evictor?.takeUntimedNanos() ?? 0)) / 1e9)
    }
    withExtendedLifetime(visible) {}
    return times
}

/// A buffer three times the size of the last-level cache (32 MiB when the system does not tell it); streaming it
/// through a thread's caches leaves nothing of what that thread, or another, touched before.
public final class CacheEvictor: @unchecked Sendable {  // used by one queue at a time (the main queue's blocks)
    private var buffer: [UInt64]
    public let bytes: Int
    /// CPU time of the last ``evict(after:)`` (waiting and streaming), to be taken out of the figure it preceded.
    private let untimed = Atomic<UInt64>(0)

    public init() {
        var llc = 32 << 20
        if let text = try? String(contentsOfFile: "/sys/devices/system/cpu/cpu0/cache/index3/size", encoding: .utf8) {
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.hasSuffix("K"), let k = Int(trimmed.dropLast()) { llc = k << 10 }
            if trimmed.hasSuffix("M"), let m = Int(trimmed.dropLast()) { llc = m << 20 }
        }
        bytes = 3 * llc
        buffer = [UInt64](repeating: 1, count: bytes / 8)
    }

    /// Waits for `signal`, then evicts; records the CPU time this took for ``takeUntimedNanos()``.
    public func evict(after signal: DispatchSemaphore) {
        let t0 = threadCPUNanos()
        signal.wait()
        evict()
        untimed.store(threadCPUNanos() - t0, ordering: .relaxed)
    }

    /// The CPU time of the last ``evict(after:)``, once (0 after that).
    public func takeUntimedNanos() -> UInt64 { untimed.exchange(0, ordering: .relaxed) }

    /// Reads and writes one word of every cache line of the buffer.
    public func evict() {
        var sum: UInt64 = 0
        buffer.withUnsafeMutableBufferPointer { words in
            var i = 0
            while i < words.count {
                words[i] &+= 1
                sum &+= words[i]
                i += 8  // 64-byte lines
            }
        }
        keep(sum)
    }
}

// MARK: Fetched results controller over 20 objects during an import

final class CountingDelegate: FetchedResultsControllerDelegate, @unchecked Sendable {  // used on the view's queue
    var contentChanges = 0
    func controllerDidChangeContent(_ controller: FetchedResultsController) { contentChanges += 1 }
}

public struct ObservationResult: Sendable {
    /// Seconds per merge (ours: main-queue time) or per re-fetch (GRDB).
    public var perEvent: Double
    public var events: Int
    /// Content changes seen by the view (ours: FRC did-change calls; GRDB: values delivered).
    public var deliveries: Int
    /// GRDB only: main-queue time per delivered value.
    public var mainPerDelivery: Double = 0
}

/// Inserts items `range` into `context`, each with its values and group, as every import of ours does.
func insertChunk(_ context: ManagedObjectContext, _ groups: [PerfGroup], _ range: Range<Int>) throws {
    for i in range {
        let item = try PerfItem.insert(into: context)
        item.remoteID = Int64(i)
        item.name = Schema.name(i)
        item.price = Schema.price(i)
        item.createdAt = Schema.date(i)
        item.group = groups[Schema.group(i)]
    }
}

/// Ours: a view context with an FRC over items 0..<20 while `total` items are imported in saves of `chunk`,
/// each save also updating one of the 20. Main-queue time per merge. `evaluation` is Core Data's controller (each
/// merged insert's fault fired to evaluate it) or the batched one (one query per 500 merged faults).
public func oursFRCDuringImport(total: Int, chunk: Int, evaluation: FetchedResultsController.ChangeEvaluation = .coreData) throws -> ObservationResult {
    let stack = try OursStack(label: "frc")
    try stack.importItems(0..<20, chunk: 20, reset: false)
    stack.drainMain()
    let view = stack.container.viewContext
    let delegate = CountingDelegate()
    let frc = try view.performAndWait {
        let request = PerfItem.fetchRequest(predicate: .compare("remoteID", .lessThan, 20), sortedWith: [ObjectSortDescriptor("remoteID")])
        let frc = FetchedResultsController(fetchRequest: request, managedObjectContext: view, changeEvaluation: evaluation)
        frc.delegate = delegate
        try frc.performFetch()
        for case let item as PerfItem in frc.fetchedObjects ?? [] { keep(item.price) }
        return frc
    }
    let merged = stack.container.counters.mergesPerformed
    let before = stack.clock.reading
    let importer = stack.container.importerContext()
    try importer.performAndWait {
        let groups = try OursStack.groups(in: importer)
        var round = 0
        for start in stride(from: 20, to: 20 + total, by: chunk) {
            try insertChunk(importer, groups, start..<min(start + chunk, 20 + total))
            let visible = try PerfItem.fetch(in: importer, predicate: .compare("remoteID", .equalTo, round % 20))
            visible[0].price += 1
            round += 1
            try importer.save()
        }
    }
    stack.drainMain()
    let after = stack.clock.reading
    let merges = stack.container.counters.mergesPerformed - merged
    let changes = view.performAndWait { delegate.contentChanges }
    precondition(view.performAndWait { frc.fetchedObjects?.count } == 20)
    return ObservationResult(perEvent: Double(after.nanos - before.nanos) / 1e9 / Double(max(1, merges)), events: merges, deliveries: changes)
}

/// GRDB: a `ValueObservation` of the same 20 rows (re-fetched after each commit, delivered on a serial queue
/// standing for the main queue) during the same import. Time per re-fetch.
public func grdbObservationDuringImport(total: Int, chunk: Int) throws -> ObservationResult {
    let peer = try GRDBPeer()
    try peer.importItems(0..<20, chunk: 20)
    struct Stats { var fetchNanos: UInt64 = 0; var fetches = 0; var mainNanos: UInt64 = 0; var deliveries = 0; var lastSum = 0.0 }
    let stats = Mutex(Stats())
    let observation = ValueObservation.tracking { db -> [GItem] in
        let t0 = threadCPUNanos()
        let items = try GItem.filter(Column("remoteID") < 20).order(Column("remoteID")).fetchAll(db)
        let t = threadCPUNanos() - t0
        stats.withLock { $0.fetchNanos += t; $0.fetches += 1 }
        return items
    }
    let main = DispatchQueue(label: "grdb.main")
    let cancellable = observation.start(in: peer.pool, scheduling: .async(onQueue: main), onError: { error in
        fatalError("observation failed: \(error)")
    }, onChange: { items in
        let t0 = threadCPUNanos()
        let sum = items.reduce(0) { $0 + $1.price }
        let t = threadCPUNanos() - t0
        stats.withLock { $0.mainNanos += t; $0.deliveries += 1; $0.lastSum = sum }
    })
    // The first value.
    while stats.withLock({ $0.deliveries }) == 0 { usleep(1000) }
    stats.withLock { $0 = Stats(lastSum: $0.lastSum) }
    var round = 0
    try peer.importItems(20..<(20 + total), chunk: chunk) { db, _ in
        try db.execute(sql: "UPDATE item SET price = price + 1 WHERE remoteID = ?", arguments: [round % 20])
        round += 1
    }
    let expected = try peer.pool.read { db in try Double.fetchOne(db, sql: "SELECT SUM(price) FROM item WHERE remoteID < 20")! }
    let deadline = nowNanos() + 10_000_000_000
    while stats.withLock({ $0.lastSum }) != expected && nowNanos() < deadline { usleep(1000) }
    main.sync {}
    cancellable.cancel()
    let s = stats.withLock { $0 }
    return ObservationResult(perEvent: Double(s.fetchNanos) / 1e9 / Double(max(1, s.fetches)), events: s.fetches, deliveries: s.deliveries,
                             mainPerDelivery: Double(s.mainNanos) / 1e9 / Double(max(1, s.deliveries)))
}

// MARK: Memory of a chunked import

public struct MemoryResult: Sendable {
    public var peakAboveStart: Int64
    public var seconds: Double
    public var samples: Int
}

/// Ours: imports `n` items through the importer context, saving and resetting every `chunk`, and samples
/// `allocated` (bytes, from the caller's probe) every millisecond and after every save. Peak above the start.
public func oursChunkedImportPeak(n: Int, chunk: Int, allocated: @escaping @Sendable () -> Int64) throws -> MemoryResult {
    let stack = try OursStack(label: "memory")
    stack.drainMain()
    let start = allocated()
    let peak = Atomic<Int64>(start)
    let samples = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
    let done = DispatchSemaphore(value: 0)
    let sampler = Thread {
        while !stop.load(ordering: .relaxed) {
            let v = allocated()
            _ = peak.max(v, ordering: .relaxed)
            samples.add(1, ordering: .relaxed)
            usleep(1000)
        }
        done.signal()
    }
    sampler.start()
    let seconds = try timed {
        try stack.importItems(0..<n, chunk: chunk, reset: true) { _ in
            _ = peak.max(allocated(), ordering: .relaxed)
        }
        stack.drainMain()
    }
    _ = peak.max(allocated(), ordering: .relaxed)
    stop.store(true, ordering: .relaxed)
    done.wait()
    return MemoryResult(peakAboveStart: peak.load(ordering: .relaxed) - start, seconds: seconds, samples: samples.load(ordering: .relaxed))
}
