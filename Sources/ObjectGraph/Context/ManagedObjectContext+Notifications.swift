import Foundation

extension ManagedObjectContext {
    /// Posted by a context when its objects change: processed pending changes, merges, refreshes, reset.
    public static let objectsDidChangeNotification = Notification.Name("NSObjectsChangedInManagingContextNotification")
    /// Posted before a save; `object` is the context.
    public static let willSaveNotification = Notification.Name("NSManagingContextWillSaveChangesNotification")
    /// Posted after a save, with sets of the saving context's objects (use them only on its queue).
    public static let didSaveNotification = Notification.Name("NSManagingContextDidSaveChangesNotification")
    /// Posted after a save, with sets of object IDs (Apple's recommended payload).
    public static let didSaveObjectIDsNotification = Notification.Name("NSManagedObjectContextDidSaveObjectIDsNotification")
    /// Posted after a merge, with the IDs of what the merge changed.
    public static let didMergeChangesObjectIDsNotification = Notification.Name("NSManagedObjectContextDidMergeChangesObjectIDsNotification")

    /// The userInfo keys Core Data uses.
    public enum NotificationKey: String, Sendable {
        case insertedObjects = "inserted"
        case updatedObjects = "updated"
        case deletedObjects = "deleted"
        case refreshedObjects = "refreshed"
        case invalidatedObjects = "invalidated"
        case invalidatedAllObjects = "invalidatedAll"
        case insertedObjectIDs = "inserted_objectIDs"
        case updatedObjectIDs = "updated_objectIDs"
        case deletedObjectIDs = "deleted_objectIDs"
        case refreshedObjectIDs = "refreshed_objectIDs"
        case invalidatedObjectIDs = "invalidated_objectIDs"
        case newChangeToken = "newChangeToken"
        /// `NSManagedObjectContextQueryGenerationKey`: the did-save's ``QueryGenerationToken``, the generation after
        /// the save (semantics §2.1 step 7, §3.7). The string is our inference; Core Data publishes only the symbol.
        case queryGeneration = "managedObjectContextQueryGenerationKey"
    }

    func postObjectsDidChange(
        inserted: Set<ManagedObject>, updated: Set<ManagedObject>, deleted: Set<ManagedObject>,
        refreshed: Set<ManagedObject> = [], invalidated: Set<ManagedObject> = [], invalidatedAll: Set<ManagedObjectID>? = nil
    ) {
        // A merge that touched nothing here posts nothing and allocates nothing.
        guard !inserted.isEmpty || !updated.isEmpty || !deleted.isEmpty || !refreshed.isEmpty || !invalidated.isEmpty
                || invalidatedAll != nil else { return }
        var info: [AnyHashable: Any] = [:]
        info.reserveCapacity(6)  // sized once
        if !inserted.isEmpty { info[NotificationKey.insertedObjects.rawValue] = inserted }
        if !updated.isEmpty { info[NotificationKey.updatedObjects.rawValue] = updated }
        if !deleted.isEmpty { info[NotificationKey.deletedObjects.rawValue] = deleted }
        if !refreshed.isEmpty { info[NotificationKey.refreshedObjects.rawValue] = refreshed }
        if !invalidated.isEmpty { info[NotificationKey.invalidatedObjects.rawValue] = invalidated }
        // Recorded on Apple: the value is the invalidated objects' IDs, not a flag.
        if let invalidatedAll { info[NotificationKey.invalidatedAllObjects.rawValue] = invalidatedAll }
        Probe.posting(.objectsDidChange(self)) { NotificationCenter.default.post(name: Self.objectsDidChangeNotification, object: self, userInfo: info) }
    }
}

/// The payload of an objects-did-change notification.
public struct ObjectsDidChange: @unchecked Sendable {  // objects: use on the posting context's queue
    public var context: ManagedObjectContext?
    public var inserted: Set<ManagedObject>
    public var updated: Set<ManagedObject>
    public var deleted: Set<ManagedObject>
    public var refreshed: Set<ManagedObject>
    public var invalidated: Set<ManagedObject>
    /// Whether every object was invalidated (`reset()`).
    public var invalidatedAll: Bool
    /// The IDs of the objects `reset()` invalidated (the value of the `invalidatedAll` key); empty otherwise.
    public var invalidatedAllObjectIDs: Set<ManagedObjectID>

