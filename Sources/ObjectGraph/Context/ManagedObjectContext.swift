import Foundation
import Synchronization

/// Deterministic counters of a context.
package struct ContextCounters: Sendable, Equatable, Codable {
    /// Faults fired (object data loaded).
    package var faultsFired = 0
    /// To-many relationship faults fired.
    package var relationshipFaultsFired = 0
    /// Objects created in the registry (faults or inserted).
    package var objectsRegistered = 0
    /// Saves that wrote something.
    package var saves = 0
    /// Merges performed (`mergeChanges(fromContextDidSave:)` and friends).
    package var merges = 0
    /// IDs in merged notifications that were looked up in the registry.
    package var mergeObjectsExamined = 0
    /// Registered objects refreshed by merges.
    package var mergeObjectsRefreshed = 0
    /// Objects-did-change notifications posted.
    package var objectsDidChangeNotifications = 0
    /// Conflicts handed to the merge policy.
    package var conflictsResolved = 0

    package init() {}
}

/// A scratch pad of objects (`NSManagedObjectContext`) on a private queue or the main queue, whose parent is a
/// coordinator or another context.
///
/// ```swift
/// let context = ManagedObjectContext(concurrencyType: .privateQueue)
/// context.persistentStoreCoordinator = coordinator
/// try context.performAndWait {
///     let item = Item(context: context)
///     item.name = "first"
///     try context.save()
/// }
/// ```
public final class ManagedObjectContext: @unchecked Sendable {  // every mutable member is guarded by `queue`
    /// Where a context runs its work.
    public enum ConcurrencyType: Sendable {
        case mainQueue
        case privateQueue
    }

    /// The context's concurrency type.
    public let concurrencyType: ConcurrencyType
    /// The queue that guards the context and its objects.
    public let queue: ContextQueue

    /// The coordinator (for a child context, its root's).
    public var persistentStoreCoordinator: PersistentStoreCoordinator? {
        get { parent?.persistentStoreCoordinator ?? _coordinator }
        set {
            precondition(parent == nil, "a child context has no coordinator of its own")
            _coordinator = newValue
            unretainedCoordinator = newValue.map { Unmanaged.passUnretained($0) }
            Probe.note(.setCoordinator(self, newValue))
        }
    }
    @exclusivity(unchecked) private var _coordinator: PersistentStoreCoordinator?
    /// `_coordinator` without a reference of its own (`_coordinator` keeps it), for the fault path, which would
    /// otherwise retain and release it per fault: the coordinator has weak references, so each is the runtime's slow
    /// path, on a count every context's queue shares.
    @exclusivity(unchecked) private var unretainedCoordinator: Unmanaged<PersistentStoreCoordinator>?

    /// The parent context of a child context (semantics §2.2).
    public var parent: ManagedObjectContext? {
        get { storedParent }
        set {
            precondition(_coordinator == nil || newValue == nil, "a context has a coordinator or a parent, not both")
            let old = storedParent
            storedParent = newValue
            Probe.note(.setParent(self, newValue))
            guard old !== newValue else { return }
            old?.forgetChild(self)
            // Semantics §2.2: the parent learns of the child, so that a root save can give the child's objects
            // their permanent IDs too (``propagatePermanentIDs(_:)``).
            newValue?.noteChild(self)
        }
    }
    @exclusivity(unchecked) private var storedParent: ManagedObjectContext?
    /// The live child contexts, in the order they were given this parent. Weak: a parent never keeps a child
    /// alive (the child holds its parent); a context already has a weak reference's side table (observers capture
    /// it weakly), so this one costs its retains nothing more. Behind a lock, not the queue: a child is usually
    /// made and given its parent on another thread than the parent's queue, while the parent may be saving.
    private let children = Mutex<[WeakContext]>([])
    /// A name, carried in notifications and history.
    public var name: String? {
        didSet { Probe.note(.setting(self, "name", name ?? "")) }
    }
    /// Anything the app wants to keep with the context (`NSManagedObjectContext.userInfo`).
    public var userInfo: [String: any Sendable] = [:]
    /// When set, ``save()`` first asks it; an error it returns refuses the save with nothing changed (used by
    /// stacks that offer strictly read-only contexts).
    package var saveRefusal: (@Sendable (ManagedObjectContext) -> (any Error)?)?
    /// Told after each automatic merge (`automaticallyMergesChangesFromParent`) with the uptime in nanoseconds
    /// when the save was announced and when the merge finished, and the merged changes (for measurement).
    /// Told on this context's queue after a child's save was pushed into it, with the child (for measurement, and
    /// for a checker to attribute what the push brought to the child that made it).
    package var childPushHook: (@Sendable (ManagedObjectContext) -> Void)?
    /// Called on this context's queue when a child's fetch, count or fault reads through it (for
    /// main-queue accounting).
    package var childReadHook: (@Sendable () -> Void)?
    package var automaticMergeHook: (@Sendable (_ announcedAt: UInt64, _ finishedAt: UInt64, _ changes: ContextObjectIDChanges) -> Void)?
    /// The query generation this context reads: nil when unpinned (``queryGenerationToken``).
    let pinnedGeneration = Mutex<QueryGenerationToken?>(nil)
    /// The author recorded in persistent history for this context's saves.
    public var transactionAuthor: String? {
        didSet { Probe.note(.setting(self, "transactionAuthor", transactionAuthor ?? "")) }
    }
    /// How conflicts are settled when this context saves to a coordinator (default `.error`, semantics §7).
    public var mergePolicy: MergePolicy = .error {
        didSet { Probe.note(.setting(self, "mergePolicy", mergePolicy.traceName)) }
    }
    /// How long cached rows may fulfil faults, in seconds; negative is infinite (the default, semantics §2.3).
    public var stalenessInterval: TimeInterval {
        get { storedStalenessInterval }
        set {
            storedStalenessInterval = newValue
            Probe.note(.setting(self, "stalenessInterval", String(newValue)))
        }
    }
    private var storedStalenessInterval: TimeInterval = -1
    /// Whether a fault whose row is gone becomes a deleted object with nil/zero values (default true) or throws.
    public var shouldDeleteInaccessibleFaults: Bool {
        get { storedShouldDeleteInaccessibleFaults }
        set { storedShouldDeleteInaccessibleFaults = newValue }
    }
    private var storedShouldDeleteInaccessibleFaults = true
    /// Whether the context merges saves of its parent (or, for a root context, of sibling contexts on its
    /// coordinator) by itself (semantics §3.3). Default false.
    public var automaticallyMergesChangesFromParent = false {
        didSet {
            Probe.note(.setting(self, "automaticallyMergesChangesFromParent", String(automaticallyMergesChangesFromParent)))
            updateAutomaticMerging()
        }
    }
    /// Whether registered objects are held strongly (default false: only objects with changes are).
    public var retainsRegisteredObjects: Bool {
        get { storedRetainsRegisteredObjects }
        set {
            storedRetainsRegisteredObjects = newValue
            strongRegistered = newValue ? Dictionary(uniqueKeysWithValues: liveRegistered().map { ($0.objectID, $0) }) : [:]
        }
    }
    @exclusivity(unchecked) private var storedRetainsRegisteredObjects = false
    /// Deterministic counters.
    package internal(set) var counters: ContextCounters {
        get { storedCounters }
        set { storedCounters = newValue }
    }
    // Internal storage behind the public accessors: the per-object paths (registering, firing faults) update and
    // read them without Swift's run-time exclusivity check, which public stored properties always pay.
    @exclusivity(unchecked) var storedCounters = ContextCounters()

