import Foundation

/// A fetch that runs later on its context's queue and hands its result to a completion block
/// (`NSAsynchronousFetchRequest`, Docs/core-data-rules.md Rule 21.7).
///
/// ```swift
/// let request = AsynchronousFetchRequest(fetchRequest: FetchRequest(entityName: "Item")) { result in
///     let items = result.finalResult as? [ManagedObject] ?? []   // on the context's queue
/// }
/// let pending = try context.execute(request)   // returns at once; pending.cancel() stops it if not run yet
/// ```
public struct AsynchronousFetchRequest: @unchecked Sendable {  // the block is only ever called on the context's queue
    /// The fetch to run.
    public var fetchRequest: FetchRequest
    /// Called on the context's queue when the fetch has run (or was cancelled before it ran).
    public var completionBlock: ((AsynchronousFetchResult) -> Void)?
    /// The number of results expected: the progress's total unit count until the real count is known (0: unknown).
    public var estimatedResultCount = 0

    /// Creates an asynchronous fetch of `fetchRequest`.
    public init(fetchRequest: FetchRequest, completionBlock: ((AsynchronousFetchResult) -> Void)? = nil) {
        self.fetchRequest = fetchRequest
        self.completionBlock = completionBlock
    }

    /// `.fetchRequestType`, as its fetch request's.
    public var requestType: PersistentStoreRequestType { .fetchRequestType }
}

/// What a context's `execute(_:)` of an asynchronous fetch returns at once, and the completion block
/// receives when the fetch has run (`NSAsynchronousFetchResult`).
public final class AsynchronousFetchResult: @unchecked Sendable {  // results are read on the context's queue; the rest is locked
    /// The request.
    public let fetchRequest: AsynchronousFetchRequest
    /// The context that runs the fetch (held weakly, as a context does not outlive its app's use).
    public private(set) weak var managedObjectContext: ManagedObjectContext?
    /// Progress of the fetch: its total is the estimated, then the real, number of results; it completes when
    /// the results are in. Cancelling it cancels the fetch.
    public let progress: Progress?
    private let lock = NSLock()
    private var state = State()  // guarded by `lock`

    private struct State {
        var cancelled = false
        var finished = false
        var finalResult: [Any]?
        var error: (any Error)?
    }

    private func locked<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }

    init(request: AsynchronousFetchRequest, context: ManagedObjectContext) {
        fetchRequest = request
        managedObjectContext = context
        // A child of the current progress, if the caller has one (Foundation's rule for a new Progress).
        progress = Progress(totalUnitCount: Int64(max(request.estimatedResultCount, 0)))
    }

    /// The fetch's results, following the fetch request's `resultType` (objects, object IDs, dictionaries, or
    /// the count as a one-element array); nil until the fetch has run, and after an error. Empty when the fetch
    /// was cancelled before it ran.
    public var finalResult: [Any]? { locked { $0.finalResult } }

    /// The managed objects of ``finalResult`` (for a managed-object fetch).
    public var finalObjects: [ManagedObject]? { finalResult?.compactMap { $0 as? ManagedObject } }

    /// Why the fetch failed, if it did. A cancelled fetch has no error.
    public var operationError: (any Error)? { locked { $0.error } }

    /// Whether the fetch has run and its completion block was called (or would have been).
    public var isFinished: Bool { locked { $0.finished } }

    /// Whether ``cancel()`` (or the progress's `cancel()`) was called.
    public var isCancelled: Bool { locked { $0.cancelled } || (progress?.isCancelled ?? false) }

    /// Cancels the fetch. One that has not run yet then finishes with an empty result and no error; one that ran
    /// already keeps its result.
    public func cancel() {
        let first = locked { state -> Bool in
            defer { state.cancelled = true }
            return !state.cancelled && !state.finished
        }
        if first, let progress, !progress.isCancelled { progress.cancel() }
    }

    /// Runs on the context's queue.
    func run(in context: ManagedObjectContext) {
        if isCancelled {
            // Rule 21.7: cancelled before it ran: an empty result and no error.
            finish(result: [], error: nil)
            return
        }
        do {
            let results = try context.fetchResults(fetchRequest.fetchRequest)
            finish(result: results, error: nil)
        } catch {
            finish(result: nil, error: error)
        }
    }

    private func finish(result: [Any]?, error: (any Error)?) {
        locked { state in
            state.finished = true
            state.finalResult = result
            state.error = error
        }
        if let progress, let result, error == nil, !progress.isCancelled {
            progress.totalUnitCount = Int64(result.count)
            progress.completedUnitCount = Int64(result.count)
        }
        fetchRequest.completionBlock?(self)
    }
}

extension ManagedObjectContext {
    /// Starts an asynchronous fetch (`execute(_:)` with an `NSAsynchronousFetchRequest`): returns at once; the
    /// fetch runs on this context's queue after the work already queued there (a `perform` block), registers its
    /// objects here as ``fetch(_:)`` does, and calls the request's completion block on this queue.
    /// Call it on the context's queue.
    /// - Throws: nothing today; an error of the fetch is the result's ``AsynchronousFetchResult/operationError``.
    @discardableResult
    public func execute(_ request: AsynchronousFetchRequest) throws -> AsynchronousFetchResult {
        assertOnQueue()
        let result = AsynchronousFetchResult(request: request, context: self)
        queue.async { [weak self] in
            guard let self else { return }
            result.run(in: self)
            self.processPendingChanges()
        }
        return result
    }
}
