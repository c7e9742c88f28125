import Dispatch
import Foundation
import ObjectGraph
import Synchronization

/// What a main-queue block did, for `mainBusy` by kind: the first mark a block makes names it.
public enum MainBlockKind: String, CaseIterable, Sendable {
    /// A merge of another context's save (did-save, remote change, history, batch IDs).
    case merge
    /// A child context's save pushed into the main-queue context.
    case push
    /// The main-queue context's own save.
    case save
    /// A fetch on the main queue: the viewer's controller, or a child context's fetch or fault read through the
    /// view context.
    case fetch
    /// A display frame reading the visible objects.
    case frame
    /// Anything else (setup, reads by the harness).
    case other
}

/// The simulated main thread (workbench.md, architecture.md "Threading"): one serial queue runs every
/// main-queue block and a frame clock; each block's wall and thread-CPU time and the queue's depth are recorded.
public final class SimulatedMainThread: Sendable {
    /// The queue to give `.mainQueue` contexts.
    public let queue: ContextQueue
    let stats: Stats
    /// Simulated mode: the display link (``scheduleFrames(on:rate:from:until:work:)``).
    let display = DisplayClock()

    final class Stats: Sendable {
        let blocks = LatencyRecorder()
        let mergeBusy = LatencyRecorder()
        let mergeBusyCPU = LatencyRecorder()
        let frameLateness = LatencyRecorder()
        struct State {
            var depth = 0
            var maxDepth = 0
            var hangs = 0
            var longTasks = 0
            /// Hitch time in ms against a 60 Hz and a 120 Hz display (``hitchTime(intended:end:refresh:)``).
            var hitch60 = 0.0
            var hitch120 = 0.0
            var frames = 0
            /// Display-link ticks skipped because the previous frame had not started (both modes: ``displayTick``).
            var framesMissed = 0
            var framePending = false
            var busyNanos: UInt64 = 0
            /// Real mode: wall time by ``MainBlockKind`` raw value.
            var busyByKind: [String: UInt64] = [:]
            var blockKind: MainBlockKind?
            /// Nested stacks: a child's push is the merge (the `mainBusy` percentiles count it as one).
            var pushIsMerge = false
        }
        let state = Mutex(State())
        /// Real mode, when asked: each main-queue block's operation counts and wall nanoseconds (calibration).
        let blockSamples = Mutex<[([Int], UInt64)]>([])
    }

    /// - Parameter countsOperations: real mode only: count each block's operations beside its wall time
    ///   (``Calibration`` fits a profile to them).
    public init(label: String = "simulated-main", countsOperations: Bool = false) {
        let stats = Stats()
        self.stats = stats
        let display = self.display
        let counting = countsOperations && ExecutionThread.current == nil
        queue = ContextQueue(label: label, around: { block in
            stats.state.withLock { $0.depth = max(0, $0.depth - 1); $0.blockKind = nil }
            let counter = counting ? ExecutionThread.countingOnly() : nil
            if let counter {
                ExecutionThread.install(counter)
                counter.counts[CostedOperation.blockRun.rawValue] = 1
            }
            let wall0 = Clock.now(), cpu0 = Clock.threadCPU()
            block()
            let wall = Clock.now() - wall0, cpu = Clock.threadCPU() - cpu0
            if let counter {
                ExecutionThread.install(nil)
                let counts = (0..<CostedOperation.allCases.count).map { counter.counts[$0] }
                stats.blockSamples.withLock { if $0.count < 100_000 { $0.append((counts, wall)) } }
            }
            stats.blocks.record(nanoseconds: wall)
            let isMerge = stats.state.withLock { s -> Bool in
                if wall > 250_000_000 { s.hangs += 1 }
                if wall > 50_000_000 { s.longTasks += 1 }
                s.busyNanos += wall
                let kind = s.blockKind ?? .other
                s.busyByKind[kind.rawValue, default: 0] += wall
                return kind == .merge || (kind == .push && s.pushIsMerge)
            }
            if isMerge {
                stats.mergeBusy.record(nanoseconds: wall)
                stats.mergeBusyCPU.record(nanoseconds: cpu)
            }
        }, willEnqueue: {
            stats.state.withLock { $0.depth += 1; $0.maxDepth = max($0.maxDepth, $0.depth) }
            display.blockQueued()
        })
    }

