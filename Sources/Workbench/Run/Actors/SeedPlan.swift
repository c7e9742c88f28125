import Foundation
import ObjectGraph
import SeededRandom
import Synchronization

/// How the workbench fills every property of a new object when the scenario's model comes from a model file
/// (Docs/scenarios.md "A model from a file"): a value for every stored attribute, within the attribute's own ranges,
/// lengths and pattern, and destinations for the relationships, inserted as needed and filled the same way. Made by
/// the loader, which refuses a model it cannot seed (at the scenario's `model` line); the shipped and inline models
/// have none, and their values stay those of ``Workload/value(for:spec:actor:op:rng:)``.
///
/// Every value is drawn from the generator it is given, in the model's order of attributes and relationships: a run
/// stores the same values on every run.
struct SeedPlan: Sendable, Codable, Equatable {
    /// Why an entity of the model cannot be seeded: the entity, the property, and what to do.
    struct Refusal: Error, CustomStringConvertible {
        var entity: String
        var property: String?
        var message: String
        var description: String { "\(entity)\(property.map { ".\($0)" } ?? ""): \(message)" }
    }

    /// The values one attribute takes.
    enum Values: Sendable, Codable, Equatable {
        case integer(min: Int64, max: Int64)
        case real(min: Double, max: Double)
        /// Decimals in hundredths.
        case decimal(minCents: Int64, maxCents: Int64)
        case string(minLength: Int, maxLength: Int)
        /// Strings of a simple pattern (``PatternAtom``).
        case pattern([PatternAtom])
        /// A constrained string with a pattern that takes digits: the object's number, zero-padded to `minLength`.
        case numbered(minLength: Int)
        /// Whole seconds since the reference date.
        case date(min: Int64, max: Int64)
        case boolean, uuid, uri
        case binary(minLength: Int, maxLength: Int)
        case transformable
    }

    /// One element of a simple pattern: a character among `characters`, from `min` to `max` times.
    struct PatternAtom: Sendable, Codable, Equatable {
        var characters: String
        var min: Int
        var max: Int
        /// Whether the pattern sets no upper count (`+`, `*`, `{n,}`): `max` is a short draw, which an attribute's
        /// lengths may stretch.
        var isOpen = false
    }

    struct AttributeSeed: Sendable, Codable, Equatable {
        var name: String
        var values: Values
        /// In a uniqueness constraint: the value is made from the object's number, so no two objects share it.
        var unique: Bool
    }

    struct RelationshipSeed: Sendable, Codable, Equatable {
        var name: String
        var toMany: Bool
        /// An ordered to-many: its destinations are set as an array, in the order made.
        var ordered: Bool
        /// Destinations made for each object: 1 for a to-one.
        var count: Int
        /// The entity the destinations are inserted as (a concrete one: the destination or its first concrete
        /// sub-entity).
        var destination: String
        var inverse: String
    }

    struct EntitySeed: Sendable, Codable, Equatable {
        var name: String
        var attributes: [AttributeSeed]
        /// The scenario's entity: every relationship outside its own hierarchy. A destination: its required ones.
        var relationships: [RelationshipSeed]
        /// The top of the entity's hierarchy: objects of one hierarchy are numbered together (a constraint of a
        /// parent holds across its sub-entities' rows).
        var hierarchy: String
    }

    /// The scenario's entity.
    let entity: String
    /// Every entity an object may be made of, by name (looked up, never iterated).
    private(set) var entities: [String: EntitySeed] = [:]

    /// A number for each new object of a destination's hierarchy, for constrained values (the scenario's own records
    /// are numbered by their key).
    final class Numbers: Sendable {
        private let next = Mutex<[String: Int64]>([:])
        func take(_ hierarchy: String) -> Int64 {
            next.withLock { counters in
                let n = (counters[hierarchy] ?? 0) + 1
                counters[hierarchy] = n
                return n
            }
        }
    }

