import Foundation

/// A row-level layer-1 conflict (semantics §1.1: context snapshot vs the coordinator's row cache) or layer-2
/// conflict (row cache vs database), before the context turns it into a ``MergeConflict``.
struct VersionConflictRecord {
    var id: ManagedObjectID
    var oldVersion: Int64
    var newVersion: Int64
    /// The row cache's row (layer 1: the newer row; layer 2: the row the cache held).
    var cachedRow: RowSnapshot?
    /// Layer 2 only: the database row, nil when deleted.
    var databaseRow: RowSnapshot?
    var isDatabaseLayer: Bool
}

enum CoordinatorSaveOutcome {
    /// `savedRows`: the references taken on the written rows for the did-save notification (``SaveReferences``).
    case committed(newIDs: [ManagedObjectID: ManagedObjectID], historyToken: PersistentHistoryToken?, savedRows: SaveReferences?)
    case versionConflicts([VersionConflictRecord])
    case constraintViolations([StoreConstraintViolation])
}

extension PersistentStoreCoordinator {
    // MARK: Reading

    /// Runs a fetch in the store. Rows come back installed in the row cache, each with one reference the
    /// caller adopts or releases (``FetchEntry/retained``). The entries are built here as a context's fetch takes
    /// them, not as pairs that the context mapped to entries again (an array and a copy of every row less).
    /// `generation`: a pinned context's (Docs/coredata-behaviour.md §3.7): the rows come from it, and the cache only takes the
    /// references (its rows may be older than the cache's; another context must not fault them in).
    func fetchRows(_ request: FetchRequest, entity: EntityDescription, idsOnly: Bool, generation: StoreGeneration? = nil) throws -> [FetchEntry] {
        if routesRequests { return try fetchRowsOfStores(request, entity: entity, idsOnly: idsOnly, generation: generation) }
        // Docs/coredata-behaviour.md §8: rows read on a read connection are installed with the generation the read began at. A
        // fetch of IDs only, or one in a pinned generation, installs nothing: it takes no snapshot.
        guard !idsOnly, generation == nil else {
            return try fetchRows(request, entity: entity, idsOnly: idsOnly, snapshot: 0, generation: generation)
        }
        return try rowCache.reading { try fetchRows(request, entity: entity, idsOnly: idsOnly, snapshot: $0, generation: generation) }
    }

    func fetchRows(_ request: FetchRequest, entity: EntityDescription, idsOnly: Bool, snapshot: UInt64,
                   generation: StoreGeneration?, from added: AddedStore? = nil) throws -> [FetchEntry] {
        let storeFetch = StoreFetch(
            entity: entity, predicate: request.predicate, sortDescriptors: request.sortDescriptors,
            limit: request.fetchLimit, offset: request.fetchOffset, idsOnly: idsOnly,
            includesSubentities: request.includesSubentities)
        func entries(_ store: any PersistentStore) throws -> [FetchEntry] {
            try Self.entries(of: storeFetch, request: request, entity: entity, in: store)
        }
        var result: [FetchEntry]
        if let added, generation == nil || !added.isFirst { result = try read(from: added, entries) } else { result = try read(in: generation, entries) }
        // A fetch of IDs only steps Z_PK (and Z_ENT) and makes IDs: no values decoded, no snapshot
        // (Docs/coredata-behaviour.md §4).
        Probe.count(.rowsFetched(self, result.count, idsOnly: idsOnly))
        if !idsOnly {
            if generation != nil {
                rowCache.retain(result.lazy.filter { $0.row != nil }.map(\.id))
            } else {
                rowCache.installRetaining(&result, snapshot: snapshot)
            }
        }
        return result
    }

