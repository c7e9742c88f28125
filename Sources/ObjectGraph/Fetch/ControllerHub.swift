import Foundation

/// The fetched results controllers tracking one context, told of its notifications in the order they began
/// tracking. Each controller observing the notification center by itself would be told in the center's order,
/// which on Linux follows object addresses: with two controllers on one context, which one evaluates a change first
/// (and fires the faults both need) would vary from run to run. One observer per context, owned by it, keeps the
/// order the app set up (Docs/coredata-behaviour.md §5: each controller runs its own relevance pass). The controllers
/// hold their hub and the context knows it weakly, so it stops observing when the last of them goes, as a single
/// controller's own observers did.
final class ControllerHub: @unchecked Sendable {  // used on its context's queue
    private struct Weak { weak var controller: FetchedResultsController? }
    private var controllers: [Weak] = []
    private var observers: [any NSObjectProtocol] = []

    /// The hub of `context`, made on its first controller (kept by the controllers). Call on the context's queue.
    static func of(_ context: ManagedObjectContext) -> ControllerHub {
        if let hub = context.controllerHub { return hub }
        let hub = ControllerHub()
        hub.observers = [
            NotificationCenter.default.addObserver(forName: ManagedObjectContext.objectsDidChangeNotification, object: context, queue: nil) { [weak hub] note in
                hub?.each { $0.objectsDidChange(note) }
            },
            NotificationCenter.default.addObserver(forName: ManagedObjectContext.didMergeChangesObjectIDsNotification, object: context, queue: nil) { [weak hub] note in
                hub?.each { $0.didMergeObjectIDs(note) }
            },
        ]
        context.controllerHub = hub
        return hub
    }

    /// Starts telling `controller`, after those already told.
    func add(_ controller: FetchedResultsController) {
        controllers.removeAll { $0.controller == nil }
        controllers.append(Weak(controller: controller))
    }

    private func each(_ body: (FetchedResultsController) -> Void) {
        for entry in controllers { if let controller = entry.controller { body(controller) } }
    }

    deinit { for observer in observers { NotificationCenter.default.removeObserver(observer) } }
}
