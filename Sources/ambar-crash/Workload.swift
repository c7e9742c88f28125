import Ambar
import Foundation
import ObjectGraph
import SeededRandom

/// The kill tests' model: items written by numbered saves, and one ledger row each save updates. A save is
/// atomic exactly when, in the store, every save number has all or none of its items and the ledger's totals
/// match the items (count, sum of edits, highest save number).
enum CrashModel {
    static let storeFileName = "crash.sqlite"

    static func make() throws -> ManagedObjectModel {
        func int(_ name: String) -> AttributeDescription {
            AttributeDescription(name: name, type: .integer64, isOptional: false, defaultValue: .integer(0))
        }
        return try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Item", attributes: [int("id"), int("saveNumber"), int("edits"), AttributeDescription(name: "label", type: .string)],
                uniquenessConstraints: [["id"]]),
            EntityDescription(
                name: "Ledger", attributes: [AttributeDescription(name: "name", type: .string), int("saves"), int("items"), int("edits")],
                uniquenessConstraints: [["name"]]),
        ])
    }
}

/// The side file of acknowledged saves: `intent <save> <inserts> <edits> <kind>` before a save, `ack <save>`
/// after `save()` returned, each line written with one `write` and made durable with `fsync` before going on.
final class Journal {
    private let descriptor: Int32

    init(path: String) throws {
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard descriptor >= 0 else { throw CrashToolError("cannot open the journal \(path): \(String(cString: strerror(errno)))") }
    }

    deinit { close(descriptor) }

    func append(_ line: String) throws {
        let bytes = Array((line + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(descriptor) == 0 else {
            throw CrashToolError("cannot write the journal: \(String(cString: strerror(errno)))")
        }
    }

    /// What a journal says: the last intent for each save number (a killed save's number is reused by the next
    /// process) and the acknowledged save numbers. A torn last line (no newline) is ignored.
    struct Contents {
        var intents: [Int64: (inserts: Int64, edits: Int64)] = [:]
        var acknowledged: Set<Int64> = []
        var lastIntent: Int64 = 0
    }

    static func read(path: String) -> Contents {
        var contents = Contents()
        guard let data = FileManager.default.contents(atPath: path) else { return contents }
        let text = String(decoding: data, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if !text.hasSuffix("\n") || text.isEmpty { lines.removeLast() }
        for line in lines {
            let fields = line.split(separator: " ")
            if fields.count >= 4, fields[0] == "intent", let k = Int64(fields[1]), let n = Int64(fields[2]), let e = Int64(fields[3]) {
                contents.intents[k] = (n, e)
                contents.lastIntent = k
            } else if fields.count == 2, fields[0] == "ack", let k = Int64(fields[1]) {
                contents.acknowledged.insert(k)
            }
        }
        return contents
    }
}

struct CrashToolError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One save of the workload through one of the container's contexts.
enum Workload {
    enum Kind: String, CaseIterable {
        /// A private context on the writer coordinator.
        case importer
        /// A private context on the main coordinator (`.rollback`; conflict-free saves reach the store).
        case temporary
        /// A child of the view context, then the view context's save.
        case editor
    }

    /// Performs save number `ledger.saves + 1`: inserts items, edits earlier ones, updates the ledger, all in
    /// one `save()`; journals the intent before and the acknowledgement after. Returns the save number.
    @discardableResult
    static func save(
        kind: Kind, container: AmbarContainer, mainQueue: ContextQueue, journal: Journal?, rng: inout SeededGenerator
    ) throws -> Int64 {
        let inserts = Int64.random(in: 0...40, using: &rng)
        let editCount = Int.random(in: 0...6, using: &rng)
        let editSeeds = (0..<editCount).map { _ in UInt64.random(in: 0...UInt64.max, using: &rng) }
        let context: ManagedObjectContext
        switch kind {
        case .importer: context = container.importerContext()
        case .temporary: context = container.temporaryContext()
        case .editor:
            // Pending smart merges run first, so the view context saves on top of the latest ledger.
            mainQueue.sync {}
            let view = container.viewContext
            view.performAndWait { view.reset() }
            context = try container.editorContext()
        }
        let number: Int64 = try context.performAndWait {
            let ledger = try fetchLedger(in: context)
            let number = (ledger.value(forKey: "saves") as? Int64 ?? 0) + 1
            let existing = ledger.value(forKey: "items") as? Int64 ?? 0
            let editIDs = existing == 0 ? [] : Array(Set(editSeeds.map { Int64($0 % UInt64(existing)) + 1 })).sorted()
            try journal?.append("intent \(number) \(inserts) \(editIDs.count) \(kind.rawValue)")
            for i in 0..<inserts {
                let item = try context.insertNewObject(forEntityName: "Item")
                try item.setValue(existing + i + 1, forKey: "id")
                try item.setValue(number, forKey: "saveNumber")
                try item.setValue("save \(number) item \(i)", forKey: "label")
            }
            if !editIDs.isEmpty {
                let request = FetchRequest(entityName: "Item", predicate: try ObjectPredicate(format: "id IN %@", editIDs))
                let items = try context.fetch(request)
                guard items.count == editIDs.count else {
                    throw CrashToolError("save \(number): found \(items.count) of the \(editIDs.count) items to edit")
                }
                for item in items { try item.setValue((item.value(forKey: "edits") as? Int64 ?? 0) + 1, forKey: "edits") }
            }
            try ledger.setValue(number, forKey: "saves")
            try ledger.setValue(existing + inserts, forKey: "items")
            try ledger.setValue((ledger.value(forKey: "edits") as? Int64 ?? 0) + Int64(editIDs.count), forKey: "edits")
            try context.save()
            return number
        }
        if kind == .editor {
            let view = container.viewContext
            try view.performAndWait { try view.save() }
        }
        try journal?.append("ack \(number)")
        return number
    }

    private static func fetchLedger(in context: ManagedObjectContext) throws -> ManagedObject {
        let request = FetchRequest(entityName: "Ledger", predicate: try ObjectPredicate(format: "name == %@", "ledger"))
        if let ledger = try context.fetch(request).first { return ledger }
        let ledger = try context.insertNewObject(forEntityName: "Ledger")
        try ledger.setValue("ledger", forKey: "name")
        return ledger
    }

    static func openContainer(directory: URL, mainQueue: ContextQueue, storeOptions: StoreOptions = StoreOptions()) throws -> AmbarContainer {
        var options = AmbarContainer.Options()
        options.mainQueue = mainQueue
        return try AmbarContainer(
            model: CrashModel.make(), storeURL: directory.appendingPathComponent(CrashModel.storeFileName),
            storeOptions: storeOptions, options: options)
    }
}
