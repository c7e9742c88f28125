import Dispatch
import Foundation
import Testing
@testable import Ambar
@testable import ObjectGraph

/// The 7.x stack (seeds 002–004: RTCoreDataStack / Ambar 7.2): asynchronous setup with `isReady` and a callback
/// on the main queue, `usingSeparatePSCs`, `isMainContextReadOnly`, `shouldMergeIncomingSavedObjects`.
@Suite struct ToolkitLegacyStackTests {
    final class Harness: @unchecked Sendable {  // immutable after init; `stack` is Sendable
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-legacy-\(UUID().uuidString)", isDirectory: true)
        let main = ContextQueue(label: "legacy.main")
        let callbacks = TKLog<(onMain: Bool, ready: Bool, failed: Bool)>()
        let done = DispatchSemaphore(value: 0)
        var stack: AmbarLegacyStack!
        var readyRightAfterInit = true

        init(storeType: AmbarContainer.StoreType = .sqlite, separate: Bool = true, modelName: String? = nil, model: ManagedObjectModel? = nil) throws {
            let main = self.main, callbacks = self.callbacks, done = self.done
            let box = StackBox()
            let resolvedModel = modelName == nil ? try (model ?? makeToolkitModel()) : nil
            // Hold the main queue until `box.stack` is set, so the callback always sees the stack.
            let gate = DispatchSemaphore(value: 0), entered = DispatchSemaphore(value: 0)
            main.async {
                entered.signal()
                gate.wait()
            }
            entered.wait()
            defer { gate.signal() }
            let stack = AmbarLegacyStack(
                storeType: storeType, dataModelName: modelName, model: resolvedModel, storeURL: directory,
                usingSeparateCoordinators: separate, mainQueue: main
            ) { error in
                callbacks.append((main.isCurrent, box.stack?.isReady ?? false, error != nil))
                done.signal()
            }
            readyRightAfterInit = stack.isReady
            box.stack = stack
            self.stack = stack
        }

        deinit { try? FileManager.default.removeItem(at: directory) }

        /// Waits for the callback (bounded).
        func waitForCallback() -> Bool { done.wait(timeout: .now() + 10) == .success }
        func drainMain() { main.sync {} }
    }

    final class StackBox: @unchecked Sendable {  // written before the callback can run (it waits for the main queue)
        var stack: AmbarLegacyStack?
    }

    @Test func asyncSetupBecomesReadyAndCallsBackOnTheGivenMainQueue() throws {
        let h = try Harness()
        // Setup runs on a global queue and opens two SQLite connections: right after init it has not finished.
        #expect(!h.readyRightAfterInit)
        #expect(h.waitForCallback())
        let callbacks = h.callbacks.take()
        #expect(callbacks.count == 1)
        #expect(callbacks.first?.onMain == true)
        #expect(callbacks.first?.ready == true)
        #expect(callbacks.first?.failed == false)
        let stack = try #require(h.stack)
        #expect(stack.isReady)
        #expect(stack.setupError == nil)
        let main = try #require(stack.mainContext)
        #expect(main.queue === h.main)
        #expect(main.concurrencyType == .mainQueue)
        #expect(main.mergePolicy.type == .mergeByPropertyStoreTrump)
        #expect(stack.mainCoordinator != nil)
        #expect(stack.mainCoordinator !== stack.writerCoordinator)  // separate coordinators by default
        #expect(main.persistentStoreCoordinator === stack.mainCoordinator)
        let importer = try stack.importerContext()
        #expect(importer.persistentStoreCoordinator === stack.writerCoordinator)
        #expect(importer.mergePolicy.type == .mergeByPropertyObjectTrump)
        #expect(try stack.temporaryContext().mergePolicy.type == .rollback)
        #expect(try stack.editorContext().parent === main)
        #expect(stack.container?.options.mergeFilter == .writerOnly)
    }

