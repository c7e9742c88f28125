import Foundation

/// The kinds of persistent store.
public enum PersistentStoreType: String, Sendable, Codable, CaseIterable {
    /// An SQLite file in Core Data's layout.
    case sqlite
    /// Rows in memory, versioned like the SQLite store.
    case inMemory
}

/// Options for a store (`NSPersistentStoreCoordinator` option keys).
public struct StoreOptions: Sendable, Hashable {
    /// How long a write waits for another connection's lock before failing (seconds).
    public var busyTimeout: TimeInterval = 5
    /// SQLite pragmas (`NSSQLitePragmasOption`): `journal_mode` (default WAL), `synchronous` (default NORMAL), ….
    public var pragmas: [String: String] = [:]
    /// Open the store read-only (`NSReadOnlyPersistentStoreOption`).
    public var readOnly = false
    /// Record persistent history (`NSPersistentHistoryTrackingKey`).
    public var persistentHistoryTracking = false
    /// Post remote-change notifications (`NSPersistentStoreRemoteChangeNotificationPostOptionKey`).
    public var remoteChangeNotifications = false
    /// Migrate a store made with one of the model's ``ManagedObjectModel/previousVersions`` when it is opened
    /// (`NSMigratePersistentStoresAutomaticallyOption`; off unless asked, as Core Data's coordinator; a store
    /// description asks by default).
    public var migrateAutomatically = false
    /// Infer the migration's mapping (`NSInferMappingModelAutomaticallyOption`); without it there is no mapping
    /// model to use and a migration fails with 134140.
    public var inferMappingModel = false
    /// The connections a store may use at once (`NSPersistentStoreConnectionPoolMaxSizeKey`, iOS 10 / macOS 10.12):
    /// one writer and, for an SQLite store in WAL mode, `n - 1` read connections beside it, so a fetch or a fault
    /// does not wait for a save of another context on the same coordinator (semantics §8). `1` serializes every
    /// request of the coordinator on one connection, as before iOS 10. nil keeps the coordinator's
    /// ``PersistentStoreCoordinator/connectionPoolSize`` (4 unless set: Apple documents the default only as greater
    /// than one, so 4 is inferred). Must be at least 1 for an SQLite store; an in-memory store has no read
    /// connections and ignores it, whatever its value (Docs/coredata-behaviour.md §8).
    public var connectionPoolMaxSize: Int?

    /// Default options.
    public init() {}
}

/// A row as a store hands it out: values in the entity's slot order, plus its version (`Z_OPT`).
package struct RowSnapshot: Sendable, Equatable {
    package var values: [PropertyValue]
    package var version: Int64
}

/// A fetch as the store runs it.
package struct StoreFetch {
    var entity: EntityDescription
    var predicate: ObjectPredicate?
    var sortDescriptors: [ObjectSortDescriptor]
    var limit: Int
    var offset: Int
    var idsOnly: Bool
    /// Whether rows of the entity's sub-entities are included (`includesSubentities`).
    var includesSubentities = true
}

/// The changes of one save, as the store writes them in one transaction.
struct SaveRequest {
    struct Insert {
        var id: ManagedObjectID
        var values: [PropertyValue]
    }
    struct Update {
        var id: ManagedObjectID
        var oldVersion: Int64
        var values: [PropertyValue]
        /// The object's changed slots as it keeps them (ascending when iterated): no array per updated row.
        var changedSlots: SlotSet
    }
    struct Delete {
        var id: ManagedObjectID
        var oldVersion: Int64
        /// Values kept in the history tombstone (attributes marked `preservesValueInHistoryOnDeletion`).
        var tombstone: [String: PropertyValue] = [:]
    }
    /// A row of a many-to-many join table, keyed by the relationship on the side that owns the table.
    struct JoinChange {
        var entity: EntityDescription
        var relationship: RelationshipDescription
        var source: ManagedObjectID
        var destination: ManagedObjectID
        var isInsert: Bool
    }

    /// The members of an ordered relationship whose order the save changed, in their new order
    /// (Docs/coredata-behaviour.md §12.4): the store writes the place of each member whose stored place differs.
    struct OrderChange {
        var entity: EntityDescription
        var relationship: RelationshipDescription
        var source: ManagedObjectID
        var members: [ManagedObjectID]
    }

