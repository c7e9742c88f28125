import Ambar
import Foundation
import TraceReplay
import ObjectGraph
import Synchronization

/// What one variant produced.
public struct VariantResult: Sendable, Codable {
    public var scenario: String
    public var variant: String
    public var parameters: [String: String]
    public var repetition: Int
    public var topology: String
    public var policies: [String: String]
    public var seed: UInt64
    /// `simulated` or `real` (Docs/simulation.md).
    public var mode: String = ExecutionMode.real.rawValue
    /// The cost profile of a simulated run ("" in real mode).
    public var profile: String = ""
    /// Exact figures in simulated mode: counts and virtual times.
    public var metrics: [MetricRow]
    /// Figures of the machine that ran the variant (memory, CPU time, wall time): never exact, skipped by the
    /// CI gate and the determinism test.
    public var host: [MetricRow] = []
    /// Deterministic and other counters by name.
    public var counters: [String: Int]
    public var timeseries: [TimeSample]
    public var mergeCurve: [[Double]]
    public var oracle: OracleReport
    public var thresholds: [ThresholdOutcome]
    public var notes: [String]
    public var wallSeconds: Double
    /// The Core Data behaviours (``CostRule`` ids) this variant's figures rest on.
    public var costRules: [String] = []
    /// The operation history events.jsonl keeps (not written to results.json): at most ``EventHistory/limit``
    /// events.
    public var events: [WriteEvent] = []
    /// How many events the run recorded and how many events.jsonl keeps (nil in results
    /// written before).
    public var eventHistory: EventHistory?
    /// Real mode with ``VariantRunner/countsMainQueueOperations``: each main-queue block's operation counts (by
    /// ``CostedOperation`` raw value) and wall nanoseconds. Not written to any file.
    public var mainBlockSamples: [([Int], UInt64)] = []
    /// Set when the variant was stopped before its end (Ctrl-C): where it stopped. Its figures cover the part
    /// that ran; nil for a whole variant (and absent from its results.json).
    public var partial: String?

    enum CodingKeys: String, CodingKey {
        case scenario, variant, parameters, repetition, topology, policies, seed, mode, profile, metrics, host, counters, timeseries, mergeCurve, oracle, thresholds, notes, wallSeconds, costRules, eventHistory, partial
    }

    /// The value of a metric statistic, if recorded.
    public func value(_ metric: String, _ statistic: String, label: String = "") -> Double? {
        (metrics.first { $0.metric == metric && $0.statistic == statistic && $0.label == label }
            ?? host.first { $0.metric == metric && $0.statistic == statistic && $0.label == label })?.value
    }
}

/// What events.jsonl holds of a variant's write events. The oracle checks every event it
/// recorded (kept on disk while it runs); the file keeps every event of the records with findings, then the
/// others in record-key order, `limit` in all, so that its size does not grow with the run.
public struct EventHistory: Sendable, Codable, Equatable {
    public static let defaultLimit = 10_000
    public var recorded: Int
    public var kept: Int
    public var limit: Int
    /// The sentence the report prints.
    public var statement: String

    public init(recorded: Int, kept: Int, limit: Int) {
        (self.recorded, self.kept, self.limit) = (recorded, kept, limit)
        statement = kept == recorded
            ? "events.jsonl holds all \(recorded) event(s)"
            : "events.jsonl holds \(kept) of \(recorded) events: every event of the records with findings, then the others in record-key order, \(limit) at most (the oracle checked all \(recorded))"
    }
}

public struct TimeSample: Sendable, Codable, Equatable {
    public var seconds: Double
    public var phase: String
    public var allocated: Int64?
    public var resident: Int64?
    public var mainQueueDepth: Int
    public var viewRegisteredObjects: Int?
}

public struct ThresholdOutcome: Sendable, Codable, Equatable {
    public var metric: String
    public var statistic: String
    public var limit: Double
    public var polarity: String
    public var value: Double?
    public var passed: Bool
    /// Whether missing it fails the run (false: a finding a sweep reports).
    public var fails: Bool = true

    public init(metric: String, statistic: String, limit: Double, polarity: String, value: Double?, passed: Bool, fails: Bool = true) {
        (self.metric, self.statistic, self.limit, self.polarity, self.value, self.passed, self.fails) = (metric, statistic, limit, polarity, value, passed, fails)
    }

    // Results written before `fails` existed read as failing thresholds, as they were.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        metric = try c.decode(String.self, forKey: .metric)
        statistic = try c.decode(String.self, forKey: .statistic)
        limit = try c.decode(Double.self, forKey: .limit)
        polarity = try c.decode(String.self, forKey: .polarity)
        value = try c.decodeIfPresent(Double.self, forKey: .value)
        passed = try c.decode(Bool.self, forKey: .passed)
        fails = try c.decodeIfPresent(Bool.self, forKey: .fails) ?? true
    }
}

/// Runs one variant end to end (architecture.md "Workbench: one scenario run").
public struct VariantRunner {
    let scenario: Scenario
    /// Where the variant's temporary store lives.
    let workDirectory: URL
    /// Progress lines (stderr when it is a terminal).
    let progress: (@Sendable (String) -> Void)?
    /// Told of every step of a simulated run (its trace).
    let tracer: (@Sendable (TraceRecord) -> Void)?
    /// Real mode: count each main-queue block's operations (``VariantResult/mainBlockSamples``), for calibration.
    public var countsMainQueueOperations = false
    /// The most events of a variant events.jsonl keeps (the oracle checks every one).
    public var eventsKept = EventHistory.defaultLimit
    /// Told of the variant's operation trace when one is asked for (simulated mode; Docs/calibration.md).
    public var operationTrace: (@Sendable (TraceHeader, [OperationRecord]) -> Void)?
    /// Or written to a file as the run makes it (``OperationTraceFileWriter``): a long run's trace is not held in
    /// memory. Takes the place of ``operationTrace`` when both are set.
    public var operationTraceFile: OperationTraceFileWriter?
    /// The cost profile of a simulated run, in place of the scenario's `profile` (the evidence fit prices one
    /// variant under profiles it builds, Profiles/README.md "How the fit works").
    public var costProfile: CostProfile?
    /// True stops the variant at the next chunk or operation of each actor; its result is marked ``VariantResult/partial``.
    public var shouldStop: @Sendable () -> Bool = { false }
    /// Told of the phase in progress about four times a second (Docs/workbench.md "Progress").
    public var phaseProgress: (@Sendable (PhaseProgress) -> Void)?

