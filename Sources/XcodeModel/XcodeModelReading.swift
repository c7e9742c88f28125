import ModelSchema

/// What ``XcodeModelReader`` read: the model as a ``ModelFile`` (the form every model of this library takes) and
/// the elements of the Xcode model it did not carry over, each with its file and line.
public struct XcodeModelReading: Sendable, Equatable {
    /// The model: a bundle's versions (``ModelFile/versions``, ``ModelFile/current``), or a single version's
    /// entities and configurations.
    public var model: ModelFile
    /// The elements left out, in the order met (versions in the model's order, each file from top to bottom).
    public var skipped: [Skipped]

    /// An element of an Xcode model that the reader left out, and why the load goes on without it.
    public struct Skipped: Sendable, Equatable, CustomStringConvertible {
        /// The file it is in (a `contents` file, or the mapping model's folder).
        public var file: String
        /// Its line in `file`, for an XML element.
        public var line: Int?
        /// What it is: `<fetchedProperty name="recent">` in entity `Order`, `Shop.xcmappingmodel`.
        public var element: String
        /// Why it is left out and why that changes nothing the model does.
        public var why: String

        public init(file: String, line: Int?, element: String, why: String) {
            (self.file, self.line, self.element, self.why) = (file, line, element, why)
        }

        public var description: String { "\(file)\(line.map { ":\($0)" } ?? ""): skipped \(element): \(why)" }
    }

    /// The line of each entity and property by version (empty for a single version), to name the line of what a
    /// model built from ``model`` refuses.
    var lines: [Place: Int] = [:]
    /// The `contents` file of each version, by version name (the empty name for a single version).
    var files: [String: String] = [:]

    /// An entity, or one of its properties, in a version.
    struct Place: Hashable, Sendable {
        var version: String
        var entity: String
        var property: String?
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.model == rhs.model && lhs.skipped == rhs.skipped }
}