    // MARK: Object state
    // The context's state is confined to its queue (`assertOnQueue`) and only ever accessed briefly: no run-time
    // exclusivity checks on these per-object paths.
    /// The registered objects, held without keeping them alive (semantics §2.1 step 8; see ``ObjectRegistry``).
    let registry = ObjectRegistry()
    /// The inserted and pending-insert sets keep their capacity (up to this) when a save or an objects-did-change
    /// empties them, so the next chunk of an import does not grow them again from nothing.
    static let keptSetCapacity = 4096
    @exclusivity(unchecked) var strongRegistered: [ManagedObjectID: ManagedObject] = [:]
    /// The ID changes this context has made since it first served a child, kept until ``reset()`` (semantics §2.2,
    /// ``KeptIDChanges``); nil while it has served none.
    @exclusivity(unchecked) var keptIDChanges: KeptIDChanges?
    @exclusivity(unchecked) var insertedSet: Set<ManagedObject> = []
    @exclusivity(unchecked) var updatedSet: Set<ManagedObject> = []
    @exclusivity(unchecked) var deletedSet: Set<ManagedObject> = []
    // Changes not yet announced by objects-did-change.
    @exclusivity(unchecked) var pendingInserted: Set<ManagedObject> = []
    @exclusivity(unchecked) var pendingUpdated: Set<ManagedObject> = []
    @exclusivity(unchecked) var pendingDeleted: Set<ManagedObject> = []
    @exclusivity(unchecked) var isSaving = false
    /// Whether an insert was turned into a fault since the last save (Rule 12): the save drops those.
    @exclusivity(unchecked) var hasFaultedInserts = false
    @exclusivity(unchecked) var lockedObjects: Set<ManagedObject> = []
    /// The store number each inserted object was assigned to by ``assign(_:to:)``, by its temporary ID (empty
    /// unless a store was assigned: a save then carries no assignment).
    @exclusivity(unchecked) var assignedStores: [ManagedObjectID: UInt32] = [:]
    /// The change set a merge is announcing, while its objects-did-change is posted (a fetched results controller
    /// folds the updates it must look up into the same change cycle, Rule 10).
    @exclusivity(unchecked) var changesBeingMerged: ContextObjectIDChanges?
    var automaticMergeObserver: (any NSObjectProtocol)?
    /// The context's undo manager; see ``undoManager``.
    @exclusivity(unchecked) var storedUndoManager: UndoManager?
    /// The state each object had before its first change of the current event, while an undo manager is set
    /// (Rule 21.3): registered as one undo action by ``processPendingChanges()``.
    @exclusivity(unchecked) var undoRecords: UndoRecords?
    /// Above 0 while the context changes objects for its own bookkeeping (refresh, merges, a save's conflict
    /// resolution): those changes are not undoable.
    @exclusivity(unchecked) var undoCaptureSuppressed = 0
    var coordinatorObserverToken: AnyObject?
    /// The controllers tracking this context, told of its notifications in order (``ControllerHub``; held by them).
    weak var controllerHub: ControllerHub?

    /// Creates a context.
    /// - Parameters:
    ///   - concurrencyType: `.privateQueue` makes a queue; `.mainQueue` uses ``ContextQueue/main`` unless
    ///     `queue` names another.
    ///   - queue: the queue for a `.mainQueue` context (for example a simulated main thread).
    public init(concurrencyType: ConcurrencyType, queue: ContextQueue? = nil) {
        self.concurrencyType = concurrencyType
        switch concurrencyType {
        case .mainQueue: self.queue = queue ?? ContextQueue.main
        case .privateQueue: self.queue = queue ?? ContextQueue(label: "ObjectGraph.context")
        }
        Probe.note(.contextCreated(self))
    }

    deinit {
        Probe.freed(self)
        if let automaticMergeObserver { NotificationCenter.default.removeObserver(automaticMergeObserver) }
        // Rule 1: a context that goes turns its objects into faults as reset() does. That breaks the
        // cycles of objects holding one another, so a dropped context frees its objects, and its objects stop
        // pointing at it (they hold it unowned, see ManagedObject.managedObjectContext).
        orphanAll(registry.liveObjects())
    }

    /// Whether an object this context dropped at ``reset()`` (or when it was deinitialized) fails when touched,
    /// instead of fulfilling its fault from the store without a context as Core Data does (Rule 2).
    /// Default false.
    public var orphanedFaultsFailToFire = false

    /// The model of the coordinator.
    package var model: ManagedObjectModel {
        guard let coordinator = persistentStoreCoordinator else {
            preconditionFailure("the context has neither a coordinator nor a parent")
        }
        return coordinator.managedObjectModel
    }

    // MARK: Children

    /// A weak reference to a child context.
    struct WeakContext: @unchecked Sendable {  // read and written only inside the parent's `children` lock
        weak var context: ManagedObjectContext?
    }

    private func noteChild(_ child: ManagedObjectContext) {
        children.withLock { list in
            // Children that went are dropped here, so the list stays as long as the live ones (an importer made
            // per chunk and let go leaves nothing behind for long).
            list.removeAll { $0.context == nil }
            list.append(WeakContext(context: child))
        }
    }

    private func forgetChild(_ child: ManagedObjectContext) {
        children.withLock { list in list.removeAll { $0.context == nil || $0.context === child } }
    }

    /// The live children, in creation order (the order they were given this parent): never a set's or an
    /// address's order.
    func liveChildren() -> [ManagedObjectContext] {
        children.withLock { list in list.compactMap(\.context) }
    }

    /// The live descendants, depth first in creation order (a child before its own children, and before its
    /// younger siblings).
    func liveDescendants() -> [ManagedObjectContext] {
        var result: [ManagedObjectContext] = []
        func walk(_ context: ManagedObjectContext) {
            for child in context.liveChildren() {
                result.append(child)
                walk(child)
            }
        }
        walk(self)
        return result
    }

    // MARK: Queue