    public init(scenario: Scenario, workDirectory: URL, progress: (@Sendable (String) -> Void)? = nil, tracer: (@Sendable (TraceRecord) -> Void)? = nil) {
        self.scenario = scenario
        self.workDirectory = workDirectory
        self.progress = progress
        self.tracer = tracer
    }

    /// Whether this variant's memory baseline waits for the previous variant's objects to be freed
    /// (``memoryBaseline(timeout:)``). For a process that runs variants one after another (`ambar-bench`); runs
    /// side by side in one process (tests) would each wait on objects of the others.
    public var waitsForPreviousVariant = false

    public func run() throws -> VariantResult {
        // The run's stack is let go here, once the run is over: outside the simulation (nothing of its teardown is
        // counted, timed or traced) and before the next variant reads its baseline.
        let leftovers = Leftovers()
        defer { leftovers.objects = [] }
        return try run(holding: leftovers)
    }

    /// Runs the variant and leaves its objects (stack, contexts, main queue, coordinators) in `leftovers`, for the
    /// caller to let go.
    func run(holding leftovers: Leftovers) throws -> VariantResult {
        // Variants run one after another in one process: each one's memory is measured from its own start, once
        // the previous variant's objects are gone and their pages went back to the system.
        let baseline = Self.memoryBaseline(timeout: waitsForPreviousVariant ? 0.5 : 0)
        switch scenario.mode {
        case .real:
            return try run(simulation: nil, baseline: baseline, leftovers: leftovers)
        case .simulated:
            let profile = try costProfile ?? CostProfile.load(scenario.profile)
            let stream = operationTraceFile
            let recorder: OperationTraceRecorder? = if let stream {
                OperationTraceRecorder(flushEvery: stream.flushEvery) { stream.write($0) }
            } else {
                operationTrace != nil ? OperationTraceRecorder() : nil
            }
            var header: TraceHeader?
            if recorder != nil {
                // The model, then each migration's next version (the order the run's coordinators meet them).
                let model = scenario.model.entities ?? ScenarioLoader.workloadModel
                let nextVersions = scenario.phases.flatMap(\.actors).compactMap { actor -> ModelFile? in
                    if case .migrator(let m) = actor { return m.to }
                    return nil
                }
                var models = [try JSONDecoder().decode(TraceModel.self, from: TraceCoding.line(model))]
                for next in nextVersions {
                    var version = try JSONDecoder().decode(TraceModel.self, from: TraceCoding.line(next))
                    version.version = "next"
                    models.append(version)
                }
                header = TraceHeader(scenario: scenario.name, variant: scenario.variantName, seed: scenario.seed, profile: profile.name, models: models)
            }
            if let stream, let header { stream.begin(header) }
            let scheduler = Scheduler(seed: scenario.seed, profile: profile, tracer: tracer, operationRecorder: recorder)
            var result: VariantResult
            do {
                result = try scheduler.run { try run(simulation: scheduler, baseline: baseline, leftovers: leftovers) }
            } catch {
                stream?.abandon()
                throw error
            }
            result.profile = profile.name
            Self.addOperationRows(scheduler.totals, profile: profile, to: &result)
            if let recorder, let header {
                let rest = recorder.finish()
                var end = OperationRecord(op: "end")
                end.counts = Self.replayedCounts(scheduler.totals)
                end.n = recorder.recordedCount + 1
                if let stream {
                    stream.write(rest + [end])
                    stream.mostHeld = recorder.mostHeld
                    stream.finish()
                } else if let operationTrace {
                    operationTrace(header, rest + [end])
                }
            }
            return result
        }
    }

