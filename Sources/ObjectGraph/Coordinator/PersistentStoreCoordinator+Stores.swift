import Foundation
import Synchronization

/// A store a coordinator holds beside others, or with a configuration: the entities its configuration holds, and
/// its read connections (Docs/coredata-behaviour.md §14.2).
final class AddedStore: @unchecked Sendable {  // immutable; `store` is used on the coordinator's queue, `readers` by its own lock
    let store: any PersistentStore
    /// Whether this is the coordinator's first store (its ``PersistentStoreCoordinator/store``): reads go through
    /// the coordinator's own read path, and a query generation is this store's.
    let isFirst: Bool
    /// The configuration the store was added with; nil holds every entity.
    let configuration: String?
    /// The store's number as an object ID carries it (without its coordinator's tag).
    let number: UInt32
    let readers: SQLiteReaderPool?
    /// Whether the store holds entity number n, at index n; nil: every entity.
    private let held: [Bool]?

    init(_ store: any PersistentStore, isFirst: Bool, configuration: String?, model: ManagedObjectModel, readers: SQLiteReaderPool?) {
        self.store = store
        self.isFirst = isFirst
        self.configuration = configuration
        self.number = store.storeNumber & StoreRegistry.numberMask
        self.readers = readers
        if let configuration, let entities = model.entities(forConfigurationName: configuration) {
            var held = [Bool](repeating: false, count: model.entities.count + 1)
            for entity in entities { held[entity.entityNumber] = true }
            self.held = held
        } else {
            self.held = nil
        }
    }

    /// Whether the store's configuration holds `entity` (§14.1: exactly the entities it lists).
    func holds(_ entity: EntityDescription) -> Bool {
        guard let held else { return true }
        return entity.entityNumber < held.count && held[entity.entityNumber]
    }

    /// Whether a fetch of `entity` may find rows here: the store holds it or, when the fetch includes them, one of
    /// its sub-entities.
    func mayHoldRows(of entity: EntityDescription, includingSubentities: Bool) -> Bool {
        if holds(entity) { return true }
        guard includingSubentities else { return false }
        return entity.subentities.contains { mayHoldRows(of: $0, includingSubentities: true) }
    }

    var summary: PersistentStoreInfo {
        PersistentStoreInfo(identifier: store.identifier, url: store.url, type: store.type, configurationName: configuration)
    }
}

/// A store of a coordinator as ``PersistentStoreCoordinator/persistentStores`` lists it (`NSPersistentStore`'s
/// identity: its identifier, file, type and configuration).
public struct PersistentStoreInfo: Sendable, Hashable {
    /// The store's identifier (a UUID kept in its metadata), as its object IDs' ``ManagedObjectID/storeIdentifier``.
    public var identifier: String
    /// The store's file, nil for in-memory.
    public var url: URL?
    /// SQLite or in-memory.
    public var type: PersistentStoreType
    /// The configuration the store was added with, nil for every entity (`configurationName`, Core Data's `Default`).
    public var configurationName: String?
}

extension PersistentStoreCoordinator {
    /// Whether requests are routed to the stores by configuration (a store added with a configuration, or several
    /// stores); false for one store added without one, whose requests take the single-store path.
    var routesRequests: Bool { routing.load(ordering: .acquiring) }

    /// The stores, in the order added (`persistentStores`).
    public var persistentStores: [PersistentStoreInfo] {
        queue.sync {
            guard routesRequests else {
                return store.map { [PersistentStoreInfo(identifier: $0.identifier, url: $0.url, type: $0.type, configurationName: nil)] } ?? []
            }
            return routedStores.withLock { $0 }.map(\.summary)
        }
    }

