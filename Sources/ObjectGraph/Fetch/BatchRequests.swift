import Foundation

/// What a batch request returns.
public enum BatchResultType: Sendable {
    /// Only whether it succeeded.
    case statusOnly
    /// The number of rows affected.
    case count
    /// The IDs of the rows affected (merge them with `mergeChanges(fromRemoteContextSave:into:)`).
    case objectIDs
}

/// The result of a batch request.
public struct BatchResult: Sendable {
    /// Whether the request succeeded.
    public var status: Bool
    /// Rows affected (for `.count` and `.objectIDs`).
    public var count: Int?
    /// IDs affected (for `.objectIDs`).
    public var objectIDs: [ManagedObjectID]?
}

/// Inserts rows without objects (`NSBatchInsertRequest`, semantics §6). Keys must be stored attribute names and
/// every required attribute (non-optional, without a default) needs a value: a row that breaks either fails the
/// whole request, which then writes nothing. Relationships are not set and no other validation runs (lengths,
/// ranges). With uniqueness constraints and an ObjectTrump (or
/// Overwrite) executing context the request upserts whole rows; StoreTrump and Rollback keep the stored row;
/// the error policy fails the request (133021).
public struct BatchInsertRequest: @unchecked Sendable {  // rows are plain values
    public var entityName: String
    public var objects: [[String: Any]]
    public var resultType: BatchResultType = .statusOnly

    /// A request for `objects`.
    public init(entityName: String, objects: [[String: Any]]) {
        self.entityName = entityName
        self.objects = objects
    }

    /// A request whose rows come from a handler called until it returns true (`dictionaryHandler`).
    public init(entityName: String, dictionaryHandler: (inout [String: Any]) -> Bool) {
        self.entityName = entityName
        var rows: [[String: Any]] = []
        while true {
            var row: [String: Any] = [:]
            if dictionaryHandler(&row) { break }
            rows.append(row)
        }
        self.objects = rows
    }

    /// A request whose rows come from a handler that fills a managed object, called until it returns true
    /// (`init(entity:managedObjectHandler:)`). Each call gets a new object of the entity's class that belongs to
    /// no context (so no context sees it and nothing is validated); its stored attribute values become the row,
    /// defaults included, and relationships are not stored, as with dictionaries (a new object
    /// per call is inferred, Apple does not say).
    public init(entity: EntityDescription, managedObjectHandler: (ManagedObject) -> Bool) {
        self.entityName = entity.name
        var rows: [[String: Any]] = []
        while true {
            let object = entity.managedObjectClass.init(entity: entity, insertInto: nil)
            object.prepareForInsert()
            if managedObjectHandler(object) { break }
            var row: [String: Any] = [:]
            for case .attribute(let a) in entity.slots {
                row[a.name] = object.value(forKey: a.name) ?? NSNull()
            }
            rows.append(row)
        }
        self.objects = rows
    }
}

/// Which kind of request a request is (`NSPersistentStoreRequestType`), with Core Data's raw values.
public enum PersistentStoreRequestType: Int, Sendable {
    case fetchRequestType = 1
    case saveRequestType = 2
    case batchInsertRequestType = 5
    case batchUpdateRequestType = 6
    case batchDeleteRequestType = 7
}

extension FetchRequest {
    /// `.fetchRequestType`.
    public var requestType: PersistentStoreRequestType { .fetchRequestType }
}

extension BatchInsertRequest {
    /// `.batchInsertRequestType`.
    public var requestType: PersistentStoreRequestType { .batchInsertRequestType }
}

extension BatchUpdateRequest {
    /// `.batchUpdateRequestType`.
    public var requestType: PersistentStoreRequestType { .batchUpdateRequestType }
}

extension BatchDeleteRequest {
    /// `.batchDeleteRequestType`.
    public var requestType: PersistentStoreRequestType { .batchDeleteRequestType }
}

/// Updates rows in SQL without loading them (`NSBatchUpdateRequest`, semantics §6): bumps `Z_OPT`, so later
/// saves of stale objects conflict; registered objects keep their values until refreshed past the row cache.
public struct BatchUpdateRequest: @unchecked Sendable {  // values are plain values
    public var entityName: String
    public var predicate: ObjectPredicate?
    public var propertiesToUpdate: [String: Any]
    public var resultType: BatchResultType = .statusOnly

    public init(entityName: String, predicate: ObjectPredicate? = nil, propertiesToUpdate: [String: Any]) {
        self.entityName = entityName
        self.predicate = predicate
        self.propertiesToUpdate = propertiesToUpdate
    }
}

/// Deletes rows in SQL (`NSBatchDeleteRequest`, semantics §6), from a fetch request or from object IDs of one
/// entity; delete rules run in SQL and a `deny` rule with destinations fails the request.
public struct BatchDeleteRequest: Sendable {
    public var fetchRequest: FetchRequest?
    public var objectIDs: [ManagedObjectID]?
    public var resultType: BatchResultType = .statusOnly

