import Foundation

/// How a fetch is ordered (`NSSortDescriptor`): a key path, possibly through to-one relationships.
public struct ObjectSortDescriptor: Sendable, Hashable {
    /// The key path to sort by.
    public var key: String
    /// Ascending (nil first, as SQLite sorts) or descending.
    public var ascending: Bool

    /// Creates a sort descriptor.
    public init(_ key: String, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }
}

/// What a fetch returns.
public enum FetchResultType: Sendable, Hashable {
    /// Managed objects (the default).
    case managedObject
    /// Object IDs only.
    case managedObjectID
    /// Dictionaries of `propertiesToFetch`.
    case dictionary
    /// The number of matches.
    case count
}

/// How a fetch that includes pending changes combines them with the store's results (Rule 14, in
/// Docs/core-data-rules.md; both halves recorded second-hand).
public enum PendingChangesOverlay: Sendable, Hashable {
    /// Core Data's way (the default). A managed-object fetch applies `fetchOffset` and `fetchLimit` in the store,
    /// lays the context's unsaved inserts, updates and deletes over that window, sorts, and applies `fetchLimit`
    /// again: pending deletes are not backfilled and the offset does not skip pending inserts. An object-ID
    /// fetch keeps the store's order and appends the pending matches after the store's rows without sorting
    /// them (in the order they were inserted).
    case coreData
    /// Ours: the whole result is overlaid and sorted, then the offset and limit are applied, for objects and
    /// object IDs alike, so the window is exactly what a save followed by the same fetch would return. Costs a
    /// fetch of every match from the store.
    case wholeResult
}

/// What ``FetchRequest/shouldRefreshRefetchedObjects`` does to objects the context has loaded already
/// (Docs/core-data-rules.md Rule 21.6).
public enum RefetchedObjectsRefresh: Sendable, Hashable {
    /// Apple's observed behaviour (the default; FB7419788, second-hand from CoreDataPlus): a loaded object the
    /// fetch returns keeps the values it had, though the store has newer ones. The fetch's rows reach the row
    /// cache, as every fetch's do, so `refresh(_:mergeChanges: false)` or a fault shows them.
    case coreData
    /// Apple's documentation: each loaded object the fetch returns whose row changed takes the store's values,
    /// keeping its unsaved changes on top, as `refresh(_:mergeChanges: true)` does; one objects-did-change lists
    /// them as refreshed.
    case documented
}

/// A description of what to fetch (`NSFetchRequest`).
///
/// ```swift
/// var request = FetchRequest(entityName: "Item")
/// request.predicate = .compare("price", .greaterThan, 10)
/// request.sortDescriptors = [ObjectSortDescriptor("name")]
/// let items = try context.fetch(request)
/// ```
public struct FetchRequest: Sendable, Hashable {
    /// The entity to fetch.
    public var entityName: String
    /// Which objects match; nil matches all.
    public var predicate: ObjectPredicate?
    /// The order of results (none set reads as empty).
    public var sortDescriptors: [ObjectSortDescriptor] {
        get { sortDescriptorsIfSet ?? [] }
        set { sortDescriptorsIfSet = newValue }
    }
    /// The sort descriptors as set: nil when none were (`NSFetchRequest.sortDescriptors` is nil then), which a
    /// fetched results controller refuses, while an empty list is accepted (Rule 16, semantics §5).
    public var sortDescriptorsIfSet: [ObjectSortDescriptor]?
    /// At most this many results (0 = no limit).
    public var fetchLimit: Int = 0
    /// Skip this many results.
    public var fetchOffset: Int = 0
    /// Load row data this many objects at a time as the results are used (0 = all at once). Semantics §4.
    public var fetchBatchSize: Int = 0
    /// What to return.
    public var resultType: FetchResultType = .managedObject
    /// For dictionary results: the keys to include (nil = every attribute).
    public var propertiesToFetch: [String]?
    /// Whether unsaved inserts, updates and deletes are laid over the store's results (default true).
    public var includesPendingChanges = true
    /// Whether objects of the entity's sub-entities match too (default true, as `NSFetchRequest`'s), in the
    /// store and among pending changes (Docs/coredata-behaviour.md §11).
    public var includesSubentities = true
    /// How pending changes meet `fetchOffset`, `fetchLimit` and the order of object-ID results (default
    /// Core Data's, ``PendingChangesOverlay/coreData``).
    public var pendingChangesOverlay: PendingChangesOverlay = .coreData
    /// Whether objects come back as faults (default true; their data is in the row cache anyway).
    public var returnsObjectsAsFaults = true
    /// Whether row data is fetched at all (false: IDs only, each fault fires its own SQL).
    public var includesPropertyValues = true
    /// To-one and to-many key paths whose destinations are fetched in one extra query each.
    public var relationshipKeyPathsForPrefetching: [String] = []
    /// Whether objects the context already holds are updated with the store's values when the fetch returns them
    /// (`shouldRefreshRefetchedObjects`, default false). What that does follows ``refetchedObjectsRefresh``:
    /// by default nothing visible, as on Apple (semantics §2.3).
    public var shouldRefreshRefetchedObjects = false
    /// How ``shouldRefreshRefetchedObjects`` behaves: Apple's observed way (the default) or its documented one.
    public var refetchedObjectsRefresh: RefetchedObjectsRefresh = .coreData

    /// A request for every object of `entityName`.
    public init(entityName: String, predicate: ObjectPredicate? = nil, sortDescriptors: [ObjectSortDescriptor]? = nil) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptorsIfSet = sortDescriptors
    }
}

extension FetchRequest {
    /// Whether objects of `entity` are among what this request fetches: its entity or, with
    /// ``includesSubentities``, one below it (`isKindOfEntity:`). A controller's and an observer's filter of
    /// changed objects by entity.
    func includes(_ entity: EntityDescription) -> Bool {
        entity.name == entityName || (includesSubentities && entity.superentity != nil && entity.isKindOf(entityNamed: entityName))
    }
}
