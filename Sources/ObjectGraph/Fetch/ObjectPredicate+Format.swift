import Foundation

/// A predicate format string that does not parse: where, and what was expected.
public struct PredicateFormatError: Error, CustomStringConvertible, Equatable {
    /// The format string.
    public var format: String
    /// 1-based column of the problem.
    public var column: Int
    /// What the parser expected there.
    public var expected: String
    /// What it found.
    public var found: String

    public var description: String {
        "predicate format error at column \(column): expected \(expected), found \(found) in \"\(format)\""
    }
}

extension ObjectPredicate {
    /// Parses an `NSPredicate` format string (the grammar is in Docs/predicate-grammar.md).
    ///
    /// ```swift
    /// let p = try ObjectPredicate(format: "name BEGINSWITH[c] %@ AND price > %@", "a", 10)
    /// ```
    /// - Throws: ``PredicateFormatError`` naming the column and what was expected.
    public init(format: String, _ arguments: Any?...) throws {
        try self.init(format: format, argumentArray: arguments)
    }

    /// Parses a format string with its `%@`/`%K`/`%d`/`%f` arguments in an array.
    public init(format: String, argumentArray: [Any?]) throws {
        var parser = try PredicateParser(format: format, arguments: argumentArray)
        self = try parser.parseAll()
    }
}

private struct PredicateParser {
    enum Token: Equatable {
        case identifier(String)
        case number(PropertyValue)
        case string(String)
        case symbol(String)
        case placeholder(String)
        case variable(String)
        case end
    }

    let format: String
    var tokens: [(token: Token, column: Int)] = []
    var position = 0
    var arguments: [Any?]
    var argumentIndex = 0

    init(format: String, arguments: [Any?]) throws {
        self.format = format
        self.arguments = arguments
        try tokenize()
    }

    // MARK: Lexer

    private mutating func tokenize() throws {
        let chars = Array(format)
        var i = 0
        func fail(_ expected: String, _ at: Int) -> PredicateFormatError {
            PredicateFormatError(format: format, column: at + 1, expected: expected, found: at < chars.count ? "'\(chars[at])'" : "end of string")
        }
        while i < chars.count {
            let c = chars[i]
            if c.isWhitespace { i += 1; continue }
            let start = i
            if c.isLetter || c == "_" || c == "@" || c == "#" {
                i += 1
                while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "_" { i += 1 }
                tokens.append((.identifier(String(chars[start..<i])), start + 1))
            } else if c.isNumber || (c == "." && i + 1 < chars.count && chars[i + 1].isNumber)
                        || (c == "-" && i + 1 < chars.count && (chars[i + 1].isNumber || chars[i + 1] == ".") && previousAllowsSign) {
                i += 1
                var isDouble = c == "."
                while i < chars.count, chars[i].isNumber || chars[i] == "." || chars[i] == "e" || chars[i] == "E"
                        || ((chars[i] == "-" || chars[i] == "+") && (chars[i - 1] == "e" || chars[i - 1] == "E")) {
                    if chars[i] == "." || chars[i] == "e" || chars[i] == "E" { isDouble = true }
                    i += 1
                }
                let text = String(chars[start..<i])
                if !isDouble, let v = Int64(text) {
                    tokens.append((.number(.integer(v)), start + 1))
                } else if let v = Double(text) {
                    tokens.append((.number(.double(v)), start + 1))
                } else {
                    throw fail("a number", start)
                }
            } else if c == "\"" || c == "'" {
                i += 1
                var s = ""
                var closed = false
                while i < chars.count {
                    if chars[i] == "\\", i + 1 < chars.count {
                        let n = chars[i + 1]
                        switch n {
                        case "n": s.append("\n")
                        case "t": s.append("\t")
                        default: s.append(n)
                        }
                        i += 2
                        continue
                    }
                    if chars[i] == c { closed = true; i += 1; break }
                    s.append(chars[i])
                    i += 1
                }
                guard closed else { throw PredicateFormatError(format: format, column: start + 1, expected: "a closing \(c)", found: "end of string") }
                tokens.append((.string(s), start + 1))
            } else if c == "%" {
                i += 1
                let rest = String(chars[i..<min(i + 3, chars.count)])
                let spec: String
                if rest.hasPrefix("lld") { spec = "lld" } else if rest.hasPrefix("ld") { spec = "ld" } else if rest.hasPrefix("lu") { spec = "lu" }
                else if let first = rest.first, "@Kdifu".contains(first) { spec = String(first) }
                else { throw fail("a format specifier (%@, %K, %d, %i, %ld, %f)", i) }
                i += spec.count
                tokens.append((.placeholder(spec), start + 1))
            } else if c == "$" {
                i += 1
                let s = i
                while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "_" { i += 1 }
                guard i > s else { throw fail("a variable name after $", s) }
                tokens.append((.variable(String(chars[s..<i])), start + 1))
            } else {
                let two = i + 1 < chars.count ? String(chars[i...i + 1]) : ""
                if ["==", "!=", "<>", "<=", ">=", "=<", "=>", "&&", "||"].contains(two) {
                    tokens.append((.symbol(two), start + 1))
                    i += 2
                } else if "()=<>!,{}.[]".contains(c) {
                    tokens.append((.symbol(String(c)), start + 1))
                    i += 1
                } else {
                    throw fail("an operator, key path or value", i)
                }
            }
        }
        tokens.append((.end, chars.count + 1))
    }

