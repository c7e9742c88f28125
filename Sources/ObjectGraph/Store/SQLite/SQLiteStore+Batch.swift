import CSQLite
import Foundation

/// Batch requests at the SQL level (semantics §6): no objects, no contexts, no row cache; each one
/// transaction that bumps `Z_OPT` of the rows it changes and records history when tracking is on. Each is priced
/// as SQLite runs it (``runBatch(_:)``): its statements prepared once, then a batch row per row written.
extension SQLiteStore {
    func batchInsert(_ entity: EntityDescription, rows: [[PropertyValue]], upsert: BatchUpsertRule, author: String?, contextName: String?) throws -> [ManagedObjectID] {
        let rows = inlined(rows, entity)
        return try runBatch {
            var history = HistoryRecord()
            var ids: [ManagedObjectID] = []
            // Rows written, counted once every row is (a request that fails midway writes none).
            var inserted = 0, replaced = 0
            // Docs/coredata-behaviour.md §11.4: a sub-entity's rows take keys from its root's sequence and count under the root.
            let keyEntity = entity.rootEntity
            let read = try connection.cachedStatement("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?")
            read.bindInt(Int64(keyEntity.entityNumber), at: 1)
            var max: Int64 = 0
            while try read.step() { max = read.int64(at: 0) }
            var columns = ["Z_PK", "Z_ENT", "Z_OPT"]
            for i in 0..<entity.slotCount { columns.append(entity.columnName(forSlot: i)) }
            let insert = try connection.cachedStatement("INSERT INTO \(entity.tableName) (\(columns.joined(separator: ", "))) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))")
            let setters = (0..<entity.slotCount).map { "\(entity.columnName(forSlot: $0)) = ?" }.joined(separator: ", ")
            let replace = try connection.cachedStatement("UPDATE \(entity.tableName) SET Z_OPT = Z_OPT + 1, \(setters) WHERE Z_PK = ?")
            // The query that finds a row with the same unique values, per constraint: the same for every row, so
            // written once for the batch rather than once per row.
            let finds = entity.constraintSlots.enumerated().map { n, slots in
                var condition = slots.map { "\(entity.columnName(forSlot: $0)) = ?" }.joined(separator: " AND ")
                // Docs/coredata-behaviour.md §11.6: over the rows of the entity that declares the constraint and those below it.
                if let rows = entity.constraintDeclarers[n].entityCondition(alias: entity.tableName, includesSubentities: true) {
                    condition += " AND \(rows)"
                }
                // Docs/coredata-behaviour.md §11.6: in a hierarchy the row found may be another entity's (its Z_ENT says which).
                return "SELECT Z_PK\(entity.isInHierarchy ? ", Z_ENT" : "") FROM \(entity.tableName) WHERE \(condition)"
            }
            for values in rows {
                // An existing row with the same unique values (semantics §6: upsert with constraints).
                var existing: Int64?
                var existingEntity = entity
                for (n, slots) in entity.constraintSlots.enumerated() {
                    let key = slots.map { values[$0] }
                    if key.contains(where: \.isNull) { continue }
                    let find = try connection.cachedStatement(finds[n])
                    try find.bind(key)
                    while try find.step() {
                        existing = find.int64(at: 0)
                        if entity.isInHierarchy { existingEntity = model.entity(number: Int(find.int64(at: 1))) ?? entity }
                    }
                    if existing != nil { break }
                }
                if let existing {
                    let id = ManagedObjectID(entity: existingEntity, primaryKey: existing, storeNumber: storeNumber)
                    switch upsert {
                    case .fail:
                        throw ObjectGraphError(.constraintMerge, "a batch insert row collides with the stored object \(id) on a uniqueness constraint", entity: entity.name, objectID: id, storePath: url?.path)
                    case .keep:
                        continue
                    case .replace where !existingEntity.isKindOf(entity: entity):
                        // Docs/coredata-behaviour.md §11.4: the row is a sibling's or a parent's (a constraint
                        // inherited from above); it cannot take this entity's values without becoming another
                        // entity, which Core Data never does to a row.
                        throw ObjectGraphError(.constraintMerge, "a batch insert row of \(entity.name) collides with the stored \(existingEntity.name) \(id) on an inherited uniqueness constraint; an upsert cannot write \(entity.name) values onto a \(existingEntity.name)", entity: entity.name, objectID: id, storePath: url?.path)
                    case .replace:
                        replace.reset()
                        for (i, v) in values.enumerated() { try replace.bind(v, at: Int32(i + 1)) }
                        replace.bindInt(existing, at: Int32(values.count + 1))
                        try replace.run()
                        replaced += 1
                        ids.append(id)
                        history.updates.append((id, entity.slots.map(\.name)))
                    }
                    continue
                }
                max += 1
                insert.reset()
                insert.bindInt(max, at: 1)
                insert.bindInt(Int64(entity.entityNumber), at: 2)
                insert.bindInt(1, at: 3)
                for (i, v) in values.enumerated() { try insert.bind(v, at: Int32(i + 4)) }
                try insert.run()
                inserted += 1
                let id = ManagedObjectID(entity: entity, primaryKey: max, storeNumber: storeNumber)
                ids.append(id)
                history.inserts.append(id)
            }
            let update = try connection.cachedStatement("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?")
            update.bindInt(max, at: 1)
            update.bindInt(Int64(keyEntity.entityNumber), at: 2)
            try update.run()
            Probe.count(.batchRowInserted, inserted)
            Probe.count(.batchRowUpdated, replaced)
            lastHistoryToken = try recordHistory(history, author: author, contextName: contextName)
            return ids
        }
    }

