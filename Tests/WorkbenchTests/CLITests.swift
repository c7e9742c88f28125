import Foundation
import ObjectGraph
import Testing
@testable import Workbench

/// `ambar-bench` end to end on the tiny scenario (workbench.md "Command line"): exit codes 0 ok, 1 a threshold,
/// baseline or oracle check failed, 2 bad input; what a run writes; nothing half-written after a failure.
@Suite("ambar-bench end to end (workbench.md: Command line)", .serialized)
struct CLITests {
    /// A working directory holding `tiny.yaml` (the CLI reads `Scenarios/baselines` relative to it).
    static func workspace() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory("workbench-cli")
        try directory.write("tiny.yaml", try Fixtures.text("tiny.yaml"))
        return directory
    }

    /// The run folders under `out/<scenario>/`.
    static func runFolders(_ directory: TemporaryDirectory, scenario: String = "tiny") -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.file("out/\(scenario)").path)) ?? []).sorted()
    }

    @Test("Through the CLI: importer reset/saveEvery/groups and viewer request/frc keys run end to end, their figures in metrics.csv")
    func newScenarioKeysEndToEnd() throws {
        let ws = try Self.workspace()
        let run = try bench(["run", "tiny.yaml", "--out", "out",
                             "-p", "phases.run.importer.reset=never", "-p", "phases.run.importer.saveEvery=2", "-p", "phases.run.importer.groups=3",
                             "-p", "phases.run.viewer.frc=batched", "-p", "phases.run.viewer.request.fetchBatchSize=10"], in: ws.url)
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        let folder = try #require(Self.runFolders(ws).first)
        let csv = try String(contentsOf: ws.file("out/tiny/\(folder)/metrics.csv"), encoding: .utf8)
        #expect(csv.contains(",importerRegisteredObjects,value,,"))
        #expect(csv.contains(",frcObjects,value,,300,"))
        #expect(csv.contains(",faultsFulfilled,count,\"queue=main,source=store\",0,"))
        let resolved = try String(contentsOf: ws.file("out/tiny/\(folder)/scenario.resolved.yaml"), encoding: .utf8)
        #expect(resolved.contains("saveEvery") && resolved.contains("frc"))
        let bad = try bench(["validate", "tiny.yaml", "-p", "phases.run.importer.reset=sometimes"], in: ws.url)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("phases.run.importer.reset"))
    }

    @Test("Through the CLI: an entity with no id in a three-tier graph and merge: notifyAndRefetch run end to end")
    func graphAndMergeEndToEnd() throws {
        let ws = try Self.workspace()
        try ws.write("graph.yaml", """
            name: graph
            model:
              entities:
                - { name: Shelf, attributes: [{ name: name, type: string }], relationships: [{ name: boxes, destination: Box, inverse: shelf, toMany: true }] }
                - { name: Box, attributes: [{ name: name, type: string }], relationships: [{ name: shelf, destination: Shelf, inverse: boxes }, { name: notes, destination: Note, inverse: box, toMany: true }] }
                - { name: Note, attributes: [{ name: text, type: string }], relationships: [{ name: box, destination: Box, inverse: notes }] }
              entity: Note
              values: { text: { length: 8 } }
            stack: { topology: container, merge: notifyAndRefetch }
            phases:
              - name: run
                actors:
                  - viewer: { visibleObjects: 5 }
                  - importer: { objects: 300, chunkSize: 100, groups: 3, groupParents: 1, reset: never }
              - name: verify
            matrix:
              stack.merge: [notifyAndRefetch, didSave]
            """)
        let run = try bench(["run", "graph.yaml", "--out", "out"], in: ws.url)
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        let folder = try #require(Self.runFolders(ws, scenario: "graph").first)
        let csv = try String(contentsOf: ws.file("out/graph/\(folder)/metrics.csv"), encoding: .utf8)
        #expect(csv.contains("graph,stack.merge=notifyAndRefetch,1,refetches,value,,1,count"))
        #expect(csv.contains("graph,stack.merge=notifyAndRefetch,1,importerRegisteredObjects,value,,304,count"))
    }

    @Test("run: exit 0, the report folder with every file, index.html, and the resolved scenario with the overrides")
    func runWritesReports() throws {
        let ws = try Self.workspace()
        let run = try bench(["run", "tiny.yaml", "--out", "out", "-p", "phases.run.importer.objects=100"], in: ws.url)
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        let folders = Self.runFolders(ws)
        try #require(folders.count == 1)
        let folder = "out/tiny/\(folders[0])"
        #expect(run.stdout.hasPrefix("report: \(ws.url.appendingPathComponent(folder).path)/report.html\n"))
        #expect(run.stdout.contains("default #1 [ambar, view storeTrump]: oracle pass"))
        #expect(run.stderr == "")  // not a terminal: no progress
        let files = try FileManager.default.contentsOfDirectory(atPath: ws.file(folder).path).sorted()
        #expect(files == ["events.jsonl", "manifest.json", "metrics.csv", "ranking.csv", "report.html", "results.json", "scenario.resolved.yaml", "summary.csv", "timeseries.csv"])
        #expect(FileManager.default.fileExists(atPath: ws.file("out/index.html").path))
        #expect(try String(contentsOf: ws.file("\(folder)/scenario.resolved.yaml"), encoding: .utf8).contains("objects: 100"))
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: ws.file("\(folder)/manifest.json")))
        #expect(manifest.seed == 7 && manifest.overrides == ["phases.run.importer.objects=100"] && manifest.runID == folders[0])
        let summary = try String(contentsOf: ws.file("\(folder)/summary.csv"), encoding: .utf8).split(separator: "\n")
        #expect(summary.count == 2)
        #expect(summary[1].hasPrefix("tiny,default,1,ambar,storeTrump,pass,"))
        let metrics = try String(contentsOf: ws.file("\(folder)/metrics.csv"), encoding: .utf8)
        #expect(metrics.contains("tiny,default,1,rowsInserted,value,,250,count\n"))
        #expect(!ws.tree().contains { $0.contains(".partial") })

        // A second run in the same second gets a folder of its own.
        let again = try bench(["run", "tiny.yaml", "--out", "out", "-p", "phases.run.importer.objects=100"], in: ws.url)
        #expect(again.status == 0)
        #expect(Self.runFolders(ws).count == 2)

        // compare: two run folders metric by metric.
        let compared = try bench(["compare"] + Self.runFolders(ws).map { "out/tiny/\($0)" }, in: ws.url)
        #expect(compared.status == 0)
        #expect(compared.stdout.hasPrefix("variant\tmetric\tstatistic\tlabel\tfirst\tsecond\tratio\n"))
        #expect(compared.stdout.contains("default#1\trowsInserted\tvalue\t\t250.0\t250.0\t1.00\n"))
    }

    @Test("a missed threshold: exit 1, the metric named, the report still whole")
    func thresholdFails() throws {
        let ws = try Self.workspace()
        try ws.write("strict.yaml", try Fixtures.text("tiny.yaml").replacingOccurrences(of: "name: tiny", with: "name: strict")
            + "thresholds:\n  - { metric: operations, statistic: value, min: 1000000 }\n")
        let run = try bench(["run", "strict.yaml", "--out", "out"], in: ws.url)
        #expect(run.status == 1, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        #expect(run.stdout.contains("FAILED: strict default #1: threshold operations.value = 9.0 (limit 1000000.0)"))
        let folders = Self.runFolders(ws, scenario: "strict")
        try #require(folders.count == 1)
        #expect(FileManager.default.fileExists(atPath: ws.file("out/strict/\(folders[0])/report.html").path))
        let html = try String(contentsOf: ws.file("out/strict/\(folders[0])/report.html"), encoding: .utf8)
        #expect(html.contains("class=\"verdict fail\">FAIL"))
    }

    @Test("bad input: exit 2 with file:line:column before anything runs, and nothing written")
    func badInput() throws {
        let ws = try Self.workspace()
        try ws.write("bad.yaml", try Fixtures.text("tiny.yaml").replacingOccurrences(of: "chunkSize: 50", with: "chunkSize: 0"))

        let validate = try bench(["validate", "bad.yaml"], in: ws.url)
        #expect(validate.status == 2)
        #expect(validate.stderr == "error: bad.yaml:16:46: phases.run.importer.chunkSize: must be at least 1, found 0\n")

        // A good file and a bad one: nothing runs, no report folder appears.
        let run = try bench(["run", "tiny.yaml", "bad.yaml", "--out", "out"], in: ws.url)
        #expect(run.status == 2)
        #expect(run.stderr.contains("bad.yaml:16:46: phases.run.importer.chunkSize"))
        #expect(!FileManager.default.fileExists(atPath: ws.file("out").path))

        let missing = try bench(["run", "missing.yaml", "--out", "out"], in: ws.url)
        #expect(missing.status == 2)
        #expect(missing.stderr.hasPrefix("error: missing.yaml: no such file"))

        let override = try bench(["run", "tiny.yaml", "--out", "out", "-p", "stack.topology=nested9"], in: ws.url)
        #expect(override.status == 2)
        #expect(override.stderr.contains("stack.topology: expected one of ambar, ambar8, ambar7, container, nested, history, viewChildren, privateRoot, headless, found 'nested9'"))

        // An output directory that cannot be made (a file is in the way).
        try ws.write("blocked", "a file")
        let unwritable = try bench(["run", "tiny.yaml", "--out", "blocked/out"], in: ws.url)
        #expect(unwritable.status == 2)
        #expect(unwritable.stderr.hasPrefix("error: the output directory"))

        let shard = try bench(["run", "tiny.yaml", "--out", "out", "--shard", "3/2"], in: ws.url)
        #expect(shard.status == 2)
        #expect(shard.stderr.contains("--shard takes i/n"))

        let usage = try bench(["run"], in: ws.url)
        #expect(usage.status == 2, "a command-line mistake is bad input: \(usage.stderr)")

        #expect(!FileManager.default.fileExists(atPath: ws.file("out").path))
        #expect(ws.tree() == ["bad.yaml", "blocked", "tiny.yaml"])
    }

    @Test("sweep: the same file with one key varied, one report with a variant per value")
    func sweep() throws {
        let ws = try Self.workspace()
        let run = try bench(["sweep", "tiny.yaml", "--vary", "stack.topology=ambar,container", "--out", "out"], in: ws.url)
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        #expect(run.stdout.contains("stack.topology=ambar #1 [ambar, view storeTrump]: oracle pass"))
        #expect(run.stdout.contains("stack.topology=container #1 [container, view objectTrump]: oracle pass"))
        let folders = Self.runFolders(ws)
        try #require(folders.count == 1)
        let summary = try String(contentsOf: ws.file("out/tiny/\(folders[0])/summary.csv"), encoding: .utf8)
        #expect(summary.split(separator: "\n").count == 3)
    }

    // Through the CLI: `viewer.scroll` and `viewer.frames` as keys of a scenario run by ambar-bench.
    @Test("ambar-bench runs a scrolling viewer and a frames-only one; a data key beside frames: only is bad input naming the field")
    func viewerScrollAndFramesKeys() throws {
        let ws = try Self.workspace()
        let sweep = try bench(["sweep", "tiny.yaml", "--vary", "phases.run.viewer.scroll=0,1000", "--out", "out"], in: ws.url)
        #expect(sweep.status == 0, "stdout: \(sweep.stdout)\nstderr: \(sweep.stderr)")
        let folder = "out/tiny/\(try #require(Self.runFolders(ws).first))"
        let metrics = try String(contentsOf: ws.file("\(folder)/metrics.csv"), encoding: .utf8).split(separator: "\n")
        func storeFaults(_ variant: String) -> Double? {
            let prefix = "tiny,\(variant),1,faultsFulfilled,count,\"queue=main,source=rowCache\","
            guard let line = metrics.first(where: { $0.hasPrefix(prefix) }) else { return nil }
            let value: Substring? = line.dropFirst(prefix.count).split(separator: ",").first
            return value.flatMap { Double(String($0)) }
        }
        let still = try #require(storeFaults("phases.run.viewer.scroll=0")), scrolled = try #require(storeFaults("phases.run.viewer.scroll=1000"))
        #expect(scrolled > still, "main-queue faults from the row cache: still \(still), scrolling \(scrolled)")

        let only = try bench(["run", "tiny.yaml", "--out", "only", "-p", "phases.run.viewer.frames=only"], in: ws.url)
        #expect(only.status == 0, "stdout: \(only.stdout)\nstderr: \(only.stderr)")
        let bad = try bench(["run", "tiny.yaml", "--out", "bad", "-p", "phases.run.viewer.frames=only", "-p", "phases.run.viewer.window=5"], in: ws.url)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("phases.run.viewer.window: a viewer with 'frames: only' draws frames and reads no data"), "\(bad.stderr)")
    }

    @Test("validate: exit 0 with the number of variant runs; -p applies")
    func validate() throws {
        let ws = try Self.workspace()
        let ok = try bench(["validate", "tiny.yaml", "-p", "matrix.stack.topology=[ambar, container]", "-p", "repeat=2"], in: ws.url)
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout == "tiny.yaml: ok (4 variant run(s))\n")
    }

    @Test("Run and validate the viewChildren, privateRoot and headless topologies from the command line")
    func newTopologies() throws {
        let ws = try Self.workspace()
        let run = try bench(["run", "tiny.yaml", "--out", "out", "-p", "matrix.stack.topology=[viewChildren, privateRoot]", "-p", "phases.run.importer.objects=100"], in: ws.url)
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        #expect(run.stdout.contains("[viewChildren, view objectTrump]: oracle pass"))
        #expect(run.stdout.contains("[privateRoot, view objectTrump]: oracle pass"))
        // A viewer in a headless variant: bad input, at the viewer's line, before anything runs.
        let refused = try bench(["validate", "tiny.yaml", "-p", "stack.topology=headless"], in: ws.url)
        #expect(refused.status == 2)
        #expect(refused.stderr.hasPrefix("error: tiny.yaml:14:9: phases.run.viewer: the `headless` topology has no view context"), "\(refused.stderr)")
        try ws.write("headless.yaml", TopologyTests.importsOnly("headless", viewer: false))
        let headless = try bench(["run", "headless.yaml", "--out", "out"], in: ws.url)
        #expect(headless.status == 0, "stdout: \(headless.stdout)\nstderr: \(headless.stderr)")
        #expect(headless.stdout.contains("[headless, view objectTrump]: oracle pass"))
    }

    @Test("baseline and check: a recorded baseline passes, a missing one is bad input, a changed counter fails naming it")
    func baselineAndCheck() throws {
        let ws = try Self.workspace()
        let missing = try bench(["check", "--baseline", "nosuch", "--out", "out"], in: ws.url)
        #expect(missing.status == 2)
        #expect(missing.stderr.hasPrefix("error: no baseline named nosuch"))
        #expect(!FileManager.default.fileExists(atPath: ws.file("out").path))

        let record = try bench(["baseline", "tiny", "tiny.yaml", "--out", "out"], in: ws.url)
        #expect(record.status == 0, "stdout: \(record.stdout)\nstderr: \(record.stderr)")
        #expect(record.stdout.hasPrefix("baseline tiny: 1 variant(s) recorded in Scenarios/baselines/tiny.json\n"))
        let recorded = ws.file("Scenarios/baselines/tiny.json")
        var baseline = try JSONDecoder().decode(Baseline.self, from: Data(contentsOf: recorded))
        #expect(baseline.entries.first?.counters["rowsInserted"] == 300)
        // Simulated mode (the default): every count and virtual time is recorded, to be matched exactly.
        #expect(baseline.entries.first?.exact?["mergeLatency.p99"] != nil)
        // core-data-rules.md Rule 23: the viewer's merged inserts are fulfilled one by one (from the store in this topology),
        // and so are the rows its results hold as faults that merges update (Rule 10), with their batches.
        #expect(baseline.entries.first?.exact?["costedOperations.count[faultFulfilledFromCache]"] == 258)
        #expect(baseline.entries.first?.timings == [:])

        let check = try bench(["check", "--baseline", "tiny", "--out", "out"], in: ws.url)
        #expect(check.status == 0, "stdout: \(check.stdout)\nstderr: \(check.stderr)")
        #expect(check.stdout.contains("baseline tiny: every deterministic counter matches"))

        // Change one counter and one operation count on purpose in a copy (a planted regression: one more fault).
        baseline.entries[0].counters["rowsInserted"] = 301
        baseline.entries[0].exact?["costedOperations.count[faultFulfilledFromCache]"] = 259
        try ReportWriter.encoder().encode(baseline).write(to: ws.file("Scenarios/baselines/tiny-altered.json"))
        let altered = try bench(["check", "--baseline", "tiny-altered", "--out", "out"], in: ws.url)
        #expect(altered.status == 1)
        #expect(altered.stdout.contains("BASELINE: tiny default #1: counter rowsInserted is 300, baseline 301 (deterministic: must match exactly)"))
        #expect(altered.stdout.contains("BASELINE: tiny default #1: costedOperations.count[faultFulfilledFromCache] is 258, baseline 259 (simulated: must match exactly)"))
        // A failed check still leaves whole run folders only.
        #expect(Self.runFolders(ws).count == 3)
        #expect(!ws.tree().contains { $0.contains(".partial") })
    }
}

