import Foundation
import ObjectGraph
import Synchronization
import TraceReplay

/// Writes the operation trace of one simulated variant (Docs/calibration.md): told of every Core Data call the
/// run's code made at its top level (ObjectGraph's recording hook), it numbers contexts, coordinators and
/// controllers as it meets them, names objects by row (`Record#12`) or by insert number (`Record~5`), and keeps
/// the records in order. The simulation runs one thread at a time, so the order is the run's.
public final class OperationTraceRecorder: ProbeSink, @unchecked Sendable {  // state behind `lock`
    fileprivate struct State {
        /// The records not yet handed to the sink (all of them without one); `base` records went before them.
        var records: [OperationRecord] = []
        var base = 0
        var contexts: [ObjectIdentifier: Int] = [:]
        var coordinators: [(PersistentStoreCoordinator, Int)] = []
        var controllers: [(WeakController, Int)] = []
        var temporaries: [ManagedObjectID: Int] = [:]
        /// Object instances handed to the app: the context they were handed out in.
        var exposed: [ObjectIdentifier: Int] = [:]
        var modelVersions: [ManagedObjectModel] = []
        var nextContext = 1
        var nextTemporary = 1
        /// Store identifiers met in error messages, numbered in the order met (``stableMessage(_:_:)``).
        var stores: [String: Int] = [:]
        /// Set when the simulation ended (``close()``): what happens after is not the run's.
        var closed = false
        var mostHeld = 0

        /// The record numbered `index + 1` (an index over the whole trace; it must not have gone to the sink).
        subscript(index: Int) -> OperationRecord {
            get { records[index - base] }
            set { records[index - base] = newValue }
        }
        /// Each thread's calls in flight and where it stopped, by thread.
        var threads: [ObjectIdentifier: ThreadState] = [:]
    }

    /// Where a thread is in its calls (Docs/calibration.md "Interleaving"): the records of the calls it is inside
    /// (outermost first), the scheduling points and call-outs it passed in the outermost, and, once another
    /// thread recorded while it was stopped, the point it had stopped at (written as a `resume` record when it
    /// goes on).
    fileprivate struct ThreadState {
        var name: String
        var inFlight: [Int] = []
        var points = 0
        /// Whether its last scheduling point was in app code (a call-out's observer) rather than the library's.
        var stoppedInApp = false
        var stopped: (at: Int, inApp: Bool)?
        /// The last record it started in the outermost call in flight.
        var latest: Int?
        /// What it counted so far (operations by raw value, then statements by kind), when the call started.
        var countsAtStart: [Int: [Int]] = [:]
    }
    fileprivate struct WeakController { weak var controller: FetchedResultsController? }
    private let lock = Mutex(State())
    /// Where settled records go as the run makes them (nil: all are kept until ``finish()``).
    private let sink: (@Sendable ([OperationRecord]) -> Void)?
    /// How many settled records are handed to the sink at once.
    private let flushEvery: Int

    public init() {
        sink = nil
        flushEvery = .max
    }

    /// A recorder that hands its records to `sink` as they settle, at least `flushEvery` at a time, instead of
    /// keeping the whole trace in memory (a trace of a million-object run is gigabytes of records). A record
    /// settles when no call of any thread can still change it: it is not a call in flight, not a thread's latest
    /// record (an object let go inside a call is noted on it), and not inside a run of `free` records that may
    /// go on. ``finish()`` returns the rest. The sink sees every record once, in order, as a recorder without one
    /// lists them at ``finish()``.
    public init(flushEvery: Int, sink: @escaping @Sendable ([OperationRecord]) -> Void) {
        self.sink = sink
        self.flushEvery = max(1, flushEvery)
    }

    /// The records the sink has not had, settled; ends the recording (nothing after is recorded).
    public func finish() -> [OperationRecord] {
        lock.withLock { state in
            state.closed = true
            let rest = Self.settled(state.records, base: state.base)
            state.base += state.records.count
            state.records = []
            return rest
        }
    }

    /// The records made so far, those handed to the sink included.
    public var recordedCount: Int { lock.withLock { $0.base + $0.records.count } }

    /// The most records held at once (without a sink: all of them), for tests of the bound.
    public var mostHeld: Int { lock.withLock { $0.mostHeld } }

    /// The simulation ended: nothing after is recorded. Its workers end on real threads, at times of their own,
    /// and let go of what they held then; recorded, those frees made the trace of one run differ from the next
    /// (and another recording simulation in the same process kept the hooks on).
    func close() { lock.withLock { $0.closed = true } }


