import Foundation

/// The JSON Schema (draft 2020-12) of scenario files, written from ``ScenarioKeys`` by `ambar-bench schema` and
/// shipped as Docs/scenario.schema.json, so an editor with a YAML language server completes keys and flags mistakes
/// (Docs/scenarios.md "Editor support"). The loader checks more than the schema can say (a knee's key is a matrix
/// key, a fetch by key takes no predicate); what the schema says, the loader also refuses.
public enum ScenarioSchema {
    /// A JSON value whose objects keep their keys in the order written, so the file is the same on every run.
    indirect enum Value: Equatable, Sendable {
        case object([(String, Value)])
        case array([Value])
        case string(String)
        case integer(Int)
        case unsigned(UInt64)
        case number(Double)
        case bool(Bool)

        static func == (a: Value, b: Value) -> Bool { a.text() == b.text() }

        /// The value as indented JSON.
        func text(indent: String = "") -> String {
            let inner = indent + "  "
            switch self {
            case .object(let pairs):
                guard !pairs.isEmpty else { return "{}" }
                return "{\n" + pairs.map { "\(inner)\(Value.quoted($0.0)): \($0.1.text(indent: inner))" }.joined(separator: ",\n") + "\n\(indent)}"
            case .array(let items):
                // Short lists of scalars (enum members, types) stay on one line.
                if items.allSatisfy({ if case .object = $0 { return false }; if case .array = $0 { return false }; return true }) {
                    return "[" + items.map { $0.text() }.joined(separator: ", ") + "]"
                }
                return "[\n" + items.map { inner + $0.text(indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
            case .string(let s): return Value.quoted(s)
            case .integer(let i): return String(i)
            case .unsigned(let u): return String(u)
            case .number(let d): return d == d.rounded() && abs(d) < 1e15 ? String(Int(d)) : String(d)
            case .bool(let b): return b ? "true" : "false"
            }
        }

        /// A JSON string: a YAML double-quoted scalar is one (quotes, backslashes and control characters escaped).
        static func quoted(_ s: String) -> String { ProfileText.quoted(s) }
    }

    /// Regular expressions (ECMA-262, as JSON Schema reads them) of the forms the loader parses from strings.
    enum Pattern {
        static let duration = "^[0-9]+(\\.[0-9]+)?(ms|s|m)$"
        static let rate = "^[0-9]+(\\.[0-9]+)? */s$"
        static let matrixKey = "^[A-Za-z][A-Za-z0-9_]*([.][A-Za-z0-9_-]+|\\[[0-9]+\\])*$"
        static let modelFile = "[.](json|yaml|yml|xcdatamodeld|xcdatamodel)/?$"
    }

    /// The schema as JSON text, ending with a newline.
    public static func json() -> String { document().text() + "\n" }

    /// The schema document: the scenario inline, every other object under `$defs`.
    static func document() -> Value {
        var pairs: [(String, Value)] = [
            ("$schema", .string("https://json-schema.org/draft/2020-12/schema")),
            ("$id", .string("https://ambar.invalid/scenario.schema.json")),
            ("title", .string("Ambar workbench scenario")),
        ]
        pairs += objectSchema(ScenarioKeys.root)
        pairs.append(("$defs", .object(ScenarioKeys.objects.dropFirst().map { ($0.name, .object(objectSchema($0))) })))
        return .object(pairs)
    }

    static func objectSchema(_ object: ScenarioObject) -> [(String, Value)] {
        var pairs: [(String, Value)] = [("description", .string(object.description)), ("type", .string("object"))]
        pairs.append(("properties", .object(object.keys.map { key in
            var body = Self.schema(key.kind)
            if key.nullable { body = [("anyOf", .array([.object(body), .object([("type", .string("null"))])]))] }
            return (key.name, Value.object([("description", Value.string(key.description))] + body))
        })))
        if !object.requiredNames.isEmpty { pairs.append(("required", .array(object.requiredNames.map(Value.string)))) }
        if object.exactlyOneKey { pairs += [("minProperties", .integer(1)), ("maxProperties", .integer(1))] }
        pairs.append(("additionalProperties", .bool(false)))
        return pairs
    }

    static func schema(_ kind: ScenarioKey.Kind) -> [(String, Value)] {
        switch kind {
        case .integer(let min, let max):
            var pairs: [(String, Value)] = [("type", .string("integer"))]
            if let min { pairs.append(("minimum", .integer(min))) }
            if let max { pairs.append(("maximum", .integer(max))) }
            return pairs
        case .unsigned64:
            return [("type", .string("integer")), ("minimum", .integer(0)), ("maximum", .unsigned(UInt64.max))]
        case .integerChoice(let members):
            return [("type", .string("integer")), ("enum", .array(members.map(Value.integer)))]
        case .number(let min, let max, let exclusiveMin):
            var pairs: [(String, Value)] = [("type", .string("number"))]
            if let min { pairs.append((exclusiveMin ? "exclusiveMinimum" : "minimum", .number(min))) }
            if let max { pairs.append(("maximum", .number(max))) }
            return pairs
        case .string:
            return [("type", .string("string"))]
        case .boolean:
            return [("type", .string("boolean"))]
        case .duration:
            return [("anyOf", .array([
                .object([("type", .string("number")), ("exclusiveMinimum", .integer(0)), ("maximum", .integer(86_400))]),
                .object([("type", .string("string")), ("pattern", .string(Pattern.duration))]),
            ]))]
        case .rate:
            return [("anyOf", .array([
                .object([("const", .string("unlimited"))]),
                .object([("type", .string("number")), ("minimum", .number(0.001)), ("maximum", .integer(1_000_000))]),
                .object([("type", .string("string")), ("pattern", .string(Pattern.rate))]),
            ]))]
        case .rowsPerSecond:
            return [("anyOf", .array([
                .object([("type", .string("number")), ("minimum", .integer(0)), ("maximum", .integer(1_000_000))]),
                .object([("type", .string("string")), ("pattern", .string(Pattern.rate))]),
            ]))]
        case .limit:
            return [("anyOf", .array([
                .object([("type", .string("number"))]),
                .object([("type", .string("string")), ("pattern", .string(Pattern.duration))]),
            ]))]
        case .choice(let members):
            return [("enum", .array(members.map(Value.string)))]
        case .scalar:
            return [("type", .array([.string("string"), .string("number"), .string("boolean")]))]
        case .list(let element, let minItems):
            var pairs: [(String, Value)] = [("type", .string("array")), ("items", .object(schema(element)))]
            if minItems > 0 { pairs.append(("minItems", .integer(minItems))) }
            return pairs
        case .map(let value):
            // The matrix's keys are key paths; other maps (model values) are keyed by attribute names.
            var pairs: [(String, Value)] = [("type", .string("object"))]
            if value.isMatrixValue { pairs.append(("propertyNames", .object([("pattern", .string(Pattern.matrixKey))]))) }
            pairs.append(("additionalProperties", .object(schema(value))))
            return pairs
        case .object(let name):
            return [("$ref", .string("#/$defs/\(name)"))]
        case .anyOf(let kinds):
            return [("anyOf", .array(kinds.map { .object(schema($0)) }))]
        case .entities:
            return [("type", .string("array")), ("items", .object([("type", .string("object"))]))]
        case .modelFile:
            return [("type", .string("string")), ("pattern", .string(Pattern.modelFile))]
        }
    }
}

extension ScenarioKey.Kind {
    /// A matrix dimension: a list of scalars.
    var isMatrixValue: Bool {
        if case .list(.scalar, _) = self { return true }
        return false
    }
}
