import Foundation
import Synchronization
import Testing
@testable import ObjectGraph

/// Main-queue contexts with an injected executor (issue "ObjectGraph core" item 5; architecture.md "Threading";
/// semantics §8).
@Suite struct ContextQueueTests {

    // Semantics §8: a `.mainQueue` context runs its blocks on the main queue it is given (here a simulated main
    // thread whose `around` hook sees every block); perform processes pending changes, performAndWait is
    // reentrant and runs in place when already on the queue.
    @Test func mainQueueContextRunsOnTheInjectedQueue_8() throws {
        let blocks = Atomic<Int>(0)
        let simulatedMain = ContextQueue(label: "simulated main") { block in
            blocks.add(1, ordering: .relaxed)
            block()
        }
        let stack = try TestStack()
        let ctx = ManagedObjectContext(concurrencyType: .mainQueue, queue: simulatedMain)
        ctx.persistentStoreCoordinator = stack.coordinator
        #expect(ctx.concurrencyType == .mainQueue)
        #expect(ctx.queue === simulatedMain)
        #expect(!simulatedMain.isCurrent)
        let changes = NotificationRecorder(ManagedObjectContext.objectsDidChangeNotification, object: ctx)
        let done = DispatchSemaphore(value: 0)
        ctx.perform {
            #expect(simulatedMain.isCurrent)
            let item = Item(context: ctx)
            item.id = 1
            done.signal()
        }
        done.wait()
        ctx.performAndWait {}  // the perform block has finished, processPendingChanges included
        #expect(changes.notes.count == 1)
        let nested = try ctx.performAndWait {
            try ctx.performAndWait {
                #expect(simulatedMain.isCurrent)
                try ctx.save()
                return ctx.hasChanges
            }
        }
        #expect(nested == false)
        #expect(blocks.load(ordering: .relaxed) == 3)  // perform, the empty performAndWait, the outer performAndWait
        #expect(try stack.sql("SELECT COUNT(*) FROM ZITEM") == [[.integer(1)]])
    }
}