    /// The objects one thread let go together (a run of `free` records with nothing between them, or one
    /// record's `releasedBefore`/`releasedAfter`) in the order of their context and reference, not the order
    /// they were freed in: a container the app dropped frees its elements in its own order (a set's follows
    /// addresses), which made two runs of one scenario and seed write different bytes. A replay drops them all at
    /// the same place, so the order carries nothing.
    /// `base`: the number of records before these (their `n` counts from it).
    static func settled(_ records: [OperationRecord], base: Int = 0) -> [OperationRecord] {
        func key(_ r: TraceRelease) -> (Int, Int, ObjectRef) {
            (r.ctx, r.obj == nil ? 1 : 0, r.obj ?? ObjectRef(entity: "", key: 0))
        }
        func precedes(_ a: TraceRelease, _ b: TraceRelease) -> Bool {
            let (x, y) = (key(a), key(b))
            return (x.0, x.1) != (y.0, y.1) ? (x.0, x.1) < (y.0, y.1) : x.2 < y.2
        }
        var records = records
        for i in records.indices {
            if let before = records[i].releasedBefore, before.count > 1 { records[i].releasedBefore = before.sorted(by: precedes) }
            if let after = records[i].releasedAfter, after.count > 1 { records[i].releasedAfter = after.sorted(by: precedes) }
        }
        var start = 0
        while start < records.count {
            var end = start + 1
            if records[start].op == "free" {
                while end < records.count, records[end].op == "free", records[end].thread == records[start].thread { end += 1 }
                if end - start > 1 {
                    let run = records[start..<end].sorted { precedes(TraceRelease(ctx: $0.ctx ?? 0, obj: $0.obj), TraceRelease(ctx: $1.ctx ?? 0, obj: $1.obj)) }
                    for (offset, var r) in run.enumerated() {
                        r.n = base + start + offset + 1
                        records[start + offset] = r
                    }
                }
            }
            start = end
        }
        return records
    }


    // MARK: ProbeSink

    /// An event of a thread of the simulation: the calls, call-outs, deliveries and frees the trace records.
    package func receive(_ event: ProbeEvent, on thread: ExecutionThread) {
        switch event {
        case .call(let call): record(call, on: thread)
        case .result(let result, let call): self.result(result, of: call, on: thread)
        case .callout: calloutBegan(on: thread)
        case .delivery(let kind, let context): delivered(kind, to: context, on: thread)
        case .deliveryEnded: deliveryEnded(on: thread)
        case .objectFreed(let object): freed(object, on: thread)
        case .contextFreed(let context): freed(context, on: thread)
        case .trace: break
        }
    }

    private func record(_ call: RecordedCall, on thread: ExecutionThread) {
        let counted = Self.counted(thread)
        lock.withLock { state in
            guard !state.closed else { return }
            var r = OperationRecord(op: "")
            Self.describe(call, into: &r, &state)
            Self.begin(r, on: thread, counted: counted, &state)
            flushIfDue(&state)
        }
    }

    /// A call or delivery starts on `thread`: its record (inside the thread's outermost call when one is in flight).
    private static func begin(_ record: OperationRecord, on thread: ExecutionThread, counted: [Int], _ state: inout State) {
        let id = ObjectIdentifier(thread)
        var r = record
        r.thread = state.threads[id]?.name ?? (thread.owner as? Participant)?.name
        let outer = state.threads[id]?.inFlight.first
        if let outer {
            r.within = state[outer].n
            r.at = state.threads[id]?.points
        }
        append(r, by: thread, &state)
        let index = state.base + state.records.count - 1
        state.threads[id]!.inFlight.append(index)
        state.threads[id]!.latest = index
        state.threads[id]!.countsAtStart[index] = counted
        if outer == nil { state.threads[id]!.points = 0 }
    }

    /// The calling thread's counts so far (charged and not yet charged).
    private static func counted(_ thread: ExecutionThread) -> [Int] {
        let settled = (thread.owner as? Participant)?.charged ?? []
        return (0..<(CostedOperation.count + StatementKind.count)).map { i in
            let pending = i < CostedOperation.count ? thread.counts[i] : thread.statementCounts[i - CostedOperation.count]
            return (i < settled.count ? settled[i] : 0) + pending
        }
    }

    /// A call or delivery of `thread` ends: its record gets what the thread counted meanwhile.
    private static func end(on thread: ExecutionThread, counted: [Int], _ state: inout State) -> Int? {
        let id = ObjectIdentifier(thread)
        resumeIfStopped(thread, &state)
        guard let index = state.threads[id]?.inFlight.popLast() else { return nil }
        if let start = state.threads[id]?.countsAtStart.removeValue(forKey: index) {
            let counts = CostedOperation.replayCounts(operation: { counted[$0] - start[$0] },
                                                      statements: { counted[CostedOperation.count + $0] - start[CostedOperation.count + $0] })
            if !counts.isEmpty { state[index].counts = counts }
        }
        if state.threads[id]?.inFlight.isEmpty == true { state.threads[id]!.latest = nil }
        return index
    }

