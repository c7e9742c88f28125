import Foundation

/// A position in a store's persistent history (`NSPersistentHistoryToken`): persist it to resume later.
public struct PersistentHistoryToken: Hashable, Sendable, Codable, Comparable, CustomStringConvertible {
    /// The transaction's number.
    public var transactionNumber: Int64
    /// The store the number belongs to.
    public var storeIdentifier: String

    public static func < (a: Self, b: Self) -> Bool { a.transactionNumber < b.transactionNumber }
    public var description: String { "token(\(transactionNumber))" }
}

/// What happened to one object in a transaction.
public enum PersistentHistoryChangeType: Int, Sendable, Codable {
    case insert = 0
    case update = 1
    case delete = 2
}

/// One object's change in a transaction (`NSPersistentHistoryChange`).
public struct PersistentHistoryChange: Sendable, Hashable {
    /// The change's own number.
    public var changeID: Int64
    /// The object changed.
    public var changedObjectID: ManagedObjectID
    /// Insert, update or delete.
    public var changeType: PersistentHistoryChangeType
    /// For updates: the properties written.
    public var updatedProperties: Set<String>?
    /// For deletes: the values of attributes marked `preservesValueInHistoryOnDeletion`.
    public var tombstone: [String: PropertyValue]?
}

/// One save or batch request as history records it (`NSPersistentHistoryTransaction`, semantics §3.6).
public struct PersistentHistoryTransaction: Sendable, Hashable {
    public var transactionNumber: Int64
    public var timestamp: Date
    /// The saving context's `transactionAuthor`.
    public var author: String?
    /// The saving context's `name`.
    public var contextName: String?
    public var storeIdentifier: String
    public var bundleID: String
    public var processID: String
    /// The changes (nil for a transactions-only fetch).
    public var changes: [PersistentHistoryChange]?
    /// The token of this transaction.
    public var token: PersistentHistoryToken { PersistentHistoryToken(transactionNumber: transactionNumber, storeIdentifier: storeIdentifier) }

    /// A did-save-object-IDs notification with this transaction's changes, for
    /// `mergeChanges(fromContextDidSave:)` (semantics §3.6 replay).
    public func objectIDNotification() -> Notification {
        var ids = ContextObjectIDChanges()
        for change in changes ?? [] {
            switch change.changeType {
            case .insert: ids.inserted.insert(change.changedObjectID)
            case .update: ids.updated.insert(change.changedObjectID)
            case .delete: ids.deleted.insert(change.changedObjectID)
            }
        }
        return Notification(name: ManagedObjectContext.didSaveObjectIDsNotification, object: nil, userInfo: ids.userInfo)
    }
}

/// What a history request returns (`NSPersistentHistoryResultType`, Core Data's raw values).
public enum PersistentHistoryResultType: Int, Sendable {
    case statusOnly = 0
    /// The changed objects' IDs, each once, in the order of their first change (inferred: Apple says "object IDs").
    case objectIDs = 1
    case count = 2
    /// Transactions with `changes == nil`.
    case transactionsOnly = 3
    /// The changes, flattened, in transaction order.
    case changesOnly = 4
    /// Transactions with their changes (Core Data's default).
    case transactionsAndChanges = 5
}

/// A fetch over the history's own entities (`fetchHistory(withFetch:)`): a predicate on the
/// Transaction entity (`author`, `contextName`, `timestamp`, `transactionNumber`, `token`, `storeID`, `bundleID`,
/// `processID`) or on the Change entity (`changeID`, `changeType`, `changedObjectID`, `changedEntity` (the entity
/// name), `updatedProperties`, and `transaction.<key>`). Sort descriptors are refused, as Core Data raises on them
/// (semantics §3.6, recorded on macOS second-hand).
public struct PersistentHistoryFetchRequest: Sendable {
    public enum Entity: String, Sendable { case transaction = "Transaction", change = "Change" }
    public var entity: Entity
    public var predicate: ObjectPredicate?
    public var sortDescriptors: [ObjectSortDescriptor] = []
    /// At most this many results (0: no limit): transactions, or changes for a Change fetch.
    public var fetchLimit = 0

    public init(entity: Entity, predicate: ObjectPredicate? = nil) {
        self.entity = entity
        self.predicate = predicate
    }
}