    /// Plans the seeding of `entity` of `file` (a model without versions, the version the store is made with).
    /// - Parameter givenValues: attributes of the entity whose values the scenario's `values:` gives.
    /// - Throws: ``Refusal`` for an attribute whose values cannot be made (a pattern beyond simple ones, a range that
    ///   holds no value) or a relationship that cannot be filled (a required one back to the entity's own records, a
    ///   chain of required relationships that never ends, an abstract destination without a concrete sub-entity).
    init(file: ModelFile, entity: String, givenValues: Set<String> = []) throws {
        self.entity = entity
        let model = ModelView(file)
        let root = try seed(of: entity, model: model, givenValues: givenValues, root: true)
        entities[entity] = root
        var path: [String] = [entity]
        for relationship in root.relationships {
            try planDestination(relationship, model: model, path: &path)
        }
    }

    /// The entities of a model file by name, with each one's hierarchy.
    private struct ModelView {
        let file: ModelFile
        let byName: [String: ModelFile.Entity]
        init(_ file: ModelFile) {
            self.file = file
            byName = Dictionary(file.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        }

        func top(of name: String) -> String {
            var current = name, seen: Set<String> = [name]
            while let parent = byName[current]?.parent, seen.insert(parent).inserted { current = parent }
            return current
        }

        /// The entity, or its first concrete sub-entity in the model's order (searched breadth first).
        func concrete(_ name: String) -> String? {
            var queue = [name], index = 0
            while index < queue.count {
                let candidate = queue[index]
                index += 1
                if byName[candidate]?.abstract != true { return candidate }
                queue += file.entities.filter { $0.parent == candidate }.map(\.name)
            }
            return nil
        }

        func constrained(_ name: String) -> Set<String> { SeedPlan.constrained(name, in: file) }
    }

    /// The attributes of the entity's uniqueness constraints, its parents' included.
    static func constrained(_ name: String, in file: ModelFile) -> Set<String> {
        var names = Set<String>(), seen = Set<String>()
        var next = file.entities.first { $0.name == name }
        while let entity = next, seen.insert(entity.name).inserted {
            for constraint in entity.uniquenessConstraints ?? [] { names.formUnion(constraint) }
            next = entity.parent.flatMap { parent in file.entities.first { $0.name == parent } }
        }
        return names
    }

    /// The seed of one entity: its stored attributes, and the relationships it fills (all but those into the
    /// scenario's hierarchy for the scenario's entity, the required ones for a destination).
    private func seed(of name: String, model: ModelView, givenValues: Set<String>, root: Bool) throws -> EntitySeed {
        let constrained = model.constrained(name)
        var attributes: [AttributeSeed] = []
        for attribute in model.file.allAttributes(of: name) where attribute.transient != true {
            let unique = constrained.contains(attribute.name)
            // Values the scenario gives (`values:`) come from there.
            if root, givenValues.contains(attribute.name) { continue }
            attributes.append(AttributeSeed(name: attribute.name, values: try Self.values(of: attribute, entity: name, unique: unique), unique: unique))
        }
        let home = model.top(of: entity)
        var relationships: [RelationshipSeed] = []
        for relationship in model.file.allRelationships(of: name) where relationship.transient != true {
            let toMany = relationship.toMany ?? false
            let required = toMany ? (relationship.minCount ?? 0) > 0 || relationship.optional == false : relationship.optional == false
            if !root && !required { continue }
            // The scenario's own records are the importer's: a link of the scenario's entity to them is left empty
            // (a destination's, unless it is the inverse that links it back, is refused by ``planDestination``).
            if root, model.top(of: relationship.destination) == home {
                guard !required else { throw Self.intoOwnRecords(name, relationship.name, relationship.destination) }
                continue
            }
            guard let destination = model.concrete(relationship.destination) else {
                throw Refusal(entity: name, property: relationship.name, message: "\(relationship.destination) is abstract and has no concrete sub-entity to insert")
            }
            var count = 1
            if toMany {
                // A to-many gets its minimum count, and one destination when it has none (Docs/scenarios.md).
                count = Swift.max(relationship.minCount ?? 0, 1)
                if let max = relationship.maxCount, max > 0 { count = Swift.min(count, max) }
            }
            relationships.append(RelationshipSeed(name: relationship.name, toMany: toMany, ordered: relationship.ordered ?? false, count: count,
                                                  destination: destination, inverse: relationship.inverse))
        }
        return EntitySeed(name: name, attributes: attributes, relationships: relationships, hierarchy: model.top(of: name))
    }

