import Foundation
import Synchronization
import Testing
@testable import Workbench

/// Files that are not what they claim: each is refused with a message that says what
/// the path is, before anything runs, and a 650-byte alias bomb costs nothing.
@Suite("Hostile scenario files")
struct HostileFileTests {
    func message(_ path: String) -> String {
        do {
            _ = try ScenarioLoader.load(file: path)
            return "ok"
        } catch let error as ScenarioError {
            return error.description
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test("Nested YAML aliases (a billion laughs) are refused before they are expanded, naming the line")
    func aliasBomb() throws {
        var lines = ["name: x", "stack: {topology: ambar}", "phases: [{name: seed}]", "l0: &l0 [x,x,x,x,x,x,x,x,x,x]"]
        for i in 1..<12 { lines.append("l\(i): &l\(i) [" + Array(repeating: "*l\(i - 1)", count: 10).joined(separator: ",") + "]") }
        let started = Date()
        do {
            _ = try ScenarioLoader.load(text: lines.joined(separator: "\n"), file: "laughs.yaml")
            Issue.record("an alias bomb was accepted")
        } catch let error as ScenarioError {
            #expect(error.description == "laughs.yaml:5:10: YAML aliases (*name) are not supported in scenarios: write the value out")
        }
        #expect(Date().timeIntervalSince(started) < 5)
        // A `*` inside a value is not an alias: a predicate, a quoted string, a comment.
        #expect(YAMLTree.firstAlias(in: "predicate: name LIKE *foo*\nx: \"*y\"\n# *z\nrate: 2 * 3") == nil)
        #expect(YAMLTree.firstAlias(in: "a: [1, *b]")?.column == 8)
        #expect(YAMLTree.firstAlias(in: "- *b")?.column == 3)
    }

    @Test("A folder, a device, a missing file, a symlink loop, binary data and a huge file each get a message that says so")
    func notScenarioFiles() throws {
        let dir = try TemporaryDirectory("hostile")
        try FileManager.default.createDirectory(at: dir.file("folder.yaml"), withIntermediateDirectories: true)
        try dir.write("binary.yaml", "name: x\n\u{0}\u{1}")
        try Data([0xff, 0xfe, 0x00, 0x80]).write(to: dir.file("latin.yaml"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("loop1.yaml").path, withDestinationPath: dir.file("loop2.yaml").path)
        try FileManager.default.createSymbolicLink(atPath: dir.file("loop2.yaml").path, withDestinationPath: dir.file("loop1.yaml").path)
        try Data(count: ScenarioLoader.maximumFileBytes + 1).write(to: dir.file("huge.yaml"))
        #expect(message(dir.file("folder.yaml").path).hasSuffix("is a folder, not a scenario file (give a .yaml file; `ambar-bench list FOLDER` lists a folder's)"))
        #expect(message("/dev/zero") == "/dev/zero: is not a regular file (a device, a pipe or a socket): give a .yaml file")
        #expect(message(dir.file("missing.yaml").path).hasSuffix("missing.yaml: no such file"))
        #expect(message(dir.file("loop1.yaml").path).contains("symbolic link that leads nowhere readable"))
        #expect(message(dir.file("binary.yaml").path).hasSuffix("is not UTF-8 text (a binary file?): a scenario is a YAML text file"))
        #expect(message(dir.file("latin.yaml").path).hasSuffix("is not UTF-8 text (a binary file?): a scenario is a YAML text file"))
        #expect(message(dir.file("huge.yaml").path).contains("a scenario file is at most 1048576 bytes"))
    }

    @Test("List on a missing folder exits 2 and says so; a bad file in a folder is reported and the others listed")
    func listFolders() throws {
        let ws = try CLITests.workspace()
        let missing = try bench(["list", "no-such-folder"], in: ws.url)
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("no-such-folder: no such folder"))
        try ws.write("bad.yaml", "a: [*b]\n")
        let listed = try bench(["list", "."], in: ws.url)
        #expect(listed.status == 0)
        #expect(listed.stdout.contains("./bad.yaml\tinvalid:"))
        #expect(listed.stdout.contains("./tiny.yaml\t1 variant(s)"))
    }

    @Test("A misspelt actor in -p suggests the phase's actors and names the override; phases[1] is accepted as phases.1; an unknown attribute type lists the valid ones")
    func clearerMessages() throws {
        func message(overrides: [String], text: String? = nil) -> String {
            do {
                _ = try ScenarioLoader.load(text: text ?? (try Fixtures.text("tiny.yaml")), file: "tiny.yaml", overrides: overrides)
                return "ok"
            } catch let error as ScenarioError {
                return error.description
            } catch {
                return "unexpected \(error)"
            }
        }
        #expect(message(overrides: ["phases.run.viewr.visibleObjects=3"]) ==
            "tiny.yaml (-p phases.run.viewr.visibleObjects=3): phases[1].viewr: unknown key; a phase has name, kind, duration and actors, and this one's actors are viewer, editor, importer (did you mean 'viewer'?)")
        #expect(message(overrides: ["phases[1].duration=2s"]) == "ok")
        let loaded = try ScenarioLoader.load(text: try Fixtures.text("tiny.yaml"), file: "tiny.yaml", overrides: ["phases[1].duration=2s"])
        #expect(loaded.variants.first?.phases[1].duration == 2)
        #expect(message(overrides: ["matrix.x.y=[1]"]).hasPrefix("tiny.yaml (-p matrix.x.y=[1]): x: unknown key"))
        let badType = "name: t\nmodel: { entities: [{ name: A, attributes: [{ name: id, type: int64 }] }], entity: A }\nstack: {topology: ambar}\nphases: [{name: seed}]\n"
        #expect(message(overrides: [], text: badType).hasSuffix("an attribute's type is one of integer16, integer32, integer64, double, float, decimal, string, boolean, date, binaryData, uuid, uri, transformable"))
    }

    @Test("Merge refuses the same shard twice and shards of different runs; report --out on a missing folder exits 2")
    func mergeAndReportRefuseWhatIsNotOneRun() throws {
        let ws = try CLITests.workspace()
        let matrix = ["-p", "matrix.stack.topology=[ambar, container]"]
        #expect(try bench(["run", "tiny.yaml", "--out", "a", "--shard", "1/2"] + matrix, in: ws.url).status == 0)
        #expect(try bench(["run", "tiny.yaml", "--out", "b", "--shard", "2/2"] + matrix, in: ws.url).status == 0)
        #expect(try bench(["run", "tiny.yaml", "--out", "c", "--shard", "2/2", "-p", "seed=8"] + matrix, in: ws.url).status == 0)
        func folder(_ root: String) throws -> String {
            let runs = try FileManager.default.contentsOfDirectory(atPath: ws.file("\(root)/tiny").path).filter { !$0.hasPrefix(".") }
            return "\(root)/tiny/\(try #require(runs.first))"
        }
        let (a, b, c) = (try folder("a"), try folder("b"), try folder("c"))
        let good = try bench(["merge", a, b, "--out", "merged"], in: ws.url)
        #expect(good.status == 0, "\(good.stderr)")
        let twice = try bench(["merge", a, a, "--out", "merged"], in: ws.url)
        #expect(twice.status == 2)
        #expect(twice.stderr.contains("already in an earlier folder"))
        let mixed = try bench(["merge", a, c, "--out", "merged"], in: ws.url)
        #expect(mixed.status == 2)
        #expect(mixed.stderr.contains("with another scenario file, overrides or seed"))
        let report = try bench(["report", "--out", "no/such/folder"], in: ws.url)
        #expect(report.status == 2)
        #expect(report.stderr.contains("no/such/folder: no such folder"))
        #expect(!FileManager.default.fileExists(atPath: ws.file("no").path))
    }

    @Test("The next run removes what a killed run left (its temporary store folder and its report's staging folder), never a live run's")
    func leftoversOfKilledRunsAreRemoved() throws {
        let fm = FileManager.default
        let reports = try TemporaryDirectory("leftovers")
        let dead: Int32 = 2_147_483_000  // no such process
        let mine = getpid()
        let deadWork = fm.temporaryDirectory.appendingPathComponent("ambar-bench-\(dead)-\(UUID().uuidString)")
        let liveWork = fm.temporaryDirectory.appendingPathComponent("ambar-bench-\(mine)-\(UUID().uuidString)")
        for url in [deadWork, liveWork] { try fm.createDirectory(at: url, withIntermediateDirectories: true) }
        defer { try? fm.removeItem(at: liveWork) }
        let deadStaging = reports.file("tiny/.20260101-000000.partial"), liveStaging = reports.file("tiny/.20260101-000001.partial")
        for (url, pid) in [(deadStaging, dead), (liveStaging, mine)] {
            try fm.createDirectory(at: url, withIntermediateDirectories: true)
            try Data("\(pid)\n".utf8).write(to: url.appendingPathComponent(".owner"))
        }
        Suite.cleanLeftovers(reportsRoot: reports.url)  // (another test's run may clean the temporary folder first)
        #expect(!fm.fileExists(atPath: deadWork.path) && !fm.fileExists(atPath: deadStaging.path))
        #expect(fm.fileExists(atPath: liveWork.path) && fm.fileExists(atPath: liveStaging.path))
        // A finished run folder keeps no owner file.
        let ws = try CLITests.workspace()
        #expect(try bench(["run", "tiny.yaml", "--out", "out"], in: ws.url).status == 0)
        let run = try #require(CLITests.runFolders(ws).first)
        #expect(!fm.fileExists(atPath: ws.file("out/tiny/\(run)/.owner").path))
    }

    @Test("A run stopped between variants (Ctrl-C) keeps every finished variant in a whole report marked interrupted")
    func interruptedRunKeepsWhatFinished() throws {
        let reports = try TemporaryDirectory("interrupted")
        let file = reports.file("tiny.yaml")
        try Fixtures.text("tiny.yaml").write(to: file, atomically: true, encoding: .utf8)
        var options = Suite.Options()
        options.reportsRoot = reports.file("Reports")
        options.overrides = ["matrix.stack.topology=[ambar, container, nested]"]
        let started = Mutex(0)
        options.progress = { line in if line.contains(": variant ") { started.withLock { $0 += 1 } } }
        // Stop once the first variant has started: it finishes, the second never starts.
        options.shouldStop = { started.withLock { $0 } >= 1 }
        let outcomes = try Suite.run(files: [file.path], options: options)
        let outcome = try #require(outcomes.first)
        #expect(outcome.interrupted && outcome.results.count == 1)
        #expect(outcome.failures.contains { $0.contains("interrupted (a signal) after 1 of 3 variant run(s)") })
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: outcome.folder.appendingPathComponent("manifest.json")))
        #expect(manifest.interrupted == "interrupted (a signal) after 1 of 3 variant run(s)" && manifest.variants == 1)
        let saved = try JSONDecoder().decode([VariantResult].self, from: Data(contentsOf: outcome.folder.appendingPathComponent("results.json")))
        #expect(saved.map(\.variant) == ["stack.topology=ambar"])
        #expect(try String(contentsOf: outcome.folder.appendingPathComponent("report.html"), encoding: .utf8).contains("Not every variant ran"))
        // No staging folder is left behind.
        #expect(!(try FileManager.default.contentsOfDirectory(atPath: reports.file("Reports/tiny").path)).contains { $0.hasSuffix(".partial") })
    }

    @Test("The merge-latency curve draws no percentile its sample count cannot support")
    func curveDrawsOnlySupportedPercentiles() throws {
        var r = VariantResult(scenario: "s", variant: "v", parameters: [:], repetition: 1, topology: "ambar", policies: [:], seed: 1,
                              metrics: [MetricRow("mergeLatency", "count", 10, "count")], counters: [:], timeseries: [],
                              mergeCurve: [[0, 1], [50, 2], [90, 3], [99, 4], [99.9, 5]], oracle: OracleReport(verdict: .pass, lostUpdates: 0, promisedLosses: 0, staleReads: 0,
                                  readOnlySavesReachedStore: 0, duplicates: 0, storeMismatches: 0, unknown: 0, findings: [], summary: ""),
                              thresholds: [], notes: [], wallSeconds: 0)
        let ten = HTMLReport.curveChart([r])
        // With 10 samples: p0, p50 and p90 (one sample beyond it); not p99 or p99.9.
        #expect(ten.components(separatedBy: "points=\"").last?.split(separator: "\"").first?.split(separator: " ").count == 3)
        r.metrics = [MetricRow("mergeLatency", "count", 10_000, "count")]
        #expect(HTMLReport.curveChart([r]).components(separatedBy: "points=\"").last?.split(separator: "\"").first?.split(separator: " ").count == 5)
    }

    @Test("A sweep's threshold with fails: false reports the variants past it without failing the run")
    func reportingThresholdDoesNotFail() throws {
        let ws = try CLITests.workspace()
        try ws.write("knee.yaml", try Fixtures.text("tiny.yaml") + "\nthresholds:\n  - { metric: mainBusy, statistic: total, max: 0.001, fails: false }\n")
        let knee = try bench(["run", "knee.yaml", "--out", "out"], in: ws.url)
        #expect(knee.status == 0, "\(knee.stdout)")
        #expect(!knee.stdout.contains("FAILED"))
        let folder = try #require(CLITests.runFolders(ws).first)
        let html = try String(contentsOf: ws.file("out/tiny/\(folder)/report.html"), encoding: .utf8)
        #expect(html.contains("past (a finding)"))
        try ws.write("strict.yaml", try Fixtures.text("tiny.yaml") + "\nthresholds:\n  - { metric: mainBusy, statistic: total, max: 0.001 }\n")
        #expect(try bench(["run", "strict.yaml", "--out", "out2"], in: ws.url).status == 1)
    }

    @Test("The CI gate writes JUnit XML (a test case per baseline variant) and a Markdown summary of what regressed")
    func gateWritesJUnitAndSummary() throws {
        let ws = try CLITests.workspace()
        #expect(try bench(["baseline", "tiny", "tiny.yaml", "--out", "out"], in: ws.url).status == 0)
        let pass = try bench(["check", "--baseline", "tiny", "--out", "out"], in: ws.url)
        #expect(pass.status == 0)
        #expect(pass.stdout.contains("gate: "))
        let junit = try String(contentsOf: ws.file("out/ci-gate/junit.xml"), encoding: .utf8)
        #expect(junit.contains("<testcase classname=\"tiny\" name=\"default #1\"/>") && junit.contains("failures=\"0\""))
        let summary = try String(contentsOf: ws.file("out/ci-gate/summary.md"), encoding: .utf8)
        #expect(summary.contains("Every figure of 1 variant(s) matches the baseline"))
        // A planted regression: one more row inserted than the run gives.
        var baseline = try JSONDecoder().decode(Baseline.self, from: Data(contentsOf: ws.file("Scenarios/baselines/tiny.json")))
        baseline.entries[0].counters["rowsInserted"] = 301
        baseline.name = "tiny-altered"
        try ReportWriter.encoder().encode(baseline).write(to: ws.file("Scenarios/baselines/tiny-altered.json"))
        let fail = try bench(["check", "--baseline", "tiny-altered", "--out", "out"], in: ws.url)
        #expect(fail.status == 1)
        let failedJUnit = try String(contentsOf: ws.file("out/ci-gate/junit.xml"), encoding: .utf8)
        #expect(failedJUnit.contains("failures=\"1\"") && failedJUnit.contains("counter rowsInserted is 300, baseline 301"))
        let failedSummary = try String(contentsOf: ws.file("out/ci-gate/summary.md"), encoding: .utf8)
        #expect(failedSummary.contains("**1 of 1 variant(s) regressed.**") && failedSummary.contains("- counter rowsInserted is 300, baseline 301"))
    }

    @Test("Fuzz finding: validate refuses a cost profile that cannot be found (exit 2, naming the file, line and field), as run did")
    func missingProfileIsBadInputAtValidation() throws {
        let ws = try CLITests.workspace()
        try ws.write("noprofile.yaml", try Fixtures.text("tiny.yaml").replacingOccurrences(of: "seed: 7", with: "seed: 7\nprofile: no-such-profile"))
        let validate = try bench(["validate", "noprofile.yaml"], in: ws.url)
        #expect(validate.status == 2)
        #expect(validate.stderr.contains("noprofile.yaml:") && validate.stderr.contains("profile") && validate.stderr.contains("no cost profile no-such-profile"), "\(validate.stderr)")
        // In real mode no profile is read: the same file validates.
        #expect(try bench(["validate", "noprofile.yaml", "-p", "mode=real"], in: ws.url).status == 0)
    }
}
