import Foundation
import Synchronization
@testable import Workbench

/// A JSON Schema validator for the subset `ambar-bench schema` writes (Docs/scenarios.md "Editor support"): type,
/// enum, const, minimum, maximum, exclusiveMinimum, pattern, properties, required, additionalProperties,
/// minProperties, maxProperties, propertyNames, items, minItems, anyOf and `$ref` into `$defs`. A keyword outside
/// the subset is an error, so the generator cannot emit one the tests do not check.
struct SchemaValidator {
    /// A YAML value as a YAML 1.2 language server types it (the core schema): plain `60` is an integer, `0.5` a
    /// number, `true` a boolean, nothing or `null` null, anything else a string.
    indirect enum Instance {
        case object([(String, Instance)])
        case array([Instance])
        case string(String)
        case number(Double, integral: Bool)
        case bool(Bool)
        case null

        init(_ tree: YAMLTree) {
            switch tree {
            case .map(let pairs, _): self = .object(pairs.map { ($0.key, Instance($0.value)) })
            case .list(let items, _): self = .array(items.map(Instance.init))
            case .scalar(let s, _):
                if ["", "~", "null", "Null", "NULL"].contains(s) { self = .null }
                else if ["true", "True", "TRUE"].contains(s) { self = .bool(true) }
                else if ["false", "False", "FALSE"].contains(s) { self = .bool(false) }
                else if let d = Instance.number(s) { self = .number(d, integral: d == d.rounded()) }
                else { self = .string(s) }
            }
        }

        /// The number a plain scalar is in YAML 1.2's core schema: `[-+]?(.d+|d+(.d*)?)([eE][-+]?d+)?`.
        static func number(_ s: String) -> Double? {
            var rest = Substring(s)
            if rest.first == "-" || rest.first == "+" { rest = rest.dropFirst() }
            let mantissa = rest.prefix { $0 != "e" && $0 != "E" }
            var exponent = rest.dropFirst(mantissa.count)
            let parts = mantissa.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
            let digits = { (t: Substring) in t.allSatisfy { $0.isASCII && $0.isNumber } }
            guard !mantissa.isEmpty, parts.allSatisfy(digits), parts.contains(where: { !$0.isEmpty }), parts[0].isEmpty ? parts.count == 2 : true else { return nil }
            if !exponent.isEmpty {
                exponent = exponent.dropFirst()
                if exponent.first == "-" || exponent.first == "+" { exponent = exponent.dropFirst() }
                guard !exponent.isEmpty, digits(exponent) else { return nil }
            }
            return Double(s)
        }

        var typeName: String {
            switch self {
            case .object: return "object"
            case .array: return "array"
            case .string: return "string"
            case .number(_, let integral): return integral ? "integer" : "number"
            case .bool: return "boolean"
            case .null: return "null"
            }
        }
    }

    typealias Schema = [(String, ScenarioSchema.Value)]
    let root: Schema

    init(_ document: ScenarioSchema.Value) {
        guard case .object(let pairs) = document else { preconditionFailure("a schema is an object") }
        root = pairs
    }

    /// The complaints about `instance`, each with its path; none when it is valid.
    func errors(_ instance: Instance) -> [String] { errors(instance, root, path: "") }

    static func value(_ schema: Schema, _ key: String) -> ScenarioSchema.Value? { schema.first { $0.0 == key }?.1 }

    static func number(_ value: ScenarioSchema.Value) -> Double? {
        switch value {
        case .integer(let i): return Double(i)
        case .unsigned(let u): return Double(u)
        case .number(let d): return d
        default: return nil
        }
    }

    static func object(_ value: ScenarioSchema.Value) -> Schema {
        guard case .object(let pairs) = value else { preconditionFailure("expected a subschema, found \(value.text())") }
        return pairs
    }

    func resolve(_ reference: String) -> Schema {
        let name = String(reference.dropFirst("#/$defs/".count))
        guard reference.hasPrefix("#/$defs/"), let defs = Self.value(root, "$defs"), let found = Self.value(Self.object(defs), name) else {
            preconditionFailure("unresolved reference \(reference)")
        }
        return Self.object(found)
    }

    /// Compiled patterns (the schema uses three).
    static let expressions = Mutex<[String: NSRegularExpression]>([:])

