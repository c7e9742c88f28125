import Foundation
import ObjectGraph
import Synchronization

extension VariantRunner {
    /// Runs the scenario's phases in order up to its verify phase (or a stop), then lets the main queue's last work
    /// finish and ends the sampling.
    func runPhases(_ run: VariantRun) throws {
        let main = run.main
        for (index, phase) in scenario.phases.enumerated() {
            run.sampler.currentPhase.withLock { $0 = phase.name }
            progress?("phase \(index + 1)/\(scenario.phases.count) \(phase.name)")
            if phase.kind == .verify { break }
            try runPhase(phase, index: index, of: run)
            if run.control.isStopping() {
                let done = run.control.objectsDone.load(ordering: .relaxed), total = run.control.objectsTotal.load(ordering: .relaxed)
                let objects = total > 0 ? ", \(PhaseProgress.grouped(done)) of \(PhaseProgress.grouped(total)) objects" : ""
                run.stoppedIn = "interrupted in phase \(index + 1)/\(scenario.phases.count) \(phase.name) at \(PhaseProgress.seconds(Double(Clock.now() - run.runStart) / 1e9)) on the run's clock\(objects)"
                break
            }
        }
        run.ticker?.stop()
        run.sampler.currentPhase.withLock { $0 = "verify" }
        main.endFrames()
        run.drainMain()
        Clock.sleep(until: Clock.now() + 50_000_000)
        run.drainMain()
        run.sampler.stopSampling.store(true, ordering: .relaxed)
    }

    /// Runs one phase: its actors, each on a thread of its own (or a simulation's), the display link while they run
    /// and after them while the main queue has work, and the trailing main-queue work; then takes a sample.
    func runPhase(_ phase: Phase, index: Int, of run: VariantRun) throws {
        let control = run.control, main = run.main, sampler = run.sampler, simulation = run.simulation
        control.beginPhase()
        run.ticker?.begin(phase: phase.name, index: index + 1, duration: phase.duration, startNanos: Clock.now() - run.runStart)
        // A seed phase's merges, saves and fetches stay out of the latency distributions. Each phase's main-queue
        // work is done before the next begins (drained below), so a block counts in the phase that queued it.
        run.recorder.measuredPhase.set(phase.kind != .seed)
        let start = Clock.now()
        let running = Atomic<Int>(0)
        let actors = try makeActors(of: phase, for: run)
        let boundedDone = Atomic<Bool>(false)
        let hasBounded = actors.contains { $0.isBounded }
        let boundedRunning = Atomic<Int>(actors.filter(\.isBounded).count)
        let deadline = phase.duration.map { start + UInt64($0 * 1e9) }
        let keepGoing: @Sendable () -> Bool = {
            if control.isStopping() { return false }
            if let deadline { return Clock.now() < deadline }
            return !boundedDone.load(ordering: .relaxed) && hasBounded
        }
        var frameThread: Thread?
        // The display refreshes while the phase's actors run and after them, while the main queue still has work
        // (a merge or a refetch landing after the import ended): every main-queue block of the phase runs under
        // the frame clock. A simulation's display link goes on by itself while main-queue work is queued or
        // running (``DisplayClock``); real mode's frame thread stops once the phase's trailing work is done.
        let framesStop: @Sendable () -> Bool = { running.load(ordering: .relaxed) == 0 && !keepGoing() }
        let trailingWorkDone = Atomic<Bool>(false)
        // One display link for the main queue: each frame reads every viewer's window, in the phase's order (the
        // loader gives a phase's viewers one frame rate).
        if let first = run.viewers.first {
            let drawn = run.viewers
            if let simulation {
                main.scheduleFrames(on: simulation, rate: first.spec.frameRate, from: start, until: framesStop) { for viewer in drawn { viewer.readFrame() } }
            } else {
                frameThread = main.runFrames(rate: first.spec.frameRate, until: { trailingWorkDone.load(ordering: .relaxed) }) { for viewer in drawn { viewer.readFrame() } }
            }
        }
        let group = DispatchGroup()
        var unbounded: [DispatchGroup] = []
        for actor in actors {
            let g = actor.isBounded ? group : DispatchGroup()
            if !actor.isBounded { unbounded.append(g) }
            g.enter()
            running.add(1, ordering: .relaxed)
            let body: @Sendable () -> Void = {
                actor.run(start: start, duration: phase.duration, keepGoing: keepGoing)
                sampler.addThreadTotals()
                if actor.isBounded, boundedRunning.add(-1, ordering: .relaxed).newValue == 0 { boundedDone.store(true, ordering: .relaxed) }
                running.add(-1, ordering: .relaxed)
                g.leave()
            }
            Self.spawn(actor.name, on: simulation, body)
        }
        if let simulation {
            simulation.every(50_000_000, from: start, name: "sampler", while: { running.load(ordering: .relaxed) > 0 }) { _ in sampler.sample() }
            // Every actor ends, the frames stop and the queues drain: then nothing is left to run.
            simulation.waitUntilQuiet()
        } else {
            group.wait()
        }
        boundedDone.store(true, ordering: .relaxed)
        // A stopped phase ends with its actors, not at its duration.
        if let deadline, !control.isStopping() { Clock.sleep(until: deadline) }
        for g in unbounded { g.wait() }
        frameThread.map { _ in while running.load(ordering: .relaxed) > 0 { usleep(1000) } }
        // Let the frame clock see the end, then let queued merges finish.
        Clock.sleep(until: Clock.now() + 20_000_000)
        run.drainMain()
        refetchAfterPhase(phase, of: run)
        trailingWorkDone.store(true, ordering: .relaxed)
        if let frameThread {
            while !frameThread.isFinished { usleep(1000) }
            run.drainMain()
        }
        sampler.sample()
        sampler.notePeakAllocated()
    }

