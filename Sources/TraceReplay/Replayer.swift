import Foundation

/// A value to set, with the trace's objects resolved to the backend's.
public enum ReplayValue<Object> {
    case plain(TraceValue)
    case object(Object?)
    case objects([Object])
}

/// What a fetch gave back.
public enum FetchOutcome<Object, ObjectID> {
    case objects([Object])
    case ids([ObjectID])
    case count(Int)
}

/// The small protocol a replayer needs from a Core Data implementation (Docs/calibration.md "The replayer"):
/// contexts, saves, fetches, merges, a fetched results controller, batch requests. ``Replayer`` drives it record
/// by record; every call is made on the context's queue (`perform`, which waits).
public protocol ReplayBackend: AnyObject {
    associatedtype Coordinator
    associatedtype Context
    associatedtype Object
    associatedtype ObjectID: Hashable
    associatedtype Controller

    /// Opens the trace's store with the model version `model` (an index into the header's models).
    func openCoordinator(model: Int, settings: [String: String]) throws -> Coordinator
    /// Adds another store to a coordinator the trace opened: a store of a model configuration (`settings`'s
    /// `configuration`), beside the ones added before it.
    func addStore(to coordinator: Coordinator, settings: [String: String]) throws
    func setConnectionPool(_ size: Int, of coordinator: Coordinator)
    func makeContext(mainQueue: Bool) -> Context
    func setCoordinator(_ coordinator: Coordinator?, of context: Context)
    func setParent(_ parent: Context?, of context: Context)
    /// mergePolicy, automaticallyMergesChangesFromParent, stalenessInterval, name, transactionAuthor.
    func set(_ key: String, to value: String, on context: Context) throws
    /// Runs `body` on the context's queue and waits for it.
    func perform<T>(_ context: Context, _ body: () throws -> T) throws -> T

    func objectID(of object: Object) -> ObjectID
    /// The ID of a saved row when the backend can name it from the trace's key (ours can; Core Data cannot).
    func objectID(entity: String, key: Int64) -> ObjectID?
    func primaryKey(of id: ObjectID) -> Int64?
    func registeredObject(_ id: ObjectID, in context: Context) -> Object?
    func object(_ id: ObjectID, in context: Context) -> Object
    func existingObject(_ id: ObjectID, in context: Context) throws -> Object

    func insert(_ entity: String, into context: Context) throws -> Object
    func delete(_ object: Object, in context: Context)
    func setValue(_ value: ReplayValue<Object>, forKey key: String, of object: Object) throws
    /// value, checked, primitive, materialize, changedValues: returns the objects a relationship read handed out.
    func read(_ how: String, key: String?, of object: Object) throws -> [Object]
    func fetch(_ request: TraceFetchRequest, in context: Context) throws -> FetchOutcome<Object, ObjectID>
    /// Saves; returns each inserted object's ID before and after.
    func save(_ context: Context) throws -> [(ObjectID, ObjectID)]
    /// reset, rollback, refreshAllObjects, processPendingChanges.
    func contextCall(_ op: String, on context: Context)
    func refresh(_ object: Object, mergeChanges: Bool, in context: Context)
    func merge(inserted: [ObjectID], updated: [ObjectID], deleted: [ObjectID], into context: Context)
    func mergeRemote(inserted: [ObjectID], updated: [ObjectID], deleted: [ObjectID], into contexts: [Context])
    func batch(_ request: TraceBatchRequest, objectIDs: [ObjectID]?, in context: Context) throws -> [ObjectID]

    func makeController(_ request: TraceFetchRequest, context: Context, sectionKey: String?, settings: [String: String]?) throws -> Controller
    func setDelegate(_ on: Bool, of controller: Controller)
    func performFetch(_ controller: Controller) throws
    func fetchedObjects(_ controller: Controller) -> [Object]

    func historyToken(_ coordinator: Coordinator) throws -> Int
    /// The numbers of the transactions after `after` (every one when nil).
    func fetchHistory(_ coordinator: Coordinator, after: Int?) throws -> [Int]
    /// Ambar's row-cache hand-over between two coordinators; Core Data has no such call (a backend without it does nothing).
    func adoptSnapshots(_ coordinator: Coordinator, updated: [ObjectID], deleted: [ObjectID], from other: Coordinator)
    /// Runs the work the framework queued by itself on `context`'s queue (`automaticMerge`, `permanentIDs`).
    func deliver(_ kind: String, to context: Context) throws

    /// The counts so far, by name (Docs/calibration.md "What the replay must reproduce").
    func counters() -> [String: Int]
}

