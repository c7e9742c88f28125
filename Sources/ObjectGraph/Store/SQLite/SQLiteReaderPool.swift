import CSQLite
import Foundation

/// The read connections of an SQLite store beside its one writer (semantics §8 "Connection pool").
///
/// Since iOS 10 / macOS 10.12 Core Data's SQLite store keeps a small pool of connections in WAL mode: contexts that
/// are not nested fetch and fault at the same time as each other and as one writer. Each reader here is a
/// read-only connection to the same file, wrapped in a store of its own (``SQLiteStore/init(readerOf:)``) so the
/// store's reading code runs unchanged on it; a read takes an idle reader (opening one when fewer than `capacity`
/// exist) or waits until one is given back. In WAL mode a reader sees the last committed state of the file and
/// never waits for the writer's open transaction. As GRDB's `DatabasePool` does, readers are opened read-only
/// (`SQLITE_OPEN_READONLY`), with the store's busy timeout for SQLite's rare busy cases in WAL mode and the
/// writer's per-connection pragmas (`cache_size`, `mmap_size`…, as GRDB runs `prepareDatabase` on each). Unlike GRDB's
/// `read`, a read here is not wrapped in a transaction of its own: each statement reads the file as it was when it
/// started, every row carries its version (`Z_OPT`), and the row cache takes no row older than one the writer
/// installed (``RowCache``), so the extra `BEGIN`/`COMMIT` per read would buy nothing and cost two statements.
final class SQLiteReaderPool: @unchecked Sendable {  // every field is guarded by `condition`
    private let condition = NSCondition()
    private var idle: [SQLiteStore] = []
    private var open = 0
    private var leased = 0
    private var closed = false
    /// The most readers kept open: the coordinator's pool size less its writer (``capacityChanged(to:)``); a reader
    /// given back beyond it is closed, not kept idle.
    private var limit = Int.max
    /// Statements the readers ran and gave back (a reader's own counts are read only while nobody holds it).
    private var returnedCounts = StatementCounts()
    private unowned let writer: SQLiteStore

    init(writer: SQLiteStore) {
        self.writer = writer
    }

    /// Runs `body` with a reader, holding it for the call: one of at most `capacity` readers; when all are held, the
    /// caller waits for one. Nil when the pool is closed or no reader could be opened (the caller reads on the
    /// writer's connection then, on the coordinator's queue).
    func withReader<T>(capacity: Int, _ body: (SQLiteStore) throws -> T) throws -> T? {
        guard let reader = checkOut(capacity: max(1, capacity)) else { return nil }
        defer { checkIn(reader) }
        return try body(reader)
    }

    private func checkOut(capacity: Int) -> SQLiteStore? {
        condition.lock()
        while !closed, idle.isEmpty, open >= capacity { condition.wait() }
        if closed {
            condition.unlock()
            return nil
        }
        if let reader = idle.popLast() {
            leased += 1
            condition.unlock()
            return reader
        }
        open += 1
        leased += 1
        condition.unlock()
        // Opened outside the lock: opening a connection reads the file's header.
        if let reader = try? SQLiteStore(readerOf: writer) { return reader }
        condition.lock()
        open -= 1
        leased -= 1
        condition.broadcast()
        condition.unlock()
        return nil
    }

    private func checkIn(_ reader: SQLiteStore) {
        condition.lock()
        returnedCounts = returnedCounts + reader.connection.statementCounts
        reader.connection.statementCounts = StatementCounts()
        leased -= 1
        if closed || open > limit { open -= 1 } else { idle.append(reader) }
        condition.signal()
        condition.unlock()
    }

    /// A reader taken out of the pool for a query generation: an idle one, else a new one. It does
    /// not count against the pool's capacity while the generation holds it (a pinned context must not starve the
    /// other readers, nor wait for them); ``adopt(_:capacity:)`` gives it back.
    func detach() throws -> SQLiteStore {
        condition.lock()
        if closed {
            // The store closed (its coordinator went): no new connection is opened to its file.
            condition.unlock()
            throw ObjectGraphError(.persistentStoreOperation, "the store's read connections are closed: it has no generation to give")
        }
        if let reader = idle.popLast() {
            open -= 1
            condition.unlock()
            return reader
        }
        condition.unlock()
        return try SQLiteStore(readerOf: writer)
    }

    /// Takes back a reader a generation held (its transaction ended): it joins the idle readers when the pool has
    /// room, and is closed otherwise. A reader still inside a transaction (its `COMMIT` failed) is closed: kept, it
    /// would serve every later read the old snapshot and hold the WAL for good.
    func adopt(_ reader: SQLiteStore, capacity: Int) {
        let ended = !reader.connection.isInTransaction
        condition.lock()
        returnedCounts = returnedCounts + reader.connection.statementCounts
        reader.connection.statementCounts = StatementCounts()
        if ended, !closed, open < capacity {
            open += 1
            idle.append(reader)
            condition.signal()
        }
        condition.unlock()
    }

    /// Counts statements a generation's reader ran (it is not held by the pool meanwhile).
    func absorbCounts(of reader: SQLiteStore) {
        condition.lock()
        returnedCounts = returnedCounts + reader.connection.statementCounts
        reader.connection.statementCounts = StatementCounts()
        condition.unlock()
    }

    /// Takes the pool's new capacity (the coordinator's pool size less its writer): wakes callers waiting for a
    /// reader when it grew; when it shrank, closes the idle readers beyond it at once, and the held ones beyond it
    /// as they are given back (an idle reader holds a file handle and its page cache).
    func capacityChanged(to capacity: Int) {
        condition.lock()
        limit = max(0, capacity)
        var closing: [SQLiteStore] = []
        while open > limit, let reader = idle.popLast() {
            closing.append(reader)
            open -= 1
        }
        condition.broadcast()
        condition.unlock()
        closing.removeAll()  // the last references: the connections close here, outside the lock
    }

    /// The statements every reader ran, for the coordinator's counters.
    var statementCounts: StatementCounts {
        condition.lock()
        defer { condition.unlock() }
        return returnedCounts
    }

    /// Readers open now (held or idle).
    var openReaders: Int {
        condition.lock()
        defer { condition.unlock() }
        return open
    }

    /// Closes the idle readers; readers held now close when they are given back. Reads after this run on the writer.
    func close() {
        condition.lock()
        closed = true
        open -= idle.count
        idle.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}

extension SQLiteStore {
    /// A reader of `writer`'s file for its pool: a read-only connection with the predicate functions and the
    /// writer's per-connection pragmas (``SQLiteStore/connectionPragmas``), sharing the writer's model, identity and
    /// store number (nothing is written to the file; the pragmas are not counted as the store's statements).
    convenience init(readerOf writer: SQLiteStore) throws {
        guard let url = writer.url else { throw ObjectGraphError(.persistentStoreOpen, "a reader needs a store file") }
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: url.path, readOnly: true, busyTimeout: writer.busyTimeout)
            // The writer's per-connection settings (GRDB's `DatabasePool` runs its `prepareDatabase` on every reader
            // alike): a reader reads with the same cache, memory map and busy timeout as the writer.
            try connection.configure(writer.connectionPragmas)
        } catch let error as SQLiteError {
            throw Self.storeError(error, path: url.path, opening: true)
        }
        registerPredicateFunctions(connection.handle)
        self.init(reader: connection, of: writer)
    }
}
