import Foundation

/// An optimistic-locking conflict (`NSMergeConflict`, semantics §1.2).
///
/// Layer 1 (context vs the coordinator's row cache): ``objectSnapshot`` and ``cachedSnapshot`` are set and
/// ``persistedSnapshot`` is nil. Layer 2 (row cache vs database): ``persistedSnapshot`` is set. A
/// ``newVersionNumber`` of 0 means the row was deleted elsewhere; the matching snapshot is then nil.
public final class MergeConflict: @unchecked Sendable, CustomStringConvertible {  // read on the saving context's queue
    /// The object being saved.
    public let sourceObject: ManagedObject
    /// The object's committed values in its context (layer 1 only).
    public let objectSnapshot: [String: Any]?
    /// The row cache's values.
    public let cachedSnapshot: [String: Any]?
    /// The database's values (layer 2 only).
    public let persistedSnapshot: [String: Any]?
    /// The version of the newer row; 0 when it was deleted.
    public let newVersionNumber: Int
    /// The version the object's snapshot was taken at.
    public let oldVersionNumber: Int

    /// The base the merge compares against: the object's snapshot (layer 1) or the cached row (layer 2).
    let baseValues: [PropertyValue]?
    /// The external row: the cached row (layer 1) or the database row (layer 2); nil when deleted.
    let externalValues: [PropertyValue]?
    let isDatabaseLayer: Bool

    init(source: ManagedObject, record: VersionConflictRecord) {
        sourceObject = source
        let entity = source.entity
        isDatabaseLayer = record.isDatabaseLayer
        newVersionNumber = Int(record.newVersion)
        oldVersionNumber = Int(record.oldVersion)
        if record.isDatabaseLayer {
            objectSnapshot = nil
            cachedSnapshot = record.cachedRow.map { Self.dictionary(entity, $0.values) }
            persistedSnapshot = record.databaseRow.map { Self.dictionary(entity, $0.values) }
            // The base is the row the save was checked against. That is the object's snapshot (layer 1 passed, so
            // it matched the cache then); the cache itself may have moved on since, through another merge.
            baseValues = source.original?.values ?? record.cachedRow?.values
            externalValues = record.databaseRow?.values
        } else {
            objectSnapshot = source.original.map { Self.dictionary(entity, $0.values) }
            cachedSnapshot = record.cachedRow.map { Self.dictionary(entity, $0.values) }
            persistedSnapshot = nil
            baseValues = source.original?.values
            externalValues = record.cachedRow?.values
        }
    }

    /// Snapshots hold every attribute and to-one (as object IDs), never to-manys (semantics §1.1).
    static func dictionary(_ entity: EntityDescription, _ values: [PropertyValue]) -> [String: Any] {
        var d: [String: Any] = [:]
        for (i, slot) in entity.slots.enumerated() where i < values.count {
            switch slot {
            case .attribute(let a): d[a.name] = values[i].anyValue(for: a.type) ?? NSNull()
            case .toOne(let r): d[r.name] = values[i].anyValue(for: nil) ?? NSNull()
            }
        }
        return d
    }

    /// The properties whose values differ between the base and the external row.
    var externallyChangedKeys: [String] {
        guard let base = baseValues, let external = externalValues else { return [] }
        return sourceObject.entity.slots.indices.filter { !base[$0].epsilonEquals(external[$0]) }.map { sourceObject.entity.slots[$0].name }
    }

    public var description: String {
        let layer = isDatabaseLayer ? "database" : "row cache"
        var text = "merge conflict (\(layer)) on \(sourceObject.objectID): version \(oldVersionNumber) → \(newVersionNumber)"
        if newVersionNumber == 0 {
            text += ", deleted elsewhere"
        } else {
            let changedHere = sourceObject.changedSlots.map { sourceObject.entity.slots[$0].name }.sorted()
            text += "; changed elsewhere: \(externallyChangedKeys.sorted()), changed here: \(changedHere)"
        }
        return text
    }
}

/// A uniqueness-constraint conflict (`NSConstraintConflict`, semantics §1.6).
public final class ConstraintConflict: @unchecked Sendable, CustomStringConvertible {  // read on the saving context's queue
    /// The attribute names of the violated constraint.
    public let constraint: [String]
    /// The colliding values, by attribute name.
    public let constraintValues: [String: Any]
    /// The existing row's object (database level); nil for a conflict inside one save.
    public let databaseObject: ManagedObject?
    /// The existing row's values (database level).
    public let databaseSnapshot: [String: Any]?
    /// The objects of the save that collide.
    public let conflictingObjects: [ManagedObject]
    /// Their snapshots from when they were fetched or inserted (`NSNull` for unchanged objects).
    public let conflictingSnapshots: [Any]

    init(constraint: [String], values: [String: Any], databaseObject: ManagedObject?, databaseSnapshot: [String: Any]?, conflicting: [ManagedObject]) {
        self.constraint = constraint
        self.constraintValues = values
        self.databaseObject = databaseObject
        self.databaseSnapshot = databaseSnapshot
        self.conflictingObjects = conflicting
        self.conflictingSnapshots = conflicting.map { object -> Any in
            guard object.hasChanges else { return NSNull() }
            return object.original.map { MergeConflict.dictionary(object.entity, $0.values) } ?? MergeConflict.dictionary(object.entity, object.values)
        }
    }

    public var description: String {
        let values = constraint.map { "\($0)=\(constraintValues[$0] ?? "nil")" }.joined(separator: ", ")
        let objects = conflictingObjects.map(\.objectID.description).joined(separator: ", ")
        if let databaseObject {
            return "constraint conflict on \(constraint) (\(values)): \(objects) collides with the stored \(databaseObject.objectID)"
        }
        return "constraint conflict on \(constraint) (\(values)) between \(objects) in one save"
    }
}
