import Foundation
import ObjectGraph
import Synchronization
import TraceReplay

/// Writes the operation trace of one simulated variant (Docs/calibration.md): told of every Core Data call the
/// run's code made at its top level (ObjectGraph's recording hook), it numbers contexts, coordinators and
/// controllers as it meets them, names objects by row (`Record#12`) or by insert number (`Record~5`), and keeps
/// the records in order. The simulation runs one thread at a time, so the order is the run's.
public final class OperationTraceRecorder: OperationRecorder, @unchecked Sendable {  // state behind `lock`
    fileprivate struct State {
        var records: [OperationRecord] = []
        var contexts: [ObjectIdentifier: Int] = [:]
        var coordinators: [(PersistentStoreCoordinator, Int)] = []
        var controllers: [(WeakController, Int)] = []
        var temporaries: [ManagedObjectID: Int] = [:]
        /// Object instances handed to the app: the context they were handed out in.
        var exposed: [ObjectIdentifier: Int] = [:]
        var modelVersions: [ManagedObjectModel] = []
        var nextContext = 1
        var nextTemporary = 1
        /// Each thread's call waiting for its result: the record's index.
        var pending: [ObjectIdentifier: Int] = [:]
    }
    fileprivate struct WeakController { weak var controller: FetchedResultsController? }
    private let lock = Mutex(State())

    public init() {}

    /// The records so far.
    public var records: [OperationRecord] { lock.withLock { $0.records } }

    /// The models the coordinators opened the store with, in the order first met.
    var models: [ManagedObjectModel] { lock.withLock { $0.modelVersions } }

    // MARK: OperationRecorder

    package func record(_ call: RecordedCall, on thread: ExecutionThread) {
        let name = (thread as? Participant)?.name
        lock.withLock { state in
            var r = OperationRecord(op: "")
            r.thread = name
            Self.describe(call, into: &r, &state)
            Self.append(r, &state)
            state.pending[ObjectIdentifier(thread)] = state.records.count - 1
        }
    }

    package func result(_ result: RecordedResult, of call: RecordedCall, on thread: ExecutionThread) {
        lock.withLock { state in
            guard let index = state.pending.removeValue(forKey: ObjectIdentifier(thread)) else { return }
            let ctx: Int? = {
                switch call {
                case .fetch(let c, _, _), .insert(let c, _), .objectWithID(let c, _, _), .save(let c), .batchInsert(let c, _), .batchUpdate(let c, _), .batchDelete(let c, _):
                    return Self.number(c, &state)
                case .readValue(let o, _, _): return o.managedObjectContext.map { Self.number($0, &state) }
                case .controllerObjects(let frc), .controllerFetch(let frc): return Self.number(frc.managedObjectContext, &state)
                default: return nil
                }
            }()
            var r = state.records[index]
            switch result {
            case .none:
                return
            case .failed(let message):
                r.error = message
            case .object(let object):
                guard let object else { r.outCount = 0; break }
                r.out = [Self.ref(object.objectID, &state)]
                if let ctx { state.exposed[ObjectIdentifier(object)] = ctx }
            case .objects(let objects):
                r.out = objects.map { Self.ref($0.objectID, &state) }
                if let ctx { for o in objects { state.exposed[ObjectIdentifier(o)] = ctx } }
            case .ids(let ids):
                r.out = ids.map { Self.ref($0, &state) }
            case .count(let n):
                r.outCount = n
            case .value(let value):
                // Only objects a read handed out matter to a replay (the app may hold them).
                let objects: [ManagedObject]
                switch value {
                case let o as ManagedObject: objects = [o]
                case let s as Set<ManagedObject>: objects = Array(s)
                default: objects = []
                }
                guard !objects.isEmpty else { return }
                r.out = objects.map { Self.ref($0.objectID, &state) }.sorted()
                if let ctx { for o in objects { state.exposed[ObjectIdentifier(o)] = ctx } }
            case .saved(let pairs):
                // Each inserted object's insert number, with the row key the save gave it (same number: a push).
                let known = pairs.compactMap { before, after -> (Int, ObjectRef)? in
                    guard let n = state.temporaries[before] else { return nil }
                    if !after.isTemporaryID { state.temporaries[before] = nil }
                    return (n, Self.ref(after, &state))
                }.sorted { $0.0 < $1.0 }
                guard !known.isEmpty, known.contains(where: { $0.1.key != nil }) else { return }
                r.savedInserts = known.map { ObjectRef(entity: $0.1.entity, temporary: $0.0) }
                r.out = known.map(\.1)
            case .transactions(let numbers):
                r.outCount = numbers.count
                r.value = .string(numbers.map(String.init).joined(separator: ","))
            }
            state.records[index] = r
        }
    }

