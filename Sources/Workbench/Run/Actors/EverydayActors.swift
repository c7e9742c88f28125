import Foundation
import ObjectGraph
import SeededRandom
import Synchronization

/// The `fetcher` (Docs/scenarios.md): fetch requests an app makes as it runs, by key (a detail screen's record,
/// `idKey == n`) or by predicate (a search), on the view context (main-queue time, `mainBusy` kind `fetch`) or on a
/// private-queue context of the stack. Docs/coredata-behaviour.md §4: every fetch request goes to the store (a
/// fetch is a query, whatever the context holds); its rows land in the row cache and the objects it returns, faults,
/// are fulfilled from there when the app reads them, which the fetcher does: every field of every result.
final class FetcherActor: WorkloadActor, @unchecked Sendable {  // state used on its own thread
    let name: String
    let spec: ActorSpec.Fetcher
    let workload: Workload
    var isBounded: Bool { true }

    init(name: String, spec: ActorSpec.Fetcher, workload: Workload) {
        self.name = name
        self.spec = spec
        self.workload = workload
    }

    /// The request of a fetch by predicate (the loader checked its predicate and keys).
    static func predicateRequest(_ spec: ActorSpec.Fetcher, workload: Workload) throws -> FetchRequest {
        try spec.request.fetchRequest(entityName: workload.entity.name, defaultSort: [])
    }

    func run(start: UInt64, duration: Double?, keepGoing: @escaping @Sendable () -> Bool) {
        var rng = seededGenerator()
        let w = workload
        let byPredicate: FetchRequest?
        do { byPredicate = spec.by == .predicate ? try Self.predicateRequest(spec, workload: w) : nil } catch {
            w.recorder.note("\(name): \(error)")
            return
        }
        // One context for the actor's life, as an app's screen or service keeps one.
        let onView = spec.context == .view
        let context = onView ? w.stack.viewContext : w.stack.makeTemporary()
        let latency = w.recorder.labelledFetchLatency("fetcher:\(spec.context.rawValue)")
        let finished = schedule(spec.rate, from: start).forEach(spec.requests, duration: duration, keepGoing: keepGoing) { k, intended in
            w.recorder.add("operations")
            let request: FetchRequest
            if let byPredicate {
                request = byPredicate
            } else {
                guard let idKey = w.idKey, let key = w.pickKeys(1, spec.distribution, hot: Int64(w.viewerCount), rng: &rng).first else { return .idle }
                request = FetchRequest(entityName: w.entity.name, predicate: .compare(idKey, .equalTo, key))
            }
            context.performAndWait {
                if onView { w.main.mark(.fetch) }
                do {
                    let objects = try context.fetch(request)
                    for object in objects where !object.isDeleted {
                        for (field, _) in w.fieldTypes { _ = try? object.checkedValue(forKey: field) }
                    }
                    w.recorder.add("fetches.\(spec.context.rawValue)")
                    w.recorder.add("fetchedObjects.\(spec.context.rawValue)", objects.count)
                } catch {
                    w.recorder.note("\(name) fetch \(k): \(error)")
                }
            }
            // From the intended time: a fetch queued behind the main queue's work waits as the user does.
            latency.record(nanoseconds: Clock.now() - intended)
            return .acted
        }
        if !finished { w.recorder.add("fetcherStoppedByDuration") }
    }
}

/// The `deleter` (Docs/scenarios.md): deletes records as managed objects, the loop apps ran before batch deletes: a
/// chunk fetched on a background context, `delete(_:)` for each object, a save, a reset. Docs/coredata-behaviour.md
/// §3.1 and §5: the save's deletes reach the view context by its merge, which deletes the objects there and takes
/// them out of its controllers. `select: keys` picks ids uniformly among the records not yet deleted and marks them
/// at once, so no other actor picks them afterwards; an actor that picked one before edits a record deleted
/// elsewhere, which its save's policy settles (§1.4, §10.2). `select: all` fetches the first records the context
/// sees, with no predicate (§2.2: a child sees its parents' unsaved inserts too), and marks their ids.
/// `saveParents: false` (children only) pushes the deletes into the parent and saves no further: nothing reaches the
/// store, and the oracle records no delete.
final class DeleterActor: WorkloadActor, @unchecked Sendable {  // state used on its own thread
    let name: String
    let spec: ActorSpec.Deleter
    let workload: Workload
    var isBounded: Bool { true }

    init(name: String, spec: ActorSpec.Deleter, workload: Workload) {
        self.name = name
        self.spec = spec
        self.workload = workload
    }

    func run(start: UInt64, duration: Double?, keepGoing: @escaping @Sendable () -> Bool) {
        var rng = seededGenerator()
        let w = workload
        // `fraction`: of the records stored when the deleter starts (those deleted by any means before excluded).
        let total = spec.objects ?? Int((Double(w.liveKeys(of: w.existingKeys)) * (spec.fraction ?? 0)).rounded())
        let chunks = (total + spec.chunkSize - 1) / spec.chunkSize
        w.progress.objectsTotal.add(total, ordering: .relaxed)
        let finished = schedule(spec.rate, from: start).forEach(chunks, duration: duration, keepGoing: keepGoing) { k, intended in
            let size = min(spec.chunkSize, total - k * spec.chunkSize)
            // The ids marked deleted (freed again if the save fails) and the primary keys of the rows deleted.
            var marked = spec.select == .keys ? w.pickKeysToDelete(size, rng: &rng) : []
            var deletedKeys: [Int64] = []
            // No record left to delete: the deleter is done, whatever it was asked for.
            if spec.select == .keys, marked.isEmpty { return .finished }
            let context = w.stack.makeImporter()
            // Records deleted in the context (a fetch that found none ends the deleter).
            var found = marked.count
            var saved = false
            context.performAndWait {
                do {
                    switch spec.select {
                    case .keys:
                        deletedKeys = try w.deleteRecords(marked, in: context)
                    case .all:
                        (found, marked, deletedKeys) = try w.deleteFirstRecords(size, in: context)
                        if found == 0 { return }
                    }
                    let pushStart = Clock.now()
                    try w.saveCounting(context, role: "deleter", policyRole: "importer")
                    saved = true
                    // Nested, viewChildren: the child's save is the merge into the view context (a main-queue push).
                    if w.stack.backgroundSaveIsMerge { w.recorder.mergeLatency.record(nanoseconds: Clock.now() - pushStart) }
                    w.recordDeletes(deletedKeys, actor: name, role: "deleter", policyRole: "importer", afterParents: false)
                } catch {
                    w.recorder.note("\(name) chunk \(k): \(error)")
                }
            }
            if found == 0 {
                context.performAndWait { context.reset() }
                return .finished
            }
            w.recorder.add("operations")
            w.progress.objectsDone.add(size, ordering: .relaxed)
            if saved {
                if spec.saveParents {
                    do {
                        try w.stack.afterBackgroundSave(context)
                        w.recordDeletes(deletedKeys, actor: name, role: "deleter", policyRole: "importer", afterParents: true)
                    } catch { w.recorder.note("\(name) parent save: \(error)") }
                    w.recorder.rowsChanged(deleted: deletedKeys.count)
                }
            } else {
                w.undelete(marked)
            }
            context.performAndWait { context.reset() }
            w.recorder.saveLatency("deleter").record(nanoseconds: Clock.now() - intended)
            return .acted
        }
        if !finished { w.recorder.add("deleterStoppedByDuration") }
    }
}
