import Foundation
import ObjectGraph
import TraceReplay

/// The replay's simulation: threads that run one at a time, queues that run a `sync` in place and keep what the
/// library queued by itself until the trace says it ran (a `deliver` record). Each scheduling point a thread passes
/// inside a call is counted as the run's scheduler counts it (``OperationTraceRecorder/schedulingPoint(_:)``), and
/// the thread stops there when the run's thread did (``InterleavedReplay``).
final class ReplaySimulation: ExecutionSimulation, @unchecked Sendable {  // touched by the thread holding the replay's baton only
    private var clock: UInt64 = 0
    /// Every thread of the replay (their counts are the replay's).
    var members: [ReplayThread] = []
    /// Where a thread stops (set by the driver).
    weak var driver: InterleavedReplay?
    func makeQueue(label: String) -> any SimulatedQueue { ManualQueue(label: label, simulation: self) }
    /// A clock that moves on at each read: ages are never 0, as in a run (a staleness of 0 always refetches).
    func now(on thread: ExecutionThread) -> UInt64 {
        clock += 1
        return clock
    }
    func sleep(until deadline: UInt64, on thread: ExecutionThread) {
        point(thread)
        clock = max(clock, deadline)
    }
    /// The run's scheduler waits for the resource (a scheduling point), runs `body`, then rejoins (another).
    func exclusive(_ resource: SharedResource, on thread: ExecutionThread, _ body: () -> Void) {
        point(thread)
        body()
        point(thread)
    }
    func pooled(_ resource: SharedResource, capacity: Int, on thread: ExecutionThread, _ body: () -> Void) {
        point(thread)
        body()
        point(thread)
    }
    func point(_ thread: ExecutionThread?) {
        guard let thread = thread?.owner as? ReplayThread else { return }
        driver?.schedulingPoint(thread)
    }
}

/// A thread of the replay: one per thread of the run (named as the trace names it).
final class ReplayThread: @unchecked Sendable {  // touched by the baton holder only
    let name: String
    /// Its membership of the replay's simulation: its counts, and where its calls are told.
    let membership: ExecutionThread
    let semaphore = DispatchSemaphore(value: 0)
    /// The queues whose blocks it is inside, innermost last.
    var queueStack: [ObjectIdentifier] = []
    /// Calls and deliveries in flight, and the scheduling points and call-outs passed in the outermost.
    var inFlight = 0
    var points = 0
    /// The record to replay when it gets the baton.
    var task: OperationRecord?
    /// Where it waits for its `resume` record.
    var stopped: (at: Int, inApp: Bool)?
    var terminate = false
    /// Its records' indices in the trace, and how many of them were replayed.
    var mine: [Int] = []
    var next = 0

    init(name: String, simulation: ReplaySimulation) {
        self.name = name
        membership = ExecutionThread(simulation: simulation)
        membership.owner = self
    }
}

/// A queue of the replay: `sync` runs in place (the calling thread is the queue's for the block), `async` waits for
/// a delivery.
final class ManualQueue: SimulatedQueue, @unchecked Sendable {  // touched by the baton holder only
    let label: String
    private(set) var pending: [@Sendable () -> Void] = []
    private let simulation: ReplaySimulation
    init(label: String, simulation: ReplaySimulation) { (self.label, self.simulation) = (label, simulation) }
    func async(_ block: @escaping @Sendable () -> Void) {
        simulation.point(ExecutionThread.current)
        pending.append(block)
    }
    func sync(_ block: () -> Void) {
        simulation.point(ExecutionThread.current)
        run(block)
        simulation.point(ExecutionThread.current)
    }
    private func run(_ block: () -> Void) {
        guard let thread = ExecutionThread.current?.owner as? ReplayThread else { return block() }
        thread.queueStack.append(ObjectIdentifier(self))
        defer { thread.queueStack.removeLast() }
        block()
    }
    var isCurrent: Bool { (ExecutionThread.current?.owner as? ReplayThread)?.queueStack.last == ObjectIdentifier(self) }
    /// Runs the oldest block queued (a worker of the run picked it up: no scheduling point); false when none is.
    func runNext() -> Bool {
        guard !pending.isEmpty else { return false }
        let block = pending.removeFirst()
        run(block)
        return true
    }
}

