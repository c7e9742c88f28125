import Foundation

/// What a key path yields on one object: one value, or the values of a to-many path.
package enum KeyPathValue {
    case single(PropertyValue)
    case many([PropertyValue])
}

/// Something a predicate can be evaluated against: an object, or a row of the in-memory store.
package protocol PredicateSubject {
    /// The value of a key path of plain keys (no `@` operators), following to-one and to-many relationships.
    func resolve(keyPath: [Substring]) throws -> KeyPathValue
    /// `SELF`.
    var selfValue: PropertyValue { get }
}

extension ObjectPredicate {
    /// Evaluates the predicate against an object, firing faults as needed.
    /// - Parameter variables: values for `$NAME` variables.
    public func evaluate(with object: ManagedObject, variables: [String: Any] = [:]) throws -> Bool {
        try evaluate(subject: object, variables: variables.mapValues(PropertyValue.init(any:)))
    }

    package func evaluate(subject: any PredicateSubject, variables: [String: PropertyValue] = [:]) throws -> Bool {
        try node.evaluate(subject, variables)
    }

    /// Every key path of the predicate as evaluation hands it to ``PredicateSubject/resolve(keyPath:)`` (a
    /// collection operator taken out), in the predicate's order.
    var plainKeyPaths: [[Substring]] {
        func paths(_ n: Node) -> [[Substring]] {
            switch n {
            case .constant: return []
            case .and(let nodes), .or(let nodes): return nodes.flatMap(paths)
            case .not(let n): return paths(n)
            case .comparison(let c): return [c.left, c.right].compactMap(PredicateComparison.plainKeyPath)
            }
        }
        return paths(node)
    }

    /// Replaces `$NAME` variables with constants.
    public func withSubstitutionVariables(_ variables: [String: Any]) -> ObjectPredicate {
        let values = variables.mapValues(PropertyValue.init(any:))
        return ObjectPredicate(node.mappingExpressions { e in
            if case .variable(let name) = e, let v = values[name] { return .constant(v) }
            return e
        })
    }
}

extension ObjectPredicate.Node {
    /// This tree with every comparison's two sides passed through `transform`.
    func mappingExpressions(_ transform: (ObjectExpression) -> ObjectExpression) -> Self {
        switch self {
        case .constant: return self
        case .comparison(var c):
            c.left = transform(c.left)
            c.right = transform(c.right)
            return .comparison(c)
        case .and(let nodes): return .and(nodes.map { $0.mappingExpressions(transform) })
        case .or(let nodes): return .or(nodes.map { $0.mappingExpressions(transform) })
        case .not(let node): return .not(node.mappingExpressions(transform))
        }
    }

    func evaluate(_ subject: any PredicateSubject, _ variables: [String: PropertyValue]) throws -> Bool {
        switch self {
        case .constant(let b): return b
        case .and(let nodes):
            for n in nodes where try !n.evaluate(subject, variables) { return false }
            return true
        case .or(let nodes):
            for n in nodes where try n.evaluate(subject, variables) { return true }
            return false
        case .not(let n): return try !n.evaluate(subject, variables)
        case .comparison(let c): return try c.evaluate(subject, variables)
        }
    }
}

extension PredicateComparison {
    func evaluate(_ subject: any PredicateSubject, _ variables: [String: PropertyValue]) throws -> Bool {
        let l = try Self.value(of: left, subject, variables)
        let r = try Self.value(of: right, subject, variables)
        switch (modifier, l) {
        case (.direct, .single(let lv)):
            return Self.compare(lv, op, r, options)
        case (.direct, .many(let lvs)):
            if op == .contains, case .single(let rv) = r { return lvs.contains { Self.equal($0, rv, options) } }
            if op == .in, case .many(let rvs) = r { return lvs.allSatisfy { lv in rvs.contains { Self.equal(lv, $0, options) } } }
            return lvs.contains { Self.compare($0, op, r, options) }
        case (.any, _):
            return Self.elements(l).contains { Self.compare($0, op, r, options) }
        case (.all, _):
            return Self.elements(l).allSatisfy { Self.compare($0, op, r, options) }
        case (.none, _):
            return !Self.elements(l).contains { Self.compare($0, op, r, options) }
        }
    }

