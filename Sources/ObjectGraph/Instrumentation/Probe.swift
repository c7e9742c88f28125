import Foundation
import Synchronization

/// The one way the library reports what it did: the operations that cost time (counted in the calling thread's
/// buffer, charged in batches by a simulation), the context counters (always on), and every event an observer
/// may want (``ProbeEvent``), told to the calling thread's ``ProbeSink`` when one is installed.
///
/// With no sink an observed event costs one relaxed atomic load: its payload is an autoclosure, never built, and
/// nothing is retained. A costed operation costs one thread-local load and an add; a counted event its counter's add
/// (a coordinator's under the coordinator's counter lock) and its cost, and no sink hears it.
package enum Probe {
    /// Running simulations whose threads carry a sink (a relaxed load: the only cost of an event while nothing
    /// listens).
    static let sinks = Atomic<Int>(0)
    /// A simulation whose threads carry a sink starts listening.
    package static func started() { sinks.add(1, ordering: .relaxed) }
    /// It stops listening.
    package static func stopped() { sinks.subtract(1, ordering: .relaxed) }

    /// The calling thread, when it carries a sink.
    @inline(__always) package static var listening: ExecutionThread? {
        guard sinks.load(ordering: .relaxed) > 0, let thread = ExecutionThread.current, thread.sink != nil else { return nil }
        return thread
    }

    /// Whether a call the calling thread makes now is recorded with its result (at the app's top level, for a sink
    /// that records calls): for work done only to describe a result.
    @inline(__always) package static var recordsCall: Bool {
        guard let thread = listening, thread.recordingDepth == 0 else { return false }
        return thread.sink?.recordsCalls ?? false
    }

    // MARK: Costs and counters

    /// Counts `n` operations of `op` on the calling thread (only on a thread of a simulation; free otherwise).
    @inline(__always)
    package static func count(_ op: CostedOperation, _ n: Int = 1) {
        guard n != 0, let thread = ExecutionThread.current else { return }
        thread.counts[op.rawValue] += n
    }

    /// Counts one SQL statement run to completion: a ``CostedOperation/sqlStatement`` and its kind.
    @inline(__always)
    package static func countStatement(_ kind: StatementKind) {
        guard let thread = ExecutionThread.current else { return }
        thread.counts[CostedOperation.sqlStatement.rawValue] += 1
        thread.statementCounts[kind.rawValue] += 1
    }

    /// Counts `event` in its context's or coordinator's counters and its operation's cost.
    @inline(__always)
    package static func count(_ event: CountedEvent) {
        event.apply()
    }

    /// ``CountedEvent/rowCacheHit(_:)`` for a coordinator the caller holds (no reference taken for an event).
    @inline(__always)
    static func countRowCacheHit(_ coordinator: PersistentStoreCoordinator) {
        coordinator.count { $0.rowCacheHits += 1 }
        count(.faultFulfilledFromCache)
    }

    /// Posts a notification (`body`) as a call-out to app code, counted as `notice` says.
    @inline(__always)
    package static func posting<T>(_ notice: CountedEvent.Notice, _ body: () throws -> T) rethrows -> T {
        count(.posted(notice))
        return try callout(body)
    }

    // MARK: Calls

    /// Runs a public call's body: told to a sink as the app's own when made at the top level of the app's code,
    /// with what it returned; the debug trace line of the call (``RecordedCall/traceLine``) at any depth.
    @inline(__always)
    package static func call<T>(_ call: @autoclosure () -> RecordedCall, result: (T) -> RecordedResult = { _ in .none }, _ body: () throws -> T) rethrows -> T {
        guard let thread = listening else { return try body() }
        return try callSlow(thread, call(), result: result, body)
    }

    /// A public call that only sets something (a property's new value): the call, and nothing to run.
    @inline(__always)
    package static func note(_ call: @autoclosure () -> RecordedCall) {
        guard let thread = listening else { return }
        callSlow(thread, call(), result: { .none }, {})
    }

    static func callSlow<T>(_ thread: ExecutionThread, _ call: RecordedCall, result: (T) -> RecordedResult, _ body: () throws -> T) rethrows -> T {
        let depth = thread.recordingDepth
        thread.recordingDepth = depth + 1
        defer { thread.recordingDepth = depth }
        guard let sink = thread.sink else { return try body() }
        if depth == 0 { sink.receive(.call(call), on: thread) }
        if let line = call.traceLine { sink.receive(.trace(line.call, detail: line.detail), on: thread) }
        guard depth == 0 else { return try body() }
        do {
            let value = try body()
            sink.receive(.result(result(value), of: call), on: thread)
            return value
        } catch {
            sink.receive(.result(.failed(String(describing: error)), of: call), on: thread)
            throw error
        }
    }

    /// Runs app code the library calls out to (a notification's observers, a controller's delegate): the calls it
    /// makes are the app's, recorded at their top level.
    @inline(__always)
    package static func callout<T>(_ body: () throws -> T) rethrows -> T {
        guard let thread = listening else { return try body() }
        thread.sink?.receive(.callout, on: thread)
        let depth = thread.recordingDepth
        thread.recordingDepth = 0
        defer { thread.recordingDepth = depth }
        return try body()
    }

    /// Runs the library's own work outside any app call (its observers, the blocks it queued by itself): the
    /// public calls it makes are not the app's.
    @inline(__always)
    package static func libraryWork<T>(_ body: () throws -> T) rethrows -> T {
        guard let thread = listening else { return try body() }
        thread.recordingDepth += 1
        defer { thread.recordingDepth -= 1 }
        return try body()
    }

    /// A block the library queued by itself runs now on `context`'s queue.
    @inline(__always)
    package static func delivering(_ kind: String, to context: ManagedObjectContext?, _ body: () -> Void) {
        guard let thread = listening else { return body() }
        let told = context != nil && thread.recordingDepth == 0
        if let context, told { thread.sink?.receive(.delivery(kind, to: context), on: thread) }
        thread.recordingDepth += 1
        body()
        thread.recordingDepth -= 1
        if told { thread.sink?.receive(.deliveryEnded, on: thread) }
    }

    /// An object instance went (its last reference was dropped).
    @inline(__always)
    static func freed(_ object: ManagedObject) {
        guard let thread = listening else { return }
        thread.sink?.receive(.objectFreed(object), on: thread)
    }

    /// A context went.
    @inline(__always)
    static func freed(_ context: ManagedObjectContext) {
        guard let thread = listening else { return }
        thread.sink?.receive(.contextFreed(context), on: thread)
    }

    /// A line of the debug trace that no public call carries (a merge the library runs by itself as well).
    @inline(__always)
    package static func trace(_ call: String, _ detail: @autoclosure () -> String) {
        guard let thread = listening else { return }
        thread.sink?.receive(.trace(call, detail: detail()), on: thread)
    }
}

