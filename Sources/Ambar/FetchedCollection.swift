import Foundation
import ObjectGraph

/// A change to a ``FetchedCollection``, in the order a list view would apply them.
public enum FetchedUpdate: Hashable, Sendable {
    case insert(FetchedIndexPath)
    case delete(FetchedIndexPath)
    case move(FetchedIndexPath, FetchedIndexPath)
    case update(FetchedIndexPath)
    case insertSection(Int)
    case deleteSection(Int)
}

/// A headless fetched collection (PeakCoreData's `FetchedCollection`): sections and objects of a fetched
/// results controller, with the list of changes each time its context changes.
public final class FetchedCollection<T: ManagedObject>: FetchedResultsControllerDelegate {
    /// The controller underneath.
    public let controller: FetchedResultsController
    /// Called after each batch of changes with the updates, sections first.
    public var onChange: (([FetchedUpdate]) -> Void)?
    private var pending: [FetchedUpdate] = []

    /// Fetches and starts tracking.
    public init(fetchRequest: FetchRequest, context: ManagedObjectContext, sectionNameKeyPath: String? = nil) throws {
        controller = FetchedResultsController(fetchRequest: fetchRequest, managedObjectContext: context, sectionNameKeyPath: sectionNameKeyPath)
        controller.delegate = self
        try controller.performFetch()
    }

    /// Number of sections.
    public var numberOfSections: Int { controller.sections?.count ?? 0 }
    /// Number of objects in a section.
    public func numberOfObjects(in section: Int) -> Int { controller.sections?[section].numberOfObjects ?? 0 }
    /// The name of a section.
    public func sectionName(_ section: Int) -> String { controller.sections?[section].name ?? "" }
    /// Every object in order.
    public var objects: [T] { (controller.fetchedObjects ?? []).compactMap { $0 as? T } }
    /// The object at an index path.
    public subscript(indexPath: FetchedIndexPath) -> T { controller.object(at: indexPath) as! T }
    /// The object at an item of a section.
    public subscript(item: Int, section: Int) -> T { self[FetchedIndexPath(item: item, section: section)] }
    /// A snapshot of section names to object IDs.
    public func snapshot() -> FetchedResultsSnapshot { controller.snapshot }

    public func controllerWillChangeContent(_ controller: FetchedResultsController) { pending = [] }

    public func controller(_ controller: FetchedResultsController, didChange section: FetchedSectionInfo, atSectionIndex index: Int, for type: FetchedResultsChangeType) {
        switch type {
        case .insert: pending.append(.insertSection(index))
        case .delete: pending.append(.deleteSection(index))
        default: break
        }
    }

    public func controller(_ controller: FetchedResultsController, didChange object: ManagedObject, at indexPath: FetchedIndexPath?, for type: FetchedResultsChangeType, newIndexPath: FetchedIndexPath?) {
        switch type {
        case .insert: if let newIndexPath { pending.append(.insert(newIndexPath)) }
        case .delete: if let indexPath { pending.append(.delete(indexPath)) }
        case .move: if let indexPath, let newIndexPath { pending.append(.move(indexPath, newIndexPath)) }
        case .update: if let indexPath { pending.append(.update(indexPath)) }
        }
    }

    public func controllerDidChangeContent(_ controller: FetchedResultsController) {
        let updates = pending
        pending = []
        onChange?(updates)
    }
}
