import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph

final class Product: ManagedObject {
    @Managed("id") var id: Int64
    @Managed("name") var name: String?
    @Managed("price") var price: Double
    @Managed("category") var category: Category?
}

final class Category: ManagedObject {
    @Managed("name") var name: String?
    @Managed("products") var products: Set<Product>
}

func makeShopModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [
        EntityDescription(
            name: "Product", managedObjectClass: Product.self,
            attributes: [
                AttributeDescription(name: "id", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                AttributeDescription(name: "name", type: .string),
                AttributeDescription(name: "price", type: .double, isOptional: false, defaultValue: .double(0)),
            ],
            relationships: [RelationshipDescription(name: "category", destination: "Category", inverse: "products")],
            uniquenessConstraints: [["id"]]),
        EntityDescription(
            name: "Category", managedObjectClass: Category.self,
            attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [RelationshipDescription(name: "products", destination: "Product", inverse: "category", toMany: true)]),
    ])
}

/// A container on a temporary directory with its own simulated main queue.
final class TestContainer: @unchecked Sendable {
    let directory: URL
    let container: AmbarContainer
    let main: ContextQueue

    init(storeType: AmbarContainer.StoreType = .sqlite, options: AmbarContainer.Options = .init()) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-tests-\(UUID().uuidString)", isDirectory: true)
        main = ContextQueue(label: "test.main")
        var options = options
        options.mainQueue = main
        container = try AmbarContainer(storeType: storeType, model: makeShopModel(), storeURL: directory, options: options)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    var view: ManagedObjectContext { container.viewContext }

    /// Waits until every block queued on the main queue so far has run.
    func drainMain() { main.sync {} }

    @discardableResult
    func importProducts(_ range: ClosedRange<Int>, price: Double = 1, chunk: Int = 1000) throws -> Int {
        var saved = 0
        for start in stride(from: range.lowerBound, through: range.upperBound, by: chunk) {
            let context = container.importerContext()
            try context.performAndWait {
                for i in start...min(start + chunk - 1, range.upperBound) {
                    let p = Product(context: context)
                    p.id = Int64(i)
                    p.name = "product \(i)"
                    p.price = price
                }
                try context.save()
                saved += 1
            }
        }
        return saved
    }
}
