import Foundation
import ObjectGraph
import SeededRandom
import Synchronization

extension Distribution {
    /// `hotspot`: the chance that a draw is one of the hot set (the records on screen), else any record.
    static let hotShare = 0.9
}

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
            return Double.random(in: 0..<1, using: &self) < Distribution.hotShare ? Int64.random(in: 1...h, using: &self) : Int64.random(in: 1...n, using: &self)
        }
    }

    /// `count` distinct keys, none of `excluded` (keys of deleted records) or `besides` (keys the caller holds
    /// already). A key drawn from the excluded ones is drawn again, so that without exclusions the draws are exactly
    /// those of a store nothing was deleted from; after many misses the search walks up from a drawn key to the next
    /// one left. The excluded set is only asked whether it holds a key: its order feeds nothing.
    /// - Parameter excludedBelow: how many of `excluded` are in 1...n, when the caller keeps that count (else it is
    ///   counted here, a pass over the set).
    mutating func keys(_ count: Int, in n: Int64, _ distribution: Distribution, hot: Int64, excluding excluded: Set<Int64> = [],
                       excludedBelow: Int64? = nil, besides: [Int64] = []) -> [Int64] {
        guard n > 0 else { return [] }
        let extra = Set(besides.filter { $0 >= 1 && $0 <= n && !excluded.contains($0) })
        let excludes = !excluded.isEmpty || !besides.isEmpty
        let below = excluded.isEmpty ? 0 : excludedBelow ?? Int64(excluded.count(where: { $0 >= 1 && $0 <= n }))
        let target = min(Int64(count), n - below - Int64(extra.count))
        func isExcluded(_ k: Int64) -> Bool { excluded.contains(k) || extra.contains(k) }
        var chosen = Set<Int64>()
        var order: [Int64] = []
        var attempts = 0
        while Int64(chosen.count) < target {
            attempts += 1
            var k = key(in: n, distribution, hot: hot)
            if attempts > count * 20 { k = Int64.random(in: 1...n, using: &self) }
            if excludes, isExcluded(k) || chosen.contains(k) {
                guard attempts > count * 20 else { continue }
                // Few keys are left: the next one up from the draw (wrapping), which exists since `target` counts them.
                var next = k
                repeat { next = next % n + 1 } while isExcluded(next) || chosen.contains(next)
                k = next
            }
            if chosen.insert(k).inserted { order.append(k) }
        }
        return order
    }
}

/// The ids of deleted records, with what picking needs without a pass over them: their count and the largest.
struct DeletedKeys {
    private(set) var keys: Set<Int64> = []
    private(set) var largest: Int64 = 0

    /// How many deleted ids are in 1...n: the count when every one is (the usual case), else a pass.
    func count(upTo n: Int64) -> Int64 { largest <= n ? Int64(keys.count) : Int64(keys.count(where: { $0 >= 1 && $0 <= n })) }

    mutating func insert<S: Sequence>(_ new: S) where S.Element == Int64 {
        for key in new where keys.insert(key).inserted { largest = max(largest, key) }
    }

    /// Marks `count` ids of 1...n deleted, the lowest not deleted yet first, and returns them.
    mutating func insertLowest(_ count: Int, upTo n: Int64) -> [Int64] {
        var marked: [Int64] = []
        var key: Int64 = 1
        while marked.count < count, key <= n {
            if !keys.contains(key) { marked.append(key) }
            key += 1
        }
        insert(marked)
        return marked
    }

    /// Ids picked for a delete that did not reach the store (`largest` may stay above them: it only bounds).
    mutating func remove(_ old: [Int64]) { keys.subtract(old) }

    /// `count` ids of the first `n` not deleted and not in `besides`.
    func pick(_ count: Int, in n: Int64, _ distribution: Distribution, hot: Int64, besides: [Int64] = [], rng: inout SeededGenerator) -> [Int64] {
        rng.keys(count, in: n, distribution, hot: hot, excluding: keys, excludedBelow: self.count(upTo: n), besides: besides)
    }
}

/// State shared by the actors of one variant.
final class Workload: @unchecked Sendable {  // immutable except the Mutex-guarded parts
    /// The hot set's size: the largest viewer's `visibleObjects`, 20 without a viewer.
    static func hotSetSize(_ scenario: Scenario) -> Int {
        scenario.phases.flatMap(\.actors).compactMap { if case .viewer(let v) = $0 { return v.visibleObjects } else { return nil } }.max() ?? 20
    }