/// One replayed record's counts.
public struct ReplayStep: Sendable, Equatable {
    public var n: Int
    public var op: String
    public var ctx: Int?
    public var counts: [String: Int]
    public init(n: Int, op: String, ctx: Int?, counts: [String: Int]) { (self.n, self.op, self.ctx, self.counts) = (n, op, ctx, counts) }
}

/// What a replay did: the counts at its end, each record's counts, and where it went apart from the trace.
public struct ReplayOutcome: Sendable {
    public var counts: [String: Int] = [:]
    public var steps: [ReplayStep] = []
    /// Records whose result differed from the trace's (a fetch returning other rows, a save other keys).
    public var divergences: [String] = []
    /// The trace's own counts (its `end` record).
    public var expected: [String: Int]?
}

/// Replays an operation trace through a backend. ``replay(_:)`` makes the calls one after the other in the
/// trace's order (a `resume` record is skipped; a call made inside another runs after it): the order a backend
/// on real threads (Core Data) can follow. A backend that can stop a call where the run's thread stopped drives
/// ``apply(_:)`` itself, record by record, in the run's exact interleaving (the workbench's ObjectGraph replay).
public final class Replayer<Backend: ReplayBackend> {
    public let backend: Backend
    private var coordinators: [Int: Backend.Coordinator] = [:]
    private var contexts: [Int: Backend.Context] = [:]
    private var controllers: [Int: Backend.Controller] = [:]
    private var ids: [ObjectRef: Backend.ObjectID] = [:]
    private struct Handle: Hashable { var ctx: Int; var ref: ObjectRef }
    private var handles: [Handle: Backend.Object] = [:]
    /// Whether each step's counts are kept (the diff needs them; the acceptance test does not).
    public var keepsSteps = true
    /// What the replay did so far.
    public var outcome = ReplayOutcome()

    public init(backend: Backend) { self.backend = backend }

    /// Replays the records in order and returns the outcome.
    public func replay(_ records: [OperationRecord]) throws -> ReplayOutcome {
        var before = backend.counters()
        for record in records {
            if record.op == "end" {
                outcome.expected = record.counts
                continue
            }
            try apply(record)
            if keepsSteps {
                let after = backend.counters()
                var delta: [String: Int] = [:]
                for (k, v) in after where v != before[k, default: 0] { delta[k] = v - before[k, default: 0] }
                if !delta.isEmpty { outcome.steps.append(ReplayStep(n: record.n, op: record.op, ctx: record.ctx, counts: delta)) }
                before = after
            }
        }
        outcome.counts = backend.counters()
        return outcome
    }

    /// Makes one record's call (dropping first what the app had let go before it, and after it what the app let go
    /// once it returned). A `resume` does nothing here: the driver that follows the run's interleaving handles it.
    public func apply(_ record: OperationRecord) throws {
        do {
            release(record.releasedBefore)
            try step(record)
            release(record.releasedAfter)
        } catch let error as ReplayError {
            let earlier = outcome.divergences.isEmpty ? "" : "; after: " + outcome.divergences.prefix(3).joined(separator: "; ")
            throw ReplayError("record \(record.n) (\(record.op)): \(error.message)\(earlier)")
        }
    }

    private func release(_ items: [TraceRelease]?) {
        for item in items ?? [] {
            if let ref = item.obj {
                handles[Handle(ctx: item.ctx, ref: ref)] = nil
            } else {
                contexts[item.ctx] = nil
                handles = handles.filter { $0.key.ctx != item.ctx }
            }
        }
    }

    /// The transaction numbers a `fetchHistory` record lists (`s:3,4`).
    static func numbers(_ value: TraceValue?) -> [Int] {
        guard case .string(let list)? = value else { return [] }
        return list.split(separator: ",").compactMap { Int($0) }
    }

    private func context(_ n: Int?) throws -> Backend.Context {
        guard let n, let c = contexts[n] else { throw ReplayError("no context \(n.map(String.init) ?? "named")") }
        return c
    }

    private func coordinator(_ n: Int?) throws -> Backend.Coordinator {
        guard let n, let c = coordinators[n] else { throw ReplayError("no coordinator \(n.map(String.init) ?? "named")") }
        return c
    }

    private func id(_ ref: ObjectRef) throws -> Backend.ObjectID {
        if let id = ids[ref] { return id }
        if let key = ref.key, let id = backend.objectID(entity: ref.entity, key: key) {
            ids[ref] = id
            return id
        }
        throw ReplayError("object \(ref) was never met")
    }

