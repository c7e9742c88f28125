import Foundation

/// One result of a fetch at some level of the context chain.
package struct FetchEntry {
    // Declared in this order, the flag takes the padding after the ID's 20 bytes: 48 bytes an entry (56 in another
    // order; LayoutTests).
    var id: ManagedObjectID
    /// Whether the entry holds a row-cache reference that an object adopts or that is released.
    var retained: Bool
    var row: RowSnapshot?
    /// The row cache's change count under which `row` is its entry's row (``RowCache/installRetaining(_:snapshot:)``);
    /// 0 when not known.
    var cachedAt: UInt64 = 0

    init(id: ManagedObjectID, row: RowSnapshot?, retained: Bool) {
        (self.id, self.row, self.retained) = (id, row, retained)
    }
}

extension ManagedObjectContext {
    func entity(for request: FetchRequest) throws -> EntityDescription {
        guard let entity = model.entity(named: request.entityName) else {
            throw ObjectGraphError(.invalidFetchRequest, "no entity named \(request.entityName)", entity: request.entityName)
        }
        return entity
    }

    /// Fetches objects (semantics §4): registered objects come back as they are (a fetch never changes
    /// objects in use); others as faults backed by the row cache, unless `returnsObjectsAsFaults` is false.
    /// - Throws: ``ObjectGraphError`` for an unknown entity or key path, a type mismatch, or a store failure.
    public func fetch(_ request: FetchRequest) throws -> [ManagedObject] {
        return try Probe.call(.fetch(self, request, result: "objects"), result: { .objects($0) }) { try performFetch(request) }
    }

    private func performFetch(_ request: FetchRequest) throws -> [ManagedObject] {
        assertOnQueue()
        let entity = try entity(for: request)
        let batching = request.fetchBatchSize > 0 && parent == nil
        var entries = try fetchEntries(request, entity: entity, idsOnly: !request.includesPropertyValues || batching)
        let objects = objects(for: &entries, request: request)
        if batching {
            var start = 0
            while start < objects.count {
                let chunk = objects[start..<min(start + request.fetchBatchSize, objects.count)].filter(\.isFaultFlag)
                let batch = FaultBatch(ids: chunk.map(\.objectID))
                for object in chunk { object.faultBatch = batch }
                start += request.fetchBatchSize
            }
        }
        if !request.relationshipKeyPathsForPrefetching.isEmpty {
            try prefetch(request.relationshipKeyPathsForPrefetching, for: objects, entity: entity)
        }
        return objects
    }

    /// Fetches objects of a subclass.
    public func fetch<T: ManagedObject>(_ request: FetchRequest, as type: T.Type) throws -> [T] {
        // Objects are usually exactly of the entity's class: a metatype comparison before the run-time cast.
        // A loop of our own rather than `compactMap`: this function is not specialized for the caller's type (it
        // is public and generic), and the standard library's unspecialized `compactMap` fetched the array's type
        // metadata and called value witnesses for every element (1.1k instructions per object of an update).
        // Here `T` is a class, so each element is one reference; the result is sized once.
        let objects = try fetch(request)
        var result: [T] = []
        result.reserveCapacity(objects.count)
        for object in objects {
            if Swift.type(of: object) == T.self {
                result.append(unsafeDowncast(object, to: T.self))
            } else if let typed = object as? T {
                result.append(typed)
            }
        }
        return result
    }

    /// Core Data's `fetch(_:)`, whose elements follow `request.resultType`: managed objects,
    /// object IDs, dictionaries, or for `.count` a one-element array holding the number of matches, as
    /// `NSCountResultType` returns it.
    public func fetchResults(_ request: FetchRequest) throws -> [Any] {
        switch request.resultType {
        case .managedObject: return try fetch(request)
        case .managedObjectID: return try fetchObjectIDs(request)
        case .dictionary: return try fetchDictionaries(request)
        case .count: return [try count(for: request)]
        }
    }

    /// Fetches object IDs only (`managedObjectIDResultType`).
    public func fetchObjectIDs(_ request: FetchRequest) throws -> [ManagedObjectID] {
        return try Probe.call(.fetch(self, request, result: "ids"), result: { .ids($0) }) { try performFetchObjectIDs(request) }
    }