    private var previousAllowsSign: Bool {
        guard let last = tokens.last?.token else { return true }
        switch last {
        case .symbol(let s): return s != ")" && s != "}"
        case .identifier(let s): return Self.operatorWords.contains(s.uppercased()) || Self.connectiveWords.contains(s.uppercased())
        default: return false
        }
    }

    static let operatorWords: Set<String> = ["IN", "CONTAINS", "BEGINSWITH", "ENDSWITH", "LIKE", "MATCHES", "BETWEEN"]
    static let connectiveWords: Set<String> = ["AND", "OR", "NOT"]

    // MARK: Parser

    private var current: Token { tokens[position].token }
    private var column: Int { tokens[position].column }

    private func describe(_ t: Token) -> String {
        switch t {
        case .identifier(let s): return "'\(s)'"
        case .number(let v): return "'\(v)'"
        case .string(let s): return "\"\(s)\""
        case .symbol(let s): return "'\(s)'"
        case .placeholder(let s): return "'%\(s)'"
        case .variable(let s): return "'$\(s)'"
        case .end: return "end of string"
        }
    }

    private func error(_ expected: String) -> PredicateFormatError {
        PredicateFormatError(format: format, column: column, expected: expected, found: describe(current))
    }

    private func isKeyword(_ word: String) -> Bool {
        if case .identifier(let s) = current { return s.uppercased() == word }
        return false
    }

    private func isSymbol(_ s: String) -> Bool { current == .symbol(s) }

    mutating func parseAll() throws -> ObjectPredicate {
        let node = try parseOr()
        guard current == .end else { throw error("AND, OR or the end of the predicate") }
        guard argumentIndex == arguments.count else {
            throw PredicateFormatError(format: format, column: column, expected: "\(argumentIndex) argument(s) for the format's placeholders", found: "\(arguments.count) arguments")
        }
        return ObjectPredicate(node)
    }

    private mutating func parseOr() throws -> ObjectPredicate.Node {
        var nodes = [try parseAnd()]
        while isKeyword("OR") || isSymbol("||") {
            position += 1
            nodes.append(try parseAnd())
        }
        return nodes.count == 1 ? nodes[0] : .or(nodes)
    }

    private mutating func parseAnd() throws -> ObjectPredicate.Node {
        var nodes = [try parseNot()]
        while isKeyword("AND") || isSymbol("&&") {
            position += 1
            nodes.append(try parseNot())
        }
        return nodes.count == 1 ? nodes[0] : .and(nodes)
    }

