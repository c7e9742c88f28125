// A lightweight migration killed with SIGKILL leaves either the previous version's store, whole, or the next
// version's, whole: never a half-migrated file.
//
//   ambar-crash migrate-harness [--trials N] [--rows R] [--seed S] [--max-delay-ms M]
//   ambar-crash migrate-child --store FILE   open the store with the next version (migrating it), stopping at each
//     step of the migration until the harness answers, then exit 0
//
// Where a kill lands is chosen by the harness, not by the machine's speed: the child names each step it reaches
// on its standard output and waits for a line on its standard input before going on. The harness kills it at a
// seeded point: inside the work that follows a step (a seeded 0 to M ms after letting it go on; the child stops
// at the next step at the latest), while it waits before the commit, or after the commit. So which version each
// trial must leave is known in advance, on a loaded machine as on a quiet one.
import Foundation
import ObjectGraph
import SeededRandom

enum MigrationModels {
    /// v1: Item (id, name, price).
    static func v1() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "id", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                AttributeDescription(name: "name", type: .string),
                AttributeDescription(name: "price", type: .double),
            ]),
        ], versionName: "v1")
    }

    /// v2: `name` renamed `title`, `stock` added (required, default 0).
    static func v2() throws -> ManagedObjectModel {
        var title = AttributeDescription(name: "title", type: .string)
        title.renamingIdentifier = "name"
        return try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", attributes: [
                AttributeDescription(name: "id", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                title,
                AttributeDescription(name: "price", type: .double),
                AttributeDescription(name: "stock", type: .integer64, isOptional: false, defaultValue: .integer(0)),
            ]),
        ], versionName: "v2", previousVersions: [try v1()])
    }

    static var migrating: StoreOptions {
        var options = StoreOptions()
        options.migrateAutomatically = true
        options.inferMappingModel = true
        return options
    }
}

/// The points where the migrating child stops and waits for the harness: its start, each step of the migration
/// (SQLiteStore+Migration.swift), and the migration committed.
enum MigrationPoint {
    static let start = "start"
    static let committed = "committed"
    static let beforeCommit = "beforeCommit"
    /// In the order the child reaches them.
    static let all = [start, "tablesMovedAside", "tablesCreated", "rowsCopied", "oldTablesDropped", beforeCommit, committed]
}

func runMigrateChild(store: String) throws -> Never {
    @Sendable func stop(at point: String) {
        FileHandle.standardOutput.write(Data((point + "\n").utf8))
        _ = readLine()
    }
    MigrationHooks.step.withLock { $0 = { name in stop(at: name) } }
    stop(at: MigrationPoint.start)
    let coordinator = PersistentStoreCoordinator(managedObjectModel: try MigrationModels.v2(), name: "child")
    try coordinator.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: store), options: MigrationModels.migrating)
    stop(at: MigrationPoint.committed)
    exit(0)
}

/// The child's standard output, read a line at a time.
struct LineReader {
    let handle: FileHandle
    var buffer = Data()

    /// The next line, or nil once the child has closed its output (exited or was killed).
    mutating func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }
}

struct MigrationHarness {
    var executable: String
    var trials = 20
    var rows = 20_000
    var seed: UInt64 = 1
    /// A kill inside a step's work lands 0 to this many milliseconds after the child was let go on.
    var maxDelayMilliseconds = 5

    struct Figures {
        var trials = 0
        /// Killed before the migration committed: the v1 store was found whole.
        var previousVersionWhole = 0
        /// The migration had committed (or the child finished): the v2 store was found whole.
        var nextVersionWhole = 0
        /// Trials whose kill landed where the point chosen for them says (before or after the commit).
        var killedAsChosen = 0
        var failures: [String] = []
        var summary: String {
            "migrate-crash-test: trials=\(trials) previousVersionWhole=\(previousVersionWhole) nextVersionWhole=\(nextVersionWhole) killedAsChosen=\(killedAsChosen) failures=\(failures.count)"
        }
    }

