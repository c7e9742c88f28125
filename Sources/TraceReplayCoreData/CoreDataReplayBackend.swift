// NEVER COMPILED OR RUN HERE. This target builds only where Apple's Core Data can be imported (macOS, iOS); on
// the Linux machines this project is developed on it is an empty module. It was written against Apple's
// documented API and has not been compiled, run or checked on an Apple platform (Docs/calibration.md, README
// "What has and has not run on Apple platforms"). Expect to fix compile errors on first use.
#if canImport(CoreData)
import CoreData
import Foundation
import TraceReplay

/// The replayer's backend over Apple's Core Data (Docs/calibration.md "The Apple side"): every call of the trace
/// made through `NSPersistentContainer`, `NSManagedObjectContext`, `NSFetchRequest`, `NSFetchedResultsController`,
/// the batch requests and `NSPersistentHistoryChangeRequest`. Thin on purpose: the replay's logic (``Replayer``),
/// the log's reading, the diff and the fit are shared code, tested on Linux.
///
/// What it cannot express is written in ``unexpressed`` (the tool prints it and puts it in its summary):
/// `adoptSnapshots` (Ambar's row-cache hand-over: Core Data has no such call), a connection pool size set after
/// the store opened, ObjectGraph's resurrecting ObjectTrump rule and an app's own merge policy class, and a
/// controller's non-default change evaluation.
public final class CoreDataReplayBackend: ReplayBackend {
    public typealias Coordinator = NSPersistentStoreCoordinator
    public typealias Context = NSManagedObjectContext
    public typealias Object = NSManagedObject
    public typealias ObjectID = NSManagedObjectID
    public typealias Controller = NSFetchedResultsController<NSManagedObject>

    let models: [NSManagedObjectModel]
    let directory: URL
    private var containers: [NSPersistentContainer] = []
    private var contexts: [NSManagedObjectContext] = []
    private var observers: [any NSObjectProtocol] = []
    private let delegate = ControllerDelegate()
    /// Notifications posted (objects-did-change, did-save) and saves that succeeded, so far.
    private let tally = Tally()
    /// Calls of the trace this backend could not make as the run made them, with the record's op (deduplicated).
    public private(set) var unexpressed: [String] = []

    public init(header: TraceHeader, directory: URL) throws {
        models = try CoreDataModelBuilder.models(header)
        self.directory = directory
        for name in [Notification.Name.NSManagedObjectContextObjectsDidChange, .NSManagedObjectContextDidSave] {
            observers.append(NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { [tally] _ in tally.add(notifications: 1) })
        }
    }

    deinit { for o in observers { NotificationCenter.default.removeObserver(o) } }

    private func note(_ text: String) { if !unexpressed.contains(text) { unexpressed.append(text) } }

    /// Objects registered in every context of the replay now.
    // UNVERIFIED (semantics): `contexts` keeps every context ever made alive, so a trace's `freeContext` does not
    // free a Core Data context here: it goes on registering objects (counted below) and receiving automatic merges.
    public func registeredObjects() -> Int {
        contexts.reduce(0) { total, c in total + c.performAndWait { c.registeredObjects.count } }
    }

    public func counters() -> [String: Int] {
        let (n, s) = tally.values
        var out: [String: Int] = [:]
        if n > 0 { out["notificationPosted"] = n }
        if s > 0 { out["contextSave"] = s }
        return out
    }

    // MARK: Stack

    public func openCoordinator(model: Int, settings: [String: String]) throws -> NSPersistentStoreCoordinator {
        guard models.indices.contains(model) else { throw ReplayError("no model version \(model) in the trace's header") }
        let container = NSPersistentContainer(name: settings["name"] ?? "coordinator", managedObjectModel: models[model])
        container.persistentStoreDescriptions = [Self.storeDescription(settings, in: directory)]
        var failure: (any Error)?
        container.loadPersistentStores { _, error in failure = error }
        if let failure { throw ReplayError("the store \(settings["store"] ?? "") could not be opened: \(failure)") }
        containers.append(container)
        return container.persistentStoreCoordinator
    }

