import Foundation

/// A Swift type an attribute can hold, for typed properties declared with ``Managed``.
public protocol AttributeConvertible {
    /// Reads the value from its stored form.
    static func fromAttribute(_ value: Any?) -> Self
    /// The value to store.
    var attributeValue: Any? { get }
}

extension Optional: AttributeConvertible where Wrapped: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> Self {
        guard let value else { return nil }
        return Wrapped.fromAttribute(value)
    }
    public var attributeValue: Any? { self?.attributeValue }
}

extension String: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> String { value as? String ?? "" }
    public var attributeValue: Any? { self }
}
extension Bool: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> Bool { value as? Bool ?? false }
    public var attributeValue: Any? { self }
}
extension Int: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> Int {
        switch value {
        case let v as Int16: return Int(v)
        case let v as Int32: return Int(v)
        case let v as Int64: return Int(v)
        case let v as Int: return v
        default: return 0
        }
    }
    public var attributeValue: Any? { self }
}
extension Int16: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> Int16 { Int16(truncatingIfNeeded: Int.fromAttribute(value)) }
    public var attributeValue: Any? { self }
}
extension Int32: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> Int32 { Int32(truncatingIfNeeded: Int.fromAttribute(value)) }
    public var attributeValue: Any? { self }
}
extension Int64: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> Int64 { Int64(Int.fromAttribute(value)) }
    public var attributeValue: Any? { self }
}
extension Double: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> Double {
        switch value {
        case let v as Double: return v
        case let v as Float: return Double(v)
        default: return 0
        }
    }
    public var attributeValue: Any? { self }
}
extension Float: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> Float { Float(Double.fromAttribute(value)) }
    public var attributeValue: Any? { self }
}
extension Decimal: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> Decimal { value as? Decimal ?? 0 }
    public var attributeValue: Any? { self }
}
extension Date: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> Date { value as? Date ?? Date(timeIntervalSinceReferenceDate: 0) }
    public var attributeValue: Any? { self }
}
extension Data: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> Data { value as? Data ?? Data() }
    public var attributeValue: Any? { self }
}
extension UUID: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> UUID { value as? UUID ?? UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
    public var attributeValue: Any? { self }
}
extension URL: AttributeConvertible {
    public static func fromAttribute(_ value: Any?) -> URL { value as? URL ?? URL(string: "about:blank")! }
    public var attributeValue: Any? { self }
}

/// A typed persistent property of a ``ManagedObject`` subclass (Core Data's `@NSManaged`), naming the model's
/// key. Works for attributes (`String?`, `Int64`, `Date`, …), to-one relationships (`Tag?`) and to-many
/// relationships (`Set<Item>`).
///
/// ```swift
/// final class Item: ManagedObject {
///     @Managed("title") var title: String?
///     @Managed("tag") var tag: Tag?
/// }
/// ```
@propertyWrapper
public struct Managed<Value> {
    /// The model's key for the property.
    public let key: String

    /// Declares the property for `key`.
    public init(_ key: String) { self.key = key }

    @available(*, unavailable, message: "@Managed works only on ManagedObject subclasses")
    public var wrappedValue: Value {
        get { fatalError() }
        set { fatalError() }
    }

    // Inlinable so that it is specialized for each property's type in the subclass's module: the casts below
    // then fold away, and the storage key path is projected directly (no key-path call, no `Any` boxing).
    @inlinable
    public static subscript<Owner: ManagedObject>(
        _enclosingInstance object: Owner,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Owner, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Owner, Self>
    ) -> Value {
        // Inlined into the property's accessor, where the storage key path is a literal: the projection folds
        // into a stored-property read instead of a run-time key-path walk (≈ 500 instructions per access).
        @inline(__always) get {
            let key = object[keyPath: storageKeyPath].key
            return ManagedValueBridge<Value>.read(object, key)
        }
        @inline(__always) set {
            let key = object[keyPath: storageKeyPath].key
            ManagedValueBridge<Value>.write(object, key, newValue)
        }
    }
}