    private func performFetchObjectIDs(_ request: FetchRequest) throws -> [ManagedObjectID] {
        assertOnQueue()
        let entity = try entity(for: request)
        return try fetchEntries(request, entity: entity, idsOnly: true, objectIDResults: true).map(\.id)
    }

    /// Fetches dictionaries of `propertiesToFetch` (`dictionaryResultType`); pending changes are not
    /// included, as in Core Data, and no object is registered.
    public func fetchDictionaries(_ request: FetchRequest) throws -> [[String: Any]] {
        return try Probe.call(.fetch(self, request, result: "dictionaries"), result: { .count($0.count) }) { try performFetchDictionaries(request) }
    }

    private func performFetchDictionaries(_ request: FetchRequest) throws -> [[String: Any]] {
        assertOnQueue()
        let entity = try entity(for: request)
        var plain = request
        plain.includesPendingChanges = false
        let keys = request.propertiesToFetch ?? entity.slots.compactMap { if case .attribute(let a) = $0 { return a.name } else { return nil } }
        var slots: [(String, Int)] = []
        for key in keys {
            guard let slot = entity.slotIndex(of: key) else {
                throw ObjectGraphError(.invalidFetchRequest, "propertiesToFetch names \(key), which is not an attribute or to-one", entity: entity.name, property: key)
            }
            slots.append((key, slot))
        }
        let entries = try fetchEntries(plain, entity: entity, idsOnly: false)
        releaseRetains(entries)
        return entries.map { entry in
            var d: [String: Any] = [:]
            guard let row = entry.row else { return d }
            for (key, slot) in slots {
                if let v = row.values[slot].anyValue(for: attributeTypeOf(entity, slot)) { d[key] = v }
            }
            return d
        }
    }

    private func attributeTypeOf(_ entity: EntityDescription, _ slot: Int) -> AttributeType? {
        if case .attribute(let a) = entity.slots[slot] { return a.type }
        return nil
    }

    /// The number of objects a fetch would return, pending changes included (`count(for:)`).
    public func count(for request: FetchRequest) throws -> Int {
        return try Probe.call(.fetch(self, request, result: "count"), result: { .count($0) }) { try performCount(for: request) }
    }

    private func performCount(for request: FetchRequest) throws -> Int {
        assertOnQueue()
        let entity = try entity(for: request)
        if request.includesPendingChanges, hasPendingChanges(for: entity) {
            return try fetchEntries(request, entity: entity, idsOnly: true).count
        }
        if let parent {
            return try parent.performAndWait { parent.childReadHook?(); return try parent.count(for: request) }
        }
        guard let coordinator = persistentStoreCoordinator else { return 0 }
        // One `SELECT count(*)`: the request's fixed work, and no row comes back to count (Docs/coredata-behaviour.md §4).
        Probe.count(.fetchExecuted)
        return try coordinator.countRows(request, entity: entity, generation: try readGeneration())
    }

    /// Whether an unsaved change touches objects a fetch of `entity` may return (those of its sub-entities too:
    /// a fetch that excludes them only overlays fewer).
    func hasPendingChanges(for entity: EntityDescription) -> Bool {
        insertedSet.contains { entity.fetchIncludes($0.entity, subentities: true) } || updatedSet.contains { entity.fetchIncludes($0.entity, subentities: true) }
            || deletedSet.contains { entity.fetchIncludes($0.entity, subentities: true) }
    }

    func releaseRetains(_ entries: [FetchEntry]) {
        guard let cache = persistentStoreCoordinator?.rowCache else { return }
        let retained = entries.filter(\.retained).map(\.id)
        if !retained.isEmpty { cache.release(retained) }
    }

