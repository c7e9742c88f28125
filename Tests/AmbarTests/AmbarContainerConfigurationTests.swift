import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph

/// Where `AmbarContainer` puts its store, how it finds a model (a model, a model file, a model
/// name in the documented search path), and store options merged over the defaults (semantics §7, seeds 000
/// and 002: "supply the name (no extension) of the specific model … if you don't, library will create a model by
/// merging all models it finds").
@Suite struct AmbarContainerConfigurationTests {
    static func shopFile() -> ModelFile {
        ModelFile(entities: [
            ModelFile.Entity(name: "Product", attributes: [
                ModelFile.Attribute(name: "id", type: .integer64, optional: false, defaultValue: .number(0)),
                ModelFile.Attribute(name: "name", type: .string),
            ], uniquenessConstraints: [["id"]]),
        ])
    }

    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-config-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Options with a private main queue (tests do not drive the process's main queue).
    static var options: AmbarContainer.Options {
        var options = AmbarContainer.Options()
        options.mainQueue = ContextQueue(label: "config.main")
        return options
    }

    static func write(_ file: ModelFile, to url: URL) throws {
        try JSONEncoder().encode(file).write(to: url)
    }

    // A model name is resolved in the search path, first directory that has the file wins;
    // without a name every model of the first directory with model files is merged.
    @Test func modelByNameInTheSearchPath() throws {
        let root = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let empty = root.appendingPathComponent("empty", isDirectory: true)
        let first = root.appendingPathComponent("first", isDirectory: true)
        let second = root.appendingPathComponent("second", isDirectory: true)
        for dir in [empty, first, second] { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) }
        try Self.write(Self.shopFile(), to: first.appendingPathComponent("Shop.json"))
        try Self.write(ModelFile(entities: [ModelFile.Entity(name: "Other")]), to: second.appendingPathComponent("Shop.json"))
        try Self.write(ModelFile(entities: [ModelFile.Entity(name: "Note", attributes: [ModelFile.Attribute(name: "text", type: .string)])]),
                       to: first.appendingPathComponent("Notes.json"))
        let path = [root.appendingPathComponent("missing"), empty, first, second]

        let shop = try AmbarContainer.loadModel(named: "Shop", searchPath: path)
        #expect(shop.entities.map(\.name) == ["Product"])
        let merged = try AmbarContainer.loadModel(named: nil, searchPath: path)
        #expect(Set(merged.entities.map(\.name)) == ["Product", "Note"])
        #expect { try AmbarContainer.loadModel(named: "Absent", searchPath: path) } throws: {
            ($0 as? AmbarError)?.code == .modelNotFound && "\($0)".contains(first.path)  // the error lists where it looked
        }
        try "{ not json".write(to: empty.appendingPathComponent("Broken.json"), atomically: true, encoding: .utf8)
        #expect { try AmbarContainer.loadModel(named: "Broken", searchPath: path) } throws: { ($0 as? AmbarError)?.code == .modelNotFound }
    }

    // The documented search path — $AMBAR_MODEL_PATH entries first, then ./Models, then the
    // default directory's Models — and the default store directory under $XDG_DATA_HOME or ~/.local/share.
    @Test func searchPathAndDefaultDirectoryAreTheDocumentedOnes() throws {
        let path = AmbarContainer.modelSearchPath
        let defaults = AmbarContainer.defaultDirectoryURL()
        #expect(path.suffix(2).map(\.lastPathComponent) == ["Models", "Models"])
        #expect(path.last?.deletingLastPathComponent().standardizedFileURL == defaults.standardizedFileURL)
        #expect(path[path.count - 2].deletingLastPathComponent().standardizedFileURL.path
                == URL(fileURLWithPath: FileManager.default.currentDirectoryPath).standardizedFileURL.path)
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], !xdg.isEmpty {
            #expect(defaults.path.hasPrefix(xdg))
        } else {
            #expect(defaults.path.hasSuffix(".local/share/ambar"))
        }
        // The README documents both.
        let readme = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../README.md").standardizedFileURL, encoding: .utf8)
        for phrase in ["~/.local/share/ambar", "$XDG_DATA_HOME/ambar", "$AMBAR_MODEL_PATH", "./Models", "<defaultDirectoryURL>/Models"] {
            #expect(readme.contains(phrase), "README does not mention \(phrase)")
        }
    }

    // A model file by URL; the store is named after the model in a directory store URL.
    @Test func modelFileAndStoreNaming() throws {
        let root = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let file = root.appendingPathComponent("Shop.json")
        try Self.write(Self.shopFile(), to: file)
        let model = try ManagedObjectModel(contentsOf: file, classes: ["Product": Product.self])
        let stores = root.appendingPathComponent("stores", isDirectory: true)
        let container = try AmbarContainer(model: model, storeURL: stores, options: Self.options)
        #expect(container.storeURL?.lastPathComponent == "Ambar.sqlite")
        #expect(container.storeURL?.deletingLastPathComponent().lastPathComponent == "stores")
        let explicit = try AmbarContainer(model: try ManagedObjectModel(contentsOf: file), storeURL: root.appendingPathComponent("mine.sqlite"), options: Self.options)
        #expect(explicit.storeURL?.lastPathComponent == "mine.sqlite")
        let importer = container.importerContext()
        try importer.performAndWait {
            let p = Product(context: importer)
            p.id = 1
            try importer.save()
        }
        #expect(FileManager.default.fileExists(atPath: stores.appendingPathComponent("Ambar.sqlite").path))
    }

    // Store options are merged over the defaults (WAL stays on) and reach both coordinators.
    @Test func storeOptionsAreMergedOverTheDefaults() throws {
        let root = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        var storeOptions = StoreOptions()
        storeOptions.pragmas = ["synchronous": "FULL"]
        storeOptions.persistentHistoryTracking = true
        let container = try AmbarContainer(model: makeShopModel(), storeURL: root, storeOptions: storeOptions, options: Self.options)
        let importer = container.importerContext()
        try importer.performAndWait {
            let p = Product(context: importer)
            p.id = 1
            try importer.save()
        }
        let temporary = container.temporaryContext()
        try temporary.performAndWait {
            let p = Product(context: temporary)
            p.id = 2
            try temporary.save()
        }
        let url = try #require(container.storeURL)
        let connection = try SQLiteConnection(path: url.path, busyTimeout: 5)
        #expect(try connection.query("PRAGMA journal_mode").first?.first?.string?.lowercased() == "wal")
        // History from both coordinators' saves (the option reached both).
        let history = try container.mainCoordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
        #expect(history.map(\.contextName) == ["importer", "temporary"])
        #expect(try container.writerCoordinator.currentPersistentHistoryToken() == history.last?.token)
    }

    // A store description sets the container's store: its URL, type and options reach both
    // coordinators, as with the separate parameters.
    @Test("AmbarContainer accepts a store description for both coordinators")
    func storeDescriptionReachesBothCoordinators() throws {
        let root = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        var description = PersistentStoreDescription(url: root.appendingPathComponent("described.sqlite"))
        description.setOption(true, forKey: PersistentStoreDescription.persistentHistoryTrackingKey)
        description.shouldAddStoreAsynchronously = true  // the container still adds synchronously: usable on return
        let container = try AmbarContainer(model: makeShopModel(), options: Self.options, storeDescription: description)
        #expect(container.storeURL?.lastPathComponent == "described.sqlite")
        let importer = container.importerContext()
        try importer.performAndWait {
            let p = Product(context: importer)
            p.id = 1
            try importer.save()
        }
        #expect(try container.mainCoordinator.currentPersistentHistoryToken() != nil)
        #expect(try container.writerCoordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?)).count == 1)
    }
}