    /// The entries of `storeFetch` in `store`: the store's own when it can evaluate the fetch, else filtered, sorted
    /// and sliced here from every row of the entity.
    static func entries(of storeFetch: StoreFetch, request: FetchRequest, entity: EntityDescription, in store: any PersistentStore) throws -> [FetchEntry] {
        let idsOnly = storeFetch.idsOnly
        if let entries = try store.fetchEntriesIfEvaluable(storeFetch) { return entries }
        // The store cannot filter or order this fetch: take every row of the entity (and of its sub-entities
        // when included) and do it here, its keys checked first as a translation would.
        try StoreRowSubject.checkKeys(of: request, in: entity)
        var all = StoreFetch(entity: entity, predicate: nil, sortDescriptors: [], limit: 0, offset: 0, idsOnly: false,
                             includesSubentities: request.includesSubentities)
        all.idsOnly = false
        var rows = try store.identifiedRows(all).map { ($0.id, $0.row!) }
        let resolver = StoreRowResolver(store: store)
        if let predicate = request.predicate {
            rows = try rows.filter { try predicate.evaluate(subject: StoreRowSubject(id: $0.0, row: $0.1, resolver: resolver, as: entity)) }
        }
        if !request.sortDescriptors.isEmpty {
            let keyed = try rows.map { row in
                (row, try request.sortDescriptors.map { try StoreRowSubject(id: row.0, row: row.1, resolver: resolver, as: entity).sortValue($0.key) })
            }
            rows = keyed.sorted { SortOrdering.precedes($0.1, $1.1, request.sortDescriptors) }.map(\.0)
        }
        var slice = rows[...]
        if storeFetch.offset > 0 { slice = slice.dropFirst(storeFetch.offset) }
        if storeFetch.limit > 0 { slice = slice.prefix(storeFetch.limit) }
        return slice.map { FetchEntry(id: $0.0, row: idsOnly ? nil : $0.1, retained: !idsOnly) }
    }

    func countRows(_ request: FetchRequest, entity: EntityDescription, generation: StoreGeneration? = nil) throws -> Int {
        if routesRequests { return try countRowsOfStores(request, entity: entity, generation: generation) }
        let storeFetch = StoreFetch(
            entity: entity, predicate: request.predicate, sortDescriptors: [], limit: request.fetchLimit,
            offset: request.fetchOffset, idsOnly: true, includesSubentities: request.includesSubentities)
        if let n = try read(in: generation, { try $0.countIfEvaluable(storeFetch) }) { return n }
        // A count has no order (as the store's own count ignores the sort, so does this one: not checked, not run).
        var unsorted = request
        unsorted.sortDescriptors = []
        let rows = try fetchRows(unsorted, entity: entity, idsOnly: true, generation: generation)
        return rows.count
    }

    /// The row of one object for a fault: from the row cache when fresh enough, else from the store.
    /// nil when the row does not exist.
    /// With a pinned context's `generation`, the row comes from the generation, never from the cache (which may
    /// hold a newer one), and is not cached (Docs/coredata-behaviour.md §3.7).
    func row(for id: ManagedObjectID, staleness: TimeInterval, generation: StoreGeneration? = nil) throws -> RowSnapshot? {
        if let generation {
            Probe.count(.rowCacheMisses(self, 1))
            guard let row = try read(in: generation, holding: id, { try $0.rows(of: id.entity, keys: [id.key]) })[id.key] else { return nil }
            Probe.count(.faultRowRead(self, inMemory: false))
            return row
        }
        switch rowCache.lookup(id, staleness: staleness) {
        case .fresh(let row):
            Probe.count(.rowCacheHit(self))
            return row
        case .deleted:
            Probe.count(.rowCacheHit(self))
            return nil
        case .miss:
            Probe.count(.rowCacheMisses(self, 1))
            return try rowCache.reading { snapshot in
                let (rows, inMemory) = try read(in: nil, holding: id) { (try $0.rows(of: id.entity, keys: [id.key]), $0.type == .inMemory) }
                // core-data-rules.md Rule 27: a row read (and a fault fulfilled from the store) only when the store has the row.
                guard let row = rows[id.key] else { return nil }
                // Semantics §7 "The in-memory store": a row in memory is copied without a query, as from the cache
                // (the store counted its inMemoryRowRead); an SQLite store's is a SELECT.
                Probe.count(.faultRowRead(self, inMemory: inMemory))
                rowCache.install([(id, row)], retain: false, snapshot: snapshot)
                return row
            }
        }
    }

    /// Whether a fault's row would come from the row cache, with no store trip (``row(for:staleness:generation:)``
    /// unpinned: fresh, or known deleted). Counts nothing.
    func cachesRow(for id: ManagedObjectID, staleness: TimeInterval) -> Bool {
        if case .miss = rowCache.lookup(id, staleness: staleness) { return false }
        return true
    }