    /// Adds a store of a model configuration to a coordinator the trace opened (Docs/coredata-behaviour.md §14.2).
    public func addStore(to coordinator: NSPersistentStoreCoordinator, settings: [String: String]) throws {
        let description = Self.storeDescription(settings, in: directory)
        var failure: (any Error)?
        coordinator.addPersistentStore(with: description) { _, error in failure = error }
        if let failure { throw ReplayError("the store \(settings["store"] ?? "") could not be added: \(failure)") }
    }

    /// The description of the store a trace's `coordinator` record names.
    static func storeDescription(_ settings: [String: String], in directory: URL) -> NSPersistentStoreDescription {
        let description: NSPersistentStoreDescription
        if settings["store"] == "memory" {
            description = NSPersistentStoreDescription()
            description.type = NSInMemoryStoreType
        } else {
            description = NSPersistentStoreDescription(url: directory.appendingPathComponent(settings["store"] ?? "store.sqlite"))
            description.type = NSSQLiteStoreType
        }
        description.shouldAddStoreAsynchronously = false
        description.shouldMigrateStoreAutomatically = settings["migrate"] == "true"
        description.shouldInferMappingModelAutomatically = settings["inferMapping"] == "true"
        description.isReadOnly = settings["readOnly"] == "true"
        if settings["history"] == "true" { description.setOption(true as NSNumber, forKey: NSPersistentHistoryTrackingKey) }
        if settings["remoteChange"] == "true" { description.setOption(true as NSNumber, forKey: NSPersistentStoreRemoteChangeNotificationPostOptionKey) }
        description.configuration = settings["configuration"]
        return description
    }

    public func setConnectionPool(_ size: Int, of coordinator: NSPersistentStoreCoordinator) {
        // Core Data takes the pool size as a store option when the store is added (NSPersistentStoreConnectionPoolMaxSizeKey).
        note("connectionPool: the pool size is a store option set before the store opens; the trace sets it afterwards (size \(size) not applied)")
    }

    public func makeContext(mainQueue: Bool) -> NSManagedObjectContext {
        let c = NSManagedObjectContext(concurrencyType: mainQueue ? .mainQueueConcurrencyType : .privateQueueConcurrencyType)
        contexts.append(c)
        return c
    }

    public func setCoordinator(_ coordinator: NSPersistentStoreCoordinator?, of context: NSManagedObjectContext) {
        context.performAndWait { context.persistentStoreCoordinator = coordinator }
    }

    public func setParent(_ parent: NSManagedObjectContext?, of context: NSManagedObjectContext) {
        context.performAndWait { context.parent = parent }
    }

    public func set(_ key: String, to value: String, on context: NSManagedObjectContext) throws {
        try context.performAndWait {
            switch key {
            case "mergePolicy": context.mergePolicy = try policy(value)
            case "automaticallyMergesChangesFromParent": context.automaticallyMergesChangesFromParent = value == "true"
            case "stalenessInterval": context.stalenessInterval = Double(value) ?? -1
            case "name": context.name = value.isEmpty ? nil : value
            case "transactionAuthor": context.transactionAuthor = value.isEmpty ? nil : value
            case "queryGeneration":
                // Never compiled here, like the rest of this file: `.current` or nil.
                guard value != "token" else { throw ReplayError("a query generation token of another context cannot be replayed") }
                try context.setQueryGenerationFrom(value == "current" ? NSQueryGenerationToken.current : nil)
            default: throw ReplayError("unknown context setting \(key)")
            }
        }
    }

    private func policy(_ name: String) throws -> NSMergePolicy {
        let parsed = TraceMergePolicy(name)
        if parsed.resurrect { note("mergePolicy \(name): ObjectGraph's resurrecting ObjectTrump rule has no Core Data equivalent (plain ObjectTrump used)") }
        if let custom = parsed.custom { note("mergePolicy \(name): the app's own policy class \(custom) cannot be rebuilt (its base type used)") }
        switch parsed.type {
        case "error": return NSMergePolicy(merge: .errorMergePolicyType)
        case "storeTrump": return NSMergePolicy(merge: .mergeByPropertyStoreTrumpMergePolicyType)
        case "objectTrump": return NSMergePolicy(merge: .mergeByPropertyObjectTrumpMergePolicyType)
        case "overwrite": return NSMergePolicy(merge: .overwriteMergePolicyType)
        case "rollback": return NSMergePolicy(merge: .rollbackMergePolicyType)
        default: throw ReplayError("unknown merge policy \(name)")
        }
    }