    /// Opens a store beside the first (called on the coordinator's queue). Its rows get object IDs of its own store
    /// number; it has a writer connection and, SQLite in WAL mode, read connections of its own; the row cache is
    /// the coordinator's, keyed by object IDs that name their store.
    func addAnotherStore(type: PersistentStoreType, configuration: String?, at url: URL?, options: StoreOptions) throws {
        let opened: any PersistentStore
        switch type {
        case .sqlite:
            guard let url else { throw ObjectGraphError(.persistentStoreOpen, "an SQLite store needs a file URL") }
            let path = url.standardizedFileURL.path
            let others = routesRequests ? routedStores.withLock { $0 }.map(\.store) : [store].compactMap { $0 }
            if others.contains(where: { $0.url?.standardizedFileURL.path == path }) {
                throw ObjectGraphError(.persistentStoreOpen, "the coordinator already has the store at this file", storePath: url.path)
            }
            // §13.5: external values live in `.<name>_SUPPORT` beside the file, named without the extension; two stores
            // sharing it would each sweep the other's files as orphans.
            let support = SQLiteExternalData(storeURL: url).directory.standardizedFileURL.path
            if others.contains(where: { other in other.url.map { SQLiteExternalData(storeURL: $0).directory.standardizedFileURL.path == support } ?? false }) {
                throw ObjectGraphError(.persistentStoreOpen, "another store of the coordinator has the same name without its extension, and so the same external data folder",
                                       storePath: url.path)
            }
            let sqlite = try SQLiteStore(url: url, model: managedObjectModel, options: options, coordinatorTag: idTag)
            sqlite.readerPool?.capacityChanged(to: connectionPoolSize - 1)
            opened = sqlite
        case .inMemory:
            opened = InMemoryStore(model: managedObjectModel, coordinatorTag: idTag)
        }
        let model = managedObjectModel, first = store!, firstReaders = readerPool
        routedStores.withLock { list in
            if list.isEmpty { list = [AddedStore(first, isFirst: true, configuration: nil, model: model, readers: firstReaders)] }
            list.append(AddedStore(opened, isFirst: false, configuration: configuration, model: model, readers: (opened as? SQLiteStore)?.readerPool))
        }
        routing.store(true, ordering: .releasing)
    }

    /// The stores of a routed coordinator, in the order added.
    var addedStores: [AddedStore] { routedStores.withLock { $0 } }

    /// The store whose object IDs carry `id`'s store number.
    func addedStore(holding id: ManagedObjectID) throws -> AddedStore {
        let number = id.storeNumber
        guard let found = addedStores.first(where: { $0.number == number }) else {
            throw ObjectGraphError(.persistentStoreOperation, "no store of the coordinator holds \(id)", entity: id.entity.name, objectID: id)
        }
        return found
    }

    /// The store a new object of `entity` goes to: the first, in the order added, whose configuration holds it
    /// (§14.2, as Core Data assigns an insert when only configurations decide).
    func addedStore(forNew entity: EntityDescription) -> AddedStore? {
        addedStores.first { $0.holds(entity) }
    }

    /// §14.4: an object whose entity no store's configuration holds cannot be saved.
    static func noStoreError(for id: ManagedObjectID, in stores: [AddedStore]) -> ObjectGraphError {
        let names = stores.map { $0.configuration ?? "Default" }.joined(separator: ", ")
        return ObjectGraphError(.persistentStoreSave, "no store of the coordinator holds entity \(id.entity.name): no configuration of its stores (\(names)) lists it",
                                entity: id.entity.name, objectID: id)
    }

    /// Runs a read with `added`'s store: the first store as ``readStore(_:)`` reads it; another on one of its own
    /// read connections (a pool of more than one, off the coordinator's queue), else on the coordinator's queue.
    func read<T>(from added: AddedStore, _ body: (any PersistentStore) throws -> T) throws -> T {
        if added.isFirst { return try readStore(body) }
        let pool = connectionPoolSize
        if pool > 1, !queue.isCurrent, let readers = added.readers {
            func read() throws -> T? { try readers.withReader(capacity: pool - 1, body) }
            if let result = Execution.isSimulated ? try Execution.pooled(readerLanes, capacity: pool - 1, read) : try read() {
                return result
            }
        }
        return try queue.sync { try body(added.store) }
    }

    /// A read in `generation` of the store holding `id` (a generation is the first store's: a pinned context of a
    /// coordinator with one store).
    func read<T>(in generation: StoreGeneration?, holding id: ManagedObjectID, _ body: (any PersistentStore) throws -> T) throws -> T {
        guard routesRequests else { return try read(in: generation, body) }
        return try read(in: generation, from: try addedStore(holding: id), body)
    }

    /// Runs `body` on the coordinator's queue with the store holding `id`.
    func withStore<T>(holding id: ManagedObjectID, _ body: (any PersistentStore) throws -> T) throws -> T {
        guard routesRequests else { return try withStore(body) }
        let added = try addedStore(holding: id)
        return try queue.sync { try body(added.store) }
    }

