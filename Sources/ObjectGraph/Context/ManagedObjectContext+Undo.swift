import Foundation

// Rule 21.3: undo and redo of a context's changes (Docs/coredata-behaviour.md §4, "Undo").
//
// How it works. While an undo manager is set, the first change of each object in an event (an attribute, a
// transient, a relationship on either side, an insert, a delete) records the object's state just before it.
// `processPendingChanges()` (the end of the event: a `perform` block, a save, an explicit call, an undo manager
// checkpoint) registers one undo action holding those objects and states. Undoing puts each object back into its
// recorded state (recording its current one first) and processes the changes as one event: the inserted,
// updated and deleted sets follow, an objects-did-change is posted, and what was recorded is registered again,
// on the redo stack this time, as NSUndoManager does with actions registered while undoing.
//
// An action holds the objects it names strongly, with the related objects they held (semantics §2.1 step 8,
// §4: "the undo manager holds strong references to changed objects").

/// The state of an object before its first change of an event.
struct UndoSnapshot {
    /// Registered in the context (false before an insert, and after a saved delete or an undone insert).
    var registered: Bool
    var inserted: Bool
    var deleted: Bool
    /// The persistent values; nil while a fault (a fault has no changes of its values).
    var values: [PropertyValue]?
    var changedSlots: SlotSet
    var toMany: [ManagedObject.ToManyState?]
    var pendingToMany: [ManagedObject.PendingToManyLog]?
    var transients: [PropertyValue]
    var transientsChanged: Bool
    var transientLinks: [Set<ManagedObjectID>]
    var held: ManagedObject.HeldObjects?
}

/// The objects changed in the current event, with their states before it, in the order they first changed.
struct UndoRecords {
    private var index: [ObjectIdentifier: Int] = [:]
    private(set) var entries: [(object: ManagedObject, before: UndoSnapshot)] = []

    var isEmpty: Bool { entries.isEmpty }

    func contains(_ object: ManagedObject) -> Bool { index[ObjectIdentifier(object)] != nil }

    mutating func append(_ object: ManagedObject, _ before: UndoSnapshot) {
        index[ObjectIdentifier(object)] = entries.count
        entries.append((object, before))
    }
}

extension ManagedObjectContext {
    /// The undo manager that records this context's changes (`NSManagedObjectContext.undoManager`); nil, the
    /// default, records nothing (Apple: "The default value is nil"). Set it to nil for imports: it holds every
    /// changed object strongly (semantics §4). Setting it forgets the changes of the current event not yet
    /// processed; process them first to record them.
    public var undoManager: UndoManager? {
        get { storedUndoManager }
        set {
            guard newValue !== storedUndoManager else { return }
            storedUndoManager?.removeCheckpointContext(self)
            storedUndoManager = newValue
            newValue?.addCheckpointContext(self)
            undoRecords = newValue == nil ? nil : UndoRecords()
        }
    }

    /// Undoes the latest group of uncommitted changes recorded by the undo manager (`undo()`); nothing without
    /// one.
    public func undo() {
        assertOnQueue()
        storedUndoManager?.undo()
    }

    /// Redoes the latest undone group (`redo()`); nothing without an undo manager.
    public func redo() {
        assertOnQueue()
        storedUndoManager?.redo()
    }

    /// Records `object`'s state before its first change of this event (called before each change).
    @inline(__always)
    func noteWillChange(_ object: ManagedObject) {
        if undoRecords != nil, undoCaptureSuppressed == 0 { recordUndoState(object) }
    }

    private func recordUndoState(_ object: ManagedObject) {
        guard !undoRecords!.contains(object) else { return }
        undoRecords!.append(object, undoSnapshot(of: object))
    }

    private func undoSnapshot(of object: ManagedObject) -> UndoSnapshot {
        UndoSnapshot(
            registered: object.managedObjectContext === self, inserted: object.isInsertedFlag, deleted: object.isDeletedFlag,
            values: object.isFaultFlag ? nil : object.values, changedSlots: object.changedSlots, toMany: object.toMany,
            pendingToMany: object.pendingToMany, transients: object.transients, transientsChanged: object.transientsChanged,
            transientLinks: object.transientLinks, held: object.heldObjects)
    }

