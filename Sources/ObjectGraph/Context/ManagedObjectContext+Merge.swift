import Foundation

extension ManagedObjectContext {
    /// Merges another context's save (semantics §3.1), from a did-save or a did-save-object-IDs notification:
    /// inserted objects are faulted in (weakly held) and always reported; updated objects registered and
    /// loaded here are refreshed keeping local changes, and reported as refreshed; updates to faults are
    /// silent; unregistered objects are ignored; deleted registered objects are deleted here and stay
    /// registered with `isDeleted`. Never a conflict. Posts objects-did-change and did-merge-changes-object-IDs.
    public func mergeChanges(fromContextDidSave notification: Notification) {
        assertOnQueue()
        let changes: ContextObjectIDChanges
        if let ids = ContextObjectIDChanges(notification) {
            changes = ids
        } else if let rows = SavedRows.of(notification) {
            changes = rows.changes  // the same IDs, already collected by the save
        } else if let saved = ContextDidSave(notification) {
            changes = ContextObjectIDChanges(saved: saved)
        } else {
            return
        }
        Probe.call(.merge(self, changes)) { merge(changes) }
    }

    /// Merges a change set of object IDs on this context's queue, as ``mergeChanges(fromContextDidSave:)`` does.
    package func mergeChanges(fromObjectIDs changes: ContextObjectIDChanges) {
        assertOnQueue()
        Probe.call(.merge(self, changes)) { merge(changes) }
    }

    /// Merges object IDs changed elsewhere (another process, a batch request, another coordinator, history)
    /// into each context, on its queue (semantics §3.4).
    ///
    /// Unlike ``mergeChanges(fromContextDidSave:)``, the updated objects are refreshed to their rows in the store
    /// even when the coordinator's row cache holds an older row and the context's `stalenessInterval` is
    /// infinite: the cached rows among the updated IDs are read again (one query per entity, on the first
    /// context's queue of each coordinator), and the row cache keeps them.
    public static func mergeChanges(fromRemoteContextSave changes: ContextObjectIDChanges, into contexts: [ManagedObjectContext]) {
        Probe.call(.mergeRemote(changes, contexts)) { mergeRemote(changes, into: contexts) }
    }

    private static func mergeRemote(_ changes: ContextObjectIDChanges, into contexts: [ManagedObjectContext]) {
        var reloaded: [PersistentStoreCoordinator] = []
        for context in contexts {
            context.performAndWait {
                // Semantics §3.4, §6 and Rule 15: only this call goes past an older row cache entry; a
                // did-save merge (history's object-ID notification included) keeps the cached row (§2.3, §2.4).
                if !changes.updated.isEmpty, let coordinator = context.persistentStoreCoordinator,
                   !reloaded.contains(where: { $0 === coordinator }) {
                    reloaded.append(coordinator)
                    // A failed read leaves the cached rows: the merge then refreshes as a did-save merge would.
                    try? coordinator.reloadCachedRows(changes.updated)
                }
                context.merge(changes)
            }
        }
    }

    /// Merges a dictionary keyed like objects-did-change (`inserted`, `updated`, `deleted`, or the
    /// `…_objectIDs` keys) of `[ManagedObjectID]` or URI `[URL]` into each context (semantics §3.4).
    public static func mergeChanges(fromRemoteContextSave changes: [String: Any], into contexts: [ManagedObjectContext]) {
        guard let coordinator = contexts.first?.persistentStoreCoordinator else { return }
        func ids(_ keys: [NotificationKey]) -> Set<ManagedObjectID> {
            var result = Set<ManagedObjectID>()
            for key in keys {
                switch changes[key.rawValue] {
                case let list as [ManagedObjectID]: result.formUnion(list)
                case let set as Set<ManagedObjectID>: result.formUnion(set)
                case let urls as [URL]: result.formUnion(urls.compactMap { coordinator.managedObjectID(forURIRepresentation: $0) })
                default: break
                }
            }
            return result
        }
        let merged = ContextObjectIDChanges(
            inserted: ids([.insertedObjects, .insertedObjectIDs]), updated: ids([.updatedObjects, .updatedObjectIDs]),
            deleted: ids([.deletedObjects, .deletedObjectIDs]))
        mergeChanges(fromRemoteContextSave: merged, into: contexts)
    }

    /// The merge itself; costs O(objects registered here that the save touched) plus O(inserted IDs): the
    /// smaller of the registry and each ID set is walked (semantics §3.1 cost model).
    func merge(_ changes: ContextObjectIDChanges) {
        Probe.trace("merge", "\(name ?? "context"): \(changes.inserted.count) inserted, \(changes.updated.count) updated, \(changes.deleted.count) deleted")
        // Semantics §3.7: a merge moves a pinned context to a new generation (taken at its next read).
        advanceQueryGeneration()
        // Rule 21.3: merged changes are not undoable (inferred).
        undoCaptureSuppressed += 1
        mergeAndAnnounce(changes)
        undoCaptureSuppressed -= 1
        // The merged inserts that no observer kept were freed as the merge returned: their registry entries go
        // now (one lookup per inserted ID, the order of the merge's own work), not at the next sweep, which would
        // keep the memory of up to 8,192 freed objects (the chunked import's peak rose by 1.5 MiB without this).
        if !changes.inserted.isEmpty { registry.removeFreed(changes.inserted) }
    }

