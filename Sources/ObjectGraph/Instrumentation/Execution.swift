import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A simulated serial queue, provided by an ``ExecutionSimulation`` in place of a dispatch queue.
package protocol SimulatedQueue: AnyObject, Sendable {
    /// Queues `block` at the caller's current time.
    func async(_ block: @escaping @Sendable () -> Void)
    /// Runs `block` on the queue once every item queued before it ran; the caller waits (in virtual time).
    func sync(_ block: () -> Void)
    /// Whether the calling thread runs a block of this queue (innermost, as GCD's queue-specific keys).
    var isCurrent: Bool { get }
}

/// A simulation that runs a set of threads one at a time on a virtual clock (a scheduler owns the clock and picks
/// the thread).
package protocol ExecutionSimulation: AnyObject, Sendable {
    /// A serial queue of this simulation.
    func makeQueue(label: String) -> any SimulatedQueue
    /// The virtual time of `thread`, in nanoseconds, with the operations it counted so far charged.
    func now(on thread: ExecutionThread) -> UInt64
    /// Suspends `thread` until the virtual time `deadline`.
    func sleep(until deadline: UInt64, on thread: ExecutionThread)
    /// Runs `body` holding the named resource (SQLite's one writer per file): in virtual time, after every holder
    /// that asked before.
    func exclusive(_ resource: SharedResource, on thread: ExecutionThread, _ body: () -> Void)
    /// Runs `body` holding one of `capacity` lanes of the named resource (a coordinator's reader connections): it
    /// waits in virtual time only when every lane is taken.
    func pooled(_ resource: SharedResource, capacity: Int, on thread: ExecutionThread, _ body: () -> Void)
    /// The price of one `op` on the simulated device, in nanoseconds; nil when the simulation has no prices.
    func nanoseconds(for op: CostedOperation) -> UInt64?
}

extension ExecutionSimulation {
    package func nanoseconds(for op: CostedOperation) -> UInt64? { nil }
}

/// Something one thread at a time may hold across queues (SQLite's one writer per file).
package struct SharedResource: Sendable {
    /// What makes two holders wait for each other (a store file's path).
    package var id: String
    /// What traces and reports call it: stable from run to run (no temporary paths).
    package var label: String

    package init(id: String, label: String) {
        self.id = id
        self.label = label
    }
}

/// A thread's membership of a simulation, and where what the library reports on it goes (``Probe``): the
/// operations it counted since the simulation last charged them, and the sink of its events.
///
/// A simulation installs one on each of its threads (``install(_:)``); queues made on such a thread belong to the
/// simulation, and ``Execution/now()`` reads its virtual clock.
package final class ExecutionThread: @unchecked Sendable {  // counts are touched by the owning thread only, or by the simulation while that thread is suspended
    package let simulation: any ExecutionSimulation
    /// False for a thread that only counts operations (real mode's calibration): its queues stay dispatch queues
    /// and its clock the wall clock.
    package let isSimulated: Bool
    /// Counts by ``CostedOperation`` raw value, accumulated here and charged by the simulation in batches.
    package let counts: UnsafeMutablePointer<Int>
    /// SQL statements by ``StatementKind`` raw value (a breakdown of ``CostedOperation/sqlStatement``'s count).
    package let statementCounts: UnsafeMutablePointer<Int>
    /// Where this thread's events go (an operation trace or a debug trace is being written), nil otherwise.
    package var sink: (any ProbeSink)?
    /// How deep in the library's calls the thread is: only calls at depth 0 are the app's own.
    package var recordingDepth = 0
    /// The simulation's own object for this thread, found from the thread.
    package weak var owner: AnyObject?

    package init(simulation: any ExecutionSimulation, isSimulated: Bool = true) {
        self.simulation = simulation
        self.isSimulated = isSimulated
        counts = .allocate(capacity: CostedOperation.count)
        counts.initialize(repeating: 0, count: CostedOperation.count)
        statementCounts = .allocate(capacity: StatementKind.count)
        statementCounts.initialize(repeating: 0, count: StatementKind.count)
    }

    deinit {
        counts.deallocate()
        statementCounts.deallocate()
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            Unmanaged<ExecutionThread>.fromOpaque(UnsafeMutableRawPointer(pointer)!).release()
        }
        return key
    }()

    /// The calling thread's membership, nil outside any simulation.
    package static var current: ExecutionThread? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<ExecutionThread>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Makes `thread` the calling thread's membership (nil: none).
    package static func install(_ thread: ExecutionThread?) {
        if let old = pthread_getspecific(key) { Unmanaged<ExecutionThread>.fromOpaque(old).release() }
        pthread_setspecific(key, thread.map { Unmanaged.passRetained($0).toOpaque() })
    }
}

