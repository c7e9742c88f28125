import Foundation
import ObjectGraph
import Synchronization
import Testing
@testable import Workbench

/// What the workbench's figures cover (Docs/workbench.md "Phases"): main-queue work after a phase's last tick,
/// each variant's own memory, and the phases the latency distributions describe.
@Suite("Measurement: frames after a phase, memory per variant, latency per phase")
struct MeasurementTests {
    /// A cost profile pricing only the operations given (ns), everything else 0.
    /// A profile of these costs (0 for the others), with `keys` (YAML lines) beside its description.
    static func profile(_ costs: [CostedOperation: UInt64], in folder: TemporaryDirectory, keys: String = "") throws -> URL {
        var text = "description: test\nfittedTo: nothing\n\(keys)costs:\n"
        for op in CostedOperation.allCases { text += "  \(op.name): { ns: \(costs[op] ?? 0) }\n" }
        return try folder.write("profile.yaml", text)
    }

    // A 60 Hz display link ticks every 16_666_666 ns. A block queued once the clock has stopped starts it again at
    // the grid's next tick: the block from 150 to 250 ms meets the tick at 166.67 ms (10 × 16.67), which queues a
    // frame; the ticks at 183.3 … 250 ms (5) find it pending; it runs at 250 ms, 5 refreshes past its deadline
    // (183.3 ms). The next tick finds nothing to do and the clock stops again.
    @Test("a main-queue block queued after the phase's frames stopped starts the display link again: its missed frames and hitch are counted")
    func blockAfterTheLastFrameIsCovered() throws {
        let scheduler = Scheduler(seed: 1, profile: try SimulationTests.profile())
        let main = Mutex<SimulatedMainThread?>(nil)
        let frameStarts = Mutex<[UInt64]>([])
        scheduler.run {
            let m = SimulatedMainThread()
            main.withLock { $0 = m }
            m.scheduleFrames(on: scheduler, rate: 60, from: 0, until: { Clock.now() >= 100_000_000 }) {
                frameStarts.withLock { $0.append(Clock.now()) }
            }
            scheduler.spawn(name: "late merge") {
                Clock.sleep(until: 150_000_000)
                m.queue.async { SimulationTests.work(microseconds: 100_000) }
            }
            scheduler.waitUntilQuiet()
            m.endFrames()
        }
        let state = try #require(main.withLock { $0 }).stats.state.withLock { $0 }
        let starts = frameStarts.withLock { $0 }
        // Ticks 0 … 7 (116.7 ms: the first past 100 ms stops the clock, as before) drew 7 frames; then the tick at
        // 166.7 ms queued the frame that ran at 250 ms.
        #expect(state.framesMissed == 5)
        #expect(starts.count == 8)
        #expect(starts.last == 250_000_000)
        #expect(abs(state.hitch60 - 5 * 16.666_666) < 0.001)
    }

    // A merge of 100 inserted objects into the view context whose controller evaluates each at 9 ms (the only
    // main-queue cost of this profile) is a 900 ms block. The import writes its rows at 0.1 ms each, so the save
    // commits at 10 ms and the merge runs from 10 to 910 ms, after the import (the phase's only actor) ended. The
    // tick at 16.67 ms queues a frame; ticks 2 … 54 (900 ms) find it pending: 53 missed frames. It runs at 910 ms,
    // due at 33.33 ms: 53 refreshes of 16.67 ms late at 60 Hz (883.3 ms), 107 of 8.33 ms at 120 Hz (891.7 ms).
    // Without frames over the work that trails a phase, this run would read 0 missed frames and a hitch ratio of 0.
    @Test("a merge landing after the import ended runs under the frame clock: exact missed frames and hitch (simulated)")
    func mergeAfterTheImportCountsItsFrames() throws {
        let folder = try TemporaryDirectory("late-merge")
        let profile = try Self.profile([.controllerObjectEvaluated: 9_000_000, .rowInserted: 100_000], in: folder)
        let text = """
            name: late-merge
            profile: \(profile.path)
            stack: { topology: container }
            phases:
              - name: run
                actors:
                  - viewer: { visibleObjects: 5 }
                  - importer: { objects: 100, chunkSize: 100 }
              - name: verify
            """
        let scenario = try #require(try ScenarioLoader.load(text: text, file: "late-merge.yaml").variants.first)
        let result = try runVariant(scenario)
        #expect(result.value("costedOperations", "count", label: "main:controllerObjectEvaluated") == 100)
        #expect(result.value("mainStall", "max").map { ($0 - 900).magnitude < 0.01 } == true, "longest block \(result.value("mainStall", "max") ?? -1) ms")
        #expect(result.value("framesMissed", "count") == 53)
        let runTime = try #require(result.value("runTime", "value"))
        let hitch60: Double = 53 * 16.666_666, hitch120: Double = 107 * 8.333_333
        #expect(result.value("hitchRatio", "value", label: "60Hz") == (hitch60 / runTime * 100).rounded() / 100)
        #expect(result.value("hitchRatio120", "value", label: "120Hz") == (hitch120 / runTime * 100).rounded() / 100)
        #expect(result.value("hangs", "count") == 1)
    }