    /// Appends a record made by `thread`: first the `resume` of `thread` itself if it had stopped, and every other
    /// thread inside a call is noted as stopped where it is (it gave the baton away at its last scheduling point).
    private static func append(_ record: OperationRecord, by thread: ExecutionThread?, _ state: inout State) {
        if let thread {
            let id = ObjectIdentifier(thread)
            if state.threads[id] == nil { state.threads[id] = ThreadState(name: (thread.owner as? Participant)?.name ?? "thread") }
            resumeIfStopped(thread, &state)
            stopOthers(than: id, &state)
        }
        append(record, &state)
    }

    private static func stopOthers(than id: ObjectIdentifier, _ state: inout State) {
        for (other, t) in state.threads where other != id && !t.inFlight.isEmpty && t.stopped == nil {
            state.threads[other]!.stopped = (t.points, t.stoppedInApp)
        }
    }

    private static func resumeIfStopped(_ thread: ExecutionThread, _ state: inout State) {
        let id = ObjectIdentifier(thread)
        guard let stopped = state.threads[id]?.stopped else { return }
        state.threads[id]!.stopped = nil
        var r = OperationRecord(op: "resume")
        r.thread = state.threads[id]!.name
        r.at = stopped.at
        if stopped.inApp { r.flag = true }
        stopOthers(than: id, &state)
        append(r, &state)
    }

    /// `thread` reaches a scheduling point of the simulation (it may give the baton away): inside the library's
    /// code it is counted, in app code (a call-out) it is not (a replay has no app code to stop in).
    func schedulingPoint(_ thread: ExecutionThread) {
        lock.withLock { state in
            guard !state.closed else { return }
            let id = ObjectIdentifier(thread)
            guard state.threads[id]?.inFlight.isEmpty == false else { return }
            Self.resumeIfStopped(thread, &state)
            let inLibrary = thread.recordingDepth > 0
            if inLibrary { state.threads[id]!.points += 1 }
            state.threads[id]!.stoppedInApp = !inLibrary
        }
    }

    private func calloutBegan(on thread: ExecutionThread) {
        lock.withLock { state in
            guard !state.closed else { return }
            let id = ObjectIdentifier(thread)
            guard state.threads[id]?.inFlight.isEmpty == false else { return }
            Self.resumeIfStopped(thread, &state)
            state.threads[id]!.points += 1
        }
    }

