import CSQLite
import Foundation
import Synchronization

/// Lightweight migration: a store made with one of the model's previous versions is brought to
/// the current version in place, with a mapping inferred from names and `renamingIdentifier`s, as Core Data's
/// SQLite store does it: new tables, rows copied with `INSERT … SELECT`, old tables dropped, all in one SQLite
/// transaction, so a failure or a kill leaves the old store whole.
///
/// What the inferred mapping covers: entities and properties added, removed or renamed (`renamingIdentifier`
/// names the previous version's entity or property), an optional attribute made required when it has a default
/// (NULLs become the default), a required attribute made optional. What it refuses with 134140 (no mapping model):
/// an attribute whose type changed, a required attribute or relationship added without a default, a to-many
/// changed to a to-one or back, a relationship whose destination changed.
/// Called at each step of a migration with the step's name: tests make a step fail to check the rollback, and the
/// kill harness pauses there so that its kills land inside the migration.
package enum MigrationHooks {
    package static let step = Mutex<(@Sendable (String) throws -> Void)?>(nil)
}

extension SQLiteStore {
    /// How one destination entity's table is filled.
    struct EntityPlan {
        let destination: EntityDescription
        let source: EntityDescription?
        /// The SELECT expression of each destination slot, in slot order (`?` for a bound default).
        var expressions: [String] = []
        var arguments: [PropertyValue] = []
        /// Source columns that must hold no NULL (an optional attribute made required without a default).
        var mustNotBeNull: [(column: String, property: String)] = []
    }

    static func inferMapping(from source: ManagedObjectModel, to destination: ManagedObjectModel, path: String) throws -> [EntityPlan] {
        func refuse(_ entity: String, _ property: String?, _ why: String) -> ObjectGraphError {
            ObjectGraphError(.migrationMissingMappingModel, "cannot infer a mapping from version \(source.versionName ?? "?") to \(destination.versionName ?? "?"): \(why)",
                             entity: entity, property: property, storePath: path)
        }
        var claimed = Set<String>()
        var plans: [EntityPlan] = []
        for entity in destination.entities {
            let sourceName = entity.renamingIdentifier ?? entity.name
            let old = source.entity(named: sourceName)
            if let old, !claimed.insert(old.name).inserted {
                throw refuse(entity.name, nil, "two entities map to \(old.name) of the previous version")
            }
            // An entity keeps its place in its hierarchy. Moving one into or out of a hierarchy
            // (a parent added, removed or changed) is refused: we have no evidence of what Core Data infers there.
            if let old {
                let parent = entity.superentity.map { $0.renamingIdentifier ?? $0.name }
                if parent != old.parentName {
                    throw refuse(entity.name, nil, "\(entity.name)'s parent changed from \(old.parentName ?? "none") to \(entity.parentName ?? "none") (moving an entity into or out of a hierarchy is not inferred)")
                }
            }
            var plan = EntityPlan(destination: entity, source: old)
            for slot in entity.slots {
                switch slot {
                case .attribute(let a):
                    let oldSlot = old.flatMap { $0.slotIndex(of: a.renamingIdentifier ?? a.name) }
                    if let old, let j = oldSlot, case .attribute(let previous) = old.slots[j] {
                        guard previous.type == a.type else {
                            throw refuse(entity.name, a.name, "\(entity.name).\(a.name) changed type from \(previous.type.rawValue) to \(a.type.rawValue)")
                        }
                        // Docs/coredata-behaviour.md §13.5: values move into the marked column form; a value kept
                        // in a file cannot move back into the row in SQL.
                        if previous.allowsExternalBinaryDataStorage, !a.allowsExternalBinaryDataStorage {
                            throw refuse(entity.name, a.name, "\(entity.name).\(a.name) stops allowing external storage (values kept in files are not moved back into the store)")
                        }
                        let copied = old.columnName(forSlot: j)
                        let column = a.allowsExternalBinaryDataStorage && !previous.allowsExternalBinaryDataStorage
                            ? "CAST(X'01' || \(copied) AS BLOB)" : copied
                        // A required attribute gets no NULL, whatever the previous version said: the version hash
                        // does not cover optionality, so the store may come from a version where it was optional.
                        if !a.isOptional {
                            if let fill = Self.storedDefault(a) {
                                plan.expressions.append("COALESCE(\(column), ?)")
                                plan.arguments.append(fill)
                                continue
                            }
                            plan.mustNotBeNull.append((column, a.name))
                        }
                        plan.expressions.append(column)
                    } else if let fill = Self.storedDefault(a) {
                        plan.expressions.append("?")
                        plan.arguments.append(fill)
                    } else if a.isOptional {
                        plan.expressions.append("NULL")
                    } else {
                        throw refuse(entity.name, a.name, "\(entity.name).\(a.name) is required, has no default and no value in the previous version")
                    }
                case .toOne(let r):
                    let oldName = r.renamingIdentifier ?? r.name
                    // Stored relationships only: a transient one had no column to copy (it counts as new).
                    if let old, let previous = old.relationships.first(where: { $0.name == oldName }), let j = old.slotIndex(of: oldName) {
                        guard !previous.isToMany else { throw refuse(entity.name, r.name, "\(entity.name).\(r.name) was a to-many") }
                        guard Self.sameDestination(r, previous, in: destination) else {
                            throw refuse(entity.name, r.name, "\(entity.name).\(r.name) now points at another entity")
                        }
                        plan.expressions.append(old.columnName(forSlot: j))
                    } else if r.isOptional {
                        plan.expressions.append("NULL")
                    } else {
                        throw refuse(entity.name, r.name, "\(entity.name).\(r.name) is a required relationship new in this version")
                    }
                }
            }
            for r in entity.relationships where r.isToMany {
                guard let old, let previous = old.relationships.first(where: { $0.name == (r.renamingIdentifier ?? r.name) }) else { continue }
                guard previous.isToMany else { throw refuse(entity.name, r.name, "\(entity.name).\(r.name) was a to-one") }
                guard Self.sameDestination(r, previous, in: destination) else {
                    throw refuse(entity.name, r.name, "\(entity.name).\(r.name) now points at another entity")
                }
            }
            plans.append(plan)
        }
        return plans
    }

