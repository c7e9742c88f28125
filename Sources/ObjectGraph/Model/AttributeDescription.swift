import Foundation
import ModelSchema

// What the model needs of each attribute type (the type itself is the model file's: ModelSchema).
extension AttributeType {
    var integerRange: ClosedRange<Int64> {
        switch self {
        case .integer16: return Int64(Int16.min)...Int64(Int16.max)
        case .integer32: return Int64(Int32.min)...Int64(Int32.max)
        default: return Int64.min...Int64.max
        }
    }

    var isNumeric: Bool {
        switch self {
        case .integer16, .integer32, .integer64, .double, .float, .decimal: return true
        default: return false
        }
    }

    /// The value a non-optional attribute without a default starts with is `nil`; this is the zero used by
    /// `shouldDeleteInaccessibleFaults` (semantics §4: "all its properties read as nil or zero").
    var zeroValue: PropertyValue {
        switch self {
        case .integer16, .integer32, .integer64: return .integer(0)
        case .double, .float: return .double(0)
        case .decimal: return .decimal(0)
        case .boolean: return .bool(false)
        default: return .null
        }
    }
}

/// Describes one attribute of an entity, as `NSAttributeDescription` does.
public struct AttributeDescription: Sendable, Hashable {
    /// The attribute's name, also its key for key-value access.
    public var name: String
    /// The attribute's type.
    public var type: AttributeType
    /// Whether `nil` is a valid value at save time.
    public var isOptional: Bool
    /// The value an inserted object starts with.
    public var defaultValue: PropertyValue
    /// Smallest allowed number (numbers) or earliest date, as seconds since the reference date.
    public var minValue: Double?
    /// Largest allowed number (numbers) or latest date, as seconds since the reference date.
    public var maxValue: Double?
    /// Shortest allowed string length or binary size.
    public var minLength: Int?
    /// Longest allowed string length or binary size.
    public var maxLength: Int?
    /// Transient attributes live in memory only: never stored, never in snapshots (semantics §3.2).
    public var isTransient: Bool
    /// Whether the value is kept in a persistent-history tombstone when the object is deleted (semantics §3.6).
    public var preservesValueInHistoryOnDeletion: Bool
    /// The attribute's name in the previous model version when it was renamed (`renamingIdentifier`).
    public var renamingIdentifier: String?
    /// Whether the store keeps an index on the attribute's column (`isIndexed`, deprecated by Core Data in favour
    /// of ``FetchIndexDescription`` and still honoured): `Z<ENTITY>_Z<NAME>_INDEX` (Docs/coredata-behaviour.md §4.1).
    public var isIndexed: Bool
    /// A Transformable's transformer, registered by that name (``ValueTransformer/setValueTransformer(_:forName:)``);
    /// nil: the secure unarchiving transformer, `NSSecureUnarchiveFromData` (Docs/coredata-behaviour.md §13.1).
    public var valueTransformerName: String?
    /// The class a Transformable's values are of, as the model names it (`attributeValueClassName`); kept for the
    /// model's readers, not checked.
    public var customClassName: String?
    /// Whether the SQLite store may keep a large value of a binary or Transformable attribute in a file beside the
    /// store (Docs/coredata-behaviour.md §13.5).
    public var allowsExternalBinaryDataStorage = false
    /// A pattern a string value must match whole at save (`NSValidationStringPatternMatchingError`,
    /// Docs/coredata-behaviour.md §13.7).
    public var regularExpression: String?

    /// Creates an attribute description.
    public init(
        name: String, type: AttributeType, isOptional: Bool = true, defaultValue: PropertyValue = .null,
        minValue: Double? = nil, maxValue: Double? = nil, minLength: Int? = nil, maxLength: Int? = nil,
        isTransient: Bool = false, preservesValueInHistoryOnDeletion: Bool = false, isIndexed: Bool = false
    ) {
        self.isIndexed = isIndexed
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.defaultValue = defaultValue
        self.minValue = minValue
        self.maxValue = maxValue
        self.minLength = minLength
        self.maxLength = maxLength
        self.isTransient = isTransient
        self.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
    }
}

/// Describes one relationship of an entity, as `NSRelationshipDescription` does.
public struct RelationshipDescription: Sendable, Hashable {
    /// The relationship's name, also its key.
    public var name: String
    /// The name of the destination entity.
    public var destinationEntityName: String
    /// The name of the inverse relationship on the destination (required).
    public var inverseName: String
    /// Whether the relationship holds a set of objects.
    public var isToMany: Bool
    /// Whether an empty relationship is valid at save time.
    public var isOptional: Bool
    /// What deleting the source does to the destinations.
    public var deleteRule: DeleteRule
    /// Minimum number of destinations of a to-many (0 = none).
    public var minCount: Int
    /// Maximum number of destinations of a to-many (0 = unlimited).
    public var maxCount: Int
    /// The relationship's name in the previous model version when it was renamed (`renamingIdentifier`).
    public var renamingIdentifier: String?
    /// Whether the relationship is transient (Rule 21.2): held by the objects, never stored; its inverse
    /// must be transient too.
    public var isTransient: Bool
    /// Whether a to-many relationship keeps its destinations in an order (`isOrdered`, Core Data's
    /// `NSOrderedSet` relationships: Docs/coredata-behaviour.md §12). A model refuses it on a to-one.
    public var isOrdered: Bool

    /// Creates a relationship description.
    public init(
        name: String, destination: String, inverse: String, toMany: Bool = false, isOptional: Bool = true,
        deleteRule: DeleteRule = .nullify, minCount: Int = 0, maxCount: Int = 0, isTransient: Bool = false,
        isOrdered: Bool = false
    ) {
        self.isTransient = isTransient
        self.isOrdered = isOrdered
        self.name = name
        self.destinationEntityName = destination
        self.inverseName = inverse
        self.isToMany = toMany
        self.isOptional = isOptional
        self.deleteRule = deleteRule
        self.minCount = minCount
        self.maxCount = maxCount
    }
}