    private func result(_ result: RecordedResult, of call: RecordedCall, on thread: ExecutionThread) {
        let counted = Self.counted(thread)
        lock.withLock { state in
            guard !state.closed else { return }
            guard let index = Self.end(on: thread, counted: counted, &state) else { return }
            let ctx: Int? = {
                switch call {
                case .fetch(let c, _, _), .insert(let c, _), .objectWithID(let c, _, _), .save(let c), .batchInsert(let c, _), .batchUpdate(let c, _), .batchDelete(let c, _):
                    return Self.number(c, &state)
                case .readValue(let o, _, _): return o.managedObjectContext.map { Self.number($0, &state) }
                case .controllerObjects(let frc), .controllerFetch(let frc): return Self.number(frc.managedObjectContext, &state)
                default: return nil
                }
            }()
            var r = state[index]
            switch result {
            case .none:
                return
            case .failed(let message):
                r.error = Self.stableMessage(message, &state)
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
            state[index] = r
            flushIfDue(&state)
        }
    }

    private func delivered(_ kind: String, to context: ManagedObjectContext, on thread: ExecutionThread) {
        let counted = Self.counted(thread)
        lock.withLock { state in
            guard !state.closed else { return }
            var r = OperationRecord(op: "deliver")
            r.ctx = Self.number(context, &state)
            r.key = kind
            Self.begin(r, on: thread, counted: counted, &state)
        }
    }

    private func deliveryEnded(on thread: ExecutionThread) {
        let counted = Self.counted(thread)
        lock.withLock { state in
            guard !state.closed else { return }
            _ = Self.end(on: thread, counted: counted, &state)
            flushIfDue(&state)
        }
    }

    private func freed(_ object: ManagedObject, on thread: ExecutionThread) {
        lock.withLock { state in
            guard !state.closed else { return }
            guard let ctx = state.exposed.removeValue(forKey: ObjectIdentifier(object)) else { return }
            Self.release(TraceRelease(ctx: ctx, obj: Self.ref(object.objectID, &state)), on: thread, &state)
            flushIfDue(&state)
        }
    }

    private func freed(_ context: ManagedObjectContext, on thread: ExecutionThread) {
        lock.withLock { state in
            guard !state.closed else { return }
            guard let ctx = state.contexts.removeValue(forKey: ObjectIdentifier(context)) else { return }
            Self.release(TraceRelease(ctx: ctx, obj: nil), on: thread, &state)
        }
    }

    /// The app let an object (or a context) go. Between calls: a `free` record. Inside a call of its thread (the
    /// library held the last reference): the app had let it go before that call, or, when the last record the
    /// thread started inside it has returned, after that one.
    private static func release(_ release: TraceRelease, on thread: ExecutionThread, _ state: inout State) {
        let id = ObjectIdentifier(thread)
        if let t = state.threads[id], !t.inFlight.isEmpty, let latest = t.latest {
            if t.inFlight.contains(latest) {
                state[latest].releasedBefore = (state[latest].releasedBefore ?? []) + [release]
            } else {
                state[latest].releasedAfter = (state[latest].releasedAfter ?? []) + [release]
            }
            return
        }
        var r = OperationRecord(op: release.obj == nil ? "freeContext" : "free")
        r.ctx = release.ctx
        r.obj = release.obj
        r.thread = state.threads[id]?.name ?? (thread.owner as? Participant)?.name
        append(r, by: thread, &state)
    }

    /// An error's text with each store identifier in an object's URI (`x-coredata://<UUID>/Record/p8`) replaced by
    /// `store1`, `store2`… in the order the trace meets them: a store's identifier is a fresh UUID on each run,
    /// and the same scenario and seed must write the same trace.
    fileprivate static func stableMessage(_ message: String, _ state: inout State) -> String {
        let scheme = "x-coredata://"
        var out = ""
        var rest = message[...]
        while let found = rest.range(of: scheme) {
            out += rest[..<found.upperBound]
            rest = rest[found.upperBound...]
            let end = rest.firstIndex(of: "/") ?? rest.endIndex
            let identifier = String(rest[..<end])
            let n = state.stores[identifier] ?? (state.stores.count + 1)
            state.stores[identifier] = n
            out += "store\(n)"
            rest = rest[end...]
        }
        return out + rest
    }

    // MARK: Describing calls

    private static func append(_ record: OperationRecord, _ state: inout State) {
        var record = record
        record.n = state.base + state.records.count + 1
        state.records.append(record)
        state.mostHeld = max(state.mostHeld, state.records.count)
    }

    /// Hands the settled records to the sink once there are `flushEvery` of them (after each top-level record).
    private func flushIfDue(_ state: inout State) {
        guard let sink, state.records.count >= flushEvery else { return }
        var end = state.base + state.records.count
        for t in state.threads.values {
            if let first = t.inFlight.first { end = min(end, first) }
            if let latest = t.latest { end = min(end, latest) }
        }
        // Not inside a run of frees that may go on (``settled(_:base:)`` orders a run as a whole).
        let total = state.base + state.records.count
        while end > state.base, state[end - 1].op == "free",
              end == total || (state[end].op == "free" && state[end].thread == state[end - 1].thread) {
            end -= 1
        }
        let count = end - state.base
        guard count >= flushEvery else { return }
        let settled = Self.settled(Array(state.records[..<count]), base: state.base)
        state.records.removeFirst(count)
        state.base = end
        sink(settled)
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
        case .coordinatorAdded(let c, let options, let model, let url, let configuration):
            r.op = "coordinator"
            r.coord = number(c, &state)
            if !state.modelVersions.contains(where: { $0 === model }) { state.modelVersions.append(model) }
            r.count = state.modelVersions.firstIndex { $0 === model }
            var settings = ["name": c.name, "store": url?.lastPathComponent ?? "memory"]
            if options.persistentHistoryTracking { settings["history"] = "true" }
            if options.remoteChangeNotifications { settings["remoteChange"] = "true" }
            if options.readOnly { settings["readOnly"] = "true" }
            if options.migrateAutomatically { settings["migrate"] = "true" }
            if options.inferMappingModel { settings["inferMapping"] = "true" }
            if let configuration { settings["configuration"] = configuration }
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
        case .fetchHistory(let c, let after, let filtered):
            r.op = "fetchHistory"
            r.coord = number(c, &state)
            r.count = after.map(Int.init)
            if filtered { r.flag = true }
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

extension CostedOperation {
    /// The counts an operation trace and its replay compare (Docs/calibration.md), by name: every costed operation
    /// but `blockRun` (a queue's dispatch, not a Core Data call), and SQL statements by kind as `sqlStatement[kind]`;
    /// zeros left out. `operation` and `statements` give a count by raw value.
    static func replayCounts(operation: (Int) -> Int, statements: (Int) -> Int) -> [String: Int] {
        var counts: [String: Int] = [:]
        for op in allCases where op != .blockRun {
            let n = operation(op.rawValue)
            if n != 0 { counts[op.name] = n }
        }
        for kind in StatementKind.allCases {
            let n = statements(kind.rawValue)
            if n != 0 { counts["sqlStatement[\(kind.name)]"] = n }
        }
        return counts
    }
}