    package func delivered(_ kind: String, to context: ManagedObjectContext, on thread: ExecutionThread) {
        let name = (thread as? Participant)?.name
        lock.withLock { state in
            var r = OperationRecord(op: "deliver")
            r.thread = name
            r.ctx = Self.number(context, &state)
            r.key = kind
            Self.append(r, &state)
        }
    }

    package func freed(_ object: ManagedObject) {
        lock.withLock { state in
            guard let ctx = state.exposed.removeValue(forKey: ObjectIdentifier(object)) else { return }
            var r = OperationRecord(op: "free")
            r.ctx = ctx
            r.obj = Self.ref(object.objectID, &state)
            Self.append(r, &state)
        }
    }

    package func freed(_ context: ManagedObjectContext) {
        lock.withLock { state in
            guard let ctx = state.contexts.removeValue(forKey: ObjectIdentifier(context)) else { return }
            var r = OperationRecord(op: "freeContext")
            r.ctx = ctx
            Self.append(r, &state)
        }
    }

    // MARK: Describing calls

    private static func append(_ record: OperationRecord, _ state: inout State) {
        var record = record
        record.n = state.records.count + 1
        state.records.append(record)
    }

    private static func number(_ context: ManagedObjectContext, _ state: inout State) -> Int {
        if let n = state.contexts[ObjectIdentifier(context)] { return n }
        let n = state.nextContext
        state.nextContext += 1
        state.contexts[ObjectIdentifier(context)] = n
        return n
    }

    private static func number(_ coordinator: PersistentStoreCoordinator, _ state: inout State) -> Int {
        if let n = state.coordinators.first(where: { $0.0 === coordinator })?.1 { return n }
        let n = state.coordinators.count + 1
        state.coordinators.append((coordinator, n))
        return n
    }

    private static func number(_ controller: FetchedResultsController, _ state: inout State) -> Int {
        if let n = state.controllers.first(where: { $0.0.controller === controller })?.1 { return n }
        let n = state.controllers.count + 1
        state.controllers.append((WeakController(controller: controller), n))
        return n
    }

    fileprivate static func ref(_ id: ManagedObjectID, _ state: inout State) -> ObjectRef {
        if let key = id.primaryKey { return ObjectRef(entity: id.entity.name, key: key) }
        if let n = state.temporaries[id] { return ObjectRef(entity: id.entity.name, temporary: n) }
        let n = state.nextTemporary
        state.nextTemporary += 1
        state.temporaries[id] = n
        return ObjectRef(entity: id.entity.name, temporary: n)
    }

    private static func refs(_ ids: Set<ManagedObjectID>, _ state: inout State) -> [ObjectRef]? {
        ids.isEmpty ? nil : ids.map { ref($0, &state) }.sorted()
    }

    fileprivate static func value(_ value: Any?, _ state: inout State) -> TraceValue {
        switch value {
        case nil: return .null
        case let v as PropertyValue: return propertyValue(v, &state)
        case let o as ManagedObject: return .object(ref(o.objectID, &state))
        case let id as ManagedObjectID: return .object(ref(id, &state))
        case let s as Set<ManagedObject>: return .objects(s.map { ref($0.objectID, &state) }.sorted())
        case let a as [ManagedObject]: return .objects(a.map { ref($0.objectID, &state) })
        default: return propertyValue(PropertyValue(any: value), &state)
        }
    }

