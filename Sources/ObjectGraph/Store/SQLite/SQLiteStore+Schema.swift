import CSQLite
import Foundation

/// Core Data's SQLite layout (architecture.md "Storage layout"): `Z<ENTITY>` tables, `Z_PRIMARYKEY`,
/// `Z_METADATA`, join tables for many-to-many relationships.
enum SQLiteSchema {
    static func columnType(_ slot: EntityDescription.Slot) -> String {
        switch slot {
        case .toOne: return "INTEGER"
        case .attribute(let a):
            switch a.type {
            case .integer16, .integer32, .integer64, .boolean: return "INTEGER"
            case .double, .float, .date: return "REAL"
            case .decimal, .string, .uuid, .uri: return "TEXT"
            case .binaryData, .transformable: return "BLOB"
            }
        }
    }

    /// The join table of a many-to-many relationship, named from the side whose name sorts first, as
    /// `Z_<ent><RELATIONSHIP>` with columns `Z_<ent><INVERSE>` (that side's key) and `Z_<destEnt><RELATIONSHIP>`.
    /// A relationship that is its own inverse (`Person.friends`) would name both columns alike; as Core Data
    /// does, the second gets a `1` suffix (`Z_1FRIENDS`, `Z_1FRIENDS1`).
    struct JoinTable {
        let name: String
        /// Column holding the key of `ownerEntity`'s row.
        let ownerColumn: String
        /// Column holding the key of the destination's row.
        let destinationColumn: String
        let ownerEntity: EntityDescription
        let ownerRelationship: String
        /// The relationship is its own inverse: a membership is stored from each side (the pair (a, b) and the
        /// pair (b, a)), since both objects change when one is added to the other.
        let isSelfInverse: Bool

        /// Whether `relationship` of `entity` is the side whose key is in ``ownerColumn`` (a sub-entity owns the
        /// side its parent declared).
        func isOwned(by entity: EntityDescription, _ relationship: RelationshipDescription) -> Bool {
            ownerRelationship == relationship.name && ownerEntity === entity.declaringEntity(ofRelationship: relationship.name)
        }

        /// `DELETE` of every row naming an object of `entity` through `relationship` (bind its key at `?1`).
        /// For a self-inverse relationship the key may be in either column.
        func deleteRowsSQL(of entity: EntityDescription, _ relationship: RelationshipDescription) -> String {
            if isSelfInverse { return "DELETE FROM \(name) WHERE \(ownerColumn) = ?1 OR \(destinationColumn) = ?1" }
            return "DELETE FROM \(name) WHERE \(isOwned(by: entity, relationship) ? ownerColumn : destinationColumn) = ?1"
        }
    }

    static func isManyToMany(_ entity: EntityDescription, _ relationship: RelationshipDescription) -> Bool {
        guard relationship.isToMany, let destination = entity.destinationEntity(ofRelationship: relationship.name),
              let inverse = destination.relationship(named: relationship.inverseName) else { return false }
        return inverse.isToMany
    }

    static func joinTable(_ entity: EntityDescription, _ relationship: RelationshipDescription) -> JoinTable {
        let entity = entity.declaringEntity(ofRelationship: relationship.name)
        let destination = entity.destinationEntity(ofRelationship: relationship.name)!
        let canonical = (entity.name, relationship.name) <= (destination.name, relationship.inverseName)
        let (owner, ownerRel, other, otherRel) = canonical
            ? (entity, relationship.name, destination, relationship.inverseName)
            : (destination, relationship.inverseName, entity, relationship.name)
        let ownerColumn = "Z_\(owner.entityNumber)\(otherRel.uppercased())"
        var destinationColumn = "Z_\(other.entityNumber)\(ownerRel.uppercased())"
        // Rule 20: only a self-inverse relationship makes the two names equal.
        if destinationColumn == ownerColumn { destinationColumn += "1" }
        return JoinTable(
            name: "Z_\(owner.entityNumber)\(ownerRel.uppercased())",
            ownerColumn: ownerColumn, destinationColumn: destinationColumn,
            ownerEntity: owner, ownerRelationship: ownerRel,
            isSelfInverse: owner === other && ownerRel == otherRel)
    }

