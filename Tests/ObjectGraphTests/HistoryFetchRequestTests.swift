import Foundation
import Testing
@testable import ObjectGraph

/// History fetch requests (`fetchHistory(withFetch:)`, semantics §3.6): predicates on the
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

    @Test("A Transaction predicate filters by author, context name, number and token")
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

    @Test("A Change predicate filters by change type, object and the transaction's keys")
    func changePredicates() throws {
        let (stack, ids) = try Self.history()
        func changes(_ format: String, _ args: Any...) throws -> [PersistentHistoryChange] {
            let fetch = PersistentHistoryFetchRequest(entity: .change, predicate: try ObjectPredicate(format: format, argumentArray: args))
            var request = PersistentHistoryRequest.fetchHistory(withFetch: fetch)
            request.resultType = .changesOnly
            return try #require(try stack.coordinator.execute(request).changes)
        }
        #expect(try changes("changeType == %@", PersistentHistoryChangeType.delete.rawValue).map(\.changedObjectID) == [ids[1]])
        #expect(try changes("changedObjectID == %@", ids[0]).map(\.changeType) == [.insert, .update])
        #expect(try changes("transaction.author == %@ AND changeType == %@", "app", 0).count == 2)
        #expect(try changes("changedEntity == %@", "Item").count == 5)
    }

    @Test("Every result type returns what it names")
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

    @Test("Sort descriptors and unknown keys are refused; an expired token in a predicate fails with 134301")
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

    // Docs/coredata-behaviour.md §3.6: a token in a predicate names a transaction; the initial token names none.
    @Test("A token predicate with the initial token fails with 134301, before and after saves; a transaction's token selects by number")
    func initialTokenInAPredicateFails() throws {
        let stack = try TestStack(model: try PersistentHistoryTests.historyModel(), options: PersistentHistoryTests.tracked())
        let reader = try stack.secondCoordinator(options: PersistentHistoryTests.tracked())
        let writer = stack.context(name: "viewContext1")
        writer.transactionAuthor = "author1"
        func save(_ id: Int64) throws {
            try writer.performAndWait {
                Item(context: writer).id = id
                try writer.save()
            }
        }
        func numbers(_ format: String, _ args: Any...) throws -> [Int64] {
            let fetch = PersistentHistoryFetchRequest(entity: .transaction, predicate: try ObjectPredicate(format: format, argumentArray: args))
            var request = PersistentHistoryRequest.fetchHistory(withFetch: fetch)
            request.resultType = .transactionsOnly
            return try #require(try reader.execute(request).transactions).map(\.transactionNumber)
        }
        func expectExpired(_ format: String, _ token: PersistentHistoryToken) {
            do {
                _ = try numbers(format, token)
                Issue.record("\(format) with \(token) was accepted")
            } catch let error as ObjectGraphError {
                #expect(error.code == .persistentHistoryTokenExpired)
            } catch {
                Issue.record("\(error)")
            }
        }
        let initial = try #require(try reader.currentPersistentHistoryToken())
        expectExpired("token == %@", initial)

        try save(1)
        let first = try #require(try reader.currentPersistentHistoryToken())
        #expect(try reader.fetchHistory(.fetchHistory(after: initial)).map(\.transactionNumber) == [first.transactionNumber])
        expectExpired("token > %@", initial)
        #expect(try numbers("token == %@", first) == [first.transactionNumber])
        #expect(try numbers("token > %@", first).isEmpty)
        #expect(try reader.fetchHistory(.fetchHistory(after: first)).isEmpty)
        #expect(try numbers("token == %@ AND author == %@", first, "author1") == [first.transactionNumber])

        try save(2)
        let second = try #require(try reader.currentPersistentHistoryToken())
        let both = [first.transactionNumber, second.transactionNumber]
        #expect(try numbers("token == %@", first) == [first.transactionNumber])
        #expect(try numbers("token >= %@", first) == both)
        #expect(try numbers("token <= %@", second) == both)
        #expect(try reader.fetchHistory(.fetchHistory(after: initial)).map(\.transactionNumber) == both)
    }

    // Docs/coredata-behaviour.md §3.6: a token in a predicate must name a transaction the history still holds.
    @Test("After every transaction is purged, the current token still works with fetchHistory(after:) but fails in a predicate")
    func purgedCurrentTokenInAPredicateFails() throws {
        let (stack, _) = try Self.history()
        let current = try #require(try stack.coordinator.currentPersistentHistoryToken())
        try stack.coordinator.deleteHistory(before: Date.distantFuture)
        #expect(try stack.coordinator.fetchHistory(.fetchHistory(after: current)).isEmpty)
        let fetch = PersistentHistoryFetchRequest(entity: .transaction, predicate: try ObjectPredicate(format: "token >= %@", argumentArray: [current]))
        let error = #expect(throws: ObjectGraphError.self) { try stack.coordinator.fetchHistory(.fetchHistory(withFetch: fetch)) }
        #expect(error?.code == .persistentHistoryTokenExpired)
    }

    /// CoreDataPlus's history investigation on two coordinators of one file: through the first, a save inserting
    /// two Notes and a Memo (a sub-entity of Note), one inserting a Person, one updating the Person and deleting the
    /// second Note. `tokens` holds the initial token and each save's.
    static func twoCoordinatorHistory() throws -> (stack: TestStack, second: PersistentStoreCoordinator, tokens: [PersistentHistoryToken], person: ManagedObjectID, note: ManagedObjectID) {
        let stack = try TestStack(model: try EntityInheritanceTests.model(), options: PersistentHistoryTests.tracked())
        let second = try stack.secondCoordinator(options: PersistentHistoryTests.tracked())
        let ctx = stack.context(name: "viewContext1")
        ctx.transactionAuthor = "author1"
        var tokens = [try #require(try stack.coordinator.currentPersistentHistoryToken())]
        let (person, note) = try ctx.performAndWait {
            _ = try EntityInheritanceTests.insert(ctx, "Note", ["slug": "n1"])
            let note = try EntityInheritanceTests.insert(ctx, "Note", ["slug": "n2"])
            _ = try EntityInheritanceTests.insert(ctx, "Memo", ["slug": "m1"])
            try ctx.save()
            tokens.append(try #require(try stack.coordinator.currentPersistentHistoryToken()))
            let person = try EntityInheritanceTests.insert(ctx, "Person", ["name": "Alessandro"])
            try ctx.save()
            tokens.append(try #require(try stack.coordinator.currentPersistentHistoryToken()))
            try person.setValue("Alex", forKey: "name")
            ctx.delete(note)
            try ctx.save()
            tokens.append(try #require(try stack.coordinator.currentPersistentHistoryToken()))
            return (person.objectID, note.objectID)
        }
        #expect(try second.currentPersistentHistoryToken() == tokens.last)
        return (stack, second, tokens, person, note)
    }

    // Docs/coredata-behaviour.md §3.6 and §2.4: an object ID in a history predicate belongs to its coordinator.
    @Test("A changedObjectID predicate finds the change through the coordinator whose ID it is, none through another on the same file")
    func changedObjectIDMatchesInItsOwnCoordinatorOnly() throws {
        let (stack, second, tokens, person, _) = try Self.twoCoordinatorHistory()
        func changes(_ id: ManagedObjectID, in context: ManagedObjectContext, predicate: Bool = true) throws -> [PersistentHistoryChange] {
            var request = PersistentHistoryRequest.fetchHistory(after: tokens[2])
            if predicate { request.fetchRequest = PersistentHistoryFetchRequest(entity: .change, predicate: .compare("changedObjectID", .equalTo, id)) }
            request.resultType = .changesOnly
            return try context.performAndWait { try #require(try context.execute(request).changes) }
        }
        #expect(try changes(person, in: stack.context()).map(\.changeType) == [.update])
        #expect(try changes(person, in: stack.context()).map(\.changedObjectID) == [person])
        let other = stack.context(second)
        #expect(try changes(person, in: other).isEmpty)
        #expect(try changes(person, in: other, predicate: false).map(\.changeType) == [.update, .delete])
        // The ID still names the object there (existingObject), and equals the second coordinator's own ID for it,
        // so that merges between coordinators find their objects (§2.4).
        let own = try #require(second.managedObjectID(forURIRepresentation: person.uriRepresentation))
        #expect(own == person && own.hashValue == person.hashValue)
        #expect(try changes(own, in: other).map(\.changeType) == [.update])
        let registered = try other.performAndWait { try other.existingObject(with: person).objectID }
        #expect(try changes(registered, in: other).map(\.changeType) == [.update])
    }

    // Docs/coredata-behaviour.md §3.6: changedEntity is the change's own entity.
    @Test("A changedEntity predicate matches the entity exactly: a sub-entity's changes are left out")
    func changedEntityIsExact() throws {
        let (stack, second, tokens, _, note) = try Self.twoCoordinatorHistory()
        let other = stack.context(second)
        let noteEntity = try #require(stack.model.entity(named: "Note")), personEntity = try #require(stack.model.entity(named: "Person"))
        func changes(_ request: PersistentHistoryRequest) throws -> [PersistentHistoryChange] {
            var request = request
            request.resultType = .changesOnly
            return try other.performAndWait { try #require(try other.execute(request).changes) }
        }
        let inserts = PersistentHistoryFetchRequest(entity: .change, predicate: try ObjectPredicate(
            format: "changeType == %@ AND (changedEntity == %@ OR changedEntity == %@)",
            argumentArray: [PersistentHistoryChangeType.insert.rawValue, noteEntity, personEntity]))
        #expect(try changes(.fetchHistory(withFetch: inserts)).map(\.changedObjectID.entity.name) == ["Note", "Note", "Person"])
        var afterToken = PersistentHistoryRequest.fetchHistory(after: tokens[2])
        afterToken.fetchRequest = PersistentHistoryFetchRequest(entity: .change, predicate: .compare("changedEntity", .equalTo, noteEntity))
        let deleted = try changes(afterToken)
        #expect(deleted.map(\.changeType) == [.delete])
        #expect(deleted.map(\.changedObjectID.uriRepresentation) == [note.uriRepresentation])
    }

    // Docs/coredata-behaviour.md §3.6: the result types of a history fetch.
    @Test("A Transaction fetch after a token returns the later transaction; a Change fetch for transactions and changes returns transactions")
    func changeFetchReturnsTransactionsByDefault() throws {
        let (stack, second, tokens, _, _) = try Self.twoCoordinatorHistory()
        let other = stack.context(second)
        var transactions = PersistentHistoryRequest.fetchHistory(withFetch: PersistentHistoryFetchRequest(
            entity: .transaction, predicate: try ObjectPredicate(format: "token > %@", argumentArray: [tokens[2]])))
        transactions.resultType = .transactionsOnly
        let only = try other.performAndWait { try #require(try other.execute(transactions).transactions) }
        #expect(only.map(\.token) == [tokens[3]] && only.allSatisfy { $0.changes == nil })
        let updates = PersistentHistoryRequest.fetchHistory(withFetch: PersistentHistoryFetchRequest(
            entity: .change, predicate: try ObjectPredicate(format: "changeType == %@", argumentArray: [PersistentHistoryChangeType.update.rawValue])))
        let result = try other.performAndWait { try other.execute(updates) }
        #expect(result.changes == nil)
        #expect(result.transactions?.map(\.token) == [tokens[3]])
        #expect(result.transactions?.first?.changes?.map(\.changeType) == [.update])
    }
}
