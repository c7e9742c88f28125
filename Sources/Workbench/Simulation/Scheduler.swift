import DequeModule
import Dispatch
import Foundation
import HeapModule
import ObjectGraph

/// The discrete-event scheduler of simulated mode (Docs/simulation.md "The scheduler").
///
/// Every thread of a simulation (the runner, each actor, the workers that run queued blocks) is a
/// ``Participant``; exactly one of them runs at a time. A thread gives the baton away only at a scheduling point
/// (a `sync` on a simulated queue, a sleep, the end of a block, its own end), where it picks the earliest event
/// (a queue's head, a wake-up, a timer) and hands the baton to the thread that event belongs to. A run is
/// therefore a pure function of the code, the scenario, its seed and the cost profile.
public final class Scheduler: ExecutionSimulation, ProbeSink, @unchecked Sendable {  // all state is touched by the thread holding the baton only; handoffs go through semaphores, which order memory
    /// The scenario's seed: ties between events due at the same virtual time are broken by a rank drawn from it.
    public let seed: UInt64
    /// Nanoseconds per operation.
    public let profile: CostProfile
    /// Operations charged, in all and on the main queue.
    public private(set) var totals = OperationTotals()
    /// Lanes of pooled resources by id (``pooled(_:capacity:on:_:)``).
    private var pools: [String: [VirtualQueue]] = [:]

    private var heap = Heap<Entry>()
    private var sequence: UInt64 = 0
    private var idleWorkers: [Participant] = []
    private var workers: [Participant] = []
    private var live: [Participant] = []
    private var clockOverride: UInt64?
    private var quietWaiter: Participant?
    private var lastTime: UInt64 = 0
    private var nextWorker = 1
    /// Events run so far: a step is one block started, one thread woken or one timer tick.
    public private(set) var step = 0
    /// Told of every step, call and block end when a trace was asked for (Docs/simulation.md "Traces").
    private let tracer: (@Sendable (TraceRecord) -> Void)?
    /// Where every thread of the simulation records its Core Data calls (an operation trace, Docs/calibration.md).
    let operationRecorder: OperationTraceRecorder?

    public init(seed: UInt64, profile: CostProfile, tracer: (@Sendable (TraceRecord) -> Void)? = nil, operationRecorder: OperationTraceRecorder? = nil) {
        self.seed = seed
        self.profile = profile
        self.tracer = tracer
        self.operationRecorder = operationRecorder
    }

    /// No block takes no time (1 ns at least), so a loop of blocks always moves the clock on, even on a profile
    /// that prices everything it does at 0 (a closed-loop actor with a deadline would otherwise never reach it).
    static let shortestBlock: UInt64 = 1

    /// The step of the simulation the calling thread belongs to, nil outside one.
    public static var currentStep: Int? {
        ((ExecutionThread.current?.owner as? Participant)?.membership.simulation as? Scheduler)?.step
    }

    /// Whether the simulation's threads carry a sink: a trace or an operation trace is written.
    var listens: Bool { tracer != nil || operationRecorder != nil }

    /// Whether the app's calls are recorded with their results: an operation trace is written.
    package var recordsCalls: Bool { operationRecorder != nil }

    /// The events of the simulation's threads: the calls of the debug trace, and what the operation trace records.
    package func receive(_ event: ProbeEvent, on thread: ExecutionThread) {
        guard case .trace(let call, let detail) = event else {
            operationRecorder?.receive(event, on: thread)
            return
        }
        trace(call, detail: detail, on: thread)
    }

    private func trace(_ call: String, detail: String, on thread: ExecutionThread) {
        guard let tracer, let p = thread.owner as? Participant else { return }
        settle(p)
        tracer(TraceRecord(step: step, t: p.now, event: "call", queue: p.queueStack.last?.label, thread: p.name, call: call, detail: detail))
    }

    private var resources: [String: VirtualQueue] = [:]

    package func exclusive(_ resource: SharedResource, on thread: ExecutionThread, _ body: () -> Void) {
        let queue: VirtualQueue
        if let existing = resources[resource.id] {
            queue = existing
        } else {
            queue = VirtualQueue(label: resource.label, scheduler: self)
            resources[resource.id] = queue
        }
        sync(body, on: queue)
    }

