import ArgumentParser
import CommandShell
import Foundation
import ObjectGraph
import TraceReplay
import Workbench

/// `ambar-bench`: a thin shell over Workbench. Exit codes: 0 ok, 1 a threshold, baseline or oracle check
/// failed, 2 bad input, 3 internal or I/O failure after work began, 130 interrupted (Ctrl-C, SIGTERM).
@main
struct AmbarBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ambar-bench",
        abstract: "Replays Core Data stack workloads against the Ambar stack and other topologies, and reports what happened.",
        discussion: """
            Exit codes: 0 ok, 1 a threshold, baseline or oracle check failed, 2 bad input (nothing ran), 3 an internal or I/O failure after work began, 130 interrupted (the report keeps every variant that ran, a stopped one marked partial).

            Documentation, in the repository: Docs/scenarios.md (the scenario format), Docs/workbench.md (metrics, reports, the command line, exit codes, and sweeps sharded over a CI matrix: Docs/examples/capacity-matrix.yml), Docs/what-the-workbench-counts.md (what each counter stands for in Core Data), Docs/simulation.md (simulated mode), Docs/calibration.md (operation traces and their replay), Docs/coredata-behaviour.md (the Core Data behaviour we reproduce, and how sure we are of it), Docs/choosing-a-merge-policy.md (the policies compared; `guide` writes its measured part).
            """,
        subcommands: [Run.self, Replay.self, ReplayTrace.self, Calibrate.self, Fit.self, Evidence.self, Validate.self, Compare.self, Sweep.self, Check.self, RecordBaseline.self, Merge.self, List.self, Report.self, Guide.self, CleanReports.self, Schema.self],
        defaultSubcommand: Run.self)

    /// ArgumentParser's own main, except that a command-line mistake is bad input: exit code 2 (Docs/workbench.md),
    /// not sysexits' 64.
    static func main() {
        main(badInputExitCode: 2, reportingTo: { stderr($0) })
    }
}

func stderr(_ text: String) { progressOutput.line(text) }

var isTerminal: Bool { isatty(2) == 1 }

/// Runs `body`, mapping errors to the exit codes.
func guarded(_ body: () throws -> Int32) throws {
    let code: Int32
    do { code = try body() } catch let error as ScenarioError {
        stderr("error: \(error)")
        code = 2
    } catch let error as WorkbenchError {
        stderr("error: \(error)")
        switch error.kind {
        case .checkFailed: code = 1
        case .badInput: code = 2
        case .internalFailure: code = 3
        }
    } catch {
        stderr("internal error: \(error)")
        code = 3
    }
    if code != 0 { throw ExitCode(code) }
}

struct CommonOptions: ParsableArguments {
    @Option(name: .short, help: "Override a key: -p key=value (repeatable).")
    var p: [String] = []

    @Option(name: .long, help: "Where reports go.")
    var out: String = "Reports"

    @Option(name: .long, help: ArgumentHelp(keepHelp, valueName: "N|all"))
    var keep: String?

    @Flag(name: .long, help: "Print progress even when stderr is not a terminal.")
    var progress = false

    @Option(name: .long, help: "simulated (one scheduler on a virtual clock: exact, the default) or real (threads and this machine's clock). Overrides the scenario's `mode`.")
    var mode: ExecutionMode?

    @Option(name: .long, help: "The cost profile of simulated mode: a name in Profiles/ (default modern-iphone) or a .yaml file. Overrides the scenario's `profile`.")
    var profile: String?

    @Option(name: .long, help: "Write the trace of every simulated variant to FILE (JSON Lines, Docs/simulation.md \"Traces\").")
    var trace: String?

    @Option(name: .long, help: "Run each variant N times: seeds seed, seed+1, ... in simulated mode (the report shows each metric's median and spread). Overrides the scenario's `repeat`.")
    var `repeat`: Int?

