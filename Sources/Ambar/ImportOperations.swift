import Foundation
import ObjectGraph

/// A value or object with a unique identifier stored in an attribute (PeakCoreData's `UniqueIdentifiable`).
public protocol UniqueIdentifiable {
    associatedtype UniqueID: Hashable & AttributeConvertible
    /// The attribute that holds the identifier.
    static var uniqueIDKey: String { get }
    /// This value's identifier.
    var uniqueIDValue: UniqueID { get }
}

/// An intermediate value (for example a decoded JSON record) that can fill a managed object
/// (PeakCoreData's `ManagedObjectUpdatable`).
public protocol ManagedObjectUpdatable {
    associatedtype ManagedObjectKind: ManagedObject
    /// Copies attributes onto the object.
    func updateProperties(on managedObject: ManagedObjectKind)
    /// Sets relationships once every object of the import exists (default: nothing).
    func updateRelationships(on managedObject: ManagedObjectKind, in context: ManagedObjectContext) throws
}

extension ManagedObjectUpdatable {
    public func updateRelationships(on managedObject: ManagedObjectKind, in context: ManagedObjectContext) throws {}
}

/// The object IDs an operation inserted, updated and deleted (PeakCoreData's `Changeset`).
public struct Changeset: Sendable, Equatable {
    public var inserted: Set<ManagedObjectID> = []
    public var updated: Set<ManagedObjectID> = []
    public var deleted: Set<ManagedObjectID> = []
    public init() {}
    /// Whether nothing changed.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}

/// Imports values into objects found by unique ID (PeakCoreData's `CoreDataBatchImportOperation`): one `IN`
/// fetch per chunk (chunks stay under SQLite's variable limit), existing objects updated, missing ones
/// inserted, never a duplicate (the last value for an ID wins), one save per batch of `batchSize` values
/// (PeakCoreData's default of 50,000: an import of fewer values is one save, so an observer of a merging context
/// sees it as one change). A failed save is the operation's failure.
///
/// ```swift
/// let changes = try await BatchImport(values: records, chunkSize: 500, batchSize: 5_000).run(in: stack.importerContext())
/// ```
public struct BatchImport<Value: ManagedObjectUpdatable & UniqueIdentifiable & Sendable>: Sendable
where Value.ManagedObjectKind: ManagedObjectType {
    /// The values to import.
    public var values: [Value]
    /// Values per fetch (at most 500, so an `IN` list stays under SQLite's variable limit).
    public var chunkSize: Int
    /// Values per save (PeakCoreData's `batchSize`, default 50,000); at least one chunk.
    public var batchSize: Int

    public init(values: [Value], chunkSize: Int = 500, batchSize: Int = 50_000) {
        self.values = values
        self.chunkSize = max(1, min(chunkSize, 500))
        self.batchSize = max(self.chunkSize, batchSize)
    }

    /// Runs the import on the context's queue.
    public func run(in context: ManagedObjectContext) async throws -> Changeset {
        let values = self.values, chunkSize = self.chunkSize, batchSize = self.batchSize
        return try await context.perform {
            try Self.importValues(values, chunkSize: chunkSize, batchSize: batchSize, in: context)
        }
    }

    /// Runs the import synchronously; call on the context's queue (inside `performAndWait`).
    @inlinable
    public func runSynchronously(in context: ManagedObjectContext) throws -> Changeset {
        try Self.importValues(values, chunkSize: chunkSize, batchSize: batchSize, in: context)
    }

    // Inlinable so that it is specialized for the caller's value type: generic code that is not specialized
    // pays a metadata lookup or a value-witness call for every copy of a value.
    @inlinable
    static func importValues(_ values: [Value], chunkSize: Int, batchSize: Int, in context: ManagedObjectContext) throws -> Changeset {
        typealias Object = Value.ManagedObjectKind
        // Last value wins for a repeated ID; order of first appearance is kept. The index of each ID's last value
        // is kept beside it (not a copy of the value, and not looked up by ID again), and the tables are sized once.
        var order: [Value.UniqueID] = []
        var lastIndex: [Int] = []
        var position: [Value.UniqueID: Int] = [:]
        order.reserveCapacity(values.count)
        lastIndex.reserveCapacity(values.count)
        position.reserveCapacity(values.count)
        for (index, value) in values.enumerated() {
            let id = value.uniqueIDValue
            if let seen = position.updateValue(order.count, forKey: id) {
                position[id] = seen
                lastIndex[seen] = index
            } else {
                order.append(id)
                lastIndex.append(index)
            }
        }
        var changes = Changeset()
        // Until its batch is saved, each chunk's objects: those inserted (whose permanent IDs come with the save)
        // and those found that the values changed.
        var pendingInserted: [Object] = [], pendingUpdated: [Object] = []
        var pendingValues = 0
        func saveBatch() throws {
            try context.save()
            for object in pendingInserted { changes.inserted.insert(object.objectID) }
            for object in pendingUpdated { changes.updated.insert(object.objectID) }
            pendingInserted.removeAll()
            pendingUpdated.removeAll()
            pendingValues = 0
        }
        for start in stride(from: 0, to: order.count, by: chunkSize) {
            let ids = Array(order[start..<min(start + chunkSize, order.count)])
            // Each ID converted to its stored form without boxing (specialized for the ID's type). Every object
            // found is changed next: fetched with its values, not as a fault to fire at the first set.
            let existing = try Object.fetch(in: context, predicate: .in(Value.uniqueIDKey, stored: ids.map { PropertyValue(attribute: $0) })) {
                $0.returnsObjectsAsFaults = false
            }
            // Each object found goes to its ID's place in the chunk, found through the table of first positions
            // that is there already: one hash lookup per object, instead of a table by ID built per chunk and
            // looked up again per ID. (An ID held by several rows keeps the last one fetched, as that table did.)
            let end = start + ids.count
            // The chunk's objects by position, lent without a retain: a reference read from an array is retained
            // and released around every call that is not inlined (two atomic operations per object and walk).
            // `existing` holds the objects found until the chunk is done (the `withExtendedLifetime` at its end),
            // `inserted` the ones made here until their batch is saved.
            var found = [Unmanaged<Object>?](repeating: nil, count: ids.count)
            for i in existing.indices {
                let object = Unmanaged.passUnretained(existing[i])
                let id = object._withUnsafeGuaranteedRef { $0.value(forKey: Value.uniqueIDKey, as: Value.UniqueID.self) }
                if let p = position[id], p >= start, p < end {
                    found[p - start] = object
                }
            }
            // Which objects are new is kept as flags: no further arrays of the chunk's objects, each of which would
            // retain and release every object of the chunk.
            var inserted: [Object] = []
            var isNew = [Bool](repeating: false, count: ids.count)
            for (offset, id) in ids.enumerated() {
                let index = lastIndex[start + offset]
                if let object = found[offset] {
                    object._withUnsafeGuaranteedRef { values[index].updateProperties(on: $0) }
                } else {
                    let object = try Object.insert(into: context)
                    try object.setValue(id.attributeValue, forKey: Value.uniqueIDKey)
                    values[index].updateProperties(on: object)
                    inserted.append(object)
                    found[offset] = Unmanaged.passUnretained(object)
                    isNew[offset] = true
                }
            }
            for offset in found.indices {
                try found[offset]!._withUnsafeGuaranteedRef { try values[lastIndex[start + offset]].updateRelationships(on: $0, in: context) }
            }
            // Objects found that the values changed (before the save, which clears the changes); all IDs are read
            // after the save, as inserted objects have their permanent IDs only then.
            for offset in found.indices where !isNew[offset] && found[offset]!._withUnsafeGuaranteedRef(\.hasChanges) {
                pendingUpdated.append(found[offset]!.takeUnretainedValue())
            }
            pendingInserted.append(contentsOf: inserted)
            withExtendedLifetime(existing) {}
            pendingValues += ids.count
            if pendingValues >= batchSize { try saveBatch() }
        }
        if pendingValues > 0 { try saveBatch() }
        return changes
    }
}

/// Imports one value (PeakCoreData's `CoreDataSingleImportOperation`).
public struct SingleImport<Value: ManagedObjectUpdatable & UniqueIdentifiable & Sendable>: Sendable
where Value.ManagedObjectKind: ManagedObjectType {
    public var value: Value
    public init(value: Value) { self.value = value }

    /// Runs the import on the context's queue.
    public func run(in context: ManagedObjectContext) async throws -> Changeset {
        try await BatchImport(values: [value]).run(in: context)
    }
}