    /// The matches of a fetch at this level: the parent's (or the store's) results with this context's
    /// unsaved inserts, updates and deletes laid over them (semantics §4 `includesPendingChanges`), the window
    /// and order as `request.pendingChangesOverlay` says. `objectIDResults`: for `fetchObjectIDs`, whose
    /// pending matches Core Data appends unsorted.
    func fetchEntries(_ request: FetchRequest, entity: EntityDescription, idsOnly: Bool, objectIDResults: Bool = false) throws -> [FetchEntry] {
        Probe.count(.fetchExecuted)
        let overlay = request.includesPendingChanges && hasPendingChanges(for: entity)
        let coreData = request.pendingChangesOverlay == .coreData
        var base = request
        if overlay && !coreData {
            base.fetchLimit = 0
            base.fetchOffset = 0
        }
        var entries: [FetchEntry]
        if let parent {
            entries = try parent.performAndWait {
                parent.childReadHook?()
                return try parent.fetchEntriesForChild(base, entity: entity, idsOnly: idsOnly, objectIDResults: objectIDResults)
            }
        } else {
            guard let coordinator = persistentStoreCoordinator else {
                throw ObjectGraphError(.persistentStoreOperation, "the context has no coordinator")
            }
            entries = try coordinator.fetchRows(base, entity: entity, idsOnly: idsOnly, generation: try readGeneration())
        }
        guard overlay else { return entries }

        let predicate = request.predicate
        let membership = predicate.flatMap(InListMembership.init)
        func matches(_ object: ManagedObject) throws -> Bool {
            guard let predicate else { return true }
            return try membership?.matches(object) ?? predicate.evaluate(subject: object)
        }
        var dropped: [FetchEntry] = []
        var seen = Set<ManagedObjectID>()
        var kept: [FetchEntry] = []
        for entry in entries {
            if let object = registry[entry.id], object.hasChanges {
                if object.isDeletedFlag { dropped.append(entry); continue }
                if try !matches(object) { dropped.append(entry); continue }
            }
            seen.insert(entry.id)
            kept.append(entry)
        }
        // Pending matches the store did not return, in a fixed order (permanent IDs by key, then temporary IDs
        // in the order they were made, i.e. inserted): never the order of a set.
        var pending: [ManagedObject] = []
        // Objects of sub-entities too, unless the request excludes them (`includesSubentities`).
        let subentities = request.includesSubentities
        for object in insertedSet.union(updatedSet) where entity.fetchIncludes(object.entity, subentities: subentities) && !seen.contains(object.objectID) {
            if try !matches(object) { continue }
            pending.append(object)
        }
        pending.sort { a, b in
            let (x, y) = (a.objectID, b.objectID)
            return x.isTemporaryID != y.isTemporaryID ? !x.isTemporaryID : x.key < y.key
        }
        for object in pending {
            kept.append(FetchEntry(id: object.objectID, row: RowSnapshot(values: object.values, version: object.snapshotVersion), retained: false))
        }
        // Rule 14: Core Data appends an object-ID fetch's pending matches after the store's rows unsorted.
        if !request.sortDescriptors.isEmpty && !(coreData && objectIDResults) {
            // A loaded object sorts by its current values; a row the store returned for an object not loaded here
            // sorts by the row's attribute values, as Core Data sorts the merged results it already holds (§4:
            // fetching never fires faults to order its results).
            let keyed = try kept.map { entry in
                if registry[entry.id].map({ $0.isFaultFlag }) ?? true, let row = entry.row,
                   let values = Self.attributeSortValues(request.sortDescriptors, entity: entry.id.entity, row: row) {
                    return (entry, values)
                }
                let object = self.object(with: entry.id)
                return (entry, try request.sortDescriptors.map { try object.sortValue($0.key) })
            }
            kept = keyed.sorted { SortOrdering.precedes($0.1, $1.1, request.sortDescriptors) }.map(\.0)
        }
        // Rule 14: with Core Data's overlay the offset was applied by the store (once); the limit is
        // applied again to the overlaid window.
        if !coreData, request.fetchOffset > 0 {
            dropped.append(contentsOf: kept.prefix(request.fetchOffset))
            kept = Array(kept.dropFirst(request.fetchOffset))
        }
        if request.fetchLimit > 0, kept.count > request.fetchLimit {
            dropped.append(contentsOf: kept[request.fetchLimit...])
            kept = Array(kept.prefix(request.fetchLimit))
        }
        releaseRetains(dropped)
        return kept
    }