    /// The -p overrides, with --mode, --profile and --repeat last so they win.
    var overrides: [String] {
        p + (mode.map { ["mode=\($0.rawValue)"] } ?? []) + (profile.map { ["profile=\($0)"] } ?? []) + (`repeat`.map { ["repeat=\($0)"] } ?? [])
    }

    func suiteOptions(shard: String? = nil) throws -> Suite.Options {
        var o = Suite.Options()
        o.waitsForPreviousVariant = true
        o.overrides = overrides
        o.reportsRoot = URL(fileURLWithPath: out, isDirectory: true)
        o.keep = try ReportRetention.resolve(option: keep)
        o.trace = trace.map { URL(fileURLWithPath: $0) }
        if let shard {
            let parts = shard.split(separator: "/").compactMap { Int($0) }
            guard parts.count == 2, parts[1] >= 1, (1...parts[1]).contains(parts[0]) else {
                throw WorkbenchError(.badInput, "--shard takes i/n with 1 ≤ i ≤ n, found \(shard)")
            }
            o.shard = (parts[0], parts[1])
        }
        if isTerminal || progress {
            o.progress = { stderr($0) }
            o.phaseProgress = { progressOutput.phase($0) }
        }
        StopSignals.install()
        return o
    }
}

/// Prints where each run's report is, one line per variant and the failures; then, when `reportsRoot` is
/// given, where `index.html` (every run) is, so that `make run` says where to look.
func report(_ outcomes: [Suite.Outcome], reportsRoot: URL? = nil) -> Int32 {
    var failed = false
    for outcome in outcomes {
        print("report: \(outcome.folder.path)/report.html")
        for r in outcome.results {
            let p99 = r.value("mergeLatency", "p99").map { String(format: "%.2f ms", $0) } ?? "–"
            print("  \(r.variant) #\(r.repetition) [\(r.topology), view \(r.policies["view"] ?? "?")]: oracle \(r.oracle.verdict.rawValue); mergeLatency p99 \(p99); \(r.oracle.summary)")
        }
        if let ranking = outcome.ranking, ranking.entries.count > 1 {
            print("ranking (objective: \(ranking.objectiveText)\(ranking.repetitions > 1 ? "; medians of \(ranking.repetitions) repetitions" : "")):")
            for e in ranking.entries { print("  \(e.place). \(e.sentence)") }
            for f in ranking.flags { print("  note: \(f.text)") }
        }
        for sentence in outcome.knee { print("knee: \(sentence)") }
        for f in outcome.failures { print("FAILED: \(f)") }
        failed = failed || !outcome.failures.isEmpty
    }
    if let reportsRoot, !outcomes.isEmpty {
        print("index: \(reportsRoot.appendingPathComponent("index.html").path)")
    }
    if outcomes.contains(where: \.interrupted) {
        stderr("interrupted: the report holds the variants that ran, a stopped one marked partial")
        return 130
    }
    return failed ? 1 : 0
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run scenario files and write reports.",
        discussion: "The scenario format: Docs/scenarios.md. What a run writes (Reports/<scenario>/<run>/, Reports/index.html), its metrics and exit codes: Docs/workbench.md.")
    @Argument(help: "Scenario files.") var files: [String]
    @OptionGroup var common: CommonOptions
    @Option(name: .long, help: "Compare against a named baseline after running.") var baseline: String?
    @Option(name: .long, help: "Run every n-th variant: i/n (the i-th of n shards; `ambar-bench merge` combines the shards' run folders into one report: Docs/workbench.md \"When one machine is not enough\", Docs/examples/capacity-matrix.yml).") var shard: String?
    @Option(name: .customLong("operation-trace"), help: "Write each simulated variant's operation trace (every Core Data call, in order; Docs/calibration.md): OUT.jsonl for a run of one variant, else a folder with one file per variant. `ambar-bench replay-trace` replays one.") var operationTrace: String?

    func run() throws {
        try guarded {
            var options = try common.suiteOptions(shard: shard)
            options.operationTrace = operationTrace.map { URL(fileURLWithPath: $0) }
            let outcomes = try Suite.run(files: files, options: options)
            var code = report(outcomes, reportsRoot: options.reportsRoot)
            if let baseline {
                let problems = try Baseline.load(name: baseline, root: URL(fileURLWithPath: "Scenarios/baselines")).compare(outcomes.flatMap(\.results))
                for p in problems { print("BASELINE: \(p)") }
                if !problems.isEmpty { code = 1 }
            }
            return code
        }
    }
}

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check scenario files without running them.")
    @Argument var files: [String]
    @Option(name: .short, help: "Override a key: -p key=value.") var p: [String] = []

    func run() throws {
        try guarded {
            for file in files {
                let loaded = try ScenarioLoader.load(file: file, overrides: p)
                print("\(file): ok (\(loaded.variants.count) variant run(s))")
                for line in loaded.variants.first?.model.skipped ?? [] { print("  \(line)") }
            }
            return 0
        }
    }
}

struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Compare two run folders metric by metric (second / first).")
    @Argument var first: String
    @Argument var second: String

    func run() throws {
        try guarded {
            func load(_ path: String) throws -> [VariantResult] {
                guard let data = try? Data(contentsOf: URL(fileURLWithPath: path).appendingPathComponent("results.json")),
                      let r = try? JSONDecoder().decode([VariantResult].self, from: data) else {
                    throw WorkbenchError(.badInput, "\(path) is not a run folder (no readable results.json)")
                }
                return r
            }
            let a = try load(first), b = try load(second)
            print("variant\tmetric\tstatistic\tlabel\tfirst\tsecond\tratio")
            for ra in a {
                guard let rb = b.first(where: { $0.variant == ra.variant && $0.repetition == ra.repetition }) else { continue }
                for m in ra.metrics {
                    guard let other = rb.metrics.first(where: { $0.metric == m.metric && $0.statistic == m.statistic && $0.label == m.label }) else { continue }
                    let ratio = m.value == 0 ? (other.value == 0 ? "1.00" : "inf") : String(format: "%.2f", other.value / m.value)
                    print("\(ra.variant)#\(ra.repetition)\t\(m.metric)\t\(m.statistic)\t\(m.label)\t\(m.value)\t\(other.value)\t\(ratio)")
                }
            }
            return 0
        }
    }
}

struct Sweep: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run one file with one key varied: --vary key=v1,v2,...")
    @Argument var file: String
    @Option(name: .long, help: "key=v1,v2,... (repeatable: a grid).") var vary: [String]
    @OptionGroup var common: CommonOptions

    func run() throws {
        try guarded {
            var options = try common.suiteOptions()
            var matrix: [String] = []
            for v in vary {
                guard let eq = v.firstIndex(of: "=") else { throw WorkbenchError(.badInput, "--vary takes key=v1,v2, found \(v)") }
                matrix.append("matrix.\(v[..<eq])=[\(v[v.index(after: eq)...])]")
            }
            options.overrides += matrix
            return report(try Suite.run(files: [file], options: options), reportsRoot: options.reportsRoot)
        }
    }
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run a baseline's scenarios and compare (the CI gate).")
    @Option(name: .long) var baseline: String
    @OptionGroup var common: CommonOptions

    func run() throws {
        try guarded {
            let base = try Baseline.load(name: baseline, root: URL(fileURLWithPath: "Scenarios/baselines"))
            var options = try common.suiteOptions()
            options.overrides = base.overrides + common.overrides
            let outcomes = try Suite.run(files: base.files, options: options)
            var code = report(outcomes, reportsRoot: options.reportsRoot)
            let problems = base.compare(outcomes.flatMap(\.results))
            for p in problems { print("BASELINE: \(p)") }
            if problems.isEmpty { print(base.entries.contains { $0.exact != nil } ? "baseline \(baseline): every deterministic counter matches; every exact metric matches (simulated)" : "baseline \(baseline): every deterministic counter matches; timings within \(base.timingTolerance)×") } else { code = 1 }
            // For a CI system: JUnit XML and a Markdown summary (also appended to GitHub's step summary when set).
            let gate = try GateReport.write(baseline: base, problems: problems, to: options.reportsRoot.appendingPathComponent("ci-gate"), commit: GateReport.currentCommit())
            print("gate: \(gate.junit.path), \(gate.summary.path)")
            if let step = ProcessInfo.processInfo.environment["GITHUB_STEP_SUMMARY"], let handle = FileHandle(forWritingAtPath: step) {
                handle.seekToEndOfFile()
                handle.write(try Data(contentsOf: gate.summary))
                handle.closeFile()
            }
            return code
        }
    }
}