    var inserts: [Insert] = []
    var updates: [Update] = []
    var deletes: [Delete] = []
    var joinChanges: [JoinChange] = []
    /// Empty in a model without ordered relationships.
    var orderChanges: [OrderChange] = []
    /// Unchanged objects whose version is checked (`detectConflicts(for:)`).
    var locked: [(id: ManagedObjectID, version: Int64)] = []
    var author: String?
    var contextName: String?
    /// The store number of each insert a context assigned to a store (``ManagedObjectContext/assign(_:to:)``), by
    /// temporary ID; empty for every other save.
    var assignedStores: [ManagedObjectID: UInt32] = [:]
    /// Only compare versions (layer 1 and 2); write nothing. This finds optimistic-locking conflicts before
    /// uniqueness conflicts are resolved (semantics §1.3).
    var checkVersionsOnly = false

    var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty && joinChanges.isEmpty && orderChanges.isEmpty && locked.isEmpty }
}

/// A row whose version in the database is not the one the save expected (layer 2, semantics §1.1).
struct StoreVersionConflict {
    var id: ManagedObjectID
    var expectedVersion: Int64
    /// The row in the database; nil when it was deleted (new version 0).
    var databaseRow: RowSnapshot?
}

/// A uniqueness violation found by the store against existing rows (semantics §1.6, database level).
struct StoreConstraintViolation {
    var entity: EntityDescription
    var constraint: [String]
    var values: [PropertyValue]
    /// The object being saved.
    var id: ManagedObjectID
    /// The existing row it collides with.
    var databaseID: ManagedObjectID
    var databaseRow: RowSnapshot
}

enum StoreSaveOutcome {
    /// `newIDs`: the permanent ID of each temporary one; `insertIDs`: the ID each of the request's inserts was
    /// written under, in the request's order (empty when nothing was written).
    case committed(newIDs: [ManagedObjectID: ManagedObjectID], insertIDs: [ManagedObjectID])
    case versionConflicts([StoreVersionConflict])
    case constraintViolations([StoreConstraintViolation])
}

/// What the SQLite and in-memory stores do for a coordinator. Called only on the coordinator's queue.
protocol PersistentStore: AnyObject {
    var identifier: String { get }
    /// What the IDs it mints carry: its identifier's number, with its coordinator's tag above (``ManagedObjectID``).
    var storeNumber: UInt32 { get }
    var url: URL? { get }
    var type: PersistentStoreType { get }
    var statementCounts: StatementCounts { get }
    /// Whether a write transaction is open (a simulated read of a store without read connections then waits: see
    /// ``PersistentStoreCoordinator/connectionPoolSize``).
    var isInTransaction: Bool { get }
    /// The rows the last committed save wrote for places in ordered relationships (Docs/coredata-behaviour.md
    /// §12.4); read only after a save that sent order changes.
    var orderRowsWritten: Int { get }

