import Dispatch
import Foundation
import Synchronization

/// Deterministic counters of a coordinator: what reached its store and its row cache.
package struct CoordinatorCounters: Sendable, Equatable, Codable {
    /// SQL statements by kind (SQLite store; zero for the in-memory store).
    package var statements = StatementCounts()
    package var rowsRead = 0
    package var rowsInserted = 0
    package var rowsUpdated = 0
    package var rowsDeleted = 0
    package var rowCacheHits = 0
    package var rowCacheMisses = 0
    /// Saves that committed.
    package var saves = 0
    /// Optimistic-locking conflicts found against the row cache (layer 1).
    package var cacheConflicts = 0
    /// Optimistic-locking conflicts found against the database (layer 2).
    package var databaseConflicts = 0
    /// Uniqueness conflicts found against the database.
    package var constraintConflicts = 0
    /// Entries in the row cache when the counters were read.
    package var rowCacheEntries = 0

    package init() {}
}

/// Mediates between contexts and a store (`NSPersistentStoreCoordinator`): one serial queue for the writer and
/// every request that is not a read, a pool of read connections beside it (SQLite in WAL mode, semantics §8
/// "Connection pool"), and the row cache of snapshots with versions (semantics §0, §2.3, §8). Stores added with
/// configurations, or several stores, are kept in the order added, each with its own writer and read connections
/// (Docs/coredata-behaviour.md §14.2).
public final class PersistentStoreCoordinator: @unchecked Sendable {  // `store` is guarded by `queue`; cache, counters, readers and routed stores by their locks
    /// The model of every store of this coordinator.
    public let managedObjectModel: ManagedObjectModel
    /// A name for debugging and reports.
    public var name: String { _name.withLock { $0 } }
    private let _name: Mutex<String>

    let queue: ContextQueue
    let rowCache = RowCache()
    /// The first store added: every request goes to it while ``routesRequests`` is false.
    private(set) var store: (any PersistentStore)?
    /// Every store in the order added, each with its configuration, once a store was added with a configuration or
    /// a second store was added (Docs/coredata-behaviour.md §14.2); empty before. A coordinator with one store added
    /// without a configuration sends every request to ``store`` without looking here.
    let routedStores = Mutex<[AddedStore]>([])
    /// Whether requests go to the stores of ``routedStores`` (read once per request).
    let routing = Atomic<Bool>(false)
    private let remoteChanges = Mutex<(enabled: Bool, path: String?)>((false, nil))
    private let counterState = Mutex(CoordinatorCounters())
    private let poolSize = Mutex(PersistentStoreCoordinator.defaultConnectionPoolSize)
    /// The SQLite store's read connections (nil: no store yet, or one without a pool).
    private let readers = Mutex<SQLiteReaderPool?>(nil)
    /// Tells this coordinator's reader lanes apart from another's in a simulation (never printed).
    private let poolID = PersistentStoreCoordinator.nextPoolID.add(1, ordering: .relaxed).newValue
    private static let nextPoolID = Atomic<Int>(0)
    /// Marks the object IDs this coordinator mints (its stores' and its contexts' faults): a history predicate
    /// matches only this coordinator's IDs (Docs/coredata-behaviour.md §3.6). Tags repeat after 4096
    /// coordinators; two on one file then take each other's IDs in history predicates.
    let idTag = UInt32(truncatingIfNeeded: PersistentStoreCoordinator.nextIDTag.add(1, ordering: .relaxed).newValue) & StoreRegistry.tagMask
    private static let nextIDTag = Atomic<Int>(0)

    /// Creates a coordinator with no store.
    public init(managedObjectModel: ManagedObjectModel, name: String = "coordinator") {
        self.managedObjectModel = managedObjectModel
        self._name = Mutex(name)
        self.queue = ContextQueue(label: "ObjectGraph.coordinator.\(name)")
    }

    deinit {
        store?.close()
        for added in routedStores.withLock({ $0 }).dropFirst() { added.store.close() }
    }

