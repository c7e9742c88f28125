import Foundation
import Synchronization
import Testing
import ObjectGraph
import TraceReplay
@testable import Workbench

/// The operation trace of a simulated run, replayed through ObjectGraph, reproduces the run's counts.
@Suite struct OperationTraceTests {
    /// Runs `scenario` with an operation trace; returns the trace (header, records).
    static func traced(_ scenario: Scenario) throws -> (TraceHeader, [OperationRecord]) {
        let work = try TemporaryDirectory("workbench-optrace")
        let captured = Mutex<(TraceHeader, [OperationRecord])?>(nil)
        var runner = VariantRunner(scenario: scenario, workDirectory: work.url)
        runner.operationTrace = { header, records in captured.withLock { $0 = (header, records) } }
        _ = try runner.run()
        return try #require(captured.withLock { $0 })
    }

    /// Every count the run reports (each costed operation but a queue's block dispatch, and SQL statements by
    /// kind) is reproduced exactly by the replay, and no call's result differs (Docs/calibration.md).
    static func check(_ scenario: Scenario, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (header, records) = try traced(scenario)
        let outcome = try ObjectGraphReplayBackend.replay(header: header, records: records, keepsSteps: true)
        let name = "\(scenario.name) \(scenario.variantName)"
        #expect(outcome.divergences.isEmpty, "\(name): \(outcome.divergences.prefix(5))", sourceLocation: sourceLocation)
        let expected = try #require(outcome.expected)
        #expect(!expected.isEmpty, "\(name): the run counted nothing", sourceLocation: sourceLocation)
        let keys = Set(expected.keys).union(outcome.counts.keys).sorted()
        let differing = keys.filter { expected[$0] != outcome.counts[$0] }.map { "\($0): replay \(outcome.counts[$0] ?? 0), run \(expected[$0] ?? 0)" }
        #expect(differing.isEmpty, "\(name): \(differing)", sourceLocation: sourceLocation)
        // Step by step too: each call counts in the replay what it counted in the run.
        let steps = CountDiff.steps(records: records, replayed: outcome.steps).filter { $0.difference != 0 }
        #expect(steps.isEmpty, "\(name): \(steps.count) step counts differ, first \(steps.prefix(3))", sourceLocation: sourceLocation)
    }

    /// The tiny scenario's threads stop inside calls and call out to observers: the trace says where (`resume`
    /// records, calls made `within` another), and the replay follows it (Docs/calibration.md "Interleaving").
    @Test("A trace whose header has an unknown attribute type is refused, naming the file, entity and attribute")
    func headerWithAnUnknownAttributeTypeIsRefused() throws {
        let header = #"{"format":"ambar-operations","version":1,"scenario":"s","variant":"v","seed":1,"profile":"p","#
            + #""models":[{"entities":[{"name":"Item","attributes":[{"name":"id","type":"integer64"},"#
            + #"{"name":"title","type":"text"}]}]}]}"#
        let error = try #require(throws: ReplayError.self) { try TraceCoding.read(Data((header + "\n").utf8), name: "t.jsonl") }
        #expect(error.message.hasPrefix("t.jsonl:1: the header cannot be read: "))
        #expect(error.message.contains("at .models[0].entities[0].attributes[1].type (entity 'Item', attribute 'title')"))
        #expect(error.message.hasSuffix("; an attribute's type is one of integer16, integer32, integer64, double, float, decimal, string, boolean, date, binaryData, uuid, uri, transformable"))
    }

    @Test func tinyScenarioReplaysExactly() throws {
        for variant in try tinyScenario().variants {
            let (_, records) = try Self.traced(variant)
            #expect(records.contains { $0.op == "resume" } && records.contains { $0.within != nil })
            #expect(records.contains { $0.op == "save" && $0.counts?["contextSave"] == 1 }, "a call's record has what its thread counted")
            try Self.check(variant)
        }
    }

    /// The topologies no shipped scenario uses, on the tiny scenario.
    @Test(arguments: ["ambar7", "viewChildren", "privateRoot", "headless"])
    func otherTopologiesReplayExactly(_ topology: String) throws {
        var overrides = ["stack.topology=\(topology)"]
        if topology == "headless" { overrides += ["phases.run.actors=[]"] }
        for variant in try tinyScenario(overrides: overrides).variants { try Self.check(variant) }
    }

    static var root: URL { URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent() }