    @Test func notReadyStackRefusesContexts() throws {
        // A model that cannot be found: setup fails, the stack never becomes ready, the callback gets the error.
        let h = try Harness(modelName: "no-such-model-\(UUID().uuidString)")
        #expect(h.waitForCallback())
        let callbacks = h.callbacks.take()
        #expect(callbacks.count == 1)
        #expect(callbacks.first?.onMain == true)
        #expect(callbacks.first?.failed == true)
        let stack = try #require(h.stack)
        #expect(!stack.isReady)
        #expect(stack.setupError != nil)
        #expect(stack.mainContext == nil)
        #expect(stack.mainCoordinator == nil)
        do {
            _ = try stack.importerContext()
            Issue.record("a stack that is not ready must refuse to make contexts")
        } catch let error as AmbarError {
            #expect(error.code == .notReady)
        }
        #expect(throws: AmbarError.self) { try stack.temporaryContext() }
        #expect(throws: AmbarError.self) { try stack.editorContext() }
        // The options read their defaults while there is no container.
        #expect(!stack.isMainContextReadOnly)
        #expect(stack.shouldMergeIncomingSavedObjects)
    }

    @Test(arguments: [AmbarContainer.StoreType.sqlite, .inMemory])
    func oneCoordinatorWhenAsked(storeType: AmbarContainer.StoreType) throws {
        let h = try Harness(storeType: storeType, separate: false)
        #expect(h.waitForCallback())
        let stack = try #require(h.stack)
        #expect(stack.isReady)
        #expect(stack.mainCoordinator === stack.writerCoordinator)
        #expect(try stack.importerContext().persistentStoreCoordinator === stack.mainCoordinator)
        // The importer's saves still reach the main context.
        let importer = try stack.importerContext()
        try importer.performAndWait {
            let item = try TKItem.insert(into: importer)
            item.id = 1
            try importer.save()
        }
        h.drainMain()
        #expect(stack.container?.counters.mergesPerformed == 1)
        // In-memory is always one coordinator, even when two are asked for.
        if storeType == .inMemory {
            let two = try Harness(storeType: .inMemory, separate: true)
            #expect(two.waitForCallback())
            #expect(two.stack.mainCoordinator === two.stack.writerCoordinator)
        }
    }

    /// The 7.x options are plain properties (`var … = true/false`): a value set while setup is still running
    /// must not be lost.
    @Test func optionsSetWhileSettingUpAreKept() throws {
        let h = try Harness()
        let stack = try #require(h.stack)
        stack.shouldMergeIncomingSavedObjects = false
        stack.isMainContextReadOnly = true
        #expect(!stack.shouldMergeIncomingSavedObjects)
        #expect(stack.isMainContextReadOnly)
        #expect(h.waitForCallback())
        #expect(!stack.shouldMergeIncomingSavedObjects)
        #expect(stack.isMainContextReadOnly)
        #expect(stack.container?.shouldMergeIncomingSavedObjects == false)
        #expect(stack.mainContext?.mergePolicy.type == .rollback)
    }

    /// 7.x README: the stack "smartly dismisses any notifications coming from anything except the contexts
    /// attached to writerCoordinator".
    @Test func mergesOnlyWriterCoordinatorSaves() throws {
        let h = try Harness()
        #expect(h.waitForCallback())
        let stack = try #require(h.stack)
        let container = try #require(stack.container)
        let temporary = try stack.temporaryContext()
        try temporary.performAndWait {
            let item = try TKItem.insert(into: temporary)
            item.id = 1
            try temporary.save()
        }
        h.drainMain()
        #expect(container.counters.mergesPerformed == 0)
        let importer = try stack.importerContext()
        try importer.performAndWait {
            let item = try TKItem.insert(into: importer)
            item.id = 2
            try importer.save()
        }
        h.drainMain()
        #expect(container.counters.mergesPerformed == 1)
    }

    @Test func mainContextReadOnly() throws {
        let h = try Harness()
        #expect(h.waitForCallback())
        let stack = try #require(h.stack)
        let main = try #require(stack.mainContext)
        stack.isMainContextReadOnly = true
        #expect(stack.isMainContextReadOnly)
        #expect(main.mergePolicy.type == .rollback)
        // 7.x: "If you call editorContext() while this is true, you app will crash" — here an error.
        #expect(throws: AmbarError.self) { try stack.editorContext() }
        stack.isMainContextReadOnly = false
        #expect(main.mergePolicy.type == .mergeByPropertyStoreTrump)
        #expect(try stack.editorContext().parent === main)
    }

