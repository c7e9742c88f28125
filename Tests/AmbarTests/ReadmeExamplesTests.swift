import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph

extension Product: ManagedObjectType {}

/// The intermediate record of the README's import example.
struct ProductRecord: ManagedObjectUpdatable, UniqueIdentifiable, Sendable {
    static let uniqueIDKey = "id"
    var id: Int64
    var name: String
    var price: Double
    var uniqueIDValue: Int64 { id }
    func updateProperties(on product: Product) {
        product.name = name
        product.price = price
    }
}

/// The README's Ambar snippets, compiled and run; the last test checks the README still shows
/// exactly these snippets.
@Suite(.serialized) struct ReadmeExamplesTests {
    // Each snippet is kept between `// snippet` markers, verbatim as in the README.
    @Test func snippetsRun() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let shopModel = try makeShopModel()
        var options = AmbarContainer.Options()
        options.mainQueue = ContextQueue(label: "readme.main")
        // snippet
        // Set up: two coordinators on one SQLite file, a view context on the main queue.
        let stack = try AmbarContainer(model: shopModel, storeURL: directory, options: options)
        let view = stack.viewContext
        // end
        // snippet
        // Import in the background: importer contexts sit on the writer coordinator and favour the in-memory state.
        let importer = stack.importerContext()
        try importer.performAndWait {
            for i in 1...100 {
                let product = Product(context: importer)
                product.id = Int64(i)
                product.name = "product \(i)"
            }
            try importer.save()   // the smart merge refreshes what the view context has loaded
        }
        // end
        view.queue.sync {}
        // snippet
        // Edit in a child of the view context; saving pushes to the view context, saving that writes to disk.
        let editor = try stack.editorContext()
        try editor.performAndWait {
            let product = try #require(try Product.first(in: editor, predicate: .compare("id", .equalTo, 1)))
            product.name = "edited"
            try editor.save()
        }
        try view.performAndWait { try view.save() }
        // end
        // snippet
        // ManagedObjectType helpers and an observer of a count.
        let cheap = try view.performAndWait { try Product.count(in: view, predicate: try ObjectPredicate(format: "price < %@", 5)) }
        let observer = CountObserver<Product>(predicate: .compare("price", .lessThan, 5), context: view)
        try view.performAndWait { try observer.startObserving { count in print("cheap products:", count) } }
        // end
        #expect(cheap == 100)
        #expect(observer.count == 100)
        // snippet
        // Import values by unique ID without duplicates: fetched in chunks (here 100), saved once per batch
        // (PeakCoreData's default of 50,000 values, so here one save).
        let records = (1...250).map { ProductRecord(id: Int64($0), name: "imported \($0)", price: 3) }
        let changes = try await BatchImport(values: records, chunkSize: 100).run(in: stack.importerContext())
        print(changes.inserted.count, changes.updated.count)
        // end
        #expect(changes.inserted.count == 150)
        #expect(changes.updated.count == 100)
        let reader = stack.importerContext()
        let (count, firstName) = try reader.performAndWait { () throws in
            (try Product.count(in: reader), try Product.first(in: reader, predicate: .compare("id", .equalTo, 1))?.name)
        }
        #expect(count == 250)
        #expect(firstName == "imported 1")
    }

    @Test func readmeShowsTheseSnippets() throws {
        let testFile = URL(fileURLWithPath: #filePath)
        let root = testFile.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: testFile, encoding: .utf8)
        var snippets: [String] = []
        var current: [String]?
        for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed == "// snippet" { current = []; continue }
            if trimmed == "// end", let lines = current {
                let indent = lines.map { $0.prefix { $0 == " " }.count }.min() ?? 0
                snippets.append(lines.map { String($0.dropFirst(indent)) }.joined(separator: "\n"))
                current = nil
                continue
            }
            current?.append(String(line))
        }
        #expect(snippets.count == 5)
        for snippet in snippets {
            #expect(readme.contains("```swift\n" + snippet + "\n```"), "README.md does not show:\n\(snippet)")
        }
    }
}