    fileprivate static func propertyValue(_ v: PropertyValue, _ state: inout State) -> TraceValue {
        switch v {
        case .null: return .null
        case .integer(let i): return .integer(i)
        case .double(let d): return .double(d)
        case .decimal(let d): return .decimal(d.description)
        case .string(let s): return .string(s)
        case .bool(let b): return .bool(b)
        case .date(let d): return .date(d.timeIntervalSinceReferenceDate)
        case .data(let d): return .data(d)
        case .uuid(let u): return .uuid(u.uuidString)
        case .uri(let u): return .url(u.absoluteString)
        case .objectID(let id): return .object(ref(id, &state))
        }
    }

    static func request(_ request: FetchRequest, result: String) -> TraceFetchRequest {
        var r = TraceFetchRequest(entity: request.entityName)
        r.predicate = request.predicate?.description
        if let sort = request.sortDescriptorsIfSet { r.sort = sort.map { ($0.ascending ? "" : "-") + $0.key } }
        if request.fetchLimit > 0 { r.limit = request.fetchLimit }
        if request.fetchOffset > 0 { r.offset = request.fetchOffset }
        if request.fetchBatchSize > 0 { r.batchSize = request.fetchBatchSize }
        if result != "objects" { r.result = result }
        if !request.returnsObjectsAsFaults { r.asFaults = false }
        if !request.includesPendingChanges { r.includesPendingChanges = false }
        if !request.includesPropertyValues { r.includesPropertyValues = false }
        r.propertiesToFetch = request.propertiesToFetch
        if !request.relationshipKeyPathsForPrefetching.isEmpty { r.prefetch = request.relationshipKeyPathsForPrefetching }
        if request.shouldRefreshRefetchedObjects { r.refreshRefetched = true }
        return r
    }

    private static func batchResult(_ type: BatchResultType) -> String {
        switch type {
        case .statusOnly: return "statusOnly"
        case .count: return "count"
        case .objectIDs: return "objectIDs"
        }
    }

