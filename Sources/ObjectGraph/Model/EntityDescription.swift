import Foundation
import Synchronization

/// Describes an entity: its attributes, relationships, uniqueness constraints and the class of its objects.
///
/// Build entities, then hand them to ``ManagedObjectModel``, which checks and seals them. A sealed entity is
/// immutable, so it is shared freely between threads.
public final class EntityDescription: @unchecked Sendable {  // immutable once the model has sealed it
    /// The entity's name.
    public let name: String
    // Written while the model seals the entity (a sub-entity's lists gain its parent's first), then only read.
    /// Every attribute, transient ones included, in declaration order; a sub-entity's start with those it
    /// inherits (as `NSEntityDescription.attributesByName` includes inherited ones).
    @exclusivity(unchecked) public private(set) var attributes: [AttributeDescription]
    /// Every persistent relationship, in declaration order (transient ones are in ``transientRelationships``),
    /// inherited ones first.
    @exclusivity(unchecked) public private(set) var relationships: [RelationshipDescription]
    /// The transient relationships, in declaration order (Rule 21.2): kept in the objects only, never
    /// stored, with the rules of transient attributes. Inherited ones first.
    @exclusivity(unchecked) public private(set) var transientRelationships: [RelationshipDescription]
    /// Sets of attribute names whose combined values must be unique across the entity (semantics §1.6); a
    /// sub-entity's start with the constraints it inherits, which hold across the whole hierarchy below the
    /// entity that declares them (Docs/coredata-behaviour.md §11).
    @exclusivity(unchecked) public private(set) var uniquenessConstraints: [[String]]
    /// What this entity declares itself (the model's version hash covers these).
    let declaredAttributes: [AttributeDescription]
    let declaredRelationships: [RelationshipDescription]
    let declaredTransientRelationships: [RelationshipDescription]
    let declaredUniquenessConstraints: [[String]]
    /// The indexes this entity declares (`indexes`): kept on its hierarchy's table, over its own and its inherited
    /// properties. Not part of the model's version hash, as in Core Data (Docs/coredata-behaviour.md §4.1).
    public let fetchIndexes: [FetchIndexDescription]

    // MARK: Inheritance (Docs/coredata-behaviour.md §11)
    /// The name of the parent entity, nil for an entity at the root of its hierarchy.
    public let parentName: String?
    /// Whether the entity is abstract (`isAbstract`): it has no instances of its own, only its sub-entities do.
    public let isAbstract: Bool
    /// The parent entity (`superentity`), resolved by the model from ``parentName``.
    @exclusivity(unchecked) public internal(set) var superentity: EntityDescription?
    /// The entities whose parent this is (`subentities`), in the model's order.
    @exclusivity(unchecked) public internal(set) var subentities: [EntityDescription] = []
    /// The root of the entity's hierarchy (itself for an entity without a parent): its table holds the hierarchy.
    var rootEntity: EntityDescription { storedRoot ?? self }
    @exclusivity(unchecked) private var storedRoot: EntityDescription?
    /// `Z_ENT` of this entity and of every entity below it, ascending.
    @exclusivity(unchecked) var kindNumbers: [Int] = []
    /// Whether the entity has a parent or sub-entities (its table is shared, `Z_ENT` tells its rows apart).
    var isInHierarchy: Bool { superentity != nil || !subentities.isEmpty }
    /// Per uniqueness constraint (``uniquenessConstraints``), the entity that declares it.
    @exclusivity(unchecked) private(set) var constraintDeclarers: [EntityDescription] = []
    /// Per slot, for a to-one whose destination has sub-entities, the column that keeps the destination's
    /// `Z_ENT` beside its key (`Z<n><NAME>`), so that the reference names its concrete entity; else nil.
    @exclusivity(unchecked) var entityColumns: [String?] = []
    /// The slots that have an ``entityColumns`` entry, in slot order (empty in a model without inheritance).
    @exclusivity(unchecked) var entityColumnSlots: [Int] = []

    /// Whether this entity is `entity` or one of its sub-entities, at any depth (`isKindOfEntity:`).
    public func isKindOf(entity: EntityDescription) -> Bool {
        var current: EntityDescription? = self
        while let e = current {
            if e === entity { return true }
            current = e.superentity
        }
        return false
    }

    /// ``isKindOf(entity:)`` by the entity's name.
    public func isKindOf(entityNamed name: String) -> Bool {
        var current: EntityDescription? = self
        while let e = current {
            if e.name == name { return true }
            current = e.superentity
        }
        return false
    }