    static func matches(_ s: String, _ pattern: String) -> Bool {
        let expression = expressions.withLock { cache in
            if let found = cache[pattern] { return found }
            let made = try! NSRegularExpression(pattern: pattern)
            cache[pattern] = made
            return made
        }
        return expression.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil
    }

    static func matches(_ instance: Instance, type: String) -> Bool {
        switch (type, instance) {
        case ("number", .number), ("integer", .number(_, true)), ("string", .string), ("boolean", .bool), ("null", .null),
             ("object", .object), ("array", .array): return true
        default: return false
        }
    }

    static func equal(_ instance: Instance, _ value: ScenarioSchema.Value) -> Bool {
        switch (instance, value) {
        case (.string(let a), .string(let b)): return a == b
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a, _), _): return number(value) == a
        default: return false
        }
    }

    func errors(_ instance: Instance, _ schema: Schema, path: String) -> [String] {
        var found: [String] = []
        func fail(_ message: String) { found.append("\(path.isEmpty ? "(document)" : path): \(message)") }
        for (keyword, value) in schema {
            switch keyword {
            case "$schema", "$id", "title", "description", "$defs": break
            case "$ref":
                guard case .string(let reference) = value else { fail("bad $ref"); continue }
                found += errors(instance, resolve(reference), path: path)
            case "type":
                let types: [String]
                switch value {
                case .string(let t): types = [t]
                case .array(let items): types = items.compactMap { if case .string(let t) = $0 { return t } else { return nil } }
                default: types = []
                }
                if !types.contains(where: { Self.matches(instance, type: $0) }) { fail("expected \(types.joined(separator: " or ")), found \(instance.typeName)") }
            case "enum":
                guard case .array(let members) = value else { fail("bad enum"); continue }
                if !members.contains(where: { Self.equal(instance, $0) }) { fail("not one of \(value.text())") }
            case "const":
                if !Self.equal(instance, value) { fail("not \(value.text())") }
            case "minimum", "maximum", "exclusiveMinimum":
                guard case .number(let n, _) = instance, let limit = Self.number(value) else { continue }
                let ok = keyword == "minimum" ? n >= limit : keyword == "maximum" ? n <= limit : n > limit
                if !ok { fail("\(n) fails \(keyword) \(limit)") }
            case "pattern":
                guard case .string(let s) = instance, case .string(let pattern) = value else { continue }
                if !Self.matches(s, pattern) { fail("'\(s)' does not match \(pattern)") }
            case "properties", "required", "additionalProperties", "minProperties", "maxProperties", "propertyNames":
                guard case .object(let pairs) = instance else { continue }
                let properties = Self.value(schema, "properties").map(Self.object) ?? []
                switch keyword {
                case "properties":
                    for (key, item) in pairs {
                        if let sub = Self.value(properties, key) { found += errors(item, Self.object(sub), path: path.isEmpty ? key : "\(path).\(key)") }
                    }
                case "required":
                    guard case .array(let names) = value else { continue }
                    for case .string(let name) in names where !pairs.contains(where: { $0.0 == name }) { fail("missing required \(name)") }
                case "additionalProperties":
                    for (key, item) in pairs where Self.value(properties, key) == nil {
                        if case .bool(false) = value { fail("unknown key \(key)") }
                        else if case .object(let sub) = value { found += errors(item, sub, path: path.isEmpty ? key : "\(path).\(key)") }
                    }
                case "minProperties":
                    if Double(pairs.count) < Self.number(value) ?? 0 { fail("fewer than \(value.text()) keys") }
                case "maxProperties":
                    if Double(pairs.count) > Self.number(value) ?? .infinity { fail("more than \(value.text()) keys") }
                default:  // propertyNames
                    for (key, _) in pairs { found += errors(.string(key), Self.object(value), path: "\(path)[key \(key)]") }
                }
            case "items", "minItems":
                guard case .array(let items) = instance else { continue }
                if keyword == "minItems" {
                    if Double(items.count) < Self.number(value) ?? 0 { fail("fewer than \(value.text()) items") }
                } else {
                    for (i, item) in items.enumerated() { found += errors(item, Self.object(value), path: "\(path)[\(i)]") }
                }
            case "anyOf":
                guard case .array(let options) = value else { fail("bad anyOf"); continue }
                if !options.contains(where: { errors(instance, Self.object($0), path: path).isEmpty }) { fail("matches none of anyOf") }
            default:
                fail("the validator does not know the keyword \(keyword)")
            }
        }
        return found
    }
}
