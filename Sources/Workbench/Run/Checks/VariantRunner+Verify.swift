import Ambar
import Foundation
import ObjectGraph
import Synchronization

extension VariantRunner {
    /// Checks the store once the actors are done: reads what the view context shows and what parents hold unsaved,
    /// then runs the oracle over every recorded event, outside any simulation; lets the viewers go with the run.
    func verify(_ run: VariantRun, leftovers: Leftovers) throws -> Verification {
        let recorder = run.recorder, stack = run.stack, view = run.view, workload = run.workload
        let inMemory = run.sampler.inMemory, storeURL = run.storeURL
        // After a migration the store is the next version's.
        let verifyModel = run.migrators.compactMap { $0.migrated.withLock { $0 } }.last ?? run.model
        let (viewValues, viewRegistered, viewKeptIDChanges) = Self.readView(view, workload: workload)
        let unsaved = unsavedInParents(stack)
        // Read where the parents are read: what contexts whose save failed still hold is counted now.
        let refusedChanges = recorder.refusedChanges()
        let recorderState = recorder.state.withLock { $0 }
        let readOnlySaves = (stack.ambar?.counters.readOnlySavesReachedStore ?? 0) + (recorderState.counters["readOnlySavesReachedStore"] ?? 0)
        // The oracle's reads are the harness's, not the app's: in a simulation they run on a thread of their own,
        // outside it, so that no figure of the run counts them (they stream the keys, so their
        // shape is not one fetch of every row).
        // The oracle's coordinator and context may be let go on a dispatch thread after it returns: the next
        // variant's memory baseline waits for them too.
        let oracleObjects = Mutex<[WatchedObject]>([])
        // Made outside the simulation, so that its queue is a dispatch queue the oracle's thread can use.
        let verifier = try Self.outsideSimulation { PersistentStoreCoordinator(managedObjectModel: verifyModel, name: "verify") }
        if inMemory {
            // Semantics §7 "The in-memory store": no second coordinator can open the stack's store, so the oracle reads
            // a copy of it taken now, when every actor is done (the stack's one coordinator holds it).
            guard let coordinator = stack.coordinators.first?.1, coordinator.copyInMemoryStore(into: verifier) else {
                throw WorkbenchError(.internalFailure, "the stack's coordinator has no in-memory store for the oracle to read")
            }
        }
        let (oracle, keptEvents): (OracleReport, [WriteEvent]) = try Self.outsideSimulation {
            // Final state for the oracle (streamed, never every row or event at once): the keys with
            // events in ascending order, a thousand at a time, each with its row read through a fresh coordinator;
            // duplicates and batch-touched rows by queries of the store; what the view shows from the view context.
            if !inMemory { try verifier.addPersistentStore(type: .sqlite, at: storeURL) }
            let reader = ManagedObjectContext(concurrencyType: .privateQueue)
            reader.persistentStoreCoordinator = verifier
            oracleObjects.withLock { $0 = [WatchedObject(name: "oracle coordinator", object: verifier), WatchedObject(name: "oracle context", object: reader)] }
            return try checkEvents(run, reader: reader, verifier: verifier, viewValues: viewValues, readOnlySaves: readOnlySaves)
        }
        let eventHistory = EventHistory(recorded: recorder.events.count, kept: keptEvents.count, limit: eventsKept)
        var notes = recorderState.notes
        if let failure = recorder.events.failure { notes.append("the event log failed, the oracle may have missed events: \(failure)") }
        let viewCounters = view.performAndWait { view.counters }
        let coordinatorCounters = stack.coordinators.map { ($0.0, $0.1.counters) }
        // The controller's size (Rule 23): what it holds, not what a frame reads.
        // A frames-only viewer has no controller, so no size.
        // Each controller's size, changes and largest size; the unlabelled figures are their sums (one viewer: its own).
        let controllerSizes = run.viewers.compactMap { v in v.controller.map { c in view.performAndWait { (c.objectCount, v.peakObjects, v.changes) } } }
        // The viewers' controllers hold the objects on screen: they go with the rest of the run (``Leftovers``).
        leftovers.objects += run.viewers
        run.viewers = []
        return Verification(oracle: oracle, keptEvents: keptEvents, eventHistory: eventHistory, notes: notes, viewRegistered: viewRegistered,
                            viewKeptIDChanges: viewKeptIDChanges, unsaved: unsaved, refusedChanges: refusedChanges, recorderState: recorderState,
                            readOnlySaves: readOnlySaves, oracleObjects: oracleObjects.withLock { $0 }, viewCounters: viewCounters,
                            coordinatorCounters: coordinatorCounters, controllerSizes: controllerSizes)
    }