    /// Runs `body` on a thread outside any simulation and waits for it (inline when the caller is in none).
    static func outsideSimulation<T>(_ body: @escaping () throws -> T) throws -> T {
        guard ExecutionThread.current != nil else { return try body() }
        nonisolated(unsafe) let body = body
        nonisolated(unsafe) var outcome: Result<T, any Error>?
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            outcome = Result { try body() }
            done.signal()
        }
        thread.stackSize = 4 << 20
        thread.start()
        done.wait()
        return try outcome!.get()
    }

    /// The counts a replay of the operation trace must reproduce (Docs/calibration.md): every costed operation but
    /// `blockRun` (a queue's dispatch, not a Core Data call), and SQL statements by kind.
    static func replayedCounts(_ totals: OperationTotals) -> [String: Int] {
        CostedOperation.replayCounts(operation: { totals.all[$0] }, statements: { totals.statementsAll[$0] })
    }

    /// Per operation: the count charged in all and on the main queue, and the main queue's virtual time for it.
    static func addOperationRows(_ totals: OperationTotals, profile: CostProfile, to result: inout VariantResult) {
        for op in CostedOperation.allCases {
            let all = totals.all[op.rawValue], main = totals.main[op.rawValue]
            guard all > 0 else { continue }
            result.metrics.append(MetricRow("costedOperations", "count", Double(all), "count", label: op.name))
            result.metrics.append(MetricRow("costedOperations", "count", Double(main), "count", label: "main:\(op.name)"))
            result.metrics.append(MetricRow("costedTime", "total", Double(UInt64(main) * profile.cost(op)) / 1e6, "ms", label: "main:\(op.name)"))
        }
        result.metrics += QueueCounters.rows(totals)
    }

    /// The objects of the variant that ran last in this process, watched until they are deallocated.
    private static let lastVariant = Mutex<[WatchedObject]>([])

    struct WatchedObject: @unchecked Sendable {  // a weak reference, read once the variant is over
        let name: String
        weak var object: AnyObject?
    }

    /// What a variant's memory figures are measured from.
    struct MemoryBaseline {
        var reading: MemoryProbe.Reading
        /// jemalloc returned the freed pages to the system first.
        var purged: Bool
        /// Objects of the previous variant still alive when the reading was taken (none when it was freed).
        var previousAlive: [String]
    }

    /// Waits (up to `timeout` seconds) until the previous variant's objects are deallocated, returns the freed pages
    /// to the system, and reads jemalloc's statistics (``MemoryProbe/reading()`` refreshes its epoch).
    static func memoryBaseline(timeout: Double) -> MemoryBaseline {
        let alive = stillAlive(lastVariant.withLock { $0 }, timeout: timeout)
        lastVariant.withLock { $0 = [] }
        let purged = MemoryProbe.purge()
        return MemoryBaseline(reading: MemoryProbe.reading(), purged: purged, previousAlive: alive)
    }

    /// The names of the `watched` objects still alive after waiting up to `timeout` seconds for them to go.
    static func stillAlive(_ watched: [WatchedObject], timeout: Double) -> [String] {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout * 1e9)
        while true {
            let alive = watched.filter { $0.object != nil }.map(\.name)
            if alive.isEmpty || DispatchTime.now().uptimeNanoseconds >= deadline { return alive }
            usleep(1000)
        }
    }

    /// Watches a finished variant's objects (``memoryBaseline(timeout:)`` waits for them to go).
    static func watch(_ objects: [WatchedObject]) {
        lastVariant.withLock { $0 = objects }
    }

    /// The objects of a finished run, held until ``run()`` lets them go.
    final class Leftovers {
        var objects: [AnyObject] = []
    }

    func run(simulation: Scheduler?, baseline: MemoryBaseline, leftovers: Leftovers) throws -> VariantResult {
        let wallStart = DispatchTime.now().uptimeNanoseconds
        let runStart = Clock.now()
        if !baseline.previousAlive.isEmpty {
            // Told, not noted: tests run variants side by side in one process, where "the previous one" is another test's.
            progress?("memory: the previous variant's \(baseline.previousAlive.joined(separator: ", ")) still lived when this variant began; its memory figures count above them")
        }
        let directory = workDirectory.appendingPathComponent("variant-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let model: ManagedObjectModel
        do { model = try ManagedObjectModel(file: scenario.model.entities ?? ScenarioLoader.workloadModel) } catch {
            throw WorkbenchError(.badInput, "the scenario's model cannot be used: \(error)")
        }
        let recorder = RunRecorder(eventDirectory: directory)
        let main = SimulatedMainThread(countsOperations: countsMainQueueOperations)
        (main.queue.simulatedQueue as? VirtualQueue)?.isMain = true
        // The display link holds the viewer's frame work, and through it the stack, until the run ends.
        defer { main.endFrames() }
        let storeURL = directory.appendingPathComponent("store.sqlite")
        let stack = try TopologyBuilder(scenario: scenario, model: model, storeURL: storeURL, main: main, recorder: recorder).build()
        let control = VariantProgress(isStopping: shouldStop)
        let workload = Workload(scenario: scenario, stack: stack, recorder: recorder, main: main, model: model, progress: control)
        let ticker = phaseProgress.map { ProgressTicker(variant: "\(scenario.name) \(scenario.variantName)", phases: scenario.phases.count, counters: control, report: $0) }
        defer { ticker?.stop() }
        // Where a stop (Ctrl-C) ended the variant.
        var stoppedIn: String?
        // A stack without a view context queues nothing on the main queue; the harness does not either.
        func drainMain() { if stack.topology.hasViewContext { main.drain() } }
        let samples = Mutex<[TimeSample]>([])
        let currentPhase = Mutex("setup")
        let stopSampling = Atomic<Bool>(false)
        let view = stack.viewContext
        // The -wal file's largest size, sampled with memory (a pinned query generation keeps
        // SQLite from checkpointing the log past it, so it grows with every commit made meanwhile).
        // An in-memory store has no file and no log: no sampling, and no walSize row (absent, not zero).
        let inMemory = scenario.stack.store == .inMemory
        let walPath = storeURL.path + "-wal"
        let peakWAL = Atomic<Int64>(0)
        @Sendable func sampleWAL() {
            guard !inMemory else { return }
            let size = ((try? FileManager.default.attributesOfItem(atPath: walPath))?[.size] as? NSNumber)?.int64Value ?? 0
            _ = peakWAL.max(size, ordering: .relaxed)
        }
        @Sendable func sample() {
            sampleWAL()
            let reading = MemoryProbe.reading()
            let reached = Clock.now() - runStart
            control.reachedNanos.store(reached, ordering: .relaxed)
            let s = TimeSample(seconds: Double(reached) / 1e9, phase: currentPhase.withLock { $0 }, allocated: reading.allocated,
                               resident: reading.resident, mainQueueDepth: main.depth, viewRegisteredObjects: nil)
            samples.withLock { $0.append(s) }
        }
        // Real mode samples on a thread of its own; a simulation samples every 50 ms of virtual time while a
        // phase's actors run (below).
        if simulation == nil {
            let sampler = Thread {
                while !stopSampling.load(ordering: .relaxed) {
                    sample()
                    usleep(50_000)
                }
            }
            sampler.start()
        }
        var peakAllocated: Int64 = 0
        var threadAllocated: Int64 = 0, threadFreed: Int64 = 0
        let threadTotals = Mutex<(Int64, Int64)>((0, 0))
        // The viewers on screen: a phase with viewers replaces those of the phases before it (Docs/scenarios.md).
        var viewers: [ViewerState] = []
        var migrators: [MigratorActor] = []

        for (index, phase) in scenario.phases.enumerated() {
            currentPhase.withLock { $0 = phase.name }
            progress?("phase \(index + 1)/\(scenario.phases.count) \(phase.name)")
            if phase.kind == .verify { break }
            control.beginPhase()
            ticker?.begin(phase: phase.name, index: index + 1, duration: phase.duration, startNanos: Clock.now() - runStart)
            // A seed phase's merges, saves and fetches stay out of the latency distributions. Each phase's main-queue
            // work is done before the next begins (drained below), so a block counts in the phase that queued it.
            recorder.measuredPhase.set(phase.kind != .seed)
            let start = Clock.now()
            let running = Atomic<Int>(0)
            var actors: [any WorkloadActor] = []
            let phaseViewers = phase.actors.filter { if case .viewer = $0 { return true } else { return false } }.count
            if phaseViewers > 0 {
                viewers = []
                workload.showViewers(phaseViewers)
            }
            for (n, spec) in phase.actors.enumerated() {
                let base = "\(phase.name).\(spec.kind)\(n)"
                switch spec {
                case .importer(let s):
                    for p in 0..<s.parallel { actors.append(ImporterActor(name: s.parallel > 1 ? "\(base)-\(p)" : base, spec: s, workload: workload)) }
                case .viewer(let s):
                    stack.setViewReadOnly(s.readOnly)
                    viewers.append(try ViewerState.start(s, index: viewers.count, workload: workload))
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
                    let migrator = MigratorActor(name: base, spec: s, workload: workload, storeURL: storeURL)
                    migrators.append(migrator)
                    actors.append(migrator)
                }
            }
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
            if let first = viewers.first {
                let drawn = viewers
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
                    if let totals = MemoryProbe.threadTotals() { threadTotals.withLock { $0.0 += totals.allocated; $0.1 += totals.freed } }
                    if actor.isBounded, boundedRunning.add(-1, ordering: .relaxed).newValue == 0 { boundedDone.store(true, ordering: .relaxed) }
                    running.add(-1, ordering: .relaxed)
                    g.leave()
                }
                if let simulation {
                    simulation.spawn(name: actor.name, body)
                } else {
                    let thread = Thread(block: body)
                    thread.name = actor.name
                    thread.stackSize = 4 << 20
                    thread.start()
                }
            }
            if let simulation {
                simulation.every(50_000_000, from: start, name: "sampler", while: { running.load(ordering: .relaxed) > 0 }) { _ in sample() }
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
            drainMain()
            // With `merge: notifyAndRefetch` the view learns of the phase's imports and deletes when it ends, and
            // its controller fetches again (in batches), under the frame clock like any main-queue block.
            let savesInBackground = phase.actors.contains { actor in
                switch actor {
                case .importer, .deleter: return true
                default: return false
                }
            }
            if scenario.stack.merge == .notifyAndRefetch, !viewers.isEmpty, savesInBackground {
                let refetched = viewers
                main.queue.async { ViewerState.refetch(refetched) }
                drainMain()
            }
            trailingWorkDone.store(true, ordering: .relaxed)
            if let frameThread {
                while !frameThread.isFinished { usleep(1000) }
                drainMain()
            }
            sample()
            if let a = MemoryProbe.reading().allocated { peakAllocated = max(peakAllocated, a) }
            if control.isStopping() {
                let done = control.objectsDone.load(ordering: .relaxed), total = control.objectsTotal.load(ordering: .relaxed)
                let objects = total > 0 ? ", \(PhaseProgress.grouped(done)) of \(PhaseProgress.grouped(total)) objects" : ""
                stoppedIn = "interrupted in phase \(index + 1)/\(scenario.phases.count) \(phase.name) at \(PhaseProgress.seconds(Double(Clock.now() - runStart) / 1e9)) on the run's clock\(objects)"
                break
            }
        }
        ticker?.stop()
        currentPhase.withLock { $0 = "verify" }
        main.endFrames()
        drainMain()
        Clock.sleep(until: Clock.now() + 50_000_000)
        drainMain()
        stopSampling.store(true, ordering: .relaxed)
        (threadAllocated, threadFreed) = threadTotals.withLock { $0 }

        // After a migration the store is the next version's.
        let verifyModel = migrators.compactMap { $0.migrated.withLock { $0 } }.last ?? model
        var viewValues: [Int64: [String: String]] = [:]
        var viewRegistered = 0, viewKeptIDChanges = 0
        view.performAndWait {
            viewRegistered = view.registeredObjectCount
            viewKeptIDChanges = view.keptIDChangeCount
            for id in workload.visibleIDs {
                guard let object = view.registeredObject(for: id), let key = id.primaryKey else { continue }
                // Deleted yet still in a window (a controller that kept a merged delete): the oracle expects a row.
                if object.isDeleted {
                    viewValues[key] = [:]
                    continue
                }
                guard !object.isFault, !object.hasChanges else { continue }
                var fields: [String: String] = [:]
                for (field, _) in workload.fieldTypes { fields[field] = object.primitiveValue(forKey: field).description }
                viewValues[key] = fields
            }
        }
        // `saveParents: false` leaves children's saves in their parents: what the parents hold unsaved at the end, as
        // a save of them would write it (an insert deleted again is no change to the store).
        var unsaved: [(String, Int)] = []
        if scenario.leavesParentsUnsaved {
            var inserted = 0, updated = 0, deleted = 0
            for parent in stack.parents {
                parent.performAndWait {
                    inserted += parent.insertedObjects.count
                    updated += parent.updatedObjects.count { !$0.isInserted && !$0.isDeleted }
                    deleted += parent.deletedObjects.count { !$0.isInserted }
                }
            }
            unsaved = [("inserted", inserted), ("updated", updated), ("deleted", deleted)]
        }
        // Read where the parents are read: what contexts whose save failed still hold is counted now.
        let refusedChanges = recorder.refusedChanges()
        let recorderState = recorder.state.withLock { $0 }
        let readOnlySaves = (stack.ambar?.counters.readOnlySavesReachedStore ?? 0) + (recorderState.counters["readOnlySavesReachedStore"] ?? 0)
        // The oracle's reads are the harness's, not the app's: in a simulation they run on a thread of their own,
        // outside it, so that no figure of the run counts them (they stream the keys, so their
        // shape is not one fetch of every row).
        // The oracle's coordinator and context may be let go on a dispatch thread after it returns: the next
        // variant's memory baseline waits for them too.
        let oracleObjects = Mutex<[WatchedObject]>([])
        // Made outside the simulation, so that its queue is a dispatch queue the oracle's thread can use.
        let verifier = try Self.outsideSimulation { PersistentStoreCoordinator(managedObjectModel: verifyModel, name: "verify") }
        if inMemory {
            // Semantics §7 "The in-memory store": no second coordinator can open the stack's store, so the oracle reads
            // a copy of it taken now, when every actor is done (the stack's one coordinator holds it).
            guard let coordinator = stack.coordinators.first?.1, coordinator.copyInMemoryStore(into: verifier) else {
                throw WorkbenchError(.internalFailure, "the stack's coordinator has no in-memory store for the oracle to read")
            }
        }
        let (oracle, keptEvents): (OracleReport, [WriteEvent]) = try Self.outsideSimulation {
            // Final state for the oracle (streamed, never every row or event at once): the keys with
            // events in ascending order, a thousand at a time, each with its row read through a fresh coordinator;
            // duplicates and batch-touched rows by queries of the store; what the view shows from the view context.
            if !inMemory { try verifier.addPersistentStore(type: .sqlite, at: storeURL) }
            let reader = ManagedObjectContext(concurrencyType: .privateQueue)
            reader.persistentStoreCoordinator = verifier
            oracleObjects.withLock { $0 = [WatchedObject(name: "oracle coordinator", object: verifier), WatchedObject(name: "oracle context", object: reader)] }
            let storeID = verifier.storeIdentifier ?? ""
            let entityName = workload.entity.name
            func rows(_ keys: [Int64]) throws -> [Int64: Oracle.Row] {
                guard !keys.isEmpty else { return [:] }
                return try reader.performAndWait {
                    defer { reader.reset() }
                    let ids = keys.compactMap { URL(string: "x-coredata://\(storeID)/\(entityName)/p\($0)").flatMap(verifier.managedObjectID(forURIRepresentation:)) }
                    let objects: [ManagedObject]
                    if inMemory {
                        // An in-memory store walks its whole table for every fetch: one look-up per key keeps this linear.
                        objects = ids.compactMap { try? reader.existingObject(with: $0) }
                    } else {
                        var request = FetchRequest(entityName: entityName,
                                                   predicate: ObjectPredicate(.comparison(PredicateComparison(.evaluatedObject, .in, .list(ids.map { .objectID($0) })))))
                        request.returnsObjectsAsFaults = false
                        objects = try reader.fetch(request)
                    }
                    var found: [Int64: Oracle.Row] = [:]
                    for object in objects {
                        guard let key = object.objectID.primaryKey else { continue }
                        var fields: [String: String] = [:]
                        for (field, _) in workload.fieldTypes { fields[field] = object.primitiveValue(forKey: field).description }
                        found[key] = (object.snapshotVersion, fields)
                    }
                    return found
                }
            }
            var duplicates: [Int64] = []
            var batchTouched: Set<Int64> = []
            if inMemory, let idKey = workload.idKey {
                // No SQL: the id of every row, counted here (batch requests, refused with this store, touch none).
                var request = FetchRequest(entityName: entityName)
                request.resultType = .dictionary
                request.propertiesToFetch = [idKey]
                var seen: [Int64: Int] = [:]
                for row in try reader.performAndWait({ try reader.fetchDictionaries(request) }) {
                    if let id = (row[idKey] as? Int64) ?? (row[idKey] as? Int).map(Int64.init) { seen[id, default: 0] += 1 }
                }
                duplicates = seen.filter { $0.value > 1 }.map(\.key).sorted()
            } else if let idKey = workload.idKey, let slot = workload.entity.slotIndex(of: idKey) {
                let store = try SQLiteConnection(path: storeURL.path, readOnly: true, busyTimeout: 0)
                let table = workload.entity.tableName, column = workload.entity.columnName(forSlot: slot)
                // A sub-entity's table is its hierarchy's; only the workload entity's rows count.
                let rows = workload.entity.entityCondition(alias: table, includesSubentities: true).map { " AND \($0)" } ?? ""
                try store.forEachRow("SELECT \(column) FROM \(table) WHERE \(column) IS NOT NULL\(rows) GROUP BY \(column) HAVING COUNT(*) > 1 ORDER BY \(column)") { row in
                    if let id = row.int(0) { duplicates.append(id) }
                }
                // Batch requests name records by id; the oracle knows them by primary key.
                let touched = workload.batchTouchedKeys.sorted()
                for start in stride(from: 0, to: touched.count, by: 500) {
                    let list = touched[start..<min(start + 500, touched.count)].map(String.init).joined(separator: ",")
                    try store.forEachRow("SELECT Z_PK FROM \(table) WHERE \(column) IN (\(list))\(rows)") { row in if let key = row.int(0) { batchTouched.insert(key) } }
                }
            }
            var checker = Oracle.Checker(viewKeys: Set(viewValues.keys), batchTouched: batchTouched)
            var pending: [(Int64, [WriteEvent])] = []
            func checkPending() throws {
                let found = try rows(pending.map(\.0))
                for (key, events) in pending { checker.visit(key: key, events: events, row: found[key]) }
                pending.removeAll(keepingCapacity: true)
            }
            try recorder.events.forEachKey { key, events in
                pending.append((key, events))
                if pending.count >= 1000 { try checkPending() }
            }
            try checkPending()
            let report = checker.finish(viewValues: viewValues, viewRows: try rows(viewValues.keys.sorted()), duplicates: duplicates, readOnlySaves: readOnlySaves)
            // events.jsonl keeps a bounded part of the history, and says which.
            return (report, try recorder.events.kept(findingKeys: report.findings.map(\.key), limit: eventsKept))
        }
        let eventHistory = EventHistory(recorded: recorder.events.count, kept: keptEvents.count, limit: eventsKept)
        var notes = recorderState.notes
        if let failure = recorder.events.failure { notes.append("the event log failed, the oracle may have missed events: \(failure)") }
        let viewCounters = view.performAndWait { view.counters }
        let coordinatorCounters = stack.coordinators.map { ($0.0, $0.1.counters) }
        // The controller's size (Rule 23): what it holds, not what a frame reads.
        // A frames-only viewer has no controller, so no size.
        // Each controller's size, changes and largest size; the unlabelled figures are their sums (one viewer: its own).
        let controllerSizes = viewers.compactMap { v in v.controller.map { c in view.performAndWait { (c.objectCount, v.peakObjects, v.changes) } } }
        // The viewers' controllers hold the objects on screen: they go with the rest of the run (``Leftovers``).
        leftovers.objects += viewers
        viewers = []
        _ = stack

        // Metrics.
        var rows: [MetricRow] = []
        rows += recorder.mergeLatency.rows("mergeLatency")
        rows += main.stats.mergeBusy.rows("mainBusy")
        var host: [MetricRow] = main.stats.mergeBusyCPU.rows("mainBusyCPU")
        rows += recorder.fetchLatency.rows("fetchLatency")
        for (label, r) in recorder.fetchLatencyLabels where r.count > 0 { rows += r.rows("fetchLatency", label: label) }
        // A role that saved only in seed phases has no measured saves, and no row.
        for (role, r) in recorder.saveLatencyRoles where r.count > 0 { rows += r.rows("saveLatency", label: role) }
        let mainState = main.stats.state.withLock { $0 }
        let runSeconds = max(0.001, Double(Clock.now() - runStart) / 1e9)
        rows.append(MetricRow("hitchRatio", "value", (mainState.hitch60 / runSeconds * 100).rounded() / 100, "ms/s", label: "60Hz"))
        rows.append(MetricRow("hitchRatio120", "value", (mainState.hitch120 / runSeconds * 100).rounded() / 100, "ms/s", label: "120Hz"))
        rows.append(MetricRow("hangs", "count", Double(mainState.hangs), "count"))
        rows.append(MetricRow("longTasks", "count", Double(mainState.longTasks), "count"))
        rows.append(MetricRow("mainQueueDepth", "max", Double(mainState.maxDepth), "blocks"))
        if recorderState.importNanos > 0 {
            rows.append(MetricRow("importThroughput", "value", (Double(recorderState.objectsImported) / (Double(recorderState.importNanos) / 1e9)).rounded(), "objects/s"))
        }
        // The migration's time (virtual in simulated mode); `rowsMigrated` is a counter.
        if let nanos = recorderState.counters["migrationNanos"] {
            rows.append(MetricRow("migrationTime", "value", Double(nanos) / 1e6, "ms"))
        }
        var counters = recorderState.counters
        counters["migrationNanos"] = nil
        var conflictsByLayer = (cache: 0, database: 0, constraint: 0)
        for (name, c) in coordinatorCounters {
            conflictsByLayer.cache += c.cacheConflicts
            conflictsByLayer.database += c.databaseConflicts
            conflictsByLayer.constraint += c.constraintConflicts
            counters["sqlSelect.\(name)"] = c.statements.select
            counters["sqlInsert.\(name)"] = c.statements.insert
            counters["sqlUpdate.\(name)"] = c.statements.update
            counters["sqlDelete.\(name)"] = c.statements.delete
            counters["rowCacheHits.\(name)"] = c.rowCacheHits
            counters["rowCacheMisses.\(name)"] = c.rowCacheMisses
            counters["rowCacheEntries.\(name)"] = c.rowCacheEntries
        }
        rows.append(MetricRow("conflicts", "count", Double(conflictsByLayer.cache), "count", label: "layer:rowCache"))
        rows.append(MetricRow("conflicts", "count", Double(conflictsByLayer.database), "count", label: "layer:database"))
        rows.append(MetricRow("conflicts", "count", Double(conflictsByLayer.constraint), "count", label: "kind:constraint"))
        for (outcome, n) in recorderState.conflictOutcomes.sorted(by: { $0.key < $1.key }) {
            rows.append(MetricRow("conflicts", "count", Double(n), "count", label: "outcome:\(outcome)"))
        }
        rows.append(MetricRow("saveFailures", "count", Double(recorderState.saveFailures.values.reduce(0, +)), "count"))
        for (key, n) in recorderState.saveFailures.sorted(by: { $0.key < $1.key }) {
            rows.append(MetricRow("saveFailures", "count", Double(n), "count", label: key))
        }
        rows.append(MetricRow("lostUpdates", "count", Double(oracle.lostUpdates), "count"))
        rows.append(MetricRow("lostUpdates", "count", Double(oracle.promisedLosses), "count", label: "promised"))
        // Beside the losses: what failed saves would have written, which the store never got (Docs/workbench.md).
        rows.append(MetricRow("refusedChanges", "count", Double(refusedChanges), "count"))
        rows.append(MetricRow("staleReads", "count", Double(oracle.staleReads), "count"))
        rows.append(MetricRow("duplicates", "count", Double(oracle.duplicates), "count"))
        rows.append(MetricRow("readOnlySavesReachedStore", "count", Double(readOnlySaves), "count"))
        for (kind, n) in unsaved { rows.append(MetricRow("unsavedObjects", "value", Double(n), "objects", label: kind)) }
        let readings = samples.withLock { $0 }
        // Allocation above the baseline taken before the variant began, once the previous one was freed: the peak of
        // this variant's own samples (and end-of-phase readings) less it, and its last sample less it.
        let allocatedSeries = readings.compactMap(\.allocated)
        if let start = baseline.reading.allocated, let last = allocatedSeries.last {
            host.append(MetricRow("memoryAllocated", "peak", Double(max(0, max(peakAllocated, allocatedSeries.max()!) - start)), "bytes"))
            host.append(MetricRow("memoryAllocated", "value", Double(max(0, last - start)), "bytes"))
        }
        if let resident = readings.compactMap(\.resident).max() {
            host.append(MetricRow("memoryResident", "peak", Double(resident), "bytes"))
            if let start = baseline.reading.resident {
                host.append(MetricRow("memoryResident", "value", Double(start), "bytes", label: baseline.purged ? "start" : "start:notPurged"))
                host.append(MetricRow("memoryResident", "peak", Double(max(0, resident - start)), "bytes", label: "growth"))
            }
        }
        if threadAllocated > 0 {
            host.append(MetricRow("threadAllocated", "total", Double(threadAllocated), "bytes"))
            host.append(MetricRow("threadFreed", "total", Double(threadFreed), "bytes"))
        }
        // The store's SQLite figures: absent for an in-memory store, whose run uses SQLite only for the harness's
        // event log (a zero or the log's figures would read as the store's).
        if !inMemory {
            sampleWAL()
            host.append(MetricRow("walSize", "peak", Double(peakWAL.load(ordering: .relaxed)), "bytes"))
            host.append(MetricRow("sqliteMemory", "peak", Double(SQLiteStatistics.memoryHighwater), "bytes"))
            host.append(MetricRow("sqliteMemory", "value", Double(SQLiteStatistics.memoryUsed), "bytes"))
            host.append(MetricRow("sqliteMemory", "value", Double(SQLiteStatistics.pageCacheOverflow), "bytes", label: "pageCacheOverflow"))
        }
        let wallSeconds = Double(DispatchTime.now().uptimeNanoseconds - wallStart) / 1e9
        host.append(MetricRow("wallSeconds", "value", (wallSeconds * 1000).rounded() / 1000, "s"))
        if let queue = main.queue.simulatedQueue as? VirtualQueue {
            // The main queue's whole virtual time: every block (merge, push, save, fetch, frame) and the waits inside.
            rows.append(MetricRow("mainBusy", "total", Double(queue.busyNanos) / 1e6, "ms"))
            for kind in MainBlockKind.allCases {
                rows.append(MetricRow("mainBusy", "total", Double(queue.busyByKind[kind.rawValue] ?? 0) / 1e6, "ms", label: kind.rawValue))
            }
            rows.append(MetricRow("mainBlocked", "total", Double(queue.blockedNanos) / 1e6, "ms"))
            rows.append(MetricRow("mainStall", "max", Double(queue.longestBlock) / 1e6, "ms"))
            rows.append(MetricRow("mainBlocks", "count", Double(queue.blocks), "count"))
            rows.append(MetricRow("runTime", "value", runSeconds, "s"))
        } else {
            // Real mode: the main queue's wall time over every block, to set beside a simulated run, and its
            // longest block of any kind.
            rows.append(MetricRow("mainBusy", "total", Double(mainState.busyNanos) / 1e6, "ms"))
            if let longest = main.stats.blocks.rows("mainStall").first(where: { $0.statistic == "max" }) { rows.append(longest) }
            for kind in MainBlockKind.allCases {
                rows.append(MetricRow("mainBusy", "total", Double(mainState.busyByKind[kind.rawValue] ?? 0) / 1e6, "ms", label: kind.rawValue))
            }
        }
        rows.append(MetricRow("framesMissed", "count", Double(mainState.framesMissed), "count"))
        rows.append(MetricRow("registeredObjects", "value", Double(viewRegistered), "objects", label: "view"))
        // Semantics §2.2: the ID changes the view context keeps for its children until a reset.
        rows.append(MetricRow("keptIDChanges", "value", Double(viewKeptIDChanges), "objects", label: "view"))
        if !controllerSizes.isEmpty {
            rows.append(MetricRow("frcObjects", "value", Double(controllerSizes.map(\.0).reduce(0, +)), "objects"))
            rows.append(MetricRow("frcObjects", "peak", Double(controllerSizes.map { max($0.0, $0.1) }.reduce(0, +)), "objects"))
        }
        // Several viewers: each controller's figures under `viewer=<n>` (1-based, in the phase's order).
        if controllerSizes.count > 1 {
            for (i, (size, peak, changes)) in controllerSizes.enumerated() {
                rows.append(MetricRow("frcObjects", "value", Double(size), "objects", label: "viewer=\(i + 1)"))
                rows.append(MetricRow("frcObjects", "peak", Double(max(size, peak)), "objects", label: "viewer=\(i + 1)"))
                rows.append(MetricRow("frcChanges", "count", Double(changes), "count", label: "viewer=\(i + 1)"))
            }
        }
        counters["merges"] = viewCounters.merges
        counters["mergeObjectsRefreshed"] = viewCounters.mergeObjectsRefreshed
        counters["mergeObjectsExamined"] = viewCounters.mergeObjectsExamined
        counters["faultsFired.view"] = viewCounters.faultsFired
        counters["notifications.view"] = viewCounters.objectsDidChangeNotifications
        counters["frames"] = mainState.frames
        for (name, value) in counters.sorted(by: { $0.key < $1.key }) {
            rows.append(MetricRow(name.split(separator: ".").first.map(String.init) ?? name, "value", Double(value), "count",
                                  label: name.contains(".") ? String(name.split(separator: ".", maxSplits: 1)[1]) : ""))
        }
        var result = VariantResult(
            scenario: scenario.name, variant: scenario.variantName, parameters: scenario.variantParameters, repetition: scenario.repetition,
            topology: scenario.stack.topology.rawValue, policies: stack.policies, seed: scenario.seed, mode: scenario.mode.rawValue,
            metrics: rows, host: host, counters: counters,
            timeseries: readings, mergeCurve: recorder.mergeLatency.curve().map { [$0.0, $0.1] }, oracle: oracle, thresholds: [],
            notes: notes, wallSeconds: simulation == nil ? runSeconds : wallSeconds, events: keptEvents)
        result.eventHistory = eventHistory
        result.partial = stoppedIn
        result.mainBlockSamples = main.stats.blockSamples.withLock { $0 }
        result.costRules = CostRule.applying(to: scenario)
        result.thresholds = scenario.thresholds.map { t in
            let value = result.metrics.first { $0.metric == t.metric && $0.statistic == t.statistic }?.value
            let passed = value.map { t.polarity == .lowerIsBetter ? $0 <= t.limit : $0 >= t.limit } ?? false
            return ThresholdOutcome(metric: t.metric, statistic: t.statistic, limit: t.limit, polarity: t.polarity.rawValue, value: value, passed: passed, fails: t.fails)
        }
        // The next variant's memory baseline waits for these to go.
        let watched: [(String, AnyObject)] = [("stack", stack), ("view context", view), ("workload", workload), ("recorder", recorder), ("main queue", main)]
            + stack.coordinators.map { ("coordinator \($0.0)", $0.1) }
        Self.watch(watched.map { WatchedObject(name: $0.0, object: $0.1) } + oracleObjects.withLock { $0 })
        leftovers.objects += watched.map(\.1)
        return result
    }
}