struct RecordBaseline: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "baseline", abstract: "Run scenarios and record their results as a named baseline.")
    @Argument var name: String
    @Argument var files: [String]
    @OptionGroup var common: CommonOptions

    func run() throws {
        try guarded {
            let outcomes = try Suite.run(files: files, options: try common.suiteOptions())
            let base = Baseline.make(name: name, files: files, overrides: common.overrides, results: outcomes.flatMap(\.results))
            try base.save(root: URL(fileURLWithPath: "Scenarios/baselines"))
            print("baseline \(name): \(base.entries.count) variant(s) recorded in Scenarios/baselines/\(name).json")
            return report(outcomes)
        }
    }
}

struct Guide: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the measured part of Docs/choosing-a-merge-policy.md from a run of Scenarios/policy-comparison.yaml.",
        discussion: "Without a folder, the newest run of policy-comparison under --out. With --check, nothing is written: exit 1 when the page differs from the run (make compare does this), 0 when it matches.")
    @Argument(help: "A run folder of policy-comparison.") var folder: String?
    @Option(name: .long, help: "The page whose generated part is written.") var page = "Docs/choosing-a-merge-policy.md"
    @Option(name: .long, help: "Where reports are.") var out = "Reports"
    @Flag(name: .long, help: "Compare only: exit 1 when the page differs from the run.") var check = false

    func run() throws {
        try guarded {
            let run = try folder.map { URL(fileURLWithPath: $0, isDirectory: true) }
                ?? PolicyGuide.newestRun(of: "policy-comparison", reportsRoot: URL(fileURLWithPath: out, isDirectory: true))
            switch try PolicyGuide.update(page: URL(fileURLWithPath: page), runFolder: run, check: check) {
            case .written: print("\(page): measured part written from \(run.path)")
            case .unchanged: print("\(page): matches \(run.path)")
            case let .differs(line, pageLine, runLine):
                print("\(page) differs from \(run.path) at line \(line) of its generated part:\n  page: \(pageLine)\n  run:  \(runLine)\nrun `make guide` to rewrite it (and say in the commit which figures moved and why)")
                return 1
            }
            return 0
        }
    }
}

/// `--keep`'s help, shared by the commands that write a run.
let keepHelp: String = "After writing the run, keep the last N runs of each scenario under --out and remove the older ones (a run a baseline file names, the newest and unknown files stay), or `all` to keep every run. Default: $\(ReportRetention.environmentVariable) when set, else 5."

struct Schema: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the JSON Schema of scenario files (Docs/scenario.schema.json), for editor completion and errors.",
        discussion: "A scenario whose first line is `# yaml-language-server: $schema=../Docs/scenario.schema.json` gets completion and errors in editors with a YAML language server (Docs/scenarios.md \"Editor support\").")
    @Option(name: .long, help: "Write the schema to FILE instead of standard output.") var out: String?

    func run() throws {
        try guarded {
            let json = ScenarioSchema.json()
            guard let out else {
                print(json, terminator: "")
                return 0
            }
            do { try Data(json.utf8).write(to: URL(fileURLWithPath: out)) } catch {
                throw WorkbenchError(.badInput, "cannot write \(out): \(error.localizedDescription)")
            }
            return 0
        }
    }
}