    private static func elements(_ v: KeyPathValue) -> [PropertyValue] {
        switch v {
        case .single(let x): return x.isNull ? [] : [x]
        case .many(let xs): return xs
        }
    }

    static func value(of e: ObjectExpression, _ subject: any PredicateSubject, _ variables: [String: PropertyValue]) throws -> KeyPathValue {
        switch e {
        case .constant(let v): return .single(v)
        case .list(let vs): return .many(vs)
        case .evaluatedObject: return .single(subject.selfValue)
        case .variable(let name):
            guard let v = variables[name] else {
                throw ObjectGraphError(.invalidFetchRequest, "no value for substitution variable $\(name)")
            }
            return .single(v)
        case .keyPath(let path):
            let parts = path.split(separator: ".")
            guard let opIndex = parts.firstIndex(where: { $0.hasPrefix("@") }) else {
                return try subject.resolve(keyPath: Array(parts))
            }
            let values: [PropertyValue]
            switch try subject.resolve(keyPath: withoutOperator(parts, at: opIndex)) {
            case .many(let vs): values = vs
            case .single(let v): values = v.isNull ? [] : [v]
            }
            return .single(try aggregate(String(parts[opIndex]), values))
        }
    }

    /// The keys of a key path around its collection operator (`items.@sum.price` → `items.price`).
    private static func withoutOperator(_ parts: [Substring], at opIndex: Int) -> [Substring] {
        Array(parts[..<opIndex]) + Array(parts[(opIndex + 1)...])
    }

    /// The key path `expression` names, as ``value(of:_:_:)`` resolves it; nil when it names none.
    static func plainKeyPath(_ expression: ObjectExpression) -> [Substring]? {
        guard case .keyPath(let path) = expression else { return nil }
        let parts = path.split(separator: ".")
        guard let opIndex = parts.firstIndex(where: { $0.hasPrefix("@") }) else { return parts }
        return withoutOperator(parts, at: opIndex)
    }

    static func aggregate(_ name: String, _ values: [PropertyValue]) throws -> PropertyValue {
        switch name {
        case "@count": return .integer(Int64(values.count))
        case "@sum", "@avg", "@min", "@max":
            let numbers = values.compactMap(\.numericValue)
            if numbers.isEmpty { return name == "@sum" ? .integer(0) : .null }
            let allIntegers = values.allSatisfy { if case .integer = $0 { return true } else { return false } }
            switch name {
            case "@sum": return allIntegers ? .integer(Int64(numbers.reduce(0, +))) : .double(numbers.reduce(0, +))
            case "@avg": return .double(numbers.reduce(0, +) / Double(numbers.count))
            case "@min": return allIntegers ? .integer(Int64(numbers.min()!)) : .double(numbers.min()!)
            default: return allIntegers ? .integer(Int64(numbers.max()!)) : .double(numbers.max()!)
            }
        default:
            throw ObjectGraphError(.invalidFetchRequest, "unknown collection operator \(name)")
        }
    }

    static func compare(_ l: PropertyValue, _ op: Operator, _ r: KeyPathValue, _ options: Options) -> Bool {
        switch op {
        case .in:
            switch r {
            case .many(let rs): return rs.contains { equal(l, $0, options) }
            case .single(let rv):
                // `'a' IN 'abc'`: substring, as NSPredicate does for strings.
                if case .string(let ls) = l, case .string(let rs) = rv { return fold(rs, options).contains(fold(ls, options)) }
                return equal(l, rv, options)
            }
        case .between:
            guard case .many(let rs) = r, rs.count == 2 else { return false }
            guard let lo = order(l, rs[0], options), let hi = order(l, rs[1], options) else { return false }
            return lo >= 0 && hi <= 0
        default:
            guard case .single(let rv) = r else {
                if case .many(let rs) = r, op == .equalTo { return rs.contains { equal(l, $0, options) } }
                return false
            }
            return compareScalar(l, op, rv, options)
        }
    }