    /// Plans the destination of `relationship` and, in turn, its required relationships but the inverse; `path` is
    /// the chain of entities being filled, which a required relationship must not loop back into.
    private mutating func planDestination(_ relationship: RelationshipSeed, model: ModelView, path: inout [String]) throws {
        let name = relationship.destination
        if entities[name] == nil { entities[name] = try seed(of: name, model: model, givenValues: [], root: false) }
        guard let destination = entities[name] else { return }
        path.append(name)
        defer { path.removeLast() }
        for next in destination.relationships where next.name != relationship.inverse {
            if model.top(of: next.destination) == model.top(of: entity) { throw Self.intoOwnRecords(name, next.name, next.destination) }
            if path.contains(next.destination) {
                throw Refusal(entity: name, property: next.name, message: "required relationships loop back (\((path + [next.destination]).joined(separator: " → "))): no object of the chain can be saved before the others; make one of them optional")
            }
            try planDestination(next, model: model, path: &path)
        }
    }

    static func intoOwnRecords(_ entity: String, _ relationship: String, _ destination: String) -> Refusal {
        Refusal(entity: entity, property: relationship, message: "a required relationship to \(destination), of the scenario's own entity: the workbench inserts those records itself and cannot seed this link (make it optional, or pick another entity)")
    }

    // MARK: Values

    /// The widest span drawn for a number attribute without bounds, and the longest string or data drawn.
    static let integerSpan = 1_000_000.0, realSpan = 10_000.0, longestDrawn = 256
    /// Dates without bounds: a year from 2023-03-08.
    static let firstDate = 700_000_000.0, dateSpan = 31_536_000.0