/// Which history to fetch (`NSPersistentHistoryChangeRequest`).
public struct PersistentHistoryRequest: Sendable {
    enum Start: Sendable {
        case token(PersistentHistoryToken?)
        case date(Date)
        case fetch(PersistentHistoryFetchRequest)
    }
    let start: Start
    /// Keep only transactions for which this returns true (for example other authors').
    public var filter: (@Sendable (PersistentHistoryTransaction) -> Bool)?
    /// Transactions without their changes (the same as `resultType = .transactionsOnly`).
    public var transactionsOnly = false
    /// What ``PersistentStoreCoordinator/execute(_:)`` returns (default `.transactionsAndChanges`, Core Data's).
    public var resultType: PersistentHistoryResultType = .transactionsAndChanges
    /// Narrows a request after a token or a date to what this fetch request's predicate matches
    /// (`NSPersistentHistoryChangeRequest.fetchRequest`); a Change fetch keeps the matching changes only.
    public var fetchRequest: PersistentHistoryFetchRequest?

    /// Transactions after `token`, excluding the token's own (semantics §3.6); nil means all.
    public static func fetchHistory(after token: PersistentHistoryToken?) -> PersistentHistoryRequest {
        PersistentHistoryRequest(start: .token(token))
    }

    /// Transactions at or after `date`.
    public static func fetchHistory(after date: Date) -> PersistentHistoryRequest {
        PersistentHistoryRequest(start: .date(date))
    }

    /// The transactions, or for a Change fetch the changes, that `fetchRequest`'s predicate matches.
    public static func fetchHistory(withFetch fetchRequest: PersistentHistoryFetchRequest) -> PersistentHistoryRequest {
        PersistentHistoryRequest(start: .fetch(fetchRequest))
    }

    /// The fetch request that narrows this request, whether given as its start or as ``fetchRequest``.
    var narrowing: PersistentHistoryFetchRequest? {
        if case .fetch(let fetch) = start { return fetch }
        return fetchRequest
    }
}

/// The result of a history request (`NSPersistentHistoryResult`); which fields are set follows the result type.
public struct PersistentHistoryResult: Sendable {
    public var status = true
    public var count: Int?
    public var objectIDs: [ManagedObjectID]?
    public var transactions: [PersistentHistoryTransaction]?
    public var changes: [PersistentHistoryChange]?
}

/// A transaction as a predicate sees it (the Transaction entity).
struct HistoryTransactionSubject: PredicateSubject {
    let transaction: PersistentHistoryTransaction
    var selfValue: PropertyValue { .integer(transaction.transactionNumber) }
    func resolve(keyPath: [Substring]) throws -> KeyPathValue {
        guard keyPath.count == 1 else { throw unknownKey(keyPath.joined(separator: "."), entity: "Transaction") }
        switch keyPath[0] {
        case "author": return .single(transaction.author.map { .string($0) } ?? .null)
        case "contextName": return .single(transaction.contextName.map { .string($0) } ?? .null)
        case "timestamp": return .single(.date(transaction.timestamp))
        case "transactionNumber", "token": return .single(.integer(transaction.transactionNumber))
        case "storeID": return .single(.string(transaction.storeIdentifier))
        case "bundleID": return .single(.string(transaction.bundleID))
        case "processID": return .single(.string(transaction.processID))
        default: throw unknownKey(String(keyPath[0]), entity: "Transaction")
        }
    }
}

/// A change as a predicate sees it (the Change entity), with its transaction behind `transaction.`.
struct HistoryChangeSubject: PredicateSubject {
    let change: PersistentHistoryChange
    let transaction: PersistentHistoryTransaction
    var selfValue: PropertyValue { .integer(change.changeID) }
    func resolve(keyPath: [Substring]) throws -> KeyPathValue {
        if keyPath.first == "transaction", keyPath.count > 1 {
            return try HistoryTransactionSubject(transaction: transaction).resolve(keyPath: Array(keyPath.dropFirst()))
        }
        guard keyPath.count == 1 else { throw unknownKey(keyPath.joined(separator: "."), entity: "Change") }
        switch keyPath[0] {
        case "changeID": return .single(.integer(change.changeID))
        case "changeType": return .single(.integer(Int64(change.changeType.rawValue)))
        case "changedObjectID": return .single(.objectID(change.changedObjectID))
        case "changedEntity": return .single(.string(change.changedObjectID.entity.name))
        case "updatedProperties": return .many((change.updatedProperties ?? []).sorted().map { .string($0) })
        default: throw unknownKey(String(keyPath[0]), entity: "Change")
        }
    }
}

