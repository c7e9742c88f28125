import Foundation
import Testing
@testable import Workbench

/// Published measurements replayed as scenarios (issue 19 item 12): the `published:` block, its evaluation against
/// a run, and what the report and the terminal say.
@Suite("Published results (issue 19 item 12)")
struct PublishedTests {
    static let yaml = """
        name: pub
        stack: { topology: ambar }
        phases:
          - name: seed
            actors:
              - importer: { objects: 200, chunkSize: 100 }
          - name: run
            actors:
              - viewer: { visibleObjects: 10 }
              - importer: { objects: 400, chunkSize: 400 }
          - name: verify
        matrix:
          phases.run.importer.chunkSize: [400, 50]
        published:
          source: "a post"
          result: "one big save stalls the UI"
          figure: { metric: mainStall, statistic: max, variant: "phases.run.importer.chunkSize=400", value: 100, unit: ms }
          directions:
            - { claim: "a big save stalls longer than small ones", metric: mainStall, statistic: max, larger: "phases.run.importer.chunkSize=400", smaller: "phases.run.importer.chunkSize=50" }
            - { claim: "the opposite, to see a direction fail", metric: mainStall, statistic: max, larger: "phases.run.importer.chunkSize=50", smaller: "phases.run.importer.chunkSize=400" }
        """

    @Test("Issue 19 item 12: a published block loads; a variant it names must exist, a metric must be known (file, line and field)")
    func loads() throws {
        let loaded = try ScenarioLoader.load(text: Self.yaml, file: "pub.yaml")
        let published = try #require(loaded.variants.first?.published)
        #expect(published.figure?.value == 100 && published.directions.count == 2)
        do {
            _ = try ScenarioLoader.load(text: Self.yaml.replacingOccurrences(of: "smaller: \"phases.run.importer.chunkSize=50\" }", with: "smaller: \"chunkSize=7\" }"), file: "pub.yaml")
            Issue.record("an unknown variant was accepted")
        } catch let error as ScenarioError {
            #expect(error.description.contains("published.directions") && error.description.contains("no variant named 'chunkSize=7'"))
            #expect(error.line != nil)
        }
        do {
            _ = try ScenarioLoader.load(text: Self.yaml.replacingOccurrences(of: "figure: { metric: mainStall", with: "figure: { metric: mainStal"), file: "pub.yaml")
            Issue.record("an unknown metric was accepted")
        } catch let error as ScenarioError {
            #expect(error.description.contains("unknown metric 'mainStal'"))
        }
    }

    @Test("Issue 19 item 12: a run is compared with the publication: ours beside the figure and its ratio, each direction holds or not")
    func evaluates() throws {
        let loaded = try ScenarioLoader.load(text: Self.yaml, file: "pub.yaml")
        let results = try loaded.variants.map(runVariant)
        let comparison = PublishedComparison.evaluate(try #require(loaded.variants.first?.published), results: results)
        let big = try #require(results.first { $0.variant == "phases.run.importer.chunkSize=400" }?.value("mainStall", "max"))
        #expect(comparison.figure?.ours == big)
        #expect(comparison.figure?.ratio == big / 100)
        #expect(comparison.directions.map(\.holds) == [true, false])
        #expect(comparison.lines.contains("direction holds: a big save stalls longer than small ones"))
        #expect(comparison.lines.contains("direction DOES NOT HOLD: the opposite, to see a direction fail"))
        // The report shows it.
        let manifest = Manifest(scenario: "pub", description: "", seed: 1, runID: "r", generatedAt: "t", resolvedScenario: "", overrides: [], variants: 2,
                                environment: [:], published: comparison)
        let html = HTMLReport.render(title: "pub", results: results, manifest: manifest, resolvedYAML: "")
        #expect(html.contains("<h2>Published result</h2>") && html.contains("does not hold") && html.contains("a post"))
    }

    @Test("Issue 19 item 12: every shipped published scenario validates and names its source")
    func shippedScenariosValidate() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let folder = root.appendingPathComponent("Scenarios/published")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".yaml") }.sorted()
        #expect(files.count >= 2)
        for file in files {
            let loaded = try ScenarioLoader.load(file: folder.appendingPathComponent(file).path)
            let published = try #require(loaded.variants.first?.published, "\(file)")
            #expect(!published.source.isEmpty && !published.result.isEmpty && (published.figure != nil || !published.directions.isEmpty), "\(file)")
        }
    }
}
