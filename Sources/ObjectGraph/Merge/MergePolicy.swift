import Foundation

/// How a save settles conflicts (`NSMergePolicy`, semantics §1). Policies apply only when a context saves to a
/// coordinator (§1.7). Subclass and override ``resolve(optimisticLockingConflicts:)`` or
/// ``resolve(constraintConflicts:)`` for a custom policy (call `super` for the parts you keep).
///
/// ```swift
/// context.mergePolicy = .mergeByPropertyObjectTrump
/// ```
open class MergePolicy: @unchecked Sendable, CustomStringConvertible {  // immutable; resolution runs on the saving context's queue
    /// Core Data's policy types.
    public enum PolicyType: Int, Sendable, CaseIterable {
        /// `NSErrorMergePolicyType`: the save fails with 133020 / 133021 and the conflict list.
        case error = 0
        /// `NSMergeByPropertyStoreTrumpMergePolicyType`: per property, external changes win.
        case mergeByPropertyStoreTrump = 1
        /// `NSMergeByPropertyObjectTrumpMergePolicyType`: per property, in-memory changes win.
        case mergeByPropertyObjectTrump = 2
        /// `NSOverwriteMergePolicyType`: the whole in-memory object is written.
        case overwrite = 3
        /// `NSRollbackMergePolicyType`: in-memory changes of conflicting objects are discarded.
        case rollback = 4

        /// The name used in scenarios and reports.
        package var name: String {
            switch self {
            case .error: return "error"
            case .mergeByPropertyStoreTrump: return "storeTrump"
            case .mergeByPropertyObjectTrump: return "objectTrump"
            case .overwrite: return "overwrite"
            case .rollback: return "rollback"
            }
        }
    }

    /// What ObjectTrump does with a row deleted elsewhere (semantics §1.4: it depends on an internal flag of
    /// Core Data; unverified which applies on a given OS).
    public enum DeletedElsewhereRule: Sendable {
        /// Accept the external delete, as StoreTrump does (the modern code path; our default).
        case delete
        /// Re-insert the row with the in-memory state, as Overwrite does.
        case resurrect
    }

    /// The policy's type.
    public let type: PolicyType
    /// ObjectTrump's rule for rows deleted elsewhere.
    public let deletedElsewhere: DeletedElsewhereRule

    /// Creates a policy of `type`.
    public init(type: PolicyType, deletedElsewhere: DeletedElsewhereRule = .delete) {
        self.type = type
        self.deletedElsewhere = deletedElsewhere
    }

    /// The default policy of every context.
    public static let error = MergePolicy(type: .error)
    /// External changes win per property.
    public static let mergeByPropertyStoreTrump = MergePolicy(type: .mergeByPropertyStoreTrump)
    /// In-memory changes win per property.
    public static let mergeByPropertyObjectTrump = MergePolicy(type: .mergeByPropertyObjectTrump)
    /// The in-memory object overwrites the row.
    public static let overwrite = MergePolicy(type: .overwrite)
    /// Conflicting objects lose their in-memory changes.
    public static let rollback = MergePolicy(type: .rollback)

    /// The policy named as in scenarios (`storeTrump`, `objectTrump`, `overwrite`, `rollback`, `error`).
    package static func named(_ name: String) -> MergePolicy? {
        PolicyType.allCases.first { $0.name == name }.map { MergePolicy(type: $0) }
    }

    public var description: String { type.name }

    /// Settles both kinds of conflict: optimistic locking first, then constraints; stops at the first
    /// failure (semantics §1.3).
    open func resolve(mergeConflicts: [MergeConflict], constraintConflicts: [ConstraintConflict]) throws {
        if !mergeConflicts.isEmpty { try resolve(optimisticLockingConflicts: mergeConflicts) }
        if !constraintConflicts.isEmpty { try resolve(constraintConflicts: constraintConflicts) }
    }

    /// Settles optimistic-locking conflicts (semantics §1.4–§1.5).
    /// - Throws: 133020 with the conflict list for the error policy.
    open func resolve(optimisticLockingConflicts conflicts: [MergeConflict]) throws {
        if type == .error {
            var error = ObjectGraphError(.merge, "could not merge changes: \(conflicts.count) optimistic-locking conflict(s)")
            error.conflictList = conflicts
            if let first = conflicts.first {
                error.entityName = first.sourceObject.entity.name
                error.objectID = first.sourceObject.objectID
            }
            throw error
        }
        for conflict in conflicts { try resolveLocking(conflict) }
    }

