import Dispatch
import Foundation
import Histogram
import ObjectGraph
import Synchronization

/// Metric names (identical in YAML, CSV, JSON and the HTML report, workbench.md "Metrics").
public enum MetricCatalog {
    public static let names: Set<String> = Set<String>([
        "mergeLatency", "mainBusy", "mainBusyCPU", "hitchRatio", "hitchRatio120", "hangs", "longTasks", "saveLatency",
        "importThroughput", "fetchLatency", "conflicts", "saveFailures", "lostUpdates", "refusedChanges", "staleReads", "duplicates",
        "readOnlySavesReachedStore", "memoryAllocated", "memoryResident", "threadAllocated",
        "threadFreed", "registeredObjects", "keptIDChanges", "rowCacheEntries", "sqliteMemory", "mainQueueDepth", "objectsMerged",
        "mergeObjectsRefreshed", "mergeObjectsExamined", "faultsFired", "rowsInserted", "rowsUpdated", "rowsDeleted",
        "sqlSelect", "sqlInsert", "sqlUpdate", "sqlDelete", "saves", "merges", "notifications", "rowCacheHits",
        "rowCacheMisses", "operations",
        // Simulated mode (Docs/simulation.md).
        "mainBlocked", "mainStall", "mainBlocks", "framesMissed", "runTime", "costedOperations", "costedTime", "frames", "wallSeconds", "frcObjects", "importerRegisteredObjects", "refetches", "importerStoppedByDuration", "migrationTime", "rowsMigrated",
        // The store's write-ahead log, which a pinned query generation keeps from being checkpointed.
        "walSize",
        // Everyday workloads (Docs/scenarios.md): the fetcher's fetches and the objects they returned, by context;
        // each controller's changes when a phase has several viewers; actors a phase's duration stopped.
        "fetches", "fetchedObjects", "frcChanges", "fetcherStoppedByDuration", "deleterStoppedByDuration",
        // `saveParents: false`: what the parents of background children hold unsaved at the end.
        "unsavedObjects",
    ]).union(QueueCounters.metricNames)
    /// Metrics the runner reports as times (milliseconds; `runTime` in seconds): their statistics other than
    /// `count` are durations, what a published time may stand for.
    public static let timeMetrics: Set<String> = [
        "saveLatency", "mergeLatency", "fetchLatency", "mainBusy", "mainBlocked", "mainStall", "migrationTime", "runTime", "costedTime",
    ]
    /// Metrics the runner reports in bytes: what a published size may stand for.
    public static let sizeMetrics: Set<String> = [
        "memoryAllocated", "memoryResident", "sqliteMemory", "walSize", "threadAllocated", "threadFreed",
    ]
    public static let statistics = ["count", "p50", "p90", "p99", "p99.9", "max", "mean", "value", "total", "peak"]
    /// Counters that are the same for the same scenario and seed on any machine (the CI gate is exact on them):
    /// what was written, and what the merges cost the view context (registry entries examined, objects
    /// refreshed). Statement counts, notifications and the view's faults fired are not: conflict retries,
    /// coalesced changes and editor pushes landing between merges follow timing (seen: 44 and 59 fired).
    public static let deterministic: Set<String> = [
        "rowsInserted", "rowsUpdated", "rowsDeleted", "saves", "merges", "operations", "duplicates",
        "mergeObjectsRefreshed", "mergeObjectsExamined",
    ]
}

/// One number of a run: long format, one row per (scenario, variant, repetition, metric, statistic).
public struct MetricRow: Sendable, Codable, Equatable {
    public var metric: String
    public var statistic: String
    public var value: Double
    public var unit: String
    /// Sub-series, e.g. the context role for saveLatency or the policy outcome for conflicts ("" when none).
    public var label: String

    public init(_ metric: String, _ statistic: String, _ value: Double, _ unit: String, label: String = "") {
        self.metric = metric
        self.statistic = statistic
        self.value = value
        self.unit = unit
        self.label = label
    }
}

/// Whether the run is in a phase its latency distributions describe (workbench.md "Phases"): closed during a
/// seed phase, which only fills the store the measured phases start from.
public final class MeasuredPhase: Sendable {
    private let open = Atomic<Bool>(true)
    public init() {}
    public var isOpen: Bool { open.load(ordering: .relaxed) }
    func set(_ measured: Bool) { open.store(measured, ordering: .relaxed) }
}

/// A latency distribution in microseconds (HdrHistogram), safe to record from any thread.
public final class LatencyRecorder: Sendable {
    private let histogram = Mutex(Histogram<UInt64>(highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three))
    /// Records only while this is open (nil: always).
    private let phase: MeasuredPhase?

    public init(recordingIn phase: MeasuredPhase? = nil) { self.phase = phase }

    /// Records one duration in nanoseconds (nothing outside the measured phases).
    public func record(nanoseconds: UInt64) {
        if let phase, !phase.isOpen { return }
        let micros = max(1, min(nanoseconds / 1000, 600_000_000))
        histogram.withLock { _ = $0.record(micros) }
    }

    public var count: Int { histogram.withLock { Int($0.totalCount) } }

    /// count, p50, p90, p99, p99.9, max in milliseconds.
    public func rows(_ metric: String, label: String = "") -> [MetricRow] {
        histogram.withLock { h in
            guard h.totalCount > 0 else { return [MetricRow(metric, "count", 0, "count", label: label)] }
            func ms(_ v: UInt64) -> Double { (Double(v) / 1000 * 1000).rounded() / 1000 }
            return [
                MetricRow(metric, "count", Double(h.totalCount), "count", label: label),
                MetricRow(metric, "p50", ms(h.valueAtPercentile(50)), "ms", label: label),
                MetricRow(metric, "p90", ms(h.valueAtPercentile(90)), "ms", label: label),
                MetricRow(metric, "p99", ms(h.valueAtPercentile(99)), "ms", label: label),
                MetricRow(metric, "p99.9", ms(h.valueAtPercentile(99.9)), "ms", label: label),
                MetricRow(metric, "max", ms(h.max), "ms", label: label),
                MetricRow(metric, "mean", (h.mean / 1000 * 1000).rounded() / 1000, "ms", label: label),
            ]
        }
    }

    /// Points of the percentile curve (percentile, ms) for the report.
    public func curve() -> [(Double, Double)] {
        histogram.withLock { h in
            guard h.totalCount > 0 else { return [] }
            return [0, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 100].map { p in (p, Double(h.valueAtPercentile(p)) / 1000) }
        }
    }
}

