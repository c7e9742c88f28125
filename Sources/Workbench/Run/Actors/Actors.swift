import Foundation
import ObjectGraph
import SeededRandom
import Synchronization

/// One actor of a phase, run on its own thread (workbench.md "actors").
protocol WorkloadActor: AnyObject, Sendable {
    var name: String { get }
    var workload: Workload { get }
    /// Whether the phase waits for this actor to finish its fixed number of operations.
    var isBounded: Bool { get }
    func run(start: UInt64, duration: Double?, keepGoing: @escaping @Sendable () -> Bool)
}

/// What every actor's run begins with: its own random draws and its operations' times.
extension WorkloadActor {
    /// The actor's own draws, seeded with the scenario's seed and the actor's name: each actor's draws replay
    /// exactly, whatever the others draw and however their threads interleave.
    func seededGenerator() -> SeededGenerator {
        SeededGenerator(seed: SeededGenerator.seed(workload.scenario.seed, name))
    }

    /// The actor's operation times from the phase's `start` at `rate`, cut short by a stop of the variant (Ctrl-C).
    func schedule(_ rate: Rate, from start: UInt64) -> Schedule {
        Schedule(rate: rate, start: start, isStopping: workload.progress.isStopping)
    }
}

/// Operation times: back to back (unlimited) or at intended times `start + k / rate` (open loop, so queueing
/// delay counts: no coordinated omission).
struct Schedule {
    let rate: Rate
    let start: UInt64
    /// True stops the actor before its next operation (Ctrl-C: the variant ends partial).
    var isStopping: @Sendable () -> Bool = { false }
    /// Operations to run: all of them for bounded actors; `rate × duration` for rate actors with a duration.
    func intended(_ k: Int) -> UInt64 {
        switch rate {
        case .unlimited: return Clock.now()
        case .perSecond(let r): return start + UInt64(Double(k) / r * 1e9)
        }
    }
    static func count(_ rate: Rate, _ duration: Double?) -> Int? {
        guard case .perSecond(let r) = rate, let duration else { return nil }
        return max(1, Int((r * duration).rounded(.down)))
    }

    /// Runs `operation(k, intended)` for each scheduled operation: `rate × duration` of them when both are
    /// known, else while `keepGoing` says so; each starts at its intended time. The operation returns false when it
    /// found nothing to do.
    func forEach(duration: Double?, keepGoing: () -> Bool, _ operation: (Int, UInt64) -> Bool) {
        let total = Self.count(rate, duration)
        var k = 0
        while !isStopping(), total.map({ k < $0 }) ?? keepGoing() {
            let intended = self.intended(k)
            if total == nil {
                // In a phase that ends when its importers are done, the wait for the next operation is cut in slices
                // so the actor does not hold the phase open past them (found by the scenario fuzz: a 0.001/s writer
                // beside an import kept the phase, its frames and samples going for 1,000 s, in real mode as long).
                var now = Clock.now()
                while now < intended {
                    Clock.sleep(until: min(intended, now + Self.waitSlice))
                    if !keepGoing() || isStopping() { return }
                    now = Clock.now()
                }
            } else {
                Clock.sleep(until: intended)
            }
            let acted = operation(k, intended)
            k += 1
            // A closed-loop operation that found nothing to do (no row on screen to edit, none stored yet) takes no
            // time, or a nanosecond; on a virtual clock the next one starts at (nearly) the same instant, and the
            // phase's end never comes (found by the scenario fuzz: `editor: { rate: unlimited }` without a viewer,
            // `batch: { kind: delete, rate: unlimited }` on an empty store). It waits a poll interval instead.
            if case .unlimited = rate, !acted { Clock.sleep(until: Clock.now() + Self.idlePoll) }
        }
    }

    /// What one operation of a bounded actor did.
    enum Outcome {
        /// Its work: the next operation follows on schedule.
        case acted
        /// Nothing to do yet (nothing stored): a closed-loop actor waits a poll interval before the next.
        case idle
        /// Nothing left to do: the actor ends.
        case finished
    }

    /// Runs a bounded actor's `count` operations at their intended times (open loop at a rate, back to back when
    /// unlimited): none starts after the phase's duration, and none after one says it is ``Outcome/finished``.
    /// Returns false when the phase's duration stopped it (not when ``isStopping`` did: the variant is partial).
    func forEach(_ count: Int, duration: Double?, keepGoing: () -> Bool, _ operation: (Int, UInt64) -> Outcome) -> Bool {
        let deadline = duration.map { start + UInt64($0 * 1e9) }
        for k in 0..<count {
            if isStopping() { return true }
            let intended = self.intended(k)
            if duration != nil, !keepGoing() { return false }
            if let deadline, intended > deadline { return false }
            Clock.sleep(until: intended)
            switch operation(k, intended) {
            case .acted: continue
            case .finished: return true
            case .idle: if case .unlimited = rate { Clock.sleep(until: Clock.now() + Self.idlePoll) }
            }
        }
        return true
    }