/// Replays a trace through ObjectGraph in the run's exact interleaving (Docs/calibration.md "Interleaving"): one
/// thread per thread of the run, the baton passed as the trace says. A thread inside a call stops at the scheduling
/// point its `resume` record names and goes on when the driver reaches that record; the calls made inside a
/// call-out (an observer, a controller's delegate) are made there, by the thread that called out.
final class InterleavedReplay: ProbeSink, @unchecked Sendable {  // touched by the baton holder only
    let records: [OperationRecord]
    let replayer: Replayer<ObjectGraphReplayBackend>
    let simulation: ReplaySimulation
    let driverThread: ReplayThread
    private var threads: [String: ReplayThread] = [:]
    private var order: [ReplayThread] = []
    private var cursor = 0
    private var failure: (any Error)?
    private var aborted = false

    init(records: [OperationRecord], replayer: Replayer<ObjectGraphReplayBackend>, simulation: ReplaySimulation, driverThread: ReplayThread) {
        self.records = records
        self.replayer = replayer
        self.simulation = simulation
        self.driverThread = driverThread
        for (i, r) in records.enumerated() where r.op != "end" {
            thread(r.thread ?? "runner").mine.append(i)
        }
    }

    private func thread(_ name: String) -> ReplayThread {
        if let t = threads[name] { return t }
        let t = ReplayThread(name: name, simulation: simulation)
        simulation.members.append(t)
        t.membership.sink = self
        threads[name] = t
        order.append(t)
        let body = Thread { [self] in
            ExecutionThread.install(t.membership)
            t.semaphore.wait()
            while !t.terminate {
                if let task = t.task {
                    applyCounting(task, on: t)
                    t.task = nil
                }
                driverThread.semaphore.signal()
                t.semaphore.wait()
            }
            ExecutionThread.install(nil)
        }
        body.name = "replay \(name)"
        body.stackSize = 4 << 20
        body.start()
        return t
    }

    /// Replays `record` on `t` and keeps what `t` counted meanwhile as the record's step (calls made inside it
    /// included, other threads' work while it was stopped not: as the run counts a call).
    private func applyCounting(_ record: OperationRecord, on t: ReplayThread) {
        let before = ObjectGraphReplayBackend.counters(of: [t.membership])
        do { try replayer.apply(record) } catch { fail(error) }
        guard replayer.keepsSteps else { return }
        var delta: [String: Int] = [:]
        for (k, v) in ObjectGraphReplayBackend.counters(of: [t.membership]) where v != before[k, default: 0] { delta[k] = v - before[k, default: 0] }
        if !delta.isEmpty { replayer.outcome.steps.append(ReplayStep(n: record.n, op: record.op, ctx: record.ctx, counts: delta)) }
    }

    private func fail(_ error: any Error) {
        if failure == nil { failure = error }
        aborted = true
    }

    /// Hands the baton to `t` and waits until it stops or ends its record.
    private func run(_ t: ReplayThread) {
        t.semaphore.signal()
        driverThread.semaphore.wait()
    }

    /// Runs the trace on the calling thread (the driver); returns when every record was replayed.
    func drive() throws {
        defer { finish() }
        while cursor < records.count, !aborted {
            let r = records[cursor]
            if r.op == "end" {
                replayer.outcome.expected = r.counts
                cursor += 1
                continue
            }
            let t = thread(r.thread ?? "runner")
            if r.op == "resume" {
                guard let stopped = t.stopped, stopped.at == r.at, stopped.inApp == (r.flag ?? false) else {
                    throw ReplayError("record \(r.n) (resume): \(t.name) is \(t.stopped.map { "stopped at point \($0.at)\($0.inApp ? " in app code" : "")" } ?? "not stopped"), the trace resumes it at point \(r.at ?? -1)\(r.flag == true ? " in app code" : "")")
                }
                consume(t)
                t.stopped = nil
            } else {
                guard r.within == nil else { throw ReplayError("record \(r.n) (\(r.op)): made inside record \(r.within!) of \(t.name), which did not call out here") }
                guard t.inFlight == 0, t.stopped == nil else { throw ReplayError("record \(r.n) (\(r.op)): \(t.name) is still inside a call") }
                consume(t)
                t.task = r
            }
            run(t)
        }
        if let failure { throw failure }
        if let stuck = order.first(where: { $0.stopped != nil }) {
            throw ReplayError("\(stuck.name) stopped at point \(stuck.stopped!.at) and the trace never resumes it")
        }
    }

    /// The record at the cursor is `t`'s next: both move on.
    private func consume(_ t: ReplayThread) {
        cursor += 1
        while t.next < t.mine.count, t.mine[t.next] < cursor { t.next += 1 }
    }

    /// `t`'s next record, if any.
    private func upcoming(_ t: ReplayThread) -> (index: Int, record: OperationRecord)? {
        while t.next < t.mine.count, t.mine[t.next] < cursor { t.next += 1 }
        guard t.next < t.mine.count else { return nil }
        return (t.mine[t.next], records[t.mine[t.next]])
    }