    package func pooled(_ resource: SharedResource, capacity: Int, on thread: ExecutionThread, _ body: () -> Void) {
        precondition(capacity >= 1, "a pool has at least one lane (\(resource.label))")
        let lanes: [VirtualQueue]
        if let existing = pools[resource.id], existing.count == capacity {
            lanes = existing
        } else {
            lanes = (0..<capacity).map { VirtualQueue(label: "\(resource.label)#\($0)", scheduler: self) }
            pools[resource.id] = lanes
        }
        let p = participant("pooled \(resource.label)")
        settle(p)
        // The first lane free at the caller's time; else the one that frees first (fewest waiting, then earliest
        // free, then lowest index): a choice made from the simulation's state alone, the same on every run.
        let lane = lanes.first { !$0.busy && $0.fifo.isEmpty && $0.freeAt <= p.now }
            ?? lanes.min { ($0.fifo.count + ($0.busy ? 1 : 0), $0.freeAt) < ($1.fifo.count + ($1.busy ? 1 : 0), $1.freeAt) }!
        sync(body, on: lane)
    }

    private func traceStep(_ event: String, at time: UInt64, queue: VirtualQueue?, thread: String) {
        step += 1
        tracer?(TraceRecord(step: step, t: time, event: event, queue: queue?.label, thread: thread))
    }

    // MARK: Running

    /// Runs `body` on the calling thread as the simulation's first participant (the runner), then waits until
    /// nothing is left to do and ends the workers.
    public func run<T>(_ body: () throws -> T) rethrows -> T {
        let runner = Participant(name: "runner", simulation: self)
        live.append(runner)
        ExecutionThread.install(runner.membership)
        if listens { Probe.started() }
        defer {
            waitUntilQuiet()
            // The run is over: its workers end on real threads (what they let go then is not the run's).
            operationRecorder?.close()
            if listens { Probe.stopped() }
            for worker in workers {
                worker.terminate = true
                worker.semaphore.signal()
            }
            // Every thread of the run has ended, and let go of what it ran (the blocks and actors, and through them
            // the run's contexts and stores), before the run returns: what the next one measures is its own.
            for _ in 0..<threads { exited.wait() }
            threads = 0
            workers = []
            idleWorkers = []
            live.removeAll { $0 === runner }
            ExecutionThread.install(nil)
        }
        return try body()
    }

    /// Signalled by each spawned thread and worker as it ends (``run(_:)`` waits for them).
    private let exited = DispatchSemaphore(value: 0)
    /// Threads started (spawned and workers) that ``run(_:)`` has not seen end.
    private var threads = 0

    /// Holds a spawned thread's body until it has run, so that the thread lets go of it (and of what it
    /// captured) before it ends.
    private final class Body: @unchecked Sendable {  // set before the thread starts, taken by it once
        var run: (@Sendable () -> Void)?
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Starts `body` on a thread of its own, at the caller's virtual time.
    public func spawn(name: String, _ body: @escaping @Sendable () -> Void) {
        let start = currentTime()
        let p = Participant(name: name, simulation: self)
        p.now = start
        live.append(p)
        threads += 1
        let held = Body(body)
        let exited = self.exited
        let thread = Thread { [self] in
            defer { exited.signal() }
            ExecutionThread.install(p.membership)
            p.semaphore.wait()
            var body = held.run
            held.run = nil
            body?()
            settle(p)
            lastTime = max(lastTime, p.now)
            live.removeAll { $0 === p }
            p.state = "finished"
            ExecutionThread.install(nil)
            yield(p, exiting: true)
            // What the body held (an actor, its contexts) is let go outside the simulation, so that no count or
            // virtual time of the run includes it, and before the thread tells ``run(_:)`` it has ended.
            body = nil
        }
        thread.name = name
        thread.stackSize = 4 << 20
        push(start, .resume(p))
        thread.start()
    }

    /// Calls `action(t)` at `start`, `start + interval`, … for as long as `condition` holds at the tick. The
    /// action runs between events, at the tick's virtual time; it may queue blocks but not wait.
    public func every(_ interval: UInt64, from start: UInt64, name: String = "timer", while condition: @escaping () -> Bool, _ action: @escaping (UInt64) -> Void) {
        precondition(interval > 0, "a timer needs an interval")
        push(start, .timer(SimulationTimer(name: name, interval: interval, condition: condition, action: action)))
    }