    /// Forgets the recorded states and this context's actions on its undo manager (rollback and reset empty
    /// the undo stack, semantics §4).
    func clearUndo() {
        guard let manager = storedUndoManager else { return }
        undoRecords = UndoRecords()
        manager.removeAllActions(withTarget: self)
    }

    /// Forgets the states recorded since the last event without registering them (changes that are not
    /// undoable: a save's own bookkeeping).
    func dropUndoRecords() {
        if undoRecords != nil { undoRecords = UndoRecords() }
    }

    /// Registers the event's changes as one undo action: putting back the recorded states. Objects whose state is
    /// the recorded one again (a value set and set back) are left out.
    func registerUndoEvent() {
        let entries = undoRecords!.entries.filter { !isSameState($0.object, $0.before) }
        undoRecords = UndoRecords()
        guard !entries.isEmpty, let manager = storedUndoManager, manager.isUndoRegistrationEnabled else { return }
        manager.registerUndo(withTarget: self) { context in context.restore(entries) }
    }

    private func isSameState(_ object: ManagedObject, _ state: UndoSnapshot) -> Bool {
        guard state.registered == (object.managedObjectContext === self), state.inserted == object.isInsertedFlag,
              state.deleted == object.isDeletedFlag, state.transients == object.transients,
              state.transientLinks == object.transientLinks else { return false }
        if object.isFaultFlag != (state.values == nil) { return false }
        if let values = state.values, values != object.values { return false }
        for i in object.toMany.indices where object.toMany[i]?.current != state.toMany[i]?.current { return false }
        // Docs/coredata-behaviour.md §12.4: a change of order alone is an undoable change.
        if object.entity.hasOrderedToMany {
            for i in object.toMany.indices where object.toMany[i]?.order?.current != state.toMany[i]?.order?.current { return false }
        }
        if (object.pendingToMany == nil) != (state.pendingToMany == nil) { return false }
        return object.pendingToMany == nil
    }

    /// Puts each object back into its recorded state, then processes the change as one event: the sets follow,
    /// an objects-did-change is posted, and the states before this restore are registered (on the redo stack
    /// when undoing).
    private func restore(_ entries: [(object: ManagedObject, before: UndoSnapshot)]) {
        assertOnQueue()
        // Whatever was pending belongs to the event before this one.
        processPendingChanges()
        for (object, state) in entries {
            guard object.managedObjectContext === self || object.managedObjectContext == nil else { continue }
            recordUndoState(object)
            undoCaptureSuppressed += 1
            apply(state, to: object)
            undoCaptureSuppressed -= 1
        }
        processPendingChanges()
    }

    private func apply(_ state: UndoSnapshot, to object: ManagedObject) {
        let registered = object.managedObjectContext === self
        if !state.registered {
            guard registered else { return }
            if object.isInsertedFlag {
                // Undoing an insert: the object leaves the context, and the event reports it deleted.
                leaveChangeSets(object)
                object.isInsertedFlag = false
                object.isDeletedFlag = false
                object.deletePropagated = false
                unregister(object)
                pendingDeleted.insert(object)
            } else {
                // Inserted, then saved: undoing the insert deletes the row at the next save.
                markDeletedForUndo(object)
            }
            return
        }
        if !registered {
            // Redoing an insert, or undoing a delete that was saved since: the object comes back as an insert
            // (of the same row ID, when it had a permanent one), unless another object holds that ID here now.
            guard !state.deleted, registry[object.objectID] == nil else { return }
            object.orphanSource = nil
            object.isInsertedFlag = true
            object.isDeletedFlag = false
            object.deletePropagated = false
            if object.isFaultFlag || object.values.count != object.entity.slots.count {
                object.prepareForInsert()
            }
            object.original = nil
            register(object)
            insertedSet.insert(object)
            pendingInserted.insert(object)
            object.isInsertPending = true
            restoreValues(state, to: object)
            return
        }
        if state.deleted, !object.isDeletedFlag {
            markDeletedForUndo(object)
            return
        }
        if !state.deleted, object.isDeletedFlag {
            // Undoing a delete: back in the graph; the event reports it inserted.
            object.isDeletedFlag = false
            object.deletePropagated = false
            deletedSet.remove(object)
            pendingDeleted.remove(object)
            if object.isInsertedFlag { insertedSet.insert(object) }
            pendingInserted.insert(object)
            object.isInsertPending = true
        }
        restoreValues(state, to: object)
    }

