import Foundation

/// One criterion of a scenario's `objective:`: a metric statistic, lower (or higher) better.
/// Criteria are compared in order: the second only breaks ties of the first, and so on.
public struct ObjectiveCriterion: Sendable, Codable, Equatable {
    public var metric: String
    /// nil: `p99` where the metric has it, else the first of `count`, `value`, `total`, `peak`, `max`.
    public var statistic: String?
    /// The sub-series (`promised` for `lostUpdates`); "" for the metric's own row.
    public var label: String = ""
    public var polarity: Threshold.Polarity = .lowerIsBetter

    public init(_ metric: String, statistic: String? = nil, label: String = "", polarity: Threshold.Polarity = .lowerIsBetter) {
        (self.metric, self.statistic, self.label, self.polarity) = (metric, statistic, label, polarity)
    }

    /// What a scenario without `objective:` asks for: lose no acknowledged write the policy does not promise to
    /// lose, then refuse none (a failed save's changes are the user's work, not in the store either: the app was
    /// told, the work is still gone), then drop none the policy promises, then fail no save, then keep the main
    /// queue's worst blocks short.
    public static let defaultObjective: [ObjectiveCriterion] = [
        ObjectiveCriterion("lostUpdates"),
        ObjectiveCriterion("refusedChanges"),
        ObjectiveCriterion("lostUpdates", label: "promised"),
        ObjectiveCriterion("saveFailures"),
        ObjectiveCriterion("mainBusy", statistic: "p99"),
    ]

    static let automaticStatistics = ["p99", "count", "value", "total", "peak", "max"]

    /// The row this criterion reads in `result`, if the result has one.
    func row(in result: VariantResult) -> MetricRow? {
        let rows = result.metrics + result.host
        let candidates = statistic.map { [$0] } ?? Self.automaticStatistics
        for s in candidates {
            if let row = rows.first(where: { $0.metric == metric && $0.statistic == s && $0.label == label }) { return row }
        }
        return nil
    }

    /// `lostUpdates`, `lostUpdates[promised]`, `mainBusy.p99`.
    public var name: String {
        var s = metric
        if let statistic { s += ".\(statistic)" }
        if !label.isEmpty { s += "[\(label)]" }
        if polarity == .higherIsBetter { s += " (higher is better)" }
        return s
    }

    /// "3 lost", "0 failed saves", "mainBusy p99 0.9 ms".
    func phrase(_ value: String) -> String {
        switch (metric, label) {
        case ("lostUpdates", ""): return "\(value) lost"
        // Promised by the saving policy's rule or by the stack (a later push in a nested stack): never by `error`,
        // which refuses the save instead (`refusedChanges`).
        case ("lostUpdates", "promised"): return "\(value) dropped as the policy or stack promises"
        case ("refusedChanges", ""): return "\(value) refused"
        case ("saveFailures", ""): return "\(value) failed saves"
        case ("conflicts", ""): return "\(value) conflicts"
        case ("staleReads", ""): return "\(value) stale values"
        default:
            let stat = statistic.map { " \($0)" } ?? ""
            let sub = label.isEmpty ? "" : "[\(label)]"
            return "\(metric)\(sub)\(stat) \(value)"
        }
    }
}