    /// The actors of `phase`, named `<phase>.<kind><n>` (`-<p>` for each of a parallel importer's). Its viewers
    /// start here, on screen in place of those of the phases before.
    func makeActors(of phase: Phase, for run: VariantRun) throws -> [any WorkloadActor] {
        let workload = run.workload, stack = run.stack
        var actors: [any WorkloadActor] = []
        let phaseViewers = phase.actors.filter { if case .viewer = $0 { return true } else { return false } }.count
        if phaseViewers > 0 {
            run.viewers = []
            workload.showViewers(phaseViewers)
        }
        for (n, spec) in phase.actors.enumerated() {
            let base = "\(phase.name).\(spec.kind)\(n)"
            switch spec {
            case .importer(let s):
                for p in 0..<s.parallel { actors.append(ImporterActor(name: s.parallel > 1 ? "\(base)-\(p)" : base, spec: s, workload: workload)) }
            case .viewer(let s):
                stack.setViewReadOnly(s.readOnly)
                run.viewers.append(try ViewerState.start(s, index: run.viewers.count, workload: workload))
            case .fetcher(let s):
                actors.append(FetcherActor(name: base, spec: s, workload: workload))
            case .deleter(let s):
                actors.append(DeleterActor(name: base, spec: s, workload: workload))
            case .editor(let s):
                actors.append(EditorActor(name: base, spec: s, workload: workload, duration: phase.duration))
            case .temporary(let s):
                actors.append(EditingActor(name: base, role: "temporary", rate: s.rate, edits: s.edits, distribution: .uniform, saves: s.save, workload: workload, duration: phase.duration))
            case .writer(let s):
                actors.append(EditingActor(name: base, role: "writer", rate: s.rate, edits: s.edits, distribution: s.distribution, saves: true, workload: workload, duration: phase.duration))
            case .batch(let s):
                actors.append(BatchActor(name: base, spec: s, workload: workload, duration: phase.duration))
            case .migrator(let s):
                let migrator = MigratorActor(name: base, spec: s, workload: workload, storeFiles: run.storeFiles)
                run.migrators.append(migrator)
                actors.append(migrator)
            }
        }
        return actors
    }

    /// Starts an actor's `body`: a task of the simulation, or a thread of its own in real mode.
    static func spawn(_ name: String, on simulation: Scheduler?, _ body: @escaping @Sendable () -> Void) {
        if let simulation {
            simulation.spawn(name: name, body)
        } else {
            let thread = Thread(block: body)
            thread.name = name
            thread.stackSize = 4 << 20
            thread.start()
        }
    }

    /// With `merge: notifyAndRefetch` the view learns of the phase's imports and deletes when it ends, and
    /// its controller fetches again (in batches), under the frame clock like any main-queue block.
    func refetchAfterPhase(_ phase: Phase, of run: VariantRun) {
        let savesInBackground = phase.actors.contains { actor in
            switch actor {
            case .importer, .deleter: return true
            default: return false
            }
        }
        if scenario.stack.merge == .notifyAndRefetch, !run.viewers.isEmpty, savesInBackground {
            let refetched = run.viewers
            run.main.queue.async { ViewerState.refetch(refetched) }
            run.drainMain()
        }
    }
}