    /// How long a closed-loop actor with nothing to do waits before it looks again.
    static let idlePoll: UInt64 = 1_000_000
    /// How often an actor waiting in a phase without a duration looks whether the phase is over.
    static let waitSlice: UInt64 = 10_000_000
}

extension Workload {
    /// Saves `context` for `role`; `policyRole` names the role whose merge policy the context has, when another's
    /// (the deleter's context is an importer's).
    func saveCounting(_ context: ManagedObjectContext, role: String, policyRole: String? = nil) throws {
        let before = context.counters.conflictsResolved
        do {
            try context.save()
            recorder.add("saves")
        } catch let error as ObjectGraphError {
            recorder.saveFailed(role: role, code: error.code.rawValue)
            if error.code == .merge || error.code == .constraintMerge {
                recorder.conflictOutcome("\(role):failed", max(1, error.conflictList.count + error.constraintConflictList.count))
            }
            // The workload does not retry, as an app that reports the error: what the save would have written
            // never reaches the store.
            recorder.refused(context)
            context.rollback()
            throw error
        }
        recorder.conflictOutcome("\(role):\(stack.policies[policyRole ?? role] ?? "error")", context.counters.conflictsResolved - before)
    }
}

final class ImporterActor: WorkloadActor, @unchecked Sendable {  // state used on its own thread
    let name: String
    let spec: ActorSpec.Importer
    let workload: Workload
    var isBounded: Bool { true }

    init(name: String, spec: ActorSpec.Importer, workload: Workload) {
        self.name = name
        self.spec = spec
        self.workload = workload
    }

    /// Changes made since the last save (`saveEvery` chunks share one save).
    struct PendingSave {
        /// The objects updated, each with the values the importer set.
        var updates: [(ManagedObject, [String: String])] = []
        var inserted = 0, updated = 0, objects = 0
        /// Deletes since the last save: the ids picked (freed again if the save fails) and the primary keys deleted.
        var deleteIDs: [Int64] = [], deletedKeys: [Int64] = []
        var began: UInt64 = 0

        var isEmpty: Bool { updates.isEmpty && objects == 0 }
    }

    /// The keys of a chunk: the records it updates, those it deletes, and the new ids it inserts (nil when the
    /// workload has no id key).
    struct ChunkKeys {
        var updates: [Int64]
        var deletes: [Int64]
        var inserts: ClosedRange<Int64>?
    }

    /// A chunk of the import: its number, its size in objects, its keys, and whether the chunk saves.
    struct Chunk {
        var index: Int
        var size: Int
        var keys: ChunkKeys
        var saves: Bool
    }

    /// What a chunk's save wrote: whether it saved, and the values and fields of the objects it pushed.
    struct ChunkSave {
        var saved = false
        var intendedByID: [ManagedObjectID: [String: String]] = [:]
        var changed: [ManagedObjectID: Set<String>] = [:]
    }

    func run(start: UInt64, duration: Double?, keepGoing: @escaping @Sendable () -> Bool) {
        var rng = seededGenerator()
        let w = workload
        let chunks = (spec.objects + spec.chunkSize - 1) / spec.chunkSize
        let schedule = self.schedule(spec.rate, from: start)
        let deadline = duration.map { start + UInt64($0 * 1e9) }
        // `reset: never`: one context for the whole import, saved and never reset (Rule 1:
        // what records and groups hold stays registered, and memory grows as in a Core Data import that never
        // resets). `afterChunk`: a fresh context for each save, reset after it.
        var context: ManagedObjectContext? = nil
        let groups = spec.groups > 0 ? ImportGroups(count: spec.groups, parents: spec.groupParents, actor: name, entity: w.entity) : nil
        var pending = PendingSave()
        w.progress.objectsTotal.add(spec.objects, ordering: .relaxed)
        for k in 0..<chunks {
            guard let scheduled = waitForChunk(k, pending: pending, schedule: schedule, deadline: deadline, keepGoing: keepGoing) else { break }
            let n = min(spec.chunkSize, spec.objects - k * spec.chunkSize)
            let keys = pickKeys(n, rng: &rng)
            pending.deleteIDs += keys.deletes
            var valueRNG = rng
            rng = SeededGenerator(seed: rng.next())
            let current = context ?? w.stack.makeImporter()
            context = current
            if pending.isEmpty { pending.began = Clock.now() }
            let chunk = Chunk(index: k, size: n, keys: keys, saves: (k + 1) % spec.saveEvery == 0 || k == chunks - 1)
            let chunkSave = write(chunk, in: current, groups: groups, pending: &pending, rng: &valueRNG)
            w.recorder.add("operations")
            w.progress.objectsDone.add(n, ordering: .relaxed)
            guard chunk.saves else { continue }
            finishSave(pending, chunkSave, of: current, scheduled: scheduled)
            pending = PendingSave()
            current.performAndWait {
                w.recorder.peak("importerRegisteredObjects", current.registeredObjectCount)
                if spec.reset == .afterChunk {
                    current.reset()
                    groups?.forget()
                }
            }
            if spec.reset == .afterChunk { context = nil }
        }
    }