    /// Reads the payload; nil for another notification.
    public init?(_ notification: Notification) {
        guard notification.name == ManagedObjectContext.objectsDidChangeNotification else { return nil }
        let info = notification.userInfo ?? [:]
        typealias Key = ManagedObjectContext.NotificationKey
        context = notification.object as? ManagedObjectContext
        inserted = info[Key.insertedObjects.rawValue] as? Set<ManagedObject> ?? []
        updated = info[Key.updatedObjects.rawValue] as? Set<ManagedObject> ?? []
        deleted = info[Key.deletedObjects.rawValue] as? Set<ManagedObject> ?? []
        refreshed = info[Key.refreshedObjects.rawValue] as? Set<ManagedObject> ?? []
        invalidated = info[Key.invalidatedObjects.rawValue] as? Set<ManagedObject> ?? []
        invalidatedAllObjectIDs = info[Key.invalidatedAllObjects.rawValue] as? Set<ManagedObjectID> ?? []
        invalidatedAll = info[Key.invalidatedAllObjects.rawValue] != nil
    }
}

/// The payload of a did-save notification (objects of the saving context).
public struct ContextDidSave: @unchecked Sendable {  // objects: use on the saving context's queue
    public var context: ManagedObjectContext?
    public var inserted: Set<ManagedObject>
    public var updated: Set<ManagedObject>
    public var deleted: Set<ManagedObject>
    /// The generation after the save (`NSManagedObjectContextQueryGenerationKey`), nil for a child's save into its
    /// parent and for a store without generations.
    public var queryGeneration: QueryGenerationToken?

    public init?(_ notification: Notification) {
        guard notification.name == ManagedObjectContext.didSaveNotification else { return nil }
        let info = notification.userInfo ?? [:]
        typealias Key = ManagedObjectContext.NotificationKey
        context = notification.object as? ManagedObjectContext
        inserted = info[Key.insertedObjects.rawValue] as? Set<ManagedObject> ?? []
        updated = info[Key.updatedObjects.rawValue] as? Set<ManagedObject> ?? []
        deleted = info[Key.deletedObjects.rawValue] as? Set<ManagedObject> ?? []
        queryGeneration = info[Key.queryGeneration.rawValue] as? QueryGenerationToken
    }
}

/// The payload of a did-save-object-IDs or did-merge-changes-object-IDs notification.
public struct ContextObjectIDChanges: Sendable {
    public var inserted: Set<ManagedObjectID>
    public var updated: Set<ManagedObjectID>
    public var deleted: Set<ManagedObjectID>
    public var refreshed: Set<ManagedObjectID>
    public var invalidated: Set<ManagedObjectID>

    /// Creates a change set.
    public init(inserted: Set<ManagedObjectID> = [], updated: Set<ManagedObjectID> = [], deleted: Set<ManagedObjectID> = [],
                refreshed: Set<ManagedObjectID> = [], invalidated: Set<ManagedObjectID> = []) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.refreshed = refreshed
        self.invalidated = invalidated
    }

    /// Reads the payload of a did-save-object-IDs or did-merge-changes-object-IDs notification.
    public init?(_ notification: Notification) {
        guard notification.name == ManagedObjectContext.didSaveObjectIDsNotification
                || notification.name == ManagedObjectContext.didMergeChangesObjectIDsNotification else { return nil }
        self.init(userInfo: notification.userInfo ?? [:])
    }

    /// The IDs of a did-save notification's objects (read them on the saving context's queue).
    init(saved: ContextDidSave) {
        self.init(inserted: Set(saved.inserted.map(\.objectID)), updated: Set(saved.updated.map(\.objectID)),
                  deleted: Set(saved.deleted.map(\.objectID)))
    }

    init(userInfo info: [AnyHashable: Any]) {
        typealias Key = ManagedObjectContext.NotificationKey
        inserted = info[Key.insertedObjectIDs.rawValue] as? Set<ManagedObjectID> ?? []
        updated = info[Key.updatedObjectIDs.rawValue] as? Set<ManagedObjectID> ?? []
        deleted = info[Key.deletedObjectIDs.rawValue] as? Set<ManagedObjectID> ?? []
        refreshed = info[Key.refreshedObjectIDs.rawValue] as? Set<ManagedObjectID> ?? []
        invalidated = info[Key.invalidatedObjectIDs.rawValue] as? Set<ManagedObjectID> ?? []
    }

    var userInfo: [AnyHashable: Any] {
        typealias Key = ManagedObjectContext.NotificationKey
        var info: [AnyHashable: Any] = [:]
        info.reserveCapacity(5)  // posted with every merge: no growth step by step
        info[Key.insertedObjectIDs.rawValue] = inserted
        info[Key.updatedObjectIDs.rawValue] = updated
        info[Key.deletedObjectIDs.rawValue] = deleted
        if !refreshed.isEmpty { info[Key.refreshedObjectIDs.rawValue] = refreshed }
        if !invalidated.isEmpty { info[Key.invalidatedObjectIDs.rawValue] = invalidated }
        return info
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty && invalidated.isEmpty }
}
