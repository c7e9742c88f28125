import Foundation

/// A position in a fetched results controller: section and item.
public struct FetchedIndexPath: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var section: Int
    public var item: Int
    public init(item: Int, section: Int) {
        self.item = item
        self.section = section
    }
    public static func < (a: Self, b: Self) -> Bool { (a.section, a.item) < (b.section, b.item) }
    public var description: String { "[\(section), \(item)]" }
}

/// Kinds of change a fetched results controller reports (Core Data's raw values, semantics §5).
public enum FetchedResultsChangeType: Int, Sendable {
    case insert = 1
    case delete = 2
    case move = 3
    case update = 4
}

/// One section of a fetched results controller.
public struct FetchedSectionInfo: @unchecked Sendable {  // objects: use on the controller's context's queue
    /// The section's name: the `sectionNameKeyPath` value as text ("" for nil or without sections).
    public var name: String
    /// The section's objects, in order.
    public var objects: [ManagedObject]
    /// The number of objects.
    public var numberOfObjects: Int { objects.count }
}

/// A snapshot of the results: section identifiers to object IDs, with the items to reload (semantics §5,
/// the diffable-snapshot callback).
public struct FetchedResultsSnapshot: Sendable, Equatable {
    /// Section identifiers in order.
    public var sectionIdentifiers: [String]
    /// Object IDs per section identifier.
    public var itemIdentifiers: [String: [ManagedObjectID]]
    /// Objects updated in place (iOS 15's `reloadItems`).
    public var reloadedItemIdentifiers: [ManagedObjectID]
}

/// Receives the changes of a fetched results controller, bracketed by will- and did-change-content;
/// section changes come before object changes (semantics §5). Every method has an empty default.
public protocol FetchedResultsControllerDelegate: AnyObject {
    func controllerWillChangeContent(_ controller: FetchedResultsController)
    func controller(_ controller: FetchedResultsController, didChange section: FetchedSectionInfo, atSectionIndex index: Int, for type: FetchedResultsChangeType)
    func controller(_ controller: FetchedResultsController, didChange object: ManagedObject, at indexPath: FetchedIndexPath?, for type: FetchedResultsChangeType, newIndexPath: FetchedIndexPath?)
    func controllerDidChangeContent(_ controller: FetchedResultsController)
}

extension FetchedResultsControllerDelegate {
    public func controllerWillChangeContent(_ controller: FetchedResultsController) {}
    public func controller(_ controller: FetchedResultsController, didChange section: FetchedSectionInfo, atSectionIndex index: Int, for type: FetchedResultsChangeType) {}
    public func controller(_ controller: FetchedResultsController, didChange object: ManagedObject, at indexPath: FetchedIndexPath?, for type: FetchedResultsChangeType, newIndexPath: FetchedIndexPath?) {}
    public func controllerDidChangeContent(_ controller: FetchedResultsController) {}
}

/// A delegate that takes whole snapshots instead; when the delegate adopts it, no other method is called.
public protocol FetchedResultsControllerSnapshotDelegate: AnyObject {
    func controller(_ controller: FetchedResultsController, didChangeContentWith snapshot: FetchedResultsSnapshot)
}

/// Keeps a sorted, sectioned fetch up to date with its context (`NSFetchedResultsController`, semantics §5).
///
/// It follows the context's objects-did-change notifications, so local edits, merges and child saves all
/// reach it. Each changed object of the entity is evaluated in memory, as Core Data does (see
/// ``ChangeEvaluation``); nothing is fetched again. With a `fetchBatchSize` the fetch reads the IDs (and, with
/// sections, the section sizes) and only the batches that are used, as Core Data's batched arrays do. After the
/// context's `reset()` call ``performFetch()`` again.
public final class FetchedResultsController: @unchecked Sendable {  // used on its context's queue
    /// How the controller decides whether changed objects belong in its results ([Rule 23](Docs/core-data-rules.md)). The raw
    /// values are the names a scenario's `viewer.frc` takes.
    public enum ChangeEvaluation: String, Sendable, CaseIterable {
        /// Core Data's (the default; semantics §5, "Cost of change tracking"): every changed object of the
        /// entity is evaluated on its own, reading the predicate's, the sort keys' and the section key's values on
        /// the object. A merged insert arrives as a fault, so each one costs a fulfilment (from the row cache
        /// when the context's coordinator holds its row, else one read from the store), whether it will be shown
        /// or not. `fetchLimit` is not respected after changes: the results grow past it.
        case coreData
        /// A smarter controller, not Core Data's: merged faults are evaluated in bulk, one query per 500 IDs
        /// (the predicate and, with a `fetchLimit`, only the first `fetchLimit` of each chunk in sort order), so
        /// only the objects that can be shown are filled; the results are trimmed to `fetchLimit` after each change.
        /// It queries only where that costs less, at the running profile's prices, than firing the faults, so it
        /// never does more work than ``coreData`` for a change and shows the same objects (within the limit).
        /// Where every fault's row is in the row cache (one coordinator for the view and the importers) and there
        /// is no `fetchLimit`, no query beats the faults and it does exactly ``coreData``'s work.
        /// Use it to show what such a controller would save.
        case batched
    }