    /// Docs/coredata-behaviour.md §12.5: the place kept beside a to-one whose inverse is ordered, as copied: the
    /// previous version's place when the relationship was ordered then; else the row's rank among its owner's
    /// rows by primary key (the order an unordered relationship reads in); NULL for a to-one new in this version.
    static func orderExpression(_ entity: EntityDescription, slot: Int, old: EntityDescription) -> String {
        guard case .toOne(let r) = entity.slots[slot], let j = old.slotIndex(of: r.renamingIdentifier ?? r.name) else { return "NULL" }
        if let previous = SQLiteSchema.orderColumn(ofSlot: j, in: old) { return previous }
        let key = old.columnName(forSlot: j)
        guard old.isInHierarchy else { return "CASE WHEN \(key) IS NULL THEN NULL ELSE ROW_NUMBER() OVER (PARTITION BY \(key) ORDER BY Z_PK) END" }
        // The rows of a hierarchy are copied one entity at a time; the rank counts the owner's rows of every entity
        // of the table (a window would count those of the one copied only).
        let table = "\(old.tableName)__OLD"
        return "CASE WHEN \(key) IS NULL THEN NULL ELSE (SELECT COUNT(*) FROM \(table) AS r WHERE r.\(key) = \(table).\(key) AND r.Z_PK <= \(table).Z_PK) END"
    }