    /// The values `attribute` takes.
    static func values(of attribute: ModelFile.Attribute, entity: String, unique: Bool) throws -> Values {
        func refuse(_ message: String) -> Refusal { Refusal(entity: entity, property: attribute.name, message: message) }
        func bounds(span: Double, floor: Double, ceiling: Double) -> (Double, Double) {
            // Without a minimum: from 0 (1 for a constrained value, the first record's number), or a span below a
            // maximum under that.
            let start: Double = unique ? 1 : 0
            let lo = attribute.minValue ?? attribute.maxValue.flatMap { $0 < start ? $0 - span : nil } ?? start
            let hi = attribute.maxValue ?? lo + span
            return (Swift.max(lo, floor), Swift.min(hi, ceiling))
        }
        switch attribute.type {
        case .integer16, .integer32, .integer64:
            let range = attribute.type.integerBounds
            let (lo, hi) = bounds(span: integerSpan, floor: range.lowerBound, ceiling: range.upperBound)
            guard lo.rounded(.up) <= hi.rounded(.down) else { throw refuse("no \(attribute.type.rawValue) lies within \(lo)...\(hi)") }
            return .integer(min: Int64(lo.rounded(.up)), max: Int64(hi.rounded(.down)))
        case .double, .float:
            let limit = attribute.type == .float ? Double(Float.greatestFiniteMagnitude) : Double.greatestFiniteMagnitude / 4
            let (lo, hi) = bounds(span: realSpan, floor: -limit, ceiling: limit)
            guard lo <= hi else { throw refuse("no number lies within \(lo)...\(hi)") }
            return .real(min: lo, max: hi)
        case .decimal:
            let (lo, hi) = bounds(span: realSpan, floor: -9e13, ceiling: 9e13)
            guard (lo * 100).rounded(.up) <= (hi * 100).rounded(.down) else { throw refuse("no decimal in hundredths lies within \(lo)...\(hi)") }
            return .decimal(minCents: Int64((lo * 100).rounded(.up)), maxCents: Int64((hi * 100).rounded(.down)))
        case .string:
            if let pattern = attribute.regularExpression {
                guard !unique else { return try numbered(attribute, pattern: pattern, refuse: refuse) }
                return .pattern(try fit(try atoms(of: pattern, refuse: refuse), within: attribute, refuse: refuse))
            }
            let (lo, hi) = lengths(attribute, lower: 8, upper: 24)
            guard lo <= hi else { throw refuse("minLength \(lo) is greater than maxLength \(hi)") }
            return .string(minLength: lo, maxLength: hi)
        case .date:
            let (lo, hi) = (attribute.minValue ?? attribute.maxValue.map { $0 - dateSpan } ?? firstDate, attribute.maxValue ?? (attribute.minValue ?? firstDate) + dateSpan)
            guard lo.rounded(.up) <= hi.rounded(.down), abs(lo) < 1e15, abs(hi) < 1e15 else { throw refuse("no whole second lies within \(lo)...\(hi)") }
            return .date(min: Int64(lo.rounded(.up)), max: Int64(hi.rounded(.down)))
        case .boolean:
            guard !unique else { throw refuse("a boolean in a uniqueness constraint holds two objects at most: the workbench cannot seed it") }
            return .boolean
        case .uuid: return .uuid
        case .uri: return .uri
        case .binaryData:
            let (lo, hi) = lengths(attribute, lower: 16, upper: 64)
            guard lo <= hi else { throw refuse("minLength \(lo) is greater than maxLength \(hi)") }
            return .binary(minLength: lo, maxLength: hi)
        case .transformable:
            guard !unique else { throw refuse("a Transformable in a uniqueness constraint: the workbench cannot make unique values of it") }
            return .transformable
        }
    }

    /// Lengths drawn for a string or data attribute: its own, else `lower...upper`, at most ``longestDrawn`` above
    /// the shortest (a `maxLength` of a million draws no megabyte strings).
    static func lengths(_ attribute: ModelFile.Attribute, lower: Int, upper: Int) -> (Int, Int) {
        let hi = attribute.maxLength ?? Swift.max(attribute.minLength ?? 0, upper)
        let lo = attribute.minLength ?? Swift.min(lower, hi)
        return (lo, Swift.min(hi, lo + longestDrawn))
    }

