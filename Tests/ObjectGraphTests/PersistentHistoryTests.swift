import Foundation
import Testing
@testable import ObjectGraph

/// Persistent history (semantics §3.6) and remote-change notifications (§3.5).
@Suite struct PersistentHistoryTests {
    /// The test model with `name` kept in delete tombstones.
    static func historyModel() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Item", managedObjectClass: Item.self,
                attributes: [
                    AttributeDescription(name: "id", type: .integer64, isOptional: false, defaultValue: .integer(0)),
                    AttributeDescription(name: "name", type: .string, preservesValueInHistoryOnDeletion: true),
                    AttributeDescription(name: "price", type: .double, isOptional: false, defaultValue: .double(0)),
                    AttributeDescription(name: "added", type: .date),
                    AttributeDescription(name: "flag", type: .boolean, defaultValue: .bool(false)),
                ],
                relationships: [
                    RelationshipDescription(name: "tag", destination: "Tag", inverse: "items"),
                    RelationshipDescription(name: "labels", destination: "Label", inverse: "items", toMany: true),
                ],
                uniquenessConstraints: [["id"]]),
            EntityDescription(
                name: "Tag", managedObjectClass: Tag.self,
                attributes: [AttributeDescription(name: "name", type: .string)],
                relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "tag", toMany: true)]),
            EntityDescription(
                name: "Label", managedObjectClass: Label.self,
                attributes: [AttributeDescription(name: "title", type: .string)],
                relationships: [RelationshipDescription(name: "items", destination: "Item", inverse: "labels", toMany: true)]),
        ])
    }

    static func tracked(remote: Bool = false) -> StoreOptions {
        var options = StoreOptions()
        options.persistentHistoryTracking = true
        options.remoteChangeNotifications = remote
        return options
    }

    /// Three saves by an authored, named context: insert 1–2, update 1's price, delete 2.
    static func threeSaves(_ stack: TestStack) throws -> [ManagedObjectID] {
        let ctx = stack.context(name: "editor")
        ctx.transactionAuthor = "app"
        return try ctx.performAndWait {
            let one = Item(context: ctx), two = Item(context: ctx)
            one.id = 1
            one.name = "one"
            two.id = 2
            two.name = "two"
            try ctx.save()
            one.price = 5
            try ctx.save()
            ctx.delete(two)
            try ctx.save()
            return [one.objectID, two.objectID]
        }
    }

    // Semantics §3.6: one transaction per save with number, timestamp, author, context name, token, and its
    // changes (type, object ID, updated properties, tombstone).
    @Test func transactionsAndChangesRecordEachSave_3_6() throws {
        let stack = try TestStack(model: try Self.historyModel(), options: Self.tracked())
        // A brand-new store has a current history token (before any transaction).
        let first = try #require(try stack.coordinator.currentPersistentHistoryToken())
        #expect(first.transactionNumber == 0)
        let start = Date()
        let ids = try Self.threeSaves(stack)
        let history = try stack.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
        #expect(history.count == 3)
        #expect(history.map(\.transactionNumber) == history.map(\.transactionNumber).sorted())
        #expect(history.allSatisfy { $0.author == "app" && $0.contextName == "editor" && $0.timestamp >= start.addingTimeInterval(-1) })
        #expect(history.allSatisfy { !$0.processID.isEmpty && !$0.bundleID.isEmpty })
        let inserts = try #require(history[0].changes)
        #expect(inserts.map(\.changeType) == [.insert, .insert])
        #expect(Set(inserts.map(\.changedObjectID)) == Set(ids))
        let update = try #require(history[1].changes?.first)
        #expect(history[1].changes?.count == 1)
        #expect(update.changeType == .update && update.changedObjectID == ids[0])
        #expect(update.updatedProperties == ["price"])
        let delete = try #require(history[2].changes?.first)
        #expect(delete.changeType == .delete && delete.changedObjectID == ids[1])
        #expect(delete.tombstone == ["name": .string("two")])  // only attributes marked to be preserved
        #expect(try stack.coordinator.currentPersistentHistoryToken() == history[2].token)
        // Written in the save's own SQLite transaction: the rows are in the file.
        #expect(try stack.sql("SELECT count(*) FROM ACHANGE").first?[0].int64 == 4)
    }

    // Semantics §3.6: fetchHistory(after: token) excludes the token's own transaction; after a date includes
    // transactions at or after it; transactions-only and author filters.
    @Test func fetchAfterTokenOrDate_3_6() throws {
        let stack = try TestStack(model: try Self.historyModel(), options: Self.tracked())
        _ = try Self.threeSaves(stack)
        let all = try stack.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
        let afterFirst = try stack.coordinator.fetchHistory(.fetchHistory(after: all[0].token))
        #expect(afterFirst.map(\.transactionNumber) == all.dropFirst().map(\.transactionNumber))
        #expect(try stack.coordinator.fetchHistory(.fetchHistory(after: all[2].token)).isEmpty)
        #expect(try stack.coordinator.fetchHistory(.fetchHistory(after: all[1].timestamp)).map(\.transactionNumber).first == all[1].transactionNumber)
        #expect(try stack.coordinator.fetchHistory(.fetchHistory(after: Date().addingTimeInterval(60))).isEmpty)
        var only = PersistentHistoryRequest.fetchHistory(after: nil as PersistentHistoryToken?)
        only.transactionsOnly = true
        #expect(try stack.coordinator.fetchHistory(only).allSatisfy { $0.changes == nil })
        // The canonical filter: other authors' transactions only.
        let other = stack.context()
        other.transactionAuthor = "sync"
        try other.performAndWait {
            let item = Item(context: other)
            item.id = 9
            try other.save()
        }
        var foreign = PersistentHistoryRequest.fetchHistory(after: all[2].token)
        foreign.filter = { $0.author != "app" }
        #expect(try stack.coordinator.fetchHistory(foreign).map(\.author) == ["sync"])
    }

    // Semantics §3.6: deleteHistory(before: token) purges strictly older transactions; the token's own
    // transaction survives.
    @Test func deleteHistoryBeforeKeepsTheTokensOwn_3_6() throws {
        let stack = try TestStack(model: try Self.historyModel(), options: Self.tracked())
        _ = try Self.threeSaves(stack)
        let all = try stack.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
        #expect(try stack.coordinator.deleteHistory(before: all[1].token) == 1)
        let left = try stack.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
        #expect(left.map(\.transactionNumber) == [all[1].transactionNumber, all[2].transactionNumber])
        #expect(left[0].changes?.count == 1)
        #expect(try stack.sql("SELECT count(*) FROM ACHANGE").first?[0].int64 == 2)  // the changes went too
        #expect(try stack.coordinator.deleteHistory(before: Date().addingTimeInterval(60)) == 2)
        #expect(try stack.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?)).isEmpty)
    }

    // Semantics §3.6: history is written in the save's own SQLite transaction — a save that fails inside the
    // store (an optimistic-locking conflict found by the UPDATE, §1.1 layer 2) leaves no transaction behind.
    @Test func failedSaveWritesNoHistory_3_6() throws {
        let stack = try TestStack(model: try Self.historyModel(), options: Self.tracked())
        try stack.seed(1)
        let stale = stack.context()
        let item: Item = try stale.performAndWait {
            let item = try #require(try fetchItems(stale).first)
            _ = item.price
            return item
        }
        let other = stack.context(try stack.secondCoordinator(options: Self.tracked()))
        try other.performAndWait {
            try fetchItems(other)[0].price = 2
            try other.save()
        }
        let before = try stack.sql("SELECT count(*) FROM ATRANSACTION").first?[0].int64
        stale.performAndWait {
            item.price = 3
            #expect { try stale.save() } throws: { ($0 as? ObjectGraphError)?.code == .merge }
        }
        #expect(try stack.sql("SELECT count(*) FROM ATRANSACTION").first?[0].int64 == before)
        #expect(try stack.sql("SELECT count(*) FROM ACHANGE").first?[0].int64 == 2)
    }

    // Docs/coredata-behaviour.md §3.6: a transaction's timestamp is the date it was written; outside a simulation
    // the wall clock, a counting thread's included.
    @Test("A history transaction's timestamp is the wall clock outside a simulation")
    func timestampIsTheWallClock() throws {
        let stack = try TestStack(model: try Self.historyModel(), options: Self.tracked())
        let before = Date()
        _ = try Self.threeSaves(stack)
        let counting = ExecutionThread.countingOnly()
        ExecutionThread.install(counting)
        defer { ExecutionThread.install(nil) }
        let ctx = stack.context(name: "counted")
        try ctx.performAndWait {
            Item(context: ctx).id = 3
            try ctx.save()
        }
        let after = Date()
        let history = try stack.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
        #expect(history.count == 4)
        #expect(history.allSatisfy { $0.timestamp >= before.addingTimeInterval(-1) && $0.timestamp <= after.addingTimeInterval(1) })
    }

    // Semantics §3.6: tracking is off by default — no history tables written, fetching history is an error,
    // no current token.
    @Test func historyIsOffByDefault_3_6() throws {
        let stack = try TestStack()
        try stack.seed(2)
        #expect(try stack.coordinator.currentPersistentHistoryToken() == nil)
        #expect(throws: ObjectGraphError.self) { try stack.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?)) }
        #expect(try stack.sql("SELECT count(*) FROM sqlite_master WHERE name = 'ATRANSACTION'").first?[0].int64 == 0)
    }

    // Semantics §3.6 replay: objectIDNotification() merged with mergeChanges(fromContextDidSave:) brings
    // another coordinator's transactions into a context.
    @Test func objectIDNotificationReplaysATransaction_3_6() throws {
        let stack = try TestStack(model: try Self.historyModel(), options: Self.tracked())
        try stack.seed(3)
        let second = try stack.secondCoordinator(options: Self.tracked())
        let view = stack.context()
        view.stalenessInterval = 0  // §2.4: past the row cache, which the other coordinator's save did not reach
        let items: [Item] = try view.performAndWait { try fetchItems(view).map { _ = $0.price; return $0 } }
        let token = try #require(try stack.coordinator.currentPersistentHistoryToken())
        let writer = stack.context(second)
        try writer.performAndWait {
            let loaded = try fetchItems(writer)
            loaded[0].price = 111
            writer.delete(loaded[1])
            let four = Item(context: writer)
            four.id = 4
            try writer.save()
        }
        let transactions = try stack.coordinator.fetchHistory(.fetchHistory(after: token))
        #expect(transactions.count == 1)
        let note = try #require(transactions.first).objectIDNotification()
        #expect(note.name == ManagedObjectContext.didSaveObjectIDsNotification)
        let changes = try #require(ContextObjectIDChanges(note))
        #expect(changes.inserted.count == 1 && changes.updated.count == 1 && changes.deleted.count == 1)
        let didChange = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: view)
        view.performAndWait {
            view.mergeChanges(fromContextDidSave: note)
            #expect(items[0].price == 111)
            #expect(items[1].isDeleted)
            let announced = didChange.notes.compactMap { ObjectsDidChange($0) }
            #expect(announced.flatMap { $0.inserted.compactMap { ($0 as? Item)?.id } } == [4])
        }
    }

    // Semantics §3.5: every write to the store (a save, a batch insert, a batch update)
    // posts the remote-change notification, with the store's URL, UUID and history token, to every coordinator
    // on the file that asked for it, the writing one included; never to a coordinator without the option.
    @Test("A remote-change notification reaches every coordinator on the file, the saving one included (§3.5)")
    func remoteChangeNotificationReachesEveryCoordinator_3_5() throws {
        let stack = try TestStack(model: try Self.historyModel(), options: Self.tracked(remote: true))
        let listening = try stack.secondCoordinator(options: Self.tracked(remote: true))
        let deaf = try stack.secondCoordinator(options: Self.tracked())
        let toListening = NotificationRecorder(PersistentStoreCoordinator.storeRemoteChangeNotification, object: listening)
        let toDeaf = NotificationRecorder(PersistentStoreCoordinator.storeRemoteChangeNotification, object: deaf)
        let toWriter = NotificationRecorder(PersistentStoreCoordinator.storeRemoteChangeNotification, object: stack.coordinator)
        try stack.seed(2)
        #expect(toListening.notes.count == 1)
        #expect(toWriter.notes.count == 1)
        #expect(toDeaf.notes.isEmpty)
        let token = try stack.coordinator.currentPersistentHistoryToken()
        for note in [toListening.notes.first, toWriter.notes.first] {
            let info = try #require(note?.userInfo)
            #expect(info["historyToken"] as? PersistentHistoryToken == token)
            #expect((info["storeURL"] as? URL)?.standardizedFileURL.path == stack.url.standardizedFileURL.path)
            #expect(info["storeUUID"] as? String == stack.coordinator.storeIdentifier)
        }
        let ctx = stack.context()
        try ctx.performAndWait {
            _ = try ctx.execute(BatchInsertRequest(entityName: "Item", objects: [["id": 3, "name": "three"]]))
        }
        #expect(toListening.notes.count == 2)
        #expect(toWriter.notes.count == 2)
        let afterInsert = try stack.coordinator.currentPersistentHistoryToken()
        #expect(toWriter.notes.last?.userInfo?["historyToken"] as? PersistentHistoryToken == afterInsert)
        #expect(afterInsert != token)
        try ctx.performAndWait {
            _ = try ctx.execute(BatchUpdateRequest(entityName: "Item", propertiesToUpdate: ["flag": true]))
        }
        #expect(toListening.notes.count == 3)
        #expect(toWriter.notes.count == 3)
        // A save on the listening coordinator reaches the first one and itself.
        let other = stack.context(listening)
        try other.performAndWait {
            let item = Item(context: other)
            item.id = 4
            try other.save()
        }
        #expect(toListening.notes.count == 4)
        #expect(toWriter.notes.count == 4)
        #expect(toDeaf.notes.isEmpty)
    }

    // Semantics §3.6 / §6: batch requests write history — a batch insert is one transaction with N inserts;
    // updates name their properties; deletes carry tombstones.
    @Test func batchRequestsWriteHistory_3_6() throws {
        let stack = try TestStack(model: try Self.historyModel(), options: Self.tracked())
        let ctx = stack.context(name: "batcher")
        ctx.transactionAuthor = "import"
        try ctx.performAndWait {
            _ = try ctx.execute(BatchInsertRequest(entityName: "Item", objects: (1...3).map { ["id": $0, "name": "n\($0)"] }))
            _ = try ctx.execute(BatchUpdateRequest(entityName: "Item", predicate: .compare("id", .lessThan, 3), propertiesToUpdate: ["price": 7]))
            _ = try ctx.execute(BatchDeleteRequest(fetchRequest: ctxItemRequest(.compare("id", .equalTo, 3))))
        }
        let history = try stack.coordinator.fetchHistory(.fetchHistory(after: nil as PersistentHistoryToken?))
        #expect(history.count == 3)
        #expect(history.allSatisfy { $0.author == "import" && $0.contextName == "batcher" })
        #expect(history[0].changes?.map(\.changeType) == [.insert, .insert, .insert])
        #expect(history[1].changes?.map(\.changeType) == [.update, .update])
        #expect(history[1].changes?.allSatisfy { $0.updatedProperties == ["price"] } == true)
        #expect(history[2].changes?.map(\.changeType) == [.delete])
        #expect(history[2].changes?.first?.tombstone == ["name": .string("n3")])
    }

    // Recorded on Apple: fetching history after a token whose transaction was purged fails with
    // 134301 (token expired); the newest surviving token still works; a store whose history was all purged keeps
    // a current token that works (semantics §3.6: purge-before-token keeps the token's own transaction).
    @Test func purgedTokenExpires_17() throws {
        let stack = try TestStack(model: try Self.historyModel(), options: Self.tracked())
        let empty = try #require(try stack.coordinator.currentPersistentHistoryToken())
        _ = try Self.threeSaves(stack)
        let history = try stack.coordinator.fetchHistory(.fetchHistory(after: empty))
        #expect(history.count == 3)
        // Purge the first transaction: the tokens before it expire, the surviving ones do not.
        try stack.coordinator.deleteHistory(before: history[1].token)
        for stale in [empty, history[0].token] {
            let error = #expect(throws: ObjectGraphError.self) { try stack.coordinator.fetchHistory(.fetchHistory(after: stale)) }
            #expect(error?.code == .persistentHistoryTokenExpired)
            #expect(error?.code.rawValue == 134301)
        }
        #expect(try stack.coordinator.fetchHistory(.fetchHistory(after: history[1].token)).map(\.transactionNumber) == [history[2].transactionNumber])
        // Purge everything up to the newest: only the newest survives; the token before it has expired.
        try stack.coordinator.deleteHistory(before: history[2].token)
        #expect(try stack.coordinator.fetchHistory(.fetchHistory(after: history[2].token)).isEmpty)
        #expect(throws: ObjectGraphError.self) { try stack.coordinator.fetchHistory(.fetchHistory(after: history[1].token)) }
        #expect(try stack.coordinator.currentPersistentHistoryToken() == history[2].token)
    }
}
