import CSQLite
import Foundation

extension SQLiteStore {
    /// Writes one save: the inserts' permanent keys in a `BEGIN IMMEDIATE` transaction of their own, then the
    /// rows in another. Rows whose `Z_OPT` is not the expected version make the rows' transaction roll back and
    /// come back as layer-2 conflicts (semantics §1.1); uniqueness violations against existing rows come back as
    /// constraint violations (§1.6). No row is half-written; keys allocated for a save that then fails stay
    /// used (gaps in `Z_PK`, as with `obtainPermanentIDs`).
    func save(_ request: SaveRequest) throws -> StoreSaveOutcome {
        if request.checkVersionsOnly { return try checkVersions(request) }
        // Rule 29: Core Data's SQL log shows the Z_PRIMARYKEY update committed in a transaction before
        // the rows' one (semantics §2.1 step 4 then step 6). One writer per file, whichever coordinator (§2.4,
        // §8): a simulation makes the others wait, for each transaction.
        let keys = try Execution.exclusive(writerResource) { try allocateInsertKeys(request) }
        return try Execution.exclusive(writerResource) { try saveWriting(request, keys: keys) }
    }

    /// The permanent IDs a save's inserts are written under.
    struct InsertKeys {
        /// `insertIDs[i]` is the ID `request.inserts[i]` is written under, so the insert loop and the coordinator
        /// need no lookup per row.
        var insertIDs: [ManagedObjectID]
        /// Temporary → permanent, for the context's remapping and for resolving references.
        var newIDs: [ManagedObjectID: ManagedObjectID]
    }

    /// Permanent IDs from Z_PRIMARYKEY.Z_MAX (semantics §2.1 step 4) for the inserts with temporary IDs, committed
    /// in one transaction (counted); no SQL when there are none. Inserts come grouped by entity, so the
    /// per-entity counters are found through the last one used.
    private func allocateInsertKeys(_ request: SaveRequest) throws -> InsertKeys {
        var keyRanges: [(entity: EntityDescription, count: Int64, next: Int64)] = []
        var rangeIndex: [ObjectIdentifier: Int] = [:]
        var temporaryCount = 0
        func rangeSlot(_ entity: EntityDescription, last: inout Int) -> Int {
            if last >= 0, keyRanges[last].entity === entity { return last }
            if let i = rangeIndex[ObjectIdentifier(entity)] { last = i; return i }
            keyRanges.append((entity, 0, 0))
            rangeIndex[ObjectIdentifier(entity)] = keyRanges.count - 1
            last = keyRanges.count - 1
            return last
        }
        var last = -1
        for insert in request.inserts where insert.id.isTemporaryID {
            keyRanges[rangeSlot(insert.id.entity, last: &last)].count += 1
            temporaryCount += 1
        }
        guard temporaryCount > 0 else { return InsertKeys(insertIDs: request.inserts.map(\.id), newIDs: [:]) }
        do {
            try connection.execute("BEGIN IMMEDIATE")
            for i in keyRanges.indices {
                keyRanges[i].next = try reserveKeys(keyRanges[i].entity, count: keyRanges[i].count)
            }
            try connection.execute("COMMIT")
            Probe.count(.transaction)
        } catch let error as SQLiteError {
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            throw Self.storeError(error, path: url!.path)
        } catch {
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            throw error
        }
        var keys = InsertKeys(insertIDs: [], newIDs: [:])
        keys.newIDs.reserveCapacity(temporaryCount)
        keys.insertIDs.reserveCapacity(request.inserts.count)
        last = -1
        for insert in request.inserts {
            guard insert.id.isTemporaryID else { keys.insertIDs.append(insert.id); continue }
            let i = rangeSlot(insert.id.entity, last: &last)
            let id = ManagedObjectID(entity: insert.id.entity, primaryKey: keyRanges[i].next, storeNumber: storeNumber)
            keyRanges[i].next += 1
            keys.newIDs[insert.id] = id
            keys.insertIDs.append(id)
        }
        return keys
    }

