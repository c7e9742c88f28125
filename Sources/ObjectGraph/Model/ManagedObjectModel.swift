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
    /// when the store's options ask for automatic migration.
    public let previousVersions: [ManagedObjectModel]
    /// The names of the model's configurations, in the order given (`configurations`). A store added with one of
    /// them holds the entities it lists; a store added with none holds every entity (Core Data's `Default`
    /// configuration, Docs/coredata-behaviour.md §14.1).
    public let configurations: [String]
    /// Each configuration's entities, in the order it lists them.
    private let entitiesByConfiguration: [String: [EntityDescription]]

    /// Checks and seals `entities`.
    /// - Parameters:
    ///   - versionName: this version's name, in a versioned model.
    ///   - previousVersions: earlier versions a store may have been made with, oldest first.
    ///   - configurations: named configurations, each listing the entities a store added with it holds
    ///     (`setEntities(_:forConfigurationName:)`).
    /// - Throws: ``ModelError`` naming the entity and property when the model is malformed, or naming the
    ///   configuration and the entity it lists that the model lacks.
    public init(entities: [EntityDescription], versionName: String? = nil, previousVersions: [ManagedObjectModel] = [],
                configurations: [ModelFile.Configuration] = []) throws {
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
        (self.configurations, self.entitiesByConfiguration) = try Self.configurations(configurations, entities: byName)
        // Parents resolved, cycles refused, each naming the entity at fault.
        for entity in entities {
            guard let parentName = entity.parentName else { continue }
            guard let parent = byName[parentName] else {
                throw ModelError(entity: entity.name, property: nil, "parent entity '\(parentName)' does not exist")
            }
            var path = [entity.name]
            var current: EntityDescription? = parent
            while let e = current, !path.dropFirst().contains(e.name) {  // a cycle above this entity is its members' to report
                path.append(e.name)
                if e === entity {
                    throw ModelError(entity: entity.name, property: nil, "the entity is its own ancestor (\(path.joined(separator: " → ")))")
                }
                current = e.parentName.flatMap { byName[$0] }
            }
            entity.superentity = parent
            parent.subentities.append(entity)
        }
        // Z_ENT numbers: roots in the names' order, each followed by the entities below it (depth first,
        // siblings by name), so the same model always gets the same numbers and a hierarchy's numbers are
        // contiguous. Without inheritance this is the names' order.
        var ordered: [EntityDescription] = []
        func visit(_ entity: EntityDescription) {
            ordered.append(entity)
            for child in entity.subentities.sorted(by: { $0.name < $1.name }) { visit(child) }
        }
        for root in entities.filter({ $0.superentity == nil }).sorted(by: { $0.name < $1.name }) { visit(root) }
        for (index, entity) in ordered.enumerated() { entity.entityNumber = index + 1 }
        self.entitiesByNumber = ordered
        // Sealed and resolved in the model's order, each entity after its parent.
        var parentsFirst: [EntityDescription] = []
        var placed = Set<ObjectIdentifier>()
        func place(_ entity: EntityDescription) {
            guard !placed.contains(ObjectIdentifier(entity)) else { return }
            if let parent = entity.superentity { place(parent) }
            placed.insert(ObjectIdentifier(entity))
            parentsFirst.append(entity)
        }
        for entity in entities { place(entity) }
        for entity in parentsFirst {
            try entity.seal(model: self, number: entity.entityNumber)
        }
        for entity in parentsFirst { try entity.resolveRelationships(in: self) }
        var columns: [ObjectIdentifier: Set<String>] = [:]
        for entity in ordered {
            entity.assignColumns(used: &columns[ObjectIdentifier(entity.rootEntity), default: []])
            var kinds: [Int] = []
            var stack = [entity]
            while let e = stack.popLast() {
                kinds.append(e.entityNumber)
                stack.append(contentsOf: e.subentities)
            }
            entity.setKinds(kinds)
        }
        for entity in ordered { entity.assignEntityColumns() }
        // Docs/coredata-behaviour.md §4.1: indexes share one namespace per file, compared without case. Entity
        // and property names may hold `_`, so two can meet there: `Item.a_zb` and `Item_za.b` both give
        // `ZITEM_ZA_ZB_INDEX`, fetch indexes "A" with "b_c" and "A_b" with "c".
        var indexNames: [String: String] = [:]
        for entity in ordered where entity.superentity == nil {
            for index in SQLiteSchema.indexes(ofHierarchy: entity) {
                let owner = "\(index.entity).\(index.fetchIndex ?? index.property ?? "")"
                if let other = indexNames[index.name.uppercased()] {
                    throw ModelError(entity: index.entity, property: index.property, fetchIndex: index.fetchIndex,
                                     "its index's store name \(index.name) is also \(other)'s")
                }
                indexNames[index.name.uppercased()] = owner
            }
        }
        versionHash = Self.hash(of: entities)
    }

    /// The entities by `Z_ENT` (`entitiesByNumber[n - 1]` is entity number n).
    private(set) var entitiesByNumber: [EntityDescription] = []

    /// The entity whose `Z_ENT` is `number`.
    func entity(number: Int) -> EntityDescription? {
        number >= 1 && number <= entitiesByNumber.count ? entitiesByNumber[number - 1] : nil
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
            throw ModelError(entity: nil, property: nil, "\(source): \(ModelFileDecodingDescription(paths: .subscripts).describe(error))")
        }
        try self.init(file: file, classes: classes)
    }

    /// Builds a model from a decoded ``ModelFile`` (from JSON, or from YAML by a caller). A file with `versions`
    /// gives its `current` version (the last when none is named), the others as ``previousVersions``.
    public convenience init(file: ModelFile, classes: [String: ManagedObject.Type] = [:]) throws {
        func entities(_ list: [ModelFile.Entity]) throws -> [EntityDescription] {
            try list.map { try $0.makeEntity(class: classes[$0.name] ?? ManagedObject.self) }
        }
        guard let versions = file.versions, !versions.isEmpty else {
            try self.init(entities: entities(file.entities), configurations: file.configurations ?? [])
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
        try self.init(entities: entities(current.entities), versionName: currentName, previousVersions: previous,
                      configurations: current.configurations ?? file.configurations ?? [])
    }

    /// The entities of the configuration named `name`, in the order it lists them; every entity for nil (the
    /// `Default` configuration); nil for a name the model lacks (`entities(forConfigurationName:)`, §14.1).
    public func entities(forConfigurationName name: String?) -> [EntityDescription]? {
        guard let name else { return entities }
        return entitiesByConfiguration[name]
    }

    /// Docs/coredata-behaviour.md §14.1: a configuration holds exactly the entities it lists, each named once, each
    /// an entity of the model; its names are unique and none is `Default`, the name of every entity's configuration.
    private static func configurations(_ list: [ModelFile.Configuration], entities: [String: EntityDescription]) throws
        -> ([String], [String: [EntityDescription]]) {
        var byName: [String: [EntityDescription]] = [:]
        for configuration in list {
            guard !configuration.name.isEmpty, configuration.name != "Default" else {
                throw ModelError(entity: nil, property: nil, "a configuration needs a name other than '\(configuration.name)' (Default holds every entity)")
            }
            guard byName[configuration.name] == nil else {
                throw ModelError(entity: nil, property: nil, "more than one configuration named '\(configuration.name)'")
            }
            var listed: [EntityDescription] = []
            for name in configuration.entities {
                guard let entity = entities[name] else {
                    throw ModelError(entity: name, property: nil, "configuration '\(configuration.name)' lists entity '\(name)', which the model does not have")
                }
                guard !listed.contains(where: { $0 === entity }) else {
                    throw ModelError(entity: name, property: nil, "configuration '\(configuration.name)' lists entity '\(name)' more than once")
                }
                listed.append(entity)
            }
            byName[configuration.name] = listed
        }
        return (list.map(\.name), byName)
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

    /// Whether any entity has an ordered to-many relationship (Docs/coredata-behaviour.md §12).
    var hasOrderedRelationships: Bool { entities.contains { $0.hasOrderedToMany } }

    // FNV-1a over a canonical text of everything that affects the tables, so the hash is stable across
    // processes and platforms (Swift's Hasher is seeded per process). Indexes (`isIndexed`, fetch indexes) are
    // left out, as Core Data leaves them out of the entity's version hash (Docs/coredata-behaviour.md §4.1).
    private static func hash(of entities: [EntityDescription]) -> String {
        var text = ""
        for entity in entities.sorted(by: { $0.name < $1.name }) {
            text += "E:\(entity.name);"
            // The parent and abstractness shape the store as Core Data's entity hash says they
            // do; written only when present, so a model without inheritance keeps its hash.
            if let parent = entity.parentName { text += "P:\(parent);" }
            if entity.isAbstract { text += "X;" }
            // §4.1: the app's modifier, written only when set, so other models keep their hash.
            if let modifier = entity.versionHashModifier { text += "M:\(modifier);" }
            // External storage changes what the column keeps (Docs/coredata-behaviour.md §13.5), so it is in the
            // hash; written only when allowed, so other models keep their hash.
            for a in entity.declaredAttributes where !a.isTransient {
                text += "A:\(a.name):\(a.type.rawValue)\(a.allowsExternalBinaryDataStorage ? ":external" : "");"
            }
            for r in entity.declaredRelationships {
                text += "R:\(r.name):\(r.destinationEntityName):\(r.inverseName):\(r.isToMany);"
                // Written only when set, so a model without ordered relationships keeps its hash (§12.1).
                if r.isOrdered { text += "O;" }
            }
            for c in entity.declaredUniquenessConstraints { text += "U:\(c.joined(separator: ","));" }
        }
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            h ^= UInt64(byte)
            h = h &* 0x100_0000_01b3
        }
        return String(h, radix: 16)
    }
}
