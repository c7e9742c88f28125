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
/// reach it. Changes cost O(changed objects × log n) comparisons; nothing is fetched again. After the
/// context's `reset()` call ``performFetch()`` again.
public final class FetchedResultsController: @unchecked Sendable {  // used on its context's queue
    /// The request: it needs at least one sort descriptor.
    public let fetchRequest: FetchRequest
    /// The context observed.
    public let managedObjectContext: ManagedObjectContext
    /// The key path that groups objects into sections (it must order like the first sort descriptor).
    public let sectionNameKeyPath: String?
    /// Kept for API parity; nothing is cached on disk.
    public let cacheName: String?
    /// The delegate; without one the controller does not track changes (semantics §5).
    public weak var delegate: AnyObject?

    /// The fetched objects in order, nil before ``performFetch()``.
    public private(set) var fetchedObjects: [ManagedObject]?
    /// The sections, nil before ``performFetch()``.
    public private(set) var sections: [FetchedSectionInfo]?
    /// Changes handled since the fetch (deterministic counter).
    public private(set) var changesProcessed = 0

    private var keys: [[PropertyValue]] = []
    private var sectionNames: [String] = []
    private var observer: (any NSObjectProtocol)?
    private var mergeObserver: (any NSObjectProtocol)?
    private var needsFetch = true
    /// Whether objects that come to match the predicate through a merged update of an object the context had
    /// not loaded are picked up (iOS 10 and later, semantics §5). It costs one query over the updated IDs per
    /// merge, and only for controllers with a predicate. Default true.
    public var includesUnloadedUpdates = true

