import Foundation
// The trace's model is the model file's (``TraceModel``): a replayer reads its entities without importing more.
@_exported import ModelSchema

/// The operation trace (Docs/calibration.md "The operation trace"): which context made which Core Data call, in
/// order, with its objects and values, written by a simulated run and replayed by a ``ReplayBackend``. JSON Lines:
/// a ``TraceHeader`` line, then one ``OperationRecord`` per line, the last one `end` with the run's counts.
///
/// Shared by every replayer: nothing here names ObjectGraph or Core Data.
public enum OperationTrace {
    /// The header's `format`.
    public static let format = "ambar-operations"
    /// The format's version, written in the header. A reader refuses any other.
    public static let version = 1
}

/// The first line of an operation trace.
public struct TraceHeader: Codable, Sendable, Equatable {
    public var format: String
    public var version: Int
    public var scenario: String
    public var variant: String
    public var seed: UInt64
    public var profile: String
    /// The model's versions, oldest first; a `coordinator` record names the one it opens the store with (a
    /// migration opens it with a later one).
    public var models: [TraceModel]

    public init(scenario: String, variant: String, seed: UInt64, profile: String, models: [TraceModel]) {
        format = OperationTrace.format
        version = OperationTrace.version
        self.scenario = scenario
        self.variant = variant
        self.seed = seed
        self.profile = profile
        self.models = models
    }
}

/// A model in the trace: one version's entities, of the one type a model file has them in (ModelSchema's
/// ``ModelFile/Entity``, which ObjectGraph reads too, so the two cannot differ by a field), with the version's name;
/// enough to build the same model with Core Data's `NSEntityDescription`s.
public struct TraceModel: Codable, Sendable, Equatable {
    /// An entity: name, attributes, relationships, uniqueness constraints, indexes, renaming, `parent`/`abstract`.
    public typealias Entity = ModelFile.Entity
    /// An attribute: type, optionality, default value, bounds, transient, indexed, renaming.
    public typealias Attribute = ModelFile.Attribute
    /// A relationship: destination, inverse, to-many, delete rule, counts, transient, renaming.
    public typealias Relationship = ModelFile.Relationship
    /// A fetch index (`NSFetchIndexDescription`): its name and elements.
    public typealias FetchIndex = ModelFile.FetchIndex
    /// A default value: a JSON string, number or Boolean.
    public typealias Scalar = ModelFile.Scalar

    /// The version's entities.
    public var entities: [Entity]
    /// The version's name when the model has several (a migration's `next`); a model with no name is the first.
    public var version: String?
    /// The version's named configurations (absent when it has none: the trace of such a model is unchanged).
    public var configurations: [ModelFile.Configuration]?

    /// Creates a trace model from one version's entities, its name and its configurations.
    public init(entities: [Entity], version: String? = nil, configurations: [ModelFile.Configuration]? = nil) {
        (self.entities, self.version) = (entities, version)
        self.configurations = configurations?.isEmpty == true ? nil : configurations
    }
}

/// An object the app let go (or a context, when `obj` is absent) while its thread was inside a call: the replay
/// drops its own reference at the same place (``OperationRecord/releasedBefore``, ``OperationRecord/releasedAfter``).
public struct TraceRelease: Codable, Sendable, Equatable {
    public var ctx: Int
    public var obj: ObjectRef?
    public init(ctx: Int, obj: ObjectRef?) { (self.ctx, self.obj) = (ctx, obj) }
}

/// An object as the trace names it: a row by entity and primary key (`Record#12`), or an object not yet saved by
/// the number the trace gave it at its insert (`Record~5`). A replayer maps both to its own objects: a row's key
/// is the key our store gave it, which the `saved` record after each save tells for each inserted object.
public struct ObjectRef: Hashable, Sendable, TextCodable, Comparable {
    public var entity: String
    /// The primary key of a saved row.
    public var key: Int64?
    /// The trace-local number of an object inserted and not saved yet.
    public var temporary: Int?