/// What the library tells a ``ProbeSink``, on the thread that did it.
package enum ProbeEvent {
    /// A call at the top level of the app's code, before it runs.
    case call(RecordedCall)
    /// What that call returned (or the error it threw).
    case result(RecordedResult, of: RecordedCall)
    /// The library calls out to app code (a notification's observers, a controller's delegate): the calls that
    /// code makes are told as made inside the call that called out.
    case callout
    /// The library runs now, on `context`'s queue, work it had queued by itself (`automaticMerge`,
    /// `permanentIDs`); ``deliveryEnded`` follows when it is done.
    case delivery(String, to: ManagedObjectContext)
    /// The work of the last ``delivery(_:to:)`` on the thread is done.
    case deliveryEnded
    /// An object instance went (its last reference was dropped).
    case objectFreed(ManagedObject)
    /// A context went.
    case contextFreed(ManagedObjectContext)
    /// A line of the debug trace: a Core Data call (a save, a fetch, a merge) at any depth, and what it works on.
    case trace(String, detail: String)
}

/// Told of the events of the threads it is installed on (``ExecutionThread/sink``): an operation trace's
/// recorder, a simulation's debug trace, a replay's driver.
package protocol ProbeSink: AnyObject, Sendable {
    func receive(_ event: ProbeEvent, on thread: ExecutionThread)
    /// Whether the sink records the app's calls with their results (an operation trace), not only trace lines.
    var recordsCalls: Bool { get }
}

extension ProbeSink {
    package var recordsCalls: Bool { true }
}

