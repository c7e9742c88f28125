import Foundation

/// Bad input: names the file, line, column and key path, and what was expected (exit code 2).
public struct ScenarioError: Error, CustomStringConvertible, Equatable {
    public var file: String
    public var line: Int?
    public var column: Int?
    /// The key path, e.g. `phases.run.importer.chunkSize`.
    public var field: String
    public var message: String

    public init(file: String, line: Int? = nil, column: Int? = nil, field: String, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.field = field
        self.message = message
    }

    public var description: String {
        var place = file
        if let line { place += ":\(line)" }
        if let column { place += ":\(column)" }
        return field.isEmpty ? "\(place): \(message)" : "\(place): \(field): \(message)"
    }
}

/// A failure of the workbench itself (exit code 3), or a failed check (exit code 1).
public struct WorkbenchError: Error, CustomStringConvertible {
    public enum Kind: Sendable { case checkFailed, badInput, internalFailure }
    public var kind: Kind
    public var message: String
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var description: String { message }
}
