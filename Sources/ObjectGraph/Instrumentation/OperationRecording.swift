import Foundation
import Synchronization

/// The recording hook of the operation trace (Docs/calibration.md): each Core Data call an app makes at the top
/// level of its code (not the calls the library makes inside one) is told to the calling thread's
/// ``OperationRecorder``, with what it returned; so are the object instances the app let go, and the deliveries
/// the library makes by itself (an automatic merge, a descendant re-keyed after its root's save).
///
/// Off unless a simulation installs a recorder on its threads: then every hooked call costs one relaxed atomic
/// load and nothing else.
package enum RecordedCall {
    case coordinatorAdded(PersistentStoreCoordinator, options: StoreOptions, model: ManagedObjectModel, url: URL?)
    case contextCreated(ManagedObjectContext)
    case setCoordinator(ManagedObjectContext, PersistentStoreCoordinator?)
    case setParent(ManagedObjectContext, ManagedObjectContext?)
    case setting(ManagedObjectContext, String, String)
    case insert(ManagedObjectContext, entity: String)
    case delete(ManagedObject)
    case setValue(ManagedObject, key: String, value: Any?)
    case readValue(ManagedObject, key: String, how: String)
    case fetch(ManagedObjectContext, FetchRequest, result: String)
    case save(ManagedObjectContext)
    case contextCall(ManagedObjectContext, String)
    case refresh(ManagedObject, mergeChanges: Bool)
    case objectWithID(ManagedObjectContext, ManagedObjectID, how: String)
    case merge(ManagedObjectContext, ContextObjectIDChanges)
    case mergeRemote(ContextObjectIDChanges, [ManagedObjectContext])
    case batchInsert(ManagedObjectContext, BatchInsertRequest)
    case batchUpdate(ManagedObjectContext, BatchUpdateRequest)
    case batchDelete(ManagedObjectContext, BatchDeleteRequest)
    case controllerCreated(FetchedResultsController, FetchRequest, ManagedObjectContext, sectionKey: String?, evaluation: String)
    case controllerDelegate(FetchedResultsController, set: Bool)
    case controllerFetch(FetchedResultsController)
    case controllerObjects(FetchedResultsController)
    case historyToken(PersistentStoreCoordinator)
    /// `filtered`: the app keeps only some of the transactions (a closure the trace cannot carry; it has the ones kept).
    case fetchHistory(PersistentStoreCoordinator, after: Int64?, filtered: Bool)
    case adoptSnapshots(PersistentStoreCoordinator, updated: Set<ManagedObjectID>, deleted: Set<ManagedObjectID>, from: PersistentStoreCoordinator)
    case setPoolSize(PersistentStoreCoordinator, Int)
}

/// What a recorded call gave the app.
package enum RecordedResult {
    case none
    case object(ManagedObject?)
    case objects([ManagedObject])
    case ids([ManagedObjectID])
    case count(Int)
    case value(Any?)
    /// A save: the IDs of the objects it inserted, before and after (permanent after a save to the store).
    case saved([(ManagedObjectID, ManagedObjectID)])
    case transactions([Int64])
    case failed(String)
}

/// Told of each recorded call on the threads of a simulation that writes an operation trace.
package protocol OperationRecorder: AnyObject, Sendable {
    /// A call at the top level of the app's code, before it runs.
    func record(_ call: RecordedCall, on thread: ExecutionThread)
    /// What that call returned (or the error it threw).
    func result(_ result: RecordedResult, of call: RecordedCall, on thread: ExecutionThread)
    /// The library runs now, on `context`'s queue, work it had queued by itself (`automaticMerge`,
    /// `permanentIDs`); ``deliveryEnded(on:)`` follows when it is done.
    func delivered(_ kind: String, to context: ManagedObjectContext, on thread: ExecutionThread)
    /// The work of the last ``delivered(_:to:on:)`` on `thread` is done.
    func deliveryEnded(on thread: ExecutionThread)
    /// The library calls out to app code (a notification's observers, a controller's delegate): the calls that
    /// code makes are recorded as made inside the call that called out.
    func calloutBegan(on thread: ExecutionThread)
    /// An object instance went (its last reference was dropped) on `thread`.
    func freed(_ object: ManagedObject, on thread: ExecutionThread)
    /// A context went.
    func freed(_ context: ManagedObjectContext, on thread: ExecutionThread)
}

