import CSQLite
import Foundation

/// The predicate has a shape this store does not translate; the coordinator evaluates it in memory.
struct UntranslatablePredicate: Error {}

/// Builds `SELECT … FROM Z<ENTITY> t0 LEFT JOIN … WHERE … ORDER BY …` for a fetch. Key paths through to-one
/// relationships become joins; comparisons on plain attributes stay index-friendly (`=`, `IN`, ranges).
struct SQLiteQueryBuilder {
    let root: EntityDescription
    private(set) var joins: [String] = []
    private var aliases: [String: (alias: String, entity: EntityDescription)] = [:]
    private(set) var arguments: [PropertyValue] = []

    /// Table alias prefix: `t` for the fetch, `s1`, `s2`… for subqueries over to-many relationships.
    private let aliasPrefix: String
    private var subqueryCounter: Int

    init(root: EntityDescription, prefix: String = "t", subqueryCounter: Int = 0) {
        self.root = root
        self.aliasPrefix = prefix
        self.subqueryCounter = subqueryCounter
    }

    struct Column {
        var sql: String
        var attributeType: AttributeType?
        var isRelationship: Bool
        /// A binary attribute that allows external storage: its column holds a marker byte before the value or the
        /// file's name (§13.5), so it compares with nil only.
        var isExternal = false
    }

    /// The SQL for the value of a key path; throws ``UntranslatablePredicate`` for to-many paths and
    /// operators, and ``ObjectGraphError`` for keys that do not exist.
    mutating func column(_ keyPath: String) throws -> Column {
        let parts = keyPath.split(separator: ".").map(String.init)
        var entity = root
        var alias = "\(aliasPrefix)0"
        var prefix = ""
        for (i, key) in parts.enumerated() {
            if key.hasPrefix("@") { throw UntranslatablePredicate() }
            guard let ref = entity.propertiesByName[key] else {
                throw ObjectGraphError(.invalidFetchRequest, "keypath \(keyPath) not found in entity \(root.name)", entity: root.name, property: keyPath)
            }
            let last = i == parts.count - 1
            switch ref {
            case .attribute(let slot):
                guard last else {
                    throw ObjectGraphError(.invalidFetchRequest, "keypath \(keyPath): \(key) is an attribute, not a relationship", entity: root.name, property: keyPath)
                }
                guard case .attribute(let a) = entity.slots[slot] else { throw UntranslatablePredicate() }
                let sql = "\(alias).\(entity.columnName(forSlot: slot))"
                return Column(sql: a.type == .decimal ? "CAST(\(sql) AS REAL)" : sql, attributeType: a.type, isRelationship: false,
                              isExternal: a.allowsExternalBinaryDataStorage)
            case .toOne(let slot):
                if last { return Column(sql: "\(alias).\(entity.columnName(forSlot: slot))", attributeType: nil, isRelationship: true) }
                (alias, entity) = try join(from: alias, entity, key, path: prefix + key)
                prefix += key + "."
            case .toMany, .transient, .transientRelationship:
                throw UntranslatablePredicate()
            }
        }
        throw UntranslatablePredicate()
    }

    private mutating func bind(_ value: PropertyValue, for column: Column) throws -> String {
        arguments.append(try checked(value, for: column))
        return "?"
    }

    /// `value` as it is bound for a comparison with `column`: a type the column cannot compare with is an invalid
    /// fetch request; a decimal is compared as a double.
    @inline(__always)
    private func checked(_ value: PropertyValue, for column: Column) throws -> PropertyValue {
        if let type = column.attributeType {
            if column.isExternal, !value.isNull {
                throw ObjectGraphError(.invalidFetchRequest, "an attribute that allows external storage can be compared with nil only (Docs/coredata-behaviour.md §13.5)", entity: root.name)
            }
            guard Self.fits(value, type) else {
                if type == .transformable { throw Self.transformableComparison(root.name) }
                throw ObjectGraphError(.invalidFetchRequest, "type mismatch: \(value) cannot be compared with a \(type.rawValue) attribute", entity: root.name)
            }
            if type == .decimal, let d = value.numericValue { return .double(d) }
        } else if column.isRelationship {
            guard case .objectID = value else {
                throw ObjectGraphError(.invalidFetchRequest, "type mismatch: \(value) cannot be compared with a relationship", entity: root.name)
            }
        }
        return value
    }