    let scenario: Scenario
    let stack: WorkbenchStack
    let recorder: RunRecorder
    let main: SimulatedMainThread
    let entity: EntityDescription
    let fieldTypes: [(String, AttributeType)]
    private let maxKey = Mutex<Int64>(0)
    private let batchTouched = Mutex<Set<Int64>>([])
    /// The ids of records deleted (as managed objects or by a batch delete), or chosen for a delete being saved:
    /// pickers skip them.
    private let deleted = Mutex(DeletedKeys())
    /// Each viewer's window, in the phase's order of viewers (``visibleIDs`` joins them).
    private let windows = Mutex<[[ManagedObjectID]]>([])
    private let pushes = Mutex(PushLedger())
    let viewerCount: Int
    /// How every property of a new record is filled, for a model from a file (nil: `fields` and `values` only).
    let seeds: SeedPlan?
    /// The numbers of the destination objects the seeds insert, by hierarchy.
    let seedNumbers = SeedPlan.Numbers()
    /// What the actors have done, for the progress line, and whether they are asked to stop.
    let progress: VariantProgress

    init(scenario: Scenario, stack: WorkbenchStack, recorder: RunRecorder, main: SimulatedMainThread, model: ManagedObjectModel,
         progress: VariantProgress = VariantProgress(isStopping: { false })) {
        self.progress = progress
        self.scenario = scenario
        self.stack = stack
        self.recorder = recorder
        self.main = main
        entity = model.entity(named: scenario.model.entity)!
        fieldTypes = scenario.model.fields.map { ($0, model.entity(named: scenario.model.entity)!.attribute(named: $0)!.type) }
        viewerCount = Self.hotSetSize(scenario)
        seeds = scenario.model.seeds
        if stack.observesRootSave, let root = stack.committedContext {
            stack.observeRootSave = { [unowned self] root, save in try self.observedRootSave(root, save) }
            // A hook is kept by the context it is set on and called only by it: it holds that context unowned, or
            // the context would keep itself (and its queue, parent and coordinator) alive after the run.
            let view = stack.viewContext
            view.performAndWait {
                let measure = view.childPushHook
                view.childPushHook = { [unowned self, unowned view] child in
                    measure?(child)
                    self.pushedIntoView(from: child, view: view)
                }
            }
            root.performAndWait { root.childPushHook = { [unowned self, unowned root] _ in self.pushedIntoRoot(root) } }
        }
    }

    /// Whether pushed changes are registered and recorded at the root's save (``observedRootSave(_:_:)``).
    var attributesPushes: Bool { stack.observeRootSave != nil }

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

    /// What is on screen: every viewer's window, in viewer order, each object once (one viewer: its window).
    var visibleIDs: [ManagedObjectID] {
        windows.withLock { windows in
            guard windows.count > 1 else { return windows.first ?? [] }
            var seen = Set<ManagedObjectID>(), joined: [ManagedObjectID] = []
            for id in windows.joined() where seen.insert(id).inserted { joined.append(id) }
            return joined
        }
    }

    /// A phase's viewers take the screen: `count` windows, empty until their controllers fetch.
    func showViewers(_ count: Int) { windows.withLock { $0 = Array(repeating: [], count: count) } }

    /// Viewer `index`'s window now.
    func setWindow(_ index: Int, _ ids: [ManagedObjectID]) {
        windows.withLock { windows in
            if windows.count <= index { windows += Array(repeating: [], count: index + 1 - windows.count) }
            windows[index] = ids
        }
    }

    /// Records still stored (as far as the actors know) of the first `allocated` ids: those less the deleted ones.
    func liveKeys(of allocated: Int64) -> Int64 { allocated - deleted.withLock { $0.count(upTo: allocated) } }

    /// `count` distinct ids of stored records (of the first `n`, by default every id allocated) drawn by
    /// `distribution`, never a deleted one. Drawn under the lock: a copy of the deleted ids taken out would be
    /// copied whole by the next delete.
    func pickKeys(_ count: Int, in n: Int64? = nil, _ distribution: Distribution, hot: Int64, rng: inout SeededGenerator) -> [Int64] {
        let n = n ?? existingKeys
        return deleted.withLock { $0.pick(count, in: n, distribution, hot: hot, rng: &rng) }
    }

