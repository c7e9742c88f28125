import Foundation
import Synchronization
import Testing
@testable import ObjectGraph

/// Asynchronous fetch requests (`NSAsynchronousFetchRequest`): a completion block on the
/// context's queue, progress, cancellation (cancelled before it runs: an empty result and no error); semantics §4.
@Suite struct AsynchronousFetchTests {
    /// Runs `start` on the context's queue and waits for the completion block.
    private func run(_ ctx: ManagedObjectContext, _ fetch: FetchRequest, estimated: Int = 0,
                     start: @escaping @Sendable (AsynchronousFetchResult) -> Void = { _ in },
                     check: @escaping @Sendable (AsynchronousFetchResult) -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            ctx.perform {
                var request = AsynchronousFetchRequest(fetchRequest: fetch) { result in
                    #expect(ctx.queue.isCurrent)
                    check(result)
                    continuation.resume()
                }
                request.estimatedResultCount = estimated
                do {
                    let result = try ctx.execute(request)
                    // execute returns before the fetch runs.
                    #expect(!result.isFinished)
                    #expect(result.finalResult == nil)
                    start(result)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    @Test("An asynchronous fetch returns at once and completes on the context's queue with results and progress")
    func completes() async throws {
        let stack = try TestStack()
        try stack.seed(3)
        let ctx = stack.context()
        var fetch = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])
        fetch.predicate = .compare("price", .greaterThan, 10)
        try await run(ctx, fetch, estimated: 10) { result in
            #expect(result.progress?.totalUnitCount == 10)  // the estimate until the count is known
        } check: { result in
            #expect(result.operationError == nil)
            #expect(result.isFinished)
            let items = (result.finalObjects ?? []).compactMap { $0 as? Item }
            #expect(items.map(\.id) == [2, 3])
            #expect(items.allSatisfy { $0.managedObjectContext === result.managedObjectContext })
            #expect(result.progress?.totalUnitCount == 2)
            #expect(result.progress?.completedUnitCount == 2)
            #expect(result.progress?.isFinished == true)
            #expect(result.fetchRequest.requestType == .fetchRequestType)
        }
    }

    @Test("An asynchronous fetch follows the result type (object IDs, count)")
    func resultTypes() async throws {
        let stack = try TestStack()
        let ids = try stack.seed(2)
        let ctx = stack.context()
        var fetch = FetchRequest(entityName: "Item", sortDescriptors: [ObjectSortDescriptor("id")])
        fetch.resultType = .managedObjectID
        try await run(ctx, fetch) { result in
            #expect(result.finalResult as? [ManagedObjectID] == ids)
        }
        fetch.resultType = .count
        try await run(ctx, fetch) { result in
            #expect(result.finalResult as? [Int] == [2])
        }
    }

    @Test("Cancelled before it runs, an asynchronous fetch completes with an empty result and no error")
    func cancelledBeforeItRuns() async throws {
        let stack = try TestStack()
        try stack.seed(3)
        let ctx = stack.context()
        let selects = Mutex(0)
        let before = stack.coordinator.counters.statements.select
        try await run(ctx, FetchRequest(entityName: "Item")) { result in
            result.cancel()
        } check: { result in
            #expect(result.finalResult?.isEmpty == true)
            #expect(result.operationError == nil)
            #expect(result.isCancelled)
            #expect(result.progress?.isCancelled == true)
            selects.withLock { $0 = stack.coordinator.counters.statements.select }
        }
        #expect(selects.withLock { $0 } == before)  // it never reached the store
        // Cancelling through the progress works the same way.
        try await run(ctx, FetchRequest(entityName: "Item")) { result in
            result.progress?.cancel()
        } check: { result in
            #expect(result.finalResult?.isEmpty == true)
            #expect(result.operationError == nil)
        }
    }

    @Test("A failing asynchronous fetch reports operationError and no result; cancel after it ran changes nothing")
    func failsAndLateCancel() async throws {
        let stack = try TestStack()
        try stack.seed(1)
        let ctx = stack.context()
        try await run(ctx, FetchRequest(entityName: "Nope")) { result in
            #expect(result.finalResult == nil)
            #expect(result.operationError is ObjectGraphError)
        }
        try await run(ctx, FetchRequest(entityName: "Item")) { result in
            result.cancel()  // too late: it ran
            #expect(result.finalResult?.count == 1)
            #expect(result.operationError == nil)
        }
    }
}
