import Foundation
import Testing
@testable import ObjectGraph

final class Item: ManagedObject {
    @Managed("id") var id: Int64
    @Managed("name") var name: String?
    @Managed("price") var price: Double
    @Managed("added") var added: Date?
    @Managed("flag") var flag: Bool
    @Managed("tag") var tag: Tag?
    @Managed("labels") var labels: Set<Label>

    nonisolated(unsafe) static var awakeFromInsertCalls = 0
    var awakeFromFetchCalls = 0
    var willSaveCalls = 0
    var didSaveCalls = 0

    override func awakeFromFetch() { awakeFromFetchCalls += 1 }
    override func willSave() { willSaveCalls += 1 }
    override func didSave() { didSaveCalls += 1 }
}

final class Tag: ManagedObject {
    @Managed("name") var name: String?
    @Managed("items") var items: Set<Item>
}

final class Label: ManagedObject {
    @Managed("title") var title: String?
    @Managed("items") var items: Set<Item>
}

/// A fresh model per test (an entity belongs to one model).
func makeModel(itemTagDeleteRule: DeleteRule = .nullify, tagItemsDeleteRule: DeleteRule = .nullify) throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [
        EntityDescription(
            name: "Item", managedObjectClass: Item.self,
            attributes: [
                AttributeDescription(name: "id", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                AttributeDescription(name: "name", type: .string, maxLength: 40),
                AttributeDescription(name: "price", type: .double, isOptional: false, defaultValue: .double(0), minValue: 0),
                AttributeDescription(name: "added", type: .date),
                AttributeDescription(name: "flag", type: .boolean, defaultValue: .bool(false)),
                AttributeDescription(name: "scratch", type: .string, isTransient: true),
            ],
            relationships: [
                RelationshipDescription(name: "tag", destination: "Tag", inverse: "items", deleteRule: itemTagDeleteRule),
                RelationshipDescription(name: "labels", destination: "Label", inverse: "items", toMany: true),
            ],
            uniquenessConstraints: [["id"]]),
        EntityDescription(
            name: "Tag", managedObjectClass: Tag.self,
            attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "tag", toMany: true, deleteRule: tagItemsDeleteRule)]),
        EntityDescription(
            name: "Label", managedObjectClass: Label.self,
            attributes: [AttributeDescription(name: "title", type: .string)],
            relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "labels", toMany: true)]),
    ])
}

/// A store in its own temporary directory, removed when the stack is released.
final class TestStack: @unchecked Sendable {
    let directory: URL
    let model: ManagedObjectModel
    let url: URL
    let coordinator: PersistentStoreCoordinator

    init(model: ManagedObjectModel? = nil, type: PersistentStoreType = .sqlite, options: StoreOptions = StoreOptions()) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("og-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.model = try model ?? makeModel()
        url = directory.appendingPathComponent("store.sqlite")
        coordinator = PersistentStoreCoordinator(managedObjectModel: self.model, name: "main")
        try coordinator.addPersistentStore(type: type, at: url, options: options)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// A second coordinator on the same file (semantics §2.4).
    func secondCoordinator(options: StoreOptions = StoreOptions()) throws -> PersistentStoreCoordinator {
        let c = PersistentStoreCoordinator(managedObjectModel: model, name: "second")
        try c.addPersistentStore(type: .sqlite, at: url, options: options)
        return c
    }

    func context(_ coordinator: PersistentStoreCoordinator? = nil, policy: MergePolicy = .error, name: String? = nil) -> ManagedObjectContext {
        let c = ManagedObjectContext(concurrencyType: .privateQueue)
        c.persistentStoreCoordinator = coordinator ?? self.coordinator
        c.mergePolicy = policy
        c.name = name
        return c
    }

    func child(of parent: ManagedObjectContext) -> ManagedObjectContext {
        let c = ManagedObjectContext(concurrencyType: .privateQueue)
        c.parent = parent
        return c
    }

    /// A main-queue root context on this stack's coordinator and a main-queue child of it, both on one simulated
    /// main queue (two main-queue contexts, as an app's view context and a child of it for an editor).
    func mainQueueRootAndChild(label: String) -> (root: ManagedObjectContext, child: ManagedObjectContext) {
        let queue = ContextQueue(label: label)
        let root = ManagedObjectContext(concurrencyType: .mainQueue, queue: queue)
        root.persistentStoreCoordinator = coordinator
        let child = ManagedObjectContext(concurrencyType: .mainQueue, queue: queue)
        child.parent = root
        return (root, child)
    }

    /// Inserts items with ids 1...n (prices 10, 20, …) and saves them.
    @discardableResult
    func seed(_ n: Int, in context: ManagedObjectContext? = nil) throws -> [ManagedObjectID] {
        let ctx = context ?? self.context()
        return try ctx.performAndWait {
            var items: [Item] = []
            for i in 1...n {
                let item = Item(context: ctx)
                item.id = Int64(i)
                item.name = "item \(i)"
                item.price = Double(i * 10)
                items.append(item)
            }
            try ctx.save()
            return items.map(\.objectID)
        }
    }

    /// Runs SQL against the store file with its own connection (what the `sqlite3` CLI would see).
    func sql(_ query: String) throws -> [[SQLiteValue]] {
        let connection = try SQLiteConnection(path: url.path, busyTimeout: 5)
        return try connection.query(query)
    }
}

func fetchItems(_ context: ManagedObjectContext, _ predicate: ObjectPredicate? = nil, sort: [ObjectSortDescriptor] = [ObjectSortDescriptor("id")]) throws -> [Item] {
    var request = FetchRequest(entityName: "Item", predicate: predicate, sortDescriptors: sort)
    request.includesPendingChanges = true
    return try context.fetch(request, as: Item.self)
}

/// Collects notifications of one name posted by one object.
final class NotificationRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var _notes: [Notification] = []
    private var token: (any NSObjectProtocol)?

    init(_ name: Notification.Name, object: AnyObject? = nil) {
        token = NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { [weak self] note in
            guard let self else { return }
            self.lock.lock()
            self._notes.append(note)
            self.lock.unlock()
        }
    }

    deinit { if let token { NotificationCenter.default.removeObserver(token) } }

    var notes: [Notification] {
        lock.lock()
        defer { lock.unlock() }
        return _notes
    }
}

extension PersistentStore {
    /// The keys and rows of a fetch (``identifiedRows(_:)`` without the entity of each row), as the store-level
    /// tests compare them; the library itself reads ``identifiedRows(_:)``.
    func fetch(_ fetch: StoreFetch) throws -> [(key: Int64, row: RowSnapshot?)] {
        try identifiedRows(fetch).map { (key: $0.id.key, row: $0.row) }
    }
}