    /// The value of `seed` for the object numbered `number` of `entity`.
    static func value(_ seed: AttributeSeed, entity: String, number: Int64, rng: inout SeededGenerator) -> Any {
        switch seed.values {
        case .integer(let lo, let hi):
            guard seed.unique else { return Int64.random(in: lo...hi, using: &rng) }
            let (value, overflow) = lo.addingReportingOverflow(number - 1)
            return overflow ? hi : value
        case .real(let lo, let hi):
            if seed.unique { return lo + Double(number - 1) }
            return lo == hi ? lo : Double.random(in: lo...hi, using: &rng)
        case .decimal(let lo, let hi):
            if seed.unique { return Decimal(lo) / 100 + Decimal(number - 1) }
            return Decimal(Int64.random(in: lo...hi, using: &rng)) / 100
        case .string(let lo, let hi):
            guard seed.unique else { return letters(Int.random(in: lo...hi, using: &rng), rng: &rng) }
            let digits = String(number)
            let length = Int.random(in: Swift.max(lo, digits.count)...Swift.max(hi, digits.count), using: &rng)
            return letters(length - digits.count, rng: &rng) + digits
        case .numbered(let lo):
            let digits = String(number)
            return String(repeating: "0", count: Swift.max(0, lo - digits.count)) + digits
        case .pattern(let atoms):
            var text = ""
            for atom in atoms {
                let characters = Array(atom.characters)
                for _ in 0..<Int.random(in: atom.min...atom.max, using: &rng) { text.append(characters[Int.random(in: 0..<characters.count, using: &rng)]) }
            }
            return text
        case .date(let lo, let hi):
            let seconds = seed.unique ? lo &+ (number - 1) : Int64.random(in: lo...hi, using: &rng)
            return Date(timeIntervalSinceReferenceDate: Double(seconds))
        case .boolean:
            return Bool.random(using: &rng)
        case .uuid:
            // From the seeded generator, not UUID(): the same run stores the same values. A constrained one carries
            // the object's number in its first half.
            let (a, b) = (seed.unique ? UInt64(bitPattern: number) : rng.next(), rng.next())
            return UUID(uuid: withUnsafeBytes(of: (a, b)) { raw in raw.load(as: uuid_t.self) })
        case .uri:
            return URL(string: "https://example.invalid/\(entity)/\(seed.unique ? number : Int64(UInt32.random(in: 0...UInt32.max, using: &rng)))")!
        case .binary(let lo, let hi):
            let length = Int.random(in: lo...hi, using: &rng)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...UInt8.max, using: &rng) }
            if seed.unique { for (i, byte) in withUnsafeBytes(of: number.bigEndian, Array.init).enumerated() where i < bytes.count { bytes[i] = byte } }
            return Data(bytes)
        case .transformable:
            let count = Int.random(in: 1...3, using: &rng)
            // An array of strings, which Core Data's default secure unarchiving transformer accepts
            // (Docs/coredata-behaviour.md §13).
            return (0..<count).map { _ in letters(Int.random(in: 4...12, using: &rng), rng: &rng) }
        }
    }

    /// `count` seeded lowercase letters.
    static func letters(_ count: Int, rng: inout SeededGenerator) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz")
        return String((0..<Swift.max(count, 0)).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &rng)] })
    }

    /// The value of the scenario entity's attribute `name` for the record numbered `number`; nil for an attribute
    /// the plan leaves to `values:`.
    func value(of name: String, number: Int64, rng: inout SeededGenerator) -> Any? {
        guard let seed = entities[entity]?.attributes.first(where: { $0.name == name }) else { return nil }
        return Self.value(seed, entity: entity, number: number, rng: &rng)
    }

    // MARK: Filling objects

    /// Sets every planned attribute of `object` (an object of the scenario's entity, numbered `number`) but those
    /// in `skipping`, then fills its relationships but those in `skipping`, inserting and filling destinations.
    /// Call on the object's queue.
    func fill(_ object: ManagedObject, number: Int64, skipping: Set<String>, numbers: Numbers, rng: inout SeededGenerator) throws {
        guard let seed = entities[entity] else { return }
        try fill(object, seed: seed, number: number, skipping: skipping, numbers: numbers, rng: &rng)
    }

    private func fill(_ object: ManagedObject, seed: EntitySeed, number: Int64, skipping: Set<String>, numbers: Numbers, rng: inout SeededGenerator) throws {
        for attribute in seed.attributes where !skipping.contains(attribute.name) {
            try object.setValue(Self.value(attribute, entity: seed.name, number: number, rng: &rng), forKey: attribute.name)
        }
        guard let context = object.managedObjectContext else { return }
        for relationship in seed.relationships where !skipping.contains(relationship.name) {
            guard let destinationSeed = entities[relationship.destination] else { continue }
            var made: [ManagedObject] = []
            for _ in 0..<relationship.count {
                let destination = try context.insertNewObject(forEntityName: relationship.destination)
                try fill(destination, seed: destinationSeed, number: numbers.take(destinationSeed.hierarchy), skipping: [relationship.inverse],
                         numbers: numbers, rng: &rng)
                made.append(destination)
            }
            // An ordered to-many takes its destinations as an array, in the order made.
            try object.setValue(relationship.toMany ? made : made.first, forKey: relationship.name)
        }
    }
}