    /// Whether a fetch of this entity returns objects of `entity`: this entity or, when `includesSubentities`,
    /// one below it (semantics: `NSFetchRequest.includesSubentities`).
    @inline(__always)
    func fetchIncludes(_ entity: EntityDescription, subentities: Bool) -> Bool {
        entity === self || (subentities && entity.superentity != nil && entity.isKindOf(entity: self))
    }
    /// The class instantiated for this entity's objects.
    @exclusivity(unchecked) public internal(set) var managedObjectClass: ManagedObject.Type {
        didSet { _optionalObjectType = managedObjectClass._optionalSelfType }
    }
    /// `Optional<C>` for the class `C` of this entity's objects: a typed to-one read (``Managed``) compares its
    /// declared type with it and hands the object over as it is, where a cast to an optional class type costs the
    /// runtime's generic path (about 1.2k instructions: the optional's metadata, a conformance lookup, unboxing).
    @usableFromInline @exclusivity(unchecked) internal private(set) var _optionalObjectType: ObjectIdentifier
    /// The entity's name in the previous model version when it was renamed (`renamingIdentifier`): lightweight
    /// migration maps that entity's rows here. Set before the model seals the entity.
    public var renamingIdentifier: String?
    /// A string that makes the entity's version hash differ from an otherwise equal entity's (Core Data's
    /// `versionHashModifier`): an app sets it to force the lightweight migration that a change outside the hash (an
    /// index) does not trigger (Docs/coredata-behaviour.md §4.1). Set before the model seals the entity.
    public var versionHashModifier: String?

    /// The model this entity belongs to, set when the model seals it.
    public internal(set) weak var model: ManagedObjectModel?
    /// Core Data's `Z_ENT`: the entity's number in the store.
    @exclusivity(unchecked) package internal(set) var entityNumber: Int = 0

    // MARK: Layout resolved by the model
    // Written once while the model seals the entity, then only read (from any thread): no run-time exclusivity
    // checks on these per-object reads.
    /// Persistent slots: stored attributes first, then to-one relationships. Snapshots are arrays in this order.
    @exclusivity(unchecked) private(set) var slots: [Slot] = []
    /// The store column of each slot (`Z` + the upper-cased name), computed once with the layout.
    @exclusivity(unchecked) private(set) var columnNames: [String] = []
    @exclusivity(unchecked) private(set) var transientAttributes: [AttributeDescription] = []
    @exclusivity(unchecked) private(set) var toManyRelationships: [RelationshipDescription] = []
    /// Per to-many index, whether the relationship is ordered (Docs/coredata-behaviour.md §12); and whether any is,
    /// so that an entity without ordered relationships skips every step that keeps an order.
    @exclusivity(unchecked) private(set) var toManyIsOrdered: [Bool] = []
    @exclusivity(unchecked) private(set) var hasOrderedToMany = false
    @exclusivity(unchecked) private(set) var propertiesByName: [String: PropertyRef] = [:]
    /// The attribute type of each slot (nil for a to-one), so hot paths need not copy the slot's description.
    @exclusivity(unchecked) private(set) var slotAttributeTypes: [AttributeType?] = []
    /// The properties in declaration order, for ``propertyRef(_:)``: with few properties a scan comparing
    /// names (most are small strings, compared as two words) beats hashing the key.
    @exclusivity(unchecked) private var propertyList: [(name: String, ref: PropertyRef)] = []
    /// The destination entity of each to-one slot (nil for an attribute), resolved with the relationships.
    @exclusivity(unchecked) private(set) var slotDestinations: [EntityDescription?] = []

    /// The representation of each name of ``propertyList`` (a `String`'s two words), in the same order.
    @exclusivity(unchecked) private var propertyBits: [StringBits] = []
    typealias StringBits = (UInt64, UInt64)

    /// A string's representation: equal words mean equal strings (a short string is stored in the words
    /// themselves, a long one points at immutable storage); equal strings can still differ in words.
    @inline(__always)
    static func bits(_ string: String) -> StringBits { unsafeBitCast(string, to: StringBits.self) }

    /// The property named `key` (``propertiesByName`` without hashing the key for small entities).
    ///
    /// `@Managed` accessors and key-value coding look a property up by name on every access. Most names are
    /// short strings, which Swift keeps in the string's own two words, so the key given is compared with each
    /// name word for word first (a property name is found in ~20 instructions where `==` takes ~120 per
    /// name); only when no name has the key's words (a long name, another spelling
    /// of the same characters, or no such property) are the names compared as strings.
    @inline(__always)
    package func propertyRef(_ key: String) -> PropertyRef? {
        if propertyList.count <= 16 {
            if MemoryLayout<String>.size == MemoryLayout<StringBits>.size {  // 64-bit platforms
                let keyBits = Self.bits(key)
                for i in propertyBits.indices where propertyBits[i] == keyBits { return propertyList[i].ref }
            }
            for entry in propertyList where entry.name == key { return entry.ref }
            return nil
        }
        return propertiesByName[key]
    }