    public init(entity: String, key: Int64) { (self.entity, self.key, self.temporary) = (entity, key, nil) }
    public init(entity: String, temporary: Int) { (self.entity, self.key, self.temporary) = (entity, nil, temporary) }

    public var description: String { key.map { "\(entity)#\($0)" } ?? "\(entity)~\(temporary ?? 0)" }

    public init?(_ text: String) {
        if let hash = text.lastIndex(of: "#"), let key = Int64(text[text.index(after: hash)...]) {
            self.init(entity: String(text[..<hash]), key: key)
        } else if let tilde = text.lastIndex(of: "~"), let n = Int(text[text.index(after: tilde)...]) {
            self.init(entity: String(text[..<tilde]), temporary: n)
        } else {
            return nil
        }
    }

    public static var textForm: String { "an object reference (Entity#key or Entity~n)" }

    public static func < (a: ObjectRef, b: ObjectRef) -> Bool {
        (a.entity, a.key ?? -1, a.temporary ?? -1) < (b.entity, b.key ?? -1, b.temporary ?? -1)
    }
}

/// A value in the trace, as a tagged string: `i:5`, `d:1.5`, `dec:2.50`, `s:text`, `b:1`, `date:12.5` (seconds
/// since 2001), `data:<base64>`, `uuid:…`, `url:…`, `obj:Record#3`, `objs:Record#3,Record#4` or `null`.
public enum TraceValue: Hashable, Sendable, TextCodable {
    case null
    case integer(Int64)
    case double(Double)
    case decimal(String)
    case string(String)
    case bool(Bool)
    case date(Double)
    case data(Data)
    case uuid(String)
    case url(String)
    case object(ObjectRef)
    case objects([ObjectRef])

    public var description: String {
        switch self {
        case .null: return "null"
        case .integer(let v): return "i:\(v)"
        case .double(let v): return "d:\(v)"
        case .decimal(let v): return "dec:\(v)"
        case .string(let v): return "s:\(v)"
        case .bool(let v): return v ? "b:1" : "b:0"
        case .date(let v): return "date:\(v)"
        case .data(let v): return "data:\(v.base64EncodedString())"
        case .uuid(let v): return "uuid:\(v)"
        case .url(let v): return "url:\(v)"
        case .object(let r): return "obj:\(r)"
        case .objects(let rs): return "objs:" + rs.map(\.description).joined(separator: ",")
        }
    }

    public init?(_ text: String) {
        if text == "null" { self = .null; return }
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let tag = text[..<colon], body = String(text[text.index(after: colon)...])
        switch tag {
        case "i": guard let v = Int64(body) else { return nil }; self = .integer(v)
        case "d": guard let v = Double(body) else { return nil }; self = .double(v)
        case "dec": self = .decimal(body)
        case "s": self = .string(body)
        case "b": self = .bool(body == "1")
        case "date": guard let v = Double(body) else { return nil }; self = .date(v)
        case "data": guard let v = Data(base64Encoded: body) else { return nil }; self = .data(v)
        case "uuid": self = .uuid(body)
        case "url": self = .url(body)
        case "obj": guard let r = ObjectRef(body) else { return nil }; self = .object(r)
        case "objs":
            let refs = body.isEmpty ? [] : body.split(separator: ",").map { ObjectRef(String($0)) }
            guard !refs.contains(where: { $0 == nil }) else { return nil }
            self = .objects(refs.map { $0! })
        default: return nil
        }
    }

    public static var textForm: String { "a trace value" }
}

/// A fetch request as the trace writes it. The predicate is in the predicate format language, which both
/// ObjectGraph's parser and `NSPredicate(format:)` read (Docs/predicate-grammar.md).
public struct TraceFetchRequest: Codable, Sendable, Equatable {
    public var entity: String
    public var predicate: String?
    /// Sort keys, `-key` descending.
    public var sort: [String]?
    public var limit: Int?
    public var offset: Int?
    public var batchSize: Int?
    /// objects (default), ids, dictionaries, count.
    public var result: String?
    public var asFaults: Bool?
    public var includesPendingChanges: Bool?
    public var includesPropertyValues: Bool?
    public var propertiesToFetch: [String]?
    public var prefetch: [String]?
    public var refreshRefetched: Bool?

