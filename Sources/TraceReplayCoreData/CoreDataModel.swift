// NEVER COMPILED OR RUN HERE. This target builds only where Apple's Core Data can be imported (macOS, iOS); on
// the Linux machines this project is developed on it is an empty module. It was written against Apple's
// documented API and has not been compiled, run or checked on an Apple platform (Docs/calibration.md, README
// "What has and has not run on Apple platforms"). Expect to fix compile errors on first use.
#if canImport(CoreData)
import CoreData
import Foundation
import TraceReplay

/// Builds Core Data models from the trace's header (``TraceModel``): entities, attributes, relationships with their
/// inverses, uniqueness constraints, indexes, and inheritance (`superentity` / `subentities`, `isAbstract`).
public enum CoreDataModelBuilder {
    /// One `NSManagedObjectModel` per model version of the header, oldest first.
    public static func models(_ header: TraceHeader) throws -> [NSManagedObjectModel] {
        try header.models.map(model)
    }

    public static func model(_ trace: TraceModel) throws -> NSManagedObjectModel {
        var entities: [String: NSEntityDescription] = [:]
        for e in trace.entities {
            let entity = NSEntityDescription()
            entity.name = e.name
            entity.managedObjectClassName = NSStringFromClass(NSManagedObject.self)
            entity.isAbstract = e.abstract ?? false
            if let renaming = e.renamingIdentifier { entity.renamingIdentifier = renaming }
            // Docs/coredata-behaviour.md §4.1: part of the entity's version hash.
            if let modifier = e.versionHashModifier { entity.versionHashModifier = modifier }
            var properties: [NSPropertyDescription] = []
            for a in e.attributes ?? [] { properties.append(attribute(a)) }
            entity.properties = properties
            entities[e.name] = entity
        }
        // Relationships need every entity (destination, inverse).
        var relationships: [String: [String: NSRelationshipDescription]] = [:]
        for e in trace.entities {
            for r in e.relationships ?? [] {
                guard let destination = entities[r.destination] else {
                    throw ReplayError("model: entity \(e.name), relationship \(r.name): no entity \(r.destination)")
                }
                let rel = NSRelationshipDescription()
                rel.name = r.name
                rel.destinationEntity = destination
                rel.isOptional = r.optional ?? true
                rel.isTransient = r.transient ?? false
                rel.minCount = r.minCount ?? 0
                rel.maxCount = (r.toMany ?? false) ? (r.maxCount ?? 0) : 1
                // Docs/coredata-behaviour.md §12.1: an ordered to-many holds an NSOrderedSet.
                rel.isOrdered = (r.toMany ?? false) && (r.ordered ?? false)
                switch r.deleteRule ?? .nullify {
                case .nullify: rel.deleteRule = .nullifyDeleteRule
                case .cascade: rel.deleteRule = .cascadeDeleteRule
                case .deny: rel.deleteRule = .denyDeleteRule
                case .noAction: rel.deleteRule = .noActionDeleteRule
                }
                relationships[e.name, default: [:]][r.name] = rel
            }
        }
        for e in trace.entities {
            for r in e.relationships ?? [] {
                guard let rel = relationships[e.name]?[r.name] else { continue }
                // The inverse is declared on the destination or on one of its parents.
                var owner: String? = r.destination
                while let name = owner, relationships[name]?[r.inverse] == nil {
                    owner = trace.entities.first { $0.name == name }?.parent
                }
                guard let name = owner, let inverse = relationships[name]?[r.inverse] else {
                    throw ReplayError("model: entity \(e.name), relationship \(r.name): no inverse \(r.inverse) on \(r.destination)")
                }
                rel.inverseRelationship = inverse
            }
            if let rels = relationships[e.name], let entity = entities[e.name] {
                let declared = (e.relationships ?? []).compactMap { rels[$0.name] }
                entity.properties = entity.properties + declared
            }
        }
        for e in trace.entities {
            guard let entity = entities[e.name] else { continue }
            if let constraints = e.uniquenessConstraints, !constraints.isEmpty {
                entity.uniquenessConstraints = constraints.map { $0 as [Any] }
            }
        }
        // Inheritance last: a parent lists its sub-entities, in the header's order.
        for e in trace.entities {
            guard let parentName = e.parent else { continue }
            guard let parent = entities[parentName], let child = entities[e.name] else {
                throw ReplayError("model: entity \(e.name): no parent entity \(parentName)")
            }
            parent.subentities = parent.subentities + [child]
        }
        // Indexes last, as NSEntityDescription.h asks: they name the entity's properties, inherited ones included.
        for e in trace.entities {
            guard let entity = entities[e.name] else { continue }
            var indexes: [NSFetchIndexDescription] = []
            for index in e.fetchIndexes ?? [] {
                let elements = try index.elements.map { element -> NSFetchIndexElementDescription in
                    guard let property = entity.propertiesByName[element.property] else {
                        throw ReplayError("model: entity \(e.name), fetch index \(index.name): no property \(element.property)")
                    }
                    let d = NSFetchIndexElementDescription(property: property, collationType: .binary)
                    d.isAscending = element.ascending ?? true
                    return d
                }
                indexes.append(NSFetchIndexDescription(name: index.name, elements: elements))
            }
            if !indexes.isEmpty { entity.indexes = indexes }
        }
        let model = NSManagedObjectModel()
        model.entities = trace.entities.compactMap { entities[$0.name] }
        if let version = trace.version { model.versionIdentifiers = [version] }
        // Docs/coredata-behaviour.md §14.1: each configuration holds exactly the entities it lists.
        for configuration in trace.configurations ?? [] {
            model.setEntities(configuration.entities.compactMap { entities[$0] }, forConfigurationName: configuration.name)
        }
        return model
    }