    // Swift 6: Apple declares `@preconcurrency nonisolated func performAndWait<T>(_ block: @Sendable () throws -> T)
    // rethrows -> T` (NSManagedObjectContext performAndWait(_:) page, macOS 12+), so capturing `body`, `self` or a
    // managed object in these blocks is a Sendable diagnostic. Under @preconcurrency it is a warning, not an error
    // (reproduced with a two-module stand-in on Swift 6.3); the calls are synchronous, so nothing escapes.
    // UNVERIFIED: that the macOS SDK's overlay keeps @preconcurrency on both performAndWait overloads (the
    // Objective-C `performAndWait(_: @Sendable () -> Void)` page does not show it); if the build errors here, wrap
    // `body` with withoutActuallyEscaping in an @unchecked Sendable box.
    public func perform<T>(_ context: NSManagedObjectContext, _ body: () throws -> T) throws -> T {
        try context.performAndWait { try body() }
    }

    // MARK: Objects

    public func objectID(of object: NSManagedObject) -> NSManagedObjectID { object.objectID }
    /// Core Data's IDs cannot be made from a trace's key: the replayer maps them as the calls hand them out.
    public func objectID(entity: String, key: Int64) -> NSManagedObjectID? { nil }

    /// The row key of a saved object's ID: the last path component of its URI (`…/Entity/p12`), an
    /// undocumented format (inferred from published URIs), used only to compare with the trace's keys.
    public func primaryKey(of id: NSManagedObjectID) -> Int64? {
        guard !id.isTemporaryID else { return nil }
        let last = id.uriRepresentation().lastPathComponent
        return last.hasPrefix("p") ? Int64(last.dropFirst()) : nil
    }

    public func registeredObject(_ id: NSManagedObjectID, in context: NSManagedObjectContext) -> NSManagedObject? { context.registeredObject(for: id) }
    public func object(_ id: NSManagedObjectID, in context: NSManagedObjectContext) -> NSManagedObject { context.object(with: id) }
    public func existingObject(_ id: NSManagedObjectID, in context: NSManagedObjectContext) throws -> NSManagedObject { try context.existingObject(with: id) }

    public func insert(_ entity: String, into context: NSManagedObjectContext) throws -> NSManagedObject {
        guard let description = NSEntityDescription.entity(forEntityName: entity, in: context) else { throw ReplayError("no entity \(entity)") }
        if description.isAbstract { throw ReplayError("entity \(entity) is abstract") }
        return NSManagedObject(entity: description, insertInto: context)
    }

    public func delete(_ object: NSManagedObject, in context: NSManagedObjectContext) { context.delete(object) }

    public func setValue(_ value: ReplayValue<NSManagedObject>, forKey key: String, of object: NSManagedObject) throws {
        switch value {
        case .plain(let v): object.setValue(try v.foundationValue(), forKey: key)
        case .object(let o): object.setValue(o, forKey: key)
        case .objects(let os): object.setValue(NSSet(array: os), forKey: key)
        }
    }

    public func read(_ how: String, key: String?, of object: NSManagedObject) throws -> [NSManagedObject] {
        let value: Any?
        switch how {
        case "value", "checked": value = object.value(forKey: key ?? "")
        case "primitive":
            object.willAccessValue(forKey: key)
            value = object.primitiveValue(forKey: key ?? "")
            object.didAccessValue(forKey: key)
        case "materialize":
            // Fires the fault without reading a property.
            object.willAccessValue(forKey: nil)
            object.didAccessValue(forKey: nil)
            value = nil
        default:
            _ = object.changedValues()
            value = nil
        }
        switch value {
        case let o as NSManagedObject: return [o]
        case let s as Set<NSManagedObject>: return s.sorted { $0.objectID.uriRepresentation().absoluteString < $1.objectID.uriRepresentation().absoluteString }
        case let s as NSSet: return (s.allObjects as? [NSManagedObject] ?? []).sorted { $0.objectID.uriRepresentation().absoluteString < $1.objectID.uriRepresentation().absoluteString }
        default: return []
        }
    }