    /// Each shipped scenario (Scenarios/*.yaml), scaled down to a few hundred objects and a fraction of a second
    /// so that all of them replay in seconds; every matrix variant runs (repeats: one).
    static let scaled: [String: [String]] = [
        "big-import-memory": ["phases.run.importer.objects=300", "phases.run.importer.chunkSize=100"],
        "capacity": ["phases.seed.importer.objects=100", "phases.seed.importer.chunkSize=50", "phases.run.importer.objects=300",
                     "matrix.phases.run.importer.chunkSize=[50, 150]", "matrix.phases.run.viewer.visibleObjects=[5, 20]"],
        "ci-regression": ["phases.seed.importer.objects=200", "phases.seed.importer.chunkSize=100", "phases.run.duration=300ms",
                          "phases.run.importer.objects=400", "phases.run.importer.chunkSize=100"],
        "conflict-storm": ["phases.seed.importer.objects=40", "phases.seed.importer.chunkSize=40", "phases.run.duration=400ms",
                           "phases.run.importer.objects=200"],
        "editor-saves": ["phases.seed.importer.objects=100", "phases.seed.importer.chunkSize=50", "phases.run.duration=400ms",
                         "phases.run.importer.objects=300", "phases.run.importer.chunkSize=50"],
        "everyday-workloads": ["phases.seed.importer.objects=200", "phases.seed.importer.chunkSize=100", "phases.run.duration=300ms",
                               "phases.run.importer.objects=200", "phases.run.importer.chunkSize=50", "phases.run.deleter.objects=40",
                               "phases.run.deleter.chunkSize=10", "matrix.stack.topology=[ambar, nested]"],
        "few-visible-objects": ["phases.seed.importer.objects=300", "phases.seed.importer.chunkSize=150", "phases.run.importer.objects=300",
                                "phases.run.importer.chunkSize=100", "matrix.phases.run.viewer.visibleObjects=[1, 10, 100]"],
        "history-and-batch": ["phases.seed.importer.objects=200", "phases.seed.importer.chunkSize=100", "phases.run.duration=500ms",
                              "phases.run.importer.objects=400", "phases.run.importer.chunkSize=100", "phases.run.batch.size=20"],
        "import-memory": ["phases.run.importer.objects=400", "phases.run.importer.chunkSize=100", "phases.run.importer.groups=20"],
        "migration": ["matrix.phases.seed.importer.objects=[300]", "phases.seed.importer.chunkSize=100"],
        "policy-comparison": ["repeat=1", "phases.seed.importer.objects=100", "phases.seed.importer.chunkSize=50", "phases.run.duration=300ms",
                              "phases.run.importer.objects=200", "phases.run.importer.chunkSize=50"],
        "query-generation-wal": ["phases.seed.importer.objects=100", "phases.seed.importer.chunkSize=50", "phases.run.importer.objects=300",
                                 "phases.run.importer.chunkSize=100"],
        "read-only-view": ["phases.seed.importer.objects=100", "phases.seed.importer.chunkSize=50", "phases.run.duration=400ms",
                           "phases.run.importer.objects=300", "phases.run.importer.chunkSize=100"],
        "rollback-temporaries": ["phases.seed.importer.objects=200", "phases.seed.importer.chunkSize=100", "phases.run.duration=400ms",
                                 "phases.run.importer.objects=300", "phases.run.importer.chunkSize=100"],
        "shop-orders": ["phases.seed.importer.objects=60", "phases.seed.importer.chunkSize=30", "phases.run.importer.objects=90",
                        "phases.run.importer.chunkSize=30"],
        "store-comparison": ["phases.seed.importer.objects=200", "phases.seed.importer.chunkSize=100", "phases.run.importer.objects=300",
                             "phases.run.importer.chunkSize=100"],
        "thousands-of-imports": ["phases.seed.importer.objects=200", "phases.seed.importer.chunkSize=100", "phases.run.importer.objects=600",
                                 "phases.run.importer.chunkSize=100"],
    ]