/// Replay and traces (Docs/simulation.md "Traces"): a finding names its seed and step, and replay prints the
/// interleaving up to it; the trace file is versioned JSON Lines, the same for the same seed.
@Suite("Replay and traces (Docs/simulation.md)", .serialized)
struct ReplayTests {
    @Test("run --trace writes a versioned trace; two runs give the same trace; replay prints the steps up to --until")
    func traceAndReplay() throws {
        let ws = try CLITests.workspace()
        let first = try bench(["run", "tiny.yaml", "--out", "out", "--trace", "a.jsonl"], in: ws.url)
        #expect(first.status == 0, "\(first.stderr)")
        let second = try bench(["run", "tiny.yaml", "--out", "out2", "--trace", "b.jsonl"], in: ws.url)
        #expect(second.status == 0, "\(second.stderr)")
        let a = try String(contentsOf: ws.file("a.jsonl"), encoding: .utf8), b = try String(contentsOf: ws.file("b.jsonl"), encoding: .utf8)
        #expect(a == b)
        let lines = a.split(separator: "\n")
        #expect(lines.first == #"{"format":"ambar-trace","profile":"modern-iphone","repetition":"1","scenario":"tiny","seed":"7","variant":"default","version":"1"}"#)
        let records = try lines.dropFirst().map { try JSONDecoder().decode(TraceRecord.self, from: Data($0.utf8)) }
        #expect(records.contains { $0.event == "call" && $0.call == "save" && ($0.detail ?? "").hasPrefix("importer:") })
        #expect(records.contains { $0.event == "call" && $0.call == "merge" && $0.queue == "simulated-main" })
        #expect(records.contains { $0.event == "tick" && $0.thread == "display-link" })
        // Steps only grow, and every block ends.
        #expect(zip(records, records.dropFirst()).allSatisfy { $0.step <= $1.step })
        #expect(records.filter { $0.event == "block" || $0.event == "sync" }.count == records.filter { $0.event == "end" }.count)

        let replay = try bench(["replay", "tiny.yaml", "--seed", "7", "--until", "40"], in: ws.url)
        #expect(replay.status == 0, "\(replay.stderr)")
        let out = replay.stdout.split(separator: "\n")
        #expect(out.first == "replay tiny default seed 7 profile modern-iphone, steps 1...40")
        let printed = records.filter { $0.step <= 40 }.map(\.text)
        #expect(Array(out.dropFirst().prefix(printed.count)).map(String.init) == printed)
        #expect(out.last?.hasPrefix("oracle: ") == true)

        let missing = try bench(["replay", "tiny.yaml", "--seed", "7", "--until", "5", "--variant", "nosuch"], in: ws.url)
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("no variant named nosuch"))
    }

    @Test("replay --seed takes the whole unsigned 64-bit range and names it for a seed past it")
    func replaySeedRange() throws {
        let ws = try CLITests.workspace()
        let past = try bench(["replay", "tiny.yaml", "--seed", "18446744073709551616", "--until", "1"], in: ws.url)
        #expect(past.status != 0)
        #expect(past.stderr.contains("out of range (0 to 18446744073709551615), found 18446744073709551616"), "\(past.stderr)")
        let largest = try bench(["replay", "tiny.yaml", "--seed", "18446744073709551615", "--until", "1", "-p", "phases.run.importer.objects=20"], in: ws.url)
        #expect(largest.status == 0, "\(largest.stderr)")
        #expect(largest.stdout.hasPrefix("replay tiny default seed 18446744073709551615 "))
    }
}

