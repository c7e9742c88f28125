import Foundation
import ObjectGraph
import Synchronization

/// Workbench draws: one sub-seed per actor so runs replay exactly.
extension SeededGenerator {
    /// The sub-seed of a named actor.
    static func seed(_ base: UInt64, _ name: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325 ^ base
        for b in name.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }

    /// A key in 1...n drawn from `distribution`; `hot` is the hot set's size (the visible objects).
    mutating func key(in n: Int64, _ distribution: Distribution, hot: Int64) -> Int64 {
        guard n > 0 else { return 0 }
        switch distribution {
        case .uniform:
            return Int64.random(in: 1...n, using: &self)
        case .zipfian:
            // Density ∝ 1/k (Zipf exponent 1): P(key ≤ x) = ln x / ln n.
            let u = Double.random(in: 0..<1, using: &self)
            return min(n, max(1, Int64(pow(Double(n), u))))
        case .hotspot:
            let h = max(1, min(n, hot))
            return Double.random(in: 0..<1, using: &self) < 0.9 ? Int64.random(in: 1...h, using: &self) : Int64.random(in: 1...n, using: &self)
        }
    }

    /// `count` distinct keys.
    mutating func keys(_ count: Int, in n: Int64, _ distribution: Distribution, hot: Int64) -> [Int64] {
        guard n > 0 else { return [] }
        let target = min(Int64(count), n)
        var chosen = Set<Int64>()
        var order: [Int64] = []
        var attempts = 0
        while Int64(chosen.count) < target {
            attempts += 1
            var k = key(in: n, distribution, hot: hot)
            if attempts > count * 20 { k = Int64.random(in: 1...n, using: &self) }
            if chosen.insert(k).inserted { order.append(k) }
        }
        return order
    }
}

/// State shared by the actors of one variant.
final class Workload: @unchecked Sendable {  // immutable except the Mutex-guarded parts
    let scenario: Scenario
    let stack: WorkbenchStack
    let recorder: RunRecorder
    let main: SimulatedMainThread
    let entity: EntityDescription
    let fieldTypes: [(String, AttributeType)]
    private let maxKey = Mutex<Int64>(0)
    private let visible = Mutex<[ManagedObjectID]>([])
    private let batchTouched = Mutex<Set<Int64>>([])
    let viewerCount: Int

    init(scenario: Scenario, stack: WorkbenchStack, recorder: RunRecorder, main: SimulatedMainThread, model: ManagedObjectModel) {
        self.scenario = scenario
        self.stack = stack
        self.recorder = recorder
        self.main = main
        entity = model.entity(named: scenario.model.entity)!
        fieldTypes = scenario.model.fields.map { ($0, model.entity(named: scenario.model.entity)!.attribute(named: $0)!.type) }
        viewerCount = scenario.phases.flatMap(\.actors).compactMap { if case .viewer(let v) = $0 { return v.visibleObjects } else { return nil } }.max() ?? 20
    }

    /// The integer id attribute; nil when the entity has none (the loader then refuses actors that need it).
    var idKey: String? { scenario.model.idKey }
    /// Attributes the importer sets on a new record: the edited fields, then those `model.values` names.
    var importedFields: [(String, AttributeType)] {
        fieldTypes + scenario.model.values.keys.sorted().filter { key in !fieldTypes.contains { $0.0 == key } }.compactMap { key in
            entity.attribute(named: key).map { (key, $0.type) }
        }
    }
    var existingKeys: Int64 { maxKey.withLock { $0 } }

    /// Reserves `n` new unique ids.
    func allocateKeys(_ n: Int) -> ClosedRange<Int64>? {
        guard n > 0 else { return nil }
        return maxKey.withLock { max in
            let range = (max + 1)...(max + Int64(n))
            max += Int64(n)
            return range
        }
    }

    var visibleIDs: [ManagedObjectID] {
        get { visible.withLock { $0 } }
        set { visible.withLock { $0 = newValue } }
    }

    func markBatchTouched<S: Sequence>(_ keys: S) where S.Element == Int64 { batchTouched.withLock { $0.formUnion(keys) } }
    var batchTouchedKeys: Set<Int64> { batchTouched.withLock { $0 } }

    /// A deterministic value for a field, from the actor and its operation number; `model.values` shapes it.
    func value(for type: AttributeType, field: String? = nil, actor: String, op: Int, rng: inout SeededGenerator) -> Any {
        Self.value(for: type, spec: field.flatMap { scenario.model.values[$0] }, actor: actor, op: op, rng: &rng)
    }