    func batchUpdate(_ ids: [ManagedObjectID], values: [Int: PropertyValue], author: String?, contextName: String?) throws -> Int {
        guard let entity = ids.first?.entity else { return 0 }
        let external = externalData == nil ? [] : entity.externalStorageSlots.filter { values[$0] != nil }
        var values = values
        for slot in external { values[slot] = inlined(values[slot]!) }
        var replacedFiles: [String] = []
        let count = try runBatch {
            let slots = values.keys.sorted()
            let setters = slots.map { "\(entity.columnName(forSlot: $0)) = ?" }
            let statement = try connection.cachedStatement("UPDATE \(entity.tableName) SET " + (["Z_OPT = Z_OPT + 1"] + setters).joined(separator: ", ") + " WHERE Z_PK = ?")
            var history = HistoryRecord()
            var count = 0
            var files: [String] = []
            for id in ids {
                let replaced = external.isEmpty ? [] : try externalFileNames(of: id, slots: external)
                statement.reset()
                for (i, slot) in slots.enumerated() { try statement.bind(values[slot]!, at: Int32(i + 1)) }
                statement.bindInt(id.key, at: Int32(slots.count + 1))
                if try statement.run() > 0 {
                    files += replaced
                    count += 1
                    history.updates.append((id, slots.map { entity.slots[$0].name }))
                }
            }
            Probe.count(.batchRowUpdated, count)
            lastHistoryToken = try recordHistory(history, author: author, contextName: contextName)
            replacedFiles = files
            return count
        }
        // Removed once the transaction committed: a failed commit keeps the rows that refer to them.
        externalData?.remove(replacedFiles)
        return count
    }