/// A sweep's knee (Docs/scenarios.md "Top-level keys", `knee`): a scaled-down `Scenarios/capacity.yaml` says in a
/// sentence, after the run and at the top of the report, where the threshold is first missed.
@Suite("Capacity knee (Docs/scenarios.md)", .serialized)
struct KneeTests {
    @Test("the knee is printed after the run and opens the report, computed from the variants' thresholds")
    func kneeSentence() throws {
        let ws = try TemporaryDirectory("workbench-knee")
        try ws.write("capacity-small.yaml", try Fixtures.text("capacity-small.yaml"))
        let run = try bench(["run", "capacity-small.yaml", "--out", "out"], in: ws.url)
        #expect(run.status == 0, "stdout: \(run.stdout)\nstderr: \(run.stderr)")
        let sentence = "mainBusy p99 first passes 1 ms at chunkSize 200 (visibleObjects 5 and 50): chunkSize 100 stays within."
        #expect(run.stdout.contains("\nknee: \(sentence)\n"), "\(run.stdout)")
        let folder = try #require(CLITests.runFolders(ws, scenario: "capacity").first)
        let html = try String(contentsOf: ws.file("out/capacity/\(folder)/report.html"), encoding: .utf8)
        #expect(html.contains("<p class=\"knee\"><strong>\(sentence)</strong></p>"))
        // Above the ranking: the finding comes first.
        #expect(html.range(of: "class=\"knee\"")!.lowerBound < html.range(of: "<h2>")!.lowerBound)

        // Every variant past the limit: the smallest value tried already misses it.
        let tight = try bench(["run", "capacity-small.yaml", "--out", "tight", "-p", "thresholds[0].max=0.1ms", "-p", "matrix.phases.run.viewer.visibleObjects=[5]", "-p", "matrix.phases.run.importer.chunkSize=[50, 100]"], in: ws.url)
        #expect(tight.stdout.contains("\nknee: mainBusy p99 first passes 1 ms at chunkSize 50, the smallest tried (visibleObjects 5).\n"), "\(tight.stdout)")
    }
}