struct Merge: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Combine --shard run folders into one report.",
        discussion: "Give the run folders of every shard of one command (the same scenario file, overrides and seed; each shard once). Docs/workbench.md \"When one machine is not enough\" runs the shards as the jobs of a CI matrix: Docs/examples/capacity-matrix.yml.")
    @Argument var folders: [String]
    @Option(name: .long) var out: String = "Reports"
    @Option(name: .long, help: ArgumentHelp(keepHelp, valueName: "N|all")) var keep: String?

    func run() throws {
        try guarded {
            let root = URL(fileURLWithPath: out, isDirectory: true)
            let folder = try Suite.merge(folders: folders.map { URL(fileURLWithPath: $0, isDirectory: true) }, reportsRoot: root,
                                         keep: try ReportRetention.resolve(option: keep))
            print("report: \(folder.path)/report.html")
            print("index: \(root.appendingPathComponent("index.html").path)")
            return 0
        }
    }
}

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the scenarios in a folder.")
    @Argument var folder: String = "Scenarios"

    func run() throws {
        try guarded {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
                throw WorkbenchError(.badInput, "\(folder): no such folder")
            }
            let files: [String]
            do { files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".yaml") }.sorted() } catch {
                throw WorkbenchError(.badInput, "\(folder): cannot list the folder (\(error.localizedDescription))")
            }
            for f in files {
                let path = "\(folder)/\(f)"
                do {
                    let loaded = try ScenarioLoader.load(file: path)
                    print("\(path)\t\(loaded.variants.count) variant(s)\t\(loaded.variants.first?.description ?? "")")
                } catch {
                    print("\(path)\tinvalid: \(error)")
                }
            }
            return 0
        }
    }
}

struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Rebuild Reports/index.html.")
    @Option(name: .long) var out: String = "Reports"

    func run() throws {
        try guarded {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: out, isDirectory: &isFolder), isFolder.boolValue else {
                throw WorkbenchError(.badInput, "\(out): no such folder (give the folder that holds the run folders, Reports by default)")
            }
            try ReportWriter.writeIndex(reportsRoot: URL(fileURLWithPath: out, isDirectory: true))
            print("index: \(out)/index.html")
            return 0
        }
    }
}

struct CleanReports: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clean-reports",
        abstract: "Keep the last N runs of each scenario under --out now, print what was removed and the space freed, and rebuild index.html.",
        discussion: "Only run folders the workbench wrote are removed (Reports/<scenario>/<run>/ with its manifest.json); other files, symbolic links, a run a file in Scenarios/baselines names, and each scenario's newest run stay. Runs of one --shard position are counted apart. Also removes the staging folders of runs whose process is gone. Docs/workbench.md \"Keeping reports\".")
    @Option(name: .long, help: "The folder that holds the run folders.") var out: String = "Reports"
    @Option(name: .long, help: ArgumentHelp("How many runs of each scenario to keep, 1 or more, or `all`. Default: $\(ReportRetention.environmentVariable) when set, else 5.", valueName: "N|all"))
    var keep: String?

    func run() throws {
        try guarded {
            let keep = try ReportRetention.resolve(option: keep)
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: out, isDirectory: &isFolder), isFolder.boolValue else {
                throw WorkbenchError(.badInput, "\(out): no such folder (give the folder that holds the run folders, Reports by default)")
            }
            let root = URL(fileURLWithPath: out, isDirectory: true)
            let leftovers = Suite.cleanLeftovers(reportsRoot: root)
            if leftovers > 0 { print("removed \(leftovers) folder(s) left by interrupted runs") }
            let removed = ReportRetention.prune(reportsRoot: root, keep: keep, baselines: URL(fileURLWithPath: "Scenarios/baselines", isDirectory: true))
            for r in removed { print("removed \(out)/\(r.run.scenario)/\(r.run.name) (\(ReportRetention.byteText(r.bytes)))") }
            print(ReportRetention.summary(removed, keep: keep))
            try ReportWriter.writeIndex(reportsRoot: root)
            print("index: \(out)/index.html")
            return 0
        }
    }
}