    /// Settles uniqueness conflicts (semantics §1.6).
    /// - Throws: 133021 with the conflict list for the error policy.
    open func resolve(constraintConflicts conflicts: [ConstraintConflict]) throws {
        if type == .error {
            var error = ObjectGraphError(.constraintMerge, "could not merge changes: \(conflicts.count) uniqueness conflict(s)")
            error.constraintConflictList = conflicts
            if let first = conflicts.first?.conflictingObjects.first {
                error.entityName = first.entity.name
                error.objectID = first.objectID
            }
            throw error
        }
        for conflict in conflicts { try resolveConstraint(conflict) }
    }

    // MARK: Optimistic locking

    private func resolveLocking(_ conflict: MergeConflict) throws {
        let object = conflict.sourceObject
        guard let context = object.managedObjectContext else { return }
        let newVersion = Int64(conflict.newVersionNumber)
        if newVersion == 0 {
            // Deleted elsewhere (semantics §1.4).
            let resurrect = type == .overwrite || (type == .mergeByPropertyObjectTrump && deletedElsewhere == .resurrect)
            if resurrect, !object.isDeletedFlag, !object.isInsertedFlag {
                context.forceInsertion(object)
            } else if !object.isDeletedFlag {
                context.delete(object)
                context.propagateDeletes()
            }
            return
        }
        guard let external = conflict.externalValues else { return }
        if object.isDeletedFlag {
            // Rollback discards the delete with the rest of the local state; the other policies keep the
            // delete and take the new version so the guarded DELETE passes.
            if type == .rollback {
                context.refresh(object, mergeChanges: false)
            } else {
                object.original = RowSnapshot(values: external, version: newVersion)
            }
            return
        }
        switch type {
        case .error:
            return
        case .rollback:
            // Semantics §1.4: refresh(mergeChanges: false); the object faults in the newer row.
            context.refresh(object, mergeChanges: false)
        case .overwrite:
            // Semantics §1.4: the whole in-memory object is written over the row at the new version.
            try object.materialize()
            object.original = RowSnapshot(values: external, version: newVersion)
            object.changedSlots = SlotSet(object.values.indices)
            // To-manys: this context's additions and removals laid over the stored set, so the join rows
            // written and the context's sets agree with the store afterwards.
            try mergeToManys(object, context: context, localWins: true)
            context.noteChange(object)
        case .mergeByPropertyStoreTrump, .mergeByPropertyObjectTrump:
            try object.materialize()
            let base = conflict.baseValues ?? external
            let original = object.original?.values ?? base
            for slot in object.values.indices where !base[slot].epsilonEquals(external[slot]) {
                let locallyChanged = !object.values[slot].epsilonEquals(original[slot])
                // StoreTrump: E wherever the store changed. ObjectTrump: E only where not changed here.
                if type == .mergeByPropertyStoreTrump || !locallyChanged { object.values[slot] = external[slot] }
            }
            object.original = RowSnapshot(values: external, version: newVersion)
            object.changedSlots = SlotSet(object.values.indices.filter { !object.values[$0].epsilonEquals(external[$0]) })
            try mergeToManys(object, context: context, localWins: type == .mergeByPropertyObjectTrump)
            context.noteChange(object)
        }
        Probe.count(.conflictResolved(context))
    }

    /// To-many relationships merge as sets (semantics §1.5): the external delta is laid over the local set
    /// (StoreTrump) or the local delta over the external set (ObjectTrump).
    private func mergeToManys(_ object: ManagedObject, context: ManagedObjectContext, localWins: Bool) throws {
        for index in object.toMany.indices {
            guard let state = object.toMany[index] else { continue }
            let relationship = object.entity.toManyRelationships[index]
            guard let coordinator = context.persistentStoreCoordinator else { continue }
            let externalOrder = try coordinator.relatedIDs(of: object.objectID, relationship: relationship)
            let external = Set(externalOrder)
            let base = state.original
            let merged: Set<ManagedObjectID>
            if !localWins {
                merged = state.current.union(external.subtracting(base)).subtracting(base.subtracting(external))
            } else {
                merged = external.union(state.current.subtracting(base)).subtracting(base.subtracting(state.current))
            }
            var next = ManagedObject.ToManyState(current: merged, original: external)
            if let order = state.order { next.order = Self.mergedOrder(order, external: externalOrder, members: merged, localWins: localWins) }
            object.toMany[index] = next
        }
    }