    /// Rows of several objects in one query per entity (batch faulting, prefetching). Installs them in the
    /// cache without references.
    func rows(for ids: [ManagedObjectID], generation: StoreGeneration? = nil) throws -> [ManagedObjectID: RowSnapshot] {
        try rowCache.reading { snapshot in
            var result: [ManagedObjectID: RowSnapshot] = [:]
            let byEntity = Dictionary(grouping: ids.filter { !$0.isTemporaryID }, by: { ObjectIdentifier($0.entity) })
            func read(_ group: [ManagedObjectID]) throws {
                let entity = group[0].entity
                let rows = try self.read(in: generation, holding: group[0]) { try $0.rows(of: entity, keys: group.map(\.key)) }
                for id in group { if let row = rows[id.key] { result[id] = row } }
            }
            for group in byEntity.values {
                if routesRequests { for part in storeGroups(group) { try read(part) } } else { try read(group) }
            }
            Probe.count(.rowsFetched(self, result.count, idsOnly: false, cacheMisses: ids.count))
            // A pinned context's rows stay out of the cache (Docs/coredata-behaviour.md §3.7).
            if generation == nil { rowCache.install(result.map { ($0.key, $0.value) }, retain: false, snapshot: snapshot) }
            return result
        }
    }

    /// Reads again from the store the rows among `ids` that the row cache holds, one query per entity, and
    /// caches them (keeping their references); rows gone from the store are forgotten so the next fault reads
    /// the store. What `mergeChanges(fromRemoteContextSave:into:)` needs to refresh objects past an older
    /// cached row (semantics §3.4; core-data-rules.md Rule 15).
    func reloadCachedRows(_ ids: Set<ManagedObjectID>) throws {
        let cached = rowCache.rows(among: ids).compactMap { id, row in row == nil || id.isTemporaryID ? nil : id }
        guard !cached.isEmpty else { return }
        let byEntity = Dictionary(grouping: cached, by: { ObjectIdentifier($0.entity) })
        // Entities in model order and keys ascending: the same statements on every run.
        for group in byEntity.values.sorted(by: { $0[0].entity.entityNumber < $1[0].entity.entityNumber }).flatMap({ routesRequests ? storeGroups($0) : [$0] }) {
            try rowCache.reading { try reload(group, snapshot: $0) }
        }
    }

    /// One entity's rows of ``reloadCachedRows(_:)``, read on the coordinator's queue and installed with `snapshot`.
    private func reload(_ group: [ManagedObjectID], snapshot: UInt64) throws {
        do {
            let entity = group[0].entity
            let rows = try withStore(holding: group[0]) { try $0.rows(of: entity, keys: group.map(\.key).sorted()) }
            var fresh: [(ManagedObjectID, RowSnapshot)] = []
            var gone: [ManagedObjectID] = []
            for id in group {
                if let row = rows[id.key] { fresh.append((id, row)) } else { gone.append(id) }
            }
            Probe.count(.rowsFetched(self, fresh.count, idsOnly: false))
            rowCache.install(fresh, retain: false, snapshot: snapshot)
            rowCache.invalidate(gone)
        }
    }

    /// The destinations of a to-many relationship in the store.
    func relatedIDs(of source: ManagedObjectID, relationship: RelationshipDescription, generation: StoreGeneration? = nil) throws -> [ManagedObjectID] {
        let ids = try read(in: generation, holding: source) { try $0.relatedKeys(of: source, relationship: relationship) }
        // The destinations' keys only: a to-many fault is a fetch of IDs.
        Probe.count(.rowsFetched(self, ids.count, idsOnly: true))
        return ids
    }

    // MARK: Saving

