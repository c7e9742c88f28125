import Foundation

/// An Xcode model that cannot be read or loaded: names the file (the bundle, the version folder or its `contents`)
/// and, for what is wrong inside the XML, the line.
///
/// ```swift
/// do { _ = try XcodeModelReader.read(at: url) } catch let error as XcodeModelError {
///     print(error)  // Shop.xcdatamodeld/Shop.xcdatamodel/contents:12: relationship 'order' of entity 'OrderLine' has no inverse …
/// }
/// ```
public struct XcodeModelError: Error, CustomStringConvertible, Equatable {
    /// The file or folder at fault.
    public var path: String
    /// The line of the XML element at fault, when the fault is inside a `contents` file.
    public var line: Int?
    /// What is wrong.
    public var message: String

    public init(path: String, line: Int? = nil, _ message: String) {
        (self.path, self.line, self.message) = (path, line, message)
    }

    public var description: String { "\(path)\(line.map { ":\($0)" } ?? ""): \(message)" }
}
