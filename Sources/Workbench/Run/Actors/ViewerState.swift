import Foundation
import ObjectGraph

/// The viewer (workbench.md `viewer`; Rule 23): a fetched results controller on the view context over
/// `viewer.request` (by default every object of the entity, in batches of 20, as an app's list), whose window of
/// `window` objects every frame reads. The window starts at the top and, with `scroll`, moves
/// down the results at that many rows per second of the run's clock (virtual in simulated mode), wrapping to the
/// top after the last row, as a list scrolled over and over. With `frames: only` there is no controller: the
/// frames run on the main queue and read nothing. With `tracksChanges: false` the controller has no delegate: it
/// keeps the objects it fetched, and merges and pushes into the view context reach the context, not the controller.
final class ViewerState: FetchedResultsControllerDelegate, @unchecked Sendable {  // used on the main queue
    let spec: ActorSpec.Viewer
    /// The viewer's place among its phase's viewers (its window's, in ``Workload/visibleIDs``).
    let index: Int
    let workload: Workload
    var controller: FetchedResultsController?
    var changes = 0
    /// The controller's largest size over the run.
    var peakObjects = 0
    /// When the viewer started: scrolling measures its offset from here.
    let started: UInt64

    init(spec: ActorSpec.Viewer, index: Int, workload: Workload) {
        self.spec = spec
        self.index = index
        self.workload = workload
        started = Clock.now()
    }

    /// The controller's fetch request from the scenario's `viewer.request` (the model's sort key when it names none).
    static func fetchRequest(_ spec: ActorSpec.Viewer, workload: Workload) throws -> FetchRequest {
        try spec.request.fetchRequest(entityName: workload.entity.name, defaultSort: [workload.scenario.model.sortKey])
    }

    static func start(_ spec: ActorSpec.Viewer, index: Int, workload: Workload) throws -> ViewerState {
        let state = ViewerState(spec: spec, index: index, workload: workload)
        // Frames only, nothing fetched and nothing on screen.
        guard spec.frames == .window else {
            workload.setWindow(index, [])
            return state
        }
        let view = workload.stack.viewContext
        let request = try fetchRequest(spec, workload: workload)
        try view.performAndWait {
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: view, sectionNameKeyPath: spec.request.sectionKey,
                                                      changeEvaluation: spec.frc == .batched ? .batched : .coreData)
            // Docs/coredata-behaviour.md §5: without a delegate the controller tracks nothing; it keeps what it fetched.
            if spec.tracksChanges { controller.delegate = state }
            workload.main.mark(.fetch)
            let t0 = Clock.now()
            try controller.performFetch()
            workload.recorder.fetchLatency.record(nanoseconds: Clock.now() - t0)
            state.controller = controller
            state.noteContents(controller)
        }
        return state
    }

    /// The window's first row: 0 for a still window; with `scroll`, ⌊scroll × seconds since the viewer
    /// started⌋, wrapped to the results' size.
    func offset(count: Int) -> Int {
        guard spec.scroll > 0, count > 0 else { return 0 }
        let seconds = Double(Clock.now() - started) / 1e9
        return Int((spec.scroll * seconds).rounded(.down)) % count
    }

    /// The window: `window` objects of the controller in order from the current offset (wrapping past the end).
    func window(_ controller: FetchedResultsController) -> [ManagedObject] {
        let objects = controller.fetchedObjects ?? []
        guard objects.count > spec.window else { return objects }
        let start = offset(count: objects.count)
        return (0..<spec.window).map { objects[(start + $0) % objects.count] }
    }

    /// One frame: read every field of the window's objects (firing faults a merge left, and with `scroll` the
    /// faults, and their batches' queries, of the rows the window reaches).
    func readFrame() {
        guard let controller else { return }
        let objects = window(controller)
        // A scrolling window changes between merges: the editors edit what is on screen now.
        if spec.scroll > 0 { workload.setWindow(index, objects.map(\.objectID)) }
        for object in objects where !object.isDeleted {
            for (field, _) in workload.fieldTypes { _ = try? object.checkedValue(forKey: field) }
        }
    }

    /// The controllers fetch again (`merge: notifyAndRefetch`), on the main queue, in one block: what apps do is
    /// drop the stale objects (one reset of the view context), then fetch each list again (a fetch reads the
    /// store's rows). Each controller's fetch is one `fetchLatency` sample and one refetch.
    static func refetch(_ viewers: [ViewerState]) {
        let withControllers = viewers.filter { $0.controller != nil }
        guard let first = withControllers.first else { return }
        first.workload.main.mark(.fetch)
        var t0 = Clock.now()
        first.workload.stack.viewContext.reset()
        for viewer in withControllers {
            let controller = viewer.controller!
            try? controller.performFetch()
            let now = Clock.now()
            viewer.workload.recorder.fetchLatency.record(nanoseconds: now - t0)
            t0 = now
            viewer.workload.recorder.add("refetches")
            viewer.noteContents(controller)
        }
    }

    func controllerDidChangeContent(_ controller: FetchedResultsController) {
        changes += 1
        noteContents(controller)
    }

    private func noteContents(_ controller: FetchedResultsController) {
        peakObjects = max(peakObjects, controller.objectCount)
        workload.setWindow(index, window(controller).map(\.objectID))
    }
}
