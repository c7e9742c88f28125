import Foundation

/// A set of entities, checked and sealed: the schema of a store (`NSManagedObjectModel`).
///
/// ```swift
/// let model = try ManagedObjectModel(entities: [
///     EntityDescription(name: "Item", managedObjectClass: Item.self,
///         attributes: [AttributeDescription(name: "name", type: .string)],
///         relationships: [RelationshipDescription(name: "tag", destination: "Tag", inverse: "items")]),
///     EntityDescription(name: "Tag",
///         relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "tag", toMany: true)]),
/// ])
/// ```
public final class ManagedObjectModel: @unchecked Sendable {  // immutable after init
    /// The entities, in the order given.
    public let entities: [EntityDescription]
    /// The entities by name.
    public let entitiesByName: [String: EntityDescription]
    /// A hash of everything that shapes the store; a store records it and refuses another model.
    public private(set) var versionHash: String = ""
    /// This version's name in a versioned model (nil for a model without versions).
    public let versionName: String?
    /// The earlier versions of this model, oldest first: a store made with one of them is migrated to this one
    /// when the store's options ask for automatic migration (issue 21 item 8).
    public let previousVersions: [ManagedObjectModel]

    /// Checks and seals `entities`.
    /// - Parameters:
    ///   - versionName: this version's name, in a versioned model.
    ///   - previousVersions: earlier versions a store may have been made with, oldest first.
    /// - Throws: ``ModelError`` naming the entity and property when the model is malformed.
    public init(entities: [EntityDescription], versionName: String? = nil, previousVersions: [ManagedObjectModel] = []) throws {
        self.versionName = versionName
        self.previousVersions = previousVersions
        var byName: [String: EntityDescription] = [:]
        for entity in entities {
            guard !entity.name.isEmpty, entity.name.first!.isLetter,
                  entity.name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
                throw ModelError(entity: entity.name, property: nil, "an entity name must be a letter followed by letters, digits or '_'")
            }
            guard byName[entity.name] == nil, !byName.keys.contains(where: { $0.uppercased() == entity.name.uppercased() }) else {
                throw ModelError(entity: entity.name, property: nil, "more than one entity named '\(entity.name)'")
            }
            guard entity.model == nil else {
                throw ModelError(entity: entity.name, property: nil, "the entity already belongs to another model")
            }
            byName[entity.name] = entity
        }
        self.entities = entities
        self.entitiesByName = byName
        // Z_ENT numbers follow the names' order, so the same model always gets the same numbers.
        let numbered = entities.map(\.name).sorted()
        for entity in entities {
            try entity.seal(model: self, number: numbered.firstIndex(of: entity.name)! + 1)
        }
        for entity in entities { try entity.resolveRelationships(in: self) }
        versionHash = Self.hash(of: entities)
    }

    /// Decodes a model file (JSON, the format of ``ModelFile``).
    /// - Parameters:
    ///   - url: the file.
    ///   - classes: the class to instantiate for each entity that has one, by entity name.
    public convenience init(contentsOf url: URL, classes: [String: ManagedObject.Type] = [:]) throws {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw ModelError(entity: nil, property: nil, "cannot read model file \(url.path): \(error.localizedDescription)")
        }
        try self.init(jsonData: data, classes: classes, source: url.path)
    }

    /// Decodes a model from JSON.
    public convenience init(jsonData: Data, classes: [String: ManagedObject.Type] = [:], source: String = "model") throws {
        let file: ModelFile
        do { file = try JSONDecoder().decode(ModelFile.self, from: jsonData) } catch let error as DecodingError {
            throw ModelError(entity: nil, property: nil, "\(source): \(ModelFile.describe(error))")
        }
        try self.init(file: file, classes: classes)
    }

    /// Builds a model from a decoded ``ModelFile`` (the workbench decodes one from YAML). A file with `versions`
    /// gives its `current` version (the last when none is named), the others as ``previousVersions``.
    public convenience init(file: ModelFile, classes: [String: ManagedObject.Type] = [:]) throws {
        func entities(_ list: [ModelFile.Entity]) throws -> [EntityDescription] {
            try list.map { try $0.makeEntity(class: classes[$0.name] ?? ManagedObject.self) }
        }
        guard let versions = file.versions, !versions.isEmpty else {
            try self.init(entities: entities(file.entities))
            return
        }
        let currentName = file.current ?? versions.last!.name
        guard let current = versions.first(where: { $0.name == currentName }) else {
            throw ModelError(entity: nil, property: nil, "the current version '\(currentName)' is not among the versions (\(versions.map(\.name).joined(separator: ", ")))")
        }
        var names = Set<String>()
        for v in versions where !names.insert(v.name).inserted {
            throw ModelError(entity: nil, property: nil, "more than one version named '\(v.name)'")
        }
        let previous = try versions.filter { $0.name != currentName }.map { try ManagedObjectModel(entities: entities($0.entities), versionName: $0.name) }
        try self.init(entities: entities(current.entities), versionName: currentName, previousVersions: previous)
    }

    /// The entity named `name`.
    public func entity(named name: String) -> EntityDescription? {
        // Every insert by entity name looks its entity up: with few entities, comparing names (small strings
        // compare as two words) beats hashing the name.
        if entities.count <= 16 {
            for entity in entities where entity.name == name { return entity }
            return nil
        }
        return entitiesByName[name]
    }

    /// Whether a store stamped with `hash` can be opened with this model.
    public func isConfiguration(compatibleWithVersionHash hash: String) -> Bool { hash == versionHash }

    // FNV-1a over a canonical text of everything that affects the tables, so the hash is stable across
    // processes and platforms (Swift's Hasher is seeded per process).
    private static func hash(of entities: [EntityDescription]) -> String {
        var text = ""
        for entity in entities.sorted(by: { $0.name < $1.name }) {
            text += "E:\(entity.name);"
            for a in entity.attributes where !a.isTransient { text += "A:\(a.name):\(a.type.rawValue);" }
            for r in entity.relationships {
                text += "R:\(r.name):\(r.destinationEntityName):\(r.inverseName):\(r.isToMany);"
            }
            for c in entity.uniquenessConstraints { text += "U:\(c.joined(separator: ","));" }
        }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            h ^= UInt64(byte)
            h = h &* 0x100_0000_01b3
        }
        return String(h, radix: 16)
    }
}