    /// The sort values of a row when every sort key is an attribute of its entity (no key path), else nil.
    private static func attributeSortValues(_ descriptors: [ObjectSortDescriptor], entity: EntityDescription, row: RowSnapshot) -> [PropertyValue]? {
        var values: [PropertyValue] = []
        values.reserveCapacity(descriptors.count)
        for descriptor in descriptors {
            guard case .attribute(let slot)? = entity.propertiesByName[descriptor.key], slot < row.values.count else { return nil }
            values.append(row.values[slot])
        }
        return values
    }

    /// Results for a child: this context's view, with the current values of objects loaded here.
    func fetchEntriesForChild(_ request: FetchRequest, entity: EntityDescription, idsOnly: Bool, objectIDResults: Bool = false) throws -> [FetchEntry] {
        servingChild()  // semantics §2.2
        // Row-cache references pass down to the child's objects (every context's objects hold their rows).
        let entries = try fetchEntries(request, entity: entity, idsOnly: idsOnly, objectIDResults: objectIDResults)
        return entries.map { entry in
            var e = entry
            if !idsOnly, let object = registry[entry.id], !object.isFaultFlag {
                e.row = RowSnapshot(values: object.values, version: object.snapshotVersion)
            }
            return e
        }
    }

    /// Turns entries into registered objects, adopting their row-cache references. A row an object keeps (a fault's
    /// fetched row, or the values of an object filled at once) is taken out of its entry: moved, not copied, so
    /// neither the copy nor the entries' release later touches the row's values (a cache miss each once a large
    /// fetch's rows have left the caches). The entries' rows are not read afterwards.
    func objects(for entries: inout [FetchEntry], request: FetchRequest) -> [ManagedObject] {
        let cache = persistentStoreCoordinator?.rowCache
        var releases: [ManagedObjectID] = []
        var result: [ManagedObject] = []
        var refetched: [ManagedObject] = []
        // Rule 21.6 (semantics §2.3): Apple's shouldRefreshRefetchedObjects leaves loaded objects as they
        // are (FB7419788, the default `.coreData`); only the documented way refreshes them.
        let refreshes = request.shouldRefreshRefetchedObjects && request.refetchedObjectsRefresh == .documented
        // A fault of a top-level context keeps the row its fetch installed, for as long as the cache keeps it
        // unchanged (ManagedObjectContext.cachedFetchedRow). Decided once: `parent` retains a context per read.
        let keepsFetchedRows = parent == nil && request.returnsObjectsAsFaults
        result.reserveCapacity(entries.count)
        let prepared = registry.prepareForInserting(entries.count)
        // Each entry is read in place: a copy of it would retain and release its row's values, a cache miss per
        // row once a large fetch's rows have left the caches.
        for i in entries.indices {
            let id = entries[i].id
            if let existing = registry[id] {
                if refreshes, !existing.isFaultFlag, !existing.isInsertedFlag, !existing.isDeletedFlag,
                   entries[i].row.map({ $0.version != existing.snapshotVersion }) ?? true {
                    refetched.append(existing)
                }
                // Rule 11 (semantics §4): returnsObjectsAsFaults = false materializes what it returns,
                // registered faults included, from the row it read; loaded objects stay as they are.
                if existing.isFaultFlag, !request.returnsObjectsAsFaults, let row = entries[i].row.take() {
                    existing.faultBatch = nil
                    existing.fill(from: row)
                    existing.awakeFromFetch()
                }
                result.append(existing)
                if entries[i].retained { releases.append(id) }
                continue
            }
            let entity = id.entity
            let object = entity.managedObjectClass.init(entity: entity, insertInto: nil)
            object.objectID = id
            object.becomeNewFault()
            if let cache, !id.isTemporaryID {
                if !entries[i].retained { cache.retain(id) }
                object.cacheReference = cache
                if keepsFetchedRows, entries[i].cachedAt != 0, let row = entries[i].row.take() {
                    object.fetchedRow = (row, entries[i].cachedAt)
                }
            } else if entries[i].retained {
                releases.append(id)
            }
            register(object)
            if !request.returnsObjectsAsFaults, let row = entries[i].row.take() {
                object.fill(from: row)
                object.awakeFromFetch()
            }
            result.append(object)
        }
        registry.finishInserting(prepared: prepared)
        if let cache = persistentStoreCoordinator?.rowCache, !releases.isEmpty { cache.release(releases) }
        if !refetched.isEmpty { refreshRefetched(refetched) }
        return result
    }

