import Ambar
import Foundation
import ObjectGraph
import Synchronization

public final class PerfItem: ManagedObject, ManagedObjectType {
    public static var entityName: String { "Item" }
    @Managed("remoteID") public var remoteID: Int64
    @Managed("name") public var name: String?
    @Managed("price") public var price: Double
    @Managed("createdAt") public var createdAt: Date?
    @Managed("group") public var group: PerfGroup?
}

public final class PerfGroup: ManagedObject, ManagedObjectType {
    public static var entityName: String { "Group" }
    @Managed("name") public var name: String?
    @Managed("items") public var items: Set<PerfItem>
}

/// The value an update brings for one item, found by its unique ID (the Ambar import operation's input).
public struct PerfRecord: ManagedObjectUpdatable, UniqueIdentifiable, Sendable {
    public typealias ManagedObjectKind = PerfItem
    public static var uniqueIDKey: String { "remoteID" }
    public var uniqueIDValue: Int64
    public var name: String
    public var price: Double
    public var createdAt: Date
    public init(_ i: Int, round: Int) {
        uniqueIDValue = Int64(i)
        name = Schema.name(i) + " r\(round)"
        price = Schema.price(i, round: round)
        createdAt = Schema.date(i, round: round)
    }
    public func updateProperties(on item: PerfItem) {
        item.name = name
        item.price = price
        item.createdAt = createdAt
    }
}

public enum OursModel {
    public static func make() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Item", managedObjectClass: PerfItem.self,
                attributes: [
                    AttributeDescription(name: "remoteID", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "price", type: .double, isOptional: false, defaultValue: .double(0)),
                    AttributeDescription(name: "createdAt", type: .date),
                ],
                relationships: [RelationshipDescription(name: "group", destination: "Group", inverse: "items")],
                uniquenessConstraints: [["remoteID"]]),
            EntityDescription(
                name: "Group", managedObjectClass: PerfGroup.self,
                attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "group", toMany: true)]),
        ])
    }
}

/// Busy time of a main queue: every block it runs is timed by the queue's `around` hook, in CPU time of the
/// thread that runs it (a wall clock would count the time the thread was preempted on a shared machine).
public final class MainQueueClock: Sendable {
    private let busy = Atomic<UInt64>(0)
    private let blocks = Atomic<Int>(0)
    public init() {}
    public func makeQueue(label: String) -> ContextQueue {
        ContextQueue(label: label, around: { [self] block in
            let t0 = threadCPUNanos()
            block()
            busy.add(threadCPUNanos() - t0, ordering: .relaxed)
            blocks.add(1, ordering: .relaxed)
        })
    }
    /// Busy nanoseconds and blocks run so far.
    public var reading: (nanos: UInt64, blocks: Int) { (busy.load(ordering: .relaxed), blocks.load(ordering: .relaxed)) }
}

/// The Ambar stack on a fresh SQLite store, with a timed main queue.
public final class OursStack: @unchecked Sendable {  // immutable after init
    public let scratch: Scratch
    public let clock = MainQueueClock()
    public let main: ContextQueue
    public let container: AmbarContainer

    public init(label: String = "ours") throws {
        scratch = Scratch(label)
        main = clock.makeQueue(label: "perf.main")
        var options = AmbarContainer.Options()
        options.mainQueue = main
        container = try AmbarContainer(model: try OursModel.make(), storeURL: scratch.url, options: options)
        let context = container.importerContext()
        try context.performAndWait {
            for g in 0..<Schema.groupCount {
                let group = try PerfGroup.insert(into: context)
                group.name = "group \(g)"
            }
            try context.save()
        }
        drainMain()
    }

    /// Waits until every block queued on the main queue so far has run.
    public func drainMain() { main.sync {} }

    /// The groups in seeding order.
    public static func groups(in context: ManagedObjectContext) throws -> [PerfGroup] {
        try PerfGroup.fetch(in: context, sortedWith: [ObjectSortDescriptor("name")]).sorted { a, b in
            Int(a.name!.dropFirst(6))! < Int(b.name!.dropFirst(6))!
        }
    }

    /// Inserts items `range` through the importer context, saving every `chunk`; with `reset`, the context is
    /// reset after each save (the chunked import). `afterSave` is told the number imported so far.
    public func importItems(_ range: Range<Int>, chunk: Int, reset: Bool, afterSave: ((Int) -> Void)? = nil) throws {
        let context = container.importerContext()
        try context.performAndWait {
            var groups = try Self.groups(in: context)
            for start in stride(from: range.lowerBound, to: range.upperBound, by: chunk) {
                try insertChunk(context, groups, start..<min(start + chunk, range.upperBound))
                try context.save()
                if reset {
                    context.reset()
                    groups = try Self.groups(in: context)
                }
                afterSave?(min(start + chunk, range.upperBound) - range.lowerBound)
            }
        }
    }

    /// Updates items `range` by unique ID with the Ambar import operation (`BatchImport`, chunks of `chunk`), saving
    /// every chunk as the peers commit every chunk (`batchSize`; the operation's default saves once per 50,000).
    public func updateItems(_ range: Range<Int>, chunk: Int, round: Int) throws {
        let records = range.map { PerfRecord($0, round: round) }
        let context = container.importerContext()
        let changes = try context.performAndWait {
            try BatchImport(values: records, chunkSize: chunk, batchSize: chunk).runSynchronously(in: context)
        }
        precondition(changes.updated.count == range.count && changes.inserted.isEmpty, "update touched \(changes.updated.count) of \(range.count)")
    }

    /// Fetches every item as faults in a fresh context and fires each fault, reading every property.
    public func fetchAll() throws -> Int {
        let context = container.temporaryContext()
        return try context.performAndWait {
            let items = try PerfItem.fetch(in: context)
            var sum = 0.0
            var chars = 0
            for item in items {
                sum += item.price
                chars += item.name?.utf8.count ?? 0
                sum += item.createdAt?.timeIntervalSinceReferenceDate ?? 0
                if item.group != nil { chars += 1 }
            }
            keep(sum)
            return items.count + chars - chars
        }
    }

    /// One `save()` of `n` items (already in the store) whose name, price and date were changed
    /// in one importer context: wall-clock seconds and CPU seconds of the saving thread (the save runs on it,
    /// SQLite included; a shared machine's preemption is in the first, not the second). The fetch and the changes
    /// are not timed; the objects stay alive past the save, as an app that holds them keeps them.
    public func timeOneSave(of n: Int, round: Int) throws -> (wall: Double, cpu: Double) {
        let context = container.importerContext()
        let result = try context.performAndWait {
            let items = try PerfItem.fetch(in: context, predicate: .compare("remoteID", .lessThan, n))
            precondition(items.count == n, "found \(items.count) of \(n)")
            for item in items {
                let record = PerfRecord(Int(item.remoteID), round: round)
                record.updateProperties(on: item)
            }
            let c0 = threadCPUNanos()
            let wall = try timed { try context.save() }
            let cpu = Double(threadCPUNanos() - c0) / 1e9
            withExtendedLifetime(items) {}
            return (wall, cpu)
        }
        drainMain()
        return result
    }

    deinit { scratch.remove() }
}
