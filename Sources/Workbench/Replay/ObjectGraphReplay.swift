import Foundation
import ObjectGraph
import TraceReplay

/// The replay's simulation: one thread, queues that run a `sync` in place and keep what the library queued by
/// itself until the trace says it ran (a `deliver` record). Every operation is counted on the replaying thread.
final class ReplaySimulation: ExecutionSimulation, @unchecked Sendable {  // used by the replaying thread only
    private var clock: UInt64 = 0
    func makeQueue(label: String) -> any SimulatedQueue { ManualQueue(label: label) }
    /// A clock that moves on at each read: ages are never 0, as in a run (a staleness of 0 always refetches).
    func now(on thread: ExecutionThread) -> UInt64 {
        clock += 1
        return clock
    }
    func sleep(until deadline: UInt64, on thread: ExecutionThread) { clock = max(clock, deadline) }
    var isTracing: Bool { false }
    func trace(_ call: String, detail: String, on thread: ExecutionThread) {}
    func exclusive(_ resource: SharedResource, on thread: ExecutionThread, _ body: () -> Void) { body() }
    func pooled(_ resource: SharedResource, capacity: Int, on thread: ExecutionThread, _ body: () -> Void) { body() }
}

/// A queue of the replay: `sync` runs in place (the replaying thread is the queue's), `async` waits for a delivery.
final class ManualQueue: SimulatedQueue, @unchecked Sendable {  // used by the replaying thread only
    let label: String
    private(set) var pending: [@Sendable () -> Void] = []
    nonisolated(unsafe) static var stack: [ObjectIdentifier] = []
    init(label: String) { self.label = label }
    func async(_ block: @escaping @Sendable () -> Void) { pending.append(block) }
    func sync(_ block: () -> Void) {
        Self.stack.append(ObjectIdentifier(self))
        defer { Self.stack.removeLast() }
        block()
    }
    var isCurrent: Bool { Self.stack.last == ObjectIdentifier(self) }
    /// Runs the oldest block queued; false when none is.
    func runNext() -> Bool {
        guard !pending.isEmpty else { return false }
        let block = pending.removeFirst()
        sync(block)
        return true
    }
}

/// The replayer's backend over ObjectGraph: a fresh store in `directory`, the trace's models, counts from the
/// replaying thread (every ``CostedOperation`` but `blockRun`, and SQL statements by kind).
public final class ObjectGraphReplayBackend: ReplayBackend {
    public typealias Coordinator = PersistentStoreCoordinator
    public typealias Context = ManagedObjectContext
    public typealias Object = ManagedObject
    public typealias ObjectID = ManagedObjectID
    public typealias Controller = FetchedResultsController

    let models: [ManagedObjectModel]
    let directory: URL
    let thread: ExecutionThread
    let mainQueue: ContextQueue
    private var storeIdentifier: String?
    private var firstCoordinator: PersistentStoreCoordinator?
    private final class Delegate: FetchedResultsControllerDelegate {}
    private let delegate = Delegate()

    /// Call ``run(_:)`` to replay: it installs the replay's thread membership around the work.
    public init(header: TraceHeader, directory: URL) throws {
        self.directory = directory
        models = try header.models.map { model in
            let data = TraceCoding.line(model)
            do { return try ManagedObjectModel(file: try JSONDecoder().decode(ModelFile.self, from: data)) } catch {
                throw ReplayError("the trace's model cannot be used: \(error)")
            }
        }
        thread = ExecutionThread(simulation: ReplaySimulation())
        let previous = ExecutionThread.current
        ExecutionThread.install(thread)
        mainQueue = ContextQueue(label: "replay-main")
        ExecutionThread.install(previous)
    }

    /// Runs `body` as the replay's thread (its queues, its counts).
    public func run<T>(_ body: () throws -> T) rethrows -> T {
        let previous = ExecutionThread.current
        ExecutionThread.install(thread)
        defer { ExecutionThread.install(previous) }
        return try body()
    }