    /// Suspends the runner until no event is left: every actor ended, every queue drained, every timer stopped.
    public func waitUntilQuiet() {
        let p = participant("waitUntilQuiet")
        settle(p)
        quietWaiter = p
        suspend(p, as: "waiting until quiet")
    }

    /// The calling participant, for a wait of its own.
    func participantForWait(_ what: String) -> Participant {
        precondition(clockOverride == nil, "a timer action may not wait")
        return participant(what)
    }

    /// Suspends `p` (the caller) until ``unpark(_:)``.
    func park(_ p: Participant) {
        settle(p)
        suspend(p, as: "waiting for a task")
    }

    /// Wakes a parked participant at the caller's current time.
    func unpark(_ p: Participant) { push(currentTime(), .resume(p)) }

    /// The virtual time of the caller (a participant, or a timer's tick).
    public func currentTime() -> UInt64 {
        if let t = clockOverride { return t }
        let p = participant("currentTime")
        settle(p)
        return p.now
    }

    // MARK: ExecutionSimulation

    package func makeQueue(label: String) -> any SimulatedQueue { VirtualQueue(label: label, scheduler: self) }

    package func nanoseconds(for op: CostedOperation) -> UInt64? { profile.cost(op) }

    package func now(on thread: ExecutionThread) -> UInt64 {
        if let t = clockOverride { return t }
        guard let p = thread.owner as? Participant, p.membership.simulation === self else { preconditionFailure("a thread of another simulation read this one's clock") }
        settle(p)
        return p.now
    }

    package func sleep(until deadline: UInt64, on thread: ExecutionThread) {
        precondition(clockOverride == nil, "a timer action may not sleep")
        guard let p = thread.owner as? Participant, p.membership.simulation === self else { preconditionFailure("a thread of another simulation slept on this one") }
        settle(p)
        push(max(deadline, p.now), .resume(p))
        suspend(p, as: "sleeping")
    }

    // MARK: Queues

    func enqueue(_ block: @escaping @Sendable () -> Void, on queue: VirtualQueue) {
        let at: UInt64
        if let t = clockOverride {
            at = t
        } else {
            // A scheduling point: whatever is due before the caller's time is queued first, so a queue's FIFO
            // holds its items in the order of their virtual enqueue times.
            let p = participant("async on \(queue.label)")
            rejoin(p)
            at = p.now
        }
        append(.async(block), at: at, to: queue)
    }

    func sync(_ block: () -> Void, on queue: VirtualQueue) {
        precondition(clockOverride == nil, "a timer action may not wait for a queue (\(queue.label))")
        let p = participant("sync on \(queue.label)")
        precondition(!p.queueStack.contains { $0 === queue }, "deadlock: performAndWait on \(queue.label) from inside a block of that queue, below another queue's block")
        settle(p)
        let requested = p.now
        append(.sync(p), at: requested, to: queue)
        suspend(p, as: "waiting for \(queue.label)")
        // The caller's queue was blocked while it waited (a main-queue block waiting for a coordinator).
        if let outer = p.queueStack.last { outer.blockedNanos += p.now - requested }
        p.queueStack.append(queue)
        // No blockRun: GCD runs a sync block on the caller's own thread (no hop, no wake-up).
        block()
        endBlock(of: queue, by: p)
        rejoin(p)
    }

    /// Queues `kind` on `queue` at `at`; an idle queue whose FIFO was empty now has a head to schedule.
    private func append(_ kind: Item.Kind, at: UInt64, to queue: VirtualQueue) {
        sequence += 1
        queue.fifo.append(Item(kind: kind, at: at, seq: sequence))
        if !queue.busy && queue.fifo.count == 1 { pushHead(of: queue) }
    }

    /// A scheduling point for `p`: it goes on at its own (settled) time once whatever is due earlier has run.
    private func rejoin(_ p: Participant) {
        settle(p)
        push(p.now, .resume(p))
        yield(p)
    }

    /// Waits for an event of `p` that someone else pushes, saying what it waits for (deadlock reports).
    private func suspend(_ p: Participant, as state: String) {
        p.state = state
        yield(p)
        p.state = "running"
    }