    /// Waits for chunk `k`'s intended time and returns when it began on its schedule (the phase's end for one that
    /// followed at once); nil when the importer stops before it: a stop (Ctrl-C), or the phase's `deadline` (its
    /// duration, when it has one).
    func waitForChunk(_ k: Int, pending: PendingSave, schedule: Schedule, deadline: UInt64?, keepGoing: @escaping @Sendable () -> Bool) -> UInt64? {
        let w = workload
        // Ctrl-C: no new chunk; the chunks of a save not begun are let go (nothing of them was recorded).
        if w.progress.isStopping() {
            if !pending.deleteIDs.isEmpty { w.undelete(pending.deleteIDs) }
            return nil
        }
        // A phase's duration caps it: no new chunk starts after it (a save begun is finished).
        if deadline != nil, pending.isEmpty, !keepGoing() {
            w.recorder.add("importerStoppedByDuration")
            return nil
        }
        let intended = schedule.intended(k)
        if let deadline, intended > deadline {
            // A chunk due after the phase's end does not start, and the chunks of a save begun
            // (`saveEvery`) follow at once instead of at their rate, so the save is finished without holding
            // the phase open (found by the scenario fuzz: a 0.001/s importer saving every 2 chunks kept a 1 s
            // phase going for 1,000 s).
            Clock.sleep(until: deadline)
            if pending.isEmpty {
                w.recorder.add("importerStoppedByDuration")
                return nil
            }
        } else {
            Clock.sleep(until: intended)
        }
        // When the chunk began on its schedule (the phase's end for one that followed at once).
        return min(intended, Clock.now())
    }

    /// The keys of a chunk of `n` objects: the records it updates, those it deletes, and the new ids it inserts.
    func pickKeys(_ n: Int, rng: inout SeededGenerator) -> ChunkKeys {
        let w = workload
        let existing = w.existingKeys, live = w.liveKeys(of: existing)
        let updates = live > 0 ? min(Int((Double(n) * spec.updateFraction).rounded()), Int(live)) : 0
        let updateKeys = w.pickKeys(updates, in: existing, spec.distribution, hot: Int64(w.viewerCount), rng: &rng)
        // `deleteFraction`: records of the store deleted as managed objects in the same save (none picked twice).
        // Each fraction is rounded on its own, so the deletes take what the updates left of the chunk: a chunk
        // never touches more objects than its size.
        let deletes = spec.deleteFraction > 0
            ? max(0, min(Int((Double(n) * spec.deleteFraction).rounded()), n - updateKeys.count, Int(live) - updateKeys.count)) : 0
        let deleteKeys = deletes > 0 ? w.pickKeysToDelete(deletes, besides: updateKeys, rng: &rng) : []
        let newKeys = w.allocateKeys(n - updateKeys.count - deleteKeys.count)
        return ChunkKeys(updates: updateKeys, deletes: deleteKeys, inserts: newKeys)
    }