    /// `?, ?, …, ?` for `count` (≥ 1) values, written byte by byte into the string's own buffer.
    /// `String(repeating: "?, ", count:)` appended its unit string once per value through unspecialized code:
    /// 155k instructions for an import's list of 500, 0.3k per updated item.
    static func placeholders(_ count: Int) -> String {
        String(unsafeUninitializedCapacity: 3 * count - 2) { buffer in
            for i in 0..<count {
                buffer[3 * i] = UInt8(ascii: "?")
                if i < count - 1 {
                    buffer[3 * i + 1] = UInt8(ascii: ",")
                    buffer[3 * i + 2] = UInt8(ascii: " ")
                }
            }
            return 3 * count - 2
        }
    }

    /// ``bind(_:for:)`` for every value of a list, in order, with the same checks and errors: one loop that sizes
    /// the arguments once, without a placeholder string per value (an import's `IN` list has up to 500).
    private mutating func bindAll(_ values: [PropertyValue], for column: Column) throws {
        arguments.reserveCapacity(arguments.count + values.count)
        for value in values { arguments.append(try checked(value, for: column)) }
    }

    /// `column IN (ids)` for many permanent object IDs, with runs of consecutive primary keys written as
    /// `BETWEEN` (the IDs a save inserted are usually one run): a short statement with few arguments instead of
    /// one placeholder per ID, and a range scan instead of one lookup per ID. Nil when the list has no run worth it.
    private mutating func objectIDRanges(_ values: [PropertyValue], _ column: Column) throws -> String? {
        var keys: [Int64] = []
        keys.reserveCapacity(values.count)
        var ids: [Int64: PropertyValue] = [:]
        for value in values {
            guard case .objectID(let id) = value, let key = id.primaryKey else { return nil }
            if ids.updateValue(value, forKey: key) == nil { keys.append(key) }
        }
        keys.sort()
        var runs: [(Int64, Int64)] = []
        var singles: [Int64] = []
        var start = 0
        while start < keys.count {
            var end = start
            while end + 1 < keys.count, keys[end + 1] == keys[end] + 1 { end += 1 }
            if end - start + 1 >= 4 { runs.append((keys[start], keys[end])) } else { singles.append(contentsOf: keys[start...end]) }
            start = end + 1
        }
        guard !runs.isEmpty else { return nil }
        var parts: [String] = []
        for (lo, hi) in runs {
            parts.append("\(column.sql) BETWEEN \(try bind(ids[lo]!, for: column)) AND \(try bind(ids[hi]!, for: column))")
        }
        if !singles.isEmpty {
            parts.append("\(column.sql) IN (\(try singles.map { try bind(ids[$0]!, for: column) }.joined(separator: ", ")))")
        }
        return parts.count == 1 ? parts[0] : "(" + parts.joined(separator: " OR ") + ")"
    }

    /// Whether a constant can be compared with an attribute of `type` (both in SQL and in memory).
    static func fits(_ value: PropertyValue, _ type: AttributeType) -> Bool {
        switch (value, type) {
        case (.null, _): return true
        case (.integer, _), (.double, _), (.decimal, _), (.bool, _): return type.isNumeric || type == .boolean
        case (.string, .string), (.string, .uuid), (.string, .uri): return true
        case (.date, .date), (.data, .binaryData), (.uuid, .uuid), (.uri, .uri): return true
        default: return false
        }
    }

    /// A Transformable compared with anything but nil (Docs/coredata-behaviour.md §13.4): its column holds the
    /// transformer's bytes, which neither SQL nor a comparison in memory can order or match against the app's value.
    static func transformableComparison(_ entity: String) -> ObjectGraphError {
        ObjectGraphError(.invalidFetchRequest, "a transformable attribute can be compared with nil only (Docs/coredata-behaviour.md §13.4)", entity: entity)
    }

    mutating func condition(_ node: ObjectPredicate.Node, twoValued: Bool = false) throws -> String {
        switch node {
        case .constant(let b): return b ? "1" : "0"
        case .and(let nodes):
            if nodes.isEmpty { return "1" }
            return "(" + (try nodes.map { try condition($0, twoValued: twoValued) }).joined(separator: " AND ") + ")"
        case .or(let nodes):
            if nodes.isEmpty { return "0" }
            return "(" + (try nodes.map { try condition($0, twoValued: twoValued) }).joined(separator: " OR ") + ")"
        case .not(let n):
            return "NOT " + (try condition(n, twoValued: true))
        case .comparison(let c):
            let sql = try comparison(c)
            // SQL's NULL is a third truth value; in memory a comparison with nil is false, so under NOT the
            // SQL must be two-valued too (semantics: SQL and memory agree).
            return twoValued ? "COALESCE(\(sql), 0)" : sql
        }
    }

    static func operatorCode(_ op: PredicateComparison.Operator) -> Int32 {
        Int32(PredicateComparison.Operator.allCases.firstIndex(of: op)!)
    }

