import Foundation
import Testing
@testable import Workbench

/// The report ranks the variants by the scenario's objective, and the merge-policy guide is the shipped scenario's
/// output.
@Suite("Objective, ranking and the generated policy guide")
struct RankingTests {
    static func oracle(lost: Int = 0, promised: Int = 0, readOnly: Int = 0) -> OracleReport {
        OracleReport(verdict: lost > 0 ? .fail : .pass, lostUpdates: lost, promisedLosses: promised, staleReads: 0, readOnlySavesReachedStore: readOnly,
                     duplicates: 0, storeMismatches: 0, unknown: 0, findings: [], summary: "")
    }

    /// A result with the metrics the default objective reads.
    static func result(_ policy: String, repetition: Int = 1, lost: Int = 0, promised: Int = 0, refused: Int = 0, failures: Double = 0, busy: Double, readOnly: Int = 0) -> VariantResult {
        let metrics = [
            MetricRow("lostUpdates", "count", Double(lost), "count"),
            MetricRow("lostUpdates", "count", Double(promised), "count", label: "promised"),
            MetricRow("refusedChanges", "count", Double(refused), "count"),
            MetricRow("saveFailures", "count", failures, "count"),
            MetricRow("mainBusy", "p99", busy, "ms"),
            MetricRow("mainBusy", "count", 40, "count"),
        ]
        return VariantResult(scenario: "s", variant: "stack.policies.all=\(policy)", parameters: ["stack.policies.all": policy], repetition: repetition,
                             topology: "ambar", policies: ["view": policy], seed: UInt64(repetition), metrics: metrics, counters: [:], timeseries: [],
                             mergeCurve: [], oracle: oracle(lost: lost, promised: promised, readOnly: readOnly), thresholds: [], notes: [], wallSeconds: 0)
    }