    /// Docs/coredata-behaviour.md §12.4: an ordered relationship's order is a property of its own. The side that
    /// wins takes its order when it changed it (the object's side under ObjectTrump, the store's under StoreTrump);
    /// when only the other side changed it, that side's order holds. Members the other side added follow, in its order.
    static func mergedOrder(_ order: ManagedObject.ToManyState.Order, external: [ManagedObjectID], members: Set<ManagedObjectID>, localWins: Bool) -> ManagedObject.ToManyState.Order {
        let localChanged = order.current != order.original, externalChanged = external != order.original
        let preferLocal = localWins ? localChanged || !externalChanged : localChanged && !externalChanged
        let (first, second) = preferLocal ? (order.current, external) : (external, order.current)
        var seen = Set<ManagedObjectID>()
        let merged = (first + second).filter { members.contains($0) && seen.insert($0).inserted }
        return .init(current: merged, original: external)
    }

    // MARK: Constraints

    private func resolveConstraint(_ conflict: ConstraintConflict) throws {
        guard let context = conflict.conflictingObjects.first?.managedObjectContext else { return }
        if let database = conflict.databaseObject {
            for object in conflict.conflictingObjects where !object.isDeletedFlag && !database.isDeletedFlag {
                try resolveDatabaseConstraint(object, database, context)
            }
        } else {
            try resolveContextConstraint(conflict.conflictingObjects.filter { !$0.isDeletedFlag }, context)
        }
        Probe.count(.conflictResolved(context))
    }

    private func resolveDatabaseConstraint(_ object: ManagedObject, _ database: ManagedObject, _ context: ManagedObjectContext) throws {
        try database.materialize()
        switch type {
        case .error:
            return
        case .mergeByPropertyStoreTrump:
            // Keep the stored object; the in-memory one gives it its relationships and goes.
            try moveRelationships(from: object, to: database, overwriteToOnes: false)
            context.delete(object)
        case .mergeByPropertyObjectTrump:
            // Upsert: the stored object (and its ID) takes the in-memory values.
            let slots = object.isInsertedFlag ? Array(object.values.indices) : Array(object.changedSlots)
            for slot in slots {
                if case .attribute = object.entity.slots[slot] { database.setSlot(slot, object.values[slot]) }
            }
            try moveRelationships(from: object, to: database, overwriteToOnes: true)
            context.delete(object)
        case .overwrite:
            // The new object survives; the stored one gives it its to-manys and goes.
            try moveRelationships(from: database, to: object, overwriteToOnes: false)
            context.delete(database)
        case .rollback:
            if object.isInsertedFlag { context.delete(object) } else { context.refresh(object, mergeChanges: false) }
        }
        context.propagateDeletes()
    }

    private func resolveContextConstraint(_ objects: [ManagedObject], _ context: ManagedObjectContext) throws {
        guard objects.count > 1 else { return }
        // Semantics §1.6: the keeper is an existing object if there is exactly one, else the lowest key.
        let existing = objects.filter { !$0.isInsertedFlag }
        let keeper: ManagedObject
        if existing.count == 1 {
            keeper = existing[0]
        } else {
            keeper = (existing.isEmpty ? objects : existing).min { $0.objectID.key < $1.objectID.key }!
        }
        for other in objects where other !== keeper {
            if type == .mergeByPropertyStoreTrump || type == .mergeByPropertyObjectTrump {
                for slot in other.changedSlots where !keeper.changedSlots.contains(slot) {
                    if case .attribute = other.entity.slots[slot] { keeper.setSlot(slot, other.values[slot]) }
                }
                try moveRelationships(from: other, to: keeper, overwriteToOnes: false)
            }
            context.delete(other)
        }
        context.propagateDeletes()
    }

    /// Moves `source`'s relationships onto `target`, fixing inverses (to-manys are unioned).
    private func moveRelationships(from source: ManagedObject, to target: ManagedObject, overwriteToOnes: Bool) throws {
        for relationship in source.entity.relationships {
            if relationship.isToMany {
                let members = try source.objectIDs(forRelationshipNamed: relationship.name)
                for id in members {
                    guard let member = source.managedObjectContext?.object(with: id) else { continue }
                    try target.addObject(member, toRelationship: relationship.name)
                }
            } else if let destination = try source.checkedValue(forKey: relationship.name) as? ManagedObject {
                if overwriteToOnes || target.value(forKey: relationship.name) == nil {
                    try target.setValue(destination, forKey: relationship.name)
                }
            }
        }
    }
}
