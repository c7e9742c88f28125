import Foundation
import Testing
import Yams
@testable import Workbench

/// The documentation a user has is in this repository's `Docs/`, and it says what the code does:
/// every "semantics §x" a code comment cites is a section of Docs/coredata-behaviour.md, `--help` names the Docs
/// pages, the README's example is the shipped file it names, `run` says where Reports/index.html is, and the
/// sharded sweep's workflow (Docs/examples/capacity-matrix.yml) gives the single run's result when run locally.
@Suite("The docs a user has (Docs/)", .serialized)
struct DocsTests {
    /// The package root (this file is Tests/WorkbenchTests/DocsTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every file below `folder` whose name ends with `suffix`, relative to the root, sorted.
    static func files(under folder: String, suffix: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: root.appendingPathComponent(folder).path) else { return [] }
        return (walker.allObjects as? [String] ?? []).filter { $0.hasSuffix(suffix) }.map { "\(folder)/\($0)" }.sorted()
    }

    /// The section numbers cited as `§N` or `§N.N` in `text` (a `§10.3–4` range cites 10.3).
    static func citedSections(_ text: String) -> Set<String> {
        let pattern = /§\s?([0-9]+(?:\.[0-9]+)?)/
        return Set(text.matches(of: pattern).map { String($0.output.1) })
    }

    /// The numbered headings of Docs/coredata-behaviour.md: `## 1. …` gives "1", `### 1.4 …` gives "1.4".
    static func behaviourSections() throws -> Set<String> {
        let page = try text("Docs/coredata-behaviour.md")
        var sections: Set<String> = []
        for line in page.split(separator: "\n") {
            guard let match = line.wholeMatch(of: /#{2,4} ([0-9]+(?:\.[0-9]+)?)\.? .+/) else { continue }
            sections.insert(String(match.output.1))
        }
        return sections
    }

    // Code comments cite "semantics §x" (the README says §x is a section of
    // Docs/coredata-behaviour.md); each cited section must exist there, in Sources, Tests and Docs alike.
    @Test("Every semantics §N.N cited in Sources/, Tests/ and Docs/ is a heading of Docs/coredata-behaviour.md")
    func everyCitedSectionIsInTheBehaviourPage() throws {
        let sections = try Self.behaviourSections()
        #expect(sections.contains("1.4") && sections.contains("10.15"), "the page's numbered headings: \(sections.sorted())")
        let files = Self.files(under: "Sources", suffix: ".swift") + Self.files(under: "Tests", suffix: ".swift")
            + Self.files(under: "Docs", suffix: ".md") + ["README.md"]
        #expect(files.count > 100)
        var citedAnywhere: Set<String> = []
        for file in files {
            let cited = Self.citedSections(try Self.text(file))
            citedAnywhere.formUnion(cited)
            for missing in cited.subtracting(sections).sorted() {
                Issue.record("\(file) cites §\(missing), which Docs/coredata-behaviour.md has no heading for")
            }
        }
        // The comments do cite sections (the check is not vacuous).
        #expect(citedAnywhere.isSuperset(of: ["1.1", "1.4", "2.1", "3.1", "4", "5", "10"]))
    }

    /// The rules cited as `Rule N`, `rule N`, `Rule 21.2` or `Rule 12a` in `text` (`rules 1–5` cites 1), each with
    /// where it is (a UTF-16 offset). A rule prefixed by a tracker reference is skipped: HistoryFreeTextTests
    /// reports the reference itself.
    static func citedRules(_ text: String) throws -> [(rule: String, at: Int)] {
        let expression = try NSRegularExpression(pattern: "(issue [0-9]+,? )?\\brules? ([0-9]+(?:\\.[0-9]+)?[a-z]?)\\b",
                                                 options: [.caseInsensitive])
        let source = text as NSString
        return expression.matches(in: text, range: NSRange(location: 0, length: source.length))
            .filter { $0.range(at: 1).location == NSNotFound }
            .map { (source.substring(with: $0.range(at: 2)), $0.range.location) }
    }

    /// How many headings of Docs/core-data-rules.md name each rule: `### Rule 12a: …` names "12a", `### Rule 21.2: …`
    /// "21.2", `### Rules 3–5: …` 3, 4 and 5.
    static func ruleHeadings() throws -> [String: Int] {
        var headings: [String: Int] = [:]
        for line in try text("Docs/core-data-rules.md").split(separator: "\n") {
            guard let match = line.prefixMatch(of: /#{2,4} Rules? ([0-9]+(?:\.[0-9]+)?[a-z]?)(?:–([0-9]+))?[ :]/) else { continue }
            var names = [String(match.output.1)]
            if let last = match.output.2, let first = Int(match.output.1), let end = Int(last), first < end {
                names = (first...end).map(String.init)
            }
            for name in names { headings[name, default: 0] += 1 }
        }
        return headings
    }

    // A comment cites a rule of Docs/core-data-rules.md by its number, so the number must name exactly one heading
    // there, or the citation cannot be followed.
    @Test("Every Rule N cited in Sources/, Tests/ and Docs/ names exactly one heading of Docs/core-data-rules.md")
    func everyCitedRuleIsOneHeadingOfTheRulesPage() throws {
        let headings = try Self.ruleHeadings()
        #expect(headings["1"] != nil && headings["21.2"] != nil && headings["4"] != nil, "the page's rules: \(headings.keys.sorted())")
        for (rule, count) in headings.sorted(by: { $0.key < $1.key }) where count > 1 {
            Issue.record("Docs/core-data-rules.md has \(count) headings for Rule \(rule)")
        }
        let files = Self.files(under: "Sources", suffix: ".swift") + Self.files(under: "Tests", suffix: ".swift")
            + Self.files(under: "Docs", suffix: ".md") + ["README.md"]
        var citedAnywhere: Set<String> = []
        for file in files {
            let text = try Self.text(file)
            for (rule, at) in try Self.citedRules(text) {
                citedAnywhere.insert(rule)
                if headings[rule] == nil {
                    let line = (text as NSString).substring(to: at).split(separator: "\n", omittingEmptySubsequences: false).count
                    Issue.record("\(file):\(line) cites Rule \(rule), which Docs/core-data-rules.md has no heading for")
                }
            }
        }
        // The comments do cite rules (the check is not vacuous).
        #expect(citedAnywhere.isSuperset(of: ["1", "14", "21.2", "23", "32"]))
    }

    // A "§N.N" citation can be followed only if one heading of Docs/coredata-behaviour.md has that number.
    @Test("Each numbered section of Docs/coredata-behaviour.md has one heading")
    func behaviourSectionsAreUnique() throws {
        var seen: [String: Int] = [:]
        for line in try Self.text("Docs/coredata-behaviour.md").split(separator: "\n") {
            guard let match = line.wholeMatch(of: /#{2,4} ([0-9]+(?:\.[0-9]+)?)\.? .+/) else { continue }
            seen[String(match.output.1), default: 0] += 1
        }
        #expect(seen.count > 50)
        #expect(seen.filter { $0.value > 1 }.keys.sorted() == [], "numbers with more than one heading")
    }

    @Test("The README and Docs link nothing outside the repository's own files (no ../shared)")
    func noLinksOutsideTheRepository() throws {
        for file in Self.files(under: "Docs", suffix: ".md") + ["README.md"] {
            let page = try Self.text(file)
            #expect(!page.contains("../shared"), "\(file) points outside the repository")
            #expect(!page.contains("shared/docs"), "\(file) points outside the repository")
        }
        let readme = try Self.text("README.md")
        for page in ["Docs/coredata-behaviour.md", "Docs/workbench.md", "Docs/scenarios.md", "Docs/examples/capacity-matrix.yml"] {
            #expect(readme.contains(page), "README.md does not link \(page)")
        }
        #expect(try Self.text("Docs/core-data-rules.md").contains("coredata-behaviour.md"))
    }

    @Test("Docs/workbench.md names every metric of the catalog, and every exit code")
    func workbenchPageNamesEveryMetric() throws {
        let page = try Self.text("Docs/workbench.md")
        for name in MetricCatalog.names.sorted() {
            #expect(page.contains("`\(name)`"), "Docs/workbench.md does not name the metric \(name)")
        }
        for code in ["| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 130 |"] {
            #expect(page.contains(code), "Docs/workbench.md has no row for exit code \(code)")
        }
    }

    @Test("ambar-bench --help names the Docs pages, and each one it names exists")
    func helpNamesTheDocs() throws {
        let ws = try CLITests.workspace()
        let help = try bench(["--help"], in: ws.url)
        #expect(help.status == 0, "\(help.stderr)")
        let named = Set(help.stdout.matches(of: /Docs\/[A-Za-z0-9_\/.-]*[A-Za-z0-9]/).map { String($0.output) })
        for page in ["Docs/scenarios.md", "Docs/workbench.md", "Docs/coredata-behaviour.md", "Docs/examples/capacity-matrix.yml"] {
            #expect(named.contains(page), "ambar-bench --help does not name \(page):\n\(help.stdout)")
        }
        for page in named.sorted() {
            #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(page).path), "--help names \(page), which does not exist")
        }
        let run = try bench(["run", "--help"], in: ws.url)
        #expect(run.stdout.contains("Docs/examples/capacity-matrix.yml"), "run --help's --shard names the workflow:\n\(run.stdout)")
    }

    @Test("Run (make run) prints where Reports/index.html is, last, and the file is there")
    func runPrintsTheIndex() throws {
        let ws = try CLITests.workspace()
        let run = try bench(["run", "tiny.yaml", "--out", "out", "-p", "phases.run.importer.objects=100"], in: ws.url)
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        let index = ws.url.appendingPathComponent("out/index.html").path
        #expect(run.stdout.hasSuffix("index: \(index)\n"), "\(run.stdout)")
        #expect(FileManager.default.fileExists(atPath: index))
        // make run's recipe is `ambar-bench run …`, which prints this line.
        let makefile = try Self.text("Makefile").split(separator: "\n", omittingEmptySubsequences: false)
        let target = try #require(makefile.firstIndex { $0.hasPrefix("run:") }, "the Makefile has no run target")
        let recipe = makefile[(target + 1)...].prefix { $0.hasPrefix("\t") }
        #expect(recipe.contains { $0.contains(" run ") }, "make run's recipe does not run ambar-bench run: \(recipe)")
    }

    /// The fields of one line of a CSV file written by CSVOutput (quoted fields may hold commas and doubled quotes).
    static func csvFields(_ line: Substring) -> [String] {
        let chars = Array(line)
        var fields: [String] = [], field = "", quoted = false, i = 0
        while i < chars.count {
            let c = chars[i]
            if quoted, c == "\"" {
                if i + 1 < chars.count, chars[i + 1] == "\"" { field.append(c); i += 1 } else { quoted = false }
            } else if quoted {
                field.append(c)
            } else if c == "\"" {
                quoted = true
            } else if c == "," {
                fields.append(field)
                field = ""
            } else {
                field.append(c)
            }
            i += 1
        }
        return fields + [field]
    }

    /// The README's claims about the default run (`make run`) are held against the golden ranking of
    /// `thousands-of-imports` (Fixtures/default-run/, copied from a `make run` report), not by running it here: its
    /// variants are the scenario's matrix, its columns the default objective's, and the README quotes its first line,
    /// names its last variant and counts its variants.
    @Test("the README's claims about the default run (its variants, the ranking's first and last lines) match the golden report")
    func readmeClaimsMatchTheDefaultRunGolden() throws {
        let readme = try Self.text("README.md")
        let lines = try Fixtures.text("default-run/thousands-of-imports.ranking.csv").split(separator: "\n")
        let header = try #require(lines.first).split(separator: ",").map(String.init)
        let rows = lines.dropFirst().map(Self.csvFields)
        // The golden holds what the default objective ranks, over the scenario's own variants.
        #expect(header == ["place", "tied", "variant"] + ObjectiveCriterion.defaultObjective.map(\.name) + ["sentence"],
                "the default objective changed: re-record the golden from `make run` (Fixtures/README.txt)")
        let loaded = try ScenarioLoader.load(file: Self.root.appendingPathComponent("Scenarios/thousands-of-imports.yaml").path)
        #expect(Set(rows.map { $0[2] }) == Set(loaded.variants.map(\.variantName)), "the golden's variants are not the scenario's")
        // The README's claims.
        let count = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"][rows.count - 1]
        #expect(readme.contains("opens with its \(count) variants ranked"), "README does not say the run ranks \(count) variants")
        #expect(readme.contains("ranking of its \(count) variants"), "the screenshot's description does not count \(count) variants")
        let first = try #require(rows.first), last = try #require(rows.last)
        #expect(readme.contains("```\n\(first[0]). \(first.last!)\n```"), "README does not quote the ranking's first line: \(first[0]). \(first.last!)")
        let lastLabel = String(last.last!.prefix { $0 != ":" })
        #expect(readme.contains("the last is `\(lastLabel)`"), "README does not name the last variant, \(lastLabel)")
        // The README's first scenario of `make run` is the one the golden comes from.
        #expect(readme.contains("runs `thousands-of-imports`,"))
    }

    @Test("The README's example scenario is Scenarios/thousands-of-imports.yaml, byte for byte")
    func readmeExampleIsTheShippedFile() throws {
        let readme = try Self.text("README.md")
        let shipped = try Self.text("Scenarios/thousands-of-imports.yaml")
        #expect(readme.contains("`Scenarios/thousands-of-imports.yaml`"))
        #expect(readme.contains("```yaml\n" + shipped + "```\n"), "README.md's YAML block differs from Scenarios/thousands-of-imports.yaml")
        // The shipped file is a valid scenario (what the README shows runs).
        _ = try ScenarioLoader.load(file: Self.root.appendingPathComponent("Scenarios/thousands-of-imports.yaml").path)
    }

    // "how a sweep outgrows one machine". The workflow is run here as GitHub Actions would run it,
    // on one machine: each matrix job in a directory of its own (its own checkout), the artifact steps as copies,
    // then the merge job; its merged report must equal one run of the whole scenario.
    @Test("Docs/examples/capacity-matrix.yml run locally (shards, artifacts, merge) gives the single run's exact metrics")
    func capacityMatrixRunsLocally() throws {
        let workflow = try #require(try Yams.load(yaml: try Self.text("Docs/examples/capacity-matrix.yml")) as? [String: Any])
        let env = try #require(workflow["env"] as? [String: Any])
        let jobs = try #require(workflow["jobs"] as? [String: Any])
        let shardJob = try #require(jobs["shard"] as? [String: Any]), mergeJob = try #require(jobs["merge"] as? [String: Any])
        let strategy = try #require(shardJob["strategy"] as? [String: Any])
        let shards = try #require((strategy["matrix"] as? [String: Any])?["shard"] as? [Int])
        #expect(shards == Array(1...shards.count) && shards.count >= 2)
        #expect((env["SCENARIO"] as? String) == "Scenarios/capacity.yaml")
        #expect(try ScenarioLoader.load(file: Self.root.appendingPathComponent("Scenarios/capacity.yaml").path).variants.count >= shards.count)
        #expect((mergeJob["needs"] as? String) == "shard")

        // A reduced capacity grid: 6 variants of a few hundred objects (uneven over 4 shards).
        let ws = try TemporaryDirectory("capacity-matrix")
        try ws.write("capacity-small.yaml", try Fixtures.text("capacity-small.yaml"))
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in env { environment[key] = "\(value)" }
        environment["BENCH"] = try benchExecutable().path
        environment["SCENARIO"] = ws.file("capacity-small.yaml").path
        let artifacts = ws.file("artifacts")

        /// Runs one job's steps in `directory`: `run` steps that use ambar-bench through `sh`, the artifact actions
        /// as copies; `${{ … }}` expressions from `expressions`. Builds (`make bench-tool`) and checkouts are done.
        func runJob(_ job: [String: Any], in directory: URL, expressions: [String: String]) throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            func expand(_ text: String) throws -> String {
                var out = text
                for (name, value) in expressions { out = out.replacingOccurrences(of: "${{ \(name) }}", with: value) }
                #expect(!out.contains("${{"), "an expression the local runner does not know: \(out)")
                return out
            }
            let steps = try #require(job["steps"] as? [[String: Any]])
            for step in steps {
                if let script = step["run"] as? String {
                    guard script.contains("$BENCH") else {
                        #expect(script.contains("make bench-tool"), "a step the local runner would skip: \(script)")
                        continue
                    }
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: "/bin/sh")
                    process.arguments = ["-ec", try expand(script)]
                    process.currentDirectoryURL = directory
                    process.environment = environment
                    process.standardOutput = FileHandle.nullDevice
                    process.standardError = FileHandle.nullDevice
                    try process.run()
                    process.waitUntilExit()
                    #expect(process.terminationStatus == 0, "step \(step["name"] ?? "") failed: \(script)")
                } else if let uses = step["uses"] as? String, let with = step["with"] as? [String: Any] {
                    if uses.hasPrefix("actions/upload-artifact@") {
                        let name = try expand(try #require(with["name"] as? String)), path = try #require(with["path"] as? String)
                        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
                        try FileManager.default.copyItem(at: directory.appendingPathComponent(path), to: artifacts.appendingPathComponent(name))
                    } else if uses.hasPrefix("actions/download-artifact@") {
                        // download-artifact@v4 with a pattern: one folder per matching artifact under `path`.
                        let pattern = try #require(with["pattern"] as? String), path = try #require(with["path"] as? String)
                        #expect(pattern.hasSuffix("*"))
                        let target = directory.appendingPathComponent(path)
                        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
                        for name in try FileManager.default.contentsOfDirectory(atPath: artifacts.path).sorted() where name.hasPrefix(String(pattern.dropLast())) {
                            try FileManager.default.copyItem(at: artifacts.appendingPathComponent(name), to: target.appendingPathComponent(name))
                        }
                    }
                }
            }
        }
        for shard in shards {
            try runJob(shardJob, in: ws.file("job-shard-\(shard)"), expressions: ["matrix.shard": String(shard), "strategy.job-total": String(shards.count)])
        }
        try runJob(mergeJob, in: ws.file("job-merge"), expressions: [:])
        // Every shard ran part of the grid, and no shard ran it all.
        for shard in shards {
            let runs = try FileManager.default.contentsOfDirectory(atPath: ws.file("artifacts/shard-\(shard)/capacity").path).filter { !$0.hasPrefix(".") }
            #expect(runs.count == 1 && runs[0].hasSuffix("-shard\(shard)of\(shards.count)"), "\(runs)")
        }

        // The same scenario on one machine.
        let single = Process()
        single.executableURL = URL(fileURLWithPath: environment["BENCH"]!)
        single.arguments = ["run", environment["SCENARIO"]!, "--out", "single"]
        single.currentDirectoryURL = ws.url
        single.standardOutput = FileHandle.nullDevice
        try single.run()
        single.waitUntilExit()
        #expect(single.terminationStatus == 0)

        func runFolder(_ reports: String) throws -> URL {
            let dir = ws.file("\(reports)/capacity")
            let runs = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { !$0.hasPrefix(".") }
            try #require(runs.count == 1, "\(reports): \(runs)")
            return dir.appendingPathComponent(runs[0])
        }
        let merged = try runFolder("job-merge/Reports"), whole = try runFolder("single")
        #expect(merged.lastPathComponent.hasSuffix("-merged"))
        #expect(FileManager.default.fileExists(atPath: ws.file("job-merge/Reports/index.html").path))
        /// metrics.csv's rows without host figures (label `host…`: this machine's memory and clock), sorted: the
        /// merged report lists variants by name, a single run in matrix order.
        func exactRows(_ folder: URL) throws -> [String] {
            let csv = try String(contentsOf: folder.appendingPathComponent("metrics.csv"), encoding: .utf8)
            // (Variant names hold commas: a host row is found by its label's field, `host` or `host:…`, quoted or not.)
            return csv.split(separator: "\n").dropFirst().map(String.init)
                .filter { !$0.contains(",host,") && !$0.contains(",host:") && !$0.contains(",\"host") }.sorted()
        }
        let mergedRows = try exactRows(merged), wholeRows = try exactRows(whole)
        #expect(mergedRows.count > 100)
        #expect(mergedRows == wholeRows, "the merged shards' exact metrics differ from the single run's: \(Set(mergedRows).symmetricDifference(wholeRows).sorted().prefix(6))")
        func counters(_ folder: URL) throws -> [String: [String: Int]] {
            let results = try JSONDecoder().decode([VariantResult].self, from: Data(contentsOf: folder.appendingPathComponent("results.json")))
            return Dictionary(uniqueKeysWithValues: results.map { ("\($0.variant)#\($0.repetition)", $0.counters) })
        }
        let mergedCounters = try counters(merged)
        #expect(mergedCounters.count == 6, "every variant of the grid is in the merged report: \(mergedCounters.keys.sorted())")
        #expect(try mergedCounters == counters(whole))
        // The knee is computed from every shard's variants: the merged report says what the single run's says.
        let knee = "<p class=\"knee\"><strong>mainBusy p99 first passes 1 ms at chunkSize 200 (visibleObjects 5 and 50): chunkSize 100 stays within.</strong></p>"
        for folder in [merged, whole] {
            #expect(try String(contentsOf: folder.appendingPathComponent("report.html"), encoding: .utf8).contains(knee), "\(folder.path)")
        }
    }
}
