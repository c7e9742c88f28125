import Foundation
import Synchronization

// Foundation on Apple platforms has `ValueTransformer`, its registry by name and the secure unarchiving transformer a
// Transformable attribute uses by default; Foundation on Linux has none of them. This file gives Linux the same
// names and calls (Docs/coredata-behaviour.md §13.1), so that an app's transformer registers as it does on an Apple
// platform: `ValueTransformer.setValueTransformer(MyTransformer(), forName: NSValueTransformerName("MyTransformer"))`.
// Swift cannot give a class a failable initializer that returns a registered instance, so the lookup Foundation
// spells `ValueTransformer(forName:)` is ``ValueTransformer/valueTransformer(forName:)`` here.

#if !canImport(Darwin)
/// The name a value transformer is registered under (Foundation's `NSValueTransformerName`).
public struct NSValueTransformerName: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// The secure unarchiving transformer, `NSSecureUnarchiveFromData`: Core Data's default for a Transformable.
    public static let secureUnarchiveFromDataTransformerName = NSValueTransformerName("NSSecureUnarchiveFromData")
}

/// Converts a value to another representation and, when it allows it, back (Foundation's `ValueTransformer`).
///
/// A Transformable attribute keeps `transformedValue(_:)`'s `Data` in the store and gives the app
/// `reverseTransformedValue(_:)` of it. Subclass it, override both, and register an instance by name before the
/// model's objects are read or written:
/// ```swift
/// final class ColourTransformer: ValueTransformer {
///     override func transformedValue(_ value: Any?) -> Any? { (value as? Colour).map { Data($0.hex.utf8) } }
///     override func reverseTransformedValue(_ value: Any?) -> Any? { (value as? Data).flatMap { Colour(hex: String(decoding: $0, as: UTF8.self)) } }
/// }
/// ValueTransformer.setValueTransformer(ColourTransformer(), forName: NSValueTransformerName("ColourTransformer"))
/// ```
/// Transformers are shared by every context and queue, as Foundation's registry shares them: a subclass keeps no
/// mutable state, or guards what it keeps (hence `@unchecked Sendable`).
open class ValueTransformer: @unchecked Sendable {
    /// Creates a transformer.
    public init() {}

    /// Whether ``reverseTransformedValue(_:)`` is supported; a Transformable's transformer must allow it.
    open class func allowsReverseTransformation() -> Bool { true }

    /// The value transformed: for a Transformable, the `Data` the store keeps, or nil when it cannot be transformed.
    open func transformedValue(_ value: Any?) -> Any? { value }

    /// The value transformed back: for a Transformable, the app's value from the stored `Data`, or nil.
    open func reverseTransformedValue(_ value: Any?) -> Any? {
        Self.allowsReverseTransformation() ? transformedValue(value) : nil
    }

    /// The secure unarchiving transformer under its registered name and under its class's name: Foundation's lookup
    /// by name falls back to instantiating the class of that name (documented in `NSValueTransformer.h`), and
    /// Xcode's model editor writes the class's name (`valueTransformerName="NSSecureUnarchiveFromDataTransformer"`).
    private static let registry = Mutex<[String: ValueTransformer]>([
        NSValueTransformerName.secureUnarchiveFromDataTransformerName.rawValue: NSSecureUnarchiveFromDataTransformer(),
        "NSSecureUnarchiveFromDataTransformer": NSSecureUnarchiveFromDataTransformer(),
    ])

    /// Registers `transformer` under `name`, or removes the one registered there when `transformer` is nil.
    public static func setValueTransformer(_ transformer: ValueTransformer?, forName name: NSValueTransformerName) {
        registry.withLock { $0[name.rawValue] = transformer }
    }

    /// The transformer registered under `name` (Foundation's `ValueTransformer(forName:)`).
    public static func valueTransformer(forName name: NSValueTransformerName) -> ValueTransformer? {
        registry.withLock { $0[name.rawValue] }
    }

    /// The names registered, sorted.
    public static func valueTransformerNames() -> [NSValueTransformerName] {
        registry.withLock { $0.keys.sorted().map(NSValueTransformerName.init(rawValue:)) }
    }
}