    static func attribute(_ a: TraceModel.Attribute) -> NSAttributeDescription {
        let d = NSAttributeDescription()
        d.name = a.name
        switch a.type {
        case .integer16: d.attributeType = .integer16AttributeType
        case .integer32: d.attributeType = .integer32AttributeType
        case .integer64: d.attributeType = .integer64AttributeType
        case .double: d.attributeType = .doubleAttributeType
        case .float: d.attributeType = .floatAttributeType
        case .decimal: d.attributeType = .decimalAttributeType
        case .string: d.attributeType = .stringAttributeType
        case .boolean: d.attributeType = .booleanAttributeType
        case .date: d.attributeType = .dateAttributeType
        case .binaryData: d.attributeType = .binaryDataAttributeType
        case .transformable: d.attributeType = .transformableAttributeType
        case .uuid: d.attributeType = .UUIDAttributeType
        case .uri: d.attributeType = .URIAttributeType
        }
        d.isOptional = a.optional ?? true
        d.isTransient = a.transient ?? false
        d.isIndexed = a.indexed ?? false
        if let renaming = a.renamingIdentifier { d.renamingIdentifier = renaming }
        if let v = a.defaultValue { d.defaultValue = defaultValue(v, type: d.attributeType) }
        // Docs/coredata-behaviour.md §13.1: a Transformable without a transformer name uses the secure unarchiving
        // transformer, as ObjectGraph does; the class name is the model's.
        if a.type == .transformable {
            d.valueTransformerName = a.valueTransformerName ?? NSValueTransformerName.secureUnarchiveFromDataTransformerName.rawValue
            if let className = a.customClassName { d.attributeValueClassName = className }
        }
        // Docs/coredata-behaviour.md §13.5.
        d.allowsExternalBinaryDataStorage = a.allowsExternalBinaryDataStorage ?? false
        // Validation bounds: NSAttributeDescription takes predicates with their warnings.
        var rules: [NSPredicate] = []
        var warnings: [String] = []
        if let min = a.minValue { rules.append(NSPredicate(format: "SELF >= %@", NSNumber(value: min))); warnings.append("\(a.name) below \(min)") }
        if let max = a.maxValue { rules.append(NSPredicate(format: "SELF <= %@", NSNumber(value: max))); warnings.append("\(a.name) above \(max)") }
        if let min = a.minLength { rules.append(NSPredicate(format: "length >= %ld", min)); warnings.append("\(a.name) shorter than \(min)") }
        if let max = a.maxLength { rules.append(NSPredicate(format: "length <= %ld", max)); warnings.append("\(a.name) longer than \(max)") }
        // Docs/coredata-behaviour.md §13.7: Xcode's pattern is a MATCHES validation predicate (whole-string match).
        if let pattern = a.regularExpression { rules.append(NSPredicate(format: "SELF MATCHES %@", pattern)); warnings.append("\(a.name) does not match \(pattern)") }
        if !rules.isEmpty { d.setValidationPredicates(rules, withValidationWarnings: warnings) }
        return d
    }

    static func defaultValue(_ v: TraceModel.Scalar, type: NSAttributeType) -> Any? {
        switch (v, type) {
        case (.number(let n), .integer16AttributeType), (.number(let n), .integer32AttributeType), (.number(let n), .integer64AttributeType):
            return NSNumber(value: Int64(n))
        case (.number(let n), .decimalAttributeType): return NSDecimalNumber(value: n)
        case (.number(let n), .dateAttributeType): return Date(timeIntervalSinceReferenceDate: n)
        case (.number(let n), _): return NSNumber(value: n)
        case (.bool(let b), _): return NSNumber(value: b)
        case (.string(let s), .UUIDAttributeType): return UUID(uuidString: s)
        case (.string(let s), .URIAttributeType): return URL(string: s)
        case (.string(let s), _): return s
        }
    }
}
#endif
