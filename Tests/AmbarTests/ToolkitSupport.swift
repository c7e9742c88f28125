import Foundation
import Synchronization
import Testing
@testable import Ambar
@testable import ObjectGraph

// Helpers of the toolkit tests (ToolkitTests*.swift). Every name starts with `TK` so that it does not clash with
// Support.swift or with other test files.

/// A status stored through its raw value in the string attribute `status` (the seeds' `CoreDataRepresentable`).
enum TKStatus: String, CoreDataRepresentable, Sendable {
    case draft, published, archived
    static let coreDataDefault = TKStatus.draft
}

/// An item of the toolkit model; `ManagedObjectType` with a default sort by `id`.
final class TKItem: ManagedObject, ManagedObjectType {
    @Managed("id") var id: Int64
    @Managed("name") var name: String?
    @Managed("price") var price: Double
    @Managed("group") var group: String?
    @Managed("status") var status: TKStatus
    @Managed("tag") var tag: TKTag?

    static var defaultSortDescriptors: [ObjectSortDescriptor] { [ObjectSortDescriptor("id")] }
}

/// A tag of the toolkit model (uses the default `entityName`, no default sort).
final class TKTag: ManagedObject, ManagedObjectType {
    @Managed("name") var name: String?
    @Managed("items") var items: Set<TKItem>
}

/// The toolkit model; `nameMaxLength` makes a variant whose saves fail validation for long names.
func makeToolkitModel(nameMaxLength: Int? = nil) throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [
        EntityDescription(
            name: "TKItem", managedObjectClass: TKItem.self,
            attributes: [
                AttributeDescription(name: "id", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                AttributeDescription(name: "name", type: .string, maxLength: nameMaxLength),
                AttributeDescription(name: "price", type: .double, isOptional: false, defaultValue: .double(0)),
                AttributeDescription(name: "group", type: .string),
                AttributeDescription(name: "status", type: .string),
            ],
            relationships: [RelationshipDescription(name: "tag", destination: "TKTag", inverse: "items")],
            uniquenessConstraints: [["id"]]),
        EntityDescription(
            name: "TKTag", managedObjectClass: TKTag.self,
            attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [RelationshipDescription(name: "items", destination: "TKItem", inverse: "tag", toMany: true)]),
    ])
}

/// One item to seed.
struct TKSeed: Sendable {
    var id: Int64
    var price: Double
    var group: String?
    var name: String?
    init(_ id: Int64, price: Double? = nil, group: String? = nil, name: String? = nil) {
        self.id = id
        self.price = price ?? Double(id)
        self.group = group
        self.name = name ?? "item \(id)"
    }
}

/// An Ambar container over the toolkit model on a temporary directory, with its own simulated main queue.
final class TKStack: @unchecked Sendable {  // immutable after init
    let directory: URL
    let main: ContextQueue
    let container: AmbarContainer

    init(storeType: AmbarContainer.StoreType = .sqlite, options: AmbarContainer.Options = .init(), nameMaxLength: Int? = nil) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-toolkit-\(UUID().uuidString)", isDirectory: true)
        main = ContextQueue(label: "toolkit.main")
        var options = options
        options.mainQueue = main
        container = try AmbarContainer(storeType: storeType, model: makeToolkitModel(nameMaxLength: nameMaxLength), storeURL: directory, options: options)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    var view: ManagedObjectContext { container.viewContext }

    /// Waits until every block queued on the main queue so far has run.
    func drainMain() { main.sync {} }

    /// Inserts items through one importer context save (merged into the view context later, on the main queue).
    @discardableResult
    func seed(_ seeds: [TKSeed]) throws -> [ManagedObjectID] {
        let importer = container.importerContext()
        return try importer.performAndWait {
            let items = seeds.map { s -> TKItem in
                let item = TKItem(context: importer)
                item.id = s.id
                item.price = s.price
                item.group = s.group
                item.name = s.name
                return item
            }
            try importer.save()
            return items.map(\.objectID)
        }
    }

    /// Seeds and waits for the smart merge, so that tests start from a quiet main queue.
    @discardableResult
    func seedAndSettle(_ seeds: [TKSeed]) throws -> [ManagedObjectID] {
        let ids = try seed(seeds)
        drainMain()
        return ids
    }

    /// Changes items through an importer context and saves (the change reaches the view by the smart merge).
    func importerChange(_ body: (ManagedObjectContext) throws -> Void) throws {
        let importer = container.importerContext()
        try importer.performAndWait {
            try body(importer)
            try importer.save()
        }
    }

    /// A view-context fetch of items by id, loaded (not faults).
    func viewItems(_ ids: [Int64]) throws -> [TKItem] {
        let view = self.view
        return try view.performAndWait {
            try TKItem.fetch(in: view, predicate: .in("id", ids)) { $0.returnsObjectsAsFaults = false }
        }
    }
}

/// A thread-safe log of events reported by handlers on other queues.
final class TKLog<Element: Sendable>: Sendable {
    private let storage = Mutex<[Element]>([])
    init() {}
    func append(_ element: Element) { storage.withLock { $0.append(element) } }
    var all: [Element] { storage.withLock { $0 } }
    var count: Int { storage.withLock { $0.count } }
    /// Returns the events logged so far and forgets them.
    func take() -> [Element] { storage.withLock { let e = $0; $0 = []; return e } }
}

/// The intermediate value of the import tests (a decoded web-service record, in PeakCoreData's words).
struct TKItemRecord: ManagedObjectUpdatable, UniqueIdentifiable, Sendable {
    typealias ManagedObjectKind = TKItem
    static var uniqueIDKey: String { "id" }
    var id: Int64
    var name: String
    var price: Double
    var uniqueIDValue: Int64 { id }

    init(_ id: Int64, name: String? = nil, price: Double? = nil) {
        self.id = id
        self.name = name ?? "record \(id)"
        self.price = price ?? Double(id)
    }

    func updateProperties(on managedObject: TKItem) {
        managedObject.name = name
        managedObject.price = price
    }
}

func tkPath(_ item: Int, _ section: Int) -> FetchedIndexPath { FetchedIndexPath(item: item, section: section) }
