import Foundation

/// A named baseline (`Scenarios/baselines/<name>.json`): which scenarios it runs and what they gave. `check`
/// compares exactly on deterministic counters and with a ratio tolerance on times (workbench.md `make ci`).
public struct Baseline: Sendable, Codable, Equatable {
    public struct Entry: Sendable, Codable, Equatable {
        public var scenario: String
        public var variant: String
        public var repetition: Int
        public var counters: [String: Int]
        /// metric.statistic → value (ms for latencies), compared with the tolerance (real mode).
        public var timings: [String: Double]
        /// Simulated mode: every exact metric (`metric.statistic` or `metric.statistic[label]`), compared exactly.
        public var exact: [String: Double]?
    }
    public var name: String
    public var files: [String]
    public var overrides: [String]
    /// Largest allowed ratio current / baseline for timings (and the smallest, inverted).
    public var timingTolerance: Double
    public var entries: [Entry]

    static let timingKeys = [("mergeLatency", "p50"), ("mergeLatency", "p99"), ("mainBusy", "p99")]
    /// Times below this many milliseconds count as this many when compared with the tolerance.
    static let timingFloor = 5.0

    public static func url(name: String, root: URL) -> URL {
        root.appendingPathComponent("\(name).json")
    }

    public static func make(name: String, files: [String], overrides: [String], results: [VariantResult]) -> Baseline {
        Baseline(name: name, files: files, overrides: overrides, timingTolerance: 5, entries: results.map { r in
            if r.mode == ExecutionMode.simulated.rawValue {
                // Simulated: every count and virtual time is exact (Docs/simulation.md "What is exact").
                return Entry(scenario: r.scenario, variant: r.variant, repetition: r.repetition, counters: r.counters, timings: [:], exact: exactMetrics(r))
            }
            var timings: [String: Double] = [:]
            for (m, s) in timingKeys { if let v = r.value(m, s) { timings["\(m).\(s)"] = v } }
            return Entry(scenario: r.scenario, variant: r.variant, repetition: r.repetition,
                         counters: r.counters.filter { MetricCatalog.deterministic.contains($0.key) }, timings: timings, exact: nil)
        })
    }

    /// A run's exact metrics by `metric.statistic[label]` (host figures are not among them).
    public static func exactMetrics(_ r: VariantResult) -> [String: Double] {
        var exact: [String: Double] = [:]
        for m in r.metrics { exact[m.label.isEmpty ? "\(m.metric).\(m.statistic)" : "\(m.metric).\(m.statistic)[\(m.label)]"] = m.value }
        return exact
    }

    public static func load(name: String, root: URL) throws -> Baseline {
        let file = url(name: name, root: root)
        guard let data = try? Data(contentsOf: file) else {
            throw WorkbenchError(.badInput, "no baseline named \(name) (\(file.path)); record one with `ambar-bench baseline \(name) FILE...`")
        }
        do { return try JSONDecoder().decode(Baseline.self, from: data) } catch {
            throw WorkbenchError(.badInput, "\(file.path) is not a baseline: \(error)")
        }
    }

    public func save(root: URL) throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try ReportWriter.encoder().encode(self).write(to: Self.url(name: name, root: root))
    }

    /// Differences between a run and the baseline, each naming the metric.
    public func compare(_ results: [VariantResult]) -> [String] {
        var problems: [String] = []
        for entry in entries {
            guard let r = results.first(where: { $0.scenario == entry.scenario && $0.variant == entry.variant && $0.repetition == entry.repetition }) else {
                problems.append("\(entry.scenario) \(entry.variant) #\(entry.repetition): missing from the run")
                continue
            }
            if let exact = entry.exact {
                let actual = Self.exactMetrics(r)
                for key in Set(exact.keys).union(actual.keys).sorted() where exact[key] != actual[key] {
                    let describe = { (v: Double?) in v.map { CSVOutput.number($0) } ?? "missing" }
                    problems.append("\(entry.scenario) \(entry.variant) #\(entry.repetition): \(key) is \(describe(actual[key])), baseline \(describe(exact[key])) (simulated: must match exactly)")
                }
            }
            for (name, expected) in entry.counters.sorted(by: { $0.key < $1.key }) {
                let actual = r.counters[name] ?? 0
                if actual != expected {
                    problems.append("\(entry.scenario) \(entry.variant) #\(entry.repetition): counter \(name) is \(actual), baseline \(expected) (deterministic: must match exactly)")
                }
            }
            for (key, expected) in entry.timings.sorted(by: { $0.key < $1.key }) {
                let parts = key.split(separator: ".", maxSplits: 1).map(String.init)
                guard let actual = r.value(parts[0], parts[1]) else { continue }
                // Small times are scheduler noise on a shared machine (a 1.4 ms p99 was seen at 9.6 ms on a busy
                // 2-core host): compare from 5 ms up.
                let ratio = max(actual, Self.timingFloor) / max(expected, Self.timingFloor)
                if ratio > timingTolerance {
                    problems.append("\(entry.scenario) \(entry.variant) #\(entry.repetition): \(key) is \(actual) ms, \(String(format: "%.1f", ratio))× the baseline \(expected) ms (tolerance \(timingTolerance)×)")
                }
            }
        }
        return problems
    }
}
