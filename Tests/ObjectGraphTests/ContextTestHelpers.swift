import Foundation
import Synchronization
import Testing
@testable import ObjectGraph

// Helpers for ContextTests / FetchTests / CounterTests (names prefixed `ctx` to stay apart from Support.swift).

/// An object whose class counts `awakeFromInsert` per instance (semantics §2.2: it runs in every context of
/// the parent chain).
final class CtxNote: ManagedObject {
    @Managed("text") var text: String?
    var awakeFromInsertCount = 0
    override func awakeFromInsert() { awakeFromInsertCount += 1 }
}

/// A one-entity model for `CtxNote`.
func ctxNoteModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [
        EntityDescription(
            name: "Note", managedObjectClass: CtxNote.self,
            attributes: [AttributeDescription(name: "text", type: .string)]),
    ])
}

/// Records notifications of several names posted by one object, in posting order.
final class CtxSequenceRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var _notes: [Notification] = []
    private var tokens: [any NSObjectProtocol] = []

    init(_ names: [Notification.Name], object: AnyObject) {
        for name in names {
            tokens.append(NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { [weak self] note in
                guard let self else { return }
                self.lock.lock()
                self._notes.append(note)
                self.lock.unlock()
            })
        }
    }

    deinit { for token in tokens { NotificationCenter.default.removeObserver(token) } }

    var notes: [Notification] {
        lock.lock()
        defer { lock.unlock() }
        return _notes
    }

    var names: [Notification.Name] { notes.map(\.name) }
}

/// A thread-safe box for values produced inside `perform` blocks.
final class CtxBox<T: Sendable>: Sendable {
    private let state: Mutex<T>
    init(_ value: T) { state = Mutex(value) }
    var value: T {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}

/// Seeds tags named `tagNames`, each with `itemsPerTag` items (ids 1…n in tag order, price id*10), and saves.
@discardableResult
func ctxSeedTagged(_ stack: TestStack, tagNames: [String], itemsPerTag: Int) throws -> (tags: [ManagedObjectID], items: [ManagedObjectID]) {
    let ctx = stack.context()
    return try ctx.performAndWait {
        var tags: [Tag] = []
        var items: [Item] = []
        var next: Int64 = 1
        for name in tagNames {
            let tag = Tag(context: ctx)
            tag.name = name
            tags.append(tag)
            for _ in 0..<itemsPerTag {
                let item = Item(context: ctx)
                item.id = next
                item.name = "item \(next)"
                item.price = Double(next * 10)
                item.tag = tag
                items.append(item)
                next += 1
            }
        }
        try ctx.save()
        return (tags.map(\.objectID), items.map(\.objectID))
    }
}

/// The ids (`Item.id`) of items, in order.
func ctxIDs(_ items: [Item]) -> [Int64] { items.map { $0.id } }

/// A fetch request for items with the given options.
func ctxItemRequest(_ predicate: ObjectPredicate? = nil, sort: [ObjectSortDescriptor] = [ObjectSortDescriptor("id")]) -> FetchRequest {
    FetchRequest(entityName: "Item", predicate: predicate, sortDescriptors: sort)
}

/// SELECT statements run so far by the coordinator's store.
func ctxSelects(_ coordinator: PersistentStoreCoordinator) -> Int { coordinator.counters.statements.select }

/// Write statements (INSERT, UPDATE, DELETE) run so far by the coordinator's store.
func ctxWrites(_ coordinator: PersistentStoreCoordinator) -> Int {
    let s = coordinator.counters.statements
    return s.insert + s.update + s.delete
}