    /// Destination entity and the inverse's property for every relationship, by relationship name.
    @exclusivity(unchecked) private(set) var relationshipTargets: [String: (entity: EntityDescription, inverse: PropertyRef)] = [:]
    /// What a newly inserted object starts with: the defaults, the slots they set, empty to-manys and the
    /// transients' defaults (computed once, copied per insert).
    @exclusivity(unchecked) private(set) var insertTemplate = InsertTemplate()
    /// Slots whose attribute or to-one has a constraint to validate (optionality, ranges, lengths), and to-many
    /// indexes with a count rule: validation of an object looks only at these.
    @exclusivity(unchecked) private(set) var constrainedSlots: [Int] = []
    @exclusivity(unchecked) private(set) var constrainedToManys: [Int] = []
    /// Whether every rule of ``constrainedSlots`` only asks for a value (no range, no length, no pattern, no to-many
    /// count).
    @exclusivity(unchecked) private(set) var constraintsAskOnlyPresence = false
    /// The slots whose attribute allows external binary storage (Docs/coredata-behaviour.md §13.5); empty for most
    /// entities, so the SQLite store does nothing more for their rows.
    @exclusivity(unchecked) private(set) var externalStorageSlots: [Int] = []
    /// The compiled `regularExpression` of each slot (Docs/coredata-behaviour.md §13.7); empty when no attribute has
    /// one.
    @exclusivity(unchecked) private(set) var slotPatterns: [NSRegularExpression?] = []
    /// For each to-many index, whether its inverse is a to-one (a one-to-many: the destinations hold the
    /// foreign key); for each to-one slot, the inverse property on the destination.
    @exclusivity(unchecked) private(set) var toManyInverseIsToOne: [Bool] = []
    @exclusivity(unchecked) private(set) var slotInverses: [PropertyRef?] = []
    /// For each transient relationship, its destination entity and the index of its inverse there.
    @exclusivity(unchecked) private(set) var transientRelationshipTargets: [(entity: EntityDescription, inverse: Int)] = []
    /// Per uniqueness constraint, the slot indices of its attributes.
    @exclusivity(unchecked) private(set) var constraintSlots: [[Int]] = []
    /// Every slot of ``constraintSlots``, as a set.
    @exclusivity(unchecked) private(set) var constrainedValueSlots = SlotSet()

    struct InsertTemplate {
        var values: [PropertyValue] = []
        var changedSlots = SlotSet()
        var toMany: [ManagedObject.ToManyState?] = []
        var transients: [PropertyValue] = []
    }

    /// A persistent slot of a snapshot.
    enum Slot: Sendable {
        case attribute(AttributeDescription)
        case toOne(RelationshipDescription)

        var name: String {
            switch self {
            case .attribute(let a): return a.name
            case .toOne(let r): return r.name
            }
        }
    }

    /// Where a property lives in an object.
    package enum PropertyRef: Sendable, Equatable {
        case attribute(slot: Int)
        case toOne(slot: Int)
        case toMany(index: Int)
        case transient(index: Int)
        /// A transient relationship, by its index in ``transientRelationships`` (Rule 21.2).
        case transientRelationship(index: Int)
    }

    /// Creates an entity description.
    /// - Parameters:
    ///   - name: the entity's name.
    ///   - managedObjectClass: the class of its objects, a subclass of ``ManagedObject``.
    ///   - attributes: its attributes.
    ///   - relationships: its relationships; each needs an inverse on the destination.
    ///   - uniquenessConstraints: sets of attribute names that must be unique together.
    ///   - parent: the name of the parent entity: this entity inherits its attributes,
    ///     relationships and uniqueness constraints, and its rows live in the table of the hierarchy's root.
    ///   - isAbstract: whether the entity is abstract (no object of it can be inserted, only of its sub-entities).
    ///   - fetchIndexes: the indexes the store keeps on the entity's rows.
    public init(
        name: String, managedObjectClass: ManagedObject.Type = ManagedObject.self,
        attributes: [AttributeDescription] = [], relationships: [RelationshipDescription] = [],
        uniquenessConstraints: [[String]] = [], parent: String? = nil, isAbstract: Bool = false,
        fetchIndexes: [FetchIndexDescription] = []
    ) {
        self.name = name
        self.fetchIndexes = fetchIndexes
        self.managedObjectClass = managedObjectClass
        self._optionalObjectType = managedObjectClass._optionalSelfType
        self.attributes = attributes
        // Rule 21.2: transient relationships are held apart, so that nothing that lays out or writes the
        // store (columns, join tables, batch requests, delete rules on rows) ever meets one.
        self.relationships = relationships.filter { !$0.isTransient }
        self.transientRelationships = relationships.filter(\.isTransient)
        self.uniquenessConstraints = uniquenessConstraints
        self.declaredAttributes = attributes
        self.declaredRelationships = self.relationships
        self.declaredTransientRelationships = self.transientRelationships
        self.declaredUniquenessConstraints = uniquenessConstraints
        self.parentName = parent
        self.isAbstract = isAbstract
        Self.everyEntity.withLock { $0.append(self) }
    }

