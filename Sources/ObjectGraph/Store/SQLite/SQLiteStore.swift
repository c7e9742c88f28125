import CSQLite
import Foundation

/// The SQLite store: Core Data's layout, WAL, `BEGIN IMMEDIATE` saves, every UPDATE and DELETE guarded by
/// `Z_OPT` (semantics §1.1). Used only on its coordinator's queue; in WAL mode its ``readerPool`` reads beside it,
/// each reader a store of its own on a read-only connection, used by one thread at a time.
final class SQLiteStore: PersistentStore {
    let url: URL?
    let identifier: String
    let storeNumber: UInt32
    let model: ManagedObjectModel
    let connection: SQLiteConnection
    var type: PersistentStoreType { .sqlite }
    var statementCounts: StatementCounts { connection.statementCounts + (readerPool?.statementCounts ?? StatementCounts()) }
    private let path: String
    /// The busy timeout of the store's connections (readers open with it too).
    let busyTimeout: TimeInterval
    /// The pragmas of the store's options that set the connection, not the file, in the order the writer ran
    /// them: each reader of the pool runs them too when it opens (``init(readerOf:)``), so that it reads with the
    /// writer's `cache_size`, `mmap_size`, `busy_timeout`… (semantics §8, Docs/coredata-behaviour.md §8).
    let connectionPragmas: [(name: String, value: String)]
    /// The read connections beside this writer: WAL stores only (nil for a reader; for another journal mode, where a
    /// reader would wait for the writer's lock anyway and a generation would lock writers out; and with
    /// `locking_mode` EXCLUSIVE, where no other connection can read the file). The mode SQLite reports decides, read
    /// from the file for a read-only store.
    private(set) var readerPool: SQLiteReaderPool?
    /// Called inside a save's write transaction, just before its `COMMIT` (tests hold the transaction open with it).
    var beforeCommit: (@Sendable () -> Void)?
    /// Whether saves and batch requests record persistent history (semantics §3.6).
    let historyTracking: Bool
    /// The token of the last transaction this store recorded.
    var lastHistoryToken: PersistentHistoryToken?
    /// The rows the last save wrote for places in ordered relationships (Docs/coredata-behaviour.md §12.4),
    /// counted as row updates once it commits.
    var orderRowsWritten = 0
    private var selectPrefix: [ObjectIdentifier: String] = [:]
    /// Per entity, the query of one row by key (a fault's), written at its first use (not at every fault).
    private var oneRowQueries: [ObjectIdentifier: String] = [:]
    /// Per entity fetched with its sub-entities, ``HierarchySelect`` (built once, not at every fetch).
    private var hierarchySelects: [ObjectIdentifier: HierarchySelect] = [:]
    /// The rows a lightweight migration copied when this store was opened (nil: none ran).
    private(set) var migratedRows: Int?
    /// Where values of attributes that allow external storage go (Docs/coredata-behaviour.md §13.5); nil when no
    /// attribute of the model does, so that other models' rows get no new work.
    let externalData: SQLiteExternalData?