    public init(fetchRequest: FetchRequest) { self.fetchRequest = fetchRequest }
    public init(objectIDs: [ManagedObjectID]) { self.objectIDs = objectIDs }
}

extension ManagedObjectContext {
    private func batchCoordinator() throws -> PersistentStoreCoordinator {
        guard let coordinator = persistentStoreCoordinator else {
            throw ObjectGraphError(.persistentStoreOperation, "the context has no coordinator")
        }
        return coordinator
    }

    /// The coordinator a batch request runs on and the entity it names.
    private func batchTarget(_ entityName: String) throws -> (PersistentStoreCoordinator, EntityDescription) {
        let coordinator = try batchCoordinator()
        guard let entity = coordinator.managedObjectModel.entity(named: entityName) else {
            throw ObjectGraphError(.invalidFetchRequest, "no entity named \(entityName)", entity: entityName)
        }
        return (coordinator, entity)
    }

    private func result(_ ids: [ManagedObjectID], _ type: BatchResultType) -> BatchResult {
        switch type {
        case .statusOnly: return BatchResult(status: true)
        case .count: return BatchResult(status: true, count: ids.count)
        case .objectIDs: return BatchResult(status: true, count: ids.count, objectIDs: ids)
        }
    }

    /// Runs a batch insert in the store; touches no context and no row cache, posts no did-save.
    public func execute(_ request: BatchInsertRequest) throws -> BatchResult {
        return try Probe.call(.batchInsert(self, request), result: { .ids($0.objectIDs ?? []) }) { try performBatchInsert(request) }
    }

    private func performBatchInsert(_ request: BatchInsertRequest) throws -> BatchResult {
        assertOnQueue()
        let (coordinator, entity) = try batchTarget(request.entityName)
        // An abstract entity has no rows of its own (an insert of one is refused, as for objects).
        guard !entity.isAbstract else {
            throw ObjectGraphError(.invalidFetchRequest, "a batch insert into \(entity.name), which is abstract: insert into one of its sub-entities", entity: entity.name)
        }
        // Every row is checked before the store is asked: a bad row fails the whole request, which then writes
        // no row, no history transaction and takes no primary key (Docs/coredata-behaviour.md §6).
        let defaults = entity.insertTemplate.values  // each attribute's default, as an insert starts with
        let required = entity.slots.indices.filter {
            if case .attribute(let a) = entity.slots[$0] { return !a.isOptional && defaults[$0].isNull }
            return false
        }
        var rows: [[PropertyValue]] = []
        rows.reserveCapacity(request.objects.count)
        for (n, object) in request.objects.enumerated() {
            var values = defaults
            for (key, raw) in object {
                guard let (slot, v) = Self.batchInsertValue(raw, forKey: key, of: entity) else {
                    throw Self.batchInsertError(row: n, object, of: entity)
                }
                values[slot] = v
            }
            if let slot = required.first(where: { values[$0].isNull }) {
                let name = entity.slots[slot].name
                throw ObjectGraphError(.missingMandatoryProperty, "batch insert row \(n): \(name) is a required value of \(entity.name)", entity: entity.name, property: name)
            }
            rows.append(values)
        }
        let rule: BatchUpsertRule
        switch mergePolicy.type {
        case .mergeByPropertyObjectTrump, .overwrite: rule = .replace
        case .mergeByPropertyStoreTrump, .rollback: rule = .keep
        case .error: rule = .fail
        }
        let ids = try coordinator.batch(into: entity) { try $0.batchInsert(entity, rows: rows, upsert: rule, author: transactionAuthor, contextName: name) }
        return result(ids, request.resultType)
    }

    /// A batch insert row's value for `key` and its slot; nil for a key that is not a stored attribute or a value
    /// of the wrong type.
    private static func batchInsertValue(_ raw: Any, forKey key: String, of entity: EntityDescription) -> (Int, PropertyValue)? {
        guard case .attribute(let slot)? = entity.propertiesByName[key], case .attribute(let a) = entity.slots[slot],
              let v = a.storedValue(raw is NSNull ? nil : raw) else { return nil }
        return (slot, v)
    }

    /// The error for a row with a bad key, naming its first bad key in sorted order, so that the same row gives
    /// the same error whatever its dictionary's order.
    private static func batchInsertError(row n: Int, _ object: [String: Any], of entity: EntityDescription) -> ObjectGraphError {
        for key in object.keys.sorted() where batchInsertValue(object[key]!, forKey: key, of: entity) == nil {
            guard case .attribute(let slot)? = entity.propertiesByName[key], case .attribute(let a) = entity.slots[slot] else {
                return ObjectGraphError(.validation, "batch insert row \(n): \(key) is not a stored attribute of \(entity.name)", entity: entity.name, property: key)
            }
            return ObjectGraphError(.validation, "batch insert row \(n): wrong type for \(key) (\(a.type.rawValue))", entity: entity.name, property: key)
        }
        preconditionFailure("batchInsertError(row:) called for a row without a bad key")
    }