    /// `chunk` in `current`: updates, deletes and inserts its objects, adds them to `pending`, and when the chunk
    /// saves, saves the context (a push into its parent where background contexts are children).
    func write(_ chunk: Chunk, in current: ManagedObjectContext, groups: ImportGroups?, pending: inout PendingSave,
               rng valueRNG: inout SeededGenerator) -> ChunkSave {
        let w = workload
        let k = chunk.index, n = chunk.size, saves = chunk.saves
        let updateKeys = chunk.keys.updates, deleteKeys = chunk.keys.deletes, newKeys = chunk.keys.inserts
        var result = ChunkSave()
        current.performAndWait {
            do {
                for object in try w.fetchByKeys(updateKeys, in: current) {
                    var intended: [String: String] = [:]
                    for (field, type) in w.fieldTypes {
                        let v = w.editedValue(field, type, actor: name, op: k, rng: &valueRNG)
                        try object.setValue(v, forKey: field)
                        intended[field] = object.primitiveValue(forKey: field).description
                    }
                    pending.updates.append((object, intended))
                }
                pending.deletedKeys += try w.deleteRecords(deleteKeys, in: current)
                if let newKeys {
                    let groupObjects = try groups?.objects(in: current)
                    for key in newKeys {
                        let object = try current.insertNewObject(forEntityName: w.entity.name)
                        if let idKey = w.idKey { try object.setValue(key, forKey: idKey) }
                        for (field, type) in w.importedFields {
                            try object.setValue(w.value(for: type, field: field, actor: name, op: k, record: key, rng: &valueRNG), forKey: field)
                        }
                        if let groups, let groupObjects {
                            try object.setValue(groupObjects[Int(key % Int64(groups.count))], forKey: groups.relationship.name)
                        }
                        try w.seed(object, key: key, linkedByGroups: groups?.relationship.name, rng: &valueRNG)
                    }
                }
                pending.inserted += newKeys?.count ?? 0
                pending.updated += updateKeys.count
                pending.objects += n
                guard saves else { return }
                result.changed = w.changedFields(pending.updates.map(\.0))
                if w.attributesPushes { w.announcePush(current, pending.updates, changed: result.changed, actor: name, role: "importer") }
                let pushStart = Clock.now()
                do { try w.saveCounting(current, role: "importer") } catch {
                    if w.attributesPushes { w.cancelPush(current) }
                    throw error
                }
                result.saved = true
                if w.stack.committedContext != nil {
                    // A push into a parent (nested, viewChildren, privateRoot): its rows are read where they are
                    // committed, once `afterBackgroundSave` saved the parents.
                    // Nested, viewChildren: the child's save is the merge into the view context (a main-queue push).
                    if w.stack.backgroundSaveIsMerge { w.recorder.mergeLatency.record(nanoseconds: Clock.now() - pushStart) }
                    for (object, values) in pending.updates { result.intendedByID[object.objectID] = values }
                } else {
                    w.recorder.record(w.events(pending.updates, actor: name, role: "importer", changed: result.changed))
                }
                w.recordDeletes(pending.deletedKeys, actor: name, role: "importer", afterParents: false)
            } catch {
                w.recorder.note("\(name) chunk \(k): \(error)")
            }
        }
        return result
    }

    /// After a chunk that saves: saves the parents (unless `saveParents: false`) and records what reached the store,
    /// or frees the ids picked for deletes when the save failed; records the save's latency and throughput.
    func finishSave(_ pending: PendingSave, _ chunkSave: ChunkSave, of current: ManagedObjectContext, scheduled: UInt64) {
        let w = workload
        // Objects of this save that reached the store (with `saveParents: false`, the parent it was meant to
        // stay in): importThroughput counts no refused work.
        var stored = 0
        if chunkSave.saved {
            stored = pending.objects
            // `saveParents: false`: the changes stay in the parents, never committed, so nothing is recorded.
            if spec.saveParents {
                do {
                    try w.stack.afterBackgroundSave(current)
                    w.recorder.record(w.committedEvents(chunkSave.intendedByID, actor: name, role: "importer", changed: chunkSave.changed))
                    w.recordDeletes(pending.deletedKeys, actor: name, role: "importer", afterParents: true)
                } catch {
                    w.recorder.note("\(name) parent save: \(error)")
                    stored = 0
                }
                w.recorder.rowsChanged(inserted: pending.inserted, updated: pending.updated, deleted: pending.deletedKeys.count)
            }
        } else {
            w.undelete(pending.deleteIDs)
        }
        let end = Clock.now()
        w.recorder.saveLatency("importer").record(nanoseconds: end - (spec.rate == .unlimited ? pending.began : scheduled))
        w.recorder.imported(stored, nanos: end - pending.began)
    }
}

/// An importer's groups: `count` objects of the destination of the entity's first to-one
/// relationship, named after the actor, that new records are linked to by key (`key % count`); with `parents`,
/// the groups hang in turn under that many objects of the group entity's own to-one destination (the classic
/// 1 → 1,000 → 1,000,000 graph). A context that lives for the whole import keeps them (and, through their to-many
/// inverses, every record linked); a fresh context fetches them again, as faults whose to-manys are not loaded.
final class ImportGroups {
    let count: Int
    let relationship: RelationshipDescription
    let names: [String]
    /// The groups' own to-one link and the names of its objects (no parents: nil).
    let parentLink: (relationship: RelationshipDescription, names: [String])?
    private var objects: [ManagedObject]?