    /// Creates a controller; call ``performFetch()`` next.
    public init(fetchRequest: FetchRequest, managedObjectContext: ManagedObjectContext, sectionNameKeyPath: String? = nil, cacheName: String? = nil) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = managedObjectContext
        self.sectionNameKeyPath = sectionNameKeyPath
        self.cacheName = cacheName
    }

    deinit {
        if let observer { NotificationCenter.default.removeObserver(observer) }
        if let mergeObserver { NotificationCenter.default.removeObserver(mergeObserver) }
    }

    /// Runs the fetch and starts tracking changes.
    /// - Throws: ``ObjectGraphError`` when the request has no sort descriptor or the fetch fails.
    public func performFetch() throws {
        guard !fetchRequest.sortDescriptors.isEmpty else {
            throw ObjectGraphError(.invalidFetchRequest, "a fetched results controller needs at least one sort descriptor", entity: fetchRequest.entityName)
        }
        let objects = try managedObjectContext.fetch(fetchRequest)
        keys = try objects.map(sortKeys)
        sectionNames = try objects.map(sectionName)
        fetchedObjects = objects
        sections = Self.group(objects, sectionNames)
        needsFetch = false
        if observer == nil {
            observer = NotificationCenter.default.addObserver(
                forName: ManagedObjectContext.objectsDidChangeNotification, object: managedObjectContext, queue: nil
            ) { [weak self] note in
                guard let self, let change = ObjectsDidChange(note) else { return }
                self.handle(change)
            }
            mergeObserver = NotificationCenter.default.addObserver(
                forName: ManagedObjectContext.didMergeChangesObjectIDsNotification, object: managedObjectContext, queue: nil
            ) { [weak self] note in
                guard let self, let ids = ContextObjectIDChanges(note) else { return }
                self.pickUpNewMatches(ids.updated.subtracting(ids.refreshed))
            }
        }
    }

    /// The object at an index path.
    public func object(at indexPath: FetchedIndexPath) -> ManagedObject {
        sections![indexPath.section].objects[indexPath.item]
    }

    /// The index path of an object, nil when it is not in the results.
    public func indexPath(forObject object: ManagedObject) -> FetchedIndexPath? {
        guard let sections else { return nil }
        for (s, section) in sections.enumerated() {
            if let i = section.objects.firstIndex(where: { $0 === object }) { return FetchedIndexPath(item: i, section: s) }
        }
        return nil
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
        switch try object.sortValue(sectionNameKeyPath) {
        case .null: return ""
        case .string(let s): return s
        case let v: return v.description
        }
    }

    private static func group(_ objects: [ManagedObject], _ names: [String]) -> [FetchedSectionInfo] {
        var sections: [FetchedSectionInfo] = []
        for (object, name) in zip(objects, names) {
            if sections.last?.name == name { sections[sections.count - 1].objects.append(object) } else {
                sections.append(FetchedSectionInfo(name: name, objects: [object]))
            }
        }
        return sections
    }

    private static func snapshot(_ sections: [FetchedSectionInfo], reloaded: [ManagedObjectID]) -> FetchedResultsSnapshot {
        var items: [String: [ManagedObjectID]] = [:]
        for s in sections { items[s.name] = s.objects.map(\.objectID) }
        return FetchedResultsSnapshot(sectionIdentifiers: sections.map(\.name), itemIdentifiers: items, reloadedItemIdentifiers: reloaded)
    }

    private func matches(_ object: ManagedObject) -> Bool {
        Execution.count(.controllerObjectEvaluated)
        guard object.entity.name == fetchRequest.entityName, !object.isDeletedFlag, object.managedObjectContext === managedObjectContext else { return false }
        guard let predicate = fetchRequest.predicate else { return true }
        return (try? predicate.evaluate(subject: object)) ?? false
    }

    /// The faults among `faults` that can appear in the results, found by one query per 500 IDs instead of one
    /// fault fired per object: those matching the predicate and, with a `fetchLimit`, only the first `fetchLimit`
    /// of each chunk in sort order (any other is preceded by at least that many matches, so it cannot be among
    /// the first `fetchLimit` results). Nil when there are fewer than two faults, or neither a predicate nor a
    /// limit (``matches(_:)`` decides per object then).
    private func matchingFaults(_ faults: Set<ManagedObject>) -> FaultMatches? {
        let limit = fetchRequest.fetchLimit
        guard faults.count > 1, fetchRequest.predicate != nil || limit > 0 else { return nil }
        let ids = faults.map(\.objectID)
        guard let objects = fetchAmong(ids, limit: limit) else { return nil }
        return FaultMatches(faults: Set(ids), found: Set(objects.map(\.objectID)), controller: self)
    }

    /// The objects among `ids` that match the predicate (with `limit`, the first `limit` of each chunk in sort
    /// order), one query per 500 IDs; nil when a query fails. In key order, so that each chunk is a run of keys
    /// the store can query as a range (the IDs one save inserted are consecutive), with the same statement text
    /// each time.
    private func fetchAmong(_ ids: [ManagedObjectID], limit: Int = 0) -> [ManagedObject]? {
        let ids = ids.sorted(by: Self.keyOrder)
        var found: [ManagedObject] = []
        for start in stride(from: 0, to: ids.count, by: 500) {
            let chunk = ids[start..<min(start + 500, ids.count)]
            let inChunk = ObjectPredicate(.comparison(PredicateComparison(.evaluatedObject, .in, .list(chunk.map { .objectID($0) }))))
            var request = FetchRequest(entityName: fetchRequest.entityName, predicate: fetchRequest.predicate.map { .and([$0, inChunk]) } ?? inChunk)
            if limit > 0 {
                request.sortDescriptors = fetchRequest.sortDescriptors
                request.fetchLimit = limit
                // The first `limit` of the chunk after pending changes, exactly (not Core Data's store window,
                // issue 18 rule 14): the reasoning above needs every match that precedes the others.
                request.pendingChangesOverlay = .wholeResult
            }
            guard let objects = try? managedObjectContext.fetch(request) else { return nil }
            found += objects
        }
        return found
    }

    private static func keyOrder(_ a: ManagedObjectID, _ b: ManagedObjectID) -> Bool {
        (a.primaryKey ?? .min) < (b.primaryKey ?? .min)
    }

    private struct FaultMatches {
        var faults: Set<ManagedObjectID>
        var found: Set<ManagedObjectID>
        unowned let controller: FetchedResultsController
        func matches(_ object: ManagedObject) -> Bool {
            guard faults.contains(object.objectID) else { return controller.matches(object) }
            return found.contains(object.objectID) && controller.matches(object)
        }
    }

    /// Semantics §5 (fixed in iOS 10): updated objects the context had not loaded may now match; one query
    /// over their IDs finds them, and they arrive as inserts.
    private func pickUpNewMatches(_ updated: Set<ManagedObjectID>) {
        guard includesUnloadedUpdates, fetchRequest.predicate != nil, delegate != nil, !needsFetch,
              let current = fetchedObjects else { return }
        let shown = Set(current.map(\.objectID))
        let candidates = updated.filter { $0.entity.name == fetchRequest.entityName && !shown.contains($0) }
        guard !candidates.isEmpty else { return }
        guard let found = fetchAmong(Array(candidates)) else { return }
        let newcomers = Set(found)
        guard !newcomers.isEmpty else { return }
        handle(ObjectsDidChangeSynthetic.inserted(newcomers))
    }

    // Semantics §5: inserts, deletes, moves and updates derived per changed object of the entity.
    private func handle(_ synthetic: ObjectsDidChangeSynthetic) {
        switch synthetic {
        case .inserted(let objects): handle(inserted: objects, updated: [], refreshed: [], gone: [], invalidatedAll: false)
        }
    }

    private func handle(_ change: ObjectsDidChange) {
        handle(inserted: change.inserted, updated: change.updated, refreshed: change.refreshed,
               gone: change.deleted.union(change.invalidated), invalidatedAll: change.invalidatedAll)
    }

    private func handle(inserted: Set<ManagedObject>, updated: Set<ManagedObject>, refreshed: Set<ManagedObject>, gone: Set<ManagedObject>, invalidatedAll: Bool) {
        guard delegate != nil, !needsFetch, var objects = fetchedObjects else { return }
        if invalidatedAll {
            needsFetch = true  // reset(): the controller must fetch again; no per-object deletes.
            return
        }
        let touched = inserted.union(updated).union(refreshed).union(gone)
            .filter { $0.entity.name == fetchRequest.entityName }
        guard !touched.isEmpty else { return }
        changesProcessed += touched.count

        let oldSections = sections ?? []
        var oldPaths: [ObjectIdentifier: FetchedIndexPath] = [:]
        for (s, section) in oldSections.enumerated() {
            for (i, object) in section.objects.enumerated() where touched.contains(object) {
                oldPaths[ObjectIdentifier(object)] = FetchedIndexPath(item: i, section: s)
            }
        }
        // Remove every touched object, then put back the ones that match, each by binary search.
        var names = sectionNames
        var sortKeys = keys
        var keep: [Int] = []
        keep.reserveCapacity(objects.count)
        for (i, object) in objects.enumerated() where !touched.contains(object) { keep.append(i) }
        let unchangedCount = keep.count
        objects = keep.map { objects[$0] }
        names = keep.map { names[$0] }
        sortKeys = keep.map { sortKeys[$0] }
        // Objects merged from another context arrive as faults: the predicate (and the limit) is evaluated for all
        // of them in one query (chunks of 500 IDs), so only those that can be shown are filled, instead of one
        // fault fired per object.
        let faultMatches = matchingFaults(touched.filter { $0.isFaultFlag && !gone.contains($0) })
        var placed: [(ManagedObject, [PropertyValue], String)] = []
        for object in touched where !gone.contains(object) && (faultMatches?.matches(object) ?? matches(object)) {
            guard let k = try? self.sortKeys(object), let n = try? sectionName(object) else { continue }
            placed.append((object, k, n))
        }
        let sorts = fetchRequest.sortDescriptors
        for (object, k, n) in placed {
            var lo = 0, hi = objects.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if SortOrdering.precedes(sortKeys[mid], k, sorts) || (!SortOrdering.precedes(k, sortKeys[mid], sorts) && !SortOrdering.precedes(sortKeys[mid], k, sorts)) {
                    lo = mid + 1
                } else {
                    hi = mid
                }
            }
            objects.insert(object, at: lo)
            sortKeys.insert(k, at: lo)
            names.insert(n, at: lo)
        }
        if fetchRequest.fetchLimit > 0, objects.count > fetchRequest.fetchLimit {
            objects.removeLast(objects.count - fetchRequest.fetchLimit)
            sortKeys.removeLast(sortKeys.count - fetchRequest.fetchLimit)
            names.removeLast(names.count - fetchRequest.fetchLimit)
        }
        let newSections = Self.group(objects, names)
        var newPaths: [ObjectIdentifier: FetchedIndexPath] = [:]
        var unchangedRankNew: [ObjectIdentifier: Int] = [:]
        var rank = 0
        for (s, section) in newSections.enumerated() {
            for (i, object) in section.objects.enumerated() {
                if touched.contains(object) {
                    newPaths[ObjectIdentifier(object)] = FetchedIndexPath(item: i, section: s)
                    unchangedRankNew[ObjectIdentifier(object)] = rank
                } else {
                    rank += 1
                }
            }
        }
        _ = unchangedCount
        var unchangedRankOld: [ObjectIdentifier: Int] = [:]
        rank = 0
        for section in oldSections {
            for object in section.objects {
                if touched.contains(object) { unchangedRankOld[ObjectIdentifier(object)] = rank } else { rank += 1 }
            }
        }

        // Section changes first (semantics §5).
        let oldNames = oldSections.map(\.name), newNames = newSections.map(\.name)
        var sectionChanges: [(FetchedSectionInfo, Int, FetchedResultsChangeType)] = []
        for (i, s) in oldSections.enumerated() where !newNames.contains(s.name) { sectionChanges.append((s, i, .delete)) }
        for (i, s) in newSections.enumerated() where !oldNames.contains(s.name) { sectionChanges.append((s, i, .insert)) }
        var objectChanges: [(ManagedObject, FetchedIndexPath?, FetchedResultsChangeType, FetchedIndexPath?)] = []
        var reloaded: [ManagedObjectID] = []
        for object in touched {
            let id = ObjectIdentifier(object)
            switch (oldPaths[id], newPaths[id]) {
            case (nil, nil): continue
            case (nil, let new?): objectChanges.append((object, nil, .insert, new))
            case (let old?, nil): objectChanges.append((object, old, .delete, nil))
            case (let old?, let new?):
                let sameSection = oldSections[old.section].name == newSections[new.section].name
                if sameSection, unchangedRankOld[id] == unchangedRankNew[id] {
                    objectChanges.append((object, old, .update, new))
                    reloaded.append(object.objectID)
                } else {
                    objectChanges.append((object, old, .move, new))
                }
            }
        }
        objectChanges.sort { ($0.2.rawValue, $0.1 ?? $0.3!) < ($1.2.rawValue, $1.1 ?? $1.3!) }

        fetchedObjects = objects
        keys = sortKeys
        sectionNames = names
        sections = newSections
        guard !sectionChanges.isEmpty || !objectChanges.isEmpty else { return }
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

private enum ObjectsDidChangeSynthetic {
    case inserted(Set<ManagedObject>)
}