    /// The value of ``value(for:field:actor:op:rng:)`` for a given spec.
    static func value(for type: AttributeType, spec: ValueSpec?, actor: String, op: Int, rng: inout SeededGenerator) -> Any {
        if let spec {
            if let length = spec.length {
                let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789 ")
                return String((0..<length).map { _ in letters[Int.random(in: 0..<letters.count, using: &rng)] })
            }
            if let lo = spec.min, let hi = spec.max {
                let x = lo == hi ? lo : Double.random(in: lo...hi, using: &rng)
                switch type {
                case .integer16: return Int16(x.rounded())
                case .integer32: return Int32(x.rounded())
                case .integer64: return Int64(x.rounded())
                case .decimal: return Decimal(x)
                default: return x
                }
            }
        }
        switch type {
        case .string: return "\(actor)-\(op)-\(UInt16.random(in: 0...UInt16.max, using: &rng))"
        case .double, .float: return Double(Int.random(in: 0...1_000_000, using: &rng)) / 100
        case .decimal: return Decimal(Int.random(in: 0...1_000_000, using: &rng))
        case .integer16: return Int16.random(in: 0...Int16.max, using: &rng)
        case .integer32: return Int32.random(in: 0...Int32.max, using: &rng)
        case .integer64: return Int64(Int.random(in: 0...1_000_000, using: &rng))
        case .boolean: return Bool.random(using: &rng)
        case .date: return Date(timeIntervalSinceReferenceDate: Double(op))
        case .uuid:
            // From the seeded generator, not UUID(): the same run stores the same values.
            let (a, b) = (rng.next(), rng.next())
            return UUID(uuid: withUnsafeBytes(of: (a, b)) { raw in raw.load(as: uuid_t.self) })
        case .uri: return URL(string: "https://example.invalid/\(actor)/\(op)")!
        case .binaryData: return Data([UInt8(op & 0xff)])
        }
    }

    /// Write events for objects after a committed save: committed values are the saved snapshot.
    func events(_ objects: [(ManagedObject, [String: String])], actor: String, role: String, policy: String? = nil) -> [WriteEvent] {
        let policy = policy ?? stack.policies[role] ?? "error"
        let now = Clock.now()
        let step = Scheduler.currentStep
        var result: [WriteEvent] = []
        for (object, intended) in objects where !object.objectID.isTemporaryID && !object.isDeleted {
            guard let key = object.objectID.primaryKey else { continue }
            if object.isFault {
                // The policy discarded this object's changes (Rollback refreshes it): nothing of it was written.
                for (field, value) in intended {
                    result.append(WriteEvent(actor: actor, role: role, policy: policy, key: key, field: field, intended: value,
                                             committed: "<discarded>", version: -1, time: now, step: step))
                }
                continue
            }
            for (field, _) in fieldTypes {
                // The committed snapshot, not the current values: a parent context may already hold another
                // child's pushed, unsaved changes.
                let committed = object.entity.slotIndex(of: field).flatMap { slot in object.original.map { $0.values[slot].description } }
                    ?? object.primitiveValue(forKey: field).description
                result.append(WriteEvent(actor: actor, role: role, policy: policy, key: key, field: field, intended: intended[field],
                                         committed: committed, version: object.snapshotVersion, time: now, step: step))
            }
        }
        return result
    }

    /// Events for a nested stack: the committed rows live in the root context once the parents saved.
    func committedEvents(_ intended: [ManagedObjectID: [String: String]], actor: String, role: String) -> [WriteEvent] {
        guard let root = stack.committedContext else { return [] }
        return root.performAndWait {
            // Clean objects of the root are held weakly and may be gone: fault them back in (row cache).
            let objects = intended.compactMap { id, values -> (ManagedObject, [String: String])? in
                let object = root.object(with: id)
                return (try? object.materialize()) == nil ? nil : (object, values)
            }
            // The policy that settled conflicts at the store is the committing context's (semantics §1.7: a push
            // meets none).
            return events(objects, actor: actor, role: role, policy: stack.committingPolicy?.name)
        }
    }

    func fetchByKeys(_ keys: [Int64], in context: ManagedObjectContext) throws -> [ManagedObject] {
        guard !keys.isEmpty else { return [] }
        var objects: [ManagedObject] = []
        for start in stride(from: 0, to: keys.count, by: 500) {
            let chunk = Array(keys[start..<min(start + 500, keys.count)])
            // Sorted, so each key gets the same generated value on every run.
            let idKey = self.idKey!  // the loader refuses actors that pick records by number without one
            var request = FetchRequest(entityName: entity.name, predicate: .in(idKey, chunk.map { $0 as Any }), sortDescriptors: [ObjectSortDescriptor(idKey)])
            request.returnsObjectsAsFaults = false
            objects += try context.fetch(request)
        }
        return objects
    }
}
