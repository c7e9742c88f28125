import Foundation
import ObjectGraph
import Testing
@testable import Workbench

/// In simulated mode: reads on a coordinator's read connections, and a view
/// context pinned to a query generation (`stack.pinViewGeneration`), stay deterministic.
@Suite("Read connections and query generations in the workbench")
struct SimulatedReadConnectionTests {
    static func load(_ text: String) throws -> Scenario {
        try #require(try ScenarioLoader.load(text: text, file: "pin.yaml").variants.first)
    }

    /// The container stack (one coordinator) while an importer commits `objects` rows in chunks of 1,000 and the view
    /// context keeps what it loaded.
    static func scenario(pinned: Bool, objects: Int = 24000) -> String {
        """
        name: pin
        seed: 3
        stack:
          topology: container
          merge: none
          pinViewGeneration: \(pinned)
        phases:
          - name: seed
            actors:
              - importer: { objects: 500, chunkSize: 500 }
          - name: run
            actors:
              - viewer: { visibleObjects: 10 }
              - importer: { objects: \(objects), chunkSize: 1000, updateFraction: 0.5 }
          - name: verify
        """
    }

    @Test("The same scenario and seed give the same exact metrics with reads on read connections (container, a pool of 4)")
    func pooledReadsAreDeterministic() throws {
        let scenario = try Self.load(Self.scenario(pinned: false, objects: 1500))
        let a = try runVariant(scenario), b = try runVariant(scenario)
        #expect(a.metrics == b.metrics)
        #expect(a.oracle.lostUpdates == 0)
    }

    @Test("§3.7: a pinned view context keeps SQLite from checkpointing the WAL: walSize.peak grows with the commits; the run stays deterministic and reaches the same rows")
    func pinnedViewGrowsTheWAL() throws {
        let unpinned = try runVariant(try Self.load(Self.scenario(pinned: false)))
        let pinnedScenario = try Self.load(Self.scenario(pinned: true))
        #expect(pinnedScenario.stack.pinViewGeneration)
        let pinned = try runVariant(pinnedScenario)
        let wal = { (r: VariantResult) in r.host.first { $0.metric == "walSize" && $0.statistic == "peak" }?.value ?? -1 }
        #expect(wal(unpinned) > 0)
        // 24,000 rows in 24 commits: several times SQLite's 1,000-page auto-checkpoint, which an unpinned run reuses.
        #expect(wal(pinned) > 1.5 * wal(unpinned), "pinned \(wal(pinned)) bytes, unpinned \(wal(unpinned)) bytes")
        #expect(pinned.counters["rowsInserted"] == unpinned.counters["rowsInserted"])
        let again = try runVariant(pinnedScenario)
        #expect(again.metrics == pinned.metrics, "a pinned run is as deterministic as any")
    }

    @Test("stack.pinViewGeneration is refused where the view context is a child (Core Data cannot pin one) or absent, naming file, line and field")
    func pinRefusedForChildViews() throws {
        for topology in ["nested", "privateRoot"] {
            let text = Self.scenario(pinned: true).replacingOccurrences(of: "topology: container\n  merge: none", with: "topology: \(topology)")
            #expect { try ScenarioLoader.load(text: text, file: "pin.yaml") } throws: { error in
                "\(error)".contains("pin.yaml:5:22: stack.pinViewGeneration") && "\(error)".contains("child context")
            }
        }
    }
}
