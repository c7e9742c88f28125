import Ambar
import Foundation
import TraceReplay
import ObjectGraph
import Synchronization

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
                let models = [TraceModel(entities: model.entities, configurations: model.configurations)]
                    + nextVersions.map { TraceModel(entities: $0.entities, version: "next", configurations: $0.configurations) }
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

    /// Runs the variant as its steps: prepare the stack and its workload, run the phases, verify the store against
    /// the events, collect the figures.
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
        let run = try prepare(in: directory, simulation: simulation, baseline: baseline, wallStart: wallStart, runStart: runStart)
        // The display link holds the viewer's frame work, and through it the stack, until the run ends.
        defer { run.main.endFrames() }
        defer { run.ticker?.stop() }
        try runPhases(run)
        let final = readFinalState(run)
        let verification = try verify(run, final: final)
        return collect(run, final, verification, leftovers: leftovers)
    }

    /// Builds what the phases run on: the model, the recorder and its event log in `directory`, the main queue, the
    /// stack of the scenario's topology over a store in `directory`, the workload, and the samplers (real mode's
    /// sampler thread starts here; a simulation samples while a phase's actors run).
    func prepare(in directory: URL, simulation: Scheduler?, baseline: MemoryBaseline, wallStart: UInt64, runStart: UInt64) throws -> VariantRun {
        let model: ManagedObjectModel
        do { model = try ManagedObjectModel(file: scenario.model.entities ?? ScenarioLoader.workloadModel) } catch {
            throw WorkbenchError(.badInput, "the scenario's model cannot be used: \(error)")
        }
        let recorder = RunRecorder(eventDirectory: directory)
        let main = SimulatedMainThread(countsOperations: countsMainQueueOperations)
        (main.queue.simulatedQueue as? VirtualQueue)?.isMain = true
        let storeURL = directory.appendingPathComponent("store.sqlite")
        let stack: WorkbenchStack
        do { stack = try TopologyBuilder(scenario: scenario, model: model, storeURL: storeURL, main: main, recorder: recorder).build() } catch {
            // The caller ends the frames of a run it was given; this one never started.
            main.endFrames()
            throw error
        }
        let control = VariantProgress(isStopping: shouldStop)
        let workload = Workload(scenario: scenario, stack: stack, recorder: recorder, main: main, model: model, progress: control)
        let ticker = phaseProgress.map { ProgressTicker(variant: "\(scenario.name) \(scenario.variantName)", phases: scenario.phases.count, counters: control, report: $0) }
        let sampler = RunSampler(runStart: runStart, control: control, main: main, inMemory: scenario.stack.store == .inMemory, walPath: storeURL.path + "-wal")
        // Real mode samples on a thread of its own; a simulation samples every 50 ms of virtual time while a
        // phase's actors run (``runPhase(_:index:of:)``).
        if simulation == nil { sampler.startThread() }
        return VariantRun(simulation: simulation, baseline: baseline, wallStart: wallStart, runStart: runStart, model: model, recorder: recorder,
                          main: main, storeURL: storeURL, stack: stack, control: control, workload: workload, ticker: ticker, sampler: sampler)
    }
}
