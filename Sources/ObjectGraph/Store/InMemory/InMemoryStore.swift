import Foundation

/// Rows in memory with the SQLite store's versioning (`Z_OPT`) and key allocation, so conflicts and merges
/// behave the same. Used only on its coordinator's queue.
/// It counts its own costed operations (Docs/coredata-behaviour.md §7 "The in-memory store"): a row written
/// (``CostedOperation/inMemoryRowWritten``) and a row read (``CostedOperation/inMemoryRowRead``), and none of
/// SQLite's (statements, transactions, SQLite's row writes).
final class InMemoryStore: PersistentStore {
    let identifier: String
    let storeNumber: UInt32
    let model: ManagedObjectModel
    var url: URL? { nil }
    var type: PersistentStoreType { .inMemory }
    var statementCounts: StatementCounts { StatementCounts() }

    private var tables: [ObjectIdentifier: [Int64: RowSnapshot]] = [:]
    private var maxKey: [ObjectIdentifier: Int64] = [:]
    /// Many-to-many pairs by join table name: (owner key, destination key).
    private var joins: [String: Set<Pair>] = [:]

    private struct Pair: Hashable {
        var owner: Int64
        var destination: Int64
    }

    /// The places of ordered relationships' members (Docs/coredata-behaviour.md §12.2): by relationship (its
    /// order column's table and name, as the SQLite store's) and owner key, each member's key and its place.
    /// Empty in a model without ordered relationships.
    private var places: [OrderKey: [Int64: Int64]] = [:]
    /// The places the last save wrote (§12.4).
    private(set) var orderRowsWritten = 0

    private struct OrderKey: Hashable {
        var column: String
        var owner: Int64
    }

    /// - Parameter coordinatorTag: the tag of the coordinator that opens it, which its IDs carry.
    init(model: ManagedObjectModel, coordinatorTag: UInt32, identifier: String = UUID().uuidString) {
        self.model = model
        self.identifier = identifier
        self.storeNumber = StoreRegistry.number(for: identifier) | coordinatorTag << StoreRegistry.tagShift
    }

    /// A store with this one's rows, keys and identifier as they are now, for another coordinator (the tag of
    /// whose IDs it takes). Rows are values: the copy shares nothing that either store changes later.
    func copy(coordinatorTag: UInt32) -> InMemoryStore {
        let copy = InMemoryStore(model: model, coordinatorTag: coordinatorTag, identifier: identifier)
        copy.tables = tables
        copy.maxKey = maxKey
        copy.joins = joins
        copy.places = places
        return copy
    }

    func close() {}

    func canEvaluate(_ fetch: StoreFetch) -> Bool {
        fetch.predicate == nil && fetch.sortDescriptors.isEmpty && fetch.limit == 0 && fetch.offset == 0
    }

    /// The entities whose rows a fetch of `entity` covers: its sub-entities' too, unless excluded (Docs/coredata-behaviour.md §11.3).
    private func kinds(_ entity: EntityDescription, subentities: Bool = true) -> [EntityDescription] {
        guard subentities, !entity.subentities.isEmpty else { return [entity] }
        return entity.kindNumbers.compactMap { model.entity(number: $0) }
    }

    func identifiedRows(_ fetch: StoreFetch) throws -> [(id: ManagedObjectID, row: RowSnapshot?)] {
        var result: [(id: ManagedObjectID, row: RowSnapshot?)] = []
        for kind in kinds(fetch.entity, subentities: fetch.includesSubentities) {
            let table = tables[ObjectIdentifier(kind)] ?? [:]
            Probe.count(.inMemoryRowRead, table.count)
            for key in table.keys {
                result.append((ManagedObjectID(entity: kind, primaryKey: key, storeNumber: storeNumber), fetch.idsOnly ? nil : table[key]))
            }
        }
        // Keys are unique in a hierarchy (one sequence): key order, as the SQLite store's table.
        return result.sorted { $0.id.key < $1.id.key }
    }

    /// Walks every row of the entity, as a fetch does: the store keeps no count apart from its rows (Docs/coredata-behaviour.md §7).
    func count(_ fetch: StoreFetch) throws -> Int {
        let n = kinds(fetch.entity, subentities: fetch.includesSubentities).reduce(0) { $0 + (tables[ObjectIdentifier($1)]?.count ?? 0) }
        Probe.count(.inMemoryRowRead, n)
        return n
    }

    func rows(of entity: EntityDescription, keys: [Int64]) throws -> [Int64: RowSnapshot] {
        let table = tables[ObjectIdentifier(entity)] ?? [:]
        var result: [Int64: RowSnapshot] = [:]
        for key in keys { if let row = table[key] { result[key] = row } }
        Probe.count(.inMemoryRowRead, result.count)
        return result
    }