    public init(entity: String) { self.entity = entity }
}

/// A batch request: insert (rows of values), update (predicate and values) or delete (a fetch request).
public struct TraceBatchRequest: Codable, Sendable, Equatable {
    /// insert, update, delete.
    public var kind: String
    public var entity: String
    public var rows: [[String: TraceValue]]?
    public var predicate: String?
    public var values: [String: TraceValue]?
    /// statusOnly, count, objectIDs.
    public var result: String

    public init(kind: String, entity: String, result: String) { (self.kind, self.entity, self.result) = (kind, entity, result) }
}

/// One Core Data call (or one delivery the framework made by itself) of the traced run. A flat record: each
/// `op` uses the fields its documentation names (Docs/calibration.md has the table).
public struct OperationRecord: Codable, Sendable, Equatable {
    /// The record's place in the trace, from 1.
    public var n: Int
    public var op: String
    /// The thread that made the call in the simulated run (the actor, `worker-N`, `runner`): information only.
    public var thread: String?
    /// The context the call is made on (contexts are numbered from 1 as the trace meets them).
    public var ctx: Int?
    public var coord: Int?
    public var parent: Int?
    public var frc: Int?
    public var obj: ObjectRef?
    public var objs: [ObjectRef]?
    public var key: String?
    public var value: TraceValue?
    public var entity: String?
    public var request: TraceFetchRequest?
    public var batch: TraceBatchRequest?
    public var settings: [String: String]?
    public var inserted: [ObjectRef]?
    public var updated: [ObjectRef]?
    public var deleted: [ObjectRef]?
    public var contexts: [Int]?
    public var count: Int?
    public var flag: Bool?
    /// What the call returned: the objects or IDs (in order), a count, the error it threw.
    public var out: [ObjectRef]?
    public var outCount: Int?
    public var error: String?
    /// `save`: the insert numbers of the objects the save inserted, beside `out` (the rows it gave them).
    public var savedInserts: [ObjectRef]?
    /// `end`: the run's counts, by name (Docs/calibration.md "What the replay must reproduce"). A call or a
    /// delivery: what its thread counted while it ran (calls made inside it included).
    public var counts: [String: Int]?
    /// A call the app made inside another call of the same thread (an observer or delegate the library called
    /// out to): the `n` of the outermost call, and ``at`` its place in it.
    public var within: Int?
    /// A call inside another (``within``): the number of scheduling points and call-outs its thread had passed in
    /// the outermost call when it was made. `resume`: the point its thread had stopped at.
    public var at: Int?
    /// Objects (and contexts) the app let go before this call: the replay drops them before making it.
    public var releasedBefore: [TraceRelease]?
    /// Objects the app let go after this call returned, inside the call around it.
    public var releasedAfter: [TraceRelease]?

    public init(n: Int = 0, op: String) { (self.n, self.op) = (n, op) }
}

/// Reads and writes operation traces.
public enum TraceCoding {
    /// One JSON line, keys sorted (the same record is the same bytes on every run).
    public static func line(_ value: some Encodable) -> Data {
        (try? encoder().encode(value)) ?? Data()
    }

    /// Each value as a ``line(_:)`` followed by a newline, through one encoder (a trace has millions of records).
    public static func lines<T: Encodable>(_ values: [T]) -> Data {
        let encoder = encoder()
        var data = Data()
        for value in values {
            data.append((try? encoder.encode(value)) ?? Data())
            data.append(UInt8(ascii: "\n"))
        }
        return data
    }