extension ExecutionMode: ExpressibleByArgument {}

struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-run one simulated variant with a seed and print its interleaving up to a step: which queue ran what, at which virtual time.",
        discussion: "A finding in a report names its seed and step. The run is the same as the one that found it (simulated mode repeats exactly); every step up to --until is printed.")
    @Argument(help: "The scenario file.") var file: String
    @Option(name: .long, help: "The seed, 0 to \(UInt64.max) (a report's finding names it).", transform: Replay.seed) var seed: UInt64
    @Option(name: .long, help: "Print the steps up to this one.") var until: Int
    @Option(name: .long, help: "Which variant (its name in the report, e.g. stack.topology=nested); default the first.") var variant: String?
    @Option(name: .short, help: "Override a key: -p key=value (repeatable).") var p: [String] = []
    @Option(name: .long, help: "The cost profile (default the scenario's).") var profile: String?
    @Option(name: .long, help: "Also write the whole trace to FILE (JSON Lines).") var trace: String?

    func run() throws {
        try guarded {
            let overrides = p + ["seed=\(seed)", "repeat=1"] + (profile.map { ["profile=\($0)"] } ?? [])
            let loaded = try ScenarioLoader.load(file: file, overrides: overrides)
            guard let scenario = variant.map({ name in loaded.variants.first { $0.variantName == name } }) ?? loaded.variants.first else {
                throw WorkbenchError(.badInput, "no variant named \(variant ?? "") in \(file); the variants are \(loaded.variants.map(\.variantName).joined(separator: ", "))")
            }
            guard scenario.mode == .simulated else { throw WorkbenchError(.badInput, "replay needs simulated mode (the scenario says mode: real)") }
            let writer = try trace.map { try TraceWriter(url: URL(fileURLWithPath: $0)) }
            writer?.begin(scenario)
            let until = self.until
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-replay-\(UUID().uuidString)", isDirectory: true)
            defer { try? FileManager.default.removeItem(at: work) }
            print("replay \(scenario.name) \(scenario.variantName) seed \(scenario.seed) profile \(scenario.profile), steps 1...\(until)")
            let result = try VariantRunner(scenario: scenario, workDirectory: work, tracer: { record in
                writer?.record(record)
                if record.step <= until { print(record.text) }
            }).run()
            print("oracle: \(result.oracle.summary)")
            return 0
        }
    }
}

extension Replay {
    /// A seed from the command line: an integer too large for a seed says the range, as a scenario's `seed:` does.
    static func seed(_ text: String) throws -> UInt64 {
        if let v = UInt64(text) { return v }
        throw ValidationError(ScenarioLoader.isIntegerLiteral(text) ? "out of range (0 to \(UInt64.max)), found \(text)" : "expected an integer, found '\(text)'")
    }
}

struct ReplayTrace: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay-trace",
        abstract: "Replay an operation trace (run --operation-trace) through ObjectGraph and compare its counts with the run's.",
        discussion: "Prints every counter of the run beside the replay's, and the steps (records) whose counts differ. Exit code 0 when the replay reproduces the run exactly, 1 when it diverges (another result, or another count), 2 when the file cannot be read. Docs/calibration.md.")
    @Argument(help: "The operation trace (JSON Lines).") var file: String
    @Option(name: .customLong("diff-csv"), help: "Also write the per-step and overall diff as CSV (n,op,thread,counter,ours,theirs,difference).") var diffCSV: String?
    @Option(name: .customLong("diff-json"), help: "Also write the diff as JSON.") var diffJSON: String?
    @Option(name: .long, help: "How many differing step rows to print.") var limit: Int = 20

    func run() throws {
        try guarded {
            let check = try TraceCheck.run(file: URL(fileURLWithPath: file))
            print(check.text(limit: limit))
            if let diffCSV { try Data(CountDiff.csv(check.overall + check.steps).utf8).write(to: URL(fileURLWithPath: diffCSV)) }
            if let diffJSON { try CountDiff.json(check.document).write(to: URL(fileURLWithPath: diffJSON)) }
            return check.matches ? 0 : 1
        }
    }
}

