import Foundation
import Synchronization

/// A generation of the store a context reads (`NSQueryGenerationToken`, semantics §3.7).
///
/// A context pinned to a generation sees the store as it was when the generation was taken, whatever other
/// contexts, coordinators or processes commit meanwhile, until the generation advances (its own save, a merge,
/// `reset()`, or another ``ManagedObjectContext/setQueryGenerationFrom(_:)``). A generation is an SQLite read
/// transaction held open on a read connection of the store (WAL mode only): it is taken lazily, at the context's
/// first fetch or fault after pinning, and it ends when the last token naming it goes away. While it lives, SQLite
/// cannot checkpoint the write-ahead log past it, so the `-wal` file grows with every commit made meanwhile.
public final class QueryGenerationToken: Sendable, Hashable, CustomStringConvertible {
    /// The token that pins a context to the current generation, taken at its next read (`.current`).
    public static let current = QueryGenerationToken(coordinator: nil)

    /// The coordinator whose store this token's generation is of; nil for ``current``.
    let coordinator: PersistentStoreCoordinator?
    /// The generation, bound at the first read through the token.
    private let generation = Mutex<StoreGeneration?>(nil)
    private let number: Int
    private static let counter = Atomic<Int>(0)

    init(coordinator: PersistentStoreCoordinator?) {
        self.coordinator = coordinator
        number = coordinator == nil ? 0 : Self.counter.add(1, ordering: .relaxed).newValue
    }

    /// The token's generation, taken now if no read took it yet; nil when the store has no read connections to hold
    /// one (in memory, or not in WAL mode: the context reads the current state, semantics §3.7).
    func storeGeneration() throws -> StoreGeneration? {
        guard let coordinator else { return nil }
        return try generation.withLock { bound in
            if let bound { return bound }
            bound = try coordinator.openGeneration()
            return bound
        }
    }

    /// Whether a read has taken the generation (the snapshot is fixed).
    var isBound: Bool { generation.withLock { $0 != nil } }

    public static func == (a: QueryGenerationToken, b: QueryGenerationToken) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    public var description: String {
        coordinator == nil ? "QueryGenerationToken(current)" : "QueryGenerationToken(#\(number)\(isBound ? "" : ", not yet read"))"
    }
}

/// A snapshot of an SQLite store: a read transaction held open on a read connection of its pool. Reads through it
/// are serialized (two contexts may share one generation); the transaction ends when the last token lets it go.
final class StoreGeneration: @unchecked Sendable {  // `reader` is used under `lock` only
    private let lock = NSLock()
    private let reader: SQLiteStore
    private let pool: SQLiteReaderPool
    private let capacity: @Sendable () -> Int

    init(pool: SQLiteReaderPool, capacity: @escaping @Sendable () -> Int) throws {
        self.pool = pool
        self.capacity = capacity
        // The transaction is begun before `reader` is stored: an initializer that throws once every stored property
        // is set runs `deinit`, which would give the reader back to the pool a second time (the pool then counted
        // it twice and could hand it to two reads at once; GenerationOpenFailureTests).
        let reader = try pool.detach()
        do {
            // SQLite takes a WAL read transaction's snapshot at its first read, not at BEGIN.
            try reader.connection.execute("BEGIN DEFERRED")
            _ = try reader.connection.query("SELECT count(*) FROM Z_METADATA")
        } catch {
            if reader.connection.isInTransaction { try? reader.connection.execute("ROLLBACK") }
            pool.adopt(reader, capacity: capacity())
            if let error = error as? SQLiteError { throw SQLiteStore.storeError(error, path: reader.url?.path ?? "") }
            throw error
        }
        self.reader = reader
    }

    func read<T>(_ body: (SQLiteStore) throws -> T) throws -> T {
        lock.lock()
        defer {
            pool.absorbCounts(of: reader)
            lock.unlock()
        }
        return try body(reader)
    }

    deinit {
        try? reader.connection.execute("COMMIT")
        pool.adopt(reader, capacity: capacity())
    }
}

extension PersistentStoreCoordinator {
    /// Whether the store can hold query generations (SQLite in WAL mode, with read connections; one store:
    /// Docs/coredata-behaviour.md §14.2).
    public var supportsQueryGenerations: Bool { hasReadConnections && (!routesRequests || addedStores.count == 1) }

