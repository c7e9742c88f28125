import Dispatch
import Foundation
import TraceReplay
import ObjectGraph
import Synchronization

/// `ambar-bench calibrate`: measures what each ``CostedOperation`` costs this library on this machine, in real
/// mode, and writes it as a cost profile, so a simulated run on it can be set beside a real run of the same
/// scenario (Docs/simulation.md "Calibrating a profile").
///
/// Each figure is the median over repetitions of a small workload on the shipped `workload` model that does one
/// kind of operation many times; where a workload cannot do one operation alone (a save inserts rows *and* runs
/// statements), the operations it also does are measured first and subtracted, as each line's `source` says.
public enum Calibration {
    /// Measures every operation with `objects` objects per workload, `repetitions` times each (median kept).
    public static func measure(objects: Int = 2000, repetitions: Int = 5, cold: Bool = true, directory: URL) throws -> CostProfile {
        precondition(objects >= 8 && repetitions >= 1, "calibration needs at least 8 objects and one repetition")
        let session = try Session(objects: objects, repetitions: repetitions, cold: cold, directory: directory)
        try session.measureBlockRun()
        try session.measureObjectAccess()
        let (coordinator, context) = try session.measureFetches()
        try session.measureRowsFetched(coordinator, context)
        let (holder, held) = try session.measureFaults(coordinator)
        try session.measureRefresh(coordinator)
        try session.measureNotifications(held.map(\.objectID))
        try session.measureController(holder, held)
        try session.measureSaves(coordinator)
        try session.measureUpdatesAndDeletes(coordinator)
        try session.measureBatchRequests(coordinator)
        try session.measurePush(coordinator)
        return session.profile()
    }

    /// One calibration: its settings, the stores it made, and the figures measured so far (each operation's
    /// nanoseconds and how they were measured). Its steps run in the order of
    /// ``Calibration/measure(objects:repetitions:cold:directory:)``: a later step subtracts what an earlier one measured.
    final class Session {
        let model: ManagedObjectModel
        let n: Int
        let repetitions: Int
        let cold: Bool
        let directory: URL
        var ns: [CostedOperation: Double] = [:]
        var how: [CostedOperation: String] = [:]
        var run = 0
        /// The value the update steps set, raised each repetition.
        var round = 0.0

        init(objects: Int, repetitions: Int, cold: Bool, directory: URL) throws {
            model = try ManagedObjectModel(file: ScenarioLoader.workloadModel)
            n = objects
            self.repetitions = repetitions
            self.cold = cold
            self.directory = directory
        }