    private mutating func comparison(_ c: PredicateComparison) throws -> String {
        var c = c
        if case .keyPath(let path) = c.left, let split = try splitAtToMany(path) {
            return try toManyComparison(c, split)
        }
        guard c.modifier == .direct else { throw UntranslatablePredicate() }
        // Constant on the left: flip to keep the column on the left.
        if case .keyPath = c.right, !c.left.isKeyPathOrSelf {
            guard let flipped = c.op.flipped else { throw UntranslatablePredicate() }
            swap(&c.left, &c.right)
            c.op = flipped
        }
        let column: Column
        switch c.left {
        case .keyPath(let path): column = try self.column(path)
        case .evaluatedObject: column = Column(sql: "t0.Z_PK", attributeType: nil, isRelationship: true)
        default: throw UntranslatablePredicate()
        }
        let stringOp: Bool
        switch c.op {
        case .contains, .beginsWith, .endsWith, .like, .matches: stringOp = true
        default: stringOp = !c.options.isEmpty
        }
        switch c.right {
        case .keyPath(let path):
            let other = try self.column(path)
            if stringOp {
                return "og_match(\(Self.operatorCode(c.op)), \(c.options.rawValue), \(column.sql), \(other.sql))"
            }
            guard let sqlOp = c.op.sqlOperator else { throw UntranslatablePredicate() }
            return "\(column.sql) \(sqlOp) \(other.sql)"
        case .variable, .evaluatedObject:
            throw UntranslatablePredicate()
        case .list(let values):
            switch c.op {
            case .in:
                if stringOp {
                    guard column.attributeType == .string else { throw UntranslatablePredicate() }
                    var parts: [String] = []
                    for v in values where !v.isNull {
                        parts.append("og_match(\(Self.operatorCode(.equalTo)), \(c.options.rawValue), \(column.sql), \(try bind(v, for: column)))")
                    }
                    // A nil in the list matches a nil value whatever the modifiers, as in memory.
                    if values.contains(where: \.isNull) { parts.append("\(column.sql) IS NULL") }
                    return parts.isEmpty ? "0" : "(" + parts.joined(separator: " OR ") + ")"
                }
                let nonNull = values.filter { !$0.isNull }
                var sql: String
                if column.isRelationship, nonNull.count >= 8, let ranged = try objectIDRanges(nonNull, column) {
                    sql = ranged
                } else {
                    // One check and argument per value; the placeholders are written in one go (an import's
                    // `IN` list has up to 500).
                    try bindAll(nonNull, for: column)
                    sql = nonNull.isEmpty ? "0" : "\(column.sql) IN (\(Self.placeholders(nonNull.count)))"
                }
                if nonNull.count != values.count { sql = "(\(sql) OR \(column.sql) IS NULL)" }
                return sql
            case .between:
                guard values.count == 2, !values[0].isNull, !values[1].isNull, !stringOp else { throw UntranslatablePredicate() }
                return "(\(column.sql) >= \(try bind(values[0], for: column)) AND \(column.sql) <= \(try bind(values[1], for: column)))"
            case .equalTo:
                return try comparison(PredicateComparison(c.left, .in, c.right, options: c.options))
            default:
                throw UntranslatablePredicate()
            }
        case .constant(let value):
            if stringOp {
                guard case .string = value, column.attributeType == .string else {
                    // A comparison with nil ignores [c] and [d], as in memory: == nil is IS NULL,
                    // != nil is IS NOT NULL, and every other operator is false.
                    if value.isNull {
                        switch c.op {
                        case .equalTo: return "\(column.sql) IS NULL"
                        case .notEqualTo: return "\(column.sql) IS NOT NULL"
                        default: return "0"
                        }
                    }
                    if let type = column.attributeType, !Self.fits(value, type) {
                        throw ObjectGraphError(.invalidFetchRequest, "type mismatch: \(value) cannot be compared with a \(type.rawValue) attribute", entity: root.name)
                    }
                    throw UntranslatablePredicate()
                }
                return "og_match(\(Self.operatorCode(c.op)), \(c.options.rawValue), \(column.sql), \(try bind(value, for: column)))"
            }
            if value.isNull {
                switch c.op {
                case .equalTo: return "\(column.sql) IS NULL"
                case .notEqualTo: return "\(column.sql) IS NOT NULL"
                default: return "0"
                }
            }
            switch c.op {
            case .equalTo: return "\(column.sql) = \(try bind(value, for: column))"
            case .notEqualTo: return "(\(column.sql) <> \(try bind(value, for: column)) OR \(column.sql) IS NULL)"
            case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
                if column.isRelationship { throw UntranslatablePredicate() }
                if case .uuid = value { throw UntranslatablePredicate() }
                return "\(column.sql) \(c.op.sqlOperator!) \(try bind(value, for: column))"
            case .in:
                return try comparison(PredicateComparison(c.left, .equalTo, c.right, options: c.options))
            default:
                throw UntranslatablePredicate()
            }
        }
    }