struct Calibrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure what each costed operation takes on this machine (real mode) and write it as a cost profile.",
        discussion: "Run a scenario on the result with --profile this-machine (or the file) to set a simulated run beside a real one.")
    @Option(name: .long, help: "Where to write the profile.") var out: String = "Profiles/this-machine.yaml"
    @Option(name: .long, help: "Objects per measuring workload.") var objects: Int = 2000
    @Option(name: .long, help: "Repetitions of each workload (the median is kept).") var repetitions: Int = 5
    @Option(name: .long, help: "Scenarios whose real-mode main-queue blocks the main-queue costs are fitted to (repeatable; default the three of `make run`). Their seeds are moved by --seed-offset, so the fit is not judged on the runs it was fitted to.")
    var scenario: [String] = []
    @Option(name: .long, help: "Added to each fitting scenario's seed.") var seedOffset: UInt64 = 1000
    @Flag(name: .long, help: "Microbenchmarks only: no fit to real-mode runs.") var noFit = false

    func run() throws {
        try guarded {
            guard objects >= 8, objects <= 1_000_000, repetitions >= 1, repetitions <= 100 else {
                throw WorkbenchError(.badInput, "--objects takes 8...1000000 and --repetitions 1...100")
            }
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("ambar-calibrate-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: work) }
            var profile = try Calibration.measure(objects: objects, repetitions: repetitions, directory: work)
            if !noFit {
                let files = scenario.isEmpty ? ["Scenarios/thousands-of-imports.yaml", "Scenarios/conflict-storm.yaml", "Scenarios/read-only-view.yaml"] : scenario
                var variants: [Scenario] = []
                for file in files {
                    let base = try ScenarioLoader.load(file: file).variants.first?.seed ?? 1
                    variants += try ScenarioLoader.load(file: file, overrides: ["seed=\(base &+ seedOffset)", "repeat=1"]).variants
                }
                let blocks: Int
                (profile, blocks) = try Calibration.fit(profile, scenarios: variants, directory: work, progress: isTerminal ? { stderr($0) } : nil)
                profile.fittedTo = "\(blocks) main-queue blocks of \(files.joined(separator: ", ")) run in real mode on this machine, seeds moved by \(seedOffset)"
            }
            let url = URL(fileURLWithPath: out)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(Calibration.yaml(profile, host: ProcessInfo.processInfo.hostName).utf8).write(to: url)
            _ = try CostProfile.load(file: url)  // what we wrote reads back
            for op in CostedOperation.allCases { print(op.name.padding(toLength: 26, withPad: " ", startingAt: 0) + String(profile.cost(op)).leftPadded(10) + " ns") }
            print("profile: \(url.path)")
            return 0
        }
    }
}