    /// The request: its sort descriptors must be set (an empty list is accepted, semantics §5).
    public let fetchRequest: FetchRequest
    /// The context observed.
    public let managedObjectContext: ManagedObjectContext
    /// The key path that groups objects into sections (it must order like the first sort descriptor).
    public let sectionNameKeyPath: String?
    /// Kept for API parity; nothing is cached on disk.
    public let cacheName: String?
    /// How changed objects are evaluated (default ``ChangeEvaluation/coreData``).
    public let changeEvaluation: ChangeEvaluation
    /// The delegate; without one the controller does not track changes (semantics §5).
    public weak var delegate: AnyObject? {
        didSet { Probe.note(.controllerDelegate(self, set: delegate != nil)) }
    }

    /// The fetched objects in order, nil before ``performFetch()``.
    public var fetchedObjects: [ManagedObject]? {
        Probe.call(.controllerObjects(self), result: { .objects($0 ?? []) }) { results?.objects }
    }
    /// The objects, their keys and sections, nil before ``performFetch()``.
    private var results: SectionedResults?
    /// The sections, nil before ``performFetch()``.
    public var sections: [FetchedSectionInfo]? {
        guard let results else { return nil }
        if let sectionInfos { return sectionInfos }
        let infos = Self.sectionInfos(results)
        sectionInfos = infos
        return infos
    }
    /// ``sections`` as last built, until the results change.
    private var sectionInfos: [FetchedSectionInfo]?
    /// Changes handled since the fetch (deterministic counter).
    package private(set) var changesProcessed = 0
    /// Relevance passes run since the fetch: one per observed notification that named changed objects of the
    /// entity (an objects-did-change, or a merge's did-merge when its objects-did-change named none; semantics §5).
    package private(set) var changePasses = 0
    /// Objects whose membership the controller evaluated for a change (deterministic counter, reported as
    /// `frcObjectsEvaluated`; also counted as ``CostedOperation/controllerObjectEvaluated`` in a simulation).
    package private(set) var objectsEvaluated = 0
    /// The number of objects in the results (reported as `frcObjects`); 0 before ``performFetch()``.
    package var objectCount: Int { results?.count ?? 0 }

    /// The context's ``ControllerHub``, which tells this controller of its changes (from its first fetch).
    private var hub: ControllerHub?
    private var needsFetch = true
    /// Whether objects that come to match the predicate through a merged update of an object the context had
    /// not loaded are picked up (iOS 10 and later, semantics §5). It costs one query over the updated IDs per
    /// merge, and only for controllers with a predicate. Default true.
    var includesUnloadedUpdates = true

