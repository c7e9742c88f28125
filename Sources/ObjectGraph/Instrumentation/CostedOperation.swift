/// The operations that cost time on a device: the library counts each where it does it, on the thread that does
/// it. A simulation turns the counts into virtual time with a cost profile (Docs/simulation.md).
package enum CostedOperation: Int, CaseIterable, Sendable, Codable {
    /// An object entered a context's registry (a fault or an inserted object).
    case objectRegistered
    /// A fault was fulfilled from the coordinator's row cache.
    case faultFulfilledFromCache
    /// A fault was fulfilled from the store (a row-cache miss: one row read).
    case faultFulfilledFromStore
    /// A fetch request executed (its fixed work: SQL built, the coordinator reached, the results mapped).
    case fetchExecuted
    /// A full row read by a fetch (or a batch of faults): stepped, decoded and cached (a row of IDs only is an
    /// ``idRowFetched``).
    case rowFetched
    /// A property read through key-value access.
    case propertyRead
    /// A property set through key-value access.
    case propertySet
    /// A registered object refreshed by a merge (`refresh(_:mergeChanges:)` is priced by the faults it leaves).
    case objectRefreshed
    /// A context notification posted (objects-did-change, will-save, did-save).
    case notificationPosted
    /// An object a fetched results controller evaluated for a change.
    case controllerObjectEvaluated
    /// An SQL statement run to completion (its base cost, beside its rows). Inside a batch request a statement
    /// counts once however many rows it is stepped for: the request prepares it once and re-binds it per row.
    case sqlStatement
    /// A row inserted in the store.
    case rowInserted
    /// A row updated in the store.
    case rowUpdated
    /// A row deleted from the store.
    case rowDeleted
    /// A store transaction committed.
    case transaction
    /// A context saved (to its store or its parent).
    case contextSave
    /// An object carried from a child context into its parent by the child's save.
    case objectPushed
    /// A block queued on a serial queue (`perform`, an async merge, a frame) and run: the dispatch, the hop to
    /// the queue's thread and its autorelease pool. A `performAndWait` runs on the caller's thread and is free.
    case blockRun
    /// A row copied into its new table by a lightweight migration (`INSERT … SELECT`, no managed object).
    case rowMigrated
    /// A row a batch insert wrote inside SQLite (its insert stepped again, with its uniqueness lookups): no managed
    /// object, no validation, no row-cache snapshot (Docs/coredata-behaviour.md §6).
    case batchRowInserted
    /// A row a batch request updated inside SQLite (a batch update's row, a batch insert's upsert, a batch delete's
    /// nullified inverse): no managed object, no row-cache snapshot.
    case batchRowUpdated
    /// A row a batch delete deleted inside SQLite (cascades included): no managed object, no row-cache snapshot.
    case batchRowDeleted
    /// One row of a fetch that reads IDs only (object IDs, a batched fetch's first pass, a to-many fault, a
    /// controller's section counts): `Z_PK` (and `Z_ENT`) stepped and an ID made, no attribute decoded, no snapshot.
    case idRowFetched
    /// A row written into an in-memory store's tables by a save (one inserted, updated or deleted object's row: the
    /// version check and the dictionary entry). The in-memory store counts this instead of SQLite's
    /// ``rowInserted``, ``rowUpdated``, ``rowDeleted`` and ``transaction`` (Docs/coredata-behaviour.md §7).
    case inMemoryRowWritten
    /// A row an in-memory store looks at to answer a read: each row of the entity a fetch walks (the store has no
    /// index, so a fetch walks the table), each row a fault or a batch of faults takes, each row or join pair a
    /// to-many relationship's destinations are found among.
    case inMemoryRowRead
    /// One comparison of two objects through a fetched results controller's sort descriptors, made while finding
    /// a changed object's place among the results (a step of its binary search, Docs/coredata-behaviour.md §5).
    case controllerComparison
    /// One entry of a fetched results controller's results array shifted by one place: an insert or removal at
    /// `i` shifts the entries after it, a move from `a` to `b` the |a − b| entries between.
    case controllerObjectMoved
    /// One section of a fetched results controller adjusted (its offset or count) or inserted or removed.
    case controllerSectionUpdated
    /// A step SQLite took from one row to the next in a full scan of a table or of a whole index, read from the
    /// statement's own counter (`SQLITE_STMTSTATUS_FULLSCAN_STEP`): the rows a SELECT, or an UPDATE or DELETE
    /// with a WHERE clause, went through because no index narrowed them. A scan of n rows counts n − 1; rows an
    /// index seek reaches are not counted (Docs/what-the-workbench-counts.md "Rows examined").
    case rowExamined
    /// A sort SQLite ran because no index gives the ORDER BY's order (`SQLITE_STMTSTATUS_SORT`): its fixed work.
    case sortPerformed
    /// A step over a table's rows to fill an automatic index, one SQLite built for a single statement because no
    /// index served a join (`SQLITE_STMTSTATUS_AUTOINDEX`).
    case autoIndexRow
    /// An object a context marked deleted itself: a `delete(_:)` of a registered object not already deleted, or an
    /// object a cascade delete rule deleted with it when the context processed its pending changes (the change-set
    /// entry, the walk of the entity's delete rules, the will/did-change; Docs/coredata-behaviour.md §2.1). A
    /// child's deletes reaching its parent are ``objectPushed``, a merge's are the merge's; a batch delete's rows are
    /// ``batchRowDeleted``.
    case objectDeleted

    /// The number of operations (`allCases.count` without building the array: the scheduler reads it on every
    /// clock read).
    package static let count = allCases.count
    /// The operations' names by raw value.
    package static let names = allCases.map(\.name)

    /// The name used in profiles, reports and CSV.
    package var name: String { String(describing: self) }

    /// The operation of a profile's or a report's name.
    package init?(name: String) {
        guard let op = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = op
    }

    /// The first estimate of one operation's price in nanoseconds (`Profiles/estimates.yaml`): what a choice
    /// between two ways of doing the same work weighs them by outside a simulation, or in one without prices.
    package var estimatedNanoseconds: UInt64 {
        switch self {
        case .objectRegistered: 4000
        case .faultFulfilledFromCache: 6000
        case .faultFulfilledFromStore: 60000
        case .fetchExecuted: 150000
        case .rowFetched: 8000
        case .propertyRead: 300
        case .propertySet: 1500
        case .objectRefreshed: 10000
        case .notificationPosted: 20000
        case .controllerObjectEvaluated: 5000
        case .sqlStatement: 20000
        case .rowInserted: 50000
        case .rowUpdated: 40000
        case .rowDeleted: 30000
        case .transaction: 2000000
        case .contextSave: 200000
        case .objectPushed: 70000
        case .blockRun: 5000
        case .rowMigrated: 2000
        case .batchRowInserted: 3000
        case .batchRowUpdated: 3000
        case .batchRowDeleted: 2000
        case .idRowFetched: 1500
        case .inMemoryRowWritten: 2000
        case .inMemoryRowRead: 500
        case .controllerComparison: 700
        case .controllerObjectMoved: 2
        case .controllerSectionUpdated: 1000
        case .rowExamined: 250
        case .sortPerformed: 10000
        case .autoIndexRow: 1000
        case .objectDeleted: 5000
        }
    }
}

/// The kinds of SQL statement counted beside ``CostedOperation/sqlStatement`` (reports label them `kind=`). They
/// cost alike (one ``CostedOperation/sqlStatement`` each, rows apart): the kind says what the store did, not how long.
package enum StatementKind: Int, CaseIterable, Sendable {
    case select, insert, update, delete
    /// Everything else: BEGIN, COMMIT, pragmas, schema statements.
    case other

    package static let count = allCases.count
    /// The name used in reports and CSV.
    package var name: String { String(describing: self) }
}
