import Foundation

/// The declarative form of a model, decoded from JSON (ObjectGraph's `ManagedObjectModel(jsonData:)`), or from
/// another form by a caller (YAML in scenarios). The operation trace's header carries each model version's
/// ``entities`` as these same types, so that a replayer (ObjectGraph's or Core Data's) builds the model the run had,
/// every field included.
///
/// ```json
/// {"entities": [{"name": "Item",
///   "attributes": [{"name": "id", "type": "integer64", "optional": false},
///                  {"name": "title", "type": "string", "maxLength": 80}],
///   "relationships": [{"name": "tag", "destination": "Tag", "inverse": "items"}],
///   "uniquenessConstraints": [["id"]]}]}
/// ```
///
/// An entity may name a `"parent"` entity and be `"abstract": true`; an unknown parent or a
/// cycle of parents is refused, naming the entity.
///
/// A relationship with `"transient": true` is kept by the objects and never stored; its inverse must be transient
/// too (Rule 21.2). An attribute takes `"transient": true` the same way.
///
/// An attribute with `"indexed": true` gets an index on its column; an entity's `"fetchIndexes"` lists compound
/// indexes, each a name and elements, an element a property name (ascending) or `{"property": …, "ascending": false}`:
/// `"fetchIndexes": [{"name": "byTagAndDate", "elements": ["tag", {"property": "date", "ascending": false}]}]`.
public struct ModelFile: Codable, Sendable, Equatable {
    /// The entities (of a model without versions).
    public var entities: [Entity]
    /// A versioned model: each version's entities; renamed entities and properties carry the
    /// previous version's name as `renamingIdentifier`.
    public var versions: [Version]?
    /// The name of the version in use (default: the last).
    public var current: String?
    /// The named configurations (of a model without versions), each listing the entities a store added with that
    /// configuration holds. With none, a store holds every entity (Core Data's default configuration).
    public var configurations: [Configuration]?

    /// One version of a versioned model.
    public struct Version: Codable, Sendable, Equatable {
        public var name: String
        public var entities: [Entity]
        /// The version's named configurations.
        public var configurations: [Configuration]?
        public init(name: String, entities: [Entity], configurations: [Configuration]? = nil) {
            (self.name, self.entities, self.configurations) = (name, entities, configurations)
        }
    }

    /// A named configuration: the entities a store added with it holds (`NSManagedObjectModel.entities(forConfigurationName:)`).
    public struct Configuration: Codable, Sendable, Equatable {
        public var name: String
        public var entities: [String]
        public init(name: String, entities: [String]) { (self.name, self.entities) = (name, entities) }
    }

    /// Creates a model file from its entities.
    public init(entities: [Entity]) { self.entities = entities }

    /// Creates a versioned model file.
    public init(versions: [Version], current: String? = nil) {
        self.entities = []
        self.versions = versions
        self.current = current
    }

    enum CodingKeys: String, CodingKey { case entities, versions, current, configurations }

    /// The entity named `name` and those above it, the entity first; a parent that is missing
    /// or a cycle ends the chain (the model refuses both).
    func lineage(of name: String) -> [Entity] {
        var chain: [Entity] = []
        var next = entities.first { $0.name == name }
        while let entity = next, !chain.contains(where: { $0.name == entity.name }) {
            chain.append(entity)
            next = entity.parent.flatMap { parent in entities.first { $0.name == parent } }
        }
        return chain
    }

    /// The attributes of the entity named `name`, those it inherits first.
    package func allAttributes(of name: String) -> [Attribute] { lineage(of: name).reversed().flatMap { $0.attributes ?? [] } }

