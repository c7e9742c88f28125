import Foundation
import ObjectGraph
import Synchronization

extension VariantRunner {
    /// The variant's result: its exact figures (latencies, main-queue time, conflicts, the oracle's counts,
    /// counters), the host's figures, the thresholds' outcomes; watches the run's objects until they go.
    func collect(_ run: VariantRun, _ final: FinalState, _ v: Verification, leftovers: Leftovers) -> VariantResult {
        let recorder = run.recorder, main = run.main, stack = run.stack, view = run.view
        var notes = final.recorderState.notes
        if let failure = recorder.events.failure { notes.append("the event log failed, the oracle may have missed events: \(failure)") }
        let viewCounters = view.performAndWait { view.counters }
        let coordinatorCounters = stack.coordinators.map { ($0.0, $0.1.counters) }
        // The controller's size (Rule 23): what it holds, not what a frame reads.
        // A frames-only viewer has no controller, so no size.
        // Each controller's size, changes and largest size; the unlabelled figures are their sums (one viewer: its own).
        let controllerSizes = run.viewers.compactMap { viewer in viewer.controller.map { c in view.performAndWait { (c.objectCount, viewer.peakObjects, viewer.changes) } } }
        // The viewers' controllers hold the objects on screen: they go with the rest of the run (``Leftovers``).
        leftovers.objects += run.viewers
        run.viewers = []
        let mainState = main.stats.state.withLock { $0 }
        let runSeconds = max(0.001, Double(Clock.now() - run.runStart) / 1e9)
        var rows = Self.timingRows(run, final, mainState: mainState, runSeconds: runSeconds)
        var counters = final.recorderState.counters
        counters["migrationNanos"] = nil
        Self.addConflictRows(final, v.oracle, coordinatorCounters: coordinatorCounters, to: &rows, counters: &counters)
        let readings = run.sampler.samples.withLock { $0 }
        let (host, wallSeconds) = Self.hostRows(run, readings: readings)
        Self.addMainQueueRows(run, final, controllerSizes: controllerSizes, mainState: mainState, runSeconds: runSeconds, to: &rows)
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
            timeseries: readings, mergeCurve: recorder.mergeLatency.curve().map { [$0.0, $0.1] }, oracle: v.oracle, thresholds: [],
            notes: notes, wallSeconds: run.simulation == nil ? runSeconds : wallSeconds, events: v.keptEvents)
        result.eventHistory = v.eventHistory
        result.partial = run.stoppedIn
        result.mainBlockSamples = main.stats.blockSamples.withLock { $0 }
        result.costRules = CostRule.applying(to: scenario)
        result.thresholds = scenario.thresholds.map { t in
            let value = result.metrics.first { $0.metric == t.metric && $0.statistic == t.statistic }?.value
            let passed = value.map { t.polarity == .lowerIsBetter ? $0 <= t.limit : $0 >= t.limit } ?? false
            return ThresholdOutcome(metric: t.metric, statistic: t.statistic, limit: t.limit, polarity: t.polarity.rawValue, value: value, passed: passed, fails: t.fails)
        }
        // The next variant's memory baseline waits for these to go.
        let watched: [(String, AnyObject)] = [("stack", stack), ("view context", run.view), ("workload", run.workload), ("recorder", recorder), ("main queue", main)]
            + stack.coordinators.map { ("coordinator \($0.0)", $0.1) }
        Self.watch(watched.map { WatchedObject(name: $0.0, object: $0.1) } + v.oracleObjects)
        leftovers.objects += watched.map(\.1)
        return result
    }

    /// The run's timings: the latency distributions (merges, fetches, saves), the main queue's hitch ratios, hangs and
    /// depth, the import's throughput and the migration's time.
    static func timingRows(_ run: VariantRun, _ final: FinalState, mainState: SimulatedMainThread.Stats.State, runSeconds: Double) -> [MetricRow] {
        let recorder = run.recorder, main = run.main, recorderState = final.recorderState
        var rows: [MetricRow] = []
        rows += recorder.mergeLatency.rows("mergeLatency")
        rows += main.stats.mergeBusy.rows("mainBusy")
        rows += recorder.fetchLatency.rows("fetchLatency")
        for (label, r) in recorder.fetchLatencyLabels where r.count > 0 { rows += r.rows("fetchLatency", label: label) }
        // A role that saved only in seed phases has no measured saves, and no row.
        for (role, r) in recorder.saveLatencyRoles where r.count > 0 { rows += r.rows("saveLatency", label: role) }
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
        return rows
    }

    /// Conflicts by layer and outcome, save failures, the oracle's counts and what parents hold unsaved; each
    /// coordinator's SQL statements and row cache (`coordinatorCounters`) go to `counters`.
    static func addConflictRows(_ final: FinalState, _ oracle: OracleReport, coordinatorCounters: [(String, CoordinatorCounters)],
                                to rows: inout [MetricRow], counters: inout [String: Int]) {
        let recorderState = final.recorderState
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
        rows.append(MetricRow("refusedChanges", "count", Double(final.refusedChanges), "count"))
        rows.append(MetricRow("staleReads", "count", Double(oracle.staleReads), "count"))
        rows.append(MetricRow("duplicates", "count", Double(oracle.duplicates), "count"))
        rows.append(MetricRow("readOnlySavesReachedStore", "count", Double(final.readOnlySaves), "count"))
        for (kind, n) in final.unsaved { rows.append(MetricRow("unsavedObjects", "value", Double(n), "objects", label: kind)) }
    }

    /// The host's figures (never exact): the main queue's CPU time, memory above the baseline, the threads'
    /// allocations, the store's SQLite figures, and the wall time, which it returns too.
    static func hostRows(_ run: VariantRun, readings: [TimeSample]) -> ([MetricRow], Double) {
        let baseline = run.baseline, sampler = run.sampler
        var host: [MetricRow] = run.main.stats.mergeBusyCPU.rows("mainBusyCPU")
        // Allocation above the baseline taken before the variant began, once the previous one was freed: the peak of
        // this variant's own samples (and end-of-phase readings) less it, and its last sample less it.
        let allocatedSeries = readings.compactMap(\.allocated)
        if let start = baseline.reading.allocated, let last = allocatedSeries.last {
            host.append(MetricRow("memoryAllocated", "peak", Double(max(0, max(sampler.peakAllocated.load(ordering: .relaxed), allocatedSeries.max()!) - start)), "bytes"))
            host.append(MetricRow("memoryAllocated", "value", Double(max(0, last - start)), "bytes"))
        }
        if let resident = readings.compactMap(\.resident).max() {
            host.append(MetricRow("memoryResident", "peak", Double(resident), "bytes"))
            if let start = baseline.reading.resident {
                host.append(MetricRow("memoryResident", "value", Double(start), "bytes", label: baseline.purged ? "start" : "start:notPurged"))
                host.append(MetricRow("memoryResident", "peak", Double(max(0, resident - start)), "bytes", label: "growth"))
            }
        }
        let threadTotals = sampler.threadTotals.withLock { $0 }
        if threadTotals.allocated > 0 {
            host.append(MetricRow("threadAllocated", "total", Double(threadTotals.allocated), "bytes"))
            host.append(MetricRow("threadFreed", "total", Double(threadTotals.freed), "bytes"))
        }
        // The store's SQLite figures: absent for an in-memory store, whose run uses SQLite only for the harness's
        // event log (a zero or the log's figures would read as the store's).
        if !run.isInMemoryStore {
            sampler.sampleWAL()
            host.append(MetricRow("walSize", "peak", Double(sampler.peakWAL.load(ordering: .relaxed)), "bytes"))
            host.append(MetricRow("sqliteMemory", "peak", Double(SQLiteStatistics.memoryHighwater), "bytes"))
            host.append(MetricRow("sqliteMemory", "value", Double(SQLiteStatistics.memoryUsed), "bytes"))
            host.append(MetricRow("sqliteMemory", "value", Double(SQLiteStatistics.pageCacheOverflow), "bytes", label: "pageCacheOverflow"))
        }
        let wallSeconds = Double(DispatchTime.now().uptimeNanoseconds - run.wallStart) / 1e9
        host.append(MetricRow("wallSeconds", "value", (wallSeconds * 1000).rounded() / 1000, "s"))
        return (host, wallSeconds)
    }

    /// The main queue's time (virtual: by block kind, blocked, longest block; real: its wall time), missed
    /// frames, the view context's registered objects, and the viewers' controllers (`controllerSizes`: each one's size,
    /// largest size and changes, in the viewers' order).
    static func addMainQueueRows(_ run: VariantRun, _ final: FinalState, controllerSizes: [(Int, Int, Int)], mainState: SimulatedMainThread.Stats.State,
                                 runSeconds: Double, to rows: inout [MetricRow]) {
        let main = run.main
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
        rows.append(MetricRow("registeredObjects", "value", Double(final.view.registered), "objects", label: "view"))
        // Semantics §2.2: the ID changes the view context keeps for its children until a reset.
        rows.append(MetricRow("keptIDChanges", "value", Double(final.view.keptIDChanges), "objects", label: "view"))
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
    }
}