    /// A key path that crosses a to-many relationship: the to-ones before it, the to-many, and what follows.
    struct ToManySplit {
        var entity: EntityDescription
        var ownerAlias: String
        var relationship: RelationshipDescription
        var rest: [String]
    }

    private mutating func splitAtToMany(_ keyPath: String) throws -> ToManySplit? {
        let parts = keyPath.split(separator: ".").map(String.init)
        var entity = root
        var path: [String] = []
        for (i, key) in parts.enumerated() {
            guard let ref = entity.propertiesByName[key] else { return nil }
            switch ref {
            case .toOne:
                path.append(key)
                entity = entity.destinationEntity(ofRelationship: key)!
            case .toMany(let index):
                let ownerAlias = try joinAlias(for: path)
                return ToManySplit(entity: entity, ownerAlias: ownerAlias, relationship: entity.toManyRelationships[index], rest: Array(parts[(i + 1)...]))
            default:
                return nil
            }
        }
        return nil
    }

    /// The alias of the table reached through the to-one `path` (joining as needed).
    private mutating func joinAlias(for path: [String]) throws -> String {
        var entity = root
        var alias = "\(aliasPrefix)0"
        var prefixPath = ""
        for key in path {
            (alias, entity) = try join(from: alias, entity, key, path: prefixPath + key)
            prefixPath += key + "."
        }
        return alias
    }

    /// One `LEFT JOIN` through a to-one relationship, made once per key path.
    private mutating func join(from alias: String, _ entity: EntityDescription, _ key: String, path: String) throws -> (String, EntityDescription) {
        guard case .toOne(let slot)? = entity.propertiesByName[key], let destination = entity.destinationEntity(ofRelationship: key) else {
            throw UntranslatablePredicate()
        }
        if let existing = aliases[path] { return (existing.alias, destination) }
        let next = "\(aliasPrefix)\(aliases.count + 1)"
        joins.append("LEFT JOIN \(destination.tableName) \(next) ON \(next).Z_PK = \(alias).\(entity.columnName(forSlot: slot))")
        aliases[path] = (next, destination)
        return (next, destination)
    }

    /// `ANY`/`ALL`/`NONE` and aggregates over a to-many, as (NOT) EXISTS or scalar subqueries.
    private mutating func toManyComparison(_ c: PredicateComparison, _ split: ToManySplit) throws -> String {
        subqueryCounter += 1
        let sub = "s\(subqueryCounter)_"
        let destination = split.entity.destinationEntity(ofRelationship: split.relationship.name)!
        var from: String
        if SQLiteSchema.isManyToMany(split.entity, split.relationship) {
            let join = SQLiteSchema.joinTable(split.entity, split.relationship)
            let mine = join.isOwned(by: split.entity, split.relationship)
            let (own, other) = mine ? (join.ownerColumn, join.destinationColumn) : (join.destinationColumn, join.ownerColumn)
            from = "FROM \(join.name) \(sub)j JOIN \(destination.tableName) \(sub)0 ON \(sub)0.Z_PK = \(sub)j.\(other)"
            from += " {JOINS} WHERE \(sub)j.\(own) = \(split.ownerAlias).Z_PK"
        } else {
            guard let slot = destination.slotIndex(of: split.relationship.inverseName) else { throw UntranslatablePredicate() }
            from = "FROM \(destination.tableName) \(sub)0 {JOINS} WHERE \(sub)0.\(destination.columnName(forSlot: slot)) = \(split.ownerAlias).Z_PK"
        }
        var nested = SQLiteQueryBuilder(root: destination, prefix: sub, subqueryCounter: subqueryCounter * 100)
        func finish(_ text: String) -> String {
            let joins = nested.joins.joined(separator: " ")
            return text.replacingOccurrences(of: "{JOINS}", with: joins)
        }
        // Aggregates: `items.@count`, `items.@sum.price`.
        if let first = split.rest.first, first.hasPrefix("@") {
            guard c.modifier == .direct else { throw UntranslatablePredicate() }
            let function: String
            var column = "*"
            switch first {
            case "@count": function = "count"
            case "@sum": function = "total"
            case "@avg": function = "avg"
            case "@min": function = "min"
            case "@max": function = "max"
            default: throw UntranslatablePredicate()
            }
            if first != "@count" {
                guard split.rest.count >= 2 else { throw UntranslatablePredicate() }
                let col = try nested.column(split.rest.dropFirst().joined(separator: "."))
                guard let type = col.attributeType, type.isNumeric else { throw UntranslatablePredicate() }
                column = col.sql
            } else if split.rest.count != 1 {
                throw UntranslatablePredicate()
            }
            let scalar = finish("(SELECT \(function)(\(column)) \(from))")
            guard case .constant(let value) = c.right, let op = c.op.sqlOperator, c.options.isEmpty else { throw UntranslatablePredicate() }
            if value.isNull { return c.op == .equalTo ? "\(scalar) IS NULL" : (c.op == .notEqualTo ? "\(scalar) IS NOT NULL" : "0") }
            guard value.isNumberLike else {
                throw ObjectGraphError(.invalidFetchRequest, "type mismatch: \(value) cannot be compared with \(split.relationship.name).\(first)", entity: root.name)
            }
            arguments.append(value)
            return "\(scalar) \(op) ?"
        }
        let condition: String
        if split.rest.isEmpty {
            // `items CONTAINS %@` (an object), or ANY items == %@.
            guard case .constant(.objectID(let id)) = c.right, c.op == .contains || c.op == .equalTo else { throw UntranslatablePredicate() }
            nested.arguments.append(.objectID(id))
            condition = "\(sub)0.Z_PK = ?"
        } else {
            var inner = c
            inner.left = .keyPath(split.rest.joined(separator: "."))
            inner.modifier = .direct
            if case .keyPath = inner.right { throw UntranslatablePredicate() }
            condition = try nested.comparison(inner)
        }
        let base = finish(from)
        let innerArguments = nested.arguments
        arguments.append(contentsOf: innerArguments)
        switch c.modifier {
        case .direct, .any: return "EXISTS (SELECT 1 \(base) AND \(condition))"
        case .none: return "NOT EXISTS (SELECT 1 \(base) AND \(condition))"
        case .all: return "NOT EXISTS (SELECT 1 \(base) AND NOT COALESCE(\(condition), 0))"
        }
    }