    /// Whether the store filters, sorts and limits `fetch` itself; otherwise the coordinator does it in memory.
    func canEvaluate(_ fetch: StoreFetch) -> Bool
    /// The rows of a fetch, each under the ID of its own entity (a sub-entity's rows when the fetch includes
    /// them).
    func identifiedRows(_ fetch: StoreFetch) throws -> [(id: ManagedObjectID, row: RowSnapshot?)]
    /// `fetch` when the store can evaluate it (``canEvaluate(_:)``), else nil, as the entries a context's fetch
    /// takes (object IDs of this store, an entry with a row marked as holding the row-cache reference the
    /// coordinator installs for it). The store decides and runs in one step (the SQLite store translates the
    /// predicate once, not once to decide and again to run) and makes the entries as it reads the rows.
    func fetchEntriesIfEvaluable(_ fetch: StoreFetch) throws -> [FetchEntry]?
    func count(_ fetch: StoreFetch) throws -> Int
    /// `count` when the store can evaluate the fetch, else nil (one translation, as for ``fetchEntriesIfEvaluable(_:)``).
    func countIfEvaluable(_ fetch: StoreFetch) throws -> Int?
    func rows(of entity: EntityDescription, keys: [Int64]) throws -> [Int64: RowSnapshot]
    func relatedKeys(of source: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID]
    func save(_ request: SaveRequest) throws -> StoreSaveOutcome
    /// The history token of the last committed save or batch request (history tracking on), else nil.
    var lastHistoryToken: PersistentHistoryToken? { get }
    /// Persistent history (SQLite only, semantics §3.6).
    func history(after number: Int64?, since date: Date?) throws -> [PersistentHistoryTransaction]
    func deleteHistory(before number: Int64?, before date: Date?) throws -> Int
    func currentHistoryToken() throws -> PersistentHistoryToken?
    /// Throws 134301 unless the history holds the transaction numbered `number` (a token in a history predicate).
    func checkHistoryHolds(transaction number: Int64) throws
    /// Batch requests (SQLite only, semantics §6).
    func batchInsert(_ entity: EntityDescription, rows: [[PropertyValue]], upsert: BatchUpsertRule, author: String?, contextName: String?) throws -> [ManagedObjectID]
    func batchUpdate(_ ids: [ManagedObjectID], values: [Int: PropertyValue], author: String?, contextName: String?) throws -> Int
    func batchDelete(_ ids: [ManagedObjectID], author: String?, contextName: String?) throws -> [ManagedObjectID]
    /// Permanent IDs for objects of `entities`, in order, reserved now (`obtainPermanentIDs`).
    func allocateKeys(for entities: [EntityDescription]) throws -> [ManagedObjectID]
    func close()
}

/// What a batch insert does with a row whose unique attributes match an existing row (semantics §6).
enum BatchUpsertRule {
    /// Update the existing row in place, the whole row (missing attributes to their defaults).
    case replace
    /// Keep the existing row; skip the new one.
    case keep
    /// Fail the request with 133021.
    case fail
}

extension PersistentStore {
    private func sqliteOnly(_ what: String) -> ObjectGraphError {
        ObjectGraphError(.persistentStoreOperation, "\(what) needs an SQLite store (Core Data supports it on SQLite only)")
    }
    var lastHistoryToken: PersistentHistoryToken? { nil }
    func history(after number: Int64?, since date: Date?) throws -> [PersistentHistoryTransaction] { throw sqliteOnly("persistent history") }
    func deleteHistory(before number: Int64?, before date: Date?) throws -> Int { throw sqliteOnly("persistent history") }
    func currentHistoryToken() throws -> PersistentHistoryToken? { nil }
    func checkHistoryHolds(transaction number: Int64) throws { throw sqliteOnly("persistent history") }
    func batchInsert(_ entity: EntityDescription, rows: [[PropertyValue]], upsert: BatchUpsertRule, author: String?, contextName: String?) throws -> [ManagedObjectID] {
        throw sqliteOnly("a batch insert")
    }
    func batchUpdate(_ ids: [ManagedObjectID], values: [Int: PropertyValue], author: String?, contextName: String?) throws -> Int { throw sqliteOnly("a batch update") }
    func batchDelete(_ ids: [ManagedObjectID], author: String?, contextName: String?) throws -> [ManagedObjectID] { throw sqliteOnly("a batch delete") }
}

extension PersistentStore {
    package func fetchEntriesIfEvaluable(_ fetch: StoreFetch) throws -> [FetchEntry]? {
        guard canEvaluate(fetch) else { return nil }
        return try identifiedRows(fetch).map { FetchEntry(id: $0.id, row: $0.row, retained: $0.row != nil) }
    }

    func countIfEvaluable(_ fetch: StoreFetch) throws -> Int? {
        canEvaluate(fetch) ? try count(fetch) : nil
    }
}

extension SaveRequest {
    /// Counts a committed save's costed operations (Docs/simulation.md) where a store writes its rows, inside
    /// the file's writer hold, so a simulation keeps the writer busy for them.
    func countCommitted() {
        Probe.count(.transaction)
        Probe.count(.rowInserted, inserts.count)
        Probe.count(.rowUpdated, updates.count)
        Probe.count(.rowDeleted, deletes.count)
    }
}

extension PersistentStore {
    var isInTransaction: Bool { false }
}
