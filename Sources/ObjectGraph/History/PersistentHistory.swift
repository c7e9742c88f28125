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

/// Which history to fetch (`NSPersistentHistoryChangeRequest`).
public struct PersistentHistoryRequest: Sendable {
    enum Start: Sendable {
        case token(PersistentHistoryToken?)
        case date(Date)
    }
    let start: Start
    /// Keep only transactions for which this returns true (for example other authors').
    public var filter: (@Sendable (PersistentHistoryTransaction) -> Bool)?
    /// Transactions without their changes.
    public var transactionsOnly = false

    /// Transactions after `token`, excluding the token's own (semantics §3.6); nil means all.
    public static func fetchHistory(after token: PersistentHistoryToken?) -> PersistentHistoryRequest {
        PersistentHistoryRequest(start: .token(token))
    }

    /// Transactions at or after `date`.
    public static func fetchHistory(after date: Date) -> PersistentHistoryRequest {
        PersistentHistoryRequest(start: .date(date))
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
        try readStore { try $0.currentHistoryToken() }
    }

    /// Fetches history transactions in order (sorting is not offered: Core Data raises on it, §3.6).
    public func fetchHistory(_ request: PersistentHistoryRequest) throws -> [PersistentHistoryTransaction] {
        var transactions: [PersistentHistoryTransaction]
        switch request.start {
        case .token(let token): transactions = try readStore { try $0.history(after: token?.transactionNumber, since: nil) }
        case .date(let date): transactions = try readStore { try $0.history(after: nil, since: date) }
        }
        if let filter = request.filter { transactions = transactions.filter(filter) }
        if request.transactionsOnly { transactions = transactions.map { var t = $0; t.changes = nil; return t } }
        return transactions
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