    /// A generation of the store taken now, nil when the store cannot hold one.
    func openGeneration() throws -> StoreGeneration? {
        guard supportsQueryGenerations, let pool = readerPool else { return nil }
        return try StoreGeneration(pool: pool, capacity: { [weak self] in max(0, (self?.connectionPoolSize ?? 1) - 1) })
    }

    /// Runs a read of a pinned context in its generation (in a simulation, on the coordinator's reader lanes).
    func readPinned<T>(_ generation: StoreGeneration, _ body: (any PersistentStore) throws -> T) throws -> T {
        guard Execution.isSimulated else { return try generation.read(body) }
        return try Execution.pooled(readerLanes, capacity: max(1, connectionPoolSize - 1)) { try generation.read(body) }
    }

    /// A read in `generation` when one is given, else as ``readStore(_:)``.
    func read<T>(in generation: StoreGeneration?, _ body: (any PersistentStore) throws -> T) throws -> T {
        if let generation { return try readPinned(generation, body) }
        return try readStore(body)
    }
}

extension ManagedObjectContext {
    /// The token of the generation this context reads, nil when it is not pinned (`queryGenerationToken`).
    public var queryGenerationToken: QueryGenerationToken? { pinnedGeneration.withLock { $0 } }

    /// Pins the context's reads to a generation of the store, or unpins it with nil (`setQueryGenerationFrom(_:)`,
    /// semantics §3.7).
    ///
    /// ``QueryGenerationToken/current`` pins lazily: the generation is taken at the next fetch or fault. Another
    /// context's ``queryGenerationToken`` (of the same coordinator) aligns the two contexts on one generation. A
    /// store that cannot hold generations (in memory, or SQLite not in WAL mode) leaves the context unpinned, reading
    /// the current state, as Core Data's contexts quietly do.
    /// - Throws: 134070 for a child context (it reads its parent's generation), a context without a coordinator, or
    ///   a token of another coordinator's store.
    public func setQueryGenerationFrom(_ token: QueryGenerationToken?) throws {
        // The operation trace replays `.current` and nil; a token of another context is recorded as such.
        let traced = token == nil ? "none" : (token === QueryGenerationToken.current ? "current" : "token")
        try Probe.call(.setting(self, "queryGeneration", traced)) { try pin(token) }
    }

    private func pin(_ token: QueryGenerationToken?) throws {
        guard let token else {
            pinnedGeneration.withLock { $0 = nil }
            return
        }
        if parent != nil {
            throw ObjectGraphError(.persistentStoreOperation, "a child context cannot be pinned to a query generation: it reads its parent's generation and pending changes")
        }
        guard let coordinator = persistentStoreCoordinator else {
            throw ObjectGraphError(.persistentStoreOperation, "the context has no coordinator to take a query generation from")
        }
        guard coordinator.supportsQueryGenerations else {
            pinnedGeneration.withLock { $0 = nil }
            return
        }
        if let owner = token.coordinator {
            guard owner === coordinator else {
                throw ObjectGraphError(.persistentStoreOperation, "the query generation token is of another coordinator's store (\(owner.name)), not of \(coordinator.name)'s")
            }
            pinnedGeneration.withLock { $0 = token }
        } else {
            pinnedGeneration.withLock { $0 = QueryGenerationToken(coordinator: coordinator) }
        }
    }

    /// The generation this context's reads go to: nil unless it is a pinned root context (taken now if this is the
    /// first read since it was pinned or advanced).
    func readGeneration() throws -> StoreGeneration? {
        guard let token = pinnedGeneration.withLock({ $0 }) else { return nil }
        return try token.storeGeneration()
    }

    /// Moves a pinned context to a new generation, taken at its next read (its own save, a merge, `reset()`;
    /// semantics §3.7). Returns the new token; nil when the context is not pinned.
    @discardableResult
    func advanceQueryGeneration() -> QueryGenerationToken? {
        pinnedGeneration.withLock { token in
            guard let coordinator = token?.coordinator else { return nil }
            token = QueryGenerationToken(coordinator: coordinator)
            return token
        }
    }

    /// The token a did-save of a store save carries: the saving context's own new generation when it is pinned, else
    /// one that any context of the coordinator can pin to (taken at its first read); nil without generations.
    func queryGenerationAfterSave(to coordinator: PersistentStoreCoordinator) -> QueryGenerationToken? {
        if let advanced = advanceQueryGeneration() { return advanced }
        return coordinator.supportsQueryGenerations ? QueryGenerationToken(coordinator: coordinator) : nil
    }
}