    /// Every entity description ever made, kept for the life of the process so that object IDs can refer to
    /// their entity without reference counting (see ``ManagedObjectID``). Models are made once per store in
    /// practice; the entries are small.
    private static let everyEntity = Mutex<[EntityDescription]>([])

    /// The attribute named `name`, if any.
    public func attribute(named name: String) -> AttributeDescription? {
        attributes.first { $0.name == name }
    }

    /// The relationship named `name`, if any.
    public func relationship(named name: String) -> RelationshipDescription? {
        relationships.first { $0.name == name } ?? transientRelationships.first { $0.name == name }
    }

    /// The destination entity of the relationship named `name`.
    public func destinationEntity(ofRelationship name: String) -> EntityDescription? {
        relationshipTargets[name]?.entity
    }

    // MARK: Store naming (Core Data's SQLite layout)
    /// `Z<ENTITY>`.
    package var tableName: String { storedTableName.isEmpty ? "Z" + name.uppercased() : storedTableName }
    @exclusivity(unchecked) private var storedTableName = ""
    package func columnName(forSlot slot: Int) -> String { columnNames[slot] }
    var slotCount: Int { slots.count }

    package func slotIndex(of key: String) -> Int? {
        switch propertiesByName[key] {
        case .attribute(let s)?, .toOne(let s)?: return s
        default: return nil
        }
    }

    // MARK: Sealing
    /// Lays the entity out. A sub-entity is sealed after its parent: its slots, to-manys, transients and
    /// constraints are the parent's, in the same order, followed by its own, so that its snapshot extends its
    /// parent's and a parent's slot index means the same column for every entity below it.
    func seal(model: ManagedObjectModel, number: Int) throws {
        self.model = model
        self.entityNumber = number
        let parent = superentity
        var layout = PropertyLayout(
            slots: parent?.slots ?? [], transients: parent?.transientAttributes ?? [],
            toMany: parent?.toManyRelationships ?? [], byName: parent?.propertiesByName ?? [:])
        if let parent {
            storedRoot = parent.rootEntity
            for property in parent.propertyList { layout.seen.insert(property.name.uppercased()) }
        }
        try layOutAttributes(&layout)
        try layOutRelationships(&layout)
        let constraintSlots = try uniquenessConstraintSlots(layout.byName, inherited: parent?.constraintSlots ?? [])
        try checkFetchIndexes(layout.byName)
        if let parent {
            attributes = parent.attributes + declaredAttributes
            relationships = parent.relationships + declaredRelationships
            transientRelationships = parent.transientRelationships + declaredTransientRelationships
            uniquenessConstraints = parent.uniquenessConstraints + declaredUniquenessConstraints
            constraintDeclarers = parent.constraintDeclarers
        }
        constraintDeclarers += declaredUniquenessConstraints.map { _ in self }
        install(layout, constraintSlots: constraintSlots)
        installValidation()
    }

    /// The entity's properties as sealing lays them out: the parent's first, then its own.
    private struct PropertyLayout {
        /// The names taken, upper-cased: they become store columns, compared without case.
        var seen = Set<String>()
        var slots: [Slot]
        var transients: [AttributeDescription]
        var toMany: [RelationshipDescription]
        var byName: [String: PropertyRef]
    }

    private static let reservedPropertyNames: Set<String> = ["objectID", "entity", "self", "z_pk", "z_ent", "z_opt", "isfault", "description"]