extension AttributeType {
    /// An integer type's values as doubles.
    var integerBounds: ClosedRange<Double> {
        switch self {
        case .integer16: return Double(Int16.min)...Double(Int16.max)
        case .integer32: return Double(Int32.min)...Double(Int32.max)
        // Doubles hold integers exactly up to 2^53.
        default: return -9e15...9e15
        }
    }
}

extension SeedPlan {
    /// The characters `.`, `\w` and `\d` stand for.
    static let lowercase = "abcdefghijklmnopqrstuvwxyz", uppercase = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", digits = "0123456789"
    /// The largest count and character class a simple pattern may have.
    static let largestCount = 1_000, largestClass = 4_096

    /// A simple pattern's elements: character classes (`[A-Z0-9_]`, ranges and characters), escapes (`\d`, `\w`,
    /// `\s`, an escaped character), `.` (a letter or digit) and other characters, each with a count (`{3}`,
    /// `{2,5}`, `{2,}`, `+`, `*`, `?`), between an optional `^` and `$`. Anything else (groups, alternatives, a
    /// negated class) is refused, and so is a pattern whose generated strings do not match it whole.
    /// `atoms` with their counts narrowed so that every string drawn lies within the attribute's `minLength` and
    /// `maxLength`: the room above the minimum counts goes to the first atoms up to `maxLength`, then the first atoms'
    /// minimums rise until they reach `minLength`.
    static func fit(_ atoms: [PatternAtom], within attribute: ModelFile.Attribute, refuse: (String) -> Refusal) throws -> [PatternAtom] {
        guard attribute.minLength != nil || attribute.maxLength != nil else { return atoms }
        let (lo, hi) = (attribute.minLength ?? 0, attribute.maxLength ?? Int.max)
        var fitted = atoms
        for i in fitted.indices where fitted[i].isOpen { fitted[i].max = Swift.max(fitted[i].max, fitted[i].min + Swift.min(hi, longestDrawn)) }
        var room = hi - atoms.reduce(0) { $0 + $1.min }
        guard room >= 0 else { throw refuse("its pattern makes strings longer than its maxLength \(hi)") }
        for i in fitted.indices {
            let extra = Swift.min(fitted[i].max - fitted[i].min, room)
            fitted[i].max = fitted[i].min + extra
            room -= extra
        }
        var need = lo - fitted.reduce(0) { $0 + $1.min }
        for i in fitted.indices where need > 0 {
            let raise = Swift.min(fitted[i].max - fitted[i].min, need)
            fitted[i].min += raise
            need -= raise
        }
        guard need <= 0 else { throw refuse("its pattern makes no string as long as its minLength \(lo) within its maxLength") }
        return fitted
    }

    /// A constrained string with a pattern: unique values are the objects' numbers, zero-padded to the attribute's
    /// `minLength`, when the pattern takes them (`[A-Z0-9-]+` does, `[A-Z]{3}` does not).
    static func numbered(_ attribute: ModelFile.Attribute, pattern: String, refuse: (String) -> Refusal) throws -> Values {
        let (lo, hi) = (attribute.minLength ?? 1, attribute.maxLength ?? Int.max)
        let seed = AttributeSeed(name: attribute.name, values: .numbered(minLength: lo), unique: true)
        var rng = SeededGenerator(seed: 1)
        let samples = [1, 10, 99_999].map { value(seed, entity: "", number: $0, rng: &rng) as? String ?? "" }
        guard let whole = try? NSRegularExpression(pattern: "^(?:\(pattern))$"),
              samples.allSatisfy({ $0.count <= hi && whole.firstMatch(in: $0, range: NSRange($0.startIndex..., in: $0)) != nil }) else {
            throw refuse("is in a uniqueness constraint and its pattern \(pattern) does not take the objects' numbers (digits, zero-padded to minLength \(lo)): the workbench cannot make unique values of it")
        }
        return .numbered(minLength: lo)
    }