    /// Opens a store.
    /// - Parameters:
    ///   - type: SQLite or in-memory.
    ///   - url: the SQLite file (created when missing); ignored for in-memory.
    ///   - options: busy timeout, pragmas, read-only, history.
    ///   - configuration: the model configuration whose entities the store holds; nil for every entity (Core Data's
    ///     `Default`). Stores are kept in the order added; a new object goes to the first whose configuration
    ///     holds its entity (Docs/coredata-behaviour.md §14.2).
    /// - Throws: ``ObjectGraphError`` naming the store: not an SQLite file (134000), a store made with another
    ///   model (134100), a directory that cannot be written (134080), a configuration the model lacks or a file
    ///   already added (134080).
    public func addPersistentStore(type: PersistentStoreType, configuration: String? = nil, at url: URL? = nil,
                                   options: StoreOptions = StoreOptions()) throws {
        try Probe.call(.coordinatorAdded(self, options: options, model: managedObjectModel, url: type == .sqlite ? url : nil,
                                         configuration: configuration)) {
            try queue.sync {
                if let configuration, managedObjectModel.entities(forConfigurationName: configuration) == nil {
                    throw ObjectGraphError(.persistentStoreOpen, "the model has no configuration named '\(configuration)' (its configurations: \(managedObjectModel.configurations.joined(separator: ", ")))", storePath: url?.path)
                }
                guard store == nil else {
                    try addAnotherStore(type: type, configuration: configuration, at: url, options: options)
                    return
                }
                try performAddPersistentStore(type: type, at: url, options: options)
                if let configuration, let store {
                    routedStores.withLock { $0 = [AddedStore(store, isFirst: true, configuration: configuration, model: managedObjectModel, readers: readerPool)] }
                    routing.store(true, ordering: .releasing)
                }
            }
        }
    }

    private func performAddPersistentStore(type: PersistentStoreType, at url: URL?, options: StoreOptions) throws {
        switch type {
        case .sqlite:
            guard let url else {
                throw ObjectGraphError(.persistentStoreOpen, "an SQLite store needs a file URL")
            }
            if let size = options.connectionPoolMaxSize, size < 1 {
                throw ObjectGraphError(.persistentStoreOpen, "connectionPoolMaxSize (NSPersistentStoreConnectionPoolMaxSizeKey) must be at least 1, not \(size)", storePath: url.path)
            }
            let sqlite = try SQLiteStore(url: url, model: managedObjectModel, options: options, coordinatorTag: idTag)
            store = sqlite
            if let size = options.connectionPoolMaxSize { connectionPoolSize = size }
            // Under the size's lock, as the setter gives the readers a new size: a size set meanwhile on another
            // thread is not undone by the one read here (the pool would keep readers beyond the coordinator's size).
            poolSize.withLock { size in
                readers.withLock { $0 = sqlite.readerPool }
                sqlite.readerPool?.capacityChanged(to: size - 1)
            }
            let path = url.standardizedFileURL.path
            remoteChanges.withLock { $0 = (options.remoteChangeNotifications, path) }
            CoordinatorRegistry.add(self, path: path)
        case .inMemory:
            // `connectionPoolMaxSize` does not apply (Docs §8): Core Data's key sizes the pool of "a store that
            // supports concurrent request handling", and rows in memory have no WAL and no read connections.
            // Any value is taken without a check and leaves `connectionPoolSize` as it is.
            store = InMemoryStore(model: managedObjectModel, coordinatorTag: idTag)
        }
    }

    /// Gives `other`, a coordinator without a store, a copy of this coordinator's in-memory store as it is now;
    /// false when this store is not in memory. Not Core Data's: a second coordinator cannot open an in-memory store
    /// (semantics §7 "The in-memory store"), so a checker that reads the rows apart from the app's coordinator reads a
    /// copy. Counts nothing.
    package func copyInMemoryStore(into other: PersistentStoreCoordinator) -> Bool {
        guard !routesRequests, let rows = queue.sync({ (store as? InMemoryStore)?.copy(coordinatorTag: other.idTag) }) else { return false }
        other.queue.sync {
            precondition(other.store == nil, "copyInMemoryStore(into:) takes a coordinator without a store")
            other.store = rows
        }
        return true
    }

    /// The rows a lightweight migration copied when the store was added (nil: no migration ran).
    package var migratedRowCount: Int? { queue.sync { (store as? SQLiteStore)?.migratedRows } }

    /// The first store's identifier (a UUID kept in its metadata), nil before a store is added
    /// (``persistentStores`` lists every store's).
    public var storeIdentifier: String? { queue.sync { store?.identifier } }
    /// The first store's file, nil for in-memory.
    public var storeURL: URL? { queue.sync { store?.url } }
    /// The first store's type.
    public var storeType: PersistentStoreType? { queue.sync { store?.type } }