extension ExecutionThread {
    /// A membership that only counts operations (real mode's calibration, tests that count what a call does): its
    /// queues stay dispatch queues and its clock the wall clock.
    package static func countingOnly() -> ExecutionThread { ExecutionThread(simulation: CountingOnlySimulation.shared, isSimulated: false) }
}

/// The simulation of a thread that only counts: never asked anything, since such a thread is not simulated
/// (``ExecutionThread/isSimulated``).
final class CountingOnlySimulation: ExecutionSimulation {
    static let shared = CountingOnlySimulation()
    func makeQueue(label: String) -> any SimulatedQueue { preconditionFailure("a counting thread makes dispatch queues") }
    func now(on thread: ExecutionThread) -> UInt64 { preconditionFailure("a counting thread reads the wall clock") }
    func sleep(until deadline: UInt64, on thread: ExecutionThread) { preconditionFailure("a counting thread sleeps for real") }
    func exclusive(_ resource: SharedResource, on thread: ExecutionThread, _ body: () -> Void) { preconditionFailure("a counting thread uses SQLite's own locks") }
    func pooled(_ resource: SharedResource, capacity: Int, on thread: ExecutionThread, _ body: () -> Void) { preconditionFailure("a counting thread uses its coordinator's queue") }
}

/// Time and operation counting for the library: wall-clock time in real mode, virtual time inside a simulation.
package enum Execution {
    /// The price of one `op` in nanoseconds: the running simulation's (its cost profile's), else the first
    /// estimate. For a choice between two ways of doing the same work (a controller's bulk query or its faults).
    package static func price(_ op: CostedOperation) -> UInt64 {
        ExecutionThread.current?.simulation.nanoseconds(for: op) ?? op.estimatedNanoseconds
    }

    /// Runs `body` holding `resource`. Inside a simulation, holders of one resource follow each other in virtual
    /// time (SQLite's single writer on a file, whichever coordinator writes); in real mode SQLite's own locking
    /// does this, and `body` just runs.
    package static func exclusive<T>(_ resource: @autoclosure () -> SharedResource, _ body: () throws -> T) throws -> T {
        guard let thread = ExecutionThread.current, thread.isSimulated else { return try body() }
        var result: Result<T, any Error>?
        thread.simulation.exclusive(resource(), on: thread) { result = Result { try body() } }
        return try result!.get()
    }

    /// Runs `body` holding one of `capacity` lanes of `resource` (semantics §8 "Connection pool": readers that
    /// overlap). Inside a simulation, holders wait in virtual time only when every lane is held; in real mode
    /// `body` just runs.
    package static func pooled<T>(_ resource: @autoclosure () -> SharedResource, capacity: Int, _ body: () throws -> T) throws -> T {
        guard let thread = ExecutionThread.current, thread.isSimulated else { return try body() }
        var result: Result<T, any Error>?
        thread.simulation.pooled(resource(), capacity: capacity, on: thread) { result = Result { try body() } }
        return try result!.get()
    }

    /// Whether the calling thread runs inside a simulation (virtual time).
    package static var isSimulated: Bool { ExecutionThread.current?.isSimulated ?? false }

    /// Monotonic nanoseconds: uptime in real mode, the calling thread's virtual time inside a simulation.
    package static func now() -> UInt64 {
        if let thread = ExecutionThread.current, thread.isSimulated { return thread.simulation.now(on: thread) }
        return DispatchTime.now().uptimeNanoseconds
    }

    /// The calendar date for a record that carries one (a history transaction's timestamp): the wall clock in real
    /// mode; inside a simulation, ``simulatedDate(_:)`` of the calling thread's virtual time, so a run's dates
    /// are the same every run of its seed.
    package static func date() -> Date {
        if let thread = ExecutionThread.current, thread.isSimulated { return simulatedDate(thread.simulation.now(on: thread)) }
        return Date()
    }

    /// The date a simulation gives virtual time `nanoseconds`: the reference date (2001-01-01 00:00:00 UTC) plus
    /// that time, a run starting at the reference date.
    package static func simulatedDate(_ nanoseconds: UInt64) -> Date {
        Date(timeIntervalSinceReferenceDate: Double(nanoseconds) / 1_000_000_000)
    }

    /// Waits until `deadline` (a value of ``now()``): virtually inside a simulation, else by sleeping.
    package static func sleep(until deadline: UInt64) {
        if let thread = ExecutionThread.current, thread.isSimulated { return thread.simulation.sleep(until: deadline, on: thread) }
        let now = DispatchTime.now().uptimeNanoseconds
        guard deadline > now else { return }
        var ts = timespec(tv_sec: Int((deadline - now) / 1_000_000_000), tv_nsec: Int((deadline - now) % 1_000_000_000))
        nanosleep(&ts, nil)
    }
}