/// An event the context and coordinator counters count (``ContextCounters``, ``CoordinatorCounters``), with the
/// costed operation it is, if any.
package enum CountedEvent {
    /// A notification a context or coordinator posts.
    package enum Notice {
        /// Objects-did-change: counted in the context's counters and as a ``CostedOperation/notificationPosted``.
        case objectsDidChange(ManagedObjectContext)
        /// Will-save and did-save: a ``CostedOperation/notificationPosted``.
        case willSave, didSave
        /// Did-save-object-IDs, did-merge-object-IDs, the remote-change notification: not priced apart (the
        /// did-save or merge they follow is).
        case didSaveObjectIDs, didMergeObjectIDs, storeRemoteChange
    }

    /// An object entered `context`'s registry (a fault or an inserted object).
    case objectRegistered(ManagedObjectContext)
    /// A fault of `context` was fired.
    case faultFired(ManagedObjectContext)
    /// A to-many relationship fault of `context` was fired.
    case relationshipFaultFired(ManagedObjectContext)
    /// `context` saved (to its store or its parent).
    case saved(ManagedObjectContext)
    /// `context` merged a did-save.
    case merged(ManagedObjectContext)
    /// A merge into `context` refreshed these registered objects.
    case refreshedByMerge(ManagedObjectContext, Int)
    /// A conflict of `context`'s save was handed to its merge policy.
    case conflictResolved(ManagedObjectContext)
    /// A notification was posted.
    case posted(Notice)
    /// `coordinator` read rows for a fetch or a batch of faults (`idsOnly`: their IDs only); a batch of faults also
    /// counts the IDs its row cache missed, under the same lock.
    case rowsFetched(PersistentStoreCoordinator, Int, idsOnly: Bool, cacheMisses: Int = 0)
    /// `coordinator`'s row cache had a fault's row (or knew it deleted).
    case rowCacheHit(PersistentStoreCoordinator)
    /// `coordinator` read a fault's row from its store (`inMemory`: an in-memory store's, copied as from a cache).
    case faultRowRead(PersistentStoreCoordinator, inMemory: Bool)
    /// `coordinator`'s row cache lacked these rows (or a pinned context read past it).
    case rowCacheMisses(PersistentStoreCoordinator, Int)
    /// A save through `coordinator` found conflicts of one kind.
    case conflictsFound(PersistentStoreCoordinator, ConflictLayer, Int)

    /// Where a save's conflicts were found (``CoordinatorCounters``).
    package enum ConflictLayer {
        /// Optimistic locking against the row cache (layer 1).
        case cache
        /// Optimistic locking against the database (layer 2).
        case database
        /// Uniqueness constraints against the database.
        case constraint
    }

    @inline(__always)
    func apply() {
        switch self {
        case .objectRegistered(let context):
            context.storedCounters.objectsRegistered += 1
            Probe.count(.objectRegistered)
        case .faultFired(let context):
            context.storedCounters.faultsFired += 1
        case .relationshipFaultFired(let context):
            context.counters.relationshipFaultsFired += 1
        case .saved(let context):
            context.counters.saves += 1
            Probe.count(.contextSave)
        case .merged(let context):
            context.counters.merges += 1
        case .refreshedByMerge(let context, let n):
            context.counters.mergeObjectsRefreshed += n
            Probe.count(.objectRefreshed, n)
        case .conflictResolved(let context):
            context.counters.conflictsResolved += 1
        case .posted(.objectsDidChange(let context)):
            context.counters.objectsDidChangeNotifications += 1
            Probe.count(.notificationPosted)
        case .posted(.willSave), .posted(.didSave):
            Probe.count(.notificationPosted)
        case .posted(.didSaveObjectIDs), .posted(.didMergeObjectIDs), .posted(.storeRemoteChange):
            break
        case .rowsFetched(let coordinator, let n, let idsOnly, let misses):
            coordinator.count { $0.rowsRead += n; $0.rowCacheMisses += misses }
            Probe.count(idsOnly ? .idRowFetched : .rowFetched, n)
        case .rowCacheHit(let coordinator):
            Probe.countRowCacheHit(coordinator)
        case .faultRowRead(let coordinator, let inMemory):
            coordinator.count { $0.rowsRead += 1 }
            Probe.count(inMemory ? .faultFulfilledFromCache : .faultFulfilledFromStore)
        case .rowCacheMisses(let coordinator, let n):
            coordinator.count { $0.rowCacheMisses += n }
        case .conflictsFound(let coordinator, .cache, let n):
            coordinator.count { $0.cacheConflicts += n }
        case .conflictsFound(let coordinator, .database, let n):
            coordinator.count { $0.databaseConflicts += n }
        case .conflictsFound(let coordinator, .constraint, let n):
            coordinator.count { $0.constraintConflicts += n }
        }
    }
}

extension RecordedCall {
    /// The debug trace's line of this call, when it has one (Docs/simulation.md "Traces").
    var traceLine: (call: String, detail: String)? {
        switch self {
        case .save(let context):
            ("save", "\(context.name ?? "context"): \(context.insertedSet.count) inserted, \(context.updatedSet.count) updated, \(context.deletedSet.count) deleted")
        case .fetch(let context, let request, result: "objects"):
            ("fetch", "\(context.name ?? "context"): \(request.entityName)\(request.fetchLimit > 0 ? " limit \(request.fetchLimit)" : "")")
        case .contextCall(let context, "reset"):
            ("reset", context.name ?? "context")
        default:
            nil
        }
    }
}
