import Foundation
import ObjectGraph
import Testing
@testable import Workbench

/// What a viewer's frames read, end to end through the workbench on the tiny scenario (a 300 ms
/// run phase over 400 records, simulated and exact).
@Suite("Viewers: a scrolling window and a main queue that only draws frames")
struct ViewerTests {
    static func mainRows(_ r: VariantResult) -> Double { r.value("rowsFetched", "count", label: "queue=main") ?? -1 }
    static func mainFaults(_ r: VariantResult) -> Double {
        (r.value("faultsFulfilled", "count", label: "queue=main,source=rowCache") ?? 0) + (r.value("faultsFulfilled", "count", label: "queue=main,source=store") ?? 0)
    }

    // `viewer.scroll` moves the window through the controller's results at that many rows per
    // second, faulting what it reaches; a still window reads the same rows every frame.
    @Test("A scrolling window reads more of the controller's rows on the main queue than a still one, and more the faster it scrolls")
    func scrollingReadsMoreRows() throws {
        // The tiny scenario: 300 ms of imports and edits under a 10-row window over 400 records.
        let still = try CostFidelityTests.run([])
        let slow = try CostFidelityTests.run(["phases.run.viewer.scroll=100"])
        let fast = try CostFidelityTests.run(["phases.run.viewer.scroll=1000"])
        // 100 rows/s moves the window about 20 rows before the frames stop; 1000 rows/s passes most of the 400.
        // A slow scroll reaches rows whose batches the merges' updates already fired on main (Docs/coredata-
        // behaviour.md §5: a merge evaluates the rows the controller holds as faults), so it may add none.
        #expect(Self.mainFaults(slow) >= Self.mainFaults(still), "faults on main: still \(Self.mainFaults(still)), scroll 100 \(Self.mainFaults(slow))")
        #expect(Self.mainFaults(fast) > Self.mainFaults(slow), "faults on main: scroll 100 \(Self.mainFaults(slow)), scroll 1000 \(Self.mainFaults(fast))")
        let frameTime = { (r: VariantResult) in r.value("mainBusy", "total", label: MainBlockKind.frame.rawValue) ?? 0 }
        #expect(frameTime(fast) > frameTime(still))
        // The controller holds the same results either way: scrolling changes what frames read, not its size.
        #expect(fast.value("frcObjects", "value") == still.value("frcObjects", "value"))
        // Deterministic in simulated mode.
        let again = try CostFidelityTests.run(["phases.run.viewer.scroll=1000"])
        #expect(Self.mainFaults(again) == Self.mainFaults(fast) && Self.mainRows(again) == Self.mainRows(fast))

        // With nothing imported, every row a frame reads that is not already registered is the window's doing: a
        // still window faults its 10 rows once, a scrolling one the rows it reaches, and at 1000 rows/s the
        // batches it reaches bring rows from the store that a still window never reads.
        let quiet = ["phases.run.importer.objects=0"]
        let quietStill = try CostFidelityTests.run(quiet)
        let quietSlow = try CostFidelityTests.run(quiet + ["phases.run.viewer.scroll=100"])
        let quietFast = try CostFidelityTests.run(quiet + ["phases.run.viewer.scroll=1000"])
        #expect(Self.mainFaults(quietStill) < Self.mainFaults(quietSlow) && Self.mainFaults(quietSlow) < Self.mainFaults(quietFast),
                "faults on main: \(Self.mainFaults(quietStill)), \(Self.mainFaults(quietSlow)), \(Self.mainFaults(quietFast))")
        #expect(Self.mainRows(quietFast) > Self.mainRows(quietStill), "rows fetched on main: still \(Self.mainRows(quietStill)), scroll 1000 \(Self.mainRows(quietFast))")
    }

    // `viewer.frames: only` is a main queue that only draws frames: no controller and no data,
    // so a stall shows as missed frames and hitch time with nothing on screen.
    @Test("A frames-only viewer draws frames and counts hitches with nothing fetched on the main queue")
    func framesOnly() throws {
        // A nested stack's chunks of 5,000 new records are pushed into and saved by the main-queue context: stalls
        // of about 30 ms (the simulated default profile) that hold up the frames behind them. Inserts only, so
        // the importer reads nothing through the view context either.
        let overrides = ["stack.topology=nested", "phases.run.importer.objects=10000", "phases.run.importer.chunkSize=5000", "phases.run.importer.updateFraction=0"]
        let r = try CostFidelityTests.run(overrides + ["phases.run.viewer.frames=only"])
        #expect((r.value("frames", "value") ?? 0) > 0)
        #expect(r.value("mainBusy", "total", label: MainBlockKind.fetch.rawValue) == 0)
        #expect(Self.mainRows(r) == 0)
        #expect(Self.mainFaults(r) == 0)
        #expect(r.value("frcObjects", "value") == nil, "no controller")
        #expect((r.value("mainBusy", "total", label: MainBlockKind.frame.rawValue) ?? -1) >= 0)
        #expect((r.value("mainStall", "max") ?? 0) > 20)
        #expect((r.value("framesMissed", "count") ?? 0) > 0, "the stall shows as missed frames")
        #expect((r.value("hitchRatio", "value", label: "60Hz") ?? 0) > 0, "and as hitch time")
        // The same stack with a window on screen does fetch on the main queue.
        let drawn = try CostFidelityTests.run(overrides)
        #expect(Self.mainRows(drawn) > 0)
    }

    // Docs/coredata-behaviour.md §5: a controller without a delegate does not track changes; it keeps the objects of
    // its fetch while the importers' saves are pushed into the view context.
    @Test("A viewer with tracksChanges false holds the records it fetched while an importer pushes into the view context: no controller evaluation; the default viewer tracks them")
    func untrackedViewerHoldsWhatItFetched() throws {
        // viewChildren: the importers' contexts are children of the view context, so each save is a push into it. The
        // run phase's viewer starts over the 200 seeded records; the importer adds 100 and updates 100.
        let stack = ["stack.topology=viewChildren"]
        let held = try CostFidelityTests.run(stack + ["phases.run.viewer.tracksChanges=false"])
        let tracking = try CostFidelityTests.run(stack)
        for metric in ["frcObjectsEvaluated", "frcComparisons", "frcObjectsMoved", "frcSectionsUpdated"] {
            for queue in ["main", "background"] { #expect(held.value(metric, "count", label: "queue=\(queue)") == 0, "\(metric) queue=\(queue)") }
        }
        #expect(held.value("frcObjects", "value") == 200 && held.value("frcObjects", "peak") == 200)
        #expect((held.value("frames", "value") ?? 0) > 0 && (held.value("mainBusy", "total", label: MainBlockKind.frame.rawValue) ?? 0) > 0)
        #expect(!held.costRules.contains("frc-evaluates-each-insert"))
        // The default viewer follows the pushes.
        #expect((tracking.value("frcObjectsEvaluated", "count", label: "queue=main") ?? 0) > 0)
        #expect(tracking.value("frcObjects", "value") == 300)
        #expect(tracking.costRules.contains("frc-evaluates-each-insert"))
        // The same records were imported either way.
        #expect(held.counters["rowsInserted"] == tracking.counters["rowsInserted"])
    }
}