    private func saveWriting(_ request: SaveRequest, keys: InsertKeys) throws -> StoreSaveOutcome {
        do {
            try connection.execute("BEGIN IMMEDIATE")
        } catch let error as SQLiteError {
            throw Self.storeError(error, path: url!.path)
        }
        // Docs/coredata-behaviour.md §13.5: files are written inside the transaction; those it replaced are removed
        // once it commits, those it wrote once it rolls back.
        var files = SQLiteExternalData.Changes()
        defer { externalData?.remove(connection.isInTransaction ? [] : files.written) }
        do {
            let stored = try externalData.map { try externalized(request, $0, &files) } ?? request
            let outcome = try write(stored, keys: keys)
            if case .committed = outcome {
                beforeCommit?()
                try connection.execute("COMMIT")
                externalData?.remove(files.replaced)
                files.written = []
                // Counted inside the writer's hold, so a simulation keeps the file's writer busy for them.
                request.countCommitted()
                if orderRowsWritten > 0 { Probe.count(.rowUpdated, orderRowsWritten) }
            } else {
                try connection.execute("ROLLBACK")
            }
            return outcome
        } catch let error as SQLiteError {
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            if error.isConstraint {
                let violations = try findConstraintViolations(request)
                if !violations.isEmpty { return .constraintViolations(violations) }
            }
            throw Self.storeError(error, path: url!.path)
        } catch {
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    private func write(_ request: SaveRequest, keys: InsertKeys) throws -> StoreSaveOutcome {
        let binder = SaveBinder(newIDs: keys.newIDs)
        // History is only recorded with tracking on: without it, nothing is collected for it either.
        var history: HistoryRecord? = historyTracking ? HistoryRecord() : nil
        var conflicts: [StoreVersionConflict] = []
        try writeDeletes(request, conflicts: &conflicts, history: &history)
        try writeUpdates(request, binder: binder, conflicts: &conflicts, history: &history)
        try checkLocked(request, conflicts: &conflicts)
        if !conflicts.isEmpty { return .versionConflicts(conflicts) }
        try writeInserts(request, ids: keys.insertIDs, binder: binder, history: &history)
        try writeJoinChanges(request, newIDs: keys.newIDs)
        orderRowsWritten = request.orderChanges.isEmpty ? 0 : try writeOrderChanges(request, newIDs: keys.newIDs)
        lastHistoryToken = try recordHistory(history ?? HistoryRecord(), author: request.author, contextName: request.contextName)
        return .committed(newIDs: keys.newIDs, insertIDs: keys.insertIDs)
    }

    /// Binds the values of a save: a reference to an object inserted by it as that object's permanent key.
    private struct SaveBinder {
        let newIDs: [ManagedObjectID: ManagedObjectID]

        /// Binds `value`, a reference to an object inserted by the save as that object's permanent key (NULL when
        /// the object is not part of the save), without copying the value.
        func bind(_ value: PropertyValue, to statement: SQLiteStatement, at index: Int32) throws {
            if case .objectID(let id) = value, id.isTemporaryID {
                if let n = newIDs[id] { statement.bindInt(n.key, at: index) } else { try statement.bind(.null, at: index) }
                return
            }
            try statement.bind(value, at: index)
        }

        /// The `Z_ENT` column of a to-one into a hierarchy: the referenced object's entity (NULL for no object).
        func bindEntity(of value: PropertyValue, to statement: SQLiteStatement, at index: Int32) throws {
            if case .objectID(let id) = value { statement.bindInt(Int64(id.entity.entityNumber), at: index) } else { try statement.bind(.null, at: index) }
        }
    }

    /// Deletes the save's rows whose version is the one the context read (semantics §1.4: a row already gone is no
    /// conflict for a delete), and their rows of many-to-many join tables.
    private func writeDeletes(_ request: SaveRequest, conflicts: inout [StoreVersionConflict], history: inout HistoryRecord?) throws {
        for delete in request.deletes {
            let entity = delete.id.entity
            let statement = try connection.cachedStatement("DELETE FROM \(entity.tableName) WHERE Z_PK = ? AND Z_OPT = ?")
            statement.bindInt(delete.id.key, at: 1)
            statement.bindInt(delete.oldVersion, at: 2)
            if try statement.run() == 0 {
                // Semantics §1.4: a row that is already gone is not a conflict for a delete.
                if let row = try rows(of: entity, keys: [delete.id.key])[delete.id.key] {
                    conflicts.append(StoreVersionConflict(id: delete.id, expectedVersion: delete.oldVersion, databaseRow: row))
                }
            } else {
                history?.deletes.append((delete.id, delete.tombstone))
            }
            for relationship in entity.relationships where SQLiteSchema.isManyToMany(entity, relationship) {
                let s = try connection.cachedStatement(SQLiteSchema.joinTable(entity, relationship).deleteRowsSQL(of: entity, relationship))
                s.bindInt(delete.id.key, at: 1)
                try s.run()
            }
        }
    }

    /// Updates the save's rows whose version is the one the context read, bumping it; a row of another version is a
    /// conflict (semantics §1.3, layer 2).
    private func writeUpdates(_ request: SaveRequest, binder: SaveBinder, conflicts: inout [StoreVersionConflict], history: inout HistoryRecord?) throws {
        // One statement per entity (and set of changed columns) for the whole save: the SQL text is built and
        // looked up once, not per row (the store is the hot path of every import).
        struct UpdateShape: Hashable { var entity: ObjectIdentifier; var slots: SlotSet }
        var updateStatements: [UpdateShape: SQLiteStatement] = [:]
        // Consecutive rows usually share a shape: compared with the last one, no hash. Kept as two plain variables
        // (not an optional tuple, which was copied and destroyed, statement retained and released, for every row).
        var lastUpdateShape = UpdateShape(entity: ObjectIdentifier(SQLiteStore.self), slots: [])  // matches no row
        var lastUpdateStatement: SQLiteStatement?
        for update in request.updates {
            let entity = update.id.entity
            let shape = UpdateShape(entity: ObjectIdentifier(entity), slots: update.changedSlots)
            let statement: SQLiteStatement
            if let last = lastUpdateStatement, lastUpdateShape == shape {
                last.resetKeepingBindings()  // every parameter is bound again below
                statement = last
            } else if let cached = updateStatements[shape] {
                cached.resetKeepingBindings()  // every parameter is bound again below
                statement = cached
            } else {
                // A to-one into a hierarchy writes its destination's Z_ENT beside its key.
                let columns = update.changedSlots.map { slot in
                    "\(entity.columnName(forSlot: slot)) = ?" + (entity.entityColumns[slot].map { ", \($0) = ?" } ?? "")
                }
                let sql = "UPDATE \(entity.tableName) SET " + (["Z_OPT = ?"] + columns).joined(separator: ", ") + " WHERE Z_PK = ? AND Z_OPT = ?"
                statement = try connection.cachedStatement(sql)
                updateStatements[shape] = statement
            }
            if lastUpdateStatement !== statement {
                lastUpdateShape = shape
                lastUpdateStatement = statement
            }
            statement.bindInt(update.oldVersion + 1, at: 1)
            var index: Int32 = 2
            let references = !entity.entityColumnSlots.isEmpty
            for slot in update.changedSlots {
                try binder.bind(update.values[slot], to: statement, at: index)
                index += 1
                if references, entity.entityColumns[slot] != nil {
                    try binder.bindEntity(of: update.values[slot], to: statement, at: index)
                    index += 1
                }
            }
            statement.bindInt(update.id.key, at: index)
            statement.bindInt(update.oldVersion, at: index + 1)
            if try statement.run() == 0 {
                let row = try rows(of: entity, keys: [update.id.key])[update.id.key]
                conflicts.append(StoreVersionConflict(id: update.id, expectedVersion: update.oldVersion, databaseRow: row))
            } else {
                history?.updates.append((update.id, update.changedSlots.map { entity.slots[$0].name }))
            }
        }
    }

    /// The rows the save only locked (optimistic locking of unchanged objects): a conflict where their version moved.
    private func checkLocked(_ request: SaveRequest, conflicts: inout [StoreVersionConflict]) throws {
        for locked in request.locked {
            let row = try rows(of: locked.id.entity, keys: [locked.id.key])[locked.id.key]
            if row?.version != locked.version {
                conflicts.append(StoreVersionConflict(id: locked.id, expectedVersion: locked.version, databaseRow: row))
            }
        }
    }

    /// Inserts the save's new rows under the keys allocated for them (`ids`, in the order of the request's inserts).
    private func writeInserts(_ request: SaveRequest, ids: [ManagedObjectID], binder: SaveBinder, history: inout HistoryRecord?) throws {
        // One INSERT per entity for the whole save; Z_ENT and Z_OPT (1) are constants of its text, so each row
        // binds its key and its values only, and every parameter is bound again for each row.
        var insertStatements: [ObjectIdentifier: SQLiteStatement] = [:]
        var lastEntity: EntityDescription?
        var lastStatement: SQLiteStatement?
        history?.inserts.reserveCapacity(request.inserts.count)
        for (n, insert) in request.inserts.enumerated() {
            let entity = insert.id.entity
            let statement: SQLiteStatement
            if let cached = lastStatement, lastEntity === entity {
                statement = cached
            } else if let cached = insertStatements[ObjectIdentifier(entity)] {
                statement = cached
            } else {
                var columns = ["Z_PK", "Z_ENT", "Z_OPT"]
                for i in 0..<entity.slotCount { columns.append(entity.columnName(forSlot: i)) }
                for slot in entity.entityColumnSlots { columns.append(entity.entityColumns[slot]!) }
                let marks = (["?", String(entity.entityNumber), "1"] + Array(repeating: "?", count: entity.slotCount + entity.entityColumnSlots.count)).joined(separator: ", ")
                statement = try connection.cachedStatement("INSERT INTO \(entity.tableName) (\(columns.joined(separator: ", "))) VALUES (\(marks))")
                insertStatements[ObjectIdentifier(entity)] = statement
            }
            lastEntity = entity
            lastStatement = statement
            if insert.values.count == entity.slotCount {
                statement.resetKeepingBindings()
            } else {
                statement.reset()  // a short row leaves its missing columns NULL, not the previous row's values
            }
            let id = ids[n]
            statement.bindInt(id.key, at: 1)
            var index: Int32 = 2
            for value in insert.values {
                try binder.bind(value, to: statement, at: index)
                index += 1
            }
            if !entity.entityColumnSlots.isEmpty {
                index = Int32(2 + entity.slotCount)
                for slot in entity.entityColumnSlots {
                    try binder.bindEntity(of: slot < insert.values.count ? insert.values[slot] : .null, to: statement, at: index)
                    index += 1
                }
            }
            try statement.run()
            history?.inserts.append(id)
        }
    }

    /// Inserts and deletes the rows of many-to-many join tables the save changed.
    private func writeJoinChanges(_ request: SaveRequest, newIDs: [ManagedObjectID: ManagedObjectID]) throws {
        for change in request.joinChanges {
            let join = SQLiteSchema.joinTable(change.entity, change.relationship)
            let mine = join.isOwned(by: change.entity, change.relationship)
            let (owner, other) = mine ? (change.source, change.destination) : (change.destination, change.source)
            let ownerKey = newIDs[owner]?.key ?? owner.key
            let otherKey = newIDs[other]?.key ?? other.key
            let sql = change.isInsert
                ? "INSERT OR IGNORE INTO \(join.name) (\(join.ownerColumn), \(join.destinationColumn)) VALUES (?, ?)"
                : "DELETE FROM \(join.name) WHERE \(join.ownerColumn) = ? AND \(join.destinationColumn) = ?"
            let statement = try connection.cachedStatement(sql)
            statement.bindInt(ownerKey, at: 1)
            statement.bindInt(otherKey, at: 2)
            try statement.run()
        }
    }

    /// Writes the place (1-based) of each member of a changed ordered relationship whose stored place differs
    /// (Docs/coredata-behaviour.md §12.4): a row whose place holds is not written, so a reordering writes the
    /// rows that moved and an append writes the appended row. Returns the rows written.
    private func writeOrderChanges(_ request: SaveRequest, newIDs: [ManagedObjectID: ManagedObjectID]) throws -> Int {
        var written = 0
        for change in request.orderChanges {
            guard let order = SQLiteSchema.orderColumn(change.entity, change.relationship) else { continue }
            let sql = order.memberColumn == "Z_PK"
                ? "UPDATE \(order.table) SET \(order.column) = ?1 WHERE Z_PK = ?2 AND \(order.column) IS NOT ?1"
                : "UPDATE \(order.table) SET \(order.column) = ?1 WHERE \(order.ownerColumn) = ?3 AND \(order.memberColumn) = ?2 AND \(order.column) IS NOT ?1"
            let statement = try connection.cachedStatement(sql)
            let ownerKey = newIDs[change.source]?.key ?? change.source.key
            for (place, member) in change.members.enumerated() {
                if place > 0 { statement.resetKeepingBindings() }
                statement.bindInt(Int64(place + 1), at: 1)
                statement.bindInt(newIDs[member]?.key ?? member.key, at: 2)
                if order.memberColumn != "Z_PK" { statement.bindInt(ownerKey, at: 3) }
                written += try statement.run()
            }
        }
        return written
    }

    /// Layer-2 version check without writing (semantics §1.3: locking conflicts before constraint conflicts).
    private func checkVersions(_ request: SaveRequest) throws -> StoreSaveOutcome {
        var conflicts: [StoreVersionConflict] = []
        let expected = request.updates.map { ($0.id, $0.oldVersion, false) } + request.deletes.map { ($0.id, $0.oldVersion, true) }
            + request.locked.map { ($0.id, $0.version, false) }
        for (id, version, isDelete) in expected {
            let row = try rows(of: id.entity, keys: [id.key])[id.key]
            if row == nil, isDelete { continue }
            if row?.version != version { conflicts.append(StoreVersionConflict(id: id, expectedVersion: version, databaseRow: row)) }
        }
        return conflicts.isEmpty ? .committed(newIDs: [:], insertIDs: []) : .versionConflicts(conflicts)
    }

    /// Takes `count` primary keys of `entity` in the open write transaction and returns the first.
    /// A hierarchy shares its root's key sequence (one `Z_PK` space per table).
    private func reserveKeys(_ entity: EntityDescription, count: Int64) throws -> Int64 {
        let keyEntity = entity.rootEntity
        let read = try connection.cachedStatement("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?")
        read.bindInt(Int64(keyEntity.entityNumber), at: 1)
        var max: Int64 = 0
        while try read.step() { max = read.int64(at: 0) }
        let update = try connection.cachedStatement("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?")
        update.bindInt(max + count, at: 1)
        update.bindInt(Int64(keyEntity.entityNumber), at: 2)
        try update.run()
        return max + 1
    }

    func allocateKeys(for entities: [EntityDescription]) throws -> [ManagedObjectID] {
        try Execution.exclusive(writerResource) { try allocateKeysWriting(for: entities) }
    }

    private func allocateKeysWriting(for entities: [EntityDescription]) throws -> [ManagedObjectID] {
        do {
            try connection.execute("BEGIN IMMEDIATE")
            var result: [ManagedObjectID] = []
            for entity in entities {
                result.append(ManagedObjectID(entity: entity, primaryKey: try reserveKeys(entity, count: 1), storeNumber: storeNumber))
            }
            try connection.execute("COMMIT")
            return result
        } catch let error as SQLiteError {
            if connection.isInTransaction { try? connection.execute("ROLLBACK") }
            throw Self.storeError(error, path: url!.path)
        }
    }

    /// After a UNIQUE failure (and rollback): which objects of the save collide with which existing rows.
    private func findConstraintViolations(_ request: SaveRequest) throws -> [StoreConstraintViolation] {
        var violations: [StoreConstraintViolation] = []
        let deleted = Set(request.deletes.map(\.id))
        let candidates: [(ManagedObjectID, [PropertyValue], Int64?)] =
            request.inserts.map { ($0.id, $0.values, nil) } + request.updates.map { ($0.id, $0.values, $0.id.key) }
        for (id, values, ownKey) in candidates {
            let entity = id.entity
            for (n, slots) in entity.constraintSlots.enumerated() {
                let constraintValues = slots.map { values[$0] }
                if constraintValues.contains(where: \.isNull) { continue }
                var condition = slots.map { "t0.\(entity.columnName(forSlot: $0)) = ?" }.joined(separator: " AND ")
                // A constraint holds over the rows of the entity that declares it and those below.
                let declarer = entity.constraintDeclarers[n]
                if let rows = declarer.entityCondition(alias: "t0", includesSubentities: true) { condition += " AND \(rows)" }
                let select = selectColumnsForViolation(entity) + (entity.isInHierarchy ? ", t0.Z_ENT" : "")
                let statement = try connection.cachedStatement("SELECT \(select) FROM \(entity.tableName) t0 WHERE \(condition)")
                try statement.bind(constraintValues)
                while try statement.step() {
                    let key = statement.int64(at: 0)
                    if key == ownKey { continue }
                    let dbEntity = entity.isInHierarchy ? model.entity(number: Int(statement.int64(at: 1))) ?? entity : entity
                    let dbID = ManagedObjectID(entity: dbEntity, primaryKey: key, storeNumber: storeNumber)
                    if deleted.contains(dbID) { continue }
                    var rowValues: [PropertyValue] = []
                    let row = try rows(of: dbEntity, keys: [key])[key]
                    rowValues = row?.values ?? []
                    violations.append(StoreConstraintViolation(
                        entity: entity, constraint: entity.uniquenessConstraints[n], values: constraintValues, id: id,
                        databaseID: dbID, databaseRow: RowSnapshot(values: rowValues, version: row?.version ?? 1)))
                }
            }
        }
        return violations
    }

    private func selectColumnsForViolation(_ entity: EntityDescription) -> String { "t0.Z_PK" }
}