    static func request(_ r: TraceFetchRequest) -> NSFetchRequest<NSFetchRequestResult> {
        let request = NSFetchRequest<NSFetchRequestResult>(entityName: r.entity)
        if let p = r.predicate { request.predicate = NSPredicate(format: p, argumentArray: nil) }
        if let sort = r.sort {
            request.sortDescriptors = sort.map { $0.hasPrefix("-") ? NSSortDescriptor(key: String($0.dropFirst()), ascending: false) : NSSortDescriptor(key: $0, ascending: true) }
        }
        request.fetchLimit = r.limit ?? 0
        request.fetchOffset = r.offset ?? 0
        request.fetchBatchSize = r.batchSize ?? 0
        request.returnsObjectsAsFaults = r.asFaults ?? true
        request.includesPendingChanges = r.includesPendingChanges ?? true
        request.includesPropertyValues = r.includesPropertyValues ?? true
        if let props = r.propertiesToFetch { request.propertiesToFetch = props }
        if let prefetch = r.prefetch { request.relationshipKeyPathsForPrefetching = prefetch }
        request.shouldRefreshRefetchedObjects = r.refreshRefetched ?? false
        switch r.result ?? "objects" {
        case "ids": request.resultType = .managedObjectIDResultType
        case "dictionaries": request.resultType = .dictionaryResultType
        case "count": request.resultType = .countResultType
        default: request.resultType = .managedObjectResultType
        }
        return request
    }

    public func fetch(_ r: TraceFetchRequest, in context: NSManagedObjectContext) throws -> FetchOutcome<NSManagedObject, NSManagedObjectID> {
        let request = Self.request(r)
        switch r.result ?? "objects" {
        case "ids": return .ids(try context.fetch(request) as? [NSManagedObjectID] ?? [])
        case "dictionaries": return .count(try context.fetch(request).count)
        case "count": return .count(try context.count(for: request))
        default: return .objects(try context.fetch(request) as? [NSManagedObject] ?? [])
        }
    }

    public func save(_ context: NSManagedObjectContext) throws -> [(NSManagedObjectID, NSManagedObjectID)] {
        let inserted = context.insertedObjects.map { ($0, $0.objectID) }
        try context.save()
        tally.add(saves: 1)
        return inserted.map { ($0.1, $0.0.objectID) }
    }

    public func contextCall(_ op: String, on context: NSManagedObjectContext) {
        switch op {
        case "reset": context.reset()
        case "rollback": context.rollback()
        case "refreshAllObjects": context.refreshAllObjects()
        default: context.processPendingChanges()
        }
    }

    public func refresh(_ object: NSManagedObject, mergeChanges: Bool, in context: NSManagedObjectContext) {
        context.refresh(object, mergeChanges: mergeChanges)
    }

    /// The ID sets as `mergeChanges(fromRemoteContextSave:into:)` takes them.
    private static func changes(_ inserted: [NSManagedObjectID], _ updated: [NSManagedObjectID], _ deleted: [NSManagedObjectID]) -> [AnyHashable: Any] {
        [NSInsertedObjectsKey: inserted, NSUpdatedObjectsKey: updated, NSDeletedObjectsKey: deleted]
    }

