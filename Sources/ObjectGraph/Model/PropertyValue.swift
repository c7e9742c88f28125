import Foundation

/// A persistent value as the object graph stores it: in snapshots, the row cache and the store.
///
/// Attributes of every numeric width are held as `.integer` or `.double`; to-one relationships are held as
/// `.objectID`, as Core Data's snapshots hold them (semantics §1.1: "to-one relationships as object IDs").
public enum PropertyValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case double(Double)
    case decimal(Decimal)
    case string(String)
    case bool(Bool)
    case date(Date)
    case data(Data)
    case uuid(UUID)
    case uri(URL)
    case objectID(ManagedObjectID)

    /// Whether the value is `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The numeric value as a `Double`, for comparisons across integer and floating types.
    var numericValue: Double? {
        switch self {
        case .integer(let v): return Double(v)
        case .double(let v): return v
        case .decimal(let v): return NSDecimalNumber(decimal: v).doubleValue
        case .bool(let v): return v ? 1 : 0
        case .date(let v): return v.timeIntervalSinceReferenceDate
        default: return nil
        }
    }
}

extension PropertyValue: CustomStringConvertible {
    public var description: String {
        switch self {
        case .null: return "nil"
        case .integer(let v): return String(v)
        case .double(let v): return String(v)
        case .decimal(let v): return v.description
        case .string(let v): return "\"\(v)\""
        case .bool(let v): return v ? "true" : "false"
        case .date(let v): return v.description
        case .data(let v): return "<\(v.count) bytes>"
        case .uuid(let v): return v.uuidString
        case .uri(let v): return v.absoluteString
        case .objectID(let v): return v.description
        }
    }
}

extension PropertyValue {
    /// Semantics §1.5: attribute equality uses a float tolerance (`_epsilonEquals`) plus plain equality.
    func epsilonEquals(_ other: PropertyValue) -> Bool {
        switch (self, other) {
        case let (.double(a), .double(b)):
            if a == b { return true }
            let scale = Swift.max(abs(a), abs(b), 1)
            return abs(a - b) <= scale * 1e-12
        default:
            return self == other
        }
    }

    /// The value as a plain Swift value for `value(forKey:)`, typed by the attribute.
    func anyValue(for type: AttributeType?) -> Any? {
        switch self {
        case .null: return nil
        case .integer(let v):
            switch type {
            case .integer16: return Int16(truncatingIfNeeded: v)
            case .integer32: return Int32(truncatingIfNeeded: v)
            case .integer64: return v
            case .boolean: return v != 0
            case .double: return Double(v)
            case .float: return Float(v)
            default: return Int(v)
            }
        case .double(let v):
            if type == .float { return Float(v) }
            return v
        case .decimal(let v): return v
        case .string(let v): return v
        case .bool(let v): return v
        case .date(let v): return v
        case .data(let v): return v
        case .uuid(let v): return v
        case .uri(let v): return v
        case .objectID(let v): return v
        }
    }

    /// Converts a Swift value to the storage form of an attribute, or nil when the type does not fit.
    static func from(_ value: Any?, attributeType: AttributeType) -> PropertyValue? {
        guard let value else { return .null }
        if let pv = value as? PropertyValue { return pv.converted(to: attributeType) }
        switch attributeType {
        case .integer16, .integer32, .integer64:
            let v: Int64?
            switch value {
            case let x as Int: v = Int64(x)
            case let x as Int64: v = x
            case let x as Int32: v = Int64(x)
            case let x as Int16: v = Int64(x)
            case let x as Int8: v = Int64(x)
            case let x as UInt: v = Int64(exactly: x)
            case let x as UInt32: v = Int64(x)
            case let x as UInt16: v = Int64(x)
            case let x as UInt8: v = Int64(x)
            case let x as UInt64: v = Int64(exactly: x)
            case let x as NSNumber where !(x is Bool): v = x.int64Value
            default: v = nil
            }
            guard let v, attributeType.integerRange.contains(v) else { return nil }
            return .integer(v)
        case .double, .float:
            switch value {
            case let x as Double: return .double(x)
            case let x as Float: return .double(Double(x))
            case let x as Int: return .double(Double(x))
            case let x as Int64: return .double(Double(x))
            case let x as Int32: return .double(Double(x))
            case let x as Decimal: return .double(NSDecimalNumber(decimal: x).doubleValue)
            default: return nil
            }
        case .decimal:
            switch value {
            case let x as Decimal: return .decimal(x)
            case let x as Int: return .decimal(Decimal(x))
            case let x as Double: return .decimal(Decimal(x))
            case let x as String: return Decimal(string: x).map { .decimal($0) }
            default: return nil
            }
        case .string:
            if let x = value as? String { return .string(x) }
            if let x = value as? Substring { return .string(String(x)) }
            return nil
        case .boolean:
            if let x = value as? Bool { return .bool(x) }
            return nil
        case .date:
            if let x = value as? Date { return .date(x) }
            return nil
        case .binaryData, .transformable:
            if let x = value as? Data { return .data(x) }
            if let x = value as? [UInt8] { return .data(Data(x)) }
            return nil
        case .uuid:
            if let x = value as? UUID { return .uuid(x) }
            return nil
        case .uri:
            if let x = value as? URL { return .uri(x) }
            return nil
        }
    }

    /// Normalises a value to the storage form of an attribute type (integers for integer types, doubles for
    /// floating types), or nil when it cannot be represented.
    func converted(to type: AttributeType) -> PropertyValue? {
        switch (self, type) {
        case (.null, _): return .null
        case (.integer(let v), .integer16), (.integer(let v), .integer32), (.integer(let v), .integer64):
            return type.integerRange.contains(v) ? self : nil
        case (.double(let v), .integer16), (.double(let v), .integer32), (.double(let v), .integer64):
            guard let i = Int64(exactly: v), type.integerRange.contains(i) else { return nil }
            return .integer(i)
        case (.integer(let v), .double), (.integer(let v), .float): return .double(Double(v))
        case (.double, .double), (.double, .float): return self
        case (.integer(let v), .decimal): return .decimal(Decimal(v))
        case (.double(let v), .decimal): return .decimal(Decimal(v))
        case (.decimal, .decimal): return self
        case (.string, .string): return self
        case (.bool, .boolean): return self
        case (.integer(let v), .boolean): return .bool(v != 0)
        case (.date, .date): return self
        case (.double(let v), .date): return .date(Date(timeIntervalSinceReferenceDate: v))
        case (.data, .binaryData), (.data, .transformable): return self
        case (.uuid, .uuid): return self
        case (.string(let s), .uuid): return UUID(uuidString: s).map { .uuid($0) }
        case (.uri, .uri): return self
        case (.string(let s), .uri): return URL(string: s).map { .uri($0) }
        default: return nil
        }
    }
}