    private static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // The trace's format writes every fetch index element as a mapping, `{"property": …}` at the least.
        encoder.userInfo[ModelFile.FetchIndex.Element.encodesAsMapping] = true
        return encoder
    }

    /// The header and records of a trace file; every problem names the file and line.
    public static func read(_ url: URL) throws -> (TraceHeader, [OperationRecord]) {
        let data: Data
        do { data = try Data(contentsOf: url) } catch { throw ReplayError("\(url.path): cannot be read: \(error.localizedDescription)") }
        return try read(data, name: url.path)
    }

    public static func read(_ data: Data, name: String) throws -> (TraceHeader, [OperationRecord]) {
        let decoder = JSONDecoder()
        var header: TraceHeader?
        var records: [OperationRecord] = []
        var lineNumber = 0
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            guard !line.isEmpty else { continue }
            if header == nil {
                struct Probe: Decodable { var format: String?; var version: Int? }
                let probe = try? decoder.decode(Probe.self, from: Data(line))
                guard probe?.format == OperationTrace.format else {
                    throw ReplayError("\(name):\(lineNumber): not an operation trace (its first line must have \"format\":\"\(OperationTrace.format)\")")
                }
                guard probe?.version == OperationTrace.version else {
                    throw ReplayError("\(name):\(lineNumber): operation trace version \(probe?.version.map(String.init) ?? "none"); this reader reads version \(OperationTrace.version)")
                }
                do { header = try decoder.decode(TraceHeader.self, from: Data(line)) } catch let error as DecodingError {
                    // Named by its path and the entity and property it reaches, as a model file's error is.
                    let description = ModelFileDecodingDescription(paths: .subscripts, namesAttributeTypes: true).describe(error, in: Data(line))
                    throw ReplayError("\(name):\(lineNumber): the header cannot be read: \(description)")
                } catch {
                    throw ReplayError("\(name):\(lineNumber): the header cannot be read: \(error)")
                }
                continue
            }
            do { records.append(try decoder.decode(OperationRecord.self, from: Data(line))) } catch {
                throw ReplayError("\(name):\(lineNumber): the record cannot be read: \(error)")
            }
        }
        guard let header else { throw ReplayError("\(name): empty: no header line") }
        return (header, records)
    }
}

/// A replay that cannot go on, or a trace that cannot be read: the message names the record (`record 512 (save)`)
/// or the file and line.
public struct ReplayError: Error, CustomStringConvertible, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension TraceValue {
    /// The value as Foundation has it (an `Int64`, `Double`, `Decimal`, `String`, `Bool`, `Date`, `Data`, `UUID`,
    /// `URL`, or nil): what a backend sets through key-value coding. Objects are the backend's to resolve.
    public func foundationValue() throws -> Any? {
        switch self {
        case .null: return nil
        case .integer(let i): return i
        case .double(let d): return d
        case .decimal(let d): return Decimal(string: d)
        case .string(let s): return s
        case .bool(let b): return b
        case .date(let t): return Date(timeIntervalSinceReferenceDate: t)
        case .data(let d): return d
        case .uuid(let u): return UUID(uuidString: u)
        case .url(let u): return URL(string: u)
        case .object, .objects: throw ReplayError("an object value outside a context")
        }
    }
}

/// A merge policy as the trace names it (`objectTrump`, `storeTrump+resurrect`, `error custom:MyPolicy`).
public struct TraceMergePolicy: Equatable, Sendable {
    /// error, storeTrump, objectTrump, overwrite, rollback.
    public var type: String
    /// ObjectGraph's resurrecting rule for ObjectTrump (an object deleted elsewhere and changed here is saved again).
    public var resurrect: Bool
    /// The class of an app's own policy, which no replayer can rebuild.
    public var custom: String?

    public init(_ name: String) {
        let parts = name.split(separator: " ", maxSplits: 1)
        let base = parts.first.map(String.init) ?? name
        resurrect = base.hasSuffix("+resurrect")
        type = resurrect ? String(base.dropLast("+resurrect".count)) : base
        custom = parts.count > 1 && parts[1].hasPrefix("custom:") ? String(parts[1].dropFirst("custom:".count)) : nil
    }
}

/// A trace type written as one string (its `description`) and read back with its failable `init?(_:)`.
public protocol TextCodable: Codable, CustomStringConvertible {
    init?(_ text: String)
    /// What a valid text looks like, for the error of one that is not.
    static var textForm: String { get }
}

extension TextCodable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = Self(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not \(Self.textForm): \(text)"))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
