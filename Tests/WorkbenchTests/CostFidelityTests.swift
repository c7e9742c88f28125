import Foundation
import ObjectGraph
import Testing
@testable import Workbench

/// Issue 18's cost rules on the workbench side: what the main queue does, counted by kind and per queue.
@Suite("Cost fidelity: main-queue work by kind, per-queue counters (issue 18 rules 24, 25)")
struct CostFidelityTests {
    static func run(_ overrides: [String]) throws -> VariantResult {
        let scenario = try #require(try tinyScenario(overrides: overrides).variants.first)
        return try runVariant(scenario)
    }

    static func busy(_ r: VariantResult, _ kind: MainBlockKind) -> Double { r.value("mainBusy", "total", label: kind.rawValue) ?? -1 }

    @Test("Issue 18 rule 24: a nested stack's child pushes and the view context's own saves are main-queue busy time, by kind; the kinds add up to the whole")
    func nestedPushesAndSavesCountOnMain() throws {
        let r = try Self.run(["stack.topology=nested"])
        let total = try #require(r.value("mainBusy", "total"))
        #expect(Self.busy(r, .push) > 0)
        #expect(Self.busy(r, .save) > 0)
        #expect(Self.busy(r, .frame) > 0)
        #expect(Self.busy(r, .fetch) > 0)
        #expect(Self.busy(r, .merge) == 0, "a nested stack merges nothing: its child saves are pushes")
        let sum = MainBlockKind.allCases.map { Self.busy(r, $0) }.reduce(0, +)
        #expect(abs(sum - total) < 1e-6 * max(1, total), "kinds \(sum) ms vs whole \(total) ms")
        // Semantics §2.2: the child's objects are pushed and registered in the main-queue parent, on the main queue.
        #expect((r.value("objectsRegistered", "count", label: "queue=main") ?? 0) > 0)
    }

    @Test("Issue 18 rule 24: in a nested stack each chunk's push and parent save cost the main queue more as chunks grow (the whole chunk crosses the main queue)")
    func nestedMainQueueTimeGrowsWithChunkSize() throws {
        // 400 objects in all (200 seeded, 200 in the run phase), in chunks of 20 or of 100.
        func perChunk(_ size: Int) throws -> (busy: Double, stall: Double) {
            let r = try Self.run(["stack.topology=nested", "phases.seed.importer.chunkSize=\(size)", "phases.run.importer.chunkSize=\(size)"])
            let chunks = Double(400 / size)
            return ((Self.busy(r, .push) + Self.busy(r, .save)) / chunks, try #require(r.value("mainStall", "max")))
        }
        let small = try perChunk(20), large = try perChunk(100)
        #expect(large.busy > 3 * small.busy, "push + save per chunk: \(small.busy) ms at 20, \(large.busy) ms at 100")
        #expect(large.stall > small.stall)
    }

    @Test("Issue 18 rule 24: the Ambar stack's main queue merges, fetches and draws frames; background imports push nothing into it")
    func ambarMainQueueKinds() throws {
        let r = try Self.run([])
        #expect(Self.busy(r, .merge) > 0)
        #expect(Self.busy(r, .frame) > 0)
        #expect(Self.busy(r, .fetch) > 0)
        // The tiny scenario's editor is a child of the view context: its saves are pushes.
        #expect(Self.busy(r, .push) > 0)
    }

    @Test("Issue 18 rule 25: per-queue counters with queue (and source, kind) labels, zeros included, exact in simulated mode")
    func perQueueCounters() throws {
        let r = try Self.run([])
        let names = ["objectsRegistered", "rowsFetched", "objectsRefreshed", "transactions", "notificationsPosted", "frcObjectsEvaluated"]
        for name in names {
            for queue in ["main", "background"] {
                #expect(r.value(name, "count", label: "queue=\(queue)") != nil, "\(name) queue=\(queue) missing")
            }
        }
        for source in ["rowCache", "store"] {
            #expect(r.value("faultsFulfilled", "count", label: "queue=main,source=\(source)") != nil)
        }
        for kind in StatementKind.allCases {
            #expect(r.value("sqlStatements", "count", label: "queue=background,kind=\(kind.name)") != nil)
        }
        // Imports write on background queues only: every INSERT and every commit is theirs.
        #expect((r.value("sqlStatements", "count", label: "queue=background,kind=insert") ?? 0) > 0)
        #expect(r.value("sqlStatements", "count", label: "queue=main,kind=insert") == 0)
        #expect((r.value("transactions", "count", label: "queue=background") ?? 0) > 0)
        // The breakdown adds up to the costed statement count.
        let statements = StatementKind.allCases.flatMap { k in ["main", "background"].map { r.value("sqlStatements", "count", label: "queue=\($0),kind=\(k.name)") ?? 0 } }.reduce(0, +)
        #expect(statements == r.value("costedOperations", "count", label: "sqlStatement"))
        // The same scenario and seed give the same counters.
        let again = try Self.run([])
        let pick = { (x: VariantResult) in x.metrics.filter { QueueCounters.metricNames.contains($0.metric) } }
        #expect(pick(r) == pick(again))
    }

    @Test("Issue 18 rule 28: on one shared coordinator the view's reads overlap a background save with a connection pool, and wait for it with stack.connectionPool 1 (semantics §8)")
    func connectionPoolLetsReadersOverlapTheWriter() throws {
        let pooled = try Self.run(["stack.topology=container"])
        let serial = try Self.run(["stack.topology=container", "stack.connectionPool=1"])
        let (p, s) = (try #require(pooled.value("mainBlocked", "total")), try #require(serial.value("mainBlocked", "total")))
        #expect(s > p, "main queue waited \(s) ms with one connection, \(p) ms with the pool")
        // The pool changes when reads run, never what they read: the same rows reach the store and the view.
        #expect(pooled.counters["rowsInserted"] == serial.counters["rowsInserted"])
        #expect(pooled.oracle.lostUpdates == 0 && serial.oracle.lostUpdates == 0)
    }
}