    init(url: URL, model: ManagedObjectModel, options: StoreOptions, coordinatorTag: UInt32) throws {
        self.url = url
        self.model = model
        self.path = url.path
        self.externalData = model.entities.contains { !$0.externalStorageSlots.isEmpty } ? SQLiteExternalData(storeURL: url) : nil
        self.historyTracking = options.persistentHistoryTracking
        self.busyTimeout = options.busyTimeout
        let directory = url.deletingLastPathComponent()
        if !options.readOnly, !FileManager.default.fileExists(atPath: directory.path) {
            do { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) } catch {
                throw ObjectGraphError(.persistentStoreOpen, "cannot create the store's directory: \(error.localizedDescription)", storePath: url.path)
            }
        }
        do {
            connection = try SQLiteConnection(path: url.path, readOnly: options.readOnly, busyTimeout: options.busyTimeout)
        } catch let error as SQLiteError {
            throw Self.storeError(error, path: url.path, opening: true)
        }
        registerPredicateFunctions(connection.handle)
        // Whether other connections can read beside this one: WAL, and no exclusive lock (read connections).
        var sharesReads = false
        do {
            // SQLite's pragma names are case-insensitive: an option's name replaces the default of the same pragma
            // whatever its case (`JOURNAL_MODE` ran before the default `journal_mode`, and WAL won), and one pragma
            // named twice is refused (which of the two values ran would depend on the dictionary's order).
            var pragmas = ["journal_mode": "WAL", "synchronous": "NORMAL"]
            var given: [String: String] = [:]
            for name in options.pragmas.keys.sorted() {
                let key = name.lowercased()
                if let other = given[key] {
                    throw ObjectGraphError(.persistentStoreOpen, "pragma \(key) is given twice (\(other) and \(name))", storePath: url.path)
                }
                given[key] = name
                pragmas[key] = options.pragmas[name]
            }
            // Reading the schema first tells a non-SQLite file apart before any pragma writes to it, and a file we
            // refuse (another database, another model) is refused before a pragma (journal_mode=WAL) changes it
            // (a refused file stays byte for byte as it was).
            _ = try connection.query("SELECT count(*) FROM sqlite_master")
            var (metadata, migrateFrom) = try Self.refuseBeforeChanging(connection, model: model, options: options, path: url.path)
            // What SQLite says the pragmas left (the mode each one answers with), not what they asked for: the read
            // connections need WAL and a lock other connections can share (semantics §3.7, §8).
            var journalMode: String?
            var lockingMode = "normal"
            var perConnection: [(name: String, value: String)] = []
            let ordered = pragmas.sorted(by: { $0.key < $1.key }).filter { !(options.readOnly && $0.key == "journal_mode") }
            // Every name and value is checked before the first pragma runs: a refused option leaves the file as it was.
            for (name, value) in ordered {
                guard name.allSatisfy({ $0.isLetter || $0 == "_" }) else {
                    throw ObjectGraphError(.persistentStoreOpen, "invalid pragma name \(name)", storePath: url.path)
                }
                guard Self.isOneValue(value) else {
                    throw ObjectGraphError(.persistentStoreOpen, "invalid value for pragma \(name): \"\(value)\" holds more than one statement", storePath: url.path)
                }
            }
            for (name, value) in ordered {
                if !Self.writerOnlyPragmas.contains(name.lowercased()) { perConnection.append((name, value)) }
                let answer = try connection.query("PRAGMA \(name) = \(value)").first?.first?.string?.lowercased()
                switch name.lowercased() {
                case "journal_mode": journalMode = answer ?? journalMode
                case "locking_mode": lockingMode = answer ?? lockingMode
                default: break
                }
            }
            // A read-only store keeps the file's own mode (WAL persists in the file); only then is it asked.
            if journalMode == nil { journalMode = try connection.query("PRAGMA journal_mode").first?.first?.string?.lowercased() }
            sharesReads = journalMode == "wal" && lockingMode != "exclusive"
            connectionPragmas = perConnection
            if let source = migrateFrom, let found = metadata {
                // Lightweight migration, in one transaction (a kill leaves the old store whole).
                migratedRows = try Self.migrate(connection, from: source, to: model, inferMapping: options.inferMappingModel, path: url.path)
                metadata = (found.uuid, model.versionHash)
            }
            identifier = try Self.prepareSchema(connection, model: model, metadata: metadata, readOnly: options.readOnly, path: url.path)
            if options.persistentHistoryTracking, !options.readOnly {
                for statement in Self.historySchema { try connection.execute(statement) }
            }
            if let externalData, !options.readOnly { try Self.removeOrphanFiles(externalData, connection, model: model) }
        } catch let error as SQLiteError {
            throw Self.storeError(error, path: url.path, opening: true)
        }
        storeNumber = StoreRegistry.number(for: identifier) | coordinatorTag << StoreRegistry.tagShift
        if sharesReads { readerPool = SQLiteReaderPool(writer: self) }
    }

    /// A reader of `writer`'s file (``init(readerOf:)``): the writer's identity on another connection.
    init(reader connection: SQLiteConnection, of writer: SQLiteStore) {
        self.url = writer.url
        self.model = writer.model
        self.path = writer.path
        self.externalData = writer.externalData
        self.historyTracking = writer.historyTracking
        self.busyTimeout = writer.busyTimeout
        self.connectionPragmas = writer.connectionPragmas
        self.identifier = writer.identifier
        self.storeNumber = writer.storeNumber
        self.connection = connection
    }

    func close() { readerPool?.close() }

    /// Pragmas the writer alone runs: those that change the file itself (its journal mode, page size, vacuum mode,
    /// header fields: one setting for every connection, and a read-only reader cannot write them) and one-time
    /// actions on it (checkpoint, vacuum, checks). Every other pragma of the options sets the connection that runs
    /// it, and the readers run it too.
    static let writerOnlyPragmas: Set<String> = [
        "journal_mode", "page_size", "auto_vacuum", "user_version", "application_id", "schema_version",
        "legacy_file_format", "wal_checkpoint", "incremental_vacuum", "optimize", "integrity_check", "quick_check",
        "foreign_key_check", "shrink_memory",
    ]

    /// Whether a pragma's value is one value: no `;` outside quotes and comments but trailing ones. The writer runs
    /// `PRAGMA name = value` as one prepared statement (SQLite compiles the first statement of the text and leaves the
    /// rest unrun), a reader of the pool runs the same text whole as it opens (``SQLiteConnection/configure(_:)``):
    /// SQL after the value would run on the readers only, or, failing on a read-only connection, keep every reader
    /// from opening. Checked by reading the text, not by compiling it (SQLite runs some pragmas as it compiles them).
    static func isOneValue(_ value: String) -> Bool {
        var rest = value.unicodeScalars[...]
        var ended = false  // a `;` outside quotes and comments was passed: only blanks, `;` and comments may follow
        while let c = rest.popFirst() {
            switch c {
            case "'", "\"", "`", "[":
                if ended { return false }
                // To the closing quote (a doubled quote inside is two quoted strings in a row: the same scan); an
                // unclosed one runs to the end, one statement SQLite refuses when the writer runs it.
                guard let close = rest.firstIndex(of: c == "[" ? "]" : c) else { return true }
                rest = rest[rest.index(after: close)...]
            case "-" where rest.first == "-":
                guard let newline = rest.firstIndex(of: "\n") else { return true }
                rest = rest[newline...]
            case "/" where rest.first == "*":
                rest = rest.dropFirst()
                guard let star = rest.indices.first(where: { rest[$0] == "*" && rest.index(after: $0) < rest.endIndex && rest[rest.index(after: $0)] == "/" })
                else { return true }
                rest = rest[rest.index(star, offsetBy: 2)...]
            case ";":
                ended = true
            default:
                if ended, !c.properties.isWhitespace { return false }
            }
        }
        return true
    }

    static func storeError(_ error: SQLiteError, path: String, opening: Bool = false) -> ObjectGraphError {
        if error.isNotADatabase {
            return ObjectGraphError(.persistentStoreInvalidType, "the file is not an SQLite store or is corrupt (\(error.message))", storePath: path)
        }
        if error.isBusy {
            return ObjectGraphError(.persistentStoreTimeout, "the store stayed locked past the busy timeout (\(error.message))", storePath: path)
        }
        if error.isFull {
            return ObjectGraphError(.persistentStoreSave, "the disk or database is full (\(error.message))", storePath: path)
        }
        if error.isReadOnly {
            return ObjectGraphError(opening ? .persistentStoreOpen : .persistentStoreSave, "the store cannot be written (\(error.message))", storePath: path)
        }
        return ObjectGraphError(opening ? .persistentStoreOpen : .sqlite, error.description, storePath: path)
    }

    /// The store's UUID and model hash, nil in a file without `Z_METADATA`.
    private static func readMetadata(_ db: SQLiteConnection, path: String) throws -> (uuid: String, hash: String)? {
        let tables = try db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'Z_METADATA'")
        guard !tables.isEmpty else { return nil }
        let rows = try db.query("SELECT Z_UUID, Z_HASH FROM Z_METADATA WHERE Z_VERSION = 1")
        guard let row = rows.first, let uuid = row[0].string, let hash = row[1].string else {
            throw ObjectGraphError(.persistentStoreIncompatibleSchema, "the store has no Z_METADATA row", storePath: path)
        }
        return (uuid, hash)
    }

    /// The store's UUID when it was made with `model`; else 134100.
    private static func check(_ metadata: (uuid: String, hash: String), model: ManagedObjectModel, path: String) throws -> String {
        guard metadata.hash == model.versionHash else {
            throw ObjectGraphError(
                .persistentStoreIncompatibleVersionHash,
                "the store was made with another model (store hash \(metadata.hash), model hash \(model.versionHash)); nothing was changed",
                storePath: path)
        }
        return metadata.uuid
    }

    /// Reads only: refuses a database that is not a store of this layout (134020) or a store of another model
    /// (134100), before anything writes to the file. Returns the store's metadata, nil for an empty file, and the
    /// previous version of the model to migrate from when the options ask for automatic migration and one of
    /// the model's ``ManagedObjectModel/previousVersions`` made the store.
    private static func refuseBeforeChanging(
        _ db: SQLiteConnection, model: ManagedObjectModel, options: StoreOptions, path: String
    ) throws -> (metadata: (uuid: String, hash: String)?, migrateFrom: ManagedObjectModel?) {
        if let metadata = try readMetadata(db, path: path) {
            if metadata.hash != model.versionHash, options.migrateAutomatically, !options.readOnly,
               let source = model.previousVersions.last(where: { $0.versionHash == metadata.hash }) {
                return (metadata, source)
            }
            _ = try check(metadata, model: model, path: path)
            return (metadata, nil)
        }
        let userTables = try db.query("SELECT count(*) FROM sqlite_master WHERE type = 'table'")
        if let n = userTables.first?[0].int64, n > 0 {
            throw ObjectGraphError(.persistentStoreIncompatibleSchema, "the file is an SQLite database but not a store of this layout; nothing was changed", storePath: path)
        }
        return (nil, nil)
    }

    /// Creates the tables in a new file, or returns the UUID of an existing store (`metadata`, already checked).
    private static func prepareSchema(_ db: SQLiteConnection, model: ManagedObjectModel, metadata: (uuid: String, hash: String)?, readOnly: Bool, path: String) throws -> String {
        if let metadata { return metadata.uuid }
        if readOnly {
            throw ObjectGraphError(.persistentStoreOpen, "a read-only store has no schema to read", storePath: path)
        }
        try db.execute("BEGIN IMMEDIATE")
        do {
            // Another coordinator may have created the schema while we waited for the lock.
            if let metadata = try readMetadata(db, path: path) {
                try db.execute("COMMIT")
                return try check(metadata, model: model, path: path)
            }
            for statement in SQLiteSchema.createStatements(for: model) { try db.execute(statement) }
            let uuid = UUID().uuidString
            let insert = try db.statement("INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_HASH) VALUES (1, ?, ?)")
            try insert.bind([.string(uuid), .string(model.versionHash)])
            try insert.run()
            try db.execute("COMMIT")
            return uuid
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    // MARK: Reading

    /// `Z_PK`, `Z_OPT`, the slots' columns, then the `Z_ENT` columns of to-ones into a hierarchy (none without
    /// inheritance).
    private func selectColumns(_ entity: EntityDescription) -> String {
        if let s = selectPrefix[ObjectIdentifier(entity)] { return s }
        var columns = ["t0.Z_PK", "t0.Z_OPT"]
        for i in 0..<entity.slotCount { columns.append("t0.\(entity.columnName(forSlot: i))") }
        for slot in entity.entityColumnSlots { columns.append("t0.\(entity.entityColumns[slot]!)") }
        let s = columns.joined(separator: ", ")
        selectPrefix[ObjectIdentifier(entity)] = s
        return s
    }

    /// One column of the current row as a slot's value (the column is not NULL).
    @inline(__always)
    private func decodeValue(_ statement: SQLiteStatement, at col: Int, type: AttributeType?, destination: EntityDescription?) -> PropertyValue {
        switch type {
        case nil:
            return .objectID(ManagedObjectID(entity: destination!, primaryKey: statement.int64(at: col), storeNumber: storeNumber))
        case let type?:
            switch type {
            case .integer16, .integer32, .integer64: return .integer(statement.int64(at: col))
            case .double, .float: return .double(statement.double(at: col))
            case .boolean: return .bool(statement.int64(at: col) != 0)
            case .date: return .date(Date(timeIntervalSinceReferenceDate: statement.double(at: col)))
            case .string: return .string(statement.string(at: col))
            case .decimal: return Decimal(string: statement.string(at: col)).map { .decimal($0) } ?? .null
            case .uuid: return UUID(uuidString: statement.string(at: col)).map { .uuid($0) } ?? .null
            case .uri: return URL(string: statement.string(at: col)).map { .uri($0) } ?? .null
            case .binaryData, .transformable: return .data(statement.data(at: col))
            }
        }
    }

    /// Decodes the slot columns of the current row (columns start at `offset`).
    private func decodeRow(_ statement: SQLiteStatement, types: [AttributeType?], destinations: [EntityDescription?], offset: Int) -> [PropertyValue] {
        var values: [PropertyValue] = []
        values.reserveCapacity(types.count)
        // Slot types and destinations come from arrays resolved with the model (no slot description copied and
        // no relationship looked up by name per column), read once per query by the caller (not per row).
        for i in 0..<types.count {
            let col = offset + i
            if statement.isNull(at: col) {
                values.append(.null)
                continue
            }
            values.append(decodeValue(statement, at: col, type: types[i], destination: destinations[i]))
        }
        return values
    }

    /// What decoding a row of ``selectColumns(_:)`` needs of its entity, read once per query (not per row).
    private struct RowShape {
        let types: [AttributeType?]
        let destinations: [EntityDescription?]
        /// ``EntityDescription/entityColumnSlots``: their `Z_ENT` columns follow the slots' (none without inheritance).
        let references: [Int]
        /// ``EntityDescription/externalStorageSlots``: their columns hold a marker and the value or its file's name.
        let external: [Int]

        init(_ entity: EntityDescription) {
            (types, destinations, references) = (entity.slotAttributeTypes, entity.slotDestinations, entity.entityColumnSlots)
            external = entity.externalStorageSlots
        }
    }

    /// A row of ``selectColumns(_:)`` (slots from `offset`), its references into a hierarchy naming their
    /// concrete entity.
    @inline(__always)
    private func decodeRow(_ statement: SQLiteStatement, shape: RowShape, offset: Int) -> [PropertyValue] {
        var values = decodeRow(statement, types: shape.types, destinations: shape.destinations, offset: offset)
        if !shape.references.isEmpty { concreteReferences(&values, statement, shape.references, columns: (offset + shape.types.count)...) }
        if !shape.external.isEmpty, let externalData { externalData.resolve(&values, slots: shape.external) }
        return values
    }

    /// A to-one into a hierarchy names its destination's concrete entity, kept in its `Z_ENT`
    /// column (the k-th of `columns` for `slots[k]`).
    private func concreteReferences(_ values: inout [PropertyValue], _ statement: SQLiteStatement, _ slots: [Int], columns: some Sequence<Int>) {
        for (slot, column) in zip(slots, columns) {
            guard case .objectID(let id) = values[slot], !statement.isNull(at: column),
                  let concrete = model.entity(number: Int(statement.int64(at: column))) else { continue }
            values[slot] = .objectID(ManagedObjectID(entity: concrete, primaryKey: id.key, storeNumber: storeNumber))
        }
    }

    /// The columns a fetch of an entity with its sub-entities reads (`Z_PK`, `Z_OPT`, `Z_ENT`,
    /// then every column of every entity it covers, once), and where each entity's slots are among them: each
    /// row is decoded as the entity its `Z_ENT` names.
    struct HierarchySelect {
        struct Layout {
            let entity: EntityDescription
            let slotColumns: [Int]
            let entityColumns: [Int]
        }
        var sql: String
        var layouts: [Int: Layout]

        init(_ entity: EntityDescription, model: ManagedObjectModel) {
            var columns = ["t0.Z_PK", "t0.Z_OPT", "t0.Z_ENT"]
            var position: [String: Int] = [:]
            func column(_ name: String) -> Int {
                if let p = position[name] { return p }
                columns.append("t0.\(name)")
                position[name] = columns.count - 1
                return columns.count - 1
            }
            var layouts: [Int: Layout] = [:]
            for number in entity.kindNumbers {
                guard let kind = model.entity(number: number) else { continue }
                let slots = (0..<kind.slotCount).map { column(kind.columnName(forSlot: $0)) }
                let entityColumns = kind.entityColumnSlots.map { column(kind.entityColumns[$0]!) }
                layouts[number] = Layout(entity: kind, slotColumns: slots, entityColumns: entityColumns)
            }
            sql = columns.joined(separator: ", ")
            self.layouts = layouts
        }
    }

    private func hierarchySelect(_ entity: EntityDescription) -> HierarchySelect {
        if let select = hierarchySelects[ObjectIdentifier(entity)] { return select }
        let select = HierarchySelect(entity, model: model)
        hierarchySelects[ObjectIdentifier(entity)] = select
        return select
    }

    /// Whether a fetch reads rows of more than one entity (a parent with sub-entities, `includesSubentities`).
    private func readsHierarchy(_ fetch: StoreFetch) -> Bool {
        fetch.includesSubentities && !fetch.entity.subentities.isEmpty
    }

    private func decodeRow(_ statement: SQLiteStatement, layout: HierarchySelect.Layout) -> [PropertyValue] {
        let entity = layout.entity
        let types = entity.slotAttributeTypes, destinations = entity.slotDestinations
        var values: [PropertyValue] = []
        values.reserveCapacity(types.count)
        for i in 0..<types.count {
            let col = layout.slotColumns[i]
            values.append(statement.isNull(at: col) ? .null : decodeValue(statement, at: col, type: types[i], destination: destinations[i]))
        }
        if !entity.entityColumnSlots.isEmpty { concreteReferences(&values, statement, entity.entityColumnSlots, columns: layout.entityColumns) }
        if !entity.externalStorageSlots.isEmpty, let externalData { externalData.resolve(&values, slots: entity.externalStorageSlots) }
        return values
    }

    /// `whereSQL` limited to the rows of the entities the fetch covers; unchanged without
    /// inheritance.
    static func restricted(_ whereSQL: String, to fetch: StoreFetch) -> String {
        guard let rows = fetch.entity.entityCondition(alias: "t0", includesSubentities: fetch.includesSubentities) else { return whereSQL }
        return whereSQL.isEmpty ? rows : "\(rows) AND (\(whereSQL))"
    }

    private func buildQuery(_ fetch: StoreFetch, select: String) throws -> (sql: String, arguments: [PropertyValue]) {
        var builder = SQLiteQueryBuilder(root: fetch.entity)
        var whereSQL = ""
        if let predicate = fetch.predicate { whereSQL = try builder.condition(predicate.node) }
        whereSQL = Self.restricted(whereSQL, to: fetch)
        let order = try builder.orderBy(fetch.sortDescriptors)
        var sql = "SELECT \(select) FROM \(fetch.entity.tableName) t0"
        for join in builder.joins { sql += " " + join }
        if !whereSQL.isEmpty { sql += " WHERE " + whereSQL }
        if !order.isEmpty { sql += " ORDER BY " + order }
        if fetch.limit > 0 || fetch.offset > 0 { sql += " LIMIT \(fetch.limit > 0 ? fetch.limit : -1) OFFSET \(fetch.offset)" }
        return (sql, builder.arguments)
    }

    /// The query for `fetch`, or nil when its predicate or sort cannot be written in SQL (the coordinator then
    /// filters in memory). Other errors (a type mismatch) are the fetch's to report.
    private func translated(_ fetch: StoreFetch, select: String) throws -> (sql: String, arguments: [PropertyValue])? {
        do { return try buildQuery(fetch, select: select) } catch is UntranslatablePredicate { return nil }
    }

    func canEvaluate(_ fetch: StoreFetch) -> Bool {
        do { return try translated(fetch, select: "t0.Z_PK") != nil } catch { return true }
    }

    func identifiedRows(_ fetch: StoreFetch) throws -> [(id: ManagedObjectID, row: RowSnapshot?)] {
        try run(fetch, query: buildQuery(fetch, select: selectList(fetch))) { (id: $0, row: $1) }
    }

    /// The entries made as the rows are read, with one translation of the predicate: the coordinator mapped the
    /// store's pairs to entries in a second array, copying every row (0.13k instructions per row of an update's
    /// fetch).
    func fetchEntriesIfEvaluable(_ fetch: StoreFetch) throws -> [FetchEntry]? {
        guard let query = try translated(fetch, select: selectList(fetch)) else { return nil }
        return try run(fetch, query: query) { FetchEntry(id: $0, row: $1, retained: $1 != nil) }
    }

    private func selectList(_ fetch: StoreFetch) -> String {
        if readsHierarchy(fetch) { return fetch.idsOnly ? "t0.Z_PK, t0.Z_ENT" : hierarchySelect(fetch.entity).sql }
        return fetch.idsOnly ? "t0.Z_PK" : selectColumns(fetch.entity)
    }

    /// Each row of the query's result made into an `Element` as it is read (no array of pairs to map again).
    private func run<Element>(_ fetch: StoreFetch, query: (sql: String, arguments: [PropertyValue]),
                              _ make: (ManagedObjectID, RowSnapshot?) -> Element) throws -> [Element] {
        let (sql, arguments) = query
        if readsHierarchy(fetch) { return try runHierarchy(fetch, sql: sql, arguments: arguments, make) }
        let entity = fetch.entity, number = storeNumber
        return try run {
            let statement = try connection.cachedStatement(sql)
            try statement.bind(arguments)
            var result: [Element] = []
            let shape = RowShape(entity)
            while try statement.step() {
                let id = ManagedObjectID(entity: entity, primaryKey: statement.int64(at: 0), storeNumber: number)
                if fetch.idsOnly {
                    result.append(make(id, nil))
                } else {
                    result.append(make(id, RowSnapshot(values: decodeRow(statement, shape: shape, offset: 2), version: statement.int64(at: 1))))
                }
            }
            return result
        }
    }

    /// ``run(_:query:_:)`` for a fetch over a hierarchy: each row's ID and values are its `Z_ENT`'s entity's.
    private func runHierarchy<Element>(_ fetch: StoreFetch, sql: String, arguments: [PropertyValue],
                                       _ make: (ManagedObjectID, RowSnapshot?) -> Element) throws -> [Element] {
        let select = fetch.idsOnly ? nil : hierarchySelect(fetch.entity)
        let number = storeNumber
        return try run {
            let statement = try connection.cachedStatement(sql)
            try statement.bind(arguments)
            var result: [Element] = []
            while try statement.step() {
                let kind = Int(statement.int64(at: fetch.idsOnly ? 1 : 2))
                guard let entity = model.entity(number: kind) else { continue }
                let id = ManagedObjectID(entity: entity, primaryKey: statement.int64(at: 0), storeNumber: number)
                if let layout = select?.layouts[kind] {
                    result.append(make(id, RowSnapshot(values: decodeRow(statement, layout: layout), version: statement.int64(at: 1))))
                } else {
                    result.append(make(id, nil))
                }
            }
            return result
        }
    }

    func count(_ fetch: StoreFetch) throws -> Int {
        try count(query: buildQuery(fetch, select: "t0.Z_PK"))
    }

    func countIfEvaluable(_ fetch: StoreFetch) throws -> Int? {
        guard let query = try translated(fetch, select: "t0.Z_PK") else { return nil }
        return try count(query: query)
    }

    private func count(query: (sql: String, arguments: [PropertyValue])) throws -> Int {
        let (sql, arguments) = query
        return try run {
            let statement = try connection.cachedStatement("SELECT count(*) FROM (\(sql))")
            try statement.bind(arguments)
            _ = try statement.step()
            let n = Int(statement.int64(at: 0))
            _ = try statement.step()
            return n
        }
    }

    func rows(of entity: EntityDescription, keys: [Int64]) throws -> [Int64: RowSnapshot] {
        var result: [Int64: RowSnapshot] = [:]
        // An object ID names its row's own entity; in a shared table the row must be of it (a
        // sibling's or a parent's ID with the same key names no object, as in the in-memory store). Nothing is
        // added outside a hierarchy.
        func kind() -> String { entity.entityCondition(alias: "t0", includesSubentities: false).map { " AND \($0)" } ?? "" }
        let shape = RowShape(entity)
        try run {
            if keys.count == 1 {
                let sql: String
                if let query = oneRowQueries[ObjectIdentifier(entity)] {
                    sql = query
                } else {
                    sql = "SELECT \(selectColumns(entity)) FROM \(entity.tableName) t0 WHERE t0.Z_PK = ?\(kind())"
                    oneRowQueries[ObjectIdentifier(entity)] = sql
                }
                let statement = try connection.cachedStatement(sql)
                statement.bindInt(keys[0], at: 1)
                while try statement.step() {
                    result[keys[0]] = RowSnapshot(values: decodeRow(statement, shape: shape, offset: 2), version: statement.int64(at: 1))
                }
                return
            }
            // Chunks stay under SQLite's variable limit.
            let condition = kind()
            for chunk in stride(from: 0, to: keys.count, by: 500) {
                let part = keys[chunk..<min(chunk + 500, keys.count)]
                let marks = Array(repeating: "?", count: part.count).joined(separator: ",")
                let statement = try connection.statement("SELECT \(selectColumns(entity)) FROM \(entity.tableName) t0 WHERE t0.Z_PK IN (\(marks))\(condition)")
                for (i, key) in part.enumerated() { statement.bindInt(key, at: Int32(i + 1)) }
                while try statement.step() {
                    result[statement.int64(at: 0)] = RowSnapshot(values: decodeRow(statement, shape: shape, offset: 2), version: statement.int64(at: 1))
                }
            }
        }
        return result
    }

    func relatedKeys(of source: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID] {
        let entity = source.entity
        guard let destination = entity.destinationEntity(ofRelationship: relationship.name) else { return [] }
        var sql: String
        // A destination with sub-entities names each member's entity from its row's Z_ENT.
        let concrete = !destination.subentities.isEmpty
        if SQLiteSchema.isManyToMany(entity, relationship) {
            let join = SQLiteSchema.joinTable(entity, relationship)
            let mine = join.isOwned(by: entity, relationship)
            let (from, to) = mine ? (join.ownerColumn, join.destinationColumn) : (join.destinationColumn, join.ownerColumn)
            // §12.2: an ordered relationship's members come in their places (a member never placed, last).
            let order = SQLiteSchema.orderColumn(entity, relationship).map { "j.\($0.column) IS NULL, j.\($0.column), " } ?? ""
            sql = concrete || !order.isEmpty
                ? "SELECT j.\(to)\(concrete ? ", d.Z_ENT" : "") FROM \(join.name) j\(concrete ? " JOIN \(destination.tableName) d ON d.Z_PK = j.\(to)" : "") WHERE j.\(from) = ? ORDER BY \(order)j.\(to)"
                : "SELECT \(to) FROM \(join.name) WHERE \(from) = ? ORDER BY \(to)"
        } else {
            guard let slot = destination.slotIndex(of: relationship.inverseName) else { return [] }
            let order = SQLiteSchema.orderColumn(entity, relationship).map { "\($0.column) IS NULL, \($0.column), " } ?? ""
            sql = "SELECT Z_PK\(concrete ? ", Z_ENT" : "") FROM \(destination.tableName) WHERE \(destination.columnName(forSlot: slot)) = ? ORDER BY \(order)Z_PK"
        }
        return try run {
            let statement = try connection.cachedStatement(sql)
            statement.bindInt(source.key, at: 1)
            var ids: [ManagedObjectID] = []
            while try statement.step() {
                let member = concrete ? model.entity(number: Int(statement.int64(at: 1))) ?? destination : destination
                ids.append(ManagedObjectID(entity: member, primaryKey: statement.int64(at: 0), storeNumber: storeNumber))
            }
            return ids
        }
    }

    /// Maps SQLite failures to store errors that name the file.
    private func run<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as SQLiteError {
            throw Self.storeError(error, path: path)
        }
    }

    func runReading<T>(_ body: () throws -> T) throws -> T { try run(body) }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction, rolled back when it throws.
    func runWriting<T>(_ body: () throws -> T) throws -> T {
        try Execution.exclusive(writerResource) { try runWritingNow(body) }
    }

    /// Runs a batch request's writes in one `BEGIN IMMEDIATE` transaction (Docs/coredata-behaviour.md §6): each
    /// statement counted once however many rows it runs for, and the transaction counted once committed, inside
    /// the writer's hold. The rows are counted by the request (``CostedOperation/batchRowInserted`` and the others).
    func runBatch<T>(_ body: () throws -> T) throws -> T {
        try Execution.exclusive(writerResource) {
            let result = try runWritingNow { try connection.countingEachStatementOnce(body) }
            Probe.count(.transaction)
            return result
        }
    }

    /// This file's one writer, for ``Execution/exclusive(_:_:)``.
    var writerResource: SharedResource {
        SharedResource(id: "sqlite-writer:\(path)", label: "sqlite-writer:\((path as NSString).lastPathComponent)")
    }

    private func runWritingNow<T>(_ body: () throws -> T) throws -> T {
        try run {
            try connection.execute("BEGIN IMMEDIATE")
            do {
                let result = try body()
                try connection.execute("COMMIT")
                return result
            } catch {
                if connection.isInTransaction { try? connection.execute("ROLLBACK") }
                throw error
            }
        }
    }
}

