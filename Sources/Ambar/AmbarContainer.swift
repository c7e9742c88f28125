import Foundation
import ObjectGraph
import Synchronization

/// Which saves the smart merge brings into the view context.
public enum AmbarMergeFilter: String, Sendable, CaseIterable {
    /// Ambar 9.2: saves of contexts on the writer coordinator, except the view context and its direct children.
    case writerOnly
    /// Ambar 8.0–9.1: saves of contexts on either coordinator, except the view context and its direct children.
    case bothCoordinators
}

/// Where the smart merge frees each merge's sets of object IDs once the view context merged them.
public enum AmbarMergeRelease: String, Sendable, CaseIterable, Codable {
    /// Core Data's place (the default): on the merging queue, the main queue, as the merge finishes with them;
    /// freeing N IDs costs O(N) there, beside the merge's O(objects registered in the view context).
    case mergingQueue
    /// Ours: the sets are handed to a background queue and freed there, so the main queue pays for the merge
    /// only. Not what Core Data does; kept so a report can show what it saves.
    case background
}

/// Deterministic counters of an Ambar container.
public struct AmbarCounters: Sendable, Equatable, Codable {
    /// Did-save notifications the smart merge looked at.
    public var saveNotificationsSeen = 0
    /// Saves the filter let through, merged into the view context.
    public var mergesScheduled = 0
    /// Merges that ran on the main queue.
    public var mergesPerformed = 0
    /// Merged saves that came from a child context (their changes had not reached the store).
    public var mergesOfUnsavedChanges = 0
    /// Conflict-free saves from a "read-only" context (view context while read-only, temporary contexts)
    /// that reached the store, as in Core Data and real Ambar.
    public var readOnlySavesReachedStore = 0
    /// Saves from read-only contexts refused in strict mode.
    public var readOnlySavesRefused = 0
    /// Merges whose ID sets were freed on the merging (main) queue (``AmbarMergeRelease/mergingQueue``).
    public var mergeSetsReleasedOnMergingQueue = 0
    /// Merges whose ID sets were freed on the background release queue (``AmbarMergeRelease/background``).
    public var mergeSetsReleasedInBackground = 0

    public init() {}
}

/// The Ambar stack (`AmbarContainer`): a main coordinator for reading and a writer coordinator for background
/// imports on the same SQLite file, a main-queue view context, and a smart merge that refreshes in the view
/// context only the objects it has loaded.
///
/// Each merge's sets of object IDs are freed where Core Data frees them, on the merging (main) queue once the
/// merge is done; ``Options/mergeRelease`` `= .background` hands them to a background queue instead (ours,
/// cheaper for the main queue, not Core Data's behaviour; Docs/core-data-rules.md, rule 30).
///
/// ```swift
/// let stack = try AmbarContainer(model: model, storeURL: directory)
/// let importer = stack.importerContext()
/// try importer.performAndWait { /* insert, update */ try importer.save() }
/// // the view context's loaded objects now show the imported values
/// ```
public final class AmbarContainer: @unchecked Sendable {  // settings guarded by `state`; contexts by their queues
    /// Store types (Ambar supports SQLite and in-memory).
    public enum StoreType: String, Sendable {
        case sqlite
        case inMemory
    }

    /// Options beyond Core Data's.
    public struct Options: Sendable {
        /// Use one coordinator for reading and writing (the writer is the main coordinator).
        public var singleCoordinator = false
        /// Which saves the smart merge takes (default: 9.2's writer-only filter).
        public var mergeFilter: AmbarMergeFilter = .writerOnly
        /// Make "read-only" contexts refuse to save with an error, instead of Core Data's behaviour (a
        /// conflict-free save from a `.rollback` context still reaches the store).
        public var strictReadOnly = false
        /// Whether the smart merge runs (7.x `shouldMergeIncomingSavedObjects`).
        public var shouldMergeIncomingSavedObjects = true
        /// The queue of the view context (default ``ContextQueue/main``).
        public var mainQueue: ContextQueue?
        /// Where each merge's ID sets are freed (default Core Data's: the merging queue).
        public var mergeRelease: AmbarMergeRelease = .mergingQueue