    /// Permanent IDs for new objects of `entities`, in order, each from the store it goes to (`obtainPermanentIDs`):
    /// the store number `assigned` gives it (empty: none assigned), else its entity's first store.
    func allocateKeys(for entities: [EntityDescription], assigned: [UInt32?] = []) throws -> [ManagedObjectID] {
        guard routesRequests else { return try withStore { try $0.allocateKeys(for: entities) } }
        let stores = addedStores
        var ids = [ManagedObjectID?](repeating: nil, count: entities.count)
        func goes(_ n: Int, to added: AddedStore) -> Bool {
            if n < assigned.count, let number = assigned[n] { return number == added.number }
            return added.holds(entities[n])
        }
        for added in stores {
            let mine = entities.indices.filter { ids[$0] == nil && goes($0, to: added) }
            guard !mine.isEmpty else { continue }
            let keys = try queue.sync { try added.store.allocateKeys(for: mine.map { entities[$0] }) }
            for (n, id) in zip(mine, keys) { ids[n] = id }
        }
        return try entities.indices.map { n in
            guard let id = ids[n] else { throw Self.noStoreError(for: .temporary(entities[n]), in: stores) }
            return id
        }
    }

    /// The stores a fetch of `entity` reads, in the order added.
    func stores(fetching entity: EntityDescription, includesSubentities: Bool) -> [AddedStore] {
        addedStores.filter { $0.mayHoldRows(of: entity, includingSubentities: includesSubentities) }
    }
}

// MARK: - Requests across stores

extension PersistentStoreCoordinator {
    /// A read of `added` in `generation` (a generation is the first store's).
    func read<T>(in generation: StoreGeneration?, from added: AddedStore, _ body: (any PersistentStore) throws -> T) throws -> T {
        if let generation, added.isFirst { return try readPinned(generation, body) }
        return try read(from: added, body)
    }

    /// A fetch of a routed coordinator (Docs/coredata-behaviour.md §14.2): every store that may hold rows of the
    /// entity, in the order added; with several, their rows merged in the request's sort order (the stores' order,
    /// then each store's, without one), the offset and limit applied to the merged rows.
    func fetchRowsOfStores(_ request: FetchRequest, entity: EntityDescription, idsOnly: Bool, generation: StoreGeneration?) throws -> [FetchEntry] {
        let stores = stores(fetching: entity, includesSubentities: request.includesSubentities)
        guard stores.count > 1 else {
            // §14.4: an entity no store holds has no rows.
            guard let only = stores.first else {
                try StoreRowSubject.checkKeys(of: request, in: entity)
                return []
            }
            guard !idsOnly, generation == nil || !only.isFirst else {
                return try fetchRows(request, entity: entity, idsOnly: idsOnly, snapshot: 0, generation: generation, from: only)
            }
            return try rowCache.reading { try fetchRows(request, entity: entity, idsOnly: idsOnly, snapshot: $0, generation: nil, from: only) }
        }
        var each = request
        each.fetchOffset = 0
        each.fetchLimit = request.fetchLimit > 0 ? request.fetchLimit + request.fetchOffset : 0
        let sorts = request.sortDescriptors
        let storeFetch = StoreFetch(
            entity: entity, predicate: each.predicate, sortDescriptors: sorts, limit: each.fetchLimit, offset: 0,
            idsOnly: idsOnly && sorts.isEmpty, includesSubentities: request.includesSubentities)
        return try rowCache.reading { snapshot in
            var merged: [(entry: FetchEntry, keys: [PropertyValue])] = []
            for added in stores {
                merged += try read(from: added) { store in
                    let entries = try Self.entries(of: storeFetch, request: each, entity: entity, in: store)
                    guard !sorts.isEmpty else { return entries.map { ($0, []) } }
                    let resolver = StoreRowResolver(store: store)
                    return try entries.map { entry in
                        guard let row = entry.row else { return (entry, []) }
                        let subject = StoreRowSubject(id: entry.id, row: row, resolver: resolver, as: entity)
                        return (entry, try sorts.map { try subject.sortValue($0.key) })
                    }
                }
            }
            if !sorts.isEmpty {
                // Stable: rows that compare equal keep the stores' order, then each store's.
                merged = merged.enumerated().sorted { a, b in
                    if SortOrdering.precedes(a.element.keys, b.element.keys, sorts) { return true }
                    if SortOrdering.precedes(b.element.keys, a.element.keys, sorts) { return false }
                    return a.offset < b.offset
                }.map(\.element)
            }
            var slice = merged[...]
            if request.fetchOffset > 0 { slice = slice.dropFirst(request.fetchOffset) }
            if request.fetchLimit > 0 { slice = slice.prefix(request.fetchLimit) }
            var result = slice.map { FetchEntry(id: $0.entry.id, row: idsOnly ? nil : $0.entry.row, retained: !idsOnly) }
            Probe.count(.rowsFetched(self, result.count, idsOnly: idsOnly))
            if !idsOnly { rowCache.installRetaining(&result, snapshot: snapshot) }
            return result
        }
    }