        /// A fresh store with `rows` records, and a private context on it.
        func store(rows: Int) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
            run += 1
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model, name: "calibrate")
            try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("calibrate-\(run).sqlite"))
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            if rows > 0 {
                try context.performAndWait {
                    for i in 0..<rows { try insert(context, id: i) }
                    try context.save()
                    context.reset()
                }
            }
            return (coordinator, context)
        }
        func fresh(_ coordinator: PersistentStoreCoordinator) -> ManagedObjectContext {
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            return context
        }
        func insert(_ context: ManagedObjectContext, id: Int) throws {
            let object = try context.insertNewObject(forEntityName: "Record")
            try object.setValue(Int64(id), forKey: "id")
            try object.setValue("title \(id)", forKey: "title")
            try object.setValue(Double(id), forKey: "value")
        }
        /// Median nanoseconds of `body` over the repetitions; `prepare` runs untimed before each. With `cold`, the
        /// CPU caches are flushed (a buffer larger than the last-level cache is streamed) before each timing: a
        /// workbench's main queue meets its objects cold, after an import on another thread went through them.
        func median<T>(_ prepare: () throws -> T, _ body: (T) throws -> Void) throws -> Double {
            var times: [Double] = []
            for _ in 0..<repetitions {
                let state = try prepare()
                if cold { evict() }
                let t0 = DispatchTime.now().uptimeNanoseconds
                try body(state)
                times.append(Double(DispatchTime.now().uptimeNanoseconds - t0))
            }
            return times.sorted()[times.count / 2]
        }
        func records(_ context: ManagedObjectContext, faults: Bool = false) throws -> [ManagedObject] {
            var request = FetchRequest(entityName: "Record", sortDescriptors: [ObjectSortDescriptor("id")])
            request.returnsObjectsAsFaults = faults
            return try context.fetch(request)
        }

        /// blockRun: a block on a serial queue, as the workbench's main queue meets it: queued from another thread to an
        /// idle queue, timed from inside (as real mode times main-queue blocks), with the caches cold.
        func measureBlockRun() throws {
            let inside = Mutex<[UInt64]>([])
            let queue = ContextQueue(label: "calibrate", around: { block in
                let t0 = DispatchTime.now().uptimeNanoseconds
                block()
                let t = DispatchTime.now().uptimeNanoseconds - t0
                inside.withLock { $0.append(t) }
            })
            let blocks = min(200, n)
            for _ in 0..<blocks {
                if cold { evict() }
                let done = DispatchSemaphore(value: 0)
                queue.async { done.signal() }
                done.wait()
            }
            let insideTimes = inside.withLock { $0 }.sorted()
            ns[.blockRun] = Double(insideTimes[insideTimes.count / 2])
            how[.blockRun] = "\(blocks) blocks queued to an idle private queue from another thread, timed from inside, caches cold (median)"
        }

        /// objectRegistered, propertySet and propertyRead: registering, setting and reading, on inserted objects.
        func measureObjectAccess() throws {
            let (_, scratch) = try store(rows: 0)
            ns[.objectRegistered] = try median({ scratch.performAndWait { scratch.reset() } }) { _ in
                try scratch.performAndWait { for _ in 0..<n { _ = try scratch.insertNewObject(forEntityName: "Record") } }
            } / Double(n)
            how[.objectRegistered] = "\(n) objects inserted (registered) in a context"
            let setObjects = try scratch.performAndWait { scratch.reset(); return try (0..<n).map { _ in try scratch.insertNewObject(forEntityName: "Record") } }
            ns[.propertySet] = try median({ () }) { _ in try scratch.performAndWait { for (i, o) in setObjects.enumerated() { try o.setValue("t\(i & 7)", forKey: "title") } } } / Double(n)
            how[.propertySet] = "\(n) string attributes set on inserted objects"
            ns[.propertyRead] = try median({ () }) { _ in scratch.performAndWait { for o in setObjects { _ = o.value(forKey: "title") } } } / Double(n)
            how[.propertyRead] = "\(n) string attributes read from materialized objects"
        }

        /// sqlStatement, fetchExecuted, rowExamined, sortPerformed and autoIndexRow, on a store of n rows; returns
        /// that store's coordinator and context, which the later steps use.
        func measureFetches() throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
            // Statements: our store runs cached prepared statements, so a statement's own cost cannot be told apart
            // from the work around it from outside the store; it is folded into fetchExecuted and the row costs.
            ns[.sqlStatement] = 0
            how[.sqlStatement] = "0: folded into fetchExecuted, rowInserted, rowUpdated, rowDeleted and the faults (cached statements)"
            let (coordinator, context) = try store(rows: n)
            let none = try ObjectPredicate(format: "id < 0")
            let fetches = 200
            ns[.fetchExecuted] = try median({ () }) { _ in
                try context.performAndWait { for _ in 0..<fetches { _ = try context.fetchObjectIDs(FetchRequest(entityName: "Record", predicate: none)) } }
            } / Double(fetches)
            how[.fetchExecuted] = "\(fetches) fetches of object IDs matching no row (one SELECT each)"

            // Rows examined: a fetch whose predicate no index serves (counter is not indexed) steps through every row
            // and matches none (every counter is 0); less the fixed fetch, per step (n rows are n - 1 steps).
            let unindexed = try ObjectPredicate(format: "counter == -1")
            let scans = 20
            ns[.rowExamined] = max(0, (try median({ () }) { _ in
                try context.performAndWait { for _ in 0..<scans { _ = try context.fetchObjectIDs(FetchRequest(entityName: "Record", predicate: unindexed)) } }
            } / Double(scans) - ns[.fetchExecuted]!) / Double(n - 1))
            how[.rowExamined] = "\(scans) fetches of object IDs by an unindexed attribute matching none of \(n) rows (a full scan), less fetchExecuted, per step"
            // A sort: the same 30 rows fetched in an order no index gives (title) and in the id index's order.
            let few = try ObjectPredicate(format: "id < 30")
            func sorted(_ key: String) throws -> Double {
                try median({ () }) { _ in
                    try context.performAndWait { for _ in 0..<fetches { _ = try context.fetchObjectIDs(FetchRequest(entityName: "Record", predicate: few, sortDescriptors: [ObjectSortDescriptor(key)])) } }
                } / Double(fetches)
            }
            ns[.sortPerformed] = max(0, try sorted("title") - sorted("id"))
            how[.sortPerformed] = "\(fetches) fetches of 30 object IDs sorted by title (a sort), less the same sorted by id (the index's order)"
            // No fetch of the workload model makes SQLite build an automatic index (it does so for joins only).
            ns[.autoIndexRow] = ns[.rowExamined]! * 4
            how[.autoIndexRow] = "not measured (no query of the workload model builds an automatic index): 4 x rowExamined, a step and a B-tree insert (the ratio of Profiles/README.md)"
            return (coordinator, context)
        }

        /// rowFetched and idRowFetched: rows fetched as objects and as object IDs.
        func measureRowsFetched(_ coordinator: PersistentStoreCoordinator, _ context: ManagedObjectContext) throws {
            // Rows fetched as objects: less the fetch itself and the registration each fetched object also costs.
            ns[.rowFetched] = max(0, (try median({ fresh(coordinator) }) { c in _ = try c.performAndWait { try records(c) } } - ns[.fetchExecuted]!) / Double(n) - ns[.objectRegistered]!)
            how[.rowFetched] = "\(n) rows fetched as objects, less fetchExecuted and objectRegistered per row"
            ns[.idRowFetched] = max(0, (try median({ () }) { _ in
                _ = try context.performAndWait { try context.fetchObjectIDs(FetchRequest(entityName: "Record")) }
            } - ns[.fetchExecuted]!) / Double(n))
            how[.idRowFetched] = "\(n) rows fetched as object IDs, less fetchExecuted"
        }

        /// faultFulfilledFromCache and faultFulfilledFromStore; returns the context that keeps the rows cached and its
        /// objects, which the controller step reads.
        func measureFaults(_ coordinator: PersistentStoreCoordinator) throws -> (ManagedObjectContext, [ManagedObject]) {
            // Faults fired from the row cache (a materialized copy elsewhere keeps the rows cached), and from the store
            // (staleness 0: every fault reads its row).
            let holder = fresh(coordinator)
            let held = try holder.performAndWait { try records(holder) }
            ns[.faultFulfilledFromCache] = max(0, try median({ () -> (ManagedObjectContext, [ManagedObject]) in
                let c = fresh(coordinator)
                return (c, try c.performAndWait { try records(c, faults: true) })
            }) { c, objects in c.performAndWait { for o in objects { _ = o.value(forKey: "title") } } } / Double(n) - ns[.propertyRead]!)
            how[.faultFulfilledFromCache] = "\(n) faults fired by a property read with their rows cached, less propertyRead"
            let ids = held.map(\.objectID)
            ns[.faultFulfilledFromStore] = max(0, try median({ () -> (ManagedObjectContext, [ManagedObject]) in
                let c = fresh(coordinator)
                c.stalenessInterval = 0
                return (c, c.performAndWait { ids.map { c.object(with: $0) } })
            }) { c, objects in c.performAndWait { for o in objects { _ = o.value(forKey: "title") } } } / Double(n) - ns[.propertyRead]!)
            how[.faultFulfilledFromStore] = "\(n) faults fired with staleness 0 (each reads its row), less propertyRead"
            return (holder, held)
        }

        /// objectRefreshed: refreshing materialized objects.
        func measureRefresh(_ coordinator: PersistentStoreCoordinator) throws {
            ns[.objectRefreshed] = try median({ () -> (ManagedObjectContext, [ManagedObject]) in
                let c = fresh(coordinator)
                return (c, try c.performAndWait { try records(c) })
            }) { c, objects in c.performAndWait { for o in objects { c.refresh(o, mergeChanges: true) } } } / Double(n)
            how[.objectRefreshed] = "\(n) unchanged materialized objects refreshed (mergeChanges true)"
        }

        /// notificationPosted: a post with one observer and a set of IDs.
        func measureNotifications(_ ids: [ManagedObjectID]) throws {
            let name = Notification.Name("AmbarCalibration")
            let token = NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { _ in }
            let payload: [AnyHashable: Any] = ["inserted": Set(ids.prefix(10))]
            let posts = 2000
            ns[.notificationPosted] = try median({ () }) { _ in for _ in 0..<posts { NotificationCenter.default.post(name: name, object: nil, userInfo: payload) } } / Double(posts)
            NotificationCenter.default.removeObserver(token)
            how[.notificationPosted] = "\(posts) notifications posted to one observer with a set of 10 IDs"
        }

        /// controllerObjectEvaluated, controllerComparison, controllerObjectMoved and controllerSectionUpdated: a
        /// controller's work on materialized objects.
        func measureController(_ holder: ManagedObjectContext, _ held: [ManagedObject]) throws {
            // A controller's test of one object: a predicate evaluated on a materialized object.
            let predicate = try ObjectPredicate(format: "value > 10")
            ns[.controllerObjectEvaluated] = try median({ () }) { _ in try holder.performAndWait { for o in held { _ = try predicate.evaluate(with: o) } } } / Double(n)
            how[.controllerObjectEvaluated] = "\(n) predicate evaluations (value > 10) on materialized objects"
            // A controller's placement: a comparison reads the sort key on two objects and compares; a shifted entry
            // is one reference moved by an array insert at the front.
            var before = 0
            ns[.controllerComparison] = try median({ () }) { _ in
                holder.performAndWait {
                    for (a, b) in zip(held, held.dropFirst()) where (a.value(forKey: "value") as? Double ?? 0) < (b.value(forKey: "value") as? Double ?? 0) { before += 1 }
                }
            } / Double(n - 1)
            precondition(before >= 0)
            how[.controllerComparison] = "\(n - 1) pairs of materialized objects compared by a Double attribute read on each"
            let inserts = min(50, n)
            ns[.controllerObjectMoved] = try median({ held }) { array in
                var shifted = array
                for o in held.prefix(inserts) { shifted.insert(o, at: 0) }
                precondition(shifted.count == n + inserts)
            } / Double(inserts * n + inserts * (inserts - 1) / 2)
            how[.controllerObjectMoved] = "\(inserts) inserts at the front of an array of \(n) objects (every entry shifted each time)"
            ns[.controllerSectionUpdated] = 0
            how[.controllerSectionUpdated] = "0: a section's offset and count are two integers written in place here, folded into controllerObjectEvaluated"
        }

        /// contextSave, rowInserted, transaction, inMemoryRowWritten and inMemoryRowRead: saves of inserted objects.
        func measureSaves(_ coordinator: PersistentStoreCoordinator) throws {
            // Saves. A save's fixed work: a child's save of one change into its parent (no store).
            let parent = fresh(coordinator)
            ns[.contextSave] = try median({ () -> ManagedObjectContext in
                let child = ManagedObjectContext(concurrencyType: .privateQueue)
                child.parent = parent
                try child.performAndWait { try child.insertNewObject(forEntityName: "Record").setValue(Int64(1), forKey: "id") }
                return child
            }) { child in try child.performAndWait { try child.save() } }
            how[.contextSave] = "a child context's save of one inserted object into its parent"

            // Inserts at two sizes: the slope is a row (with its statement), the intercept the transaction.
            func insertSave(_ count: Int) throws -> Double {
                try median({ () -> ManagedObjectContext in
                    let (_, c) = try store(rows: 0)
                    try c.performAndWait { for i in 0..<count { try insert(c, id: i) } }
                    return c
                }) { c in try c.performAndWait { try c.save() } }
            }
            let single = try insertSave(1), large = try insertSave(n)
            let perRow = max(0, (large - single) / Double(n - 1))
            ns[.rowInserted] = perRow
            ns[.transaction] = max(0, single - perRow - ns[.contextSave]!)
            how[.rowInserted] = "saves of 1 and \(n) inserted objects: the slope per row (its statement included)"
            how[.transaction] = "the save of 1 inserted object, less its row and contextSave"

            // An in-memory store's rows (semantics §7): the slope of in-memory saves of 1 and n inserted objects, which
            // count no transaction and no statement (the store's uniqueness check of each row included).
            func inMemoryInsertSave(_ count: Int) throws -> Double {
                try median({ () -> ManagedObjectContext in
                    let coordinator = PersistentStoreCoordinator(managedObjectModel: model, name: "calibrate")
                    try coordinator.addPersistentStore(type: .inMemory)
                    let c = fresh(coordinator)
                    try c.performAndWait { for i in 0..<count { try insert(c, id: i) } }
                    return c
                }) { c in try c.performAndWait { try c.save() } }
            }
            let inMemorySingle = try inMemoryInsertSave(1)
            ns[.inMemoryRowWritten] = max(0, (try inMemoryInsertSave(n) - inMemorySingle) / Double(n - 1))
            how[.inMemoryRowWritten] = "in-memory saves of 1 and \(n) inserted objects: the slope per row"
            how[.inMemoryRowRead] = "not measured apart (0): a row visited in memory is folded into rowFetched and faultFulfilledFromCache, measured above"
        }

        /// rowUpdated, objectDeleted and rowDeleted: saves of updated and deleted objects.
        func measureUpdatesAndDeletes(_ coordinator: PersistentStoreCoordinator) throws {
            // Updates and deletes of n rows, less the save's fixed cost and one statement per row.
            let fixed = ns[.transaction]! + ns[.contextSave]!
            let update = try median({ () -> ManagedObjectContext in
                let c = fresh(coordinator)
                round += 1  // a new value every repetition: setting a value a row already has changes nothing
                try c.performAndWait { for (i, o) in try records(c).enumerated() { try o.setValue(Double(i) + round / 8, forKey: "value") } }
                return c
            }) { c in try c.performAndWait { try c.save() } }
            ns[.rowUpdated] = max(0, (update - fixed) / Double(n))
            how[.rowUpdated] = "a save of \(n) updated objects, less transaction and contextSave (its statement included)"
            // Marking objects deleted: the delete calls and the delete rules' walk when the pending changes are
            // processed (less the objects-did-change that posts); the save of those deletes is then the rows' alone.
            let marked = try median({ () -> (ManagedObjectContext, [ManagedObject]) in
                let (_, c) = try store(rows: n)
                return (c, try c.performAndWait { try records(c) })
            }) { c, objects in
                c.performAndWait {
                    for o in objects { c.delete(o) }
                    c.processPendingChanges()
                }
            }
            ns[.objectDeleted] = max(0, (marked - ns[.notificationPosted]!) / Double(n))
            how[.objectDeleted] = "\(n) materialized objects deleted and their delete rules run (processPendingChanges), less notificationPosted"
            let delete = try median({ () -> ManagedObjectContext in
                let (_, c) = try store(rows: n)
                try c.performAndWait {
                    for o in try records(c) { c.delete(o) }
                    c.processPendingChanges()
                }
                return c
            }) { c in try c.performAndWait { try c.save() } }
            ns[.rowDeleted] = max(0, (delete - fixed) / Double(n))
            how[.rowDeleted] = "a save of \(n) deleted objects, their delete rules already run (objectDeleted), less transaction and contextSave (its statement included)"
        }

        /// batchRowInserted, batchRowUpdated and batchRowDeleted: batch requests.
        func measureBatchRequests(_ coordinator: PersistentStoreCoordinator) throws {
            // Batch requests: n rows written inside SQLite, less the transaction (their few statements, each prepared
            // once, folded in). A batch update also selects its rows (idRowFetched each).
            let rows: [[String: Any]] = (0..<n).map { ["id": Int64($0), "title": "title \($0)", "value": Double($0)] }
            let batchInsert = try median({ try store(rows: 0).1 }) { c in
                _ = try c.performAndWait { try c.execute(BatchInsertRequest(entityName: "Record", objects: rows)) }
            }
            ns[.batchRowInserted] = max(0, (batchInsert - ns[.transaction]!) / Double(n))
            how[.batchRowInserted] = "a batch insert of \(n) rows into an empty store, less transaction"
            let batchUpdate = try median({ () -> ManagedObjectContext in
                round += 1
                return fresh(coordinator)
            }) { c in _ = try c.performAndWait { try c.execute(BatchUpdateRequest(entityName: "Record", propertiesToUpdate: ["value": round])) } }
            ns[.batchRowUpdated] = max(0, (batchUpdate - ns[.transaction]!) / Double(n) - ns[.idRowFetched]!)
            how[.batchRowUpdated] = "a batch update of \(n) rows, less transaction and idRowFetched per row"
            let batchDelete = try median({ () -> (ManagedObjectContext, [ManagedObjectID]) in
                let (_, c) = try store(rows: n)
                return (c, try c.performAndWait { try c.fetchObjectIDs(FetchRequest(entityName: "Record")) })
            }) { c, ids in _ = try c.performAndWait { try c.execute(BatchDeleteRequest(objectIDs: ids)) } }
            ns[.batchRowDeleted] = max(0, (batchDelete - ns[.transaction]!) / Double(n))
            how[.batchRowDeleted] = "a batch delete of \(n) rows by object ID, less transaction"
        }

        /// objectPushed: a child's save into its parent.
        func measurePush(_ coordinator: PersistentStoreCoordinator) throws {
            // A child's save into its parent: per object, less the parent's registration.
            let push = try median({ () -> ManagedObjectContext in
                let child = ManagedObjectContext(concurrencyType: .privateQueue)
                child.parent = fresh(coordinator)
                try child.performAndWait { for i in 0..<n { try insert(child, id: i) } }
                return child
            }) { child in try child.performAndWait { try child.save() } }
            ns[.objectPushed] = max(0, (push - ns[.contextSave]!) / Double(n) - ns[.objectRegistered]!)
            how[.objectPushed] = "a child's save of \(n) inserted objects into its parent, less contextSave and objectRegistered per object"
        }

        /// The cost profile of what was measured.
        func profile() -> CostProfile {
            var profile = CostProfile(name: "this-machine", description: "", fittedTo: "", nanos: [], sources: [:], estimated: [])
            profile.nanos = CostedOperation.allCases.map { UInt64((ns[$0] ?? 0).rounded()) }
            for op in CostedOperation.allCases { profile.sources[op.name] = "measured: " + (how[op] ?? "") }
            return profile
        }
    }

    /// Fits the costs of the operations seen on the main queue to real-mode runs of `scenarios`: each main-queue
    /// block's wall time against its operation counts, by non-negative least squares. In situ, an operation costs
    /// what it costs there (cold caches, the other core busy, the work around it that no counter names), which
    /// the microbenchmarks above miss. Operations never seen on the main queue keep their measured figures.
    /// - Returns: the fitted profile and the number of blocks it was fitted to.
    public static func fit(_ measured: CostProfile, scenarios: [Scenario], directory: URL, progress: ((String) -> Void)? = nil) throws -> (CostProfile, Int) {
        var samples: [([Int], UInt64)] = []
        var names: [String] = []
        for var scenario in scenarios {
            scenario.mode = .real
            progress?("fitting on \(scenario.name) \(scenario.variantName) (real mode, seed \(scenario.seed))")
            var runner = VariantRunner(scenario: scenario, workDirectory: directory)
            runner.countsMainQueueOperations = true
            samples += try runner.run().mainBlockSamples
            if !names.contains(scenario.name) { names.append(scenario.name) }
        }
        let k = CostedOperation.allCases.count
        var gram = [[Double]](repeating: [Double](repeating: 0, count: k), count: k)
        var rhs = [Double](repeating: 0, count: k)
        let fitted = CostedOperation.allCases.map { fittedOnMainQueue.contains($0) }
        for (counts, wall) in samples {
            // The store's write path keeps its measured costs: its share of the block is taken off first.
            var y = Double(wall)
            for i in 0..<k where !fitted[i] { y -= Double(counts[i]) * Double(measured.nanos[i]) }
            for i in 0..<k where counts[i] != 0 && fitted[i] {
                rhs[i] += Double(counts[i]) * y
                for j in 0..<k where counts[j] != 0 && fitted[j] { gram[i][j] += Double(counts[i]) * Double(counts[j]) }
            }
        }
        // Operations that always come together (a merge's registrations and notifications) cannot be told apart
        // by the blocks alone: a ridge term pulls each cost toward its microbenchmark, in proportion to how much
        // data there is on it, so the split stays near the measured one and the sum fits the blocks.
        let ridge = 0.1
        for i in 0..<k where gram[i][i] > 0 {
            let weight = ridge * gram[i][i]
            gram[i][i] += weight
            rhs[i] += weight * Double(measured.nanos[i])
        }
        // Non-negative least squares by coordinate descent, from the measured figures.
        let cost = NonNegativeLeastSquares.solve(gram: gram, rhs: rhs, start: measured.nanos.map(Double.init))
        var profile = measured
        let scenariosText = names.joined(separator: ", ")
        for op in CostedOperation.allCases where gram[op.rawValue][op.rawValue] > 0 {
            profile.nanos[op.rawValue] = UInt64(min(cost[op.rawValue], CostProfile.maximumNanos).rounded())
            profile.sources[op.name] = "fitted: \(samples.count) main-queue blocks of \(scenariosText) in real mode (non-negative least squares); microbenchmark \(measured.cost(op)) ns"
        }
        return (profile, samples.count)
    }

    /// The operations fitted to main-queue blocks: the object graph's. The store's write path (statements, rows
    /// written, transactions, saves) happens mostly off the main queue and keeps its measured costs; a cost
    /// fitted there from the few main-queue blocks that have it would also price every background save.
    static let fittedOnMainQueue: Set<CostedOperation> = [
        .objectRegistered, .faultFulfilledFromCache, .faultFulfilledFromStore, .fetchExecuted, .rowFetched, .propertyRead,
        .propertySet, .objectRefreshed, .notificationPosted, .controllerObjectEvaluated, .objectPushed, .blockRun,
        .idRowFetched, .controllerComparison, .controllerObjectMoved, .objectDeleted,
    ]

    /// Streams 64 MiB (more than a server's last-level cache) through the caches, so the next workload starts cold.
    static func evict() {
        let words = 8 << 20
        let buffer = evictionBuffer
        var sum = 0
        for i in stride(from: 0, to: words, by: 8) {
            buffer[i] &+= 1
            sum &+= buffer[i]
        }
        evictionSink = sum
    }

    nonisolated(unsafe) private static let evictionBuffer: UnsafeMutablePointer<Int> = {
        let p = UnsafeMutablePointer<Int>.allocate(capacity: 8 << 20)
        p.initialize(repeating: 0, count: 8 << 20)
        return p
    }()
    nonisolated(unsafe) private static var evictionSink = 0

    /// The profile as a file `CostProfile.load(file:)` reads back.
    public static func yaml(_ profile: CostProfile, host: String) -> String {
        var text = "# Cost profile measured by `ambar-bench calibrate` on \(host): what each operation costs this library on this\n"
        text += "# machine in real mode. Replaying a scenario on it sets a simulated run beside a real one (Docs/simulation.md).\n"
        text += "description: This machine (\(host)), ObjectGraph over SQLite, measured by ambar-bench calibrate.\n"
        text += "fittedTo: \(profile.fittedTo.isEmpty ? "nothing (every figure measured on this machine)" : profile.fittedTo)\n"
        text += "costs:\n"
        for op in CostedOperation.allCases {
            let source = (profile.sources[op.name] ?? "").replacingOccurrences(of: "\"", with: "'")
            text += "  \(op.name): { ns: \(profile.cost(op)), estimated: false, source: \"\(source)\" }\n"
        }
        return text
    }
}