    @Test("objective: loads names and mappings, defaults documented, bad metric or statistic named by file, line and field")
    func objectiveLoads() throws {
        let base = try Fixtures.text("tiny.yaml")
        let plain = try ScenarioLoader.load(text: base, file: "tiny.yaml")
        #expect(plain.variants[0].objective == ObjectiveCriterion.defaultObjective)
        let custom = try ScenarioLoader.load(text: base + "objective:\n  - saveFailures\n  - { metric: importThroughput, statistic: value, polarity: higherIsBetter }\n", file: "tiny.yaml")
        #expect(custom.variants[0].objective == [ObjectiveCriterion("saveFailures"),
                                                 ObjectiveCriterion("importThroughput", statistic: "value", polarity: .higherIsBetter)])
        for (bad, message) in [("objective: [lostUpdate]", "unknown metric 'lostUpdate'"),
                               ("objective:\n  - { metric: mainBusy, statistic: p98 }", "unknown statistic 'p98'"),
                               ("objective: []", "at least one metric"),
                               ("objective:\n  - { metric: mainBusy, polarity: up }", "expected one of")] {
            do {
                _ = try ScenarioLoader.load(text: base + bad + "\n", file: "tiny.yaml")
                Issue.record("accepted \(bad)")
            } catch let error as ScenarioError {
                #expect(error.description.contains("tiny.yaml:") && error.description.contains("objective"), "\(error)")
                #expect(error.description.contains(message), "\(error)")
            }
        }
    }

    @Test("Every number says what it stands for: a numeric or boolean matrix value is named with its key in the ranking, a policy or topology name stands alone")
    func displayNamesCarryTheKeyOfBareValues() {
        var r = Self.result("objectTrump", busy: 0.1)
        #expect(Ranking.displayName(r) == "objectTrump")
        r.parameters = ["stack.pinViewGeneration": "true"]
        #expect(Ranking.displayName(r) == "pinViewGeneration=true")
        r.parameters = ["phases.seed.importer.objects": "10000", "stack.topology": "ambar"]
        #expect(Ranking.displayName(r) == "objects=10000 / ambar")
        r.parameters = [:]
        #expect(Ranking.displayName(r) == "default")
    }

    @Test("Criteria in order, the later ones only break ties; a sentence per variant; losses flagged even when promised")
    func ranksByObjective() throws {
        let results = [
            Self.result("error", failures: 12, busy: 0.4),
            Self.result("storeTrump", promised: 21, busy: 0.3),
            Self.result("objectTrump", busy: 0.9),
            Self.result("overwrite", lost: 1, busy: 0.1),
            Self.result("rollback", promised: 59, busy: 0.2, readOnly: 3),
        ]
        let ranking = Ranking.make(results, objective: ObjectiveCriterion.defaultObjective)
        #expect(ranking.entries.map(\.variant) == ["objectTrump", "error", "storeTrump", "rollback", "overwrite"].map { "stack.policies.all=\($0)" })
        #expect(ranking.entries.map(\.place) == [1, 2, 3, 4, 5])
        #expect(ranking.entries[0].sentence == "objectTrump: 0 lost, 0 refused, 0 dropped as the policy or stack promises, 0 failed saves, mainBusy p99 0.90 ms: best")
        #expect(ranking.entries[1].sentence.hasSuffix("12 failed saves, mainBusy p99 0.40 ms: 2nd"))
        #expect(ranking.flags.map(\.variant) == ["storeTrump", "overwrite", "rollback"].map { "stack.policies.all=\($0)" })
        #expect(ranking.flags[0].text.contains("21 acknowledged write(s) dropped as its policy (storeTrump) or its stack promises"))
        #expect(ranking.flags[1].text.contains("1 acknowledged write(s) lost that no policy promises to drop"))
        #expect(ranking.flags[2].text.contains("3 save(s) from a \"read-only\" context reached the store"))
        // Another objective, another order: the main queue first.
        let fastest = Ranking.make(results, objective: [ObjectiveCriterion("mainBusy")])
        #expect(fastest.entries.first?.variant == "stack.policies.all=overwrite")
        #expect(fastest.objectiveText == "mainBusy")
    }

    // Docs/coredata-behaviour.md §1.4: an `error` save that meets a conflict writes nothing; the work is the user's.
    @Test("A variant whose failed saves kept the user's changes from the store ranks below one that stores them, even one whose policy drops some as it promises")
    func refusedChangesRankBesideLostUpdates() {
        let results = [
            Self.result("error", refused: 30, failures: 15, busy: 0.08),
            Self.result("objectTrump", busy: 1.05),
            Self.result("overwrite", promised: 4, busy: 1.05),
            Self.result("refusesOne", refused: 1, failures: 1, busy: 0.08),
            Self.result("silent", lost: 1, busy: 0.01),
        ]
        let ranking = Ranking.make(results, objective: ObjectiveCriterion.defaultObjective)
        #expect(ranking.entries.map(\.variant) == ["objectTrump", "overwrite", "refusesOne", "error", "silent"].map { "stack.policies.all=\($0)" })
        #expect(ranking.entries[3].sentence == "error: 0 lost, 30 refused, 0 dropped as the policy or stack promises, 15 failed saves, mainBusy p99 0.08 ms: 4th")
        #expect(ranking.flags.contains { $0.variant == "stack.policies.all=error" && $0.text == "error: 30 change(s) of failed saves never reached the store" })
        // A run without the metric (results written before it) ranks after one that has it, as for any criterion.
        var old = Self.result("old", busy: 0.01)
        old.metrics.removeAll { $0.metric == "refusedChanges" }
        #expect(Ranking.make([old, Self.result("objectTrump", busy: 1.0)], objective: ObjectiveCriterion.defaultObjective).entries.first?.variant == "stack.policies.all=objectTrump")
    }

    @Test("With repetitions a variant ranks above another only when it is ahead in every one; otherwise they share the place")
    func stableRankingOnly() {
        // a beats b on seeds 1 and 2 but not 3: one place; c is behind both everywhere.
        let results = [
            Self.result("a", repetition: 1, busy: 1.0), Self.result("a", repetition: 2, busy: 1.0), Self.result("a", repetition: 3, busy: 3.0),
            Self.result("b", repetition: 1, busy: 2.0), Self.result("b", repetition: 2, busy: 2.0), Self.result("b", repetition: 3, busy: 2.0),
            Self.result("c", repetition: 1, busy: 5.0), Self.result("c", repetition: 2, busy: 5.0), Self.result("c", repetition: 3, busy: 5.0),
        ]
        let ranking = Ranking.make(results, objective: [ObjectiveCriterion("mainBusy", statistic: "p99")])
        #expect(ranking.repetitions == 3)
        #expect(ranking.entries.map(\.place) == [1, 1, 3])
        #expect(ranking.entries[0].sentence == "a: mainBusy p99 1.00 ms (1.00–3.00): tied best")
        #expect(ranking.entries[2].sentence == "c: mainBusy p99 5.00 ms: 3rd")
    }

    @Test("Places hold for the whole group above: a variant joins it unless every member is ahead of it in every repetition")
    func placesAreTransitive() {
        // Review finding: a is behind c on the first seed, so c may not rank below a's shared place.
        let results = [
            Self.result("a", repetition: 1, busy: 5.0), Self.result("a", repetition: 2, busy: 1.0), Self.result("a", repetition: 3, busy: 1.0),
            Self.result("b", repetition: 1, busy: 2.0), Self.result("b", repetition: 2, busy: 2.0), Self.result("b", repetition: 3, busy: 2.0),
            Self.result("c", repetition: 1, busy: 3.0), Self.result("c", repetition: 2, busy: 3.0), Self.result("c", repetition: 3, busy: 3.0),
        ]
        #expect(Ranking.make(results, objective: [ObjectiveCriterion("mainBusy", statistic: "p99")]).entries.map(\.place) == [1, 1, 1])
        // The guide's statements use the same median as its table (the mean of the middle two for an even count).
        #expect(PolicyGuide.median([0.4, 0.6]) == 0.5 && PolicyGuide.cell([0.4, 0.6], unit: "ms") == "0.500 (0.400–0.600)")
    }

    @Test("The report opens with the ranking, ranking.csv has a row per variant, and `run` prints the sentences")
    func reportAndCLI() throws {
        let out = try TemporaryDirectory("ranking-report")
        let file = try out.write("two.yaml", try Fixtures.text("tiny.yaml") + "matrix:\n  stack.policies.all: [objectTrump, storeTrump]\n")
        let run = try bench(["run", file.path, "--out", out.url.path, "-p", "phases.run.duration=100ms"], in: out.url)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("ranking (objective: lostUpdates, then refusedChanges, then lostUpdates[promised], then saveFailures, then mainBusy.p99):"), "\(run.stdout)")
        #expect(run.stdout.contains("  1. objectTrump: 0 lost"), "\(run.stdout)")
        let folder = try #require(try FileManager.default.contentsOfDirectory(at: out.url.appendingPathComponent("tiny"), includingPropertiesForKeys: nil).first)
        let html = try String(contentsOf: folder.appendingPathComponent("report.html"), encoding: .utf8)
        let ranking = try #require(html.range(of: "<h2>Which variant is best for this scenario</h2>"))
        #expect(ranking.lowerBound < (html.range(of: "<h2>Verdict and thresholds</h2>")?.lowerBound ?? html.startIndex))
        let csv = try String(contentsOf: folder.appendingPathComponent("ranking.csv"), encoding: .utf8)
        #expect(csv.split(separator: "\n").count == 3)
        #expect(csv.hasPrefix("place,tied,variant,lostUpdates,refusedChanges,lostUpdates[promised],saveFailures,mainBusy.p99,sentence"))
    }

    // MARK: item 13

    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    @Test("The guide's generated part is replaced between its markers, the prose around it kept")
    func generatedPartReplaced() throws {
        let page = "# Title\n\nprose\n\n\(PolicyGuide.beginMarker)\nold table\n\(PolicyGuide.endMarker)\n\nmore prose\n"
        let replaced = PolicyGuide.replacing(in: page, with: "\(PolicyGuide.beginMarker)\nnew\n\(PolicyGuide.endMarker)")
        #expect(replaced == "# Title\n\nprose\n\n\(PolicyGuide.beginMarker)\nnew\n\(PolicyGuide.endMarker)\n\nmore prose\n")
        #expect(PolicyGuide.generatedPart(of: replaced) == "\(PolicyGuide.beginMarker)\nnew\n\(PolicyGuide.endMarker)")
    }

    @Test("Docs/choosing-a-merge-policy.md holds what the shipped scenario and seeds produce (the ambar rows, run here; make compare checks the whole page)")
    func guideMatchesShippedScenario() throws {
        let root = Self.repositoryRoot
        let page = try String(contentsOf: root.appendingPathComponent("Docs/choosing-a-merge-policy.md"), encoding: .utf8)
        let generated = try #require(PolicyGuide.generatedPart(of: page), "the page has no generated part")
        // Outside the generated part the page quotes no measured figure: no "ms" value and no table row.
        let prose = page.replacingOccurrences(of: generated, with: "")
        #expect(!prose.contains(" ms |") && prose.range(of: #"\d+\.\d+ ms"#, options: .regularExpression) == nil)
        // Nor a figure of the scenario: the workload is described in the generated part, from the parsed file.
        #expect(!prose.contains("%") && !prose.contains("seeds 99"))
        let loaded = try ScenarioLoader.load(file: root.appendingPathComponent("Scenarios/policy-comparison.yaml").path)
        #expect(loaded.variants.count == 25 * 3)
        // The reduced run: one topology's five policies, each on the three seeds (the whole matrix is make compare's).
        let variants = loaded.variants.filter { $0.stack.topology.rawValue == "ambar" }
        #expect(variants.count == 15)
        let work = try TemporaryDirectory("guide")
        let results = try variants.map { try VariantRunner(scenario: $0, workDirectory: work.url).run() }
        let rows = PolicyGuide.tableRows(results)
        #expect(rows.count == 5)
        let pageRows = generated.components(separatedBy: "\n").filter { $0.hasPrefix("| ambar |") }
        #expect(pageRows == rows, "the page's ambar rows differ from the run: run `make guide` and say which figures moved and why")
    }

    @Test("ambar-bench guide writes a page's measured part from a run folder; --check exits 1 while it differs and 0 once it matches")
    func guideCommandEndToEnd() throws {
        let ws = try TemporaryDirectory("guide-cli")
        try ws.write("two.yaml", try Fixtures.text("tiny.yaml") + "matrix:\n  stack.policies.all: [objectTrump, storeTrump]\n")
        #expect(try bench(["run", "two.yaml", "--out", "out", "-p", "phases.run.duration=100ms"], in: ws.url).status == 0)
        let folder = try #require(try FileManager.default.contentsOfDirectory(atPath: ws.file("out/tiny").path).first)
        try ws.write("page.md", "# Guide\n\nprose\n\n\(PolicyGuide.beginMarker)\nstale\n\(PolicyGuide.endMarker)\n\nmore prose\n")
        let stale = try bench(["guide", "out/tiny/\(folder)", "--page", "page.md", "--check"], in: ws.url)
        #expect(stale.status == 1 && stale.stdout.contains("differs") && stale.stdout.contains("make guide"), "\(stale.stdout)")
        #expect(try bench(["guide", "out/tiny/\(folder)", "--page", "page.md"], in: ws.url).status == 0)
        let page = try String(contentsOf: ws.file("page.md"), encoding: .utf8)
        #expect(page.hasPrefix("# Guide\n\nprose\n") && page.hasSuffix("\n\nmore prose\n") && page.contains("| ambar | objectTrump | pass |"), "\(page)")
        let fresh = try bench(["guide", "out/tiny/\(folder)", "--page", "page.md", "--check"], in: ws.url)
        #expect(fresh.status == 0 && fresh.stdout.contains("matches"), "\(fresh.stdout)")
        // Not a run folder: bad input.
        #expect(try bench(["guide", "page.md", "--page", "page.md", "--check"], in: ws.url).status == 2)
    }
}