    /// Where a row's place in an ordered relationship is kept (Docs/coredata-behaviour.md §12.2): for a
    /// one-to-many, the column `Z_FOK_<INVERSE>` of the destination's table beside the inverse's foreign key
    /// `Z<INVERSE>`; for a many-to-many, the column `Z_FOK_<n><NAME>` of the join table, named after the join
    /// column that holds the relationship's destinations (`Z_<n><NAME>`).
    struct OrderColumn {
        /// The table that holds the column.
        let table: String
        let column: String
        /// The column that names the owner: the foreign key of a one-to-many, the owner's join column.
        let ownerColumn: String
        /// The column that names the member: `Z_PK` of a one-to-many, the member's join column.
        let memberColumn: String
    }

    /// The order column of an ordered to-many `relationship` of `entity`; nil for any other relationship.
    static func orderColumn(_ entity: EntityDescription, _ relationship: RelationshipDescription) -> OrderColumn? {
        guard relationship.isOrdered, relationship.isToMany, let destination = entity.destinationEntity(ofRelationship: relationship.name) else { return nil }
        if isManyToMany(entity, relationship) {
            let join = joinTable(entity, relationship)
            let mine = join.isOwned(by: entity, relationship)
            let (owner, member) = mine ? (join.ownerColumn, join.destinationColumn) : (join.destinationColumn, join.ownerColumn)
            return OrderColumn(table: join.name, column: "Z_FOK_" + member.dropFirst(2), ownerColumn: owner, memberColumn: member)
        }
        guard let slot = destination.slotIndex(of: relationship.inverseName) else { return nil }
        let foreignKey = destination.columnName(forSlot: slot)
        return OrderColumn(table: destination.tableName, column: "Z_FOK_" + foreignKey.dropFirst(), ownerColumn: foreignKey, memberColumn: "Z_PK")
    }

    /// The order column beside a to-one slot of `entity`, when the slot's inverse is an ordered to-many.
    static func orderColumn(ofSlot slot: Int, in entity: EntityDescription) -> String? {
        guard case .toOne(let r) = entity.slots[slot], let destination = entity.slotDestinations[slot],
              destination.relationship(named: r.inverseName)?.isOrdered == true else { return nil }
        return "Z_FOK_" + entity.columnName(forSlot: slot).dropFirst()
    }

    /// The order columns of a many-to-many's join table (one per ordered side), in the order of its columns.
    static func joinOrderColumns(_ entity: EntityDescription, _ relationship: RelationshipDescription) -> [String] {
        guard let destination = entity.destinationEntity(ofRelationship: relationship.name),
              let inverse = destination.relationship(named: relationship.inverseName) else { return [] }
        let join = joinTable(entity, relationship)
        let (ownerEntity, ownerSide) = join.isOwned(by: entity, relationship) ? (entity, relationship) : (destination, inverse)
        let (otherEntity, otherSide) = ownerEntity === entity ? (destination, inverse) : (entity, relationship)
        return [orderColumn(ownerEntity, ownerSide)?.column, join.isSelfInverse ? nil : orderColumn(otherEntity, otherSide)?.column].compactMap { $0 }
    }

    /// The store name of a fetch index: `Z_<Entity>_<name>`, the entity's name as the model spells it
    /// (Docs/coredata-behaviour.md §4.1).
    static func fetchIndexName(_ entity: EntityDescription, _ index: FetchIndexDescription) -> String {
        "Z_\(entity.name)_\(index.name)"
    }

    /// An index the store creates, with what declares it (so that a clash of names is reported on the model).
    struct StoreIndex {
        /// Its name in the file.
        var name: String
        /// The entity and the property (an attribute or a to-one) or fetch index that declare it.
        var entity: String
        var property: String?
        var fetchIndex: String?
        /// Its `CREATE INDEX` statement.
        var sql: String
    }

    /// The index of one column: `<TABLE>_<COLUMN>_INDEX`, the layout of an indexed attribute's, a to-one's and a
    /// join table's destination index.
    static func columnIndex(table: String, column: String, entity: String, property: String?) -> StoreIndex {
        let name = "\(table)_\(column)_INDEX"
        return StoreIndex(name: name, entity: entity, property: property, fetchIndex: nil, sql: "CREATE INDEX \(name) ON \(table) (\(column))")
    }