    /// A count of a routed coordinator: the sum of each store's count, then the request's offset and limit.
    func countRowsOfStores(_ request: FetchRequest, entity: EntityDescription, generation: StoreGeneration?) throws -> Int {
        var unlimited = request
        (unlimited.fetchLimit, unlimited.fetchOffset, unlimited.sortDescriptors) = (0, 0, [])
        let storeFetch = StoreFetch(entity: entity, predicate: request.predicate, sortDescriptors: [], limit: 0, offset: 0,
                                    idsOnly: true, includesSubentities: request.includesSubentities)
        var total = 0
        for added in stores(fetching: entity, includesSubentities: request.includesSubentities) {
            if let n = try read(in: generation, from: added, { try $0.countIfEvaluable(storeFetch) }) {
                total += n
            } else {
                total += try fetchRows(unlimited, entity: entity, idsOnly: true, snapshot: 0, generation: generation, from: added).count
            }
        }
        var n = max(0, total - request.fetchOffset)
        if request.fetchLimit > 0 { n = min(n, request.fetchLimit) }
        return n
    }

    /// `group` split by the store holding each ID, by store number.
    func storeGroups(_ group: [ManagedObjectID]) -> [[ManagedObjectID]] {
        guard let first = group.first, group.contains(where: { $0.storeNumber != first.storeNumber }) else { return [group] }
        return Dictionary(grouping: group, by: \.storeNumber).sorted { $0.key < $1.key }.map(\.value)
    }

    /// Writes a save of a routed coordinator (Docs/coredata-behaviour.md §14.3): the request split by store (a new
    /// object to its entity's first store, the others to the store of their ID), a relationship between objects of
    /// two stores refused, then each store's part in its own transaction, in the order the stores were added.
    /// Versions are checked in every store before any writes, so a conflict commits nothing; a store that fails
    /// after another committed leaves that commit in place (not atomic across stores) and fails the save.
    func writeToStores(_ request: SaveRequest) throws -> (outcome: StoreSaveOutcome, token: PersistentHistoryToken?, orderRows: Int) {
        let stores = addedStores
        func index(writing id: ManagedObjectID) throws -> Int {
            if id.isTemporaryID, let number = request.assignedStores[id], let i = stores.firstIndex(where: { $0.number == number }) {
                return i
            }
            if id.isTemporaryID {
                guard let i = stores.firstIndex(where: { $0.holds(id.entity) }) else { throw Self.noStoreError(for: id, in: stores) }
                return i
            }
            guard let i = stores.firstIndex(where: { $0.number == id.storeNumber }) else {
                throw ObjectGraphError(.persistentStoreSave, "no store of the coordinator holds \(id)", entity: id.entity.name, objectID: id)
            }
            return i
        }
        var parts = [SaveRequest](repeating: SaveRequest(author: request.author, contextName: request.contextName,
                                                         checkVersionsOnly: request.checkVersionsOnly), count: stores.count)
        var insertPlaces = [[Int]](repeating: [], count: stores.count)
        for (n, insert) in request.inserts.enumerated() {
            let i = try index(writing: insert.id)
            try Self.refuseCrossStore(insert.id, insert.values, in: i, index: index)
            parts[i].inserts.append(insert)
            insertPlaces[i].append(n)
        }
        for update in request.updates {
            let i = try index(writing: update.id)
            try Self.refuseCrossStore(update.id, update.values, in: i, index: index)
            parts[i].updates.append(update)
        }
        for delete in request.deletes { parts[try index(writing: delete.id)].deletes.append(delete) }
        for locked in request.locked { parts[try index(writing: locked.id)].locked.append(locked) }
        for change in request.joinChanges {
            let i = try index(writing: change.source)
            if change.isInsert, try index(writing: change.destination) != i {
                throw Self.crossStoreError(change.source, change.relationship.name, change.destination)
            }
            parts[i].joinChanges.append(change)
        }
        for change in request.orderChanges {
            let i = try index(writing: change.source)
            if let member = try change.members.first(where: { try index(writing: $0) != i }) {
                throw Self.crossStoreError(change.source, change.relationship.name, member)
            }
            parts[i].orderChanges.append(change)
        }
        let working = parts.indices.filter { !parts[$0].isEmpty }
        // One turn of the coordinator's queue for the checks and the writes: no other save lands between them, so a
        // version conflict is found before any store commits (§14.3).
        return try queue.sync {
            if request.checkVersionsOnly || working.count > 1 {
                var conflicts: [StoreVersionConflict] = []
                for i in working {
                    var check = parts[i]
                    check.checkVersionsOnly = true
                    if case .versionConflicts(let found) = try stores[i].store.save(check) { conflicts += found }
                }
                if !conflicts.isEmpty { return (.versionConflicts(conflicts), nil, 0) }
                if request.checkVersionsOnly { return (.committed(newIDs: [:], insertIDs: []), nil, 0) }
            }
            var newIDs: [ManagedObjectID: ManagedObjectID] = [:]
            var insertIDs = request.inserts.map(\.id)
            var token: PersistentHistoryToken?
            var committed: [AddedStore] = []
            var orderRows = 0
            for i in working {
                let added = stores[i]
                let outcome: StoreSaveOutcome
                do { outcome = try added.store.save(parts[i]) } catch {
                    if committed.isEmpty { throw error }
                    throw Self.partialSaveError(committed: committed, failed: added, "\(error)")
                }
                switch outcome {
                case .committed(let ids, let keys):
                    newIDs.merge(ids) { a, _ in a }
                    for (k, n) in insertPlaces[i].enumerated() {
                        let id = request.inserts[n].id
                        insertIDs[n] = k < keys.count ? keys[k] : (ids[id] ?? id)
                    }
                    // §14.2: history and remote-change notifications are the first store's.
                    if added.isFirst { token = added.store.lastHistoryToken }
                    orderRows += parts[i].orderChanges.isEmpty ? 0 : added.store.orderRowsWritten
                    committed.append(added)
                case .versionConflicts, .constraintViolations:
                    if committed.isEmpty { return (outcome, nil, 0) }
                    throw Self.partialSaveError(committed: committed, failed: added, "its rows conflict with the store's")
                }
            }
            return (.committed(newIDs: newIDs, insertIDs: insertIDs), token, orderRows)
        }
    }

