import Foundation

/// A variant's metrics over its repetitions (in simulated mode, one seed each): median and spread, so that two
/// variants can be said to differ only when their spreads do not overlap.
struct RepeatSummary {
    struct Metric {
        var metric: String
        var statistic: String
        var label: String
        var unit: String
        /// By repetition.
        var values: [Double]
        var median: Double { RepeatSummary.median(values) ?? 0 }
        var min: Double { values.min() ?? 0 }
        var max: Double { values.max() ?? 0 }
        var key: String { label.isEmpty ? "\(metric).\(statistic)" : "\(metric).\(statistic)[\(label)]" }
    }

    var scenario: String
    var variant: String
    var repetitions: Int
    var seeds: [UInt64]
    var metrics: [Metric]

    /// The median (the mean of the two middle values for an even count); nil for no values. The one median of the
    /// reports: repeats.csv, the ranking and the merge-policy guide.
    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let s = values.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    /// Each variant's repetitions (by repetition number), the variants in the order they first appear.
    static func byVariant(_ results: [VariantResult]) -> [(variant: String, runs: [VariantResult])] {
        var order: [String] = []
        var groups: [String: [VariantResult]] = [:]
        for r in results {
            if groups[r.variant] == nil { order.append(r.variant) }
            groups[r.variant, default: []].append(r)
        }
        return order.map { ($0, groups[$0]!.sorted { $0.repetition < $1.repetition }) }
    }

    /// One summary per variant that ran more than once, in the order the variants first appear.
    static func make(_ results: [VariantResult]) -> [RepeatSummary] {
        byVariant(results).compactMap { name, runs in
            guard runs.count > 1 else { return nil }
            var byKey: [String: Metric] = [:]
            var keys: [String] = []
            for (index, r) in runs.enumerated() {
                for m in r.metrics {
                    let key = m.label.isEmpty ? "\(m.metric).\(m.statistic)" : "\(m.metric).\(m.statistic)[\(m.label)]"
                    if byKey[key] == nil {
                        keys.append(key)
                        // A metric missing from a repetition counts as 0 there (a count that did not happen).
                        byKey[key] = Metric(metric: m.metric, statistic: m.statistic, label: m.label, unit: m.unit, values: Array(repeating: 0, count: runs.count))
                    }
                    byKey[key]!.values[index] = m.value
                }
            }
            return RepeatSummary(scenario: runs[0].scenario, variant: name, repetitions: runs.count, seeds: runs.map(\.seed), metrics: keys.map { byKey[$0]! })
        }
    }

    func metric(_ key: String) -> Metric? { metrics.first { $0.key == key } }

    /// Whether two variants' values of `key` overlap (min–max): a difference within the spread.
    static func overlap(_ a: Metric, _ b: Metric) -> Bool { a.min <= b.max && b.min <= a.max }
}