    /// Picks `count` ids to delete (uniformly, besides `besides`) and marks them deleted at once, so that no other
    /// actor picks them from now on.
    func pickKeysToDelete(_ count: Int, besides: [Int64] = [], rng: inout SeededGenerator) -> [Int64] {
        let n = existingKeys
        return deleted.withLock { deleted in
            let keys = deleted.pick(count, in: n, .uniform, hot: 0, besides: besides, rng: &rng)
            deleted.insert(keys)
            return keys
        }
    }

    /// Marks ids deleted (a batch delete's): no actor picks them from now on.
    func markDeleted(_ keys: [Int64]) { deleted.withLock { $0.insert(keys) } }

    /// Marks every id allocated so far deleted (a batch delete of every record of the entity).
    func markAllDeleted() {
        let n = existingKeys
        guard n > 0 else { return }
        deleted.withLock { $0.insert(1...n) }
    }

    /// A delete that did not reach the store: its ids can be picked again.
    func undelete(_ keys: [Int64]) { deleted.withLock { $0.remove(keys) } }

    /// Events saying these records (by primary key) were deleted by `actor`'s committed save: the oracle holds the
    /// store to having no row for them (unless a later save put one back).
    func deleteEvents(_ keys: [Int64], actor: String, role: String, policyRole: String? = nil) -> [WriteEvent] {
        let now = Clock.now(), step = Scheduler.currentStep, policy = stack.policies[policyRole ?? role] ?? "error"
        return keys.sorted().map { key in
            var event = WriteEvent(actor: actor, role: role, policy: policy, key: key, field: "", intended: nil, committed: WriteEvent.deletedValue,
                                   version: 0, time: now, step: step)
            event.deleted = true
            return event
        }
    }

    /// Fetches the records of `ids` in `context` and deletes each as a managed object; returns their primary keys,
    /// for ``recordDeletes(_:actor:role:policyRole:afterParents:)`` once the save committed. Call on its queue.
    func deleteRecords(_ ids: [Int64], in context: ManagedObjectContext) throws -> [Int64] {
        var keys: [Int64] = []
        for object in try fetchByKeys(ids, in: context) {
            if let key = object.objectID.primaryKey { keys.append(key) }
            context.delete(object)
        }
        return keys
    }

    /// Fetches the first `limit` records of the entity that `context` sees, with no predicate (its parents' unsaved
    /// inserts included, Docs/coredata-behaviour.md §2.2), and deletes each as a managed object: the loop apps wrote
    /// before batch deletes. Their ids are marked deleted at once (by the idKey each holds; without one, as many of
    /// the lowest ids, since no actor picks by id then and only their number counts). Returns how many it deleted,
    /// the ids marked (to free again if the save fails) and the primary keys of the stored records among them (for
    /// ``recordDeletes(_:actor:role:policyRole:afterParents:)``). Call on its queue.
    func deleteFirstRecords(_ limit: Int, in context: ManagedObjectContext) throws -> (count: Int, ids: [Int64], primaryKeys: [Int64]) {
        var request = FetchRequest(entityName: entity.name)
        request.fetchLimit = limit
        request.returnsObjectsAsFaults = false
        let objects = try context.fetch(request)
        var ids: [Int64] = [], primaryKeys: [Int64] = []
        for object in objects {
            if let idKey, case .integer(let id) = object.primitiveValue(forKey: idKey) { ids.append(id) }
            if let key = object.objectID.primaryKey { primaryKeys.append(key) }
            context.delete(object)
        }
        if idKey == nil {
            let n = existingKeys
            ids = deleted.withLock { $0.insertLowest(objects.count, upTo: n) }
        } else {
            markDeleted(ids)
        }
        return (objects.count, ids, primaryKeys)
    }

    /// Records the delete events of a committed save where the save reaches the store: called once right after the
    /// actor's own save (`afterParents` false) and once after ``WorkbenchStack/afterBackgroundSave`` (true), it
    /// records at the first when that save met the store, at the second when the parents' saves took it there.
    func recordDeletes(_ keys: [Int64], actor: String, role: String, policyRole: String? = nil, afterParents: Bool) {
        guard !keys.isEmpty, (stack.committedContext != nil) == afterParents else { return }
        recorder.record(deleteEvents(keys, actor: actor, role: role, policyRole: policyRole))
    }