    init?(count: Int, parents: Int, actor: String, entity: EntityDescription) {
        guard let relationship = entity.relationships.first(where: { !$0.isToMany }) else { return nil }
        self.count = count
        self.relationship = relationship
        names = (0..<count).map { "\(actor)-group\($0)" }
        if parents > 0, let groupEntity = entity.model?.entity(named: relationship.destinationEntityName),
           let up = groupEntity.relationships.first(where: { !$0.isToMany && $0.name != relationship.inverseName }) {
            parentLink = (up, (0..<parents).map { "\(actor)-parent\($0)" })
        } else {
            parentLink = nil
        }
    }

    /// The groups in `context`, made the first time and fetched by name after a reset.
    func objects(in context: ManagedObjectContext) throws -> [ManagedObject] {
        if let objects { return objects }
        let made = try Self.named(names, of: relationship.destinationEntityName, in: context)
        if let parentLink {
            let parents = try Self.named(parentLink.names, of: parentLink.relationship.destinationEntityName, in: context)
            for (i, group) in made.enumerated() where group.isInserted {
                try group.setValue(parents[i % parents.count], forKey: parentLink.relationship.name)
            }
        }
        objects = made
        return made
    }

    /// Objects of `entityName` with these names (a `name` attribute, when the entity has one), fetched, or made
    /// when missing.
    private static func named(_ names: [String], of entityName: String, in context: ManagedObjectContext) throws -> [ManagedObject] {
        let nameKey = "name"
        var byName: [String: ManagedObject] = [:]
        let hasName = context.model.entity(named: entityName)?.attribute(named: nameKey) != nil
        if hasName {
            let request = FetchRequest(entityName: entityName, predicate: .compare(nameKey, .in, names))
            for object in try context.fetch(request) {
                if case .string(let name) = object.primitiveValue(forKey: nameKey) { byName[name] = object }
            }
        }
        return try names.map { name -> ManagedObject in
            if let found = byName[name] { return found }
            let object = try context.insertNewObject(forEntityName: entityName)
            if hasName { try object.setValue(name, forKey: nameKey) }
            return object
        }
    }

    /// After a reset: the objects belong to no context any more.
    func forget() { objects = nil }
}

final class EditorActor: WorkloadActor, @unchecked Sendable {  // state used on its own thread
    let name: String
    let spec: ActorSpec.Editor
    let workload: Workload
    let duration: Double?
    var isBounded: Bool { Schedule.count(spec.rate, duration) != nil }

    init(name: String, spec: ActorSpec.Editor, workload: Workload, duration: Double?) {
        self.name = name
        self.spec = spec
        self.workload = workload
        self.duration = duration
    }

    func run(start: UInt64, duration: Double?, keepGoing: @escaping @Sendable () -> Bool) {
        var rng = seededGenerator()
        let w = workload
        schedule(spec.rate, from: start).forEach(duration: duration, keepGoing: keepGoing) { k, intended in
            w.recorder.add("operations")
            let visible = w.visibleIDs
            guard !visible.isEmpty else { return false }
            // Distinct, in the order drawn (not a set's order): each pick gets the same value on every run.
            var picks: [ManagedObjectID] = []
            for _ in 0..<spec.edits {
                let id = visible[Int.random(in: 0..<visible.count, using: &rng)]
                if !picks.contains(id) { picks.append(id) }
            }
            var valueRNG = SeededGenerator(seed: rng.next())
            let editor: ManagedObjectContext
            do { editor = try w.stack.makeEditor() } catch {
                w.recorder.add("editorRefused")
                return false
            }
            var intendedByID: [ManagedObjectID: [String: String]] = [:]
            var changed: [ManagedObjectID: Set<String>] = [:]
            do {
                try editor.performAndWait {
                    var edited: [(ManagedObject, [String: String])] = []
                    for id in picks {
                        guard let object = try? editor.existingObject(with: id) else { continue }
                        var intendedValues: [String: String] = [:]
                        for (field, type) in w.fieldTypes.prefix(1) {
                            try object.setValue(w.editedValue(field, type, actor: name, op: k, rng: &valueRNG), forKey: field)
                            intendedValues[field] = object.primitiveValue(forKey: field).description
                        }
                        intendedByID[id] = intendedValues
                        edited.append((object, intendedValues))
                    }
                    changed = w.changedFields(edited.map(\.0))
                    if w.attributesPushes { w.announcePush(editor, edited, changed: changed, actor: name, role: "view") }
                    do { try editor.save() } catch {  // into its parent: no conflicts here (semantics §1.7)
                        if w.attributesPushes { w.cancelPush(editor) }
                        throw error
                    }
                }
                if spec.saveViewContext && !w.stack.editorsSaveThroughView {
                    // privateRoot: the editor is a child of the private root, whose save reaches the store.
                    try w.stack.afterBackgroundSave(editor)
                    w.recorder.record(w.committedEvents(intendedByID, actor: name, role: "view", changed: changed))
                } else if spec.saveViewContext {
                    let view = w.stack.viewContext
                    try view.performAndWait {
                        w.main.mark(.save)
                        let objects = intendedByID.sorted(by: { ($0.key.primaryKey ?? 0) < ($1.key.primaryKey ?? 0) })
                            .compactMap { id, intended in view.registeredObject(for: id).map { ($0, intended) } }
                        // The view's changes are what its save writes: the editor's push
                        // changed nothing in it where the view already held the value.
                        let viewChanged = w.stack.committedContext == nil ? w.changedFields(objects.map(\.0)) : [:]
                        try w.saveCounting(view, role: "view")
                        if w.stack.committedContext == nil { w.recorder.record(w.events(objects, actor: name, role: "view", changed: viewChanged)) }
                    }
                    try w.stack.afterBackgroundSave(view)
                    w.recorder.record(w.committedEvents(intendedByID, actor: name, role: "view", changed: changed))
                }
            } catch {
                w.recorder.note("\(name) op \(k): \(error)")
            }
            w.recorder.saveLatency("editor").record(nanoseconds: Clock.now() - intended)
            return true
        }
    }
}