    mutating func orderBy(_ sorts: [ObjectSortDescriptor]) throws -> String {
        var terms: [String] = []
        for sort in sorts {
            try StoreRowSubject.checkSortKey(sort.key, in: root)
            let column = try self.column(sort.key)
            terms.append("\(column.sql) \(sort.ascending ? "ASC" : "DESC")")
        }
        return terms.joined(separator: ", ")
    }
}

extension ObjectExpression {
    var isKeyPathOrSelf: Bool {
        switch self {
        case .keyPath, .evaluatedObject: return true
        default: return false
        }
    }
}

extension PredicateComparison.Operator {
    var flipped: PredicateComparison.Operator? {
        switch self {
        case .equalTo, .notEqualTo: return self
        case .lessThan: return .greaterThan
        case .lessThanOrEqualTo: return .greaterThanOrEqualTo
        case .greaterThan: return .lessThan
        case .greaterThanOrEqualTo: return .lessThanOrEqualTo
        default: return nil
        }
    }

    var sqlOperator: String? {
        switch self {
        case .equalTo: return "="
        case .notEqualTo: return "<>"
        case .lessThan: return "<"
        case .lessThanOrEqualTo: return "<="
        case .greaterThan: return ">"
        case .greaterThanOrEqualTo: return ">="
        default: return nil
        }
    }
}

/// `og_match(op, options, a, b)`: the predicate language's string operators in SQL, computed by the same Swift
/// code as in-memory evaluation so both paths agree.
func registerPredicateFunctions(_ db: SQLiteHandle) {
    sqlite3_create_function_v2(db, "og_match", 4, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil, { ctx, argc, argv in
        guard let argv, argc == 4 else { return }
        let opIndex = Int(sqlite3_value_int(argv[0]))
        let options = PredicateComparison.Options(rawValue: Int(sqlite3_value_int(argv[1])))
        guard PredicateComparison.Operator.allCases.indices.contains(opIndex) else {
            sqlite3_result_int(ctx, 0)
            return
        }
        func value(_ v: OpaquePointer?) -> PropertyValue {
            guard sqlite3_value_type(v) != SQLITE_NULL, let text = sqlite3_value_text(v) else { return .null }
            return .string(String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(v))), as: UTF8.self))
        }
        let op = PredicateComparison.Operator.allCases[opIndex]
        let result = PredicateComparison.compareScalar(value(argv[2]), op, value(argv[3]), options)
        sqlite3_result_int(ctx, result ? 1 : 0)
    }, nil, nil, nil)
}
