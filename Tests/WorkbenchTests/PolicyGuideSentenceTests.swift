import Foundation
import Testing
@testable import Workbench

/// The merge-policy guide states a fact only as a function of the run or of the scenario's parsed values: these feed
/// it small synthetic results and scenarios, and check that each sentence follows the data.
@Suite("The policy guide's sentences are computed from the runs and the scenario")
struct PolicyGuideSentenceTests {
    static func result(_ topology: String, _ policy: String, busy: Double, merge: Double?) -> VariantResult {
        var metrics = [MetricRow("mainBusy", "p99", busy, "ms")]
        if let merge { metrics.append(MetricRow("mergeLatency", "p99", merge, "ms")) }
        return VariantResult(scenario: "s", variant: "stack.topology=\(topology),stack.policies.all=\(policy)",
                             parameters: ["stack.topology": topology, "stack.policies.all": policy], repetition: 1,
                             topology: topology, policies: ["view": policy, "importer": policy], seed: 1, metrics: metrics, counters: [:],
                             timeseries: [], mergeCurve: [], oracle: RankingTests.oracle(), thresholds: [], notes: [], wallSeconds: 0)
    }

    /// Two topologies × two policies, mainBusy p99 by cell; `error` records no merge.
    static func statements(_ busy: [String: Double]) -> [String] {
        let results = ["a", "b"].flatMap { t in
            ["error", "objectTrump"].map { p in result(t, p, busy: busy["\(t)/\(p)"]!, merge: p == "error" ? nil : 1) }
        }
        return PolicyGuide.statements(PolicyGuide.variants(results))
    }

    static func line(_ lines: [String], _ prefix: String) -> String { lines.first { $0.hasPrefix(prefix) } ?? "<none>" }

    @Test("The factor sentence names the policy when the policies spread mainBusy p99 more within a topology than the topologies do under a policy, and the topology in the other case")
    func factorFollowsTheData() {
        let policyWins = Self.statements(["a/error": 0.1, "a/objectTrump": 1.0, "b/error": 0.12, "b/objectTrump": 1.2])
        #expect(Self.line(policyWins, "- mainBusy p99") == "- mainBusy p99 (median of the repetitions): the policy spreads it more than the topology. Across the policies within one topology the highest is 10× the lowest; across the topologies under one policy, 1.2×.")
        let topologyWins = Self.statements(["a/error": 1.0, "a/objectTrump": 1.05, "b/error": 5.0, "b/objectTrump": 5.25])
        #expect(Self.line(topologyWins, "- mainBusy p99").contains("the topology spreads it more than the policy"))
        #expect(Self.line(topologyWins, "- mainBusy p99").hasSuffix("across the topologies under one policy, 5.0×."))
        let even = Self.statements(["a/error": 1.0, "a/objectTrump": 2.0, "b/error": 2.0, "b/objectTrump": 4.0])
        #expect(Self.line(even, "- mainBusy p99").contains("the topology and the policy spread it about as much"))
    }

    @Test("Where the policy matters within a topology: the policy lowest in the most topologies with its ratios, topologies within 10% named, and a policy that recorded nothing said so")
    func policyWithinTopology() {
        let lines = Self.statements(["a/error": 0.1, "a/objectTrump": 1.7, "b/error": 1.0, "b/objectTrump": 1.05])
        #expect(lines.contains("- Within a topology: `error` has the lowest mainBusy p99 in 1 of 2 topologies (`a`), where the highest policy's is 17× `error`'s; in `b` the policies are within 10% of each other."))
        // objectTrump is the only policy with a merge figure: no spread to compare, and error's absence is stated.
        #expect(lines.contains("- Within a topology: `error` records no merge p99 in `a`, `b`."))
        #expect(!lines.contains { $0.hasPrefix("- merge p99") })
        let flipped = Self.statements(["a/error": 1.7, "a/objectTrump": 0.1, "b/error": 1.7, "b/objectTrump": 0.1])
        #expect(Self.line(flipped, "- Within a topology: `objectTrump`").hasPrefix("- Within a topology: `objectTrump` has the lowest mainBusy p99 in 2 of 2 topologies (`a`, `b`)"))
    }

    static func workload(_ importer: String) throws -> [String] {
        let text = try Fixtures.text("tiny.yaml").replacingOccurrences(of: "{ objects: 200, chunkSize: 50, updateFraction: 0.5 }", with: importer)
            .replacingOccurrences(of: "      - editor: { rate: 10/s, edits: 2 }\n", with: "      - editor: { rate: 10/s, edits: 2 }\n      - writer: { rate: 5/s, edits: 2, distribution: hotspot }\n")
        let loaded = try ScenarioLoader.load(text: text, file: "tiny.yaml")
        return PolicyGuide.workloadSentences(PolicyGuide.ScenarioSummary(loaded.variants).first)
    }

    @Test("The workload sentence follows the parsed values: updateFraction 0.7 is 70% of each chunk updating existing records, and the hot set is the viewer's")
    func workloadFollowsTheScenario() throws {
        let hot = try Self.workload("{ objects: 200, chunkSize: 50, updateFraction: 0.7, distribution: hotspot, rate: 10/s }")
        #expect(hot.first == "Phase `seed`: an importer saves 200 records in 100-record chunks, as fast as it can, all of them new.")
        #expect(hot.count == 2)
        let run: [String] = [
            "Phase `run` (300 ms of the run's clock): a viewer keeps 10 records on screen; ",
            "an editor changes up to 2 of the records on screen 10 times a second and saves them into the view context, which then saves; ",
            "a second writer on its own coordinator (another process, as far as the app's contexts know) changes 2 record(s) 5 times a second, drawn hotspot: each draw is one of the 10 on screen with probability 0.9, else any record; ",
            "an importer saves 200 records in 50-record chunks, 10 times a second: 70% of each chunk (35 of 50 records) update existing records, 30% are new; ",
            "the updated records are drawn hotspot: each draw is one of the 10 on screen with probability 0.9, else any record (a chunk's updates are distinct records, so at most 10 of its 35 are on screen).",
        ]
        let expected = run.joined()
        #expect(hot.last == expected)
        let few = try Self.workload("{ objects: 200, chunkSize: 50, updateFraction: 0.2 }")
        #expect(few.last?.contains("as fast as it can: 20% of each chunk (10 of 50 records) update existing records, 80% are new; the updated records are drawn uniformly among all records.") == true, "\(few)")
    }
}