    /// Saves one request on the coordinator's queue: layer-1 check against the row cache, then the store's
    /// transaction with its layer-2 checks; on success the row cache takes the new rows (semantics §2.1 step 6).
    func save(_ request: SaveRequest) throws -> CoordinatorSaveOutcome {
        var request = request
        // Layer 1 (semantics §1.1): the version the object was loaded at vs the row cache.
        var conflicts: [VersionConflictRecord] = []
        func checkCache<S: Sequence>(_ expected: S) where S.Element == (ManagedObjectID, Int64) {
            for m in rowCache.versionMismatches(expected) {
                conflicts.append(VersionConflictRecord(
                    id: m.id, oldVersion: m.expected, newVersion: m.cached, cachedRow: m.row, databaseRow: nil,
                    isDatabaseLayer: false))
            }
        }
        // Semantics §1.4 (CDPG): deleting a row that is already gone is not a conflict.
        if !request.deletes.isEmpty { request.deletes.removeAll { rowCache.version(of: $0.id)?.version == 0 } }
        // Each list under one lock of the cache, in the order of the request.
        if !request.updates.isEmpty { checkCache(request.updates.lazy.map { ($0.id, $0.oldVersion) }) }
        if !request.deletes.isEmpty { checkCache(request.deletes.lazy.map { ($0.id, $0.oldVersion) }) }
        if !request.locked.isEmpty { checkCache(request.locked.lazy.map { ($0.id, $0.version) }) }
        if !conflicts.isEmpty {
            Probe.count(.conflictsFound(self, .cache, conflicts.count))
            return .versionConflicts(conflicts)
        }
        if request.isEmpty { return .committed(newIDs: [:], historyToken: nil, savedRows: nil) }
        if request.checkVersionsOnly {
            switch try routesRequests ? writeToStores(request).outcome : withStore({ try $0.save(request) }) {
            case .versionConflicts(let storeConflicts):
                return try save(SaveRequest(inserts: [], updates: [], deletes: [], joinChanges: [], locked: [], checkVersionsOnly: false), conflicts: storeConflicts)
            default:
                return .committed(newIDs: [:], historyToken: nil, savedRows: nil)
            }
        }

        let (outcome, token, orderRows) = try routesRequests ? writeToStores(request) : withStore { store in
            (try store.save(request), store.lastHistoryToken, request.orderChanges.isEmpty ? 0 : store.orderRowsWritten)
        }
        switch outcome {
        case .committed(let newIDs, let insertIDs):
            // Values keep their array (no copy) unless they refer to an object this save gave a permanent ID;
            // only temporary IDs can be keys of `newIDs`, so permanent references are never looked up.
            func remap(_ values: [PropertyValue]) -> [PropertyValue] {
                guard !newIDs.isEmpty, values.contains(where: { if case .objectID(let id) = $0 { id.isTemporaryID } else { false } }) else {
                    return values
                }
                return values.map { v in
                    if case .objectID(let id) = v, id.isTemporaryID, let n = newIDs[id] { return .objectID(n) }
                    return v
                }
            }
            // Each saved row also gains the reference of the did-save notification that will announce it
            // (core-data-rules.md Rule 32), in the same lookup as its install: ``SavedRows`` adopts them.
            var updatedIDs: [ManagedObjectID] = [], insertedIDs: [ManagedObjectID] = []
            if !request.updates.isEmpty {
                // Straight from the request, without an array of the new rows first.
                rowCache.install(request.updates.lazy.map { u in (u.id, RowSnapshot(values: remap(u.values), version: u.oldVersion + 1)) },
                                 count: request.updates.count, retain: false, holding: true)
                updatedIDs = request.updates.map(\.id)
            }
            if !request.inserts.isEmpty {
                var installs: [(ManagedObjectID, RowSnapshot)] = []
                installs.reserveCapacity(request.inserts.count)
                for (n, insert) in request.inserts.enumerated() {
                    let id = n < insertIDs.count ? insertIDs[n] : (newIDs[insert.id] ?? insert.id)
                    installs.append((id, RowSnapshot(values: remap(insert.values), version: 1)))
                }
                rowCache.install(installs, count: installs.count, retain: true, holding: true)
                insertedIDs = installs.map(\.0)
            }
            let taken = updatedIDs.isEmpty && insertedIDs.isEmpty ? nil : SaveReferences(cache: rowCache, inserted: insertedIDs, updated: updatedIDs)
            if !request.deletes.isEmpty { rowCache.markDeleted(request.deletes.map(\.id)) }
            count {
                $0.saves += 1
                $0.rowsInserted += request.inserts.count
                $0.rowsUpdated += request.updates.count + orderRows
                $0.rowsDeleted += request.deletes.count
            }

            postRemoteChange(token: token)
            return .committed(newIDs: newIDs, historyToken: token, savedRows: taken)
        case .versionConflicts(let storeConflicts):
            return try save(request, conflicts: storeConflicts)
        case .constraintViolations(let violations):
            rowCache.install(violations.map { ($0.databaseID, $0.databaseRow) }, retain: false)
            Probe.count(.conflictsFound(self, .constraint, violations.count))
            return .constraintViolations(violations)
        }
    }

