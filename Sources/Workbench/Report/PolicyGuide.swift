import Foundation

/// The measured part of `Docs/choosing-a-merge-policy.md`, generated from a run of
/// `Scenarios/policy-comparison.yaml` so that the page says what the shipped scenario and seed produce: a table of
/// medians and ranges over the repetitions, the ranking by the scenario's objective (a place only where it holds in
/// every repetition), and statements computed from the same figures. Everything between the two markers is this
/// generator's; the rest of the page is prose that quotes no measured figure.
public enum PolicyGuide {
    public static let beginMarker = "<!-- BEGIN GENERATED: `make guide` writes this part from Scenarios/policy-comparison.yaml; `make compare` fails when it differs. Do not edit by hand. -->"
    public static let endMarker = "<!-- END GENERATED -->"

    struct Column: Sendable {
        var title: String
        var unit: String
        var value: @Sendable (VariantResult) -> Double?
    }

    static let columns: [Column] = [
        Column(title: "merge p50 ms", unit: "ms") { $0.value("mergeLatency", "p50") },
        Column(title: "merge p99 ms", unit: "ms") { $0.value("mergeLatency", "p99") },
        Column(title: "mainBusy p99 ms", unit: "ms") { $0.value("mainBusy", "p99") },
        Column(title: "conflicts", unit: "") { r in r.metrics.filter { $0.metric == "conflicts" && $0.label.hasPrefix("layer:") }.reduce(0) { $0 + $1.value } },
        Column(title: "save failures", unit: "") { $0.value("saveFailures", "count") },
        Column(title: "lost updates", unit: "") { Double($0.oracle.lostUpdates) },
        Column(title: "refused changes", unit: "") { $0.value("refusedChanges", "count") },
        Column(title: "losses the policy or stack promises", unit: "") { Double($0.oracle.promisedLosses) },
        Column(title: "stale values", unit: "") { Double($0.oracle.staleReads) },
    ]

    /// A variant's repetitions, in the order the variants ran.
    struct Variant {
        var topology: String
        var policy: String
        var runs: [VariantResult]
    }

    static func variants(_ results: [VariantResult]) -> [Variant] {
        RepeatSummary.byVariant(results).map { _, runs in
            Variant(topology: runs[0].topology, policy: runs[0].policies["view"] ?? "", runs: runs)
        }
    }

    static func median(_ values: [Double]) -> Double? { RepeatSummary.median(values) }

    /// "0.41 (0.38–0.47)" or "12" when every repetition agrees.
    static func cell(_ values: [Double], unit: String) -> String {
        guard let median = median(values) else { return "–" }
        let s = values.sorted()
        func f(_ v: Double) -> String { unit == "ms" ? String(format: "%.3f", v) : Ranking.format(v, unit: "") }
        return s.first! == s.last! ? f(median) : "\(f(median)) (\(f(s.first!))–\(f(s.last!)))"
    }