    /// Stops `t` (inside a call) until the driver reaches its `resume` record.
    private func stop(_ t: ReplayThread, at point: Int, inApp: Bool) {
        t.stopped = (point, inApp)
        driverThread.semaphore.signal()
        t.semaphore.wait()
    }

    private func finish() {
        // A failed replay leaves threads stopped inside calls: let them run to the end of their record.
        while let t = order.first(where: { $0.stopped != nil }) {
            t.stopped = nil
            run(t)
        }
        for t in order {
            t.terminate = true
            t.semaphore.signal()
        }
    }

    // MARK: The replay's hooks

    func schedulingPoint(_ t: ReplayThread) {
        guard t.inFlight > 0, t.membership.recordingDepth > 0, !aborted else { return }
        t.points += 1
        if let (_, r) = upcoming(t), r.op == "resume", r.at == t.points, r.flag != true {
            stop(t, at: t.points, inApp: false)
        }
    }

    package func receive(_ event: ProbeEvent, on thread: ExecutionThread) {
        switch event {
        case .call, .delivery: began(thread)
        case .result, .deliveryEnded: ended(thread)
        case .callout: calloutBegan(on: thread)
        case .objectFreed, .contextFreed, .trace: break
        }
    }

    private func began(_ thread: ExecutionThread) {
        guard let t = thread.owner as? ReplayThread else { return }
        if t.inFlight == 0 { t.points = 0 }
        t.inFlight += 1
    }

    private func ended(_ thread: ExecutionThread) {
        guard let t = thread.owner as? ReplayThread, t.inFlight > 0 else { return }
        t.inFlight -= 1
    }

    /// The library calls out on `t`: the calls the run's app made there are made now, and `t` stops where the
    /// run's app code gave the baton away.
    private func calloutBegan(on thread: ExecutionThread) {
        guard let t = thread.owner as? ReplayThread, t.inFlight > 0, !aborted else { return }
        t.points += 1
        while !aborted, let (index, r) = upcoming(t) {
            if r.op == "resume", r.flag == true, r.at == t.points {
                stop(t, at: t.points, inApp: true)
            } else if r.op != "resume", r.within != nil, r.at == t.points, index == cursor {
                consume(t)
                applyCounting(r, on: t)
            } else {
                return
            }
        }
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
    let simulation = ReplaySimulation()
    /// The thread that drives the replay (and makes the records no thread of the run made).
    let thread: ReplayThread
    let mainQueue: ContextQueue
    private var storeIdentifier: String?
    private var firstCoordinator: PersistentStoreCoordinator?
    private final class Delegate: FetchedResultsControllerDelegate {}
    private let delegate = Delegate()

    /// Call ``run(_:)`` to replay: it installs the replay's thread membership around the work.
    public init(header: TraceHeader, directory: URL) throws {
        self.directory = directory
        models = try header.models.indices.map { i in
            do { return try ManagedObjectModel(file: Self.modelFile(header.models, version: i)) } catch {
                throw ReplayError("the trace's model \(i) cannot be used: \(error)")
            }
        }
        thread = ReplayThread(name: "driver", simulation: simulation)
        simulation.members.append(thread)
        let previous = ExecutionThread.current
        ExecutionThread.install(thread.membership)
        mainQueue = ContextQueue(label: "replay-main")
        ExecutionThread.install(previous)
    }

    /// The model file of version `i` of the header's models: the first alone, a later one with the versions before
    /// it (the store a migration opens was made with the previous one).
    static func modelFile(_ models: [TraceModel], version i: Int) -> ModelFile {
        guard i > 0 else {
            var file = ModelFile(entities: models[0].entities)
            file.configurations = models[0].configurations
            return file
        }
        let versions = (0...i).map { j in
            ModelFile.Version(name: models[j].version ?? (j == i - 1 ? "previous" : "v\(j)"), entities: models[j].entities,
                              configurations: models[j].configurations)
        }
        return ModelFile(versions: versions, current: versions.last!.name)
    }

    /// Runs `body` as the replay's driving thread (its queues, its counts).
    public func run<T>(_ body: () throws -> T) rethrows -> T {
        let previous = ExecutionThread.current
        ExecutionThread.install(thread.membership)
        defer { ExecutionThread.install(previous) }
        return try body()
    }

    public func counters() -> [String: Int] { Self.counters(of: simulation.members.map(\.membership)) }

    /// What `threads` counted, by name: every costed operation but `blockRun`, and SQL statements by kind.
    static func counters(of threads: [ExecutionThread]) -> [String: Int] {
        CostedOperation.replayCounts(operation: { i in threads.reduce(0) { $0 + $1.counts[i] } },
                                     statements: { i in threads.reduce(0) { $0 + $1.statementCounts[i] } })
    }

    public func openCoordinator(model: Int, settings: [String: String]) throws -> PersistentStoreCoordinator {
        guard models.indices.contains(model) else { throw ReplayError("no model version \(model) in the trace's header") }
        let c = PersistentStoreCoordinator(managedObjectModel: models[model], name: settings["name"] ?? "coordinator")
        try addStore(to: c, settings: settings)
        if firstCoordinator == nil { firstCoordinator = c; storeIdentifier = c.storeIdentifier }
        return c
    }

    public func addStore(to c: PersistentStoreCoordinator, settings: [String: String]) throws {
        var options = StoreOptions()
        options.persistentHistoryTracking = settings["history"] == "true"
        options.remoteChangeNotifications = settings["remoteChange"] == "true"
        options.readOnly = settings["readOnly"] == "true"
        options.migrateAutomatically = settings["migrate"] == "true"
        options.inferMappingModel = settings["inferMapping"] == "true"
        let configuration = settings["configuration"]
        if settings["store"] == "memory" {
            try c.addPersistentStore(type: .inMemory, configuration: configuration, options: options)
        } else {
            try c.addPersistentStore(type: .sqlite, configuration: configuration, at: directory.appendingPathComponent(settings["store"] ?? "store.sqlite"),
                                     options: options)
        }
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
        case "queryGeneration":
            // `.current` and nil replay; another context's token has no name in the trace.
            guard value != "token" else { throw ReplayError("a query generation token of another context cannot be replayed") }
            try context.setQueryGenerationFrom(value == "current" ? .current : nil)
        default: throw ReplayError("unknown context setting \(key)")
        }
    }

