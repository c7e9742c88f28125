import Foundation
import Testing
@testable import Workbench

/// The report files (workbench.md "Reports") as golden files: metrics.csv (long), summary.csv (wide),
/// timeseries.csv, events.jsonl and report.html, from hand-made results so every byte is fixed. Re-record
/// with `AMBAR_RECORD_GOLDEN=1` after an intended change and read the diff.
@Suite("Report output, golden files (workbench.md: Reports)")
struct ReportGoldenTests {
    static func latency(_ metric: String, _ values: [Double], label: String = "") -> [MetricRow] {
        zip(["count", "p50", "p90", "p99", "p99.9", "max", "mean"], values).map { MetricRow(metric, $0, $1, $0 == "count" ? "count" : "ms", label: label) }
    }

    static func result(topology: String, policy: String, scale: Double, oracle: OracleReport, thresholdMet: Bool) -> VariantResult {
        var metrics: [MetricRow] = []
        metrics += latency("mergeLatency", [12, 1.25 * scale, 2.5 * scale, 4.125 * scale, 4.125 * scale, 4.2 * scale, 1.6 * scale])
        metrics += latency("mainBusy", [12, 0.5 * scale, 0.9, 1.75 * scale, 1.75, 1.8, 0.7])
        metrics += latency("saveLatency", [4, 3, 5, 8, 8, 8, 4.5], label: "importer")
        metrics.append(MetricRow("hitchRatio", "value", 1.5 * scale, "ms/s", label: "60Hz"))
        metrics.append(MetricRow("hangs", "count", 0, "count"))
        metrics.append(MetricRow("longTasks", "count", scale > 1 ? 1 : 0, "count"))
        metrics.append(MetricRow("importThroughput", "value", 25_000 / scale, "objects/s"))
        metrics.append(MetricRow("conflicts", "count", 3, "count", label: "layer:rowCache"))
        metrics.append(MetricRow("conflicts", "count", 1, "count", label: "layer:database"))
        metrics.append(MetricRow("conflicts", "count", 4, "count", label: "outcome:importer:\(policy)"))
        metrics.append(MetricRow("saveFailures", "count", 0, "count"))
        metrics.append(MetricRow("lostUpdates", "count", Double(oracle.lostUpdates), "count"))
        metrics.append(MetricRow("refusedChanges", "count", 0, "count"))
        metrics.append(MetricRow("memoryAllocated", "peak", 3 * 1_048_576 * scale, "bytes"))
        let counters = ["rowsInserted": 400, "rowsUpdated": 100, "rowsDeleted": 0, "saves": 9, "merges": 8, "operations": 11, "sqlSelect.main": 21, "setupNanos": 123]
        let timeseries = (0..<4).map { i in
            TimeSample(seconds: Double(i) * 0.05, phase: i < 2 ? "seed" : "run", allocated: Int64(1_048_576 * (10 + i) * Int(scale)),
                       resident: Int64(40_000_000 + i * 1000), mainQueueDepth: i % 2, viewRegisteredObjects: nil)
        }
        let threshold = ThresholdOutcome(metric: "mergeLatency", statistic: "p99", limit: 5, polarity: "lowerIsBetter", value: 4.125 * scale, passed: thresholdMet)
        return VariantResult(
            scenario: "golden", variant: "stack.topology=\(topology)", parameters: ["stack.topology": topology], repetition: 1, topology: topology,
            policies: ["view": policy, "importer": "objectTrump"], seed: 7, metrics: metrics, counters: counters, timeseries: timeseries,
            mergeCurve: [[0, 0.5], [50, 1.25 * scale], [90, 2.5 * scale], [99, 4.125 * scale], [100, 4.2 * scale]], oracle: oracle,
            thresholds: [threshold], notes: [], wallSeconds: 1.25 * scale,
            events: [WriteEvent(actor: "run.editor1", role: "view", policy: policy, key: 3, field: "title", intended: "a \"quoted\" <title> & more",
                                committed: "a \"quoted\" <title> & more", version: 2, time: 100)])
    }

    static let passing = OracleReport(verdict: .pass, lostUpdates: 0, promisedLosses: 0, staleReads: 0, readOnlySavesReachedStore: 0, duplicates: 0,
                                      storeMismatches: 0, unknown: 0, findings: [], summary: "0 lost update(s), 0 loss(es) the policy promises")
    static let failing = OracleReport(verdict: .fail, lostUpdates: 1, promisedLosses: 0, staleReads: 0, readOnlySavesReachedStore: 0, duplicates: 0,
                                      storeMismatches: 0, unknown: 0,
                                      findings: [.init(kind: "lostUpdate", key: 3, field: "title", detail: "editor's <mine> replaced by \"old\" & gone")],
                                      summary: "1 lost update(s), 0 loss(es) the policy promises")

    static var results: [VariantResult] {
        [result(topology: "ambar", policy: "storeTrump", scale: 1, oracle: passing, thresholdMet: true),
         result(topology: "container", policy: "objectTrump", scale: 2, oracle: failing, thresholdMet: false)]
    }

    static let manifest = Manifest(
        scenario: "golden", description: "Hand-made results <for> the golden files & their escaping.", seed: 7, runID: "20260101-000000",
        generatedAt: "2026-01-01T00:00:00Z", resolvedScenario: "name: golden\nstack:\n  topology: ambar\nmatrix:\n  stack.topology: [ambar, container]\n",
        overrides: ["phases.run.importer.objects=400"], variants: 2,
        environment: ["host": "test-host", "cores": "2", "build": "debug", "allocator": "jemalloc", "gitRevision": "abc1234"])