    private mutating func parseNot() throws -> ObjectPredicate.Node {
        if isKeyword("NOT") || isSymbol("!") {
            position += 1
            return .not(try parseNot())
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws -> ObjectPredicate.Node {
        if isSymbol("(") {
            // A parenthesised predicate (an aggregate `{…}` never starts with "(").
            position += 1
            let node = try parseOr()
            guard isSymbol(")") else { throw error("')'") }
            position += 1
            return node
        }
        if isKeyword("TRUEPREDICATE") { position += 1; return .constant(true) }
        if isKeyword("FALSEPREDICATE") { position += 1; return .constant(false) }
        return try parseComparison()
    }

    private mutating func parseComparison() throws -> ObjectPredicate.Node {
        var modifier = PredicateComparison.Modifier.direct
        if isKeyword("ANY") || isKeyword("SOME") { modifier = .any; position += 1 }
        else if isKeyword("ALL") { modifier = .all; position += 1 }
        else if isKeyword("NONE") { modifier = .none; position += 1 }
        let left = try parseExpression()
        let (op, negate) = try parseOperator()
        let options = try parseOptions()
        let right = try parseExpression()
        if op == .between, case .list(let values) = right, values.count != 2 {
            throw error("a two-element array after BETWEEN")
        }
        let node = ObjectPredicate.Node.comparison(PredicateComparison(left, op, right, options: options, modifier: modifier))
        return negate ? .not(node) : node
    }

    private mutating func parseOperator() throws -> (PredicateComparison.Operator, Bool) {
        let token = current
        switch token {
        case .symbol(let s):
            let ops: [String: PredicateComparison.Operator] = [
                "=": .equalTo, "==": .equalTo, "!=": .notEqualTo, "<>": .notEqualTo, "<": .lessThan, "<=": .lessThanOrEqualTo,
                "=<": .lessThanOrEqualTo, ">": .greaterThan, ">=": .greaterThanOrEqualTo, "=>": .greaterThanOrEqualTo,
            ]
            if let op = ops[s] {
                position += 1
                return (op, false)
            }
        case .identifier(let word):
            var negate = false
            var w = word.uppercased()
            if w == "NOT" {
                // `a NOT IN b`, `a NOT CONTAINS b`, … as the negation of the operator.
                guard case .identifier(let next) = tokens[position + 1].token else { break }
                negate = true
                w = next.uppercased()
                position += 1
            }
            let ops: [String: PredicateComparison.Operator] = [
                "IN": .in, "CONTAINS": .contains, "BEGINSWITH": .beginsWith, "ENDSWITH": .endsWith, "LIKE": .like,
                "MATCHES": .matches, "BETWEEN": .between,
            ]
            if let op = ops[w] {
                position += 1
                return (op, negate)
            }
        default: break
        }
        throw error("a comparison operator (==, !=, <, <=, >, >=, IN, CONTAINS, BEGINSWITH, ENDSWITH, LIKE, MATCHES, BETWEEN)")
    }

    private mutating func parseOptions() throws -> PredicateComparison.Options {
        guard isSymbol("[") else { return [] }
        position += 1
        guard case .identifier(let letters) = current else { throw error("c, d or cd inside [ ]") }
        var options: PredicateComparison.Options = []
        for ch in letters.lowercased() {
            switch ch {
            case "c": options.insert(.caseInsensitive)
            case "d": options.insert(.diacriticInsensitive)
            case "n", "l": break  // normalized / locale-sensitive: accepted, no effect here
            default: throw error("c, d or cd inside [ ]")
            }
        }
        position += 1
        guard isSymbol("]") else { throw error("']'") }
        position += 1
        return options
    }

    private mutating func nextArgument(_ spec: String) throws -> Any? {
        guard argumentIndex < arguments.count else {
            throw PredicateFormatError(format: format, column: column, expected: "an argument for %\(spec)", found: "only \(arguments.count) argument(s)")
        }
        defer { argumentIndex += 1 }
        return arguments[argumentIndex]
    }

    private mutating func parseExpression() throws -> ObjectExpression {
        let token = current
        switch token {
        case .identifier(let word):
            let upper = word.uppercased()
            switch upper {
            case "TRUE", "YES": position += 1; return .constant(.bool(true))
            case "FALSE", "NO": position += 1; return .constant(.bool(false))
            case "NIL", "NULL": position += 1; return .constant(.null)
            case "SELF":
                position += 1
                if isSymbol(".") { position += 1; return try parseKeyPath(prefix: "") }
                return .evaluatedObject
            default:
                if Self.operatorWords.contains(upper) || Self.connectiveWords.contains(upper) || ["ANY", "ALL", "NONE", "SOME"].contains(upper) {
                    throw error("a key path or value")
                }
                return try parseKeyPath(prefix: "")
            }
        case .number(let v):
            position += 1
            return .constant(v)
        case .string(let s):
            position += 1
            return .constant(.string(s))
        case .variable(let name):
            position += 1
            return .variable(name)
        case .placeholder(let spec):
            position += 1
            let argument = try nextArgument(spec)
            switch spec {
            case "K":
                guard let key = argument as? String, !key.isEmpty else {
                    throw PredicateFormatError(format: format, column: column, expected: "a key path string for %K", found: String(describing: argument ?? "nil"))
                }
                if isSymbol(".") {
                    position += 1
                    return try parseKeyPath(prefix: key + ".")
                }
                return .keyPath(key)
            case "d", "i", "ld", "lld", "u", "lu":
                guard let v = PropertyValue(any: argument).numericValue, let i = Int64(exactly: v.rounded(.towardZero)) else {
                    throw PredicateFormatError(format: format, column: column, expected: "an integer for %\(spec)", found: String(describing: argument ?? "nil"))
                }
                return .constant(.integer(i))
            case "f":
                guard let v = PropertyValue(any: argument).numericValue else {
                    throw PredicateFormatError(format: format, column: column, expected: "a number for %f", found: String(describing: argument ?? "nil"))
                }
                return .constant(.double(v))
            default:
                return ObjectExpression.value(argument)
            }
        case .symbol("{"):
            position += 1
            var values: [PropertyValue] = []
            if !isSymbol("}") {
                while true {
                    let e = try parseExpression()
                    switch e {
                    case .constant(let v): values.append(v)
                    case .list(let vs): values.append(contentsOf: vs)
                    default: throw error("a constant inside { }")
                    }
                    if isSymbol(",") { position += 1; continue }
                    break
                }
            }
            guard isSymbol("}") else { throw error("',' or '}'") }
            position += 1
            return .list(values)
        default:
            throw error("a key path or value")
        }
    }

    private mutating func parseKeyPath(prefix: String) throws -> ObjectExpression {
        var parts: [String] = []
        while true {
            guard case .identifier(let name) = current else { throw error("a key name") }
            parts.append(name)
            position += 1
            if isSymbol(".") {
                position += 1
                continue
            }
            break
        }
        return .keyPath(prefix + parts.joined(separator: "."))
    }
}