    private static func describe(_ call: RecordedCall, into r: inout OperationRecord, _ state: inout State) {
        switch call {
        case .coordinatorAdded(let c, let options, let model):
            r.op = "coordinator"
            r.coord = number(c, &state)
            if !state.modelVersions.contains(where: { $0 === model }) { state.modelVersions.append(model) }
            r.count = state.modelVersions.firstIndex { $0 === model }
            var settings = ["name": c.name, "store": c.storeURL?.lastPathComponent ?? "memory"]
            if options.persistentHistoryTracking { settings["history"] = "true" }
            if options.remoteChangeNotifications { settings["remoteChange"] = "true" }
            r.settings = settings
        case .contextCreated(let c):
            r.op = "context"
            r.ctx = number(c, &state)
            r.settings = ["concurrency": c.concurrencyType == .mainQueue ? "main" : "private"]
        case .setCoordinator(let c, let coordinator):
            r.op = "setCoordinator"
            r.ctx = number(c, &state)
            r.coord = coordinator.map { number($0, &state) }
        case .setParent(let c, let parent):
            r.op = "setParent"
            r.ctx = number(c, &state)
            r.parent = parent.map { number($0, &state) }
        case .setting(let c, let key, let value):
            r.op = "set"
            r.ctx = number(c, &state)
            r.key = key
            r.value = .string(value)
        case .insert(let c, let entity):
            r.op = "insert"
            r.ctx = number(c, &state)
            r.entity = entity
        case .delete(let o):
            r.op = "delete"
            r.ctx = o.managedObjectContext.map { number($0, &state) }
            r.obj = ref(o.objectID, &state)
        case .setValue(let o, let key, let v):
            r.op = "setValue"
            r.ctx = o.managedObjectContext.map { number($0, &state) }
            r.obj = ref(o.objectID, &state)
            r.key = key
            r.value = value(v, &state)
        case .readValue(let o, let key, let how):
            r.op = how
            r.ctx = o.managedObjectContext.map { number($0, &state) }
            r.obj = ref(o.objectID, &state)
            if !key.isEmpty { r.key = key }
        case .fetch(let c, let request, let result):
            r.op = "fetch"
            r.ctx = number(c, &state)
            r.request = Self.request(request, result: result)
        case .save(let c):
            r.op = "save"
            r.ctx = number(c, &state)
        case .contextCall(let c, let what):
            r.op = what
            r.ctx = number(c, &state)
        case .refresh(let o, let merge):
            r.op = "refresh"
            r.ctx = o.managedObjectContext.map { number($0, &state) }
            r.obj = ref(o.objectID, &state)
            r.flag = merge
        case .objectWithID(let c, let id, let how):
            r.op = how == "object" ? "objectWithID" : how == "existing" ? "existingObject" : "registeredObject"
            r.ctx = number(c, &state)
            r.obj = ref(id, &state)
        case .merge(let c, let changes):
            r.op = "merge"
            r.ctx = number(c, &state)
            r.inserted = refs(changes.inserted, &state)
            r.updated = refs(changes.updated, &state)
            r.deleted = refs(changes.deleted, &state)
        case .mergeRemote(let changes, let contexts):
            r.op = "mergeRemote"
            r.contexts = contexts.map { number($0, &state) }
            r.inserted = refs(changes.inserted, &state)
            r.updated = refs(changes.updated, &state)
            r.deleted = refs(changes.deleted, &state)
        case .batchInsert(let c, let request):
            r.op = "batch"
            r.ctx = number(c, &state)
            var b = TraceBatchRequest(kind: "insert", entity: request.entityName, result: batchResult(request.resultType))
            b.rows = request.objects.map { row in row.mapValues { value($0, &state) } }
            r.batch = b
        case .batchUpdate(let c, let request):
            r.op = "batch"
            r.ctx = number(c, &state)
            var b = TraceBatchRequest(kind: "update", entity: request.entityName, result: batchResult(request.resultType))
            b.predicate = request.predicate?.description
            b.values = request.propertiesToUpdate.mapValues { value($0, &state) }
            r.batch = b
        case .batchDelete(let c, let request):
            r.op = "batch"
            r.ctx = number(c, &state)
            var b = TraceBatchRequest(kind: "delete", entity: request.fetchRequest?.entityName ?? request.objectIDs?.first?.entity.name ?? "", result: batchResult(request.resultType))
            b.predicate = request.fetchRequest?.predicate?.description
            r.objs = request.objectIDs.map { $0.map { ref($0, &state) } }
            r.batch = b
        case .controllerCreated(let frc, let request, let c, let sectionKey, let evaluation):
            r.op = "controller"
            r.frc = number(frc, &state)
            r.ctx = number(c, &state)
            r.request = Self.request(request, result: "objects")
            r.key = sectionKey
            if evaluation != "coreData" { r.settings = ["changeEvaluation": evaluation] }
        case .controllerDelegate(let frc, let set):
            r.op = "controllerDelegate"
            r.frc = number(frc, &state)
            r.ctx = number(frc.managedObjectContext, &state)
            r.flag = set
        case .controllerFetch(let frc):
            r.op = "controllerFetch"
            r.frc = number(frc, &state)
            r.ctx = number(frc.managedObjectContext, &state)
        case .controllerObjects(let frc):
            r.op = "controllerObjects"
            r.frc = number(frc, &state)
            r.ctx = number(frc.managedObjectContext, &state)
        case .historyToken(let c):
            r.op = "historyToken"
            r.coord = number(c, &state)
        case .fetchHistory(let c, let after):
            r.op = "fetchHistory"
            r.coord = number(c, &state)
            r.count = after.map(Int.init)
        case .adoptSnapshots(let c, let updated, let deleted, let from):
            r.op = "adoptSnapshots"
            r.coord = number(c, &state)
            r.parent = number(from, &state)
            r.updated = refs(updated, &state)
            r.deleted = refs(deleted, &state)
        case .setPoolSize(let c, let size):
            r.op = "connectionPool"
            r.coord = number(c, &state)
            r.count = size
        }
    }
}