    /// The object the app held: the instance handed out in that context, else the registered one.
    private func object(_ ref: ObjectRef?, _ ctx: Int?) throws -> Backend.Object {
        guard let ref, let ctx else { throw ReplayError("no object named") }
        if let o = handles[Handle(ctx: ctx, ref: ref)] { return o }
        let c = try context(ctx)
        let id = try self.id(ref)
        if let o = backend.registeredObject(id, in: c) { return o }
        throw ReplayError("object \(ref) is not registered in context \(ctx)")
    }

    private func expose(_ objects: [Backend.Object], refs: [ObjectRef]?, ctx: Int, _ n: Int) {
        guard let refs else { return }
        if refs.count != objects.count { outcome.divergences.append("record \(n): \(objects.count) objects, the trace has \(refs.count)") }
        for (o, ref) in zip(objects, refs) {
            handles[Handle(ctx: ctx, ref: ref)] = o
            let id = backend.objectID(of: o)
            if ids[ref] == nil { ids[ref] = id }
            if let key = ref.key, let mine = backend.primaryKey(of: id), mine != key {
                outcome.divergences.append("record \(n): \(ref) is row \(mine) here")
            }
        }
    }

    private func resolve(_ value: TraceValue, in ctx: Int) throws -> ReplayValue<Backend.Object> {
        switch value {
        case .object(let ref): return .object(try object(ref, ctx))
        case .objects(let refs): return .objects(try refs.map { try object($0, ctx) })
        default: return .plain(value)
        }
    }

    private func step(_ r: OperationRecord) throws {
        switch r.op {
        case "coordinator":
            // A second store added to a coordinator records the coordinator's number again.
            if let opened = coordinators[r.coord ?? 0] {
                try backend.addStore(to: opened, settings: r.settings ?? [:])
            } else {
                coordinators[r.coord ?? 0] = try backend.openCoordinator(model: r.count ?? 0, settings: r.settings ?? [:])
            }
        case "connectionPool":
            backend.setConnectionPool(r.count ?? 1, of: try coordinator(r.coord))
        case "context":
            contexts[r.ctx ?? 0] = backend.makeContext(mainQueue: r.settings?["concurrency"] == "main")
        case "setCoordinator":
            backend.setCoordinator(try r.coord.map { try coordinator($0) }, of: try context(r.ctx))
        case "setParent":
            backend.setParent(try r.parent.map { try context($0) }, of: try context(r.ctx))
        case "set":
            guard case .string(let value)? = r.value, let key = r.key else { throw ReplayError("a setting needs a key and a string value") }
            try backend.set(key, to: value, on: try context(r.ctx))
        case "freeContext", "free":
            if let ctx = r.ctx { release([TraceRelease(ctx: ctx, obj: r.obj)]) }
        case "resume":
            break
        case "deliver":
            let c = try context(r.ctx)
            try backend.deliver(r.key ?? "", to: c)
        case "fetchHistory":
            let found = try backend.fetchHistory(try coordinator(r.coord), after: r.count)
            // The app filtered what it got (`flag`): the trace has the transactions it kept.
            let kept: [Int]
            if r.flag == true {
                let wanted = Set(Self.numbers(r.value))
                kept = found.filter { wanted.contains($0) }
            } else {
                kept = found
            }
            if let expected = r.outCount, expected != kept.count { outcome.divergences.append("record \(r.n): history has \(kept.count) transactions, the trace \(expected)") }
        case "historyToken":
            _ = try backend.historyToken(try coordinator(r.coord))
        case "adoptSnapshots":
            backend.adoptSnapshots(try coordinator(r.coord), updated: try (r.updated ?? []).map(id), deleted: try (r.deleted ?? []).map(id), from: try coordinator(r.parent))
        case "mergeRemote":
            let cs = try (r.contexts ?? []).map { try context($0) }
            backend.mergeRemote(inserted: try (r.inserted ?? []).map(id), updated: try (r.updated ?? []).map(id), deleted: try (r.deleted ?? []).map(id), into: cs)
        default:
            let ctx = r.ctx
            let c = try context(ctx)
            try backend.perform(c) { try contextStep(r, c, ctx ?? 0) }
        }
    }