    /// The relationships of the entity named `name`, those it inherits first.
    package func allRelationships(of name: String) -> [Relationship] { lineage(of: name).reversed().flatMap { $0.relationships ?? [] } }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        versions = try c.decodeIfPresent([Version].self, forKey: .versions)
        current = try c.decodeIfPresent(String.self, forKey: .current)
        configurations = try c.decodeIfPresent([Configuration].self, forKey: .configurations)
        if versions == nil {
            entities = try c.decode([Entity].self, forKey: .entities)
        } else {
            entities = try c.decodeIfPresent([Entity].self, forKey: .entities) ?? []
        }
    }

    /// One entity.
    public struct Entity: Codable, Sendable, Equatable {
        public var name: String
        public var attributes: [Attribute]?
        public var relationships: [Relationship]?
        public var uniquenessConstraints: [[String]]?
        /// The entity's name in the previous version, when renamed.
        public var renamingIdentifier: String?
        /// The parent entity's name: the entity inherits its properties and constraints.
        public var parent: String?
        /// Whether the entity is abstract (only its sub-entities have objects).
        public var abstract: Bool?
        /// The indexes the store keeps on the entity's rows (ObjectGraph's `FetchIndexDescription`, Core Data's
        /// `NSEntityDescription.indexes`).
        public var fetchIndexes: [FetchIndex]?
        /// The class an app's code generation names for the entity (Xcode's `representedClassName`); the model
        /// keeps it, the objects are of the class the model is loaded with.
        public var representedClassName: String?
        /// A string that makes the entity's version hash differ from an otherwise equal entity's (Core Data's
        /// `versionHashModifier`): a lightweight migration treats the entity as changed.
        public var versionHashModifier: String?

        public init(name: String, attributes: [Attribute]? = nil, relationships: [Relationship]? = nil, uniquenessConstraints: [[String]]? = nil,
                    parent: String? = nil, abstract: Bool? = nil, fetchIndexes: [FetchIndex]? = nil) {
            self.fetchIndexes = fetchIndexes
            self.name = name
            self.attributes = attributes
            self.relationships = relationships
            self.uniquenessConstraints = uniquenessConstraints
            self.parent = parent
            self.abstract = abstract
        }
    }

    /// One fetch index: a name and its elements.
    public struct FetchIndex: Codable, Sendable, Equatable {
        public var name: String
        public var elements: [Element]

        public init(name: String, elements: [Element]) {
            self.name = name
            self.elements = elements
        }

        /// An element: a property name (ascending), or a mapping with `property` and `ascending`.
        ///
        /// Encoded as a model file writes it, the property name alone when `ascending` is not set; an encoder whose
        /// ``encodesAsMapping`` user info is `true` writes the mapping every time (the operation trace does).
        public struct Element: Codable, Sendable, Equatable {
            /// The user info key that makes an encoder write every element as a mapping.
            public static let encodesAsMapping = CodingUserInfoKey(rawValue: "ModelFile.FetchIndex.Element.encodesAsMapping")!

            public var property: String
            public var ascending: Bool?

            public init(property: String, ascending: Bool? = nil) {
                self.property = property
                self.ascending = ascending
            }

            enum CodingKeys: String, CodingKey { case property, ascending }

            public init(from decoder: any Decoder) throws {
                if let name = try? decoder.singleValueContainer().decode(String.self) {
                    self.init(property: name)
                    return
                }
                let c = try decoder.container(keyedBy: CodingKeys.self)
                self.init(property: try c.decode(String.self, forKey: .property), ascending: try c.decodeIfPresent(Bool.self, forKey: .ascending))
            }

            public func encode(to encoder: any Encoder) throws {
                guard ascending != nil || encoder.userInfo[Self.encodesAsMapping] as? Bool == true else {
                    var c = encoder.singleValueContainer()
                    try c.encode(property)
                    return
                }
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(property, forKey: .property)
                try c.encodeIfPresent(ascending, forKey: .ascending)
            }
        }
    }

    /// One attribute.
    public struct Attribute: Codable, Sendable, Equatable {
        public var name: String
        public var type: AttributeType
        public var optional: Bool?
        public var defaultValue: Scalar?
        public var minValue: Double?
        public var maxValue: Double?
        public var minLength: Int?
        public var maxLength: Int?
        public var transient: Bool?
        public var preservesValueInHistoryOnDeletion: Bool?
        /// The attribute's name in the previous version, when renamed.
        public var renamingIdentifier: String?
        /// Whether the store keeps an index on the attribute's column.
        public var indexed: Bool?
        /// A Transformable's value transformer, registered by that name; with none, Core Data's secure unarchiving
        /// transformer.
        public var valueTransformerName: String?
        /// The class a Transformable's values are of (Xcode's `customClassName`).
        public var customClassName: String?
        /// Whether a binary value above a size may be kept in a file beside the store.
        public var allowsExternalBinaryDataStorage: Bool?
        /// A pattern every string value must match whole at save (Core Data's `regularExpressionString`).
        public var regularExpression: String?

        public init(name: String, type: AttributeType, optional: Bool? = nil, defaultValue: Scalar? = nil, indexed: Bool? = nil) {
            self.indexed = indexed
            self.name = name
            self.type = type
            self.optional = optional
            self.defaultValue = defaultValue
        }
    }

    /// One relationship.
    public struct Relationship: Codable, Sendable, Equatable {
        public var name: String
        public var destination: String
        public var inverse: String
        public var toMany: Bool?
        public var optional: Bool?
        public var deleteRule: DeleteRule?
        public var minCount: Int?
        public var maxCount: Int?
        /// The relationship's name in the previous version, when renamed.
        public var renamingIdentifier: String?
        /// Whether the relationship is transient (Rule 21.2).
        public var transient: Bool?
        /// Whether a to-many relationship keeps its destinations in an order (Core Data's ordered relationship,
        /// an `NSOrderedSet`).
        public var ordered: Bool?

        public init(name: String, destination: String, inverse: String, toMany: Bool? = nil, deleteRule: DeleteRule? = nil, transient: Bool? = nil) {
            self.transient = transient
            self.name = name
            self.destination = destination
            self.inverse = inverse
            self.toMany = toMany
            self.deleteRule = deleteRule
        }
    }

    /// A default value as written in a file: a string, number or boolean.
    public enum Scalar: Codable, Sendable, Equatable, CustomStringConvertible {
        case string(String), number(Double), bool(Bool)

        public init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let b = try? c.decode(Bool.self) { self = .bool(b) }
            else if let d = try? c.decode(Double.self) { self = .number(d) }
            else { self = .string(try c.decode(String.self)) }
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self {
            case .string(let s): try c.encode(s)
            case .number(let d): try c.encode(d)
            case .bool(let b): try c.encode(b)
            }
        }

        public var description: String {
            switch self {
            case .string(let s): return "\"\(s)\""
            case .number(let d): return String(d)
            case .bool(let b): return String(b)
            }
        }
    }
}