    /// A snapshot of the counters.
    package var counters: CoordinatorCounters {
        let statements = queue.sync {
            guard routesRequests else { return store?.statementCounts ?? StatementCounts() }
            return routedStores.withLock { $0 }.reduce(StatementCounts()) { $0 + $1.store.statementCounts }
        }
        var c = counterState.withLock { $0 }
        c.statements = statements
        c.rowCacheEntries = rowCache.count
        return c
    }

    /// Brings this coordinator's cached rows for `updated` and `deleted` up to date from `other`'s row cache (two
    /// coordinators on one file): the snapshot transfer a did-save merge from another coordinator needs so that
    /// refreshed objects show the saved values instead of this cache's stale rows (semantics §2.4). Only rows
    /// this coordinator already caches are touched; rows `other` does not cache are invalidated here.
    package func adoptSnapshots(updated: Set<ManagedObjectID>, deleted: Set<ManagedObjectID>, from other: PersistentStoreCoordinator) {
        return Probe.call(.adoptSnapshots(self, updated: updated, deleted: deleted, from: other)) { performAdoptSnapshots(updated: updated, deleted: deleted, from: other) }
    }

    private func performAdoptSnapshots(updated: Set<ManagedObjectID>, deleted: Set<ManagedObjectID>, from other: PersistentStoreCoordinator) {
        guard other !== self else { return }
        let mine = rowCache.rows(among: updated)
        guard !mine.isEmpty || !deleted.isEmpty else { return }
        let theirs = Dictionary(other.rowCache.rows(among: Set(mine.map(\.0))).compactMap { id, row in row.map { (id, $0) } }, uniquingKeysWith: { a, _ in a })
        var fresh: [(ManagedObjectID, RowSnapshot)] = []
        var stale: [ManagedObjectID] = []
        for (id, row) in mine {
            if let newer = theirs[id], newer.version > (row?.version ?? 0) { fresh.append((id, newer)) } else if theirs[id] == nil { stale.append(id) }
        }
        rowCache.install(fresh, retain: false)
        rowCache.invalidate(stale)
        rowCache.markDeleted(rowCache.rows(among: deleted).map(\.0))
    }

    /// Posts the remote-change notification on every coordinator of the same file that asked for it, this one
    /// included, after a commit of this one (a save or a batch request), in the order the coordinators opened
    /// the file.
    func postRemoteChange(token: PersistentHistoryToken?) {
        guard let path = remoteChanges.withLock({ $0.path }) else { return }
        // Semantics §3.5 and Rule 8: the store posts it "for every write to the store", so the saving
        // coordinator hears its own writes too (a history consumer filters them by author, §3.6).
        for other in CoordinatorRegistry.coordinators(path: path) where other.remoteChanges.withLock({ $0.enabled }) {
            var info: [AnyHashable: Any] = ["storeURL": URL(fileURLWithPath: path)]
            if let id = try? other.withStore({ $0.identifier }) { info["storeUUID"] = id }
            if let token { info["historyToken"] = token }
            Probe.posting(.storeRemoteChange) { NotificationCenter.default.post(name: Self.storeRemoteChangeNotification, object: other, userInfo: info) }
        }
    }

    func count(_ update: (inout CoordinatorCounters) -> Void) { counterState.withLock { update(&$0) } }

    /// The connection pool's size (semantics §8 "Connection pool"): the store
    /// option ``StoreOptions/connectionPoolMaxSize`` sets it when the store is added.
    ///
    /// Since iOS 10 / macOS 10.12 Core Data's SQLite store keeps a small pool of connections: contexts that are not
    /// nested fetch and fault concurrently with each other and with one writer. With a pool of `n > 1`, reads
    /// (fetches, faults, counts, history) run on up to `n - 1` read-only connections of an SQLite store in WAL mode
    /// and see its last committed state without waiting for the coordinator's queue, where writes stay serialized;
    /// a simulated run gives them `n - 1` lanes of virtual time. `1` gives back the serialized coordinator of older
    /// systems: every request on the coordinator's queue and its one connection. Apple documents the default only as
    /// greater than one and platform-dependent: ours, 4, is inferred.
    public var connectionPoolSize: Int {
        get { poolSize.withLock { $0 } }
        set {
            precondition(newValue >= 1, "a connection pool has at least one connection")
            // The readers take the new size under the same lock: two setters at once leave the pool the last size.
            poolSize.withLock { size in
                size = newValue
                readers.withLock { $0 }?.capacityChanged(to: newValue - 1)
                for added in routedStores.withLock({ $0 }).dropFirst() { added.readers?.capacityChanged(to: newValue - 1) }
            }
            Probe.note(.setPoolSize(self, newValue))
        }
    }