    /// `shouldRefreshRefetchedObjects` as documented (Rule 21.6): each loaded object whose row changed
    /// takes the row the fetch just put in the row cache (never older than the one the object has), keeping its
    /// unsaved changes and transient values, as `refresh(_:mergeChanges: true)` does (semantics §3.2); one
    /// objects-did-change lists them as refreshed.
    private func refreshRefetched(_ objects: [ManagedObject]) {
        var refreshed = Set<ManagedObject>()
        for object in objects {
            let version = object.snapshotVersion
            refresh(object, mergeChanges: true)
            if object.snapshotVersion != version { refreshed.insert(object) }
        }
        postObjectsDidChange(inserted: [], updated: [], deleted: [], refreshed: refreshed)
    }

    /// Loads the destinations of `keyPaths` for `objects` with one query per key path (semantics §4
    /// `relationshipKeyPathsForPrefetching`).
    private func prefetch(_ keyPaths: [String], for objects: [ManagedObject], entity: EntityDescription) throws {
        guard parent == nil, let coordinator = persistentStoreCoordinator else { return }
        for keyPath in keyPaths {
            let key = String(keyPath.split(separator: ".").first ?? "")
            switch entity.propertiesByName[key] {
            case .toOne(let slot)?:
                // Register and hold the destinations first, so the rows fetched next stay in the cache.
                var faults: [ManagedObject] = []
                for object in objects {
                    try fulfillFault(object)
                    guard case .objectID(let id) = object.values[slot] else { continue }
                    let destination = self.object(with: id)
                    object.hold(one: destination, at: slot)
                    if destination.isFaultFlag { faults.append(destination) }
                }
                let rows = try coordinator.rows(for: faults.map(\.objectID), generation: try readGeneration())
                for destination in faults {
                    if let row = rows[destination.objectID] {
                        destination.fill(from: row)
                        destination.awakeFromFetch()
                    }
                }
            case .toMany(let index)?:
                let relationship = entity.toManyRelationships[index]
                guard let destination = entity.destinationEntity(ofRelationship: key),
                      let inverseSlot = destination.slotIndex(of: relationship.inverseName) else { continue }
                let sources = objects.filter { $0.toMany.count > index && $0.toMany[index] == nil && !$0.objectID.isTemporaryID }
                guard !sources.isEmpty else { continue }
                var request = FetchRequest(entityName: destination.name)
                request.predicate = .in(relationship.inverseName, sources.map(\.objectID))
                var entries = try coordinator.fetchRows(request, entity: destination, idsOnly: false, generation: try readGeneration())
                var bySource: [ManagedObjectID: Set<ManagedObjectID>] = [:]
                for i in entries.indices {
                    if case .objectID(let owner)? = entries[i].row?.values[inverseSlot] { bySource[owner, default: []].insert(entries[i].id) }
                }
                var materialize = FetchRequest(entityName: destination.name)
                materialize.returnsObjectsAsFaults = false
                let members = self.objects(for: &entries, request: materialize)
                let byID = Dictionary(members.map { ($0.objectID, $0) }, uniquingKeysWith: { a, _ in a })
                for source in sources {
                    let ids = bySource[source.objectID] ?? []
                    if relationship.isOrdered {
                        // §12.2: the rows carry no place; each owner's order is one query of its order column.
                        source.installToMany(index, storedOrder: try coordinator.relatedIDs(of: source.objectID, relationship: relationship, generation: try readGeneration()))
                    } else {
                        source.installToMany(index, stored: ids)
                    }
                    source.hold(many: ids.compactMap { byID[$0] }, at: ManagedObject.heldToManyOffset + index)
                }
            default:
                throw ObjectGraphError(.invalidFetchRequest, "relationshipKeyPathsForPrefetching names \(keyPath), which is not a relationship", entity: entity.name, property: keyPath)
            }
        }
    }
}
