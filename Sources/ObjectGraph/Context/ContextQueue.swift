import Dispatch
import Foundation
import Synchronization

/// The serial queue a context runs its blocks on.
///
/// A `.privateQueue` context owns one. `.mainQueue` contexts share ``ContextQueue/main``, which on Linux only
/// runs while the main thread services `DispatchQueue.main` (`dispatchMain()`, a run loop or an async `main`).
/// Programs without one (tests, the workbench) install their own main queue with ``ContextQueue/setMain(_:)``
/// or pass one to the context, for example a queue whose ``around`` hook times every block.
public final class ContextQueue: @unchecked Sendable {  // immutable after init
    /// A name for debugging.
    public let label: String
    let queue: DispatchQueue
    private let marker: Int
    private let isDispatchMain: Bool
    /// Wraps every block the queue runs (both `async` and `sync`), for instrumentation.
    public let around: (@Sendable (_ block: () -> Void) -> Void)?
    /// Told each time a block is queued with ``async(_:)`` (for queue-depth measurement).
    public let willEnqueue: (@Sendable () -> Void)?

    private static let key = DispatchSpecificKey<Int>()
    private static let nextMarker = Atomic<Int>(1)

    /// A new serial queue.
    /// - Parameters:
    ///   - label: the queue's name.
    ///   - around: a hook that runs each block (it must call the block exactly once).
    public convenience init(label: String, around: (@Sendable (_ block: () -> Void) -> Void)? = nil, willEnqueue: (@Sendable () -> Void)? = nil) {
        self.init(queue: DispatchQueue(label: label), label: label, isMain: false, around: around, willEnqueue: willEnqueue)
    }

    private init(queue: DispatchQueue, label: String, isMain: Bool, around: (@Sendable (_ block: () -> Void) -> Void)?, willEnqueue: (@Sendable () -> Void)? = nil) {
        self.queue = queue
        self.label = label
        self.isDispatchMain = isMain
        self.around = around
        self.willEnqueue = willEnqueue
        self.marker = Self.nextMarker.add(1, ordering: .relaxed).newValue
        queue.setSpecific(key: Self.key, value: marker)
    }

    /// `DispatchQueue.main`, used by `.mainQueue` contexts unless another main queue is installed.
    public static let dispatchMain = ContextQueue(queue: .main, label: "main", isMain: true, around: nil)

    private static let installedMain = Mutex<ContextQueue?>(nil)

    /// The queue new `.mainQueue` contexts use.
    public static var main: ContextQueue { installedMain.withLock { $0 } ?? dispatchMain }

    /// Installs the queue that new `.mainQueue` contexts use (nil restores `DispatchQueue.main`).
    public static func setMain(_ queue: ContextQueue?) { installedMain.withLock { $0 = queue } }

    /// Whether the calling code runs on this queue.
    public var isCurrent: Bool {
        if DispatchQueue.getSpecific(key: Self.key) == marker { return true }
        return isDispatchMain && Thread.isMainThread
    }

    /// Runs `block` later on the queue.
    public func async(_ block: @escaping @Sendable () -> Void) {
        willEnqueue?()
        if let around {
            queue.async { around(block) }
        } else {
            queue.async(execute: block)
        }
    }

    /// Runs `block` on the queue and waits; runs it in place when already on the queue (reentrant).
    public func sync<T, E: Error>(_ block: () throws(E) -> T) throws(E) -> T {
        if isCurrent { return try block() }
        let result: Result<T, E> = queue.sync {
            var r: Result<T, E>?
            if let around {
                around { r = Result(catching: block) }
            } else {
                r = Result(catching: block)
            }
            return r!
        }
        return try result.get()
    }
}