/// Whether any simulation records (a relaxed load: the only cost of the hooks while nothing records).
package enum OperationRecording {
    static let recorders = Atomic<Int>(0)
    package static func started() { recorders.add(1, ordering: .relaxed) }
    package static func stopped() { recorders.subtract(1, ordering: .relaxed) }
    @inline(__always) static var isActive: Bool { recorders.load(ordering: .relaxed) > 0 }

    /// The calling thread's recorder, when it records.
    @inline(__always) package static var thread: ExecutionThread? {
        guard isActive, let thread = ExecutionThread.current, thread.operationRecorder != nil else { return nil }
        return thread
    }
}

extension Execution {
    /// Runs a hooked call: told to the recorder when the app makes it at its top level, run as is otherwise.
    @inline(__always)
    package static func recording<T>(_ call: @autoclosure () -> RecordedCall, result: (T) -> RecordedResult = { _ in .none }, _ body: () throws -> T) rethrows -> T {
        guard let thread = OperationRecording.thread else { return try body() }
        return try recordingSlow(thread, call(), result: result, body)
    }

    static func recordingSlow<T>(_ thread: ExecutionThread, _ call: RecordedCall, result: (T) -> RecordedResult, _ body: () throws -> T) rethrows -> T {
        let depth = thread.recordingDepth
        thread.recordingDepth = depth + 1
        defer { thread.recordingDepth = depth }
        guard depth == 0, let recorder = thread.operationRecorder else { return try body() }
        recorder.record(call, on: thread)
        do {
            let value = try body()
            recorder.result(result(value), of: call, on: thread)
            return value
        } catch {
            recorder.result(.failed(String(describing: error)), of: call, on: thread)
            throw error
        }
    }

    /// Runs app code the library calls out to (a notification's observers, a controller's delegate): the calls it
    /// makes are the app's, recorded at their top level.
    @inline(__always)
    package static func callout<T>(_ body: () throws -> T) rethrows -> T {
        guard let thread = OperationRecording.thread else { return try body() }
        thread.operationRecorder?.calloutBegan(on: thread)
        let depth = thread.recordingDepth
        thread.recordingDepth = 0
        defer { thread.recordingDepth = depth }
        return try body()
    }

    /// Runs the library's own work outside any app call (its observers, the blocks it queued by itself): the
    /// public calls it makes are not the app's.
    @inline(__always)
    package static func libraryWork<T>(_ body: () throws -> T) rethrows -> T {
        guard let thread = OperationRecording.thread else { return try body() }
        thread.recordingDepth += 1
        defer { thread.recordingDepth -= 1 }
        return try body()
    }

    /// A block the library queued by itself runs now on `context`'s queue.
    @inline(__always)
    package static func delivering(_ kind: String, to context: ManagedObjectContext?, _ body: () -> Void) {
        guard let thread = OperationRecording.thread else { return body() }
        let recorded = context != nil && thread.recordingDepth == 0
        if let context, recorded { thread.operationRecorder?.delivered(kind, to: context, on: thread) }
        thread.recordingDepth += 1
        body()
        thread.recordingDepth -= 1
        if recorded { thread.operationRecorder?.deliveryEnded(on: thread) }
    }

    @inline(__always)
    static func recordFree(_ object: ManagedObject) {
        guard let thread = OperationRecording.thread else { return }
        thread.operationRecorder?.freed(object, on: thread)
    }

    @inline(__always)
    static func recordFree(_ context: ManagedObjectContext) {
        guard let thread = OperationRecording.thread else { return }
        thread.operationRecorder?.freed(context, on: thread)
    }
}

extension MergePolicy {
    /// The policy as the operation trace names it: its type's name, `+resurrect` for ObjectTrump's resurrecting
    /// rule, and ` custom:<Class>` for a subclass (a replayer can only apply the type it builds on).
    package var traceName: String {
        var name = type.name
        if deletedElsewhere == .resurrect { name += "+resurrect" }
        if Swift.type(of: self) != MergePolicy.self { name += " custom:\(Swift.type(of: self))" }
        return name
    }
}

extension PersistentHistoryToken {
    /// A token for a transaction number of a store (a replay names transactions by number).
    package init(replaying number: Int64, store: String) { self.init(transactionNumber: number, storeIdentifier: store) }
}