    /// What the view context shows of the workload's visible objects (by primary key; a deleted one as no
    /// fields), with its registered objects and kept ID changes.
    static func readView(_ view: ManagedObjectContext, workload: Workload) -> ([Int64: [String: String]], Int, Int) {
        var viewValues: [Int64: [String: String]] = [:]
        var viewRegistered = 0, viewKeptIDChanges = 0
        view.performAndWait {
            viewRegistered = view.registeredObjectCount
            viewKeptIDChanges = view.keptIDChangeCount
            for id in workload.visibleIDs {
                guard let object = view.registeredObject(for: id), let key = id.primaryKey else { continue }
                // Deleted yet still in a window (a controller that kept a merged delete): the oracle expects a row.
                if object.isDeleted {
                    viewValues[key] = [:]
                    continue
                }
                guard !object.isFault, !object.hasChanges else { continue }
                var fields: [String: String] = [:]
                for (field, _) in workload.fieldTypes { fields[field] = object.primitiveValue(forKey: field).description }
                viewValues[key] = fields
            }
        }
        return (viewValues, viewRegistered, viewKeptIDChanges)
    }

    /// `saveParents: false` leaves children's saves in their parents: what the parents hold unsaved at the end, as
    /// a save of them would write it (an insert deleted again is no change to the store).
    func unsavedInParents(_ stack: WorkbenchStack) -> [(String, Int)] {
        var unsaved: [(String, Int)] = []
        if scenario.leavesParentsUnsaved {
            var inserted = 0, updated = 0, deleted = 0
            for parent in stack.parents {
                parent.performAndWait {
                    inserted += parent.insertedObjects.count
                    updated += parent.updatedObjects.count { !$0.isInserted && !$0.isDeleted }
                    deleted += parent.deletedObjects.count { !$0.isInserted }
                }
            }
            unsaved = [("inserted", inserted), ("updated", updated), ("deleted", deleted)]
        }
        return unsaved
    }

    /// The oracle's pass, on `reader` over `verifier`: every recorded event by key, a thousand keys at a time, against
    /// its row; then the view's values, the duplicates and the batch-touched rows. Returns its report and the
    /// events events.jsonl keeps.
    func checkEvents(_ run: VariantRun, reader: ManagedObjectContext, verifier: PersistentStoreCoordinator, viewValues: [Int64: [String: String]],
                     readOnlySaves: Int) throws -> (OracleReport, [WriteEvent]) {
        let recorder = run.recorder
        let (duplicates, batchTouched) = try Self.duplicatesAndBatchTouched(run, reader: reader)
        func rows(_ keys: [Int64]) throws -> [Int64: Oracle.Row] {
            try Self.oracleRows(keys, reader: reader, verifier: verifier, workload: run.workload, inMemory: run.sampler.inMemory)
        }
        var checker = Oracle.Checker(viewKeys: Set(viewValues.keys), batchTouched: batchTouched)
        var pending: [(Int64, [WriteEvent])] = []
        func checkPending() throws {
            let found = try rows(pending.map(\.0))
            for (key, events) in pending { checker.visit(key: key, events: events, row: found[key]) }
            pending.removeAll(keepingCapacity: true)
        }
        try recorder.events.forEachKey { key, events in
            pending.append((key, events))
            if pending.count >= 1000 { try checkPending() }
        }
        try checkPending()
        let report = checker.finish(viewValues: viewValues, viewRows: try rows(viewValues.keys.sorted()), duplicates: duplicates, readOnlySaves: readOnlySaves)
        // events.jsonl keeps a bounded part of the history, and says which.
        return (report, try recorder.events.kept(findingKeys: report.findings.map(\.key), limit: eventsKept))
    }