/// Archives a value with `NSKeyedArchiver` and unarchives it only as one of ``allowedTopLevelClasses`` (Foundation's
/// `NSSecureUnarchiveFromDataTransformer`, registered as `NSSecureUnarchiveFromData`).
///
/// Every object of the value (an array's elements, a dictionary's keys and values, a set's members) must be of an
/// allowed class; the mutable variants of the allowed collections, strings and data are allowed with them. Foundation
/// on Linux stops the process when asked to archive an object without secure coding or to unarchive a class not
/// allowed, so both directions check the classes first, and give nil for a value they refuse, as Foundation's
/// transformer does on Apple platforms. A Swift `Decimal` bridges to `NSDecimalNumber`, which is refused.
open class NSSecureUnarchiveFromDataTransformer: ValueTransformer, @unchecked Sendable {
    /// The classes a value may be made of: NSArray, NSDictionary, NSSet, NSString, NSNumber, NSDate, NSData, NSURL,
    /// NSUUID and NSNull, as Foundation's.
    open class var allowedTopLevelClasses: [AnyClass] {
        [NSArray.self, NSDictionary.self, NSSet.self, NSString.self, NSNumber.self, NSDate.self, NSData.self, NSURL.self,
         NSUUID.self, NSNull.self]
    }

    /// The classes accepted: the allowed ones, their mutable variants and the class of a Boolean `NSNumber`; and
    /// their names, as an archive names them. Made once: every read of a Transformable transforms back.
    private let acceptedClasses: [AnyClass]
    private let acceptedNames: Set<String>

    public override init() {
        let allowed = Self.allowedTopLevelClasses
        let variants: [(AnyClass, AnyClass)] = [
            (NSArray.self, NSMutableArray.self), (NSDictionary.self, NSMutableDictionary.self), (NSSet.self, NSMutableSet.self),
            (NSString.self, NSMutableString.self), (NSData.self, NSMutableData.self), (NSNumber.self, type(of: true as NSNumber)),
        ]
        acceptedClasses = allowed + variants.filter { pair in allowed.contains { $0 == pair.0 } }.map(\.1)
        acceptedNames = Set(acceptedClasses.map { NSStringFromClass($0) })
        super.init()
    }

    open override func transformedValue(_ value: Any?) -> Any? {
        guard let value, isArchivable(value, accepted: acceptedClasses) else { return nil }
        return try? NSKeyedArchiver.archivedData(withRootObject: value, requiringSecureCoding: true)
    }

    open override func reverseTransformedValue(_ value: Any?) -> Any? {
        guard let data = value as? Data else { return nil }
        let (accepted, names) = (acceptedClasses, acceptedNames)
        guard let archive = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil) as? [String: Any],
              let objects = archive["$objects"] as? [Any],
              objects.allSatisfy({ object in
                  guard let className = (object as? [String: Any])?["$classname"] as? String else { return true }
                  return names.contains(className)
              })
        else { return nil }
        return try? NSKeyedUnarchiver.unarchivedObject(ofClasses: accepted, from: data)
    }

    /// Whether `value` and every object in it is of an accepted class.
    private func isArchivable(_ value: Any, accepted: [AnyClass]) -> Bool {
        guard let object = value as? NSObject, accepted.contains(where: { $0 == type(of: object) }) else { return false }
        if let array = object as? NSArray { return array.allSatisfy { isArchivable($0, accepted: accepted) } }
        if let set = object as? NSSet { return set.allSatisfy { isArchivable($0, accepted: accepted) } }
        if let dictionary = object as? NSDictionary {
            return dictionary.allSatisfy { isArchivable($0.key, accepted: accepted) && isArchivable($0.value, accepted: accepted) }
        }
        return true
    }
}
#else
extension ValueTransformer {
    /// The transformer registered under `name` (``ValueTransformer/init(forName:)``), spelled as on Linux.
    public static func valueTransformer(forName name: NSValueTransformerName) -> ValueTransformer? {
        ValueTransformer(forName: name)
    }
}
#endif