    private func mergeAndAnnounce(_ changes: ContextObjectIDChanges) {
        Probe.count(.merged(self))
        var inserted = Set<ManagedObject>()
        var refreshed = Set<ManagedObject>()
        var deleted = Set<ManagedObject>()
        var refreshedIDs = Set<ManagedObjectID>()

        // Each set is sized once: a merge on the main queue allocates a few buffers, not one per doubling (each
        // allocation can take the allocator's slow path on a thread that was idle while a large save ran).
        inserted.reserveCapacity(changes.inserted.count)
        for id in changes.inserted {
            // Inserts are always reported, held only weakly (an observer such as an FRC may keep them).
            inserted.insert(object(with: id))
        }
        let updatedObjects = registeredObjects(in: changes.updated)
        refreshed.reserveCapacity(updatedObjects.count)
        refreshedIDs.reserveCapacity(updatedObjects.count)
        for object in updatedObjects {
            guard !object.isFaultFlag, !inserted.contains(object) else { continue }
            refresh(object, mergeChanges: true)
            refreshed.insert(object)
            refreshedIDs.insert(object.objectID)
        }
        for object in registeredObjects(in: changes.deleted) where !object.isDeletedFlag {
            if object.isFaultFlag {
                // The row is gone; mark it deleted without firing the fault.
                object.isDeletedFlag = true
                object.deletePropagated = true
                unmarkUpdated(object)
                deletedSet.insert(object)
            } else {
                markDeleted(object)
            }
            deleted.insert(object)
        }
        Probe.count(.refreshedByMerge(self, refreshed.count))
        propagateDeletes()
        // Changes made by the merge are announced here, once.
        let cascaded = pendingDeleted.subtracting(deleted)
        pendingDeleted.subtract(deleted)
        for object in refreshed where object.isUpdatePending {
            pendingUpdated.remove(object)
            object.isUpdatePending = false
        }
        changesBeingMerged = changes
        postObjectsDidChange(inserted: inserted, updated: [], deleted: deleted.union(cascaded), refreshed: refreshed)
        changesBeingMerged = nil
        pendingDeleted.subtract(cascaded)
        let mergedIDs = ContextObjectIDChanges(
            inserted: changes.inserted, updated: changes.updated, deleted: Set(deleted.map(\.objectID)), refreshed: refreshedIDs)
        Probe.posting(.didMergeObjectIDs) { NotificationCenter.default.post(name: Self.didMergeChangesObjectIDsNotification, object: self, userInfo: mergedIDs.userInfo) }
    }

    /// Registered objects among `ids`, walking whichever of the two is smaller, in key order (entity, store,
    /// key): the merge refreshes and deletes them in this order, and a refresh in a child context fulfils the
    /// object from its parent at a scheduling point, where another thread may change what the parent holds. In
    /// the order of the set (its storage's address seeds the hash) the same run counted a fault fulfilled from
    /// the row cache in one process and from the parent's object in another.
    private func registeredObjects(in ids: Set<ManagedObjectID>) -> [ManagedObject] {
        registry.liveObjects(among: ids, examined: &counters.mergeObjectsExamined)
            .sorted { Self.keyOrder($0.objectID, $1.objectID) }
    }

    func updateAutomaticMerging() {
        if let automaticMergeObserver {
            NotificationCenter.default.removeObserver(automaticMergeObserver)
            self.automaticMergeObserver = nil
        }
        guard automaticallyMergesChangesFromParent else { return }
        // Core Data's automatic merge observes the did-save notification with the objects
        // (`_automaticallyMergeChangesFromContextDidSaveNotification:`) and merges it later on this context's
        // queue, which keeps the notification, hence the saved rows in the row cache, until the merge is done
        // (Rule 32; semantics §2.3, §3.1).
        automaticMergeObserver = NotificationCenter.default.addObserver(
            forName: Self.didSaveNotification, object: nil, queue: nil
        ) { [weak self] notification in Probe.libraryWork {
            guard let self, let saver = notification.object as? ManagedObjectContext, saver !== self else { return }
            // Semantics §3.3: a child merges its parent's saves; a root context merges saves of sibling contexts
            // on its coordinator (not of other coordinators, not of batch requests).
            let relevant: Bool
            if let parent = self.parent {
                relevant = saver === parent
            } else {
                relevant = saver.parent == nil && saver.persistentStoreCoordinator === self.persistentStoreCoordinator
            }
            guard relevant else { return }
            // The saving context's objects are read here, on its queue; only their IDs and the held rows go on.
            let rows = SavedRows.of(notification)
            guard let changes = rows?.changes ?? ContextDidSave(notification).map(ContextObjectIDChanges.init(saved:)) else { return }
            let announced = Execution.now()
            let held = SavedRowsHold(rows)
            self.queue.async { [weak self] in Probe.delivering("automaticMerge", to: self) {
                // The saved rows stay cached until this merge is done: let go of them here, on this queue, rather
                // than whenever the queue happens to free the block.
                defer { held.rows = nil }
                guard let self else { return }
                self.merge(changes)
                self.automaticMergeHook?(announced, Execution.now(), changes)
            } }
        } }
    }
}

/// An automatic merge's reference to the rows of the save it merges, dropped once the merge is done.
private final class SavedRowsHold: @unchecked Sendable {  // set on the saving queue, cleared on the merging queue, in that order
    var rows: SavedRows?
    init(_ rows: SavedRows?) { self.rows = rows }
}
