import Foundation

/// A condition on objects (`NSPredicate`): a tree that the SQLite store translates to SQL where it can and that
/// is always evaluable in memory (pending changes, observers, fetched results controllers).
///
/// ```swift
/// let p: ObjectPredicate = .and([.compare("name", .beginsWith, "A", options: .caseInsensitive),
///                          .compare("price", .greaterThan, 10)])
/// ```
public struct ObjectPredicate: Sendable, Hashable {
    /// The tree.
    public indirect enum Node: Sendable, Hashable {
        case constant(Bool)
        case comparison(PredicateComparison)
        case and([Node])
        case or([Node])
        case not(Node)
    }

    /// The root of the tree.
    public var node: Node

    /// Wraps a tree.
    public init(_ node: Node) { self.node = node }

    /// `TRUEPREDICATE`.
    public static let `true` = ObjectPredicate(.constant(true))
    /// `FALSEPREDICATE`.
    public static let `false` = ObjectPredicate(.constant(false))

    /// All of `predicates`.
    public static func and(_ predicates: [ObjectPredicate]) -> ObjectPredicate { ObjectPredicate(.and(predicates.map(\.node))) }
    /// Any of `predicates`.
    public static func or(_ predicates: [ObjectPredicate]) -> ObjectPredicate { ObjectPredicate(.or(predicates.map(\.node))) }
    /// The negation of `predicate`.
    public static func not(_ predicate: ObjectPredicate) -> ObjectPredicate { ObjectPredicate(.not(predicate.node)) }

    /// `keyPath <op> value`, with `value` any Swift value an attribute takes, an object, an object ID, or an
    /// array (for `IN` and `BETWEEN`).
    public static func compare(
        _ keyPath: String, _ op: PredicateComparison.Operator, _ value: Any?, options: PredicateComparison.Options = [],
        modifier: PredicateComparison.Modifier = .direct
    ) -> ObjectPredicate {
        ObjectPredicate(.comparison(PredicateComparison(.keyPath(keyPath), op, ObjectExpression.value(value), options: options, modifier: modifier)))
    }

    /// `keyPath IN values`.
    public static func `in`(_ keyPath: String, _ values: [Any]) -> ObjectPredicate {
        // The list is built here, not by casting the array back out of an `Any` (that cast checks every element).
        `in`(keyPath, stored: values.map(PropertyValue.init(any:)))
    }

    /// `keyPath IN values`, the values already in their stored form.
    public static func `in`(_ keyPath: String, stored values: [PropertyValue]) -> ObjectPredicate {
        ObjectPredicate(.comparison(PredicateComparison(.keyPath(keyPath), .in, .list(values))))
    }
}

/// One comparison of two expressions.
public struct PredicateComparison: Sendable, Hashable {
    /// The operators of the predicate language.
    public enum Operator: String, Sendable, Hashable, CaseIterable {
        case equalTo = "=="
        case notEqualTo = "!="
        case lessThan = "<"
        case lessThanOrEqualTo = "<="
        case greaterThan = ">"
        case greaterThanOrEqualTo = ">="
        case `in` = "IN"
        case contains = "CONTAINS"
        case beginsWith = "BEGINSWITH"
        case endsWith = "ENDSWITH"
        case like = "LIKE"
        case matches = "MATCHES"
        case between = "BETWEEN"
    }

    /// `[c]`, `[d]`.
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `[c]`
        public static let caseInsensitive = Options(rawValue: 1)
        /// `[d]`
        public static let diacriticInsensitive = Options(rawValue: 2)
    }

    /// `ANY`, `ALL`, `NONE` over a to-many left side.
    public enum Modifier: String, Sendable, Hashable {
        case direct, any, all, none
    }

    public var left: ObjectExpression
    public var op: Operator
    public var right: ObjectExpression
    public var options: Options
    public var modifier: Modifier

    /// Creates a comparison.
    public init(_ left: ObjectExpression, _ op: Operator, _ right: ObjectExpression, options: Options = [], modifier: Modifier = .direct) {
        self.left = left
        self.op = op
        self.right = right
        self.options = options
        self.modifier = modifier
    }
}

/// A side of a comparison.
public indirect enum ObjectExpression: Sendable, Hashable {
    /// A key path from the evaluated object: `name`, `tag.name`, `items.@count`, `items.price`.
    case keyPath(String)
    /// A constant.
    case constant(PropertyValue)
    /// An array constant (`{1, 2}` or a `%@` array).
    case list([PropertyValue])
    /// `SELF`.
    case evaluatedObject
    /// `$NAME`, replaced at evaluation from the substitution variables.
    case variable(String)

    /// Converts a Swift value (attribute value, object, object ID, array) to a constant expression.
    public static func value(_ value: Any?) -> ObjectExpression {
        if let array = value as? [Any] { return .list(array.map(PropertyValue.init(any:))) }
        if let set = value as? Set<ManagedObject> { return .list(set.map { .objectID($0.objectID) }) }
        if let set = value as? Set<ManagedObjectID> { return .list(set.map { .objectID($0) }) }
        return .constant(PropertyValue(any: value))
    }
}