    /// One table row per variant: `| topology | policy | oracle | … |`.
    public static func tableRows(_ results: [VariantResult]) -> [String] {
        variants(results).map { v in
            let verdicts = Dictionary(grouping: v.runs.map(\.oracle.verdict.rawValue), by: { $0 })
            let oracle = verdicts.count == 1 ? verdicts.keys.first! : verdicts.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value.count)" }.joined(separator: ", ")
            let cells = columns.map { c in cell(v.runs.compactMap(c.value), unit: c.unit) }
            return "| \(v.topology) | \(v.policy) | \(oracle) | " + cells.joined(separator: " | ") + " |"
        }
    }

    static func tableHeader(allContexts: Bool) -> [String] {
        ["| topology | \(allContexts ? "policy (all contexts)" : "view context's policy") | oracle | " + columns.map(\.title).joined(separator: " | ") + " |",
         "|---|---|---|" + String(repeating: "---|", count: columns.count)]
    }

    /// The scenario a run came from, as the guide describes it.
    public struct ScenarioSummary: Sendable {
        var first: Scenario
        /// Every variant runs the first one's phases.
        var sameWorkload: Bool

        public init(_ variants: [Scenario]) {
            first = variants[0]
            sameWorkload = variants.allSatisfy { $0.phases == variants[0].phases }
        }
    }

    /// The generated part, markers included; with the scenario, its workload in words.
    public static func render(_ results: [VariantResult], manifest: Manifest, scenario: ScenarioSummary? = nil) -> String {
        let all = variants(results)
        let repetitions = all.map(\.runs.count).min() ?? 0
        let seeds = results.map(\.seed)
        var lines = [beginMarker, ""]
        let mode = manifest.profile.map { "simulated mode on the `\($0.name)` cost profile: the same figures on any machine" } ?? "real mode: this machine's figures"
        lines.append("Scenario `\(manifest.scenario)`, \(all.count) variants × \(repetitions) repetitions (seeds \(seeds.min() ?? 0)–\(seeds.max() ?? 0)), \(mode). A cell is the median over the repetitions, with the range in brackets when they differ.")
        lines.append("")
        if let scenario {
            lines.append("The workload, from the scenario file\(scenario.sameWorkload ? "" : " (the matrix changes it: this is the first variant's)"):")
            lines.append("")
            lines += workloadSentences(scenario.first).map { "- " + $0 }
            lines.append("")
        }
        let allContexts = onePolicyPerVariant(results)
        if allContexts { lines += ["Every context of a variant has the policy in its row.", ""] }
        lines += tableHeader(allContexts: allContexts) + tableRows(results)
        lines.append("")
        let ranking = manifest.ranking(results)
        lines.append("### Ranking by the scenario's objective")
        lines.append("")
        lines.append("Objective: \(ranking.objectiveText). A variant takes a place of its own only when it is ahead of the one below it in every repetition; otherwise they share the place.")
        lines.append("")
        // Bullets, not a numbered list: Markdown renumbers a list, which would hide the shared places.
        for e in ranking.entries { lines.append("- \(e.sentence)") }
        lines.append("")
        lines.append("### What the figures say")
        lines.append("")
        lines += statements(all)
        lines.append("")
        lines.append(endMarker)
        return lines.joined(separator: "\n")
    }

    /// The changes of a run's failed saves that never reached the store.
    static func refused(_ r: VariantResult) -> Int { Int(r.value("refusedChanges", "count") ?? 0) }

    /// Statements computed from the figures, so that the text cannot contradict the table.
    static func statements(_ all: [Variant]) -> [String] {
        var out: [String] = []
        func range(_ values: [Int]) -> String {
            let lo = values.min() ?? 0, hi = values.max() ?? 0
            return lo == hi ? "\(lo)" : "\(lo)–\(hi)"
        }
        let failing = all.filter { $0.runs.contains { $0.oracle.verdict != .pass } }
        out.append(failing.isEmpty
            ? "- The oracle passes every variant in every repetition: nothing acknowledged was lost that the saving context's policy does not promise to lose."
            : "- The oracle does not pass \(failing.map { "\($0.policy) / \($0.topology)" }.joined(separator: ", ")) in every repetition: see the report for its findings.")
        var policies: [String] = []
        for v in all where !policies.contains(v.policy) { policies.append(v.policy) }
        var topologies: [String] = []
        for v in all where !topologies.contains(v.topology) { topologies.append(v.topology) }
        for policy in policies {
            let runs = all.filter { $0.policy == policy }.flatMap(\.runs)
            let failures = runs.map { Int($0.value("saveFailures", "count") ?? 0) }
            let promised = runs.map(\.oracle.promisedLosses), stale = runs.map(\.oracle.staleReads), lost = runs.map(\.oracle.lostUpdates)
            let refused = runs.map(Self.refused)
            // Promised by the saving policy's rule or by the stack (a later push in a nested stack): `error`
            // promises no loss, it refuses the save.
            out.append("- `\(policy)`, over every topology and repetition: \(range(failures)) failed save(s) per run, \(range(lost)) lost update(s), \(range(refused)) refused change(s), \(range(promised)) loss(es) the policy or the stack promises, \(range(stale)) stale value(s) on screen at the end.")
        }
        // Which policy gives up the most acknowledged writes, per topology and repetition.
        var most: [String: Int] = [:]
        var cases = 0
        for topology in topologies {
            let group = all.filter { $0.topology == topology }
            let n = group.map(\.runs.count).min() ?? 0
            for k in 0..<n {
                let values = group.map { ($0.policy, $0.runs[k].oracle.promisedLosses + $0.runs[k].oracle.lostUpdates + Self.refused($0.runs[k])) }
                guard let top = values.map(\.1).max(), top > 0 else { continue }
                cases += 1
                for (policy, value) in values where value == top { most[policy, default: 0] += 1 }
            }
        }
        if cases > 0 {
            let ranked = most.sorted { ($1.value, $0.key) < ($0.value, $1.key) }
            out.append("- Most changes kept from the store (lost, refused or promised), per topology and repetition: " + ranked.map { "`\($0.key)` in \($0.value) of \(cases)" }.joined(separator: ", ") + " (ties count for each).")
        }
        // The main queue's and the merge's p99: which factor spreads them, and where the policy matters.
        for (title, metric) in [("mainBusy p99", "mainBusy"), ("merge p99", "mergeLatency")] {
            let grid = Grid(all) { $0.value(metric, "p99") }
            out += [factorSentence(title, grid), policyWithinTopologySentence(title, grid)].compactMap { $0 }
        }
        return out
    }

    /// `page` with its generated part replaced by `generated` (or appended when it has none).
    public static func replacing(in page: String, with generated: String) -> String {
        guard let begin = page.range(of: beginMarker), let end = page.range(of: endMarker, range: begin.upperBound..<page.endIndex) else {
            return page + (page.hasSuffix("\n") ? "" : "\n") + "\n" + generated + "\n"
        }
        return String(page[..<begin.lowerBound]) + generated + String(page[end.upperBound...])
    }

    /// The generated part of `page`, markers included, if it has one.
    public static func generatedPart(of page: String) -> String? {
        guard let begin = page.range(of: beginMarker), let end = page.range(of: endMarker, range: begin.upperBound..<page.endIndex) else { return nil }
        return String(page[begin.lowerBound..<end.upperBound])
    }
}

extension PolicyGuide {
    /// What `ambar-bench guide` did.
    public enum Outcome: Equatable, Sendable {
        case written
        case unchanged
        /// `--check` found the page's generated part different: the first differing line of each.
        case differs(line: Int, page: String, run: String)
    }

    /// Writes (or, with `check`, compares) the generated part of `page` from the run in `runFolder`.
    public static func update(page: URL, runFolder: URL, check: Bool) throws -> Outcome {
        guard let data = try? Data(contentsOf: runFolder.appendingPathComponent("results.json")),
              let results = try? JSONDecoder().decode([VariantResult].self, from: data),
              let manifest = try? JSONDecoder().decode(Manifest.self, from: Data(contentsOf: runFolder.appendingPathComponent("manifest.json"))) else {
            throw WorkbenchError(.badInput, "\(runFolder.path) is not a run folder (results.json and manifest.json)")
        }
        if let stopped = manifest.failed ?? manifest.interrupted ?? results.first(where: { $0.partial != nil }).map({ "\($0.variant) is partial" }) {
            throw WorkbenchError(.badInput, "\(runFolder.path) is not a whole run (\(stopped)): run the scenario to the end first")
        }
        guard let text = try? String(contentsOf: page, encoding: .utf8) else {
            throw WorkbenchError(.badInput, "\(page.path): cannot read the page")
        }
        let loaded: ScenarioLoader.Loaded
        do { loaded = try ScenarioLoader.load(text: manifest.resolvedScenario, file: runFolder.appendingPathComponent("scenario.resolved.yaml").path) } catch {
            throw WorkbenchError(.badInput, "\(runFolder.path): its resolved scenario does not load (\(error)): the guide describes the workload from it")
        }
        let generated = render(results, manifest: manifest, scenario: loaded.variants.isEmpty ? nil : ScenarioSummary(loaded.variants))
        if check {
            let current = generatedPart(of: text) ?? ""
            if current == generated { return .unchanged }
            let a = current.components(separatedBy: "\n"), b = generated.components(separatedBy: "\n")
            let line = zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, b.count)
            return .differs(line: line + 1, page: line < a.count ? a[line] : "<end>", run: line < b.count ? b[line] : "<end>")
        }
        let updated = replacing(in: text, with: generated)
        if updated == text { return .unchanged }
        try Data(updated.utf8).write(to: page, options: .atomic)
        return .written
    }

    /// The newest whole run of `scenario` under `reportsRoot`, in the order retention keeps runs by (it is never
    /// removed: ReportRetention).
    public static func newestRun(of scenario: String, reportsRoot: URL) throws -> URL {
        guard let newest = ReportRetention.newest(of: scenario, reportsRoot: reportsRoot) else {
            throw WorkbenchError(.badInput, "no run of \(scenario) under \(reportsRoot.path): run `ambar-bench run Scenarios/\(scenario).yaml` first")
        }
        return newest.folder
    }
}