    /// The indexes of a hierarchy's shared table (Docs/coredata-behaviour.md §4.1): each to-one's, then each
    /// indexed attribute's (both ``columnIndex(table:column:entity:property:)``), then each fetch index, its
    /// elements in order with Core Data's binary collation and direction. A member's index covers every row of
    /// the table (its properties' columns are NULL in other members' rows).
    static func indexes(ofHierarchy root: EntityDescription) -> [StoreIndex] {
        let hierarchy = root.hierarchy, table = root.tableName
        var indexes: [StoreIndex] = []
        var named = Set<String>()
        for member in hierarchy {
            for (i, slot) in member.slots.enumerated() {
                let column = member.columnName(forSlot: i)
                guard named.insert(column).inserted, case .toOne(let relationship) = slot else { continue }
                indexes.append(columnIndex(table: table, column: column, entity: member.name, property: relationship.name))
            }
        }
        for member in hierarchy {
            for (slot, entry) in member.slots.enumerated() {
                guard case .attribute(let a) = entry, a.isIndexed, member.declaredAttributes.contains(where: { $0.name == a.name }) else { continue }
                indexes.append(columnIndex(table: table, column: member.columnName(forSlot: slot), entity: member.name, property: a.name))
            }
            for index in member.fetchIndexes {
                let columns = index.elements.map { element in
                    "\(member.columnName(forSlot: member.slotIndex(of: element.property)!)) COLLATE BINARY \(element.isAscending ? "ASC" : "DESC")"
                }
                let name = fetchIndexName(member, index)
                indexes.append(StoreIndex(name: name, entity: member.name, property: nil, fetchIndex: index.name,
                                          sql: "CREATE INDEX IF NOT EXISTS \(name) ON \(table) (\(columns.joined(separator: ", ")))"))
            }
        }
        return indexes
    }

    static func createStatements(for model: ManagedObjectModel) -> [String] {
        var sql: [String] = [
            "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)",
            "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_HASH VARCHAR, Z_PLIST BLOB)",
        ]
        var joinTables = Set<String>()
        for entity in model.entities {
            // Docs/coredata-behaviour.md §11.2: one table per hierarchy, made with its root: every column of every entity in it.
            if entity.superentity == nil {
                let hierarchy = entity.hierarchy
                var columns = ["Z_PK INTEGER PRIMARY KEY", "Z_ENT INTEGER", "Z_OPT INTEGER"]
                var named = Set<String>()
                for member in hierarchy {
                    for (i, slot) in member.slots.enumerated() {
                        let column = member.columnName(forSlot: i)
                        guard named.insert(column).inserted else { continue }
                        columns.append("\(column) \(columnType(slot))")
                        if let order = orderColumn(ofSlot: i, in: member), named.insert(order).inserted { columns.append("\(order) INTEGER") }
                        if let entityColumn = member.entityColumns[i], named.insert(entityColumn).inserted {
                            columns.append("\(entityColumn) INTEGER")
                        }
                    }
                }
                sql.append("CREATE TABLE \(entity.tableName) (\(columns.joined(separator: ", ")))")
                sql += indexes(ofHierarchy: entity).map(\.sql)
                // A constraint holds across the entity that declares it and those below it; one declared below
                // the root is a partial index over their rows only.
                var n = 0
                for member in hierarchy {
                    for (c, slots) in member.constraintSlots.enumerated() where member.constraintDeclarers[c] === member {
                        let columns = slots.map { member.columnName(forSlot: $0) }.joined(separator: ", ")
                        let rows = member.superentity == nil ? "" : " WHERE Z_ENT IN (\(member.kindNumbers.map(String.init).joined(separator: ", ")))"
                        sql.append("CREATE UNIQUE INDEX \(entity.tableName)_UNIQUE_\(n) ON \(entity.tableName) (\(columns))\(rows)")
                        n += 1
                    }
                }
            }
            sql.append("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (\(entity.entityNumber), '\(entity.name)', \(entity.superentity?.entityNumber ?? 0), 0)")
            for relationship in entity.relationships where isManyToMany(entity, relationship) {
                let join = joinTable(entity, relationship)
                guard joinTables.insert(join.name).inserted else { continue }
                let orderColumns = joinOrderColumns(entity, relationship).map { ", \($0) INTEGER" }.joined()
                sql.append("CREATE TABLE \(join.name) (\(join.ownerColumn) INTEGER, \(join.destinationColumn) INTEGER\(orderColumns), PRIMARY KEY (\(join.ownerColumn), \(join.destinationColumn)))")
                sql.append(columnIndex(table: join.name, column: join.destinationColumn, entity: entity.name, property: relationship.name).sql)
            }
        }
        return sql
    }
}