    @Test func everyShippedScenarioIsScaled() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Scenarios").path)
            .filter { $0.hasSuffix(".yaml") }.map { String($0.dropLast(5)) }.sorted()
        #expect(files == Self.scaled.keys.sorted(), "each shipped scenario needs its scaled-down parameters here")
    }

    /// Scenarios/`name`.yaml with `overrides`: every variant is simulated and replays exactly (``check(_:sourceLocation:)``).
    static func checkEveryVariant(_ name: String, overrides: [String]) throws {
        let file = root.appendingPathComponent("Scenarios/\(name).yaml").path
        let loaded = try ScenarioLoader.load(file: file, overrides: overrides)
        try #require(!loaded.variants.isEmpty)
        for variant in loaded.variants {
            #expect(variant.mode == .simulated)
            try check(variant)
        }
    }

    @Test(arguments: scaled.keys.sorted())
    func shippedScenarioReplaysExactly(_ name: String) throws {
        try Self.checkEveryVariant(name, overrides: Self.scaled[name] ?? [])
    }

    /// The scenarios of Scenarios/evidence/ (they reproduce published Core Data measurements, Profiles/evidence/) and
    /// Scenarios/long/, scaled down as the others: they bring what the top-level ones do not (a three-level group
    /// model, the nested topology, `frames: only`, a reset after each chunk, one save of a whole import under a
    /// controller), every variant.
    static let scaledInFolders: [String: [String]] = [
        // The matrix's variants are chunk sizes (60000, 1000): 1,200 objects make one save and two.
        "evidence/frc-merge-60k": ["phases.seed.importer.objects=100", "phases.seed.importer.chunkSize=100", "phases.run.importer.objects=1200"],
        "evidence/million-objects": ["phases.run.importer.objects=300", "phases.run.importer.chunkSize=50", "phases.run.importer.groups=10"],
        "evidence/nested-import-300k": ["phases.run.importer.objects=300", "phases.run.importer.chunkSize=100"],
        "evidence/nested-save-25k": ["phases.run.importer.objects=300", "phases.run.importer.chunkSize=300", "model.values.content.length=100"],
        "evidence/stack-shootout": ["phases.seed.importer.objects=100", "phases.seed.importer.chunkSize=100", "phases.run.importer.objects=300",
                                    "phases.run.importer.chunkSize=100"],
        "evidence/mvcoredatastack-sqlite-ios9": ["matrix.phases.write.importer.objects=[60]"],
        "evidence/mvcoredatastack-sqlite-ios8": ["matrix.phases.write.importer.objects=[60]"],
        "evidence/mvcoredatastack-inmemory": ["matrix.phases.write.importer.objects=[60]"],
        "evidence/core-data-stress-test": ["matrix.phases.create.importer.objects=[60, 120]"],
        "long/ten-million-import": ["phases.run.importer.objects=400", "phases.run.importer.chunkSize=100"],
    ]

    @Test("Every scenario of Scenarios/evidence/ and Scenarios/long/ has its scaled-down parameters for the replay")
    func everyScenarioInAFolderIsScaled() throws {
        var files: [String] = []
        for folder in ["evidence", "long"] {
            let path = Self.root.appendingPathComponent("Scenarios/\(folder)").path
            files += try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".yaml") }.map { "\(folder)/\($0.dropLast(5))" }
        }
        #expect(files.sorted() == Self.scaledInFolders.keys.sorted(), "each evidence and long scenario needs its scaled-down parameters here")
    }

    @Test("The evidence and long scenarios, scaled down, replay through ObjectGraph with every count exact, call by call",
          arguments: scaledInFolders.keys.sorted())
    func scenarioInAFolderReplaysExactly(_ name: String) throws {
        try Self.checkEveryVariant(name, overrides: Self.scaledInFolders[name] ?? [])
    }
}

/// Through the CLI: `run --operation-trace` writes the trace, `replay-trace` replays it, prints the diff
/// and says by its exit code whether the replay reproduced the run (0), diverged (1) or could not read it (2).
@Suite("ambar-bench run --operation-trace and replay-trace (Docs/calibration.md)", .serialized)
struct OperationTraceCLITests {
    @Test func writesReplaysAndJudgesATrace() throws {
        let ws = try TemporaryDirectory("workbench-optrace-cli")
        try ws.write("tiny.yaml", try Fixtures.text("tiny.yaml"))
        let run = try bench(["run", "tiny.yaml", "--out", "out", "--operation-trace", "trace.jsonl"], in: ws.url)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let (header, records) = try TraceReplay.TraceCoding.read(ws.file("trace.jsonl"))
        #expect(header.scenario == "tiny" && records.last?.op == "end" && records.count > 100)

        let replay = try bench(["replay-trace", "trace.jsonl", "--diff-csv", "diff.csv", "--diff-json", "diff.json"], in: ws.url)
        #expect(replay.status == 0, "stdout: \(replay.stdout)\nstderr: \(replay.stderr)")
        #expect(replay.stdout.contains("the replay reproduces the run's counts exactly"))
        #expect(replay.stdout.contains("contextSave"))
        let csv = try String(contentsOf: ws.file("diff.csv"), encoding: .utf8)
        #expect(csv.hasPrefix("n,op,thread,counter,ours,theirs,difference\n") && csv.contains(",,,contextSave,12,12,0\n"))
        let document = try JSONDecoder().decode(TraceReplay.CountDiff.Document.self, from: Data(contentsOf: ws.file("diff.json")))
        #expect(!document.steps.isEmpty && document.steps.allSatisfy { $0.difference == 0 })

        // A trace whose run counted one more save than the replay makes: exit 1, the counter named.
        var end = try #require(records.last)
        end.counts?["contextSave", default: 0] += 1
        try TraceReplay.TraceCoding.file(header: header, records: records.dropLast() + [end]).write(to: ws.file("altered.jsonl"))
        let altered = try bench(["replay-trace", "altered.jsonl"], in: ws.url)
        #expect(altered.status == 1)
        #expect(altered.stdout.contains("DIVERGED") && altered.stdout.contains("contextSave"))

        // Not a trace: exit 2, the file and line named.
        try ws.write("bad.jsonl", "{\"format\":\"something-else\"}\n")
        let bad = try bench(["replay-trace", "bad.jsonl"], in: ws.url)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("bad.jsonl:1: not an operation trace"))