/// Shared by the temporary and writer actors: edit objects in a context of their own and save (or not).
final class EditingActor: WorkloadActor, @unchecked Sendable {  // state used on its own thread
    let name: String
    let role: String
    let rate: Rate
    let edits: Int
    let distribution: Distribution
    let saves: Bool
    let workload: Workload
    let duration: Double?
    var isBounded: Bool { Schedule.count(rate, duration) != nil }

    init(name: String, role: String, rate: Rate, edits: Int, distribution: Distribution, saves: Bool, workload: Workload, duration: Double?) {
        self.name = name
        self.role = role
        self.rate = rate
        self.edits = edits
        self.distribution = distribution
        self.saves = saves
        self.workload = workload
        self.duration = duration
    }

    func run(start: UInt64, duration: Double?, keepGoing: @escaping @Sendable () -> Bool) {
        var rng = seededGenerator()
        let w = workload
        schedule(rate, from: start).forEach(duration: duration, keepGoing: keepGoing) { k, intended in
            w.recorder.add("operations")
            let keys = w.pickKeys(edits, distribution, hot: Int64(w.viewerCount), rng: &rng)
            guard !keys.isEmpty else { return false }
            var valueRNG = SeededGenerator(seed: rng.next())
            let context = role == "writer" ? w.stack.makeWriter() : w.stack.makeTemporary()
            // A temporary that is a child context (nested, viewChildren, privateRoot) saves into its parent: its
            // save reaches the store once the parents save, and its rows are read where they are committed.
            let pushes = role == "temporary" && w.stack.committedContext != nil
            var intendedByID: [ManagedObjectID: [String: String]] = [:]
            var changed: [ManagedObjectID: Set<String>] = [:]
            var saved = false
            context.performAndWait {
                do {
                    var touched: [(ManagedObject, [String: String])] = []
                    for object in try w.fetchByKeys(keys, in: context) {
                        var intendedValues: [String: String] = [:]
                        for (field, type) in w.fieldTypes.suffix(1) {
                            try object.setValue(w.editedValue(field, type, actor: name, op: k, rng: &valueRNG), forKey: field)
                            intendedValues[field] = object.primitiveValue(forKey: field).description
                        }
                        touched.append((object, intendedValues))
                    }
                    if saves {
                        let hadChanges = context.hasChanges
                        changed = w.changedFields(touched.map(\.0))
                        if pushes && w.attributesPushes { w.announcePush(context, touched, changed: changed, actor: name, role: role) }
                        do { try w.saveCounting(context, role: role) } catch {
                            if pushes && w.attributesPushes { w.cancelPush(context) }
                            throw error
                        }
                        if role == "temporary", hadChanges, w.stack.ambar == nil { w.recorder.add("readOnlySavesReachedStore") }
                        if pushes {
                            for (object, values) in touched { intendedByID[object.objectID] = values }
                            saved = true
                        } else {
                            w.recorder.record(w.events(touched, actor: name, role: role, changed: changed))
                        }
                    } else {
                        context.rollback()
                        w.recorder.add("temporaryDiscarded")
                    }
                } catch {
                    w.recorder.note("\(name) op \(k): \(error)")
                }
                context.reset()
            }
            if saved {
                do {
                    try w.stack.afterBackgroundSave(context)
                    w.recorder.record(w.committedEvents(intendedByID, actor: name, role: role, changed: changed))
                } catch { w.recorder.note("\(name) parent save: \(error)") }
            }
            w.recorder.saveLatency(role).record(nanoseconds: Clock.now() - intended)
            return true
        }
    }
}

