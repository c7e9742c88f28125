import Foundation

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