    static func policy(_ name: String) throws -> MergePolicy {
        let parsed = TraceMergePolicy(name)
        guard let type = MergePolicy.PolicyType.allCases.first(where: { $0.name == parsed.type }) else { throw ReplayError("unknown merge policy \(name)") }
        return MergePolicy(type: type, deletedElsewhere: parsed.resurrect ? .resurrect : .delete)
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
        case .plain(let v): try object.setValue(try v.foundationValue(), forKey: key)
        case .object(let o): try object.setValue(o, forKey: key)
        case .objects(let os): try object.setValue(Set(os), forKey: key)
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
                                   sortDescriptors: r.sort.map { $0.map(ObjectSortDescriptor.init(scenarioKey:)) })
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
            var request = BatchInsertRequest(entityName: r.entity, objects: try (r.rows ?? []).map { try $0.mapValues { try $0.foundationValue() as Any } })
            request.resultType = resultType
            result = try context.execute(request)
        case "update":
            var request = BatchUpdateRequest(entityName: r.entity, predicate: try r.predicate.map { try ObjectPredicate(format: $0) },
                                             propertiesToUpdate: try (r.values ?? [:]).mapValues { try $0.foundationValue() as Any })
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

    public func fetchHistory(_ coordinator: PersistentStoreCoordinator, after: Int?) throws -> [Int] {
        let token = after.flatMap { n in coordinator.storeIdentifier.map { PersistentHistoryToken(replaying: Int64(n), store: $0) } }
        return try coordinator.fetchHistory(.fetchHistory(after: token)).map { Int($0.transactionNumber) }
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
    /// Replays one trace on a fresh store in a temporary folder, in the run's interleaving (or, `interleaved:
    /// false`, one call after the other in the trace's order, as a Core Data replay does); the outcome's `expected`
    /// holds the run's counts.
    public static func replay(header: TraceHeader, records: [OperationRecord], keepsSteps: Bool = false, interleaved: Bool = true) throws -> ReplayOutcome {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-replay-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let backend = try ObjectGraphReplayBackend(header: header, directory: directory)
        defer { backend.simulation.members = [] }
        let replayer = Replayer(backend: backend)
        replayer.keepsSteps = keepsSteps
        guard interleaved else { return try backend.run { try replayer.replay(records) } }
        let driver = InterleavedReplay(records: records, replayer: replayer, simulation: backend.simulation, driverThread: backend.thread)
        backend.simulation.driver = driver
        backend.thread.membership.sink = driver
        Probe.started()
        defer { Probe.stopped() }
        try backend.run { try driver.drive() }
        replayer.outcome.counts = backend.counters()
        return replayer.outcome
    }
}