    /// Ends `p`'s block of `queue` (its innermost): charges its operations, at least ``shortestBlock``, and frees
    /// the queue.
    private func endBlock(of queue: VirtualQueue, by p: Participant) {
        settle(p)
        p.now = max(p.now, queue.startedAt + Self.shortestBlock)
        p.queueStack.removeLast()
        finish(queue, at: p.now)
    }

    private func finish(_ queue: VirtualQueue, at end: UInt64) {
        if let tracer {
            tracer(TraceRecord(step: step, t: end, event: "end", queue: queue.label, thread: nil, ops: queue.traceOps.isEmpty ? nil : queue.traceOps))
            queue.traceOps = [:]
        }
        queue.busyNanos += end - queue.startedAt
        queue.busyByKind[queue.kind ?? "other", default: 0] += end - queue.startedAt
        queue.lastKind = queue.kind
        queue.kind = nil
        queue.longestBlock = max(queue.longestBlock, end - queue.startedAt)
        queue.blocks += 1
        queue.freeAt = end
        queue.busy = false
        lastTime = max(lastTime, end)
        if !queue.fifo.isEmpty { pushHead(of: queue) }
    }

    private func pushHead(of queue: VirtualQueue) {
        let head = queue.fifo.first!
        heap.insert(Entry(time: max(head.at, queue.freeAt), rank: rank(head.seq), seq: head.seq, event: .queue(queue)))
    }

    private func push(_ time: UInt64, _ event: Event) {
        sequence += 1
        heap.insert(Entry(time: time, rank: rank(sequence), seq: sequence, event: event))
    }

