import Dispatch
import Foundation
import Synchronization

/// The serial queue a context runs its blocks on.
///
/// A `.privateQueue` context owns one. `.mainQueue` contexts share ``ContextQueue/main``, which on Linux only
/// runs while the main thread services `DispatchQueue.main` (`dispatchMain()`, a run loop or an async `main`).
/// Programs without one (tests, command-line tools) install their own main queue with ``ContextQueue/setMain(_:)``
/// or pass one to the context, for example a queue whose ``around`` hook times every block.
///
/// This is the library's only serial executor (Docs/simulation.md "The executor layer"): a queue made on a thread
/// of a simulation (``ExecutionThread/current``) is a queue of that simulation, run on its virtual clock; any
/// other is a dispatch queue.
public final class ContextQueue: @unchecked Sendable {  // immutable after init
    /// A name for debugging.
    public let label: String
    let queue: DispatchQueue?
    /// The simulation's queue, when the queue was made on a simulated thread.
    let simulated: (any SimulatedQueue)?
    private let marker: Int
    private let isDispatchMain: Bool
    /// Wraps every block the queue runs (both `async` and `sync`), for instrumentation.
    let around: (@Sendable (_ block: () -> Void) -> Void)?
    /// Told each time a block is queued with ``async(_:)`` (for queue-depth measurement).
    let willEnqueue: (@Sendable () -> Void)?

    private static let key = DispatchSpecificKey<Int>()
    private static let nextMarker = Atomic<Int>(1)

    /// A new serial queue.
    /// - Parameters:
    ///   - label: the queue's name.
    ///   - around: a hook that runs each block (it must call the block exactly once).
    public init(label: String, around: (@Sendable (_ block: () -> Void) -> Void)? = nil, willEnqueue: (@Sendable () -> Void)? = nil) {
        self.label = label
        self.isDispatchMain = false
        self.around = around
        self.willEnqueue = willEnqueue
        self.marker = Self.nextMarker.add(1, ordering: .relaxed).newValue
        if let thread = ExecutionThread.current, thread.isSimulated {
            simulated = thread.simulation.makeQueue(label: label)
            queue = nil
        } else {
            simulated = nil
            let queue = DispatchQueue(label: label)
            queue.setSpecific(key: Self.key, value: marker)
            self.queue = queue
        }
    }

    private init(dispatchMain: DispatchQueue) {
        self.label = "main"
        self.isDispatchMain = true
        self.around = nil
        self.willEnqueue = nil
        self.marker = Self.nextMarker.add(1, ordering: .relaxed).newValue
        self.simulated = nil
        self.queue = dispatchMain
        dispatchMain.setSpecific(key: Self.key, value: marker)
    }

    /// `DispatchQueue.main`, used by `.mainQueue` contexts unless another main queue is installed.
    public static let dispatchMain = ContextQueue(dispatchMain: .main)

    private static let installedMain = Mutex<ContextQueue?>(nil)

    /// The queue new `.mainQueue` contexts use.
    public static var main: ContextQueue { installedMain.withLock { $0 } ?? dispatchMain }

    /// Installs the queue that new `.mainQueue` contexts use (nil restores `DispatchQueue.main`).
    public static func setMain(_ queue: ContextQueue?) { installedMain.withLock { $0 = queue } }

    /// The simulation's queue behind this one, nil for a dispatch queue.
    package var simulatedQueue: (any SimulatedQueue)? { simulated }

    /// Whether the calling code runs on this queue.
    public var isCurrent: Bool {
        if let simulated { return simulated.isCurrent }
        if DispatchQueue.getSpecific(key: Self.key) == marker { return true }
        return isDispatchMain && Thread.isMainThread
    }

    /// Runs `block` later on the queue.
    public func async(_ block: @escaping @Sendable () -> Void) {
        willEnqueue?()
        let run: @Sendable () -> Void
        if let around { run = { around(block) } } else { run = block }
        if let simulated { simulated.async(run) } else { queue!.async(execute: run) }
    }

    /// Runs `block` on the queue and waits; runs it in place when already on the queue (reentrant).
    public func sync<T, E: Error>(_ block: () throws(E) -> T) throws(E) -> T {
        if isCurrent { return try block() }
        var r: Result<T, E>?
        let around = self.around
        let run = {
            if let around {
                around { r = Result(catching: block) }
            } else {
                r = Result(catching: block)
            }
        }
        if let simulated { simulated.sync(run) } else { queue!.sync(execute: run) }
        return try r!.get()
    }
}