    /// Deletes rows and applies delete rules in SQL: nullify clears the inverse's column (bumping its
    /// version), cascade deletes the destinations, deny refuses while destinations exist.
    func batchDelete(_ ids: [ManagedObjectID], author: String?, contextName: String?) throws -> [ManagedObjectID] {
        var deletedFiles: [String] = []
        let deletedIDs = try runBatch {
            var files: [String] = []
            var history = HistoryRecord()
            var deleted: [ManagedObjectID] = []
            // Rows written, counted once every row is (a request a deny rule stops writes none).
            var nullified = 0
            var queue = ids
            var seen = Set<ManagedObjectID>()
            while let id = queue.popLast() {
                guard seen.insert(id).inserted else { continue }
                let entity = id.entity
                for relationship in entity.relationships {
                    guard let destination = entity.destinationEntity(ofRelationship: relationship.name) else { continue }
                    var targets: [ManagedObjectID] = []
                    if relationship.isToMany {
                        targets = try relatedKeys(of: id, relationship: relationship)
                    } else if let slot = entity.slotIndex(of: relationship.name), let row = try rows(of: entity, keys: [id.key])[id.key],
                              case .objectID(let target) = row.values[slot] {
                        targets = [target]
                    }
                    switch relationship.deleteRule {
                    case .deny where !targets.isEmpty:
                        throw ObjectGraphError(.relationshipDeniedDelete, "a batch delete cannot delete \(id): \(relationship.name) is not empty and its delete rule is deny", entity: entity.name, objectID: id, property: relationship.name, storePath: url?.path)
                    case .cascade:
                        queue.append(contentsOf: targets)
                    case .nullify:
                        if let inverseSlot = destination.slotIndex(of: relationship.inverseName) {
                            let column = destination.columnName(forSlot: inverseSlot)
                            // A to-one into a hierarchy loses its destination's Z_ENT with its key (Docs/coredata-behaviour.md §11.2).
                            let kind = destination.entityColumns[inverseSlot].map { ", \($0) = NULL" } ?? ""
                            let s = try connection.cachedStatement("UPDATE \(destination.tableName) SET Z_OPT = Z_OPT + 1, \(column) = NULL\(kind) WHERE \(column) = ?")
                            s.bindInt(id.key, at: 1)
                            nullified += try s.run()
                            for t in targets { history.updates.append((t, [relationship.inverseName])) }
                        }
                    default:
                        break
                    }
                    if SQLiteSchema.isManyToMany(entity, relationship) {
                        let s = try connection.cachedStatement(SQLiteSchema.joinTable(entity, relationship).deleteRowsSQL(of: entity, relationship))
                        s.bindInt(id.key, at: 1)
                        try s.run()
                    }
                }
                var tombstone: [String: PropertyValue] = [:]
                // The row is read for its tombstone only when history is kept and some attribute keeps its value.
                if historyTracking, entity.slots.contains(where: { if case .attribute(let a) = $0 { a.preservesValueInHistoryOnDeletion } else { false } }),
                   let row = try rows(of: entity, keys: [id.key])[id.key] {
                    for (slot, s) in entity.slots.enumerated() {
                        if case .attribute(let a) = s, a.preservesValueInHistoryOnDeletion { tombstone[a.name] = row.values[slot] }
                    }
                }
                // Docs/coredata-behaviour.md §11.4: only a row of the ID's own entity (nothing added outside a hierarchy).
                let kind = entity.entityCondition(alias: entity.tableName, includesSubentities: false).map { " AND \($0)" } ?? ""
                let statement = try connection.cachedStatement("DELETE FROM \(entity.tableName) WHERE Z_PK = ?\(kind)")
                statement.bindInt(id.key, at: 1)
                let held = externalData == nil || entity.externalStorageSlots.isEmpty ? [] : try externalFileNames(of: id, slots: entity.externalStorageSlots)
                if try statement.run() > 0 {
                    files += held
                    deleted.append(id)
                    history.deletes.append((id, tombstone))
                }
            }
            Probe.count(.batchRowUpdated, nullified)
            Probe.count(.batchRowDeleted, deleted.count)
            lastHistoryToken = try recordHistory(history, author: author, contextName: contextName)
            deletedFiles = files
            return deleted
        }
        // Removed once the transaction committed: a failed commit keeps the rows that refer to them.
        externalData?.remove(deletedFiles)
        return deletedIDs
    }

    /// Batch rows' values of attributes that allow external storage, kept inline with their marker
    /// (Docs/coredata-behaviour.md §13.5): a batch request writes no files.
    private func inlined(_ rows: [[PropertyValue]], _ entity: EntityDescription) -> [[PropertyValue]] {
        guard externalData != nil, !entity.externalStorageSlots.isEmpty else { return rows }
        return rows.map { row in
            var row = row
            for slot in entity.externalStorageSlots where slot < row.count { row[slot] = inlined(row[slot]) }
            return row
        }
    }

    private func inlined(_ value: PropertyValue) -> PropertyValue {
        guard case .data(let data) = value else { return value }
        return .data(Data([SQLiteExternalData.inlineMarker]) + data)
    }
}