@Suite("Calibration (Docs/simulation.md: Calibrating a profile)", .serialized)
struct CalibrationTests {
    @Test("calibrate writes a profile of this machine that loads back, with a measured figure for every operation, and a scenario runs on it")
    func calibrateWritesALoadableProfile() throws {
        let ws = try CLITests.workspace()
        let calibrate = try bench(["calibrate", "--objects", "16", "--repetitions", "1", "--scenario", "tiny.yaml", "--out", "Profiles/this-machine.yaml"], in: ws.url)
        #expect(calibrate.status == 0, "\(calibrate.stderr)")
        let profile = try CostProfile.load(file: ws.file("Profiles/this-machine.yaml"))
        #expect(profile.estimated.isEmpty)
        #expect(Set(profile.sources.keys) == Set(CostedOperation.allCases.map(\.name)))
        // Operations seen on the main queue of the tiny scenario's real run are fitted to its blocks; the rest measured.
        #expect(profile.sources.values.allSatisfy { $0.hasPrefix("measured: ") || $0.hasPrefix("fitted: ") })
        #expect(profile.sources["blockRun"]?.hasPrefix("fitted: ") == true)
        #expect(profile.sources["rowInserted"]?.hasPrefix("measured: ") == true)
        #expect(profile.fittedTo.contains("tiny.yaml"))
        // (No figure is asserted: they are this machine's timings, and a loaded machine moves them.)
        let run = try bench(["run", "tiny.yaml", "--out", "out", "--profile", "this-machine"], in: ws.url)
        #expect(run.status == 0, "\(run.stderr)")
        let bad = try bench(["calibrate", "--objects", "3"], in: ws.url)
        #expect(bad.status == 2)
    }
}