    static func compareScalar(_ l: PropertyValue, _ op: Operator, _ r: PropertyValue, _ options: Options) -> Bool {
        switch op {
        case .equalTo: return equal(l, r, options)
        case .notEqualTo: return !equal(l, r, options)
        case .lessThan: return order(l, r, options).map { $0 < 0 } ?? false
        case .lessThanOrEqualTo: return order(l, r, options).map { $0 <= 0 } ?? false
        case .greaterThan: return order(l, r, options).map { $0 > 0 } ?? false
        case .greaterThanOrEqualTo: return order(l, r, options).map { $0 >= 0 } ?? false
        case .contains, .beginsWith, .endsWith, .like, .matches:
            guard case .string(let ls) = l, case .string(let rs) = r else { return false }
            return StringMatching.match(op, ls, rs, options)
        case .in, .between: return compare(l, op, .single(r), options)
        }
    }

    static func fold(_ s: String, _ options: Options) -> String { StringMatching.fold(s, options) }

    /// Equality as the predicate language means it: numbers across widths, strings with options, object IDs.
    static func equal(_ l: PropertyValue, _ r: PropertyValue, _ options: Options) -> Bool {
        switch (l, r) {
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        case let (.string(a), .string(b)): return options.isEmpty ? a == b : fold(a, options) == fold(b, options)
        default:
            if let a = l.numericValue, let b = r.numericValue, l.isNumberLike, r.isNumberLike { return a == b }
            return l.comparableEquals(r)
        }
    }

    /// Three-way order, nil when the values do not order against each other (null, mixed kinds).
    static func order(_ l: PropertyValue, _ r: PropertyValue, _ options: Options) -> Int? {
        switch (l, r) {
        case (.null, _), (_, .null): return nil
        case let (.string(a), .string(b)):
            return StringMatching.compareBytes(options.isEmpty ? a : fold(a, options), options.isEmpty ? b : fold(b, options))
        case let (.date(a), .date(b)): return a < b ? -1 : (a > b ? 1 : 0)
        case let (.uuid(a), .uuid(b)): return StringMatching.compareBytes(a.uuidString, b.uuidString)
        case let (.decimal(a), .decimal(b)): return a < b ? -1 : (a > b ? 1 : 0)
        default:
            guard l.isNumberLike, r.isNumberLike, let a = l.numericValue, let b = r.numericValue else { return nil }
            return a < b ? -1 : (a > b ? 1 : 0)
        }
    }
}

extension PropertyValue {
    var isNumberLike: Bool {
        switch self {
        case .integer, .double, .decimal, .bool: return true
        default: return false
        }
    }

    func comparableEquals(_ other: PropertyValue) -> Bool {
        switch (self, other) {
        case let (.date(a), .date(b)): return a.timeIntervalSinceReferenceDate == b.timeIntervalSinceReferenceDate
        case let (.uuid(a), .string(b)), let (.string(b), .uuid(a)): return a.uuidString == b
        default: return self == other
        }
    }
}

/// The string operators, shared by in-memory evaluation and the SQLite store's SQL functions so both agree.
enum StringMatching {
    static func fold(_ s: String, _ options: PredicateComparison.Options) -> String {
        var r = s
        if options.contains(.diacriticInsensitive) { r = r.folding(options: .diacriticInsensitive, locale: nil) }
        if options.contains(.caseInsensitive) { r = r.lowercased() }
        return r
    }

    /// Byte-wise UTF-8 order, as SQLite's BINARY collation sorts.
    static func compareBytes(_ a: String, _ b: String) -> Int {
        var ia = a.utf8.makeIterator()
        var ib = b.utf8.makeIterator()
        while true {
            switch (ia.next(), ib.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case let (x?, y?): if x != y { return x < y ? -1 : 1 }
            }
        }
    }