    /// Runs a batch update in the store.
    public func execute(_ request: BatchUpdateRequest) throws -> BatchResult {
        return try Probe.call(.batchUpdate(self, request), result: { .ids($0.objectIDs ?? []) }) { try performBatchUpdate(request) }
    }

    private func performBatchUpdate(_ request: BatchUpdateRequest) throws -> BatchResult {
        assertOnQueue()
        let (coordinator, entity) = try batchTarget(request.entityName)
        var values: [Int: PropertyValue] = [:]
        for (key, raw) in request.propertiesToUpdate {
            guard case .attribute(let slot)? = entity.propertiesByName[key], case .attribute(let a) = entity.slots[slot] else {
                throw ObjectGraphError(.validation, "batch update: \(key) is not a stored attribute of \(entity.name)", entity: entity.name, property: key)
            }
            guard let v = a.storedValue(raw is NSNull ? nil : raw) else {
                throw ObjectGraphError(.validation, "batch update: wrong type for \(key) (\(a.type.rawValue))", entity: entity.name, property: key)
            }
            values[slot] = v
        }
        // The rows are selected in the writer's turn (semantics §8): on a read connection, a save committed
        // meanwhile would leave the update on rows it had moved out of the predicate.
        let ids = try coordinator.batch(selecting: {
            try coordinator.fetchRows(FetchRequest(entityName: entity.name, predicate: request.predicate), entity: entity, idsOnly: true).map(\.id)
        }) { store, ids in
            _ = try store.batchUpdate(ids, values: values, author: transactionAuthor, contextName: name)
            return ids
        }
        return result(ids, request.resultType)
    }

    /// Runs a batch delete in the store.
    public func execute(_ request: BatchDeleteRequest) throws -> BatchResult {
        return try Probe.call(.batchDelete(self, request), result: { .ids($0.objectIDs ?? []) }) { try performBatchDelete(request) }
    }

    private func performBatchDelete(_ request: BatchDeleteRequest) throws -> BatchResult {
        assertOnQueue()
        let coordinator = try batchCoordinator()
        let select: () throws -> [ManagedObjectID]
        if let given = request.objectIDs {
            guard Set(given.map(\.entity.name)).count <= 1 else {
                throw ObjectGraphError(.invalidFetchRequest, "a batch delete by object IDs takes IDs of one entity")
            }
            select = { given.filter { !$0.isTemporaryID } }
        } else if let fetch = request.fetchRequest {
            let entity = try self.entity(for: fetch)
            // Selected in the writer's turn, as a batch update's rows (semantics §8).
            select = { try coordinator.fetchRows(fetch, entity: entity, idsOnly: true).map(\.id) }
        } else {
            select = { [] }
        }
        let deleted = try coordinator.batch(selecting: select) { store, ids in
            try store.batchDelete(ids, author: transactionAuthor, contextName: name)
        }
        return result(deleted, request.resultType)
    }
}

extension PersistentStoreCoordinator {
    /// Runs a batch insert into `entity` on its store (the first whose configuration holds it, Docs/coredata-behaviour.md
    /// §14.2) and announces it to other coordinators on the file.
    func batch<T>(into entity: EntityDescription, _ body: (any PersistentStore) throws -> T) throws -> T {
        let (result, token): (T, PersistentHistoryToken?)
        if routesRequests {
            guard let added = addedStore(forNew: entity) else { throw Self.noStoreError(for: .temporary(entity), in: addedStores) }
            // §14.2: history and remote-change notifications are the first store's.
            (result, token) = try queue.sync { (try body(added.store), added.isFirst ? added.store.lastHistoryToken : nil) }
        } else {
            (result, token) = try withStore { store in (try body(store), store.lastHistoryToken) }
        }
        postRemoteChange(token: token)
        return result
    }

    /// A batch update or delete: `select` finds its rows and `write` changes them, in one turn of the coordinator's
    /// queue (reads made there run on the writer's connection), so no save of this coordinator commits between the
    /// two (semantics §8: one writer; Core Data runs such a request as one statement). Nothing is written, nor
    /// announced, when `select` finds no row.
    func batch(selecting select: () throws -> [ManagedObjectID],
               _ write: (any PersistentStore, [ManagedObjectID]) throws -> [ManagedObjectID]) throws -> [ManagedObjectID] {
        let outcome = try withStore { store -> (ids: [ManagedObjectID], token: PersistentHistoryToken?)? in
            let ids = try select()
            guard !ids.isEmpty else { return nil }
            guard routesRequests else { return (try write(store, ids), store.lastHistoryToken) }
            // Each store's rows in its own statement, in the order of the stores' numbers (§14.2).
            var written: [ManagedObjectID] = []
            var token: PersistentHistoryToken?
            for group in storeGroups(ids) {
                let added = try addedStore(holding: group[0])
                written += try write(added.store, group)
                if added.isFirst { token = added.store.lastHistoryToken }
            }
            return (written, token)
        }
        guard let outcome else { return [] }
        postRemoteChange(token: outcome.token)
        return outcome.ids
    }
}