/// The viewer (workbench.md `viewer`; Rule 23): a fetched results controller on the view context over
/// `viewer.request` (by default every object of the entity, in batches of 20, as an app's list), whose window of
/// `window` objects every frame reads. The window starts at the top and, with `scroll`, moves
/// down the results at that many rows per second of the run's clock (virtual in simulated mode), wrapping to the
/// top after the last row, as a list scrolled over and over. With `frames: only` there is no controller: the
/// frames run on the main queue and read nothing. With `tracksChanges: false` the controller has no delegate: it
/// keeps the objects it fetched, and merges and pushes into the view context reach the context, not the controller.
final class ViewerState: FetchedResultsControllerDelegate, @unchecked Sendable {  // used on the main queue
    let spec: ActorSpec.Viewer
    /// The viewer's place among its phase's viewers (its window's, in ``Workload/visibleIDs``).
    let index: Int
    let workload: Workload
    var controller: FetchedResultsController?
    var changes = 0
    /// The controller's largest size over the run.
    var peakObjects = 0
    /// When the viewer started: scrolling measures its offset from here.
    let started: UInt64

    init(spec: ActorSpec.Viewer, index: Int, workload: Workload) {
        self.spec = spec
        self.index = index
        self.workload = workload
        started = Clock.now()
    }

