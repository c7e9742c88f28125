import Foundation

// Transformable attributes (Docs/coredata-behaviour.md §13.1–§13.3): the app sets and reads its own value; the object,
// its snapshot, the row cache and the store keep the transformer's `Data`. The value is transformed when it is set
// and transformed back each time it is read.

extension AttributeDescription {
    /// The name of the attribute's transformer: its own, or the secure unarchiving transformer's.
    var transformerName: NSValueTransformerName {
        valueTransformerName.map(NSValueTransformerName.init(rawValue:)) ?? .secureUnarchiveFromDataTransformerName
    }

    /// `value` in the form the store keeps: the transformer's `Data`, or why there is none.
    func transformedData(_ value: Any) -> Result<Data, TransformFailure> {
        guard let transformer = ValueTransformer.valueTransformer(forName: transformerName) else {
            return .failure(TransformFailure(message: "no value transformer is registered as \(transformerName.rawValue)"))
        }
        // §13.1: a Transformable's transformer must allow the reverse transformation, or what is stored could never
        // be read back.
        guard Swift.type(of: transformer).allowsReverseTransformation() else {
            return .failure(TransformFailure(message: "\(transformerName.rawValue) does not allow the reverse transformation a Transformable needs"))
        }
        guard let data = transformer.transformedValue(value) as? Data else {
            return .failure(TransformFailure(message: "\(transformerName.rawValue) cannot transform a \(Swift.type(of: value)) value to data"))
        }
        return .success(data)
    }

    /// The app's value from the stored `Data`: nil when the transformer is not registered or refuses the data (the
    /// secure transformer refuses a class it does not allow).
    func reverseTransformed(_ data: Data) -> Any? {
        ValueTransformer.valueTransformer(forName: transformerName)?.reverseTransformedValue(data)
    }

    /// The stored form of an app's value for this attribute: a Transformable's transformed `Data`, any other type's
    /// ``PropertyValue``; nil when it does not fit.
    func storedValue(_ value: Any?) -> PropertyValue? {
        guard type == .transformable else { return PropertyValue.from(value, attributeType: type) }
        guard let value, !(value is NSNull) else { return .null }
        if case .success(let data) = transformedData(value) { return .data(data) }
        return nil
    }

    /// The app's value of a stored value.
    func appValue(_ stored: PropertyValue) -> Any? {
        guard type == .transformable else { return stored.anyValue(for: type) }
        guard case .data(let data) = stored else { return nil }
        return reverseTransformed(data)
    }

    /// Why a value has no transformed form.
    struct TransformFailure: Error {
        let message: String
    }
}

extension ManagedObject {
    /// Sets a Transformable slot to the transformed form of `value` (§13.2, §13.3).
    ///
    /// A value equal to the committed one (`isEqual`, as Core Data compares them) takes the committed bytes back, so
    /// that setting an equal value is no change even when its archive's bytes differ (a dictionary's keys may be
    /// archived in another order).
    /// - Throws: 1550 naming entity, object and property when the transformer cannot transform the value.
    func setTransformable(_ slot: Int, _ attribute: AttributeDescription, _ value: Any?) throws {
        try materialize()
        guard let value, !(value is NSNull) else { return setSlot(slot, .null) }
        var stored: PropertyValue
        switch attribute.transformedData(value) {
        case .success(let data): stored = .data(data)
        case .failure(let failure):
            throw ObjectGraphError(.validation, "\(attribute.name): \(failure.message)", entity: entity.name, objectID: objectID, property: attribute.name)
        }
        if let original, original.values[slot] != stored, case .data(let committed) = original.values[slot],
           Self.transformedValuesEqual(attribute.reverseTransformed(committed), value) {
            stored = original.values[slot]
        }
        setSlot(slot, stored)
    }

    /// Whether two app values of a Transformable are equal: as hashable values, or by `isEqual` as objects.
    package static func transformedValuesEqual(_ a: Any?, _ b: Any) -> Bool {
        guard let a else { return false }
        if let x = a as? AnyHashable, let y = b as? AnyHashable, x == y { return true }
        if let x = a as? NSObject, let y = b as? NSObject { return x.isEqual(y) }
        return false
    }

    /// The app's value of a slot: a Transformable's value transformed back, any other attribute's Swift value.
    func appValue(_ slot: Int, _ stored: PropertyValue) -> Any? {
        guard entity.slotAttributeTypes[slot] == .transformable, case .attribute(let a) = entity.slots[slot] else {
            return stored.anyValue(for: entity.slotAttributeTypes[slot])
        }
        return a.appValue(stored)
    }
}
