import Foundation
import Yams

/// A YAML document as a tree that keeps each node's position, so every error can name `file:line:column`, and
/// that overrides (`-p key=value`) and the matrix can edit before decoding.
indirect enum YAMLTree: Equatable {
    struct Position: Equatable {
        var line: Int
        var column: Int
    }
    case scalar(String, Position?)
    case map([(key: String, value: YAMLTree, position: Position?)], Position?)
    case list([YAMLTree], Position?)

    static func == (a: YAMLTree, b: YAMLTree) -> Bool {
        switch (a, b) {
        case let (.scalar(x, _), .scalar(y, _)): return x == y
        case let (.list(x, _), .list(y, _)): return x == y
        case let (.map(x, _), .map(y, _)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    var position: Position? {
        switch self {
        case .scalar(_, let p), .map(_, let p), .list(_, let p): return p
        }
    }

    static func parse(_ text: String, file: String) throws -> YAMLTree {
        // Aliases are not supported, and composing nested ones expands them exponentially (a
        // 650-byte file grew past 5 GB): refuse them before YAML is composed.
        if let place = firstAlias(in: text) {
            throw ScenarioError(file: file, line: place.line, column: place.column, field: "", message: "YAML aliases (*name) are not supported in scenarios: write the value out")
        }
        let node: Node?
        do { node = try Yams.compose(yaml: text) } catch let error as YamlError {
            throw Self.describe(error, text: text, file: file)
        } catch {
            throw ScenarioError(file: file, field: "", message: "not valid YAML: \(error)")
        }
        guard let node else { throw ScenarioError(file: file, line: 1, column: 1, field: "", message: "the file is empty") }
        return try convert(node, file: file)
    }

    /// Where the first alias (`*name` as a value) stands, outside quoted strings and comments.
    static func firstAlias(in text: String) -> (line: Int, column: Int)? {
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var quote: Character?
            var previous: Character = " "
            // The last character before this one that is not a space: an alias starts a value, so it follows a
            // key's colon, a sequence dash, a bracket, a brace, a comma, or nothing.
            var lastSignificant: Character?
            var column = 0
            var chars = line.makeIterator()
            while let c = chars.next() {
                column += 1
                if let q = quote {
                    if c == q { quote = nil }
                } else if c == "\"" || c == "'" {
                    quote = c
                } else if c == "#" && (previous == " " || column == 1) {
                    break
                } else if c == "*", previous == " " || lastSignificant == nil || "[{,".contains(previous),
                          lastSignificant.map({ ":-[{,".contains($0) }) ?? true {
                    var rest = chars
                    if let next = rest.next(), next.isLetter || next.isNumber || next == "_" || next == "-" {
                        return (index + 1, column)
                    }
                }
                if c != " " { lastSignificant = c }
                previous = c
            }
        }
        return nil
    }

    private static func describe(_ error: YamlError, text: String, file: String) -> ScenarioError {
        switch error {
        case let .scanner(_, problem, mark, _), let .parser(_, problem, mark, _), let .composer(_, problem, mark, _):
            return ScenarioError(file: file, line: mark.line, column: mark.column, field: "", message: "not valid YAML: \(problem)")
        case let .duplicatedKeysInMapping(duplicates, context):
            // Yams gives the mapping's start; point at the key's second occurrence when it is a block key.
            let key = duplicates.sorted().first ?? ""
            var place = (line: context.mark.line, column: context.mark.column)
            var seen = 0
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() where index + 1 >= context.mark.line {
                var body = Substring(line)
                let indent = body.prefix { $0 == " " }.count
                body = body.dropFirst(indent)
                let dash = body.hasPrefix("- ") ? 2 : 0
                body = body.dropFirst(dash)
                guard body.hasPrefix(key), body.dropFirst(key.count).drop(while: { $0 == " " }).hasPrefix(":") else { continue }
                seen += 1
                if seen == 2 {
                    place = (index + 1, indent + dash + 1)
                    break
                }
            }
            return ScenarioError(file: file, line: place.line, column: place.column, field: key, message: "duplicate key")
        default:
            return ScenarioError(file: file, field: "", message: "not valid YAML: \(error)")
        }
    }

    private static func convert(_ node: Node, file: String) throws -> YAMLTree {
        let position = node.mark.map { Position(line: $0.line, column: $0.column) }
        switch node {
        case .scalar(let s):
            return .scalar(s.string, position)
        case .sequence(let seq):
            return .list(try seq.map { try convert($0, file: file) }, position)
        case .mapping(let map):
            var pairs: [(key: String, value: YAMLTree, position: Position?)] = []
            var seen = Set<String>()
            for (k, v) in map {
                guard case .scalar(let ks) = k else {
                    throw ScenarioError(file: file, line: k.mark?.line, column: k.mark?.column, field: "", message: "a mapping key must be a plain name")
                }
                guard seen.insert(ks.string).inserted else {
                    throw ScenarioError(file: file, line: k.mark?.line, column: k.mark?.column, field: ks.string, message: "duplicate key")
                }
                pairs.append((ks.string, try convert(v, file: file), k.mark.map { Position(line: $0.line, column: $0.column) }))
            }
            return .map(pairs, position)
        case .alias:
            throw ScenarioError(file: file, line: position?.line, column: position?.column, field: "", message: "YAML aliases are not supported in scenarios")
        }
    }

    /// The tree as plain YAML text (for the resolved scenario written beside the results).
    func yaml(indent: Int = 0) -> String {
        let pad = String(repeating: "  ", count: indent)
        switch self {
        case .scalar(let s, _): return Self.quote(s)
        case .list(let items, _):
            if items.isEmpty { return "[]" }
            return items.map { item -> String in
                switch item {
                case .scalar: return "\(pad)- \(item.yaml())"
                default:
                    let body = item.yaml(indent: indent + 1)
                    return "\(pad)- " + body.dropFirst(pad.count + 2)
                }
            }.joined(separator: "\n")
        case .map(let pairs, _):
            if pairs.isEmpty { return "{}" }
            return pairs.map { pair -> String in
                switch pair.value {
                case .scalar: return "\(pad)\(pair.key): \(pair.value.yaml())"
                case .list(let items, _) where items.isEmpty: return "\(pad)\(pair.key): []"
                case .map(let m, _) where m.isEmpty: return "\(pad)\(pair.key): {}"
                default: return "\(pad)\(pair.key):\n" + pair.value.yaml(indent: indent + 1)
                }
            }.joined(separator: "\n")
        }
    }

    private static func quote(_ s: String) -> String {
        if s.isEmpty { return "\"\"" }
        let plain = s.allSatisfy { $0.isLetter || $0.isNumber || "._-/ ".contains($0) } && !s.hasPrefix(" ") && !s.hasSuffix(" ")
        return plain ? s : "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// Sets `value` at a dotted key path. A segment names a mapping key, or in a list the element whose `name`
    /// is the segment, or the element whose only key is the segment (an actor: `phases.run.importer.objects`).
    func setting(_ path: [String], to value: YAMLTree) -> YAMLTree? {
        guard let first = path.first else { return value }
        let rest = Array(path.dropFirst())
        switch self {
        case .map(var pairs, let p):
            if let i = pairs.firstIndex(where: { $0.key == first }) {
                guard let updated = pairs[i].value.setting(rest, to: value) else { return nil }
                pairs[i].value = updated
            } else if let a = pairs.firstIndex(where: { $0.key == "actors" }), let updated = pairs[a].value.setting(path, to: value) {
                // `phases.run.importer.objects`: the actor inside the phase's actors list.
                pairs[a].value = updated
            } else {
                var built: YAMLTree = value
                for key in rest.reversed() { built = .map([(key, built, nil)], nil) }
                pairs.append((first, built, nil))
            }
            return .map(pairs, p)
        case .list(var items, let p):
            for (i, item) in items.enumerated() {
                guard case .map(let pairs, _) = item else { continue }
                if pairs.contains(where: { $0.key == "name" && $0.value == .scalar(first, nil) }) {
                    guard let updated = item.setting(rest, to: value) else { return nil }
                    items[i] = updated
                    return .list(items, p)
                }
                if pairs.count == 1, pairs[0].key == first {
                    guard let updated = item.setting(path, to: value) else { return nil }
                    items[i] = updated
                    return .list(items, p)
                }
            }
            if let index = Int(first), items.indices.contains(index) {
                guard let updated = items[index].setting(rest, to: value) else { return nil }
                items[index] = updated
                return .list(items, p)
            }
            return nil
        case .scalar:
            return nil
        }
    }

    func value(at key: String) -> YAMLTree? {
        if case .map(let pairs, _) = self { return pairs.first { $0.key == key }?.value }
        return nil
    }

    func removing(_ key: String) -> YAMLTree {
        if case .map(let pairs, let p) = self { return .map(pairs.filter { $0.key != key }, p) }
        return self
    }
}