    /// Names what the running main-queue block does (called from inside it); the block's first mark wins.
    func mark(_ kind: MainBlockKind) {
        stats.state.withLock { if $0.blockKind == nil { $0.blockKind = kind } }
        if let virtual = queue.simulatedQueue as? VirtualQueue, virtual.isCurrent, virtual.kind == nil { virtual.kind = kind.rawValue }
    }

    /// Nested stacks: count child pushes as the merges they are (`mainBusy` percentiles, `mainBusyCPU`).
    func countPushesAsMerges() { stats.state.withLock { $0.pushIsMerge = true } }

    var depth: Int { stats.state.withLock { $0.depth } }

    /// Waits for every block queued so far.
    public func drain() { queue.sync {} }

    /// Simulated mode: a display link at `rate` Hz on a grid from `start` (``displayTick``), in place of the one
    /// running. It ticks until `stop` says so and no main-queue work but a frame is queued or running; a block
    /// queued after it stopped starts it again at the grid's next tick (``DisplayClock``), until ``endFrames()``.
    func scheduleFrames(on scheduler: Scheduler, rate: Int, from start: UInt64, until stop: @escaping @Sendable () -> Bool, work: @escaping @Sendable () -> Void) {
        display.scheduler = scheduler
        display.interval = UInt64(1_000_000_000 / rate)
        display.origin = start
        display.phaseEnded = stop
        display.hasWork = { [unowned self] now in self.hasWork(besideFramesAt: now) }
        display.tick = { [unowned self] intended in self.displayTick(intended: intended, rate: rate, work: work) }
        display.start(at: start)
    }

    /// Simulated mode: the scenario is over; blocks queued from now on (the harness's) start no frames, and the
    /// display link lets go of its phase's frame work (which holds the viewer, and through it the whole stack).
    func endFrames() { display.end() }

    /// Simulated mode: whether a main-queue block other than a frame is queued, waiting for the queue
    /// (a `performAndWait`) or running at virtual time `now` (waiting inside it for another queue included).
    private func hasWork(besideFramesAt now: UInt64) -> Bool {
        guard let virtual = queue.simulatedQueue as? VirtualQueue else { return false }
        let frame = MainBlockKind.frame.rawValue
        // A frame block is queued exactly while `framePending` holds (set when queued, cleared when it starts).
        let framePending = stats.state.withLock { $0.framePending }
        if virtual.fifo.count > (framePending ? 1 : 0) { return true }
        if virtual.busy { return virtual.kind != frame }
        // A block runs to its end between two scheduling points: the one that ended last holds the queue until
        // `freeAt` in virtual time.
        return virtual.freeAt > now && virtual.lastKind != frame
    }

    /// Real mode: a display link at `rate` Hz on a thread of its own until `stop` says so (``displayTick``). Ticks
    /// stay on the grid of the first one; ticks the clock thread itself slept through (a loaded machine) are missed
    /// frames only if a frame was pending then, and queue nothing.
    func runFrames(rate: Int, until stop: @escaping @Sendable () -> Bool, work: @escaping @Sendable () -> Void) -> Thread {
        let interval = UInt64(1_000_000_000 / rate)
        let thread = Thread {
            var tick = Clock.now()
            while !stop() {
                self.displayTick(intended: tick, rate: rate, work: work)
                tick += interval
                Clock.sleep(until: tick)
                let now = Clock.now()
                while now >= tick + interval {
                    self.displayTick(intended: tick, rate: rate, mayQueue: false, work: work)
                    tick += interval
                }
            }
        }
        thread.name = "frame-clock"
        thread.start()
        return thread
    }

    /// One display-link tick, the same in both modes. Ticks coalesce as a display link's do: a
    /// tick whose previous frame block has not started yet is a *missed frame* and queues nothing, so a block of
    /// T ms delays the one frame behind it, which then carries the lateness once (not once per queued frame).
    func displayTick(intended: UInt64, rate: Int, mayQueue: Bool = true, work: @escaping @Sendable () -> Void) {
        let stats = self.stats
        let queues = stats.state.withLock { s -> Bool in
            if s.framePending { s.framesMissed += 1; return false }
            if !mayQueue { return false }
            s.framePending = true
            return true
        }
        guard queues else { return }
        queue.async {
            stats.state.withLock { $0.framePending = false }
            self.frame(intended: intended, work: work)
        }
    }

