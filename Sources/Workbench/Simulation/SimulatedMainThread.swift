import Dispatch
import Foundation
import ObjectGraph
import Synchronization

/// What a main-queue block did, for `mainBusy` by kind (issue 18 rule 24): the first mark a block makes names it.
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
            var hitch60 = 0.0
            var hitch120 = 0.0
            var frames = 0
            /// Display-link ticks skipped because the previous frame had not started (simulated mode).
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

    /// Simulated mode: a display link at `rate` Hz from `start` until `stop` says so. Ticks coalesce: a tick
    /// whose previous frame block has not started yet is a missed frame and queues nothing (Docs/simulation.md).
    func scheduleFrames(on scheduler: Scheduler, rate: Int, from start: UInt64, until stop: @escaping @Sendable () -> Bool, work: @escaping @Sendable () -> Void) {
        let stats = self.stats
        let queue = self.queue
        scheduler.every(UInt64(1_000_000_000 / rate), from: start, name: "display-link", while: { !stop() }) { intended in
            let missed = stats.state.withLock { s -> Bool in
                if s.framePending { s.framesMissed += 1; return true }
                s.framePending = true
                return false
            }
            guard !missed else { return }
            queue.async {
                stats.state.withLock { $0.framePending = false }
                self.frame(intended: intended, work: work)
            }
        }
    }

    private func frame(intended: UInt64, work: () -> Void) {
        mark(.frame)
        work()
        let end = Clock.now()
        let late = end > intended ? end - intended : 0
        stats.frameLateness.record(nanoseconds: late)
        stats.state.withLock { s in
            s.frames += 1
            s.hitch60 += Double(late > 16_666_667 ? late - 16_666_667 : 0) / 1e6
            s.hitch120 += Double(late > 8_333_333 ? late - 8_333_333 : 0) / 1e6
        }
    }

    /// Runs a frame clock at `rate` Hz until `stop` says so; each frame runs `work` on the queue. A frame's
    /// overrun past its budget (16.67 ms and 8.33 ms) counts into the hitch ratios, from its intended time.
    func runFrames(rate: Int, until stop: @escaping @Sendable () -> Bool, work: @escaping @Sendable () -> Void) -> Thread {
        let queue = self.queue
        let interval = UInt64(1_000_000_000 / rate)
        let thread = Thread {
            var tick = Clock.now()
            while !stop() {
                let intended = tick
                queue.async { self.frame(intended: intended, work: work) }
                tick += interval
                Clock.sleep(until: tick)
            }
        }
        thread.name = "frame-clock"
        thread.start()
        return thread
    }
}