    /// Our `mergeChanges(fromObjectIDs:)` into one context: Core Data's public way is the remote-save merge into
    /// that context alone.
    public func merge(inserted: [NSManagedObjectID], updated: [NSManagedObjectID], deleted: [NSManagedObjectID], into context: NSManagedObjectContext) {
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: Self.changes(inserted, updated, deleted), into: [context])
    }

    public func mergeRemote(inserted: [NSManagedObjectID], updated: [NSManagedObjectID], deleted: [NSManagedObjectID], into contexts: [NSManagedObjectContext]) {
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: Self.changes(inserted, updated, deleted), into: contexts)
    }

    public func batch(_ r: TraceBatchRequest, objectIDs: [NSManagedObjectID]?, in context: NSManagedObjectContext) throws -> [NSManagedObjectID] {
        // Batch requests run in SQL: Apple's NSBatchDeleteRequest page says "available only when using a SQLite
        // persistent store" (likewise the batch update and insert requests, which run against the store): refused
        // here (a divergence when the run's batch succeeded).
        // UNVERIFIED: whether Core Data throws an NSError or raises an (uncatchable) exception for a batch request on
        // an in-memory store; refused here either way.
        let stores = context.persistentStoreCoordinator?.persistentStores ?? []
        guard !stores.isEmpty, stores.allSatisfy({ $0.type == NSSQLiteStoreType }) else {
            note("batch: a batch \(r.kind) on a store that is not SQLite (Core Data runs batch requests only on SQLite stores; not made)")
            throw ReplayError("batch \(r.kind) on \(r.entity): Core Data's batch requests need a SQLite store")
        }
        switch r.kind {
        case "insert":
            let rows: [[String: Any]] = try (r.rows ?? []).map { row in try row.mapValues { try $0.foundationValue() ?? NSNull() } }
            let request = NSBatchInsertRequest(entityName: r.entity, objects: rows)
            request.resultType = r.result == "objectIDs" ? .objectIDs : r.result == "count" ? .count : .statusOnly
            let result = try context.execute(request) as? NSBatchInsertResult
            return result?.result as? [NSManagedObjectID] ?? []
        case "update":
            let request = NSBatchUpdateRequest(entityName: r.entity)
            if let p = r.predicate { request.predicate = NSPredicate(format: p, argumentArray: nil) }
            request.propertiesToUpdate = try (r.values ?? [:]).mapValues { try $0.foundationValue() ?? NSNull() }
            request.resultType = r.result == "objectIDs" ? .updatedObjectIDsResultType : r.result == "count" ? .updatedObjectsCountResultType : .statusOnlyResultType
            let result = try context.execute(request) as? NSBatchUpdateResult
            return result?.result as? [NSManagedObjectID] ?? []
        default:
            let request: NSBatchDeleteRequest
            if let objectIDs {
                request = NSBatchDeleteRequest(objectIDs: objectIDs)
            } else {
                let fetch = NSFetchRequest<NSFetchRequestResult>(entityName: r.entity)
                if let p = r.predicate { fetch.predicate = NSPredicate(format: p, argumentArray: nil) }
                request = NSBatchDeleteRequest(fetchRequest: fetch)
            }
            request.resultType = r.result == "objectIDs" ? .resultTypeObjectIDs : r.result == "count" ? .resultTypeCount : .resultTypeStatusOnly
            let result = try context.execute(request) as? NSBatchDeleteResult
            return result?.result as? [NSManagedObjectID] ?? []
        }
    }

    // MARK: Fetched results controller

    public func makeController(_ r: TraceFetchRequest, context: NSManagedObjectContext, sectionKey: String?, settings: [String: String]?) throws -> NSFetchedResultsController<NSManagedObject> {
        if let evaluation = settings?["changeEvaluation"] {
            note("controller: ObjectGraph's change evaluation \(evaluation) is an option Core Data does not have (Core Data's own evaluation used)")
        }
        let request = NSFetchRequest<NSManagedObject>(entityName: r.entity)
        let built = Self.request(r)
        request.predicate = built.predicate
        // A request that never set its sort descriptors (the trace has no `sort`) is given an empty list: Apple's
        // NSFetchedResultsController.init(fetchRequest:managedObjectContext:sectionNameKeyPath:cacheName:) says "The
        // fetch request must have at least one sort descriptor", and a nil list raises NSInvalidArgumentException,
        // which Swift cannot catch. Docs/core-data-rules.md rule 16 (verified on Apple): an empty list is accepted and
        // nil fails performFetch(); so this call is not replayed as made, and the summary says so.
        // UNVERIFIED: whether the exception for nil comes from init (published crash logs) or from performFetch (rule 16).
        if r.sort == nil { note("controller: a request without sort descriptors (the run's performFetch failed) is replayed with an empty list (Core Data raises an uncatchable exception for none)") }
        request.sortDescriptors = built.sortDescriptors ?? []
        request.fetchLimit = built.fetchLimit
        request.fetchOffset = built.fetchOffset
        request.fetchBatchSize = built.fetchBatchSize
        request.returnsObjectsAsFaults = built.returnsObjectsAsFaults
        request.includesPendingChanges = built.includesPendingChanges
        request.relationshipKeyPathsForPrefetching = built.relationshipKeyPathsForPrefetching
        return NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: sectionKey, cacheName: nil)
    }

    public func setDelegate(_ on: Bool, of controller: NSFetchedResultsController<NSManagedObject>) {
        controller.delegate = on ? delegate : nil
    }

    public func performFetch(_ controller: NSFetchedResultsController<NSManagedObject>) throws { try controller.performFetch() }
    public func fetchedObjects(_ controller: NSFetchedResultsController<NSManagedObject>) -> [NSManagedObject] { controller.fetchedObjects ?? [] }

    // MARK: History

    public func historyToken(_ coordinator: NSPersistentStoreCoordinator) throws -> Int {
        // The newest transaction's number (the token itself is opaque).
        try transactions(coordinator, after: nil).last ?? 0
    }

    public func fetchHistory(_ coordinator: NSPersistentStoreCoordinator, after: Int?) throws -> [Int] {
        try transactions(coordinator, after: after)
    }

    /// Transaction numbers after `after` (a number of the trace, taken to be Core Data's: both count the store's
    /// transactions from 1; Docs/calibration.md says where that may not hold).
    private func transactions(_ coordinator: NSPersistentStoreCoordinator, after: Int?) throws -> [Int] {
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        return try context.performAndWait {
            let request: NSPersistentHistoryChangeRequest
            if let after, let fetch = NSPersistentHistoryTransaction.fetchRequest {
                fetch.predicate = NSPredicate(format: "transactionNumber > %lld", Int64(after))
                request = NSPersistentHistoryChangeRequest.fetchHistory(withFetch: fetch)
            } else {
                request = NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)
            }
            request.resultType = .transactionsOnly
            let result = try context.execute(request) as? NSPersistentHistoryResult
            let transactions = result?.result as? [NSPersistentHistoryTransaction] ?? []
            return transactions.map { Int($0.transactionNumber) }.filter { after == nil || $0 > after! }
        }
    }

    public func adoptSnapshots(_ coordinator: NSPersistentStoreCoordinator, updated: [NSManagedObjectID], deleted: [NSManagedObjectID], from other: NSPersistentStoreCoordinator) {
        note("adoptSnapshots: Ambar's row-cache hand-over between coordinators has no Core Data call (nothing done)")
    }

    /// Work Core Data queued by itself on `context`'s queue (an automatic merge, permanent IDs): it runs there in
    /// the order queued; a block queued after it and waited for lets it finish.
    public func deliver(_ kind: String, to context: NSManagedObjectContext) throws {
        context.performAndWait {}
    }
}

/// A controller delegate that takes the changes and does nothing with them (the trace's app had one set: the
/// controller then tracks changes).
final class ControllerDelegate: NSObject, NSFetchedResultsControllerDelegate {
    func controllerWillChangeContent(_ controller: NSFetchedResultsController<any NSFetchRequestResult>) {}
    func controllerDidChangeContent(_ controller: NSFetchedResultsController<any NSFetchRequestResult>) {}
}

/// Counts posted from any thread.
final class Tally: @unchecked Sendable {  // state behind `lock`
    private let lock = NSLock()
    private var notifications = 0
    private var saves = 0
    func add(notifications n: Int = 0, saves s: Int = 0) {
        lock.lock()
        notifications += n
        saves += s
        lock.unlock()
    }
    var values: (Int, Int) {
        lock.lock()
        defer { lock.unlock() }
        return (notifications, saves)
    }
}
#endif