    /// The tie-breaking rank of an event: SplitMix64 of the seed and the event's sequence number.
    private func rank(_ seq: UInt64) -> UInt64 {
        var z = (seed ^ seq) &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    // MARK: The baton

    private func participant(_ what: String) -> Participant {
        guard let p = ExecutionThread.current?.owner as? Participant, p.membership.simulation === self else {
            preconditionFailure("\(what): a simulated queue or clock was used from a thread outside its simulation")
        }
        return p
    }

    /// Charges the operations `p` counted since the last call to its clock, at the profile's costs.
    func settle(_ p: Participant) {
        // Work inside a main-queue block counts as the main queue's even when it runs inside a performAndWait on
        // another queue: GCD runs a sync block on the caller's thread, so the main thread does it.
        let onMain = p.queueStack.contains { $0.isMain }
        var cost: UInt64 = 0
        for i in 0..<CostedOperation.count {
            let n = p.membership.counts[i]
            guard n != 0 else { continue }
            p.membership.counts[i] = 0
            if tracer != nil, let queue = p.queueStack.last { queue.traceOps[CostedOperation.names[i], default: 0] += n }
            cost &+= UInt64(n) &* profile.nanos[i]
            if operationRecorder != nil { p.charge(i, n) }
            totals.all[i] += n
            if onMain { totals.main[i] += n }
        }
        for k in 0..<StatementKind.count {
            let n = p.membership.statementCounts[k]
            guard n != 0 else { continue }
            p.membership.statementCounts[k] = 0
            totals.statementsAll[k] += n
            if operationRecorder != nil { p.charge(CostedOperation.count + k, n) }
            if onMain { totals.statementsMain[k] += n }
        }
        p.now &+= cost
    }

    /// Gives the baton to the owner of the earliest event; returns when an event of `me` is picked (at once when
    /// it is the earliest). An exiting thread hands the baton on and does not wait.
    private func yield(_ me: Participant, exiting: Bool = false) {
        if let operationRecorder, !exiting { operationRecorder.schedulingPoint(me.membership) }
        while true {
            guard let entry = heap.popMin() else {
                if let waiter = quietWaiter {
                    quietWaiter = nil
                    waiter.now = max(waiter.now, lastTime)
                    if waiter === me { return }
                    return handOff(to: waiter, from: me, exiting: exiting)
                }
                fatalError(deadlockReport())
            }
            lastTime = max(lastTime, entry.time)
            switch entry.event {
            case .timer(let timer):
                traceStep("tick", at: entry.time, queue: nil, thread: timer.name)
                clockOverride = entry.time
                let goOn = timer.condition()
                if goOn { timer.action(entry.time) }
                clockOverride = nil
                if goOn { push(entry.time + timer.interval, .timer(timer)) }
            case .resume(let p):
                traceStep("wake", at: entry.time, queue: p.queueStack.last, thread: p.name)
                p.now = max(p.now, entry.time)
                if p === me { return }
                return handOff(to: p, from: me, exiting: exiting)
            case .queue(let queue):
                let item = queue.fifo.removeFirst()
                queue.busy = true
                queue.startedAt = entry.time
                switch item.kind {
                case .sync(let p):
                    traceStep("sync", at: entry.time, queue: queue, thread: p.name)
                    p.now = entry.time
                    if p === me { return }
                    return handOff(to: p, from: me, exiting: exiting)
                case .async(let block):
                    let worker: Participant
                    if me.idle {
                        worker = me
                        idleWorkers.removeAll { $0 === me }
                    } else if let w = idleWorkers.popLast() {
                        worker = w
                    } else {
                        worker = makeWorker()
                    }
                    worker.idle = false
                    traceStep("block", at: entry.time, queue: queue, thread: worker.name)
                    worker.now = entry.time
                    worker.assignment = (queue, block)
                    if worker === me { return }
                    return handOff(to: worker, from: me, exiting: exiting)
                }
            }
        }
    }

    private func handOff(to p: Participant, from me: Participant, exiting: Bool) {
        p.semaphore.signal()
        if !exiting { me.semaphore.wait() }
    }

    private func makeWorker() -> Participant {
        let w = Participant(name: "worker-\(nextWorker)", simulation: self)
        nextWorker += 1
        workers.append(w)
        threads += 1
        let exited = self.exited
        let thread = Thread { [self] in
            defer { exited.signal() }
            ExecutionThread.install(w.membership)
            w.semaphore.wait()
            while !w.terminate {
                // The block is let go before the worker idles: an idle worker holds nothing of the run.
                do {
                    guard let (queue, block) = w.assignment else { preconditionFailure("a worker woke with nothing to run") }
                    w.assignment = nil
                    w.state = "running a block of \(queue.label)"
                    w.queueStack = [queue]
                    w.membership.counts[CostedOperation.blockRun.rawValue] += 1
                    block()
                    endBlock(of: queue, by: w)
                }
                w.state = "idle"
                w.idle = true
                idleWorkers.append(w)
                yield(w)
            }
            ExecutionThread.install(nil)
        }
        thread.name = w.name
        thread.stackSize = 4 << 20
        thread.start()
        return w
    }

    private func deadlockReport() -> String {
        let waiting = (live + workers.filter { !$0.idle }).map { "\($0.name): \($0.state)" }.joined(separator: "; ")
        return "simulation deadlock: no event is left while threads wait (\(waiting)). A real app would hang here too."
    }
}

/// A thread of a simulation.
final class Participant: @unchecked Sendable {  // touched by the baton holder only
    let name: String
    /// Its membership of the simulation: the operations it counted and not yet charged, and where its events go.
    let membership: ExecutionThread
    let semaphore = DispatchSemaphore(value: 0)
    /// Virtual nanoseconds.
    var now: UInt64 = 0
    /// The queues whose blocks this thread is inside, innermost last.
    var queueStack: [VirtualQueue] = []
    var idle = false
    var terminate = false
    var assignment: (VirtualQueue, @Sendable () -> Void)?
    var state = "running"
    /// Everything charged so far, operations by raw value then statements by kind (kept only while an operation
    /// trace is written: a call's record gets what its thread counted while it ran).
    private(set) var charged: [Int] = []

    func charge(_ index: Int, _ n: Int) {
        if charged.isEmpty { charged = Array(repeating: 0, count: CostedOperation.count + StatementKind.count) }
        charged[index] += n
    }

    init(name: String, simulation: Scheduler) {
        self.name = name
        membership = ExecutionThread(simulation: simulation)
        membership.owner = self
        if simulation.listens { membership.sink = simulation }
    }
}

/// A serial queue of the scheduler: a FIFO and the virtual time it is free again.
final class VirtualQueue: SimulatedQueue, @unchecked Sendable {  // touched by the baton holder only
    let label: String
    let scheduler: Scheduler
    var fifo = Deque<Item>()
    var busy = false
    var freeAt: UInt64 = 0
    var startedAt: UInt64 = 0
    /// The main queue: its operations are counted apart.
    var isMain = false
    /// Virtual time spent running blocks, and waiting inside them for other queues.
    var busyNanos: UInt64 = 0
    /// What the running block does (set from inside it), and busy time by it.
    var kind: String?
    /// What the last block to end did (its `kind`): it holds the queue until `freeAt`.
    var lastKind: String?
    var busyByKind: [String: UInt64] = [:]
    var blockedNanos: UInt64 = 0
    /// The longest block run, and how many ran.
    var longestBlock: UInt64 = 0
    var blocks = 0
    /// Operations of the running block, for the trace.
    var traceOps: [String: Int] = [:]