        // A run of several variants needs a folder.
        let many = try bench(["run", "tiny.yaml", "--out", "out", "-p", "matrix.stack.topology=[ambar, nested]", "--operation-trace", "t.jsonl"], in: ws.url)
        #expect(many.status == 2 && many.stderr.contains("give a folder"))
        let folder = try bench(["run", "tiny.yaml", "--out", "out", "-p", "matrix.stack.topology=[ambar, nested]", "--operation-trace", "traces"], in: ws.url)
        #expect(folder.status == 0, "stderr: \(folder.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: ws.file("traces").path).sorted()
        #expect(files == ["tiny-stack.topology=ambar.jsonl", "tiny-stack.topology=nested.jsonl"])
    }

    /// A trace written as the run makes it (`ambar-bench run --operation-trace`) is the same, byte for byte, as
    /// the one held in memory, and the recorder holds a bounded number of records, not the whole trace.
    @Test("The operation trace streamed to a file equals the trace held in memory; the recorder holds a bounded window")
    func streamedTraceEqualsTheTraceInMemory() throws {
        let file = OperationTraceTests.root.appendingPathComponent("Scenarios/ci-regression.yaml").path
        let overrides = try #require(OperationTraceTests.scaled["ci-regression"])
        let variant = try #require(try ScenarioLoader.load(file: file, overrides: overrides).variants.first)
        let (header, records) = try OperationTraceTests.traced(variant)
        let expected = TraceCoding.file(header: header, records: records)

        let work = try TemporaryDirectory("workbench-optrace-stream")
        let target = work.url.appendingPathComponent("trace.jsonl")
        let writer = OperationTraceFileWriter(file: target, flushEvery: 64)
        var runner = VariantRunner(scenario: variant, workDirectory: work.url)
        runner.operationTraceFile = writer
        _ = try runner.run()
        #expect(writer.outcome == nil)
        let written = try Data(contentsOf: target)
        #expect(written == expected, "the streamed file differs from the trace in memory")
        #expect(writer.written == records.count)
        #expect(records.count > 1_000, "a trace long enough to flush many times (\(records.count) records)")
        #expect(writer.mostHeld < records.count / 4, "held \(writer.mostHeld) of \(records.count) records at once")
        #expect(!FileManager.default.fileExists(atPath: work.url.appendingPathComponent(".trace.jsonl.partial").path))
    }

    /// A trace that cannot be finished leaves no file behind, and no half of one: the lines go to a hidden partial
    /// file that only a finished run renames into place.
    @Test("An abandoned or unwritable operation trace leaves no trace file and no partial file")
    func unfinishedTraceLeavesNothing() throws {
        let work = try TemporaryDirectory("workbench-optrace-fail")
        let header = TraceHeader(scenario: "s", variant: "default", seed: 1, profile: "iphone-15", models: [])
        let target = work.url.appendingPathComponent("trace.jsonl")
        let partial = work.url.appendingPathComponent(".trace.jsonl.partial")
        let abandoned = OperationTraceFileWriter(file: target, flushEvery: 1)
        abandoned.begin(header)
        abandoned.write([OperationRecord(op: "save")])
        #expect(FileManager.default.fileExists(atPath: partial.path), "lines go to the partial file while the run goes on")
        abandoned.abandon()
        #expect(!FileManager.default.fileExists(atPath: target.path) && !FileManager.default.fileExists(atPath: partial.path))

        // A folder that does not exist: the failure is told, and nothing is written.
        let nowhere = work.url.appendingPathComponent("missing/trace.jsonl")
        let failing = OperationTraceFileWriter(file: nowhere)
        failing.begin(header)
        failing.write([OperationRecord(op: "save")])
        failing.finish()
        #expect(failing.outcome != nil)
        #expect(failing.written == 0)
        #expect(!FileManager.default.fileExists(atPath: nowhere.path))

        // A finished one replaces an older file of the same name.
        try Data("old\n".utf8).write(to: target)
        let finished = OperationTraceFileWriter(file: target)
        finished.begin(header)
        finished.write([OperationRecord(op: "end")])
        finished.finish()
        #expect(finished.outcome == nil)
        #expect(try String(contentsOf: target, encoding: .utf8).split(separator: "\n").count == 2)
        #expect(!FileManager.default.fileExists(atPath: partial.path))
    }
}