    /// §14.3: Core Data does not relate objects of different stores; a to-one reference from a row to an object of
    /// another store fails the save naming the entity, the object and the relationship.
    private static func refuseCrossStore(_ id: ManagedObjectID, _ values: [PropertyValue], in store: Int,
                                         index: (ManagedObjectID) throws -> Int) throws {
        let entity = id.entity
        for (slot, destination) in entity.slotDestinations.enumerated() where destination != nil {
            guard case .objectID(let target) = values[slot], try index(target) != store,
                  case .toOne(let relationship) = entity.slots[slot] else { continue }
            throw crossStoreError(id, relationship.name, target)
        }
    }

    private static func crossStoreError(_ id: ManagedObjectID, _ relationship: String, _ target: ManagedObjectID) -> ObjectGraphError {
        ObjectGraphError(.externalRelationship, "relationship \(relationship) of \(id.entity.name) \(id) reaches \(target.entity.name) \(target) in another store: objects of different stores cannot be related",
                         entity: id.entity.name, objectID: id, property: relationship)
    }

    private static func partialSaveError(committed: [AddedStore], failed: AddedStore, _ reason: String) -> ObjectGraphError {
        let names = committed.map { $0.store.url?.lastPathComponent ?? $0.store.identifier }.joined(separator: ", ")
        return ObjectGraphError(.persistentStoreSave, "the save committed to \(names), then failed in \(failed.store.url?.lastPathComponent ?? failed.store.identifier): \(reason); a save across stores is not atomic",
                                storePath: failed.store.url?.path)
    }
}

extension ManagedObjectContext {
    /// Saves `object`, inserted in this context, to `store` rather than to the first store whose configuration
    /// holds its entity (`assign(_:to:)`, Docs/coredata-behaviour.md §14.2). Needed only when several stores hold
    /// the entity. A root context's assignment holds until the save that writes the object.
    ///
    /// - Precondition: `object` is a new object of this root context; `store` is one of its coordinator's
    ///   ``PersistentStoreCoordinator/persistentStores`` and its configuration holds the object's entity.
    public func assign(_ object: ManagedObject, to store: PersistentStoreInfo) {
        assertOnQueue()
        precondition(parent == nil && object.managedObjectContext === self && object.objectID.isTemporaryID,
                     "assign(_:to:) takes a new object of a context whose parent is a coordinator")
        guard let coordinator = persistentStoreCoordinator else { preconditionFailure("assign(_:to:) needs a coordinator") }
        let identifier = store.identifier
        let target: AddedStore? = coordinator.routesRequests
            ? coordinator.addedStores.first { $0.store.identifier == identifier }
            : nil
        // One store without a configuration holds every entity: the assignment changes nothing.
        guard let target else {
            precondition(coordinator.storeIdentifier == identifier, "assign(_:to:): the store is not one of the coordinator's")
            return
        }
        precondition(target.holds(object.entity), "assign(_:to:): the store's configuration does not hold \(object.entity.name)")
        assignedStores[object.objectID] = target.number
    }
}