    /// Takes `property` as a name of the entity, or refuses it: not an identifier, reserved, inherited, or taken.
    private func claim(_ property: String, in layout: inout PropertyLayout) throws {
        let reserved = Self.reservedPropertyNames
        guard !property.isEmpty, property.first!.isLetter || property.first == "_" else {
            throw ModelError(entity: name, property: property, "a property name must start with a letter")
        }
        // The name becomes a store column (Z<NAME>), so it is held to the same rule as entity names.
        guard property.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
            throw ModelError(entity: name, property: property, "a property name must be a letter followed by letters, digits or '_'")
        }
        guard !reserved.contains(property.lowercased()), !reserved.contains(property) else {
            throw ModelError(entity: name, property: property, "'\(property)' is a reserved name")
        }
        guard layout.seen.insert(property.uppercased()).inserted else {
            if let parent = superentity, parent.propertyRef(property) != nil || parent.propertyList.contains(where: { $0.name.uppercased() == property.uppercased() }) {
                throw ModelError(entity: name, property: property, "'\(property)' is inherited from '\(parent.name)'; a sub-entity cannot declare it again")
            }
            throw ModelError(entity: name, property: property, "more than one property named '\(property)' (names are compared case-insensitively, as store columns)")
        }
    }

    /// Checks each declared attribute and gives it a slot (stored) or a transient index.
    private func layOutAttributes(_ layout: inout PropertyLayout) throws {
        for attribute in declaredAttributes {
            try claim(attribute.name, in: &layout)
            if attribute.defaultValue != .null, attribute.defaultValue.converted(to: attribute.type) == nil {
                throw ModelError(entity: name, property: attribute.name, "default value \(attribute.defaultValue) does not fit type \(attribute.type.rawValue)")
            }
            if let lo = attribute.minValue, let hi = attribute.maxValue, lo > hi {
                throw ModelError(entity: name, property: attribute.name, "minValue \(lo) is greater than maxValue \(hi)")
            }
            if let lo = attribute.minLength, let hi = attribute.maxLength, lo > hi {
                throw ModelError(entity: name, property: attribute.name, "minLength \(lo) is greater than maxLength \(hi)")
            }
            if attribute.isIndexed, attribute.isTransient {
                throw ModelError(entity: name, property: attribute.name, "a transient attribute is not stored, so it cannot be indexed")
            }
            try checkTypeOptions(attribute)
            if attribute.isTransient {
                layout.byName[attribute.name] = .transient(index: layout.transients.count)
                layout.transients.append(attribute)
            } else {
                layout.byName[attribute.name] = .attribute(slot: layout.slots.count)
                layout.slots.append(.attribute(attribute))
            }
        }
    }

    /// Refuses an option the attribute's type does not take (Docs/coredata-behaviour.md §13.1, §13.5, §13.7): a
    /// transformer on an attribute that is not Transformable, external storage on one that is not binary data or
    /// Transformable, a pattern on one that is not a string, or a pattern that is not a regular expression.
    private func checkTypeOptions(_ attribute: AttributeDescription) throws {
        func refuse(_ message: String) -> ModelError { ModelError(entity: name, property: attribute.name, message) }
        if attribute.valueTransformerName != nil, attribute.type != .transformable {
            throw refuse("valueTransformerName is for a transformable attribute, not \(attribute.type.rawValue)")
        }
        if attribute.allowsExternalBinaryDataStorage, attribute.type != .binaryData, attribute.type != .transformable {
            throw refuse("allowsExternalBinaryDataStorage is for a binaryData or transformable attribute, not \(attribute.type.rawValue)")
        }
        if let pattern = attribute.regularExpression {
            guard attribute.type == .string else {
                throw refuse("regularExpression is for a string attribute, not \(attribute.type.rawValue)")
            }
            do { _ = try NSRegularExpression(pattern: pattern) } catch {
                throw refuse("regularExpression '\(pattern)' is not a regular expression")
            }
        }
    }

    /// Gives each declared relationship a slot (to-one), a to-many index, or a transient relationship index.
    private func layOutRelationships(_ layout: inout PropertyLayout) throws {
        for relationship in declaredRelationships {
            try claim(relationship.name, in: &layout)
            // §12.1 (inferred): only a to-many has an order to keep; Xcode offers "Ordered" for to-many only.
            if relationship.isOrdered, !relationship.isToMany {
                throw ModelError(entity: name, property: relationship.name, "'\(relationship.name)' is a to-one relationship, which cannot be ordered (only a to-many keeps an order)")
            }
            if relationship.isToMany {
                layout.byName[relationship.name] = .toMany(index: layout.toMany.count)
                layout.toMany.append(relationship)
            } else {
                layout.byName[relationship.name] = .toOne(slot: layout.slots.count)
                layout.slots.append(.toOne(relationship))
            }
        }
        let inheritedTransientRelationships = superentity?.transientRelationships.count ?? 0
        for (index, relationship) in declaredTransientRelationships.enumerated() {
            try claim(relationship.name, in: &layout)
            if relationship.isOrdered {
                throw ModelError(entity: name, property: relationship.name, "'\(relationship.name)' is transient; an ordered relationship must be stored (Docs/coredata-behaviour.md §12.1)")
            }
            layout.byName[relationship.name] = .transientRelationship(index: inheritedTransientRelationships + index)
        }
    }

    /// The slots of each uniqueness constraint, the inherited ones first; refuses an empty constraint or one
    /// that names anything but a stored attribute.
    private func uniquenessConstraintSlots(_ byName: [String: PropertyRef], inherited: [[Int]]) throws -> [[Int]] {
        var constraintSlots = inherited
        for constraint in declaredUniquenessConstraints {
            guard !constraint.isEmpty else {
                throw ModelError(entity: name, property: nil, "an empty uniqueness constraint")
            }
            var indices: [Int] = []
            for key in constraint {
                guard case .attribute(let slot)? = byName[key] else {
                    throw ModelError(entity: name, property: key, "uniqueness constraint names '\(key)', which is not a stored attribute")
                }
                indices.append(slot)
            }
            constraintSlots.append(indices)
        }
        return constraintSlots
    }

    /// Keeps the layout: slots and their columns, properties by name, the insert template.
    private func install(_ layout: PropertyLayout, constraintSlots: [[Int]]) {
        let (slots, transients, toMany, byName) = (layout.slots, layout.transients, layout.toMany, layout.byName)
        self.slots = slots
        // A sub-entity's own columns are named by the model (``assignHierarchyColumns(_:)``): siblings may
        // declare the same name, and share one table.
        self.columnNames = slots.map { "Z" + $0.name.uppercased() }
        self.storedTableName = "Z" + rootEntity.name.uppercased()
        self.entityColumns = slots.map { _ in nil }
        self.transientAttributes = transients
        self.toManyRelationships = toMany
        self.toManyIsOrdered = toMany.map(\.isOrdered)
        self.hasOrderedToMany = toMany.contains(where: \.isOrdered)
        self.propertiesByName = byName
        self.slotAttributeTypes = slots.map { if case .attribute(let a) = $0 { return a.type } else { return nil } }
        self.propertyList = (attributes.map(\.name) + relationships.map(\.name) + transientRelationships.map(\.name)).compactMap { name in byName[name].map { (name, $0) } }
        self.propertyBits = MemoryLayout<String>.size == MemoryLayout<StringBits>.size ? propertyList.map { Self.bits($0.name) } : []
        self.constraintSlots = constraintSlots
        self.constrainedValueSlots = SlotSet(constraintSlots.joined())
        let insertValues = slots.map { slot -> PropertyValue in
            if case .attribute(let a) = slot { return a.defaultValue.converted(to: a.type) ?? .null }
            return .null
        }
        self.insertTemplate = InsertTemplate(
            values: insertValues,
            changedSlots: SlotSet(insertValues.indices.filter { !insertValues[$0].isNull }),
            toMany: toMany.map { ManagedObject.ToManyState(current: [], original: [], ordered: $0.isOrdered) },
            transients: transients.map { $0.defaultValue.converted(to: $0.type) ?? .null })
    }

    /// Keeps which slots and to-manys validation must look at, and whether it asks only that values be present.
    private func installValidation() {
        let (slots, toMany) = (self.slots, toManyRelationships)
        self.constrainedSlots = slots.indices.filter { index in
            switch slots[index] {
            case .attribute(let a):
                return !a.isOptional || a.minValue != nil || a.maxValue != nil || a.minLength != nil || a.maxLength != nil
                    || a.regularExpression != nil
            case .toOne(let r):
                return !r.isOptional
            }
        }
        let patterns = slots.map { slot -> NSRegularExpression? in
            guard case .attribute(let a) = slot, let pattern = a.regularExpression else { return nil }
            // Whole-string matching, as a predicate's MATCHES: an anchored search would accept a prefix.
            return try? NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z")
        }
        self.slotPatterns = patterns.contains { $0 != nil } ? patterns : []
        self.externalStorageSlots = slots.indices.filter { index in
            if case .attribute(let a) = slots[index] { return a.allowsExternalBinaryDataStorage }
            return false
        }
        self.constrainedToManys = toMany.indices.filter { toMany[$0].minCount > 0 || toMany[$0].maxCount > 0 || !toMany[$0].isOptional }
        self.constraintsAskOnlyPresence = constrainedToManys.isEmpty && constrainedSlots.allSatisfy { index in
            guard case .attribute(let a) = slots[index] else { return true }
            return a.minValue == nil && a.maxValue == nil && a.minLength == nil && a.maxLength == nil && a.regularExpression == nil
        }
    }

    /// Refuses an index the store could not create: no name or a name that is not an identifier, a name used
    /// twice, no elements, or an element that is not a stored attribute or to-one of the entity (Docs/coredata-behaviour.md §4.1).
    private func checkFetchIndexes(_ byName: [String: PropertyRef]) throws {
        var names = Set<String>()
        for index in fetchIndexes {
            func refuse(_ property: String?, _ message: String) -> ModelError {
                ModelError(entity: name, property: property, fetchIndex: index.name, message)
            }
            guard let first = index.name.first, first.isLetter, index.name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
                throw refuse(nil, "a fetch index name must be a letter followed by letters, digits or '_'")
            }
            guard names.insert(index.name.uppercased()).inserted else {
                throw refuse(nil, "more than one fetch index named '\(index.name)' (names are compared case-insensitively, as SQLite's)")
            }
            guard !index.elements.isEmpty else { throw refuse(nil, "a fetch index needs at least one element") }
            var seen = Set<String>()
            for element in index.elements {
                switch byName[element.property] {
                case .attribute?, .toOne?: break
                case .toMany?: throw refuse(element.property, "'\(element.property)' is a to-many relationship, which has no column to index")
                case .transient?, .transientRelationship?: throw refuse(element.property, "'\(element.property)' is transient, which is not stored, so it cannot be indexed")
                case nil: throw refuse(element.property, "'\(element.property)' is not a property of \(name)")
                }
                guard seen.insert(element.property).inserted else { throw refuse(element.property, "'\(element.property)' appears twice in the index") }
            }
        }
    }

    func resolveRelationships(in model: ManagedObjectModel) throws {
        // Inherited relationships were checked on the parent (resolved first) and point where its do.
        var targets: [String: (entity: EntityDescription, inverse: PropertyRef)] = superentity?.relationshipTargets ?? [:]
        for relationship in declaredRelationships {
            guard let destination = model.entitiesByName[relationship.destinationEntityName] else {
                throw ModelError(entity: name, property: relationship.name, "destination entity '\(relationship.destinationEntityName)' does not exist")
            }
            guard let inverse = destination.relationship(named: relationship.inverseName),
                  let inverseRef = destination.propertiesByName[relationship.inverseName] else {
                throw ModelError(entity: name, property: relationship.name, "inverse '\(relationship.inverseName)' does not exist on '\(destination.name)' (every relationship needs an inverse)")
            }
            guard inverse.destinationEntityName == name, inverse.inverseName == relationship.name else {
                throw ModelError(entity: name, property: relationship.name, "inverse '\(destination.name).\(inverse.name)' does not point back at '\(name).\(relationship.name)'")
            }
            if relationship.minCount < 0 || relationship.maxCount < 0 || (relationship.maxCount > 0 && relationship.minCount > relationship.maxCount) {
                throw ModelError(entity: name, property: relationship.name, "minCount/maxCount are out of order")
            }
            targets[relationship.name] = (destination, inverseRef)
        }
        relationshipTargets = targets
        var transientInverses: [(entity: EntityDescription, inverse: Int)] = superentity?.transientRelationshipTargets ?? []
        for relationship in declaredTransientRelationships {
            guard let destination = model.entitiesByName[relationship.destinationEntityName] else {
                throw ModelError(entity: name, property: relationship.name, "destination entity '\(relationship.destinationEntityName)' does not exist")
            }
            // Rule 21.2 (inferred): the inverse of a transient relationship is transient too; a stored
            // inverse would write half of a link that the other half never stores.
            guard let inverseIndex = destination.transientRelationships.firstIndex(where: { $0.name == relationship.inverseName }) else {
                throw ModelError(entity: name, property: relationship.name, "inverse '\(relationship.inverseName)' is not a transient relationship of '\(destination.name)' (a transient relationship needs a transient inverse)")
            }
            let inverse = destination.transientRelationships[inverseIndex]
            guard inverse.destinationEntityName == name, inverse.inverseName == relationship.name else {
                throw ModelError(entity: name, property: relationship.name, "inverse '\(destination.name).\(inverse.name)' does not point back at '\(name).\(relationship.name)'")
            }
            transientInverses.append((destination, inverseIndex))
        }
        transientRelationshipTargets = transientInverses
        toManyInverseIsToOne = toManyRelationships.map { r in
            if case .toOne? = targets[r.name]?.inverse { return true } else { return false }
        }
        slotInverses = slots.map { if case .toOne(let r) = $0 { return targets[r.name]?.inverse } else { return nil } }
        slotDestinations = slots.map { if case .toOne(let r) = $0 { return targets[r.name]?.entity } else { return nil } }
    }
}