struct Fit: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fit cost profiles to measurements: the published evidence (Profiles/evidence/: one profile per device, and the derived default), or with --sqldebug a device's own Core Data SQL debug log.",
        discussion: "Run the app with the launch argument -com.apple.CoreData.SQLDebug 1 and save its console output; the fetches' times give fetchExecuted and rowFetched, and the saves' BEGIN-to-COMMIT times (when the lines carry timestamps) give transaction and the row figures. Every other figure is the base profile's, marked estimated. Docs/calibration.md \"Fitting a profile to your device's SQL debug log\".")
    @Option(name: .long, help: "The SQL debug log to fit to (the Xcode console's or `log stream`'s output, plain or coloured).") var sqldebug: String?
    @Option(name: .long, help: "The device the log was captured on (written in the profile; names the default output file).") var device: String?
    @Option(name: .long, help: "Where to write the profile (default Profiles/<device>.yaml).") var out: String?
    @Option(name: .long, help: "The profile every figure the log does not determine comes from: a name in Profiles/ or a .yaml file (with --sqldebug; default modern-iphone).") var base: String?
    @Flag(name: .long, help: "Replace the output file when it exists (with --sqldebug; the evidence fit always rewrites its profiles).") var force = false
    @Option(name: .long, help: "The evidence folder (without --sqldebug), relative to the repository (default Profiles/evidence).") var evidence: String?
    @Option(name: .customLong("profiles"), help: "Where the evidence fit writes its profiles (without --sqldebug; default Profiles).") var profilesFolder: String?
    @Flag(name: .customLong("dry-run"), help: "Fit and print, write nothing (without --sqldebug).") var dryRun = false
    @Flag(name: .long, help: "Print each run as it starts (without --sqldebug).") var progress = false

    func run() throws {
        try guarded {
            // Each mode has its own options: one given to the other mode would be ignored, so it is refused.
            let (logOnly, evidenceOnly) = modeOptions()
            if let sqldebug {
                guard evidenceOnly.isEmpty else {
                    throw WorkbenchError(.badInput, "\(evidenceOnly.joined(separator: ", ")): only without --sqldebug (the evidence fit); --sqldebug fits one log with --device, --out, --base and --force")
                }
                return try fitToSQLDebugLog(sqldebug)
            }
            guard logOnly.isEmpty else {
                throw WorkbenchError(.badInput, "\(logOnly.joined(separator: ", ")): only with --sqldebug LOG; the evidence fit writes one profile per device to --profiles (default Profiles)")
            }
            return try fitToEvidence(evidence: evidence ?? "Profiles/evidence", out: profilesFolder ?? "Profiles", dryRun: dryRun, progress: progress)
        }
    }

    /// The options given that belong to the log fit (`--sqldebug`) and to the evidence fit.
    func modeOptions() -> (log: [String], evidence: [String]) {
        let log = [device.map { _ in "--device" }, out.map { _ in "--out" }, base.map { _ in "--base" }, force ? "--force" : nil].compactMap { $0 }
        let evidence = [self.evidence.map { _ in "--evidence" }, profilesFolder.map { _ in "--profiles" }, dryRun ? "--dry-run" : nil, progress ? "--progress" : nil].compactMap { $0 }
        return (log, evidence)
    }

    func fitToSQLDebugLog(_ log: String) throws -> Int32 {
        guard let device, !device.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw WorkbenchError(.badInput, "--sqldebug needs --device NAME: the device the log was captured on")
        }
        guard let target = out ?? SQLDebugProfileFit.slug(device).map({ "Profiles/\($0).yaml" }) else {
            throw WorkbenchError(.badInput, "--device \(device.debugDescription) has no letter or digit to name a file: give --out FILE")
        }
        let baseProfile = try CostProfile.load(base ?? "modern-iphone")
        let fit = try SQLDebugProfileFit.read(file: URL(fileURLWithPath: log), name: log)
        for note in fit.timings.setAside.prefix(20) { stderr("warning: \(log):\(note.line): \(note.message)") }
        if fit.timings.setAside.count > 20 { stderr("warning: \(log): \(fit.timings.setAside.count - 20) more lines set aside") }
        print(fit.summary(base: baseProfile), terminator: "")
        try fit.write(to: URL(fileURLWithPath: target), base: baseProfile, device: device, command: commandLine(), overwrite: force)
        print("profile: \(target)")
        return 0
    }

    /// This invocation as a shell would take it back.
    func commandLine() -> String {
        let words = ["ambar-bench"] + CommandLine.arguments.dropFirst().map { word -> String in
            let safe = !word.isEmpty && word.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_./=:,+@%".contains($0)) }
            return safe ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }
        return words.joined(separator: " ")
    }
}