final class BatchActor: WorkloadActor, @unchecked Sendable {  // state used on its own thread
    let name: String
    let spec: ActorSpec.Batch
    let workload: Workload
    let duration: Double?
    var isBounded: Bool { spec.requests != nil || Schedule.count(spec.rate, duration) != nil }

    init(name: String, spec: ActorSpec.Batch, workload: Workload, duration: Double?) {
        self.name = name
        self.spec = spec
        self.workload = workload
        self.duration = duration
    }

    func run(start: UInt64, duration: Double?, keepGoing: @escaping @Sendable () -> Bool) {
        var rng = seededGenerator()
        let w = workload
        // A batch insert fails on a row without a required value (Docs/coredata-behaviour.md §6): each row carries
        // its id and a value for every other required attribute without a default (the shipped models have none).
        let required = w.entity.attributes.filter { !$0.isTransient && !$0.isOptional && $0.defaultValue.isNull && $0.name != w.idKey }
        // One request; false when it found nothing to do.
        func request(_ k: Int, _ intended: UInt64) -> Bool {
            w.recorder.add("operations")
            let context = w.stack.makeBatch()
            var changes = ContextObjectIDChanges()
            var acted = false
            context.performAndWait {
                do {
                    switch spec.kind {
                    case .insert:
                        guard let keys = w.allocateKeys(spec.size) else { return }
                        acted = true
                        let rows: [[String: Any]] = keys.map { key in
                            var row: [String: Any] = [w.idKey!: key]
                            for a in required { row[a.name] = w.value(for: a.type, field: a.name, actor: name, op: k, record: key, rng: &rng) }
                            return row
                        }
                        var request = BatchInsertRequest(entityName: w.entity.name, objects: rows)
                        request.resultType = .objectIDs
                        changes.inserted = Set(try context.execute(request).objectIDs ?? [])
                        w.recorder.rowsChanged(inserted: changes.inserted.count, updated: 0)
                    case .update:
                        let keys = w.pickKeys(spec.size, .uniform, hot: 0, rng: &rng)
                        guard !keys.isEmpty, let (field, type) = w.fieldTypes.last else { return }
                        acted = true
                        var request = BatchUpdateRequest(entityName: w.entity.name, predicate: .in(w.idKey!, keys.map { $0 as Any }),
                                                         propertiesToUpdate: [field: w.editedValue(field, type, actor: name, op: k, rng: &rng)])
                        request.resultType = .objectIDs
                        changes.updated = Set(try context.execute(request).objectIDs ?? [])
                        w.markBatchTouched(keys)
                        w.recorder.rowsChanged(inserted: 0, updated: changes.updated.count)
                    case .delete where spec.allRecords:
                        // `size: all`: one request over the whole entity, as `NSBatchDeleteRequest(fetchRequest:)` with
                        // a fetch request of no predicate. Every id allocated is then deleted for the pickers.
                        acted = true
                        var request = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: w.entity.name))
                        request.resultType = .objectIDs
                        let deleted = try context.execute(request).objectIDs ?? []
                        changes.deleted = Set(deleted)
                        w.markAllDeleted()
                        w.recorder.record(w.deleteEvents(deleted.compactMap(\.primaryKey), actor: name, role: "batch"))
                        w.recorder.rowsChanged(deleted: changes.deleted.count)
                    case .delete:
                        let keys = w.pickKeys(spec.size, .uniform, hot: 0, rng: &rng).filter { $0 > Int64(w.viewerCount) }
                        guard !keys.isEmpty else { return }
                        acted = true
                        var request = BatchDeleteRequest(fetchRequest: FetchRequest(entityName: w.entity.name, predicate: .in(w.idKey!, keys.map { $0 as Any })))
                        request.resultType = .objectIDs
                        let deleted = try context.execute(request).objectIDs ?? []
                        changes.deleted = Set(deleted)
                        // The records are gone: no actor picks them again, and the oracle holds the store to having
                        // no row for them (their primary keys from the result, as the rows are gone after the run).
                        w.markDeleted(keys)
                        w.recorder.record(w.deleteEvents(deleted.compactMap(\.primaryKey), actor: name, role: "batch"))
                        w.recorder.rowsChanged(deleted: changes.deleted.count)
                    }
                } catch {
                    w.recorder.note("\(name) op \(k): \(error)")
                }
            }
            let committed = Clock.now()
            w.recorder.saveLatency("batch").record(nanoseconds: committed - intended)
            // Without a view context (headless) nothing merges.
            guard spec.mergeBy == .ids, !changes.isEmpty, w.stack.topology.hasViewContext else { return acted }
            // Semantics §6: batch results reach contexts only by merging their IDs, with the call Apple recommends
            // for them, which refreshes updated objects past the row cache (§3.4, Rule 15).
            let view = w.stack.viewContext
            let main = w.main, recorder = w.recorder
            let merged = changes
            main.queue.async {
                ManagedObjectContext.mergeChanges(fromRemoteContextSave: merged, into: [view])
                main.mark(.merge)
                recorder.mergeLatency.record(nanoseconds: Clock.now() - committed)
            }
            return acted
        }
        let schedule = self.schedule(spec.rate, from: start)
        if let requests = spec.requests {
            _ = schedule.forEach(requests, duration: duration, keepGoing: keepGoing) { k, intended in request(k, intended) ? .acted : .idle }
        } else {
            schedule.forEach(duration: duration, keepGoing: keepGoing, request)
        }
    }
}