    /// Runs `block` asynchronously on the context's queue, then processes pending changes (semantics §8).
    public func perform(_ block: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            block()
            processPendingChanges()
        }
    }

    /// Runs `block` on the context's queue and returns its result, processing pending changes afterwards.
    public func perform<T: Sendable>(_ block: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { [self] in
                let result = Result { try block() }
                processPendingChanges()
                continuation.resume(with: result)
            }
        }
    }

    /// Runs `block` synchronously on the context's queue; reentrant; does not process pending changes
    /// (semantics §8).
    public func performAndWait<T, E: Error>(_ block: () throws(E) -> T) throws(E) -> T {
        try queue.sync(block)
    }

    /// Whether wrong-queue access traps (Core Data's `-com.apple.CoreData.ConcurrencyDebug 1`). On by default
    /// in debug builds.
    // Read on every property access: no run-time exclusivity check (set once, at start-up, by the app or a test).
    @exclusivity(unchecked) nonisolated(unsafe) public static var concurrencyDebug: Bool = {
        #if DEBUG
        return true
        #else
        return false
        #endif
    }()

    func assertOnQueue(_ function: StaticString = #function) {
        if Self.concurrencyDebug, !queue.isCurrent {
            preconditionFailure("ObjectGraph concurrency violation: \(function) on context \(name ?? queue.label) called off its queue; use perform or performAndWait")
        }
    }

    // MARK: Registry

    /// The objects registered in the context (weakly held unless they have changes, semantics §2.1 step 8).
    public var registeredObjects: Set<ManagedObject> {
        assertOnQueue()
        return Set(liveRegistered())
    }

    func liveRegistered() -> [ManagedObject] {
        registry.liveObjects()
    }

    /// The number of live registered objects.
    package var registeredObjectCount: Int {
        registry.liveCount()
    }

    /// The temporary-to-permanent ID changes this context keeps for its children (semantics §2.2): one per object
    /// that took a permanent ID here since the context first served a child; ``reset()`` empties them.
    package var keptIDChangeCount: Int {
        assertOnQueue()
        return keptIDChanges?.count ?? 0
    }

    // Issue "ObjectGraph core", Bad input: wrong-queue use traps with a message (semantics §8, ConcurrencyDebug),
    // for these accessors too.
    /// The objects inserted since the last save.
    public var insertedObjects: Set<ManagedObject> { assertOnQueue(); return insertedSet }
    /// The objects updated since the last save.
    public var updatedObjects: Set<ManagedObject> { assertOnQueue(); return updatedSet }
    /// The objects deleted since the last save.
    public var deletedObjects: Set<ManagedObject> { assertOnQueue(); return deletedSet }
    /// Whether anything is inserted, updated or deleted.
    public var hasChanges: Bool { assertOnQueue(); return !insertedSet.isEmpty || !updatedSet.isEmpty || !deletedSet.isEmpty }

    func register(_ object: ManagedObject) {
        let full = registry.insert(object)
        object.managedObjectContext = self
        if retainsRegisteredObjects { strongRegistered[object.objectID] = object }
        Probe.count(.objectRegistered(self))
        if full { registry.sweep(reserving: true) }
    }

    func unregister(_ object: ManagedObject) {
        registry.remove(object.objectID)
        strongRegistered[object.objectID] = nil
        if object.managedObjectContext === self { object.managedObjectContext = nil }
    }

    /// The object for `id` if it is registered here; never loads anything.
    public func registeredObject(for id: ManagedObjectID) -> ManagedObject? {
        return Probe.call(.objectWithID(self, id, how: "registered"), result: { .object($0) }) { performRegisteredObject(for: id) }
    }

    private func performRegisteredObject(for id: ManagedObjectID) -> ManagedObject? {
        assertOnQueue()
        return registry[id]
    }

    /// The object for `id`: the registered one, or a new fault. Never does I/O and never fails; a fault for a
    /// missing row fails when it fires (semantics §4).
    public func object(with id: ManagedObjectID) -> ManagedObject {
        return Probe.call(.objectWithID(self, id, how: "object"), result: { .object($0) }) { performObject(with: id) }
    }

    private func performObject(with id: ManagedObjectID) -> ManagedObject {
        if let existing = registry[id] { return existing }
        let object = id.entity.managedObjectClass.init(entity: id.entity, insertInto: nil)
        object.objectID = id
        object.becomeNewFault()
        if !id.isTemporaryID, let coordinator = persistentStoreCoordinator {
            // Another coordinator's ID names the same row here; the object takes this coordinator's own ID
            // for it, as its fetches would give it (Docs/coredata-behaviour.md §3.6).
            if id.coordinatorTag != coordinator.idTag { object.objectID = id.minted(byCoordinatorTag: coordinator.idTag) }
            coordinator.rowCache.retain(id)
            object.cacheReference = coordinator.rowCache
        }
        register(object)
        return object
    }

    /// The object for `id`, loaded: never a fault; throws when its row does not exist (semantics §4).
    public func existingObject(with id: ManagedObjectID) throws -> ManagedObject {
        return try Probe.call(.objectWithID(self, id, how: "existing"), result: { .object($0) }) { try performExistingObject(with: id) }
    }

    private func performExistingObject(with id: ManagedObjectID) throws -> ManagedObject {
        assertOnQueue()
        if let existing = registry[id], !existing.isFaultFlag { return existing }
        if id.isTemporaryID, registry[id] == nil {
            throw ObjectGraphError(.referentialIntegrity, "no object with temporary ID \(id) in this context", entity: id.entity.name, objectID: id)
        }
        let object = self.object(with: id)
        try fulfillFault(object, throwing: true)
        return object
    }

    /// Inserts an object created with a nil context.
    public func insert(_ object: ManagedObject) {
        assertOnQueue()
        precondition(object.managedObjectContext == nil || object.managedObjectContext === self, "the object is in another context")
        // Core Data raises (NSInternalInconsistencyException) for an instance of an abstract
        // entity; like the other programmer errors here, it traps with a message.
        precondition(!object.entity.isAbstract, "cannot insert an object of \(object.entity.name), which is abstract: insert one of its sub-entities")
        if object.isInsertedFlag, object.managedObjectContext === self { return }
        noteWillChange(object)
        object.prepareForInsert()
        object.orphanSource = nil
        object.isInsertedFlag = true
        register(object)
        insertedSet.insert(object)
        pendingInserted.insert(object)
        object.isInsertPending = true
        object.awakeFromInsert()
    }

    /// Creates and inserts an object of the named entity, of the entity's class.
    public func insertNewObject(forEntityName name: String) throws -> ManagedObject {
        return try Probe.call(.insert(self, entity: name), result: { .object($0) }) { try performInsertNewObject(forEntityName: name) }
    }

    private func performInsertNewObject(forEntityName name: String) throws -> ManagedObject {
        guard let entity = model.entity(named: name) else {
            throw ObjectGraphError(.validation, "no entity named \(name)", entity: name)
        }
        // By name, an abstract entity is refused as an unknown one is (Core Data raises for both).
        guard !entity.isAbstract else {
            throw ObjectGraphError(.validation, "cannot insert an object of \(name), which is abstract: insert one of its sub-entities", entity: name)
        }
        return entity.managedObjectClass.init(entity: entity, insertInto: self)
    }

    /// Marks an object deleted; delete rules run at the next ``processPendingChanges()`` or save.
    public func delete(_ object: ManagedObject) {
        Probe.call(.delete(object)) { if markDeleted(object) { Probe.count(.objectDeleted) } }
    }

    /// Marks `object` deleted as ``delete(_:)`` does, without counting it: a child's save and a merge mark their
    /// deletes here, priced as the push and the merge.
    /// - Returns: whether the object was newly marked deleted.
    @discardableResult
    func markDeleted(_ object: ManagedObject) -> Bool {
        assertOnQueue()
        guard object.managedObjectContext === self else { return false }
        // Deleting an object already deleted calls prepareForDeletion() again, and changes nothing else
        // (Docs/coredata-behaviour.md §2.1; verified on Apple, second-hand).
        if object.isDeletedFlag {
            object.prepareForDeletion()
            return false
        }
        if object.isFaultFlag {
            do { try fulfillFault(object, throwing: true) } catch {
                // The row is already gone: nothing to delete (semantics §1.4).
                return false
            }
        }
        noteWillChange(object)
        object.prepareForDeletion()
        object.isDeletedFlag = true
        object.deletePropagated = false
        if object.isInsertedFlag {
            insertedSet.remove(object)
            pendingInserted.remove(object)
            object.isInsertPending = false
        }
        unmarkUpdated(object)
        deletedSet.insert(object)
        pendingDeleted.insert(object)
        return true
    }

    // The updated and pending-update sets, with a flag on each member: noting a change to an object already in
    // them (the group that gains an item on every insert of an import) tests the flag instead of hashing twice.
    // The flag says the object is not a member yet, so it joins with `update(with:)`, which returns nothing for a
    // new member: `insert` returns the member after the insert, a copy that is retained and released again (0.16k
    // instructions per insert while registered objects had side tables, before ``ObjectRegistry``).
    func markUpdated(_ object: ManagedObject) {
        guard !object.isInUpdatedSet else { return }
        updatedSet.update(with: object)
        object.isInUpdatedSet = true
    }

    func unmarkUpdated(_ object: ManagedObject) {
        guard object.isInUpdatedSet else { return }
        updatedSet.remove(object)
        object.isInUpdatedSet = false
    }

    func clearUpdated() {
        for object in updatedSet { object.isInUpdatedSet = false }
        // Kept (up to a bound) for the next chunk of an import, which would otherwise grow it again step by step.
        updatedSet.removeAll(keepingCapacity: updatedSet.count <= Self.keptSetCapacity)
    }

    func markUpdatePending(_ object: ManagedObject) {
        guard !object.isUpdatePending else { return }
        pendingUpdated.update(with: object)  // not a member (the flag): see markUpdated
        object.isUpdatePending = true
    }

    func clearPendingUpdates() {
        for object in pendingUpdated { object.isUpdatePending = false }
        pendingUpdated.removeAll(keepingCapacity: pendingUpdated.count <= Self.keptSetCapacity)
    }

    /// Records that an object changed (called by its setters).
    func noteChange(_ object: ManagedObject) {
        guard !object.isDeletedFlag else { return }
        // Semantics §5: a change to an inserted object after its insert was announced is announced as an update
        // in the next objects-did-change (so a fetched results controller re-sorts it); it does not join
        // `updatedObjects`.
        // An insert not yet announced is reported as an insert alone, so an import's setters record nothing more.
        if object.isInsertedFlag {
            if !object.isInsertPending { markUpdatePending(object) }
            return
        }
        if object.hasPersistentChanges || object.transientsChanged {
            markUpdated(object)
        } else {
            unmarkUpdated(object)
        }
        markUpdatePending(object)
    }

    // MARK: Pending changes

    /// Runs delete rules for new deletes and posts objects-did-change for changes not yet announced
    /// (semantics §2.1 step 1).
    public func processPendingChanges() {
        return Probe.call(.contextCall(self, "processPendingChanges")) { performProcessPendingChanges() }
    }

    private func performProcessPendingChanges() {
        propagateDeletes()
        // Rule 21.3: the event's changes become one undo action (CDPG: processPendingChanges "causes
        // changes to registered managed objects to be recorded with the undo manager").
        if undoRecords != nil { registerUndoEvent() }
        defer { storedUndoManager?.endEventGroup() }
        guard !pendingInserted.isEmpty || !pendingUpdated.isEmpty || !pendingDeleted.isEmpty else { return }
        let inserted = pendingInserted, updated = pendingUpdated.subtracting(pendingInserted).subtracting(pendingDeleted), deleted = pendingDeleted
        pendingInserted.removeAll(keepingCapacity: pendingInserted.count <= Self.keptSetCapacity)
        clearPendingUpdates()
        pendingDeleted = []
        for object in inserted { object.isInsertPending = false }
        postObjectsDidChange(inserted: inserted, updated: updated, deleted: deleted)
        for object in updated { object.eventChangedSlots = [] }
    }

    func propagateDeletes() {
        var queue = deletedSet.filter { !$0.deletePropagated }
        while let object = queue.popFirst() {
            object.deletePropagated = true
            for relationship in object.entity.relationships {
                guard let (_, inverse) = object.entity.relationshipTargets[relationship.name] else { continue }
                var destinations: [ManagedObject] = []
                switch object.ref(relationship.name) {
                case .toOne(let slot)?:
                    if case .objectID(let id) = object.values[slot] { destinations = [self.object(with: id)] }
                case .toMany(let index)?:
                    let ids = (try? object.relatedIDs(index)) ?? []
                    destinations = ids.map { self.object(with: $0) }
                default: break
                }
                switch relationship.deleteRule {
                case .nullify:
                    for d in destinations where !d.isDeletedFlag { try? d.inverseRemove(inverse, object.objectID) }
                case .cascade:
                    // Docs/coredata-behaviour.md §2.1: each object a cascade deletes is one the context marks
                    // deleted itself, whoever deleted the first (a merge's cascades included).
                    for d in destinations where !d.isDeletedFlag && markDeleted(d) {
                        Probe.count(.objectDeleted)
                        queue.insert(d)
                    }
                case .deny, .noAction:
                    break
                }
            }
            // Rule 21.2: the objects a transient relationship names forget the deleted object (nullify).
            let transientRelationships = object.entity.transientRelationships
            if !transientRelationships.isEmpty {
                for index in transientRelationships.indices {
                    let inverse = object.entity.transientRelationshipTargets[index].inverse
                    for id in object.transientLink(index).sorted(by: { $0.description < $1.description }) {
                        if let d = registry[id], !d.isDeletedFlag { d.transientLinkRemove(inverse, object.objectID) }
                    }
                }
            }
        }
    }

    // MARK: Faults

    func fulfillFault(_ object: ManagedObject) throws {
        try fulfillFault(object, throwing: !shouldDeleteInaccessibleFaults)
    }

    /// Loads a fault's data from the parent store: the row cache when fresh, else the store (semantics §4).
    func fulfillFault(_ object: ManagedObject, throwing: Bool) throws {
        guard object.isFaultFlag else { return }
        if let batch = object.faultBatch, !batch.isLoaded, let coordinator = persistentStoreCoordinator, parent == nil {
            batch.isLoaded = true
            // A pinned context reads each fault in its generation: nothing to batch into the cache.
            if pinnedGeneration.withLock({ $0 }) == nil { _ = try coordinator.rows(for: batch.ids) }
        }
        object.faultBatch = nil
        guard let row = try cachedFetchedRow(of: object) ?? rowForFault(object.objectID) else {
            if throwing {
                throw ObjectGraphError(.referentialIntegrity, "CoreData could not fulfill a fault: the row no longer exists",
                                       entity: object.entity.name, objectID: object.objectID)
            }
            // shouldDeleteInaccessibleFaults: a deleted object whose properties read as nil or zero.
            object.fill(from: RowSnapshot(values: object.entity.slots.map { slot in
                if case .attribute(let a) = slot, !a.isOptional { return a.type.zeroValue }
                return .null
            }, version: 0))
            object.isDeletedFlag = true
            // Rule 27 (semantics §4 shouldDeleteInaccessibleFaults): the object is deleted here, in
            // deletedObjects, and the next objects-did-change reports it; no delete rules run for a row that is gone.
            object.deletePropagated = true
            unmarkUpdated(object)
            deletedSet.insert(object)
            pendingDeleted.insert(object)
            Probe.count(.faultFired(self))
            return
        }
        object.fill(from: row)
        Probe.count(.faultFired(self))
        object.awakeFromFetch()
    }

    /// The row a fetch left with `object` when the row cache's entry still holds it: what ``rowForFault(_:)`` would
    /// find in the cache (a fresh row, counted as the same row-cache hit), without looking the entry up. Nil when the
    /// context reads a pinned generation, when rows may go stale (a finite ``stalenessInterval``), or when any entry
    /// of the cache changed since the fetch, or when the context's coordinator is not the one whose cache the row is
    /// in. Only a context with a coordinator of its own gives its faults a row, and such a context never gets a
    /// parent.
    private func cachedFetchedRow(of object: ManagedObject) throws -> RowSnapshot? {
        guard let fetched = object.fetchedRow.take() else { return nil }
        guard stalenessInterval < 0, let cache = object.cacheReference, cache.holdsUnchanged(since: fetched.cachedAt),
              let coordinator = unretainedCoordinator, coordinator._withUnsafeGuaranteedRef({ $0.rowCache === cache }),
              try readGeneration() == nil else { return nil }
        coordinator._withUnsafeGuaranteedRef { Probe.countRowCacheHit($0) }
        return fetched.row
    }

    func rowForFault(_ id: ManagedObjectID) throws -> RowSnapshot? {
        if let parent {
            return try parent.performAndWait { parent.childReadHook?(); return try parent.rowForChild(id) }
        }
        guard let coordinator = persistentStoreCoordinator else { return nil }
        if id.isTemporaryID { return nil }
        return try coordinator.row(for: id, staleness: stalenessInterval, generation: try readGeneration())
    }

    /// A row for a child's fault: this context's current state of the object when it has one (the child
    /// sees the parent's unsaved changes, semantics §2.2), else the row from further up.
    func rowForChild(_ id: ManagedObjectID) throws -> RowSnapshot? {
        let id = servingChild(id)
        if let object = registry[id], !object.isFaultFlag {
            if object.isDeletedFlag { return nil }
            return RowSnapshot(values: object.values, version: object.snapshotVersion)
        }
        return try rowForFault(id)
    }

    /// The IDs among `ids` whose fault, fired here, reads its row from the store with a query of its own: neither
    /// the coordinator's row cache holds the row fresh, nor (for a child) an ancestor holds the object loaded.
    /// A pinned context reads every row in its generation (Docs/coredata-behaviour.md §3.7). Nothing is read.
    func idsReadingStore(_ ids: [ManagedObjectID]) throws -> Set<ManagedObjectID> {
        if let parent {
            return try parent.performAndWait { try parent.idsReadingStoreForChild(ids) }
        }
        guard let coordinator = persistentStoreCoordinator else { return [] }
        let stored = ids.filter { !$0.isTemporaryID }
        if pinnedGeneration.withLock({ $0 }) != nil { return Set(stored) }
        return Set(stored.filter { !coordinator.cachesRow(for: $0, staleness: stalenessInterval) })
    }

    /// ``idsReadingStore(_:)`` for a child's faults: those this context holds loaded are answered from it
    /// (``rowForChild(_:)``).
    private func idsReadingStoreForChild(_ ids: [ManagedObjectID]) throws -> Set<ManagedObjectID> {
        let served = ids.map { (mine: keptIDChanges?.permanentByTemporary[$0] ?? $0, child: $0) }
            .filter { registry[$0.mine].map(\.isFaultFlag) ?? true }
        let reading = try idsReadingStore(served.map(\.mine))
        return Set(served.filter { reading.contains($0.mine) }.map(\.child))
    }

    func fulfillToMany(_ object: ManagedObject, index: Int) throws {
        if object.entity.hasOrderedToMany, object.entity.toManyIsOrdered[index] { return try fulfillOrderedToMany(object, index: index) }
        let relationship = object.entity.toManyRelationships[index]
        let ids: Set<ManagedObjectID>
        if let parent {
            ids = try parent.performAndWait { parent.childReadHook?(); return try parent.toManyForChild(object.objectID, index: index) }
        } else if object.objectID.isTemporaryID || persistentStoreCoordinator == nil {
            ids = []
        } else {
            ids = Set(try persistentStoreCoordinator!.relatedIDs(of: object.objectID, relationship: relationship, generation: try readGeneration()))
        }
        Probe.count(.relationshipFaultFired(self))
        object.installToMany(index, stored: ids)
    }

    /// Docs/coredata-behaviour.md §12.2: an ordered relationship's fault reads its members in order, from the
    /// store's order column or from the parent's loaded order.
    private func fulfillOrderedToMany(_ object: ManagedObject, index: Int) throws {
        let ids: [ManagedObjectID]
        if let parent {
            ids = try parent.performAndWait { parent.childReadHook?(); return try parent.orderedToManyForChild(object.objectID, index: index) }
        } else if object.objectID.isTemporaryID || persistentStoreCoordinator == nil {
            ids = []
        } else {
            ids = try persistentStoreCoordinator!.relatedIDs(of: object.objectID, relationship: object.entity.toManyRelationships[index], generation: try readGeneration())
        }
        Probe.count(.relationshipFaultFired(self))
        object.installToMany(index, storedOrder: ids)
    }

    func orderedToManyForChild(_ id: ManagedObjectID, index: Int) throws -> [ManagedObjectID] {
        let id = servingChild(id)
        if let object = registry[id] {
            _ = try object.relatedIDs(index)
            return object.toMany[index]?.ordered ?? []
        }
        if let parent { return try parent.performAndWait { parent.childReadHook?(); return try parent.orderedToManyForChild(id, index: index) } }
        guard !id.isTemporaryID, let coordinator = persistentStoreCoordinator else { return [] }
        return try coordinator.relatedIDs(of: id, relationship: id.entity.toManyRelationships[index], generation: try readGeneration())
    }

    func toManyForChild(_ id: ManagedObjectID, index: Int) throws -> Set<ManagedObjectID> {
        let id = servingChild(id)
        if let object = registry[id] {
            return try object.relatedIDs(index)
        }
        if let parent { return try parent.performAndWait { parent.childReadHook?(); return try parent.toManyForChild(id, index: index) } }
        guard !id.isTemporaryID, let coordinator = persistentStoreCoordinator else { return [] }
        return Set(try coordinator.relatedIDs(of: id, relationship: id.entity.toManyRelationships[index], generation: try readGeneration()))
    }

    // MARK: Refresh, rollback, reset

    /// Refreshes an object (semantics §3.2): with `mergeChanges` false it becomes a fault and loses its
    /// changes; with true it takes the parent store's values (the row cache unless stale) and keeps its local
    /// changes on top. Never a conflict.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        return Probe.call(.refresh(object, mergeChanges: mergeChanges)) { performRefresh(object, mergeChanges: mergeChanges) }
    }

    private func performRefresh(_ object: ManagedObject, mergeChanges: Bool) {
        assertOnQueue()
        guard object.managedObjectContext === self else { return }
        // Rule 21.3: a refresh (and the merges built on it) is not an undoable change (inferred).
        undoCaptureSuppressed += 1
        defer { undoCaptureSuppressed -= 1 }
        if !mergeChanges || !object.hasPersistentChanges || object.isFaultFlag {
            if object.isInsertedFlag {
                // Rule 12: refresh(_:mergeChanges: false) turns an inserted object into a fault too. It
                // stays registered and inserted (Docs/core-data-rules.md); having no row, it fires as an
                // inaccessible fault, and the save drops it.
                guard !mergeChanges, !object.isFaultFlag else { return }
                hasFaultedInserts = true
                object.willTurnIntoFault()
                object.becomeFault()
                object.didTurnIntoFault()
                return
            }
            if mergeChanges, object.isFaultFlag { return }
            // Semantics §3.2: with merging, transient values are put back after the reload (Rule 5), and
            // the object keeps the related objects it holds (a merge does not trim the graph); without, both go.
            let kept = mergeChanges ? (transients: object.transients, links: object.transientLinks, changed: object.transientsChanged, held: object.heldObjects) : nil
            object.willTurnIntoFault()
            unmarkUpdated(object)
            if object.isDeletedFlag {
                deletedSet.remove(object)
                object.isDeletedFlag = false
            }
            object.becomeFault()
            object.didTurnIntoFault()
            if let kept {
                object.heldObjects = kept.held
                // A clean object refreshed with merge loads the new values now (it was in use).
                try? fulfillFault(object, throwing: false)
                object.transients = kept.transients
                object.transientLinks = kept.links
                object.transientsChanged = kept.changed
                if kept.changed { markUpdated(object) }
            }
            return
        }
        guard !object.isInsertedFlag else { return }
        // Keep the local changes, take the parent store's row, lay the changes back on top.
        let localSlots = object.changedSlots.map { ($0, object.values[$0]) }
        let localToMany = object.toMany.enumerated().compactMap { i, s -> (Int, Set<ManagedObjectID>, Set<ManagedObjectID>)? in
            guard let s, s.isChanged else { return nil }
            return (i, s.current.subtracting(s.original), s.original.subtracting(s.current))
        }
        let localOrders = !object.entity.hasOrderedToMany ? [] : object.toMany.enumerated().compactMap { i, s -> (Int, ManagedObject.ToManyState.Order)? in
            guard let order = s?.order, order.current != order.original else { return nil }
            return (i, order)
        }
        guard let row = try? rowForFault(object.objectID) else { return }
        object.fill(from: row)
        for i in object.toMany.indices { object.toMany[i] = nil }
        for (slot, value) in localSlots { object.setSlot(slot, value) }
        for (index, added, removed) in localToMany {
            let base = (try? object.relatedIDs(index)) ?? []
            object.setToManyIDs(index, base.union(added).subtracting(removed))
        }
        // Docs/coredata-behaviour.md §12.4: a local order is kept over the store's, as a local value is.
        for (index, order) in localOrders {
            guard let state = object.toMany[index], let stored = state.order else { continue }
            let merged = MergePolicy.mergedOrder(order, external: stored.original, members: state.current, localWins: true)
            object.setOrderedIDs(index, merged.current)
        }
        noteChange(object)
    }

    /// Refreshes every registered object, keeping unsaved changes (semantics §4), and announces the materialized
    /// ones as refreshed in one objects-did-change.
    public func refreshAllObjects() {
        return Probe.call(.contextCall(self, "refreshAllObjects")) { performRefreshAllObjects() }
    }

    private func performRefreshAllObjects() {
        assertOnQueue()
        // Rule 9 (semantics §3.1, §4): every materialized registered object is reported as refreshed
        // (faults stay quiet; an insert is not refreshed), once: observers and fetched results controllers see one
        // change cycle of updates or moves.
        var refreshed = Set<ManagedObject>()
        for object in liveRegistered() {
            if !object.isFaultFlag, !object.isInsertedFlag { refreshed.insert(object) }
            // Rule 5 (CoreDataPlus, semantics §3.2): transient values go back to their defaults, also in
            // objects that keep their persistent changes (an insert has nothing to reload: it keeps them).
            if !object.isInsertedFlag, !object.entity.transientAttributes.isEmpty || !object.transientLinks.isEmpty {
                object.resetTransients()
                if !object.hasPersistentChanges { unmarkUpdated(object) }
            }
            refresh(object, mergeChanges: object.hasChanges)
            if !object.hasChanges, !object.isFaultFlag, !object.isInsertedFlag {
                object.willTurnIntoFault()
                object.becomeFault()
                object.didTurnIntoFault()
            }
        }
        for object in refreshed where object.isUpdatePending {
            pendingUpdated.remove(object)
            object.isUpdatePending = false
        }
        postObjectsDidChange(inserted: [], updated: [], deleted: [], refreshed: refreshed)
    }

    /// Throws away inserts and deletes and returns updated objects to their committed values (semantics §4).
    public func rollback() {
        return Probe.call(.contextCall(self, "rollback")) { performRollback() }
    }

    private func performRollback() {
        assertOnQueue()
        // Semantics §4: rollback empties the undo stack (CDPG: "removes everything from the undo stack").
        clearUndo()
        let inserted = insertedSet, deleted = deletedSet, updated = updatedSet
        for object in inserted {
            object.isInsertedFlag = false
            unregister(object)
            object.managedObjectContext = nil
        }
        for object in updated.union(deleted) {
            object.isDeletedFlag = false
            object.deletePropagated = false
            if object.isInsertedFlag { continue }
            object.willTurnIntoFault()
            object.becomeFault()
            object.didTurnIntoFault()
        }
        hasFaultedInserts = false
        clearChangeSets()
        // Objects that pointed at rolled-back inserts were updated, so they became faults above.
        for object in liveRegistered() where !object.isFaultFlag {
            for i in object.toMany.indices { if object.toMany[i]?.isChanged == true { object.toMany[i] = nil } }
        }
        if !inserted.isEmpty || !updated.isEmpty || !deleted.isEmpty {
            postObjectsDidChange(inserted: [], updated: [], deleted: [], refreshed: updated.union(deleted), invalidated: inserted)
        }
    }

    /// Empties the change sets, processed and pending (rollback and reset).
    private func clearChangeSets() {
        insertedSet = []
        clearUpdated()
        deletedSet = []
        for object in pendingInserted { object.isInsertPending = false }
        pendingInserted = []
        clearPendingUpdates()
        pendingDeleted = []
    }

    /// Forgets every registered object (semantics §4): they become invalid; an objects-did-change with
    /// `invalidatedAll` is posted, and fetched results controllers must fetch again.
    public func reset() {
        return Probe.call(.contextCall(self, "reset")) { performReset() }
    }

    private func performReset() {
        assertOnQueue()
        clearUndo()  // semantics §4: the undo stack is cleared
        let objects = liveRegistered()
        orphanAll(objects)
        hasFaultedInserts = false
        registry.removeAll()
        strongRegistered = [:]
        keptIDChanges = nil  // semantics §2.2: only a reset lets go of the ID changes kept for children
        assignedStores = [:]
        clearChangeSets()
        advanceQueryGeneration()  // semantics §3.7: reset() advances a pinned context's generation
        postObjectsDidChange(inserted: [], updated: [], deleted: [], invalidatedAll: Set(objects.map(\.objectID)))
    }

    /// Turns the objects into faults without a context (reset, deinitialization; semantics §4): Rule 2,
    /// an object the app still holds is a fault whose context is nil and whose transient values are gone, and it
    /// fulfils itself from the store when touched; Rule 1, the related objects it held go, which breaks cycles.
    /// The caller's array keeps every object alive until all are done (letting go of held objects frees others).
    func orphanAll(_ objects: [ManagedObject]) {
        let source = orphanedFaultsFailToFire ? ManagedObject.OrphanSource(coordinator: nil, stalenessInterval: -1)
            : ManagedObject.OrphanSource(coordinator: persistentStoreCoordinator, stalenessInterval: stalenessInterval)
        for object in objects {
            if !object.isFaultFlag { object.willTurnIntoFault() }
            let wasFault = object.isFaultFlag
            object.managedObjectContext = nil
            object.isInsertedFlag = false
            object.isDeletedFlag = false
            object.deletePropagated = false
            object.isInsertPending = false
            object.isInUpdatedSet = false
            object.isUpdatePending = false
            object.faultBatch = nil
            object.eventChangedSlots = []
            object.becomeFault()
            object.orphanSource = source
            if let cache = object.cacheReference {
                cache.release(object.objectID)
                object.cacheReference = nil
            }
            if !wasFault { object.didTurnIntoFault() }
        }
    }

    /// Gives inserted objects permanent IDs now (semantics §2.1 step 4); they stay inserted.
    public func obtainPermanentIDs(for objects: [ManagedObject]) throws {
        assertOnQueue()
        guard parent == nil, let coordinator = persistentStoreCoordinator else { return }
        let temporary = objects.filter { $0.objectID.isTemporaryID && $0.managedObjectContext === self }
        guard !temporary.isEmpty else { return }
        let ids = try coordinator.allocateKeys(for: temporary.map(\.entity), assigned: assignedStores.isEmpty ? [] : temporary.map { assignedStores[$0.objectID] })
        var mapping: [ManagedObjectID: ManagedObjectID] = [:]
        for (object, id) in zip(temporary, ids) { mapping[object.objectID] = id }
        remapIDs(mapping)
        coordinator.rowCache.retain(temporary.map(\.objectID))  // one lock for all
        for object in temporary { object.cacheReference = coordinator.rowCache }
    }

    /// Moves each registered object of `mapping` to its new ID (one lookup to take it out, one to put it back);
    /// returns the objects moved.
    @discardableResult
    private func moveRegistrations(_ mapping: [ManagedObjectID: ManagedObjectID]) -> [ManagedObject] {
        var moved: [ManagedObject] = []
        moved.reserveCapacity(mapping.count)
        for (old, new) in mapping {
            guard let object = registry.move(old, to: new) else { continue }
            object.objectID = new
            keptIDChanges?.record(old, new)  // semantics §2.2: a context serving children keeps the change
            if retainsRegisteredObjects {
                strongRegistered[old] = nil
                strongRegistered[new] = object
            }
            moved.append(object)
        }
        return moved
    }

    /// Replaces temporary IDs by permanent ones in the registry and in every registered object's values.
    func remapIDs(_ mapping: [ManagedObjectID: ManagedObjectID]) {
        guard !mapping.isEmpty else { return }
        moveRegistrations(mapping)
        // Only objects with changes can point at a new object (pointing at it changed them).
        for object in [insertedSet, updatedSet, deletedSet].joined() {
            Self.remapReferences(in: object, mapping, includingSnapshot: false)
        }
    }

    /// Replaces the temporary IDs `object` names (to-ones, loaded to-manys, pending inverse changes, transient
    /// relationships; with `includingSnapshot`, its last saved values too) by their permanent ones.
    private static func remapReferences(in object: ManagedObject, _ mapping: [ManagedObjectID: ManagedObjectID], includingSnapshot: Bool) {
        for i in object.values.indices {
            // Only temporary IDs are remapped: permanent ones need no lookup.
            if case .objectID(let id) = object.values[i], id.isTemporaryID, let n = mapping[id] { object.values[i] = .objectID(n) }
        }
        if includingSnapshot, var original = object.original {
            var changed = false
            for i in original.values.indices {
                if case .objectID(let id) = original.values[i], id.isTemporaryID, let n = mapping[id] {
                    original.values[i] = .objectID(n)
                    changed = true
                }
            }
            if changed { object.original = original }
        }
        // Pending inverse changes of unloaded to-manys name their members too (an insert given a permanent ID
        // before the save).
        if object.pendingToMany != nil {
            for i in object.pendingToMany!.indices { object.pendingToMany![i].remap(mapping) }
        }
        for i in object.toMany.indices {
            guard var state = object.toMany[i] else { continue }
            let named = { (ids: Set<ManagedObjectID>) in ids.contains(where: { $0.isTemporaryID && mapping[$0] != nil }) }
            if named(state.current) || (includingSnapshot && named(state.original)) {
                state.current = Set(state.current.map { mapping[$0] ?? $0 })
                state.original = Set(state.original.map { mapping[$0] ?? $0 })
                if var order = state.order {
                    order.current = order.current.map { mapping[$0] ?? $0 }
                    order.original = order.original.map { mapping[$0] ?? $0 }
                    state.order = order
                }
                object.toMany[i] = state
            }
        }
        // Docs/core-data-rules.md Rule 21.2: transient relationships hold IDs too; left on a temporary ID, a link
        // would name an object no context has once the row has its permanent ID, and read as a new empty fault.
        for i in object.transientLinks.indices where object.transientLinks[i].contains(where: { $0.isTemporaryID && mapping[$0] != nil }) {
            object.transientLinks[i] = Set(object.transientLinks[i].map { mapping[$0] ?? $0 })
        }
    }

    // MARK: Permanent IDs in descendants

    /// Notes that this context serves a child (a push, a fault, a to-many or a fetch read through it) and
    /// returns the ID to answer for: a temporary ID this context has replaced since is looked up under its
    /// permanent one (semantics §2.2: a child may still name an object by the temporary ID it pushed it with).
    /// From the first call on, the context keeps its ID changes (``KeptIDChanges``).
    func servingChild(_ id: ManagedObjectID) -> ManagedObjectID {
        servingChild()
        guard id.isTemporaryID, let permanent = keptIDChanges!.permanentByTemporary[id] else { return id }
        return permanent
    }

    /// Notes that this context serves a child (``servingChild(_:)``) where no ID is asked for.
    func servingChild() {
        if keptIDChanges == nil { keptIDChanges = KeptIDChanges() }
    }

    /// Semantics §2.1 step 4, §2.2: a child save mints no permanent IDs; the root's save to the store does, and
    /// then every descendant (child, grandchild, ...) re-keys the objects it holds for those rows (Core Data's
    /// `_changeIDsForManagedObjects:toIDs:`). Otherwise a later push by permanent ID (an importer that fetched
    /// the row from the store and updated it) would find nothing registered under that ID in its parent and
    /// make a second object for the same row.
    ///
    /// Each descendant re-keys on its own queue, never with a synchronous hop: the root's save may run while a
    /// descendant's queue waits for the root (a main-queue block inside `writer.performAndWait { try
    /// writer.save() }`), and waiting for that queue here would deadlock. So the work is queued on the
    /// descendant's queue, before this save's did-save is posted: a serial queue runs it ahead of every block
    /// queued after it, so the automatic merge of this save, and any push or fetch that the same thread of
    /// control asks for later (the next chunk's importer saving into the view), find the permanent IDs. When the
    /// descendant runs on this very queue (two main-queue contexts), it re-keys in place: a block queued there
    /// would only run after the current one, which may use the IDs right after the save.
    ///
    /// No objects-did-change is posted for an ID change (inferred: Core Data reports none, and the objects'
    /// values are the same).
    func propagatePermanentIDs(_ mapping: [ManagedObjectID: ManagedObjectID]) {
        guard !mapping.isEmpty else { return }
        for descendant in liveDescendants() {
            if descendant.queue.isCurrent {
                descendant.adoptPermanentIDs(mapping)
            } else {
                descendant.queue.async { [weak descendant] in Probe.delivering("permanentIDs", to: descendant) { descendant?.adoptPermanentIDs(mapping) } }
            }
        }
    }

    /// Re-keys this context's objects for rows an ancestor's save just gave permanent IDs. Objects inserted here
    /// and not yet pushed up are not in `mapping` and keep their temporary IDs.
    func adoptPermanentIDs(_ mapping: [ManagedObjectID: ManagedObjectID]) {
        assertOnQueue()
        guard registry.count > 0 else { return }
        // Each entry moves on its own (the result does not depend on the dictionary's order).
        let moved = moveRegistrations(mapping).filter { $0.cacheReference == nil }
        if !moved.isEmpty, let coordinator = persistentStoreCoordinator {
            // As for an object made for a permanent ID (``object(with:)``): it holds its row in the row cache.
            coordinator.rowCache.retain(moved.lazy.map(\.objectID))  // one lock for all
            for object in moved { object.cacheReference = coordinator.rowCache }
        }
        // Unlike the saving root, a descendant holds clean objects that name the new rows: the ones it pushed up
        // (and is done with) and the ones it read from its parent's unsaved state. Only objects of entities with a
        // relationship (stored or transient) to an entity of the new rows can name one, and only materialized ones
        // or ones holding transient links, which a fault may keep (an import of records without groups walks its
        // records, but looks at none of their values).
        var targets: Set<String> = []
        var lastEntity: ObjectIdentifier?
        for id in mapping.keys where ObjectIdentifier(id.entity) != lastEntity {
            lastEntity = ObjectIdentifier(id.entity)
            targets.insert(id.entity.name)
        }
        var names: [ObjectIdentifier: Bool] = [:]
        for object in liveRegistered() where !object.isFaultFlag || !object.transientLinks.isEmpty {
            let entity = object.entity
            let canName = names[ObjectIdentifier(entity)] ?? {
                let answer = [entity.relationships, entity.transientRelationships].joined().contains { targets.contains($0.destinationEntityName) }
                names[ObjectIdentifier(entity)] = answer
                return answer
            }()
            if canName { Self.remapReferences(in: object, mapping, includingSnapshot: true) }
        }
    }
}