    /// The rows of `keys` (primary keys of the workload's entity) as the oracle reads them: each one's version and
    /// field values, read through `reader` and let go after.
    static func oracleRows(_ keys: [Int64], reader: ManagedObjectContext, verifier: PersistentStoreCoordinator, workload: Workload,
                           inMemory: Bool) throws -> [Int64: Oracle.Row] {
        guard !keys.isEmpty else { return [:] }
        let storeID = verifier.storeIdentifier ?? ""
        let entityName = workload.entity.name
        return try reader.performAndWait {
            defer { reader.reset() }
            let ids = keys.compactMap { URL(string: "x-coredata://\(storeID)/\(entityName)/p\($0)").flatMap(verifier.managedObjectID(forURIRepresentation:)) }
            let objects: [ManagedObject]
            if inMemory {
                // An in-memory store walks its whole table for every fetch: one look-up per key keeps this linear.
                objects = ids.compactMap { try? reader.existingObject(with: $0) }
            } else {
                var request = FetchRequest(entityName: entityName,
                                           predicate: ObjectPredicate(.comparison(PredicateComparison(.evaluatedObject, .in, .list(ids.map { .objectID($0) })))))
                request.returnsObjectsAsFaults = false
                objects = try reader.fetch(request)
            }
            var found: [Int64: Oracle.Row] = [:]
            for object in objects {
                guard let key = object.objectID.primaryKey else { continue }
                var fields: [String: String] = [:]
                for (field, _) in workload.fieldTypes { fields[field] = object.primitiveValue(forKey: field).description }
                found[key] = (object.snapshotVersion, fields)
            }
            return found
        }
    }

    /// The ids stored more than once, and the primary keys of the rows batch requests touched: by queries of the
    /// store file, or for an in-memory store by a fetch of every id through `reader`.
    static func duplicatesAndBatchTouched(_ run: VariantRun, reader: ManagedObjectContext) throws -> ([Int64], Set<Int64>) {
        let workload = run.workload, storeURL = run.storeURL
        let entityName = workload.entity.name
        var duplicates: [Int64] = []
        var batchTouched: Set<Int64> = []
        if run.sampler.inMemory, let idKey = workload.idKey {
            // No SQL: the id of every row, counted here (batch requests, refused with this store, touch none).
            var request = FetchRequest(entityName: entityName)
            request.resultType = .dictionary
            request.propertiesToFetch = [idKey]
            var seen: [Int64: Int] = [:]
            for row in try reader.performAndWait({ try reader.fetchDictionaries(request) }) {
                if let id = (row[idKey] as? Int64) ?? (row[idKey] as? Int).map(Int64.init) { seen[id, default: 0] += 1 }
            }
            duplicates = seen.filter { $0.value > 1 }.map(\.key).sorted()
        } else if let idKey = workload.idKey, let slot = workload.entity.slotIndex(of: idKey) {
            let store = try SQLiteConnection(path: storeURL.path, readOnly: true, busyTimeout: 0)
            let table = workload.entity.tableName, column = workload.entity.columnName(forSlot: slot)
            // A sub-entity's table is its hierarchy's; only the workload entity's rows count.
            let rows = workload.entity.entityCondition(alias: table, includesSubentities: true).map { " AND \($0)" } ?? ""
            try store.forEachRow("SELECT \(column) FROM \(table) WHERE \(column) IS NOT NULL\(rows) GROUP BY \(column) HAVING COUNT(*) > 1 ORDER BY \(column)") { row in
                if let id = row.int(0) { duplicates.append(id) }
            }
            // Batch requests name records by id; the oracle knows them by primary key.
            let touched = workload.batchTouchedKeys.sorted()
            for start in stride(from: 0, to: touched.count, by: 500) {
                let list = touched[start..<min(start + 500, touched.count)].map(String.init).joined(separator: ",")
                try store.forEachRow("SELECT Z_PK FROM \(table) WHERE \(column) IN (\(list))\(rows)") { row in if let key = row.int(0) { batchTouched.insert(key) } }
            }
        }
        return (duplicates, batchTouched)
    }
}

/// What ``VariantRunner/verify(_:leftovers:)`` found: the oracle's report, and what the figures read of the stack once
/// the actors were done.
struct Verification {
    var oracle: OracleReport
    var keptEvents: [WriteEvent]
    var eventHistory: EventHistory
    var notes: [String]
    var viewRegistered: Int
    var viewKeptIDChanges: Int
    var unsaved: [(String, Int)]
    var refusedChanges: Int
    var recorderState: RunRecorder.State
    var readOnlySaves: Int
    /// The oracle's coordinator and context, watched with the run's objects.
    var oracleObjects: [VariantRunner.WatchedObject]
    var viewCounters: ContextCounters
    var coordinatorCounters: [(String, CoordinatorCounters)]
    /// Each controller's size, largest size and changes, in the viewers' order.
    var controllerSizes: [(Int, Int, Int)]
}
