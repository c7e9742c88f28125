import Foundation
import Testing
@testable import ObjectGraph

/// Issue 21 item 5: history fetch requests (`fetchHistory(withFetch:)`, semantics §3.6): predicates on the
/// Transaction and Change entities, the result types, sort descriptors refused, an expired token in a predicate.
@Suite struct HistoryFetchRequestTests {
    /// `threeSaves` by author "app", then one save by author "sync" (context "importer") inserting item 3.
    static func history() throws -> (TestStack, [ManagedObjectID]) {
        let stack = try TestStack(model: try PersistentHistoryTests.historyModel(), options: PersistentHistoryTests.tracked())
        var ids = try PersistentHistoryTests.threeSaves(stack)
        let sync = stack.context(name: "importer")
        sync.transactionAuthor = "sync"
        try sync.performAndWait {
            let three = Item(context: sync)
            three.id = 3
            try sync.save()
            ids.append(three.objectID)
        }
        return (stack, ids)
    }

    @Test("Issue 21 item 5: a Transaction predicate filters by author, context name, number and token")
    func transactionPredicates() throws {
        let (stack, _) = try Self.history()
        let all = try stack.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
        #expect(all.count == 4)
        func numbers(_ format: String, _ args: Any...) throws -> [Int64] {
            let fetch = PersistentHistoryFetchRequest(entity: .transaction, predicate: try ObjectPredicate(format: format, argumentArray: args))
            return try stack.coordinator.fetchHistory(.fetchHistory(withFetch: fetch)).map(\.transactionNumber)
        }
        #expect(try numbers("author != %@", "app") == [all[3].transactionNumber])
        #expect(try numbers("contextName == %@", "editor") == all[0..<3].map(\.transactionNumber))
        #expect(try numbers("transactionNumber > %@", all[1].transactionNumber) == all[2...].map(\.transactionNumber))
        #expect(try numbers("token > %@", all[2].token) == [all[3].transactionNumber])
        // The changes come with the transactions (transactionsAndChanges, Core Data's default).
        let fetch = PersistentHistoryFetchRequest(entity: .transaction, predicate: try ObjectPredicate(format: "author == %@", argumentArray: ["sync"]))
        let result = try stack.coordinator.execute(.fetchHistory(withFetch: fetch))
        #expect(result.transactions?.count == 1 && result.transactions?.first?.changes?.count == 1 && result.changes == nil)
    }

    @Test("Issue 21 item 5: a Change predicate filters by change type, object and the transaction's keys; it returns changes")
    func changePredicates() throws {
        let (stack, ids) = try Self.history()
        func changes(_ format: String, _ args: Any...) throws -> [PersistentHistoryChange] {
            let fetch = PersistentHistoryFetchRequest(entity: .change, predicate: try ObjectPredicate(format: format, argumentArray: args))
            return try #require(try stack.coordinator.execute(.fetchHistory(withFetch: fetch)).changes)
        }
        #expect(try changes("changeType == %@", PersistentHistoryChangeType.delete.rawValue).map(\.changedObjectID) == [ids[1]])
        #expect(try changes("changedObjectID == %@", ids[0]).map(\.changeType) == [.insert, .update])
        #expect(try changes("transaction.author == %@ AND changeType == %@", "app", 0).count == 2)
        #expect(try changes("changedEntity == %@", "Item").count == 5)
    }

    @Test("Issue 21 item 5: every result type returns what it names")
    func resultTypes() throws {
        let (stack, ids) = try Self.history()
        let fetch = PersistentHistoryFetchRequest(entity: .transaction, predicate: try ObjectPredicate(format: "author == %@", argumentArray: ["app"]))
        func run(_ type: PersistentHistoryResultType) throws -> PersistentHistoryResult {
            var request = PersistentHistoryRequest.fetchHistory(withFetch: fetch)
            request.resultType = type
            return try stack.coordinator.execute(request)
        }
        #expect(try run(.count).count == 3)
        #expect(try run(.objectIDs).objectIDs == [ids[0], ids[1]])
        let only = try #require(try run(.transactionsOnly).transactions)
        #expect(only.count == 3 && only.allSatisfy { $0.changes == nil })
        #expect(try run(.changesOnly).changes?.map(\.changeType) == [.insert, .insert, .update, .delete])
        let status = try run(.statusOnly)
        #expect(status.status && status.transactions == nil && status.changes == nil && status.count == nil)
        var changeCount = PersistentHistoryRequest.fetchHistory(withFetch: PersistentHistoryFetchRequest(entity: .change, predicate: try ObjectPredicate(format: "changeType == 0")))
        changeCount.resultType = .count
        #expect(try stack.coordinator.execute(changeCount).count == 3)
    }

    @Test("Issue 21 item 5: sort descriptors and unknown keys are refused; an expired token in a predicate fails with 134301")
    func refusals() throws {
        let (stack, _) = try Self.history()
        var sorted = PersistentHistoryFetchRequest(entity: .transaction)
        sorted.sortDescriptors = [ObjectSortDescriptor("timestamp")]
        #expect(throws: ObjectGraphError.self) { try stack.coordinator.fetchHistory(.fetchHistory(withFetch: sorted)) }
        let unknown = PersistentHistoryFetchRequest(entity: .transaction, predicate: try ObjectPredicate(format: "price > 1"))
        do {
            _ = try stack.coordinator.fetchHistory(.fetchHistory(withFetch: unknown))
            Issue.record("an unknown key was accepted")
        } catch let error as ObjectGraphError {
            #expect(error.code == .invalidFetchRequest && error.description.contains("price"))
        }
        let all = try stack.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
        try stack.coordinator.deleteHistory(before: all[2].token)
        let expired = PersistentHistoryFetchRequest(entity: .transaction, predicate: try ObjectPredicate(format: "token > %@", argumentArray: [all[0].token]))
        do {
            _ = try stack.coordinator.fetchHistory(.fetchHistory(withFetch: expired))
            Issue.record("an expired token was accepted")
        } catch let error as ObjectGraphError {
            #expect(error.code == .persistentHistoryTokenExpired)
        }
        // The token on the left of the comparison is found too (review finding).
        let leftHand = PersistentHistoryFetchRequest(entity: .transaction, predicate: try ObjectPredicate(format: "%@ < token", argumentArray: [all[0].token]))
        #expect(throws: ObjectGraphError.self) { try stack.coordinator.fetchHistory(.fetchHistory(withFetch: leftHand)) }
        // A token that survived still works, as with fetchHistory(after:).
        let live = PersistentHistoryFetchRequest(entity: .transaction, predicate: try ObjectPredicate(format: "token > %@", argumentArray: [all[2].token]))
        #expect(try stack.coordinator.fetchHistory(.fetchHistory(withFetch: live)).map(\.transactionNumber) == [all[3].transactionNumber])
    }
}