/// The variants of one run ordered by the scenario's objective. With repetitions, one variant
/// ranks above another only when it is ahead in every repetition (the same seeds, paired); otherwise the two share
/// a place: a ranking only where it is stable.
public struct Ranking: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var variant: String
        /// 1 for the best; variants within each other's spread share a place.
        public var place: Int
        /// Whether another variant shares this place.
        public var tied: Bool
        /// The objective's values (the median over repetitions), formatted, with the range when they differ.
        public var values: [String]
        /// "objectTrump / ambar: 0 lost, 0 refused, 0 dropped as the policy or stack promises, 0 failed saves, mainBusy p99 0.9 ms: best".
        public var sentence: String
    }
    /// A variant whose oracle saw acknowledged writes disappear, promised by its policy or not, or whose failed
    /// saves kept changes from the store: the user may not expect it even when the policy documents it.
    public struct Flag: Sendable, Equatable {
        public var variant: String
        public var text: String
    }

    public var objective: [ObjectiveCriterion]
    public var entries: [Entry]
    public var flags: [Flag]
    public var repetitions: Int

    /// "objective: lostUpdates, then refusedChanges, then lostUpdates[promised], then saveFailures, then mainBusy.p99".
    public var objectiveText: String { objective.map(\.name).joined(separator: ", then ") }

    public static func make(_ results: [VariantResult], objective: [ObjectiveCriterion]) -> Ranking {
        // Variants in the order they first ran; their repetitions by number.
        let groups = RepeatSummary.byVariant(results)
        let order = groups.map(\.variant)
        let runs = Dictionary(uniqueKeysWithValues: groups.map { ($0.variant, $0.runs) })
        let repetitions = runs.values.map(\.count).min() ?? 0
        /// The objective's values of each repetition (nil: a variant that lacks the metric ranks after those that have it).
        func vector(_ r: VariantResult) -> [Double?] { objective.map { $0.row(in: r)?.value } }
        func better(_ a: [Double?], _ b: [Double?]) -> Bool? {
            for (i, c) in objective.enumerated() {
                switch (a[i], b[i]) {
                case (nil, nil): continue
                case (.some, nil): return true
                case (nil, .some): return false
                case let (.some(x), .some(y)):
                    if abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1) { continue }
                    return c.polarity == .lowerIsBetter ? x < y : x > y
                }
            }
            return nil  // equal on every criterion
        }
        let vectors = order.map { name in runs[name]!.prefix(repetitions).map(vector) }
        let medians: [[Double?]] = vectors.map { reps in
            objective.indices.map { i in RepeatSummary.median(reps.compactMap { $0[i] }) }
        }
        // Order by the medians (ties by name, so that shards merged rank as one run does), then split into places.
        let sorted = order.indices.sorted { a, b in better(medians[a], medians[b]) ?? (order[a] < order[b]) }
        // A variant takes a place of its own only when every variant sharing the place above is ahead of it in
        // every repetition (not only the one just above: places must hold for the whole group).
        var placeOf: [Int] = []
        var group: [Int] = []
        for (n, index) in sorted.enumerated() {
            if n == 0 { placeOf.append(1); group = [index]; continue }
            let aheadEverywhere = repetitions > 0 && group.allSatisfy { above in
                (0..<repetitions).allSatisfy { better(vectors[above][$0], vectors[index][$0]) == true }
            }
            if aheadEverywhere {
                placeOf.append(n + 1)
                group = [index]
            } else {
                placeOf.append(placeOf[n - 1])
                group.append(index)
            }
        }
        var entries: [Entry] = []
        for (n, index) in sorted.enumerated() {
            let name = order[index]
            let sample = runs[name]![0]
            var values: [String] = []
            var phrases: [String] = []
            for (i, c) in objective.enumerated() {
                let unit = c.row(in: sample)?.unit ?? ""
                let reps = vectors[index].compactMap { $0[i] }
                guard let median = medians[index][i] else {
                    values.append("–")
                    phrases.append(c.phrase("–"))
                    continue
                }
                var text = format(median, unit: unit)
                if let lo = reps.min(), let hi = reps.max(), hi - lo > 1e-9 * max(abs(hi), 1) {
                    text += " (\(format(lo, unit: unit, withUnit: false))–\(format(hi, unit: unit, withUnit: false)))"
                }
                values.append(text)
                phrases.append(c.phrase(text))
            }
            let place = placeOf[n]
            let tied = placeOf.filter { $0 == place }.count > 1
            let standing = place == 1 ? (tied ? "tied best" : "best") : (tied ? "tied \(ordinal(place))" : ordinal(place))
            let label = displayName(sample)
            entries.append(Entry(variant: name, place: place, tied: tied, values: values, sentence: "\(label): \(phrases.joined(separator: ", ")): \(standing)"))
        }
        var flags: [Flag] = []
        for name in order {
            let reps = runs[name]!
            let label = displayName(reps[0])
            let lost = reps.map(\.oracle.lostUpdates), promised = reps.map(\.oracle.promisedLosses), readOnly = reps.map(\.oracle.readOnlySavesReachedStore)
            var parts: [String] = []
            if lost.contains(where: { $0 > 0 }) { parts.append("\(span(lost)) acknowledged write(s) lost that no policy promises to drop") }
            if promised.contains(where: { $0 > 0 }) {
                let policies = Set(reps.flatMap { $0.policies.values }).sorted().joined(separator: ", ")
                parts.append("\(span(promised)) acknowledged write(s) dropped as its policy (\(policies)) or its stack promises: an app would still lose them")
            }
            let refused = reps.map { Int($0.value("refusedChanges", "count") ?? 0) }
            if refused.contains(where: { $0 > 0 }) { parts.append("\(span(refused)) change(s) of failed saves never reached the store") }
            if readOnly.contains(where: { $0 > 0 }) { parts.append("\(span(readOnly)) save(s) from a \"read-only\" context reached the store") }
            if !parts.isEmpty { flags.append(Flag(variant: name, text: "\(label): " + parts.joined(separator: "; "))) }
        }
        return Ranking(objective: objective, entries: entries, flags: flags, repetitions: repetitions)
    }

    /// The variant's matrix values ("objectTrump / ambar"), or "default". A value that does not say what it is on
    /// its own (a number or a boolean) comes with its key's last name ("pinViewGeneration=true", "objects=10000").
    static func displayName(_ r: VariantResult) -> String {
        guard !r.parameters.isEmpty else { return "default" }
        return r.parameters.sorted { $0.key < $1.key }.map { key, value in
            let bare = value == "true" || value == "false" || Double(value) != nil
            return bare ? "\(key.split(separator: ".").last.map(String.init) ?? key)=\(value)" : value
        }.joined(separator: " / ")
    }

    static func span(_ values: [Int]) -> String {
        let lo = values.min() ?? 0, hi = values.max() ?? 0
        return lo == hi ? "\(lo)" : "\(lo)–\(hi)"
    }

    /// A value with its unit ("0.91 ms", "12", "3.5 MiB"); without the unit for the ends of a range.
    static func format(_ v: Double, unit: String, withUnit: Bool = true) -> String {
        let number: String
        if unit == "ms" {
            number = String(format: v < 10 ? "%.2f" : "%.1f", v)
        } else if v == v.rounded(), abs(v) < 1e12 {
            number = String(Int64(v))
        } else {
            number = String(format: v < 10 ? "%.3f" : "%.1f", v)
        }
        return withUnit && !unit.isEmpty && unit != "count" ? "\(number) \(unit)" : number
    }

    static func ordinal(_ n: Int) -> String {
        let suffix = (11...13).contains(n % 100) ? "th" : (n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th")
        return "\(n)\(suffix)"
    }

    /// ranking.csv: one row per variant, best first.
    func csv() throws -> String {
        try CSVOutput.text(header: ["place", "tied", "variant"] + objective.map(\.name) + ["sentence"],
                           rows: entries.map { [String($0.place), String($0.tied), $0.variant] + $0.values + [$0.sentence] })
    }
}