    init(label: String, scheduler: Scheduler) {
        self.label = label
        self.scheduler = scheduler
    }

    func async(_ block: @escaping @Sendable () -> Void) { scheduler.enqueue(block, on: self) }
    func sync(_ block: () -> Void) { scheduler.sync(block, on: self) }
    var isCurrent: Bool {
        guard let p = ExecutionThread.current?.owner as? Participant, p.membership.simulation === scheduler else { return false }
        return p.queueStack.last === self
    }
}

struct Item {
    enum Kind {
        case async(@Sendable () -> Void)
        case sync(Participant)
    }
    let kind: Kind
    let at: UInt64
    let seq: UInt64
}

final class SimulationTimer {
    let name: String
    let interval: UInt64
    let condition: () -> Bool
    let action: (UInt64) -> Void
    init(name: String, interval: UInt64, condition: @escaping () -> Bool, action: @escaping (UInt64) -> Void) {
        self.name = name
        self.interval = interval
        self.condition = condition
        self.action = action
    }
}

enum Event {
    case queue(VirtualQueue)
    case resume(Participant)
    case timer(SimulationTimer)
}

struct Entry: Comparable {
    let time: UInt64
    let rank: UInt64
    let seq: UInt64
    let event: Event
    static func < (a: Entry, b: Entry) -> Bool { (a.time, a.rank, a.seq) < (b.time, b.rank, b.seq) }
    static func == (a: Entry, b: Entry) -> Bool { a.seq == b.seq && a.time == b.time && a.rank == b.rank }
}

/// Operation counts charged by a simulation: in all, and on the main queue.
public struct OperationTotals: Sendable, Equatable {
    /// Counts by ``CostedOperation`` raw value: on every queue, and on the main queue.
    public var all = [Int](repeating: 0, count: CostedOperation.count)
    public var main = [Int](repeating: 0, count: CostedOperation.count)
    /// SQL statements by ``StatementKind`` raw value: on every queue, and on the main queue.
    public var statementsAll = [Int](repeating: 0, count: StatementKind.count)
    public var statementsMain = [Int](repeating: 0, count: StatementKind.count)
}

/// One line of a trace: `trace.jsonl`, format version 1 (Docs/simulation.md "Traces"). Events: `block` (a queued
/// block starts on a worker), `sync` (a performAndWait starts), `wake` (a sleeping or rejoining thread runs on),
/// `tick` (a timer: frames, samples), `call` (a Core Data call: save, fetch, merge, reset), `end` (a block ends,
/// with the operations it performed).
public struct TraceRecord: Sendable, Codable, Equatable {
    public var step: Int
    /// Virtual nanoseconds.
    public var t: UInt64
    public var event: String
    public var queue: String?
    public var thread: String?
    public var call: String?
    public var detail: String?
    public var ops: [String: Int]?

    public init(step: Int, t: UInt64, event: String, queue: String?, thread: String?, call: String? = nil, detail: String? = nil, ops: [String: Int]? = nil) {
        self.step = step
        self.t = t
        self.event = event
        self.queue = queue
        self.thread = thread
        self.call = call
        self.detail = detail
        self.ops = ops
    }

    /// The trace's version, written in its header line.
    public static let formatVersion = 1

    /// One human line: step, virtual time in ms, queue, thread, what happened.
    public var text: String {
        let time = String(format: "%10.3f ms", Double(t) / 1e6)
        var line = "step \(step)\t\(time)\t\(queue ?? "-")\t\(thread ?? "-")\t\(event)"
        if let call { line += " \(call)" }
        if let detail { line += ": \(detail)" }
        if let ops { line += " [" + ops.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + "]" }
        return line
    }
}