extension PropertyValue {
    /// The stored form of an attribute value of a known type: the common types (strings, integers, doubles,
    /// dates, Booleans, optional or not) convert without boxing the value in `Any`, the rest as
    /// ``init(any:)`` converts their `attributeValue` (an import builds its `IN` list of unique IDs this way).
    @inlinable
    public init<Value: AttributeConvertible>(attribute value: Value) {
        self = ManagedValueBridge<Value>.stored(value) ?? PropertyValue(any: value.attributeValue)
    }

    /// Converts any Swift value without an attribute type to guide it (predicate constants).
    public init(any value: Any?) {
        // The common exact types first, by their dynamic type, before the chain of casts below (each failed cast
        // costs; an import's `IN` list converts one ID per object). Values of these exact types convert as below.
        if let value {
            switch ObjectIdentifier(type(of: value)) {
            case ObjectIdentifier(Int64.self): self = .integer(value as! Int64); return
            case ObjectIdentifier(Int.self): self = .integer(Int64(value as! Int)); return
            case ObjectIdentifier(String.self): self = .string(value as! String); return
            default: break
            }
        }
        switch value {
        case nil: self = .null
        case let v as PropertyValue: self = v
        case let v as Bool: self = .bool(v)
        case let v as Int: self = .integer(Int64(v))
        case let v as Int64: self = .integer(v)
        case let v as Int32: self = .integer(Int64(v))
        case let v as Int16: self = .integer(Int64(v))
        case let v as Int8: self = .integer(Int64(v))
        case let v as UInt32: self = .integer(Int64(v))
        case let v as UInt16: self = .integer(Int64(v))
        case let v as UInt8: self = .integer(Int64(v))
        case let v as Double: self = .double(v)
        case let v as Float: self = .double(Double(v))
        case let v as Decimal: self = .decimal(v)
        case let v as String: self = .string(v)
        case let v as Substring: self = .string(String(v))
        case let v as Date: self = .date(v)
        case let v as Data: self = .data(v)
        case let v as UUID: self = .uuid(v)
        case let v as URL: self = .uri(v)
        case let v as ManagedObjectID: self = .objectID(v)
        case let v as ManagedObject: self = .objectID(v.objectID)
        case let v as NSNumber: self = .double(v.doubleValue)
        case let v as NSNull: _ = v; self = .null
        // A history token compares by its transaction number (`token > %@` in a history fetch);
        // last, so that no common value pays for this cast.
        case let v as PersistentHistoryToken: self = .integer(v.transactionNumber)
        // An entity compares by its name (`changedEntity == %@` in a history fetch, Docs/coredata-behaviour.md §3.6).
        case let v as EntityDescription: self = .string(v.name)
        default: self = .string(String(describing: value!))
        }
    }
}

// MARK: - Description (the format language)

extension ObjectPredicate: CustomStringConvertible {
    public var description: String { node.description }
}

extension ObjectPredicate.Node: CustomStringConvertible {
    public var description: String {
        switch self {
        case .constant(let b): return b ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .comparison(let c): return c.description
        case .and(let nodes): return nodes.isEmpty ? "TRUEPREDICATE" : "(" + nodes.map(\.description).joined(separator: " AND ") + ")"
        case .or(let nodes): return nodes.isEmpty ? "FALSEPREDICATE" : "(" + nodes.map(\.description).joined(separator: " OR ") + ")"
        case .not(let node): return "NOT " + node.description
        }
    }
}

extension PredicateComparison: CustomStringConvertible {
    public var description: String {
        var opts = ""
        if !options.isEmpty {
            opts = "[" + (options.contains(.caseInsensitive) ? "c" : "") + (options.contains(.diacriticInsensitive) ? "d" : "") + "]"
        }
        let mod = modifier == .direct ? "" : modifier.rawValue.uppercased() + " "
        return "\(mod)\(left) \(op.rawValue)\(opts) \(right)"
    }
}

extension ObjectExpression: CustomStringConvertible {
    public var description: String {
        switch self {
        case .keyPath(let k): return k
        case .constant(let v): return v.description
        case .list(let vs): return "{" + vs.map(\.description).joined(separator: ", ") + "}"
        case .evaluatedObject: return "SELF"
        case .variable(let n): return "$" + n
        }
    }
}