    // Docs/workbench.md "Phases": a seed phase fills the store; its merges are not the measured phase's.
    @Test("mergeLatency counts the measured phase's merges only, not a seed phase's")
    func mergeLatencyLeavesSeedPhasesOut() throws {
        let text = """
            name: seeded-merges
            stack: { topology: container }
            phases:
              - name: seed
                actors:
                  - importer: { objects: 60, chunkSize: 20 }
              - name: run
                actors:
                  - viewer: { visibleObjects: 5 }
                  - importer: { objects: 40, chunkSize: 10 }
              - name: verify
            """
        let scenario = try #require(try ScenarioLoader.load(text: text, file: "seeded.yaml").variants.first)
        let result = try runVariant(scenario)
        // 3 seed saves and 4 run saves each merge into the view context: 7 merges, 4 of them measured.
        #expect(result.counters["merges"] == 7)
        #expect(result.value("mergeLatency", "count") == 4)
        #expect(result.value("saveLatency", "count", label: "importer") == 4)
    }

    // Two variants in one process: the first imports far more than the second. The second's memory is measured
    // from a baseline read after the first's objects are gone, so it reads what it allocated itself. jemalloc's
    // figures are the process's, so each run is a process of its own (`ambar-bench run`), away from the tests
    // running beside this one.
    @Test("a variant's memoryAllocated peak is its own, after a larger variant ran in the same process", .enabled(if: MemoryProbe.isAvailable))
    func memoryIsMeasuredPerVariant() throws {
        let folder = try TemporaryDirectory("memory-per-variant")
        func scenario(_ name: String, objects: String) throws {
            try folder.write("\(name).yaml", """
                name: \(name)
                stack: { topology: ambar }
                phases:
                  - name: run
                    actors:
                      - viewer: { visibleObjects: 5 }
                      - importer: { objects: 200, chunkSize: 1000 }
                  - name: verify
                matrix:
                  phases.run.importer.objects: \(objects)
                """)
        }
        try scenario("pair", objects: "[8000, 200]")
        try scenario("alone", objects: "[200]")
        func peaks(_ name: String) throws -> [Double] {
            let run = try bench(["run", "\(name).yaml", "--out", "reports", "--progress"], in: folder.url)
            #expect(run.status == 0, "\(run.stderr)")
            let path = try #require(folder.tree().first { $0.hasPrefix("reports/\(name)/") && $0.hasSuffix("/results.json") })
            let results = try JSONDecoder().decode([VariantResult].self, from: Data(contentsOf: folder.file(path)))
            #expect(!run.stderr.contains("memory: the previous variant"), "\(run.stderr)")
            return try results.map { try #require($0.value("memoryAllocated", "peak")) }
        }
        let pair = try peaks("pair"), alone = try #require(try peaks("alone").first)
        #expect(pair.count == 2)
        let (large, after) = (pair[0], pair[1])
        #expect(large > 2 * alone, "large \(large), small \(alone)")
        #expect(after > alone / 2 && after < alone * 2, "after the large variant \(after), alone \(alone)")
    }

    // Each variant's memory is measured above what the previous one left (Docs/workbench.md `memoryAllocated`): a
    // variant's objects must go once its run lets them go. In a nested stack the workload's push hooks sit on the
    // view context and on the private writer; neither may keep the context it sits on alive.
    @Test("A nested variant's contexts, main queue and coordinator are freed when the run ends")
    func nestedVariantIsFreed() throws {
        let scenario = try #require(try tinyScenario(overrides: ["stack.topology=nested"]).variants.first)
        let work = try TemporaryDirectory("workbench-run")
        /// Runs the variant and lets go of its objects, but for weak references to them.
        func runAndLetGo() throws -> [VariantRunner.WatchedObject] {
            let leftovers = VariantRunner.Leftovers()
            _ = try VariantRunner(scenario: scenario, workDirectory: work.url).run(holding: leftovers)
            let stack = try #require(leftovers.objects.lazy.compactMap { $0 as? WorkbenchStack }.first)
            let main = try #require(leftovers.objects.lazy.compactMap { $0 as? SimulatedMainThread }.first)
            let writer = try #require(stack.committedContext)
            let named: [(String, AnyObject)] = [("view context", stack.viewContext), ("private writer", writer), ("main queue", main)]
                + stack.coordinators.map { ("coordinator \($0.0)", $0.1) }
            defer { leftovers.objects = [] }
            return named.map { VariantRunner.WatchedObject(name: $0.0, object: $0.1) }
        }
        let watched = try runAndLetGo()
        // A simulation thread may still hold a reference for a moment after the run: wait, as the next variant does.
        let alive = VariantRunner.stillAlive(watched, timeout: 2)
        #expect(alive.isEmpty, "still alive after the run: \(alive.joined(separator: ", "))")
    }
}