    /// The controller's fetch request from the scenario's `viewer.request` (the model's sort key when it names none).
    static func fetchRequest(_ spec: ActorSpec.Viewer, workload: Workload) throws -> FetchRequest {
        try spec.request.fetchRequest(entityName: workload.entity.name, defaultSort: [workload.scenario.model.sortKey])
    }

    static func start(_ spec: ActorSpec.Viewer, index: Int, workload: Workload) throws -> ViewerState {
        let state = ViewerState(spec: spec, index: index, workload: workload)
        // Frames only, nothing fetched and nothing on screen.
        guard spec.frames == .window else {
            workload.setWindow(index, [])
            return state
        }
        let view = workload.stack.viewContext
        let request = try fetchRequest(spec, workload: workload)
        try view.performAndWait {
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: view, sectionNameKeyPath: spec.request.sectionKey,
                                                      changeEvaluation: spec.frc == .batched ? .batched : .coreData)
            // Docs/coredata-behaviour.md §5: without a delegate the controller tracks nothing; it keeps what it fetched.
            if spec.tracksChanges { controller.delegate = state }
            workload.main.mark(.fetch)
            let t0 = Clock.now()
            try controller.performFetch()
            workload.recorder.fetchLatency.record(nanoseconds: Clock.now() - t0)
            state.controller = controller
            state.noteContents(controller)
        }
        return state
    }

    /// The window's first row: 0 for a still window; with `scroll`, ⌊scroll × seconds since the viewer
    /// started⌋, wrapped to the results' size.
    func offset(count: Int) -> Int {
        guard spec.scroll > 0, count > 0 else { return 0 }
        let seconds = Double(Clock.now() - started) / 1e9
        return Int((spec.scroll * seconds).rounded(.down)) % count
    }

    /// The window: `window` objects of the controller in order from the current offset (wrapping past the end).
    func window(_ controller: FetchedResultsController) -> [ManagedObject] {
        let objects = controller.fetchedObjects ?? []
        guard objects.count > spec.window else { return objects }
        let start = offset(count: objects.count)
        return (0..<spec.window).map { objects[(start + $0) % objects.count] }
    }

    /// One frame: read every field of the window's objects (firing faults a merge left, and with `scroll` the
    /// faults, and their batches' queries, of the rows the window reaches).
    func readFrame() {
        guard let controller else { return }
        let objects = window(controller)
        // A scrolling window changes between merges: the editors edit what is on screen now.
        if spec.scroll > 0 { workload.setWindow(index, objects.map(\.objectID)) }
        for object in objects where !object.isDeleted {
            for (field, _) in workload.fieldTypes { _ = try? object.checkedValue(forKey: field) }
        }
    }

    /// The controllers fetch again (`merge: notifyAndRefetch`), on the main queue, in one block: what apps do is
    /// drop the stale objects (one reset of the view context), then fetch each list again (a fetch reads the
    /// store's rows). Each controller's fetch is one `fetchLatency` sample and one refetch.
    static func refetch(_ viewers: [ViewerState]) {
        let withControllers = viewers.filter { $0.controller != nil }
        guard let first = withControllers.first else { return }
        first.workload.main.mark(.fetch)
        var t0 = Clock.now()
        first.workload.stack.viewContext.reset()
        for viewer in withControllers {
            let controller = viewer.controller!
            try? controller.performFetch()
            let now = Clock.now()
            viewer.workload.recorder.fetchLatency.record(nanoseconds: now - t0)
            t0 = now
            viewer.workload.recorder.add("refetches")
            viewer.noteContents(controller)
        }
    }

    func controllerDidChangeContent(_ controller: FetchedResultsController) {
        changes += 1
        noteContents(controller)
    }

    private func noteContents(_ controller: FetchedResultsController) {
        peakObjects = max(peakObjects, controller.objectCount)
        workload.setWindow(index, window(controller).map(\.objectID))
    }
}