private func unknownKey(_ key: String, entity: String) -> ObjectGraphError {
    ObjectGraphError(.invalidFetchRequest, "the history's \(entity) entity has no key \(key)", entity: entity, property: key)
}

extension ObjectPredicate.Node {
    /// The constants compared with a `token` key path (each must name a transaction the history holds).
    var tokenConstants: [Int64] {
        switch self {
        case .constant: return []
        case .comparison(let c):
            // `token > %@` and `%@ < token` alike.
            func isToken(_ e: ObjectExpression) -> Bool {
                if case .keyPath(let path) = e { return path == "token" || path.hasSuffix(".token") }
                return false
            }
            let constant: ObjectExpression
            if isToken(c.left) { constant = c.right } else if isToken(c.right) { constant = c.left } else { return [] }
            switch constant {
            case .constant(.integer(let n)): return [n]
            case .list(let values): return values.compactMap { if case .integer(let n) = $0 { return n } else { return nil } }
            default: return []
            }
        case .and(let nodes), .or(let nodes): return nodes.flatMap(\.tokenConstants)
        case .not(let node): return node.tokenConstants
        }
    }
}

extension ObjectPredicate.Node {
    /// This tree with every object ID minted by a coordinator other than `tag`'s made null (dropped from a list):
    /// a history predicate compares an ID with its coordinator's store, so another coordinator's ID names no change
    /// (Docs/coredata-behaviour.md §3.6).
    func withForeignObjectIDsDropped(keeping tag: UInt32) -> Self {
        func own(_ value: PropertyValue) -> Bool {
            if case .objectID(let id) = value { return id.isTemporaryID || id.coordinatorTag == tag }
            return true
        }
        return mappingExpressions { e in
            switch e {
            case .constant(let value): return own(value) ? e : .constant(.null)
            case .list(let values): return .list(values.filter(own))
            case .keyPath, .evaluatedObject, .variable: return e
            }
        }
    }
}

extension PersistentStoreCoordinator {
    /// Posted on a coordinator after every write to its store file, by this coordinator or another one on the
    /// same file, a context save or a batch request (semantics §3.5), if the store was added with
    /// `remoteChangeNotifications`. userInfo: `storeUUID`, `storeURL`, and
    /// `historyToken` when history tracking is on.
    public static let storeRemoteChangeNotification = Notification.Name("NSPersistentStoreRemoteChangeNotification")

    /// The newest history token, nil when there is no history.
    public func currentPersistentHistoryToken() throws -> PersistentHistoryToken? {
        try Probe.call(.historyToken(self), result: { .count(Int($0?.transactionNumber ?? 0)) }) { try readStore { try $0.currentHistoryToken() } }
    }

    /// Fetches history transactions in order (sorting is not offered: Core Data raises on it, §3.6). For a Change
    /// fetch, the transactions holding a matching change, with only those changes.
    public func fetchHistory(_ request: PersistentHistoryRequest) throws -> [PersistentHistoryTransaction] {
        try Probe.call(.fetchHistory(self, after: { if case .token(let t) = request.start { return t?.transactionNumber ?? 0 } else { return nil } }(),
                                              filtered: request.filter != nil || request.fetchRequest != nil),
                                result: { .transactions($0.map(\.transactionNumber)) }) { try fetchHistoryUnrecorded(request) }
    }

    private func fetchHistoryUnrecorded(_ request: PersistentHistoryRequest) throws -> [PersistentHistoryTransaction] {
        var transactions: [PersistentHistoryTransaction]
        switch request.start {
        case .token(let token): transactions = try readStore { try $0.history(after: token?.transactionNumber, since: nil) }
        case .date(let date): transactions = try readStore { try $0.history(after: nil, since: date) }
        case .fetch: transactions = try readStore { try $0.history(after: nil, since: nil) }
        }
        if let fetch = request.narrowing { transactions = try matching(fetch, in: transactions) }
        if let filter = request.filter { transactions = transactions.filter(filter) }
        if request.transactionsOnly || request.resultType == .transactionsOnly { transactions = transactions.map { var t = $0; t.changes = nil; return t } }
        return transactions
    }