        public init() {}
    }

    /// The model.
    public let managedObjectModel: ManagedObjectModel
    /// The coordinator for the main thread and reads.
    public let mainCoordinator: PersistentStoreCoordinator
    /// The coordinator for background imports (the main one for in-memory stores or a single coordinator).
    public let writerCoordinator: PersistentStoreCoordinator
    /// The main-queue context that drives the UI (`.mergeByPropertyStoreTrump`).
    public let viewContext: ManagedObjectContext
    /// The store file, nil for in-memory (the first store's, with several).
    public let storeURL: URL?
    /// The stores each coordinator adds, in order (`persistentStoreDescriptions`): the first with the container's
    /// type and file, the others as given, each holding its configuration's entities (Docs/coredata-behaviour.md §14.2).
    public let persistentStoreDescriptions: [PersistentStoreDescription]
    /// The store type.
    public let storeType: StoreType
    /// The options the container was made with.
    public let options: Options

    /// One smart merge, for measurement: when the save was announced (commit), when the merge finished on the
    /// main queue (uptime nanoseconds), and what it carried.
    package struct MergeEvent: Sendable {
        package var committedAt: UInt64
        package var finishedAt: UInt64
        package var changes: ContextObjectIDChanges
    }

    /// Told after each smart merge ran on the main queue.
    package var mergeObserver: (@Sendable (MergeEvent) -> Void)? {
        get { state.withLock { $0.mergeObserver } }
        set { state.withLock { $0.mergeObserver = newValue } }
    }

    private struct State {
        var mergeObserver: (@Sendable (MergeEvent) -> Void)?
        var viewContextReadOnly = false
        var shouldMerge = true
        var counters = AmbarCounters()
    }
    private let state = Mutex(State())
    private var observer: (any NSObjectProtocol)?

    /// Switches the view context to `.rollback` (true) or back to `.mergeByPropertyStoreTrump` (false). In Core
    /// Data, as in Ambar, `.rollback` only settles conflicts: a conflict-free save still reaches the store
    /// (counted in ``AmbarCounters/readOnlySavesReachedStore``) unless ``Options/strictReadOnly`` is set.
    public var isViewContextReadOnly: Bool {
        get { state.withLock { $0.viewContextReadOnly } }
        set {
            state.withLock { $0.viewContextReadOnly = newValue }
            let context = viewContext
            context.performAndWait { context.mergePolicy = newValue ? .rollback : .mergeByPropertyStoreTrump }
        }
    }

    /// Whether the smart merge runs (7.x `shouldMergeIncomingSavedObjects`); starts from the options.
    public var shouldMergeIncomingSavedObjects: Bool {
        get { state.withLock { $0.shouldMerge } }
        set { state.withLock { $0.shouldMerge = newValue } }
    }

    /// The counters.
    public var counters: AmbarCounters { state.withLock { $0.counters } }

    static let roleKey = "ambar.role"