/// The ID changes a context keeps once it has served a child (semantics §2.2): each temporary ID it replaced by a
/// permanent one, both ways, until ``ManagedObjectContext/reset()``.
///
/// Core Data's context does this in `_changeIDsForManagedObjects:toIDs:`: when the context has served a child (the
/// maps are made the first time a child faults, reads a relationship or saves through it), every ID change it
/// makes, in its own save and when it takes an ancestor's permanent IDs, is added to two dictionaries (temporary to
/// permanent, permanent to temporary); `reset()` frees them, nothing else does (**inferred** from decompiled code).
/// A child's fault by a temporary ID is answered through the first. So a parent that children import through grows
/// by an ID pair per imported object however often it saves, and a reset gives it back: the growth five.agency
/// measured in the main context and attributed to that method (**second-hand**). Only the IDs are kept, not the
/// objects: a saved object leaves the registry as it does anywhere (semantics §2.1 step 7).
///
/// Ours keeps both dictionaries too (the memory is Core Data's); the second is not read here: Core Data uses it to
/// give a child's fetch the temporary IDs the child still knows, and our children re-key before their next fetch
/// (Docs/core-data-rules.md, "ids"), except in a block that was already running during the root's save.
struct KeptIDChanges {
    private(set) var permanentByTemporary: [ManagedObjectID: ManagedObjectID] = [:]
    private(set) var temporaryByPermanent: [ManagedObjectID: ManagedObjectID] = [:]

    /// The ID changes kept.
    var count: Int { permanentByTemporary.count }

    mutating func record(_ temporary: ManagedObjectID, _ permanent: ManagedObjectID) {
        permanentByTemporary[temporary] = permanent
        temporaryByPermanent[permanent] = temporary
    }
}