    /// The order columns of a new many-to-many join table with what fills each from the previous version's join
    /// table (§12.5): its place there when that side was ordered, else the rank of the member's key within its owner.
    static func joinOrderCopies(_ entity: EntityDescription, _ r: RelationshipDescription, _ old: EntityDescription, _ previous: RelationshipDescription) -> [(column: String, expression: String)] {
        guard let destination = entity.destinationEntity(ofRelationship: r.name), let inverse = destination.relationship(named: r.inverseName),
              let oldDestination = old.destinationEntity(ofRelationship: previous.name), let oldInverse = oldDestination.relationship(named: previous.inverseName) else { return [] }
        var copies: [(column: String, expression: String)] = []
        for (side, sideEntity, oldSide, oldSideEntity) in [(r, entity, previous, old), (inverse, destination, oldInverse, oldDestination)] {
            guard let order = SQLiteSchema.orderColumn(sideEntity, side), !copies.contains(where: { $0.column == order.column }) else { continue }
            let oldJoin = SQLiteSchema.joinTable(oldSideEntity, oldSide)
            let (oldOwner, oldMember) = oldJoin.isOwned(by: oldSideEntity, oldSide) ? (oldJoin.ownerColumn, oldJoin.destinationColumn) : (oldJoin.destinationColumn, oldJoin.ownerColumn)
            let expression = SQLiteSchema.orderColumn(oldSideEntity, oldSide)?.column ?? "ROW_NUMBER() OVER (PARTITION BY \(oldOwner) ORDER BY \(oldMember))"
            copies.append((order.column, expression))
        }
        return copies
    }

    /// The `Z_ENT` column of a to-one into a hierarchy, as copied: the previous version's
    /// column with its numbers mapped to this version's, or, where the destination had no sub-entities then,
    /// the destination's number.
    static func referenceEntityExpression(_ entity: EntityDescription, slot: Int, old: EntityDescription,
                                          numbers: [(Int, Int)], in destination: ManagedObjectModel) -> String {
        guard case .toOne(let r) = entity.slots[slot], let target = entity.slotDestinations[slot] else { return "NULL" }
        let oldName = r.renamingIdentifier ?? r.name
        guard let j = old.slotIndex(of: oldName) else { return "NULL" }
        if let oldColumn = old.entityColumns[j] {
            let cases = numbers.map { "WHEN \($0.0) THEN \($0.1)" }.joined(separator: " ")
            return "CASE \(oldColumn) \(cases) ELSE NULL END"
        }
        return "CASE WHEN \(old.columnName(forSlot: j)) IS NULL THEN NULL ELSE \(target.entityNumber) END"
    }

    /// A default as the store keeps it (the attribute's type), nil for none.
    static func storedDefault(_ a: AttributeDescription) -> PropertyValue? {
        guard a.defaultValue != .null else { return nil }
        return a.defaultValue.converted(to: a.type) ?? a.defaultValue
    }

    /// Whether a relationship and its previous version point at the same entity (renamed or not).
    static func sameDestination(_ r: RelationshipDescription, _ previous: RelationshipDescription, in destination: ManagedObjectModel) -> Bool {
        destination.entity(named: r.destinationEntityName).map { $0.renamingIdentifier ?? $0.name } == previous.destinationEntityName
    }