    /// Creates a controller; call ``performFetch()`` next.
    /// - Parameter changeEvaluation: how changed objects are evaluated; Core Data's by default.
    public init(fetchRequest: FetchRequest, managedObjectContext: ManagedObjectContext, sectionNameKeyPath: String? = nil, cacheName: String? = nil,
                changeEvaluation: ChangeEvaluation = .coreData) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = managedObjectContext
        self.sectionNameKeyPath = sectionNameKeyPath
        self.cacheName = cacheName
        self.changeEvaluation = changeEvaluation
        Probe.note(.controllerCreated(self, fetchRequest, managedObjectContext, sectionKey: sectionNameKeyPath, evaluation: changeEvaluation.rawValue))
    }

    /// Objects-did-change of the context (told by its ``ControllerHub``).
    func objectsDidChange(_ note: Notification) {
        Probe.libraryWork {
            guard let change = ObjectsDidChange(note) else { return }
            handle(change)
        }
    }

    /// Did-merge-object-IDs of the context (told by its ``ControllerHub``).
    func didMergeObjectIDs(_ note: Notification) {
        Probe.libraryWork {
            guard let ids = ContextObjectIDChanges(note) else { return }
            // core-data-rules.md Rule 10: already done within the merge's objects-did-change when it posted one.
            if mergeHandled {
                mergeHandled = false
                return
            }
            let merged = mergedUpdates(ids.updated.subtracting(ids.refreshed))
            guard !merged.shownFaults.isEmpty || !merged.newcomers.isEmpty else { return }
            handle(inserted: merged.newcomers, updated: [], refreshed: merged.shownFaults, gone: [], invalidatedAll: false)
        }
    }

    /// Runs the fetch and starts tracking changes.
    /// - Throws: ``ObjectGraphError`` when the request's sort descriptors are not set or the fetch fails.
    public func performFetch() throws {
        return try Probe.call(.controllerFetch(self)) { try fetchAndTrack() }
    }

    private func fetchAndTrack() throws {
        // Semantics §5, core-data-rules.md Rule 16 (recorded on Apple): nil sort descriptors fail, an empty list does not.
        guard fetchRequest.sortDescriptorsIfSet != nil else {
            throw ObjectGraphError(.invalidFetchRequest, "a fetched results controller needs sort descriptors", entity: fetchRequest.entityName)
        }
        // core-data-rules.md Rule 26 (semantics §4 fetchBatchSize): the store orders the IDs; with a batch size the objects
        // are faults whose rows are read a batch at a time as they are used. Nothing here reads every object.
        // Sort keys are read from an object only when a change needs them (reading them fires its fault,
        // and with `fetchBatchSize` its batch's query).
        let objects = try managedObjectContext.fetch(fetchRequest)
        results = SectionedResults(objects: objects, names: try sectionNames(of: objects))
        sectionInfos = nil
        needsFetch = false
        if hub == nil {
            let hub = ControllerHub.of(managedObjectContext)
            hub.add(self)
            self.hub = hub
        }
    }

    /// The section name of each object, in order. With a batch size the store counts the sections in one query
    /// (Core Data's section query), so no row is loaded; otherwise each object's section key is read.
    private func sectionNames(of objects: [ManagedObject]) throws -> [String] {
        guard let sectionNameKeyPath else { return Array(repeating: "", count: objects.count) }
        if fetchRequest.fetchBatchSize > 0, let counts = storeSectionCounts(sectionNameKeyPath),
           counts.reduce(0, { $0 + $1.count }) == objects.count {
            var names: [String] = []
            names.reserveCapacity(objects.count)
            for (value, count) in counts { names.append(contentsOf: repeatElement(Self.sectionName(value), count: count)) }
            return names
        }
        return try objects.map(sectionName)
    }

    /// The sections' values and sizes from the store; nil when the store cannot say (pending changes of the
    /// entity, a child context, a window, another store, a key path not written in SQL).
    private func storeSectionCounts(_ keyPath: String) -> [(value: PropertyValue, count: Int)]? {
        let context = managedObjectContext
        guard context.parent == nil, fetchRequest.fetchLimit == 0, fetchRequest.fetchOffset == 0,
              let coordinator = context.persistentStoreCoordinator, !coordinator.routesRequests,
              let entity = try? context.entity(for: fetchRequest), !context.hasPendingChanges(for: entity) else { return nil }
        let fetch = StoreFetch(entity: entity, predicate: fetchRequest.predicate, sortDescriptors: fetchRequest.sortDescriptors,
                               limit: 0, offset: 0, idsOnly: true, includesSubentities: fetchRequest.includesSubentities)
        // A pinned context counts its sections in its generation (Docs/coredata-behaviour.md §3.7).
        let generation: StoreGeneration?
        do { generation = try context.readGeneration() } catch { return nil }
        guard let counts = try? coordinator.read(in: generation, { try ($0 as? SQLiteStore)?.sectionCounts(fetch, keyPath: keyPath) }) else { return nil }
        Probe.count(.fetchExecuted)
        // A section's row is its key and its count: stepped with no object and no snapshot, as a row of IDs.
        Probe.count(.idRowFetched, counts.count)
        return counts
    }

    /// The object at an index path. An index path outside the results traps, as Core Data raises.
    public func object(at indexPath: FetchedIndexPath) -> ManagedObject {
        guard let results else { preconditionFailure("object(at:) before performFetch()") }
        precondition(results.sections.indices.contains(indexPath.section), "object(at:): no section \(indexPath.section) in \(results.sections.count)")
        let section = results.sections[indexPath.section]
        precondition(indexPath.item >= 0 && indexPath.item < section.count, "object(at:): no item \(indexPath.item) in section \(indexPath.section) of \(section.count)")
        return results.objects[section.offset + indexPath.item]
    }

    /// The index path of an object, nil when it is not in the results.
    public func indexPath(forObject object: ManagedObject) -> FetchedIndexPath? {
        guard let results, let i = results.objects.firstIndex(where: { $0 === object }) else { return nil }
        return Self.indexPath(i, in: results)
    }

    private static func indexPath(_ i: Int, in results: SectionedResults) -> FetchedIndexPath {
        let s = results.section(containing: i)
        return FetchedIndexPath(item: i - results.sections[s].offset, section: s)
    }

    /// The current results as a snapshot.
    public var snapshot: FetchedResultsSnapshot {
        Self.snapshot(sections ?? [], reloaded: [])
    }

    private func sortKeys(_ object: ManagedObject) throws -> [PropertyValue] {
        try fetchRequest.sortDescriptors.map { try object.sortValue($0.key) }
    }

    private func sectionName(_ object: ManagedObject) throws -> String {
        guard let sectionNameKeyPath else { return "" }
        return Self.sectionName(try object.sortValue(sectionNameKeyPath))
    }

    private static func sectionName(_ value: PropertyValue) -> String {
        switch value {
        case .null: return ""
        case .string(let s): return s
        case let v: return v.description
        }
    }

    private static func sectionInfos(_ results: SectionedResults) -> [FetchedSectionInfo] {
        results.sections.map { FetchedSectionInfo(name: $0.name, objects: Array(results.objects[$0.offset ..< $0.offset + $0.count])) }
    }

    private static func snapshot(_ sections: [FetchedSectionInfo], reloaded: [ManagedObjectID]) -> FetchedResultsSnapshot {
        var items: [String: [ManagedObjectID]] = [:]
        for s in sections { items[s.name] = s.objects.map(\.objectID) }
        return FetchedResultsSnapshot(sectionIdentifiers: sections.map(\.name), itemIdentifiers: items, reloadedItemIdentifiers: reloaded)
    }

    /// Whether a changed object belongs in the results, decided on the object (semantics §5): evaluating the
    /// predicate reads its values, which fires a fault.
    private func matches(_ object: ManagedObject) -> Bool {
        objectsEvaluated += 1
        Probe.count(.controllerObjectEvaluated)
        guard fetchRequest.includes(object.entity), !object.isDeletedFlag, object.managedObjectContext === managedObjectContext else { return false }
        guard let predicate = fetchRequest.predicate else { return true }
        return (try? predicate.evaluate(subject: object)) ?? false
    }

    /// ``ChangeEvaluation/batched``: the touched objects, not gone, that are evaluated one by one with
    /// ``matches(_:)``, in ID order: the loaded ones, the faults no query decided, and the faults a query found
    /// (``matchingFaults(_:)``). A fault the query ruled out is neither fired nor evaluated, so it is not sorted
    /// either: a merge of many inserts none of which can be shown sorts only the few objects left.
    private func batchedCandidates(touched: Set<ManagedObject>, gone: Set<ManagedObject>) -> [ManagedObject] {
        var faults: [ManagedObject] = [], left: [ManagedObject] = []
        for object in touched where gone.isEmpty || !gone.contains(object) {
            if object.isFaultFlag { faults.append(object) } else { left.append(object) }
        }
        if let kept = matchingFaults(faults) {
            for (i, fault) in faults.enumerated() where kept[i] { left.append(fault) }
        } else {
            left += faults
        }
        return left.sorted { Self.idOrder($0.objectID, $1.objectID) }
    }

    /// ``ChangeEvaluation/batched``: which of `faults` can appear in the results, found by one query per 500 IDs
    /// instead of one fault fired per object: those matching the predicate and, with a `fetchLimit`, only the
    /// first `fetchLimit` of each chunk in sort order (any other is preceded by at least that many matches, so it
    /// cannot be among the first `fetchLimit` results). One flag per fault, false for a fault the query ruled
    /// out; nil when no query is run and ``matches(_:)`` decides per object, as Core Data does.
    ///
    /// A query is run only where it costs less than firing the faults (``queryPlan(storeReads:cached:limit:)``):
    /// a fault in a fault batch is loaded with its batch and left out; a fault whose row the row cache holds (a
    /// merge from a context on the same coordinator) or an ancestor context holds loaded costs no store trip.
    private func matchingFaults(_ faults: [ManagedObject]) -> [Bool]? {
        let limit = fetchRequest.fetchLimit
        let loose = faults.indices.filter { faults[$0].faultBatch.map(\.isLoaded) ?? true }
        guard !loose.isEmpty, let reading = try? managedObjectContext.idsReadingStore(loose.map { faults[$0].objectID }) else { return nil }
        let queried: [Int]
        switch Self.queryPlan(storeReads: reading.count, cached: loose.count - reading.count, limit: limit) {
        case .none: return nil
        case .storeReads: queried = loose.filter { reading.contains(faults[$0].objectID) }
        case .all: queried = loose
        }
        guard let objects = fetchAmong(queried.map { faults[$0].objectID }, limit: limit) else { return nil }
        let found = Set(objects.map(\.objectID))
        var kept = [Bool](repeating: true, count: faults.count)
        for i in queried where found.isEmpty || !found.contains(faults[i].objectID) { kept[i] = false }
        return kept
    }

    /// Which faults a batched controller queries for: none, those whose firing reads the store, or all.
    enum QueryPlan: Equatable {
        case none, storeReads, all
    }

    /// The cheapest way, at the running profile's prices (``Execution/price(_:)``), to evaluate `storeReads`
    /// faults whose firing reads the store and `cached` whose firing does not: firing each (Core Data's, chosen
    /// on a tie), a query for the first kind, or a query for both. A fault fired costs its fill (a store trip is
    /// one SELECT) and an evaluation. A query costs per chunk of 500 a fetch, its SELECT and (with a `limit`) its
    /// sort, and per row it returns a row read, its fault filled from the row cache and an evaluation: every
    /// fault, at worst, or `limit` per chunk. Counting every fault as returned is what makes the choice safe:
    /// it never costs more than firing them, whatever the predicate turns out to match.
    static func queryPlan(storeReads: Int, cached: Int, limit: Int) -> QueryPlan {
        let price = Execution.price
        let storeFault = price(.faultFulfilledFromStore) + price(.sqlStatement) + price(.controllerObjectEvaluated)
        let cachedFault = price(.faultFulfilledFromCache) + price(.controllerObjectEvaluated)
        func query(_ n: Int) -> UInt64 {
            let chunks = (n + 499) / 500
            let returned = limit > 0 ? min(n, chunks * limit) : n
            let perChunk = price(.fetchExecuted) + price(.sqlStatement) + (limit > 0 ? price(.sortPerformed) : 0)
            return UInt64(chunks) * perChunk + UInt64(returned) * (price(.rowFetched) + cachedFault)
        }
        let firing = UInt64(storeReads) * storeFault + UInt64(cached) * cachedFault
        let queryingStoreReads = storeReads > 0 ? query(storeReads) + UInt64(cached) * cachedFault : .max
        let queryingAll = query(storeReads + cached)
        if queryingAll < min(firing, queryingStoreReads) { return .all }
        return queryingStoreReads < firing ? .storeReads : .none
    }

    /// `ids` by key, equal keys (IDs of other entities) in ID order, whatever order they come in (a set's
    /// included). The IDs one save inserted are a run of distinct, consecutive keys: those are placed by key in one
    /// pass; any other list is sorted.
    private static func inKeyOrder(_ ids: [ManagedObjectID]) -> [ManagedObjectID] {
        var low = Int64.max, high = Int64.min
        for id in ids {
            guard let key = id.primaryKey else { return sortedByKey(ids) }
            low = min(low, key)
            high = max(high, key)
        }
        let (span, overflow) = high.subtractingReportingOverflow(low)
        guard !ids.isEmpty, !overflow, span < 2 * Int64(ids.count) else { return sortedByKey(ids) }
        var slots = [Int](repeating: -1, count: Int(span) + 1)
        for (i, id) in ids.enumerated() {
            let slot = Int(id.key - low)
            guard slots[slot] < 0 else { return sortedByKey(ids) }  // equal keys (other entities): by ID order
            slots[slot] = i
        }
        return slots.compactMap { $0 < 0 ? nil : ids[$0] }
    }

    private static func sortedByKey(_ ids: [ManagedObjectID]) -> [ManagedObjectID] {
        ids.map { (key: $0.primaryKey ?? .min, id: $0) }.sorted { $0.key != $1.key ? $0.key < $1.key : idOrder($0.id, $1.id) }.map(\.id)
    }

    /// The objects among `ids` that match the predicate (with `limit`, the first `limit` of each chunk in sort
    /// order), one query per 500 IDs; nil when a query fails. In key order, so that each chunk is a run of keys
    /// the store can query as a range (the IDs one save inserted are consecutive), with the same statement text
    /// each time.
    private func fetchAmong(_ ids: [ManagedObjectID], limit: Int = 0) -> [ManagedObject]? {
        let ids = Self.inKeyOrder(ids)
        var found: [ManagedObject] = []
        for start in stride(from: 0, to: ids.count, by: 500) {
            let chunk = ids[start..<min(start + 500, ids.count)]
            let inChunk = ObjectPredicate(.comparison(PredicateComparison(.evaluatedObject, .in, .list(chunk.map { .objectID($0) }))))
            var request = FetchRequest(entityName: fetchRequest.entityName, predicate: fetchRequest.predicate.map { .and([$0, inChunk]) } ?? inChunk)
            if limit > 0 {
                request.sortDescriptors = fetchRequest.sortDescriptors
                request.fetchLimit = limit
                // The first `limit` of the chunk after pending changes, exactly (not Core Data's store window,
                // core-data-rules.md Rule 14): the reasoning above needs every match that precedes the others.
                request.pendingChangesOverlay = .wholeResult
            }
            guard let objects = try? managedObjectContext.fetch(request) else { return nil }
            found += objects
        }
        return found
    }

    /// A total order on IDs that does not depend on addresses: permanent before temporary, then by store and key.
    private static func idOrder(_ a: ManagedObjectID, _ b: ManagedObjectID) -> Bool {
        (a.isTemporaryID ? 1 : 0, a.storeNumber, a.key, a.entity.name) < (b.isTemporaryID ? 1 : 0, b.storeNumber, b.key, b.entity.name)
    }

    /// Semantics §5 and Rule 10: a merge's updated objects that it did not refresh (it refreshes only loaded
    /// ones): those the results hold as faults, which this pass evaluates as refreshed objects (firing each one,
    /// with its batch), and those not in the results that now match (``newMatches(_:shown:)``).
    private func mergedUpdates(_ updated: Set<ManagedObjectID>) -> (shownFaults: Set<ManagedObject>, newcomers: Set<ManagedObject>) {
        guard !updated.isEmpty, delegate != nil, !needsFetch, let current = results?.objects else { return ([], []) }
        var shown = Set<ManagedObjectID>(minimumCapacity: current.count)
        var shownFaults = Set<ManagedObject>()
        for object in current {
            shown.insert(object.objectID)
            if object.isFaultFlag, updated.contains(object.objectID) { shownFaults.insert(object) }
        }
        return (shownFaults, newMatches(updated, shown: shown) ?? [])
    }

    /// Semantics §5 (fixed in iOS 10): updated objects the context had not loaded may now match; one query
    /// over their IDs finds them, and they arrive as inserts. Nil when there are none.
    private func newMatches(_ updated: Set<ManagedObjectID>, shown: Set<ManagedObjectID>) -> Set<ManagedObject>? {
        guard includesUnloadedUpdates, fetchRequest.predicate != nil else { return nil }
        let candidates = updated.filter { fetchRequest.includes($0.entity) && !shown.contains($0) }
        guard !candidates.isEmpty else { return nil }
        guard let found = fetchAmong(Array(candidates)) else { return nil }
        let newcomers = Set(found)
        return newcomers.isEmpty ? nil : newcomers
    }

    /// Set while the objects-did-change of a merge was handled, so that its did-merge notification does not
    /// start a second change cycle.
    private var mergeHandled = false

    // Semantics §5: inserts, deletes, moves and updates derived per changed object of the entity.
    private func handle(_ change: ObjectsDidChange) {
        var inserted = change.inserted
        var refreshed = change.refreshed
        if let merging = managedObjectContext.changesBeingMerged {
            // Semantics §3.1, §5 (core-data-rules.md Rule 10): a merge is one change cycle, with the updated objects the
            // results hold as faults and the updated objects that came to match.
            mergeHandled = true
            let merged = mergedUpdates(merging.updated.subtracting(change.refreshed.map(\.objectID)))
            inserted.formUnion(merged.newcomers)
            refreshed.formUnion(merged.shownFaults)
        }
        handle(inserted: inserted, updated: change.updated, refreshed: refreshed,
               gone: change.deleted.union(change.invalidated), invalidatedAll: change.invalidatedAll)
    }

    private func handle(inserted: Set<ManagedObject>, updated: Set<ManagedObject>, refreshed: Set<ManagedObject>, gone: Set<ManagedObject>, invalidatedAll: Bool) {
        guard delegate != nil, !needsFetch, var results else { return }
        if invalidatedAll {
            needsFetch = true  // reset(): the controller must fetch again; no per-object deletes.
            return
        }
        let touched = inserted.union(updated).union(refreshed).union(gone)
            .filter { fetchRequest.includes($0.entity) }
        guard !touched.isEmpty else { return }
        changePasses += 1
        changesProcessed += touched.count
        let old = Self.places(of: touched, in: results), oldNames = results.sections.map(\.name)

        let (placed, inPlace) = changesToPlace(touched: touched, updated: updated, refreshed: refreshed, gone: gone, old: old)

        // The results are changed in place (semantics §5, "What placing a change costs"); the controller lets go
        // of them for the pass, so that their arrays are not copied.
        self.results = nil
        reposition(placed, touched: touched, inPlace: inPlace, in: &results)
        self.results = results
        sectionInfos = nil
        let new = Self.places(of: touched, in: results)
        reportChanges(touched: touched, old: old, oldNames: oldNames, new: new, results: results)
    }

    /// The touched objects that still match, with their sort keys and section names, in ID order; and those that
    /// keep their place unsearched (a local edit of none of the order keys).
    private func changesToPlace(touched: Set<ManagedObject>, updated: Set<ManagedObject>, refreshed: Set<ManagedObject>, gone: Set<ManagedObject>,
                                old: (paths: [ObjectIdentifier: FetchedIndexPath], ranks: [ObjectIdentifier: Int]))
        -> (placed: [(object: ManagedObject, key: [PropertyValue], name: String)], inPlace: Set<ObjectIdentifier>) {
        // Semantics §5: a local edit that changed none of the sort and section keys keeps its place, unsearched,
        // when the object still matches.
        let orderKeys = Set(fetchRequest.sortDescriptors.map(\.key) + [sectionNameKeyPath].compactMap { $0 })
        var inPlace = Set<ObjectIdentifier>()
        if !orderKeys.contains(where: { $0.contains(".") }) {
            for object in updated where !refreshed.contains(object) && old.paths[ObjectIdentifier(object)] != nil
                && !object.isFaultFlag && orderKeys.isDisjoint(with: object.changedValuesForCurrentEvent().keys) {
                inPlace.insert(ObjectIdentifier(object))
            }
        }
        // In ID order, not a set's: which faults fire, which rows the searches below read and the order of equal
        // keys must not depend on addresses.
        var placed: [(object: ManagedObject, key: [PropertyValue], name: String)] = []
        switch changeEvaluation {
        case .coreData:
            // Semantics §5, "Cost of change tracking": each object decided on its own; a merged insert's fault
            // fires here (predicate, sort keys, section key), shown or not.
            let candidates = touched.filter { !gone.contains($0) }.sorted { Self.idOrder($0.objectID, $1.objectID) }
            for object in candidates where matches(object) {
                guard let k = try? self.sortKeys(object), let n = try? sectionName(object) else { continue }
                placed.append((object, k, n))
            }
        case .batched:
            // Faults that would each read the store are evaluated in one query per 500 IDs when that costs less,
            // so only those that can be shown are filled; the others as Core Data does.
            for object in batchedCandidates(touched: touched, gone: gone) where matches(object) {
                guard let k = try? self.sortKeys(object), let n = try? sectionName(object) else { continue }
                placed.append((object, k, n))
            }
        }
        // Only an object that still matches keeps its place (one that stopped matching, or is gone, is a delete).
        inPlace.formIntersection(placed.map { ObjectIdentifier($0.object) })
        placed.removeAll { inPlace.contains(ObjectIdentifier($0.object)) }
        return (placed, inPlace)
    }

    /// Moves or inserts each of `placed` where its key goes in `results`, after removing the touched objects that
    /// leave the results. What leaves goes first, one at a time from the end. The objects that stay are then placed
    /// one at a time, in ID order: each moves from its index, and until it has, the searches do not see it (its new
    /// key would not fit where it is); the others' keys are the ones they were sorted by.
    private func reposition(_ placed: [(object: ManagedObject, key: [PropertyValue], name: String)], touched: Set<ManagedObject>,
                            inPlace: Set<ObjectIdentifier>, in results: inout SectionedResults) {
        let staying = Set(placed.map { ObjectIdentifier($0.object) })
        var leaving: [Int] = []
        var was: [ObjectIdentifier: Int] = [:]
        for (i, object) in results.objects.enumerated() where touched.contains(object) && !inPlace.contains(ObjectIdentifier(object)) {
            if staying.contains(ObjectIdentifier(object)) { was[ObjectIdentifier(object)] = i - leaving.count } else { leaving.append(i) }
        }
        for i in leaving.reversed() { results.remove(at: i) }
        // Each placed object's index while it waits (nil for a newcomer), and those indices in order.
        var spot = placed.map { was[ObjectIdentifier($0.object)] }
        var waiting = placed.indices.filter { spot[$0] != nil }[...]
        var hidden = spot.compactMap { $0 }.sorted()

        let sorts = fetchRequest.sortDescriptors
        func precedes(_ a: [PropertyValue], _ b: [PropertyValue]) -> Bool {
            Probe.count(.controllerComparison)
            return SortOrdering.precedes(a, b, sorts)
        }
        // An unchanged object's sort key is read when the search first needs it (with a batch size, that loads
        // its batch): a search touches O(log n) of them, not every row.
        func key(at i: Int) -> [PropertyValue] {
            if let k = results.keys[i] { return k }
            let k = (try? self.sortKeys(results.objects[i])) ?? []
            results.keys[i] = k
            return k
        }
        // A key known without I/O: read before, or on a loaded object.
        func knownKey(at i: Int) -> [PropertyValue]? {
            results.keys[i] ?? (results.objects[i].isFaultFlag ? nil : key(at: i))
        }
        // The searches run over the visible entries (all but `hidden`): the index of the v-th, and how many
        // come before index r.
        func visible(_ v: Int) -> Int {
            v + partitioningIndex(0, hidden.count) { hidden[$0] - $0 > v }
        }
        func visibleBefore(_ r: Int) -> Int {
            r - partitioningIndex(0, hidden.count) { hidden[$0] >= r }
        }
        // Semantics §5 and Rule 26: where `k` goes (after its equals), as an index in the results without the
        // entry at `a` (the object's own, nil for a newcomer). As Core Data does, the search stays within the
        // section named `name` when there is one, and otherwise compares with each section's first object to
        // place a new one. From where the object was, it first gallops outward over keys known without I/O, so
        // an object that stays near its place among loaded neighbours loads no batch; what is left is searched
        // by halves, reading keys as needed. Among the hidden entries of its gap it lands as near to where it
        // was as it can (a newcomer after them): the fewest entries shifted.
        func place(of k: [PropertyValue], name: String, from a: Int?) -> Int {
            func slot(_ r: Int) -> Int { a.map { $0 < r ? r - 1 : r } ?? r }
            var lo = 0, hi = visibleBefore(results.count)
            var bounds = (slot(0), slot(results.count))
            if sectionNameKeyPath != nil {
                var own: Int?
                var starts: [(view: Int, section: Int)] = []
                for (s, section) in results.sections.enumerated() {
                    let first = visibleBefore(section.offset), end = visibleBefore(section.offset + section.count)
                    guard first < end else { continue }
                    starts.append((first, s))
                    if section.name == name { own = s }
                }
                guard let own else {
                    let l = partitioningIndex(0, starts.count) { precedes(k, key(at: visible(starts[$0].view))) }
                    return l < starts.count ? slot(results.sections[starts[l].section].offset) : slot(results.count)
                }
                let section = results.sections[own]
                (lo, hi) = (visibleBefore(section.offset), visibleBefore(section.offset + section.count))
                bounds = (slot(section.offset), slot(section.offset + section.count))
            }
            if let h = a.map({ min(max(visibleBefore($0), lo), hi) }) {
                var d = 1
                while h - d >= lo, let m = knownKey(at: visible(h - d)) {
                    if precedes(k, m) { hi = h - d; d *= 2 } else { lo = h - d + 1; break }
                }
                d = 1
                while h + d - 1 < hi, let m = knownKey(at: visible(h + d - 1)) {
                    if precedes(k, m) { hi = h + d - 1; break } else { lo = h + d; d *= 2 }
                }
            }
            lo = partitioningIndex(lo, hi) { precedes(k, key(at: visible($0))) }
            let total = visibleBefore(results.count)
            let lower = max(lo == 0 ? slot(0) : slot(visible(lo - 1) + 1), bounds.0)
            let upper = min(lo == total ? slot(results.count) : slot(visible(lo)), bounds.1)
            return min(max(a ?? upper, lower), upper)
        }
        for (j, (object, k, n)) in placed.enumerated() {
            if let a = spot[j] {
                let b = place(of: k, name: n, from: a)
                hidden.remove(at: hidden.firstIndex(of: a)!)
                waiting.removeFirst()
                results.move(from: a, to: b, key: k, name: n)
                func shifted(_ i: Int) -> Int {
                    let out = i > a ? i - 1 : i
                    return out >= b ? out + 1 : out
                }
                for q in waiting { spot[q] = spot[q].map(shifted) }
                hidden = hidden.map(shifted)
            } else {
                let p = place(of: k, name: n, from: nil)
                results.insert(object, key: k, name: n, at: p)
                for q in waiting { spot[q] = spot[q].map { $0 >= p ? $0 + 1 : $0 } }
                if !hidden.isEmpty { hidden = hidden.map { $0 >= p ? $0 + 1 : $0 } }
            }
        }
        // Semantics §5: Core Data's controller does not respect fetchLimit after changes (its results grow past
        // it); the batched option trims.
        if changeEvaluation == .batched, fetchRequest.fetchLimit > 0 {
            while results.count > fetchRequest.fetchLimit { results.remove(at: results.count - 1) }
        }
    }

    /// Tells the delegate the section changes, then the object changes, in index-path order (semantics §5).
    private func reportChanges(touched: Set<ManagedObject>, old: (paths: [ObjectIdentifier: FetchedIndexPath], ranks: [ObjectIdentifier: Int]),
                               oldNames: [String], new: (paths: [ObjectIdentifier: FetchedIndexPath], ranks: [ObjectIdentifier: Int]),
                               results: SectionedResults) {
        // Section changes first (semantics §5). core-data-rules.md Rule 16 (recorded on Apple): a section that disappears
        // reports no objects.
        let newNames = results.sections.map(\.name)
        let newSections = sections ?? []
        var sectionChanges: [(FetchedSectionInfo, Int, FetchedResultsChangeType)] = []
        for (i, name) in oldNames.enumerated() where !newNames.contains(name) {
            sectionChanges.append((FetchedSectionInfo(name: name, objects: []), i, .delete))
        }
        for (i, s) in newSections.enumerated() where !oldNames.contains(s.name) { sectionChanges.append((s, i, .insert)) }
        var objectChanges: [(ManagedObject, FetchedIndexPath?, FetchedResultsChangeType, FetchedIndexPath?)] = []
        for object in touched {
            let id = ObjectIdentifier(object)
            switch (old.paths[id], new.paths[id]) {
            case (nil, nil): continue
            case (nil, let to?): objectChanges.append((object, nil, .insert, to))
            case (let from?, nil): objectChanges.append((object, from, .delete, nil))
            case (let from?, let to?):
                let sameSection = oldNames[from.section] == newNames[to.section]
                if sameSection, old.ranks[id] == new.ranks[id] {
                    objectChanges.append((object, from, .update, to))
                } else {
                    objectChanges.append((object, from, .move, to))
                }
            }
        }
        objectChanges.sort { ($0.2.rawValue, $0.1 ?? $0.3!) < ($1.2.rawValue, $1.1 ?? $1.3!) }
        // In index-path order, not the order of a set.
        let reloaded = objectChanges.filter { $0.2 == .update }.map(\.0.objectID)

        guard !sectionChanges.isEmpty || !objectChanges.isEmpty else { return }
        Probe.callout {
            if let snapshotDelegate = delegate as? any FetchedResultsControllerSnapshotDelegate {
                snapshotDelegate.controller(self, didChangeContentWith: Self.snapshot(newSections, reloaded: reloaded))
                return
            }
            guard let delegate = delegate as? any FetchedResultsControllerDelegate else { return }
            delegate.controllerWillChangeContent(self)
            for (section, index, type) in sectionChanges { delegate.controller(self, didChange: section, atSectionIndex: index, for: type) }
            for (object, old, type, new) in objectChanges { delegate.controller(self, didChange: object, at: old, for: type, newIndexPath: new) }
            delegate.controllerDidChangeContent(self)
        }
    }

    /// Where each of `touched` is in `results`, and how many untouched objects precede it: equal before and
    /// after a change, the object kept its place among the others (an update), else it moved.
    private static func places(of touched: Set<ManagedObject>, in results: SectionedResults) -> (paths: [ObjectIdentifier: FetchedIndexPath], ranks: [ObjectIdentifier: Int]) {
        var paths: [ObjectIdentifier: FetchedIndexPath] = [:], ranks: [ObjectIdentifier: Int] = [:]
        var rank = 0, s = 0
        for (i, object) in results.objects.enumerated() {
            guard touched.contains(object) else {
                rank += 1
                continue
            }
            while i >= results.sections[s].offset + results.sections[s].count { s += 1 }
            paths[ObjectIdentifier(object)] = FetchedIndexPath(item: i - results.sections[s].offset, section: s)
            ranks[ObjectIdentifier(object)] = rank
        }
        return (paths, ranks)
    }
}