extension SQLiteStore {
    var isInTransaction: Bool { connection.isInTransaction }

    /// Rule 26: the section names and sizes of a fetch, in the fetch's order, in one
    /// `SELECT key, count(*) … GROUP BY key` (a fetched results controller with `fetchBatchSize` learns its sections
    /// so, as Core Data's does, instead of loading every row). Nil when the key path or the predicate is not written
    /// in SQL, or the key is not a string, number or boolean attribute (the caller reads the objects then).
    func sectionCounts(_ fetch: StoreFetch, keyPath: String) throws -> [(value: PropertyValue, count: Int)]? {
        var builder = SQLiteQueryBuilder(root: fetch.entity)
        let column: SQLiteQueryBuilder.Column
        var whereSQL: String
        let order: String
        do {
            column = try builder.column(keyPath)
            whereSQL = try fetch.predicate.map { try builder.condition($0.node) } ?? ""
            order = try builder.orderBy(fetch.sortDescriptors)
        } catch is UntranslatablePredicate { return nil }
        guard let type = column.attributeType else { return nil }
        switch type {
        case .string, .integer16, .integer32, .integer64, .boolean, .double, .float: break
        default: return nil
        }
        var sql = "SELECT \(column.sql), count(*) FROM \(fetch.entity.tableName) t0"
        for join in builder.joins { sql += " " + join }
        whereSQL = Self.restricted(whereSQL, to: fetch)
        if !whereSQL.isEmpty { sql += " WHERE " + whereSQL }
        sql += " GROUP BY \(column.sql)"
        if !order.isEmpty { sql += " ORDER BY " + order }
        let arguments = builder.arguments
        return try run {
            let statement = try connection.cachedStatement(sql)
            try statement.bind(arguments)
            var result: [(value: PropertyValue, count: Int)] = []
            while try statement.step() {
                let value: PropertyValue
                if statement.isNull(at: 0) {
                    value = .null
                } else {
                    switch type {
                    case .string: value = .string(statement.string(at: 0))
                    case .boolean: value = .bool(statement.int64(at: 0) != 0)
                    case .double, .float: value = .double(statement.double(at: 0))
                    default: value = .integer(statement.int64(at: 0))
                    }
                }
                result.append((value, Int(statement.int64(at: 1))))
            }
            return result
        }
    }
}