    /// A v1 store of `rows` items: id i, name "item i", price i / 2.
    func makeStore(at url: URL) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try MigrationModels.v1(), name: "seed")
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            var request = BatchInsertRequest(entityName: "Item", objects: (1...rows).map { ["id": Int64($0), "name": "item \($0)", "price": Double($0) / 2] })
            request.resultType = .count
            _ = try context.execute(request)
        }
    }

    /// Every row, as the model in use names its text field: (id, text, price).
    func contents(_ coordinator: PersistentStoreCoordinator, textKey: String) throws -> [(Int64, String, Double)] {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return try context.performAndWait {
            try context.fetch(FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])).map {
                ($0.value(forKey: "id") as? Int64 ?? -1, $0.value(forKey: textKey) as? String ?? "", $0.value(forKey: "price") as? Double ?? -1)
            }
        }
    }

    func run(progress: (Int, Figures) -> Void = { _, _ in }) throws -> Figures {
        signal(SIGPIPE, SIG_IGN)  // a child that died early must not take the harness with it
        var figures = Figures()
        var rng = SeededGenerator(seed: seed)
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-migrate-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let expected = (1...rows).map { (Int64($0), "item \($0)", Double($0) / 2) }
        // Every point in turn, in a seeded order, so that a few trials already reach both sides of the commit.
        var order: [Int] = []
        for trial in 1...trials {
            figures.trials = trial
            if order.isEmpty { order = Array(MigrationPoint.all.indices).shuffled(using: &rng) }
            let target = order.removeLast()
            let delay = UInt32(Int.random(in: 0..<max(1, maxDelayMilliseconds + 1), using: &rng))
            let store = work.appendingPathComponent("trial-\(trial).sqlite")
            try makeStore(at: store)
            let child = Process()
            child.executableURL = URL(fileURLWithPath: executable)
            child.arguments = ["migrate-child", "--store", store.path]
            let input = Pipe(), output = Pipe()
            child.standardInput = input
            child.standardOutput = output
            child.standardError = FileHandle.nullDevice
            try child.run()
            var lines = LineReader(handle: output.fileHandleForReading)
            var reached: String?
            while let line = lines.next() {
                if line == MigrationPoint.all[target] {
                    reached = line
                    if line != MigrationPoint.beforeCommit && line != MigrationPoint.committed {
                        // Into the work that follows: it runs to the next point at the latest, still before the commit.
                        input.fileHandleForWriting.write(Data("go\n".utf8))
                        usleep(delay * 1000)
                    }
                    kill(child.processIdentifier, SIGKILL)
                    break
                }
                input.fileHandleForWriting.write(Data("go\n".utf8))
            }
            try? input.fileHandleForWriting.close()
            child.waitUntilExit()
            let killedAfterCommit = reached == MigrationPoint.committed
            if reached == nil { figures.failures.append("trial \(trial): the child never reached \(MigrationPoint.all[target])") }
            var foundNext: Bool?  // which version the file was found whole as, if either
            // Which version is the file now? The previous one opens without migrating; else the next one must.
            let previous = PersistentStoreCoordinator(managedObjectModel: try MigrationModels.v1(), name: "check-v1")
            do {
                try previous.addPersistentStore(type: .sqlite, at: store)
                let found = try contents(previous, textKey: "name")
                if found.count != rows || !zip(found, expected).allSatisfy({ $0 == $1 }) {
                    figures.failures.append("trial \(trial): the previous version's store has \(found.count) of \(rows) rows, or changed values")
                } else {
                    figures.previousVersionWhole += 1
                    foundNext = false
                }
            } catch let error as ObjectGraphError where error.code == .persistentStoreIncompatibleVersionHash {
                let next = PersistentStoreCoordinator(managedObjectModel: try MigrationModels.v2(), name: "check-v2")
                do {
                    try next.addPersistentStore(type: .sqlite, at: store)
                    let found = try contents(next, textKey: "title")
                    if found.count != rows || !zip(found, expected).allSatisfy({ $0 == $1 }) {
                        figures.failures.append("trial \(trial): the migrated store has \(found.count) of \(rows) rows, or changed values")
                    } else {
                        figures.nextVersionWhole += 1
                        foundNext = true
                    }
                } catch {
                    figures.failures.append("trial \(trial): the store is neither version: \(error)")
                }
            }
            if reached != nil {
                if foundNext == killedAfterCommit {
                    figures.killedAsChosen += 1
                } else {
                    figures.failures.append("trial \(trial): killed at \(MigrationPoint.all[target]), the store is not the \(killedAfterCommit ? "next" : "previous") version")
                }
            }
            // Whatever the kill left, opening with the next version now completes the migration.
            let finish = PersistentStoreCoordinator(managedObjectModel: try MigrationModels.v2(), name: "finish")
            do {
                try finish.addPersistentStore(type: .sqlite, at: store, options: MigrationModels.migrating)
                if try contents(finish, textKey: "title").count != rows { figures.failures.append("trial \(trial): the finished migration lost rows") }
            } catch {
                figures.failures.append("trial \(trial): the migration could not be finished: \(error)")
            }
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store.path + suffix) }
            progress(trial, figures)
        }
        return figures
    }
}