    /// Read connections of the store open now (held by a read or idle), 0 without a pool.
    package var openReadConnections: Int { readers.withLock { $0 }?.openReaders ?? 0 }

    /// The pool size new coordinators model (inferred: Apple says only "greater than one").
    public static let defaultConnectionPoolSize = 4

    /// Runs a read with the store: on one of its read connections, overlapping a write in progress (semantics §8),
    /// or on the coordinator's queue (a pool of 1, a store without readers, a read made on the
    /// queue itself). A read whose rows go into the row cache runs inside ``RowCache/reading(_:)``.
    func readStore<T>(_ body: (any PersistentStore) throws -> T) throws -> T {
        let pool = connectionPoolSize
        if pool > 1, !queue.isCurrent {
            if let readers = readers.withLock({ $0 }) {
                func read() throws -> T? { try readers.withReader(capacity: pool - 1, body) }
                // A simulation gives the readers lanes of virtual time; the read itself runs on a reader connection
                // there too (one thread at a time: the same rows, statements and counts on every run).
                if let result = Execution.isSimulated ? try Execution.pooled(readerLanes, capacity: pool - 1, read) : try read() {
                    return result
                }
            } else if Execution.isSimulated {
                // A store without read connections (in memory, or not in WAL mode): a simulation still models the
                // pool's overlap. One thread runs at a time, so the store is not touched concurrently; a writer that
                // yielded inside its transaction would show a reader its uncommitted rows, so then the read waits.
                return try Execution.pooled(readerLanes, capacity: pool - 1) {
                    guard let store, !store.isInTransaction else { return try withStore(body) }
                    return try body(store)
                }
            }
        }
        return try withStore(body)
    }

    /// Sets what the SQLite store calls inside each save's write transaction just before its `COMMIT` (tests hold a
    /// save's transaction open with it to show what a concurrent read does).
    func setBeforeCommit(_ hook: (@Sendable () -> Void)?) {
        queue.sync { (store as? SQLiteStore)?.beforeCommit = hook }
    }

    /// The store's read connections, nil without (no store, in memory, not in WAL mode).
    var readerPool: SQLiteReaderPool? { readers.withLock { $0 } }
    var hasReadConnections: Bool { readerPool != nil }

    /// The reader lanes of this coordinator in a simulation.
    var readerLanes: SharedResource { SharedResource(id: "readers:\(poolID)", label: "\(name).readers") }

    /// Runs `body` with the store on the coordinator's queue.
    func withStore<T>(_ body: (any PersistentStore) throws -> T) throws -> T {
        try queue.sync {
            guard let store else {
                throw ObjectGraphError(.persistentStoreOperation, "the coordinator has no persistent store")
            }
            return try body(store)
        }
    }

    /// The object ID named by a URI from ``ManagedObjectID/uriRepresentation``, nil when it names no entity of
    /// this model, an abstract entity (an object ID names its object's concrete entity, and an abstract entity has
    /// no objects: Docs/coredata-behaviour.md §11.3), or another store.
    public func managedObjectID(forURIRepresentation uri: URL) -> ManagedObjectID? {
        guard uri.scheme == "x-coredata" else { return nil }
        let parts = uri.path.split(separator: "/")
        guard parts.count == 2, let entity = managedObjectModel.entity(named: String(parts[0])), !entity.isAbstract else { return nil }
        let last = parts[1]
        guard let kind = last.first, let number = Int64(last.dropFirst()), number > 0 else { return nil }
        guard kind == "p", let host = uri.host, persistentStores.contains(where: { $0.identifier == host }) else { return nil }
        return ManagedObjectID(entity: entity, primaryKey: number, storeNumber: StoreRegistry.number(for: host)).minted(byCoordinatorTag: idTag)
    }
}

/// The coordinators of this process by store file, for in-process remote-change notifications.
enum CoordinatorRegistry {
    private struct Entry: @unchecked Sendable {  // weak reference read under the lock
        weak var coordinator: PersistentStoreCoordinator?
        var path: String
    }
    private static let entries = Mutex<[Entry]>([])

    static func add(_ coordinator: PersistentStoreCoordinator, path: String) {
        entries.withLock { list in
            list.removeAll { $0.coordinator == nil }
            list.append(Entry(coordinator: coordinator, path: path))
        }
    }

    static func coordinators(path: String) -> [PersistentStoreCoordinator] {
        entries.withLock { list in list.filter { $0.path == path }.compactMap(\.coordinator) }
    }
}