extension EntityDescription {
    /// Names this entity's own columns in its hierarchy's table, after its parent's (called in the hierarchy's
    /// order, parents first, siblings by name). Inherited slots keep the parent's columns; an own slot takes
    /// `Z<NAME>`, or `Z<NAME>1`, `Z<NAME>2`… when an entity named earlier already took that column (two siblings
    /// with an attribute of the same name: inferred from Core Data's SQL logs). A root keeps the names sealing
    /// gave it, so a model without inheritance is laid out by sealing alone.
    func assignColumns(used: inout Set<String>) {
        guard let parent = superentity else {
            used.formUnion(columnNames)
            return
        }
        var names = parent.columnNames
        for slot in parent.slotCount..<slots.count {
            let base = "Z" + slots[slot].name.uppercased()
            var candidate = base
            var n = 1
            while used.contains(candidate) {
                candidate = base + String(n)
                n += 1
            }
            used.insert(candidate)
            names.append(candidate)
        }
        columnNames = names
    }

    /// The `Z_ENT` column of each to-one whose destination has sub-entities (after relationships are resolved).
    func assignEntityColumns() {
        entityColumns = slots.indices.map { i in
            guard let destination = slotDestinations[i], !destination.subentities.isEmpty else { return nil }
            return "Z\(destination.entityNumber)" + String(columnNames[i].dropFirst())
        }
        entityColumnSlots = entityColumns.indices.filter { entityColumns[$0] != nil }
    }

