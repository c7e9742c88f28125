import Foundation
import Synchronization
import Testing
@testable import Ambar
@testable import ObjectGraph

/// Settings read from the environment so `make fuzz RUNS=N` and `make crash-test TRIALS=N` reuse the tests.
enum ReliabilitySettings {
    static func integer(_ name: String, default value: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap { Int($0) } ?? value
    }
    static var fuzzRuns: Int { integer("FUZZ_RUNS", default: 1_000) }
    /// `make test` fuzzes with one fixed seed, so it repeats; `make fuzz` passes `FUZZ_SEED=random` (a fresh seed
    /// each run, printed by every target) or the number a run printed, to replay it.
    static var fuzzSeed: UInt64 { fuzzSeed(from: ProcessInfo.processInfo.environment["FUZZ_SEED"]) }
    static let fixedFuzzSeed: UInt64 = 0xA3BA
    /// One fresh seed per test process: every target of one `make fuzz` run uses it, and prints it.
    static let freshFuzzSeed = UInt64.random(in: 1...UInt64(UInt32.max))

    static func fuzzSeed(from value: String?) -> UInt64 {
        guard let value, !value.isEmpty else { return fixedFuzzSeed }
        if value == "random" { return freshFuzzSeed }
        guard let seed = UInt64(value) else { preconditionFailure("FUZZ_SEED is a number (a seed a run printed) or 'random', not \(value.debugDescription)") }
        return seed
    }
    static var packageDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}

/// A fresh temporary directory, removed when released.
final class TemporaryDirectory: Sendable {
    let url: URL
    init(_ label: String = "reliability") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-\(label)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
}

/// The model of the fault, leak and stress tests: notes with marks that each kind of writer owns.
func makeNotesModel() throws -> ManagedObjectModel {
    func int(_ name: String) -> AttributeDescription {
        AttributeDescription(name: name, type: .integer64, isOptional: false, defaultValue: .integer(0))
    }
    return try ManagedObjectModel(entities: [
        EntityDescription(
            name: "Note",
            attributes: [int("id"), AttributeDescription(name: "title", type: .string), AttributeDescription(name: "body", type: .binaryData),
                         int("importerMark"), int("editorMark"), int("temporaryMark"), int("writerMark")],
            relationships: [RelationshipDescription(name: "folder", destination: "Folder", inverse: "notes")],
            uniquenessConstraints: [["id"]]),
        EntityDescription(
            name: "Folder", attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [RelationshipDescription(name: "notes", destination: "Note", inverse: "folder", toMany: true)]),
    ])
}

/// Inserts notes `ids` in `context` (on its queue) with titles and an optional body of `bodyBytes` bytes.
@discardableResult
func insertNotes(_ ids: some Sequence<Int>, in context: ManagedObjectContext, bodyBytes: Int = 0) throws -> [ManagedObject] {
    try ids.map { id in
        let note = try context.insertNewObject(forEntityName: "Note")
        try note.setValue(Int64(id), forKey: "id")
        try note.setValue("note \(id)", forKey: "title")
        if bodyBytes > 0 { try note.setValue(Data(repeating: UInt8(id & 0xff), count: bodyBytes), forKey: "body") }
        return note
    }
}

/// The number of notes in the store, read with a fresh connection (what the `sqlite3` CLI would see).
func storedNoteIDs(_ path: String) throws -> [Int64] {
    let connection = try SQLiteConnection(path: path, busyTimeout: 5)
    return try connection.query("SELECT ZID FROM ZNOTE ORDER BY ZID").compactMap { $0[0].int64 }
}

/// A container on a new directory with its own simulated main queue.
struct NotesStack {
    let directory: TemporaryDirectory
    let main: ContextQueue
    let container: AmbarContainer
    var storePath: String { container.storeURL!.path }

    init(directory: TemporaryDirectory? = nil, storeOptions: StoreOptions = StoreOptions()) throws {
        self.directory = try directory ?? TemporaryDirectory()
        main = ContextQueue(label: "reliability.main")
        var options = AmbarContainer.Options()
        options.mainQueue = main
        container = try AmbarContainer(model: makeNotesModel(), storeURL: self.directory.url.appendingPathComponent("Notes.sqlite"), storeOptions: storeOptions, options: options)
    }
}