    static func atoms(of pattern: String, refuse: (String) -> Refusal) throws -> [PatternAtom] {
        let unsupported = refuse("the pattern \(pattern) is beyond the simple patterns the workbench generates (character classes, escapes and characters, each with a count, such as [A-Z]{3}[0-9]+): give its values in the scenario's `values:`, or a simpler pattern")
        var chars = Array(pattern)
        if chars.first == "^" { chars.removeFirst() }
        if chars.last == "$", chars.count < 2 || chars[chars.count - 2] != "\\" { chars.removeLast() }
        func escaped(_ c: Character) throws -> String {
            switch c {
            case "d": return digits
            case "w": return lowercase + uppercase + digits + "_"
            case "s": return " "
            default:
                guard !c.isLetter, !c.isNumber else { throw unsupported }
                return String(c)
            }
        }
        var atoms: [PatternAtom] = []
        var i = 0
        while i < chars.count {
            var set = ""
            switch chars[i] {
            case "[":
                i += 1
                guard i < chars.count, chars[i] != "^" else { throw unsupported }
                while i < chars.count, chars[i] != "]" {
                    var first = String(chars[i])
                    if chars[i] == "\\" {
                        guard i + 1 < chars.count else { throw unsupported }
                        i += 1
                        first = try escaped(chars[i])
                    }
                    if first.count == 1, i + 2 < chars.count, chars[i + 1] == "-", chars[i + 2] != "]" {
                        guard let lo = first.unicodeScalars.first?.value, let hi = chars[i + 2].unicodeScalars.first?.value,
                              lo <= hi, hi - lo < UInt32(largestClass) else { throw unsupported }
                        set += String(String.UnicodeScalarView((lo...hi).compactMap(Unicode.Scalar.init)))
                        i += 3
                    } else {
                        set += first
                        i += 1
                    }
                }
                guard i < chars.count else { throw unsupported }
            case "\\":
                guard i + 1 < chars.count else { throw unsupported }
                i += 1
                set = try escaped(chars[i])
            case ".": set = lowercase + uppercase + digits
            case "(", ")", "|", "{", "}", "*", "+", "?", "^", "$", "]": throw unsupported
            default: set = String(chars[i])
            }
            i += 1
            var (lo, hi) = (1, 1)
            var isOpen = false
            if i < chars.count {
                switch chars[i] {
                case "+": (lo, hi, i, isOpen) = (1, 4, i + 1, true)
                case "*": (lo, hi, i, isOpen) = (0, 3, i + 1, true)
                case "?": (lo, hi, i) = (0, 1, i + 1)
                case "{":
                    guard let close = chars[i...].firstIndex(of: "}") else { throw unsupported }
                    let parts = String(chars[(i + 1)..<close]).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                    guard (1...2).contains(parts.count), let n = Int(parts[0]) else { throw unsupported }
                    lo = n
                    hi = parts.count == 1 ? n : (parts[1].isEmpty ? n + 3 : Int(parts[1]) ?? -1)
                    isOpen = parts.count == 2 && parts[1].isEmpty
                    i = close + 1
                default: break
                }
            }
            guard lo >= 0, lo <= hi, hi <= largestCount, !set.isEmpty, set.count <= largestClass else { throw unsupported }
            // A lazy or possessive count, or a count of a count.
            if i < chars.count, "?+*{".contains(chars[i]) { throw unsupported }
            // Each character once, in the order written (the draws index this order).
            var seen = Set<Character>()
            atoms.append(PatternAtom(characters: String(set.filter { seen.insert($0).inserted }), min: lo, max: hi, isOpen: isOpen))
        }
        guard let whole = try? NSRegularExpression(pattern: "^(?:\(pattern))$") else {
            throw refuse("the pattern \(pattern) is not a regular expression")
        }
        var rng = SeededGenerator(seed: 1)
        for _ in 0..<8 {
            let sample = value(AttributeSeed(name: "", values: .pattern(atoms), unique: false), entity: "", number: 1, rng: &rng) as? String ?? ""
            guard whole.firstMatch(in: sample, range: NSRange(sample.startIndex..., in: sample)) != nil else { throw unsupported }
        }
        return atoms
    }
}