    /// Takes an object out of the inserted and updated sets and the pending ones (it leaves the graph).
    private func leaveChangeSets(_ object: ManagedObject) {
        insertedSet.remove(object)
        pendingInserted.remove(object)
        object.isInsertPending = false
        unmarkUpdated(object)
        if object.isUpdatePending {
            pendingUpdated.remove(object)
            object.isUpdatePending = false
        }
        deletedSet.remove(object)
    }

    private func markDeletedForUndo(_ object: ManagedObject) {
        if object.isFaultFlag { try? fulfillFault(object, throwing: true) }
        leaveChangeSets(object)
        object.isDeletedFlag = true
        // The delete rules' effects on other objects are restored from those objects' own states.
        object.deletePropagated = true
        deletedSet.insert(object)
        pendingDeleted.insert(object)
    }

    /// Puts back the values, relationships and transient values of a state, measuring changes against the
    /// object's committed snapshot as it is now (a save since the change moved it).
    private func restoreValues(_ state: UndoSnapshot, to object: ManagedObject) {
        if object.isFaultFlag, state.values != nil || state.toMany.contains(where: { $0 != nil }) {
            try? fulfillFault(object, throwing: false)
        }
        let heldBefore = object.heldObjects
        if !object.isFaultFlag {
            // A state recorded on a fault had no value changes: its values are the committed ones.
            let target = state.values ?? object.original?.values ?? object.values
            var copy: [PropertyValue] = []
            copy.reserveCapacity(target.count)
            for value in target { copy.append(value) }
            for slot in copy.indices where slot >= object.values.count || object.values[slot] != copy[slot] {
                object.eventChangedSlots.insert(slot)
            }
            object.values = copy
            if object.isInsertedFlag {
                object.changedSlots = state.inserted && state.values != nil ? state.changedSlots
                    : SlotSet(copy.indices.filter { !copy[$0].isNull })
            } else if let original = object.original {
                object.changedSlots = SlotSet(copy.indices.filter { copy[$0] != original.values[$0] })
            } else {
                object.changedSlots = state.changedSlots
            }
        }
        for i in object.toMany.indices {
            let target: Set<ManagedObjectID>
            // §12.4: undo puts an ordered relationship's order back with its members.
            var targetOrder: [ManagedObjectID]?
            if let recorded = state.toMany[i] {
                target = recorded.current
                targetOrder = recorded.order?.current
            } else if let loaded = object.toMany[i] {
                var base = loaded.original
                if let log = state.pendingToMany, i < log.count { log[i].apply(to: &base) }
                target = base
            } else {
                // Neither loaded: the inverse changes recorded then are the ones to keep.
                if let log = state.pendingToMany, i < log.count, !log[i].isEmpty {
                    if object.pendingToMany == nil {
                        object.pendingToMany = Array(repeating: ManagedObject.PendingToManyLog(), count: object.toMany.count)
                    }
                    object.pendingToMany![i] = log[i]
                } else if object.pendingToMany != nil {
                    object.pendingToMany![i] = ManagedObject.PendingToManyLog()
                }
                continue
            }
            if object.toMany[i] == nil { _ = try? object.relatedIDs(i) }
            guard var loaded = object.toMany[i] else { continue }
            loaded.current = target
            if let targetOrder, loaded.order != nil { loaded.order!.current = targetOrder } else { loaded.reconcileOrder() }
            object.toMany[i] = loaded
            object.heldObjects?.prune(toMany: ManagedObject.heldToManyOffset + i) { target.contains($0) }
        }
        if object.pendingToMany?.allSatisfy(\.isEmpty) == true { object.pendingToMany = nil }
        object.transients = state.transients
        object.transientLinks = state.transientLinks
        object.transientsChanged = state.transientsChanged
        // The related objects held with the state come back with it (the action kept them alive).
        if state.values != nil, let held = state.held {
            object.heldObjects = held
        } else if heldBefore != nil, !object.isFaultFlag {
            object.heldObjects?.pruneToOnes(object.values)
        }
        noteChange(object)
    }
}