    static func match(_ op: PredicateComparison.Operator, _ l: String, _ r: String, _ options: PredicateComparison.Options) -> Bool {
        let a = fold(l, options)
        let b = fold(r, options)
        switch op {
        case .contains: return b.isEmpty || a.contains(b)
        case .beginsWith: return a.hasPrefix(b)
        case .endsWith: return a.hasSuffix(b)
        case .like: return like(Array(a), Array(b)[...])
        case .matches:
            guard let regex = try? NSRegularExpression(pattern: "^(?:" + b + ")$", options: [.dotMatchesLineSeparators]) else { return false }
            return regex.firstMatch(in: a, range: NSRange(a.startIndex..., in: a)) != nil
        case .equalTo: return a == b
        case .notEqualTo: return a != b
        case .lessThan: return compareBytes(a, b) < 0
        case .lessThanOrEqualTo: return compareBytes(a, b) <= 0
        case .greaterThan: return compareBytes(a, b) > 0
        case .greaterThanOrEqualTo: return compareBytes(a, b) >= 0
        case .in: return b.contains(a)
        case .between: return false
        }
    }

    /// NSPredicate's LIKE: `*` matches any run of characters, `?` one character.
    private static func like(_ s: [Character], _ p: ArraySlice<Character>) -> Bool {
        var si = 0, pi = p.startIndex
        var starP = -1, starS = 0
        while si < s.count {
            if pi < p.endIndex, p[pi] == "?" || p[pi] == s[si] {
                si += 1; pi += 1
            } else if pi < p.endIndex, p[pi] == "*" {
                starP = pi; starS = si; pi += 1
            } else if starP >= 0 {
                pi = starP + 1; starS += 1; si = starS
            } else {
                return false
            }
        }
        while pi < p.endIndex, p[pi] == "*" { pi += 1 }
        return pi == p.endIndex
    }
}

/// `keyPath IN {list}` answered by a hash lookup instead of a walk of the list, where the lookup gives exactly the
/// evaluator's answer: a list of strings without `[c]`/`[d]` for a string value, a list of integers for an integer
/// value (all below 2^53, where the evaluator's numeric comparison is exact). A fetch overlaid with pending changes
/// tests each pending object against its predicate; an importer's chunk fetch (`id IN {500 ids}`) over a batch of
/// pending objects would otherwise walk the list once per object.
package struct InListMembership {
    private let key: ObjectExpression
    private let strings: Set<String>?
    private let integers: Set<Int64>?
    private static let exactInteger: Int64 = 1 << 53

    /// Nil when the predicate is not a plain `keyPath IN {list}` of strings or of integers.
    package init?(_ predicate: ObjectPredicate) {
        guard case .comparison(let c) = predicate.node, c.op == .in, c.modifier == .direct, c.options.isEmpty,
              case .keyPath = c.left, case .list(let values) = c.right, !values.isEmpty else { return nil }
        key = c.left
        var strings: Set<String>? = [], integers: Set<Int64>? = []
        for value in values {
            switch value {
            case .string(let s): strings?.insert(s); integers = nil
            case .integer(let i) where i.magnitude < Self.exactInteger.magnitude: integers?.insert(i); strings = nil
            default: return nil
            }
        }
        guard strings != nil || integers != nil else { return nil }
        self.strings = strings
        self.integers = integers
    }

    /// Whether `subject` matches, or nil where only the evaluator can say.
    package func matches(_ subject: any PredicateSubject) throws -> Bool? {
        guard case .single(let value) = try PredicateComparison.value(of: key, subject, [:]) else { return nil }
        switch value {
        case .string(let s): return strings?.contains(s)
        case .integer(let i) where i.magnitude < Self.exactInteger.magnitude: return integers?.contains(i)
        default: return nil
        }
    }
}