    func markBatchTouched<S: Sequence>(_ keys: S) where S.Element == Int64 { batchTouched.withLock { $0.formUnion(keys) } }
    var batchTouchedKeys: Set<Int64> { batchTouched.withLock { $0 } }

    /// A deterministic value for a field, from the actor and its operation number; `model.values` shapes it. For a
    /// model from a file, a field `values` does not name takes the seeds' value (within the attribute's own
    /// bounds), made from `record` (a new record's key; the operation number without one).
    func value(for type: AttributeType, field: String? = nil, actor: String, op: Int, record: Int64? = nil, rng: inout SeededGenerator) -> Any {
        if let seeds, let field, scenario.model.values[field] == nil, let value = seeds.value(of: field, number: record ?? Int64(op), rng: &rng) {
            return value
        }
        return Self.value(for: type, spec: field.flatMap { scenario.model.values[$0] }, actor: actor, op: op, rng: &rng)
    }

    /// The new value of an edited field (an importer's update, an editor's, a writer's, a batch update's): for a
    /// model from a file, the field's own (``value(for:field:actor:op:record:rng:)``); for the others, a value of its
    /// type alone, whatever `values` says.
    func editedValue(_ field: String, _ type: AttributeType, actor: String, op: Int, rng: inout SeededGenerator) -> Any {
        seeds == nil ? value(for: type, actor: actor, op: op, rng: &rng) : value(for: type, field: field, actor: actor, op: op, rng: &rng)
    }