/// Converts between `value(forKey:)` results and the declared type of a ``Managed`` property.
@usableFromInline
enum ManagedValueBridge<Value> {
    // The declared type is matched by metatype identity, which costs a comparison (folded where the type is
    // known); a cast such as `value as? String` on a generic value is a runtime cast even when specialized.
    // `unsafeBitCast` only ever converts a value to its own type.

    /// Reads `key` of `object`: attributes and to-ones of the declared type without boxing; the rest through
    /// `value(forKey:)`.
    @inlinable
    static func read(_ object: ManagedObject, _ key: String) -> Value {
        switch object._managedRead(forKey: key) {
        case .attribute(let stored, let type):
            if let value = typed(stored, type) { return value }
        case .toOne(let related):
            // The declared type is the object's own class, optional or not (the usual `Tag?`): no runtime cast. (An
            // object of its entity's class, checked: `init(entity:insertInto:)` takes any entity.)
            if ObjectIdentifier(Value.self) == related.entity._optionalObjectType,
               ObjectIdentifier(type(of: related)) == ObjectIdentifier(related.entity.managedObjectClass) {
                return unsafeBitCast(Optional(related), to: Value.self)
            }
            if ObjectIdentifier(Value.self) == ObjectIdentifier(type(of: related)) { return unsafeBitCast(related, to: Value.self) }
            if let value = related as? Value { return value }
        case .other:
            break
        }
        return read(object.value(forKey: key))
    }

    /// `stored` as the declared type, when it is one of the common ones and the attribute's type gives it as such.
    @inlinable
    static func typed(_ stored: PropertyValue, _ type: AttributeType) -> Value? {
        let declared = ObjectIdentifier(Value.self)
        switch stored {
        case .string(let v):
            if declared == ObjectIdentifier(String?.self) { return unsafeBitCast(Optional(v), to: Value.self) }
            if declared == ObjectIdentifier(String.self) { return unsafeBitCast(v, to: Value.self) }
        case .double(let v) where type == .double:
            if declared == ObjectIdentifier(Double.self) { return unsafeBitCast(v, to: Value.self) }
            if declared == ObjectIdentifier(Double?.self) { return unsafeBitCast(Optional(v), to: Value.self) }
        case .integer(let v) where type == .integer64 || type == .integer32 || type == .integer16:
            if declared == ObjectIdentifier(Int64.self) { return unsafeBitCast(v, to: Value.self) }
            if declared == ObjectIdentifier(Int.self) { return unsafeBitCast(Int(truncatingIfNeeded: v), to: Value.self) }
            if declared == ObjectIdentifier(Int64?.self) { return unsafeBitCast(Optional(v), to: Value.self) }
            if declared == ObjectIdentifier(Int?.self) { return unsafeBitCast(Optional(Int(truncatingIfNeeded: v)), to: Value.self) }
        case .date(let v):
            if declared == ObjectIdentifier(Date?.self) { return unsafeBitCast(Optional(v), to: Value.self) }
            if declared == ObjectIdentifier(Date.self) { return unsafeBitCast(v, to: Value.self) }
        case .bool(let v):
            if declared == ObjectIdentifier(Bool.self) { return unsafeBitCast(v, to: Value.self) }
            if declared == ObjectIdentifier(Bool?.self) { return unsafeBitCast(Optional(v), to: Value.self) }
        default:
            break
        }
        return nil
    }