    /// Layer-2 conflicts: the cache takes the database's rows, so that after resolution the retry passes layer 1.
    private func save(_ request: SaveRequest, conflicts storeConflicts: [StoreVersionConflict]) throws -> CoordinatorSaveOutcome {
        do {
            var records: [VersionConflictRecord] = []
            var fresh: [(ManagedObjectID, RowSnapshot)] = []
            var gone: [ManagedObjectID] = []
            for c in storeConflicts {
                let cached = rowCache.version(of: c.id)
                records.append(VersionConflictRecord(
                    id: c.id, oldVersion: c.expectedVersion, newVersion: c.databaseRow?.version ?? 0,
                    cachedRow: cached?.row, databaseRow: c.databaseRow, isDatabaseLayer: true))
                if let row = c.databaseRow { fresh.append((c.id, row)) } else { gone.append(c.id) }
            }
            rowCache.install(fresh, retain: false)
            rowCache.markDeleted(gone)
            Probe.count(.conflictsFound(self, .database, records.count))
            return .versionConflicts(records)
        }
    }
}

// MARK: - In-memory evaluation over store rows

/// Reads related rows from a store, on the coordinator's queue, for predicates the store cannot run itself.
struct StoreRowResolver {
    let store: any PersistentStore

    func row(_ id: ManagedObjectID) throws -> RowSnapshot? {
        try store.rows(of: id.entity, keys: [id.key])[id.key]
    }
}

struct StoreRowSubject: PredicateSubject {
    let id: ManagedObjectID
    let row: RowSnapshot
    let resolver: StoreRowResolver
    /// The entity whose properties the key path may name: the fetch's, or a relationship's destination, never
    /// the row's own sub-entity (Docs/coredata-behaviour.md §11.3: a parent's fetch only knows
    /// the parent's properties, as the SQLite store's translation does). Its slots are a prefix of the row's.
    let entity: EntityDescription

    init(id: ManagedObjectID, row: RowSnapshot, resolver: StoreRowResolver, as entity: EntityDescription? = nil) {
        (self.id, self.row, self.resolver, self.entity) = (id, row, resolver, entity ?? id.entity)
    }

    var selfValue: PropertyValue { .objectID(id) }

    func resolve(keyPath: [Substring]) throws -> KeyPathValue {
        try resolve(keyPath[...])
    }

    /// The property `key` names in `entity`; an invalid fetch request naming both when it has none.
    private static func property(_ key: Substring, of entity: EntityDescription) throws -> EntityDescription.PropertyRef {
        guard let ref = entity.propertiesByName[String(key)] else {
            throw ObjectGraphError(.invalidFetchRequest, "keypath \(key) not found in entity \(entity.name)", entity: entity.name, property: String(key))
        }
        return ref
    }

    /// Refuses, before any row is read, every key of the fetch's predicate and sort that ``resolve(keyPath:)`` would
    /// refuse for some row, so that the refusal does not depend on the rows the store holds
    /// (Docs/coredata-behaviour.md §11.3): with no row, or with rows a clause before it ruled out, a sub-entity's
    /// key on a parent's fetch was never looked up, and the pending-changes overlay then matched unsaved objects
    /// against their own entity. The SQLite store's translation refuses such keys whatever it holds.
    static func checkKeys(of request: FetchRequest, in entity: EntityDescription) throws {
        for path in request.predicate?.plainKeyPaths ?? [] { try checkKeyPath(path[...], in: entity) }
        for sort in request.sortDescriptors {
            try checkKeyPath(sort.key.split(separator: ".")[...], in: entity)
            try checkSortKey(sort.key, in: entity)
        }
    }

    /// Docs/coredata-behaviour.md §12.6: a sort needs one value per object, so a sort key that names or passes
    /// through a to-many relationship (an ordered one included: its order is not a sortable key) is refused, as
    /// Core Data refuses it ("to-many key not allowed here").
    static func checkSortKey(_ key: String, in entity: EntityDescription) throws {
        var current = entity
        for part in key.split(separator: ".") {
            switch current.propertiesByName[String(part)] {
            case .toMany?:
                throw ObjectGraphError(.invalidFetchRequest, "to-many key not allowed here: the sort key \(key) passes through the to-many relationship \(current.name).\(part)",
                                       entity: entity.name, property: key)
            case .toOne?:
                guard let next = current.destinationEntity(ofRelationship: String(part)) else { return }
                current = next
            default: return
            }
        }
    }