    /// Fills what the importer leaves of a new record of a model from a file: every other attribute, and the
    /// relationships (but `linkedByGroups`, the importer's groups), inserting their destinations
    /// (Docs/scenarios.md "A model from a file"). Nothing for the other models. Call on the object's queue.
    func seed(_ object: ManagedObject, key: Int64, linkedByGroups: String?, rng: inout SeededGenerator) throws {
        guard let seeds else { return }
        var skipping = Set(importedFields.map(\.0))
        if let idKey { skipping.insert(idKey) }
        if let linkedByGroups { skipping.insert(linkedByGroups) }
        try seeds.fill(object, number: key, skipping: skipping, numbers: seedNumbers, rng: &rng)
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
        case .binaryData, .transformable: return Data([UInt8(op & 0xff)])
        }
    }

    /// The fields of each object that its context will write when it saves, read before the
    /// save. A field set to the value the context already held is no change (semantics §1.1: a save writes changed
    /// properties only), and an object with none writes no row version: what its actor "wrote" was already there.
    func changedFields(_ objects: [ManagedObject]) -> [ManagedObjectID: Set<String>] {
        var result: [ManagedObjectID: Set<String>] = [:]
        for object in objects where !object.isDeleted {
            let keys = object.changedValues().keys
            if !keys.isEmpty { result[object.objectID] = Set(keys) }
        }
        return result
    }

    /// Write events for objects after a committed save: committed values are the saved snapshot.
    /// - Parameter changed: the fields each object's save changed (``changedFields(_:)``, read before the save).
    ///   Writes are decided by which save produced which row version, not by values: an object
    ///   whose save changed nothing records nothing (its version is another save's), and a field its actor set to
    ///   the value already there is recorded with `changed: false`, an observation rather than a write.
    func events(_ objects: [(ManagedObject, [String: String])], actor: String, role: String, policy: String? = nil,
                changed: [ManagedObjectID: Set<String>]) -> [WriteEvent] {
        let policy = policy ?? stack.policies[role] ?? "error"
        let now = Clock.now()
        let step = Scheduler.currentStep
        var result: [WriteEvent] = []
        for (object, intended) in objects where !object.objectID.isTemporaryID && !object.isDeleted && !Self.deletedBySave(object) {
            guard let key = object.objectID.primaryKey, let written = changed[object.objectID] else { continue }
            if object.isFault {
                // The policy discarded this object's changes (Rollback refreshes it): nothing of it was written.
                for (field, value) in intended.sorted(by: { $0.key < $1.key }) where written.contains(field) {
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
                var event = WriteEvent(actor: actor, role: role, policy: policy, key: key, field: field, intended: intended[field],
                                       committed: committed, version: object.snapshotVersion, time: now, step: step)
                if intended[field] != nil && !written.contains(field) { event.changed = false }
                result.append(event)
            }
        }
        return result
    }

    /// Whether the save just made deleted `object` though its actor changed it: its policy accepted a delete made
    /// elsewhere (Docs/coredata-behaviour.md §1.4, §10.2: ObjectTrump by default, StoreTrump, Rollback). As in
    /// Core Data, a deleted object leaves its context at the save and `isDeleted` is false again. Its changes are
    /// in no row and the record is its deleter's, which recorded the delete: a write recorded for it would carry
    /// the row it was read from, at that version, as what its save committed. Call on the object's queue.
    static func deletedBySave(_ object: ManagedObject) -> Bool { object.managedObjectContext == nil }

    /// Events for a stack of parents whose root save is not observed (viewChildren, privateRoot): the committed
    /// rows live in the root context once the parents saved.
    func committedEvents(_ intended: [ManagedObjectID: [String: String]], actor: String, role: String, changed: [ManagedObjectID: Set<String>]) -> [WriteEvent] {
        guard let root = stack.committedContext, stack.observeRootSave == nil else { return [] }
        return root.performAndWait {
            // Clean objects of the root are held weakly and may be gone: fault them back in (row cache).
            let objects = intended.sorted(by: { ($0.key.primaryKey ?? 0) < ($1.key.primaryKey ?? 0) }).compactMap { id, values -> (ManagedObject, [String: String])? in
                let object = root.object(with: id)
                return (try? object.materialize()) == nil ? nil : (object, values)
            }
            // The policy that settled conflicts at the store is the committing context's (semantics §1.7: a push
            // meets none).
            return events(objects, actor: actor, role: role, policy: stack.committingPolicy?.name, changed: changed)
        }
    }

    // MARK: Changes pushed through a stack of parents, attributed at the save that meets the store

    /// One actor's change of one field, pushed into a parent and not yet in a save that met the store.
    struct PushedChange {
        var actor: String
        var role: String
        var intended: String
        var step: Int?
        var time: UInt64
    }

    /// Where pushed changes wait (nested): announced by the child before its save, in the view context once the
    /// push brought them (told on the view's queue, inside the push), in the root once the view's save pushed
    /// them on (told on the root's queue, inside that push). Each step happens on the queue of the context it
    /// changes, so no save in between can take a change before it is there, or miss one that is.
    struct PushLedger {
        var announced: [ObjectIdentifier: [(ManagedObjectID, [String: String], actor: String, role: String)]] = [:]
        var inView: [ManagedObjectID: [String: [PushedChange]]] = [:]
        var inRoot: [ManagedObjectID: [String: [PushedChange]]] = [:]
    }

    /// Announces the changes `child` is about to push (its changed fields only: a field set to the value it held is
    /// no change). Call on the child's queue before its save; ``cancelPush(_:)`` if the save fails.
    func announcePush(_ child: ManagedObjectContext, _ objects: [(ManagedObject, [String: String])], changed: [ManagedObjectID: Set<String>], actor: String, role: String) {
        let entries = objects.compactMap { object, intended -> (ManagedObjectID, [String: String], actor: String, role: String)? in
            guard let fields = changed[object.objectID] else { return nil }
            let kept = intended.filter { fields.contains($0.key) }
            return kept.isEmpty ? nil : (object.objectID, kept, actor, role)
        }
        guard !entries.isEmpty else { return }  // nothing to push: no push will take it
        pushes.withLock { $0.announced[ObjectIdentifier(child)] = entries }
    }

    func cancelPush(_ child: ManagedObjectContext) { _ = pushes.withLock { $0.announced.removeValue(forKey: ObjectIdentifier(child)) } }

    /// On the view's queue, inside `child`'s push: what it announced is now in the view (the fields the view now
    /// holds as changes; a value the view already had is no change there either).
    func pushedIntoView(from child: ManagedObjectContext, view: ManagedObjectContext) {
        let step = Scheduler.currentStep, now = Clock.now()
        pushes.withLock { ledger in
            guard let entries = ledger.announced.removeValue(forKey: ObjectIdentifier(child)) else { return }
            for (id, intended, actor, role) in entries {
                guard let object = view.registeredObject(for: id) else { continue }
                let changed = object.changedValues()
                for (field, value) in intended.sorted(by: { $0.key < $1.key }) where changed[field] != nil {
                    ledger.inView[id, default: [:]][field, default: []].append(PushedChange(actor: actor, role: role, intended: value, step: step, time: now))
                }
            }
        }
    }

    /// On the root's queue, inside the view's push: every change waiting in the view is now in the root.
    func pushedIntoRoot(_ root: ManagedObjectContext) {
        pushes.withLock { ledger in
            for (id, fields) in ledger.inView {
                guard let object = root.registeredObject(for: id) else { continue }
                let changed = object.changedValues()
                for (field, changes) in fields where changed[field] != nil { ledger.inRoot[id, default: [:]][field, default: []] += changes }
            }
            ledger.inView = [:]
        }
    }

    /// Saves `root`, the context whose save meets the store (nested: the private writer), and records an event
    /// for each field of each object it wrote: a changed field as the write of the actor whose push made the change
    /// (the last push; earlier pushes of the field in the same save as writes it replaced, semantics §1.7), an
    /// unchanged one as an observation by the root's save. Every event carries the root's policy, which settled
    /// the save's conflicts. Runs on the root's queue.
    func observedRootSave(_ root: ManagedObjectContext, _ save: () throws -> Void) throws {
        let before = root.updatedObjects.filter { !$0.objectID.isTemporaryID && $0.objectID.primaryKey != nil }
            .sorted { $0.objectID.primaryKey! < $1.objectID.primaryKey! }
        let changed = changedFields(before)
        try save()
        let policy = stack.committingPolicy?.name ?? stack.policies["view"] ?? "error"
        let rootName = root.name ?? "root"
        let now = Clock.now()
        let step = Scheduler.currentStep
        var result: [WriteEvent] = []
        var unattributed = 0
        // The save took every change the root held: what waited there is attributed now or was no change.
        let taken: [ManagedObjectID: [String: [PushedChange]]] = pushes.withLock { ledger in
            var taken: [ManagedObjectID: [String: [PushedChange]]] = [:]
            for object in before {
                guard let fields = changed[object.objectID], let pending = ledger.inRoot[object.objectID] else { continue }
                for (field, changes) in pending where fields.contains(field) { taken[object.objectID, default: [:]][field] = changes }
            }
            ledger.inRoot = [:]
            return taken
        }
        for object in before where !Self.deletedBySave(object) {
            guard let key = object.objectID.primaryKey, let fields = changed[object.objectID] else { continue }
            let origins = taken[object.objectID] ?? [:]
            // Objects no actor's push changed (inserted groups, ...) are not the oracle's.
            guard !origins.isEmpty else { continue }
            let discarded = object.isFault
            for (field, _) in fieldTypes {
                let committed = discarded ? "<discarded>" : (object.entity.slotIndex(of: field).flatMap { slot in object.original.map { $0.values[slot].description } }
                    ?? object.primitiveValue(forKey: field).description)
                let version = discarded ? -1 : object.snapshotVersion
                if let changes = origins[field] {
                    for c in changes {
                        result.append(WriteEvent(actor: c.actor, role: c.role, policy: policy, key: key, field: field, intended: c.intended,
                                                 committed: committed, version: version, time: c.time, step: step ?? c.step))
                    }
                } else if discarded {
                    continue
                } else if fields.contains(field) {
                    // Changed in the root, yet no registered push made the change: recorded as the root's own
                    // write of what it committed, and counted, so that nothing is blamed on a wrong actor.
                    unattributed += 1
                    result.append(WriteEvent(actor: rootName, role: "view", policy: policy, key: key, field: field, intended: committed,
                                             committed: committed, version: version, time: now, step: step))
                } else {
                    result.append(WriteEvent(actor: rootName, role: "view", policy: policy, key: key, field: field, intended: nil,
                                             committed: committed, version: version, time: now, step: step))
                }
            }
        }
        if unattributed > 0 { recorder.add("oracleUnattributedChanges", unattributed) }
        recorder.record(result)
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
