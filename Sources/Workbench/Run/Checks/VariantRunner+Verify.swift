import Ambar
import Foundation
import ObjectGraph
import Synchronization

extension VariantRunner {
    /// What the stack holds once the actors are done, read before the oracle runs: what the view context shows and
    /// what parents hold unsaved.
    func readFinalState(_ run: VariantRun) -> FinalState {
        let recorder = run.recorder, stack = run.stack
        let view = Self.readView(run.view, workload: run.workload)
        let unsaved = unsavedInParents(stack)
        // Read where the parents are read: what contexts whose save failed still hold is counted now.
        let refusedChanges = recorder.refusedChanges()
        let recorderState = recorder.state.withLock { $0 }
        let readOnlySaves = (stack.ambar?.counters.readOnlySavesReachedStore ?? 0) + (recorderState.counters["readOnlySavesReachedStore"] ?? 0)
        return FinalState(view: view, unsaved: unsaved, refusedChanges: refusedChanges, recorderState: recorderState, readOnlySaves: readOnlySaves)
    }

    /// Checks the store once the actors are done: runs the oracle over every recorded event against the store and
    /// what the view shows (`final`), outside any simulation.
    func verify(_ run: VariantRun, final: FinalState) throws -> Verification {
        let recorder = run.recorder, stack = run.stack
        // After a migration the store is the next version's.
        let verifyModel = run.migrators.compactMap { $0.migrated.withLock { $0 } }.last ?? run.model
        // The oracle's reads are the harness's, not the app's: in a simulation they run on a thread of their own,
        // outside it, so that no figure of the run counts them (they stream the keys, so their
        // shape is not one fetch of every row).
        // The oracle's coordinator and context may be let go on a dispatch thread after it returns: the next
        // variant's memory baseline waits for them too.
        let oracleObjects = Mutex<[WatchedObject]>([])
        // Made outside the simulation, so that its queue is a dispatch queue the oracle's thread can use.
        let verifier = try Self.outsideSimulation { PersistentStoreCoordinator(managedObjectModel: verifyModel, name: "verify") }
        if run.isInMemoryStore {
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
            if !run.isInMemoryStore {
                for file in run.storeFiles { try verifier.addPersistentStore(type: .sqlite, configuration: file.configuration, at: file.url) }
            }
            let reader = ManagedObjectContext(concurrencyType: .privateQueue)
            reader.persistentStoreCoordinator = verifier
            oracleObjects.withLock { $0 = [WatchedObject(name: "oracle coordinator", object: verifier), WatchedObject(name: "oracle context", object: reader)] }
            let oracleReader = OracleReader(reader: reader, verifier: verifier, workload: run.workload, storeURL: run.entityStoreURL,
                                            isInMemoryStore: run.isInMemoryStore)
            return try oracleReader.checkEvents(recorder, viewValues: final.view.values, readOnlySaves: final.readOnlySaves, eventsKept: eventsKept)
        }
        let eventHistory = EventHistory(recorded: recorder.events.count, kept: keptEvents.count, limit: eventsKept)
        return Verification(oracle: oracle, keptEvents: keptEvents, eventHistory: eventHistory, oracleObjects: oracleObjects.withLock { $0 })
    }

    /// What the view context shows of the workload's visible objects (by primary key; a deleted one as no
    /// fields), with its registered objects and kept ID changes.
    static func readView(_ view: ManagedObjectContext, workload: Workload) -> ViewReading {
        var reading = ViewReading()
        view.performAndWait {
            reading.registered = view.registeredObjectCount
            reading.keptIDChanges = view.keptIDChangeCount
            for id in workload.visibleIDs {
                guard let object = view.registeredObject(for: id), let key = id.primaryKey else { continue }
                // Deleted yet still in a window (a controller that kept a merged delete): the oracle expects a row.
                if object.isDeleted {
                    reading.values[key] = [:]
                    continue
                }
                guard !object.isFault, !object.hasChanges else { continue }
                var fields: [String: String] = [:]
                for (field, _) in workload.fieldTypes { fields[field] = object.primitiveValue(forKey: field).description }
                reading.values[key] = fields
            }
        }
        return reading
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
}

/// What the view context shows once the actors are done: the visible objects' values by primary key (a deleted
/// one as no fields), its registered objects and the ID changes it keeps.
struct ViewReading {
    var values: [Int64: [String: String]] = [:]
    var registered = 0
    var keptIDChanges = 0
}

/// What ``VariantRunner/readFinalState(_:)`` read of the stack once the actors were done, before the oracle ran: the
/// oracle checks the view's values, and the figures report the rest.
struct FinalState {
    var view: ViewReading
    var unsaved: [(String, Int)]
    var refusedChanges: Int
    var recorderState: RunRecorder.State
    var readOnlySaves: Int
}

/// What ``VariantRunner/verify(_:final:)`` found: the oracle's report, the events events.jsonl keeps and how many.
struct Verification {
    var oracle: OracleReport
    var keptEvents: [WriteEvent]
    var eventHistory: EventHistory
    /// The oracle's coordinator and context, watched with the run's objects.
    var oracleObjects: [VariantRunner.WatchedObject]
}
