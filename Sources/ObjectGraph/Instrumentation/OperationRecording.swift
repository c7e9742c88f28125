import Foundation

/// A Core Data call an app made, as the operation trace records it (Docs/calibration.md): each call an app makes
/// at the top level of its code (not the calls the library makes inside one) is told to the calling thread's
/// ``ProbeSink`` (``ProbeEvent/call(_:)``), with what it returned (``ProbeEvent/result(_:of:)``).
package enum RecordedCall {
    case coordinatorAdded(PersistentStoreCoordinator, options: StoreOptions, model: ManagedObjectModel, url: URL?, configuration: String?)
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