    /// `value` in its storage form, when the declared type is one of the common ones and the value is not nil.
    @inlinable
    static func stored(_ value: Value) -> PropertyValue? {
        switch ObjectIdentifier(Value.self) {
        case ObjectIdentifier(String?.self): return unsafeBitCast(value, to: String?.self).map { .string($0) }
        case ObjectIdentifier(String.self): return .string(unsafeBitCast(value, to: String.self))
        case ObjectIdentifier(Double.self): return .double(unsafeBitCast(value, to: Double.self))
        case ObjectIdentifier(Double?.self): return unsafeBitCast(value, to: Double?.self).map { .double($0) }
        case ObjectIdentifier(Int64.self): return .integer(unsafeBitCast(value, to: Int64.self))
        case ObjectIdentifier(Int64?.self): return unsafeBitCast(value, to: Int64?.self).map { .integer($0) }
        case ObjectIdentifier(Int.self): return .integer(Int64(unsafeBitCast(value, to: Int.self)))
        case ObjectIdentifier(Int?.self): return unsafeBitCast(value, to: Int?.self).map { .integer(Int64($0)) }
        case ObjectIdentifier(Date?.self): return unsafeBitCast(value, to: Date?.self).map { .date($0) }
        case ObjectIdentifier(Date.self): return .date(unsafeBitCast(value, to: Date.self))
        case ObjectIdentifier(Bool.self): return .bool(unsafeBitCast(value, to: Bool.self))
        case ObjectIdentifier(Bool?.self): return unsafeBitCast(value, to: Bool?.self).map { .bool($0) }
        default: return nil
        }
    }

    /// Sets `key` of `object`: attributes of the common types and to-one objects without boxing; the rest
    /// through `setValue(_:forKey:)`.
    @inlinable
    static func write(_ object: ManagedObject, _ key: String, _ value: Value) {
        if let stored = stored(value) {
            if object._managedSet(stored, forKey: key) { return }
        } else if let related = value as? ManagedObject, object._managedSetToOne(related, forKey: key) {
            return
        }
        do { try object.setValue(write(value), forKey: key) } catch {
            preconditionFailure("\(error)")
        }
    }

    @usableFromInline
    static func read(_ raw: Any?) -> Value {
        // The stored value usually has the declared type already: one cast, no conformance lookup.
        if let value = raw as? Value { return value }
        if let convertible = Value.self as? any AttributeConvertible.Type {
            return convertible.fromAttribute(raw) as! Value
        }
        if let value = raw as? Value { return value }
        if let set = raw as? Set<ManagedObject>, let typed = castSet(set) { return typed }
        // An ordered relationship reads as an array (Docs/coredata-behaviour.md §12.3): `[Sub]`, or a set of it.
        if let array = raw as? [ManagedObject], let typed = (array as Any) as? Value ?? bridgeSet(array) { return typed }
        if raw == nil, let none = Optional<Any>.none as? Value { return none }
        preconditionFailure("cannot read \(String(describing: raw)) as \(Value.self)")
    }

    @usableFromInline
    static func write(_ value: Value) -> Any? {
        if let convertible = value as? any AttributeConvertible { return convertible.attributeValue }
        // A to-one's object: no reflection (Mirror) on the import hot path.
        if let object = value as? ManagedObject { return object }
        if let set = value as? any ManagedObjectSetInitializable { return Set(set.managedObjects) }
        if let array = value as? [ManagedObject] { return array }
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            return mirror.children.first?.value
        }
        return value
    }

    private static func castSet(_ set: Set<ManagedObject>) -> Value? {
        // Set<Sub> from Set<ManagedObject>: build through an array cast.
        let array = Array(set)
        if let typed = (array as Any) as? Value { return typed }
        return (Set(array) as Any) as? Value ?? bridgeSet(array)
    }

    private static func bridgeSet(_ array: [ManagedObject]) -> Value? {
        guard let maker = Value.self as? any ManagedObjectSetInitializable.Type else { return nil }
        return maker.init(managedObjects: array) as? Value
    }
}

/// Lets ``Managed`` build a `Set<Sub>` of a subclass from the context's objects.
protocol ManagedObjectSetInitializable {
    init(managedObjects: [ManagedObject])
    var managedObjects: [ManagedObject] { get }
}

extension Set: ManagedObjectSetInitializable where Element: ManagedObject {
    init(managedObjects: [ManagedObject]) {
        self.init(managedObjects.compactMap { $0 as? Element })
    }
    var managedObjects: [ManagedObject] { map { $0 } }
}

extension ManagedObject {
    /// `Optional<Self>` for the class it is called on (``EntityDescription/_optionalObjectType``).
    static var _optionalSelfType: ObjectIdentifier { ObjectIdentifier(Optional<Self>.self) }
}