    public func counters() -> [String: Int] {
        var result: [String: Int] = [:]
        for op in CostedOperation.allCases where op != .blockRun {
            let n = thread.counts[op.rawValue]
            if n != 0 { result[op.name] = n }
        }
        for kind in StatementKind.allCases {
            let n = thread.statementCounts[kind.rawValue]
            if n != 0 { result["sqlStatement[\(kind.name)]"] = n }
        }
        return result
    }

    public func openCoordinator(model: Int, settings: [String: String]) throws -> PersistentStoreCoordinator {
        guard models.indices.contains(model) else { throw ReplayError("no model version \(model) in the trace's header") }
        let c = PersistentStoreCoordinator(managedObjectModel: models[model], name: settings["name"] ?? "coordinator")
        var options = StoreOptions()
        options.persistentHistoryTracking = settings["history"] == "true"
        options.remoteChangeNotifications = settings["remoteChange"] == "true"
        if settings["store"] == "memory" {
            try c.addPersistentStore(type: .inMemory, options: options)
        } else {
            try c.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent(settings["store"] ?? "store.sqlite"), options: options)
        }
        if firstCoordinator == nil { firstCoordinator = c; storeIdentifier = c.storeIdentifier }
        return c
    }

    public func setConnectionPool(_ size: Int, of coordinator: PersistentStoreCoordinator) { coordinator.connectionPoolSize = size }

    public func makeContext(mainQueue main: Bool) -> ManagedObjectContext {
        ManagedObjectContext(concurrencyType: main ? .mainQueue : .privateQueue, queue: main ? mainQueue : nil)
    }

    public func setCoordinator(_ coordinator: PersistentStoreCoordinator?, of context: ManagedObjectContext) { context.persistentStoreCoordinator = coordinator }
    public func setParent(_ parent: ManagedObjectContext?, of context: ManagedObjectContext) { context.parent = parent }

    public func set(_ key: String, to value: String, on context: ManagedObjectContext) throws {
        switch key {
        case "mergePolicy": context.mergePolicy = try Self.policy(value)
        case "automaticallyMergesChangesFromParent": context.performAndWait { context.automaticallyMergesChangesFromParent = value == "true" }
        case "stalenessInterval": context.stalenessInterval = Double(value) ?? -1
        case "name": context.name = value.isEmpty ? nil : value
        case "transactionAuthor": context.transactionAuthor = value.isEmpty ? nil : value
        default: throw ReplayError("unknown context setting \(key)")
        }
    }

    static func policy(_ name: String) throws -> MergePolicy {
        let base = name.split(separator: " ").first.map(String.init) ?? name
        let resurrect = base.hasSuffix("+resurrect")
        let typeName = resurrect ? String(base.dropLast("+resurrect".count)) : base
        guard let type = MergePolicy.PolicyType.allCases.first(where: { $0.name == typeName }) else { throw ReplayError("unknown merge policy \(name)") }
        return MergePolicy(type: type, deletedElsewhere: resurrect ? .resurrect : .delete)
    }

    public func perform<T>(_ context: ManagedObjectContext, _ body: () throws -> T) throws -> T {
        try context.performAndWait { try Result { try body() }.get() }
    }

    public func objectID(of object: ManagedObject) -> ManagedObjectID { object.objectID }

    public func objectID(entity: String, key: Int64) -> ManagedObjectID? {
        guard let storeIdentifier, let url = URL(string: "x-coredata://\(storeIdentifier)/\(entity)/p\(key)") else { return nil }
        return firstCoordinator?.managedObjectID(forURIRepresentation: url)
    }

    public func primaryKey(of id: ManagedObjectID) -> Int64? { id.primaryKey }
    public func registeredObject(_ id: ManagedObjectID, in context: ManagedObjectContext) -> ManagedObject? { context.registeredObject(for: id) }
    public func object(_ id: ManagedObjectID, in context: ManagedObjectContext) -> ManagedObject { context.object(with: id) }
    public func existingObject(_ id: ManagedObjectID, in context: ManagedObjectContext) throws -> ManagedObject { try context.existingObject(with: id) }
    public func insert(_ entity: String, into context: ManagedObjectContext) throws -> ManagedObject { try context.insertNewObject(forEntityName: entity) }
    public func delete(_ object: ManagedObject, in context: ManagedObjectContext) { context.delete(object) }

    public func setValue(_ value: ReplayValue<ManagedObject>, forKey key: String, of object: ManagedObject) throws {
        switch value {
        case .plain(let v): try object.setValue(try Self.swiftValue(v), forKey: key)
        case .object(let o): try object.setValue(o, forKey: key)
        case .objects(let os): try object.setValue(Set(os), forKey: key)
        }
    }

    static func swiftValue(_ value: TraceValue) throws -> Any? {
        switch value {
        case .null: return nil
        case .integer(let i): return i
        case .double(let d): return d
        case .decimal(let d): return Decimal(string: d)
        case .string(let s): return s
        case .bool(let b): return b
        case .date(let t): return Date(timeIntervalSinceReferenceDate: t)
        case .data(let d): return d
        case .uuid(let u): return UUID(uuidString: u)
        case .url(let u): return URL(string: u)
        case .object, .objects: throw ReplayError("an object value outside a context")
        }
    }

    public func read(_ how: String, key: String?, of object: ManagedObject) throws -> [ManagedObject] {
        let value: Any?
        switch how {
        case "value": value = object.value(forKey: key ?? "")
        case "checked": value = try object.checkedValue(forKey: key ?? "")
        case "primitive": value = object.primitiveValue(forKey: key ?? "")
        case "materialize": try object.materialize(); value = nil
        default: _ = object.changedValues(); value = nil
        }
        switch value {
        case let o as ManagedObject: return [o]
        case let s as Set<ManagedObject>: return s.sorted { $0.objectID.uriRepresentation.absoluteString < $1.objectID.uriRepresentation.absoluteString }
        default: return []
        }
    }

    static func request(_ r: TraceFetchRequest) throws -> FetchRequest {
        var request = FetchRequest(entityName: r.entity, predicate: try r.predicate.map { try ObjectPredicate(format: $0) },
                                   sortDescriptors: r.sort.map { $0.map { $0.hasPrefix("-") ? ObjectSortDescriptor(String($0.dropFirst()), ascending: false) : ObjectSortDescriptor($0) } })
        request.fetchLimit = r.limit ?? 0
        request.fetchOffset = r.offset ?? 0
        request.fetchBatchSize = r.batchSize ?? 0
        request.returnsObjectsAsFaults = r.asFaults ?? true
        request.includesPendingChanges = r.includesPendingChanges ?? true
        request.includesPropertyValues = r.includesPropertyValues ?? true
        request.propertiesToFetch = r.propertiesToFetch
        request.relationshipKeyPathsForPrefetching = r.prefetch ?? []
        request.shouldRefreshRefetchedObjects = r.refreshRefetched ?? false
        return request
    }

    public func fetch(_ r: TraceFetchRequest, in context: ManagedObjectContext) throws -> FetchOutcome<ManagedObject, ManagedObjectID> {
        let request = try Self.request(r)
        switch r.result ?? "objects" {
        case "ids": return .ids(try context.fetchObjectIDs(request))
        case "dictionaries": return .count(try context.fetchDictionaries(request).count)
        case "count": return .count(try context.count(for: request))
        default: return .objects(try context.fetch(request))
        }
    }

    public func save(_ context: ManagedObjectContext) throws -> [(ManagedObjectID, ManagedObjectID)] {
        let inserted = context.insertedObjects.map { ($0, $0.objectID) }
        try context.save()
        return inserted.map { ($0.1, $0.0.objectID) }
    }

    public func contextCall(_ op: String, on context: ManagedObjectContext) {
        switch op {
        case "reset": context.reset()
        case "rollback": context.rollback()
        case "refreshAllObjects": context.refreshAllObjects()
        default: context.processPendingChanges()
        }
    }

    public func refresh(_ object: ManagedObject, mergeChanges: Bool, in context: ManagedObjectContext) { context.refresh(object, mergeChanges: mergeChanges) }

    public func merge(inserted: [ManagedObjectID], updated: [ManagedObjectID], deleted: [ManagedObjectID], into context: ManagedObjectContext) {
        context.mergeChanges(fromObjectIDs: ContextObjectIDChanges(inserted: Set(inserted), updated: Set(updated), deleted: Set(deleted)))
    }

    public func mergeRemote(inserted: [ManagedObjectID], updated: [ManagedObjectID], deleted: [ManagedObjectID], into contexts: [ManagedObjectContext]) {
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: ContextObjectIDChanges(inserted: Set(inserted), updated: Set(updated), deleted: Set(deleted)), into: contexts)
    }

    public func batch(_ r: TraceBatchRequest, objectIDs: [ManagedObjectID]?, in context: ManagedObjectContext) throws -> [ManagedObjectID] {
        let resultType: BatchResultType = r.result == "objectIDs" ? .objectIDs : r.result == "count" ? .count : .statusOnly
        let result: BatchResult
        switch r.kind {
        case "insert":
            var request = BatchInsertRequest(entityName: r.entity, objects: try (r.rows ?? []).map { try $0.mapValues { try Self.swiftValue($0) as Any } })
            request.resultType = resultType
            result = try context.execute(request)
        case "update":
            var request = BatchUpdateRequest(entityName: r.entity, predicate: try r.predicate.map { try ObjectPredicate(format: $0) },
                                             propertiesToUpdate: try (r.values ?? [:]).mapValues { try Self.swiftValue($0) as Any })
            request.resultType = resultType
            result = try context.execute(request)
        default:
            let predicate = try r.predicate.map { try ObjectPredicate(format: $0) }
            var request = objectIDs.map { BatchDeleteRequest(objectIDs: $0) } ?? BatchDeleteRequest(fetchRequest: FetchRequest(entityName: r.entity, predicate: predicate))
            request.resultType = resultType
            result = try context.execute(request)
        }
        return result.objectIDs ?? []
    }

    public func makeController(_ r: TraceFetchRequest, context: ManagedObjectContext, sectionKey: String?, settings: [String: String]?) throws -> FetchedResultsController {
        let evaluation = settings?["changeEvaluation"].flatMap(FetchedResultsController.ChangeEvaluation.init(rawValue:)) ?? .coreData
        return FetchedResultsController(fetchRequest: try Self.request(r), managedObjectContext: context, sectionNameKeyPath: sectionKey, changeEvaluation: evaluation)
    }

    public func setDelegate(_ on: Bool, of controller: FetchedResultsController) { controller.delegate = on ? delegate : nil }
    public func performFetch(_ controller: FetchedResultsController) throws { try controller.performFetch() }
    public func fetchedObjects(_ controller: FetchedResultsController) -> [ManagedObject] { controller.fetchedObjects ?? [] }

    public func historyToken(_ coordinator: PersistentStoreCoordinator) throws -> Int {
        Int(try coordinator.currentPersistentHistoryToken()?.transactionNumber ?? 0)
    }

    public func fetchHistory(_ coordinator: PersistentStoreCoordinator, after: Int?) throws -> Int {
        let token = after.flatMap { n in coordinator.storeIdentifier.map { PersistentHistoryToken(replaying: Int64(n), store: $0) } }
        return try coordinator.fetchHistory(.fetchHistory(after: token)).count
    }

    public func adoptSnapshots(_ coordinator: PersistentStoreCoordinator, updated: [ManagedObjectID], deleted: [ManagedObjectID], from other: PersistentStoreCoordinator) {
        coordinator.adoptSnapshots(updated: Set(updated), deleted: Set(deleted), from: other)
    }

    public func deliver(_ kind: String, to context: ManagedObjectContext) throws {
        guard let queue = context.queue.simulatedQueue as? ManualQueue, queue.runNext() else {
            throw ReplayError("nothing queued on context's queue to deliver (\(kind))")
        }
    }
}

extension ObjectGraphReplayBackend {
    /// Replays one trace on a fresh store in a temporary folder; the outcome's `expected` holds the run's counts.
    public static func replay(header: TraceHeader, records: [OperationRecord], keepsSteps: Bool = false) throws -> ReplayOutcome {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-replay-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let backend = try ObjectGraphReplayBackend(header: header, directory: directory)
        let replayer = Replayer(backend: backend)
        replayer.keepsSteps = keepsSteps
        return try backend.run { try replayer.replay(records) }
    }
}