    func relatedKeys(of source: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID] {
        let entity = source.entity
        guard let destination = entity.destinationEntity(ofRelationship: relationship.name) else { return [] }
        if SQLiteSchema.isManyToMany(entity, relationship) {
            let join = SQLiteSchema.joinTable(entity, relationship)
            let mine = join.isOwned(by: entity, relationship)
            let pairs = joins[join.name] ?? []
            Probe.count(.inMemoryRowRead, pairs.count)
            let keys = mine ? pairs.filter { $0.owner == source.key }.map(\.destination) : pairs.filter { $0.destination == source.key }.map(\.owner)
            let members = kinds(destination)
            return ordered(keys.sorted(), source, relationship).map { key in
                let kind = members.first { tables[ObjectIdentifier($0)]?[key] != nil } ?? destination
                return ManagedObjectID(entity: kind, primaryKey: key, storeNumber: storeNumber)
            }
        }
        guard let slot = destination.slotIndex(of: relationship.inverseName) else { return [] }
        var result: [ManagedObjectID] = []
        for kind in kinds(destination) {
            let table = tables[ObjectIdentifier(kind)] ?? [:]
            Probe.count(.inMemoryRowRead, table.count)
            for (key, row) in table where row.values[slot] == .objectID(source) {
                result.append(ManagedObjectID(entity: kind, primaryKey: key, storeNumber: storeNumber))
            }
        }
        let byKey = result.sorted { $0.key < $1.key }
        guard relationship.isOrdered else { return byKey }
        let byID = Dictionary(byKey.map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
        return ordered(byKey.map(\.key), source, relationship).compactMap { byID[$0] }
    }

    /// §12.2: an ordered relationship's member keys (given in key order) by their places; a member never placed
    /// comes last, as in the SQLite store.
    private func ordered(_ keys: [Int64], _ source: ManagedObjectID, _ relationship: RelationshipDescription) -> [Int64] {
        guard let column = SQLiteSchema.orderColumn(source.entity, relationship) else { return keys }
        let placed = places[OrderKey(column: column.table + "." + column.column, owner: source.key)] ?? [:]
        return keys.enumerated().sorted { a, b in
            let pa = placed[a.element] ?? .max, pb = placed[b.element] ?? .max
            return pa != pb ? pa < pb : a.offset < b.offset
        }.map(\.element)
    }

    func allocateKeys(for entities: [EntityDescription]) throws -> [ManagedObjectID] {
        entities.map { entity in
            // Docs/coredata-behaviour.md §11.2: one key sequence per hierarchy, its root's.
            let key = (maxKey[ObjectIdentifier(entity.rootEntity)] ?? 0) + 1
            maxKey[ObjectIdentifier(entity.rootEntity)] = key
            return ManagedObjectID(entity: entity, primaryKey: key, storeNumber: storeNumber)
        }
    }

    func save(_ request: SaveRequest) throws -> StoreSaveOutcome {
        // Check everything first so that a refused save changes nothing.
        var conflicts: [StoreVersionConflict] = []
        for u in request.updates {
            let row = tables[ObjectIdentifier(u.id.entity)]?[u.id.key]
            if row?.version != u.oldVersion { conflicts.append(StoreVersionConflict(id: u.id, expectedVersion: u.oldVersion, databaseRow: row)) }
        }
        for d in request.deletes {
            if let row = tables[ObjectIdentifier(d.id.entity)]?[d.id.key], row.version != d.oldVersion {
                conflicts.append(StoreVersionConflict(id: d.id, expectedVersion: d.oldVersion, databaseRow: row))
            }
        }
        for l in request.locked {
            let row = tables[ObjectIdentifier(l.id.entity)]?[l.id.key]
            if row?.version != l.version { conflicts.append(StoreVersionConflict(id: l.id, expectedVersion: l.version, databaseRow: row)) }
        }
        if !conflicts.isEmpty { return .versionConflicts(conflicts) }
        if request.checkVersionsOnly { return .committed(newIDs: [:], insertIDs: []) }

        var keys = maxKey
        var newIDs: [ManagedObjectID: ManagedObjectID] = [:]
        for insert in request.inserts where insert.id.isTemporaryID {
            let e = ObjectIdentifier(insert.id.entity.rootEntity)
            let key = (keys[e] ?? 0) + 1
            keys[e] = key
            newIDs[insert.id] = ManagedObjectID(entity: insert.id.entity, primaryKey: key, storeNumber: storeNumber)
        }
        func resolve(_ values: [PropertyValue]) -> [PropertyValue] {
            values.map { v in
                if case .objectID(let id) = v, id.isTemporaryID { return newIDs[id].map { .objectID($0) } ?? .null }
                return v
            }
        }
        var next = tables
        for d in request.deletes { next[ObjectIdentifier(d.id.entity)]?[d.id.key] = nil }
        for u in request.updates {
            next[ObjectIdentifier(u.id.entity)]?[u.id.key] = RowSnapshot(values: resolve(u.values), version: u.oldVersion + 1)
        }
        for insert in request.inserts {
            next[ObjectIdentifier(insert.id.entity), default: [:]][(newIDs[insert.id] ?? insert.id).key] = RowSnapshot(values: resolve(insert.values), version: 1)
        }
        // Uniqueness, as the SQLite store's UNIQUE indexes would refuse it.
        var violations: [StoreConstraintViolation] = []
        let written = request.inserts.map { newIDs[$0.id] ?? $0.id } + request.updates.map(\.id)
        let original = request.inserts.map(\.id) + request.updates.map(\.id)
        for (id, reportedID) in zip(written, original) {
            let entity = id.entity
            let table = next[ObjectIdentifier(entity)] ?? [:]
            guard let row = table[id.key] else { continue }
            for (n, slots) in entity.constraintSlots.enumerated() {
                let values = slots.map { row.values[$0] }
                if values.contains(where: \.isNull) { continue }
                // Docs/coredata-behaviour.md §11.6: across the rows of the declaring entity and of those below it.
                for kind in kinds(entity.constraintDeclarers[n]) {
                    let table = kind === entity ? table : next[ObjectIdentifier(kind)] ?? [:]
                    for (key, other) in table where key != id.key && slots.map({ other.values[$0] }) == values {
                        let otherID = ManagedObjectID(entity: kind, primaryKey: key, storeNumber: storeNumber)
                        guard !written.contains(otherID), let existing = tables[ObjectIdentifier(kind)]?[key] else { continue }
                        violations.append(StoreConstraintViolation(
                            entity: entity, constraint: entity.uniquenessConstraints[n], values: values, id: reportedID,
                            databaseID: otherID, databaseRow: existing))
                    }
                }
            }
        }
        if !violations.isEmpty { return .constraintViolations(violations) }

        var nextJoins = joins
        for d in request.deletes {
            for relationship in d.id.entity.relationships where SQLiteSchema.isManyToMany(d.id.entity, relationship) {
                let join = SQLiteSchema.joinTable(d.id.entity, relationship)
                let mine = join.isOwned(by: d.id.entity, relationship)
                let key = d.id.key
                // A self-inverse relationship stores a membership from each side: the key may be in either column.
                nextJoins[join.name] = nextJoins[join.name]?.filter {
                    join.isSelfInverse ? $0.owner != key && $0.destination != key : mine ? $0.owner != key : $0.destination != key
                }
            }
        }
        for change in request.joinChanges {
            let join = SQLiteSchema.joinTable(change.entity, change.relationship)
            let mine = join.isOwned(by: change.entity, change.relationship)
            let (owner, other) = mine ? (change.source, change.destination) : (change.destination, change.source)
            let pair = Pair(owner: newIDs[owner]?.key ?? owner.key, destination: newIDs[other]?.key ?? other.key)
            if change.isInsert { nextJoins[join.name, default: []].insert(pair) } else { nextJoins[join.name]?.remove(pair) }
        }
        // §12.4: the place of each member whose place changed, one row written each.
        var placesWritten = 0
        for change in request.orderChanges {
            guard let column = SQLiteSchema.orderColumn(change.entity, change.relationship) else { continue }
            let key = OrderKey(column: column.table + "." + column.column, owner: newIDs[change.source]?.key ?? change.source.key)
            var placed = places[key] ?? [:]
            for (place, member) in change.members.enumerated() {
                let memberKey = newIDs[member]?.key ?? member.key
                if placed.updateValue(Int64(place + 1), forKey: memberKey) != Int64(place + 1) { placesWritten += 1 }
            }
            places[key] = placed
        }
        orderRowsWritten = placesWritten
        tables = next
        maxKey = keys
        joins = nextJoins
        // No transaction and none of SQLite's row work: rows copied into the dictionaries (semantics §7).
        Probe.count(.inMemoryRowWritten, request.inserts.count + request.updates.count + request.deletes.count + placesWritten)
        return .committed(newIDs: newIDs, insertIDs: request.inserts.map { newIDs[$0.id] ?? $0.id })
    }
}