    /// Creates the stack.
    /// - Parameters:
    ///   - storeType: SQLite (default) or in-memory.
    ///   - modelName: a model file `<name>.json` found in ``modelSearchPath``; with neither a name nor a model,
    ///     every model file in the first existing search directory is merged, as Ambar merged the bundle's.
    ///   - model: the model itself.
    ///   - storeURL: the store file, or a directory for `<name>.sqlite`; default ``defaultDirectoryURL()``.
    ///   - storeOptions: merged over the defaults (WAL, `synchronous=NORMAL`).
    ///   - options: coordinator count, merge filter, strict read-only.
    ///   - storeDescription: Core Data's way of saying all of the store's settings at once: when
    ///     given, its type, URL, options and migration flags replace `storeType`, `storeURL` and `storeOptions`,
    ///     and both coordinators add the store with it (synchronously: the container is usable when `init` returns).
    ///   - persistentStoreDescriptions: several stores, each with its configuration (`persistentStoreDescriptions`):
    ///     the first is the `storeDescription` (when that is nil), and both coordinators add the others after it, in
    ///     order, as given.
    /// - Throws: ``AmbarError`` when the model cannot be found, or the store's ``ObjectGraphError``.
    public init(
        storeType: StoreType = .sqlite, modelName: String? = nil, model: ManagedObjectModel? = nil, storeURL: URL? = nil,
        storeOptions: StoreOptions = StoreOptions(), options: Options = Options(), storeDescription: PersistentStoreDescription? = nil,
        persistentStoreDescriptions: [PersistentStoreDescription] = []
    ) throws {
        let others = storeDescription == nil ? Array(persistentStoreDescriptions.dropFirst()) : persistentStoreDescriptions
        let storeDescription = storeDescription ?? persistentStoreDescriptions.first
        let storeType = storeDescription.map { $0.type == .sqlite ? StoreType.sqlite : .inMemory } ?? storeType
        let storeURL = storeDescription?.url ?? storeURL
        let resolvedModel = try model ?? Self.loadModel(named: modelName)
        managedObjectModel = resolvedModel
        self.storeType = storeType
        self.options = options
        let baseName = modelName ?? "Ambar"
        switch storeType {
        case .inMemory:
            self.storeURL = nil
        case .sqlite:
            let given = storeURL ?? Self.defaultDirectoryURL()
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: given.path, isDirectory: &isDirectory)
            if given.hasDirectoryPath || (exists && isDirectory.boolValue) || given.pathExtension.isEmpty {
                self.storeURL = given.appendingPathComponent("\(baseName).sqlite")
            } else {
                self.storeURL = given
            }
        }
        var description = storeDescription ?? PersistentStoreDescription()
        if storeDescription == nil { description.storeOptions = storeOptions }
        description.type = storeType == .sqlite ? .sqlite : .inMemory
        description.url = self.storeURL
        description.shouldAddStoreAsynchronously = false
        mainCoordinator = PersistentStoreCoordinator(managedObjectModel: resolvedModel, name: "main")
        let added = others.map { other in
            var other = other
            other.shouldAddStoreAsynchronously = false
            return other
        }
        self.persistentStoreDescriptions = [description] + added
        try mainCoordinator.addPersistentStore(with: description)
        for other in added { try mainCoordinator.addPersistentStore(with: other) }
        if storeType == .sqlite && !options.singleCoordinator {
            writerCoordinator = PersistentStoreCoordinator(managedObjectModel: resolvedModel, name: "writer")
            try writerCoordinator.addPersistentStore(with: description)
            for other in added { try writerCoordinator.addPersistentStore(with: other) }
        } else {
            writerCoordinator = mainCoordinator
        }
        state.withLock { $0.shouldMerge = options.shouldMergeIncomingSavedObjects }
        viewContext = ManagedObjectContext(concurrencyType: .mainQueue, queue: options.mainQueue)
        viewContext.persistentStoreCoordinator = mainCoordinator
        viewContext.mergePolicy = .mergeByPropertyStoreTrump
        viewContext.name = "viewContext"
        viewContext.userInfo[Self.roleKey] = "view"
        viewContext.saveRefusal = { [weak self] _ in self?.refusal(role: "view") }
        observer = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveObjectIDsNotification, object: nil, queue: nil) { [weak self] note in
            self?.contextDidSave(note)
        }
    }

    deinit { if let observer { NotificationCenter.default.removeObserver(observer) } }

    // MARK: Contexts

    /// A private-queue context on the writer coordinator with `.mergeByPropertyObjectTrump`, for imports.
    public func importerContext() -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = writerCoordinator
        context.mergePolicy = .mergeByPropertyObjectTrump
        context.name = "importer"
        context.userInfo[Self.roleKey] = "importer"
        return context
    }

    /// A private-queue context on the main coordinator with `.rollback`, for throw-away edits. Its
    /// conflict-free saves still reach the store (Core Data's behaviour) unless ``Options/strictReadOnly``.
    public func temporaryContext() -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = mainCoordinator
        context.mergePolicy = .rollback
        context.name = "temporary"
        context.userInfo[Self.roleKey] = "temporary"
        context.saveRefusal = { [weak self] _ in self?.refusal(role: "temporary") }
        return context
    }

    /// A private-queue child of the view context with `.mergeByPropertyObjectTrump`: its saves go to the view
    /// context, and saving the view context takes them to the store.
    /// - Throws: ``AmbarError/Code/viewContextReadOnly`` while the view context is read-only (Ambar crashed).
    public func editorContext() throws -> ManagedObjectContext {
        guard !isViewContextReadOnly else {
            throw AmbarError(.viewContextReadOnly, "editorContext() while the view context is read-only: its saves could not reach the store")
        }
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.parent = viewContext
        context.mergePolicy = .mergeByPropertyObjectTrump
        context.name = "editor"
        context.userInfo[Self.roleKey] = "editor"
        return context
    }

    private func refusal(role: String) -> (any Error)? {
        let readOnly = role == "temporary" || isViewContextReadOnly
        guard readOnly, options.strictReadOnly else { return nil }
        state.withLock { $0.counters.readOnlySavesRefused += 1 }
        return AmbarError(.readOnlySaveRefused, "the \(role) context is read-only (strict mode) and refuses to save")
    }

    // MARK: Smart merge

    private func contextDidSave(_ note: Notification) {
        guard let saver = note.object as? ManagedObjectContext, let changes = ContextObjectIDChanges(note) else { return }
        // The observer sees every context's saves in the process: only this container's count (two containers
        // side by side must not count each other's read-only saves).
        guard saver.persistentStoreCoordinator === mainCoordinator || saver.persistentStoreCoordinator === writerCoordinator else { return }
        let role = saver.userInfo[Self.roleKey] as? String
        if role == "temporary" || (role == "view" && isViewContextReadOnly), saver.parent == nil, !changes.isEmpty {
            state.withLock { $0.counters.readOnlySavesReachedStore += 1 }
        }
        state.withLock { $0.counters.saveNotificationsSeen += 1 }
        guard shouldMergeIncomingSavedObjects, saver !== viewContext, saver.parent !== viewContext else { return }
        switch options.mergeFilter {
        case .writerOnly:
            guard saver.persistentStoreCoordinator === writerCoordinator else { return }
        case .bothCoordinators:
            break
        }
        let fromChild = saver.parent != nil
        state.withLock {
            $0.counters.mergesScheduled += 1
            if fromChild { $0.counters.mergesOfUnsavedChanges += 1 }
        }
        // On the saving queue: bring the main coordinator's cached rows up to date (only those it caches).
        if !fromChild, let saverCoordinator = saver.persistentStoreCoordinator {
            mainCoordinator.adoptSnapshots(updated: changes.updated, deleted: changes.deleted, from: saverCoordinator)
        }
        // Only IDs cross to the main queue, so the saving context's objects are not kept alive. Freeing N IDs
        // costs O(N), the merge itself O(objects registered in the view).
        let view = viewContext
        let release = releaseQueue
        let place = options.mergeRelease
        let committedAt = Execution.now()
        let box = ChangesBox(changes)
        view.queue.async { [weak self] in
            do {
                guard let changes = box.changes else { return }
                view.mergeChanges(fromObjectIDs: changes)
                let observer = self?.state.withLock { state -> (@Sendable (MergeEvent) -> Void)? in
                    state.counters.mergesPerformed += 1
                    return state.mergeObserver
                }
                if let observer = observer ?? nil { observer(MergeEvent(committedAt: committedAt, finishedAt: Execution.now(), changes: changes)) }
            }
            switch place {
            case .mergingQueue:
                // Rule 30: Core Data drops the merge's sets on the queue that merged them.
                box.changes = nil
                self?.state.withLock { $0.counters.mergeSetsReleasedOnMergingQueue += 1 }
            case .background:
                release.async { [weak self] in
                    box.changes = nil
                    self?.state.withLock { $0.counters.mergeSetsReleasedInBackground += 1 }
                }
            }
        }
    }

    /// Holds a merge's ID sets so that the last reference is dropped where ``Options/mergeRelease`` says, not
    /// wherever the saving queue's copy happens to go last.
    private final class ChangesBox: @unchecked Sendable {  // set on the saving queue, read on the main queue, cleared on the main queue or releaseQueue, in that order
        var changes: ContextObjectIDChanges?
        init(_ changes: ContextObjectIDChanges) { self.changes = changes }
    }

    /// The queue ``AmbarMergeRelease/background`` frees merges' ID sets on.
    let releaseQueue = ContextQueue(label: "Ambar.mergeRelease")

    // MARK: Locations

    /// Where stores go when no URL is given: `$XDG_DATA_HOME/ambar`, else `~/.local/share/ambar`.
    public static func defaultDirectoryURL() -> URL {
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("ambar", isDirectory: true)
        }
        return FileManager.default.homeDirectoryForCurrentUser
            .appendingPathComponent(".local/share/ambar", isDirectory: true)
    }

    /// Where model files (`<name>.json`) are looked for, in order: each directory of `$AMBAR_MODEL_PATH`
    /// (colon-separated), `./Models`, then `<defaultDirectoryURL>/Models`.
    public static var modelSearchPath: [URL] {
        var dirs: [URL] = []
        if let path = ProcessInfo.processInfo.environment["AMBAR_MODEL_PATH"] {
            dirs += path.split(separator: ":").map { URL(fileURLWithPath: String($0), isDirectory: true) }
        }
        dirs.append(URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true).appendingPathComponent("Models", isDirectory: true))
        dirs.append(defaultDirectoryURL().appendingPathComponent("Models", isDirectory: true))
        return dirs
    }

    static func loadModel(named name: String?, searchPath: [URL] = modelSearchPath) throws -> ManagedObjectModel {
        let fm = FileManager.default
        let modelSearchPath = searchPath
        if let name {
            for dir in modelSearchPath {
                let file = dir.appendingPathComponent("\(name).json")
                if fm.fileExists(atPath: file.path) {
                    do { return try ManagedObjectModel(contentsOf: file) } catch {
                        throw AmbarError(.modelNotFound, "model \(file.path) cannot be used: \(error)")
                    }
                }
            }
            throw AmbarError(.modelNotFound, "no model file \(name).json in \(modelSearchPath.map(\.path).joined(separator: ", "))")
        }
        for dir in modelSearchPath where fm.fileExists(atPath: dir.path) {
            let files = ((try? fm.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
            guard !files.isEmpty else { continue }
            var entities: [ModelFile.Entity] = []
            for f in files {
                let url = dir.appendingPathComponent(f)
                do {
                    entities += try JSONDecoder().decode(ModelFile.self, from: Data(contentsOf: url)).entities
                } catch {
                    throw AmbarError(.modelNotFound, "model \(url.path) cannot be read: \(error)")
                }
            }
            do { return try ManagedObjectModel(file: ModelFile(entities: entities)) } catch {
                throw AmbarError(.modelNotFound, "the merged models of \(dir.path) are not one model: \(error)")
            }
        }
        throw AmbarError(.modelNotFound, "no model given and no model files in \(modelSearchPath.map(\.path).joined(separator: ", "))")
    }
}
