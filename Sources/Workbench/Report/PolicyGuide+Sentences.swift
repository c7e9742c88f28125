import Foundation

/// The guide's sentences that state a fact: the workload, read from the scenario's parsed values, and what the
/// figures say, computed from the run by a rule written here. A sentence that no rule computes is not in the guide.
extension PolicyGuide {
    // MARK: The workload, from the scenario

    /// A ratio below this counts as no difference: "within 10%".
    static let sameWithin = 1.1

    /// What the scenario's phases do, one sentence per phase with actors, from the parsed values.
    static func workloadSentences(_ scenario: Scenario) -> [String] {
        let hot = Workload.hotSetSize(scenario)
        return scenario.phases.compactMap { phase in
            let actors = phase.actors.map { describe($0, hot: hot) }
            guard !actors.isEmpty else { return nil }
            let span = phase.duration.map { " (\(durationText($0)) of the run's clock)" } ?? ""
            return "Phase `\(phase.name)`\(span): " + actors.joined(separator: "; ") + "."
        }
    }

    /// Whether every context of every variant has the same policy: the policy column is then all contexts'.
    static func onePolicyPerVariant(_ results: [VariantResult]) -> Bool {
        results.allSatisfy { Set($0.policies.values).count <= 1 }
    }

    static func describe(_ actor: ActorSpec, hot: Int) -> String {
        switch actor {
        case .importer(let a):
            let chunks = "an importer saves \(a.objects) records in \(a.chunkSize)-record chunks, \(rateText(a.rate))"
            guard a.updateFraction > 0 || a.deleteFraction > 0 else { return chunks + ", all of them new" }
            var parts: [String] = []
            let updates = Int((Double(a.chunkSize) * a.updateFraction).rounded())
            if a.updateFraction > 0 {
                parts.append("\(percent(a.updateFraction)) of each chunk (\(updates) of \(a.chunkSize) records) update existing records")
            }
            if a.deleteFraction > 0 { parts.append("\(percent(a.deleteFraction)) delete existing records") }
            let inserts = max(0, 1 - a.updateFraction - a.deleteFraction)
            parts.append(inserts > 0 ? "\(percent(inserts)) are new" : "none are new")
            var text = chunks + ": " + parts.joined(separator: ", ")
            if a.updateFraction > 0 {
                text += "; the updated records are \(drawText(a.distribution, hot: hot))"
                if a.distribution == .hotspot && updates > hot {
                    text += " (a chunk's updates are distinct records, so at most \(hot) of its \(updates) are on screen)"
                }
            }
            return text
        case .viewer(let v):
            return "a viewer keeps \(v.visibleObjects) records on screen" + (v.readOnly ? " (a read-only view context)" : "")
        case .editor(let e):
            return "an editor changes up to \(e.edits) of the records on screen \(rateText(e.rate)) and saves them into the view context"
                + (e.saveViewContext ? ", which then saves" : "")
        case .writer(let w):
            return "a second writer on its own coordinator (another process, as far as the app's contexts know) changes \(w.edits) record(s) \(rateText(w.rate)), \(drawText(w.distribution, hot: hot))"
        default:
            return "a `\(actor.kind)` actor (see the scenario file)"
        }
    }

    static func drawText(_ distribution: Distribution, hot: Int) -> String {
        switch distribution {
        case .uniform: return "drawn uniformly among all records"
        case .zipfian: return "drawn zipfian (record k with weight 1/k)"
        case .hotspot: return "drawn hotspot: each draw is one of the \(hot) on screen with probability \(number(Distribution.hotShare)), else any record"
        }
    }

    static func rateText(_ rate: Rate) -> String {
        switch rate {
        case .unlimited: return "as fast as it can"
        case .perSecond(let r): return "\(number(r)) times a second"
        }
    }

    static func durationText(_ seconds: Double) -> String {
        seconds < 1 ? "\(number(seconds * 1000)) ms" : "\(number(seconds)) s"
    }

    /// A parsed value as the file would write it: 0.9, 10, 12.5 (six significant digits, no trailing zeros).
    static func number(_ v: Double) -> String { String(format: "%g", v) }

    static func percent(_ fraction: Double) -> String { "\(number(fraction * 100))%" }

    // MARK: Which factor spreads a figure: the topology or the policy

    /// A figure's medians over the repetitions, by topology and policy.
    struct Grid {
        var topologies: [String]
        var policies: [String]
        var cells: [String: Double]  // "topology\u{1}policy"
        /// Variants that ran but recorded no value.
        var missing: [(topology: String, policy: String)]

