import Foundation

/// What a model file's decoding error says: what is wrong and where, by its coding path; ObjectGraph's model files,
/// the scenario loader's models and the operation trace's header describe their errors with it.
///
/// ```swift
/// do { file = try JSONDecoder().decode(ModelFile.self, from: data) } catch let error as DecodingError {
///     throw MyError(ModelFileDecodingDescription(paths: .subscripts).describe(error, in: data))
/// }
/// ```
package struct ModelFileDecodingDescription: Sendable {
    /// How a coding path is written.
    package enum PathStyle: Sendable {
        /// Keys after dots and indexes in brackets: `.entities[0].attributes[1].type`.
        case subscripts
        /// Each key's string value, joined by dots.
        case keys
    }

    package var paths: PathStyle
    /// Whether an attribute type that is not one is followed by the valid ones.
    package var namesAttributeTypes: Bool

    package init(paths: PathStyle, namesAttributeTypes: Bool = false) {
        (self.paths, self.namesAttributeTypes) = (paths, namesAttributeTypes)
    }

    /// `error` described. With `document`, the JSON that failed to decode, the entities, properties and fetch indexes
    /// its path goes through are named after the path (`(entity 'Item', attribute 'title')`).
    package func describe(_ error: DecodingError, in document: Data? = nil) -> String {
        func at(_ codingPath: [any CodingKey]) -> String {
            let path = switch paths {
            case .subscripts: codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            case .keys: codingPath.map(\.stringValue).joined(separator: ".")
            }
            return "at \(path)" + (document.flatMap { Self.names(along: codingPath, in: $0) }.map { " (\($0))" } ?? "")
        }
        switch error {
        case .keyNotFound(let key, let ctx): return "missing key '\(key.stringValue)' \(at(ctx.codingPath))"
        case .dataCorrupted(let ctx) where namesAttributeTypes && ctx.codingPath.last?.stringValue == "type":
            let types = AttributeType.allCases.map(\.rawValue).joined(separator: ", ")
            return "\(ctx.debugDescription) \(at(ctx.codingPath)); an attribute's type is one of \(types)"
        case .typeMismatch(_, let ctx), .valueNotFound(_, let ctx), .dataCorrupted(let ctx):
            return "\(ctx.debugDescription) \(at(ctx.codingPath))"
        @unknown default: return "\(error)"
        }
    }

    /// The kinds of the named elements a model's lists hold, by the list's key.
    private static let kinds = ["entities": "entity", "attributes": "attribute", "relationships": "relationship", "fetchIndexes": "fetch index"]

    /// What `codingPath` goes through in the JSON `document`: each named element of a model's lists, as
    /// `entity 'Item', attribute 'title'`; nil when it names none (or the document is not JSON).
    private static func names(along codingPath: [any CodingKey], in document: Data) -> String? {
        guard var node = try? JSONSerialization.jsonObject(with: document) else { return nil }
        var names: [String] = []
        var list: String?
        for key in codingPath {
            if let index = key.intValue, let array = node as? [Any], array.indices.contains(index) {
                node = array[index]
                if let kind = list.flatMap({ kinds[$0] }), let name = (node as? [String: Any])?["name"] as? String {
                    names.append("\(kind) '\(name)'")
                }
                list = nil
            } else if let value = (node as? [String: Any])?[key.stringValue] {
                node = value
                list = key.stringValue
            } else {
                break
            }
        }
        return names.isEmpty ? nil : names.joined(separator: ", ")
    }
}