    /// Migrates the open store at `db` from `source` to `destination` (both checked: the store's hash is the
    /// source's). One `BEGIN IMMEDIATE` transaction; on any error it is rolled back and the error thrown.
    /// Returns the rows copied (0 when another coordinator had migrated the store already).
    @discardableResult
    static func migrate(_ db: SQLiteConnection, from source: ManagedObjectModel, to destination: ManagedObjectModel, inferMapping: Bool, path: String) throws -> Int {
        guard inferMapping else {
            throw ObjectGraphError(.migrationMissingMappingModel,
                                   "the store was made with version \(source.versionName ?? "?") of the model; migrating it needs a mapping model, and inferring one was not asked for (inferMappingModel)",
                                   storePath: path)
        }
        let plans = try Self.inferMapping(from: source, to: destination, path: path)
        func step(_ name: String) throws { try MigrationHooks.step.withLock { $0 }?(name) }
        try db.execute("BEGIN IMMEDIATE")
        do {
            // Another coordinator may have migrated it while we waited for the lock.
            if let metadata = try readMetadataForMigration(db), metadata == destination.versionHash {
                try db.execute("COMMIT")
                return 0
            }
            var copied = 0
            var maxKeys: [String: Int64] = [:]
            for row in try db.query("SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY") {
                if let name = row[0].string { maxKeys[name] = row[1].int64 ?? 0 }
            }
            // The previous version's tables move aside (their indexes dropped: the new tables reuse the names).
            var oldTables: [String] = []
            for entity in source.entities where !oldTables.contains(entity.tableName) { oldTables.append(entity.tableName) }
            for entity in source.entities {
                for r in entity.relationships where SQLiteSchema.isManyToMany(entity, r) {
                    let name = SQLiteSchema.joinTable(entity, r).name
                    if !oldTables.contains(name) { oldTables.append(name) }
                }
            }
            for table in oldTables {
                for index in try db.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = '\(table)' AND sql IS NOT NULL") {
                    if let name = index[0].string { try db.execute("DROP INDEX \(name)") }
                }
                try db.execute("ALTER TABLE \(table) RENAME TO \(table)__OLD")
            }
            try db.execute("DROP TABLE Z_PRIMARYKEY")
            try step("tablesMovedAside")
            for statement in SQLiteSchema.createStatements(for: destination) where !statement.hasPrefix("CREATE TABLE Z_METADATA") {
                try db.execute(statement)
            }
            try step("tablesCreated")
            // Z_ENT numbers of the previous version → this one's, for rows and references.
            let numbers = plans.compactMap { plan in plan.source.map { ($0.entityNumber, plan.destination.entityNumber) } }
            for plan in plans {
                guard let old = plan.source else { continue }
                // A hierarchy's rows are copied entity by entity from their shared table.
                let rowsOfOld = old.isInHierarchy ? " AND Z_ENT = \(old.entityNumber)" : ""
                for (column, property) in plan.mustNotBeNull {
                    let nulls = try db.query("SELECT count(*) FROM \(old.tableName)__OLD WHERE \(column) IS NULL\(rowsOfOld)").first?[0].int64 ?? 0
                    if nulls > 0 {
                        throw ObjectGraphError(.migration, "\(nulls) row(s) of \(plan.destination.name) have no \(property), which this version makes required without a default; the store is left as it was",
                                               entity: plan.destination.name, property: property, storePath: path)
                    }
                }
                let entity = plan.destination
                var columns = ["Z_PK", "Z_ENT", "Z_OPT"] + entity.slots.indices.map { entity.columnName(forSlot: $0) }
                var select = ["Z_PK", String(entity.entityNumber), "Z_OPT"] + plan.expressions
                for slot in entity.entityColumnSlots {
                    columns.append(entity.entityColumns[slot]!)
                    select.append(Self.referenceEntityExpression(entity, slot: slot, old: old, numbers: numbers, in: destination))
                }
                if destination.hasOrderedRelationships {
                    for slot in entity.slots.indices {
                        guard let order = SQLiteSchema.orderColumn(ofSlot: slot, in: entity) else { continue }
                        columns.append(order)
                        select.append(Self.orderExpression(entity, slot: slot, old: old))
                    }
                }
                let onlyOld = old.isInHierarchy ? " WHERE Z_ENT = \(old.entityNumber)" : ""
                let insert = try db.statement("INSERT INTO \(entity.tableName) (\(columns.joined(separator: ", "))) SELECT \(select.joined(separator: ", ")) FROM \(old.tableName)__OLD\(onlyOld)")
                try insert.bind(plan.arguments)
                let rows = try insert.run()
                copied += rows
                Probe.count(.rowMigrated, rows)
                let update = try db.statement("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?")
                try update.bind([.integer(maxKeys[old.name] ?? 0), .integer(Int64(entity.entityNumber))])
                try update.run()
            }
            try step("rowsCopied")
            try copyJoinTables(db, plans)
            for table in oldTables { try db.execute("DROP TABLE \(table)__OLD") }
            try step("oldTablesDropped")
            // Persistent history survives: its changes name entities by number, which may have moved; the changes
            // of entities this version removed go (their objects are gone with their tables).
            if try !db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'ACHANGE'").isEmpty {
                let kept = Set(numbers.map(\.0))
                let removed = source.entities.map(\.entityNumber).filter { !kept.contains($0) }
                if !removed.isEmpty { try db.execute("DELETE FROM ACHANGE WHERE ZENTITY IN (\(removed.map(String.init).joined(separator: ", ")))") }
                let moved = numbers.filter { $0.0 != $0.1 }
                if !moved.isEmpty {
                    let cases = moved.map { "WHEN \($0.0) THEN \($0.1)" }.joined(separator: " ")
                    try db.execute("UPDATE ACHANGE SET ZENTITY = CASE ZENTITY \(cases) ELSE ZENTITY END")
                }
            }
            let stamp = try db.statement("UPDATE Z_METADATA SET Z_HASH = ? WHERE Z_VERSION = 1")
            try stamp.bind([.string(destination.versionHash)])
            try stamp.run()
            try step("beforeCommit")
            try db.execute("COMMIT")
            return copied
        } catch {
            try? db.execute("ROLLBACK")
            if let error = error as? ObjectGraphError { throw error }
            if let error = error as? SQLiteError { throw ObjectGraphError(.migration, "the migration failed and was rolled back: \(error.description)", storePath: path) }
            throw ObjectGraphError(.migration, "the migration failed and was rolled back: \(error)", storePath: path)
        }
    }

    /// Many-to-many memberships, column by column: each side's key goes where the new table keeps it, with the
    /// places of an ordered side (Docs/coredata-behaviour.md §12.5).
    private static func copyJoinTables(_ db: SQLiteConnection, _ plans: [EntityPlan]) throws {
        var copiedJoins = Set<String>()
        for plan in plans {
            guard let old = plan.source else { continue }
            for r in plan.destination.relationships where SQLiteSchema.isManyToMany(plan.destination, r) {
                let join = SQLiteSchema.joinTable(plan.destination, r)
                guard !copiedJoins.contains(join.name),
                      let previous = old.relationships.first(where: { $0.name == (r.renamingIdentifier ?? r.name) }), SQLiteSchema.isManyToMany(old, previous) else { continue }
                copiedJoins.insert(join.name)
                let oldJoin = SQLiteSchema.joinTable(old, previous)
                let (newMine, newTheirs) = join.isOwned(by: plan.destination, r) ? (join.ownerColumn, join.destinationColumn) : (join.destinationColumn, join.ownerColumn)
                let (oldMine, oldTheirs) = oldJoin.isOwned(by: old, previous) ? (oldJoin.ownerColumn, oldJoin.destinationColumn) : (oldJoin.destinationColumn, oldJoin.ownerColumn)
                let orders = Self.joinOrderCopies(plan.destination, r, old, previous)
                try db.execute("INSERT OR IGNORE INTO \(join.name) (\(([newMine, newTheirs] + orders.map(\.column)).joined(separator: ", "))) SELECT \(([oldMine, oldTheirs] + orders.map(\.expression)).joined(separator: ", ")) FROM \(oldJoin.name)__OLD")
                // A self-inverse relationship stores each link from both sides (SQLiteSchema.JoinTable): one made
                // from a pair of relationships gets the other direction too.
                if join.isSelfInverse, !oldJoin.isSelfInverse {
                    try db.execute("INSERT OR IGNORE INTO \(join.name) (\(newMine), \(newTheirs)) SELECT \(oldTheirs), \(oldMine) FROM \(oldJoin.name)__OLD")
                }
            }
        }
    }

    private static func readMetadataForMigration(_ db: SQLiteConnection) throws -> String? {
        try db.query("SELECT Z_HASH FROM Z_METADATA WHERE Z_VERSION = 1").first?[0].string
    }
}

extension ManagedObjectModel {
    /// Throws 134140, naming the entity and property, when a store made with `source` cannot be migrated to this
    /// model with an inferred mapping, before any store is touched.
    public func checkInferredMapping(from source: ManagedObjectModel) throws {
        _ = try SQLiteStore.inferMapping(from: source, to: self, path: "")
    }
}