    /// The entity that declares the relationship `name`: this one, or the highest parent that has it. A
    /// many-to-many join table is named after the declaring entity, so a hierarchy shares it.
    func declaringEntity(ofRelationship name: String) -> EntityDescription {
        var entity = self
        while let parent = entity.superentity, parent.relationship(named: name) != nil { entity = parent }
        return entity
    }

    /// The entities of this root's hierarchy, the root first, in `Z_ENT` order.
    var hierarchy: [EntityDescription] {
        guard !subentities.isEmpty, let model else { return [self] }
        return model.entitiesByNumber.filter { $0.rootEntity === self }
    }

    /// Sets the hierarchy the model resolved: root, and the `Z_ENT` numbers of this entity and those below it.
    func setKinds(_ numbers: [Int]) { kindNumbers = numbers.sorted() }

    /// `t0.Z_ENT = n` or `t0.Z_ENT IN (…)` for a fetch of this entity (with or without its sub-entities), nil
    /// when the fetch covers every row of the table (an entity outside any hierarchy, or a root with its
    /// sub-entities): a model without inheritance gets no condition, so its SQL is unchanged.
    package func entityCondition(alias: String, includesSubentities: Bool) -> String? {
        guard isInHierarchy else { return nil }
        let numbers = includesSubentities ? kindNumbers : [entityNumber]
        if numbers.count == rootEntity.kindNumbers.count { return nil }
        if numbers.count == 1 { return "\(alias).Z_ENT = \(numbers[0])" }
        return "\(alias).Z_ENT IN (\(numbers.map(String.init).joined(separator: ", ")))"
    }
}

extension EntityDescription: CustomStringConvertible {
    public var description: String { "EntityDescription(\(name))" }
}

/// A model that cannot be used: names the entity and property at fault.
public struct ModelError: Error, CustomStringConvertible, Equatable {
    /// The entity at fault, if one is.
    public var entity: String?
    /// The property at fault, if one is.
    public var property: String?
    /// The fetch index at fault, if one is (``FetchIndexDescription``).
    public var fetchIndex: String?
    /// What is wrong.
    public var message: String

    init(entity: String?, property: String?, fetchIndex: String? = nil, _ message: String) {
        self.entity = entity
        self.property = property
        self.fetchIndex = fetchIndex
        self.message = message
    }

    public var description: String {
        var place = ""
        if let entity { place = entity }
        if let fetchIndex {
            place += ", fetch index '\(fetchIndex)'" + (property.map { ", element '\($0)'" } ?? "")
        } else if let property {
            place += place.isEmpty ? property : ".\(property)"
        }
        return place.isEmpty ? "model error: \(message)" : "model error in \(place): \(message)"
    }
}