    private func frame(intended: UInt64, work: () -> Void) {
        mark(.frame)
        work()
        let end = Clock.now()
        stats.frameLateness.record(nanoseconds: end > intended ? end - intended : 0)
        stats.state.withLock { s in
            s.frames += 1
            s.hitch60 += Self.hitchTime(intended: intended, end: end, refresh: 1_000_000_000 / 60)
            s.hitch120 += Self.hitchTime(intended: intended, end: end, refresh: 1_000_000_000 / 120)
        }
    }

    /// A frame's hitch time in ms on a display refreshing every `refresh` ns, as Apple's hitch-time ratio counts it:
    /// a frame begun at its tick `intended` is due on screen at the next refresh
    /// (`intended + refresh`, its deadline); one that ends later shows at the first refresh at or after its end,
    /// and the refreshes between its deadline and that one are its hitch time. Ticks stay on the refresh grid, so
    /// that is `ceil((end − deadline) / refresh)` refreshes. The ratio is the total over the run's seconds.
    static func hitchTime(intended: UInt64, end: UInt64, refresh: UInt64) -> Double {
        let deadline = intended + refresh
        guard end > deadline else { return 0 }
        let refreshes = (end - deadline + refresh - 1) / refresh
        return Double(refreshes * refresh) / 1e6
    }
}

/// The simulated display link (workbench.md "frames"): a timer on a grid of `interval` from `origin` that ticks
/// while its phase goes on and, once the phase's actors are done, while main-queue work other than a frame is queued
/// or running, so that a merge or a refetch that lands after the phase's last tick still meets the frame clock.
/// When it has stopped, the next block queued on the main queue starts it again at the grid's next tick: every
/// main-queue block of the scenario runs under the display link, as on a device, whose display refreshes until the
/// app ends. Ticks at which the main queue is idle and nothing is left to do are not taken (they would draw a frame
/// on time: no missed frame, no hitch).
final class DisplayClock: @unchecked Sendable {  // simulated mode: touched by the simulation's baton holder only
    var scheduler: Scheduler?
    var interval: UInt64 = 1
    var origin: UInt64 = 0
    var phaseEnded: @Sendable () -> Bool = { true }
    /// Whether main-queue work other than a frame is queued or running at a virtual time.
    var hasWork: (UInt64) -> Bool = { _ in false }
    var tick: (UInt64) -> Void = { _ in }
    /// The running timer's number: a timer of an older one stops at its next tick.
    private var generation = 0
    /// Whether a timer of the current generation is scheduled.
    private var ticking = false

    /// Starts a timer at `time` in place of the running one.
    func start(at time: UInt64) {
        guard let scheduler else { return }
        generation += 1
        ticking = true
        let current = generation
        scheduler.every(interval, from: time, name: "display-link", while: { [self] in goesOn(current) }) { [self] in tick($0) }
    }

    private func goesOn(_ timer: Int) -> Bool {
        guard timer == generation, let scheduler else { return false }
        // A timer's condition runs at its tick's virtual time (on whichever thread holds the baton).
        if !phaseEnded() || hasWork(scheduler.currentTime()) { return true }
        ticking = false
        return false
    }

    /// No timer starts again, and the closures (and what they hold) are let go. Nothing to do when no display link
    /// was set up (real mode, where other threads may be queuing blocks).
    func end() {
        guard scheduler != nil else { return }
        generation += 1
        (scheduler, phaseEnded, hasWork, tick) = (nil, { true }, { _ in false }, { _ in })
    }

    /// A block was queued on the main queue (real mode: never set up, so nothing happens).
    func blockQueued() {
        guard let scheduler, !ticking else { return }  // no scheduler once the scenario is over (``end()``)
        let now = scheduler.currentTime()
        start(at: now <= origin ? origin : origin + (now - origin + interval - 1) / interval * interval)
    }
}