    private func contextStep(_ r: OperationRecord, _ c: Backend.Context, _ ctx: Int) throws {
        let failed = r.error != nil
        func attempt(_ body: () throws -> Void) throws {
            do {
                try body()
                if failed { outcome.divergences.append("record \(r.n) (\(r.op)): succeeded here, failed in the trace: \(r.error!)") }
            } catch {
                if !failed { outcome.divergences.append("record \(r.n) (\(r.op)): failed here: \(error)") }
            }
        }
        switch r.op {
        case "insert":
            try attempt { expose([try backend.insert(r.entity ?? "", into: c)], refs: r.out, ctx: ctx, r.n) }
        case "delete":
            backend.delete(try object(r.obj, ctx), in: c)
        case "setValue":
            let o = try object(r.obj, ctx)
            let v = try resolve(r.value ?? .null, in: ctx)
            try attempt { try backend.setValue(v, forKey: r.key ?? "", of: o) }
        case "value", "checked", "primitive", "materialize", "changedValues":
            let o = try object(r.obj, ctx)
            try attempt { expose(try backend.read(r.op, key: r.key, of: o), refs: r.out, ctx: ctx, r.n) }
        case "fetch":
            guard let request = r.request else { throw ReplayError("a fetch needs its request") }
            try attempt {
                switch try backend.fetch(request, in: c) {
                case .objects(let objects): expose(objects, refs: r.out, ctx: ctx, r.n)
                case .ids(let found):
                    if let refs = r.out {
                        if refs.count != found.count { outcome.divergences.append("record \(r.n): \(found.count) IDs, the trace has \(refs.count)") }
                        for (ref, id) in zip(refs, found) where ids[ref] == nil { ids[ref] = id }
                    }
                case .count(let n):
                    if let expected = r.outCount, expected != n { outcome.divergences.append("record \(r.n): count \(n), the trace \(expected)") }
                }
            }
        case "save":
            try attempt {
                let pairs = try backend.save(c)
                guard let temps = r.savedInserts, let rows = r.out else { return }
                let after = Dictionary(pairs, uniquingKeysWith: { a, _ in a })
                for (temp, row) in zip(temps, rows) {
                    guard let old = ids[temp], let new = after[old] else {
                        outcome.divergences.append("record \(r.n): \(temp) was not saved here")
                        continue
                    }
                    ids[row] = new
                    if let key = row.key, let mine = backend.primaryKey(of: new), mine != key {
                        outcome.divergences.append("record \(r.n): \(temp) became row \(mine) here, \(key) in the trace")
                    }
                    guard row.key != nil else { continue }
                    for (handle, o) in handles where handle.ref == temp {
                        handles[handle] = nil
                        handles[Handle(ctx: handle.ctx, ref: row)] = o
                    }
                }
            }
        case "reset", "rollback", "refreshAllObjects", "processPendingChanges":
            backend.contextCall(r.op, on: c)
        case "refresh":
            backend.refresh(try object(r.obj, ctx), mergeChanges: r.flag ?? true, in: c)
        case "objectWithID", "existingObject", "registeredObject":
            guard let ref = r.obj else { throw ReplayError("no object named") }
            let id = try self.id(ref)
            try attempt {
                let found: Backend.Object?
                switch r.op {
                case "objectWithID": found = backend.object(id, in: c)
                case "existingObject": found = try backend.existingObject(id, in: c)
                default: found = backend.registeredObject(id, in: c)
                }
                if let found { expose([found], refs: r.out, ctx: ctx, r.n) } else if r.out != nil {
                    outcome.divergences.append("record \(r.n): \(ref) is not registered here")
                }
            }
        case "merge":
            backend.merge(inserted: try (r.inserted ?? []).map(id), updated: try (r.updated ?? []).map(id), deleted: try (r.deleted ?? []).map(id), into: c)
        case "batch":
            guard let batch = r.batch else { throw ReplayError("a batch record needs its request") }
            let given = try r.objs.map { try $0.map(id) }
            try attempt {
                let found = try backend.batch(batch, objectIDs: given, in: c)
                for (ref, id) in zip(r.out ?? [], found) where ids[ref] == nil { ids[ref] = id }
                if let refs = r.out, refs.count != found.count { outcome.divergences.append("record \(r.n): \(found.count) rows, the trace has \(refs.count)") }
            }
        case "controller":
            guard let request = r.request, let n = r.frc else { throw ReplayError("a controller needs its number and request") }
            controllers[n] = try backend.makeController(request, context: c, sectionKey: r.key, settings: r.settings)
        case "controllerDelegate", "controllerFetch", "controllerObjects":
            guard let n = r.frc, let frc = controllers[n] else { throw ReplayError("no controller \(r.frc.map(String.init) ?? "named")") }
            switch r.op {
            case "controllerDelegate": backend.setDelegate(r.flag ?? false, of: frc)
            case "controllerFetch": try attempt { try backend.performFetch(frc) }
            default: expose(backend.fetchedObjects(frc), refs: r.out, ctx: ctx, r.n)
            }
        default:
            throw ReplayError("unknown operation \(r.op)")
        }
    }
}
