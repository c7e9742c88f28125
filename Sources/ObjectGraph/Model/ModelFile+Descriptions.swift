import Foundation
import ModelSchema

// A model file (ModelSchema's ``ModelFile``, the one description of a model that the operation trace shares) made
// into this module's entity, attribute and relationship descriptions.

extension ModelFile.Entity {
    func makeEntity(class cls: ManagedObject.Type) throws -> EntityDescription {
        let attributes = try (self.attributes ?? []).map { try $0.makeAttribute(entity: name) }
        let relationships = (self.relationships ?? []).map { $0.makeRelationship() }
        let entity = EntityDescription(
            name: name, managedObjectClass: cls, attributes: attributes, relationships: relationships,
            uniquenessConstraints: uniquenessConstraints ?? [], parent: parent, isAbstract: abstract ?? false,
            fetchIndexes: (fetchIndexes ?? []).map { index in
                FetchIndexDescription(name: index.name, elements: index.elements.map { .init(property: $0.property, ascending: $0.ascending ?? true) })
            })
        entity.renamingIdentifier = renamingIdentifier
        entity.versionHashModifier = versionHashModifier
        return entity
    }
}

extension ModelFile.Attribute {
    func makeAttribute(entity: String) throws -> AttributeDescription {
        var value = PropertyValue.null
        if let defaultValue {
            guard let converted = defaultValue.propertyValue(for: type) else {
                throw ModelError(entity: entity, property: name, "default value \(defaultValue) does not fit type \(type.rawValue)")
            }
            value = converted
        }
        var attribute = AttributeDescription(
            name: name, type: type, isOptional: optional ?? true, defaultValue: value, minValue: minValue,
            maxValue: maxValue, minLength: minLength, maxLength: maxLength, isTransient: transient ?? false,
            preservesValueInHistoryOnDeletion: preservesValueInHistoryOnDeletion ?? false, isIndexed: indexed ?? false)
        attribute.renamingIdentifier = renamingIdentifier
        attribute.valueTransformerName = valueTransformerName
        attribute.customClassName = customClassName
        attribute.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage ?? false
        attribute.regularExpression = regularExpression
        return attribute
    }
}

extension ModelFile.Relationship {
    func makeRelationship() -> RelationshipDescription {
        var relationship = RelationshipDescription(
            name: name, destination: destination, inverse: inverse, toMany: toMany ?? false,
            isOptional: optional ?? true, deleteRule: deleteRule ?? .nullify, minCount: minCount ?? 0,
            maxCount: maxCount ?? 0, isTransient: transient ?? false, isOrdered: ordered ?? false)
        relationship.renamingIdentifier = renamingIdentifier
        return relationship
    }
}

extension ModelFile.Scalar {
    func propertyValue(for type: AttributeType) -> PropertyValue? {
        switch (self, type) {
        case (.number(let d), _) where type.isNumeric || type == .date: return PropertyValue.double(d).converted(to: type)
        case (.bool(let b), .boolean): return .bool(b)
        case (.string(let s), .string): return .string(s)
        case (.string(let s), .decimal): return Decimal(string: s).map { .decimal($0) }
        case (.string(let s), .uuid), (.string(let s), .uri): return PropertyValue.string(s).converted(to: type)
        case (.string(let s), .date): return ISO8601DateFormatter().date(from: s).map { .date($0) }
        default: return nil
        }
    }
}