extension RunRecorder {
    /// Saves `context`, the one whose save meets the store in a stack of parents: a failure counts under `role`
    /// (its changes stay in the context, as in an app that logs the error) and is rethrown.
    func saveCountingFailure(_ context: ManagedObjectContext, role: String) throws {
        do { try context.save() } catch let error as ObjectGraphError {
            saveFailed(role: role, code: error.code.rawValue)
            if error.code == .merge || error.code == .constraintMerge {
                conflictOutcome("\(role):failed", max(1, error.conflictList.count + error.constraintConflictList.count))
            }
            refusedKeeping(context)
            throw error
        }
    }

    func rowsChanged(inserted: Int = 0, updated: Int = 0, deleted: Int = 0) {
        state.withLock {
            $0.counters["rowsInserted", default: 0] += inserted
            $0.counters["rowsUpdated", default: 0] += updated
            $0.counters["rowsDeleted", default: 0] += deleted
        }
    }
}

/// Opens the store with the model's next version, which migrates it in place: the time it takes
/// (virtual in simulated mode: `rowMigrated` per row copied) and the rows it copied. With `stack.stores`, each
/// store file is migrated in turn, each with its configuration's entities (Docs/coredata-behaviour.md §14).
final class MigratorActor: WorkloadActor, @unchecked Sendable {  // state used on its own thread
    let name: String
    let spec: ActorSpec.Migrator
    let workload: Workload
    /// The run's store files, in order, each with its configuration.
    let storeFiles: [(configuration: String?, url: URL)]
    /// The migrated model, for the verifier (set once the migration succeeded).
    let migrated = Mutex<ManagedObjectModel?>(nil)
    var isBounded: Bool { true }

    init(name: String, spec: ActorSpec.Migrator, workload: Workload, storeFiles: [(configuration: String?, url: URL)]) {
        self.name = name
        self.spec = spec
        self.workload = workload
        self.storeFiles = storeFiles
    }

    func run(start: UInt64, duration: Double?, keepGoing: @escaping @Sendable () -> Bool) {
        let w = workload
        w.recorder.add("operations")
        do {
            let previous = w.scenario.model.entities ?? ScenarioLoader.workloadModel
            // The stores' configurations, in both versions, where the stack adds a store per configuration.
            let byConfiguration = w.scenario.stack.stores != nil
            let next = try ManagedObjectModel(file: ModelFile(versions: [
                .init(name: "previous", entities: previous.entities, configurations: byConfiguration ? previous.configurations : nil),
                .init(name: "next", entities: spec.to.entities, configurations: byConfiguration ? spec.to.configurations : nil),
            ], current: "next"))
            var (nanos, rows) = (0, 0)
            for file in storeFiles {
                var description = PersistentStoreDescription(url: file.url)
                description.configuration = file.configuration
                description.storeOptions.persistentHistoryTracking = w.scenario.stack.topology == .history
                let coordinator = PersistentStoreCoordinator(managedObjectModel: next, name: "migrator")
                let began = Clock.now()
                try coordinator.addPersistentStore(with: description)
                nanos += Int(Clock.now() - began)
                rows += coordinator.migratedRowCount ?? 0
            }
            w.recorder.add("migrationNanos", nanos)
            w.recorder.add("rowsMigrated", rows)
            migrated.withLock { $0 = next }
        } catch {
            w.recorder.note("\(name): the migration failed: \(error)")
            w.recorder.add("migrationFailures")
        }
    }
}