    /// Runs a history request and returns what its result type asks for.
    public func execute(_ request: PersistentHistoryRequest) throws -> PersistentHistoryResult {
        var all = request
        all.transactionsOnly = false
        all.resultType = .transactionsAndChanges
        let transactions = try fetchHistory(all)
        let changeFetch = request.narrowing?.entity == .change
        let changes = transactions.flatMap { $0.changes ?? [] }
        var result = PersistentHistoryResult()
        switch request.transactionsOnly ? .transactionsOnly : request.resultType {
        case .statusOnly: break
        case .count: result.count = changeFetch ? changes.count : transactions.count
        case .objectIDs:
            var seen = Set<ManagedObjectID>()
            result.objectIDs = changes.map(\.changedObjectID).filter { seen.insert($0).inserted }
        case .transactionsOnly: result.transactions = transactions.map { var t = $0; t.changes = nil; return t }
        case .changesOnly: result.changes = changes
        case .transactionsAndChanges:
            // A Change fetch too returns transactions, each with its matching changes (Docs/coredata-behaviour.md §3.6).
            result.transactions = transactions
        }
        return result
    }

    /// The transactions of `history` a history fetch request matches, evaluated in memory (Core Data runs it in
    /// SQL; the rows read here are every transaction's, a cost Core Data does not pay).
    private func matching(_ fetch: PersistentHistoryFetchRequest, in history: [PersistentHistoryTransaction]) throws -> [PersistentHistoryTransaction] {
        guard fetch.sortDescriptors.isEmpty else {
            throw ObjectGraphError(.invalidFetchRequest, "a history fetch takes no sort descriptors: history comes in transaction order (Core Data raises on them, semantics §3.6)", entity: fetch.entity.rawValue)
        }
        // Docs/coredata-behaviour.md §3.6: a token in the predicate that names no transaction the history holds (the
        // initial token, a purged one) fails the fetch with 134301.
        for number in Set(fetch.predicate?.node.tokenConstants ?? []).sorted() {
            try readStore { try $0.checkHistoryHolds(transaction: number) }
        }
        // Docs/coredata-behaviour.md §3.6: another coordinator's object ID names no change here.
        let predicate = fetch.predicate.map { ObjectPredicate($0.node.withForeignObjectIDsDropped(keeping: idTag)) }
        var out: [PersistentHistoryTransaction] = []
        var matched = 0
        for transaction in history {
            if fetch.fetchLimit > 0, matched >= fetch.fetchLimit { break }
            switch fetch.entity {
            case .transaction:
                if try predicate?.evaluate(subject: HistoryTransactionSubject(transaction: transaction)) ?? true {
                    out.append(transaction)
                    matched += 1
                }
            case .change:
                var kept: [PersistentHistoryChange] = []
                for change in transaction.changes ?? [] where fetch.fetchLimit == 0 || matched < fetch.fetchLimit {
                    if try predicate?.evaluate(subject: HistoryChangeSubject(change: change, transaction: transaction)) ?? true {
                        kept.append(change)
                        matched += 1
                    }
                }
                if !kept.isEmpty {
                    var t = transaction
                    t.changes = kept
                    out.append(t)
                }
            }
        }
        return out
    }

    /// Deletes transactions strictly older than `token`'s; the token's own transaction survives (§3.6).
    @discardableResult
    public func deleteHistory(before token: PersistentHistoryToken) throws -> Int {
        try withStore { try $0.deleteHistory(before: token.transactionNumber, before: nil) }
    }

    /// Deletes transactions older than `date`.
    @discardableResult
    public func deleteHistory(before date: Date) throws -> Int {
        try withStore { try $0.deleteHistory(before: nil, before: date) }
    }
}

extension ManagedObjectContext {
    /// Runs a history request through the context's coordinator (`execute(_:)` with an
    /// `NSPersistentHistoryChangeRequest`).
    public func execute(_ request: PersistentHistoryRequest) throws -> PersistentHistoryResult {
        assertOnQueue()
        guard let coordinator = persistentStoreCoordinator else {
            throw ObjectGraphError(.persistentStoreOperation, "the context has no coordinator")
        }
        return try coordinator.execute(request)
    }
}