    @Test func shouldMergeIncomingSavedObjectsFalseStopsTheSmartMerge() throws {
        let h = try Harness()
        #expect(h.waitForCallback())
        let stack = try #require(h.stack)
        let container = try #require(stack.container)
        let main = try #require(stack.mainContext)
        func importPrice(_ price: Double) throws {
            let importer = try stack.importerContext()
            try importer.performAndWait {
                let item = try TKItem.first(in: importer, predicate: .compare("id", .equalTo, 1)) ?? TKItem.insert(into: importer)
                item.id = 1
                item.price = price
                try importer.save()
            }
            h.drainMain()
        }
        try importPrice(1)
        #expect(container.counters.mergesPerformed == 1)
        let shown = try main.performAndWait { try #require(try TKItem.fetch(in: main) { $0.returnsObjectsAsFaults = false }.first) }

        stack.shouldMergeIncomingSavedObjects = false
        #expect(!stack.shouldMergeIncomingSavedObjects)
        #expect(!container.shouldMergeIncomingSavedObjects)
        let before = container.counters
        let contextMerges = main.performAndWait { main.counters.merges }
        try importPrice(2)
        let after = container.counters
        #expect(after.saveNotificationsSeen == before.saveNotificationsSeen + 1)
        #expect(after.mergesScheduled == before.mergesScheduled)
        #expect(after.mergesPerformed == before.mergesPerformed)
        main.performAndWait {
            #expect(main.counters.merges == contextMerges)
            #expect(shown.price == 1)  // the main context was not told
        }

        stack.shouldMergeIncomingSavedObjects = true
        try importPrice(3)
        #expect(container.counters.mergesPerformed == before.mergesPerformed + 1)
        main.performAndWait { #expect(shown.price == 3) }
    }
}

/// The smart merge carries object IDs only (seed 000: the merge "will refresh all objects already loaded in
/// viewContext and will ignore all the rest"): while the merge waits on the main queue, the importer's context
/// and objects are already gone.
@Suite struct ToolkitMergePayloadTests {
    @Test func pendingMergeDoesNotKeepTheImportersObjectsAlive() throws {
        let s = try TKStack()
        try s.seedAndSettle([TKSeed(1)])
        let view = s.view
        let shown = try s.viewItems([1])
        // Hold the main queue so the merge stays queued.
        let gate = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        s.main.async {
            entered.signal()
            gate.wait()
        }
        entered.wait()
        var released = false
        defer { if !released { gate.signal() } }

        weak var weakImporter: ManagedObjectContext?
        weak var weakInserted: TKItem?
        weak var weakUpdated: TKItem?
        let mergesBefore = s.container.counters
        do {
            let importer = s.container.importerContext()
            weakImporter = importer
            try importer.performAndWait {
                let fresh = try TKItem.insert(into: importer)
                fresh.id = 2
                let one = try #require(try TKItem.first(in: importer, predicate: .compare("id", .equalTo, 1)))
                one.price = 111
                try importer.save()
                weakInserted = fresh
                weakUpdated = one
                #expect(weakInserted != nil && weakUpdated != nil)  // alive while the importer holds them
            }
        }
        let pending = s.container.counters
        #expect(pending.mergesScheduled == mergesBefore.mergesScheduled + 1)
        #expect(pending.mergesPerformed == mergesBefore.mergesPerformed)  // still queued
        #expect(weakImporter == nil)
        #expect(weakInserted == nil)
        #expect(weakUpdated == nil)

        released = true
        gate.signal()
        s.drainMain()
        #expect(s.container.counters.mergesPerformed == mergesBefore.mergesPerformed + 1)
        try view.performAndWait { () throws in
            #expect(shown.first?.price == 111)
            #expect(try TKItem.count(in: view) == 2)
        }
    }
}