    static var events: [String: [WriteEvent]] {
        Dictionary(uniqueKeysWithValues: results.map { ("\($0.variant)#\($0.repetition)", $0.events) })
    }

    static func files() throws -> [String: String] {
        try ReportWriter.files(results: results, manifest: manifest, events: events).mapValues { String(decoding: $0, as: UTF8.self) }
    }

    @Test("each output file matches its golden file", arguments: ["metrics.csv", "summary.csv", "timeseries.csv", "events.jsonl", "report.html", "ranking.csv"])
    func golden(_ name: String) throws {
        let files = try Self.files()
        let text = try #require(files[name])
        try expectGolden(text, name)
    }

    @Test("the files of a run are the same bytes every time")
    func deterministic() throws {
        let a = try ReportWriter.files(results: Self.results, manifest: Self.manifest, events: Self.events)
        let b = try ReportWriter.files(results: Self.results, manifest: Self.manifest, events: Self.events)
        #expect(a == b)
        #expect(Set(a.keys) == ["metrics.csv", "summary.csv", "ranking.csv", "timeseries.csv", "events.jsonl", "manifest.json", "results.json", "report.html", "scenario.resolved.yaml"])
    }

    @Test("CSV columns and quoting: the header, and a comma or quote in a value survives a round trip")
    func csvShape() throws {
        let files = try Self.files()
        let metrics = try #require(files["metrics.csv"])
        #expect(metrics.hasPrefix("scenario,variant,repetition,metric,statistic,label,value,unit\n"))
        #expect(metrics.contains("golden,stack.topology=ambar,1,mergeLatency,p99,,4.125,ms\n"))
        let summary = try #require(files["summary.csv"])
        #expect(summary.split(separator: "\n").count == 3)
        #expect(summary.hasPrefix("scenario,variant,repetition,topology,viewPolicy,verdict,mergeLatency.count,"))
        let quoted = try CSVOutput.text(header: ["a", "b"], rows: [["x,y", "say \"hi\""]])
        #expect(quoted == "a,b\n\"x,y\",\"say \"\"hi\"\"\"\n")
    }

    @Test("the HTML report: verdict first, every text escaped, no script, no network")
    func htmlShape() throws {
        let html = try #require(try Self.files()["report.html"])
        #expect(!html.contains("<script"))
        // The only URL is the SVG namespace (no fetch): nothing is loaded from the network.
        #expect(!html.replacingOccurrences(of: "xmlns=\"http://www.w3.org/2000/svg\"", with: "").contains("http"))
        #expect(html.contains("Hand-made results &lt;for&gt; the golden files &amp; their escaping."))
        #expect(html.contains("editor&#39;s &lt;mine&gt; replaced by &quot;old&quot; &amp; gone"))
        #expect(!html.contains("<mine>"))
        let verdict = try #require(html.range(of: "class=\"verdict fail\">FAIL"))
        let variants = try #require(html.range(of: "Variants side by side"))
        #expect(verdict.lowerBound < variants.lowerBound)
        #expect(html.contains("missed"))
        #expect(HTMLReport.escape("<a href=\"x\">&'") == "&lt;a href=&quot;x&quot;&gt;&amp;&#39;")
    }

    @Test("ReportWriter.write: the run folder whole, no staging folder left, and index.html linking it")
    func writeFolder() throws {
        let root = try TemporaryDirectory("workbench-reports")
        let folder = try ReportWriter.write(results: Self.results, manifest: Self.manifest, events: Self.events, reportsRoot: root.url)
        #expect(folder.path == root.url.appendingPathComponent("golden/20260101-000000").path)
        #expect(root.tree() == [
            "golden", "golden/20260101-000000", "golden/20260101-000000/events.jsonl", "golden/20260101-000000/manifest.json",
            "golden/20260101-000000/metrics.csv", "golden/20260101-000000/ranking.csv", "golden/20260101-000000/report.html", "golden/20260101-000000/results.json",
            "golden/20260101-000000/scenario.resolved.yaml", "golden/20260101-000000/summary.csv", "golden/20260101-000000/timeseries.csv",
            "index.html",
        ])
        let index = try String(contentsOf: root.file("index.html"), encoding: .utf8)
        #expect(index.contains("<a href=\"golden/20260101-000000/report.html\">20260101-000000</a>"))
        #expect(index.contains("<td class=\"fail\">fail</td>"))
        // results.json reads back (compare and merge use it).
        let data = try Data(contentsOf: folder.appendingPathComponent("results.json"))
        let back = try JSONDecoder().decode([VariantResult].self, from: data)
        #expect(back.map(\.variant) == Self.results.map(\.variant))
        #expect(back[1].oracle == Self.failing)
    }

    @Test("ReportWriter.write into a place that cannot be written leaves nothing behind")
    func writeFailureLeavesNothing() throws {
        let root = try TemporaryDirectory("workbench-reports")
        // The scenario's folder name is taken by a file: the run folder cannot be made.
        try root.write("golden", "not a folder")
        #expect(throws: WorkbenchError.self) {
            try ReportWriter.write(results: Self.results, manifest: Self.manifest, events: Self.events, reportsRoot: root.url)
        }
        #expect(root.tree() == ["golden"])
    }
}
