import Foundation
import ObjectGraph
import SeededRandom
import Testing
@testable import Workbench

/// With the same seed, deterministic counters are identical from run to run (workbench.md "Metrics": what
/// CI gates on).
@Suite("Determinism (workbench.md: Metrics, deterministic counters)")
struct DeterminismTests {
    @Test("the same scenario and seed run twice give identical deterministic counters")
    func sameSeedSameCounters() throws {
        let scenario = try #require(try tinyScenario().variants.first)
        let first = try runVariant(scenario)
        let second = try runVariant(scenario)
        let deterministic = { (r: VariantResult) in r.counters.filter { MetricCatalog.deterministic.contains($0.key) } }
        #expect(deterministic(first) == deterministic(second))
        // What the tiny scenario does: 200 seeded rows, then 4 chunks of 50 (half updates) and 3 editor saves
        // (10/s for 300 ms). The viewer's controller keeps every merged insert (rule 23: Core Data's
        // controller grows past its fetchLimit), and a merge's updates of rows it holds as faults fire them
        // (Docs/coredata-behaviour.md §5, Rule 10), so later merges refresh more of its objects.
        #expect(deterministic(first) == [
            "rowsInserted": 300, "rowsUpdated": 100, "rowsDeleted": 0, "saves": 9, "operations": 9, "merges": 6,
            "mergeObjectsRefreshed": 62, "mergeObjectsExamined": 100,
        ])
        // The CI gate agrees: a baseline made from one run passes the other.
        let baseline = Baseline.make(name: "twice", files: ["tiny.yaml"], overrides: [], results: [first])
        #expect(baseline.compare([second]).filter { $0.contains("counter") } == [])
        // The writes each actor intended come from its sub-seed: the same in both runs.
        let intended = { (r: VariantResult) in Set(r.events.compactMap { e in e.intended.map { "\(e.actor) \(e.key) \(e.field) \($0)" } }) }
        #expect(!intended(first).isEmpty)
        #expect(intended(first).symmetricDifference(intended(second)).sorted() == [])
        #expect(first.seed == 7 && second.seed == 7)
    }

    @Test("a baseline names the counter that changed")
    func baselineNamesTheMetric() throws {
        let scenario = try #require(try tinyScenario().variants.first)
        var result = try runVariant(scenario)
        let baseline = Baseline.make(name: "ci", files: ["tiny.yaml"], overrides: [], results: [result])
        #expect(baseline.compare([result]) == [])
        result.counters["rowsUpdated"] = (result.counters["rowsUpdated"] ?? 0) + 1
        #expect(baseline.compare([result]) == ["tiny default #1: counter rowsUpdated is 101, baseline 100 (deterministic: must match exactly)"])
        #expect(baseline.compare([]) == ["tiny default #1: missing from the run"])
    }

    @Test("times have a tolerance (5×, from 5 ms up): noise passes, a real slowdown fails naming the metric")
    func timingTolerance() {
        let recorded = ReportGoldenTests.result(topology: "ambar", policy: "storeTrump", scale: 1, oracle: ReportGoldenTests.passing, thresholdMet: true)
        let baseline = Baseline.make(name: "ci", files: [], overrides: [], results: [recorded])
        let noisy = ReportGoldenTests.result(topology: "ambar", policy: "storeTrump", scale: 2, oracle: ReportGoldenTests.passing, thresholdMet: true)
        #expect(baseline.compare([noisy]) == [])
        let slow = ReportGoldenTests.result(topology: "ambar", policy: "storeTrump", scale: 10, oracle: ReportGoldenTests.passing, thresholdMet: true)
        #expect(baseline.compare([slow]) == ["golden stack.topology=ambar #1: mergeLatency.p99 is 41.25 ms, 8.2× the baseline 4.125 ms (tolerance 5.0×)"])
    }

    @Test("a save gives inserted objects primary keys in insertion order (§2.1 step 4), so a seeded import gives the same rows")
    func insertOrder() throws {
        let directory = try TemporaryDirectory("workbench-order")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(file: ScenarioLoader.workloadModel))
        try coordinator.addPersistentStore(type: .sqlite, at: directory.file("store.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        let pairs: [(Int64, Int64)] = try context.performAndWait {
            var objects: [ManagedObject] = []
            for id in 1...200 {
                let object = try context.insertNewObject(forEntityName: "Record")
                try object.setValue(Int64(id), forKey: "id")
                objects.append(object)
            }
            try context.save()
            return objects.map { (($0.value(forKey: "id") as? Int64) ?? -1, $0.objectID.primaryKey ?? -1) }
        }
        #expect(pairs.allSatisfy { $0.0 == $0.1 })
    }

    @Test("the seeded generator replays: one sub-seed per actor name")
    func seededGenerator() {
        var a = SeededGenerator(seed: SeededGenerator.seed(7, "run.importer2"))
        var b = SeededGenerator(seed: SeededGenerator.seed(7, "run.importer2"))
        var c = SeededGenerator(seed: SeededGenerator.seed(7, "run.editor1"))
        let xs = (0..<5).map { _ in a.next() }, ys = (0..<5).map { _ in b.next() }, zs = (0..<5).map { _ in c.next() }
        #expect(xs == ys)
        #expect(xs != zs)
        var d = SeededGenerator(seed: 1)
        let keys = d.keys(50, in: 100, .hotspot, hot: 10)
        #expect(Set(keys).count == 50 && keys.allSatisfy { (1...100).contains($0) })
        var e = SeededGenerator(seed: 1)
        #expect(e.keys(50, in: 100, .hotspot, hot: 10) == keys)
    }
}

/// Simulated mode's promise (Docs/simulation.md "What is exact"): the same scenario and seed give byte-identical
/// exact metrics in two processes, and with another process loading both cores.
@Suite("Determinism across processes and load (Docs/simulation.md)", .serialized)
struct CrossProcessDeterminismTests {
    /// metrics.csv without the host rows (label `host…`), and summary.csv without its wall-time column.
    static func exactFiles(_ ws: TemporaryDirectory) throws -> [String] {
        let folders = CLITests.runFolders(ws)
        return try folders.map { folder in
            let metrics = try String(contentsOf: ws.file("out/tiny/\(folder)/metrics.csv"), encoding: .utf8)
            return metrics.split(separator: "\n").filter { !$0.split(separator: ",", omittingEmptySubsequences: false)[5].hasPrefix("host") }.joined(separator: "\n")
        }
    }

    @Test("two processes, then one beside a load on both cores: identical exact metrics, byte for byte")
    func twoProcessesAndLoad() throws {
        let ws = try CLITests.workspace()
        for _ in 0..<2 {
            let run = try bench(["run", "tiny.yaml", "--out", "out"], in: ws.url)
            #expect(run.status == 0, "\(run.stderr)")
            sleep(1)  // run folders are named by the second
        }
        // Two busy loops, one per core, while the third run goes.
        var loaders: [Process] = []
        for _ in 0..<2 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", "while :; do :; done"]
            try p.run()
            loaders.append(p)
        }
        // SIGKILL: a test runner may start its children with SIGTERM ignored.
        defer { for p in loaders { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() } }
        let loaded = try bench(["run", "tiny.yaml", "--out", "out"], in: ws.url)
        #expect(loaded.status == 0, "\(loaded.stderr)")
        let files = try Self.exactFiles(ws)
        try #require(files.count == 3)
        #expect(files[0].count > 1000)
        #expect(files[0] == files[1])
        #expect(files[0] == files[2])
    }
}