    /// The keys ``resolve(_:)`` looks up along `path`: each one through the relationships before it.
    private static func checkKeyPath(_ path: ArraySlice<Substring>, in entity: EntityDescription) throws {
        guard let first = path.first else { return }
        let destination: EntityDescription?
        switch try property(first, of: entity) {
        case .toOne(let slot): destination = entity.slotDestinations[slot]
        case .toMany(let index): destination = entity.destinationEntity(ofRelationship: entity.toManyRelationships[index].name)
        default: return  // an attribute or a transient ends the path as ``resolve(_:)`` reads it
        }
        if path.count > 1, let destination { try checkKeyPath(path.dropFirst(), in: destination) }
    }

    private func resolve(_ path: ArraySlice<Substring>) throws -> KeyPathValue {
        guard let first = path.first else { return .single(.objectID(id)) }
        switch try Self.property(first, of: entity) {
        case .attribute(let slot):
            return .single(row.values[slot])
        case .transient:
            return .single(.null)
        case .transientRelationship(let index):
            // core-data-rules.md Rule 21.2: a stored row holds no transient relationship.
            return entity.transientRelationships[index].isToMany ? .many([]) : .single(.null)
        case .toOne(let slot):
            guard case .objectID(let dest) = row.values[slot] else { return .single(.null) }
            if path.count == 1 { return .single(.objectID(dest)) }
            guard let destRow = try resolver.row(dest) else { return .single(.null) }
            return try StoreRowSubject(id: dest, row: destRow, resolver: resolver, as: entity.slotDestinations[slot]).resolve(path.dropFirst())
        case .toMany(let index):
            let relationship = entity.toManyRelationships[index]
            let ids = try resolver.store.relatedKeys(of: id, relationship: relationship)
            if path.count == 1 { return .many(ids.map { .objectID($0) }) }
            var values: [PropertyValue] = []
            for dest in ids {
                guard let destRow = try resolver.row(dest) else { continue }
                switch try StoreRowSubject(id: dest, row: destRow, resolver: resolver, as: entity.destinationEntity(ofRelationship: relationship.name)).resolve(path.dropFirst()) {
                case .single(let v): values.append(v)
                case .many(let vs): values.append(contentsOf: vs)
                }
            }
            return .many(values)
        }
    }

    func sortValue(_ key: String) throws -> PropertyValue {
        if case .single(let v) = try resolve(keyPath: key.split(separator: ".")) { return v }
        return .null
    }
}

/// Ordering of sort keys as SQLite orders them: NULL first, then numbers, then text, then blobs.
enum SortOrdering {
    static func rank(_ v: PropertyValue) -> Int {
        switch v {
        case .null: return 0
        case .integer, .double, .bool, .date, .objectID, .decimal: return 1
        case .string, .uuid, .uri: return 2
        case .data: return 3
        }
    }

    static func compare(_ a: PropertyValue, _ b: PropertyValue) -> Int {
        let ra = rank(a), rb = rank(b)
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case (.null, .null): return 0
        case let (.objectID(x), .objectID(y)): return x.key < y.key ? -1 : (x.key > y.key ? 1 : 0)
        case let (.data(x), .data(y)): return x.lexicographicallyPrecedes(y) ? -1 : (x == y ? 0 : 1)
        default:
            if ra == 2 { return StringMatching.compareBytes(textOf(a), textOf(b)) }
            if let o = PredicateComparison.order(a, b, []) { return o }
            let x = a.numericValue ?? 0, y = b.numericValue ?? 0
            return x < y ? -1 : (x > y ? 1 : 0)
        }
    }

    private static func textOf(_ v: PropertyValue) -> String {
        switch v {
        case .string(let s): return s
        case .uuid(let u): return u.uuidString
        case .uri(let u): return u.absoluteString
        default: return ""
        }
    }

    static func precedes(_ a: [PropertyValue], _ b: [PropertyValue], _ sorts: [ObjectSortDescriptor]) -> Bool {
        for (i, sort) in sorts.enumerated() {
            let c = compare(a[i], b[i])
            if c != 0 { return sort.ascending ? c < 0 : c > 0 }
        }
        return false
    }
}
