import Foundation

/// An index the store keeps on an entity's rows, as `NSFetchIndexDescription` describes one: a name and an ordered
/// list of elements, each a stored property of the entity, ascending or descending.
///
/// The SQLite store creates it as `Z_<Entity>_<name>` on the table of the entity's hierarchy
/// (Docs/coredata-behaviour.md §4.1). A fetch whose predicate constrains the leading elements, or whose sort follows
/// them, is answered through the index instead of a scan of every row.
///
/// ```swift
/// EntityDescription(name: "Item", attributes: [...],
///     fetchIndexes: [FetchIndexDescription(name: "byTagAndDate", elements: [.init(property: "tag"), .init(property: "date", ascending: false)])])
/// ```
public struct FetchIndexDescription: Sendable, Hashable {
    /// The index's name, unique within its entity (a letter followed by letters, digits or '_').
    public var name: String
    /// The indexed properties, most significant first.
    public var elements: [Element]

    /// One element of an index (`NSFetchIndexElementDescription` with a binary collation).
    public struct Element: Sendable, Hashable {
        /// A stored attribute or a to-one relationship of the entity.
        public var property: String
        /// Whether the index keeps this property's values in ascending order.
        public var isAscending: Bool

        public init(property: String, ascending: Bool = true) {
            self.property = property
            self.isAscending = ascending
        }
    }

    /// Creates an index description.
    public init(name: String, elements: [Element]) {
        self.name = name
        self.elements = elements
    }
}