        init(_ all: [Variant], value: (VariantResult) -> Double?) {
            topologies = []
            policies = []
            cells = [:]
            missing = []
            for v in all {
                if !topologies.contains(v.topology) { topologies.append(v.topology) }
                if !policies.contains(v.policy) { policies.append(v.policy) }
                if let m = median(v.runs.compactMap(value)) { cells[v.topology + "\u{1}" + v.policy] = m } else { missing.append((v.topology, v.policy)) }
            }
        }

        func value(_ topology: String, _ policy: String) -> Double? { cells[topology + "\u{1}" + policy] }

        /// Highest over lowest of the values, where there are two or more and the lowest is above zero.
        static func ratio(_ values: [Double]) -> Double? {
            guard values.count >= 2, let lo = values.min(), let hi = values.max(), lo > 0 else { return nil }
            return hi / lo
        }

        /// For each topology, the spread across the policies within it.
        var acrossPolicies: [(topology: String, ratio: Double)] {
            topologies.compactMap { t in Self.ratio(policies.compactMap { value(t, $0) }).map { (t, $0) } }
        }

        /// For each policy, the spread across the topologies under it.
        var acrossTopologies: [(policy: String, ratio: Double)] {
            policies.compactMap { p in Self.ratio(topologies.compactMap { value($0, p) }).map { (p, $0) } }
        }
    }

    static func times(_ r: Double) -> String { String(format: r < 10 ? "%.1f×" : "%.0f×", r) }

    static func spreadText(_ ratios: [Double]) -> String {
        let lo = ratios.min()!, hi = ratios.max()!, mid = median(ratios)!
        return times(lo) == times(hi) ? times(lo) : "\(times(lo))–\(times(hi)) (median \(times(mid)))"
    }

    /// Which factor spreads `title` more. The rule: the highest over the lowest median of the cells, taken across
    /// the policies within each topology and across the topologies under each policy; the factor whose ratios have
    /// the larger median spreads the figure more, unless the two medians are within 10% of each other.
    static func factorSentence(_ title: String, _ grid: Grid) -> String? {
        let byPolicy = grid.acrossPolicies.map(\.ratio), byTopology = grid.acrossTopologies.map(\.ratio)
        guard let p = median(byPolicy), let t = median(byTopology) else { return nil }
        let verdict = max(p, t) / min(p, t) < sameWithin ? "the topology and the policy spread it about as much"
            : p > t ? "the policy spreads it more than the topology" : "the topology spreads it more than the policy"
        return "- \(title) (median of the repetitions): \(verdict). Across the policies within one topology the highest is \(spreadText(byPolicy)) the lowest; across the topologies under one policy, \(spreadText(byTopology))."
    }

    /// Where the policy matters within a topology: the policy with the lowest `title` in the most topologies, by how
    /// much (the highest policy's value over its own there), and the topologies whose policies are within 10%.
    static func policyWithinTopologySentence(_ title: String, _ grid: Grid) -> String? {
        var lowestIn: [String: [(topology: String, ratio: Double)]] = [:]
        var same: [String] = []
        for (topology, ratio) in grid.acrossPolicies {
            guard ratio >= sameWithin else { same.append(topology); continue }
            let values = grid.policies.compactMap { p in grid.value(topology, p).map { (p, $0) } }
            let lo = values.map(\.1).min()!
            for (policy, value) in values where value == lo { lowestIn[policy, default: []].append((topology, ratio)) }
        }
        var parts: [String] = []
        let total = grid.acrossPolicies.count
        if let (policy, cases) = lowestIn.sorted(by: { ($1.value.count, $0.key) < ($0.value.count, $1.key) }).first {
            let names = cases.map { "`\($0.topology)`" }.joined(separator: ", ")
            parts.append("`\(policy)` has the lowest \(title) in \(cases.count) of \(total) topologies (\(names)), where the highest policy's is \(spreadText(cases.map(\.ratio))) `\(policy)`'s")
        }
        if !same.isEmpty {
            parts.append("in \(same.map { "`\($0)`" }.joined(separator: ", ")) the policies are within 10% of each other")
        }
        let silent = grid.missing.map(\.policy)
        var absent: [String] = []
        for p in silent where !absent.contains(p) { absent.append(p) }
        for p in absent {
            let where_ = grid.missing.filter { $0.policy == p }.map { "`\($0.topology)`" }.joined(separator: ", ")
            parts.append("`\(p)` records no \(title) in \(where_)")
        }
        guard !parts.isEmpty else { return nil }
        return "- Within a topology: " + parts.joined(separator: "; ") + "."
    }
}
